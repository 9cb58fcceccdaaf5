/**
 * TMC's scheduling controllers on the one controller runtime (src/controllers/runtime.ts), with
 * the informers (watch-cache subscriptions) that feed them:
 * - tmc-synctarget-controller and tmc-synctarget-heartbeat (synctarget.ts),
 * - tmc-scheduling-location-status (location.ts),
 * - tmc-scheduling-placement (placement.ts: kcp's scheduling and workload Placement reconcilers),
 * - tmc-namespace-scheduling-placement (namespace.ts),
 * - tmc-workload-resource-scheduler (resource.ts),
 * - tmc-deployment-coordination (deployment.ts: a Deployment split across its SyncTargets).
 *
 * Fan-out is bounded by what changed: a SyncTarget's heartbeat (the one field its syncer writes
 * every few seconds) wakes only the heartbeat controller; a SyncTarget or Location change wakes
 * the Locations of its workspace and the Placements that name that workspace (an index, not a
 * scan); a Placement change wakes the namespaces of its own workspace; a namespace's scheduling
 * change wakes one resource-scheduler key for the whole namespace; an object wakes it only when
 * its scheduling labels differ from its namespace's. Every key is `<cluster>|…`: nothing of one
 * workspace is queued because of another, except Placements naming a Location workspace.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { CacheEntry } from '../storage/watchcache.js';
import { entryObject } from '../storage/watchcache.js';
import { BINDINGS_GR } from '../apiexports/schemas.js';
import { NAMESPACES_GR } from '../controllers/namespace/controller.js';
import { Controller, type ControllerMetrics, type ControllerOptions, type QueueThread } from '../controllers/runtime.js';
import type { ControllerHost } from '../controllers/index.js';
import { RESOURCE_STATE_LABEL_PREFIX, syncTargetKey } from './keys.js';
import { LOCATIONS_GR, PLACEMENTS_GR, schedulingDigest, SYNC_TARGETS_GR, type Placement, type SyncTarget } from './common.js';
import { findCondition } from '../apimachinery/conditions.js';
import { heartbeatReconciler, syncTargetReconciler } from './synctarget.js';
import { locationReconciler } from './location.js';
import { placementReconciler } from './placement.js';
import { namespaceSchedulingReconciler } from './namespace.js';
import { resourceSchedulerReconciler, UNSCHEDULED_RESOURCES } from './resource.js';
import { coordinationDigest, DEPLOYMENT_COORDINATION_CONTROLLER, deploymentCoordinationReconciler, deploymentKey, isDeploymentsGR } from './deployment.js';

/** Default of `--sync-target-heartbeat-threshold` (ms): 30 s, as issue's; kcp's default is 1 minute. */
export const DEFAULT_HEARTBEAT_THRESHOLD_MS = 30_000;

/** Options of the TMC controllers. */
export interface WorkloadControllerOptions {
  /** `--sync-target-heartbeat-threshold` in ms (default {@link DEFAULT_HEARTBEAT_THRESHOLD_MS}). */
  heartbeatThresholdMs?: number;
  /** How long a namespace keeps a SyncTarget it is being removed from (ms; kcp: 5 s). */
  removingGracePeriodMs?: number;
}

/** Running TMC controllers. */
export interface WorkloadControllers {
  controllers: Controller[];
  stop(): Promise<void>;
}

/** What of a SyncTarget scheduling depends on (everything but the heartbeat and the URLs). */
function syncTargetDigest(e: CacheEntry | undefined): string {
  if (!e) return '';
  const st = entryObject<SyncTarget>(e);
  return JSON.stringify([st.metadata.labels ?? {}, st.spec ?? {}, findCondition(st.status?.conditions, 'Ready')?.status ?? '', st.status?.syncedResources ?? []]);
}

/** What of a Placement the namespaces depend on. */
function placementDigest(e: CacheEntry | undefined): string {
  if (!e) return '';
  const p = entryObject<Placement>(e);
  return JSON.stringify([
    p.spec?.namespaceSelector ?? null, p.status?.phase ?? '', findCondition(p.status?.conditions, 'Ready')?.status ?? '',
    findCondition(p.status?.conditions, 'Scheduled')?.status ?? '', p.metadata.annotations?.['internal.workload.kcp.io/synctarget'] ?? '',
  ]);
}

/**
 * What of a namespace the Placements depend on: its labels (but the state labels scheduling
 * writes, so labelling a workspace's namespaces does not wake its Placements once per namespace)
 * and the placement annotation.
 */
function namespaceDigest(e: CacheEntry | undefined): string {
  if (!e) return '';
  const ns = entryObject<KubeObject>(e);
  const labels = Object.entries(ns.metadata.labels ?? {}).filter(([k]) => !k.startsWith(RESOURCE_STATE_LABEL_PREFIX));
  return JSON.stringify([labels, ns.metadata.annotations?.['scheduling.kcp.io/placement'] ?? null]);
}

const objSchedulingDigest = (e: CacheEntry) => {
  const o = entryObject<KubeObject>(e);
  return schedulingDigest(o.metadata.labels, o.metadata.annotations);
};

/** Starts the TMC controllers of a controller host on its queue thread. */
export function startWorkloadControllers(h: ControllerHost, thread: QueueThread, prefix: string, metrics: ControllerMetrics, opts: WorkloadControllerOptions = {}): WorkloadControllers {
  const scope = (cluster: string, namespace?: string) => h.masters(cluster, namespace);
  const syncTargets = h.storeOf('synctargets', 'workload.kcp.io');
  const locations = h.storeOf('locations', 'scheduling.kcp.io');
  const placements = h.storeOf('placements', 'scheduling.kcp.io');
  const namespaces = h.storeOf('namespaces', '');
  const onError = (name: string) => (key: string, err: unknown) => h.log.warn({ key, err }, `${name} reconcile failed`);
  const make = (name: string, reconcile: ControllerOptions['reconcile'], concurrency = 4) =>
    new Controller({ name, prefix, thread, metrics, concurrency, reconcile, onError: onError(name) });
  const stDeps = {
    syncTargets, scope,
    shards: () => {
      const list = h.shards?.list().filter((s) => s.baseURL || s.virtualWorkspaceURL) ?? [];
      return list.length ? list : [{ name: h.shard, baseURL: h.url, virtualWorkspaceURL: h.url }];
    },
    heartbeatThresholdMs: opts.heartbeatThresholdMs ?? DEFAULT_HEARTBEAT_THRESHOLD_MS,
  };
  const syncTargetCtl = make('tmc-synctarget-controller', syncTargetReconciler(stDeps));
  const heartbeatCtl = make('tmc-synctarget-heartbeat', heartbeatReconciler(stDeps), 8);
  const locationCtl = make('tmc-scheduling-location-status', locationReconciler({ locations, cache: h.cache, scope }));
  const placementCtl = make('tmc-scheduling-placement', placementReconciler({
    placements, cache: h.cache, scope,
    resolveWorkspace: (ws) => h.index.resolvePath(ws) ?? (h.index.get(ws) ? ws : undefined),
  }));
  const namespaceCtl = make('tmc-namespace-scheduling-placement', namespaceSchedulingReconciler({
    namespaces, cache: h.cache, scope, gracePeriodMs: opts.removingGracePeriodMs,
  }), 16);
  // Keys of the SyncTargets of this shard (syncer finalizers of others are dropped).
  const syncTargetKeys = new Map<string, number>();
  const resourceCtl = make('tmc-workload-resource-scheduler', resourceSchedulerReconciler({
    cache: h.cache, scope, syncTargetExists: (k) => syncTargetKeys.has(k),
    namespacedStores: (cluster) => h.registry.forCluster(cluster).namespacedStores(),
  }), 8);
  const deploymentCtl = make(DEPLOYMENT_COORDINATION_CONTROLLER, deploymentCoordinationReconciler({
    cache: h.cache, scope,
    storeOf: (cluster, gr) => h.registry.forCluster(cluster).namespacedStores().find((st) => st.groupResource === gr),
  }));
  const controllers = [syncTargetCtl, heartbeatCtl, locationCtl, placementCtl, namespaceCtl, resourceCtl, deploymentCtl];

  // Placements by the workspace they take Locations from (spec.locationWorkspace as written, its
  // logical cluster, their own cluster when unset, and status.selectedLocation.path).
  const placementsByWorkspace = new Map<string, Set<string>>();
  const placementRefs = new Map<string, string[]>();
  const indexPlacement = (e: CacheEntry, deleted: boolean) => {
    const key = `${e.cluster}|${e.name}`;
    for (const ref of placementRefs.get(key) ?? []) {
      const s = placementsByWorkspace.get(ref);
      s?.delete(key);
      if (s && !s.size) placementsByWorkspace.delete(ref);
    }
    placementRefs.delete(key);
    if (deleted) return;
    const p = entryObject<Placement>(e);
    const ws = p.spec?.locationWorkspace;
    const refs = new Set<string>([ws || e.cluster]);
    if (ws) { const c = h.index.resolvePath(ws); if (c) refs.add(c); }
    if (p.status?.selectedLocation?.path) refs.add(p.status.selectedLocation.path);
    placementRefs.set(key, [...refs]);
    for (const r of refs) { let s = placementsByWorkspace.get(r); if (!s) placementsByWorkspace.set(r, s = new Set()); s.add(key); }
  };
  const enqueue = (c: Controller, key: string) => { c.enqueue(key).catch(() => undefined); };
  /** Locations of a workspace and the Placements that take Locations from it. */
  const locationWorkspaceChanged = (cluster: string) => {
    for (const l of h.cache.list(LOCATIONS_GR, cluster)) enqueue(locationCtl, `${cluster}|${l.name}`);
    const path = h.index.get(cluster)?.path;
    for (const ref of path ? [cluster, path] : [cluster]) for (const k of placementsByWorkspace.get(ref) ?? []) enqueue(placementCtl, k);
  };
  const namespacesOf = (cluster: string) => { for (const n of h.cache.list(NAMESPACES_GR, cluster)) enqueue(namespaceCtl, `${cluster}|${n.name}`); };
  const placementsOf = (cluster: string) => { for (const p of h.cache.list(PLACEMENTS_GR, cluster)) enqueue(placementCtl, `${cluster}|${p.name}`); };
  const tmcMarked = (e: CacheEntry) => e.json.includes('workload.kcp.io/') || e.json.includes('scheduling.kcp.io/placement');

  const resync = () => {
    placementsByWorkspace.clear(); placementRefs.clear(); syncTargetKeys.clear();
    for (const e of h.cache.list(PLACEMENTS_GR, '*')) indexPlacement(e, false);
    for (const e of h.cache.list(SYNC_TARGETS_GR, '*')) { syncTargetKeys.set(syncTargetKey(e.cluster, e.name), 1); enqueue(syncTargetCtl, `${e.cluster}|${e.name}`); enqueue(heartbeatCtl, `${e.cluster}|${e.name}`); }
    for (const e of h.cache.list(LOCATIONS_GR, '*')) enqueue(locationCtl, `${e.cluster}|${e.name}`);
    for (const e of h.cache.list(PLACEMENTS_GR, '*')) enqueue(placementCtl, `${e.cluster}|${e.name}`);
    for (const e of h.cache.list(NAMESPACES_GR, '*')) {
      if (h.cache.count(PLACEMENTS_GR, e.cluster) > 0 || tmcMarked(e)) enqueue(namespaceCtl, `${e.cluster}|${e.name}`);
      if (tmcMarked(e)) enqueue(resourceCtl, `${e.cluster}|${e.name}`);
    }
    for (const gr of h.cache.groupResources()) {
      if (!isDeploymentsGR(gr)) continue;
      for (const e of h.cache.list(gr, '*')) if (coordinationDigest(e)) enqueue(deploymentCtl, deploymentKey(e));
    }
  };
  const unsubscribe = h.cache.subscribe((ev) => {
    if (!ev) { resync(); return; }
    const e = ev.entry;
    const deleted = ev.type === 'DELETED';
    switch (e.groupResource) {
      case SYNC_TARGETS_GR: {
        const k = syncTargetKey(e.cluster, e.name);
        if (deleted) syncTargetKeys.delete(k); else syncTargetKeys.set(k, 1);
        if (!deleted) {
          enqueue(heartbeatCtl, `${e.cluster}|${e.name}`);
          if (!ev.prev || !e.json.includes('"internal.workload.kcp.io/key"') || !e.json.includes('"virtualWorkspaces"')) enqueue(syncTargetCtl, `${e.cluster}|${e.name}`);
        }
        if (deleted || syncTargetDigest(e) !== syncTargetDigest(ev.prev)) locationWorkspaceChanged(e.cluster);
        return;
      }
      case LOCATIONS_GR:
        if (!deleted) enqueue(locationCtl, `${e.cluster}|${e.name}`);
        locationWorkspaceChanged(e.cluster);
        return;
      case PLACEMENTS_GR:
        indexPlacement(e, deleted);
        if (!deleted) enqueue(placementCtl, `${e.cluster}|${e.name}`);
        if (deleted || placementDigest(e) !== placementDigest(ev.prev)) namespacesOf(e.cluster);
        return;
      case BINDINGS_GR:
        placementsOf(e.cluster);
        return;
      case NAMESPACES_GR: {
        const hasPlacements = h.cache.count(PLACEMENTS_GR, e.cluster) > 0;
        // A namespace gone may leave its Placements Unbound.
        if (deleted) { if (hasPlacements && e.json.includes('"scheduling.kcp.io/placement"')) placementsOf(e.cluster); return; }
        if (hasPlacements && namespaceDigest(e) !== namespaceDigest(ev.prev)) placementsOf(e.cluster);
        if (hasPlacements || tmcMarked(e)) enqueue(namespaceCtl, `${e.cluster}|${e.name}`);
        if (objSchedulingDigest(e) !== (ev.prev ? objSchedulingDigest(ev.prev) : '')) enqueue(resourceCtl, `${e.cluster}|${e.name}`);
        return;
      }
      default: {
        // A Deployment whose split or per-SyncTarget status changed.
        if (!deleted && isDeploymentsGR(e.groupResource) && coordinationDigest(e) !== coordinationDigest(ev.prev)) enqueue(deploymentCtl, deploymentKey(e));
        // An object in a namespace: queue the namespace when the object's scheduling differs.
        if (deleted || !e.namespace || UNSCHEDULED_RESOURCES.has(e.groupResource)) return;
        const ns = h.cache.getEntry(NAMESPACES_GR, e.cluster, '', e.namespace);
        if (!ns) return;
        const objMarked = e.json.includes('workload.kcp.io/');
        if (!objMarked && !ns.json.includes('"state.workload.kcp.io/')) return;
        if (objSchedulingDigest(e) !== objSchedulingDigest(ns) || (objMarked && e.json.includes('"deletionTimestamp"'))) enqueue(resourceCtl, `${e.cluster}|${e.namespace}`);
      }
    }
  });
  resync();
  // Shards come and go: every SyncTarget's virtual workspace URLs change.
  const unsubscribeShards = h.shards?.subscribe((c) => {
    if (!c.shard) for (const e of h.cache.list(SYNC_TARGETS_GR, '*')) enqueue(syncTargetCtl, `${e.cluster}|${e.name}`);
  });
  return {
    controllers,
    stop: async () => {
      unsubscribe();
      unsubscribeShards?.();
      for (const c of controllers) await c.close();
    },
  };
}
