import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/apimachinery/errors.js';
import {
  formatLabelSelector,
  labelSelectorFromMetav1,
  labelSelectorToMetav1,
  matchesLabels,
  parseLabelSelector,
  validateLabelKey,
  validateLabelValue,
  validateQualifiedName,
} from '../../src/apimachinery/labels.js';

/** Asserts that `fn` throws a 400 BadRequest StatusError whose message is `message` (or matches it). */
function assertBadRequest(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof StatusError, `expected StatusError, got ${String(err)}`);
    assert.equal(err.code, 400);
    assert.equal(err.reason, 'BadRequest');
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

const match = (sel: string, labels: Record<string, string> | undefined): boolean =>
  matchesLabels(parseLabelSelector(sel), labels);

test('parse: good strings round-trip through the canonical form (apimachinery TestSelectorParse)', () => {
  for (const s of ['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=', 'x= ', 'x=,z= ', 'x= ,z= ', '!x', 'x>1', 'x>1,z<5']) {
    assert.equal(formatLabelSelector(parseLabelSelector(s)), s.replaceAll(' ', ''), s);
  }
});

test('parse: requirements are sorted by key and values collected as a sorted set', () => {
  assert.deepEqual(parseLabelSelector('x notin (abc,,def),bar,z in (),w'), [
    { key: 'bar', operator: 'exists', values: [] },
    { key: 'w', operator: 'exists', values: [] },
    { key: 'x', operator: 'notin', values: ['', 'abc', 'def'] },
    { key: 'z', operator: 'in', values: [''] },
  ]);
  assert.deepEqual(parseLabelSelector('x in (a,,a,,a,,a,,)'), [{ key: 'x', operator: 'in', values: ['', 'a'] }]);
  assert.deepEqual(parseLabelSelector('x in (abc,abc)'), [{ key: 'x', operator: 'in', values: ['abc'] }]);
  assert.deepEqual(parseLabelSelector('x notin (, a)'), [{ key: 'x', operator: 'notin', values: ['', 'a'] }]);
  // `in` and `notin` are plain identifiers inside a value list.
  assert.deepEqual(parseLabelSelector('a in (x,y,notin, z,in)'), [
    { key: 'a', operator: 'in', values: ['in', 'notin', 'x', 'y', 'z'] },
  ]);
  assert.deepEqual(parseLabelSelector('x==a,y!=b'), [
    { key: 'x', operator: '==', values: ['a'] },
    { key: 'y', operator: '!=', values: ['b'] },
  ]);
});

test('parse: whitespace (space, tab, CR, LF) between tokens is ignored', () => {
  assert.deepEqual(parseLabelSelector('\rx'), [{ key: 'x', operator: 'exists', values: [] }]);
  assert.deepEqual(parseLabelSelector('foo  in\t (abc)'), [{ key: 'foo', operator: 'in', values: ['abc'] }]);
  assert.deepEqual(parseLabelSelector('x notin\n (abc)'), [{ key: 'x', operator: 'notin', values: ['abc'] }]);
  assert.deepEqual(parseLabelSelector(' a , b = c '), [
    { key: 'a', operator: 'exists', values: [] },
    { key: 'b', operator: '=', values: ['c'] },
  ]);
  assert.deepEqual(parseLabelSelector('   '), []);
});

test('parse: prefixed keys', () => {
  assert.deepEqual(parseLabelSelector('this-is-another-dns.domain.com/key-with-dash in (so,what)'), [
    { key: 'this-is-another-dns.domain.com/key-with-dash', operator: 'in', values: ['so', 'what'] },
  ]);
  assert.deepEqual(parseLabelSelector('0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)'), [
    { key: '0.1.2.domain/99', operator: 'notin', values: ['10.10.100.1', 'tick.tack.clock'] },
  ]);
});

test('parse: syntax errors are 400s with apimachinery messages', () => {
  assertBadRequest(() => parseLabelSelector('x==a==b'), "found '==', expected: ',' or 'end of string'");
  assertBadRequest(() => parseLabelSelector('!x=a'), "found '=', expected: ',' or 'end of string'");
  assertBadRequest(() => parseLabelSelector('x,,y'), "found ',', expected: identifier after ','");
  assertBadRequest(() => parseLabelSelector('a in (xyz),'), "found '', expected: identifier after ','");
  assertBadRequest(() => parseLabelSelector(',x,y'), "found ',', expected: !, identifier, or 'end of string'");
  assertBadRequest(() => parseLabelSelector('('), "found '(', expected: !, identifier, or 'end of string'");
  assertBadRequest(() => parseLabelSelector('a in (xyz)b notin ()'), "found 'b', expected: ',' or 'end of string'");
  assertBadRequest(() => parseLabelSelector('x nott in (y)'),
    "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt");
  assertBadRequest(() => parseLabelSelector('a ('), "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt");
  assertBadRequest(() => parseLabelSelector('a in (xyz abc)'), "unable to parse requirement: found 'abc', expected: ',' or ')'");
  assertBadRequest(() => parseLabelSelector('a notin('), "unable to parse requirement: found '', expected: ',', ')' or identifier");
  assertBadRequest(() => parseLabelSelector('x in'), "unable to parse requirement: found '' expected: '('");
  assertBadRequest(() => parseLabelSelector('x<a'),
    `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`);
  assertBadRequest(() => parseLabelSelector('x>99999999999999999999'), /the value must be an integer/);
});

test('parse: invalid keys and values are rejected', () => {
  assertBadRequest(() => parseLabelSelector('Key_=a'),
    /^unable to parse requirement: <nil>: Invalid value: "Key_": name part must consist of alphanumeric characters/);
  assertBadRequest(() => parseLabelSelector('a/b/c'), /Invalid value: "a\/b\/c": a valid label key must consist/);
  assertBadRequest(() => parseLabelSelector('a=-b'),
    /^unable to parse requirement: values\[0\]\[a\]: Invalid value: "-b": a valid label must be an empty string/);
  assertBadRequest(() => parseLabelSelector('x=a||y=b'), /Invalid value: "a\|\|y"/);
  assertBadRequest(() => parseLabelSelector(`a=${'v'.repeat(64)}`), /must be no more than 63 bytes/);
});

test('matches: equality, set-based and existence (apimachinery TestSelectorMatches)', () => {
  assert.equal(match('', { x: 'y' }), true);
  assert.equal(match('x=y', { x: 'y' }), true);
  assert.equal(match('x=y,z=w', { x: 'y', z: 'w' }), true);
  assert.equal(match('x!=y,z!=w', { x: 'z', z: 'a' }), true);
  assert.equal(match('notin=in', { notin: 'in' }), true);
  assert.equal(match('x', { x: 'z' }), true);
  assert.equal(match('!x', { y: 'z' }), true);
  assert.equal(match('x>1', { x: '2' }), true);
  assert.equal(match('x<1', { x: '0' }), true);
  assert.equal(match('x=z', {}), false);
  assert.equal(match('x=y', { x: 'z' }), false);
  assert.equal(match('x=y,z=w', { x: 'w', z: 'w' }), false);
  assert.equal(match('x!=y,z!=w', { x: 'z', z: 'w' }), false);
  assert.equal(match('x', { y: 'z' }), false);
  assert.equal(match('!x', { x: 'z' }), false);
  assert.equal(match('x>1', { x: '0' }), false);
  assert.equal(match('x<1', { x: '2' }), false);
  assert.equal(match('z>1', { z: 'v2' }), false);
  assert.equal(match('z>1', {}), false);
});

test('matches: in / notin, absent keys and undefined label sets', () => {
  const labels = { env: 'prod', tier: 'web' };
  assert.equal(match('env in (prod,staging)', labels), true);
  assert.equal(match('env in (dev)', labels), false);
  assert.equal(match('env notin (dev)', labels), true);
  assert.equal(match('env notin (prod)', labels), false);
  assert.equal(match('missing notin (x)', labels), true); // notin holds when the key is absent
  assert.equal(match('missing in (x)', labels), false);
  assert.equal(match('missing!=x', labels), true);
  assert.equal(match('x notin ()', { y: '' }), true);
  assert.equal(match('x in ()', { x: '' }), true);
  assert.equal(match('y,!x', { y: '' }), true);
  assert.equal(match('env', undefined), false);
  assert.equal(match('!env', undefined), true);
  assert.equal(match('', undefined), true);
  assert.equal(match('toString', {}), false); // no prototype lookups
});

test('labelSelectorFromMetav1: matchLabels and matchExpressions', () => {
  const sel = labelSelectorFromMetav1({
    matchLabels: { app: 'web' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['a', 'b'] },
      { key: 'env', operator: 'NotIn', values: ['dev'] },
      { key: 'owner', operator: 'Exists' },
      { key: 'legacy', operator: 'DoesNotExist' },
    ],
  });
  assert.equal(formatLabelSelector(sel), 'app=web,env notin (dev),!legacy,owner,tier in (a,b)');
  assert.equal(matchesLabels(sel, { app: 'web', tier: 'b', owner: 'me' }), true);
  assert.equal(matchesLabels(sel, { app: 'web', tier: 'b', owner: 'me', legacy: '1' }), false);
  assert.equal(matchesLabels(sel, { app: 'web', tier: 'c', owner: 'me' }), false);
  assert.equal(matchesLabels(sel, { app: 'web', tier: 'a', owner: 'me', env: 'dev' }), false);
  assert.deepEqual(labelSelectorFromMetav1({}), []);
  assert.equal(matchesLabels(labelSelectorFromMetav1({}), { any: 'thing' }), true);
});

test('labelSelectorFromMetav1: invalid selectors', () => {
  assertBadRequest(() => labelSelectorFromMetav1({ matchExpressions: [{ key: 'a', operator: 'Foo' }] }),
    '"Foo" is not a valid label selector operator');
  assertBadRequest(() => labelSelectorFromMetav1({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
    "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty");
  assertBadRequest(() => labelSelectorFromMetav1({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
    'values: Invalid value: ["x"]: values set must be empty for exists and does not exist');
  assertBadRequest(() => labelSelectorFromMetav1({ matchLabels: { 'bad key': 'x' } }), /^key: Invalid value: "bad key"/);
  assertBadRequest(() => labelSelectorFromMetav1({ matchLabels: { a: '-x' } }), /^values\[0\]\[a\]: Invalid value: "-x"/);
});

test('validateLabelKey / validateQualifiedName', () => {
  for (const k of ['a', 'A', 'a-b_c.d', 'example.com/MyName', 'kubernetes.io/metadata.name', '123-abc', 'x'.repeat(63),
    `${'a'.repeat(253)}/b`]) {
    assert.equal(validateLabelKey(k), undefined, k);
    assert.deepEqual(validateQualifiedName(k), [], k);
  }
  assert.deepEqual(validateQualifiedName(''), [
    'name part must be non-empty',
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
      "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  ]);
  assert.deepEqual(validateQualifiedName('/a'), ['prefix part must be non-empty']);
  assert.deepEqual(validateQualifiedName('x'.repeat(64)).slice(0, 1), ['name part must be no more than 63 bytes']);
  assert.match(validateQualifiedName('Example.com/a')[0]!, /^prefix part a lowercase RFC 1123 subdomain must consist of/);
  assert.match(validateQualifiedName(`${'a'.repeat(254)}/b`)[0]!, /^prefix part must be no more than 253 bytes$/);
  assert.match(validateQualifiedName('a/b/c')[0]!, /^a valid label key must consist of .* with an optional DNS subdomain prefix and '\/'/);
  for (const k of ['-a', 'a-', 'a b', 'a/', 'é']) assert.ok(validateLabelKey(k), k);
  // Several problems are joined with "; ".
  assert.match(validateLabelKey('/-a')!, /^prefix part must be non-empty; name part must consist/);
});

test('validateLabelValue', () => {
  for (const v of ['', 'a', 'MyValue', 'my_value', '12345', 'a.b-c_d', 'v'.repeat(63)]) {
    assert.equal(validateLabelValue(v), undefined, v);
  }
  assert.equal(validateLabelValue('-a'),
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end " +
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is " +
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  assert.equal(validateLabelValue('v'.repeat(64)), 'must be no more than 63 bytes');
  assert.match(validateLabelValue(`-${'v'.repeat(64)}`)!, /^must be no more than 63 bytes; a valid label must be/);
  for (const v of ['a b', 'a/b', 'a_', '.a', 'ü']) assert.ok(validateLabelValue(v), v);
});

test('a selector string as a metav1.LabelSelector (ParseToLabelSelector), and back', () => {
  const sel = labelSelectorToMetav1(parseLabelSelector('region=eu,tier==gold,zone in (a,b),env notin (dev),team!=x,ssd,!legacy'));
  assert.deepEqual(sel, {
    matchLabels: { region: 'eu', tier: 'gold' },
    matchExpressions: [
      { key: 'env', operator: 'NotIn', values: ['dev'] },
      { key: 'legacy', operator: 'DoesNotExist' },
      { key: 'ssd', operator: 'Exists' },
      { key: 'team', operator: 'NotIn', values: ['x'] },
      { key: 'zone', operator: 'In', values: ['a', 'b'] },
    ],
  });
  const labels = { region: 'eu', tier: 'gold', zone: 'b', env: 'prod', team: 'y', ssd: '' };
  assert.ok(matchesLabels(labelSelectorFromMetav1(sel), labels));
  assert.ok(!matchesLabels(labelSelectorFromMetav1(sel), { ...labels, legacy: 'true' }));
  assert.throws(() => labelSelectorToMetav1(parseLabelSelector('size>3')), (e: unknown) => e instanceof StatusError && e.code === 400 && /"gt" isn't supported in label selectors/.test(e.message));
});
