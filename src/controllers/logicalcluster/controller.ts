/**
 * LogicalCluster lifecycle (kcp pkg/reconciler/core/logicalcluster, tenancy/logicalcluster,
 * tenancy/bootstrap and core/logicalclusterdeletion, folded into one level-triggered reconciler):
 *
 * - `Scheduling` → the owner (`spec.createdBy`, or the `experimental.tenancy.kcp.io/owner`
 *   annotation) gets the `workspace-admin` ClusterRoleBinding to `cluster-admin`; the phase
 *   becomes `Initializing` with `status.initializers` copied from `spec.initializers`;
 * - `Initializing` → the initializers this server implements run (`root:universal` creates the
 *   `default` namespace) and remove themselves; other initializers are left to their
 *   controllers, which remove theirs through `/status`; with none left the phase is `Ready`;
 * - a LogicalCluster whose owning Workspace is gone is deleted;
 * - deletion → once `status.terminators` is empty (phase `Terminating` until then; terminator
 *   controllers remove their names through `/status`), every object of the logical cluster is
 *   deleted (Workspaces in it cascade to their own logical clusters), then the
 *   `core.kcp.io/logicalcluster-deletion` finalizer is removed and the LogicalCluster is gone.
 *
 * Scheduling→Ready happens in one status write when only built-in initializers are present.
 * Keys are `<logical cluster>|cluster`.
 */
import { isStatus } from '../../apimachinery/errors.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { Store, type RequestScope, type TransactionItem } from '../../registry/store.js';
import { OWNER_ANNOTATION } from '../../tenancy/admission.js';
import { DELETION_FINALIZER } from '../../tenancy/logicalclusters.js';
import { PATH_ANNOTATION, isValidPath } from '../../tenancy/paths.js';
import { deleteAllOf, getIfExists, type ReconcileResult } from '../runtime.js';
import { splitKey } from '../namespace/controller.js';

export { DELETION_FINALIZER };
/** Name of the owner's ClusterRoleBinding in a new logical cluster (kcp). */
export const WORKSPACE_ADMIN_BINDING = 'workspace-admin';

/** An object a built-in initializer puts into a new logical cluster. */
export interface InitialObject {
  store: Store;
  /** Namespace of a namespaced object. */
  namespace?: string;
  obj: KubeObject;
}

/**
 * An initializer implemented in-process: the objects it puts into a logical cluster. They are
 * created atomically (objects that exist are left alone) together with the owner's binding —
 * and, for a new workspace, with the LogicalCluster itself.
 */
export type Initializer = (cluster: string) => InitialObject[];

/** Dependencies of the reconciler, as plain functions and values. */
export interface LogicalClusterReconcilerDeps {
  logicalClusters: Store;
  clusterRoleBindings: Store;
  /** Every stored resource of a logical cluster, one store per storage location. */
  storesOf(cluster: string): Store[];
  /** Built-in initializers by name (`root:universal`). */
  initializers: Record<string, Initializer>;
  /** Identity the controller acts as. */
  scope(cluster: string, namespace?: string): RequestScope;
  /** The URL clients reach this shard at (`https://host:port`); `status.URL` is below it. */
  externalURL(): string;
  /** Called when this controller moved a workspace-owned LogicalCluster to another phase. */
  ownerProgressed?(owner: { cluster: string; name: string }): void;
  /**
   * The namespace controller's reconciler (key `<cluster>|<namespace>`): run on the terminating
   * namespaces of a deleting logical cluster right after their content was deleted, so that
   * they are finalized in the same pass instead of one queue round trip and one more pass of
   * this controller later.
   */
  finalizeNamespace?(key: string): Promise<unknown>;
  /** Whether the owner a LogicalCluster names (a Workspace) still exists with that uid. */
  ownerExists(owner: { cluster: string; name: string; uid: string; resource: string }): boolean;
}

interface LCSpec { initializers?: string[]; terminators?: string[]; createdBy?: { username?: string } }

function ownerName(lc: KubeObject): string | undefined {
  const spec = (lc.spec ?? {}) as LCSpec;
  if (spec.createdBy?.username) return spec.createdBy.username;
  const raw = lc.metadata.annotations?.[OWNER_ANNOTATION];
  if (!raw) return undefined;
  try { return (JSON.parse(raw) as { username?: string }).username || undefined; } catch { return undefined; }
}

/** Status of a LogicalCluster as the reconciler maintains it. */
export interface LogicalClusterStatus { phase?: string; initializers?: string[]; terminators?: string[]; conditions?: unknown[]; URL?: string }

/** A LogicalCluster reconciler: by key (the controller's), or on an object in hand. */
export interface LogicalClusterReconciler {
  (key: string): Promise<ReconcileResult | void>;
  /**
   * Moves a non-deleting LogicalCluster through Scheduling → Initializing → Ready as far as the
   * built-in initializers allow; returns its resulting status (undefined when it was not
   * written, e.g. on a conflict — its next event reconciles it again). Used by the workspace
   * controller right after creating a LogicalCluster, which saves a queue round trip per
   * workspace.
   */
  initialize(cluster: string, lc: KubeObject): Promise<LogicalClusterStatus | undefined>;
  /**
   * For a LogicalCluster about to be created: the status to create it with (`Ready`, or
   * `Initializing` with the initializers left to other controllers) and its initial content (the
   * owner's workspace-admin binding, the built-in initializers' objects), to be written together
   * with it in one atomic transaction (`Store.commit`). Lets the workspace controller create a
   * logical cluster and everything it starts with in one write.
   */
  prepare(cluster: string, lc: KubeObject): { status: LogicalClusterStatus; content: TransactionItem[] };
}

/** Reconciles one LogicalCluster. */
export function logicalClusterReconciler(deps: LogicalClusterReconcilerDeps): LogicalClusterReconciler {
  /**
   * The objects to create for `initializers` (those implemented here) — preceded, when `lc` is
   * given (Scheduling → Initializing), by its owner's workspace-admin binding — and the
   * initializers left to other controllers.
   */
  const content = (cluster: string, lc: KubeObject | undefined, initializers: string[]): { items: TransactionItem[]; pending: string[] } => {
    const objects: InitialObject[] = [];
    const owner = lc && ownerName(lc);
    if (owner) {
      objects.push({
        store: deps.clusterRoleBindings,
        obj: {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: WORKSPACE_ADMIN_BINDING },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: owner }],
        },
      });
    }
    const pending: string[] = [];
    for (const name of initializers) {
      const init = deps.initializers[name];
      if (init) objects.push(...init(cluster)); else pending.push(name);
    }
    // Created if absent: a retried initialization finds some of them already there.
    return { items: objects.map((o) => ({ store: o.store, scope: deps.scope(cluster, o.namespace), create: o.obj, ifAbsent: true })), pending };
  };
  // The URL names the workspace by its path, unless the path cannot appear in a URL: a home of a
  // user whose name is no DNS label (`user:alice@example.com`) is reached by its cluster name.
  const statusURL = (cluster: string, lc: KubeObject) => {
    const path = lc.metadata.annotations?.[PATH_ANNOTATION];
    return `${deps.externalURL()}/clusters/${path && isValidPath(path) ? path : cluster}`;
  };
  /** The status of a LogicalCluster leaving Scheduling, with the initializers still pending. */
  const initialStatus = (cluster: string, lc: KubeObject, pending: string[]): LogicalClusterStatus => {
    const status: LogicalClusterStatus = { ...(lc.status as LogicalClusterStatus | undefined), phase: pending.length ? 'Initializing' : 'Ready', URL: statusURL(cluster, lc), initializers: pending };
    const terminators = (lc.spec as LCSpec | undefined)?.terminators;
    if (terminators?.length) status.terminators = [...terminators];
    return status;
  };
  const initialize = async (cluster: string, lc: KubeObject): Promise<LogicalClusterStatus | undefined> => {
    const before = (lc.status ?? {}) as LogicalClusterStatus;
    const phase = before.phase ?? 'Scheduling';
    if (phase !== 'Scheduling' && phase !== 'Initializing') return before;
    const scheduling = phase === 'Scheduling';
    const { items, pending } = content(cluster, scheduling ? lc : undefined, scheduling ? (lc.spec as LCSpec | undefined)?.initializers ?? [] : before.initializers ?? []);
    await Store.commit(items);
    const status = scheduling ? initialStatus(cluster, lc, pending) : { ...before, initializers: pending, phase: pending.length ? 'Initializing' : 'Ready' };
    if (before.phase === status.phase && JSON.stringify(before.initializers ?? []) === JSON.stringify(pending)) return status;
    try {
      const res = await deps.logicalClusters.update(deps.scope(cluster), 'cluster', { ...lc, status }, 'status');
      return (JSON.parse(res.json) as KubeObject).status as LogicalClusterStatus;
    } catch (err) {
      if (isStatus(err, 409, 404)) return undefined;
      throw err;
    }
  };
  const reconcile = async (key: string): Promise<ReconcileResult | void> => {
    const [cluster] = splitKey(key);
    const scope = deps.scope(cluster);
    const lc = await getIfExists(deps.logicalClusters, scope, 'cluster');
    if (!lc) return;
    if (lc.metadata.deletionTimestamp) return deleteContent(deps, cluster, lc);
    // A Workspace deleted before it recorded its logical cluster leaves it without owner.
    const owner = (lc.spec as { owner?: { cluster: string; name: string; uid: string; resource: string } } | undefined)?.owner;
    if (owner?.resource === 'workspaces' && !deps.ownerExists(owner)) {
      await deps.logicalClusters.delete(scope, 'cluster').catch((err) => { if (!isStatus(err, 404)) throw err; });
      return;
    }
    const before = (lc.status as LogicalClusterStatus | undefined)?.phase ?? 'Scheduling';
    const after = await initialize(cluster, lc);
    // A concurrent change (an external initializer finished): reconcile again from fresh state.
    if (!after) return { requeueAfterMs: 100 };
    if (after.phase !== before && owner?.resource === 'workspaces') deps.ownerProgressed?.(owner);
  };
  return Object.assign(reconcile, {
    initialize,
    prepare: (cluster: string, lc: KubeObject): { status: LogicalClusterStatus; content: TransactionItem[] } => {
      const { items, pending } = content(cluster, lc, (lc.spec as LCSpec | undefined)?.initializers ?? []);
      return { status: initialStatus(cluster, lc, pending), content: items };
    },
  });
}

/** Deletes everything in a deleting logical cluster, then releases its LogicalCluster. */
async function deleteContent(deps: LogicalClusterReconcilerDeps, cluster: string, lc: KubeObject): Promise<ReconcileResult | void> {
  const finalizers = lc.metadata.finalizers ?? [];
  if (!finalizers.includes(DELETION_FINALIZER)) return;
  const scope = deps.scope(cluster);
  // Terminators first (kcp): each removes its name from status.terminators when done; their
  // /status writes bring this key back.
  const status = (lc.status ?? {}) as LogicalClusterStatus;
  if (status.terminators?.length) {
    if (status.phase !== 'Terminating') {
      await deps.logicalClusters.update(scope, 'cluster', { ...lc, status: { ...status, phase: 'Terminating' } }, 'status').catch((err) => {
        if (!isStatus(err, 409, 404)) throw err;
      });
    }
    return;
  }
  // Everything but the LogicalCluster, at one consistent point, in as few transactions as it takes.
  const stores = deps.storesOf(cluster).filter((s) => s.groupResource !== 'core.kcp.io/logicalclusters');
  let remaining = await deleteAllOf(stores, scope);
  const namespaces = stores.find((s) => s.groupResource === 'core/namespaces');
  if (remaining > 0 && namespaces && deps.finalizeNamespace) {
    // Namespaces now Terminating whose content went in the same pass: finalized here, as their
    // controller would on their event (it finds them gone or does the same).
    await namespaces.syncCache();
    const terminating = namespaces.listCached(scope).filter((e) => e.json.includes('"deletionTimestamp"'));
    for (const e of terminating) await deps.finalizeNamespace(`${cluster}|${e.name}`);
    if (terminating.length) remaining = await deleteAllOf(stores, scope);
  }
  // Objects held by finalizers (namespaces, workspaces with logical clusters of their own) go
  // on their own; their deletion events requeue this key, the delay is a safety net.
  if (remaining > 0) return { requeueAfterMs: 2000 };
  try {
    await deps.logicalClusters.update(scope, 'cluster', { ...lc, metadata: { ...lc.metadata, finalizers: finalizers.filter((f) => f !== DELETION_FINALIZER) } });
  } catch (err) {
    if (isStatus(err, 404)) return;
    throw err;
  }
}
