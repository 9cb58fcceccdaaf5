/**
 * `npm run bench -- backup` (needs npm run build): `kcp-ts backup` and `kcp-ts restore` of a shard
 * holding 100,000 ConfigMaps (BENCH_BACKUP_OBJECTS), each as the server stores it (full metadata
 * with a managedFields entry, 1 KiB of data — 512 random hex characters and 512 of text: ≈ 1.5 KB
 * of JSON). Two redis-servers configured as
 * the embedded one (AOF, appendfsync always); the objects are written with the shard's own
 * transaction script (500 per transaction), so the revision counter and the watch stream are as
 * a serving shard leaves them. Measured as a user runs it, the CLI as a child process, wall time:
 * the backup of the idle shard, a backup while a writer updates 1,000 objects/s (the stream replay
 * at work), the restore into an empty Redis; the file's size; the commands' CPU time (user +
 * system, by /usr/bin/time), which load on a shared machine inflates less. Median of 3 runs each.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { RedisStorage } from '../src/storage/redis.js';
import type { KubeObject } from '../src/apimachinery/meta.js';
import type { Report } from './workspaces.js';

const execFileP = promisify(execFile);
const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'kcp-ts');
const N = Number(process.env.BENCH_BACKUP_OBJECTS ?? 100_000);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const a = s.address(); s.close(() => res(typeof a === 'object' && a ? a.port : 0)); });
  });
}

/** A redis-server as the embedded storage one (AOF, fsync always). */
async function redisServer(dir: string): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined);
    try { await r.connect(); await r.ping(); r.disconnect(); break; } catch { r.disconnect(); if (i > 200) throw new Error('redis-server did not start'); await new Promise((s) => setTimeout(s, 25)); }
  }
  return { url: `redis://127.0.0.1:${port}`, proc, async stop() { proc.kill('SIGTERM'); await new Promise((r) => proc.once('exit', r)); } };
}

/** 512 hex characters that differ per object (a seeded xorshift): data gzip cannot fold away. */
function noise(i: number): string {
  let x = (i + 1) * 2654435761 >>> 0;
  let out = '';
  while (out.length < 512) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    out += x.toString(16).padStart(8, '0');
  }
  return out;
}

function configMap(i: number): KubeObject {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: `cm-${i}`, namespace: 'bench', uid: `0b7e8f1a-5c6d-4e7f-8a9b-${String(i).padStart(12, '0')}`,
      creationTimestamp: '2026-03-04T05:06:07Z', labels: { app: 'bench', index: String(i) },
      managedFields: [{ manager: 'kubectl-create', operation: 'Update', apiVersion: 'v1', time: '2026-03-04T05:06:07Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {}, 'f:b': {} } } }],
    },
    data: { a: noise(i), b: `${i}`.padEnd(512, 'y') },
  } as KubeObject;
}
const keyOf = (i: number) => `core/configmaps/root/bench/cm-${i}`;

/**
 * Runs the CLI; wall time, and its CPU seconds (user + system, from /usr/bin/time when present):
 * on a shared machine the CPU time says more about the command than the wall time.
 */
async function cli(args: string[]): Promise<{ ms: number; cpuS: number; stdout: string }> {
  const timed = existsSync('/usr/bin/time');
  const t0 = performance.now();
  const { stdout, stderr } = timed
    ? await execFileP('/usr/bin/time', ['-f', 'cpu-seconds %U %S', process.execPath, BIN, ...args], { timeout: 600_000 })
    : await execFileP(process.execPath, [BIN, ...args], { timeout: 600_000 });
  const ms = performance.now() - t0;
  const m = /cpu-seconds ([\d.]+) ([\d.]+)/.exec(stderr);
  return { ms, cpuS: m ? Number(m[1]) + Number(m[2]) : NaN, stdout };
}

/** The backup scenario (see the module comment). */
export async function backupBench(): Promise<Report> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bench-backup-'));
  const source = await redisServer(mkdtempSync(join(dir, 'source-')));
  const target = await redisServer(mkdtempSync(join(dir, 'target-')));
  const storage = new RedisStorage({ url: source.url, shard: 'root' });
  const targetClient = new Redis(target.url);
  try {
    await storage.ready();
    log(`backup: writing ${fmtInt(N)} ConfigMaps`);
    let jsonBytes = 0;
    for (let i = 0; i < N; i += 500) {
      const items = Array.from({ length: Math.min(500, N - i) }, (_, j) => ({ op: 'create' as const, objectKey: keyOf(i + j), obj: configMap(i + j) }));
      const r = await storage.commit(items);
      if (!r.ok) throw new Error(`seeding failed at ${i}`);
      for (const w of r.written) jsonBytes += Buffer.byteLength(w!);
    }
    const file = join(dir, 'root.kcpbackup');
    const idle: number[] = [];
    const idleCpu: number[] = [];
    for (let r = 0; r < 3; r++) { const o = await cli(['backup', '--redis-url', source.url, '-o', file]); idle.push(o.ms); idleCpu.push(o.cpuS); }
    const bytes = statSync(file).size;

    // Under writes: one writer updating objects at 1,000/s while the backup runs.
    const busy: number[] = [];
    const replayed: number[] = [];
    for (let r = 0; r < 3; r++) {
      let stop = false;
      let n = 0;
      const writer = (async () => {
        const t0 = performance.now();
        while (!stop) {
          const due = Math.floor((performance.now() - t0) / 1000 * 1000);
          const batch: Promise<unknown>[] = [];
          while (n < due) { const i = (n++ * 7919) % N; batch.push(storage.write('update', keyOf(i), configMap(i))); }
          await Promise.all(batch);
          await new Promise((s) => setTimeout(s, 10));
        }
      })();
      const out = await cli(['backup', '--redis-url', source.url, '-o', `${file}.busy`]);
      stop = true;
      await writer;
      busy.push(out.ms);
      const m = /\((\d+) writes made during the scan replayed/.exec(out.stdout);
      if (!m) throw new Error(`backup said: ${out.stdout}`);
      replayed.push(Number(m[1]));
    }

    const restore: number[] = [];
    const restoreCpu: number[] = [];
    for (let r = 0; r < 3; r++) {
      await targetClient.flushall();
      const o = await cli(['restore', file, '--redis-url', target.url]);
      restore.push(o.ms);
      restoreCpu.push(o.cpuS);
    }
    const restored = await targetClient.dbsize();
    if (restored < N) throw new Error(`restore wrote ${restored} keys, expected ≥ ${N}`);
    const result = {
      objects: N, jsonBytes, fileBytes: bytes, bytesPerObject: round(bytes / N, 1), compression: round(jsonBytes / bytes, 1),
      backupMs: idle.map((x) => round(x, 0)), backupBusyMs: busy.map((x) => round(x, 0)), writesReplayed: replayed,
      restoreMs: restore.map((x) => round(x, 0)),
      backupCpuS: idleCpu.map((x) => round(x, 1)), restoreCpuS: restoreCpu.map((x) => round(x, 1)),
    };
    const detail = `2 cores shared; CLI as a child process, wall time incl. Node start-up; runs backup ${result.backupMs.join('/')} ms, under writes ${result.backupBusyMs.join('/')} ms, restore ${result.restoreMs.join('/')} ms`;
    return {
      result,
      rows: [
        { scenario: 'backup', figure: `kcp-ts backup, ${fmtInt(N)} ConfigMaps (${round(jsonBytes / 1e6, 0)} MB JSON), idle shard`, value: `${round(median(idle) / 1000, 1)} s`, target: '(reference)', met: '-', detail },
        { scenario: 'backup', figure: 'kcp-ts backup, CPU time of the command', value: `${round(median(idleCpu), 1)} s`, target: '(reference)', met: '-', detail: `runs ${result.backupCpuS.join('/')} s (user + system)` },
        { scenario: 'backup', figure: `kcp-ts backup while 1,000 updates/s`, value: `${round(median(busy) / 1000, 1)} s`, target: '(reference)', met: '-', detail: `writes made during the scan, replayed from the stream: ${replayed.join('/')}` },
        { scenario: 'backup', figure: 'backup file size', value: `${round(bytes / 1e6, 1)} MB`, target: '(reference)', met: '-', detail: `${result.bytesPerObject} B/object, ${result.compression}× smaller than the JSON` },
        { scenario: 'backup', figure: `kcp-ts restore into an empty Redis (AOF fsync always), ${fmtInt(N)} ConfigMaps`, value: `${round(median(restore) / 1000, 1)} s`, target: '(reference)', met: '-', detail },
        { scenario: 'backup', figure: 'kcp-ts restore, CPU time of the command', value: `${round(median(restoreCpu), 1)} s`, target: '(reference)', met: '-', detail: `runs ${result.restoreCpuS.join('/')} s (user + system)` },
      ],
    };
  } finally {
    await storage.close();
    targetClient.disconnect();
    await source.stop();
    await target.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
