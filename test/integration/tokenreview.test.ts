/**
 * TokenReview (authentication.k8s.io/v1) per logical cluster: static tokens, service-account
 * tokens (of this and of another logical cluster), bad tokens (201, authenticated false with an
 * error, never 401), audiences, and who may create one (RBAC `create` on `tokenreviews`, e.g.
 * through kube's `system:auth-delegator` role).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, createLogicalCluster, eventually, useTestServer, type TestServer } from '../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'kcp-tokenreview-'));
const tokenFile = join(dir, 'tokens.csv');
writeFileSync(tokenFile, 'alice-token,alice,alice-uid,"team-a,team-b"\nbob-token,bob,bob-uid\n');
let srv: TestServer;
useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const TR = (c: string) => `/clusters/${c}/apis/authentication.k8s.io/v1/tokenreviews`;
const review = (token: string, audiences?: string[]) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences ? { audiences } : {}) } });
const admin = (method: string, path: string, body?: unknown) => call(srv, srv.creds, method, path, body);
const asToken = (token: string, method: string, path: string, body?: unknown) => call(srv, { ca: srv.creds.ca }, method, path, body, { authorization: `Bearer ${token}` });

test('discovery lists tokenreviews (create only)', async () => {
  const res = await admin('GET', '/clusters/root/apis/authentication.k8s.io/v1');
  assert.equal(res.status, 200, res.body);
  const r = res.json.resources.find((x: any) => x.name === 'tokenreviews');
  assert.deepEqual(r?.verbs, ['create']);
  assert.equal(r?.namespaced, false);
});

test('a static token: authenticated with user, uid, groups and the API audiences', async () => {
  const res = await admin('POST', TR('root'), review('alice-token'));
  assert.equal(res.status, 201, res.body);
  assert.equal(res.json.kind, 'TokenReview');
  assert.equal(res.json.status.authenticated, true);
  assert.deepEqual(res.json.status.user, { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'team-b', 'system:authenticated'] });
  assert.deepEqual(res.json.status.audiences, ['https://kcp.default.svc']);
  // Audience-agnostic: another audience does not authenticate it.
  const other = await admin('POST', TR('root'), review('alice-token', ['vault']));
  assert.equal(other.status, 201, other.body);
  assert.equal(other.json.status.authenticated, undefined);
  assert.equal(other.json.status.error, 'invalid bearer token');
});

test('a bad token: 201, not authenticated, an error; an empty token: 400', async () => {
  const res = await admin('POST', TR('root'), review('no-such-token'));
  assert.equal(res.status, 201, res.body);
  assert.equal(res.json.status.authenticated, undefined);
  assert.deepEqual(res.json.status.user, {});
  assert.equal(res.json.status.error, 'invalid bearer token');
  const empty = await admin('POST', TR('root'), review(''));
  assert.equal(empty.status, 400, empty.body);
  assert.match(empty.json.message, /token is required for TokenReview in authentication/);
});

test('service-account tokens: of this logical cluster, of another one, and a tampered one', async () => {
  await createLogicalCluster(srv, 'tr-a');
  await createLogicalCluster(srv, 'tr-b');
  await admin('POST', '/clusters/tr-a/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
  const sa = await admin('POST', '/clusters/tr-a/api/v1/namespaces/ns/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' } });
  assert.equal(sa.status, 201, sa.body);
  const tr = await eventually('token', async () => {
    const r = await admin('POST', '/clusters/tr-a/api/v1/namespaces/ns/serviceaccounts/robot/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    return r.status === 201 && r;
  });
  const token = tr.json.status.token as string;
  for (const cluster of ['tr-a', 'tr-b']) {
    const res = await admin('POST', TR(cluster), review(token));
    assert.equal(res.status, 201, res.body);
    assert.equal(res.json.status.authenticated, true, cluster);
    const u = res.json.status.user;
    assert.equal(u.username, 'system:serviceaccount:ns:robot');
    assert.equal(u.uid, sa.json.metadata.uid);
    assert.deepEqual(u.groups, ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated']);
    // The token's own logical cluster, wherever it is reviewed.
    assert.deepEqual(u.extra['authentication.kcp.io/cluster-name'], ['tr-a']);
    assert.deepEqual(res.json.status.audiences, ['https://kcp.default.svc']);
  }
  const tampered = `${token.slice(0, -4)}AAAA`;
  const bad = await admin('POST', TR('tr-a'), review(tampered));
  assert.equal(bad.status, 201, bad.body);
  assert.equal(bad.json.status.authenticated, undefined);
  assert.match(bad.json.status.error, /invalid service account token/);
  // Not one of the token's audiences.
  const aud = await admin('POST', TR('tr-a'), review(token, ['vault']));
  assert.equal(aud.json.status.authenticated, undefined);
});

test('creating a TokenReview needs create on tokenreviews (system:auth-delegator)', async () => {
  await createLogicalCluster(srv, 'tr-c');
  const bind = (name: string, role: string) => admin('POST', '/clusters/tr-c/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
  });
  assert.equal((await bind('bob-access', 'system:kcp:workspace:access')).status, 201);
  await eventually('access', async () => (await asToken('bob-token', 'POST', TR('tr-c'), review('alice-token'))).json?.message?.includes('cannot create'));
  const denied = await asToken('bob-token', 'POST', TR('tr-c'), review('alice-token'));
  assert.equal(denied.status, 403, denied.body);
  assert.match(denied.json.message, /cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope/);
  const b = await bind('bob-auth-delegator', 'system:auth-delegator');
  assert.equal(b.status, 201, b.body);
  const ok = await eventually('allowed', async () => { const r = await asToken('bob-token', 'POST', TR('tr-c'), review('alice-token')); return r.status === 201 && r; });
  assert.equal(ok.json.status.user.username, 'alice');
  // Only there: another logical cluster still refuses bob.
  const elsewhere = await asToken('bob-token', 'POST', TR('tr-a'), review('alice-token'));
  assert.equal(elsewhere.status, 403, elsewhere.body);
});
