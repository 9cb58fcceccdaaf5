import { test } from 'node:test';
import assert from 'node:assert/strict';
import { duplicateFields } from '../../src/apimachinery/duplicatefields.js';

test('duplicateFields: paths of repeated keys in document order, with list indices', () => {
  assert.deepEqual(duplicateFields('{"a":1,"b":{"c":[1,{"d":2}]}}'), []);
  assert.deepEqual(duplicateFields('{"a":1,"a":2}'), ['a']);
  assert.deepEqual(duplicateFields('{"spec":{"x":1,"y":{"x":1},"x":2}}'), ['spec.x']);
  assert.deepEqual(duplicateFields('{"l":[{"k":1},{"k":1,"k":2}],"z":{},"z":[]}'), ['l[1].k', 'z']);
  assert.deepEqual(duplicateFields('[{"a":1,"a":1}]'), ['[0].a']);
});

test('duplicateFields: strings that look like structure, escaped keys, whitespace', () => {
  assert.deepEqual(duplicateFields('{"a":"{\\"a\\":1,\\"a\\":2}","b":"x,y:z"}'), []);
  assert.deepEqual(duplicateFields('{ "k\\u0041" : 1 ,\n "kA" : 2 }'), ['kA']);
  assert.deepEqual(duplicateFields('{"a\\\\":1,"b":"\\\\","b":2}'), ['b']);
  assert.deepEqual(duplicateFields('{"a":[[],[1,2],{"x":{"x":1}}],"a":0}'), ['a']);
});
