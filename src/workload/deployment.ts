/**
 * tmc-deployment-coordination: one Deployment split across the SyncTargets it is scheduled to, as
 * kcp TMC's deployment coordination controller (contrib-tmc
 * pkg/reconciler/coordination/deployment deployment_controller.go).
 *
 * - Spec ("upstream view"): for the SyncTargets the Deployment is labelled
 *   `state.workload.kcp.io/<key>: Sync` for and not being removed from
 *   (`deletion.internal.workload.kcp.io/<key>` absent), `spec.replicas` is divided evenly, the
 *   remainder to the first key in byte order (kcp `sets.List`), and each share is written as
 *   `experimental.spec-diff.workload.kcp.io/<key>: [{"op":"replace","path":"/replicas","value":N}]`;
 *   spec-diff annotations of other keys are removed. The syncer of each SyncTarget applies its own
 *   patch to the copy it writes downstream (src/syncer/transform.ts).
 * - Status ("syncer view"): when the status of the Deployment is kept per SyncTarget — the syncer
 *   virtual workspace keeps it in `diff.syncer.internal.kcp.io/<key>` as `{"status": …}` once more
 *   than one SyncTarget syncs the object (src/syncer/virtualworkspace.ts) — the upstream `status`
 *   is the summary of those of the SyncTargets it is split over (not those being removed): `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas` and
 *   `unavailableReplicas` summed, and one condition per type, consolidated as kcp's (the first
 *   seen; replaced by a later one when it is `Unknown`, or when it is `False` and the later is
 *   `True`), sorted by type. When one SyncTarget's status is the object's own (the view's
 *   `##promoted##` marker) the status is left alone.
 *
 * Differences from kcp: the status of a SyncTarget the object is being removed from is not summed
 * (kcp sums every syncer view: after a failover the unreachable cluster's last status would count
 * until its syncer returns); views are visited in key order (kcp: map order, so its condition choice
 * among equals is random); an absent `spec.replicas` is taken as kube's default 1 and split with
 * `add` operations (kcp dereferences it), one that is not a non-negative integer writes no
 * spec-diff; summed
 * counts are capped at the int32 maximum the schema allows. As kcp's, the summary carries no
 * `observedGeneration` (the downstream generations are not the upstream one).
 *
 * Bounds: the work per Deployment is linear in its labels and annotations (kube caps annotations
 * at 256 KiB); keys are queued per object and deduplicated by the controller runtime.
 */
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ReconcileResult } from '../controllers/runtime.js';
import type { RequestScope, Store } from '../registry/store.js';
import type { CacheEntry, WatchCache } from '../storage/watchcache.js';
import { entryObject } from '../storage/watchcache.js';
import { PROMOTED_TO_UPSTREAM, syncerViewFields } from '../syncer/virtualworkspace.js';
import { commit } from './common.js';
import { DELETION_TIMESTAMP_ANNOTATION_PREFIX, RESOURCE_STATE_LABEL_PREFIX, SPEC_DIFF_ANNOTATION_PREFIX, SYNCER_VIEW_ANNOTATION_PREFIX } from './keys.js';

/** kcp's controller name. */
export const DEPLOYMENT_COORDINATION_CONTROLLER = 'tmc-deployment-coordination';

/** The largest count a Deployment status field holds (int32). */
const MAX_INT32 = 2_147_483_647;

/** The replica counts of a DeploymentStatus that are summed (kcp's summarizedStatus fields). */
export const SUMMED_STATUS_FIELDS = ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas'] as const;

/** A Deployment condition as the summary needs it (other fields are carried over as they are). */
export interface DeploymentCondition { type: string; status: string; [field: string]: unknown }

/** The part of an apps/v1 DeploymentStatus the summary writes. */
export type DeploymentStatusSummary = Partial<Record<(typeof SUMMED_STATUS_FIELDS)[number], number>> & { conditions?: DeploymentCondition[] };

/**
 * Divides `replicas` among `keys` (kcp's split): each gets `floor(replicas / n)`, the first key in
 * byte order gets the remainder too. Keys are SyncTarget keys (base 62, so byte order is JS order).
 * @returns key → share, in key order; empty for no keys
 */
export function splitReplicas(replicas: number, keys: Iterable<string>): Map<string, number> {
  const sorted = [...new Set(keys)].sort();
  const out = new Map<string, number>();
  if (!sorted.length) return out;
  const each = Math.floor(replicas / sorted.length);
  const rest = replicas % sorted.length;
  sorted.forEach((k, i) => out.set(k, each + (i === 0 ? rest : 0)));
  return out;
}

/**
 * The spec-diff annotation value that sets a copy's replicas (kcp's format, JSON Patch on `spec`):
 * `replace`, or `add` when the spec has no `replicas` (a `replace` of a missing member fails).
 */
export function replicasSpecDiff(n: number, op: 'replace' | 'add' = 'replace'): string {
  return JSON.stringify([{ op, path: '/replicas', value: n }]);
}

/** The SyncTargets a Deployment is split over: state `Sync` and no deletion annotation (kcp `GetSyncIntents` filter). */
export function activeSyncTargets(obj: KubeObject): string[] {
  const labels = obj.metadata.labels ?? {};
  const annotations = obj.metadata.annotations ?? {};
  const out: string[] = [];
  for (const k in labels) {
    if (!k.startsWith(RESOURCE_STATE_LABEL_PREFIX) || labels[k] !== 'Sync') continue;
    const key = k.slice(RESOURCE_STATE_LABEL_PREFIX.length);
    if (!annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + key]) out.push(key);
  }
  return out.sort();
}

/** A count from a reported status: a non-negative integer, else 0. */
function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0;
}

/**
 * Sums per-SyncTarget Deployment statuses (kcp's `processSyncerView`): counts added (capped at
 * int32), conditions consolidated per type and sorted by type; statuses that are not objects, or
 * empty, are skipped. Zero counts are left out, as Go's `omitempty` does.
 */
export function summarizeDeploymentStatus(statuses: Iterable<unknown>): DeploymentStatusSummary {
  const sums: Record<string, number> = {};
  const conditions = new Map<string, DeploymentCondition>();
  for (const s of statuses) {
    if (!s || typeof s !== 'object' || Array.isArray(s) || !Object.keys(s).length) continue;
    const st = s as Record<string, unknown>;
    for (const f of SUMMED_STATUS_FIELDS) sums[f] = Math.min(MAX_INT32, (sums[f] ?? 0) + count(st[f]));
    for (const c of Array.isArray(st.conditions) ? st.conditions : []) {
      if (!c || typeof c !== 'object' || typeof (c as DeploymentCondition).type !== 'string') continue;
      const cond = c as DeploymentCondition;
      const seen = conditions.get(cond.type);
      if (!seen || seen.status === 'Unknown' || (seen.status === 'False' && cond.status === 'True')) conditions.set(cond.type, cond);
    }
  }
  const out: DeploymentStatusSummary = {};
  for (const f of SUMMED_STATUS_FIELDS) if (sums[f]) out[f] = sums[f];
  if (conditions.size) out.conditions = [...conditions.keys()].sort().map((t) => conditions.get(t)!);
  return out;
}

/**
 * The Deployment as coordination wants it (spec-diff annotations and summarised status), a copy
 * of `obj`; `obj` itself is not changed. See the module comment for the rules.
 */
export function coordinateDeployment(obj: KubeObject): KubeObject {
  const next = structuredClone(obj) as KubeObject & { spec?: { replicas?: unknown }; status?: unknown };
  const annotations = { ...(next.metadata.annotations ?? {}) };
  const raw = next.spec?.replicas;
  const replicas = raw === undefined || raw === null ? 1 : raw;
  const diffs = new Map<string, string>();
  const active = activeSyncTargets(next);
  if (typeof replicas === 'number' && Number.isSafeInteger(replicas) && replicas >= 0) {
    const op = raw === undefined || raw === null ? 'add' : 'replace';
    for (const [key, n] of splitReplicas(replicas, active)) diffs.set(SPEC_DIFF_ANNOTATION_PREFIX + key, replicasSpecDiff(n, op));
  }
  for (const k of Object.keys(annotations)) if (k.startsWith(SPEC_DIFF_ANNOTATION_PREFIX) && !diffs.has(k)) delete annotations[k];
  for (const [k, v] of diffs) annotations[k] = v;
  // Per-SyncTarget statuses of the SyncTargets it runs on, in key order (one being removed — failed
  // over, unreachable — counts no more); one promoted status means one SyncTarget owns `.status`.
  const statuses: unknown[] = [];
  let promoted = false;
  for (const key of active) {
    const status = syncerViewFields(next, key).status;
    if (status === PROMOTED_TO_UPSTREAM) promoted = true;
    else if (status !== undefined) statuses.push(status);
  }
  if (!promoted && statuses.length) next.status = summarizeDeploymentStatus(statuses);
  if (Object.keys(annotations).length) next.metadata.annotations = annotations; else delete next.metadata.annotations;
  return next;
}

/**
 * What of a Deployment coordination depends on, as one comparable string (state labels, deletion,
 * spec-diff and syncer-view annotations, `spec.replicas`); '' for one it has nothing to do with.
 */
export function coordinationDigest(e: CacheEntry | undefined): string {
  if (!e || !e.json.includes('workload.kcp.io/')) return '';
  const o = entryObject<KubeObject & { spec?: { replicas?: unknown } }>(e);
  const parts: string[] = [];
  const labels = o.metadata.labels ?? {};
  for (const k in labels) if (k.startsWith(RESOURCE_STATE_LABEL_PREFIX)) parts.push(`${k}=${labels[k]}`);
  const annotations = o.metadata.annotations ?? {};
  for (const k in annotations) {
    if (k.startsWith(DELETION_TIMESTAMP_ANNOTATION_PREFIX) || k.startsWith(SPEC_DIFF_ANNOTATION_PREFIX) || k.startsWith(SYNCER_VIEW_ANNOTATION_PREFIX)) parts.push(`${k}=${annotations[k]}`);
  }
  if (!parts.length) return '';
  parts.sort();
  parts.push(`replicas=${JSON.stringify(o.spec?.replicas ?? null)}`);
  return parts.join('\n');
}

/** Whether a cache group/resource holds Deployments (built-in, a CRD's, or bound: `apps/deployments:<identity>`). */
export function isDeploymentsGR(groupResource: string): boolean {
  return groupResource === 'apps/deployments' || groupResource.startsWith('apps/deployments:');
}

/** Dependencies of the coordination reconciler. */
export interface DeploymentCoordinationDeps {
  cache: WatchCache;
  /** The store serving the Deployments of `groupResource` in `cluster`, if it still does. */
  storeOf: (cluster: string, groupResource: string) => Store | undefined;
  scope: (cluster: string, namespace?: string) => RequestScope;
}

/** The key of one Deployment: `<cluster>|<namespace>|<name>|<cache group/resource>`. */
export function deploymentKey(e: Pick<CacheEntry, 'cluster' | 'namespace' | 'name' | 'groupResource'>): string {
  return `${e.cluster}|${e.namespace}|${e.name}|${e.groupResource}`;
}

/**
 * Reconciles one Deployment (key {@link deploymentKey}): writes the spec-diff annotations, then the
 * summarised status, each with the resourceVersion it was computed from; a conflict queues the key
 * again at once, a Deployment gone is done.
 */
export function deploymentCoordinationReconciler(deps: DeploymentCoordinationDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, namespace, name, groupResource] = key.split('|') as [string, string, string, string];
    const entry = deps.cache.getEntry(groupResource, cluster, namespace, name);
    if (!entry) return;
    const store = deps.storeOf(cluster, groupResource);
    if (!store) return;
    await store.prepare([entry]);
    const obj = store.decodeEntry(entry);
    if (obj.metadata.deletionTimestamp) return;
    try {
      await commit(store, deps.scope(cluster, namespace), obj, coordinateDeployment(obj));
    } catch (err) {
      if (isStatus(err, 404)) return;
      if (isStatus(err, 409)) return { requeueAfterMs: 0 };
      throw err;
    }
  };
}
