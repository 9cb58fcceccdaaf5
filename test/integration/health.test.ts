/**
 * `/version`, `/livez`, `/readyz`, `/healthz` at the server's base and under every
 * `/clusters/<path>` (as kcp), in kube-apiserver's form: `?verbose` lists the checks, `?exclude`
 * skips some, `/livez/<check>` runs one, and a failing check is listed and answers 500.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, eventually, startRedis, startTestServer, sleep, useTestServer, type Kubectl, type TestServer } from '../helpers.js';

let srv: TestServer;
let kubectl: Kubectl;
useTestServer((s, _r, kc) => { srv = s; kubectl = kc; });

describe('health and version under every base', () => {
  test('kubectl version on the default context (root) reports the server version', async () => {
    const r = await kubectl(['version', '-o', 'json']);
    const v = JSON.parse(r.stdout);
    assert.equal(v.serverVersion.major, '1');
    assert.match(v.serverVersion.gitVersion, /\+kcp-ts-/);
  });

  for (const base of ['', '/clusters/root', '/clusters/system:admin']) {
    test(`${base || '/'}: version, livez, readyz, healthz answer ok`, async () => {
      const version = await call(srv, srv.creds, 'GET', `${base}/version`);
      assert.equal(version.status, 200);
      assert.equal(version.json.gitVersion.startsWith('v1.'), true);
      for (const e of ['livez', 'readyz', 'healthz']) {
        const r = await call(srv, srv.creds, 'GET', `${base}/${e}`);
        assert.equal(r.status, 200, `${base}/${e}: ${r.body}`);
        assert.equal(r.body, 'ok');
        assert.match(String(r.headers['content-type']), /^text\/plain/);
      }
    });
  }

  test('?verbose lists the checks as kube does', async () => {
    const live = await call(srv, srv.creds, 'GET', '/clusters/root/livez?verbose');
    assert.equal(live.body, '[+]ping ok\nlivez check passed\n');
    const ready = await call(srv, srv.creds, 'GET', '/readyz?verbose');
    assert.equal(ready.body, '[+]ping ok\n[+]redis ok\n[+]watch-cache ok\n[+]poststarthook/bootstrap-shard ok\n[+]shutdown ok\nreadyz check passed\n');
  });

  test('?exclude skips a check and warns about names that match none; /readyz/<check> runs one', async () => {
    const r = await call(srv, srv.creds, 'GET', '/readyz?verbose&exclude=redis&exclude=nope');
    assert.match(r.body, /^\[\+\]ping ok\n\[\+\]redis excluded: ok\n/);
    assert.match(r.body, /warn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n$/);
    const one = await call(srv, srv.creds, 'GET', '/clusters/root/readyz/watch-cache');
    assert.equal(one.status, 200);
    assert.equal(one.body, 'ok');
    assert.equal((await call(srv, srv.creds, 'GET', '/readyz/no-such-check')).status, 404);
  });

  test('under a cluster path: authentication required, unknown workspaces refused as for any request', async () => {
    const anon = await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/version');
    assert.equal(anon.status, 401);
    assert.equal(anon.json.reason, 'Unauthorized');
    assert.equal((await call(srv, { ca: srv.creds.ca }, 'GET', '/livez')).status, 200, 'the base stays public for probes');
    const unknown = await call(srv, srv.creds, 'GET', '/clusters/root:no-such-workspace/version');
    assert.equal(unknown.status, 403);
    assert.equal(unknown.json.kind, 'Status');
  });
});

test('a failing check: /readyz and /healthz answer 500 listing it (reason withheld), /livez stays ok, then recovery', async () => {
  const redis = await startRedis();
  const s = await startTestServer(redis);
  try {
    redis.kill9();
    const ready = await eventually('/readyz fails', async () => { const r = await call(s, s.creds, 'GET', '/readyz'); return r.status === 500 && r; });
    assert.equal(ready.body, '[+]ping ok\n[-]redis failed: reason withheld\n[+]watch-cache ok\n[+]poststarthook/bootstrap-shard ok\n[+]shutdown ok\nreadyz check failed\n');
    const one = await call(s, { ca: s.creds.ca }, 'GET', '/readyz/redis');
    assert.equal(one.status, 500);
    assert.match(one.body, /^internal server error: storage Redis connection is /);
    assert.equal((await call(s, { ca: s.creds.ca }, 'GET', '/healthz')).status, 500);
    assert.equal((await call(s, { ca: s.creds.ca }, 'GET', '/livez')).status, 200);
    assert.equal((await call(s, { ca: s.creds.ca }, 'GET', '/readyz?exclude=redis')).status, 200);
    await redis.restart();
    let r = await call(s, { ca: s.creds.ca }, 'GET', '/readyz');
    for (let i = 0; i < 100 && r.status !== 200; i++) { await sleep(50); r = await call(s, { ca: s.creds.ca }, 'GET', '/readyz'); }
    assert.equal(r.status, 200);
  } finally {
    await s.stop();
    await redis.stop();
  }
});
