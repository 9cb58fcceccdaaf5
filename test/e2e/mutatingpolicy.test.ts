/**
 * MutatingAdmissionPolicy (admissionregistration.k8s.io/v1beta1) with kubectl, after the
 * Kubernetes documentation's examples
 * (https://kubernetes.io/docs/reference/access-authn-authz/mutating-admission-policy/): the
 * sidecar policy (an ApplyConfiguration adding the `mesh-proxy` init container — refused as kube
 * 1.34 refuses it while it sets the atomic `args`, applied without them; a CRD
 * `pods.core.example.com` stands in for Pods, which a workspace does not serve, with
 * `initContainers` keyed by name as Pod's is), a JSONPatch adding a label with
 * `jsonpatch.escapeKey`, parameters from a ConfigMap, a malformed policy refused with 422, and a
 * policy of one workspace doing nothing in another.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, eventually, kubectl, policyWorkspace, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);
const kc = (workspace: string, args: string[], opts?: Parameters<typeof kubectl>[2]) => kubectl(srv.kubeconfigPath, [`--server=${srv.url}/clusters/root:${workspace}`, ...args], opts);

const container = { type: 'object', properties: { name: { type: 'string' }, image: { type: 'string' }, args: { type: 'array', items: { type: 'string' } }, restartPolicy: { type: 'string' } } };
const PODS_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'pods.core.example.com' },
  spec: {
    group: 'core.example.com', scope: 'Namespaced', names: { plural: 'pods', singular: 'pod', kind: 'Pod' },
    versions: [{
      name: 'v1', served: true, storage: true, schema: {
        openAPIV3Schema: {
          type: 'object', properties: {
            spec: {
              type: 'object', properties: {
                containers: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { ...container, required: ['name'] } },
                initContainers: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { ...container, required: ['name'] } },
              },
            },
          },
        },
      },
    }],
  },
};

// The documentation's sidecar policy (its Pods are core.example.com's here), with a binding.
const SIDECAR = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: "sidecar-policy.example.com"
spec:
  matchConstraints:
    resourceRules:
    - apiGroups:   ["core.example.com"]
      apiVersions: ["v1"]
      operations:  ["CREATE"]
      resources:   ["pods"]
  matchConditions:
    - name: does-not-already-have-sidecar
      expression: "!has(object.spec.initContainers) || !object.spec.initContainers.exists(ic, ic.name == \\"mesh-proxy\\")"
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
    - patchType: "ApplyConfiguration"
      applyConfiguration:
        expression: >
          Object{
            spec: Object.spec{
              initContainers: [
                Object.spec.initContainers{
                  name: "mesh-proxy",
                  image: "mesh/proxy:v1.0.0",
                  args: ["proxy", "sidecar"],
                  restartPolicy: "Always"
                }
              ]
            }
          }
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: "sidecar-binding-test.example.com"
spec:
  policyName: "sidecar-policy.example.com"
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
`;

const pod = (name: string, initContainers = '') => `apiVersion: core.example.com/v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: app\n    image: app:v1\n${initContainers}`;

const workspace = (name: string): Promise<void> => policyWorkspace(srv, name, PODS_CRD);

before(async () => {
  redis = await startRedis();
  // Off by default as in kube 1.34 and kcp: turned on as kube-apiserver's --runtime-config does.
  srv = await startTestServer(redis, { runtimeConfig: { 'admissionregistration.k8s.io/v1beta1': true } });
  await workspace('mutating');
  await workspace('elsewhere');
});
after(async () => { await srv?.stop(); await redis?.stop(); });

const initContainers = async (workspace: string, ns: string, name: string) => JSON.parse((await kc(workspace, ['get', 'pods.core.example.com', '-n', ns, name, '-o', 'json'])).stdout).spec.initContainers as Array<Record<string, unknown>> | undefined;

test('the documentation\'s sidecar policy adds the init container to pods in environment=test namespaces', async () => {
  const applied = await kc('mutating', ['apply', '-f', '-'], { input: SIDECAR });
  assert.match(applied.stdout, /mutatingadmissionpolicy.admissionregistration.k8s.io\/sidecar-policy.example.com created/);
  assert.match(applied.stdout, /mutatingadmissionpolicybinding.admissionregistration.k8s.io\/sidecar-binding-test.example.com created/);
  assert.match((await kc('mutating', ['get', 'mutatingadmissionpolicies'])).stdout, /sidecar-policy.example.com\s+1\s+<unset>/);
  // kube refuses the example as written: `args` is an atomic list (patch/smd.go validatePatch).
  const refused = await kc('mutating', ['apply', '-n', 'test', '-f', '-'], { input: pod('web'), allowFail: true });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /pods.core.example.com "web" is invalid: policy 'sidecar-policy.example.com' with binding 'sidecar-binding-test.example.com' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.initContainers\[0\].args/);
  assert.match((await kc('mutating', ['apply', '-f', '-'], { input: SIDECAR.replace(/ *args: .*\n/, '') })).stdout, /configured/);
  assert.match((await kc('mutating', ['apply', '-n', 'test', '-f', '-'], { input: pod('web') })).stdout, /created/);
  assert.deepEqual(await initContainers('mutating', 'test', 'web'), [{ name: 'mesh-proxy', image: 'mesh/proxy:v1.0.0', restartPolicy: 'Always' }]);
  // Already has it: the match condition skips the policy; other namespaces are not bound.
  await kc('mutating', ['apply', '-n', 'test', '-f', '-'], { input: pod('has', '  initContainers:\n  - name: mesh-proxy\n    image: mine:v2\n') });
  assert.deepEqual(await initContainers('mutating', 'test', 'has'), [{ name: 'mesh-proxy', image: 'mine:v2' }]);
  await kc('mutating', ['apply', '-n', 'prod', '-f', '-'], { input: pod('web') });
  assert.equal(await initContainers('mutating', 'prod', 'web'), undefined);
  // Another workspace's requests are not its business.
  await kc('elsewhere', ['apply', '-n', 'test', '-f', '-'], { input: pod('web') });
  assert.equal(await initContainers('elsewhere', 'test', 'web'), undefined);
});

test('a JSONPatch policy with parameters from a ConfigMap labels configmaps created with kubectl', async () => {
  const policy = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: environment-label.example.com
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: not-the-params
    expression: "object.metadata.name != 'environment'"
  variables:
  - name: environment
    expression: "params.data.environment"
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [
          JSONPatch{
            op: "add", path: "/metadata/labels",
            value: has(object.metadata.labels) ? object.metadata.labels : {}
          },
          JSONPatch{
            op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/environment"),
            value: variables.environment
          }
        ]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: environment-label-binding.example.com
spec:
  policyName: environment-label.example.com
  paramRef:
    name: environment
    namespace: default
    parameterNotFoundAction: Allow
`;
  await kc('elsewhere', ['apply', '-f', '-'], { input: policy });
  await kc('elsewhere', ['create', 'configmap', 'before', '-n', 'prod', '--from-literal=a=b']);
  assert.equal(JSON.parse((await kc('elsewhere', ['get', 'configmap', '-n', 'prod', 'before', '-o', 'json'])).stdout).metadata.labels, undefined, 'no params, Allow: untouched');
  await kc('elsewhere', ['create', 'configmap', 'environment', '-n', 'default', '--from-literal=environment=staging']);
  await kc('elsewhere', ['create', 'configmap', 'after', '-n', 'prod', '--from-literal=a=b']);
  const labels = JSON.parse((await kc('elsewhere', ['get', 'configmap', '-n', 'prod', 'after', '-o', 'json'])).stdout).metadata.labels;
  assert.deepEqual(labels, { 'example.com/environment': 'staging' });
});

test('malformed policies are 422 with causes on kube\'s field paths', async () => {
  const bad = await kc('mutating', ['apply', '-f', '-'], {
    allowFail: true, input: `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: broken
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: "
`,
  });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /spec.mutations\[0\].applyConfiguration.expression/);
  for (const spec of ['x', { mutations: [{ patchType: 'Nope' }] }, { mutations: 7 }]) {
    const r = await admin('POST', '/clusters/root:mutating/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies', { apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicy', metadata: { name: 'broken' }, spec });
    assert.equal(r.status, 422, r.body);
    assert.equal(r.json.kind, 'Status');
    assert.ok(r.json.details.causes.length > 0, r.body);
  }
  const binding = await admin('POST', '/clusters/root:mutating/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings', { apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: {} });
  assert.equal(binding.status, 422, binding.body);
  assert.deepEqual(binding.json.details.causes.map((c: { field: string }) => c.field), ['spec.policyName']);
});

test('a policy that changes a CRD\'s spec on a label-only update: the spec is validated and the generation moves, as kube does after admission', async () => {
  await workspace('crdspec');
  const policy = `apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: crd-spec.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apiextensions.k8s.io"]
      apiVersions: ["v1"]
      operations: ["UPDATE"]
      resources: ["customresourcedefinitions"]
  matchConditions:
  - name: labelled
    expression: "has(object.metadata.labels) && 'mutate' in object.metadata.labels"
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        object.metadata.labels['mutate'] == 'bogus'
          ? [JSONPatch{op: "replace", path: "/spec/versions/0/schema/openAPIV3Schema/type", value: "string"}]
          : [JSONPatch{op: "add", path: "/spec/versions/0/additionalPrinterColumns", value: [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: crd-spec-binding.example.com
spec:
  policyName: crd-spec.example.com
`;
  await kc('crdspec', ['apply', '-f', '-'], { input: policy });
  const crd = async () => JSON.parse((await kc('crdspec', ['get', 'crd', 'pods.core.example.com', '-o', 'json'])).stdout);
  const before = await crd();
  // A mutation that breaks the schema is validated like the request's own change: 422, nothing stored.
  const refused = await eventually('the policy in force', async () => {
    const r = await kc('crdspec', ['label', 'crd', 'pods.core.example.com', 'mutate=bogus'], { allowFail: true });
    return r.code !== 0 && r;
  });
  assert.match(refused.stderr, /is invalid/);
  const unchanged = await crd();
  assert.equal(unchanged.spec.versions[0].schema.openAPIV3Schema.type, 'object');
  assert.equal(unchanged.metadata.generation, before.metadata.generation);
  // A mutation that changes the spec moves metadata.generation.
  await kc('crdspec', ['label', 'crd', 'pods.core.example.com', 'mutate=column']);
  const changed = await crd();
  assert.equal(changed.spec.versions[0].additionalPrinterColumns?.[0]?.name, 'Age');
  assert.equal(changed.metadata.generation, before.metadata.generation + 1);
});
