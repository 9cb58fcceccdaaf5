/**
 * The JSONPath subset of kubectl and of CRD `additionalPrinterColumns`
 * (k8s.io/client-go/util/jsonpath, https://kubernetes.io/docs/reference/kubectl/jsonpath/):
 * `.field` (a backslash escapes the next character, e.g. `.labels.kubernetes\\.io/os`),
 * `['field']`, `[n]` (negative from the end), `[*]`, `.*`, `..field` (recursive) and
 * filters `[?(@.a.b == "x")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` or existence `[?(@.a)]`.
 */

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'wildcard' }
  | { kind: 'recursive'; name: string }
  | { kind: 'filter'; path: string[]; op?: string; value?: unknown };

/** Characters that end a field name (client-go util/jsonpath parser.go isTerminator). */
const FIELD_TERMINATORS = new Set([' ', '\t', '\n', '\r', '.', ',', '[', ']', '$', '@', '{', '}']);

/** A parsed JSONPath. */
export interface JsonPath { steps: Step[]; source: string }

/** Parses a JSONPath (with or without surrounding `{}`); throws Error on bad syntax. */
export function parseJsonPath(source: string): JsonPath {
  let s = source.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1).trim();
  if (s.startsWith('$')) s = s.slice(1);
  const steps: Step[] = [];
  let i = 0;
  // A field name runs to the next terminator; a backslash takes the next character literally
  // (`.metadata.labels.kubernetes\.io/os`), as client-go's parser (parseField, isTerminator).
  const ident = () => {
    let name = '';
    while (i < s.length && !FIELD_TERMINATORS.has(s[i]!)) {
      if (s[i] === '\\' && i + 1 < s.length) i++;
      name += s[i++];
    }
    if (!name) throw new Error(`invalid JSONPath ${source}: expected a field name at ${i}`);
    return name;
  };
  while (i < s.length) {
    if (s.startsWith('..', i)) { i += 2; steps.push({ kind: 'recursive', name: ident() }); continue; }
    if (s[i] === '.') {
      i++;
      if (s[i] === '*') { i++; steps.push({ kind: 'wildcard' }); continue; }
      steps.push({ kind: 'field', name: ident() });
      continue;
    }
    if (s[i] === '[') {
      const end = s.indexOf(']', i);
      if (end < 0) throw new Error(`invalid JSONPath ${source}: unclosed [`);
      const inner = s.slice(i + 1, end).trim();
      i = end + 1;
      if (inner === '*') steps.push({ kind: 'wildcard' });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else if (/^'.*'$|^".*"$/.test(inner)) steps.push({ kind: 'field', name: inner.slice(1, -1) });
      else if (inner.startsWith('?(') && inner.endsWith(')')) steps.push(parseFilter(inner.slice(2, -1).trim(), source));
      else throw new Error(`invalid JSONPath ${source}: unsupported [${inner}]`);
      continue;
    }
    throw new Error(`invalid JSONPath ${source}: unexpected "${s[i]}" at ${i}`);
  }
  return { steps, source };
}

function parseFilter(expr: string, source: string): Step {
  const m = /^@((?:\.[A-Za-z0-9_\-/]+)+)\s*(?:(==|!=|<=|>=|<|>)\s*(.+))?$/.exec(expr);
  if (!m) throw new Error(`invalid JSONPath ${source}: unsupported filter ${expr}`);
  const path = m[1]!.split('.').filter(Boolean);
  if (!m[2]) return { kind: 'filter', path };
  const raw = m[3]!.trim();
  let value: unknown;
  if (/^'.*'$|^".*"$/.test(raw)) value = raw.slice(1, -1);
  else if (raw === 'true' || raw === 'false') value = raw === 'true';
  else if (!Number.isNaN(Number(raw))) value = Number(raw);
  else throw new Error(`invalid JSONPath ${source}: bad filter value ${raw}`);
  return { kind: 'filter', path, op: m[2], value };
}

function get(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

function compare(a: unknown, op: string, b: unknown): boolean {
  switch (op) {
    case '==': return a === b;
    case '!=': return a !== b;
    case '<': return typeof a === typeof b && (a as number) < (b as number);
    case '>': return typeof a === typeof b && (a as number) > (b as number);
    case '<=': return typeof a === typeof b && (a as number) <= (b as number);
    case '>=': return typeof a === typeof b && (a as number) >= (b as number);
    default: return false;
  }
}

function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (v !== null && typeof v === 'object') return Object.values(v);
  return [];
}

function recursiveFind(v: unknown, name: string, out: unknown[]): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && name in (v as object)) out.push((v as Record<string, unknown>)[name]);
  for (const c of children(v)) if (c !== null && typeof c === 'object') recursiveFind(c, name, out);
}

/** Evaluates a parsed path; returns every match in document order (empty when none). */
export function evaluateJsonPath(path: JsonPath, root: unknown): unknown[] {
  let current: unknown[] = [root];
  for (const step of path.steps) {
    const next: unknown[] = [];
    for (const v of current) {
      switch (step.kind) {
        case 'field':
          if (v !== null && typeof v === 'object' && !Array.isArray(v) && step.name in (v as object)) next.push((v as Record<string, unknown>)[step.name]);
          break;
        case 'index':
          if (Array.isArray(v)) { const i = step.index < 0 ? v.length + step.index : step.index; if (i >= 0 && i < v.length) next.push(v[i]); }
          break;
        case 'wildcard': next.push(...children(v)); break;
        case 'recursive': recursiveFind(v, step.name, next); break;
        case 'filter':
          for (const item of children(v)) {
            const got = get(item, step.path);
            if (step.op ? compare(got, step.op, step.value) : got !== undefined) next.push(item);
          }
          break;
      }
    }
    current = next;
  }
  return current;
}
