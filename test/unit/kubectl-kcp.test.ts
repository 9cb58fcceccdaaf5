/**
 * The `kubectl kcp` plugin without a kcp server: flag parsing (pflag style, string slices,
 * durations), the argument and claim rules of `bind apiexport` with kcp's messages
 * (kcp-dev/kcp `staging/src/github.com/kcp-dev/cli/pkg/bind/plugin/bind.go`), the APIBinding it
 * builds, help and `ws` delegation, and the create-then-poll run against a small fake HTTP server.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { BIND_FLAGS, CONNECTION_FLAGS, parseDuration, parseFlags, UsageError } from '../../src/cli/kcp/args.js';
import {
  bindOptions,
  claimsFromExport,
  DEFAULT_TIMEOUT_MS,
  INVALID_REFERENCE,
  MISSING_REFERENCE,
  newAPIBinding,
  parsePermissionClaim,
  splitExportReference,
  type BindOptions,
} from '../../src/cli/kcp/bind.js';
import { kubectlKcp } from '../../src/cli/kcp/main.js';

const SPECS = [...CONNECTION_FLAGS, ...BIND_FLAGS];

/** `bindOptions` of the arguments after `kubectl kcp bind apiexport`. */
const opts = (...argv: string[]): BindOptions => bindOptions(parseFlags(argv, SPECS));
/** The UsageError message of `bindOptions` for these arguments. */
const usageError = (...argv: string[]): string => {
  try { opts(...argv); } catch (err) {
    assert.ok(err instanceof UsageError, String(err));
    return err.message;
  }
  assert.fail(`no error for ${argv.join(' ')}`);
};

/** Runs the plugin in-process; returns its exit code and output. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await kubectlKcp(argv, { stdout: (t) => { stdout += t; }, stderr: (t) => { stderr += t; }, env }, { bindPollMs: 10 });
  return { code, stdout, stderr };
}

describe('flags', () => {
  test('pflag forms: --f v, --f=v, -n v, -nv, booleans, --', () => {
    const f = parseFlags(['bind', '--name', 'b', 'apiexport', '--kubeconfig=/k', '-nns', '--accept-all-permission-claims', 'x', '--', '--not-a-flag'], SPECS);
    assert.deepEqual(f.args, ['bind', 'apiexport', 'x', '--not-a-flag']);
    assert.deepEqual(f.strings, { name: 'b', kubeconfig: '/k', namespace: 'ns' });
    assert.deepEqual(f.bools, { 'accept-all-permission-claims': true });
    assert.deepEqual(parseFlags(['--reject-all-permission-claims=false'], SPECS).bools, { 'reject-all-permission-claims': false });
  });

  test('string slices: repeated and comma-separated', () => {
    const f = parseFlags(['--accept-permission-claim', 'secrets.core,configmaps.core', '--accept-permission-claim=widgets.example.com', '--reject-permission-claim', ''], SPECS);
    assert.deepEqual(f.slices, { 'accept-permission-claim': ['secrets.core', 'configmaps.core', 'widgets.example.com'], 'reject-permission-claim': [] });
  });

  test('errors with pflag\'s messages', () => {
    assert.throws(() => parseFlags(['--bogus'], SPECS), { message: 'unknown flag: --bogus' });
    assert.throws(() => parseFlags(['-q'], SPECS), { message: "unknown shorthand flag: 'q' in -q" });
    assert.throws(() => parseFlags(['--name'], SPECS), { message: 'flag needs an argument: --name' });
    assert.throws(() => parseFlags(['--timeout', '30'], SPECS), { message: 'invalid argument "30" for "--timeout" flag: time: invalid duration "30"' });
    assert.throws(() => parseFlags(['--accept-all-permission-claims=yes'], SPECS), /strconv.ParseBool: parsing "yes": invalid syntax/);
  });

  test('Go durations', () => {
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('1.5h'), 5_400_000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('0'), 0);
    assert.equal(parseDuration('-1s'), -1000);
    for (const bad of ['', '30', 's', '1x', '1s2', '--1s']) assert.equal(parseDuration(bad), undefined, bad);
  });
});

describe('bind apiexport arguments', () => {
  test('the reference: last segment is the export, the rest its workspace path', () => {
    assert.deepEqual(splitExportReference('root:org:ws:export-name'), { path: 'root:org:ws', name: 'export-name' });
    assert.deepEqual(splitExportReference('export'), { path: '', name: 'export' });
    const o = opts('root:org:ws:export-name');
    assert.deepEqual(o, {
      exportPath: 'root:org:ws', exportName: 'export-name', bindingName: 'export-name', timeoutMs: DEFAULT_TIMEOUT_MS,
      accepted: [], rejected: [], acceptAll: false, rejectAll: false,
    });
    // A logical cluster name is a valid path too.
    assert.equal(opts('2x5nd3awx0a7ty4j:export').exportPath, '2x5nd3awx0a7ty4j');
  });

  test('--name and --timeout', () => {
    const o = opts('root:p:e', '--name', 'mine', '--timeout', '2m');
    assert.equal(o.bindingName, 'mine');
    assert.equal(o.timeoutMs, 120_000);
  });

  test('missing and invalid references', () => {
    assert.equal(usageError(), MISSING_REFERENCE);
    assert.equal(MISSING_REFERENCE, '`root:ws:apiexport_object` reference to bind is required as an argument');
    assert.equal(INVALID_REFERENCE, 'fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`');
    for (const bad of ['export', ':export', 'Root:export', 'root::export', 'root:-x:export', '*:export', 'root:', 'root:a_b:export']) {
      assert.equal(usageError(bad), INVALID_REFERENCE, bad);
    }
    assert.equal(usageError('root:a:e', 'extra'), 'accepts at most 1 arg(s), received 2');
  });

  test('claims: resource.group split at the first dot; core is the empty group', () => {
    assert.deepEqual(parsePermissionClaim('configmaps.core'), { resource: 'configmaps', group: '' });
    assert.deepEqual(parsePermissionClaim('configmaps.'), { resource: 'configmaps', group: '' });
    assert.deepEqual(parsePermissionClaim('widgets.example.com'), { resource: 'widgets', group: 'example.com' });
    assert.equal(parsePermissionClaim('configmaps'), undefined);
    assert.equal(parsePermissionClaim('.core'), undefined);
    const o = opts('root:p:e', '--accept-permission-claim', 'secrets.core,configmaps.core', '--accept-permission-claim', 'widgets.example.com', '--reject-permission-claim', 'leases.coordination.k8s.io');
    assert.deepEqual(o.accepted, [{ resource: 'secrets', group: '' }, { resource: 'configmaps', group: '' }, { resource: 'widgets', group: 'example.com' }]);
    assert.deepEqual(o.rejected, [{ resource: 'leases', group: 'coordination.k8s.io' }]);
    assert.equal(usageError('root:p:e', '--accept-permission-claim', 'configmaps,secrets.core,x'),
      'invalid accepted permission claims: [invalid permission claim "configmaps" invalid permission claim "x"]');
    assert.equal(usageError('root:p:e', '--reject-permission-claim', 'nope'), 'invalid rejected permission claims: [invalid permission claim "nope"]');
  });

  test('conflicting claim flags', () => {
    assert.equal(usageError('root:p:e', '--accept-permission-claim', 'configmaps.core', '--reject-permission-claim', 'configmaps.'),
      'accepted permission claim configmaps.core conflicts with rejected permission claim configmaps.core');
    assert.equal(usageError('root:p:e', '--accept-all-permission-claims', '--reject-all-permission-claims'),
      'cannot use both --accept-all-permission-claims and --reject-all-permission-claims');
    assert.equal(usageError('root:p:e', '--accept-all-permission-claims', '--accept-permission-claim', 'a.b'),
      'cannot use --accept-all-permission-claims with --accept-permission-claim');
    assert.equal(usageError('root:p:e', '--accept-all-permission-claims', '--reject-permission-claim', 'a.b'),
      'cannot use --accept-all-permission-claims together with --reject-permission-claim');
    assert.equal(usageError('root:p:e', '--reject-all-permission-claims', '--reject-permission-claim', 'a.b'),
      'cannot use --reject-all-permission-claims with --reject-permission-claim');
    assert.equal(usageError('root:p:e', '--reject-all-permission-claims', '--accept-permission-claim', 'a.b'),
      'cannot use --reject-all-permission-claims together with --accept-permission-claim');
    // kcp checks the flag combinations before the reference.
    assert.equal(usageError('bad', '--accept-all-permission-claims', '--reject-all-permission-claims'),
      'cannot use both --accept-all-permission-claims and --reject-all-permission-claims');
  });

  test('the APIBinding and the claims of an export', () => {
    assert.deepEqual(newAPIBinding({ bindingName: 'b', exportPath: 'root:p', exportName: 'e' }, []), {
      apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'b' },
      spec: { reference: { export: { path: 'root:p', name: 'e' } } },
    });
    const exp = { spec: { permissionClaims: [
      { group: '', resource: 'configmaps', verbs: ['get', 'list'] },
      { group: 'example.com', resource: 'things', identityHash: 'abc', verbs: ['*'], defaultSelector: { matchLabels: { a: 'b' } } },
    ] } };
    assert.deepEqual(claimsFromExport(exp, 'Rejected'), [
      { resource: 'configmaps', verbs: ['get', 'list'], selector: { matchAll: true }, state: 'Rejected' },
      { group: 'example.com', resource: 'things', identityHash: 'abc', verbs: ['*'], selector: { matchLabels: { a: 'b' } }, state: 'Rejected' },
    ]);
    assert.deepEqual(claimsFromExport({ spec: {} }, 'Accepted'), []);
  });
});

describe('kubectl kcp', () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'kubectl-kcp-unit-')); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  test('help and unknown commands', async () => {
    for (const argv of [[], ['--help'], ['-h']]) {
      const r = await run(argv);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /kubectl kcp \[command\]/);
      assert.match(r.stdout, /bind apiexport/);
    }
    assert.match((await run(['bind'])).stdout, /kubectl kcp bind \[command\]/);
    const help = await run(['bind', 'apiexport', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /kubectl kcp bind apiexport <workspace_path:apiexport-name> \[flags\]/);
    assert.deepEqual(await run(['crd']), { code: 1, stdout: '', stderr: 'Error: unknown command "crd" for "kcp"\n' });
    assert.deepEqual(await run(['bind', 'nope']), { code: 1, stdout: '', stderr: 'Error: unknown command "nope" for "kcp bind"\n' });
  });

  test('usage errors exit 1 with Error: on stderr, before the kubeconfig is read', async () => {
    const env = { KUBECONFIG: join(dir, 'does-not-exist') };
    assert.deepEqual(await run(['bind', 'apiexport'], env), { code: 1, stdout: '', stderr: `Error: ${MISSING_REFERENCE}\n` });
    assert.deepEqual(await run(['bind', 'apiexport', 'widgets'], env), { code: 1, stdout: '', stderr: `Error: ${INVALID_REFERENCE}\n` });
    assert.deepEqual(await run(['bind', 'apiexport', 'root:a:w', '--timeout', 'x'], env), { code: 1, stdout: '', stderr: 'Error: invalid argument "x" for "--timeout" flag: time: invalid duration "x"\n' });
  });

  test('ws and workspace run the ws plugin', async () => {
    const kubeconfig = join(dir, 'ws.kubeconfig');
    writeFileSync(kubeconfig, stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1/clusters/root:org' } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    }));
    assert.deepEqual(await run(['ws', 'current', '--short'], { KUBECONFIG: kubeconfig }), { code: 0, stdout: 'root:org\n', stderr: '' });
    assert.deepEqual(await run(['--kubeconfig', kubeconfig, 'workspace', '.']), { code: 0, stdout: "Current workspace is 'root:org'.\n", stderr: '' });
  });

  describe('against a fake server', () => {
    let server: Server;
    let url: string;
    let kubeconfig: string;
    const requests: { method: string; path: string; body: any }[] = [];
    /** How many GETs of the binding answer it unbound before it is Bound (Infinity: never). */
    let unboundReads = 0;
    let reads = 0;
    let createStatus = 201;

    before(async () => {
      server = createServer((req: IncomingMessage, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
          requests.push({ method: req.method!, path: req.url!, body });
          res.setHeader('content-type', 'application/json');
          if (req.method === 'GET' && req.url === '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets') {
            res.end(JSON.stringify({ kind: 'APIExport', spec: { permissionClaims: [{ group: '', resource: 'configmaps', verbs: ['get'] }] } }));
          } else if (req.method === 'POST' && req.url === '/clusters/root:consumer/apis/apis.kcp.io/v1alpha2/apibindings') {
            res.statusCode = createStatus;
            if (createStatus === 403) {
              res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'unable to create APIBinding: no permission to bind to export root:provider:widgets' }));
            } else res.end(JSON.stringify({ ...body, status: {} }));
          } else if (req.method === 'GET' && req.url!.startsWith('/clusters/root:consumer/apis/apis.kcp.io/v1alpha2/apibindings/')) {
            reads++;
            const name = req.url!.split('/').pop();
            res.end(JSON.stringify({ metadata: { name }, status: { phase: reads > unboundReads ? 'Bound' : 'Binding' } }));
          } else {
            res.statusCode = 404;
            res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: `no ${req.url}` }));
          }
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const addr = server.address() as { port: number };
      url = `http://127.0.0.1:${addr.port}`;
      kubeconfig = join(dir, 'fake.kubeconfig');
      writeFileSync(kubeconfig, stringify({
        apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
        clusters: [{ name: 'c', cluster: { server: `${url}/clusters/root:consumer` } }, { name: 'plain', cluster: { server: url } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }, { name: 'plain', context: { cluster: 'plain', user: 'u' } }],
      }));
    });
    after(() => new Promise<void>((r) => server.close(() => r())));
    const reset = (unbound: number, status = 201) => { requests.length = 0; reads = 0; unboundReads = unbound; createStatus = status; };

    test('creates the binding in the current workspace and polls until Bound', async () => {
      reset(3);
      const r = await run(['bind', 'apiexport', 'root:provider:widgets', '--accept-permission-claim', 'configmaps.core', '--reject-permission-claim', 'secrets.core'], { KUBECONFIG: kubeconfig });
      assert.deepEqual(r, { code: 0, stdout: 'apibinding widgets created. Waiting to successfully bind ...\nwidgets created and bound.\n', stderr: '' });
      assert.equal(requests[0]!.method, 'POST');
      assert.deepEqual(requests[0]!.body, {
        apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'widgets' },
        spec: {
          reference: { export: { path: 'root:provider', name: 'widgets' } },
          permissionClaims: [
            { resource: 'configmaps', verbs: ['*'], selector: { matchAll: true }, state: 'Accepted' },
            { resource: 'secrets', verbs: ['*'], selector: { matchAll: true }, state: 'Rejected' },
          ],
        },
      });
      assert.equal(reads, 4);
      assert.ok(requests.slice(1).every((q) => q.method === 'GET' && q.path.endsWith('/apibindings/widgets')));
    });

    test('--accept-all-permission-claims reads the export first', async () => {
      reset(0);
      const r = await run(['bind', 'apiexport', 'root:provider:widgets', '--accept-all-permission-claims', '--name', 'all'], { KUBECONFIG: kubeconfig });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(requests[0]!.path, '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets');
      assert.deepEqual(requests[1]!.body.spec.permissionClaims, [{ resource: 'configmaps', verbs: ['get'], selector: { matchAll: true }, state: 'Accepted' }]);
      assert.equal(requests[1]!.body.metadata.name, 'all');
      const missing = await run(['bind', 'apiexport', 'root:provider:nope', '--reject-all-permission-claims'], { KUBECONFIG: kubeconfig });
      assert.deepEqual(missing, { code: 1, stdout: '', stderr: `Error: failed to get APIExport "nope": no /clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/nope\n` });
    });

    test('timeout, server errors, a context that is not a workspace', async () => {
      reset(Infinity);
      const t = await run(['bind', 'apiexport', 'root:provider:widgets', '--timeout', '100ms'], { KUBECONFIG: kubeconfig });
      assert.deepEqual(t, { code: 1, stdout: 'apibinding widgets created. Waiting to successfully bind ...\n', stderr: 'Error: could not bind widgets: timed out waiting for the condition\n' });
      assert.ok(reads >= 2, `reads: ${reads}`);

      reset(0, 403);
      const f = await run(['bind', 'apiexport', 'root:provider:widgets'], { KUBECONFIG: kubeconfig });
      assert.deepEqual(f, { code: 1, stdout: '', stderr: 'Error: failed to create APIBinding: unable to create APIBinding: no permission to bind to export root:provider:widgets\n' });

      reset(0);
      const plain = await run(['bind', 'apiexport', 'root:provider:widgets', '--context', 'plain'], { KUBECONFIG: kubeconfig });
      assert.deepEqual(plain, { code: 1, stdout: '', stderr: `Error: current URL "${url}" does not point to workspace\n` });
      const server = await run(['bind', 'apiexport', 'root:provider:widgets', '--context', 'plain', '--server', `${url}/clusters/root:consumer`], { KUBECONFIG: kubeconfig });
      assert.equal(server.code, 0, server.stderr);
      assert.equal(requests.length, 2);
    });
  });
});
