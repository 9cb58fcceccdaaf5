/**
 * `/openapi/v2` and `/openapi/v3` documents generated from the resource descriptors a logical
 * cluster serves, in the shape kube-apiserver publishes (k8s.io/kube-openapi handler/handler3 and
 * the apiserver's route-to-OpenAPI builder), so that kubectl's OpenAPI consumers work:
 *
 * - `kubectl explain` (v3): finds the operation on `<prefix>/<resource>[/{name}]` carrying
 *   `x-kubernetes-group-version-kind`, then the `components.schemas` entry whose
 *   `x-kubernetes-group-version-kind` list contains that GVK, and walks `properties`, `items`,
 *   `additionalProperties` and single-element `allOf`/`$ref`s.
 * - server-side field validation detection (cli-runtime `queryParamVerifierV3`): looks for a PATCH
 *   operation whose `x-kubernetes-group-version-kind` (a single object) equals the GVK and whose
 *   *operation* parameters contain the query parameter `fieldValidation`. It stops at the first
 *   PATCH operation of the GVK it meets (Go map order), so every PATCH operation — including
 *   `/status` — carries the parameter.
 * - `kubectl apply` (v3): uses strategic merge patch when the PATCH request body lists
 *   `application/strategic-merge-patch+json`, reading `x-kubernetes-patch-strategy` /
 *   `x-kubernetes-patch-merge-key` from the kind schema; custom-resource-style groups only list
 *   JSON patch, merge patch and apply, as kube's CRD builder does.
 *
 * All functions are pure and deterministic (descriptors are sorted, keys emitted in a fixed order),
 * so results can be cached per descriptor set and the v3 hashes are stable. Serve documents with
 * `JSON.stringify(doc)`: the hash in the v3 root is the SHA-512 of exactly that text.
 */
import { createHash } from 'node:crypto';
import type { ResourceDescriptor } from './types.js';
import { BUILTIN_SCHEMAS, V3_REF_PREFIX, definitionName, isKubernetesGroup, listSchema } from './schemas/index.js';
import { TYPE_META_DESCRIPTIONS, objectMetaProp } from './schemas/helpers.js';

/** A JSON object. */
type Json = Record<string, unknown>;

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const DELETE_OPTIONS = `${META}.DeleteOptions`;
const STATUS = `${META}.Status`;
const PATCH = `${META}.Patch`;
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const V2_REF_PREFIX = '#/definitions/';

/** Content types of PATCH for built-in kinds (kube order). */
const BUILTIN_PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
/** Content types of PATCH for custom-resource-style kinds (no strategic merge patch). */
const CUSTOM_PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
/** Response content types listed for every operation. */
const PRODUCES = ['application/json', 'application/yaml'];

// ---------------------------------------------------------------------------------------------
// Operation model shared by v2 and v3.

interface Param {
  name: string;
  in: 'query' | 'path';
  type: 'string' | 'boolean' | 'integer';
  description: string;
  required?: boolean;
}

interface Op {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** `x-kubernetes-action`. */
  action: string;
  operationId: string;
  description: string;
  tag: string;
  params: Param[];
  body?: { definition: string; required: boolean; contentTypes: string[] };
  responses: Array<{ code: string; description: string; definition: string }>;
  gvk: { group: string; version: string; kind: string };
}

interface PathItem {
  path: string;
  params: Param[];
  ops: Op[];
}

const q = (name: string, type: Param['type'], description: string): Param => ({ name, in: 'query', type, description });

const P_PRETTY = q('pretty', 'string', "If 'true', the response is pretty-printed.");
const P_DRY_RUN = q('dryRun', 'string', 'If `All`, the request is validated and admitted but not persisted.');
const P_FIELD_MANAGER = q('fieldManager', 'string', 'Name of the actor making the change, recorded in managedFields. Required for apply patches.');
const P_FIELD_VALIDATION = q(
  'fieldValidation',
  'string',
  'How the server treats unknown or duplicate fields in the request body: Ignore (drop them), Warn (drop them and ' +
    'return a warning header per field, the default) or Strict (reject the request).',
);
const P_FORCE = q('force', 'boolean', 'Apply patches only: take over fields owned by other managers instead of failing with a conflict.');
const P_GRACE = q('gracePeriodSeconds', 'integer', 'Seconds before the object is deleted; 0 deletes immediately. Defaults per kind.');
const P_IGNORE_READ_ERR = q(
  'ignoreStoreReadErrorWithClusterBreakingPotential',
  'boolean',
  'Delete objects whose stored data cannot be read, skipping finalizers and admission. Dangerous.',
);
const P_ORPHAN = q('orphanDependents', 'boolean', 'Deprecated: use propagationPolicy. Whether dependents are orphaned.');
const P_PROPAGATION = q('propagationPolicy', 'string', 'Garbage collection of dependents: Orphan, Background or Foreground.');
const LIST_PARAMS: Param[] = [
  q('allowWatchBookmarks', 'boolean', 'Watch only: ask for BOOKMARK events carrying the latest resourceVersion.'),
  q('continue', 'string', 'Continue token of a previous paginated list response, to fetch the next page.'),
  q('fieldSelector', 'string', 'Only return objects whose fields match this selector.'),
  q('labelSelector', 'string', 'Only return objects whose labels match this selector.'),
  q('limit', 'integer', 'Maximum number of items to return; a continue token is set when more remain.'),
  q('resourceVersion', 'string', 'Constraint on the resource version the response may be served from.'),
  q('resourceVersionMatch', 'string', 'How resourceVersion is applied: Exact or NotOlderThan.'),
  q('sendInitialEvents', 'boolean', 'Watch only: start with synthetic ADDED events for the current state.'),
  q('timeoutSeconds', 'integer', 'Time limit of the list or watch call.'),
  q('watch', 'boolean', 'Stream add, update and delete notifications instead of returning a list.'),
];
const DELETE_COLLECTION_PARAMS: Param[] = [
  LIST_PARAMS[1]!,
  P_DRY_RUN,
  LIST_PARAMS[2]!,
  P_GRACE,
  P_IGNORE_READ_ERR,
  LIST_PARAMS[3]!,
  LIST_PARAMS[4]!,
  P_ORPHAN,
  P_PROPAGATION,
  LIST_PARAMS[5]!,
  LIST_PARAMS[6]!,
  LIST_PARAMS[7]!,
  LIST_PARAMS[8]!,
];
const DELETE_PARAMS: Param[] = [P_DRY_RUN, P_GRACE, P_IGNORE_READ_ERR, P_ORPHAN, P_PROPAGATION];
const WRITE_PARAMS: Param[] = [P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION];
const PATCH_PARAMS: Param[] = [P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION, P_FORCE];
const P_NAMESPACE: Param = { name: 'namespace', in: 'path', type: 'string', required: true, description: 'Namespace of the objects (object name and auth scope).' };

function capitalize(s: string): string {
  return s ? s[0]!.toUpperCase() + s.slice(1) : s;
}

/** `rbac.authorization.k8s.io` → `rbacAuthorization`; `""` → `core`; `core.kcp.io` → `coreKcpIo`. */
function groupFriendlyName(group: string): string {
  if (!group) return 'core';
  const parts = group.replace(/\.k8s\.io$/, '').split(/[.-]/).filter(Boolean);
  return parts.map((p, i) => (i === 0 ? p : capitalize(p))).join('');
}

/** The URL prefix of a group/version: `/api/v1` or `/apis/<group>/<version>`. */
function urlPrefix(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

/**
 * Whether PATCH of a resource accepts strategic merge patch: Kubernetes' own groups do (their
 * schemas carry the patch strategy extensions), custom-resource-style groups do not — the same
 * split kube makes between compiled-in types and CRDs.
 */
export function supportsStrategicMergePatch(desc: ResourceDescriptor): boolean {
  return isKubernetesGroup(desc.group);
}

/** Paths and operations of one resource. */
function resourcePaths(desc: ResourceDescriptor): PathItem[] {
  const { group, version, kind } = desc;
  const gvk = { group, version, kind };
  const verbs = new Set(desc.verbs);
  const prefix = urlPrefix(group, version);
  const nsPath = desc.namespaced ? '/namespaces/{namespace}' : '';
  const nsWord = desc.namespaced ? 'Namespaced' : '';
  const gvWord = capitalize(groupFriendlyName(group)) + capitalize(version);
  const tag = `${groupFriendlyName(group)}_${version}`;
  const kindDef = definitionName(group, version, kind);
  const listDef = definitionName(group, version, desc.listKind);
  const collection = `${prefix}${nsPath}/${desc.plural}`;
  const item = `${collection}/{name}`;
  const nameParam = (what: string): Param => ({ name: 'name', in: 'path', type: 'string', required: true, description: `name of the ${what}` });
  const scopeParams = desc.namespaced ? [P_NAMESPACE] : [];
  const base = { tag, gvk };
  const ok = (definition: string) => ({ code: '200', description: 'OK', definition });
  const created = (definition: string) => ({ code: '201', description: 'Created', definition });
  const accepted = (definition: string) => ({ code: '202', description: 'Accepted', definition });
  const patchTypes = supportsStrategicMergePatch(desc) ? BUILTIN_PATCH_TYPES : CUSTOM_PATCH_TYPES;
  const items: PathItem[] = [];

  // Collection: list, create, deletecollection.
  const collOps: Op[] = [];
  if (verbs.has('deletecollection') && !desc.virtual) {
    collOps.push({
      ...base,
      method: 'delete',
      action: 'deletecollection',
      operationId: `delete${gvWord}Collection${nsWord}${kind}`,
      description: `delete collection of ${kind}`,
      params: DELETE_COLLECTION_PARAMS,
      body: { definition: DELETE_OPTIONS, required: false, contentTypes: ['*/*'] },
      responses: [ok(STATUS)],
    });
  }
  if (verbs.has('list') && !desc.virtual) {
    collOps.push({
      ...base,
      method: 'get',
      action: 'list',
      operationId: `list${gvWord}${nsWord}${kind}`,
      description: `list or watch objects of kind ${kind}`,
      params: LIST_PARAMS,
      responses: [ok(listDef)],
    });
  }
  if (verbs.has('create')) {
    collOps.push({
      ...base,
      method: 'post',
      action: 'post',
      operationId: `create${gvWord}${nsWord}${kind}`,
      description: `create ${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind}`,
      params: WRITE_PARAMS,
      body: { definition: kindDef, required: true, contentTypes: ['*/*'] },
      responses: [ok(kindDef), created(kindDef), accepted(kindDef)],
    });
  }
  if (collOps.length) items.push({ path: collection, params: [...scopeParams, P_PRETTY], ops: collOps });

  if (desc.virtual) return items;

  // Item: read, replace, patch, delete.
  const itemOps: Op[] = [];
  if (verbs.has('delete')) {
    itemOps.push({
      ...base,
      method: 'delete',
      action: 'delete',
      operationId: `delete${gvWord}${nsWord}${kind}`,
      description: `delete ${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind}`,
      params: DELETE_PARAMS,
      body: { definition: DELETE_OPTIONS, required: false, contentTypes: ['*/*'] },
      responses: [ok(STATUS), accepted(STATUS)],
    });
  }
  if (verbs.has('get')) {
    itemOps.push({
      ...base,
      method: 'get',
      action: 'get',
      operationId: `read${gvWord}${nsWord}${kind}`,
      description: `read the specified ${kind}`,
      params: [],
      responses: [ok(kindDef)],
    });
  }
  if (verbs.has('patch')) {
    itemOps.push({
      ...base,
      method: 'patch',
      action: 'patch',
      operationId: `patch${gvWord}${nsWord}${kind}`,
      description: `partially update the specified ${kind}`,
      params: PATCH_PARAMS,
      body: { definition: PATCH, required: true, contentTypes: patchTypes },
      responses: [ok(kindDef), created(kindDef)],
    });
  }
  if (verbs.has('update')) {
    itemOps.push({
      ...base,
      method: 'put',
      action: 'put',
      operationId: `replace${gvWord}${nsWord}${kind}`,
      description: `replace the specified ${kind}`,
      params: WRITE_PARAMS,
      body: { definition: kindDef, required: true, contentTypes: ['*/*'] },
      responses: [ok(kindDef), created(kindDef)],
    });
  }
  if (itemOps.length) items.push({ path: item, params: [nameParam(kind), ...scopeParams, P_PRETTY], ops: itemOps });

  // Status subresource: read, replace, patch.
  if (desc.hasStatus) {
    const statusOps: Op[] = [];
    if (verbs.has('get')) {
      statusOps.push({
        ...base,
        method: 'get',
        action: 'get',
        operationId: `read${gvWord}${nsWord}${kind}Status`,
        description: `read status of the specified ${kind}`,
        params: [],
        responses: [ok(kindDef)],
      });
    }
    if (verbs.has('patch')) {
      statusOps.push({
        ...base,
        method: 'patch',
        action: 'patch',
        operationId: `patch${gvWord}${nsWord}${kind}Status`,
        description: `partially update status of the specified ${kind}`,
        params: PATCH_PARAMS,
        body: { definition: PATCH, required: true, contentTypes: patchTypes },
        responses: [ok(kindDef), created(kindDef)],
      });
    }
    if (verbs.has('update')) {
      statusOps.push({
        ...base,
        method: 'put',
        action: 'put',
        operationId: `replace${gvWord}${nsWord}${kind}Status`,
        description: `replace status of the specified ${kind}`,
        params: WRITE_PARAMS,
        body: { definition: kindDef, required: true, contentTypes: ['*/*'] },
        responses: [ok(kindDef), created(kindDef)],
      });
    }
    if (statusOps.length) items.push({ path: `${item}/status`, params: [nameParam(kind), ...scopeParams, P_PRETTY], ops: statusOps });
  }

  // List across all namespaces.
  if (desc.namespaced && verbs.has('list')) {
    items.push({
      path: `${prefix}/${desc.plural}`,
      params: [P_PRETTY],
      ops: [
        {
          ...base,
          method: 'get',
          action: 'list',
          operationId: `list${gvWord}${kind}ForAllNamespaces`,
          description: `list or watch objects of kind ${kind}`,
          params: LIST_PARAMS,
          responses: [ok(listDef)],
        },
      ],
    });
  }
  return items;
}

// ---------------------------------------------------------------------------------------------
// Schemas.

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Collects every `#/components/schemas/<name>` referenced anywhere in `v`. */
function collectRefs(v: unknown, out: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) collectRefs(x, out);
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v as Json)) {
      if (k === '$ref' && typeof x === 'string' && x.startsWith(V3_REF_PREFIX)) out.add(x.slice(V3_REF_PREFIX.length));
      else collectRefs(x, out);
    }
  }
}

function gvkList(group: string, version: string, kind: string): Array<Record<string, string>> {
  return [{ group, kind, version }];
}

/**
 * The published schema of a descriptor's kind: the descriptor's own `schema` when set (with
 * `apiVersion`, `kind` and `metadata` forced to the standard ones, as kube's CRD builder does),
 * else the built-in schema, else an open object schema.
 */
function kindSchemaFor(desc: ResourceDescriptor): Json {
  const { group, version, kind } = desc;
  const name = definitionName(group, version, kind);
  const gvk = gvkList(group, version, kind);
  if (desc.schema) return withStandardProps(clone(desc.schema) as Json, gvk, false);
  if (BUILTIN_SCHEMAS[name]) return { ...(clone(BUILTIN_SCHEMAS[name]) as Json), 'x-kubernetes-group-version-kind': gvk };
  return {
    description: `${kind} objects (no schema published; any fields are accepted).`,
    type: 'object',
    properties: standardProps(),
    'x-kubernetes-preserve-unknown-fields': true,
    'x-kubernetes-group-version-kind': gvk,
  };
}

/**
 * A custom resource schema as kube's CRD builder publishes it (builder.go buildKubeNative,
 * addTypeMetaProperties, addEmbeddedProperties): the schema with `apiVersion`, `kind` and
 * `metadata` set to the standard ones (whatever the schema said about them), the standard ones of
 * every embedded resource too ({@link addEmbeddedProperties}), and the GVK extension. `v2`: the
 * schema is already reduced for OpenAPI v2.
 */
function withStandardProps(schema: Json, gvk: Array<Record<string, string>>, v2: boolean): Json {
  const props = isObject(schema.properties) ? schema.properties : {};
  const s = addEmbeddedProperties({ ...schema, properties: sortKeys({ ...props, ...standardProps() }) }, v2);
  return { ...s, 'x-kubernetes-group-version-kind': gvk };
}

/**
 * kube's builder.go addEmbeddedProperties: every `x-kubernetes-embedded-resource: true` object of
 * a custom resource schema (at any depth, through properties, items and additionalProperties) gets
 * `apiVersion` and `kind` (strings, with the embedded-resource wording of
 * {@link TYPE_META_DESCRIPTIONS}) and the standard `metadata`, and requires `kind` and
 * `apiVersion`. In OpenAPI v2 an object that also preserves unknown fields gets nothing (kubectl
 * would then reject its unknown fields). Returns a new schema.
 */
function addEmbeddedProperties(s: Json, v2: boolean): Json {
  const out: Json = { ...s };
  if (isObject(s.properties)) {
    const m: Json = {};
    for (const [name, sub] of Object.entries(s.properties)) m[name] = isObject(sub) ? addEmbeddedProperties(sub, v2) : sub;
    out.properties = m;
  }
  if (isObject(s.items)) out.items = addEmbeddedProperties(s.items, v2);
  if (isObject(s.additionalProperties)) out.additionalProperties = addEmbeddedProperties(s.additionalProperties, v2);
  if (v2 && s['x-kubernetes-preserve-unknown-fields'] === true) return out;
  if (s['x-kubernetes-embedded-resource'] === true) {
    out.properties = sortKeys({
      ...(isObject(out.properties) ? out.properties : {}),
      apiVersion: { type: 'string', description: TYPE_META_DESCRIPTIONS.embeddedApiVersion },
      kind: { type: 'string', description: TYPE_META_DESCRIPTIONS.embeddedKind },
      metadata: objectMetaProp(),
    });
    const required = Array.isArray(s.required) ? [...(s.required as unknown[])] : [];
    const had = new Set(required);
    if (!had.has('kind')) required.push('kind');
    if (!had.has('apiVersion')) required.push('apiVersion');
    out.required = required;
  }
  return out;
}

/** `apiVersion`, `kind` and `metadata` of a kind schema, taken from a built-in kind. */
function standardProps(): Json {
  const cm = BUILTIN_SCHEMAS['io.k8s.api.core.v1.ConfigMap'] as Json;
  const p = cm.properties as Json;
  return { apiVersion: clone(p.apiVersion), kind: clone(p.kind), metadata: clone(p.metadata) };
}

function sortKeys(o: Json): Json {
  const out: Json = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k];
  return out;
}

/**
 * `components.schemas` for a set of descriptors: kind and list schemas plus the transitive
 * closure of referenced definitions (and DeleteOptions, Status, Patch used by the operations),
 * sorted by name. Dangling references get an open placeholder so every `$ref` resolves.
 */
function schemasFor(descs: ResourceDescriptor[], ops: Op[]): Json {
  const found: Record<string, Json> = {};
  for (const d of descs) {
    const kindDef = definitionName(d.group, d.version, d.kind);
    if (!found[kindDef]) found[kindDef] = kindSchemaFor(d);
    const listDef = definitionName(d.group, d.version, d.listKind);
    if (!d.virtual && !found[listDef]) found[listDef] = clone(listSchema(d.group, d.version, d.listKind, d.kind, kindDef)) as Json;
  }
  const pending = new Set<string>();
  for (const op of ops) {
    if (op.body) pending.add(op.body.definition);
    for (const r of op.responses) pending.add(r.definition);
  }
  for (const s of Object.values(found)) collectRefs(s, pending);
  while (pending.size) {
    const [name] = pending;
    pending.delete(name!);
    if (found[name!]) continue;
    const builtin = BUILTIN_SCHEMAS[name!];
    const s: Json = builtin
      ? (clone(builtin) as Json)
      : { description: `Definition ${name} is not published.`, type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    found[name!] = s;
    collectRefs(s, pending);
  }
  return sortKeys(found);
}

// ---------------------------------------------------------------------------------------------
// v3.

function v3Param(p: Param): Json {
  const out: Json = { description: p.description, in: p.in, name: p.name };
  if (p.required) out.required = true;
  out.schema = { type: p.type, uniqueItems: true };
  return out;
}

function v3Content(definition: string, types: string[]): Json {
  const content: Json = {};
  for (const t of types) content[t] = { schema: { $ref: V3_REF_PREFIX + definition } };
  return content;
}

function v3Op(op: Op): Json {
  const out: Json = { description: op.description, operationId: op.operationId };
  if (op.params.length) out.parameters = op.params.map(v3Param);
  if (op.body) {
    const rb: Json = { content: v3Content(op.body.definition, op.body.contentTypes) };
    if (op.body.required) rb.required = true;
    out.requestBody = rb;
  }
  const responses: Json = {};
  for (const r of op.responses) responses[r.code] = { content: v3Content(r.definition, PRODUCES), description: r.description };
  out.responses = responses;
  out.tags = [op.tag];
  out['x-kubernetes-action'] = op.action;
  out['x-kubernetes-group-version-kind'] = { group: op.gvk.group, kind: op.gvk.kind, version: op.gvk.version };
  return out;
}

/** Emits a path item with its operations in a fixed (alphabetical, like kube) key order. */
function pathItemJson(item: PathItem, opJson: (op: Op) => Json, paramJson: (p: Param) => Json): Json {
  const out: Json = {};
  const byMethod = new Map(item.ops.map((o) => [o.method, o] as const));
  for (const m of ['delete', 'get'] as const) if (byMethod.has(m)) out[m] = opJson(byMethod.get(m)!);
  out.parameters = item.params.map(paramJson);
  for (const m of ['patch', 'post', 'put'] as const) if (byMethod.has(m)) out[m] = opJson(byMethod.get(m)!);
  return out;
}

function sortedDescriptors(descs: ResourceDescriptor[]): ResourceDescriptor[] {
  const key = (d: ResourceDescriptor) => `${d.group}\u0000${d.version}\u0000${d.plural}`;
  const seen = new Set<string>();
  const out: ResourceDescriptor[] = [];
  for (const d of [...descs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))) {
    if (seen.has(key(d))) continue;
    seen.add(key(d));
    out.push(d);
  }
  return out;
}

function pathsFor(descs: ResourceDescriptor[]): PathItem[] {
  const items = descs.flatMap(resourcePaths);
  // Two resources never share a path, but keep the first if they do; sort for determinism.
  const byPath = new Map<string, PathItem>();
  for (const it of items) if (!byPath.has(it.path)) byPath.set(it.path, it);
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The `/openapi/v3` discovery key of a group/version: `api/v1` or `apis/<group>/<version>`. */
export function openAPIV3GroupVersionPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/**
 * Parses the part of a `/openapi/v3/...` URL path after `/openapi/v3/` (query string already
 * removed, leading/trailing slashes tolerated) into a group/version; undefined if it is not of the
 * form `api/<version>` or `apis/<group>/<version>`.
 */
export function parseOpenAPIV3GroupVersionPath(path: string): { group: string; version: string } | undefined {
  const parts = path.split('/').filter(Boolean);
  if (parts.length === 2 && parts[0] === 'api') return { group: '', version: parts[1]! };
  if (parts.length === 3 && parts[0] === 'apis') return { group: parts[1]!, version: parts[2]! };
  return undefined;
}

/**
 * The content hash kube-openapi publishes for a document: SHA-512 of its JSON serialization
 * (`JSON.stringify(doc)`), upper-case hex. Also usable as an ETag.
 */
export function openAPIDocumentHash(doc: unknown): string {
  return openAPITextHash(JSON.stringify(doc));
}

/** {@link openAPIDocumentHash} of a document already serialised (`text`: its `JSON.stringify`). */
export function openAPITextHash(text: string): string {
  return createHash('sha512').update(text).digest('hex').toUpperCase();
}

/**
 * The `/openapi/v3/<api/v1 | apis/<group>/<version>>` document of one group/version: OpenAPI
 * 3.0.0 with the resources' operations (list/create/deletecollection on collections,
 * get/put/patch/delete on items, get/put/patch on `/status`, list-for-all-namespaces; watch paths
 * are omitted) and `components.schemas` holding every referenced definition. Returns undefined
 * when no descriptor belongs to that group/version.
 */
export function buildOpenAPIV3GroupVersion(descs: ResourceDescriptor[], group: string, version: string): Json | undefined {
  const gvDescs = sortedDescriptors(descs.filter((d) => d.group === group && d.version === version));
  if (!gvDescs.length) return undefined;
  const items = pathsFor(gvDescs);
  const ops = items.flatMap((i) => i.ops);
  const paths: Json = {};
  for (const it of items) paths[it.path] = pathItemJson(it, v3Op, v3Param);
  return {
    components: { schemas: schemasFor(gvDescs, ops) },
    info: { title: 'Kubernetes', version: 'unversioned' },
    openapi: '3.0.0',
    paths,
  };
}

function groupVersions(descs: ResourceDescriptor[]): Array<{ group: string; version: string }> {
  const seen = new Map<string, { group: string; version: string }>();
  for (const d of descs) seen.set(openAPIV3GroupVersionPath(d.group, d.version), { group: d.group, version: d.version });
  return [...seen.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
}

/** The `/openapi/v3` discovery document's shape. */
export interface OpenAPIV3Root { paths: Record<string, { serverRelativeURL: string }> }

/**
 * The `/openapi/v3` discovery document: `{paths: {"api/v1": {serverRelativeURL:
 * "/openapi/v3/api/v1?hash=<SHA512>"}, "apis/<g>/<v>": …}}`, one entry per served group/version.
 * The hash is {@link openAPIDocumentHash} of the group/version document; `hashOf` gives it when
 * the caller already has it (the server keeps each group/version's document and hash).
 */
export function buildOpenAPIV3Root(descs: ResourceDescriptor[], hashOf?: (key: string) => string): OpenAPIV3Root {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const { group, version } of groupVersions(descs)) {
    const key = openAPIV3GroupVersionPath(group, version);
    const hash = hashOf ? hashOf(key) : openAPIDocumentHash(buildOpenAPIV3GroupVersion(descs, group, version)!);
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
  }
  return { paths };
}

// ---------------------------------------------------------------------------------------------
// v2.

/** Keys of a schema whose value is a map of schemas. */
const SCHEMA_MAP_KEYS = new Set(['properties', 'patternProperties', 'definitions']);
/** Keys of a schema whose value is a schema, a list of schemas, or (`additional*`) a boolean. */
const SCHEMA_KEYS = new Set(['items', 'additionalProperties', 'additionalItems', 'not']);
const SCHEMA_LIST_KEYS = new Set(['allOf', 'anyOf', 'oneOf']);
/** Schema keywords Swagger 2.0 lacks; `default` is pruned as kube-openapi's handler.PruneDefaults does. */
const NO_V2 = new Set(['oneOf', 'anyOf', 'not', 'nullable', 'default']);

function isObject(v: unknown): v is Json {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Applies `fn` to every sub-schema of `s` (property, pattern property and definition values,
 * `items` — one schema or a list —, `additionalProperties`/`additionalItems` when a schema,
 * `not`, and the `allOf`/`anyOf`/`oneOf` members), returning a copy of `s` with the results.
 * Only schema positions are visited: a property *named* `nullable` or an `enum`/`example` value
 * containing such a key is data, not a keyword.
 */
function mapSubSchemas(s: Json, fn: (sub: Json) => Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (SCHEMA_MAP_KEYS.has(k) && isObject(v)) {
      const m: Json = {};
      for (const [name, sub] of Object.entries(v)) m[name] = isObject(sub) ? fn(sub) : sub;
      out[k] = m;
    } else if (SCHEMA_KEYS.has(k) && isObject(v)) {
      out[k] = fn(v);
    } else if ((SCHEMA_LIST_KEYS.has(k) || k === 'items') && Array.isArray(v)) {
      out[k] = v.map((sub) => (isObject(sub) ? fn(sub) : sub));
    } else {
      out[k] = v;
    }
  }
  return out;
}

/**
 * Rewrites a v3 schema for Swagger 2.0: `#/definitions/` refs, a description-only wrapper
 * `{allOf: [{$ref}], description}` unwrapped to `{$ref, description}` (kube-openapi's v2 shape),
 * and the keywords v2 lacks dropped ({@link NO_V2}), at every schema position.
 */
function toV2Schema(o: Json): Json {
  const allOf = o.allOf;
  if (Array.isArray(allOf) && allOf.length === 1) {
    const only = allOf[0];
    const rest = Object.keys(o).filter((k) => k !== 'allOf' && k !== 'default');
    if (isObject(only) && typeof only.$ref === 'string' && rest.every((k) => k === 'description' || k.startsWith('x-'))) {
      const out: Json = { $ref: toV2Ref(only.$ref) };
      for (const k of rest) out[k] = o[k];
      return out;
    }
  }
  const out = mapSubSchemas(o, toV2Schema);
  for (const k of NO_V2) delete out[k];
  if (typeof out.$ref === 'string') out.$ref = toV2Ref(out.$ref);
  return out;
}

function toV2Ref(ref: string): string {
  return ref.startsWith(V3_REF_PREFIX) ? V2_REF_PREFIX + ref.slice(V3_REF_PREFIX.length) : ref;
}

/**
 * Kube's reduction of a custom resource schema for OpenAPI v2 (apiextensions-apiserver
 * pkg/controller/openapi/v2/conversion.go ToStructuralOpenAPIV2, applied to the structural schema
 * after Unfold), at every structural node (root, properties, items, additionalProperties), parent
 * before children:
 *
 * - `allOf`, `oneOf`, `anyOf` and `not` are dropped (with them the `anyOf: [integer, string]` that
 *   Unfold derives from `x-kubernetes-int-or-string`; the extension itself stays);
 * - a `nullable` node loses `nullable`, `type`, `items` and `properties` (kubectl breaks on untyped
 *   values with items or properties), and its name leaves the parent's `required`; a nullable
 *   `additionalProperties` schema empties the parent's `required`;
 * - an `x-kubernetes-preserve-unknown-fields` node loses `items` and `properties` (kubectl would
 *   otherwise reject the unknown fields), and `type: object`;
 * - an `array` left without `items` loses its `type`.
 *
 * Returns a new schema; `schema` is not modified.
 */
export function toStructuralOpenAPIV2(schema: Json): Json {
  const s: Json = { ...schema };
  for (const k of ['allOf', 'oneOf', 'anyOf', 'not']) delete s[k];
  const props = isObject(s.properties) ? s.properties : undefined;
  if (props && Array.isArray(s.required)) {
    const required = s.required.filter((name) => !(isObject(props[name as string]) && (props[name as string] as Json).nullable === true));
    if (required.length) s.required = required;
    else delete s.required;
  }
  if (isObject(s.additionalProperties) && s.additionalProperties.nullable === true) delete s.required;
  if (s.nullable === true) {
    delete s.type;
    delete s.items;
    delete s.properties;
  }
  delete s.nullable;
  if (s['x-kubernetes-preserve-unknown-fields'] === true) {
    delete s.items;
    delete s.properties;
  }
  if (s.type === 'array' && s.items === undefined) delete s.type;
  if (s['x-kubernetes-preserve-unknown-fields'] === true && s.type === 'object') delete s.type;
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties' && isObject(v)) {
      const m: Json = {};
      for (const [name, sub] of Object.entries(v)) m[name] = isObject(sub) ? toStructuralOpenAPIV2(sub) : sub;
      out[k] = m;
    } else if ((k === 'items' || k === 'additionalProperties') && isObject(v)) {
      out[k] = toStructuralOpenAPIV2(v);
    } else {
      out[k] = v;
    }
  }
  return out;
}

/**
 * The v2 definition of a descriptor's kind. Built-in kinds: their v3 schema rewritten by
 * {@link toV2Schema}. Kinds with their own schema (custom resources), as kube's CRD builder
 * publishes them with `V2: true` (builder.go buildKubeNative): just `{type: object}` and the GVK
 * when the schema preserves unknown fields at its root or there is none (so kubectl validates
 * nothing client-side), else the schema reduced by {@link toStructuralOpenAPIV2} with the
 * standard `apiVersion`, `kind` and `metadata`.
 */
function kindDefinitionV2(desc: ResourceDescriptor): Json {
  const gvk = gvkList(desc.group, desc.version, desc.kind);
  const builtin = BUILTIN_SCHEMAS[definitionName(desc.group, desc.version, desc.kind)];
  if (!desc.schema && builtin) return toV2Schema(kindSchemaFor(desc));
  if (!desc.schema || desc.schema['x-kubernetes-preserve-unknown-fields'] === true) {
    return { type: 'object', 'x-kubernetes-group-version-kind': gvk };
  }
  const reduced = toStructuralOpenAPIV2(desc.schema);
  return toV2Schema(withStandardProps(reduced, gvk, true));
}

function toV2Definition(name: string, schema: Json): Json {
  if (name === QUANTITY) return { description: schema.description, type: 'string', format: 'quantity' };
  return toV2Schema(schema);
}

function v2Param(p: Param): Json {
  const out: Json = { description: p.description, in: p.in, name: p.name };
  if (p.required) out.required = true;
  out.type = p.type;
  out.uniqueItems = true;
  return out;
}

function v2Op(op: Op): Json {
  const out: Json = {
    consumes: op.body && op.method === 'patch' ? [...op.body.contentTypes] : ['*/*'],
    description: op.description,
    operationId: op.operationId,
  };
  const params: Json[] = [];
  if (op.body) {
    const body: Json = { in: 'body', name: 'body', schema: { $ref: V2_REF_PREFIX + op.body.definition } };
    if (op.body.required) body.required = true;
    params.push(body);
  }
  params.push(...op.params.map(v2Param));
  if (params.length) out.parameters = params;
  out.produces = [...PRODUCES];
  const responses: Json = {};
  for (const r of op.responses) responses[r.code] = { description: r.description, schema: { $ref: V2_REF_PREFIX + r.definition } };
  responses['401'] = { description: 'Unauthorized' };
  out.responses = responses;
  out.schemes = ['https'];
  out.tags = [op.tag];
  out['x-kubernetes-action'] = op.action;
  out['x-kubernetes-group-version-kind'] = { group: op.gvk.group, kind: op.gvk.kind, version: op.gvk.version };
  return out;
}

/**
 * The `/openapi/v2` (Swagger 2.0) document of all descriptors: `definitions` under the same names
 * as v3 (`$ref: #/definitions/<name>`), and the same paths and operations, including the
 * `fieldValidation` parameter and `x-kubernetes-group-version-kind` on every operation.
 */
export function buildOpenAPIV2(descs: ResourceDescriptor[]): Json {
  const all = sortedDescriptors(descs);
  const items = pathsFor(all);
  const ops = items.flatMap((i) => i.ops);
  const schemas = schemasFor(all, ops);
  const definitions: Json = {};
  const kindDescs = new Map(all.map((d) => [definitionName(d.group, d.version, d.kind), d] as const));
  for (const [name, s] of Object.entries(schemas)) {
    const desc = kindDescs.get(name);
    definitions[name] = desc ? kindDefinitionV2(desc) : toV2Definition(name, s as Json);
  }
  const paths: Json = {};
  for (const it of items) paths[it.path] = pathItemJson(it, v2Op, v2Param);
  return { definitions, info: v2Info(), paths, ...v2Trailer() };
}

/** The v2 document's `info`. */
const v2Info = () => ({ title: 'Kubernetes', version: 'unversioned' });

/** The v2 document's members after `paths`. */
const v2Trailer = () => ({
  security: [{ BearerToken: [] }],
  securityDefinitions: {
    BearerToken: { description: 'Bearer Token authentication', in: 'header', name: 'authorization', type: 'apiKey' },
  },
  swagger: '2.0',
});

/** {@link v2Info} and {@link v2Trailer} as `JSON.stringify` writes them in the document. */
const V2_INFO = JSON.stringify(v2Info());
const V2_TAIL = JSON.stringify(v2Trailer()).slice(1, -1);

/**
 * What one group/version contributes to the `/openapi/v2` document: its definitions (its kinds and
 * lists, and every definition they and their operations reference) and its paths, each as the
 * JSON text `buildOpenAPIV2` writes for it. `owned`: the definitions of this group/version's own
 * kinds and lists; another group/version may reference them, and the merged document takes the
 * owner's text (a referencing group/version has only the generic form).
 */
export interface OpenAPIV2Part {
  definitions: Map<string, string>;
  owned: Set<string>;
  paths: Map<string, string>;
}

/** The {@link OpenAPIV2Part} of one group/version's descriptors (descriptors of other group/versions make a wrong part). */
export function buildOpenAPIV2Part(gvDescs: ResourceDescriptor[]): OpenAPIV2Part {
  const all = sortedDescriptors(gvDescs);
  const items = pathsFor(all);
  const schemas = schemasFor(all, items.flatMap((i) => i.ops));
  const kindDescs = new Map(all.map((d) => [definitionName(d.group, d.version, d.kind), d] as const));
  const owned = new Set<string>(kindDescs.keys());
  for (const d of all) if (!d.virtual) owned.add(definitionName(d.group, d.version, d.listKind));
  const definitions = new Map<string, string>();
  for (const [name, sch] of Object.entries(schemas)) {
    const desc = kindDescs.get(name);
    definitions.set(name, JSON.stringify(desc ? kindDefinitionV2(desc) : toV2Definition(name, sch as Json)));
  }
  const paths = new Map<string, string>();
  for (const it of items) paths.set(it.path, JSON.stringify(pathItemJson(it, v2Op, v2Param)));
  return { definitions, owned, paths };
}

/** One definition or path of merged {@link OpenAPIV2Part}s: its name, its JSON text, and the index of the part it was taken from. */
export interface OpenAPIV2Entry { name: string; text: string; part: number }

/**
 * Definitions and paths of several {@link OpenAPIV2Part}s merged, each sorted by name (as
 * `buildOpenAPIV2` orders them); a definition several parts have is taken from its owner.
 */
export function mergeOpenAPIV2Parts(parts: OpenAPIV2Part[]): { definitions: OpenAPIV2Entry[]; paths: OpenAPIV2Entry[] } {
  const definitions = new Map<string, OpenAPIV2Entry>();
  const fromOwner = new Set<string>();
  const paths = new Map<string, OpenAPIV2Entry>();
  parts.forEach((p, part) => {
    for (const [name, text] of p.definitions) {
      if (fromOwner.has(name)) continue;
      if (p.owned.has(name)) { fromOwner.add(name); definitions.set(name, { name, text, part }); } else if (!definitions.has(name)) definitions.set(name, { name, text, part });
    }
    for (const [name, text] of p.paths) if (!paths.has(name)) paths.set(name, { name, text, part });
  });
  const byName = (a: OpenAPIV2Entry, b: OpenAPIV2Entry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return { definitions: [...definitions.values()].sort(byName), paths: [...paths.values()].sort(byName) };
}

/**
 * The `/openapi/v2` text around its members: `head`, the definitions' members joined by commas,
 * `middle`, the paths' members joined by commas, `tail` — byte for byte what `JSON.stringify`
 * writes for `buildOpenAPIV2`'s document.
 */
export const OPENAPI_V2_FRAME = { head: '{"definitions":{', middle: `},"info":${V2_INFO},"paths":{`, tail: `},${V2_TAIL}}` } as const;

/** One member of the v2 document's `definitions` or `paths`: `"<name>":<text>`. */
export function openAPIV2Member(e: { name: string; text: string }): string {
  return `${JSON.stringify(e.name)}:${e.text}`;
}

/**
 * The `/openapi/v2` text of merged parts: byte for byte `JSON.stringify(buildOpenAPIV2(descs))`
 * of their descriptors, made of the parts' texts without building or serialising anything again.
 */
export function assembleOpenAPIV2(merged: { definitions: OpenAPIV2Entry[]; paths: OpenAPIV2Entry[] }): string {
  const { head, middle, tail } = OPENAPI_V2_FRAME;
  return `${head}${merged.definitions.map(openAPIV2Member).join(',')}${middle}${merged.paths.map(openAPIV2Member).join(',')}${tail}`;
}

/** The descriptors of a set by `/openapi/v3` group/version key (`api/v1`, `apis/<group>/<version>`), sorted by key. */
export function descriptorsByGroupVersion(descs: ResourceDescriptor[]): Map<string, ResourceDescriptor[]> {
  const byGV = new Map<string, ResourceDescriptor[]>();
  for (const d of descs) {
    const key = openAPIV3GroupVersionPath(d.group, d.version);
    const list = byGV.get(key);
    if (list) list.push(d); else byGV.set(key, [d]);
  }
  return new Map([...byGV].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

// ---------------------------------------------------------------------------------------------
// Content negotiation.

/**
 * Parses an Accept header into media ranges with their quality (`q`), dropping ranges with q=0.
 */
function parseAccept(accept: string): Array<{ type: string; subtype: string; q: number }> {
  const out: Array<{ type: string; subtype: string; q: number }> = [];
  for (const clause of accept.split(',')) {
    const [range, ...params] = clause.split(';').map((s) => s.trim());
    if (!range) continue;
    const slash = range.indexOf('/');
    const type = (slash < 0 ? range : range.slice(0, slash)).toLowerCase();
    const subtype = (slash < 0 ? '*' : range.slice(slash + 1)).toLowerCase();
    let qv = 1;
    for (const p of params) {
      const m = /^q\s*=\s*([0-9.]+)$/i.exec(p);
      if (m) qv = Number(m[1]);
    }
    if (Number.isNaN(qv) || qv <= 0) continue;
    out.push({ type, subtype, q: qv });
  }
  return out;
}

/**
 * Whether an Accept header admits `application/json` for `/openapi/v2` (and `/openapi/v3`
 * documents). kube-apiserver also serves the protobuf forms
 * (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, …); kcp-ts serves only JSON, so
 * a request that accepts nothing but protobuf must get 406 NotAcceptable (client-go then treats
 * the OpenAPI v2 document as unavailable and kubectl carries on with v3). A missing or empty
 * header means `*\/*`.
 */
export function acceptsOpenAPIV2Json(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return parseAccept(accept).some(
    (r) => (r.type === '*' || r.type === 'application') && (r.subtype === '*' || r.subtype === 'json'),
  );
}

/** Same negotiation for the per-group/version `/openapi/v3/...` documents (JSON only). */
export const acceptsOpenAPIV3Json = acceptsOpenAPIV2Json;
