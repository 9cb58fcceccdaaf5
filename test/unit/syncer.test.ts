/**
 * The syncer's pure parts: the syncer view's read and write transformations (kcp v0.11
 * pkg/virtual/syncer/transformations transformer.go), the downstream copy (contrib-tmc
 * spec_process.go), the bounded fair queue, and `workload sync`'s options and manifest
 * (contrib-tmc pkg/cliplugins/workload/plugin sync.go).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import { fromSyncerView, toSyncerView } from '../../src/syncer/virtualworkspace.js';
import { isSyncable, toDownstream } from '../../src/syncer/transform.js';
import { FairQueue, TokenBucket } from '../../src/syncer/queue.js';
import { namespaceLocator } from '../../src/syncer/names.js';
import { goDuration, groupMappings, renderSyncerManifest, syncOptions } from '../../src/cli/kcp/workload.js';
import { parseFlags, CONNECTION_FLAGS } from '../../src/cli/kcp/args.js';
import { SYNC_FLAGS } from '../../src/cli/kcp/workload.js';

const K = 'key1';
const GR = { group: 'apps', resource: 'deployments' };
const obj = (meta: Partial<KubeObject['metadata']>, rest: Record<string, unknown> = {}): KubeObject =>
  ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'ns', resourceVersion: '5', ...meta }, ...rest }) as KubeObject;

test('the syncer view: own finalizer only, deletion from the annotation unless soft finalizers, status as reported', () => {
  const up = obj({
    labels: { [`state.workload.kcp.io/${K}`]: 'Sync' }, finalizers: ['a', `workload.kcp.io/syncer-${K}`, 'workload.kcp.io/syncer-other'],
    annotations: { [`diff.syncer.internal.kcp.io/${K}`]: '{"status":{"ready":1}}', 'diff.syncer.internal.kcp.io/other': '{}', [`deletion.internal.workload.kcp.io/${K}`]: '2026-01-01T00:00:00Z' },
  }, { status: { upstream: true } });
  const v = toSyncerView(structuredClone(up), K);
  assert.deepEqual(v.metadata.finalizers, [`workload.kcp.io/syncer-${K}`]);
  assert.equal(v.metadata.deletionTimestamp, '2026-01-01T00:00:00Z');
  assert.deepEqual((v as { status?: unknown }).status, { ready: 1 });
  assert.deepEqual(Object.keys(v.metadata.annotations!).filter((a) => a.startsWith('diff.')), []);
  const soft = structuredClone(up);
  soft.metadata.annotations![`finalizers.workload.kcp.io/${K}`] = 'coordinator';
  assert.equal(toSyncerView(soft, K).metadata.deletionTimestamp, undefined);
  // No status reported yet: none shown; promoted: the object's own.
  assert.equal((toSyncerView(obj({}), K) as { status?: unknown }).status, undefined);
  const promoted = obj({ annotations: { [`diff.syncer.internal.kcp.io/${K}`]: '{"status":"##promoted##"}' } }, { status: { own: 1 } });
  assert.deepEqual((toSyncerView(promoted, K) as { status?: unknown }).status, { own: 1 });
});

test('writes through the view: finalizer and status only; removal drops label, finalizer and annotations; refusals are 409', () => {
  const labels = { [`state.workload.kcp.io/${K}`]: 'Sync' };
  const cur = obj({ labels, finalizers: ['a'] }, { spec: { replicas: 1 } });
  const fin = `workload.kcp.io/syncer-${K}`;
  const next = fromSyncerView(cur, obj({ finalizers: [fin] }, { spec: { replicas: 9 } }), K, '', GR);
  assert.deepEqual(next.metadata.finalizers, ['a', fin]);
  assert.deepEqual((next as { spec?: unknown }).spec, { replicas: 1 });
  const withStatus = fromSyncerView(next, obj({ finalizers: [fin] }, { status: { ready: 2 } }), K, 'status', GR);
  assert.deepEqual((withStatus as { status?: unknown }).status, { ready: 2 });
  assert.equal(withStatus.metadata.annotations![`diff.syncer.internal.kcp.io/${K}`], '{"status":"##promoted##"}');
  // Two SyncTargets: each keeps its own status, the first owner's is unpromoted.
  const two = structuredClone(withStatus);
  two.metadata.labels!['state.workload.kcp.io/k2'] = 'Sync';
  const other = fromSyncerView(two, obj({ finalizers: ['workload.kcp.io/syncer-k2'] }, { status: { ready: 7 } }), 'k2', 'status', GR);
  assert.deepEqual((other as { status?: unknown }).status, { ready: 2 });
  assert.equal(other.metadata.annotations!['diff.syncer.internal.kcp.io/k2'], '{"status":{"ready":7}}');
  assert.equal(other.metadata.annotations![`diff.syncer.internal.kcp.io/${K}`], '{"status":{"ready":2}}');
  const removing = obj({ labels, finalizers: ['a', fin], annotations: { [`deletion.internal.workload.kcp.io/${K}`]: 't', [`diff.syncer.internal.kcp.io/${K}`]: '{}' } });
  const removed = fromSyncerView(removing, obj({ deletionTimestamp: 't' }), K, '', GR);
  assert.deepEqual(removed.metadata.finalizers, ['a']);
  assert.equal(removed.metadata.labels![`state.workload.kcp.io/${K}`], undefined);
  assert.deepEqual(removed.metadata.annotations, {});
  assert.throws(() => fromSyncerView(obj({}), obj({ finalizers: [fin] }), K, '', GR), (e: { code?: number; message: string }) => e.code === 409 && /not assigned/.test(e.message));
  assert.throws(() => fromSyncerView(cur, obj({}), K, '', GR), (e: { code?: number; message: string }) => e.code === 409 && /not owning it/.test(e.message));
});

test('the downstream copy: cluster-specific fields, state label and status dropped; labelled with the key', () => {
  const loc = namespaceLocator('c1', 'c0', 'uid', 'west', 'ns');
  const view = obj({
    uid: 'u', generation: 3, creationTimestamp: 't', managedFields: [], ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'y' }] as never, finalizers: ['f'],
    labels: { app: 'web', [`state.workload.kcp.io/${K}`]: 'Sync' }, annotations: { 'kcp.io/cluster': 'c1', keep: 'me' },
  }, { spec: { replicas: 2 }, status: { x: 1 } });
  const d = toDownstream(view, GR, K, 'kcp-abc', loc) as KubeObject & { status?: unknown; spec?: unknown };
  assert.deepEqual(d.metadata, { name: 'web', namespace: 'kcp-abc', labels: { app: 'web', 'internal.workload.kcp.io/cluster': K }, annotations: { keep: 'me' } });
  assert.equal(d.status, undefined);
  assert.deepEqual(d.spec, { replicas: 2 });
  assert.equal(toDownstream(obj({ name: 'kube-root-ca.crt' }), { group: '', resource: 'configmaps' }, K, 'kcp-abc', loc).metadata.name, 'kcp-root-ca.crt');
  const clusterScoped = toDownstream(obj({ namespace: undefined }), { group: '', resource: 'persistentvolumes' }, K, '', loc);
  assert.ok(clusterScoped.metadata.annotations!['kcp.io/namespace-locator']);
  assert.equal(isSyncable({ group: '', resource: 'secrets' }, { type: 'kubernetes.io/service-account-token', metadata: {} } as unknown as KubeObject), false);
  assert.equal(isSyncable({ group: '', resource: 'secrets' }, { type: 'Opaque', metadata: {} } as unknown as KubeObject), true);
});

test('the fair queue: one waiting copy per key, round-robin, bounded per queue with a refill when drained', async () => {
  const drained: string[] = [];
  const q = new FairQueue(2, (name) => drained.push(name));
  assert.ok(q.add('busy', 'a')); assert.ok(q.add('busy', 'a')); assert.ok(q.add('busy', 'b'));
  assert.equal(q.add('busy', 'c'), false, 'over the bound');
  q.add('quiet', 'x');
  const order: string[] = [];
  for (let i = 0; i < 3; i++) { const it = (await q.next())!; order.push(`${it.queue}/${it.key}`); q.done(it); }
  assert.deepEqual(order, ['busy/a', 'quiet/x', 'busy/b']);
  assert.deepEqual(drained, ['busy']);
  // Added while processed: handed out again once, after.
  q.add('q', 'k');
  const it = (await q.next())!;
  q.add('q', 'k'); q.add('q', 'k');
  assert.equal(q.length, 0);
  q.done(it);
  assert.equal(q.length, 1);
  q.close();
});

test('the token bucket holds requests past the burst to the rate', async () => {
  const b = new TokenBucket(50, 2);
  const t0 = Date.now();
  for (let i = 0; i < 5; i++) await b.take();
  assert.ok(Date.now() - t0 >= 50, `3 tokens past the burst at 50/s take ≥ 60 ms (took ${Date.now() - t0})`);
});

test('workload sync: kcp\'s validation, group mappings, durations and manifest', () => {
  const flags = (argv: string[]) => parseFlags(argv, [...CONNECTION_FLAGS, ...SYNC_FLAGS]);
  assert.throws(() => syncOptions(flags(['-o', 'x.yaml']), ['west']), /--syncer-image is required/);
  assert.throws(() => syncOptions(flags(['--syncer-image', 'i', '-o', 'x', '--replicas', '2']), ['west']), /only 0 and 1 are valid values for --replicas/);
  assert.throws(() => syncOptions(flags(['--syncer-image', 'i', '-o', 'x']), []), /a sync target name is required/);
  assert.throws(() => syncOptions(flags(['--syncer-image', 'i', '-o', 'x', '--apiexports', 'root:kubernetes']), ['w']), /reserved APIExport name/);
  const o = syncOptions(flags(['--syncer-image', 'img', '-o', 'out.yaml', '--resources', 'deployments.apps,services', '--labels', 'region=eu']), ['west']);
  assert.deepEqual([o.replicas, o.kcpNamespace, o.qps, o.burst, o.resources, o.labels], [1, 'default', 20, 30, ['deployments.apps', 'services'], { region: 'eu' }]);
  assert.deepEqual(groupMappings(['secrets', 'deployments.apps', 'configmaps', 'pods']), [
    { group: '', resources: ['secrets', 'configmaps', 'pods', 'pods/log', 'pods/exec', 'pods/attach', 'pods/binding', 'pods/portforward', 'pods/proxy', 'pods/ephemeralcontainers'] },
    { group: 'apps', resources: ['deployments'] },
  ]);
  assert.deepEqual([goDuration(60_000), goDuration(30_000), goDuration(500), goDuration(3_723_000)], ['1m0s', '30s', '500ms', '1h2m3s']);
  const yaml = renderSyncerManifest({
    serverURL: 'https://kcp:6443', caPem: 'CA', token: 'tok', kcpNamespace: 'default', namespace: 'kcp-syncer-west-abcdefgh', syncerID: 'kcp-syncer-west-abcdefgh',
    syncTargetPath: 'root:org', syncTargetName: 'west', syncTargetUID: 'u1', image: 'img:1', replicas: 1, resourcesToSync: ['deployments.apps'],
    resourcesForPermission: ['configmaps', 'deployments.apps', 'secrets'], qps: 20, burst: 30, featureGates: '', apiImportPollInterval: '1m0s', downstreamNamespaceCleanDelay: '30s',
  });
  const docs = parseAllDocuments(yaml).map((d) => d.toJS()).filter(Boolean) as any[];
  const role = docs.find((d) => d.kind === 'ClusterRole');
  assert.deepEqual(role.rules.at(-1), { apiGroups: ['apps'], resources: ['deployments'], verbs: ['*'] });
  assert.equal(docs.find((d) => d.kind === 'Role').metadata.name, 'kcp-dns-west-abcdefgh');
  const kubeconfig = parseAllDocuments(docs.find((d) => d.kind === 'Secret' && d.stringData).stringData.kubeconfig)[0]!.toJS();
  assert.equal(kubeconfig.users[0].user.token, 'tok');
  assert.equal(Buffer.from(kubeconfig.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), 'CA');
  const dep = docs.find((d) => d.kind === 'Deployment');
  assert.deepEqual(dep.spec.template.spec.containers[0].args, ['syncer', '--from-kubeconfig=/kcp/kubeconfig', '--sync-target-name=west', '--sync-target-uid=u1', '--from-cluster=root:org',
    '--api-import-poll-interval=1m0s', '--downstream-namespace-clean-delay=30s', '--resources=deployments.apps', '--qps=20', '--burst=30', '--dns-image=img:1']);
});
