/**
 * The Kubernetes CEL libraries that `@marcbachmann/cel-js` lacks, registered on an Environment:
 * k8s.io/apiserver/pkg/cel/library (lists, regex, urls, quantity, ip, cidr) and cel-go's
 * `ext.Strings` / `ext.Sets` functions that CRD validation rules can call. The library's own
 * built-ins (size, contains, startsWith, endsWith, matches, indexOf, lastIndexOf, lowerAscii,
 * upperAscii, trim, split, substring, join, timestamps, durations, macros, optionals) are used as
 * they are, except `matches`, whose JavaScript RegExp is replaced by Go's RE2 semantics (see
 * {@link registerKubeLibrary}).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { isIP as netIsIP } from 'node:net';
import { findAllStrings, findString, regexpError, RegexpSyntaxError, tenantRegExp } from '../apimachinery/regexp.js';

/** A runtime error raised by a library function (cel-go's `types.NewErr`). */
export class CelLibraryError extends Error {}

function fail(message: string): never {
  throw new CelLibraryError(message);
}

// ---------------------------------------------------------------------------------------------
// Comparisons (CEL semantics: int/uint/double compare numerically across types)
// ---------------------------------------------------------------------------------------------

function isNum(v: unknown): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint';
}

function compareNum(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Orders two comparable CEL values (numbers, strings, booleans, timestamps, bytes). */
export function celCompare(a: unknown, b: unknown): number {
  if (isNum(a) && isNum(b)) return compareNum(a, b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  return fail('no such overload');
}

/** CEL equality of two values (lists ordered, maps by key, numbers across int/double). */
export function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isNum(a) && isNum(b)) return compareNum(a, b) === 0;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) === 0;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!celEquals(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!celEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// URL (k8s.io/apiserver/pkg/cel/library/urls.go)
// ---------------------------------------------------------------------------------------------

/** A parsed URL, as `url()` returns (Go `url.ParseRequestURI`). */
export class KubeURL {
  constructor(
    readonly scheme: string,
    readonly host: string,
    readonly escapedPath: string,
    readonly rawQuery: string,
  ) {}
}

function parseRequestURI(s: string): KubeURL | undefined {
  if (s === '' || /[\x00-\x20\x7f]/.test(s)) return undefined;
  const noFrag = s.split('#')[0]!;
  const q = noFrag.indexOf('?');
  const beforeQuery = q >= 0 ? noFrag.slice(0, q) : noFrag;
  const rawQuery = q >= 0 ? noFrag.slice(q + 1) : '';
  if (beforeQuery.startsWith('/')) return new KubeURL('', '', beforeQuery, rawQuery);
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/.exec(beforeQuery);
  if (!m) return undefined;
  const rest = m[2]!;
  if (!rest.startsWith('//')) return rest.startsWith('/') || rest === '' ? new KubeURL(m[1]!.toLowerCase(), '', rest, rawQuery) : undefined;
  const slash = rest.indexOf('/', 2);
  const authority = slash >= 0 ? rest.slice(2, slash) : rest.slice(2);
  const path = slash >= 0 ? rest.slice(slash) : '';
  const host = authority.includes('@') ? authority.slice(authority.lastIndexOf('@') + 1) : authority;
  if (host.startsWith('[')) {
    if (!/^\[[0-9a-fA-F:.]+(%[^\]]*)?\](:\d*)?$/.test(host)) return undefined;
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !/^\d*$/.test(host.slice(colon + 1))) return undefined;
  }
  return new KubeURL(m[1]!.toLowerCase(), host, path, rawQuery);
}

function hostname(host: string): string {
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']'));
  const colon = host.lastIndexOf(':');
  return colon >= 0 ? host.slice(0, colon) : host;
}

function port(host: string): string {
  const end = host.startsWith('[') ? host.indexOf(']') + 1 : 0;
  const colon = host.indexOf(':', end);
  return colon >= 0 ? host.slice(colon + 1) : '';
}

// ---------------------------------------------------------------------------------------------
// Quantity (k8s.io/apiserver/pkg/cel/library/quantity.go; k8s.io/apimachinery resource.Quantity)
// ---------------------------------------------------------------------------------------------

/** An exact quantity value `num / 10^scale`. */
export class KubeQuantity {
  constructor(readonly num: bigint, readonly scale: bigint) {}
}

const BINARY_SUFFIX: Record<string, bigint> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

function parseQuantity(s: string): KubeQuantity | undefined {
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(s);
  if (!m) return undefined;
  const [intPart, frac = ''] = m[2]!.split('.') as [string, string | undefined];
  let num = BigInt((intPart || '0') + frac);
  let scale = BigInt(frac.length);
  const suffix = m[3] ?? '';
  if (suffix in BINARY_SUFFIX) num *= BINARY_SUFFIX[suffix]!;
  else {
    const exp = suffix in DECIMAL_SUFFIX ? DECIMAL_SUFFIX[suffix]! : Number(suffix.slice(1));
    scale -= BigInt(exp);
  }
  if (m[1] === '-') num = -num;
  if (scale < 0n) { num *= 10n ** -scale; scale = 0n; }
  return new KubeQuantity(num, scale);
}

function alignQ(a: KubeQuantity, b: KubeQuantity): [bigint, bigint, bigint] {
  const scale = a.scale > b.scale ? a.scale : b.scale;
  return [a.num * 10n ** (scale - a.scale), b.num * 10n ** (scale - b.scale), scale];
}

function compareQ(a: KubeQuantity, b: KubeQuantity): number {
  const [x, y] = alignQ(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function toQ(v: KubeQuantity | bigint): KubeQuantity {
  return typeof v === 'bigint' ? new KubeQuantity(v, 0n) : v;
}

// ---------------------------------------------------------------------------------------------
// IP and CIDR (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go: netip parsing, no zones, no
// IPv4-mapped IPv6, no leading zeros)
// ---------------------------------------------------------------------------------------------

/** A parsed IP address: family and 16 (v6) or 4 (v4) bytes. */
export class KubeIP {
  constructor(readonly text: string, readonly family: 4 | 6, readonly bytes: Uint8Array) {}
}

/** A parsed CIDR. */
export class KubeCIDR {
  constructor(readonly text: string, readonly ip: KubeIP, readonly prefix: number) {}
}

function ipv6Bytes(s: string): Uint8Array {
  const out = new Uint8Array(16);
  let str = s;
  let tail: number[] = [];
  if (str.includes('.')) {
    const i = str.lastIndexOf(':');
    tail = str.slice(i + 1).split('.').map(Number);
    str = `${str.slice(0, i + 1)}0:0`;
  }
  const [head, rest] = str.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const groups = [...h, ...Array(8 - h.length - r.length).fill('0'), ...r];
  groups.forEach((g, i) => { const n = parseInt(g, 16); out[2 * i] = n >> 8; out[2 * i + 1] = n & 255; });
  if (tail.length === 4) tail.forEach((n, i) => { out[12 + i] = n; });
  return out;
}

function parseKubeIP(s: string): KubeIP | undefined {
  if (s.includes('%')) return undefined;
  const fam = netIsIP(s);
  if (fam === 4) {
    if (s.split('.').some((p) => p.length > 1 && p.startsWith('0'))) return undefined;
    return new KubeIP(s, 4, Uint8Array.from(s.split('.').map(Number)));
  }
  if (fam === 6) {
    const bytes = ipv6Bytes(s);
    // IPv4-mapped IPv6 addresses are rejected.
    if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 255 && bytes[11] === 255) return undefined;
    return new KubeIP(s, 6, bytes);
  }
  return undefined;
}

function parseKubeCIDR(s: string): KubeCIDR | undefined {
  const i = s.indexOf('/');
  if (i < 0) return undefined;
  const ip = parseKubeIP(s.slice(0, i));
  const bits = s.slice(i + 1);
  if (!ip || !/^(0|[1-9]\d{0,2})$/.test(bits)) return undefined;
  const prefix = Number(bits);
  if (prefix > (ip.family === 4 ? 32 : 128)) return undefined;
  return new KubeCIDR(s, ip, prefix);
}

function cidrContains(c: KubeCIDR, ip: KubeIP): boolean {
  if (ip.family !== c.ip.family) return false;
  for (let bit = 0; bit < c.prefix; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((c.ip.bytes[byte]! & mask) !== (ip.bytes[byte]! & mask)) return false;
  }
  return true;
}

function maskedIP(c: KubeCIDR): KubeIP {
  const bytes = Uint8Array.from(c.ip.bytes);
  for (let bit = c.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  const text = c.ip.family === 4 ? [...bytes].join('.') : formatIPv6(bytes);
  return new KubeIP(text, c.ip.family, bytes);
}

function formatIPv6(bytes: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

class SetsNamespace {}

// ---------------------------------------------------------------------------------------------
// Regular expressions: Go's regexp (RE2, linear in the input) for every pattern
// ---------------------------------------------------------------------------------------------

/**
 * Runs `match` with the compiled `pattern`; a pattern Go refuses is the runtime error `prefix` +
 * Go's message (kube's regex library: `Illegal regex: …`; cel-go's `matches`: Go's error itself).
 */
function withRegex<T>(pattern: string, prefix: string, match: () => T): T {
  try {
    return match();
  } catch (err) {
    if (err instanceof RegexpSyntaxError) fail(`${prefix}${err.message}`);
    throw err;
  }
}

/** cel-go `matches`: Go's `regexp.MatchString(pattern, s)`, an unanchored search. */
function matches(s: string, pattern: string): boolean {
  return withRegex(pattern, '', () => tenantRegExp(pattern).test(s));
}

/** One compile-time error about a constant pattern: cel-go's message, at the literal's offset. */
export interface RegexLiteralIssue { message: string; offset: number }

/**
 * kube's compile-time checks of constant patterns in a parsed expression (cel-js AST):
 * - cel-go's `ValidateRegexLiterals` AST validator (k8s.io/apiserver/pkg/cel/environment/base.go,
 *   since 1.29): a literal first argument of `matches` — the pattern of `s.matches(p)`, the string
 *   of `matches(s, p)`, as cel-go checks argument 0 of either form — that Go's regexp refuses is
 *   the compile error `invalid matches argument`, located at the literal (`issues`);
 * - the regex library's `OptimizeRegex(FindRegexOptimization, FindAllRegexOptimization)`
 *   (k8s.io/apiserver/pkg/cel/library/regex.go): a literal pattern of `find`/`findAll` that Go
 *   refuses fails program creation with Go's error (`programError`, kube: `program instantiation
 *   failed: <error>`).
 */
export function constantRegexErrors(ast: unknown): { issues: RegexLiteralIssue[]; programError?: string } {
  const issues: RegexLiteralIssue[] = [];
  let programError: string | undefined;
  const literal = (n: unknown): { value: string; pos: number } | undefined => {
    if (n === null || typeof n !== 'object') return undefined;
    const node = n as { op?: unknown; args?: unknown; pos?: unknown };
    return node.op === 'value' && typeof node.args === 'string' ? { value: node.args, pos: typeof node.pos === 'number' ? node.pos : 0 } : undefined;
  };
  const seen = new Set<unknown>();
  const visit = (n: unknown): void => {
    if (n === null || typeof n !== 'object' || seen.has(n)) return;
    seen.add(n);
    if (Array.isArray(n)) { n.forEach(visit); return; }
    const node = n as { op?: unknown; args?: unknown };
    if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(node.args)) {
      const name = node.args[0];
      const callArgs = (node.op === 'rcall' ? node.args[2] : node.args[1]) as unknown;
      if (Array.isArray(callArgs)) {
        const first = literal(callArgs[0]);
        if (name === 'matches' && first && regexpError(first.value) !== undefined) {
          issues.push({ message: 'invalid matches argument', offset: first.pos });
        }
        const pattern = node.op === 'rcall' ? first : literal(callArgs[1]);
        if ((name === 'find' || name === 'findAll') && pattern && programError === undefined) programError = regexpError(pattern.value);
      }
    }
    if ('args' in node) visit(node.args);
  };
  visit(ast);
  return { issues: issues.sort((a, b) => a.offset - b.offset), programError };
}

/**
 * Replaces the handler of one of cel-js's built-in overloads in `env` (cel-js refuses a second
 * overload with the same signature). The overload is reached through the candidates the type
 * checker attaches to a probe call, and its frozen declaration is rebuilt with `handler`.
 * @throws {Error} when cel-js's internals no longer have that shape (checked at start-up)
 */
function replaceBuiltin(env: Environment, probe: string, signature: string, handler: (...args: any[]) => unknown): void {
  const parsed = env.parse(probe);
  parsed.check();
  const candidates = (parsed.ast as { candidates?: { declarations?: unknown[] } }).candidates;
  const decls = candidates?.declarations;
  const i = decls?.findIndex((d) => (d as { signature?: unknown }).signature === signature) ?? -1;
  if (!decls || i < 0) throw new Error(`cannot replace the CEL built-in ${signature}`);
  const old = decls[i] as { constructor: new (o: object) => unknown; name: string; receiverType: unknown; returnType: unknown; description: unknown; params: unknown };
  decls[i] = new old.constructor({ name: old.name, receiverType: old.receiverType, returnType: old.returnType, description: old.description, params: old.params, handler });
}

/** Registers the Kubernetes CEL library functions on `env` (once, before parsing rules). */
export function registerKubeLibrary(env: Environment): void {
  const fn = (sig: string, handler: (...args: any[]) => unknown): void => {
    env.registerFunction(sig, handler);
  };

  // ext.Strings (cel-go) functions missing from cel-js.
  fn('string.charAt(int): string', (s: string, i: bigint) => {
    const cps = [...s];
    if (i < 0n || i > BigInt(cps.length)) fail(`index out of range: ${i}`);
    return cps[Number(i)] ?? '';
  });
  fn('string.replace(string, string): string', (s: string, a: string, b: string) => s.split(a).join(b));
  fn('string.replace(string, string, int): string', (s: string, a: string, b: string, n: bigint) => {
    if (n < 0n) return s.split(a).join(b);
    let out = s;
    let from = 0;
    for (let k = 0n; k < n; k++) {
      const i = out.indexOf(a, from);
      if (i < 0) break;
      out = out.slice(0, i) + b + out.slice(i + a.length);
      from = i + b.length + (a === '' ? 1 : 0);
    }
    return out;
  });
  fn('string.reverse(): string', (s: string) => [...s].reverse().join(''));

  // Regular expressions, all by RE2 with Go's syntax (../apimachinery/regexp.ts): cel-go's
  // `matches` (both forms; cel-js's own runs a backtracking RegExp) and kube's regex library.
  // Two function objects: cel-js caches a call adapter on the handler, and the two forms call differently.
  fn('matches(string, string): bool', (s: string, p: string) => matches(s, p));
  replaceBuiltin(env, "''.matches('')", 'string.matches(string): bool', (s: string, p: string) => matches(s, p));
  if (env.parse("'a'.matches('\\\\Aa\\\\z')")() !== true) throw new Error('the CEL built-in matches does not use RE2');
  fn('string.find(string): string', (s: string, p: string) => withRegex(p, 'Illegal regex: ', () => findString(p, s)));
  fn('string.findAll(string): list<string>', (s: string, p: string) => withRegex(p, 'Illegal regex: ', () => findAllStrings(p, s)));
  fn('string.findAll(string, int): list<string>', (s: string, p: string, n: bigint) =>
    withRegex(p, 'Illegal regex: ', () => findAllStrings(p, s, n < 0n ? -1 : Number(n > 0x7fffffffn ? 0x7fffffffn : n))));

  // Lists library.
  fn('list.isSorted(): bool', (l: unknown[]) => {
    for (let i = 1; i < l.length; i++) if (celCompare(l[i - 1], l[i]) > 0) return false;
    return true;
  });
  fn('list.sum(): dyn', (l: unknown[]) => {
    if (l.length === 0) return 0n;
    let acc: unknown = l[0];
    for (let i = 1; i < l.length; i++) {
      const v = l[i];
      if (typeof acc === 'bigint' && typeof v === 'bigint') acc = acc + v;
      else if (typeof acc === 'number' && typeof v === 'number') acc = acc + v;
      else fail('no such overload');
    }
    return acc;
  });
  fn('list.min(): dyn', (l: unknown[]) => {
    if (l.length === 0) fail('min called on empty list');
    return l.reduce((a, b) => (celCompare(b, a) < 0 ? b : a));
  });
  fn('list.max(): dyn', (l: unknown[]) => {
    if (l.length === 0) fail('max called on empty list');
    return l.reduce((a, b) => (celCompare(b, a) > 0 ? b : a));
  });
  fn('list.indexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.findIndex((x) => celEquals(x, v))));
  fn('list.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => {
    for (let i = l.length - 1; i >= 0; i--) if (celEquals(l[i], v)) return BigInt(i);
    return -1n;
  });

  // ext.Sets: sets.contains, sets.equivalent, sets.intersects.
  env.registerType('SetsNamespace', SetsNamespace);
  env.registerConstant('sets', 'SetsNamespace', new SetsNamespace());
  fn('SetsNamespace.contains(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) => b.every((x) => a.some((y) => celEquals(x, y))));
  fn('SetsNamespace.equivalent(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) =>
    b.every((x) => a.some((y) => celEquals(x, y))) && a.every((x) => b.some((y) => celEquals(x, y))));
  fn('SetsNamespace.intersects(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) => a.some((x) => b.some((y) => celEquals(x, y))));

  // URLs library.
  env.registerType('URL', KubeURL);
  fn('url(string): URL', (s: string) => parseRequestURI(s) ?? fail(`URL parse error during conversion from string: parse "${s}": invalid URI for request`));
  fn('isURL(string): bool', (s: string) => parseRequestURI(s) !== undefined);
  fn('URL.getScheme(): string', (u: KubeURL) => u.scheme);
  fn('URL.getHost(): string', (u: KubeURL) => u.host);
  fn('URL.getHostname(): string', (u: KubeURL) => hostname(u.host));
  fn('URL.getPort(): string', (u: KubeURL) => port(u.host));
  fn('URL.getEscapedPath(): string', (u: KubeURL) => u.escapedPath);
  fn('URL.getQuery(): map<string, list<string>>', (u: KubeURL) => {
    const out: Record<string, string[]> = Object.create(null);
    for (const [k, v] of new URLSearchParams(u.rawQuery)) (out[k] ??= []).push(v);
    return out;
  });

  // Quantity library.
  env.registerType('Quantity', KubeQuantity);
  fn('quantity(string): Quantity', (s: string) => parseQuantity(s) ?? fail('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\''));
  fn('isQuantity(string): bool', (s: string) => parseQuantity(s) !== undefined);
  fn('Quantity.sign(): int', (q: KubeQuantity) => BigInt(q.num > 0n ? 1 : q.num < 0n ? -1 : 0));
  fn('Quantity.isInteger(): bool', (q: KubeQuantity) => q.num % 10n ** q.scale === 0n);
  fn('Quantity.asInteger(): int', (q: KubeQuantity) => {
    if (q.num % 10n ** q.scale !== 0n) fail('cannot convert value to integer');
    return q.num / 10n ** q.scale;
  });
  fn('Quantity.asApproximateFloat(): double', (q: KubeQuantity) => Number(q.num) / 10 ** Number(q.scale));
  fn('Quantity.compareTo(Quantity): int', (a: KubeQuantity, b: KubeQuantity) => BigInt(compareQ(a, b)));
  fn('Quantity.isLessThan(Quantity): bool', (a: KubeQuantity, b: KubeQuantity) => compareQ(a, b) < 0);
  fn('Quantity.isGreaterThan(Quantity): bool', (a: KubeQuantity, b: KubeQuantity) => compareQ(a, b) > 0);
  for (const t of ['Quantity', 'int']) {
    fn(`Quantity.add(${t}): Quantity`, (a: KubeQuantity, b: KubeQuantity | bigint) => {
      const [x, y, scale] = alignQ(a, toQ(b));
      return new KubeQuantity(x + y, scale);
    });
    fn(`Quantity.sub(${t}): Quantity`, (a: KubeQuantity, b: KubeQuantity | bigint) => {
      const [x, y, scale] = alignQ(a, toQ(b));
      return new KubeQuantity(x - y, scale);
    });
  }

  // IP and CIDR libraries.
  env.registerType('net.IP', KubeIP);
  env.registerType('net.CIDR', KubeCIDR);
  fn('isIP(string): bool', (s: string) => parseKubeIP(s) !== undefined);
  fn('ip(string): net.IP', (s: string) => parseKubeIP(s) ?? fail(`IP Address "${s}" parse error during conversion from string`));
  fn('net.IP.family(): int', (ip: KubeIP) => BigInt(ip.family));
  fn('net.IP.isUnspecified(): bool', (ip: KubeIP) => ip.bytes.every((b) => b === 0));
  fn('net.IP.isLoopback(): bool', (ip: KubeIP) => (ip.family === 4 ? ip.bytes[0] === 127 : ip.bytes.slice(0, 15).every((b) => b === 0) && ip.bytes[15] === 1));
  fn('net.IP.isGlobalUnicast(): bool', (ip: KubeIP) => {
    if (ip.family === 4) return !(ip.bytes[0] === 0 || ip.bytes[0] === 127 || ip.bytes[0]! >= 224 || (ip.bytes[0] === 169 && ip.bytes[1] === 254) || ip.bytes.every((b) => b === 255));
    return !(ip.bytes.every((b) => b === 0) || ip.bytes[0] === 0xff || (ip.bytes[0] === 0xfe && (ip.bytes[1]! & 0xc0) === 0x80) || (ip.bytes.slice(0, 15).every((b) => b === 0) && ip.bytes[15] === 1));
  });
  fn('string(net.IP): string', (ip: KubeIP) => (ip.family === 4 ? ip.text : formatIPv6(ip.bytes)));
  fn('isCIDR(string): bool', (s: string) => parseKubeCIDR(s) !== undefined);
  fn('cidr(string): net.CIDR', (s: string) => parseKubeCIDR(s) ?? fail(`network address "${s}" parse error during conversion from string`));
  fn('net.CIDR.containsIP(string): bool', (c: KubeCIDR, s: string) => cidrContains(c, parseKubeIP(s) ?? fail(`IP Address "${s}" parse error during conversion from string`)));
  fn('net.CIDR.containsIP(net.IP): bool', (c: KubeCIDR, ip: KubeIP) => cidrContains(c, ip));
  fn('net.CIDR.containsCIDR(string): bool', (c: KubeCIDR, s: string) => {
    const o = parseKubeCIDR(s) ?? fail(`network address "${s}" parse error during conversion from string`);
    return o.prefix >= c.prefix && cidrContains(c, o.ip);
  });
  fn('net.CIDR.containsCIDR(net.CIDR): bool', (c: KubeCIDR, o: KubeCIDR) => o.prefix >= c.prefix && cidrContains(c, o.ip));
  fn('net.CIDR.ip(): net.IP', (c: KubeCIDR) => c.ip);
  fn('net.CIDR.masked(): net.CIDR', (c: KubeCIDR) => {
    const ip = maskedIP(c);
    return new KubeCIDR(`${ip.text}/${c.prefix}`, ip, c.prefix);
  });
  fn('net.CIDR.prefixLength(): int', (c: KubeCIDR) => BigInt(c.prefix));
  fn('string(net.CIDR): string', (c: KubeCIDR) => c.text);
}
