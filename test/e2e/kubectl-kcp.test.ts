/**
 * The `kubectl kcp` plugin run by the real kubectl (which finds `kubectl-kcp` on PATH) against a
 * real server: a provider workspace exports the widgets API (test/fixtures/apis), a consumer
 * workspace binds it with `kubectl kcp bind apiexport root:provider:widgets`, accepting the
 * export's configmaps claim, and then serves widgets to plain kubectl. Also: the errors of the
 * argument, an existing binding, a binding that never becomes Bound (timeout), a user without
 * `bind` permission on the export (403), `--accept-all-permission-claims`, `kubectl kcp ws`, help.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { call, eventually, kubectlWithPlugins, pluginBinDir, startRedis, startTestServer, type Run, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
let dir: string;
let kubeconfig: string;
let binDir: string;

const FIXTURES = fileURLToPath(new URL('../fixtures/apis/', import.meta.url));
const BOB_TOKEN = `bob-${randomBytes(8).toString('hex')}`;
const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const BINDINGS = (path: string) => `/clusters/${path}/apis/apis.kcp.io/v1alpha2/apibindings`;


/** Runs real kubectl with the plugins on PATH, a private HOME and `KUBECONFIG` set. */
function kubectl(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return kubectlWithPlugins(binDir, { HOME: dir, KUBECONFIG: kubeconfig, ...env }, args);
}

/** kubectl that must succeed. */
async function ok(...args: string[]): Promise<Run> {
  const r = await kubectl(args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r;
}

/** Creates a workspace in root as the admin and waits until it is Ready. */
async function createWorkspace(name: string): Promise<void> {
  const res = await call(srv, srv.creds, 'POST', WS('root'), { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
  assert.equal(res.status, 201, res.body);
  await eventually(`workspace ${name} Ready`, async () =>
    (await call(srv, srv.creds, 'GET', `${WS('root')}/${name}`)).json?.status?.phase === 'Ready', 20_000);
}

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-kcp-home-'));
  const tokens = join(dir, 'tokens.csv');
  writeFileSync(tokens, `${BOB_TOKEN},bob,5001,"dev"\n`);
  srv = await startTestServer(redis, { tokenAuthFile: tokens });
  kubeconfig = join(dir, 'config');
  copyFileSync(srv.kubeconfigPath, kubeconfig);
  binDir = pluginBinDir({ 'kubectl-kcp': 'src/cli/kcp/bin.ts', 'kubectl-ws': 'src/cli/ws/bin.ts' });
  await createWorkspace('provider');
  await createWorkspace('consumer');
});
after(async () => {
  await srv?.stop();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (binDir) rmSync(binDir, { recursive: true, force: true });
});

describe('kubectl kcp', () => {
  test('kubectl kcp ws enters the provider; the widgets APIExport gets its identity', async () => {
    assert.equal((await ok('kcp', 'ws', ':root:provider')).stdout, "Current workspace is 'root:provider' (type root:organization).\n");
    assert.equal((await ok('kcp', 'workspace', 'current', '--short')).stdout, 'root:provider\n');
    await ok('apply', '-f', join(FIXTURES, 'widgets-schema.yaml'));
    await ok('apply', '-f', join(FIXTURES, 'widgets-export.yaml'));
    await eventually('APIExport identityHash', async () =>
      (await call(srv, srv.creds, 'GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets')).json?.status?.identityHash, 20_000);
  });

  test('bind apiexport root:provider:widgets in consumer, accepting the configmaps claim', async () => {
    await ok('kcp', 'ws', ':root:consumer');
    const r = await ok('kcp', 'bind', 'apiexport', 'root:provider:widgets', '--accept-permission-claim', 'configmaps.core');
    assert.equal(r.stdout, 'apibinding widgets created. Waiting to successfully bind ...\nwidgets created and bound.\n');
    assert.equal(r.stderr, '');

    const b = (await call(srv, srv.creds, 'GET', `${BINDINGS('root:consumer')}/widgets`)).json;
    assert.equal(b.status.phase, 'Bound');
    assert.deepEqual(b.spec.reference, { export: { path: 'root:provider', name: 'widgets' } });
    assert.equal(b.spec.permissionClaims.length, 1);
    const claim = b.spec.permissionClaims[0];
    assert.equal(claim.group ?? '', '');
    assert.equal(claim.resource, 'configmaps');
    assert.deepEqual(claim.verbs, ['*']);
    assert.deepEqual(claim.selector, { matchAll: true });
    assert.equal(claim.state, 'Accepted');
    assert.ok((b.status.appliedPermissionClaims ?? []).some((c: any) => c.resource === 'configmaps'), JSON.stringify(b.status));

    // Plain kubectl now serves the bound resource in the consumer workspace.
    const none = await ok('get', 'widgets');
    assert.match(none.stderr, /No resources found/);
    writeFileSync(join(dir, 'w.yaml'), stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'default' }, spec: { color: 'red' } }));
    await ok('apply', '-f', join(dir, 'w.yaml'));
    const got = await ok('get', 'widgets', '-o', 'jsonpath={.items[*].metadata.name}:{.items[*].spec.size}');
    assert.equal(got.stdout, 'w1:1');
  });

  test('argument errors', async () => {
    const missing = await kubectl(['kcp', 'bind', 'apiexport']);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'Error: `root:ws:apiexport_object` reference to bind is required as an argument\n');
    const invalid = 'Error: fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`\n';
    for (const arg of ['widgets', 'Root:provider:widgets', ':widgets']) {
      const r = await kubectl(['kcp', 'bind', 'apiexport', arg]);
      assert.equal(r.code, 1, arg);
      assert.equal(r.stderr, invalid, arg);
      assert.equal(r.stdout, '', arg);
    }
    const both = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--accept-permission-claim', 'configmaps.core', '--reject-permission-claim=configmaps.core']);
    assert.equal(both.code, 1);
    assert.equal(both.stderr, 'Error: accepted permission claim configmaps.core conflicts with rejected permission claim configmaps.core\n');
    const all = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--accept-all-permission-claims', '--reject-all-permission-claims']);
    assert.equal(all.stderr, 'Error: cannot use both --accept-all-permission-claims and --reject-all-permission-claims\n');
    const flag = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--bogus']);
    assert.equal(flag.stderr, 'Error: unknown flag: --bogus\n');
    const cmd = await kubectl(['kcp', 'bind', 'apiexports', 'root:provider:widgets']);
    assert.equal(cmd.stderr, 'Error: unknown command "apiexports" for "kcp bind"\n');
    // Nothing was created by the failed commands.
    const names = (await call(srv, srv.creds, 'GET', BINDINGS('root:consumer'))).json.items.map((i: any) => i.metadata.name);
    assert.deepEqual(names, ['widgets']);
  });

  test('an existing binding: the server\'s conflict', async () => {
    const r = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^Error: failed to create APIBinding: .*"widgets" already exists\n$/);
  });

  test('a binding that does not become Bound: timeout', async () => {
    // A second binding of the same export in the same workspace conflicts with the first one.
    const started = Date.now();
    const r = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--name', 'widgets-again', '--timeout', '1500ms']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'apibinding widgets-again created. Waiting to successfully bind ...\n');
    assert.equal(r.stderr, 'Error: could not bind widgets-again: timed out waiting for the condition\n');
    assert.ok(Date.now() - started >= 1500);
    const b = (await call(srv, srv.creds, 'GET', `${BINDINGS('root:consumer')}/widgets-again`)).json;
    assert.notEqual(b.status?.phase, 'Bound');
    assert.equal((await call(srv, srv.creds, 'DELETE', `${BINDINGS('root:consumer')}/widgets-again`)).status, 200);
  });

  test('a user without bind permission on the export: 403 from the server', async () => {
    // bob administers the consumer workspace but has nothing in the provider.
    const crb = await call(srv, srv.creds, 'POST', '/clusters/root:consumer/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'bob-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
    });
    assert.equal(crb.status, 201, crb.body);
    const bobConfig = join(dir, 'bob.kubeconfig');
    writeFileSync(bobConfig, stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'consumer', cluster: { server: `${srv.url}/clusters/root:consumer`, 'certificate-authority-data': Buffer.from(srv.creds.ca).toString('base64') } }],
      users: [{ name: 'bob', user: { token: BOB_TOKEN } }],
      contexts: [{ name: 'bob', context: { cluster: 'consumer', user: 'bob' } }],
      'current-context': 'bob',
    }));
    await eventually('bob may list apibindings in consumer', async () =>
      (await kubectl(['get', 'apibindings'], { KUBECONFIG: bobConfig })).code === 0);
    const r = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--name', 'bobs'], { KUBECONFIG: bobConfig });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^Error: failed to create APIBinding: (.*: )?unable to create APIBinding: no permission to bind to export root:provider:widgets\n$/);
    assert.equal((await call(srv, srv.creds, 'GET', `${BINDINGS('root:consumer')}/bobs`)).status, 404);
  });

  test('--accept-all-permission-claims copies the export\'s claims; --kubeconfig and --name', async () => {
    await createWorkspace('consumer2');
    const other = join(dir, 'other.kubeconfig');
    copyFileSync(srv.kubeconfigPath, other);
    const r = await kubectl(['kcp', 'bind', 'apiexport', 'root:provider:widgets', '--accept-all-permission-claims', '--name', 'all',
      '--kubeconfig', other, '--server', `${srv.url}/clusters/root:consumer2`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'apibinding all created. Waiting to successfully bind ...\nall created and bound.\n');
    const b = (await call(srv, srv.creds, 'GET', `${BINDINGS('root:consumer2')}/all`)).json;
    assert.equal(b.status.phase, 'Bound');
    assert.equal(b.spec.permissionClaims.length, 1);
    const claim = b.spec.permissionClaims[0];
    assert.equal(claim.resource, 'configmaps');
    assert.equal(claim.state, 'Accepted');
    assert.deepEqual(claim.verbs, ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']);
    assert.deepEqual(claim.selector, { matchAll: true });
  });

  test('help', async () => {
    const root = await ok('kcp', '--help');
    assert.match(root.stdout, /bind apiexport/);
    assert.match((await ok('kcp')).stdout, /Usage:\n {2}kubectl kcp \[command\]/);
    assert.match((await ok('kcp', 'bind')).stdout, /apiexport <workspace_path:apiexport-name>/);
    const bind = await ok('kcp', 'bind', 'apiexport', '--help');
    assert.match(bind.stdout, /--accept-permission-claim/);
    assert.match(bind.stdout, /--reject-all-permission-claims/);
  });

  test('the shipped executable: the repository\'s bin/ on PATH gives kubectl the kcp plugin', async () => {
    // What the README tells users to do; needs the compiled plugin (`npm test` builds first).
    const shipped = fileURLToPath(new URL('../../bin', import.meta.url));
    const r = await kubectl(['kcp', 'bind', 'apiexport', 'widgets'], { PATH: `${shipped}${delimiter}${process.env.PATH ?? ''}` });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: fully qualified reference to workspace where APIExport exists is required/);
    const list = await kubectl(['plugin', 'list'], { PATH: `${shipped}${delimiter}${process.env.PATH ?? ''}` });
    assert.match(list.stdout, /kubectl-kcp/);
  });
});
