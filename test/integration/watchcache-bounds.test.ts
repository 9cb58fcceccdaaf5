/**
 * Bounds by size on a real Redis: the watch cache's history window holds at most a number of
 * characters of events as well as a number of events (also when loaded at start-up), and the
 * event stream's XADD trims to fewer events when they are large. Without them a tenant rewriting
 * large objects filled the shard's memory (20,000 events of 1.4 MB) and Redis's (100,000).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type TestRedis } from '../helpers.js';
import { RedisStorage } from '../../src/storage/redis.js';
import { WatchCache } from '../../src/storage/watchcache.js';
import { streamKeepLua } from '../../src/storage/scripts.js';

let redis: TestRedis;
let storage: RedisStorage;
const GR = 'core/configmaps';
const HISTORY_CHARS = 100_000;

before(async () => {
  redis = await startRedis();
  storage = new RedisStorage({ url: redis.url, shard: 'bounds' });
  await storage.ready();
});
after(async () => { await storage?.close(); await redis?.stop(); });

const cm = (name: string, size: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'n' }, data: { v: 'x'.repeat(size) } });
const key = (name: string) => `${GR}/a/n/${name}`;

test('the history window ends at its character bound: live, and when loaded at start-up', async () => {
  const cache = new WatchCache(storage.client, storage.keys, { historySize: 1000, historyChars: HISTORY_CHARS });
  await cache.start();
  try {
    const first = await storage.currentRevision();
    // 100 small events, then 40 of 10 KB: 400 KB, four times the bound.
    for (let i = 0; i < 100; i++) await storage.write('create', key(`small-${i}`), cm(`small-${i}`, 10));
    const bigFrom = await storage.currentRevision();
    for (let i = 0; i < 40; i++) await storage.write('create', key(`big-${i}`), cm(`big-${i}`, 10_000));
    const last = await storage.currentRevision();
    await cache.waitForRevision(last);
    const oldest = cache.oldestResumableRevision;
    assert.ok(oldest > bigFrom, `the window starts among the large events (oldest resumable ${oldest}, large from ${bigFrom})`);
    const kept = last - oldest;
    assert.ok(kept >= 9 && kept <= 13, `${kept} large events kept: about 100,000 characters' worth, a quarter more before it trims`);
    assert.throws(() => cache.listAt(GR, 'a', 'n', first), (e: unknown) => (e as { code?: number }).code === 410, 'a revision before the window is 410 Expired');
  } finally { await cache.stop(); }

  // A cache started now loads the stream's newest events up to the same bound, not all 140.
  const restarted = new WatchCache(storage.client, storage.keys, { historySize: 1000, historyChars: HISTORY_CHARS });
  await restarted.start();
  try {
    const kept = (await storage.currentRevision()) - restarted.oldestResumableRevision;
    assert.ok(kept >= 9 && kept <= 11, `${kept} events loaded at start-up`);
  } finally { await restarted.stop(); }
});

test('the count bound still applies to small events', async () => {
  const cache = new WatchCache(storage.client, storage.keys, { historySize: 50, historyChars: HISTORY_CHARS });
  await cache.start();
  try {
    for (let i = 0; i < 80; i++) await storage.write('create', key(`count-${i}`), cm(`count-${i}`, 10));
    const last = await storage.currentRevision();
    await cache.waitForRevision(last);
    const kept = last - cache.oldestResumableRevision;
    assert.ok(kept >= 50 && kept <= 63, `${kept} events kept of 80 (bound 50, trimmed at a quarter more)`);
  } finally { await cache.stop(); }
});

test('XADD keeps fewer events when they are large: as many as fit the character bound', async () => {
  const stream = '{bounds-test}:events';
  const add = (size: number, maxLen: number) => storage.client.eval(
    `${streamKeepLua(20_000)}\nlocal n = keep(ARGV[1], ARGV[2])\nredis.call('XADD', KEYS[1], 'MAXLEN', '~', n, '*', 'o', ARGV[2])\nreturn n`,
    1, stream, String(maxLen), 'x'.repeat(size));
  assert.equal(await add(10, 100_000), 2_000, 'small events: 20,000 / 10 = 2,000, under the configured count');
  assert.equal(await add(10, 500), 500, 'the configured count when it is lower');
  assert.equal(await add(50_000, 100_000), 1, 'an event above the bound keeps itself');
  await storage.client.del(stream);
  // Events of 5,000 characters (each its own node of the stream's radix tree, over its 4 KB): four fit.
  for (let i = 0; i < 30; i++) assert.equal(await add(5_000, 100_000), 4);
  const len = await storage.client.xlen(stream);
  assert.ok(len >= 4 && len <= 6, `${len} events kept of 30`);
});
