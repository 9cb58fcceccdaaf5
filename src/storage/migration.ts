/**
 * The storage side of live logical cluster migration (docs/operations.md, "Draining a shard"):
 * the write fence of a logical cluster on its origin shard, the import of its objects into the
 * destination shard's Redis with the destination's own revisions, and the removal of the origin's
 * copy once the destination serves it. The coordination lives in src/shards/migration.ts.
 *
 * Revisions. Every shard has its own counter, so an object moved to another shard gets a new
 * resourceVersion and a client's old ones mean nothing there. At the cutover the destination
 * writes a migration marker into its watch stream (`t` = {@link MIGRATED_EVENT}) that moves its
 * counter above every revision the origin handed out (the counter "jumps"; the marker records the
 * revision before the jump, so a stream reader still sees every revision accounted for) and
 * records the marker's revision as the logical cluster's floor (`{shard}:floors`): a watch or an
 * exact list of that logical cluster from below its floor answers 410 Gone and the client relists
 * (src/storage/watchcache.ts). Nothing a client holds from the origin is ever read as a position
 * in the destination's history.
 *
 * Keys (all with the shard's hash tag, keys.ts): `{shard}:floors` hash logical cluster → floor
 * revision (one field per logical cluster ever migrated in); `{shard}:moved` hash logical cluster
 * → the shard it moved to (one field per logical cluster migrated away and not back).
 */
import { StatusError } from '../apimachinery/errors.js';
import { parseObjectKey, type ShardKeys } from './keys.js';
import { mapRedisError, type RedisClient, type RedisStorage } from './redis.js';
import { STREAM_KEEP_LUA } from './scripts.js';

/** Event type of the migration marker in a shard's watch stream (fields `c` logical cluster, `p` revision before it). */
export const MIGRATED_EVENT = 'MIGRATED';

/**
 * Response header on the answer of a shard to a request for a logical cluster it is fencing or
 * has handed over (value `fenced` or `moved:<shard>`): the front-proxy holds such a request and
 * sends it again once its index points elsewhere (src/proxy/frontproxy.ts).
 */
export const MIGRATION_HEADER = 'x-kcp-ts-migration';

/** The Redis key of the floors hash of a shard. */
export function floorsKey(keys: ShardKeys): string { return `${keys.tag}:floors`; }
/** The Redis key of the moved-away hash of a shard. */
export function movedKey(keys: ShardKeys): string { return `${keys.tag}:moved`; }

/**
 * Copies objects into this shard: a put (`json`) stores the object with a revision of this shard
 * (the first `"resourceVersion":"…"` of the JSON replaced) and appends ADDED or MODIFIED; a delete
 * (`json` '') removes the key, if present, with a DELETED event. With a finalize cluster
 * (ARGV[2]) the migration marker comes first: the counter set to max(counter + 1, ARGV[3]), the
 * marker appended at that revision, the floor recorded and any moved-away note of the cluster
 * dropped.
 *
 * KEYS[1] counter, KEYS[2] stream, KEYS[3] floors, KEYS[4] moved, KEYS[5..] object keys.
 * ARGV[1] stream length kept, ARGV[2] finalize cluster or '', ARGV[3] least revision of the
 * marker or '', then per object its object key and JSON ('' = delete).
 * Returns the marker's revision ('' without finalize) and the last revision written.
 */
export const IMPORT_SCRIPT = `${STREAM_KEEP_LUA}
local function withRv(json, rv)
  local s, e = string.find(json, '"resourceVersion":"', 1, true)
  if not s then return json end
  local q = string.find(json, '"', e + 1, true)
  return string.sub(json, 1, e) .. rv .. string.sub(json, q)
end
local marker = ''
if ARGV[2] ~= '' then
  local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
  local m = cur + 1
  local least = tonumber(ARGV[3])
  if least and least > m then m = least end
  redis.call('SET', KEYS[1], string.format('%d', m))
  marker = string.format('%d', m)
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], marker .. '-0', 't', '${MIGRATED_EVENT}', 'c', ARGV[2], 'p', string.format('%d', cur))
  redis.call('HSET', KEYS[3], ARGV[2], marker)
  redis.call('HDEL', KEYS[4], ARGV[2])
end
local last = ''
for i = 5, #KEYS do
  local j = 4 + (i - 5) * 2
  local json = ARGV[j + 1]
  local cur = redis.call('GET', KEYS[i])
  if json ~= '' then
    local rv = redis.call('INCR', KEYS[1])
    local obj = withRv(json, rv)
    redis.call('SET', KEYS[i], obj)
    local t = 'ADDED'
    if cur then t = 'MODIFIED' end
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', keep(ARGV[1], obj), rv .. '-0', 't', t, 'k', ARGV[j], 'o', obj)
    last = tostring(rv)
  elseif cur then
    local rv = redis.call('INCR', KEYS[1])
    redis.call('DEL', KEYS[i])
    local gone = withRv(cur, rv)
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', keep(ARGV[1], gone), rv .. '-0', 't', 'DELETED', 'k', ARGV[j], 'o', gone)
    last = tostring(rv)
  end
end
return {marker, last}
`;

/**
 * Removes objects of a logical cluster that moved away: each present key deleted with a DELETED
 * event flagged hidden (`h` 1): the shard's own caches, controllers and wildcard watches (other
 * shards' indexes) apply it, a watch of the logical cluster itself is never sent it (it lives on
 * elsewhere; src/storage/watchcache.ts).
 *
 * KEYS[1] counter, KEYS[2] stream, KEYS[3..] object keys; ARGV[1] stream length kept, then the
 * object keys. Returns the number removed.
 */
export const REMOVE_SCRIPT = `${STREAM_KEEP_LUA}
local n = 0
for i = 3, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  if cur then
    local rv = redis.call('INCR', KEYS[1])
    redis.call('DEL', KEYS[i])
    local s, e = string.find(cur, '"resourceVersion":"', 1, true)
    if s then
      local q = string.find(cur, '"', e + 1, true)
      cur = string.sub(cur, 1, e) .. rv .. string.sub(cur, q)
    end
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', keep(ARGV[1], cur), rv .. '-0', 't', 'DELETED', 'k', ARGV[i - 1], 'o', cur, 'h', '1')
    n = n + 1
  end
end
return n
`;

/** One object to import: its object key and stored JSON, or `json` null to delete it. */
export interface ImportItem { key: string; json: string | null }

/**
 * Writes `items` into the shard in one script (IMPORT_SCRIPT); with `finalize`, first the
 * migration marker of `finalize.cluster` at a revision of at least `finalize.leastRevision`.
 * Returns the marker's revision (0 without finalize).
 * @throws StatusError 503 when Redis cannot be reached
 */
export async function importObjects(storage: RedisStorage, items: readonly ImportItem[], finalize?: { cluster: string; leastRevision: number }): Promise<number> {
  const keys = storage.keys;
  const redisKeys = [keys.rv, keys.events, floorsKey(keys), movedKey(keys), ...items.map((i) => keys.redisKey(i.key))];
  const args: string[] = [String(storage.streamMaxLen), finalize?.cluster ?? '', finalize ? String(finalize.leastRevision) : ''];
  for (const i of items) args.push(i.key, i.json ?? '');
  try {
    const [marker] = await storage.client.eval(IMPORT_SCRIPT, redisKeys.length, ...redisKeys, ...args) as [string, string];
    return marker ? Number(marker) : 0;
  } catch (err) { return mapRedisError(err); } finally {
    // Its revisions (and the counter's jump) were not reported one by one: consistent reads ask Redis again.
    storage.forgetRevision();
  }
}

/**
 * Removes the given object keys of a logical cluster that moved away (REMOVE_SCRIPT), after
 * recording where it went (`{shard}:moved`, read at start-up by {@link ClusterFences.load}).
 * Returns the number of objects removed.
 */
export async function removeObjects(storage: RedisStorage, objectKeys: readonly string[]): Promise<number> {
  if (!objectKeys.length) return 0;
  const keys = storage.keys;
  const redisKeys = [keys.rv, keys.events, ...objectKeys.map((k) => keys.redisKey(k))];
  try {
    return Number(await storage.client.eval(REMOVE_SCRIPT, redisKeys.length, ...redisKeys, String(storage.streamMaxLen), ...objectKeys));
  } catch (err) { return mapRedisError(err); } finally {
    storage.forgetRevision();
  }
}

/** What a shard does with requests for one logical cluster during and after its migration. */
export type FenceState = ({ state: 'fenced' } | { state: 'moved'; to: string }) & {
  /** The logical cluster's workspace path (`kcp.io/path`), when known at the fence. */
  path?: string;
};

/** Marks the 429 of a fence: a request refused by it changed nothing and may be sent again elsewhere. */
export const FENCE_REFUSAL = Symbol('kcp-ts migration fence refusal');

/**
 * The fences of one shard: logical clusters whose requests and storage writes (controllers'
 * included) it refuses while they are handed over (`fenced`), and those that moved away
 * (`moved`, persisted in `{shard}:moved`). Requests refused carry {@link MIGRATION_HEADER} and
 * answer 429 with `Retry-After: 1` — also a request admitted before the fence whose write the
 * fence refused (it changed nothing, so the front-proxy sends it again to the new shard).
 *
 * Bounds: one entry per logical cluster being migrated or moved away (and its workspace path,
 * when given); the in-flight set holds the storage writes running at that moment.
 */
export class ClusterFences {
  private readonly states = new Map<string, FenceState>();
  /**
   * Workspace path → logical cluster, for the fenced and moved ones whose path was given: after
   * the hand-over the local copy, and with it the shard's path index, is removed while a
   * front-proxy that has not learned the move may still send requests here by path. Kept in
   * memory only: after a restart the indexes have long learned the move.
   */
  private readonly byPath = new Map<string, string>();
  /** Storage writes running (all clusters): a fence waits for those started before it. */
  private readonly writes = new Set<Promise<unknown>>();

  /** Whether any logical cluster is fenced or moved (the cheap test of the write path). */
  get active(): boolean { return this.states.size > 0; }

  /** The fence of a logical cluster, if any. */
  get(cluster: string): FenceState | undefined { return this.states.get(cluster); }

  /** The fenced or moved logical cluster whose workspace path is `path` (as given to {@link fence}), if any. */
  clusterOfPath(path: string): string | undefined {
    const cluster = this.byPath.get(path);
    return cluster !== undefined && this.states.has(cluster) ? cluster : undefined;
  }

  /** Loads the logical clusters that moved away from the shard (`{shard}:moved`). */
  async load(client: RedisClient, keys: ShardKeys): Promise<void> {
    const moved = await client.hgetall(movedKey(keys));
    for (const [cluster, to] of Object.entries(moved)) this.states.set(cluster, { state: 'moved', to });
  }

  /** The 429 answered for a request to a fenced or moved logical cluster (marked {@link FENCE_REFUSAL}). */
  refusal(cluster: string, f: FenceState): StatusError {
    const why = f.state === 'moved' ? `has moved to shard ${f.to}` : 'is being migrated to another shard';
    return Object.assign(new StatusError(429, 'TooManyRequests', `logical cluster ${cluster} ${why}; retry`, { retryAfterSeconds: 1 }), { [FENCE_REFUSAL]: true });
  }

  /** Whether `err` is a fence's refusal. */
  static isRefusal(err: unknown): boolean {
    return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[FENCE_REFUSAL] === true;
  }

  /** The value of {@link MIGRATION_HEADER} for a fence. */
  static headerValue(f: FenceState): string { return f.state === 'moved' ? `moved:${f.to}` : 'fenced'; }

  /**
   * The write path's check: throws 429 for a storage write to a fenced logical cluster; else
   * returns `write`'s promise, tracked until it settles.
   */
  track<T>(objectKeys: readonly string[], write: () => Promise<T>): Promise<T> {
    if (this.states.size) {
      for (const k of objectKeys) {
        const cluster = parseObjectKey(k).cluster;
        const f = this.states.get(cluster);
        if (f) return Promise.reject(this.refusal(cluster, f));
      }
    }
    const p = write();
    this.writes.add(p);
    const done = () => { this.writes.delete(p); };
    p.then(done, done);
    return p;
  }

  /**
   * Fences `cluster`: new requests and storage writes are refused at once, and every write that
   * started before has settled when it resolves (its request is acknowledged, or failed, by
   * then). From then on nothing changes the logical cluster on this shard. Waiting for whole
   * requests instead would make the pause as long as the slowest request in flight (queued in
   * priority and fairness, or at an admission webhook); a request refused at its write is sent
   * again by the front-proxy. `path` is the logical cluster's workspace path (`kcp.io/path`),
   * so that requests by path keep meeting the fence ({@link clusterOfPath}).
   */
  async fence(cluster: string, path?: string): Promise<void> {
    this.forgetPath(cluster);
    this.states.set(cluster, path ? { state: 'fenced', path } : { state: 'fenced' });
    if (path) this.byPath.set(path, cluster);
    await Promise.allSettled([...this.writes]);
  }

  /** Lifts the fence of `cluster` (a migration that failed before its cutover). */
  unfence(cluster: string): void {
    if (this.states.get(cluster)?.state !== 'moved') { this.forgetPath(cluster); this.states.delete(cluster); }
  }

  /** Records that `cluster` moved to shard `to` (requests keep being refused, naming it). */
  moved(cluster: string, to: string): void {
    const path = this.states.get(cluster)?.path;
    this.states.set(cluster, path ? { state: 'moved', to, path } : { state: 'moved', to });
  }

  /** Forgets every fence of `cluster` (it migrated back in). */
  clear(cluster: string): void { this.forgetPath(cluster); this.states.delete(cluster); }

  /** Drops the path entry of `cluster`'s fence (call before its state is replaced or deleted). */
  private forgetPath(cluster: string): void {
    const path = this.states.get(cluster)?.path;
    if (path !== undefined && this.byPath.get(path) === cluster) this.byPath.delete(path);
  }
}
