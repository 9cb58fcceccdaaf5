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
    const run = (label: string, k: number): Promise<LoadResult> => runLoad({
      clients, warmupMs: k === 0 ? 2000 : 1000, durationMs: DURATION_MS, cpu: s.cpu,
      next: (c, i) => ({ method: 'POST', path: CM('bench'), body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${label}-${k}-${c}-${i}` }, data: { a: 'value-a', b: 'value-b' } }) }),
      ok: (st) => st === 201,
    });
    const without: LoadResult[] = []; const withHook: LoadResult[] = [];
    for (let k = 0; k < 2; k++) {
      without.push(await run('plain', k));
      const created = await admin.request('POST', VWC, JSON.stringify(config));
      if (created.status !== 201) throw new Error(`creating the webhook configuration: ${created.status} ${created.body.toString().slice(0, 200)}`);
      await new Promise((r) => setTimeout(r, 500)); // the watch cache has it
      withHook.push(await run('hooked', k));
      await admin.request('DELETE', `${VWC}/allow-all`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const a = median(without.map((r) => r.opsPerSec));
    const b = median(withHook.map((r) => r.opsPerSec));
    const ratio = b / a;
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
