/**
 * The operator's health checks (operator/health.ts): liveness never depends on Redis, readiness
 * does; a standby is ready when its queue answers; the queue monitor reports each change of
 * state once, with the connection's error, against a real redis-server stopped and started.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { QueueRedisMonitor, operatorHealthChecks, type OperatorHealthState } from '../../operator/health.js';
import { answerHealth } from '../../src/server/health.js';
import { eventually, freePort, sleep } from '../helpers.js';

test('checks: livez/healthz are ping only; readyz needs the queue, the leader\'s informers and no shutdown; a standby needs only the queue', () => {
  const s = { reason: undefined as string | undefined, leading: true, synced: false, stopping: false };
  const state: OperatorHealthState = { queue: { get reason() { return s.reason; } }, leading: () => s.leading, synced: () => s.synced, stopping: () => s.stopping };
  const checks = operatorHealthChecks(state);
  const ask = (e: 'livez' | 'healthz' | 'readyz') => answerHealth(e, checks[e], '', new URLSearchParams('verbose'));
  s.reason = 'connect ECONNREFUSED 127.0.0.1:1';
  assert.equal(ask('livez').code, 200);
  assert.equal(ask('healthz').code, 200);
  assert.equal(ask('readyz').body, '[+]ping ok\n[-]queue-redis failed: reason withheld\n[-]informer-sync failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n');
  s.reason = undefined;
  s.leading = false;
  assert.equal(ask('readyz').code, 200, 'a standby runs no informers and is ready');
  s.leading = true;
  assert.equal(ask('readyz').code, 500);
  s.synced = true;
  assert.equal(ask('readyz').code, 200);
  s.stopping = true;
  assert.match(ask('readyz').body, /\[-\]shutdown failed/);
  assert.equal(ask('livez').code, 200);
});

test('the queue monitor reports unreachable (with the connection error), reachable, unreachable: each once', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const changes: [boolean, string][] = [];
  const monitor = new QueueRedisMonitor(`redis://127.0.0.1:${port}`, { intervalMs: 100, timeoutMs: 500, onChange: (up, why) => changes.push([up, why]) });
  try {
    await eventually('down reported', async () => changes.length === 1, 10_000);
    assert.equal(changes[0]![0], false);
    assert.match(changes[0]![1], /ECONNREFUSED/);
    assert.equal(monitor.reachable, false);
    assert.match(monitor.reason!, /ECONNREFUSED/);
    await sleep(1000);
    assert.equal(changes.length, 1, 'ten failed PINGs, one report');
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    try {
      await eventually('up reported', async () => changes.length === 2, 20_000);
      assert.deepEqual(changes[1], [true, '']);
      assert.equal(monitor.reason, undefined);
      await sleep(500);
      assert.equal(changes.length, 2);
    } finally {
      redis.kill('SIGTERM');
      await new Promise((r) => redis.once('exit', r));
    }
    await eventually('down again', async () => changes.length === 3, 10_000);
    assert.equal(changes[2]![0], false);
  } finally {
    monitor.stop();
  }
});
