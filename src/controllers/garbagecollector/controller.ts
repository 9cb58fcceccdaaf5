/**
 * The garbage collector (kube-controller-manager's, k8s.io/kubernetes/pkg/controller/
 * garbagecollector; https://kubernetes.io/docs/concepts/architecture/garbage-collection/),
 * per logical cluster: owners and dependents live in the same logical cluster; a namespaced
 * owner is looked up in its dependent's namespace; a cluster-scoped owner may own namespaced
 * dependents; a cluster-scoped dependent naming a namespaced owner is invalid and ignored.
 *
 * One reconcile per object key (`<group>/<resource>/<cluster>/[<ns>/]<name>`):
 * - being deleted with `orphan`: remove the ownerReferences to it from every dependent, then
 *   the finalizer (kube's `attemptToOrphanWorker`);
 * - being deleted with `foregroundDeletion`: once no dependent blocks it (ownerReference with
 *   `blockOwnerDeletion: true`) remove the finalizer, else make sure its dependents are being
 *   deleted (kube's `processDeletingDependentsItem`);
 * - otherwise, with ownerReferences, classify them (kube's `attemptToDeleteItem`): with a
 *   present owner ("solid"), only the references to absent owners and to owners deleting in the
 *   foreground are removed; when no owner is solid and one waits for its dependents while this
 *   object has dependents of its own, it is deleted in the foreground; else it is deleted with
 *   the policy its finalizers ask for (Orphan, Foreground, or Background).
 */
import { StatusError, isStatus } from '../../apimachinery/errors.js';
import { apiVersionOf, parseApiVersion, type KubeObject, type OwnerReference } from '../../apimachinery/meta.js';
import type { ClusterAPIs } from '../../apiextensions/registry.js';
import { CRD_GR } from '../../apiextensions/customresources.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { WatchCache } from '../../storage/watchcache.js';
import { Controller, type ControllerMetrics, type QueueThread, type ReconcileResult } from '../runtime.js';
import { DependentIndex, FINALIZER_FOREGROUND, FINALIZER_ORPHAN, objectKeyFor, parseObjectKey, uidOfJson, type OwnersSettled } from './index.js';

/** Propagation policy of a delete the garbage collector issues. */
export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

/** Where the objects of an owner's kind live in one logical cluster. */
export interface OwnerKind {
  /** Storage group/resource in the watch cache, e.g. `core/configmaps`, `<group>/<plural>`. */
  groupResource: string;
  namespaced: boolean;
}

/** Dependencies of the reconciler, as plain functions (tested with closures). */
export interface GarbageCollectorDeps {
  /** The object as the watch cache has it (may trail the newest write), or undefined. */
  get(key: string): KubeObject | undefined;
  /** A consistent read, to confirm an owner is really gone before deleting its dependent. */
  getLive(key: string): Promise<KubeObject | undefined>;
  /** The kind of an ownerReference in a logical cluster; undefined when the cluster serves no such kind. */
  resolveKind(cluster: string, apiVersion: string, kind: string): OwnerKind | undefined;
  /** Object keys of the dependents naming `uid` as owner in `cluster` (they may be gone by now). */
  dependentsOf(cluster: string, uid: string): readonly string[];
  /**
   * Read-modify-write of an object whose uid is `uid`: `fn` changes it and returns whether it
   * changed anything. Resolves false when the object is gone (or replaced by one with another
   * uid); conflicts are retried with a fresh read; other failures throw.
   */
  mutate(key: string, uid: string, fn: (obj: KubeObject) => boolean): Promise<boolean>;
  /** Deletes an object with a uid precondition; an object already gone or replaced is not an error. */
  delete(key: string, uid: string, policy: PropagationPolicy): Promise<void>;
  /** Schedules a reconcile of another object. */
  enqueue(key: string): void;
}

function isDeletingDependents(o: KubeObject): boolean {
  return Boolean(o.metadata.deletionTimestamp) && (o.metadata.finalizers ?? []).includes(FINALIZER_FOREGROUND);
}

function removeFinalizer(name: string): (o: KubeObject) => boolean {
  return (o) => {
    const f = o.metadata.finalizers ?? [];
    if (!f.includes(name)) return false;
    o.metadata.finalizers = f.filter((x) => x !== name);
    return true;
  };
}

/**
 * The owner key an ownerReference points at from a dependent, or `invalid` for a cluster-scoped
 * dependent naming a namespaced kind, or undefined when the kind is not served.
 */
function ownerKeyOf(deps: Pick<GarbageCollectorDeps, 'resolveKind'>, cluster: string, namespace: string, ref: OwnerReference): string | 'invalid' | undefined {
  const kind = deps.resolveKind(cluster, ref.apiVersion, ref.kind);
  if (!kind) return undefined;
  if (kind.namespaced && !namespace) return 'invalid';
  return objectKeyFor(kind.groupResource, cluster, kind.namespaced ? namespace : '', ref.name);
}

/** Thrown for an ownerReference whose kind is not served: retried with backoff, as kube does. */
export class UnknownOwnerKindError extends Error {}

/** The reconciler of the garbage collector. Throws (retry with backoff) on write failures. */
export function garbageCollectorReconciler(deps: GarbageCollectorDeps) {
  /** Present dependents of an owner that still name it, with their reference to it. */
  const dependents = (cluster: string, uid: string): { key: string; obj: KubeObject; ref: OwnerReference }[] => {
    const out: { key: string; obj: KubeObject; ref: OwnerReference }[] = [];
    for (const key of deps.dependentsOf(cluster, uid)) {
      const obj = deps.get(key);
      const ref = obj?.metadata.ownerReferences?.find((r) => r.uid === uid);
      if (obj && ref) out.push({ key, obj, ref });
    }
    return out;
  };

  const orphan = async (key: string, owner: KubeObject): Promise<void> => {
    const { cluster } = parseObjectKey(key);
    const uid = owner.metadata.uid!;
    for (const d of dependents(cluster, uid)) {
      await deps.mutate(d.key, d.obj.metadata.uid!, (o) => {
        const refs = o.metadata.ownerReferences ?? [];
        const kept = refs.filter((r) => r.uid !== uid);
        if (kept.length === refs.length) return false;
        if (kept.length) o.metadata.ownerReferences = kept; else delete o.metadata.ownerReferences;
        return true;
      });
    }
    await deps.mutate(key, uid, removeFinalizer(FINALIZER_ORPHAN));
  };

  const deletingDependents = async (key: string, owner: KubeObject): Promise<void> => {
    const { cluster } = parseObjectKey(key);
    const deps_ = dependents(cluster, owner.metadata.uid!);
    if (!deps_.some((d) => d.ref.blockOwnerDeletion === true)) {
      await deps.mutate(key, owner.metadata.uid!, removeFinalizer(FINALIZER_FOREGROUND));
      return;
    }
    // Dependents already on their way out are followed through their own events.
    for (const d of deps_) if (!d.obj.metadata.deletionTimestamp) deps.enqueue(d.key);
  };

  const attemptToDelete = async (key: string, obj: KubeObject): Promise<void> => {
    const { cluster, namespace } = parseObjectKey(key);
    const m = obj.metadata;
    const refs = m.ownerReferences ?? [];
    if (!refs.length) return;
    const solid: OwnerReference[] = [];
    const dangling: OwnerReference[] = [];
    const waiting: OwnerReference[] = [];
    for (const ref of refs) {
      const ownerKey = ownerKeyOf(deps, cluster, namespace, ref);
      if (ownerKey === undefined) throw new UnknownOwnerKindError(`ownerReference of ${key}: ${ref.kind}.${ref.apiVersion} is not served in logical cluster ${cluster}`);
      // kube: a cluster-scoped object naming a namespaced owner is an error no retry resolves.
      if (ownerKey === 'invalid') return;
      let owner = deps.get(ownerKey);
      if (!owner || owner.metadata.uid !== ref.uid) {
        // The cache may trail: only a consistent read makes an owner absent.
        owner = await deps.getLive(ownerKey);
      }
      if (!owner || owner.metadata.uid !== ref.uid) dangling.push(ref);
      else if (isDeletingDependents(owner)) waiting.push(ref);
      else solid.push(ref);
    }
    if (solid.length) {
      if (!dangling.length && !waiting.length) return;
      // References to owners waiting for their dependents must go too, or those owners wait forever.
      const drop = new Set([...dangling, ...waiting].map((r) => r.uid));
      await deps.mutate(key, m.uid!, (o) => {
        const cur = o.metadata.ownerReferences ?? [];
        const kept = cur.filter((r) => !drop.has(r.uid));
        if (kept.length === cur.length) return false;
        if (kept.length) o.metadata.ownerReferences = kept; else delete o.metadata.ownerReferences;
        return true;
      });
      return;
    }
    const own = waiting.length ? dependents(cluster, m.uid!) : [];
    if (own.length) {
      if (own.some((d) => isDeletingDependents(d.obj))) {
        // A dependent of this object waits for its own dependents as an owner of it does: break a
        // possible cycle by making this object's references non-blocking (kube does the same).
        await deps.mutate(key, m.uid!, (o) => {
          let changed = false;
          for (const r of o.metadata.ownerReferences ?? []) if (r.blockOwnerDeletion === true) { r.blockOwnerDeletion = false; changed = true; }
          return changed;
        });
      }
      await deps.delete(key, m.uid!, 'Foreground');
      return;
    }
    const f = m.finalizers ?? [];
    await deps.delete(key, m.uid!, f.includes(FINALIZER_ORPHAN) ? 'Orphan' : f.includes(FINALIZER_FOREGROUND) ? 'Foreground' : 'Background');
  };

  return async (key: string): Promise<ReconcileResult | void> => {
    const obj = deps.get(key);
    if (!obj) return;
    const m = obj.metadata;
    if (m.deletionTimestamp) {
      const f = m.finalizers ?? [];
      if (f.includes(FINALIZER_ORPHAN)) return orphan(key, obj);
      if (f.includes(FINALIZER_FOREGROUND)) return deletingDependents(key, obj);
      // Being deleted for another reason: a one-way trip; its dependents follow its DELETED event.
      return;
    }
    return attemptToDelete(key, obj);
  };
}

/**
 * The in-process filter in front of the queue (`OwnersSettled`): true when every owner of a
 * dependent is in the watch cache with the referenced uid and is not waiting for its dependents
 * (then kube's graph builder has nothing to do either). An unserved owner kind or a dangling
 * reference is not settled; an invalid one (cluster-scoped dependent, namespaced owner) is.
 */
export function ownersSettledFrom(resolveKind: GarbageCollectorDeps['resolveKind'], json: (key: string) => string | undefined): OwnersSettled {
  return ({ cluster, namespace }, refs) => {
    for (const ref of refs) {
      const ownerKey = ownerKeyOf({ resolveKind }, cluster, namespace, ref);
      if (ownerKey === undefined) return false;
      if (ownerKey === 'invalid') continue;
      const j = json(ownerKey);
      if (j === undefined || uidOfJson(j) !== ref.uid) return false;
      if (j.includes('"deletionTimestamp"') && j.includes(`"${FINALIZER_FOREGROUND}"`)) return false;
    }
    return true;
  };
}

/** What `startGarbageCollector` needs from the shard. */
export interface GarbageCollectorOptions {
  cache: WatchCache;
  /** The APIs of a logical cluster (`APIRegistry.forCluster`). */
  apis: (cluster: string) => ClusterAPIs;
  /** Identity the controller acts as. */
  scope: (cluster: string, namespace?: string) => RequestScope;
  /** BullMQ key prefix and queue thread (see `ControllerOptions`). */
  prefix: string;
  thread: QueueThread;
  concurrency?: number;
  /** Prometheus metrics of the process's controllers (see `ControllerOptions.metrics`). */
  metrics?: ControllerMetrics;
  onError?: (key: string, err: unknown) => void;
}

/** A running garbage collector. */
export interface GarbageCollector {
  readonly index: DependentIndex;
  controller: Controller;
  close(): Promise<void>;
}

/** Per API set (shared built-in set, or one per cluster with CRDs): kind and store lookups. */
interface KindTable {
  kinds: Map<string, OwnerKind>;
  stores: Map<string, Store>;
}

/**
 * Starts the garbage collector on the shard's watch cache: builds the dependent index from the
 * cache (every stored built-in resource and every custom resource of clusters with CRDs),
 * subscribes to the cache, enqueues what needs work, and runs the reconciler on the BullMQ
 * runtime. The index is rebuilt after a cache resynchronisation.
 */
export function startGarbageCollector(opts: GarbageCollectorOptions): GarbageCollector {
  const { cache } = opts;
  const tables = new WeakMap<ClusterAPIs, KindTable>();
  const tableOf = (cluster: string): KindTable => {
    const apis = opts.apis(cluster);
    let t = tables.get(apis);
    if (t) return t;
    t = { kinds: new Map(), stores: new Map() };
    for (const d of apis.descriptors) {
      if (d.virtual) continue;
      const s = apis.store(d.group, d.version, d.plural);
      if (!s) continue;
      const kind = { groupResource: s.groupResource, namespaced: d.namespaced };
      t.kinds.set(`${apiVersionOf(d.group, d.version)}|${d.kind}`, kind);
      if (!t.kinds.has(`${d.group}|${d.kind}`)) t.kinds.set(`${d.group}|${d.kind}`, kind);
      // Writes go through the store that serves the storage location natively (no conversion).
      const cur = t.stores.get(s.groupResource);
      if (!cur || (cur.desc.storage && !s.desc.storage)) t.stores.set(s.groupResource, s);
    }
    tables.set(apis, t);
    return t;
  };
  const resolveKind = (cluster: string, apiVersion: string, kind: string): OwnerKind | undefined => {
    const t = tableOf(cluster);
    // A version the cluster does not serve still names the kind: the object is the same.
    return t.kinds.get(`${apiVersion}|${kind}`) ?? t.kinds.get(`${parseApiVersion(apiVersion).group}|${kind}`);
  };
  const target = (key: string): { store: Store; scope: RequestScope; name: string } => {
    const p = parseObjectKey(key);
    const store = tableOf(p.cluster).stores.get(p.groupResource);
    if (!store) throw new Error(`no store serves ${p.groupResource} in logical cluster ${p.cluster}`);
    return { store, scope: { ...opts.scope(p.cluster, p.namespace || undefined), fieldManager: 'garbage-collector' }, name: p.name };
  };
  const entryJson = (key: string): string | undefined => {
    const p = parseObjectKey(key);
    return cache.getEntry(p.groupResource, p.cluster, p.namespace, p.name)?.json;
  };

  const index = new DependentIndex(ownersSettledFrom(resolveKind, entryJson));
  let controller: Controller | undefined;
  const enqueue = (key: string) => { controller?.enqueue(key).catch(() => undefined); };

  const reconcile = garbageCollectorReconciler({
    get: (key) => {
      const j = entryJson(key);
      return j === undefined ? undefined : JSON.parse(j) as KubeObject;
    },
    getLive: async (key) => {
      const { store, scope, name } = target(key);
      try { return JSON.parse(await store.get(scope, name)) as KubeObject; } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    },
    resolveKind,
    dependentsOf: (cluster, uid) => index.dependentsOf(cluster, uid),
    mutate: async (key, uid, fn) => {
      const { store, scope, name } = target(key);
      for (let attempt = 0; ; attempt++) {
        let obj: KubeObject;
        try { obj = JSON.parse(await store.get(scope, name)) as KubeObject; } catch (err) {
          if (isStatus(err, 404)) return false;
          throw err;
        }
        if (obj.metadata.uid !== uid) return false;
        if (!fn(obj)) return true;
        try {
          await store.update(scope, name, obj);
          return true;
        } catch (err) {
          if (isStatus(err, 404)) return false;
          if (err instanceof StatusError && err.code === 409 && attempt < 5) continue;
          throw err;
        }
      }
    },
    delete: async (key, uid, policy) => {
      const { store, scope, name } = target(key);
      try {
        await store.delete(scope, name, { preconditions: { uid }, propagationPolicy: policy });
      } catch (err) {
        if (err instanceof StatusError && (err.code === 404 || (err.code === 409 && err.message.includes('Precondition failed: UID')))) return;
        throw err;
      }
    },
    enqueue,
  });

  /** Every stored resource that may hold objects: built-ins, and custom resources of clusters with CRDs. */
  const groupResources = (): Set<string> => {
    const out = new Set<string>();
    for (const s of opts.apis('*').storedStores()) out.add(s.groupResource);
    for (const c of cache.clustersOf(CRD_GR)) for (const s of opts.apis(c).storedStores()) out.add(s.groupResource);
    return out;
  };
  const build = (): string[] => {
    index.clear();
    const keys: string[] = [];
    for (const gr of groupResources()) {
      for (const entry of cache.list(gr, '*')) {
        // Only objects taking part in ownership can need work at start.
        if (!entry.json.includes('"ownerReferences"') && !entry.json.includes('"deletionTimestamp"')) continue;
        keys.push(...index.observe({ type: 'ADDED', entry }));
      }
    }
    return keys;
  };

  controller = new Controller({
    name: 'garbagecollector', prefix: opts.prefix, thread: opts.thread,
    concurrency: opts.concurrency ?? 8, metrics: opts.metrics, reconcile, onError: opts.onError,
  });
  // Build and subscribe in one turn of the event loop: no event falls between them.
  const initial = build();
  // Objects of a logical cluster this shard does not hold yet — one being migrated in, its
  // LogicalCluster object copied last (src/shards/migration.ts) — are not collected: their owners
  // may simply not be copied yet.
  const held = (key: string) => cache.getEntry('core.kcp.io/logicalclusters', parseObjectKey(key).cluster, '', 'cluster') !== undefined;
  const unsubscribe = cache.subscribe((ev) => {
    const keys = ev ? index.observe(ev) : build();
    for (const k of keys) if (held(k)) enqueue(k);
  });
  for (const k of initial) enqueue(k);

  const ctrl = controller;
  return {
    index, controller: ctrl,
    async close() { unsubscribe(); await ctrl.close(); },
  };
}
