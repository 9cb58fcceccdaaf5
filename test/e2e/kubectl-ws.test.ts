/**
 * The `kubectl ws` plugin run by the real kubectl (which finds `kubectl-ws` on PATH) against a
 * real server: a tree root → org → team created with `kubectl ws create`, navigation with paths,
 * `..`, `-`, `:`, `~`, `tree`, `current`, `--ignore-existing`, `--enter`, and namespaces created by
 * plain kubectl landing in the workspace the plugin entered.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { call, kubectlWithPlugins, pluginBinDir, startRedis, startTestServer, type Run, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
let dir: string;
let kubeconfig: string;
let binDir: string;

/** Runs real kubectl with the plugins on PATH, a private HOME and `KUBECONFIG` set. */
function kubectl(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return kubectlWithPlugins(binDir, { HOME: dir, KUBECONFIG: kubeconfig, ...env }, args);
}

/** `kubectl ws …` that must succeed. */
async function ws(...args: string[]): Promise<Run> {
  const r = await kubectl(['ws', ...args]);
  assert.equal(r.code, 0, `kubectl ws ${args.join(' ')} failed: ${r.stderr}`);
  return r;
}

/** `kubectl ws …` that must fail; returns its stderr. */
async function wsFails(...args: string[]): Promise<string> {
  const r = await kubectl(['ws', ...args]);
  assert.notEqual(r.code, 0, `kubectl ws ${args.join(' ')} should fail: ${r.stdout}`);
  return r.stderr;
}

const config = (): any => parse(readFileSync(kubeconfig, 'utf8'));
const serverOf = (cfg: any, context: string): string => {
  const ctx = cfg.contexts.find((c: any) => c.name === context).context;
  return cfg.clusters.find((c: any) => c.name === ctx.cluster).cluster.server;
};

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis);
  dir = mkdtempSync(join(tmpdir(), 'kubectl-ws-home-'));
  kubeconfig = join(dir, 'config');
  copyFileSync(srv.kubeconfigPath, kubeconfig);
  binDir = pluginBinDir({ 'kubectl-ws': 'src/cli/ws/bin.ts', 'kubectl-create-workspace': 'src/cli/ws/create-workspace-bin.ts' });
});
after(async () => {
  await srv?.stop();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (binDir) rmSync(binDir, { recursive: true, force: true });
});

describe('kubectl ws', () => {
  test('current workspace: ., current, current --short', async () => {
    assert.equal((await ws('.')).stdout, "Current workspace is 'root'.\n");
    assert.equal((await ws('current')).stdout, "Current workspace is 'root'.\n");
    assert.equal((await ws('current', '--short')).stdout, 'root\n');
    // A context whose server is not a workspace URL.
    assert.equal((await ws('current', '--context', 'base')).stdout, `Current workspace is the URL ${JSON.stringify(srv.url)}.\n`);
  });

  test('create org, wait for Ready, enter it by name', async () => {
    const r = await ws('create', 'org', '--type', 'root:organization');
    assert.match(r.stdout, /^Workspace "org" \(type root:organization\) created\. Waiting for it to be ready\.\.\.\n/);
    assert.match(r.stdout, /Workspace "org" \(type root:organization\) is ready to use\.\n$/);
    assert.match(r.stderr, /Command "create" is deprecated/);
    const ready = await call(srv, srv.creds, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/org');
    assert.equal(ready.json.status.phase, 'Ready');

    assert.equal((await ws('org')).stdout, "Current workspace is 'root:org' (type root:organization).\n");
    const cfg = config();
    assert.equal(cfg['current-context'], 'workspace.kcp.io/current');
    assert.equal(serverOf(cfg, 'workspace.kcp.io/current'), `${srv.url}/clusters/root:org`);
    // The context used before is kept as the previous one, unchanged.
    assert.deepEqual(cfg.contexts.find((c: any) => c.name === 'workspace.kcp.io/previous').context, { cluster: 'root', user: 'kcp-admin' });
    assert.equal(serverOf(cfg, 'root'), `${srv.url}/clusters/root`, 'the original cluster entry is untouched');
  });

  test('create team --enter, and a namespace in each level lands in its workspace', async () => {
    const r = await ws('create', 'team', '--enter');
    assert.match(r.stdout, /Workspace "team" \(type root:universal\) is ready to use\.\n/);
    assert.match(r.stdout, /Current workspace is 'root:org:team' \(type root:universal\)\.\n$/);
    assert.equal(serverOf(config(), 'workspace.kcp.io/current'), `${srv.url}/clusters/root:org:team`);
    // The previous context now points at the previous workspace through its own cluster entry.
    assert.equal(serverOf(config(), 'workspace.kcp.io/previous'), `${srv.url}/clusters/root:org`);

    assert.equal((await kubectl(['create', 'namespace', 'ns-team'])).code, 0);
    // As in kcp, `..` names no Workspace object, so no type is printed.
    assert.equal((await ws('..')).stdout, "Current workspace is 'root:org'.\n");
    assert.equal((await kubectl(['create', 'namespace', 'ns-org'])).code, 0);
    assert.equal((await ws(':')).stdout, "Current workspace is 'root'.\n");
    assert.equal((await kubectl(['create', 'namespace', 'ns-root'])).code, 0);

    const names = async (path: string): Promise<string[]> =>
      (await call(srv, srv.creds, 'GET', `/clusters/${path}/api/v1/namespaces`)).json.items.map((n: any) => n.metadata.name);
    const root = await names('root');
    const org = await names('root:org');
    const team = await names('root:org:team');
    assert.ok(root.includes('ns-root') && !root.includes('ns-org') && !root.includes('ns-team'), `root: ${root}`);
    assert.ok(org.includes('ns-org') && !org.includes('ns-root') && !org.includes('ns-team'), `org: ${org}`);
    assert.ok(team.includes('ns-team') && !team.includes('ns-org') && !team.includes('ns-root'), `team: ${team}`);
  });

  test('- goes back and forth; absolute paths; legacy root: prefix', async () => {
    assert.equal((await ws('-')).stdout, "Current workspace is 'root:org'.\n");
    assert.equal((await kubectl(['get', 'namespace', 'ns-org', '-o', 'name'])).stdout, 'namespace/ns-org\n');
    assert.equal((await ws('-')).stdout, "Current workspace is 'root'.\n");
    assert.equal((await ws('use', ':root:org:team')).stdout, "Current workspace is 'root:org:team' (type root:universal).\n");
    assert.equal((await kubectl(['get', 'namespace', 'ns-team', '-o', 'name'])).stdout, 'namespace/ns-team\n');
    assert.equal((await ws('..:..')).stdout, "Current workspace is 'root' (type root).\n");
    assert.equal((await ws('org:team')).stdout, "Current workspace is 'root:org:team' (type root:universal).\n");
    const legacy = await ws('root:org');
    assert.equal(legacy.stdout, "Current workspace is 'root:org' (type root:organization).\n");
    assert.match(legacy.stderr, /Note: Using 'root:' to define an absolute path is no longer supported/);
    assert.equal((await ws('cd', 'team')).stdout, "Current workspace is 'root:org:team' (type root:universal).\n");
    assert.equal((await ws('current', '--short')).stdout, 'root:org:team\n');
  });

  test('tree prints the workspaces below the current one', async () => {
    await ws(':root');
    await ws('create', 'beta', '--type', 'root:organization');
    assert.equal((await ws('tree')).stdout, '.\n└── root\n    ├── beta\n    └── org\n        └── team\n\n');
    assert.equal((await ws('tree', '--full')).stdout, '.\n└── root\n    ├── root:beta\n    └── root:org\n        └── root:org:team\n\n');
    await ws('org');
    assert.equal((await ws('tree')).stdout, '.\n└── org\n    └── team\n\n');
    const wide = (await ws('tree', '--wide')).stdout;
    assert.match(wide, /^\.\n└── org +ws=- +lc=Ready\n    └── team +ws=Ready +lc=Ready\n$/);
  });

  test('create --ignore-existing, and the errors of create', async () => {
    await ws(':root');
    const again = await ws('create', 'org', '--ignore-existing');
    assert.equal(again.stdout, 'Workspace "org" (type root:organization) already exists.\nWorkspace "org" (type root:organization) is ready to use.\n');
    assert.equal((await ws('create', 'org', '--ignore-existing', '--type', 'root:organization', '--enter')).stdout.split('\n').at(-2),
      "Current workspace is 'root:org' (type root:organization).");
    await ws('..');
    assert.match(await wsFails('create', 'org'), /^(.*\n)?Error: workspaces\.tenancy\.kcp\.io "org" already exists\n$/);
    assert.match(await wsFails('create', 'org', '--ignore-existing', '--type', 'organization'), /Error: --ignore-existing must not be used with non-absolute type path\n$/);
    assert.match(await wsFails('create', 'org', '--ignore-existing', '--type', 'root:universal'),
      /Error: workspace "org" cannot be created with type root:universal, it already exists with different type root:organization\n$/);
    assert.equal((await ws('.')).stdout, "Current workspace is 'root'.\n", 'failed commands change nothing');
  });

  test('errors: unknown workspace, above the root, invalid path, no previous', async () => {
    assert.equal(await wsFails('nope'), 'Error: workspace "root:nope" not found\n');
    assert.equal(await wsFails(':root:org:nope'), 'Error: workspace "root:org:nope" not found\n');
    // kcp: `..` of root resolves to the empty path; `:..` climbs above the top.
    assert.equal(await wsFails('..'), 'Error: invalid workspace path: ..\n');
    assert.equal(await wsFails(':..'), 'Error: cannot go up from root\n');
    assert.equal(await wsFails('Bad_Name'), 'Error: invalid workspace path: Bad_Name\n');
    assert.equal(await wsFails('--bogus'), 'Error: unknown flag: --bogus\n');
    const fresh = join(dir, 'fresh.kubeconfig');
    copyFileSync(srv.kubeconfigPath, fresh);
    const r = await kubectl(['ws', '-'], { KUBECONFIG: fresh });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'Error: no previous workspace found in kubeconfig\n');
  });

  test('home workspace: no argument and ~', async () => {
    const r = await ws();
    assert.equal(r.stdout, "Current workspace is 'user:kcp-admin'.\n");
    assert.match(r.stderr, /Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace/);
    assert.equal((await ws('-')).stdout, "Current workspace is 'root'.\n");
    assert.equal((await ws('~')).stdout, "Current workspace is 'user:kcp-admin'.\n");
    assert.equal((await kubectl(['create', 'namespace', 'ns-home'])).code, 0);
    const home = await call(srv, srv.creds, 'GET', '/clusters/user:kcp-admin/api/v1/namespaces/ns-home');
    assert.equal(home.status, 200);
    await ws(':root');
  });

  test('kubectl create workspace (the plugin kcp recommends over ws create): no deprecation notice', async () => {
    await ws(':root');
    const r = await kubectl(['create', 'workspace', 'via-create', '--type', 'root:organization']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'Workspace "via-create" (type root:organization) created. Waiting for it to be ready...\nWorkspace "via-create" (type root:organization) is ready to use.\n');
    const get = await kubectl(['get', 'workspace', 'via-create', '-o', 'jsonpath={.status.phase}']);
    assert.equal(get.stdout, 'Ready');
  });

  test('--kubeconfig and --context flags; KUBECONFIG lists', async () => {
    const other = join(dir, 'other.kubeconfig');
    copyFileSync(srv.kubeconfigPath, other);
    const before = readFileSync(kubeconfig, 'utf8');
    assert.equal((await ws('org', '--kubeconfig', other)).stdout, "Current workspace is 'root:org' (type root:organization).\n");
    assert.equal(serverOf(parse(readFileSync(other, 'utf8')), 'workspace.kcp.io/current'), `${srv.url}/clusters/root:org`);
    assert.equal(readFileSync(kubeconfig, 'utf8'), before, 'KUBECONFIG is not touched when --kubeconfig is given');

    // --context: start from the system:admin context of the other file.
    const r = await kubectl(['ws', '--context', 'system:admin', '.'], { KUBECONFIG: other });
    assert.equal(r.stdout, "Current workspace is 'system:admin'.\n");
    const base = await kubectl(['ws', ':root:org:team', '--context=base'], { KUBECONFIG: other });
    assert.equal(base.code, 1);
    assert.match(base.stderr, /^Error: current URL ".*" does not point to a workspace\n$/);
    const viaRoot = await kubectl(['ws', ':root:org:team', '--context', 'root'], { KUBECONFIG: other });
    assert.equal(viaRoot.stdout, "Current workspace is 'root:org:team' (type root:universal).\n");
    const cfg = parse(readFileSync(other, 'utf8'));
    assert.deepEqual(cfg.contexts.find((c: any) => c.name === 'workspace.kcp.io/previous').context, { cluster: 'root', user: 'kcp-admin' });

    // A KUBECONFIG list: the context and cluster entries go to the file that has them.
    const first = join(dir, 'first.kubeconfig');
    writeFileSync(first, 'apiVersion: v1\nkind: Config\ncurrent-context: root\n');
    const second = join(dir, 'second.kubeconfig');
    copyFileSync(srv.kubeconfigPath, second);
    const list = `${first}${delimiter}${second}`;
    assert.equal((await kubectl(['ws', 'org'], { KUBECONFIG: list })).stdout, "Current workspace is 'root:org' (type root:organization).\n");
    assert.equal(parse(readFileSync(first, 'utf8'))['current-context'], 'workspace.kcp.io/current');
    assert.equal((await kubectl(['get', 'namespace', 'ns-org', '-o', 'name'], { KUBECONFIG: list })).stdout, 'namespace/ns-org\n');
  });

  test('the shipped executables: the repository\'s bin/ on PATH gives kubectl the ws and create workspace plugins', async () => {
    // What the README tells users to do; needs the compiled plugin (`npm test` builds first).
    const shipped = fileURLToPath(new URL('../../bin', import.meta.url));
    const own = join(dir, 'shipped.kubeconfig');
    copyFileSync(srv.kubeconfigPath, own);
    const path = `${shipped}${delimiter}${process.env.PATH ?? ''}`;
    const created = await kubectl(['create', 'workspace', 'shipped', '--enter'], { PATH: path, KUBECONFIG: own });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /Current workspace is 'root:shipped' \(type root:organization\)\.\n$/);
    assert.equal(created.stderr, '', 'kubectl create workspace prints no deprecation notice');
    const current = await kubectl(['ws', '.'], { PATH: path, KUBECONFIG: own });
    assert.match(current.stdout, /^Current workspace is 'root:shipped'/);
  });
});
