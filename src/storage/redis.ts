/**
 * Object storage of one shard on Redis: atomic writes through the write script, direct reads.
 * Lists and watches do not come here: they are served by the watch cache (./watchcache.ts).
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ShardKeys } from './keys.js';
import { COMMIT_SCRIPT, WRITE_SCRIPT } from './scripts.js';
import { unavailable } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ClusterFences } from './migration.js';

/** Placeholder written where the revision goes; cannot occur in validated metadata before it. */
const RV_SLOT = '\u0000rv\u0000';
const RV_SLOT_JSON = JSON.stringify(RV_SLOT).slice(1, -1);

/**
 * Serialises an object with `metadata.resourceVersion` as the first user-visible revision field,
 * returning the JSON split around the revision. Metadata keys are ordered name, generateName,
 * namespace, uid, resourceVersion, then the rest, so nothing a client controls precedes the slot
 * (names are validated DNS/path-segment names).
 */
export function splitAroundRevision(obj: KubeObject): [string, string] {
  const { name, generateName, namespace, uid, resourceVersion: _old, ...restMeta } = obj.metadata;
  const { apiVersion, kind, metadata: _m, ...rest } = obj;
  const ordered = {
    apiVersion, kind,
    metadata: { name, generateName, namespace, uid, resourceVersion: RV_SLOT, ...restMeta },
    ...rest,
  };
  const json = JSON.stringify(ordered);
  const at = json.indexOf(RV_SLOT_JSON);
  return [json.slice(0, at), json.slice(at + RV_SLOT_JSON.length)];
}

/** Outcome of a write. */
export type WriteResult =
  | { ok: true; rv: string; json: string }
  | { ok: false; reason: 'exists' | 'conflict'; current: string }
  | { ok: false; reason: 'notfound' };

/** One object of a transaction (`RedisStorage.commit`). */
export type CommitItem =
  | { op: 'create'; objectKey: string; obj: KubeObject; ifAbsent?: boolean }
  | { op: 'update'; objectKey: string; obj: KubeObject; expectedRv?: string }
  /** `obj`: the object's final state, which its DELETED event carries. */
  | { op: 'delete'; objectKey: string; obj: KubeObject; expectedRv?: string };

/** Outcome of a transaction: the stored JSON per item, or the first item whose precondition failed. */
export type CommitResult =
  | { ok: true; written: Array<string | undefined> }
  | { ok: false; index: number; reason: 'exists' | 'notfound' | 'conflict' };

/**
 * A connection to one Redis server, or to a Redis Cluster. A shard's keys all carry its hash tag
 * (keys.ts), so in a cluster they live in one slot on one master: every command and script of a
 * shard runs on that node, and shards spread over the cluster's masters.
 */
export type RedisClient = Redis | Cluster;

/** URL scheme of a Redis Cluster: `redis-cluster://HOST:PORT[,HOST:PORT…]` (any reachable nodes; the rest are discovered). */
export const REDIS_CLUSTER_SCHEME = 'redis-cluster:';

/** Options of the Redis connection used by a shard. */
export interface RedisStorageOptions {
  /** `redis://host:port/db`, `unix:///path/to/socket` or `redis-cluster://host:port,host:port`. */
  url: string;
  shard: string;
  /** Approximate number of watch events kept in the stream (default 100,000). */
  streamMaxLen?: number;
  /**
   * This process is the only one that writes the shard's keys (its embedded Redis, held under the
   * root directory's lock), so a consistent read may take the shard's current revision from the
   * writes Redis acknowledged to it instead of asking Redis (see `RedisStorage.currentRevision`).
   * Never set it for a Redis other processes write: two replicas of a shard, or an old and a new
   * one during a rolling update, would then read stale objects.
   */
  soleWriter?: boolean;
}

/**
 * Opens an ioredis client for a `redis://`, `unix://` or `redis-cluster://` URL; commands fail
 * fast while disconnected.
 * @throws Error for a `redis-cluster://` URL without a valid `host:port`
 */
export function connectRedis(url: string, extra: RedisOptions = {}): RedisClient {
  const base: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A write whose reply was lost may have been applied: resending it after a reconnect would
    // answer 409 for the client's own write. Fail it (503) instead; the client retries.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
    ...extra,
  };
  if (url.startsWith(REDIS_CLUSTER_SCHEME)) {
    const { retryStrategy, enableOfflineQueue, enableAutoPipelining, lazyConnect, ...nodeOptions } = base;
    const options: ClusterOptions = {
      redisOptions: nodeOptions, enableOfflineQueue, enableAutoPipelining, lazyConnect,
      clusterRetryStrategy: (times) => (retryStrategy ? retryStrategy(times) : Math.min(50 * times, 1000)),
    };
    return new Cluster(clusterNodes(url), options);
  }
  if (url.startsWith('unix://')) return new Redis({ ...base, path: url.slice('unix://'.length) });
  return new Redis(url, base);
}

/** The `host:port` nodes of a `redis-cluster://` URL. @throws Error naming a malformed node */
export function clusterNodes(url: string): Array<{ host: string; port: number }> {
  const list = url.slice(REDIS_CLUSTER_SCHEME.length).replace(/^\/\//, '').replace(/\/.*$/, '');
  const nodes = list.split(',').filter(Boolean).map((hp) => {
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(hp);
    if (!m || Number(m[2]) > 65535) throw new Error(`invalid Redis Cluster node "${hp}" in ${url} (want host:port)`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  });
  if (!nodes.length) throw new Error(`no nodes in Redis Cluster URL ${url}`);
  return nodes;
}

/** A second connection like `client` (to the same server or cluster) with other options. */
export function duplicateClient(client: RedisClient, options: RedisOptions): RedisClient {
  if (client instanceof Cluster) {
    const { enableOfflineQueue, enableAutoPipelining, ...nodeOptions } = options;
    return client.duplicate(undefined, { redisOptions: { ...client.options.redisOptions, ...nodeOptions }, enableOfflineQueue, enableAutoPipelining });
  }
  return client.duplicate(options);
}

/**
 * SCANs every key matching `pattern` (one `prefix*` pattern of a shard) and hands them over in
 * batches: on a single server one cursor, in a cluster on every master (the shard's keys are on
 * one of them; the others return none).
 */
export async function scanKeys(client: RedisClient, pattern: string, onBatch: (keys: string[]) => Promise<void>): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (batch.length) await onBatch(batch);
    } while (cursor !== '0');
  }
}

/** Resolves once `client` is connected; rejects with `cannot connect to Redis at <url>` after `timeoutMs`. */
export async function waitForRedis(client: RedisClient, url: string, timeoutMs = 10_000): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => { cleanup(); reject(new Error(`cannot connect to Redis at ${url}`)); }, timeoutMs);
    const onReady = () => { cleanup(); resolve(); };
    const cleanup = () => { clearTimeout(t); client.off('ready', onReady); };
    client.on('ready', onReady);
  });
}

function isRedisDown(err: unknown): boolean {
  const msg = err instanceof Error ? err.message : String(err);
  return /Stream isn't writeable|Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE|ENOENT|MaxRetriesPerRequest|LOADING|max retries|connect ETIMEDOUT/i.test(msg);
}

/** Converts a Redis connectivity failure into a 503 Status; other errors pass through. */
export function mapRedisError(err: unknown): never {
  if (isRedisDown(err)) throw unavailable('storage is unavailable: cannot reach Redis; retry later');
  throw err;
}

/** Consistent reads of one turn of the event loop after its first: answered together at its end. */
interface ReadsOfTurn {
  later?: Promise<number>;
  release?: () => void;
}

/** The Redis side of one shard's storage. */
export class RedisStorage {
  readonly keys: ShardKeys;
  readonly client: RedisClient;
  /** Reads only the shard's revision (see the constructor). */
  private readonly revisionClient: RedisClient;
  private readonly maxLen: string;
  /**
   * Logical clusters being migrated away (src/storage/migration.ts): writes to a fenced one are
   * refused with 429, and a fence waits for the writes running when it was set.
   */
  fences: ClusterFences | undefined;
  /** The highest revision learnt from Redis: acknowledged writes and revision reads. */
  private knownRevision = 0;
  /**
   * With a sole writer: whether {@link knownRevision} covers every write Redis has acknowledged.
   * False until a revision read seeds it, and again after a reconnect or a write whose revisions
   * this process was not told ({@link forgetRevision}).
   */
  private knownRevisionCurrent = false;
  /** Counts {@link forgetRevision} calls: a revision read sent before the last one cannot seed the revision. */
  private revisionEpoch = 0;

  constructor(readonly options: RedisStorageOptions) {
    this.keys = new ShardKeys(options.shard);
    // Commands issued in one tick (replies of one read resolve many requests at once under load)
    // leave in one socket write: on loopback a write costs as much as the command itself.
    this.client = connectRedis(options.url, { enableAutoPipelining: true });
    this.client.on('error', () => { /* reconnects by itself; requests answer 503 meanwhile */ });
    // A Redis restarted (or replaced) behind the connection is asked again rather than trusted.
    this.client.on('close', () => this.forgetRevision());
    // The revision of consistent reads on a connection of its own without auto-pipelining: the
    // GET leaves at once (ioredis defers auto-pipelined commands to the loop's check phase, a
    // turn later under load) and its reply does not queue behind the writes in flight. One GET
    // of another tenant during a flood of writes: p99 67 → 42 ms (noisy-neighbour benchmark).
    this.revisionClient = duplicateClient(this.client, { enableAutoPipelining: false });
    this.revisionClient.on('error', () => { /* as the main connection */ });
    this.client.defineCommand('kcpWrite', { numberOfKeys: 3, lua: WRITE_SCRIPT });
    this.client.defineCommand('kcpCommit', { lua: COMMIT_SCRIPT });
    this.maxLen = String(options.streamMaxLen ?? 100_000);
  }

  /** Approximate number of watch events kept in the stream. */
  get streamMaxLen(): number { return Number(this.maxLen); }

  /** Resolves once connected (rejects after `timeoutMs`). */
  async ready(timeoutMs = 10_000): Promise<void> {
    await Promise.all([waitForRedis(this.client, this.options.url, timeoutMs), waitForRedis(this.revisionClient, this.options.url, timeoutMs)]);
  }

  /** Current stored JSON of an object, or null. */
  async get(objectKey: string): Promise<string | null> {
    try {
      return await this.client.get(this.keys.redisKey(objectKey));
    } catch (err) { return mapRedisError(err); }
  }

  private revisionInFlight: Promise<number> | undefined;
  private revisionQueued: Promise<number> | undefined;
  /** With a known revision: the reads of this turn of the event loop after its first (see currentRevision). */
  private readsOfTurn: ReadsOfTurn | undefined;

  /** Counts a revision Redis reported (a write's, or the counter's): revisions only grow. */
  private learnRevision(rv: number): void {
    if (rv > this.knownRevision) this.knownRevision = rv;
  }

  /**
   * Stops trusting the known revision until a revision read sent after this call: for a write of
   * the shard's keys outside {@link write} and {@link commit}, whose revisions this class was not
   * told (a migration's import or removal), and after a reconnect.
   */
  forgetRevision(): void {
    this.knownRevisionCurrent = false;
    this.revisionEpoch++;
  }

  /**
   * The shard's latest resourceVersion (0 when nothing was written): at least the revision of
   * every write acknowledged before the call, which is what a consistent read waits for (kube
   * asks etcd for its current revision: KEP-2340, consistent reads from cache).
   *
   * Normally one Redis GET. Concurrent callers share round trips: a caller gets the answer of a
   * GET sent after it called (so it sees every write acknowledged before), but all callers
   * arriving while one GET is in flight share the next.
   *
   * With a sole writer ({@link RedisStorageOptions.soleWriter}) no round trip once seeded: every
   * write acknowledged to anyone was first acknowledged by Redis to this process, so the highest
   * revision of those (and of the revision reads) is that bound. Under a flood of writes the GET
   * waits for Redis's next group commit (its reply leaves after the iteration's AOF fsync) and
   * then for a turn of the loop: another tenant's GET, p50 10 → 6 ms (docs/benchmarks.md,
   * noisy-neighbour). The first read of a turn is answered at once; later ones of the same turn
   * together at its end (the check phase), so that their responses leave together as they did
   * behind one shared GET: answered one by one as they were read, 50 clients' GETs got about a
   * fifth fewer through (each response's socket write woke its client on its own).
   */
  currentRevision(): Promise<number> {
    if (this.knownRevisionCurrent) {
      const turn = this.readsOfTurn;
      if (!turn) {
        const t: ReadsOfTurn = {};
        this.readsOfTurn = t;
        setImmediate(() => { this.readsOfTurn = undefined; t.release?.(); });
        return Promise.resolve(this.knownRevision);
      }
      return turn.later ??= new Promise<number>((resolve) => { turn.release = () => resolve(this.knownRevision); });
    }
    if (!this.revisionInFlight) return this.fetchRevision();
    this.revisionQueued ??= this.revisionInFlight.catch(() => 0).then(() => {
      this.revisionQueued = undefined;
      return this.fetchRevision();
    });
    return this.revisionQueued;
  }

  private fetchRevision(): Promise<number> {
    const epoch = this.revisionEpoch;
    const p = this.revisionClient.get(this.keys.rv).then((v) => {
      const rv = Number(v ?? '0');
      this.learnRevision(rv);
      // Writes acknowledged while the GET was out were counted as their replies came.
      if (this.options.soleWriter && epoch === this.revisionEpoch) this.knownRevisionCurrent = true;
      return rv;
    }, (err: unknown) => mapRedisError(err));
    this.revisionInFlight = p;
    const clear = () => { if (this.revisionInFlight === p) this.revisionInFlight = undefined; };
    p.then(clear, clear);
    return p;
  }

  /**
   * Writes atomically: `create` fails if the key exists; `update`/`delete` fail if the key is
   * missing or (with `expectedRv`) stored at another revision. `obj` is the full new object
   * (for delete: the object's final state, which the DELETED event carries).
   */
  async write(op: 'create' | 'update' | 'delete', objectKey: string, obj: KubeObject, expectedRv = ''): Promise<WriteResult> {
    if (this.fences) return this.fences.track([objectKey], () => this.writeNow(op, objectKey, obj, expectedRv));
    return this.writeNow(op, objectKey, obj, expectedRv);
  }

  private async writeNow(op: 'create' | 'update' | 'delete', objectKey: string, obj: KubeObject, expectedRv: string): Promise<WriteResult> {
    const [prefix, suffix] = splitAroundRevision(obj);
    let res: [string, string?];
    try {
      res = await (this.client as unknown as { kcpWrite: (...a: string[]) => Promise<[string, string?]> }).kcpWrite(
        this.keys.rv, this.keys.redisKey(objectKey), this.keys.events,
        op[0]!, expectedRv, prefix, suffix, this.maxLen, objectKey);
    } catch (err) { return mapRedisError(err); }
    const [status, value] = res;
    if (status === 'ok') {
      this.learnRevision(Number(value));
      return { ok: true, rv: value!, json: prefix + value + suffix };
    }
    if (status === 'notfound') return { ok: false, reason: 'notfound' };
    return { ok: false, reason: status as 'exists' | 'conflict', current: value! };
  }

  /**
   * Writes several objects in one atomic transaction, one round trip (COMMIT_SCRIPT): creates
   * (`ifAbsent`: skipped when the key exists, else the key must be free), updates and deletes
   * (the key must exist, at `expectedRv` when given). If a precondition fails nothing is written and the
   * result names the first failing item; else it holds, per item, the stored JSON (`undefined`
   * for a skipped create).
   */
  async commit(items: ReadonlyArray<CommitItem>): Promise<CommitResult> {
    if (!items.length) return { ok: true, written: [] };
    if (this.fences) return this.fences.track(items.map((i) => i.objectKey), () => this.commitNow(items));
    return this.commitNow(items);
  }

  private async commitNow(items: ReadonlyArray<CommitItem>): Promise<CommitResult> {
    const parts = items.map((i) => splitAroundRevision(i.obj));
    const keys = items.map((i) => this.keys.redisKey(i.objectKey));
    const args: string[] = [this.maxLen];
    items.forEach((item, n) => {
      const op = item.op === 'create' ? (item.ifAbsent ? 'a' : 'c') : item.op[0]!;
      args.push(op, item.op === 'create' ? '' : item.expectedRv ?? '', parts[n]![0], parts[n]![1], item.objectKey);
    });
    let res: string[];
    try {
      res = await (this.client as unknown as { kcpCommit: (...a: (string | number)[]) => Promise<string[]> }).kcpCommit(
        2 + keys.length, this.keys.rv, this.keys.events, ...keys, ...args);
    } catch (err) { return mapRedisError(err); }
    if (res[0] !== 'ok') return { ok: false, index: Number(res[1]) - 1, reason: res[2] as 'exists' | 'notfound' | 'conflict' };
    for (const rv of res.slice(1)) if (rv !== '') this.learnRevision(Number(rv));
    return { ok: true, written: res.slice(1).map((rv, n) => (rv === '' ? undefined : parts[n]![0] + rv + parts[n]![1])) };
  }

  /** Closes both connections (storage and revision). */
  async close(): Promise<void> {
    await Promise.all([this.client, this.revisionClient].map(async (c) => {
      try { await c.quit(); } catch { c.disconnect(); }
    }));
  }
}
