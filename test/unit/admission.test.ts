/**
 * Admission configurations and policies: rule matching shared by webhooks and policies, and
 * malformed objects refused with causes (422), never a crash in defaulting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { ResourceDescriptor } from '../../src/apis/types.js';
import type { WebhookAttributes } from '../../src/registry/store.js';
import { matchResource, ruleMatches, ruleOf } from '../../src/admission/match.js';
import type { ClusterAPIs } from '../../src/apiextensions/registry.js';
import { defaultWebhookConfiguration, validateWebhookConfiguration } from '../../src/admission/webhooks.js';
import { defaultPolicy, validatePolicy, validatePolicyBinding } from '../../src/admission/policies.js';

const obj = (o: Record<string, unknown>): KubeObject => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'X', metadata: { name: 'x' }, ...o });

test('rules: resources with subresources and wildcards, scope, names, versions (kube\'s matcher)', () => {
  const desc = { group: '', version: 'v1', plural: 'pods', namespaced: true } as ResourceDescriptor;
  const a = (subresource = '', name = 'p'): WebhookAttributes => ({ operation: 'CREATE', cluster: 'c', desc, subresource, namespace: 'n', name, user: { name: 'u', groups: [] }, dryRun: false });
  const rule = (resources: string[], extra: Record<string, unknown> = {}) => ruleOf({ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources, ...extra });
  assert.equal(ruleMatches(rule(['pods']), a()), true);
  assert.equal(ruleMatches(rule(['pods']), a('status')), false);
  assert.equal(ruleMatches(rule(['pods/status']), a('status')), true);
  assert.equal(ruleMatches(rule(['*']), a('status')), false);
  assert.equal(ruleMatches(rule(['*/*']), a('status')), true);
  assert.equal(ruleMatches(rule(['pods/*']), a()), true);
  assert.equal(ruleMatches(rule(['*/status']), a('status')), true);
  assert.equal(ruleMatches(rule(['pods'], { scope: 'Cluster' }), a()), false);
  assert.equal(ruleMatches(rule(['pods'], { resourceNames: ['q'] }), a()), false);
  assert.equal(ruleMatches(rule(['pods'], { apiVersions: ['v2'] }), a()), false);
  // Equivalent: a rule naming another served version of the resource matches, as that version.
  const v2 = { ...desc, version: 'v2' } as ResourceDescriptor;
  const apis = { descriptors: [desc, v2], store: () => ({ groupResource: 'core/pods' }) } as unknown as ClusterAPIs;
  assert.equal(matchResource([rule(['pods'], { apiVersions: ['v2'] })], a(), true, apis)?.desc, v2, 'Equivalent: any version');
  assert.equal(matchResource([rule(['pods'], { apiVersions: ['v2'] })], a(), false, apis), undefined, 'Exact: only its own');
});

test('malformed webhook configurations are refused with causes, and defaulting never throws', () => {
  for (const webhooks of ['x', ['x', 5], [{ name: 'a.b.c', rules: ['y'], matchConditions: 'z' }]]) {
    const o = obj({ webhooks });
    assert.doesNotThrow(() => defaultWebhookConfiguration(o, true));
    assert.ok(validateWebhookConfiguration(o, true).length > 0, JSON.stringify(webhooks));
  }
  const causes = validateWebhookConfiguration(obj({ webhooks: ['x'] }), false);
  assert.equal(causes[0]!.field, 'webhooks[0]');
});

test('malformed policies and bindings are refused with causes, and defaulting never throws', () => {
  for (const spec of ['x', 5, null, [], { matchConstraints: 'x', validations: [{ expression: 'true' }] }, { matchConstraints: { resourceRules: ['x'] }, validations: [{ expression: 'true' }] }]) {
    const o = obj({ spec });
    assert.doesNotThrow(() => defaultPolicy(o), JSON.stringify(spec));
    assert.ok(validatePolicy(o).length > 0, JSON.stringify(spec));
  }
  assert.deepEqual(validatePolicyBinding(obj({ spec: 'x' })).map((c) => c.field), ['spec']);
});
