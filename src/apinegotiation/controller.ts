/**
 * The API negotiation controller, one reconcile per workspace (key `<cluster>|kubernetes`) on the
 * one controller runtime, doing in order what kcp v0.11 spreads over four controllers
 * (pkg/reconciler/apis/apiresource, workload/apiexportcreate, workload/apiexport,
 * workload/synctargetexports; names and rules in ./negotiation.ts):
 * 1. **NegotiatedAPIResources**: one per group/version/resource of the workspace's
 *    APIResourceImports, its schema the LCD of the compatible imports; each import's status gets
 *    `Compatible` (False with reason `IncompatibleSchema` and the comparison's errors — never
 *    dropped silently) and `Available` (compatible and published). A negotiated resource whose
 *    imports are all gone is deleted.
 * 2. **The APIExport `kubernetes`** (kcp's `TemporaryComputeServiceExportName`), created once the
 *    workspace has a SyncTarget and something negotiated, annotated
 *    `extra.apis.kcp.io/compute.workload.kcp.io: "true"`: for each resource (the newest version
 *    negotiated, kube-aware order) an APIResourceSchema `rev-<rv>.<plural>.<group|core>` owned by the
 *    export, a new one only when the negotiated spec changed; the export lists the current ones
 *    and unreferenced schemas it owns are deleted. Negotiated resources in the export get
 *    `Published: True`; one whose schema the API refuses as an APIResourceSchema gets
 *    `Published: False` (reason `InvalidSchema`, the API's message) and the export keeps what it
 *    served for it, so one bad import never holds up the workspace's other resources.
 * 3. **SyncTarget `status.syncedResources`** of every SyncTarget of the workspace from the exports
 *    it supports (none listed: `kubernetes`), each resource `Accepted` or `Incompatible` against
 *    that SyncTarget's own import.
 *
 * Nothing is written that did not change, so a reconcile caused by its own writes ends there.
 * Cost: linear in the workspace's imports and SyncTargets (each comparison linear in the schema:
 * src/apiextensions/schemacompat.ts), one import's comparison per turn of the event loop;
 * SyncTarget heartbeats do not enqueue (only changes of `spec.supportedAPIExports` or
 * `status.syncedResources`).
 */
import { isStatus } from '../apimachinery/errors.js';
import { setCondition, type Condition } from '../apimachinery/conditions.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { isObj } from '../apimachinery/objects.js';
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type CacheEntry, type WatchCache } from '../storage/watchcache.js';
import {
  AVAILABLE, COMPATIBLE, INCOMPATIBLE_SCHEMA, PUBLISHED, compareKubeAwareVersions, conditionsOf, gvrOf, negotiationSteps, sameSchemaSpec,
  schemaGroupResource, schemaName, syncedResources, toAPIResourceSchemaSpec, type Negotiated,
} from './negotiation.js';
import { API_VERSION_ANNOTATION } from './importer.js';
import type { ReconcileResult } from '../controllers/runtime.js';

/** kcp v0.11's name of the export of negotiated resources (`TemporaryComputeServiceExportName`). */
export const KUBERNETES_EXPORT = 'kubernetes';
/** kcp's `ComputeAPIExportAnnotationKey`, set on the export this controller creates. */
export const COMPUTE_API_EXPORT_ANNOTATION = 'extra.apis.kcp.io/compute.workload.kcp.io';

export const IMPORTS_GR = 'apiresource.kcp.io/apiresourceimports';
export const NEGOTIATED_GR = 'apiresource.kcp.io/negotiatedapiresources';
export const SYNC_TARGETS_GR = 'workload.kcp.io/synctargets';
const EXPORTS_GR = 'apis.kcp.io/apiexports';
const SCHEMAS_GR = 'apis.kcp.io/apiresourceschemas';

type Obj = Record<string, unknown>;

/** What the reconciler reads and writes. */
export interface NegotiationDeps {
  cache: WatchCache;
  imports: Store;
  negotiated: Store;
  syncTargets: Store;
  exports: Store;
  schemas: Store;
  scope: (cluster: string) => RequestScope;
}

/** The controller key of a workspace. */
export function negotiationKey(cluster: string): string { return `${cluster}|${KUBERNETES_EXPORT}`; }

async function read(store: Store, scope: RequestScope, e: CacheEntry): Promise<KubeObject> {
  await store.prepare([e]);
  return store.decodeEntry(e);
}

function sameConditions(a: readonly Condition[], b: readonly Condition[]): boolean {
  const strip = (c: readonly Condition[]) => JSON.stringify(c.map(({ lastTransitionTime: _t, ...rest }) => rest));
  return strip(a) === strip(b);
}

/** Conditions with `c` set, or without the type when `c` is only a type. */
function withCondition(conds: Condition[], c: Condition | { type: string; remove: true }): Condition[] {
  if ('remove' in c) return conds.filter((x) => x.type !== c.type);
  const { lastTransitionTime: _t, ...rest } = c;
  const old = conds.find((x) => x.type === c.type);
  if (old && old.status === rest.status && old.reason === rest.reason && old.message === rest.message) return conds;
  return setCondition(conds, rest as Condition);
}

/** The reconciler (see the module comment). Keys: {@link negotiationKey}. */
export function negotiationReconciler(deps: NegotiationDeps): (key: string) => Promise<ReconcileResult | void> {
  return async (key) => {
    const cluster = key.slice(0, key.indexOf('|'));
    const scope = deps.scope(cluster);
    await deps.imports.syncCache();
    const imports = deps.cache.list(IMPORTS_GR, cluster).map((e) => entryObject<KubeObject>(e));
    const negotiatedEntries = new Map(deps.cache.list(NEGOTIATED_GR, cluster).map((e) => [e.name, e] as const));
    const publishedNow = (name: string) => {
      const e = negotiatedEntries.get(name);
      return e ? conditionsOf(entryObject<KubeObject>(e)).some((c) => c.type === PUBLISHED && c.status === 'True') : false;
    };
    // One import at a time with a turn of the event loop between them: a workspace with many
    // imports never holds the shard's loop for more than one comparison.
    const steps = negotiationSteps(imports, publishedNow);
    let step = steps.next();
    while (!step.done) { await new Promise<void>((resolve) => setImmediate(resolve)); step = steps.next(); }
    const result = step.value;

    // 1. NegotiatedAPIResources.
    const written = new Map<string, KubeObject>();
    for (const n of result.resources.values()) {
      const e = negotiatedEntries.get(n.name);
      const old = e ? await read(deps.negotiated, scope, e) : undefined;
      const spec = { ...n.spec, publish: (old?.spec as Obj | undefined)?.publish === true };
      const annotations = { [API_VERSION_ANNOTATION]: n.gvr.group ? `${n.gvr.group}/${n.gvr.version}` : n.gvr.version, ...(n.approved ? { 'api-approved.kubernetes.io': n.approved } : {}) };
      if (!old) {
        const json = await deps.negotiated.create(scope, { apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'NegotiatedAPIResource', metadata: { name: n.name, annotations }, spec });
        written.set(n.name, JSON.parse(json) as KubeObject);
      } else if (JSON.stringify(old.spec) !== JSON.stringify(spec)) {
        const { json } = await deps.negotiated.update(scope, n.name, { ...old, metadata: { ...old.metadata, annotations: { ...old.metadata.annotations, ...annotations } }, spec });
        written.set(n.name, JSON.parse(json) as KubeObject);
      } else {
        written.set(n.name, old);
      }
    }
    for (const [name] of negotiatedEntries) {
      if (result.resources.has(name)) continue;
      try { await deps.negotiated.delete(scope, name); } catch (err) { if (!isStatus(err, 404)) throw err; }
    }

    // 2. The export and its schemas.
    const refused = new Map<string, string>();
    const published = await publishExport(deps, cluster, scope, [...result.resources.values()], written, refused);

    // NegotiatedAPIResource and import conditions.
    for (const [name, obj] of written) {
      const isPublished = published.has(name);
      const why = refused.get(name);
      const conds = withCondition(conditionsOf(obj), isPublished ? { type: PUBLISHED, status: 'True' }
        : why !== undefined ? { type: PUBLISHED, status: 'False', reason: 'InvalidSchema', message: why }
          : { type: PUBLISHED, status: 'False', reason: 'NotExported', message: `not in APIExport ${KUBERNETES_EXPORT}` });
      if (!sameConditions(conds, conditionsOf(obj))) await deps.negotiated.update(scope, name, { ...obj, status: { ...(obj.status as Obj ?? {}), conditions: conds } }, 'status');
    }
    for (const imp of imports) {
      const verdict = result.verdicts.get(imp.metadata.name!);
      if (!verdict) continue;
      let conds = conditionsOf(imp);
      const negotiatedName = `${gvrOf(imp).plural}.${gvrOf(imp).version}.${gvrOf(imp).group || 'core'}`;
      if (verdict.compatible) {
        conds = withCondition(conds, { type: COMPATIBLE, status: 'True' });
        conds = withCondition(conds, published.has(negotiatedName) ? { type: AVAILABLE, status: 'True' } : { type: AVAILABLE, remove: true });
      } else {
        conds = withCondition(conds, { type: COMPATIBLE, status: 'False', reason: INCOMPATIBLE_SCHEMA, message: verdict.message ?? '' });
        conds = withCondition(conds, { type: AVAILABLE, status: 'False', reason: INCOMPATIBLE_SCHEMA, message: 'the schema is not compatible with the negotiated one' });
      }
      if (!sameConditions(conds, conditionsOf(imp))) {
        try {
          await deps.imports.update(scope, imp.metadata.name!, { ...imp, status: { ...(imp.status as Obj ?? {}), conditions: conds } }, 'status');
        } catch (err) {
          if (!isStatus(err, 404)) throw err; // deleted meanwhile: its deletion enqueued the workspace again
        }
      }
    }

    // 3. SyncTargets' synced resources.
    await updateSyncTargets(deps, cluster, scope, imports);
  };
}

/** The export's schema names, whichever version the store serves. */
function exportSchemaNames(exp: KubeObject): string[] {
  const spec = (exp.spec ?? {}) as Obj;
  if (Array.isArray(spec.latestResourceSchemas)) return spec.latestResourceSchemas.map(String);
  return Array.isArray(spec.resources) ? (spec.resources as Obj[]).map((r) => String(r.schema)) : [];
}

function withSchemaNames(exp: KubeObject, names: string[], version: string): KubeObject {
  const spec = { ...(exp.spec as Obj ?? {}) };
  if (version === 'v1alpha1') spec.latestResourceSchemas = names;
  else spec.resources = names.map((n) => { const gr = schemaGroupResource(n)!; const i = gr.indexOf('.'); const g = gr.slice(i + 1); return { name: gr.slice(0, i), group: g === 'core' ? '' : g, schema: n, storage: { crd: {} } }; });
  return { ...exp, spec };
}

/**
 * Step 2 of the module comment.
 * @param refused filled with the negotiated resources whose schema the API refused (name → message)
 * @returns the names of the negotiated resources the export serves in their current form
 */
async function publishExport(deps: NegotiationDeps, cluster: string, scope: RequestScope, resources: Negotiated[], written: Map<string, KubeObject>, refused: Map<string, string>): Promise<Set<string>> {
  const published = new Set<string>();
  const exportEntry = deps.cache.getEntry(EXPORTS_GR, cluster, '', KUBERNETES_EXPORT);
  let exp = exportEntry ? await read(deps.exports, scope, exportEntry) : undefined;
  if (!exp) {
    if (!resources.length || !deps.cache.count(SYNC_TARGETS_GR, cluster)) return published;
    const json = await deps.exports.create(scope, {
      apiVersion: `apis.kcp.io/${deps.exports.desc.version}`, kind: 'APIExport',
      metadata: { name: KUBERNETES_EXPORT, annotations: { [COMPUTE_API_EXPORT_ANNOTATION]: 'true' } }, spec: {},
    });
    exp = JSON.parse(json) as KubeObject;
  }
  // The newest negotiated version of each group/resource.
  const byGR = new Map<string, Negotiated>();
  for (const n of resources) {
    const gr = `${n.gvr.plural}.${n.gvr.group || 'core'}`;
    const other = byGR.get(gr);
    if (!other || compareKubeAwareVersions(n.gvr.version, other.gvr.version) > 0) byGR.set(gr, n);
  }
  const current = new Map<string, string>();
  for (const name of exportSchemaNames(exp)) { const gr = schemaGroupResource(name); if (gr) current.set(gr, name); }
  const names: string[] = [];
  for (const [gr, n] of [...byGR].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const desired = toAPIResourceSchemaSpec(n);
    const existingName = current.get(gr);
    const existing = existingName ? deps.cache.getEntry(SCHEMAS_GR, cluster, '', existingName) : undefined;
    if (existing && sameSchemaSpec(entryObject<KubeObject>(existing).spec, desired)) { names.push(existingName!); published.add(n.name); continue; }
    const name = schemaName(written.get(n.name)?.metadata.resourceVersion ?? '0', n.gvr);
    const already = deps.cache.getEntry(SCHEMAS_GR, cluster, '', name);
    if (!already) {
      try {
        await deps.schemas.create(scope, {
          apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema',
          metadata: {
            name, ...(n.approved ? { annotations: { 'api-approved.kubernetes.io': n.approved } } : {}),
            ownerReferences: [{ apiVersion: `apis.kcp.io/${deps.exports.desc.version}`, kind: 'APIExport', name: KUBERNETES_EXPORT, uid: exp.metadata.uid!, controller: true, blockOwnerDeletion: true }],
          },
          spec: desired,
        });
      } catch (err) {
        if (isStatus(err, 422)) {
          // A negotiated schema an APIResourceSchema cannot hold (an import's schema is anyone's
          // input): reported on the negotiated resource; the export keeps what it served, and
          // the other resources go on.
          refused.set(n.name, (err as Error).message);
          if (existing) names.push(existingName!);
          continue;
        }
        if (!isStatus(err, 409)) throw err;
      }
    }
    names.push(name);
    published.add(n.name);
  }
  if (JSON.stringify(names) !== JSON.stringify(exportSchemaNames(exp))) {
    await deps.exports.update(scope, KUBERNETES_EXPORT, withSchemaNames(exp, names, deps.exports.desc.version));
  }
  // Schemas the export owns and no longer lists (kcp v0.11).
  const keep = new Set(names);
  for (const e of deps.cache.list(SCHEMAS_GR, cluster)) {
    if (keep.has(e.name)) continue;
    const s = entryObject<KubeObject>(e);
    if (!s.metadata.ownerReferences?.some((o) => o.kind === 'APIExport' && o.uid === exp.metadata.uid && o.controller)) continue;
    try { await deps.schemas.delete(scope, e.name); } catch (err) { if (!isStatus(err, 404)) throw err; }
  }
  return published;
}

/** Step 3 of the module comment. */
async function updateSyncTargets(deps: NegotiationDeps, cluster: string, scope: RequestScope, imports: KubeObject[]): Promise<void> {
  for (const e of deps.cache.list(SYNC_TARGETS_GR, cluster)) {
    const st = entryObject<KubeObject>(e);
    const refs = Array.isArray((st.spec as Obj | undefined)?.supportedAPIExports) ? (st.spec as Obj).supportedAPIExports as Obj[] : [];
    const exportNames = (refs.length ? refs : [{ export: KUBERNETES_EXPORT }])
      // Exports of this workspace only (see docs/multicluster.md, "API negotiation").
      .filter((r) => !r.path || r.path === cluster).map((r) => String(r.export));
    const schemas: Array<{ schema: KubeObject; identityHash: string }> = [];
    for (const name of exportNames) {
      const ee = deps.cache.getEntry(EXPORTS_GR, cluster, '', name);
      if (!ee) continue;
      const exp = await read(deps.exports, scope, ee);
      const identityHash = String(isObj(exp.status) ? exp.status.identityHash ?? '' : '');
      for (const s of exportSchemaNames(exp)) {
        const se = deps.cache.getEntry(SCHEMAS_GR, cluster, '', s);
        if (se) schemas.push({ schema: entryObject<KubeObject>(se), identityHash });
      }
    }
    const own = imports.filter((i) => (i.spec as Obj | undefined)?.location === st.metadata.name);
    // Its comparisons, then a turn of the event loop before the next SyncTarget's.
    const desired = syncedResources(schemas, own);
    await new Promise<void>((resolve) => setImmediate(resolve));
    const status = (st.status ?? {}) as Obj;
    if (JSON.stringify(status.syncedResources ?? []) === JSON.stringify(desired)) continue;
    const next: Obj = { ...status };
    if (desired.length) next.syncedResources = desired; else delete next.syncedResources;
    await deps.syncTargets.update(scope, st.metadata.name!, { ...st, status: next }, 'status');
  }
}

/**
 * Whether a cache event concerns negotiation, and of which workspace: imports, negotiated
 * resources, the `kubernetes` export and schemas always; SyncTargets when added, deleted, or
 * their supported exports or synced resources changed (not heartbeats).
 */
export function negotiationEventCluster(ev: { type: string; entry: CacheEntry; prev?: CacheEntry }): string | undefined {
  const e = ev.entry;
  switch (e.groupResource) {
    case IMPORTS_GR: case NEGOTIATED_GR: case SCHEMAS_GR: return e.cluster;
    case EXPORTS_GR: return e.cluster; // any export a SyncTarget may support
    case SYNC_TARGETS_GR: {
      if (ev.type !== 'MODIFIED' || !ev.prev) return e.cluster;
      const pick = (x: CacheEntry) => { const o = entryObject<KubeObject>(x); return JSON.stringify([(o.spec as Obj | undefined)?.supportedAPIExports, (o.status as Obj | undefined)?.syncedResources]); };
      return pick(ev.prev) !== pick(e) ? e.cluster : undefined;
    }
    default: return undefined;
  }
}
