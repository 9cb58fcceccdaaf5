import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ResourceDescriptor } from '../../src/apis/types.js';
import {
  acceptsOpenAPIV2Json,
  assembleOpenAPIV2,
  buildOpenAPIV2,
  buildOpenAPIV2Part,
  descriptorsByGroupVersion,
  mergeOpenAPIV2Parts,
  buildOpenAPIV3GroupVersion,
  buildOpenAPIV3Root,
  openAPIDocumentHash,
  parseOpenAPIV3GroupVersionPath,
  toStructuralOpenAPIV2,
} from '../../src/apis/openapi.js';
import { BUILTIN_SCHEMAS, definitionName } from '../../src/apis/schemas/index.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { encodeOpenAPIV2Entry, encodeOpenAPIV2Protobuf } from '../../src/apis/openapiv2proto.js';

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

// kube's wording of TypeMeta and ObjectMeta (k8s.io/apimachinery's generated OpenAPI; the CRD
// builder's addTypeMetaProperties, metav1beta1.PartialObjectMetadata(List) for `metadata`).
const KUBE_API_VERSION =
  'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas ' +
  'to the latest internal value, and may reject unrecognized values. More info: ' +
  'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources';
const KUBE_KIND =
  'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint ' +
  'the client submits requests to. Cannot be updated. In CamelCase. More info: ' +
  'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds';
const KUBE_METADATA = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const KUBE_LIST_METADATA = 'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds';

test('apiVersion, kind and metadata carry kube\'s descriptions, for custom resources and built-in kinds alike', () => {
  const schemas = buildOpenAPIV3GroupVersion([widgets], 'example.com', 'v1')!.components.schemas;
  const core = buildOpenAPIV3GroupVersion([configMaps], '', 'v1')!.components.schemas;
  for (const s of [schemas['com.example.v1.Widget'], core['io.k8s.api.core.v1.ConfigMap']]) {
    assert.deepEqual(s.properties.apiVersion, { type: 'string', description: KUBE_API_VERSION });
    assert.deepEqual(s.properties.kind, { type: 'string', description: KUBE_KIND });
    assert.deepEqual(s.properties.metadata, {
      allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }],
      description: KUBE_METADATA,
    });
  }
  for (const s of [schemas['com.example.v1.WidgetList'], core['io.k8s.api.core.v1.ConfigMapList']]) {
    assert.equal(s.properties.apiVersion.description, KUBE_API_VERSION);
    assert.equal(s.properties.kind.description, KUBE_KIND);
    assert.equal(s.properties.metadata.description, KUBE_LIST_METADATA);
  }
  // `kubectl explain <kind>.metadata` shows ObjectMeta's own wording.
  const meta = schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
  assert.match(meta.properties.creationTimestamp.description, /^CreationTimestamp is a timestamp representing the server time when this object was created\./);
  assert.match(meta.properties.name.description, /^Name must be unique within a namespace\./);
  // v2: the same texts, metadata as a described $ref.
  const v2 = buildOpenAPIV2([widgets]).definitions as Json;
  assert.equal(v2['com.example.v1.Widget'].properties.apiVersion.description, KUBE_API_VERSION);
  assert.deepEqual(v2['com.example.v1.Widget'].properties.metadata, {
    $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
    description: KUBE_METADATA,
  });
});

test('a custom resource schema that says something else about apiVersion, kind or metadata gets the standard ones', () => {
  const odd: ResourceDescriptor = {
    ...widgets,
    schema: { type: 'object', properties: { apiVersion: { type: 'integer' }, metadata: { type: 'object', properties: { name: { type: 'string' } } } } },
  };
  for (const s of [
    buildOpenAPIV3GroupVersion([odd], 'example.com', 'v1')!.components.schemas['com.example.v1.Widget'],
    (buildOpenAPIV2([odd]).definitions as Json)['com.example.v1.Widget'],
  ]) {
    assert.deepEqual(Object.keys(s.properties), ['apiVersion', 'kind', 'metadata']);
    assert.equal(s.properties.apiVersion.type, 'string');
    assert.equal(s.properties.metadata.properties, undefined);
  }
  // A schema without properties still gets them (kube's builder sets them whatever the schema).
  const bare: ResourceDescriptor = { ...widgets, schema: { type: 'object', description: 'Bare.' } };
  const v3 = buildOpenAPIV3GroupVersion([bare], 'example.com', 'v1')!.components.schemas['com.example.v1.Widget'];
  assert.deepEqual(Object.keys(v3.properties), ['apiVersion', 'kind', 'metadata']);
});

const WIDGET_GVK = [{ group: 'example.com', kind: 'Widget', version: 'v1' }];

test('v2: a custom resource preserving unknown fields at its root is published as just {type: object} and its GVK', () => {
  const open: ResourceDescriptor = {
    ...widgets,
    schema: {
      description: 'Anything goes.',
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
    },
  };
  const v2 = buildOpenAPIV2([open]).definitions as Json;
  assert.deepEqual(v2['com.example.v1.Widget'], { type: 'object', 'x-kubernetes-group-version-kind': WIDGET_GVK });
  // The list keeps its standard shape; v3 keeps the schema as written, plus the standard fields.
  assert.equal(v2['com.example.v1.WidgetList'].properties.items.items.$ref, '#/definitions/com.example.v1.Widget');
  const v3 = buildOpenAPIV3GroupVersion([open], 'example.com', 'v1')!.components.schemas['com.example.v1.Widget'];
  assert.equal(v3.description, 'Anything goes.');
  assert.equal(v3['x-kubernetes-preserve-unknown-fields'], true);
  assert.deepEqual(Object.keys(v3.properties), ['apiVersion', 'kind', 'metadata', 'spec']);
  // A kind with no schema at all (and no built-in one): the same in v2.
  const noSchema: ResourceDescriptor = { ...widgets, schema: undefined };
  assert.deepEqual((buildOpenAPIV2([noSchema]).definitions as Json)['com.example.v1.Widget'], {
    type: 'object',
    'x-kubernetes-group-version-kind': WIDGET_GVK,
  });
});

test('v2 reductions of a custom resource schema (kube ToStructuralOpenAPIV2), each one', () => {
  // junctors dropped at every level; int-or-string keeps its extension, loses the unfolded anyOf
  assert.deepEqual(
    toStructuralOpenAPIV2({
      type: 'object',
      anyOf: [{ required: ['a'] }],
      oneOf: [{ required: ['b'] }],
      allOf: [{ required: ['c'] }],
      not: { required: ['d'] },
      properties: {
        port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
        list: { type: 'array', items: { type: 'object', oneOf: [{ required: ['x'] }], properties: { x: { type: 'string' } } } },
      },
    }),
    {
      type: 'object',
      properties: {
        port: { 'x-kubernetes-int-or-string': true },
        list: { type: 'array', items: { type: 'object', properties: { x: { type: 'string' } } } },
      },
    },
  );
  // nullable: type, items, properties and nullable gone; the field leaves the parent's required
  assert.deepEqual(
    toStructuralOpenAPIV2({
      type: 'object',
      required: ['n', 'm', 'k'],
      properties: {
        n: { type: 'object', nullable: true, description: 'N.', properties: { a: { type: 'string' } }, additionalProperties: false },
        m: { type: 'array', nullable: true, items: { type: 'string' } },
        k: { type: 'string' },
      },
    }),
    {
      type: 'object',
      required: ['k'],
      properties: { n: { description: 'N.', additionalProperties: false }, m: {}, k: { type: 'string' } },
    },
  );
  // every required field nullable: required removed altogether
  assert.deepEqual(toStructuralOpenAPIV2({ type: 'object', required: ['n'], properties: { n: { type: 'string', nullable: true } } }), {
    type: 'object',
    properties: { n: {} },
  });
  // a nullable additionalProperties schema empties the parent's required
  assert.deepEqual(
    toStructuralOpenAPIV2({ type: 'object', required: ['a'], additionalProperties: { type: 'string', nullable: true } }),
    { type: 'object', additionalProperties: {} },
  );
  // nested preserve-unknown-fields: no properties, no items, no `type: object`; extension kept
  assert.deepEqual(
    toStructuralOpenAPIV2({
      type: 'object',
      properties: {
        obj: { type: 'object', description: 'O.', 'x-kubernetes-preserve-unknown-fields': true, properties: { a: { type: 'string' } } },
        arr: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'string' } },
      },
    }),
    {
      type: 'object',
      properties: {
        obj: { description: 'O.', 'x-kubernetes-preserve-unknown-fields': true },
        // the array lost its items, so its type goes too (kubectl cannot cope with an array without items)
        arr: { 'x-kubernetes-preserve-unknown-fields': true },
      },
    },
  );
  // untouched: everything else (validations, list extensions, defaults are handled by the v2 document)
  const plain = {
    type: 'object',
    properties: {
      items: { type: 'array', items: { type: 'string', pattern: '^a' }, 'x-kubernetes-list-type': 'set', maxItems: 3 },
      n: { type: 'integer', minimum: 1, 'x-kubernetes-validations': [{ rule: 'self > 0' }] },
    },
  };
  assert.deepEqual(toStructuralOpenAPIV2(plain), plain);
});

test('v2 document: custom resource schema reduced, defaults pruned, keyword-named properties kept', () => {
  const tricky: ResourceDescriptor = {
    ...widgets,
    schema: {
      type: 'object',
      required: ['spec'],
      properties: {
        spec: {
          type: 'object',
          nullable: true,
          properties: { size: { type: 'integer' } },
        },
        status: {
          type: 'object',
          default: {},
          properties: {
            // properties named like keywords are fields, not keywords
            nullable: { type: 'boolean', default: false },
            anyOf: { type: 'string' },
            default: { type: 'string' },
            port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
          },
        },
      },
    },
  };
  const def = (buildOpenAPIV2([tricky]).definitions as Json)['com.example.v1.Widget'];
  assert.equal(def.required, undefined);
  assert.deepEqual(def.properties.spec, {});
  assert.deepEqual(def.properties.status, {
    type: 'object',
    properties: {
      nullable: { type: 'boolean' },
      anyOf: { type: 'string' },
      default: { type: 'string' },
      port: { 'x-kubernetes-int-or-string': true },
    },
  });
  assert.deepEqual(def['x-kubernetes-group-version-kind'], WIDGET_GVK);
  // v3 is published as written.
  const v3 = buildOpenAPIV3GroupVersion([tricky], 'example.com', 'v1')!.components.schemas['com.example.v1.Widget'];
  assert.deepEqual(v3.required, ['spec']);
  assert.equal(v3.properties.spec.nullable, true);
  assert.deepEqual(v3.properties.status.default, {});
  assert.deepEqual(v3.properties.status.properties.port.anyOf, [{ type: 'integer' }, { type: 'string' }]);
  // built-in kinds keep properties named like keywords in v2 (JSONSchemaProps has `nullable`, `anyOf`, `default`)
  const crds: ResourceDescriptor = {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    listKind: 'CustomResourceDefinitionList',
    plural: 'customresourcedefinitions',
    singular: 'customresourcedefinition',
    namespaced: false,
    verbs: ALL_VERBS,
  };
  const props = (buildOpenAPIV2([crds]).definitions as Json)['io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps'].properties;
  for (const name of ['nullable', 'anyOf', 'oneOf', 'not', 'default']) assert.ok(props[name], name);
});

test('embedded resources get apiVersion, kind and metadata (kube addEmbeddedProperties), in v3 and v2', () => {
  const embedded: ResourceDescriptor = {
    ...widgets,
    schema: {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            template: { type: 'object', 'x-kubernetes-embedded-resource': true, required: ['spec'], properties: { spec: { type: 'object' } } },
            open: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
            many: { type: 'array', items: { type: 'object', 'x-kubernetes-embedded-resource': true, required: ['kind'] } },
          },
        },
      },
    },
  };
  const v3 = buildOpenAPIV3GroupVersion([embedded], 'example.com', 'v1')!.components.schemas['com.example.v1.Widget'].properties.spec.properties;
  assert.deepEqual(Object.keys(v3.template.properties), ['apiVersion', 'kind', 'metadata', 'spec']);
  assert.deepEqual(v3.template.required, ['spec', 'kind', 'apiVersion']);
  assert.match(v3.template.properties.apiVersion.description, /^apiVersion defines the versioned schema of this representation of an object\. More info/);
  assert.match(v3.template.properties.kind.description, /^kind is a string value representing the type of this object\./);
  assert.equal(v3.template.properties.metadata.allOf[0].$ref, '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  assert.deepEqual(Object.keys(v3.open.properties), ['apiVersion', 'kind', 'metadata']);
  assert.deepEqual(v3.many.items.required, ['kind', 'apiVersion']);
  const v2 = (buildOpenAPIV2([embedded]).definitions as Json)['com.example.v1.Widget'].properties.spec.properties;
  assert.equal(v2.template.properties.metadata.$ref, '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  assert.deepEqual(v2.template.required, ['spec', 'kind', 'apiVersion']);
  // v2: an embedded resource that preserves unknown fields stays open (no properties, no required).
  assert.deepEqual(v2.open, { 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true });
});

test('v2 made of per-group/version parts is byte for byte the whole build, as JSON and as protobuf', () => {
  // Every built-in API (group/versions referencing each other's kinds, e.g. a Scale or an Event
  // of another group) and a custom resource with its own schema.
  const descs = [...BUILTIN_RESOURCES, widgets];
  const byGV = descriptorsByGroupVersion(descs);
  assert.ok(byGV.size >= 12, `${byGV.size} group/versions`);
  const parts = [...byGV.values()].map(buildOpenAPIV2Part);
  const merged = mergeOpenAPIV2Parts(parts);
  const whole = buildOpenAPIV2(descs);
  assert.equal(assembleOpenAPIV2(merged), JSON.stringify(whole));
  // A referenced kind is taken from its owner's part (with its GVK), not from a referencing one.
  const owned = merged.definitions.filter((e) => parts[e.part]!.owned.has(e.name)).length;
  assert.ok(owned >= descs.length, `${owned} definitions from their owners`);
  const entry = (kind: 'definition' | 'path', e: { name: string; text: string }) => encodeOpenAPIV2Entry(kind, e.name, JSON.parse(e.text));
  const fromParts = encodeOpenAPIV2Protobuf(buildOpenAPIV2([]), {
    paths: merged.paths.map((e) => entry('path', e)),
    definitions: merged.definitions.map((e) => entry('definition', e)),
  });
  assert.ok(fromParts.equals(encodeOpenAPIV2Protobuf(whole)));
  // Parts do not depend on the order of the descriptors.
  const reversed = [...descriptorsByGroupVersion([...descs].reverse()).values()].map(buildOpenAPIV2Part);
  assert.equal(assembleOpenAPIV2(mergeOpenAPIV2Parts(reversed)), JSON.stringify(whole));
});
