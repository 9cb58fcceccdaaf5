/**
 * tmc-scheduling-location-status, with kcp TMC's behaviour (contrib-tmc
 * pkg/reconciler/scheduling/location): a Location's `status.instances` is the number of
 * SyncTargets of its workspace that `spec.instanceSelector` selects (a missing selector selects
 * none), `status.availableInstances` the number of those Ready and schedulable; its labels are
 * written as one string `k=v k2=v2` (sorted by key) into the annotation `scheduling.kcp.io/labels`
 * for a table column. Only the Location's own workspace is read.
 *
 * Keys are `<cluster>|<name>`.
 */
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type WatchCache } from '../storage/watchcache.js';
import { getIfExists } from '../controllers/runtime.js';
import { commit, copyOf, filterReady, LOCATION_LABELS_ANNOTATION, locationSyncTargets, splitClusterKey, SYNC_TARGETS_GR, type Location, type SyncTarget } from './common.js';

/** Dependencies of the Location reconciler. */
export interface LocationReconcilerDeps {
  locations: Store;
  cache: WatchCache;
  scope: (cluster: string) => RequestScope;
}

/** The SyncTargets of one logical cluster, from the watch cache (shared objects: never mutate). */
export function syncTargetsOf(cache: WatchCache, cluster: string): SyncTarget[] {
  return cache.list(SYNC_TARGETS_GR, cluster).map((e) => entryObject<SyncTarget>(e));
}

/** Reconciles one Location's labels annotation and instance counts. */
export function locationReconciler(deps: LocationReconcilerDeps) {
  return async (key: string): Promise<void> => {
    const [cluster, name] = splitClusterKey(key);
    const cur = await getIfExists(deps.locations, deps.scope(cluster), name);
    if (!cur) return;
    const next = copyOf<Location>(cur);
    const labels = next.metadata.labels ?? {};
    const labelString = Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(' ');
    if ((next.metadata.annotations?.[LOCATION_LABELS_ANNOTATION] ?? undefined) !== labelString) {
      next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [LOCATION_LABELS_ANNOTATION]: labelString };
    }
    const instances = locationSyncTargets(syncTargetsOf(deps.cache, cluster), next);
    next.status = { ...(next.status ?? {}), instances: instances.length, availableInstances: filterReady(instances).length };
    await commit(deps.locations, deps.scope(cluster), cur, next);
  };
}
