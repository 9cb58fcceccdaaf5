/**
 * The protocol-neutral helpers of src/server/serving.ts and the `--http2-max-streams-per-connection`
 * flag: header lines kept apart on HTTP/2 as HTTP/1.1's headersDistinct keeps them (request-header
 * authentication reads each X-Remote-Group line as one group), pseudo-headers left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServingServer, headersDistinctOf, type AnyRequest } from '../../src/server/serving.js';
import { http2StreamsFlag } from '../../src/cli/flags.js';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { connect, constants } from 'node:http2';
import type { AddressInfo } from 'node:net';

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

test('HTTP/2: a thousand streams opened at once are all answered, their requests built as they start; a stream reset while it waits is dropped', async () => {
  const ca = await createCA('test-ca');
  const serving = await issueServingCert(ca, { commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: [] });
  let handled = 0;
  const server = createServingServer({ tls: { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem }, http2MaxStreamsPerConnection: 1000 }, (req, res) => {
    handled++;
    assert.ok((req as { stream?: unknown }).stream, 'an HTTP/2 request (Node\'s compatibility object)');
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(req.url);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const session = connect(`https://localhost:${port}`, { ca: ca.certPem, servername: 'localhost' });
  try {
    const get = (path: string) => new Promise<string>((resolve, reject) => {
      const s = session.request({ ':path': path });
      let body = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => { body += d; });
      s.on('end', () => resolve(body));
      s.on('error', reject);
      s.end();
    });
    const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => get(`/clusters/a/${i}`)));
    assert.deepEqual(answers, Array.from({ length: 1000 }, (_, i) => `/clusters/a/${i}`));
    // Opened and reset at once: most wait in the intake behind the others and never reach the handler.
    const before = handled;
    const reset = Array.from({ length: 500 }, (_, i) => { const s = session.request({ ':path': `/clusters/b/${i}` }); s.on('error', () => undefined); s.end(); return s; });
    for (const s of reset) s.close(constants.NGHTTP2_CANCEL);
    const after = await get('/clusters/c/after');
    assert.equal(after, '/clusters/c/after', 'the server still answers');
    assert.ok(handled - before < 500, `${handled - before} of the 500 reset streams handled`);
  } finally {
    session.destroy();
    await new Promise((r) => server.close(r));
  }
});
