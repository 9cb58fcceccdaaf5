/**
 * Transparent multi-cluster end to end, the promise of issue 23: "moving a workload between
 * clusters should be as easy as moving a pod between nodes". Two real physical clusters (east and
 * west: kube-apiserver, etcd and kube-controller-manager each, test/hostcluster.ts), one syncer
 * per cluster (`kcp-ts syncer` as a process with the arguments of the manifest `kubectl kcp
 * workload sync` wrote), API negotiation (Deployments come from the clusters' own schemas), a
 * Location of both SyncTargets and a Placement, all in one workspace. Each cluster runs its pods
 * (test/podrunner.ts via test/fleet.ts: a process per pod in its own network namespace, readiness
 * probed over HTTP), so `readyReplicas` is what really runs:
 *
 * - a Deployment (created with kubectl, two replicas of agnhost netexec with a readiness probe) and
 *   its ConfigMap in a new namespace run on exactly one cluster (the scheduler's choice, no label
 *   written by the test): two pods run there, their processes see the ConfigMap's keys in their
 *   environment, and kubectl reads `readyReplicas: 2` in the workspace;
 * - that cluster's kube-apiserver is stopped: its syncer withholds heartbeats (the cluster's
 *   `/readyz` fails), the SyncTarget goes not Ready once its heartbeat is older than the threshold
 *   (3 s here), the namespace moves and within the threshold plus 10 s the workload is
 *   `readyReplicas: 2` on the other cluster and upstream, with that cluster's status (the failover
 *   time is measured and printed);
 * - the cluster comes back: the copy it kept (Deployment and pods, whose processes stop) is removed
 *   (kcp's deletion annotation), so the workload runs on one cluster again, nothing lost upstream;
 * - the other cluster's syncer is killed (kill -9): the workload moves back; restarted, the syncer
 *   removes what it left;
 * - a cluster is made unschedulable: the workload drains to the other.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { request } from 'node:http';
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

/** Third octet of the first member's pod network (10.244.X.0/24), the next one the second's. */
const PODSUBNET = 80;

/** The Deployment, as `kubectl apply -f -` gets it: agnhost netexec serving its readiness probe, environment from the ConfigMap. */
const CART = `apiVersion: apps/v1
kind: Deployment
metadata: {name: cart, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
      - name: cart
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{name: http, containerPort: 8080}]
        envFrom: [{configMapRef: {name: cart-config}}]
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 1}
`;

/** `GET http://ip:port/path` from this host (the pod network's bridge); the body. */
function httpGet(ip: string, port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => { body += String(d); });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${path}: no answer`)));
    req.end();
  });
}

/** Conditions in type order (the upstream summary sorts them, a cluster appends them as they change). */
const byType = (conditions: { type: string }[] = []) => [...conditions].sort((x, y) => x.type.localeCompare(y.type));

/** The Deployment upstream as kubectl reads it in the workspace. */
async function upstreamCart(): Promise<any> {
  const r = await fleet.kubectl(['get', 'deployment', 'cart', '-n', 'shop', '-o', 'json'], { allowFail: true });
  return r.code === 0 ? JSON.parse(r.stdout) : undefined;
}

/** A member's copy of the Deployment and its pods: the objects on its cluster and the processes its stand-in kubelet runs. */
async function copyOn(m: FleetMember): Promise<{ deployment: any; pods: any[]; processes: { name: string; ip: string; ready: boolean }[] }> {
  const ns = downstreamNs(m, 'shop');
  return {
    deployment: await hostGet(m, ['deployment', '-n', ns, 'cart']),
    pods: (await hostGet(m, ['pods', '-n', ns, '-l', 'app=cart']))?.items ?? [],
    processes: m.pods.running(ns),
  };
}

/** Where the Deployment runs now: the members whose cluster holds a copy. */
async function runningOn(): Promise<string[]> {
  const on: string[] = [];
  for (const m of fleet.members) if (await hostGet(m, ['deployment', '-n', downstreamNs(m, 'shop'), 'cart'])) on.push(m.name);
  return on;
}

before(async () => { fleet = await startFleet('fleet', ['east', 'west'], { syncTargetHeartbeatThresholdMs: 3_000, podSubnet: PODSUBNET }); });
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
  test('a Deployment and its ConfigMap run on exactly one cluster, the scheduler\'s choice: two pods run, kubectl reads readyReplicas 2', async () => {
    assert.equal((await up('POST', '/api/v1/namespaces', { metadata: { name: 'shop', labels: { app: 'shop' } } })).status, 201);
    assert.equal((await up('POST', '/api/v1/namespaces/shop/configmaps', { metadata: { name: 'cart-config' }, data: { CURRENCY: 'EUR' } })).status, 201);
    const t0 = performance.now();
    const applied = await fleet.kubectl(['apply', '-f', '-'], { input: CART });
    assert.match(applied.stdout, /deployment.apps\/cart created/);
    const on = await eventually('the Deployment on one cluster', async () => { const o = await runningOn(); return o.length === 1 && o; }, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    first = byName(on[0]!);
    const cm = await eventually('its ConfigMap with it', () => hostGet(first, ['configmap', '-n', downstreamNs(first, 'shop'), 'cart-config']), 30_000);
    assert.equal(cm.data.CURRENCY, 'EUR');
    const ready = await eventually('readyReplicas: 2 upstream, read with kubectl', async () => {
      if (first.pods.running(downstreamNs(first, 'shop')).filter((p) => p.ready).length !== 2) return false;
      const r = await fleet.kubectl(['get', 'deployment', 'cart', '-n', 'shop', '-o', 'jsonpath={.status.readyReplicas}'], { allowFail: true });
      return r.stdout === '2' && r;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    assert.equal(ready.code, 0);
    process.stderr.write(`# readyReplicas 2 upstream ${Math.round(performance.now() - t0)} ms after kubectl apply\n`);
    assert.deepEqual(await runningOn(), [first.name], 'never on both');
    assert.equal((await up('GET', '/apis/scheduling.kcp.io/v1alpha1/placements/shop')).json.status.phase, 'Bound');
    // Two pods run on the first cluster: Running and Ready there, two live processes on its node.
    const copy = await copyOn(first);
    assert.equal(copy.deployment.status.readyReplicas, 2);
    assert.equal(copy.pods.length, 2);
    for (const pod of copy.pods) {
      assert.equal(pod.status.phase, 'Running');
      assert.equal(pod.spec.nodeName, `${first.name}-node`);
      assert.equal(pod.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True');
    }
    assert.deepEqual(copy.processes.map((p) => p.name).sort(), copy.pods.map((p: any) => p.metadata.name).sort());
    // Each process answers on its pod IP as that pod and sees the ConfigMap (synced with it) in its environment.
    for (const proc of copy.processes) {
      assert.equal(await httpGet(proc.ip, 8080, '/hostname'), proc.name);
      assert.deepEqual(JSON.parse(await httpGet(proc.ip, 8080, `/shell?shellCommand=${encodeURIComponent('echo $CURRENCY')}`)), { output: 'EUR\n' });
    }
    assert.deepEqual(await copyOn(other(first)), { deployment: undefined, pods: [], processes: [] }, 'nothing runs on the other cluster');
  });

  test('its cluster goes down (kube-apiserver stopped): not Ready, within the threshold plus 10 s readyReplicas 2 on the other cluster', async () => {
    const second = other(first);
    const before = await upstreamCart();
    const t0 = performance.now();
    const stoppedAt = Date.now();
    await first.host.stopApiserver();
    await eventually('the Deployment on the other cluster', async () => (await hostGet(second, ['deployment', '-n', downstreamNs(second, 'shop'), 'cart'])) !== undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    const moved = performance.now() - t0;
    // Ready on the other cluster: two processes ready there, readyReplicas 2 in its status, and
    // that status upstream (its conditions are the other cluster's, written after the stop).
    const upstream = await eventually('readyReplicas: 2 on the other cluster and upstream', async () => {
      // The processes first (no request): kubectl is polled only once they are ready.
      if (second.pods.running(downstreamNs(second, 'shop')).filter((p) => p.ready).length !== 2) return false;
      const copy = await copyOn(second);
      const u = await upstreamCart();
      return copy.deployment?.status?.readyReplicas === 2 && copy.processes.filter((p) => p.ready).length === 2 && u?.status?.readyReplicas === 2
        && isDeepStrictEqual(byType(u.status.conditions), byType(copy.deployment.status.conditions)) && u;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    const failover = performance.now() - t0;
    process.stderr.write(`# failover: the Deployment on the other cluster ${Math.round(moved)} ms and readyReplicas 2 there and upstream ${Math.round(failover)} ms after the cluster's kube-apiserver stopped (threshold 3 s)\n`);
    assert.ok(failover < 3_000 + 10_000, `readyReplicas 2 on the other cluster within the threshold plus 10 s: ${Math.round(failover)} ms`);
    assert.notDeepEqual(upstream.status.conditions, before.status.conditions, 'the status upstream is the other cluster\'s');
    for (const c of upstream.status.conditions) assert.ok(Date.parse(c.lastUpdateTime) >= Math.floor(stoppedAt / 1000) * 1000, `${c.type} updated after the stop: ${c.lastUpdateTime}`);
    const st = (await up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${first.name}`)).json;
    assert.notEqual(st.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True', 'the stopped cluster\'s SyncTarget is not Ready');
    const cm = await eventually('the ConfigMap moved too', () => hostGet(second, ['configmap', '-n', downstreamNs(second, 'shop'), 'cart-config']), 30_000);
    assert.equal(cm.data.CURRENCY, 'EUR');
  });

  test('the cluster comes back: the copy it kept (Deployment and pods) is removed, the workload runs on one cluster', async () => {
    assert.equal(first.pods.running(downstreamNs(first, 'shop')).length, 2, 'its pods ran on while its kube-apiserver was down, as a partitioned cluster\'s do');
    await first.host.startApiserver();
    await eventually('the stale copy and its pods removed, their processes stopped', async () => {
      if (first.pods.running(downstreamNs(first, 'shop')).length > 0) return false;
      const copy = await copyOn(first);
      return copy.deployment === undefined && copy.pods.length === 0 && copy.processes.length === 0;
    }, 90_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    assert.deepEqual(await runningOn(), [other(first).name]);
    assert.equal((await upstreamCart()).status.readyReplicas, 2, 'still ready upstream, from the other cluster');
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
    // The last heartbeat came at most 1 s before the kill and is written in whole seconds (RFC 3339,
    // as kcp's metav1.Time), so it may read up to 1 s older: the threshold can pass 1 s after the
    // kill at the earliest (a run measured 1,968 ms), never before.
    assert.ok(moved >= 1_000, `moved only after the 3 s threshold (heartbeats every 1 s, in whole seconds): ${Math.round(moved)} ms`);
    assert.equal((await up('GET', '/apis/apps/v1/namespaces/shop/deployments/cart')).json.spec.replicas, 2, 'nothing lost upstream');
    await eventually('its pods ready on the first cluster again', async () => (await copyOn(first)).processes.filter((p) => p.ready).length === 2, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
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
