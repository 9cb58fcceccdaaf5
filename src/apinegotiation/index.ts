/**
 * API negotiation (kcp's crd-puller, APIResourceImport and NegotiatedAPIResource, the APIExport
 * `kubernetes`): the syncer pulls its cluster's schemas and imports them ({@link importAPIResources});
 * the shard's controller negotiates them per workspace ({@link startNegotiationController}).
 * docs/multicluster.md, "API negotiation".
 */
import { Controller, type ControllerMetrics, type QueueThread } from '../controllers/runtime.js';
import type { RequestScope, Store } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { IMPORTS_GR, SYNC_TARGETS_GR, negotiationEventCluster, negotiationKey, negotiationReconciler } from './controller.js';

export { importAPIResources, apiResourceImportName, API_VERSION_ANNOTATION, type ImportResult } from './importer.js';
export { pullCRDs, pullClient, endpointFromKubeconfig, parseGroupResource, MAX_OPENAPI_DOCUMENT_BYTES, type APIEndpoint, type PulledCRDs, type PullError } from './puller.js';
export { structuralSchemaForKind, SchemaPullError, MAX_PULLED_SCHEMA_DEPTH, MAX_PULLED_SCHEMA_NODES } from './openapi.js';
export { KUBERNETES_EXPORT, COMPUTE_API_EXPORT_ANNOTATION, negotiationKey } from './controller.js';
export { negotiate, syncedResources, type ResourceToSync } from './negotiation.js';

/** What the negotiation controller needs from its shard. */
export interface NegotiationHost {
  cache: WatchCache;
  thread: QueueThread;
  /** BullMQ key prefix of the shard's controllers. */
  prefix: string;
  metrics?: ControllerMetrics;
  storeOf(plural: string, group: string): Store;
  masters(cluster: string): RequestScope;
  onError?: (key: string, err: unknown) => void;
}

/**
 * Starts the negotiation controller (./controller.ts) on the shard's controller runtime, fed by
 * the watch cache: any change of an import, negotiated resource, export or schema — and SyncTarget
 * changes other than heartbeats — in a workspace that has imports or SyncTargets enqueues that
 * workspace. Resolves with the controller (`ready()` once its workers run) and its stop function.
 */
export function startNegotiationController(h: NegotiationHost): { controller: Controller; stop: () => Promise<void> } {
  const controller = new Controller({
    name: 'apinegotiation', prefix: h.prefix, thread: h.thread, metrics: h.metrics,
    reconcile: negotiationReconciler({
      cache: h.cache, scope: (c) => h.masters(c),
      imports: h.storeOf('apiresourceimports', 'apiresource.kcp.io'), negotiated: h.storeOf('negotiatedapiresources', 'apiresource.kcp.io'),
      syncTargets: h.storeOf('synctargets', 'workload.kcp.io'), exports: h.storeOf('apiexports', 'apis.kcp.io'), schemas: h.storeOf('apiresourceschemas', 'apis.kcp.io'),
    }),
    onError: h.onError,
  });
  const involved = (cluster: string) => h.cache.count(IMPORTS_GR, cluster) > 0 || h.cache.count(SYNC_TARGETS_GR, cluster) > 0;
  const enqueue = (cluster: string) => { controller.enqueue(negotiationKey(cluster)).catch(() => undefined); };
  const syncAll = () => { for (const c of new Set([...h.cache.clustersOf(IMPORTS_GR), ...h.cache.clustersOf(SYNC_TARGETS_GR)])) enqueue(c); };
  const unsubscribe = h.cache.subscribe((ev) => {
    if (!ev) { syncAll(); return; }
    const cluster = negotiationEventCluster(ev);
    if (cluster !== undefined && (involved(cluster) || ev.entry.groupResource === IMPORTS_GR || ev.entry.groupResource === SYNC_TARGETS_GR)) enqueue(cluster);
  });
  syncAll();
  return { controller, stop: async () => { unsubscribe(); await controller.close(); } };
}
