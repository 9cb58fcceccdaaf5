/**
 * The pure part of API negotiation: the NegotiatedAPIResource of each group/version/resource from
 * the APIResourceImports of one workspace, the APIResourceSchema of a negotiated resource, and the
 * `syncedResources` of a SyncTarget — as kcp's controllers compute them (github kcp-dev/kcp v0.11
 * pkg/reconciler/apis/apiresource negotiation.go `ensureAPIResourceCompatibility`,
 * pkg/reconciler/workload/apiexport apiresourceschema.go `toAPIResourceSchema`,
 * pkg/reconciler/workload/synctargetexports; the same in kcp-dev/contrib-tmc). The comparison is
 * the one of `kcp-ts crd compat` (src/apiextensions/schemacompat.ts).
 *
 * Negotiation is level-triggered here: the negotiated schema of a resource is recomputed from all
 * its imports on every reconcile, oldest import first (creationTimestamp, then name). The first
 * structural schema is the start; each further import is compared with what was negotiated so
 * far and, when its `schemaUpdateStrategy` allows, narrows it to the least common denominator
 * (LCD); an import that cannot be reconciled with it (a changed type, a construct the comparison
 * refuses) is marked `Compatible: False` with the reasons and leaves the negotiated schema as it
 * was — the SyncTargets that came first keep their API. kcp folds each import into the stored
 * negotiated schema as it arrives (and recomputes from scratch only when an import is deleted),
 * which gives the same result for the same arrival order.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import { isObj } from '../apimachinery/objects.js';
import { ensureStructuralSchemaCompatibility, formatFieldErrors } from '../apiextensions/schemacompat.js';
import type { Condition } from '../apimachinery/conditions.js';

type Obj = Record<string, unknown>;

/** Condition types of APIResourceImport (contrib-tmc apiresource/v1alpha1). */
export const COMPATIBLE = 'Compatible';
export const AVAILABLE = 'Available';
/** Condition types of NegotiatedAPIResource (contrib-tmc apiresource/v1alpha1). */
export const PUBLISHED = 'Published';
/** Reason of `Compatible: False` (kcp's). */
export const INCOMPATIBLE_SCHEMA = 'IncompatibleSchema';

/** The group, version and plural of an import or negotiated resource (`group` '' for core). */
export interface GVR { group: string; version: string; plural: string }

export function gvrOf(o: KubeObject): GVR {
  const spec = (o.spec ?? {}) as Obj;
  const gv = isObj(spec.groupVersion) ? spec.groupVersion : {};
  const group = typeof gv.group === 'string' && gv.group !== 'core' ? gv.group : '';
  return { group, version: String(gv.version ?? ''), plural: String(spec.plural ?? '') };
}

/** kcp's NegotiatedAPIResource name: `<plural>.<version>.<group|core>`. */
export function negotiatedName(g: GVR): string { return `${g.plural}.${g.version}.${g.group || 'core'}`; }

/** What negotiation decided for one import. */
export interface ImportVerdict { compatible: boolean; message?: string }

/** One negotiated resource. */
export interface Negotiated {
  name: string;
  gvr: GVR;
  /** The NegotiatedAPIResource spec (CommonAPIResourceSpec, `publish` left to the caller). */
  spec: Obj;
  /** `api-approved.kubernetes.io` of the first import, if any. */
  approved?: string;
}

/** Result of {@link negotiate}. */
export interface Negotiation {
  /** By NegotiatedAPIResource name; a resource none of whose imports is usable has none. */
  resources: Map<string, Negotiated>;
  /** By import name. */
  verdicts: Map<string, ImportVerdict>;
}

/** contrib-tmc `SchemaUpdateStrategyType.CanUpdate` (unset: `UpdateUnpublished`, the field's documented default). */
export function canUpdate(strategy: unknown, published: boolean): boolean {
  switch (strategy) {
    case 'UpdateNever': return false;
    case 'UpdatePublished': return true;
    case 'UpdateUnpublished': case undefined: case '': return !published;
    default: return false;
  }
}

const byAge = (a: KubeObject, b: KubeObject): number => {
  const ta = a.metadata.creationTimestamp ?? '', tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return (a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1;
};

/**
 * Negotiates every resource of a workspace's imports (see the module comment).
 * @param imports the workspace's APIResourceImports
 * @param published whether a negotiated resource (by name) is published (its Published condition)
 */
export function negotiate(imports: readonly KubeObject[], published: (name: string) => boolean): Negotiation {
  const steps = negotiationSteps(imports, published);
  for (;;) { const step = steps.next(); if (step.done) return step.value; }
}

/**
 * {@link negotiate} one import at a time: the generator yields after each import's comparison
 * (about 15 ms for a Deployment's schema on a loaded 2-core machine), so a caller can give the
 * event loop a turn between them; its return value is the negotiation.
 */
export function* negotiationSteps(imports: readonly KubeObject[], published: (name: string) => boolean): Generator<void, Negotiation> {
  const byGVR = new Map<string, KubeObject[]>();
  for (const imp of imports) {
    const name = negotiatedName(gvrOf(imp));
    let list = byGVR.get(name);
    if (!list) byGVR.set(name, list = []);
    list.push(imp);
  }
  const resources = new Map<string, Negotiated>();
  const verdicts = new Map<string, ImportVerdict>();
  for (const [name, list] of byGVR) {
    list.sort(byAge);
    let current: Negotiated | undefined;
    for (const imp of list) {
      if (verdicts.size) yield;
      const spec = (imp.spec ?? {}) as Obj;
      const schema = spec.openAPIV3Schema;
      const kind = String(spec.kind ?? '');
      if (!isObj(schema)) { verdicts.set(imp.metadata.name!, { compatible: false, message: 'spec.openAPIV3Schema is not a schema object' }); continue; }
      if (!current) {
        // The start: it must be a structural schema the comparison can read.
        const self = ensureStructuralSchemaCompatibility(kind, schema, schema, false);
        if (self.errors.length) { verdicts.set(imp.metadata.name!, { compatible: false, message: formatFieldErrors(self.errors).join('; ') }); continue; }
        const { location: _l, schemaUpdateStrategy: _s, ...common } = spec;
        current = { name, gvr: gvrOf(imp), spec: structuredClone(common), approved: imp.metadata.annotations?.['api-approved.kubernetes.io'] };
        verdicts.set(imp.metadata.name!, { compatible: true });
        continue;
      }
      const mismatch = (['scope', 'kind'] as const).find((k) => spec[k] !== current!.spec[k]);
      if (mismatch) {
        verdicts.set(imp.metadata.name!, { compatible: false, message: `${mismatch} ${JSON.stringify(spec[mismatch])} differs from the negotiated ${JSON.stringify(current.spec[mismatch])}` });
        continue;
      }
      const narrow = canUpdate(spec.schemaUpdateStrategy, published(name));
      const result = ensureStructuralSchemaCompatibility(kind, current.spec.openAPIV3Schema as Obj, schema, narrow);
      if (result.errors.length) { verdicts.set(imp.metadata.name!, { compatible: false, message: formatFieldErrors(result.errors).join('; ') }); continue; }
      if (narrow) current.spec.openAPIV3Schema = result.schema;
      verdicts.set(imp.metadata.name!, { compatible: true });
    }
    if (current) resources.set(name, current);
    yield;
  }
  return { resources, verdicts };
}

/**
 * The APIResourceSchema spec of a negotiated resource (kcp `toAPIResourceSchema`): one served
 * storage version with the negotiated schema, printer columns, and the `status` subresource and
 * the `scale` subresource at `.spec.replicas`/`.status.replicas` when the imports had them.
 */
export function toAPIResourceSchemaSpec(n: Negotiated): Obj {
  const spec = n.spec;
  const names: Obj = {};
  for (const k of ['plural', 'singular', 'kind', 'listKind', 'shortNames', 'categories']) if (spec[k] !== undefined) names[k] = spec[k];
  const subs = new Set((Array.isArray(spec.subResources) ? spec.subResources as Obj[] : []).map((s) => s.name));
  const subresources: Obj = {};
  if (subs.has('status')) subresources.status = {};
  if (subs.has('scale')) subresources.scale = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' };
  const columns = (Array.isArray(spec.columnDefinitions) ? spec.columnDefinitions as Obj[] : []).filter((c) => typeof c.jsonPath === 'string').map((c) => {
    const col: Obj = { name: c.name, type: c.type, jsonPath: c.jsonPath };
    if (c.format) col.format = c.format;
    if (c.description) col.description = c.description;
    if (c.priority) col.priority = c.priority;
    return col;
  });
  return {
    group: n.gvr.group, names, scope: spec.scope,
    versions: [{
      name: n.gvr.version, served: true, storage: true, schema: spec.openAPIV3Schema,
      ...(Object.keys(subresources).length ? { subresources } : {}),
      ...(columns.length ? { additionalPrinterColumns: columns } : {}),
    }],
  };
}

/** kcp's APIResourceSchema name of a negotiated resource: `rev-<resourceVersion>.<plural>.<group|core>`. */
export function schemaName(resourceVersion: string, g: GVR): string { return `rev-${resourceVersion}.${g.plural}.${g.group || 'core'}`; }

/** `<prefix>.<plural>.<group>` → `<plural>.<group>` (kcp `ParseAPIResourceSchemaName`), undefined for fewer than three parts. */
export function schemaGroupResource(name: string): string | undefined {
  const parts = name.split('.');
  if (parts.length < 3) return undefined;
  return parts.slice(1).join('.');
}

/**
 * Whether a stored APIResourceSchema spec is the desired one: the schema compared exactly (a
 * narrowed schema lacks what the stored one has), everything else as a subset (the stored object
 * may carry defaults the desired one leaves out).
 */
export function sameSchemaSpec(stored: unknown, desired: Obj): boolean {
  const subset = (want: unknown, have: unknown, exact: boolean): boolean => {
    if (exact) return JSON.stringify(want) === JSON.stringify(have) || deepEqual(want, have);
    if (Array.isArray(want)) return Array.isArray(have) && have.length === want.length && want.every((w, i) => subset(w, have[i], false));
    if (isObj(want)) return isObj(have) && Object.entries(want).every(([k, v]) => subset(v, have[k], k === 'schema'));
    return want === have;
  };
  return subset(desired, stored, false);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/** kube's `version.CompareKubeAwareVersionStrings`: GA > beta > alpha, then by numbers; positive when `a` is newer. */
export function compareKubeAwareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    return { major: Number(m[1]), level: m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2, minor: m[3] ? Number(m[3]) : 0 };
  };
  const pa = parse(a), pb = parse(b);
  if (pa && !pb) return 1;
  if (!pa && pb) return -1;
  if (!pa || !pb) return a < b ? 1 : a > b ? -1 : 0; // both non-kube: reverse lexical, as kube
  if (pa.level !== pb.level) return pa.level - pb.level;
  if (pa.major !== pb.major) return pa.major - pb.major;
  return pa.minor - pb.minor;
}

/** A SyncTarget's `status.syncedResources[]` entry (contrib-tmc ResourceToSync). */
export interface ResourceToSync { group: string; resource: string; versions: string[]; identityHash: string; state: 'Pending' | 'Accepted' | 'Incompatible' }

/**
 * The synced resources of a SyncTarget from the schemas of the exports it supports (kcp's
 * synctargetexports `exportReconciler` and `apiCompatibleReconciler`): each schema's group,
 * resource, served versions and the export's identity hash; state `Accepted` when the
 * SyncTarget's own import of a version accepts everything the exported schema accepts, else
 * `Incompatible` (no import, or the comparison's errors), `Pending` when the schema has no
 * version. kcp-ts: only the SyncTarget's own imports are compared (kcp compares with whichever
 * import of the workspace it listed last).
 * @param schemas the exported APIResourceSchemas, with the export's identity hash
 * @param ownImports the SyncTarget's APIResourceImports (`spec.location` = its name)
 */
export function syncedResources(schemas: ReadonlyArray<{ schema: KubeObject; identityHash: string }>, ownImports: readonly KubeObject[]): ResourceToSync[] {
  const imports = new Map(ownImports.map((i) => { const g = gvrOf(i); return [`${g.plural}.${g.version}.${g.group}`, i] as const; }));
  const out: ResourceToSync[] = [];
  for (const { schema, identityHash } of schemas) {
    const spec = (schema.spec ?? {}) as Obj;
    const group = String(spec.group ?? '');
    const resource = String(isObj(spec.names) ? spec.names.plural : '');
    const versions = (Array.isArray(spec.versions) ? spec.versions as Obj[] : []).filter((v) => v.served === true);
    const entry: ResourceToSync = { group, resource, versions: versions.map((v) => String(v.name)).sort(), identityHash, state: 'Pending' };
    for (const v of versions) {
      const imp = imports.get(`${resource}.${String(v.name)}.${group}`);
      const down = imp ? ((imp.spec ?? {}) as Obj).openAPIV3Schema : undefined;
      if (!isObj(down) || !isObj(v.schema)) { entry.state = 'Incompatible'; continue; }
      const gvr = `${group ? `${group}/` : ''}${String(v.name)}, Resource=${resource}`;
      if (ensureStructuralSchemaCompatibility(gvr, v.schema, down, false).errors.length) { entry.state = 'Incompatible'; continue; }
      entry.state = 'Accepted';
      break;
    }
    out.push(entry);
  }
  return out.sort((a, b) => (a.group !== b.group ? (a.group < b.group ? -1 : 1) : a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
}

/** Conditions of an object's status (empty when none). */
export function conditionsOf(o: KubeObject): Condition[] {
  const st = (o.status ?? {}) as Obj;
  return Array.isArray(st.conditions) ? st.conditions as Condition[] : [];
}
