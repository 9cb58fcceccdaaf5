/**
 * `kcp-ts backup` and `kcp-ts restore` of a shard on a real Redis Cluster (three masters joined by
 * `redis-cli --cluster create`, as redis-cluster.test.ts): the shard's keys share its hash tag, so
 * the scan, the stream replay and the restore's MULTI all run on the one master holding its slot.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { adminCreds, call, CM, eventually, freePort, KCP_TS_BIN, ROOT_CA_CONFIGMAP, watch } from '../helpers.js';
import { startServer, type RunningServer } from '../../src/server/shard.js';

const execFileP = promisify(execFile);
const nodes: { port: number; proc: ChildProcess }[] = [];
let url: string;
const running: RunningServer[] = [];

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bk-cluster-'));
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
  await eventually('cluster state ok', async () => (await execFileP('redis-cli', ['-p', String(nodes[0]!.port), 'cluster', 'info'])).stdout.includes('cluster_state:ok'), 20_000);
  url = `redis-cluster://127.0.0.1:${nodes[0]!.port},127.0.0.1:${nodes[1]!.port}`;
});

after(async () => {
  for (const s of running) await s.stop().catch(() => undefined);
  for (const n of nodes) { n.proc.kill('SIGTERM'); await new Promise((r) => n.proc.once('exit', r)); }
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [KCP_TS_BIN, ...args], { timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const CMS = '/clusters/root/api/v1/namespaces/default/configmaps';

test('a shard on Redis Cluster: backup, later writes, restore with --force brings back the backup and 410 for old revisions', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-bk-rc-root-'));
  const file = join(mkdtempSync(join(tmpdir(), 'kcp-bk-rc-')), 'root.kcpbackup');
  const s = await startServer({ rootDirectory: root, securePort: 0, redisUrl: url });
  running.push(s);
  const creds = adminCreds(root);
  for (let i = 0; i < 40; i++) assert.equal((await call(s, creds, 'POST', CMS, CM(`c${i}`))).status, 201);
  const backup = await cli(['backup', '--redis-url', url, '--root-directory', root, '--output-directory', join(file, '..'), '--retain', '1']);
  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stdout, /backup of shard "root" at revision \d+: \d+ objects, \d+ PKI files/);
  const later = await call(s, creds, 'POST', CMS, CM('after-backup'));
  const heldRv = later.json.metadata.resourceVersion as string;
  await s.stop();

  const refused = await cli(['restore', join(file, '..'), '--redis-url', url]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /not empty for it/);
  const restore = await cli(['restore', join(file, '..'), '--redis-url', url, '--force']);
  assert.equal(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, /restored shard "root" from .*\.kcpbackup/);

  const t = await startServer({ rootDirectory: root, securePort: 0, redisUrl: url });
  running.push(t);
  const list = await call(t, creds, 'GET', CMS);
  const names = list.json.items.map((i: any) => i.metadata.name).filter((n: string) => n !== ROOT_CA_CONFIGMAP).sort();
  assert.deepEqual(names, Array.from({ length: 40 }, (_, i) => `c${i}`).sort());
  assert.ok(Number(list.json.metadata.resourceVersion) > Number(heldRv));
  const old = watch(t, creds, `${CMS}?watch=1&resourceVersion=${heldRv}`);
  const status = await old.status;
  const events = await old.waitFor(1, 2000);
  old.close();
  assert.ok(status === 410 || events[0]?.object?.code === 410, `watch from ${heldRv}: ${status} ${JSON.stringify(events[0])}`);
});
