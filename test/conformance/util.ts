/**
 * Small helpers the conformance cases share: status checks, polling, watch event waits, and a
 * CRD factory that waits until the CRD is Established and its resource is served.
 */
import type { Res } from '../helpers.js';
import type { CaseContext, WatchStream } from './types.js';

/** Throws unless `r.status` is one of `status`; returns `r`. */
export function expectStatus(r: Res, status: number | number[], what: string): Res {
  const want = Array.isArray(status) ? status : [status];
  if (!want.includes(r.status)) throw new Error(`${what}: expected HTTP ${want.join(' or ')}, got ${r.status}: ${r.body.slice(0, 400)}`);
  return r;
}

/** Throws with `message` unless `cond`. */
export function expect(cond: unknown, message: string): void {
  if (!cond) throw new Error(message);
}

/** Sleeps `ms` milliseconds. */
export function pause(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }

/** Polls `fn` every 50 ms until it returns a truthy value (returned); throws naming `what` after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not true after ${ms} ms (last ${JSON.stringify(v)?.slice(0, 300)})`);
    await pause(50);
  }
}

/** Waits for at least `n` events; throws listing what arrived when fewer came within `ms`. */
export async function events(w: WatchStream, n: number, ms = 5000): Promise<any[]> {
  const got = await w.waitFor(n, ms);
  if (got.length < n) throw new Error(`expected ${n} watch events, got ${got.length}: ${summarize(got)}`);
  return got;
}

/** `TYPE name` of each event, for messages and comparisons. */
export function summarize(evs: any[]): string {
  return evs.map((e) => `${e.type} ${e.object?.metadata?.name ?? ''}`.trim()).join(', ');
}

/** Asserts the event types (and names when given) of a watch equal `want`, allowing `settleMs` for extra ones to show up. */
export async function expectEvents(w: WatchStream, want: string[], settleMs = 300): Promise<void> {
  await events(w, want.length);
  await pause(settleMs);
  const got = w.events.map((e) => (want[0]?.includes(' ') ? `${e.type} ${e.object?.metadata?.name}` : e.type));
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`watch events: expected [${want.join(', ')}], got [${got.join(', ')}]`);
}

/** Content types of the patch flavours. */
export const PATCH = {
  json: { 'content-type': 'application/json-patch+json' },
  merge: { 'content-type': 'application/merge-patch+json' },
  strategic: { 'content-type': 'application/strategic-merge-patch+json' },
  apply: { 'content-type': 'application/apply-patch+yaml' },
} as const;

/** A ConfigMap body. */
export function configMap(name: string, data: Record<string, string> = { a: '1' }, labels?: Record<string, string>): object {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data };
}

/** Creates `n` ConfigMaps named `<prefix>-0000…` in the case's namespace, `parallel` at a time. */
export async function createMany(ctx: CaseContext, prefix: string, n: number, parallel = 16, labels?: Record<string, string>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      expectStatus(await ctx.api('POST', `${ctx.core}/configmaps`, configMap(`${prefix}-${String(i).padStart(4, '0')}`, { i: String(i) }, labels)), 201, `create ${prefix}-${i}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** A served custom resource: its CRD name and paths. */
export interface Crd {
  name: string;
  group: string;
  plural: string;
  kind: string;
  /** Collection path of the CRs of `version` (in the case's namespace when namespaced). */
  path(version?: string): string;
  /** `/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions/<name>`. */
  crdPath: string;
}

/** Options of `makeCrd`. */
export interface CrdOptions {
  plural?: string;
  kind?: string;
  group?: string;
  scope?: 'Namespaced' | 'Cluster';
  /** Full `spec.versions`; default one version `v1` with `schema`, `subresources` and `columns`. */
  versions?: any[];
  schema?: any;
  subresources?: any;
  columns?: any[];
  /** Skip waiting for Established (for CRDs expected to be rejected, use the API directly). */
  noWait?: boolean;
  /** More `spec` fields (`conversion`, …). */
  spec?: Record<string, unknown>;
}

/** The default schema: `spec` and `status` objects that keep unknown fields. */
export const OPEN_SCHEMA = {
  type: 'object',
  properties: {
    spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
  },
};

/** A CRD body for `makeCrd`'s options. */
export function crdBody(ctx: CaseContext, o: CrdOptions = {}): any {
  const plural = o.plural ?? 'widgets';
  const kind = o.kind ?? 'Widget';
  const group = o.group ?? `c${ctx.uid}.conformance.example.com`;
  const versions = o.versions ?? [{
    name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: o.schema ?? OPEN_SCHEMA },
    ...(o.subresources ? { subresources: o.subresources } : {}),
    ...(o.columns ? { additionalPrinterColumns: o.columns } : {}),
  }];
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: { group, scope: o.scope ?? 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` }, versions, ...o.spec },
  };
}

/** Creates a CRD, waits until it is Established and its first served version answers a list. */
export async function makeCrd(ctx: CaseContext, o: CrdOptions = {}): Promise<Crd> {
  const body = crdBody(ctx, o);
  const { group, names: { plural, kind }, scope } = body.spec;
  const name = body.metadata.name;
  const crdPath = `${ctx.cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
  expectStatus(await ctx.api('POST', `${ctx.cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, body), 201, `create CRD ${name}`);
  const served = body.spec.versions.find((v: any) => v.served)?.name ?? 'v1';
  const path = (version = served) => `${ctx.cluster}/apis/${group}/${version}${scope === 'Namespaced' ? `/namespaces/${ctx.ns}` : ''}/${plural}`;
  if (!o.noWait) {
    await until(`CRD ${name} Established`, async () => (await ctx.api('GET', crdPath)).json?.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True'));
    await until(`${plural}.${group} served`, async () => (await ctx.api('GET', path())).status === 200);
  }
  return { name, group, plural, kind, path, crdPath };
}

/** A custom resource body of `crd`. */
export function cr(crd: Crd, name: string, spec: unknown = {}, version = 'v1', extra: Record<string, unknown> = {}): any {
  return { apiVersion: `${crd.group}/${version}`, kind: crd.kind, metadata: { name }, spec, ...extra };
}

/** RFC 3339 time with microseconds, as `MicroTime` fields need. */
export function microTime(d = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * The in-process webhook server: it plays the part of kube's e2e webhook Pod (the agnhost image's
 * `webhook` and `crd-conversion-webhook` commands) for the paths the webhook, CRD conversion and
 * admission tests use. Only the behaviours were carried over:
 *
 * - `/always-deny`: denies, message `this webhook denies all requests`;
 * - `/always-allow-delay-5s`: waits 5 s, then allows;
 * - `/configmaps`, `/custom-resource`: deny CREATE/UPDATE of an object whose `data` has
 *   `webhook-e2e-test: webhook-disallow` (reason `the configmap contains unwanted key and value`,
 *   `the custom resource contains unwanted data`), and DELETE of one whose old object has
 *   `webhook-e2e-test: webhook-nondeletable` (reason `the … cannot be deleted because it contains
 *   unwanted key and value`); the reason only, no message, as the image does;
 * - `/mutating-configmaps`, `/mutating-custom-resource`: JSON patch adding
 *   `data.mutation-stage-1: yes` when `data.mutation-start` is `yes`, or
 *   `data.mutation-stage-2: yes` (instead) when `data.mutation-stage-1` is `yes`;
 * - `/crd`: denies a CustomResourceDefinition labelled `webhook-e2e-test: webhook-disallow`,
 *   message `the crd contains unwanted label`;
 * - `/add-label`: adds the label `added-label: yes`;
 * - `/crdconvert`: a ConversionReview between `v1` (`hostPort: "host:port"`) and `v2` (`host`,
 *   `port`) of any group; converting a version to itself is an error.
 *
 * Started once per process on 127.0.0.1 with a CA of its own (`caBundle`); the server and its
 * connections do not keep the process alive.
 */
export interface WebhookServer {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** Base64 PEM of the CA that signed the serving certificate, for `clientConfig.caBundle`. */
  caBundle: string;
  /** `{url: <url><path>, caBundle}`. */
  clientConfig(path: string): { url: string; caBundle: string };
  /** Requests received so far: path (without query), query, and the review's operation. */
  requests: { path: string; query: string; operation?: string }[];
  close(): void;
}

let webhookServer: Promise<WebhookServer> | undefined;

/** Starts the webhook server on first use; later calls return the same one. */
export function webhookServerOnce(): Promise<WebhookServer> {
  webhookServer ??= startWebhookServer();
  return webhookServer;
}

/** Closes the webhook server if it was started. */
export async function stopWebhookServer(): Promise<void> {
  const s = webhookServer;
  webhookServer = undefined;
  if (s) (await s).close();
}

type Review = { apiVersion?: string; kind?: string; request?: any };

function admissionResponse(review: Review, response: Record<string, unknown>): object {
  return { apiVersion: review.apiVersion ?? 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid, ...response } };
}

function jsonPatch(ops: object[]): Record<string, unknown> {
  return { allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') };
}

/** Deny-by-data of `/configmaps` and `/custom-resource`. */
function admitData(req: any, what: string, unwanted: string): Record<string, unknown> {
  const obj = req.operation === 'DELETE' ? req.oldObject : req.object;
  const v = obj?.data?.['webhook-e2e-test'];
  if (v === 'webhook-disallow' && (req.operation === 'CREATE' || req.operation === 'UPDATE')) return { allowed: false, status: { reason: unwanted } };
  if (v === 'webhook-nondeletable' && req.operation === 'DELETE') return { allowed: false, status: { reason: `the ${what} cannot be deleted because it contains unwanted key and value` } };
  return { allowed: true };
}

/** Staged mutation of `/mutating-configmaps` and `/mutating-custom-resource`. */
function mutateData(req: any): Record<string, unknown> {
  const data = req.object?.data ?? {};
  let ops: object[] | undefined;
  if (data['mutation-start'] === 'yes') ops = [{ op: 'add', path: '/data/mutation-stage-1', value: 'yes' }];
  if (data['mutation-stage-1'] === 'yes') ops = [{ op: 'add', path: '/data/mutation-stage-2', value: 'yes' }];
  return ops ? jsonPatch(ops) : { allowed: true };
}

function addLabel(req: any): Record<string, unknown> {
  const labels = req.object?.metadata?.labels ?? {};
  if (Object.keys(labels).length === 0) return jsonPatch([{ op: 'add', path: '/metadata/labels', value: { 'added-label': 'yes' } }]);
  if (!('added-label' in labels)) return jsonPatch([{ op: 'add', path: '/metadata/labels/added-label', value: 'yes' }]);
  if (labels['added-label'] !== 'yes') return jsonPatch([{ op: 'replace', path: '/metadata/labels/added-label', value: 'yes' }]);
  return { allowed: true };
}

/** Converts one object between v1 (`hostPort`) and v2 (`host`, `port`); throws a message on failure. */
function convertHostPort(obj: any, desired: string): any {
  const from = String(obj.apiVersion ?? '');
  if (from === desired) throw new Error(`conversion from a version to itself should not call the webhook: ${desired}`);
  const [fromVersion, toVersion] = [from.split('/').pop(), desired.split('/').pop()];
  const out = structuredClone(obj);
  if (fromVersion === 'v1' && toVersion === 'v2') {
    if ('hostPort' in out) {
      const parts = String(out.hostPort).split(':');
      if (parts.length !== 2) throw new Error(`invalid hostPort value \`${out.hostPort}\``);
      delete out.hostPort;
      [out.host, out.port] = parts;
    }
  } else if (fromVersion === 'v2' && toVersion === 'v1') {
    if ('host' in out || 'port' in out) {
      out.hostPort = `${out.host ?? ''}:${out.port ?? ''}`;
      delete out.host;
      delete out.port;
    }
  } else {
    throw new Error(`unexpected conversion version "${desired}"`);
  }
  out.apiVersion = desired;
  return out;
}

function convertReview(review: any): object {
  const req = review.request ?? {};
  try {
    const convertedObjects = (req.objects ?? []).map((o: any) => convertHostPort(o, req.desiredAPIVersion));
    return { apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: req.uid, convertedObjects, result: { status: 'Success' } } };
  } catch (e) {
    return { apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: req.uid, convertedObjects: [], result: { status: 'Failure', message: (e as Error).message } } };
  }
}

async function startWebhookServer(): Promise<WebhookServer> {
  const { createServer } = await import('node:https');
  const { createCA, issueServingCert } = await import('../../src/pki/certs.js');
  const ca = await createCA('conformance-webhook-ca');
  const serving = await issueServingCert(ca, { commonName: 'conformance-webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  const requests: WebhookServer['requests'] = [];
  const server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'https://webhook');
      let review: any;
      try { review = JSON.parse(Buffer.concat(chunks).toString() || '{}'); } catch { review = {}; }
      const ar = review.request ?? {};
      requests.push({ path: u.pathname, query: u.search, operation: ar.operation });
      const send = (status: number, body: object) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      switch (u.pathname) {
        case '/always-deny': return send(200, admissionResponse(review, { allowed: false, status: { message: 'this webhook denies all requests' } }));
        case '/always-allow-delay-5s': {
          const t = setTimeout(() => send(200, admissionResponse(review, { allowed: true, status: { message: 'this webhook allows all requests' } })), 5000);
          t.unref();
          return undefined;
        }
        case '/configmaps': return send(200, admissionResponse(review, admitData(ar, 'configmap', 'the configmap contains unwanted key and value')));
        case '/custom-resource': return send(200, admissionResponse(review, admitData(ar, 'custom resource', 'the custom resource contains unwanted data')));
        case '/mutating-configmaps':
        case '/mutating-custom-resource': return send(200, admissionResponse(review, mutateData(ar)));
        case '/crd': return send(200, admissionResponse(review, ar.object?.metadata?.labels?.['webhook-e2e-test'] === 'webhook-disallow'
          ? { allowed: false, status: { message: 'the crd contains unwanted label' } } : { allowed: true }));
        case '/add-label': return send(200, admissionResponse(review, addLabel(ar)));
        case '/crdconvert': return send(200, convertReview(review));
        default: return send(404, { error: `no handler for ${u.pathname}` });
      }
    });
  });
  server.on('connection', (s) => s.unref());
  server.on('secureConnection', (s) => s.unref());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  server.unref();
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  return {
    url, caBundle, requests,
    clientConfig: (path) => ({ url: `${url}${path}`, caBundle }),
    close: () => { server.closeAllConnections(); server.close(); },
  };
}
