/**
 * Closed-loop load: `concurrency` virtual clients, each sending its next request as soon as the
 * previous one answered, for a warm-up period (not counted) and then a measured period.
 * Latency is measured per request from just before the write to the full response.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from './client.js';
import { CpuSampler, type CpuReport } from './procs.js';

/** One request of a virtual client. */
export interface Req { method: string; path: string; body?: string | Buffer; contentType?: string; accept?: string }

/** Latency summary in milliseconds. */
export interface LatencySummary { p50: number; p90: number; p99: number; p999: number; max: number; mean: number; count: number }

/** Result of a closed-loop run. */
export interface LoadResult {
  ops: number;
  opsPerSec: number;
  errors: number;
  /** First few unexpected statuses with a body excerpt. */
  errorSamples: string[];
  seconds: number;
  latencyMs: LatencySummary;
  cpu: CpuReport;
}

/** Percentiles of a sample (sorted in place). */
export function summarize(values: Float64Array | number[]): LatencySummary {
  const a = values instanceof Float64Array ? values : Float64Array.from(values);
  a.sort();
  const n = a.length;
  if (!n) return { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN, count: 0 };
  const q = (p: number) => a[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += a[i]!;
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: a[n - 1]!, mean: sum / n, count: n };
}

/** Growable float array for latency samples. */
export class Samples {
  private a = new Float64Array(1 << 16);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) { const b = new Float64Array(this.a.length * 2); b.set(this.a); this.a = b; }
    this.a[this.n++] = v;
  }
  values(): Float64Array { return this.a.subarray(0, this.n); }
}

export interface LoadOptions {
  clients: Client[];
  warmupMs: number;
  durationMs: number;
  /** Request `i` (per client, counting from 0) of client `c`. */
  next(c: number, i: number): Req;
  /** Statuses counted as success (default 200, 201). */
  ok?: (status: number) => boolean;
  /** Processes whose CPU is reported for the measured period. */
  cpu: CpuSampler;
}

/** Runs a closed loop and returns throughput and latency of the measured period. */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const ok = o.ok ?? ((s: number) => s === 200 || s === 201);
  const lat = new Samples();
  let ops = 0; let errors = 0;
  const errorSamples: string[] = [];
  const t0 = performance.now();
  const measureFrom = t0 + o.warmupMs;
  const end = measureFrom + o.durationMs;
  let measuring = false;
  let cpuStart: ReturnType<CpuSampler['snapshot']> | undefined;
  const startMeasuring = () => { if (!measuring) { measuring = true; cpuStart = o.cpu.snapshot(); } };
  const warm = setTimeout(startMeasuring, o.warmupMs);
  const worker = async (c: number) => {
    const client = o.clients[c]!;
    for (let i = 0; ; i++) {
      const now = performance.now();
      if (now >= end) return;
      const r = o.next(c, i);
      const s = performance.now();
      let status = 0; let body: Buffer | undefined;
      try {
        const res = await client.request(r.method, r.path, r.body, r.contentType, r.accept);
        status = res.status; body = res.body;
      } catch (err) {
        body = Buffer.from(String(err));
      }
      const e = performance.now();
      if (s >= measureFrom && e <= end) {
        if (ok(status)) { ops++; lat.push(e - s); } else errors++;
      }
      if (!ok(status) && errorSamples.length < 5) errorSamples.push(`${status} ${r.method} ${r.path}: ${body?.toString().slice(0, 200)}`);
    }
  };
  await Promise.all(o.clients.map((_, c) => worker(c)));
  clearTimeout(warm);
  startMeasuring();
  const cpu = o.cpu.report(cpuStart!);
  const seconds = o.durationMs / 1000;
  return { ops, opsPerSec: ops / seconds, errors, errorSamples, seconds, latencyMs: summarize(lat.values()), cpu };
}

/** Runs `total` requests with `concurrency` clients as fast as possible (fixtures). */
export async function runCount(clients: Client[], total: number, next: (k: number) => Req, ok = (s: number) => s === 200 || s === 201): Promise<{ seconds: number; errors: number; errorSamples: string[] }> {
  let k = 0; let errors = 0;
  const errorSamples: string[] = [];
  const t0 = performance.now();
  await Promise.all(clients.map(async (client) => {
    while (k < total) {
      const r = next(k++);
      let status = 0; let body = '';
      try { const res = await client.request(r.method, r.path, r.body, r.contentType, r.accept); status = res.status; body = res.body.toString(); } catch (err) { body = String(err); }
      if (!ok(status)) { errors++; if (errorSamples.length < 5) errorSamples.push(`${status} ${r.method} ${r.path}: ${body.slice(0, 200)}`); }
    }
  }));
  return { seconds: (performance.now() - t0) / 1000, errors, errorSamples };
}
