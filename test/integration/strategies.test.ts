/**
 * kube's defaulting and subresource reset rules on the real server, on every write path: create,
 * update (PUT), JSON / merge / strategic merge patch, server-side apply and the status
 * subresource. The per-kind facts are table-tested in test/unit/defaults.test.ts and
 * test/unit/strategies.test.ts; this file checks they apply to each path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, useTestServer, type TestServer } from '../helpers.js';

let srv: TestServer;
useTestServer((s) => { srv = s; });

const RBAC = '/clusters/root/apis/rbac.authorization.k8s.io/v1';
const RB = `${RBAC}/namespaces/default/rolebindings`;
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(srv, srv.creds, method, path, body, headers);
const RBAC_GROUP = 'rbac.authorization.k8s.io';

test('RoleBinding: roleRef.apiGroup "" and subjects\' apiGroup are defaulted on create, update, every patch and apply', async () => {
  const created = await api('POST', RB, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'b' }, roleRef: { apiGroup: '', kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'u' }, { kind: 'ServiceAccount', name: 'sa', namespace: 'default' }] });
  assert.equal(created.status, 201, created.body);
  assert.equal(created.json.roleRef.apiGroup, RBAC_GROUP);
  assert.deepEqual(created.json.subjects, [{ kind: 'User', name: 'u', apiGroup: RBAC_GROUP }, { kind: 'ServiceAccount', name: 'sa', namespace: 'default' }]);

  // PUT with roleRef.apiGroup "" (the same roleRef once defaulted: not a roleRef change) and a new Group subject.
  const put = await api('PUT', `${RB}/b`, { ...created.json, roleRef: { apiGroup: '', kind: 'Role', name: 'r' }, subjects: [{ kind: 'Group', name: 'g' }] });
  assert.equal(put.status, 200, put.body);
  assert.equal(put.json.roleRef.apiGroup, RBAC_GROUP);
  assert.deepEqual(put.json.subjects, [{ kind: 'Group', name: 'g', apiGroup: RBAC_GROUP }]);

  const merge = await api('PATCH', `${RB}/b`, { subjects: [{ kind: 'User', name: 'm' }] }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(merge.status, 200, merge.body);
  assert.deepEqual(merge.json.subjects, [{ kind: 'User', name: 'm', apiGroup: RBAC_GROUP }]);

  const json = await api('PATCH', `${RB}/b`, [{ op: 'add', path: '/subjects/-', value: { kind: 'Group', name: 'j' } }], { 'content-type': 'application/json-patch+json' });
  assert.equal(json.status, 200, json.body);
  assert.deepEqual(json.json.subjects[1], { kind: 'Group', name: 'j', apiGroup: RBAC_GROUP });

  const smp = await api('PATCH', `${RB}/b`, { subjects: [{ kind: 'User', name: 's' }] }, { 'content-type': 'application/strategic-merge-patch+json' });
  assert.equal(smp.status, 200, smp.body);
  assert.deepEqual(smp.json.subjects, [{ kind: 'User', name: 's', apiGroup: RBAC_GROUP }]);

  const applyBody = JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'applied' }, roleRef: { apiGroup: '', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'User', name: 'a' }] });
  const applied = await api('PATCH', `${RB}/applied?fieldManager=t`, applyBody, { 'content-type': 'application/apply-patch+yaml' });
  assert.equal(applied.status, 201, applied.body);
  assert.equal(applied.json.roleRef.apiGroup, RBAC_GROUP);
  assert.equal(applied.json.subjects[0].apiGroup, RBAC_GROUP);
  // Applying the same configuration again is a no-op, not a roleRef change (defaults applied to the merged object).
  const again = await api('PATCH', `${RB}/applied?fieldManager=t`, applyBody, { 'content-type': 'application/apply-patch+yaml' });
  assert.equal(again.status, 200, again.body);
  assert.equal(again.json.metadata.resourceVersion, applied.json.metadata.resourceVersion, `${applied.body}\n${again.body}`);

  const crb = await api('POST', `${RBAC}/clusterrolebindings`, { metadata: { name: 'crb-defaults' }, roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'Group', name: 'g' }] });
  assert.equal(crb.status, 201, crb.body);
  assert.equal(crb.json.roleRef.apiGroup, RBAC_GROUP);
  assert.equal(crb.json.subjects[0].apiGroup, RBAC_GROUP);
});

test('Secret type and FlowSchema matchingPrecedence are defaulted on patch, not only on create', async () => {
  const s = await api('POST', '/clusters/root/api/v1/namespaces/default/secrets', { metadata: { name: 'sec' }, type: 'Opaque' });
  assert.equal(s.status, 201, s.body);
  const fs = await api('POST', '/clusters/root/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas', { metadata: { name: 'fs-defaults' }, spec: { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence: 500 } });
  assert.equal(fs.status, 201, fs.body);
  const p = await api('PATCH', '/clusters/root/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/fs-defaults', { spec: { matchingPrecedence: null } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(p.status, 200, p.body);
  assert.equal(p.json.spec.matchingPrecedence, 1000);
});

test('a Namespace asked with its own finalizer keeps it beside "kubernetes"', async () => {
  const ns = await api('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'fin' }, spec: { finalizers: ['example.com/x'] } });
  assert.equal(ns.status, 201, ns.body);
  assert.deepEqual(ns.json.spec.finalizers, ['example.com/x', 'kubernetes']);
  assert.equal(ns.json.metadata.labels['kubernetes.io/metadata.name'], 'fin');
});
