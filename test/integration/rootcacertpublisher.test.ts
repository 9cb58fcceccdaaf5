/**
 * The root CA publisher on the real server (kube's rootcacertpublisher, kcp's
 * kube-root-ca-configmap-controller): `kube-root-ca.crt` in every namespace of every logical
 * cluster, with the CA that issued the serving certificate; restored when deleted or changed;
 * a new workspace's `default` namespace is born with it; terminating namespaces get nothing; a
 * new CA (restart) is published everywhere. Polls with deadlines, never a fixed sleep.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, createLogicalCluster, eventually, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';
import { DESCRIPTION_ANNOTATION, ROOT_CA_DESCRIPTION } from '../../src/controllers/rootcacertpublisher/controller.js';

let redis: TestRedis;
let srv: TestServer;
const root = mkdtempSync(join(tmpdir(), 'kcp-root-'));
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res> => call(srv, srv.creds, method, path, body, headers);
const CM = (cluster: string, ns: string) => `/clusters/${cluster}/api/v1/namespaces/${ns}/configmaps/kube-root-ca.crt`;
const WS = '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces';
/** Bound on how long the publisher may take (it reacts to watch events; the settle delay is 200 ms). */
const BOUND_MS = 5000;

/** The ConfigMap once it is as the publisher keeps it for `ca`. */
async function published(cluster: string, ns: string, ca = srv.creds.ca): Promise<any> {
  return eventually(`kube-root-ca.crt in ${cluster}/${ns}`, async () => {
    const r = await api('GET', CM(cluster, ns));
    return r.status === 200 && JSON.stringify(r.json.data) === JSON.stringify({ 'ca.crt': ca }) && r.json.metadata.annotations?.[DESCRIPTION_ANNOTATION] === ROOT_CA_DESCRIPTION && r.json;
  }, BOUND_MS);
}

async function createNamespace(cluster: string, name: string): Promise<void> {
  const r = await api('POST', `/clusters/${cluster}/api/v1/namespaces`, { metadata: { name } });
  assert.equal(r.status, 201, r.body);
}

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis, {}, root);
});
after(async () => { await srv?.stop(); await redis?.stop(); rmSync(root, { recursive: true, force: true }); });

test('a new namespace gets kube-root-ca.crt with the CA of the serving certificate and kube\'s annotation', async () => {
  await createNamespace('root', 'fresh');
  const cm = await published('root', 'fresh');
  assert.deepEqual(Object.keys(cm.data), ['ca.crt']);
  assert.match(cm.data['ca.crt'], /^-----BEGIN CERTIFICATE-----/);
  // System logical clusters too (kcp's publisher sees every logical cluster of the shard).
  await createNamespace('system:admin', 'sysns');
  await published('system:admin', 'sysns');
});

test('deleted, changed data or a removed annotation: restored', async () => {
  await createNamespace('root', 'restore');
  await published('root', 'restore');
  assert.equal((await api('DELETE', CM('root', 'restore'))).status, 200);
  await published('root', 'restore');
  const changed = await api('PATCH', CM('root', 'restore'), { data: { 'ca.crt': 'not a CA', extra: 'x' } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(changed.status, 200, changed.body);
  await published('root', 'restore');
  const unannotated = await api('PATCH', CM('root', 'restore'), { metadata: { annotations: { [DESCRIPTION_ANNOTATION]: null, mine: 'kept' } } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(unannotated.status, 200, unannotated.body);
  const back = await published('root', 'restore');
  assert.equal(back.metadata.annotations.mine, 'kept', 'other annotations stay (kube sets only its own)');
});

test('a new workspace\'s default namespace is born with it (no wait)', async () => {
  const r = await api('POST', WS, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'with-ca' }, spec: {} });
  assert.equal(r.status, 201, r.body);
  const ws = await eventually('workspace Ready', async () => { const g = await api('GET', `${WS}/with-ca`); return g.json?.status?.phase === 'Ready' && g.json; }, BOUND_MS);
  const cm = await api('GET', CM(ws.spec.cluster, 'default'));
  assert.equal(cm.status, 200, cm.body);
  assert.deepEqual(cm.json.data, { 'ca.crt': srv.creds.ca });
  // A logical cluster created directly (no initializer): its namespaces get it from the controller.
  assert.equal((await createLogicalCluster(srv, 'bare')).status, 201);
  await createNamespace('bare', 'n');
  await published('bare', 'n');
});

test('a terminating namespace gets nothing', async () => {
  await createNamespace('root', 'ending');
  await published('root', 'ending');
  // An object held by a finalizer keeps the namespace terminating after the deletion.
  const held = await api('POST', '/clusters/root/api/v1/namespaces/ending/configmaps', { metadata: { name: 'held', finalizers: ['example.com/hold'] } });
  assert.equal(held.status, 201, held.body);
  assert.equal((await api('DELETE', '/clusters/root/api/v1/namespaces/ending')).status, 200);
  // The namespace controller deletes kube-root-ca.crt with the rest; the publisher does not put it back.
  await eventually('kube-root-ca.crt deleted with the namespace content', async () => (await api('GET', CM('root', 'ending'))).status === 404, BOUND_MS);
  // Events are handled in order: once a namespace created later has its ConfigMap, the
  // deletion above was seen (and would have been acted on by now).
  await createNamespace('root', 'later');
  await published('root', 'later');
  assert.equal((await api('GET', CM('root', 'ending'))).status, 404);
  assert.equal((await api('GET', '/clusters/root/api/v1/namespaces/ending')).json.status.phase, 'Terminating');
  const release = await api('PATCH', '/clusters/root/api/v1/namespaces/ending/configmaps/held', { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(release.status, 200, release.body);
});

test('a new CA is published everywhere after a restart', async () => {
  const before = srv.creds.ca;
  await srv.stop();
  // Without ca.crt the PKI self-signs a new CA certificate for the same key (src/pki/store.ts).
  rmSync(join(root, 'ca.crt'));
  srv = await startTestServer(redis, {}, root);
  assert.notEqual(srv.creds.ca, before);
  await published('root', 'fresh', srv.creds.ca);
  await published('root', 'restore', srv.creds.ca);
  await published('system:admin', 'sysns', srv.creds.ca);
});
