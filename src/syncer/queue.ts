/**
 * The syncer's work queue and rate limiter. What a tenant can make the syncer hold is bounded: keys
 * wait in one queue per (resource type, logical cluster) — a set, so an object waits at most once
 * — of at most `maxPerQueue` keys, served round-robin so one busy workspace does not starve the
 * others; past the bound a queue's further keys are not kept but the queue is marked, and when it
 * drains the syncer enqueues that queue's objects again from its caches (nothing is lost, memory
 * stays bounded). A key being processed is not handed out twice; added meanwhile it comes back
 * once after (client-go workqueue's dirty/processing sets).
 */

/** A key handed out by {@link FairQueue.next}. */
export interface QueueItem { queue: string; key: string }

/** Bounded fair queue (see the module comment). */
export class FairQueue {
  /** Queue name → its waiting keys; Map order is the round-robin order. */
  private readonly queues = new Map<string, Set<string>>();
  private readonly processing = new Set<string>();
  /** Keys added while being processed: `<queue>\0<key>`. */
  private readonly dirty = new Set<string>();
  private readonly overflowed = new Set<string>();
  private waiters: Array<() => void> = [];
  private closed = false;

  /** @param maxPerQueue most keys one queue holds (≥ 1) @param onDrained called when an overflowed queue drained: enqueue its objects again */
  constructor(readonly maxPerQueue: number, private readonly onDrained: (queue: string) => void) {}

  /** Keys waiting in all queues. */
  get length(): number { let n = 0; for (const q of this.queues.values()) n += q.size; return n; }

  /** Adds `key` to `queue` (no-op when waiting already); false when the queue is full (marked for a refill). */
  add(queue: string, key: string): boolean {
    const id = `${queue}\0${key}`;
    if (this.processing.has(id)) { this.dirty.add(id); return true; }
    let q = this.queues.get(queue);
    if (q?.has(key)) return true;
    if (q && q.size >= this.maxPerQueue) { this.overflowed.add(queue); return false; }
    if (!q) { q = new Set(); this.queues.set(queue, q); }
    q.add(key);
    const w = this.waiters.shift();
    w?.();
    return true;
  }

  /** The next key, round-robin over queues; waits while none; undefined once closed. */
  async next(): Promise<QueueItem | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      for (const [name, q] of this.queues) {
        const key = q.values().next().value as string;
        q.delete(key);
        this.queues.delete(name);
        if (q.size) this.queues.set(name, q); // to the back of the round
        else if (this.overflowed.delete(name)) this.onDrained(name);
        this.processing.add(`${name}\0${key}`);
        return { queue: name, key };
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Marks an item processed: added again meanwhile, it waits once more. */
  done(item: QueueItem): void {
    const id = `${item.queue}\0${item.key}`;
    this.processing.delete(id);
    if (this.dirty.delete(id)) this.add(item.queue, item.key);
  }

  /** Wakes every waiter with nothing: workers end. */
  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w();
  }
}

/**
 * A token bucket (client-go `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`): `take` resolves
 * when a token is available; `qps` tokens per second refill a bucket of `burst`.
 */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private chain: Promise<void> = Promise.resolve();

  constructor(readonly qps: number, readonly burst: number) { this.tokens = burst; }

  /** Waits for one token (callers are served in order). */
  take(): Promise<void> {
    const p = this.chain.then(async () => {
      for (;;) {
        const now = Date.now();
        this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
        this.last = now;
        if (this.tokens >= 1) { this.tokens -= 1; return; }
        await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.qps) * 1000)));
      }
    });
    this.chain = p;
    return p;
  }
}
