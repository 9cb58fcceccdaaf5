/**
 * ServiceAccounts per logical cluster: the `default` ServiceAccount of every namespace, the
 * TokenRequest subresource (`kubectl create token`), service account tokens as bearer tokens,
 * their validity only in the issuing logical cluster, expiry, tampering, uid binding, and a signing
 * key that survives restarts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair, importPKCS8 } from 'jose';
import { call, createLogicalCluster, eventually, kubectl, sleep, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
const A = 'sa-a';
const B = 'sa-b';
const NS = 'apps';
const RBAC = (c: string) => `/clusters/${c}/apis/rbac.authorization.k8s.io/v1`;
const CORE = (c: string) => `/clusters/${c}/api/v1/namespaces/${NS}`;
// Token requests carry only the CA: the bearer token is the only credential.
const caOnly = () => ({ ca: srv.creds.ca });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const asToken = (token: string, method: string, path: string, body?: unknown): Promise<Res> => call(srv, caOnly(), method, path, body, bearer(token));
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);
const tokenRequest = (spec: Record<string, unknown> = {}) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec });

async function requestToken(cluster: string, sa: string, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await admin('POST', `${CORE(cluster)}/serviceaccounts/${sa}/token`, tokenRequest(spec));
  assert.equal(res.status, 201, res.body);
  return res.json.status.token as string;
}

async function createSA(cluster: string, name: string): Promise<any> {
  const res = await admin('POST', `${CORE(cluster)}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
  assert.equal(res.status, 201, res.body);
  return res.json;
}

async function bind(cluster: string, name: string, role: { kind: string; name: string }, subjects: object[]): Promise<void> {
  const res = await admin('POST', `${RBAC(cluster)}/namespaces/${NS}/rolebindings`, {
    metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...role }, subjects,
  });
  assert.equal(res.status, 201, res.body);
}

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis);
  for (const c of [A, B]) {
    await createLogicalCluster(srv, c);
    const ns = await admin('POST', `/clusters/${c}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    assert.equal(ns.status, 201, ns.body);
  }
});
after(async () => { await srv?.stop(); await redis?.stop(); });

test('every namespace gets a default ServiceAccount; it is re-created when deleted', async () => {
  let first: any;
  await eventually('default SA in the new namespace', async () => {
    const r = await admin('GET', `${CORE(A)}/serviceaccounts/default`);
    first = r.json;
    return r.status === 200;
  });
  assert.equal(first.metadata.namespace, NS);
  // Namespaces of other logical clusters get their own.
  await eventually('default SA in the other cluster', async () => (await admin('GET', `${CORE(B)}/serviceaccounts/default`)).status === 200);
  assert.equal((await admin('DELETE', `${CORE(A)}/serviceaccounts/default`)).status, 200);
  await eventually('default SA re-created', async () => {
    const r = await admin('GET', `${CORE(A)}/serviceaccounts/default`);
    return r.status === 200 && r.json.metadata.uid !== first.metadata.uid;
  });
  // Nothing is created in a namespace being deleted.
  const gone = await admin('POST', `/clusters/${A}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'short-lived' } });
  assert.equal(gone.status, 201);
  await eventually('default SA in short-lived', async () => (await admin('GET', `/clusters/${A}/api/v1/namespaces/short-lived/serviceaccounts/default`)).status === 200);
  assert.equal((await admin('DELETE', `/clusters/${A}/api/v1/namespaces/short-lived`)).status, 200);
  await eventually('namespace deleted', async () => (await admin('GET', `/clusters/${A}/api/v1/namespaces/short-lived`)).status === 404);
  // Negative check: a fixed wait, as nothing observable marks that something did not happen.
  await sleep(200);
  assert.equal((await admin('GET', `/clusters/${A}/api/v1/namespaces/short-lived/serviceaccounts/default`)).status, 404);
});

test('discovery lists serviceaccounts/token as a TokenRequest subresource', async () => {
  const res = await admin('GET', `/clusters/${A}/api/v1`);
  assert.equal(res.status, 200);
  const sub = res.json.resources.find((r: any) => r.name === 'serviceaccounts/token');
  assert.deepEqual(sub, { name: 'serviceaccounts/token', singularName: '', namespaced: true, kind: 'TokenRequest', verbs: ['create'], group: 'authentication.k8s.io', version: 'v1' });
});

test('TokenRequest returns a signed JWT with kube bound-token claims and the logical cluster', async () => {
  const sa = await createSA(A, 'robot');
  const before = Math.floor(Date.now() / 1000);
  const res = await admin('POST', `${CORE(A)}/serviceaccounts/robot/token`, tokenRequest());
  assert.equal(res.status, 201, res.body);
  assert.equal(res.json.kind, 'TokenRequest');
  assert.equal(res.json.apiVersion, 'authentication.k8s.io/v1');
  assert.equal(res.json.metadata.name, 'robot');
  assert.equal(res.json.spec.expirationSeconds, 3600);
  assert.deepEqual(res.json.spec.audiences, ['https://kcp.default.svc']);
  const token = res.json.status.token as string;
  assert.equal(decodeProtectedHeader(token).alg, 'ES256');
  const claims = decodeJwt(token) as any;
  assert.equal(claims.iss, 'https://kcp.default.svc');
  assert.equal(claims.sub, 'system:serviceaccount:apps:robot');
  assert.deepEqual(claims.aud, ['https://kcp.default.svc']);
  assert.ok(claims.iat >= before && claims.iat <= before + 5);
  assert.equal(claims.nbf, claims.iat);
  assert.equal(claims.exp - claims.iat, 3600);
  assert.match(claims.jti, /^[0-9a-f-]{36}$/);
  assert.deepEqual(claims['kubernetes.io'], { clusterName: A, namespace: NS, serviceaccount: { name: 'robot', uid: sa.metadata.uid } });
  assert.equal(Date.parse(res.json.status.expirationTimestamp) / 1000, claims.exp);

  // Audiences and duration as asked.
  const custom = decodeJwt(await requestToken(A, 'robot', { audiences: ['vault'], expirationSeconds: 7200 }));
  assert.deepEqual(custom.aud, ['vault']);
  assert.equal(custom.exp! - custom.iat!, 7200);
  // kube's validation: at least 10 minutes.
  const short = await admin('POST', `${CORE(A)}/serviceaccounts/robot/token`, tokenRequest({ expirationSeconds: 599 }));
  assert.equal(short.status, 422, short.body);
  assert.equal(short.json.reason, 'Invalid');
  assert.match(short.json.message, /spec\.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes/);
  // Missing ServiceAccount; unsupported bound object; a bound Secret.
  const missing = await admin('POST', `${CORE(A)}/serviceaccounts/nobody/token`, tokenRequest());
  assert.equal(missing.status, 404);
  assert.match(missing.json.message, /serviceaccounts "nobody" not found/);
  const pod = await admin('POST', `${CORE(A)}/serviceaccounts/robot/token`, tokenRequest({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p' } }));
  assert.equal(pod.status, 400);
  const unnamed = await admin('POST', `${CORE(A)}/serviceaccounts/robot/token`, tokenRequest({ boundObjectRef: { kind: 'Secret', apiVersion: 'v1' } }));
  assert.equal(unnamed.status, 400, unnamed.body);
  assert.match(unnamed.json.message, /Name parameter required/);
  // A spec that is not an object is a decoding error, not an empty spec.
  const badSpec = await admin('POST', `${CORE(A)}/serviceaccounts/robot/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: 'x' });
  assert.equal(badSpec.status, 400, badSpec.body);
  assert.equal(badSpec.json.reason, 'BadRequest');
  // Only create is served on the subresource.
  assert.equal((await admin('GET', `${CORE(A)}/serviceaccounts/robot/token`)).status, 405);
});

test('a token authenticates as its ServiceAccount in its logical cluster; RBAC applies', async () => {
  await createSA(A, 'reader');
  const token = await requestToken(A, 'reader');
  const denied = await asToken(token, 'GET', `${CORE(A)}/configmaps`);
  assert.equal(denied.status, 403, denied.body);
  assert.match(denied.json.message, /User "system:serviceaccount:apps:reader" cannot list resource "configmaps"/);
  // A RoleBinding to the ServiceAccount grants.
  await bind(A, 'reader-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'reader', namespace: NS }]);
  await eventually('view granted', async () => (await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  assert.equal((await asToken(token, 'POST', `${CORE(A)}/configmaps`, { metadata: { name: 'x' }, data: { a: '1' } })).status, 403, 'view does not create');
  // Its groups: system:serviceaccounts:<ns>.
  await bind(A, 'ns-sas-edit', { kind: 'ClusterRole', name: 'edit' }, [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: `system:serviceaccounts:${NS}` }]);
  await eventually('edit granted by group', async () => (await asToken(token, 'POST', `${CORE(A)}/configmaps`, { metadata: { name: 'by-sa' }, data: { a: '1' } })).status === 201);
  // Access reviews see the same identity.
  const ssar = await asToken(token, 'POST', `/clusters/${A}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: NS, verb: 'delete', resource: 'configmaps' } },
  });
  assert.equal(ssar.status, 201, ssar.body);
  assert.equal(ssar.json.status.allowed, true);
});

test('the same token is refused in another logical cluster, even with a binding to the same name there', async () => {
  await createSA(A, 'local');
  const token = await requestToken(A, 'local');
  await bind(A, 'local-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'local', namespace: NS }]);
  await eventually('allowed at home', async () => (await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  // B has a ServiceAccount apps/local too, and binds it: the token of A's is still not B's.
  await createSA(B, 'local');
  await bind(B, 'local-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'local', namespace: NS }]);
  // Negative check: a fixed wait, as nothing observable marks that something did not happen.
  await sleep(100);
  const foreign = await asToken(token, 'GET', `${CORE(B)}/configmaps`);
  assert.equal(foreign.status, 403, foreign.body);
  assert.equal(foreign.json.reason, 'Forbidden');
  assert.equal((await asToken(token, 'GET', `/clusters/${B}/api/v1/namespaces`)).status, 403);
  // Not the wildcard either.
  assert.equal((await asToken(token, 'GET', '/clusters/*/api/v1/configmaps')).status, 403);
  // kcp's global identity of a foreign service account, system:kcp:serviceaccount:<cluster>:<ns>:<name>,
  // is what B may grant to (workspace access plus a role).
  const crole = await admin('POST', `${RBAC(B)}/clusterroles`, { metadata: { name: 'foreign-reader' }, rules: [
    { verbs: ['access'], nonResourceURLs: ['/'] }, { verbs: ['list'], apiGroups: [''], resources: ['configmaps'] },
  ] });
  assert.equal(crole.status, 201, crole.body);
  const crb = await admin('POST', `${RBAC(B)}/clusterrolebindings`, {
    metadata: { name: 'foreign-reader' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'foreign-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: `system:kcp:serviceaccount:${A}:${NS}:local` }],
  });
  assert.equal(crb.status, 201, crb.body);
  await eventually('global identity granted in B', async () => (await asToken(token, 'GET', `${CORE(B)}/configmaps`)).status === 200);
  // B's own ServiceAccount with that name is unaffected by A's tokens and vice versa.
  const bToken = await requestToken(B, 'local');
  assert.equal((await asToken(bToken, 'GET', `${CORE(B)}/configmaps`)).status, 200);
  assert.equal((await asToken(bToken, 'GET', `${CORE(A)}/configmaps`)).status, 403);
});

test('expired, tampered and foreign-signed tokens → 401', async () => {
  const sa = await createSA(A, 'timed');
  await bind(A, 'timed-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'timed', namespace: NS }]);
  const good = await requestToken(A, 'timed');
  await eventually('granted', async () => (await asToken(good, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  const [h, p, s] = good.split('.');
  // Another signature byte.
  const flipped = `${h}.${p}.${s!.slice(0, 10)}${s![10] === 'A' ? 'B' : 'A'}${s!.slice(11)}`;
  assert.equal((await asToken(flipped, 'GET', `${CORE(A)}/configmaps`)).status, 401);
  // A payload edited to another logical cluster, signature kept.
  const claims = decodeJwt(good) as any;
  const forged = Buffer.from(JSON.stringify({ ...claims, 'kubernetes.io': { ...claims['kubernetes.io'], clusterName: B } })).toString('base64url');
  assert.equal((await asToken(`${h}.${forged}.${s}`, 'GET', `${CORE(B)}/configmaps`)).status, 401);
  // Signed with the shard's key but expired (beyond the 60 s leeway).
  const key = await importPKCS8(readFileSync(join(srv.root, 'sa.key'), 'utf8'), 'ES256');
  const now = Math.floor(Date.now() / 1000);
  const sign = (exp: number, k: CryptoKey = key) => new SignJWT({ 'kubernetes.io': { clusterName: A, namespace: NS, serviceaccount: { name: 'timed', uid: sa.metadata.uid } } })
    .setProtectedHeader({ alg: 'ES256' }).setIssuer('https://kcp.default.svc').setSubject('system:serviceaccount:apps:timed')
    .setAudience('https://kcp.default.svc').setIssuedAt(now - 4000).setNotBefore(now - 4000).setExpirationTime(exp).sign(k);
  assert.equal((await asToken(await sign(now + 600), 'GET', `${CORE(A)}/configmaps`)).status, 200, 'the same claims, unexpired, are valid');
  assert.equal((await asToken(await sign(now - 120), 'GET', `${CORE(A)}/configmaps`)).status, 401);
  // Signed by another key.
  const other = await generateKeyPair('ES256');
  assert.equal((await asToken(await sign(now + 600, other.privateKey), 'GET', `${CORE(A)}/configmaps`)).status, 401);
  // Another audience is not for this server.
  const vault = await requestToken(A, 'timed', { audiences: ['vault'] });
  assert.equal((await asToken(vault, 'GET', `${CORE(A)}/configmaps`)).status, 401);
  // Garbage.
  assert.equal((await asToken('a.b.c', 'GET', `${CORE(A)}/configmaps`)).status, 401);
});

test('deleting and re-creating the ServiceAccount invalidates its old tokens', async () => {
  await createSA(A, 'phoenix');
  await bind(A, 'phoenix-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'phoenix', namespace: NS }]);
  const old = await requestToken(A, 'phoenix');
  await eventually('granted', async () => (await asToken(old, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  assert.equal((await admin('DELETE', `${CORE(A)}/serviceaccounts/phoenix`)).status, 200);
  await eventually('old token refused once the SA is gone', async () => (await asToken(old, 'GET', `${CORE(A)}/configmaps`)).status === 401);
  await createSA(A, 'phoenix');
  // Negative check: a fixed wait, as nothing observable marks that something did not happen.
  await sleep(100);
  assert.equal((await asToken(old, 'GET', `${CORE(A)}/configmaps`)).status, 401, 'a new uid does not revive old tokens');
  const fresh = await requestToken(A, 'phoenix');
  assert.equal((await asToken(fresh, 'GET', `${CORE(A)}/configmaps`)).status, 200);
});

test('a token bound to a Secret dies with it', async () => {
  await createSA(A, 'bound');
  await bind(A, 'bound-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'bound', namespace: NS }]);
  const secret = await admin('POST', `${CORE(A)}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'holder' } });
  assert.equal(secret.status, 201);
  const wrongUid = await admin('POST', `${CORE(A)}/serviceaccounts/bound/token`, tokenRequest({ boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'holder', uid: 'nope' } }));
  assert.equal(wrongUid.status, 409, wrongUid.body);
  const token = await requestToken(A, 'bound', { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'holder', uid: secret.json.metadata.uid } });
  assert.deepEqual((decodeJwt(token) as any)['kubernetes.io'].secret, { name: 'holder', uid: secret.json.metadata.uid });
  await eventually('granted', async () => (await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  assert.equal((await admin('DELETE', `${CORE(A)}/secrets/holder`)).status, 200);
  await eventually('refused after the Secret is gone', async () => (await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status === 401);
});

test('kubectl create token, then kubectl --token: RBAC decides', async () => {
  // A namespace of its own: the ServiceAccounts of `apps` are editors by group (above).
  const ns = 'tools';
  assert.equal((await admin('POST', `/clusters/${A}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })).status, 201);
  assert.equal((await admin('POST', `/clusters/${A}/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'settings' }, data: { a: '1' } })).status, 201);
  await eventually('default SA in tools', async () => (await admin('GET', `/clusters/${A}/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200);
  const server = `${srv.url}/clusters/${A}`;
  const created = await kubectl(srv.kubeconfigPath, ['--server', server, 'create', 'token', 'default', '-n', ns, '--duration', '20m']);
  const token = created.stdout.trim();
  const claims = decodeJwt(token) as any;
  assert.equal(claims.sub, `system:serviceaccount:${ns}:default`);
  assert.equal(claims.exp - claims.iat, 1200);
  assert.equal(claims['kubernetes.io'].clusterName, A);
  // A kubeconfig without credentials: the token is the only one.
  const dir = mkdtempSync(join(tmpdir(), 'kcp-sa-kubeconfig-'));
  const kubeconfig = join(dir, 'config');
  const caPath = join(dir, 'ca.crt');
  writeFileSync(caPath, srv.caPem);
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config',
    `clusters: [{name: a, cluster: {server: "${server}", certificate-authority: "${caPath}"}}]`,
    'users: [{name: anon, user: {}}]',
    `contexts: [{name: a, context: {cluster: a, user: anon, namespace: ${ns}}}]`,
    'current-context: a', '',
  ].join('\n'));
  const forbidden = await kubectl(kubeconfig, ['--token', token, 'get', 'configmaps'], { allowFail: true });
  assert.notEqual(forbidden.code, 0);
  assert.match(forbidden.stderr, /forbidden/i);
  assert.match(forbidden.stderr, /system:serviceaccount:tools:default/);
  const rb = await admin('POST', `${RBAC(A)}/namespaces/${ns}/rolebindings`, {
    metadata: { name: 'default-view' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: ns }],
  });
  assert.equal(rb.status, 201, rb.body);
  await eventually('the binding grants the token view', async () => (await asToken(token, 'GET', `/clusters/${A}/api/v1/namespaces/${ns}/configmaps`)).status === 200);
  const listed = await kubectl(kubeconfig, ['--token', token, 'get', 'configmaps', '-o', 'name']);
  assert.match(listed.stdout, /configmap\/settings/);
  const cannot = await kubectl(kubeconfig, ['--token', token, 'auth', 'can-i', 'create', 'configmaps'], { allowFail: true });
  assert.equal(cannot.stdout.trim(), 'no');
  const can = await kubectl(kubeconfig, ['--token', token, 'auth', 'can-i', 'list', 'configmaps']);
  assert.equal(can.stdout.trim(), 'yes');
  // The same token against the other logical cluster.
  const elsewhere = await kubectl(kubeconfig, ['--token', token, '--server', `${srv.url}/clusters/${B}`, 'get', 'configmaps'], { allowFail: true });
  assert.notEqual(elsewhere.code, 0);
  assert.match(elsewhere.stderr, /forbidden/i);
  const bogus = await kubectl(kubeconfig, ['--token', `${token}x`, 'get', 'configmaps'], { allowFail: true });
  assert.notEqual(bogus.code, 0);
  assert.match(bogus.stderr, /Unauthorized|must be logged in/);
});

test('the signing key is kept across restarts: tokens stay valid', async () => {
  await createSA(A, 'durable');
  await bind(A, 'durable-view', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'durable', namespace: NS }]);
  const token = await requestToken(A, 'durable');
  await eventually('granted', async () => (await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status === 200);
  const keyBefore = readFileSync(join(srv.root, 'sa.key'), 'utf8');
  await srv.stop();
  srv = await startTestServer(redis, {}, srv.root);
  assert.equal(readFileSync(join(srv.root, 'sa.key'), 'utf8'), keyBefore);
  assert.equal((await asToken(token, 'GET', `${CORE(A)}/configmaps`)).status, 200);
});
