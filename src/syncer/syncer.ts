/**
 * The syncer (`kcp-ts syncer`), kcp's (github kcp-dev/contrib-tmc pkg/syncer: syncer.go, spec/,
 * status/, namespace/): a process next to a physical cluster that makes it run what is scheduled
 * to one SyncTarget.
 *
 * - Upstream it reads the SyncTarget's syncer virtual workspace (src/syncer/virtualworkspace.ts):
 *   one list-and-watch informer per resource type over `clusters/*`. Downstream it watches the
 *   objects it made (label `internal.workload.kcp.io/cluster: <key>`) and their namespaces.
 * - Spec down: each upstream object is applied downstream (server-side apply, field manager
 *   `syncer`, forced) into the namespace `kcp-<hash>` named from its namespace locator
 *   (names.ts), created on demand with the `kcp.io/namespace-locator` annotation and the
 *   `kcp.io/tenant-id` label, transformed as kcp (transform.ts; with this SyncTarget's
 *   `experimental.spec-diff.workload.kcp.io/<key>` patch applied to the spec, how a Deployment's
 *   replicas are split across SyncTargets). Service-account token Secrets
 *   are not synced. With its first write downstream the syncer takes its finalizer upstream (both
 *   at once; kcp takes the finalizer first, one reconcile earlier — see `reconcile`).
 * - Status up: a downstream object's status is written to the view's `/status`.
 * - Deletion: an upstream object whose view has a deletionTimestamp (deleted, or being removed
 *   from the SyncTarget) is deleted downstream; once gone there the syncer drops its finalizer in
 *   the view (which releases the object and removes the state label). A downstream object whose
 *   upstream object is not in the view (any more) is deleted, and so is a downstream namespace
 *   left without upstream objects.
 * - Heartbeat: `status.lastSyncerHeartbeatTime` of the SyncTarget every 20 s (kcp's
 *   `heartbeatInterval`), with a test of its uid, while the physical cluster's `/readyz` answers.
 * - Restarts: state is derived from both sides only (informers list then watch, and list again
 *   after a 410 or a cut); nothing is kept on disk. Names downstream are deterministic and writes
 *   idempotent (apply by name), so a syncer killed at any point and started again neither loses
 *   nor duplicates an object.
 * - Bounds: keys wait in one bounded queue per (resource type, logical cluster), served round-robin
 *   (queue.ts); requests to each side are rate-limited (`--qps`, `--burst`, as kcp's).
 *
 * One key per upstream object (`<cluster>|<namespace>|<name>` in the queue of its type and
 * cluster) reconciles both directions, whichever side's event enqueued it.
 *
 * Not implemented (kcp has them): the pod-spec mutator that points workloads at kcp's API
 * (service-account token volumes, KUBERNETES_SERVICE_HOST), the DNS resolver Deployment per
 * workspace, the upsyncer, the tunneler, the delayed downstream namespace cleaning
 * (`--downstream-namespace-clean-delay`: here a namespace is removed as soon as it is empty
 * upstream), and following changes of the synced types while running (the types are read once at start).
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../apimachinery/meta.js';
import { RemoteInformer } from '../client/informer.js';
import { RestClient, type Connection, type RestResponse } from '../client/rest.js';
import { exponentialDelayMs } from '../controllers/ratelimiter.js';
import { SYNCER_FINALIZER_PREFIX, syncTargetKey } from '../workload/keys.js';
import { FairQueue, TokenBucket, type QueueItem } from './queue.js';
import {
  DOWNSTREAM_CLUSTER_LABEL, NAMESPACE_LOCATOR_ANNOTATION, SYNCER_FIELD_MANAGER, TENANT_ID_LABEL,
  locatorFromAnnotations, locatorJSON, namespaceLocator, physicalClusterNamespaceName, tenantID, type NamespaceLocator,
} from './names.js';
import { downstreamName, isSyncable, toDownstream, upstreamName } from './transform.js';

/** Options of a {@link Syncer} (the flags of `kcp-ts syncer`). */
export interface SyncerOptions {
  /** kcp (the SyncTarget's workspace's server; its URL path is ignored). */
  upstream: Connection;
  /** Workspace path or logical cluster of the SyncTarget (`--from-cluster`). */
  fromCluster: string;
  syncTargetName: string;
  syncTargetUID: string;
  /** The physical cluster. */
  downstream: Connection;
  /** `resource.group` to sync when the SyncTarget names none in `status.syncedResources` (`--resources`). */
  resources: string[];
  /** Requests per second to each side, and burst (kcp's defaults: 20, 30). */
  qps?: number;
  burst?: number;
  /** Heartbeat interval (kcp: 20 s). */
  heartbeatIntervalMs?: number;
  /** Most keys one (resource type, logical cluster) queue holds (default 10,000). */
  maxQueuedPerTenant?: number;
  /** Concurrent reconciles (default 32: a reconcile mostly waits for the two servers). */
  workers?: number;
  /** Called at start with `resources` before the types are read (API negotiation's hook). */
  negotiate?(resources: string[]): Promise<void>;
  log?(line: string): void;
}

/** A resource type the syncer syncs, as discovered downstream. */
export interface SyncedType {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** `/api/v1` or `/apis/<group>/<version>`. */
  apiPath: string;
}

/** The types every syncer syncs besides the configured ones (kcp's `workload sync` always adds them). */
const REQUIRED = ['namespaces', 'configmaps', 'secrets'];

const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';

/** Splits `deployments.apps` into resource and group (`services` → core). */
export function parseGroupResource(s: string): { group: string; resource: string } {
  const i = s.indexOf('.');
  return i < 0 ? { group: '', resource: s } : { group: s.slice(i + 1), resource: s.slice(0, i) };
}

/** An error answer of one side as an Error with its status. */
class SideError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

/** Most finalizer answers kept while their events are on the way (past it, the view is written again: a 409, retried). */
const MAX_FINALIZING = 10_000;

/** Most downstream namespace names the syncer remembers (each about 100 bytes). */
const MAX_REMEMBERED_NAMESPACES = 100_000;

/** Longest wait for the physical cluster's `/readyz` before a heartbeat (ms). */
const HEARTBEAT_READY_TIMEOUT_MS = 5_000;

/** A rate-limited client of one side. */
class Side {
  readonly client: RestClient;
  constructor(conn: Connection, private readonly bucket: TokenBucket) { this.client = new RestClient(conn, 64); }
  async request(method: string, path: string, body?: unknown, contentType?: string): Promise<RestResponse> {
    await this.bucket.take();
    return this.client.request(method, path, body, contentType ? { contentType } : {});
  }
  /** `request` that rejects with a {@link SideError} unless 2xx (or one of `ok`). */
  async must(method: string, path: string, body?: unknown, contentType?: string, ok: number[] = []): Promise<RestResponse> {
    const r = await this.request(method, path, body, contentType);
    if ((r.status < 200 || r.status >= 300) && !ok.includes(r.status)) throw new SideError(r.status, `${method} ${path}: ${r.status} ${r.json?.message ?? r.body.slice(0, 200)}`);
    return r;
  }
}

const clusterOf = (o: KubeObject): string => o.metadata.annotations?.['kcp.io/cluster'] ?? '';
const slim = (o: KubeObject): KubeObject => { delete o.metadata.managedFields; return o; };
/**
 * What the syncer keeps of a downstream object: its identity, deletion, locator (cluster-scoped
 * objects) and status — not its spec, which upstream has.
 */
const slimDownstream = (o: KubeObject): KubeObject => {
  const m = o.metadata;
  const annotations = m.annotations?.[NAMESPACE_LOCATOR_ANNOTATION] ? { [NAMESPACE_LOCATOR_ANNOTATION]: m.annotations[NAMESPACE_LOCATOR_ANNOTATION] } : undefined;
  const out = { metadata: { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion, deletionTimestamp: m.deletionTimestamp, annotations } } as KubeObject;
  if (o.status !== undefined) out.status = o.status;
  return out;
};
const digest = (s: string): string => createHash('sha256').update(s).digest('base64');

/** The syncer of one SyncTarget (see the module comment). */
export class Syncer {
  private readonly up: Side;
  private readonly down: Side;
  private readonly log: (line: string) => void;
  private key = '';
  /** Logical cluster of the SyncTarget. */
  private cluster = '';
  private vwPath = '';
  private types: SyncedType[] = [];
  private readonly informers: RemoteInformer[] = [];
  /** Per type index: upstream views by `<cluster>|<ns>|<name>`. */
  private readonly upstream: Array<Map<string, KubeObject>> = [];
  /** Per type index: downstream objects by `<ns>|<name>`. */
  private readonly downstream: Array<Map<string, KubeObject>> = [];
  /** Downstream namespaces the syncer made, by name. */
  private readonly downstreamNamespaces = new Map<string, KubeObject>();
  /** Upstream objects in the view per `<cluster>|<namespace>` (all types but namespaces). */
  private readonly upstreamPerNamespace = new Map<string, number>();
  /** Digest of what was last applied downstream per type and key (skips applies that change nothing). */
  private readonly applied: Array<Map<string, string>> = [];
  private readonly failures = new Map<string, number>();
  /**
   * The digest of the downstream copy per upstream view object, while that object is the cached
   * view (the informer replaces a view, never changes it).
   */
  private readonly desiredOf = new WeakMap<KubeObject, string>();
  /**
   * Finalizer writes whose event has not come yet, by key: the view's resourceVersion they were
   * written over and their answer (the view with the finalizer). An entry goes at the key's next
   * reconcile once the informer's view moved on.
   */
  private readonly finalizing = new Map<string, { from: string; view: KubeObject }>();
  /** Downstream namespace names by upstream `<cluster>|<namespace>` (see downstreamNamespace). */
  private readonly namespaceNames = new Map<string, string>();
  private queue!: FairQueue;
  private heartbeat: NodeJS.Timeout | undefined;
  private workers: Promise<void>[] = [];
  private stopped = false;
  /** Counters: applies, deletes downstream, status writes, finalizers taken and released. */
  readonly stats = { applied: 0, deleted: 0, statusUpdated: 0, finalizersAdded: 0, released: 0, heartbeats: 0, errors: 0 };

  constructor(private readonly opts: SyncerOptions) {
    const qps = opts.qps ?? 20; const burst = opts.burst ?? 30;
    this.up = new Side(opts.upstream, new TokenBucket(qps, burst));
    this.down = new Side(opts.downstream, new TokenBucket(qps, burst));
    this.log = opts.log ?? ((l) => process.stderr.write(`${new Date().toISOString()} ${l}\n`));
  }

  /** The SyncTarget key this syncer works for (after {@link start}). */
  get syncTargetKey(): string { return this.key; }
  /** The synced types (after {@link start}). */
  get syncedTypes(): readonly SyncedType[] { return this.types; }

  /**
   * Reads the SyncTarget, sends the first heartbeat, discovers the types downstream, starts the
   * informers of both sides and, once all listed, the workers.
   * @throws Error when the SyncTarget is missing or has another uid, or a type is not served downstream
   */
  async start(): Promise<void> {
    const o = this.opts;
    const stPath = `/clusters/${o.fromCluster}/apis/workload.kcp.io/v1alpha1/synctargets/${o.syncTargetName}`;
    const st = (await this.up.must('GET', stPath)).json as KubeObject;
    if (st.metadata.uid !== o.syncTargetUID) throw new Error(`SyncTarget ${o.fromCluster}|${o.syncTargetName} has uid ${st.metadata.uid}, not ${o.syncTargetUID}`);
    this.cluster = clusterOf(st) || await this.logicalClusterName() || o.fromCluster;
    this.key = syncTargetKey(this.cluster, o.syncTargetName);
    this.vwPath = `/services/syncer/${this.cluster}/${o.syncTargetName}/${o.syncTargetUID}`;
    await this.sendHeartbeat(stPath);
    this.heartbeat = setInterval(() => { this.sendHeartbeat(stPath).catch((e: Error) => this.log(`heartbeat: ${e.message}`)); }, o.heartbeatIntervalMs ?? 20_000);
    this.heartbeat.unref?.();
    if (o.negotiate) await o.negotiate(o.resources);
    const fromStatus = (((st.status as { syncedResources?: unknown[] } | undefined)?.syncedResources ?? []) as Array<{ group?: string; resource?: string; state?: string }>)
      .filter((r) => r.state === 'Accepted' && r.resource).map((r) => (r.group ? `${r.resource}.${r.group}` : r.resource!));
    const names = [...new Set([...REQUIRED, ...(fromStatus.length ? fromStatus : o.resources)])];
    for (const n of names) this.types.push(await this.discover(parseGroupResource(n)));
    this.queue = new FairQueue(o.maxQueuedPerTenant ?? 10_000, (q) => this.refill(q));
    const selector = `labelSelector=${encodeURIComponent(`${DOWNSTREAM_CLUSTER_LABEL}=${this.key}`)}`;
    this.informers.push(new RemoteInformer(this.down.client, { path: '/api/v1/namespaces', query: selector, slim }, {
      replace: (items) => {
        const before = [...this.downstreamNamespaces.values()];
        this.downstreamNamespaces.clear();
        for (const ns of items) this.downstreamNamespaces.set(ns.metadata.name!, ns);
        for (const ns of [...before, ...items]) this.enqueueDownstreamNamespace(ns);
      },
      event: (type, ns) => {
        if (type === 'DELETED') this.downstreamNamespaces.delete(ns.metadata.name!); else this.downstreamNamespaces.set(ns.metadata.name!, ns);
        this.enqueueDownstreamNamespace(ns);
      },
    }));
    this.types.forEach((t, i) => {
      this.upstream.push(new Map()); this.downstream.push(new Map()); this.applied.push(new Map());
      const path = `${t.apiPath}/${t.resource}`;
      this.informers.push(new RemoteInformer(this.up.client, { path: `${this.vwPath}/clusters/*${path}`, slim }, {
        replace: (items) => {
          const m = this.upstream[i]!;
          const old = [...m.keys()];
          for (const k of old) this.setUpstream(i, k, undefined);
          for (const obj of items) this.setUpstream(i, this.upstreamKey(obj), obj);
          for (const k of new Set([...old, ...m.keys()])) this.enqueue(i, k);
        },
        event: (type, obj) => {
          const k = this.upstreamKey(obj);
          this.setUpstream(i, k, type === 'DELETED' ? undefined : obj);
          this.enqueue(i, k);
        },
        state: (s, err) => { if (s === 'disconnected') this.log(`upstream ${t.resource}: ${err ?? 'disconnected'}`); },
      }));
      this.informers.push(new RemoteInformer(this.down.client, { path, query: selector, slim: slimDownstream }, {
        replace: (items) => {
          const m = this.downstream[i]!;
          const old = [...m.values()];
          m.clear();
          // What is there now is known again only from this list: apply everything once more.
          this.applied[i]!.clear();
          for (const obj of items) m.set(`${obj.metadata.namespace ?? ''}|${obj.metadata.name}`, obj);
          for (const obj of [...old, ...items]) this.enqueueDownstream(i, obj);
        },
        event: (type, obj) => {
          const k = `${obj.metadata.namespace ?? ''}|${obj.metadata.name}`;
          if (type === 'DELETED') this.downstream[i]!.delete(k); else this.downstream[i]!.set(k, obj);
          const upKey = this.enqueueDownstream(i, obj);
          // Gone downstream: the next reconcile applies it again if it is still wanted.
          if (type === 'DELETED' && upKey) this.applied[i]!.delete(upKey);
        },
        state: (s, err) => { if (s === 'disconnected') this.log(`downstream ${t.resource}: ${err ?? 'disconnected'}`); },
      }));
    });
    // Both sides listed before anything is decided (a missing object then means missing).
    await Promise.all(this.informers.map((inf) => inf.hasSynced));
    this.log(`syncing ${this.types.map((t) => (t.group ? `${t.resource}.${t.group}` : t.resource)).join(',')} for SyncTarget ${this.cluster}|${o.syncTargetName} (key ${this.key})`);
    for (let w = 0; w < (o.workers ?? 32); w++) this.workers.push(this.work());
  }

  /** Stops informers, workers and the heartbeat. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.queue?.close();
    await Promise.all(this.informers.map((i) => i.stop()));
    await Promise.all(this.workers);
    this.up.client.close(); this.down.client.close();
  }

  /**
   * The logical cluster name of `--from-cluster` when it is a path: the
   * `authentication.kcp.io/cluster-name` of the syncer's own service account (a SelfSubjectReview),
   * which `kubectl kcp workload sync` creates in the SyncTarget's workspace. kcp reads it from the
   * SyncTarget's `kcp.io/cluster` annotation, which kcp-ts sets in wildcard answers only.
   */
  private async logicalClusterName(): Promise<string | undefined> {
    const r = await this.up.request('POST', `/clusters/${this.opts.fromCluster}/apis/authentication.k8s.io/v1/selfsubjectreviews`, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    const names = r.status === 201 || r.status === 200 ? r.json?.status?.userInfo?.extra?.['authentication.kcp.io/cluster-name'] : undefined;
    return Array.isArray(names) && typeof names[0] === 'string' ? names[0] : undefined;
  }

  /**
   * kcp `StartHeartbeat`: `status.lastSyncerHeartbeatTime` now (RFC 3339, seconds), if the
   * SyncTarget still has our uid — and only while the physical cluster answers its `/readyz`: a
   * heartbeat says this SyncTarget can run workloads, so a cluster whose API server is down goes
   * stale and its namespaces move (kcp's syncer heartbeats while it runs, whatever the cluster).
   * @throws Error when the cluster is not ready (no heartbeat sent) or the patch fails
   */
  private async sendHeartbeat(stPath: string): Promise<void> {
    const ready = await this.down.client.request('GET', '/readyz', undefined, { timeoutMs: HEARTBEAT_READY_TIMEOUT_MS })
      .then((r) => (r.status === 200 ? '' : `/readyz answered ${r.status}`), (e: Error) => e.message);
    if (ready) throw new Error(`physical cluster not ready, heartbeat withheld: ${ready}`);
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const patch = [{ op: 'test', path: '/metadata/uid', value: this.opts.syncTargetUID }, { op: 'add', path: '/status/lastSyncerHeartbeatTime', value: now }];
    let r = await this.up.request('PATCH', `${stPath}/status`, patch, 'application/json-patch+json');
    if (r.status === 422 && !/test operation/.test(String(r.json?.message))) {
      // No status yet: a JSON patch cannot add below it.
      r = await this.up.request('PATCH', `${stPath}/status`, [{ op: 'test', path: '/metadata/uid', value: this.opts.syncTargetUID }, { op: 'add', path: '/status', value: { lastSyncerHeartbeatTime: now } }], 'application/json-patch+json');
    }
    if (r.status !== 200) throw new Error(`${r.status} ${r.json?.message ?? r.body.slice(0, 200)}`);
    this.stats.heartbeats++;
  }

  /** A type's version, kind and scope from the downstream cluster's discovery (its preferred version). */
  private async discover(gr: { group: string; resource: string }): Promise<SyncedType> {
    let version = 'v1';
    if (gr.group) {
      const g = await this.down.must('GET', `/apis/${gr.group}`);
      version = String(g.json?.preferredVersion?.version ?? g.json?.versions?.[0]?.version ?? '');
    }
    const apiPath = gr.group ? `/apis/${gr.group}/${version}` : '/api/v1';
    const list = await this.down.must('GET', apiPath);
    const r = ((list.json?.resources ?? []) as Array<{ name: string; kind: string; namespaced: boolean }>).find((x) => x.name === gr.resource);
    if (!r) throw new Error(`${gr.resource}${gr.group ? `.${gr.group}` : ''} is not served by the downstream cluster`);
    return { ...gr, version, kind: r.kind, namespaced: r.namespaced, apiPath };
  }

  private upstreamKey(obj: KubeObject): string { return `${clusterOf(obj)}|${obj.metadata.namespace ?? ''}|${obj.metadata.name}`; }

  /** Keeps the view cache and the per-namespace counts in step. */
  private setUpstream(i: number, k: string, obj: KubeObject | undefined): void {
    const m = this.upstream[i]!;
    const had = m.has(k);
    if (obj) m.set(k, obj); else m.delete(k);
    if (this.types[i]!.resource === 'namespaces' && !this.types[i]!.group) return;
    const [cluster, ns] = k.split('|') as [string, string];
    if (!ns || had === Boolean(obj)) return;
    const nk = `${cluster}|${ns}`;
    const n = (this.upstreamPerNamespace.get(nk) ?? 0) + (obj ? 1 : -1);
    if (n > 0) this.upstreamPerNamespace.set(nk, n);
    else {
      this.upstreamPerNamespace.delete(nk);
      // The namespace may be empty now: its downstream copy may go.
      const nsType = this.namespacesType();
      if (nsType >= 0) this.enqueue(nsType, `${cluster}||${ns}`);
    }
  }

  private namespacesType(): number { return this.types.findIndex((t) => t.resource === 'namespaces' && !t.group); }

  private enqueue(i: number, key: string): void {
    if (!this.queue) return;
    this.queue.add(`${i}|${key.slice(0, key.indexOf('|'))}`, key);
  }

  /** A queue refilled after it overflowed: all its objects known on either side. */
  private refill(queue: string): void {
    const bar = queue.indexOf('|');
    const i = Number(queue.slice(0, bar)); const cluster = queue.slice(bar + 1);
    for (const k of this.upstream[i]?.keys() ?? []) if (k.startsWith(`${cluster}|`)) this.enqueue(i, k);
    for (const obj of this.downstream[i]?.values() ?? []) this.enqueueDownstream(i, obj);
  }

  /** Enqueues the upstream key a downstream object belongs to (from its namespace's, or its own, locator); returns it, if any. */
  private enqueueDownstream(i: number, obj: KubeObject): string | undefined {
    const t = this.types[i]!;
    const ns = obj.metadata.namespace;
    const loc = ns ? locatorFromAnnotations(this.downstreamNamespaces.get(ns)?.metadata.annotations) : locatorFromAnnotations(obj.metadata.annotations);
    if (!loc || loc.syncTarget.uid !== this.opts.syncTargetUID) return undefined;
    const key = `${loc.cluster ?? ''}|${ns ? loc.namespace : ''}|${upstreamName(t, obj.metadata.name!)}`;
    this.enqueue(i, key);
    return key;
  }

  private enqueueDownstreamNamespace(ns: KubeObject): void {
    const loc = locatorFromAnnotations(ns.metadata.annotations);
    const i = this.namespacesType();
    if (!loc || i < 0 || loc.syncTarget.uid !== this.opts.syncTargetUID) return;
    this.enqueue(i, `${loc.cluster ?? ''}||${loc.namespace}`);
    // Objects in it may be waiting for their locator.
    this.types.forEach((t, j) => {
      if (!t.namespaced) return;
      for (const obj of this.downstream[j]!.values()) if (obj.metadata.namespace === ns.metadata.name) this.enqueueDownstream(j, obj);
    });
  }

  private async work(): Promise<void> {
    for (;;) {
      const item = await this.queue.next();
      if (!item) return;
      try {
        await this.reconcile(item);
        this.failures.delete(`${item.queue}\0${item.key}`);
      } catch (err) {
        if (this.stopped) { this.queue.done(item); return; }
        this.stats.errors++;
        const id = `${item.queue}\0${item.key}`;
        const n = this.failures.get(id) ?? 0;
        if (this.failures.size < 100_000) this.failures.set(id, n + 1);
        const delay = exponentialDelayMs(n, 50, 30_000);
        if (!(err instanceof SideError && err.status === 409)) this.log(`${item.key}: ${(err as Error).message} (retry in ${delay} ms)`);
        setTimeout(() => { if (!this.stopped) this.queue.add(item.queue, item.key); }, delay).unref?.();
      }
      this.queue.done(item);
    }
  }

  /** The locator of upstream namespace `namespace` of `cluster` for this SyncTarget. */
  private locator(cluster: string, namespace: string): NamespaceLocator {
    return namespaceLocator(cluster, this.cluster, this.opts.syncTargetUID, this.opts.syncTargetName, namespace);
  }

  /**
   * The downstream namespace of `loc` ({@link physicalClusterNamespaceName}: a SHA-224 in base 36,
   * on every reconcile otherwise), remembered per `<cluster>|<namespace>`; at most
   * {@link MAX_REMEMBERED_NAMESPACES} (then forgotten all at once and computed again).
   */
  private downstreamNamespace(cluster: string, namespace: string, loc: NamespaceLocator): string {
    const k = `${cluster}|${namespace}`;
    let name = this.namespaceNames.get(k);
    if (name === undefined) {
      if (this.namespaceNames.size >= MAX_REMEMBERED_NAMESPACES) this.namespaceNames.clear();
      name = physicalClusterNamespaceName(loc);
      this.namespaceNames.set(k, name);
    }
    return name;
  }

  private viewPath(t: SyncedType, cluster: string, ns: string, name: string): string {
    return `${this.vwPath}/clusters/${cluster}${t.apiPath}${ns ? `/namespaces/${ns}` : ''}/${t.resource}/${name}`;
  }

  private downPath(t: SyncedType, ns: string, name: string): string {
    return `${t.apiPath}${ns ? `/namespaces/${ns}` : ''}/${t.resource}/${name}`;
  }

  /** Brings one upstream object and its downstream copy in step (see the module comment). */
  private async reconcile(item: QueueItem): Promise<void> {
    const i = Number(item.queue.slice(0, item.queue.indexOf('|')));
    const t = this.types[i]!;
    const [cluster, ns, name] = item.key.split('|') as [string, string, string];
    const isNamespace = t.resource === 'namespaces' && !t.group;
    const loc = this.locator(cluster, isNamespace ? name : ns);
    const dns = isNamespace || t.namespaced ? this.downstreamNamespace(cluster, isNamespace ? name : ns, loc) : '';
    const dname = isNamespace ? dns : downstreamName(t, name);
    let view = this.upstream[i]!.get(item.key);
    // Our finalizer write's answer is newer than the informer's view until its event comes (the
    // downstream copy's event often comes first): use it rather than write the finalizer again
    // (which would be refused with 409 and retried).
    const taken = this.finalizing.get(item.key);
    if (taken) {
      if (view && view.metadata.resourceVersion === taken.from) view = taken.view;
      else this.finalizing.delete(item.key);
    }
    const downKey = isNamespace ? `|${dns}` : `${dns}|${dname}`;
    const down = isNamespace ? this.downstreamNamespaces.get(dns) : this.downstream[i]!.get(downKey);
    // A copy exists downstream when the informer shows it, or when this syncer applied it and the
    // informer has not shown it yet (its ADDED event may come after the upstream deletion's).
    const deleteDownstream = async () => {
      if (down ? down.metadata.deletionTimestamp : !this.applied[i]!.has(item.key)) return;
      await this.down.must('DELETE', isNamespace ? `/api/v1/namespaces/${dns}` : this.downPath(t, dns, dname), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' }, undefined, [404]);
      this.applied[i]!.delete(item.key);
      this.stats.deleted++;
    };
    if (!view) {
      // Not (or no longer) scheduled here. A namespace goes only once no upstream object is left in it.
      if (isNamespace && this.upstreamPerNamespace.has(`${cluster}|${name}`)) return;
      await deleteDownstream();
      this.applied[i]!.delete(item.key);
      return;
    }
    if (!isSyncable(t, view)) { await deleteDownstream(); return; }
    const finalizer = SYNCER_FINALIZER_PREFIX + this.key;
    if (view.metadata.deletionTimestamp) {
      if (down || this.applied[i]!.has(item.key)) { await deleteDownstream(); return; }
      // Gone downstream: release it (the view drops the state label, and the object if deleted).
      const released = structuredClone(view);
      released.metadata.finalizers = (released.metadata.finalizers ?? []).filter((f) => f !== finalizer);
      delete released.metadata.annotations?.['kcp.io/cluster'];
      await this.up.must('PUT', this.viewPath(t, cluster, isNamespace ? '' : ns, name), released, undefined, [404]);
      this.applied[i]!.delete(item.key);
      this.stats.released++;
      return;
    }
    // The finalizer upstream and the copy downstream are written at once (kcp takes the finalizer
    // first and applies on the next reconcile: two round trips more on the way down). Nothing is
    // lost that way: a copy whose upstream object left the view without our finalizer is deleted
    // all the same (the downstream informer's event, or its list after a restart, brings it back
    // here); a failed finalizer write fails the reconcile, which is retried.
    const from = view.metadata.resourceVersion!;
    const takeFinalizer = (view.metadata.finalizers ?? []).includes(finalizer) ? undefined
      : this.up.must('PATCH', this.viewPath(t, cluster, isNamespace ? '' : ns, name), { metadata: { finalizers: [finalizer], resourceVersion: from } }, MERGE)
        .then((r) => {
          this.stats.finalizersAdded++;
          const answer = r.json as KubeObject;
          if (this.finalizing.size < MAX_FINALIZING) this.finalizing.set(item.key, { from, view: answer });
          return answer;
        });
    // Settled here even if the downstream side throws first (no unhandled rejection).
    takeFinalizer?.catch(() => undefined);
    try {
      await this.specDown(i, t, item.key, view, loc, dns, dname, isNamespace);
    } finally {
      if (takeFinalizer) view = await takeFinalizer;
    }
    if (isNamespace || !down) return; // its status comes with the downstream informer's event
    // Status up.
    const status = (down as KubeObject & { status?: unknown }).status;
    if (status !== undefined && !isDeepStrictEqual(status, view.status)) {
      const next = structuredClone(view);
      next.status = status;
      delete next.metadata.annotations?.['kcp.io/cluster'];
      await this.up.must('PUT', `${this.viewPath(t, cluster, ns, name)}/status`, next);
      this.stats.statusUpdated++;
    }
  }

  /** Creates the downstream namespace if missing, then applies the copy of `view` unless applied already. */
  private async specDown(i: number, t: SyncedType, key: string, view: KubeObject, loc: NamespaceLocator, dns: string, dname: string, isNamespace: boolean): Promise<void> {
    if (dns && !this.downstreamNamespaces.has(dns)) {
      const nsObj = {
        apiVersion: 'v1', kind: 'Namespace',
        metadata: { name: dns, labels: { [DOWNSTREAM_CLUSTER_LABEL]: this.key, [TENANT_ID_LABEL]: tenantID(loc) }, annotations: { [NAMESPACE_LOCATOR_ANNOTATION]: locatorJSON(loc) } },
      };
      const r = await this.down.must('POST', '/api/v1/namespaces', nsObj, undefined, [409]);
      if (r.status === 409) {
        // Ours already (the informer has not seen it yet), or someone else's: never write into a namespace not ours.
        const got = (await this.down.must('GET', `/api/v1/namespaces/${dns}`)).json as KubeObject;
        if (got.metadata.annotations?.[NAMESPACE_LOCATOR_ANNOTATION] !== locatorJSON(loc)) throw new Error(`downstream namespace ${dns} exists without this locator`);
        if (got.metadata.deletionTimestamp) throw new Error(`downstream namespace ${dns} is being deleted`);
        this.downstreamNamespaces.set(dns, got);
      } else this.downstreamNamespaces.set(dns, r.json as KubeObject);
    }
    if (isNamespace) return;
    const copy = (): string => {
      const desired = toDownstream(view, t, this.key, dns, loc);
      desired.apiVersion = t.group ? `${t.group}/${t.version}` : t.version;
      desired.kind = t.kind;
      return JSON.stringify(desired);
    };
    // The digest of a view's copy is computed once (a downstream event reconciles the same view again).
    let body: string | undefined;
    let sum = this.desiredOf.get(view);
    if (sum === undefined) {
      body = copy();
      sum = digest(body);
      this.desiredOf.set(view, sum);
    }
    // Applied already (its event may not have come yet): not again until it changes or goes.
    if (this.applied[i]!.get(key) !== sum) {
      body ??= copy();
      await this.down.must('PATCH', `${this.downPath(t, dns, dname)}?fieldManager=${SYNCER_FIELD_MANAGER}&force=true`, body, APPLY);
      this.applied[i]!.set(key, sum);
      this.stats.applied++;
    }
  }
}
