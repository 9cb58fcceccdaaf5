/**
 * kubectl's typed clients speak protobuf (request bodies and answers, `Accept:
 * application/vnd.kubernetes.protobuf,application/json`): kubectl 1.32 against an instance
 * (`kcp-ts start`: a shard behind the front-proxy), every command below going through the proxy,
 * which passes protobuf answers, large lists and watch streams through untouched.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInstance, type RunningInstance } from '../../src/server/instance.js';
import { PROXY_BUFFER_BYTES } from '../../src/proxy/frontproxy.js';
import { CM, adminCreds, call, kubectl, type Creds } from '../helpers.js';
import { TYPED, decodedProtobuf, protobufWatch, rawCall } from '../pbwire.js';

let root: string;
let inst: RunningInstance;
let admin: Creds;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'kcp-pb-'));
  inst = await startInstance({ rootDirectory: root, shards: 1, securePort: 0 });
  admin = adminCreds(root);
});
after(async () => { await inst?.stop(); });

const kc = (args: string[], input?: string) => kubectl(inst.kubeconfigPath, args, { input });

/** The Content-Types of kubectl's requests and answers in its `-v=8` log, in order. */
function contentTypes(log: string): { requests: string[]; responses: string[] } {
  const requests: string[] = [];
  const responses: string[] = [];
  let inResponse = false;
  for (const line of log.split('\n')) {
    if (/Request Headers:/.test(line)) inResponse = false;
    if (/Response Status:/.test(line)) inResponse = true;
    const m = /\]\s+Content-Type: (.*)$/.exec(line);
    if (m) (inResponse ? responses : requests).push(m[1]!.trim());
  }
  return { requests, responses };
}

test('kubectl create configmap: protobuf body and protobuf answer, printed from the decoded answer', async () => {
  const r = await kc(['create', 'configmap', 'pbcm', '--from-literal=a=1', '-o', 'json', '-v=8']);
  const types = contentTypes(r.stderr);
  assert.deepEqual(types.requests, ['application/vnd.kubernetes.protobuf']);
  assert.deepEqual(types.responses, ['application/vnd.kubernetes.protobuf']);
  const cm = JSON.parse(r.stdout);
  assert.deepEqual(cm.data, { a: '1' });
  assert.match(cm.metadata.uid, /^[0-9a-f-]{36}$/);
  // The same object as a JSON client reads it.
  const asJson = await call(inst, admin, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps/pbcm');
  assert.equal(asJson.json.metadata.resourceVersion, cm.metadata.resourceVersion);
});

test('typed commands of other groups: namespaces, secrets, RBAC, tokens, access reviews, whoami', async () => {
  await kc(['create', 'namespace', 'pbns']);
  await kc(['-n', 'pbns', 'create', 'secret', 'generic', 's1', '--from-literal=k=v']);
  await kc(['-n', 'pbns', 'create', 'serviceaccount', 'robot']);
  await kc(['-n', 'pbns', 'create', 'role', 'reader', '--verb=get,list', '--resource=configmaps']);
  await kc(['-n', 'pbns', 'create', 'rolebinding', 'robot-reads', '--role=reader', '--serviceaccount=pbns:robot']);
  const binding = JSON.parse((await kc(['-n', 'pbns', 'get', 'rolebinding', 'robot-reads', '-o', 'json'])).stdout);
  assert.equal(binding.roleRef.name, 'reader');
  const token = (await kc(['-n', 'pbns', 'create', 'token', 'robot', '-v=8']));
  assert.match(token.stdout.trim(), /^ey[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.deepEqual(contentTypes(token.stderr).responses, ['application/vnd.kubernetes.protobuf']);
  assert.equal((await kc(['-n', 'pbns', 'auth', 'can-i', 'list', 'configmaps', '--as=system:serviceaccount:pbns:robot'])).stdout.trim(), 'yes');
  const who = JSON.parse((await kc(['auth', 'whoami', '-o', 'json'])).stdout);
  assert.equal(who.kind, 'SelfSubjectReview');
  assert.ok(who.status.userInfo.username);
});

test('kubectl certificate approve (a typed GET and the approval subresource in protobuf)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pb-csr-'));
  execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', join(dir, 'k.pem')]);
  execFileSync('openssl', ['req', '-new', '-key', join(dir, 'k.pem'), '-subj', '/CN=pbuser', '-out', join(dir, 'r.csr')]);
  const csr = {
    apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'pbuser' },
    spec: { request: readFileSync(join(dir, 'r.csr')).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client', usages: ['client auth'] },
  };
  await kc(['create', '-f', '-'], JSON.stringify(csr));
  const approve = await kc(['certificate', 'approve', 'pbuser', '-v=8']);
  // The resource builder reads the CSR (JSON); the approval is a typed PUT of certificatesigningrequests/approval.
  assert.match(approve.stderr, /PUT https:\S+\/certificatesigningrequests\/pbuser\/approval/);
  const types = contentTypes(approve.stderr);
  assert.equal(types.requests.at(-1), 'application/vnd.kubernetes.protobuf');
  assert.equal(types.responses.at(-1), 'application/vnd.kubernetes.protobuf');
  const got = JSON.parse((await kc(['get', 'csr', 'pbuser', '-o', 'json'])).stdout);
  assert.ok(got.status.conditions.some((c: any) => c.type === 'Approved' && c.status === 'True'));
});

test('through the front-proxy: a protobuf list larger than its buffer and a protobuf watch pass untouched', async () => {
  await kc(['create', 'namespace', 'pbbig']);
  const pad = 'p'.repeat(3000);
  for (let i = 0; i < 480; i += 40) {
    await Promise.all(Array.from({ length: 40 }, (_, j) => call(inst, admin, 'POST', '/clusters/root/api/v1/namespaces/pbbig/configmaps', CM(`c${i + j}`, { pad }))));
  }
  const viaProxy = await rawCall(inst, admin, 'GET', '/clusters/root/api/v1/namespaces/pbbig/configmaps', undefined, { accept: TYPED });
  assert.ok(viaProxy.body.length > PROXY_BUFFER_BYTES, `${viaProxy.body.length} bytes`);
  assert.equal(decodedProtobuf(viaProxy).items.length, 480);
  // Byte for byte what the shard answers (same resourceVersion).
  const rv = decodedProtobuf(viaProxy).metadata.resourceVersion;
  const direct = await rawCall(inst.shards[0]!, admin, 'GET', `/clusters/root/api/v1/namespaces/pbbig/configmaps?resourceVersion=${rv}&resourceVersionMatch=Exact`, undefined, { accept: TYPED });
  const proxied = await rawCall(inst, admin, 'GET', `/clusters/root/api/v1/namespaces/pbbig/configmaps?resourceVersion=${rv}&resourceVersionMatch=Exact`, undefined, { accept: TYPED });
  assert.equal(direct.status, 200);
  assert.ok(proxied.body.equals(direct.body));

  const w = protobufWatch(inst, admin, '/clusters/root/api/v1/namespaces/pbbig/configmaps?watch=1&resourceVersion=' + rv);
  try {
    assert.equal(await w.type, 'application/vnd.kubernetes.protobuf;stream=watch');
    await kc(['-n', 'pbbig', 'create', 'configmap', 'late', '--from-literal=x=y']);
    const [added] = await w.waitFor(1);
    assert.equal(added?.type, 'ADDED');
    assert.equal(added?.object.metadata.name, 'late');
  } finally { w.close(); }
  // The proxy's own refusals follow Accept too.
  const unknown = await rawCall(inst, admin, 'GET', '/clusters/root:nowhere/api/v1/configmaps', undefined, { accept: TYPED });
  assert.equal(unknown.status, 403);
  assert.equal(decodedProtobuf(unknown).kind, 'Status');
});
