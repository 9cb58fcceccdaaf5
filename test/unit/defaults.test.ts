/**
 * kube's defaulting, kind by kind: a minimal object in, the defaulted object out, through the
 * served descriptor's `strategy.defaults` (the one hook the REST store calls on every write).
 * Expected objects are kube's: k8s.io/kubernetes pkg/apis/<group>/<version>/defaults.go and
 * zz_generated.defaults.go, and the defaults tests beside them (admissionregistration/v1
 * defaults_test.go, v1beta1 defaults_test.go `TestDefaultAdmissionPolicy`, flowcontrol/v1
 * defaults_test.go, core/v1 defaults_test.go `TestSetDefaultNamespace`, `TestSetDefaultSecret`,
 * `TestSetDefaultLimitRangeItem`), apiextensions v1 defaults_test.go.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';

type Row = { kind: string; group: string; in: Record<string, unknown>; out: Record<string, unknown>; why: string };

const WEBHOOK_DEFAULTS = { failurePolicy: 'Fail', matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, timeoutSeconds: 10 };
const MATCH_DEFAULTS = { matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {} };

/** One row per served kind (kinds without a visible default: the object comes out unchanged). */
const ROWS: Row[] = [
  { group: '', kind: 'Namespace', why: 'SetDefaults_Namespace, SetDefaults_NamespaceStatus',
    in: { metadata: { name: 'ns' } }, out: { metadata: { name: 'ns', labels: { 'kubernetes.io/metadata.name': 'ns' } }, status: { phase: 'Active' } } },
  { group: '', kind: 'Namespace', why: 'no name yet (generateName): no label; a set phase stays',
    in: { metadata: { generateName: 'ns-' }, status: { phase: 'Terminating' } }, out: { metadata: { generateName: 'ns-' }, status: { phase: 'Terminating' } } },
  { group: '', kind: 'ConfigMap', why: 'SetDefaults_ConfigMap: data {} (omitted by JSON)',
    in: { metadata: { name: 'c' } }, out: { metadata: { name: 'c' } } },
  { group: '', kind: 'Secret', why: 'SetDefaults_Secret', in: { metadata: { name: 's' } }, out: { metadata: { name: 's' }, type: 'Opaque' } },
  { group: '', kind: 'Secret', why: 'a type given stays', in: { metadata: { name: 's' }, type: 'kubernetes.io/tls' }, out: { metadata: { name: 's' }, type: 'kubernetes.io/tls' } },
  { group: '', kind: 'ServiceAccount', why: 'none', in: { metadata: { name: 'sa' } }, out: { metadata: { name: 'sa' } } },
  { group: '', kind: 'Event', why: 'none', in: { metadata: { name: 'e' } }, out: { metadata: { name: 'e' } } },
  { group: '', kind: 'LimitRange', why: 'SetDefaults_LimitRangeItem: Container default ← max, defaultRequest ← default, then min',
    in: { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', max: { cpu: '2', memory: '1Gi' }, min: { cpu: '100m', 'ephemeral-storage': '1Gi' }, default: { cpu: '1' } }, { type: 'Pod', max: { cpu: '4' } }] } },
    out: { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', max: { cpu: '2', memory: '1Gi' }, min: { cpu: '100m', 'ephemeral-storage': '1Gi' }, default: { cpu: '1', memory: '1Gi' }, defaultRequest: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '1Gi' } }, { type: 'Pod', max: { cpu: '4' } }] } } },
  { group: '', kind: 'LimitRange', why: 'Container without bounds: empty default maps',
    in: { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container' }] } }, out: { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', default: {}, defaultRequest: {} }] } } },
  { group: '', kind: 'ResourceQuota', why: 'none visible (quantities kept as sent)', in: { metadata: { name: 'q' }, spec: { hard: { pods: '10' } } }, out: { metadata: { name: 'q' }, spec: { hard: { pods: '10' } } } },
  { group: 'events.k8s.io', kind: 'Event', why: 'none', in: { metadata: { name: 'e' } }, out: { metadata: { name: 'e' } } },
  { group: 'coordination.k8s.io', kind: 'Lease', why: 'none', in: { metadata: { name: 'l' }, spec: {} }, out: { metadata: { name: 'l' }, spec: {} } },
  { group: 'rbac.authorization.k8s.io', kind: 'Role', why: 'none', in: { metadata: { name: 'r' } }, out: { metadata: { name: 'r' } } },
  { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole', why: 'none', in: { metadata: { name: 'r' } }, out: { metadata: { name: 'r' } } },
  { group: 'rbac.authorization.k8s.io', kind: 'RoleBinding', why: 'SetDefaults_RoleBinding, SetDefaults_Subject',
    in: { metadata: { name: 'b' }, roleRef: { apiGroup: '', kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'u' }, { kind: 'Group', name: 'g', apiGroup: '' }, { kind: 'ServiceAccount', name: 'sa', namespace: 'n' }, { kind: 'User', name: 'x', apiGroup: 'example.com' }] },
    out: { metadata: { name: 'b' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'u', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'Group', name: 'g', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'ServiceAccount', name: 'sa', namespace: 'n' }, { kind: 'User', name: 'x', apiGroup: 'example.com' }] } },
  { group: 'rbac.authorization.k8s.io', kind: 'ClusterRoleBinding', why: 'SetDefaults_ClusterRoleBinding (roleRef.apiGroup absent)',
    in: { metadata: { name: 'b' }, roleRef: { kind: 'ClusterRole', name: 'r' } }, out: { metadata: { name: 'b' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'r' } } },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingWebhookConfiguration', why: 'SetDefaults_ValidatingWebhook, _Rule, _ServiceReference',
    in: { metadata: { name: 'w' }, webhooks: [{ name: 'a.example.com', rules: [{}], clientConfig: { service: { name: 's', namespace: 'n' } } }] },
    out: { metadata: { name: 'w' }, webhooks: [{ name: 'a.example.com', rules: [{ scope: '*' }], clientConfig: { service: { name: 's', namespace: 'n', port: 443 } }, ...WEBHOOK_DEFAULTS }] } },
  { group: 'admissionregistration.k8s.io', kind: 'MutatingWebhookConfiguration', why: 'SetDefaults_MutatingWebhook: also reinvocationPolicy Never',
    in: { metadata: { name: 'w' }, webhooks: [{ name: 'a.example.com', clientConfig: { url: 'https://x' } }] },
    out: { metadata: { name: 'w' }, webhooks: [{ name: 'a.example.com', clientConfig: { url: 'https://x' }, ...WEBHOOK_DEFAULTS, reinvocationPolicy: 'Never' }] } },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingAdmissionPolicy', why: 'TestDefaultAdmissionPolicy "ValidatingAdmissionPolicy", "scope=*"',
    in: { metadata: { name: 'p' }, spec: { matchConstraints: { resourceRules: [{}] } } },
    out: { metadata: { name: 'p' }, spec: { failurePolicy: 'Fail', matchConstraints: { ...MATCH_DEFAULTS, resourceRules: [{ scope: '*' }] } } } },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingAdmissionPolicy', why: 'no matchConstraints: left absent (validation requires it)',
    in: { metadata: { name: 'p' }, spec: {} }, out: { metadata: { name: 'p' }, spec: { failurePolicy: 'Fail' } } },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingAdmissionPolicyBinding', why: 'TestDefaultAdmissionPolicy "ValidatingAdmissionPolicyBinding"',
    in: { metadata: { name: 'b' }, spec: { policyName: 'p', matchResources: {} } }, out: { metadata: { name: 'b' }, spec: { policyName: 'p', matchResources: MATCH_DEFAULTS } } },
  { group: 'admissionregistration.k8s.io', kind: 'MutatingAdmissionPolicy', why: 'TestDefaultAdmissionPolicy "MutatingAdmissionPolicy": reinvocationPolicy is not defaulted',
    in: { metadata: { name: 'p' }, spec: { matchConstraints: {} } }, out: { metadata: { name: 'p' }, spec: { failurePolicy: 'Fail', matchConstraints: MATCH_DEFAULTS } } },
  { group: 'admissionregistration.k8s.io', kind: 'MutatingAdmissionPolicyBinding', why: 'SetObjectDefaults_MutatingAdmissionPolicyBinding',
    in: { metadata: { name: 'b' }, spec: { policyName: 'p', matchResources: { excludeResourceRules: [{}] } } },
    out: { metadata: { name: 'b' }, spec: { policyName: 'p', matchResources: { ...MATCH_DEFAULTS, excludeResourceRules: [{ scope: '*' }] } } } },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', why: 'SetDefaults_CustomResourceDefinition(Spec), _ServiceReference',
    in: { metadata: { name: 'foos.example.com' }, spec: { group: 'example.com', names: { kind: 'Foo', plural: 'foos' }, scope: 'Namespaced', versions: [{ name: 'v1', served: true, storage: true }] } },
    out: { metadata: { name: 'foos.example.com' }, spec: { group: 'example.com', names: { kind: 'Foo', plural: 'foos', singular: 'foo', listKind: 'FooList' }, scope: 'Namespaced', versions: [{ name: 'v1', served: true, storage: true }], conversion: { strategy: 'None' } }, status: { storedVersions: ['v1'] } } },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', why: 'webhook conversion service port 443',
    in: { metadata: { name: 'c' }, spec: { names: { kind: 'Foo', singular: 'f', listKind: 'Fs' }, conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { name: 's', namespace: 'n' } } } } }, status: { storedVersions: ['v2'] } },
    out: { metadata: { name: 'c' }, spec: { names: { kind: 'Foo', singular: 'f', listKind: 'Fs' }, conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { name: 's', namespace: 'n', port: 443 } } } } }, status: { storedVersions: ['v2'] } } },
  { group: 'certificates.k8s.io', kind: 'CertificateSigningRequest', why: 'none (certificates/v1 registers no defaulters)',
    in: { metadata: { name: 'c' }, spec: { signerName: 'example.com/x' } }, out: { metadata: { name: 'c' }, spec: { signerName: 'example.com/x' } } },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'FlowSchema', why: 'SetDefaults_FlowSchemaSpec: matchingPrecedence 1000',
    in: { metadata: { name: 'f' }, spec: { priorityLevelConfiguration: { name: 'p' } } }, out: { metadata: { name: 'f' }, spec: { priorityLevelConfiguration: { name: 'p' }, matchingPrecedence: 1000 } } },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'PriorityLevelConfiguration', why: 'SetDefaults_LimitedPriorityLevelConfiguration, _QueuingConfiguration',
    in: { metadata: { name: 'p' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue', queuing: {} } } } },
    out: { metadata: { name: 'p' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 30, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } } } } } },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'PriorityLevelConfiguration', why: 'SetDefaults_ExemptPriorityLevelConfiguration',
    in: { metadata: { name: 'p' }, spec: { type: 'Exempt', exempt: {} } }, out: { metadata: { name: 'p' }, spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } } } },
];

function descriptorOf(group: string, kind: string) {
  const d = BUILTIN_RESOURCES.find((x) => x.group === group && x.kind === kind);
  assert.ok(d, `${group}/${kind} is served`);
  return d;
}

for (const row of ROWS) {
  test(`defaults: ${row.group || 'core'} ${row.kind} — ${row.why}`, () => {
    const obj = structuredClone(row.in) as unknown as KubeObject;
    descriptorOf(row.group, row.kind).strategy?.defaults?.(obj);
    assert.deepEqual(obj, row.out);
    // Defaulting twice changes nothing (it runs again on what admission returns).
    descriptorOf(row.group, row.kind).strategy?.defaults?.(obj);
    assert.deepEqual(obj, row.out);
  });
}

test('every stored built-in kind has a row; malformed shapes never throw', () => {
  for (const d of BUILTIN_RESOURCES.filter((x) => !x.virtual)) {
    assert.ok(ROWS.some((r) => r.group === d.group && r.kind === d.kind), `no defaults row for ${d.group}/${d.kind}`);
    for (const bad of [{ spec: 'x', status: 7, roleRef: [], subjects: 'x', webhooks: [null, 3, 'x'], type: 5 }, { spec: { limits: [{ type: 'Container', max: 'x' }], matchConstraints: 3, limited: 'x', exempt: [] } }]) {
      const obj = { metadata: { name: 'x' }, ...structuredClone(bad) } as unknown as KubeObject;
      assert.doesNotThrow(() => d.strategy?.defaults?.(obj), `${d.kind}`);
    }
  }
});
