/**
 * The protocol-neutral helpers of src/server/serving.ts and the `--http2-max-streams-per-connection`
 * flag: header lines kept apart on HTTP/2 as HTTP/1.1's headersDistinct keeps them (request-header
 * authentication reads each X-Remote-Group line as one group), pseudo-headers left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServingServer, headersDistinctOf, type AnyRequest } from '../../src/server/serving.js';
import { http2StreamsFlag } from '../../src/cli/flags.js';

test('headersDistinctOf: HTTP/2 raw header lines, repeated names kept apart, pseudo-headers dropped; HTTP/1.1 as Node gives it', () => {
  const h2 = { rawHeaders: [':method', 'GET', ':path', '/x', 'x-remote-user', 'alice', 'x-remote-group', 'a,b', 'X-Remote-Group', 'c'] } as unknown as AnyRequest;
  assert.deepEqual(headersDistinctOf(h2), { 'x-remote-user': ['alice'], 'x-remote-group': ['a,b', 'c'] });
  const distinct = { 'x-remote-group': ['g'] };
  assert.equal(headersDistinctOf({ headersDistinct: distinct, rawHeaders: [] } as unknown as AnyRequest), distinct);
});

test('--http2-max-streams-per-connection: an integer from 0 to 2^31-1; the server refuses anything else', () => {
  assert.equal(http2StreamsFlag(undefined), undefined);
  assert.equal(http2StreamsFlag('0'), 0);
  assert.equal(http2StreamsFlag('1000'), 1000);
  for (const bad of ['-1', '1.5', 'x', '', '2147483648']) assert.throws(() => http2StreamsFlag(bad), /invalid --http2-max-streams-per-connection/);
  const tls = { key: '', cert: '', ca: '' };
  assert.throws(() => createServingServer({ tls, http2MaxStreamsPerConnection: -1 }), RangeError);
  assert.throws(() => createServingServer({ tls, http2MaxStreamsPerConnection: 1.5 }), RangeError);
});
