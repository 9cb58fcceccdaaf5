/**
 * The Placement controller: kcp TMC's two Placement reconcilers run in order on one key, so the
 * location, the phase and the SyncTarget are decided from one read and written together.
 *
 * 1. **Location selection and phase** (contrib-tmc pkg/reconciler/scheduling/placement,
 *    tmc-scheduling-placement): the location workspace is `spec.locationWorkspace` (a path or a
 *    logical cluster name) or the Placement's own; its Locations of `spec.locationResource` that
 *    one of `spec.locationSelectors` selects are valid. Pending (or Unbound with an invalid
 *    selection): one valid Location is picked at random → `status.selectedLocation`
 *    (`{path: <location's logical cluster>, locationName}`), phase Unbound, `Ready` True; none →
 *    Pending, `Ready` False `LocationNoMatch`. Bound: the selection is kept; when it is no longer
 *    valid `Ready` is False `LocationInvalid` (the namespaces then lose the placement). Then the
 *    phase: Bound when a namespace with the `scheduling.kcp.io/placement` annotation matches
 *    `spec.namespaceSelector` (a missing selector matches none, `{}` all), else Unbound.
 * 2. **SyncTarget scheduling** (pkg/reconciler/workload/placement, tmc-workload-placement): the
 *    SyncTargets of the selected Location (its `instanceSelector`, in its workspace) that support
 *    the APIs of the workspace's compute APIBindings (the binding or its APIExport annotated
 *    `extra.apis.kcp.io/compute.workload.kcp.io`: every bound resource Accepted in
 *    `status.syncedResources` with the same identity hash), are Ready, schedulable, and not past
 *    `spec.evictAfter`, are valid. The current one (annotation `internal.workload.kcp.io/synctarget`,
 *    its key) is kept while valid; else one valid target is picked at random; none: the
 *    annotation is removed — unless the current one is only not Ready (see
 *    `keepsWithoutAlternative`: a difference from kcp). Condition `Scheduled` (reasons `ScheduleLocationNotFound`,
 *    `NoValidTarget`). A target with `evictAfter` ahead is looked at again at that time.
 *
 * **Cross-workspace reads.** A Placement reads Locations and SyncTargets of one other workspace
 * only: the one `spec.locationWorkspace` names, and only when its own workspace holds a Bound
 * APIBinding to an APIExport of that workspace (the compute service's `kubernetes` export that
 * `kubectl kcp bind compute` binds, which APIBinding admission allows only to a user with the
 * `bind` verb on that export there). kcp's controllers do not check this themselves; they rely on
 * that binding being made. Without it the Placement stays Pending with `Ready` False
 * `LocationNotFound` and nothing of that workspace is read. Location workspaces are looked up on
 * this shard.
 *
 * Keys are `<cluster>|<name>`.
 */
import type { Condition } from '../apimachinery/conditions.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type WatchCache } from '../storage/watchcache.js';
import { BINDINGS_GR, EXPORTS_GR } from '../apiexports/schemas.js';
import { EXPORT_LABEL, exportLabelValue } from '../apiexports/admission.js';
import { NAMESPACES_GR } from '../controllers/namespace/controller.js';
import { getIfExists, type ReconcileResult } from '../controllers/runtime.js';
import { markFalse, markTrue, READY } from './conditions.js';
import { syncTargetKey } from './keys.js';
import {
  commit, COMPUTE_API_EXPORT_ANNOTATION, copyOf, filterNonEvicting, filterReady, LOCATIONS_GR, locationSyncTargets, PLACEMENT_ANNOTATION,
  PLACEMENT_SYNC_TARGET_ANNOTATION, sameGVR, selects, splitClusterKey, type Location, type Placement, type SyncTarget,
} from './common.js';
import { syncTargetsOf } from './location.js';

/** Placement phases and conditions (contrib-tmc types_placement.go). */
export const PLACEMENT_PENDING = 'Pending';
export const PLACEMENT_UNBOUND = 'Unbound';
export const PLACEMENT_BOUND = 'Bound';
export const PLACEMENT_SCHEDULED = 'Scheduled';
const LOCATION_NOT_FOUND = 'LocationNotFound';
const LOCATION_INVALID = 'LocationInvalid';
const LOCATION_NOT_MATCH = 'LocationNoMatch';
const SCHEDULE_LOCATION_NOT_FOUND = 'ScheduleLocationNotFound';
const SCHEDULE_NO_VALID_TARGET = 'NoValidTarget';

/** Dependencies of the Placement reconciler. */
export interface PlacementReconcilerDeps {
  placements: Store;
  cache: WatchCache;
  scope: (cluster: string) => RequestScope;
  /** The logical cluster a workspace path or logical cluster name denotes on this shard, if any. */
  resolveWorkspace: (pathOrName: string) => string | undefined;
  now?: () => number;
  random?: () => number;
}

interface APIBinding extends KubeObject {
  spec?: { reference?: { export?: { path?: string; name?: string } } };
  status?: { phase?: string; apiExportClusterName?: string; boundResources?: { group?: string; resource: string; schema?: { identityHash?: string } }[] };
}

const bindingsOf = (cache: WatchCache, cluster: string) => cache.list(BINDINGS_GR, cluster).map((e) => entryObject<APIBinding>(e));

/**
 * Whether a Placement in `cluster` may use the Locations of `locationCluster`: its own workspace
 * always; another only through a Bound APIBinding of `cluster` to an APIExport there. The export
 * is recognised by the binding's `internal.apis.kcp.io/export` label, which admission sets after
 * the `bind` check and keeps (its reference is immutable): a workspace admin can write its
 * bindings' status, not that label.
 */
export function mayUseLocationWorkspace(cache: WatchCache, cluster: string, locationCluster: string): boolean {
  if (cluster === locationCluster) return true;
  const bindings = bindingsOf(cache, cluster).filter((b) => b.status?.phase === 'Bound' && b.metadata.labels?.[EXPORT_LABEL]);
  if (!bindings.length) return false;
  const exports = new Set(cache.list(EXPORTS_GR, locationCluster).map((e) => exportLabelValue(locationCluster, e.name)));
  return bindings.some((b) => exports.has(b.metadata.labels![EXPORT_LABEL]!));
}

/**
 * The logical cluster of a Placement's location workspace, or an error message (the workspace
 * does not exist here, or the Placement's workspace may not use it).
 */
export function locationWorkspaceOf(deps: Pick<PlacementReconcilerDeps, 'cache' | 'resolveWorkspace'>, cluster: string, p: Placement): { cluster: string } | { error: string } {
  const ws = p.spec?.locationWorkspace;
  if (!ws) return { cluster };
  const resolved = deps.resolveWorkspace(ws);
  const refused = { error: `location workspace "${ws}" not found, or not bound: an APIBinding to one of its APIExports is needed` };
  if (!resolved) return refused;
  return mayUseLocationWorkspace(deps.cache, cluster, resolved) ? { cluster: resolved } : refused;
}

const pick = <T>(xs: readonly T[], random: () => number): T => xs[Math.min(xs.length - 1, Math.floor(random() * xs.length))]!;

/** Whether any namespace of `cluster` carrying the placement annotation is selected by the Placement. */
function hasBoundNamespace(cache: WatchCache, cluster: string, p: Placement): boolean {
  const sel = p.spec?.namespaceSelector;
  if (!sel) return false;
  for (const e of cache.list(NAMESPACES_GR, cluster)) {
    if (!e.json.includes(`"${PLACEMENT_ANNOTATION}"`)) continue;
    const ns = entryObject<KubeObject>(e);
    if (ns.metadata.annotations?.[PLACEMENT_ANNOTATION] !== undefined && selects(sel, ns.metadata.labels)) return true;
  }
  return false;
}

/** The SyncTargets of `targets` that support the APIs of the workspace's compute APIBindings (kcp `filterAPICompatible`). */
function filterAPICompatible(cache: WatchCache, cluster: string, targets: SyncTarget[]): { targets: SyncTarget[]; message: string } {
  // kcp copies the export's `extra.apis.kcp.io/*` annotations onto its bindings; kcp-ts's
  // bindings do not carry them, so the bound export's own annotation counts too.
  const isCompute = (b: APIBinding) => {
    if (b.metadata.annotations?.[COMPUTE_API_EXPORT_ANNOTATION] !== undefined) return true;
    const exportName = b.spec?.reference?.export?.name;
    const exportCluster = b.status?.apiExportClusterName;
    if (!exportName || !exportCluster) return false;
    const exp = cache.getEntry(EXPORTS_GR, exportCluster, '', exportName);
    return Boolean(exp && entryObject<KubeObject>(exp).metadata.annotations?.[COMPUTE_API_EXPORT_ANNOTATION] !== undefined);
  };
  const compute = bindingsOf(cache, cluster).filter(isCompute);
  const messages: string[] = [];
  const ok = targets.filter((st) => {
    const accepted = new Map<string, string>();
    for (const r of st.status?.syncedResources ?? []) if (r.state === 'Accepted') accepted.set(`${r.group ?? ''}/${r.resource}`, r.identityHash ?? '');
    for (const b of compute) {
      for (const r of b.status?.boundResources ?? []) {
        const hash = accepted.get(`${r.group ?? ''}/${r.resource}`);
        if (hash === undefined || hash !== (r.schema?.identityHash ?? '')) {
          messages.push(`SyncTarget ${st.metadata.name} does not support APIBinding ${b.metadata.name}`);
          return false;
        }
      }
    }
    return true;
  });
  return { targets: ok, message: messages.join(', ') };
}

/**
 * Whether the SyncTarget of `key` is still in the Location, schedulable and not evicting — only
 * not Ready — so that a Placement with no valid SyncTarget keeps it.
 */
function keepsWithoutAlternative(cache: WatchCache, locationCluster: string, locationName: string, key: string, now: number): boolean {
  const locEntry = cache.getEntry(LOCATIONS_GR, locationCluster, '', locationName);
  if (!locEntry) return false;
  const st = locationSyncTargets(syncTargetsOf(cache, locationCluster), entryObject<Location>(locEntry)).find((t) => syncTargetKey(locationCluster, t.metadata.name!) === key);
  return Boolean(st && !st.spec?.unschedulable && filterNonEvicting([st], now).length);
}

/** Reconciles one Placement: location, phase, SyncTarget. */
export function placementReconciler(deps: PlacementReconcilerDeps) {
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitClusterKey(key);
    const cur = await getIfExists(deps.placements, deps.scope(cluster), name);
    if (!cur || cur.metadata.deletionTimestamp) return;
    const p = copyOf<Placement>(cur);
    const status: NonNullable<Placement['status']> = { ...(p.status ?? {}) };
    status.phase ||= PLACEMENT_PENDING;
    let conds: Condition[] | undefined = status.conditions;

    // 1. The location (scheduling/placement placementReconciler).
    const where = locationWorkspaceOf(deps, cluster, p);
    let locationCluster: string | undefined;
    if ('error' in where) {
      // kcp keeps the phase on a lookup error; here the workspace is unusable, so the selection goes.
      status.phase = PLACEMENT_PENDING;
      delete status.selectedLocation;
      conds = markFalse(conds, READY, LOCATION_NOT_FOUND, 'Error', where.error);
    } else {
      locationCluster = where.cluster;
      const valid = new Set<string>();
      for (const e of deps.cache.list(LOCATIONS_GR, locationCluster)) {
        const loc = entryObject<Location>(e);
        if (!sameGVR(loc.spec?.resource, p.spec?.locationResource)) continue;
        if ((p.spec?.locationSelectors ?? []).some((s) => selects(s, loc.metadata.labels))) valid.add(loc.metadata.name!);
      }
      const selectedValid = status.selectedLocation?.path === locationCluster && valid.has(status.selectedLocation.locationName);
      if (status.phase === PLACEMENT_BOUND) {
        conds = selectedValid ? markTrue(conds, READY) : markFalse(conds, READY, LOCATION_INVALID, 'Error', 'Selected location is invalid for current placement');
      } else if (status.phase === PLACEMENT_UNBOUND && selectedValid) {
        conds = markTrue(conds, READY);
      } else if (valid.size === 0) {
        status.phase = PLACEMENT_PENDING;
        delete status.selectedLocation;
        conds = markFalse(conds, READY, LOCATION_NOT_MATCH, 'Error', 'No valid location is found');
      } else {
        status.selectedLocation = { path: locationCluster, locationName: pick([...valid].sort(), random) };
        status.phase = PLACEMENT_UNBOUND;
        conds = markTrue(conds, READY);
      }
    }
    // 1b. The phase from the namespaces bound to it (placementNamespaceReconciler).
    if (status.phase !== PLACEMENT_PENDING) {
      if (!status.selectedLocation) status.phase = PLACEMENT_PENDING;
      else status.phase = hasBoundNamespace(deps.cache, cluster, p) ? PLACEMENT_BOUND : PLACEMENT_UNBOUND;
    }

    // 2. The SyncTarget (workload/placement placementSchedulingReconciler).
    let requeueAfterMs: number | undefined;
    const annotations = { ...(p.metadata.annotations ?? {}) };
    const current = annotations[PLACEMENT_SYNC_TARGET_ANNOTATION];
    type Decision = { reason: string; message: string } | { valid: { st: SyncTarget; key: string }[] };
    const scheduled = ((): Decision => {
      if (status.phase === PLACEMENT_PENDING || !status.selectedLocation || !locationCluster) return { reason: SCHEDULE_LOCATION_NOT_FOUND, message: 'No selected location is scheduled' };
      const locEntry = deps.cache.getEntry(LOCATIONS_GR, locationCluster, '', status.selectedLocation.locationName);
      if (!locEntry) return { reason: SCHEDULE_LOCATION_NOT_FOUND, message: 'Selected location is not found' };
      const inLocation = locationSyncTargets(syncTargetsOf(deps.cache, locationCluster), entryObject<Location>(locEntry));
      if (!inLocation.length) return { reason: SCHEDULE_NO_VALID_TARGET, message: 'No SyncTarget in the selected Location' };
      const compatible = filterAPICompatible(deps.cache, cluster, inLocation);
      if (!compatible.targets.length) return { reason: SCHEDULE_NO_VALID_TARGET, message: compatible.message };
      const valid = filterNonEvicting(filterReady(compatible.targets), now());
      if (!valid.length) return { reason: SCHEDULE_NO_VALID_TARGET, message: 'No SyncTarget is ready or non evicting' };
      return { valid: valid.map((st) => ({ st, key: syncTargetKey(locationCluster, st.metadata.name!) })) };
    })();
    if ('valid' in scheduled) {
      const keep = scheduled.valid.find((v) => v.key === current);
      const chosen = keep ?? pick(scheduled.valid.sort((a, b) => (a.key < b.key ? -1 : 1)), random);
      annotations[PLACEMENT_SYNC_TARGET_ANNOTATION] = chosen.key;
      conds = markTrue(conds, PLACEMENT_SCHEDULED);
      const evictAt = chosen.st.spec?.evictAfter ? Date.parse(chosen.st.spec.evictAfter) : NaN;
      if (Number.isFinite(evictAt)) requeueAfterMs = Math.max(0, evictAt - now()) + 1;
    } else {
      // kcp removes the SyncTarget whenever none is valid. Here a SyncTarget that is only not
      // Ready (a stale heartbeat: the cluster may be cut off, not gone) keeps its namespaces while
      // no other can take them: moving them to nowhere would delete the downstream copies when it
      // comes back, and lose nothing to keep. Unschedulable, evicting, deleted or no longer in the
      // Location: removed, as kcp.
      if (!(current && locationCluster && status.selectedLocation && keepsWithoutAlternative(deps.cache, locationCluster, status.selectedLocation.locationName, current, now()))) {
        delete annotations[PLACEMENT_SYNC_TARGET_ANNOTATION];
      }
      conds = markFalse(conds, PLACEMENT_SCHEDULED, scheduled.reason, 'Warning', scheduled.message);
    }
    if (Object.keys(annotations).length || p.metadata.annotations) p.metadata.annotations = annotations;
    status.conditions = conds;
    p.status = status;
    await commit(deps.placements, deps.scope(cluster), cur, p);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  };
}
