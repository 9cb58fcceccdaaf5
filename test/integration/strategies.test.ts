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

test('namespaces/status: a merge patch changes status and metadata, never spec (kube\'s namespaceStatusStrategy)', async () => {
  const ns = await api('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'st' } });
  assert.equal(ns.status, 201, ns.body);
  const condition = { type: 'StatusUpdate', status: 'True', reason: 'E2E', message: 'Set from an e2e test' };
  const p = await api('PATCH', '/clusters/root/api/v1/namespaces/st/status', { metadata: { annotations: { 'e2e-patched-ns-status': 'st' } }, spec: { finalizers: [] }, status: { conditions: [condition] } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(p.status, 200, p.body);
  assert.equal(p.json.metadata.annotations['e2e-patched-ns-status'], 'st');
  assert.deepEqual(p.json.status.conditions, [condition]);
  assert.deepEqual(p.json.spec.finalizers, ['kubernetes']);
  assert.equal(p.json.status.phase, 'Active');
  // PUT of status with an empty phase: defaulted to Active (SetDefaults_NamespaceStatus runs on the body).
  const put = await api('PUT', '/clusters/root/api/v1/namespaces/st/status', { ...p.json, status: { conditions: [] } });
  assert.equal(put.status, 200, put.body);
  assert.equal(put.json.status.phase, 'Active');
  assert.equal(put.json.metadata.annotations['e2e-patched-ns-status'], 'st');
  // The main resource keeps status as stored.
  const main = await api('PATCH', '/clusters/root/api/v1/namespaces/st', { metadata: { labels: { l: 'v' } }, status: { phase: 'Terminating' } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(main.status, 200, main.body);
  assert.equal(main.json.status.phase, 'Active');
  assert.equal(main.json.metadata.labels.l, 'v');
});

test('flowschemas/status keeps metadata as stored; server-side apply never owns a reset field', async () => {
  const FS = '/clusters/root/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas';
  const fs = await api('POST', FS, { metadata: { name: 'fs-status', labels: { a: '1' } }, spec: { priorityLevelConfiguration: { name: 'global-default' } } });
  assert.equal(fs.status, 201, fs.body);
  const condition = { type: 'Dangling', status: 'False', reason: 'Found', message: 'x', lastTransitionTime: '2026-01-01T00:00:00Z' };
  const p = await api('PATCH', `${FS}/fs-status/status`, { metadata: { labels: { a: '2' } }, status: { conditions: [condition] } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(p.status, 200, p.body);
  assert.equal(p.json.metadata.labels.a, '1');

  const applied = await api('PATCH', '/clusters/root/api/v1/namespaces/applied-ns?fieldManager=tool', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'applied-ns', labels: { x: 'y' } }, status: { phase: 'Terminating' } }), { 'content-type': 'application/apply-patch+yaml' });
  assert.equal(applied.status, 201, applied.body);
  assert.equal(applied.json.status.phase, 'Active');
  const owned = JSON.stringify(applied.json.metadata.managedFields.find((e: { manager: string }) => e.manager === 'tool').fieldsV1);
  assert.match(owned, /"f:x"/);
  assert.doesNotMatch(owned, /f:status/);
});
