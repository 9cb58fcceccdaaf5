/**
 * Kubernetes' own e2e suite as part of `npm test`: the sig-api-machinery Conformance specs of
 * e2e.test (k8s.io/kubernetes v1.34.4) against a fresh shard's workspace, as
 * `npm run conformance:upstream` runs them (test/upstream/run.ts; docs/conformance.md, "Upstream
 * suite"). Every applicable spec must pass, except those recorded with their cause in
 * test/upstream/not-applicable.ts `KNOWN_FAILURES`, which must still fail (a fix shows up as a
 * stale entry to remove). A spec that cannot apply is listed there with its reason.
 *
 * e2e.test is built by test/tools/build.sh (once, cached; `.ci/run` builds it before the tests);
 * missing, it is built here, and what is still missing fails the test with how to get it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { counts, runUpstream, verdict } from '../upstream/run.js';

test('upstream e2e.test: sig-api-machinery Conformance specs', { timeout: 40 * 60_000 }, async () => {
  const run = await runUpstream({ log: () => undefined });
  const c = counts(run.specs);
  const problems = verdict(run.specs);
  // The report stays for a failed run (the message names it), and goes with a passed one.
  assert.deepEqual(problems, [], `${c.passed} passed of ${c.passed + c.failedApplicable} applicable (${c.notApplicable} not applicable); e2e.test output in ${run.reportDir}`);
  assert.ok(c.total >= 90, `only ${c.total} specs ran`);
  rmSync(dirname(run.reportDir), { recursive: true, force: true });
});
