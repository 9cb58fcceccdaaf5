import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SmallMap } from '../../src/storage/watchcache.js';

test('SmallMap behaves as a Map of string keys through one key, several keys and deletions', () => {
  const m = new SmallMap<number>();
  assert.equal(m.size, 0);
  assert.equal(m.get(''), undefined);
  assert.equal(m.delete(''), false);
  m.set('', 1); // '' is a key like any other (cluster-scoped objects' namespace)
  assert.equal(m.size, 1);
  assert.equal(m.get(''), 1);
  m.set('', 2);
  assert.deepEqual([m.size, m.get('')], [1, 2]);
  assert.equal(m.delete('x'), false);
  m.set('b', 3); m.set('a', 4);
  assert.deepEqual(m.keys(), ['', 'b', 'a'], 'insertion order');
  assert.deepEqual(m.values(), [2, 3, 4]);
  assert.equal(m.delete(''), true);
  assert.deepEqual([m.size, m.get(''), m.get('a')], [2, undefined, 4]);
  const one = new SmallMap<string>();
  one.set('n', 'v');
  assert.equal(one.delete('n'), true);
  assert.deepEqual([one.size, one.keys(), one.values(), one.get('n')], [0, [], [], undefined]);
});
