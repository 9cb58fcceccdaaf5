/**
 * kcp-ts benchmarks: `npm run bench [-- <scenario>...]` (docs/benchmarks.md).
 *
 * Scenarios: startup, create, get, list, watch, memory (the issue's figures) and the extra
 * watch-fanout, list-10k and redis-ceiling; crd-apply and cr-create for custom resources; audit
 * (create throughput with a Metadata audit policy against without).
 * Without arguments all run in that order.
 * Each scenario starts its own server child (bench/server-child.ts, embedded Redis with AOF
 * appendfsync always, fresh root directory) so the load generator (this process) and the server
 * each have their own core; results go to stdout and bench/results.json (merged per scenario).
 *
 * The servers run from dist/ (built first, as `kcp-ts start` runs); BENCH_SOURCE=tsx runs src/
 * through tsx instead (its transform adds a naming helper to every function created: slower).
 *
 * Environment: BENCH_CLIENT=raw|https (load-generator HTTP client, default raw),
 * BENCH_DURATION_MS (measured period of each closed-loop run, default 4000),
 * BENCH_CONCURRENCY (default 50), BENCH_REPEAT (measured runs of create/get/list, median
 * reported; default 3), BENCH_FANOUT_RATE (writes/s of watch-fanout, default 20),
 * BENCH_CPU_PROF=<dir> (CPU profiles of the server children), BENCH_SERVER_NODE_ARGS (extra
 * Node flags of the server), BENCH_STALL_LOG=<file> (GC pauses and event-loop stalls of the
 * server, see bench/server-child.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { parse as parseYaml } from 'yaml';
import { closeClients, clientKind, makeClients, type Client } from './lib/client.js';
import { runCount, runLoad, summarize, type LoadResult, type Req } from './lib/load.js';
import { cpuSecondsOf, freshRoot, killAllSync, removeRoot, startServerProc, waitForQuiet, type ServerProc } from './lib/procs.js';
import { nowMs, openWatches } from './lib/watchers.js';
import { wsCreate, wsDelete, wsMemory, type Report } from './workspaces.js';
import { killInstancesSync, proxyOverhead, proxyRestart, shardsWs } from './shards.js';
import { proxyHttp2 } from './http2.js';
import { kcpCompare } from './kcpcompare.js';
import { operatorBench } from './operator.js';
import { syncerBench } from './syncer.js';
import { apisBind, apisVirtualWorkspace } from './apis.js';
import { conversionBench, policyBench, webhookBench } from './admission.js';
import { noisyNeighbour } from './noisyneighbour.js';
import { protobufCodecBench } from './protobuf.js';
import { flowControlCostBench } from './flowcontrol.js';
import { protobufServingBench } from './protobufserving.js';
import { backupBench } from './backup.js';
import { migrateBench } from './migrate.js';
import { killStartChildrenSync, startBench } from './start.js';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const RESULTS = join(BENCH_DIR, 'results.json');
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4_000);
const WARMUP_MS = 2_000;
/** Measured runs of each closed-loop scenario (on the same server); the median run is reported. */
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
/** Warm-up before run `r` (not measured): longer before the first. */
const warmup = (r: number) => (r === 0 ? WARMUP_MS : 1_000);
const CM_PATH = (ns: string) => `/clusters/root/api/v1/namespaces/${ns}/configmaps`;

type Json = Record<string, unknown>;

/** One line of the summary table. */
interface Row { scenario: string; figure: string; value: string; target: string; met: string; detail: string }
const rows: Row[] = [];
/** Children started here directly (redis-ceiling), killed on exit. */
const extraChildren = new Set<ChildProcess>();
const results: Record<string, Json> = {};

const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function cm(name: string, data: Record<string, string>): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
}

async function mustOk(c: Client, method: string, path: string, body?: string): Promise<Json> {
  const r = await c.request(method, path, body);
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} → ${r.status}: ${r.body.toString().slice(0, 300)}`);
  return JSON.parse(r.body.toString()) as Json;
}

async function createNamespace(c: Client, name: string): Promise<void> {
  await mustOk(c, 'POST', '/clusters/root/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
}

/** Creates `count` ConfigMaps `${prefix}${k}` in `ns` with `concurrency` connections. */
async function fill(s: ServerProc, ns: string, count: number, prefix: string, data: () => Record<string, string>, concurrency = CONCURRENCY): Promise<number> {
  const clients = makeClients(s.url, s.creds, concurrency);
  try {
    const r = await runCount(clients, count, (k) => ({ method: 'POST', path: CM_PATH(ns), body: cm(`${prefix}${k}`, data()) }));
    if (r.errors) throw new Error(`fill ${ns}: ${r.errors} errors, e.g. ${r.errorSamples.join(' | ')}`);
    return count / r.seconds;
  } finally { closeClients(clients); }
}

function loadDetail(r: LoadResult): string {
  return `${REPEAT > 1 ? `median of ${REPEAT} runs; ` : ''}p50 ${round(r.latencyMs.p50)} ms, p99 ${round(r.latencyMs.p99)} ms; CPU % of a core: loadgen ${r.cpu.loadgen}, server ${r.cpu.server}, redis ${r.cpu.redis}, other ${r.cpu.other}${r.errors ? `; ${r.errors} errors` : ''}`;
}

function loadJson(r: LoadResult): Json {
  return {
    opsPerSec: round(r.opsPerSec, 1), ops: r.ops, errors: r.errors, errorSamples: r.errorSamples, seconds: r.seconds,
    latencyMs: Object.fromEntries(Object.entries(r.latencyMs).map(([k, v]) => [k, round(v, 3)])),
    cpuPercentOfOneCore: r.cpu, concurrency: CONCURRENCY, client: clientKind(),
  };
}

/**
 * Runs a closed-loop measurement REPEAT times (each after waiting for the machine to be quiet)
 * and returns the median run by throughput, with every run's throughput.
 */
async function repeated(run: (r: number) => Promise<LoadResult>): Promise<{ best: LoadResult; runs: number[]; busyBefore: number[] }> {
  const all: LoadResult[] = [];
  const busyBefore: number[] = [];
  for (let r = 0; r < REPEAT; r++) {
    busyBefore.push(await waitForQuiet());
    all.push(await run(r));
  }
  const sorted = [...all].sort((a, b) => a.opsPerSec - b.opsPerSec);
  return { best: sorted[(sorted.length - 1) >> 1]!, runs: all.map((x) => round(x.opsPerSec, 1)), busyBefore };
}

/** Runs `body` with a fresh server child and always stops it. */
async function withServer<T>(label: string, body: (s: ServerProc) => Promise<T>): Promise<T> {
  const s = await startServerProc(undefined, { label });
  try { return await body(s); } finally { await s.stop(); removeRoot(s.root); }
}

// ---------------------------------------------------------------------------------------------

async function startup(): Promise<void> {
  const runs: { startMs: number; spawnToReadyMs: number }[] = [];
  for (let i = 0; i < 5; i++) {
    const s = await startServerProc(undefined, { label: 'startup' });
    runs.push({ startMs: s.startMs, spawnToReadyMs: s.spawnToReadyMs });
    await s.stop();
    removeRoot(s.root);
  }
  // Restart on an existing root directory (PKI and Redis data reused).
  const root = freshRoot();
  const restarts: number[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const s = await startServerProc(root, { label: 'startup' });
      if (i > 0) restarts.push(s.startMs);
      await s.stop();
    }
  } finally { removeRoot(root); }
  const med = median(runs.map((r) => r.startMs));
  const medSpawn = median(runs.map((r) => r.spawnToReadyMs));
  results.startup = {
    medianStartMs: round(med, 1), runsStartMs: runs.map((r) => round(r.startMs, 1)),
    medianSpawnToReadyMs: round(medSpawn, 1), runsSpawnToReadyMs: runs.map((r) => round(r.spawnToReadyMs, 1)),
    medianRestartStartMs: round(median(restarts), 1), runsRestartStartMs: restarts.map((r) => round(r, 1)),
    note: 'startMs: startServer() call → resolved, fresh root dir (PKI generation + embedded redis-server + bootstrap), in a fresh node process. spawnToReady adds node + tsx start-up and module loading. restart: existing root dir.',
  };
  rows.push({
    scenario: 'startup', figure: 'startServer → ready (median of 5, fresh root)', value: `${round(med, 0)} ms`, target: '< 1,000 ms', met: med < 1000 ? 'yes' : 'NO',
    detail: `runs ${runs.map((r) => round(r.startMs, 0)).join('/')} ms; restart on existing root ${round(median(restarts), 0)} ms; process spawn → ready ${round(medSpawn, 0)} ms`,
  });
}

async function create(): Promise<void> {
  await withServer('create', async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    await createNamespace(admin, 'bench');
    admin.close();
    const clients = makeClients(s.url, s.creds, CONCURRENCY);
    try {
      const { best: r, runs, busyBefore } = await repeated((run) => runLoad({
        clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
        next: (c, i): Req => ({ method: 'POST', path: CM_PATH('bench'), body: cm(`cm-${run}-${c}-${i}`, { a: 'value-a', b: 'value-b' }) }),
        ok: (st) => st === 201,
      }));
      results.create = { ...loadJson(r), runsOpsPerSec: runs, machineBusyBeforePct: busyBefore };
      rows.push({ scenario: 'create', figure: `ConfigMap creates/s, ${CONCURRENCY} clients`, value: fmtInt(r.opsPerSec), target: '≥ 5,000/s', met: r.opsPerSec >= 5000 ? 'yes' : 'NO', detail: loadDetail(r) });
    } finally { closeClients(clients); }
  });
}

/**
 * `audit`: ConfigMap creates/s as `create` measures them, on a server without auditing and on one
 * with a Metadata-level policy for everything (`--audit-policy-file`, log in the root directory),
 * alternately twice (a drifting machine affects both alike); the medians of all runs are compared.
 */
async function auditScenario(): Promise<void> {
  const policyDir = mkdtempSync(join(tmpdir(), 'kcpb-audit-'));
  const policy = join(policyDir, 'policy.yaml');
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n');
  const runs: Record<'plain' | 'audit', number[]> = { plain: [], audit: [] };
  const loads: Partial<Record<'plain' | 'audit', LoadResult>> = {};
  let events = 0;
  let bytes = 0;
  try {
    for (const pass of [0, 1]) {
      for (const mode of ['plain', 'audit'] as const) {
        if (mode === 'audit') process.env.BENCH_AUDIT_POLICY = policy; else delete process.env.BENCH_AUDIT_POLICY;
        await withServer(`audit-${mode}`, async (s) => {
          const admin = makeClients(s.url, s.creds, 1)[0]!;
          await createNamespace(admin, 'bench');
          admin.close();
          const clients = makeClients(s.url, s.creds, CONCURRENCY);
          try {
            const r = await repeated((run) => runLoad({
              clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
              next: (c, i): Req => ({ method: 'POST', path: CM_PATH('bench'), body: cm(`cm-${pass}-${run}-${c}-${i}`, { a: 'value-a', b: 'value-b' }) }),
              ok: (st) => st === 201,
            }));
            runs[mode].push(...r.runs);
            if (pass === 1) loads[mode] = r.best;
          } finally { closeClients(clients); }
          if (mode === 'audit') {
            await sleep(200);
            const log = readFileSync(join(s.root, 'audit.log'), 'utf8');
            bytes += log.length;
            events += log.split('\n').length - 1;
          }
        });
      }
    }
  } finally {
    delete process.env.BENCH_AUDIT_POLICY;
    rmSync(policyDir, { recursive: true, force: true });
  }
  const plain = median(runs.plain);
  const audited = median(runs.audit);
  const ratio = audited / plain;
  results.audit = {
    plainOpsPerSec: round(plain, 1), auditOpsPerSec: round(audited, 1), ratio: round(ratio, 3), runsPlain: runs.plain, runsAudit: runs.audit,
    auditEvents: events, auditLogBytes: bytes, plain: loads.plain ? loadJson(loads.plain) : undefined, audit: loads.audit ? loadJson(loads.audit) : undefined,
    note: 'Metadata level for every request: two events (RequestReceived, ResponseComplete) per create, written to <root>/audit.log',
  };
  rows.push({ scenario: 'audit', figure: `ConfigMap creates/s with a Metadata audit policy, ${CONCURRENCY} clients`, value: `${fmtInt(audited)} (${round(ratio * 100, 1)} %)`, target: '≥ 85 % of without', met: ratio >= 0.85 ? 'yes' : 'NO', detail: `without audit ${fmtInt(plain)}/s; ${fmtInt(events)} events, ${round(bytes / 1024 / 1024, 1)} MiB` });
}

/**
 * `quota`: ConfigMap creates/s as `create` measures them, in a namespace without a quota and in
 * one with a ResourceQuota on `count/configmaps` (hard 1G, never reached: every create is
 * checked and charged to status.used), alternately on the same server; the medians of all runs
 * are compared.
 */
async function quotaScenario(): Promise<void> {
  await withServer('quota', async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    await createNamespace(admin, 'plain');
    await createNamespace(admin, 'limited');
    await mustOk(admin, 'POST', '/clusters/root/api/v1/namespaces/limited/resourcequotas', JSON.stringify({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { 'count/configmaps': '1G' } } }));
    for (let i = 0; i < 200; i++) {
      const q = await mustOk(admin, 'GET', '/clusters/root/api/v1/namespaces/limited/resourcequotas/q');
      if ((q.status as { used?: Json } | undefined)?.used?.['count/configmaps'] !== undefined) break;
      await sleep(25);
    }
    const clients = makeClients(s.url, s.creds, CONCURRENCY);
    const runs: Record<'plain' | 'limited', number[]> = { plain: [], limited: [] };
    const loads: Partial<Record<'plain' | 'limited', LoadResult>> = {};
    try {
      for (const ns of ['plain', 'limited', 'plain', 'limited'] as const) {
        const r = await repeated((run) => runLoad({
          clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
          next: (c, i): Req => ({ method: 'POST', path: CM_PATH(ns), body: cm(`cm-${runs[ns].length}-${run}-${c}-${i}`, { a: 'value-a', b: 'value-b' }) }),
          ok: (st) => st === 201,
        }));
        runs[ns].push(...r.runs);
        loads[ns] = r.best;
      }
      const used = (await mustOk(admin, 'GET', '/clusters/root/api/v1/namespaces/limited/resourcequotas/q')).status as { used?: Json };
      const plain = median(runs.plain);
      const limited = median(runs.limited);
      const ratio = limited / plain;
      results.quota = {
        plainOpsPerSec: round(plain, 1), quotaOpsPerSec: round(limited, 1), ratio: round(ratio, 3), runsPlain: runs.plain, runsQuota: runs.limited,
        plain: loads.plain ? loadJson(loads.plain) : undefined, quota: loads.limited ? loadJson(loads.limited) : undefined, usedAfter: used.used,
      };
      rows.push({
        scenario: 'quota', figure: `ConfigMap creates/s under a count/configmaps quota, ${CONCURRENCY} clients`, value: `${fmtInt(limited)} (${round(ratio * 100, 1)} %)`,
        target: '(reference)', met: '-', detail: `without a quota ${fmtInt(plain)}/s; quota p50 ${round(loads.limited!.latencyMs.p50)} ms, p99 ${round(loads.limited!.latencyMs.p99)} ms; status.used after ${JSON.stringify(used.used)}`,
      });
    } finally { closeClients(clients); admin.close(); }
  });
}

async function get(): Promise<void> {
  await withServer('get', async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    await createNamespace(admin, 'bench');
    admin.close();
    await fill(s, 'bench', 1000, 'cm-', () => ({ a: 'value-a', b: 'value-b' }));
    const clients = makeClients(s.url, s.creds, CONCURRENCY);
    try {
      const { best: r, runs, busyBefore } = await repeated((run) => runLoad({
        clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
        next: (): Req => ({ method: 'GET', path: `${CM_PATH('bench')}/cm-${Math.floor(Math.random() * 1000)}` }),
        ok: (st) => st === 200,
      }));
      results.get = { ...loadJson(r), runsOpsPerSec: runs, machineBusyBeforePct: busyBefore, objects: 1000 };
      rows.push({ scenario: 'get', figure: `GET by name/s, ${CONCURRENCY} clients, 1,000 objects`, value: fmtInt(r.opsPerSec), target: '≥ 15,000/s', met: r.opsPerSec >= 15000 ? 'yes' : 'NO', detail: loadDetail(r) });
    } finally { closeClients(clients); }
  });
}

/** GET `path` until `done(items)` holds or 10 s passed; the last answer. */
async function eventuallyOk(c: Client, path: string, done: (items: unknown[]) => boolean): Promise<Json> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const r = await mustOk(c, 'GET', path);
    if (done(r.items as unknown[]) || performance.now() > deadline) return r;
    await sleep(100);
  }
}

/** Lists of a 100-object namespace; `others` more ConfigMaps live in another namespace. */
async function listScenario(key: 'list' | 'list-10k', others: number): Promise<void> {
  await withServer(key, async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    await createNamespace(admin, 'list100');
    if (others) await createNamespace(admin, 'bulk');
    // 99 of ours and kube-root-ca.crt, which every namespace holds (the root CA publisher, as kube's).
    await fill(s, 'list100', 99, 'cm-', () => ({ a: 'value-a', b: 'value-b' }));
    if (others) await fill(s, 'bulk', others, 'cm-', () => ({ a: 'value-a', b: 'value-b' }));
    const check = await eventuallyOk(admin, CM_PATH('list100'), (items) => items.length === 100);
    const n = (check.items as unknown[]).length;
    if (n !== 100) throw new Error(`list100 holds ${n} items, expected 100 (99 and kube-root-ca.crt)`);
    const bytes = JSON.stringify(check).length;
    admin.close();
    const clients = makeClients(s.url, s.creds, CONCURRENCY);
    try {
      const { best: r, runs, busyBefore } = await repeated((run) => runLoad({
        clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
        next: (): Req => ({ method: 'GET', path: CM_PATH('list100') }),
        ok: (st) => st === 200,
      }));
      results[key] = { ...loadJson(r), runsOpsPerSec: runs, machineBusyBeforePct: busyBefore, itemsPerList: 100, otherConfigMapsInCluster: others, responseBytes: bytes };
      rows.push({
        scenario: key, figure: others ? `list of 100/s, cluster holds ${fmtInt(others + 100)} ConfigMaps` : `list of 100/s, ${CONCURRENCY} clients`,
        value: fmtInt(r.opsPerSec), target: others ? '(none)' : '≥ 2,000/s', met: others ? '-' : r.opsPerSec >= 2000 ? 'yes' : 'NO', detail: loadDetail(r),
      });
    } finally { closeClients(clients); }
  });
}

/**
 * 1,000 watches over `namespaces` namespaces (watch i on namespace i mod n), then `rate` merge
 * patches/s (2 s warm-up, then 5 s measured) round-robin over one ConfigMap per namespace, each
 * carrying its write time in `data.t`.
 */
async function watchScenario(key: 'watch' | 'watch-fanout', namespaces: number, rate: number, watches = 1000): Promise<void> {
  await withServer(key, async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    for (let n = 0; n < namespaces; n++) {
      await createNamespace(admin, `w-${n}`);
      await mustOk(admin, 'POST', CM_PATH(`w-${n}`), cm('target', { t: '0' }));
    }
    const list = await mustOk(admin, 'GET', CM_PATH('w-0'));
    const rv = String((list.metadata as Json).resourceVersion);
    admin.close();
    const paths = Array.from({ length: watches }, (_, i) => `${CM_PATH(`w-${i % namespaces}`)}?watch=true&resourceVersion=${rv}`);
    const t0 = performance.now();
    const ws = await openWatches(s.url, s.creds, paths);
    // Registered watches as the server counts them (apiserver_longrunning_requests).
    const metricsClient = makeClients(s.url, s.creds, 1)[0]!;
    let registered = 0;
    for (const deadline = performance.now() + 30_000; performance.now() < deadline;) {
      const m = await metricsClient.request('GET', '/metrics');
      registered = Number(/^apiserver_longrunning_requests (\d+)/m.exec(m.body.toString())?.[1] ?? 0);
      if (registered >= watches - ws.ended) break;
      await sleep(100);
    }
    metricsClient.close();
    const openSec = (performance.now() - t0) / 1000;
    const openOk = registered;
    log(`${key}: ${openOk}/${watches} watches open in ${round(openSec)} s${ws.errors.length ? `; errors: ${ws.errors.join(' | ')}` : ''}`);
    const busyBefore = await waitForQuiet();
    const writers = makeClients(s.url, s.creds, 20);
    const free = [...writers];
    const writeLat: number[] = [];
    let writeErrors = 0; let writes = 0; let skipped = 0;
    // 2 s of warm-up writes (first event on each connection, JIT, GC of the watch set-up), then
    // 5 s measured.
    const warmupSeconds = 2;
    const writeSeconds = 5;
    const total = rate * (warmupSeconds + writeSeconds);
    let cpuFrom = s.cpu.snapshot();
    const inflight: Promise<void>[] = [];
    const start = performance.now();
    for (let k = 0; k < total; k++) {
      const due = start + (k * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const measured = k >= rate * warmupSeconds;
      if (k === rate * warmupSeconds) { ws.measureFrom = nowMs(); cpuFrom = s.cpu.snapshot(); }
      const c = free.pop();
      if (!c) { if (measured) skipped++; continue; }
      const ns = `w-${k % namespaces}`;
      inflight.push((async () => {
        const t = nowMs();
        const a = performance.now();
        const r = await c.request('PATCH', `${CM_PATH(ns)}/target`, JSON.stringify({ data: { t: t.toFixed(3) } }), 'application/merge-patch+json').catch(() => ({ status: 0 }));
        if (measured) {
          writeLat.push(performance.now() - a);
          if (r.status === 200) writes++; else writeErrors++;
        }
        free.push(c);
      })());
    }
    await Promise.all(inflight);
    const expected = writes * (watches / namespaces);
    // Drain: wait until every expected event arrived or 5 s passed.
    const drainStart = performance.now();
    while (ws.latencies.n < expected && performance.now() - drainStart < 5000) await sleep(20);
    const cpu = s.cpu.report(cpuFrom);
    const writeMs = summarize(writeLat);
    // p99 per second of writes (is the tail steady or one stall?).
    const bySecond: number[][] = [];
    const lv = ws.latencies.values(); const tv = ws.writeTimes.values();
    for (let i = 0; i < lv.length; i++) {
      const sec = Math.floor((tv[i]! - ws.measureFrom) / 1000);
      (bySecond[sec] ??= []).push(lv[i]!);
    }
    const p99BySecond = bySecond.map((a) => round(summarize(a).p99, 2));
    const maxBySecond = bySecond.map((a) => round(summarize(a).max, 2));
    const lat = summarize(ws.latencies.values());
    ws.close();
    closeClients(writers);
    results[key] = {
      watches, watchesOpen: openOk, namespaces, watchersPerNamespace: watches / namespaces, openSeconds: round(openSec),
      writesPerSec: rate, warmupSeconds, writeSeconds, writes, writeErrors, writesSkipped: skipped, warmupEvents: ws.warmupEvents,
      warmupDeliveryLatencyMs: (({ p50, p99, max }) => ({ p50: round(p50, 3), p99: round(p99, 3), max: round(max, 3) }))(summarize(ws.warmupLatencies.values())),
      writeLatencyMs: { p50: round(writeMs.p50, 3), p99: round(writeMs.p99, 3), max: round(writeMs.max, 3) },
      eventsExpected: expected, eventsDelivered: ws.latencies.n, eventsByType: ws.events,
      deliveryLatencyMs: Object.fromEntries(Object.entries(lat).map(([k, v]) => [k, round(v, 3)])), p99BySecond, maxBySecond,
      cpuPercentOfOneCore: cpu, machineBusyBeforePct: busyBefore, watchErrors: ws.errors, watchesEndedEarly: ws.ended,
      fdLimit: spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim(),
    };
    rows.push({
      scenario: key, figure: `watch delivery p99, ${watches} watches (${watches / namespaces}/namespace), ${rate} writes/s`,
      value: `${round(lat.p99)} ms`, target: key === 'watch' ? '< 20 ms' : '(none)', met: key === 'watch' ? (lat.p99 < 20 && ws.latencies.n === expected ? 'yes' : 'NO') : '-',
      detail: `p50 ${round(lat.p50)} ms, max ${round(lat.max)} ms; delivered ${fmtInt(ws.latencies.n)}/${fmtInt(expected)} events; write p50 ${round(writeMs.p50)} ms; CPU loadgen ${cpu.loadgen}, server ${cpu.server}, redis ${cpu.redis}, other ${cpu.other}`,
    });
  });
}

function redisOf(url: string): Redis {
  return url.startsWith('unix://') ? new Redis({ path: url.slice('unix://'.length) }) : new Redis(url);
}

async function redisMemory(r: Redis): Promise<number> {
  const info = await r.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

async function memory(): Promise<void> {
  const N = 10_000;
  await withServer('memory', async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    await createNamespace(admin, 'warm');
    await createNamespace(admin, 'mem');
    // ~300 bytes of data: three keys of 100 characters.
    const payload = () => ({ 'app.properties': 'k'.repeat(86) + Math.random().toString(36).slice(2, 16), 'log.level': 'l'.repeat(100), 'extra.yaml': 'e'.repeat(100) });
    // Warm-up (JIT, connection and allocation pools), then the baseline.
    await fill(s, 'warm', 500, 'cm-', payload);
    await sleep(500);
    const redis = redisOf(s.redisUrl);
    try {
      const before = await s.mem();
      const redisBefore = await redisMemory(redis);
      const rate = await fill(s, 'mem', N, 'cm-', payload);
      await sleep(1000); // the watch cache has applied everything
      const after = await s.mem();
      const redisAfter = await redisMemory(redis);
      const sample = await admin.request('GET', `${CM_PATH('mem')}/cm-1`);
      const storedBytes = sample.body.length;
      const xlen = await redis.xlen('{root}:events');
      const per = (a: number, b: number) => Math.round((b - a) / N);
      results.memory = {
        configMaps: N, storedJsonBytes: storedBytes, dataBytes: 300, createRatePerSec: round(rate, 1), gcExposed: after.gc,
        serverRssBefore: before.rss, serverRssAfter: after.rss, serverRssBytesPerConfigMap: per(before.rss, after.rss),
        serverHeapUsedBefore: before.heapUsed, serverHeapUsedAfter: after.heapUsed, serverHeapBytesPerConfigMap: per(before.heapUsed, after.heapUsed),
        redisUsedMemoryBefore: redisBefore, redisUsedMemoryAfter: redisAfter, redisBytesPerConfigMap: per(redisBefore, redisAfter),
        redisEventStreamLength: xlen,
        note: 'Redis holds each object twice: the object key and its ADDED event in the {root}:events stream (trimmed at ~100,000 entries). The server heap holds the watch-cache entry (JSON string + parsed labels) and the in-memory event history (20,000 events) referencing the same entries.',
      };
      rows.push({
        scenario: 'memory', figure: `bytes per ConfigMap (${fmtInt(N)} × ${storedBytes} B JSON)`,
        value: `RSS ${fmtInt(per(before.rss, after.rss))} / Redis ${fmtInt(per(redisBefore, redisAfter))}`, target: '(none)', met: '-',
        detail: `server heapUsed ${fmtInt(per(before.heapUsed, after.heapUsed))} B/object; RSS ${round(before.rss / 2 ** 20, 1)} → ${round(after.rss / 2 ** 20, 1)} MiB; Redis used_memory ${round(redisBefore / 2 ** 20, 1)} → ${round(redisAfter / 2 ** 20, 1)} MiB (object + stream entry)`,
      });
    } finally { redis.disconnect(); admin.close(); }
  });
}

/**
 * The raw Redis ceiling of the write path: redis-benchmark running the shard's write script
 * (EVALSHA, 3 keys, random object keys) against a redis-server started like the embedded one
 * (unix socket, AOF appendfsync always), 50 connections, no pipelining; plus GET.
 */
async function redisCeiling(): Promise<void> {
  const has = spawnSync('redis-benchmark', ['--version'], { encoding: 'utf8' });
  if (has.error || has.status !== 0) { log('redis-ceiling: redis-benchmark not installed, skipped'); return; }
  const { WRITE_SCRIPT } = await import('../src/storage/scripts.js');
  const root = freshRoot();
  const dir = join(root, 'redis');
  mkdirSync(dir, { recursive: true });
  const sock = join(dir, 'redis.sock');
  const child: ChildProcess = spawn('redis-server', ['--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--port', '0', '--unixsocket', sock, '--unixsocketperm', '700', '--logfile', ''], { stdio: 'ignore' });
  extraChildren.add(child);
  const exited = new Promise((r) => child.once('exit', r));
  try {
    for (let i = 0; i < 200 && !existsSync(sock); i++) await sleep(25);
    const r = redisOf(`unix://${sock}`);
    const sha = await r.script('LOAD', WRITE_SCRIPT) as string;
    r.disconnect();
    const prefix = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"bench","uid":"6f1c7c1e-8d5e-4b43-9a55-1c1b1f0f5e2a","resourceVersion":"';
    const suffix = '","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"a":"value-a","b":"value-b"}}';
    // redis-benchmark prints its figure only on completion: run a fixed count sized for a few seconds.
    const runN = (n: number, args: string[]): Promise<{ rps: number; seconds: number }> => new Promise((resolve) => {
      const t0 = performance.now();
      const p = spawn('redis-benchmark', ['-s', sock, '-c', '50', '-n', String(n), '-r', '100000000', ...args], { stdio: ['ignore', 'ignore', 'ignore'] });
      const kill = setTimeout(() => p.kill('SIGKILL'), 20_000);
      p.once('exit', () => { clearTimeout(kill); const seconds = (performance.now() - t0) / 1000; resolve({ rps: n / seconds, seconds }); });
    });
    const c0 = cpuSecondsOf(child.pid!);
    const w = await runN(60_000, ['EVALSHA', sha, '3', '{root}:rv', '{root}:o:core/configmaps/root/bench/__rand_int__', '{root}:events', 'c', '', prefix, suffix, '100000', 'core/configmaps/root/bench/__rand_int__']);
    const writeCpu = ((cpuSecondsOf(child.pid!) - c0) / w.seconds) * 100;
    const g = await runN(200_000, ['GET', '{root}:o:core/configmaps/root/bench/__rand_int__']);
    results['redis-ceiling'] = {
      writeScriptPerSec: round(w.rps, 1), writeScriptRedisCpuPercent: round(writeCpu, 1), getPerSec: round(g.rps, 1),
      note: 'redis-benchmark -c 50 without pipelining over the unix socket, AOF appendfsync always; includes redis-benchmark start-up; the write script is the shard\'s (INCR + SET + XADD).',
    };
    rows.push({ scenario: 'redis-ceiling', figure: 'raw Redis: write script (EVALSHA) /s, 50 conns', value: fmtInt(w.rps), target: '(reference)', met: '-', detail: `GET ${fmtInt(g.rps)}/s; redis CPU during writes ${round(writeCpu, 0)} %` });
  } finally {
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
    extraChildren.delete(child);
    removeRoot(root);
  }
}

// ---------------------------------------------------------------------------------------------
// Custom resources (issue: custom resources per logical cluster)

const CRD_DIR = join(BENCH_DIR, '..', 'test', 'fixtures', 'crds');

function crdBodies(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort().map((f) => JSON.stringify(parseYaml(readFileSync(join(dir, f), 'utf8'))));
}

async function waitEstablished(c: Client, names: string[]): Promise<void> {
  for (const n of names) {
    for (;;) {
      const r = await c.request('GET', `/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`);
      const conds = (JSON.parse(r.body.toString()) as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? [];
      if (conds.some((x) => x.type === 'Established' && x.status === 'True')) break;
      await sleep(5);
    }
  }
}

/** Creating the five prometheus-operator CRDs (≈ 3.4 MB of YAML) until all are Established. */
async function crdApply(): Promise<void> {
  const bodies = crdBodies(join(CRD_DIR, 'prometheus-operator'));
  const names = bodies.map((b) => (JSON.parse(b) as { metadata: { name: string } }).metadata.name);
  const bytes = bodies.reduce((n, b) => n + b.length, 0);
  const runs: number[] = [];
  for (let r = 0; r < 3; r++) {
    await withServer('crd-apply', async (s) => {
      await waitForQuiet();
      const c = makeClients(s.url, s.creds, 1)[0]!;
      try {
        const t0 = performance.now();
        for (const b of bodies) await mustOk(c, 'POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldValidation=Strict', b);
        await waitEstablished(c, names);
        runs.push(performance.now() - t0);
      } finally { c.close(); }
    });
  }
  const med = median(runs);
  results['crd-apply'] = { crds: names.length, jsonBytes: bytes, runsMs: runs.map((x) => round(x, 1)), medianMs: round(med, 1) };
  rows.push({ scenario: 'crd-apply', figure: `create ${names.length} prometheus-operator CRDs → Established (${(bytes / 1e6).toFixed(1)} MB JSON)`, value: `${round(med, 0)} ms`, target: '< 2,000 ms', met: med < 2000 ? 'yes' : 'NO', detail: `runs ${runs.map((x) => round(x, 0)).join('/')} ms; one client, sequential creates` });
}

/** Validated custom resources: cert-manager Certificate creates/s. */
async function crCreate(): Promise<void> {
  await withServer('cr-create', async (s) => {
    const admin = makeClients(s.url, s.creds, 1)[0]!;
    const crd = crdBodies(join(CRD_DIR, 'cert-manager')).find((b) => b.includes('"certificates.cert-manager.io"'))!;
    await mustOk(admin, 'POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    await waitEstablished(admin, ['certificates.cert-manager.io']);
    await createNamespace(admin, 'bench');
    admin.close();
    const clients = makeClients(s.url, s.creds, CONCURRENCY);
    const cert = (name: string) => JSON.stringify({
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name },
      spec: { secretName: `${name}-tls`, dnsNames: [`${name}.example.com`], duration: '2160h', issuerRef: { name: 'ca', kind: 'ClusterIssuer' }, privateKey: { algorithm: 'ECDSA', size: 256 } },
    });
    try {
      const { best: r, runs, busyBefore } = await repeated((run) => runLoad({
        clients, warmupMs: warmup(run), durationMs: DURATION_MS, cpu: s.cpu,
        next: (c, i): Req => ({ method: 'POST', path: '/clusters/root/apis/cert-manager.io/v1/namespaces/bench/certificates', body: cert(`c-${run}-${c}-${i}`) }),
        ok: (st) => st === 201,
      }));
      results['cr-create'] = { ...loadJson(r), runsOpsPerSec: runs, machineBusyBeforePct: busyBefore };
      rows.push({ scenario: 'cr-create', figure: `cert-manager Certificate creates/s, ${CONCURRENCY} clients`, value: fmtInt(r.opsPerSec), target: '≥ 3,000/s', met: r.opsPerSec >= 3000 ? 'yes' : 'NO', detail: loadDetail(r) });
    } finally { closeClients(clients); }
  });
}

// ---------------------------------------------------------------------------------------------

const SCENARIOS: Record<string, () => Promise<void>> = {
  startup,
  create,
  audit: auditScenario,
  quota: quotaScenario,
  get,
  list: () => listScenario('list', 0),
  watch: () => watchScenario('watch', 10, 100),
  memory,
  'watch-fanout': () => watchScenario('watch-fanout', 1, Number(process.env.BENCH_FANOUT_RATE ?? 20)),
  'list-10k': () => listScenario('list-10k', 10_000),
  'redis-ceiling': redisCeiling,
  // Workspace A floods, workspace B GETs every 20 ms; priority and fairness on and off (bench/noisyneighbour.ts).
  'noisy-neighbour': () => instanceScenario('noisy-neighbour', noisyNeighbour),
  'crd-apply': crdApply,
  'cr-create': crCreate,
  'ws-create': () => workspaceScenario('ws-create', wsCreate),
  'ws-memory': () => workspaceScenario('ws-memory', wsMemory),
  'ws-delete': () => workspaceScenario('ws-delete', wsDelete),
  // Three shards and a front-proxy as separate processes (bench/shards.ts; needs npm run build).
  'shards-ws': () => instanceScenario('shards-ws', shardsWs),
  'proxy-overhead': () => instanceScenario('proxy-overhead', proxyOverhead),
  'proxy-restart': () => instanceScenario('proxy-restart', proxyRestart),
  'proxy-h2': () => instanceScenario('proxy-h2', proxyHttp2),
  // kcp v0.32.3 (test/tools/build.sh --kcp) and kcp-ts over HTTP/2 and HTTP/1.1, client-go, CPU per request (bench/kcpcompare.ts).
  'kcp-compare': () => instanceScenario('kcp-compare', kcpCompare),
  // Shared APIs: APIBinding → served, and a virtual workspace over 1,000 consumers (bench/apis.ts).
  'apis-bind': () => workspaceScenario('apis-bind', apisBind),
  'apis-vw': async () => {
    // A history window of 1,000 events: its content (whichever events are recent) would
    // otherwise move the heap by several MiB between the two memory measurements.
    const saved = process.env.BENCH_WATCH_HISTORY;
    process.env.BENCH_WATCH_HISTORY ??= '1000';
    try { await workspaceScenario('apis-vw', apisVirtualWorkspace); } finally {
      if (saved === undefined) delete process.env.BENCH_WATCH_HISTORY; else process.env.BENCH_WATCH_HISTORY = saved;
    }
  },
  // Admission: create throughput with one allow-all validating webhook (bench/admission.ts).
  webhook: () => workspaceScenario('webhook', webhookBench),
  vap: () => workspaceScenario('vap', policyBench),
  // CRD conversion webhook: list and create in a converted version (bench/admission.ts).
  conversion: () => workspaceScenario('conversion', conversionBench),
  // The Kubernetes protobuf codec against JSON, in process: a 500-item ConfigMapList and a large CRD (bench/protobuf.ts).
  'protobuf-codec': () => instanceScenario('protobuf-codec', protobufCodecBench),
  // The priority-and-fairness filter's CPU per request against max-in-flight, in process (bench/flowcontrol.ts).
  'flowcontrol-cost': () => instanceScenario('flowcontrol-cost', flowControlCostBench),
  // JSON against Kubernetes protobuf through the server: GET and LIST of ConfigMaps, short runs (bench/protobufserving.ts).
  'protobuf-serving': () => workspaceScenario('protobuf-serving', protobufServingBench),
  // kcp-ts operator against a real kube-apiserver (bench/operator.ts; needs npm run build and test/tools/build.sh).
  operator: () => instanceScenario('operator', operatorBench),
  // kcp-ts backup and restore of 100,000 ConfigMaps, the CLI as a child process (bench/backup.ts; needs npm run build).
  backup: () => instanceScenario('backup', backupBench),
  // Live migration of a logical cluster between two shards under 200 writes/s (bench/migrate.ts; needs npm run build).
  migrate: () => instanceScenario('migrate', migrateBench),
  // Spawn of the compiled `kcp-ts start` → /readyz 200: one shard and --shards 3, fresh directory and restart (bench/start.ts).
  start: () => instanceScenario('start', startBench),
  // The syncer between a shard and a real kube-apiserver: spec down, status up, memory (bench/syncer.ts; needs test/tools/build.sh).
  syncer: () => instanceScenario('syncer', syncerBench),
};

/** Runs an instance scenario (bench/shards.ts, which starts its own processes) and records its report. */
async function instanceScenario(name: string, run: () => Promise<Report>): Promise<void> {
  const r = await run();
  results[name] = r.result;
  rows.push(...r.rows);
}

/** Runs a workspace scenario (bench/workspaces.ts) on a fresh server and records its report. */
async function workspaceScenario(name: string, run: (s: ServerProc) => Promise<Report>): Promise<void> {
  await withServer(name, async (s) => {
    const r = await run(s);
    results[name] = r.result;
    rows.push(...r.rows);
  });
}

function printTable(): void {
  const head: Row = { scenario: 'scenario', figure: 'figure', value: 'result', target: 'target', met: 'met', detail: 'detail' };
  const cols: (keyof Row)[] = ['scenario', 'figure', 'value', 'target', 'met'];
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(...[head, ...rows].map((r) => r[c].length))])) as Record<keyof Row, number>;
  const line = (r: Row) => cols.map((c) => r[c].padEnd(width[c])).join(' | ');
  const out = [line(head), cols.map((c) => '-'.repeat(width[c])).join('-|-'), ...rows.map(line), '', ...rows.map((r) => `${r.scenario}: ${r.detail}`)];
  process.stdout.write(`\n${out.join('\n')}\n`);
}

function machine(): Json {
  const rv = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.trim();
  return { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: round(totalmem() / 2 ** 30, 1), node: process.version, redis: rv, platform: `${process.platform}/${process.arch}`, client: clientKind(), concurrency: CONCURRENCY, durationMs: DURATION_MS, repeat: REPEAT };
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => a !== '--');
  const names = asked.length ? asked : Object.keys(SCENARIOS);
  for (const n of names) if (!SCENARIOS[n]) { log(`unknown scenario "${n}"; known: ${Object.keys(SCENARIOS).join(', ')}`); process.exitCode = 2; return; }
  // The servers run compiled, as users run them (bench/server-child.ts): build what is measured.
  if (process.env.BENCH_SOURCE !== 'tsx') {
    log('building (npm run build; BENCH_SOURCE=tsx runs the sources instead)…');
    const build = spawnSync('npm', ['run', 'build'], { cwd: join(BENCH_DIR, '..'), stdio: ['ignore', 'ignore', 'inherit'] });
    if (build.status !== 0) { log('npm run build failed'); process.exitCode = 1; return; }
  }
  let failed = false;
  for (const n of names) {
    log(`running ${n}…`);
    const t0 = performance.now();
    try {
      await SCENARIOS[n]!();
    } catch (err) {
      failed = true;
      log(`${n} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      results[n] = { error: String(err) };
      rows.push({ scenario: n, figure: 'FAILED', value: '-', target: '-', met: 'NO', detail: String(err).slice(0, 300) });
    }
    log(`${n} took ${round((performance.now() - t0) / 1000, 1)} s`);
  }
  printTable();
  let previous: Json = {};
  try { previous = JSON.parse(readFileSync(RESULTS, 'utf8')) as Json; } catch { /* first run */ }
  const merged = { ...previous, machine: machine(), updatedAt: new Date().toISOString(), scenarios: { ...(previous.scenarios as Json | undefined), ...results } };
  writeFileSync(RESULTS, `${JSON.stringify(merged, null, 2)}\n`);
  log(`results written to ${RESULTS}`);
  if (failed) process.exitCode = 1;
}

function cleanupSync(): void {
  for (const c of extraChildren) { try { c.kill('SIGKILL'); } catch { /* gone */ } }
  extraChildren.clear();
  killAllSync();
  killInstancesSync();
  killStartChildrenSync();
}
const onSignal = (sig: NodeJS.Signals) => { cleanupSync(); process.exit(sig === 'SIGINT' ? 130 : 143); };
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
process.on('exit', cleanupSync);

try {
  await main();
} finally {
  cleanupSync();
}
