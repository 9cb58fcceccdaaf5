/**
 * `kcp-ts backup` and `kcp-ts restore` (docs/backup.md): one shard's keyspace and revision
 * counter, and the PKI where kcp-ts manages it, to and from a portable, checksummed file.
 * Exit codes: 0 done, 1 failed (a message on stderr), 2 usage errors.
 */
import { parseArgs } from 'node:util';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connectRedis, waitForRedis, type RedisClient } from '../storage/redis.js';
import { embeddedRedisURL, startEmbeddedRedis, type EmbeddedRedis } from '../storage/embedded.js';
import { lockRootDirectory, RootDirectoryInUseError, type RootLock } from '../server/rootlock.js';
import { BACKUP_EXTENSION } from '../storage/backup-format.js';
import { backupShard, restoreShard, sourceKind, verifyBackup, MAX_REVISION } from '../storage/backup.js';

const BACKUP_USAGE = `Usage: kcp-ts backup [flags]

Writes a consistent backup of one shard while it serves: its objects and revision counter as at
one revision, and its PKI (certificates and keys) where kcp-ts manages it. See docs/backup.md.

Flags:
  --root-directory DIR      the shard's root directory: its embedded Redis and PKI (default ".kcp")
  --redis-url URL           the shard's Redis instead (redis://, unix:// or redis-cluster://)
  --shard-name NAME         shard name (default "root")
  --pki-directory DIR       PKI to include (default: the root directory unless --redis-url is
                            given without --root-directory)
  -o, --output FILE         the backup file
  --output-directory DIR    instead of --output: DIR/<shard>-<UTC time>${BACKUP_EXTENSION}
  --retain N                with --output-directory: keep the newest N backups of the shard
                            there, remove older ones (default 0: keep all)
  -h, --help                this help
`;

const RESTORE_USAGE = `Usage: kcp-ts restore [flags] FILE|DIR

Restores a shard from a backup file (from a directory: its newest ${BACKUP_EXTENSION} file, of
--shard-name when given) into a
Redis that holds nothing of the shard. Stop the shard first. The revision counter continues far
above the backup's, so clients that watched or listed before get 410 Expired and relist.

Flags:
  --root-directory DIR      restore into this root directory's embedded Redis and PKI
                            (default ".kcp"; the server must not be running)
  --redis-url URL           restore into this Redis instead
  --shard-name NAME         the shard (default: the backup's; another name is refused)
  --pki-directory DIR       where the backup's PKI goes (default: the root directory unless
                            --redis-url is given without --root-directory: then not restored)
  --force                   replace what the target holds of the shard and its PKI files
  --revision-gap N          distance of the new revision counter above the backup's (default:
                            10^9 + 100,000 per second since the backup)
  --skip-if-restored        succeed without writing if the shard was restored from this backup
  --if-empty                succeed without writing if the shard already holds data (a restore
                            left unfinished is done again): a restore run at every pod start
  --allow-missing           succeed when DIR holds no backup of the shard (it starts empty)
  --verify                  only check the file (checksums, format) and describe it
  -h, --help                this help
`;

/** Options both commands share. */
interface Target { rootDirectory?: string; redisUrl?: string; pkiDirectory?: string }

/**
 * Opens the shard's Redis: `--redis-url`, else the root directory's embedded Redis — the running
 * server's (backup only), or one started here while holding the directory's lock.
 */
async function openTarget(t: Target, forWrite: boolean): Promise<{ client: RedisClient; embedded: boolean; close(): Promise<void> }> {
  if (t.redisUrl) {
    const client = connectRedis(t.redisUrl, { enableOfflineQueue: true });
    client.on('error', () => undefined);
    try { await waitForRedis(client, t.redisUrl); } catch (err) { client.disconnect(); throw err; }
    return { client, embedded: false, async close() { await client.quit().catch(() => client.disconnect()); } };
  }
  const root = resolve(t.rootDirectory ?? '.kcp');
  if (!forWrite && !existsSync(join(root, 'redis'))) throw new Error(`${t.rootDirectory ?? '.kcp'} holds no embedded Redis data (no ${join(root, 'redis')}); give the shard's --root-directory or --redis-url`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  let lock: RootLock | undefined;
  try {
    lock = await lockRootDirectory(root, t.rootDirectory ?? '.kcp');
  } catch (err) {
    if (!(err instanceof RootDirectoryInUseError)) throw err;
    if (forWrite) throw new Error(`${err.message}: stop that server before restoring into its root directory`);
    const url = embeddedRedisURL(root);
    if (!url) throw new Error(`${err.message}, but its embedded Redis did not say where it listens (${join(root, 'redis', 'url')})`);
    const client = connectRedis(url, { enableOfflineQueue: true });
    client.on('error', () => undefined);
    try { await waitForRedis(client, url); } catch (e) { client.disconnect(); throw e; }
    return { client, embedded: true, async close() { await client.quit().catch(() => client.disconnect()); } };
  }
  let redis: EmbeddedRedis | undefined;
  try {
    redis = await startEmbeddedRedis(root, 'storage');
    const client = connectRedis(redis.url, { enableOfflineQueue: true });
    client.on('error', () => undefined);
    await waitForRedis(client, redis.url);
    const started = redis;
    return {
      client, embedded: true,
      async close() { await client.quit().catch(() => client.disconnect()); await started.stop(); await lock.release(); },
    };
  } catch (err) {
    await redis?.stop().catch(() => undefined);
    await lock.release();
    throw err;
  }
}

/** The PKI directory a command uses (see the usage texts). */
function pkiDirectoryOf(t: Target): string | undefined {
  if (t.pkiDirectory) return t.pkiDirectory;
  if (t.redisUrl && !t.rootDirectory) return undefined;
  return t.rootDirectory ?? '.kcp';
}

const COMMON_OPTIONS = {
  'root-directory': { type: 'string' }, 'redis-url': { type: 'string' }, 'shard-name': { type: 'string' },
  'pki-directory': { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const;

/** `20260102T030405Z`: UTC time in a file name that sorts by time. */
function stamp(d = new Date()): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/** Runs `kcp-ts backup`. Resolves to the exit code. */
export async function backupMain(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: { ...COMMON_OPTIONS, output: { type: 'string', short: 'o' }, 'output-directory': { type: 'string' }, retain: { type: 'string' } },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts backup: ${(err as Error).message}\n\n${BACKUP_USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(BACKUP_USAGE); return 0; }
  const shard = values['shard-name'] ?? 'root';
  const usage = (m: string) => { process.stderr.write(`kcp-ts backup: ${m}\n`); return 2; };
  if (Boolean(values.output) === Boolean(values['output-directory'])) return usage('give one of --output and --output-directory');
  const retain = values.retain === undefined ? 0 : Number(values.retain);
  if (!Number.isInteger(retain) || retain < 0) return usage(`invalid --retain "${values.retain}" (a non-negative integer)`);
  if (retain && !values['output-directory']) return usage('--retain goes with --output-directory');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(shard)) return usage(`invalid --shard-name "${shard}"`);
  const dir = values['output-directory'];
  const output = dir ? join(dir, `${shard}-${stamp()}${BACKUP_EXTENSION}`) : values.output!;
  const target: Target = { rootDirectory: values['root-directory'], redisUrl: values['redis-url'], pkiDirectory: values['pki-directory'] };
  const t0 = performance.now();
  try {
    if (dir) mkdirSync(dir, { recursive: true });
    const opened = await openTarget(target, false);
    let summary;
    try {
      summary = await backupShard(opened.client, { shard, output, source: sourceKind(opened.client, opened.embedded), pkiDirectory: pkiDirectoryOf(target) });
    } finally { await opened.close(); }
    const { trailer } = summary;
    process.stdout.write(`backup of shard "${shard}" at revision ${trailer.revision}: ${trailer.objects} objects, ${summary.files.length} PKI files, ${summary.bytes} bytes in ${Math.round(performance.now() - t0)} ms -> ${output} (${trailer.revision - trailer.scanRevision} writes made during the scan replayed from the watch stream)\n`);
    if (dir && retain) {
      const mine = readdirSync(dir).filter((n) => n.startsWith(`${shard}-`) && n.endsWith(BACKUP_EXTENSION) && /^\d{8}T\d{6}Z$/.test(n.slice(shard.length + 1, -BACKUP_EXTENSION.length))).sort();
      for (const old of mine.slice(0, Math.max(0, mine.length - retain))) {
        rmSync(join(dir, old), { force: true });
        process.stdout.write(`removed ${join(dir, old)} (--retain ${retain})\n`);
      }
    }
    return 0;
  } catch (err) {
    process.stderr.write(`kcp-ts backup: ${(err as Error).message}\n`);
    return 1;
  }
}

/**
 * The file to restore: `path` itself, or for a directory its newest backup — of `shard` when
 * given (`<shard>-<UTC time>.kcpbackup`, as `backup --output-directory` names them), else of any
 * shard; undefined when a directory holds none.
 */
function resolveInput(path: string, shard: string | undefined): string | undefined {
  let st;
  try { st = statSync(path); } catch { return path; /* reported by the reader */ }
  if (!st.isDirectory()) return path;
  const timed = (n: string) => /^(.+)-(\d{8}T\d{6}Z)\.kcpbackup$/.exec(n);
  const files = readdirSync(path).filter((n) => n.endsWith(BACKUP_EXTENSION) && (!shard || timed(n)?.[1] === shard))
    .map((n) => ({ n, t: timed(n)?.[2] ?? new Date(statSync(join(path, n)).mtimeMs).toISOString() }))
    .sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.n < b.n ? -1 : 1));
  return files.length ? join(path, files[files.length - 1]!.n) : undefined;
}

/** Runs `kcp-ts restore`. Resolves to the exit code. */
export async function restoreMain(argv: string[]): Promise<number> {
  let values; let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: argv, strict: true, allowPositionals: true,
      options: {
        ...COMMON_OPTIONS, force: { type: 'boolean' }, 'revision-gap': { type: 'string' }, 'skip-if-restored': { type: 'boolean' },
        'if-empty': { type: 'boolean' }, 'allow-missing': { type: 'boolean' }, verify: { type: 'boolean' },
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts restore: ${(err as Error).message}\n\n${RESTORE_USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(RESTORE_USAGE); return 0; }
  const usage = (m: string) => { process.stderr.write(`kcp-ts restore: ${m}\n`); return 2; };
  if (positionals.length !== 1) return usage('give one backup file (or a directory of backups)');
  let gap: number | undefined;
  if (values['revision-gap'] !== undefined) {
    gap = Number(values['revision-gap']);
    if (!/^\d+$/.test(values['revision-gap']) || !Number.isSafeInteger(gap) || gap < 1 || gap > MAX_REVISION) return usage(`invalid --revision-gap "${values['revision-gap']}" (a positive integer)`);
  }
  const target: Target = { rootDirectory: values['root-directory'], redisUrl: values['redis-url'], pkiDirectory: values['pki-directory'] };
  const t0 = performance.now();
  try {
    const input = resolveInput(positionals[0]!, values['shard-name']);
    if (!input) {
      const what = `no ${values['shard-name'] ? `backup of shard "${values['shard-name']}" (${values['shard-name']}-<time>${BACKUP_EXTENSION})` : `${BACKUP_EXTENSION} file`} in ${positionals[0]}`;
      if (values['allow-missing']) { process.stdout.write(`${what}; nothing to restore (--allow-missing)\n`); return 0; }
      throw new Error(what);
    }
    if (values.verify) {
      const v = await verifyBackup(input);
      process.stdout.write(`${input}: backup of shard "${v.header.shard}" taken ${v.header.createdAt} by ${v.header.writer} from ${v.header.source}, format ${v.header.format}, revision ${v.trailer.revision}, ${v.trailer.objects} objects, PKI files: ${v.files.join(', ') || 'none'}; checksums good\n`);
      return 0;
    }
    const opened = await openTarget(target, true);
    let r;
    try {
      r = await restoreShard(opened.client, {
        input, shard: values['shard-name'], force: values.force, pkiDirectory: pkiDirectoryOf(target), revisionGap: gap,
        skipIfRestored: values['skip-if-restored'], ifEmpty: values['if-empty'],
      });
    } finally { await opened.close(); }
    if (r.alreadyRestored) {
      process.stdout.write(`shard "${r.header.shard}" ${r.skipped === 'has-data' ? 'already holds data (--if-empty)' : `was already restored from ${input}`}; nothing written\n`);
      return 0;
    }
    process.stdout.write(`restored shard "${r.header.shard}" from ${input} (revision ${r.trailer.revision}, ${r.trailer.objects} objects, ${r.files.length} PKI files) in ${Math.round(performance.now() - t0)} ms; the revision counter continues at ${r.revision}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`kcp-ts restore: ${(err as Error).message}\n`);
    return 1;
  }
}
