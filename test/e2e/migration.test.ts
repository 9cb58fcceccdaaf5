/**
 * Live migration of a logical cluster between the shards of `kcp-ts start --shards 2` (a separate
 * process) while a client writes 200 ConfigMaps a second to it through the front-proxy and
 * another client keeps an informer-style list+watch on it: every acknowledged write is on the
 * destination afterwards, no write is refused (the front-proxy holds them at the cutover), the
 * watch either sees every event or ends with 410 and relists, and the watcher's view equals the
 * destination's list at the end. Prints the write pause (p99 and max of the writes around the
 * cutover) and the objects per second of the bulk copy; then migrates it back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, eventually, sleep, spawnCli, stopCli, type CliProcess, type Creds } from '../helpers.js';
import { quantile, startWriter, type OpenLoopWriter } from '../writer.js';

let root: string;
let kcp: CliProcess;
let url: string;
let admin: Creds;
let masters: Creds;
const WS = '/apis/tenancy.kcp.io/v1alpha1/workspaces';
const MIGRATIONS = '/clusters/root/apis/migration.kcp.io/v1alpha1/logicalclustermigrations';
const NS = 'apps';
const CMS = `/clusters/root:moving/api/v1/namespaces/${NS}/configmaps`;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'kcp-migrate-'));
  kcp = spawnCli(['start', '--shards', '2', '--root-directory', root, '--secure-port', '0']);
  url = await kcp.ready;
  admin = adminCreds(root);
  masters = adminCreds(root, 'system-admin');
});
after(async () => { if (kcp) await stopCli(kcp); });

const proxy = () => ({ url });

/**
 * An informer's view of the ConfigMaps: list, then watch from the list's resourceVersion; a watch
 * that ends is resumed from the last revision seen, and a 410 (an ERROR event or the answer to
 * the resumed watch) relists. `expired` counts the 410s; `missed` stays empty if no event was lost.
 */
function informer(creds: Creds) {
  const state = new Map<string, string>();
  let rv = '';
  let stopped = false;
  let current: ReturnType<typeof request> | undefined;
  const stats = { lists: 0, expired: 0, events: 0, resumes: 0, errors: [] as string[] };
  const list = async () => {
    for (;;) {
      const r = await call(proxy(), creds, 'GET', CMS);
      if (r.status === 200) {
        state.clear();
        for (const o of r.json.items) state.set(o.metadata.name, o.data?.v ?? '');
        rv = r.json.metadata.resourceVersion;
        stats.lists++;
        return;
      }
      stats.errors.push(`list ${r.status}`);
      await sleep(100);
    }
  };
  const watchOnce = () => new Promise<'ended' | 'expired'>((resolve) => {
    const u = new URL(`${url}${CMS}?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`);
    let buf = '';
    let outcome: 'ended' | 'expired' = 'ended';
    current = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', ca: creds.ca, cert: creds.cert, key: creds.key, agent: false }, (res) => {
      if (res.statusCode === 410) { outcome = 'expired'; res.resume(); res.on('end', () => resolve(outcome)); return; }
      if (res.statusCode !== 200) { stats.errors.push(`watch ${res.statusCode}`); res.resume(); res.on('end', () => resolve(outcome)); return; }
      res.on('data', (c) => {
        buf += String(c);
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i); buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          const ev = JSON.parse(line);
          if (ev.type === 'ERROR') { if (ev.object.code === 410) outcome = 'expired'; else stats.errors.push(`watch error ${ev.object.code} ${ev.object.message}`); continue; }
          rv = ev.object.metadata.resourceVersion;
          if (ev.type === 'BOOKMARK') continue;
          stats.events++;
          if (ev.type === 'DELETED') state.delete(ev.object.metadata.name);
          else state.set(ev.object.metadata.name, ev.object.data?.v ?? '');
        }
      });
      res.on('end', () => resolve(outcome));
      res.on('error', () => resolve(outcome));
    });
    current.on('error', () => resolve(outcome));
    current.end();
  });
  const done = (async () => {
    await list();
    while (!stopped) {
      const how = await watchOnce();
      if (stopped) break;
      if (how === 'expired') { stats.expired++; await list(); } else stats.resumes++;
    }
  })();
  return { state, stats, async stop() { stopped = true; current?.destroy(); await done; } };
}

async function migrate(name: string, cluster: string, destination: string, includeSubtree = false): Promise<any> {
  const created = await call(proxy(), masters, 'POST', MIGRATIONS, { apiVersion: 'migration.kcp.io/v1alpha1', kind: 'LogicalClusterMigration', metadata: { name }, spec: { logicalCluster: cluster, destinationShard: destination, ...(includeSubtree ? { includeSubtree } : {}) } });
  assert.equal(created.status, 201, created.body);
  return eventually(`migration ${name} done`, async () => {
    const r = await call(proxy(), masters, 'GET', `${MIGRATIONS}/${name}`);
    const phase = r.json?.status?.phase;
    if (phase === 'Failed') throw new Error(`migration failed: ${JSON.stringify(r.json.status)}`);
    return phase === 'Completed' && r.json;
  }, 120_000);
}

test('a logical cluster moves to the other shard while it is written 200 times a second: nothing lost, writes only pause, watches relist', async () => {
  assert.equal((await call(proxy(), admin, 'POST', `/clusters/root${WS}`, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'moving' } })).status, 201);
  const ws = await eventually('workspace Ready', async () => {
    const r = await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`);
    return r.json?.status?.phase === 'Ready' && r.json;
  }, 30_000);
  const cluster: string = ws.spec.cluster;
  const origin: string = ws.metadata.annotations['core.kcp.io/shard'];
  const shards = (await call(proxy(), admin, 'GET', '/clusters/root/apis/core.kcp.io/v1alpha1/shards')).json.items;
  const destination: string = shards.map((s: any) => s.metadata.name).find((n: string) => n !== origin);
  const originURL: string = shards.find((s: any) => s.metadata.name === origin).spec.baseURL;
  const destinationURL: string = shards.find((s: any) => s.metadata.name === destination).spec.baseURL;
  assert.equal((await call(proxy(), admin, 'POST', '/clusters/root:moving/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })).status, 201);

  // Content to copy in bulk: 2,000 ConfigMaps.
  const agent = new Agent({ keepAlive: true, maxSockets: 32, ca: admin.ca, cert: admin.cert, key: admin.key });
  for (let i = 0; i < 2000; i += 50) {
    const rs = await Promise.all(Array.from({ length: 50 }, (_, j) => call(proxy(), admin, 'POST', CMS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `pre-${i + j}` }, data: { v: 'pre' } }, {}, agent)));
    for (const r of rs) assert.equal(r.status, 201, r.body);
  }
  agent.destroy();

  const inf = informer(admin);
  let w: OpenLoopWriter | undefined;
  const writerAgent = new Agent({ keepAlive: true, maxSockets: 64, ca: admin.ca, cert: admin.cert, key: admin.key });
  let t0 = 0;
  let migrated = 0;
  let done: any;
  try {
    await eventually('informer listed', async () => inf.stats.lists > 0, 60_000);
    w = startWriter(200, 'live', (_name, body) => call(proxy(), admin, 'POST', CMS, body, {}, writerAgent));
    await sleep(3000);
    t0 = Date.now();
    done = await migrate('move-1', cluster, destination);
    migrated = Date.now();
    await sleep(1000);
  } finally {
    await w?.stop();
    writerAgent.destroy();
    await eventually('informer caught up', async () => inf.state.size === 2001 + (w?.acked.size ?? 0), 30_000).catch(() => undefined);
    await inf.stop();
  }
  assert.ok(w);

  // Every acknowledged write is there, served by the destination.
  assert.deepEqual(w.failures, [], 'no write was refused or failed');
  const list = await call(proxy(), admin, 'GET', CMS);
  assert.equal(list.status, 200, list.body);
  const present = new Map<string, string>(list.json.items.map((o: any) => [o.metadata.name, o.data?.v ?? '']));
  const lost = [...w.acked].filter(([name, v]) => present.get(name) !== v).map(([name]) => name);
  assert.deepEqual(lost, [], `acknowledged writes lost: ${lost.length} of ${w.acked.size}`);
  // The 2,000, the live ones and kube-root-ca.crt (the root CA publisher's).
  assert.equal(present.size, 2001 + w.acked.size);
  assert.ok(present.has('kube-root-ca.crt'));
  const direct = await call({ url: destinationURL }, masters, 'GET', `/clusters/${cluster}/api/v1/namespaces/${NS}/configmaps`);
  assert.equal(direct.status, 200, direct.body);
  assert.equal(direct.json.items.length, present.size);
  const gone = await call({ url: originURL }, masters, 'GET', `/clusters/${cluster}/api/v1/namespaces/${NS}/configmaps`);
  assert.equal(gone.status, 429, `the origin no longer serves it: ${gone.body}`);
  assert.equal(gone.headers['x-kcp-ts-migration'], `moved:${destination}`);
  // By its path too: a request a front-proxy routed before it learned the move is sent on, not
  // refused (the origin's own index no longer has the path once the copy is removed).
  const goneByPath = await call({ url: originURL }, admin, 'GET', CMS);
  assert.equal(goneByPath.status, 429, `the origin sends a request by path on: ${goneByPath.body}`);
  assert.equal(goneByPath.headers['x-kcp-ts-migration'], `moved:${destination}`);
  // The owning Workspace names the new shard.
  const after1 = await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`);
  assert.equal(after1.json.metadata.annotations['core.kcp.io/shard'], destination);

  // The watcher ended with 410 at the cutover (revisions changed) and its view is exact.
  assert.ok(inf.stats.expired >= 1, `the watch through the front-proxy ended with 410: ${JSON.stringify(inf.stats)}`);
  assert.deepEqual(inf.stats.errors, []);
  assert.deepEqual([...inf.state].sort(), [...present].sort(), 'the informer saw every change (or relisted)');

  // The pause: the status's measurement and the writes' latencies around the cutover.
  const status = done.status;
  const around = w.samples.filter((s) => s.at >= t0 && s.at <= migrated).map((s) => s.ms);
  const p99 = quantile(around, 0.99);
  const max = Math.max(...around);
  // The writes of the 2 s before the migration (after a second of warming up).
  const baseline = w.samples.filter((s) => s.at >= t0 - 2000 && s.at < t0).map((s) => s.ms);
  console.log(`before the migration: ${baseline.length} writes, p50 ${quantile(baseline, 0.5)} ms, p99 ${quantile(baseline, 0.99)} ms; the migration took ${migrated - t0} ms`);
  console.log(`migration: ${status.entriesCopied} objects copied at ${status.objectsPerSecond} objects/s; requests held ${status.writePauseMilliseconds} ms at the cutover; ` +
    `${w.acked.size} writes acknowledged at 200/s, latency during the migration p50 ${quantile(around, 0.5)} ms, p99 ${p99} ms, max ${max} ms; ` +
    `informer: ${inf.stats.expired} × 410, ${inf.stats.lists} lists, ${inf.stats.events} events`);
  assert.ok(status.entriesCopied >= 2000);
  // The pause is what the migration adds to the writes' latency: measurable only while the
  // instance keeps up with 200 writes/s on this machine (its 2 cores shared with other work).
  // Otherwise the writes queue up before the migration already and every latency grows with
  // the queue; that is said, and the timing is not judged.
  if (quantile(baseline, 0.99) < 500) {
    assert.ok(status.writePauseMilliseconds < 1000, `pause ${status.writePauseMilliseconds} ms`);
    assert.ok(p99 < 1000, `write latency p99 ${p99} ms during the migration`);
  } else {
    console.log(`the instance did not keep up with 200 writes/s before the migration (p99 ${quantile(baseline, 0.99)} ms): the machine is saturated, the pause is not judged`);
  }
  assert.equal(status.originShard, origin);

  // And back: the logical cluster returns to its first shard (its moved-away note and the
  // floor of the other shard are superseded).
  const back = await migrate('move-back', cluster, origin);
  assert.equal(back.status.phase, 'Completed');
  const again = await call(proxy(), admin, 'GET', CMS);
  assert.equal(again.status, 200, again.body);
  assert.equal(again.json.items.length, present.size);
  assert.equal((await call({ url: originURL }, masters, 'GET', `/clusters/${cluster}/api/v1/namespaces/${NS}/configmaps`)).json.items.length, present.size);
  const w2 = await call(proxy(), admin, 'POST', CMS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-return' } });
  assert.equal(w2.status, 201, w2.body);
});

test('a Shard annotated kcp-ts.io/drain=true gets no new workspaces and its logical clusters move to the other shard', async () => {
  const ws = (await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`)).json;
  const cluster: string = ws.spec.cluster;
  // The root shard cannot be drained: make sure the workspace is on shard-1 first.
  if (ws.metadata.annotations['core.kcp.io/shard'] !== 'shard-1') await migrate('to-shard-1', cluster, 'shard-1');
  const shardPath = '/clusters/root/apis/core.kcp.io/v1alpha1/shards/shard-1';
  const patched = await call(proxy(), masters, 'PATCH', shardPath, { metadata: { annotations: { 'kcp-ts.io/drain': 'true' } } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 200, patched.body);
  const drained = await eventually('drain migration completed', async () => {
    const r = await call(proxy(), masters, 'GET', `${MIGRATIONS}?labelSelector=kcp-ts.io/drained-shard%3Dshard-1`);
    const mine = r.json?.items?.filter((m: any) => m.spec.logicalCluster === cluster) ?? [];
    return mine.length === 1 && mine[0].status?.phase === 'Completed' && mine[0];
  }, 60_000);
  assert.equal(drained.spec.destinationShard, 'root');
  assert.equal((await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`)).json.metadata.annotations['core.kcp.io/shard'], 'root');
  assert.equal((await call(proxy(), admin, 'GET', CMS)).status, 200);
  // New workspaces avoid the draining shard.
  for (const name of ['fresh-a', 'fresh-b', 'fresh-c']) {
    assert.equal((await call(proxy(), admin, 'POST', `/clusters/root${WS}`, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } })).status, 201);
    const ready = await eventually(`${name} Ready`, async () => {
      const r = await call(proxy(), admin, 'GET', `/clusters/root${WS}/${name}`);
      return r.json?.status?.phase === 'Ready' && r.json;
    }, 30_000);
    assert.equal(ready.metadata.annotations['core.kcp.io/shard'], 'root', `${name} was scheduled onto the draining shard`);
  }
  const unpatched = await call(proxy(), masters, 'PATCH', shardPath, { metadata: { annotations: { 'kcp-ts.io/drain': null } } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(unpatched.status, 200, unpatched.body);
});

test('includeSubtree moves a workspace and its child workspaces', async () => {
  assert.equal((await call(proxy(), admin, 'POST', `/clusters/root:moving${WS}`, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'kid' } })).status, 201);
  const kid = await eventually('kid Ready', async () => {
    const r = await call(proxy(), admin, 'GET', `/clusters/root:moving${WS}/kid`);
    return r.json?.status?.phase === 'Ready' && r.json;
  }, 30_000);
  const kidCluster: string = kid.spec.cluster;
  assert.equal((await call(proxy(), admin, 'POST', '/clusters/root:moving:kid/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in-kid' } })).status, 201);
  const parent = (await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`)).json;
  const to = parent.metadata.annotations['core.kcp.io/shard'] === 'root' ? 'shard-1' : 'root';
  // The child starts on the other shard than the destination, so that it has to move.
  if (kid.metadata.annotations['core.kcp.io/shard'] === to) await migrate('kid-away', kidCluster, to === 'root' ? 'shard-1' : 'root');
  await migrate('tree', parent.spec.cluster, to, true);
  const child = await eventually('the child migration completed', async () => {
    const r = await call(proxy(), masters, 'GET', `${MIGRATIONS}?labelSelector=kcp-ts.io/parent-migration%3Dtree`);
    return r.json?.items?.length === 1 && r.json.items[0].status?.phase === 'Completed' && r.json.items[0];
  }, 60_000);
  assert.equal(child.spec.logicalCluster, kidCluster);
  assert.equal((await call(proxy(), admin, 'GET', `/clusters/root:moving${WS}/kid`)).json.metadata.annotations['core.kcp.io/shard'], to);
  assert.equal((await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`)).json.metadata.annotations['core.kcp.io/shard'], to);
  const cm = await call(proxy(), admin, 'GET', '/clusters/root:moving:kid/api/v1/namespaces/default/configmaps/in-kid');
  assert.equal(cm.status, 200, cm.body);
});

test('a migration that cannot run fails with a reason: an unknown shard, the root logical cluster', async () => {
  const ws = (await call(proxy(), admin, 'GET', `/clusters/root${WS}/moving`)).json;
  for (const [name, spec, reason] of [
    ['bad-shard', { logicalCluster: ws.spec.cluster, destinationShard: 'nope' }, 'UnknownShard'],
    ['bad-root', { logicalCluster: 'root', destinationShard: 'shard-1' }, 'Invalid'],
  ] as const) {
    assert.equal((await call(proxy(), masters, 'POST', MIGRATIONS, { apiVersion: 'migration.kcp.io/v1alpha1', kind: 'LogicalClusterMigration', metadata: { name }, spec })).status, 201);
    const failed = await eventually(`${name} Failed`, async () => {
      const r = await call(proxy(), masters, 'GET', `${MIGRATIONS}/${name}`);
      return r.json?.status?.phase === 'Failed' && r.json;
    }, 20_000);
    assert.equal(failed.status.conditions.find((c: any) => c.type === 'Completed')?.reason, reason);
  }
  // The spec is immutable, and required.
  const patched = await call(proxy(), masters, 'PATCH', `${MIGRATIONS}/bad-shard`, { spec: { destinationShard: 'root' } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 422, patched.body);
  assert.equal((await call(proxy(), masters, 'POST', MIGRATIONS, { apiVersion: 'migration.kcp.io/v1alpha1', kind: 'LogicalClusterMigration', metadata: { name: 'empty' }, spec: {} })).status, 422);
  // The workspace is still served where it was.
  assert.equal((await call(proxy(), admin, 'GET', CMS)).status, 200);
});
