/**
 * Nesting depth limits of request bodies. kube-apiserver refuses JSON and YAML nested deeper than
 * 10,000 levels (Go's encoding/json `exceeded max depth`, go-yaml's `exceeded max depth of 10000`);
 * here the limit is {@link MAX_NESTING_DEPTH}, because the YAML composer, the patchers, pruning and
 * validation recurse on the JavaScript stack: a body nested 10^4 or 10^5 levels would overflow it
 * (and V8 aborts the whole process when a regular expression is compiled with the stack
 * exhausted). The checks run on the raw bytes before any parser sees them, without recursion.
 */
import { Lexer } from 'yaml';
import { badRequest } from './errors.js';

/** Deepest nesting of objects and arrays a request body (or an object it produces) may have. */
export const MAX_NESTING_DEPTH = 500;

/**
 * Whether a JSON text nests objects and arrays deeper than `limit` (brackets inside strings do not
 * count). Linear, stops at the first level over the limit; invalid JSON is left to the parser.
 */
export function jsonDeeperThan(data: Uint8Array, limit = MAX_NESTING_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) { if (++depth > limit) return true; }
    else if (c === 0x5d || c === 0x7d) { if (depth > 0) depth--; }
  }
  return false;
}

/**
 * Most tokens a YAML body may have. The YAML library composes a few microseconds per token on
 * the event loop (a 3 MiB flow sequence of small numbers is 1.5 million tokens, seconds of
 * blocking); JSON bodies, which is what kubectl and client libraries send, take a fast path.
 */
export const MAX_YAML_TOKENS = 200_000;

/**
 * What makes a YAML text too costly to compose, or undefined: `depth` when it may nest deeper than
 * `limit` — flow collections (`[`, `{` as the lexer sees them, not inside scalars) plus block
 * levels (a stack of increasing indentations, and the `-`, `?`, `:` indicators of one line, which
 * open compact nested collections), an upper bound — or `size` beyond {@link MAX_YAML_TOKENS}
 * lexer tokens. The YAML composer recurses per level, so the text is refused before it runs.
 */
export function yamlTooComplex(text: string, limit = MAX_NESTING_DEPTH, maxTokens = MAX_YAML_TOKENS): 'depth' | 'size' | undefined {
  let flow = 0;
  const indents: number[] = [];
  let lineStart = true;
  let onLine = 0;
  let tokens = 0;
  for (const tok of new Lexer().lex(text)) {
    if (++tokens > maxTokens) return 'size';
    const c = tok[0];
    if (tok === '\n' || tok === '\r\n' || tok === '') { lineStart = true; onLine = 0; continue; }
    if ((c === '[' || c === '{') && tok.length === 1) {
      if (++flow + indents.length + onLine > limit) return 'depth';
      continue;
    }
    if ((c === ']' || c === '}') && tok.length === 1) { if (flow > 0) flow--; continue; }
    if (c === ' ' || c === '\t') {
      if (lineStart && flow === 0) {
        const n = tok.length;
        while (indents.length && indents[indents.length - 1]! > n) indents.pop();
        if (!indents.length || indents[indents.length - 1]! < n) indents.push(n);
        if (indents.length + onLine > limit) return 'depth';
      }
      continue;
    }
    if (c === '#' || c === '\u0002' || c === '\u001f' || c === '\ufeff') continue;
    // Content at column 0: back to the outermost block level.
    if (lineStart && flow === 0) indents.length = 0;
    lineStart = false;
    if (flow === 0 && (c === '-' || c === '?' || c === ':') && tok.length === 1) {
      if (++onLine + indents.length > limit) return 'depth';
    }
  }
  return undefined;
}

/**
 * Whether a decoded value nests objects and arrays deeper than `limit` (iterative; a cyclic value,
 * as a self-referencing YAML alias makes, counts as infinitely deep).
 */
export function valueDeeperThan(value: unknown, limit = MAX_NESTING_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  let visited = 0;
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > limit) return true;
    // A DAG of shared values (YAML aliases) is walked per reference; bound the work too.
    if (++visited > 10_000_000) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
  }
  return false;
}

/** The 400 for a body nested too deeply, worded as Go's decoders do. */
export function tooDeep(what = 'json'): Error {
  return badRequest(`${what}: exceeded max depth of ${MAX_NESTING_DEPTH}`);
}
