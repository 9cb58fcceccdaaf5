/**
 * The controller runtime's queue thread (a `worker_threads` thread, one per controller host):
 * every BullMQ Queue and Worker of the process's controllers and their Redis connections live
 * here, so fetching, locking, completing and adding jobs (several Lua scripts and round trips
 * per job) cost the apiserver's event loop nothing. Reconciles run on the main thread, where the
 * watch cache is: for each job this thread posts `run` and settles the job when the main thread
 * answers `done`.
 *
 * Retries follow client-go's default controller rate limiter (ratelimiter.ts): a failed
 * reconcile completes its job and adds the key again after `max(per-key exponential delay, queue
 * bucket wait)`; the key's failure count is a field of the queue's `<prefix>:<name>:failures`
 * hash (HINCRBY on failure, HDEL on success — client-go's `Forget`), shared by every process on
 * the queue and holding only keys that failed since their last success (each of which has a job
 * waiting). A key is never dropped: there is no attempt limit. BullMQ's own attempts remain only
 * for failures of the runtime itself (the key could not be added again, the controller was
 * closed in the process that took the job), retried with the same capped delays.
 *
 * Protocol (structured-clone messages; `seq` pairs a request with its `reply`):
 * - main → thread: `register` (a controller's queue and workers), `add` (keys with delays),
 *   `done` (outcome of a `run`: `success`, `failure` — retry under the rate limiter, at once when
 *   `immediate` (an event arrived meanwhile) — or `error`, a runtime error BullMQ retries), `depth`, `unregister` (close a controller's workers and queue),
 *   `shutdown` (close everything; the thread then ends).
 * - thread → main: `run` (reconcile a key), `reply` (to a request with `seq`; `error` when it
 *   failed), `reconnected` (the queues' Redis came back after a disconnect: its jobs may be lost).
 *
 * `workerData` is the queues' Redis URL (`redis://…` or `unix://…`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Queue, Worker, type Job } from 'bullmq';
import { connectRedis } from '../storage/redis.js';
import { ControllerRateLimiter, exponentialDelayMs, type RateLimiterOptions } from './ratelimiter.js';

/** Options of one controller's queue, as the thread needs them. */
export interface QueueRegistration {
  name: string;
  prefix: string;
  /** Parallel reconciles of this process, shared by `workers` BullMQ workers. */
  concurrency: number;
  workers: number;
  /** Retry delays of failed reconciles (client-go's default controller rate limiter). */
  rateLimiter: RateLimiterOptions;
}

/** How a `run` ended, as the main thread reports it. */
export type RunOutcome =
  | { result: 'success' }
  /** The reconcile failed: retry the key under the rate limiter; at once when `immediate`. */
  | { result: 'failure'; immediate: boolean }
  /** The runtime could not run the reconcile (e.g. its controller is closed here). */
  | { result: 'error'; error: string };

/** The queue's hash of per-key failure counts (beside BullMQ's `<prefix>:<name>:*` keys). */
export function failuresKey(prefix: string, name: string): string { return `${prefix}:${name}:failures`; }

/**
 * BullMQ attempts of a job: unlimited in effect (a key is never dropped); only runtime errors
 * use them, reconcile failures complete the job and add the key again.
 */
const JOB_ATTEMPTS = Number.MAX_SAFE_INTEGER;

/** Messages from the main thread. */
export type ToQueueThread =
  | { op: 'register'; seq: number; queue: QueueRegistration }
  | { op: 'add'; seq: number; name: string; keys: [key: string, delayMs: number][] }
  | ({ op: 'done'; id: number } & RunOutcome)
  | { op: 'depth'; seq: number; name: string }
  | { op: 'unregister'; seq: number; name: string }
  | { op: 'shutdown'; seq: number };

/** Messages to the main thread. */
export type FromQueueThread =
  | { op: 'run'; id: number; name: string; key: string }
  | { op: 'reply'; seq: number; value?: number; error?: string }
  | { op: 'reconnected' };

interface Registered {
  reg: QueueRegistration;
  queue: Queue;
  workers: Worker[];
  limiter: ControllerRateLimiter;
  /** The workers' connections (BullMQ leaves connections it was given open). */
  connections: ReturnType<typeof connectRedis>[];
}

function startQueueThread(): void {
  const port = parentPort;
  if (!port) throw new Error('queuethread.ts runs as a worker thread of the controller runtime');
  const url = workerData as string;
  // Commands wait for a reconnect instead of failing: BullMQ's loops retry on their own.
  const connect = () => {
    const c = connectRedis(url, { maxRetriesPerRequest: null, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
    c.on('error', () => undefined);
    return c;
  };
  const queues = new Map<string, Registered>();
  const running = new Map<number, { queue: string; key: string; resolve(): void; reject(err: Error): void }>();
  let nextRun = 0;
  const post = (m: FromQueueThread) => port.postMessage(m);
  // One command connection for every queue (workers block, so each has its own). Its reconnects
  // tell the main thread that the queues may have been lost.
  const commands = connect();
  let connectedBefore = false;
  commands.on('ready', () => {
    if (connectedBefore) post({ op: 'reconnected' });
    connectedBefore = true;
  });

  const register = (reg: QueueRegistration): void => {
    if (queues.has(reg.name)) throw new Error(`controller ${reg.name} is registered already`);
    const queue = new Queue(reg.name, { connection: commands, prefix: reg.prefix });
    queue.on('error', () => undefined);
    const entry: Registered = { reg, queue, workers: [], connections: [], limiter: new ControllerRateLimiter(reg.rateLimiter) };
    const processJob = (job: Job<{ key: string }>) => new Promise<void>((resolve, reject) => {
      const id = nextRun++;
      running.set(id, { queue: reg.name, key: job.data.key, resolve, reject });
      post({ op: 'run', id, name: reg.name, key: job.data.key });
    });
    // A BullMQ worker fetches jobs one after the other (one Redis round trip each): several
    // workers per controller fetch in parallel, sharing the concurrency.
    const concurrency = Math.max(1, Math.ceil(reg.concurrency / reg.workers));
    for (let i = 0; i < reg.workers; i++) {
      const c = connect();
      entry.connections.push(c);
      // Jobs of a process that died (kill -9) are taken over after the lock expires: reconciles
      // are short, so a 10 s lock checked every 5 s recovers them within ~15 s (BullMQ: 30 s/30 s).
      const worker = new Worker(reg.name, processJob, {
        connection: c, prefix: reg.prefix, concurrency, autorun: true, lockDuration: 10_000, stalledInterval: 5_000,
        settings: { backoffStrategy: (attemptsMade) => exponentialDelayMs(attemptsMade - 1, reg.rateLimiter.baseDelayMs, reg.rateLimiter.maxDelayMs) },
      });
      worker.on('error', () => undefined);
      entry.workers.push(worker);
    }
    queues.set(reg.name, entry);
  };

  const add = async (name: string, keys: [string, number][]): Promise<void> => {
    const q = queues.get(name);
    if (!q) throw new Error(`controller ${name} is not registered`);
    await q.queue.addBulk(keys.map(([key, delay]) => ({
      name: 'reconcile', data: { key },
      opts: {
        deduplication: { id: key, keepLastIfActive: true, replace: true },
        delay, attempts: JOB_ATTEMPTS, backoff: { type: 'ratelimiter' },
        removeOnComplete: true, removeOnFail: true,
      },
    })));
  };

  /**
   * A failed reconcile: count the failure, add the key again after the limiter's delay (as the
   * active job's follow-up, which BullMQ queues when the job completes; an event's follow-up
   * stored meanwhile is replaced, which is why an event makes the retry immediate).
   */
  const retry = async (name: string, key: string, immediate: boolean): Promise<void> => {
    const q = queues.get(name);
    if (!q) throw new Error(`controller ${name} is not registered`);
    const failures = await commands.hincrby(failuresKey(q.reg.prefix, name), key, 1);
    const delay = q.limiter.delayMs(failures - 1);
    await add(name, [[key, immediate ? 0 : Math.round(delay)]]);
  };

  /** A successful reconcile forgets the key's failures (client-go `Forget`). */
  const forget = (name: string, key: string): void => {
    const q = queues.get(name);
    if (q) commands.hdel(failuresKey(q.reg.prefix, name), key).catch(() => undefined);
  };

  const depth = async (name: string): Promise<number> => {
    const q = queues.get(name);
    if (!q) return 0;
    const c = await q.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return (c.waiting ?? 0) + (c.delayed ?? 0) + (c.active ?? 0) + (c.prioritized ?? 0);
  };

  const unregister = async (name: string): Promise<void> => {
    const q = queues.get(name);
    if (!q) return;
    queues.delete(name);
    // Running reconciles finish first (their `done` still arrives).
    await Promise.all(q.workers.map((w) => w.close()));
    await q.queue.close();
    for (const c of q.connections) c.disconnect();
  };

  const answer = (seq: number, work: Promise<number | void>) => {
    work.then(
      (value) => post({ op: 'reply', seq, value: value ?? undefined }),
      (err: unknown) => post({ op: 'reply', seq, error: err instanceof Error ? err.message : String(err) }),
    );
  };

  port.on('message', (m: ToQueueThread) => {
    switch (m.op) {
      case 'done': {
        const r = running.get(m.id);
        if (!r) return;
        running.delete(m.id);
        if (m.result === 'success') { forget(r.queue, r.key); r.resolve(); return; }
        if (m.result === 'error') { r.reject(new Error(m.error)); return; }
        retry(r.queue, r.key, m.immediate).then(r.resolve, r.reject);
        return;
      }
      case 'add': answer(m.seq, add(m.name, m.keys)); return;
      case 'register': answer(m.seq, (async () => register(m.queue))()); return;
      case 'depth': answer(m.seq, depth(m.name)); return;
      case 'unregister': answer(m.seq, unregister(m.name)); return;
      case 'shutdown':
        answer(m.seq, (async () => {
          await Promise.all([...queues.keys()].map(unregister));
          commands.disconnect();
          port.unref();
        })());
        return;
    }
  });
}

startQueueThread();
