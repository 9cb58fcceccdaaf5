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
    spec: { group, scope: o.scope ?? 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` }, versions },
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
