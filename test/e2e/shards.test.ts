/**
 * An instance of two shards behind the front-proxy (startInstance, as `kcp-ts start --shards 2`):
 * shard registration, routing by workspace path and logical cluster name, kube's request-header
 * identity between front-proxy and shards, large answers streamed through, and a shard going away
 * and coming back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { request } from 'node:https';
import { adminCreds, call, eventually, kubectl, sleep, waitForRootCA, watch, type Creds } from '../helpers.js';
import { startInstance, type RunningInstance } from '../../src/server/instance.js';
import { PROXY_BUFFER_BYTES } from '../../src/proxy/frontproxy.js';
import { startServer } from '../../src/server/shard.js';
import { ensurePki } from '../../src/pki/store.js';
import { issueClientCert } from '../../src/pki/certs.js';
import { homeShardOf } from '../../src/tenancy/home.js';
import { MIGRATION_ENDPOINTS } from '../../src/shards/migration.js';
import { MIGRATION_HEADER } from '../../src/storage/migration.js';

const execFileP = promisify(execFile);
let root: string;
let inst: RunningInstance;
let admin: Creds;
let masters: Creds;
const LC = (path: string) => ({ metadata: { name: 'cluster', annotations: { 'kcp.io/path': path } } });

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'kcp-shards-'));
  inst = await startInstance({ rootDirectory: root, shards: 2, securePort: 0 });
  admin = adminCreds(root);
  masters = adminCreds(root, 'system-admin');
});
after(async () => { await inst?.stop(); });

test('every shard registers its Shard object in root; the admin kubeconfig points at the front-proxy', async () => {
  const shards = await call(inst, admin, 'GET', '/clusters/root/apis/core.kcp.io/v1alpha1/shards');
  assert.equal(shards.status, 200, shards.body);
  assert.deepEqual(shards.json.items.map((s: any) => [s.metadata.name, s.spec.baseURL]).sort(), [['root', inst.shards[0]!.url], ['shard-1', inst.shards[1]!.url]]);
  const ns = await kubectl(inst.kubeconfigPath, ['get', 'namespaces', '-o', 'name']);
  assert.equal(ns.stdout.trim(), 'namespace/default');
  assert.match((await kubectl(inst.kubeconfigPath, ['config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}'])).stdout, new RegExp(`^${inst.url}/clusters/root$`));
});

test('a logical cluster on shard-1 is routed by path and by name as soon as its watch event arrives', async () => {
  const created = await call(inst.shards[1]!, masters, 'POST', '/clusters/routed1/apis/core.kcp.io/v1alpha1/logicalclusters', LC('root:routed'));
  assert.equal(created.status, 201, created.body);
  const t0 = Date.now();
  const byPath = await eventually('root:routed routable', async () => {
    const r = await call(inst, admin, 'POST', '/clusters/root:routed/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'on-shard-1' } });
    return r.status === 201 && r;
  }, 5000);
  assert.equal(byPath.status, 201);
  assert.ok(Date.now() - t0 < 3000, `routable after ${Date.now() - t0} ms`);
  // It went to shard-1: the object is there, not on the root shard.
  assert.equal((await call(inst.shards[1]!, admin, 'GET', '/clusters/routed1/api/v1/namespaces/on-shard-1')).status, 200);
  assert.equal((await call(inst, admin, 'GET', '/clusters/routed1/api/v1/namespaces/on-shard-1')).status, 200);
});

test('a logical cluster handed over to another shard: the front-proxy holds its requests until it sees it arrive; the origin answers its path with the fence, not 403', async () => {
  // The two halves of a migration's hand-over reach the front-proxy on two watch streams, in
  // either order. Here the origin's half comes first, and the destination's only later.
  const [rootShard, shard1] = [inst.shards[0]!, inst.shards[1]!];
  const op = (name: string, body: unknown = {}) => call(shard1, masters, 'POST', `${MIGRATION_ENDPOINTS}/hop1/${name}`, body);
  const namespaces = '/clusters/root:hop/api/v1/namespaces';
  assert.equal((await call(shard1, masters, 'POST', '/clusters/hop1/apis/core.kcp.io/v1alpha1/logicalclusters', LC('root:hop'))).status, 201);
  await eventually('root:hop routable', async () => (await call(inst, masters, 'GET', namespaces)).status === 200, 5000);
  // The origin's half: fenced, released to the root shard, its copy removed.
  const snapshot = await op('snapshot');
  assert.equal(snapshot.status, 200, snapshot.body);
  assert.equal((await op('fence', { since: snapshot.json.revision })).status, 200);
  assert.equal((await op('release', { to: 'root' })).status, 200);
  const removed = await op('remove');
  assert.equal(removed.status, 200, removed.body);
  assert.ok(removed.json.removed >= 1, removed.body);
  // Asked by path, the origin (whose index of the other shards has not seen the logical cluster
  // anywhere either) answers with its fence: 429 naming the destination, which the proxy holds.
  const atOrigin = await call(shard1, masters, 'GET', namespaces);
  assert.equal(atOrigin.status, 429, atOrigin.body);
  assert.equal(atOrigin.headers[MIGRATION_HEADER], 'moved:root');
  // Through the front-proxy: held, not refused, until the LogicalCluster is on the root shard.
  let settled = false;
  const held = call(inst, masters, 'GET', namespaces).finally(() => { settled = true; });
  await sleep(700);
  assert.equal(settled, false, 'answered before the logical cluster arrived anywhere');
  assert.equal((await call(rootShard, masters, 'POST', '/clusters/hop1/apis/core.kcp.io/v1alpha1/logicalclusters', LC('root:hop'))).status, 201);
  const answered = await held;
  assert.equal(answered.status, 200, answered.body);
  // A path that never existed is still refused at once.
  const t0 = Date.now();
  assert.equal((await call(inst, masters, 'GET', '/clusters/root:never-there/api/v1/namespaces')).status, 403);
  assert.ok(Date.now() - t0 < 1000, `refused after ${Date.now() - t0} ms`);
});

test('watches through the front-proxy stream each event as it happens', async () => {
  // The namespace's kube-root-ca.crt (root CA publisher on shard-1) is written before the watch starts.
  await waitForRootCA(inst, admin, 'root:routed', 'on-shard-1');
  const w = watch(inst, admin, '/clusters/root:routed/api/v1/namespaces/on-shard-1/configmaps?watch=true');
  await new Promise((r) => setTimeout(r, 200));
  for (const name of ['w1', 'w2']) {
    const t0 = Date.now();
    assert.equal((await call(inst, admin, 'POST', '/clusters/root:routed/api/v1/namespaces/on-shard-1/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } })).status, 201);
    const events = await w.waitFor(name === 'w1' ? 1 : 2, 3000);
    assert.equal(events.at(-1).object.metadata.name, name);
    assert.ok(Date.now() - t0 < 1000, `event after ${Date.now() - t0} ms`);
  }
  w.close();
});

test('an answer larger than the proxy buffers (1 MiB) is streamed through whole', async () => {
  const ns = '/clusters/root:routed/api/v1/namespaces/on-shard-1/configmaps';
  for (const name of ['big1', 'big2', 'big3']) {
    const r = await call(inst, admin, 'POST', ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v: name.repeat(100_000) } });
    assert.equal(r.status, 201, r.body);
  }
  const proxied = await call(inst, admin, 'GET', `${ns}?labelSelector=`);
  assert.equal(proxied.status, 200);
  assert.ok(Buffer.byteLength(proxied.body) > PROXY_BUFFER_BYTES, `a ${Buffer.byteLength(proxied.body)}-byte list`);
  assert.deepEqual(proxied.json.items.filter((c: any) => c.metadata.name.startsWith('big')).map((c: any) => c.data.v.length), [400_000, 400_000, 400_000]);
  for (const name of ['big1', 'big2', 'big3']) assert.equal((await call(inst, admin, 'DELETE', `${ns}/${name}`)).status, 200);
});

test('unknown paths get the answer one shard gives; /clusters/* is not proxied; no credentials → 401', async () => {
  const viaProxy = await call(inst, admin, 'GET', '/clusters/root:nowhere/api/v1/configmaps');
  const direct = await call(inst.shards[0]!, admin, 'GET', '/clusters/root:nowhere/api/v1/configmaps');
  assert.equal(viaProxy.status, 403);
  assert.deepEqual(viaProxy.json, direct.json);
  const wildcard = await call(inst, masters, 'GET', '/clusters/*/api/v1/configmaps');
  assert.equal(wildcard.status, 403);
  assert.equal(wildcard.json.kind, 'Status');
  assert.equal((await call(inst, { ca: admin.ca }, 'GET', '/clusters/root/api/v1/namespaces')).status, 401);
});

test('shards take identity headers only from the front-proxy certificate', async () => {
  const whoami = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
  const path = '/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews';
  // Through the proxy: the client's own identity, whatever X-Remote-* it sends.
  const proxied = await call(inst, admin, 'POST', path, whoami, { 'x-remote-user': 'mallory', 'x-remote-group': 'system:masters' });
  assert.equal(proxied.status, 201, proxied.body);
  assert.deepEqual(proxied.json.status.userInfo, { username: 'kcp-admin', groups: ['system:kcp:admin', 'system:authenticated'] });
  // Straight to a shard with a user certificate: the headers are ignored.
  const direct = await call(inst.shards[0]!, admin, 'POST', path, whoami, { 'x-remote-user': 'mallory' });
  assert.equal(direct.json.status.userInfo.username, 'kcp-admin');
  // The front-proxy certificate states identities, groups one per header line (commas kept).
  const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
  const proxyCreds = { ca: pki.ca.certPem, cert: pki.frontProxyClient.certPem, key: pki.frontProxyClient.keyPem };
  const stated = await rawPost(inst.shards[0]!.url, proxyCreds, path, whoami, [['X-Remote-User', 'carol'], ['X-Remote-Group', 'team,a'], ['X-Remote-Group', 'team-b'], ['X-Remote-Extra-Scopes', 'x']]);
  assert.equal(stated.status, 201, JSON.stringify(stated.json));
  assert.deepEqual(stated.json.status.userInfo, { username: 'carol', groups: ['team,a', 'team-b', 'system:authenticated'], extra: { scopes: ['x'] } });
  // Another certificate of the front-proxy CA is not allowed to (kube --requestheader-allowed-names).
  const other = await issueClientCert(pki.frontProxyCA, { user: 'not-the-proxy', groups: [] });
  const refused = await rawPost(inst.shards[0]!.url, { ca: pki.ca.certPem, cert: other.certPem, key: other.keyPem }, path, whoami, [['X-Remote-User', 'carol']]);
  assert.equal(refused.status, 401);
  // A certificate of the client CA named as the proxy is a user like any other: its headers are
  // ignored (only a certificate the front-proxy CA signed is ever taken for the proxy).
  const namesake = await issueClientCert(pki.ca, { user: 'kcp-front-proxy', groups: [] });
  const itself = await rawPost(inst.shards[0]!.url, { ca: pki.ca.certPem, cert: namesake.certPem, key: namesake.keyPem }, path, whoami, [['X-Remote-User', 'carol'], ['X-Remote-Group', 'system:masters']]);
  assert.equal(itself.status, 201, JSON.stringify(itself.json));
  assert.deepEqual(itself.json.status.userInfo, { username: 'kcp-front-proxy', groups: ['system:authenticated'] });
});

const WS = '/apis/tenancy.kcp.io/v1alpha1/workspaces';
const SHARDS = '/clusters/root/apis/core.kcp.io/v1alpha1/shards';
const workspace = (name: string, selector?: Record<string, string>) => ({
  apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: selector ? { location: { selector: { matchLabels: selector } } } : {},
});
const ready = (at: string, name: string, ms = 10_000) => eventually(`${at}:${name} Ready`, async () => {
  const r = await call(inst, admin, 'GET', `/clusters/${at}${WS}/${name}`);
  return r.json?.status?.phase === 'Ready' && r.json;
}, ms);

test('workspaces are scheduled onto the shard their location selector picks; paths resolve across shards; deletion reaches across', async () => {
  for (const [shard, region] of [['root', 'us'], ['shard-1', 'eu']]) {
    const r = await call(inst, masters, 'PATCH', `${SHARDS}/${shard}`, { metadata: { labels: { region } } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(r.status, 200, r.body);
  }
  // Created in root (root shard), placed on shard-1.
  assert.equal((await call(inst, admin, 'POST', `/clusters/root${WS}`, workspace('eu-org', { region: 'eu' }))).status, 201);
  const org = await ready('root', 'eu-org');
  assert.equal(org.metadata.annotations['core.kcp.io/shard'], 'shard-1');
  assert.equal(org.spec.URL, `${inst.url}/clusters/root:eu-org`);
  const lc = await call(inst.shards[1]!, masters, 'GET', `/clusters/${org.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`);
  assert.equal(lc.status, 200, lc.body);
  assert.equal(lc.json.metadata.annotations['kcp.io/path'], 'root:eu-org');
  assert.equal((await call(inst.shards[0]!, masters, 'GET', `/clusters/${org.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).status, 404);
  // Initialized there (default namespace, the owner's workspace-admin binding), reached by its URL.
  const ns = await kubectl(inst.kubeconfigPath, ['--server', org.spec.URL, 'get', 'namespaces', '-o', 'name']);
  assert.equal(ns.stdout.trim(), 'namespace/default', ns.stderr);
  assert.equal((await call(inst.shards[1]!, masters, 'GET', `/clusters/${org.spec.cluster}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/workspace-admin`)).status, 200);

  // A child of it (its parent on shard-1) placed back on the root shard; its type resolved from
  // root's WorkspaceTypes, which shard-1 reads replicated.
  assert.equal((await call(inst, admin, 'POST', `/clusters/root:eu-org${WS}`, workspace('us-team', { region: 'us' }))).status, 201);
  const team = await ready('root:eu-org', 'us-team');
  assert.equal(team.metadata.annotations['core.kcp.io/shard'], 'root');
  assert.equal((await call(inst.shards[0]!, masters, 'GET', `/clusters/${team.spec.cluster}/api/v1/namespaces/default`)).status, 200);
  const deep = await call(inst, admin, 'POST', '/clusters/root:eu-org:us-team/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'deep' } });
  assert.equal(deep.status, 201, deep.body);
  // kubectl ws walks the tree through the front-proxy.
  const kubeconfig = join(root, 'ws.kubeconfig');
  copyFileSync(inst.kubeconfigPath, kubeconfig);
  const ws = await execFileP('kubectl', ['ws', 'root:eu-org:us-team'], { env: { ...process.env, KUBECONFIG: kubeconfig, PATH: `${join(import.meta.dirname, '..', '..', 'bin')}${delimiter}${process.env.PATH}` } });
  assert.match(ws.stdout, /Current workspace is 'root:eu-org:us-team'/);
  const there = await execFileP('kubectl', ['get', 'namespace', 'deep', '-o', 'name'], { env: { ...process.env, KUBECONFIG: kubeconfig } });
  assert.equal(there.stdout.trim(), 'namespace/deep');

  // No shard matches: Scheduling with kcp's reason, nothing created.
  assert.equal((await call(inst, admin, 'POST', `/clusters/root${WS}`, workspace('nowhere', { region: 'mars' }))).status, 201);
  const stuck = await eventually('nowhere Unschedulable', async () => {
    const r = await call(inst, admin, 'GET', `/clusters/root${WS}/nowhere`);
    return r.json?.status?.conditions?.find((c: any) => c.type === 'WorkspaceScheduled' && c.reason === 'Unschedulable') && r.json;
  });
  assert.equal(stuck.status.phase, 'Scheduling');
  assert.match(stuck.status.conditions.find((c: any) => c.type === 'WorkspaceScheduled').message, /No available shards/);
  assert.equal((await call(inst, admin, 'DELETE', `/clusters/root${WS}/nowhere`)).status, 200);

  // Deleting the parent deletes its logical cluster on shard-1, whose content (the child
  // workspace) takes the child's logical cluster on the root shard with it.
  assert.equal((await call(inst, admin, 'DELETE', `/clusters/root${WS}/eu-org`)).status, 200);
  await eventually('eu-org gone', async () => (await call(inst, admin, 'GET', `/clusters/root${WS}/eu-org`)).status === 404, 15_000);
  await eventually('its LogicalCluster gone from shard-1', async () => (await call(inst.shards[1]!, masters, 'GET', `/clusters/${org.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).status !== 200, 15_000);
  await eventually('the child LogicalCluster gone from root shard', async () => (await call(inst.shards[0]!, masters, 'GET', `/clusters/${team.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).status !== 200, 15_000);
});

test('a home workspace (~) goes to the shard its user hashes to, and is used through the front-proxy', async () => {
  let name = 'alice';
  for (let i = 0; homeShardOf(name, ['root', 'shard-1']) !== 'shard-1'; i++) name = `alice-${i}`;
  const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
  const cert = await issueClientCert(pki.ca, { user: name, groups: [] });
  const user = { ca: pki.ca.certPem, cert: cert.certPem, key: cert.keyPem };
  const first = await call(inst, user, 'GET', `/clusters/root${WS}/~`);
  assert.equal(first.status, 429, first.body);
  assert.equal(first.headers['retry-after'], '1');
  const home = await eventually('home Ready', async () => { const r = await call(inst, user, 'GET', `/clusters/root${WS}/~`); return r.status === 200 && r.json; });
  assert.equal(home.spec.URL, `${inst.url}/clusters/user:${name}`);
  assert.equal((await call(inst.shards[1]!, masters, 'GET', `/clusters/${home.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).status, 200);
  const cm = await call(inst, user, 'POST', `/clusters/user:${name}/api/v1/namespaces/default/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mine' } });
  assert.equal(cm.status, 201, cm.body);
  // Another user cannot get in.
  const other = await issueClientCert(pki.ca, { user: `not-${name}`, groups: [] });
  assert.equal((await call(inst, { ca: pki.ca.certPem, cert: other.certPem, key: other.keyPem }, 'GET', `/clusters/user:${name}/api/v1/namespaces/default/configmaps`)).status, 403);
});

test('a shard going away: 503 with Retry-After for its workspaces, the others keep working; back without restarting anything', async () => {
  const shard1 = inst.shards[1]!;
  await shard1.stop();
  const down = await call(inst, admin, 'GET', '/clusters/root:routed/api/v1/namespaces');
  assert.equal(down.status, 503, down.body);
  assert.equal(down.headers['retry-after'], '1');
  assert.equal(down.json.reason, 'ServiceUnavailable');
  assert.equal((await call(inst, admin, 'GET', '/clusters/root/api/v1/namespaces')).status, 200);
  // A workspace for the missing shard waits, saying why.
  assert.equal((await call(inst, admin, 'POST', `/clusters/root${WS}`, workspace('patient', { region: 'eu' }))).status, 201);
  const waiting = await eventually('patient waits for shard-1', async () => {
    const r = await call(inst, admin, 'GET', `/clusters/root${WS}/patient`);
    return r.json?.status?.conditions?.find((c: any) => c.type === 'WorkspaceScheduled' && c.reason === 'ShardUnavailable') && r.json;
  });
  assert.equal(waiting.status.phase, 'Scheduling');
  // The same shard again, at the same address, with its data.
  const port = Number(new URL(shard1.url).port);
  const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
  inst.shards[1] = await startServer({
    rootDirectory: join(root, 'shards', 'shard-1'), pkiDirectory: root, shardName: 'shard-1', securePort: port, shardExternalURL: inst.url,
    rootShard: { url: inst.shards[0]!.url, ca: pki.ca.certPem, cert: pki.systemAdmin.certPem, key: pki.systemAdmin.keyPem },
  });
  const back = await eventually('root:routed served again', async () => {
    const r = await call(inst, admin, 'GET', '/clusters/root:routed/api/v1/namespaces/on-shard-1');
    return r.status === 200 && r;
  }, 10_000);
  assert.equal(back.json.metadata.name, 'on-shard-1');
  const placed = await ready('root', 'patient', 15_000);
  assert.equal(placed.metadata.annotations['core.kcp.io/shard'], 'shard-1');
});

/** A POST with repeated headers (node's `call` helper sends each header once). */
function rawPost(url: string, creds: Creds, path: string, body: unknown, headers: Array<[string, string]>): Promise<{ status: number; json: any }> {
  const u = new URL(url + path);
  const data = Buffer.from(JSON.stringify(body));
  const flat = [['host', u.host], ['content-type', 'application/json'], ['content-length', String(data.length)], ...headers].flat();
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', ca: creds.ca, cert: creds.cert, key: creds.key, agent: false, headers: flat as unknown as Record<string, string> }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => { let json: unknown; try { json = JSON.parse(text); } catch { json = text; } resolve({ status: res.statusCode ?? 0, json }); });
    });
    req.on('error', reject);
    req.end(data);
  });
}
