/**
 * TMC scheduling on a real Redis with the test server (src/workload): SyncTarget heartbeats
 * (simulated by patching `status.lastSyncerHeartbeatTime`, as the syncer does), Location counts,
 * Placement phases, namespace assignment and failover when a heartbeat goes stale, draining with
 * `spec.unschedulable`, `spec.evictAfter`, several Placements on one namespace, no Ready target,
 * and the cross-workspace rule (a Location workspace is used only through an APIBinding).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { call, createWorkspace, eventually, sleep, useTestServer, type Res, type TestServer } from '../helpers.js';
import { syncTargetKey } from '../../src/workload/keys.js';

const THRESHOLD_MS = 2000;
let srv: TestServer;
useTestServer((s) => { srv = s; }, { syncTargetHeartbeatThresholdMs: THRESHOLD_MS, logger: process.env.TMC_DEBUG ? { level: 'warn' } : false });

const api = (method: string, path: string, body?: unknown, contentType?: string): Promise<Res> =>
  call(srv, srv.creds, method, path, body, contentType ? { 'content-type': contentType } : {});
const MERGE = 'application/merge-patch+json';
const ws = (name: string) => `/clusters/root:${name}`;
const ST = '/apis/workload.kcp.io/v1alpha1/synctargets';
const LOC = '/apis/scheduling.kcp.io/v1alpha1/locations';
const PL = '/apis/scheduling.kcp.io/v1alpha1/placements';
const GVR = { group: 'workload.kcp.io', version: 'v1alpha1', resource: 'synctargets' };
const STATE = 'state.workload.kcp.io/';
const DELETION = 'deletion.internal.workload.kcp.io/';

async function create(path: string, body: unknown): Promise<any> {
  const r = await api('POST', path, body);
  assert.equal(r.status, 201, `POST ${path}: ${r.body}`);
  return r.json;
}
const get = async (path: string) => (await api('GET', path)).json;

/** Syncers that are "up": their SyncTarget's heartbeat is patched every 400 ms. */
const alive = new Set<string>();
const beating = setInterval(() => {
  for (const t of alive) {
    const [w, name] = t.split('/');
    void api('PATCH', `${ws(w!)}${ST}/${name}/status`, { status: { lastSyncerHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } }, MERGE).catch(() => undefined);
  }
}, 400);
after(() => clearInterval(beating));

const stateLabels = (o: any) => Object.entries(o?.metadata?.labels ?? {}).filter(([k]) => k.startsWith(STATE)).map(([k, v]) => `${k.slice(STATE.length)}=${v}`).sort();
const deletions = (o: any) => Object.keys(o?.metadata?.annotations ?? {}).filter((k) => k.startsWith(DELETION)).map((k) => k.slice(DELETION.length)).sort();
const cond = (o: any, type: string) => o?.status?.conditions?.find((c: any) => c.type === type);

let compute = '';
const key = (name: string) => syncTargetKey(compute, name);

test('SyncTargets: key label, syncer virtual workspace URLs, HeartbeatHealthy and Ready from the heartbeat', async () => {
  compute = await createWorkspace(srv, 'compute');
  for (const [name, region] of [['a', 'eu'], ['b', 'eu'], ['c', 'us']] as const) {
    await create(`${ws('compute')}${ST}`, { apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', metadata: { name, labels: { region } } });
  }
  alive.add('compute/a');
  // Two controllers: the heartbeat's conditions and the key label with the URLs.
  const a = await eventually('a Ready, labelled, with URLs', async () => {
    const o = await get(`${ws('compute')}${ST}/a`);
    return cond(o, 'Ready')?.status === 'True' && o.metadata.labels?.['internal.workload.kcp.io/key'] && o.status.virtualWorkspaces?.length && o;
  }, 10_000);
  assert.equal(cond(a, 'HeartbeatHealthy')?.status, 'True');
  assert.equal(a.metadata.labels['internal.workload.kcp.io/key'], key('a'));
  assert.equal(a.status.virtualWorkspaces[0].syncerURL, `${srv.url}/services/syncer/${compute}/a/${a.metadata.uid}`);
  assert.equal(a.status.virtualWorkspaces[0].upsyncerURL, `${srv.url}/services/upsyncer/${compute}/a/${a.metadata.uid}`);
  const b = await eventually('b not Ready', async () => { const o = await get(`${ws('compute')}${ST}/b`); return cond(o, 'Ready') && o; });
  assert.deepEqual([cond(b, 'Ready').status, cond(b, 'Ready').reason, cond(b, 'Ready').message], ['False', 'ErrorHeartbeat', 'No heartbeat yet seen']);
  assert.equal(cond(b, 'HeartbeatHealthy').severity, 'Warning');
  assert.equal(b.status.conditions[0].type, 'Ready', 'Ready first, as kcp sorts conditions');
});

test('Location: instances and available instances of its instanceSelector, labels annotation', async () => {
  await create(`${ws('compute')}${LOC}`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: 'eu', labels: { cloud: 'x', tier: 'gold' } }, spec: { resource: GVR, instanceSelector: { matchLabels: { region: 'eu' } } } });
  await create(`${ws('compute')}${LOC}`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: 'us', labels: { cloud: 'y' } }, spec: { resource: GVR, instanceSelector: { matchLabels: { region: 'us' } } } });
  const eu = await eventually('eu counted', async () => { const o = await get(`${ws('compute')}${LOC}/eu`); return o?.status?.instances === 2 && o.status.availableInstances === 1 && o; });
  assert.equal(eu.metadata.annotations['scheduling.kcp.io/labels'], 'cloud=x tier=gold');
  alive.add('compute/b');
  await eventually('eu: both available', async () => (await get(`${ws('compute')}${LOC}/eu`))?.status?.availableInstances === 2, 10_000);
  alive.delete('compute/b');
  await eventually('eu: b stale again', async () => (await get(`${ws('compute')}${LOC}/eu`))?.status?.availableInstances === 1, 10_000);
});

test('a bound Placement assigns its namespaces and their objects to one ready SyncTarget; a stale heartbeat moves them; the old syncer finishes its removals', async () => {
  await create(`${ws('compute')}${PL}`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'eu' }, spec: { locationResource: GVR, locationSelectors: [{ matchLabels: { cloud: 'x' } }], namespaceSelector: { matchLabels: { app: 'web' } } } });
  const unbound = await eventually('placement Unbound', async () => { const o = await get(`${ws('compute')}${PL}/eu`); return o?.status?.phase === 'Unbound' && o; });
  assert.deepEqual(unbound.status.selectedLocation, { path: compute, locationName: 'eu' });
  await create(`${ws('compute')}/api/v1/namespaces`, { metadata: { name: 'web', labels: { app: 'web' } } });
  await create(`${ws('compute')}/api/v1/namespaces`, { metadata: { name: 'other' } });
  await create(`${ws('compute')}/api/v1/namespaces/web/configmaps`, { metadata: { name: 'synced' }, data: { a: '1' } });
  await create(`${ws('compute')}/api/v1/namespaces/web/configmaps`, { metadata: { name: 'never-synced' }, data: { a: '1' } });
  const ns = await eventually('web on a', async () => { const o = await get(`${ws('compute')}/api/v1/namespaces/web`); return stateLabels(o).join() === `${key('a')}=Sync` && o; }, 10_000);
  assert.equal(ns.metadata.annotations['scheduling.kcp.io/placement'], '');
  await eventually('NamespaceScheduled True', async () => cond(await get(`${ws('compute')}/api/v1/namespaces/web`), 'NamespaceScheduled')?.status === 'True');
  const bound = await eventually('placement Bound', async () => { const o = await get(`${ws('compute')}${PL}/eu`); return o?.status?.phase === 'Bound' && o; });
  assert.equal(bound.metadata.annotations['internal.workload.kcp.io/synctarget'], key('a'));
  assert.equal(cond(bound, 'Scheduled')?.status, 'True');
  assert.equal(cond(bound, 'Ready')?.status, 'True');
  for (const cm of ['synced', 'never-synced', 'kube-root-ca.crt']) {
    await eventually(`${cm} on a`, async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/${cm}`)).join() === `${key('a')}=Sync`);
  }
  assert.deepEqual(stateLabels(await get(`${ws('compute')}/api/v1/namespaces/other`)), [], 'a namespace the selector does not match stays unscheduled');
  // Syncer a holds what it copied downstream (its finalizer), as the syncer does.
  const synced = await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/synced`);
  assert.equal((await api('PUT', `${ws('compute')}/api/v1/namespaces/web/configmaps/synced`, { ...synced, metadata: { ...synced.metadata, finalizers: [`workload.kcp.io/syncer-${key('a')}`] } })).status, 200);

  // a's syncer stops, b's starts: within the threshold (and a few reconciles) everything is on b.
  alive.add('compute/b');
  await eventually('b Ready', async () => cond(await get(`${ws('compute')}${ST}/b`), 'Ready')?.status === 'True', 10_000);
  const stoppedAt = Date.now();
  alive.delete('compute/a');
  await eventually('web on b', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).includes(`${key('b')}=Sync`), THRESHOLD_MS + 10_000);
  const failover = Date.now() - stoppedAt;
  // The heartbeat time has second precision (metav1.Time): the threshold runs from that.
  const lastBeat = Date.parse((await get(`${ws('compute')}${ST}/a`)).status.lastSyncerHeartbeatTime);
  console.log(`# failover: namespace on the other SyncTarget ${failover} ms after the heartbeats stopped, ${Date.now() - lastBeat} ms after the last heartbeat time (threshold ${THRESHOLD_MS} ms)`);
  assert.ok(failover < THRESHOLD_MS + 5000, `failover in ${failover} ms`);
  assert.equal(cond(await get(`${ws('compute')}${ST}/a`), 'Ready')?.status, 'False');
  // The namespace marks a as removing, then drops it after kcp's 5 s grace period.
  await eventually('web leaves a', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).join() === `${key('b')}=Sync`, 10_000);
  // The object a's syncer holds keeps a's label with a deletion timestamp (the syncer deletes downstream
  // when it comes back); the one it never held leaves a at once.
  const held = await eventually('synced: on b, removing from a', async () => {
    const o = await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/synced`);
    return stateLabels(o).join() === `${key('a')}=Sync,${key('b')}=Sync`.split(',').sort().join() && deletions(o).join() === key('a') && o;
  });
  assert.ok(!Number.isNaN(Date.parse(held.metadata.annotations[DELETION + key('a')])));
  await eventually('never-synced: on b only', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/never-synced`)).join() === `${key('b')}=Sync`);
  // a's syncer comes back, deletes its copy downstream, then releases the object: label and finalizer go.
  alive.add('compute/a');
  const cur = await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/synced`);
  const labels = { ...cur.metadata.labels }; delete labels[STATE + key('a')];
  const annotations = { ...cur.metadata.annotations }; delete annotations[DELETION + key('a')];
  assert.equal((await api('PUT', `${ws('compute')}/api/v1/namespaces/web/configmaps/synced`, { ...cur, metadata: { ...cur.metadata, labels, annotations, finalizers: [] } })).status, 200);
  await sleep(1500);
  const after = await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/synced`);
  assert.deepEqual([stateLabels(after), deletions(after)], [[`${key('b')}=Sync`], []], 'stays on b: a healthy again does not move it back');
});

test('unschedulable drains a SyncTarget; evictAfter evicts at its time', async () => {
  await eventually('a Ready again', async () => cond(await get(`${ws('compute')}${ST}/a`), 'Ready')?.status === 'True', 10_000);
  assert.equal((await api('PATCH', `${ws('compute')}${ST}/b`, { spec: { unschedulable: true } }, MERGE)).status, 200);
  await eventually('web drained to a', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).join() === `${key('a')}=Sync`, 15_000);
  await eventually('never-synced on a', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web/configmaps/never-synced`)).join() === `${key('a')}=Sync`);
  assert.equal((await get(`${ws('compute')}${LOC}/eu`)).status.availableInstances, 1, 'an unschedulable SyncTarget is not available');
  assert.equal((await api('PATCH', `${ws('compute')}${ST}/b`, { spec: { unschedulable: false } }, MERGE)).status, 200);
  await sleep(500);
  assert.equal(stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).join(), `${key('a')}=Sync`, 'schedulable again: nothing moves back');

  const evictAt = new Date(Date.now() + 2000).toISOString().replace(/\.\d+Z$/, 'Z');
  assert.equal((await api('PATCH', `${ws('compute')}${ST}/a`, { spec: { evictAfter: evictAt } }, MERGE)).status, 200);
  await sleep(500);
  assert.ok(stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).includes(`${key('a')}=Sync`), 'not before evictAfter');
  await eventually('evicted to b', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).join() === `${key('b')}=Sync`, 15_000);
  assert.equal((await api('PATCH', `${ws('compute')}${ST}/a`, { spec: { evictAfter: null } }, MERGE)).status, 200);
});

test('no Ready SyncTarget: assigned namespaces stay where they are, new ones stay pending, and are assigned once one is Ready', async () => {
  // a (not web's) first, then b (web's): with both stopping at once, web could move to a in
  // between and be pending there (see docs/multicluster.md).
  alive.delete('compute/a');
  await eventually('a not Ready', async () => cond(await get(`${ws('compute')}${ST}/a`), 'Ready')?.status === 'False', 10_000);
  alive.clear();
  await eventually('a and b not Ready', async () => {
    const [a, b] = await Promise.all([get(`${ws('compute')}${ST}/a`), get(`${ws('compute')}${ST}/b`)]);
    return cond(a, 'Ready')?.status === 'False' && cond(b, 'Ready')?.status === 'False';
  }, 10_000);
  await eventually('Scheduled False', async () => cond(await get(`${ws('compute')}${PL}/eu`), 'Scheduled')?.reason === 'NoValidTarget');
  await create(`${ws('compute')}/api/v1/namespaces`, { metadata: { name: 'later', labels: { app: 'web' } } });
  await create(`${ws('compute')}/api/v1/namespaces/later/configmaps`, { metadata: { name: 'c' }, data: { a: '1' } });
  await eventually('later: no available sync targets', async () => cond(await get(`${ws('compute')}/api/v1/namespaces/later`), 'NamespaceScheduled')?.message === 'No available sync targets');
  const web = await get(`${ws('compute')}/api/v1/namespaces/web`);
  assert.deepEqual([stateLabels(web), deletions(web)], [[`${key('b')}=Sync`], []], 'nothing removed while there is nowhere to go');
  assert.deepEqual(stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`)), []);
  alive.add('compute/a');
  await eventually('later on a', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`)).join() === `${key('a')}=Sync`, 10_000).catch(async (err) => {
    console.log('DEBUG', key('a'), key('b'), JSON.stringify([await get(`${ws('compute')}${PL}/eu`), await get(`${ws('compute')}/api/v1/namespaces/later`), await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`), (await get(`${ws('compute')}${ST}/a`)).status], null, 1));
    throw err;
  });
  // web moves from b (not Ready) to a, which is: b is dropped after the grace period.
  await eventually('web moved to a', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).join() === `${key('a')}=Sync`, 15_000);
});

test('several Placements: a namespace is on one SyncTarget of each Location its Placements select', async () => {
  alive.add('compute/c');
  await create(`${ws('compute')}${PL}`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'us' }, spec: { locationResource: GVR, locationSelectors: [{ matchLabels: { cloud: 'y' } }], namespaceSelector: { matchLabels: { team: 'x' } } } });
  assert.equal((await api('PATCH', `${ws('compute')}/api/v1/namespaces/later`, { metadata: { labels: { team: 'x' } } }, MERGE)).status, 200);
  await eventually('later on a and c', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`)).join() === [`${key('a')}=Sync`, `${key('c')}=Sync`].sort().join(), 15_000);
  assert.ok(!stateLabels(await get(`${ws('compute')}/api/v1/namespaces/web`)).includes(`${key('c')}=Sync`), 'web is not selected by us');
  assert.equal((await get(`${ws('compute')}${PL}/us`)).status.phase, 'Bound');
  // Bound while a namespace it selects carries the placement annotation: the last one deleted, Unbound.
  await create(`${ws('compute')}/api/v1/namespaces`, { metadata: { name: 'solo', labels: { team: 'z' } } });
  assert.equal((await api('PATCH', `${ws('compute')}${PL}/us`, { spec: { namespaceSelector: { matchLabels: { team: 'z' } } } }, MERGE)).status, 200);
  await eventually('later leaves c for the new selector', async () => !stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later`)).includes(`${key('c')}=Sync`), 15_000);
  await eventually('solo on c', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/solo`)).join() === `${key('c')}=Sync`, 10_000);
  assert.equal((await api('DELETE', `${ws('compute')}/api/v1/namespaces/solo`)).status, 200);
  await eventually('us Unbound', async () => (await get(`${ws('compute')}${PL}/us`))?.status?.phase === 'Unbound', 15_000);
  assert.equal((await api('PATCH', `${ws('compute')}${PL}/us`, { spec: { namespaceSelector: { matchLabels: { team: 'x' } } } }, MERGE)).status, 200);
  await eventually('later on c again', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`)).includes(`${key('c')}=Sync`), 15_000);
  // Deleting a Placement removes its SyncTarget from its namespaces.
  assert.equal((await api('DELETE', `${ws('compute')}${PL}/us`)).status, 200);
  await eventually('later leaves c', async () => stateLabels(await get(`${ws('compute')}/api/v1/namespaces/later/configmaps/c`)).join() === `${key('a')}=Sync`, 15_000);
});

test('another workspace uses a Location workspace only through an APIBinding to one of its APIExports', async () => {
  await createWorkspace(srv, 'tenant');
  await createWorkspace(srv, 'intruder');
  const placement = { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'p' }, spec: { locationResource: GVR, locationSelectors: [{ matchLabels: { cloud: 'x' } }], namespaceSelector: {}, locationWorkspace: 'root:compute' } };
  for (const w of ['tenant', 'intruder']) {
    await create(`${ws(w)}${PL}`, placement);
    await create(`${ws(w)}/api/v1/namespaces`, { metadata: { name: 'app' } });
  }
  for (const w of ['tenant', 'intruder']) {
    const p = await eventually(`${w}: not found`, async () => { const o = await get(`${ws(w)}${PL}/p`); return cond(o, 'Ready')?.reason === 'LocationNotFound' && o; });
    assert.equal(p.status.phase, 'Pending');
    assert.equal(p.status.selectedLocation, undefined);
  }
  await create(`${ws('compute')}/apis/apis.kcp.io/v1alpha1/apiexports`, { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExport', metadata: { name: 'kubernetes', annotations: { 'extra.apis.kcp.io/compute.workload.kcp.io': 'true' } }, spec: {} });
  await create(`${ws('tenant')}/apis/apis.kcp.io/v1alpha1/apibindings`, { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:compute', name: 'kubernetes' } } } });
  const bound = await eventually('tenant Bound', async () => { const o = await get(`${ws('tenant')}${PL}/p`); return o?.status?.phase === 'Bound' && o; }, 15_000);
  assert.deepEqual(bound.status.selectedLocation, { path: compute, locationName: 'eu' });
  await eventually('tenant app on a', async () => stateLabels(await get(`${ws('tenant')}/api/v1/namespaces/app`)).join() === `${key('a')}=Sync`, 10_000).catch(async (err) => {
    console.log(JSON.stringify([await get(`${ws('tenant')}${PL}/p`), await get(`${ws('tenant')}/api/v1/namespaces/app`)], null, 1));
    throw err;
  });
  // The intruder binds an export of its own and writes its binding's status to look bound to
  // root:compute: the export label admission set is what counts.
  await create(`${ws('intruder')}/apis/apis.kcp.io/v1alpha1/apiexports`, { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExport', metadata: { name: 'own' }, spec: {} });
  await create(`${ws('intruder')}/apis/apis.kcp.io/v1alpha1/apibindings`, { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIBinding', metadata: { name: 'own' }, spec: { reference: { export: { path: 'root:intruder', name: 'own' } } } });
  await eventually('own bound', async () => (await get(`${ws('intruder')}/apis/apis.kcp.io/v1alpha1/apibindings/own`))?.status?.phase === 'Bound');
  const forged = await api('PATCH', `${ws('intruder')}/apis/apis.kcp.io/v1alpha1/apibindings/own/status`, { status: { apiExportClusterName: compute } }, MERGE);
  assert.equal(forged.status, 200, forged.body);
  await sleep(1000);
  assert.equal((await get(`${ws('intruder')}${PL}/p`)).status.phase, 'Pending', 'no binding: no Location of root:compute');
  assert.deepEqual(stateLabels(await get(`${ws('intruder')}/api/v1/namespaces/app`)), []);
});

test('a namespace of 1,000 objects is scheduled in short jobs: the event loop stays free and another workspace is served meanwhile', async () => {
  const N = Number(process.env.TMC_N ?? 1000);
  await create(`${ws('compute')}/api/v1/namespaces`, { metadata: { name: 'bulk' } });
  for (let i = 0; i < N; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, N - i) }, (_, j) => create(`${ws('compute')}/api/v1/namespaces/bulk/configmaps`, { metadata: { name: `cm-${i + j}` }, data: { a: '1' } })));
  }
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const t0 = Date.now();
  assert.equal((await api('PATCH', `${ws('compute')}/api/v1/namespaces/bulk`, { metadata: { labels: { app: 'web' } } }, MERGE)).status, 200);
  // Meanwhile another workspace's namespace is scheduled.
  await create(`${ws('tenant')}/api/v1/namespaces`, { metadata: { name: 'meanwhile' } });
  await eventually('tenant namespace scheduled', async () => stateLabels(await get(`${ws('tenant')}/api/v1/namespaces/meanwhile`)).length === 1, 10_000).catch(async (err) => {
    console.log('# DEBUG', JSON.stringify([await get(`${ws('tenant')}/api/v1/namespaces/meanwhile`), await get(`${ws('tenant')}${PL}/p`), stateLabels(await get(`${ws('compute')}/api/v1/namespaces/bulk`))]));
    throw err;
  });
  const otherMs = Date.now() - t0;
  // Polled twice a second with a table of names only: the test's own lists must not be what holds the loop.
  for (let done = false; !done;) {
    await sleep(500);
    const list = (await api('GET', `${ws('compute')}/api/v1/namespaces/bulk/configmaps?labelSelector=${encodeURIComponent(`${STATE}${key('a')}=Sync`)}`, undefined)).json;
    done = list?.items?.length === N + 1; // and kube-root-ca.crt
    assert.ok(Date.now() - t0 < 60_000, `bulk: ${list?.items?.length} of ${N + 1} labelled after 60 s`);
  }
  const bulkMs = Date.now() - t0;
  loop.disable();
  const maxMs = loop.max / 1e6;
  console.log(`# ${N} objects scheduled in ${bulkMs} ms; another workspace's namespace in ${otherMs} ms; event loop delay max ${maxMs.toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms`);
  // A guard against a pass over the namespace that holds the loop (1,000 objects compared and
  // written in one go): the figures above include the test's own TLS handshakes in this process
  // and whatever else the machine runs, so the bound is loose.
  assert.ok(maxMs < 1500, `event loop held ${maxMs} ms`);
  assert.ok(otherMs < 10_000);
});
