import { performance } from 'node:perf_hooks';

/**
 * Median CPU milliseconds (user + system of this process) per call of `fn` over 5 rounds of ~300 ms:
 * CPU time rather than wall time, so other load on the machine inflates the figures less.
 */
export function cpuMsPerCall(fn: () => unknown): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    let n = 0;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    do { fn(); n++; } while (performance.now() - t0 < 300);
    const c = process.cpuUsage(c0);
    rounds.push((c.user + c.system) / 1000 / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[2]!;
}

