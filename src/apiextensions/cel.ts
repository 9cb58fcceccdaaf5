/**
 * CEL validation rules of CRD schemas (`x-kubernetes-validations`), evaluated as
 * k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go does (Kubernetes 1.32).
 *
 * - Rules are compiled once (parsed by `@marcbachmann/cel-js` in one shared Environment with the
 *   Kubernetes libraries of ./cel-library.ts); `self` (and `oldSelf`) are `dyn`.
 * - Values are converted with their schema as kube's `UnstructuredToVal` does: `integer` → int
 *   (bigint), `number` → double, `date`/`date-time` strings → timestamps, `duration` → durations,
 *   `byte` → bytes, declared properties only (names escaped per `cel.Escape`: `x-y` →
 *   `x__dash__y`, `namespace` → `__namespace__`), `apiVersion`/`kind`/`metadata.name`/
 *   `metadata.generateName` at resource roots.
 * - A rule that returns false yields its message (`message`, else the trimmed result of
 *   `messageExpression`, else `failed rule: <rule>`); runtime errors yield
 *   `<error> evaluating rule: <rule>`.
 * - Evaluation is metered (./celcost.ts): a rule stops at kube's per-call limit, and all rules of
 *   one object share kube's runtime budget; either ends the object's rule evaluation.
 */
import { Environment, Optional, type ParseResult } from '@marcbachmann/cel-js';
import { Duration } from '@marcbachmann/cel-js/evaluator';
import { registerKubeLibrary, CelLibraryError } from './cel-library.js';
import { parseGoDuration, parseStrfmtDuration } from './schema-formats.js';
import { CelBudgetExhaustedError, CelCostLimitError, evaluateMetered, type CostBudget } from './celcost.js';
import { LRUCache } from 'lru-cache';

/** Entries of the parsed CEL program caches (CRD rules here, admission expressions in admission/match.ts). */
export const CEL_PROGRAM_CACHE_ENTRIES = 10_000;
/** Total source characters of the parsed CEL program caches' entries (8 Mi characters). */
export const CEL_PROGRAM_CACHE_SOURCE_CHARS = 8 * 1024 * 1024;

/** One entry of `x-kubernetes-validations` (apiextensions/v1 ValidationRule). */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/** What value conversion needs to know about a schema node (a structural schema node). */
export interface CelSchemaNode {
  type: string;
  format: string;
  intOrString: boolean;
  nullable: boolean;
  embedded: boolean;
  preserveUnknown: boolean;
  properties: Map<string, CelSchemaNode> | undefined;
  /** `additionalProperties` schema; `null` for the boolean form; undefined when absent. */
  additional: CelSchemaNode | null | undefined;
  items: CelSchemaNode | undefined;
  /** Property name → CEL field name (cel.Escape), computed once; undefined entries are unescapable. */
  celNames?: Map<string, string | undefined>;
}

/** A compiled rule. */
export interface CompiledRule {
  spec: ValidationRule;
  program: ParseResult | undefined;
  /** Parse error text, when the rule does not compile (kube: `rule compile error: …`). */
  compileError: string | undefined;
  usesOldSelf: boolean;
  messageProgram: ParseResult | undefined;
}

/** Outcome of one rule evaluation. */
export type RuleOutcome =
  | { kind: 'pass' }
  | { kind: 'fail'; message: string }
  /** `stop`: the cost limit or budget ran out; kube runs no further rules on the object. */
  | { kind: 'error'; message: string; stop?: boolean };

/** `celconfig.MaxEvaluatedMessageExpressionSizeBytes`. */
const MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024;

let sharedEnv: Environment | undefined;

/** The shared CEL environment: `self`, `oldSelf` and the Kubernetes libraries. */
export function celEnvironment(): Environment {
  if (!sharedEnv) {
    const env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, enableOptionalTypes: true });
    env.registerVariable('self', 'dyn');
    env.registerVariable('oldSelf', 'dyn');
    registerKubeLibrary(env);
    sharedEnv = env;
  }
  return sharedEnv;
}

/** Whether a parsed AST references the identifier `oldSelf`. */
function referencesOldSelf(ast: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (n: unknown): boolean => {
    if (n === null || typeof n !== 'object' || seen.has(n)) return false;
    seen.add(n);
    const node = n as { op?: unknown; args?: unknown };
    if (node.op === 'id' && node.args === 'oldSelf') return true;
    if (Array.isArray(n)) return n.some(visit);
    if ('op' in node) return visit(node.args);
    return false;
  };
  return visit(ast);
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0]!.trim();
}

/**
 * Parsed CEL programs by source text, shared by every schema (tenants' CRDs and
 * APIResourceSchemas): an LRU cache of at most {@link CEL_PROGRAM_CACHE_ENTRIES} programs and
 * {@link CEL_PROGRAM_CACHE_SOURCE_CHARS} characters of source (a program's AST grows with its
 * source, so the second bound holds memory when sources are long). Evicted programs are parsed
 * again on their next use.
 */
const compiledRuleCache = new LRUCache<string, { program?: ParseResult; error?: string; usesOldSelf: boolean }>({
  max: CEL_PROGRAM_CACHE_ENTRIES, maxSize: CEL_PROGRAM_CACHE_SOURCE_CHARS, sizeCalculation: (_v, source) => source.length + 1,
});

function parseCached(source: string): { program?: ParseResult; error?: string; usesOldSelf: boolean } {
  let hit = compiledRuleCache.get(source);
  if (!hit) {
    try {
      const program = celEnvironment().parse(source);
      hit = { program, usesOldSelf: referencesOldSelf(program.ast) };
    } catch (err) {
      hit = { error: `compilation failed: ${firstLine(err)}`, usesOldSelf: /\boldSelf\b/.test(source) };
    }
    compiledRuleCache.set(source, hit);
  }
  return hit;
}

/** Compiles one `x-kubernetes-validations` entry (parse results are shared across schemas). */
export function compileRule(spec: ValidationRule): CompiledRule {
  const rule = typeof spec.rule === 'string' ? spec.rule : '';
  const parsed = rule.trim() ? parseCached(rule) : { usesOldSelf: false };
  let messageProgram: ParseResult | undefined;
  if (typeof spec.messageExpression === 'string' && spec.messageExpression.trim()) {
    messageProgram = parseCached(spec.messageExpression).program;
  }
  return { spec, program: parsed.program, compileError: parsed.error, usesOldSelf: parsed.usesOldSelf, messageProgram };
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

const RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);

/** k8s.io/apiserver/pkg/cel `Escape`: the CEL field name of a property, or undefined if none. */
export function escapePropertyName(name: string): string | undefined {
  if (name.length === 0 || (name[0]! >= '0' && name[0]! <= '9')) return undefined;
  if (RESERVED.has(name)) return `__${name}__`;
  if (/^[a-zA-Z0-9_]*$/.test(name) && !name.includes('__')) return name;
  let ok = true;
  const out = name.replace(/__|[-./]|[^a-zA-Z0-9\-./_]/g, (s) => {
    switch (s) {
      case '__': return '__underscores__';
      case '.': return '__dot__';
      case '-': return '__dash__';
      case '/': return '__slash__';
      default: ok = false; return '';
    }
  });
  return ok ? out : undefined;
}

function celName(node: CelSchemaNode, prop: string): string | undefined {
  let names = node.celNames;
  if (!names) {
    names = new Map();
    node.celNames = names;
  }
  if (names.has(prop)) return names.get(prop);
  const n = escapePropertyName(prop);
  names.set(prop, n);
  return n;
}

/** A schemaless JSON value as CEL sees it (integral numbers are ints). */
function plainToCel(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(plainToCel);
  const out: Record<string, unknown> = Object.create(null);
  for (const k of Object.keys(v)) out[k] = plainToCel((v as Record<string, unknown>)[k]);
  return out;
}

function durationOf(seconds: number): Duration {
  const whole = Math.trunc(seconds);
  const nanos = Math.round((seconds - whole) * 1e9);
  return new Duration(BigInt(whole), nanos);
}

function stringToCel(s: string, format: string): unknown {
  switch (format) {
    case 'date-time':
    case 'date': {
      const d = new Date(format === 'date' ? `${s}T00:00:00Z` : s);
      return Number.isNaN(d.getTime()) ? s : d;
    }
    case 'duration': {
      const secs = parseGoDuration(s) ?? parseStrfmtDuration(s);
      return secs === undefined ? s : durationOf(secs);
    }
    case 'byte':
      return new Uint8Array(Buffer.from(s, 'base64'));
    default:
      return s;
  }
}

/**
 * Converts a JSON value to the CEL value rules see, following its schema node (kube's
 * `UnstructuredToVal`). `resourceRoot` adds `apiVersion`, `kind` and `metadata.name`/
 * `generateName` to objects, as kube does at the root and for embedded resources.
 */
export function toCel(value: unknown, node: CelSchemaNode | undefined, resourceRoot = false): unknown {
  if (value === null || value === undefined) return null;
  if (!node) return plainToCel(value);
  if (node.intOrString) return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value;
  switch (typeof value) {
    case 'number':
      if (node.type === 'number') return value;
      return Number.isInteger(value) ? BigInt(value) : value;
    case 'string':
      return node.type === 'string' && node.format ? stringToCel(value, node.format) : value;
    case 'boolean':
      return value;
    default:
      break;
  }
  if (Array.isArray(value)) {
    const items = node.items;
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = toCel(value[i], items, items?.embedded ?? false);
    return out;
  }
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = Object.create(null);
  const props = node.properties;
  if ((props && props.size > 0) || node.embedded || resourceRoot) {
    if (props) {
      for (const k of Object.keys(obj)) {
        const p = props.get(k);
        // Null nullable fields of objects with properties are treated as absent (unstructuredMap.Find).
        if (!p || obj[k] === null) continue;
        const name = celName(node, k);
        if (name !== undefined) out[name] = toCel(obj[k], p, p.embedded);
      }
    }
    if (node.embedded || resourceRoot) {
      if (typeof obj.apiVersion === 'string') out.apiVersion = obj.apiVersion;
      if (typeof obj.kind === 'string') out.kind = obj.kind;
      const meta = obj.metadata;
      if (meta && typeof meta === 'object' && !Array.isArray(meta)) {
        const m: Record<string, unknown> = Object.create(null);
        const mm = meta as Record<string, unknown>;
        if (typeof mm.name === 'string') m.name = mm.name;
        if (typeof mm.generateName === 'string') m.generateName = mm.generateName;
        out.metadata = m;
      }
    }
    return out;
  }
  if (node.additional) {
    const add = node.additional;
    for (const k of Object.keys(obj)) out[k] = toCel(obj[k], add, add.embedded);
    return out;
  }
  return plainToCel(obj);
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/** The rule's identity in messages: its message if set, else the rule (`ruleErrorString`). */
export function ruleErrorString(spec: ValidationRule): string {
  return spec.message ? spec.message.trim() : String(spec.rule ?? '').trim();
}

/** cel-go's wording of a runtime error. */
function celErrorText(err: unknown): { overload: boolean; text: string } {
  if (err instanceof CelLibraryError) return { overload: err.message === 'no such overload', text: err.message };
  const code = (err as { code?: unknown }).code;
  const msg = firstLine(err);
  if (code === 'no_such_overload' || code === 'no_matching_overload') return { overload: true, text: 'no such overload' };
  const oob = /index out of bounds, index (-?\d+)/.exec(msg);
  if (oob) return { overload: false, text: `index out of bounds: ${oob[1]}` };
  if (msg.startsWith('No such key: ')) return { overload: false, text: `no such key: ${msg.slice('No such key: '.length)}` };
  return { overload: false, text: msg };
}

function messageFor(rule: CompiledRule, ctx: Record<string, unknown>, budget: CostBudget | undefined): string {
  if (rule.messageProgram) {
    try {
      const v: unknown = budget ? budget.evaluate(rule.messageProgram, ctx) : evaluateMetered(rule.messageProgram, ctx).value;
      if (typeof v === 'string') {
        const trimmed = v.trim();
        if (trimmed && Buffer.byteLength(trimmed) <= MAX_MESSAGE_EXPRESSION_BYTES && !/\n/.test(trimmed)) return trimmed;
      }
    } catch {
      // kube logs the messageExpression failure and falls back to the rule's message.
    }
  }
  const m = rule.spec.message;
  return m ? m.trim() : `failed rule: ${ruleErrorString(rule.spec)}`;
}

/**
 * Evaluates a rule. `self` and `oldSelf` are CEL values (see {@link toCel}); `hasOld` says whether
 * an old value is correlated. Rules using `oldSelf` without an old value are skipped (`pass`),
 * unless `optionalOldSelf` is set (then `oldSelf` is an optional). The evaluation is limited to
 * kube's `PerCallLimit` and charged to `budget` (the object's `RuntimeCELCostBudget`); running
 * out of either is an error with `stop` set and kube's message
 * (schema/cel/validation.go `validateExpressions`).
 */
export function evaluateRule(rule: CompiledRule, self: unknown, hasOld: boolean, oldSelf: unknown, budget?: CostBudget): RuleOutcome {
  if (rule.compileError !== undefined) return { kind: 'error', message: `rule compile error: ${rule.compileError}` };
  const program = rule.program;
  if (!program) return { kind: 'pass' };
  const optional = rule.spec.optionalOldSelf === true;
  if (rule.usesOldSelf && !hasOld && !optional) return { kind: 'pass' };
  const ctx: Record<string, unknown> = { self };
  if (optional) ctx.oldSelf = hasOld ? Optional.of(oldSelf) : Optional.none();
  else if (hasOld) ctx.oldSelf = oldSelf;
  let result: unknown;
  try {
    result = budget ? budget.evaluate(program, ctx) : evaluateMetered(program, ctx).value;
  } catch (err) {
    if (err instanceof CelBudgetExhaustedError) return { kind: 'error', message: err.message, stop: true };
    if (err instanceof CelCostLimitError) {
      return { kind: 'error', message: `'${err.message}': no further validation rules will be run due to call cost exceeds limit for rule: ${ruleErrorString(rule.spec)}`, stop: true };
    }
    const e = celErrorText(err);
    if (e.overload) {
      return { kind: 'error', message: `'${e.text}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleErrorString(rule.spec)}` };
    }
    return { kind: 'error', message: `${e.text} evaluating rule: ${ruleErrorString(rule.spec)}` };
  }
  if (result === true) return { kind: 'pass' };
  return { kind: 'fail', message: messageFor(rule, ctx, budget) };
}
