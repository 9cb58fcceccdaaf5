/**
 * RedisStorage on a real Redis: the atomic multi-object create (CREATE_MANY_SCRIPT) keeps the
 * single-write invariants — dense revisions, one ADDED event per object in order, existing
 * objects left alone.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisStorage } from '../../src/storage/redis.js';
import { startRedis, type TestRedis } from '../helpers.js';

let redis: TestRedis;
let storage: RedisStorage;
before(async () => {
  redis = await startRedis();
  storage = new RedisStorage({ url: redis.url, shard: 'st' });
  await storage.ready();
});
after(async () => { await storage?.close(); await redis?.stop(); });

const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { a: name } });

test('createMany: one revision and one ADDED event per created object, in order; existing objects untouched', async () => {
  const first = await storage.write('create', 'core/configmaps/c1/default/existing', cm('existing'));
  assert.ok(first.ok);
  const res = await storage.createMany([
    { objectKey: 'core/configmaps/c1/default/a', obj: cm('a') },
    { objectKey: 'core/configmaps/c1/default/existing', obj: cm('changed') },
    { objectKey: 'core/configmaps/c1/default/b', obj: cm('b') },
  ]);
  assert.equal(res.length, 3);
  assert.ok(res[0]!.ok && res[2]!.ok);
  assert.deepEqual(res[1], { ok: false, reason: 'exists' });
  const rvA = Number((res[0] as { rv: string }).rv);
  const rvB = Number((res[2] as { rv: string }).rv);
  assert.equal(rvB, rvA + 1, 'dense revisions');
  const stored = JSON.parse((await storage.get('core/configmaps/c1/default/a'))!);
  assert.equal(stored.metadata.resourceVersion, String(rvA));
  assert.equal(JSON.parse((await storage.get('core/configmaps/c1/default/existing'))!).data.a, 'existing', 'left alone');
  const events = await storage.client.xrange('{st}:events', `${rvA}-0`, `${rvB}-0`);
  assert.deepEqual(events.map(([id, f]) => [id, f[1], f[3]]), [
    [`${rvA}-0`, 'ADDED', 'core/configmaps/c1/default/a'],
    [`${rvB}-0`, 'ADDED', 'core/configmaps/c1/default/b'],
  ]);
  assert.deepEqual(await storage.createMany([]), []);
});
