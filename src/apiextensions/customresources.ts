/**
 * Custom resources: the resource descriptors a CustomResourceDefinition contributes to its
 * logical cluster, one per served version (apiextensions-apiserver's crdHandler serves the same
 * REST semantics as built-in types; https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/).
 *
 * All versions share one storage location (`<group>/<plural>`); objects are stored in the storage
 * version. Conversion strategy `None` only rewrites `apiVersion`; `Webhook` calls the CRD's
 * conversion webhook (./conversion.ts), asynchronously and batched.
 */
import type { StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { age } from '../apimachinery/duration.js';
import type { ResourceDescriptor, TableColumn } from '../apis/types.js';
import { compileSchema, type CompiledSchema } from './schema.js';
import { evaluateJsonPath, parseJsonPath } from './jsonpath.js';
import { usesConversionWebhook, WebhookConverter } from './conversion.js';
import { LRUCache } from 'lru-cache';
import { asObj } from '../apimachinery/objects.js';

/** Group/resource of CRDs in the watch cache. */
export const CRD_GR = 'apiextensions.k8s.io/customresourcedefinitions';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

type Obj = Record<string, unknown>;

/** Whether a CRD has the condition `Established=True` (only then are its resources served). */
export function isEstablished(crd: KubeObject): boolean {
  const conds = asObj(crd.status).conditions;
  return Array.isArray(conds) && conds.some((c) => asObj(c).type === 'Established' && asObj(c).status === 'True');
}

/**
 * Entries of each per-CRD-generation cache: 2,000 (least recently used evicted). A CRD serves
 * one entry per version, and the CRDs in use on a shard are far fewer; an evicted entry is
 * rebuilt on its next use (a schema compile, a converter), so tenants churning CRDs cost
 * themselves compile time, not the shard memory.
 */
export const PER_CRD_GENERATION_ENTRIES = 2_000;

/**
 * What is built from one generation of a CRD (keys `<uid>/<resourceVersion>/…`), built once per
 * CRD change and kept in an LRU cache of {@link PER_CRD_GENERATION_ENTRIES}. Throws what `make` throws.
 */
function perCRDGeneration<T extends {}>(cache: LRUCache<string, T>, crd: KubeObject, part: string, make: () => T): T {
  const key = `${crd.metadata.uid}/${crd.metadata.resourceVersion}/${part}`;
  let v = cache.get(key);
  if (v === undefined) {
    v = make();
    cache.set(key, v);
  }
  return v;
}

/** Compiled schemas by CRD generation and version name. */
const compiled = new LRUCache<string, CompiledSchema>({ max: PER_CRD_GENERATION_ENTRIES });

function schemaFor(crd: KubeObject, version: string, schema: Obj): CompiledSchema {
  return perCRDGeneration(compiled, crd, version, () => compileSchema(schema));
}

/** Conversion webhooks by CRD generation: one converter per CRD change. */
const converters = new LRUCache<string, WebhookConverter>({ max: PER_CRD_GENERATION_ENTRIES });

/**
 * The conversion webhook of a CRD with `spec.conversion.strategy: Webhook` (undefined
 * otherwise, or when its URL does not parse: CRD validation refuses such a CRD first). Converted
 * objects are pruned and defaulted by the desired version's schema.
 */
function conversionWebhookOf(crd: KubeObject, versions: Obj[]): WebhookConverter | undefined {
  if (!usesConversionWebhook(crd)) return undefined;
  try {
    return perCRDGeneration(converters, crd, 'conversion', () => new WebhookConverter(String(asObj(asObj(crd.spec).names).kind), asObj(asObj(asObj(crd.spec).conversion).webhook), (version, obj) => {
      const schema = versions.find((v) => v.name === version)?.schema;
      if (!schema) return;
      const compiledSchema = schemaFor(crd, version, asObj(asObj(schema).openAPIV3Schema));
      compiledSchema.prune(obj as Obj);
      compiledSchema.applyDefaults(obj as Obj);
    }));
  } catch {
    return undefined;
  }
}

/**
 * Defaulting of objects decoded from storage (kube's storage codec, customresource_handler.go
 * `unstructuredDefaulter`): the defaults of the schema of the version the object is stored in
 * (its `apiVersion`), applied in place; true when anything was set. Undefined when no version's
 * schema has a default (most CRDs: stored objects are served as they are) — the fast path.
 * Objects of a version without a schema (or one that does not compile) are left as they are.
 */
function readDefaultsOf(crd: KubeObject, versions: Obj[]): ((obj: KubeObject) => boolean) | undefined {
  const group = String(asObj(crd.spec).group);
  const byAPIVersion = new Map<string, CompiledSchema>();
  for (const v of versions) {
    const raw = asObj(v.schema).openAPIV3Schema;
    if (!raw || typeof raw !== 'object') continue;
    let schema: CompiledSchema;
    try { schema = schemaFor(crd, String(v.name), asObj(raw)); } catch { continue; }
    if (schema.hasDefaults) byAPIVersion.set(`${group}/${String(v.name)}`, schema);
  }
  if (!byAPIVersion.size) return undefined;
  return (obj) => byAPIVersion.get(String(obj.apiVersion))?.applyDefaults(obj as Obj) ?? false;
}

/**
 * A printer column's cell (`additionalPrinterColumns`): the first JSONPath result; `date`
 * columns are shown as an age, as kube's CRD table convertor does.
 */
function printerColumn(col: Obj): TableColumn {
  const path = parseJsonPath(String(col.jsonPath ?? ''));
  const type = String(col.type ?? 'string');
  return {
    name: String(col.name), type, format: col.format ? String(col.format) : undefined,
    description: col.description ? String(col.description) : '', priority: Number(col.priority ?? 0),
    cell: (o) => {
      const v = evaluateJsonPath(path, o)[0];
      if (v === undefined || v === null) return undefined;
      if (type === 'date' && typeof v === 'string') return age(v);
      return typeof v === 'object' ? JSON.stringify(v) : v;
    },
  };
}

/**
 * Field-selector getters of a CRD version's `selectableFields` (`.spec.color` → `spec.color`):
 * the field's value as text (strings as they are, integers and booleans printed, "" when unset),
 * as kube-apiserver's CRD field selectors read them.
 */
function selectableFieldsOf(fields: unknown): Record<string, (obj: KubeObject) => string> | undefined {
  if (!Array.isArray(fields) || !fields.length) return undefined;
  const out: Record<string, (obj: KubeObject) => string> = {};
  for (const f of fields as Obj[]) {
    const path = String(f.jsonPath ?? '').replace(/^\./, '');
    if (!path) continue;
    const segs = path.split('.');
    out[path] = (obj) => {
      let v: unknown = obj;
      for (const s of segs) v = v !== null && typeof v === 'object' ? (v as Obj)[s] : undefined;
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
    };
  }
  return out;
}

/**
 * Kube's version priority (apimachinery `version.CompareKubeAwareVersionStrings`): versions like
 * `v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1`, then versions not of that form in
 * alphabetical order. Discovery lists a CRD's versions in this order, so the first (preferred)
 * one is its highest. Negative when `a` comes first.
 */
export function compareVersionPriority(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    return m ? { major: Number(m[1]), stability: m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2, minor: Number(m[3] ?? 0) } : undefined;
  };
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return pa ? -1 : pb ? 1 : a < b ? -1 : a > b ? 1 : 0;
  return pb.stability - pa.stability || pb.major - pa.major || pb.minor - pa.minor;
}

/**
 * Descriptors of a CRD's served versions in version priority order (all versions with
 * `includeUnserved`, for cleaning up
 * the storage of a deleted CRD). Throws nothing: a version whose schema cannot be
 * compiled is left out (the CRD's own validation rejects such schemas on write).
 */
export function descriptorsForCRD(crd: KubeObject, opts: { includeUnserved?: boolean } = {}): ResourceDescriptor[] {
  const spec = asObj(crd.spec);
  const names = asObj(spec.names);
  const group = String(spec.group);
  const plural = String(names.plural);
  const versions = Array.isArray(spec.versions) ? spec.versions as Obj[] : [];
  const storageVersion = String(versions.find((v) => v.storage === true)?.name ?? versions[0]?.name);
  const webhook = conversionWebhookOf(crd, versions);
  // Objects written under an earlier storage version keep its apiVersion until rewritten
  // (`status.storedVersions` lists every version ever stored): the storage version converts too.
  const storedVersions = asObj(crd.status).storedVersions;
  const mixedStorage = Array.isArray(storedVersions) && storedVersions.some((v) => v !== storageVersion);
  const readDefaults = readDefaultsOf(crd, versions);
  const out: ResourceDescriptor[] = [];
  for (const v of [...versions].sort((a, b) => compareVersionPriority(String(a.name), String(b.name)))) {
    if (v.served !== true && !opts.includeUnserved) continue;
    const version = String(v.name);
    const openAPIV3Schema = asObj(asObj(v.schema).openAPIV3Schema);
    let schema: CompiledSchema;
    try { schema = schemaFor(crd, version, openAPIV3Schema); } catch { continue; }
    const subresources = asObj(v.subresources);
    const hasStatus = subresources.status !== undefined;
    const scaleSpec = asObj(subresources.scale);
    const scale = subresources.scale === undefined ? undefined : {
      specReplicasPath: String(scaleSpec.specReplicasPath), statusReplicasPath: String(scaleSpec.statusReplicasPath),
      labelSelectorPath: scaleSpec.labelSelectorPath === undefined ? undefined : String(scaleSpec.labelSelectorPath),
    };
    const columns = Array.isArray(v.additionalPrinterColumns) && v.additionalPrinterColumns.length
      ? (v.additionalPrinterColumns as Obj[]).map(printerColumn)
      : [{ name: 'Age', type: 'date', priority: 0, description: '', cell: (o: KubeObject) => age(o.metadata.creationTimestamp) }];
    const served = `${group}/${version}`;
    const stored = `${group}/${storageVersion}`;
    out.push({
      group, version, kind: String(names.kind), listKind: String(names.listKind ?? `${names.kind}List`), plural,
      singular: String(names.singular ?? String(names.kind).toLowerCase()),
      namespaced: spec.scope === 'Namespaced',
      shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(String) : undefined,
      categories: Array.isArray(names.categories) ? names.categories.map(String) : undefined,
      verbs: ALL_VERBS, hasStatus, scale, schema: openAPIV3Schema, columns, columnsComplete: true, readDefaults,
      // With strategy None and every object in the storage version, the storage version needs no
      // conversion (and no re-encoding on every read); with a webhook, or objects stored in other
      // versions, every version converts what was stored in another version.
      storage: served === stored && !webhook && !mixedStorage ? undefined : {
        group, plural,
        toStorage: (o) => (o.apiVersion === stored ? o : { ...o, apiVersion: stored }),
        fromStorage: (o) => (o.apiVersion === served ? o : { ...o, apiVersion: served }),
        ...(webhook ? { webhook: { converter: webhook, storageAPIVersion: stored } } : {}),
      },
      strategy: {
        tracksGeneration: true,
        selectableFields: selectableFieldsOf(v.selectableFields),
        prepareForCreate(obj) {
          if (!hasStatus) return;
          delete obj.status;
          // kube defaults objects again when reading them from storage: a status default shows
          // up on the created object although the create itself may not set status.
          schema.applyDefaults(obj as Obj);
        },
        normalize(obj) {
          const pruned = schema.prune(obj as Obj);
          schema.applyDefaults(obj as Obj);
          return pruned;
        },
        validate: (obj): StatusCause[] => schema.validate(obj as Obj),
        validateUpdate: (obj, old): StatusCause[] => schema.validate(obj as Obj, old as Obj),
      },
    });
  }
  return out;
}
