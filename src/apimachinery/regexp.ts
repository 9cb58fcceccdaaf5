/**
 * Regular expressions supplied by tenants, with Go `regexp` semantics and linear matching time.
 *
 * Kubernetes compiles every pattern a tenant writes — OpenAPI `pattern` in CRD and
 * APIResourceSchema schemas (k8s.io/kube-openapi/pkg/validation/validate `Pattern`), CEL
 * `matches` (cel-go) and `find`/`findAll` (k8s.io/apiserver/pkg/cel/library/regex.go) in CRD
 * rules, admission policies and webhook match conditions — with Go's `regexp`, an RE2 engine:
 * matching is linear in the input, and Perl features that need backtracking (look-arounds,
 * back-references, possessive quantifiers) are syntax errors. JavaScript's `RegExp` backtracks:
 * `^(a+)+$` against 40 `a`s and a `!` would hold the event loop for good. So every tenant pattern
 * is compiled here, by RE2 itself (the `re2` binding of Google's C++ library), never by `RegExp`.
 *
 * Go and C++ RE2 share one syntax; where they differ this module follows Go:
 * - the binding's JavaScript conveniences are refused as Go refuses them: `\u`, `\c`, `\C` (any
 *   byte) and long Unicode class names such as `\p{Letter}`;
 * - C++ RE2's error texts are rewritten to Go's (`error parsing regexp: <code>: \`<arg>\``,
 *   regexp/syntax `ErrorCode`s), e.g. `invalid or unsupported Perl syntax: \`(?=\``;
 * - `\Q…\E` quotes everything up to `\E` literally (the binding would translate escapes inside).
 * What RE2 accepts with Go is accepted: `(?i)`, `(?s)`, `(?m)`, `(?U)` flags, `\A`, `\z`, `\pL`,
 * `\p{Greek}`, `[[:alpha:]]`, `(?P<name>…)` and `(?<name>…)`, octal `\123`, `\x{10FFFF}`.
 * Strings are matched as UTF-8, as Go matches them: `.` is one code point.
 *
 * Compiled patterns (and the errors of refused ones) are kept in one LRU cache of at most
 * {@link REGEXP_CACHE_MAX_ENTRIES} entries (each one RE2 object, two once used by `findAll`) whose
 * pattern texts total at most {@link REGEXP_CACHE_MAX_PATTERN_CHARS} UTF-16 code units; a longer
 * pattern is compiled on every use. Nothing else keeps compiled tenant patterns (ajv's engine
 * objects and CEL programs look them up here), so the native memory of tenant regexes is bounded
 * by 64 × 2 × RE2's 8 MiB budget in theory, a few hundred MiB at most in practice.
 */
import RE2 from 're2';
import { LRUCache } from 'lru-cache';

/**
 * Bound on the number of compiled tenant patterns kept (least recently used are dropped). Small on
 * purpose: RE2 gives each compiled object a memory budget of 8 MiB for its program and lazily
 * built DFA caches (measured: about 3 MiB after one hostile 200,000-character input), which
 * V8 does not see; a miss costs a compile (tens to a few hundred µs for the patterns of real CRDs).
 */
export const REGEXP_CACHE_MAX_ENTRIES = 64;
/** Bound on the total length of the cached patterns' texts, in UTF-16 code units (1 Mi). */
export const REGEXP_CACHE_MAX_PATTERN_CHARS = 1 << 20;
/** Go regexp/syntax `maxHeight`: deeper nesting is `expression nests too deeply`. */
const MAX_NESTING = 1000;

/** A pattern Go's `regexp.Compile` refuses; `message` is Go's `err.Error()`. */
export class RegexpSyntaxError extends Error {
  override name = 'RegexpSyntaxError';
}

/** A compiled tenant pattern: `test` and `exec` search unanchored, as Go's `MatchString`. */
export type TenantRegExp = RE2;

interface CacheEntry { re?: RE2; source?: string; global?: RE2; error?: string }

const cache = new LRUCache<string, CacheEntry>({
  max: REGEXP_CACHE_MAX_ENTRIES,
  maxSize: REGEXP_CACHE_MAX_PATTERN_CHARS,
  sizeCalculation: (_v, pattern) => pattern.length + 1,
});

/** Go regexp/syntax error texts, by the C++ RE2 `RegexpStatus::CodeText` they replace. */
const GO_ERROR_CODES: ReadonlyMap<string, string> = new Map([
  ['unexpected error', 'regexp/syntax: internal error'],
  ['invalid escape sequence', 'invalid escape sequence'],
  ['invalid character class', 'invalid character class'],
  ['invalid character class range', 'invalid character class range'],
  ['missing ]', 'missing closing ]'],
  ['missing )', 'missing closing )'],
  ['unexpected )', 'unexpected )'],
  ['trailing \\', 'trailing backslash at end of expression'],
  ['no argument for repetition operator', 'missing argument to repetition operator'],
  ['invalid repetition size', 'invalid repeat count'],
  ['bad repetition operator', 'invalid nested repetition operator'],
  ['invalid perl operator', 'invalid or unsupported Perl syntax'],
  ['invalid UTF-8', 'invalid UTF-8'],
  ['invalid named capture group', 'invalid named capture'],
]);

function goError(code: string, arg: string): RegexpSyntaxError {
  return new RegexpSyntaxError(`error parsing regexp: ${code}: \`${arg}\``);
}

/**
 * Checks the parts of Go's syntax the binding would read differently, and rewrites `\Q…\E` into
 * escaped literals. Returns the source to hand to RE2.
 * @throws {RegexpSyntaxError} where Go's parser refuses what the binding would accept
 */
function goSource(pattern: string): string {
  let out = '';
  let inClass = false;
  let depth = 0;
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i]!;
    if (c === '\\') {
      const n = pattern[i + 1];
      if (n === undefined) { out += c; i++; continue; }
      if (n === 'Q' && !inClass) {
        const end = pattern.indexOf('\\E', i + 2);
        const lit = pattern.slice(i + 2, end < 0 ? undefined : end);
        for (const ch of lit) out += /[0-9A-Za-z_]/.test(ch) || ch.codePointAt(0)! > 0x7f ? ch : `\\${ch}`;
        i = end < 0 ? pattern.length : end + 2;
        continue;
      }
      if (n === 'u' || n === 'c' || n === 'C') throw goError('invalid escape sequence', `\\${n}`);
      if ((n === 'p' || n === 'P') && pattern[i + 2] === '{') {
        const close = pattern.indexOf('}', i + 3);
        if (close > 0) {
          const name = pattern.slice(i + 3, close);
          if (KNOWN_LONG_NAMES.has(name) || name.startsWith('Script=') || name.startsWith('sc=')) {
            throw goError('invalid character class range', pattern.slice(i, close + 1));
          }
          out += pattern.slice(i, close + 1);
          i = close + 1;
          continue;
        }
      }
      out += c + n;
      i += 2;
      continue;
    }
    if (inClass) {
      if (c === '[' && pattern[i + 1] === ':') {
        const close = pattern.indexOf(':]', i + 2);
        if (close > 0) { out += pattern.slice(i, close + 2); i = close + 2; continue; }
      }
      if (c === ']') inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++; // a leading ']' is a literal
      out += pattern.slice(i, j);
      i = j;
      continue;
    }
    if (c === '(') {
      if (++depth > MAX_NESTING) throw new RegexpSyntaxError(`error parsing regexp: expression nests too deeply: \`${pattern}\``);
    } else if (c === ')') depth = Math.max(0, depth - 1);
    out += c;
    i++;
  }
  return out;
}

/** The binding's table of long general-category names (`\p{Uppercase_Letter}` → `\p{Lu}`). */
const KNOWN_LONG_NAMES = new Set([
  'Uppercase_Letter', 'Lowercase_Letter', 'Titlecase_Letter', 'Cased_Letter', 'Modifier_Letter', 'Other_Letter', 'Letter',
  'Nonspacing_Mark', 'Spacing_Mark', 'Enclosing_Mark', 'Mark', 'Decimal_Number', 'Letter_Number', 'Other_Number', 'Number',
  'Connector_Punctuation', 'Dash_Punctuation', 'Open_Punctuation', 'Close_Punctuation', 'Initial_Punctuation',
  'Final_Punctuation', 'Other_Punctuation', 'Punctuation', 'Math_Symbol', 'Currency_Symbol', 'Modifier_Symbol',
  'Other_Symbol', 'Symbol', 'Space_Separator', 'Line_Separator', 'Paragraph_Separator', 'Separator', 'Control', 'Format',
  'Surrogate', 'Private_Use', 'Unassigned', 'Other',
]);

/**
 * Go's text for an error of C++ RE2 (`<code text>: <arg>`). Go 1.22+ reads `(?<` as the start of
 * a named group, so `(?<=`/`(?<!` are `invalid named capture` there (up to the next `>`, or the
 * rest of the pattern), not `invalid perl operator`.
 */
function goErrorText(pattern: string, re2Message: string): string {
  if (re2Message === 'pattern too large - compile failed') return `error parsing regexp: expression too large: \`${pattern}\``;
  if (re2Message === 'duplicate capture group name') return `error parsing regexp: duplicate capture group name`;
  const sep = re2Message.indexOf(': ');
  const code = sep < 0 ? re2Message : re2Message.slice(0, sep);
  const arg = sep < 0 ? '' : re2Message.slice(sep + 2);
  if (code === 'invalid perl operator' && (arg === '(?<=' || arg === '(?<!')) {
    const rest = pattern.slice(pattern.indexOf(arg));
    const end = rest.indexOf('>');
    return `error parsing regexp: invalid named capture: \`${end < 0 ? rest : rest.slice(0, end + 1)}\``;
  }
  if (code === 'trailing \\') return 'error parsing regexp: trailing backslash at end of expression: ``';
  const goCode = GO_ERROR_CODES.get(code);
  return goCode ? `error parsing regexp: ${goCode}: \`${arg}\`` : `error parsing regexp: ${re2Message}`;
}

function compile(pattern: string): CacheEntry {
  try {
    const source = goSource(pattern);
    return { re: new RE2(source, 'u'), source };
  } catch (err) {
    if (err instanceof RegexpSyntaxError) return { error: err.message };
    return { error: goErrorText(pattern, (err as Error).message) };
  }
}

function entry(pattern: string): CacheEntry {
  let e = cache.get(pattern);
  if (!e) {
    e = compile(pattern);
    cache.set(pattern, e);
  }
  return e;
}

/**
 * Compiles a tenant-supplied pattern as Go's `regexp.Compile` does, with RE2 (matching time is
 * linear in the input). Cached (see the module doc for the bound).
 * @throws {RegexpSyntaxError} Go's error (`error parsing regexp: …`) for a pattern Go refuses
 */
export function tenantRegExp(pattern: string): TenantRegExp {
  const e = entry(pattern);
  if (!e.re) throw new RegexpSyntaxError(e.error);
  return e.re;
}

/** How many compiled patterns (and refused ones) the cache holds now, at most {@link REGEXP_CACHE_MAX_ENTRIES}. */
export function cachedPatternCount(): number {
  return cache.size;
}

/** Go's `regexp.Compile` error text for `pattern` (`error parsing regexp: …`), or undefined when Go accepts it. */
export function regexpError(pattern: string): string | undefined {
  return entry(pattern).error;
}

/** Markers wrapped around each match by {@link findAllStrings} (private-use code points). */
const OPEN = '\uE000';
const CLOSE = '\uE001';

/**
 * Go's `(*Regexp).FindAllString(s, n)`: the successive non-overlapping matches of `pattern` in
 * `s`, at most `n` of them (all when `n < 0`, none when `n == 0`). As in Go, the search moves on by
 * one code point after an empty match, and an empty match right where the previous match ended
 * is skipped (JavaScript keeps it). Linear in `s`: one native pass wraps every match in marker
 * code points (≈ 0.4 µs a match; an `exec` loop costs ≈ 10 µs a match), then the markers are
 * read back; a string that contains the markers itself takes the `exec` loop.
 * @throws {RegexpSyntaxError} for a pattern Go refuses
 */
export function findAllStrings(pattern: string, s: string, n = -1): string[] {
  const e = entry(pattern);
  if (!e.re) throw new RegexpSyntaxError(e.error);
  if (n === 0) return [];
  const global = (e.global ??= new RE2(e.source!, 'gu'));
  const out: string[] = [];
  const full = () => n >= 0 && out.length >= n;
  if (!s.includes(OPEN) && !s.includes(CLOSE)) {
    global.lastIndex = 0;
    const wrapped = global.replace(s, `${OPEN}$&${CLOSE}`);
    let prevClose = -2;
    for (let at = wrapped.indexOf(OPEN); at >= 0 && !full(); at = wrapped.indexOf(OPEN, prevClose + 1)) {
      const close = wrapped.indexOf(CLOSE, at + 1);
      const m = wrapped.slice(at + 1, close);
      if (m !== '' || at !== prevClose + 1) out.push(m);
      prevClose = close;
    }
    return out;
  }
  const bytes = Buffer.from(s, 'utf8');
  let prevMatchEnd = -1;
  for (let pos = 0; pos <= bytes.length && !full();) {
    global.lastIndex = pos;
    const m = global.exec(bytes);
    if (!m) break;
    const start = m.index;
    const end = start + m[0].length;
    let accept = true;
    if (end === pos) {
      // An empty match: none right after a previous match; step over one (UTF-8 encoded) code point.
      if (start === prevMatchEnd) accept = false;
      pos += pos < bytes.length ? utf8Width(bytes[pos]!) : 1;
    } else {
      pos = end;
    }
    prevMatchEnd = end;
    if (accept) out.push(m[0].toString('utf8'));
  }
  return out;
}

/** Go `FindString`: the leftmost match of `pattern` in `s`, or `''`. @throws {RegexpSyntaxError} */
export function findString(pattern: string, s: string): string {
  return tenantRegExp(pattern).exec(s)?.[0] ?? '';
}

/** Byte length of the UTF-8 sequence that starts with `lead` (1 for a stray continuation byte). */
function utf8Width(lead: number): number {
  if (lead >= 0xf0) return 4;
  if (lead >= 0xe0) return 3;
  if (lead >= 0xc0) return 2;
  return 1;
}
