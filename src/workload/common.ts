/**
 * What TMC's scheduling controllers share: the watch-cache names of SyncTargets, Locations and
 * Placements, kcp's internal label and annotation keys (contrib-tmc apis/workload/v1alpha1
 * types.go, apis/scheduling/v1alpha1 types_location.go), and kcp's filters of SyncTargets
 * (pkg/reconciler/scheduling/location workloadcluster_helpers.go).
 */
import type { Condition } from '../apimachinery/conditions.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { labelSelectorFromMetav1, matchesLabels, type LabelSelectorV1 } from '../apimachinery/labels.js';
import { DELETION_TIMESTAMP_ANNOTATION_PREFIX, RESOURCE_STATE_LABEL_PREFIX } from './keys.js';
import { isTrue, READY } from './conditions.js';
import { jsonEqual, type RequestScope, type Store } from '../registry/store.js';

/** Watch-cache group/resource of SyncTargets. */
export const SYNC_TARGETS_GR = 'workload.kcp.io/synctargets';
/** Watch-cache group/resource of Locations. */
export const LOCATIONS_GR = 'scheduling.kcp.io/locations';
/** Watch-cache group/resource of Placements. */
export const PLACEMENTS_GR = 'scheduling.kcp.io/placements';

/** Label on a SyncTarget holding its key (`InternalSyncTargetKeyLabel`), for reverse lookups. */
export const SYNC_TARGET_KEY_LABEL = 'internal.workload.kcp.io/key';
/** Annotation on a Placement naming the key of the SyncTarget it is scheduled to (`InternalSyncTargetPlacementAnnotationKey`). */
export const PLACEMENT_SYNC_TARGET_ANNOTATION = 'internal.workload.kcp.io/synctarget';
/** Annotation on a Namespace that at least one ready Placement selects (`PlacementAnnotationKey`, value ""). */
export const PLACEMENT_ANNOTATION = 'scheduling.kcp.io/placement';
/** Annotation on a Location with its labels as one string, for a table column (`LocationLabelsStringAnnotationKey`). */
export const LOCATION_LABELS_ANNOTATION = 'scheduling.kcp.io/labels';
/** Annotation of an APIExport/APIBinding whose APIs a SyncTarget must support (`ComputeAPIExportAnnotationKey`). */
export const COMPUTE_API_EXPORT_ANNOTATION = 'extra.apis.kcp.io/compute.workload.kcp.io';

/** Namespaces never scheduled (kcp's `namespaceBlocklist`; `kcp-system` holds export identities). */
export const NAMESPACE_BLOCKLIST: ReadonlySet<string> = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'kcp-system']);

/** SyncTarget conditions (contrib-tmc synctarget_types.go). */
export const HEARTBEAT_HEALTHY = 'HeartbeatHealthy';
export const SYNCER_READY = 'SyncerReady';
export const API_IMPORTER_READY = 'APIImporterReady';
/** Reason of HeartbeatHealthy False (`ErrorHeartbeatMissedReason`). */
export const ERROR_HEARTBEAT_REASON = 'ErrorHeartbeat';

/** The fields of a SyncTarget scheduling reads. */
export interface SyncTarget extends KubeObject {
  spec?: { unschedulable?: boolean; evictAfter?: string; supportedAPIExports?: { path?: string; export?: string }[]; cells?: Record<string, string> };
  status?: {
    conditions?: Condition[]; lastSyncerHeartbeatTime?: string;
    syncedResources?: { group?: string; resource: string; identityHash?: string; state?: string; versions?: string[] }[];
    virtualWorkspaces?: { syncerURL: string; upsyncerURL: string }[]; tunnelWorkspaces?: { url: string }[];
  };
}

/** The fields of a Location. */
export interface Location extends KubeObject {
  spec?: { resource?: GroupVersionResource; instanceSelector?: LabelSelectorV1 | null; description?: string };
  status?: { instances?: number; availableInstances?: number };
}

/** `schedulingv1alpha1.GroupVersionResource`. */
export interface GroupVersionResource { group?: string; version?: string; resource?: string }

/** The fields of a Placement. */
export interface Placement extends KubeObject {
  spec?: {
    locationSelectors?: LabelSelectorV1[]; locationResource?: GroupVersionResource;
    namespaceSelector?: LabelSelectorV1 | null; locationWorkspace?: string;
  };
  status?: { phase?: string; selectedLocation?: { path: string; locationName: string }; conditions?: Condition[] };
}

/**
 * Whether a `metav1.LabelSelector` selects `labels`, as `metav1.LabelSelectorAsSelector`: a
 * missing selector selects nothing, an empty one everything; an invalid one selects nothing.
 */
export function selects(sel: LabelSelectorV1 | null | undefined, labels: Record<string, string> | undefined): boolean {
  if (!sel) return false;
  try { return matchesLabels(labelSelectorFromMetav1(sel), labels); } catch { return false; }
}

/** SyncTargets of `all` that a Location's `spec.instanceSelector` selects (kcp `LocationSyncTargets`). */
export function locationSyncTargets(all: readonly SyncTarget[], location: Location): SyncTarget[] {
  return all.filter((st) => selects(location.spec?.instanceSelector, st.metadata.labels));
}

/** Ready (condition `Ready` True) and schedulable SyncTargets (kcp `FilterReady`). */
export function filterReady(targets: readonly SyncTarget[]): SyncTarget[] {
  return targets.filter((st) => isTrue(st.status?.conditions, READY) && !st.spec?.unschedulable);
}

/** SyncTargets whose `spec.evictAfter` is unset or still ahead (kcp `FilterNonEvicting`). */
export function filterNonEvicting(targets: readonly SyncTarget[], now: number): SyncTarget[] {
  return targets.filter((st) => !st.spec?.evictAfter || now < Date.parse(st.spec.evictAfter));
}

/** Equal group/version/resource (a missing group is the core group ""). */
export function sameGVR(a: GroupVersionResource | undefined, b: GroupVersionResource | undefined): boolean {
  return (a?.group ?? '') === (b?.group ?? '') && (a?.version ?? '') === (b?.version ?? '') && (a?.resource ?? '') === (b?.resource ?? '');
}

/** SyncTarget keys of the `state.workload.kcp.io/<key>` labels (all values: kcp `getLocations(labels, false)`). */
export function stateKeys(labels: Record<string, string> | undefined): Set<string> {
  const out = new Set<string>();
  for (const k in labels) if (k.startsWith(RESOURCE_STATE_LABEL_PREFIX)) out.add(k.slice(RESOURCE_STATE_LABEL_PREFIX.length));
  return out;
}

/** Key → RFC 3339 time of the `deletion.internal.workload.kcp.io/<key>` annotations (kcp `getDeletingLocations`). */
export function deletingKeys(annotations: Record<string, string> | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const k in annotations) if (k.startsWith(DELETION_TIMESTAMP_ANNOTATION_PREFIX)) out.set(k.slice(DELETION_TIMESTAMP_ANNOTATION_PREFIX.length), annotations[k]!);
  return out;
}

/** The scheduling state of an object as one comparable string: its state labels and deletion annotations. */
export function schedulingDigest(labels: Record<string, string> | undefined, annotations: Record<string, string> | undefined): string {
  const parts: string[] = [];
  for (const k in labels) if (k.startsWith(RESOURCE_STATE_LABEL_PREFIX)) parts.push(`${k}=${labels[k]}`);
  for (const k in annotations) if (k.startsWith(DELETION_TIMESTAMP_ANNOTATION_PREFIX)) parts.push(`${k}=${annotations[k]}`);
  return parts.sort().join(',');
}

/** Splits a controller key `<cluster>|<name>` (or `<cluster>|<namespace>`). */
export function splitClusterKey(key: string): [cluster: string, name: string] {
  const i = key.indexOf('|');
  return [key.slice(0, i), key.slice(i + 1)];
}

/**
 * Writes what a reconcile changed, as kcp's committer: the object (metadata and spec) when they
 * changed, then `status` through the status subresource when it changed. Each write carries the
 * resourceVersion it was computed from, so a concurrent change fails it with 409 Conflict and the
 * key is reconciled again (level-triggered). Nothing is written when nothing changed.
 */
export async function commit(store: Store, scope: RequestScope, old: KubeObject, next: KubeObject): Promise<void> {
  const { status: oldStatus, ...oldRest } = old;
  const { status: newStatus, ...newRest } = next;
  let base: KubeObject = old;
  if (!jsonEqual(oldRest, newRest)) base = JSON.parse((await store.update(scope, old.metadata.name!, next)).json) as KubeObject;
  if (!jsonEqual(oldStatus ?? {}, newStatus ?? {})) await store.update(scope, old.metadata.name!, { ...base, status: newStatus }, 'status');
}

/** A deep copy of an object read from the cache, to be changed by a reconcile. */
export function copyOf<T extends KubeObject>(o: KubeObject): T {
  return structuredClone(o) as T;
}
