import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/apimachinery/errors.js';
import {
  escapeFieldValue,
  fieldRequiresExactMatch,
  formatFieldSelector,
  matchesFields,
  parseFieldSelector,
  unescapeFieldValue,
} from '../../src/apimachinery/fields.js';

const ALLOWED: ReadonlySet<string> = new Set(['metadata.name', 'metadata.namespace', 'type']);

function assertBadRequest(fn: () => unknown, message: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof StatusError, `expected StatusError, got ${String(err)}`);
    assert.equal(err.code, 400);
    assert.equal(err.reason, 'BadRequest');
    assert.equal(err.message, message);
    return true;
  });
}

test('parse: =, == and != terms joined by commas', () => {
  assert.deepEqual(parseFieldSelector('metadata.name=a', ALLOWED), [{ field: 'metadata.name', operator: '=', value: 'a' }]);
  assert.deepEqual(parseFieldSelector('metadata.namespace!=b,metadata.name==a', ALLOWED), [
    { field: 'metadata.name', operator: '=', value: 'a' },
    { field: 'metadata.namespace', operator: '!=', value: 'b' },
  ]);
  // Empty values and empty terms.
  assert.deepEqual(parseFieldSelector('type=', ALLOWED), [{ field: 'type', operator: '=', value: '' }]);
  assert.deepEqual(parseFieldSelector(',,metadata.name=a,', ALLOWED), [{ field: 'metadata.name', operator: '=', value: 'a' }]);
  assert.deepEqual(parseFieldSelector('', ALLOWED), []);
  assert.deepEqual(parseFieldSelector(',', ALLOWED), []);
  // The first operator splits the term: the rest belongs to the value.
  assert.deepEqual(parseFieldSelector('type=!x', ALLOWED), [{ field: 'type', operator: '=', value: '!x' }]);
});

test('parse: backslash escapes in values (apimachinery UnescapeValue)', () => {
  assert.deepEqual(parseFieldSelector('metadata.name=a\\,b\\=c\\\\d', ALLOWED),
    [{ field: 'metadata.name', operator: '=', value: 'a,b=c\\d' }]);
  assert.equal(unescapeFieldValue('plain'), 'plain');
  assert.equal(unescapeFieldValue('x\\\\y'), 'x\\y');
  assertBadRequest(() => parseFieldSelector('metadata.name=a\\x', ALLOWED), 'invalid field selector: invalid escape sequence: \\x');
  assertBadRequest(() => parseFieldSelector('metadata.name=a\\', ALLOWED), 'invalid field selector: invalid escape sequence: \\');
  // Go prints the offending rune as its number.
  assertBadRequest(() => parseFieldSelector('metadata.name=a=b', ALLOWED), 'invalid field selector: unescaped character in value: 61');
});

test('escape / format round trip', () => {
  const v = 'a,b=c\\d';
  assert.equal(escapeFieldValue(v), 'a\\,b\\=c\\\\d');
  const sel = parseFieldSelector(`metadata.name=${escapeFieldValue(v)},type!=x`, ALLOWED);
  assert.equal(formatFieldSelector(sel), 'metadata.name=a\\,b\\=c\\\\d,type!=x');
  assert.deepEqual(parseFieldSelector(formatFieldSelector(sel), ALLOWED), sel);
});

test('parse: syntax errors', () => {
  assertBadRequest(() => parseFieldSelector('foo', ALLOWED), "invalid selector: 'foo'; can't understand 'foo'");
  assertBadRequest(() => parseFieldSelector('metadata.name=a,b', ALLOWED), "invalid selector: 'metadata.name=a,b'; can't understand 'b'");
});

test('parse: unsupported field labels, as kube-apiserver reports them', () => {
  assertBadRequest(() => parseFieldSelector('spec.nodeName=x', ALLOWED), 'field label not supported: spec.nodeName');
  assertBadRequest(() => parseFieldSelector('metadata.name=a,status.phase!=x', ALLOWED), 'field label not supported: status.phase');
  // No whitespace trimming: " metadata.name" is another label.
  assertBadRequest(() => parseFieldSelector(' metadata.name=a', ALLOWED), 'field label not supported:  metadata.name');
  assertBadRequest(() => parseFieldSelector('metadata.name=a', new Set()), 'field label not supported: metadata.name');
});

test('matches: equality, inequality and missing fields', () => {
  const fields = { 'metadata.name': 'foo', 'metadata.namespace': 'ns', type: 'Opaque' };
  const m = (s: string): boolean => matchesFields(parseFieldSelector(s, ALLOWED), fields);
  assert.equal(m(''), true);
  assert.equal(m('metadata.name=foo'), true);
  assert.equal(m('metadata.name==foo,metadata.namespace=ns'), true);
  assert.equal(m('metadata.name=bar'), false);
  assert.equal(m('metadata.name!=bar'), true);
  assert.equal(m('metadata.name!=foo'), false);
  assert.equal(m('metadata.name=foo,type!=Opaque'), false);
  // A field the object does not have reads as "".
  assert.equal(matchesFields(parseFieldSelector('type=', ALLOWED), { 'metadata.name': 'x' }), true);
  assert.equal(matchesFields(parseFieldSelector('type!=', ALLOWED), { 'metadata.name': 'x' }), false);
});

test('fieldRequiresExactMatch', () => {
  const sel = parseFieldSelector('metadata.namespace!=a,metadata.name=foo', ALLOWED);
  assert.equal(fieldRequiresExactMatch(sel, 'metadata.name'), 'foo');
  assert.equal(fieldRequiresExactMatch(sel, 'metadata.namespace'), undefined);
  assert.equal(fieldRequiresExactMatch(sel, 'type'), undefined);
});
