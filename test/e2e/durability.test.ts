/**
 * `kcp-ts start` as a user runs it (embedded redis-server, AOF appendfsync always): data survives
 * restarts, kill -9 of the server during writes loses no acknowledged write, and while Redis is
 * unreachable requests get 503 and the server recovers without a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, CM, eventually, freePort, sleep, spawnCli, startRedis, startTestServer, stopCli, type CliProcess } from '../helpers.js';

/** `kcp-ts start` on `root` and `port`; resolves once it is ready. */
async function startCli(root: string, port: number): Promise<{ cli: CliProcess; proc: ChildProcess; url: string; output: () => string }> {
  const cli = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
  return { cli, proc: cli.proc, url: await cli.ready, output: cli.output };
}

test('kill -9 during writes loses no acknowledged write; data survives restarts', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-durable-'));
  const port = await freePort();
  let { cli, proc, url } = await startCli(root, port);
  const creds = adminCreds(root);
  const srv = { url };
  const NS = '/clusters/root/api/v1/namespaces/default/configmaps';
  const acked: string[] = [];
  let stop = false;
  const writer = async (w: number) => {
    for (let i = 0; !stop; i++) {
      try {
        const r = await call(srv, creds, 'POST', NS, CM(`w${w}-${i}`, { i: String(i) }));
        if (r.status === 201) acked.push(r.json.metadata.name);
      } catch { /* connection killed */ }
    }
  };
  const writers = Array.from({ length: 8 }, (_, w) => writer(w));
  while (acked.length < 200) await sleep(5);
  proc.kill('SIGKILL');
  await new Promise((r) => proc.once('exit', r));
  stop = true;
  await Promise.all(writers);
  assert.ok(acked.length >= 200);

  ({ cli, proc, url } = await startCli(root, port));
  const list = await call({ url }, creds, 'GET', NS);
  assert.equal(list.status, 200);
  const stored = new Set(list.json.items.map((i: any) => i.metadata.name));
  const lost = acked.filter((n) => !stored.has(n));
  assert.deepEqual(lost, [], `acknowledged writes lost after kill -9: ${lost.length}`);
  // Clean shutdown, then a third start still has everything.
  assert.equal(await stopCli(cli), 0);
  ({ cli, proc, url } = await startCli(root, port));
  const again = await call({ url }, creds, 'GET', NS);
  // kube-root-ca.crt (the root CA publisher's) may appear between the two lists.
  const written = (items: any[]) => items.filter((i) => i.metadata.name !== 'kube-root-ca.crt').length;
  assert.equal(written(again.json.items), written(list.json.items));
  assert.equal(await stopCli(cli), 0);
});

test('an embedded redis-server that dies is started again: data kept, controllers work on', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-redis-restart-'));
  const port = await freePort();
  const { cli, url, output } = await startCli(root, port);
  const creds = adminCreds(root);
  const srv = { url };
  const NS = '/clusters/root/api/v1/namespaces/default/configmaps';
  const WS = '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces';
  try {
    assert.equal((await call(srv, creds, 'POST', NS, CM('before'))).status, 201);
    for (const dir of ['redis', 'redis-queue']) process.kill(Number(readFileSync(join(root, dir, 'redis.pid'), 'utf8')), 'SIGKILL');
    const r = await eventually('a write accepted again', async () => { const w = await call(srv, creds, 'POST', NS, CM('after')); return w.status === 201 && w; }, 10_000);
    assert.equal(r.status, 201, r.body);
    assert.equal((await call(srv, creds, 'GET', `${NS}/before`)).status, 200, 'the acknowledged write survived (AOF)');
    // The queue instance came back empty: informers enqueued again, a new workspace gets Ready.
    assert.equal((await call(srv, creds, 'POST', WS, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'after-restart' } })).status, 201);
    const phase = await eventually('after-restart Ready', async () => {
      const p: string | undefined = (await call(srv, creds, 'GET', `${WS}/after-restart`)).json.status?.phase;
      return p === 'Ready' && p;
    }, 10_000);
    assert.equal(phase, 'Ready');
    assert.match(output(), /embedded storage redis-server: exited unexpectedly \(signal SIGKILL\); starting it again/);
    assert.match(output(), /embedded queue redis-server: running again/);
  } finally {
    assert.equal(await stopCli(cli), 0);
  }
});

test('missing redis-server gives one clear line and a non-zero exit', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-noredis-'));
  const cli = spawnCli(['start', '--root-directory', root, '--secure-port', '0'], { env: { ...process.env, PATH: '/nonexistent' } });
  assert.equal(await cli.exited, 1);
  assert.match(cli.output(), /redis-server was not found on PATH: install it .*apt-get install redis-server.* or pass --redis-url/);
});

test('Redis unreachable → 503, then recovery without restart', async () => {
  const redis = await startRedis();
  const srv = await startTestServer(redis);
  try {
    const NS = '/clusters/root/api/v1/namespaces/default/configmaps';
    assert.equal((await call(srv, srv.creds, 'POST', NS, CM('before'))).status, 201);
    redis.kill9();
    await sleep(200);
    const down = await call(srv, srv.creds, 'POST', NS, CM('during'));
    assert.equal(down.status, 503, down.body);
    assert.equal(down.json.reason, 'ServiceUnavailable');
    assert.equal((await call(srv, srv.creds, 'GET', `${NS}/before`)).status, 503);
    await redis.restart();
    let r = { status: 0 } as Awaited<ReturnType<typeof call>>;
    for (let i = 0; i < 100 && r.status !== 201; i++) { r = await call(srv, srv.creds, 'POST', NS, CM('after')); if (r.status !== 201) await sleep(100); }
    assert.equal(r.status, 201);
    const list = await call(srv, srv.creds, 'GET', NS);
    assert.deepEqual(list.json.items.map((i: any) => i.metadata.name).filter((n: string) => n !== 'kube-root-ca.crt').sort(), ['after', 'before']);
  } finally {
    await srv.stop();
    await redis.stop();
  }
});

test('a server whose Redis is down still stops, within seconds', async () => {
  const redis = await startRedis();
  const srv = await startTestServer(redis);
  try {
    redis.kill9();
    await sleep(300);
    const t0 = Date.now();
    const outcome = await Promise.race([srv.stop().then(() => 'stopped'), sleep(20_000).then(() => 'still stopping')]);
    assert.equal(outcome, 'stopped');
    // Bounded by the queue thread's graceful close (5 s), not by Redis.
    assert.ok(Date.now() - t0 < 15_000, `stop took ${Date.now() - t0} ms`);
  } finally {
    await redis.stop();
  }
});

test('kill -9 of Redis during writes loses no acknowledged write (AOF appendfsync always)', async () => {
  const redis = await startRedis();
  const srv = await startTestServer(redis);
  try {
    const NS = '/clusters/root/api/v1/namespaces/default/configmaps';
    const acked: string[] = [];
    let stop = false;
    let failures = 0;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const r = await call(srv, srv.creds, 'POST', NS, CM(`r${w}-${i}`));
        if (r.status === 201) acked.push(r.json.metadata.name);
        else if (r.status === 503) { failures++; await sleep(20); }
        else throw new Error(`unexpected ${r.status}: ${r.body}`);
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    while (acked.length < 300) await sleep(5);
    redis.kill9();
    await sleep(300);
    await redis.restart();
    const before = acked.length;
    while (acked.length < before + 100) await sleep(10);
    stop = true;
    await Promise.all(writers);
    assert.ok(failures > 0, 'writes failed with 503 while Redis was down');
    const list = await call(srv, srv.creds, 'GET', NS);
    const stored = new Set(list.json.items.map((i: any) => i.metadata.name));
    const lost = acked.filter((n) => !stored.has(n));
    assert.deepEqual(lost, [], `acknowledged writes lost: ${lost.length} of ${acked.length}`);
  } finally {
    await srv.stop();
    await redis.stop();
  }
});

test('kill -9 while workspaces are being created: after a restart every acknowledged workspace becomes Ready, with one logical cluster each', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-durable-ws-'));
  const port = await freePort();
  let { cli, proc, url } = await startCli(root, port);
  const creds = adminCreds(root);
  const WS = '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces';
  const body = (name: string) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
  const acked: string[] = [];
  let stop = false;
  const writer = async (w: number) => {
    for (let i = 0; !stop; i++) {
      try {
        const r = await call({ url }, creds, 'POST', WS, body(`w${w}-${i}`));
        if (r.status === 201) acked.push(r.json.metadata.name);
      } catch { /* connection killed */ }
    }
  };
  const writers = Array.from({ length: 4 }, (_, w) => writer(w));
  while (acked.length < 60) await sleep(5);
  proc.kill('SIGKILL'); // mid-flight: some workspaces unscheduled, some half scheduled
  await new Promise((r) => proc.once('exit', r));
  stop = true;
  await Promise.all(writers);

  ({ cli, proc, url } = await startCli(root, port));
  try {
    const deadline = Date.now() + 40_000;
    let items: any[] = [];
    for (;;) {
      items = (await call({ url }, creds, 'GET', WS)).json.items;
      if (items.every((w) => w.status?.phase === 'Ready') || Date.now() > deadline) break;
      await sleep(200);
    }
    const names = new Set(items.map((w) => w.metadata.name));
    assert.deepEqual(acked.filter((n) => !names.has(n)), [], 'acknowledged workspaces lost');
    assert.deepEqual(items.filter((w) => w.status?.phase !== 'Ready').map((w) => w.metadata.name), [], 'not Ready after restart');
    for (const w of items) {
      const ns = await call({ url }, creds, 'GET', `/clusters/root:${w.metadata.name}/api/v1/namespaces/default`);
      assert.equal(ns.status, 200, `root:${w.metadata.name} has its default namespace`);
    }
    const masters = adminCreds(root, 'system-admin');
    const lcs = (await call({ url }, masters, 'GET', '/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters')).json.items;
    const owned = lcs.filter((l: any) => l.spec.owner?.resource === 'workspaces');
    assert.equal(owned.length, items.length, 'one logical cluster per workspace, no leftovers');
  } finally {
    assert.equal(await stopCli(cli), 0);
  }
});
