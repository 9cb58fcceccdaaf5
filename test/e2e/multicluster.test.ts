/**
 * Transparent multi-cluster end to end, the promise of issue 23: "moving a workload between
 * clusters should be as easy as moving a pod between nodes". Two real physical clusters (east and
 * west: kube-apiserver, etcd and kube-controller-manager each, test/hostcluster.ts), one syncer
 * per cluster (`kcp-ts syncer` as a process with the arguments of the manifest `kubectl kcp
 * workload sync` wrote), API negotiation (Deployments come from the clusters' own schemas), a
 * Location of both SyncTargets and a Placement, all in one workspace:
 *
 * - a Deployment and its ConfigMap in a new namespace run on exactly one cluster (the scheduler's
 *   choice, no label written by the test);
 * - that cluster's kube-apiserver is stopped: its syncer withholds heartbeats (the cluster's
 *   `/readyz` fails), the SyncTarget goes not Ready once its heartbeat is older than the threshold
 *   (3 s here), the namespace moves and the Deployment appears on the other cluster;
 * - the cluster comes back: the copy it kept is removed (kcp's deletion annotation), so the
 *   workload runs on one cluster again, nothing lost upstream;
 * - the other cluster's syncer is killed (kill -9): the workload moves back; restarted, the syncer
 *   removes what it left;
 * - a cluster is made unschedulable: the workload drains to the other.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../helpers.js';
import { startFleet, type Fleet, type FleetMember } from '../fleet.js';

const GVR = { group: 'workload.kcp.io', version: 'v1alpha1', resource: 'synctargets' };
const merge = { 'content-type': 'application/merge-patch+json' };

let fleet: Fleet;
const up: Fleet['up'] = (...a) => fleet.up(...a);
const hostGet: Fleet['hostGet'] = (...a) => fleet.hostGet(...a);
const downstreamNs: Fleet['downstreamNs'] = (...a) => fleet.downstreamNs(...a);
const logs = () => fleet.logs();
const byName = (n: string): FleetMember => fleet.members.find((m) => m.name === n)!;
const other = (m: FleetMember): FleetMember => fleet.members.find((x) => x !== m)!;

/** Where the Deployment runs now: the members whose cluster holds a copy. */
async function runningOn(): Promise<string[]> {
  const on: string[] = [];
  for (const m of fleet.members) if (await hostGet(m, ['deployment', '-n', downstreamNs(m, 'shop'), 'cart'])) on.push(m.name);
  return on;
}

before(async () => { fleet = await startFleet('fleet', ['east', 'west'], { syncTargetHeartbeatThresholdMs: 3_000 }); });
after(async () => { await fleet?.stop(); });

describe('a workload moves between two real clusters', { timeout: 900_000 }, () => {
  test('two clusters join: kubectl kcp workload sync, kubectl apply on each cluster, a syncer each', async () => {
    await fleet.join();
  });

  test('a Location of both clusters, a Placement, Deployments from the negotiated `kubernetes` export', async () => {
    let r = await up('POST', '/apis/scheduling.kcp.io/v1alpha1/locations', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: 'fleet', labels: { fleet: 'yes' } }, spec: { resource: GVR, instanceSelector: {} } });
    assert.equal(r.status, 201, r.body);
    r = await up('POST', '/apis/apis.kcp.io/v1alpha2/apibindings', { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:fleet', name: 'kubernetes' } } } });
    assert.equal(r.status, 201, r.body);
    r = await up('POST', '/apis/scheduling.kcp.io/v1alpha1/placements', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'shop' }, spec: { locationResource: GVR, locationSelectors: [{ matchLabels: { fleet: 'yes' } }], namespaceSelector: { matchLabels: { app: 'shop' } } } });
    assert.equal(r.status, 201, r.body);
    await eventually('deployments served', async () => (await up('GET', '/apis/apps/v1/deployments')).status === 200, 30_000);
    // Unbound until a namespace it selects exists (kcp's phases), with its Location chosen.
    const placement = await eventually('the Placement has selected the Location', async () => (await up('GET', '/apis/scheduling.kcp.io/v1alpha1/placements/shop')).json?.status?.selectedLocation && (await up('GET', '/apis/scheduling.kcp.io/v1alpha1/placements/shop')).json, 30_000);
    assert.deepEqual(placement.status.selectedLocation, { path: fleet.cluster, locationName: 'fleet' });
  });

  let first: FleetMember;
  test('a Deployment and its ConfigMap run on exactly one cluster, the scheduler\'s choice', async () => {
    assert.equal((await up('POST', '/api/v1/namespaces', { metadata: { name: 'shop', labels: { app: 'shop' } } })).status, 201);
    assert.equal((await up('POST', '/api/v1/namespaces/shop/configmaps', { metadata: { name: 'cart-config' }, data: { CURRENCY: 'EUR' } })).status, 201);
    const dep = await up('POST', '/apis/apps/v1/namespaces/shop/deployments', {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cart' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'cart' } }, template: { metadata: { labels: { app: 'cart' } }, spec: { containers: [{ name: 'cart', image: 'registry.k8s.io/pause:3.9', envFrom: [{ configMapRef: { name: 'cart-config' } }] }] } } },
    });
    assert.equal(dep.status, 201, dep.body);
    const on = await eventually('the Deployment on one cluster', async () => { const o = await runningOn(); return o.length === 1 && o; }, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    first = byName(on[0]!);
    const cm = await eventually('its ConfigMap with it', () => hostGet(first, ['configmap', '-n', downstreamNs(first, 'shop'), 'cart-config']), 30_000);
    assert.equal(cm.data.CURRENCY, 'EUR');
    assert.deepEqual(await runningOn(), [first.name], 'never on both');
    assert.equal((await up('GET', '/apis/scheduling.kcp.io/v1alpha1/placements/shop')).json.status.phase, 'Bound');
    await eventually('status from the cluster', async () => (await up('GET', '/apis/apps/v1/namespaces/shop/deployments/cart')).json?.status?.replicas === 2, 30_000);
  });

  test('its cluster goes down (kube-apiserver stopped): not Ready, the workload moves to the other cluster', async () => {
    const second = other(first);
    const t0 = performance.now();
    await first.host.stopApiserver();
    await eventually('the Deployment on the other cluster', async () => (await hostGet(second, ['deployment', '-n', downstreamNs(second, 'shop'), 'cart'])) !== undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    const moved = performance.now() - t0;
    process.stderr.write(`# moved ${Math.round(moved)} ms after the cluster's kube-apiserver stopped (threshold 3 s)\n`);
    assert.ok(moved < 3_000 + 10_000, `within the threshold plus 10 s: ${Math.round(moved)} ms`);
    const st = (await up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${first.name}`)).json;
    assert.notEqual(st.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True', 'the stopped cluster\'s SyncTarget is not Ready');
    const cm = await eventually('the ConfigMap moved too', () => hostGet(second, ['configmap', '-n', downstreamNs(second, 'shop'), 'cart-config']), 30_000);
    assert.equal(cm.data.CURRENCY, 'EUR');
    await eventually('status from the new cluster', async () => (await up('GET', '/apis/apps/v1/namespaces/shop/deployments/cart')).json?.status?.replicas === 2, 30_000);
  });

  test('the cluster comes back: the copy it kept is removed, the workload runs on one cluster', async () => {
    await first.host.startApiserver();
    await eventually('the stale copy removed', async () => (await hostGet(first, ['deployment', '-n', downstreamNs(first, 'shop'), 'cart'])) === undefined, 90_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    assert.deepEqual(await runningOn(), [other(first).name]);
  });

  test('a syncer dies (kill -9): the workload moves back; restarted, it removes what it left', async () => {
    const second = other(first);
    await eventually('the returned SyncTarget Ready', async () => (await up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${first.name}`)).json?.status?.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True', 30_000);
    const t0 = performance.now();
    await fleet.killSyncer(second, 'SIGKILL');
    await eventually('the Deployment back on the first cluster', async () => (await hostGet(first, ['deployment', '-n', downstreamNs(first, 'shop'), 'cart'])) !== undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    const moved = performance.now() - t0;
    process.stderr.write(`# moved ${Math.round(moved)} ms after the syncer was killed (threshold 3 s)\n`);
    assert.ok(moved >= 2_000, `moved only after the 3 s threshold (heartbeats every 1 s): ${Math.round(moved)} ms`);
    assert.equal((await up('GET', '/apis/apps/v1/namespaces/shop/deployments/cart')).json.spec.replicas, 2, 'nothing lost upstream');
    fleet.startSyncer(second);
    await eventually('the stale copy removed', async () => (await hostGet(second, ['deployment', '-n', downstreamNs(second, 'shop'), 'cart'])) === undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    assert.deepEqual(await runningOn(), [first.name]);
  });

  test('a cluster is made unschedulable: the workload drains to the other', async () => {
    const second = other(first);
    await eventually('the other SyncTarget Ready', async () => (await up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${second.name}`)).json?.status?.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True', 30_000);
    assert.equal((await up('PATCH', `/apis/workload.kcp.io/v1alpha1/synctargets/${first.name}`, { spec: { unschedulable: true } }, merge)).status, 200);
    await eventually('on the other cluster only', async () => { const o = await runningOn(); return o.length === 1 && o[0] === second.name; }, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
  });
});
