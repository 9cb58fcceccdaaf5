/**
 * `npm run bench -- start`: start time of the compiled `kcp-ts start` as a user runs it
 * (docs/benchmarks.md, "Start time"). Each measurement spawns `node bin/kcp-ts start
 * --root-directory DIR --secure-port P [--shards 3]` and polls `GET /readyz` on P every 20 ms
 * (HTTPS, anonymous, as kubelet-style probes do) until it answers 200; the figure is spawn → that
 * 200. Four variants, in an order rotated every round:
 *
 * - `1 shard, fresh`: a new, empty root directory (PKI generated, bootstrap objects written);
 * - `1 shard, restart`: the same directory and port again after a clean stop (SIGTERM) — what a
 *   user does most;
 * - `3 shards, fresh` and `3 shards, restart`: `--shards 3` (root shard, two more, front-proxy;
 *   ready once every shard is registered and known everywhere).
 *
 * Also recorded per run: the server's own "ready in N ms" (from the start of `main` on, so
 * spawn minus it is Node's start and the CLI's module loading) and the CPU seconds (user +
 * system) of its process tree — node and its embedded redis-servers — at the moment it was ready,
 * steadier than wall time on a shared machine.
 *
 * Environment: BENCH_START_ROUNDS (default 5), BENCH_START_VARIANTS (comma-separated of
 * `1-fresh,1-restart,3-fresh,3-restart`), BENCH_START_BASELINE=<path of another build's
 * bin/kcp-ts> (every variant also measured with it, interleaved run by run with this build, so
 * both see the same machine load), BENCH_CPU_PROF=<dir> (`--cpu-prof` of every run, one file per
 * process; bench/profile-summary.ts summarises one), BENCH_START_TRACE=1 (the server's phase
 * timings, KCP_TS_START_TRACE, printed after each run).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { treeCpuSeconds } from './lib/procs.js';
import { freePorts } from './shards.js';
import type { Report, Row } from './workspaces.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(REPO, 'bin', 'kcp-ts');
const POLL_MS = 20;
const TIMEOUT_MS = 120_000;
const round = (n: number, d = 0) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

/** The goals of issue 24 item 5 (spawn → /readyz 200), in ms. */
const TARGET_MS: Record<number, number> = { 1: 500, 3: 1_500 };

/** Servers being measured and their root directories, for {@link killStartChildrenSync}. */
const live = new Map<ChildProcess, string>();

/** Kills every server still running (SIGKILL) with its embedded redis-servers: the benchmark was interrupted. */
export function killStartChildrenSync(): void {
  for (const [child, root] of live) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
    killOrphans(root);
  }
  live.clear();
}

/** One variant: shard count and whether the root directory was used before. */
interface Variant { key: string; shards: number; restart: boolean }
const VARIANTS: Variant[] = [
  { key: '1-fresh', shards: 1, restart: false },
  { key: '1-restart', shards: 1, restart: true },
  { key: '3-fresh', shards: 3, restart: false },
  { key: '3-restart', shards: 3, restart: true },
];

/** One measured start. */
interface StartRun { spawnToReadyMs: number; serverReadyMs: number; cpuSecondsAtReady: number; loadAvg1: number; trace?: string }

/** `GET <url>/readyz` without verifying the server (its CA is what the run generates): the status, 0 when unreachable. */
function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(0));
    req.end();
  });
}

/** Kills the embedded redis-servers a killed server left behind (their pid files). */
function killOrphans(root: string): void {
  for (const dir of ['', 'shards/shard-1', 'shards/shard-2']) {
    for (const role of ['redis', 'redis-queue']) {
      try { process.kill(Number(readFileSync(join(root, dir, role, 'redis.pid'), 'utf8')), 'SIGKILL'); } catch { /* none */ }
    }
  }
}

/**
 * Spawns `kcp-ts start` on `root`, waits for `/readyz` 200, stops it with SIGTERM and waits for
 * it to exit (its redis-servers stopped too).
 * @throws when it exits before it is ready or is not ready within 120 s
 */
async function measureStart(root: string, shards: number, label: string, bin = BIN, port?: number): Promise<StartRun & { port: number }> {
  // A restart uses its directory's previous port (as users restart): the shards' URLs in their
  // stored objects stay current, nothing is rewritten.
  port ??= shards > 1 ? await consecutiveFreePorts(shards + 1) : (await freePorts(1))[0]!;
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, label)}`] : [];
  const args = [...prof, bin, 'start', '--root-directory', root, '--secure-port', String(port!), ...(shards > 1 ? ['--shards', String(shards)] : [])];
  const loadAvg1 = loadavg()[0]!;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(process.env.BENCH_START_TRACE ? { KCP_TS_START_TRACE: '1' } : {}) } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => { out += String(d); });
  child.stderr!.on('data', (d) => { err = (err + String(d)).slice(-20_000); });
  live.set(child, root);
  const exited = new Promise<void>((r) => child.once('exit', () => { live.delete(child); r(); }));
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`kcp-ts start exited before it was ready: ${(out + err).slice(-2000)}`);
      if (await readyz(port!) === 200) break;
      if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`kcp-ts start not ready within ${TIMEOUT_MS} ms: ${(out + err).slice(-2000)}`);
      await sleep(POLL_MS);
    }
    const spawnToReadyMs = performance.now() - t0;
    const cpuSecondsAtReady = treeCpuSeconds(child.pid!);
    // The "ready" line follows /readyz's 200 by at most a turn of the server's event loop.
    for (let i = 0; i < 100 && !/ready in \d+ ms/.test(out); i++) await sleep(10);
    const serverReadyMs = Number(/ready in (\d+) ms/.exec(out)?.[1] ?? NaN);
    return { port: port!, spawnToReadyMs, serverReadyMs, cpuSecondsAtReady, loadAvg1, ...(process.env.BENCH_START_TRACE ? { trace: err.split('\n').filter((l) => l.startsWith('start trace')).join('\n') } : {}) };
  } finally {
    child.kill('SIGTERM');
    const t = setTimeout(() => { child.kill('SIGKILL'); killOrphans(root); }, 30_000);
    await exited;
    clearTimeout(t);
  }
}

/** `n` consecutive free ports (`--shards N` takes its port and the N after it). */
async function consecutiveFreePorts(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const [first] = await freePorts(1);
    const ports = Array.from({ length: n }, (_, i) => first! + i);
    if (ports[n - 1]! > 65535) continue;
    const free = await Promise.all(ports.map((p) => portFree(p)));
    if (free.every(Boolean)) return first!;
  }
  throw new Error(`no ${n} consecutive free ports found`);
}

async function portFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2; };
const range = (xs: number[]) => `${fmtInt(Math.min(...xs))}–${fmtInt(Math.max(...xs))}`;

/** The `start` scenario (see the file's comment). */
export async function startBench(): Promise<Report> {
  const rounds = Math.max(1, Number(process.env.BENCH_START_ROUNDS ?? 5));
  const wanted = new Set((process.env.BENCH_START_VARIANTS ?? VARIANTS.map((v) => v.key).join(',')).split(',').map((s) => s.trim()));
  const variants = VARIANTS.filter((v) => wanted.has(v.key));
  const baseline = process.env.BENCH_START_BASELINE;
  const builds: { name: string; bin: string }[] = [{ name: 'this build', bin: BIN }, ...(baseline ? [{ name: 'baseline', bin: baseline }] : [])];
  const keyOf = (b: { name: string }, v: Variant) => (b.name === 'this build' ? v.key : `${v.key} (baseline)`);
  const runs: Record<string, StartRun[]> = Object.fromEntries(builds.flatMap((b) => variants.map((v) => [keyOf(b, v), []])));
  const loadAvgBefore = loadavg().map((l) => round(l, 2));
  const startedAt = new Date().toISOString();
  for (let r = 0; r < rounds; r++) {
    // Which build goes first alternates by round.
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      // A restart needs a directory this build's server ran on: each shard count keeps one per
      // round, made by its fresh run (or by an unmeasured start when the fresh variant is not wanted).
      const dirs = new Map<number, { root: string; port: number }>();
      const dirOf = async (shards: number): Promise<{ root: string; port: number }> => {
        let d = dirs.get(shards);
        if (!d) {
          const root = mkdtempSync(join(tmpdir(), 'kcpst-'));
          d = { root, port: (await measureStart(root, shards, 'warm', b.bin)).port };
          dirs.set(shards, d);
        }
        return d;
      };
      // Fresh before restart of the same shard count; the shard counts alternate which goes first.
      const order = r % 2 === 0 ? variants : [...variants.filter((v) => v.shards === 3), ...variants.filter((v) => v.shards === 1)];
      try {
        for (const v of order) {
          let run: StartRun;
          if (v.restart) {
            const d = await dirOf(v.shards);
            run = await measureStart(d.root, v.shards, v.key, b.bin, d.port);
          } else {
            const root = mkdtempSync(join(tmpdir(), 'kcpst-'));
            const { port, ...measured } = await measureStart(root, v.shards, v.key, b.bin);
            run = measured;
            if (dirs.has(v.shards)) rmSync(root, { recursive: true, force: true });
            else dirs.set(v.shards, { root, port });
          }
          runs[keyOf(b, v)]!.push(run);
          log(`round ${r + 1} ${keyOf(b, v)}: spawn → /readyz ${fmtInt(run.spawnToReadyMs)} ms (server's own ${run.serverReadyMs} ms), CPU ${round(run.cpuSecondsAtReady, 2)} s, load ${round(run.loadAvg1, 2)}`);
          if (run.trace) log(run.trace);
        }
      } finally {
        for (const d of dirs.values()) rmSync(d.root, { recursive: true, force: true });
      }
    }
  }
  const loadAvgAfter = loadavg().map((l) => round(l, 2));
  const rows: Row[] = [];
  const table = ['| variant | spawn → /readyz 200, median (range) | target | met | server\'s own "ready in" | CPU s of node + redis at ready |', '|---|---|---|---|---|---|'];
  for (const b of builds) {
    for (const v of variants) {
      const rs = runs[keyOf(b, v)]!;
      const wall = rs.map((x) => x.spawnToReadyMs);
      const own = rs.map((x) => x.serverReadyMs);
      const cpu = rs.map((x) => x.cpuSecondsAtReady);
      const target = TARGET_MS[v.shards];
      const met = target === undefined ? '–' : median(wall) < target ? 'yes' : 'NO';
      const name = `${v.shards === 1 ? 'kcp-ts start' : `kcp-ts start --shards ${v.shards}`}, ${v.restart ? 'restart on its directory' : 'fresh directory'}${b.name === 'baseline' ? ' (baseline)' : ''}`;
      table.push(`| ${name} | ${fmtInt(median(wall))} ms (${range(wall)}) | ${target ? `< ${fmtInt(target)} ms` : '–'} | ${met} | ${fmtInt(median(own))} ms (${range(own)}) | ${round(median(cpu), 2)} s (${round(Math.min(...cpu), 2)}–${round(Math.max(...cpu), 2)}) |`);
      rows.push({ scenario: 'start', figure: `${name}: spawn → /readyz 200 (median of ${rs.length})`, value: `${fmtInt(median(wall))} ms`, target: target ? `< ${fmtInt(target)} ms` : '–', met, detail: `range ${range(wall)} ms; server's own ${fmtInt(median(own))} ms; CPU ${round(median(cpu), 2)} s` });
    }
  }
  const markdown = table.join('\n');
  process.stdout.write(`\nLoad average ${loadAvgBefore.join(' / ')} before, ${loadAvgAfter.join(' / ')} after (1/5/15 min)\n${markdown}\n`);
  return { rows, result: { startedAt, rounds, baseline: baseline ?? null, pollMs: POLL_MS, loadAvgBefore, loadAvgAfter, runs, markdown } };
}
