/**
 * Strategic merge patch, applied as the server side of k8s.io/apimachinery/pkg/util/strategicpatch
 * does (`StrategicMergeMapPatchUsingLookupPatchMeta` with `MergeParallelList` and
 * `IgnoreUnmatchedNulls`): what kube-apiserver runs for `PATCH` with
 * `Content-Type: application/strategic-merge-patch+json` (`kubectl patch --type strategic`, and the
 * patches client-side `kubectl apply` sends).
 *
 * Semantics (see https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
 * and https://git.k8s.io/community/contributors/devel/sig-api-machinery/strategic-merge-patch.md):
 * - maps merge recursively; a `null` value deletes the key;
 * - lists are replaced, unless the field's patch strategy is `merge`: lists of maps then merge item
 *   by item on the field's merge key, lists of primitives merge as a set;
 * - directives: `$patch: replace | delete` in maps, `$patch: replace | delete` items in merging
 *   lists, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`, `$retainKeys`.
 *
 * Where the Go code would persist a directive verbatim (inside values that are copied from the
 * patch as they are: replaced lists, new list items, `$patch: replace` content), this
 * implementation drops the directive keys instead, which is what kube-apiserver's conversion to
 * the typed object does with them. `$patch: merge` in a map is accepted as an explicit request for
 * the default (merge) behaviour, where apimachinery rejects it as an unknown patch type.
 */

import { badRequest, StatusError } from './errors.js';
import { isObj } from './objects.js';

/**
 * Patch metadata: for each field path, the struct tags `patchStrategy` and `patchMergeKey` of the
 * Go type (k8s.io/api). Keys are dotted paths from the object root where list items add no
 * segment, e.g. `metadata.ownerReferences`, `spec.template.spec.containers.ports`.
 * `strategy` is a comma list of `merge`, `replace` and `retainKeys`; `mergeKey` names the field
 * that identifies items of a merging list of maps. Fields without an entry merge if they are maps
 * and are replaced if they are lists.
 */
export type PatchMeta = Record<string, { strategy: string; mergeKey?: string }>;

type JsonMap = Record<string, unknown>;
type Kind = 'map' | 'list' | 'string' | 'number' | 'bool' | 'null';

const DIRECTIVE_MARKER = '$patch';
const RETAIN_KEYS_DIRECTIVE = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST_PREFIX = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER_PREFIX = '$setElementOrder';

// Errors of k8s.io/apimachinery/pkg/util/mergepatch.
const ERR_BAD_PRIMITIVE_LIST = 'invalid patch format of primitive list';
const ERR_BAD_RETAIN_KEYS = 'invalid patch format of retainKeys';
const ERR_BAD_SET_ELEMENT_ORDER = 'invalid patch format of setElementOrder list';

// ---------------------------------------------------------------------------------------------
// Compiled metadata
// ---------------------------------------------------------------------------------------------

interface FieldMeta { strategy: string; mergeKey: string }
interface CompiledMeta {
  fields: Map<string, FieldMeta>;
  /** Every path that is a key or a proper prefix of one: below other paths there is no metadata. */
  prefixes: Set<string>;
}

const NO_META: FieldMeta = { strategy: '', mergeKey: '' };
const compiledCache = new WeakMap<PatchMeta, CompiledMeta>();

/** Parses `patchStrategy` as `extractRetainKeysPatchStrategy`: `retainKeys` is dropped (the server only honours the `$retainKeys` directive). */
function parseStrategy(path: string, s: string): string {
  const parts = s.split(',').map((p) => p.trim()).filter((p) => p !== '');
  const other = parts.filter((p) => p !== 'retainKeys');
  if (parts.length > 2 || other.length > 1) throw new Error(`unexpected patch strategy for ${path}: ${s}`);
  const strategy = other[0] ?? '';
  if (strategy !== '' && strategy !== 'merge' && strategy !== 'replace') throw new Error(`unexpected patch strategy for ${path}: ${s}`);
  return strategy;
}

function compile(meta: PatchMeta): CompiledMeta {
  let c = compiledCache.get(meta);
  if (c) return c;
  c = { fields: new Map(), prefixes: new Set() };
  for (const path of Object.keys(meta)) {
    const m = meta[path]!;
    c.fields.set(path, { strategy: parseStrategy(path, m.strategy), mergeKey: m.mergeKey ?? '' });
    for (let i = path.indexOf('.'); i >= 0; i = path.indexOf('.', i + 1)) c.prefixes.add(path.slice(0, i));
    c.prefixes.add(path);
  }
  compiledCache.set(meta, c);
  return c;
}

/** Path of a child field, or null when no metadata exists at or below it. */
function childPath(c: CompiledMeta, path: string | null, key: string): string | null {
  if (path === null) return null;
  const p = path === '' ? key : `${path}.${key}`;
  return c.prefixes.has(p) ? p : null;
}

function lookup(c: CompiledMeta, path: string | null): FieldMeta {
  return (path !== null && c.fields.get(path)) || NO_META;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------------------------

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

function kindOf(v: unknown): Kind {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'object': return 'map';
    case 'string': return 'string';
    case 'number': case 'bigint': return 'number';
    case 'boolean': return 'bool';
    default: return 'null';
  }
}

/** Sets a key, also when it is `__proto__` (a plain assignment would change the prototype). */
function setKey(o: JsonMap, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** Deep copy of a JSON value. */
function deepClone(v: unknown): unknown {
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = deepClone(v[i]);
    return out;
  }
  if (isObj(v)) {
    const out: JsonMap = {};
    for (const k of Object.keys(v)) setKey(out, k, deepClone(v[k]));
    return out;
  }
  return v;
}

/** Keys that only have a meaning inside a patch. */
function isDirectiveKey(k: string): boolean {
  return k.charCodeAt(0) === 0x24 /* $ */ && (k === DIRECTIVE_MARKER || k === RETAIN_KEYS_DIRECTIVE ||
    k.startsWith(`${SET_ELEMENT_ORDER_PREFIX}/`) || k.startsWith(`${DELETE_FROM_PRIMITIVE_LIST_PREFIX}/`));
}

/** Copy of a patch value taken as it is (replaced list, new list item, `$patch: replace` map), without directive keys. */
function rawCopy(v: unknown): unknown {
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = rawCopy(v[i]);
    return out;
  }
  if (isObj(v)) {
    const out: JsonMap = {};
    for (const k of Object.keys(v)) if (!isDirectiveKey(k)) setKey(out, k, rawCopy(v[k]));
    return out;
  }
  return v;
}

const DROP = Symbol('drop');

/**
 * Copy of a patch value inserted where the original had nothing (or another type): Go's
 * `discardNullValuesFromPatch` (when `discardNulls`) then `removeDirectives` — maps carrying
 * `$patch` disappear, other directive keys are dropped.
 */
function insertCopy(v: unknown, discardNulls: boolean): unknown {
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      const c = insertCopy(v[i], discardNulls);
      if (c !== DROP) out.push(c);
    }
    return out;
  }
  if (isObj(v)) {
    if (hasOwn(v, DIRECTIVE_MARKER) && !(discardNulls && v[DIRECTIVE_MARKER] === null)) return DROP;
    const out: JsonMap = {};
    for (const k of Object.keys(v)) {
      const e = v[k];
      if (e === null && discardNulls) continue;
      if (isDirectiveKey(k)) continue;
      const c = insertCopy(e, discardNulls);
      if (c !== DROP) setKey(out, k, c);
    }
    return out;
  }
  return v;
}

/** Go's type names, for messages shaped like apimachinery's. */
function goType(v: unknown): string {
  switch (kindOf(v)) {
    case 'map': return 'map[string]interface {}';
    case 'list': return '[]interface {}';
    case 'string': return 'string';
    case 'number': return Number.isInteger(v) ? 'int64' : 'float64';
    case 'bool': return 'bool';
    default: return '<nil>';
  }
}

function show(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

const errBadArgType = (expected: string, actual: unknown): StatusError =>
  badRequest(`expected a ${expected}, but received a ${goType(actual)}`);
const errNoMergeKey = (m: unknown, key: string): StatusError =>
  badRequest(`map: ${show(m)} does not contain declared merge key: ${key}`);
const errBadPatchType = (t: unknown, m: unknown): StatusError =>
  badRequest(`unknown patch type: ${typeof t === 'string' ? t : show(t)} in map: ${show(m)}`);

/** `extractKey`: the field named after `<prefix>/`. */
function extractKey(s: string, prefix: string): string {
  const i = s.indexOf('/');
  if (i < 0 || s.slice(0, i) !== prefix) {
    throw badRequest(prefix === DELETE_FROM_PRIMITIVE_LIST_PREFIX ? ERR_BAD_PRIMITIVE_LIST : ERR_BAD_SET_ELEMENT_ORDER);
  }
  return s.slice(i + 1);
}

// ---------------------------------------------------------------------------------------------
// List helpers
// ---------------------------------------------------------------------------------------------

/** `sliceElementType`: the common kind of the items of both lists. */
function sliceElementKind(a: readonly unknown[], b: readonly unknown[]): Kind {
  let kind: Kind | undefined;
  for (const list of [a, b]) {
    for (let i = 0; i < list.length; i++) {
      const k = kindOf(list[i]);
      if (kind === undefined) {
        if (k === 'list') throw badRequest('lists of lists are not supported');
        if (k === 'null') throw badRequest('list element types are not identical: null items are not supported');
        kind = k;
      } else if (k !== kind) {
        throw badRequest(`list element types are not identical: ${show([a, b])}`);
      }
    }
  }
  if (kind === undefined) throw badRequest('no elements in any of the given slices');
  return kind;
}

/** The identity used to compare list items: the merge key's value for maps, the item otherwise (`index`). */
function itemId(item: unknown, mergeKey: string, kind: Kind): unknown {
  if (kind !== 'map') return item;
  if (!isObj(item)) return null;
  const v = item[mergeKey];
  return v === undefined ? null : v;
}

/** Position of the first occurrence of every identity in `order`. */
function positions(order: readonly unknown[], mergeKey: string, kind: Kind): Map<unknown, number> {
  const m = new Map<unknown, number>();
  for (let i = 0; i < order.length; i++) {
    const id = itemId(order[i], mergeKey, kind);
    if (!m.has(id)) m.set(id, i);
  }
  return m;
}

/** `validateMergeKeyInLists`. */
function validateMergeKey(mergeKey: string, list: readonly unknown[]): void {
  for (const item of list) {
    if (!isObj(item)) throw errBadArgType('map[string]interface {}', item);
    if (!hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
  }
}

/**
 * `normalizeSliceOrder`: stable sort of `toSort` by position in `order` (items marked
 * `$patch: delete` go last). Items absent from `order` follow Go's comparator (`less` is true),
 * emulated with an insertion sort; this cannot happen with the lists the merge produces.
 */
function normalizeSliceOrder(toSort: unknown[], order: readonly unknown[], mergeKey: string, kind: Kind): unknown[] {
  let toDelete: unknown[] | undefined;
  if (kind === 'map') {
    validateMergeKey(mergeKey, toSort);
    validateMergeKey(mergeKey, order);
    let kept: unknown[] | undefined;
    for (let i = 0; i < toSort.length; i++) {
      const m = toSort[i] as JsonMap;
      if (m[DIRECTIVE_MARKER] === 'delete') {
        if (!kept) kept = toSort.slice(0, i);
        (toDelete ??= []).push(m);
      } else if (kept) {
        kept.push(m);
      }
    }
    if (kept) toSort = kept;
  }
  const pos = positions(order, mergeKey, kind);
  const n = toSort.length;
  const idx = new Array<number>(n);
  let allFound = true;
  for (let i = 0; i < n; i++) {
    const p = pos.get(itemId(toSort[i], mergeKey, kind));
    idx[i] = p ?? -1;
    if (p === undefined) allFound = false;
  }
  const perm = Array.from({ length: n }, (_, i) => i);
  if (allFound) {
    perm.sort((a, b) => idx[a]! - idx[b]! || a - b);
  } else {
    const less = (a: number, b: number): boolean => (idx[a]! >= 0 && idx[b]! >= 0 ? idx[a]! < idx[b]! : true);
    for (let i = 1; i < n; i++) {
      for (let j = i; j > 0 && less(perm[j]!, perm[j - 1]!); j--) {
        const t = perm[j]!; perm[j] = perm[j - 1]!; perm[j - 1] = t;
      }
    }
  }
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) out[i] = toSort[perm[i]!];
  return toDelete ? out.concat(toDelete) : out;
}

/**
 * `mergeSortedSlice`: interleaves server-only items (`left`) into the patch-ordered items
 * (`right`), keeping each list's order; a server-only item goes first only when both it and the
 * next patch item appear in the live list and it comes earlier there.
 */
function mergeSortedSlice(left: unknown[], right: unknown[], serverOrder: readonly unknown[], mergeKey: string, kind: Kind): unknown[] {
  if (left.length === 0) return right;
  if (right.length === 0) return left;
  const pos = positions(serverOrder, mergeKey, kind);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = pos.get(itemId(left[i], mergeKey, kind));
      const ri = pos.get(itemId(right[j], mergeKey, kind));
      if (li !== undefined && ri !== undefined && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

/** `normalizeElementOrder`: patch items in patch order, server-only items in live order, interleaved. */
function normalizeElementOrder(patchItems: unknown[], serverOnly: unknown[], patchOrder: readonly unknown[],
  serverOrder: readonly unknown[], mergeKey: string, kind: Kind): unknown[] {
  const p = normalizeSliceOrder(patchItems, patchOrder, mergeKey, kind);
  const s = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  return mergeSortedSlice(s, p, serverOrder, mergeKey, kind);
}

/** `partitionPrimitivesByPresentInList` / `partitionMapsByPresentInList`: items of `merged` present in `by`, and the others. */
function partition(merged: unknown[], by: readonly unknown[], mergeKey: string): [unknown[], unknown[]] {
  const inPatch: unknown[] = [];
  const serverOnly: unknown[] = [];
  if (mergeKey === '') {
    const set = new Set(by);
    for (const v of merged) (set.has(v) ? inPatch : serverOnly).push(v);
    return [inPatch, serverOnly];
  }
  // Map items: look the merge key value up among the items of `by` (which must be maps up to the match).
  const pos = new Map<unknown, number>();
  let firstNonMap = -1;
  for (let i = 0; i < by.length; i++) {
    const b = by[i];
    if (!isObj(b)) {
      if (firstNonMap < 0) firstNonMap = i;
      continue;
    }
    if (hasOwn(b, mergeKey) && !pos.has(b[mergeKey])) pos.set(b[mergeKey], i);
  }
  for (const v of merged) {
    if (!isObj(v)) throw errBadArgType('map[string]interface {}', v);
    if (!hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    const p = pos.get(v[mergeKey]);
    const found = p !== undefined && (firstNonMap < 0 || p < firstNonMap);
    if (!found && firstNonMap >= 0) throw badRequest(`value for key ${firstNonMap} is not a map`);
    (found ? inPatch : serverOnly).push(v);
  }
  return [inPatch, serverOnly];
}

// ---------------------------------------------------------------------------------------------
// Merging
// ---------------------------------------------------------------------------------------------

/**
 * The live list as Go's `mergePatchIntoOriginal` sees it after `mergeSlice` ran on it: Go deletes
 * `$patch: delete` items in place (shifting later items left) and appends new items in place while
 * capacity lasts, so the slice it later uses as the live order reads: remaining items, the first
 * appended items, then stale copies. The resulting order of `$setElementOrder` merges depends on
 * this (apimachinery's own test "add map and delete map from merging list" encodes it).
 */
interface AliasView { backing: unknown[]; len: number }

/**
 * `mergeSlice`: merges a patch list into an (owned) original list of a field whose strategy is
 * `merge`, or applies a `$deleteFromPrimitiveList` list.
 */
function mergeSlice(original: unknown[], patch: readonly unknown[], path: string | null, c: CompiledMeta,
  mergeKey: string, isDeleteList: boolean, alias?: AliasView): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = sliceElementKind(original, patch);
  let merged: unknown[];
  let patchList: readonly unknown[] = patch;
  if (kind !== 'map') {
    if (isDeleteList) {
      const del = new Set(patch);
      return original.filter((v) => !del.has(v));
    }
    merged = [...new Set(original.concat(patch))];
  } else {
    if (mergeKey === '') throw badRequest(`cannot merge lists without merge key for ${path ?? 'list'}`);
    // mergeSliceWithSpecialElements
    const plain: JsonMap[] = [];
    let replace = false;
    for (const v of patch) {
      const m = v as JsonMap;
      if (!hasOwn(m, DIRECTIVE_MARKER)) {
        plain.push(m);
        continue;
      }
      const d = m[DIRECTIVE_MARKER];
      if (d === 'delete') {
        if (!hasOwn(m, mergeKey)) throw errNoMergeKey(m, mergeKey);
        const key = m[mergeKey];
        const matches = (o: unknown): boolean => isObj(o) && hasOwn(o, mergeKey) && o[mergeKey] === key;
        if (alias) {
          // Go deletes in place: later items shift left, the vacated tail keeps stale items.
          const b = alias.backing;
          for (let i = 0; i < alias.len;) {
            if (!matches(b[i])) { i++; continue; }
            for (let j = i; j < alias.len - 1; j++) b[j] = b[j + 1];
            alias.len--;
          }
        }
        original = original.filter((o) => !matches(o));
      } else if (d === 'replace') {
        replace = true;
      } else if (d === 'merge') {
        throw badRequest('merging lists cannot yet be specified in the patch');
      } else {
        throw errBadPatchType(d, m);
      }
    }
    if (replace) {
      original = plain.map((m) => rawCopy(m));
      patchList = [];
      alias = undefined; // appends now go to another array
    } else {
      patchList = plain;
    }
    // mergeSliceWithoutSpecialElements
    merged = original.slice();
    const index = new Map<unknown, number>();
    for (let i = 0; i < merged.length; i++) {
      const o = merged[i] as JsonMap;
      if (hasOwn(o, mergeKey) && !index.has(o[mergeKey])) index.set(o[mergeKey], i);
    }
    for (const v of patchList) {
      const m = v as JsonMap;
      if (!hasOwn(m, mergeKey)) throw errNoMergeKey(m, mergeKey);
      const key = m[mergeKey];
      const at = index.get(key);
      if (at !== undefined) {
        merged[at] = mergeMap(merged[at] as JsonMap, m, path, c);
      } else {
        index.set(key, merged.length);
        const copy = rawCopy(m);
        merged.push(copy);
        // Go appends in place while the original array has room.
        if (alias && alias.len < alias.backing.length) alias.backing[alias.len++] = copy;
      }
    }
  }
  const [inPatch, serverOnly] = partition(merged, patchList, mergeKey);
  return normalizeElementOrder(inPatch, serverOnly, patchList, original, mergeKey, kind);
}

/** `mergeSliceHandler`: merge when the strategy says so (or for a deletion list), else replace. */
function mergeSliceHandler(original: unknown, patch: unknown, path: string | null, c: CompiledMeta,
  strategy: string, mergeKey: string, isDeleteList: boolean, alias?: AliasView): unknown[] {
  if (!Array.isArray(original)) throw errBadArgType('[]interface {}', original);
  if (!Array.isArray(patch)) throw errBadArgType('[]interface {}', patch);
  if (strategy === 'merge' || isDeleteList) return mergeSlice(original, patch, path, c, mergeKey, isDeleteList, alias);
  return rawCopy(patch) as unknown[];
}

/** `applyRetainKeysDirective`: keeps only the listed keys of the original; the patch may set no others. */
function applyRetainKeys(original: JsonMap, patch: JsonMap): void {
  const list = patch[RETAIN_KEYS_DIRECTIVE];
  if (!Array.isArray(list)) throw badRequest(ERR_BAD_RETAIN_KEYS);
  const keep = new Set<unknown>(list);
  for (const k of Object.keys(patch)) {
    if (k === RETAIN_KEYS_DIRECTIVE || patch[k] === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX) ||
      k.startsWith(SET_ELEMENT_ORDER_PREFIX)) continue;
    if (!keep.has(k)) throw badRequest(ERR_BAD_RETAIN_KEYS);
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
}

/** `validatePatchWithSetOrderList`: patch items must appear in `$setElementOrder` in the same relative order. */
function validateSetOrder(patchList: readonly unknown[], order: readonly unknown[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  let items = patchList;
  if (mergeKey !== '') {
    for (const v of patchList) if (!isObj(v)) throw errBadArgType('map[string]interface {}', v);
    items = patchList.filter((v) => (v as JsonMap)[DIRECTIVE_MARKER] !== 'delete');
  }
  let pi = 0;
  let oi = 0;
  while (pi < items.length && oi < order.length) {
    const p = items[pi];
    if (isObj(p) && hasOwn(p, DIRECTIVE_MARKER)) {
      pi++;
      continue;
    }
    let equal: boolean;
    if (mergeKey === '') {
      equal = p === order[oi];
    } else {
      const o = order[oi];
      if (!isObj(p)) throw errBadArgType('map[string]interface {}', p);
      if (!isObj(o)) throw errBadArgType('map[string]interface {}', o);
      if (!hasOwn(p, mergeKey)) throw errNoMergeKey(p, mergeKey);
      if (!hasOwn(o, mergeKey)) throw errNoMergeKey(o, mergeKey);
      equal = p[mergeKey] === o[mergeKey];
    }
    if (equal) pi++;
    oi++;
  }
  if (pi < items.length && oi >= order.length) {
    throw badRequest(`The order in patch list:\n${show(patchList)}\n doesn't match ${SET_ELEMENT_ORDER_PREFIX} list:\n${show(order)}\n`);
  }
}

/**
 * `mergePatchIntoOriginal`: applies every `$setElementOrder/<field>` together with `<field>`;
 * the precedence of orders is `$setElementOrder` > patch list > live list.
 * Returns the fields it has merged (the main loop skips them).
 */
function applySetElementOrder(original: JsonMap, patch: JsonMap, path: string | null, c: CompiledMeta): Set<string> | undefined {
  let done: Set<string> | undefined;
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER_PREFIX)) continue;
    const order = patch[key];
    if (!Array.isArray(order)) throw errBadArgType('[]interface {}', order);
    const field = extractKey(key, SET_ELEMENT_ORDER_PREFIX);
    const foundOriginal = hasOwn(original, field);
    const foundPatch = hasOwn(patch, field);
    const originalList = foundOriginal ? original[field] : undefined;
    const patchList = foundPatch ? patch[field] : undefined;
    if (foundOriginal && !Array.isArray(originalList)) throw errBadArgType('[]interface {}', originalList);
    if (foundPatch && !Array.isArray(patchList)) throw errBadArgType('[]interface {}', patchList);
    const originalItems = (originalList ?? []) as unknown[];
    const patchItems = (patchList ?? []) as unknown[];
    const sub = childPath(c, path, field);
    const { strategy, mergeKey } = lookup(c, sub);
    validateSetOrder(patchItems, order, mergeKey);

    let merged: unknown[];
    let serverOrder: readonly unknown[] = originalItems;
    if (foundOriginal && !foundPatch) merged = originalItems;
    else if (!foundOriginal && foundPatch) merged = insertCopy(patchItems, false) as unknown[];
    else if (foundOriginal && foundPatch) {
      const alias: AliasView = { backing: originalItems.slice(), len: originalItems.length };
      merged = mergeSliceHandler(originalItems, patchItems, sub, c, strategy, mergeKey, false, alias);
      serverOrder = alias.backing;
    } else continue;

    const [inPatch, serverOnly] = partition(merged, order, mergeKey);
    const kind = sliceElementKind(originalItems, patchItems);
    setKey(original, field, normalizeElementOrder(inPatch, serverOnly, order, serverOrder, mergeKey, kind));
    (done ??= new Set()).add(field);
  }
  return done;
}

/**
 * `mergeMap`: merges `patch` (read only) into `original` (owned: mutated and returned).
 * `path` is the field path of these maps for metadata lookups (null: no metadata below).
 */
function mergeMap(original: JsonMap, patch: JsonMap, path: string | null, c: CompiledMeta): JsonMap {
  if (hasOwn(patch, DIRECTIVE_MARKER)) {
    const d = patch[DIRECTIVE_MARKER];
    if (d === 'replace') return rawCopy(patch) as JsonMap;
    if (d === 'delete') return {};
    if (d !== 'merge') throw errBadPatchType(d, patch);
  }
  if (hasOwn(patch, RETAIN_KEYS_DIRECTIVE)) applyRetainKeys(original, patch);
  const done = applySetElementOrder(original, patch, path, c);

  for (const pk of Object.keys(patch)) {
    if (pk.charCodeAt(0) === 0x24 /* $ */ &&
      (pk === DIRECTIVE_MARKER || pk === RETAIN_KEYS_DIRECTIVE || pk.startsWith(SET_ELEMENT_ORDER_PREFIX))) continue;
    if (done?.has(pk)) continue;
    const patchV = patch[pk];
    let k = pk;
    let isDeleteList = false;
    if (pk.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)) {
      isDeleteList = true;
      const field = extractKey(pk, DELETE_FROM_PRIMITIVE_LIST_PREFIX);
      if (field.length > 0) k = field;
    }

    if (patchV === null) {
      delete original[k];
      continue;
    }
    if (!hasOwn(original, k)) {
      if (!isDeleteList) {
        const v = insertCopy(patchV, true);
        if (v !== DROP) setKey(original, k, v);
      }
      continue;
    }
    const origV = original[k];
    const ok = kindOf(origV);
    if (ok !== kindOf(patchV)) {
      if (!isDeleteList) {
        const v = insertCopy(patchV, true);
        if (v === DROP) delete original[k];
        else setKey(original, k, v);
      }
      continue;
    }
    if (ok === 'map') {
      const sub = childPath(c, path, k);
      const { strategy } = lookup(c, sub);
      setKey(original, k, strategy === 'replace' ? rawCopy(patchV) : mergeMap(origV as JsonMap, patchV as JsonMap, sub, c));
    } else if (ok === 'list') {
      const sub = childPath(c, path, k);
      const { strategy, mergeKey } = lookup(c, sub);
      setKey(original, k, mergeSliceHandler(origV, patchV, sub, c, strategy, mergeKey, isDeleteList));
    } else {
      setKey(original, k, patchV);
    }
  }
  return original;
}

/**
 * Applies a strategic merge patch to an object and returns the result, a new object: neither
 * input is mutated and the result shares no structure with them.
 *
 * @param original the current object (a JSON object; `null`/`undefined` counts as `{}`).
 * @param patch the decoded patch body; must be a JSON object.
 * @param meta patch strategies and merge keys of the object's type (see {@link BUILTIN_PATCH_META},
 *   {@link OBJECT_META_PATCH_META}).
 * @returns the patched object.
 * @throws StatusError 400 BadRequest for an invalid patch, with apimachinery's wording where it
 *   has one: a patch that is not an object, `unknown patch type: <x> in map: …`,
 *   `map: … does not contain declared merge key: <key>`, `invalid patch format of primitive list`,
 *   `invalid patch format of retainKeys`, `invalid patch format of setElementOrder list`,
 *   `The order in patch list: … doesn't match $setElementOrder list: …`,
 *   `lists of lists are not supported`, `expected a <type>, but received a <type>`.
 *   (kube-apiserver answers some of these with 422 or 500; all are client mistakes here.)
 */
export function strategicMergePatch(original: unknown, patch: unknown, meta: PatchMeta): unknown {
  if (!isObj(patch)) throw badRequest(`strategic merge patch must be a JSON object, but received ${goType(patch) === '<nil>' ? 'null' : goType(patch)}`);
  let orig: JsonMap;
  if (original === null || original === undefined) orig = {};
  else if (isObj(original)) orig = deepClone(original) as JsonMap;
  else throw badRequest('invalid JSON document');
  return mergeMap(orig, patch, '', compile(meta));
}

// ---------------------------------------------------------------------------------------------
// Metadata of the built-in types (struct tags of k8s.io/api and k8s.io/apimachinery)
// ---------------------------------------------------------------------------------------------

/**
 * Patch metadata of `metav1.ObjectMeta` (k8s.io/apimachinery/pkg/apis/meta/v1/types.go):
 * `ownerReferences` merge by `uid`, `finalizers` merge as a set. Use it for custom resources
 * (which carry no other struct tags) and as the base of every built-in type.
 */
export const OBJECT_META_PATCH_META: PatchMeta = Object.freeze({
  'metadata.ownerReferences': { strategy: 'merge', mergeKey: 'uid' },
  'metadata.finalizers': { strategy: 'merge' },
});

const withObjectMeta = (extra: PatchMeta = {}): PatchMeta => Object.freeze({ ...OBJECT_META_PATCH_META, ...extra });

/**
 * Patch metadata of the built-in types this server serves, keyed by `<group>/<Kind>` (core group
 * is the empty string: `/ConfigMap`). Taken from the `patchStrategy`/`patchMergeKey` struct tags:
 * - core/v1 (k8s.io/api/core/v1/types.go): `NamespaceStatus.conditions` merge by `type`,
 *   `ServiceAccount.secrets` merge by `name`; ConfigMap, Secret, Event, LimitRange and
 *   ResourceQuota carry no tags beyond ObjectMeta (`NamespaceSpec.finalizers`,
 *   `ServiceAccount.imagePullSecrets`, `LimitRangeSpec.limits` are replaced);
 * - events.k8s.io/v1 Event, coordination.k8s.io/v1 Lease, rbac.authorization.k8s.io/v1 Role,
 *   RoleBinding, ClusterRole, ClusterRoleBinding: no tags beyond ObjectMeta (rules, subjects and
 *   aggregation selectors are replaced);
 * - apiextensions.k8s.io/v1 CustomResourceDefinition (k8s.io/apiextensions-apiserver
 *   types_jsonschema.go): `JSONSchemaProps.x-kubernetes-validations` merge by `rule`, reachable
 *   only at the schema root (`spec.versions` itself is replaced, and Go's struct lookup cannot
 *   descend into `properties` maps either).
 */
export const BUILTIN_PATCH_META: Record<string, PatchMeta> = Object.freeze({
  '/Namespace': withObjectMeta({ 'status.conditions': { strategy: 'merge', mergeKey: 'type' } }),
  '/ConfigMap': withObjectMeta(),
  '/Secret': withObjectMeta(),
  '/ServiceAccount': withObjectMeta({ secrets: { strategy: 'merge', mergeKey: 'name' } }),
  '/Event': withObjectMeta(),
  '/LimitRange': withObjectMeta(),
  '/ResourceQuota': withObjectMeta(),
  'events.k8s.io/Event': withObjectMeta(),
  'coordination.k8s.io/Lease': withObjectMeta(),
  'rbac.authorization.k8s.io/Role': withObjectMeta(),
  'rbac.authorization.k8s.io/RoleBinding': withObjectMeta(),
  'rbac.authorization.k8s.io/ClusterRole': withObjectMeta(),
  'rbac.authorization.k8s.io/ClusterRoleBinding': withObjectMeta(),
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': withObjectMeta({
    webhooks: { strategy: 'merge', mergeKey: 'name' }, 'webhooks.matchConditions': { strategy: 'merge', mergeKey: 'name' },
  }),
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy': withObjectMeta({
    'spec.matchConditions': { strategy: 'merge', mergeKey: 'name' }, 'spec.variables': { strategy: 'merge', mergeKey: 'name' },
  }),
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding': withObjectMeta({}),
  'admissionregistration.k8s.io/MutatingAdmissionPolicy': withObjectMeta({ 'spec.matchConditions': { strategy: 'merge', mergeKey: 'name' } }),
  'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding': withObjectMeta({}),
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': withObjectMeta({
    webhooks: { strategy: 'merge', mergeKey: 'name' }, 'webhooks.matchConditions': { strategy: 'merge', mergeKey: 'name' },
  }),
  'apiextensions.k8s.io/CustomResourceDefinition': withObjectMeta({
    'spec.versions.schema.openAPIV3Schema.x-kubernetes-validations': { strategy: 'merge', mergeKey: 'rule' },
  }),
});
