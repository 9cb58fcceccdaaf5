/**
 * Shards on a real Redis Cluster: three redis-server masters on loopback joined by
 * `redis-cli --cluster create`. Each shard's keys (objects, revision counter, event stream,
 * controller queues) share its hash tag, so a shard lives in one slot on one master and two
 * shards can live on different masters of one cluster.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { adminCreds, call, eventually, freePort, sleep, watch, CM, type Creds } from '../helpers.js';
import { startServer, type RunningServer } from '../../src/server/shard.js';
import { ensurePki } from '../../src/pki/store.js';

const execFileP = promisify(execFile);
const nodes: { port: number; proc: ChildProcess }[] = [];
let url: string;
let root: string;
let shards: RunningServer[] = [];
let admin: Creds;
let masters: Creds;
let names: string[];

/** Which master (port) holds slot `slot`, from CLUSTER SLOTS. */
async function ownerOf(key: string): Promise<number> {
  const r = new Redis({ port: nodes[0]!.port, lazyConnect: true });
  await r.connect();
  try {
    const slot = Number(await r.call('CLUSTER', 'KEYSLOT', key));
    const ranges = await r.call('CLUSTER', 'SLOTS') as Array<[number, number, [string, number]]>;
    const range = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
    return range![2][1];
  } finally { r.disconnect(); }
}

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-redis-cluster-'));
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', mkdtempSync(join(dir, `n${i}-`)), '--cluster-enabled', 'yes',
      '--cluster-config-file', 'nodes.conf', '--appendonly', 'yes', '--save', ''], { stdio: 'ignore' });
    nodes.push({ port, proc });
  }
  for (const n of nodes) {
    await eventually(`redis-server ${n.port} up`, async () => {
      const r = new Redis({ port: n.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => undefined);
      try { await r.connect(); return (await r.ping()) === 'PONG'; } catch { return false; } finally { r.disconnect(); }
    });
  }
  await execFileP('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);
  await eventually('cluster state ok', async () => {
    const { stdout } = await execFileP('redis-cli', ['-p', String(nodes[0]!.port), 'cluster', 'info']);
    return stdout.includes('cluster_state:ok');
  }, 20_000);
  url = `redis-cluster://127.0.0.1:${nodes[0]!.port}`;
  // Two shard names whose hash tags land on different masters.
  names = ['root'];
  const rootOwner = await ownerOf('{root}');
  for (let i = 1; names.length < 2; i++) if (await ownerOf(`{shard-${i}}`) !== rootOwner) names.push(`shard-${i}`);
  root = mkdtempSync(join(tmpdir(), 'kcp-rc-root-'));
  shards.push(await startServer({ rootDirectory: root, securePort: 0, redisUrl: url }));
  const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
  shards.push(await startServer({
    rootDirectory: mkdtempSync(join(tmpdir(), 'kcp-rc-second-')), pkiDirectory: root, securePort: 0, redisUrl: url, shardName: names[1],
    rootShard: { url: shards[0]!.url, ca: pki.ca.certPem, cert: pki.systemAdmin.certPem, key: pki.systemAdmin.keyPem },
  }));
  admin = adminCreds(root);
  masters = adminCreds(root, 'system-admin');
});

after(async () => {
  for (const s of shards) await s.stop().catch(() => undefined);
  for (const n of nodes) { n.proc.kill('SIGTERM'); await new Promise((r) => n.proc.once('exit', r)); }
});

test('each shard keeps all its keys on one master, the two shards on different masters', async () => {
  for (const name of names) {
    const holders: number[] = [];
    for (const n of nodes) {
      const r = new Redis({ port: n.port, lazyConnect: true });
      await r.connect();
      const [, keys] = await r.scan('0', 'MATCH', `{${name}}:*`, 'COUNT', 100_000);
      r.disconnect();
      if (keys.length) holders.push(n.port);
    }
    assert.deepEqual(holders, [await ownerOf(`{${name}}`)], `keys of ${name} on ${holders.join(', ')}`);
  }
  assert.notEqual(await ownerOf(`{${names[0]}}`), await ownerOf(`{${names[1]}}`));
});

test('writes, watches and controllers work on the cluster; a restarted shard loads its objects from it', async () => {
  const [rootShard] = shards;
  const w = watch(rootShard!, admin, '/clusters/root/api/v1/namespaces/default/configmaps?watch=1');
  for (let i = 0; i < 20; i++) assert.equal((await call(rootShard!, admin, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', CM(`c${i}`))).status, 201);
  const events = await w.waitFor(20);
  assert.deepEqual(events.map((e) => e.object.metadata.name), Array.from({ length: 20 }, (_, i) => `c${i}`));
  w.close();
  // The workspace controller (BullMQ queues on the cluster) takes a workspace to Ready.
  assert.equal((await call(rootShard!, admin, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'on-cluster' } })).status, 201);
  await eventually('workspace Ready', async () => (await call(rootShard!, admin, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/on-cluster')).json?.status?.phase === 'Ready');
  // The second shard registered itself in root through the cluster-backed root shard.
  const registered = await eventually('second shard registered', async () => (await call(rootShard!, masters, 'GET', `/clusters/root/apis/core.kcp.io/v1alpha1/shards/${names[1]}`)).status === 200);
  assert.ok(registered);

  const port = Number(new URL(rootShard!.url).port);
  await rootShard!.stop();
  await sleep(100);
  shards[0] = await startServer({ rootDirectory: root, securePort: port, redisUrl: url });
  const list = await call(shards[0]!, admin, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps');
  assert.equal(list.status, 200);
  assert.equal(list.json.items.filter((i: any) => i.metadata.name !== 'kube-root-ca.crt').length, 20);
});
