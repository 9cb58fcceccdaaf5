import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluateJsonPath, parseJsonPath } from '../../src/apiextensions/jsonpath.js';

const obj = {
  metadata: { name: 'a', labels: { 'app.kubernetes.io/name': 'x' } },
  spec: { replicas: 3, items: [{ n: 1 }, { n: 2 }] },
  status: { conditions: [{ type: 'Ready', status: 'True' }, { type: 'Issuing', status: 'False' }] },
};
const run = (p: string) => evaluateJsonPath(parseJsonPath(p), obj);

test('fields, indexes, wildcards and recursion', () => {
  assert.deepEqual(run('.spec.replicas'), [3]);
  assert.deepEqual(run('{.metadata.name}'), ['a']);
  assert.deepEqual(run(".metadata.labels['app.kubernetes.io/name']"), ['x']);
  assert.deepEqual(run('.spec.items[1].n'), [2]);
  assert.deepEqual(run('.spec.items[-1].n'), [2]);
  assert.deepEqual(run('.spec.items[*].n'), [1, 2]);
  assert.deepEqual(run('..n'), [1, 2]);
  assert.deepEqual(run('.spec.absent'), []);
});

test('a backslash escapes a dot in a field name, as client-go (kcp TMC printer columns use it)', () => {
  assert.deepEqual(run('.metadata.labels.app\\.kubernetes\\.io/name'), ['x']);
  assert.deepEqual(run('{.metadata.labels.app\\.kubernetes\\.io/name}'), ['x']);
  assert.deepEqual(run('.metadata.labels.app.kubernetes.io/name'), []);
});

test('filters as CRD printer columns use them', () => {
  assert.deepEqual(run('.status.conditions[?(@.type=="Ready")].status'), ['True']);
  assert.deepEqual(run('.status.conditions[?(@.type!="Ready")].type'), ['Issuing']);
  assert.deepEqual(run('.spec.items[?(@.n>1)].n'), [2]);
  assert.deepEqual(run('.status.conditions[?(@.status)].type'), ['Ready', 'Issuing']);
});

test('syntax errors throw', () => {
  assert.throws(() => parseJsonPath('.spec[unclosed'));
  assert.throws(() => parseJsonPath('.status.conditions[?(type=="x")]'));
});
