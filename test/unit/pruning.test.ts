import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { StatusError } from '../../src/apimachinery/errors.js';
import { BUILTIN_SCHEMAS, definitionName } from '../../src/apis/schemas/index.js';
import {
  MAX_STRICT_ERRORS,
  fieldValidationCauses,
  fieldValidationMode,
  goQuote,
  pruneUnknownFields,
  strictDecodingMessage,
  strictErrors,
  unknownFieldsError,
  unknownFieldsPatchError,
} from '../../src/apimachinery/pruning.js';
import { TESTDATA_CRDS } from '../helpers.js';
import { join } from 'node:path';

const CERTIFICATES_CRD = join(TESTDATA_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml');

function schemaOf(group: string, version: string, kind: string): object {
  const s = BUILTIN_SCHEMAS[definitionName(group, version, kind)];
  assert.ok(s, `no schema for ${group}/${version} ${kind}`);
  return s;
}

/** Prunes a built-in kind, returning the removed paths. */
function prune(obj: unknown, group: string, version: string, kind: string): string[] {
  return pruneUnknownFields(obj, schemaOf(group, version, kind), BUILTIN_SCHEMAS);
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

test('ConfigMap: unknown top-level and metadata fields are pruned and reported in document order', () => {
  const cm = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'default', bogusMeta: 1, labels: { a: 'b' }, annotations: { 'x/y': 'z' } },
    data: { x: '1' },
    extra: true,
    binaryData: { b: 'AAE=' },
    immutable: false,
  };
  assert.deepEqual(prune(cm, '', 'v1', 'ConfigMap'), ['metadata.bogusMeta', 'extra']);
  assert.deepEqual(cm, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'default', labels: { a: 'b' }, annotations: { 'x/y': 'z' } },
    data: { x: '1' },
    binaryData: { b: 'AAE=' },
    immutable: false,
  });
});

test('ConfigMap: data and binaryData are maps, so no key is ever unknown', () => {
  const cm = JSON.parse(
    '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},' +
      '"data":{"apiVersion":"a","metadata":"m","spec.foo":"s","__proto__":"p","bogus":"b"},"binaryData":{"kind":"AA=="}}',
  ) as Record<string, unknown>;
  const before = JSON.stringify(cm);
  assert.deepEqual(prune(cm, '', 'v1', 'ConfigMap'), []);
  assert.equal(JSON.stringify(cm), before);
});

test('a top-level "__proto__" field is an ordinary unknown field', () => {
  const cm = JSON.parse('{"apiVersion":"v1","kind":"ConfigMap","__proto__":{"x":1},"data":{}}') as Record<string, unknown>;
  assert.deepEqual(prune(cm, '', 'v1', 'ConfigMap'), ['__proto__']);
  assert.deepEqual(Object.keys(cm), ['apiVersion', 'kind', 'data']);
});

test('Role: unknown fields inside list items carry the index', () => {
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'r', namespace: 'ns' },
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], bogus: 1 },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['s'], verbs: ['list'] },
      { nonResourceURLs: ['/healthz'], verbs: ['get'], Verbs: ['x'] },
    ],
  };
  assert.deepEqual(prune(role, 'rbac.authorization.k8s.io', 'v1', 'Role'), ['rules[0].bogus', 'rules[2].Verbs']);
  assert.deepEqual(role.rules[0], { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] });
  assert.deepEqual(role.rules[1], { apiGroups: [''], resources: ['secrets'], resourceNames: ['s'], verbs: ['list'] });
  assert.deepEqual(role.rules[2], { nonResourceURLs: ['/healthz'], verbs: ['get'] });
});

test('ClusterRoleBinding: subjects and roleRef are pruned against Subject and RoleRef', () => {
  const crb = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'b', ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u', color: 'red' }] },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin', namespace: 'nope' },
    subjects: [
      { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'ServiceAccount', name: 'sa', namespace: 'ns', uid: 'nope' },
    ],
  };
  assert.deepEqual(prune(crb, 'rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding'), [
    'metadata.ownerReferences[0].color',
    'roleRef.namespace',
    'subjects[1].uid',
  ]);
  assert.deepEqual(crb.subjects[1], { kind: 'ServiceAccount', name: 'sa', namespace: 'ns' });
  assert.deepEqual(crb.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' });
});

test('Namespace: spec.finalizers and status are kept, unknown spec fields pruned', () => {
  const ns = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'n', finalizers: ['a/b'], managedFields: [{ manager: 'm', fieldsV1: { 'f:metadata': { 'f:labels': {} } } }] },
    spec: { finalizers: ['kubernetes'], bogus: 'x' },
    status: { phase: 'Active', conditions: [{ type: 'T', status: 'True', extra: 1 }] },
  };
  assert.deepEqual(prune(ns, '', 'v1', 'Namespace'), ['spec.bogus', 'status.conditions[0].extra']);
  assert.deepEqual(ns.spec, { finalizers: ['kubernetes'] });
  // FieldsV1 preserves unknown fields.
  assert.deepEqual(ns.metadata.managedFields[0]!.fieldsV1, { 'f:metadata': { 'f:labels': {} } });
});

test('Secret: stringData and type are part of the schema', () => {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's' },
    type: 'Opaque',
    data: { a: 'YQ==' },
    stringData: { b: 'plain' },
    immutable: true,
  };
  const before = clone(secret);
  assert.deepEqual(prune(secret, '', 'v1', 'Secret'), []);
  assert.deepEqual(secret, before);
});

test('CustomResourceDefinition: a full cert-manager openAPIV3Schema loses nothing', () => {
  const crd = parse(readFileSync(CERTIFICATES_CRD, 'utf8')) as Record<string, unknown>;
  const before = clone(crd);
  assert.deepEqual(prune(crd, 'apiextensions.k8s.io', 'v1', 'CustomResourceDefinition'), []);
  assert.deepEqual(crd, before);
  // Pruning twice (cached compiled schemas) is still a no-op.
  assert.deepEqual(prune(crd, 'apiextensions.k8s.io', 'v1', 'CustomResourceDefinition'), []);
});

test('CustomResourceDefinition: typos deep inside JSONSchemaProps are found', () => {
  const crd = parse(readFileSync(CERTIFICATES_CRD, 'utf8')) as {
    spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: Record<string, Record<string, unknown>> } } } & Record<string, unknown>> };
  } & Record<string, unknown>;
  const v0 = crd.spec.versions[0]!;
  const spec = v0.schema.openAPIV3Schema.properties.spec!;
  spec.descripton = 'typo';
  (spec.properties as Record<string, Record<string, unknown>>).secretName!.nulable = true;
  v0.servd = true;
  crd.spec.versions[0]!.subresources = { status: { bogus: 1 } };
  assert.deepEqual(prune(crd, 'apiextensions.k8s.io', 'v1', 'CustomResourceDefinition'), [
    'spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.secretName.nulable',
    'spec.versions[0].schema.openAPIV3Schema.properties.spec.descripton',
    // Document order: `subresources` already exists in the file, `servd` was appended.
    'spec.versions[0].subresources.status.bogus',
    'spec.versions[0].servd',
  ]);
  assert.equal(spec.descripton, undefined);
  assert.deepEqual(crd.spec.versions[0]!.subresources, { status: {} });
});

test('wrongly typed values are left alone', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', data: 'not-a-map', immutable: { a: 1 }, metadata: 'oops', binaryData: [1, 2] };
  const before = clone(cm);
  assert.deepEqual(prune(cm, '', 'v1', 'ConfigMap'), []);
  assert.deepEqual(cm, before);
  const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', rules: { bogus: 1 } };
  assert.deepEqual(prune(role, 'rbac.authorization.k8s.io', 'v1', 'Role'), []);
  assert.deepEqual(role.rules, { bogus: 1 });
  assert.deepEqual(pruneUnknownFields('x', schemaOf('', 'v1', 'ConfigMap'), BUILTIN_SCHEMAS), []);
  assert.deepEqual(pruneUnknownFields(null, schemaOf('', 'v1', 'ConfigMap'), BUILTIN_SCHEMAS), []);
});

test('schemas are not modified by pruning', () => {
  const snapshot = JSON.stringify(BUILTIN_SCHEMAS);
  prune({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { x: 1 }, y: 2 }, '', 'v1', 'ConfigMap');
  assert.equal(JSON.stringify(BUILTIN_SCHEMAS), snapshot);
});

const REF = '#/components/schemas/';

test('schema rules: additionalProperties, preserve-unknown-fields, allOf, embedded resources', () => {
  const defs: Record<string, object> = {
    ...BUILTIN_SCHEMAS,
    'test.Inner': { type: 'object', properties: { keep: { type: 'string' } } },
    'test.Root': {
      type: 'object',
      properties: {
        closed: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
        open: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
        mapOfInner: { type: 'object', additionalProperties: { $ref: `${REF}test.Inner` } },
        merged: { allOf: [{ $ref: `${REF}test.Inner` }, { properties: { other: { type: 'integer' } } }], description: 'd' },
        preserved: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { inner: { $ref: `${REF}test.Inner` } },
        },
        list: { type: 'array', items: { allOf: [{ $ref: `${REF}test.Inner` }] } },
        intOrString: { 'x-kubernetes-int-or-string': true },
        template: {
          type: 'object',
          'x-kubernetes-embedded-resource': true,
          properties: { spec: { $ref: `${REF}test.Inner` } },
        },
        empty: { type: 'object' },
      },
    },
  };
  const obj = {
    apiVersion: 'x/v1',
    kind: 'Root',
    metadata: { name: 'n', bogus: 1 },
    closed: { a: 'x', b: 'y' },
    open: { a: 'x', b: { c: 1 } },
    mapOfInner: { k1: { keep: 'k', drop: 1 }, k2: { keep: 'k' } },
    merged: { keep: 'k', other: 1, drop: 2 },
    preserved: { anything: { deep: true }, inner: { keep: 'k', drop: 3 } },
    list: [{ keep: 'a' }, { keep: 'b', drop: 4 }],
    intOrString: 5,
    template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' }, bogus: 1 }, spec: { keep: 'k', drop: 5 }, status: {} },
    empty: { x: 1 },
  };
  assert.deepEqual(pruneUnknownFields(obj, defs['test.Root']!, defs), [
    'metadata.bogus',
    'closed.b',
    'mapOfInner.k1.drop',
    'merged.drop',
    'preserved.inner.drop',
    'list[1].drop',
    'template.metadata.bogus',
    'template.spec.drop',
    'template.status',
    'empty.x',
  ]);
  assert.deepEqual(obj.open, { a: 'x', b: { c: 1 } });
  assert.deepEqual(obj.preserved, { anything: { deep: true }, inner: { keep: 'k' } });
  assert.deepEqual(obj.template, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { keep: 'k' } });
  assert.deepEqual(obj.empty, {});
});

test('the root keeps apiVersion/kind/metadata even when its schema does not list them (CRD-style)', () => {
  const defs: Record<string, object> = { ...BUILTIN_SCHEMAS };
  const root = { type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } };
  const obj = { apiVersion: 'x.io/v1', kind: 'X', metadata: { name: 'a', generateName: 'g', foo: 1 }, spec: { a: 'b', c: 'd' } };
  assert.deepEqual(pruneUnknownFields(obj, root, defs), ['metadata.foo', 'spec.c']);
  assert.deepEqual(obj, { apiVersion: 'x.io/v1', kind: 'X', metadata: { name: 'a', generateName: 'g' }, spec: { a: 'b' } });
});

test('$ref cycles and unresolvable $refs keep everything instead of looping', () => {
  const defs: Record<string, object> = {
    'cyc.A': { $ref: `${REF}cyc.A` },
    'cyc.B': { allOf: [{ $ref: `${REF}cyc.C` }] },
    'cyc.C': { allOf: [{ $ref: `${REF}cyc.B` }] },
    'cyc.Root': {
      type: 'object',
      properties: {
        a: { $ref: `${REF}cyc.A` },
        b: { $ref: `${REF}cyc.B` },
        missing: { $ref: `${REF}does.not.Exist` },
        self: { $ref: `${REF}cyc.Root` },
      },
    },
  };
  const obj = { a: { x: 1 }, b: { y: 2 }, missing: { z: 3 }, self: { self: { a: {}, bogus: 1 } }, other: 1 };
  assert.deepEqual(pruneUnknownFields(obj, defs['cyc.Root']!, defs), ['self.self.bogus', 'other']);
  assert.deepEqual(obj, { a: { x: 1 }, b: { y: 2 }, missing: { z: 3 }, self: { self: { a: {} } } });
});

test('fieldValidationMode: absent or empty is Warn; valid values pass through', () => {
  assert.equal(fieldValidationMode(null), 'Warn');
  assert.equal(fieldValidationMode(undefined), 'Warn');
  assert.equal(fieldValidationMode(''), 'Warn');
  assert.equal(fieldValidationMode('Strict'), 'Strict');
  assert.equal(fieldValidationMode('Warn'), 'Warn');
  assert.equal(fieldValidationMode('Ignore'), 'Ignore');
  assert.equal(fieldValidationMode(new URLSearchParams('fieldValidation=Strict&fieldValidation=bad').get('fieldValidation')), 'Strict');
  assert.deepEqual(fieldValidationCauses('Strict'), []);
  assert.deepEqual(fieldValidationCauses(null), []);
});

test('fieldValidationMode: unsupported values are 422 Invalid on the request options', () => {
  const supported = 'supported values: "", "Ignore", "Strict", "Warn"';
  assert.throws(() => fieldValidationMode('strict'), (err: unknown) => {
    assert.ok(err instanceof StatusError);
    assert.equal(err.code, 422);
    assert.equal(err.reason, 'Invalid');
    assert.equal(err.message, `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": ${supported}`);
    assert.deepEqual(err.details, {
      group: 'meta.k8s.io',
      kind: 'CreateOptions',
      causes: [{ reason: 'FieldValueNotSupported', message: `Unsupported value: "strict": ${supported}`, field: 'fieldValidation' }],
    });
    const status = err.toStatus();
    assert.equal(status.code, 422);
    return true;
  });
  assert.throws(() => fieldValidationMode('a"b\n', 'PatchOptions'), (err: unknown) => {
    assert.ok(err instanceof StatusError);
    assert.equal(err.message, `PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "a\\"b\\n": ${supported}`);
    return true;
  });
  assert.throws(() => fieldValidationMode(' Strict', 'UpdateOptions'), /^StatusError: UpdateOptions\.meta\.k8s\.io "" is invalid/);
});

test('unknownFieldsError: 400 BadRequest in the create/update handler wording', () => {
  const err = unknownFieldsError(strictErrors(['spec.foo', 'bar']), 'ConfigMap', 'v1');
  assert.equal(err.code, 400);
  assert.equal(err.reason, 'BadRequest');
  assert.equal(
    err.message,
    'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec.foo", unknown field "bar"',
  );
  assert.equal(err.details, undefined);
  const role = unknownFieldsError(strictErrors(['rules[0].bogus']), 'Role', 'v1');
  assert.equal(role.message, 'Role in version "v1" cannot be handled as a Role: strict decoding error: unknown field "rules[0].bogus"');
});

test('strictErrors: one text per field, duplicates first, quoted as Go does', () => {
  assert.deepEqual(strictErrors(['spec.foo', 'metadata.bar']), ['unknown field "spec.foo"', 'unknown field "metadata.bar"']);
  assert.deepEqual(strictErrors(['data.a"b']), ['unknown field "data.a\\"b"']);
  assert.deepEqual(strictErrors([]), []);
  assert.deepEqual(strictErrors(['x'], ['data.a']), ['duplicate field "data.a"', 'unknown field "x"']);
});

test('strict errors are capped at 100 like sigs.k8s.io/json', () => {
  const paths = Array.from({ length: 150 }, (_, i) => `f${i}`);
  assert.equal(MAX_STRICT_ERRORS, 100);
  assert.equal(strictErrors(paths).length, 100);
  assert.equal(strictErrors(paths, paths).length, 100);
  const msg = strictDecodingMessage(strictErrors(paths));
  assert.ok(msg.endsWith('unknown field "f99"'));
  assert.equal(msg.split(', ').length, 100);
  // Pruning itself is not capped.
  const obj: Record<string, unknown> = { apiVersion: 'v1', kind: 'ConfigMap' };
  for (const p of paths) obj[p] = 1;
  assert.equal(prune(obj, '', 'v1', 'ConfigMap').length, 150);
  assert.deepEqual(Object.keys(obj), ['apiVersion', 'kind']);
});

test('unknownFieldsPatchError: 422 Invalid on field "patch" with the patched object or patch map', () => {
  const merge = unknownFieldsPatchError(strictErrors(['spec.foo']), 'merge', { kind: 'ConfigMap', apiVersion: 'v1', data: { a: '<b>' }, spec: { foo: 1 } });
  assert.equal(merge.code, 422);
  assert.equal(merge.reason, 'Invalid');
  const body =
    'Invalid value: "{\\"apiVersion\\":\\"v1\\",\\"data\\":{\\"a\\":\\"\\\\u003cb\\\\u003e\\"},\\"kind\\":\\"ConfigMap\\",\\"spec\\":{\\"foo\\":1}}": ' +
    'strict decoding error: unknown field "spec.foo"';
  assert.equal(merge.message, ` "" is invalid: patch: ${body}`);
  assert.deepEqual(merge.details, { causes: [{ reason: 'FieldValueInvalid', message: body, field: 'patch' }] });

  const smp = unknownFieldsPatchError(strictErrors(['spec.foo', 'x']), 'strategic', { spec: { foo: 1.5, list: ['a', null] }, x: true });
  assert.equal(
    smp.message,
    ' "" is invalid: patch: Invalid value: "map[spec:map[foo:1.5 list:[a <nil>]] x:true]": ' +
      'strict decoding error: unknown field "spec.foo", unknown field "x"',
  );
});

test('goQuote matches strconv.Quote for escapes and non-printable characters', () => {
  assert.equal(goQuote('plain'), '"plain"');
  assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(goQuote('\n\t\r\x00\x07\x7f'), '"\\n\\t\\r\\x00\\a\\x7f"');
  assert.equal(goQuote('héllo 世界'), '"héllo 世界"');
  assert.equal(goQuote('\u200b\u2028'), '"\\u200b\\u2028"');
});
