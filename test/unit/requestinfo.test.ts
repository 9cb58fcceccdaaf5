import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRequestInfo, queryBool } from '../../src/endpoints/requestinfo.js';

test('boolean query parameters decode as kube-apiserver decodes them', () => {
  const q = new URLSearchParams('a=true&b=1&c=&d=yes&e=false&f=FALSE&g=0&h=False');
  assert.deepEqual(['a', 'b', 'c', 'd'].map((n) => queryBool(q, n)), [true, true, true, true]);
  assert.deepEqual(['e', 'f', 'g', 'h'].map((n) => queryBool(q, n)), [false, false, false, false]);
  assert.equal(queryBool(q, 'absent'), undefined);
});

test('a list with a true watch parameter is a watch, with a false one a list', () => {
  const verb = (query: string) => parseRequestInfo('GET', '/clusters/root/api/v1/configmaps', new URLSearchParams(query)).verb;
  assert.equal(verb('watch=true'), 'watch');
  assert.equal(verb('watch=1'), 'watch');
  assert.equal(verb('watch=True'), 'watch');
  assert.equal(verb('watch=false'), 'list');
  assert.equal(verb('watch=0'), 'list');
  assert.equal(verb(''), 'list');
  // A name makes it a get whatever the parameter says.
  assert.equal(parseRequestInfo('GET', '/clusters/root/api/v1/namespaces/a/configmaps/x', new URLSearchParams('watch=true')).verb, 'get');
});
