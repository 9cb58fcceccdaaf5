/**
 * kcp-ts and kcp side by side, measured with client-go (`npm run bench -- kcp-compare`): kcp's own
 * server (`kcp start`, embedded etcd, the release test/tools/build.sh builds: `build.sh --kcp`)
 * and a compiled `kcp-ts start` (embedded Redis), both running for the whole benchmark on fresh
 * root directories, driven by the neutral client-go load generator (bench/http2.ts: its path is
 * `KCP_TS_LOADGEN`, default `~/.cache/kcp-ts/loadgen`). kcp-ts is measured over HTTP/2 (client-go's
 * default transport) and over HTTP/1.1 (`DISABLE_HTTP2=1`, client-go's switch); kcp over HTTP/2.
 *
 * Scenarios, in a workspace `root:bench` of each server (created first, as a tenant's):
 * - `create`: ConfigMap creates, `BENCH_CONCURRENCY` workers (default 50), `BENCH_DURATION_MS`
 *   (default 5,000), a fresh namespace each run;
 * - `get`: GET of one ConfigMap, same workers and duration;
 * - `list`: LIST of a namespace holding 100 ConfigMaps, same workers and duration;
 * - `watch`: 100 watchers of one namespace, 200 creates at 50/s: p99 from the create's response
 *   to the event at each watcher;
 * - `workspaces`: `BENCH_KCPCMP_WORKSPACES` (default 300) Workspaces in root by 10 workers, until
 *   all are Ready: rate and create → Ready p99;
 * - `startup`: a server process on a fresh root directory, spawn → `/readyz` 200 (polled every 20 ms).
 *
 * Each figure comes with the **server's CPU per request**: user + system time (`/proc/<pid>/stat`,
 * utime + stime + cutime + cstime) of the server's whole process tree — the node process with its
 * storage and queue redis-servers for kcp-ts, the kcp process with its embedded etcd for kcp —
 * from just before the load generator starts to just after it exits, divided by the requests it
 * completed (writes for `watch`, Workspaces for `workspaces`). It does not depend on how much of
 * the machine the load generator takes. Rounds (`BENCH_REPEAT`, default 3) run each scenario on
 * every variant in an order rotated per round, so a busy moment of the machine does not fall on
 * one variant; medians and ranges over the rounds are reported, and the load average.
 * `BENCH_KCPCMP_SCENARIOS` (comma-separated) runs a subset of the scenarios,
 * `BENCH_KCPCMP_VARIANTS` (of `kcp`, `kcp-ts h2`, `kcp-ts h1`) a subset of the variants, and
 * `BENCH_KCPCMP_WS_ROUNDS` and `BENCH_KCPCMP_START_ROUNDS` give `workspaces` and `startup` fewer
 * rounds (kcp makes about one workspace Ready per second: 300 take five minutes a round).
 *
 * kcp's binary: `KCP_TS_KCP_BIN`, else the tool cache (`test/tools/build.sh --print`); without it
 * the benchmark says how to build it and fails.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { freePorts, spawnKcp, stopProc, type Proc } from './shards.js';
import { loadgenPath, runLoadgen } from './http2.js';
import { treeCpuSeconds, waitForQuiet } from './lib/procs.js';
import type { Report, Row } from './workspaces.js';

type Json = Record<string, unknown>;
const REPO = fileURLToPath(new URL('..', import.meta.url));
const BUILD_SH = join(REPO, 'test', 'tools', 'build.sh');
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const median = (a: number[]) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2; };

/** kcp's binary: `KCP_TS_KCP_BIN`, else `kcp` in the directory `test/tools/build.sh --print` names for it. */
export function kcpBinaryPath(): string {
  if (process.env.KCP_TS_KCP_BIN) return process.env.KCP_TS_KCP_BIN;
  const dirs = execFileSync(BUILD_SH, ['--print'], { encoding: 'utf8' }).trim().split('\n');
  const dir = dirs.find((d) => basename(d).startsWith('kcp-'));
  if (!dir) throw new Error(`${BUILD_SH} --print names no kcp directory`);
  return join(dir, 'kcp');
}

/** GET `url` without verifying the certificate; resolves to the status code (0 when unreachable) and body. */
function fetchInsecure(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d) => { if (body.length < 65_536) body += String(d); });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.once('error', () => resolve({ status: 0, body: '' }));
    });
    req.once('error', () => resolve({ status: 0, body: '' }));
    req.once('timeout', () => { req.destroy(); resolve({ status: 0, body: '' }); });
    req.end();
  });
}
const probe = async (url: string) => (await fetchInsecure(url)).status;

/** A running server under test. */
interface Server {
  name: 'kcp' | 'kcp-ts';
  pid: number;
  /** https://127.0.0.1:PORT */
  url: string;
  kubeconfig: string;
  stop(): Promise<void>;
}

/** kcp processes still running, killed on exit, and the root directories of kcp-ts servers still running. */
const kcpChildren = new Set<ChildProcess>();
const kcpTsRoots = new Set<string>();
process.on('exit', () => {
  for (const c of kcpChildren) { try { c.kill('SIGKILL'); } catch { /* gone */ } }
  // A killed kcp-ts leaves its redis-servers (their own process group): their pid files.
  for (const root of kcpTsRoots) {
    for (const role of ['redis', 'redis-queue']) {
      try { process.kill(Number(readFileSync(join(root, role, 'redis.pid'), 'utf8')), 'SIGKILL'); } catch { /* none */ }
    }
    rmSync(root, { recursive: true, force: true });
  }
});

/** The flags of `kcp start` on `root` with its ports (embedded etcd's too, so nothing else on the machine collides). */
function kcpStartArgs(root: string, ports: number[]): string[] {
  return ['start', '--root-directory', root, '--secure-port', String(ports[0]),
    '--embedded-etcd-client-port', String(ports[1]), '--embedded-etcd-peer-port', String(ports[2])];
}

/**
 * Starts `kcp start` on a fresh root directory (its log in `<root>/kcp.log`) and waits for its
 * `/readyz` and for its admin kubeconfig.
 * @throws when it exits or is not ready within `timeoutMs`
 */
async function startKcp(bin: string, timeoutMs = 180_000): Promise<Server> {
  const root = mkdtempSync(join(tmpdir(), 'kcpcmp-kcp-'));
  const ports = await freePorts(3);
  const logFd = openSync(join(root, 'kcp.log'), 'a');
  const child = spawn(bin, kcpStartArgs(root, ports), { cwd: root, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  kcpChildren.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => { kcpChildren.delete(child); r(); }));
  const url = `https://127.0.0.1:${ports[0]}`;
  const kubeconfig = join(root, 'admin.kubeconfig');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(root, { recursive: true, force: true });
  };
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const tail = readFileSync(join(root, 'kcp.log'), 'utf8').slice(-2000);
      await stop();
      throw new Error(`kcp exited before it was ready: ${tail}`);
    }
    if (await probe(`${url}/readyz`) === 200 && existsSync(kubeconfig)) break;
    if (performance.now() > deadline) { await stop(); throw new Error(`kcp not ready within ${timeoutMs} ms`); }
    await sleep(200);
  }
  // kcp's self-signed serving certificate names the address it detected, not necessarily
  // 127.0.0.1, which the load generator dials: a copy of its admin kubeconfig that does not
  // verify the server (a client-side check once per connection; the server's work is the same).
  const config = parseYaml(readFileSync(kubeconfig, 'utf8')) as { clusters?: { cluster: Record<string, unknown> }[] };
  for (const c of config.clusters ?? []) { delete c.cluster['certificate-authority-data']; delete c.cluster['certificate-authority']; c.cluster['insecure-skip-tls-verify'] = true; }
  const benchConfig = join(root, 'bench.kubeconfig');
  writeFileSync(benchConfig, stringifyYaml(config));
  return { name: 'kcp', pid: child.pid!, url, kubeconfig: benchConfig, stop };
}

/** Starts a compiled `kcp-ts start` on a fresh root directory. */
async function startKcpTs(): Promise<Server> {
  const root = mkdtempSync(join(tmpdir(), 'kcpcmp-ts-'));
  kcpTsRoots.add(root);
  const [port] = await freePorts(1);
  let p: Proc;
  try {
    p = await spawnKcp(['start', '--root-directory', root, '--secure-port', String(port)]);
  } catch (err) { rmSync(root, { recursive: true, force: true }); throw err; }
  return {
    name: 'kcp-ts', pid: p.child.pid!, url: p.url, kubeconfig: join(root, 'admin.kubeconfig'),
    async stop() { await stopProc(p); rmSync(root, { recursive: true, force: true }); kcpTsRoots.delete(root); },
  };
}

/** A server and the protocol client-go speaks to it. */
interface Variant { key: 'kcp' | 'kcp-ts h2' | 'kcp-ts h1'; server: 'kcp' | 'kcp-ts'; http1: boolean }
const VARIANTS: Variant[] = [
  { key: 'kcp', server: 'kcp', http1: false },
  { key: 'kcp-ts h2', server: 'kcp-ts', http1: false },
  { key: 'kcp-ts h1', server: 'kcp-ts', http1: true },
];

/** One measured run: the load generator's figures and the server's CPU. */
interface Run {
  /** Requests (writes, Workspaces) per second. */
  rate: number;
  p50: number;
  p99: number;
  ops: number;
  /** Server CPU per request, µs. */
  cpuUs: number;
  /** The other server's CPU meanwhile, % of one core (it idles; a check). */
  otherPct: number;
  /** Machine busy before the run, % of one core. */
  busyBefore: number;
}

/** A load scenario: its load-generator flags, and what its rate and latency mean. */
interface LoadScenario {
  name: string;
  /** Runs in root (workspaces) rather than in root:bench. */
  inRoot?: boolean;
  args(v: Variant, measured: boolean): string[];
}

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const WORKSPACES = Number(process.env.BENCH_KCPCMP_WORKSPACES ?? 300);

const LOAD: LoadScenario[] = [
  { name: 'create', args: (_v, m) => ['-scenario', 'create', '-concurrency', String(CONCURRENCY), '-duration', `${m ? DURATION_MS : 1500}ms`] },
  { name: 'get', args: (_v, m) => ['-scenario', 'get', '-namespace', 'kcpcmp-get', '-concurrency', String(CONCURRENCY), '-duration', `${m ? DURATION_MS : 1500}ms`] },
  { name: 'list', args: (_v, m) => ['-scenario', 'list', '-namespace', 'kcpcmp-list', '-list-size', '100', '-concurrency', String(CONCURRENCY), '-duration', `${m ? DURATION_MS : 1500}ms`] },
  { name: 'watch', args: (_v, m) => ['-scenario', 'watch', '-concurrency', '100', '-rate', '50', '-n', m ? '200' : '50'] },
  { name: 'workspaces', inRoot: true, args: (_v, m) => ['-scenario', 'workspaces', '-concurrency', '10', '-n', String(m ? WORKSPACES : 10), '-ws-timeout', '15m'] },
];

/** `kcp-compare`: the side-by-side table (see the file's comment). */
export async function kcpCompare(): Promise<Report> {
  const variantNames = new Set((process.env.BENCH_KCPCMP_VARIANTS ?? VARIANTS.map((v) => v.key).join(',')).split(',').map((s) => s.trim()));
  const variants = VARIANTS.filter((v) => variantNames.has(v.key));
  if (!variants.length) throw new Error(`BENCH_KCPCMP_VARIANTS names none of ${VARIANTS.map((v) => v.key).join(', ')}`);
  const serverNames = [...new Set(variants.map((v) => v.server))];
  const kcpBin = kcpBinaryPath();
  if (serverNames.includes('kcp') && !existsSync(kcpBin)) {
    throw new Error(`kcp is missing at ${kcpBin}: build it with \`test/tools/build.sh --kcp\` (Go, the module proxy; about 30 minutes on 2 cores, once), or set KCP_TS_KCP_BIN to a kcp binary`);
  }
  if (!existsSync(loadgenPath())) throw new Error(`the load generator is missing at ${loadgenPath()} (build it, or set KCP_TS_LOADGEN)`);
  let kcpVersion = `kcp (${kcpBin})`;
  const rounds = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
  const wsRounds = Math.max(1, Number(process.env.BENCH_KCPCMP_WS_ROUNDS ?? rounds));
  const startRounds = Math.max(1, Number(process.env.BENCH_KCPCMP_START_ROUNDS ?? rounds));
  const wanted = new Set((process.env.BENCH_KCPCMP_SCENARIOS ?? 'startup,create,get,list,watch,workspaces').split(',').map((s) => s.trim()));
  const loadAvgBefore = loadavg().map((x) => round(x, 2));
  const startedAt = new Date().toISOString();
  const runs: Record<string, Record<string, Run[]>> = {};
  const startupMs: Record<string, number[]> = { kcp: [], 'kcp-ts': [] };

  // Start-up first, while nothing else of the benchmark runs: a fresh root directory each time.
  if (wanted.has('startup')) {
    for (let r = 0; r < startRounds; r++) {
      for (const name of (r % 2 ? [...serverNames].reverse() : serverNames)) {
        await waitForQuiet(25, 3000);
        const root = mkdtempSync(join(tmpdir(), 'kcpcmp-start-'));
        try {
          const ports = await freePorts(3);
          const cmd = name === 'kcp'
            ? [kcpBin, ...kcpStartArgs(root, ports)]
            : [process.execPath, join(REPO, 'bin', 'kcp-ts'), 'start', '--root-directory', root, '--secure-port', String(ports[0])];
          const res = await runLoadgen(['-scenario', 'startup', '-exec', `exec ${cmd.map(shellQuote).join(' ')} >${shellQuote(join(root, 'server.log'))} 2>&1`, '-ready-url', `https://127.0.0.1:${ports[0]}/readyz`, '-label', name], false);
          if (res.errors) throw new Error(`${name} start-up: not ready (${res.first_errors?.join(' | ')})`);
          startupMs[name]!.push(res.p50_ms);
          log(`round ${r + 1} startup ${name}: ${round(res.p50_ms / 1000, 2)} s`);
        } finally { rmSync(root, { recursive: true, force: true }); }
      }
    }
  }

  const servers: Partial<Record<'kcp' | 'kcp-ts', Server>> = {};
  try {
    if ([...wanted].some((w) => w !== 'startup')) {
      log('starting kcp and kcp-ts…');
      if (serverNames.includes('kcp')) {
        servers.kcp = await startKcp(kcpBin);
        // What it reports (its Makefile's ldflags, as test/tools/build.sh links it): v1.36.0+kcp-v0.32.3.
        try {
          const v = (JSON.parse((await fetchInsecure(`${servers.kcp.url}/version`)).body) as Json).gitVersion;
          if (typeof v === 'string') kcpVersion = `kcp ${v}`;
        } catch { /* keep the path */ }
      }
      if (serverNames.includes('kcp-ts')) servers['kcp-ts'] = await startKcpTs();
    }
    const base = (v: Variant, inRoot = false) => `${servers[v.server]!.url}/clusters/root${inRoot ? '' : ':bench'}`;
    const common = (v: Variant, inRoot = false) => ['-kubeconfig', servers[v.server]!.kubeconfig, '-server', base(v, inRoot), '-label', v.key];
    const scenarios = LOAD.filter((s) => wanted.has(s.name));
    if (scenarios.length) {
      // The tenant's workspace on each server, and one warm-up run of every scenario per variant.
      for (const name of serverNames) {
        const s = servers[name]!;
        execFileSync(loadgenPath(), ['-kubeconfig', s.kubeconfig, '-server', `${s.url}/clusters/root`, '-scenario', 'ensure-ws', '-ws', 'bench'], { stdio: ['ignore', 'ignore', 'inherit'] });
      }
      for (const sc of scenarios) for (const v of variants) await runLoadgen([...common(v, sc.inRoot), ...sc.args(v, false)], v.http1);
    }
    for (let r = 0; r < rounds; r++) {
      for (const sc of scenarios) {
        if (sc.name === 'workspaces' && r >= wsRounds) continue;
        const order = variants.map((_, i) => variants[(i + r) % variants.length]!);
        for (const v of order) {
          const busyBefore = await waitForQuiet(25, 3000);
          const self = servers[v.server]!; const other = servers[v.server === 'kcp' ? 'kcp-ts' : 'kcp'];
          const t0 = performance.now();
          const c0 = [treeCpuSeconds(self.pid), other ? treeCpuSeconds(other.pid) : NaN];
          const res = await runLoadgen([...common(v, sc.inRoot), ...sc.args(v, true)], v.http1);
          const c1 = [treeCpuSeconds(self.pid), other ? treeCpuSeconds(other.pid) : NaN];
          const secs = (performance.now() - t0) / 1000;
          if (res.errors) throw new Error(`${sc.name} on ${v.key}: ${res.errors} errors, e.g. ${res.first_errors?.join(' | ')}`);
          const run: Run = {
            rate: res.rate_per_s, p50: res.p50_ms, p99: res.p99_ms, ops: res.ops,
            cpuUs: ((c1[0]! - c0[0]!) / res.ops) * 1e6, otherPct: ((c1[1]! - c0[1]!) / secs) * 100, busyBefore,
          };
          ((runs[sc.name] ??= {})[v.key] ??= []).push(run);
          log(`round ${r + 1} ${sc.name} ${v.key}: ${fmtInt(run.rate)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms, server CPU ${round(run.cpuUs, 1)} µs per request (other server ${round(run.otherPct, 1)} %, machine ${busyBefore} % busy before)`);
        }
      }
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop().catch(() => undefined);
  }
  const loadAvgAfter = loadavg().map((x) => round(x, 2));
  return summarize({ kcpVersion, rounds, wsRounds, runs, startupMs, loadAvgBefore, loadAvgAfter, startedAt });
}

/** Quotes `s` for `bash -c`. */
function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The goals of the comparison (kcp-ts / kcp), per scenario and figure. */
const GOALS: Record<string, { rate?: number; cpu?: number; p99?: number }> = {
  create: { rate: 5, cpu: 0.1 }, get: { rate: 5, cpu: 0.1 }, list: { rate: 5, cpu: 0.2 }, watch: { p99: 1 },
};

interface Measured {
  kcpVersion: string; rounds: number; wsRounds: number; runs: Record<string, Record<string, Run[]>>; startupMs: Record<string, number[]>;
  loadAvgBefore: number[]; loadAvgAfter: number[]; startedAt: string;
}

/** Medians, ranges and ratios: the report's rows, its JSON, and a Markdown table for docs/benchmarks.md. */
function summarize(m: Measured): Report {
  const rows: Row[] = [];
  const md: string[] = ['| scenario | figure | kcp | kcp-ts HTTP/2 | kcp-ts HTTP/1.1 | kcp-ts/kcp HTTP/2 | kcp-ts/kcp HTTP/1.1 |', '|---|---|---|---|---|---|---|'];
  const fmt = (x: number, unit: string) => unit === '/s' ? `${x >= 100 ? fmtInt(x) : round(x, 1)}/s` : unit === 'µs' ? `${fmtInt(x)} µs` : unit === 'ms' ? `${round(x, 1)} ms` : `${round(x, 2)} s`;
  const cell = (xs: number[] | undefined, unit: string) => {
    if (!xs?.length) return '–';
    return xs.length > 1 ? `${fmt(median(xs), unit)} (${fmt(Math.min(...xs), unit).replace(/ ?(\/s|µs|ms|s)$/, '')}–${fmt(Math.max(...xs), unit)})` : fmt(xs[0]!, unit);
  };
  const ratio = (a: number[] | undefined, b: number[] | undefined) => (a?.length && b?.length ? median(a) / median(b) : NaN);
  const fmtRatio = (x: number) => (Number.isNaN(x) ? '–' : x >= 10 ? `${fmtInt(x)}×` : x >= 1 ? `${round(x, 1)}×` : `${round(x, 2)}×`);
  const figures: { scenario: string; label: string; figure: string; pick: (r: Run) => number; unit: string; goal?: number; higherIsBetter: boolean }[] = [];
  const labels: Record<string, string> = {
    create: `ConfigMap create, ${CONCURRENCY} clients`, get: `ConfigMap get, ${CONCURRENCY} clients`, list: `list 100 ConfigMaps, ${CONCURRENCY} clients`,
    watch: 'watch delivery (100 watchers, 50 writes/s)', workspaces: `${WORKSPACES} workspaces → all Ready (10 clients)`,
  };
  for (const sc of Object.keys(m.runs)) {
    const g = GOALS[sc] ?? {};
    if (sc === 'watch') {
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'p99', pick: (r) => r.p99, unit: 'ms', goal: g.p99, higherIsBetter: false });
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'server CPU per write', pick: (r) => r.cpuUs, unit: 'µs', higherIsBetter: false });
    } else if (sc === 'workspaces') {
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'Ready/s', pick: (r) => r.rate, unit: '/s', higherIsBetter: true });
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'create → Ready p99', pick: (r) => r.p99, unit: 'ms', higherIsBetter: false });
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'server CPU per workspace', pick: (r) => r.cpuUs, unit: 'µs', higherIsBetter: false });
    } else {
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'throughput', pick: (r) => r.rate, unit: '/s', goal: g.rate, higherIsBetter: true });
      figures.push({ scenario: sc, label: labels[sc]!, figure: 'server CPU per request', pick: (r) => r.cpuUs, unit: 'µs', goal: g.cpu, higherIsBetter: false });
    }
  }
  const result: Json = {
    kcp: m.kcpVersion, rounds: m.rounds, workspacesRounds: m.wsRounds, startedAt: m.startedAt, loadAverageBefore: m.loadAvgBefore, loadAverageAfter: m.loadAvgAfter,
    concurrency: CONCURRENCY, durationMs: DURATION_MS, workspaces: WORKSPACES, startupMs: m.startupMs, runs: m.runs,
  };
  if (m.startupMs.kcp!.length || m.startupMs['kcp-ts']!.length) {
    const k = m.startupMs.kcp!.map((x) => x / 1000); const t = m.startupMs['kcp-ts']!.map((x) => x / 1000);
    const speedup = ratio(k, t);
    md.push(`| start, fresh directory → /readyz | time | ${cell(k, 's')} | ${cell(t, 's')} | (same) | ${fmtRatio(speedup)} faster | |`);
    rows.push({ scenario: 'kcp-compare', figure: 'start, fresh directory → /readyz: kcp / kcp-ts', value: fmtRatio(speedup), target: '–', met: '–', detail: `kcp ${cell(k, 's')}, kcp-ts ${cell(t, 's')}` });
  }
  const ratios: Json = {};
  for (const f of figures) {
    const byKey = m.runs[f.scenario]!;
    const vals = (key: string) => byKey[key]?.map(f.pick);
    const k = vals('kcp');
    const cells = [cell(k, f.unit), cell(vals('kcp-ts h2'), f.unit), cell(vals('kcp-ts h1'), f.unit)];
    const rs = (['kcp-ts h2', 'kcp-ts h1'] as const).map((key) => ratio(vals(key), k));
    ratios[`${f.scenario} ${f.figure}`] = rs.map((x) => round(x, 3));
    md.push(`| ${f.label} | ${f.figure} | ${cells.join(' | ')} | ${rs.map(fmtRatio).join(' | ')} |`);
    rs.forEach((x, i) => {
      const proto = i === 0 ? 'HTTP/2' : 'HTTP/1.1';
      const target = f.goal === undefined ? '–' : f.higherIsBetter ? `≥ ${f.goal}×` : `≤ ${f.goal}×`;
      const met = f.goal === undefined || Number.isNaN(x) ? '–' : (f.higherIsBetter ? x >= f.goal : x <= f.goal) ? 'yes' : 'NO';
      rows.push({ scenario: 'kcp-compare', figure: `${f.scenario} ${f.figure}, kcp-ts ${proto} / kcp`, value: fmtRatio(x), target, met, detail: `kcp ${cells[0]}, kcp-ts ${proto} ${cells[i + 1]}` });
    });
  }
  result.ratios = ratios;
  result.markdown = md.join('\n');
  log(`${m.kcpVersion}; load average ${m.loadAvgBefore.join(' ')} before, ${m.loadAvgAfter.join(' ')} after\n${md.join('\n')}`);
  rows.push({ scenario: 'kcp-compare', figure: 'machine load average (1/5/15 min) before → after', value: m.loadAvgAfter.join(' '), target: '–', met: '–', detail: `before ${m.loadAvgBefore.join(' ')}; ${m.kcpVersion}; ${m.rounds} rounds` });
  return { result, rows };
}
