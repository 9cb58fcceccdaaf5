/**
 * Namespace lifecycle controller (kube's namespace controller,
 * k8s.io/kubernetes/pkg/controller/namespace): when a Namespace has a deletionTimestamp, delete
 * every namespaced object in it; once none is left, remove the `kubernetes` finalizer through
 * `/finalize`, which completes the Namespace's deletion. Objects held by their own finalizers
 * keep the namespace Terminating until they go.
 *
 * Keys are `<cluster>|<namespace name>`.
 */
import { isStatus } from '../../apimachinery/errors.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { WatchCache } from '../../storage/watchcache.js';
import { deleteAllOf, getIfExists, type ReconcileResult } from '../runtime.js';

/** Dependencies of the reconciler, as plain functions and values (tested without mocks). */
export interface NamespaceReconcilerDeps {
  namespaces: Store;
  /** Stores of every namespaced resource of a logical cluster, one per storage location. */
  namespacedStores: (cluster: string) => Store[];
  cache: WatchCache;
  /** Identity the controller acts as. */
  scope: (cluster: string, namespace?: string) => RequestScope;
}

/** Group/resource of namespaces in the watch cache. */
export const NAMESPACES_GR = 'core/namespaces';

/** Splits `<cluster>|<name>`. */
export function splitKey(key: string): [string, string] {
  const i = key.lastIndexOf('|');
  return [key.slice(0, i), key.slice(i + 1)];
}

/** Reconciles one namespace. */
export function namespaceReconciler(deps: NamespaceReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const ns = await getIfExists(deps.namespaces, deps.scope(cluster), name);
    if (!ns?.metadata.deletionTimestamp) return;
    const finalizers = ((ns.spec as { finalizers?: string[] } | undefined)?.finalizers) ?? [];
    if (!finalizers.includes('kubernetes')) return;
    // Every namespaced object, at one consistent point, in as few transactions as it takes.
    const remaining = await deleteAllOf(deps.namespacedStores(cluster), deps.scope(cluster, name));
    if (remaining > 0) return { requeueAfterMs: 1000 };
    const next = { ...ns, spec: { ...(ns.spec as object), finalizers: finalizers.filter((f) => f !== 'kubernetes') } };
    try {
      await deps.namespaces.update(deps.scope(cluster), name, next, 'finalize');
    } catch (err) {
      if (isStatus(err, 404)) return;
      throw err;
    }
  };
}
