/**
 * HTTP/2 with HTTP/1.1 fallback on shards and the front-proxy (src/server/serving.ts), as
 * kube-apiserver serves: ALPN offers `h2` then `http/1.1`; SETTINGS_MAX_CONCURRENT_STREAMS is
 * `--http2-max-streams-per-connection` (1,000); requests and watches of one client share one
 * connection (client-go's informers: test/tools/e2e/cmd/h2informer); watches and large LISTs
 * stream on HTTP/2 as on HTTP/1.1; errors are Status objects on both; no connection-specific
 * header on an HTTP/2 response; GOAWAY on shutdown. kubectl 1.32 on PATH and the versioned
 * 1.27 / 1.33 are checked to negotiate HTTP/2.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect as h2connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { Agent, request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { startInstance, type RunningInstance } from '../../src/server/instance.js';
import { adminCreds, startRedis, startTestServer, useTestServer, versionedKubectl, type Creds, type TestServer } from '../helpers.js';
import { e2eToolPaths, missingToolMessage } from '../upstream/tools.js';

/** Headers RFC 9113 §8.2.2 forbids in HTTP/2. */
const CONNECTION_SPECIFIC = ['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade'];

function session(url: string, creds: Creds): Promise<ClientHttp2Session> {
  const s = h2connect(url, { ca: creds.ca, cert: creds.cert, key: creds.key });
  s.on('error', () => undefined);
  return new Promise((resolve, reject) => { s.once('remoteSettings', () => resolve(s)); s.once('error', reject); });
}

interface H2Res { status: number; headers: IncomingHttpHeaders; body: string; json: any }

function h2request(s: ClientHttp2Session, method: string, path: string, body?: unknown): Promise<H2Res> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const st = s.request({ ':method': method, ':path': path, ...(payload ? { 'content-type': 'application/json' } : {}) }, { endStream: payload === undefined });
    if (payload) st.end(payload);
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    st.on('response', (h) => { headers = h; });
    st.on('data', (c: Buffer) => chunks.push(c));
    st.on('error', reject);
    st.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      let json;
      try { json = JSON.parse(text); } catch { json = undefined; }
      resolve({ status: Number(headers[':status']), headers, body: text, json });
    });
  });
}

/** A watch over an HTTP/2 stream: its events as they arrive, and how the stream ended. */
function h2watch(s: ClientHttp2Session, path: string) {
  const events: any[] = [];
  let buf = '';
  let headers: IncomingHttpHeaders = {};
  const st = s.request({ ':method': 'GET', ':path': path }, { endStream: true });
  const response = new Promise<IncomingHttpHeaders>((r) => st.once('response', (h) => { headers = h; r(h); }));
  st.setEncoding('utf8');
  st.on('data', (c: string) => {
    buf += c;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1); if (line.trim()) events.push(JSON.parse(line)); }
  });
  const ended = new Promise<{ clean: boolean; rstCode: number }>((resolve) => {
    let clean = false;
    st.once('end', () => { clean = true; });
    st.once('close', () => resolve({ clean, rstCode: st.rstCode ?? 0 }));
    st.on('error', () => undefined);
  });
  return {
    events, response, ended, get headers() { return headers; }, close: () => st.close(constants.NGHTTP2_CANCEL),
    async waitFor(pred: (e: any[]) => boolean, ms = 8000) {
      const end = Date.now() + ms;
      while (!pred(events) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      assert.ok(pred(events), `watch events: ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`);
    },
  };
}

/** An HTTPS/1.1 request (ALPN `http/1.1` only); resolves with the protocol version and the body. */
function h1request(url: string, creds: Creds, path: string): Promise<{ status: number; httpVersion: string; headers: Record<string, unknown>; body: string }> {
  const u = new URL(url + path);
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, ca: creds.ca, cert: creds.cert, key: creds.key, ALPNProtocols: ['http/1.1'], agent: new Agent({ keepAlive: false }) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, httpVersion: res.httpVersion, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Runs a program; resolves with its exit code and output. */
function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { env: { ...process.env, ...env }, timeout: 110_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function kubeconfigFor(server: string, creds: Creds): string {
  const path = join(mkdtempSync(join(tmpdir(), 'h2-kubeconfig-')), 'kubeconfig');
  writeFileSync(path, buildKubeconfig({
    clusters: [{ name: 'c', server, caPem: creds.ca }], users: [{ name: 'u', certPem: creds.cert, keyPem: creds.key }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c',
  }), { mode: 0o600 });
  return path;
}

/** h2informer (50 informers of one clientset) against `server`; returns its RESULT. */
async function informers(server: string, creds: Creds, env: NodeJS.ProcessEnv = {}): Promise<{ dials: number; protocols: Record<string, number>; watches: number; events: number }> {
  const { h2Informer } = e2eToolPaths();
  assert.ok(existsSync(h2Informer), missingToolMessage(h2Informer, 'h2informer'));
  const r = await run(h2Informer, ['--kubeconfig', kubeconfigFor(server, creds), '--watches', '50', '--timeout', '90s'], env);
  assert.equal(r.code, 0, `h2informer failed:\n${r.stderr}${r.stdout}`);
  const m = /^RESULT (.*)$/m.exec(r.stdout);
  assert.ok(m, r.stdout);
  return JSON.parse(m[1]!);
}

function assertNoConnectionHeaders(headers: IncomingHttpHeaders): void {
  for (const h of CONNECTION_SPECIFIC) assert.equal(headers[h], undefined, `${h} on an HTTP/2 response`);
}

describe('a shard', () => {
  let srv: TestServer;
  useTestServer((s) => { srv = s; });

  test('ALPN offers h2 then http/1.1; SETTINGS_MAX_CONCURRENT_STREAMS is 1000; answers and errors are the same on both', async () => {
    const s = await session(srv.url, srv.creds);
    try {
      assert.equal(s.alpnProtocol, 'h2');
      assert.equal(s.remoteSettings.maxConcurrentStreams, 1000);
      const ok = await h2request(s, 'GET', '/clusters/root/api/v1/namespaces/default');
      assert.equal(ok.status, 200);
      assert.equal(ok.json.kind, 'Namespace');
      assertNoConnectionHeaders(ok.headers);
      const missing = await h2request(s, 'GET', '/clusters/root/api/v1/namespaces/nope');
      assert.equal(missing.status, 404);
      assert.deepEqual([missing.json.kind, missing.json.reason, missing.json.code], ['Status', 'NotFound', 404]);
      const bad = await h2request(s, 'POST', '/clusters/root/api/v1/namespaces', { kind: 'Namespace', apiVersion: 'v1', metadata: {} });
      assert.equal(bad.status, 422);
      assert.equal(bad.json.reason, 'Invalid');
      // Unauthenticated on HTTP/2 too: a client without a certificate is 401, not the previous user.
      const anon = h2connect(srv.url, { ca: srv.creds.ca });
      anon.on('error', () => undefined);
      try { assert.equal((await h2request(anon, 'GET', '/clusters/root/api/v1/namespaces')).status, 401); } finally { anon.close(); }
    } finally { s.close(); }
    const h1 = await h1request(srv.url, srv.creds, '/clusters/root/api/v1/namespaces/nope');
    assert.equal(h1.httpVersion, '1.1');
    assert.equal(h1.status, 404);
    assert.equal(JSON.parse(h1.body).reason, 'NotFound');
  });

  test('requests and 50 watches share one HTTP/2 connection; watches stream events and end cleanly; a watch on HTTP/1.1 is chunked', async () => {
    const s = await session(srv.url, srv.creds);
    try {
      assert.equal((await h2request(s, 'POST', '/clusters/root/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h2w' } })).status, 201);
      const watches = Array.from({ length: 50 }, () => h2watch(s, '/clusters/root/api/v1/namespaces/h2w/configmaps?watch=1&timeoutSeconds=3'));
      for (const w of watches) assert.equal(Number((await w.response)[':status']), 200);
      assertNoConnectionHeaders(watches[0]!.headers);
      assert.equal(watches[0]!.headers['content-type'], 'application/json');
      const gets = await Promise.all(Array.from({ length: 60 }, () => h2request(s, 'GET', '/clusters/root/api/v1/namespaces/h2w')));
      assert.ok(gets.every((g) => g.status === 200));
      assert.equal((await h2request(s, 'POST', '/clusters/root/api/v1/namespaces/h2w/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } })).status, 201);
      for (const w of watches) await w.waitFor((e) => e.some((x) => x.type === 'ADDED' && x.object.metadata.name === 'one'));
      // timeoutSeconds ends each watch with END_STREAM, not a reset.
      for (const w of watches) assert.deepEqual(await w.ended, { clean: true, rstCode: constants.NGHTTP2_NO_ERROR });
      assert.equal(s.closed, false);
    } finally { s.close(); }
    const h1 = await h1request(srv.url, srv.creds, '/clusters/root/api/v1/namespaces/h2w/configmaps?watch=1&timeoutSeconds=1');
    assert.equal(h1.httpVersion, '1.1');
    assert.equal(h1.headers['transfer-encoding'], 'chunked');
    assert.match(h1.body, /"type":"ADDED".*"name":"one"/);
  });

  test('a large LIST streams in slices over HTTP/2 to a client that reads slowly', async () => {
    const s = await session(srv.url, srv.creds);
    try {
      assert.equal((await h2request(s, 'POST', '/clusters/root/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h2list' } })).status, 201);
      const big = 'x'.repeat(8 * 1024);
      for (let i = 0; i < 120; i += 20) {
        await Promise.all(Array.from({ length: 20 }, (_, k) => h2request(s, 'POST', '/clusters/root/api/v1/namespaces/h2list/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i + k}` }, data: { big } })));
      }
      // ~1 MiB, over the stream window (256 KiB): the server waits for the client's reads.
      const st = s.request({ ':method': 'GET', ':path': '/clusters/root/api/v1/namespaces/h2list/configmaps' }, { endStream: true });
      const chunks: Buffer[] = [];
      let headers: IncomingHttpHeaders = {};
      st.on('response', (h) => { headers = h; });
      st.pause();
      await new Promise((r) => setTimeout(r, 300));
      const body = await new Promise<string>((resolve, reject) => {
        st.on('data', (c: Buffer) => chunks.push(c));
        st.on('end', () => resolve(Buffer.concat(chunks).toString()));
        st.on('error', reject);
        st.resume();
      });
      assert.equal(Number(headers[':status']), 200);
      assertNoConnectionHeaders(headers);
      assert.ok(body.length > 900_000, `${body.length} bytes`);
      assert.equal(JSON.parse(body).items.filter((i: any) => i.metadata.name.startsWith('cm-')).length, 120);
    } finally { s.close(); }
  });

  test('client-go: an informer per namespace, 50 watches, over one TCP connection with HTTP/2; DISABLE_HTTP2 falls back to HTTP/1.1', { timeout: 240_000 }, async () => {
    const h2 = await informers(`${srv.url}/clusters/root`, srv.creds);
    assert.equal(h2.events, 50);
    assert.equal(h2.dials, 1, JSON.stringify(h2));
    assert.deepEqual(Object.keys(h2.protocols), ['HTTP/2.0']);
    const h1 = await informers(`${srv.url}/clusters/root`, srv.creds, { DISABLE_HTTP2: '1' });
    assert.equal(h1.events, 50);
    assert.deepEqual(Object.keys(h1.protocols), ['HTTP/1.1']);
    // One connection per open watch on HTTP/1.1.
    assert.ok(h1.dials >= 50, JSON.stringify(h1));
  });

  for (const version of ['', '1.27', '1.33']) {
    test(`kubectl ${version || '(PATH)'} negotiates HTTP/2 and works over it`, async () => {
      const bin = version ? versionedKubectl(version) : 'kubectl';
      const cache = mkdtempSync(join(tmpdir(), 'kubectl-cache-'));
      const r = await run(bin, ['--kubeconfig', srv.kubeconfigPath, '--cache-dir', cache, 'get', 'namespaces', '-o', 'name'], { GODEBUG: 'http2debug=1', HOME: cache });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /namespace\/default/);
      // The server's SETTINGS as Go's HTTP/2 transport received them, then requests on that connection.
      assert.match(r.stderr, /http2: Transport received SETTINGS.*MAX_CONCURRENT_STREAMS=1000/);
      assert.match(r.stderr, /http2: Transport encoding header ":path" = "\/clusters\/root\/api\/v1\/namespaces/);
      assert.doesNotMatch(r.stderr, /http2: Transport.*(PROTOCOL_ERROR|GOAWAY)/);
    });
  }
});

describe('shard settings and shutdown', () => {
  test('--http2-max-streams-per-connection is advertised; 0 offers HTTP/1.1 only; stop sends GOAWAY and ends watches cleanly', async () => {
    const redis = await startRedis();
    let srv: TestServer | undefined;
    let h1only: TestServer | undefined;
    try {
      srv = await startTestServer(redis, { http2MaxStreamsPerConnection: 7 });
      const s = await session(srv.url, srv.creds);
      assert.equal(s.remoteSettings.maxConcurrentStreams, 7);
      const w = h2watch(s, '/clusters/root/api/v1/namespaces?watch=1');
      assert.equal(Number((await w.response)[':status']), 200);
      const goaway = new Promise<number>((r) => s.once('goaway', (code) => r(code)));
      await srv.stop();
      assert.equal(await goaway, constants.NGHTTP2_NO_ERROR);
      assert.equal((await w.ended).clean, true);
      s.close();

      const redis2Root = mkdtempSync(join(tmpdir(), 'kcp-root-'));
      h1only = await startTestServer(redis, { http2MaxStreamsPerConnection: 0, rootDirectory: redis2Root }, redis2Root);
      const creds = adminCreds(redis2Root);
      const u = new URL(h1only.url);
      const alpn = await new Promise<string | false>((resolve, reject) => {
        const sock = tlsConnect({ host: u.hostname, port: Number(u.port), ca: creds.ca, ALPNProtocols: ['h2', 'http/1.1'], servername: 'localhost' }, () => { resolve(sock.alpnProtocol); sock.destroy(); });
        sock.on('error', reject);
      });
      assert.equal(alpn, 'http/1.1');
      assert.equal((await h1request(h1only.url, creds, '/clusters/root/api/v1/namespaces/default')).status, 200);
    } finally {
      await srv?.stop();
      await h1only?.stop();
      await redis.stop();
    }
  });
});

describe('the front-proxy', () => {
  let inst: RunningInstance;
  let creds: Creds;
  let root: string;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'kcp-h2-inst-'));
    inst = await startInstance({ rootDirectory: root, shards: 2, securePort: 0 });
    creds = adminCreds(root);
  });
  after(async () => { await inst?.stop(); });

  test('serves HTTP/2 (and HTTP/1.1); a watch of a workspace streams through it over HTTP/2 and ends cleanly', async () => {
    const s = await session(inst.url, creds);
    try {
      assert.equal(s.alpnProtocol, 'h2');
      assert.equal(s.remoteSettings.maxConcurrentStreams, 1000);
      // A workspace, on whichever shard the scheduler picks (the proxy routes by path).
      const made = await h2request(s, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', {
        apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'h2p' },
      });
      assert.equal(made.status, 201, made.body);
      const deadline = Date.now() + 15_000;
      while ((await h2request(s, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/h2p')).json?.status?.phase !== 'Ready') {
        assert.ok(Date.now() < deadline, 'workspace not Ready');
        await new Promise((r) => setTimeout(r, 100));
      }
      const unknown = await h2request(s, 'GET', '/clusters/root:nope/api/v1/namespaces');
      assert.equal(unknown.status, 403);
      assert.equal(unknown.json.kind, 'Status');
      assertNoConnectionHeaders(unknown.headers);
      let ns;
      const nsDeadline = Date.now() + 10_000;
      while ((ns = await h2request(s, 'POST', '/clusters/root:h2p/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } })).status !== 201) {
        assert.ok(Date.now() < nsDeadline, ns.body);
        await new Promise((r) => setTimeout(r, 100));
      }
      const w = h2watch(s, '/clusters/root:h2p/api/v1/namespaces/w/configmaps?watch=1&timeoutSeconds=3');
      assert.equal(Number((await w.response)[':status']), 200);
      assertNoConnectionHeaders(w.headers);
      for (const name of ['a', 'b']) assert.equal((await h2request(s, 'POST', '/clusters/root:h2p/api/v1/namespaces/w/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } })).status, 201);
      await w.waitFor((e) => e.filter((x) => x.type === 'ADDED').length === 2);
      assert.deepEqual(await w.ended, { clean: true, rstCode: constants.NGHTTP2_NO_ERROR });
      const listed = await h2request(s, 'GET', '/clusters/root:h2p/api/v1/namespaces/w/configmaps');
      assert.deepEqual(listed.json.items.map((i: any) => i.metadata.name).filter((n: string) => n !== 'kube-root-ca.crt'), ['a', 'b']);
    } finally { s.close(); }
    const h1 = await h1request(inst.url, creds, '/clusters/root:h2p/api/v1/namespaces/w/configmaps?watch=1&timeoutSeconds=1');
    assert.equal(h1.httpVersion, '1.1');
    assert.equal(h1.status, 200);
    assert.match(h1.body, /"name":"a"/);
  });

  test('client-go through the proxy: 50 informers over one HTTP/2 connection', { timeout: 240_000 }, async () => {
    const r = await informers(`${inst.url}/clusters/root:h2p`, creds);
    assert.equal(r.events, 50);
    assert.equal(r.dials, 1, JSON.stringify(r));
    assert.deepEqual(Object.keys(r.protocols), ['HTTP/2.0']);
  });

  test('stopping the proxy sends GOAWAY; an open watch through it ends', async () => {
    const s = await session(inst.url, creds);
    const w = h2watch(s, '/clusters/root:h2p/api/v1/namespaces/w/configmaps?watch=1');
    assert.equal(Number((await w.response)[':status']), 200);
    const goaway = new Promise<number>((r) => s.once('goaway', (code) => r(code)));
    await inst.proxy.stop();
    assert.equal(await goaway, constants.NGHTTP2_NO_ERROR);
    await w.ended;
    s.close();
  });
});
