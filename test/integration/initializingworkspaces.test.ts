/**
 * The initializing and terminating virtual workspaces (kcp pkg/virtual/initializingworkspaces,
 * pkg/virtual/terminatingworkspaces) against a real server on a real Redis: an initializer
 * controller of a WorkspaceType lists and watches the workspaces waiting for it, sets one up
 * through the virtual workspace and removes its initializer, after which the workspace becomes
 * Ready; a terminator likewise holds and then releases a workspace's deletion.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CM, call, eventually, sleep, watch, type Res, type TestServer, useTestServer } from '../helpers.js';

let srv: TestServer;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
writeFileSync(tokenFile, 'init-token,initbot,2001\nterm-token,termbot,2002\nbob-token,bob,2003\n');

useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const WST = '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes';
const LCS = '/apis/core.kcp.io/v1alpha1/logicalclusters';
const INIT = '/services/initializingworkspaces/root:setup';
const TERM = '/services/terminatingworkspaces/root:teardown';
const as = (token: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> =>
  token ? call(srv, { ca: srv.creds.ca }, method, path, body, { authorization: `Bearer ${token}`, ...headers }) : call(srv, srv.creds, method, path, body, headers);
const merge = { 'content-type': 'application/merge-patch+json' };
const workspaceType = (name: string, spec: object) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name }, spec: { ...spec, extend: { with: [{ name: 'universal', path: 'root' }] } } });
const workspace = (name: string, type: string) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: { type: { name: type, path: 'root' } } });

/** A ClusterRole and its binding in root: workspace access and `verb` on the WorkspaceType `type`. */
async function grant(user: string, verb: string, type: string): Promise<void> {
  const name = `${verb}-${type}`;
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name },
    rules: [{ verbs: ['access'], nonResourceURLs: ['/'] }, { apiGroups: ['tenancy.kcp.io'], resources: ['workspacetypes'], resourceNames: [type], verbs: [verb] }],
  };
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  };
  assert.equal((await as(undefined, 'POST', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles', role)).status, 201);
  assert.equal((await as(undefined, 'POST', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', binding)).status, 201);
}

async function phaseOf(name: string): Promise<string | undefined> {
  return (await as(undefined, 'GET', `${WS('root')}/${name}`)).json?.status?.phase;
}

describe('initializingworkspaces', () => {
  let cluster = '';
  let readyCluster = '';

  test('set-up: a WorkspaceType with an initializer, a workspace of it stays Initializing', async () => {
    assert.equal((await as(undefined, 'POST', WST, workspaceType('setup', { initializer: true }))).status, 201);
    await grant('initbot', 'initialize', 'setup');
    assert.equal((await as(undefined, 'POST', WS('root'), workspace('pending', 'setup'))).status, 201);
    assert.equal((await as(undefined, 'POST', WS('root'), workspace('plain', 'universal'))).status, 201);
    const ws = await eventually('pending workspace scheduled', async () => {
      const r = (await as(undefined, 'GET', `${WS('root')}/pending`)).json;
      return r?.status?.phase === 'Initializing' && r.spec?.cluster ? r : undefined;
    });
    cluster = ws.spec.cluster;
    readyCluster = (await eventually('plain workspace Ready', async () => {
      const r = (await as(undefined, 'GET', `${WS('root')}/plain`)).json;
      return r?.status?.phase === 'Ready' ? r : undefined;
    })).spec.cluster;
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(200);
    assert.equal(await phaseOf('pending'), 'Initializing', 'the initializer holds it');
    const lc = await call(srv, srv.masters, 'GET', `/clusters/${cluster}${LCS}/cluster`);
    assert.deepEqual(lc.json.status.initializers, ['root:setup'], 'root:universal ran, root:setup is left to its controller');
  });

  test('wildcard list: the LogicalClusters initializing with the initializer, annotated kcp.io/cluster', async () => {
    const list = await as('init-token', 'GET', `${INIT}/clusters/*${LCS}`);
    assert.equal(list.status, 200, list.body);
    assert.equal(list.json.kind, 'LogicalClusterList');
    assert.deepEqual(list.json.items.map((i: any) => i.metadata.annotations['kcp.io/cluster']), [cluster]);
    assert.equal(list.json.items[0].metadata.name, 'cluster');
    // Other initializers see nothing (the admin may ask; the list is empty).
    const other = await as(undefined, 'GET', `/services/initializingworkspaces/root:universal/clusters/*${LCS}`);
    assert.equal(other.status, 200, other.body);
    assert.deepEqual(other.json.items, []);
    // Only list and watch there; discovery shows logicalclusters alone.
    assert.equal((await as('init-token', 'GET', `${INIT}/clusters/*/api/v1/configmaps`)).status, 404);
    const disc = await as('init-token', 'GET', `${INIT}/clusters/*/apis/core.kcp.io/v1alpha1`);
    assert.equal(disc.status, 200, disc.body);
    assert.deepEqual(disc.json.resources.map((r: any) => [r.name, r.verbs]), [['logicalclusters', ['list', 'watch']]]);
  });

  test('authorization: verb initialize on the WorkspaceType in its workspace', async () => {
    const denied = await as('bob-token', 'GET', `${INIT}/clusters/*${LCS}`);
    assert.equal(denied.status, 403, denied.body);
    assert.match(denied.json.message, /initialize/);
    assert.equal((await as('bob-token', 'GET', `${INIT}/clusters/${cluster}${LCS}/cluster`)).status, 403);
    assert.equal((await as('bob-token', 'GET', `${INIT}/clusters/${cluster}/api/v1/namespaces`)).status, 403);
    // initbot may initialize root:setup, not another type.
    assert.equal((await as('init-token', 'GET', `/services/initializingworkspaces/root:universal/clusters/*${LCS}`)).status, 403);
    // Not an initializer name.
    assert.equal((await as('init-token', 'GET', `/services/initializingworkspaces/setup/clusters/*${LCS}`)).status, 404);
  });

  test('one workspace: its LogicalCluster (get only) and its content', async () => {
    const lc = await as('init-token', 'GET', `${INIT}/clusters/${cluster}${LCS}/cluster`);
    assert.equal(lc.status, 200, lc.body);
    assert.deepEqual(lc.json.status.initializers, ['root:setup']);
    assert.equal((await as('init-token', 'DELETE', `${INIT}/clusters/${cluster}${LCS}/cluster`)).status, 405);
    assert.equal((await as('init-token', 'PATCH', `${INIT}/clusters/${cluster}${LCS}/cluster`, { metadata: { labels: { a: 'b' } } }, merge)).status, 405);
    // The workspace's own resources, as its initializer sets it up.
    const ns = await as('init-token', 'GET', `${INIT}/clusters/${cluster}/api/v1/namespaces`);
    assert.equal(ns.status, 200, ns.body);
    assert.deepEqual(ns.json.items.map((n: any) => n.metadata.name), ['default']);
    const created = await as('init-token', 'POST', `${INIT}/clusters/${cluster}/api/v1/namespaces/default/configmaps`, CM('seeded', { by: 'initializer' }));
    assert.equal(created.status, 201, created.body);
    const seen = await call(srv, srv.masters, 'GET', `/clusters/${cluster}/api/v1/namespaces/default/configmaps/seeded`);
    assert.deepEqual(seen.json.data, { by: 'initializer' }, 'written into the logical cluster itself');
    // The workspace path resolves too.
    assert.equal((await as('init-token', 'GET', `${INIT}/clusters/root:pending/api/v1/namespaces/default/configmaps/seeded`)).status, 200);
  });

  test('a workspace not initializing with the initializer is refused', async () => {
    for (const path of [`${LCS}/cluster`, '/api/v1/namespaces', '/api/v1/namespaces/default/configmaps']) {
      const r = await as('init-token', 'GET', `${INIT}/clusters/${readyCluster}${path}`);
      assert.equal(r.status, 403, `${path}: ${r.body}`);
      assert.match(r.json.message, /initializer "root:setup" cannot access this workspace/);
    }
    assert.equal((await as('init-token', 'POST', `${INIT}/clusters/${readyCluster}/api/v1/namespaces/default/configmaps`, CM('nope'))).status, 403);
  });

  test('status: only removing its own initializer; then the workspace becomes Ready', async () => {
    const STATUS = `${INIT}/clusters/${cluster}${LCS}/cluster/status`;
    const w = watch(srv, srv.creds, `${INIT}/clusters/*${LCS}?watch=true`);
    try {
      assert.equal(await w.status, 200);
      const [added] = await w.waitFor(1);
      assert.equal(added.type, 'ADDED');
      assert.equal(added.object.metadata.annotations['kcp.io/cluster'], cluster);

      const other = await as('init-token', 'PATCH', STATUS, { status: { initializers: ['root:setup', 'root:other'] } }, merge);
      assert.equal(other.status, 422, other.body);
      assert.equal(other.json.reason, 'Invalid');
      assert.match(other.json.message, /only removing the "root:setup" initializer is supported/);
      const cleared = await as('init-token', 'PATCH', STATUS, { status: { initializers: [] } }, merge);
      assert.equal(cleared.status, 200, 'removing its own, the only one, is removing exactly it');
      const lc = (await call(srv, srv.masters, 'GET', `/clusters/${cluster}${LCS}/cluster`)).json;
      assert.deepEqual(lc.status.initializers, []);
      // The watch sees it leave; the controller finishes the initialization.
      const events = await w.waitFor(2);
      assert.equal(events[1]?.type, 'DELETED');
    } finally { w.close(); }
    await eventually('workspace Ready', async () => (await phaseOf('pending')) === 'Ready');
    const lc = (await call(srv, srv.masters, 'GET', `/clusters/${cluster}${LCS}/cluster`)).json;
    assert.equal(lc.status.phase, 'Ready');
    // Initialized: the initializer's access ends.
    assert.equal((await as('init-token', 'GET', `${INIT}/clusters/${cluster}/api/v1/namespaces`)).status, 403);
    assert.deepEqual((await as('init-token', 'GET', `${INIT}/clusters/*${LCS}`)).json.items, []);
    assert.equal((await call(srv, srv.masters, 'GET', `/clusters/${cluster}/api/v1/namespaces/default/configmaps/seeded`)).status, 200, 'its set-up stays');
  });

  test('status: other changes are refused (another initializer, the phase)', async () => {
    // A type extending another one with an initializer carries both.
    const both = { ...workspaceType('setup2', { initializer: true }), spec: { initializer: true, extend: { with: [{ name: 'setup', path: 'root' }] } } };
    assert.equal((await as(undefined, 'POST', WST, both)).status, 201);
    assert.equal((await as(undefined, 'POST', WS('root'), workspace('pending2', 'setup2'))).status, 201);
    const c = (await eventually('pending2 Initializing', async () => {
      const r = (await as(undefined, 'GET', `${WS('root')}/pending2`)).json;
      return r?.status?.phase === 'Initializing' && r.spec?.cluster ? r : undefined;
    })).spec.cluster as string;
    const lc = (await call(srv, srv.masters, 'GET', `/clusters/${c}${LCS}/cluster`)).json;
    assert.deepEqual([...lc.status.initializers].sort(), ['root:setup', 'root:setup2']);
    const STATUS = `${INIT}/clusters/${c}${LCS}/cluster/status`;
    const removeOther = await as('init-token', 'PATCH', STATUS, { status: { initializers: ['root:setup'] } }, merge);
    assert.equal(removeOther.status, 422, removeOther.body);
    assert.match(removeOther.json.message, /only removing the "root:setup" initializer is supported/);
    const removeAll = await as('init-token', 'PATCH', STATUS, { status: { initializers: [] } }, merge);
    assert.equal(removeAll.status, 422, removeAll.body);
    const phase = await as('init-token', 'PATCH', STATUS, { status: { phase: 'Ready' } }, merge);
    assert.equal(phase.status, 422, phase.body);
    // Removing its own with a full update (PUT) of the status.
    const cur = (await as('init-token', 'GET', `${INIT}/clusters/${c}${LCS}/cluster`)).json;
    const put = await as('init-token', 'PUT', STATUS, { ...cur, status: { ...cur.status, initializers: cur.status.initializers.filter((i: string) => i !== 'root:setup') } });
    assert.equal(put.status, 200, put.body);
    assert.deepEqual(put.json.status.initializers, ['root:setup2']);
    // Negative check: a fixed wait, as nothing observable marks that something did not happen.
    await sleep(200);
    assert.equal(await phaseOf('pending2'), 'Initializing', 'root:setup2 is still pending');
    assert.equal((await as('init-token', 'GET', `${INIT}/clusters/${c}/api/v1/namespaces`)).status, 403, 'root:setup is done with it');
    // The admin, as root:setup2's controller, finishes it.
    const done = await as(undefined, 'PATCH', `/services/initializingworkspaces/root:setup2/clusters/${c}${LCS}/cluster/status`, { status: { initializers: [] } }, merge);
    assert.equal(done.status, 200, done.body);
    await eventually('pending2 Ready', async () => (await phaseOf('pending2')) === 'Ready');
  });
});

describe('terminatingworkspaces', () => {
  test('a terminator lists the deleting workspaces, reads their content and releases them', async () => {
    assert.equal((await as(undefined, 'POST', WST, workspaceType('teardown', { terminator: true }))).status, 201);
    await grant('termbot', 'terminate', 'teardown');
    assert.equal((await as(undefined, 'POST', WS('root'), workspace('doomed', 'teardown'))).status, 201);
    const ws = await eventually('doomed Ready', async () => {
      const r = (await as(undefined, 'GET', `${WS('root')}/doomed`)).json;
      return r?.status?.phase === 'Ready' ? r : undefined;
    });
    const cluster = ws.spec.cluster as string;
    assert.equal((await as(undefined, 'POST', `/clusters/${cluster}/api/v1/namespaces/default/configmaps`, CM('keep'))).status, 201);
    // Not being deleted: nothing to see, no access.
    assert.deepEqual((await as('term-token', 'GET', `${TERM}/clusters/*${LCS}`)).json.items, []);
    const early = await as('term-token', 'GET', `${TERM}/clusters/${cluster}/api/v1/namespaces`);
    assert.equal(early.status, 403, early.body);
    assert.match(early.json.message, /terminator "root:teardown" cannot access this workspace/);
    assert.equal((await as('bob-token', 'GET', `${TERM}/clusters/*${LCS}`)).status, 403);
    // The initializer's permission is not the terminator's.
    assert.equal((await as('init-token', 'GET', `${TERM}/clusters/*${LCS}`)).status, 403);

    assert.equal((await as(undefined, 'DELETE', `${WS('root')}/doomed`)).status, 200);
    const list = await eventually('doomed listed', async () => {
      const r = await as('term-token', 'GET', `${TERM}/clusters/*${LCS}`);
      return r.json?.items?.length ? r : undefined;
    });
    assert.equal(list.json.items[0].metadata.annotations['kcp.io/cluster'], cluster);
    assert.ok(list.json.items[0].metadata.deletionTimestamp);
    const cm = await as('term-token', 'GET', `${TERM}/clusters/${cluster}/api/v1/namespaces/default/configmaps/keep`);
    assert.equal(cm.status, 200, `content readable while terminating: ${cm.body}`);

    const STATUS = `${TERM}/clusters/${cluster}${LCS}/cluster/status`;
    const bad = await as('term-token', 'PATCH', STATUS, { status: { terminators: ['root:teardown', 'root:x'] } }, merge);
    assert.equal(bad.status, 422, bad.body);
    assert.match(bad.json.message, /only removing the "root:teardown" terminator is supported/);
    assert.equal((await as('term-token', 'PATCH', STATUS, { status: { terminators: [] } }, merge)).status, 200);
    // Deletion continues: the workspace and its logical cluster go.
    await eventually('doomed gone', async () => (await as(undefined, 'GET', `${WS('root')}/doomed`)).status === 404, 10_000);
    await eventually('logical cluster gone', async () => (await call(srv, srv.masters, 'GET', `/clusters/${cluster}${LCS}/cluster`)).status === 404, 10_000);
    assert.deepEqual((await as('term-token', 'GET', `${TERM}/clusters/*${LCS}`)).json.items, []);
  });
});
