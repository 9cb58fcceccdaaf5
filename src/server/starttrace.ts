/**
 * Start-up phase timings: with `KCP_TS_START_TRACE=1` in its environment, `kcp-ts start` writes
 * one line per phase to stderr, `start trace <ms since the process started> ms <phase>`
 * (`npm run bench -- start` with `BENCH_START_TRACE=1` prints them; docs/benchmarks.md, "Start
 * time"). Off by default: one environment lookup at load, nothing per call.
 */
import { performance } from 'node:perf_hooks';

const enabled = !!process.env.KCP_TS_START_TRACE;

/**
 * Marks the end of a start-up phase named `phase` (with a prefix such as the shard's name when
 * several start in one process). The time is `performance.now()`: ms since the process started.
 */
export function startTrace(phase: string): void {
  if (enabled) process.stderr.write(`start trace ${Math.round(performance.now())} ms ${phase}\n`);
}
