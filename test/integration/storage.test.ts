/**
 * RedisStorage on a real Redis: the atomic multi-object create (CREATE_MANY_SCRIPT) keeps the
 * single-write invariants — dense revisions, one ADDED event per object in order, existing
 * objects left alone; a sole writer's current revision.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisStorage, type CommitItem } from '../../src/storage/redis.js';
import { importObjects } from '../../src/storage/migration.js';
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

test('commit: one revision and one event per written object, in order; ifAbsent skips existing objects', async () => {
  const first = await storage.write('create', 'core/configmaps/c1/default/existing', cm('existing'));
  assert.ok(first.ok);
  const toUpdate = await storage.write('create', 'core/configmaps/c1/default/u', cm('u'));
  assert.ok(toUpdate.ok);
  const res = await storage.commit([
    { op: 'create', objectKey: 'core/configmaps/c1/default/a', obj: cm('a') },
    { op: 'create', objectKey: 'core/configmaps/c1/default/existing', obj: cm('changed'), ifAbsent: true },
    { op: 'create', objectKey: 'core/configmaps/c1/default/b', obj: cm('b') },
    { op: 'update', objectKey: 'core/configmaps/c1/default/u', obj: { ...cm('u'), data: { a: 'updated' } }, expectedRv: toUpdate.rv },
  ]);
  assert.ok(res.ok);
  assert.equal(res.written.length, 4);
  assert.equal(res.written[1], undefined, 'existing object skipped');
  const rvs = [0, 2, 3].map((n) => Number(JSON.parse(res.written[n]!).metadata.resourceVersion));
  assert.deepEqual(rvs, [rvs[0], rvs[0]! + 1, rvs[0]! + 2], 'dense revisions');
  assert.equal(JSON.parse((await storage.get('core/configmaps/c1/default/a'))!).metadata.resourceVersion, String(rvs[0]));
  assert.equal(JSON.parse((await storage.get('core/configmaps/c1/default/existing'))!).data.a, 'existing', 'left alone');
  assert.equal(JSON.parse((await storage.get('core/configmaps/c1/default/u'))!).data.a, 'updated');
  const events = await storage.client.xrange('{st}:events', `${rvs[0]}-0`, `${rvs[2]}-0`);
  assert.deepEqual(events.map(([id, f]) => [id, f[1], f[3]]), [
    [`${rvs[0]}-0`, 'ADDED', 'core/configmaps/c1/default/a'],
    [`${rvs[1]}-0`, 'ADDED', 'core/configmaps/c1/default/b'],
    [`${rvs[2]}-0`, 'MODIFIED', 'core/configmaps/c1/default/u'],
  ]);
  assert.deepEqual(await storage.commit([]), { ok: true, written: [] });
});

test('commit: a delete removes the key and its DELETED event carries the final state; a stale or missing one aborts', async () => {
  const d = await storage.write('create', 'core/configmaps/c3/default/d', cm('d'));
  assert.ok(d.ok);
  const keep = await storage.write('create', 'core/configmaps/c3/default/keep', cm('keep'));
  assert.ok(keep.ok);
  const final = { ...cm('d'), metadata: { ...cm('d').metadata, deletionTimestamp: '2026-11-27T00:00:00Z' } };
  const rv0 = Number(await storage.client.get('{st}:rv'));
  for (const [item, reason] of [
    [{ op: 'delete', objectKey: 'core/configmaps/c3/default/d', obj: final, expectedRv: String(Number(d.rv) - 1) }, 'conflict'],
    [{ op: 'delete', objectKey: 'core/configmaps/c3/default/none', obj: cm('none') }, 'notfound'],
  ] as Array<[CommitItem, string]>) {
    assert.deepEqual(await storage.commit([{ op: 'delete', objectKey: 'core/configmaps/c3/default/keep', obj: cm('keep'), expectedRv: keep.rv }, item]), { ok: false, index: 1, reason });
    assert.notEqual(await storage.get('core/configmaps/c3/default/keep'), null, `${reason}: nothing deleted`);
    assert.equal(Number(await storage.client.get('{st}:rv')), rv0, `${reason}: no revision used`);
  }
  const res = await storage.commit([
    { op: 'delete', objectKey: 'core/configmaps/c3/default/d', obj: final, expectedRv: d.rv },
    { op: 'update', objectKey: 'core/configmaps/c3/default/keep', obj: { ...cm('keep'), data: { a: 'kept' } }, expectedRv: keep.rv },
  ]);
  assert.ok(res.ok);
  assert.equal(await storage.get('core/configmaps/c3/default/d'), null);
  const events = await storage.client.xrange('{st}:events', `${rv0 + 1}-0`, `${rv0 + 2}-0`);
  assert.deepEqual(events.map(([id, f]) => [id, f[1], f[3]]), [
    [`${rv0 + 1}-0`, 'DELETED', 'core/configmaps/c3/default/d'],
    [`${rv0 + 2}-0`, 'MODIFIED', 'core/configmaps/c3/default/keep'],
  ]);
  const deleted = JSON.parse(events[0]![1][5]!) as { metadata: { deletionTimestamp?: string; resourceVersion?: string } };
  assert.equal(deleted.metadata.deletionTimestamp, '2026-11-27T00:00:00Z');
  assert.equal(deleted.metadata.resourceVersion, String(rv0 + 1));
});

test('commit: a failed precondition writes nothing and names the item', async () => {
  const u = await storage.write('create', 'core/configmaps/c2/default/u', cm('u'));
  assert.ok(u.ok);
  await storage.write('create', 'core/configmaps/c2/default/taken', cm('taken'));
  const rv0 = Number(await storage.client.get('{st}:rv'));
  const fresh = { op: 'create' as const, objectKey: 'core/configmaps/c2/default/fresh', obj: cm('fresh') };
  const cases: Array<[CommitItem, string]> = [
    [{ op: 'create', objectKey: 'core/configmaps/c2/default/taken', obj: cm('taken') }, 'exists'],
    [{ op: 'update', objectKey: 'core/configmaps/c2/default/u', obj: cm('u'), expectedRv: String(Number(u.rv) - 1) }, 'conflict'],
    [{ op: 'update', objectKey: 'core/configmaps/c2/default/gone', obj: cm('gone') }, 'notfound'],
  ];
  for (const [item, reason] of cases) {
    assert.deepEqual(await storage.commit([fresh, item]), { ok: false, index: 1, reason });
    assert.equal(await storage.get('core/configmaps/c2/default/fresh'), null, `${reason}: nothing written`);
    assert.equal(Number(await storage.client.get('{st}:rv')), rv0, `${reason}: no revision used`);
  }
});

test('currentRevision: a sole writer answers from the writes Redis acknowledged to it, and asks Redis again when told its revisions are unknown or after a reconnect', async () => {
  const sole = new RedisStorage({ url: redis.url, shard: 'sw', soleWriter: true });
  // Two processes writing one shard break a sole writer's contract; here the second one shows
  // which answers came without a round trip.
  const foreign = new RedisStorage({ url: redis.url, shard: 'sw' });
  try {
    await Promise.all([sole.ready(), foreign.ready()]);
    const key = (name: string) => `core/configmaps/sw/default/${name}`;
    assert.equal(await sole.currentRevision(), 0, 'seeded by a read: nothing written yet');
    const own = await sole.write('create', key('own'), cm('own'));
    assert.ok(own.ok);
    assert.equal(await sole.currentRevision(), Number(own.rv), 'its acknowledged write');
    // The first read of a turn at once, later ones of the same turn together at its end.
    await new Promise((resolve) => setImmediate(resolve));
    const order: string[] = [];
    const reads = [sole.currentRevision().then(() => order.push('first')), sole.currentRevision().then(() => order.push('second'))];
    await Promise.resolve(); await Promise.resolve();
    order.push('microtasks');
    await new Promise((resolve) => setImmediate(resolve));
    order.push('check phase');
    await Promise.all(reads);
    assert.deepEqual(order, ['first', 'microtasks', 'second', 'check phase']);
    const many = await sole.commit([{ op: 'create', objectKey: key('m1'), obj: cm('m1') }, { op: 'create', objectKey: key('m2'), obj: cm('m2') }]);
    assert.ok(many.ok);
    assert.equal(await sole.currentRevision(), Number(own.rv) + 2, 'the last revision of its transaction');
    const other = await foreign.write('create', key('other'), cm('other'));
    assert.ok(other.ok);
    assert.equal(await sole.currentRevision(), Number(own.rv) + 2, 'not asked: the foreign write is not seen');
    assert.equal(await foreign.currentRevision(), Number(other.rv), 'a storage without the option asks Redis');

    sole.forgetRevision();
    assert.equal(await sole.currentRevision(), Number(other.rv), 'asked again after forgetRevision');

    // A migration's import reports no revision per object: it makes the sole writer ask again.
    await importObjects(sole, [{ key: key('imported'), json: JSON.stringify(cm('imported')) }], { cluster: 'sw', leastRevision: 1000 });
    assert.ok(await sole.currentRevision() >= 1001, 'the import and its counter jump are counted');

    // A reconnect: whatever happened to Redis meanwhile is asked, not assumed.
    const last = await foreign.write('create', key('while-away'), cm('while-away'));
    assert.ok(last.ok);
    const reconnected = new Promise<void>((resolve) => sole.client.once('ready', () => resolve()));
    sole.client.disconnect(true);
    await reconnected;
    assert.equal(await sole.currentRevision(), Number(last.rv), 'asked again after the connection closed');
  } finally {
    await Promise.all([sole.close(), foreign.close()]);
  }
});
