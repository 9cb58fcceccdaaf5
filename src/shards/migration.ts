/**
 * Live migration of logical clusters between shards (docs/operations.md, "Draining a shard"),
 * after kcp's alpha `LogicalClusterMigration` (kcp pkg/reconciler/migration/logicalclustermigration,
 * docs/content/concepts/sharding/migration.md) but without kcp's unavailability window: clients
 * see a pause of their requests at the cutover, not errors.
 *
 * A `migration.kcp.io/v1alpha1 LogicalClusterMigration` in the root workspace names a logical
 * cluster and a destination shard. The root shard's {@link MigrationCoordinator} drives it over
 * each shard's internal migration endpoints ({@link registerMigrationEndpoints}, system:masters
 * only, reached with the shards' client certificate):
 *
 * 1. Migrating: the origin hands out a snapshot of the logical cluster from its watch cache
 *    (consistent at one revision); the destination imports it with its own revisions
 *    (src/storage/migration.ts). The LogicalCluster object itself is held back, so nothing routes
 *    to the destination yet. Then the writes made meanwhile are copied from the origin's watch
 *    history, in rounds, until few remain.
 * 2. Cutover (the pause): the origin fences the logical cluster — new requests are answered 429
 *    with the migration header, which the front-proxy holds instead of passing on; its open
 *    watches end with a 410 ERROR event; requests already admitted finish — and reports its
 *    revision. The last writes and the LogicalCluster go to the destination with the migration
 *    marker (its counter above the origin's, the logical cluster's floor: older revisions answer
 *    410 there). The origin records the move. Every shard's and the front-proxy's index see the
 *    LogicalCluster on the destination, and held requests go there.
 * 3. OriginCleanup: the origin removes its copy (events not sent to watches of the logical
 *    cluster; wildcard watches — other shards' indexes — see it go) and the owning
 *    Workspace's `core.kcp.io/shard` annotation is updated.
 *
 * One migration runs at a time; a coordinator that restarts begins an unfinished one again
 * (the destination discards a partial copy first), or finishes its cleanup if the cutover had
 * happened.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { SYSTEM_MASTERS } from '../auth/authorizer.js';
import type { RestClient } from '../client/rest.js';
import { sendStatus, toStatusError } from '../endpoints/response.js';
import type { RequestScope, Store } from '../registry/store.js';
import { entryObject, type CacheEntry, type WatchCache } from '../storage/watchcache.js';
import { ClusterFences, importObjects, movedKey, removeObjects, type ImportItem } from '../storage/migration.js';
import type { RedisStorage } from '../storage/redis.js';
import { PATH_ANNOTATION, ROOT } from '../tenancy/paths.js';
import type { ShardDirectory } from './directory.js';

/** Base path of a shard's internal migration endpoints: `<base>/<logical cluster>/<operation>`. */
export const MIGRATION_ENDPOINTS = '/internal.kcp-ts.io/migration';
/** Group/resource of LogicalClusterMigrations in the watch cache. */
export const MIGRATIONS_GR = 'migration.kcp.io/logicalclustermigrations';
/** Object key of a logical cluster's LogicalCluster object. */
export function logicalClusterKey(cluster: string): string { return `core.kcp.io/logicalclusters/${cluster}/cluster`; }
/**
 * Whether a drain moves a logical cluster: tenant logical clusters (kcp's generated names,
 * lower-case letters, digits and dashes); `root` stays on the root shard and system ones
 * (`system:admin`, every shard has its own) stay where they are. The operator counts what is left
 * of a drain with it (operator/drain.ts).
 */
export function isMigratable(cluster: string): boolean { return cluster !== ROOT && /^[a-z0-9][a-z0-9-]*$/.test(cluster); }
/** Annotation with the shard a logical cluster (and its Workspace) is on (kcp `LogicalClusterShardAnnotationKey`). */
const SHARD_ANNOTATION = 'core.kcp.io/shard';

/**
 * Largest page of a snapshot, in bytes of JSON (1 MiB): small pages keep each step of the copy
 * short, so the shards' own requests interleave with it.
 */
const SNAPSHOT_PAGE_BYTES = 1024 * 1024;
/** Largest import request, in bytes of JSON (256 KiB; the shards take bodies up to 3 MiB). */
const IMPORT_BATCH_BYTES = 256 * 1024;
/** Pause between two import requests of the bulk copy and catch-up (ms): clients' requests go first. */
const COPY_YIELD_MS = 5;
/** A snapshot not read on for this long is dropped (ms). */
const SNAPSHOT_TTL_MS = 10 * 60_000;
/** Catch-up rounds end when a round copied at most this many changes (the cutover copies the rest). */
const CATCH_UP_THRESHOLD = 200;
/** Most catch-up rounds before the cutover. */
const CATCH_UP_ROUNDS = 10;

/** What a shard's migration endpoints use. */
export interface MigrationEndpointDeps {
  storage: RedisStorage;
  cache: WatchCache;
  fences: ClusterFences;
}

/**
 * Registers the internal migration endpoints of a shard on its app (`POST
 * <MIGRATION_ENDPOINTS>/<cluster>/<op>`, JSON bodies, system:masters only):
 *
 * - origin: `snapshot` {offset} → {revision, total, items, next}; `changes` {since} →
 *   {revision, items} or 410 when the history no longer reaches back; `fence` {since} → the
 *   same, once the fence stands (the last writes);
 *   `unfence`; `release` {to}; `remove` → {removed};
 * - destination: `import` {items, finalize?: {leastRevision}} → {marker}; `discard` → {removed};
 * - both: `state` → {fence, hasLogicalCluster}.
 */
export function registerMigrationEndpoints(app: FastifyInstance, deps: MigrationEndpointDeps): void {
  const { storage, cache, fences } = deps;
  const snapshots = new Map<string, { revision: number; entries: CacheEntry[]; touched: number }>();
  const sweep = setInterval(() => { for (const [c, s] of snapshots) if (Date.now() - s.touched > SNAPSHOT_TTL_MS) snapshots.delete(c); }, 60_000);
  sweep.unref();
  app.addHook('onClose', async () => { clearInterval(sweep); });

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      const user = req.kcpUser;
      if (!user?.groups.includes(SYSTEM_MASTERS)) throw new StatusError(403, 'Forbidden', 'the migration endpoints are for the instance\'s shards only');
      const { cluster, op } = req.params as { cluster: string; op: string };
      if (!/^[a-z0-9][a-z0-9:-]*$/.test(cluster) || cluster === ROOT) throw new StatusError(400, 'BadRequest', `logical cluster ${JSON.stringify(cluster)} cannot be migrated`);
      let body: Record<string, unknown> = {};
      if (Buffer.isBuffer(req.body) && req.body.length) {
        try { body = JSON.parse(req.body.toString('utf8')) as Record<string, unknown>; } catch { throw new StatusError(400, 'BadRequest', 'the body is not JSON'); }
      }
      const result = await operate(cluster, op, body);
      reply.code(200).type('application/json').send(JSON.stringify(result));
    } catch (err) {
      sendStatus(reply, toStatusError(err));
    }
    return reply;
  };
  app.post(`${MIGRATION_ENDPOINTS}/:cluster/:op`, handler);

  const keysOf = (cluster: string) => cache.snapshotCluster(cluster).entries.map((e) => e.key);
  const removeAll = async (cluster: string) => {
    const keys = keysOf(cluster);
    let removed = 0;
    for (let i = 0; i < keys.length; i += 500) removed += await removeObjects(storage, keys.slice(i, i + 500));
    await cache.waitForRevision(await storage.currentRevision(), 10_000);
    return removed;
  };

  async function operate(cluster: string, op: string, body: Record<string, unknown>): Promise<unknown> {
    switch (op) {
      case 'state':
        return { fence: fences.get(cluster) ?? null, hasLogicalCluster: cache.getEntry('core.kcp.io/logicalclusters', cluster, '', 'cluster') !== undefined, floor: cache.floorOf(cluster) ?? null };
      case 'snapshot': {
        const offset = Number(body.offset ?? 0);
        if (!Number.isInteger(offset) || offset < 0) throw new StatusError(400, 'BadRequest', 'offset must be a non-negative integer');
        let snap = snapshots.get(cluster);
        if (offset === 0 || !snap) {
          if (offset !== 0) throw new StatusError(410, 'Expired', 'the snapshot is gone; start again at offset 0');
          await cache.waitForRevision(await storage.currentRevision(), 10_000);
          snap = { ...cache.snapshotCluster(cluster), touched: 0 };
          snapshots.set(cluster, snap);
        }
        snap.touched = Date.now();
        const items: ImportItem[] = [];
        let bytes = 0;
        let i = offset;
        for (; i < snap.entries.length && bytes < SNAPSHOT_PAGE_BYTES; i++) {
          const e = snap.entries[i]!;
          items.push({ key: e.key, json: e.json });
          bytes += e.json.length + e.key.length;
        }
        if (i >= snap.entries.length) snapshots.delete(cluster);
        return { revision: snap.revision, total: snap.entries.length, items, next: i < snap.entries.length ? i : null };
      }
      case 'changes': {
        const since = Number(body.since);
        if (!Number.isInteger(since) || since < 0) throw new StatusError(400, 'BadRequest', 'since must be a non-negative integer');
        await cache.waitForRevision(await storage.currentRevision(), 10_000);
        const got = cache.eventsSince(cluster, since);
        if (!got) throw new StatusError(410, 'Expired', `the watch history no longer reaches revision ${since}`);
        return { revision: got.revision, items: got.events.filter((ev) => !ev.hidden).map((ev) => ({ key: ev.entry.key, json: ev.type === 'DELETED' ? null : ev.entry.json })) };
      }
      case 'fence': {
        const since = Number(body.since);
        if (!Number.isInteger(since) || since < 0) throw new StatusError(400, 'BadRequest', 'since must be a non-negative integer');
        const lc = cache.getEntry('core.kcp.io/logicalclusters', cluster, '', 'cluster');
        await fences.fence(cluster, lc ? entryObject<KubeObject>(lc).metadata.annotations?.[PATH_ANNOTATION] : undefined);
        // Watches end now, not at the hand-over: a bookmark sent during the fence could carry a
        // revision above the one reported here.
        cache.terminateCluster(cluster, new StatusError(410, 'Expired', `logical cluster ${cluster} is moving to another shard; relist`).toStatus() as unknown as Record<string, unknown>);
        const revision = await storage.currentRevision();
        await cache.waitForRevision(revision, 10_000);
        // The last writes, in the same answer: one round trip less in the pause.
        const got = cache.eventsSince(cluster, since);
        if (!got) throw new StatusError(410, 'Expired', `the watch history no longer reaches revision ${since}`);
        return { revision: Math.max(revision, got.revision), items: got.events.filter((ev) => !ev.hidden).map((ev) => ({ key: ev.entry.key, json: ev.type === 'DELETED' ? null : ev.entry.json })) };
      }
      case 'unfence':
        fences.unfence(cluster);
        return {};
      case 'release': {
        const to = String(body.to ?? '');
        if (!to) throw new StatusError(400, 'BadRequest', 'release needs the destination shard ("to")');
        await storage.client.hset(movedKey(storage.keys), cluster, to);
        fences.moved(cluster, to);
        snapshots.delete(cluster);
        return {};
      }
      case 'remove': {
        if (fences.get(cluster)?.state !== 'moved') throw new StatusError(409, 'Conflict', `logical cluster ${cluster} has not moved away; not removing it`);
        return { removed: await removeAll(cluster) };
      }
      case 'import': {
        const items = body.items;
        if (!Array.isArray(items) || items.some((i) => typeof i?.key !== 'string' || !(i.json === null || typeof i.json === 'string') || !i.key.split('/')[2] || i.key.split('/')[2] !== cluster)) {
          throw new StatusError(400, 'BadRequest', `items must be {key, json} of logical cluster ${cluster}`);
        }
        const fin = body.finalize as { leastRevision?: unknown } | undefined;
        if (fin !== undefined && !Number.isSafeInteger(fin.leastRevision)) throw new StatusError(400, 'BadRequest', 'finalize.leastRevision must be an integer');
        if (fences.get(cluster)?.state === 'fenced') throw new StatusError(409, 'Conflict', `logical cluster ${cluster} is being migrated away from this shard`);
        const marker = await importObjects(storage, items as ImportItem[], fin ? { cluster, leastRevision: fin.leastRevision as number } : undefined);
        if (fin) fences.clear(cluster);
        // Answered once this shard serves what it imported (its index and watches have it).
        await cache.waitForRevision(await storage.currentRevision(), 10_000);
        return { marker };
      }
      case 'discard': {
        if (cache.getEntry('core.kcp.io/logicalclusters', cluster, '', 'cluster')) throw new StatusError(409, 'Conflict', `logical cluster ${cluster} is served by this shard; not discarding it`);
        const keys = keysOf(cluster);
        let removed = 0;
        for (let i = 0; i < keys.length; i += 500) {
          removed += keys.slice(i, i + 500).length;
          await importObjects(storage, keys.slice(i, i + 500).map((key) => ({ key, json: null })));
        }
        return { removed };
      }
      default:
        throw new StatusError(404, 'NotFound', `unknown migration operation ${JSON.stringify(op)}`);
    }
  }
}

/** What the coordinator needs of the root shard. */
export interface MigrationCoordinatorDeps {
  /** The root shard's name. */
  self: string;
  cache: WatchCache;
  /** The LogicalClusterMigration store. */
  migrations: Store;
  scope: (cluster: string) => RequestScope;
  directory: ShardDirectory;
  /** A client for this shard's own endpoints (shard credentials). */
  selfClient: RestClient;
  /** Whether this shard holds a logical cluster. */
  holds: (cluster: string) => boolean;
  /** The logical clusters this shard holds. */
  localClusters: () => string[];
  log: (message: string) => void;
}

interface MigrationStatus {
  phase?: string;
  originShard?: string;
  entriesCopied?: number;
  writePauseMilliseconds?: number;
  objectsPerSecond?: number;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string; lastTransitionTime: string }>;
}

/**
 * Runs the LogicalClusterMigrations of the root workspace, one at a time, in the order they
 * appear (see the module comment). Bounded: a queue of names of objects that exist.
 */
export class MigrationCoordinator {
  private readonly queue: string[] = [];
  private running = false;
  private stopped = false;
  private readonly unsubscribe: () => void;

  private drainTimer: NodeJS.Timeout | undefined;
  private readonly unsubscribeDirectory: () => void;

  constructor(private readonly deps: MigrationCoordinatorDeps) {
    this.unsubscribe = deps.cache.subscribe((ev) => {
      if (!ev) { this.enqueueAll(); this.drainLater(); return; }
      if (ev.entry.groupResource === MIGRATIONS_GR && ev.entry.cluster === ROOT) {
        if (ev.type !== 'DELETED') this.enqueue(ev.entry.name);
        this.drainLater();
      }
      if (ev.entry.groupResource === 'core.kcp.io/shards' && ev.entry.cluster === ROOT) this.drainLater();
    });
    // A draining shard's new or arriving logical clusters are drained too.
    this.unsubscribeDirectory = deps.directory.subscribe((what) => { if (what.location && !what.deleted) this.drainLater(); });
    this.enqueueAll();
    this.drainLater();
  }

  /** Stops after the migration running now, if any. */
  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    this.unsubscribeDirectory();
    if (this.drainTimer) clearTimeout(this.drainTimer);
  }

  private drainLater(): void {
    if (this.stopped) return;
    this.drainTimer ??= setTimeout(() => {
      this.drainTimer = undefined;
      this.drainShards().catch((err: unknown) => { this.deps.log(`draining shards: ${(err as Error).message}`); this.drainLater(); });
    }, 200);
    this.drainTimer.unref();
  }

  /**
   * For every Shard annotated `kcp-ts.io/drain: "true"`: a LogicalClusterMigration (named
   * `drain-<logical cluster>-<random>`) for each of its logical clusters that has no unfinished
   * (or failed drain) one, to
   * the schedulable reachable shard holding the fewest logical clusters. The root shard's own
   * logical clusters (root, system ones) stay.
   */
  private async drainShards(): Promise<void> {
    const shards = this.deps.directory.list();
    const draining = shards.filter((s) => s.draining && s.name !== this.deps.self);
    if (!draining.length) return;
    const targets = shards.filter((s) => !s.unschedulable && this.deps.directory.reachable(s.name));
    if (!targets.length) { this.deps.log('draining shards: no schedulable shard to move logical clusters to'); return; }
    const load = new Map(targets.map((s) => [s.name, s.name === this.deps.self ? this.deps.localClusters().length : this.deps.directory.clustersOn(s.name).length]));
    const pending = new Set<string>();
    for (const e of this.deps.cache.list(MIGRATIONS_GR, ROOT)) {
      const m = entryObject<KubeObject>(e);
      const phase = (m.status as MigrationStatus | undefined)?.phase;
      // A failed drain migration is not tried again by itself: delete it to retry.
      const drained = m.metadata.labels?.['kcp-ts.io/drained-shard'] !== undefined;
      if (phase !== 'Completed' && (phase !== 'Failed' || drained)) pending.add((m.spec as { logicalCluster?: string } | undefined)?.logicalCluster ?? '');
    }
    for (const shard of draining) {
      for (const loc of this.deps.directory.clustersOn(shard.name)) {
        if (pending.has(loc.cluster) || this.deps.holds(loc.cluster) || !isMigratable(loc.cluster)) continue;
        const to = [...load.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
        load.set(to, load.get(to)! + 1);
        const obj = { apiVersion: 'migration.kcp.io/v1alpha1', kind: 'LogicalClusterMigration', metadata: { generateName: `drain-${loc.cluster}-`, labels: { 'kcp-ts.io/drained-shard': shard.name } }, spec: { logicalCluster: loc.cluster, destinationShard: to } };
        await this.deps.migrations.create(this.deps.scope(ROOT), obj);
        pending.add(loc.cluster);
        this.deps.log(`draining shard ${shard.name}: migrating logical cluster ${loc.cluster} to shard ${to}`);
      }
    }
  }

  private enqueueAll(): void { for (const e of this.deps.cache.list(MIGRATIONS_GR, ROOT)) this.enqueue(e.name); }

  private enqueue(name: string): void {
    if (!this.queue.includes(name)) this.queue.push(name);
    if (!this.running) void this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (!this.stopped && this.queue.length) {
        const name = this.queue.shift()!;
        const entry = this.deps.cache.getEntry(MIGRATIONS_GR, ROOT, '', name);
        if (!entry) continue;
        const obj = entryObject<KubeObject>(entry);
        const phase = (obj.status as MigrationStatus | undefined)?.phase;
        if (phase === 'Completed' || phase === 'Failed') continue;
        await this.migrate(name).catch((err: unknown) => this.deps.log(`migration ${name}: ${(err as Error).message}`));
      }
    } finally { this.running = false; }
  }

  private client(shard: string): RestClient {
    const c = shard === this.deps.self ? this.deps.selfClient : this.deps.directory.client(shard);
    if (!c) throw new Error(`shard ${shard} is not known here`);
    return c;
  }

  /** One call of a shard's migration endpoint. @throws Error naming the shard and the answer */
  private async call<T>(shard: string, cluster: string, op: string, body: unknown = {}): Promise<T> {
    const r = await this.client(shard).request('POST', `${MIGRATION_ENDPOINTS}/${encodeURIComponent(cluster)}/${op}`, body, { timeoutMs: 60_000 });
    if (r.status !== 200) throw Object.assign(new Error(`${op} on shard ${shard}: ${r.status} ${r.json?.message ?? r.body}`), { status: r.status });
    return r.json as T;
  }

  /** Where a logical cluster is now, as this shard knows it. */
  private locate(cluster: string): string | undefined {
    return this.deps.holds(cluster) ? this.deps.self : this.deps.directory.locate(cluster)?.shard;
  }

  /** Writes the status (retrying on conflicts with the current object). */
  private async setStatus(name: string, change: MigrationStatus, condition?: { type: string; status: string; reason?: string; message?: string }): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = JSON.parse(await this.deps.migrations.get(this.deps.scope(ROOT), name)) as KubeObject;
      const status: MigrationStatus = { ...(current.status as MigrationStatus | undefined), ...change };
      if (condition) {
        const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        const rest = (status.conditions ?? []).filter((c) => c.type !== condition.type);
        status.conditions = [...rest, { ...condition, lastTransitionTime: now }];
      }
      try {
        await this.deps.migrations.update(this.deps.scope(ROOT), name, { ...current, status }, 'status');
        return;
      } catch (err) { if (!isStatus(err, 409)) throw err; }
    }
  }

  private async migrate(name: string): Promise<void> {
    const obj = entryObject<KubeObject>(this.deps.cache.getEntry(MIGRATIONS_GR, ROOT, '', name)!);
    const spec = (obj.spec ?? {}) as { logicalCluster?: string; destinationShard?: string; includeSubtree?: boolean };
    const cluster = spec.logicalCluster ?? '';
    const to = spec.destinationShard ?? '';
    const status = (obj.status ?? {}) as MigrationStatus;
    const fail = (reason: string, message: string) => this.setStatus(name, { phase: 'Failed' }, { type: 'Completed', status: 'False', reason, message });
    if (cluster === ROOT) return fail('Invalid', 'the root logical cluster cannot be migrated');
    if (!this.deps.directory.get(to) && to !== this.deps.self) return fail('UnknownShard', `destination shard ${to} is not registered`);
    // A coordinator that restarted after the cutover finishes the cleanup.
    const from = status.originShard ?? this.locate(cluster);
    if (!from) return fail('NotFound', `logical cluster ${cluster} is on no known shard`);
    if (from === to && !status.originShard) return this.setStatus(name, { phase: 'Completed', originShard: from, entriesCopied: 0 }, { type: 'Completed', status: 'True', reason: 'AlreadyThere', message: `logical cluster ${cluster} is on shard ${to}` });
    try {
      const originState = await this.call<{ fence: { state: string } | null }>(from, cluster, 'state');
      if (originState.fence?.state === 'moved') return await this.cleanup(name, cluster, from, to);
      await this.setStatus(name, { phase: 'Preparing', originShard: from }, { type: 'OriginReady', status: 'True', reason: 'Located', message: `on shard ${from}` });
      // An earlier attempt may have left a fence or a partial copy.
      await this.call(from, cluster, 'unfence');
      await this.call(to, cluster, 'discard');

      // 1. Bulk copy at one revision of the origin, the LogicalCluster held back.
      await this.setStatus(name, { phase: 'Migrating' });
      const started = Date.now();
      let copied = 0;
      let revision = 0;
      let lcJson: string | null = null;
      const send = async (items: ImportItem[], finalize?: { leastRevision: number }) => {
        const cutover = finalize !== undefined;
        for (const batch of batches(items)) {
          // Not in the cutover: there every millisecond is the clients' pause.
          if (!cutover) await new Promise((r) => setTimeout(r, COPY_YIELD_MS));
          await this.call(to, cluster, 'import', finalize ? { items: batch, finalize } : { items: batch });
          finalize = undefined; // the marker goes with the first batch
        }
        if (finalize) await this.call(to, cluster, 'import', { items: [], finalize });
        copied += items.length;
      };
      const holdBack = (items: ImportItem[]) => items.filter((i) => {
        if (i.key !== logicalClusterKey(cluster)) return true;
        lcJson = i.json;
        return false;
      });
      for (let offset: number | null = 0; offset !== null;) {
        const page: { revision: number; items: ImportItem[]; next: number | null } = await this.call(from, cluster, 'snapshot', { offset });
        revision = page.revision;
        await send(holdBack(page.items));
        offset = page.next;
      }
      const bulkMs = Date.now() - started;
      const objectsPerSecond = Math.round(copied / Math.max(bulkMs / 1000, 0.001));
      await this.setStatus(name, { entriesCopied: copied, objectsPerSecond }, { type: 'DataCopied', status: 'False', reason: 'Copying', message: `${copied} objects in ${bulkMs} ms; catching up` });

      // 2. Catch up with the writes made meanwhile, until a round is small.
      for (let round = 0; round < CATCH_UP_ROUNDS; round++) {
        const delta: { revision: number; items: ImportItem[] } = await this.call(from, cluster, 'changes', { since: revision });
        revision = delta.revision;
        await send(holdBack(delta.items));
        if (delta.items.length <= CATCH_UP_THRESHOLD) break;
      }

      // 3. Cutover: fence, the last writes and the LogicalCluster with the marker, hand over.
      const pauseStarted = Date.now();
      let fencedMs = 0;
      let pause = 0;
      try {
        const last: { revision: number; items: ImportItem[] } = await this.call(from, cluster, 'fence', { since: revision });
        fencedMs = Date.now() - pauseStarted;
        const rest = holdBack(last.items);
        if (lcJson === null) throw new Error(`logical cluster ${cluster} has no LogicalCluster object on shard ${from}`);
        const lc = JSON.parse(lcJson) as KubeObject;
        lc.metadata.annotations = { ...lc.metadata.annotations, [SHARD_ANNOTATION]: to };
        // The marker first (with the first batch), the LogicalCluster last: routing follows it.
        await send([...rest, { key: logicalClusterKey(cluster), json: JSON.stringify(lc) }], { leastRevision: last.revision + 1 });
        // From here the destination serves it and the indexes move to it: the pause ends. (The
        // origin keeps refusing until it records the move just below.)
        pause = Date.now() - pauseStarted;
        await this.call(from, cluster, 'release', { to });
      } catch (err) {
        // Not handed over: the origin serves the logical cluster again (the destination's
        // partial copy is discarded by the next attempt).
        await this.call(from, cluster, 'unfence').catch(() => undefined);
        throw err;
      }
      await this.setStatus(name, { phase: 'OriginCleanup', entriesCopied: copied, writePauseMilliseconds: pause, objectsPerSecond }, { type: 'DataCopied', status: 'True', reason: 'HandedOver', message: `${copied} objects; requests held ${pause} ms at the cutover (fence and last writes ${fencedMs} ms)` });
      this.deps.log(`migration ${name}: logical cluster ${cluster} moved from shard ${from} to ${to}: ${copied} objects, ${objectsPerSecond} objects/s, requests held ${pause} ms`);
      await this.cleanup(name, cluster, from, to);
      if (spec.includeSubtree) await this.migrateChildren(name, cluster, to);
    } catch (err) {
      await fail('Error', (err as Error).message).catch(() => undefined);
      throw err;
    }
  }

  /**
   * `includeSubtree`: a LogicalClusterMigration (`<name>-<child>`, itself with `includeSubtree`)
   * for every logical cluster owned by a Workspace in `cluster` and not on `to` yet; they run after
   * this one, so a whole tree moves one logical cluster at a time.
   */
  private async migrateChildren(name: string, cluster: string, to: string): Promise<void> {
    const children = new Map<string, string>();
    for (const loc of this.deps.directory.list().flatMap((s) => (s.name === this.deps.self ? [] : this.deps.directory.clustersOn(s.name)))) {
      if (loc.owner?.cluster === cluster) children.set(loc.cluster, loc.shard);
    }
    for (const e of this.deps.cache.list('core.kcp.io/logicalclusters', '*')) {
      const owner = (entryObject<KubeObject>(e).spec as { owner?: { cluster?: string; resource?: string } } | undefined)?.owner;
      if (owner?.resource === 'workspaces' && owner.cluster === cluster) children.set(e.cluster, this.deps.self);
    }
    for (const [child, shard] of children) {
      if (shard === to) continue;
      const obj = { apiVersion: 'migration.kcp.io/v1alpha1', kind: 'LogicalClusterMigration', metadata: { generateName: `${name.slice(0, 40)}-`, labels: { 'kcp-ts.io/parent-migration': name } }, spec: { logicalCluster: child, destinationShard: to, includeSubtree: true } };
      await this.deps.migrations.create(this.deps.scope(ROOT), obj);
    }
  }

  /** After the hand-over: the origin's copy goes, the owning Workspace names the new shard. */
  private async cleanup(name: string, cluster: string, from: string, to: string): Promise<void> {
    // Every index first learns the new place (the origin's removal is hidden from watches, but a
    // reconnecting index would list it again while it is there).
    await this.deps.directory.moved(cluster, from, 2_000);
    const removed = await this.call<{ removed: number }>(from, cluster, 'remove');
    await this.setStatus(name, {}, { type: 'OriginCleaned', status: 'True', reason: 'Removed', message: `${removed.removed} objects removed from shard ${from}` });
    await this.updateOwner(cluster, to).catch((err: unknown) => this.deps.log(`migration ${name}: updating the Workspace of ${cluster}: ${(err as Error).message}`));
    await this.setStatus(name, { phase: 'Completed' }, { type: 'Completed', status: 'True', reason: 'Migrated', message: `logical cluster ${cluster} is on shard ${to}` });
  }

  /** Sets `core.kcp.io/shard` of the Workspace owning `cluster` to `to`, on the shard holding it. */
  private async updateOwner(cluster: string, to: string): Promise<void> {
    const lc = await this.client(to).request('GET', `/clusters/${cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`);
    const owner = (lc.json?.spec as { owner?: { cluster?: string; name?: string; resource?: string } } | undefined)?.owner;
    if (lc.status !== 200 || owner?.resource !== 'workspaces' || !owner.cluster || !owner.name) return;
    const shard = this.locate(owner.cluster);
    if (!shard) return;
    const path = `/clusters/${owner.cluster}/apis/tenancy.kcp.io/v1alpha1/workspaces/${owner.name}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const ws = await this.client(shard).request('GET', path);
      if (ws.status !== 200) return;
      const obj = ws.json as KubeObject;
      if (obj.metadata.annotations?.[SHARD_ANNOTATION] === to) return;
      obj.metadata.annotations = { ...obj.metadata.annotations, [SHARD_ANNOTATION]: to };
      const put = await this.client(shard).request('PUT', path, obj);
      if (put.status === 200) return;
      if (put.status !== 409) throw new Error(`${put.status} ${put.json?.message ?? ''}`);
    }
  }
}

/** Splits import items into requests of at most IMPORT_BATCH_BYTES. */
function batches(items: ImportItem[]): ImportItem[][] {
  const out: ImportItem[][] = [];
  let cur: ImportItem[] = [];
  let bytes = 0;
  for (const i of items) {
    const size = i.key.length + (i.json?.length ?? 0) + 32;
    if (cur.length && bytes + size > IMPORT_BATCH_BYTES) { out.push(cur); cur = []; bytes = 0; }
    cur.push(i);
    bytes += size;
  }
  if (cur.length) out.push(cur);
  return out;
}
