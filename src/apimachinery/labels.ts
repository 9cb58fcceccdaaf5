/**
 * Kubernetes label selectors and label key/value validation.
 *
 * The string grammar, the parser's error messages and the matching rules follow
 * k8s.io/apimachinery/pkg/labels (selector.go: `Parse`, `NewRequirement`, `Requirement.Matches`);
 * key and value validation follow k8s.io/apimachinery/pkg/api/validate/content (`IsLabelKey`,
 * `IsLabelValue`, `IsDNS1123Subdomain`). The user-facing description is
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/.
 */

import { badRequest } from './errors.js';

/**
 * A requirement's operator, spelled as apimachinery's `selection.Operator`:
 * `in`, `notin`, `=`, `==`, `!=`, `exists`, `!` (does not exist), `gt`, `lt`.
 */
export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

/**
 * One parsed requirement (apimachinery `labels.Requirement`).
 * `values` is sorted and de-duplicated when it comes from the string parser (which collects values
 * in a set), and in the given order when it comes from {@link labelSelectorFromMetav1}.
 */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

/**
 * A parsed label selector: the conjunction (AND) of its requirements, sorted by key as
 * apimachinery sorts them. An empty array selects everything (`labels.Everything()`).
 */
export type LabelSelector = readonly LabelRequirement[];

/** The selector that matches every label set (`labels.Everything()`). */
export const EVERYTHING: LabelSelector = Object.freeze([]) as LabelSelector;

// ---------------------------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/api/validate/content)
// ---------------------------------------------------------------------------------------------

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY_ERR = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE_ERR = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

const LABEL_KEY_RE = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** content.RegexError: `<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')`. */
function regexError(msg: string, re: string, ...examples: string[]): string {
  let s = `${msg} (e.g. `;
  for (let i = 0; i < examples.length; i++) {
    if (i > 0) s += ' or ';
    s += `'${examples[i]}', `;
  }
  return `${s}regex used for validation is '${re}')`;
}

const maxLenError = (n: number): string => `must be no more than ${n} bytes`;

/** Byte length of a string in UTF-8 (Go's `len`). */
function byteLength(s: string): number {
  // Fast path: pure ASCII strings have as many bytes as UTF-16 units.
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/**
 * Validates a DNS-1123 subdomain (lower-case RFC 1123 labels separated by dots, ≤ 253 bytes).
 * Returns the list of problems, empty when valid (apimachinery `content.IsDNS1123Subdomain`).
 */
export function validateDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 253) errs.push(maxLenError(253));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

/**
 * Validates a "qualified name" — the format of label keys, annotation keys and finalizers:
 * an optional DNS-1123 subdomain prefix and `/`, then a name of ≤ 63 characters of
 * `[A-Za-z0-9-_.]` that starts and ends alphanumeric.
 * Returns every problem found (one message each, as apimachinery `content.IsLabelKey` /
 * `validation.IsQualifiedName`), or an empty array when valid.
 */
export function validateQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else for (const m of validateDNS1123Subdomain(prefix)) errs.push(`prefix part ${m}`);
  } else {
    errs.push(`a valid label key ${regexError(LABEL_KEY_ERR, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}` +
      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!LABEL_KEY_RE.test(name)) errs.push(`name part ${regexError(LABEL_KEY_ERR, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/**
 * Validates a label key (a qualified name, see {@link validateQualifiedName}).
 * Returns `undefined` when valid, else the problems joined with `"; "` (as
 * k8s.io/apimachinery/pkg/labels `validateLabelKey` reports them).
 */
export function validateLabelKey(key: string): string | undefined {
  const errs = validateQualifiedName(key);
  return errs.length ? errs.join('; ') : undefined;
}

/**
 * Validates a label value: empty, or ≤ 63 characters of `[A-Za-z0-9-_.]` starting and ending with
 * an alphanumeric character (apimachinery `content.IsLabelValue`).
 * Returns `undefined` when valid, else the problems joined with `"; "`.
 */
export function validateLabelValue(value: string): string | undefined {
  let errs: string | undefined;
  if (byteLength(value) > 63) errs = maxLenError(63);
  if (!LABEL_VALUE_RE.test(value)) {
    const m = regexError(LABEL_VALUE_ERR, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345');
    errs = errs ? `${errs}; ${m}` : m;
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Requirements (labels.NewRequirement)
// ---------------------------------------------------------------------------------------------

/** Go's `%q` for the strings we print (JSON escaping is close enough for error text). */
const quote = (s: string): string => JSON.stringify(s);

const INT64_RE = /^[+-]?[0-9]+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(s, 10, 64): the value, or undefined when not a base-10 int64. */
function parseInt64(s: string): bigint | undefined {
  if (!INT64_RE.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

/**
 * Builds a requirement, validating it as apimachinery `labels.NewRequirement` (with no field path):
 * returns the requirement, or the aggregated error text.
 */
function newRequirement(key: string, op: LabelOperator, values: string[]): LabelRequirement | string {
  const errs: string[] = [];
  const keyErr = validateLabelKey(key);
  if (keyErr) errs.push(`key: Invalid value: ${quote(key)}: ${keyErr}`);
  const badValues = (): string => JSON.stringify(values.length ? values : null);
  switch (op) {
    case 'in': case 'notin':
      if (values.length === 0) errs.push(`values: Invalid value: ${badValues()}: for 'in', 'notin' operators, values set can't be empty`);
      break;
    case '=': case '==': case '!=':
      if (values.length !== 1) errs.push(`values: Invalid value: ${badValues()}: exact-match compatibility requires one single value`);
      break;
    case 'exists': case '!':
      if (values.length !== 0) errs.push(`values: Invalid value: ${badValues()}: values set must be empty for exists and does not exist`);
      break;
    case 'gt': case 'lt':
      if (values.length !== 1) errs.push(`values: Invalid value: ${badValues()}: for 'Gt', 'Lt' operators, exactly one value is required`);
      for (let i = 0; i < values.length; i++) {
        if (parseInt64(values[i]!) === undefined) {
          errs.push(`values[${i}]: Invalid value: ${quote(values[i]!)}: for 'Gt', 'Lt' operators, the value must be an integer`);
        }
      }
      break;
  }
  for (let i = 0; i < values.length; i++) {
    const e = validateLabelValue(values[i]!);
    if (e) errs.push(`values[${i}][${key}]: Invalid value: ${quote(values[i]!)}: ${e}`);
  }
  if (errs.length) {
    const uniq = [...new Set(errs)];
    return uniq.length === 1 ? uniq[0]! : `[${uniq.join(', ')}]`;
  }
  return { key, operator: op, values };
}

const byKey = (a: LabelRequirement, b: LabelRequirement): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

// ---------------------------------------------------------------------------------------------
// Lexer and parser (labels.Lexer / labels.Parser)
// ---------------------------------------------------------------------------------------------

const enum Tok {
  Error, EndOfString, ClosedPar, Comma, DoesNotExist, DoubleEquals, Equals, GreaterThan,
  Identifier, In, LessThan, NotEquals, NotIn, OpenPar,
}

const STRING_TO_TOKEN: ReadonlyMap<string, Tok> = new Map([
  [')', Tok.ClosedPar], [',', Tok.Comma], ['!', Tok.DoesNotExist], ['==', Tok.DoubleEquals],
  ['=', Tok.Equals], ['>', Tok.GreaterThan], ['in', Tok.In], ['<', Tok.LessThan],
  ['!=', Tok.NotEquals], ['notin', Tok.NotIn], ['(', Tok.OpenPar],
]);

const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isSpecial = (c: string): boolean =>
  c === '=' || c === '!' || c === '(' || c === ')' || c === ',' || c === '>' || c === '<';

interface Item { tok: Tok; lit: string }

/** Tokenizes the whole selector (Lexer.Lex until EndOfString). A NUL character ends input, as in Go. */
function scan(s: string): Item[] {
  const items: Item[] = [];
  const n = s.length;
  let pos = 0;
  const at = (i: number): string => (i < n ? s[i]! : '\0');
  for (;;) {
    while (isWhitespace(at(pos))) pos++;
    const ch = at(pos);
    if (ch === '\0') {
      items.push({ tok: Tok.EndOfString, lit: '' });
      return items;
    }
    if (isSpecial(ch)) {
      // Longest special-symbol sequence that is a known token ("!=", "==", ...).
      let buf = '';
      let last: Item | undefined;
      while (pos < n && isSpecial(s[pos]!) && s[pos] !== '\0') {
        buf += s[pos]!;
        const t = STRING_TO_TOKEN.get(buf);
        if (t !== undefined) last = { tok: t, lit: buf };
        else if (last) break;
        pos++;
      }
      items.push(last ?? { tok: Tok.Error, lit: `error expected: keyword found '${buf}'` });
      continue;
    }
    const start = pos;
    while (pos < n && s[pos] !== '\0' && !isSpecial(s[pos]!) && !isWhitespace(s[pos]!)) pos++;
    const word = s.slice(start, pos);
    const t = STRING_TO_TOKEN.get(word);
    items.push({ tok: t ?? Tok.Identifier, lit: word });
  }
}

/** Parser over the scanned items; `Values` context reads `in`/`notin` as identifiers. */
class Parser {
  private position = 0;
  constructor(private readonly items: Item[]) {}

  private lookahead(values: boolean): Item {
    const it = this.items[this.position]!;
    return values && (it.tok === Tok.In || it.tok === Tok.NotIn) ? { tok: Tok.Identifier, lit: it.lit } : it;
  }

  private consume(values: boolean): Item {
    const it = this.lookahead(values);
    this.position++;
    return it;
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead(true);
      switch (tok) {
        case Tok.Identifier:
        case Tok.DoesNotExist: {
          const r = this.parseRequirement();
          if (typeof r === 'string') throw badRequest(`unable to parse requirement: ${r}`);
          reqs.push(r);
          const t = this.consume(true);
          if (t.tok === Tok.EndOfString) return reqs;
          if (t.tok === Tok.Comma) {
            const t2 = this.lookahead(true);
            if (t2.tok !== Tok.Identifier && t2.tok !== Tok.DoesNotExist) {
              throw badRequest(`found '${t2.lit}', expected: identifier after ','`);
            }
          } else {
            throw badRequest(`found '${t.lit}', expected: ',' or 'end of string'`);
          }
          break;
        }
        case Tok.EndOfString:
          return reqs;
        default:
          throw badRequest(`found '${lit}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  /** A requirement, or the error text to wrap in "unable to parse requirement: ". */
  private parseRequirement(): LabelRequirement | string {
    // parseKeyAndInferOperator
    let op: LabelOperator | undefined;
    let t = this.consume(true);
    if (t.tok === Tok.DoesNotExist) {
      op = '!';
      t = this.consume(true);
    }
    if (t.tok !== Tok.Identifier) return `found '${t.lit}', expected: identifier`;
    const key = t.lit;
    const keyErr = validateLabelKey(key);
    if (keyErr) return `<nil>: Invalid value: ${quote(key)}: ${keyErr}`;
    const next = this.lookahead(true).tok;
    if ((next === Tok.EndOfString || next === Tok.Comma) && op !== '!') op = 'exists';
    if (op === 'exists' || op === '!') return newRequirement(key, op, []);

    // parseOperator
    const o = this.consume(false);
    switch (o.tok) {
      case Tok.In: op = 'in'; break;
      case Tok.Equals: op = '='; break;
      case Tok.DoubleEquals: op = '=='; break;
      case Tok.GreaterThan: op = 'gt'; break;
      case Tok.LessThan: op = 'lt'; break;
      case Tok.NotIn: op = 'notin'; break;
      case Tok.NotEquals: op = '!='; break;
      default: return `found '${o.lit}', expected: ${BINARY_OPERATORS}`;
    }
    const values = op === 'in' || op === 'notin' ? this.parseValues() : this.parseExactValue();
    if (typeof values === 'string') return values;
    return newRequirement(key, op, [...values].sort());
  }

  /** `( v1, v2, … )`: a set of values; `()` and empty entries contribute the empty string. */
  private parseValues(): Set<string> | string {
    const t = this.consume(true);
    if (t.tok !== Tok.OpenPar) return `found '${t.lit}' expected: '('`;
    const la = this.lookahead(true);
    switch (la.tok) {
      case Tok.Identifier:
      case Tok.Comma: {
        const s = this.parseIdentifiersList();
        if (typeof s === 'string') return s;
        if (this.consume(true).tok !== Tok.ClosedPar) return `found '${la.lit}', expected: ')'`;
        return s;
      }
      case Tok.ClosedPar:
        this.consume(true);
        return new Set(['']);
      default:
        return `found '${la.lit}', expected: ',', ')' or identifier`;
    }
  }

  private parseIdentifiersList(): Set<string> | string {
    const s = new Set<string>();
    for (;;) {
      const t = this.consume(true);
      if (t.tok === Tok.Identifier) {
        s.add(t.lit);
        const t2 = this.lookahead(true);
        if (t2.tok === Tok.Comma) continue;
        if (t2.tok === Tok.ClosedPar) return s;
        return `found '${t2.lit}', expected: ',' or ')'`;
      }
      if (t.tok === Tok.Comma) {
        if (s.size === 0) s.add(''); // "(,"
        const t2 = this.lookahead(true).tok;
        if (t2 === Tok.ClosedPar) {
          s.add(''); // ",)"
          return s;
        }
        if (t2 === Tok.Comma) s.add(''); // ",,"
        continue;
      }
      return `found '${t.lit}', expected: ',', or identifier`;
    }
  }

  /** The single value after `=`, `==`, `!=`, `>`, `<`; absent means the empty string. */
  private parseExactValue(): Set<string> | string {
    const la = this.lookahead(true).tok;
    if (la === Tok.EndOfString || la === Tok.Comma) return new Set(['']);
    const t = this.consume(true);
    if (t.tok === Tok.Identifier) return new Set([t.lit]);
    return `found '${t.lit}', expected: identifier`;
  }
}

/**
 * Parses the string form of a label selector (the `labelSelector` query parameter), exactly as
 * k8s.io/apimachinery/pkg/labels `Parse`:
 *
 * ```
 * <selector>    ::= <requirement> | <requirement> "," <selector>
 * <requirement> ::= [!] KEY [ <set-based> | <exact-match> ]
 * <set-based>   ::= ("in" | "notin") "(" VALUE ["," VALUE]* ")"
 * <exact-match> ::= ("=" | "==" | "!=" | ">" | "<") VALUE
 * ```
 * Whitespace (space, tab, CR, LF) between tokens is ignored; an empty string selects everything;
 * `>`/`<` take a base-10 integer. Keys must be qualified names and values valid label values.
 *
 * @returns the requirements sorted by key (empty = everything).
 * @throws StatusError 400 BadRequest with apimachinery's message, e.g.
 *   `unable to parse requirement: found '', expected: '('` or
 *   `found ',', expected: !, identifier, or 'end of string'`.
 */
export function parseLabelSelector(s: string): LabelSelector {
  if (s.length === 0) return EVERYTHING;
  const reqs = new Parser(scan(s)).parse();
  return reqs.length === 0 ? EVERYTHING : reqs.sort(byKey);
}

/**
 * Whether a label set satisfies every requirement of the selector (`Selector.Matches`):
 * `in`/`=`/`==` need the key with one of the values; `notin`/`!=` hold when the key is absent or
 * has another value; `exists`/`!` test presence; `gt`/`lt` need the key with an integer value
 * compared numerically. `undefined` labels behave as an empty set.
 */
export function matchesLabels(sel: LabelSelector, labels: Record<string, string> | undefined): boolean {
  for (let i = 0; i < sel.length; i++) {
    const r = sel[i]!;
    const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels![r.key]! : undefined;
    switch (r.operator) {
      case 'in': case '=': case '==':
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case 'notin': case '!=':
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case '!':
        if (has) return false;
        break;
      case 'gt': case 'lt': {
        if (v === undefined || r.values.length !== 1) return false;
        const n = parseInt64(v);
        const bound = parseInt64(r.values[0]!);
        if (n === undefined || bound === undefined) return false;
        if (r.operator === 'gt' ? !(n > bound) : !(n < bound)) return false;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

/**
 * The canonical string of a selector (`Selector.String`): requirements joined by `,`, values of
 * `in`/`notin` sorted, e.g. `a in (x,y),!b,c=d`. The empty selector gives `""`.
 */
export function formatLabelSelector(sel: LabelSelector): string {
  const parts: string[] = [];
  for (const r of sel) {
    const vals = r.values.length === 1 ? r.values[0]! : [...r.values].sort().join(',');
    switch (r.operator) {
      case 'exists': parts.push(r.key); break;
      case '!': parts.push(`!${r.key}`); break;
      case 'in': parts.push(`${r.key} in (${vals})`); break;
      case 'notin': parts.push(`${r.key} notin (${vals})`); break;
      case 'gt': parts.push(`${r.key}>${vals}`); break;
      case 'lt': parts.push(`${r.key}<${vals}`); break;
      default: parts.push(`${r.key}${r.operator}${vals}`);
    }
  }
  return parts.join(',');
}

/** `metav1.LabelSelectorRequirement`. */
export interface LabelSelectorRequirementV1 {
  key: string;
  operator: string;
  values?: string[];
}

/** `metav1.LabelSelector`. */
export interface LabelSelectorV1 {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirementV1[];
}

/**
 * Converts a `metav1.LabelSelector` (as found in object specs: `matchLabels` plus
 * `matchExpressions` with operators `In`, `NotIn`, `Exists`, `DoesNotExist`) into a
 * {@link LabelSelector}, as apimachinery `metav1.LabelSelectorAsSelector`.
 * An empty selector (no labels, no expressions) selects everything. A *missing* (nil) metav1
 * selector selects nothing in Kubernetes; callers must handle that case before calling.
 *
 * @throws StatusError 400 BadRequest for an unknown operator (`"Foo" is not a valid label selector
 *   operator`) or an invalid requirement (bad key/value, `In` without values, values on `Exists`).
 */
export function labelSelectorFromMetav1(sel: LabelSelectorV1): LabelSelector {
  const reqs: LabelRequirement[] = [];
  const ml = sel.matchLabels;
  if (ml) {
    for (const k of Object.keys(ml)) {
      const r = newRequirement(k, '=', [ml[k]!]);
      if (typeof r === 'string') throw badRequest(r);
      reqs.push(r);
    }
  }
  for (const e of sel.matchExpressions ?? []) {
    let op: LabelOperator;
    switch (e.operator) {
      case 'In': op = 'in'; break;
      case 'NotIn': op = 'notin'; break;
      case 'Exists': op = 'exists'; break;
      case 'DoesNotExist': op = '!'; break;
      default: throw badRequest(`${quote(String(e.operator))} is not a valid label selector operator`);
    }
    const r = newRequirement(e.key, op, e.values ? [...e.values] : []);
    if (typeof r === 'string') throw badRequest(r);
    reqs.push(r);
  }
  return reqs.length === 0 ? EVERYTHING : reqs.sort(byKey);
}

/**
 * Converts a parsed selector back into a `metav1.LabelSelector` (apimachinery
 * `metav1.ParseToLabelSelector`): `=`/`==` become `matchLabels`; `in`, `notin` and `!=`, `exists`
 * and `!` become `In`, `NotIn`, `Exists` and `DoesNotExist` expressions.
 *
 * @throws StatusError 400 BadRequest for `gt`/`lt`, which a metav1 selector cannot express.
 */
export function labelSelectorToMetav1(sel: LabelSelector): LabelSelectorV1 {
  const out: LabelSelectorV1 = {};
  const expression = (key: string, operator: string, values?: readonly string[]) => {
    (out.matchExpressions ??= []).push(values ? { key, operator, values: [...values] } : { key, operator });
  };
  for (const r of sel) {
    switch (r.operator) {
      case '=': case '==': (out.matchLabels ??= {})[r.key] = r.values[0]!; break;
      case 'in': expression(r.key, 'In', r.values); break;
      case 'notin': case '!=': expression(r.key, 'NotIn', r.values); break;
      case 'exists': expression(r.key, 'Exists'); break;
      case '!': expression(r.key, 'DoesNotExist'); break;
      default: throw badRequest(`${quote(r.operator)} isn't supported in label selectors`);
    }
  }
  return out;
}
