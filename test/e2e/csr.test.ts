/**
 * CertificateSigningRequests with the real kubectl: create a CSR in a workspace, `kubectl
 * certificate approve`, the kube-apiserver-client signer issues a certificate signed by the
 * shard's client CA, and that certificate authenticates as its CN/O (`kubectl auth whoami`);
 * `kubectl certificate deny`; an invalid request is 422; approving without `approve` on the signer
 * is 403; a CSR is visible in its own logical cluster only; usages the signer refuses → Failed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { createLogicalCluster, eventually, kubectl, useTestServer, type TestServer } from '../helpers.js';

const KUBECTL = '/usr/lib/google-cloud-sdk/bin/kubectl';
const dir = mkdtempSync(join(tmpdir(), 'kcp-csr-'));
let srv: TestServer;
useTestServer((s) => { srv = s; });

/** A kubeconfig for `cluster` with the given client certificate (default: the admin's). */
function kubeconfigFor(cluster: string, name: string, cert?: { certPem: string; keyPem: string }): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, buildKubeconfig({
    clusters: [{ name: 'c', server: `${srv.url}/clusters/${cluster}`, caPem: srv.caPem }],
    users: [{ name: 'u', certPem: cert?.certPem ?? srv.creds.cert, keyPem: cert?.keyPem ?? srv.creds.key }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c',
  }));
  return path;
}
const kc = (kubeconfig: string, args: string[], opts: { input?: string; allowFail?: boolean } = {}) => kubectl(kubeconfig, args, { bin: KUBECTL, ...opts });

/** A key and a CSR made with openssl: `subj` like `/O=team-x/CN=carol`. */
function opensslCSR(name: string, subj: string, extra: string[] = []): { keyPem: string; csrPem: string } {
  const key = join(dir, `${name}.key`); const csr = join(dir, `${name}.csr`);
  execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  execFileSync('openssl', ['req', '-new', '-key', key, '-subj', subj, '-out', csr, ...extra]);
  return { keyPem: readFileSync(key, 'utf8'), csrPem: readFileSync(csr, 'utf8') };
}

function csrYaml(name: string, csrPem: string, spec: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client', usages: ['client auth'], ...spec },
  });
}

async function jsonOf(kubeconfig: string, name: string): Promise<any> {
  return JSON.parse((await kc(kubeconfig, ['get', 'csr', name, '-o', 'json'])).stdout);
}

test('create, approve, issue: the certificate authenticates as its CN/O in the workspace', async () => {
  await createLogicalCluster(srv, 'csr-a');
  await createLogicalCluster(srv, 'csr-b');
  const a = kubeconfigFor('csr-a', 'admin-a');
  const b = kubeconfigFor('csr-b', 'admin-b');
  const { keyPem, csrPem } = opensslCSR('carol', '/O=team-x/CN=carol');
  // The client's username/groups are replaced by the requester's.
  await kc(a, ['create', '-f', '-'], { input: csrYaml('carol', csrPem, { expirationSeconds: 3600, username: 'mallory', groups: ['system:masters'] }) });
  const created = await jsonOf(a, 'carol');
  assert.equal(created.spec.username, 'kcp-admin');
  assert.ok(!created.spec.groups.includes('system:masters'));
  assert.equal(created.status?.certificate, undefined);

  const table = await kc(a, ['get', 'csr']);
  assert.match(table.stdout.split('\n')[0]!, /^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION\s*$/);
  assert.match(table.stdout, /carol\s+\S+\s+kubernetes.io\/kube-apiserver-client\s+kcp-admin\s+60m\s+Pending/);

  await kc(a, ['certificate', 'approve', 'carol']);
  const issued = await eventually('certificate', async () => (await jsonOf(a, 'carol')).status?.certificate, 15000);
  const certPem = Buffer.from(issued, 'base64').toString('utf8');
  const x = new (await import('node:crypto')).X509Certificate(certPem);
  assert.equal(x.subject, 'O=team-x\nCN=carol');
  const lifetime = (Date.parse(x.validTo) - Date.parse(x.validFrom)) / 1000;
  assert.ok(lifetime <= 3600 + 5 * 60 + 1 && lifetime >= 3600, String(lifetime));
  assert.match((await kc(a, ['get', 'csr', 'carol'])).stdout, /Approved,Issued/);

  // Workspace access for the certificate's group (kcp's workspace content authorizer).
  await kc(a, ['create', 'clusterrolebinding', 'team-x-access', '--clusterrole', 'system:kcp:workspace:access', '--group', 'team-x']);
  const carol = kubeconfigFor('csr-a', 'carol', { certPem, keyPem });
  const who = JSON.parse(await eventually('whoami', async () => { const r = await kc(carol, ['auth', 'whoami', '-o', 'json'], { allowFail: true }); return r.code === 0 && r.stdout; }));
  assert.equal(who.status.userInfo.username, 'carol');
  assert.deepEqual(who.status.userInfo.groups, ['team-x', 'system:authenticated']);

  assert.deepEqual(who.status.userInfo.extra?.['authentication.kcp.io/scopes'], ['cluster:csr-a']);
  // The certificate is valid in its workspace only: bindings to "carol" and "team-x" elsewhere
  // do not apply to it (a workspace admin must not mint identities for other workspaces).
  await kc(b, ['create', 'clusterrolebinding', 'carol-admin', '--clusterrole', 'cluster-admin', '--user', 'carol', '--group', 'team-x']);
  await kc(b, ['create', 'clusterrolebinding', 'team-x-access', '--clusterrole', 'system:kcp:workspace:access', '--group', 'team-x']);
  const carolInB = kubeconfigFor('csr-b', 'carol', { certPem, keyPem });
  const refused = await kc(carolInB, ['get', 'configmaps', '-n', 'default'], { allowFail: true });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /forbidden|Forbidden/);

  // Invisible in another logical cluster.
  const other = await kc(b, ['get', 'csr', 'carol'], { allowFail: true });
  assert.notEqual(other.code, 0);
  assert.match(other.stderr, /NotFound|not found/);
  assert.equal((await kc(b, ['get', 'csr', '-o', 'name'])).stdout.trim(), '');
});

test('deny: condition Denied, no certificate', async () => {
  const a = kubeconfigFor('csr-a', 'admin-a');
  const { csrPem } = opensslCSR('dave', '/CN=dave');
  await kc(a, ['create', '-f', '-'], { input: csrYaml('dave', csrPem) });
  await kc(a, ['certificate', 'deny', 'dave']);
  const got = await jsonOf(a, 'dave');
  assert.ok(got.status.conditions.some((c: any) => c.type === 'Denied' && c.status === 'True'));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await jsonOf(a, 'dave')).status.certificate, undefined);
  assert.match((await kc(a, ['get', 'csr', 'dave'])).stdout, /Denied/);
});

test('invalid requests are 422; system:masters is refused (403)', async () => {
  const a = kubeconfigFor('csr-a', 'admin-a');
  const bad = await kc(a, ['create', '-f', '-'], { input: csrYaml('bad', 'not a csr'), allowFail: true });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /is invalid/);
  assert.match(bad.stderr, /spec.request/);
  const { csrPem } = opensslCSR('short', '/CN=short');
  const short = await kc(a, ['create', '-f', '-'], { input: csrYaml('short', csrPem, { expirationSeconds: 60 }), allowFail: true });
  assert.match(short.stderr, /spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds/);
  const noSigner = await kc(a, ['create', '-f', '-'], { input: csrYaml('nosigner', csrPem, { signerName: '' }), allowFail: true });
  assert.match(noSigner.stderr, /spec.signerName: Required value/);
  const masters = opensslCSR('masters', '/O=system:masters/CN=root');
  const m = await kc(a, ['create', '-f', '-'], { input: csrYaml('masters', masters.csrPem), allowFail: true });
  assert.match(m.stderr, /use of kubernetes.io\/kube-apiserver-client signer with system:masters group is not allowed/);
});

test('the signer fails requests it may not sign (usages, SANs); other signers stay pending', async () => {
  const a = kubeconfigFor('csr-a', 'admin-a');
  const { csrPem } = opensslCSR('server', '/CN=server');
  await kc(a, ['create', '-f', '-'], { input: csrYaml('server', csrPem, { usages: ['server auth'] }) });
  await kc(a, ['certificate', 'approve', 'server']);
  const failed = await eventually('failed', async () => (await jsonOf(a, 'server')).status?.conditions?.find((c: any) => c.type === 'Failed'), 15000);
  assert.equal(failed.reason, 'SignerValidationFailure');
  assert.equal(failed.message, 'invalid usage for client certificate: server auth');
  const san = opensslCSR('san', '/CN=san', ['-addext', 'subjectAltName=DNS:example.com']);
  await kc(a, ['create', '-f', '-'], { input: csrYaml('san', san.csrPem) });
  await kc(a, ['certificate', 'approve', 'san']);
  const f2 = await eventually('failed', async () => (await jsonOf(a, 'san')).status?.conditions?.find((c: any) => c.type === 'Failed'), 15000);
  assert.equal(f2.message, 'DNS subjectAltNames are not allowed');
  const other = opensslCSR('other', '/CN=other');
  await kc(a, ['create', '-f', '-'], { input: csrYaml('other', other.csrPem, { signerName: 'example.com/signer' }) });
  await kc(a, ['certificate', 'approve', 'other']);
  await new Promise((r) => setTimeout(r, 1000));
  const o = await jsonOf(a, 'other');
  assert.equal(o.status.certificate, undefined);
  assert.ok(!o.status.conditions.some((c: any) => c.type === 'Failed'));
});

test('approving needs approve on the signer (403 without it)', async () => {
  const a = kubeconfigFor('csr-a', 'admin-a');
  const { keyPem, csrPem } = opensslCSR('erin', '/CN=erin');
  await kc(a, ['create', '-f', '-'], { input: csrYaml('erin', csrPem) });
  await kc(a, ['certificate', 'approve', 'erin']);
  const certPem = Buffer.from(await eventually('certificate', async () => (await jsonOf(a, 'erin')).status?.certificate, 15000), 'base64').toString('utf8');
  const rbac = [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'csr-approver' }, rules: [
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['get', 'list'] },
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/approval'], verbs: ['update'] },
    ] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'erin-csr-approver' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'csr-approver' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'erin' }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'erin-access' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kcp:workspace:access' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'erin' }] },
  ];
  await kc(a, ['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbac }) });
  const target = opensslCSR('frank', '/CN=frank');
  await kc(a, ['create', '-f', '-'], { input: csrYaml('frank', target.csrPem) });
  const erin = kubeconfigFor('csr-a', 'erin', { certPem, keyPem });
  const denied = await eventually('rbac', async () => {
    const r = await kc(erin, ['certificate', 'approve', 'frank'], { allowFail: true });
    return r.stderr.includes('not permitted') && r;
  });
  assert.match(denied.stderr, /certificatesigningrequests.certificates.k8s.io "frank" is forbidden: user not permitted to approve requests with signerName "kubernetes.io\/kube-apiserver-client"/);
  // With approve on the signer (by its domain wildcard) it works.
  await kc(a, ['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'signer-approver' }, rules: [{ apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: ['kubernetes.io/*'], verbs: ['approve'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'erin-signer-approver' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'signer-approver' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'erin' }] },
  ] }) });
  await eventually('approved', async () => (await kc(erin, ['certificate', 'approve', 'frank'], { allowFail: true })).code === 0);
  await eventually('issued', async () => (await jsonOf(a, 'frank')).status?.certificate, 15000);
});
