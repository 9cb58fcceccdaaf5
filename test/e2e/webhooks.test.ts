/**
 * Admission webhooks with a real webhook server (node:https with its own CA) registered with
 * kubectl: a validating webhook denies, a mutating one patches (and a reinvoked one sees the
 * patch), a failing one (unreachable, a wrong uid, an answer past the size cap) is skipped with
 * failurePolicy Ignore and refuses with Fail, timeouts are honoured, selectors and dry run behave
 * as kube's, a webhook of workspace A never sees B's requests, and a provider's webhook applies
 * to its exported resources in every consumer.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { call, createWorkspace, eventually, kubectl, startRedis, waitForRootCA, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
let hook: Server;
let hookURL = '';
let caBundle = '';
/** Requests the webhook server received: path, operation, cluster annotation-less name, namespace, dryRun. */
const seen: { path: string; operation: string; name: string; namespace?: string; dryRun: boolean; kind: string; labels?: Record<string, string>; version: string; requestVersion: string; object?: any }[] = [];
const ws: Record<string, string> = {};

const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res> => call(srv, srv.creds, method, path, body, headers);
const kc = (workspace: string, args: string[], opts?: Parameters<typeof kubectl>[2]) => kubectl(srv.kubeconfigPath, [`--server=${srv.url}/clusters/root:${workspace}`, ...args], opts);

/** The webhook server: the path selects the behaviour. */
function respond(path: string, review: any): any {
  const req = review.request;
  const allow = (extra: object = {}) => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: req.uid, allowed: true, ...extra } });
  const patch = (ops: object[]) => allow({ patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') });
  switch (path) {
    case '/deny-labelled':
      if (req.object?.metadata?.labels?.deny === 'true') return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: req.uid, allowed: false, status: { code: 403, reason: 'Forbidden', message: 'objects labelled deny=true are not allowed' } } };
      return allow({ warnings: ['checked by deny-labelled'] });
    case '/add-label':
      if (req.object?.metadata?.labels?.mutated) return allow();
      return patch(req.object?.metadata?.labels ? [{ op: 'add', path: '/metadata/labels/mutated', value: 'by-webhook' }] : [{ op: 'add', path: '/metadata/labels', value: { mutated: 'by-webhook' } }]);
    case '/copy-label':
      // Reinvoked: copies `mutated` into `copied` once it exists.
      if (req.object?.metadata?.labels?.mutated && !req.object.metadata.labels.copied) return patch([{ op: 'add', path: '/metadata/labels/copied', value: req.object.metadata.labels.mutated }]);
      return allow();
    case '/wrong-uid':
      return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'nope', allowed: true } };
    case '/add-size':
      // Patches the object in the version the webhook registered for (v1 of the gadgets below).
      return patch([{ op: 'add', path: '/spec/size', value: 5 }]);
    case '/deny-widgets':
      return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: req.uid, allowed: req.object?.spec?.size !== 13, status: { message: 'size 13 is unlucky' } } };
    default:
      return allow();
  }
}

function configYaml(kind: 'Validating' | 'Mutating', name: string, webhooks: Record<string, unknown>[]): string {
  return JSON.stringify({ apiVersion: 'admissionregistration.k8s.io/v1', kind: `${kind}WebhookConfiguration`, metadata: { name }, webhooks });
}

const webhook = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
  name, clientConfig: { url: `${hookURL}${path}`, caBundle }, sideEffects: 'None', admissionReviewVersions: ['v1'],
  rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], ...extra,
});


const cm = (name: string, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) } });

before(async () => {
  const ca = await createCA('webhook-test-ca');
  const serving = await issueServingCert(ca, { commonName: 'webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  caBundle = Buffer.from(ca.certPem).toString('base64');
  hook = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!; // kube's ?timeout=Ns query aside
      const review = JSON.parse(Buffer.concat(chunks).toString());
      const r = review.request;
      seen.push({ path, operation: r.operation, name: r.name, namespace: r.namespace, dryRun: r.dryRun, kind: r.kind.kind, labels: r.object?.metadata?.labels, version: r.kind.version, requestVersion: r.requestKind.version, object: r.object });
      const reply = () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(respond(path, review))); };
      if (path === '/slow') setTimeout(reply, 3000);
      else if (path === '/huge') { res.writeHead(200, { 'content-type': 'application/json' }); res.end(`{"pad":"${'a'.repeat(12 * 1024 * 1024)}"}`); }
      else reply();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  hookURL = `https://127.0.0.1:${(hook.address() as { port: number }).port}`;
  redis = await startRedis();
  srv = await startTestServer(redis);
  for (const name of ['team-a', 'team-b', 'provider', 'consumer']) ws[name] = await createWorkspace(srv, name);
});
after(async () => {
  await srv?.stop(); await redis?.stop();
  hook?.closeAllConnections(); hook?.close();
});

describe('admission webhooks', () => {
  test('a validating webhook registered with kubectl denies with its message, and its warnings reach the client', async () => {
    const applied = await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'deny', [webhook('deny.example.com', '/deny-labelled')]) });
    assert.match(applied.stdout, /validatingwebhookconfiguration.admissionregistration.k8s.io\/deny created/);
    const cfg = (await admin('GET', '/clusters/root:team-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny')).json;
    assert.deepEqual([cfg.webhooks[0].failurePolicy, cfg.webhooks[0].timeoutSeconds, cfg.webhooks[0].matchPolicy, cfg.webhooks[0].rules[0].scope], ['Fail', 10, 'Equivalent', '*'], 'kube defaults');
    const denied = await kc('team-a', ['create', 'configmap', 'bad', '-n', 'default', '--from-literal=a=b', '-o', 'name', '--dry-run=none'], { allowFail: true });
    assert.equal(denied.code, 0, 'unlabelled objects pass');
    const labelled = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('labelled', { deny: 'true' }));
    assert.equal(labelled.status, 403, labelled.body);
    assert.equal(labelled.json.message, 'admission webhook "deny.example.com" denied the request: objects labelled deny=true are not allowed');
    assert.equal((await admin('GET', '/clusters/root:team-a/api/v1/namespaces/default/configmaps/labelled')).status, 404, 'nothing written');
    const ok = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('fine'));
    assert.equal(ok.status, 201);
    assert.match(String(ok.headers.warning), /checked by deny-labelled/);
  });

  test('a mutating webhook patches; a reinvoked one sees a later webhook\'s change', async () => {
    const yaml = configYaml('Mutating', 'mutate', [
      webhook('copy.example.com', '/copy-label', { reinvocationPolicy: 'IfNeeded' }),
      webhook('add.example.com', '/add-label'),
    ]);
    await kc('team-a', ['apply', '-f', '-'], { input: yaml });
    const created = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('patched', { app: 'x' }));
    assert.equal(created.status, 201, created.body);
    assert.deepEqual(created.json.metadata.labels, { app: 'x', mutated: 'by-webhook', copied: 'by-webhook' });
    // An update is mutated too; the server keeps what it owns.
    const updated = await admin('PUT', '/clusters/root:team-a/api/v1/namespaces/default/configmaps/fine', { ...cm('fine'), data: { k: 'v' }, metadata: { name: 'fine', resourceVersion: (await admin('GET', '/clusters/root:team-a/api/v1/namespaces/default/configmaps/fine')).json.metadata.resourceVersion } });
    assert.equal(updated.status, 200, updated.body);
    assert.equal(updated.json.metadata.labels.mutated, 'by-webhook');
    await kc('team-a', ['delete', 'mutatingwebhookconfiguration', 'mutate']);
  });

  test('failurePolicy: an unreachable webhook is skipped with Ignore and refuses with Fail; a bad answer is a failure', async () => {
    const down = 'https://127.0.0.1:1/down';
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'down-ignore', [{ ...webhook('ignore.example.com', ''), clientConfig: { url: down, caBundle }, failurePolicy: 'Ignore' }]) });
    assert.equal((await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('ignored'))).status, 201);
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'down-fail', [{ ...webhook('fail.example.com', ''), clientConfig: { url: down, caBundle } }]) });
    const refused = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('refused'));
    assert.equal(refused.status, 500, refused.body);
    assert.match(refused.json.message, /failed calling webhook "fail.example.com"/);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'down-fail', 'down-ignore']);
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'liar', [webhook('liar.example.com', '/wrong-uid')]) });
    const lied = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('lied'));
    assert.equal(lied.status, 500);
    assert.match(lied.json.message, /expected response.uid/);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'liar']);
    // An answer past the response cap (twice the request plus 7 MiB) is a failure too.
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'huge', [webhook('huge.example.com', '/huge')]) });
    const huge = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('huge'));
    assert.equal(huge.status, 500, huge.body);
    assert.match(huge.json.message, /^Internal error occurred: failed calling webhook "huge.example.com": failed to call webhook: Post "https:\/\/127.0.0.1:\d+\/huge\?timeout=10s": response body larger than \d+ bytes$/);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'huge']);
  });

  test('timeoutSeconds is honoured', async () => {
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'slow', [webhook('slow.example.com', '/slow', { timeoutSeconds: 1 })]) });
    const t0 = Date.now();
    const res = await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('slow'));
    const ms = Date.now() - t0;
    assert.equal(res.status, 500, res.body);
    assert.match(res.json.message, /failed calling webhook "slow.example.com": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/slow\?timeout=1s": context deadline exceeded/);
    assert.ok(ms < 2500, `answered after ${ms} ms`);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'slow']);
  });

  test('selectors and dry run', async () => {
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'watched', labels: { watch: 'yes' } } });
    // The namespace's kube-root-ca.crt is written before the webhook exists (it would be a call).
    await waitForRootCA(srv, srv.creds, 'root:team-a', 'watched');
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'selective', [webhook('selective.example.com', '/record', {
      namespaceSelector: { matchLabels: { watch: 'yes' } }, objectSelector: { matchExpressions: [{ key: 'skip', operator: 'DoesNotExist' }] }, sideEffects: 'NoneOnDryRun',
    })]) });
    const count = () => seen.filter((s) => s.path === '/record').length;
    const before = count();
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('not-watched'));
    assert.equal(count(), before, 'namespace not selected');
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/watched/configmaps', cm('skipped', { skip: 'x' }));
    assert.equal(count(), before, 'object not selected');
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/watched/configmaps?dryRun=All', cm('dry'));
    assert.equal(count(), before + 1);
    assert.equal(seen.at(-1)!.dryRun, true);
    assert.equal((await admin('GET', '/clusters/root:team-a/api/v1/namespaces/watched/configmaps/dry')).status, 404);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'selective']);
  });

  test('matchConditions (CEL): the webhook is called only when all hold; a bad expression is refused', async () => {
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'conditional', [webhook('conditional.example.com', '/conditional', {
      matchConditions: [{ name: 'not-kube-system', expression: "request.namespace != 'kube-system'" }, { name: 'has-data', expression: "has(object.data) && 'watch' in object.data" }],
    })]) });
    const count = () => seen.filter((s) => s.path === '/conditional').length;
    const before = count();
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('no-data'));
    assert.equal(count(), before);
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', { ...cm('with-data'), data: { watch: '1' } });
    assert.equal(count(), before + 1);
    const bad = await admin('POST', '/clusters/root:team-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
      JSON.parse(configYaml('Validating', 'bad-cel', [webhook('badcel.example.com', '/x', { matchConditions: [{ name: 'broken', expression: 'object.(' }] })])));
    assert.equal(bad.status, 422, bad.body);
    assert.match(bad.json.message, /matchConditions\[0\]\.expression/);
    await kc('team-a', ['delete', 'validatingwebhookconfiguration', 'conditional']);
  });

  test('a webhook of workspace A never sees workspace B; service references are refused', async () => {
    await kc('team-a', ['apply', '-f', '-'], { input: configYaml('Validating', 'spy', [webhook('spy.example.com', '/spy')]) });
    const count = () => seen.filter((s) => s.path === '/spy').length;
    await admin('POST', '/clusters/root:team-a/api/v1/namespaces/default/configmaps', cm('in-a'));
    const inA = count();
    assert.ok(inA >= 1);
    await admin('POST', '/clusters/root:team-b/api/v1/namespaces/default/configmaps', cm('in-b'));
    await admin('POST', '/clusters/root:team-b/api/v1/namespaces/default/configmaps', cm('in-b', { deny: 'true' }));
    assert.equal(count(), inA);
    assert.ok(!seen.some((s) => s.name === 'in-b'));
    const svc = await admin('POST', '/clusters/root:team-b/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', JSON.parse(configYaml('Validating', 'svc', [{ ...webhook('svc.example.com', ''), clientConfig: { service: { namespace: 'default', name: 'hook' } } }])));
    assert.equal(svc.status, 422, svc.body);
    assert.match(svc.json.message, /service references are not supported/);
    const http = await admin('POST', '/clusters/root:team-b/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', JSON.parse(configYaml('Validating', 'http', [{ ...webhook('http.example.com', ''), clientConfig: { url: 'http://127.0.0.1/x' } }])));
    assert.equal(http.status, 422);
  });

  test('a provider\'s webhook applies to its exported resource in every consumer', async () => {
    const fixtures = join(import.meta.dirname, '..', 'fixtures', 'apis');
    for (const f of ['widgets-schema.yaml', 'widgets-export.yaml']) {
      const obj = parse(readFileSync(join(fixtures, f), 'utf8'));
      assert.equal((await admin('POST', `/clusters/root:provider/apis/${obj.apiVersion}/${obj.kind === 'APIExport' ? 'apiexports' : 'apiresourceschemas'}`, obj)).status, 201);
    }
    await eventually('identity', async () => (await admin('GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets')).json?.status?.identityHash);
    const cfg = configYaml('Validating', 'widgets', [{ ...webhook('widgets.example.com', '/deny-widgets'), rules: [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['widgets'] }] }]);
    await kc('provider', ['apply', '-f', '-'], { input: cfg });
    assert.equal((await admin('POST', '/clusters/root:consumer/apis/apis.kcp.io/v1alpha2/apibindings', { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'widgets' }, spec: { reference: { export: { path: 'root:provider', name: 'widgets' } } } })).status, 201);
    await eventually('bound', async () => (await admin('GET', '/clusters/root:consumer/apis/apis.kcp.io/v1alpha2/apibindings/widgets')).json?.status?.phase === 'Bound');
    const widget = (name: string, size: number) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name }, spec: { size } });
    const ok = await eventually('served', async () => { const r = await admin('POST', '/clusters/root:consumer/apis/example.com/v1/namespaces/default/widgets', widget('lucky', 7)); return r.status === 201 && r; });
    assert.equal(ok.status, 201);
    const unlucky = await admin('POST', '/clusters/root:consumer/apis/example.com/v1/namespaces/default/widgets', widget('unlucky', 13));
    assert.equal(unlucky.status, 400, unlucky.body);
    assert.equal(unlucky.json.message, 'admission webhook "widgets.example.com" denied the request: size 13 is unlucky');
    assert.ok(seen.some((s) => s.path === '/deny-widgets' && s.kind === 'Widget' && s.namespace === 'default'));
  });

  test('matchPolicy Equivalent: a webhook registered for v1 gets a v2 request converted to v1 (requestKind v2), and its patch is converted back; Exact skips it', async () => {
    const version = (name: string, field: string, storage: boolean) => ({ name, served: true, storage, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } } } } });
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gadgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' }, versions: [version('v1', 'size', true), version('v2', 'size', false)] },
    };
    assert.equal((await admin('POST', '/clusters/root:team-b/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status, 201);
    await eventually('v2 served', async () => (await admin('GET', '/clusters/root:team-b/apis/example.com/v2')).status === 200, 10_000);
    const rules = [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['gadgets'] }];
    await kc('team-b', ['apply', '-f', '-'], { input: configYaml('Mutating', 'gadgets', [
      webhook('equivalent.example.com', '/add-size', { rules, matchPolicy: 'Equivalent' }),
      webhook('exact.example.com', '/record-exact', { rules, matchPolicy: 'Exact' }),
    ]) });
    seen.length = 0;
    const created = await admin('POST', '/clusters/root:team-b/apis/example.com/v2/namespaces/default/gadgets', { apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name: 'g' }, spec: {} });
    assert.equal(created.status, 201, created.body);
    assert.equal(created.json.apiVersion, 'example.com/v2');
    assert.equal(created.json.spec.size, 5, 'the v1 patch, applied to the v2 object');
    const calls = seen.filter((x) => x.kind === 'Gadget');
    assert.deepEqual(calls.map((x) => [x.path, x.version, x.requestVersion, x.object.apiVersion]), [['/add-size', 'v1', 'v2', 'example.com/v1']]);
    // Core Events and events.k8s.io Events are stored together: equivalent resources, as in kube.
    await kc('team-b', ['apply', '-f', '-'], { input: configYaml('Validating', 'events', [
      webhook('events.example.com', '/record-events', { rules: [{ operations: ['CREATE'], apiGroups: ['events.k8s.io'], apiVersions: ['v1'], resources: ['events'] }] }),
    ]) });
    seen.length = 0;
    const ev = await admin('POST', '/clusters/root:team-b/api/v1/namespaces/default/events', {
      apiVersion: 'v1', kind: 'Event', metadata: { name: 'e1' }, involvedObject: { kind: 'ConfigMap', name: 'x', namespace: 'default' }, reason: 'Tested', message: 'hello', type: 'Normal',
    });
    assert.equal(ev.status, 201, ev.body);
    const evCall = seen.find((x) => x.path === '/record-events');
    assert.ok(evCall, 'the events.k8s.io webhook saw the core Event');
    assert.deepEqual([evCall.version, evCall.requestVersion, evCall.object.apiVersion, evCall.object.note, evCall.object.regarding?.name], ['v1', 'v1', 'events.k8s.io/v1', 'hello', 'x']);

    // Admission policies match the same way and see the object in the version they matched.
    await kc('team-b', ['delete', 'mutatingwebhookconfiguration', 'gadgets']);
    const vap = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'gadgets-v1' }, spec: {
      matchConstraints: { resourceRules: rules },
      validations: [{ expression: "object.apiVersion == 'example.com/v1' && object.spec.size < 100", message: 'seen as v1, size under 100' }],
    } };
    const vapBinding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'gadgets-v1' }, spec: { policyName: 'gadgets-v1', validationActions: ['Deny'] } };
    await kc('team-b', ['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [vap, vapBinding] }) });
    const gadget = (name: string, size: number) => ({ apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name }, spec: { size } });
    const small = await eventually('policy active', async () => {
      const big = await admin('POST', '/clusters/root:team-b/apis/example.com/v2/namespaces/default/gadgets', gadget('big', 500));
      if (big.status === 201) { await admin('DELETE', '/clusters/root:team-b/apis/example.com/v2/namespaces/default/gadgets/big'); return false; }
      assert.equal(big.status, 422, big.body);
      assert.match(big.json.message, /seen as v1, size under 100/);
      return admin('POST', '/clusters/root:team-b/apis/example.com/v2/namespaces/default/gadgets', gadget('small', 5));
    });
    assert.equal(small.status, 201, small.body);
  });
});
