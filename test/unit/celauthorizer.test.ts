/**
 * CEL's `authorizer` in admission expressions (src/admission/celauthorizer.ts; kube's
 * k8s.io/apiserver/pkg/cel/library/authz.go): the attributes each check sends, the Decision's
 * functions, service accounts, `authorizer.requestResource`, errors, compilation, and the
 * variable in validating and mutating policies and in webhooks' matchConditions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { ClusterAPIs } from '../../src/apiextensions/registry.js';
import type { WebhookAttributes } from '../../src/registry/store.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { compileExpression } from '../../src/admission/match.js';
import { celAuthorizer, type AdmissionAuthorize, type AuthorizationCheck } from '../../src/admission/celauthorizer.js';
import { POLICIES_GR, POLICY_BINDINGS_GR, ValidatingPolicies, validatePolicy } from '../../src/admission/policies.js';
import { VALIDATING_WEBHOOKS_GR, Webhooks } from '../../src/admission/webhooks.js';
import { MUTATING_POLICIES_GR, MUTATING_POLICY_BINDINGS_GR, MutatingPolicies, validateMutatingPolicy } from '../../src/admission/mutating.js';
import type { UserInfo } from '../../src/registry/store.js';
import { objectCache } from './objectcache.js';

const CONFIGMAPS = BUILTIN_RESOURCES.find((d) => d.group === '' && d.plural === 'configmaps')!;
const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };

/** An authorizer that allows what `allow` says and records every check. */
function recorder(allow: (user: UserInfo, c: AuthorizationCheck) => boolean) {
  const calls: Array<{ user: UserInfo; cluster: string; attributes: AuthorizationCheck }> = [];
  const authorize: AdmissionAuthorize = (user, cluster, attributes) => {
    calls.push({ user, cluster, attributes });
    return allow(user, attributes) ? { allowed: true, reason: 'RBAC: allowed by test' } : { allowed: false, reason: 'no rule' };
  };
  return { calls, authorize };
}

const evaluate = (expression: string, authorize: AdmissionAuthorize | undefined) =>
  compileExpression(expression)({ authorizer: celAuthorizer(authorize, alice, 'root:org', { group: '', resource: 'configmaps', subresource: '', namespace: 'ns', name: 'cm' }) });

test('resource checks send kube\'s attributes for the request\'s user and logical cluster', () => {
  const r = recorder((_u, c) => c.resource === 'configmaps' && c.verb === 'get');
  assert.equal(evaluate("authorizer.group('').resource('configmaps').namespace('ns').name('x').check('get').allowed()", r.authorize), true);
  assert.deepEqual(r.calls[0], {
    user: alice, cluster: 'root:org',
    attributes: { verb: 'get', isResourceRequest: true, path: '', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'ns', name: 'x' },
  });
  assert.equal(evaluate("authorizer.group('apps').resource('deployments').subresource('scale').check('update').allowed()", r.authorize), false);
  assert.deepEqual(r.calls[1]!.attributes, { verb: 'update', isResourceRequest: true, path: '', apiGroup: 'apps', resource: 'deployments', subresource: 'scale', namespace: '', name: '' });
  // Selectors (AuthzSelectors) compile and leave the check as it is.
  assert.equal(evaluate("authorizer.group('').resource('configmaps').labelSelector('a=b').fieldSelector('x=y').check('get').allowed()", r.authorize), true);
});

test('Decision: allowed, reason, errored, error', () => {
  const r = recorder((_u, c) => c.verb === 'get');
  assert.equal(evaluate("authorizer.group('').resource('pods').check('get').reason()", r.authorize), 'RBAC: allowed by test');
  assert.equal(evaluate("authorizer.group('').resource('pods').check('list').allowed()", r.authorize), false);
  assert.equal(evaluate("authorizer.group('').resource('pods').check('list').errored()", r.authorize), false);
  assert.equal(evaluate("authorizer.group('').resource('pods').check('list').error()", r.authorize), '');
  const failing: AdmissionAuthorize = () => { throw new Error('authorizer unreachable'); };
  assert.equal(evaluate("authorizer.group('').resource('pods').check('get').errored()", failing), true);
  assert.equal(evaluate("authorizer.group('').resource('pods').check('get').error()", failing), 'authorizer unreachable');
  assert.equal(evaluate("authorizer.group('').resource('pods').check('get').allowed()", failing), false);
  assert.equal(evaluate("authorizer.group('').resource('pods').check('get').errored()", undefined), true, 'no authorizer: errored');
});

test('path checks, requestResource and serviceAccount', () => {
  const r = recorder(() => true);
  assert.equal(evaluate("authorizer.path('/healthz').check('get').allowed()", r.authorize), true);
  assert.deepEqual(r.calls[0]!.attributes, { verb: 'get', isResourceRequest: false, path: '/healthz', apiGroup: '', resource: '', subresource: '', namespace: '', name: '' });
  assert.equal(evaluate("authorizer.requestResource.check('delete').allowed()", r.authorize), true);
  assert.deepEqual(r.calls[1]!.attributes, { verb: 'delete', isResourceRequest: true, path: '', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'ns', name: 'cm' });
  assert.equal(evaluate("authorizer.requestResource.subresource('status').check('update').allowed()", r.authorize), true);
  assert.equal(r.calls[2]!.attributes.subresource, 'status');
  assert.equal(evaluate("authorizer.serviceAccount('default', 'builder').group('').resource('secrets').check('list').allowed()", r.authorize), true);
  assert.deepEqual(r.calls[3]!.user, { name: 'system:serviceaccount:default:builder', groups: ['system:serviceaccounts', 'system:serviceaccounts:default'] });
  assert.equal(r.calls[3]!.cluster, 'root:org');
});

test('kube\'s runtime errors: empty path or resource, invalid service account', () => {
  const r = recorder(() => true);
  assert.throws(() => evaluate("authorizer.path('  ').check('get').allowed()", r.authorize), /path must not be empty/);
  assert.throws(() => evaluate("authorizer.group('').resource('').check('get').allowed()", r.authorize), /resource must not be empty/);
  assert.throws(() => evaluate("authorizer.serviceAccount('default', 'bad@name').path('/').check('get').allowed()", r.authorize), /Invalid service account name/);
  assert.throws(() => evaluate("authorizer.serviceAccount('Not.A.Label', 'ok').path('/').check('get').allowed()", r.authorize), /Invalid service account namespace/);
  assert.equal(r.calls.length, 0);
});

test('policies with kube\'s authorizer expressions validate; syntax errors are still refused', () => {
  const policy = (expression: string): KubeObject => ({
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' },
    spec: { matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }, validations: [{ expression }] },
  });
  for (const e of [
    "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('get').allowed()",
    "authorizer.requestResource.check('delete').allowed() || authorizer.path('/metrics').check('get').reason() == ''",
    "!authorizer.serviceAccount('kube-system', 'replicaset-controller').group('apps').resource('replicasets').check('create').errored()",
  ]) assert.deepEqual(validatePolicy(policy(e)), [], e);
  assert.equal(validatePolicy(policy("authorizer.group('').resource(")).length, 1);
});

const rules = { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: '*' }] };
const attributes = (user: UserInfo, object: KubeObject): WebhookAttributes => ({ operation: 'CREATE', cluster: 'root:org', desc: CONFIGMAPS, subresource: '', namespace: 'ns', name: 'cm', user, object, dryRun: false });
const cm = (data: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns' }, data });
const apis = () => ({ descriptors: [] }) as unknown as ClusterAPIs;

test('ValidatingAdmissionPolicy: validations, variables, messageExpression and matchConditions see the authorizer', async () => {
  const policy: KubeObject = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'secret-readers-only' },
    spec: {
      failurePolicy: 'Fail', matchConstraints: rules,
      matchConditions: [{ name: 'not-admin', expression: "!authorizer.group('').resource('nodes').check('delete').allowed()" }],
      variables: [{ name: 'secrets', expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get')" }],
      validations: [{ expression: 'variables.secrets.allowed()', messageExpression: "'user ' + request.userInfo.username + ' may not read secrets'" }],
    },
  };
  const binding: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: { policyName: 'secret-readers-only', validationActions: ['Deny'] } };
  const r = recorder((u, c) => (u.name === 'reader' && c.resource === 'secrets') || (u.name === 'admin'));
  const vap = new ValidatingPolicies({ cache: objectCache([[POLICIES_GR, policy], [POLICY_BINDINGS_GR, binding]]), apis, authorize: r.authorize });
  await vap.validate(attributes({ name: 'reader', groups: [] }, cm()));
  await vap.validate(attributes({ name: 'admin', groups: [] }, cm())); // matchCondition false: not evaluated
  await assert.rejects(vap.validate(attributes(alice, cm())), (err: Error & { code?: number }) => {
    assert.match(err.message, /ValidatingAdmissionPolicy 'secret-readers-only' with binding 'b' denied request: user alice may not read secrets/);
    return true;
  });
  assert.ok(r.calls.every((c) => c.cluster === 'root:org'));
  assert.deepEqual(r.calls.find((c) => c.user.name === 'reader' && c.attributes.resource === 'secrets')?.attributes.namespace, 'ns');
});

test('MutatingAdmissionPolicy: a mutation conditioned on an authorization check', async () => {
  const policy: KubeObject = {
    apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicy', metadata: { name: 'mark' },
    spec: {
      failurePolicy: 'Fail', reinvocationPolicy: 'Never', matchConstraints: rules,
      mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: "Object{data: {'privileged': string(authorizer.requestResource.check('delete').allowed())}}" } }],
    },
  };
  assert.deepEqual(validateMutatingPolicy(policy), []);
  const binding: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1beta1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: { policyName: 'mark' } };
  const r = recorder((u) => u.name === 'admin');
  const map = new MutatingPolicies({ cache: objectCache([[MUTATING_POLICIES_GR, policy], [MUTATING_POLICY_BINDINGS_GR, binding]]), apis, authorize: r.authorize });
  assert.deepEqual((await map.mutate(attributes({ name: 'admin', groups: [] }, cm())))?.data, { privileged: 'true' });
  assert.deepEqual((await map.mutate(attributes(alice, cm())))?.data, { privileged: 'false' });
});

test('admission webhooks: matchConditions see the authorizer (a false condition skips the call)', async () => {
  const config: KubeObject = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'w' },
    webhooks: [{
      name: 'only-for-non-admins.example.com', clientConfig: { url: 'https://127.0.0.1:1/validate' }, failurePolicy: 'Fail', sideEffects: 'None', admissionReviewVersions: ['v1'],
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: '*' }],
      matchConditions: [{ name: 'not-admin', expression: "!authorizer.requestResource.check('delete').allowed() && !authorizer.group('').resource('nodes').check('*').errored()" }],
      timeoutSeconds: 1,
    }],
  };
  const r = recorder((u) => u.name === 'admin');
  const hooks = new Webhooks({ cache: objectCache([[VALIDATING_WEBHOOKS_GR, config]]), authorize: r.authorize });
  await hooks.validate(attributes({ name: 'admin', groups: [] }, cm())); // not called
  await assert.rejects(hooks.validate(attributes(alice, cm())), /failed calling webhook "only-for-non-admins.example.com"/);
  assert.deepEqual(r.calls[0]!.attributes, { verb: 'delete', isResourceRequest: true, path: '', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'ns', name: 'cm' });
});
