/**
 * Syntax errors of JSON bodies in Go's encoding/json words (what kube-apiserver answers), and
 * kube's summary of an undecodable body.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonSyntaxError, summarizeBody } from '../../src/apimachinery/jsonsyntax.js';

const cases: [string, string | undefined][] = [
  ['{"a":1}', undefined],
  [' [1, -2.5e+3, "x\\u00e9", true, false, null, {}] ', undefined],
  ['0', undefined],
  ['-0.0E9', undefined],
  ['not json', `invalid character 'o' in literal null (expecting 'u')`],
  ['', 'unexpected end of JSON input'],
  ['{"a":', 'unexpected end of JSON input'],
  ['{"metadata": ', 'unexpected end of JSON input'],
  ['x', `invalid character 'x' looking for beginning of value`],
  ['{a:1}', `invalid character 'a' looking for beginning of object key string`],
  ['{"a" 1}', `invalid character '1' after object key`],
  ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
  ['[1 2]', `invalid character '2' after array element`],
  ['{"a":1}}', `invalid character '}' after top-level value`],
  ['{}x', `invalid character 'x' after top-level value`],
  ['"a\nb"', `invalid character '\\n' in string literal`],
  ['"\\x"', `invalid character 'x' in string escape code`],
  ['"\\u12g4"', `invalid character 'g' in \\u hexadecimal character escape`],
  ['-a', `invalid character 'a' in numeric literal`],
  ['1.e5', `invalid character 'e' after decimal point in numeric literal`],
  ['1e+', 'unexpected end of JSON input'],
  ['1ex', `invalid character 'x' in exponent of numeric literal`],
  ['tru', 'unexpected end of JSON input'],
  ['trUe', `invalid character 'U' in literal true (expecting 'u')`],
  ['[1,]', `invalid character ']' looking for beginning of value`],
  ["{'a':1}", `invalid character '\\'' looking for beginning of object key string`],
  ['\u0000', `invalid character '\\x00' looking for beginning of value`],
  ['01', `invalid character '1' after top-level value`],
];

test('jsonSyntaxError reports what Go encoding/json reports', () => {
  for (const [input, want] of cases) {
    assert.equal(jsonSyntaxError(Buffer.from(input)), want, JSON.stringify(input));
    // Agreement with JSON.parse on what is valid.
    let valid = true;
    try { JSON.parse(input); } catch { valid = false; }
    assert.equal(valid, want === undefined, `validity of ${JSON.stringify(input)}`);
  }
  // A UTF-8 byte-order mark is not JSON (as in Go).
  assert.equal(jsonSyntaxError(Buffer.from('\ufeff{}')), `invalid character 'ï' looking for beginning of value`);
});

test('summarizeBody: <empty>, objects as text, anything else as hex, cut at 30 bytes', () => {
  assert.equal(summarizeBody(Buffer.alloc(0)), '<empty>');
  assert.equal(summarizeBody(Buffer.from('not json')), '6e6f74206a736f6e');
  assert.equal(summarizeBody(Buffer.from('{"a":')), '{"a":');
  assert.equal(summarizeBody(Buffer.from(`{"data":"${'x'.repeat(40)}"}`)), '{"data":"xxxxxxxxxxxxxxxxxxxxx ...');
});
