import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ResourceDescriptor } from '../../src/apis/types.js';
import {
  acceptsOpenAPIV2Json,
  buildOpenAPIV2,
  buildOpenAPIV3GroupVersion,
  buildOpenAPIV3Root,
  openAPIDocumentHash,
  parseOpenAPIV3GroupVersionPath,
} from '../../src/apis/openapi.js';
import { BUILTIN_SCHEMAS, definitionName } from '../../src/apis/schemas/index.js';

type Json = Record<string, any>;

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const configMaps: ResourceDescriptor = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  plural: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  shortNames: ['cm'],
  verbs: ALL_VERBS,
};

const namespaces: ResourceDescriptor = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  plural: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  shortNames: ['ns'],
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  hasStatus: true,
};

const roles: ResourceDescriptor = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind: 'Role',
  listKind: 'RoleList',
  plural: 'roles',
  singular: 'role',
  namespaced: true,
  verbs: ALL_VERBS,
};

const selfSARs: ResourceDescriptor = {
  group: 'authorization.k8s.io',
  version: 'v1',
  kind: 'SelfSubjectAccessReview',
  listKind: 'SelfSubjectAccessReviewList',
  plural: 'selfsubjectaccessreviews',
  singular: 'selfsubjectaccessreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
};

const widgets: ResourceDescriptor = {
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  listKind: 'WidgetList',
  plural: 'widgets',
  singular: 'widget',
  namespaced: true,
  verbs: ALL_VERBS,
  hasStatus: true,
  schema: {
    type: 'object',
    properties: {
      spec: { type: 'object', properties: { size: { type: 'integer' } } },
      status: { type: 'object', properties: { ready: { type: 'boolean' } } },
    },
  },
};

const DESCS = [configMaps, namespaces, roles];

/** Every `$ref` string in a document. */
function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) v.forEach((x) => refs(x, out));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

/** cli-runtime's queryParamVerifierV3.supportsQueryParamV3, transcribed. */
function supportsFieldValidationV3(doc: Json, gvk: { group: string; version: string; kind: string }): boolean | 'notfound' {
  for (const item of Object.values<Json>(doc.paths)) {
    const op = item.patch;
    if (!op) continue;
    const ext = op['x-kubernetes-group-version-kind'];
    if (!ext || ext.group !== gvk.group || ext.version !== gvk.version || ext.kind !== gvk.kind) continue;
    return (op.parameters ?? []).some((p: Json) => p.name === 'fieldValidation' && p.in === 'query');
  }
  return 'notfound';
}

test('v3 root lists one entry per group/version with a stable content hash', () => {
  const root = buildOpenAPIV3Root(DESCS);
  assert.deepEqual(Object.keys(root.paths), ['api/v1', 'apis/rbac.authorization.k8s.io/v1']);
  for (const [key, { serverRelativeURL }] of Object.entries(root.paths)) {
    const m = /^\/openapi\/v3\/(.+)\?hash=([0-9A-F]{128})$/.exec(serverRelativeURL);
    assert.ok(m, serverRelativeURL);
    assert.equal(m[1], key);
    const gv = parseOpenAPIV3GroupVersionPath(key)!;
    const doc = buildOpenAPIV3GroupVersion(DESCS, gv.group, gv.version);
    assert.equal(m[2], openAPIDocumentHash(doc));
  }
  // Deterministic regardless of descriptor order.
  assert.deepEqual(buildOpenAPIV3Root([...DESCS].reverse()), root);
  assert.equal(JSON.stringify(buildOpenAPIV2([...DESCS].reverse())), JSON.stringify(buildOpenAPIV2(DESCS)));
});

test('v3 group/version document has the kube layout', () => {
  const doc = buildOpenAPIV3GroupVersion(DESCS, '', 'v1')!;
  assert.equal(doc.openapi, '3.0.0');
  assert.ok(doc.info);
  const paths = doc.paths as Json;
  assert.deepEqual(Object.keys(paths['/api/v1/namespaces/{namespace}/configmaps']).sort(), [
    'delete',
    'get',
    'parameters',
    'post',
  ]);
  assert.deepEqual(Object.keys(paths['/api/v1/namespaces/{namespace}/configmaps/{name}']).sort(), [
    'delete',
    'get',
    'parameters',
    'patch',
    'put',
  ]);
  assert.ok(paths['/api/v1/configmaps'].get, 'list across namespaces');
  assert.ok(paths['/api/v1/namespaces/{name}/status'].patch, 'status subresource');
  assert.equal(paths['/api/v1/namespaces/{namespace}'], undefined, 'namespace items use {name}');
  assert.ok(paths['/api/v1/namespaces'].get);
  assert.equal(paths['/api/v1/namespaces'].delete, undefined, 'namespaces have no deletecollection verb');
  const schemas = (doc.components as Json).schemas as Json;
  assert.deepEqual(schemas['io.k8s.api.core.v1.ConfigMap']['x-kubernetes-group-version-kind'], [
    { group: '', kind: 'ConfigMap', version: 'v1' },
  ]);
  assert.deepEqual(schemas['io.k8s.api.core.v1.ConfigMapList']['x-kubernetes-group-version-kind'], [
    { group: '', kind: 'ConfigMapList', version: 'v1' },
  ]);
  assert.ok(schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']);
  assert.equal(buildOpenAPIV3GroupVersion(DESCS, 'apps', 'v1'), undefined);
});

test('every PATCH operation advertises fieldValidation and its GVK (kubectl server-side validation)', () => {
  for (const d of [...DESCS, widgets]) {
    const doc = buildOpenAPIV3GroupVersion([...DESCS, widgets], d.group, d.version)!;
    assert.equal(supportsFieldValidationV3(doc, d), true, `${d.kind}`);
    // Whatever PATCH operation Go's map order reaches first must qualify.
    for (const item of Object.values<Json>(doc.paths)) {
      if (!item.patch) continue;
      assert.ok(item.patch.parameters.some((p: Json) => p.name === 'fieldValidation' && p.in === 'query'));
      assert.equal(item.patch['x-kubernetes-action'], 'patch');
    }
  }
  const core = buildOpenAPIV3GroupVersion(DESCS, '', 'v1')!;
  const patch = core.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'].patch;
  assert.deepEqual(patch['x-kubernetes-group-version-kind'], { group: '', kind: 'ConfigMap', version: 'v1' });
  assert.ok(patch.requestBody.content['application/strategic-merge-patch+json'], 'built-ins accept SMP');
  assert.ok(patch.requestBody.content['application/apply-patch+yaml']);
  // Custom-resource-style groups do not offer strategic merge patch (kubectl then uses merge patch).
  const cr = buildOpenAPIV3GroupVersion([widgets], 'example.com', 'v1')!;
  const crPatch = cr.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}'].patch;
  assert.equal(crPatch.requestBody.content['application/strategic-merge-patch+json'], undefined);
  assert.ok(crPatch.requestBody.content['application/merge-patch+json']);
  // POST and PUT carry it too.
  const post = core.paths['/api/v1/namespaces/{namespace}/configmaps'].post;
  assert.ok(post.parameters.some((p: Json) => p.name === 'fieldValidation' && p.in === 'query'));
});

test('all $refs resolve inside the v3 and v2 documents', () => {
  const all = [...DESCS, selfSARs, widgets];
  const gvs = Object.keys(buildOpenAPIV3Root(all).paths);
  assert.equal(gvs.length, 4);
  for (const key of gvs) {
    const gv = parseOpenAPIV3GroupVersionPath(key)!;
    const doc = buildOpenAPIV3GroupVersion(all, gv.group, gv.version)!;
    const schemas = doc.components.schemas as Json;
    const found = refs(doc);
    assert.ok(found.length > 0);
    for (const r of found) {
      assert.ok(r.startsWith('#/components/schemas/'), r);
      assert.ok(schemas[r.slice('#/components/schemas/'.length)], `${key}: dangling ${r}`);
    }
  }
  const v2 = buildOpenAPIV2(all);
  for (const r of refs(v2)) {
    assert.ok(r.startsWith('#/definitions/'), r);
    assert.ok(v2.definitions[r.slice('#/definitions/'.length)], `v2: dangling ${r}`);
  }
  // Every ref inside the built-in schemas resolves within BUILTIN_SCHEMAS.
  for (const r of refs(BUILTIN_SCHEMAS)) {
    assert.ok((BUILTIN_SCHEMAS as Json)[r.slice('#/components/schemas/'.length)], `builtin: dangling ${r}`);
  }
});

test('ConfigMap schema: data is a map of strings, explain can find it', () => {
  const doc = buildOpenAPIV3GroupVersion(DESCS, '', 'v1')!;
  const schemas = doc.components.schemas as Json;
  const cm = schemas['io.k8s.api.core.v1.ConfigMap'];
  assert.equal(cm.type, 'object');
  assert.deepEqual(cm.properties.data.type, 'object');
  assert.deepEqual(cm.properties.data.additionalProperties, { type: 'string' });
  assert.equal(typeof cm.properties.data.description, 'string');
  assert.deepEqual(cm.properties.binaryData.additionalProperties, { type: 'string', format: 'byte' });
  assert.equal(cm.properties.immutable.type, 'boolean');
  assert.deepEqual(Object.keys(cm.properties).sort(), ['apiVersion', 'binaryData', 'data', 'immutable', 'kind', 'metadata']);
  // kubectl explain: GVK from an operation on the resource path, then the schema containing it.
  const gvk = doc.paths['/api/v1/namespaces/{namespace}/configmaps'].get['x-kubernetes-group-version-kind'];
  const matches = Object.entries(schemas).filter(([, s]) =>
    (s['x-kubernetes-group-version-kind'] ?? []).some((g: Json) => JSON.stringify(g) === JSON.stringify(gvk)),
  );
  assert.deepEqual(
    matches.map(([n]) => n),
    ['io.k8s.api.core.v1.ConfigMap'],
  );
  // metadata resolves through allOf to ObjectMeta, which carries SMP metadata.
  assert.equal(cm.properties.metadata.allOf[0].$ref, '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  const om = schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
  assert.equal(om.properties.ownerReferences['x-kubernetes-patch-strategy'], 'merge');
  assert.equal(om.properties.ownerReferences['x-kubernetes-patch-merge-key'], 'uid');
  assert.equal(om.properties.finalizers['x-kubernetes-list-type'], 'set');
});

test('Role schema and rbac document', () => {
  const doc = buildOpenAPIV3GroupVersion(DESCS, 'rbac.authorization.k8s.io', 'v1')!;
  const schemas = doc.components.schemas as Json;
  const role = schemas['io.k8s.api.rbac.v1.Role'];
  assert.equal(role.properties.rules.items.$ref, '#/components/schemas/io.k8s.api.rbac.v1.PolicyRule');
  assert.deepEqual(schemas['io.k8s.api.rbac.v1.PolicyRule'].required, ['verbs']);
  assert.ok(doc.paths['/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}'].patch);
  assert.equal(schemas['io.k8s.api.core.v1.ConfigMap'], undefined, 'only this group/version');
});

test('descriptor schema overrides the built-in one and gets standard metadata', () => {
  const doc = buildOpenAPIV3GroupVersion([widgets], 'example.com', 'v1')!;
  const s = doc.components.schemas['com.example.v1.Widget'];
  assert.deepEqual(s['x-kubernetes-group-version-kind'], [{ group: 'example.com', kind: 'Widget', version: 'v1' }]);
  assert.deepEqual(Object.keys(s.properties), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
  assert.ok(doc.components.schemas['com.example.v1.WidgetList']);
  assert.ok(doc.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status'].put);
  // Virtual resources only get POST.
  const authz = buildOpenAPIV3GroupVersion([selfSARs], 'authorization.k8s.io', 'v1')!;
  assert.deepEqual(Object.keys(authz.paths), ['/apis/authorization.k8s.io/v1/selfsubjectaccessreviews']);
  assert.ok(authz.paths['/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'].post);
});

test('v2 document: swagger 2.0 with definitions and GVK-tagged operations', () => {
  const v2 = buildOpenAPIV2(DESCS);
  assert.equal(v2.swagger, '2.0');
  const defs = v2.definitions as Json;
  for (const name of ['io.k8s.api.core.v1.ConfigMap', 'io.k8s.api.core.v1.ConfigMapList', 'io.k8s.api.core.v1.Namespace', 'io.k8s.api.rbac.v1.Role', 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']) {
    assert.ok(defs[name], name);
  }
  assert.deepEqual(defs['io.k8s.api.core.v1.ConfigMap'].properties.data.additionalProperties, { type: 'string' });
  assert.equal(
    defs['io.k8s.api.core.v1.ConfigMap'].properties.metadata.$ref,
    '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
  );
  const patch = (v2.paths as Json)['/api/v1/namespaces/{namespace}/configmaps/{name}'].patch;
  assert.deepEqual(patch['x-kubernetes-group-version-kind'], { group: '', kind: 'ConfigMap', version: 'v1' });
  assert.ok(patch.parameters.some((p: Json) => p.name === 'fieldValidation' && p.in === 'query'));
  assert.ok(patch.consumes.includes('application/strategic-merge-patch+json'));
  assert.ok(patch.parameters.some((p: Json) => p.in === 'body' && p.schema.$ref === '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch'));
});

test('Accept negotiation for /openapi/v2', () => {
  assert.equal(acceptsOpenAPIV2Json(undefined), true);
  assert.equal(acceptsOpenAPIV2Json(''), true);
  assert.equal(acceptsOpenAPIV2Json('application/json'), true);
  assert.equal(acceptsOpenAPIV2Json('application/json, */*'), true);
  assert.equal(acceptsOpenAPIV2Json('*/*'), true);
  assert.equal(acceptsOpenAPIV2Json('application/*;q=0.5'), true);
  assert.equal(acceptsOpenAPIV2Json('application/com.github.proto-openapi.spec.v2@v1.0+protobuf'), false);
  assert.equal(acceptsOpenAPIV2Json('application/com.github.proto-openapi.spec.v2.v1.0+protobuf'), false);
  assert.equal(acceptsOpenAPIV2Json('application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json;q=0.9'), true);
  assert.equal(acceptsOpenAPIV2Json('application/json;q=0'), false);
  assert.equal(acceptsOpenAPIV2Json('text/html'), false);
});

test('definitionName follows kube naming', () => {
  assert.equal(definitionName('', 'v1', 'ConfigMap'), 'io.k8s.api.core.v1.ConfigMap');
  assert.equal(definitionName('rbac.authorization.k8s.io', 'v1', 'Role'), 'io.k8s.api.rbac.v1.Role');
  assert.equal(
    definitionName('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition'),
    'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition',
  );
  assert.equal(definitionName('coordination.k8s.io', 'v1', 'Lease'), 'io.k8s.api.coordination.v1.Lease');
  assert.equal(definitionName('events.k8s.io', 'v1', 'Event'), 'io.k8s.api.events.v1.Event');
  assert.equal(definitionName('authorization.k8s.io', 'v1', 'SubjectAccessReview'), 'io.k8s.api.authorization.v1.SubjectAccessReview');
  assert.equal(definitionName('core.kcp.io', 'v1alpha1', 'LogicalCluster'), 'io.kcp.core.v1alpha1.LogicalCluster');
  for (const name of [
    'io.k8s.api.core.v1.Secret',
    'io.k8s.api.core.v1.ServiceAccount',
    'io.k8s.api.core.v1.Event',
    'io.k8s.api.core.v1.LimitRange',
    'io.k8s.api.core.v1.ResourceQuota',
    'io.k8s.api.events.v1.Event',
    'io.k8s.api.coordination.v1.Lease',
    'io.k8s.api.rbac.v1.ClusterRole',
    'io.k8s.api.rbac.v1.ClusterRoleBinding',
    'io.k8s.api.rbac.v1.RoleBinding',
    'io.k8s.api.authorization.v1.SubjectAccessReview',
    'io.k8s.api.authorization.v1.SelfSubjectAccessReview',
    'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition',
  ]) {
    assert.ok(BUILTIN_SCHEMAS[name], name);
  }
});
