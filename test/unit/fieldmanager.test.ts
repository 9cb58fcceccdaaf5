import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { TESTDATA_CRDS } from '../helpers.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import { StatusError } from '../../src/apimachinery/errors.js';
import {
  FieldSet, applyConfiguration, updateManagedFields, builtinSchemaResolver, crdSchemaResolver, pathString,
  TypeResolver, toFieldSet, merge, LAST_APPLIED_ANNOTATION, undeclaredFields, undeclaredFieldsError,
} from '../../src/apimachinery/fieldmanager/index.js';

const CM = builtinSchemaResolver('', 'v1', 'ConfigMap')!;
const SA = builtinSchemaResolver('', 'v1', 'ServiceAccount')!;
const ROLE = builtinSchemaResolver('rbac.authorization.k8s.io', 'v1', 'Role')!;
const crd = parse(readFileSync(join(TESTDATA_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml'), 'utf8')) as {
  spec: { versions: Array<{ name: string; schema: { openAPIV3Schema: object } }> };
};
const CERT = crdSchemaResolver(crd.spec.versions.find((v) => v.name === 'v1')!.schema.openAPIV3Schema);

function cm(data: Record<string, string>, extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns', ...extra }, data };
}

function entry(o: KubeObject, manager: string, operation = 'Apply') {
  return o.metadata.managedFields?.find((e) => e.manager === manager && e.operation === operation);
}

function conflictOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof StatusError, String(e));
    return e;
  }
  assert.fail('expected a conflict');
}

/** Simulates storage: the server sets identity fields on create. */
function stored(o: KubeObject): KubeObject {
  return { ...o, metadata: { uid: 'u1', resourceVersion: '1', creationTimestamp: '2024-01-01T00:00:00Z', ...o.metadata } };
}

test('FieldsV1 round-trips and matches kube encoding for a ConfigMap created by update', () => {
  const obj = cm({ a: 'x' }, { labels: { app: 'web' } });
  const mf = updateManagedFields(undefined, obj, 'kubectl-create', CM);
  assert.equal(mf.length, 1);
  assert.equal(mf[0]!.operation, 'Update');
  assert.equal(mf[0]!.apiVersion, 'v1');
  assert.equal(mf[0]!.fieldsType, 'FieldsV1');
  assert.match(mf[0]!.time!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const want = { 'f:data': { '.': {}, 'f:a': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } };
  assert.deepEqual(mf[0]!.fieldsV1, want);
  assert.equal(JSON.stringify(mf[0]!.fieldsV1), JSON.stringify(want));
  const s = FieldSet.fromFieldsV1(want);
  assert.deepEqual(s.toFieldsV1(), want);
  assert.deepEqual(s.leaves().map(pathString), ['.data.a', '.metadata.labels.app']);
});

test('FieldsV1 keys, values and ordering', () => {
  const json = {
    'f:metadata': { 'f:finalizers': { '.': {}, 'v:"a"': {}, 'v:"b"': {} } },
    'f:secrets': { 'k:{"name":"s1"}': { '.': {}, 'f:name': {} } },
  };
  const s = FieldSet.fromFieldsV1(json);
  assert.deepEqual(s.toFieldsV1(), json);
  assert.deepEqual(s.paths().map(pathString), [
    '.metadata.finalizers', '.metadata.finalizers[="a"]', '.metadata.finalizers[="b"]', '.secrets[name="s1"]', '.secrets[name="s1"].name',
  ]);
  const a = FieldSet.fromFieldsV1({ 'f:a': {}, 'f:b': {} });
  const b = FieldSet.fromFieldsV1({ 'f:b': {}, 'f:c': {} });
  assert.deepEqual(a.union(b).toFieldsV1(), { 'f:a': {}, 'f:b': {}, 'f:c': {} });
  assert.deepEqual(a.difference(b).toFieldsV1(), { 'f:a': {} });
  assert.deepEqual(a.intersection(b).toFieldsV1(), { 'f:b': {} });
  assert.throws(() => FieldSet.fromFieldsV1({ 'x:y': {} }));
});

test('ToFieldSet follows SMD: list-maps, sets, atomic lists', () => {
  const t = new TypeResolver(SA).root();
  const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'x', finalizers: ['f1'] }, secrets: [{ name: 's1' }] };
  assert.deepEqual(toFieldSet(sa, t).paths().map(pathString), [
    // SMD Set.Iterate order: members of a level before its children; ObjectReference is atomic
    '.apiVersion', '.kind', '.metadata.name', '.metadata.finalizers[="f1"]', '.secrets[name="s1"]',
  ]);
  const rt = new TypeResolver(ROLE).root();
  const role = { rules: [{ verbs: ['get'], resources: ['pods'] }] };
  assert.deepEqual(toFieldSet(role, rt).paths().map(pathString), ['.rules']);
  // list-map merge: RHS order for shared items, new RHS items placed before them, LHS-only kept
  const ct = new TypeResolver(CERT).root();
  const conds = (xs: object[]) => ({ status: { conditions: xs } });
  const merged = merge(conds([{ type: 'A', status: 'x' }, { type: 'B' }]), conds([{ type: 'C' }, { type: 'A', reason: 'r' }]), ct) as { status: { conditions: unknown[] } };
  assert.deepEqual(merged.status.conditions, [{ type: 'C' }, { type: 'A', status: 'x', reason: 'r' }, { type: 'B' }]);
  // atomic items (ObjectReference) are replaced as a whole
  const m2 = merge({ secrets: [{ name: 'a', namespace: 'x' }] }, { secrets: [{ name: 'a', kind: 'Secret' }] }, t) as { secrets: unknown[] };
  assert.deepEqual(m2.secrets, [{ name: 'a', kind: 'Secret' }]);
});

test('create via apply records an Apply entry', () => {
  const out = applyConfiguration(undefined, cm({ key: 'v' }, { labels: { app: 'a' } }), 'mgr1', false, CM);
  assert.deepEqual(out.data, { key: 'v' });
  assert.equal(out.metadata.managedFields!.length, 1);
  const e = out.metadata.managedFields![0]!;
  assert.equal(e.manager, 'mgr1');
  assert.equal(e.operation, 'Apply');
  assert.equal(e.apiVersion, 'v1');
  assert.deepEqual(e.fieldsV1, { 'f:data': { 'f:key': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });
});

test('a second applier with a different value conflicts; force takes ownership', () => {
  const live = stored(applyConfiguration(undefined, cm({ key: 'v' }), 'mgr1', false, CM));
  const err = conflictOf(() => applyConfiguration(live, cm({ key: 'other' }), 'mgr2', false, CM));
  assert.equal(err.code, 409);
  assert.equal(err.reason, 'Conflict');
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "mgr1": .data.key');
  assert.deepEqual(err.details?.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "mgr1"', field: '.data.key' }]);

  const forced = applyConfiguration(live, cm({ key: 'other' }), 'mgr2', true, CM);
  assert.equal((forced.data as Record<string, string>).key, 'other');
  assert.equal(entry(forced, 'mgr1'), undefined);
  assert.deepEqual(entry(forced, 'mgr2')!.fieldsV1, { 'f:data': { 'f:key': {} } });
  assert.equal(forced.metadata.uid, 'u1');
});

test('conflicts with Update managers print "using <apiVersion>"; several conflicts list paths', () => {
  const created = cm({ key: 'v', other: 'o' });
  const live = stored({ ...created, metadata: { ...created.metadata, managedFields: updateManagedFields(undefined, created, 'kubectl-client-side-apply', CM) } });
  const err = conflictOf(() => applyConfiguration(live, cm({ key: 'x' }), 'kubectl', false, CM));
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key');
  const err2 = conflictOf(() => applyConfiguration(live, cm({ key: 'x', other: 'y' }), 'kubectl', false, CM));
  assert.equal(err2.message, 'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using v1:\n- .data.key\n- .data.other');
  assert.equal(err2.details!.causes!.length, 2);
});

test('client-side apply → server-side apply with the same values does not conflict', () => {
  const config = cm({ key: 'v' });
  const csa = { ...config, metadata: { ...config.metadata, annotations: { [LAST_APPLIED_ANNOTATION]: JSON.stringify(config) + '\n' } } };
  const live = stored({ ...csa, metadata: { ...csa.metadata, managedFields: updateManagedFields(undefined, csa, 'kubectl-client-side-apply', CM) } });
  const out = applyConfiguration(live, cm({ key: 'v' }), 'kubectl', false, CM);
  assert.deepEqual(out.data, { key: 'v' });
  assert.deepEqual(entry(out, 'kubectl')!.fieldsV1, { 'f:data': { 'f:key': {} } });
  assert.ok(entry(out, 'kubectl-client-side-apply', 'Update'));
  // a changed value where live still matches last-applied is allowed for kubectl (migration)
  const out2 = applyConfiguration(live, cm({ key: 'new' }), 'kubectl', false, CM);
  assert.deepEqual(out2.data, { key: 'new' });
  assert.equal(JSON.parse(out2.metadata.annotations![LAST_APPLIED_ANNOTATION]!).data.key, 'new');
  // …but not for other managers
  conflictOf(() => applyConfiguration(live, cm({ key: 'new' }), 'other', false, CM));
});

test('a manager dropping a field removes it; shared fields stay until both drop them', () => {
  let live = stored(applyConfiguration(undefined, cm({ a: '1', b: '2' }), 'm1', false, CM));
  live = applyConfiguration(live, cm({ a: '1' }), 'm1', false, CM);
  assert.deepEqual(live.data, { a: '1' });

  live = applyConfiguration(live, cm({ a: '1' }), 'm2', false, CM); // shared ownership, same value
  assert.ok(entry(live, 'm1') && entry(live, 'm2'));
  live = applyConfiguration(live, cm({}), 'm1', false, CM);
  assert.deepEqual(live.data, { a: '1' });
  // `data: {}` in the config is itself owned (SMD inserts empty maps)
  assert.deepEqual(entry(live, 'm1')!.fieldsV1, { 'f:data': {} });
  live = applyConfiguration(live, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } }, 'm1', false, CM);
  assert.deepEqual(live.data, { a: '1' });
  assert.equal(entry(live, 'm1'), undefined);
  live = applyConfiguration(live, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } }, 'm2', false, CM);
  assert.equal(live.data, undefined);
});

test('update operations record Update entries and take ownership from appliers', () => {
  const live = stored(applyConfiguration(undefined, cm({ a: '1', b: '2' }), 'applier', false, CM));
  const next = { ...live, data: { a: '9', b: '2' }, metadata: { ...live.metadata } };
  const mf = updateManagedFields(live, next, 'editor', CM);
  const byName = Object.fromEntries(mf.map((e) => [`${e.manager}/${e.operation}`, e]));
  assert.deepEqual(byName['applier/Apply']!.fieldsV1, { 'f:data': { 'f:b': {} } });
  assert.deepEqual(byName['editor/Update']!.fieldsV1, { 'f:data': { 'f:a': {} } });
  assert.equal(mf[0]!.operation, 'Apply'); // Apply entries sort first
  // the applier re-applying its old value now conflicts with the editor
  const updated = { ...next, metadata: { ...next.metadata, managedFields: mf } };
  const err = conflictOf(() => applyConfiguration(updated, cm({ a: '1', b: '2' }), 'applier', false, CM));
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a');
  // status subresource updates are recorded with the subresource
  const st = updateManagedFields(live, { ...live, data: { a: '1', b: '2', c: '3' } }, 'ctrl', CM, 'status');
  assert.equal(st.find((e) => e.manager === 'ctrl')!.subresource, 'status');
  // no change → no entry
  assert.equal(updateManagedFields(live, live, 'noop', CM).some((e) => e.manager === 'noop'), false);
});

test('stripped metadata fields are never managed', () => {
  const obj = stored(cm({ a: '1' }, { generation: 3 }));
  const mf = updateManagedFields(undefined, obj, 'x', CM);
  assert.deepEqual(mf[0]!.fieldsV1, { 'f:data': { '.': {}, 'f:a': {} } });
});

test('atomic lists (Role rules) conflict as a whole; sets and list-maps merge', () => {
  const role = (verbs: string[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r', namespace: 'ns' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs }],
  });
  const live = stored(applyConfiguration(undefined, role(['get']), 'a', false, ROLE));
  assert.deepEqual(entry(live, 'a')!.fieldsV1, { 'f:rules': {} });
  const err = conflictOf(() => applyConfiguration(live, role(['list']), 'b', false, ROLE));
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "a": .rules');

  const sa = (secrets: string[], finalizers: string[]): KubeObject => ({
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 's', namespace: 'ns', finalizers }, secrets: secrets.map((name) => ({ name })),
  });
  let s = stored(applyConfiguration(undefined, sa(['one'], ['f1']), 'a', false, SA));
  s = applyConfiguration(s, sa(['two'], ['f2']), 'b', false, SA);
  assert.deepEqual(s.secrets, [{ name: 'one' }, { name: 'two' }]);
  assert.deepEqual(s.metadata.finalizers, ['f1', 'f2']);
  assert.deepEqual(entry(s, 'b')!.fieldsV1, {
    'f:metadata': { 'f:finalizers': { 'v:"f2"': {} } },
    'f:secrets': { 'k:{"name":"two"}': {} }, // ObjectReference is an atomic struct
  });
  s = applyConfiguration(s, sa([], []), 'a', false, SA);
  assert.deepEqual(s.secrets, [{ name: 'two' }]);
  assert.deepEqual(s.metadata.finalizers, ['f2']);
});

test('custom resources (cert-manager Certificate) use the CRD schema', () => {
  const cert = (secretName: string, dnsNames: string[]): KubeObject => ({
    apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'c', namespace: 'ns', labels: { a: 'b' } },
    spec: { secretName, dnsNames, issuerRef: { name: 'ca', kind: 'Issuer' } },
  });
  const live = stored(applyConfiguration(undefined, cert('tls', ['a.example.com']), 'm1', false, CERT));
  assert.deepEqual(entry(live, 'm1')!.fieldsV1, {
    'f:metadata': { 'f:labels': { 'f:a': {} } },
    'f:spec': { 'f:dnsNames': {}, 'f:issuerRef': { 'f:kind': {}, 'f:name': {} }, 'f:secretName': {} },
  });
  const err = conflictOf(() => applyConfiguration(live, cert('tls', ['b.example.com']), 'm2', false, CERT));
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "m1": .spec.dnsNames');
  // status conditions are a list-map keyed by type
  const withStatus = { ...live, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
  const mf = updateManagedFields(live, withStatus, 'cert-manager', CERT, 'status');
  assert.deepEqual(mf.find((e) => e.manager === 'cert-manager')!.fieldsV1, {
    'f:status': { '.': {}, 'f:conditions': { '.': {}, 'k:{"type":"Ready"}': { '.': {}, 'f:status': {}, 'f:type': {} } } },
  });
});

test('apply validation errors', () => {
  const live = stored(applyConfiguration(undefined, cm({ a: '1' }), 'm', false, CM));
  const bad = (fn: () => unknown, code: number) => assert.equal(conflictOf(fn).code, code);
  bad(() => applyConfiguration(live, 'x' as unknown as KubeObject, 'm', false, CM), 400);
  bad(() => applyConfiguration(live, { kind: 'ConfigMap', metadata: { name: 'c' } }, 'm', false, CM), 400);
  bad(() => applyConfiguration(live, { apiVersion: 'v1', metadata: { name: 'c' } }, 'm', false, CM), 400);
  bad(() => applyConfiguration(live, { ...cm({}), metadata: { name: 'other' } }, 'm', false, CM), 400);
  bad(() => applyConfiguration(live, { ...cm({}), metadata: { name: 'c', managedFields: [] } }, 'm', false, CM), 400);
  bad(() => applyConfiguration(undefined, { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }, 'm', false, CM), 422);
  bad(() => applyConfiguration(undefined, {
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 's' }, secrets: [{ name: 'x' }, { name: 'x' }],
  }, 'm', false, SA), 400);
});

test('unchanged re-apply keeps the object and entry time', () => {
  const live = stored(applyConfiguration(undefined, cm({ a: '1' }), 'm', false, CM));
  const again = applyConfiguration(live, cm({ a: '1' }), 'm', false, CM);
  assert.deepEqual(again.data, { a: '1' });
  assert.deepEqual(again.metadata.managedFields, live.metadata.managedFields);
});

test('managedFields sent on update replace the live ones; [{}] resets tracking', () => {
  const live = stored(applyConfiguration(undefined, cm({ a: '1' }), 'm', false, CM));
  const reset = updateManagedFields(live, { ...live, metadata: { ...live.metadata, managedFields: [{}] } }, 'editor', CM);
  assert.deepEqual(reset, []);
});

test('an applier dropping a list-map item removes only its own items', () => {
  const cert = (types: string[]): KubeObject => ({
    apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'c', namespace: 'ns' },
    status: { conditions: types.map((type) => ({ type, status: 'True' })) },
  });
  let live = stored(applyConfiguration(undefined, cert(['Ready', 'Issuing']), 'a', false, CERT));
  live = applyConfiguration(live, cert(['Other']), 'b', false, CERT);
  live = applyConfiguration(live, cert(['Ready']), 'a', false, CERT);
  assert.deepEqual((live.status as { conditions: Array<{ type: string }> }).conditions.map((c) => c.type), ['Ready', 'Other']);
});

test('addedFieldSet equals compare(nothing, object).added (the create fast path)', async () => {
  const { addedFieldSet, compare, TypeResolver } = await import('../../src/apimachinery/fieldmanager/typed.js');
  const { builtinSchemaResolver, crdSchemaResolver } = await import('../../src/apimachinery/fieldmanager/schema.js');
  const { kcpResources } = await import('../../src/apis/kcp/index.js');
  const cases: Array<[unknown, ReturnType<typeof crdSchemaResolver>]> = [];
  const crdSchema = builtinSchemaResolver('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition')!;
  for (const f of readdirSync(TESTDATA_CRDS, { recursive: true }) as string[]) {
    if (!f.endsWith('.yaml')) continue;
    for (const d of parseAllDocuments(readFileSync(join(TESTDATA_CRDS, f), 'utf8'))) {
      const o = d.toJSON();
      if (o?.kind === 'CustomResourceDefinition') cases.push([o, crdSchema]);
    }
  }
  const lc = kcpResources().find((d) => d.plural === 'logicalclusters')!;
  cases.push([{ apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster', finalizers: ['x'] }, spec: { initializers: ['root:universal'], createdBy: { username: 'u', extra: { k: ['v'] } } }, status: { phase: 'Ready', conditions: [] } }, crdSchemaResolver(lc.schema!)]);
  cases.push([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', labels: { a: '1' }, annotations: {}, ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 'u1' }] }, data: { a: '1' }, binaryData: {} }, builtinSchemaResolver('', 'v1', 'ConfigMap')!]);
  cases.push([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'w' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'x' }, subjects: [{ kind: 'User', name: 'u' }, { kind: 'Group', name: 'g' }] }, builtinSchemaResolver('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding')!]);
  assert.ok(cases.length > 10);
  for (const [obj, schema] of cases) {
    const t = new TypeResolver(schema).root();
    const fast = addedFieldSet(obj, t);
    assert.ok(!fast.empty());
    assert.ok(fast.equals(compare(undefined, obj, t).added), (obj as KubeObject).metadata.name);
  }
});

test('undeclaredFields: the keys a struct does not declare, with SMD paths; maps, preserved and untyped objects take any key', () => {
  const schema = crdSchemaResolver({
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          foo: { type: 'string' },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
          open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { typed: { type: 'object', properties: { a: { type: 'string' } } } } },
          untyped: { type: 'object' },
          args: { type: 'array', items: { type: 'object', properties: { v: { type: 'string' } } } },
          tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
          ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['port', 'protocol'],
            items: { type: 'object', properties: { port: { type: 'integer' }, protocol: { type: 'string' } } } },
          template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object' } } },
        },
      },
    },
  });
  const t = new TypeResolver(schema).root();
  assert.deepEqual(undeclaredFields({
    apiVersion: 'x/v1', kind: 'K', metadata: { name: 'n', labels: { a: 'b' }, bogusMeta: 1 }, top: 1,
    spec: {
      foo: 'x', labels: { any: 'thing' }, open: { free: { deep: 1 }, typed: { a: 'x', b: 1 } }, untyped: { k: 1 },
      args: [{ v: 'a' }, { w: 'b' }], tags: ['a'],
      ports: [{ port: 80, protocol: 'TCP', extra: true }],
      template: { apiVersion: 'v1', kind: 'Sub', metadata: { name: 's', unknownSubMeta: 1 }, spec: { x: 1 }, apiversion: 'lower' },
    },
  }, t), [
    '.metadata.bogusMeta: field not declared in schema',
    '.top: field not declared in schema',
    '.spec.open.typed.b: field not declared in schema',
    '.spec.args[1].w: field not declared in schema',
    '.spec.ports[port=80,protocol="TCP"].extra: field not declared in schema',
    '.spec.template.metadata.unknownSubMeta: field not declared in schema',
    '.spec.template.apiversion: field not declared in schema',
  ]);
  assert.deepEqual(undeclaredFields({ apiVersion: 'x/v1', kind: 'K', metadata: { name: 'n' }, spec: { foo: 'x' } }, t), []);
  // Bounded: a body of many undeclared keys gets the first 100 reports.
  const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, i]));
  const capped = undeclaredFields({ apiVersion: 'x/v1', kind: 'K', metadata: many, spec: many }, t);
  assert.equal(capped.length, 100);
  assert.equal(capped[99], '.metadata.k99: field not declared in schema');
});

test('undeclaredFieldsError: kube\'s typed patch object failure, one error inline, several as an errors: list', () => {
  assert.equal(undeclaredFieldsError({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' }, data: {} }, CM), undefined);
  const one = undeclaredFieldsError({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' }, bogus: 1 } as KubeObject, CM)!;
  assert.equal(one.code, 400);
  assert.equal(one.reason, 'BadRequest');
  assert.equal(one.message, 'failed to create typed patch object (ns/c; /v1, Kind=ConfigMap): .bogus: field not declared in schema');
  const two = undeclaredFieldsError({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r' }, rules: [{ verbs: ['get'], x: 1 }], y: 2 } as KubeObject, ROLE)!;
  assert.equal(two.message, 'failed to create typed patch object (/r; rbac.authorization.k8s.io/v1, Kind=Role): errors:\n' +
    '  .rules[0].x: field not declared in schema\n  .y: field not declared in schema');
});
