/**
 * Shared APIs, pure parts: identity hashes, kcp's Base62(SHA-224), APIExport/APIBinding
 * v1alpha1 ↔ v1alpha2 conversion (lossless round trips through either version), schema and
 * export naming rules, kube's version priority.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import { base62Sha224, identityHash, newIdentityKey } from '../../src/apiexports/identity.js';
import { apiBindingToV1alpha1, apiBindingToV1alpha2, apiExportToV1alpha1, apiExportToV1alpha2 } from '../../src/apiexports/conversion.js';
import { crdOfSchema, validateExportResources, validateSchemaName, validateSchemaSpec } from '../../src/apiexports/schemas.js';
import { compareVersionPriority } from '../../src/apiextensions/customresources.js';

test('identity: a 43-character URL-safe key; its hash is the hex SHA-256 of the key text', () => {
  const key = newIdentityKey();
  assert.match(key, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(newIdentityKey(), key);
  // sha256("abc")
  assert.equal(identityHash('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(identityHash(Buffer.from(key)), identityHash(key));
});

test('base62Sha224 matches kcp test vectors', () => {
  assert.equal(base62Sha224(''), 'aAkHCkvjglfF66mdhRcVKb0I3FT1lepYlWZNwj');
  assert.equal(base62Sha224('hello'), 'bPWFAjMdldrWYheSsV0t7VkdTNtgGHBplr6qLF');
});

const v2Export = (): KubeObject => ({
  apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIExport', metadata: { name: 'widgets' },
  spec: {
    resources: [
      { name: 'widgets', group: 'example.com', schema: 'v1.widgets.example.com', storage: { crd: {} } },
      { name: 'things', group: '', schema: 'v2.things.core', storage: { crd: {} } },
    ],
    permissionClaims: [
      { group: '', resource: 'configmaps', verbs: ['*'] },
      { group: '', resource: 'secrets', verbs: ['get', 'list'] },
    ],
  },
  status: { identityHash: 'abc' },
});

test('APIExport: v1alpha2 → v1alpha1 → v1alpha2 loses nothing', () => {
  const v1 = apiExportToV1alpha1(v2Export());
  assert.equal(v1.apiVersion, 'apis.kcp.io/v1alpha1');
  const spec = v1.spec as Record<string, unknown>;
  assert.deepEqual(spec.latestResourceSchemas, ['v1.widgets.example.com', 'v2.things.core']);
  assert.equal(spec.resources, undefined);
  assert.deepEqual(spec.permissionClaims, [{ group: '', resource: 'configmaps', all: true }, { group: '', resource: 'secrets', all: true }]);
  assert.ok(v1.metadata.annotations?.['apis.v1alpha2.kcp.io/permission-claims'], 'verbs v1alpha1 cannot express are kept');
  const back = apiExportToV1alpha2(v1);
  assert.deepEqual(back, v2Export());
});

test('APIExport: a v1alpha1 object converts to resources with crd storage and claims with all verbs', () => {
  const v1: KubeObject = {
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExport', metadata: { name: 'e' },
    spec: { latestResourceSchemas: ['today.cowboys.wildwest.dev'], permissionClaims: [{ resource: 'configmaps', all: true }, { resource: 'secrets', resourceSelector: [{ name: 'a', namespace: 'b' }] }] },
  };
  const v2 = apiExportToV1alpha2(v1);
  assert.deepEqual((v2.spec as Record<string, unknown>).resources, [{ name: 'cowboys', group: 'wildwest.dev', schema: 'today.cowboys.wildwest.dev', storage: { crd: {} } }]);
  assert.deepEqual((v2.spec as Record<string, unknown>).permissionClaims, [{ resource: 'configmaps', verbs: ['*'] }, { resource: 'secrets', verbs: ['*'] }]);
  // What v1alpha2 cannot say (a resourceSelector) comes back on the way down.
  assert.deepEqual(apiExportToV1alpha1(v2), v1);
  assert.throws(() => apiExportToV1alpha2({ ...v1, spec: { latestResourceSchemas: ['bad'] } }), /invalid schema name "bad"/);
});

test('APIBinding: claims with a selector and verbs survive v1alpha1; all ↔ matchAll', () => {
  const v2: KubeObject = {
    apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'b' },
    spec: {
      reference: { export: { path: 'root:provider', name: 'widgets' } },
      permissionClaims: [
        { resource: 'configmaps', verbs: ['*'], selector: { matchAll: true }, state: 'Accepted' },
        { resource: 'secrets', verbs: ['get'], selector: { matchLabels: { a: 'b' } }, state: 'Rejected' },
      ],
    },
    status: { phase: 'Bound', appliedPermissionClaims: [{ resource: 'configmaps', verbs: ['*'], selector: { matchAll: true } }], exportPermissionClaims: [{ resource: 'configmaps', verbs: ['get'] }] },
  };
  const v1 = apiBindingToV1alpha1(v2);
  assert.deepEqual((v1.spec as Record<string, unknown>).permissionClaims, [{ resource: 'configmaps', all: true, state: 'Accepted' }, { resource: 'secrets', all: true, state: 'Rejected' }]);
  assert.deepEqual(apiBindingToV1alpha2(v1), v2);
  const fresh = apiBindingToV1alpha2({ apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIBinding', metadata: { name: 'c' }, spec: { reference: { export: { name: 'x' } }, permissionClaims: [{ resource: 'configmaps', all: true, state: 'Accepted' }] } });
  assert.deepEqual((fresh.spec as Record<string, unknown>).permissionClaims, [{ resource: 'configmaps', verbs: ['*'], selector: { matchAll: true }, state: 'Accepted' }]);
});

test('schema names are <prefix>.<plural>.<group>; export resources must match their schema', () => {
  const schema = (name: string, group = 'example.com'): KubeObject => ({ apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name }, spec: { group, names: { plural: 'widgets' } } });
  assert.deepEqual(validateSchemaName(schema('v1.widgets.example.com')), []);
  assert.deepEqual(validateSchemaName(schema('today.widgets.core', '')), []);
  assert.match(validateSchemaName(schema('widgets.example.com'))[0]!.message, /must be <prefix>\.widgets\.example\.com/);
  assert.match(validateSchemaName(schema('v1.gadgets.example.com'))[0]!.message, /must be <prefix>/);
  const exp = (resources: unknown[]): KubeObject => ({ apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIExport', metadata: { name: 'e' }, spec: { resources } });
  assert.deepEqual(validateExportResources(exp([{ name: 'widgets', group: 'example.com', schema: 'v1.widgets.example.com' }])), []);
  const bad = validateExportResources(exp([{ name: 'widgets', group: 'example.com', schema: 'v1.gadgets.example.com' }, { name: 'widgets', group: 'example.com', schema: 'v2.widgets.example.com' }]));
  assert.deepEqual(bad.map((c) => c.field), ['spec.resources[0].schema', 'spec.resources[1]']);
});

test('a schema is validated as the CRD it stands for, causes naming the schema\'s fields', () => {
  const schema = (type: string): KubeObject => ({
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: 'v1.widgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { type: 'object', properties: { spec: { type } } } }] },
  });
  assert.deepEqual(validateSchemaSpec(schema('object')), []);
  const bad = validateSchemaSpec(schema('foo'));
  assert.equal(bad.length, 1);
  assert.equal(bad[0]!.field, 'spec.versions[0].schema.properties[spec].type');
});

test('a schema stands for a CRD with its versions\' schemas under openAPIV3Schema', () => {
  const crd = crdOfSchema({
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: 'v1.widgets.example.com', uid: 'u1', resourceVersion: '7' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { type: 'object' } }] },
  });
  assert.equal(crd.metadata.name, 'widgets.example.com');
  assert.equal(crd.metadata.uid, 'u1');
  assert.deepEqual((crd.spec as { versions: unknown[] }).versions, [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }]);
});

test('version priority: GA before beta before alpha, higher first, other names last', () => {
  const sorted = ['v1alpha1', 'foo', 'v1', 'v2beta1', 'v1beta2', 'v2', 'v10', 'v1alpha2', 'bar'].sort(compareVersionPriority);
  assert.deepEqual(sorted, ['v10', 'v2', 'v1', 'v2beta1', 'v1beta2', 'v1alpha2', 'v1alpha1', 'bar', 'foo']);
});
