/**
 * The upstream suite's report handling (test/upstream): reading Ginkgo's JUnit report as the e2e
 * framework writes it, telling selected specs from those the focus left out, and the verdict
 * (applicable failures need a recorded cause; a recorded cause whose spec passes is stale).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJUnit, selected, xmlUnescape } from '../upstream/junit.js';
import { classify, counts, e2eArgs, regexEscape, verdict } from '../upstream/run.js';
import { CRASHES_THE_SUITE, KNOWN_FAILURES, NOT_APPLICABLE } from '../upstream/not-applicable.js';

const AM = '[sig-api-machinery]';
const report = (cases: string) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="1" time="12.5">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="4" disabled="0" skipped="1" errors="0" failures="1" time="12.5">
${cases}
  </testsuite>
</testsuites>`;

test('parseJUnit: specs, suite nodes, states, the failure summary, entities', () => {
  const specs = parseJUnit(report(`
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.07"></testcase>
    <testcase name="[It] ${AM} Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]" classname="Kubernetes e2e suite" status="passed" time="20.19"></testcase>
    <testcase name="[It] ${AM} Namespaces [Serial] should apply changes to a namespace status [Conformance]" classname="Kubernetes e2e suite" status="failed" time="1.5">
      <failure type="failed">[FAILED] patched object should have the applied annotation&#xA;Expected &lt;map[string]string | len:0&gt;: nil&#xA;In [It] at: k8s.io/kubernetes@v1.34.4/test/e2e/apimachinery/namespace.go:351 @ 11/27/26 13:24:20.079&#xA;</failure>
      <system-err>timeline…</system-err>
    </testcase>
    <testcase name="[It] [sig-windows] Services should be able to create a functioning NodePort service for Windows" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] ${AM} Something skipped while running [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0.1">
      <skipped message="skipped - Only supported for providers [gce]"></skipped>
    </testcase>`));
  assert.deepEqual(specs.map((s) => [s.kind, s.state]), [['spec', 'passed'], ['spec', 'failed'], ['spec', 'skipped'], ['spec', 'skipped']]);
  assert.equal(specs[0]!.name, `${AM} Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]`);
  assert.equal(specs[0]!.seconds, 20.19);
  assert.equal(specs[1]!.reason, '[FAILED] patched object should have the applied annotation Expected <map[string]string | len:0>: nil');
  // Left out by --ginkgo.focus: not selected; skipped at run time (e2eskipper): selected.
  assert.deepEqual(specs.map(selected), [true, true, false, true]);
  assert.equal(xmlUnescape('a &amp;&lt;&gt;&quot;&apos; &#x41;&#66;'), 'a &<>"\' AB');
});

test('parseJUnit: a failed suite node is reported; not a report is an error', () => {
  const [node] = parseJUnit(report(`<testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="failed" time="1"><failure type="failed">[FAILED] Failed to get kubernetes service ClusterIP: the server could not find the requested resource&#xA;In [SynchronizedBeforeSuite] at: e2e.go:372</failure></testcase>`));
  assert.deepEqual([node!.kind, node!.state, node!.reason], ['suite', 'failed', '[FAILED] Failed to get kubernetes service ClusterIP: the server could not find the requested resource']);
  assert.throws(() => parseJUnit('<html></html>'), /not a JUnit report/);
});

test('classify and verdict: not applicable, recorded causes, stale causes, unrecorded failures', () => {
  const known = KNOWN_FAILURES[0];
  const na = NOT_APPLICABLE.find((n) => !CRASHES_THE_SUITE.includes(n.spec))!;
  const base = { kind: 'spec' as const, seconds: 1, reason: '' };
  const other = `${AM} server version should find the server version [Conformance]`;
  const specs = classify([
    { ...base, name: na.spec, state: 'failed', reason: '[FAILED] the server could not find the requested resource' },
    { ...base, name: other, state: 'failed', reason: '[FAILED] boom' },
    ...(known ? [{ ...base, name: known.spec, state: 'passed' as const }] : []),
  ]);
  // The crashers are added back as skipped, not applicable.
  for (const name of CRASHES_THE_SUITE) assert.ok(specs.find((s) => s.name === name)?.notApplicable, name);
  assert.equal(specs.find((s) => s.name === na.spec)!.notApplicable, na);
  const problems = verdict(specs, false);
  assert.ok(problems.some((p) => p.startsWith(`applicable spec failed: ${other}`)), problems.join('\n'));
  if (known) assert.ok(problems.some((p) => p.includes('passes now') && p.includes(known.spec)), problems.join('\n'));
  assert.ok(!problems.some((p) => p.includes(na.spec)), 'a failing not-applicable spec is no problem');
  // A complete run must have seen every spec the tables name.
  assert.ok(verdict(specs, true).some((p) => p.startsWith('NOT_APPLICABLE names a spec the run did not select')));
  const c = counts(specs);
  assert.equal(c.notApplicable, 1 + CRASHES_THE_SUITE.length);
  assert.equal(c.passed + c.failedApplicable, known ? 2 : 1);
});

test('the tables: unique spec names, every not-applicable entry says what it needs and why; crashers are skipped by name', () => {
  const names = [...NOT_APPLICABLE.map((n) => n.spec), ...KNOWN_FAILURES.map((k) => k.spec)];
  assert.equal(new Set(names).size, names.length, 'a spec is listed twice');
  for (const n of NOT_APPLICABLE) {
    assert.ok(n.spec.startsWith(AM) && n.spec.endsWith('[Conformance]'), n.spec);
    assert.ok(n.needs.length > 0 && n.reason.length > 20, n.spec);
  }
  assert.equal(CRASHES_THE_SUITE.length, 2);
  const args = e2eArgs({ kubeconfig: '/k', reportDir: '/r', focus: 'x' });
  const skip = args.find((a) => a.startsWith('--ginkgo.skip='))!.slice('--ginkgo.skip='.length);
  // Ginkgo matches the skip against the spec text followed by its labels.
  for (const name of CRASHES_THE_SUITE) assert.match(`${name} [sig-api-machinery, Conformance]`, new RegExp(skip));
  assert.ok(!new RegExp(skip).test(`${AM} Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]`));
  assert.ok(!args.some((a) => /content-type/i.test(a)), 'the suite runs with its default content type');
  assert.equal(regexEscape('[a] (b).*'), '\\[a\\] \\(b\\)\\.\\*');
});
