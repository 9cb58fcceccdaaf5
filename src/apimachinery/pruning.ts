/**
 * Unknown-field pruning and server-side field validation (`?fieldValidation=Strict|Warn|Ignore`).
 *
 * kube-apiserver decodes built-in objects into Go structs, so fields the type does not declare are
 * always dropped; what differs per `fieldValidation` directive is what the client is told
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation):
 *
 * - `Strict` — the write fails with the strict decoding errors;
 * - `Warn` (the server default when the parameter is absent or empty) — one `Warning` header per
 *   unknown field;
 * - `Ignore` — dropped silently.
 *
 * kcp-ts stores plain JSON, so it does the dropping itself, walking the object alongside the
 * OpenAPI v3 schemas of src/apis/schemas (or a CRD's structural schema, which follows the same
 * rules: k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go).
 *
 * Paths use the format of kube's strict decoder (sigs.k8s.io/json
 * internal/golang/encoding/json/kubernetes_patch.go, and the identical
 * `UnknownFieldPathOptions` of apiextensions-apiserver): keys joined by `.`, list indices as
 * `[i]`, no leading dot — `spec.rules[0].bogus`, `metadata.foo`, `bogus` for a top-level field.
 */
import { StatusError, type StatusCause } from './errors.js';
import { OBJECT_META, V3_REF_PREFIX } from '../apis/schemas/helpers.js';
import { isObj } from './objects.js';

/** The three `fieldValidation` directives (metav1.FieldValidationIgnore/Warn/Strict). */
export type FieldValidationMode = 'Strict' | 'Warn' | 'Ignore';

/** The options kind a `fieldValidation` parameter belongs to, which names it in Invalid errors. */
export type WriteOptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions';

/**
 * At most this many strict decoding errors are reported per request: sigs.k8s.io/json
 * `saveStrictError` stops accumulating after 100 (kubernetes_patch.go). Pruning itself is not
 * capped.
 */
export const MAX_STRICT_ERRORS = 100;

/** Prefix of OpenAPI v2 `$ref`s, accepted as well for schemas copied from `/openapi/v2`. */
const V2_REF_PREFIX = '#/definitions/';

// ---------------------------------------------------------------------------------------------
// Compiled schemas
// ---------------------------------------------------------------------------------------------

/**
 * What pruning needs to know about one schema node, with `$ref`s resolved and `allOf` members
 * merged. Child schemas stay raw and are compiled lazily, so recursive definitions
 * (JSONSchemaProps) cost nothing until data actually nests.
 */
interface Compiled {
  /** Declared properties: name → raw child schema. */
  props: Map<string, object> | undefined;
  /** Schema of values under keys not in `props` (`additionalProperties: {…}`). */
  additional: object | undefined;
  /** Keys not in `props` are kept (`additionalProperties: true` or preserve-unknown-fields). */
  allowAny: boolean;
  /**
   * The node describes an object, so unlisted keys are dropped unless `allowAny`: it has
   * `properties`, `additionalProperties` or `type: object`. Schemas of other types (or none)
   * never drop keys: a wrongly typed value is validation's business, not pruning's.
   */
  isObject: boolean;
  /** `x-kubernetes-embedded-resource`: `apiVersion`/`kind` kept, `metadata` pruned as ObjectMeta. */
  embedded: boolean;
  /** Schema of list items. */
  items: object | undefined;
  /** Nothing at or below a value of this schema can be pruned: skip it without looking. */
  leaf: boolean;
}

/** Permissive node for unresolvable `$ref`s and `$ref`/`allOf` cycles: keeps everything. */
const KEEP_ALL: Compiled = Object.freeze({
  props: undefined, additional: undefined, allowAny: true, isObject: false, embedded: false, items: undefined, leaf: true,
}) as Compiled;

/** Compiled nodes per definitions map (refs resolve against it), keyed by raw schema object. */
const compiledCache = new WeakMap<object, WeakMap<object, Compiled>>();

function cacheFor(definitions: Record<string, object>): WeakMap<object, Compiled> {
  let c = compiledCache.get(definitions);
  if (!c) {
    c = new WeakMap();
    compiledCache.set(definitions, c);
  }
  return c;
}


/** The definition a `$ref` points at, or undefined when it is not a local reference we know. */
function resolveRef(ref: string, definitions: Record<string, object>): object | undefined {
  let name: string;
  if (ref.startsWith(V3_REF_PREFIX)) name = ref.slice(V3_REF_PREFIX.length);
  else if (ref.startsWith(V2_REF_PREFIX)) name = ref.slice(V2_REF_PREFIX.length);
  else return undefined;
  return Object.prototype.hasOwnProperty.call(definitions, name) ? definitions[name] : undefined;
}

/** Merges `two` into `one` where both describe the same property (`{allOf: [one, two]}`). */
function both(one: object, two: object): object {
  return one === two ? one : { allOf: [one, two] };
}

/** Accumulator used while compiling one node: a Compiled node before `leaf` is known. */
type Draft = Omit<Compiled, 'leaf'>;

function absorb(d: Draft, c: Compiled): void {
  if (c.props) {
    if (!d.props) d.props = new Map(c.props);
    else for (const [k, v] of c.props) { const prev = d.props.get(k); d.props.set(k, prev ? both(prev, v) : v); }
  }
  if (c.additional) d.additional = d.additional ? both(d.additional, c.additional) : c.additional;
  if (c.items) d.items = d.items ? both(d.items, c.items) : c.items;
  d.allowAny ||= c.allowAny;
  d.isObject ||= c.isObject;
  d.embedded ||= c.embedded;
}

/**
 * Compiles (and caches) a schema node. `visiting` holds the `$ref`/`allOf` chain being compiled;
 * meeting a node again means a cycle, answered with the permissive KEEP_ALL.
 */
function compile(schema: object, definitions: Record<string, object>, cache: WeakMap<object, Compiled>, visiting?: Set<object>): Compiled {
  const hit = cache.get(schema);
  if (hit) return hit;
  if (visiting?.has(schema)) return KEEP_ALL;
  const s = schema as Record<string, unknown>;

  const d: Draft = { props: undefined, additional: undefined, allowAny: false, isObject: false, embedded: false, items: undefined };
  const properties = s.properties;
  if (isObj(properties)) {
    d.isObject = true;
    d.props = new Map();
    const names = Object.keys(properties);
    for (let i = 0; i < names.length; i++) {
      const child = properties[names[i]!];
      // A property declared with a non-object schema (malformed) still makes the name known.
      d.props.set(names[i]!, isObj(child) ? child : {});
    }
  }
  const ap = s.additionalProperties;
  if (ap === true) { d.isObject = true; d.allowAny = true; }
  else if (ap === false) d.isObject = true;
  else if (isObj(ap)) { d.isObject = true; d.additional = ap; }
  if (s.type === 'object') d.isObject = true;
  if (s['x-kubernetes-preserve-unknown-fields'] === true) d.allowAny = true;
  if (s['x-kubernetes-embedded-resource'] === true) d.embedded = true;
  if (isObj(s.items)) d.items = s.items;

  const ref = s.$ref;
  const allOf = s.allOf;
  if (typeof ref === 'string' || Array.isArray(allOf)) {
    const chain = visiting ?? new Set<object>();
    chain.add(schema);
    if (typeof ref === 'string') {
      const target = resolveRef(ref, definitions);
      absorb(d, target ? compile(target, definitions, cache, chain) : KEEP_ALL);
    }
    if (Array.isArray(allOf)) {
      for (let i = 0; i < allOf.length; i++) {
        const member: unknown = allOf[i];
        if (isObj(member)) absorb(d, compile(member, definitions, cache, chain));
      }
    }
    chain.delete(schema);
  }

  const compiled: Compiled = {
    ...d,
    leaf: !d.items && !d.additional && !d.embedded && (!d.props || d.props.size === 0) && (d.allowAny || !d.isObject),
  };
  cache.set(schema, compiled);
  return compiled;
}

// ---------------------------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------------------------

/** Walk state: the path to the current value (keys and list indices) and what was removed. */
interface Walk {
  definitions: Record<string, object>;
  cache: WeakMap<object, Compiled>;
  /** ObjectMeta, for `metadata` of the root and of embedded resources (undefined if unknown). */
  objectMeta: Compiled | undefined;
  path: Array<string | number>;
  removed: string[];
}

/** Formats the current path plus `key` in the strict decoder's format. */
function pathOf(path: Array<string | number>, key: string): string {
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out.length === 0 ? seg : `.${seg}`;
  }
  return out.length === 0 ? key : `${out}.${key}`;
}

function pruneValue(value: unknown, node: Compiled, w: Walk): void {
  if (node.leaf || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    if (!node.items) return;
    const itemNode = compile(node.items, w.definitions, w.cache);
    if (itemNode.leaf) return;
    const depth = w.path.length;
    for (let i = 0; i < value.length; i++) {
      w.path[depth] = i;
      pruneValue(value[i], itemNode, w);
    }
    w.path.length = depth;
    return;
  }
  pruneObject(value as Record<string, unknown>, node, w);
}

function pruneObject(obj: Record<string, unknown>, node: Compiled, w: Walk): void {
  const keys = Object.keys(obj);
  const depth = w.path.length;
  const props = node.props;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (node.embedded) {
      if (key === 'apiVersion' || key === 'kind') continue;
      if (key === 'metadata') {
        const meta = w.objectMeta ?? (props?.has(key) ? compile(props.get(key)!, w.definitions, w.cache) : undefined);
        if (meta) {
          w.path[depth] = key;
          pruneValue(obj[key], meta, w);
          w.path.length = depth;
        }
        continue;
      }
    }
    let child: object | undefined = props?.get(key);
    if (child === undefined) child = node.additional;
    if (child !== undefined) {
      const childNode = compile(child, w.definitions, w.cache);
      if (childNode.leaf) continue;
      const v = obj[key];
      if (typeof v !== 'object' || v === null) continue;
      w.path[depth] = key;
      pruneValue(v, childNode, w);
      w.path.length = depth;
    } else if (!node.allowAny && node.isObject) {
      w.removed.push(pathOf(w.path, key));
      delete obj[key];
    }
  }
}

/** Root variants of compiled nodes (always embedded-resource), per compiled node. */
const rootCache = new WeakMap<Compiled, Compiled>();

function compileRoot(schema: object, definitions: Record<string, object>, cache: WeakMap<object, Compiled>): Compiled {
  const node = compile(schema, definitions, cache);
  if (node.embedded) return node;
  let root = rootCache.get(node);
  if (!root) {
    root = { ...node, embedded: true, leaf: false };
    rootCache.set(node, root);
  }
  return root;
}

/**
 * Removes, in place, every field of `obj` that `rootSchema` does not allow, and returns the
 * removed fields' paths in document order (`spec.rules[0].bogus`, `metadata.foo`, `bogus`).
 *
 * Rules, as kube's Go struct decoding of built-in types and the structural pruning of custom
 * resources (apiextensions-apiserver `pruning.PruneWithOptions`) apply them:
 *
 * - an object schema (`properties`, `additionalProperties` or `type: object`) drops keys it does
 *   not list, unless `additionalProperties` is `true` / a schema (values are then pruned against
 *   it: `data.x` of a ConfigMap is never unknown) or `x-kubernetes-preserve-unknown-fields: true`
 *   (unknown keys kept, known properties still pruned below);
 * - list items are pruned against `items`; `$ref` (`#/components/schemas/<name>`, or
 *   `#/definitions/<name>`) resolves against `definitions`, `allOf` members are merged;
 * - the root, like every `x-kubernetes-embedded-resource`, keeps `apiVersion` and `kind` and has
 *   its `metadata` pruned against ObjectMeta (kube drops unknown metadata fields too, reporting
 *   `metadata.<field>`);
 * - values whose type does not match the schema are left alone (validation reports them);
 *   unresolvable `$ref`s and `$ref`/`allOf` cycles keep everything.
 *
 * Compiled schema nodes are cached per (definitions, schema object), so schemas and definitions
 * must not be mutated after first use. Kube caps the *reported* strict errors at
 * {@link MAX_STRICT_ERRORS}; this function returns every removed path, the formatting helpers
 * below apply the cap.
 *
 * Source: sigs.k8s.io/json `UnmarshalStrict` (path format: kubernetes_patch.go `newFieldError`,
 * `appendStrictFieldStackKey`, `appendStrictFieldStackIndex`) and
 * k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go.
 */
export function pruneUnknownFields(obj: unknown, rootSchema: object, definitions: Record<string, object>): string[] {
  const removed: string[] = [];
  if (!isObj(obj)) return removed;
  const cache = cacheFor(definitions);
  const metaSchema = Object.prototype.hasOwnProperty.call(definitions, OBJECT_META) ? definitions[OBJECT_META] : undefined;
  const w: Walk = {
    definitions,
    cache,
    objectMeta: metaSchema ? compile(metaSchema, definitions, cache) : undefined,
    path: [],
    removed,
  };
  pruneObject(obj, compileRoot(rootSchema, definitions, cache), w);
  return removed;
}

// ---------------------------------------------------------------------------------------------
// fieldValidation directive and responses
// ---------------------------------------------------------------------------------------------

/** Values accepted for `fieldValidation`, sorted as kube lists them (sets.NewString(...).List()). */
const ALLOWED_FIELD_VALIDATION = ['', 'Ignore', 'Strict', 'Warn'];

/** Go's `unicode.IsPrint` beyond ASCII: letters, marks, numbers, punctuation and symbols. */
const GO_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

/**
 * Go's `strconv.Quote`: a double-quoted string with Go escapes (`\n`, `\t`, `\x00`, `\u2028`…)
 * for control and non-printable characters; printable Unicode is kept as is.
 */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (ch) {
      case '"': out += '\\"'; continue;
      case '\\': out += '\\\\'; continue;
      case '\x07': out += '\\a'; continue;
      case '\b': out += '\\b'; continue;
      case '\f': out += '\\f'; continue;
      case '\n': out += '\\n'; continue;
      case '\r': out += '\\r'; continue;
      case '\t': out += '\\t'; continue;
      case '\v': out += '\\v'; continue;
    }
    if (c < 0x80) out += c < 0x20 || c === 0x7f ? `\\x${c.toString(16).padStart(2, '0')}` : ch;
    else if (GO_PRINTABLE.test(ch)) out += ch;
    else if (c >= 0xd800 && c < 0xe000) out += '\ufffd'; // lone surrogate: Go's JSON decoder makes it U+FFFD
    else if (c > 0xffff) out += `\\U${c.toString(16).padStart(8, '0')}`;
    else out += `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return out + '"';
}

/**
 * The Invalid causes of a `fieldValidation` query value: none for `""`, `Ignore`, `Strict`,
 * `Warn` (case-sensitive) or an absent parameter, else one `FieldValueNotSupported` cause, as
 * k8s.io/apimachinery/pkg/apis/meta/v1/validation `ValidateFieldValidation` builds it with
 * `field.NotSupported` (message `Unsupported value: "foo": supported values: "", "Ignore",
 * "Strict", "Warn"`). Exposed so callers validating several options can aggregate causes as
 * `ValidateCreateOptions` does.
 */
export function fieldValidationCauses(param: string | null | undefined): StatusCause[] {
  if (param === null || param === undefined || ALLOWED_FIELD_VALIDATION.includes(param)) return [];
  return [{
    reason: 'FieldValueNotSupported',
    message: `Unsupported value: ${goQuote(param)}: supported values: ${ALLOWED_FIELD_VALIDATION.map(goQuote).join(', ')}`,
    field: 'fieldValidation',
  }];
}

/**
 * Parses the `fieldValidation` query parameter (pass `URLSearchParams.get`, i.e. the first value,
 * as kube's parameter codec does). Absent or empty → `Warn`, the server default
 * (k8s.io/apiserver/pkg/endpoints/handlers/rest.go `fieldValidation`; kubectl ≥ 1.27 sends
 * `Strict` itself).
 *
 * An unsupported value is rejected before the body is decoded with **422 Invalid** — not 400 —
 * as the create/update/patch handlers do (`errors.NewInvalid(schema.GroupKind{Group:
 * "meta.k8s.io", Kind: "CreateOptions"}, "", errs)`), e.g.
 * `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "foo": supported
 * values: "", "Ignore", "Strict", "Warn"`. `optionsKind` names the request's options
 * (`UpdateOptions` for PUT, `PatchOptions` for PATCH).
 */
export function fieldValidationMode(param: string | null | undefined, optionsKind: WriteOptionsKind = 'CreateOptions'): FieldValidationMode {
  if (param === null || param === undefined || param === '') return 'Warn';
  if (param === 'Strict' || param === 'Warn' || param === 'Ignore') return param;
  const causes = fieldValidationCauses(param);
  const c = causes[0]!;
  throw new StatusError(422, 'Invalid', `${optionsKind}.meta.k8s.io "" is invalid: ${c.field}: ${c.message}`,
    { group: 'meta.k8s.io', kind: optionsKind, causes });
}

/**
 * The strict decoding errors of a body, as sigs.k8s.io/json reports them: `duplicate field
 * "<path>"` for each repeated key (found while decoding), then `unknown field "<path>"` for each
 * pruned field, capped at MAX_STRICT_ERRORS (kubernetes_patch.go `saveStrictError`).
 */
export function strictErrors(unknownPaths: readonly string[], duplicatePaths: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const p of duplicatePaths) { if (out.length >= MAX_STRICT_ERRORS) return out; out.push(`duplicate field ${goQuote(p)}`); }
  for (const p of unknownPaths) { if (out.length >= MAX_STRICT_ERRORS) return out; out.push(`unknown field ${goQuote(p)}`); }
  return out;
}

/**
 * The text of a strict decoding error: `strict decoding error: unknown field "spec.foo", unknown
 * field "bar"` (k8s.io/apimachinery/pkg/runtime/error.go `strictDecodingError.Error`).
 * `errors` are the texts of `strictErrors`.
 */
export function strictDecodingMessage(errors: readonly string[]): string {
  return `strict decoding error: ${errors.join(', ')}`;
}

/**
 * The `fieldValidation=Strict` failure of a create (POST) or update (PUT) whose body had unknown
 * or duplicate fields (`errors` from `strictErrors`): **400 BadRequest** with
 * `<Kind> in version "<version>" cannot be handled as a <Kind>: strict decoding error: unknown
 * field "spec.foo", unknown field "bar"` — k8s.io/apiserver/pkg/endpoints/handlers/rest.go
 * `transformDecodeError` wrapping the decoder's strictDecodingError (create.go / update.go).
 * `kind` and `version` are the body's (`apiVersion` `rbac.authorization.k8s.io/v1` → `v1`).
 * For custom resources kube sorts the paths (structural pruning) — sort before calling if needed.
 */
export function unknownFieldsError(errors: readonly string[], kind: string, version: string): StatusError {
  return new StatusError(400, 'BadRequest',
    `${kind} in version ${goQuote(version)} cannot be handled as a ${kind}: ${strictDecodingMessage(errors)}`);
}

/** Go `encoding/json` of a JSON value: compact, map keys sorted, `<`, `>`, `&`, U+2028/9 escaped. */
function goJSON(v: unknown): string {
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v) ?? 'null';
    return typeof v === 'string' ? s.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : s;
  }
  if (Array.isArray(v)) return `[${v.map(goJSON).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort(goStringCompare);
  return `{${keys.map((k) => `${goJSON(k)}:${goJSON(o[k])}`).join(',')}}`;
}

/** Go's byte-wise string order (UTF-8 order equals code point order, not UTF-16 order). */
function goStringCompare(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/** Go `fmt` `%+v` of a decoded JSON value: `map[a:1 b:[x y]]`, `<nil>` for null. */
function goSprint(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goSprint).join(' ')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).sort(goStringCompare);
    return `map[${keys.map((k) => `${k}:${goSprint(o[k])}`).join(' ')}]`;
  }
  if (typeof v === 'number' && !Number.isInteger(v)) {
    // Go %v of float64 uses %g with the shortest representation; exponents as e+21 / e-07.
    return String(v).replace(/e([+-])(\d)$/, 'e$10$2');
  }
  return String(v);
}

/**
 * The `fieldValidation=Strict` failure of a PATCH whose result has unknown fields or whose body
 * repeats a key (`errors` from `strictErrors`): **422 Invalid**
 * on field `patch`, with empty kind and name (k8s.io/apiserver/pkg/endpoints/handlers/patch.go):
 *
 * `  "" is invalid: patch: Invalid value: "<value>": strict decoding error: unknown field "spec.foo"`
 * (the message starts with a space: kube formats an empty GroupKind).
 *
 * `<value>` is, for JSON patch and merge patch (`jsonPatcher`), the patched object as Go encodes it
 * (compact JSON, sorted keys) — pass the patched object; for strategic merge patch
 * (`strategicPatchObject`), the patch map printed with Go's `%+v` (`map[spec:map[foo:1]]`) —
 * pass the patch. Server-side apply is different: unknown fields fail in the field manager
 * regardless of the directive.
 */
export function unknownFieldsPatchError(
  errors: readonly string[],
  patchType: 'json' | 'merge' | 'strategic',
  value: unknown,
): StatusError {
  const rendered = patchType === 'strategic' ? goSprint(value) : goJSON(value);
  const body = `Invalid value: ${goQuote(rendered)}: ${strictDecodingMessage(errors)}`;
  return new StatusError(422, 'Invalid', ` "" is invalid: patch: ${body}`,
    { causes: [{ reason: 'FieldValueInvalid', message: body, field: 'patch' }] });
}
