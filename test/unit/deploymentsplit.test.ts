/**
 * Deployment splitting's pure parts: the replica split and its spec-diff annotations, the summed
 * status (contrib-tmc pkg/reconciler/coordination/deployment deployment_controller.go and its
 * test's cases), the syncer view and write path they go through (src/syncer/virtualworkspace.ts),
 * and the syncer's application of the spec diff downstream (contrib-tmc spec_process.go).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import {
  activeSyncTargets, coordinateDeployment, coordinationDigest, splitReplicas, summarizeDeploymentStatus,
} from '../../src/workload/deployment.js';
import { applySpecDiff, toDownstream } from '../../src/syncer/transform.js';
import { fromSyncerView } from '../../src/syncer/virtualworkspace.js';
import { namespaceLocator } from '../../src/syncer/names.js';
import type { CacheEntry } from '../../src/storage/watchcache.js';

const GR = { group: 'apps', resource: 'deployments' };
const dep = (replicas: number | undefined, labels: Record<string, string>, annotations: Record<string, string> = {}, status?: unknown): KubeObject & { spec: Record<string, unknown> } =>
  ({
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'web', namespace: 'ns', resourceVersion: '5', labels, annotations },
    spec: { ...(replicas === undefined ? {} : { replicas }), selector: { matchLabels: { app: 'web' } } },
    ...(status === undefined ? {} : { status }),
  }) as KubeObject & { spec: Record<string, unknown> };
const sync = (...keys: string[]) => Object.fromEntries(keys.map((k) => [`state.workload.kcp.io/${k}`, 'Sync']));
const diff = (n: number, op = 'replace') => JSON.stringify([{ op, path: '/replicas', value: n }]);

test('replicas are divided evenly, the remainder to the first key in byte order', () => {
  assert.deepEqual([...splitReplicas(5, ['b', 'a'])], [['a', 3], ['b', 2]]);
  assert.deepEqual([...splitReplicas(7, ['syncTarget2', 'syncTarget1'])], [['syncTarget1', 4], ['syncTarget2', 3]]); // kcp's test case
  assert.deepEqual([...splitReplicas(6, ['Z', 'a', 'B'])], [['B', 2], ['Z', 2], ['a', 2]]); // upper case sorts first, as Go's
  assert.deepEqual([...splitReplicas(1, ['b', 'a'])], [['a', 1], ['b', 0]]);
  assert.deepEqual([...splitReplicas(0, ['a'])], [['a', 0]]);
  assert.equal(splitReplicas(5, []).size, 0);
});

test('the split goes to Sync SyncTargets not being removed; stale spec diffs go', () => {
  const d = dep(5, { ...sync('b', 'a', 'gone'), 'state.workload.kcp.io/up': 'Upsync', app: 'web' }, {
    'deletion.internal.workload.kcp.io/gone': '2026-01-01T00:00:00Z',
    'experimental.spec-diff.workload.kcp.io/old': diff(9),
    'experimental.spec-diff.workload.kcp.io/gone': diff(9),
    keep: 'me',
  });
  assert.deepEqual(activeSyncTargets(d), ['a', 'b']);
  const next = coordinateDeployment(d);
  assert.deepEqual(next.metadata.annotations, {
    'deletion.internal.workload.kcp.io/gone': '2026-01-01T00:00:00Z', keep: 'me',
    'experimental.spec-diff.workload.kcp.io/a': diff(3), 'experimental.spec-diff.workload.kcp.io/b': diff(2),
  });
  assert.equal(d.metadata.annotations!['experimental.spec-diff.workload.kcp.io/old'], diff(9), 'the input is not changed');
  assert.equal(next.status, undefined, 'no per-SyncTarget status: status untouched');
  // One SyncTarget gets everything; none removes every spec diff.
  assert.deepEqual(coordinateDeployment(dep(4, sync('a'))).metadata.annotations, { 'experimental.spec-diff.workload.kcp.io/a': diff(4) });
  assert.equal(coordinateDeployment(dep(4, {}, { 'experimental.spec-diff.workload.kcp.io/a': diff(4) })).metadata.annotations, undefined);
  // No replicas: kube's default 1, with `add` (a replace of a missing member fails); nonsense: no split.
  assert.deepEqual(coordinateDeployment(dep(undefined, sync('a', 'b'))).metadata.annotations, {
    'experimental.spec-diff.workload.kcp.io/a': diff(1, 'add'), 'experimental.spec-diff.workload.kcp.io/b': diff(0, 'add'),
  });
  const bad = dep(5, sync('a', 'b'), { 'experimental.spec-diff.workload.kcp.io/a': diff(3) });
  bad.spec.replicas = '5';
  assert.equal(coordinateDeployment(bad).metadata.annotations, undefined);
});

test('per-SyncTarget statuses are summed; conditions consolidated as kcp (True over False over Unknown)', () => {
  const a = {
    replicas: 3, updatedReplicas: 3, readyReplicas: 1, availableReplicas: 1, unavailableReplicas: 2, observedGeneration: 7,
    conditions: [
      { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable' },
      { type: 'ReplicaFailure', status: 'Unknown' },
    ],
  };
  const b = {
    replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2,
    conditions: [
      { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
      { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' },
      { type: 'ReplicaFailure', status: 'False', reason: 'FailedCreate' },
    ],
  };
  assert.deepEqual(summarizeDeploymentStatus([a, b, {}, null, 'x']), {
    replicas: 5, updatedReplicas: 5, readyReplicas: 3, availableReplicas: 3, unavailableReplicas: 2,
    conditions: [
      { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
      { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      { type: 'ReplicaFailure', status: 'False', reason: 'FailedCreate' },
    ],
  });
  // Zero counts are omitted (Go's omitempty); nonsense counts count as 0; sums stay in int32.
  assert.deepEqual(summarizeDeploymentStatus([{ replicas: 2, readyReplicas: 0 }, { replicas: -4, readyReplicas: 1.5 }]), { replicas: 2 });
  assert.deepEqual(summarizeDeploymentStatus([{ replicas: 2_000_000_000 }, { replicas: 2_000_000_000 }]), { replicas: 2_147_483_647 });

  // From the syncer-view annotations of the virtual workspace, in key order.
  const d = dep(5, sync('a', 'b'), {
    'diff.syncer.internal.kcp.io/a': JSON.stringify({ status: a }), 'diff.syncer.internal.kcp.io/b': JSON.stringify({ status: b }),
  }, { replicas: 99 });
  const next = coordinateDeployment(d) as KubeObject & { status: Record<string, unknown> };
  assert.equal(next.status.replicas, 5);
  assert.equal(next.status.readyReplicas, 3);
  assert.equal(next.status.observedGeneration, undefined, 'kcp writes no observedGeneration');
  // A SyncTarget being removed (failed over) counts no more; its promoted marker neither.
  const failover = dep(2, sync('a', 'b'), {
    'deletion.internal.workload.kcp.io/a': '2026-01-01T00:00:00Z',
    'diff.syncer.internal.kcp.io/a': JSON.stringify({ status: { replicas: 2 } }), 'diff.syncer.internal.kcp.io/b': JSON.stringify({ status: { replicas: 2, readyReplicas: 1 } }),
  }, { replicas: 2 });
  assert.deepEqual((coordinateDeployment(failover) as { status?: unknown }).status, { replicas: 2, readyReplicas: 1 });
  failover.metadata.annotations!['diff.syncer.internal.kcp.io/a'] = '{"status":"##promoted##"}';
  assert.deepEqual((coordinateDeployment(failover) as { status?: unknown }).status, { replicas: 2, readyReplicas: 1 });
  // One status that is the object's own (promoted): left alone.
  const promoted = dep(5, sync('a', 'b'), { 'diff.syncer.internal.kcp.io/a': '{"status":"##promoted##"}' }, { replicas: 5 });
  assert.deepEqual((coordinateDeployment(promoted) as { status?: unknown }).status, { replicas: 5 });
});

test('the virtual workspace keeps each SyncTarget status apart once two sync the object; the controller sums them', () => {
  const finalizers = ['workload.kcp.io/syncer-a', 'workload.kcp.io/syncer-b'];
  let up = dep(5, sync('a', 'b'), {}) as KubeObject;
  up.metadata.finalizers = finalizers;
  for (const [k, replicas] of [['a', 3], ['b', 2]] as const) {
    const view = structuredClone(up) as KubeObject & { status?: unknown };
    view.metadata.finalizers = [`workload.kcp.io/syncer-${k}`];
    view.status = { replicas, updatedReplicas: replicas, unavailableReplicas: replicas };
    up = fromSyncerView(up, view, k, 'status', GR);
  }
  assert.equal((up as { status?: unknown }).status, undefined, 'neither is promoted');
  assert.ok(up.metadata.annotations!['diff.syncer.internal.kcp.io/a']);
  assert.ok(up.metadata.annotations!['diff.syncer.internal.kcp.io/b']);
  assert.deepEqual((coordinateDeployment(up) as { status?: unknown }).status, { replicas: 5, updatedReplicas: 5, unavailableReplicas: 5 });
});

test('the syncer applies its own spec diff to the downstream copy', () => {
  const loc = namespaceLocator('c1', 'c0', 'uid', 'st', 'ns');
  const d = dep(5, sync('a', 'b'), { 'experimental.spec-diff.workload.kcp.io/a': diff(3), 'experimental.spec-diff.workload.kcp.io/b': diff(2) });
  assert.equal((toDownstream(d, GR, 'a', 'kcp-x', loc) as { spec: { replicas: number } }).spec.replicas, 3);
  assert.equal((toDownstream(d, GR, 'b', 'kcp-x', loc) as { spec: { replicas: number } }).spec.replicas, 2);
  assert.equal((toDownstream(d, GR, 'c', 'kcp-x', loc) as { spec: { replicas: number } }).spec.replicas, 5, 'no diff: the spec as it is');
  assert.equal(d.spec.replicas, 5, 'the view is not changed');
  assert.deepEqual(applySpecDiff({ selector: {} }, diff(1, 'add')), { selector: {}, replicas: 1 });
  // A diff that does not apply, is not JSON Patch, or copies, fails the object's sync (retried).
  assert.throws(() => applySpecDiff({}, diff(1)), /spec diff operation 0 failed/);
  assert.throws(() => applySpecDiff({ replicas: 1 }, '{"op":"replace"}'), /not a JSON Patch array/);
  assert.throws(() => applySpecDiff({ replicas: 1 }, 'nope'), /invalid spec diff/);
  assert.throws(() => applySpecDiff({ a: { b: 1 } }, '[{"op":"copy","from":"/a","path":"/c"}]'), /"copy" not allowed/);
  const broken = dep(5, sync('a'), { 'experimental.spec-diff.workload.kcp.io/a': '[{"op":"test","path":"/replicas","value":4}]' });
  assert.throws(() => toDownstream(broken, GR, 'a', 'kcp-x', loc), /failed/);
});

test('the coordination digest changes with what the controller reads, not with the rest', () => {
  const entry = (o: KubeObject) => ({ json: JSON.stringify(o) }) as CacheEntry;
  const base = dep(5, sync('a', 'b'));
  const d0 = coordinationDigest(entry(base));
  assert.notEqual(d0, '');
  assert.equal(coordinationDigest(entry({ ...base, status: { replicas: 5 } } as KubeObject)), d0);
  assert.notEqual(coordinationDigest(entry(dep(6, sync('a', 'b')))), d0);
  assert.notEqual(coordinationDigest(entry(dep(5, sync('a')))), d0);
  assert.notEqual(coordinationDigest(entry(dep(5, sync('a', 'b'), { 'diff.syncer.internal.kcp.io/a': '{}' }))), d0);
  assert.equal(coordinationDigest(entry(dep(5, { app: 'web' }))), '');
});
