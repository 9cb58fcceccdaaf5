/**
 * TLS handshake admission (src/server/handshakes.ts) on a real serving server (Node's TLS,
 * certificates from the PKI module): a flood of ClientHellos from one address does not hold up
 * another address's handshake, silent connections hold no slot and are closed after the wait,
 * an address's queue is bounded, and a stalled handshake gives its slot back. The flood comes
 * from 127.0.0.2, the client from 127.0.0.1 (both loopback).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as netConnect, createServer as netServer, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { createServingServer, TLS_HANDSHAKE_TIMEOUT_MS, type ServingServer } from '../../src/server/serving.js';
import { addressKey, DEFAULT_HANDSHAKE_GATE, HandshakeGate, looksLikeHttp, PLAIN_HTTP_ANSWER, type HandshakeGateOptions } from '../../src/server/handshakes.js';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { Metrics } from '../../src/server/metrics.js';
import { eventually } from '../helpers.js';

const ca = await createCA('handshakes-test-ca');
const serving = await issueServingCert(ca, { commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });

async function startServer(handshakes?: Partial<HandshakeGateOptions>, handshakeTimeoutMs?: number): Promise<{ server: ServingServer; port: number }> {
  const server = createServingServer({ tls: { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem }, handshakes, handshakeTimeoutMs }, (req, res) => res.end(`ok ${req.url}`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

async function stop(server: ServingServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

/** A TLS 1.3 ClientHello as Node's client sends it, captured once: sent raw, it costs the sender nothing. */
const clientHello = await new Promise<Buffer>((resolve, reject) => {
  const capture = netServer((s) => s.once('data', (b: Buffer) => { s.destroy(); capture.close(); resolve(b); }));
  capture.listen(0, '127.0.0.1', () => {
    const c = tlsConnect({ port: (capture.address() as AddressInfo).port, host: '127.0.0.1', servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    c.on('error', () => undefined);
  });
  capture.on('error', reject);
});

/** A raw connection from 127.0.0.2 that sends `hello` (or nothing) and never answers the server. */
function rawFrom127002(port: number, hello?: Buffer): { socket: Socket; answered: () => boolean; closed: Promise<void> } {
  let answered = false;
  const socket = netConnect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' }, () => { if (hello) socket.write(hello); });
  socket.on('data', () => { answered = true; });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  return { socket, answered: () => answered, closed };
}

/** One HTTP/1.1 GET over a new TLS connection from 127.0.0.1: the body, or a rejection. */
function getOnNewConnection(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = tlsConnect({ port, host: '127.0.0.1', localAddress: '127.0.0.1', ca: ca.certPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
      c.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    });
    let text = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => { text += d; });
    c.on('end', () => resolve(text.slice(text.indexOf('\r\n\r\n') + 4)));
    c.on('error', reject);
  });
}

test('addressKey: IPv4 as is (also IPv4-mapped), IPv6 by its /64, unknown as empty', () => {
  assert.equal(addressKey('10.1.2.3'), '10.1.2.3');
  assert.equal(addressKey('::ffff:10.1.2.3'), '10.1.2.3');
  assert.equal(addressKey('2001:db8:0:1:aaaa::1'), '2001:db8:0:1::/64');
  assert.equal(addressKey('2001:0db8:0000:0001:bbbb:cccc:dddd:eeee'), '2001:db8:0:1::/64');
  assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  assert.equal(addressKey(undefined), '');
  assert.throws(() => new HandshakeGate({ inFlight: 0 }), RangeError);
  assert.throws(() => new HandshakeGate({ slotMs: 1.5 }), RangeError);
});

test('a flood of ClientHellos from one address: another address\'s handshake and request go first, the flood is answered a few at a time', async () => {
  const { server, port } = await startServer();
  const flood = Array.from({ length: 300 }, () => rawFrom127002(port, clientHello));
  try {
    await eventually('the flood accepted and waiting', async () => server.handshakeStats().waiting >= 250);
    const body = await getOnNewConnection(port, '/clusters/b/x');
    assert.equal(body, 'ok /clusters/b/x');
    const answeredByThen = flood.filter((f) => f.answered()).length;
    // The flood's handshakes never finish (the sender does not answer): each holds one of its
    // address's slots until it times out, so few were answered before the other address's.
    assert.ok(answeredByThen <= 4 * DEFAULT_HANDSHAKE_GATE.inFlightPerAddress, `${answeredByThen} of the flood answered before the other address's request`);
    // The flood is still served, its address's slots freed as they time out.
    await eventually('more of the flood answered', async () => flood.filter((f) => f.answered()).length >= answeredByThen + 8);
    assert.ok(server.handshakeStats().inFlight <= DEFAULT_HANDSHAKE_GATE.inFlight);
  } finally {
    for (const f of flood) f.socket.destroy();
    await stop(server);
  }
});

test('silent connections hold no slot and are closed after helloMs; full queues push out the longest queue\'s, not another address\'s', async () => {
  const { server, port } = await startServer({ helloMs: 600, waiting: 20 });
  const silent = Array.from({ length: 30 }, () => rawFrom127002(port));
  try {
    // 127.0.0.2's own queue is the longest: its newcomers beyond 20 are the ones closed.
    await eventually('20 waiting, 10 refused', async () => server.handshakeStats().waiting === 20 && server.handshakeStats().dropped === 10);
    assert.equal(server.handshakeStats().inFlight, 0, 'no slot held by a connection that sent nothing');
    // Another address's connection, the queues full: one of 127.0.0.2's silent ones makes room.
    assert.equal(await getOnNewConnection(port, '/a'), 'ok /a');
    assert.equal(server.handshakeStats().dropped, 11);
    await Promise.all(silent.map((s) => s.closed));
    assert.equal(silent.filter((s) => s.answered()).length, 0);
    assert.deepEqual({ ...server.handshakeStats(), started: 0 }, { started: 0, dropped: 30, waiting: 0, inFlight: 0 });
    // The same counters in a shard's /metrics.
    const metrics = new Metrics(() => 0, () => 0);
    metrics.observeHandshakes(() => server.handshakeStats());
    const text = await metrics.render();
    assert.match(text, /^kcp_tls_handshakes_dropped_total 30$/m);
    assert.match(text, /^kcp_tls_handshakes_waiting 0$/m);
    assert.match(text, /^kcp_tls_handshakes_in_flight 0$/m);
    assert.match(text, new RegExp(`^kcp_tls_handshakes_started_total ${server.handshakeStats().started}$`, 'm'));
  } finally {
    for (const s of silent) s.socket.destroy();
    await stop(server);
  }
});

test('a burst of connections from one address is served whole when nobody else waits', async () => {
  const { server, port } = await startServer({ waiting: 64 });
  try {
    // 60 at once from one address: under the bound, all wait their turn (4 at a time) and are answered.
    const bodies = await Promise.all(Array.from({ length: 60 }, (_, i) => getOnNewConnection(port, `/burst/${i}`)));
    assert.deepEqual(bodies, Array.from({ length: 60 }, (_, i) => `ok /burst/${i}`));
    assert.equal(server.handshakeStats().dropped, 0);
    assert.ok(server.handshakeStats().started >= 60);
  } finally {
    await stop(server);
  }
});

test('a handshake its client leaves unfinished gives its slot back after slotMs; closing the server closes what waits', async () => {
  const { server, port } = await startServer({ inFlight: 1, slotMs: 150 });
  const stalled = rawFrom127002(port, clientHello);
  try {
    await eventually('the stalled handshake answered', async () => stalled.answered());
    const t0 = performance.now();
    assert.equal(await getOnNewConnection(port, '/b'), 'ok /b');
    // It waited for the stalled handshake's slot (one in all), and only until the slot's time was
    // up, not for the 32 s handshake timeout.
    const waited = performance.now() - t0;
    assert.ok(waited >= 50 && waited < 5_000, `waited ${waited} ms`);
    const waiting = rawFrom127002(port);
    await eventually('a silent connection waiting', async () => server.handshakeStats().waiting === 1);
    server.closeAllConnections();
    await waiting.closed;
    assert.equal(server.handshakeStats().waiting, 0);
  } finally {
    stalled.socket.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('an HTTP/1.1 connection that starts no request within firstRequestTimeoutMs is closed; one serving a long request is not', async () => {
  const server = createServingServer({ tls: { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem }, firstRequestTimeoutMs: 300 }, (req, res) => {
    // A long-running answer (as a watch): headers now, the end after the timeout has passed.
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first ');
    setTimeout(() => res.end(`last ${req.url}`), 900);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const idle = tlsConnect({ port, host: '127.0.0.1', ca: ca.certPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    idle.on('error', () => undefined);
    const t0 = performance.now();
    await new Promise<void>((r) => idle.once('secureConnect', () => r()));
    await new Promise<void>((r) => idle.once('close', () => r()));
    const idleFor = performance.now() - t0;
    assert.ok(idleFor >= 250 && idleFor < 5_000, `closed after ${idleFor} ms`);
    // Sent at once, answered over 900 ms: not cut at 300.
    const body = await getOnNewConnection(port, '/watch');
    // (Chunked: both parts and the last chunk, i.e. the whole answer.)
    assert.match(body, /first [\s\S]*last \/watch\r\n0\r\n\r\n$/);
  } finally {
    await stop(server);
  }
});

test('plain HTTP sent to the TLS port gets Go\'s 400 answer, not a silent close; a TLS client is unaffected', async () => {
  const { server, port } = await startServer();
  try {
    for (const request of ['GET /api HTTP/1.1\r\nHost: localhost\r\n\r\n', 'POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}']) {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = netConnect({ port, host: '127.0.0.1' }, () => s.write(request));
        let text = '';
        s.setEncoding('latin1');
        s.on('data', (d: string) => { text += d; });
        s.on('close', () => resolve(text));
        s.on('error', reject);
      });
      assert.equal(answer, PLAIN_HTTP_ANSWER);
    }
    assert.equal(server.handshakeStats().started, 0, 'no handshake was started for plain HTTP');
    assert.equal(await getOnNewConnection(port, '/after'), 'ok /after');
  } finally {
    await stop(server);
  }
  assert.equal(looksLikeHttp(clientHello), false);
  assert.equal(looksLikeHttp(Buffer.from('OPTIONS * HTTP/1.1')), true);
  assert.equal(looksLikeHttp(Buffer.from('GET')), false);
});

test('a handshake left unfinished is closed after handshakeTimeoutMs (32 s by default, as kube-apiserver), not Node\'s 120 s', async () => {
  assert.equal(TLS_HANDSHAKE_TIMEOUT_MS, 32_000);
  const { server, port } = await startServer({}, 400);
  try {
    // Half a ClientHello: the server waits for the rest until the timeout.
    const partial = rawFrom127002(port, clientHello.subarray(0, clientHello.length >> 1));
    const t0 = performance.now();
    await partial.closed;
    const heldFor = performance.now() - t0;
    assert.ok(heldFor >= 300 && heldFor < 5_000, `closed after ${heldFor} ms`);
    assert.equal(server.handshakeStats().started, 1);
  } finally {
    await stop(server);
  }
});
