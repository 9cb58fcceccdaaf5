/**
 * Outbound calls to webhooks configured by users: admission webhooks
 * (src/admission/webhooks.ts) and CRD conversion webhooks (src/apiextensions/conversion.ts).
 * Both are HTTPS POSTs of a JSON review to a `clientConfig.url`, trusting the configuration's
 * `caBundle` (else the system's roots), as k8s.io/apiserver/pkg/util/webhook's client does.
 *
 * kcp-ts has no Services to route to (a shard is not a cluster with a Service network), so
 * `clientConfig.service` is refused when a configuration is written: `url` is the way, as it is
 * in kcp.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { Pool } from 'undici';
import type { StatusCause } from './errors.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {});

/** Where a webhook is called: a keep-alive pool to its origin, and its path. */
export interface WebhookEndpoint {
  url: string;
  /** Keep-alive connections to the webhook's origin, trusting its CA bundle. */
  pool: Pool;
  /** Path (and query) of the URL. */
  path: string;
}

const pools = new Map<string, Pool>();

/**
 * The endpoint of a `clientConfig` (`{url, caBundle}`; caBundle is base64 PEM). One connection
 * pool per origin and CA bundle, kept while the process runs (configurations come and go; their
 * origins are few). Throws a TypeError when the URL does not parse (validated on write first).
 */
export function webhookEndpoint(clientConfig: unknown): WebhookEndpoint {
  const cc = asObj(clientConfig);
  const url = String(cc.url ?? '');
  const caBundle = typeof cc.caBundle === 'string' && cc.caBundle ? cc.caBundle : undefined;
  const u = new URL(url);
  const key = `${u.origin} ${createHash('sha256').update(caBundle ?? '').digest('hex')}`;
  let pool = pools.get(key);
  if (!pool) {
    const host = u.hostname.replace(/^\[|\]$/g, '');
    pool = new Pool(u.origin, {
      connections: 64, pipelining: 1, keepAliveTimeout: 30_000,
      connect: { ...(caBundle ? { ca: Buffer.from(caBundle, 'base64').toString() } : {}), ...(isIP(host) ? {} : { servername: host }) },
    });
    pools.set(key, pool);
  }
  return { url, pool, path: `${u.pathname || '/'}${u.search}` };
}

/**
 * POSTs a JSON body and resolves to the parsed JSON answer. The URL carries kube's
 * `?timeout=<N>s` (client-go's request timeout parameter, which webhook servers may read).
 * Rejects with an Error whose message says what failed, in kube's words where kube has them:
 * `Post "<url>": context deadline exceeded` after `timeoutMs`, `Post "<url>": dial tcp <host>:
 * connect: connection refused`, a status ≥ 300, a body that is not JSON.
 */
export async function postJSON(endpoint: WebhookEndpoint, body: object, timeoutMs: number): Promise<Obj> {
  const timeoutParam = `timeout=${Math.round(timeoutMs / 1000)}s`;
  const path = `${endpoint.path}${endpoint.path.includes('?') ? '&' : '?'}${timeoutParam}`;
  const url = `${endpoint.url}${endpoint.url.includes('?') ? '&' : '?'}${timeoutParam}`;
  const res = await endpoint.pool.request({
    method: 'POST', path, body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs),
  }).catch((err: Error & { code?: string }) => {
    if (err.name === 'TimeoutError' || err.name === 'AbortError' || /timeout/i.test(err.message)) throw new Error(`Post "${url}": context deadline exceeded`);
    if (err.code === 'ECONNREFUSED') throw new Error(`Post "${url}": dial tcp ${new URL(endpoint.url).host}: connect: connection refused`);
    throw new Error(`Post "${url}": ${err.message}`);
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`the server responded with ${res.statusCode}`);
  try {
    return asObj(JSON.parse(text));
  } catch {
    throw new Error('the response is not JSON');
  }
}

/**
 * kube's `webhook.ValidateWebhookURL(…, forceHttps=true)` (k8s.io/apiserver/pkg/util/webhook),
 * which admission webhook configurations and CRD conversion webhooks share: the details of what
 * is wrong with a URL (empty: valid).
 */
export function webhookURLErrors(raw: string): string[] {
  let u: URL;
  try { u = new URL(raw); } catch (e) { return [`url must be a valid URL: ${(e as Error).message}`]; }
  const errs: string[] = [];
  if (u.protocol !== 'https:') errs.push("'https' is the only allowed URL scheme");
  if (!u.hostname) errs.push('host must be specified');
  if (u.username || u.password) errs.push('user information is not permitted in the URL');
  if (u.hash) errs.push('fragments are not permitted in the URL');
  if (u.search) errs.push('query parameters are not permitted in the URL');
  return errs;
}

/** What is wrong with a `caBundle` (base64 of PEM certificates), if anything. */
export function caBundleError(caBundle: unknown): string | undefined {
  if (caBundle === undefined || caBundle === null) return undefined;
  return typeof caBundle === 'string' && Buffer.from(caBundle, 'base64').toString().includes('-----BEGIN CERTIFICATE-----')
    ? undefined : 'must be a base64-encoded PEM certificate bundle';
}

/**
 * Validation of an admission webhook's `clientConfig`: exactly one of url or service; `service`
 * is refused (see the module's comment); the URL as `webhookURLErrors`; the caBundle as
 * `caBundleError`. `path` is the field path of the clientConfig.
 */
export function validateWebhookClientConfig(clientConfig: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const bad = (field: string, message: string, reason = 'FieldValueInvalid') => causes.push({ reason, field, message });
  if (!clientConfig || typeof clientConfig !== 'object' || Array.isArray(clientConfig)) {
    bad(path, 'Required value: exactly one of url or service is required', 'FieldValueRequired');
    return causes;
  }
  const cc = clientConfig as Obj;
  if (cc.service !== undefined && cc.service !== null) {
    bad(`${path}.service`, 'Forbidden: service references are not supported: kcp-ts has no Services to route to; use url', 'FieldValueForbidden');
  } else if (typeof cc.url !== 'string' || !cc.url) {
    bad(path, 'Required value: exactly one of url or service is required', 'FieldValueRequired');
  } else {
    for (const e of webhookURLErrors(cc.url)) bad(`${path}.url`, `Invalid value: ${JSON.stringify(cc.url)}: ${e}`);
  }
  const ca = caBundleError(cc.caBundle);
  if (ca) bad(`${path}.caBundle`, `Invalid value: ${ca}`);
  return causes;
}
