/**
 * ServiceAccounts controller (kube's serviceaccounts controller,
 * k8s.io/kubernetes/pkg/controller/serviceaccount/serviceaccounts_controller.go): every active
 * namespace of every logical cluster has a ServiceAccount `default`. It is created when a
 * namespace appears and re-created when it is deleted while its namespace lives on.
 *
 * Keys are `<cluster>|<namespace name>`. Cheap by construction: the informers enqueue a namespace
 * only when the watch cache shows no `default` ServiceAccount in it, and a reconcile writes once
 * (a create) or not at all.
 */
import { isStatus } from '../../apimachinery/errors.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { WatchCache } from '../../storage/watchcache.js';
import { SERVICE_ACCOUNTS_GR } from '../../auth/serviceaccounts.js';
import { NAMESPACES_GR, splitKey } from '../namespace/controller.js';
import type { Controller, ReconcileResult } from '../runtime.js';
import { SettleQueue } from '../settle.js';

/** Name of the ServiceAccount every namespace gets. */
export const DEFAULT_SERVICE_ACCOUNT = 'default';

/** Dependencies of the reconciler, as plain functions and values (tested without mocks). */
export interface ServiceAccountReconcilerDeps {
  serviceAccounts: Store;
  /** Current objects (namespaces, ServiceAccounts). */
  cache: Pick<WatchCache, 'getEntry'>;
  /** Identity the controller acts as. */
  scope: (cluster: string, namespace?: string) => RequestScope;
  /** Logical clusters whose content is being deleted get nothing new (optional). */
  clusterDeleting?: (cluster: string) => boolean;
}

/** Whether a namespace's stored JSON shows it terminating (deletionTimestamp or phase). */
function terminating(json: string): boolean {
  return json.includes('"deletionTimestamp"') || json.includes('"phase":"Terminating"');
}

/**
 * Whether `default` is missing in an active namespace, read from the watch cache (what the
 * informers ask before enqueueing).
 */
export function needsDefaultServiceAccount(cache: Pick<WatchCache, 'getEntry'>, cluster: string, namespace: string): boolean {
  const ns = cache.getEntry(NAMESPACES_GR, cluster, '', namespace);
  if (!ns || terminating(ns.json)) return false;
  return cache.getEntry(SERVICE_ACCOUNTS_GR, cluster, namespace, DEFAULT_SERVICE_ACCOUNT) === undefined;
}

/** Reconciles one namespace: creates its `default` ServiceAccount when missing. */
export function serviceAccountReconciler(deps: ServiceAccountReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, namespace] = splitKey(key);
    if (deps.clusterDeleting?.(cluster)) return;
    if (!needsDefaultServiceAccount(deps.cache, cluster, namespace)) return;
    try {
      await deps.serviceAccounts.create(deps.scope(cluster, namespace), {
        apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace },
      });
    } catch (err) {
      // 409: it exists (the cache trailed); 404/403: the namespace is gone or terminating.
      if (isStatus(err, 409, 404, 403)) return;
      throw err;
    }
  };
}

/**
 * Feeds the controller from the watch cache: a namespace added (or found at start / after a
 * resync) without `default`, and a `default` ServiceAccount deleted from a live namespace,
 * enqueue `<cluster>|<namespace>`. A new namespace is looked at after `settleMs` (default 1 s),
 * not at once: whoever created it often creates its `default` ServiceAccount right after (the
 * `root:universal` initializer does), and then no queue job is needed. Returns the unsubscribe
 * function (which also drops pending looks).
 */
export function serviceAccountInformer(cache: WatchCache, controller: Pick<Controller, 'enqueue'>, settleMs = 1000): () => void {
  const enqueue = (cluster: string, namespace: string) => {
    if (needsDefaultServiceAccount(cache, cluster, namespace)) controller.enqueue(`${cluster}|${namespace}`).catch(() => undefined);
  };
  const later = new SettleQueue<{ cluster: string; namespace: string }>(settleMs, (n) => enqueue(n.cluster, n.namespace));
  const syncAll = () => { for (const e of cache.list(NAMESPACES_GR, '*')) enqueue(e.cluster, e.name); };
  const unsubscribe = cache.subscribe((ev) => {
    if (!ev) { syncAll(); return; }
    const e = ev.entry;
    if (e.groupResource === NAMESPACES_GR && ev.type === 'ADDED') later.add({ cluster: e.cluster, namespace: e.name });
    else if (e.groupResource === SERVICE_ACCOUNTS_GR && ev.type === 'DELETED' && e.name === DEFAULT_SERVICE_ACCOUNT) enqueue(e.cluster, e.namespace);
  });
  syncAll();
  return () => { unsubscribe(); later.clear(); };
}
