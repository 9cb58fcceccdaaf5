/**
 * The protocol-neutral helpers of src/server/serving.ts and the `--http2-max-streams-per-connection`
 * flag: header lines kept apart on HTTP/2 as HTTP/1.1's headersDistinct keeps them (request-header
 * authentication reads each X-Remote-Group line as one group), pseudo-headers left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServingServer, headersDistinctOf, HTTP2_TEARDOWN_STREAMS_PER_TURN, type AnyRequest } from '../../src/server/serving.js';
import { http2StreamsFlag } from '../../src/cli/flags.js';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { connect, constants } from 'node:http2';
import { connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

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
  let resetHandled = 0;
  const server = createServingServer({ tls: { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem }, http2MaxStreamsPerConnection: 1000 }, (req, res) => {
    assert.ok((req as { stream?: unknown }).stream, 'an HTTP/2 request (Node\'s compatibility object)');
    if (req.url?.startsWith('/clusters/b/')) {
      resetHandled++;
      // 1 ms of work each, as a request's filters: a turn's intake budget starts a few, the rest
      // wait (however the client's frames were split into reads).
      const t = performance.now();
      while (performance.now() - t < 1) { /* busy */ }
    }
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
    const reset = Array.from({ length: 500 }, (_, i) => { const s = session.request({ ':path': `/clusters/b/${i}` }); s.on('error', () => undefined); s.end(); return s; });
    for (const s of reset) s.close(constants.NGHTTP2_CANCEL);
    const after = await get('/clusters/c/after');
    assert.equal(after, '/clusters/c/after', 'the server still answers');
    assert.ok(resetHandled < 250, `${resetHandled} of the 500 reset streams handled`);
  } finally {
    session.destroy();
    await new Promise((r) => server.close(r));
  }
});

test('HTTP/2: a client dropping 600 open responses (one connection closed or reset, three closed at once) costs the server at most 50 stream closes per turn; every one closes, then the sessions', async () => {
  const ca = await createCA('test-ca');
  const serving = await issueServingCert(ca, { commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: [] });
  // The turn of the event loop each response closed in: a counter advanced once per turn.
  let turn = 0;
  let ticking = true;
  const tick = () => { turn++; if (ticking) setImmediate(tick); };
  tick();
  let open = 0;
  let closes: number[] = [];
  const server = createServingServer({ tls: { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem }, http2MaxStreamsPerConnection: 1000 }, (_req, res) => {
    open++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"type":"BOOKMARK"}\n'); // a watch: answered, never ended
    res.once('close', () => { open--; closes.push(turn); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const N = 600;
  const eventually = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(ok(), what);
  };
  try {
    for (const [how, connections] of [['closed', 1], ['reset', 1], ['closed', 3]] as const) {
      closes = [];
      const tcps: Socket[] = [];
      const sessions = Array.from({ length: connections }, () => connect(`https://localhost:${port}`, {
        ca: ca.certPem, servername: 'localhost',
        createConnection: () => { const tcp = tcpConnect(port, '127.0.0.1'); tcps.push(tcp); return tlsConnect({ socket: tcp, ca: ca.certPem, servername: 'localhost', ALPNProtocols: ['h2'] }); },
      }));
      for (const [k, session] of sessions.entries()) {
        session.on('error', () => undefined);
        for (let i = k; i < N; i += connections) { const s = session.request({ ':path': `/clusters/a/${i}` }); s.on('error', () => undefined); s.on('data', () => undefined); }
      }
      await eventually(`${N} responses open (${how})`, () => open === N);
      // All at once: the server's budget per turn is shared by the connections.
      for (const [k, session] of sessions.entries()) if (how === 'closed') session.destroy(); else tcps[k]!.resetAndDestroy();
      await eventually(`every response closed (${how}): ${open} open`, () => open === 0);
      await eventually(`the session closed (${how})`, () => server.connectionCounts().h2 === 0);
      const perTurn = new Map<number, number>();
      for (const t of closes) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
      const most = Math.max(...perTurn.values());
      assert.ok(most <= 2 * HTTP2_TEARDOWN_STREAMS_PER_TURN, `${how} × ${connections}: ${most} responses closed in one turn`);
      assert.ok(perTurn.size >= N / (2 * HTTP2_TEARDOWN_STREAMS_PER_TURN), `${how} × ${connections}: spread over ${perTurn.size} turns`);
    }
    // The server still serves.
    const session = connect(`https://localhost:${port}`, { ca: ca.certPem, servername: 'localhost' });
    const status = await new Promise<number>((resolve, reject) => {
      const s = session.request({ ':path': '/clusters/b/after' });
      s.once('response', (h) => { resolve(Number(h[':status'])); s.close(); });
      s.on('error', reject);
    });
    session.destroy();
    assert.equal(status, 200);
  } finally {
    ticking = false;
    await new Promise((r) => server.close(r));
  }
});
