/**
 * Root CA publisher (kube's k8s.io/kubernetes pkg/controller/certificates/rootcacertpublisher,
 * which kcp runs cluster-aware as `kube-root-ca-configmap-controller`, pkg/server/controllers.go):
 * every active namespace of every logical cluster of the shard — system logical clusters too, as
 * kcp's wildcard informers see them — has a ConfigMap `kube-root-ca.crt` whose `data` is exactly
 * `{ "ca.crt": <CA bundle> }` and whose annotation `kubernetes.io/description` is set. It is
 * created when a namespace appears, re-created when deleted, put back when its data or
 * annotation is changed, and rewritten everywhere when the bundle changes (at start, every
 * namespace is looked at). Terminating namespaces get nothing (kube: the create's
 * NamespaceTerminating refusal is ignored).
 *
 * The bundle is the CA that issued the shard's serving certificate (docs/architecture.md,
 * "Root CA publisher"). Keys are `<cluster>|<namespace>`. The informer enqueues a namespace only
 * when the watch cache shows its ConfigMap missing or different (a substring test of the stored
 * JSON, no parse), so a workspace whose `default` namespace was born with its ConfigMap (the
 * `root:universal` initializer writes it in the same transaction) costs no queue job.
 */
import { isStatus } from '../../apimachinery/errors.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { isObj } from '../../apimachinery/objects.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { CacheEntry, WatchCache } from '../../storage/watchcache.js';
import { NAMESPACES_GR, splitKey } from '../namespace/controller.js';
import type { Controller, ReconcileResult } from '../runtime.js';
import { SettleQueue } from '../settle.js';

/** Name of the ConfigMap (kube's `RootCACertConfigMapName`). */
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
/** Its data key. */
export const ROOT_CA_KEY = 'ca.crt';
/** kube's `DescriptionAnnotation`. */
export const DESCRIPTION_ANNOTATION = 'kubernetes.io/description';
/** kube's `Description`, word for word. */
export const ROOT_CA_DESCRIPTION = 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. '
  + 'No other usage is guaranteed across distributions of Kubernetes clusters.';
/** Watch-cache group/resource of ConfigMaps. */
export const CONFIGMAPS_GR = 'core/configmaps';

/** The ConfigMap the publisher keeps in `namespace` for `bundle` (PEM). */
export function rootCAConfigMap(namespace: string, bundle: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: ROOT_CA_CONFIGMAP, namespace, annotations: { [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION } },
    data: { [ROOT_CA_KEY]: bundle },
  };
}

/** Whether a namespace's stored JSON shows it terminating (deletionTimestamp or phase). */
function terminating(json: string): boolean {
  return json.includes('"deletionTimestamp"') || json.includes('"phase":"Terminating"');
}

/**
 * Whether a stored ConfigMap is as the publisher keeps it: `data` exactly `{ca.crt: bundle}` and a
 * non-empty description annotation (kube's `reflect.DeepEqual(cm.Data, data) && len(annotation) > 0`).
 */
export function upToDate(cm: KubeObject, bundle: string): boolean {
  const data = cm.data;
  const annotation = cm.metadata.annotations?.[DESCRIPTION_ANNOTATION];
  return isObj(data) && Object.keys(data).length === 1 && data[ROOT_CA_KEY] === bundle && typeof annotation === 'string' && annotation.length > 0;
}

/**
 * The informer's cheap form of `upToDate` on stored JSON: true only when the JSON holds
 * `"data":{"ca.crt":<bundle>}` and a non-empty description (as the publisher writes them). A false
 * answer is checked exactly by the reconciler (a ConfigMap written otherwise, e.g. keys reordered,
 * costs one reconcile that writes nothing).
 */
function looksUpToDate(json: string, dataText: string): boolean {
  if (!json.includes(dataText)) return false;
  const at = json.indexOf(`"${DESCRIPTION_ANNOTATION}":"`);
  return at >= 0 && json[at + DESCRIPTION_ANNOTATION.length + 4] !== '"';
}

/** Dependencies of the reconciler, as plain functions and values (tested without mocks). */
export interface RootCAPublisherDeps {
  configMaps: Store;
  /** Current objects (namespaces, ConfigMaps). */
  cache: Pick<WatchCache, 'getEntry'>;
  /** Identity the controller acts as, in a logical cluster and namespace. */
  scope: (cluster: string, namespace?: string) => RequestScope;
  /** The CA bundle (PEM) to publish, read at each reconcile. */
  bundle: () => string;
  /** Logical clusters whose content is being deleted get nothing new (optional). */
  clusterDeleting?: (cluster: string) => boolean;
}

/**
 * Reconciles one namespace (kube's `syncNamespace`): creates the ConfigMap when missing, or
 * rewrites its `data` to `{ca.crt}` and sets the annotation when either differs. A namespace that
 * is gone or terminating is left alone; a ConfigMap a tenant made `immutable` (the update's 422)
 * is left as it is until it is deleted (a retry could never succeed). A 409 (the cache trailed)
 * throws, so the key is reconciled again.
 */
export function rootCAPublisherReconciler(deps: RootCAPublisherDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, namespace] = splitKey(key);
    if (deps.clusterDeleting?.(cluster)) return;
    const ns = deps.cache.getEntry(NAMESPACES_GR, cluster, '', namespace);
    if (!ns || terminating(ns.json)) return;
    const bundle = deps.bundle();
    const scope = deps.scope(cluster, namespace);
    const entry = deps.cache.getEntry(CONFIGMAPS_GR, cluster, namespace, ROOT_CA_CONFIGMAP);
    try {
      if (!entry) {
        await deps.configMaps.create(scope, rootCAConfigMap(namespace, bundle));
        return;
      }
      const cm = JSON.parse(entry.json) as KubeObject;
      if (upToDate(cm, bundle)) return;
      cm.data = { [ROOT_CA_KEY]: bundle };
      cm.metadata.annotations = { ...cm.metadata.annotations, [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION };
      await deps.configMaps.update(scope, ROOT_CA_CONFIGMAP, cm);
    } catch (err) {
      // 404/403: the namespace is gone or terminating; 422: made immutable by its tenant.
      if (isStatus(err, 404, 403, 422)) return;
      throw err;
    }
  };
}

/**
 * Feeds the publisher from the watch cache (kube's event handlers): a namespace added (looked at
 * after `settleMs`, see SettleQueue) or changed while active, and a `kube-root-ca.crt` changed or
 * deleted, enqueue the namespace when the cache shows its ConfigMap missing or not up to date; at
 * start and after a cache resynchronisation every namespace is checked. `bundle` is read at each
 * check. Returns the unsubscribe function, and `resync` to check every namespace again (after the
 * bundle changed).
 */
export function rootCAPublisherInformer(cache: WatchCache, controller: Pick<Controller, 'enqueue'>, bundle: () => string, settleMs = 200): { unsubscribe: () => void; resync: () => void } {
  let dataText = '';
  let dataOf = '';
  const needsWork = (cluster: string, namespace: string, ns?: CacheEntry): boolean => {
    const nsEntry = ns ?? cache.getEntry(NAMESPACES_GR, cluster, '', namespace);
    if (!nsEntry || terminating(nsEntry.json)) return false;
    const cm = cache.getEntry(CONFIGMAPS_GR, cluster, namespace, ROOT_CA_CONFIGMAP);
    if (!cm) return true;
    const b = bundle();
    if (b !== dataOf) { dataOf = b; dataText = `"data":${JSON.stringify({ [ROOT_CA_KEY]: b })}`; }
    return !looksUpToDate(cm.json, dataText);
  };
  const enqueue = (cluster: string, namespace: string, ns?: CacheEntry) => {
    if (needsWork(cluster, namespace, ns)) controller.enqueue(`${cluster}|${namespace}`).catch(() => undefined);
  };
  const later = new SettleQueue<{ cluster: string; namespace: string }>(settleMs, (n) => enqueue(n.cluster, n.namespace));
  const syncAll = () => { for (const e of cache.list(NAMESPACES_GR, '*')) enqueue(e.cluster, e.name, e); };
  const unsubscribe = cache.subscribe((ev) => {
    if (!ev) { syncAll(); return; }
    const e = ev.entry;
    if (e.groupResource === NAMESPACES_GR) {
      if (ev.type === 'ADDED') later.add({ cluster: e.cluster, namespace: e.name });
      else if (ev.type === 'MODIFIED') enqueue(e.cluster, e.name, e);
    } else if (e.groupResource === CONFIGMAPS_GR && e.name === ROOT_CA_CONFIGMAP && ev.type !== 'ADDED') {
      enqueue(e.cluster, e.namespace);
    }
  });
  syncAll();
  return { unsubscribe: () => { unsubscribe(); later.clear(); }, resync: syncAll };
}
