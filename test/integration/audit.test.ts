/**
 * Audit log (src/endpoints/filters/audit.ts) on a real server: kube-apiserver's audit.k8s.io/v1 events for a
 * create, a forbidden request, a failed authentication, impersonation, a watch, requests in two
 * logical clusters (kcp's `tenancy.kcp.io/workspace` annotation), and a bad policy file at start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CM, call, createLogicalCluster, eventually, sleep, useTestServer, watch, type TestServer } from '../helpers.js';
import { main } from '../../src/cli/main.js';
import { ShutdownSignals } from '../../src/cli/signals.js';
import { encodeKubernetesProtobuf } from '../../src/apimachinery/protobuf.js';

const dir = mkdtempSync(join(tmpdir(), 'kcp-audit-'));
const logFile = join(dir, 'audit.log');
const tokenFile = join(dir, 'tokens.csv');
writeFileSync(tokenFile, 'alice-token,alice,1001,"dev"\n');
const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
    namespaces: ["default"]
  - level: Metadata
`;
const policyFile = join(dir, 'policy.yaml');
writeFileSync(policyFile, POLICY);

let srv: TestServer;
useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile, audit: { policy: policyFile, path: logFile } });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MICRO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

function events(auditID: string): any[] {
  return readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.auditID === auditID);
}
async function eventsOf(auditID: string, stages: string[]): Promise<any[]> {
  return eventually(`audit events ${stages.join(',')} of ${auditID}`, async () => {
    const evs = events(auditID);
    return stages.every((s) => evs.some((e) => e.stage === s)) && evs;
  });
}
const auditIdOf = (r: { headers: Record<string, unknown> }) => {
  const id = r.headers['audit-id'];
  assert.match(String(id), UUID);
  return String(id);
};

test('a create: RequestReceived and ResponseComplete with the objects at RequestResponse, Audit-Id header', async () => {
  const r = await call(srv, srv.creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', CM('audited', { k: 'v' }), { 'user-agent': 'audit-test/1.0' });
  assert.equal(r.status, 201, r.body);
  const evs = await eventsOf(auditIdOf(r), ['RequestReceived', 'ResponseComplete']);
  assert.deepEqual(evs.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
  const [rr, rc] = evs;
  for (const e of evs) {
    assert.equal(e.kind, 'Event');
    assert.equal(e.apiVersion, 'audit.k8s.io/v1');
    assert.equal(e.level, 'RequestResponse');
    assert.equal(e.verb, 'create');
    assert.equal(e.requestURI, '/clusters/root/api/v1/namespaces/default/configmaps');
    assert.equal(e.user.username, 'kcp-admin');
    assert.ok(e.user.groups.includes('system:kcp:admin'));
    assert.deepEqual(e.sourceIPs, ['127.0.0.1']);
    assert.equal(e.userAgent, 'audit-test/1.0');
    assert.match(e.requestReceivedTimestamp, MICRO);
    assert.match(e.stageTimestamp, MICRO);
    assert.equal(e.annotations['tenancy.kcp.io/workspace'], 'root');
  }
  assert.deepEqual(rr.objectRef, { resource: 'configmaps', namespace: 'default', apiVersion: 'v1' });
  assert.equal(rr.stageTimestamp, rr.requestReceivedTimestamp);
  assert.equal(rr.responseStatus, undefined);
  assert.equal(rr.requestObject, undefined);
  assert.deepEqual(rc.objectRef, { resource: 'configmaps', namespace: 'default', name: 'audited', apiVersion: 'v1' });
  assert.deepEqual(rc.responseStatus, { metadata: {}, code: 201 });
  assert.deepEqual(rc.requestObject.data, { k: 'v' });
  assert.equal(rc.responseObject.metadata.name, 'audited');
  assert.ok(rc.responseObject.metadata.uid);
  assert.equal(rc.annotations['authorization.k8s.io/decision'], 'allow');
  assert.equal(typeof rc.annotations['authorization.k8s.io/reason'], 'string');
  assert.ok(rc.stageTimestamp >= rc.requestReceivedTimestamp);
});

test('protobuf on the wire (a typed client): the audit log holds the request and response objects, and a protobuf Status\'s fields', async () => {
  const body = encodeKubernetesProtobuf(CM('audited-pb', { p: 'b' }) as Record<string, unknown>);
  const r = await call(srv, srv.creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', body,
    { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/vnd.kubernetes.protobuf,application/json' });
  assert.equal(r.status, 201);
  assert.equal(r.headers['content-type'], 'application/vnd.kubernetes.protobuf');
  const [, rc] = await eventsOf(auditIdOf(r), ['RequestReceived', 'ResponseComplete']);
  assert.deepEqual(rc.requestObject.data, { p: 'b' });
  assert.deepEqual(rc.responseObject.data, { p: 'b' });
  assert.equal(rc.objectRef.name, 'audited-pb');
  const missing = await call(srv, srv.creds, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps/nothing', undefined, { accept: 'application/vnd.kubernetes.protobuf' });
  assert.equal(missing.status, 404);
  const [, mc] = await eventsOf(auditIdOf(missing), ['RequestReceived', 'ResponseComplete']);
  assert.equal(mc.responseStatus.reason, 'NotFound');
  assert.equal(mc.responseStatus.message, 'configmaps "nothing" not found');
});

test('Metadata level: no objects; a GET is audited without a request object', async () => {
  const r = await call(srv, srv.creds, 'POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'audit-ns' } });
  assert.equal(r.status, 201, r.body);
  const [, rc] = await eventsOf(auditIdOf(r), ['RequestReceived', 'ResponseComplete']);
  assert.equal(rc.level, 'Metadata');
  assert.deepEqual(rc.objectRef, { resource: 'namespaces', name: 'audit-ns', apiVersion: 'v1' });
  assert.equal(rc.requestObject, undefined);
  assert.equal(rc.responseObject, undefined);
  const g = await call(srv, srv.creds, 'GET', '/clusters/root/api/v1/namespaces/audit-ns');
  const [, gc] = await eventsOf(auditIdOf(g), ['RequestReceived', 'ResponseComplete']);
  assert.equal(gc.verb, 'get');
  assert.deepEqual(gc.responseStatus, { metadata: {}, code: 200 });
});

test('a forbidden request: responseStatus with the Status fields, decision forbid; 401 audited with no user', async () => {
  const r = await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps', undefined, { authorization: 'Bearer alice-token' });
  assert.equal(r.status, 403);
  const [rr, rc] = await eventsOf(auditIdOf(r), ['RequestReceived', 'ResponseComplete']);
  assert.equal(rr.user.username, 'alice');
  assert.equal(rc.verb, 'list');
  assert.equal(rc.responseStatus.code, 403);
  assert.equal(rc.responseStatus.status, 'Failure');
  assert.equal(rc.responseStatus.reason, 'Forbidden');
  assert.match(rc.responseStatus.message, /User "alice" cannot list resource "configmaps"/);
  assert.equal(rc.annotations['authorization.k8s.io/decision'], 'forbid');
  assert.equal(rc.responseObject.kind, 'Status', 'RequestResponse level: the Status is the response object');
  const u = await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/api/v1/namespaces', undefined, { authorization: 'Bearer wrong' });
  assert.equal(u.status, 401);
  const [, uc] = await eventsOf(auditIdOf(u), ['RequestReceived', 'ResponseComplete']);
  assert.deepEqual(uc.user, { username: '' });
  assert.equal(uc.responseStatus.code, 401);
  assert.equal(uc.responseStatus.reason, 'Unauthorized');
});

test('impersonation: user is the caller, impersonatedUser the one impersonated; a client Audit-ID is kept', async () => {
  const r = await call(srv, srv.creds, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps', undefined, { 'impersonate-user': 'alice', 'audit-id': 'my-own-audit-id' });
  assert.equal(r.status, 403);
  assert.equal(r.headers['audit-id'], 'my-own-audit-id');
  const [rr, rc] = await eventsOf('my-own-audit-id', ['RequestReceived', 'ResponseComplete']);
  assert.equal(rr.user.username, 'kcp-admin');
  assert.equal(rr.impersonatedUser, undefined);
  assert.equal(rc.user.username, 'kcp-admin');
  assert.equal(rc.impersonatedUser.username, 'alice');
});

test('a watch: RequestReceived, ResponseStarted, then ResponseComplete when it ends', async () => {
  const w = watch(srv, srv.creds, '/clusters/root/api/v1/namespaces/default/configmaps?watch=1');
  assert.equal(await w.status, 200);
  await w.waitFor(1);
  // The watch's audit ID: the only watch event of this URI so far.
  const started = await eventually('watch ResponseStarted', async () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.verb === 'watch' && e.stage === 'ResponseStarted'));
  assert.deepEqual(started.responseStatus, { metadata: {}, code: 200 });
  assert.equal(events(started.auditID).some((e) => e.stage === 'ResponseComplete'), false, 'still open');
  w.close();
  const evs = await eventsOf(started.auditID, ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
  assert.deepEqual(evs.map((e) => e.stage), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
  assert.equal(evs[2].responseObject, undefined, 'no response object for a watch');
  assert.equal(evs[2].annotations['tenancy.kcp.io/workspace'], 'root');
});

test('two logical clusters: each event names its own in tenancy.kcp.io/workspace', async () => {
  await createLogicalCluster(srv, 'audit-other');
  const a = await call(srv, srv.creds, 'GET', '/clusters/audit-other/api/v1/namespaces/default/configmaps');
  const b = await call(srv, srv.creds, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps');
  assert.equal(a.status, 200, a.body);
  assert.equal(b.status, 200, b.body);
  const [, ac] = await eventsOf(auditIdOf(a), ['ResponseComplete']);
  const [, bc] = await eventsOf(auditIdOf(b), ['ResponseComplete']);
  assert.equal(ac.annotations['tenancy.kcp.io/workspace'], 'audit-other');
  assert.equal(bc.annotations['tenancy.kcp.io/workspace'], 'root');
  // Health probes are level None by the policy: an Audit-Id but no event.
  const h = await call(srv, srv.creds, 'GET', '/readyz');
  // Negative check: a fixed wait, as nothing observable marks that something did not happen.
  await sleep(50);
  assert.deepEqual(events(auditIdOf(h)), []);
});

test('kcp-ts start: a bad policy file exits 2 naming the file and the field', async () => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Loud\n');
  const notYaml = join(dir, 'notyaml.yaml');
  writeFileSync(notYaml, 'rules: [level: x\n');
  for (const [file, re] of [[bad, /--audit-policy-file .*bad\.yaml: rules\[0\]\.level: Unsupported value: "Loud"/], [notYaml, /notyaml\.yaml: \(file\): not valid YAML/], [join(dir, 'none.yaml'), /none\.yaml: ENOENT/]] as const) {
    let err = '';
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => { err += chunk; return true; }) as typeof process.stderr.write;
    const signals = new ShutdownSignals();
    let code: number;
    try {
      code = await main(['start', '--root-directory', join(dir, 'never'), '--audit-policy-file', file, '--audit-log-path', join(dir, 'x.log')], signals);
    } finally { process.stderr.write = write; signals.dispose(); }
    assert.equal(code, 2);
    assert.match(err, re);
  }
});

test('a ValidatingAdmissionPolicy with the Audit action records its failures and auditAnnotations in the event', async () => {
  const base = '/clusters/root/apis/admissionregistration.k8s.io/v1';
  assert.equal((await call(srv, srv.creds, 'POST', `${base}/validatingadmissionpolicies`, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'small-configmaps' },
    spec: {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
      validations: [{ expression: '!has(object.data) || size(object.data) <= 1', message: 'at most one key' }],
      auditAnnotations: [{ key: 'keys', valueExpression: "string(has(object.data) ? size(object.data) : 0) + ' keys'" }],
    },
  })).status, 201);
  assert.equal((await call(srv, srv.creds, 'POST', `${base}/validatingadmissionpolicybindings`, {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'small-configmaps-audit' },
    spec: { policyName: 'small-configmaps', validationActions: ['Audit'] },
  })).status, 201);
  const r = await eventually('policy in effect', async () => {
    const res = await call(srv, srv.creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', { ...CM(`big-${Date.now()}`), data: { a: '1', b: '2' } });
    assert.equal(res.status, 201, 'Audit does not refuse');
    const evs = await eventsOf(auditIdOf(res), ['ResponseComplete']);
    return evs.find((e) => e.stage === 'ResponseComplete')!.annotations?.['validation.policy.admission.k8s.io/validation_failure'] !== undefined && evs;
  });
  const done = r.find((e: any) => e.stage === 'ResponseComplete');
  assert.deepEqual(JSON.parse(done.annotations['validation.policy.admission.k8s.io/validation_failure']),
    [{ message: 'at most one key', policy: 'small-configmaps', binding: 'small-configmaps-audit', expressionIndex: 0, validationActions: ['Audit'] }]);
  assert.equal(done.annotations['small-configmaps/keys'], '2 keys');
});
