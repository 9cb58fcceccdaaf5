/**
 * OpenAPI v3 validation of custom resources with ajv, reporting kube-apiserver's errors.
 *
 * kube-apiserver validates custom resources with k8s.io/kube-openapi/pkg/validation/validate
 * against the CRD schema converted by apiextensions-apiserver `ConvertJSONSchemaPropsWithPostProcess`
 * (`x-kubernetes-int-or-string` → `type: [integer, string]`, unsupported formats stripped), and
 * turns the results into field errors in `kubeOpenAPIResultToFieldErrors`
 * (pkg/apiserver/validation/validation.go). Here the schema is converted once into a JSON schema
 * for ajv (compiled once, cached by the caller), and ajv's errors are translated into the causes
 * kube reports, with kube-openapi's wording (pkg/validation/errors/schema.go):
 *
 * - required → `FieldValueRequired` `Required value` on `spec.foo`;
 * - type → `FieldValueTypeInvalid` `Invalid value: "string": spec.replicas in body must be of type
 *   integer: "string"` (typeValidator rules, including its format quirks);
 * - enum → `FieldValueNotSupported` `Unsupported value: "x": supported values: "a", "b"`;
 * - maxLength → `FieldValueTooLong`, maxItems/maxProperties → `FieldValueTooMany`;
 * - pattern, min*, maximum, multipleOf, uniqueItems → `FieldValueInvalid` with kube-openapi's
 *   message (`spec.name in body should match '^a'`);
 * - format → `FieldValueTypeInvalid` `… in body must be of type date-time: "x"`;
 * - anyOf/oneOf/allOf/not → kube-openapi's composite errors (field `<nil>`, as kube reports them:
 *   `Invalid value: "": "spec.x" must validate at least one schema (anyOf)`) followed by the errors
 *   of the best failing branch (fewest errors, first on ties).
 *
 * Null values are only checked for type and enum, as kube-openapi does.
 */
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { Ajv as AjvInstance, Options as AjvOptions } from 'ajv';
import type { StatusCause } from '../apimachinery/errors.js';
import {
  NIL_PATH, goFloat, goJSON, goQuote, invalidCause, invalidCauseRaw, notSupportedCause, requiredCause,
  tooLongCause, tooManyCause, typeInvalidCause,
} from './schema-errors.js';
import { KUBE_FORMATS, effectiveFormat } from './schema-formats.js';
import { regexpError, tenantRegExp } from '../apimachinery/regexp.js';
import { isObj } from '../apimachinery/objects.js';

type Raw = Record<string, unknown>;

// ajv is CommonJS; under NodeNext its class is the module's `default` property.
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (opts: AjvOptions) => AjvInstance;

/** What error translation needs to know about a converted schema node. */
interface NodeInfo {
  /** Types as kube-openapi sees them (`[integer, string]` for int-or-string). */
  types: string[];
  nullable: boolean;
  /** The format kube keeps (as written in the CRD), or `''`. */
  format: string;
}

/** An OpenAPI validation error: the cause and the instance path of the value that owns it. */
export interface OpenAPIError {
  cause: StatusCause;
  /** JSON path segments (keys and indices) of the value whose validator produced the error. */
  owner: Array<string | number>;
}

/** A compiled OpenAPI validator for one schema. */
export interface OpenAPIValidator {
  /** Validates `obj`; returns kube's causes in order. */
  validate(obj: unknown): OpenAPIError[];
}


// ---------------------------------------------------------------------------------------------
// Schema conversion
// ---------------------------------------------------------------------------------------------

interface Converted {
  info: WeakMap<object, NodeInfo>;
  /** Synthetic `{anyOf: [{allOf: members}]}` nodes standing for a node's `allOf`. */
  allOfWrappers: WeakSet<object>;
}

const COPIED = ['enum', 'pattern', 'multipleOf', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const;

/** Converts one CRD schema node (JSONSchemaProps) into an ajv (draft-07) schema. */
function convert(raw: Raw, c: Converted): Raw {
  const out: Raw = {};
  const intOrString = raw['x-kubernetes-int-or-string'] === true;
  const type = typeof raw.type === 'string' ? raw.type : '';
  const types = intOrString ? ['integer', 'string'] : type ? [type] : [];
  const nullable = raw.nullable === true;
  const format = effectiveFormat(types.length === 1 ? types[0]! : '', typeof raw.format === 'string' ? raw.format : '');
  c.info.set(out, { types, nullable, format });
  if (types.length) out.type = nullable ? [...types, 'null'] : types.length === 1 ? types[0] : types;
  if (format && (types.length !== 1 || types[0] === 'string')) {
    const normalized = format.replace(/-/g, '');
    if (KUBE_FORMATS.has(normalized)) out.format = normalized;
  }
  for (const k of COPIED) if (raw[k] !== undefined && raw[k] !== null) out[k] = raw[k];
  if (typeof raw.minimum === 'number') {
    if (raw.exclusiveMinimum === true) out.exclusiveMinimum = raw.minimum;
    else out.minimum = raw.minimum;
  }
  if (typeof raw.maximum === 'number') {
    if (raw.exclusiveMaximum === true) out.exclusiveMaximum = raw.maximum;
    else out.maximum = raw.maximum;
  }
  if (raw.uniqueItems === true) out.uniqueItems = true;
  if (Array.isArray(raw.required) && raw.required.length) out.required = raw.required;
  if (isObj(raw.properties)) {
    const props: Raw = {};
    for (const [k, v] of Object.entries(raw.properties)) props[k] = isObj(v) ? convert(v, c) : {};
    out.properties = props;
  }
  if (isObj(raw.additionalProperties)) out.additionalProperties = convert(raw.additionalProperties, c);
  if (isObj(raw.items)) out.items = convert(raw.items, c);
  else if (Array.isArray(raw.items)) out.items = raw.items.map((s) => (isObj(s) ? convert(s, c) : {}));
  for (const k of ['anyOf', 'oneOf'] as const) {
    const list = raw[k];
    if (Array.isArray(list) && list.length) out[k] = list.map((s) => (isObj(s) ? convert(s, c) : {}));
  }
  if (Array.isArray(raw.allOf) && raw.allOf.length) {
    const wrapper = { anyOf: [{ allOf: raw.allOf.map((s) => (isObj(s) ? convert(s, c) : {})) }] };
    c.allOfWrappers.add(wrapper);
    out.allOf = [wrapper];
  }
  if (isObj(raw.not)) out.not = convert(raw.not, c);
  return out;
}

/** Schema keywords whose values are subschemas, and those holding maps of subschemas. */
const SUBSCHEMA_KEYS = new Set(['additionalProperties', 'items', 'not']);
const SUBSCHEMA_LIST_KEYS = new Set(['anyOf', 'oneOf', 'allOf']);
const COMBINATOR_KEYS = new Set(['anyOf', 'oneOf', 'allOf', 'not']);

/** Subschemas this large (canonical JSON length) that occur more than once are shared. */
const DEDUPE_MIN_SIZE = 100;

/**
 * Moves repeated subschemas (Prometheus repeats its container schema, its secret/configmap
 * selectors… dozens of times) into `definitions`, referenced by `$ref`, so ajv generates their
 * code once: this roughly halves compilation time of large CRDs. Nodes inside `anyOf`/`oneOf`/
 * `allOf`/`not` are left in place so that composite errors and their branch errors keep a common
 * schema path.
 */
function dedupe(root: Raw, c: Converted): void {
  const keys = new Map<object, string>();
  const counts = new Map<string, number>();
  const keyOf = (n: unknown, inCombinator: boolean): string => {
    if (!isObj(n)) {
      if (Array.isArray(n)) return `[${n.map((x) => keyOf(x, inCombinator)).join(',')}]`;
      return JSON.stringify(n) ?? 'null';
    }
    let k = '{';
    for (const [name, v] of Object.entries(n)) {
      let vk: string;
      if (name === 'properties' && isObj(v)) {
        vk = `{${Object.entries(v).map(([p, ps]) => `${JSON.stringify(p)}:${keyOf(ps, inCombinator)}`).join(',')}}`;
      } else if (SUBSCHEMA_KEYS.has(name) || SUBSCHEMA_LIST_KEYS.has(name)) {
        vk = keyOf(v, inCombinator || COMBINATOR_KEYS.has(name));
      } else vk = JSON.stringify(v);
      k += `${JSON.stringify(name)}:${vk},`;
    }
    const info = c.info.get(n);
    if (info) k += `"#format":${JSON.stringify(info.format)}`;
    k += '}';
    if (!inCombinator && k.length >= DEDUPE_MIN_SIZE) {
      keys.set(n, k);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return k;
  };
  keyOf(root, false);
  const definitions: Raw = {};
  const names = new Map<string, string>();
  const visit = (n: Raw): void => {
    const replace = (v: unknown): unknown => {
      if (!isObj(v)) return v;
      const k = keys.get(v);
      if (k !== undefined && counts.get(k)! > 1) {
        let name = names.get(k);
        if (name === undefined) {
          name = `s${names.size}`;
          names.set(k, name);
          definitions[name] = v;
          visit(v);
        }
        return { $ref: `#/definitions/${name}` };
      }
      visit(v);
      return v;
    };
    for (const [name, v] of Object.entries(n)) {
      if (name === 'properties' && isObj(v)) {
        for (const [p, ps] of Object.entries(v)) v[p] = replace(ps);
      } else if (name === 'additionalProperties' || name === 'items') {
        n[name] = Array.isArray(v) ? v.map(replace) : replace(v);
      }
    }
  };
  visit(root);
  if (names.size) root.definitions = definitions;
}

// ---------------------------------------------------------------------------------------------
// ajv instance
// ---------------------------------------------------------------------------------------------

/**
 * ajv's RegExp engine for `pattern` (and `patternProperties`): the tenant's Go pattern compiled by
 * RE2 (../apimachinery/regexp.ts), linear in the input. A pattern Go refuses matches nothing, and
 * its error is reported as kube-openapi's `Pattern` reports it (see `primitiveCause`). ajv keeps
 * every engine object in its instance scope for good, so the object holds only the pattern text
 * and looks the compiled RE2 up in the bounded cache on each test (a `Map` lookup; recompiled
 * when evicted). ajv keys its patterns by `toString()`, so each object prints as its Go pattern;
 * `code` names the engine for ajv's standalone code, which is not used here.
 */
const goRegExpEngine = Object.assign(
  (pattern: string): { test: (s: string) => boolean; toString: () => string } => ({
    test: (s: string) => regexpError(pattern) === undefined && tenantRegExp(pattern).test(s),
    toString: () => `go:${pattern}`,
  }),
  { code: 'tenantRegExp' },
);

let sharedAjv: AjvInstance | undefined;

function ajvInstance(): AjvInstance {
  if (!sharedAjv) {
    const ajv = new Ajv({
      allErrors: true,
      verbose: true,
      strict: false,
      validateSchema: false,
      addUsedSchema: false,
      messages: false,
      ownProperties: true,
      unicodeRegExp: true,
      inlineRefs: false,
      multipleOfPrecision: 9,
      code: { regExp: goRegExpEngine, optimize: false },
    });
    for (const [name, check] of KUBE_FORMATS) ajv.addFormat(name, { type: 'string', validate: check });
    sharedAjv = ajv;
  }
  return sharedAjv;
}

// ---------------------------------------------------------------------------------------------
// Error translation
// ---------------------------------------------------------------------------------------------

/** JSON pointer → segments. */
function pointerSegments(ptr: string): string[] {
  if (!ptr) return [];
  return ptr.slice(1).split('/').map((s) => (s.includes('~') ? s.replace(/~1/g, '/').replace(/~0/g, '~') : s));
}

/** kube-openapi's path name of a value: keys joined by `.`, list indices as `[i]`. */
function pathOf(root: unknown, segs: string[]): { name: string; owner: Array<string | number> } {
  let name = '';
  let cur: unknown = root;
  const owner: Array<string | number> = [];
  for (const s of segs) {
    if (Array.isArray(cur)) {
      const i = Number(s);
      name += `[${s}]`;
      owner.push(i);
      cur = cur[i];
    } else {
      name = name ? `${name}.${s}` : s;
      owner.push(s);
      cur = isObj(cur) ? cur[s] : undefined;
    }
  }
  return { name, owner };
}

/** The field of a kube-openapi error (`errPath.Child(strings.TrimPrefix(name, "."))`). */
function fieldOf(name: string): string {
  if (!name || name === '.') return NIL_PATH;
  return name.startsWith('.') ? name.slice(1) : name;
}

function typeMessage(name: string, typeName: string, value: string): string {
  return `${name} in body must be of type ${typeName}: ${goQuote(value)}`;
}

/**
 * kube-openapi `typeValidator.Validate`: the type error kube reports for `data`, or null when kube
 * accepts it. Returns the message and the bad value (the JSON type or format name).
 */
function kubeTypeError(info: NodeInfo, data: unknown, name: string): { message: string; value: string } | null {
  const t = info.types;
  const fmt = info.format;
  if (t.length === 0 && !fmt) return null;
  if (data === null || data === undefined) {
    if (t.length > 0 && !t.includes('null') && !info.nullable) return { message: typeMessage(name, t.join(','), 'null'), value: 'null' };
    return null;
  }
  let schType: string;
  let format = '';
  if (typeof data === 'boolean') schType = 'boolean';
  else if (typeof data === 'string') schType = 'string';
  else if (typeof data === 'number') {
    if (Number.isInteger(data)) { schType = 'integer'; format = 'int64'; } else { schType = 'number'; format = 'float64'; }
  } else if (Array.isArray(data)) schType = 'array';
  else schType = 'object';
  const strOrSlice = schType === 'string' || schType === 'array';
  const isIntFloat = schType === 'integer' && t.includes('number');
  if (!strOrSlice && fmt && !(t.includes(schType) || format === fmt || isIntFloat)) {
    return { message: typeMessage(name, fmt, format), value: format };
  }
  if (!(t.includes('number') || t.includes('integer')) && fmt && strOrSlice) return null;
  if (!(t.includes(schType) || isIntFloat)) return { message: typeMessage(name, t.join(','), schType), value: schType };
  return null;
}

/** A limit printed as kube-openapi does: truncated to int64 for integer data, `%v` for floats. */
function limitText(limit: number, data: unknown): string {
  return typeof data === 'number' && Number.isInteger(data) ? String(Math.trunc(limit)) : goFloat(limit);
}

interface Rec {
  err: ErrorObject;
  name: string;
  owner: Array<string | number>;
  alive: boolean;
  order: number;
  cause?: StatusCause;
}

const COMPOSITE = new Set(['anyOf', 'oneOf', 'not']);

function primitiveCause(r: Rec, info: NodeInfo | undefined): StatusCause | null {
  const e = r.err;
  const p = e.params as Record<string, unknown>;
  const data: unknown = e.data;
  const name = r.name;
  const field = fieldOf(name);
  switch (e.keyword) {
    case 'required': {
      const missing = String(p.missingProperty);
      return requiredCause(fieldOf(name ? `${name}.${missing}` : `.${missing}`));
    }
    case 'type': {
      const t = info ? kubeTypeError(info, data, name) : null;
      return t ? typeInvalidCause(field, t.value, t.message) : null;
    }
    case 'enum': {
      const values = Array.isArray(e.schema) ? (e.schema as unknown[]) : [];
      return notSupportedCause(field, data, values.map((v) => (typeof v === 'string' ? v : goJSON(v))));
    }
    case 'pattern': {
      const pattern = String(e.schema);
      // kube-openapi `Pattern`: `<pattern>, but pattern is invalid: <Go's error>` when it does not compile.
      const err = regexpError(pattern);
      const bad = err === undefined ? '' : `, but pattern is invalid: ${err}`;
      return invalidCause(field, data, `${name} in body should match '${pattern}${bad}'`);
    }
    case 'format': {
      const fmt = info?.format || String(e.schema);
      return typeInvalidCause(field, data, typeMessage(name, fmt, String(data)));
    }
    case 'maxLength':
      return tooLongCause(field, Number(p.limit));
    case 'minLength':
      return invalidCause(field, data, `${name} in body should be at least ${Number(p.limit)} chars long`);
    case 'maxItems':
      return tooManyCause(field, Array.isArray(data) ? data.length : -1, Number(p.limit));
    case 'minItems':
      return invalidCause(field, Array.isArray(data) ? data.length : 0, `${name} in body should have at least ${Number(p.limit)} items`);
    case 'maxProperties':
      return tooManyCause(field, isObj(data) ? Object.keys(data).length : -1, Number(p.limit));
    case 'minProperties':
      return invalidCause(field, isObj(data) ? Object.keys(data).length : 0, `${name} in body should have at least ${Number(p.limit)} properties`);
    case 'uniqueItems':
      return invalidCause(field, '', `${name} in body shouldn't contain duplicates`);
    case 'maximum':
      return invalidCause(field, data, `${name} in body should be less than or equal to ${limitText(Number(p.limit), data)}`);
    case 'exclusiveMaximum':
      return invalidCause(field, data, `${name} in body should be less than ${limitText(Number(p.limit), data)}`);
    case 'minimum':
      return invalidCause(field, data, `${name} in body should be greater than or equal to ${limitText(Number(p.limit), data)}`);
    case 'exclusiveMinimum':
      return invalidCause(field, data, `${name} in body should be greater than ${limitText(Number(p.limit), data)}`);
    case 'multipleOf':
      return invalidCause(field, data, `${name} in body should be a multiple of ${limitText(Number(p.multipleOf), data)}`);
    default:
      return invalidCause(field, data ?? '', `${name} in body failed ${e.keyword} validation`);
  }
}

function compositeCause(name: string, text: string): StatusCause {
  return invalidCauseRaw(NIL_PATH, '""', `${goQuote(name)} ${text}`);
}

/** Translates ajv's errors (allErrors, verbose) into kube's causes. */
function translate(errors: ErrorObject[], root: unknown, conv: Converted): OpenAPIError[] {
  const recs: Rec[] = errors.map((err, i) => {
    const { name, owner } = pathOf(root, pointerSegments(err.instancePath));
    return { err, name, owner, alive: true, order: i };
  });
  // Primitive errors.
  for (const r of recs) {
    if (COMPOSITE.has(r.err.keyword)) continue;
    const cause = primitiveCause(r, r.err.parentSchema ? conv.info.get(r.err.parentSchema) : undefined);
    if (cause) r.cause = cause;
    else r.alive = false;
  }
  // Composite errors, innermost first (ajv reports them after their branches).
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i]!;
    if (!COMPOSITE.has(r.err.keyword) || !r.alive) continue;
    const sp = r.err.schemaPath;
    const ip = r.err.instancePath;
    const wrapper = r.err.keyword === 'anyOf' && r.err.parentSchema !== undefined && conv.allOfWrappers.has(r.err.parentSchema);
    const prefix = wrapper ? `${sp}/0/allOf/` : `${sp}/`;
    const groups = new Map<number, Rec[]>();
    for (let j = 0; j < i; j++) {
      const b = recs[j]!;
      if (!b.err.schemaPath.startsWith(prefix)) continue;
      if (b.err.instancePath !== ip && !b.err.instancePath.startsWith(`${ip}/`)) continue;
      const idx = Number(b.err.schemaPath.slice(prefix.length).split('/')[0]);
      let g = groups.get(idx);
      if (!g) groups.set(idx, (g = []));
      g.push(b);
    }
    const all = [...groups.values()].flat();
    const dropAll = (): void => {
      r.alive = false;
      for (const b of all) b.alive = false;
    };
    // kube-openapi only checks type and enum of null values.
    if (r.err.data === null || r.err.data === undefined) { dropAll(); continue; }
    const failing = [...groups.entries()].filter(([, g]) => g.some((b) => b.alive));
    const passedAfterDrops = groups.size - failing.length;
    const best = (): number => {
      let bestIdx = -1;
      let bestCount = Infinity;
      for (const [idx, g] of failing) {
        const n = g.filter((b) => b.alive).length;
        if (n < bestCount || (n === bestCount && idx < bestIdx)) { bestCount = n; bestIdx = idx; }
      }
      return bestIdx;
    };
    const keepOnly = (idx: number): void => {
      for (const [k, g] of groups) if (k !== idx) for (const b of g) b.alive = false;
      const kept = groups.get(idx)?.filter((b) => b.alive) ?? [];
      if (kept.length) r.order = Math.min(...kept.map((b) => b.order)) - 0.5;
    };
    if (wrapper) {
      const members = ((r.err.parentSchema as Raw).anyOf as Raw[])[0]!.allOf as unknown[];
      if (failing.length === 0) { dropAll(); continue; }
      r.cause = compositeCause(r.name, `must validate all the schemas (allOf)${failing.length === members.length ? '. None validated' : ''}`);
    } else if (r.err.keyword === 'anyOf') {
      if (passedAfterDrops > 0) { dropAll(); continue; }
      r.cause = compositeCause(r.name, 'must validate at least one schema (anyOf)');
      keepOnly(best());
    } else if (r.err.keyword === 'oneOf') {
      const passing = (r.err.params as { passingSchemas?: number[] | null }).passingSchemas;
      const valid = (passing ? passing.length : 0) + passedAfterDrops;
      if (valid === 1) { dropAll(); continue; }
      if (valid === 0) {
        r.cause = compositeCause(r.name, 'must validate one and only one schema (oneOf). Found none valid');
        keepOnly(best());
      } else {
        r.cause = compositeCause(r.name, `must validate one and only one schema (oneOf). Found ${valid} valid alternatives`);
        for (const b of all) b.alive = false;
      }
    } else {
      r.cause = compositeCause(r.name, 'must not validate the schema (not)');
    }
  }
  return recs
    .filter((r) => r.alive && r.cause)
    .sort((a, b) => a.order - b.order)
    .map((r) => ({ cause: r.cause!, owner: r.owner }));
}

/**
 * Compiles the OpenAPI part of a CRD schema (`openAPIV3Schema`) into a validator. The caller caches
 * the result per schema.
 */
export function compileOpenAPI(schema: Raw): OpenAPIValidator {
  const conv: Converted = { info: new WeakMap(), allOfWrappers: new WeakSet() };
  const converted = convert(schema, conv);
  dedupe(converted, conv);
  const ajv = ajvInstance();
  const fn: ValidateFunction = ajv.compile(converted);
  ajv.removeSchema(converted);
  return {
    validate(obj: unknown): OpenAPIError[] {
      if (fn(obj)) return [];
      return translate(fn.errors ?? [], obj, conv);
    },
  };
}
