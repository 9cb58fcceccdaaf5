/**
 * Garbage collector decisions (kube's attemptToDeleteItem, processDeletingDependentsItem,
 * attemptToOrphanWorker) on an in-memory world, the dependent index, and the finalizers a
 * delete sets for each propagation policy (kube's deletionFinalizersForGarbageCollection).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject, OwnerReference } from '../../src/apimachinery/meta.js';
import { garbageCollectorReconciler, ownersSettledFrom, UnknownOwnerKindError, type GarbageCollectorDeps, type OwnerKind, type PropagationPolicy } from '../../src/controllers/garbagecollector/controller.js';
import { DependentIndex, objectKeyFor, uidOfJson } from '../../src/controllers/garbagecollector/index.js';
import { gcFinalizersForDelete } from '../../src/registry/store.js';
import type { CacheEntry, EventType } from '../../src/storage/watchcache.js';
import { parseObjectKey } from '../../src/storage/keys.js';

const KINDS: Record<string, OwnerKind> = {
  'v1|ConfigMap': { groupResource: 'core/configmaps', namespaced: true },
  'v1|Secret': { groupResource: 'core/secrets', namespaced: true },
  'v1|Namespace': { groupResource: 'core/namespaces', namespaced: false },
  'rbac.authorization.k8s.io/v1|ClusterRole': { groupResource: 'rbac.authorization.k8s.io/clusterroles', namespaced: false },
};
const KIND_OF: Record<string, [string, string]> = {
  'core/configmaps': ['v1', 'ConfigMap'], 'core/secrets': ['v1', 'Secret'], 'core/namespaces': ['v1', 'Namespace'],
  'rbac.authorization.k8s.io/clusterroles': ['rbac.authorization.k8s.io/v1', 'ClusterRole'],
};

/** A tiny world of objects with the garbage collector's dependencies as closures. */
class World {
  readonly objects = new Map<string, KubeObject>();
  readonly deleted: { key: string; policy: PropagationPolicy }[] = [];
  readonly enqueued: string[] = [];
  readonly mutated: string[] = [];
  private uid = 0;

  add(gr: string, ns: string, name: string, meta: Partial<KubeObject['metadata']> = {}, cluster = 'c1'): { key: string; obj: KubeObject; ref: (extra?: Partial<OwnerReference>) => OwnerReference } {
    const key = objectKeyFor(gr, cluster, ns, name);
    const [apiVersion, kind] = KIND_OF[gr]!;
    const obj: KubeObject = { apiVersion, kind, metadata: { name, ...(ns ? { namespace: ns } : {}), uid: `uid-${++this.uid}`, resourceVersion: '1', ...meta } };
    this.objects.set(key, obj);
    return { key, obj, ref: (extra = {}) => ({ apiVersion, kind, name, uid: obj.metadata.uid!, ...extra }) };
  }

  /** Dependents derived from the objects (what the index holds). */
  dependentsOf(cluster: string, uid: string): string[] {
    return [...this.objects.entries()].filter(([k, o]) => parseObjectKey(k).cluster === cluster && o.metadata.ownerReferences?.some((r) => r.uid === uid)).map(([k]) => k);
  }

  deps(): GarbageCollectorDeps {
    return {
      get: (key) => { const o = this.objects.get(key); return o && structuredClone(o); },
      getLive: async (key) => { const o = this.objects.get(key); return o && structuredClone(o); },
      resolveKind: (_c, apiVersion, kind) => KINDS[`${apiVersion}|${kind}`],
      dependentsOf: (cluster, uid) => this.dependentsOf(cluster, uid),
      mutate: async (key, uid, fn) => {
        const o = this.objects.get(key);
        if (!o || o.metadata.uid !== uid) return false;
        const copy = structuredClone(o);
        if (!fn(copy)) return true;
        this.mutated.push(key);
        if (copy.metadata.deletionTimestamp && !copy.metadata.finalizers?.length) this.objects.delete(key);
        else this.objects.set(key, copy);
        return true;
      },
      delete: async (key, uid, policy) => {
        const o = this.objects.get(key);
        if (!o || o.metadata.uid !== uid) return;
        this.deleted.push({ key, policy });
        this.objects.delete(key);
      },
      enqueue: (key) => { this.enqueued.push(key); },
    };
  }
}

describe('attemptToDelete: a dependent and its owners', () => {
  test('all owners absent: deleted in the background', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] });
    const r = garbageCollectorReconciler(w.deps());
    await r(dep.key);
    assert.deepEqual(w.deleted, [], 'a present owner keeps its dependent');
    w.objects.delete(owner.key);
    await r(dep.key);
    assert.deepEqual(w.deleted, [{ key: dep.key, policy: 'Background' }]);
  });

  test('an owner with the same name but another uid is absent', async () => {
    const w = new World();
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: 'old-uid' }] });
    w.add('core/secrets', 'ns', 's');
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, [{ key: dep.key, policy: 'Background' }]);
  });

  test('a namespaced owner is looked up in the dependent\'s namespace', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'other', 'owner');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted.map((d) => d.key), [dep.key]);
  });

  test('a cluster-scoped owner owns namespaced dependents', async () => {
    const w = new World();
    const owner = w.add('core/namespaces', '', 'owner-ns');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] });
    const r = garbageCollectorReconciler(w.deps());
    await r(dep.key);
    assert.deepEqual(w.deleted, []);
    w.objects.delete(owner.key);
    await r(dep.key);
    assert.deepEqual(w.deleted.map((d) => d.key), [dep.key]);
  });

  test('a cluster-scoped dependent naming a namespaced owner is left alone', async () => {
    const w = new World();
    const dep = w.add('rbac.authorization.k8s.io/clusterroles', '', 'cr', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'gone', uid: 'x' }] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, []);
    assert.deepEqual(w.mutated, []);
  });

  test('owners are per logical cluster', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner', {}, 'c1');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] }, 'c2');
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted.map((d) => d.key), [dep.key], 'the same name and uid in another logical cluster is not the owner');
  });

  test('with a remaining owner, only the dangling references are removed', async () => {
    const w = new World();
    const a = w.add('core/configmaps', 'ns', 'a');
    const b = w.add('core/secrets', 'ns', 'b');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [a.ref(), b.ref()] });
    w.objects.delete(a.key);
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, []);
    assert.deepEqual(w.objects.get(dep.key)!.metadata.ownerReferences, [b.ref()]);
  });

  test('with a remaining owner, references to owners deleting in the foreground are removed', async () => {
    const w = new World();
    const a = w.add('core/configmaps', 'ns', 'a', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    const b = w.add('core/secrets', 'ns', 'b');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [a.ref({ blockOwnerDeletion: true }), b.ref()] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, []);
    assert.deepEqual(w.objects.get(dep.key)!.metadata.ownerReferences, [b.ref()]);
  });

  test('owner waiting for dependents, dependent without dependents: deleted in the background', async () => {
    const w = new World();
    const a = w.add('core/configmaps', 'ns', 'a', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [a.ref({ blockOwnerDeletion: true })] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, [{ key: dep.key, policy: 'Background' }]);
  });

  test('owner waiting for dependents, dependent with dependents: deleted in the foreground', async () => {
    const w = new World();
    const a = w.add('core/configmaps', 'ns', 'a', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [a.ref({ blockOwnerDeletion: true })] });
    w.add('core/configmaps', 'ns', 'grandchild', { ownerReferences: [dep.ref({ blockOwnerDeletion: true })] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, [{ key: dep.key, policy: 'Foreground' }]);
    assert.deepEqual(w.mutated, [], 'no cycle: references stay blocking');
  });

  test('a dependent whose own dependent also waits gets non-blocking references first (cycle breaking)', async () => {
    const w = new World();
    const a = w.add('core/configmaps', 'ns', 'a', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [a.ref({ blockOwnerDeletion: true })] });
    w.add('core/configmaps', 'ns', 'child', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'], ownerReferences: [dep.ref({ blockOwnerDeletion: true })] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.mutated, [dep.key]);
    assert.deepEqual(w.deleted, [{ key: dep.key, policy: 'Foreground' }]);
  });

  test('a dependent\'s own orphan or foreground finalizer decides the policy', async () => {
    const w = new World();
    const d1 = w.add('core/configmaps', 'ns', 'd1', { finalizers: ['orphan'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'x' }] });
    const d2 = w.add('core/configmaps', 'ns', 'd2', { finalizers: ['foregroundDeletion'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'x' }] });
    const r = garbageCollectorReconciler(w.deps());
    await r(d1.key); await r(d2.key);
    assert.deepEqual(w.deleted, [{ key: d1.key, policy: 'Orphan' }, { key: d2.key, policy: 'Foreground' }]);
  });

  test('an unserved owner kind is an error (retried)', async () => {
    const w = new World();
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'x' }] });
    await assert.rejects(garbageCollectorReconciler(w.deps())(dep.key), UnknownOwnerKindError);
    assert.deepEqual(w.deleted, []);
  });

  test('an object being deleted without garbage-collector finalizers is left alone', async () => {
    const w = new World();
    const dep = w.add('core/configmaps', 'ns', 'dep', { deletionTimestamp: 'now', finalizers: ['example.com/x'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'x' }] });
    await garbageCollectorReconciler(w.deps())(dep.key);
    assert.deepEqual(w.deleted, []);
    assert.deepEqual(w.mutated, []);
  });

  test('a cache that trails is confirmed by a live read before deleting', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner');
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] });
    const deps = w.deps();
    const r = garbageCollectorReconciler({ ...deps, get: (k) => (k === owner.key ? undefined : deps.get(k)) });
    await r(dep.key);
    assert.deepEqual(w.deleted, []);
  });
});

describe('owners being deleted', () => {
  test('foreground: waits while blocking dependents remain, enqueues them, then removes the finalizer', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    const blocking = w.add('core/configmaps', 'ns', 'b', { ownerReferences: [owner.ref({ blockOwnerDeletion: true })] });
    const other = w.add('core/configmaps', 'ns', 'o', { ownerReferences: [owner.ref()] });
    const r = garbageCollectorReconciler(w.deps());
    await r(owner.key);
    assert.ok(w.objects.has(owner.key));
    assert.deepEqual(w.enqueued.sort(), [blocking.key, other.key].sort());
    w.objects.delete(blocking.key);
    await r(owner.key);
    assert.equal(w.objects.has(owner.key), false, 'no blocking dependent left: the finalizer goes and with it the owner');
  });

  test('foreground: dependents already being deleted are not enqueued again', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner', { deletionTimestamp: 'now', finalizers: ['foregroundDeletion'] });
    w.add('core/configmaps', 'ns', 'b', { deletionTimestamp: 'now', finalizers: ['example.com/hold'], ownerReferences: [owner.ref({ blockOwnerDeletion: true })] });
    await garbageCollectorReconciler(w.deps())(owner.key);
    assert.deepEqual(w.enqueued, []);
    assert.ok(w.objects.has(owner.key));
  });

  test('foreground: other finalizers keep the owner after its own is removed', async () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner', { deletionTimestamp: 'now', finalizers: ['example.com/keep', 'foregroundDeletion'] });
    await garbageCollectorReconciler(w.deps())(owner.key);
    assert.deepEqual(w.objects.get(owner.key)!.metadata.finalizers, ['example.com/keep']);
  });

  test('orphan: references to the owner are removed from its dependents, then the finalizer', async () => {
    const w = new World();
    const owner = w.add('core/secrets', 'ns', 'owner', { deletionTimestamp: 'now', finalizers: ['orphan'] });
    const other = w.add('core/configmaps', 'ns', 'other');
    const d1 = w.add('core/configmaps', 'ns', 'd1', { ownerReferences: [owner.ref({ blockOwnerDeletion: true })] });
    const d2 = w.add('core/configmaps', 'ns', 'd2', { ownerReferences: [owner.ref(), other.ref()] });
    await garbageCollectorReconciler(w.deps())(owner.key);
    assert.equal(w.objects.get(d1.key)!.metadata.ownerReferences, undefined);
    assert.deepEqual(w.objects.get(d2.key)!.metadata.ownerReferences, [other.ref()]);
    assert.equal(w.objects.has(owner.key), false);
    assert.deepEqual(w.deleted, []);
  });
});

describe('dependent index', () => {
  let rv = 0;
  const entry = (key: string, obj: KubeObject): CacheEntry => {
    const p = parseObjectKey(key);
    const { name, namespace, uid, ...rest } = obj.metadata;
    const json = JSON.stringify({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, namespace, uid, resourceVersion: String(++rv), ...rest } });
    return { key, ...p, rv, json, labels: undefined };
  };
  const ev = (type: EventType, key: string, obj: KubeObject) => ({ type, entry: entry(key, obj) });

  test('uid of stored JSON without parsing', () => {
    assert.equal(uidOfJson('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u-1","resourceVersion":"3","ownerReferences":[{"uid":"u-2"}]}}'), 'u-1');
    assert.equal(uidOfJson('{}'), '');
  });

  test('indexes only owned objects; enqueues dependents of a deleted owner and dependents with absent owners', () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner');
    const present = (key: string) => { const o = w.objects.get(key); return o && entry(key, o).json; };
    const idx = new DependentIndex(ownersSettledFrom((_c, a, k) => KINDS[`${a}|${k}`], present));
    assert.deepEqual(idx.observe(ev('ADDED', owner.key, owner.obj)), []);
    assert.equal(idx.dependentCount, 0);
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref()] });
    assert.deepEqual(idx.observe(ev('ADDED', dep.key, dep.obj)), [], 'owner present: nothing to do');
    assert.deepEqual(idx.dependentsOf('c1', owner.obj.metadata.uid!), [dep.key]);
    assert.deepEqual(idx.dependentsOf('c2', owner.obj.metadata.uid!), []);
    const orphanDep = w.add('core/configmaps', 'ns', 'lost', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'nobody', uid: 'nope' }] });
    assert.deepEqual(idx.observe(ev('ADDED', orphanDep.key, orphanDep.obj)), [orphanDep.key], 'owner absent: check it');
    w.objects.delete(owner.key);
    assert.deepEqual(idx.observe(ev('DELETED', owner.key, owner.obj)), [dep.key]);
    assert.deepEqual(idx.observe(ev('DELETED', dep.key, dep.obj)), []);
    assert.equal(idx.dependentCount, 1);
    assert.equal(idx.ownerCount, 1);
  });

  test('owners deleting in the foreground are woken by their dependents leaving', () => {
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner');
    const idx = new DependentIndex(() => true);
    const dep = w.add('core/configmaps', 'ns', 'dep', { ownerReferences: [owner.ref({ blockOwnerDeletion: true })] });
    const dep2 = w.add('core/configmaps', 'ns', 'dep2', { ownerReferences: [owner.ref({ blockOwnerDeletion: true })] });
    idx.observe(ev('ADDED', dep.key, dep.obj));
    idx.observe(ev('ADDED', dep2.key, dep2.obj));
    const deleting = structuredClone(owner.obj);
    deleting.metadata.deletionTimestamp = 'now';
    deleting.metadata.finalizers = ['foregroundDeletion'];
    assert.deepEqual(idx.observe(ev('MODIFIED', owner.key, deleting)), [owner.key]);
    assert.deepEqual(idx.observe(ev('DELETED', dep.key, dep.obj)), [owner.key]);
    // dep2 stops blocking: the owner may be done.
    const unblocked = structuredClone(dep2.obj);
    unblocked.metadata.ownerReferences = [owner.ref({ blockOwnerDeletion: false })];
    assert.deepEqual(idx.observe(ev('MODIFIED', dep2.key, unblocked)), [owner.key]);
    // An unchanged dependent does not wake anyone.
    assert.deepEqual(idx.observe(ev('MODIFIED', dep2.key, unblocked)), []);
    // The owner loses the finalizer: no longer waiting.
    assert.deepEqual(idx.observe(ev('MODIFIED', owner.key, owner.obj)), []);
    assert.deepEqual(idx.observe(ev('DELETED', dep2.key, unblocked)), []);
  });

  test('orphaning owners are enqueued', () => {
    const idx = new DependentIndex(() => true);
    const w = new World();
    const owner = w.add('core/configmaps', 'ns', 'owner', { deletionTimestamp: 'now', finalizers: ['orphan'] });
    assert.deepEqual(idx.observe(ev('MODIFIED', owner.key, owner.obj)), [owner.key]);
  });
});

describe('finalizers of a delete (propagationPolicy)', () => {
  test('policies', () => {
    assert.deepEqual(gcFinalizersForDelete(undefined, {}), { changed: false, finalizers: [] });
    assert.deepEqual(gcFinalizersForDelete(undefined, { propagationPolicy: 'Background' }), { changed: false, finalizers: [] });
    assert.deepEqual(gcFinalizersForDelete(undefined, { propagationPolicy: 'Foreground' }), { changed: true, finalizers: ['foregroundDeletion'] });
    assert.deepEqual(gcFinalizersForDelete(['a'], { propagationPolicy: 'Orphan' }), { changed: true, finalizers: ['a', 'orphan'] });
    assert.deepEqual(gcFinalizersForDelete(undefined, { orphanDependents: true }), { changed: true, finalizers: ['orphan'] });
    assert.deepEqual(gcFinalizersForDelete(['orphan'], { orphanDependents: false }), { changed: true, finalizers: [] });
  });

  test('without a policy the existing finalizer stays; a new policy replaces it', () => {
    assert.deepEqual(gcFinalizersForDelete(['orphan'], {}), { changed: false, finalizers: ['orphan'] });
    assert.deepEqual(gcFinalizersForDelete(['foregroundDeletion', 'x'], {}), { changed: false, finalizers: ['foregroundDeletion', 'x'] });
    assert.deepEqual(gcFinalizersForDelete(['orphan', 'x'], { propagationPolicy: 'Foreground' }), { changed: true, finalizers: ['x', 'foregroundDeletion'] });
    assert.deepEqual(gcFinalizersForDelete(['foregroundDeletion'], { propagationPolicy: 'Background' }), { changed: true, finalizers: [] });
  });
});
