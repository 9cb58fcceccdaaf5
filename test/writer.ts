/**
 * An open-loop writer for the tests and benchmarks that check that writes survive a live
 * migration or a shard drain: it creates ConfigMap `<prefix>-<n>` (data `v: "<n>"`) `perSecond`
 * times a second, on schedule whatever the answers take (open loop: a pause shows as latency,
 * not as fewer writes), and records every acknowledged (201) name with its value, every refusal,
 * and each write's latency.
 */
import { sleep } from './helpers.js';

/** What a write answered: its HTTP status and body. */
export interface WriteAnswer { status: number; body: string }

/** A running writer (see the module comment). */
export interface OpenLoopWriter {
  /** Acknowledged writes: name → the value written. */
  readonly acked: Map<string, string>;
  /** Writes that were refused or failed: `<name>: <status or error> <message>`. */
  readonly failures: string[];
  /** Each answered write: when it was sent (ms since the epoch) and how long its answer took (ms). */
  readonly samples: { at: number; ms: number }[];
  /** Stops writing and waits for the writes in flight. */
  stop(): Promise<void>;
}

/**
 * Starts writing. `post(name, body)` sends one create (the caller picks the URL, credentials and
 * connection pool) and resolves with its answer; a rejection counts as a failure.
 */
export function startWriter(perSecond: number, prefix: string, post: (name: string, body: object) => Promise<WriteAnswer>): OpenLoopWriter {
  const acked = new Map<string, string>();
  const failures: string[] = [];
  const samples: { at: number; ms: number }[] = [];
  const inflight = new Set<Promise<void>>();
  let n = 0;
  let stopped = false;
  const loop = (async () => {
    const start = Date.now();
    while (!stopped) {
      const due = start + (n * 1000) / perSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      const name = `${prefix}-${n++}`;
      const v = String(n);
      const t0 = Date.now();
      const p = post(name, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } }).then((r) => {
        samples.push({ at: t0, ms: Date.now() - t0 });
        if (r.status === 201) acked.set(name, v); else failures.push(`${name}: ${r.status} ${r.body.slice(0, 200)}`);
      }, (err: Error) => { failures.push(`${name}: ${err.message}`); });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    }
  })();
  return {
    acked, failures, samples,
    async stop() { stopped = true; await loop; await Promise.all([...inflight]); },
  };
}

/** The `q` quantile (0–1) of `values`, nearest rank; 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? 0;
}
