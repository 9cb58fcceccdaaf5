/**
 * Runs the conformance cases (test/conformance/cases.ts) against a running server and returns
 * one result per case. Run directly, it starts a Redis and a server of its own, runs every case
 * and prints the results as the Markdown table of docs/conformance.md:
 *
 *   node --import tsx test/conformance/run.ts [--only <id-substring>]
 */
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:https';
import { pathToFileURL } from 'node:url';
import { call, watch, startRedis, startTestServer, type Creds, type Res } from '../helpers.js';
import { CASES, NOT_APPLICABLE } from './cases.js';
import type { Case, CaseContext, CaseResult } from './types.js';
import { stopWebhookServer, until } from './util.js';

/** Server options the suite needs: a short watch history, so that expired continue tokens and resourceVersions can be produced quickly. */
export const CONFORMANCE_SERVER_OPTIONS = { watchHistorySize: 200, bookmarkIntervalMs: 300 };

/** A server to run against: its URL and client credentials (admin). */
export interface Target { url: string; creds: Creds }

let seq = 0;

const agents = new WeakMap<Target, Agent>();

/** One HTTPS request over a keep-alive connection pool per target (TLS handshakes dominate otherwise). */
export function apiCall(target: Target, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
  let agent = agents.get(target);
  if (!agent) { agent = new Agent({ keepAlive: true, maxSockets: 32, ca: target.creds.ca, cert: target.creds.cert, key: target.creds.key }); agents.set(target, agent); }
  return call(target, target.creds, method, path, body, headers, agent);
}

/** Closes the keep-alive connections of a target. */
export function closeTarget(target: Target): void {
  agents.get(target)?.destroy();
  agents.delete(target);
}

/** Runs one case in a namespace of its own (created first, deleted afterwards in the background). */
export async function runCase(target: Target, c: Case, timeoutMs = 30_000): Promise<CaseResult> {
  const uid = `${(++seq).toString(36)}${randomBytes(3).toString('hex')}`;
  const ns = `conf-${c.id}`.slice(0, 50).replace(/-+$/, '') + `-${uid}`;
  const cluster = '/clusters/root';
  const ctx: CaseContext = {
    api: (method, path, body, headers) => apiCall(target, method, path, body, headers),
    watch: (path) => watch(target, target.creds, path),
    cluster, ns, core: `${cluster}/api/v1/namespaces/${ns}`, uid,
  };
  const started = Date.now();
  const base = { id: c.id, area: c.area, source: c.source, ...(c.knownGap ? { knownGap: c.knownGap } : {}) };
  try {
    const created = await ctx.api('POST', `${cluster}/api/v1/namespaces`, { metadata: { name: ns } });
    if (created.status !== 201) throw new Error(`creating namespace ${ns}: ${created.status} ${created.body}`);
    // As kube's e2e framework (framework.go, WaitForKubeRootCAInNamespace): the namespace's
    // kube-root-ca.crt is there before a case lists or watches its ConfigMaps.
    await until(`kube-root-ca.crt in ${ns}`, async () => (await ctx.api('GET', `${ctx.core}/configmaps/kube-root-ca.crt`)).status === 200, 5_000);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, rej) => { timer = setTimeout(() => rej(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs); });
    try { await Promise.race([c.check(ctx), timeout]); } finally { clearTimeout(timer); }
    return { ...base, passed: true, ms: Date.now() - started };
  } catch (e) {
    return { ...base, passed: false, error: e instanceof Error ? e.message : String(e), ms: Date.now() - started };
  } finally {
    void ctx.api('DELETE', `${cluster}/api/v1/namespaces/${ns}`).catch(() => undefined);
  }
}

/** Runs every case (or those whose id contains `only`) one after the other. */
export async function runConformance(target: Target, only?: string): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  for (const c of CASES) if (!only || c.id.includes(only)) out.push(await runCase(target, c));
  return out;
}

/** The summary line: passed of applicable (known gaps count as not passed). */
export function summary(results: CaseResult[]): string {
  return `${results.filter((r) => r.passed).length} passed of ${results.length} applicable`;
}

/** Markdown table rows of results, then the not-applicable list. */
export function markdown(results: CaseResult[]): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const lines = ['| id | upstream source | result |', '|---|---|---|'];
  for (const r of results) {
    const result = r.passed ? 'passed' : r.knownGap ? `failed (known gap: ${esc(r.knownGap)})` : `FAILED: ${esc(r.error ?? '')}`;
    lines.push(`| \`${r.id}\` | ${esc(r.source.file)}: "${esc(r.source.it)}" | ${result} |`);
  }
  lines.push('', `**${summary(results)}**`, '', '| upstream source | why not applicable |', '|---|---|');
  for (const n of NOT_APPLICABLE) lines.push(`| ${esc(n.source.file)}: "${esc(n.source.it)}" | ${esc(n.reason)} |`);
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--only');
  const only = i > 0 ? process.argv[i + 1] : undefined;
  const redis = await startRedis();
  const srv = await startTestServer(redis, CONFORMANCE_SERVER_OPTIONS);
  try {
    const results = await runConformance(srv, only);
    console.log(markdown(results));
    for (const r of results) console.error(`${r.passed ? 'ok  ' : 'FAIL'} ${r.id} ${r.ms} ms${r.passed ? '' : `: ${r.error}`}`);
  } finally {
    await stopWebhookServer();
    closeTarget(srv);
    await srv.stop();
    await redis.stop();
  }
}
