/**
 * An instance as separate processes, as an operator runs it: `kcp-ts start` for the root shard,
 * `kcp-ts start --root-shard-kubeconfig-file …` for a second shard, `kcp-ts front-proxy`; each
 * killed with SIGKILL in turn (the front-proxy, a shard, the root shard) while the rest go on.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, eventually, freePort, spawnCli, stopCli, type CliProcess, type Creds } from '../helpers.js';

let root: string;
let ports: { proxy: number; root: number; shard1: number };
let rootShard: CliProcess;
let shard1: CliProcess;
let proxy: CliProcess;
let admin: Creds;
const proxyURL = () => `https://127.0.0.1:${ports.proxy}`;
const WS = '/apis/tenancy.kcp.io/v1alpha1/workspaces';

const startRoot = () => spawnCli(['start', '--root-directory', root, '--secure-port', String(ports.root), '--shard-external-url', proxyURL(), '--shard-labels', 'region=us']);
const startShard1 = () => spawnCli(['start', '--root-directory', join(root, 'shard-1'), '--pki-directory', root, '--shard-name', 'shard-1', '--secure-port', String(ports.shard1),
  '--root-shard-kubeconfig-file', join(root, 'admin.kubeconfig'), '--shard-external-url', proxyURL(), '--shard-labels', 'region=eu']);
const startProxy = () => spawnCli(['front-proxy', '--pki-directory', root, '--root-shard-url', `https://127.0.0.1:${ports.root}`, '--secure-port', String(ports.proxy)]);
const kill9 = async (p: CliProcess) => { p.proc.kill('SIGKILL'); await p.exited; };
const viaProxy = (method: string, path: string, body?: unknown) => call({ url: proxyURL() }, admin, method, path, body);
const workspace = (name: string, region: string) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: { location: { selector: { matchLabels: { region } } } } });
const ready = (at: string, name: string, ms = 15_000) => eventually(`${at}:${name} Ready`, async () => {
  const r = await viaProxy('GET', `/clusters/${at}${WS}/${name}`);
  return r.json?.status?.phase === 'Ready' && r.json;
}, ms);

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'kcp-procs-'));
  ports = { proxy: await freePort(), root: await freePort(), shard1: await freePort() };
  rootShard = startRoot();
  await rootShard.ready;
  admin = adminCreds(root);
  shard1 = startShard1();
  proxy = startProxy();
  await Promise.all([shard1.ready, proxy.ready]);
});
after(async () => {
  await Promise.all([proxy, shard1, rootShard].filter(Boolean).map((p) => stopCli(p)));
});

test('three processes serve one URL space; a workspace lands on the shard its selector picks', async () => {
  assert.match(proxy.output(), /kcp-ts front-proxy ready in \d+ ms at https:\/\/127\.0\.0\.1:\d+/);
  assert.equal((await viaProxy('POST', `/clusters/root${WS}`, workspace('eu-org', 'eu'))).status, 201);
  const org = await ready('root', 'eu-org');
  assert.equal(org.metadata.annotations['core.kcp.io/shard'], 'shard-1');
  assert.equal(org.spec.URL, `${proxyURL()}/clusters/root:eu-org`);
  const cm = await viaProxy('POST', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept' }, data: { a: '1' } });
  assert.equal(cm.status, 201, cm.body);
});

test('the front-proxy killed and started again serves as soon as its index is rebuilt', async () => {
  await kill9(proxy);
  const t0 = Date.now();
  proxy = startProxy();
  await proxy.ready;
  const r = await eventually('root:eu-org served', async () => { const g = await viaProxy('GET', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps/kept'); return g.status === 200 && g; });
  assert.equal(r.json.data.a, '1');
  assert.ok(Date.now() - t0 < 10_000, `serving after ${Date.now() - t0} ms`);
});

test('a shard killed: 503 with Retry-After for its workspaces, root keeps serving; back with its data', async () => {
  await kill9(shard1);
  const down = await viaProxy('GET', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps/kept');
  assert.equal(down.status, 503, down.body);
  assert.equal(down.headers['retry-after'], '1');
  assert.equal((await viaProxy('GET', '/clusters/root/api/v1/namespaces/default')).status, 200);
  shard1 = startShard1();
  await shard1.ready;
  const back = await eventually('root:eu-org back', async () => { const g = await viaProxy('GET', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps/kept'); return g.status === 200 && g; }, 15_000);
  assert.equal(back.json.data.a, '1');
});

test('the root shard killed: workspaces on shard-1 keep serving reads and writes; creating under root is a clear 503; all recovers', async () => {
  await kill9(rootShard);
  assert.equal((await viaProxy('GET', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps/kept')).status, 200);
  const write = await viaProxy('POST', '/clusters/root:eu-org/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'while-root-down' } });
  assert.equal(write.status, 201, write.body);
  const underRoot = await viaProxy('POST', `/clusters/root${WS}`, workspace('late', 'eu'));
  assert.equal(underRoot.status, 503, underRoot.body);
  assert.equal(underRoot.json.kind, 'Status');
  // A child of eu-org uses root's types: its shard cannot ask root whether the user may.
  const child = await viaProxy('POST', `/clusters/root:eu-org${WS}`, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'team' } });
  assert.equal(child.status, 503, child.body);
  assert.match(child.json.message, /cannot authorize in logical cluster "root" on shard "root"/);
  rootShard = startRoot();
  await rootShard.ready;
  await eventually('root back through the proxy', async () => (await viaProxy('POST', `/clusters/root${WS}`, workspace('late', 'eu'))).status === 201, 15_000);
  await ready('root', 'late');
  await eventually('child of eu-org created', async () => (await viaProxy('POST', `/clusters/root:eu-org${WS}`, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'team' } })).status === 201, 15_000);
  await ready('root:eu-org', 'team');
});
