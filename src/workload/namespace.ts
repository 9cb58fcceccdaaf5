/**
 * tmc-namespace-scheduling-placement, with kcp TMC's behaviour (contrib-tmc
 * pkg/reconciler/workload/namespace), three steps in order, each stopping the reconcile when it
 * changed the namespace (the write brings it back):
 * 1. **bind**: the annotation `scheduling.kcp.io/placement: ""` is set while at least one
 *    Placement of the workspace that is not Pending and not `Ready` False selects the namespace
 *    (`spec.namespaceSelector`), and removed when none does.
 * 2. **scheduling**: the SyncTargets of those Placements (their `internal.workload.kcp.io/synctarget`
 *    annotation) are the namespace's. One not yet on it gets `state.workload.kcp.io/<key>: Sync`
 *    (unless its Placement's `Scheduled` is False: it only holds a SyncTarget that is not Ready); one on
 *    it that is no longer scheduled gets `deletion.internal.workload.kcp.io/<key>: <now, RFC 3339>`,
 *    and after a grace period of 5 s (kcp's `removingGracePeriod`) both are removed from the
 *    namespace — unless that SyncTarget's syncer holds the namespace (finalizer
 *    `workload.kcp.io/syncer-<key>`): it removes them itself once its copy is gone. The objects of the namespace follow (resource.ts): they keep the label with the
 *    deletion annotation while the old SyncTarget's syncer still holds them, so its downstream
 *    copies are removed when it comes back.
 * 3. **status**: condition `NamespaceScheduled` (False `Unschedulable`, "No available placements"
 *    or "No available sync targets"; else True).
 * Namespaces of kcp's blocklist (kube-system, kube-public, kube-node-lease, kcp-system) are
 * never scheduled. Only the namespace's own workspace is read.
 *
 * Keys are `<cluster>|<namespace>`.
 */
import type { Condition } from '../apimachinery/conditions.js';
import { nowRFC3339, type KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type WatchCache } from '../storage/watchcache.js';
import { getIfExists, type ReconcileResult } from '../controllers/runtime.js';
import { isFalse, markFalse, markTrue } from './conditions.js';
import { DELETION_TIMESTAMP_ANNOTATION_PREFIX, RESOURCE_STATE_LABEL_PREFIX, SYNCER_FINALIZER_PREFIX } from './keys.js';
import {
  commit, copyOf, deletingKeys, NAMESPACE_BLOCKLIST, PLACEMENT_ANNOTATION, PLACEMENT_SYNC_TARGET_ANNOTATION, PLACEMENTS_GR, selects, splitClusterKey,
  stateKeys, type Placement,
} from './common.js';
import { PLACEMENT_PENDING, PLACEMENT_SCHEDULED } from './placement.js';
import { READY } from './conditions.js';

/** kcp's `removingGracePeriod`: how long a namespace keeps a SyncTarget it is being removed from (ms). */
export const REMOVING_GRACE_PERIOD_MS = 5_000;
/** The namespace condition (kcp `NamespaceScheduled`) and its reason. */
export const NAMESPACE_SCHEDULED = 'NamespaceScheduled';
const NAMESPACE_UNSCHEDULABLE = 'Unschedulable';

/** Dependencies of the namespace scheduling reconciler. */
export interface NamespaceSchedulingDeps {
  namespaces: Store;
  cache: WatchCache;
  scope: (cluster: string) => RequestScope;
  now?: () => number;
  gracePeriodMs?: number;
}

/** Placements of `cluster` that are not Pending, not `Ready` False, and select `ns` (kcp `filterValidPlacements`). */
export function validPlacements(cache: WatchCache, cluster: string, ns: KubeObject): Placement[] {
  return cache.list(PLACEMENTS_GR, cluster).map((e) => entryObject<Placement>(e)).filter((p) =>
    (p.status?.phase ?? PLACEMENT_PENDING) !== PLACEMENT_PENDING && !isFalse(p.status?.conditions, READY) && selects(p.spec?.namespaceSelector, ns.metadata.labels));
}

type NamespaceObject = KubeObject & { status?: { phase?: string; conditions?: Condition[] } };

/** Reconciles one namespace's placement annotation, state labels and deletion annotations. */
export function namespaceSchedulingReconciler(deps: NamespaceSchedulingDeps) {
  const now = deps.now ?? Date.now;
  const grace = deps.gracePeriodMs ?? REMOVING_GRACE_PERIOD_MS;
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitClusterKey(key);
    if (NAMESPACE_BLOCKLIST.has(name)) return;
    const cur = await getIfExists(deps.namespaces, deps.scope(cluster), name);
    if (!cur) return;
    const ns = copyOf<NamespaceObject>(cur);
    const annotations = { ...(ns.metadata.annotations ?? {}) };
    const labels = { ...(ns.metadata.labels ?? {}) };
    const write = async () => {
      ns.metadata.annotations = annotations;
      ns.metadata.labels = labels;
      await commit(deps.namespaces, deps.scope(cluster), cur, ns);
    };
    const placements = validPlacements(deps.cache, cluster, ns);

    // 1. bind
    const has = PLACEMENT_ANNOTATION in annotations;
    if (placements.length > 0 && !has) { annotations[PLACEMENT_ANNOTATION] = ''; await write(); return; }
    if (placements.length === 0 && has) { delete annotations[PLACEMENT_ANNOTATION]; await write(); return; }

    // 2. scheduling
    // A Placement names its SyncTarget; while `Scheduled` is False it only holds it (no valid
    // SyncTarget, the held one not Ready: placement.ts) — its namespaces keep it, no new one gets it.
    const scheduled = new Set<string>();
    const assignable = new Set<string>();
    if (has) {
      for (const p of placements) {
        const k = p.metadata.annotations?.[PLACEMENT_SYNC_TARGET_ANNOTATION];
        if (!k) continue;
        scheduled.add(k);
        if (!isFalse(p.status?.conditions, PLACEMENT_SCHEDULED)) assignable.add(k);
      }
    }
    const deleting = deletingKeys(annotations);
    const active = [...stateKeys(labels)].filter((k) => !deleting.has(k));
    let changed = false;
    let requeueAfterMs: number | undefined;
    for (const k of active) {
      if (!scheduled.has(k)) { annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k] = nowRFC3339(new Date(now())); changed = true; }
    }
    for (const [k, at] of deleting) {
      if (!stateKeys(labels).has(k)) continue;
      // While that SyncTarget's syncer holds the namespace (its finalizer) the label stays: the
      // syncer sees the namespace only through the label, and removes both once its copy is gone
      // (as the resource scheduler leaves held objects to their syncer).
      if (ns.metadata.finalizers?.includes(SYNCER_FINALIZER_PREFIX + k)) continue;
      const since = Date.parse(at);
      const left = (Number.isFinite(since) ? since : 0) + grace - now();
      if (left < 0) {
        delete labels[RESOURCE_STATE_LABEL_PREFIX + k];
        delete annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + k];
        changed = true;
      } else {
        requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, left + 1);
      }
    }
    for (const k of assignable) {
      if (active.includes(k) || deleting.has(k)) continue;
      labels[RESOURCE_STATE_LABEL_PREFIX + k] = 'Sync';
      changed = true;
    }
    if (changed) { await write(); return requeueAfterMs === undefined ? undefined : { requeueAfterMs }; }

    // 3. status
    const status = { ...(ns.status ?? {}) };
    const conds = status.conditions;
    // kcp writes the condition on every namespace; here only on those scheduling touches(ed), so
    // a shard's namespaces outside TMC cost no write.
    if (!has && !conds?.some((c) => c.type === NAMESPACE_SCHEDULED)) return;
    if (!has) status.conditions = markFalse(conds, NAMESPACE_SCHEDULED, NAMESPACE_UNSCHEDULABLE, '', 'No available placements');
    else if (active.length === 0) status.conditions = markFalse(conds, NAMESPACE_SCHEDULED, NAMESPACE_UNSCHEDULABLE, '', 'No available sync targets');
    else status.conditions = markTrue(conds, NAMESPACE_SCHEDULED);
    // A NamespaceCondition has no severity.
    status.conditions = status.conditions.map(({ severity: _s, ...c }) => c);
    ns.status = status;
    await commit(deps.namespaces, deps.scope(cluster), cur, ns);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  };
}
