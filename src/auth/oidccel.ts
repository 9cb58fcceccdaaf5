/**
 * CEL of JWT authenticators (kube: k8s.io/apiserver/pkg/authentication/cel): claim validation
 * rules and claim mappings see `claims` (the token's payload as JSON values: numbers are
 * doubles, as kube's json.Unmarshal into `any`), user validation rules see `user`
 * (`username`, `uid`, `groups`, `extra`). One environment with the Kubernetes libraries the CRD
 * rules use (src/apiextensions/cel-library.ts); every evaluation is metered with kube's per-call
 * cost limit (celconfig.PerCallLimit, src/apiextensions/celcost.ts).
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { registerKubeLibrary } from '../apiextensions/cel-library.js';
import { evaluateMetered, PER_CALL_LIMIT } from '../apiextensions/celcost.js';

let env: Environment | undefined;
/** Compiled programs by source; filled only from configuration (bounded by it, never by requests). */
const programs = new Map<string, ParseResult>();

/**
 * Compiles an authentication expression (kube's CompileClaimsExpression/CompileUserExpression).
 * @throws {Error} `compilation failed: …` for an expression that does not parse
 */
export function compileAuthenticationExpression(expression: string): ParseResult {
  let p = programs.get(expression);
  if (p) return p;
  if (!env) {
    env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, enableOptionalTypes: true });
    env.registerVariable('claims', 'map');
    env.registerVariable('user', 'map');
    registerKubeLibrary(env);
  }
  try { p = env.parse(expression); } catch (err) { throw new Error(`compilation failed: ${String((err as Error).message).split('\n')[0]}`); }
  programs.set(expression, p);
  return p;
}

/**
 * Evaluates a compiled expression against `claims` or `user`, with kube's per-call cost limit.
 * @throws {Error} the evaluation's error (cost limit exceeded, no such key, …)
 */
export function evaluateAuthenticationExpression(expression: string, vars: { claims?: unknown; user?: unknown }): unknown {
  return evaluateMetered(compileAuthenticationExpression(expression), { claims: vars.claims ?? {}, user: vars.user ?? {} }, PER_CALL_LIMIT).value;
}

/** A JSON value as CEL sees it: objects → maps; arrays → lists; numbers stay doubles. */
export function jsonToCel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonToCel);
  if (v && typeof v === 'object') {
    const m = new Map<string, unknown>();
    for (const [k, x] of Object.entries(v)) m.set(k, jsonToCel(x));
    return m;
  }
  return v;
}

/** kube's convertCELValueToStringList: a string or list of strings; "" and [] are absent. */
export function celStringList(v: unknown): string[] {
  if (v === null || v === undefined) return [];
  if (typeof v === 'string') return v ? [v] : [];
  if (Array.isArray(v)) {
    const out: string[] = [];
    for (const x of v) {
      if (typeof x !== 'string') throw new Error('expression must return a string or a list of strings');
      if (x) out.push(x);
    }
    return out;
  }
  throw new Error('expression must return a string or a list of strings');
}
