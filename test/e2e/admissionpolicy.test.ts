/**
 * ValidatingAdmissionPolicy with kubectl, from the Kubernetes documentation's examples
 * (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/): the
 * demo policy on Deployments (a CRD `deployments.apps.example.com` stands in for them: a
 * workspace serves no Deployments and a CRD group needs a dot; the policy names that group) denies in namespaces labelled environment=test and warns with a Warn binding,
 * parameters come from a ConfigMap with messageExpression, a missing parameter is denied, a
 * policy of one workspace does nothing in another, and the `authorizer` variable checks the
 * request's user (a service account, impersonated) against the workspace's RBAC.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, eventually, kubectl, policyWorkspace, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);
const kc = (workspace: string, args: string[], opts?: Parameters<typeof kubectl>[2]) => kubectl(srv.kubeconfigPath, [`--server=${srv.url}/clusters/root:${workspace}`, ...args], opts);

const DEPLOYMENTS_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'deployments.apps.example.com' },
  spec: {
    group: 'apps.example.com', scope: 'Namespaced', names: { plural: 'deployments', singular: 'deployment', kind: 'Deployment' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { replicas: { type: 'integer' } } } } } } }],
  },
};

// The documentation's demo policy and binding, verbatim.
const DEMO = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: "demo-policy.example.com"
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps.example.com"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: "demo-binding-test.example.com"
spec:
  policyName: "demo-policy.example.com"
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
`;

const deployment = (name: string, replicas: number) => `apiVersion: apps.example.com/v1\nkind: Deployment\nmetadata:\n  name: ${name}\nspec:\n  replicas: ${replicas}\n`;

const workspace = (name: string): Promise<void> => policyWorkspace(srv, name, DEPLOYMENTS_CRD);

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis);
  await workspace('policies');
  await workspace('elsewhere');
});
after(async () => { await srv?.stop(); await redis?.stop(); });

test('the documentation\'s demo policy denies in environment=test namespaces only', async () => {
  const applied = await kc('policies', ['apply', '-f', '-'], { input: DEMO });
  assert.match(applied.stdout, /validatingadmissionpolicy.admissionregistration.k8s.io\/demo-policy.example.com created/);
  assert.match(applied.stdout, /validatingadmissionpolicybinding.admissionregistration.k8s.io\/demo-binding-test.example.com created/);
  const denied = await kc('policies', ['apply', '-n', 'test', '-f', '-'], { input: deployment('too-many', 6), allowFail: true });
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5/);
  const invalid = await admin('POST', '/clusters/root:policies/apis/apps.example.com/v1/namespaces/test/deployments', { apiVersion: 'apps.example.com/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 9 } });
  assert.equal(invalid.status, 422);
  assert.equal(invalid.json.reason, 'Invalid');
  assert.match((await kc('policies', ['apply', '-n', 'test', '-f', '-'], { input: deployment('fine', 3) })).stdout, /created/);
  assert.match((await kc('policies', ['apply', '-n', 'prod', '-f', '-'], { input: deployment('big', 50) })).stdout, /created/, 'the binding selects test namespaces only');
  // Another workspace's requests are not its business.
  assert.match((await kc('elsewhere', ['apply', '-n', 'test', '-f', '-'], { input: deployment('too-many', 6) })).stdout, /created/);
});

test('a Warn binding warns without refusing', async () => {
  const warn = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding-prod.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [Warn]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: production
`;
  await kc('policies', ['apply', '-f', '-'], { input: warn });
  const r = await kc('policies', ['apply', '-n', 'prod', '-f', '-'], { input: deployment('bigger', 60) });
  assert.match(r.stdout, /created/);
  assert.match(r.stderr, /Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-prod.example.com': failed expression: object.spec.replicas <= 5/);
});

test('parameters from a ConfigMap, messageExpression, a missing parameter, a bad expression', async () => {
  const policy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit.example.com
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps.example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: limit
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: "'object.spec.replicas must be no greater than ' + string(variables.limit)"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding.example.com
spec:
  policyName: replica-limit.example.com
  validationActions: [Deny]
  paramRef:
    name: replica-limit
    namespace: default
    parameterNotFoundAction: Deny
`;
  await kc('elsewhere', ['apply', '-f', '-'], { input: policy });
  const missing = await admin('POST', '/clusters/root:elsewhere/apis/apps.example.com/v1/namespaces/prod/deployments', { apiVersion: 'apps.example.com/v1', kind: 'Deployment', metadata: { name: 'p1' }, spec: { replicas: 1 } });
  assert.equal(missing.status, 403, missing.body);
  assert.match(missing.json.message, /no params found for policy binding with `Deny` parameterNotFoundAction/);
  await kc('elsewhere', ['create', 'configmap', 'replica-limit', '-n', 'default', '--from-literal=maxReplicas=2']);
  const over = await admin('POST', '/clusters/root:elsewhere/apis/apps.example.com/v1/namespaces/prod/deployments', { apiVersion: 'apps.example.com/v1', kind: 'Deployment', metadata: { name: 'p2' }, spec: { replicas: 3 } });
  assert.equal(over.status, 403, over.body);
  assert.equal(over.json.message, "ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-binding.example.com' denied request: object.spec.replicas must be no greater than 2");
  assert.equal((await admin('POST', '/clusters/root:elsewhere/apis/apps.example.com/v1/namespaces/prod/deployments', { apiVersion: 'apps.example.com/v1', kind: 'Deployment', metadata: { name: 'p3' }, spec: { replicas: 2 } })).status, 201);
  const bad = await admin('POST', '/clusters/root:elsewhere/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'broken' },
    spec: { matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] }, validations: [{ expression: 'object.(' }] },
  });
  assert.equal(bad.status, 422, bad.body);
  assert.match(bad.json.message, /spec.validations\[0\].expression/);
});

test('authorizer: the documentation\'s authorization check denies a service account until RBAC lets it get configmaps', async () => {
  // https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/ "Authorization check":
  // the request's user (here a service account, by impersonation) checked in the request's workspace.
  const policy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: configmap-readers.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps.example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: canReadConfigMaps
    expression: "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('get')"
  validations:
  - expression: "variables.canReadConfigMaps.allowed()"
    messageExpression: "'user ' + request.userInfo.username + ' may not get configmaps in ' + object.metadata.namespace"
    reason: Forbidden
  - expression: "authorizer.requestResource.check('create').allowed() && !authorizer.serviceAccount('authz', 'nobody').group('').resource('configmaps').namespace('authz').check('get').allowed()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: configmap-readers-binding.example.com
spec:
  policyName: configmap-readers.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        authz-demo: "true"
`;
  await kc('policies', ['apply', '-f', '-'], { input: policy });
  assert.equal((await admin('POST', '/clusters/root:policies/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'authz', labels: { 'authz-demo': 'true' } } })).status, 201);
  await kc('policies', ['create', 'serviceaccount', 'deployer', '-n', 'authz']);
  await kc('policies', ['create', 'role', 'deployer', '-n', 'authz', '--verb=create,get', '--resource=deployments.apps.example.com']);
  await kc('policies', ['create', 'rolebinding', 'deployer', '-n', 'authz', '--role=deployer', '--serviceaccount=authz:deployer']);
  const asDeployer = (name: string) => kc('policies', ['--as', 'system:serviceaccount:authz:deployer', 'apply', '-n', 'authz', '-f', '-'], { input: deployment(name, 1), allowFail: true });
  await eventually('RBAC lets the deployer create deployments (the policy still denies)', async () => /may not get configmaps/.test((await asDeployer('d1')).stderr));
  const denied = await asDeployer('d1');
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /ValidatingAdmissionPolicy 'configmap-readers.example.com' with binding 'configmap-readers-binding.example.com' denied request: user system:serviceaccount:authz:deployer may not get configmaps in authz/);
  assert.match(denied.stderr, /Forbidden|forbidden/);
  await kc('policies', ['create', 'role', 'cm-reader', '-n', 'authz', '--verb=get', '--resource=configmaps']);
  await kc('policies', ['create', 'rolebinding', 'cm-reader', '-n', 'authz', '--role=cm-reader', '--serviceaccount=authz:deployer']);
  await eventually('allowed once it may get configmaps', async () => (await asDeployer('d1')).code === 0);
  // A service account that may not read configmaps only passes the second validation's check on `nobody`.
  await kc('policies', ['create', 'rolebinding', 'cm-reader-nobody', '-n', 'authz', '--role=cm-reader', '--serviceaccount=authz:nobody']);
  await eventually('denied once authz:nobody may get configmaps', async () => /failed expression: authorizer.requestResource/.test((await asDeployer('d2')).stderr));
});
