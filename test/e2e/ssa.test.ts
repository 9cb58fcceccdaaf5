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
  assert.equal(unknown.status, 422);
  assert.match(unknown.json.message, /unknown field "bogus"/);
});

test('every prometheus-operator CRD applies server-side (no annotation limit) and becomes Established', async () => {
  const out = (await kc(['apply', '--server-side', '-f', join(TESTDATA_CRDS, 'prometheus-operator')])).stdout;
  assert.equal(out.split('\n').filter((l) => l.includes('serverside-applied')).length, 5);
  const again = await kc(['apply', '--server-side', '-f', join(TESTDATA_CRDS, 'prometheus-operator')]);
  assert.equal(again.code, 0, 're-applying the same CRDs is conflict-free');
});
