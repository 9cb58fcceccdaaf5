/**
 * Workspace benchmarks (issue "Workspaces, tenancy…"; kcp's own load test creates 8 workspaces/s,
 * costs 9.8 MiB per empty workspace and takes ≈ 1 h to delete a 10,000-workspace tree):
 *
 * - `ws-create`: open-loop creation of workspaces at `BENCH_WS_RATE`/s (default 500) for
 *   `BENCH_WS_SECONDS` (default 20) in an organization; latency = POST sent (as scheduled) →
 *   the Workspace's `Ready` event on a watch of the parent; sustained = Ready events per second.
 * - `ws-memory`: server RSS (after a full GC) + Redis `used_memory` per empty workspace, measured
 *   at 10,000 and at `BENCH_WS_MEMORY_MAX` (default 100,000) workspaces.
 * - `ws-delete`: a tree of 10,000 workspaces (an organization, 100 teams of 99 workspaces each),
 *   then DELETE of the organization → time until the organization's Workspace is gone and every
 *   logical cluster of the tree with it.
 */
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { closeClients, makeClients, type Client, type Creds } from './lib/client.js';
import { summarize } from './lib/load.js';
import type { ServerProc } from './lib/procs.js';

type Json = Record<string, unknown>;
/** A table row, as run.ts prints it. */
export interface Row { scenario: string; figure: string; value: string; target: string; met: string; detail: string }
/** What a scenario reports. */
export interface Report { result: Json; rows: Row[] }

const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const body = (name: string) => JSON.stringify({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });

/** Watches the Workspaces of a parent and reports when each becomes Ready (ms, performance clock). */
export function watchReady(url: string, creds: Creds, parent: string, onReady: (name: string, at: number) => void, onDeleted?: (name: string) => void): { close(): void; opened: Promise<void> } {
  const u = new URL(url);
  const agent = new Agent({ keepAlive: true, ca: creds.ca, cert: creds.cert, key: creds.key, servername: 'localhost' });
  let resolveOpened!: () => void;
  const opened = new Promise<void>((r) => { resolveOpened = r; });
  const req = request({ host: u.hostname, port: Number(u.port), path: `${WS(parent)}?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`, agent, headers: { accept: 'application/json' } }, (res) => {
    res.setEncoding('utf8');
    let rest = '';
    res.on('data', (chunk: string) => {
      const at = performance.now();
      const text = rest + chunk;
      const lines = text.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        if (!line) continue;
        const ev = JSON.parse(line) as { type: string; object: { metadata: { name: string; annotations?: Record<string, string> }; status?: { phase?: string } } };
        if (ev.type === 'BOOKMARK') { if (ev.object.metadata.annotations?.['k8s.io/initial-events-end']) resolveOpened(); continue; }
        if (ev.type === 'DELETED') onDeleted?.(ev.object.metadata.name);
        else if (ev.object.status?.phase === 'Ready') onReady(ev.object.metadata.name, at);
      }
    });
  });
  req.end();
  return { opened, close: () => { req.destroy(); agent.destroy(); } };
}

async function mustOk(c: Client, method: string, path: string, b?: string): Promise<Json> {
  const r = await c.request(method, path, b);
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} → ${r.status}: ${r.body.toString().slice(0, 300)}`);
  return JSON.parse(r.body.toString()) as Json;
}

/** Creates a workspace and waits until it is Ready. */
async function createReady(s: ServerProc, c: Client, parent: string, name: string): Promise<void> {
  await mustOk(c, 'POST', WS(parent), body(name));
  for (let i = 0; i < 500; i++) {
    const ws = await mustOk(c, 'GET', `${WS(parent)}/${name}`);
    if ((ws.status as Json | undefined)?.phase === 'Ready') return;
    await sleep(10);
  }
  throw new Error(`${parent}:${name} not Ready`);
}

/**
 * Creates `count` workspaces `${prefix}${k}` under `parent` with `concurrency` clients and waits
 * until all are Ready (closed loop). Returns the seconds it took.
 */
async function createMany(s: ServerProc, parent: string, names: string[], concurrency = 50): Promise<number> {
  const pending = new Set(names);
  const w = watchReady(s.url, s.creds, parent, (n) => pending.delete(n));
  await w.opened;
  const clients = makeClients(s.url, s.creds, concurrency);
  const t0 = performance.now();
  let k = 0;
  try {
    await Promise.all(clients.map(async (c) => {
      while (k < names.length) {
        const name = names[k++]!;
        for (let attempt = 0; ; attempt++) {
          const r = await c.request('POST', WS(parent), body(name));
          if (r.status === 201 || r.status === 409) break;
          if (attempt > 5) throw new Error(`create ${parent}:${name} → ${r.status}: ${r.body.toString().slice(0, 200)}`);
          await sleep(100);
        }
      }
    }));
    const deadline = performance.now() + 600_000;
    while (pending.size && performance.now() < deadline) await sleep(20);
    if (pending.size) throw new Error(`${pending.size} workspaces under ${parent} not Ready`);
    return (performance.now() - t0) / 1000;
  } finally { closeClients(clients); w.close(); }
}

/** `ws-create`: open-loop creation at a fixed rate; create → Ready latency and sustained rate. */
export async function wsCreate(s: ServerProc): Promise<Report> {
  const rate = Number(process.env.BENCH_WS_RATE ?? 500);
  const seconds = Number(process.env.BENCH_WS_SECONDS ?? 20);
  const admin = makeClients(s.url, s.creds, 1)[0]!;
  await createReady(s, admin, 'root', 'bench');
  // Warm-up: JIT, connections, queues.
  await createMany(s, 'root:bench', Array.from({ length: Number(process.env.BENCH_WS_WARMUP ?? 2000) }, (_, i) => `warm-${i}`));
  const total = Math.round(rate * seconds);
  const sent = new Float64Array(total);
  const ready = new Float64Array(total).fill(NaN);
  const created = new Float64Array(total).fill(NaN);
  const readyTimes: number[] = [];
  const w = watchReady(s.url, s.creds, 'root:bench', (name, at) => {
    if (!name.startsWith('ws-')) return;
    const i = Number(name.slice(3));
    if (Number.isNaN(ready[i]!)) { ready[i] = at; readyTimes.push(at); }
  });
  await w.opened;
  const clients = makeClients(s.url, s.creds, 64);
  // Connect (TLS handshakes) before the clock starts: steady state is what is measured.
  await Promise.all(clients.map((c) => c.request('GET', '/version')));
  await sleep(1000);
  const free = [...clients];
  const queue: number[] = [];
  let errors = 0; const errorSamples: string[] = [];
  const pump = () => {
    while (free.length && queue.length) {
      const c = free.pop()!;
      const i = queue.shift()!;
      c.request('POST', WS('root:bench'), body(`ws-${i}`)).then((r) => {
        created[i] = performance.now();
        if (r.status !== 201) { errors++; if (errorSamples.length < 5) errorSamples.push(`${r.status}: ${r.body.toString().slice(0, 200)}`); }
      }, (err) => { errors++; if (errorSamples.length < 5) errorSamples.push(String(err)); }).finally(() => { free.push(c); pump(); });
    }
  };
  const cpu0 = s.cpu.snapshot();
  const t0 = performance.now() + 50;
  // Schedule: request i is due at t0 + i/rate; a 2 ms tick sends what is due.
  await new Promise<void>((resolve) => {
    let next = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      while (next < total && t0 + (next * 1000) / rate <= now) { sent[next] = t0 + (next * 1000) / rate; queue.push(next++); }
      pump();
      if (next >= total) { clearInterval(tick); resolve(); }
    }, 2);
  });
  const sendEnd = performance.now();
  const deadline = sendEnd + 60_000;
  while (readyTimes.length < total && performance.now() < deadline) await sleep(20);
  const cpu = s.cpu.report(cpu0);
  // The workspace controller's reconcile time (server-side histogram, includes the warm-up).
  const metrics = (await admin.request('GET', '/metrics')).body.toString();
  const reconcile = histogramQuantiles(metrics, 'controller_runtime_reconcile_time_seconds', 'controller="workspace"', [0.5, 0.99]).map((q) => round(q * 1000, 1));
  w.close(); closeClients(clients); admin.close();
  const lat: number[] = [];
  for (let i = 0; i < total; i++) if (!Number.isNaN(ready[i]!)) lat.push(ready[i]! - sent[i]!);
  const l = summarize(lat);
  // Where the time goes: scheduled send → 201 (queueing for a connection + the create), and
  // 201 → Ready (watch event, controller queue, reconcile, watch event).
  const toCreated: number[] = []; const toReady: number[] = [];
  for (let i = 0; i < total; i++) {
    if (!Number.isNaN(created[i]!)) toCreated.push(created[i]! - sent[i]!);
    if (!Number.isNaN(created[i]!) && !Number.isNaN(ready[i]!)) toReady.push(ready[i]! - created[i]!);
  }
  const lc = summarize(toCreated); const lr = summarize(toReady);
  // p99 per second of the schedule: shows whether slow creations cluster in time (stalls).
  const p99BySecond: number[] = [];
  for (let sec = 0; sec < seconds; sec++) {
    const xs: number[] = [];
    for (let i = Math.round(sec * rate); i < Math.min(total, Math.round((sec + 1) * rate)); i++) if (!Number.isNaN(ready[i]!)) xs.push(ready[i]! - sent[i]!);
    p99BySecond.push(round(summarize(xs).p99, 1));
  }
  const lastReady = readyTimes.length ? Math.max(...readyTimes) : t0;
  const sustained = readyTimes.length / ((lastReady - t0) / 1000);
  const result = {
    targetRatePerSec: rate, seconds, workspaces: total, ready: readyTimes.length, errors, errorSamples,
    sustainedReadyPerSec: round(sustained, 1), latencyMs: { p50: round(l.p50), p90: round(l.p90), p99: round(l.p99), max: round(l.max) }, p99BySecond,
    sendToCreatedMs: { p50: round(lc.p50), p99: round(lc.p99) }, createdToReadyMs: { p50: round(lr.p50), p99: round(lr.p99) },
    workspaceReconcileMsUpperBound: { p50: reconcile[0], p99: reconcile[1] },
    scheduleStartEpochMs: Math.round(performance.timeOrigin + t0), sendSeconds: round((sendEnd - t0) / 1000, 2), lastReadyAfterSendEndMs: round(lastReady - sendEnd, 1), cpuPctOfCore: cpu,
    note: 'open loop: request i is sent at t0 + i/rate (queued when all 64 connections are busy); latency = scheduled send → Ready event on a watch of the parent workspace. Each workspace: one HTTP create of the Workspace, one BullMQ job of the workspace controller, one transaction (LogicalCluster initialized, workspace-admin ClusterRoleBinding, namespace default, its default ServiceAccount, Workspace spec.cluster/URL and phase Ready).',
  };
  const met = sustained >= rate * 0.98 && l.p99 < 100 && readyTimes.length === total;
  return {
    result,
    rows: [{
      scenario: 'ws-create', figure: `workspace create → Ready, open loop ${rate}/s for ${seconds} s`,
      value: `${fmtInt(sustained)}/s, p99 ${round(l.p99, 1)} ms`, target: '≥ 500/s, p99 < 100 ms', met: met ? 'yes' : 'NO',
      detail: `p50 ${round(l.p50, 1)} ms, p90 ${round(l.p90, 1)} ms, max ${round(l.max, 1)} ms; p99 per second ${p99BySecond.join('/')}; send → 201 p50/p99 ${round(lc.p50, 1)}/${round(lc.p99, 1)} ms, 201 → Ready ${round(lr.p50, 1)}/${round(lr.p99, 1)} ms (of which reconcile ≤ ${reconcile[0]}/${reconcile[1]} ms, histogram bucket bounds); ${readyTimes.length}/${total} Ready, ${errors} errors; CPU % of a core: server ${cpu.server} (event loop thread ${cpu.serverMainThread}), redis ${cpu.redis} + queue redis ${cpu.redisQueue}, loadgen ${cpu.loadgen}`,
    }],
  };
}

/**
 * Upper bucket bounds of quantiles of a Prometheus histogram (text format) for one label set,
 * e.g. `histogramQuantiles(text, 'x_seconds', 'controller="workspace"', [0.5, 0.99])`.
 */
function histogramQuantiles(text: string, name: string, labels: string, qs: number[]): number[] {
  const buckets: [number, number][] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_bucket{`) || !line.includes(labels)) continue;
    const le = /le="([^"]+)"/.exec(line)![1]!;
    buckets.push([le === '+Inf' ? Infinity : Number(le), Number(line.slice(line.lastIndexOf(' ') + 1))]);
  }
  buckets.sort((a, b) => a[0] - b[0]);
  const total = buckets.at(-1)?.[1] ?? 0;
  return qs.map((q) => buckets.find(([, n]) => n >= q * total)?.[0] ?? NaN);
}

function redisOf(url: string): Redis {
  return url.startsWith('unix://') ? new Redis({ path: url.slice('unix://'.length) }) : new Redis(url);
}

async function usedMemory(r: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await r.info('memory'))![1]);
}

/** `ws-memory`: bytes per empty workspace at 10,000 and at BENCH_WS_MEMORY_MAX workspaces. */
export async function wsMemory(s: ServerProc): Promise<Report> {
  const max = Number(process.env.BENCH_WS_MEMORY_MAX ?? 100_000);
  const steps = [10_000, max].filter((n, i, a) => n <= max && a.indexOf(n) === i);
  const admin = makeClients(s.url, s.creds, 1)[0]!;
  const redis = redisOf(s.redisUrl);
  // The controllers' queue Redis (embedded, non-persistent): counted too, though its jobs are
  // removed once done.
  const queueSocket = join(s.root, 'redis-queue', 'redis.sock');
  const queueRedis = existsSync(queueSocket) ? redisOf(`unix://${queueSocket}`) : undefined;
  const usedMemoryAll = async () => (await usedMemory(redis)) + (queueRedis ? await usedMemory(queueRedis) : 0);
  try {
    await createReady(s, admin, 'root', 'mem');
    await createMany(s, 'root:mem', Array.from({ length: 200 }, (_, i) => `warm-${i}`));
    await sleep(1000);
    const before = await s.mem();
    const redisBefore = await usedMemoryAll();
    const keysBefore = await redis.dbsize();
    const points: Json[] = [];
    let created = 0;
    for (const n of steps) {
      const names = Array.from({ length: n - created }, (_, i) => `ws-${created + i}`);
      const secs = await createMany(s, 'root:mem', names);
      created = n;
      await sleep(2000); // controllers idle, watch cache applied
      const after = await s.mem();
      const redisAfter = await usedMemoryAll();
      const rss = (after.rss - before.rss) / n;
      const heap = (after.heapUsed - before.heapUsed) / n;
      const red = (redisAfter - redisBefore) / n;
      const xlen = await redis.xlen('{root}:events');
      points.push({
        workspaces: n, createSeconds: round(secs, 1), createRatePerSec: round(names.length / secs, 1),
        serverRssBytesPerWorkspace: Math.round(rss), serverHeapBytesPerWorkspace: Math.round(heap), redisBytesPerWorkspace: Math.round(red),
        // What RSS holds besides live objects: V8 heap pages kept after GC, Buffers outside the heap.
        serverHeapTotalBytesPerWorkspace: Math.round((after.heapTotal - before.heapTotal) / n), serverExternalBytesPerWorkspace: Math.round((after.external - before.external) / n),
        totalBytesPerWorkspace: Math.round(rss + red), serverRssMiB: round(after.rss / 2 ** 20, 1), redisUsedMemoryMiB: round(redisAfter / 2 ** 20, 1),
        redisKeysPerWorkspace: round(((await redis.dbsize()) - keysBefore) / n, 2), eventStreamLength: xlen,
      });
      log(`ws-memory: ${JSON.stringify(points.at(-1))}`);
    }
    const rows: Row[] = points.map((p) => ({
      scenario: 'ws-memory', figure: `bytes per empty workspace at ${fmtInt(p.workspaces as number)}`,
      value: `${fmtInt(p.totalBytesPerWorkspace as number)} B`, target: '< 32 KiB', met: (p.totalBytesPerWorkspace as number) < 32 * 1024 ? 'yes' : 'NO',
      detail: `server RSS ${fmtInt(p.serverRssBytesPerWorkspace as number)} B (heap ${fmtInt(p.serverHeapBytesPerWorkspace as number)}) + Redis ${fmtInt(p.redisBytesPerWorkspace as number)} B per workspace; created at ${p.createRatePerSec}/s; ${p.redisKeysPerWorkspace} Redis keys per workspace; event stream ${p.eventStreamLength} entries`,
    }));
    return {
      result: { points, note: 'Per workspace: Workspace in the parent, LogicalCluster, workspace-admin ClusterRoleBinding, namespace default, default ServiceAccount, plus their share of the watch-event history (server) and of the Redis event stream (trimmed at ~100,000 entries, so its share shrinks as workspaces grow).' },
      rows,
    };
  } finally { redis.disconnect(); queueRedis?.disconnect(); admin.close(); }
}

/** `controller_runtime_reconcile_total` summed over results, per controller (Prometheus text format). */
function reconcilesByController(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('controller_runtime_reconcile_total{')) continue;
    const c = /controller="([^"]+)"/.exec(line)?.[1];
    if (c) out[c] = (out[c] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

/** Number of Redis keys matching a pattern (SCAN). */
async function countKeys(r: Redis, pattern: string): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

/** `ws-delete`: a 10,000-workspace tree deleted by deleting its root. */
export async function wsDelete(s: ServerProc): Promise<Report> {
  const teams = Number(process.env.BENCH_WS_DELETE_TEAMS ?? 100);
  const perTeam = Number(process.env.BENCH_WS_DELETE_PER_TEAM ?? 99);
  const admin = makeClients(s.url, s.creds, 1)[0]!;
  const redis = redisOf(s.redisUrl);
  try {
    const lcBefore = await countKeys(redis, '{root}:o:core.kcp.io/logicalclusters/*');
    await createReady(s, admin, 'root', 'del');
    const tCreate = performance.now();
    await createMany(s, 'root:del', Array.from({ length: teams }, (_, i) => `team-${i}`));
    for (let t = 0; t < teams; t += 10) {
      await Promise.all(Array.from({ length: Math.min(10, teams - t) }, (_, j) =>
        createMany(s, `root:del:team-${t + j}`, Array.from({ length: perTeam }, (_, i) => `ws-${i}`), 5)));
    }
    const createSecs = (performance.now() - tCreate) / 1000;
    const total = teams + teams * perTeam;
    log(`ws-delete: ${total} workspaces created in ${round(createSecs, 1)} s`);
    await sleep(2000);
    const reconcilesBefore = reconcilesByController((await admin.request('GET', '/metrics')).body.toString());
    const rvBefore = Number(await redis.get('{root}:rv'));
    const cpu0 = s.cpu.snapshot();
    const t0 = performance.now();
    await mustOk(admin, 'DELETE', `${WS('root')}/del`);
    let goneAt = 0;
    for (;;) {
      const r = await admin.request('GET', `${WS('root')}/del`);
      if (r.status === 404) { goneAt = performance.now(); break; }
      if (performance.now() - t0 > 600_000) throw new Error('root:del not deleted after 600 s');
      await sleep(100);
    }
    const secs = (goneAt - t0) / 1000;
    const cpu = s.cpu.report(cpu0);
    // The LogicalClusters are gone once the Workspace is; give the last events a moment.
    await sleep(500);
    // The work of the deletion: storage writes (revisions) and reconciles per controller, per workspace.
    const writesPerWorkspace = round((Number(await redis.get('{root}:rv')) - rvBefore) / (total + 1), 2);
    const reconcilesAfter = reconcilesByController((await admin.request('GET', '/metrics')).body.toString());
    const reconcilesPerWorkspace: Record<string, number> = {};
    for (const [c, n] of Object.entries(reconcilesAfter)) {
      const d = n - (reconcilesBefore[c] ?? 0);
      if (d > 0) reconcilesPerWorkspace[c] = round(d / (total + 1), 2);
    }
    const lcAfter = await countKeys(redis, '{root}:o:core.kcp.io/logicalclusters/*');
    const result = { workspaces: total + 1, createSeconds: round(createSecs, 1), deleteSeconds: round(secs, 2), logicalClustersLeft: lcAfter - lcBefore, redisKeys: await redis.dbsize(), writesPerWorkspace, reconcilesPerWorkspace, cpuPctOfCore: cpu };
    return {
      result,
      rows: [{
        scenario: 'ws-delete', figure: `delete a ${fmtInt(total + 1)}-workspace tree`, value: `${round(secs, 1)} s`, target: '< 60 s', met: secs < 60 && lcAfter === lcBefore ? 'yes' : 'NO',
        detail: `tree: 1 organization, ${teams} teams × ${perTeam} workspaces, created in ${round(createSecs, 1)} s; logical clusters left over: ${lcAfter - lcBefore}; per workspace ${writesPerWorkspace} storage writes, reconciles ${Object.entries(reconcilesPerWorkspace).map(([c, n]) => `${c} ${n}`).join(', ')}; CPU % of a core over the deletion: server ${cpu.server} (event loop thread ${cpu.serverMainThread}), redis ${cpu.redis} + queue redis ${cpu.redisQueue}`,
      }],
    };
  } finally { redis.disconnect(); admin.close(); }
}
