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
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Redis } from 'ioredis';
import type { CacheEntry, EventType, WatchCache } from '../storage/watchcache.js';
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';

/** Outcome of one reconcile. */
export interface ReconcileResult {
  /** Reconcile the key again after this many milliseconds. */
  requeueAfterMs?: number;
}

/** A reconciler: level-triggered, idempotent. */
export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/**
 * Prometheus metrics of every controller of a process, under controller-runtime's and client-go
 * workqueue's names: `workqueue_depth`, `workqueue_adds_total`,
 * `controller_runtime_reconcile_total{result}`, `controller_runtime_reconcile_errors_total`,
 * `controller_runtime_reconcile_time_seconds` (label `controller` / `name`).
 */
export class ControllerMetrics {
  readonly adds: Counter<'name'>;
  readonly reconciles: Counter<'controller' | 'result'>;
  readonly errors: Counter<'controller'>;
  readonly duration: Histogram<'controller'>;
  private readonly controllers = new Set<Controller>();

  constructor(registry: Registry) {
    const controllers = this.controllers;
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Keys added to a controller queue.', labelNames: ['name'], registers: [registry] });
    this.reconciles = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Reconciles by result (success, error, requeue_after).', labelNames: ['controller', 'result'], registers: [registry] });
    this.errors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Reconciles that failed (retried with backoff).', labelNames: ['controller'], registers: [registry] });
    this.duration = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds', help: 'Time of one reconcile in seconds.', labelNames: ['controller'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: [registry],
    });
    new Gauge({
      name: 'workqueue_depth', help: 'Keys waiting, delayed or being reconciled, per controller (shared by all processes of the shard).', labelNames: ['name'], registers: [registry],
      async collect() {
        this.reset();
        await Promise.all([...controllers].map(async (c) => { this.set({ name: c.name }, await c.depth().catch(() => 0)); }));
      },
    });
  }

  /** Adds a controller to the depth gauge. */
  track(c: Controller): void { this.controllers.add(c); }
  /** Removes a closed controller. */
  untrack(c: Controller): void { this.controllers.delete(c); }
}

/** Options of a controller. */
export interface ControllerOptions {
  name: string;
  /** BullMQ key prefix; use the shard's hash tag so a shard's keys share a slot. */
  prefix: string;
  /** Connection for the queue (commands). */
  connection: Redis;
  /** Parallel reconciles in this process (default 4). */
  concurrency?: number;
  /** BullMQ workers in this process sharing `concurrency` (default 1): parallel job fetching. */
  workers?: number;
  /** First retry delay after a failure, doubled per attempt (default 100 ms). */
  backoffMs?: number;
  reconcile: Reconcile;
  onError?: (key: string, err: unknown) => void;
  /** Where the controller reports queue depth, reconcile durations and errors. */
  metrics?: ControllerMetrics;
}

/** One controller: a BullMQ queue and this process's worker on it. */
export class Controller {
  private readonly queue: Queue;
  private readonly workers: Worker[] = [];
  /** Keys to add on the next flush, with their delay (ms). */
  private readonly batch = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  private readonly backoffMs: number;
  private readonly connections: Redis[] = [];

  constructor(private readonly opts: ControllerOptions) {
    this.backoffMs = opts.backoffMs ?? 100;
    const connection = opts.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
    connection.on('error', () => undefined);
    this.connections.push(connection);
    this.queue = new Queue(opts.name, { connection, prefix: opts.prefix });
    this.queue.on('error', () => undefined);
    const m = opts.metrics;
    const process = async (job: Job<{ key: string }>) => {
      const t0 = performance.now();
      let res: ReconcileResult | void;
      try {
        res = await opts.reconcile(job.data.key);
      } catch (err) {
        m?.reconciles.inc({ controller: opts.name, result: 'error' });
        m?.errors.inc({ controller: opts.name });
        throw err;
      } finally {
        m?.duration.observe({ controller: opts.name }, (performance.now() - t0) / 1000);
      }
      m?.reconciles.inc({ controller: opts.name, result: res?.requeueAfterMs !== undefined ? 'requeue_after' : 'success' });
      if (res?.requeueAfterMs !== undefined) await this.enqueue(job.data.key, res.requeueAfterMs);
    };
    // A BullMQ worker fetches jobs one after the other (one Redis round trip each): several
    // workers per controller fetch in parallel, sharing the concurrency.
    const workers = Math.max(1, opts.workers ?? 1);
    const concurrency = Math.max(1, Math.ceil((opts.concurrency ?? 4) / workers));
    for (let i = 0; i < workers; i++) {
      const workerConnection = opts.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
      workerConnection.on('error', () => undefined);
      this.connections.push(workerConnection);
      // Jobs of a process that died (kill -9) are taken over after the lock expires: reconciles
      // are short, so a 10 s lock checked every 5 s recovers them within ~15 s (BullMQ: 30 s/30 s).
      const worker = new Worker(opts.name, process, {
        connection: workerConnection, prefix: opts.prefix, concurrency, autorun: true, lockDuration: 10_000, stalledInterval: 5_000,
      });
      worker.on('error', () => undefined);
      worker.on('failed', (job, err) => { if (job) opts.onError?.(job.data.key, err); });
      this.workers.push(worker);
    }
    m?.track(this);
  }

  /**
   * Enqueues a key (optionally after `delayMs`). Deduplicated: while a job for the key waits,
   * further enqueues are folded into it; while one runs, one follow-up is kept. Keys enqueued in
   * the same tick (an informer handling a batch of events) are added in one Redis round trip.
   */
  enqueue(key: string, delayMs = 0): Promise<void> {
    this.opts.metrics?.adds.inc({ name: this.opts.name });
    const prev = this.batch.get(key);
    if (prev === undefined || delayMs < prev) this.batch.set(key, delayMs);
    this.flushing ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        const jobs = [...this.batch].map(([k, delay]) => ({
          name: 'reconcile', data: { key: k },
          opts: {
            deduplication: { id: k, keepLastIfActive: true, replace: true },
            delay, attempts: 25, backoff: { type: 'exponential', delay: this.backoffMs },
            removeOnComplete: true, removeOnFail: true,
          },
        }));
        this.batch.clear();
        this.flushing = undefined;
        this.queue.addBulk(jobs).then(() => resolve(), reject);
      });
    });
    return this.flushing;
  }

  /** The controller's (and its queue's) name. */
  get name(): string { return this.opts.name; }

  /** Jobs waiting or delayed (queue depth). */
  async depth(): Promise<number> {
    const c = await this.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return (c.waiting ?? 0) + (c.delayed ?? 0) + (c.active ?? 0) + (c.prioritized ?? 0);
  }

  /** Stops the worker (finishing running reconciles) and closes the queue. */
  async close(): Promise<void> {
    this.opts.metrics?.untrack(this);
    await Promise.all(this.workers.map((w) => w.close()));
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
 * how many are still there, held by finalizers. Objects already gone are skipped. Reads the
 * watch cache; with `synced` the caller has already waited for it (`Store.syncCache`, once for
 * many stores), else this waits — so nothing written before the call is missed.
 */
export async function deleteAll(store: Store, scope: RequestScope, synced = false): Promise<number> {
  if (!synced) await store.syncCache();
  const items = [...store.listCached(scope)]; // a copy: deletions change the cache while we go
  let pending = 0;
  for (const e of items) {
    try {
      const res = await store.delete({ ...scope, namespace: e.namespace || scope.namespace }, e.name);
      if (!res.deleted) pending++;
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }
  return pending;
}
