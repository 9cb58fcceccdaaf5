/**
 * The names that tie an upstream object to the SyncTargets it is scheduled to: kcp TMC's label,
 * annotation and finalizer prefixes and the SyncTarget key (github kcp-dev/contrib-tmc
 * apis/workload/v1alpha1 types.go and helpers.go). Scheduling, the syncer virtual workspace and the
 * syncer agree on these, and so do kcp's own TMC clients.
 */
import { createHash } from 'node:crypto';

/** `state.workload.kcp.io/<sync-target-key>`: the syncer state of an object per SyncTarget ("" pending, "Sync", "Upsync"). */
export const RESOURCE_STATE_LABEL_PREFIX = 'state.workload.kcp.io/';
/** `deletion.internal.workload.kcp.io/<sync-target-key>`: RFC 3339 time the object's removal from that SyncTarget began. */
export const DELETION_TIMESTAMP_ANNOTATION_PREFIX = 'deletion.internal.workload.kcp.io/';
/** `finalizers.workload.kcp.io/<sync-target-key>`: comma-separated finalizers that block removal from that SyncTarget. */
export const SYNC_TARGET_FINALIZERS_ANNOTATION_PREFIX = 'finalizers.workload.kcp.io/';
/** `experimental.status.workload.kcp.io/<sync-target-key>`: JSON status of the downstream copy per SyncTarget. */
export const STATUS_ANNOTATION_PREFIX = 'experimental.status.workload.kcp.io/';
/** `diff.syncer.internal.kcp.io/<sync-target-key>`: field values as the syncer reported them for that SyncTarget. */
export const SYNCER_VIEW_ANNOTATION_PREFIX = 'diff.syncer.internal.kcp.io/';
/**
 * `experimental.spec-diff.workload.kcp.io/<sync-target-key>`: a JSON Patch (RFC 6902) whose root is
 * the object's `spec`, applied to the copy the syncer of that SyncTarget writes downstream (how a
 * Deployment's replicas are divided among SyncTargets). Source: contrib-tmc ClusterSpecDiffAnnotationPrefix.
 */
export const SPEC_DIFF_ANNOTATION_PREFIX = 'experimental.spec-diff.workload.kcp.io/';
/** The finalizer prefix the syncer holds on an upstream object while a downstream copy exists (`workload.kcp.io/syncer-<key>`). */
export const SYNCER_FINALIZER_PREFIX = 'workload.kcp.io/syncer-';

/** The values of the resource state label (contrib-tmc ResourceState). */
export type ResourceState = '' | 'Sync' | 'Upsync';

const BASE62 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/**
 * The key that names a SyncTarget in labels, annotations and finalizers: SHA-224 of
 * `<logical cluster>:<sync target name>`, written in base 62 as Go's `big.Int.Text(62)` (digits,
 * then lower case, then upper case; no leading zeros). Up to 38 characters, so
 * `state.workload.kcp.io/<key>` is a valid label key. Source: contrib-tmc ToSyncTargetKey.
 *
 * @param cluster the logical cluster name (or path) of the SyncTarget's workspace
 * @param name the SyncTarget's name
 */
export function syncTargetKey(cluster: string, name: string): string {
  let n = BigInt(`0x${createHash('sha224').update(`${cluster}:${name}`).digest('hex')}`);
  if (n === 0n) return '0';
  let out = '';
  while (n > 0n) { out = BASE62[Number(n % 62n)] + out; n /= 62n; }
  return out;
}
