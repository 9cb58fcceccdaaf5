/**
 * Admission benchmark `webhook` (issue "Admission control…"): ConfigMap create throughput on one
 * server child with and without one validating webhook that allows everything (its own process,
 * bench/webhook-server.ts), runs alternating A/B/A/B on the same server, medians reported.
 * Target: with the webhook ≥ 50 % of the throughput without.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closeClients, makeClients } from './lib/client.js';
import { runLoad, type LoadResult } from './lib/load.js';
import type { ServerProc } from './lib/procs.js';
import type { Report } from './workspaces.js';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4_000);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const median = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]!; };
const CM = (ns: string) => `/clusters/root/api/v1/namespaces/${ns}/configmaps`;
const VWC = '/clusters/root/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

/**
 * Create throughput without and with an admission configuration (`install` creates it, `remove`
 * deletes it), alternating A/B/A/B on the same server; medians.
 */
async function abRuns(s: ServerProc, clients: ReturnType<typeof makeClients>, install: () => Promise<void>, remove: () => Promise<void>): Promise<{ without: LoadResult[]; withIt: LoadResult[]; ratio: number; a: number; b: number }> {
  const run = (label: string, k: number): Promise<LoadResult> => runLoad({
    clients, warmupMs: k === 0 ? 2000 : 1000, durationMs: DURATION_MS, cpu: s.cpu,
    next: (c, i) => ({ method: 'POST', path: CM('bench'), body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${label}-${k}-${c}-${i}` }, data: { a: 'value-a', b: 'value-b' } }) }),
    ok: (st) => st === 201,
  });
  const without: LoadResult[] = []; const withIt: LoadResult[] = [];
  for (let k = 0; k < 2; k++) {
    without.push(await run('plain', k));
    await install();
    await new Promise((r) => setTimeout(r, 500)); // the watch cache has it
    withIt.push(await run('admitted', k));
    await remove();
    await new Promise((r) => setTimeout(r, 500));
  }
  const a = median(without.map((r) => r.opsPerSec));
  const b = median(withIt.map((r) => r.opsPerSec));
  return { without, withIt, ratio: b / a, a, b };
}

async function mustCreate(c: ReturnType<typeof makeClients>[number], path: string, body: object): Promise<void> {
  const r = await c.request('POST', path, JSON.stringify(body));
  if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${r.body.toString().slice(0, 200)}`);
}

/** `vap`: create throughput with a ValidatingAdmissionPolicy of three CEL rules vs without. Target ≥ 80 %. */
export async function policyBench(s: ServerProc): Promise<Report> {
  const clients = makeClients(s.url, s.creds, CONCURRENCY);
  try {
    const admin = clients[0]!;
    await admin.request('POST', '/clusters/root/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
    const base = '/clusters/root/apis/admissionregistration.k8s.io/v1';
    const { without, withIt, ratio, a, b } = await abRuns(s, clients, async () => {
      await mustCreate(admin, `${base}/validatingadmissionpolicies`, {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'three-rules' },
        spec: {
          matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
          validations: [
            { expression: '!has(object.data) || size(object.data) <= 16' },
            { expression: 'size(object.metadata.name) < 200' },
            { expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)" },
          ],
        },
      });
      await mustCreate(admin, `${base}/validatingadmissionpolicybindings`, {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'three-rules' },
        spec: { policyName: 'three-rules', validationActions: ['Deny'] },
      });
    }, async () => {
      await admin.request('DELETE', `${base}/validatingadmissionpolicybindings/three-rules`);
      await admin.request('DELETE', `${base}/validatingadmissionpolicies/three-rules`);
    });
    const last = withIt.at(-1)!;
    return {
      result: { withoutOpsPerSec: without.map((r) => round(r.opsPerSec)), withPolicyOpsPerSec: withIt.map((r) => round(r.opsPerSec)), ratio: round(ratio, 3), withPolicyLatencyMs: last.latencyMs, cpu: last.cpu },
      rows: [{
        scenario: 'vap', figure: `ConfigMap creates/s with a ValidatingAdmissionPolicy of 3 CEL rules vs without (${CONCURRENCY} clients)`,
        value: `${round(b, 0)} vs ${round(a, 0)}/s: ${round(ratio * 100)} %`, target: '≥ 80 %', met: ratio >= 0.8 ? 'yes' : 'NO',
        detail: `runs without ${without.map((r) => round(r.opsPerSec, 0)).join('/')}, with ${withIt.map((r) => round(r.opsPerSec, 0)).join('/')}; with: p50 ${round(last.latencyMs.p50, 2)} ms, p99 ${round(last.latencyMs.p99, 2)} ms, ${withIt.reduce((n, r) => n + r.errors, 0)} errors; server CPU ${last.cpu.server} %`,
      }],
    };
  } finally { closeClients(clients); }
}

/** Starts bench/webhook-server.ts in its own process; resolves to its URLs and CA bundle. */
async function startWebhookServer(): Promise<{ proc: ChildProcess; url: string; origin: string; caBundle: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', new URL('./webhook-server.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`webhook server exited (${code})`)));
  });
  return { proc, ...(JSON.parse(first) as { url: string; origin: string; caBundle: string }) };
}

/** `webhook`: create throughput with one allow-all validating webhook vs without. */
export async function webhookBench(s: ServerProc): Promise<Report> {
  const started = await startWebhookServer();
  const hook = started.proc;
  const clients = makeClients(s.url, s.creds, CONCURRENCY);
  try {
    const { url, caBundle } = started;
    const admin = clients[0]!;
    await admin.request('POST', '/clusters/root/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'allow-all' },
      webhooks: [{ name: 'allow.bench.example.com', clientConfig: { url, caBundle }, sideEffects: 'None', admissionReviewVersions: ['v1'], rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }],
    };
    const { without, withIt: withHook, ratio, a, b } = await abRuns(s, clients, async () => mustCreate(admin, VWC, config), async () => { await admin.request('DELETE', `${VWC}/allow-all`); });
    const errors = withHook.reduce((n, r) => n + r.errors, 0);
    const last = withHook.at(-1)!;
    return {
      result: { withoutOpsPerSec: without.map((r) => round(r.opsPerSec)), withWebhookOpsPerSec: withHook.map((r) => round(r.opsPerSec)), ratio: round(ratio, 3), errors, withWebhookLatencyMs: last.latencyMs, cpu: last.cpu },
      rows: [{
        scenario: 'webhook', figure: `ConfigMap creates/s with one allow-all validating webhook vs without (${CONCURRENCY} clients)`,
        value: `${round(b, 0)} vs ${round(a, 0)}/s: ${round(ratio * 100)} %`, target: '≥ 50 %', met: ratio >= 0.5 ? 'yes' : 'NO',
        detail: `runs without ${without.map((r) => round(r.opsPerSec, 0)).join('/')}, with ${withHook.map((r) => round(r.opsPerSec, 0)).join('/')}; with: p50 ${round(last.latencyMs.p50, 2)} ms, p99 ${round(last.latencyMs.p99, 2)} ms, ${errors} errors; CPU % of a core: server ${last.cpu.server}, loadgen ${last.cpu.loadgen}, other (webhook server) ${last.cpu.other}`,
      }],
    };
  } finally {
    closeClients(clients);
    hook.kill();
  }
}

/**
 * `conversion`: a CRD with versions v1 (storage) and v2 converted by a webhook (its own process,
 * bench/webhook-server.ts `/convert`). Figures: a list of 1,000 objects read in v2 — the first
 * read (one ConversionReview of 1,000 objects) and later reads (converted forms kept per stored
 * object version) — against the same list in v1; and creates/s in v2 (two conversions each:
 * to storage, and none back: the answer is the written object) against creates in v1. No target
 * is set by the issue: the figures say what a conversion webhook costs.
 */
export async function conversionBench(s: ServerProc): Promise<Report> {
  const started = await startWebhookServer();
  const clients = makeClients(s.url, s.creds, CONCURRENCY);
  const N = 1000;
  try {
    const admin = clients[0]!;
    const schema = (field: string) => ({ openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } } } });
    await mustCreate(admin, '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gadgets.bench.example.com' },
      spec: {
        group: 'bench.example.com', scope: 'Namespaced', names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: schema('size') }, { name: 'v2', served: true, storage: false, schema: schema('replicas') }],
        conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: `${started.origin}/convert`, caBundle: started.caBundle }, conversionReviewVersions: ['v1'] } },
      },
    });
    await admin.request('POST', '/clusters/root/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
    const path = (v: string) => `/clusters/root/apis/bench.example.com/${v}/namespaces/bench/gadgets`;
    for (let t = 0; ; t++) {
      if ((await admin.request('GET', path('v2'))).status === 200) break;
      if (t > 200) throw new Error('gadgets v2 not served');
      await new Promise((r) => setTimeout(r, 50));
    }
    // N objects written in v1 (no conversion), 50 at a time.
    for (let i = 0; i < N; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => mustCreate(clients[j % clients.length]!, path('v1'), { apiVersion: 'bench.example.com/v1', kind: 'Gadget', metadata: { name: `g-${i + j}` }, spec: { size: i + j } })));
    }
    const timed = async (p: string): Promise<number> => {
      const t0 = performance.now();
      const r = await admin.request('GET', p);
      if (r.status !== 200) throw new Error(`GET ${p}: ${r.status}`);
      return performance.now() - t0;
    };
    const cold = await timed(path('v2'));
    const warm: number[] = []; const plain: number[] = [];
    for (let k = 0; k < 15; k++) { warm.push(await timed(path('v2'))); plain.push(await timed(path('v1'))); }
    const create = (v: string, field: string) => runLoad({
      clients, warmupMs: 1000, durationMs: DURATION_MS, cpu: s.cpu,
      next: (c, i) => ({ method: 'POST', path: path(v), body: JSON.stringify({ apiVersion: `bench.example.com/${v}`, kind: 'Gadget', metadata: { name: `${v}-${c}-${i}` }, spec: { [field]: i } }) }),
      ok: (st) => st === 201,
    });
    const inV1 = await create('v1', 'size');
    const inV2 = await create('v2', 'replicas');
    const ratio = inV2.opsPerSec / inV1.opsPerSec;
    return {
      result: { listColdMs: round(cold, 1), listWarmP50Ms: round(median(warm), 1), listV1P50Ms: round(median(plain), 1), createV1OpsPerSec: round(inV1.opsPerSec), createV2OpsPerSec: round(inV2.opsPerSec), ratio: round(ratio, 3), errors: inV2.errors, createV2LatencyMs: inV2.latencyMs, cpu: inV2.cpu },
      rows: [
        {
          scenario: 'conversion', figure: `list of ${N} custom resources in a webhook-converted version (first read: one ConversionReview of ${N})`,
          value: `${round(cold, 0)} ms first, p50 ${round(median(warm), 1)} ms after (v1: p50 ${round(median(plain), 1)} ms)`, target: '—', met: '—',
          detail: `later reads use the converted form kept per stored object version; the webhook is called again only for objects written since`,
        },
        {
          scenario: 'conversion', figure: `creates/s in the webhook-converted version vs the storage version (${CONCURRENCY} clients)`,
          value: `${round(inV2.opsPerSec, 0)} vs ${round(inV1.opsPerSec, 0)}/s: ${round(ratio * 100)} %`, target: '—', met: '—',
          detail: `one ConversionReview per create (to the storage version); v2: p50 ${round(inV2.latencyMs.p50, 2)} ms, p99 ${round(inV2.latencyMs.p99, 2)} ms, ${inV2.errors} errors; CPU % of a core: server ${inV2.cpu.server}, loadgen ${inV2.cpu.loadgen}, other (webhook server) ${inV2.cpu.other}`,
        },
      ],
    };
  } finally {
    closeClients(clients);
    started.proc.kill();
  }
}
