/**
 * client-go's default controller rate limiter (k8s.io/client-go/util/workqueue,
 * default_rate_limiters.go `DefaultControllerRateLimiter`): the maximum of a per-item exponential
 * failure limiter (5 ms doubled per failure of the key, capped at 1,000 s) and one token bucket
 * for all retries of a queue (10 per second, burst 100; golang.org/x/time/rate `Reserve`).
 * Success forgets a key's failures (`Forget`); a key is never dropped, however often it fails.
 *
 * The per-key failure count lives with the queue (a Redis hash beside the BullMQ queue, see
 * queuethread.ts), so every process working on the queue backs a key off alike; the bucket is
 * per process and queue, as client-go's is per workqueue.
 */

/** Parameters of a controller's retry rate limiter (all in milliseconds, `qps` per second). */
export interface RateLimiterOptions {
  /** Delay after a key's first failure, doubled per further failure (client-go: 5 ms). */
  baseDelayMs: number;
  /** Cap of the per-key delay (client-go: 1,000 s). */
  maxDelayMs: number;
  /** Retries per second of the whole queue once the burst is spent (client-go: 10). */
  qps: number;
  /** Retries the queue may make at once before `qps` applies (client-go: 100). */
  burst: number;
}

/** client-go's `DefaultControllerRateLimiter()` figures. */
export const DEFAULT_RATE_LIMITER: Readonly<RateLimiterOptions> = Object.freeze({ baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 100 });

/**
 * The per-item exponential delay (client-go `ItemExponentialFailureRateLimiter.When`): `base ·
 * 2^failuresBefore` ms, at most `max` ms. `failuresBefore` counts the key's failures before this
 * one (0 on its first failure). Never NaN or Infinity, whatever the count.
 */
export function exponentialDelayMs(failuresBefore: number, baseDelayMs: number, maxDelayMs: number): number {
  if (failuresBefore < 0) return baseDelayMs;
  // 2^1024 is Infinity: past the cap long before, and min() keeps it finite.
  const d = baseDelayMs * 2 ** Math.min(failuresBefore, 1023);
  return Math.min(d, maxDelayMs);
}

/**
 * A token bucket with reservations (golang.org/x/time/rate `Limiter.Reserve().Delay()`): it holds
 * up to `burst` tokens, refilled at `qps` per second; each reservation takes one token, going
 * into debt when none is left, and answers how long the caller must wait for its token (ms).
 * `now` is a monotonic clock in ms (injectable for tests).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(private readonly qps: number, private readonly burst: number, private readonly now: () => number = () => performance.now()) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes one token; returns the wait until it is due (0 when one was there), in ms. */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }
}

/**
 * One queue's retry limiter: `delayMs(failuresBefore)` is client-go's `MaxOfRateLimiter.When`,
 * the larger of the key's exponential delay and the bucket's wait (which it consumes).
 */
export class ControllerRateLimiter {
  private readonly bucket: TokenBucket;

  constructor(readonly options: RateLimiterOptions = DEFAULT_RATE_LIMITER, now?: () => number) {
    this.bucket = new TokenBucket(options.qps, options.burst, now);
  }

  /** The delay before retrying a key that has failed `failuresBefore` times before this failure (ms). */
  delayMs(failuresBefore: number): number {
    const { baseDelayMs, maxDelayMs } = this.options;
    return Math.max(exponentialDelayMs(failuresBefore, baseDelayMs, maxDelayMs), this.bucket.reserve());
  }
}
