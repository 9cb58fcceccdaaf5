/**
 * Hostile input fuzz (test/fuzz/fuzzer.ts), a short run: a fixed seed and a seed from the clock
 * (printed, to replay with `npm run fuzz -- --seed S`), against `kcp-ts start`. No 5xx, no hang,
 * no crash, quota races that never exceed hard; afterwards the server is ready, live and serves a create and a get.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatFuzzReport, runFuzz } from '../fuzz/fuzzer.js';

test('hostile input over every route: no 5xx, no hang, no crash, the server stays up', async (t) => {
  const clockSeed = Date.now() % 1_000_000;
  t.diagnostic(`fuzz seeds: 20260 (fixed), ${clockSeed} (from the clock; replay with npm run fuzz -- --seed ${clockSeed} --seconds 7)`);
  const report = await runFuzz({ seeds: [20260, clockSeed], seconds: 7, concurrency: 6 });
  for (const line of formatFuzzReport(report)) t.diagnostic(line);
  assert.ok(report.requests > 100, `only ${report.requests} requests`);
  assert.deepEqual(report.failures.map((f) => `${f.what} seed ${f.seed} case ${f.index}: ${f.reproducer.slice(0, 300)}`), []);
  assert.equal(report.fivexx, 0);
  assert.equal(report.hangs, 0);
  assert.equal(report.crashes, 0);
  assert.ok(report.quotaBursts > 0, 'quota races ran');
  assert.equal(report.quotaViolations, 0);
  assert.equal(report.readyz, 200);
  assert.equal(report.livez, 200);
  assert.ok(report.createGetOk, 'create and get after the run');
  assert.ok(report.rssMaxMiB <= report.maxRssMiB, `RSS ${report.rssMaxMiB} MiB over ${report.maxRssMiB} MiB`);
});
