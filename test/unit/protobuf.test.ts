/**
 * Kubernetes protobuf request bodies (src/apimachinery/protobuf.ts).
 *
 * The first group of tests captures the bodies real kubectl sends (it uses
 * `application/vnd.kubernetes.protobuf` for its typed clients since 1.32) to a throwaway plain-HTTP
 * server and checks the decoded objects twice: against literal expectations and against the JSON
 * kubectl itself prints for the same object (`--dry-run=client -o json`). The remaining tests use a
 * minimal protobuf writer defined here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StatusError } from '../../src/apimachinery/errors.js';
import {
  PROTOBUF_KINDS, PROTOBUF_SCHEMA, decodeKubernetesProtobuf, decodeProtobufMessage, encodeKubernetesProtobuf, encodeProtobufMessage, isKubernetesProtobuf,
  protobufMessageFor, type ProtobufMessage,
} from '../../src/apimachinery/protobuf.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { CSR_DESCRIPTOR } from '../../src/certificates/csr.js';
import { FLOW_SCHEMA_DESCRIPTOR, PRIORITY_LEVEL_DESCRIPTOR } from '../../src/flowcontrol/descriptors.js';

const execFileP = promisify(execFile);

// ---------------------------------------------------------------------------------------------
// A minimal protobuf writer (test-only).
// ---------------------------------------------------------------------------------------------

/** Base-128 varint of a 64-bit two's-complement value. */
function varint(v: number | bigint): Buffer {
  let n = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do {
    let b = Number(n & 0x7fn);
    n >>= 7n;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return Buffer.from(out);
}
const key = (no: number, wt: number): Buffer => varint(no * 8 + wt);
/** A varint field (bool, int32, int64). */
const int = (no: number, v: number | bigint | boolean): Buffer =>
  Buffer.concat([key(no, 0), varint(typeof v === 'boolean' ? Number(v) : v)]);
/** A length-delimited field (string, bytes). */
const str = (no: number, s: string | Buffer): Buffer => {
  const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  return Buffer.concat([key(no, 2), varint(b.length), b]);
};
/** An embedded message field. */
const msg = (no: number, ...parts: Buffer[]): Buffer => str(no, Buffer.concat(parts));
/** One `map<string, V>` entry; `value` is the already-encoded field 2 (omit it for an absent value). */
const entry = (no: number, k: string, value?: Buffer): Buffer => msg(no, str(1, k), ...(value ? [value] : []));
/** A meta/v1 Time / MicroTime field. */
const ts = (no: number, seconds: number, nanos = 0): Buffer => msg(no, int(1, seconds), int(2, nanos));
const MAGIC = Buffer.from('k8s\x00', 'latin1');
/** The protobuf serializer's envelope: magic + runtime.Unknown{typeMeta, raw, contentEncoding, contentType}. */
const envelope = (apiVersion: string, kind: string, raw: Buffer): Buffer =>
  Buffer.concat([MAGIC, msg(1, str(1, apiVersion), str(2, kind)), str(2, raw), str(3, ''), str(4, '')]);

const unix = (iso: string): number => Date.parse(iso) / 1000;

function assertStatus(fn: () => unknown, code: number, reason: string, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof StatusError, `expected StatusError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.reason, reason);
    if (message) assert.match(err.message, message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Real kubectl bodies.
// ---------------------------------------------------------------------------------------------

interface Captured { method: string; path: string; contentType: string | undefined; body: Buffer }

/** A fake kube-apiserver: minimal discovery, and POSTs answered with the decoded object as JSON. */
async function startFakeApiserver(): Promise<{ url: string; captured: Captured[]; server: Server }> {
  const resource = (name: string, kind: string, namespaced: boolean, verbs = ['create', 'get', 'list', 'delete']) =>
    ({ name, singularName: '', namespaced, kind, verbs });
  const group = (g: string) => ({ name: g, versions: [{ groupVersion: `${g}/v1`, version: 'v1' }], preferredVersion: { groupVersion: `${g}/v1`, version: 'v1' } });
  const docs: Record<string, unknown> = {
    '/version': { major: '1', minor: '32', gitVersion: 'v1.32.0' },
    '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
    '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('rbac.authorization.k8s.io'), group('authorization.k8s.io')] },
    '/api/v1': {
      kind: 'APIResourceList', groupVersion: 'v1', resources: [
        resource('pods', 'Pod', true), resource('configmaps', 'ConfigMap', true), resource('secrets', 'Secret', true),
        resource('namespaces', 'Namespace', false), resource('serviceaccounts', 'ServiceAccount', true),
        resource('resourcequotas', 'ResourceQuota', true),
      ],
    },
    '/apis/rbac.authorization.k8s.io/v1': {
      kind: 'APIResourceList', groupVersion: 'rbac.authorization.k8s.io/v1', resources: [
        resource('roles', 'Role', true), resource('rolebindings', 'RoleBinding', true),
        resource('clusterroles', 'ClusterRole', false), resource('clusterrolebindings', 'ClusterRoleBinding', false),
      ],
    },
    '/apis/authorization.k8s.io/v1': {
      kind: 'APIResourceList', groupVersion: 'authorization.k8s.io/v1', resources: [
        resource('selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, ['create']),
        resource('selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, ['create']),
      ],
    },
  };
  const captured: Captured[] = [];
  const readBody = (req: IncomingMessage): Promise<Buffer> => new Promise((res, rej) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => res(Buffer.concat(chunks)));
    req.on('error', rej);
  });
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const send = (code: number, obj: unknown): void => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (req.method === 'GET' && docs[path]) return send(200, docs[path]);
      if (req.method === 'POST') {
        captured.push({ method: req.method, path, contentType: req.headers['content-type'], body });
        try {
          const obj = isKubernetesProtobuf(req.headers['content-type'])
            ? decodeKubernetesProtobuf(body) : JSON.parse(body.toString('utf8')) as Record<string, unknown>;
          if (obj.kind === 'SelfSubjectAccessReview') obj.status = { allowed: true };
          if (obj.kind === 'SelfSubjectRulesReview') {
            obj.status = { resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], nonResourceRules: [], incomplete: false };
          }
          return send(201, obj);
        } catch (err) {
          const status = err instanceof StatusError ? err.toStatus() : { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500, message: String(err) };
          return send(status.code, status);
        }
      }
      send(404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, captured, server };
}

async function kubectlAvailable(): Promise<boolean> {
  try { await execFileP('kubectl', ['version', '--client']); return true; } catch { return false; }
}

/** Drops `creationTimestamp: null` (kubectl 1.32 writes it; the current ObjectMeta tags it `omitzero`). */
function withoutNullCreationTimestamp(obj: Record<string, unknown>): Record<string, unknown> {
  const meta = obj.metadata as Record<string, unknown> | undefined;
  if (meta && meta.creationTimestamp === null) {
    const { creationTimestamp: _drop, ...rest } = meta;
    return { ...obj, metadata: rest };
  }
  return obj;
}

test('real kubectl protobuf bodies decode to the JSON kubectl would send', async (t) => {
  assert.ok(await kubectlAvailable(), 'kubectl must be on PATH (the test decodes real kubectl request bodies)');
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pb-kubectl-'));
  const api = await startFakeApiserver();
  t.after(() => { api.server.close(); rmSync(dir, { recursive: true, force: true }); });
  const kubectl = async (...args: string[]): Promise<string> => {
    const { stdout } = await execFileP('kubectl', ['--server', api.url, '--cache-dir', join(dir, 'cache'), '--request-timeout=20s', ...args],
      { env: { ...process.env, KUBECONFIG: join(dir, 'no-kubeconfig'), HOME: dir }, timeout: 60_000 });
    return stdout;
  };

  /** Runs a kubectl command, returns the single protobuf body it POSTed, decoded. */
  const capture = async (args: string[], expectOut: RegExp, path: string): Promise<Record<string, unknown>> => {
    const before = api.captured.length;
    const out = await kubectl(...args);
    assert.match(out, expectOut, `kubectl ${args.join(' ')}`);
    const posts = api.captured.slice(before);
    assert.equal(posts.length, 1, `one POST for kubectl ${args.join(' ')}`);
    const post = posts[0]!;
    assert.equal(post.path, path);
    assert.equal(post.contentType, 'application/vnd.kubernetes.protobuf');
    assert.ok(isKubernetesProtobuf(post.contentType));
    assert.deepEqual([...post.body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    return decodeKubernetesProtobuf(post.body);
  };

  const cases: Array<{ args: string[]; out: RegExp; path: string; want: Record<string, unknown>; oracle: boolean }> = [
    {
      args: ['create', 'configmap', 'x', '--from-literal=a=b', '--from-literal=c=d', '-n', 'default'],
      out: /configmap\/x created/, path: '/api/v1/namespaces/default/configmaps', oracle: true,
      want: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' }, data: { a: 'b', c: 'd' } },
    },
    {
      args: ['create', 'namespace', 'foo'], out: /namespace\/foo created/, path: '/api/v1/namespaces', oracle: true,
      want: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'foo' }, spec: {}, status: {} },
    },
    {
      args: ['create', 'secret', 'generic', 's', '--from-literal=k=v', '--from-literal=empty='],
      out: /secret\/s created/, path: '/api/v1/namespaces/default/secrets', oracle: true,
      want: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: 'dg==', empty: '' } },
    },
    {
      args: ['create', 'clusterrolebinding', 'b', '--clusterrole=view', '--user=u'],
      out: /clusterrolebinding.rbac.authorization.k8s.io\/b created/, path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', oracle: true,
      want: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'b' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'u' }],
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      },
    },
    {
      args: ['create', 'role', 'r', '--verb=get,list', '--resource=pods,configmaps', '--resource-name=x', '-n', 'default'],
      out: /role.rbac.authorization.k8s.io\/r created/, path: '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', oracle: true,
      want: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r', namespace: 'default' },
        rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'configmaps'], resourceNames: ['x'] }],
      },
    },
    {
      args: ['create', 'rolebinding', 'rb', '--role=r', '--user=u', '--group=g', '--serviceaccount=default:sa', '-n', 'default'],
      out: /rolebinding.rbac.authorization.k8s.io\/rb created/, path: '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', oracle: true,
      want: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'rb', namespace: 'default' },
        subjects: [
          { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'u' },
          { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'g' },
          { kind: 'ServiceAccount', name: 'sa', namespace: 'default' },
        ],
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
      },
    },
    {
      // Go's `rules` has no omitempty: a nil slice is `null`.
      args: ['create', 'clusterrole', 'agg', '--aggregation-rule=a=b'],
      out: /clusterrole.rbac.authorization.k8s.io\/agg created/, path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', oracle: true,
      want: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'agg' }, rules: null,
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] },
      },
    },
    {
      args: ['create', 'clusterrole', 'cr', '--verb=get', '--non-resource-url=/healthz'],
      out: /clusterrole.rbac.authorization.k8s.io\/cr created/, path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', oracle: true,
      want: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'cr' },
        rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      },
    },
    {
      args: ['create', 'serviceaccount', 'sa1', '-n', 'default'],
      out: /serviceaccount\/sa1 created/, path: '/api/v1/namespaces/default/serviceaccounts', oracle: true,
      want: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa1', namespace: 'default' } },
    },
    {
      // Quantities arrive in canonical form ("1000m" is marshalled as "1").
      args: ['create', 'quota', 'q', '--hard=pods=10,cpu=1000m', '--scopes=BestEffort'],
      out: /resourcequota\/q created/, path: '/api/v1/namespaces/default/resourcequotas', oracle: true,
      want: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { cpu: '1', pods: '10' }, scopes: ['BestEffort'] }, status: {} },
    },
    {
      args: ['auth', 'can-i', 'list', 'pods', '--subresource=log', '-n', 'default'],
      out: /^yes$/m, path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', oracle: false,
      want: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', metadata: {},
        spec: { resourceAttributes: { namespace: 'default', verb: 'list', resource: 'pods', subresource: 'log' } },
        status: { allowed: false },
      },
    },
    {
      args: ['auth', 'can-i', 'get', '/healthz'],
      out: /^yes$/m, path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', oracle: false,
      want: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', metadata: {},
        spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } }, status: { allowed: false },
      },
    },
    {
      args: ['auth', 'can-i', '--list', '-n', 'default'],
      out: /pods\s+\[\]\s+\[\]\s+\[get\]/, path: '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', oracle: false,
      want: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', metadata: {},
        spec: { namespace: 'default' }, status: { resourceRules: null, nonResourceRules: null, incomplete: false },
      },
    },
  ];

  for (const c of cases) {
    const got = await capture(c.args, c.out, c.path);
    assert.deepEqual(got, c.want, `kubectl ${c.args.join(' ')}`);
    if (c.oracle) {
      // kubectl's own JSON encoding of the very object it sent.
      const printed = JSON.parse(await kubectl(...c.args, '--dry-run=client', '-o', 'json')) as Record<string, unknown>;
      assert.deepEqual(got, withoutNullCreationTimestamp(printed), `oracle: kubectl ${c.args.join(' ')}`);
    }
  }

  // A truncated kubectl body: every cut inside the typeMeta or the raw object is malformed.
  const body = api.captured.find((p) => p.path === '/api/v1/namespaces/default/configmaps')!.body;
  const rawKeyAt = 4 + 2 + body[5]!; // magic, typeMeta key + length, typeMeta
  assert.equal(body[rawKeyAt], 0x12); // raw: field 2, length-delimited
  assert.ok(body[rawKeyAt + 1]! < 0x80); // one-byte length
  const rawEnd = rawKeyAt + 2 + body[rawKeyAt + 1]!; // contentEncoding and contentType ("") follow
  for (let cut = 4; cut < rawEnd; cut++) {
    if (cut === rawKeyAt) {
      // Ends cleanly after typeMeta: an object without raw data is the zero object.
      assert.deepEqual(decodeKubernetesProtobuf(body.subarray(0, cut)), { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} });
      continue;
    }
    assertStatus(() => decodeKubernetesProtobuf(body.subarray(0, cut)), 400, 'BadRequest');
  }
  assert.deepEqual(decodeKubernetesProtobuf(body.subarray(0, rawEnd)), cases[0]!.want);
});

// ---------------------------------------------------------------------------------------------
// Writer-encoded bodies.
// ---------------------------------------------------------------------------------------------

test('ObjectMeta: every field, Go JSON emission rules, unknown fields skipped', () => {
  const fieldsV1 = '{"f:data":{"f:a":{}}}';
  const meta = Buffer.concat([
    str(1, 'cm'), str(2, 'cm-'), str(3, 'ns'), str(4, ''), str(5, '0b1e0f3c-1111-2222-3333-444455556666'),
    str(6, '42'), int(7, 5_000_000_000), ts(8, unix('2024-05-06T07:08:09Z'), 999_999_999),
    ts(9, unix('2024-05-07T00:00:00Z')), int(10, 0),
    entry(11, 'app', str(2, 'web')), entry(11, 'tier', str(2, '')), entry(12, 'note', str(2, 'x=y')), entry(12, 'novalue'),
    msg(13, str(1, 'ReplicaSet'), str(3, 'rs'), str(4, 'u-1'), str(5, 'apps/v1'), int(6, true), int(7, false)),
    msg(13, str(1, 'Thing'), str(3, 't'), str(4, ''), str(5, 'example.com/v1')),
    str(14, 'example.com/cleanup'), str(14, 'other'),
    msg(17, str(1, 'kubectl'), str(2, 'Update'), str(3, 'v1'), ts(4, unix('2024-01-01T00:00:00Z')), str(6, 'FieldsV1'),
      msg(7, str(1, fieldsV1)), str(8, '')),
    // Unknown fields of every wire type: varint, fixed64, length-delimited, group, fixed32.
    int(99, 7), key(100, 1), Buffer.alloc(8), str(101, 'junk'), key(102, 3), int(1, 1), str(2, 'in group'), key(102, 4),
    key(103, 5), Buffer.alloc(4),
  ]);
  const got = decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', Buffer.concat([msg(1, meta), int(4, false)])));
  assert.deepEqual(got, {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: 'cm', generateName: 'cm-', namespace: 'ns', uid: '0b1e0f3c-1111-2222-3333-444455556666', resourceVersion: '42',
      generation: 5_000_000_000, creationTimestamp: '2024-05-06T07:08:09Z', deletionTimestamp: '2024-05-07T00:00:00Z',
      deletionGracePeriodSeconds: 0, labels: { app: 'web', tier: '' }, annotations: { note: 'x=y', novalue: '' },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u-1', controller: true, blockOwnerDeletion: false },
        { apiVersion: 'example.com/v1', kind: 'Thing', name: 't', uid: '' },
      ],
      finalizers: ['example.com/cleanup', 'other'],
      managedFields: [{
        manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:a': {} } },
      }],
    },
    immutable: false,
  });
});

test('ConfigMap and Secret: bytes maps are base64, explicitly empty values survive', () => {
  const cm = Buffer.concat([
    msg(1, str(1, 'c'), msg(8, Buffer.alloc(0))), entry(2, 'k', str(2, 'v')), entry(2, 'e', str(2, '')),
    entry(3, 'bin', str(2, Buffer.from([0, 1, 2, 255]))), entry(3, 'none'), int(4, true),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', cm)), {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' },
    immutable: true, data: { k: 'v', e: '' }, binaryData: { bin: 'AAEC/w==', none: '' },
  });
  const secret = Buffer.concat([
    msg(1, str(1, 's'), str(3, 'ns')), entry(2, 'password', str(2, 'hunter2')), str(3, 'kubernetes.io/basic-auth'),
    entry(4, 'plain', str(2, 'text')),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'Secret', secret)), {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'ns' },
    data: { password: Buffer.from('hunter2').toString('base64') }, stringData: { plain: 'text' }, type: 'kubernetes.io/basic-auth',
  });
});

test('Namespace, ServiceAccount, LimitRange, ResourceQuota with scopeSelector', () => {
  const ns = Buffer.concat([
    msg(1, str(1, 'n')), msg(2, str(1, 'kubernetes')),
    msg(3, str(1, 'Terminating'), msg(2, str(1, 'NamespaceDeletionContentFailure'), str(2, 'False'),
      ts(4, unix('2024-02-03T04:05:06Z')), str(5, 'ContentDeleted'), str(6, ''))),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'Namespace', ns)), {
    apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' }, spec: { finalizers: ['kubernetes'] },
    status: {
      phase: 'Terminating',
      conditions: [{ type: 'NamespaceDeletionContentFailure', status: 'False', lastTransitionTime: '2024-02-03T04:05:06Z', reason: 'ContentDeleted' }],
    },
  });

  const sa = Buffer.concat([
    msg(1, str(1, 'sa')), msg(2, str(1, 'Secret'), str(3, 'tok'), str(2, '')), msg(3, str(1, 'regcred')), msg(3), int(4, false),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'ServiceAccount', sa)), {
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' },
    secrets: [{ kind: 'Secret', name: 'tok' }], imagePullSecrets: [{ name: 'regcred' }, {}], automountServiceAccountToken: false,
  });

  const q = (s: string): Buffer => msg(2, str(1, s));
  const lr = Buffer.concat([
    msg(1, str(1, 'lr')),
    msg(2, msg(1, str(1, 'Container'), entry(2, 'cpu', q('2')), entry(3, 'memory', q('64Mi')), entry(4, 'cpu', q('500m')),
      entry(5, 'cpu', q('100m')), entry(6, 'cpu', q('4')), entry(6, 'zero'))),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'LimitRange', lr)), {
    apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr' },
    spec: { limits: [{ type: 'Container', max: { cpu: '2' }, min: { memory: '64Mi' }, default: { cpu: '500m' }, defaultRequest: { cpu: '100m' }, maxLimitRequestRatio: { cpu: '4', zero: '0' } }] },
  });
  // `limits` has no omitempty: an empty spec renders as `limits: null`.
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'LimitRange', msg(1, str(1, 'lr')))), {
    apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr' }, spec: { limits: null },
  });

  const quota = Buffer.concat([
    msg(1, str(1, 'q')),
    msg(2, entry(1, 'pods', q('10')), str(2, 'NotBestEffort'),
      msg(3, msg(1, str(1, 'PriorityClass'), str(2, 'In'), str(3, 'high'), str(3, 'low')), msg(1, str(1, 'Terminating'), str(2, 'Exists')))),
    msg(3, entry(1, 'pods', q('10')), entry(2, 'pods', q('3'))),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'ResourceQuota', quota)), {
    apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' },
    spec: {
      hard: { pods: '10' }, scopes: ['NotBestEffort'],
      scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high', 'low'] }, { scopeName: 'Terminating', operator: 'Exists' }] },
    },
    status: { hard: { pods: '10' }, used: { pods: '3' } },
  });
});

test('core/v1 Event: Time drops nanoseconds, MicroTime keeps microseconds, zero times are null', () => {
  const ref = (name: string): Buffer[] => [str(1, 'Pod'), str(2, 'default'), str(3, name), str(4, 'uid-1'), str(5, 'v1'), str(6, '7'), str(7, 'spec.containers{app}')];
  const ev = Buffer.concat([
    msg(1, str(1, 'e1'), str(3, 'default')), msg(2, ...ref('p')), str(3, 'Started'), str(4, 'Started container'),
    msg(5, str(1, 'kubelet'), str(2, 'node-1')), ts(6, unix('2024-03-04T05:06:07Z'), 123_456_789),
    msg(7), int(8, 3), str(9, 'Normal'), ts(10, unix('2024-03-04T05:06:07Z'), 123_456_789),
    msg(11, int(1, 2), ts(2, unix('2024-03-04T05:06:08Z'), 1_999)), str(12, 'Starting'), msg(13, str(1, 'Node'), str(3, 'node-1')),
    str(14, 'kubelet'), str(15, 'node-1'),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'Event', ev)), {
    apiVersion: 'v1', kind: 'Event', metadata: { name: 'e1', namespace: 'default' },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'uid-1', apiVersion: 'v1', resourceVersion: '7', fieldPath: 'spec.containers{app}' },
    reason: 'Started', message: 'Started container', source: { component: 'kubelet', host: 'node-1' },
    firstTimestamp: '2024-03-04T05:06:07Z', lastTimestamp: null, count: 3, type: 'Normal',
    eventTime: '2024-03-04T05:06:07.123456Z', series: { count: 2, lastObservedTime: '2024-03-04T05:06:08.000001Z' },
    action: 'Starting', related: { kind: 'Node', name: 'node-1' }, reportingComponent: 'kubelet', reportingInstance: 'node-1',
  });
  // A bare event: value structs and times render as their Go zero values.
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'Event', Buffer.alloc(0))), {
    apiVersion: 'v1', kind: 'Event', metadata: {}, involvedObject: {}, source: {},
    firstTimestamp: null, lastTimestamp: null, eventTime: null, reportingComponent: '', reportingInstance: '',
  });
});

test('events.k8s.io/v1 Event and coordination.k8s.io/v1 Lease', () => {
  const ev = Buffer.concat([
    msg(1, str(1, 'e2'), str(3, 'ns')), ts(2, unix('2024-06-01T00:00:00Z'), 5_000), msg(3, int(1, 4), ts(2, unix('2024-06-01T00:01:00Z'))),
    str(4, 'example.com/ctrl'), str(5, 'ctrl-1'), str(6, 'Reconcile'), str(7, 'Synced'),
    msg(8, str(1, 'Deployment'), str(3, 'web'), str(5, 'apps/v1')), str(10, 'all good'), str(11, 'Normal'),
    msg(12), msg(13), int(15, 0),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('events.k8s.io/v1', 'Event', ev)), {
    apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e2', namespace: 'ns' },
    eventTime: '2024-06-01T00:00:00.000005Z', series: { count: 4, lastObservedTime: '2024-06-01T00:01:00.000000Z' },
    reportingController: 'example.com/ctrl', reportingInstance: 'ctrl-1', action: 'Reconcile', reason: 'Synced',
    regarding: { kind: 'Deployment', name: 'web', apiVersion: 'apps/v1' }, note: 'all good', type: 'Normal',
    deprecatedSource: {}, deprecatedFirstTimestamp: null, deprecatedLastTimestamp: null,
  });

  const lease = Buffer.concat([
    msg(1, str(1, 'kube-scheduler'), str(3, 'kube-system')),
    msg(2, str(1, ''), int(2, 15), ts(3, unix('2024-07-01T10:00:00Z'), 123_456_999), ts(4, unix('2024-07-01T10:00:10Z'), 0),
      int(5, 0), str(6, 'OldestEmulationVersion'), str(7, 'node-b')),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('coordination.k8s.io/v1', 'Lease', lease)), {
    apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'kube-scheduler', namespace: 'kube-system' },
    // Pointer fields keep explicit zero values ("" and 0).
    spec: {
      holderIdentity: '', leaseDurationSeconds: 15, acquireTime: '2024-07-01T10:00:00.123456Z', renewTime: '2024-07-01T10:00:10.000000Z',
      leaseTransitions: 0, strategy: 'OldestEmulationVersion', preferredHolder: 'node-b',
    },
  });
});

test('RBAC: Role, ClusterRole with aggregation rule and match expressions', () => {
  const role = Buffer.concat([
    msg(1, str(1, 'r'), str(3, 'ns')),
    msg(2, str(1, 'get'), str(2, ''), str(3, 'pods'), str(3, 'pods/log'), str(4, 'p1')),
    msg(2, str(2, 'apps')),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('rbac.authorization.k8s.io/v1', 'Role', role)), {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r', namespace: 'ns' },
    // `verbs` has no omitempty: a rule without verbs renders `verbs: null`.
    rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods', 'pods/log'], resourceNames: ['p1'] }, { verbs: null, apiGroups: ['apps'] }],
  });
  const cr = Buffer.concat([
    msg(1, str(1, 'agg')),
    msg(3, msg(1, entry(1, 'rbac.example.com/aggregate-to-view', str(2, 'true')),
      msg(2, str(1, 'tier'), str(2, 'In'), str(3, 'a'), str(3, 'b')), msg(2, str(1, 'x'), str(2, 'DoesNotExist')))),
  ]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('rbac.authorization.k8s.io/v1', 'ClusterRole', cr)), {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'agg' }, rules: null,
    aggregationRule: {
      clusterRoleSelectors: [{
        matchLabels: { 'rbac.example.com/aggregate-to-view': 'true' },
        matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }, { key: 'x', operator: 'DoesNotExist' }],
      }],
    },
  });
  // RoleRef and Subject fields without omitempty are always present.
  assert.deepEqual(decodeKubernetesProtobuf(envelope('rbac.authorization.k8s.io/v1', 'RoleBinding', Buffer.concat([msg(1, str(1, 'rb')), msg(2)]))), {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'rb' },
    subjects: [{ kind: '', name: '' }], roleRef: { apiGroup: '', kind: '', name: '' },
  });
});

test('authorization: SubjectAccessReview with extra, selectors; LocalSubjectAccessReview', () => {
  const spec = Buffer.concat([
    msg(1, str(1, 'ns'), str(2, 'list'), str(3, 'apps'), str(4, 'v1'), str(5, 'deployments'), str(6, ''), str(7, ''),
      msg(8, str(1, 'metadata.name=x'), msg(2, str(1, 'metadata.name'), str(2, 'In'), str(3, 'x'))),
      msg(9, str(1, 'app=web'), msg(2, str(1, 'app'), str(2, 'In'), str(3, 'web')))),
    str(3, 'alice'), str(4, 'devs'), str(4, 'system:authenticated'),
    entry(5, 'scopes', msg(2, str(1, 'a'), str(1, 'b'))), entry(5, 'empty', msg(2)), entry(5, 'absent'),
    str(6, 'uid-7'),
  ]);
  const sar = Buffer.concat([msg(1), msg(2, spec), msg(3, int(1, true), int(4, false), str(2, 'RBAC: allowed'))]);
  assert.deepEqual(decodeKubernetesProtobuf(envelope('authorization.k8s.io/v1', 'SubjectAccessReview', sar)), {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', metadata: {},
    spec: {
      resourceAttributes: {
        namespace: 'ns', verb: 'list', group: 'apps', version: 'v1', resource: 'deployments',
        fieldSelector: { rawSelector: 'metadata.name=x', requirements: [{ key: 'metadata.name', operator: 'In', values: ['x'] }] },
        labelSelector: { rawSelector: 'app=web', requirements: [{ key: 'app', operator: 'In', values: ['web'] }] },
      },
      user: 'alice', groups: ['devs', 'system:authenticated'], extra: { scopes: ['a', 'b'], empty: [], absent: [] }, uid: 'uid-7',
    },
    status: { allowed: true, reason: 'RBAC: allowed' },
  });
  assert.deepEqual(decodeKubernetesProtobuf(envelope('authorization.k8s.io/v1', 'LocalSubjectAccessReview',
    Buffer.concat([msg(1, str(3, 'ns')), msg(2, msg(2, str(1, '/metrics'), str(2, 'get')), str(3, 'bob'))]))), {
    apiVersion: 'authorization.k8s.io/v1', kind: 'LocalSubjectAccessReview', metadata: { namespace: 'ns' },
    spec: { nonResourceAttributes: { path: '/metrics', verb: 'get' }, user: 'bob' }, status: { allowed: false },
  });
});

test('DeleteOptions: accepted under any apiVersion, pointer fields keep zero values', () => {
  const opts = Buffer.concat([int(1, 0), msg(2, str(1, 'uid-1'), str(2, '')), int(3, false), str(4, 'Foreground'), str(5, 'All'), int(6, true)]);
  for (const apiVersion of ['v1', 'meta.k8s.io/v1', 'rbac.authorization.k8s.io/v1']) {
    assert.deepEqual(decodeKubernetesProtobuf(envelope(apiVersion, 'DeleteOptions', opts)), {
      apiVersion, kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: 'uid-1', resourceVersion: '' },
      orphanDependents: false, propagationPolicy: 'Foreground', dryRun: ['All'], ignoreStoreReadErrorWithClusterBreakingPotential: true,
    });
  }
  assert.deepEqual(decodeKubernetesProtobuf(envelope('v1', 'DeleteOptions', Buffer.alloc(0))), { apiVersion: 'v1', kind: 'DeleteOptions' });
});

test('int32/int64 edge values and timestamps', () => {
  const meta = (extra: Buffer): Buffer => envelope('v1', 'ConfigMap', msg(1, extra));
  const at = (b: Buffer): unknown => (decodeKubernetesProtobuf(meta(b)).metadata as Record<string, unknown>);
  assert.deepEqual(at(int(10, -30)), { deletionGracePeriodSeconds: -30 });
  assert.deepEqual(at(int(7, 2n ** 53n - 1n)), { generation: 2 ** 53 - 1 });
  assert.deepEqual(at(int(7, -(2n ** 40n))), { generation: -(2 ** 40) });
  // A Timestamp with Go's zero-time seconds is the zero time; omitzero drops it, a pointer keeps it as null.
  assert.deepEqual(at(Buffer.concat([ts(8, -62135596800), ts(9, -62135596800)])), { deletionTimestamp: null });
  assert.deepEqual(at(ts(8, 0)), { creationTimestamp: '1970-01-01T00:00:00Z' });
  assert.deepEqual(at(ts(8, unix('0099-12-31T23:59:59Z'))), { creationTimestamp: '0099-12-31T23:59:59Z' });
  const leaseSpec = (b: Buffer): unknown => decodeKubernetesProtobuf(envelope('coordination.k8s.io/v1', 'Lease', msg(2, b))).spec;
  assert.deepEqual(leaseSpec(int(2, -1)), { leaseDurationSeconds: -1 });
  assert.deepEqual(leaseSpec(ts(3, unix('2024-01-01T00:00:00Z'), -1_500)), { acquireTime: '2023-12-31T23:59:59.999999Z' });
  assert.deepEqual(leaseSpec(msg(3)), { acquireTime: null });
  // Last occurrence of a singular field wins.
  assert.deepEqual(at(Buffer.concat([str(1, 'a'), str(1, 'b')])), { name: 'b' });
});

test('malformed bodies are 400 BadRequest', () => {
  const good = envelope('v1', 'ConfigMap', msg(1, str(1, 'x')));
  assert.deepEqual(decodeKubernetesProtobuf(good), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
  assertStatus(() => decodeKubernetesProtobuf(Buffer.alloc(0)), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(Buffer.from('{"kind":"ConfigMap"}')), 400, 'BadRequest', /does not appear to be a protobuf message/);
  assertStatus(() => decodeKubernetesProtobuf(Buffer.from('k8s')), 400, 'BadRequest', /does not appear to be a protobuf message/);
  assertStatus(() => decodeKubernetesProtobuf(Buffer.concat([Buffer.from('k8s\x01', 'latin1'), good.subarray(4)])), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(good.subarray(0, good.length - 1)), 400, 'BadRequest', /unexpected end of data/);
  // Missing kind / apiVersion.
  assertStatus(() => decodeKubernetesProtobuf(Buffer.concat([MAGIC, msg(1, str(1, 'v1')), str(2, '')])), 400, 'BadRequest', /Kind/);
  assertStatus(() => decodeKubernetesProtobuf(Buffer.concat([MAGIC, msg(1, str(2, 'ConfigMap'))])), 400, 'BadRequest', /apiVersion/);
  // Wrong wire type for a known field (name as a varint).
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', msg(1, int(1, 5)))), 400, 'BadRequest', /wrong wire type/);
  // A varint longer than 10 bytes; a length beyond the data; field number 0; illegal wire type 7.
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', msg(1, key(7, 0), Buffer.alloc(11, 0xff)))), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', Buffer.concat([key(1, 2), varint(1000)]))), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', Buffer.from([0x00, 0x00]))), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', key(50, 7))), 400, 'BadRequest');
  // Unterminated group; FieldsV1 that is not JSON.
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', Buffer.concat([key(50, 3), int(1, 1)]))), 400, 'BadRequest');
  assertStatus(() => decodeKubernetesProtobuf(envelope('v1', 'ConfigMap', msg(1, msg(17, msg(7, str(1, '{not json')))))), 400, 'BadRequest');
});

test('kinds without a schema are 415 UnsupportedMediaType', () => {
  for (const [apiVersion, kind] of [['apps/v1beta2', 'Deployment'], ['example.com/v1', 'Widget'], ['v2', 'ConfigMap'], ['rbac.authorization.k8s.io/v1beta1', 'Role']]) {
    assertStatus(() => decodeKubernetesProtobuf(envelope(apiVersion!, kind!, Buffer.alloc(0))), 415, 'UnsupportedMediaType',
      /protobuf is supported only for built-in kinds; send application\/json/);
  }
});

test('schema: references resolve, field numbers and JSON names are unique, omitzero only on times', () => {
  for (const [name, fields] of Object.entries(PROTOBUF_SCHEMA)) {
    assert.equal(new Set(fields.map((f) => f.no)).size, fields.length, `${name}: duplicate field number`);
    assert.equal(new Set(fields.map((f) => f.json)).size, fields.length, `${name}: duplicate JSON name`);
    for (const f of fields) {
      if (f.kind.startsWith('message:')) assert.ok(PROTOBUF_SCHEMA[f.kind.slice(8)], `${name}.${f.json}: ${f.kind}`);
      if (f.emit === 'omitzero') assert.ok(f.kind === 'time' || f.kind === 'microTime', `${name}.${f.json}`);
      if (f.emit === 'pointer' || f.emit === 'inline') assert.equal(f.card, 'one', `${name}.${f.json}`);
      if (f.emit === 'inline') assert.ok(f.kind.startsWith('message:'), `${name}.${f.json}`);
    }
  }
  for (const message of Object.values(PROTOBUF_KINDS)) assert.ok(PROTOBUF_SCHEMA[message], message);
});

test('isKubernetesProtobuf', () => {
  assert.equal(isKubernetesProtobuf('application/vnd.kubernetes.protobuf'), true);
  assert.equal(isKubernetesProtobuf('Application/VND.Kubernetes.Protobuf; charset=binary'), true);
  assert.equal(isKubernetesProtobuf(' application/vnd.kubernetes.protobuf ;stream=watch'), true);
  assert.equal(isKubernetesProtobuf('application/json'), false);
  assert.equal(isKubernetesProtobuf('application/vnd.kubernetes.protobuf+json'), false);
  assert.equal(isKubernetesProtobuf(''), false);
  assert.equal(isKubernetesProtobuf(undefined), false);
});

test('every served built-in kind, and its list where it is listable, has a protobuf form', () => {
  for (const d of [...BUILTIN_RESOURCES, CSR_DESCRIPTOR, FLOW_SCHEMA_DESCRIPTOR, PRIORITY_LEVEL_DESCRIPTOR]) {
    const apiVersion = d.group ? `${d.group}/${d.version}` : d.version;
    assert.ok(protobufMessageFor(apiVersion, d.kind), `${apiVersion} ${d.kind}`);
    if (d.verbs.includes('list')) assert.ok(protobufMessageFor(apiVersion, d.listKind), `${apiVersion} ${d.listKind}`);
    assert.ok(protobufMessageFor(apiVersion, 'DeleteOptions'), `${apiVersion} DeleteOptions`);
  }
});

/** A body nesting JSONSchemaProps `depth` levels through `not` inside a CRD, built back to front (linear). */
function deepSchemaCrd(depth: number): Buffer {
  const no = (message: string, json: string): number => PROTOBUF_SCHEMA[message]!.find((f) => f.json === json)!.no;
  const notNo = no('apiextensions.v1.JSONSchemaProps', 'not');
  const chunks: Buffer[] = [];
  let size = 0;
  const wrap = (fieldNo: number): void => { const head = Buffer.concat([key(fieldNo, 2), varint(size)]); chunks.push(head); size += head.length; };
  for (let i = 0; i < depth; i++) wrap(notNo);
  wrap(no('apiextensions.v1.CustomResourceValidation', 'openAPIV3Schema'));
  wrap(no('apiextensions.v1.CustomResourceDefinitionVersion', 'schema'));
  wrap(no('apiextensions.v1.CustomResourceDefinitionSpec', 'versions'));
  wrap(no('apiextensions.v1.CustomResourceDefinition', 'spec'));
  return envelope('apiextensions.k8s.io/v1', 'CustomResourceDefinition', Buffer.concat(chunks.reverse()));
}

test('hostile nesting: a JSONSchemaProps nested 100,000 deep is a 400 while decoding, not a stack overflow', () => {
  assertStatus(() => decodeKubernetesProtobuf(deepSchemaCrd(100_000)), 400, 'BadRequest', /protobuf: exceeded max depth of 500/);
  // Within the limit it decodes.
  const ok = decodeKubernetesProtobuf(deepSchemaCrd(50)) as { spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] } };
  let s: Record<string, unknown> | undefined = ok.spec.versions[0]!.schema.openAPIV3Schema;
  let levels = 0;
  while (s && s.not) { s = s.not as Record<string, unknown>; levels++; }
  assert.equal(levels, 50);
});

test('encoding an object that does not fit its schema is a 500, never a crash or a silent zero', () => {
  const cm = (data: unknown): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, ...(data as object) });
  assertStatus(() => encodeKubernetesProtobuf(cm({ data: { a: 1, 'b.c': 2 } })), 500, 'InternalError', /: \.data\["b\.c"\]: expected a string, got number/);
  assertStatus(() => encodeKubernetesProtobuf(cm({ data: ['a'] })), 500, 'InternalError', /expected an object/);
  assertStatus(() => encodeKubernetesProtobuf(cm({ metadata: { generation: 1.5 } })), 500, 'InternalError', /: \.metadata\.generation: expected an integer/);
  assertStatus(() => encodeKubernetesProtobuf({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', spec: { leaseDurationSeconds: 2 ** 31 } }), 500, 'InternalError', /overflows int32/);
  assertStatus(() => encodeKubernetesProtobuf(cm({ metadata: { creationTimestamp: 'yesterday' } })), 500, 'InternalError', /not an RFC 3339 time/);
  // Nesting beyond the limit is refused too (the object could not have been stored).
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 600; i++) deep = { not: deep };
  assertStatus(() => encodeProtobufMessage('apiextensions.v1.JSONSchemaProps', deep), 500, 'InternalError', /nested deeper/);
});

test('encoding: int64 and time edge values round-trip through our decoder', () => {
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', generation: -5, creationTimestamp: '1969-12-31T23:59:59Z' },
    spec: { leaseTransitions: -2147483648, acquireTime: '2024-02-29T12:00:00.000001Z', renewTime: '2024-02-29T14:00:00.5+02:00' } };
  const back = decodeKubernetesProtobuf(encodeKubernetesProtobuf(lease));
  assert.deepEqual(back, { ...lease, metadata: { ...lease.metadata, generation: -5 },
    spec: { ...lease.spec, renewTime: '2024-02-29T12:00:00.500000Z' } });
  assert.deepEqual(decodeKubernetesProtobuf(encodeKubernetesProtobuf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { deletionGracePeriodSeconds: 2 ** 53 - 1 } })).metadata,
    { deletionGracePeriodSeconds: 2 ** 53 - 1 });
});

test('hand-written value kinds no served kind uses yet: Duration, IntOrString (wire format of meta/v1 and util/intstr generated.proto)', () => {
  // A synthetic message, so that the kinds are exercised before a served type needs them.
  const name = 'test.v1.Values';
  (PROTOBUF_SCHEMA as Record<string, ProtobufMessage>)[name] = [
    { no: 1, json: 'timeout', kind: 'duration', card: 'one', emit: 'always' },
    { no: 2, json: 'port', kind: 'intOrString', card: 'one', emit: 'pointer' },
    { no: 3, json: 'ports', kind: 'intOrString', card: 'list', emit: 'omitempty' },
    { no: 4, json: 'ratio', kind: 'double', card: 'one', emit: 'omitempty' },
  ];
  const value = { timeout: '1h2m3.5s', port: 'http', ports: [8080, 'https', -1], ratio: 0.25 };
  const bytes = encodeProtobufMessage(name, value);
  const ios = (type: number, intVal: number, strVal: string): Buffer => Buffer.concat([int(1, type), int(2, intVal), str(3, strVal)]);
  const double = Buffer.alloc(8);
  double.writeDoubleLE(0.25);
  assert.equal(bytes.toString('hex'), Buffer.concat([
    msg(1, int(1, 3723_500_000_000)), msg(2, ios(1, 0, 'http')), msg(3, ios(0, 8080, '')), msg(3, ios(1, 0, 'https')), msg(3, ios(0, -1, '')),
    key(4, 1), double,
  ]).toString('hex'));
  assert.deepEqual(decodeProtobufMessage(name, bytes), value);
  // Go's time.Duration.String() forms; the zero values.
  for (const [ns, text] of [[0, '0s'], [1, '1ns'], [1500, '1.5µs'], [1_500_000, '1.5ms'], [1.5e9, '1.5s'], [90e9, '1m30s'], [3600e9, '1h0m0s'], [-2e9, '-2s']] as const) {
    assert.equal(decodeProtobufMessage(name, msg(1, int(1, ns))).timeout, text, text);
    assert.equal(decodeProtobufMessage(name, encodeProtobufMessage(name, { timeout: text })).timeout, text, text);
  }
  assert.deepEqual(decodeProtobufMessage(name, Buffer.alloc(0)), { timeout: '0s' });
  delete (PROTOBUF_SCHEMA as Record<string, ProtobufMessage>)[name];
});

test('hostile expansion: a body of empty list items (each a whole zero object) is a 400, not seconds of CPU', () => {
  // 1.5 M empty CustomResourceDefinitionList items: 3 MB on the wire, each item a nested zero object.
  const items = Buffer.alloc(3_000_000);
  for (let i = 0; i < items.length; i += 2) items[i] = 0x12; // field 2 (items), length 0
  const t0 = performance.now();
  assertStatus(() => decodeKubernetesProtobuf(envelope('apiextensions.k8s.io/v1', 'CustomResourceDefinitionList', items)), 400, 'BadRequest',
    /expands to more values than its size allows/);
  assert.ok(performance.now() - t0 < 2_000, `refused after ${Math.round(performance.now() - t0)} ms`);
  // A few empty items are fine (the budget has a constant part).
  const few = decodeKubernetesProtobuf(envelope('apiextensions.k8s.io/v1', 'CustomResourceDefinitionList', items.subarray(0, 20)));
  assert.equal((few.items as unknown[]).length, 10);
});

test('kube\'s kinds served as CRDs (kcp\'s `kubernetes` export) take protobuf bodies: a Deployment decodes to its JSON', async () => {
  const { acceptsProtobufBody, hasProtobuf } = await import('../../src/endpoints/protobufwire.js');
  const desc = { group: 'apps', version: 'v1', kind: 'Deployment', listKind: 'DeploymentList', resource: 'deployments' } as unknown as Parameters<typeof acceptsProtobufBody>[0];
  assert.equal(acceptsProtobufBody(desc), true);
  assert.equal(hasProtobuf(desc), false, 'answers stay JSON: the resource is not a built-in here');
  assert.equal(acceptsProtobufBody({ ...desc, group: 'example.com', kind: 'Widget' } as typeof desc), false);
  const dep = {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { app: 'web' } },
    spec: { replicas: 5, selector: { matchLabels: { app: 'web' } }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 1 } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80 }], resources: { limits: { cpu: '500m' } } }] } } },
  };
  const back = decodeKubernetesProtobuf(encodeKubernetesProtobuf(dep)) as typeof dep;
  assert.equal(back.spec.replicas, 5);
  assert.deepEqual(back.spec.strategy, dep.spec.strategy);
  assert.deepEqual(back.spec.template.spec.containers[0], dep.spec.template.spec.containers[0]);
});
