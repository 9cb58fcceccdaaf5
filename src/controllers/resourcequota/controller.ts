/**
 * The resource quota controller (kube-controller-manager's, pkg/controller/resourcequota:
 * resource_quota_controller.go `syncResourceQuota`, resource_quota_monitor.go), per logical
 * cluster as kcp runs it (kcp pkg/reconciler/kubequota): for each ResourceQuota it writes
 * `status.hard` (= `spec.hard`) and `status.used` through the `/status` subresource.
 *
 * Usage: for `count/<plural>[.<group>]` and kube's legacy names (`configmaps`, `secrets`, …) the
 * number of objects of that resource served in the quota's logical cluster, in the quota's
 * namespace — or in the whole logical cluster (every namespace and cluster-scoped objects) for
 * kcp's cluster-scoped quota (`admin` namespace, `experimental.quota.kcp.io/cluster-scoped`;
 * kcp `namespaceToCheck`) — counted in the watch cache after it caught up with the shard's
 * revision, plus the creates this process admitted that are not stored yet
 * (src/admission/plugins/resourcequota.ts QuotaReservations), so a recalculation never frees a
 * slot an in-flight create holds. A resource not served in the cluster counts 0. Any other name
 * (cpu, memory, `pods`, `services.loadbalancers`, …) is 0: a kcp workspace has no pods, services
 * or volume claims. Names of resources quota ignores (events, …) get no usage, as kube's
 * monitors do not watch them. A quota with scopes counts nothing (the object count evaluator
 * matches no scope).
 *
 * Keys are `<cluster>|<namespace>/<name>`. A quota is enqueued (kube's `addQuota`) when its
 * status does not cover its spec (created, `spec.hard` changed), when an object of a resource it
 * counts is deleted in its scope (kube's replenishment), when admission freed usage it had
 * charged (a create refused or failed after the charge), and every `resyncMs` (kube's
 * `--resource-quota-sync-period`, 5 minutes) all of them, once, with one timer for the shard:
 * an empty logical cluster costs nothing.
 */
import type { KubeObject } from '../../apimachinery/meta.js';
import { isStatus } from '../../apimachinery/errors.js';
import type { RequestScope, Store } from '../../registry/store.js';
import { entryObject, type CacheEntry, type WatchCache } from '../../storage/watchcache.js';
import {
  RESOURCE_QUOTAS_GR, countedResourceNames, formatCount, hasScopes, isClusterScopedQuota, isQuotaIgnored, parseCountedResource,
  quotaEntriesFor, quotaKey, quotaStatus, specHard, splitQuotaKey, type QuotaReservations, type ResourceList,
} from '../../admission/plugins/resourcequota.js';
import type { Controller, ReconcileResult } from '../runtime.js';

/** kube-controller-manager's default `--resource-quota-sync-period` (ms). */
export const QUOTA_RESYNC_MS = 5 * 60_000;
/** Conflicting status writes a reconcile retries at once before it fails (and is retried with backoff). */
export const CONFLICT_RETRIES = 3;

/** Dependencies of the reconciler, as plain functions and values. */
export interface ResourceQuotaReconcilerDeps {
  /** The ResourceQuota store (status writes; `syncCache`). */
  quotas: Store;
  cache: Pick<WatchCache, 'getEntry' | 'count'>;
  /**
   * The watch cache's group/resource under which a resource served in a logical cluster is
   * stored (a bound resource's includes its export identity); undefined when not served.
   */
  storageResource(cluster: string, group: string, plural: string): string | undefined;
  /** In-flight admitted creates. */
  reservations: Pick<QuotaReservations, 'count'>;
  /** Identity the controller acts as. */
  scope: (cluster: string, namespace?: string) => RequestScope;
}

/** Whether two resource lists hold the same names and values. */
function sameList(a: ResourceList, b: ResourceList): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

/**
 * Whether a quota's status does not cover its spec yet: `status.hard` differs from `spec.hard` or
 * `status.used` lacks a name of it (kube's `addQuota` puts those on its missing-usage queue).
 */
export function needsStatus(q: KubeObject): boolean {
  const hard = specHard(q);
  const status = quotaStatus(q);
  return !sameList(hard, status.hard) || Object.keys(hard).some((n) => !(n in status.used) && !isIgnoredName(n));
}

function isIgnoredName(name: string): boolean {
  const r = parseCountedResource(name);
  return r !== undefined && isQuotaIgnored(r.group, r.plural);
}

/**
 * The status a quota should have now: `hard` = `spec.hard`, `used` per the module comment.
 * Synchronous, so the watch cache and the reservations are read at one instant.
 */
export function computeQuotaStatus(deps: Omit<ResourceQuotaReconcilerDeps, 'quotas' | 'scope'>, cluster: string, q: KubeObject): { hard: ResourceList; used: ResourceList } {
  const hard = specHard(q);
  const used: ResourceList = {};
  const namespace = q.metadata.namespace ?? '';
  const key = quotaKey(cluster, namespace, q.metadata.name ?? '');
  const scoped = hasScopes(q);
  const wholeCluster = isClusterScopedQuota(q);
  for (const name of Object.keys(hard)) {
    const r = parseCountedResource(name);
    if (r && isQuotaIgnored(r.group, r.plural)) continue;
    if (!r || scoped) { used[name] = '0'; continue; }
    const gr = deps.storageResource(cluster, r.group, r.plural);
    const stored = gr ? deps.cache.count(gr, cluster, wholeCluster ? undefined : namespace) : 0;
    used[name] = formatCount(stored + deps.reservations.count(cluster, key, name));
  }
  return { hard, used };
}

/** Reconciles one quota: writes its status when it differs from what {@link computeQuotaStatus} finds. */
export function resourceQuotaReconciler(deps: ResourceQuotaReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const { cluster, namespace, name } = splitQuotaKey(key);
    for (let attempt = 0; ; attempt++) {
      // Every write acknowledged before is counted (a consistent read of the cache).
      await deps.quotas.syncCache();
      const e = deps.cache.getEntry(RESOURCE_QUOTAS_GR, cluster, namespace, name);
      if (!e) return;
      const q = entryObject<KubeObject>(e);
      const next = computeQuotaStatus(deps, cluster, q);
      const current = quotaStatus(q);
      if (sameList(current.hard, next.hard) && sameList(current.used, next.used)) return;
      // The resourceVersion read is the precondition: a concurrent admission charge makes this a
      // 409. Under a steady stream of creates that happens often, so it is retried at once from
      // the newer state a few times before the key goes back to the queue with backoff (where a
      // growing delay would hold back the slots deletes gave back).
      try {
        await deps.quotas.update(deps.scope(cluster, namespace), name, { ...structuredClone(q), status: { ...(q.status as object | undefined), ...next } }, 'status');
        return;
      } catch (err) {
        if (!isStatus(err, 409) || attempt >= CONFLICT_RETRIES) throw err;
      }
    }
  };
}

/** The `<group>`, `<plural>` of a watch cache group/resource (`core/<plural>`, `<group>/<plural>[:<identity>]`). */
function resourceOf(groupResource: string): { group: string; plural: string } {
  const slash = groupResource.indexOf('/');
  const group = groupResource.slice(0, slash);
  const rest = groupResource.slice(slash + 1);
  const colon = rest.indexOf(':');
  return { group: group === 'core' ? '' : group, plural: colon < 0 ? rest : rest.slice(0, colon) };
}

/**
 * Feeds the controller (see the module comment): quotas whose status does not cover their spec,
 * quotas counting a deleted object, quotas whose charged usage admission freed, and every quota
 * at start, after a cache resynchronisation and every `resyncMs`. Returns the stop function.
 */
export function resourceQuotaInformer(cache: WatchCache, controller: Pick<Controller, 'enqueue'>, reservations: QuotaReservations, resyncMs = QUOTA_RESYNC_MS): () => void {
  const enqueue = (key: string) => { controller.enqueue(key).catch(() => undefined); };
  const keyOf = (e: CacheEntry) => quotaKey(e.cluster, e.namespace, e.name);
  const enqueueAll = () => { for (const e of cache.list(RESOURCE_QUOTAS_GR, '*')) enqueue(keyOf(e)); };
  const unsubscribe = cache.subscribe((ev) => {
    if (!ev) { enqueueAll(); return; }
    const e = ev.entry;
    if (e.groupResource === RESOURCE_QUOTAS_GR && ev.type !== 'DELETED' && needsStatus(entryObject<KubeObject>(e))) enqueue(keyOf(e));
    if (ev.type !== 'DELETED' || cache.count(RESOURCE_QUOTAS_GR, e.cluster) === 0) return;
    const r = resourceOf(e.groupResource);
    if (isQuotaIgnored(r.group, r.plural)) return;
    const names = countedResourceNames(r.group, r.plural);
    for (const q of quotaEntriesFor(cache, e.cluster, e.namespace)) {
      const hard = specHard(entryObject<KubeObject>(q));
      if (names.some((n) => n in hard)) enqueue(keyOf(q));
    }
  });
  enqueueAll();
  const timer = setInterval(enqueueAll, resyncMs);
  timer.unref();
  reservations.onFreed = (keys) => { for (const k of keys) enqueue(k); };
  return () => { unsubscribe(); clearInterval(timer); reservations.onFreed = () => undefined; };
}
