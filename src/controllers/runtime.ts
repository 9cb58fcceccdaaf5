/**
 * The controller runtime on BullMQ (docs/architecture.md, "Controllers"): one queue per
 * controller; informers enqueue object keys, never objects; reconcilers are level-triggered
 * and read current state. Job options: deduplication by key (at most one job per key in flight,
 * a new event while it runs keeps one follow-up), requeue-after as `delay`, jobs removed once
 * finished. Failures are retried under client-go's default controller rate limiter
 * (ratelimiter.ts: per key 5 ms doubled per failure up to 1,000 s, at most 10 retries per second
 * per queue after a burst of 100), for ever: a failing key is never dropped, and its first
 * success forgets its failures. Any number of processes may run workers on the same Redis.
 *
 * BullMQ itself runs in a queue thread (queuethread.ts; one per controller host): its Redis
 * traffic and Lua scripts cost the apiserver's event loop nothing, while reconcilers run on the
 * main thread next to the watch cache they read.
 *
 * The contract a controller author learns is controller-runtime's:
 * `reconcile(key) → { requeueAfterMs? }`, throwing means "retry with backoff".
 */
import { Worker as NodeWorker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram, type CounterSeries, type HistogramSeries } from '../metrics/series.js';
import type { CacheEntry, EventType, WatchCache } from '../storage/watchcache.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { Store, type RequestScope } from '../registry/store.js';
import type { FromQueueThread, QueueRegistration, RunOutcome, ToQueueThread } from './queuethread.js';
import { DEFAULT_RATE_LIMITER, type RateLimiterOptions } from './ratelimiter.js';

/** Outcome of one reconcile. */
export interface ReconcileResult {
  /** Reconcile the key again after this many milliseconds. */
  requeueAfterMs?: number;
}

/** A reconciler: level-triggered, idempotent. */
export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/**
 * Prometheus metrics of every controller of a process, under controller-runtime's and client-go
 * workqueue's names: `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total`,
 * `controller_runtime_reconcile_total{result}`, `controller_runtime_reconcile_errors_total`,
 * `controller_runtime_reconcile_time_seconds` (label `controller` / `name`).
 */
/** The metric series of one controller. */
export interface ControllerSeries {
  adds: CounterSeries; retries: CounterSeries; errors: CounterSeries; duration: HistogramSeries;
  success: CounterSeries; requeueAfter: CounterSeries; failed: CounterSeries;
}

export class ControllerMetrics {
  private readonly adds: SeriesCounter;
  private readonly retries: SeriesCounter;
  private readonly reconciles: SeriesCounter;
  private readonly errors: SeriesCounter;
  private readonly duration: SeriesHistogram;
  private readonly controllers = new Set<Controller>();

  constructor(registry: Registry) {
    const controllers = this.controllers;
    // Updated on every enqueue and reconcile: series objects (src/metrics/series.ts), no label hashing.
    this.adds = new SeriesCounter({ name: 'workqueue_adds_total', help: 'Keys added to a controller queue.', labelNames: ['name'], registry });
    this.retries = new SeriesCounter({ name: 'workqueue_retries_total', help: 'Failed reconciles retried under the rate limiter.', labelNames: ['name'], registry });
    this.reconciles = new SeriesCounter({ name: 'controller_runtime_reconcile_total', help: 'Reconciles by result (success, error, requeue_after).', labelNames: ['controller', 'result'], registry });
    this.errors = new SeriesCounter({ name: 'controller_runtime_reconcile_errors_total', help: 'Reconciles that failed (retried with backoff).', labelNames: ['controller'], registry });
    this.duration = new SeriesHistogram({
      name: 'controller_runtime_reconcile_time_seconds', help: 'Time of one reconcile in seconds.', labelNames: ['controller'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registry,
    });
    new Gauge({
      name: 'workqueue_depth', help: 'Keys waiting, delayed or being reconciled, per controller (shared by all processes of the shard).', labelNames: ['name'], registers: [registry],
      async collect() {
        this.reset();
        await Promise.all([...controllers].map(async (c) => { this.set({ name: c.name }, await c.depth().catch(() => 0)); }));
      },
    });
  }

  /** Adds a controller to the depth gauge; returns its series, which it updates itself. */
  track(c: Controller): ControllerSeries {
    this.controllers.add(c);
    return {
      adds: this.adds.series(c.name), retries: this.retries.series(c.name), errors: this.errors.series(c.name), duration: this.duration.series(c.name),
      success: this.reconciles.series(c.name, 'success'), requeueAfter: this.reconciles.series(c.name, 'requeue_after'), failed: this.reconciles.series(c.name, 'error'),
    };
  }
  /** Removes a closed controller. */
  untrack(c: Controller): void { this.controllers.delete(c); }
}

/** Options of a controller. */
export interface ControllerOptions {
  name: string;
  /** BullMQ key prefix; use the shard's hash tag so a shard's keys share a slot. */
  prefix: string;
  /** The queue thread this controller's queue and workers run in (one per controller host). */
  thread: QueueThread;
  /** Parallel reconciles in this process (default 4). */
  concurrency?: number;
  /** BullMQ workers in this process sharing `concurrency` (default 1): parallel job fetching. */
  workers?: number;
  /**
   * Retry delays of failed reconciles; default client-go's `DefaultControllerRateLimiter`
   * ({@link DEFAULT_RATE_LIMITER}: 5 ms doubled per failure of a key up to 1,000 s, and 10
   * retries per second per queue after a burst of 100). Fields left out keep the default.
   */
  rateLimiter?: Partial<RateLimiterOptions>;
  /**
   * Enqueue batch period (ms, default 10). A key enqueued while the queue was idle is added at
   * once; under load, keys are gathered and added at most once per period, so the queue thread
   * and the queues' Redis wake up once per batch instead of once per key (each wake-up costs a
   * blocking pop and an empty fetch besides the jobs' own scripts). The same trade as
   * kube-controller-manager's `--endpointslice-updates-batch-period`: a few ms of latency
   * under load for much less work per key. 0 adds keys every event-loop turn.
   */
  batchPeriodMs?: number;
  reconcile: Reconcile;
  /** Called with every failed reconcile (it is retried under the rate limiter). */
  onError?: (key: string, err: unknown) => void;
  /** Where the controller reports queue depth, reconcile durations and errors. */
  metrics?: ControllerMetrics;
}

/** How long one closing step of a queue thread waits for BullMQ (ms). */
const GRACEFUL_CLOSE_MS = 5_000;

/** What a queue thread reports to its owner. */
export interface QueueThreadEvents {
  /** The thread failed (it is restarted after a second). */
  onError?: (err: unknown) => void;
  /**
   * Jobs may have been lost: the queues' Redis came back after a disconnect, or the thread was
   * restarted. Level-triggered controllers recover by enqueueing every object again
   * (`WatchCache.relist`).
   */
  onQueuesLost?: () => void;
}

/**
 * The main thread's end of a queue thread (queuethread.ts): BullMQ and its Redis traffic run
 * there; `run` requests come back here, where the reconcilers and the watch cache are. If the
 * thread dies it is restarted after a second and every registered controller re-registered
 * (jobs it held are taken over by BullMQ's stalled-job check).
 */
export class QueueThread {
  private thread!: NodeWorker;
  private seq = 0;
  private readonly replies = new Map<number, { resolve(v: number | undefined): void; reject(err: Error): void }>();
  private readonly registered = new Map<string, { reg: QueueRegistration; run: (id: number, key: string) => void }>();
  private closing = false;
  private alive = false;
  /** A closing step ran out of time: the thread's Redis does not answer (see `gracefully`). */
  private unresponsive = false;

  /** Starts the thread; its queues live in the Redis at `redisUrl` (`redis://…` or `unix://…`). */
  constructor(private readonly redisUrl: string, private events: QueueThreadEvents = {}) {
    this.start();
  }

  /**
   * Replaces the events' receivers. A thread may be started before its owner exists (a shard
   * starts it as soon as its queue Redis is known, so that BullMQ loads in the thread while the
   * rest of the shard starts) and is told its owner's receivers then.
   */
  setEvents(events: QueueThreadEvents): void { this.events = events; }

  private start(): void {
    const built = !import.meta.url.endsWith('.ts');
    const entry = new URL(`./queuethread${built ? '.js' : '.ts'}`, import.meta.url);
    // Run from the TypeScript sources (tests, benchmarks), the thread registers tsx itself: a
    // worker does not always inherit the parent's loader.
    const thread = built
      ? new NodeWorker(entry, { workerData: this.redisUrl })
      : new NodeWorker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true, workerData: this.redisUrl });
    this.thread = thread;
    this.alive = true;
    thread.on('message', (m: FromQueueThread) => {
      if (m.op === 'run') {
        const r = this.registered.get(m.name);
        if (r) r.run(m.id, m.key); else thread.postMessage({ op: 'done', id: m.id, result: 'error', error: `controller ${m.name} is closed` } satisfies ToQueueThread);
        return;
      }
      if (m.op === 'reconnected') { this.events.onQueuesLost?.(); return; }
      const waiter = this.replies.get(m.seq);
      if (!waiter) return;
      this.replies.delete(m.seq);
      if (m.error !== undefined) waiter.reject(new Error(m.error)); else waiter.resolve(m.value);
    });
    thread.on('error', (err) => this.events.onError?.(err));
    thread.on('exit', () => {
      if (thread !== this.thread) return;
      this.alive = false;
      for (const w of this.replies.values()) w.reject(new Error('controller queue thread exited'));
      this.replies.clear();
      if (this.closing) return;
      setTimeout(() => {
        if (this.closing) return;
        this.start();
        const registrations = [...this.registered.values()].map(({ reg }) => this.request({ op: 'register', queue: reg }));
        // Keys enqueued while the thread was down were dropped.
        Promise.all(registrations).then(() => this.events.onQueuesLost?.(), (err) => this.events.onError?.(err));
      }, 1000).unref();
    });
  }

  private request(m: DistributiveOmit<Extract<ToQueueThread, { seq: number }>, 'seq'>): Promise<number | undefined> {
    const seq = this.seq++;
    if (!this.alive) return Promise.reject(new Error('controller queue thread is not running'));
    return new Promise((resolve, reject) => {
      this.replies.set(seq, { resolve, reject });
      this.thread.postMessage({ ...m, seq } as ToQueueThread);
    });
  }

  /** Creates a controller's queue and workers; `run` is called for each job, answered with {@link done}. */
  async register(reg: QueueRegistration, run: (id: number, key: string) => void): Promise<void> {
    this.registered.set(reg.name, { reg, run });
    await this.request({ op: 'register', queue: reg });
  }

  /** Adds keys (deduplicated per key) to a controller's queue, `delayMs` later. */
  async add(name: string, keys: [string, number][]): Promise<void> { await this.request({ op: 'add', name, keys }); }

  /** Settles the job of a `run` (a `failure` is retried under the controller's rate limiter). */
  done(id: number, outcome: RunOutcome): void { this.thread.postMessage({ op: 'done', id, ...outcome } satisfies ToQueueThread); }

  /** Jobs waiting, delayed or active in a controller's queue (all processes). */
  async depth(name: string): Promise<number> { return (await this.request({ op: 'depth', name })) ?? 0; }

  /**
   * Waits for a closing step at most {@link GRACEFUL_CLOSE_MS}. BullMQ closes its workers and
   * queues through Redis and waits for it without end while it is unreachable; once one step
   * ran out of time the later ones do not wait at all, so stopping a server whose queue Redis is
   * down takes seconds, not forever.
   */
  private async gracefully(step: Promise<unknown>): Promise<void> {
    if (this.unresponsive) { step.catch(() => undefined); return; }
    let timer: NodeJS.Timeout | undefined;
    this.unresponsive = await Promise.race([
      step.then(() => false, () => false),
      new Promise<boolean>((r) => { timer = setTimeout(() => r(true), GRACEFUL_CLOSE_MS); }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Closes a controller's workers (running reconciles finish) and queue; nothing to do when the
   * thread is gone. Gives up waiting after {@link GRACEFUL_CLOSE_MS}.
   */
  async unregister(name: string): Promise<void> {
    // Jobs fetched before the workers stopped still run here until the thread answers.
    if (this.alive) await this.gracefully(this.request({ op: 'unregister', name }));
    this.registered.delete(name);
  }

  /**
   * Closes every queue and ends the thread; after {@link GRACEFUL_CLOSE_MS} without an answer the
   * thread is terminated as it is (jobs it held are taken over by another process once their
   * locks expire, or found again by the informers at the next start).
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.alive) await this.gracefully(this.request({ op: 'shutdown' }));
    await this.thread.terminate();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One controller: a BullMQ queue and this process's workers on it (in a queue thread). */
export class Controller {
  private readonly thread: QueueThread;
  private readonly registered: Promise<void>;
  /** Keys to add on the next flush, with their delay (ms). */
  private readonly batch = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  /** When the last batch was handed to the queue thread (performance.now(), ms). */
  private lastFlush = -Infinity;
  /** Keys this process is reconciling now. */
  private readonly active = new Set<string>();
  /** Its metric series (when the shard has metrics). */
  private readonly series: ControllerSeries | undefined;
  /** Active keys enqueued without delay since their reconcile started (an event to act on). */
  private readonly dirty = new Set<string>();

  constructor(private readonly opts: ControllerOptions) {
    this.thread = opts.thread;
    const workers = Math.max(1, opts.workers ?? 1);
    this.registered = this.thread.register(
      {
        name: opts.name, prefix: opts.prefix, concurrency: Math.max(1, opts.concurrency ?? 4), workers,
        rateLimiter: { ...DEFAULT_RATE_LIMITER, ...opts.rateLimiter },
      },
      (id, key) => { void this.run(id, key); },
    );
    this.registered.catch(() => undefined);
    this.series = opts.metrics?.track(this);
  }

  private async run(id: number, key: string): Promise<void> {
    const m = this.series;
    const t0 = performance.now();
    let res: ReconcileResult | void;
    this.active.add(key);
    try {
      try {
        res = await this.opts.reconcile(key);
      } finally {
        m?.duration.observe((performance.now() - t0) / 1000);
        this.active.delete(key);
      }
      if (m) (res?.requeueAfterMs !== undefined ? m.requeueAfter : m.success).value++;
      // The queue keeps one follow-up per key, the last one added: a requeue-after added now
      // would replace the immediate follow-up of an event seen during this reconcile, which
      // would then wait for the delay. Such an event makes the requeue immediate instead.
      if (res?.requeueAfterMs !== undefined) await this.enqueue(key, this.dirty.has(key) ? 0 : res.requeueAfterMs);
    } catch (err) {
      if (m) { m.failed.value++; m.errors.value++; m.retries.value++; }
      this.opts.onError?.(key, err);
      // An event seen during the reconcile is acted on at once, as client-go requeues a key
      // that became dirty while processing; the failure still counts towards the key's delay.
      const immediate = this.dirty.delete(key);
      this.thread.done(id, { result: 'failure', immediate });
      return;
    }
    this.dirty.delete(key);
    this.thread.done(id, { result: 'success' });
  }

  /**
   * Enqueues a key (optionally after `delayMs`). Deduplicated: while a job for the key waits,
   * further enqueues are folded into it; while one runs, one follow-up is kept. Keys enqueued in
   * the same tick, or within `batchPeriodMs` of the previous add, are added together in one
   * Redis round trip. Resolves once the keys are in the queue.
   */
  enqueue(key: string, delayMs = 0): Promise<void> {
    if (this.series) this.series.adds.value++;
    if (delayMs === 0 && this.active.has(key)) this.dirty.add(key);
    const prev = this.batch.get(key);
    if (prev === undefined || delayMs < prev) this.batch.set(key, delayMs);
    this.flushing ??= new Promise<void>((resolve, reject) => {
      const flush = () => {
        const keys = [...this.batch];
        this.batch.clear();
        this.flushing = undefined;
        this.lastFlush = performance.now();
        this.thread.add(this.opts.name, keys).then(resolve, reject);
      };
      const wait = this.lastFlush + (this.opts.batchPeriodMs ?? 10) - performance.now();
      if (wait > 0) setTimeout(flush, wait); else setImmediate(flush);
    });
    return this.flushing;
  }

  /** The controller's (and its queue's) name. */
  get name(): string { return this.opts.name; }

  /** Resolves once the queue thread runs this controller's workers; rejects if it could not. */
  ready(): Promise<void> { return this.registered; }

  /** Jobs waiting, delayed or being reconciled (queue depth, all processes). */
  async depth(): Promise<number> { return this.thread.depth(this.opts.name); }

  /** Stops the workers (finishing running reconciles) and closes the queue. */
  async close(): Promise<void> {
    this.opts.metrics?.untrack(this);
    await this.registered.catch(() => undefined);
    await this.thread.unregister(this.opts.name);
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
  const e = store.cachedEntry(scope, name);
  if (!e) return undefined;
  await store.prepare([e]);
  return store.decodeEntry(e);
}

/**
 * Deletes every object of a store in a scope (all namespaces when the scope has none); returns
 * how many are still there, held by finalizers. Objects already gone are skipped. Reads the
 * watch cache; with `synced` the caller has already waited for it (`Store.syncCache`, once for
 * many stores), else this waits — so nothing written before the call is missed.
 */
export async function deleteAll(store: Store, scope: RequestScope, synced = false): Promise<number> {
  return deleteAllOf([store], scope, synced);
}

/**
 * `deleteAll` over several stores of one storage (a logical cluster's or a namespace's content):
 * their objects are deleted together, in as few storage transactions as `Store.deleteCached`
 * needs, instead of one round trip per object.
 */
export async function deleteAllOf(stores: readonly Store[], scope: RequestScope, synced = false): Promise<number> {
  if (!stores.length) return 0;
  if (!synced) await stores[0]!.syncCache();
  // Copies: deletions change the cache while we go.
  const items = stores.flatMap((store) => store.listCached(scope).map((entry) => ({ store, scope, entry })));
  return Store.deleteCached(items);
}
