/**
 * tmc-workload-resource-scheduler, with kcp TMC's rules (contrib-tmc pkg/reconciler/workload/resource,
 * `computePlacement`, `propagateDeletionTimestamp`): the objects of a namespace follow the
 * namespace's `state.workload.kcp.io/<key>` labels and `deletion.internal.workload.kcp.io/<key>`
 * annotations.
 * - a key on the namespace and not on the object: the object gets the label `Sync` (unless the
 *   namespace is already removing it);
 * - a key on both: the object's deletion annotation is set to the namespace's, or removed when
 *   the namespace has none;
 * - a key on the object and no longer on the namespace: while that SyncTarget's syncer still holds
 *   the object (finalizer `workload.kcp.io/syncer-<key>`, or a `finalizers.workload.kcp.io/<key>`
 *   annotation) the label stays and the deletion annotation is set, so the syncer deletes the
 *   downstream copy and then removes the label; otherwise label and annotation are removed;
 * - an object being deleted gets a deletion annotation for each of its keys (its deletionTimestamp);
 * - syncer finalizers of SyncTargets that no longer exist are removed.
 * Objects in state `Upsync` are left alone. Events (core and events.k8s.io) are not scheduled.
 *
 * kcp queues one key per object; here the key is the namespace (`<cluster>|<namespace>`), so a
 * namespace change is one job however many objects it holds. A reconcile writes at most
 * {@link RESOURCE_WRITES_PER_RECONCILE} objects ({@link PARALLEL_WRITES} at a time) and then
 * queues the namespace again, and yields
 * the event loop every {@link SCAN_SLICE} objects it compares: a tenant's namespace of 100,000
 * objects moves in many short jobs, between which every other tenant's keys run.
 */
import { isStatus } from '../apimachinery/errors.js';
import { nowRFC3339, type KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type CacheEntry, type WatchCache } from '../storage/watchcache.js';
import { NAMESPACES_GR } from '../controllers/namespace/controller.js';
import type { ReconcileResult } from '../controllers/runtime.js';
import { DELETION_TIMESTAMP_ANNOTATION_PREFIX, RESOURCE_STATE_LABEL_PREFIX, SYNC_TARGET_FINALIZERS_ANNOTATION_PREFIX, SYNCER_FINALIZER_PREFIX } from './keys.js';
import { deletingKeys, NAMESPACE_BLOCKLIST, splitClusterKey, stateKeys } from './common.js';

/** Objects one reconcile of a namespace writes at most before it queues the namespace again. */
export const RESOURCE_WRITES_PER_RECONCILE = 100;
/** Objects compared between two yields of the event loop. */
export const SCAN_SLICE = 500;
/** Resources whose objects are never scheduled (high churn, never synced). */
export const UNSCHEDULED_RESOURCES: ReadonlySet<string> = new Set(['core/events', 'events.k8s.io/events']);

/** Dependencies of the resource scheduler. */
export interface ResourceSchedulerDeps {
  cache: WatchCache;
  /** Stores of every namespaced resource of a logical cluster, one per storage location. */
  namespacedStores: (cluster: string) => Store[];
  scope: (cluster: string, namespace?: string) => RequestScope;
  /** Whether a SyncTarget of this key exists (on this shard). */
  syncTargetExists: (key: string) => boolean;
  now?: () => number;
}

/** The metadata changes that bring an object in line with its namespace; undefined when it is. */
export function computeObjectPlacement(
  obj: KubeObject, nsKeys: ReadonlySet<string>, nsDeleting: ReadonlyMap<string, string>, syncTargetExists: (key: string) => boolean, now: number,
): { labels: Record<string, string | null>; annotations: Record<string, string | null>; finalizers?: string[] } | undefined {
  const labels = obj.metadata.labels ?? {};
  for (const k in labels) if (k.startsWith(RESOURCE_STATE_LABEL_PREFIX) && labels[k] === 'Upsync') return undefined;
  const annotations = obj.metadata.annotations ?? {};
  const finalizers = obj.metadata.finalizers ?? [];
  const cur = stateKeys(labels);
  const curDeleting = deletingKeys(annotations);
  const labelPatch: Record<string, string | null> = {};
  const annotationPatch: Record<string, string | null> = {};
  const ts = nowRFC3339(new Date(now));
  if (obj.metadata.deletionTimestamp) {
    for (const k of cur) if (!annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k]) annotationPatch[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = obj.metadata.deletionTimestamp;
  } else {
    for (const k of cur) {
      if (nsKeys.has(k)) {
        const want = nsDeleting.get(k);
        if (want !== undefined && !curDeleting.has(k)) annotationPatch[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = want;
        else if (want === undefined && curDeleting.has(k)) annotationPatch[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = null;
        continue;
      }
      const held = finalizers.includes(SYNCER_FINALIZER_PREFIX + k) || Boolean(annotations[SYNC_TARGET_FINALIZERS_ANNOTATION_PREFIX + k]);
      if (held) {
        if (!curDeleting.has(k)) annotationPatch[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = ts;
      } else {
        if (curDeleting.has(k)) annotationPatch[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = null;
        labelPatch[RESOURCE_STATE_LABEL_PREFIX + k] = null;
      }
    }
    for (const k of nsKeys) if (!cur.has(k) && !nsDeleting.has(k)) labelPatch[RESOURCE_STATE_LABEL_PREFIX + k] = 'Sync';
  }
  const kept = finalizers.filter((f) => !f.startsWith(SYNCER_FINALIZER_PREFIX) || syncTargetExists(f.slice(SYNCER_FINALIZER_PREFIX.length)));
  if (!Object.keys(labelPatch).length && !Object.keys(annotationPatch).length && kept.length === finalizers.length) return undefined;
  return { labels: labelPatch, annotations: annotationPatch, ...(kept.length !== finalizers.length ? { finalizers: kept } : {}) };
}

/** Applies a computed change to a copy of the object. */
function applyChange(obj: KubeObject, change: NonNullable<ReturnType<typeof computeObjectPlacement>>): KubeObject {
  const next = structuredClone(obj);
  const set = (m: Record<string, string> | undefined, patch: Record<string, string | null>) => {
    const out = { ...(m ?? {}) };
    for (const [k, v] of Object.entries(patch)) { if (v === null) delete out[k]; else out[k] = v; }
    return Object.keys(out).length ? out : undefined;
  };
  next.metadata.labels = set(next.metadata.labels, change.labels);
  next.metadata.annotations = set(next.metadata.annotations, change.annotations);
  if (change.finalizers) next.metadata.finalizers = change.finalizers;
  return next;
}

const yieldLoop = () => new Promise<void>((r) => setImmediate(r));

/** Writes in flight at once per reconcile (each waits for its Redis write). */
export const PARALLEL_WRITES = 16;

/** Writes the changed objects, {@link PARALLEL_WRITES} at a time. */
async function writeAll(deps: ResourceSchedulerDeps, cluster: string, namespace: string, items: { store: Store; name: string; obj: KubeObject }[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const it = items[next++]!;
      try {
        await it.store.update(deps.scope(cluster, namespace), it.name, it.obj);
      } catch (err) {
        // Changed or gone meanwhile (its own event queues the namespace again), or refused by
        // validation (it cannot carry the label; the other objects still move).
        if (!isStatus(err, 404, 409, 422)) throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, items.length) }, worker));
}

/** Namespaces whose scheduling is in progress remembered with where the last job stopped (bounded). */
const MAX_CURSORS = 10_000;

/**
 * Reconciles the objects of one namespace (key `<cluster>|<namespace>`). The scan is circular: a
 * job that stopped at its write limit remembers where (resource, name), and the next job starts
 * after that point and wraps around, so moving N objects compares each about once instead of
 * N/100 times; a job that went all the way round forgets the place.
 */
export function resourceSchedulerReconciler(deps: ResourceSchedulerDeps) {
  const now = deps.now ?? Date.now;
  const cursors = new Map<string, { groupResource: string; name: string }>();
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, namespace] = splitClusterKey(key);
    if (NAMESPACE_BLOCKLIST.has(namespace)) return;
    const nsEntry = deps.cache.getEntry(NAMESPACES_GR, cluster, '', namespace);
    if (!nsEntry) { cursors.delete(key); return; } // gone: its objects go with it
    const ns = entryObject<KubeObject>(nsEntry);
    const nsKeys = stateKeys(ns.metadata.labels);
    const nsDeleting = deletingKeys(ns.metadata.annotations);
    let scanned = 0;
    const pending: { store: Store; name: string; obj: KubeObject }[] = [];
    const stores = deps.namespacedStores(cluster).filter((st) => !UNSCHEDULED_RESOURCES.has(st.groupResource));
    const cursor = cursors.get(key);
    cursors.delete(key);
    const first = Math.max(0, cursor ? stores.findIndex((st) => st.groupResource === cursor.groupResource) : 0);
    // Stores from the cursor's on, then round to it again: (store index, after name, up to name).
    const passes: { i: number; after?: string; upTo?: string }[] = [];
    for (let k = 0; k < stores.length; k++) passes.push({ i: (first + k) % stores.length, ...(k === 0 && cursor ? { after: cursor.name } : {}) });
    if (cursor && stores.length) passes.push({ i: first, upTo: cursor.name });
    for (const pass of passes) {
      const store = stores[pass.i]!;
      const entries: readonly CacheEntry[] = [...store.listCached(deps.scope(cluster, namespace))];
      for (const e of entries) {
        if (pass.after !== undefined && e.name <= pass.after) continue;
        if (pass.upTo !== undefined && e.name > pass.upTo) break;
        if (++scanned % SCAN_SLICE === 0) await yieldLoop();
        // Cheap test first: an object with no TMC key and a namespace with none need nothing.
        if (!nsKeys.size && !e.json.includes('workload.kcp.io/')) continue;
        const fresh = deps.cache.getEntry(store.groupResource, cluster, namespace, e.name);
        if (!fresh) continue;
        // Decided on the cached parse (metadata is the same in every version; parsed once per
        // stored version), decoded as the store serves it only to be written.
        if (!computeObjectPlacement(entryObject<KubeObject>(fresh), nsKeys, nsDeleting, deps.syncTargetExists, now())) continue;
        if (pending.length >= RESOURCE_WRITES_PER_RECONCILE) {
          await writeAll(deps, cluster, namespace, pending);
          if (cursors.size >= MAX_CURSORS) cursors.clear();
          const last = pending[pending.length - 1]!;
          cursors.set(key, { groupResource: last.store.groupResource, name: last.name });
          return { requeueAfterMs: 0 };
        }
        await store.prepare([fresh]);
        const obj = store.decodeEntry(fresh);
        const change = computeObjectPlacement(obj, nsKeys, nsDeleting, deps.syncTargetExists, now());
        if (change) pending.push({ store, name: e.name, obj: applyChange(obj, change) });
      }
    }
    await writeAll(deps, cluster, namespace, pending);
  };
}
