/**
 * First-start content of a shard, applied idempotently on every start (create if missing):
 * the `root` and `system:admin` logical clusters, namespace `default` in root, and kcp's
 * bootstrap RBAC in `system:admin` (kcp: pkg/server/bootstrap, config/system-admin), which
 * applies in every logical cluster: `system:kcp:admin` and `system:masters` are cluster-admins,
 * every authenticated user may use discovery and access reviews.
 */
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import { SYSTEM_ADMIN_CLUSTER } from '../auth/authorizer.js';
import { OWNER_ANNOTATION } from '../tenancy/admission.js';
import { TYPE_ANNOTATION } from '../tenancy/index.js';
import { PATH_ANNOTATION, ROOT } from '../tenancy/paths.js';

const RBAC = 'rbac.authorization.k8s.io/v1';

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

/** Annotation values of the root logical cluster (kcp config/root-phase0/logicalcluster.yaml). */
const ROOT_ANNOTATIONS = {
  [TYPE_ANNOTATION]: 'root:root',
  [OWNER_ANNOTATION]: '{"username":"system:kcp-bootstrapper"}',
  [PATH_ANNOTATION]: ROOT,
};

/** kcp's root WorkspaceTypes (config/root/workspacetype-*.yaml, with the workspace-types battery). */
const ROOT_WORKSPACE_TYPES: Array<[string, object]> = [
  ['root', { defaultChildWorkspaceType: { name: 'organization', path: 'root' }, limitAllowedParents: { none: true }, extend: { with: [{ name: 'universal', path: 'root' }] } }],
  ['universal', { initializer: true }],
  ['organization', {
    extend: { with: [{ name: 'universal', path: 'root' }] }, defaultChildWorkspaceType: { name: 'universal', path: 'root' },
    limitAllowedChildren: { types: [{ name: 'universal', path: 'root' }] }, limitAllowedParents: { types: [{ name: 'root', path: 'root' }] },
  }],
  ['team', {
    extend: { with: [{ name: 'universal', path: 'root' }] }, defaultChildWorkspaceType: { name: 'universal', path: 'root' },
    limitAllowedParents: { types: [{ name: 'organization', path: 'root' }, { name: 'team', path: 'root' }] },
  }],
  ['home', { extend: { with: [{ name: 'universal', path: 'root' }] }, defaultChildWorkspaceType: { name: 'universal', path: 'root' }, limitAllowedParents: { none: true } }],
];

/** URLs of the running shard, recorded in its `Shard` object, and its labels. */
export interface ShardURLs { name: string; baseURL: string; externalURL: string; virtualWorkspaceURL: string; labels?: Record<string, string> }

/** The `core.kcp.io/v1alpha1 Shard` object of a shard. */
export function shardObject(shard: ShardURLs): KubeObject {
  return {
    apiVersion: 'core.kcp.io/v1alpha1', kind: 'Shard',
    metadata: { name: shard.name, ...(shard.labels && Object.keys(shard.labels).length ? { labels: shard.labels } : {}) },
    spec: { baseURL: shard.baseURL, externalURL: shard.externalURL, virtualWorkspaceURL: shard.virtualWorkspaceURL },
  };
}

/** Whether a stored Shard object differs from what the shard would register (spec or labels). */
export function shardObjectDiffers(current: KubeObject, wanted: KubeObject): boolean {
  return JSON.stringify(current.spec) !== JSON.stringify(wanted.spec) || JSON.stringify(current.metadata.labels ?? {}) !== JSON.stringify(wanted.metadata.labels ?? {});
}

/**
 * Creates what a shard needs, ignoring objects that already exist: the `root` and
 * `system:admin` logical clusters (phase Ready), kcp's bootstrap policy in `system:admin`
 * (pkg/authorization/bootstrap/policy.go and the kube defaults kcp serves), the root
 * workspace's content (config/root: namespace `default`, WorkspaceTypes, workspace access for
 * `system:authenticated`, `use` of the universal/organization/team types, tenancy reader, home
 * workspace creation) and the `Shard` object of this shard (kept up to date on every start).
 */
export async function bootstrapShard(stores: (plural: string, group: string) => Store, masters: (cluster: string, ns?: string) => RequestScope, shard: ShardURLs, opts: { root: boolean } = { root: true }): Promise<void> {
  // Every object is created only when missing. The watch cache has synced from Redis before
  // the bootstrap runs, so a restart finds them all there and writes nothing; a create that
  // races another process's still answers 409, which is fine. Objects that do not depend on each
  // other are written concurrently: their transactions share Redis's fsyncs (AOF, fsync always).
  const ensure = async (store: Store, scope: RequestScope, obj: KubeObject) => {
    if (store.cachedEntry(scope, obj.metadata.name!)) return;
    try { await store.create(scope, obj); } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  };
  const ensureAll = (store: Store, scope: RequestScope, objs: KubeObject[]) => Promise.all(objs.map((o) => ensure(store, scope, o)));
  const lc = stores('logicalclusters', 'core.kcp.io');
  // Every shard has its own system:admin (the bootstrap policy applies to its logical clusters);
  // root and its content live on the root shard only.
  const clusters = opts.root ? [[ROOT, ROOT_ANNOTATIONS], [SYSTEM_ADMIN_CLUSTER, {}]] as const : [[SYSTEM_ADMIN_CLUSTER, {}]] as const;
  await Promise.all(clusters.map(async ([cluster, annotations]) => {
    const scope = masters(cluster);
    await ensure(lc, scope, { apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster', annotations: { ...annotations } }, spec: {} });
    const url = `${shard.externalURL}/clusters/${cluster}`;
    const ready = (o: KubeObject | undefined) => { const st = (o?.status ?? {}) as { phase?: string; URL?: string }; return st.phase === 'Ready' && st.URL === url; };
    if (ready(lc.getCached(scope, 'cluster'))) return;
    const current = lc.decode(await lc.get(scope, 'cluster'));
    if (!ready(current)) {
      await lc.update(scope, 'cluster', { ...current, status: { ...(current.status ?? {}), phase: 'Ready', URL: url } }, 'status');
    }
  }));

  const roles = stores('clusterroles', 'rbac.authorization.k8s.io');
  const bindings = stores('clusterrolebindings', 'rbac.authorization.k8s.io');
  const sys = masters(SYSTEM_ADMIN_CLUSTER);
  const all = { apiGroups: ['*'], resources: ['*'] };
  const writes: Promise<unknown>[] = [];
  writes.push(ensureAll(roles, sys, [
    clusterRole('cluster-admin', [{ ...all, verbs: ['*'] }, { nonResourceURLs: ['*'], verbs: ['*'] }]),
    clusterRole('admin', [{ ...all, verbs: [...readVerbs, ...writeVerbs] }]),
    clusterRole('edit', [{ ...all, verbs: [...readVerbs, ...writeVerbs] }]),
    clusterRole('view', [{ ...all, verbs: readVerbs }]),
    clusterRole('system:basic-user', [
      { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    ]),
    // kube's system:auth-delegator (delegated authentication and authorization, e.g. kube-rbac-proxy).
    clusterRole('system:auth-delegator', [
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]),
    clusterRole('system:discovery', [{ nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*', '/version', '/version/', '/healthz', '/livez', '/readyz'], verbs: ['get'] }]),
    clusterRole('system:kcp:workspace:access', [{ nonResourceURLs: ['/'], verbs: ['access'] }]),
    clusterRole('system:kcp:tenancy:reader', [
      { apiGroups: ['tenancy.kcp.io'], resources: ['workspaces', 'workspacetypes'], verbs: readVerbs },
      { apiGroups: ['core.kcp.io'], resources: ['logicalclusters'], verbs: readVerbs },
    ]),
    clusterRole('system:kcp:logical-cluster-admin', [
      { apiGroups: ['core.kcp.io'], resources: ['logicalclusters', 'logicalclusters/status'], verbs: ['*'] },
      { apiGroups: ['tenancy.kcp.io'], resources: ['workspaces'], verbs: ['delete', 'update', 'get'] },
    ]),
  ]));
  // A binding may name a role that does not exist yet (as in kube, RBAC resolves roles when it authorizes).
  writes.push(ensureAll(bindings, sys, [
    groupBinding('cluster-admin', 'cluster-admin', ['system:masters']),
    groupBinding('system:kcp:admin:cluster-admin', 'cluster-admin', ['system:kcp:admin']),
    groupBinding('system:basic-user', 'system:basic-user', ['system:authenticated']),
    groupBinding('system:discovery', 'system:discovery', ['system:authenticated']),
    groupBinding('system:kcp:logical-cluster-admin', 'system:kcp:logical-cluster-admin', ['system:kcp:logical-cluster-admin']),
  ]));

  if (opts.root) {
    const root = masters(ROOT);
    writes.push(ensure(stores('namespaces', ''), root, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }));
    writes.push(ensureAll(stores('workspacetypes', 'tenancy.kcp.io'), root, ROOT_WORKSPACE_TYPES.map(([name, spec]) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name }, spec }))));
    // The root workspace's RBAC (kcp config/root).
    writes.push(ensureAll(roles, root, [
      clusterRole('system:kcp:universal-workspacetype-use', [
        { apiGroups: ['tenancy.kcp.io'], resources: ['workspacetypes'], resourceNames: ['universal', 'organization', 'team'], verbs: ['use'] },
      ]),
      clusterRole('system:kcp:home-clusterworkspace-create', [
        { apiGroups: ['tenancy.kcp.io'], resources: ['workspaces'], resourceNames: ['~'], verbs: ['get', 'create'] },
      ]),
    ]));
    writes.push(ensureAll(bindings, root, [
      groupBinding('system:kcp:tenancy:authenticated:access', 'system:kcp:workspace:access', ['system:authenticated']),
      groupBinding('system:kcp:authenticated:universal-workspacetype-use', 'system:kcp:universal-workspacetype-use', ['system:authenticated']),
      groupBinding('system:kcp:authenticated:tenancy:reader', 'system:kcp:tenancy:reader', ['system:authenticated']),
      groupBinding('system:kcp:configured-group:home-clusterworkspace-create', 'system:kcp:home-clusterworkspace-create', ['system:authenticated']),
    ]));
    // This shard, as kcp registers it in root (core.kcp.io/v1alpha1 Shard).
    writes.push((async () => {
      const shards = stores('shards', 'core.kcp.io');
      const wanted = shardObject(shard);
      const cached = shards.getCached(root, shard.name);
      if (cached && !shardObjectDiffers(cached, wanted)) return;
      await ensure(shards, root, wanted);
      const current = shards.decode(await shards.get(root, shard.name));
      if (shardObjectDiffers(current, wanted)) await shards.update(root, shard.name, { ...current, metadata: { ...current.metadata, labels: wanted.metadata.labels }, spec: wanted.spec });
    })());
  }
  // Settled all before the first failure is thrown: no write is left running behind the caller.
  const failed = (await Promise.allSettled(writes)).find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
