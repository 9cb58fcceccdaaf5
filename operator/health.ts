/**
 * What the operator's health endpoints say, as kube components say it (k8s.io/apiserver
 * pkg/server/healthz; controller-runtime's manager serves the same two endpoints):
 *
 * - `/livez` and `/healthz` — liveness: the process serves requests (`ping`). Nothing outside
 *   the process is checked: a restart cannot bring back a Redis or a kube-apiserver, so an outage
 *   of a dependency must not restart the pod (it would only add a crash loop to the outage).
 * - `/readyz` — readiness: `ping`; `queue-redis`, the controller queue's Redis answers PING (no
 *   reconcile runs without it); `informer-sync`, the leader's caches of the host cluster are
 *   listed; `shutdown`, the process is not stopping. A standby replica (leader election, not
 *   leading) runs no informers: it is ready when its queue's Redis answers, so a rolling update
 *   can make the new pod ready while the old one still holds the Lease.
 *
 * Bodies are kube's (src/server/health.ts): `?verbose` lists the checks, a failing one answers
 * 500 with `[-]queue-redis failed: reason withheld`; the reason goes to the log, once per change
 * of state, not once per probe.
 */
import type { RedisClient } from '../src/storage/redis.js';
import { connectRedis } from '../src/storage/redis.js';
import type { HealthCheck, HealthEndpoint } from '../src/server/health.js';

/** Options of a {@link QueueRedisMonitor}. */
export interface QueueRedisMonitorOptions {
  /** Time between PINGs, ms (default 2,000). */
  intervalMs?: number;
  /** A PING not answered within this is a failure, ms (default 2,000). */
  timeoutMs?: number;
  /** Told each change of state (never twice the same state in a row); the first report is the first answer or failure. */
  onChange?: (reachable: boolean, reason: string) => void;
}

/**
 * Watches the controller queue's Redis with a connection of its own: a PING every `intervalMs`.
 * State is unknown (reported unreachable) until the first PING answered or failed; the reason of
 * a failure is the connection's last error (`connect ECONNREFUSED 127.0.0.1:1`) when there is
 * one, else the PING's.
 */
export class QueueRedisMonitor {
  private readonly client: RedisClient;
  private timer: NodeJS.Timeout | undefined;
  private state: boolean | undefined;
  private why = 'no answer yet';
  private lastError: string | undefined;
  private stopped = false;

  constructor(readonly url: string, private readonly opts: QueueRedisMonitorOptions = {}) {
    // No offline queue: a PING while disconnected fails at once instead of waiting.
    this.client = connectRedis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(100 * n, 2000) });
    // The first PING waits for the first connection attempt's outcome (or the timeout), so that
    // an unreachable Redis is reported with the connection's error.
    let first = true;
    this.client.on('error', (err: Error) => {
      this.lastError = err.message || String(err);
      if (first) { first = false; void this.probe(); }
    });
    this.client.on('ready', () => { first = false; this.lastError = undefined; void this.probe(); });
    this.timer = setTimeout(() => { first = false; void this.probe(); }, opts.timeoutMs ?? 2000);
    this.timer.unref();
  }

  /** Whether a PING has answered or failed yet. */
  get known(): boolean { return this.state !== undefined; }

  /** True once the last PING was answered; false before the first answer and after a failure. */
  get reachable(): boolean { return this.state === true; }

  /** Why it is unreachable (undefined while reachable). */
  get reason(): string | undefined { return this.state === true ? undefined : this.why; }

  /** One PING now; the next is scheduled after it. */
  private async probe(): Promise<void> {
    if (this.stopped) return;
    clearTimeout(this.timer);
    let ok = false;
    let why = '';
    let deadline: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.client.ping(),
        new Promise((_, reject) => { deadline = setTimeout(() => reject(new Error(`no answer to PING within ${this.opts.timeoutMs ?? 2000} ms`)), this.opts.timeoutMs ?? 2000); }),
      ]);
      ok = true;
    } catch (err) {
      why = this.lastError ?? ((err as Error).message || String(err));
    } finally {
      clearTimeout(deadline);
    }
    if (this.stopped) return;
    if (!ok) this.why = why;
    if (this.state !== ok) {
      this.state = ok;
      this.opts.onChange?.(ok, ok ? '' : why);
    }
    this.timer = setTimeout(() => { void this.probe(); }, this.opts.intervalMs ?? 2000);
    this.timer.unref();
  }

  /** Stops probing and closes the connection. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.client.disconnect();
  }
}

/** What the operator's checks read (see the module comment). */
export interface OperatorHealthState {
  /** The queue's Redis monitor. */
  queue: Pick<QueueRedisMonitor, 'reason'>;
  /** This process leads (always true without leader election). */
  leading(): boolean;
  /** The leader's informers have listed. */
  synced(): boolean;
  /** The process is stopping. */
  stopping(): boolean;
}

/** The checks of `/livez`, `/healthz` and `/readyz` (see the module comment). */
export function operatorHealthChecks(state: OperatorHealthState): Record<HealthEndpoint, readonly HealthCheck[]> {
  const ping: HealthCheck = { name: 'ping', check: () => undefined };
  const queue: HealthCheck = { name: 'queue-redis', check: () => state.queue.reason && `the controller queue's Redis is unreachable: ${state.queue.reason}` };
  const informers: HealthCheck = { name: 'informer-sync', check: () => (!state.leading() || state.synced() ? undefined : 'the informers have not listed the host cluster yet') };
  const shutdown: HealthCheck = { name: 'shutdown', check: () => (state.stopping() ? 'the operator is stopping' : undefined) };
  return { livez: [ping], healthz: [ping], readyz: [ping, queue, informers, shutdown] };
}
