/**
 * Crash consistency (test/crash/consistency.ts), a short seeded run: 20 writers, the node process
 * and the storage redis-server each SIGKILLed twice; nothing acknowledged lost, nothing
 * half-applied, the resumed watch without gaps, duplicates or reordering.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCrashReport, runCrashConsistency } from '../crash/consistency.js';

test('SIGKILL of the node process and of its redis-server loses no acknowledged write and no watch event', async (t) => {
  const report = await runCrashConsistency({ seed: 1124, writers: 20, objectsPerWriter: 5, kills: 4, killAfterMs: [300, 1500] });
  for (const line of formatCrashReport(report)) t.diagnostic(line);
  assert.equal(report.nodeKills, 2);
  assert.equal(report.redisKills, 2);
  assert.ok(report.acknowledged > 200, `only ${report.acknowledged} writes acknowledged`);
  assert.ok(report.watchEvents > 0 && report.watchResumes >= 2, 'the watch ran across the kills');
  assert.deepEqual(report.lost, []);
  assert.deepEqual(report.halfApplied, []);
  assert.deepEqual(report.watchGaps, []);
  assert.deepEqual(report.watchDuplicates, []);
  assert.deepEqual(report.watchOutOfOrder, []);
});
