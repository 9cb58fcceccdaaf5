/**
 * Benchmark server process: `node --expose-gc --import tsx bench/server-child.ts <rootDir> [redisUrl]`.
 *
 * Starts one shard with `startServer` (from dist/, built by bench/run.ts; from src/ with
 * BENCH_SOURCE=tsx) and prints one JSON line on stdout when ready:
 * `{"event":"ready","url":…,"port":…,"redisUrl":…,"startMs":…,"pid":…}` where `startMs` is the time
 * from calling `startServer` to its promise resolving (measured in this process).
 *
 * Commands, one per line on stdin (answers are JSON lines on stdout):
 * - `mem`  → runs `global.gc()` (when exposed) and answers `{"event":"mem","rss":…,"heapUsed":…,…}`
 * - `loop` → the event-loop delay since the previous `loop` (perf_hooks.monitorEventLoopDelay,
 *   1 ms resolution): `{"event":"loop","p50":…,"p99":…,"max":…}` in ms, then starts afresh
 * - `stop` → stops the server (ends watches, closes Redis, stops the embedded redis-server) and exits
 *
 * `BENCH_STALL_LOG=<file>` appends one line per garbage collection pause of 5 ms or more
 * (`<ms since start> gc-<kind> <pause ms>`) and per 250 ms window whose longest event-loop delay
 * exceeded 20 ms (`<ms since start> loop <max delay ms>`), to tell where stalls come from.
 *
 * The child also stops when stdin closes (the benchmark died) or on SIGTERM/SIGINT, so no
 * redis-server is left behind.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import type { RunningServer, startServer as StartServer } from '../src/index.js';

// The compiled server (what `kcp-ts start` runs) unless BENCH_SOURCE=tsx: tsx's transform wraps
// every function it creates in a naming helper, which costs CPU on the request path.
const { startServer } = (await import(process.env.BENCH_SOURCE === 'tsx' ? '../src/index.js' : '../dist/src/index.js')) as { startServer: typeof StartServer };

const root = process.argv[2];
const redisUrl = process.argv[3] || undefined;
if (!root) {
  process.stderr.write('usage: server-child.ts <rootDir> [redisUrl]\n');
  process.exit(2);
}

const gcLog = process.env.BENCH_STALL_LOG;
if (gcLog) {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  setInterval(() => {
    const max = delay.max / 1e6;
    if (max > 20) appendFileSync(gcLog, `${Math.round(performance.now())} loop ${max.toFixed(1)}\n`);
    delay.reset();
  }, 250).unref();
  const kinds: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
      if (e.duration >= 5) appendFileSync(gcLog, `${Math.round(e.startTime)} gc-${kinds[kind] ?? kind} ${e.duration.toFixed(1)}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
}

const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();

let server: RunningServer | undefined;
let stopping: Promise<void> | undefined;

function send(msg: object): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

function stop(code = 0): Promise<void> {
  stopping ??= (async () => {
    const t = setTimeout(() => process.exit(code || 1), 10_000);
    try { await server?.stop(); } catch (err) { process.stderr.write(`stop failed: ${String(err)}\n`); }
    clearTimeout(t);
    process.exit(code);
  })();
  return stopping;
}

process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

const gc = (globalThis as { gc?: () => void }).gc;

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = line.trim();
  if (cmd === 'stop') void stop(0);
  else if (cmd === 'loop') {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    send({ event: 'loop', p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) });
    loopDelay.reset();
  } else if (cmd === 'mem') {
    if (gc) { gc(); gc(); }
    const m = process.memoryUsage();
    send({ event: 'mem', gc: Boolean(gc), rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers });
  }
}).on('close', () => void stop(0));

try {
  const t0 = performance.now();
  // BENCH_WATCH_HISTORY: the watch cache's history window in events (a memory scenario keeps it
  // small so that what the window happens to hold does not swamp a per-object figure).
  const history = process.env.BENCH_WATCH_HISTORY ? Number(process.env.BENCH_WATCH_HISTORY) : undefined;
  // BENCH_AUDIT_POLICY: an audit policy file; the audit log is <root>/audit.log (scenario audit).
  const auditPolicy = process.env.BENCH_AUDIT_POLICY;
  const audit = auditPolicy ? { policy: auditPolicy, path: join(root, 'audit.log') } : undefined;
  // BENCH_APF=off: priority and fairness off (kube's max-in-flight limits instead);
  // BENCH_MAX_INFLIGHT=<read-only>,<mutating>: --max-requests-inflight, --max-mutating-requests-inflight.
  const inflight = process.env.BENCH_MAX_INFLIGHT?.split(',').map(Number);
  server = await startServer({
    rootDirectory: root, securePort: 0, redisUrl, watchHistorySize: history, audit,
    enablePriorityAndFairness: process.env.BENCH_APF !== 'off', maxRequestsInflight: inflight?.[0], maxMutatingRequestsInflight: inflight?.[1],
  });
  const startMs = performance.now() - t0;
  send({ event: 'ready', url: server.url, port: server.port, redisUrl: server.redisUrl, startMs, pid: process.pid });
} catch (err) {
  send({ event: 'error', message: err instanceof Error ? err.stack ?? err.message : String(err) });
  await stop(1);
}
