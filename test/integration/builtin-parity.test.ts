/**
 * Built-in API parity with kcp: every logical cluster serves the Kubernetes resources kcp serves
 * in a workspace, no more (but LimitRange, a deliberate extra), no beta or alpha version, and the
 * resource this parity check added — LocalSubjectAccessReview — behaves as kube's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, createLogicalCluster, useTestServer, type Kubectl, type TestServer } from '../helpers.js';

let srv: TestServer;
let kc: Kubectl;
useTestServer((s, _r, k) => { srv = s; kc = k; });

const admin = (method: string, path: string, body?: unknown) => call(srv, srv.creds, method, path, body);

/**
 * What kcp v0.30 (Kubernetes 1.34, kcp-dev/kubernetes fork 4b3495fdcb9d) serves in a workspace,
 * `group/version/resource[/subresource]` (core group: `v1/…`), kcp's own `*.kcp.io` APIs aside.
 * Sources: kcp pkg/server/server.go installs `GenericStorageProviders` of the fork's
 * pkg/controlplane/apiserver/apis.go minus autoscaling and, until priority and fairness is wired,
 * flowcontrol — which kcp's list of built-in APIs (docs/content/concepts/apis/built-in.md) counts
 * as a workspace API and kcp-ts serves with priority and fairness wired (src/flowcontrol) — enabled as
 * pkg/controlplane/instance.go `DefaultAPIResourceConfigSource` (GA versions only: every beta and
 * alpha version of these groups is off); the core resources are pkg/registry/core/rest
 * storage_core_generic.go's; apiextensions.k8s.io comes from apiextensions-apiserver.
 */
const KCP_BUILTIN = [
  'v1/configmaps', 'v1/events', 'v1/namespaces', 'v1/namespaces/finalize', 'v1/namespaces/status',
  'v1/resourcequotas', 'v1/resourcequotas/status', 'v1/secrets', 'v1/serviceaccounts', 'v1/serviceaccounts/token',
  'admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', 'admissionregistration.k8s.io/v1/validatingadmissionpolicies',
  'admissionregistration.k8s.io/v1/validatingadmissionpolicies/status', 'admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
  'admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  'apiextensions.k8s.io/v1/customresourcedefinitions', 'apiextensions.k8s.io/v1/customresourcedefinitions/status',
  'authentication.k8s.io/v1/selfsubjectreviews', 'authentication.k8s.io/v1/tokenreviews',
  'authorization.k8s.io/v1/localsubjectaccessreviews', 'authorization.k8s.io/v1/selfsubjectaccessreviews',
  'authorization.k8s.io/v1/selfsubjectrulesreviews', 'authorization.k8s.io/v1/subjectaccessreviews',
  'certificates.k8s.io/v1/certificatesigningrequests', 'certificates.k8s.io/v1/certificatesigningrequests/approval',
  'certificates.k8s.io/v1/certificatesigningrequests/status',
  'coordination.k8s.io/v1/leases',
  'events.k8s.io/v1/events',
  'flowcontrol.apiserver.k8s.io/v1/flowschemas', 'flowcontrol.apiserver.k8s.io/v1/flowschemas/status',
  'flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations', 'flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/status',
  'rbac.authorization.k8s.io/v1/clusterrolebindings', 'rbac.authorization.k8s.io/v1/clusterroles',
  'rbac.authorization.k8s.io/v1/rolebindings', 'rbac.authorization.k8s.io/v1/roles',
];
/** Served by kcp-ts beyond kcp's set, on purpose (docs/architecture.md, "Built-in APIs"). */
const DELIBERATE_EXTRAS = ['v1/limitranges'];

/** Every built-in group/version/resource of a logical cluster's discovery (kcp's groups aside). */
async function builtinDiscovery(cluster: string): Promise<string[]> {
  const out: string[] = [];
  const core = await admin('GET', `/clusters/${cluster}/api/v1`);
  assert.equal(core.status, 200, core.body);
  for (const r of core.json.resources) out.push(`v1/${r.name}`);
  const groups = await admin('GET', `/clusters/${cluster}/apis`);
  assert.equal(groups.status, 200, groups.body);
  for (const g of groups.json.groups) {
    if (g.name.endsWith('.kcp.io')) continue;
    for (const v of g.versions) {
      const list = await admin('GET', `/clusters/${cluster}/apis/${v.groupVersion}`);
      assert.equal(list.status, 200, list.body);
      for (const r of list.json.resources) out.push(`${v.groupVersion}/${r.name}`);
    }
  }
  return out.sort();
}

test('discovery: kcp\'s built-in resources (plus LimitRange), in root and in a new logical cluster', async () => {
  const expected = [...KCP_BUILTIN, ...DELIBERATE_EXTRAS].sort();
  assert.deepEqual(await builtinDiscovery('root'), expected);
  assert.equal((await createLogicalCluster(srv, 'parity-a')).status, 201);
  assert.deepEqual(await builtinDiscovery('parity-a'), expected);
});

test('beta and alpha versions off by default in kube 1.34 are not served', async () => {
  for (const gv of ['coordination.k8s.io/v1beta1', 'certificates.k8s.io/v1beta1', 'admissionregistration.k8s.io/v1beta1',
    'authentication.k8s.io/v1beta1', 'flowcontrol.apiserver.k8s.io/v1beta3', 'internal.apiserver.k8s.io/v1alpha1', 'storagemigration.k8s.io/v1alpha1']) {
    const res = await admin('GET', `/clusters/root/apis/${gv}`);
    assert.equal(res.status, 404, `${gv}: ${res.body}`);
  }
});

test('kubectl api-resources lists localsubjectaccessreviews as namespaced, create only', async () => {
  const { stdout } = await kc(['api-resources', '--api-group=authorization.k8s.io', '-o', 'wide', '--no-headers']);
  const line = stdout.split('\n').find((l) => l.startsWith('localsubjectaccessreviews '));
  assert.ok(line, stdout);
  assert.match(line!, /authorization\.k8s\.io\/v1\s+true\s+LocalSubjectAccessReview\s+create/);
});

const LSAR = (ns: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'authorization.k8s.io/v1', kind: 'LocalSubjectAccessReview', metadata: { namespace: ns, ...metadata }, spec,
});
const lsarPath = (ns: string, cluster = 'root') => `/clusters/${cluster}/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`;

test('LocalSubjectAccessReview: evaluated for the user in spec within the namespace, never stored', async () => {
  const rbac = '/clusters/root/apis/rbac.authorization.k8s.io/v1/namespaces/default';
  assert.equal((await admin('POST', `${rbac}/roles`, { metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] })).status, 201);
  assert.equal((await admin('POST', `${rbac}/rolebindings`, {
    metadata: { name: 'lsar-alice' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'lsar-alice' }],
  })).status, 201);
  const attrs = (verb: string) => ({ namespace: 'default', verb, resource: 'configmaps' });
  const ok = await admin('POST', lsarPath('default'), LSAR('default', { user: 'lsar-alice', groups: ['system:authenticated'], resourceAttributes: attrs('get') }));
  assert.equal(ok.status, 201, ok.body);
  assert.equal(ok.json.kind, 'LocalSubjectAccessReview');
  assert.equal(ok.json.metadata.namespace, 'default');
  assert.equal(ok.json.status.allowed, true, ok.body);
  const denied = await admin('POST', lsarPath('default'), LSAR('default', { user: 'lsar-alice', groups: ['system:authenticated'], resourceAttributes: attrs('delete') }));
  assert.equal(denied.status, 201, denied.body);
  assert.equal(denied.json.status.allowed, false);
  // Without the namespace in the URL it does not exist; get/list are not served.
  assert.equal((await admin('POST', '/clusters/root/apis/authorization.k8s.io/v1/localsubjectaccessreviews', LSAR('default', { user: 'x', resourceAttributes: attrs('get') }))).status, 404);
  assert.equal((await admin('GET', lsarPath('default'))).status, 405);
});

test('LocalSubjectAccessReview validation: one 422 with kube\'s causes; a body of another namespace is a 400', async () => {
  const res = await admin('POST', lsarPath('default'), LSAR('default', {
    resourceAttributes: { namespace: 'other', verb: 'get', resource: 'configmaps' }, nonResourceAttributes: { path: '/healthz', verb: 'get' },
  }, { name: 'named' }));
  assert.equal(res.status, 422, res.body);
  assert.equal(res.json.reason, 'Invalid');
  assert.equal(res.json.details.kind, 'LocalSubjectAccessReview');
  assert.deepEqual(res.json.details.causes.map((c: any) => `${c.reason} ${c.field}`).sort(), [
    'FieldValueInvalid metadata',
    'FieldValueInvalid spec.nonResourceAttributes',
    'FieldValueInvalid spec.nonResourceAttributes',
    'FieldValueInvalid spec.resourceAttributes.namespace',
    'FieldValueInvalid spec.user',
  ]);
  assert.ok(res.json.details.causes.some((c: any) => /must match metadata\.namespace/.test(c.message)), res.body);
  assert.ok(res.json.details.causes.some((c: any) => /disallowed on this kind of request/.test(c.message)), res.body);

  const none = await admin('POST', lsarPath('default'), LSAR('default', { user: 'bob' }));
  assert.equal(none.status, 422, none.body);
  assert.deepEqual(none.json.details.causes.map((c: any) => c.field), ['spec.resourceAttributes']);
  assert.match(none.json.details.causes[0].message, /exactly one of nonResourceAttributes or resourceAttributes must be specified/);

  const wrongNs = await admin('POST', lsarPath('default'), LSAR('kube-system', { user: 'bob', resourceAttributes: { namespace: 'kube-system', verb: 'get', resource: 'configmaps' } }));
  assert.equal(wrongNs.status, 400, wrongNs.body);

  // kubectl sends metadata.creationTimestamp: null (a zero value): not "non-empty metadata".
  const zero = await admin('POST', lsarPath('default'), LSAR('default', { user: 'bob', resourceAttributes: { namespace: 'default', verb: 'get', resource: 'secrets' } }, { creationTimestamp: null }));
  assert.equal(zero.status, 201, zero.body);
  assert.equal(zero.json.status.allowed, false);
});

test('kubectl create -f of a LocalSubjectAccessReview (discovery and /openapi/v3 know the kind)', async () => {
  const openapi = await admin('GET', '/clusters/root/openapi/v3/apis/authorization.k8s.io/v1');
  assert.equal(openapi.status, 200, openapi.body);
  assert.ok(openapi.json.components.schemas['io.k8s.api.authorization.v1.LocalSubjectAccessReview'], 'schema published');
  const input = JSON.stringify(LSAR('default', { groups: ['system:masters'], resourceAttributes: { namespace: 'default', verb: 'delete', resource: 'secrets' } }));
  const { stdout } = await kc(['create', '-n', 'default', '-f', '-', '-o', 'json'], { input });
  const out = JSON.parse(stdout);
  assert.equal(out.kind, 'LocalSubjectAccessReview');
  assert.equal(out.status.allowed, true);
  const bad = await kc(['create', '-n', 'default', '-f', '-', '-o', 'json'], { input: JSON.stringify(LSAR('default', { user: 'bob' })), allowFail: true });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /is invalid: spec\.resourceAttributes/);
});
