/**
 * The storage side of logical cluster migration (src/storage/migration.ts) on a real Redis: an
 * import with the migration marker moves the revision counter past the origin's and sets the
 * logical cluster's floor (older revisions answer 410, for watches and exact lists, also after a
 * restart of the cache); the fence refuses writes to the fenced logical cluster only and waits
 * for the writes running; the removal of a moved-away copy reaches the cache's subscribers and
 * wildcard watches but no watch of the logical cluster.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type TestRedis } from '../helpers.js';
import { RedisStorage } from '../../src/storage/redis.js';
import { WatchCache, type CacheEvent, type CacheWatcher } from '../../src/storage/watchcache.js';
import { ClusterFences, importObjects, removeObjects } from '../../src/storage/migration.js';
import { isStatus } from '../../src/apimachinery/errors.js';

let redis: TestRedis;
let storage: RedisStorage;
let cache: WatchCache;

const cm = (name: string, rv = '7') => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: rv }, data: { v: name } });
const key = (cluster: string, name: string) => `core/configmaps/${cluster}/ns/${name}`;
const watcher = (cluster: string, events: CacheEvent[]): CacheWatcher => ({ groupResource: 'core/configmaps', cluster, onEvent: (ev) => events.push(ev), onTerminate: () => undefined });

before(async () => {
  redis = await startRedis();
  storage = new RedisStorage({ url: redis.url, shard: 'dst', streamMaxLen: 1000 });
  await storage.ready();
  cache = new WatchCache(storage.client, storage.keys);
  await cache.start();
});
after(async () => { await cache?.stop(); await storage?.close(); await redis?.stop(); });

test('an import gets the destination\'s revisions; the marker jumps the counter and sets the floor', async () => {
  for (const n of ['x1', 'x2']) await storage.write('create', key('local', n), JSON.parse(cm(n)));
  await importObjects(storage, [{ key: key('moved', 'a'), json: cm('a', '999') }, { key: key('moved', 'b'), json: cm('b', '12') }]);
  const before = await storage.currentRevision();
  assert.equal(before, 4);
  await cache.waitForRevision(before);
  assert.equal(JSON.parse(cache.getEntry('core/configmaps', 'moved', 'ns', 'a')!.json).metadata.resourceVersion, '3');
  // The origin handed out revisions up to 500: the marker lands above them.
  const marker = await importObjects(storage, [{ key: key('moved', 'b'), json: null }, { key: key('moved', 'c'), json: cm('c') }], { cluster: 'moved', leastRevision: 501 });
  assert.equal(marker, 501);
  await cache.waitForRevision(503);
  assert.equal(cache.currentRevision, 503);
  assert.equal(cache.floorOf('moved'), 501);
  assert.equal(cache.getEntry('core/configmaps', 'moved', 'ns', 'b'), undefined);
  assert.equal(cache.getEntry('core/configmaps', 'moved', 'ns', 'c')!.rv, 503);

  // A revision of the origin (or of before the floor) is 410 for that logical cluster only.
  const events: CacheEvent[] = [];
  assert.throws(() => cache.addWatcher(watcher('moved', events), 400), (err) => isStatus(err, 410));
  assert.throws(() => cache.listAt('core/configmaps', 'moved', 'ns', 3), (err) => isStatus(err, 410));
  const replay = cache.addWatcher(watcher('moved', events), 501);
  assert.deepEqual(replay.map((e) => [e.type, e.entry.name]), [['DELETED', 'b'], ['ADDED', 'c']]);
  assert.equal(cache.addWatcher(watcher('local', []), 2).length, 0);
  assert.equal(cache.addWatcher(watcher('*', []), 2).length, 4);

  // A new cache (a restart) reads the history across the marker and the floor from Redis.
  const again = new WatchCache(storage.client, storage.keys);
  await again.start();
  try {
    assert.equal(again.currentRevision, 503);
    assert.equal(again.floorOf('moved'), 501);
    assert.equal(again.oldestResumableRevision, 0);
    assert.throws(() => again.addWatcher(watcher('moved', []), 500), (err) => isStatus(err, 410));
    assert.equal(again.addWatcher(watcher('*', []), 1).length, 5);
  } finally { await again.stop(); }
});

test('a fence refuses writes to its logical cluster once running ones settled; others go on', async () => {
  const fences = new ClusterFences();
  storage.fences = fences;
  try {
    const running = storage.write('create', key('f', 'during'), JSON.parse(cm('during')));
    let done = false;
    const fenced = fences.fence('f').then(() => { done = true; });
    assert.equal(done, false);
    // The write that started before the fence is acknowledged, and settled before the fence stands.
    assert.equal((await running).ok, true);
    await fenced;
    await assert.rejects(storage.write('create', key('f', 'after'), JSON.parse(cm('after'))), (err) => isStatus(err, 429) && ClusterFences.isRefusal(err));
    await assert.rejects(storage.commit([{ op: 'create', objectKey: key('other', 'c1'), obj: JSON.parse(cm('c1')) }, { op: 'create', objectKey: key('f', 'c2'), obj: JSON.parse(cm('c2')) }]), (err) => isStatus(err, 429));
    assert.equal((await storage.write('create', key('other', 'after'), JSON.parse(cm('after')))).ok, true);
    assert.equal(ClusterFences.headerValue(fences.get('f')!), 'fenced');
    fences.moved('f', 'shard-9');
    assert.equal(ClusterFences.headerValue(fences.get('f')!), 'moved:shard-9');
    fences.unfence('f');
    assert.equal(fences.get('f')?.state, 'moved', 'a move is not undone by unfence');
    fences.clear('f');
    assert.equal((await storage.write('create', key('f', 'back'), JSON.parse(cm('back')))).ok, true);
  } finally { storage.fences = undefined; }
});

test('removing a moved-away copy reaches the cache, its subscribers and wildcard watches, not the logical cluster\'s', async () => {
  await storage.write('create', key('gone', 'g1'), JSON.parse(cm('g1')));
  await cache.waitForRevision(await storage.currentRevision());
  const watched: CacheEvent[] = [];
  const all: CacheEvent[] = [];
  cache.addWatcher(watcher('gone', watched));
  cache.addWatcher(watcher('*', all));
  const seen: CacheEvent[] = [];
  const unsubscribe = cache.subscribe((ev) => { if (ev) seen.push(ev); });
  const from = cache.currentRevision;
  assert.equal(await removeObjects(storage, [key('gone', 'g1'), key('gone', 'missing')]), 1);
  await cache.waitForRevision(await storage.currentRevision());
  unsubscribe();
  assert.equal(cache.getEntry('core/configmaps', 'gone', 'ns', 'g1'), undefined);
  assert.deepEqual(seen.map((e) => [e.type, e.entry.name, e.hidden]), [['DELETED', 'g1', true]]);
  assert.deepEqual(watched, []);
  assert.deepEqual(all.map((e) => [e.type, e.entry.name]), [['DELETED', 'g1']]);
  assert.equal(cache.addWatcher(watcher('gone', []), from).length, 0, 'nor are they replayed to it');
  assert.equal(cache.addWatcher(watcher('*', []), from).length, 1);
});
