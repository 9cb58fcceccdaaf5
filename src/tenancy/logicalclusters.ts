/**
 * Admission of LogicalCluster objects (kcp pkg/admission/logicalcluster, reduced): only
 * system:masters and `system:kcp:logical-cluster-admin` create them, and every LogicalCluster
 * carries the deletion finalizer, so deleting it always deletes its content first.
 */
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { AdmissionAttributes } from '../apis/types.js';
import { SYSTEM_MASTERS } from '../auth/authorizer.js';

/** Finalizer that holds a LogicalCluster until its content is deleted (kcp `LogicalClusterDeletionFinalizer`). */
export const DELETION_FINALIZER = 'core.kcp.io/logicalcluster-deletion';
/** Group allowed to manage LogicalClusters (kcp bootstrap `SystemLogicalClusterAdmin`). */
export const LOGICAL_CLUSTER_ADMIN_GROUP = 'system:kcp:logical-cluster-admin';

/** The `admit` hook of LogicalCluster. Throws 403 for a create by anyone else. */
export function logicalClusterAdmission(obj: KubeObject, attrs: AdmissionAttributes): void {
  if (attrs.operation !== 'create') return;
  if (!attrs.user.groups.includes(SYSTEM_MASTERS) && !attrs.user.groups.includes(LOGICAL_CLUSTER_ADMIN_GROUP)) {
    throw new StatusError(403, 'Forbidden', `logicalclusters.core.kcp.io "${obj.metadata.name ?? ''}" is forbidden: LogicalClusters can only be created by system privileged users`,
      { name: obj.metadata.name, group: 'core.kcp.io', kind: 'logicalclusters' });
  }
  const f = (obj.metadata.finalizers ??= []);
  if (!Array.isArray(f)) return; // wrongly typed: validation answers 422
  if (!f.includes(DELETION_FINALIZER)) f.push(DELETION_FINALIZER);
}
