/**
 * ResourceQuota enforcement against a real Redis and server: kube's quota admission (object
 * counts, legacy names, kube's messages, dry run), the quota controller's status (used, hard,
 * replenishment on delete), kcp's cluster-scoped quota (namespace `admin`, annotated), custom
 * resources, concurrent creates that never exceed `hard`, and — on a server without controllers,
 * whose quota status is written by hand — kube's "status unknown" refusal.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, createLogicalCluster, eventually, startRedis, startTestServer, useTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let srv: TestServer;
useTestServer((s) => { srv = s; });

const api = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);
/**
 * Quota is counted on Secrets: every namespace also holds the root CA publisher's ConfigMap
 * (kube-root-ca.crt), which counts toward a ConfigMap quota (as in kube).
 */
const SECRET = (name: string, data: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data });
const NS = (c: string, ns: string) => `/clusters/${c}/api/v1/namespaces/${ns}`;
const quota = (name: string, hard: Record<string, string>, annotations?: Record<string, string>) => ({
  apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name, ...(annotations ? { annotations } : {}) }, spec: { hard },
});

async function namespace(c: string, name: string, server = srv): Promise<void> {
  const r = await call(server, server.creds, 'POST', `/clusters/${c}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  assert.ok(r.status === 201 || r.status === 409, r.body);
}

/** Waits until the quota's status.used shows `used` (a subset). */
async function usedIs(c: string, ns: string, name: string, used: Record<string, string>, server = srv): Promise<any> {
  return eventually(`quota ${c}/${ns}/${name} used ${JSON.stringify(used)}`, async () => {
    const q = (await call(server, server.creds, 'GET', `${NS(c, ns)}/resourcequotas/${name}`)).json;
    return Object.entries(used).every(([k, v]) => q?.status?.used?.[k] === v) ? q : false;
  });
}

describe('namespace quota', () => {
  const C = 'quota-ns';
  before(async () => {
    await createLogicalCluster(srv, C);
    await namespace(C, 'apps');
  });

  test('count/secrets=3: three of five Secrets are created, two refused with kube\'s 403; status filled', async () => {
    assert.equal((await api('POST', `${NS(C, 'apps')}/resourcequotas`, quota('q', { 'count/secrets': '3' }))).status, 201);
    const q = await usedIs(C, 'apps', 'q', { 'count/secrets': '0' });
    assert.deepEqual(q.status.hard, { 'count/secrets': '3' });
    const codes: number[] = [];
    let refusal: Res | undefined;
    for (let i = 0; i < 5; i++) {
      const r = await api('POST', `${NS(C, 'apps')}/secrets`, SECRET(`cm-${i}`));
      codes.push(r.status);
      if (r.status === 403) refusal ??= r;
    }
    assert.deepEqual(codes, [201, 201, 201, 403, 403]);
    assert.equal(refusal!.json.reason, 'Forbidden');
    assert.equal(refusal!.json.message, 'secrets "cm-3" is forbidden: exceeded quota: q, requested: count/secrets=1, used: count/secrets=3, limited: count/secrets=3');
    assert.deepEqual(refusal!.json.details, { name: 'cm-3', group: '', kind: 'secrets' });
    await usedIs(C, 'apps', 'q', { 'count/secrets': '3' });
  });

  test('a deleted object gives its slot back (replenishment)', async () => {
    assert.equal((await api('DELETE', `${NS(C, 'apps')}/secrets/cm-0`)).status, 200);
    await usedIs(C, 'apps', 'q', { 'count/secrets': '2' });
    assert.equal((await api('POST', `${NS(C, 'apps')}/secrets`, SECRET('again'))).status, 201);
    assert.equal((await api('POST', `${NS(C, 'apps')}/secrets`, SECRET('over'))).status, 403);
  });

  test('a dry run is checked but not charged; other resources and namespaces are not limited', async () => {
    assert.equal((await api('DELETE', `${NS(C, 'apps')}/secrets/cm-1`)).status, 200);
    await usedIs(C, 'apps', 'q', { 'count/secrets': '2' });
    assert.equal((await api('POST', `${NS(C, 'apps')}/secrets?dryRun=All`, SECRET('dry'))).status, 201);
    assert.equal((await api('GET', `${NS(C, 'apps')}/resourcequotas/q`)).json.status.used['count/secrets'], '2');
    assert.equal((await api('POST', `${NS(C, 'apps')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } })).status, 201);
    await namespace(C, 'other');
    for (let i = 0; i < 4; i++) assert.equal((await api('POST', `${NS(C, 'other')}/secrets`, SECRET(`free-${i}`))).status, 201);
  });

  test('legacy names and several quotas: the tightest refuses, each named in its message', async () => {
    await namespace(C, 'legacy');
    assert.equal((await api('POST', `${NS(C, 'legacy')}/resourcequotas`, quota('wide', { secrets: '10', 'count/secrets': '10' }))).status, 201);
    assert.equal((await api('POST', `${NS(C, 'legacy')}/resourcequotas`, quota('tight', { secrets: '1' }))).status, 201);
    await usedIs(C, 'legacy', 'wide', { secrets: '0', 'count/secrets': '0' });
    await usedIs(C, 'legacy', 'tight', { secrets: '0' });
    assert.equal((await api('POST', `${NS(C, 'legacy')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' } })).status, 201);
    const r = await api('POST', `${NS(C, 'legacy')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's2' } });
    assert.equal(r.status, 403);
    assert.equal(r.json.message, 'secrets "s2" is forbidden: exceeded quota: tight, requested: secrets=1, used: secrets=1, limited: secrets=1');
    await usedIs(C, 'legacy', 'wide', { secrets: '1', 'count/secrets': '1' });
  });

  test('a create that fails after admission (AlreadyExists) gives its slot back at once, even when the name is freed', async () => {
    await namespace(C, 'leak');
    assert.equal((await api('POST', `${NS(C, 'leak')}/resourcequotas`, quota('q', { 'count/secrets': '2' }))).status, 201);
    await usedIs(C, 'leak', 'q', { 'count/secrets': '0' });
    assert.equal((await api('POST', `${NS(C, 'leak')}/secrets`, SECRET('a'))).status, 201);
    // Charged by admission, then refused by storage: the store releases the reservation (kube
    // leaks the slot until its next resync), and the controller counts again.
    assert.equal((await api('POST', `${NS(C, 'leak')}/secrets`, SECRET('a'))).status, 409);
    // The name taken by then freed: no other object holds it, so only the release gives the slot back.
    assert.equal((await api('DELETE', `${NS(C, 'leak')}/secrets/a`)).status, 200);
    await usedIs(C, 'leak', 'q', { 'count/secrets': '0' });
    assert.equal((await api('POST', `${NS(C, 'leak')}/secrets`, SECRET('b'))).status, 201);
    assert.equal((await api('POST', `${NS(C, 'leak')}/secrets`, SECRET('c'))).status, 201);
    await usedIs(C, 'leak', 'q', { 'count/secrets': '2' });
  });

  test('a namespace holds at most 100 ResourceQuotas', async () => {
    await namespace(C, 'many');
    for (let i = 0; i < 100; i += 20) {
      const res = await Promise.all(Array.from({ length: 20 }, (_, j) => api('POST', `${NS(C, 'many')}/resourcequotas`, quota(`q${i + j}`, { 'count/secrets': '10' }))));
      assert.deepEqual(res.map((r) => r.status), Array(20).fill(201));
    }
    await eventually('100 quotas cached', async () => (await api('GET', `${NS(C, 'many')}/resourcequotas`)).json.items.length === 100);
    const r = await api('POST', `${NS(C, 'many')}/resourcequotas`, quota('one-more', { 'count/secrets': '10' }));
    assert.equal(r.status, 403);
    assert.equal(r.json.message, 'resourcequotas "one-more" is forbidden: a namespace may hold at most 100 ResourceQuotas');
    // Every one of them is checked and charged.
    await eventually('statuses computed', async () => (await api('GET', `${NS(C, 'many')}/resourcequotas`)).json.items.every((q: any) => q.status?.used?.['count/secrets'] === '0'));
    assert.equal((await api('POST', `${NS(C, 'many')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } })).status, 201);
    const items = (await api('GET', `${NS(C, 'many')}/resourcequotas`)).json.items;
    assert.ok(items.every((q: any) => q.status.used['count/secrets'] === '1'));
  });

  test('20 parallel creates against hard=5: exactly 5 are created, status.used is 5', async () => {
    await namespace(C, 'race');
    assert.equal((await api('POST', `${NS(C, 'race')}/resourcequotas`, quota('q', { 'count/secrets': '5' }))).status, 201);
    await usedIs(C, 'race', 'q', { 'count/secrets': '0' });
    const res = await Promise.all(Array.from({ length: 20 }, (_, i) => api('POST', `${NS(C, 'race')}/secrets`, SECRET(`p-${i}`))));
    const codes = res.map((r) => r.status);
    assert.equal(codes.filter((s) => s === 201).length, 5, JSON.stringify(codes));
    assert.equal(codes.filter((s) => s === 403).length, 15, JSON.stringify(codes));
    assert.equal((await api('GET', `${NS(C, 'race')}/secrets`)).json.items.length, 5);
    assert.equal((await api('GET', `${NS(C, 'race')}/resourcequotas/q`)).json.status.used['count/secrets'], '5');
  });
});

describe('creates and deletes racing', () => {
  const C = 'quota-churn';
  before(async () => {
    await createLogicalCluster(srv, C);
    await namespace(C, 'churn');
  });

  test('never more objects than hard; status.used settles on the real count', async () => {
    assert.equal((await api('POST', `${NS(C, 'churn')}/resourcequotas`, quota('q', { 'count/secrets': '5' }))).status, 201);
    await usedIs(C, 'churn', 'q', { 'count/secrets': '0' });
    let seed = 7;
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
    for (let round = 0; round < 8; round++) {
      const res = await Promise.all(Array.from({ length: 16 }, () => (rand(10) < 7
        ? api('POST', `${NS(C, 'churn')}/secrets`, SECRET(`c-${rand(12)}`))
        : api('DELETE', `${NS(C, 'churn')}/secrets/c-${rand(12)}`))));
      for (const r of res) assert.ok([200, 201, 403, 404, 409].includes(r.status), `${r.status} ${r.body}`);
      const n = (await api('GET', `${NS(C, 'churn')}/secrets`)).json.items.length;
      assert.ok(n <= 5, `${n} Secrets under hard=5`);
      const used = Number((await api('GET', `${NS(C, 'churn')}/resourcequotas/q`)).json.status.used['count/secrets']);
      assert.ok(used <= 5, `status.used ${used}`);
    }
    const n = (await api('GET', `${NS(C, 'churn')}/secrets`)).json.items.length;
    await usedIs(C, 'churn', 'q', { 'count/secrets': String(n) });
  });
});

describe('kcp cluster-scoped quota', () => {
  const C = 'quota-cluster';
  const CLUSTER_SCOPED = { 'experimental.quota.kcp.io/cluster-scoped': 'true' };
  before(async () => {
    await createLogicalCluster(srv, C);
    for (const n of ['admin', 'one', 'two']) await namespace(C, n);
  });

  test('a quota in namespace admin annotated cluster-scoped counts every namespace and cluster-scoped objects', async () => {
    assert.equal((await api('POST', `${NS(C, 'one')}/secrets`, SECRET('before'))).status, 201);
    const r = await api('POST', `${NS(C, 'admin')}/resourcequotas`, quota('cluster', { 'count/secrets': '3', 'count/namespaces': '4' }, CLUSTER_SCOPED));
    assert.equal(r.status, 201, r.body);
    await usedIs(C, 'admin', 'cluster', { 'count/secrets': '1', 'count/namespaces': '3' });
    assert.equal((await api('POST', `${NS(C, 'two')}/secrets`, SECRET('a'))).status, 201);
    assert.equal((await api('POST', `${NS(C, 'one')}/secrets`, SECRET('b'))).status, 201);
    const refused = await api('POST', `${NS(C, 'two')}/secrets`, SECRET('c'));
    assert.equal(refused.status, 403);
    assert.equal(refused.json.message, 'secrets "c" is forbidden: exceeded quota: cluster, requested: count/secrets=1, used: count/secrets=3, limited: count/secrets=3');
    // Cluster-scoped objects count too: a fourth namespace, not a fifth.
    await namespace(C, 'three');
    const ns = await api('POST', `/clusters/${C}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'four' } });
    assert.equal(ns.status, 403);
    assert.match(ns.json.message, /^namespaces "four" is forbidden: exceeded quota: cluster, requested: count\/namespaces=1, used: count\/namespaces=4, limited: count\/namespaces=4$/);
    await usedIs(C, 'admin', 'cluster', { 'count/secrets': '3', 'count/namespaces': '4' });
    // A delete in any namespace gives the slot back.
    assert.equal((await api('DELETE', `${NS(C, 'one')}/secrets/b`)).status, 200);
    await usedIs(C, 'admin', 'cluster', { 'count/secrets': '2' });
    assert.equal((await api('POST', `${NS(C, 'three')}/secrets`, SECRET('d'))).status, 201);
  });

  test('the annotation outside namespace admin makes a namespace quota; another logical cluster is not counted', async () => {
    const r = await api('POST', `${NS(C, 'two')}/resourcequotas`, quota('not-cluster', { 'count/secrets': '1' }, CLUSTER_SCOPED));
    assert.equal(r.status, 201);
    // Only namespace two's Secret ('a') counts: a cluster-wide count would see three.
    await usedIs(C, 'two', 'not-cluster', { 'count/secrets': '1' });
    const other = 'quota-cluster-other';
    await createLogicalCluster(srv, other);
    await namespace(other, 'one');
    for (let i = 0; i < 4; i++) assert.equal((await api('POST', `${NS(other, 'one')}/secrets`, SECRET(`x-${i}`))).status, 201);
  });
});

describe('custom resources', () => {
  const C = 'quota-crd';
  before(async () => {
    await createLogicalCluster(srv, C);
    await namespace(C, 'default');
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'sheriffs.example.com' },
      spec: {
        group: 'example.com', scope: 'Namespaced', names: { plural: 'sheriffs', singular: 'sheriff', kind: 'Sheriff', listKind: 'SheriffList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
    assert.equal((await api('POST', `/clusters/${C}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd)).status, 201);
    await eventually('Sheriff served', async () => (await api('GET', `/clusters/${C}/apis/example.com/v1/namespaces/default/sheriffs`)).status === 200);
  });

  test('count/sheriffs.example.com=2', async () => {
    assert.equal((await api('POST', `${NS(C, 'default')}/resourcequotas`, quota('sheriffs', { 'count/sheriffs.example.com': '2' }))).status, 201);
    await usedIs(C, 'default', 'sheriffs', { 'count/sheriffs.example.com': '0' });
    const sheriff = (name: string) => ({ apiVersion: 'example.com/v1', kind: 'Sheriff', metadata: { name } });
    const path = `/clusters/${C}/apis/example.com/v1/namespaces/default/sheriffs`;
    assert.equal((await api('POST', path, sheriff('s1'))).status, 201);
    assert.equal((await api('POST', path, sheriff('s2'))).status, 201);
    const r = await api('POST', path, sheriff('s3'));
    assert.equal(r.status, 403);
    assert.equal(r.json.message, 'sheriffs.example.com "s3" is forbidden: exceeded quota: sheriffs, requested: count/sheriffs.example.com=1, used: count/sheriffs.example.com=2, limited: count/sheriffs.example.com=2');
    assert.deepEqual(r.json.details, { name: 's3', group: 'example.com', kind: 'sheriffs' });
    await usedIs(C, 'default', 'sheriffs', { 'count/sheriffs.example.com': '2' });
  });
});

describe('without the quota controller', () => {
  let redis: TestRedis;
  let bare: TestServer;
  before(async () => {
    redis = await startRedis();
    bare = await startTestServer(redis, { controllers: false });
  });
  after(async () => { await bare?.stop(); await redis?.stop(); });

  test('no status: nothing enforced; hard without used: kube\'s "status unknown" 403; a hand-written status is enforced', async () => {
    const b = (method: string, path: string, body?: unknown) => call(bare, bare.creds, method, path, body);
    await namespace('root', 'nq', bare);
    const created = await b('POST', `${NS('root', 'nq')}/resourcequotas`, quota('q', { 'count/secrets': '1' }));
    assert.equal(created.status, 201);
    // kube's evaluator matches a quota on status.hard: none yet, so nothing is refused.
    assert.equal((await b('POST', `${NS('root', 'nq')}/secrets`, SECRET('free'))).status, 201);
    const q = created.json;
    const withHard = await b('PUT', `${NS('root', 'nq')}/resourcequotas/q/status`, { ...q, status: { hard: { 'count/secrets': '1' } } });
    assert.equal(withHard.status, 200, withHard.body);
    const unknown = await b('POST', `${NS('root', 'nq')}/secrets`, SECRET('unknown'));
    assert.equal(unknown.status, 403);
    assert.equal(unknown.json.message, 'secrets "unknown" is forbidden: status unknown for quota: q, resources: count/secrets');
    const filled = await b('PUT', `${NS('root', 'nq')}/resourcequotas/q/status`, { ...withHard.json, status: { hard: { 'count/secrets': '2' }, used: { 'count/secrets': '1' } } });
    assert.equal(filled.status, 200, filled.body);
    assert.equal((await b('POST', `${NS('root', 'nq')}/secrets`, SECRET('second'))).status, 201);
    assert.equal((await b('GET', `${NS('root', 'nq')}/resourcequotas/q`)).json.status.used['count/secrets'], '2');
    assert.equal((await b('POST', `${NS('root', 'nq')}/secrets`, SECRET('third'))).status, 403);
  });
});

describe('validation', () => {
  test('a spec.hard value that is no quantity (or negative) is a 422, so it cannot lock a namespace', async () => {
    for (const [v, why] of [['abc', /quantities must match the regular expression/], ['1e400', /quantities must match the regular expression/], ['-1', /must be greater than or equal to 0/]] as const) {
      const r = await api('POST', `${NS('root', 'default')}/resourcequotas`, quota(`bad-${v.replace(/[^a-z0-9]/g, 'x')}`, { 'count/secrets': v }));
      assert.equal(r.status, 422, r.body);
      assert.equal(r.json.reason, 'Invalid');
      assert.match(r.json.message, why);
    }
    const cm = await api('POST', `${NS('root', 'default')}/secrets`, { metadata: { name: 'after-bad-quota' }, data: {} });
    assert.equal(cm.status, 201, cm.body);
  });
});
