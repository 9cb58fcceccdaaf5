/**
 * `npm run bench -- syncer`: the syncer between a kcp-ts shard and a real physical cluster
 * (kube-apiserver, etcd and kube-controller-manager as test/hostcluster.ts starts them), the
 * syncer a child process (`kcp-ts syncer`, `--qps 2000 --burst 4000`).
 *
 * The namespace `load` is scheduled as a user would: a Location of the SyncTarget and a Placement
 * selecting it.
 * - spec down: ConfigMaps labelled for the SyncTarget created upstream at BENCH_SYNCER_RATE/s
 *   (default 100) for BENCH_SYNCER_SECONDS (default 10); latency from the create's answer to the
 *   downstream copy's ADDED event (a watch on the physical cluster);
 * - status up: the status of synced widgets (a CRD with `/status` downstream, published upstream by
 *   API negotiation in the workspace's `kubernetes` export and bound there) written downstream
 *   at the same rate; latency from the downstream write's answer to the upstream MODIFIED event
 *   showing it;
 * - memory: resident set of the syncer process holding BENCH_SYNCER_OBJECTS (default 10,000)
 *   synced ConfigMaps, all downstream.
 * The shard and the syncer run compiled (dist/, as `kcp-ts start` and `kcp-ts syncer` run), each
 * its own process; on 2 cores the shard, the physical cluster, the syncer and the load generator
 * share them. Before each measured phase the same load runs for BENCH_SYNCER_WARMUP_SECONDS
 * (default 3) unmeasured, so the figures are of processes whose code is compiled by the JIT, as
 * in a syncer that has been running. Each latency row also gives the CPU time every process used
 * per write during the phase (the shard with its Redis; the syncer; kube-apiserver, etcd,
 * kube-controller-manager; this load generator), read from /proc, and the load average: the
 * latency depends on the machine's load, the CPU per write does not.
 *
 * BENCH_CPU_PROF=<dir>: the syncer runs with `--cpu-prof` into that directory (stopped with SIGTERM
 * so the profile is written). BENCH_SYNCER_TRACE=1: a watch upstream records when each ConfigMap
 * got the syncer's finalizer, and the spec-down row splits its latency there (the watch adds load).
 * BENCH_SYNCER_LOG=<file>: the syncer's log, whole.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startHostCluster } from '../test/hostcluster.js';
import { adminCreds, createWorkspace } from '../test/helpers.js';
import { RemoteInformer } from '../src/client/informer.js';
import { RestClient } from '../src/client/rest.js';
import { connectionFromKubeconfigFile } from '../src/syncer/cli.js';
import { syncTargetKey } from '../src/workload/keys.js';
import { summarize, type LatencySummary } from './lib/load.js';
import { freshRoot, startServerProc, treeCpuSeconds, type CpuSampler } from './lib/procs.js';
import type { Report, Row } from './workspaces.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const RATE = Number(process.env.BENCH_SYNCER_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_SYNCER_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_SYNCER_WARMUP_SECONDS ?? 3);
const OBJECTS = Number(process.env.BENCH_SYNCER_OBJECTS ?? 10_000);
const log = (s: string) => process.stderr.write(`[syncer] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

const widgetsCRD = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.bench.example.com' },
  spec: {
    group: 'bench.example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

async function must(c: RestClient, method: string, path: string, body?: unknown, ok = [200, 201]): Promise<any> {
  const r = await c.request(method, path, body, method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {});
  if (!ok.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 300)}`);
  return r.json;
}

/** Open-loop: `fn(i)` every 1/RATE s for `seconds`; resolves when all answered. */
async function paced(fn: (i: number) => Promise<void>, seconds = SECONDS): Promise<void> {
  const n = RATE * seconds; const t0 = performance.now(); const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    all.push(fn(i));
  }
  await Promise.all(all);
}

/**
 * CPU time (ms) used so far by this process (`load`), by each named process with its descendants
 * (the shard with its Redis, the syncer), and by each other direct child by command name (the
 * physical cluster's kube-apiserver, etcd, kube-controller-manager).
 */
function cpuByProcess(named: Map<number, string>): Map<string, number> {
  const out = new Map<string, number>();
  const u = process.cpuUsage();
  out.set('load', (u.user + u.system) / 1000);
  for (const [pid, name] of named) out.set(name, treeCpuSeconds(pid) * 1000);
  const tick = 1000 / 100; // USER_HZ
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || named.has(Number(d))) continue;
    let stat: string;
    try { stat = readFileSync(`/proc/${d}/stat`, 'utf8'); } catch { continue; }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    if (Number(f[1]) !== process.pid) continue; // ppid
    out.set(comm, (out.get(comm) ?? 0) + (Number(f[11]) + Number(f[12])) * tick); // utime + stime
  }
  return out;
}

/** CPU ms per write of each process between two {@link cpuByProcess} readings, e.g. `syncer 1.2, kube-apiserver 3.4`. */
function cpuPerWrite(before: Map<string, number>, after: Map<string, number>, writes: number): string {
  const parts = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / writes] as const).filter(([, v]) => v >= 0.05);
  parts.sort((a, b) => b[1] - a[1]);
  const total = parts.reduce((a, [, v]) => a + v, 0);
  return `CPU ms per write: ${parts.map(([k, v]) => `${k} ${round(v, 2)}`).join(', ')} (total ${round(total, 2)})`;
}

/** The shard's `apiserver_request_total`, summed by verb and resource (e.g. `PATCH configmaps`). */
async function shardRequests(c: RestClient): Promise<Map<string, number>> {
  const r = await c.request('GET', '/metrics');
  const out = new Map<string, number>();
  for (const m of r.body.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const l = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const k = `${l.verb} ${l.resource}`;
    out.set(k, (out.get(k) ?? 0) + Number(m[2]));
  }
  return out;
}

/** Requests the shard served per write between two {@link shardRequests} readings, e.g. `shard requests per write: POST configmaps 1, WATCH … 0.01`. */
function requestsPerWrite(before: Map<string, number>, after: Map<string, number>, writes: number): string {
  const parts = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / writes] as const).filter(([, v]) => v >= 0.01).sort((a, b) => b[1] - a[1]);
  return `shard requests per write: ${parts.map(([k, v]) => `${k} ${round(v, 2)}`).join(', ')}`;
}

/** The shard's CPU ms per write split over its event-loop thread, its other threads (GC, the controller-queue thread), its storage Redis and queue Redis. */
function shardSplit(from: ReturnType<CpuSampler['snapshot']>, to: ReturnType<CpuSampler['snapshot']>, writes: number): string {
  const ms = (a: number, b: number) => round(((b - a) * 1000) / writes, 2);
  return `shard split: event loop ${ms(from.serverMainThread, to.serverMainThread)}, other threads ${ms(from.server - from.serverMainThread, to.server - to.serverMainThread)}, storage Redis ${ms(from.redis, to.redis)}, queue Redis ${ms(from.redisQueue, to.redisQueue)} ms`;
}

/** The shard's event-loop delay over a phase, as a row's detail. */
const loopText = (d: { p50: number; p99: number; max: number }) => `shard event-loop delay p50 ${d.p50} / p99 ${d.p99} / max ${d.max} ms`;

const load = () => loadavg().map((l) => round(l, 1)).join(' ');

function rssMiB(p: ChildProcess): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The scenario (see the module comment). */
export async function syncerBench(): Promise<Report> {
  const [host, srv] = await Promise.all([startHostCluster(), startServerProc(freshRoot(), { label: 'shard' })]);
  let syncer: ChildProcess | undefined;
  const informers: RemoteInformer[] = [];
  const up = new RestClient({ url: srv.url, ...adminCreds(srv.root) }, 64);
  const down = new RestClient(connectionFromKubeconfigFile(host.kubeconfig), 64);
  try {
    const cluster = await createWorkspace({ url: srv.url, creds: srv.creds }, 'bench');
    const ws = '/clusters/root:bench';
    // Widgets exist downstream; API negotiation publishes them in the workspace's `kubernetes` export.
    await host.kubectl(['apply', '-f', '-'], { input: JSON.stringify(widgetsCRD) });
    const st = await must(up, 'POST', `${ws}/apis/workload.kcp.io/v1alpha1/synctargets`, { apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', metadata: { name: 'bench' } });
    const key = syncTargetKey(cluster, 'bench');
    const labels = { [`state.workload.kcp.io/${key}`]: 'Sync' };
    await must(up, 'POST', `${ws}/api/v1/namespaces`, { metadata: { name: 'load', labels: { ...labels, app: 'load' } } });
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, 'syncer')}`] : [];
    syncer = spawn(process.execPath, [...prof, join(REPO, 'bin', 'kcp-ts'), 'syncer', `--from-kubeconfig=${join(srv.root, 'admin.kubeconfig')}`, `--from-cluster=${cluster}`,
      '--sync-target-name=bench', `--sync-target-uid=${st.metadata.uid}`, `--kubeconfig=${host.kubeconfig}`, '--resources=widgets.bench.example.com', '--qps=2000', '--burst=4000'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let syncerLog = '';
    const logFile = process.env.BENCH_SYNCER_LOG ? createWriteStream(process.env.BENCH_SYNCER_LOG) : undefined;
    syncer.stderr!.on('data', (d) => { syncerLog = (syncerLog + String(d)).slice(-4000); logFile?.write(d); });
    for (let i = 0; ; i++) {
      const s = await must(up, 'GET', `${ws}/apis/workload.kcp.io/v1alpha1/synctargets/bench`);
      if ((s.status?.syncedResources ?? []).some((r: { resource?: string; state?: string }) => r.resource === 'widgets' && r.state === 'Accepted')) break;
      if (i > 1200) throw new Error(`widgets not negotiated\n${syncerLog}`);
      await sleep(100);
    }
    await must(up, 'POST', `${ws}/apis/apis.kcp.io/v1alpha2/apibindings`, { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:bench', name: 'kubernetes' } } } });
    for (let i = 0; i < 300; i++) { const r = await up.request('GET', `${ws}/apis/bench.example.com/v1/widgets`); if (r.status === 200) break; await sleep(100); }
    // The namespace scheduler owns the state labels (a namespace no Placement selects loses them
    // after 5 s, and its objects follow): a Location of the SyncTarget and a Placement of `load`.
    const gvr = { group: 'workload.kcp.io', version: 'v1alpha1', resource: 'synctargets' };
    await must(up, 'POST', `${ws}/apis/scheduling.kcp.io/v1alpha1/locations`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: 'bench', labels: { bench: 'yes' } }, spec: { resource: gvr, instanceSelector: {} } });
    await must(up, 'POST', `${ws}/apis/scheduling.kcp.io/v1alpha1/placements`, { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'load' }, spec: { locationResource: gvr, locationSelectors: [{ matchLabels: { bench: 'yes' } }], namespaceSelector: { matchLabels: { app: 'load' } } } });
    for (let i = 0; ; i++) {
      const p = await must(up, 'GET', `${ws}/apis/scheduling.kcp.io/v1alpha1/placements/load`);
      if (p.metadata?.annotations?.['internal.workload.kcp.io/synctarget'] === key) break;
      if (i > 600) throw new Error(`the Placement did not choose the SyncTarget: ${JSON.stringify(p.status)}\n${syncerLog}`);
      await sleep(100);
    }
    const selector = `labelSelector=${encodeURIComponent(`internal.workload.kcp.io/cluster=${key}`)}`;
    // Arrival times of downstream ConfigMaps and upstream widget statuses.
    const arrivedDown = new Map<string, number>();
    const statusUp = new Map<string, number>();
    informers.push(new RemoteInformer(down, { path: '/api/v1/configmaps', query: selector }, {
      replace: (items) => { for (const o of items) if (!arrivedDown.has(o.metadata.name!)) arrivedDown.set(o.metadata.name!, performance.now()); },
      event: (type, o) => { if (type === 'ADDED' && !arrivedDown.has(o.metadata.name!)) arrivedDown.set(o.metadata.name!, performance.now()); },
    }));
    informers.push(new RemoteInformer(up, { path: `${ws}/apis/bench.example.com/v1/widgets` }, {
      replace: () => undefined,
      event: (_t, o) => { const mark = (o as { status?: { mark?: string } }).status?.mark; if (mark && !statusUp.has(mark)) statusUp.set(mark, performance.now()); },
    }));
    // Optional: when each ConfigMap got the syncer's finalizer upstream.
    const finalized = new Map<string, number>();
    if (process.env.BENCH_SYNCER_TRACE) {
      informers.push(new RemoteInformer(up, { path: `${ws}/api/v1/namespaces/load/configmaps` }, {
        replace: () => undefined,
        event: (_t, o) => { if (o.metadata.finalizers?.length && !finalized.has(o.metadata.name!)) finalized.set(o.metadata.name!, performance.now()); },
      }));
    }
    await Promise.all(informers.map((i) => i.hasSynced));
    const waitFor = async (what: string, done: () => boolean, ms: number) => {
      const end = Date.now() + ms;
      while (!done()) { if (Date.now() > end) throw new Error(`${what} not done after ${ms} ms\n${syncerLog}`); await sleep(50); }
    };

    // Warm-up: one object through, so the syncer is listening; then the phase's load, unmeasured.
    await must(up, 'POST', `${ws}/api/v1/namespaces/load/configmaps`, { metadata: { name: 'warm', labels }, data: { a: '1' } });
    await waitFor('warm-up', () => arrivedDown.has('warm'), 60_000);
    const named = new Map([[srv.pid, 'shard'], [syncer.pid!, 'syncer']]);
    if (WARMUP_SECONDS > 0) {
      log(`warm-up: ${RATE} ConfigMap creates/s for ${WARMUP_SECONDS} s`);
      await paced((i) => must(up, 'POST', `${ws}/api/v1/namespaces/load/configmaps`, { metadata: { name: `warm-${i}`, labels }, data: { i: String(i) } }), WARMUP_SECONDS);
      await waitFor('warm-up', () => arrivedDown.size >= RATE * WARMUP_SECONDS + 1, 120_000);
      await sleep(1000);
    }

    log(`spec down: ${RATE} ConfigMap creates/s for ${SECONDS} s`);
    const sent = new Map<string, number>();
    const specLoad = [load()];
    const specCpu0 = cpuByProcess(named);
    const specReq0 = await shardRequests(up);
    const specSplit0 = srv.cpu.snapshot();
    await srv.loopDelay();
    await paced(async (i) => {
      const name = `cm-${i}`;
      await must(up, 'POST', `${ws}/api/v1/namespaces/load/configmaps`, { metadata: { name, labels }, data: { i: String(i) } });
      sent.set(name, performance.now());
    });
    await waitFor('spec down', () => [...sent.keys()].every((n) => arrivedDown.has(n)), 120_000)
      .catch((err: Error) => { throw new Error(`${[...sent.keys()].filter((n) => !arrivedDown.has(n)).length} of ${sent.size} not downstream: ${err.message}`); });
    const specCpu = `${cpuPerWrite(specCpu0, cpuByProcess(named), sent.size)}; ${loopText(await srv.loopDelay())}; ${shardSplit(specSplit0, srv.cpu.snapshot(), sent.size)}; ${requestsPerWrite(specReq0, await shardRequests(up), sent.size)}`;
    specLoad.push(load());
    const specDown = summarize([...sent].map(([n, t]) => Math.max(0, arrivedDown.get(n)! - t)));
    const split = finalized.size ? (() => {
      const toFin = summarize([...sent].filter(([n]) => finalized.has(n)).map(([n, t]) => Math.max(0, finalized.get(n)! - t)));
      const fromFin = summarize([...sent].filter(([n]) => finalized.has(n)).map(([n]) => arrivedDown.get(n)! - finalized.get(n)!));
      return `; create → finalizer seen upstream p50 ${round(toFin.p50)} / p99 ${round(toFin.p99)} ms, finalizer seen → downstream ADDED p50 ${round(fromFin.p50)} / p99 ${round(fromFin.p99)} ms`;
    })() : '';

    log(`status up: ${RATE} downstream status writes/s for ${SECONDS} s`);
    const widgets = Math.min(100, RATE);
    for (let i = 0; i < widgets; i++) await must(up, 'POST', `${ws}/apis/bench.example.com/v1/namespaces/load/widgets`, { apiVersion: 'bench.example.com/v1', kind: 'Widget', metadata: { name: `w-${i}`, labels } });
    // The downstream namespace of `load`: the one the ConfigMaps went to.
    const cms = await must(down, 'GET', `/api/v1/configmaps?${selector}&limit=1`);
    const downstreamNs = cms.items[0].metadata.namespace as string;
    for (let i = 0; i < widgets; i++) {
      for (let a = 0; ; a++) { const r = await down.request('GET', `/apis/bench.example.com/v1/namespaces/${downstreamNs}/widgets/w-${i}`); if (r.status === 200) break; if (a > 600) throw new Error(`widget w-${i} not downstream\n${syncerLog}`); await sleep(100); }
    }
    const written = new Map<string, number>();
    const writeStatus = async (mark: string, i: number) => {
      const r = await down.request('PATCH', `/apis/bench.example.com/v1/namespaces/${downstreamNs}/widgets/w-${i % widgets}/status`, { status: { mark } }, { contentType: 'application/merge-patch+json' });
      if (r.status !== 200) throw new Error(`downstream status: ${r.status} ${r.body.slice(0, 200)}`);
    };
    if (WARMUP_SECONDS > 0) {
      log(`warm-up: ${RATE} downstream status writes/s for ${WARMUP_SECONDS} s`);
      await paced((i) => writeStatus(`warm-${i}`, i), WARMUP_SECONDS);
      await sleep(2000);
    }
    const statusLoad = [load()];
    const statusCpu0 = cpuByProcess(named);
    const statusReq0 = await shardRequests(up);
    const statusSplit0 = srv.cpu.snapshot();
    await srv.loopDelay();
    await paced(async (i) => {
      const mark = `m-${i}`;
      await writeStatus(mark, i);
      written.set(mark, performance.now());
    });
    // A widget's later mark may overtake an earlier one not yet carried up: those are never seen; measured are those seen.
    await sleep(3000);
    // The 3 s wait is idle: it adds little CPU, but the figure is per write of the whole phase.
    const statusCpu = `${cpuPerWrite(statusCpu0, cpuByProcess(named), written.size)}; ${loopText(await srv.loopDelay())}; ${shardSplit(statusSplit0, srv.cpu.snapshot(), written.size)}; ${requestsPerWrite(statusReq0, await shardRequests(up), written.size)}`;
    statusLoad.push(load());
    const seen = [...written].filter(([m]) => statusUp.has(m));
    const statusUpLat = summarize(seen.map(([m, t]) => Math.max(0, statusUp.get(m)! - t)));

    log(`memory: ${OBJECTS} synced ConfigMaps`);
    const existing = RATE * (SECONDS + WARMUP_SECONDS) + 1;
    const more = Math.max(0, OBJECTS - existing);
    const t0 = performance.now();
    for (let base = 0; base < more; base += 50) {
      await Promise.all(Array.from({ length: Math.min(50, more - base) }, (_, j) =>
        must(up, 'POST', `${ws}/api/v1/namespaces/load/configmaps`, { metadata: { name: `fill-${base + j}`, labels }, data: { i: String(base + j), pad: 'x'.repeat(200) } })));
    }
    await waitFor('all synced', () => arrivedDown.size >= OBJECTS, 900_000);
    const fillSeconds = (performance.now() - t0) / 1000;
    await sleep(2000);
    const rss = rssMiB(syncer);

    const lat = (s: LatencySummary) => `p50 ${round(s.p50)} ms, p99 ${round(s.p99)} ms, max ${round(s.max)} ms, n=${s.count}`;
    const rows: Row[] = [
      { scenario: 'syncer', figure: `spec down (upstream create → downstream object) p99 at ${RATE} writes/s`, value: `${round(specDown.p99)} ms`, target: '< 100 ms', met: specDown.p99 < 100 ? 'yes' : 'NO', detail: `${lat(specDown)}${split}; load average ${specLoad.join(' → ')}; ${specCpu}` },
      { scenario: 'syncer', figure: `status up (downstream status → upstream) p99 at ${RATE} writes/s`, value: `${round(statusUpLat.p99)} ms`, target: '< 100 ms', met: statusUpLat.p99 < 100 ? 'yes' : 'NO', detail: `${lat(statusUpLat)} (of ${written.size} written; the rest overtaken by a later write of the same widget); load average ${statusLoad.join(' → ')}; ${statusCpu}` },
      { scenario: 'syncer', figure: `syncer resident memory with ${OBJECTS.toLocaleString('en-US')} synced objects`, value: `${round(rss)} MiB`, target: '< 200 MiB', met: rss < 200 ? 'yes' : 'NO', detail: `${more} more ConfigMaps created 50 at a time and synced in ${round(fillSeconds)} s` },
    ];
    return { result: { rate: RATE, seconds: SECONDS, specDown, statusUp: statusUpLat, statusWritten: written.size, objects: OBJECTS, rssMiB: round(rss), fillSeconds: round(fillSeconds) }, rows };
  } finally {
    if (syncer && syncer.exitCode === null) {
      // SIGTERM first: a CPU profile is written only on a clean exit.
      const exited = new Promise((r) => syncer!.once('exit', r));
      syncer.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (syncer.exitCode === null && syncer.signalCode === null) syncer.kill('SIGKILL');
    }
    await Promise.all(informers.map((i) => i.stop()));
    up.close(); down.close();
    await srv.stop(); await host.stop();
  }
}
