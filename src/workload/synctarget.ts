/**
 * The SyncTarget controllers, with kcp TMC's behaviour (contrib-tmc pkg/reconciler/workload):
 * - **tmc-synctarget-controller** (synctarget/synctarget_reconcile.go): labels the SyncTarget
 *   with its key (`internal.workload.kcp.io/key`) and publishes, per shard of the instance, the
 *   URLs its syncer uses: `status.virtualWorkspaces[].syncerURL`
 *   (`<shard virtual workspace URL>/services/syncer/<cluster>/<name>/<uid>`) and `upsyncerURL`
 *   (`…/services/upsyncer/…`), and `status.tunnelWorkspaces[].url`
 *   (`<shard base URL>/clusters/<cluster>`); the root shard's first, then by URL.
 * - **tmc-synctarget-heartbeat** (heartbeat/heartbeat_reconciler.go): `HeartbeatHealthy` is
 *   False (reason `ErrorHeartbeat`, severity Warning) when the syncer never sent a heartbeat
 *   (`status.lastSyncerHeartbeatTime`) or the last one is older than the threshold, else True;
 *   `Ready` summarises `SyncerReady`, `APIImporterReady` and `HeartbeatHealthy`. A healthy
 *   target is looked at again when its heartbeat would go stale, so a syncer that stops is seen
 *   within the threshold (plus a reconcile). The threshold is the shard flag
 *   `--sync-target-heartbeat-threshold` (kcp's name; default 30 s here, kcp's is 1 minute).
 *
 * Keys are `<cluster>|<name>`.
 */
import type { RequestScope, Store } from '../registry/store.js';
import { getIfExists, type ReconcileResult } from '../controllers/runtime.js';
import { markFalse, markTrue, setSummary } from './conditions.js';
import { syncTargetKey } from './keys.js';
import {
  API_IMPORTER_READY, commit, copyOf, ERROR_HEARTBEAT_REASON, HEARTBEAT_HEALTHY, splitClusterKey, SYNC_TARGET_KEY_LABEL, SYNCER_READY,
  type SyncTarget,
} from './common.js';

/** Name of the shard that is the root shard (kcp `corev1alpha1.RootShard`). */
const ROOT_SHARD = 'root';

/** A shard as the SyncTarget controller needs it. */
export interface ShardURLs { name: string; baseURL: string; virtualWorkspaceURL: string }

/** Dependencies of the SyncTarget reconcilers (plain functions: tested without mocks). */
export interface SyncTargetReconcilerDeps {
  syncTargets: Store;
  scope: (cluster: string) => RequestScope;
  /** Every shard of the instance (this one alone without a shard directory). */
  shards: () => ShardURLs[];
  /** Heartbeat threshold (ms): a heartbeat older than this makes the target not Ready. */
  heartbeatThresholdMs: number;
  now?: () => number;
}

const join = (base: string, ...parts: string[]) => [base.replace(/\/+$/, ''), ...parts.map((p) => encodeURIComponent(p))].join('/');

/**
 * The syncer virtual workspace URL of a SyncTarget on a shard whose virtual workspaces are served
 * at `vwURL` (kcp: `<vw>/services/syncer/<cluster>/<name>/<uid>`).
 */
export function syncerVirtualWorkspaceURL(vwURL: string, cluster: string, name: string, uid: string): string {
  return join(vwURL, 'services', 'syncer', cluster, name, uid);
}

/** Reconciles a SyncTarget's key label and virtual workspace URLs (tmc-synctarget-controller). */
export function syncTargetReconciler(deps: SyncTargetReconcilerDeps) {
  return async (key: string): Promise<void> => {
    const [cluster, name] = splitClusterKey(key);
    const cur = await getIfExists(deps.syncTargets, deps.scope(cluster), name);
    if (!cur || cur.metadata.deletionTimestamp) return;
    const next = copyOf<SyncTarget>(cur);
    next.metadata.labels = { ...(next.metadata.labels ?? {}), [SYNC_TARGET_KEY_LABEL]: syncTargetKey(cluster, name) };
    const uid = cur.metadata.uid ?? '';
    const shards = [...deps.shards()].filter((s) => s.virtualWorkspaceURL);
    const rootVW = shards.find((s) => s.name === ROOT_SHARD)?.virtualWorkspaceURL;
    const byVW = new Map<string, ShardURLs>();
    for (const s of shards) if (!byVW.has(s.virtualWorkspaceURL)) byVW.set(s.virtualWorkspaceURL, s);
    const ordered = [...byVW.keys()].sort((a, b) => (a === rootVW ? -1 : b === rootVW ? 1 : a < b ? -1 : a > b ? 1 : 0));
    const status = { ...(next.status ?? {}) };
    status.virtualWorkspaces = ordered.map((vw) => ({
      syncerURL: syncerVirtualWorkspaceURL(vw, cluster, name, uid),
      upsyncerURL: join(vw, 'services', 'upsyncer', cluster, name, uid),
    }));
    status.tunnelWorkspaces = ordered.map((vw) => ({ url: join(byVW.get(vw)!.baseURL || vw, 'clusters', cluster) }));
    next.status = status;
    await commit(deps.syncTargets, deps.scope(cluster), cur, next);
  };
}

/** Reconciles a SyncTarget's HeartbeatHealthy and Ready conditions (tmc-synctarget-heartbeat). */
export function heartbeatReconciler(deps: SyncTargetReconcilerDeps) {
  const now = deps.now ?? Date.now;
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitClusterKey(key);
    const cur = await getIfExists(deps.syncTargets, deps.scope(cluster), name);
    if (!cur) return;
    const next = copyOf<SyncTarget>(cur);
    const status = { ...(next.status ?? {}) };
    const beat = status.lastSyncerHeartbeatTime ? Date.parse(status.lastSyncerHeartbeatTime) : NaN;
    let requeueAfterMs: number | undefined;
    let conds = status.conditions;
    if (!Number.isFinite(beat)) {
      conds = markFalse(conds, HEARTBEAT_HEALTHY, ERROR_HEARTBEAT_REASON, 'Warning', 'No heartbeat yet seen');
    } else if (now() - beat > deps.heartbeatThresholdMs) {
      conds = markFalse(conds, HEARTBEAT_HEALTHY, ERROR_HEARTBEAT_REASON, 'Warning', `No heartbeat since ${status.lastSyncerHeartbeatTime}`);
    } else {
      conds = markTrue(conds, HEARTBEAT_HEALTHY);
      // Looked at again once this heartbeat is older than the threshold (kcp: AddAfter).
      requeueAfterMs = Math.max(0, beat + deps.heartbeatThresholdMs - now()) + 1;
    }
    status.conditions = setSummary(conds, [SYNCER_READY, API_IMPORTER_READY, HEARTBEAT_HEALTHY]);
    next.status = status;
    await commit(deps.syncTargets, deps.scope(cluster), cur, next);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  };
}
