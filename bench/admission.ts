/**
 * Admission benchmark `webhook` (issue "Admission control…"): ConfigMap create throughput on one
 * server child with and without one validating webhook that allows everything (its own process,
 * bench/webhook-server.ts), runs alternating A/B/A/B on the same server, medians reported.
 * Target: with the webhook ≥ 50 % of the throughput without.
 */
import { spawn } from 'node:child_process';
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

/** `webhook`: create throughput with one allow-all validating webhook vs without. */
export async function webhookBench(s: ServerProc): Promise<Report> {
  const hook = spawn(process.execPath, ['--import', 'tsx', new URL('./webhook-server.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const clients = makeClients(s.url, s.creds, CONCURRENCY);
  try {
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: hook.stdout! }).once('line', resolve);
      hook.once('exit', (code) => reject(new Error(`webhook server exited (${code})`)));
    });
    const { url, caBundle } = JSON.parse(first) as { url: string; caBundle: string };
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
