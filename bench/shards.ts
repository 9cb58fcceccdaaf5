/**
 * Shard and front-proxy benchmarks (issue "Shards and the front-proxy"): an instance of three
 * shards and a front-proxy, each its own `kcp-ts` process (compiled: `npm run build` first) with
 * its own embedded redis-servers, on this machine.
 *
 * - `shards-ws`: open-loop creation of Workspaces in root through the front-proxy, placed at
 *   random over the three shards. At `BENCH_SHARDS_LAG_RATE`/s (default 300) for
 *   `BENCH_SHARDS_SECONDS` (default 10): the **index lag** — from the Workspace's `Ready` event
 *   (a watch of root through the proxy) until its path is in a front-proxy index (a
 *   ShardDirectory, the proxy's index code, fed by the same watches, in this process: both times
 *   on one clock; 0 when the path was indexed before the workspace was Ready) — and, as a check
 *   on the real proxy, how many paths answered 200 through it at the first request sent on the
 *   Ready event (retried every 2 ms while it answers 403). Then at `BENCH_SHARDS_RATE`/s
 *   (default 600): **sustained Ready/s** and creation→Ready latency.
 * - `proxy-overhead`: GET of one ConfigMap in a workspace on shard-1, straight to the shard and
 *   through the proxy: added latency at concurrency 1 (p50 difference) and throughput at
 *   concurrency `BENCH_CONCURRENCY` (ratio proxied / direct).
 * - `proxy-restart`: `BENCH_SHARDS_INDEX` (default 100,000) logical clusters with workspace paths
 *   over the three shards; the proxy is killed and started again: time from spawn until a
 *   request to the last-created path is served, and the proxy's RSS per indexed logical cluster
 *   (RSS with the full index minus RSS of a proxy with an empty one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { closeClients, makeClients, type Client, type Creds } from './lib/client.js';
import { runLoad, summarize } from './lib/load.js';
import { CpuSampler } from './lib/procs.js';
import { watchReady, type Report, type Row } from './workspaces.js';
import { ShardDirectory } from '../src/shards/directory.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(REPO, 'bin', 'kcp-ts');
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
type Json = Record<string, unknown>;

/** Children of running instances, killed on exit by {@link killInstancesSync}. */
const children = new Set<ChildProcess>();
const roots = new Set<string>();

/** Kills every process of every instance still running (SIGKILL) and removes their directories. */
export function killInstancesSync(): void {
  for (const c of children) { try { c.kill('SIGKILL'); } catch { /* gone */ } }
  children.clear();
  for (const r of roots) {
    // Embedded redis-servers of killed processes: their pid files.
    for (const dir of ['', 'shard-1', 'shard-2']) {
      for (const role of ['redis', 'redis-queue']) {
        try { process.kill(Number(readFileSync(join(r, dir, role, 'redis.pid'), 'utf8')), 'SIGKILL'); } catch { /* none */ }
      }
    }
    rmSync(r, { recursive: true, force: true });
  }
  roots.clear();
}

export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((res) => { const s = createServer(); s.listen(0, '127.0.0.1', () => res(s)); })));
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export interface Proc { child: ChildProcess; url: string; readyMs: number; spawnToReadyMs: number; output(): string }

/** Spawns `kcp-ts <args>` and waits for its "ready in N ms at URL" line. */
export async function spawnKcp(args: string[], timeoutMs = 60_000): Promise<Proc> {
  const t0 = performance.now();
  // BENCH_CPU_PROF=<dir>: CPU profiles of every process, one directory per command.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, args[0] === 'front-proxy' ? 'front-proxy' : 'shard')}`] : [];
  const child = spawn(process.execPath, [...prof, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  child.stdout!.on('data', (d) => { out += String(d); });
  child.stderr!.on('data', (d) => { out += String(d); if (out.length > 50_000) out = out.slice(-20_000); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kcp-ts ${args[0]} not ready within ${timeoutMs} ms: ${out.slice(-2000)}`)), timeoutMs);
    const poll = setInterval(() => {
      const m = /ready in (\d+) ms at (https:\/\/\S+)/.exec(out);
      if (!m) return;
      clearInterval(poll); clearTimeout(timer);
      resolve({ child, url: m[2]!, readyMs: Number(m[1]), spawnToReadyMs: performance.now() - t0, output: () => out });
    }, 5);
    child.once('exit', (code) => { clearInterval(poll); clearTimeout(timer); reject(new Error(`kcp-ts ${args[0]} exited (${code}): ${out.slice(-2000)}`)); });
  });
}

export async function stopProc(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill(signal);
  await exited;
}

/** A full garbage collection of this process (V8's gc, exposed at run time). */
function fullGC(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * Heap bytes of a front-proxy index (a routing-only ShardDirectory, the proxy's own index code)
 * holding every logical cluster of the instance: heap after a full GC with the index minus before.
 */
async function indexHeapBytes(inst: Instance): Promise<{ bytes: number; entries: number }> {
  fullGC(); fullGC();
  const before = process.memoryUsage().heapUsed;
  const dir = new ShardDirectory({ shards: { remote: { url: inst.shards[0]!.url, ...inst.masters } }, credentials: inst.masters, routingOnly: true });
  await dir.synced(120_000);
  fullGC(); fullGC();
  const bytes = process.memoryUsage().heapUsed - before;
  const entries = dir.size;
  await dir.stop();
  return { bytes, entries };
}

/** RSS of a process in bytes (VmRSS of /proc/<pid>/status). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** A running instance: root shard, shard-1, shard-2, front-proxy. */
interface Instance {
  root: string;
  proxy: Proc;
  shards: Proc[];
  creds: Creds;
  masters: Creds;
  startProxy(): Promise<Proc>;
  stop(): Promise<void>;
}

async function startInstanceProcs(): Promise<Instance> {
  if (!existsSync(join(REPO, 'dist', 'src', 'cli', 'bin.js'))) throw new Error('the shard benchmarks run the compiled kcp-ts: npm run build first');
  const root = mkdtempSync(join(tmpdir(), 'kcpb-sh-'));
  roots.add(root);
  const [pProxy, pRoot, p1, p2] = await freePorts(4);
  const proxyURL = `https://127.0.0.1:${pProxy}`;
  const shards: Proc[] = [];
  shards.push(await spawnKcp(['start', '--root-directory', root, '--secure-port', String(pRoot), '--shard-external-url', proxyURL]));
  const more = [p1, p2].map((port, i) => spawnKcp(['start', '--root-directory', join(root, `shard-${i + 1}`), '--pki-directory', root, '--shard-name', `shard-${i + 1}`,
    '--secure-port', String(port), '--root-shard-kubeconfig-file', join(root, 'admin.kubeconfig'), '--shard-external-url', proxyURL, '--shard-labels', `name=shard-${i + 1}`]));
  shards.push(...await Promise.all(more));
  const read = (f: string) => readFileSync(join(root, f), 'utf8');
  const creds = { ca: read('ca.crt'), cert: read('admin.crt'), key: read('admin.key') };
  const masters = { ca: read('ca.crt'), cert: read('system-admin.crt'), key: read('system-admin.key') };
  const startProxy = () => spawnKcp(['front-proxy', '--pki-directory', root, '--root-shard-url', shards[0]!.url, '--secure-port', String(pProxy)]);
  const inst: Instance = {
    root, shards, creds, masters, proxy: await startProxy(), startProxy,
    async stop() {
      await stopProc(inst.proxy);
      await Promise.all(shards.map((s) => stopProc(s)));
      rmSync(root, { recursive: true, force: true });
      roots.delete(root);
    },
  };
  // Every shard registered and indexed by the proxy: a workspace placed on each resolves.
  const c = makeClients(inst.proxy.url, creds, 1)[0]!;
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await c.request('GET', '/clusters/root/apis/core.kcp.io/v1alpha1/shards');
      if (r.status === 200 && (JSON.parse(r.body.toString()) as { items: unknown[] }).items.length === 3) break;
      if (Date.now() > deadline) throw new Error('shards did not register');
      await sleep(50);
    }
  } finally { c.close(); }
  await sleep(500);
  return inst;
}

/** Runs `body` with a fresh instance and always stops it. */
async function withInstance<T>(body: (i: Instance) => Promise<T>): Promise<T> {
  const inst = await startInstanceProcs();
  try { return await body(inst); } finally { await inst.stop().catch(() => killInstancesSync()); }
}

/** A pool of clients taking requests in order; `send` resolves with the response. */
function pool(clients: Client[]) {
  const free = [...clients];
  const waiting: ((c: Client) => void)[] = [];
  const acquire = () => free.pop() ?? new Promise<Client>((r) => waiting.push(r));
  const release = (c: Client) => { const w = waiting.shift(); if (w) w(c); else free.push(c); };
  return {
    async send(method: string, path: string, body?: string) {
      const c = await acquire();
      try { return await c.request(method, path, body); } finally { release(c); }
    },
  };
}

interface WsRun { created: number; ready: number; errors: number; errorSamples: string[]; seconds: number; readyPerSec: number; latencyMs: ReturnType<typeof summarize>; lagMs?: ReturnType<typeof summarize>; lagFirstTry?: number; perShard: Record<string, number> }

/**
 * Creates `rate`/s Workspaces `<prefix>-<k>` in root through the proxy for `seconds` (open loop)
 * and waits for all to be Ready; with `probeLag`, also measures the index lag of each.
 */
async function createWorkspaces(inst: Instance, prefix: string, rate: number, seconds: number, probeLag: boolean): Promise<WsRun> {
  const total = Math.round(rate * seconds);
  const sent = new Map<string, number>();
  const readyAt = new Map<string, number>();
  const indexedAt = new Map<string, number>();
  let firstTry = 0;
  const probes = pool(makeClients(inst.proxy.url, inst.creds, 64));
  const index = probeLag ? new ShardDirectory({
    shards: { remote: { url: inst.shards[0]!.url, ...inst.masters } }, credentials: inst.masters,
    onChange: (c) => { const p = c.location?.path; if (p?.startsWith(`root:${prefix}-`) && !c.deleted && !indexedAt.has(p)) indexedAt.set(p, performance.now()); },
  }) : undefined;
  await index?.synced();
  const probing: Promise<void>[] = [];
  const probe = async (name: string, at: number) => {
    let tries = 0;
    for (;;) {
      tries++;
      const r = await probes.send('GET', `/clusters/root:${name}/api/v1/namespaces/default`);
      if (r.status === 200) break;
      if (r.status !== 403 || performance.now() - at > 10_000) throw new Error(`probe root:${name}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      await sleep(2);
    }
    if (tries === 1) firstTry++;
  };
  let allReady!: () => void;
  const done = new Promise<void>((r) => { allReady = r; });
  const w = watchReady(inst.proxy.url, inst.creds, 'root', (name, at) => {
    if (!name.startsWith(`${prefix}-`) || readyAt.has(name)) return;
    readyAt.set(name, at);
    if (probeLag) probing.push(probe(name, at));
    if (readyAt.size === total) allReady();
  });
  await w.opened;
  const senders = pool(makeClients(inst.proxy.url, inst.creds, 64));
  let errors = 0;
  const errorSamples: string[] = [];
  const t0 = performance.now();
  const creates: Promise<void>[] = [];
  for (let k = 0; k < total; k++) {
    const due = t0 + (k * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const name = `${prefix}-${k}`;
    sent.set(name, due);
    creates.push(senders.send('POST', WS('root'), JSON.stringify({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } })).then((r) => {
      if (r.status !== 201) { errors++; if (errorSamples.length < 3) errorSamples.push(`${r.status} ${r.body.toString().slice(0, 200)}`); }
    }));
  }
  await Promise.all(creates);
  const expected = total - errors;
  if (readyAt.size < expected) await Promise.race([done, sleep(60_000)]);
  w.close();
  await Promise.allSettled(probing);
  await index?.stop();
  const lags = [...readyAt].map(([n, at]) => Math.max(0, (indexedAt.get(`root:${n}`) ?? Infinity) - at));
  const last = Math.max(...readyAt.values());
  const latencies = [...readyAt].map(([n, at]) => at - sent.get(n)!);
  // Placement: the shard annotation of each created workspace.
  const list = await senders.send('GET', `${WS('root')}`);
  const perShard: Record<string, number> = {};
  for (const ws of (JSON.parse(list.body.toString()) as { items: { metadata: { name: string; annotations?: Record<string, string> } }[] }).items) {
    if (!ws.metadata.name.startsWith(`${prefix}-`)) continue;
    const s = ws.metadata.annotations?.['core.kcp.io/shard'] ?? '?';
    perShard[s] = (perShard[s] ?? 0) + 1;
  }
  const seconds2 = (last - t0) / 1000;
  return {
    created: total - errors, ready: readyAt.size, errors, errorSamples, seconds: round(seconds2, 2), readyPerSec: round(readyAt.size / seconds2, 1),
    latencyMs: summarize(latencies), ...(probeLag ? { lagMs: summarize(lags), lagFirstTry: firstTry } : {}), perShard,
  };
}

const fmtLat = (l: ReturnType<typeof summarize>) => `p50 ${round(l.p50)} ms, p99 ${round(l.p99)} ms, max ${round(l.max)} ms`;

/** `shards-ws`: index lag under 300 workspaces/s, then sustained workspaces → Ready. */
export async function shardsWs(): Promise<Report> {
  const lagRate = Number(process.env.BENCH_SHARDS_LAG_RATE ?? 300);
  const rate = Number(process.env.BENCH_SHARDS_RATE ?? 600);
  const seconds = Number(process.env.BENCH_SHARDS_SECONDS ?? 10);
  return withInstance(async (inst) => {
    log(`shards-ws: ${lagRate}/s for ${seconds} s with index-lag probes`);
    const lag = await createWorkspaces(inst, 'lag', lagRate, seconds, true);
    await sleep(2000);
    log(`shards-ws: ${rate}/s for ${seconds} s`);
    const fast = await createWorkspaces(inst, 'fast', rate, seconds, false);
    const rows: Row[] = [
      { scenario: 'shards-ws', figure: 'index lag Ready → routable via front-proxy, p99', value: `${round(lag.lagMs!.p99)} ms`, target: '< 100 ms', met: lag.lagMs!.p99 < 100 ? 'yes' : 'NO',
        detail: `${fmtInt(lag.ready)} workspaces at ${lagRate}/s over 3 shards (${JSON.stringify(lag.perShard)}); lag ${fmtLat(lag.lagMs!)} (Ready → indexed; through the real proxy ${lag.lagFirstTry} of ${lag.ready} answered 200 to the first request sent on the Ready event); creation→Ready ${fmtLat(lag.latencyMs)}${lag.errors ? `; ${lag.errors} errors: ${lag.errorSamples.join(' | ')}` : ''}` },
      { scenario: 'shards-ws', figure: 'workspaces → Ready across 3 shards', value: `${fmtInt(fast.readyPerSec)}/s`, target: '≥ 500/s', met: fast.readyPerSec >= 500 ? 'yes' : 'NO',
        detail: `${fmtInt(fast.ready)} of ${fmtInt(fast.created)} Ready in ${fast.seconds} s, offered ${rate}/s (${JSON.stringify(fast.perShard)}); creation→Ready ${fmtLat(fast.latencyMs)}${fast.errors ? `; ${fast.errors} errors: ${fast.errorSamples.join(' | ')}` : ''}` },
    ];
    return { result: { lag, fast, lagRate, rate, seconds } as unknown as Json, rows };
  });
}

/** `proxy-overhead`: the same GET straight to the shard and through the front-proxy. */
export async function proxyOverhead(): Promise<Report> {
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
  const durationMs = Number(process.env.BENCH_DURATION_MS ?? 4000);
  return withInstance(async (inst) => {
    const c = pool(makeClients(inst.proxy.url, inst.creds, 1));
    const create = await c.send('POST', WS('root'), JSON.stringify({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'target' }, spec: { location: { selector: { matchLabels: { name: 'shard-1' } } } } }));
    if (create.status !== 201) throw new Error(`create workspace: ${create.status} ${create.body.toString()}`);
    let cluster = '';
    for (let i = 0; i < 400 && !cluster; i++) {
      const r = JSON.parse((await c.send('GET', `${WS('root')}/target`)).body.toString()) as { spec?: { cluster?: string }; status?: { phase?: string } };
      if (r.status?.phase === 'Ready') cluster = r.spec!.cluster!; else await sleep(25);
    }
    if (!cluster) throw new Error('workspace target not Ready');
    const cmPath = `/clusters/${cluster}/api/v1/namespaces/default/configmaps`;
    const put = await c.send('POST', cmPath, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' }, data: { a: '1' } }));
    if (put.status !== 201) throw new Error(`create configmap: ${put.status}`);
    const shard1 = inst.shards[1]!.url;
    // CPU: `server` is the shard (direct) or the proxy (proxied); the rest shows as `other`.
    const measure = async (url: string, n: number, ms: number, pid: number) => {
      const clients = makeClients(url, inst.creds, n);
      try {
        return await runLoad({ clients, warmupMs: 1000, durationMs: ms, cpu: new CpuSampler(pid, undefined), next: () => ({ method: 'GET', path: `${cmPath}/probe` }) });
      } finally { closeClients(clients); }
    };
    const shardPid = inst.shards[1]!.child.pid!;
    const proxyPid = inst.proxy.child.pid!;
    const serialDirect = await measure(shard1, 1, durationMs, shardPid);
    const serialProxy = await measure(inst.proxy.url, 1, durationMs, proxyPid);
    const loadDirect = await measure(shard1, concurrency, durationMs, shardPid);
    const loadProxy = await measure(inst.proxy.url, concurrency, durationMs, proxyPid);
    const added = serialProxy.latencyMs.p50 - serialDirect.latencyMs.p50;
    const ratio = loadProxy.opsPerSec / loadDirect.opsPerSec;
    const rows: Row[] = [
      { scenario: 'proxy-overhead', figure: 'front-proxy added latency, p50 (concurrency 1)', value: `${round(added, 3)} ms`, target: '< 1 ms', met: added < 1 ? 'yes' : 'NO',
        detail: `GET of one ConfigMap on shard-1: direct p50 ${round(serialDirect.latencyMs.p50, 3)} ms, p99 ${round(serialDirect.latencyMs.p99, 3)} ms; through the proxy p50 ${round(serialProxy.latencyMs.p50, 3)} ms, p99 ${round(serialProxy.latencyMs.p99, 3)} ms` },
      { scenario: 'proxy-overhead', figure: 'GET throughput through the proxy / direct', value: `${round(ratio * 100, 1)} %`, target: '≥ 70 %', met: ratio >= 0.7 ? 'yes' : 'NO',
        detail: `concurrency ${concurrency}: direct ${fmtInt(loadDirect.opsPerSec)}/s (p50 ${round(loadDirect.latencyMs.p50)} ms), through the proxy ${fmtInt(loadProxy.opsPerSec)}/s (p50 ${round(loadProxy.latencyMs.p50)} ms); CPU % of a core through the proxy: loadgen ${loadProxy.cpu.loadgen}, proxy ${loadProxy.cpu.server}, other (shard, redis) ${loadProxy.cpu.other}; direct: shard ${loadDirect.cpu.server}` },
    ];
    return { result: { serialDirect, serialProxy, loadDirect, loadProxy } as unknown as Json, rows };
  });
}

/** `proxy-restart`: a proxy restarted over `BENCH_SHARDS_INDEX` logical clusters; its memory per entry. */
export async function proxyRestart(): Promise<Report> {
  const count = Number(process.env.BENCH_SHARDS_INDEX ?? 100_000);
  return withInstance(async (inst) => {
    await sleep(1000);
    const emptyRss = rssOf(inst.proxy.child.pid!);
    log(`proxy-restart: creating ${fmtInt(count)} logical clusters over 3 shards`);
    const t0 = performance.now();
    const perShard = inst.shards.map((s) => pool(makeClients(s.url, inst.masters, 32)));
    let errors = 0;
    const sample: string[] = [];
    const inflight = new Set<Promise<void>>();
    for (let k = 0; k < count; k++) {
      const name = `lc${k.toString(36).padStart(6, '0')}`;
      const body = JSON.stringify({ apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster', annotations: { 'kcp.io/path': `root:idx-${k}` } } });
      const p = perShard[k % 3]!.send('POST', `/clusters/${name}/apis/core.kcp.io/v1alpha1/logicalclusters`, body).then((r) => {
        if (r.status !== 201) { errors++; if (sample.length < 3) sample.push(`${r.status} ${r.body.toString().slice(0, 200)}`); }
      });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
      if (inflight.size >= 96) await Promise.race(inflight);
      if (k % 20_000 === 0 && k) log(`proxy-restart: ${fmtInt(k)} created (${fmtInt(k / ((performance.now() - t0) / 1000))}/s)`);
    }
    await Promise.all(inflight);
    const fillSeconds = (performance.now() - t0) / 1000;
    if (errors) throw new Error(`${errors} creates failed: ${sample.join(' | ')}`);
    // The running proxy has indexed them as they came; wait until the last one routes.
    const probe = makeClients(inst.proxy.url, inst.creds, 1)[0]!;
    const lastPath = `/clusters/root:idx-${count - 1}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`;
    for (let i = 0; i < 600; i++) { if ((await probe.request('GET', lastPath)).status === 200) break; await sleep(50); }
    probe.close();
    await sleep(3000); // let the shards' controllers finish initializing
    const restarts: { spawnToServingMs: number; readyMs: number; rss: number }[] = [];
    for (let r = 0; r < 3; r++) {
      await stopProc(inst.proxy, 'SIGKILL');
      const s0 = performance.now();
      inst.proxy = await inst.startProxy();
      const c = makeClients(inst.proxy.url, inst.creds, 1)[0]!;
      let served = NaN;
      for (let i = 0; i < 10_000; i++) {
        if ((await c.request('GET', lastPath)).status === 200) { served = performance.now() - s0; break; }
        await sleep(2);
      }
      c.close();
      await sleep(2000);
      restarts.push({ spawnToServingMs: round(served, 1), readyMs: inst.proxy.readyMs, rss: rssOf(inst.proxy.child.pid!) });
    }
    const best = [...restarts].sort((a, b) => a.spawnToServingMs - b.spawnToServingMs)[1]!;
    const rssPerEntry = (best.rss - emptyRss) / count;
    const heap = await indexHeapBytes(inst);
    const perEntry = heap.bytes / heap.entries;
    const rows: Row[] = [
      { scenario: 'proxy-restart', figure: `front-proxy restart → serving, ${fmtInt(count)} indexed`, value: `${fmtInt(best.spawnToServingMs)} ms`, target: '< 2 s', met: best.spawnToServingMs < 2000 ? 'yes' : 'NO',
        detail: `median of 3 SIGKILL+restart runs (${restarts.map((x) => x.spawnToServingMs).join(', ')} ms from spawn, Node start-up included; its own start ${restarts.map((x) => x.readyMs).join(', ')} ms); the ${fmtInt(count)} logical clusters were created at ${fmtInt(count / fillSeconds)}/s` },
      { scenario: 'proxy-restart', figure: 'front-proxy index memory per logical cluster', value: `${fmtInt(perEntry)} B`, target: '< 500 B', met: perEntry < 500 ? 'yes' : 'NO',
        detail: `live heap of the proxy's index (ShardDirectory, routing only) over ${fmtInt(heap.entries)} logical clusters after a full GC: ${round(heap.bytes / 2 ** 20, 1)} MiB; the proxy process's RSS 2 s after a restart (no forced GC): ${round(best.rss / 2 ** 20, 1)} MiB with the index − ${round(emptyRss / 2 ** 20, 1)} MiB with an empty one = ${fmtInt(rssPerEntry)} B per entry` },
    ];
    return { result: { count, fillSeconds: round(fillSeconds, 1), emptyRss, restarts, indexHeap: heap } as unknown as Json, rows };
  });
}
