/**
 * The controller runtime on BullMQ (DESIGN.md "Controllers on BullMQ"): one queue per
 * controller; informers enqueue object keys, never objects; reconcilers are level-triggered
 * and read current state. Job options: deduplication by key (at most one job per key in flight,
 * a new event while it runs keeps one follow-up), requeue-after as `delay`, failures retried with
 * exponential backoff. Any number of processes may run workers on the same Redis.
 *
 * The contract a controller author learns is controller-runtime's:
 * `reconcile(key) → { requeueAfterMs? }`, throwing means "retry with backoff".
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { CacheEntry, EventType, WatchCache } from '../storage/watchcache.js';
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';

/** Outcome of one reconcile. */
export interface ReconcileResult {
  /** Reconcile the key again after this many milliseconds. */
  requeueAfterMs?: number;
}

/** A reconciler: level-triggered, idempotent. */
export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/** Options of a controller. */
export interface ControllerOptions {
  name: string;
  /** BullMQ key prefix; use the shard's hash tag so a shard's keys share a slot. */
  prefix: string;
  /** Connection for the queue (commands). */
  connection: Redis;
  /** Parallel reconciles in this process (default 4). */
  concurrency?: number;
  /** First retry delay after a failure, doubled per attempt (default 100 ms). */
  backoffMs?: number;
  reconcile: Reconcile;
  onError?: (key: string, err: unknown) => void;
}

/** One controller: a BullMQ queue and this process's worker on it. */
export class Controller {
  private readonly queue: Queue;
  private readonly worker: Worker;
  private readonly backoffMs: number;
  private readonly connections: Redis[] = [];

  constructor(private readonly opts: ControllerOptions) {
    this.backoffMs = opts.backoffMs ?? 100;
    const connection = opts.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
    connection.on('error', () => undefined);
    this.connections.push(connection);
    this.queue = new Queue(opts.name, { connection, prefix: opts.prefix });
    this.queue.on('error', () => undefined);
    const workerConnection = opts.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
    workerConnection.on('error', () => undefined);
    this.connections.push(workerConnection);
    this.worker = new Worker(opts.name, async (job: Job<{ key: string }>) => {
      const res = await opts.reconcile(job.data.key);
      if (res?.requeueAfterMs !== undefined) await this.enqueue(job.data.key, res.requeueAfterMs);
    }, { connection: workerConnection, prefix: opts.prefix, concurrency: opts.concurrency ?? 4, autorun: true });
    this.worker.on('error', () => undefined);
    this.worker.on('failed', (job, err) => { if (job) opts.onError?.(job.data.key, err); });
  }

  /**
   * Enqueues a key (optionally after `delayMs`). Deduplicated: while a job for the key waits,
   * further enqueues are folded into it; while one runs, one follow-up is kept.
   */
  async enqueue(key: string, delayMs = 0): Promise<void> {
    await this.queue.add('reconcile', { key }, {
      deduplication: { id: key, keepLastIfActive: true, replace: true },
      delay: delayMs,
      attempts: 25,
      backoff: { type: 'exponential', delay: this.backoffMs },
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  /** Jobs waiting or delayed (queue depth). */
  async depth(): Promise<number> {
    const c = await this.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return (c.waiting ?? 0) + (c.delayed ?? 0) + (c.active ?? 0) + (c.prioritized ?? 0);
  }

  /** Stops the worker (finishing running reconciles) and closes the queue. */
  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    // BullMQ leaves connections it was given open: they are ours to close.
    for (const c of this.connections) c.disconnect();
  }
}

/**
 * Feeds a controller from the watch cache: every applied event of `groupResource` whose object
 * passes `predicate` enqueues `<cluster>|<name>` (namespaced objects: `<cluster>|<ns>/<name>`);
 * at start and after a cache resynchronisation every current object is enqueued once
 * (level-triggered). Returns the unsubscribe function.
 */
export function informer(cache: WatchCache, groupResource: string, controller: Pick<Controller, 'enqueue'>, predicate: (e: CacheEntry, type: EventType | 'SYNC') => boolean = () => true): () => void {
  const keyOf = (e: CacheEntry) => `${e.cluster}|${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
  const enqueue = (e: CacheEntry) => { controller.enqueue(keyOf(e)).catch(() => undefined); };
  const syncAll = () => { for (const e of cache.list(groupResource, '*')) if (predicate(e, 'SYNC')) enqueue(e); };
  const unsubscribe = cache.subscribe((ev) => {
    if (!ev) { syncAll(); return; }
    if (ev.entry.groupResource === groupResource && predicate(ev.entry, ev.type)) enqueue(ev.entry);
  });
  syncAll();
  return unsubscribe;
}

/**
 * Reads an object from the watch cache, as controllers read from their informers' listers;
 * undefined when it does not exist. The read may trail the newest write by a moment: updates
 * built on it carry its resourceVersion and fail with 409 (then the key is reconciled again).
 */
export async function getIfExists(store: Store, scope: RequestScope, name: string): Promise<KubeObject | undefined> {
  return store.getCached(scope, name);
}

/**
 * Deletes every object of a store in a scope (all namespaces when the scope has none); returns
 * how many are still there, held by finalizers. Objects already gone are skipped.
 */
export async function deleteAll(store: Store, scope: RequestScope): Promise<number> {
  let pending = 0;
  const { items } = await store.list(scope, {});
  for (const e of items) {
    try {
      const res = await store.delete({ ...scope, namespace: e.namespace || scope.namespace }, e.name);
      if (!res.deleted) pending++;
    } catch (err) {
      if (!(err instanceof StatusError && err.code === 404)) throw err;
    }
  }
  return pending;
}
