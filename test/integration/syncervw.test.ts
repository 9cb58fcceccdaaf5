/**
 * The syncer virtual workspace (kcp v0.11 pkg/virtual/syncer) against a real server on a real
 * Redis: a SyncTarget's syncer sees only the objects labelled for the SyncTarget, across logical
 * clusters, with the deletion annotation as deletionTimestamp and its own finalizer; its status
 * writes land upstream (promoted: one SyncTarget); dropping its finalizer from a deleted view
 * releases the upstream object and removes the state label. Only the SyncTarget's `sync` grantee
 * may use it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, createWorkspace, eventually, watch, type Res, type TestServer, useTestServer } from '../helpers.js';
import { syncTargetKey } from '../../src/workload/keys.js';

let srv: TestServer;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
writeFileSync(tokenFile, 'sync-token,syncbot,3001\nbob-token,bob,3002\n');
useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const as = (token: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> =>
  token ? call(srv, { ca: srv.creds.ca }, method, path, body, { authorization: `Bearer ${token}`, ...headers }) : call(srv, srv.creds, method, path, body, headers);
const merge = { 'content-type': 'application/merge-patch+json' };

describe('syncer virtual workspace', () => {
  let cluster = '';
  let uid = '';
  let key = '';
  let vw = '';
  const ws = '/clusters/root:tmc';

  test('set-up: a SyncTarget, its syncer granted `sync`, objects labelled for it and not', async () => {
    cluster = await createWorkspace(srv, 'tmc');
    const st = await as(undefined, 'POST', `${ws}/apis/workload.kcp.io/v1alpha1/synctargets`, { apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', metadata: { name: 'west' } });
    assert.equal(st.status, 201, st.body);
    uid = st.json.metadata.uid;
    key = syncTargetKey(cluster, 'west');
    vw = `/services/syncer/${cluster}/west/${uid}`;
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'syncer' }, rules: [{ verbs: ['access'], nonResourceURLs: ['/'] }, { apiGroups: ['workload.kcp.io'], resources: ['synctargets'], resourceNames: ['west'], verbs: ['sync'] }] };
    const binding = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'syncer' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'syncer' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'syncbot' }] };
    assert.equal((await as(undefined, 'POST', `${ws}/apis/rbac.authorization.k8s.io/v1/clusterroles`, role)).status, 201);
    assert.equal((await as(undefined, 'POST', `${ws}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings`, binding)).status, 201);
    const labels = { [`state.workload.kcp.io/${key}`]: 'Sync' };
    assert.equal((await as(undefined, 'POST', `${ws}/api/v1/namespaces`, { metadata: { name: 'web', labels } })).status, 201);
    for (const [name, l] of [['shown', labels], ['hidden', {}], ['pending', { [`state.workload.kcp.io/${key}`]: '' }]] as const) {
      assert.equal((await as(undefined, 'POST', `${ws}/api/v1/namespaces/web/configmaps`, { metadata: { name, labels: l }, data: { a: '1' } })).status, 201);
    }
  });

  test('only the SyncTarget\'s `sync` grantee may use it; another uid is 404', async () => {
    assert.equal((await as('bob-token', 'GET', `${vw}/clusters/*/api/v1/configmaps`)).status, 403);
    assert.equal((await as('sync-token', 'GET', `/services/syncer/${cluster}/west/not-the-uid/clusters/*/api/v1/configmaps`)).status, 404);
    assert.equal((await as('sync-token', 'GET', `${vw}/clusters/*/api/v1/configmaps`)).status, 200);
  });

  test('list, get: only what is labelled Sync for the SyncTarget, across clusters', async () => {
    const list = await as('sync-token', 'GET', `${vw}/clusters/*/api/v1/configmaps`);
    assert.deepEqual(list.json.items.map((i: any) => i.metadata.name), ['shown']);
    assert.equal(list.json.items[0].metadata.annotations['kcp.io/cluster'], cluster);
    const nss = await as('sync-token', 'GET', `${vw}/clusters/*/api/v1/namespaces`);
    assert.deepEqual(nss.json.items.map((i: any) => i.metadata.name), ['web']);
    assert.equal((await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).status, 200);
    assert.equal((await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/hidden`)).status, 404);
    assert.equal((await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/pending`)).status, 404);
    // Types not synced are not served.
    assert.equal((await as('sync-token', 'GET', `${vw}/clusters/*/api/v1/pods`)).status, 404);
    // No create or delete.
    assert.equal((await as('sync-token', 'DELETE', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).status, 405);
  });

  test('the syncer finalizer: set through the view, held upstream; the view shows no other finalizer', async () => {
    const fin = `workload.kcp.io/syncer-${key}`;
    assert.equal((await as(undefined, 'PATCH', `${ws}/api/v1/namespaces/web/configmaps/shown`, { metadata: { finalizers: ['example.com/other'] } }, merge)).status, 200);
    const view = (await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).json;
    assert.equal(view.metadata.finalizers, undefined);
    const res = await as('sync-token', 'PUT', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`, { ...view, metadata: { ...view.metadata, finalizers: [fin] }, data: { a: 'changed by the syncer' } });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(res.json.metadata.finalizers, [fin]);
    const up = (await as(undefined, 'GET', `${ws}/api/v1/namespaces/web/configmaps/shown`)).json;
    assert.deepEqual(up.metadata.finalizers, ['example.com/other', fin]);
    assert.equal(up.data.a, '1', 'the spec stays the workspace\'s');
    // A stale resourceVersion is a conflict.
    const stale = await as('sync-token', 'PUT', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`, view);
    assert.equal(stale.status, 409);
  });

  test('status through /status: promoted to the upstream object (one SyncTarget), shown back in the view', async () => {
    // Namespaces have a status and are always in the view (the types negotiation accepts need a cluster to import from).
    const path = `${vw}/clusters/${cluster}/api/v1/namespaces/web`;
    const fin = `workload.kcp.io/syncer-${key}`;
    let view = (await as('sync-token', 'GET', path)).json;
    assert.equal(view.status, undefined, 'no status before the syncer reported one');
    assert.equal((await as('sync-token', 'PATCH', path, { metadata: { finalizers: [fin] } }, merge)).status, 200);
    const reported = { phase: 'Active', conditions: [{ type: 'NamespaceDeletionDiscoveryFailure', status: 'False', reason: 'ResourcesDiscovered', message: 'reported by the syncer', lastTransitionTime: '2026-01-01T00:00:00Z' }] };
    const res = await as('sync-token', 'PATCH', `${path}/status`, { status: reported }, merge);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(res.json.status, reported);
    const up = (await as(undefined, 'GET', `${ws}/api/v1/namespaces/web`)).json;
    assert.deepEqual(up.status, reported);
    assert.deepEqual(up.metadata.finalizers, [fin]);
    assert.equal(up.metadata.annotations[`diff.syncer.internal.kcp.io/${key}`], '{"status":"##promoted##"}');
    view = (await as('sync-token', 'GET', path)).json;
    assert.deepEqual(view.status, reported);
    assert.equal(view.metadata.annotations?.[`diff.syncer.internal.kcp.io/${key}`], undefined);
  });

  test('writes start from the watch cache: none lost right after an upstream write, a resourceVersion asked for is still a precondition', async () => {
    const path = `${vw}/clusters/${cluster}/api/v1/namespaces/web`;
    // Each status write follows an upstream write at once (the watch cache may not have it yet):
    // the view's write must neither undo the upstream change nor fail.
    for (let i = 0; i < 20; i++) {
      assert.equal((await as(undefined, 'PATCH', `${ws}/api/v1/namespaces/web`, { metadata: { annotations: { round: String(i) } } }, merge)).status, 200);
      const status = { phase: 'Active', conditions: [{ type: 'NamespaceDeletionDiscoveryFailure', status: 'False', reason: 'ResourcesDiscovered', message: `round ${i}`, lastTransitionTime: '2026-01-01T00:00:00Z' }] };
      const res = await as('sync-token', 'PATCH', `${path}/status`, { status }, merge);
      assert.equal(res.status, 200, res.body);
      const up = (await as(undefined, 'GET', `${ws}/api/v1/namespaces/web`)).json;
      assert.equal(up.metadata.annotations.round, String(i));
      assert.equal(up.status.conditions[0].message, `round ${i}`);
    }
    const view = (await as('sync-token', 'GET', path)).json;
    // The resourceVersion the syncer read: accepted; any other: 409, by PATCH and by PUT.
    assert.equal((await as(undefined, 'PATCH', `${ws}/api/v1/namespaces/web`, { metadata: { annotations: { round: 'last' } } }, merge)).status, 200);
    assert.equal((await as('sync-token', 'PATCH', path, { metadata: { resourceVersion: view.metadata.resourceVersion } }, merge)).status, 409);
    assert.equal((await as('sync-token', 'PUT', `${path}/status`, view)).status, 409);
    const fresh = (await as('sync-token', 'GET', path)).json;
    const ok = await as('sync-token', 'PATCH', path, { metadata: { resourceVersion: fresh.metadata.resourceVersion } }, merge);
    assert.equal(ok.status, 200, ok.body);
    assert.equal((await as('sync-token', 'PUT', path, { ...fresh, metadata: { ...fresh.metadata, resourceVersion: '999999999' } })).status, 409);
  });

  test('deletion: the annotation (or a deletion upstream) is the view\'s deletionTimestamp; soft finalizers hold it back', async () => {
    const path = `${ws}/api/v1/namespaces/web/configmaps/shown`;
    const when = '2026-01-02T03:04:05Z';
    const w = watch(srv, srv.creds, `${vw}/clusters/*/api/v1/configmaps?watch=true`);
    try {
      await w.waitFor(1);
      assert.equal((await as(undefined, 'PATCH', path, { metadata: { annotations: { [`deletion.internal.workload.kcp.io/${key}`]: when, [`finalizers.workload.kcp.io/${key}`]: 'example.com/coordinator' } } }, merge)).status, 200);
      let view = (await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).json;
      assert.equal(view.metadata.deletionTimestamp, undefined);
      assert.equal((await as(undefined, 'PATCH', path, { metadata: { annotations: { [`finalizers.workload.kcp.io/${key}`]: null } } }, merge)).status, 200);
      view = (await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).json;
      assert.equal(view.metadata.deletionTimestamp, when);
      // The syncer is done downstream: it drops its finalizer; the object leaves the SyncTarget.
      const res = await as('sync-token', 'PATCH', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`, { metadata: { finalizers: null } }, merge);
      assert.equal(res.status, 200, res.body);
      const up = (await as(undefined, 'GET', path)).json;
      assert.equal(up.metadata.labels?.[`state.workload.kcp.io/${key}`], undefined);
      assert.deepEqual(up.metadata.finalizers, ['example.com/other']);
      assert.equal(up.metadata.annotations?.[`deletion.internal.workload.kcp.io/${key}`], undefined);
      const events = await w.waitFor(3);
      assert.equal(events.at(-1).type, 'DELETED', 'the watch sees it leave the view');
      assert.equal((await as('sync-token', 'GET', `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/shown`)).status, 404);
    } finally { w.close(); }
    // An object deleted upstream while the syncer holds it: deletionTimestamp shown, released by the syncer.
    const labels = { [`state.workload.kcp.io/${key}`]: 'Sync' };
    const fin = `workload.kcp.io/syncer-${key}`;
    assert.equal((await as(undefined, 'POST', `${ws}/api/v1/namespaces/web/configmaps`, { metadata: { name: 'held', labels, finalizers: [fin] }, data: { a: '1' } })).status, 201);
    const hpath = `${vw}/clusters/${cluster}/api/v1/namespaces/web/configmaps/held`;
    assert.equal((await as(undefined, 'DELETE', `${ws}/api/v1/namespaces/web/configmaps/held`)).status, 200);
    const view = (await as('sync-token', 'GET', hpath)).json;
    assert.ok(view.metadata.deletionTimestamp);
    assert.equal((await as('sync-token', 'PATCH', hpath, { metadata: { finalizers: null } }, merge)).status, 200);
    await eventually('held gone', async () => (await as(undefined, 'GET', `${ws}/api/v1/namespaces/web/configmaps/held`)).status === 404);
  });
});
