/**
 * Backup and restore at the storage level, on real redis-servers: a backup taken while writers
 * create, update and delete is exactly the keyspace at its revision; a restore reproduces it and
 * puts the counter far above; damaged, foreign and newer-format files and occupied targets are
 * refused; a half-finished restore is noticed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { startRedis, prng, type TestRedis } from '../helpers.js';
import { RedisStorage, scanKeys, connectRedis, type RedisClient } from '../../src/storage/redis.js';
import { ShardKeys } from '../../src/storage/keys.js';
import { backupShard, restoreShard, verifyBackup, revisionGap, unfinishedRestore, RestoreTargetNotEmptyError, BackupFileError, REVISION_GAP_BASE, MAX_WRITES_PER_SECOND } from '../../src/storage/backup.js';
import { BACKUP_MAGIC, encodeFrame, FrameType } from '../../src/storage/backup-format.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';

let source: TestRedis;
let target: TestRedis;
let storage: RedisStorage;
let targetClient: RedisClient;
const dir = mkdtempSync(join(tmpdir(), 'kcp-backup-'));

before(async () => {
  [source, target] = await Promise.all([startRedis(), startRedis()]);
  storage = new RedisStorage({ url: source.url, shard: 'root' });
  await storage.ready();
  targetClient = connectRedis(target.url, { enableOfflineQueue: true });
});

after(async () => {
  await storage.close();
  targetClient.disconnect();
  await Promise.all([source.stop(), target.stop()]);
});

const cm = (name: string, v: number): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', uid: `u-${name}` }, data: { v: String(v) } } as KubeObject);
const keyOf = (name: string) => `core/configmaps/c1/default/${name}`;

/** The shard's objects in a Redis: object key → JSON. */
async function objectsIn(client: RedisClient, shard = 'root'): Promise<Map<string, string>> {
  const keys = new ShardKeys(shard);
  const out = new Map<string, string>();
  await scanKeys(client, `${keys.objectPrefix}*`, async (batch) => {
    const values = await client.mget(...batch);
    batch.forEach((k, i) => { if (values[i] != null) out.set(k.slice(keys.objectPrefix.length), values[i]!); });
  });
  return out;
}

test('a backup under concurrent creates, updates and deletes is exactly the keyspace at its revision, and a restore reproduces it', async () => {
  // 4,000 objects, written in transactions of 200.
  const state = new Map<string, { json: string | null; rv: number }>();
  for (let b = 0; b < 20; b++) {
    const items = Array.from({ length: 200 }, (_, i) => ({ op: 'create' as const, objectKey: keyOf(`seed-${b * 200 + i}`), obj: cm(`seed-${b * 200 + i}`, 0) }));
    const r = await storage.commit(items);
    assert.ok(r.ok);
  }
  const initial = await objectsIn(storage.client);
  const log: Array<{ rv: number; key: string; json: string | null }> = [];
  let stop = false;
  const random = prng(7);
  // Four writers: each acknowledged write is logged with the revision that made it.
  const writer = async (w: number) => {
    let n = 0;
    while (!stop) {
      const pick = random();
      const name = `seed-${Math.floor(random() * 4000)}`;
      if (pick < 0.3) {
        const name2 = `new-${w}-${n++}`;
        const r = await storage.write('create', keyOf(name2), cm(name2, n));
        if (r.ok) log.push({ rv: Number(r.rv), key: keyOf(name2), json: r.json });
      } else if (pick < 0.8) {
        const r = await storage.write('update', keyOf(name), cm(name, n++));
        if (r.ok) log.push({ rv: Number(r.rv), key: keyOf(name), json: r.json });
      } else {
        const r = await storage.write('delete', keyOf(name), cm(name, -1));
        if (r.ok) log.push({ rv: Number(r.rv), key: keyOf(name), json: null });
      }
    }
  };
  const writers = [0, 1, 2, 3].map(writer);
  await new Promise((r) => setTimeout(r, 50));
  const file = join(dir, 'concurrent.kcpbackup');
  // Small MGET batches: the scan takes many round trips, so writes land in the middle of it.
  const summary = await backupShard(storage.client, { shard: 'root', output: file, source: 'redis', batchSize: 20 });
  await new Promise((r) => setTimeout(r, 50));
  stop = true;
  await Promise.all(writers);
  const { revision, scanRevision } = summary.trailer;
  assert.ok(revision > scanRevision, `writes happened during the scan (${scanRevision}..${revision})`);
  assert.ok(log.some((e) => e.rv > revision), 'writes continued after the backup');

  // Expected: the initial objects plus every acknowledged write up to the backup's revision.
  for (const [k, json] of initial) state.set(k, { json, rv: 0 });
  for (const e of [...log].sort((a, b) => a.rv - b.rv)) if (e.rv <= revision) state.set(e.key, { json: e.json, rv: e.rv });
  const expected = new Map([...state].filter(([, v]) => v.json !== null).map(([k, v]) => [k, v.json!]));
  assert.equal(summary.trailer.objects, expected.size);

  const now = Date.parse(summary.header.createdAt) + 60_000;
  const restored = await restoreShard(targetClient, { input: file, now });
  assert.equal(restored.alreadyRestored, false);
  const got = await objectsIn(targetClient);
  assert.equal(got.size, expected.size);
  for (const [k, json] of expected) assert.equal(got.get(k), json, `object ${k}`);
  // The counter: the backup's revision plus 10^9 plus 100,000 per second since the backup began.
  assert.equal(restored.revision, revision + REVISION_GAP_BASE + 60 * MAX_WRITES_PER_SECOND);
  assert.equal(await targetClient.get('{root}:rv'), String(restored.revision));
  assert.equal(await targetClient.exists('{root}:events'), 0, 'the watch stream is empty');
  assert.equal(await targetClient.exists('{root}:restoring'), 0);
  assert.ok(restored.revision > Math.max(...log.map((e) => e.rv)));

  // Restoring again: refused while the shard has data; skipped when asked and it is this backup.
  await assert.rejects(restoreShard(targetClient, { input: file }), (err: Error) => err instanceof RestoreTargetNotEmptyError && /not empty for it/.test(err.message) && /--force/.test(err.message));
  const again = await restoreShard(targetClient, { input: file, skipIfRestored: true });
  assert.equal(again.alreadyRestored, true);
  // --force replaces what is there.
  await targetClient.set('{root}:o:core/configmaps/c1/default/stray', '{}');
  const forced = await restoreShard(targetClient, { input: file, force: true, now });
  assert.equal(forced.revision, restored.revision);
  assert.equal((await objectsIn(targetClient)).size, expected.size);
  await targetClient.flushall();
});

test('damaged, cut, foreign and newer-format files are refused before anything is written', async () => {
  await storage.client.flushall();
  for (let i = 0; i < 50; i++) await storage.write('create', keyOf(`o${i}`), cm(`o${i}`, i));
  const file = join(dir, 'good.kcpbackup');
  await backupShard(storage.client, { shard: 'root', output: file, source: 'redis' });
  const good = readFileSync(file);
  const v = await verifyBackup(file);
  assert.equal(v.trailer.objects, 50);

  const attempt = async (name: string, bytes: Buffer, pattern: RegExp) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    await assert.rejects(restoreShard(targetClient, { input: path }), (err: Error) => err instanceof BackupFileError && pattern.test(err.message), name);
    assert.equal(await targetClient.dbsize(), 0, `${name}: nothing written`);
  };
  // A flipped byte inside the compressed stream.
  const flipped = Buffer.from(good); flipped[Math.floor(good.length / 2)]! ^= 0xff;
  await attempt('flipped.kcpbackup', flipped, /is corrupt/);
  await attempt('cut.kcpbackup', good.subarray(0, good.length - 40), /is corrupt/);
  await attempt('foreign.kcpbackup', Buffer.from('apiVersion: v1\nkind: ConfigMap\n'), /is not a kcp-ts backup file/);
  // A frame altered with a matching CRC: only the trailer's SHA-256 tells.
  const frames = gunzipSync(good.subarray(BACKUP_MAGIC.length));
  const at = frames.indexOf('"v":"7"');
  const edited = Buffer.from(frames); edited.write('"v":"8"', at);
  // Recompute the CRC of the frame holding it, so the edit passes the frame check.
  let off = 0; const parts: Buffer[] = [];
  while (off < edited.length) {
    const len = edited.readUInt32BE(off + 1);
    parts.push(encodeFrame(edited[off] as 1, edited.subarray(off + 5, off + 5 + len)));
    off += 9 + len;
  }
  await attempt('edited.kcpbackup', Buffer.concat([BACKUP_MAGIC, gzipSync(Buffer.concat(parts))]), /SHA-256/);
  // A newer format.
  const newer = Buffer.concat([BACKUP_MAGIC, gzipSync(encodeFrame(FrameType.header, Buffer.from(JSON.stringify({ kind: 'kcp-ts.io/shard-backup', format: 99, shard: 'root' }))))]);
  await attempt('newer.kcpbackup', newer, /format 99.*newer kcp-ts/);
  // Well-formed and checksummed, but a key outside the object-key shape.
  const header = encodeFrame(FrameType.header, Buffer.from(JSON.stringify({ kind: 'kcp-ts.io/shard-backup', format: 1, shard: 'root', createdAt: new Date().toISOString(), source: 'redis', writer: 'test' })));
  const bogus = encodeFrame(FrameType.put, Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('rv{}')]));
  const sha = createHash('sha256').update(header).update(bogus).digest('hex');
  const trailer = encodeFrame(FrameType.trailer, Buffer.from(JSON.stringify({ revision: 1, scanRevision: 1, finishedAt: '', files: 0, puts: 1, deletes: 0, objects: 1, sha256: sha })));
  await attempt('badkey.kcpbackup', Buffer.concat([BACKUP_MAGIC, gzipSync(Buffer.concat([header, bogus, trailer]))]), /malformed object key/);
  await assert.rejects(restoreShard(targetClient, { input: join(dir, 'missing.kcpbackup') }), /cannot read backup file/);
  // Another shard's name.
  await assert.rejects(restoreShard(targetClient, { input: file, shard: 'shard-1' }), /of shard "root", not "shard-1"/);
});

test('a restore cut short leaves its marker, and a shard refuses to start on it', async () => {
  await targetClient.flushall();
  const keys = new ShardKeys('root');
  assert.equal(await unfinishedRestore(targetClient, keys), undefined);
  await targetClient.set(keys.restoring, JSON.stringify({ input: '/backups/x.kcpbackup', startedAt: '2026-01-01T00:00:00Z' }));
  assert.match((await unfinishedRestore(targetClient, keys))!, /unfinished restore \(from \/backups\/x.kcpbackup.*--force/);
  await assert.rejects(restoreShard(targetClient, { input: join(dir, 'good.kcpbackup') }), /unfinished restore left its marker/);
  // --if-empty (what an init container runs at every pod start): a marker still being refreshed
  // belongs to a restore in progress; one silent for a minute was abandoned and is redone.
  await targetClient.set(keys.restoring, JSON.stringify({ heartbeat: new Date().toISOString() }));
  await assert.rejects(restoreShard(targetClient, { input: join(dir, 'good.kcpbackup'), ifEmpty: true }), /another restore is writing it/);
  await targetClient.set(keys.restoring, JSON.stringify({ heartbeat: new Date(Date.now() - 120_000).toISOString() }));
  const redone = await restoreShard(targetClient, { input: join(dir, 'good.kcpbackup'), ifEmpty: true });
  assert.equal(redone.alreadyRestored, false);
  assert.equal(await unfinishedRestore(targetClient, keys), undefined);
  assert.equal((await objectsIn(targetClient)).size, 50);
  // A shard with data is left alone.
  const skipped = await restoreShard(targetClient, { input: join(dir, 'good.kcpbackup'), ifEmpty: true });
  assert.deepEqual([skipped.alreadyRestored, skipped.skipped], [true, 'has-data']);
  await restoreShard(targetClient, { input: join(dir, 'good.kcpbackup'), force: true });
  assert.equal(await unfinishedRestore(targetClient, keys), undefined);
});

test('the writes of a backup window must still be in the watch stream', async () => {
  await storage.client.flushall();
  const small = new RedisStorage({ url: source.url, shard: 'small', streamMaxLen: 10 });
  await small.ready();
  try {
    for (let i = 0; i < 2000; i++) await small.write('create', keyOf(`s${i}`), cm(`s${i}`, i));
    let stop = false;
    const writes = (async () => { let i = 0; while (!stop) await small.write('update', keyOf(`s${i++ % 2000}`), cm('x', i)); })();
    const output = join(dir, 'trimmed.kcpbackup');
    await assert.rejects(backupShard(small.client, { shard: 'small', output, source: 'redis', batchSize: 5 }), /the watch stream no longer holds revision \d+: more writes happened during the backup/);
    stop = true;
    await writes;
    assert.throws(() => readFileSync(output), /ENOENT/, 'no file left behind');
  } finally { await small.close(); }
});

test('the revision gap grows with the backup\'s age', () => {
  const t = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(revisionGap('2026-01-01T00:00:00Z', t), REVISION_GAP_BASE);
  assert.equal(revisionGap('2026-01-01T00:00:00Z', t + 3_600_000), REVISION_GAP_BASE + 3600 * MAX_WRITES_PER_SECOND);
  assert.equal(revisionGap('2026-01-01T00:00:00Z', t - 5000), REVISION_GAP_BASE, 'a clock behind counts as no time');
});
