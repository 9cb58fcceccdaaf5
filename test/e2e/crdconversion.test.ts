/**
 * CRD conversion webhooks (`spec.conversion.strategy: Webhook`) with cert-manager's own
 * Certificate CRD from the fixtures and a real conversion webhook served by the test (node:https
 * with its own CA), driven with kubectl. The CRD gets back the `v1alpha2` version cert-manager
 * once served beside `v1`, with its key settings at the top of `spec` (`keyAlgorithm: ecdsa`,
 * `keySize`, `keyEncoding: pkcs8`) where v1 has `spec.privateKey` (`algorithm: ECDSA`, `size`,
 * `encoding: PKCS8`); the webhook converts between them, as cert-manager's webhook did.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { call, createWorkspace, eventually, kubectl, startRedis, startTestServer, TESTDATA_CRDS, watch, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
let hook: Server;
let hookURL = '';
let caBundle = '';
/** How the webhook answers: converts, fails, answers with the wrong uid, or tampers with metadata. */
let mode: 'convert' | 'failure-status' | 'wrong-uid' | 'tamper' | 'slow-500' = 'convert';
/** The ConversionReviews the webhook received. */
const reviews: { apiVersion: string; desiredAPIVersion: string; objects: any[] }[] = [];

const WS = '/clusters/root:certs';
const V1 = `${WS}/apis/cert-manager.io/v1/namespaces/default/certificates`;
const V1ALPHA2 = `${WS}/apis/cert-manager.io/v1alpha2/namespaces/default/certificates`;
const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res> => call(srv, srv.creds, method, path, body, headers);
const kc = (args: string[], opts?: Parameters<typeof kubectl>[2]) => kubectl(srv.kubeconfigPath, [`--server=${srv.url}${WS}`, ...args], opts);

const LOWER: Record<string, string> = { RSA: 'rsa', ECDSA: 'ecdsa', Ed25519: 'ed25519', PKCS1: 'pkcs1', PKCS8: 'pkcs8' };
const UPPER = Object.fromEntries(Object.entries(LOWER).map(([k, v]) => [v, k]));

/** cert-manager's conversion between v1alpha2 (key settings in spec) and v1 (spec.privateKey). */
function convert(obj: any, desired: string): any {
  const out = structuredClone(obj);
  out.apiVersion = desired;
  const spec = out.spec ?? {};
  if (desired === 'cert-manager.io/v1') {
    const pk: Record<string, unknown> = {};
    if (spec.keyAlgorithm) pk.algorithm = UPPER[spec.keyAlgorithm];
    if (spec.keySize !== undefined) pk.size = spec.keySize;
    if (spec.keyEncoding) pk.encoding = UPPER[spec.keyEncoding];
    delete spec.keyAlgorithm; delete spec.keySize; delete spec.keyEncoding;
    if (Object.keys(pk).length) spec.privateKey = { ...spec.privateKey, ...pk };
  } else {
    const pk = spec.privateKey ?? {};
    if (pk.algorithm) spec.keyAlgorithm = LOWER[pk.algorithm];
    if (pk.size !== undefined) spec.keySize = pk.size;
    if (pk.encoding) spec.keyEncoding = LOWER[pk.encoding];
    delete spec.privateKey;
  }
  return out;
}

function respond(review: any): any {
  const req = review.request;
  const answer = (response: object) => ({ apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: req.uid, ...response } });
  switch (mode) {
    case 'failure-status': return answer({ result: { status: 'Failure', message: 'refusing to convert today' } });
    case 'wrong-uid': return { ...answer({ convertedObjects: [], result: { status: 'Success' } }), response: { uid: 'not-the-request', result: { status: 'Success' } } };
    case 'tamper':
      return answer({
        result: { status: 'Success' },
        convertedObjects: req.objects.map((o: any) => {
          const c = convert(o, req.desiredAPIVersion);
          return { ...c, metadata: { ...c.metadata, name: 'renamed', uid: 'changed', labels: { ...c.metadata.labels, converted: 'yes' } } };
        }),
      });
    default: return answer({ result: { status: 'Success' }, convertedObjects: req.objects.map((o: any) => convert(o, req.desiredAPIVersion)) });
  }
}

/** The fixture's Certificate CRD with cert-manager's old v1alpha2 version, converted by the test's webhook. */
function certificateCRD(): any {
  const crd = parse(readFileSync(join(TESTDATA_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml'), 'utf8'));
  const v1 = crd.spec.versions.find((v: any) => v.name === 'v1');
  const v1alpha2 = structuredClone(v1);
  v1alpha2.name = 'v1alpha2';
  v1alpha2.storage = false;
  const specProps = v1alpha2.schema.openAPIV3Schema.properties.spec.properties;
  delete specProps.privateKey;
  specProps.keyAlgorithm = { type: 'string', enum: ['rsa', 'ecdsa', 'ed25519'] };
  specProps.keySize = { type: 'integer' };
  specProps.keyEncoding = { type: 'string', enum: ['pkcs1', 'pkcs8'] };
  crd.spec.versions = [v1, v1alpha2];
  crd.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { url: `${hookURL}/convert`, caBundle }, conversionReviewVersions: ['v1', 'v1beta1'] } };
  return crd;
}

const certificate = (name: string, apiVersion: string, spec: Record<string, unknown>) => ({
  apiVersion, kind: 'Certificate', metadata: { name, namespace: 'default', labels: { app: 'web' } },
  spec: { secretName: `${name}-tls`, dnsNames: [`${name}.example.com`], issuerRef: { name: 'ca-issuer', kind: 'Issuer' }, ...spec },
});

before(async () => {
  const ca = await createCA('conversion-webhook-test-ca');
  const serving = await issueServingCert(ca, { commonName: 'conversion-webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  caBundle = Buffer.from(ca.certPem).toString('base64');
  hook = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString());
      reviews.push({ apiVersion: review.apiVersion, desiredAPIVersion: review.request.desiredAPIVersion, objects: review.request.objects });
      if (mode === 'slow-500') { res.writeHead(500); res.end('boom'); return; }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(respond(review)));
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  hookURL = `https://127.0.0.1:${(hook.address() as { port: number }).port}`;
  redis = await startRedis();
  srv = await startTestServer(redis);
  await createWorkspace(srv, 'certs');
  const applied = await kc(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(certificateCRD()) });
  assert.match(applied.stdout, /certificates.cert-manager.io serverside-applied/);
  await eventually('v1alpha2 served', async () => (await admin('GET', `${WS}/apis/cert-manager.io/v1alpha2`)).status === 200, 10_000);
});
after(async () => {
  await srv?.stop(); await redis?.stop();
  hook?.closeAllConnections(); hook?.close();
});

describe('CRD conversion webhooks', () => {
  test('an object created in v1alpha2 with kubectl is stored in v1 by the webhook and read back in either version', async () => {
    mode = 'convert';
    reviews.length = 0;
    const created = await kc(['apply', '-f', '-'], { input: JSON.stringify(certificate('web', 'cert-manager.io/v1alpha2', { keyAlgorithm: 'ecdsa', keySize: 256, keyEncoding: 'pkcs8' })) });
    assert.match(created.stdout, /certificate.cert-manager.io\/web created/);
    assert.ok(reviews.some((r) => r.desiredAPIVersion === 'cert-manager.io/v1' && r.objects[0]?.spec?.keyAlgorithm === 'ecdsa'), 'the webhook converted the new object to the storage version');
    assert.equal(reviews[0]!.apiVersion, 'apiextensions.k8s.io/v1', 'the first conversionReviewVersion this server speaks');
    const v1 = (await admin('GET', `${V1}/web`)).json;
    assert.equal(v1.apiVersion, 'cert-manager.io/v1');
    assert.deepEqual(v1.spec.privateKey, { algorithm: 'ECDSA', size: 256, encoding: 'PKCS8' });
    assert.equal(v1.spec.keyAlgorithm, undefined);
    const old = JSON.parse((await kc(['get', 'certificates.v1alpha2.cert-manager.io', 'web', '-n', 'default', '-o', 'json'])).stdout);
    assert.equal(old.apiVersion, 'cert-manager.io/v1alpha2');
    assert.deepEqual([old.spec.keyAlgorithm, old.spec.keySize, old.spec.keyEncoding, old.spec.privateKey], ['ecdsa', 256, 'pkcs8', undefined]);
    assert.equal(old.metadata.uid, v1.metadata.uid);
    assert.equal(old.metadata.resourceVersion, v1.metadata.resourceVersion);
  });

  test('a list in v1alpha2 converts all its objects in one ConversionReview', async () => {
    mode = 'convert';
    for (const n of ['a', 'b', 'c', 'd']) {
      assert.equal((await admin('POST', V1, certificate(`list-${n}`, 'cert-manager.io/v1', { privateKey: { algorithm: 'RSA', size: 2048 } }))).status, 201);
    }
    reviews.length = 0;
    const listed = JSON.parse((await kc(['get', 'certificates.v1alpha2.cert-manager.io', '-n', 'default', '-o', 'json'])).stdout);
    const items = listed.items.filter((i: any) => i.metadata.name.startsWith('list-'));
    assert.equal(items.length, 4);
    for (const i of items) assert.deepEqual([i.apiVersion, i.spec.keyAlgorithm, i.spec.keySize], ['cert-manager.io/v1alpha2', 'rsa', 2048]);
    const toOld = reviews.filter((r) => r.desiredAPIVersion === 'cert-manager.io/v1alpha2');
    assert.equal(toOld.length, 1, `one review for the list, got ${toOld.length}`);
    assert.ok(toOld[0]!.objects.length >= 4);
    // The table kubectl prints comes from the converted objects too.
    const table = await kc(['get', 'certificates.v1alpha2.cert-manager.io', '-n', 'default']);
    assert.match(table.stdout, /list-a/);
  });

  test('patch and server-side apply in v1alpha2 update the stored v1 object', async () => {
    mode = 'convert';
    const patched = await kc(['patch', 'certificates.v1alpha2.cert-manager.io', 'web', '-n', 'default', '--type=merge', '-p', '{"spec":{"keySize":384}}']);
    assert.match(patched.stdout, /patched/);
    assert.equal((await admin('GET', `${V1}/web`)).json.spec.privateKey.size, 384);
    const applied = await kc(['apply', '--server-side', '--field-manager=team', '-f', '-'], { input: JSON.stringify(certificate('ssa', 'cert-manager.io/v1alpha2', { keyAlgorithm: 'rsa', keySize: 4096 })) });
    assert.match(applied.stdout, /serverside-applied/);
    const v1 = (await admin('GET', `${V1}/ssa`)).json;
    assert.deepEqual(v1.spec.privateKey, { algorithm: 'RSA', size: 4096 });
    const invalid = await admin('PATCH', `${V1ALPHA2}/web`, { spec: { keyAlgorithm: 'dsa' } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(invalid.status, 422, 'validated against the v1alpha2 schema');
    assert.match(invalid.json.message, /keyAlgorithm/);
  });

  test('a watch in v1alpha2 sees converted events', async () => {
    mode = 'convert';
    const rv = (await admin('GET', V1ALPHA2)).json.metadata.resourceVersion;
    const w = watch(srv, srv.creds, `${V1ALPHA2}?watch=true&resourceVersion=${rv}`);
    try {
      assert.equal((await admin('POST', V1, certificate('watched', 'cert-manager.io/v1', { privateKey: { algorithm: 'Ed25519' } }))).status, 201);
      assert.equal((await admin('PATCH', `${V1}/watched`, { spec: { privateKey: { encoding: 'PKCS1' } } }, { 'content-type': 'application/merge-patch+json' })).status, 200);
      const events = await w.waitFor(2);
      assert.deepEqual(events.map((e) => [e.type, e.object.apiVersion, e.object.spec.keyAlgorithm, e.object.spec.keyEncoding]), [
        ['ADDED', 'cert-manager.io/v1alpha2', 'ed25519', undefined],
        ['MODIFIED', 'cert-manager.io/v1alpha2', 'ed25519', 'pkcs1'],
      ]);
    } finally { w.close(); }
  });

  test('a default added to the storage version later is applied on read before the conversion: existing objects show it in every version', async () => {
    mode = 'convert';
    assert.equal((await admin('POST', V1, certificate('older', 'cert-manager.io/v1', {}))).status, 201);
    const withDefault = certificateCRD();
    withDefault.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.commonName.default = 'defaulted.example.com';
    const apply = (crd: unknown) => kc(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify(crd) });
    await apply(withDefault);
    try {
      await eventually('v1alpha2 shows the v1 default', async () => (await admin('GET', `${V1ALPHA2}/older`)).json?.spec?.commonName === 'defaulted.example.com', 10_000);
      assert.ok(reviews.some((r) => r.desiredAPIVersion === 'cert-manager.io/v1alpha2' && r.objects.some((o) => o.metadata.name === 'older' && o.spec.commonName === 'defaulted.example.com')),
        'the webhook was sent the object defaulted by the schema of the version it is stored in');
      assert.equal((await admin('GET', `${V1}/older`)).json.spec.commonName, 'defaulted.example.com');
      const list = (await admin('GET', V1ALPHA2)).json;
      assert.ok(list.items.length > 1 && list.items.every((o: any) => o.spec.commonName === 'defaulted.example.com'), 'listed defaulted');
    } finally {
      await apply(certificateCRD());
      await eventually('the default is gone again', async () => (await admin('GET', `${V1}/older`)).json?.spec?.commonName === undefined, 10_000);
    }
  });

  test('the webhook may change labels and annotations only; unknown fields it adds are pruned', async () => {
    mode = 'tamper';
    assert.equal((await admin('POST', V1, certificate('tampered', 'cert-manager.io/v1', { privateKey: { algorithm: 'RSA' } }))).status, 201);
    const got = (await admin('GET', `${V1ALPHA2}/tampered`)).json;
    assert.equal(got.metadata.name, 'tampered');
    assert.notEqual(got.metadata.uid, 'changed');
    assert.equal(got.metadata.labels.converted, 'yes');
    mode = 'convert';
  });

  test('a failing webhook: reads and writes in v1alpha2 answer 500 InternalError, nothing is written, v1 is unaffected', async () => {
    for (const [m, why] of [['failure-status', /refusing to convert today/], ['wrong-uid', /expected response uid/], ['slow-500', /responded with 500/]] as const) {
      mode = m;
      // A new object: its v1alpha2 form is not converted yet.
      assert.equal((await admin('POST', V1, certificate(`v1-${m}`, 'cert-manager.io/v1', {}))).status, 201, 'writes in the storage version need no webhook');
      const get = await admin('GET', `${V1ALPHA2}/v1-${m}`);
      assert.equal(get.status, 500, get.body);
      assert.equal(get.json.kind, 'Status');
      assert.equal(get.json.reason, 'InternalError');
      assert.match(get.json.message, /conversion webhook for cert-manager.io\/v1, Kind=Certificate failed/);
      assert.match(get.json.message, why);
      const create = await admin('POST', V1ALPHA2, certificate(`old-${m}`, 'cert-manager.io/v1alpha2', { keySize: 256 }));
      assert.equal(create.status, 500, create.body);
      assert.equal((await admin('GET', `${V1}/old-${m}`)).status, 404, 'nothing stored');
      assert.equal((await admin('GET', `${V1}/v1-${m}`)).status, 200);
      const list = await admin('GET', V1ALPHA2);
      assert.equal(list.status, 500);
    }
    mode = 'convert';
    assert.equal((await admin('GET', `${V1ALPHA2}/v1-wrong-uid`)).status, 200, 'a working webhook again: readable');
  });

  test('a conversion webhook given as a Service reference is refused with 422 and a clear cause', async () => {
    const crd = certificateCRD();
    crd.metadata.name = 'widgets.example.com';
    crd.spec.group = 'example.com';
    crd.spec.names = { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' };
    crd.spec.conversion.webhook.clientConfig = { service: { name: 'conv', namespace: 'default', path: '/convert' } };
    const res = await admin('POST', `${WS}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd);
    assert.equal(res.status, 422, res.body);
    assert.ok(res.json.details.causes.some((c: any) => c.field === 'spec.conversion.webhookClientConfig.service' && /no Services to route to; use url/.test(c.message)));
  });

  test('the CRD is deleted, with its objects, while its conversion webhook fails (deletion goes through the storage version)', async () => {
    mode = 'slow-500';
    const deleted = await kc(['delete', 'crd', 'certificates.cert-manager.io', '--timeout=30s']);
    assert.match(deleted.stdout, /deleted/);
    await eventually('CRD gone', async () => (await admin('GET', `${WS}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io`)).status === 404, 15_000);
    mode = 'convert';
  });
});
