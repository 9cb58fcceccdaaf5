/**
 * Server-side apply with real kubectl: managedFields on every write path, conflicts between
 * field managers and their resolution with --force-conflicts, switching from client-side apply,
 * and the large CRDs client-side apply cannot take.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { TESTDATA_CRDS, call, type TestServer, useTestServer, type Kubectl } from '../helpers.js';

let srv: TestServer;
let kc: Kubectl;

useTestServer((s, _r, k) => { srv = s; kc = k; });

const cm = (name: string, a: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "${a}"\n  b: "2"\n`;
const managers = async (name: string) => {
  const o = JSON.parse((await kc(['get', 'cm', name, '-o', 'json', '--show-managed-fields'])).stdout);
  return (o.metadata.managedFields ?? []).map((m: any) => `${m.manager}/${m.operation}`).sort();
};

test('apply --server-side records ownership; a second manager conflicts until --force-conflicts', async () => {
  assert.match((await kc(['apply', '--server-side', '-f', '-'], { input: cm('owned', '1') })).stdout, /serverside-applied/);
  assert.deepEqual(await managers('owned'), ['kubectl/Apply']);
  const clash = await kc(['apply', '--server-side', '--field-manager=other', '-f', '-'], { input: cm('owned', '9'), allowFail: true });
  assert.notEqual(clash.code, 0);
  assert.match(clash.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.data\.a/);
  // Same value: shared ownership, no conflict.
  await kc(['apply', '--server-side', '--field-manager=other', '-f', '-'], { input: cm('owned', '1') });
  await kc(['apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', '-'], { input: cm('owned', '9') });
  const obj = JSON.parse((await kc(['get', 'cm', 'owned', '-o', 'json'])).stdout);
  assert.equal(obj.data.a, '9');
  assert.deepEqual(await managers('owned'), ['kubectl/Apply', 'other/Apply']);
  // A manager that stops applying a field it alone owns removes it.
  await kc(['apply', '--server-side', '--field-manager=other', '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\ndata:\n  a: "9"\n' });
  await kc(['apply', '--server-side', '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\ndata: {}\n' });
  const after = JSON.parse((await kc(['get', 'cm', 'owned', '-o', 'json'])).stdout);
  assert.deepEqual(after.data ?? {}, { a: '9' }, 'b was owned only by kubectl and is gone; a is still owned by other');
});

test('updates record Update entries; switching from client-side to server-side apply does not conflict', async () => {
  await kc(['create', 'configmap', 'typed', '--from-literal=x=1']);
  assert.deepEqual(await managers('typed'), ['kubectl-create/Update']);
  await kc(['apply', '-f', '-'], { input: cm('switch', '1') });
  const r = await kc(['apply', '--server-side', '-f', '-'], { input: cm('switch', '1') });
  assert.match(r.stdout, /serverside-applied/);
  await kc(['apply', '--server-side', '-f', '-'], { input: cm('switch', '5') });
  assert.equal(JSON.parse((await kc(['get', 'cm', 'switch', '-o', 'json'])).stdout).data.a, '5');
});

test('apply needs a fieldManager; unknown fields are rejected', async () => {
  const url = '/clusters/root/api/v1/namespaces/default/configmaps/raw';
  const noManager = await call(srv, srv.creds, 'PATCH', url, 'apiVersion: v1\nkind: ConfigMap\n', { 'content-type': 'application/apply-patch+yaml' });
  assert.equal(noManager.status, 422);
  assert.match(noManager.json.message, /fieldManager: Required value: is required for apply patch/);
  const created = await call(srv, srv.creds, 'PATCH', `${url}?fieldManager=tool`, 'apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n', { 'content-type': 'application/apply-patch+yaml' });
  assert.equal(created.status, 201, created.body);
  const unknown = await call(srv, srv.creds, 'PATCH', `${url}?fieldManager=tool`, 'apiVersion: v1\nkind: ConfigMap\nbogus: 1\n', { 'content-type': 'application/apply-patch+yaml' });
  // kube: the typed conversion of the configuration fails whatever fieldValidation says
  // (structuredmerge.go; namespace and name are the body's, absent here).
  for (const fv of ['', '&fieldValidation=Ignore']) {
    const unknown = await call(srv, srv.creds, 'PATCH', `${url}?fieldManager=tool${fv}`, 'apiVersion: v1\nkind: ConfigMap\nbogus: 1\n', { 'content-type': 'application/apply-patch+yaml' });
    assert.equal(unknown.status, 400, unknown.body);
    assert.equal(unknown.json.reason, 'BadRequest');
    assert.equal(unknown.json.message, 'failed to create typed patch object (/; /v1, Kind=ConfigMap): .bogus: field not declared in schema');
  }
});

const APPLY = { 'content-type': 'application/apply-patch+yaml' };
const warnings = (h: Record<string, unknown>) => [...String(h.warning ?? '').matchAll(/299 - "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);

test('apply of a custom resource: undeclared fields (root, metadata, embedded resource, list-map item) are refused with SMD paths', async () => {
  await kc(['apply', '-f', '-'], { input: JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'noxus.fv.example.com' },
    spec: { group: 'fv.example.com', scope: 'Cluster', names: { plural: 'noxus', singular: 'noxu', kind: 'Noxu', listKind: 'NoxuList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: {
        type: 'object', properties: {
          foo: { type: 'string' },
          open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object' } } },
          ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
            items: { type: 'object', required: ['containerPort', 'protocol'], properties: { containerPort: { type: 'integer' }, protocol: { type: 'string' } } } },
        } } } } } }] },
  }) });
  await kc(['wait', '--for=condition=Established', 'crd/noxus.fv.example.com']);
  const url = '/clusters/root/apis/fv.example.com/v1/noxus/mytest?fieldManager=m&fieldValidation=Strict';
  const head = 'apiVersion: fv.example.com/v1\nkind: Noxu\nmetadata:\n  name: mytest\n';
  const one = await call(srv, srv.creds, 'PATCH', url, `${head}unknownField: x\nspec:\n  foo: a\n`, APPLY);
  assert.equal(one.status, 400, one.body);
  assert.equal(one.json.message, 'failed to create typed patch object (/mytest; fv.example.com/v1, Kind=Noxu): .unknownField: field not declared in schema');
  const many = await call(srv, srv.creds, 'PATCH', url, `${head}  unknownMeta: x\nspec:\n  open: {anything: 1}\n  template:\n    apiVersion: v1\n    kind: Sub\n    metadata:\n      name: sub\n      unknownSubMeta: x\n  ports:\n  - containerPort: 80\n    protocol: TCP\n    extra: 1\n`, APPLY);
  assert.equal(many.status, 400, many.body);
  assert.equal(many.json.message, 'failed to create typed patch object (/mytest; fv.example.com/v1, Kind=Noxu): errors:\n' +
    '  .metadata.unknownMeta: field not declared in schema\n' +
    '  .spec.template.metadata.unknownSubMeta: field not declared in schema\n' +
    '  .spec.ports[containerPort=80,protocol="TCP"].extra: field not declared in schema');
  assert.equal((await call(srv, srv.creds, 'GET', '/clusters/root/apis/fv.example.com/v1/noxus/mytest')).status, 404, 'nothing was written');
  // Declared and preserved fields apply; the embedded resource's apiVersion/kind/metadata are declared.
  const ok = await call(srv, srv.creds, 'PATCH', url, `${head}spec:\n  open: {anything: 1}\n  template:\n    apiVersion: v1\n    kind: Sub\n    metadata:\n      name: sub\n`, APPLY);
  assert.equal(ok.status, 201, ok.body);
});

test('apply body with repeated keys: the last value is applied; fieldValidation judges them after the merge as kube (Strict 400, Warn/default warnings, Ignore silent)', async () => {
  const url = (name: string, fv?: string) => `/clusters/root/api/v1/namespaces/default/configmaps/${name}?fieldManager=m${fv ? `&fieldValidation=${fv}` : ''}`;
  const body = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "1"\n  a: "2"\nmetadata:\n  name: ${name}\n`;
  const strict = await call(srv, srv.creds, 'PATCH', url('dup-strict', 'Strict'), body('dup-strict'), APPLY);
  assert.equal(strict.status, 400, strict.body);
  assert.equal(strict.json.message, 'error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n' +
    '  line 7: key "a" already set in map\n  line 9: key "metadata" already set in map');
  assert.equal((await call(srv, srv.creds, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps/dup-strict')).status, 404);
  for (const fv of ['Warn', undefined]) {
    const name = `dup-${fv ?? 'default'}`.toLowerCase();
    const warned = await call(srv, srv.creds, 'PATCH', url(name, fv), body(name), APPLY);
    assert.equal(warned.status, 201, warned.body);
    assert.equal(warned.json.data.a, '2', 'the last value wins');
    assert.deepEqual(warnings(warned.headers), ['line 7: key \\"a\\" already set in map', 'line 9: key \\"metadata\\" already set in map']);
  }
  const ignored = await call(srv, srv.creds, 'PATCH', url('dup-ignore', 'Ignore'), body('dup-ignore'), APPLY);
  assert.equal(ignored.status, 201, ignored.body);
  assert.equal(ignored.headers.warning, undefined);
  // A JSON body is YAML to the apply patcher: same reports, line by line.
  const json = await call(srv, srv.creds, 'PATCH', url('dup-json', 'Strict'), '{"apiVersion":"v1","kind":"ConfigMap",\n"data":{"a":"1",\n"a":"2"}}', APPLY);
  assert.equal(json.status, 400, json.body);
  assert.match(json.json.message, /unmarshal errors:\n  line 3: key "a" already set in map$/);
  // A conflict comes first (kube judges the body once the merge succeeded).
  await call(srv, srv.creds, 'PATCH', url('dup-warn'), 'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: "9"\n', { ...APPLY });
  const conflict = await call(srv, srv.creds, 'PATCH', `/clusters/root/api/v1/namespaces/default/configmaps/dup-warn?fieldManager=other&fieldValidation=Strict`, body('dup-warn'), APPLY);
  assert.equal(conflict.status, 409, conflict.body);
});

test('every prometheus-operator CRD applies server-side (no annotation limit) and becomes Established', async () => {
  const out = (await kc(['apply', '--server-side', '-f', join(TESTDATA_CRDS, 'prometheus-operator')])).stdout;
  assert.equal(out.split('\n').filter((l) => l.includes('serverside-applied')).length, 5);
  const again = await kc(['apply', '--server-side', '-f', join(TESTDATA_CRDS, 'prometheus-operator')]);
  assert.equal(again.code, 0, 're-applying the same CRDs is conflict-free');
});
