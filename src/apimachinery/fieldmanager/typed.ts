/**
 * Schema-aware operations on JSON objects, after sigs.k8s.io/structured-merge-diff/v4 `typed`
 * (tofieldset.go, merge.go, compare.go, remove.go) with the OpenAPI → SMD schema conversion of
 * k8s.io/kube-openapi/pkg/schemaconv:
 *
 * - `x-kubernetes-list-type: atomic|set|map` (+ `x-kubernetes-list-map-keys`); without it a list
 *   with `x-kubernetes-patch-strategy: merge` is associative (keyed by
 *   `x-kubernetes-patch-merge-key` when given, else a set), otherwise atomic;
 * - objects (structs with `properties`, maps with `additionalProperties`) are granular unless
 *   `x-kubernetes-map-type: atomic`;
 * - anything untyped (no `type`, `x-kubernetes-preserve-unknown-fields`, fields not declared in
 *   `properties`) is SMD's `__untyped_deduced_`: scalars are leaves, objects granular maps of
 *   deduced values, lists atomic.
 */
import { FieldSet, type Path, type PathElement, serializePathElement, valuesEqual, pathString } from './fieldpath.js';
import { isObj } from '../objects.js';

/** Where schemas come from: the kind's root schema and the `#/components/schemas/` definitions. */
export interface SchemaResolver {
  root: object;
  definitions: Record<string, object>;
}

/** A resolved type (SMD `schema.Atom`). */
export type TypeNode =
  | { kind: 'scalar' }
  | { kind: 'deduced' }
  | { kind: 'list'; atomic: boolean; keys: string[]; elem: () => TypeNode; elemDefaults: Record<string, unknown> }
  | {
    kind: 'map'; atomic: boolean; fields: Map<string, () => TypeNode>; elem?: () => TypeNode;
    /**
     * A struct (declared `properties`, no `additionalProperties`, not preserving unknown fields):
     * SMD's typed conversion refuses other keys (`field not declared in schema`). Merging and
     * ownership still treat such keys as deduced (`elem`).
     */
    closed?: boolean;
  };

const SCALAR: TypeNode = { kind: 'scalar' };
const DEDUCED: TypeNode = { kind: 'deduced' };

/** Thrown for values that do not fit the schema where SMD reports a validation error. */
export class TypedError extends Error {}

type Raw = Record<string, unknown>;

/** The standard object metadata an embedded resource gets (one object, so its type is memoised). */
const OBJECT_META_REF = { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' };

/** Converts OpenAPI v3 schemas to `TypeNode`s, resolving `$ref` and `allOf`, with memoisation. */
export class TypeResolver {
  private readonly cache = new WeakMap<object, TypeNode>();

  constructor(private readonly resolver: SchemaResolver) {}

  /** The root type of the kind. */
  root(): TypeNode {
    return this.resolve(this.resolver.root);
  }

  /** Flattens `$ref` and `allOf` into one schema; extensions on the referring schema win. */
  private flatten(s: Raw, depth = 0): Raw {
    if (depth > 32) return s;
    let out: Raw = {};
    const ref = s.$ref;
    if (typeof ref === 'string') {
      const name = ref.slice(ref.lastIndexOf('/') + 1);
      const target = this.resolver.definitions[name] as Raw | undefined;
      if (target) out = { ...this.flatten(target, depth + 1) };
    }
    if (Array.isArray(s.allOf)) {
      for (const part of s.allOf) {
        if (part && typeof part === 'object') out = { ...out, ...this.flatten(part as Raw, depth + 1) };
      }
    }
    for (const [k, v] of Object.entries(s)) if (k !== '$ref' && k !== 'allOf') out[k] = v;
    return out;
  }

  /** The type of an OpenAPI schema object. */
  resolve(schema: object | undefined): TypeNode {
    if (!schema || typeof schema !== 'object') return DEDUCED;
    const hit = this.cache.get(schema);
    if (hit) return hit;
    const node = this.convert(this.flatten(schema as Raw));
    this.cache.set(schema, node);
    return node;
  }

  private convert(s: Raw): TypeNode {
    if (s['x-kubernetes-int-or-string'] === true) return SCALAR;
    const props = s.properties && typeof s.properties === 'object' ? (s.properties as Record<string, object>) : undefined;
    const addl = s.additionalProperties;
    const type = s.type;
    if (type === 'array' || (type === undefined && s.items !== undefined)) {
      const items = (s.items && typeof s.items === 'object' ? s.items : undefined) as object | undefined;
      const listType = s['x-kubernetes-list-type'];
      let atomic = true;
      let keys: string[] = [];
      if (listType === 'set') atomic = false;
      else if (listType === 'map') {
        atomic = false;
        keys = Array.isArray(s['x-kubernetes-list-map-keys']) ? (s['x-kubernetes-list-map-keys'] as string[]) : [];
      } else if (listType === undefined) {
        const strategy = s['x-kubernetes-patch-strategy'];
        if (typeof strategy === 'string' && strategy.split(',').includes('merge')) {
          atomic = false;
          const mk = s['x-kubernetes-patch-merge-key'];
          if (typeof mk === 'string') keys = [mk];
        }
      }
      const elemDefaults: Record<string, unknown> = {};
      if (keys.length && items) {
        const flat = this.flatten(items as Raw);
        const ip = flat.properties as Record<string, Raw> | undefined;
        for (const k of keys) {
          const d = ip?.[k] ? this.flatten(ip[k]!).default : undefined;
          if (d !== undefined) elemDefaults[k] = d;
        }
      }
      return { kind: 'list', atomic, keys, elem: () => (items ? this.resolve(items) : DEDUCED), elemDefaults };
    }
    if (type === 'object' || props || addl !== undefined) {
      const fields = new Map<string, () => TypeNode>();
      if (props) for (const [k, v] of Object.entries(props)) fields.set(k, () => this.resolve(v));
      // A custom resource's embedded object gets apiVersion, kind and the standard metadata
      // (apiextensions-apiserver pkg/controller/openapi/builder addEmbeddedProperties).
      if (s['x-kubernetes-embedded-resource'] === true) {
        fields.set('apiVersion', () => SCALAR);
        fields.set('kind', () => SCALAR);
        fields.set('metadata', () => this.resolve(OBJECT_META_REF));
      }
      const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
      let elem: (() => TypeNode) | undefined;
      if (addl && typeof addl === 'object') elem = () => this.resolve(addl);
      // Keys a struct does not declare: deduced for merging and ownership; `closed` makes
      // `undeclaredFields` report them as SMD's typed conversion does. An object without
      // properties is an untyped map (kube-openapi schemaconv).
      else elem = () => DEDUCED;
      const closed = fields.size > 0 && !preserve && (addl === undefined || addl === false);
      return { kind: 'map', atomic: s['x-kubernetes-map-type'] === 'atomic', fields, elem, ...(closed ? { closed } : {}) };
    }
    if (type === undefined || s['x-kubernetes-preserve-unknown-fields'] === true) return DEDUCED;
    return SCALAR;
  }
}


/** Concrete type of a value under `t`: deduced types follow the value's shape. */
const DEDUCED_MAP: TypeNode = { kind: 'map', atomic: false, fields: new Map(), elem: () => DEDUCED };
const DEDUCED_LIST: TypeNode = { kind: 'list', atomic: true, keys: [], elem: () => DEDUCED, elemDefaults: {} };

function concrete(t: TypeNode, v: unknown): TypeNode {
  if (t.kind !== 'deduced') return t;
  if (isObj(v)) return DEDUCED_MAP;
  if (Array.isArray(v)) return DEDUCED_LIST;
  return SCALAR;
}

function fieldType(t: Extract<TypeNode, { kind: 'map' }>, key: string): TypeNode {
  const f = t.fields.get(key) ?? t.elem;
  return f ? f() : DEDUCED;
}

/** SMD `listItemToPathElement`: the key of a list-map item or the value of a set item. */
export function listItemPathElement(t: Extract<TypeNode, { kind: 'list' }>, item: unknown): PathElement {
  if (t.keys.length) {
    if (item === null) throw new TypedError('associative list with keys may not have a null element');
    if (!isObj(item)) throw new TypedError('associative list with keys may not have non-map elements');
    const key: Array<[string, unknown]> = [];
    for (const k of t.keys) {
      if (Object.hasOwn(item, k) && item[k] !== undefined) key.push([k, item[k]]);
      else if (Object.hasOwn(t.elemDefaults, k)) key.push([k, t.elemDefaults[k]]);
      else throw new TypedError(`associative list with keys has an element that omits key field "${k}" (and doesn't have default value)`);
    }
    key.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { key };
  }
  if (isObj(item)) throw new TypedError("associative list without keys has an element that's a map type");
  if (Array.isArray(item)) throw new TypedError('not supported: associative list with lists as elements');
  if (item === null) throw new TypedError("associative list without keys has an element that's an explicit null");
  return { value: item };
}

/**
 * The keys of `value` its type does not declare, as SMD's typed conversion of an applied
 * configuration reports them (sigs.k8s.io/structured-merge-diff typed/validate.go): texts
 * `.spec.ports[containerPort=80,protocol="TCP"].foo: field not declared in schema`, in document
 * order, at most `limit` of them (SMD reports all; a path repeats its parents, so a hostile body
 * of many deep undeclared keys would make a message far larger than itself). Atomic list items
 * are named by index (`[0]`), associative ones by key or value; an item whose key cannot be
 * formed is left to `toFieldSet`, which reports it.
 */
export function undeclaredFields(value: unknown, t: TypeNode, limit = 100): string[] {
  const out: string[] = [];
  walkUndeclared(value, t, '', out, limit);
  return out;
}

function walkUndeclared(v: unknown, t0: TypeNode, path: string, out: string[], limit: number): void {
  if (out.length >= limit) return;
  const t = concrete(t0, v);
  if (t.kind === 'list') {
    if (!Array.isArray(v)) return;
    const elem = t.elem();
    for (let i = 0; i < v.length; i++) {
      let pe: string;
      if (t.atomic) pe = `[${i}]`;
      else {
        try { pe = pathString([listItemPathElement(t, v[i])]); } catch (e) {
          if (e instanceof TypedError) continue;
          throw e;
        }
      }
      walkUndeclared(v[i], elem, path + pe, out, limit);
    }
    return;
  }
  if (t.kind !== 'map' || !isObj(v)) return;
  for (const k in v) {
    const val = v[k];
    if (val === undefined) continue;
    const declared = t.fields.get(k);
    if (out.length >= limit) return;
    if (!declared && t.closed) {
      out.push(`${path}.${k}: field not declared in schema`);
      continue;
    }
    walkUndeclared(val, declared ? declared() : t.elem ? t.elem() : DEDUCED, `${path}.${k}`, out, limit);
  }
}

function where(path: Path, msg: string): TypedError {
  return new TypedError(path.length ? `${pathString(path)}: ${msg}` : msg);
}

// ---------------------------------------------------------------------------------------------
// ToFieldSet
// ---------------------------------------------------------------------------------------------

/**
 * SMD `TypedValue.ToFieldSet`: every leaf, every list item (list-map / set), every map entry that
 * is not a declared struct field, every null or empty-object value, and atomic lists/maps as a
 * whole. With `allowDuplicates` false (applied configurations), duplicate list keys throw.
 */
export function toFieldSet(value: unknown, t: TypeNode, allowDuplicates = true): FieldSet {
  const set = new FieldSet();
  walkFieldSet(value, t, set, undefined, undefined, '', undefined, allowDuplicates, false);
  return set;
}

/**
 * The fields `compare(undefined, value)` reports as added: `toFieldSet` plus the path of every
 * non-empty, non-atomic map below the root (what becomes `".": {}` in FieldsV1). One walk, no
 * comparison — the managed fields of a create.
 */
export function addedFieldSet(value: unknown, t: TypeNode): FieldSet {
  const set = new FieldSet();
  walkFieldSet(value, t, set, undefined, undefined, '', undefined, true, true);
  return set;
}

/** A path as a chain from its last element up (cheap to extend; made a `Path` only for errors). */
interface PathLink { pe: PathElement; up: PathLink | undefined }

function pathOf(link: PathLink | undefined): Path {
  const p: Path = [];
  for (let l = link; l; l = l.up) p.push(l.pe);
  return p.reverse();
}

/**
 * Adds the fields of `v` (at path `at`) to the set. `node` is the set at v's path when known
 * (the root); else it is `parent`'s child below `pe` (serialised `key`), created on first use, so
 * leaves cost no set. "Owning v's path" is a member `key` of `parent` (the root is never one).
 */
function walkFieldSet(
  v: unknown, t0: TypeNode, node: FieldSet | undefined, parent: FieldSet | undefined, pe: PathElement | undefined, key: string,
  at: PathLink | undefined, allowDup: boolean, mapNodes: boolean,
): void {
  const t = concrete(t0, v);
  if (t.kind === 'scalar' || t.kind === 'deduced' || t.atomic) {
    if (parent) parent.members.set(key, pe!);
    return;
  }
  if (t.kind === 'list') {
    if (!Array.isArray(v)) {
      if (v !== null && v !== undefined && parent) parent.members.set(key, pe!);
      return;
    }
    if (v.length === 0) return;
    node ??= parent!.child(pe!, key);
    const keys: string[] = [];
    const pes: PathElement[] = [];
    let dups: Set<string> | undefined;
    const seen = new Set<string>();
    for (let i = 0; i < v.length; i++) {
      let ipe: PathElement;
      try {
        ipe = listItemPathElement(t, v[i]);
      } catch (e) {
        throw where(pathOf(at), `element ${i}: ${(e as Error).message}`);
      }
      const k = serializePathElement(ipe);
      pes.push(ipe); keys.push(k);
      if (seen.has(k)) {
        if (!allowDup) throw where(pathOf(at), `duplicate entries for key ${pathString([ipe])}`);
        if (!dups?.has(k)) {
          node.members.set(k, ipe);
          (dups ??= new Set()).add(k);
        }
      } else seen.add(k);
    }
    const elem = t.elem();
    for (let i = 0; i < v.length; i++) {
      const k = keys[i]!;
      if (dups?.has(k)) continue;
      walkFieldSet(v[i], elem, undefined, node, pes[i]!, k, { pe: pes[i]!, up: at }, allowDup, mapNodes);
      node.members.set(k, pes[i]!);
    }
    if (mapNodes && parent) parent.members.set(key, pe!);
    return;
  }
  // map
  if (!isObj(v)) {
    if (v !== null && v !== undefined && parent) parent.members.set(key, pe!);
    return;
  }
  let members = 0;
  for (const k in v) {
    const val = v[k];
    if (val === undefined) continue;
    members++;
    node ??= parent!.child(pe!, key);
    const fpe: PathElement = { field: k };
    const fk = `f:${k}`;
    walkFieldSet(val, fieldType(t, k), undefined, node, fpe, fk, { pe: fpe, up: at }, allowDup, mapNodes);
    if (val === null || (isObj(val) && isEmptyObject(val)) || !t.fields.has(k)) node.members.set(fk, fpe);
  }
  if (mapNodes && members && parent) parent.members.set(key, pe!);
}

function isEmptyObject(o: Record<string, unknown>): boolean {
  for (const _ in o) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Merge and Compare (SMD mergingWalker)
// ---------------------------------------------------------------------------------------------

/** Result of SMD `TypedValue.Compare`. */
export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

interface Walk {
  /** Record comparison results (Compare) — absent for a plain Merge. */
  cmp?: Comparison;
  /** Whether duplicate keys are tolerated on the right-hand side. */
  rhsAllowDup: boolean;
}

/**
 * SMD `TypedValue.Merge` (rule "keep RHS"): `rhs` merged into `lhs` — maps merged by key,
 * list-maps and sets merged by item identity in SMD's interleaving order (RHS order for items it
 * holds, LHS-only items kept in place), atomic values replaced.
 */
export function merge(lhs: unknown, rhs: unknown, t: TypeNode, rhsAllowDuplicates = false): unknown {
  return mergeWalk(lhs, rhs, t, [], { rhsAllowDup: rhsAllowDuplicates });
}

/** SMD `TypedValue.Compare`: the paths added, modified and removed from `lhs` to `rhs`. */
export function compare(lhs: unknown, rhs: unknown, t: TypeNode): Comparison {
  const cmp: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  mergeWalk(lhs, rhs, t, [], { cmp, rhsAllowDup: true });
  return cmp;
}

function leafRule(lhs: unknown, rhs: unknown, path: Path, w: Walk): unknown {
  if (w.cmp) {
    if (lhs === undefined) w.cmp.added.insert(path);
    else if (rhs === undefined) w.cmp.removed.insert(path);
    else if (!valuesEqual(lhs, rhs)) w.cmp.modified.insert(path);
  }
  return rhs !== undefined ? rhs : lhs;
}

function mergeWalk(lhs: unknown, rhs: unknown, t0: TypeNode, path: Path, w: Walk): unknown {
  const t = concrete(t0, rhs !== undefined ? rhs : lhs);
  let out: unknown;
  let leaf = false;
  if (t.kind === 'scalar' || t.kind === 'deduced') {
    leaf = true;
  } else if (t.kind === 'list') {
    const l = lhs === undefined || lhs === null ? undefined : lhs;
    const r = rhs === undefined || rhs === null ? undefined : rhs;
    if ((l !== undefined && !Array.isArray(l)) || (r !== undefined && !Array.isArray(r))) leaf = true;
    else {
      const la = l as unknown[] | undefined;
      const ra = r as unknown[] | undefined;
      if (t.atomic || ((!la || la.length === 0) && (!ra || ra.length === 0))) leaf = true;
      else out = mergeList(t, la ?? [], ra ?? [], path, w);
    }
  } else {
    const l = lhs === undefined || lhs === null ? undefined : lhs;
    const r = rhs === undefined || rhs === null ? undefined : rhs;
    if ((l !== undefined && !isObj(l)) || (r !== undefined && !isObj(r))) leaf = true;
    else {
      const lm = l as Record<string, unknown> | undefined;
      const rm = r as Record<string, unknown> | undefined;
      const lEmpty = !lm || Object.keys(lm).length === 0;
      const rEmpty = !rm || Object.keys(rm).length === 0;
      if (t.atomic || (lEmpty && rEmpty)) leaf = true;
      else {
        // A comparison only records paths: it builds no merged value. `path` grows and shrinks
        // in place (nothing keeps it): a map of 60,000 keys walks without a copy per key.
        const o: Record<string, unknown> | undefined = w.cmp ? undefined : {};
        const visit = (k: string, lv: unknown, rv: unknown) => {
          if (lv === undefined && rv === undefined) return;
          path.push({ field: k });
          const v = mergeWalk(lv, rv, fieldType(t, k), path, w);
          path.pop();
          if (o && v !== undefined) o[k] = v;
        };
        if (lm) for (const k in lm) visit(k, lm[k], rm?.[k]);
        if (rm) for (const k in rm) if (!lm || !Object.hasOwn(lm, k)) visit(k, undefined, rm[k]);
        out = o;
      }
    }
  }
  if (leaf) return leafRule(lhs, rhs, path, w);
  // postItemHook of Compare: non-leaf nodes that appear or disappear.
  if (w.cmp && path.length) {
    if (lhs === undefined) w.cmp.added.insert(path);
    else if (rhs === undefined) w.cmp.removed.insert(path);
  }
  return out;
}

function indexList(t: Extract<TypeNode, { kind: 'list' }>, list: unknown[], allowDup: boolean, path: Path) {
  const pes: PathElement[] = [];
  const keys: string[] = [];
  const observed = new Map<string, unknown>();
  list.forEach((item, i) => {
    let pe: PathElement;
    try {
      pe = listItemPathElement(t, item);
    } catch (e) {
      throw where(path, `element ${i}: ${(e as Error).message}`);
    }
    const k = serializePathElement(pe);
    if (observed.has(k)) {
      if (!allowDup) throw where(path, `duplicate entries for key ${pathString([pe])}`);
      observed.set(k, null); // duplicated items are not merged
    } else observed.set(k, item);
    pes.push(pe);
    keys.push(k);
  });
  return { pes, keys, observed };
}

/** SMD `mergingWalker.visitListItems`, including its ordering of shared and new items. */
function mergeList(t: Extract<TypeNode, { kind: 'list' }>, lhs: unknown[], rhs: unknown[], path: Path, w: Walk): unknown[] | undefined {
  const R = indexList(t, rhs, w.rhsAllowDup, path);
  const L = indexList(t, lhs, true, path);
  const elem = t.elem();
  const out: unknown[] = [];
  const sharedOrder = R.keys.filter((k) => L.observed.has(k));
  let si = 0;
  let nextShared: string | undefined = sharedOrder[si++];
  const mergedRHS = new Set<string>();
  const item = (pe: PathElement, l: unknown, r: unknown) => {
    path.push(pe);
    const v = mergeWalk(l, r, elem, path, w);
    path.pop();
    if (!w.cmp && v !== undefined) out.push(v);
  };
  let lI = 0;
  let rI = 0;
  while (lI < L.pes.length || rI < R.pes.length) {
    if (lI < L.pes.length && rI < R.pes.length) {
      const k = L.keys[lI]!;
      if (k === R.keys[rI]) {
        mergedRHS.add(k);
        item(L.pes[lI]!, L.observed.get(k), R.observed.get(k));
        lI++;
        rI++;
        nextShared = sharedOrder[si++];
        continue;
      }
      if (R.observed.has(k) && nextShared !== undefined && nextShared !== k) {
        lI++;
        continue;
      }
    }
    if (lI < L.pes.length) {
      const k = L.keys[lI]!;
      if (!R.observed.has(k)) {
        item(L.pes[lI]!, lhs[lI], undefined);
        lI++;
        continue;
      } else if (mergedRHS.has(k)) {
        lI++;
        continue;
      }
    }
    if (rI < R.pes.length) {
      const k = R.keys[rI]!;
      mergedRHS.add(k);
      item(R.pes[rI]!, L.observed.has(k) ? L.observed.get(k) : undefined, R.observed.get(k));
      rI++;
      if (nextShared !== undefined && nextShared === k) nextShared = sharedOrder[si++];
    }
  }
  return out.length ? out : undefined;
}

// ---------------------------------------------------------------------------------------------
// RemoveItems / EnsureNamedFieldsAreMembers
// ---------------------------------------------------------------------------------------------

/**
 * SMD `TypedValue.RemoveItems`: drops every path of `toRemove` from the value. Maps and lists
 * left empty by the removal disappear (SMD leaves them null, which decoding drops).
 */
export function removeItems(value: unknown, toRemove: FieldSet, t0: TypeNode): unknown {
  const t = concrete(t0, value);
  if (t.kind === 'list') {
    if (!Array.isArray(value) || value.length === 0 || t.atomic) return value;
    const out: unknown[] = [];
    for (const item of value) {
      let pe: PathElement;
      try {
        pe = listItemPathElement(t, item);
      } catch {
        out.push(item);
        continue;
      }
      if (toRemove.has([pe])) continue;
      const sub = toRemove.withPrefix(pe);
      out.push(sub.empty() ? item : removeItems(item, sub, t.elem()));
    }
    return out.length ? out : undefined;
  }
  if (t.kind === 'map') {
    if (!isObj(value) || Object.keys(value).length === 0 || t.atomic) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const pe: PathElement = { field: k };
      if (toRemove.has([pe])) continue;
      const sub = toRemove.withPrefix(pe);
      const nv = sub.empty() ? v : removeItems(v, sub, fieldType(t, k));
      if (nv !== undefined) out[k] = nv;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return value;
}

/**
 * SMD `Set.EnsureNamedFieldsAreMembers`: also owns the declared struct fields the set descends
 * into (`.spec` when `.spec.replicas` is owned), but not map keys or list items.
 */
export function ensureNamedFieldsAreMembers(set: FieldSet, t: TypeNode): FieldSet {
  const out = new FieldSet();
  for (const [k, pe] of set.members) out.members.set(k, pe);
  for (const [k, c] of set.children) {
    let ct: TypeNode = DEDUCED;
    if (t.kind === 'map' && 'field' in c.pe) {
      if (t.fields.has(c.pe.field)) out.members.set(k, c.pe);
      ct = fieldType(t, c.pe.field);
    } else if (t.kind === 'list') ct = t.elem();
    const sub = ensureNamedFieldsAreMembers(c.set, ct);
    if (!sub.empty()) out.children.set(k, { pe: c.pe, set: sub });
  }
  return out;
}
