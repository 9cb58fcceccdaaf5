/**
 * The watch cache's O(1) tallies on a real Redis: objects and characters of stored JSON per
 * resource, logical cluster (`*`: all) and namespace, kept through creates, updates (a larger or
 * smaller object) and deletes — what the priority-and-fairness work estimator weighs a LIST by.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type TestRedis } from '../helpers.js';
import { RedisStorage } from '../../src/storage/redis.js';
import { WatchCache } from '../../src/storage/watchcache.js';

let redis: TestRedis;
let storage: RedisStorage;
let cache: WatchCache;
const GR = 'core/configmaps';

before(async () => {
  redis = await startRedis();
  storage = new RedisStorage({ url: redis.url, shard: 'counts' });
  await storage.ready();
  cache = new WatchCache(storage.client, storage.keys);
  await cache.start();
});
after(async () => { await cache?.stop(); await storage?.close(); await redis?.stop(); });

const cm = (ns: string, name: string, size: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { v: 'x'.repeat(size) } });
const key = (cluster: string, ns: string, name: string) => `${GR}/${cluster}/${ns}/${name}`;
/** Characters of the cached JSON of the named objects (`[cluster, ns, name]`). */
const sizeOf = (...objs: [string, string, string][]) => objs.reduce((n, [c, ns, name]) => n + cache.getEntry(GR, c, ns, name)!.json.length, 0);

test('objects and stored JSON size per namespace, logical cluster and all clusters follow creates, updates and deletes', async () => {
  await storage.write('create', key('a', 'n1', 'big'), cm('n1', 'big', 500_000));
  await storage.write('create', key('a', 'n1', 'small'), cm('n1', 'small', 10));
  await storage.write('create', key('a', 'n2', 'mid'), cm('n2', 'mid', 5_000));
  await storage.write('create', key('b', 'n1', 'other'), cm('n1', 'other', 100));
  await cache.waitForRevision(await storage.currentRevision());
  assert.ok(sizeOf(['a', 'n1', 'big']) > 500_000);
  assert.equal(cache.count(GR, 'a', 'n1'), 2);
  assert.equal(cache.storedSize(GR, 'a', 'n1'), sizeOf(['a', 'n1', 'big'], ['a', 'n1', 'small']));
  assert.equal(cache.storedSize(GR, 'a', 'n2'), sizeOf(['a', 'n2', 'mid']));
  assert.equal(cache.storedSize(GR, 'a'), sizeOf(['a', 'n1', 'big'], ['a', 'n1', 'small'], ['a', 'n2', 'mid']));
  assert.equal(cache.storedSize(GR, '*'), cache.storedSize(GR, 'a') + sizeOf(['b', 'n1', 'other']));
  assert.equal(cache.count(GR, '*'), 4);

  // An update replaces the object's size; a delete takes it away.
  const big = JSON.parse(cache.getEntry(GR, 'a', 'n1', 'big')!.json) as { metadata: { resourceVersion: string } };
  await storage.write('update', key('a', 'n1', 'big'), cm('n1', 'big', 20), big.metadata.resourceVersion);
  await storage.write('delete', key('a', 'n2', 'mid'), cm('n2', 'mid', 5_000));
  await cache.waitForRevision(await storage.currentRevision());
  assert.ok(cache.storedSize(GR, 'a', 'n1') < 1_000, `${cache.storedSize(GR, 'a', 'n1')} characters after the update`);
  assert.equal(cache.storedSize(GR, 'a', 'n1'), sizeOf(['a', 'n1', 'big'], ['a', 'n1', 'small']));
  assert.equal(cache.storedSize(GR, 'a', 'n2'), 0);
  assert.equal(cache.count(GR, 'a'), 2);
  assert.equal(cache.storedSize(GR, 'a'), sizeOf(['a', 'n1', 'big'], ['a', 'n1', 'small']));
  assert.equal(cache.storedSize(GR, '*'), cache.storedSize(GR, 'a') + sizeOf(['b', 'n1', 'other']));
  assert.equal(cache.storedSize('core/secrets', 'a'), 0);
});
