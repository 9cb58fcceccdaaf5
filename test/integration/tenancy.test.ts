/**
 * Workspaces and tenancy against a real server on a real Redis: the workspace lifecycle
 * (admission, scheduling, initialization, Ready), path resolution, home workspaces, isolation
 * between workspaces, required groups, and deletion of a subtree with everything in it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CM, call, eventually, sleep, type Res, type TestServer, useTestServer } from '../helpers.js';

let srv: TestServer;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
writeFileSync(tokenFile, 'alice-token,alice,1001,"dev"\nbob-token,bob,1002\ncarol-token,carol,1003,"auditors"\ndave-token,dave@example.com,1004\n');

useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const caOnly = () => ({ ca: srv.creds.ca });
const as = (token: string | undefined, method: string, path: string, body?: unknown): Promise<Res> =>
  token ? call(srv, caOnly(), method, path, body, { authorization: `Bearer ${token}` }) : call(srv, srv.creds, method, path, body);
const workspace = (name: string, type?: { name: string; path?: string }, extra: object = {}) =>
  ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: { ...(type ? { type } : {}), ...extra } });

async function waitReady(parent: string, name: string, token?: string, ms = 5000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await as(token, 'GET', `${WS(parent)}/${name}`);
    if (r.json?.status?.phase === 'Ready') return r.json;
    if (Date.now() > deadline) throw new Error(`workspace ${parent}:${name} not Ready: ${r.body}`);
    await sleep(20);
  }
}

async function gone(path: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if ((await as(undefined, 'GET', path)).status === 404) return;
    if (Date.now() > deadline) throw new Error(`${path} still exists`);
    await sleep(50);
  }
}

describe('bootstrap', () => {
  test('root holds the WorkspaceTypes, the default namespace and a Shard object', async () => {
    const types = await as(undefined, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes');
    assert.deepEqual(types.json.items.map((t: any) => t.metadata.name).sort(), ['home', 'organization', 'root', 'team', 'universal']);
    const universal = types.json.items.find((t: any) => t.metadata.name === 'universal');
    assert.equal(universal.spec.initializer, true);
    assert.deepEqual(universal.spec.defaultChildWorkspaceType, { name: 'universal', path: 'root' }, 'schema default');
    assert.equal((await as(undefined, 'GET', '/clusters/root/api/v1/namespaces/default')).status, 200);
    const shard = await as(undefined, 'GET', '/clusters/root/apis/core.kcp.io/v1alpha1/shards/root');
    assert.equal(shard.json.spec.baseURL, srv.url);
    assert.equal(shard.json.spec.externalURL, srv.url);
    const lc = await as(undefined, 'GET', '/clusters/root/apis/core.kcp.io/v1alpha1/logicalclusters/cluster');
    assert.equal(lc.json.status.phase, 'Ready');
    assert.equal(lc.json.metadata.annotations['internal.tenancy.kcp.io/type'], 'root:root');
  });
});

describe('workspace lifecycle', () => {
  test('root → org → team: types defaulted from the parent, Ready with spec.URL, own namespaces and CRDs', async () => {
    const org = await as(undefined, 'POST', WS('root'), workspace('org'));
    assert.equal(org.status, 201, org.body);
    assert.deepEqual(org.json.spec.type, { name: 'organization', path: 'root' }, "root's defaultChildWorkspaceType");
    assert.equal(org.json.status.phase, 'Scheduling');
    const ready = await waitReady('root', 'org');
    assert.equal(ready.spec.URL, `${srv.url}/clusters/root:org`);
    assert.match(ready.spec.cluster, /^[a-z0-9]{16}$/);
    assert.deepEqual(ready.metadata.finalizers, ['core.kcp.io/logicalcluster']);
    assert.equal(ready.metadata.labels['tenancy.kcp.io/phase'], 'Ready');
    assert.deepEqual(JSON.parse(ready.metadata.annotations['experimental.tenancy.kcp.io/owner']).username, 'kcp-admin');

    const team = await as(undefined, 'POST', WS('root:org'), workspace('team', { name: 'team' }));
    assert.equal(team.status, 201, team.body);
    assert.deepEqual(team.json.spec.type, { name: 'team', path: 'root' }, 'type looked up along the path');
    const t = await waitReady('root:org', 'team');
    // The path and the logical cluster name reach the same logical cluster.
    for (const c of ['root:org:team', t.spec.cluster]) {
      const ns = await as(undefined, 'GET', `/clusters/${c}/api/v1/namespaces`);
      assert.deepEqual(ns.json.items.map((n: any) => n.metadata.name), ['default'], 'root:universal initializer');
    }
    const lc = await as(undefined, 'GET', '/clusters/root:org:team/apis/core.kcp.io/v1alpha1/logicalclusters/cluster');
    assert.equal(lc.json.metadata.annotations['kcp.io/path'], 'root:org:team');
    assert.deepEqual(lc.json.spec.owner.name, 'team');
    assert.deepEqual(lc.json.spec.initializers, ['root:universal']);
    const crb = await as(undefined, 'GET', '/clusters/root:org:team/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/workspace-admin');
    assert.deepEqual(crb.json.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'kcp-admin' }]);
    // Each level has its own namespaces and CRDs.
    assert.equal((await as(undefined, 'POST', '/clusters/root:org/api/v1/namespaces', { metadata: { name: 'org-only' } })).status, 201);
    assert.equal((await as(undefined, 'GET', '/clusters/root:org:team/api/v1/namespaces/org-only')).status, 404);
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Cluster', names: { plural: 'widgets', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }] },
    };
    assert.equal((await as(undefined, 'POST', '/clusters/root:org:team/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status, 201);
    assert.equal((await as(undefined, 'GET', '/clusters/root:org/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).status, 404);
  });

  test('wrongly typed Workspaces are 422 with the field, never admitted or a 500', async () => {
    for (const [body, field] of [
      [{ metadata: { name: 'bad1' }, spec: 5 }, 'spec'],
      [{ metadata: { name: 'bad2' }, spec: { type: 'team' } }, 'spec.type'],
      [{ metadata: { name: 'bad3', annotations: 'x' } }, 'metadata.annotations'],
      [{ metadata: { name: 'bad4' }, spec: { type: { name: 5 } } }, 'spec.type.name'],
    ] as const) {
      const r = await as(undefined, 'POST', WS('root'), { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', ...body });
      assert.equal(r.status, 422, r.body);
      assert.equal(r.json.reason, 'Invalid');
      assert.ok(r.json.details.causes.some((c: any) => c.field === field), `${field}: ${r.body}`);
    }
    const lc = await call(srv, srv.masters, 'POST', '/clusters/badlc/apis/core.kcp.io/v1alpha1/logicalclusters', { metadata: { name: 'cluster', finalizers: 'x' } });
    assert.equal(lc.status, 422, lc.body);
  });

  test('an invalid workspace name is reported once; one the object-meta rules allow but kcp\'s pattern refuses, by the pattern', async () => {
    const bad = await as(undefined, 'POST', WS('root'), workspace('Bad_Name'));
    assert.equal(bad.status, 422, bad.body);
    assert.deepEqual(bad.json.details.causes.map((c: any) => c.field), ['metadata.name']);
    assert.equal(bad.json.message.split('metadata.name').length - 1, 1, bad.json.message);
    // Dots pass the DNS-subdomain rule of object metadata, not kcp's DNS-label pattern.
    const dotted = await as(undefined, 'POST', WS('root'), workspace('a.b'));
    assert.equal(dotted.status, 422, dotted.body);
    assert.deepEqual(dotted.json.details.causes.map((c: any) => c.field), ['metadata.name']);
    assert.match(dotted.json.details.causes[0].message, /should match/);
  });

  test('admission: spec.cluster/URL are not settable, types must allow the parent, use needs permission', async () => {
    const cluster = await as('alice-token', 'POST', WS('root:org'), workspace('x', undefined, { cluster: 'abc' }));
    assert.equal(cluster.status, 403);
    const org = await as(undefined, 'POST', WS('root:org'), workspace('nested-org', { name: 'organization' }));
    assert.equal(org.status, 403);
    assert.match(org.json.message, /workspace type root:organization only allows \[root:root\] parent workspaces/);
    const missing = await as(undefined, 'POST', WS('root:org'), workspace('nope', { name: 'does-not-exist' }));
    assert.equal(missing.status, 403);
    assert.match(missing.json.message, /cannot be resolved/);
    // A type in root:org usable only with `use` permission.
    const wt = { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name: 'special' }, spec: { extend: { with: [{ name: 'universal', path: 'root' }] }, additionalWorkspaceLabels: { tier: 'gold' } } };
    assert.equal((await as(undefined, 'POST', '/clusters/root:org/apis/tenancy.kcp.io/v1alpha1/workspacetypes', wt)).status, 201);
    assert.equal((await as(undefined, 'POST', '/clusters/root:org/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'alice-ws' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    })).status, 201);
    const aliceOk = await eventually('alice may use the type', async () => {
      const r = await as('alice-token', 'POST', WS('root:org'), workspace('a1', { name: 'special' }));
      return r.status === 201 && r;
    });
    const noUse = await as('bob-token', 'POST', WS('root:org'), workspace('b1', { name: 'special' }));
    assert.equal(noUse.status, 403, 'bob has no access to root:org at all');
    assert.equal(aliceOk.json.metadata.labels.tier, 'gold', 'additionalWorkspaceLabels');
    assert.deepEqual(aliceOk.json.spec.type, { name: 'special', path: 'root:org' });
    const ready = await waitReady('root:org', 'a1', 'alice-token');
    // The creator is admin of the new workspace.
    assert.equal((await as('alice-token', 'POST', '/clusters/root:org:a1/api/v1/namespaces', { metadata: { name: 'mine' } })).status, 201);
    assert.equal(JSON.parse(ready.metadata.annotations['experimental.tenancy.kcp.io/owner']).username, 'alice');
    // Users cannot move a workspace to another logical cluster.
    const moved = await as('alice-token', 'PUT', `${WS('root:org')}/a1`, { ...ready, spec: { ...ready.spec, cluster: 'elsewhere' } });
    assert.equal(moved.status, 403);
  });
});

describe('isolation', () => {
  test('an admin of root:a reaches nothing of root:b: 403 everywhere, no listing, no path tricks', async () => {
    // alice and bob may create workspaces in root; each becomes admin of their own.
    assert.equal((await as(undefined, 'POST', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: 'workspace-creator' }, rules: [{ apiGroups: ['tenancy.kcp.io'], resources: ['workspaces'], verbs: ['create', 'get', 'list'] }, { apiGroups: ['tenancy.kcp.io'], resources: ['workspacetypes'], verbs: ['use'] }],
    })).status, 201);
    assert.equal((await as(undefined, 'POST', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'workspace-creators' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'workspace-creator' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }, { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
    })).status, 201);
    await eventually('alice may create workspaces', async () => (await as('alice-token', 'POST', WS('root'), workspace('a'))).status === 201);
    assert.equal((await as('bob-token', 'POST', WS('root'), workspace('b'))).status, 201);
    const b = await waitReady('root', 'b', 'bob-token');
    await waitReady('root', 'a', 'alice-token');
    assert.equal((await as('alice-token', 'POST', '/clusters/root:a/api/v1/namespaces/default/configmaps', CM('alice-cm'))).status, 201);
    assert.equal((await as('bob-token', 'POST', '/clusters/root:b/api/v1/namespaces/default/configmaps', CM('bob-cm'))).status, 201);

    for (const target of ['root:b', b.spec.cluster]) {
      const list = await as('alice-token', 'GET', `/clusters/${target}/api/v1/namespaces/default/configmaps`);
      assert.equal(list.status, 403, `alice lists configmaps of ${target}`);
      assert.match(list.json.message, /no verb=access permission on \//);
      assert.equal((await as('alice-token', 'GET', `/clusters/${target}/api/v1/namespaces/default/configmaps/bob-cm`)).status, 403);
      assert.equal((await as('alice-token', 'GET', WS(target))).status, 403, 'cannot list the workspaces of root:b');
      assert.equal((await as('alice-token', 'GET', `/clusters/${target}/api`)).status, 403, 'not even discovery');
      assert.equal((await as('alice-token', 'POST', `/clusters/${target}/api/v1/namespaces`, { metadata: { name: 'intruder' } })).status, 403);
    }
    // Path tricks: relative segments, encodings, unknown paths, wildcard, impersonation.
    for (const p of ['/clusters/root:a:..:b/api/v1/namespaces', '/clusters/root:a/../root:b/api/v1/namespaces', '/clusters/root%3Ab/api/v1/namespaces',
      '/clusters/root:B/api/v1/namespaces', '/clusters/root:b:/api/v1/namespaces', '/clusters/*/api/v1/configmaps', '/clusters/root:nope/api/v1/namespaces']) {
      const r = await as('alice-token', 'GET', p);
      assert.ok([400, 403, 404].includes(r.status), `${p} → ${r.status}`);
      assert.ok(!r.body.includes('bob-cm') && !r.body.includes('intruder'), p);
    }
    const impersonating = await call(srv, caOnly(), 'GET', '/clusters/root:b/api/v1/namespaces', undefined, { authorization: 'Bearer alice-token', 'impersonate-user': 'bob' });
    assert.equal(impersonating.status, 403);
    // Unknown paths are not told apart from forbidden ones.
    const unknown = await as('alice-token', 'GET', '/clusters/root:nope/api/v1/namespaces');
    assert.equal(unknown.status, 403);
    // bob's own view still works.
    assert.equal((await as('bob-token', 'GET', '/clusters/root:b/api/v1/namespaces/default/configmaps/bob-cm')).status, 200);
    // A service account token of root:a works in root:a only.
    const sa = await as('alice-token', 'GET', '/clusters/root:a/api/v1/namespaces/default/serviceaccounts/default');
    assert.equal(sa.status, 200, 'the default ServiceAccount exists');
    assert.equal((await as('alice-token', 'POST', '/clusters/root:a/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', {
      metadata: { name: 'robot-view' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }],
    })).status, 201);
    const tr = await as('alice-token', 'POST', '/clusters/root:a/api/v1/namespaces/default/serviceaccounts/default/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    assert.equal(tr.status, 201, tr.body);
    const saGet = (path: string) => call(srv, caOnly(), 'GET', path, undefined, { authorization: `Bearer ${tr.json.status.token}` });
    await eventually('the binding grants the service account view', async () => (await saGet('/clusters/root:a/api/v1/namespaces/default/configmaps/alice-cm')).status === 200);
    assert.equal((await saGet('/clusters/root:b/api/v1/namespaces/default/configmaps/bob-cm')).status, 403, 'refused in root:b');
    assert.equal((await saGet(`/clusters/${b.spec.cluster}/api/v1/namespaces/default/configmaps`)).status, 403);
    // Impersonating the service account (no cluster extra) in its own workspace counts as local.
    const asRobot = await call(srv, caOnly(), 'GET', '/clusters/root:a/api/v1/namespaces/default/configmaps/alice-cm', undefined,
      { authorization: 'Bearer alice-token', 'impersonate-user': 'system:serviceaccount:default:default' });
    assert.equal(asRobot.status, 200, asRobot.body);
  });

  test('required groups: only members of the groups reach the workspace and its children', async () => {
    const ws = workspace('audit');
    (ws.metadata as any).annotations = { 'authorization.kcp.io/required-groups': 'auditors' };
    // system:masters may set the annotation (kcp: system privileged users only).
    const created = await call(srv, srv.masters, 'POST', WS('root'), ws);
    assert.equal(created.status, 201, created.body);
    await waitReady('root', 'audit');
    for (const user of ['alice', 'carol']) {
      assert.equal((await as(undefined, 'POST', '/clusters/root:audit/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: `${user}-admin` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      })).status, 201);
    }
    // carol's binding in effect first, so that alice's 403 is the required groups, not a binding not seen yet.
    await eventually('carol reaches the workspace', async () => (await as('carol-token', 'GET', '/clusters/root:audit/api/v1/namespaces')).status === 200);
    const alice = await as('alice-token', 'GET', '/clusters/root:audit/api/v1/namespaces');
    assert.equal(alice.status, 403);
    assert.match(alice.json.message, /not a member of required groups: auditors/);
    // Children inherit the annotation.
    assert.equal((await as('carol-token', 'POST', WS('root:audit'), workspace('sub'))).status, 201);
    const sub = await waitReady('root:audit', 'sub', 'carol-token');
    assert.equal(sub.metadata.annotations['authorization.kcp.io/required-groups'], 'auditors');
  });
});

describe('home workspaces', () => {
  test('workspaces/~ creates the caller\'s home (429 while initializing) and returns it', async () => {
    let r: Res;
    const deadline = Date.now() + 5000;
    for (;;) {
      r = await as('bob-token', 'GET', `${WS('root')}/~`);
      if (r.status !== 429) break;
      assert.equal(r.headers['retry-after'], '1');
      if (Date.now() > deadline) throw new Error('home not ready');
      await sleep(20);
    }
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.kind, 'Workspace');
    assert.equal(r.json.status.phase, 'Ready');
    assert.equal(r.json.spec.URL, `${srv.url}/clusters/user:bob`);
    assert.equal((await as('bob-token', 'POST', '/clusters/user:bob/api/v1/namespaces', { metadata: { name: 'home-ns' } })).status, 201);
    assert.equal((await as('bob-token', 'GET', `/clusters/${r.json.spec.cluster}/api/v1/namespaces/home-ns`)).status, 200);
    assert.equal((await as('alice-token', 'GET', '/clusters/user:bob/api/v1/namespaces')).status, 403, "alice cannot enter bob's home");
    const again = await as('bob-token', 'GET', `${WS('root')}/~`);
    assert.equal(again.json.spec.cluster, r.json.spec.cluster, 'stable');
  });

  test('a user name that is no DNS label gets a home reachable by its logical cluster name', async () => {
    let r: Res;
    const deadline = Date.now() + 5000;
    do {
      r = await as('dave-token', 'GET', `${WS('root')}/~`);
      if (r.status === 429) await sleep(20);
    } while (r.status === 429 && Date.now() < deadline);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.spec.URL, `${srv.url}/clusters/${r.json.spec.cluster}`);
    const inHome = new URL(r.json.spec.URL).pathname;
    assert.equal((await as('dave-token', 'POST', `${inHome}/api/v1/namespaces`, { metadata: { name: 'mine' } })).status, 201);
    // Its path is no valid cluster path: a clear 400, not a lookup.
    const byPath = await as('dave-token', 'GET', `/clusters/${encodeURIComponent('user:dave@example.com')}/api/v1/namespaces`);
    assert.equal(byPath.status, 400, byPath.body);
    assert.match(byPath.json.message, /invalid logical cluster name or path/);
  });
});

describe('controller runtime', () => {
  test('/metrics reports reconciles, durations, errors and queue depth per controller', async () => {
    const m = await as(undefined, 'GET', '/metrics');
    assert.equal(m.status, 200);
    const value = (re: RegExp) => Number(re.exec(m.body)?.[1] ?? NaN);
    assert.ok(value(/controller_runtime_reconcile_total\{controller="workspace",result="success"\} (\d+)/) > 0, 'workspace reconciles counted');
    assert.ok(value(/controller_runtime_reconcile_time_seconds_count\{controller="workspace"\} (\d+)/) > 0);
    assert.ok(value(/workqueue_adds_total\{name="workspace"\} (\d+)/) > 0);
    assert.match(m.body, /workqueue_depth\{name="logicalcluster"\} \d+/);
    assert.match(m.body, /# TYPE controller_runtime_reconcile_errors_total counter/);
  });
});

describe('deletion', () => {
  test('default, kube-system and kube-public may not be deleted (kcp WorkspaceNamespaceLifecycle), by anyone, dry run included', async () => {
    for (const name of ['kube-system', 'kube-public', 'other']) {
      assert.equal((await as(undefined, 'POST', '/clusters/root:org:team/api/v1/namespaces', { metadata: { name } })).status, 201);
    }
    for (const name of ['default', 'kube-system', 'kube-public']) {
      for (const [who, res] of [
        ['admin', await as(undefined, 'DELETE', `/clusters/root:org:team/api/v1/namespaces/${name}`)],
        ['system:masters', await call(srv, srv.masters, 'DELETE', `/clusters/root:org:team/api/v1/namespaces/${name}`)],
        ['dry run', await as(undefined, 'DELETE', `/clusters/root:org:team/api/v1/namespaces/${name}?dryRun=All`)],
      ] as const) {
        assert.equal(res.status, 403, `${who} deleting ${name}: ${res.body}`);
        assert.equal(res.json.reason, 'Forbidden');
        assert.equal(res.json.message, `namespaces "${name}" is forbidden: this namespace may not be deleted`);
        assert.deepEqual(res.json.details, { name, kind: 'namespaces' });
      }
      const ns = await as(undefined, 'GET', `/clusters/root:org:team/api/v1/namespaces/${name}`);
      assert.equal(ns.status, 200);
      assert.equal(ns.json.status.phase, 'Active', `${name} untouched`);
    }
    assert.equal((await as(undefined, 'DELETE', '/clusters/root:org:team/api/v1/namespaces/other')).status, 200, 'other namespaces are deleted as usual');
  });

  test('terminators hold the deletion until they remove themselves from the LogicalCluster status', async () => {
    const wt = { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name: 'guarded' }, spec: { terminator: true, extend: { with: [{ name: 'universal', path: 'root' }] } } };
    assert.equal((await as(undefined, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes', wt)).status, 201);
    assert.equal((await as(undefined, 'POST', WS('root'), workspace('guarded', { name: 'guarded', path: 'root' }))).status, 201);
    const ws = await waitReady('root', 'guarded');
    const LC = `/clusters/${ws.spec.cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`;
    const lc = await call(srv, srv.masters, 'GET', LC);
    assert.deepEqual(lc.json.spec.terminators, ['root:guarded']);
    assert.deepEqual(lc.json.status.terminators, ['root:guarded']);
    assert.equal((await as(undefined, 'DELETE', `${WS('root')}/guarded`)).status, 200);
    let terminating: any;
    for (let i = 0; i < 100; i++) {
      terminating = (await call(srv, srv.masters, 'GET', LC)).json;
      if (terminating.status?.phase === 'Terminating') break;
      await sleep(20);
    }
    assert.equal(terminating.status.phase, 'Terminating');
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(200);
    assert.equal((await call(srv, srv.masters, 'GET', `/clusters/${ws.spec.cluster}/api/v1/namespaces/default`)).status, 200, 'content kept while a terminator remains');
    assert.equal((await as(undefined, 'GET', `${WS('root')}/guarded`)).status, 200);
    // The terminator is done.
    const done = await call(srv, srv.masters, 'PUT', `${LC}/status`, { ...terminating, status: { ...terminating.status, terminators: [] } });
    assert.equal(done.status, 200, done.body);
    await gone(`${WS('root')}/guarded`);
    assert.equal((await call(srv, srv.masters, 'GET', LC)).status, 404);
  });

  test('deleting root:org removes the subtree and every object in it', async () => {
    const org = await as(undefined, 'GET', `${WS('root')}/org`);
    const team = await as(undefined, 'GET', `${WS('root:org')}/team`);
    const clusters = [org.json.spec.cluster, team.json.spec.cluster];
    assert.equal((await as(undefined, 'POST', '/clusters/root:org:team/api/v1/namespaces/default/configmaps', CM('deep'))).status, 201);
    const del = await as(undefined, 'DELETE', `${WS('root')}/org`);
    assert.equal(del.status, 200);
    await gone(`${WS('root')}/org`);
    for (const c of clusters) {
      for (const p of ['/apis/core.kcp.io/v1alpha1/logicalclusters/cluster', '/api/v1/namespaces/default', '/api/v1/namespaces/default/configmaps/deep',
        '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/workspace-admin', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com']) {
        const r = await call(srv, srv.masters, 'GET', `/clusters/${c}${p}`);
        assert.equal(r.status, 404, `${c}${p} still there`);
      }
      // Nothing of the deleted logical clusters is left in any list.
      const everything = await call(srv, srv.masters, 'GET', '/clusters/*/api/v1/namespaces');
      assert.ok(!everything.json.items.some((n: any) => n.metadata.annotations?.['kcp.io/cluster'] === c));
    }
    assert.equal((await as(undefined, 'GET', '/clusters/root:org:team/api/v1/namespaces')).status, 403, 'the path resolves no more');
  });
});
