/**
 * First-start content of a shard, applied idempotently on every start (create if missing):
 * the `root` and `system:admin` logical clusters, namespace `default` in root, and kcp's
 * bootstrap RBAC in `system:admin` (kcp: pkg/server/bootstrap, config/system-admin), which
 * applies in every logical cluster: `system:kcp:admin` and `system:masters` are cluster-admins,
 * every authenticated user may use discovery and access reviews.
 */
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import { SYSTEM_ADMIN_CLUSTER } from '../auth/authorizer.js';

const RBAC = 'rbac.authorization.k8s.io/v1';
/** The root logical cluster. */
export const ROOT_CLUSTER = 'root';

function clusterRole(name: string, rules: object[]): KubeObject {
  return { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } }, rules };
}

function groupBinding(name: string, role: string, groups: string[]): KubeObject {
  return {
    apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
  };
}

const readVerbs = ['get', 'list', 'watch'];
const writeVerbs = ['create', 'delete', 'deletecollection', 'patch', 'update'];

/** The logical cluster object that makes a logical cluster exist. */
export function logicalClusterObject(url: string): KubeObject {
  return {
    apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster' },
    spec: { initializers: [] }, status: { phase: 'Ready', URL: url },
  };
}

/** Creates what a shard needs, ignoring objects that already exist. */
export async function bootstrapShard(stores: (plural: string, group: string) => Store, masters: (cluster: string, ns?: string) => RequestScope, baseUrl: string): Promise<void> {
  const ensure = async (store: Store, scope: RequestScope, obj: KubeObject) => {
    try { await store.create(scope, obj); } catch (err) {
      if (!(err instanceof StatusError && err.code === 409)) throw err;
    }
  };
  const lc = stores('logicalclusters', 'core.kcp.io');
  await ensure(lc, masters(ROOT_CLUSTER), logicalClusterObject(`${baseUrl}/clusters/${ROOT_CLUSTER}`));
  await ensure(lc, masters(SYSTEM_ADMIN_CLUSTER), logicalClusterObject(`${baseUrl}/clusters/${SYSTEM_ADMIN_CLUSTER}`));
  await ensure(stores('namespaces', ''), masters(ROOT_CLUSTER), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });

  const roles = stores('clusterroles', 'rbac.authorization.k8s.io');
  const bindings = stores('clusterrolebindings', 'rbac.authorization.k8s.io');
  const sys = masters(SYSTEM_ADMIN_CLUSTER);
  const all = { apiGroups: ['*'], resources: ['*'] };
  for (const role of [
    clusterRole('cluster-admin', [{ ...all, verbs: ['*'] }, { nonResourceURLs: ['*'], verbs: ['*'] }]),
    clusterRole('admin', [{ ...all, verbs: [...readVerbs, ...writeVerbs] }]),
    clusterRole('edit', [{ ...all, verbs: [...readVerbs, ...writeVerbs] }]),
    clusterRole('view', [{ ...all, verbs: readVerbs }]),
    clusterRole('system:basic-user', [{ apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] }]),
    clusterRole('system:discovery', [{ nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*', '/version', '/version/', '/healthz', '/livez', '/readyz'], verbs: ['get'] }]),
  ]) await ensure(roles, sys, role);
  for (const b of [
    groupBinding('cluster-admin', 'cluster-admin', ['system:masters']),
    groupBinding('system:kcp:admin:cluster-admin', 'cluster-admin', ['system:kcp:admin']),
    groupBinding('system:basic-user', 'system:basic-user', ['system:authenticated']),
    groupBinding('system:discovery', 'system:discovery', ['system:authenticated']),
  ]) await ensure(bindings, sys, b);
}
