/**
 * MutatingAdmissionPolicy (src/admission/mutating.ts): typed object construction in CEL, the
 * ApplyConfiguration merge and JSONPatch, validation with causes on kube's field paths, params,
 * failurePolicy, and kube's reinvocation across policies and other mutating steps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { ResourceDescriptor } from '../../src/apis/types.js';
import type { ClusterAPIs } from '../../src/apiextensions/registry.js';
import type { WebhookAttributes } from '../../src/registry/store.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { compileExpression, celToJSON, rewriteObjectConstruction } from '../../src/admission/match.js';
import { applyMutation, defaultMutatingPolicy, MutatingPolicies, MUTATING_POLICIES_GR, MUTATING_POLICY_BINDINGS_GR, validateMutatingPolicy, validateMutatingPolicyBinding } from '../../src/admission/mutating.js';
import { chainAdmission } from '../../src/admission/index.js';
import { objectCache } from './objectcache.js';

const CONFIGMAPS = BUILTIN_RESOURCES.find((d) => d.group === '' && d.plural === 'configmaps')!;
const NAMESPACES = BUILTIN_RESOURCES.find((d) => d.group === '' && d.plural === 'namespaces')!;
const cm = (labels: Record<string, string> = {}, data: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', labels }, data });

const apis = { descriptors: BUILTIN_RESOURCES, store: () => undefined } as unknown as ClusterAPIs;
const attrs = (object: KubeObject, desc: ResourceDescriptor = CONFIGMAPS): WebhookAttributes => ({ operation: 'CREATE', cluster: 'c', desc, subresource: '', namespace: 'n', name: 'c', user: { name: 'u', groups: [] }, object, dryRun: false });
const policy = (name: string, spec: Record<string, unknown>): KubeObject => {
  const o: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicy', metadata: { name }, spec: { matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] }, ...spec } };
  defaultMutatingPolicy(o);
  return o;
};
const binding = (name: string, policyName: string, extra: Record<string, unknown> = {}): KubeObject => ({ apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName, ...extra } });
const applyLabel = (k: string, v: string) => ({ patchType: 'ApplyConfiguration', applyConfiguration: { expression: `Object{metadata: Object.metadata{labels: {"${k}": "${v}"}}}` } });

test('typed object construction and jsonpatch.escapeKey (kube\'s mutation CEL environment)', () => {
  assert.equal(rewriteObjectConstruction('Object{spec: Object.spec{a: "Object{x: 1}", b: [Object.spec.b{name: "n"}]}}'), '{"spec": {"a": "Object{x: 1}", "b": [{"name": "n"}]}}');
  const run = (e: string) => celToJSON(compileExpression(e, true)({ object: { x: 3n } }));
  assert.deepEqual(run('[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/env"), value: object.x}]'), [{ op: 'add', path: '/metadata/labels/example.com~1env', value: 3 }]);
  assert.deepEqual(run('object.x > 2 ? Object{spec: Object.spec{m: {"k": 1}}} : Object{}'), { spec: { m: { k: 1 } } });
  assert.throws(() => compileExpression('Object{spec: }', true), /compilation failed/);
  assert.throws(() => compileExpression('Object{a: 1}'), /compilation failed/, 'only in the mutation environment');
});

test('ApplyConfiguration merges by the kind\'s schema; atomic fields are refused; JSONPatch applies RFC 6902', () => {
  const merged = applyMutation(cm({ a: '1' }, { k: 'v' }), 'ApplyConfiguration', { metadata: { labels: { b: '2' } }, data: { l: 'w' } }, CONFIGMAPS);
  assert.deepEqual(merged.metadata.labels, { a: '1', b: '2' });
  assert.deepEqual(merged.data, { k: 'v', l: 'w' });
  const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', finalizers: ['a'] } };
  assert.deepEqual(applyMutation(ns, 'ApplyConfiguration', { metadata: { finalizers: ['b'] } }, NAMESPACES).metadata.finalizers, ['a', 'b'], 'a set merges');
  const untyped = { ...CONFIGMAPS, group: 'x.example.com', kind: 'Thing', schema: { type: 'object', properties: { spec: { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } } } } } } } as ResourceDescriptor;
  assert.throws(() => applyMutation({ apiVersion: 'x.example.com/v1', kind: 'Thing', metadata: { name: 't' }, spec: { items: ['a'] } }, 'ApplyConfiguration', { spec: { items: ['b'] } }, untyped), /may not mutate atomic arrays, maps or structs: \.spec\.items/);
  assert.throws(() => applyMutation(cm(), 'ApplyConfiguration', [1], CONFIGMAPS), /must evaluate to an Object/);
  const patched = applyMutation(cm({ a: '1' }), 'JSONPatch', [{ op: 'add', path: '/metadata/labels/b', value: '2' }, { op: 'remove', path: '/metadata/labels/a' }], CONFIGMAPS);
  assert.deepEqual(patched.metadata.labels, { b: '2' });
  assert.throws(() => applyMutation(cm(), 'JSONPatch', [{ op: 'replace', path: '/nope/x', value: 1 }], CONFIGMAPS), /JSON Patch/);
});

test('validation: causes on kube\'s field paths, never a throw on malformed objects', () => {
  const fields = (spec: unknown) => { const o = { apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicy', metadata: { name: 'p' }, spec } as KubeObject; assert.doesNotThrow(() => defaultMutatingPolicy(o)); return validateMutatingPolicy(o).map((c) => c.field); };
  assert.deepEqual(fields({ matchConstraints: { resourceRules: [{}] }, mutations: [applyLabel('a', 'b')], reinvocationPolicy: 'Never' }), []);
  assert.deepEqual(fields({}), ['spec.mutations', 'spec.reinvocationPolicy', 'spec.matchConstraints']);
  assert.deepEqual(fields({ matchConstraints: { resourceRules: [{}] }, mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{' } }, { patchType: 'JSONPatch', applyConfiguration: { expression: '[]' } }, { patchType: 'Strategic' }, 'x'], reinvocationPolicy: 'Always', failurePolicy: 'Maybe' }),
    ['spec.failurePolicy', 'spec.mutations[0].applyConfiguration.expression', 'spec.mutations[1].applyConfiguration', 'spec.mutations[1].jsonPatch', 'spec.mutations[2].patchType', 'spec.mutations[3]', 'spec.reinvocationPolicy']);
  assert.deepEqual(fields('x'), ['spec']);
  assert.deepEqual(fields({ mutations: 'x', variables: 5, matchConstraints: { resourceRules: [{}] } }), ['spec.variables', 'spec.mutations', 'spec.reinvocationPolicy']);
  assert.deepEqual(validateMutatingPolicyBinding({ metadata: { name: 'b' }, spec: { paramRef: { name: 'x' } } } as KubeObject).map((c) => c.field), ['spec.policyName', 'spec.paramRef.parameterNotFoundAction']);
  assert.deepEqual(validateMutatingPolicyBinding({ metadata: { name: 'b' }, spec: [] } as unknown as KubeObject).map((c) => c.field), ['spec']);
});

test('policies mutate matching requests with params, matchConditions and failurePolicy', async () => {
  const params: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'params', namespace: 'n' }, data: { team: 'blue' } };
  const cache = objectCache([
    [MUTATING_POLICIES_GR, policy('team', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, variables: [{ name: 'team', expression: 'params.data.team' }], matchConditions: [{ name: 'unlabelled', expression: '!has(object.metadata.labels) || !("team" in object.metadata.labels)' }], mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"team": variables.team}}}' } }] })],
    [MUTATING_POLICY_BINDINGS_GR, binding('team', 'team', { paramRef: { name: 'params', parameterNotFoundAction: 'Deny' } })],
    ['core/configmaps', params],
  ]);
  const p = new MutatingPolicies({ cache, apis: () => apis });
  assert.deepEqual((await p.mutate(attrs(cm())))!.metadata.labels, { team: 'blue' });
  assert.deepEqual((await p.mutate(attrs(cm({ team: 'red' }))))!.metadata.labels, { team: 'red' }, 'matchConditions false: untouched');
  assert.deepEqual((await p.mutate({ ...attrs(cm()), operation: 'UPDATE' }))!.metadata.labels, {}, 'operation not matched');
  const missing = new MutatingPolicies({ cache: objectCache([[MUTATING_POLICIES_GR, policy('team', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, mutations: [applyLabel('a', 'b')] })], [MUTATING_POLICY_BINDINGS_GR, binding('team', 'team', { paramRef: { name: 'params', parameterNotFoundAction: 'Deny' } })]]), apis: () => apis });
  await assert.rejects(missing.mutate(attrs(cm())), (e: { code: number; message: string }) => e.code === 403 && /no params found/.test(e.message));
  const failing = (failurePolicy: string) => new MutatingPolicies({ cache: objectCache([[MUTATING_POLICIES_GR, policy('bad', { failurePolicy, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: '[JSONPatch{op: "replace", path: "/spec/x", value: 1}]' } }] })], [MUTATING_POLICY_BINDINGS_GR, binding('bad', 'bad')]]), apis: () => apis });
  await assert.rejects(failing('Fail').mutate(attrs(cm())), (e: { code: number; message: string }) => e.code === 422 && e.message.startsWith('configmaps "c" is invalid: policy \'bad\' with binding \'bad\' denied request: error applying patch: JSON Patch'));
  assert.deepEqual(await failing('Ignore').mutate(attrs(cm())), cm());
});

test('reinvocation: an IfNeeded policy runs again after a later step changed the object, a Never one does not', async () => {
  let reinvocations = 0;
  const cache = objectCache([
    [MUTATING_POLICIES_GR, policy('ifneeded', { reinvocationPolicy: 'IfNeeded', mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"seen": has(object.metadata.labels) && "late" in object.metadata.labels ? "late" : "early"}}}' } }] })],
    [MUTATING_POLICIES_GR, policy('never', { reinvocationPolicy: 'Never', mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{annotations: {"never": has(object.metadata.labels) && "late" in object.metadata.labels ? "late" : "early"}}}' } }] })],
    [MUTATING_POLICY_BINDINGS_GR, binding('ifneeded', 'ifneeded')],
    [MUTATING_POLICY_BINDINGS_GR, binding('never', 'never')],
  ]);
  const policies = new MutatingPolicies({ cache, apis: () => apis });
  const mutate = policies.mutate.bind(policies);
  policies.mutate = async (a, rc) => { if (rc?.isReinvoke) reinvocations++; return mutate(a, rc); };
  // A later mutating step (as a webhook would) adds a label once.
  const later = { mutate: async (a: WebhookAttributes) => ({ ...a.object!, metadata: { ...a.object!.metadata, labels: { ...a.object!.metadata.labels, late: 'x' } } }), validate: async () => {} };
  const out = (await chainAdmission([], policies, later).mutate(attrs(cm())))!;
  assert.equal(out.metadata.labels?.seen, 'late', 'the IfNeeded policy saw the later change');
  assert.equal(out.metadata.annotations?.never, 'early', 'the Never policy ran once');
  assert.equal(reinvocations, 1, 'the chain ran its mutations a second time, once');
  const alone = (await chainAdmission([], policies).mutate(attrs(cm())))!;
  assert.equal(alone.metadata.labels?.seen, 'early');
});

test('--runtime-config turns MutatingAdmissionPolicy on (off by default, as kube 1.34 and kcp); unknown group/versions and values are refused', async () => {
  const { parseRuntimeConfig } = await import('../../src/apis/runtimeconfig.js');
  const { servedBuiltins } = await import('../../src/apis/builtin.js');
  const kinds = (rc?: Record<string, boolean>) => servedBuiltins(rc).filter((d) => d.group === 'admissionregistration.k8s.io' && d.version === 'v1beta1').map((d) => d.kind);
  assert.deepEqual(kinds(), []);
  assert.deepEqual(kinds(parseRuntimeConfig('admissionregistration.k8s.io/v1beta1')), ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);
  assert.deepEqual(kinds(parseRuntimeConfig('admissionregistration.k8s.io/v1beta1=false')), []);
  assert.throws(() => parseRuntimeConfig('apps/v1=true'), /unknown --runtime-config group\/version "apps\/v1"/);
  assert.throws(() => parseRuntimeConfig('admissionregistration.k8s.io/v1beta1=yes'), /invalid --runtime-config value "yes"/);
});
