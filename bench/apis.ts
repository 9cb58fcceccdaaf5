/**
 * Shared-API benchmarks (issue "Shared APIs: APIResourceSchema, APIExport, APIBinding and the
 * virtual workspaces"), on one server child:
 *
 * - `apis-bind`: in `BENCH_APIS_BIND` (default 200) fresh consumer workspaces, one after another:
 *   APIBinding POSTed → the bound resource is in the consumer's discovery and a Widget create
 *   answers 201 (polled every 2 ms). Target p99 < 500 ms.
 * - `apis-vw`: `BENCH_APIS_CONSUMERS` (default 1,000) consumer workspaces bound to one export,
 *   10 Widgets each; then (1) memory per binding: server heap (and RSS) after a full GC, before
 *   and after binding all consumers (each consumer's discovery read once, so its API set is
 *   built; a history window of 1,000 events refilled with small writes before each
 *   measurement), divided by the number of bindings — target < 8 KiB; (2) the provider's wildcard list
 *   through the apiexport virtual workspace (all 10,000 Widgets, median and max of 20) — target
 *   < 200 ms; (3) watch delivery through the virtual workspace at `BENCH_APIS_WATCH_RATE`
 *   (default 100) writes/s for 20 s spread over the consumers, write sent → event received —
 *   target p99 < 50 ms.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import { closeClients, makeClients, type Client } from './lib/client.js';
import { summarize } from './lib/load.js';
import type { ServerProc } from './lib/procs.js';
import { nowMs, openWatches } from './lib/watchers.js';
import type { Report } from './workspaces.js';

type Json = Record<string, any>;
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const FIXTURES = join(import.meta.dirname, '..', 'test', 'fixtures', 'apis');
const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const WIDGETS = (cluster: string, ns = 'default') => `/clusters/${cluster}/apis/example.com/v1/namespaces/${ns}/widgets`;
const BINDINGS = (cluster: string) => `/clusters/${cluster}/apis/apis.kcp.io/v1alpha2/apibindings`;

async function mustOk(c: Client, method: string, path: string, body?: unknown): Promise<Json> {
  const r = await c.request(method, path, body === undefined ? undefined : JSON.stringify(body));
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} → ${r.status}: ${r.body.toString().slice(0, 300)}`);
  return JSON.parse(r.body.toString()) as Json;
}

/** Creates workspaces under root with `clients`, waits until all are Ready; returns their logical cluster names. */
async function createWorkspaces(clients: Client[], names: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let k = 0;
  await Promise.all(clients.map(async (c) => {
    while (k < names.length) {
      const name = names[k++]!;
      await mustOk(c, 'POST', WS('root'), { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
    }
  }));
  k = 0;
  await Promise.all(clients.map(async (c) => {
    while (k < names.length) {
      const name = names[k++]!;
      for (let i = 0; ; i++) {
        const ws = await mustOk(c, 'GET', `${WS('root')}/${name}`);
        if (ws.status?.phase === 'Ready') { out.set(name, ws.spec.cluster); break; }
        if (i > 3000) throw new Error(`workspace ${name} not Ready`);
        await sleep(10);
      }
    }
  }));
  return out;
}

/** The provider workspace with the Widget schema and export; resolves once the export has its identity. */
async function setUpProvider(c: Client): Promise<string> {
  const clusters = await createWorkspaces([c], ['provider']);
  for (const f of ['widgets-schema.yaml', 'widgets-export.yaml']) {
    const obj = parse(readFileSync(join(FIXTURES, f), 'utf8')) as Json;
    const plural = obj.kind === 'APIExport' ? 'apiexports' : 'apiresourceschemas';
    await mustOk(c, 'POST', `/clusters/root:provider/apis/${obj.apiVersion}/${plural}`, obj);
  }
  for (let i = 0; i < 1000; i++) {
    const e = await mustOk(c, 'GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets');
    if (e.status?.identityHash) return clusters.get('provider')!;
    await sleep(10);
  }
  throw new Error('the export got no identity');
}

const bindingBody = { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'widgets' }, spec: { reference: { export: { path: 'root:provider', name: 'widgets' } } } };
const widget = (name: string, t?: string) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ...(t ? { annotations: { t } } : {}) }, spec: { size: 2, color: 'green' } });

/** `apis-bind`: binding created → resource served (discovery and create). */
export async function apisBind(s: ServerProc): Promise<Report> {
  const n = Number(process.env.BENCH_APIS_BIND ?? 200);
  const [c] = makeClients(s.url, s.creds, 1);
  const admin = c!;
  try {
    await setUpProvider(admin);
    const clusters = await createWorkspaces(makeClients(s.url, s.creds, 20), Array.from({ length: n + 20 }, (_, i) => `bind-${i}`));
    const lat: number[] = []; const discoveryLat: number[] = [];
    for (let i = 0; i < n + 20; i++) {
      const cluster = clusters.get(`bind-${i}`)!;
      const t0 = performance.now();
      await mustOk(admin, 'POST', BINDINGS(cluster), bindingBody);
      let tDiscovery = NaN;
      for (;;) {
        if (Number.isNaN(tDiscovery)) {
          const d = await admin.request('GET', `/clusters/${cluster}/apis/example.com/v1`);
          if (d.status === 200 && d.body.includes('"widgets"')) tDiscovery = performance.now();
        }
        if (!Number.isNaN(tDiscovery)) {
          const r = await admin.request('POST', WIDGETS(cluster), JSON.stringify(widget('first')));
          if (r.status === 201) break;
        }
        if (performance.now() - t0 > 10_000) throw new Error(`binding in ${cluster} not served after 10 s`);
        await sleep(2);
      }
      // The first 20 warm up (JIT, connections).
      if (i >= 20) { lat.push(performance.now() - t0); discoveryLat.push(tDiscovery - t0); }
    }
    const l = summarize(lat); const d = summarize(discoveryLat);
    return {
      result: { bindings: n, servedMs: l, discoveryMs: d },
      rows: [{
        scenario: 'apis-bind', figure: `APIBinding created → served (discovery + create 201), ${n} bindings`, value: `p99 ${round(l.p99, 1)} ms`,
        target: 'p99 < 500 ms', met: l.p99 < 500 ? 'yes' : 'NO', detail: `p50 ${round(l.p50, 1)} ms, max ${round(l.max, 1)} ms; in discovery p50 ${round(d.p50, 1)} / p99 ${round(d.p99, 1)} ms; one binding at a time, polled every 2 ms`,
      }],
    };
  } finally { admin.close(); }
}

/** `apis-vw`: 1,000 bound consumers: memory per binding, wildcard list and watch through the virtual workspace. */
export async function apisVirtualWorkspace(s: ServerProc): Promise<Report> {
  const n = Number(process.env.BENCH_APIS_CONSUMERS ?? 1000);
  const perConsumer = 10;
  const rate = Number(process.env.BENCH_APIS_WATCH_RATE ?? 100);
  const seconds = 20;
  const clients = makeClients(s.url, s.creds, 20);
  const admin = clients[0]!;
  try {
    const providerCluster = await setUpProvider(admin);
    const names = Array.from({ length: n }, (_, i) => `c-${i}`);
    const clusters = await createWorkspaces(clients, names);
    log(`apis-vw: ${n} consumer workspaces Ready`);
    // Discovery once in each (builds what an unbound workspace costs), then memory. The watch
    // cache's history window (1,000 events in this scenario, see run.ts) is filled with small
    // writes before each measurement, so the figure is what a binding retains, not its events.
    const touch = async () => { let k = 0; await Promise.all(clients.map(async (c) => { while (k < n) { const cl = clusters.get(names[k++]!)!; await c.request('GET', `/clusters/${cl}/apis`); } })); };
    await mustOk(admin, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'churn' } });
    const churn = async () => {
      let k = 0;
      await Promise.all(clients.map(async (c) => { while (k < 2_000) { k++; await c.request('PATCH', '/clusters/root/api/v1/namespaces/default/configmaps/churn', JSON.stringify({ data: { k: String(k % 10) } }), 'application/merge-patch+json'); } }));
    };
    await touch();
    await churn();
    await sleep(1000);
    const mem0 = await s.mem();
    let k = 0;
    await Promise.all(clients.map(async (c) => { while (k < n) await mustOk(c, 'POST', BINDINGS(clusters.get(names[k++]!)!), bindingBody); }));
    k = 0;
    await Promise.all(clients.map(async (c) => {
      while (k < n) {
        const cl = clusters.get(names[k++]!)!;
        for (let i = 0; ; i++) {
          const b = await mustOk(c, 'GET', `${BINDINGS(cl)}/widgets`);
          if (b.status?.phase === 'Bound') break;
          if (i > 3000) throw new Error(`binding in ${cl} not Bound`);
          await sleep(10);
        }
      }
    }));
    await touch();
    await churn();
    await sleep(1000);
    const mem1 = await s.mem();
    const rssPerBinding = (mem1.rss - mem0.rss) / n;
    const heapPerBinding = (mem1.heapUsed - mem0.heapUsed) / n;
    log(`apis-vw: ${n} bindings Bound; RSS ${round(rssPerBinding, 0)} B, heap ${round(heapPerBinding, 0)} B per binding`);
    // 10 widgets in each consumer.
    k = 0;
    const total = n * perConsumer;
    await Promise.all(clients.map(async (c) => {
      while (k < total) {
        const i = k++;
        await mustOk(c, 'POST', WIDGETS(clusters.get(names[Math.floor(i / perConsumer)]!)!), widget(`w-${i % perConsumer}`));
      }
    }));
    const vw = `/services/apiexport/${providerCluster}/widgets/clusters/*`;
    // Wildcard list through the virtual workspace.
    const listMs: number[] = [];
    let bytes = 0; let items = 0;
    for (let i = 0; i < 23; i++) {
      const t0 = performance.now();
      const r = await admin.request('GET', `${vw}/apis/example.com/v1/widgets`);
      const ms = performance.now() - t0;
      if (r.status !== 200) throw new Error(`virtual workspace list → ${r.status}: ${r.body.toString().slice(0, 200)}`);
      if (i >= 3) listMs.push(ms); // 3 warm-up lists
      bytes = r.body.length; items = (JSON.parse(r.body.toString()) as Json).items.length;
    }
    if (items !== total) throw new Error(`the wildcard list has ${items} widgets, want ${total}`);
    const l = summarize(listMs);
    log(`apis-vw: wildcard list of ${items} widgets (${round(bytes / 2 ** 20, 1)} MiB): p50 ${round(l.p50, 1)} ms`);
    // Watch through the virtual workspace while consumers' widgets are updated at `rate`/s.
    const watch = await openWatches(s.url, s.creds, [`${vw}/apis/example.com/v1/widgets?watch=true&resourceVersion=0`], 1);
    await sleep(2000);
    watch.measureFrom = nowMs();
    const cpu0 = s.cpu.snapshot();
    const writes = rate * seconds;
    const t0 = performance.now();
    let sent = 0; let errors = 0;
    const inflight: Promise<void>[] = [];
    while (sent < writes) {
      const due = t0 + (sent * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const i = sent++;
      const cl = clusters.get(names[(i * 7919) % n]!)!;
      const c = clients[i % clients.length]!;
      inflight.push(c.request('PATCH', `${WIDGETS(cl)}/w-${i % perConsumer}`, JSON.stringify({ metadata: { annotations: { t: String(nowMs()) } } }), 'application/merge-patch+json')
        .then((r) => { if (r.status !== 200) errors++; }, () => { errors++; }));
    }
    await Promise.all(inflight);
    const drain = performance.now();
    while (watch.latencies.n < writes - errors && performance.now() - drain < 5000) await sleep(20);
    const cpu = s.cpu.report(cpu0);
    watch.close();
    const w = summarize(watch.latencies.values());
    return {
      result: {
        consumers: n, widgets: total, memory: { rssBytesPerBinding: Math.round(rssPerBinding), heapBytesPerBinding: Math.round(heapPerBinding), before: mem0, after: mem1 },
        wildcardListMs: l, listBytes: bytes, watch: { rate, seconds, writes, errors, received: watch.latencies.n, latencyMs: w, errorsSeen: watch.errors }, cpu,
      },
      rows: [
        {
          scenario: 'apis-vw', figure: `memory per APIBinding (${fmtInt(n)} bindings, server heap retained after a full GC)`, value: `${fmtInt(heapPerBinding)} B`,
          target: '< 8 KiB', met: heapPerBinding < 8192 ? 'yes' : 'NO',
          detail: `RSS delta ${fmtInt(rssPerBinding)} B per binding (RSS ${round(mem0.rss / 2 ** 20, 1)} → ${round(mem1.rss / 2 ** 20, 1)} MiB; V8 keeps freed pages, so RSS moves by tens of MiB between runs)`,
        },
        {
          scenario: 'apis-vw', figure: `virtual workspace wildcard list, ${fmtInt(total)} Widgets in ${fmtInt(n)} consumers`, value: `p50 ${round(l.p50, 1)} ms`,
          target: '< 200 ms', met: l.p50 < 200 ? 'yes' : 'NO', detail: `max ${round(l.max, 1)} ms over 20 lists; ${round(bytes / 2 ** 20, 1)} MiB JSON, one keep-alive client`,
        },
        {
          scenario: 'apis-vw', figure: `watch delivery through the virtual workspace, ${rate} writes/s over ${fmtInt(n)} consumers`, value: `p99 ${round(w.p99, 1)} ms`,
          target: 'p99 < 50 ms', met: w.p99 < 50 ? 'yes' : 'NO', detail: `p50 ${round(w.p50, 1)} ms, max ${round(w.max, 1)} ms; ${fmtInt(watch.latencies.n)}/${fmtInt(writes)} events, ${errors} write errors; server CPU ${round(cpu.server, 0)} %`,
        },
      ],
    };
  } finally { closeClients(clients); }
}
