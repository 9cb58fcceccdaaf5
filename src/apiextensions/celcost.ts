/**
 * CEL cost: the static estimate kube computes when a CRD (or kcp APIResourceSchema) is written, and
 * the runtime budget it enforces when rules and admission policy expressions are evaluated.
 *
 * Static (k8s.io/apiextensions-apiserver validation.go `getExpressionCost`, cel-go checker/cost.go,
 * k8s.io/apiserver/pkg/cel/common/schemas.go `SchemaDeclType`): every value a rule can reach has a
 * declared type with a maximum size — `maxLength` (×4, bytes per code point), `maxItems`,
 * `maxProperties`, or, where the schema sets no bound, as many as fit in a 3 MiB request given the
 * element's smallest JSON form. The cost of an expression follows cel-go's coster: identifiers and
 * field selections 1, literals 0, list/map literals 10/30, calls 1, string/bytes concatenation and
 * comparison ⌈size × 0.1⌉, `contains` the product of both traversals, `matches` ⌈(size+1) × 0.1⌉ ×
 * ⌈pattern × 0.25⌉, `in` on a list its size, and a comprehension (all, exists, exists_one, map,
 * filter) its range's size × (loop condition + step). The rule's cost is multiplied by how often the
 * rule can run (the product of `maxItems`/`maxProperties` above it, else the unbounded estimate).
 *
 * Runtime (cel-go interpreter/runtimecost.go, k8s.io/apiserver/pkg/apis/cel/config.go): evaluation
 * is metered by a hook in the evaluator every node passes through (`installEvaluationMeter`); an
 * expression stops at {@link PER_CALL_LIMIT} with cel-go's "operation cancelled: actual cost limit
 * exceeded", and callers subtract what each expression used from a per-object (CRD) or
 * per-evaluation (admission policy) budget of {@link RUNTIME_CEL_COST_BUDGET}.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';

/** `celconfig.MaxRequestSizeBytes`: the request size the unbounded estimates assume (3 MiB). */
export const MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024;
/** `StaticEstimatedCostLimit`: the estimated cost one rule may have (× its cardinality). */
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
/** `StaticEstimatedCRDCostLimit`: the estimated cost all rules of one version's schema may have together. */
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;
/** `celconfig.PerCallLimit`: the runtime cost one expression evaluation may use. */
export const PER_CALL_LIMIT = 1_000_000;
/** `celconfig.RuntimeCELCostBudget`: the runtime cost all rules of one object (or one policy evaluation) may use. */
export const RUNTIME_CEL_COST_BUDGET = 10_000_000;

/** cel-go's error text when an evaluation reaches its cost limit. */
export const COST_LIMIT_EXCEEDED = 'operation cancelled: actual cost limit exceeded';
/** kube's error text when the budget of an object or policy evaluation is spent. */
export const OUT_OF_BUDGET = 'validation failed due to running out of cost budget, no further validation rules will be run';

const U64_MAX = 18446744073709551615;
const STRING_TRAVERSAL = 0.1;
const REGEX_STRING_LENGTH = 0.25;

/**
 * kube's `getCostErrorMessage`: `<costName> exceeds budget by factor of <f> (try simplifying …)`,
 * the factor as `more than 100x`, `%.1fx`, or `%fx` (six decimals) below 1.5.
 */
export function costErrorMessage(costName: string, cost: number, limit: number): string {
  const f = cost / limit;
  const factor = f > 100 ? 'more than 100x' : f < 1.5 ? `${f.toFixed(6)}x` : `${f.toFixed(1)}x`;
  return `${costName} exceeds budget by factor of ${factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

const addSat = (a: number, b: number): number => Math.min(U64_MAX, a + b);
const mulSat = (a: number, b: number): number => (a === 0 || b === 0 ? 0 : Math.min(U64_MAX, a * b));
const byFactor = (x: number, f: number): number => Math.min(U64_MAX, Math.ceil(x * f));

// ---------------------------------------------------------------------------------------------
// Declared types with sizes (SchemaDeclType)
// ---------------------------------------------------------------------------------------------

/** A value's CEL type as far as cost is concerned, with kube's size bounds. */
export interface SizedType {
  kind: 'string' | 'bytes' | 'list' | 'map' | 'object' | 'int' | 'double' | 'bool' | 'duration' | 'timestamp' | 'dyn';
  /** `DeclType.MaxElements`: characters (bytes), items, or properties; 0 for objects and numbers. */
  maxElements: number;
  /** `DeclType.MinSerializedSize`: the smallest JSON form, in bytes. */
  minSize: number;
  elem?: SizedType;
  key?: SizedType;
  fields?: Map<string, SizedType>;
}

type Raw = Record<string, unknown>;
const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.trunc(v)) : undefined);

const SIMPLE = (kind: SizedType['kind'], minSize: number, maxElements = 0): SizedType => ({ kind, maxElements, minSize });
const MAP_KEY = SIMPLE('string', 2);

/** `estimateMaxStringLengthPerRequest`. */
function maxStringLength(s: Raw): number {
  if (s['x-kubernetes-int-or-string'] === true) return MAX_REQUEST_SIZE_BYTES - 2;
  switch (s.format) {
    case 'duration': return 32;
    case 'date': return 12;
    case 'date-time': return 32;
    default: return MAX_REQUEST_SIZE_BYTES - 2;
  }
}

/** `estimateMaxArrayItemsFromMinSize`. */
const maxItemsFromMinSize = (minSize: number): number => Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minSize + 1));
/** `estimateMaxAdditionalPropertiesFromMinSize`. */
const maxPropertiesFromMinSize = (minSize: number): number => Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minSize + 6));

const declCache = new WeakMap<object, [SizedType | undefined, SizedType | undefined]>();

/**
 * kube's `SchemaDeclType` with sizes, for a raw structural schema node; undefined where kube does
 * not expose the node to CEL (arrays without items, unknown types). `resourceRoot` adds
 * `apiVersion`, `kind` and `metadata.name`/`generateName` (custom resource and embedded roots).
 * Cached per schema object.
 */
export function sizedTypeOf(schema: unknown, resourceRoot = false): SizedType | undefined {
  if (!isObj(schema)) return undefined;
  let entry = declCache.get(schema);
  if (!entry) { entry = [undefined, undefined]; declCache.set(schema, entry); }
  const slot = resourceRoot ? 1 : 0;
  if (entry[slot] === undefined) entry[slot] = computeSizedType(schema, resourceRoot) ?? SIMPLE('dyn', 0, -1);
  const t = entry[slot]!;
  return t.maxElements < 0 ? undefined : t;
}

function computeSizedType(s: Raw, resourceRoot: boolean): SizedType | undefined {
  if (s['x-kubernetes-int-or-string'] === true) {
    const ml = num(s.maxLength);
    return SIMPLE('dyn', 1, ml !== undefined ? ml * 4 : maxStringLength(s));
  }
  const embedded = (n: unknown): boolean => isObj(n) && n['x-kubernetes-embedded-resource'] === true;
  switch (s.type) {
    case 'array': {
      const items = sizedTypeOf(s.items, embedded(s.items));
      if (!items) return undefined;
      const mi = num(s.maxItems);
      return { kind: 'list', maxElements: mi ?? maxItemsFromMinSize(items.minSize), minSize: 2, elem: items };
    }
    case 'object': {
      if (isObj(s.additionalProperties)) {
        const values = sizedTypeOf(s.additionalProperties, embedded(s.additionalProperties));
        if (!values) return undefined;
        const mp = num(s.maxProperties);
        return { kind: 'map', maxElements: mp ?? maxPropertiesFromMinSize(values.minSize), minSize: 2, key: MAP_KEY, elem: values };
      }
      const fields = new Map<string, SizedType>();
      const required = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
      let minSize = 2;
      const props = isObj(s.properties) ? s.properties : {};
      for (const [name, prop] of Object.entries(props)) {
        const t = sizedTypeOf(prop, embedded(prop));
        if (!t) continue;
        fields.set(name, t);
        if (required.has(name) && isObj(prop) && prop.default === undefined) minSize += name.length + t.minSize + 4;
      }
      if (resourceRoot) {
        const str = SIMPLE('string', 2, MAX_REQUEST_SIZE_BYTES - 2);
        if (!fields.has('apiVersion')) fields.set('apiVersion', str);
        if (!fields.has('kind')) fields.set('kind', str);
        const meta = fields.get('metadata');
        const mf = new Map(meta?.fields ?? []);
        if (!mf.has('name')) mf.set('name', str);
        if (!mf.has('generateName')) mf.set('generateName', str);
        fields.set('metadata', { kind: 'object', maxElements: 0, minSize: meta?.minSize ?? 2, fields: mf });
      }
      return { kind: 'object', maxElements: 0, minSize, fields };
    }
    case 'string': {
      const ml = num(s.maxLength);
      switch (s.format) {
        case 'byte': return SIMPLE('bytes', 2, ml ?? maxStringLength(s));
        case 'duration': return SIMPLE('duration', 3, maxStringLength(s));
        case 'date': return SIMPLE('timestamp', 12, maxStringLength(s));
        case 'date-time': return SIMPLE('timestamp', 21, maxStringLength(s));
        default: break;
      }
      let max: number;
      if (ml !== undefined) max = ml * 4;
      else if (Array.isArray(s.enum) && s.enum.length) max = Math.max(0, ...s.enum.map((e) => (typeof e === 'string' ? e.length : 0)));
      else max = maxStringLength(s);
      return SIMPLE('string', 2, max);
    }
    case 'boolean': return SIMPLE('bool', 4);
    case 'number': return SIMPLE('double', 1);
    case 'integer': return SIMPLE('int', 1);
    default: return undefined;
  }
}

/**
 * `MaxCardinality(minSize)`: how often data of a given smallest JSON size can occur in one request
 * (assuming one comma between elements); the cardinality of a rule under unbounded lists or maps.
 */
export function maxCardinality(minSize: number): number {
  return Math.floor(MAX_REQUEST_SIZE_BYTES / (minSize + 1));
}

/**
 * `extractMaxElements`: the factor by which a schema multiplies how often its children occur —
 * `maxItems` of arrays, `maxProperties` of maps, 1 for objects and scalars; undefined when unbounded.
 */
export function childCardinalityFactor(s: unknown): number | undefined {
  if (!isObj(s)) return 1;
  if (s.type === 'object') return s.additionalProperties !== undefined && s.additionalProperties !== null && s.additionalProperties !== false ? num(s.maxProperties) : 1;
  if (s.type === 'array') return num(s.maxItems);
  return 1;
}

// ---------------------------------------------------------------------------------------------
// Static estimation over cel-js's AST (cel-go checker/cost.go)
// ---------------------------------------------------------------------------------------------

interface Range { min: number; max: number }
interface Est {
  cost: Range;
  /** Size when computed from the expression (literals, concatenation, function results). */
  size?: Range;
  type?: SizedType;
  /** Known to be a fixed-size value (numbers, booleans, durations, timestamps, types). */
  scalar?: boolean;
}
interface Node { op: string; args: unknown }

const fixed = (n: number): Range => ({ min: n, max: n });
const addR = (a: Range, b: Range): Range => ({ min: addSat(a.min, b.min), max: addSat(a.max, b.max) });
const mulR = (a: Range, b: Range): Range => ({ min: mulSat(a.min, b.min), max: mulSat(a.max, b.max) });
const unionR = (a: Range, b: Range): Range => ({ min: Math.min(a.min, b.min), max: Math.max(a.max, b.max) });
const factorR = (a: Range, f: number): Range => ({ min: byFactor(a.min, f), max: byFactor(a.max, f) });
const UNKNOWN: Range = { min: 0, max: U64_MAX };

/** Functions whose result is a fixed-size value (cel-go: scalar result types have size 1). */
const SCALAR_RESULTS = new Set(['size', 'int', 'uint', 'double', 'bool', 'duration', 'timestamp', 'type', 'contains', 'startsWith', 'endsWith',
  'matches', 'isSorted', 'indexOf', 'lastIndexOf', 'isURL', 'isIP', 'isCIDR', 'isQuantity', 'isSemver', 'compareTo', 'isGreaterThan', 'isLessThan',
  'asInteger', 'asApproximateFloat', 'sign', 'isInteger', 'hasValue', 'has', 'getHours', 'getMinutes', 'getSeconds', 'getMilliseconds',
  'getFullYear', 'getMonth', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'family', 'isUnspecified', 'isLoopback',
  'isLinkLocalMulticast', 'isLinkLocalUnicast', 'isGlobalUnicast', 'prefixLength', 'containsIP', 'containsCIDR', 'isCanonical',
  'major', 'minor', 'patch', 'allowed', 'errored', 'exists', 'all', 'exists_one']);
/** String functions that traverse their receiver once and return a string no longer than it (kube library cost.go). */
const STRING_TRAVERSALS = new Set(['lowerAscii', 'upperAscii', 'trim', 'substring', 'charAt', 'reverse', 'format', 'quote']);
/** Parsers and checks that traverse their (single) string argument once. */
const PARSERS = new Set(['url', 'isURL', 'ip', 'isIP', 'cidr', 'isCIDR', 'quantity', 'isQuantity', 'semver', 'isSemver', 'string', 'bytes', 'escapeKey']);
const BINARY = new Set(['&&', '||', '+', '-', '*', '/', '%', '==', '!=', '<', '<=', '>', '>=', 'in']);
const TYPE_NAMES = new Set(['int', 'uint', 'double', 'bool', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn']);

class Coster {
  private readonly scopes = new Map<string, Est[]>();

  constructor(vars: ReadonlyMap<string, SizedType | undefined>) {
    for (const [k, t] of vars) this.scopes.set(k, [{ cost: fixed(0), type: t }]);
  }

  /** `sizeOrUnknown`: computed size, else the declared type's, else 1 for scalars, else unknown. */
  size(e: Est): Range {
    if (e.size) return e.size;
    if (e.type) {
      if (e.type.kind === 'dyn' && e.type.maxElements === 0) return UNKNOWN;
      return { min: 0, max: e.type.maxElements };
    }
    return e.scalar ? fixed(1) : UNKNOWN;
  }

  private push(name: string, e: Est): void { let s = this.scopes.get(name); if (!s) { s = []; this.scopes.set(name, s); } s.push(e); }
  private pop(name: string): void { this.scopes.get(name)?.pop(); }

  est(n: unknown): Est {
    if (!isObj(n) || typeof n.op !== 'string') return { cost: fixed(0) };
    const node = n as unknown as Node;
    const a = node.args;
    if (BINARY.has(node.op)) {
      // Left-deep chains (`a && b && c …`, `s + s + s …`) are folded iteratively: cel-js does
      // not balance them, and a tenant's chain of thousands must not exhaust the stack.
      const spine: Node[] = [];
      let cur: Node = node;
      while (BINARY.has(cur.op) && Array.isArray(cur.args) && cur.args.length === 2) {
        spine.push(cur);
        const left = cur.args[0] as unknown;
        if (!isObj(left) || left.op !== cur.op) { cur = left as Node; break; }
        cur = left as unknown as Node;
      }
      let acc = this.est(cur);
      for (let i = spine.length - 1; i >= 0; i--) acc = this.binary(spine[i]!.op, acc, this.est((spine[i]!.args as unknown[])[1]));
      return acc;
    }
    switch (node.op) {
      case 'value': {
        if (typeof a === 'string') return { cost: fixed(0), size: fixed([...a].length), type: SIMPLE('string', 2, 0) };
        if (a instanceof Uint8Array) return { cost: fixed(0), size: fixed(a.length), type: SIMPLE('bytes', 2, 0) };
        return { cost: fixed(0), size: fixed(1), scalar: true };
      }
      case 'id': {
        const name = String(a);
        const v = this.scopes.get(name)?.at(-1);
        if (v) return { cost: fixed(1), size: v.size, type: v.type, scalar: v.scalar };
        return { cost: fixed(1), scalar: TYPE_NAMES.has(name) };
      }
      case '.': case '.?': {
        const [obj, field] = a as [unknown, string];
        const o = this.est(obj);
        return { cost: addR(o.cost, fixed(1)), type: this.member(o.type, String(field)) };
      }
      case '[]': case '[?]': {
        const [obj, idx] = a as [unknown, unknown];
        const o = this.est(obj); const i = this.est(idx);
        const t = o.type?.kind === 'list' || o.type?.kind === 'map' ? o.type.elem : o.type?.kind === 'object' && isObj(idx) && (idx as Raw).op === 'value' ? this.member(o.type, String((idx as Raw).args)) : undefined;
        return { cost: addR(addR(o.cost, i.cost), fixed(1)), type: t };
      }
      case 'list': {
        const items = (a as unknown[]).map((x) => this.est(x));
        let cost = fixed(10);
        for (const it of items) cost = addR(cost, it.cost);
        const elem = items[0]?.type;
        return { cost, size: fixed(items.length), type: { kind: 'list', maxElements: items.length, minSize: 2, elem } };
      }
      case 'map': {
        let cost = fixed(30);
        const entries = a as [unknown, unknown][];
        let elem: SizedType | undefined;
        for (const [k, v] of entries) { cost = addR(cost, this.est(k).cost); const ve = this.est(v); cost = addR(cost, ve.cost); elem ??= ve.type; }
        return { cost, size: fixed(entries.length), type: { kind: 'map', maxElements: entries.length, minSize: 2, key: MAP_KEY, elem } };
      }
      case '?:': {
        const [c, t, f] = (a as unknown[]).map((x) => this.est(x)) as [Est, Est, Est];
        const size = unionR(this.size(t), this.size(f));
        return { cost: addR(c.cost, unionR(t.cost, f.cost)), size, type: t.type ?? f.type, scalar: t.scalar && f.scalar };
      }
      case '!_': case '-_': {
        const x = this.est(a);
        return { cost: addR(x.cost, fixed(1)), scalar: true };
      }
      case 'call': case 'rcall': return this.call(node);
      default: return { cost: fixed(1) };
    }
  }

  /** A binary operator's estimate from its operands' (cel-go `functionCost` for the operator overloads). */
  private binary(op: string, l: Est, r: Est): Est {
    const args = addR(l.cost, r.cost);
    switch (op) {
      case '&&': case '||':
        return { cost: { min: l.cost.min, max: addSat(l.cost.max, r.cost.max) }, scalar: true };
      case '+': {
        const kind = l.type?.kind === 'string' || l.type?.kind === 'bytes' || l.type?.kind === 'list' ? l.type.kind : r.type?.kind;
        if (kind === 'string' || kind === 'bytes') {
          const size = addR(this.size(l), this.size(r));
          return { cost: addR(factorR(size, STRING_TRAVERSAL), args), size, type: SIMPLE(kind, 2, size.max) };
        }
        if (kind === 'list') {
          const size = addR(this.size(l), this.size(r));
          return { cost: addR(fixed(1), args), size, type: { kind: 'list', maxElements: size.max, minSize: 2, elem: l.type?.elem ?? r.type?.elem } };
        }
        return { cost: addR(fixed(1), args), scalar: true };
      }
      case '==': case '!=': case '<': case '<=': case '>': case '>=': {
        const sized = op === '==' || op === '!=' || [l, r].some((e) => e.type?.kind === 'string' || e.type?.kind === 'bytes');
        if (!sized) return { cost: addR(fixed(1), args), scalar: true };
        const smallestMax = Math.min(this.size(l).max, this.size(r).max);
        return { cost: addR(factorR({ min: smallestMax > 0 ? 1 : 0, max: smallestMax }, STRING_TRAVERSAL), args), scalar: true };
      }
      case 'in':
        if (r.type?.kind === 'map') return { cost: addR(fixed(1), args), scalar: true };
        return { cost: addR(this.size(r), args), scalar: true };
      default: // - * / %
        return { cost: addR(fixed(1), args), scalar: true };
    }
  }

  private member(t: SizedType | undefined, field: string): SizedType | undefined {
    if (!t) return undefined;
    if (t.kind === 'object') return t.fields?.get(field) ?? t.fields?.get(unescape(field));
    if (t.kind === 'map') return t.elem;
    return undefined;
  }

  private call(node: Node): Est {
    const parts = node.args as unknown[];
    const name = String(parts[0]);
    const receiver = node.op === 'rcall' ? parts[1] : undefined;
    const argNodes = ((node.op === 'rcall' ? parts[2] : parts[1]) ?? []) as unknown[];
    if (receiver !== undefined) {
      const macro = this.macro(name, receiver, argNodes);
      if (macro) return macro;
    }
    if (name === 'has' && receiver === undefined && argNodes.length === 1) {
      const sel = argNodes[0];
      const operand = isObj(sel) && Array.isArray(sel.args) ? this.est(sel.args[0]) : this.est(sel);
      return { cost: addR(operand.cost, fixed(1)), scalar: true };
    }
    const recv = receiver !== undefined ? this.est(receiver) : undefined;
    const args = argNodes.map((x) => this.est(x));
    let argCost = recv ? recv.cost : fixed(0);
    for (const x of args) argCost = addR(argCost, x.cost);
    const target = recv ?? args[0];
    const other = recv ? args[0] : args[1];
    const scalar = SCALAR_RESULTS.has(name);
    const traversal = (e: Est | undefined): Range => (e ? factorR(this.size(e), STRING_TRAVERSAL) : fixed(1));
    const done = (cost: Range, extra: Partial<Est> = {}): Est => ({ cost: addR(cost, argCost), scalar, ...extra });
    const isString = (e: Est | undefined): boolean => e?.type?.kind === 'string' || e?.type?.kind === 'bytes';
    switch (name) {
      case 'dyn': return { cost: addR(fixed(1), argCost), size: args[0] ? this.size(args[0]) : undefined, type: args[0]?.type };
      case 'contains':
        if (target && other && (isString(target) || !target.type)) return done(mulR(traversal(target), traversal(other)));
        break;
      case 'startsWith': case 'endsWith': return done(traversal(other));
      case 'matches': case 'find': case 'findAll': {
        if (!target || !other) break;
        const strCost = factorR(addR(this.size(target), fixed(1)), STRING_TRAVERSAL);
        const cost = mulR(strCost, factorR(this.size(other), REGEX_STRING_LENGTH));
        if (name === 'matches') return done(cost);
        const sz = this.size(target);
        if (name === 'find') return done(cost, { size: sz, type: SIMPLE('string', 2, sz.max) });
        return done(cost, { size: sz, type: { kind: 'list', maxElements: sz.max, minSize: 2, elem: SIMPLE('string', 2, sz.max) } });
      }
      case 'split': {
        const sz = target ? this.size(target) : UNKNOWN;
        return done(traversal(target), { size: sz, type: { kind: 'list', maxElements: sz.max, minSize: 2, elem: SIMPLE('string', 2, sz.max) } });
      }
      case 'join': {
        const list = target?.type?.kind === 'list' ? target : undefined;
        const total = list ? mulR(this.size(list), { min: 0, max: list.type?.elem?.maxElements ?? U64_MAX }) : UNKNOWN;
        return done(factorR(total, STRING_TRAVERSAL), { size: total, type: SIMPLE('string', 2, total.max) });
      }
      case 'replace': {
        const sz = target ? this.size(target) : UNKNOWN;
        const repl = args[1] ? this.size(args[1]) : fixed(1);
        const out = mulR(addR(sz, fixed(1)), { min: 1, max: Math.max(1, repl.max) });
        return done(traversal(target), { size: out, type: SIMPLE('string', 2, out.max) });
      }
      case 'indexOf': case 'lastIndexOf': case 'isSorted': case 'sum': case 'min': case 'max': {
        if (target?.type?.kind === 'list') {
          return done(this.size(target), name === 'min' || name === 'max' ? { type: target.type.elem, scalar: !target.type.elem || target.type.elem.maxElements === 0 } : {});
        }
        return done(traversal(target));
      }
      default: break;
    }
    if (STRING_TRAVERSALS.has(name) && target) {
      const sz = this.size(target);
      return done(traversal(target), { size: sz, type: SIMPLE('string', 2, sz.max) });
    }
    if (PARSERS.has(name) && (other ?? target)) {
      const input = recv && args.length === 0 ? recv : args[0]!;
      const sz = this.size(input);
      return done(factorR(sz, STRING_TRAVERSAL), name === 'string' || name === 'bytes' ? { size: sz, type: SIMPLE(name, 2, sz.max) } : {});
    }
    return done(fixed(1));
  }

  /** Comprehension macros as cel-go expands them: range × (loop condition + step) + result. */
  private macro(name: string, receiver: unknown, argNodes: unknown[]): Est | undefined {
    if (name === 'bind' && isObj(receiver) && receiver.op === 'id' && receiver.args === 'cel' && argNodes.length === 3) {
      const v = argNodes[0] as Raw;
      const init = this.est(argNodes[1]);
      this.push(String(v.args), { cost: fixed(0), size: init.size, type: init.type, scalar: init.scalar });
      const body = this.est(argNodes[2]);
      this.pop(String(v.args));
      return { cost: addR(init.cost, body.cost), size: body.size, type: body.type, scalar: body.scalar };
    }
    const perIteration: Record<string, number> = { all: 3, exists: 4, exists_one: 2, map: 12, filter: 13 };
    if (!(name in perIteration) || argNodes.length < 2 || argNodes.length > 3) return undefined;
    const iterVar = argNodes[0] as Raw;
    if (!isObj(iterVar) || iterVar.op !== 'id') return undefined;
    const range = this.est(receiver);
    const n = this.size(range);
    const rt = range.type;
    const elem: Est = rt?.kind === 'map' ? { cost: fixed(0), type: rt.key } : rt?.kind === 'list' && rt.elem ? { cost: fixed(0), type: rt.elem } : { cost: fixed(0) };
    this.push(String(iterVar.args), elem);
    let body = fixed(perIteration[name]!);
    let produced: Est | undefined;
    for (const x of argNodes.slice(1)) { const e = this.est(x); body = addR(body, e.cost); produced = e; }
    this.pop(String(iterVar.args));
    const accuInit = name === 'map' || name === 'filter' ? 10 : 0;
    const cost = addR(addR(range.cost, fixed(accuInit + 1)), mulR(n, body));
    if (name === 'map') return { cost, size: n, type: { kind: 'list', maxElements: n.max, minSize: 2, elem: produced?.type } };
    if (name === 'filter') return { cost, size: n, type: { kind: 'list', maxElements: n.max, minSize: 2, elem: elem.type } };
    return { cost, scalar: true };
  }
}

/** A field name as the schema spells it, from its `cel.Escape`d form. */
function unescape(name: string): string {
  if (/^__.*__$/.test(name) && !name.slice(2, -2).includes('__')) return name.slice(2, -2);
  return name.replace(/__(underscores|dot|dash|slash)__/g, (_, w: string) => ({ underscores: '__', dot: '.', dash: '-', slash: '/' })[w]!);
}

/**
 * The estimated cost range of a parsed expression (cel-js AST) in cel-go's cost units, given the
 * sized types of its variables (undefined: unknown size). Never throws; nodes it does not know
 * cost 1.
 */
export function estimateCost(ast: unknown, vars: ReadonlyMap<string, SizedType | undefined>): { min: number; max: number } {
  return new Coster(vars).est(ast).cost;
}

// ---------------------------------------------------------------------------------------------
// Runtime metering (cel-go interpreter/runtimecost.go)
// ---------------------------------------------------------------------------------------------

/** An evaluation stopped at its cost limit (cel-go's "operation cancelled: actual cost limit exceeded"). */
export class CelCostLimitError extends Error {
  constructor() { super(COST_LIMIT_EXCEEDED); this.name = 'CelCostLimitError'; }
}

/** A budget of several evaluations is spent (kube: "validation failed due to running out of cost budget…"). */
export class CelBudgetExhaustedError extends Error {
  constructor() { super(OUT_OF_BUDGET); this.name = 'CelBudgetExhaustedError'; }
}

interface Meter { cost: number; limit: number; error: CelCostLimitError | undefined }

/** The evaluation being metered; evaluation is synchronous, so one at a time. */
let meter: Meter | undefined;
/** Nesting depth of metered node evaluations. */
let depth = 0;
/**
 * The results of the last two operand nodes completed at each depth: after a binary operator or
 * a call at depth d returns, its operands' values are in `last[d + 1]` and `previous[d + 1]`
 * (cel-js evaluates a call's receiver and arguments from the last to the first, so the receiver
 * or first argument is `last`). Cleared after each metered evaluation.
 */
const last: unknown[] = [];
const previous: unknown[] = [];

/** Per-iteration cost of a macro's comprehension step (cel-go: loop condition and accumulator). */
const PER_ITERATION: Record<string, number> = { all: 3, exists: 4, exists_one: 2, map: 12, filter: 13 };

// Each AST node carries its cost code (`celCost`), computed the first time it runs:
// bit 0: the node is an operand whose value a size-dependent parent reads; bits 1-7: the kind;
// bits 8+: the fixed cost (kind 0) or the function (kind K_CALL). -1: an operand not yet classified.
const K_FIXED = 0; const K_CONCAT = 1; const K_EQUALS = 2; const K_ORDER = 3; const K_IN = 4; const K_CALL = 5; const K_JOIN = 6;
const code = (kind: number, arg = 0): number => (arg << 8) | (kind << 1);

// Calls whose cost depends on their operands' sizes (cel-go checker/cost.go, runtimecost.go; kube library cost.go).
const F_CONTAINS = 1; const F_PREFIX = 2; const F_REGEX = 3; const F_LIST = 4; const F_TRAVERSAL = 5;
const FUNCTION_COSTS = new Map<string, number>([
  ['contains', F_CONTAINS], ['startsWith', F_PREFIX], ['endsWith', F_PREFIX], ['matches', F_REGEX], ['find', F_REGEX], ['findAll', F_REGEX],
  ['isSorted', F_LIST], ['sum', F_LIST], ['min', F_LIST], ['max', F_LIST],
  ['split', F_TRAVERSAL], ['replace', F_TRAVERSAL], ['indexOf', F_TRAVERSAL], ['lastIndexOf', F_TRAVERSAL],
  ...[...STRING_TRAVERSALS, ...PARSERS].map((n) => [n, F_TRAVERSAL] as [string, number]),
]);

interface CostedNode {
  op: string;
  args: unknown;
  meta: { alternate?: CostedNode };
  celCost?: number;
  evaluate(ev: unknown, ast: unknown, ctx: unknown): unknown;
}

function markOperand(n: unknown): void {
  if (!isObj(n)) return;
  const node = n as unknown as CostedNode;
  const c = node.celCost;
  node.celCost = c === undefined || c < 0 ? -1 : c | 1;
}

/** Computes and stores a node's cost code (see above). */
function classify(ast: CostedNode): number {
  const a = ast.args;
  let c: number;
  switch (ast.op) {
    case 'value': case '&&': case '||': case '?:': case 'accuValue': case 'accuInc': case 'accuPush': c = code(K_FIXED, 0); break;
    case 'list': c = code(K_FIXED, 10); break;
    case 'map': c = code(K_FIXED, 30); break;
    case '+': c = code(K_CONCAT); break;
    case '==': case '!=': c = code(K_EQUALS); markOperand((a as unknown[])[0]); markOperand((a as unknown[])[1]); break;
    case '<': case '<=': case '>': case '>=': c = code(K_ORDER); markOperand((a as unknown[])[0]); markOperand((a as unknown[])[1]); break;
    case 'in': c = code(K_IN); markOperand((a as unknown[])[1]); break;
    case 'call': case 'rcall': {
      const parts = a as unknown[];
      const name = String(parts[0]);
      const alt = ast.meta.alternate;
      if (alt !== undefined && alt.op === 'comprehension') {
        // A macro: its comprehension runs the step once per element.
        const step = (alt.args as { step?: CostedNode }).step;
        if (step) step.celCost = code(K_FIXED, PER_ITERATION[name] ?? 3);
        c = code(K_FIXED, 1);
        break;
      }
      const f = name === 'join' ? -1 : FUNCTION_COSTS.get(name);
      if (f === undefined) { c = code(K_FIXED, 1); break; }
      if (f === -1) { c = code(K_JOIN); break; }
      c = code(K_CALL, f);
      for (const x of ast.op === 'rcall' ? [parts[1], ...(parts[2] as unknown[])] : (parts[1] as unknown[])) markOperand(x);
      break;
    }
    default: c = code(K_FIXED, 1);
  }
  if (ast.celCost === -1) c |= 1;
  ast.celCost = c;
  return c;
}

/** cel-go's `actualSize`: characters, bytes, items or entries; 1 for other values. */
function sizeOf(v: unknown): number {
  if (typeof v === 'string' || Array.isArray(v) || v instanceof Uint8Array) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (v !== null && typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto === null || proto === Object.prototype) return Object.keys(v).length;
  }
  return 1;
}

const isText = (v: unknown): boolean => typeof v === 'string' || v instanceof Uint8Array;
const traverse = (n: number): number => Math.ceil(n * STRING_TRAVERSAL);

/** The cost of a size-dependent node that returned `result`; its operands' values are at depth `d`. */
function sizedCost(kind: number, fn: number, result: unknown, d: number): number {
  switch (kind) {
    case K_CONCAT: return isText(result) ? traverse((result as string).length) : 1;
    case K_EQUALS: return traverse(Math.min(sizeOf(previous[d]), sizeOf(last[d])));
    case K_ORDER: return isText(previous[d]) || isText(last[d]) ? traverse(Math.min(sizeOf(previous[d]), sizeOf(last[d]))) : 1;
    case K_IN: { const r = last[d]; return Array.isArray(r) ? r.length : 1; }
    case K_JOIN: return traverse(sizeOf(result)) + 1;
    default: {
      const target = last[d]; const other = previous[d];
      switch (fn) {
        case F_CONTAINS: return traverse(sizeOf(target)) * traverse(sizeOf(other));
        case F_PREFIX: return traverse(sizeOf(other));
        case F_REGEX: return traverse(sizeOf(target) + 1) * Math.ceil(sizeOf(other) * REGEX_STRING_LENGTH);
        case F_LIST: return sizeOf(target);
        default: return Array.isArray(target) ? target.length : traverse(sizeOf(target));
      }
    }
  }
}

let installed = false;

/**
 * Installs the cost hook into cel-js's evaluator (once per process): every node an evaluation
 * runs (all but the root) passes through `Evaluator.run`, which charges the node's cost to the
 * active meter and stops the evaluation when the meter's limit is passed. Without an active
 * meter the hook only forwards.
 * @throws {Error} when cel-js's evaluator cannot be found (an incompatible cel-js version)
 */
export function installEvaluationMeter(): void {
  if (installed) return;
  installed = true;
  // cel-js does not export its evaluator; a registered function is called with it as `this`.
  let proto: { run: (ast: CostedNode, ctx: unknown) => unknown } | undefined;
  const probe = new Environment({ unlistedVariablesAreDyn: true });
  probe.registerFunction('celCostProbe(): bool', function (this: object) { proto = Object.getPrototypeOf(this) as typeof proto; return true; });
  probe.evaluate('celCostProbe()');
  if (!proto || typeof proto.run !== 'function') throw new Error('cel-js evaluator hook not found');
  proto.run = function run(this: unknown, ast: CostedNode, ctx: unknown): unknown {
    const m = meter;
    if (m === undefined) return ast.evaluate(this, ast, ctx);
    let c = ast.celCost;
    if (c === undefined || c < 0) c = classify(ast);
    const d = depth;
    depth = d + 1;
    let result: unknown;
    try {
      result = ast.evaluate(this, ast, ctx);
    } finally {
      depth = d;
    }
    const kind = (c >> 1) & 127;
    m.cost += kind === K_FIXED ? c >> 8 : sizedCost(kind, c >> 8, result, d + 1);
    if ((c & 1) === 1) { previous[d] = last[d]; last[d] = result; }
    if (m.cost > m.limit) throw (m.error ??= new CelCostLimitError());
    return result;
  };
}

/**
 * Evaluates a compiled expression with a cost limit; returns its result and the cost it used.
 * @throws {CelCostLimitError} when the evaluation passes `limit` (even if cel-js's comprehension
 *   error handling swallowed the stop, e.g. `exists` finding a match after it)
 * @throws whatever the expression throws otherwise
 */
export function evaluateMetered(program: ParseResult, ctx: Record<string, unknown>, limit = PER_CALL_LIMIT): { value: unknown; cost: number } {
  installEvaluationMeter();
  const outer = meter;
  const m: Meter = { cost: 0, limit, error: undefined };
  meter = m;
  const savedDepth = depth;
  try {
    const value: unknown = program(ctx);
    if (m.error) throw m.error;
    return { value, cost: m.cost };
  } catch (err) {
    if (m.error) throw m.error;
    throw err;
  } finally {
    meter = outer;
    depth = savedDepth;
    if (outer) outer.cost += m.cost;
    else { last.length = 0; previous.length = 0; }
  }
}

/**
 * A runtime budget shared by several evaluations (kube: one per custom resource for its CRD
 * rules, one per admission policy evaluation). Each evaluation is limited to {@link PER_CALL_LIMIT};
 * what it used is then taken from the budget, and an evaluation that used more than was left
 * spends it (kube's check after `ContextEval`).
 */
export class CostBudget {
  constructor(public remaining = RUNTIME_CEL_COST_BUDGET) {}

  /**
   * Evaluates `program` against the budget.
   * @throws {CelBudgetExhaustedError} when the budget is spent (before or by this evaluation)
   * @throws {CelCostLimitError} when the evaluation passes the per-call limit (the budget is then
   *   spent too: kube runs no further rules)
   */
  evaluate(program: ParseResult, ctx: Record<string, unknown>): unknown {
    if (this.remaining < 0) throw new CelBudgetExhaustedError();
    let result: { value: unknown; cost: number };
    try {
      result = evaluateMetered(program, ctx, PER_CALL_LIMIT);
    } catch (err) {
      if (err instanceof CelCostLimitError) this.remaining = -1;
      throw err;
    }
    if (result.cost > this.remaining) { this.remaining = -1; throw new CelBudgetExhaustedError(); }
    this.remaining -= result.cost;
    return result.value;
  }
}
