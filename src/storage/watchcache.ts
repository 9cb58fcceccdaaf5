/**
 * The in-process watch cache of one shard, fed by one stream tailer (docs/architecture.md, "Storage (Redis)"; modelled on
 * kube-apiserver's cacher, k8s.io/apiserver/pkg/storage/cacher).
 *
 * Start-up: read the revision counter R, load every object (SCAN + MGET), load the last events up
 * to R into the history window, then tail the stream from `R-0` with XREAD BLOCK. Objects read
 * during the scan may be newer than R; an event never overwrites a newer entry, so the cache
 * converges to the stream's order. Revisions are dense, so a gap (trimmed stream after a long
 * disconnect) is detected exactly and answered by a full resynchronisation.
 *
 * Memory: one entry per object holding its stored JSON string and labels (no parsed copy).
 */
import { duplicateClient, scanKeys, type RedisClient } from './redis.js';
import { ShardKeys, parseObjectKey } from './keys.js';
import { StatusError } from '../apimachinery/errors.js';
import { MIGRATED_EVENT, floorsKey } from './migration.js';
import { STREAM_EVENT_CHARS } from './scripts.js';

/** A cached object. */
export interface CacheEntry {
  /** Object key (`<group>/<resource>/<cluster>/[<ns>/]<name>`). */
  key: string;
  groupResource: string;
  cluster: string;
  /** '' for cluster-scoped objects. */
  namespace: string;
  name: string;
  /** Revision that wrote this state. */
  rv: number;
  /** Stored JSON (metadata.resourceVersion = rv). */
  json: string;
  /** `metadata.labels`, for selector matching. */
  readonly labels: Record<string, string> | undefined;
}

const parsedEntries = new WeakMap<CacheEntry, unknown>();

/**
 * The object of a cache entry, parsed once per stored version (an entry is never changed: a new
 * version is a new entry). Shared by every caller: read it, never mutate it.
 */
export function entryObject<T = unknown>(e: CacheEntry): T {
  let o = parsedEntries.get(e);
  if (o === undefined) { o = JSON.parse(e.json); parsedEntries.set(e, o); }
  return o as T;
}

/** Watch event type, as in `metav1.WatchEvent`. */
export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One applied change; `prev` is the state it replaced. It is absent for ADDED, and for a MODIFIED
 * event loaded from the stream at start-up whose previous state lies before the retained history
 * (unknown: the stream stores only new states). A DELETED event's `entry` is the deleted state.
 */
export interface CacheEvent {
  rv: number;
  type: EventType;
  entry: CacheEntry;
  prev?: CacheEntry;
  /**
   * The removal of a logical cluster's copy after it migrated to another shard
   * (src/storage/migration.ts): applied to the cache, its subscribers and the wildcard watches
   * (the shard no longer holds these objects: other shards' indexes learn it so), never sent to
   * a watch of that logical cluster (it lives on elsewhere).
   */
  hidden?: boolean;
}

/** A migration marker of the stream: the revision jumps from `prev` to `rv`; `cluster` is served from `rv` on. */
interface MigrationMarker { marker: true; rv: number; prev: number; cluster: string }

/** A subscriber of live events of one resource (optionally one cluster). */
export interface CacheWatcher {
  groupResource: string;
  /** A logical cluster, or `*` for all. */
  cluster: string;
  onEvent(ev: CacheEvent): void;
  /**
   * Called when the cache can no longer guarantee continuity (resync), or its logical cluster
   * leaves the shard (`status`: the ERROR event to end with, 410 Gone): the watch must end.
   */
  onTerminate(status?: Record<string, unknown>): void;
}

/** Options of the cache. */
export interface WatchCacheOptions {
  /** Events kept in memory for watches that resume from a revision (default 20,000). */
  historySize?: number;
  /**
   * Characters of stored JSON those events may hold together (default {@link HISTORY_CHARS}):
   * the window ends at whichever bound it reaches first.
   */
  historyChars?: number;
}

/**
 * Default bound of the history window in characters of the events' objects: what the event
 * stream keeps ({@link STREAM_EVENT_CHARS}, 256 Mi), from which the window is loaded at start-up.
 * Counted in events alone, a tenant rewriting objects of 1.4 MB made the window 20,000 × 1.4 MB =
 * 28 GB, and the shard ran out of memory for every tenant long before. With the bound, a watch that
 * falls behind such a writer resumes less far back (410 Expired, then a relist, as after an etcd
 * compaction). Each retained event also keeps the state it replaced, so the window's memory is
 * at most about twice this.
 */
export const HISTORY_CHARS = STREAM_EVENT_CHARS;

/** Events read per XREVRANGE when the history window is loaded at start-up. */
const HISTORY_PAGE = 1000;

/**
 * A map of string keys that holds its first key and value inline and makes a `Map` only when a
 * second key arrives (and keeps it). A `Map` costs about 120 bytes even with one entry, and the
 * cache holds two per resource and logical cluster (namespaces, then names) — an empty
 * workspace's logical cluster has one object of each of its resources, so most hold one key.
 * Iteration follows insertion order, as a `Map`'s.
 */
export class SmallMap<V> {
  private k: string | undefined;
  private v: V | undefined;
  private m: Map<string, V> | undefined;

  get size(): number { return this.m ? this.m.size : this.k === undefined ? 0 : 1; }

  get(key: string): V | undefined {
    if (this.m) return this.m.get(key);
    return key === this.k ? this.v : undefined;
  }

  set(key: string, value: V): void {
    if (this.m) { this.m.set(key, value); return; }
    if (this.k === undefined || this.k === key) { this.k = key; this.v = value; return; }
    this.m = new Map([[this.k, this.v as V], [key, value]]);
    this.k = undefined; this.v = undefined;
  }

  delete(key: string): boolean {
    if (this.m) return this.m.delete(key);
    if (this.k === undefined || this.k !== key) return false;
    this.k = undefined; this.v = undefined;
    return true;
  }

  keys(): string[] {
    if (this.m) return [...this.m.keys()];
    return this.k === undefined ? [] : [this.k];
  }

  values(): V[] {
    if (this.m) return [...this.m.values()];
    return this.k === undefined ? [] : [this.v as V];
  }
}

/** Objects and characters of stored JSON of a resource in one logical cluster. */
interface Tally { objects: number; size: number }

/** Objects of one namespace ('' for cluster-scoped) with a lazily rebuilt sorted view. */
class NamespaceIndex {
  readonly byName = new SmallMap<CacheEntry>();
  /** Characters of the entries' stored JSON. */
  size = 0;
  private sorted: CacheEntry[] | undefined;

  set(e: CacheEntry): CacheEntry | undefined {
    const prev = this.byName.get(e.name);
    this.byName.set(e.name, e);
    this.size += e.json.length - (prev?.json.length ?? 0);
    // Same key replaced in place keeps the order; a new key needs a re-sort.
    if (prev && this.sorted) {
      // Binary search by name: the sorted view stays valid when only the value changes.
      let lo = 0; let hi = this.sorted.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1; const n = this.sorted[mid]!.name;
        if (n === e.name) { this.sorted[mid] = e; return prev; }
        if (n < e.name) lo = mid + 1; else hi = mid - 1;
      }
      this.sorted = undefined;
    } else this.sorted = undefined;
    return prev;
  }

  delete(name: string): CacheEntry | undefined {
    const prev = this.byName.get(name);
    if (prev) { this.byName.delete(name); this.size -= prev.json.length; this.sorted = undefined; }
    return prev;
  }

  /**
   * Entries sorted by name. The array is shared: callers must not mutate it and must finish
   * iterating before they yield to the event loop (it changes as events apply).
   */
  entries(): readonly CacheEntry[] {
    this.sorted ??= [...this.byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this.sorted;
  }
}

/** Objects of one resource in one logical cluster, by namespace. */
type ClusterIndex = SmallMap<NamespaceIndex>;
type ClusterMap = Map<string, ClusterIndex>;

/**
 * A cached object. Labels are parsed from the JSON on first use: most writes are never matched
 * against a label selector, so the tailer does not parse every event.
 */
class Entry implements CacheEntry {
  private parsedLabels: Record<string, string> | undefined | null = null;

  constructor(
    readonly key: string, readonly groupResource: string, readonly cluster: string,
    readonly namespace: string, readonly name: string, readonly rv: number, readonly json: string,
  ) {}

  get labels(): Record<string, string> | undefined {
    if (this.parsedLabels === null) {
      this.parsedLabels = (JSON.parse(this.json) as { metadata?: { labels?: Record<string, string> } }).metadata?.labels;
    }
    return this.parsedLabels;
  }
}

/**
 * One string per group/resource, shared by every entry of it: parsing a key builds a new one
 * (about 90 bytes), which each cached object would otherwise keep. Tenants name resources (their
 * CRDs' groups and plurals, created and deleted at will), so the table is bounded: at
 * {@link MAX_INTERNED_GROUP_RESOURCES} it starts afresh (entries made before keep their strings;
 * only the sharing is lost).
 */
const groupResources = new Map<string, string>();
const MAX_INTERNED_GROUP_RESOURCES = 4096;

function makeEntry(key: string, json: string, rv: number): CacheEntry {
  const p = parseObjectKey(key);
  let gr = groupResources.get(p.groupResource);
  if (gr === undefined) {
    if (groupResources.size >= MAX_INTERNED_GROUP_RESOURCES) groupResources.clear();
    gr = p.groupResource;
    groupResources.set(gr, gr);
  }
  return new Entry(key, gr, p.cluster, p.namespace, p.name, rv, json);
}

function revisionOfJson(json: string): number {
  const at = json.indexOf('"resourceVersion":"');
  if (at < 0) return 0;
  const start = at + '"resourceVersion":"'.length;
  return Number(json.slice(start, json.indexOf('"', start)));
}

/** The shard's watch cache. */
export class WatchCache {
  private readonly resources = new Map<string, ClusterMap>();
  private readonly watchers = new Map<string, Map<string, Set<CacheWatcher>>>();
  private readonly listeners = new Set<(ev: CacheEvent | undefined) => void>();
  private history: CacheEvent[] = [];
  private readonly historySize: number;
  private readonly historyMaxChars: number;
  /** Characters of the objects of the events in `history`. */
  private historyChars = 0;
  private revision = 0;
  private waiters: { rv: number; resolve: () => void }[] = [];
  private stopped = false;
  private tailer: RedisClient | undefined;
  private tailDone: Promise<void> | undefined;
  private ready = false;
  /** Number of objects cached. */
  size = 0;
  /**
   * Logical clusters migrated onto this shard → the revision from which they are served here
   * (src/storage/migration.ts): a watch or exact list of one from an older revision is 410.
   */
  private floors = new Map<string, number>();
  /** Objects per resource and logical cluster (`*`: all clusters), kept with every put/remove: O(1) counts for work estimation. */
  private readonly counts = new Map<string, Map<string, Tally>>();

  constructor(private readonly client: RedisClient, private readonly keys: ShardKeys, opts: WatchCacheOptions = {}) {
    this.historySize = opts.historySize ?? 20_000;
    this.historyMaxChars = opts.historyChars ?? HISTORY_CHARS;
  }

  /** Empties the history window. */
  private clearHistory(): void {
    this.history = [];
    this.historyChars = 0;
  }

  /** Appends `ev` to the history window, and drops its oldest events (a quarter at a time) once it exceeds either bound by a quarter. */
  private remember(ev: CacheEvent): void {
    this.history.push(ev);
    this.historyChars += ev.entry.json.length;
    if (this.history.length <= this.historySize * 1.25 && this.historyChars <= this.historyMaxChars * 1.25) return;
    let drop = Math.max(0, this.history.length - this.historySize);
    let chars = this.historyChars;
    for (let i = 0; i < drop; i++) chars -= this.history[i]!.entry.json.length;
    while (chars > this.historyMaxChars && drop < this.history.length - 1) chars -= this.history[drop++]!.entry.json.length;
    this.history = this.history.slice(drop);
    this.historyChars = chars;
  }

  /** Latest revision applied to the cache. */
  get currentRevision(): number { return this.revision; }

  /** Whether the initial load finished. */
  get isReady(): boolean { return this.ready; }

  /** Oldest revision a watch can resume from (events after it are in the history window). */
  get oldestResumableRevision(): number {
    return this.history.length ? this.history[0]!.rv - 1 : this.revision;
  }

  /** Loads the shard and starts tailing. Resolves when the cache is consistent. */
  async start(): Promise<void> {
    await this.load();
    this.tailer = duplicateClient(this.client, { enableAutoPipelining: false, enableOfflineQueue: true, maxRetriesPerRequest: null, autoResendUnfulfilledCommands: true });
    this.tailer.on('error', () => { /* reconnects by itself */ });
    this.tailDone = this.tail();
    this.ready = true;
  }

  private async load(): Promise<void> {
    const rv0 = Number((await this.client.get(this.keys.rv)) ?? '0');
    const floors = await this.client.hgetall(floorsKey(this.keys));
    this.floors = new Map(Object.entries(floors).map(([c, rv]) => [c, Number(rv)]));
    this.resources.clear();
    this.counts.clear();
    this.size = 0;
    const prefixLen = this.keys.objectPrefix.length;
    await scanKeys(this.client, `${this.keys.objectPrefix}*`, async (batch) => {
      const values = await this.client.mget(...batch);
      for (let i = 0; i < batch.length; i++) {
        const json = values[i];
        if (json == null) continue;
        const entry = makeEntry(batch[i]!.slice(prefixLen), json, revisionOfJson(json));
        this.put(entry);
      }
    });
    // History: the retained events up to rv0, so watches resume across restarts.
    this.clearHistory();
    if (rv0 > 0) {
      const events = (await this.readHistory(rv0)).reverse();
      // Only a contiguous run ending at rv0 is usable.
      let start = events.length;
      for (let i = events.length - 1, expect = rv0; i >= 0; i--) {
        if (Number(events[i]![0].split('-')[0]) !== expect) break;
        start = i;
        // A migration marker accounts for the revisions it jumped over.
        const m = this.decode(events[i]![0], events[i]![1]);
        expect = m && 'marker' in m ? m.prev : expect - 1;
      }
      // The stream holds new states only; an event's previous state is the one its object's
      // preceding event in the window made (watch filters and listAt need it).
      const last = new Map<string, CacheEntry>();
      for (const [id, fields] of events.slice(start)) {
        const ev = this.decode(id, fields);
        if (!ev || 'marker' in ev) continue;
        if (ev.type !== 'ADDED') ev.prev = last.get(ev.entry.key) ?? (ev.type === 'DELETED' ? ev.entry : undefined);
        if (ev.type === 'DELETED') last.delete(ev.entry.key); else last.set(ev.entry.key, ev.entry);
        this.remember(ev);
      }
    }
    this.revision = rv0;
  }

  /**
   * The stream's events up to revision `rv0`, newest first, as many as the history window holds
   * (by count and by characters): read a page at a time, so that a stream of large objects is not
   * read whole at start-up.
   */
  private async readHistory(rv0: number): Promise<[string, string[]][]> {
    const out: [string, string[]][] = [];
    let chars = 0;
    let end = `${rv0}-0`;
    while (out.length < this.historySize && chars <= this.historyMaxChars) {
      const page = await this.client.xrevrange(this.keys.events, end, '-', 'COUNT', Math.min(HISTORY_PAGE, this.historySize - out.length));
      for (const e of page) {
        out.push(e);
        const fields = e[1];
        for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'o') chars += fields[i + 1]!.length;
        if (chars > this.historyMaxChars) break;
      }
      if (page.length < HISTORY_PAGE) break;
      end = `(${page[page.length - 1]![0]}`;
    }
    return out;
  }

  private decode(id: string, fields: string[]): CacheEvent | MigrationMarker | undefined {
    let type: EventType | undefined; let key = ''; let json = ''; let hidden = false; let cluster = ''; let prev = '';
    for (let i = 0; i < fields.length; i += 2) {
      const f = fields[i]; const v = fields[i + 1]!;
      if (f === 't') type = v as EventType; else if (f === 'k') key = v; else if (f === 'o') json = v;
      else if (f === 'h') hidden = true; else if (f === 'c') cluster = v; else if (f === 'p') prev = v;
    }
    const rv = Number(id.slice(0, id.indexOf('-')));
    if ((type as string) === MIGRATED_EVENT) return { marker: true, rv, prev: Number(prev), cluster };
    if (!type || !key) return undefined;
    const ev: CacheEvent = { rv, type, entry: makeEntry(key, json, rv) };
    if (hidden) ev.hidden = true;
    return ev;
  }

  private put(entry: CacheEntry): CacheEntry | undefined {
    let clusters = this.resources.get(entry.groupResource);
    if (!clusters) { clusters = new Map(); this.resources.set(entry.groupResource, clusters); }
    let namespaces = clusters.get(entry.cluster);
    if (!namespaces) { namespaces = new SmallMap(); clusters.set(entry.cluster, namespaces); }
    let ns = namespaces.get(entry.namespace);
    if (!ns) { ns = new NamespaceIndex(); namespaces.set(entry.namespace, ns); }
    const prev = ns.set(entry);
    if (!prev) this.size++;
    this.countBy(entry, prev ? 0 : 1, entry.json.length - (prev?.json.length ?? 0));
    return prev;
  }

  private remove(entry: CacheEntry): CacheEntry | undefined {
    const clusters = this.resources.get(entry.groupResource);
    const namespaces = clusters?.get(entry.cluster);
    const ns = namespaces?.get(entry.namespace);
    const prev = ns?.delete(entry.name);
    if (prev) {
      this.size--;
      this.countBy(entry, -1, -prev.json.length);
      // An empty logical cluster costs nothing: drop its empty maps.
      if (ns!.byName.size === 0) {
        namespaces!.delete(entry.namespace);
        if (namespaces!.size === 0) clusters!.delete(entry.cluster);
      }
    }
    return prev;
  }

  private current(entry: CacheEntry): CacheEntry | undefined {
    return this.getEntry(entry.groupResource, entry.cluster, entry.namespace, entry.name);
  }

  private async tail(): Promise<void> {
    const tailer = this.tailer!;
    let backoff = 50;
    while (!this.stopped) {
      try {
        const res = await tailer.xread('COUNT', 2000, 'BLOCK', 2000, 'STREAMS', this.keys.events, `${this.revision}-0`);
        backoff = 50;
        if (!res || this.stopped) continue;
        for (const [, entries] of res) {
          for (const [id, fields] of entries) {
            const ev = this.decode(id, fields);
            if (!ev) continue;
            if ('marker' in ev) {
              if (ev.prev !== this.revision) { await this.resync(); break; }
              this.floors.set(ev.cluster, ev.rv);
              this.revision = ev.rv;
              this.resolveWaiters();
              continue;
            }
            if (ev.rv !== this.revision + 1) { await this.resync(); break; }
            this.apply(ev);
          }
        }
      } catch {
        if (this.stopped) break;
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 1000);
      }
    }
  }

  /** Applies one event in revision order and notifies watchers. */
  private apply(ev: CacheEvent): void {
    const existing = this.current(ev.entry);
    if (existing && existing.rv >= ev.rv) {
      // The start-up scan already read a newer state of this object. Keep it; the history can no
      // longer replay this stretch exactly, so drop it: watches from before now get 410 and
      // relist, instead of missing this event.
      this.revision = ev.rv;
      this.clearHistory();
      this.resolveWaiters();
      return;
    }
    ev.prev = ev.type === 'DELETED' ? this.remove(ev.entry) : this.put(ev.entry);
    this.revision = ev.rv;
    this.remember(ev);
    for (const l of this.listeners) l(ev);
    const byCluster = this.watchers.get(ev.entry.groupResource);
    if (byCluster) {
      const a = ev.hidden ? undefined : byCluster.get(ev.entry.cluster);
      if (a) for (const w of a) w.onEvent(ev);
      const all = byCluster.get('*');
      if (all) for (const w of all) w.onEvent(ev);
    }
    this.resolveWaiters();
  }

  private resolveWaiters(): void {
    if (!this.waiters.length) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) (w.rv <= this.revision ? w.resolve() : still.push(w));
    this.waiters = still;
  }

  private async resync(): Promise<void> {
    for (const byCluster of this.watchers.values()) for (const set of byCluster.values()) for (const w of set) w.onTerminate();
    this.watchers.clear();
    await this.load();
    for (const l of this.listeners) l(undefined);
    this.resolveWaiters();
  }

  /**
   * Waits until the cache has applied `rv`. Throws 504 Timeout (`Too large resource version`,
   * as kube-apiserver's cacher) after `timeoutMs`.
   */
  async waitForRevision(rv: number, timeoutMs = 3000): Promise<void> {
    if (rv <= this.revision) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new StatusError(504, 'Timeout', `Too large resource version: ${rv}, current: ${this.revision}`,
          { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }));
      }, timeoutMs);
      const done = () => { clearTimeout(timer); resolve(); };
      this.waiters.push({ rv, resolve: done });
    });
  }

  /**
   * Current entries of a resource in one logical cluster (or `*` for all), optionally one
   * namespace, sorted by (cluster, namespace, name) as etcd key order. Costs O(entries returned)
   * when the sorted views are current. The result must not be mutated and is valid until the
   * caller yields to the event loop.
   */
  list(groupResource: string, cluster: string, namespace?: string): readonly CacheEntry[] {
    const clusters = this.resources.get(groupResource);
    if (!clusters) return [];
    const ofCluster = (namespaces: ClusterIndex | undefined): readonly CacheEntry[] => {
      if (!namespaces) return [];
      if (namespace !== undefined) return namespaces.get(namespace)?.entries() ?? [];
      if (namespaces.size === 1) return namespaces.values()[0]!.entries();
      const out: CacheEntry[] = [];
      for (const ns of namespaces.keys().sort()) out.push(...namespaces.get(ns)!.entries());
      return out;
    };
    if (cluster !== '*') return ofCluster(clusters.get(cluster));
    const out: CacheEntry[] = [];
    for (const c of [...clusters.keys()].sort()) out.push(...ofCluster(clusters.get(c)));
    return out;
  }

  private countBy(entry: CacheEntry, objects: number, chars: number): void {
    // An update that keeps the size (a status flip, a label) changes no tally.
    if (objects === 0 && chars === 0) return;
    let byCluster = this.counts.get(entry.groupResource);
    if (!byCluster) { byCluster = new Map(); this.counts.set(entry.groupResource, byCluster); }
    const add = (c: string) => {
      let t = byCluster.get(c);
      if (!t) { t = { objects: 0, size: 0 }; byCluster.set(c, t); }
      t.objects += objects;
      t.size += chars;
      if (t.objects <= 0) byCluster.delete(c);
    };
    add(entry.cluster);
    add('*');
  }

  /**
   * Number of objects of a resource in a logical cluster (`*`: all), in one namespace when given
   * ('' for cluster-scoped objects). O(1). What the quota controller and the priority-and-fairness
   * work estimator count.
   */
  count(groupResource: string, cluster: string, namespace?: string): number {
    if (namespace !== undefined && cluster !== '*') return this.resources.get(groupResource)?.get(cluster)?.get(namespace)?.byName.size ?? 0;
    return this.counts.get(groupResource)?.get(cluster)?.objects ?? 0;
  }

  /**
   * Characters of stored JSON of a resource's objects in a logical cluster (`*`: all), in one
   * namespace when given. O(1). What the work estimator weighs a LIST's large objects by.
   */
  storedSize(groupResource: string, cluster: string, namespace?: string): number {
    if (namespace !== undefined && cluster !== '*') return this.resources.get(groupResource)?.get(cluster)?.get(namespace)?.size ?? 0;
    return this.counts.get(groupResource)?.get(cluster)?.size ?? 0;
  }

  /** Open watchers of a resource that see events of logical cluster `cluster`: its own and wildcard ones (`*`: all). */
  watchersOf(groupResource: string, cluster: string): number {
    const byCluster = this.watchers.get(groupResource);
    if (!byCluster) return 0;
    if (cluster === '*') { let n = 0; for (const s of byCluster.values()) n += s.size; return n; }
    return (byCluster.get(cluster)?.size ?? 0) + (byCluster.get('*')?.size ?? 0);
  }

  /** One cached object, or undefined. */
  getEntry(groupResource: string, cluster: string, namespace: string, name: string): CacheEntry | undefined {
    return this.resources.get(groupResource)?.get(cluster)?.get(namespace)?.byName.get(name);
  }

  /** Group/resources (`<group | core>/<resource>[:<identity>]`) with objects in the cache. */
  groupResources(): string[] {
    return [...this.resources.keys()];
  }

  /** Logical clusters that hold at least one object of the resource. */
  clustersOf(groupResource: string): string[] {
    return [...(this.resources.get(groupResource)?.keys() ?? [])];
  }

  /**
   * The list as it was at revision `rv` (for `continue` tokens and `resourceVersionMatch=Exact`):
   * the current list with the history's later events undone. Throws 410 Expired when the
   * history no longer reaches back to `rv`, or when an event to undo has an unknown previous
   * state (loaded at start-up, its object's prior write older than the window).
   */
  listAt(groupResource: string, cluster: string, namespace: string | undefined, rv: number): readonly CacheEntry[] {
    this.checkFloor(cluster, rv, 'The resourceVersion for the provided list is too old.');
    const now = this.list(groupResource, cluster, namespace);
    if (rv >= this.revision) return now;
    if (rv < this.oldestResumableRevision) {
      throw new StatusError(410, 'Expired', `The resourceVersion for the provided list is too old.`);
    }
    const view = new Map(now.map((e) => [e.key, e] as const));
    let changed = false;
    for (let i = this.history.length - 1; i >= 0; i--) {
      const ev = this.history[i]!;
      if (ev.rv <= rv) break;
      const e = ev.entry;
      if (e.groupResource !== groupResource || (cluster !== '*' && e.cluster !== cluster) || (namespace && e.namespace !== namespace)) continue;
      changed = true;
      // Undo: an ADDED object was not there; otherwise the state before the event was `prev`.
      if (ev.type === 'ADDED') view.delete(e.key);
      else if (ev.prev) view.set(e.key, ev.prev);
      else throw new StatusError(410, 'Expired', `The resourceVersion for the provided list is too old.`);
    }
    if (!changed) return now;
    return [...view.values()].sort(compareEntries);
  }

  /**
   * Registers a live watcher and returns the history events after `fromRv` for it (to replay
   * before live ones). Throws 410 Expired when `fromRv` is older than the history window.
   */
  addWatcher(w: CacheWatcher, fromRv?: number): CacheEvent[] {
    let replay: CacheEvent[] = [];
    if (fromRv !== undefined) this.checkFloor(w.cluster, fromRv, `too old resource version: ${fromRv} (${this.floors.get(w.cluster)})`);
    if (fromRv !== undefined && fromRv < this.revision) {
      if (fromRv < this.oldestResumableRevision) {
        throw new StatusError(410, 'Expired', `too old resource version: ${fromRv} (${this.oldestResumableRevision})`);
      }
      let i = this.history.length;
      while (i > 0 && this.history[i - 1]!.rv > fromRv) i--;
      replay = this.history.slice(i).filter((ev) => (!ev.hidden || w.cluster === '*') && ev.entry.groupResource === w.groupResource && (w.cluster === '*' || ev.entry.cluster === w.cluster));
    }
    let byCluster = this.watchers.get(w.groupResource);
    if (!byCluster) { byCluster = new Map(); this.watchers.set(w.groupResource, byCluster); }
    let set = byCluster.get(w.cluster);
    if (!set) { set = new Set(); byCluster.set(w.cluster, set); }
    set.add(w);
    return replay;
  }

  /**
   * Tells every subscriber to rebuild from the current contents, as after a resynchronisation
   * (without reloading): informers enqueue every object again, e.g. when the controllers' queue
   * Redis restarted and its jobs may be lost.
   */
  relist(): void {
    for (const l of this.listeners) l(undefined);
  }

  /**
   * Subscribes to every applied event of the shard (informers of controllers, derived indexes).
   * The listener gets `undefined` after a resynchronisation: derived state must be rebuilt.
   * Returns the unsubscribe function.
   */
  subscribe(listener: (ev: CacheEvent | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * 410 Expired when `cluster` migrated onto this shard after revision `rv`: `rv` was handed out
   * by another shard (or before the logical cluster lived here) and is no position in this
   * shard's history (src/storage/migration.ts).
   */
  private checkFloor(cluster: string, rv: number, message: string): void {
    if (cluster === '*') return;
    const floor = this.floors.get(cluster);
    if (floor !== undefined && rv < floor) throw new StatusError(410, 'Expired', message);
  }

  /** The revision from which a logical cluster migrated onto this shard is served here, if it did. */
  floorOf(cluster: string): number | undefined { return this.floors.get(cluster); }

  /**
   * Every object of one logical cluster, all resources, as of {@link currentRevision} (taken
   * synchronously: a consistent snapshot). The entries are immutable.
   */
  snapshotCluster(cluster: string): { revision: number; entries: CacheEntry[] } {
    const entries: CacheEntry[] = [];
    for (const clusters of this.resources.values()) {
      const namespaces = clusters.get(cluster);
      if (!namespaces) continue;
      for (const ns of namespaces.values()) for (const e of ns.byName.values()) entries.push(e);
    }
    return { revision: this.revision, entries };
  }

  /**
   * The applied events of one logical cluster after revision `rv`, in order, with the revision
   * they reach; undefined when the history no longer reaches back to `rv` (copy again).
   */
  eventsSince(cluster: string, rv: number): { revision: number; events: CacheEvent[] } | undefined {
    if (rv < this.oldestResumableRevision) return undefined;
    let i = this.history.length;
    while (i > 0 && this.history[i - 1]!.rv > rv) i--;
    return { revision: this.revision, events: this.history.slice(i).filter((ev) => ev.entry.cluster === cluster) };
  }

  /**
   * Ends every watch of one logical cluster (not the wildcard ones) with an ERROR event carrying
   * `status` (its logical cluster is leaving the shard). Returns how many ended.
   */
  terminateCluster(cluster: string, status: Record<string, unknown>): number {
    let n = 0;
    for (const byCluster of this.watchers.values()) {
      const set = byCluster.get(cluster);
      if (!set) continue;
      byCluster.delete(cluster);
      for (const w of set) { w.onTerminate(status); n++; }
    }
    return n;
  }

  /** Removes a watcher. */
  removeWatcher(w: CacheWatcher): void {
    const byCluster = this.watchers.get(w.groupResource);
    const set = byCluster?.get(w.cluster);
    if (!set) return;
    set.delete(w);
    if (set.size === 0) byCluster!.delete(w.cluster);
  }

  /** Number of registered watchers. */
  get watcherCount(): number {
    let n = 0;
    for (const byCluster of this.watchers.values()) for (const s of byCluster.values()) n += s.size;
    return n;
  }

  /** Stops tailing and ends all watchers. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const byCluster of this.watchers.values()) for (const set of byCluster.values()) for (const w of set) w.onTerminate();
    this.watchers.clear();
    // Disconnecting fails a pending XREAD at once, except while the tailer waits to reconnect
    // (Redis down): ioredis then cancels the reconnect and leaves its offline queue unsettled, so
    // the loop never comes back and there is nothing to wait for.
    const reconnecting = this.tailer?.status === 'reconnecting';
    this.tailer?.disconnect();
    if (!reconnecting) await this.tailDone?.catch(() => undefined);
  }
}

function compareEntries(a: CacheEntry, b: CacheEntry): number {
  if (a.cluster !== b.cluster) return a.cluster < b.cluster ? -1 : 1;
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
