/**
 * The upstream suite's shim (test/upstream/shim.ts) in front of a real server: it answers exactly
 * `GET …/api/v1/namespaces/default/services/kubernetes` with a ClusterIP Service and passes every
 * other request through with its own credentials (a bearer token here), other Service paths
 * included; a watch's response headers reach the client before any event (client-go's Watch
 * returns on headers; an empty watch must not hang).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request, Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, createWorkspace, startRedis, startTestServer, type TestRedis, type TestServer } from '../helpers.js';
import { startShim, type RunningShim } from '../upstream/shim.js';

let redis: TestRedis;
let srv: TestServer;
let shim: RunningShim;
const TOKEN = 'upstream-shim-test-token';

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-shim-'));
  writeFileSync(join(dir, 'tokens.csv'), `${TOKEN},kcp-admin,kcp-admin,"system:kcp:admin"\n`);
  redis = await startRedis();
  const root = join(dir, 'kcp');
  srv = await startTestServer(redis, { tokenAuthFile: join(dir, 'tokens.csv') }, root);
  shim = await startShim({
    upstream: srv.url, caPem: srv.caPem,
    certPem: readFileSync(join(root, 'apiserver.crt'), 'utf8'), keyPem: readFileSync(join(root, 'apiserver.key'), 'utf8'),
  });
  await createWorkspace(srv, 'shim');
});
after(async () => { await shim?.stop(); await srv?.stop(); await redis?.stop(); });

const viaShim = (method: string, path: string, headers: Record<string, string> = {}) =>
  call(shim, { ca: srv.caPem }, method, path, undefined, { authorization: `Bearer ${TOKEN}`, ...headers });

test('answers the kubernetes Service of default, and only that', async () => {
  const before = shim.answered();
  const svc = await viaShim('GET', '/clusters/root:shim/api/v1/namespaces/default/services/kubernetes');
  assert.equal(svc.status, 200);
  assert.equal(svc.json.kind, 'Service');
  assert.equal(svc.json.spec.clusterIP, '10.0.0.1');
  assert.equal(shim.answered(), before + 1);
  // Everything else reaches the server: other Services are not served there, so 404 as the server says.
  const other = await viaShim('GET', '/clusters/root:shim/api/v1/namespaces/default/services/other');
  assert.equal(other.status, 404);
  const write = await viaShim('DELETE', '/clusters/root:shim/api/v1/namespaces/default/services/kubernetes');
  assert.equal(write.status, 404);
  assert.equal(shim.answered(), before + 1);
});

test('passes requests through with the client\'s credentials, bodies and status codes', async () => {
  const ns = await call(shim, { ca: srv.caPem }, 'POST', '/clusters/root:shim/api/v1/namespaces', { metadata: { name: 'through' } }, { authorization: `Bearer ${TOKEN}` });
  assert.equal(ns.status, 201);
  const direct = await call(srv, srv.creds, 'GET', '/clusters/root:shim/api/v1/namespaces/through');
  assert.equal(direct.json.metadata.uid, ns.json.metadata.uid);
  const anonymous = await call(shim, { ca: srv.caPem }, 'GET', '/clusters/root:shim/api/v1/namespaces');
  assert.equal(anonymous.status, 401, 'the shim adds no identity of its own');
  const bad = await viaShim('GET', '/clusters/root:shim/api/v1/namespaces', { authorization: 'Bearer wrong' });
  assert.equal(bad.status, 401);
});

test('a watch with no events yet gets its headers at once, then streams events', async () => {
  // A selector nothing matches yet (the namespace holds kube-root-ca.crt): no initial events.
  const path = '/clusters/root:shim/api/v1/namespaces/through/configmaps?watch=1&labelSelector=shim%3Dyes';
  const started = Date.now();
  const events: string[] = [];
  const { status, close } = await new Promise<{ status: number; close: () => void }>((resolve, reject) => {
    const req = request(shim.url + path, { ca: srv.caPem, agent: new Agent(), headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.on('data', (c: Buffer) => events.push(...c.toString().split('\n').filter(Boolean)));
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
    });
    req.on('error', () => undefined);
    setTimeout(() => reject(new Error('no watch headers through the shim within 3 s')), 3000).unref();
    req.end();
  });
  try {
    assert.equal(status, 200);
    assert.ok(Date.now() - started < 3000);
    await call(srv, srv.creds, 'POST', '/clusters/root:shim/api/v1/namespaces/through/configmaps', { metadata: { name: 'seen', labels: { shim: 'yes' } } });
    const deadline = Date.now() + 5000;
    while (!events.some((e) => e.includes('"seen"')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(events.some((e) => JSON.parse(e).type === 'ADDED' && e.includes('"seen"')), events.join('\n'));
  } finally { close(); }
});
