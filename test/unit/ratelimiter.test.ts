/**
 * client-go's default controller rate limiter (workqueue default_rate_limiters.go): the per-key
 * exponential delay and its cap, the queue's token bucket (golang.org/x/time/rate reservations),
 * and the maximum of the two.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerRateLimiter, DEFAULT_RATE_LIMITER, TokenBucket, exponentialDelayMs } from '../../src/controllers/ratelimiter.js';

test('client-go defaults: 5 ms doubled per failure, capped at 1,000 s; 10 qps, burst 100', () => {
  assert.deepEqual({ ...DEFAULT_RATE_LIMITER }, { baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 100 });
  const d = (n: number) => exponentialDelayMs(n, 5, 1_000_000);
  assert.deepEqual([0, 1, 2, 3, 10].map(d), [5, 10, 20, 40, 5120]);
  // 5 ms · 2^17 = 655 s; 5 ms · 2^18 = 1,310 s is past the cap.
  assert.equal(d(17), 655_360);
  assert.equal(d(18), 1_000_000);
  assert.equal(d(25), 1_000_000, 'the 26th failure waits the cap, it is not the last');
  assert.equal(d(10_000), 1_000_000, 'no overflow to Infinity or NaN');
});

test('the token bucket: a burst at once, then one token per 1/qps seconds, refilled with time', () => {
  let now = 0;
  const b = new TokenBucket(10, 100, () => now);
  const waits = Array.from({ length: 103 }, () => b.reserve());
  assert.deepEqual(waits.slice(0, 100), Array(100).fill(0));
  assert.deepEqual(waits.slice(100).map(Math.round), [100, 200, 300]);
  now = 10_000; // 10 s later: the debt of 3 is paid and the bucket full again
  assert.equal(b.reserve(), 0);
});

test('the controller limiter waits the larger of the key delay and the bucket wait', () => {
  let now = 0;
  const l = new ControllerRateLimiter({ baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 2 }, () => now);
  assert.equal(l.delayMs(0), 5);
  assert.equal(l.delayMs(0), 5);
  assert.equal(Math.round(l.delayMs(0)), 100, 'the bucket binds once its burst is spent');
  assert.equal(l.delayMs(20), 1_000_000, 'the key delay binds when it is longer');
});
