/**
 * The `kubectl ws` plugin without a server: path arithmetic, argument interpretation, kubeconfig
 * rewriting (current / previous contexts, `-` swapping back, which file gets written), flag
 * parsing and tree rendering. Expected values follow kcp's plugin tests (kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli/pkg/workspace/plugin/use_test.go`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse } from 'yaml';
import { parseArgs } from '../../src/cli/ws/args.js';
import {
  clientConfig,
  commitWorkspace,
  CURRENT_CONTEXT,
  loadConfig,
  loadingRules,
  modifyConfig,
  PREVIOUS_CONTEXT,
  swapWorkspaces,
  type WsConfig,
} from '../../src/cli/ws/kubeconfig.js';
import {
  currentWorkspaceMessage,
  parseClusterURL,
  parseUseArgument,
  resolveDots,
  resolveTargetPath,
  rootOf,
  workspaceURL,
} from '../../src/cli/ws/paths.js';
import { alignTabs, renderTree } from '../../src/cli/ws/tree.js';
import { kubectlWs } from '../../src/cli/kubectl-ws.js';

describe('paths', () => {
  test('parseClusterURL splits the base URL and the workspace path', () => {
    const p = parseClusterURL('https://h:6443/clusters/root:org:team');
    assert.equal(p?.path, 'root:org:team');
    assert.equal(p?.base.href, 'https://h:6443/');
    assert.equal(parseClusterURL('https://h/prefix/clusters/root/api')?.path, 'root');
    assert.equal(parseClusterURL('https://h/prefix/clusters/root/api')?.base.pathname, '/prefix');
    assert.equal(parseClusterURL('https://h:6443'), undefined);
    assert.equal(parseClusterURL('https://h/clusters/Bad_Name'), undefined);
    assert.equal(parseClusterURL('not a url'), undefined);
  });

  test('workspaceURL joins as path.Join', () => {
    assert.equal(workspaceURL(new URL('https://h:6443/'), 'root:org'), 'https://h:6443/clusters/root:org');
    assert.equal(workspaceURL(new URL('https://h/prefix/'), 'root'), 'https://h/prefix/clusters/root');
  });

  test('resolveDots and rootOf', () => {
    assert.equal(resolveDots('root:foo:bar:..:bar:baz:..:baz'), 'root:foo:bar:baz');
    assert.equal(resolveDots('root:foo:.:bar:.:.:baz:.'), 'root:foo:bar:baz');
    assert.equal(resolveDots('root:foo:bar:..:..'), 'root');
    assert.equal(resolveDots('root:..'), '');
    assert.throws(() => resolveDots('..'), /cannot go up from root/);
    assert.equal(rootOf('root:org:team'), 'root');
    assert.equal(rootOf('system:admin'), 'system:admin');
  });

  test('parseUseArgument: special names, legacy root:, home directory, slashes', () => {
    assert.deepEqual(parseUseArgument('-', '/home/u', false).target, { kind: 'previous' });
    assert.deepEqual(parseUseArgument(':', '/home/u', false).target, { kind: 'root' });
    assert.deepEqual(parseUseArgument('.', '/home/u', false).target, { kind: 'current' });
    assert.deepEqual(parseUseArgument('~', '/home/u', false).target, { kind: 'home', rest: '' });
    assert.deepEqual(parseUseArgument('/home/u/bar/baz', '/home/u', false).target, { kind: 'home', rest: ':bar:baz' });
    assert.deepEqual(parseUseArgument('../..', '/home/u', false).target, { kind: 'path', path: '..:..', absolute: false });
    assert.deepEqual(parseUseArgument(':root:org', '', false).target, { kind: 'path', path: 'root:org', absolute: true });
    const legacy = parseUseArgument('root:org', '', false);
    assert.deepEqual(legacy.target, { kind: 'path', path: 'root:org', absolute: true });
    assert.match(legacy.notes[0]!.text, /^Note: Using 'root:' to define an absolute path is no longer supported/);
    assert.deepEqual(parseUseArgument('root', '', false).target, { kind: 'path', path: 'root', absolute: true });
    const none = parseUseArgument('', '', false);
    assert.deepEqual(none.target, { kind: 'home', rest: '' });
    assert.equal(none.notes[0]!.when, 'after');
    assert.deepEqual(parseUseArgument('', '', true).notes, [], '--short prints no notes');
  });

  test('resolveTargetPath: relative, absolute, invalid', () => {
    assert.equal(resolveTargetPath({ path: 'bar:baz', absolute: false }, 'root:foo', 'bar:baz'), 'root:foo:bar:baz');
    assert.equal(resolveTargetPath({ path: '..', absolute: false }, 'root:foo:bar', '..'), 'root:foo');
    assert.equal(resolveTargetPath({ path: 'system:admin', absolute: true }, 'root', ':system:admin'), 'system:admin');
    assert.throws(() => resolveTargetPath({ path: 'ju:nk§', absolute: false }, 'root', 'ju:nk§'), /^WorkspacePathError: invalid workspace path: ju:nk§$/);
    assert.throws(() => resolveTargetPath({ path: '..', absolute: false }, 'root', '..'), /invalid workspace path: \.\./);
  });

  test('currentWorkspaceMessage', () => {
    assert.equal(currentWorkspaceMessage('https://h/clusters/root:foo:bar', false), "Current workspace is 'root:foo:bar'.\n");
    assert.equal(currentWorkspaceMessage('https://h/clusters/root:org', false, { name: 'organization', path: 'root' }), "Current workspace is 'root:org' (type root:organization).\n");
    assert.equal(currentWorkspaceMessage('https://h/clusters/root', false, { name: 'root' }), "Current workspace is 'root' (type root).\n");
    assert.equal(currentWorkspaceMessage('https://h/clusters/root:foo:bar', true), 'root:foo:bar\n');
    assert.equal(currentWorkspaceMessage('https://test', false), 'Current workspace is the URL "https://test".\n');
    assert.equal(currentWorkspaceMessage('https://test', true), '');
  });
});

const base = (): WsConfig => ({
  currentContext: 'root',
  clusters: { root: { server: 'https://h/clusters/root', 'certificate-authority-data': 'Q0E=' }, other: { server: 'https://other/' } },
  contexts: { root: { cluster: 'root', user: 'admin', namespace: 'ns' }, other: { cluster: 'other', user: 'admin' } },
  users: { admin: { token: 't' } },
});

describe('kubeconfig rewriting', () => {
  test('entering from a plain context keeps it as previous and copies its cluster', () => {
    const next = commitWorkspace(base(), 'root', 'https://h/clusters/root:org');
    assert.equal(next.currentContext, CURRENT_CONTEXT);
    assert.deepEqual(next.clusters[CURRENT_CONTEXT], { server: 'https://h/clusters/root:org', 'certificate-authority-data': 'Q0E=' });
    assert.deepEqual(next.contexts[CURRENT_CONTEXT], { cluster: CURRENT_CONTEXT, user: 'admin', namespace: 'ns' });
    assert.deepEqual(next.contexts[PREVIOUS_CONTEXT], { cluster: 'root', user: 'admin', namespace: 'ns' });
    assert.equal(next.clusters[PREVIOUS_CONTEXT], undefined);
    assert.deepEqual(next.clusters['root'], base().clusters['root'], 'the original entry is untouched');
  });

  test('entering again moves the current cluster to previous; - swaps back and forth', () => {
    const first = commitWorkspace(base(), 'root', 'https://h/clusters/root:org');
    const second = commitWorkspace(first, CURRENT_CONTEXT, 'https://h/clusters/root:org:team');
    assert.equal(second.clusters[CURRENT_CONTEXT]!.server, 'https://h/clusters/root:org:team');
    assert.equal(second.clusters[PREVIOUS_CONTEXT]!.server, 'https://h/clusters/root:org');
    assert.deepEqual(second.contexts[PREVIOUS_CONTEXT], { cluster: PREVIOUS_CONTEXT, user: 'admin', namespace: 'ns' });

    const back = swapWorkspaces(second, CURRENT_CONTEXT);
    assert.equal(back.server, 'https://h/clusters/root:org');
    assert.equal(back.config.clusters[CURRENT_CONTEXT]!.server, 'https://h/clusters/root:org');
    assert.equal(back.config.clusters[PREVIOUS_CONTEXT]!.server, 'https://h/clusters/root:org:team');
    assert.equal(back.config.contexts[CURRENT_CONTEXT]!.cluster, CURRENT_CONTEXT);
    assert.equal(back.config.contexts[PREVIOUS_CONTEXT]!.cluster, PREVIOUS_CONTEXT);
    const forth = swapWorkspaces(back.config, CURRENT_CONTEXT);
    assert.equal(forth.server, 'https://h/clusters/root:org:team');
    assert.deepEqual(forth.config, { ...second, currentContext: CURRENT_CONTEXT });
  });

  test('- from the first workspace returns to the original context', () => {
    const first = commitWorkspace(base(), 'root', 'https://h/clusters/root:org');
    const back = swapWorkspaces(first, CURRENT_CONTEXT);
    assert.equal(back.server, 'https://h/clusters/root');
    assert.deepEqual(back.config.contexts[CURRENT_CONTEXT], { cluster: 'root', user: 'admin', namespace: 'ns' });
    assert.equal(back.config.contexts[PREVIOUS_CONTEXT]!.cluster, PREVIOUS_CONTEXT);
    assert.equal(back.config.clusters[PREVIOUS_CONTEXT]!.server, 'https://h/clusters/root:org');
  });

  test('- with a non-workspace previous context (kcp use_test "- with non-cluster context")', () => {
    const cfg: WsConfig = {
      currentContext: CURRENT_CONTEXT,
      clusters: { [CURRENT_CONTEXT]: { server: 'https://test/clusters/root:foo' }, other: { server: 'https://other/' } },
      contexts: { [CURRENT_CONTEXT]: { cluster: CURRENT_CONTEXT, user: 'test' }, [PREVIOUS_CONTEXT]: { cluster: 'other', user: 'other' }, other: { cluster: 'other', user: 'other' } },
      users: { test: { token: 'test' }, other: { token: 'test' } },
    };
    const { config, server } = swapWorkspaces(cfg, CURRENT_CONTEXT);
    assert.equal(server, 'https://other/');
    assert.deepEqual(config.contexts, {
      [CURRENT_CONTEXT]: { cluster: 'other', user: 'other' },
      [PREVIOUS_CONTEXT]: { cluster: PREVIOUS_CONTEXT, user: 'test' },
      other: { cluster: 'other', user: 'other' },
    });
    assert.deepEqual(config.clusters[PREVIOUS_CONTEXT], { server: 'https://test/clusters/root:foo' });
    assert.deepEqual(config.clusters[CURRENT_CONTEXT], { server: 'https://test/clusters/root:foo' });
  });

  test('errors: no previous workspace, unknown context', () => {
    assert.throws(() => swapWorkspaces(base(), 'root'), /^ConfigError: no previous workspace found in kubeconfig$/);
    assert.throws(() => commitWorkspace(base(), 'nope', 'https://h/clusters/root'), /current "nope" context not found/);
  });

  test('clientConfig applies --context and --server overrides', () => {
    assert.equal(clientConfig(base(), {}).server, 'https://h/clusters/root');
    assert.equal(clientConfig(base(), { context: 'other' }).server, 'https://other/');
    assert.equal(clientConfig(base(), { server: 'https://x/clusters/root:a' }).server, 'https://x/clusters/root:a');
    assert.throws(() => clientConfig(base(), { context: 'nope' }), /context was not found for specified context: nope/);
    assert.throws(() => clientConfig({ currentContext: '', clusters: {}, contexts: {}, users: {} }, {}), /no configuration has been provided/);
  });
});

const FILE = `apiVersion: v1
kind: Config
clusters:
- name: root
  cluster:
    server: https://h:6443/clusters/root
    certificate-authority: ca.crt
contexts:
- name: root
  context:
    cluster: root
    user: admin
current-context: root
users:
- name: admin
  user:
    token: secret
preferences: {}
`;

describe('kubeconfig files', () => {
  test('loadingRules: --kubeconfig, KUBECONFIG list, ~/.kube/config', () => {
    assert.deepEqual(loadingRules('/x', { KUBECONFIG: '/a', HOME: '/h' }), { explicitPath: '/x', precedence: ['/a'] });
    assert.deepEqual(loadingRules(undefined, { KUBECONFIG: `/a${delimiter}${delimiter}/b${delimiter}/a`, HOME: '/h' }).precedence, ['/a', '/b']);
    assert.deepEqual(loadingRules(undefined, { HOME: '/h' }).precedence, [join('/h', '.kube', 'config')]);
  });

  test('a single file is rewritten in place, relative references kept relative, unknown fields kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubectl-ws-unit-'));
    const file = join(dir, 'config');
    writeFileSync(file, FILE.replace('    token: secret\n', '    token: secret\n  extensions:\n  - name: x\n    extension: {a: 1}\n'));
    const loaded = loadConfig(loadingRules(file, {}));
    assert.equal(loaded.config.clusters['root']!['certificate-authority'], join(dir, 'ca.crt'), 'resolved on load');
    modifyConfig(loaded, commitWorkspace(loaded.config, 'root', 'https://h:6443/clusters/root:org'));
    const written = parse(readFileSync(file, 'utf8'));
    assert.equal(written['current-context'], CURRENT_CONTEXT);
    assert.deepEqual(written.clusters.map((c: any) => c.name), ['root', CURRENT_CONTEXT], 'sorted by name as client-go writes');
    assert.deepEqual(written.clusters[1].cluster, { server: 'https://h:6443/clusters/root:org', 'certificate-authority': 'ca.crt' });
    assert.equal(written.clusters[0].cluster['certificate-authority'], 'ca.crt');
    assert.deepEqual(written.contexts.map((c: any) => c.name), ['root', CURRENT_CONTEXT, PREVIOUS_CONTEXT]);
    assert.deepEqual(written.users[0].extensions, [{ name: 'x', extension: { a: 1 } }]);

    // Round trip: `-` from the rewritten file goes back to the original server.
    const again = loadConfig(loadingRules(file, {}));
    const swapped = swapWorkspaces(again.config, again.config.currentContext);
    assert.equal(swapped.server, 'https://h:6443/clusters/root');
    modifyConfig(again, swapped.config);
    const third = parse(readFileSync(file, 'utf8'));
    assert.equal(third.contexts.find((c: any) => c.name === CURRENT_CONTEXT).context.cluster, 'root');
    assert.equal(third.clusters.find((c: any) => c.name === PREVIOUS_CONTEXT).cluster.server, 'https://h:6443/clusters/root:org');
  });

  test('a KUBECONFIG list: changed entries go to their file, new ones and current-context to the first', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubectl-ws-unit-'));
    const a = join(dir, 'a');
    mkdirSync(join(dir, 'sub'));
    const b = join(dir, 'sub', 'b');
    writeFileSync(a, 'apiVersion: v1\nkind: Config\ncurrent-context: root\n');
    writeFileSync(b, FILE);
    const env = { KUBECONFIG: `${join(dir, 'missing')}${delimiter}${a}${delimiter}${b}` };
    const loaded = loadConfig(loadingRules(undefined, env));
    assert.equal(loaded.origins.clusters['root'], b);
    const first = commitWorkspace(loaded.config, 'root', 'https://h:6443/clusters/root:org');
    first.clusters['root'] = { ...first.clusters['root']!, 'tls-server-name': 'h' };
    modifyConfig(loaded, first);
    const wa = parse(readFileSync(a, 'utf8'));
    const wb = parse(readFileSync(b, 'utf8'));
    assert.equal(wa['current-context'], CURRENT_CONTEXT);
    assert.deepEqual(wa.clusters.map((c: any) => c.name), [CURRENT_CONTEXT]);
    assert.equal(wa.clusters[0].cluster['certificate-authority'], join('sub', 'ca.crt'), 'a reference stays valid from the other file');
    assert.equal(wb['current-context'], 'root');
    assert.equal(wb.clusters[0].cluster['tls-server-name'], 'h', 'a changed entry is written where it came from');
  });
});

describe('arguments', () => {
  test('commands, positionals and flags anywhere', () => {
    assert.deepEqual(parseArgs(['org']), { command: '', args: ['org'], strings: {}, bools: {} });
    assert.deepEqual(parseArgs(['-']), { command: '', args: ['-'], strings: {}, bools: {} });
    assert.deepEqual(parseArgs(['--kubeconfig', '/k', 'use', '..', '--short']),
      { command: 'use', args: ['..'], strings: { kubeconfig: '/k' }, bools: { short: true } });
    assert.deepEqual(parseArgs(['cd', ':root']).command, 'use');
    assert.deepEqual(parseArgs(['create', 'team', '--type=root:team', '--enter', '--ignore-existing=false']),
      { command: 'create', args: ['team'], strings: { type: 'root:team' }, bools: { enter: true, 'ignore-existing': false } });
    assert.deepEqual(parseArgs(['tree', '-f']).bools, { full: true });
    assert.deepEqual(parseArgs(['-n', 'x', 'current']).strings, { namespace: 'x' });
    assert.throws(() => parseArgs(['--bogus']), /^UsageError: unknown flag: --bogus$/);
    assert.throws(() => parseArgs(['create', 'x', '--type']), /flag needs an argument: --type/);
    assert.throws(() => parseArgs(['tree', '--enter']), /unknown flag: --enter/);
  });

  test('errors are one line on stderr with exit code 1', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t), env: { KUBECONFIG: join(mkdtempSync(join(tmpdir(), 'kubectl-ws-unit-')), 'none') } };
    assert.equal(await kubectlWs(['.'], io), 1);
    assert.deepEqual(err, ['Error: invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable\n']);
    err.length = 0;
    assert.equal(await kubectlWs(['a', 'b'], io), 1);
    assert.deepEqual(err, ['Error: accepts at most 1 arg(s), received 2\n']);
    assert.equal(await kubectlWs(['--help'], io), 0);
    assert.match(out.join(''), /kubectl ws/);
  });
});

describe('tree', () => {
  test('treeprint layout', () => {
    const text = renderTree([{ label: 'root', children: [
      { label: 'a', children: [{ label: 'a1', children: [] }, { label: 'a2', children: [] }] },
      { label: 'b', children: [{ label: 'b1', children: [] }] },
    ] }]);
    assert.equal(text, [
      '.',
      '└── root',
      '    ├── a',
      '    │   ├── a1',
      '    │   └── a2',
      '    └── b',
      '        └── b1',
      '',
    ].join('\n'));
  });

  test('--wide columns are aligned as tabwriter with padding 2', () => {
    assert.equal(alignTabs('.\n└── org\tws=-\tlc=Ready\n    └── team\tws=Ready\tlc=Ready\n'),
      '.\n└── org       ws=-      lc=Ready\n    └── team  ws=Ready  lc=Ready\n');
  });
});
