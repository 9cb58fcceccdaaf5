/**
 * Garbage collection through the HTTP API on a real server and Redis: DELETE with
 * propagationPolicy Background / Foreground / Orphan (query parameter or DeleteOptions body),
 * dependents with several owners, cluster-scoped owners, custom resources as owners, and the
 * policy change of a second DELETE — as kube-apiserver with kube-controller-manager's garbage
 * collector behave.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CM, call, createLogicalCluster, eventually, sleep, type Res, type TestServer, useTestServer } from '../helpers.js';

let srv: TestServer;

useTestServer((s) => { srv = s; });

// system:masters: the bare logical cluster of the custom-resource tests has no RBAC for kcp-admin.
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(srv, srv.masters, method, path, body, headers);
const NS = (ns: string, cluster = 'root') => `/clusters/${cluster}/api/v1/namespaces/${ns}`;

const gone = (path: string) => eventually(`${path} gone`, async () => (await api('GET', path)).status === 404);

async function ns(name: string, cluster = 'root'): Promise<void> {
  const r = await api('POST', `/clusters/${cluster}/api/v1/namespaces`, { metadata: { name } });
  assert.equal(r.status, 201, r.body);
}

/** Creates an object and returns it (201 asserted). */
async function create(path: string, body: unknown): Promise<any> {
  const r = await api('POST', path, body);
  assert.equal(r.status, 201, r.body);
  return r.json;
}

const ref = (o: any, extra: Record<string, unknown> = {}) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, ...extra });
const owned = (name: string, owners: unknown[], extra: Record<string, unknown> = {}) => ({ ...CM(name), metadata: { name, ownerReferences: owners, ...extra } });

describe('background (the default)', () => {
  before(() => ns('gc-bg'));

  test('dependents of a deleted ConfigMap and Secret are deleted after their owner', async () => {
    const owner = await create(`${NS('gc-bg')}/configmaps`, CM('owner'));
    const secret = await create(`${NS('gc-bg')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sowner' }, stringData: { a: 'b' } });
    await create(`${NS('gc-bg')}/configmaps`, owned('d1', [ref(owner)]));
    await create(`${NS('gc-bg')}/configmaps`, owned('d2', [ref(owner, { controller: true, blockOwnerDeletion: true })]));
    await create(`${NS('gc-bg')}/configmaps`, owned('d3', [ref(secret)]));
    const del = await api('DELETE', `${NS('gc-bg')}/configmaps/owner`);
    assert.equal(del.status, 200);
    assert.equal(del.json.kind, 'Status', 'background: the owner is deleted at once');
    await gone(`${NS('gc-bg')}/configmaps/d1`);
    await gone(`${NS('gc-bg')}/configmaps/d2`);
    assert.equal((await api('GET', `${NS('gc-bg')}/configmaps/d3`)).status, 200, 'another owner\'s dependent stays');
    assert.equal((await api('DELETE', `${NS('gc-bg')}/secrets/sowner?propagationPolicy=Background`)).status, 200);
    await gone(`${NS('gc-bg')}/configmaps/d3`);
  });

  test('a dependent with two owners survives one of them, without the dangling reference', async () => {
    const a = await create(`${NS('gc-bg')}/configmaps`, CM('two-a'));
    const b = await create(`${NS('gc-bg')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'two-b' } });
    await create(`${NS('gc-bg')}/configmaps`, owned('two-dep', [ref(a), ref(b)]));
    assert.equal((await api('DELETE', `${NS('gc-bg')}/configmaps/two-a`)).status, 200);
    const dep = await eventually('dangling reference removed', async () => {
      const r = await api('GET', `${NS('gc-bg')}/configmaps/two-dep`);
      assert.equal(r.status, 200);
      return r.json.metadata.ownerReferences.length === 1 ? r.json : undefined;
    });
    assert.deepEqual(dep.metadata.ownerReferences, [ref(b)]);
    assert.equal((await api('DELETE', `${NS('gc-bg')}/secrets/two-b`)).status, 200);
    await gone(`${NS('gc-bg')}/configmaps/two-dep`);
  });

  test('a dependent created with an absent owner is collected; a live owner with another uid does not count', async () => {
    const live = await create(`${NS('gc-bg')}/configmaps`, CM('live'));
    await create(`${NS('gc-bg')}/configmaps`, owned('ghost-dep', [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'never', uid: '00000000-0000-0000-0000-000000000001' }]));
    await create(`${NS('gc-bg')}/configmaps`, owned('wrong-uid', [{ ...ref(live), uid: '00000000-0000-0000-0000-000000000002' }]));
    await gone(`${NS('gc-bg')}/configmaps/ghost-dep`);
    await gone(`${NS('gc-bg')}/configmaps/wrong-uid`);
    assert.equal((await api('GET', `${NS('gc-bg')}/configmaps/live`)).status, 200);
  });

  test('a namespaced owner is looked up in its dependent\'s namespace', async () => {
    await ns('gc-bg-other');
    const owner = await create(`${NS('gc-bg')}/configmaps`, CM('cross-owner'));
    await create(`${NS('gc-bg-other')}/configmaps`, owned('cross-dep', [ref(owner)]));
    await gone(`${NS('gc-bg-other')}/configmaps/cross-dep`);
    assert.equal((await api('GET', `${NS('gc-bg')}/configmaps/cross-owner`)).status, 200);
  });

  test('a cluster-scoped Namespace owns dependents in other namespaces; deleting it collects them', async () => {
    await ns('gc-ns-owner');
    await ns('gc-ns-deps');
    const owner = (await api('GET', '/clusters/root/api/v1/namespaces/gc-ns-owner')).json;
    await create(`${NS('gc-ns-deps')}/configmaps`, owned('of-namespace', [ref(owner)]));
    const role = await create('/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'gc-owned-role', ownerReferences: [ref(owner)] }, rules: [] });
    assert.equal(role.metadata.ownerReferences.length, 1);
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(300);
    assert.equal((await api('GET', `${NS('gc-ns-deps')}/configmaps/of-namespace`)).status, 200);
    assert.equal((await api('DELETE', '/clusters/root/api/v1/namespaces/gc-ns-owner')).status, 200);
    await gone('/clusters/root/api/v1/namespaces/gc-ns-owner');
    await gone(`${NS('gc-ns-deps')}/configmaps/of-namespace`);
    await gone('/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles/gc-owned-role');
  });

  test('namespaces deleted in the foreground and with Orphan', async () => {
    await ns('gc-ns-fg');
    await ns('gc-ns-or');
    await ns('gc-ns-keep');
    const fg = (await api('GET', '/clusters/root/api/v1/namespaces/gc-ns-fg')).json;
    const or = (await api('GET', '/clusters/root/api/v1/namespaces/gc-ns-or')).json;
    await create(`${NS('gc-ns-keep')}/configmaps`, owned('of-fg', [ref(fg, { blockOwnerDeletion: true })]));
    await create(`${NS('gc-ns-keep')}/configmaps`, owned('of-or', [ref(or, { blockOwnerDeletion: true })]));
    await create(`${NS('gc-ns-fg')}/configmaps`, CM('inside'));
    const del = await api('DELETE', '/clusters/root/api/v1/namespaces/gc-ns-fg?propagationPolicy=Foreground');
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.metadata.finalizers, ['foregroundDeletion']);
    assert.equal(del.json.status.phase, 'Terminating');
    await gone(`${NS('gc-ns-keep')}/configmaps/of-fg`);
    await gone('/clusters/root/api/v1/namespaces/gc-ns-fg');
    assert.equal((await api('DELETE', '/clusters/root/api/v1/namespaces/gc-ns-or', { propagationPolicy: 'Orphan' })).status, 200);
    await gone('/clusters/root/api/v1/namespaces/gc-ns-or');
    const kept = await api('GET', `${NS('gc-ns-keep')}/configmaps/of-or`);
    assert.equal(kept.status, 200);
    assert.equal(kept.json.metadata.ownerReferences, undefined);
  });

  test('a cluster-scoped dependent naming a namespaced owner is ignored, as kube does', async () => {
    await create('/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: 'gc-invalid-owner', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'nobody', uid: '00000000-0000-0000-0000-000000000003' }] }, rules: [],
    });
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(800);
    assert.equal((await api('GET', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles/gc-invalid-owner')).status, 200);
  });
});

describe('custom resources and logical clusters', () => {
  const C = 'gc-crd';
  before(async () => {
    await createLogicalCluster(srv, C);
    await ns('default', C).catch(() => undefined);
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } }],
      },
    };
    assert.equal((await api('POST', `/clusters/${C}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd)).status, 201);
    await eventually('Widget served', async () => (await api('GET', `/clusters/${C}/apis/example.com/v1/namespaces/default/widgets`)).status === 200);
  });

  test('dependents of a deleted custom resource are deleted; the same names in another logical cluster are not touched', async () => {
    const w = await create(`/clusters/${C}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } });
    await create(`${NS('default', C)}/configmaps`, owned('of-widget', [ref(w, { blockOwnerDeletion: true })]));
    // A ConfigMap in root naming the same owner uid: its owner kind is not even served there.
    await ns('gc-iso');
    const rootOwner = await create(`${NS('gc-iso')}/configmaps`, CM('iso-owner'));
    await create(`${NS('gc-iso')}/configmaps`, owned('iso-dep', [ref(rootOwner)]));
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(200);
    assert.equal((await api('GET', `${NS('default', C)}/configmaps/of-widget`)).status, 200);
    const del = await api('DELETE', `/clusters/${C}/apis/example.com/v1/namespaces/default/widgets/w1`);
    assert.equal(del.status, 200);
    await gone(`${NS('default', C)}/configmaps/of-widget`);
    assert.equal((await api('GET', `${NS('gc-iso')}/configmaps/iso-dep`)).status, 200);
  });

  test('foreground deletion of a custom resource waits for its blocking dependents', async () => {
    const w = await create(`/clusters/${C}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w2' } });
    await create(`${NS('default', C)}/configmaps`, owned('w2-dep', [ref(w, { blockOwnerDeletion: true })]));
    const del = await api('DELETE', `/clusters/${C}/apis/example.com/v1/namespaces/default/widgets/w2`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' });
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.metadata.finalizers, ['foregroundDeletion']);
    await gone(`${NS('default', C)}/configmaps/w2-dep`);
    await gone(`/clusters/${C}/apis/example.com/v1/namespaces/default/widgets/w2`);
  });
});

describe('foreground', () => {
  before(() => ns('gc-fg'));

  test('the owner stays with foregroundDeletion until its blocking dependents are gone', async () => {
    const owner = await create(`${NS('gc-fg')}/configmaps`, CM('owner'));
    await create(`${NS('gc-fg')}/configmaps`, owned('blocker', [ref(owner, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    await create(`${NS('gc-fg')}/configmaps`, owned('free', [ref(owner)]));
    const del = await api('DELETE', `${NS('gc-fg')}/configmaps/owner?propagationPolicy=Foreground`);
    assert.equal(del.status, 200);
    assert.equal(del.json.kind, 'ConfigMap', 'the owner is returned: it stays while dependents go');
    assert.ok(del.json.metadata.deletionTimestamp);
    assert.deepEqual(del.json.metadata.finalizers, ['foregroundDeletion']);
    await gone(`${NS('gc-fg')}/configmaps/free`);
    const blocker = await eventually('blocker being deleted', async () => {
      const r = await api('GET', `${NS('gc-fg')}/configmaps/blocker`);
      return r.json.metadata.deletionTimestamp ? r.json : undefined;
    });
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(300);
    const still = await api('GET', `${NS('gc-fg')}/configmaps/owner`);
    assert.equal(still.status, 200, 'a blocking dependent held by its finalizer keeps the owner');
    assert.deepEqual(still.json.metadata.finalizers, ['foregroundDeletion']);
    // Release the blocker: it goes, then the owner.
    const rel = await api('PATCH', `${NS('gc-fg')}/configmaps/blocker`, [{ op: 'remove', path: '/metadata/finalizers' }], { 'content-type': 'application/json-patch+json' });
    assert.equal(rel.status, 200, rel.body);
    assert.ok(blocker.metadata.deletionTimestamp);
    await gone(`${NS('gc-fg')}/configmaps/blocker`);
    await gone(`${NS('gc-fg')}/configmaps/owner`);
  });

  test('foreground cascades through a chain of owners', async () => {
    const top = await create(`${NS('gc-fg')}/configmaps`, CM('top'));
    const mid = await create(`${NS('gc-fg')}/configmaps`, owned('mid', [ref(top, { blockOwnerDeletion: true })]));
    await create(`${NS('gc-fg')}/configmaps`, owned('leaf', [ref(mid, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    assert.equal((await api('DELETE', `${NS('gc-fg')}/configmaps/top`, { propagationPolicy: 'Foreground' })).status, 200);
    const midDeleting = await eventually('mid deleted in the foreground', async () => {
      const r = await api('GET', `${NS('gc-fg')}/configmaps/mid`);
      return r.json.metadata?.deletionTimestamp ? r.json : undefined;
    });
    assert.deepEqual(midDeleting.metadata.finalizers, ['foregroundDeletion']);
    assert.equal((await api('GET', `${NS('gc-fg')}/configmaps/top`)).status, 200);
    await api('PATCH', `${NS('gc-fg')}/configmaps/leaf`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    await gone(`${NS('gc-fg')}/configmaps/leaf`);
    await gone(`${NS('gc-fg')}/configmaps/mid`);
    await gone(`${NS('gc-fg')}/configmaps/top`);
  });

  test('an owner without dependents is gone right after the garbage collector sees it', async () => {
    await create(`${NS('gc-fg')}/configmaps`, CM('lonely'));
    const del = await api('DELETE', `${NS('gc-fg')}/configmaps/lonely?propagationPolicy=Foreground`);
    assert.equal(del.status, 200);
    await gone(`${NS('gc-fg')}/configmaps/lonely`);
  });

  test('a second DELETE with Orphan turns a foreground deletion into orphaning', async () => {
    const owner = await create(`${NS('gc-fg')}/configmaps`, CM('switch'));
    await create(`${NS('gc-fg')}/configmaps`, owned('switch-dep', [ref(owner, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    assert.equal((await api('DELETE', `${NS('gc-fg')}/configmaps/switch?propagationPolicy=Foreground`)).status, 200);
    await eventually('dependent being deleted', async () => (await api('GET', `${NS('gc-fg')}/configmaps/switch-dep`)).json.metadata.deletionTimestamp);
    const again = await api('DELETE', `${NS('gc-fg')}/configmaps/switch`, { propagationPolicy: 'Orphan' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.json.metadata.finalizers, ['orphan']);
    await gone(`${NS('gc-fg')}/configmaps/switch`);
    const dep = await api('GET', `${NS('gc-fg')}/configmaps/switch-dep`);
    assert.equal(dep.json.metadata.ownerReferences, undefined);
    await api('PATCH', `${NS('gc-fg')}/configmaps/switch-dep`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    await gone(`${NS('gc-fg')}/configmaps/switch-dep`);
  });

  test('a second DELETE with Background of an object held only by foregroundDeletion deletes it', async () => {
    const owner = await create(`${NS('gc-fg')}/configmaps`, CM('bg-again'));
    await create(`${NS('gc-fg')}/configmaps`, owned('bg-again-dep', [ref(owner, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] }));
    assert.equal((await api('DELETE', `${NS('gc-fg')}/configmaps/bg-again?propagationPolicy=Foreground`)).status, 200);
    const again = await api('DELETE', `${NS('gc-fg')}/configmaps/bg-again?propagationPolicy=Background`);
    assert.equal(again.status, 200);
    assert.equal(again.json.kind, 'Status');
    assert.equal((await api('GET', `${NS('gc-fg')}/configmaps/bg-again`)).status, 404);
    // Its dependent, already being deleted, stays until its own finalizer goes.
    await api('PATCH', `${NS('gc-fg')}/configmaps/bg-again-dep`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    await gone(`${NS('gc-fg')}/configmaps/bg-again-dep`);
  });
});

describe('orphan', () => {
  before(() => ns('gc-or'));

  test('dependents stay and lose their ownerReferences to the owner (propagationPolicy=Orphan)', async () => {
    const owner = await create(`${NS('gc-or')}/configmaps`, CM('owner'));
    const other = await create(`${NS('gc-or')}/configmaps`, CM('other'));
    await create(`${NS('gc-or')}/configmaps`, owned('o1', [ref(owner, { controller: true, blockOwnerDeletion: true })]));
    await create(`${NS('gc-or')}/configmaps`, owned('o2', [ref(owner), ref(other)]));
    const del = await api('DELETE', `${NS('gc-or')}/configmaps/owner`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Orphan' });
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.metadata.finalizers, ['orphan']);
    await gone(`${NS('gc-or')}/configmaps/owner`);
    const o1 = await api('GET', `${NS('gc-or')}/configmaps/o1`);
    assert.equal(o1.status, 200);
    assert.equal(o1.json.metadata.ownerReferences, undefined);
    const o2 = await api('GET', `${NS('gc-or')}/configmaps/o2`);
    assert.deepEqual(o2.json.metadata.ownerReferences, [ref(other)]);
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(300);
    assert.equal((await api('GET', `${NS('gc-or')}/configmaps/o1`)).status, 200, 'orphans are not collected later');
  });

  test('deprecated orphanDependents: true orphans; with propagationPolicy it is 422', async () => {
    const owner = await create(`${NS('gc-or')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'legacy' } });
    await create(`${NS('gc-or')}/configmaps`, owned('legacy-dep', [ref(owner)]));
    const both: Res = await api('DELETE', `${NS('gc-or')}/secrets/legacy`, { orphanDependents: true, propagationPolicy: 'Orphan' });
    assert.equal(both.status, 422);
    assert.equal(both.json.reason, 'Invalid');
    assert.match(both.json.message, /orphanDependents and deletionPropagation cannot be both set/);
    const del = await api('DELETE', `${NS('gc-or')}/secrets/legacy`, { orphanDependents: true });
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.metadata.finalizers, ['orphan']);
    await gone(`${NS('gc-or')}/secrets/legacy`);
    const dep = await api('GET', `${NS('gc-or')}/configmaps/legacy-dep`);
    assert.equal(dep.status, 200);
    assert.equal(dep.json.metadata.ownerReferences, undefined);
  });

  test('orphanDependents as a query parameter; =false on an object that stays answers 202 Accepted', async () => {
    const owner = await create(`${NS('gc-or')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'legacy-q' } });
    await create(`${NS('gc-or')}/configmaps`, owned('legacy-q-dep', [ref(owner)]));
    const del = await api('DELETE', `${NS('gc-or')}/secrets/legacy-q?orphanDependents=true`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.metadata.finalizers, ['orphan']);
    await gone(`${NS('gc-or')}/secrets/legacy-q`);
    assert.equal((await api('GET', `${NS('gc-or')}/configmaps/legacy-q-dep`)).status, 200);
    // kube's boolean query parameters: only 0/false (any case) are false.
    const yes = await create(`${NS('gc-or')}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'legacy-yes' } });
    await create(`${NS('gc-or')}/configmaps`, owned('legacy-yes-dep', [ref(yes)]));
    const delYes = await api('DELETE', `${NS('gc-or')}/secrets/legacy-yes?orphanDependents=yes`);
    assert.equal(delYes.status, 200);
    assert.deepEqual(delYes.json.metadata.finalizers, ['orphan']);
    await create(`${NS('gc-or')}/configmaps`, { ...CM('held'), metadata: { name: 'held', finalizers: ['example.com/hold'] } });
    const accepted = await api('DELETE', `${NS('gc-or')}/configmaps/held?orphanDependents=FALSE`);
    assert.equal(accepted.status, 202);
    assert.ok(accepted.json.metadata.deletionTimestamp);
  });

  test('dryRun sets nothing', async () => {
    await create(`${NS('gc-or')}/configmaps`, CM('dry'));
    const del = await api('DELETE', `${NS('gc-or')}/configmaps/dry?dryRun=All&propagationPolicy=Orphan`);
    assert.equal(del.status, 200);
    const r = await api('GET', `${NS('gc-or')}/configmaps/dry`);
    assert.equal(r.json.metadata.finalizers, undefined);
    assert.equal(r.json.metadata.deletionTimestamp, undefined);
  });
});
