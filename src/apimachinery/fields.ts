/**
 * Kubernetes field selectors (the `fieldSelector` query parameter).
 *
 * Parsing, escaping and matching follow k8s.io/apimachinery/pkg/fields (selector.go:
 * `ParseSelector`, `UnescapeValue`, `hasTerm`/`notHasTerm`); rejecting fields a resource does not
 * support follows kube-apiserver, which converts each field label through the scheme
 * (`runtime.Scheme.ConvertFieldLabel`: `field label not supported: <label>`). User documentation:
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/.
 */

import { badRequest } from './errors.js';

/** One term of a field selector: `field=value` / `field==value` (`=`) or `field!=value` (`!=`). */
export interface FieldRequirement {
  readonly field: string;
  readonly operator: '=' | '!=';
  /** The unescaped value. */
  readonly value: string;
}

/** A parsed field selector: the conjunction (AND) of its terms. Empty = matches everything. */
export type FieldSelector = readonly FieldRequirement[];

/** The selector that matches everything (`fields.Everything()`). */
export const EVERYTHING_FIELDS: FieldSelector = Object.freeze([]) as FieldSelector;

/**
 * Splits on unescaped commas; escaped commas stay in the term with their backslash
 * (apimachinery `splitTerms`).
 */
function splitTerms(s: string): string[] {
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inSlash) inSlash = false;
    else if (c === 0x5c /* \ */) inSlash = true;
    else if (c === 0x2c /* , */) {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/**
 * Splits a term at the first operator (`!=`, then `==`, then `=` at each position); the left-hand
 * side has no escaping (apimachinery `splitTerm`).
 */
function splitTerm(term: string): [string, '!=' | '==' | '=', string] | undefined {
  for (let i = 0; i < term.length; i++) {
    const c = term.charCodeAt(i);
    if (c === 0x21 /* ! */ && term.charCodeAt(i + 1) === 0x3d) return [term.slice(0, i), '!=', term.slice(i + 2)];
    if (c === 0x3d /* = */) {
      if (term.charCodeAt(i + 1) === 0x3d) return [term.slice(0, i), '==', term.slice(i + 2)];
      return [term.slice(0, i), '=', term.slice(i + 1)];
    }
  }
  return undefined;
}

/**
 * Unescapes a field selector value: `\\`, `\,` and `\=` stand for `\`, `,` and `=`; any other
 * escape, a trailing `\`, or a bare `,`/`=` is an error (apimachinery `UnescapeValue`).
 *
 * @throws StatusError 400 `invalid field selector: invalid escape sequence: \x` or
 *   `invalid field selector: unescaped character in value: <code point>` (Go prints the rune as a
 *   number).
 */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') out += c;
      else throw badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      inSlash = false;
      continue;
    }
    if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') throw badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else out += c;
  }
  if (inSlash) throw badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** Escapes `\`, `,` and `=` with a backslash so any string can be a selector value (`EscapeValue`). */
export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/**
 * Parses the string form of a field selector, as k8s.io/apimachinery/pkg/fields `ParseSelector`
 * followed by kube-apiserver's field-label check: comma-separated terms `f=v`, `f==v` or `f!=v`;
 * values may escape `\`, `,` and `=` with a backslash; empty terms are ignored; there is no
 * whitespace trimming (as in apimachinery). Terms are checked in sorted order, as apimachinery
 * sorts them before parsing.
 *
 * @param allowed the field labels this resource supports (e.g. `metadata.name`, `metadata.namespace`).
 * @throws StatusError 400 BadRequest:
 *   `invalid selector: '<s>'; can't understand '<term>'` for a term without an operator,
 *   an `invalid field selector: …` escape error, or `field label not supported: <field>`.
 */
export function parseFieldSelector(s: string, allowed: ReadonlySet<string>): FieldSelector {
  if (s.length === 0) return EVERYTHING_FIELDS;
  const parts = splitTerms(s).sort();
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const split = splitTerm(part);
    if (!split) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const [field, op, rhs] = split;
    reqs.push({ field, operator: op === '!=' ? '!=' : '=', value: unescapeFieldValue(rhs) });
  }
  // kube-apiserver converts (and thereby checks) field labels after parsing the whole selector.
  for (const r of reqs) {
    if (!allowed.has(r.field)) throw badRequest(`field label not supported: ${r.field}`);
  }
  return reqs.length === 0 ? EVERYTHING_FIELDS : reqs;
}

/**
 * Whether an object's selectable fields satisfy every term: `=` needs equality, `!=` inequality.
 * A field missing from `fields` reads as the empty string (apimachinery `fields.Set.Get`).
 */
export function matchesFields(sel: FieldSelector, fields: Record<string, string>): boolean {
  for (let i = 0; i < sel.length; i++) {
    const r = sel[i]!;
    const v = Object.prototype.hasOwnProperty.call(fields, r.field) ? fields[r.field]! : '';
    if (r.operator === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/**
 * The value an `=` term requires for `field`, if any (`Selector.RequiresExactMatch`); used to
 * narrow lookups, e.g. `metadata.name`.
 */
export function fieldRequiresExactMatch(sel: FieldSelector, field: string): string | undefined {
  for (const r of sel) if (r.field === field && r.operator === '=') return r.value;
  return undefined;
}

/** The canonical string of a selector (`Selector.String`), values escaped. */
export function formatFieldSelector(sel: FieldSelector): string {
  return sel.map((r) => `${r.field}${r.operator}${escapeFieldValue(r.value)}`).join(',');
}
