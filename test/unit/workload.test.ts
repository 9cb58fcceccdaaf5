/**
 * TMC scheduling's pure rules (src/workload): kcp's condition summary, SyncTarget filters, how an
 * object follows its namespace's scheduling (contrib-tmc resource_reconcile.go computePlacement),
 * and the `--sync-target-heartbeat-threshold` flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markFalse, markTrue, setSummary } from '../../src/workload/conditions.js';
import { filterNonEvicting, filterReady, locationSyncTargets, selects, type SyncTarget } from '../../src/workload/common.js';
import { computeObjectPlacement } from '../../src/workload/resource.js';
import { syncerVirtualWorkspaceURL } from '../../src/workload/synctarget.js';

test('conditions: Ready summarises the listed conditions present, errors before warnings, True only when all are', () => {
  let c = markTrue(undefined, 'HeartbeatHealthy');
  c = setSummary(c, ['SyncerReady', 'APIImporterReady', 'HeartbeatHealthy']);
  assert.deepEqual(c.map((x) => [x.type, x.status]), [['Ready', 'True'], ['HeartbeatHealthy', 'True']]);
  c = markFalse(c, 'HeartbeatHealthy', 'ErrorHeartbeat', 'Warning', 'No heartbeat yet seen');
  c = markFalse(c, 'SyncerReady', 'Broken', 'Error', 'syncer down');
  c = setSummary(c, ['SyncerReady', 'APIImporterReady', 'HeartbeatHealthy']);
  const ready = c.find((x) => x.type === 'Ready')!;
  assert.deepEqual([ready.status, ready.reason, ready.severity, ready.message], ['False', 'Broken', 'Error', 'syncer down']);
  assert.deepEqual(setSummary([], ['X']), [], 'nothing to summarise: no Ready');
  const t = c.find((x) => x.type === 'HeartbeatHealthy')!.lastTransitionTime;
  const same = markFalse(c, 'HeartbeatHealthy', 'ErrorHeartbeat', 'Warning', 'No heartbeat yet seen');
  assert.equal(same.find((x) => x.type === 'HeartbeatHealthy')!.lastTransitionTime, t, 'same state keeps its transition time');
});

test('SyncTarget filters: selectors as metav1 (nil selects none), Ready and schedulable, evictAfter', () => {
  const st = (name: string, ready: boolean, spec: SyncTarget['spec'] = {}, labels = { region: 'eu' }): SyncTarget =>
    ({ metadata: { name, labels }, spec, status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } });
  const all = [st('a', true), st('b', false), st('c', true, { unschedulable: true }), st('d', true, { evictAfter: '2030-01-01T00:00:00Z' }), st('e', true, {}, { region: 'us' })];
  assert.deepEqual(locationSyncTargets(all, { metadata: { name: 'l' }, spec: { instanceSelector: { matchLabels: { region: 'eu' } } } }).map((s) => s.metadata.name), ['a', 'b', 'c', 'd']);
  assert.deepEqual(locationSyncTargets(all, { metadata: { name: 'l' }, spec: {} }), [], 'no instanceSelector: none');
  assert.deepEqual(filterReady(all).map((s) => s.metadata.name), ['a', 'd', 'e']);
  assert.deepEqual(filterNonEvicting(all, Date.parse('2031-01-01T00:00:00Z')).map((s) => s.metadata.name), ['a', 'b', 'c', 'e']);
  assert.equal(selects({}, undefined), true);
  assert.equal(selects(null, { a: 'b' }), false);
  assert.equal(selects({ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }, { a: 'b' }), false, 'an invalid selector selects nothing');
});

test('objects follow their namespace: new key Sync, deletion annotations mirrored, held objects keep the old key until the syncer is done', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const exists = (k: string) => k !== 'gone';
  const obj = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}, finalizers: string[] = []) =>
    ({ metadata: { name: 'o', namespace: 'ns', labels, annotations, finalizers } });
  // Namespace on b: the object gets b.
  assert.deepEqual(computeObjectPlacement(obj(), new Set(['b']), new Map(), exists, now), { labels: { 'state.workload.kcp.io/b': 'Sync' }, annotations: {} });
  // Namespace removing a (label + deletion annotation): the object gets the same deletion time, keeps a.
  assert.deepEqual(computeObjectPlacement(obj({ 'state.workload.kcp.io/a': 'Sync' }), new Set(['a']), new Map([['a', 'T']]), exists, now),
    { labels: {}, annotations: { 'deletion.internal.workload.kcp.io/a': 'T' } });
  // a gone from the namespace: an object a's syncer holds keeps the label, is marked deleting; one it does not hold loses it.
  const held = computeObjectPlacement(obj({ 'state.workload.kcp.io/a': 'Sync' }, {}, ['workload.kcp.io/syncer-a']), new Set(['b']), new Map(), exists, now);
  assert.deepEqual(held, { labels: { 'state.workload.kcp.io/b': 'Sync' }, annotations: { 'deletion.internal.workload.kcp.io/a': '2026-01-01T00:00:00Z' } });
  const free = computeObjectPlacement(obj({ 'state.workload.kcp.io/a': 'Sync' }, { 'deletion.internal.workload.kcp.io/a': 'T' }), new Set(['b']), new Map(), exists, now);
  assert.deepEqual(free, { labels: { 'state.workload.kcp.io/a': null, 'state.workload.kcp.io/b': 'Sync' }, annotations: { 'deletion.internal.workload.kcp.io/a': null } });
  // In line already: nothing; Upsync objects are left alone; syncer finalizers of gone SyncTargets are dropped.
  assert.equal(computeObjectPlacement(obj({ 'state.workload.kcp.io/b': 'Sync' }), new Set(['b']), new Map(), exists, now), undefined);
  assert.equal(computeObjectPlacement(obj({ 'state.workload.kcp.io/x': 'Upsync' }), new Set(['b']), new Map(), exists, now), undefined);
  assert.deepEqual(computeObjectPlacement(obj({ 'state.workload.kcp.io/b': 'Sync' }, {}, ['workload.kcp.io/syncer-gone', 'other']), new Set(['b']), new Map(), exists, now)?.finalizers, ['other']);
  // Being deleted: every key gets the object's deletion time.
  const deleting = { metadata: { name: 'o', labels: { 'state.workload.kcp.io/b': 'Sync' }, deletionTimestamp: 'D' } };
  assert.deepEqual(computeObjectPlacement(deleting, new Set(['b']), new Map(), exists, now)?.annotations, { 'deletion.internal.workload.kcp.io/b': 'D' });
});

test('syncer virtual workspace URL: kcp shape', () => {
  assert.equal(syncerVirtualWorkspaceURL('https://shard:6443/', 'c1', 'st', 'u-1'), 'https://shard:6443/services/syncer/c1/st/u-1');
});

test('kcp-ts start --sync-target-heartbeat-threshold: a Go duration > 0', async () => {
  const { main } = await import('../../src/cli/main.js');
  const { ShutdownSignals } = await import('../../src/cli/signals.js');
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const [stdout, stderr] = [process.stdout.write, process.stderr.write];
    process.stdout.write = ((s: string) => { out.push(String(s)); return true; }) as typeof process.stdout.write;
    process.stderr.write = ((s: string) => { out.push(String(s)); return true; }) as typeof process.stderr.write;
    const signals = new ShutdownSignals();
    try { return { code: await main(['start', ...args], signals), out: out.join('') }; } finally {
      process.stdout.write = stdout; process.stderr.write = stderr; signals.dispose();
    }
  };
  const help = await run('--sync-target-heartbeat-threshold', '45s', '--help');
  assert.equal(help.code, 0);
  assert.match(help.out, /--sync-target-heartbeat-threshold DURATION/);
  const bad = await run('--sync-target-heartbeat-threshold', 'soon');
  assert.equal(bad.code, 2);
  assert.match(bad.out, /invalid argument "soon" for "--sync-target-heartbeat-threshold" flag/);
  const zero = await run('--sync-target-heartbeat-threshold=0s');
  assert.equal(zero.code, 2);
  assert.match(zero.out, /--sync-target-heartbeat-threshold must be >0 \(0s\)/);
});
