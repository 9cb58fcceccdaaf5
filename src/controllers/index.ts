/**
 * The controllers of a shard, all on the one BullMQ runtime (runtime.ts): namespace lifecycle,
 * CRD naming/establishing and cleanup, default ServiceAccounts, the garbage collector, the
 * ValidatingAdmissionPolicy status (type checking), ResourceQuota status (usage), and the
 * tenancy controllers (LogicalCluster lifecycle, Workspace scheduling/phase/deletion), API
 * negotiation (src/apinegotiation), with the
 * informers (watch-cache subscriptions) that feed them. Any number of server processes on one
 * Redis may run them: jobs are deduplicated per key across processes.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { APIRegistry } from '../apiextensions/registry.js';
import { CRD_GR, descriptorsForCRD } from '../apiextensions/customresources.js';
import { Store, type RequestScope, type StoreBackend, type TransactionItem } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { LOGICAL_CLUSTERS_GR, type LogicalClusterIndex } from '../tenancy/index.js';
import { clusterNameFor } from '../tenancy/paths.js';
import type { WorkspaceTypeResolver } from '../tenancy/workspacetypes.js';
import { Controller, QueueThread, informer, type ControllerMetrics } from './runtime.js';
import { crdReconciler } from './crd/controller.js';
import { NAMESPACES_GR, namespaceReconciler } from './namespace/controller.js';
import { serviceAccountInformer, serviceAccountReconciler } from './serviceaccount/controller.js';
import { rootCAConfigMap, rootCAPublisherInformer, rootCAPublisherReconciler } from './rootcacertpublisher/controller.js';
import { startGarbageCollector } from './garbagecollector/controller.js';
import { logicalClusterReconciler } from './logicalcluster/controller.js';
import { CLUSTER_ANNOTATION_KEY, workspaceReconciler } from './workspace/controller.js';
import type { ShardDirectory } from '../shards/directory.js';
import type { APICatalog } from '../apiexports/catalog.js';
import { BINDINGS_GR, ENDPOINT_SLICES_GR, EXPORTS_GR } from '../apiexports/schemas.js';
import { EXPORT_LABEL, exportLabelValue } from '../apiexports/admission.js';
import { apiBindingReconciler, apiExportReconciler, endpointSliceReconciler, type APIsReconcilerDeps } from './apis/controller.js';
import type { KeyPair } from '../pki/certs.js';
import { CSR_GR } from '../certificates/csr.js';
import { needsSigning, signerReconciler } from '../certificates/signer.js';
import { POLICIES_GR } from '../admission/policies.js';
import { policyStatusReconciler } from './admissionpolicy/controller.js';
import { resourceQuotaInformer, resourceQuotaReconciler } from './resourcequota/controller.js';
import type { QuotaReservations } from '../admission/plugins/resourcequota.js';
import { startNegotiationController } from '../apinegotiation/index.js';
import { startWorkloadControllers } from '../workload/controllers.js';

/** What the controllers need from the shard they run in. */
export interface ControllerHost {
  /** Shard name (hash tag of the queues' keys). */
  shard: string;
  /** URL clients reach the shard's workspaces at (`https://host:port`; the front-proxy's in an instance with one). */
  url: string;
  /** The instance's other shards, for scheduling workspaces onto them; absent: this shard only. */
  shards?: ShardDirectory;
  /** Redis of the controllers' queues (`redis://…` or `unix://…`; needs no persistence). */
  queueRedisUrl: string;
  /**
   * A queue thread on `queueRedisUrl` started beforehand (its worker takes a few hundred ms to
   * load BullMQ, which then overlaps the rest of the start-up); the controllers own it from
   * here and close it when they stop. Default: one started here.
   */
  queueThread?: QueueThread;
  cache: WatchCache;
  backend: StoreBackend;
  registry: APIRegistry;
  index: LogicalClusterIndex;
  types: WorkspaceTypeResolver;
  metrics: ControllerMetrics;
  /** Exports and schemas of the instance (src/apiexports). */
  catalog: APICatalog;
  /** The built-in store of a resource. */
  storeOf(plural: string, group: string): Store;
  /** The identity controllers act as, in a logical cluster (and namespace). */
  masters(cluster: string, namespace?: string): RequestScope;
  log: { warn(obj: object, msg: string): void };
  /**
   * The shard's client CA (what its authenticator trusts for client certificates): the
   * kube-apiserver-client CSR signer signs with it. Absent (certificates given as files): no signer.
   */
  clientCA?: KeyPair;
  /**
   * Creates admitted by quota admission and not stored yet (src/admission/plugins/resourcequota.ts);
   * absent: no resource quota controller.
   */
  quotaReservations?: QuotaReservations;
  /**
   * The CA bundle (PEM) the root CA publisher writes into every namespace's `kube-root-ca.crt`:
   * the CA that issued the shard's serving certificate. Absent: no publisher.
   */
  rootCABundle?: string;
  /**
   * `--sync-target-heartbeat-threshold` (ms): a SyncTarget whose syncer's last heartbeat is older
   * is not Ready and its namespaces move (src/workload); default 30 s.
   */
  syncTargetHeartbeatThresholdMs?: number;
}

/** Running controllers. */
export interface RunningControllers {
  /** Stops them, finishing running reconciles. */
  stop(): Promise<void>;
  /**
   * A new LogicalCluster's initialized status and initial content (the logical cluster
   * controller's `prepare`), for creating it already initialized in one transaction.
   */
  prepareLogicalCluster(cluster: string, lc: KubeObject): { status: Record<string, unknown>; content: TransactionItem[] };
}

/** Starts every controller; resolves once their workers run. */
export async function startControllers(h: ControllerHost): Promise<RunningControllers> {
  const stops: (() => Promise<void>)[] = [];
  const prefix = `{${h.shard}}:ctrl`;
  // One queue thread for every controller of the host; closed after them (stops run in reverse).
  // Lost queues (their Redis restarted empty, or the thread did) are refilled level-triggered:
  // every informer enqueues all its objects again.
  const events = {
    onError: (err: unknown) => h.log.warn({ err }, 'controller queue thread failed'),
    onQueuesLost: () => h.cache.relist(),
  };
  const thread = h.queueThread ?? new QueueThread(h.queueRedisUrl, events);
  thread.setEvents(events);
  stops.push(() => thread.close());
  const nsStore = h.storeOf('namespaces', '');
  const namespaced = (cluster: string) => h.registry.forCluster(cluster).namespacedStores();
  const nsReconcile = namespaceReconciler({ namespaces: nsStore, namespacedStores: namespaced, cache: h.cache, scope: h.masters });
  const nsController = new Controller({
    name: 'namespace', prefix, thread, metrics: h.metrics, concurrency: 32, workers: 4,
    reconcile: nsReconcile,
    onError: (key, err) => h.log.warn({ key, err }, 'namespace reconcile failed'),
  });
  stops.push(() => nsController.close());
  // Only terminating namespaces need work.
  const unsubscribeNs = informer(h.cache, NAMESPACES_GR, nsController, (e, type) => type !== 'DELETED' && e.json.includes('"deletionTimestamp"'));
  stops.push(async () => unsubscribeNs());

  const crdStore = h.storeOf('customresourcedefinitions', 'apiextensions.k8s.io');
  const crdController = new Controller({
    name: 'crd', prefix, thread, metrics: h.metrics,
    reconcile: crdReconciler({
      crds: crdStore, cache: h.cache, scope: h.masters,
      customResources: (crd) => {
        // The storage version's store: its objects need no conversion (a conversion webhook is
        // often gone by the time its CRD is deleted), as kube deletes through that version.
        const descs = descriptorsForCRD(crd, { includeUnserved: true });
        const versions = ((crd.spec as { versions?: { name?: string; storage?: boolean }[] } | undefined)?.versions ?? []);
        const storage = versions.find((v) => v.storage === true)?.name;
        const d = descs.find((x) => x.version === storage) ?? descs[0];
        return d && new Store(d, h.backend);
      },
    }),
    onError: (key, err) => h.log.warn({ key, err }, 'crd reconcile failed'),
  });
  stops.push(() => crdController.close());
  const unsubscribeCrd = informer(h.cache, CRD_GR, crdController, (_e, type) => type !== 'DELETED');
  stops.push(async () => unsubscribeCrd());

  // The `default` ServiceAccount of every namespace.
  const saStore = h.storeOf('serviceaccounts', '');
  const saController = new Controller({
    name: 'serviceaccount', prefix, thread, metrics: h.metrics,
    reconcile: serviceAccountReconciler({ serviceAccounts: saStore, cache: h.cache, scope: h.masters, clusterDeleting: (c) => h.index.get(c)?.deleting ?? false }),
    onError: (key, err) => h.log.warn({ key, err }, 'serviceaccount reconcile failed'),
  });
  stops.push(() => saController.close());
  const unsubscribeSa = serviceAccountInformer(h.cache, saController);
  stops.push(async () => unsubscribeSa());

  // kube-root-ca.crt in every namespace (kcp's kube-root-ca-configmap-controller).
  const cmStore = h.storeOf('configmaps', '');
  const rootCABundle = h.rootCABundle;
  const rootCAControllers: Controller[] = [];
  if (rootCABundle !== undefined) {
    const rootCAController = new Controller({
      name: 'root-ca-cert-publisher', prefix, thread, metrics: h.metrics,
      reconcile: rootCAPublisherReconciler({ configMaps: cmStore, cache: h.cache, scope: h.masters, bundle: () => rootCABundle, clusterDeleting: (c) => h.index.get(c)?.deleting ?? false }),
      onError: (key, err) => h.log.warn({ key, err }, 'root-ca-cert-publisher reconcile failed'),
    });
    rootCAControllers.push(rootCAController);
    stops.push(() => rootCAController.close());
    const rootCAInformer = rootCAPublisherInformer(h.cache, rootCAController, () => rootCABundle);
    stops.push(async () => rootCAInformer.unsubscribe());
  }

  // Garbage collection of dependents (ownerReferences), per logical cluster.
  const gc = startGarbageCollector({
    cache: h.cache, apis: (cluster) => h.registry.forCluster(cluster), scope: h.masters, prefix, thread, metrics: h.metrics,
    onError: (key, err) => h.log.warn({ key, err }, 'garbage collector reconcile failed'),
  });
  stops.push(() => gc.close());

  // apis.kcp.io: export identities and endpoint slices, bindings.
  const apisDeps: APIsReconcilerDeps = {
    cache: h.cache, catalog: h.catalog, scope: h.masters,
    exports: h.storeOf('apiexports', 'apis.kcp.io'), endpointSlices: h.storeOf('apiexportendpointslices', 'apis.kcp.io'),
    bindings: h.storeOf('apibindings', 'apis.kcp.io'), secrets: h.storeOf('secrets', ''), namespaces: nsStore,
    boundStore: (d) => h.registry.boundStore(d),
    pathOf: (cluster) => h.index.get(cluster)?.path || undefined,
    shardVirtualWorkspaceURLs: () => {
      const urls = h.shards?.list().map((s) => s.virtualWorkspaceURL) ?? [];
      return urls.length ? urls : [h.url];
    },
  };
  const apis = [
    new Controller({ name: 'apiexport', prefix, thread, metrics: h.metrics, reconcile: apiExportReconciler(apisDeps), onError: (key, err) => h.log.warn({ key, err }, 'apiexport reconcile failed') }),
    new Controller({ name: 'apiexportendpointslice', prefix, thread, metrics: h.metrics, reconcile: endpointSliceReconciler(apisDeps), onError: (key, err) => h.log.warn({ key, err }, 'apiexportendpointslice reconcile failed') }),
    new Controller({ name: 'apibinding', prefix, thread, metrics: h.metrics, concurrency: 16, reconcile: apiBindingReconciler(apisDeps), onError: (key, err) => h.log.warn({ key, err }, 'apibinding reconcile failed') }),
  ] as const;
  const [exportCtl, sliceCtl, bindingCtl] = apis;
  for (const c of apis) stops.push(() => c.close());
  const enqueueSlices = () => { for (const e of h.cache.list(ENDPOINT_SLICES_GR, '*')) sliceCtl.enqueue(`${e.cluster}|${e.name}`).catch(() => undefined); };
  const unsubscribeApis = [
    informer(h.cache, EXPORTS_GR, exportCtl, (_e, type) => type !== 'DELETED'),
    informer(h.cache, ENDPOINT_SLICES_GR, sliceCtl, (_e, type) => type !== 'DELETED'),
    informer(h.cache, BINDINGS_GR, bindingCtl, (_e, type) => type !== 'DELETED'),
    h.cache.subscribe((ev) => {
      if (!ev) return;
      const e = ev.entry;
      // An export changed: its bindings on this shard and its endpoint slices look again. A CRD
      // came or went: the bindings of its workspace (conflicts).
      if (e.groupResource === EXPORTS_GR) {
        const label = `"${EXPORT_LABEL}":"${exportLabelValue(e.cluster, e.name)}"`;
        for (const b of h.cache.list(BINDINGS_GR, '*')) if (b.json.includes(label)) bindingCtl.enqueue(`${b.cluster}|${b.name}`).catch(() => undefined);
        for (const s of h.cache.list(ENDPOINT_SLICES_GR, e.cluster)) sliceCtl.enqueue(`${s.cluster}|${s.name}`).catch(() => undefined);
      } else if (e.groupResource === CRD_GR) {
        for (const b of h.cache.list(BINDINGS_GR, e.cluster)) bindingCtl.enqueue(`${b.cluster}|${b.name}`).catch(() => undefined);
      }
    }),
    // Shards come and go: every slice's endpoints change.
    h.shards?.subscribe((c) => { if (!c.shard) enqueueSlices(); }) ?? (() => undefined),
  ];
  stops.push(async () => { for (const u of unsubscribeApis) u(); });

  // API negotiation: NegotiatedAPIResources, the `kubernetes` APIExport and SyncTargets' synced
  // resources from the APIResourceImports of syncers (src/apinegotiation).
  const negotiation = startNegotiationController({
    cache: h.cache, thread, prefix, metrics: h.metrics, storeOf: h.storeOf, masters: (c) => h.masters(c),
    onError: (key, err) => h.log.warn({ key, err }, 'apinegotiation reconcile failed'),
  });
  stops.push(() => negotiation.stop());

  // CSRs of kubernetes.io/kube-apiserver-client, once approved (src/certificates/signer.ts).
  const signers: Controller[] = [];
  if (h.clientCA) {
    const signer = new Controller({
      name: 'csrsigning', prefix, thread, metrics: h.metrics,
      reconcile: signerReconciler({ csrs: h.storeOf('certificatesigningrequests', 'certificates.k8s.io'), cache: h.cache, ca: h.clientCA, scope: h.masters }),
      onError: (key, err) => h.log.warn({ key, err }, 'csrsigning reconcile failed'),
    });
    signers.push(signer);
    stops.push(() => signer.close());
    const unsubscribeSigner = informer(h.cache, CSR_GR, signer, (e, type) => type !== 'DELETED' && e.json.includes('"Approved"') && needsSigning(JSON.parse(e.json) as KubeObject));
    stops.push(async () => unsubscribeSigner());
  }

  // ValidatingAdmissionPolicy status: type checking of its expressions (kube's
  // validatingadmissionpolicy-status-controller).
  const vapStatus = new Controller({
    name: 'validatingadmissionpolicy-status', prefix, thread, metrics: h.metrics,
    reconcile: policyStatusReconciler({
      policies: h.storeOf('validatingadmissionpolicies', 'admissionregistration.k8s.io'), cache: h.cache,
      apis: (cluster) => h.registry.forCluster(cluster), scope: h.masters,
    }),
    onError: (key, err) => h.log.warn({ key, err }, 'validatingadmissionpolicy-status reconcile failed'),
  });
  stops.push(() => vapStatus.close());
  const unsubscribeVap = informer(h.cache, POLICIES_GR, vapStatus, (_e, type) => type !== 'DELETED');
  stops.push(async () => unsubscribeVap());

  // ResourceQuota status (kube's resource quota controller, per logical cluster as kcp's kubequota).
  const quotaControllers: Controller[] = [];
  if (h.quotaReservations) {
    const reservations = h.quotaReservations;
    const quotaController = new Controller({
      name: 'resourcequota', prefix, thread, metrics: h.metrics,
      reconcile: resourceQuotaReconciler({
        quotas: h.storeOf('resourcequotas', ''), cache: h.cache, reservations, scope: h.masters,
        storageResource: (cluster, group, plural) => {
          const apis = h.registry.forCluster(cluster);
          const d = apis.descriptors.find((x) => x.group === group && x.plural === plural && !x.virtual);
          return d && apis.store(d.group, d.version, d.plural)?.groupResource;
        },
      }),
      onError: (key, err) => h.log.warn({ key, err }, 'resourcequota reconcile failed'),
    });
    quotaControllers.push(quotaController);
    stops.push(() => quotaController.close());
    const unsubscribeQuota = resourceQuotaInformer(h.cache, quotaController, reservations);
    stops.push(async () => unsubscribeQuota());
  }

  // Tenancy: LogicalCluster lifecycle (initialization, deletion of content) and Workspaces.
  const lcStore = h.storeOf('logicalclusters', 'core.kcp.io');
  const wsStore = h.storeOf('workspaces', 'tenancy.kcp.io');
  let wsController: Controller | undefined;
  const lcReconciler = logicalClusterReconciler({
    ownerProgressed: (o) => { wsController?.enqueue(`${o.cluster}|${o.name}`).catch(() => undefined); },
    logicalClusters: lcStore, clusterRoleBindings: h.storeOf('clusterrolebindings', 'rbac.authorization.k8s.io'),
    storesOf: (cluster) => h.registry.forCluster(cluster).storedStores(), scope: h.masters, externalURL: () => h.url,
    finalizeNamespace: nsReconcile,
    ownerExists: (o) => {
      // A Workspace on another shard: its own controller deletes this LogicalCluster with it.
      if (!h.index.get(o.cluster)) return true;
      const e = h.cache.getEntry('tenancy.kcp.io/workspaces', o.cluster, '', o.name);
      return e !== undefined && e.json.includes(`"uid":"${o.uid}"`);
    },
    initializers: {
      // root:universal (kcp config/universal): the `default` namespace.
      'root:universal': () => [
        { store: nsStore, obj: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } } },
        // Its `default` ServiceAccount at once, as the serviceaccount controller would (whose
        // informer then finds it and needs no queue job).
        { store: saStore, namespace: 'default', obj: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'default' } } },
        // And its kube-root-ca.crt, as the root CA publisher would.
        ...(rootCABundle !== undefined ? [{ store: cmStore, namespace: 'default', obj: rootCAConfigMap('default', rootCABundle) }] : []),
      ],
    },
  });
  const lcController = new Controller({
    name: 'logicalcluster', prefix, thread, metrics: h.metrics, concurrency: 32, workers: 4, reconcile: lcReconciler,
    onError: (key, err) => h.log.warn({ key, err }, 'logicalcluster reconcile failed'),
  });
  stops.push(() => lcController.close());
  wsController = new Controller({
    name: 'workspace', prefix, thread, metrics: h.metrics, concurrency: 64, workers: 4,
    reconcile: workspaceReconciler({
      workspaces: wsStore, logicalClusters: lcStore, index: h.index, types: h.types, shardName: h.shard,
      externalURL: () => h.url, scope: h.masters, initializeLogicalCluster: lcReconciler.initialize, prepareLogicalCluster: lcReconciler.prepare,
      shards: h.shards,
    }),
    onError: (key, err) => h.log.warn({ key, err }, 'workspace reconcile failed'),
  });
  const wsCtl = wsController;
  stops.push(() => wsCtl.close());
  const unfinished = (e: { json: string }) => !e.json.includes('"phase":"Ready"') || e.json.includes('"deletionTimestamp"');
  // A new LogicalCluster of a Workspace on this shard is born initialized by the workspace
  // controller; one a Workspace on another shard created over HTTPS (still `Scheduling`) is this
  // controller's to initialize.
  const unsubscribeLc = informer(h.cache, LOGICAL_CLUSTERS_GR, lcController, (e, type) =>
    type !== 'DELETED' && unfinished(e) && !(type === 'ADDED' && e.json.includes('"resource":"workspaces"') && !e.json.includes('"phase":"Scheduling"')));
  // A LogicalCluster on another shard that changed phase, is being deleted or is gone moves its
  // Workspace here on.
  const unsubscribeRemote = h.shards?.subscribe((c) => {
    const owner = c.location?.owner;
    if (owner && h.index.get(owner.cluster)) wsCtl.enqueue(`${owner.cluster}|${owner.name}`).catch(() => undefined);
  });
  // Workspaces need work when unscheduled or deleting; Initializing → Ready is reported by the
  // logical cluster controller (ownerProgressed), a resync looks at every unfinished one.
  const unsubscribeWs = informer(h.cache, 'tenancy.kcp.io/workspaces', wsCtl, (e, type) => {
    if (type === 'DELETED' || !unfinished(e)) return false;
    if (type === 'SYNC') return true;
    // Deleting: once the controller recorded phase Deleting (after deleting the LogicalCluster),
    // the LogicalCluster's deletion events drive it (below), not its own write.
    if (e.json.includes('"deletionTimestamp"')) return !e.json.includes('"phase":"Deleting"');
    // Unscheduled: no spec.cluster yet (cheap test first; parse only when the text has one).
    if (!e.json.includes('"cluster":"')) return true;
    return !(JSON.parse(e.json) as { spec?: { cluster?: string } }).spec?.cluster;
  });
  // A LogicalCluster being deleted or gone moves its Workspace's deletion on (phase changes
  // are reported by the logical cluster controller); a Workspace gone before it recorded its
  // logical cluster wakes that logical cluster (to delete it); anything held by finalizers
  // that goes in a deleting logical cluster wakes that cluster's deletion.
  const unsubscribeOwners = h.cache.subscribe((ev) => {
    if (!ev) return;
    const e = ev.entry;
    if (e.groupResource === LOGICAL_CLUSTERS_GR) {
      if (ev.type !== 'DELETED' && !e.json.includes('"deletionTimestamp"')) return;
      const owner = (JSON.parse(e.json) as KubeObject & { spec?: { owner?: { cluster?: string; name?: string; resource?: string } } }).spec?.owner;
      if (owner?.resource === 'workspaces' && owner.cluster && owner.name) wsCtl.enqueue(`${owner.cluster}|${owner.name}`).catch(() => undefined);
      return;
    }
    if (ev.type !== 'DELETED') return;
    if (e.groupResource === 'tenancy.kcp.io/workspaces') {
      const ws = JSON.parse(e.json) as KubeObject & { spec?: { cluster?: string } };
      if (!ws.spec?.cluster) {
        const lc = ws.metadata.annotations?.[CLUSTER_ANNOTATION_KEY] ?? clusterNameFor(ws.metadata.uid!);
        // Delayed: the workspace controller may be creating that LogicalCluster right now.
        lcController.enqueue(`${lc}|cluster`, 2000).catch(() => undefined);
      }
    }
    // Only objects that were held by finalizers (deleted with a deletionTimestamp) are what a
    // deleting logical cluster waits for; what its own pass deleted outright needs no new pass.
    if (h.index.get(e.cluster)?.deleting && e.json.includes('"deletionTimestamp"')) lcController.enqueue(`${e.cluster}|cluster`).catch(() => undefined);
  });
  stops.push(async () => { unsubscribeLc(); unsubscribeWs(); unsubscribeOwners(); unsubscribeRemote?.(); });
  // kcp TMC: SyncTargets, Locations, Placements, namespace and object scheduling (src/workload).
  const workload = startWorkloadControllers(h, thread, prefix, h.metrics, { heartbeatThresholdMs: h.syncTargetHeartbeatThresholdMs });
  stops.push(() => workload.stop());
  const stop = async () => { for (const s of stops.reverse()) await s().catch(() => undefined); };
  try {
    await Promise.all([...workload.controllers, nsController, crdController, saController, ...rootCAControllers, gc.controller, lcController, wsCtl, vapStatus, ...quotaControllers, ...apis, ...signers, negotiation.controller].map((c) => c.ready()));
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop, prepareLogicalCluster: (cluster, lc) => lcReconciler.prepare(cluster, lc) as { status: Record<string, unknown>; content: TransactionItem[] } };
}
