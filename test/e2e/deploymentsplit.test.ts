/**
 * Deployment splitting end to end (issue 23 item 6, kcp TMC's deployment coordination): two real
 * physical clusters (east and west: kube-apiserver, etcd and kube-controller-manager each,
 * test/hostcluster.ts), a syncer each (`kcp-ts syncer` as a process with the arguments of the
 * manifest `kubectl kcp workload sync` wrote), Deployments from API negotiation, and a namespace
 * placed on both clusters: one Location per SyncTarget and one Placement per Location selecting
 * the same namespace (the scheduler puts such a namespace on one SyncTarget of each Placement).
 *
 * Each cluster runs its pods (test/podrunner.ts via test/fleet.ts, the pause image as a
 * long-running local process), so readiness is real:
 *
 * - `kubectl create deployment web --image=registry.k8s.io/pause:3.9 --replicas=5` in the
 *   workspace (kubectl's typed client posts it as protobuf, decoded for the bound Deployment as
 *   kcp does) gives 3 replicas on the cluster whose SyncTarget key sorts first and 2 on the other
 *   (the spec-diff annotations of tmc-deployment-coordination, applied by each syncer), and 3 + 2
 *   pods run and are ready there;
 * - each cluster's deployment controller reports its replicas; the upstream status is their sum:
 *   kubectl reads `readyReplicas: 5` (and 5 available, Available True) in the workspace;
 * - scaled to 4 upstream: 2 + 2 pods; one Placement deleted: the other cluster gets all 4 and runs
 *   them, the released cluster's pods stop, and upstream is `readyReplicas: 4`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../helpers.js';
import { startFleet, type Fleet, type FleetMember } from '../fleet.js';
import { syncTargetKey } from '../../src/workload/keys.js';

const GVR = { group: 'workload.kcp.io', version: 'v1alpha1', resource: 'synctargets' };
const merge = { 'content-type': 'application/merge-patch+json' };
const DEPLOYMENT = '/apis/apps/v1/namespaces/shop/deployments/web';
/** Third octet of the first member's pod network (10.244.X.0/24), the next one the second's. */
const PODSUBNET = 82;
type Member = FleetMember;

let fleet: Fleet;
let members: FleetMember[] = [];
let cluster = '';
const up: Fleet['up'] = (...a) => fleet.up(...a);
const hostGet: Fleet['hostGet'] = (...a) => fleet.hostGet(...a);
const downstreamNs: Fleet['downstreamNs'] = (...a) => fleet.downstreamNs(...a);
const logs = () => fleet.logs();

before(async () => {
  fleet = await startFleet('split', ['east', 'west'], { syncTargetHeartbeatThresholdMs: 3_000, podSubnet: PODSUBNET });
  members = fleet.members;
  cluster = fleet.cluster;
});
after(async () => { await fleet?.stop(); });

describe('a Deployment split across two real clusters', { timeout: 900_000 }, () => {
  test('two clusters join: kubectl kcp workload sync --labels, kubectl apply on each cluster, a syncer each', async () => {
    await fleet.join((m) => ['--labels', `region=${m.name}`]);
  });

  test('a Location per cluster, a Placement per Location, both selecting one namespace', async () => {
    for (const m of members) {
      let r = await up('POST', '/apis/scheduling.kcp.io/v1alpha1/locations', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: m.name, labels: { region: m.name } }, spec: { resource: GVR, instanceSelector: { matchLabels: { region: m.name } } } });
      assert.equal(r.status, 201, r.body);
      r = await up('POST', '/apis/scheduling.kcp.io/v1alpha1/placements', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: m.name }, spec: { locationResource: GVR, locationSelectors: [{ matchLabels: { region: m.name } }], namespaceSelector: { matchLabels: { app: 'shop' } } } });
      assert.equal(r.status, 201, r.body);
    }
    const r = await up('POST', '/apis/apis.kcp.io/v1alpha2/apibindings', { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:split', name: 'kubernetes' } } } });
    assert.equal(r.status, 201, r.body);
    await eventually('deployments served', async () => (await up('GET', '/apis/apps/v1/deployments')).status === 200, 30_000);
    assert.equal((await up('POST', '/api/v1/namespaces', { metadata: { name: 'shop', labels: { app: 'shop' } } })).status, 201);
    await eventually('the namespace on both SyncTargets', async () => {
      const labels = (await up('GET', '/api/v1/namespaces/shop')).json?.metadata?.labels ?? {};
      return members.every((m) => labels[`state.workload.kcp.io/${syncTargetKey(cluster, m.name)}`] === 'Sync');
    }, 60_000);
  });

  /** The replicas of the downstream copy on each member, by name (undefined: no copy). */
  const downstream = async (): Promise<Record<string, any>> => {
    const out: Record<string, any> = {};
    for (const m of members) out[m.name] = await hostGet(m, ['deployment', '-n', downstreamNs(m, 'shop'), 'web']);
    return out;
  };

  /** Ready pod processes of the Deployment on each member, by name. */
  const readyPods = (): Record<string, number> => Object.fromEntries(members.map((m) => [m.name, m.pods.running(downstreamNs(m, 'shop')).filter((p) => p.ready && p.name.startsWith('web-')).length]));
  /** The upstream Deployment as kubectl reads it in the workspace. */
  const upstreamWeb = async (): Promise<any> => {
    const r = await fleet.kubectl(['get', 'deployment', 'web', '-n', 'shop', '-o', 'json'], { allowFail: true });
    return r.code === 0 ? JSON.parse(r.stdout) : undefined;
  };

  test('kubectl create deployment --replicas=5 gives 3 + 2 downstream (remainder to the first key), their pods ready, readyReplicas 5 upstream', async () => {
    const t0 = performance.now();
    // kubectl's typed client posts the Deployment as protobuf: decoded for the bound resource.
    const created = await fleet.kubectl(['create', 'deployment', 'web', '-n', 'shop', '--image=registry.k8s.io/pause:3.9', '--replicas=5']);
    assert.match(created.stdout, /deployment.apps\/web created/);
    const [firstKey, secondKey] = members.map((m) => syncTargetKey(cluster, m.name)).sort();
    const share = (m: Member) => (syncTargetKey(cluster, m.name) === firstKey ? 3 : 2);
    const upstream = await eventually('the spec diffs written', async () => {
      const o = (await up('GET', DEPLOYMENT)).json;
      const a = o?.metadata?.annotations ?? {};
      return a[`experimental.spec-diff.workload.kcp.io/${firstKey}`] && a[`experimental.spec-diff.workload.kcp.io/${secondKey}`] && o;
    }, 60_000);
    assert.deepEqual(JSON.parse(upstream.metadata.annotations[`experimental.spec-diff.workload.kcp.io/${firstKey}`]), [{ op: 'replace', path: '/replicas', value: 3 }]);
    assert.deepEqual(JSON.parse(upstream.metadata.annotations[`experimental.spec-diff.workload.kcp.io/${secondKey}`]), [{ op: 'replace', path: '/replicas', value: 2 }]);
    const down = await eventually('3 + 2 replicas downstream, each reported by its cluster', async () => {
      const d = await downstream();
      return members.every((m) => d[m.name]?.spec?.replicas === share(m) && d[m.name]?.status?.replicas === share(m)) && d;
    }, 90_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    process.stderr.write(`# 3 + 2 downstream, reported by both clusters, ${Math.round(performance.now() - t0)} ms after the create; downstream generations ${members.map((m) => `${m.name} ${down[m.name].metadata.generation}`).join(', ')} (1: the first apply had the share)\n`);
    // Each cluster runs its share: that many pods Running and Ready, that many live processes.
    const ready = await eventually('3 + 2 pods ready downstream', async () => {
      const r = readyPods();
      if (!members.every((m) => r[m.name] === share(m))) return false;
      const d = await downstream();
      return members.every((m) => d[m.name]?.status?.readyReplicas === share(m)) && d;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    for (const m of members) {
      const pods = (await hostGet(m, ['pods', '-n', downstreamNs(m, 'shop'), '-l', 'app=web'])).items;
      assert.equal(pods.length, share(m), `${m.name}: its share of pods`);
      for (const pod of pods) {
        assert.equal(pod.status.phase, 'Running');
        assert.equal(pod.spec.nodeName, `${m.name}-node`, 'run by its own cluster');
      }
      assert.equal(ready[m.name].status.availableReplicas, share(m));
    }
    const status = await eventually('readyReplicas: 5 upstream, read with kubectl', async () => {
      const s = (await upstreamWeb())?.status;
      return s?.replicas === 5 && s?.updatedReplicas === 5 && s?.readyReplicas === 5 && s?.availableReplicas === 5 && s;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    process.stderr.write(`# readyReplicas 5 upstream (3 + 2 ready pods) ${Math.round(performance.now() - t0)} ms after kubectl create deployment\n`);
    assert.equal(status.unavailableReplicas ?? 0, 0);
    assert.deepEqual(status.conditions.map((c: any) => c.type), ['Available', 'Progressing']);
    assert.equal(status.conditions[0].status, 'True', 'Available: True on both clusters');
    // Each cluster's own status, kept per SyncTarget by the syncer virtual workspace.
    const annotations = (await up('GET', DEPLOYMENT)).json.metadata.annotations;
    for (const m of members) assert.equal(JSON.parse(annotations[`diff.syncer.internal.kcp.io/${syncTargetKey(cluster, m.name)}`]).status.replicas, share(m));
  });

  test('scaled upstream to 4: 2 + 2 ready; one Placement deleted: the other cluster gets and runs all 4', async () => {
    assert.equal((await up('PATCH', DEPLOYMENT, { spec: { replicas: 4 } }, merge)).status, 200);
    await eventually('2 + 2 downstream', async () => {
      const d = await downstream();
      return members.every((m) => d[m.name]?.spec?.replicas === 2);
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    await eventually('2 + 2 pods ready, readyReplicas 4 upstream', async () => {
      const r = readyPods();
      if (!members.every((m) => r[m.name] === 2)) return false;
      const s = (await upstreamWeb())?.status;
      return s?.readyReplicas === 4 && s?.replicas === 4;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    const [east, west] = members as [Member, Member];
    const t1 = performance.now();
    assert.equal((await up('DELETE', `/apis/scheduling.kcp.io/v1alpha1/placements/${west.name}`)).status, 200);
    await eventually('all 4 on east, none on west', async () => {
      const d = await downstream();
      return d[east.name]?.spec?.replicas === 4 && d[west.name] === undefined;
    }, 90_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    process.stderr.write(`# all 4 on east, west's copy gone, ${Math.round(performance.now() - t1)} ms after its Placement was deleted\n`);
    const westKey = syncTargetKey(cluster, west.name);
    const eastKey = syncTargetKey(cluster, east.name);
    const left = await eventually('west released: label, spec diff and status annotation gone upstream', async () => {
      const o = (await up('GET', DEPLOYMENT)).json;
      const a = o?.metadata?.annotations ?? {};
      return o?.metadata?.labels?.[`state.workload.kcp.io/${westKey}`] === undefined && a[`experimental.spec-diff.workload.kcp.io/${westKey}`] === undefined
        && a[`diff.syncer.internal.kcp.io/${westKey}`] === undefined && o.status?.replicas === 4 && o;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
    assert.deepEqual(JSON.parse(left.metadata.annotations[`experimental.spec-diff.workload.kcp.io/${eastKey}`]), [{ op: 'replace', path: '/replicas', value: 4 }]);
    assert.equal(left.spec.replicas, 4, 'the upstream spec is the workspace\'s, untouched');
    await eventually('4 pods ready on east, none left on west, readyReplicas 4 upstream', async () => {
      const r = readyPods();
      return r[east.name] === 4 && west.pods.running(downstreamNs(west, 'shop')).length === 0 && (await upstreamWeb())?.status?.readyReplicas === 4;
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${logs()}`); });
  });
});
