/**
 * Authentication and authorization: static tokens, RBAC of the target logical cluster,
 * impersonation, access reviews, and `kubectl auth can-i`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CM, call, eventually, kubectl, sleep, type TestServer, createLogicalCluster, useTestServer } from '../helpers.js';

let srv: TestServer;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
writeFileSync(tokenFile, '# token,user,uid,groups\nalice-token,alice,1001,"dev,qa"\nbob-token,bob,1002\n');

useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const RBAC = '/clusters/root/apis/rbac.authorization.k8s.io/v1';
const NS = '/clusters/root/api/v1/namespaces/default';
// Token requests carry only the CA: the bearer token is the credential.
const caOnly = () => ({ ca: srv.creds.ca });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test('bearer tokens from --token-auth-file; unknown token → 401', async () => {
  const ok = await call(srv, caOnly(), 'POST', '/clusters/root/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', { spec: { namespace: 'default' } }, bearer('alice-token'));
  assert.equal(ok.status, 201, ok.body);
  assert.equal(ok.json.status.incomplete, false);
  const bad = await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, bearer('nope'));
  assert.equal(bad.status, 401);
  const malformed = await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, { authorization: 'Basic Zm9vOmJhcg==' });
  assert.equal(malformed.status, 401);
});

test('RBAC of the logical cluster: 403 until a RoleBinding grants, by user or group', async () => {
  const denied = await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, bearer('alice-token'));
  assert.equal(denied.status, 403);
  assert.equal(denied.json.reason, 'Forbidden');
  assert.match(denied.json.message, /User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"/);
  const admin = (m: string, p: string, b?: unknown) => call(srv, srv.creds, m, p, b);
  assert.equal((await admin('POST', `${RBAC}/namespaces/default/rolebindings`, {
    metadata: { name: 'qa-view' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'qa' }],
  })).status, 201);
  await eventually('the binding grants alice view', async () => (await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, bearer('alice-token'))).status === 200);
  assert.equal((await call(srv, caOnly(), 'POST', `${NS}/configmaps`, CM('nope'), bearer('alice-token'))).status, 403, 'view does not create');
  assert.equal((await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, bearer('bob-token'))).status, 403, 'bob is not in qa');
  // A user of root reaches nothing of another logical cluster without RBAC there.
  await createLogicalCluster(srv, 'other');
  assert.equal((await call(srv, caOnly(), 'GET', '/clusters/other/api/v1/namespaces', undefined, bearer('alice-token'))).status, 403);
});

test('impersonation needs the impersonate verb', async () => {
  const asBob = await call(srv, srv.creds, 'GET', `${NS}/configmaps`, undefined, { 'impersonate-user': 'bob' });
  assert.equal(asBob.status, 403);
  assert.match(asBob.json.message, /User "bob" cannot list/);
  const asMasters = await call(srv, srv.creds, 'GET', `${NS}/configmaps`, undefined, { 'impersonate-user': 'bob', 'impersonate-group': 'system:masters' });
  assert.equal(asMasters.status, 200);
  const notAllowed = await call(srv, caOnly(), 'GET', `${NS}/configmaps`, undefined, { ...bearer('alice-token'), 'impersonate-user': 'kcp-admin' });
  assert.equal(notAllowed.status, 403);
  assert.match(notAllowed.json.message, /cannot impersonate resource "users"/);
  const groupOnly = await call(srv, srv.creds, 'GET', `${NS}/configmaps`, undefined, { 'impersonate-group': 'system:masters' });
  assert.equal(groupOnly.status, 400);
});

test('kubectl auth can-i and --list, as the admin and impersonating', async () => {
  const kc = (args: string[]) => kubectl(srv.kubeconfigPath, args, { allowFail: true });
  assert.equal((await kc(['auth', 'can-i', 'create', 'secrets'])).stdout.trim(), 'yes');
  assert.equal((await kc(['auth', 'can-i', 'list', 'configmaps', '--as', 'alice', '--as-group', 'qa'])).stdout.trim(), 'yes');
  assert.equal((await kc(['auth', 'can-i', 'delete', 'configmaps', '--as', 'alice', '--as-group', 'qa'])).stdout.trim(), 'no');
  const list = (await kc(['auth', 'can-i', '--list', '--as', 'alice', '--as-group', 'qa'])).stdout;
  assert.match(list, /^\*\.\*\s+\[\]\s+\[\]\s+\[get list watch\]/m);
  assert.match(list, /selfsubjectaccessreviews\.authorization\.k8s\.io/);
});

test('SelfSubjectReview: kubectl auth whoami, and the user a bearer token authenticates as', async () => {
  const who = await kubectl(srv.kubeconfigPath, ['auth', 'whoami']);
  assert.match(who.stdout, /Username\s+kcp-admin/);
  assert.match(who.stdout, /Groups\s+\[system:kcp:admin system:authenticated\]/);
  const r = await call(srv, caOnly(), 'POST', '/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }, bearer('alice-token'));
  assert.equal(r.status, 201, r.body);
  assert.deepEqual(r.json.status.userInfo, { username: 'alice', uid: '1001', groups: ['dev', 'qa', 'system:authenticated'] });
  assert.equal((await call(srv, caOnly(), 'GET', '/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews', undefined, bearer('alice-token'))).status, 405);
});
