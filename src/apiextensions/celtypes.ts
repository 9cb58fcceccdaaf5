/**
 * Static types of CEL expressions over OpenAPI schemas, for the checks kube's cel-go checker makes
 * when it compiles with declared types: CRD validation rules (`self`/`oldSelf` typed by the
 * schema node, k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go) and
 * admission policy type checking (src/admission/typecheck.ts).
 *
 * The CEL library (@marcbachmann/cel-js) is dynamically typed, so this is a small static
 * inference over its parsed AST covering what cel-go's checker reports most often: member
 * selection through the schema (`undefined field 'x'`), literals, relational and arithmetic
 * operators with cel-go's standard overloads (`found no matching overload for '_>_' applied to
 * '(int, string)'`), `has()` and `size()`. Everything else is `dyn`, which never produces an
 * issue: a false error is worse than a missed one.
 */
import { BUILTIN_SCHEMAS, V3_REF_PREFIX } from '../apis/schemas/index.js';
import { OBJECT_META } from '../apis/schemas/helpers.js';
import { escapePropertyName } from './cel.js';
import { isObj } from '../apimachinery/objects.js';

type Raw = Record<string, unknown>;
type Prim = 'int' | 'uint' | 'double' | 'string' | 'bool' | 'bytes' | 'null_type';

/** A static CEL type: what the checker knows of a value. */
export type CelType =
  | { k: 'dyn' }
  | { k: 'prim'; n: Prim }
  | { k: 'list'; e: CelType }
  | { k: 'map'; v: CelType }
  /** An object type of the schema: its (escaped) field names and their schemas. */
  | { k: 'object'; fields: Map<string, Raw> };

const DYN: CelType = { k: 'dyn' };
const prim = (n: Prim): CelType => ({ k: 'prim', n });


/**
 * Follows `$ref` and a single-member `allOf: [{$ref}]` (kube's OpenAPI form of a described
 * reference) to the built-in definitions; undefined when unresolvable.
 */
function deref(s: Raw, depth = 0): Raw | undefined {
  if (depth > 8) return undefined;
  let ref = typeof s.$ref === 'string' ? s.$ref : undefined;
  if (!ref && Array.isArray(s.allOf) && s.allOf.length === 1 && isObj(s.allOf[0]) && typeof s.allOf[0].$ref === 'string') ref = s.allOf[0].$ref;
  if (!ref) return s;
  if (!ref.startsWith(V3_REF_PREFIX)) return undefined;
  const target = (BUILTIN_SCHEMAS as Record<string, unknown>)[ref.slice(V3_REF_PREFIX.length)];
  return isObj(target) ? deref(target, depth + 1) : undefined;
}

/**
 * The CEL type of an OpenAPI schema node, as kube's `SchemaDeclType`
 * (k8s.io/apiserver/pkg/cel/common/schemas.go): integer → int, number → double, boolean → bool,
 * string → string (format `byte` → bytes), array → list, object with an `additionalProperties`
 * schema → map(string, V), object with properties → an object type of its escaped property names
 * (`cel.Escape`). What this checker does not model is `dyn`: int-or-string (kube's IntOrStringType
 * is dyn-like), preserve-unknown-fields, embedded resources, nullable values, timestamps and
 * durations (`date`, `date-time`, `duration` formats), `oneOf`/`anyOf`, untyped nodes.
 * `resourceRoot` adds `apiVersion`, `kind` and `metadata` (ObjectMeta), as kube's published
 * OpenAPI of a resource has them (the schema resolver's source for policies).
 */
export function schemaType(schema: unknown, resourceRoot = false): CelType {
  const s = isObj(schema) ? deref(schema) : undefined;
  if (!s) return DYN;
  if (s['x-kubernetes-int-or-string'] === true || s['x-kubernetes-preserve-unknown-fields'] === true
    || s['x-kubernetes-embedded-resource'] === true || s.nullable === true || s.oneOf || s.anyOf || s.not) return DYN;
  switch (s.type) {
    case 'integer': return prim('int');
    case 'number': return prim('double');
    case 'boolean': return prim('bool');
    case 'string':
      if (!s.format) return prim('string');
      return s.format === 'byte' ? prim('bytes') : ['date', 'date-time', 'duration'].includes(String(s.format)) ? DYN : prim('string');
    case 'array': return { k: 'list', e: schemaType(s.items) };
    case 'object': {
      if (isObj(s.additionalProperties)) return { k: 'map', v: schemaType(s.additionalProperties) };
      if (!isObj(s.properties) && !resourceRoot) return DYN;
      const fields = new Map<string, Raw>();
      for (const [name, sub] of Object.entries(isObj(s.properties) ? s.properties : {})) {
        const cel = escapePropertyName(name);
        if (cel !== undefined) fields.set(cel, isObj(sub) ? sub : {});
        // A reserved word (`namespace`) also under its own name: never warn where kube may not.
        if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) fields.set(name, isObj(sub) ? sub : {});
      }
      if (resourceRoot) {
        fields.set('apiVersion', { type: 'string' });
        fields.set('kind', { type: 'string' });
        fields.set('metadata', { $ref: V3_REF_PREFIX + OBJECT_META });
      }
      return { k: 'object', fields };
    }
    default: return DYN;
  }
}

/** cel-go's name of a type in its messages (`int`, `string`, `null_type`, …). */
function typeName(t: CelType): string | undefined {
  return t.k === 'prim' ? t.n : undefined;
}

const NUMERIC = new Set<Prim>(['int', 'uint', 'double']);

/**
 * Whether cel-go's standard library (common/stdlib, checker decls) has an overload of a binary
 * operator for two primitive operand types. Relational operators: any one type of int, uint,
 * double, string, bool, bytes, or two numeric types (kube enables
 * `CrossTypeNumericComparisons`, k8s.io/apiserver/pkg/cel/environment/base.go); `_+_`: int, uint,
 * double, string, bytes; `_-_`, `_*_`, `_/_`: int, uint, double; `_%_`: int, uint. Null never
 * has a relational or arithmetic overload.
 */
function binaryOverload(op: string, l: Prim, r: Prim): boolean {
  if (l === 'null_type' || r === 'null_type') return false;
  switch (op) {
    case '<': case '<=': case '>': case '>=':
      return l === r || (NUMERIC.has(l) && NUMERIC.has(r));
    case '+': return l === r && l !== 'bool';
    case '-': case '*': case '/': return l === r && NUMERIC.has(l);
    case '%': return l === r && (l === 'int' || l === 'uint');
    default: return true;
  }
}

const BINARY_ARITH = new Set(['+', '-', '*', '/', '%']);
const RELATIONAL = new Set(['<', '<=', '>', '>=']);
/** Macros binding an iteration (or `cel.bind`) variable: their first argument is a name. */
const BINDING_MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'bind', 'transformList', 'transformMap', 'transformMapEntry', 'sortBy']);

/** One type error: cel-go's message and the offset cel-go reports it at. */
export interface TypeIssue { message: string; offset: number }

interface Node { op: string; pos?: number; args: unknown }

/**
 * Infers the type of an expression's AST, collecting cel-go's errors for what it models. `vars`
 * types the variables (absent ones are dyn).
 */
export function checkAst(ast: unknown, source: string, vars: ReadonlyMap<string, CelType>): TypeIssue[] {
  const issues: TypeIssue[] = [];
  // A macro variable named like a typed variable shadows it somewhere: too subtle, check nothing.
  let shadowed = false;
  const scan = (n: unknown): void => {
    if (Array.isArray(n)) { n.forEach(scan); return; }
    if (!isObj(n) || typeof n.op !== 'string') return;
    const node = n as unknown as Node;
    if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(node.args)) {
      const [name, ...rest] = node.args as unknown[];
      const callArgs = (node.op === 'rcall' ? rest[1] : rest[0]) as unknown[] | undefined;
      const first = Array.isArray(callArgs) ? callArgs[0] as Node | undefined : undefined;
      if (BINDING_MACROS.has(String(name)) && first?.op === 'id' && vars.has(String(first.args))) shadowed = true;
    }
    scan(node.args);
  };
  scan(ast);
  if (shadowed) return [];

  /** cel-go locates an operator at its token: search back from the right operand. */
  const startOf = (n: unknown): number => {
    if (Array.isArray(n)) return Math.min(Infinity, ...n.map(startOf));
    if (!isObj(n) || typeof n.op !== 'string') return Infinity;
    return Math.min(typeof n.pos === 'number' ? n.pos : Infinity, startOf(n.args));
  };
  const operatorOffset = (op: string, right: Node, fallback: number): number => {
    const s = startOf(right);
    let i = (Number.isFinite(s) ? s : fallback) - 1;
    while (i >= 0 && /[\s(]/.test(source[i]!)) i--;
    const start = i - op.length + 1;
    return start >= 0 && source.slice(start, i + 1) === op ? start : fallback;
  };
  /** cel-go locates a selection at its `.` (cel-js at the field name). */
  const dotOffset = (node: Node): number => {
    let i = (node.pos ?? 0) - 1;
    while (i >= 0 && /\s/.test(source[i]!)) i--;
    if (source[i] === '?') i--;
    return source[i] === '.' ? i : node.pos ?? 0;
  };

  const select = (node: Node, operand: CelType, field: string): CelType => {
    if (operand.k === 'map') return operand.v;
    if (operand.k !== 'object') return DYN;
    const sub = operand.fields.get(field);
    if (sub === undefined) {
      issues.push({ message: `undefined field '${field}'`, offset: dotOffset(node) });
      return DYN;
    }
    return schemaType(sub);
  };

  const visit = (n: unknown): CelType => {
    if (!isObj(n) || typeof n.op !== 'string') return DYN;
    const node = n as unknown as Node;
    const args = node.args;
    switch (node.op) {
      case 'value': {
        const v = args;
        if (typeof v === 'bigint') return prim('int');
        if (typeof v === 'number') return prim('double');
        if (typeof v === 'string') return prim('string');
        if (typeof v === 'boolean') return prim('bool');
        if (v === null) return prim('null_type');
        if (v instanceof Uint8Array) return prim('bytes');
        if (isObj(v) && v.constructor?.name === 'UnsignedInt') return prim('uint');
        return DYN;
      }
      case 'id': return vars.get(String(args)) ?? DYN;
      case '.': {
        const [operand, field] = args as [unknown, string];
        return select(node, visit(operand), field);
      }
      case '.?': case '[?]': {
        for (const a of args as unknown[]) visit(a);
        return DYN;
      }
      case '[]': {
        const [operand, index] = args as [unknown, unknown];
        const t = visit(operand);
        visit(index);
        if (t.k === 'list') return t.e;
        if (t.k === 'map') return t.v;
        return DYN;
      }
      case 'call': case 'rcall': {
        const [name, ...rest] = args as [string, ...unknown[]];
        if (node.op === 'call') {
          const callArgs = (rest[0] ?? []) as unknown[];
          if (name === 'has' && callArgs.length === 1) {
            // `has(a.f)`: cel-go checks the selection as any other (undefined field 'f').
            visit(callArgs[0]);
            return prim('bool');
          }
          const types = callArgs.map(visit);
          if (name === 'size' && types.length === 1) return prim('int');
          return DYN;
        }
        const [target, callArgs] = rest as [unknown, unknown[]];
        visit(target);
        for (const a of callArgs ?? []) visit(a);
        return name === 'size' && (callArgs ?? []).length === 0 ? prim('int') : DYN;
      }
      case '!_': visit(args); return prim('bool');
      case '-_': { const t = visit(args); return t.k === 'prim' && (t.n === 'int' || t.n === 'double') ? t : DYN; }
      case '&&': case '||': case '==': case '!=': case 'in':
        for (const a of args as unknown[]) visit(a);
        return prim('bool');
      case '?:': for (const a of args as unknown[]) visit(a); return DYN;
      case 'list': {
        for (const a of args as unknown[]) visit(a);
        return { k: 'list', e: DYN };
      }
      case 'map': {
        for (const entry of args as unknown[][]) for (const a of entry) visit(a);
        return DYN;
      }
      default: {
        if (!(RELATIONAL.has(node.op) || BINARY_ARITH.has(node.op)) || !Array.isArray(args) || args.length !== 2) {
          if (Array.isArray(args)) for (const a of args) visit(a);
          return DYN;
        }
        const [l, r] = args.map(visit) as [CelType, CelType];
        const ln = typeName(l); const rn = typeName(r);
        if (ln && rn && l.k === 'prim' && r.k === 'prim') {
          if (!binaryOverload(node.op, l.n, r.n)) {
            issues.push({ message: `found no matching overload for '_${node.op}_' applied to '(${ln}, ${rn})'`, offset: operatorOffset(node.op, args[1] as Node, node.pos ?? 0) });
            return DYN;
          }
          return RELATIONAL.has(node.op) ? prim('bool') : l;
        }
        return RELATIONAL.has(node.op) ? prim('bool') : DYN;
      }
    }
  };
  visit(ast);
  return issues.sort((a, b) => a.offset - b.offset);
}

/**
 * cel-go's `Issues.String()` (common/errors.go `ToDisplayString`): per error
 * `ERROR: <input>:<line>:<column>: <message>`, the source line and a `.…^` marker under the
 * column.
 */
export function formatIssues(source: string, issues: TypeIssue[]): string {
  return issues.map(({ message, offset }) => {
    const before = source.slice(0, offset);
    const line = before.split('\n').length;
    const lineStart = before.lastIndexOf('\n') + 1;
    const col = [...source.slice(lineStart, offset)].length;
    const text = source.slice(lineStart).split('\n')[0]!;
    return `ERROR: <input>:${line}:${col + 1}: ${message}\n | ${text}\n | ${'.'.repeat(col)}^`;
  }).join('\n');
}
