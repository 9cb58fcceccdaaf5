/**
 * Admission of LogicalCluster objects (kcp pkg/admission/logicalcluster, reduced): only
 * system:masters and `system:kcp:logical-cluster-admin` create them, and every LogicalCluster
 * carries the deletion finalizer, so deleting it always deletes its content first.
 */
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { AdmissionAttributes } from '../admission/plugins.js';
import { SYSTEM_MASTERS } from '../auth/authorizer.js';

/** Finalizer that holds a LogicalCluster until its content is deleted (kcp `LogicalClusterDeletionFinalizer`). */
export const DELETION_FINALIZER = 'core.kcp.io/logicalcluster-deletion';
/** Group allowed to manage LogicalClusters (kcp bootstrap `SystemLogicalClusterAdmin`). */
export const LOGICAL_CLUSTER_ADMIN_GROUP = 'system:kcp:logical-cluster-admin';

/** Whether a label or annotation key is in a kcp-reserved domain (`kcp.io/path`, `internal.tenancy.kcp.io/type`, …). */
function reservedKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash).toLowerCase();
  return domain === 'kcp.io' || domain.endsWith('.kcp.io');
}

/** The first kcp-reserved key whose value differs between two label or annotation maps. */
function changedReservedKey(before: unknown, after: unknown): string | undefined {
  const map = (m: unknown): Record<string, unknown> => (typeof m === 'object' && m !== null && !Array.isArray(m) ? m as Record<string, unknown> : {});
  const b = map(before); const a = map(after);
  return [...new Set([...Object.keys(b), ...Object.keys(a)])].find((k) => reservedKey(k) && b[k] !== a[k]);
}

/**
 * The `admit` hook of LogicalCluster. Throws 403 for a create by anyone else, and for an update
 * by anyone else that changes a kcp-reserved label or annotation (kcp's reservedmetadata
 * admission): `kcp.io/path` maps the workspace path to the logical cluster, so an admin of one
 * workspace could otherwise take over another workspace's path.
 */
export function logicalClusterAdmission(obj: KubeObject, attrs: AdmissionAttributes): void {
  const privileged = attrs.user.groups.includes(SYSTEM_MASTERS) || attrs.user.groups.includes(LOGICAL_CLUSTER_ADMIN_GROUP);
  if (attrs.operation === 'update') {
    if (privileged || !attrs.old) return;
    const key = changedReservedKey(attrs.old.metadata.annotations, obj.metadata.annotations) ?? changedReservedKey(attrs.old.metadata.labels, obj.metadata.labels);
    if (key !== undefined) {
      throw new StatusError(403, 'Forbidden', `logicalclusters.core.kcp.io "${obj.metadata.name ?? ''}" is forbidden: modification of reserved metadata "${key}" is not allowed`,
        { name: obj.metadata.name, group: 'core.kcp.io', kind: 'logicalclusters' });
    }
    return;
  }
  if (attrs.operation !== 'create') return;
  if (!privileged) {
    throw new StatusError(403, 'Forbidden', `logicalclusters.core.kcp.io "${obj.metadata.name ?? ''}" is forbidden: LogicalClusters can only be created by system privileged users`,
      { name: obj.metadata.name, group: 'core.kcp.io', kind: 'logicalclusters' });
  }
  const f = (obj.metadata.finalizers ??= []);
  if (!Array.isArray(f)) return; // wrongly typed: validation answers 422
  if (!f.includes(DELETION_FINALIZER)) f.push(DELETION_FINALIZER);
}
