import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kcpResources } from '../../src/apis/kcp/index.js';

const byPlural = (p: string) => kcpResources().find((d) => d.plural === p)!;

test('kcp resources: groups, kinds, scope and printer columns as kcp serves them', () => {
  const ws = byPlural('workspaces');
  assert.equal(ws.group, 'tenancy.kcp.io');
  assert.equal(ws.version, 'v1alpha1');
  assert.equal(ws.kind, 'Workspace');
  assert.equal(ws.namespaced, false);
  assert.deepEqual(ws.shortNames, ['ws']);
  assert.deepEqual(ws.columns!.map((c) => c.name), ['Type', 'Region', 'Phase', 'URL', 'Age']);
  assert.ok(ws.hasStatus);
  assert.deepEqual(byPlural('logicalclusters').columns!.map((c) => c.name), ['Phase', 'URL', 'Age']);
  assert.deepEqual(byPlural('shards').columns!.map((c) => c.name), ['Region', 'URL', 'External URL', 'Age']);
  assert.equal(byPlural('workspacetypes').kind, 'WorkspaceType');
});

test('LogicalCluster: pruning by kcp schema keeps createdBy.extra, drops unknown fields; defaults', () => {
  const lc = byPlural('logicalclusters');
  const obj = {
    apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster' },
    spec: {
      initializers: ['root:universal'],
      owner: { apiVersion: 'tenancy.kcp.io/v1alpha1', resource: 'workspaces', name: 'w', cluster: 'root', uid: 'u', kind: 'Workspace' },
      createdBy: { username: 'alice', groups: ['g'], extra: { 'scopes.authentication.kcp.io': ['cluster:root'] } },
    },
    status: { URL: 'https://example/clusters/root', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z', severity: 'Info', bogus: 1 }], unknownStatus: {} },
  } as any;
  const pruned = lc.strategy!.normalize!(obj);
  assert.deepEqual([...pruned].sort(), ['spec.owner.kind', 'status.conditions[0].bogus', 'status.unknownStatus']);
  assert.deepEqual(obj.spec.createdBy.extra, { 'scopes.authentication.kcp.io': ['cluster:root'] });
  assert.equal(obj.spec.directlyDeletable, false, 'schema default');
  assert.equal(obj.status.phase, 'Scheduling', 'schema default');
});

test('Workspace: CEL rules of kcp schema (type immutable) and name pattern', () => {
  const ws = byPlural('workspaces');
  const old = { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'a' }, spec: { type: { name: 'team', path: 'root' }, cluster: 'x' } } as any;
  const next = structuredClone(old);
  next.spec.type.name = 'universal';
  const causes = ws.strategy!.validateUpdate!(next, old);
  assert.ok(causes.some((c) => /name is immutable/.test(c.message ?? "")), JSON.stringify(causes));
  const unset = structuredClone(old);
  delete unset.spec.cluster;
  assert.ok(ws.strategy!.validateUpdate!(unset, old).some((c) => /cluster cannot be unset/.test(c.message ?? "")));
});
