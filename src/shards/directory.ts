/**
 * What one process knows about the other shards of its kcp-ts instance, kept current by watches:
 * the `Shard` objects of the root workspace, every shard's logical clusters (path → shard and
 * logical cluster, phase) and the objects every shard must read although one shard holds them
 * (WorkspaceTypes today; APIExports and APIResourceSchemas join them later).
 *
 * Replication is a list+watch (RemoteInformer) per shard and resource over the shards' own API,
 * authenticated with the instance's shard client certificate: the lag is watch delivery
 * (milliseconds), a shard that is down keeps its last known objects until it returns (its
 * informers resume from their last resourceVersion, or list again after 410), and nothing but
 * the shards' own storage holds the data. docs/architecture.md ("Shards") gives the reasons.
 *
 * Used by every shard (for scheduling, path resolution and type lookup across shards) and by the
 * front-proxy (its path index).
 */
import { CLUSTER_ANNOTATION, type KubeObject } from '../apimachinery/meta.js';
import { RemoteInformer } from '../client/informer.js';
import { RestClient, type Connection } from '../client/rest.js';
import { PATH_ANNOTATION, ROOT } from '../tenancy/paths.js';

/** A shard as its `core.kcp.io/v1alpha1 Shard` object describes it. */
export interface ShardInfo {
  name: string;
  /** URL other shards and the front-proxy reach it at. */
  baseURL: string;
  /** URL clients reach its workspaces at (the front-proxy's, in an instance with one). */
  externalURL: string;
  virtualWorkspaceURL: string;
  labels: Record<string, string>;
  /**
   * Annotated {@link UNSCHEDULABLE_ANNOTATION} (kcp's): no new workspace is scheduled onto it;
   * its logical clusters stay until they are migrated (src/shards/migration.ts).
   */
  unschedulable: boolean;
  /** Annotated {@link DRAIN_ANNOTATION}: its logical clusters are being migrated away. */
  draining: boolean;
}

/** Annotation of a Shard that takes it out of workspace scheduling (kcp `kcp.io/unschedulable`). */
export const UNSCHEDULABLE_ANNOTATION = 'kcp.io/unschedulable';
/**
 * Annotation of a Shard (value `true`) whose logical clusters are migrated to the other shards
 * (src/shards/migration.ts); it is unschedulable too. kcp has no such annotation.
 */
export const DRAIN_ANNOTATION = 'kcp-ts.io/drain';

/** Where a logical cluster lives. */
export interface ClusterLocation {
  shard: string;
  /** Logical cluster name. */
  cluster: string;
  /** Canonical workspace path ('' when unknown). */
  path: string;
  /** `status.phase` of its LogicalCluster. */
  phase: string;
  /** The Workspace owning it (LogicalCluster `spec.owner` of resource `workspaces`), if any. */
  owner?: { cluster: string; name: string; uid: string };
  /** Whether its LogicalCluster is being deleted. */
  deleting: boolean;
  /** `status.initializers` still to run, when any. */
  initializers?: string[];
  /** `status.URL`: where clients reach it. */
  URL?: string;
}

/**
 * A change the directory saw: the shard list (`shard` ''), one logical cluster of a shard
 * (`location`), or replicated objects of a shard (`resource`, as given in `replicate`).
 */
export interface DirectoryChange { shard: string; location?: ClusterLocation; deleted?: boolean; resource?: string }

/** Reads `Shard` objects into {@link ShardInfo}. */
export function shardInfoOf(obj: KubeObject): ShardInfo {
  const spec = (obj.spec ?? {}) as { baseURL?: string; externalURL?: string; virtualWorkspaceURL?: string };
  const baseURL = spec.baseURL ?? '';
  return {
    name: obj.metadata.name!, baseURL, externalURL: spec.externalURL || baseURL,
    virtualWorkspaceURL: spec.virtualWorkspaceURL || baseURL, labels: { ...(obj.metadata.labels ?? {}) },
    unschedulable: (obj.metadata.annotations?.[UNSCHEDULABLE_ANNOTATION] !== undefined && obj.metadata.annotations[UNSCHEDULABLE_ANNOTATION] !== 'false')
      || obj.metadata.annotations?.[DRAIN_ANNOTATION] === 'true',
    draining: obj.metadata.annotations?.[DRAIN_ANNOTATION] === 'true',
  };
}

/** Where the Shard objects come from: the root shard over HTTPS, or the caller (the root shard itself). */
export type ShardSource = { remote: Connection } | { local: (listener: (shards: ShardInfo[]) => void) => void };

/** Options of a {@link ShardDirectory}. */
export interface ShardDirectoryOptions {
  /** Name of the shard this process is (its own objects are not watched), if any. */
  self?: string;
  shards: ShardSource;
  /** CA and client certificate for reaching the shards' base URLs. */
  credentials: Omit<Connection, 'url'>;
  /**
   * Group/version/resource paths replicated besides LogicalClusters, e.g.
   * `apis/tenancy.kcp.io/v1alpha1/workspacetypes`; read with {@link replicated}.
   */
  replicate?: string[];
  /** Called on any change of shards or logical clusters (after the maps are updated); see also {@link ShardDirectory.subscribe}. */
  onChange?: (what: DirectoryChange) => void;
  /** Notices (a shard unreachable, back again). */
  log?: (message: string) => void;
  /**
   * Keep only what routing needs of each logical cluster — shard, name, path (the
   * front-proxy's index): no phase, owner, initializers or URL. Cuts the memory per entry to
   * a few hundred bytes.
   */
  routingOnly?: boolean;
}

interface Watched {
  info: ShardInfo;
  client: RestClient;
  informers: RemoteInformer[];
  /** Logical cluster names of this shard, for removal on relist. */
  clusters: Set<string>;
  /** Replicated objects: resource path → logical cluster → name → object. */
  objects: Map<string, Map<string, Map<string, KubeObject>>>;
}

/** The instance's shards and where each logical cluster lives. */
export class ShardDirectory {
  private readonly shards = new Map<string, ShardInfo>();
  private readonly watched = new Map<string, Watched>();
  private readonly byPath = new Map<string, ClusterLocation>();
  private readonly byName = new Map<string, ClusterLocation>();
  /**
   * Paths and names of logical clusters that left a shard without being deleted (a migration's
   * origin removed its copy), with when: their arrival on the destination may reach this index
   * after their departure from the origin, each shard's watch being its own stream. Oldest first;
   * at most {@link DEPARTED_MAX} entries, each forgotten after {@link DEPARTED_MEMORY_MS}.
   */
  private readonly departures = new Map<string, number>();
  private rootInformer: RemoteInformer | undefined;
  private rootClient: RestClient | undefined;
  private stopped = false;
  private readonly listeners = new Set<(what: DirectoryChange) => void>();

  constructor(private readonly opts: ShardDirectoryOptions) {
    if ('remote' in opts.shards) {
      this.rootClient = new RestClient(opts.shards.remote, 4);
      const seen = new Map<string, ShardInfo>();
      this.rootInformer = new RemoteInformer(this.rootClient, { path: `/clusters/${ROOT}/apis/core.kcp.io/v1alpha1/shards` }, {
        replace: (items) => { seen.clear(); for (const o of items) seen.set(o.metadata.name!, shardInfoOf(o)); this.setShards([...seen.values()]); },
        event: (type, o) => { if (type === 'DELETED') seen.delete(o.metadata.name!); else seen.set(o.metadata.name!, shardInfoOf(o)); this.setShards([...seen.values()]); },
      });
    } else {
      opts.shards.local((list) => this.setShards(list));
    }
  }

  /** Resolves once the shard list and every watched shard's first list arrived (or after `timeoutMs`). */
  async synced(timeoutMs = 10_000): Promise<void> {
    const all = async () => {
      await this.rootInformer?.hasSynced;
      await Promise.all([...this.watched.values()].flatMap((w) => w.informers.map((i) => i.hasSynced)));
    };
    await Promise.race([all(), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  }

  /**
   * Retries every watch waiting out a backoff now (RemoteInformer.retryNow): told when shards
   * this process started have begun to listen, e.g. by `kcp-ts start --shards N`, whose root
   * shard knows the others' Shard objects from the previous run before they listen.
   */
  retryNow(): void {
    this.rootInformer?.retryNow();
    for (const w of this.watched.values()) for (const i of w.informers) i.retryNow();
  }

  /** Every known shard (including this process's own). */
  list(): ShardInfo[] { return [...this.shards.values()]; }

  /** One shard by name. */
  get(name: string): ShardInfo | undefined { return this.shards.get(name); }

  /** Whether the watches of a shard are connected (false for unknown shards; true for self). */
  reachable(name: string): boolean {
    if (name === this.opts.self) return true;
    const w = this.watched.get(name);
    return w !== undefined && w.informers.every((i) => i.isSynced);
  }

  /** The logical cluster a workspace path or logical cluster name designates, on another shard. */
  locate(pathOrName: string): ClusterLocation | undefined {
    return this.byPath.get(pathOrName) ?? this.byName.get(pathOrName);
  }

  /**
   * Whether `pathOrName` left a shard without being deleted within the last
   * {@link DEPARTED_MEMORY_MS} and is not placed anywhere now: it is most likely on its way to
   * another shard (a migration), whose watch event has not arrived yet.
   */
  departed(pathOrName: string): boolean {
    const at = this.departures.get(pathOrName);
    return at !== undefined && Date.now() - at < DEPARTED_MEMORY_MS && this.locate(pathOrName) === undefined;
  }

  /** The logical clusters known on another shard `shard`. */
  clustersOn(shard: string): ClusterLocation[] {
    return [...this.byName.values()].filter((l) => l.shard === shard);
  }

  /** Number of logical clusters known on other shards. */
  get size(): number { return this.byName.size; }

  /** A replicated object of another shard (`resource` as given in `replicate`). */
  replicated(resource: string, cluster: string, name: string): KubeObject | undefined {
    for (const w of this.watched.values()) {
      const o = w.objects.get(resource)?.get(cluster)?.get(name);
      if (o) return o;
    }
    return undefined;
  }

  /** The replicated objects of `resource` (as given in `replicate`) in one logical cluster of another shard. */
  replicatedIn(resource: string, cluster: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const w of this.watched.values()) out.push(...(w.objects.get(resource)?.get(cluster)?.values() ?? []));
    return out;
  }

  /** Every replicated object of `resource` (as given in `replicate`), of all other shards. */
  replicatedList(resource: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const w of this.watched.values()) for (const inCluster of w.objects.get(resource)?.values() ?? []) out.push(...inCluster.values());
    return out;
  }

  /** A client for a shard's base URL, with the instance's shard credentials. */
  client(shard: string): RestClient | undefined {
    return this.watched.get(shard)?.client;
  }

  /**
   * Resolves once `pathOrName` is placed on a shard other than `from` (a migration's cutover
   * reached this index) — on any shard when `from` is undefined — or after `timeoutMs`; true
   * when it moved.
   */
  moved(pathOrName: string, from: string | undefined, timeoutMs: number): Promise<boolean> {
    const elsewhere = () => { const loc = this.locate(pathOrName); return loc !== undefined && loc.shard !== from; };
    if (elsewhere()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (moved: boolean) => { clearTimeout(timer); unsubscribe(); resolve(moved); };
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      const unsubscribe = this.subscribe((what) => { if (what.location && elsewhere()) done(true); });
    });
  }

  /** Calls `listener` on every later change (as `onChange`); returns the function that unsubscribes. */
  subscribe(listener: (what: DirectoryChange) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  private changed(what: DirectoryChange): void {
    this.opts.onChange?.(what);
    for (const l of this.listeners) l(what);
  }

  /** Stops every watch and closes connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.rootInformer?.stop();
    this.rootClient?.close();
    await Promise.all([...this.watched.values()].map((w) => this.unwatch(w)));
    this.watched.clear();
  }

  private setShards(list: ShardInfo[]): void {
    if (this.stopped) return;
    const names = new Set(list.map((s) => s.name));
    for (const [name, w] of this.watched) {
      const now = list.find((s) => s.name === name);
      if (!now || now.baseURL !== w.info.baseURL) { this.watched.delete(name); void this.unwatch(w); }
    }
    this.shards.clear();
    for (const s of list) this.shards.set(s.name, s);
    for (const s of list) {
      const w = this.watched.get(s.name);
      if (w) { w.info = s; continue; }
      if (s.name !== this.opts.self && s.baseURL) this.watch(s);
    }
    for (const name of [...this.watched.keys()]) if (!names.has(name)) this.watched.delete(name);
    this.changed({ shard: '' });
  }

  private watch(info: ShardInfo): void {
    const client = new RestClient({ ...this.opts.credentials, url: info.baseURL }, 16);
    const w: Watched = { info, client, informers: [], clusters: new Set(), objects: new Map() };
    this.watched.set(info.name, w);
    const log = this.opts.log ?? (() => undefined);
    let lost = false;
    // Said once a cut lasted a second: a watch ending and resuming at once (a shard restarting
    // its watches, shards of one process stopping together) is no news.
    let pending: NodeJS.Timeout | undefined;
    const state = (s: 'synced' | 'disconnected', error?: string) => {
      if (this.stopped || !this.watched.has(info.name)) return;
      if (s === 'disconnected' && !lost && !pending) {
        pending = setTimeout(() => {
          pending = undefined;
          if (this.stopped || !this.watched.has(info.name) || this.reachable(info.name)) return;
          lost = true;
          log(`shard ${info.name} (${info.baseURL}) unreachable: ${error ?? ''}`);
        }, 1000);
        pending.unref();
      }
      if (s === 'synced') {
        if (pending && this.reachable(info.name)) { clearTimeout(pending); pending = undefined; }
        if (lost && this.reachable(info.name)) { lost = false; log(`shard ${info.name} reachable again`); }
      }
    };
    const slim = this.opts.routingOnly ? slimForRouting : slimLogicalCluster;
    // Routing needs metadata only: the (re)list of a big shard comes without spec and status.
    const listAccept = this.opts.routingOnly ? 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' : undefined;
    w.informers.push(new RemoteInformer(client, { path: '/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters', slim, listAccept }, {
      replace: (items) => {
        const fresh = new Set<string>();
        for (const o of items) fresh.add(this.putCluster(w, o));
        for (const name of w.clusters) if (!fresh.has(name)) this.removeCluster(w, name);
        w.clusters = fresh;
      },
      event: (type, o) => {
        if (type === 'DELETED') { const name = clusterOf(o); this.removeCluster(w, name); w.clusters.delete(name); }
        else w.clusters.add(this.putCluster(w, o));
      },
      state,
    }));
    for (const resource of this.opts.replicate ?? []) {
      const objects = new Map<string, Map<string, KubeObject>>();
      w.objects.set(resource, objects);
      const put = (o: KubeObject) => {
        const c = clusterOf(o);
        let inCluster = objects.get(c);
        if (!inCluster) { inCluster = new Map(); objects.set(c, inCluster); }
        inCluster.set(o.metadata.name!, o);
      };
      const remove = (o: KubeObject) => {
        const c = clusterOf(o);
        const inCluster = objects.get(c);
        if (inCluster?.delete(o.metadata.name!) && !inCluster.size) objects.delete(c);
      };
      w.informers.push(new RemoteInformer(client, { path: `/clusters/*/${resource}` }, {
        replace: (items) => { objects.clear(); for (const o of items) put(o); this.changed({ shard: info.name, resource }); },
        event: (type, o) => { if (type === 'DELETED') remove(o); else put(o); this.changed({ shard: info.name, resource }); },
      }));
    }
  }

  private async unwatch(w: Watched): Promise<void> {
    await Promise.all(w.informers.map((i) => i.stop()));
    for (const name of w.clusters) this.removeCluster(w, name);
    w.client.close();
  }

  private putCluster(w: Watched, o: KubeObject): string {
    const cluster = clusterOf(o);
    const path = o.metadata.annotations?.[PATH_ANNOTATION] ?? (cluster === ROOT ? ROOT : '');
    const phase = intern(((o.status ?? {}) as { phase?: string }).phase ?? (this.opts.routingOnly ? '' : 'Scheduling'));
    const old = this.byName.get(cluster);
    if (old?.path && old.path !== path && this.byPath.get(old.path) === old) this.byPath.delete(old.path);
    const loc: ClusterLocation = { shard: w.info.name, cluster, path, phase, deleting: Boolean(o.metadata.deletionTimestamp) };
    const { initializers, URL } = (o.status ?? {}) as { initializers?: string[]; URL?: string };
    if (initializers?.length) loc.initializers = initializers;
    if (URL) loc.URL = URL;
    const owner = (o.spec as { owner?: { resource?: string; cluster?: string; name?: string; uid?: string } } | undefined)?.owner;
    if (owner?.resource === 'workspaces' && owner.cluster && owner.name) loc.owner = { cluster: owner.cluster, name: owner.name, uid: owner.uid ?? '' };
    this.byName.set(cluster, loc);
    if (path) this.byPath.set(path, loc);
    this.changed({ shard: w.info.name, location: loc });
    return cluster;
  }

  private removeCluster(w: Watched, cluster: string): void {
    const old = this.byName.get(cluster);
    if (!old || old.shard !== w.info.name) return;
    this.byName.delete(cluster);
    if (old.path && this.byPath.get(old.path) === old) this.byPath.delete(old.path);
    if (!old.deleting) this.rememberDeparture(old);
    this.changed({ shard: w.info.name, location: old, deleted: true });
  }

  private rememberDeparture(loc: ClusterLocation): void {
    const now = Date.now();
    for (const [key, at] of this.departures) {
      if (now - at < DEPARTED_MEMORY_MS && this.departures.size < DEPARTED_MAX) break;
      this.departures.delete(key);
    }
    for (const key of loc.path ? [loc.cluster, loc.path] : [loc.cluster]) {
      this.departures.delete(key); // re-inserted last: the map stays oldest first
      this.departures.set(key, now);
    }
  }
}

/** How long a logical cluster that left a shard without being deleted counts as {@link ShardDirectory.departed}, in milliseconds. */
export const DEPARTED_MEMORY_MS = 10_000;
/** Most departures remembered at once (paths and names): about 100 bytes each. */
export const DEPARTED_MAX = 10_000;

const interned = new Map<string, string>();
/** One string object per distinct phase, not one per logical cluster. */
function intern(s: string): string {
  let i = interned.get(s);
  if (i === undefined) { i = s; if (interned.size < 64) interned.set(s, s); }
  return i;
}

/** What a shard's directory reads of a LogicalCluster: name, cluster and path, deletion, owner and status. */
function slimLogicalCluster(o: KubeObject): KubeObject {
  const a = o.metadata.annotations ?? {};
  return {
    apiVersion: o.apiVersion, kind: o.kind,
    metadata: {
      name: o.metadata.name, resourceVersion: o.metadata.resourceVersion, annotations: { [CLUSTER_ANNOTATION]: a[CLUSTER_ANNOTATION]!, ...(a[PATH_ANNOTATION] ? { [PATH_ANNOTATION]: a[PATH_ANNOTATION] } : {}) },
      ...(o.metadata.deletionTimestamp ? { deletionTimestamp: o.metadata.deletionTimestamp } : {}),
    },
    spec: { owner: (o.spec as { owner?: unknown } | undefined)?.owner },
    status: o.status,
  };
}

/**
 * What the front-proxy reads of a LogicalCluster: cluster and path, and whether it is being
 * deleted (a deleted one is not waited for elsewhere, see {@link ShardDirectory.departed}).
 */
function slimForRouting(o: KubeObject): KubeObject {
  const a = o.metadata.annotations ?? {};
  return {
    apiVersion: o.apiVersion, kind: o.kind,
    metadata: {
      name: o.metadata.name, annotations: { [CLUSTER_ANNOTATION]: a[CLUSTER_ANNOTATION]!, ...(a[PATH_ANNOTATION] ? { [PATH_ANNOTATION]: a[PATH_ANNOTATION] } : {}) },
      ...(o.metadata.deletionTimestamp ? { deletionTimestamp: o.metadata.deletionTimestamp } : {}),
    },
  };
}

/** The logical cluster of an object listed across clusters (kcp's `kcp.io/cluster` annotation). */
export function clusterOf(o: KubeObject): string {
  return o.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '';
}
