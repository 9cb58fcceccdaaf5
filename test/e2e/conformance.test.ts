/**
 * The conformance suite (test/conformance): Kubernetes API-machinery expectations that apply
 * without pods, one node:test per case against a real server on a real Redis. A case marked
 * `knownGap` must still fail (so a fix, or a change, is noticed and the docs updated).
 * docs/conformance.md reports the results.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestServer, type TestServer } from '../helpers.js';
import { CASES } from '../conformance/cases.js';
import { CONFORMANCE_SERVER_OPTIONS, closeTarget, runCase } from '../conformance/run.js';

let srv: TestServer;

useTestServer((s) => { srv = s; }, CONFORMANCE_SERVER_OPTIONS);

describe('conformance', () => {
  for (const c of CASES) {
    test(`${c.id} (${c.source.file}: ${c.source.it})`, async () => {
      const r = await runCase(srv, c);
      if (c.knownGap) assert.ok(!r.passed, `known gap "${c.knownGap}" now passes: remove knownGap and update docs/conformance.md`);
      else assert.ok(r.passed, r.error);
    });
  }
  after(() => closeTarget(srv));
});
