/**
 * Process plumbing of the benchmark: the server child (bench/server-child.ts), its embedded
 * redis-server, CPU accounting from /proc and cleanup that never leaves a child behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Creds } from './client.js';

const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
const REPO_DIR = join(BENCH_DIR, '..');

const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  return Number(r.stdout?.trim()) || 100;
})();

/**
 * CPU time (user+system) of a process in seconds, from /proc/<pid>/stat (`thread` = `task/<tid>/`:
 * of one of its threads); NaN if unavailable.
 */
export function cpuSecondsOf(pid: number, thread = ''): number {
  try {
    const s = readFileSync(`/proc/${pid}/${thread}stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state(0) … utime(11) stime(12).
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch { return NaN; }
}

/** Busy CPU time of the whole machine (all cores) in seconds, from /proc/stat. */
export function machineBusySeconds(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …: busy = all but idle and iowait.
    const busy = f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!;
    return busy / CLK_TCK;
  } catch { return NaN; }
}

/**
 * CPU use over a period, in % of one core: the load generator (this process), the server
 * child (and its event-loop thread), its storage Redis and controller-queue Redis, and everything else on the machine (`other`: concurrent jobs disturb the
 * figures when this is high).
 */
export interface CpuReport { loadgen: number; server: number; serverMainThread: number; redis: number; redisQueue: number; other: number }

/** Samples the CPU time of the load generator (this process), the server and Redis. */
export class CpuSampler {
  constructor(private readonly serverPid: number, private readonly redisPid: number | undefined, private readonly queueRedisPid?: number) {}

  snapshot(): { t: number; self: number; server: number; serverMainThread: number; redis: number; redisQueue: number; machine: number } {
    const u = process.cpuUsage();
    return {
      t: performance.now(),
      machine: machineBusySeconds(),
      self: (u.user + u.system) / 1e6,
      server: cpuSecondsOf(this.serverPid),
      // The event loop's thread (its task id is the pid): what bounds latency; the rest is GC
      // helpers and libuv's pool.
      serverMainThread: cpuSecondsOf(this.serverPid, `task/${this.serverPid}/`),
      redis: this.redisPid ? cpuSecondsOf(this.redisPid) : NaN,
      redisQueue: this.queueRedisPid ? cpuSecondsOf(this.queueRedisPid) : NaN,
    };
  }

  report(from: ReturnType<CpuSampler['snapshot']>): CpuReport {
    const to = this.snapshot();
    const secs = (to.t - from.t) / 1000;
    const pct = (a: number, b: number) => Math.round(((b - a) / secs) * 1000) / 10;
    const loadgen = pct(from.self, to.self); const server = pct(from.server, to.server); const redis = pct(from.redis, to.redis);
    const machine = pct(from.machine, to.machine);
    const serverMainThread = pct(from.serverMainThread, to.serverMainThread);
    const redisQueue = pct(from.redisQueue, to.redisQueue);
    const known = loadgen + server + (Number.isNaN(redis) ? 0 : redis) + (Number.isNaN(redisQueue) ? 0 : redisQueue);
    return { loadgen, server, serverMainThread, redis, redisQueue, other: Math.max(0, Math.round((machine - known) * 10) / 10) };
  }
}

/**
 * Waits until the rest of the machine is quiet: busy CPU (all processes, in % of one core) below
 * `thresholdPct` over a 500 ms window, at most `maxWaitMs`. Call while the benchmark's own
 * processes are idle. Returns the last window's busy %.
 */
export async function waitForQuiet(thresholdPct = 25, maxWaitMs = 15_000): Promise<number> {
  const deadline = performance.now() + maxWaitMs;
  for (;;) {
    const a = machineBusySeconds(); const t = performance.now();
    await new Promise((r) => setTimeout(r, 500));
    const pct = ((machineBusySeconds() - a) / ((performance.now() - t) / 1000)) * 100;
    if (!(pct >= thresholdPct) || performance.now() > deadline) return Math.round(pct);
  }
}

/** A running server child. */
export interface ServerProc {
  root: string;
  url: string;
  redisUrl: string;
  /** Time `startServer` took inside the child, ms. */
  startMs: number;
  /** Time from spawning the child to its ready line, ms (includes Node start-up and tsx). */
  spawnToReadyMs: number;
  pid: number;
  redisPid: number | undefined;
  creds: Creds;
  cpu: CpuSampler;
  /** The child's event-loop delay (ms) since the previous call. */
  loopDelay(): Promise<{ p50: number; p99: number; max: number }>;
  /** Asks the child for its memory after a full GC. */
  mem(): Promise<{ rss: number; heapUsed: number; heapTotal: number; external: number; gc: boolean }>;
  stop(): Promise<void>;
}

/** Server children not yet stopped (including ones still starting), with their root directory. */
const live = new Map<ChildProcess, string>();
const liveRoots = new Set<string>();

/**
 * Pid of the running storage (`redis`) or controller-queue (`redis-queue`) redis-server of a root
 * directory (checked against /proc, pids get reused).
 */
function redisPidOf(root: string, dir: 'redis' | 'redis-queue' = 'redis'): number | undefined {
  const pidFile = join(root, dir, 'redis.pid');
  try {
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    if (!pid || !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server')) return undefined;
    return pid;
  } catch { return undefined; }
}

/**
 * Kills every server child still running (SIGKILL) and the redis-server of its root directory,
 * then removes the root directories (synchronous; for exit and signal handlers).
 */
export function killAllSync(): void {
  for (const [child, root] of live) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
    for (const dir of ['redis', 'redis-queue'] as const) {
      const redisPid = redisPidOf(root, dir);
      if (redisPid) { try { process.kill(redisPid, 'SIGKILL'); } catch { /* gone */ } }
    }
  }
  live.clear();
  for (const r of liveRoots) { try { rmSync(r, { recursive: true, force: true }); } catch { /* ignore */ } }
  liveRoots.clear();
}

/**
 * CPU seconds (user + system, with those of its reaped children) of the process `root` and of all
 * its live descendants, from /proc (parents from each process's stat line).
 * @returns NaN when `root` is gone
 */
export function treeCpuSeconds(root: number): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after "(comm)": state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      stats.set(pid, { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch { /* exited meanwhile */ }
  }
  if (!stats.has(root)) return NaN;
  const children = new Map<number, number[]>();
  for (const [pid, s] of stats) (children.get(s.ppid) ?? children.set(s.ppid, []).get(s.ppid)!).push(pid);
  let ticks = 0;
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    ticks += stats.get(pid)?.ticks ?? 0;
    todo.push(...(children.get(pid) ?? []));
  }
  return ticks / CLK_TCK;
}

/** A fresh, short root directory (the Redis unix socket path must stay below 100 bytes). */
export function freshRoot(): string {
  const r = mkdtempSync(join(tmpdir(), 'kcpb-'));
  liveRoots.add(r);
  return r;
}

export function removeRoot(r: string): void {
  rmSync(r, { recursive: true, force: true });
  liveRoots.delete(r);
}

/**
 * Spawns `node --expose-gc --import tsx bench/server-child.ts <root>` and waits for it to be ready.
 * `BENCH_CPU_PROF=<dir>` adds `--cpu-prof --cpu-prof-dir=<dir>/<label>` (written when it stops);
 * `BENCH_SERVER_NODE_ARGS` adds Node/V8 flags.
 */
export async function startServerProc(root = freshRoot(), opts: { label?: string } = {}): Promise<ServerProc> {
  const args = ['--expose-gc'];
  const profDir = process.env.BENCH_CPU_PROF;
  // One directory per scenario; the main thread's profile is the largest file (tsx's loader
  // thread writes a small one too).
  if (profDir) args.push('--cpu-prof', `--cpu-prof-dir=${join(profDir, opts.label ?? 'server')}`);
  // Experiments with V8/Node flags of the server, e.g. BENCH_SERVER_NODE_ARGS=--max-semi-space-size=64.
  if (process.env.BENCH_SERVER_NODE_ARGS) args.push(...process.env.BENCH_SERVER_NODE_ARGS.split(/\s+/).filter(Boolean));
  args.push('--import', 'tsx', join(BENCH_DIR, 'server-child.ts'), root);
  const t0 = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, { cwd: REPO_DIR, stdio: ['pipe', 'pipe', 'pipe'] });
  live.set(child, root);
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += String(d); if (stderr.length > 20_000) stderr = stderr.slice(-10_000); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const lines = createInterface({ input: child.stdout! });
  // BENCH_CHILD_STDOUT=<file>: the child's other output (e.g. of BENCH_SERVER_NODE_ARGS=--trace-gc) kept.
  const stdoutFile = process.env.BENCH_CHILD_STDOUT;
  if (stdoutFile) lines.on('line', (line) => { if (!line.startsWith('{')) appendFileSync(stdoutFile, `${line}\n`); });
  const waiting: ((msg: Record<string, unknown>) => boolean)[] = [];
  lines.on('line', (line) => {
    let msg: Record<string, unknown>;
    try { msg = JSON.parse(line) as Record<string, unknown>; } catch { return; }
    const i = waiting.findIndex((w) => w(msg));
    if (i >= 0) waiting.splice(i, 1);
  });
  const waitFor = (event: string, timeoutMs: number) => new Promise<Record<string, unknown>>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server child: no "${event}" within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`)), timeoutMs);
    void exited.then((code) => { clearTimeout(t); reject(new Error(`server child exited (${code}) while waiting for "${event}"; stderr: ${stderr.slice(-2000)}`)); });
    waiting.push((msg) => {
      if (msg.event === 'error') { clearTimeout(t); reject(new Error(`server child failed: ${String(msg.message)}`)); return true; }
      if (msg.event !== event) return false;
      clearTimeout(t); resolve(msg); return true;
    });
  });
  let ready: Record<string, unknown>;
  try {
    ready = await waitFor('ready', 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    for (const dir of ['redis', 'redis-queue'] as const) {
      const pid = redisPidOf(root, dir);
      if (pid) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    }
    live.delete(child);
    throw err;
  }
  const spawnToReadyMs = performance.now() - t0;
  const redisPid = redisPidOf(root);
  const queueRedisPid = redisPidOf(root, 'redis-queue');
  const creds: Creds = {
    ca: readFileSync(join(root, 'ca.crt'), 'utf8'),
    cert: readFileSync(join(root, 'admin.crt'), 'utf8'),
    key: readFileSync(join(root, 'admin.key'), 'utf8'),
  };
  let stopped: Promise<void> | undefined;
  const proc: ServerProc = {
    root, url: String(ready.url), redisUrl: String(ready.redisUrl), startMs: Number(ready.startMs), spawnToReadyMs,
    pid: child.pid!, redisPid, creds, cpu: new CpuSampler(child.pid!, redisPid, queueRedisPid),
    async loopDelay() {
      const p = waitFor('loop', 30_000);
      child.stdin!.write('loop\n');
      return (await p) as never;
    },
    async mem() {
      const p = waitFor('mem', 30_000);
      child.stdin!.write('mem\n');
      return (await p) as never;
    },
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.stdin!.write('stop\n');
          const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(t);
        }
        // The child stops its redis-server; make sure of it.
        for (const pid of [redisPid, queueRedisPid]) {
          if (!pid) continue;
          for (let i = 0; i < 100; i++) {
            try { process.kill(pid, 0); } catch { break; }
            if (i === 99) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        live.delete(child);
      })();
      return stopped;
    },
  };
  return proc;
}
