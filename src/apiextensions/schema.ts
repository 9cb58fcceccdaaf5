/**
 * Custom resource schemas: structural pruning, defaulting and validation of custom resources
 * against a CRD version's `openAPIV3Schema`, as kube-apiserver (apiextensions-apiserver,
 * Kubernetes 1.32) does:
 *
 * - pruning: pkg/apiserver/schema/pruning/algorithm.go, plus
 *   `PruneNonNullableNullsWithoutDefaults` (schema/defaulting/prunenulls.go) and the ObjectMeta
 *   pruning of embedded resources (schema/objectmeta/coerce.go), all run by the CR decoder
 *   (customresource_handler.go `unstructuredSchemaCoercer.apply`);
 * - defaulting: schema/defaulting/algorithm.go, with defaults pruned up front
 *   (schema/defaulting/prune.go `PruneDefaults`);
 * - validation: registry/customresource/strategy.go `Validate`/`ValidateUpdate`: OpenAPI schema
 *   validation (kube-openapi, via ajv in ./schema-openapi.ts) with ratcheting on update
 *   (pkg/apiserver/validation/ratcheting.go), embedded resources (schema/objectmeta/validation.go),
 *   `x-kubernetes-list-type` set/map uniqueness (schema/listtype/validation.go) and CEL rules
 *   (schema/cel/validation.go, ./cel.ts), skipped with kube's notice when earlier errors block them.
 *
 * Schemas are compiled once and cached per schema object (do not mutate a schema after use).
 */
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import { pruneUnknownFields } from '../apimachinery/pruning.js';
import { validateObjectMeta } from '../apimachinery/validation.js';
import type { ObjectMeta } from '../apimachinery/meta.js';
import { BUILTIN_SCHEMAS } from '../apis/schemas/index.js';
import { OBJECT_META } from '../apis/schemas/helpers.js';
import { compileRule, evaluateRule, toCel, type CelSchemaNode, type CompiledRule, type ValidationRule } from './cel.js';
import { CostBudget } from './celcost.js';
import { compileOpenAPI, type OpenAPIValidator } from './schema-openapi.js';
import {
  NIL_PATH, childPath, duplicateCause, forbiddenCause, goJSON, indexPath, invalidCause, invalidCauseRaw, keyPath,
  requiredCause,
} from './schema-errors.js';
import { isObj } from '../apimachinery/objects.js';

type Raw = Record<string, unknown>;

/** A compiled CRD schema. */
export interface CompiledSchema {
  /**
   * Removes fields not in the structural schema (respecting x-kubernetes-preserve-unknown-fields,
   * x-kubernetes-embedded-resource (keeps apiVersion/kind/metadata), additionalProperties), in
   * place; returns removed paths in kube's strict-decoding path format (`spec.foo`,
   * `spec.items[0].bar`), in document order. apiVersion/kind/metadata at the root are never pruned
   * (metadata is handled elsewhere).
   */
  prune(obj: Record<string, unknown>): string[];
  /**
   * Applies `default` values in place, as kube's structural defaulting (defaults of properties that
   * are absent, recursively, also inside list items and map values; defaults are themselves
   * pruned/defaulted as kube does; `nullable: false` fields set to null get their default).
   * Returns whether anything was set. Linear in the size of `obj` plus the defaults copied.
   * Throws a 413 StatusError (nothing to undo: `obj` is then partly defaulted) when the defaults
   * copied into one object would exceed {@link MAX_DEFAULTED_CHARS}.
   */
  applyDefaults(obj: Record<string, unknown>): boolean;
  /** Whether any node of the schema has a `default` (otherwise `applyDefaults` never changes anything). */
  readonly hasDefaults: boolean;
  /**
   * Validates against the schema and its CEL rules; `old` is the previous object on update (for
   * transition rules using `oldSelf`, and ratcheting). Returns causes with `field` like
   * `spec.replicas` and kube's messages/`reason`.
   */
  validate(obj: Record<string, unknown>, old?: Record<string, unknown>): StatusCause[];
}

// ---------------------------------------------------------------------------------------------
// Structural schema
// ---------------------------------------------------------------------------------------------

/** One node of the structural schema (the "spine": properties, additionalProperties, items). */
interface SNode extends CelSchemaNode {
  properties: Map<string, SNode> | undefined;
  /** `additionalProperties` schema; `null` for the boolean form; undefined when absent. */
  additional: SNode | null | undefined;
  items: SNode | undefined;
  hasDefault: boolean;
  /** The default, pruned against this node (deep-copied on use). */
  defaultValue: unknown;
  /** Length of the default's JSON (at least 1), counted against {@link MAX_DEFAULTED_CHARS}; computed on first use. */
  defaultChars?: number;
  listType: string | undefined;
  listMapKeys: string[] | undefined;
  rules: CompiledRule[];
  /** Normalized `fieldPath` per rule index (kube `NormalizedRuleFieldPath`). */
  ruleFieldPaths: Array<string | undefined>;
  /** The subtree (this node included) has CEL rules. */
  subRules: boolean;
  /** The subtree has x-kubernetes-list-type set or map. */
  subLists: boolean;
  /** The subtree has x-kubernetes-embedded-resource nodes. */
  subEmbedded: boolean;
  /** The subtree has defaults. */
  subDefaults: boolean;
}


/** The `x-kubernetes-validations` of a node and of its `allOf` members (kube validates both). */
function collectRules(raw: Raw, out: ValidationRule[]): void {
  const rules = raw['x-kubernetes-validations'];
  if (Array.isArray(rules)) for (const r of rules) if (isObj(r) && typeof r.rule === 'string') out.push(r as unknown as ValidationRule);
  if (Array.isArray(raw.allOf)) for (const m of raw.allOf) if (isObj(m)) collectRules(m, out);
}

function buildNode(raw: Raw): SNode {
  const intOrString = raw['x-kubernetes-int-or-string'] === true;
  const node: SNode = {
    type: typeof raw.type === 'string' ? raw.type : '',
    format: typeof raw.format === 'string' ? raw.format : '',
    intOrString,
    nullable: raw.nullable === true,
    embedded: raw['x-kubernetes-embedded-resource'] === true,
    preserveUnknown: raw['x-kubernetes-preserve-unknown-fields'] === true,
    properties: undefined,
    additional: undefined,
    items: undefined,
    hasDefault: raw.default !== undefined && raw.default !== null,
    defaultValue: raw.default,
    listType: typeof raw['x-kubernetes-list-type'] === 'string' ? raw['x-kubernetes-list-type'] as string : undefined,
    listMapKeys: Array.isArray(raw['x-kubernetes-list-map-keys']) ? (raw['x-kubernetes-list-map-keys'] as unknown[]).map(String) : undefined,
    rules: [],
    ruleFieldPaths: [],
    subRules: false,
    subLists: false,
    subEmbedded: false,
    subDefaults: false,
  };
  if (isObj(raw.properties)) {
    node.properties = new Map();
    for (const [k, v] of Object.entries(raw.properties)) node.properties.set(k, buildNode(isObj(v) ? v : {}));
  }
  if (isObj(raw.additionalProperties)) node.additional = buildNode(raw.additionalProperties);
  else if (typeof raw.additionalProperties === 'boolean') node.additional = null;
  if (isObj(raw.items)) node.items = buildNode(raw.items);
  const specs: ValidationRule[] = [];
  collectRules(raw, specs);
  node.rules = specs.map(compileRule);
  node.ruleFieldPaths = specs.map((s) => (typeof s.fieldPath === 'string' && s.fieldPath ? normalizeFieldPath(s.fieldPath, node) : undefined));

  const children: SNode[] = [];
  if (node.properties) children.push(...node.properties.values());
  if (node.additional) children.push(node.additional);
  if (node.items) children.push(node.items);
  node.subRules = node.rules.length > 0 || children.some((c) => c.subRules);
  node.subLists = node.listType === 'set' || node.listType === 'map' || children.some((c) => c.subLists);
  node.subEmbedded = node.embedded || children.some((c) => c.subEmbedded);
  node.subDefaults = node.hasDefault || children.some((c) => c.subDefaults);
  return node;
}

/**
 * kube `ValidFieldPath` + `String()`: the rule's `fieldPath` (`.spec.x`, `['a.b']`) normalized
 * against the schema (`x`, `m[a.b]`), or undefined if it does not resolve (kube would have
 * rejected the CRD).
 */
function normalizeFieldPath(fieldPath: string, node: SNode): string | undefined {
  const tokens = fieldPath.match(/'(?:[^'\\]|\\.)*'|[.[\]]|[^.[\]']+/g) ?? [];
  let out = '';
  let s: SNode | null | undefined = node;
  let i = 0;
  const step = (name: string): boolean => {
    if (!s) return false;
    if (s.properties) {
      const p = s.properties.get(name);
      if (!p) return false;
      out = out ? `${out}.${name}` : name;
      s = p;
      return true;
    }
    if (s.additional !== undefined) {
      out = `${out}[${name}]`;
      s = s.additional;
      return true;
    }
    return false;
  };
  while (i < tokens.length) {
    const tok = tokens[i++]!;
    if (tok === '.') {
      const name = tokens[i++];
      if (name === undefined || !step(name)) return undefined;
    } else if (tok === '[') {
      const q = tokens[i++];
      if (q === undefined || !q.startsWith("'") || tokens[i++] !== ']') return undefined;
      const name = q.slice(1, -1).replace(/\\(.)/g, (_, c: string) => ({ a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' } as Record<string, string>)[c] ?? c);
      if (!step(name)) return undefined;
    } else return undefined;
  }
  return out || undefined;
}

/** Deep copy of a JSON value (`runtime.DeepCopyJSONValue`). */
function deepCopy<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(deepCopy) as T;
  const out: Raw = {};
  for (const k of Object.keys(v)) out[k] = deepCopy((v as Raw)[k]);
  return out as T;
}

/** Deep equality of JSON values (`reflect.DeepEqual` on decoded JSON). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k) || !jsonEqual((a as Raw)[k], (b as Raw)[k])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------------------------

const META_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);
const OBJECT_META_SCHEMA = BUILTIN_SCHEMAS[OBJECT_META] ?? {};

interface PruneState {
  /** Current path segments (keys and indices). */
  segs: Array<string | number>;
  removed: string[] | undefined;
}

function formatSegs(segs: Array<string | number>, key?: string): string {
  let out = '';
  for (const s of segs) out += typeof s === 'number' ? `[${s}]` : out ? `.${s}` : s;
  if (key !== undefined) out += out ? `.${key}` : key;
  return out;
}

function record(st: PruneState, key: string): void {
  st.removed?.push(formatSegs(st.segs, key));
}

/** ObjectMeta pruning of an embedded resource's `metadata` (kube's ObjectMeta decoding). */
function pruneEmbeddedMeta(meta: unknown, st: PruneState): void {
  if (!isObj(meta)) return;
  const paths = pruneUnknownFields(meta, OBJECT_META_SCHEMA, BUILTIN_SCHEMAS);
  if (st.removed && paths.length) {
    const prefix = formatSegs(st.segs, 'metadata');
    for (const p of paths) st.removed.push(`${prefix}.${p}`);
  }
}

/** pruning `prune`: `s` undefined is a nil schema (everything below is unknown). */
function prune(x: unknown, s: SNode | undefined, st: PruneState, root: boolean): void {
  if (s && s.preserveUnknown) {
    skipPrune(x, s, st, root);
    return;
  }
  if (Array.isArray(x)) {
    const items = s?.items;
    const depth = st.segs.length;
    for (let i = 0; i < x.length; i++) {
      st.segs[depth] = i;
      prune(x[i], items, st, false);
    }
    st.segs.length = depth;
    return;
  }
  if (!isObj(x)) return;
  const keys = Object.keys(x);
  if (!s) {
    for (const k of keys) {
      record(st, k);
      delete x[k];
    }
    return;
  }
  const embedded = s.embedded || root;
  const depth = st.segs.length;
  for (const k of keys) {
    if (embedded && META_FIELDS.has(k)) {
      if (k === 'metadata' && s.embedded && !root) pruneEmbeddedMeta(x[k], st);
      continue;
    }
    const prop = s.properties?.get(k);
    if (prop) {
      const v = x[k];
      if (typeof v === 'object' && v !== null) {
        st.segs[depth] = k;
        prune(v, prop, st, false);
        st.segs.length = depth;
      }
    } else if (s.additional !== undefined) {
      const v = x[k];
      if (typeof v === 'object' && v !== null) {
        st.segs[depth] = k;
        prune(v, s.additional ?? undefined, st, false);
        st.segs.length = depth;
      }
    } else {
      if (!META_FIELDS.has(k) || depth > 0) record(st, k);
      delete x[k];
    }
  }
}

/** pruning `skipPrune`: below x-kubernetes-preserve-unknown-fields, only known fields are pruned. */
function skipPrune(x: unknown, s: SNode | undefined, st: PruneState, root: boolean): void {
  if (!s) return;
  const depth = st.segs.length;
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      st.segs[depth] = i;
      skipPrune(x[i], s.items, st, false);
    }
    st.segs.length = depth;
    return;
  }
  if (!isObj(x)) return;
  const embedded = s.embedded || root;
  for (const k of Object.keys(x)) {
    if (embedded && META_FIELDS.has(k)) {
      if (k === 'metadata' && s.embedded && !root) pruneEmbeddedMeta(x[k], st);
      continue;
    }
    const prop = s.properties?.get(k);
    const v = x[k];
    if (typeof v !== 'object' || v === null) continue;
    if (prop) {
      st.segs[depth] = k;
      prune(v, prop, st, false);
      st.segs.length = depth;
    } else if (s.additional !== undefined) {
      st.segs[depth] = k;
      prune(v, s.additional ?? undefined, st, false);
      st.segs.length = depth;
    }
  }
}

/** defaulting `PruneNonNullableNullsWithoutDefaults`. */
function pruneNulls(x: unknown, s: SNode | undefined): void {
  if (Array.isArray(x)) {
    const items = s?.items;
    for (const v of x) if (typeof v === 'object' && v !== null) pruneNulls(v, items);
    return;
  }
  if (!isObj(x)) return;
  for (const k of Object.keys(x)) {
    const v = x[k];
    const child = s ? (s.properties?.get(k) ?? (s.additional ?? undefined)) : undefined;
    if (v === null) {
      if (child && !child.nullable && !child.hasDefault) delete x[k];
    } else if (typeof v === 'object') pruneNulls(v, child);
  }
}

// ---------------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------------

function isNonNullableNull(x: unknown, s: SNode | null | undefined): boolean {
  return x === null && !!s && !s.nullable;
}

/**
 * Most JSON (in UTF-16 code units) defaulting may copy into one object: 3 Mi, kube's largest
 * request body. A default copied into every item of a long list could otherwise turn a small
 * stored object into gigabytes (an empty item is 3 characters, a default may be ~1 MB of a CRD);
 * an object that large could never be written anyway.
 */
export const MAX_DEFAULTED_CHARS = 3 * 1024 * 1024;

/** The budget of one `applyDefaults` call: characters of defaults still allowed. */
interface DefaultingBudget { left: number }

/** A deep copy of a node's default, counted against the budget; throws 413 past it. */
function copyDefault(s: SNode, budget: DefaultingBudget): unknown {
  s.defaultChars ??= Math.max(1, JSON.stringify(s.defaultValue)?.length ?? 1);
  budget.left -= s.defaultChars;
  if (budget.left < 0) throw new StatusError(413, 'RequestEntityTooLarge', `Request entity too large: the defaults of the schema would add more than ${MAX_DEFAULTED_CHARS} characters to the object`);
  return deepCopy(s.defaultValue);
}

/** defaulting `Default`; returns whether anything was set. */
function applyDefaults(x: unknown, s: SNode | null | undefined, budget: DefaultingBudget): boolean {
  if (!s || !s.subDefaults) return false;
  let changed = false;
  if (Array.isArray(x)) {
    const items = s.items;
    if (!items) return false;
    for (let i = 0; i < x.length; i++) {
      if (items.hasDefault && isNonNullableNull(x[i], items)) { x[i] = copyDefault(items, budget); changed = true; }
      if (applyDefaults(x[i], items, budget)) changed = true;
    }
    return changed;
  }
  if (!isObj(x)) return false;
  if (s.properties) {
    for (const [k, prop] of s.properties) {
      if (!prop.hasDefault) continue;
      if (!Object.prototype.hasOwnProperty.call(x, k) || isNonNullableNull(x[k], prop)) { x[k] = copyDefault(prop, budget); changed = true; }
    }
  }
  for (const k of Object.keys(x)) {
    const prop = s.properties?.get(k);
    if (prop) { if (applyDefaults(x[k], prop, budget)) changed = true; } else if (s.additional) {
      if (s.additional.hasDefault && isNonNullableNull(x[k], s.additional)) { x[k] = copyDefault(s.additional, budget); changed = true; }
      if (applyDefaults(x[k], s.additional, budget)) changed = true;
    }
  }
  return changed;
}

/** defaulting `PruneDefaults`: every default is pruned as it would be at its place. */
function pruneDefaults(s: SNode): void {
  if (s.hasDefault && typeof s.defaultValue === 'object' && s.defaultValue !== null) {
    s.defaultValue = deepCopy(s.defaultValue);
    prune(s.defaultValue, s, { segs: [], removed: undefined }, false);
  }
  if (s.properties) for (const p of s.properties.values()) pruneDefaults(p);
  if (s.additional) pruneDefaults(s.additional);
  if (s.items) pruneDefaults(s.items);
}

// ---------------------------------------------------------------------------------------------
// Correlation of new and old values (k8s.io/apiserver/pkg/cel/common/equality.go)
// ---------------------------------------------------------------------------------------------

/** A new value, the old value it correlates with, and their schema; equality cached. */
class Correlation {
  private eq: boolean | undefined;
  private mapList: Map<string, unknown> | undefined;

  constructor(readonly value: unknown, readonly old: unknown, readonly node: SNode) {}

  /** `CorrelatedObject.Key`. */
  key(k: string): Correlation | undefined {
    if (!isObj(this.value) || !isObj(this.old)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(this.value, k) || !Object.prototype.hasOwnProperty.call(this.old, k)) return undefined;
    const child = this.node.properties?.get(k) ?? this.node.additional ?? undefined;
    return child ? new Correlation(this.value[k], this.old[k], child) : undefined;
  }

  /** `CorrelatedObject.Index`: only map-type lists correlate items (by their keys). */
  index(i: number): Correlation | undefined {
    const items = this.node.items;
    if (!items || this.node.listType !== 'map' || !Array.isArray(this.value) || !Array.isArray(this.old)) return undefined;
    const old = this.oldItemFor(this.value[i]);
    return old === undefined ? undefined : new Correlation(this.value[i], old, items);
  }

  /** The old item of a map-type list with the same key values as `item`. */
  oldItemFor(item: unknown): unknown {
    if (!isObj(item) || !Array.isArray(this.old)) return undefined;
    const keys = this.node.listMapKeys ?? [];
    if (!this.mapList) {
      this.mapList = new Map();
      for (const o of this.old) if (isObj(o)) {
        const key = mapListKey(o, keys);
        if (!this.mapList.has(key)) this.mapList.set(key, o);
      }
    }
    const v = this.mapList.get(mapListKey(item, keys));
    return v === null ? undefined : v;
  }

  /** `CorrelatedObject.CachedDeepEqual`. */
  equal(): boolean {
    if (this.eq !== undefined) return this.eq;
    this.eq = this.computeEqual();
    return this.eq;
  }

  private computeEqual(): boolean {
    const a = this.value;
    const b = this.old;
    if ((a === null || a === undefined) && (b === null || b === undefined)) return true;
    if (a === null || a === undefined || b === null || b === undefined) return false;
    if (Array.isArray(a) !== Array.isArray(b) || isObj(a) !== isObj(b)) return false;
    if (Array.isArray(a) && Array.isArray(b)) {
      if (a.length !== b.length) return false;
      if (this.node.listType !== 'map') return jsonEqual(a, b);
      for (let i = 0; i < a.length; i++) {
        const c = this.index(i);
        if (!c || !c.equal()) return false;
      }
      return true;
    }
    if (isObj(a) && isObj(b)) {
      const keys = Object.keys(a);
      if (keys.length !== Object.keys(b).length) return false;
      for (const k of keys) {
        const c = this.key(k);
        if (!c || !c.equal()) return false;
      }
      return true;
    }
    return jsonEqual(a, b);
  }
}

function mapListKey(item: Raw, keys: string[]): string {
  return goJSON(keys.map((k) => (Object.prototype.hasOwnProperty.call(item, k) ? item[k] : '\u0000unset')));
}

/** Whether an error owned by the value at `owner` is ratcheted: its nearest correlated node is unchanged. */
function ratcheted(root: Correlation, owner: Array<string | number>): boolean {
  let cur = root;
  for (let i = 0; i < owner.length; i++) {
    const seg = owner[i]!;
    let next: Correlation | undefined;
    if (typeof seg === 'number') next = cur.index(seg);
    else if (!(i === 0 && (seg === 'apiVersion' || seg === 'kind'))) next = cur.key(seg);
    if (!next) break;
    cur = next;
  }
  return cur.equal();
}

// ---------------------------------------------------------------------------------------------
// Embedded resources (schema/objectmeta/validation.go)
// ---------------------------------------------------------------------------------------------

const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_MSG = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

function validateEmbeddedResource(path: string, x: Raw, out: StatusCause[]): void {
  if (!Object.prototype.hasOwnProperty.call(x, 'apiVersion')) out.push(requiredCause(childPath(path, 'apiVersion')));
  if (!Object.prototype.hasOwnProperty.call(x, 'kind')) out.push(requiredCause(childPath(path, 'kind')));
  for (const k of Object.keys(x)) {
    const v = x[k];
    if (k === 'apiVersion') {
      const f = childPath(path, k);
      if (typeof v !== 'string') out.push(invalidCause(f, v, 'must be a string'));
      else if (v.length === 0) out.push(invalidCause(f, v, 'must not be empty'));
      else if (v !== '/' && v.split('/').length > 2) out.push(invalidCause(f, v, `unexpected GroupVersion string: ${v}`));
    } else if (k === 'kind') {
      const f = childPath(path, k);
      if (typeof v !== 'string') out.push(invalidCause(f, v, 'must be a string'));
      else if (v.length === 0) out.push(invalidCause(f, v, 'must not be empty'));
      else {
        const lower = v.toLowerCase();
        const errs: string[] = [];
        if (lower.length > 63) errs.push('must be no more than 63 characters');
        if (!DNS1035.test(lower)) errs.push(DNS1035_MSG);
        if (errs.length) out.push(invalidCause(f, v, `may have mixed case, but should otherwise match: ${errs.join(',')}`));
      }
    } else if (k === 'metadata') {
      const f = childPath(path, k);
      if (!isObj(v)) {
        out.push(invalidCause(f, v, `json: cannot unmarshal ${jsonTypeName(v)} into Go value of type v1.ObjectMeta`));
        continue;
      }
      const meta = { ...(v as ObjectMeta) };
      if (meta.name === undefined || meta.name === '') meta.name = 'fakename';
      const namespaced = typeof meta.namespace === 'string' && meta.namespace.length > 0;
      for (const c of validateObjectMeta(meta, namespaced, 'pathSegment')) {
        out.push({ ...c, field: c.field?.startsWith('metadata') ? `${path ? `${path}.` : ''}${c.field}` : c.field });
      }
    }
  }
}

function walkEmbedded(path: string, x: unknown, s: SNode | null | undefined, out: StatusCause[]): void {
  if (!s || !s.subEmbedded) return;
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) walkEmbedded(indexPath(path, i), x[i], s.items, out);
    return;
  }
  if (!isObj(x)) return;
  if (s.embedded) validateEmbeddedResource(path, x, out);
  for (const k of Object.keys(x)) {
    const prop = s.properties?.get(k);
    if (prop) walkEmbedded(childPath(path, k), x[k], prop, out);
    else if (s.additional) walkEmbedded(keyPath(path, k), x[k], s.additional, out);
  }
}

// ---------------------------------------------------------------------------------------------
// List types (schema/listtype/validation.go)
// ---------------------------------------------------------------------------------------------

const UNSPECIFIED = Symbol('unspecified');

/** `validateListSet`: indices of the second occurrence of each duplicated value. */
function nonUniqueIndices(values: unknown[]): number[] {
  if (values.length <= 1) return [];
  const seen = new Map<unknown, number>();
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    const key = typeof x === 'object' && x !== null ? `\u0000${goJSON(x)}` : x;
    const times = seen.get(key);
    if (times === undefined) seen.set(key, 1);
    else {
      seen.set(key, times + 1);
      if (times === 1) out.push(i);
    }
  }
  return out;
}

function validateListMap(path: string, s: SNode, list: unknown[], out: StatusCause[]): void {
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (x !== null && !isObj(x)) {
      out.push(invalidCause(indexPath(path, i), x, 'must be an object for an array of list-type map'));
      return;
    }
  }
  if (list.length <= 1) return;
  const keyFields = s.listMapKeys ?? [];
  if (keyFields.length === 1) {
    const kf = keyFields[0]!;
    const keys = list.map((x) => (isObj(x) && Object.prototype.hasOwnProperty.call(x, kf) ? x[kf] : UNSPECIFIED));
    for (const i of nonUniqueIndices(keys)) {
      out.push(duplicateCause(indexPath(path, i), keys[i] === UNSPECIFIED ? {} : { [kf]: keys[i] }));
    }
    return;
  }
  const keys = list.map((x) => {
    const key: Raw = {};
    if (isObj(x)) for (const kf of keyFields) if (Object.prototype.hasOwnProperty.call(x, kf)) key[kf] = x[kf];
    return key;
  });
  for (const i of nonUniqueIndices(keys)) out.push(duplicateCause(indexPath(path, i), keys[i]));
}

function walkLists(path: string, x: unknown, s: SNode | null | undefined, out: StatusCause[]): void {
  if (!s || !s.subLists) return;
  if (Array.isArray(x)) {
    if (s.listType === 'set') for (const i of nonUniqueIndices(x)) out.push(duplicateCause(indexPath(path, i), x[i]));
    else if (s.listType === 'map') validateListMap(path, s, x, out);
    if (s.items) for (let i = 0; i < x.length; i++) walkLists(indexPath(path, i), x[i], s.items, out);
    return;
  }
  if (!isObj(x)) return;
  if (s.additional) for (const k of Object.keys(x)) walkLists(keyPath(path, k), x[k], s.additional, out);
  if (s.properties) {
    for (const k of Object.keys(x)) {
      const prop = s.properties.get(k);
      if (prop) walkLists(childPath(path, k), x[k], prop, out);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CEL rules (schema/cel/validation.go)
// ---------------------------------------------------------------------------------------------

function celRuleCause(field: string, s: SNode, value: unknown, detail: string, reason: string | undefined): StatusCause {
  const shown = s.type === 'object' || s.type === 'array' ? s.type : value;
  switch (reason) {
    case 'FieldValueForbidden': return forbiddenCause(field, detail);
    case 'FieldValueRequired': return requiredCause(field, detail);
    case 'FieldValueDuplicate': return duplicateCause(field, shown);
    default: return invalidCause(field, shown, detail);
  }
}

function validateExpressions(path: string, x: unknown, s: SNode, corr: Correlation | undefined, nearest: Correlation | undefined, resourceRoot: boolean, out: StatusCause[], budget: CostBudget): void {
  const hasOld = corr !== undefined && corr.old !== null && corr.old !== undefined;
  const self = toCel(x, s, resourceRoot);
  let oldSelf: unknown;
  if (hasOld && s.rules.some((r) => r.usesOldSelf || r.spec.optionalOldSelf)) oldSelf = toCel(corr!.old, s, resourceRoot);
  for (let i = 0; i < s.rules.length; i++) {
    const rule = s.rules[i]!;
    const outcome = evaluateRule(rule, self, hasOld, oldSelf, budget);
    if (outcome.kind === 'pass') continue;
    if (outcome.kind === 'error') {
      out.push(invalidCause(path || NIL_PATH, s.type, outcome.message));
      if (outcome.stop) return;
      continue;
    }
    const fp = s.ruleFieldPaths[i];
    const field = fp ? childPath(path, fp) : path;
    if (!rule.usesOldSelf && (corr ?? nearest)?.equal()) continue; // ratcheted (kube: a warning)
    out.push(celRuleCause(field || NIL_PATH, s, x, outcome.message, rule.spec.reason));
  }
}

/**
 * Runs the rules of `s` and below on `x`. All rules of one object share `budget` (kube's
 * `RuntimeCELCostBudget`); once it is spent (remaining < 0), no further rules run.
 */
function walkRules(path: string, x: unknown, s: SNode, corr: Correlation | undefined, nearest: Correlation | undefined, resourceRoot: boolean, out: StatusCause[], budget: CostBudget): void {
  if (x === null || x === undefined || !s.subRules || budget.remaining < 0) return;
  if (s.rules.length) validateExpressions(path, x, s, corr, nearest, resourceRoot, out, budget);
  const parent = corr ?? nearest;
  if (Array.isArray(x)) {
    const items = s.items;
    if (!items || !items.subRules) return;
    for (let i = 0; i < x.length; i++) {
      walkRules(indexPath(path, i), x[i], items, corr?.index(i), parent, items.embedded, out, budget);
    }
    return;
  }
  if (!isObj(x)) return;
  if (s.additional && s.additional.subRules) {
    for (const k of Object.keys(x)) walkRules(keyPath(path, k), x[k], s.additional, corr?.key(k), parent, s.additional.embedded, out, budget);
  }
  if (s.properties) {
    for (const k of Object.keys(x)) {
      const prop = s.properties.get(k);
      if (prop && prop.subRules) walkRules(childPath(path, k), x[k], prop, corr?.key(k), parent, prop.embedded, out, budget);
    }
  }
}

const BLOCKING = new Set(['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid']);

/** strategy.go `hasBlockingErr`: CEL rules are not run on objects with these errors. */
const BLOCKED_RULES_CAUSE: StatusCause = invalidCauseRaw(NIL_PATH, '"null"', 'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation');

// ---------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------

class Compiled implements CompiledSchema {
  private openapi: OpenAPIValidator | undefined;

  constructor(private readonly raw: Raw, private readonly root: SNode) {}

  private openAPI(): OpenAPIValidator {
    this.openapi ??= compileOpenAPI(this.raw);
    return this.openapi;
  }

  /** Compiles the ajv validator now (it is otherwise compiled on first validation). */
  warm(): void {
    this.openAPI();
  }

  prune(obj: Record<string, unknown>): string[] {
    const st: PruneState = { segs: [], removed: [] };
    prune(obj, this.root, st, true);
    pruneNulls(obj, this.root);
    return st.removed!;
  }

  applyDefaults(obj: Record<string, unknown>): boolean {
    return applyDefaults(obj, this.root, { left: MAX_DEFAULTED_CHARS });
  }

  get hasDefaults(): boolean {
    return this.root.subDefaults;
  }

  validate(obj: Record<string, unknown>, old?: Record<string, unknown>): StatusCause[] {
    const root = this.root;
    const corr = old ? new Correlation(obj, old, root) : undefined;
    const causes: StatusCause[] = [];
    for (const e of this.openAPI().validate(obj)) {
      if (corr && ratcheted(corr, e.owner)) continue;
      causes.push(e.cause);
    }
    if (root.subEmbedded) walkEmbedded('', obj, root, causes);
    if (root.subLists) {
      const oldErrs: StatusCause[] = [];
      if (old) walkLists('', old, root, oldErrs);
      if (oldErrs.length === 0) walkLists('', obj, root, causes);
    }
    if (root.subRules) {
      if (causes.some((c) => c.reason !== undefined && BLOCKING.has(c.reason))) causes.push({ ...BLOCKED_RULES_CAUSE });
      else walkRules('', obj, root, corr, undefined, true, causes, new CostBudget());
    }
    return causes;
  }
}

const cache = new WeakMap<object, Compiled>();

/**
 * Compiles a CRD version's `openAPIV3Schema` (cached per schema object): the structural schema
 * with pruned defaults and compiled CEL rules; the ajv validator is compiled on first validation.
 *
 * Source: k8s.io/apiextensions-apiserver (Kubernetes 1.32) pkg/apiserver/schema (structural
 * schema, pruning, defaulting, listtype, objectmeta, cel) and pkg/registry/customresource
 * strategy.go; kube-openapi pkg/validation for OpenAPI semantics and messages.
 */
export function compileSchema(openAPIV3Schema: Record<string, unknown>): CompiledSchema {
  let c = cache.get(openAPIV3Schema);
  if (!c) {
    const root = buildNode(openAPIV3Schema);
    pruneDefaults(root);
    c = new Compiled(openAPIV3Schema, root);
    cache.set(openAPIV3Schema, c);
  }
  return c;
}

/**
 * Like {@link compileSchema}, but also compiles the OpenAPI validator up front (for callers that
 * want the compilation cost at CRD registration rather than on the first write).
 */
export function compileSchemaEagerly(openAPIV3Schema: Record<string, unknown>): CompiledSchema {
  const c = compileSchema(openAPIV3Schema) as Compiled;
  c.warm();
  return c;
}
