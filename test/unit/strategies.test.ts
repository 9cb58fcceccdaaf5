/**
 * What each door of an update resets, kind by kind (kube's PrepareForUpdate of the main strategy
 * and of each subresource strategy: k8s.io/kubernetes pkg/registry/<group>/<kind>/strategy.go,
 * apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go and
 * customresource/status_strategy.go). A stored object and a request that changes everything go
 * through the store's `resetFor` + `applyReset`; the row says what comes out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { applyReset, resetFor } from '../../src/registry/store.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { ResourceDescriptor } from '../../src/apis/types.js';

const STORED_META = { name: 'x', uid: 'u', labels: { a: 'old' }, annotations: { n: 'old' }, finalizers: ['f/old'], ownerReferences: [{ name: 'o' }], managedFields: [{ manager: 'old' }] };
const REQUEST_META = { name: 'x', uid: 'u', labels: { a: 'new' }, annotations: { n: 'new' }, finalizers: ['f/new'], ownerReferences: [{ name: 'p' }], managedFields: [{ manager: 'new' }] };
const stored = (): KubeObject => ({ apiVersion: 'v', kind: 'K', metadata: structuredClone(STORED_META), spec: { s: 'old' }, status: { t: 'old', conditions: ['old'] } });
const request = (): KubeObject => ({ apiVersion: 'v', kind: 'K', metadata: structuredClone(REQUEST_META), spec: { s: 'new' }, status: { t: 'new', conditions: ['new'] } });

type Outcome = { spec: 'old' | 'new'; status: 'old' | 'new' | 'conditions only'; metadata: 'old' | 'new' | 'resetForStatus' };
type Row = { group: string; kind: string; door: string; out: Outcome; source: string };

const ROWS: Row[] = [
  { group: '', kind: 'Namespace', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'namespaceStrategy (spec.finalizers kept by prepareForUpdate)' },
  { group: '', kind: 'Namespace', door: 'status', out: { spec: 'old', status: 'new', metadata: 'new' }, source: 'namespaceStatusStrategy: Spec = old.Spec' },
  { group: '', kind: 'Namespace', door: 'finalize', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'namespaceFinalizeStrategy: Status = old.Status' },
  { group: '', kind: 'ResourceQuota', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'resourcequotaStrategy' },
  { group: '', kind: 'ResourceQuota', door: 'status', out: { spec: 'old', status: 'new', metadata: 'new' }, source: 'resourcequotaStatusStrategy' },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingAdmissionPolicy', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'validatingAdmissionPolicyStrategy' },
  { group: 'admissionregistration.k8s.io', kind: 'ValidatingAdmissionPolicy', door: 'status', out: { spec: 'old', status: 'new', metadata: 'resetForStatus' }, source: 'validatingAdmissionPolicyStatusStrategy: ResetObjectMetaForStatus' },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'CRD strategy' },
  { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', door: 'status', out: { spec: 'old', status: 'new', metadata: 'new' }, source: 'CRD statusStrategy (its metadata reset is a no-op)' },
  { group: 'certificates.k8s.io', kind: 'CertificateSigningRequest', door: '', out: { spec: 'old', status: 'old', metadata: 'new' }, source: 'csrStrategy' },
  { group: 'certificates.k8s.io', kind: 'CertificateSigningRequest', door: 'status', out: { spec: 'old', status: 'new', metadata: 'new' }, source: 'csrStatusStrategy' },
  { group: 'certificates.k8s.io', kind: 'CertificateSigningRequest', door: 'approval', out: { spec: 'old', status: 'conditions only', metadata: 'new' }, source: 'csrApprovalStrategy' },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'FlowSchema', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'flowSchemaStrategy' },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'FlowSchema', door: 'status', out: { spec: 'old', status: 'new', metadata: 'old' }, source: 'flowSchemaStatusStrategy: ObjectMeta = old but managedFields' },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'PriorityLevelConfiguration', door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'priorityLevelConfigurationStrategy' },
  { group: 'flowcontrol.apiserver.k8s.io', kind: 'PriorityLevelConfiguration', door: 'status', out: { spec: 'old', status: 'new', metadata: 'old' }, source: 'priorityLevelConfigurationStatusStrategy' },
];

/** A custom resource with `/status` (no declared resets: the store's rules). */
const CUSTOM: ResourceDescriptor = { group: 'example.com', version: 'v1', kind: 'Foo', listKind: 'FooList', plural: 'foos', singular: 'foo', namespaced: true, verbs: [], hasStatus: true };
const CUSTOM_ROWS: Array<{ door: string; out: Outcome; source: string }> = [
  { door: '', out: { spec: 'new', status: 'old', metadata: 'new' }, source: 'customResourceStrategy: status kept' },
  { door: 'status', out: { spec: 'old', status: 'new', metadata: 'old' }, source: 'customresource statusStrategy: everything but status as stored' },
];

function expected(out: Outcome): KubeObject {
  const o = stored();
  const r = request();
  const meta = out.metadata === 'new' ? r.metadata : out.metadata === 'old' ? o.metadata
    : { ...r.metadata, labels: o.metadata.labels, annotations: o.metadata.annotations, finalizers: o.metadata.finalizers, ownerReferences: o.metadata.ownerReferences };
  const status = out.status === 'new' ? r.status : out.status === 'old' ? o.status : { ...(o.status as object), conditions: ['new'] };
  return { apiVersion: 'v', kind: 'K', metadata: meta, spec: out.spec === 'new' ? r.spec : o.spec, status };
}

function run(desc: Pick<ResourceDescriptor, 'hasStatus' | 'strategy'>, door: string): KubeObject {
  const old = stored();
  const { reset, main } = resetFor(desc, door);
  const out = reset ? applyReset(reset, request(), old) : request();
  if (main) desc.strategy?.prepareForUpdate?.(out, old);
  assert.deepEqual(old, stored(), 'the stored object is not changed');
  return out;
}

for (const row of ROWS) {
  test(`update resets: ${row.kind}${row.door ? `/${row.door}` : ''} — ${row.source}`, () => {
    const desc = BUILTIN_RESOURCES.find((d) => d.group === row.group && d.kind === row.kind)!;
    const got = run(desc, row.door);
    const want = expected(row.out);
    if (row.kind === 'Namespace' && row.door === '') {
      // prepareForUpdate: spec.finalizers as stored (none), the name label.
      assert.deepEqual(got.spec, { s: 'new', finalizers: undefined });
      assert.equal(got.metadata.labels?.['kubernetes.io/metadata.name'], 'x');
      return;
    }
    if (row.kind === 'CustomResourceDefinition' && row.door === '') {
      assert.deepEqual({ ...got, status: undefined }, { ...want, status: undefined });
      return;
    }
    assert.deepEqual(got, want);
  });
}

for (const row of CUSTOM_ROWS) {
  test(`update resets: custom resource${row.door ? `/${row.door}` : ''} — ${row.source}`, () => {
    assert.deepEqual(run(CUSTOM, row.door), expected(row.out));
  });
}

test('every built-in kind with a status subresource has its rows', () => {
  for (const d of BUILTIN_RESOURCES) {
    const doors = [...(d.hasStatus ? ['status'] : []), ...(d.extraSubresources ?? []).filter((s) => s.verbs.includes('update')).map((s) => s.name)];
    for (const door of doors) assert.ok(ROWS.some((r) => r.group === d.group && r.kind === d.kind && r.door === door), `${d.kind}/${door}`);
    if (doors.length) assert.ok(ROWS.some((r) => r.group === d.group && r.kind === d.kind && r.door === ''), `${d.kind} main`);
  }
});
