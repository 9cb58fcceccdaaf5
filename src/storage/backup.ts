/**
 * Backup and restore of one shard's keyspace (docs/backup.md).
 *
 * Backup is a revision-fenced scan: read the revision counter R0, scan every object (MGET per
 * SCAN batch), read the counter again (R1), then replay from the watch stream every write in
 * (R0, R1]. Each write is one Lua script that bumps the counter and appends its event together
 * (scripts.ts), so the stream holds exactly one event per revision and the replay is checked for
 * gaps. An object not written during the scan was read as it is at R1; an object written during
 * it ends as its last event in (R0, R1] left it. The file therefore holds the keyspace exactly as
 * at revision R1 — a point-in-time view — without blocking writers, without a fork on the Redis
 * host, and with only the commands every Redis offers (managed services and Redis Cluster
 * included: a shard's keys share one hash tag, so one slot on one master).
 *
 * Restore writes a verified file into a Redis that holds nothing of the shard, under a marker key
 * a shard refuses to start on, and finishes in one MULTI: the revision counter set far above
 * anything a client may hold ({@link revisionGap}), the watch stream empty, the marker replaced by
 * a note of the backup. Watches and lists at an older resourceVersion then answer 410 Expired
 * (the watch cache's history begins at the new counter) and clients relist.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, readSync, renameSync, rmSync, fsyncSync, openSync, closeSync, writeFileSync, statSync } from 'node:fs';
import { createGunzip, createGzip } from 'node:zlib';
import { once } from 'node:events';
import { basename, dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { Writable } from 'node:stream';
import { ShardKeys } from './keys.js';
import { scanKeys, type RedisClient } from './redis.js';
import { MIGRATED_EVENT } from './migration.js';
import {
  BACKUP_FORMAT_VERSION, BACKUP_KIND, BACKUP_MAGIC, BackupFileError, encodeFrame, filePayload, FrameType, putPayload, readFrames,
  type BackupHeader, type BackupTrailer,
} from './backup-format.js';

export { BackupFileError } from './backup-format.js';

/**
 * Highest revision the write scripts can hand out: Redis runs Lua 5.1, whose numbers turn into
 * text with `%.14g`, so `rv .. '-0'` of 10^14 would be `1e+14-0` (scripts.ts). Restore refuses to
 * set the counter beyond it.
 */
export const MAX_REVISION = 99_999_999_999_999;
/** Least distance between a backup's revision and the counter after its restore: 10^9. */
export const REVISION_GAP_BASE = 1_000_000_000;
/**
 * Upper bound of a shard's write rate assumed by {@link revisionGap}, revisions per second:
 * 100,000. One Redis runs one script at a time and a kcp-ts shard's writes each take a script
 * plus an fsync; measured shards write a few thousand objects a second (docs/benchmarks.md).
 */
export const MAX_WRITES_PER_SECOND = 100_000;

/**
 * How far above the backup's revision a restore sets the counter: 10^9 plus 100,000 for every
 * second since the backup began. Whatever ran on from the backup's keyspace — the shard it was
 * taken from, or an earlier restore of the same file — cannot have handed out more revisions than
 * that, so every resourceVersion a client may hold is below the restored counter: its watch or
 * list answers 410 and nothing older is ever served as newer. The base covers clocks up to about
 * three hours apart.
 *
 * @param createdAt the backup's start, RFC 3339
 * @param now milliseconds since the epoch
 */
export function revisionGap(createdAt: string, now = Date.now()): number {
  const started = Date.parse(createdAt);
  const elapsedSeconds = Number.isFinite(started) ? Math.max(0, Math.ceil((now - started) / 1000)) : 0;
  return REVISION_GAP_BASE + elapsedSeconds * MAX_WRITES_PER_SECOND;
}

/** A restore whose marker has not been refreshed for this long (ms) is taken as abandoned by `ifEmpty`. */
export const RESTORE_HEARTBEAT_TIMEOUT_MS = 60_000;

/** Files of a managed PKI directory (src/pki/store.ts) a backup carries: certificates, keys, kubeconfigs. */
export const PKI_FILE_PATTERN = /\.(crt|key|kubeconfig)$/;

/** Options of {@link backupShard}. */
export interface BackupOptions {
  /** Shard name (its keys' hash tag). */
  shard: string;
  /** Where the file goes; written to a temporary file beside it and renamed when complete. */
  output: string;
  /** Recorded in the header. */
  source: BackupHeader['source'];
  /** A managed PKI directory whose certificates and keys go into the backup. */
  pkiDirectory?: string;
  /** Objects fetched per MGET (default 500). */
  batchSize?: number;
  /** gzip level 1–9 (default 6). */
  compressionLevel?: number;
}

/** What a backup or a verification found. */
export interface BackupSummary {
  header: BackupHeader;
  trailer: BackupTrailer;
  /** Names of the files (PKI) in the backup. */
  files: string[];
  /** Size of the file in bytes. */
  bytes: number;
}

/** The kcp-ts version (package.json), recorded in a backup's header. */
function writerVersion(): string {
  try {
    const up = import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json';
    return `kcp-ts ${(JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown'}`;
  } catch { return 'kcp-ts'; }
}

/** Writes into `stream`, waiting when it asks to (backpressure). */
async function put(stream: Writable, chunk: Buffer): Promise<void> {
  if (!stream.write(chunk)) await once(stream, 'drain');
}

/**
 * Takes a consistent backup of a shard's keyspace (see the module comment) while it serves.
 *
 * @throws Error `the watch stream no longer holds …` when more writes happened during the scan
 *   than the stream keeps (its MAXLEN, 100,000 by default): the replay would miss some; retry at
 *   a quieter time or raise the stream length
 * @throws Error from Redis (connection) or the file system; the output file is then not created
 */
export async function backupShard(client: RedisClient, options: BackupOptions): Promise<BackupSummary> {
  const keys = new ShardKeys(options.shard);
  const output = resolve(options.output);
  const tmp = join(dirname(output), `.${basename(output)}.tmp-${process.pid}`);
  const header: BackupHeader = {
    kind: BACKUP_KIND, format: BACKUP_FORMAT_VERSION, shard: options.shard, createdAt: new Date().toISOString(),
    source: options.source, writer: writerVersion(),
  };
  const file = createWriteStream(tmp, { mode: 0o600 });
  const fileDone = once(file, 'close');
  fileDone.catch(() => undefined);
  const gzip = createGzip({ level: options.compressionLevel ?? 6 });
  const failed = new Promise<never>((_, reject) => { file.on('error', reject); gzip.on('error', reject); });
  failed.catch(() => undefined);
  const hash = createHash('sha256');
  const counts = { files: 0, puts: 0, deletes: 0 };
  const frame = async (type: (typeof FrameType)[keyof typeof FrameType], payload: Buffer, hashed = true) => {
    const f = encodeFrame(type, payload);
    if (hashed) hash.update(f);
    await Promise.race([put(gzip, f), failed]);
  };
  try {
    file.write(BACKUP_MAGIC);
    gzip.pipe(file);
    await frame(FrameType.header, Buffer.from(JSON.stringify(header)));
    const files: string[] = [];
    if (options.pkiDirectory) {
      const dir = resolve(options.pkiDirectory);
      let entries: string[];
      try { entries = readdirSync(dir); } catch (err) { throw new Error(`cannot read the PKI directory ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
      for (const name of entries.filter((n) => PKI_FILE_PATTERN.test(n)).sort()) {
        if (!statSync(join(dir, name)).isFile()) continue;
        await frame(FrameType.file, filePayload(name, readFileSync(join(dir, name))));
        files.push(name);
        counts.files++;
      }
    }
    // 1. The fence: nothing written after R0 is trusted from the scan alone.
    const scanRevision = Number((await client.get(keys.rv)) ?? '0');
    const present = new Set<string>();
    const prefixLength = keys.objectPrefix.length;
    await scanKeys(client, `${keys.objectPrefix}*`, async (batch) => {
      const size = options.batchSize ?? 500;
      for (let i = 0; i < batch.length; i += size) {
        const part = batch.slice(i, i + size);
        const values = await client.mget(...part);
        for (let j = 0; j < part.length; j++) {
          const json = values[j];
          if (json == null) continue; // deleted since the SCAN saw it: its DELETED event is replayed
          const key = part[j]!.slice(prefixLength);
          await frame(FrameType.put, putPayload(key, json));
          present.add(key);
          counts.puts++;
        }
      }
    });
    // 2. Every write made while the scan ran, in revision order, from the watch stream.
    const revision = Number((await client.get(keys.rv)) ?? '0');
    let expect = scanRevision + 1;
    while (expect <= revision) {
      const entries = await client.xrange(keys.events, `${expect}-0`, `${revision}-0`, 'COUNT', 1000);
      const isJumpFrom = (fields: string[], from: number) => fields[1] === MIGRATED_EVENT && fields[fields.indexOf('p') + 1] === String(from);
      if (!entries.length || (Number(entries[0]![0].split('-')[0]) !== expect && !isJumpFrom(entries[0]![1], expect - 1))) {
        throw new Error(`the watch stream no longer holds revision ${expect}: more writes happened during the backup (${revision - scanRevision}) than the stream keeps; retry when the shard is quieter or raise its stream length`);
      }
      for (const [id, fields] of entries) {
        // A migration marker (src/storage/migration.ts) moves the counter on: the revisions it
        // jumps over were never handed out here.
        if (Number(id.split('-')[0]) !== expect && !isJumpFrom(fields, expect - 1)) {
          throw new Error(`the watch stream has a gap at revision ${expect}`);
        }
        expect = Number(id.split('-')[0]);
        let type = ''; let key = ''; let json = '';
        for (let i = 0; i < fields.length; i += 2) {
          if (fields[i] === 't') type = fields[i + 1]!; else if (fields[i] === 'k') key = fields[i + 1]!; else if (fields[i] === 'o') json = fields[i + 1]!;
        }
        if (type === MIGRATED_EVENT) { expect++; continue; } // a logical cluster migrated in: no object changed
        if (!type || !key) throw new Error(`the watch stream's event at revision ${expect} is malformed`);
        if (type === 'DELETED') {
          await frame(FrameType.delete, Buffer.from(key, 'utf8'));
          present.delete(key);
          counts.deletes++;
        } else {
          await frame(FrameType.put, putPayload(key, json));
          present.add(key);
          counts.puts++;
        }
        expect++;
      }
    }
    const trailer: BackupTrailer = {
      revision, scanRevision, finishedAt: new Date().toISOString(), ...counts, objects: present.size, sha256: hash.digest('hex'),
    };
    await frame(FrameType.trailer, Buffer.from(JSON.stringify(trailer)), false);
    gzip.end();
    await Promise.race([fileDone, failed]);
    const fd = openSync(tmp, 'r');
    try { fsyncSync(fd); } finally { closeSync(fd); }
    renameSync(tmp, output);
    syncDirectory(dirname(output));
    return { header, trailer, files, bytes: statSync(output).size };
  } catch (err) {
    gzip.destroy();
    file.destroy();
    rmSync(tmp, { force: true });
    throw err;
  }
}

function syncDirectory(dir: string): void {
  try { const fd = openSync(dir, 'r'); try { fsyncSync(fd); } finally { closeSync(fd); } } catch { /* not supported everywhere */ }
}

/**
 * The frames of a backup file, checked (see readFrames in backup-format.ts).
 * @throws BackupFileError for a missing, foreign, damaged or newer-format file
 */
async function* frames(path: string) {
  let fd: number;
  try { fd = openSync(path, 'r'); } catch (err) { throw new BackupFileError(`cannot read backup file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
  const magic = Buffer.alloc(BACKUP_MAGIC.length);
  const n = readSync(fd, magic, 0, magic.length, 0);
  closeSync(fd);
  if (n < magic.length || !magic.equals(BACKUP_MAGIC)) throw new BackupFileError(`${path} is not a kcp-ts backup file (it does not begin with "KCPTS-BACKUP")`);
  const stream = createReadStream(path, { start: BACKUP_MAGIC.length }).pipe(createGunzip());
  try {
    yield* readFrames(stream, `backup file ${path}`);
  } finally { stream.destroy(); }
}

/**
 * Reads a backup file through, checking every checksum, and says what it holds.
 * @throws BackupFileError for a missing, foreign, damaged or newer-format file
 */
export async function verifyBackup(path: string): Promise<BackupSummary & { pki: Map<string, Buffer> }> {
  let header: BackupHeader | undefined;
  let trailer: BackupTrailer | undefined;
  const pki = new Map<string, Buffer>();
  for await (const f of frames(path)) {
    if (f.type === FrameType.header) header = f.header;
    else if (f.type === FrameType.file) pki.set(f.name, f.content);
    else if (f.type === FrameType.trailer) trailer = f.trailer;
  }
  return { header: header!, trailer: trailer!, files: [...pki.keys()], pki, bytes: statSync(path).size };
}

/** Restore refused: the target holds data of the shard (or a PKI), and `force` was not given. */
export class RestoreTargetNotEmptyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreTargetNotEmptyError';
  }
}

/** Options of {@link restoreShard}. */
export interface RestoreOptions {
  /** The backup file. */
  input: string;
  /** Shard name expected (default: the backup's). A different name is refused. */
  shard?: string;
  /** Replace what the target holds of the shard (its objects, counter and stream) and its PKI files. */
  force?: boolean;
  /** Where the backup's PKI files go (none written when undefined). */
  pkiDirectory?: string;
  /** Distance of the new counter above the backup's revision (default {@link revisionGap}). */
  revisionGap?: number;
  /**
   * Succeed without writing when the shard was already restored from this very backup (its
   * `restored` note names the backup's checksum): what a restore run at every start of a pod needs.
   */
  skipIfRestored?: boolean;
  /**
   * Succeed without writing when the shard already holds data — unless what it holds is a restore
   * left unfinished, which is replaced: what an init container run at every pod start needs.
   */
  ifEmpty?: boolean;
  /** Objects per MSET (default 1000; fewer when they pass 4 MiB). */
  batchSize?: number;
  /** Clock, for tests (ms since the epoch). */
  now?: number;
}

/** What a restore did. */
export interface RestoreResult {
  header: BackupHeader;
  trailer: BackupTrailer;
  /** The revision counter after the restore. */
  revision: number;
  /** PKI files written. */
  files: string[];
  /** True when nothing was written: the shard already holds this backup (`skipIfRestored`) or data (`ifEmpty`). */
  alreadyRestored: boolean;
  /** Why nothing was written. */
  skipped?: 'restored' | 'has-data';
}

/** The note a restore leaves in `{shard}:restored`. */
export interface RestoredNote {
  backup: string;
  shard: string;
  backupRevision: number;
  revision: number;
  restoredAt: string;
}

/**
 * Why a shard must not start on this keyspace (a restore began and did not finish), or undefined.
 * Called by a shard before it loads its watch cache.
 */
export async function unfinishedRestore(client: RedisClient, keys: ShardKeys): Promise<string | undefined> {
  const marker = await client.get(keys.restoring);
  if (marker === null) return undefined;
  let what = '';
  try { const m = JSON.parse(marker) as { input?: string; startedAt?: string }; what = ` (from ${m.input ?? '?'}, started ${m.startedAt ?? '?'})`; } catch { /* still refuse */ }
  return `the Redis of shard "${keys.shard}" holds an unfinished restore${what}: run kcp-ts restore again with --force, or restore into an empty Redis`;
}

/** Every key of the shard's keyspace that a restore replaces (objects, counter, stream, notes). */
async function shardHasData(client: RedisClient, keys: ShardKeys): Promise<string | undefined> {
  if (await client.exists(keys.rv)) return `its revision counter ${keys.rv} exists`;
  if (await client.exists(keys.events)) return `its watch stream ${keys.events} exists`;
  if (await client.exists(keys.restoring)) return 'an unfinished restore left its marker';
  let found: string | undefined;
  const stop = new Error('found');
  try {
    await scanKeys(client, `${keys.objectPrefix}*`, async (batch) => { found = batch[0]; throw stop; });
  } catch (err) { if (err !== stop) throw err; }
  return found === undefined ? undefined : `it holds objects (e.g. ${found})`;
}

async function clearShard(client: RedisClient, keys: ShardKeys): Promise<void> {
  await scanKeys(client, `${keys.objectPrefix}*`, async (batch) => {
    for (let i = 0; i < batch.length; i += 500) await client.unlink(...batch.slice(i, i + 500));
  });
  await client.unlink(keys.rv, keys.events, keys.restoring, keys.restored);
}

/**
 * Restores a backup file into the shard's keyspace of `client`'s Redis: the file is verified whole
 * first (nothing is written from a damaged file), the target must hold nothing of the shard
 * unless `force`, the objects are written under the `restoring` marker, and one MULTI sets the
 * counter to the backup's revision plus {@link revisionGap}, empties the watch stream and leaves
 * the `restored` note. Stop the shard before restoring: a running one would not see the change.
 *
 * @throws BackupFileError for a foreign, damaged or newer-format file, or a shard name mismatch
 * @throws RestoreTargetNotEmptyError when the shard already has data there (or its PKI differs) and `force` is not set
 * @throws Error when the new counter would pass {@link MAX_REVISION}, or from Redis / the file system
 */
export async function restoreShard(client: RedisClient, options: RestoreOptions): Promise<RestoreResult> {
  const input = resolve(options.input);
  const verified = await verifyBackup(input);
  const { header, trailer } = verified;
  const shard = options.shard ?? header.shard;
  if (shard !== header.shard) throw new BackupFileError(`backup file ${input} is of shard "${header.shard}", not "${shard}"; a shard is restored under its own name`);
  const keys = new ShardKeys(shard);
  const backupId = trailer.sha256;
  if (options.skipIfRestored) {
    const note = await client.get(keys.restored);
    if (note && !(await client.exists(keys.restoring))) {
      try {
        const n = JSON.parse(note) as RestoredNote;
        if (n.backup === backupId) return { header, trailer, revision: n.revision, files: [], alreadyRestored: true, skipped: 'restored' };
      } catch { /* not ours: fall through to the emptiness check */ }
    }
  }
  const occupied = await shardHasData(client, keys);
  const halfRestored = occupied !== undefined && (await client.exists(keys.restoring)) === 1;
  if (occupied && options.ifEmpty && !halfRestored) {
    return { header, trailer, revision: Number((await client.get(keys.rv)) ?? '0'), files: [], alreadyRestored: true, skipped: 'has-data' };
  }
  if (halfRestored && options.ifEmpty && !options.force) {
    // Unfinished, or still being written by another process (pods of one shard start together)?
    // A restore refreshes its marker as it goes; one silent for a minute is abandoned.
    let beat = 0;
    try { beat = Date.parse((JSON.parse((await client.get(keys.restoring)) ?? '{}') as { heartbeat?: string }).heartbeat ?? ''); } catch { /* abandoned */ }
    if (Number.isFinite(beat) && Date.now() - beat < RESTORE_HEARTBEAT_TIMEOUT_MS) {
      throw new RestoreTargetNotEmptyError(`refusing to restore shard "${shard}": another restore is writing it (last progress ${new Date(beat).toISOString()}); retry later`);
    }
  }
  if (occupied && !options.force && !(options.ifEmpty && halfRestored)) {
    throw new RestoreTargetNotEmptyError(`refusing to restore shard "${shard}": the target Redis is not empty for it (${occupied}); restore into an empty Redis, or pass --force to replace what it holds`);
  }
  const pkiDir = options.pkiDirectory ? resolve(options.pkiDirectory) : undefined;
  if (pkiDir && !options.force) {
    const differing = [...verified.pki].filter(([name, content]) => existsSync(join(pkiDir, name)) && !readFileSync(join(pkiDir, name)).equals(content)).map(([n]) => n);
    if (differing.length) throw new RestoreTargetNotEmptyError(`refusing to restore the PKI into ${pkiDir}: it already holds other ${differing.join(', ')}; pass --force to replace them`);
  }
  const gap = options.revisionGap ?? revisionGap(header.createdAt, options.now);
  const revision = trailer.revision + gap;
  if (!Number.isSafeInteger(gap) || gap < 1) throw new Error(`invalid revision gap ${gap}`);
  if (revision > MAX_REVISION) throw new Error(`the restored revision counter would be ${revision}, beyond the highest revision the storage can hand out (${MAX_REVISION}); pass a smaller --revision-gap`);

  if (occupied) await clearShard(client, keys);
  const startedAt = new Date(options.now ?? Date.now()).toISOString();
  const marker = () => JSON.stringify({ input, backup: backupId, startedAt, heartbeat: new Date().toISOString() });
  if ((await client.set(keys.restoring, marker(), 'NX')) !== 'OK') throw new RestoreTargetNotEmptyError(`refusing to restore shard "${shard}": another restore is writing it`);

  // Consecutive puts go out as one MSET (the shard's keys share a slot, so a cluster takes it
  // too): a Redis with appendfsync always fsyncs once per event-loop turn that executed writes,
  // so one large command costs one fsync where a pipeline of single SETs costs one per read.
  const batchSize = options.batchSize ?? 1000;
  const MSET_BYTES = 4 * 1024 * 1024;
  let pipeline = client.pipeline();
  let queued = 0;
  let mset: string[] = [];
  let msetBytes = 0;
  const endMset = () => {
    if (!mset.length) return;
    pipeline.mset(...mset);
    queued += mset.length / 2;
    mset = [];
    msetBytes = 0;
  };
  let lastBeat = Date.now();
  const flush = async () => {
    endMset();
    if (!queued) return;
    if (Date.now() - lastBeat > 5000) { pipeline.set(keys.restoring, marker()); lastBeat = Date.now(); }
    const results = await pipeline.exec();
    for (const [err] of results ?? []) if (err) throw err;
    pipeline = client.pipeline();
    queued = 0;
  };
  for await (const f of frames(input)) {
    if (f.type === FrameType.put) {
      mset.push(keys.redisKey(f.key), f.json);
      msetBytes += f.json.length;
      if (mset.length / 2 >= batchSize || msetBytes >= MSET_BYTES) endMset();
    } else if (f.type === FrameType.delete) { endMset(); pipeline.del(keys.redisKey(f.key)); queued++; }
    else if (f.type === FrameType.trailer && f.trailer.sha256 !== backupId) throw new BackupFileError(`backup file ${input} changed while it was restored`);
    if (queued + mset.length / 2 >= batchSize * 4) await flush();
  }
  await flush();

  const written: string[] = [];
  if (pkiDir) {
    mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
    for (const [name, content] of verified.pki) {
      const target = join(pkiDir, name);
      const tmp = join(pkiDir, `.${name}.tmp-${process.pid}`);
      writeFileSync(tmp, content, { mode: /\.crt$/.test(name) ? 0o644 : 0o600 });
      const fd = openSync(tmp, 'r');
      try { fsyncSync(fd); } finally { closeSync(fd); }
      renameSync(tmp, target);
      written.push(name);
    }
    syncDirectory(pkiDir);
  }

  const note: RestoredNote = { backup: backupId, shard, backupRevision: trailer.revision, revision, restoredAt: new Date(options.now ?? Date.now()).toISOString() };
  const results = await client.multi()
    .set(keys.rv, String(revision))
    .del(keys.events)
    .set(keys.restored, JSON.stringify(note))
    .del(keys.restoring)
    .exec();
  for (const [err] of results ?? []) if (err) throw err;
  return { header, trailer, revision, files: written, alreadyRestored: false };
}

/** `redis-cluster`, `redis` or `embedded`: what a backup header records of its source. */
export function sourceKind(client: RedisClient, embedded: boolean): BackupHeader['source'] {
  if (embedded) return 'embedded';
  return client instanceof Cluster ? 'redis-cluster' : 'redis';
}
