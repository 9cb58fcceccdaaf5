/**
 * Kubernetes protobuf on the wire (`application/vnd.kubernetes.protobuf`), over HTTPS against a
 * real server: every verb's answer, lists (large ones sliced), watch framing, PartialObjectMetadata,
 * errors, and what custom resources refuse — as a kube-apiserver v1.34 answers the same requests.
 * Answers are decoded with the codec (src/apimachinery/protobuf.ts); watch frames are split by
 * test/pbwire.ts. Client-go's serializer (test/protoref.ts) decodes the answers too, and encoding
 * what it decoded gives back the server's bytes: objects, lists, Statuses and watch frames are byte
 * for byte what kube-apiserver writes for the same content.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf } from '../../src/apimachinery/protobuf.js';
import { CM, ROOT_CA_CONFIGMAP, call, eventually, type Creds, type TestServer, useTestServer } from '../helpers.js';
import { PB, TYPED, decodedProtobuf, protobufWatch, rawCall, type WatchEventRead } from '../pbwire.js';
import { goDecode, goEncode, goWatchFrame, protoref } from '../protoref.js';
const NS = '/clusters/root/api/v1/namespaces/default';
const CRD_GROUP = 'pbtest.example.com';
const WIDGETS = `/clusters/root/apis/${CRD_GROUP}/v1/namespaces/default/widgets`;

let srv: TestServer;
useTestServer((s) => { srv = s; });

/** Checks that client-go decodes `body` and encodes what it decoded to the same bytes. */
function sameAsGo(body: Buffer): void {
  assert.ok(goEncode(goDecode(body)).equals(body), 'client-go re-encodes the answer to the same bytes');
}

/** One request to the test server (see test/pbwire.ts). */
const raw = (method: string, path: string, body?: Buffer | object, headers: Record<string, string> = {}, creds: Partial<Creds> & { ca: string } = srv.creds) =>
  rawCall(srv, creds, method, path, body, headers);
const pb = decodedProtobuf;
const pbWatch = (path: string, accept = PB) => protobufWatch(srv, srv.creds, path, accept);

const json = (method: string, path: string, body?: unknown) => call(srv, srv.creds, method, path, body);

describe('objects in protobuf', () => {
  test('create, get, update, patch and delete answer protobuf to a typed client', async () => {
    const created = await raw('POST', `${NS}/configmaps`, encodeKubernetesProtobuf(CM('pb1', { a: '1' })), { accept: TYPED });
    assert.equal(created.status, 201);
    const obj = pb(created);
    assert.equal(obj.kind, 'ConfigMap');
    assert.deepEqual(obj.data, { a: '1' });
    const asJson = (await json('GET', `${NS}/configmaps/pb1`)).json;
    const got = await raw('GET', `${NS}/configmaps/pb1`, undefined, { accept: TYPED });
    assert.equal(got.status, 200);
    assert.deepEqual(pb(got), asJson);
    sameAsGo(got.body);

    const updated = await raw('PUT', `${NS}/configmaps/pb1`, encodeKubernetesProtobuf({ ...asJson, data: { a: '2' } }), { accept: PB });
    assert.equal(updated.status, 200);
    assert.deepEqual(pb(updated).data, { a: '2' });

    const patched = await raw('PATCH', `${NS}/configmaps/pb1`, Buffer.from(JSON.stringify({ data: { b: '3' } })), { accept: TYPED, 'content-type': 'application/merge-patch+json' });
    assert.equal(patched.status, 200);
    assert.deepEqual(pb(patched).data, { a: '2', b: '3' });

    const deleted = await raw('DELETE', `${NS}/configmaps/pb1`, undefined, { accept: TYPED });
    assert.equal(deleted.status, 200);
    const status = pb(deleted);
    sameAsGo(deleted.body);
    assert.equal(status.kind, 'Status');
    assert.equal(status.status, 'Success');
    assert.equal(status.details.name, 'pb1');
    assert.equal(status.details.uid, asJson.metadata.uid);
  });

  test('a delete that leaves the object (finalizer) answers the object; DeleteOptions may come as protobuf', async () => {
    const cm = { ...CM('pbfin'), metadata: { name: 'pbfin', finalizers: ['example.com/hold'] } };
    assert.equal((await json('POST', `${NS}/configmaps`, cm)).status, 201);
    const opts = encodeKubernetesProtobuf({ apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background' });
    const r = await raw('DELETE', `${NS}/configmaps/pbfin`, opts, { accept: TYPED });
    assert.equal(r.status, 200);
    const obj = pb(r);
    assert.equal(obj.kind, 'ConfigMap');
    assert.ok(obj.metadata.deletionTimestamp);
    const release = await call(srv, srv.creds, 'PATCH', `${NS}/configmaps/pbfin`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(release.status, 200, release.body);
  });

  test('a patch body is never protobuf: 415 with the patch types', async () => {
    assert.equal((await json('POST', `${NS}/configmaps`, CM('pbpatch'))).status, 201);
    const r = await raw('PATCH', `${NS}/configmaps/pbpatch`, encodeKubernetesProtobuf(CM('pbpatch')), { accept: TYPED });
    assert.equal(r.status, 415);
    const status = pb(r);
    assert.equal(status.reason, 'UnsupportedMediaType');
    assert.match(status.message, /^the body of the request was in an unknown format - accepted media types include: application\/json-patch\+json, application\/merge-patch\+json/);
  });

  test('subresources and reviews: namespaces/status, serviceaccounts/token, SelfSubjectAccessReview, PartialObjectMetadata', async () => {
    const ns = await raw('GET', '/clusters/root/api/v1/namespaces/default/status', undefined, { accept: TYPED });
    assert.equal(ns.status, 200);
    assert.equal(pb(ns).status.phase, 'Active');

    assert.equal((await json('POST', `${NS}/serviceaccounts`, { metadata: { name: 'pbsa' } })).status, 201);
    const tr = await raw('POST', `${NS}/serviceaccounts/pbsa/token`,
      encodeKubernetesProtobuf({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['x'], expirationSeconds: 3600 } }), { accept: TYPED });
    assert.equal(tr.status, 201);
    const token = pb(tr);
    assert.equal(token.kind, 'TokenRequest');
    assert.match(token.status.token, /^ey/);

    const ssar = await raw('POST', '/clusters/root/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      encodeKubernetesProtobuf({ apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'default' } } }), { accept: TYPED });
    assert.equal(ssar.status, 201);
    assert.equal(pb(ssar).status.allowed, true);

    const pom = await raw('GET', `${NS}/serviceaccounts/pbsa`, undefined, { accept: `${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json` });
    const meta = pb(pom);
    assert.equal(meta.kind, 'PartialObjectMetadata');
    assert.equal(meta.apiVersion, 'meta.k8s.io/v1');
    assert.equal(meta.metadata.name, 'pbsa');
  });
});

describe('lists in protobuf', () => {
  test('a list decodes to what JSON answers; deletecollection answers the deleted objects', async () => {
    await json('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'pblist' } });
    // The controllers' writes into a new namespace (its root CA ConfigMap, its default service
    // account) are done before the lists, whose resourceVersion (the shard's) is compared.
    await eventually('the namespace settled', async () => (await json('GET', `/clusters/root/api/v1/namespaces/pblist/configmaps/${ROOT_CA_CONFIGMAP}`)).status === 200
      && (await json('GET', '/clusters/root/api/v1/namespaces/pblist/serviceaccounts/default')).status === 200);
    for (let i = 0; i < 5; i++) assert.equal((await json('POST', '/clusters/root/api/v1/namespaces/pblist/configmaps', CM(`c${i}`, { i: String(i) }, { set: 'a' }))).status, 201);
    const path = '/clusters/root/api/v1/namespaces/pblist/configmaps?labelSelector=set%3Da';
    const asJson = (await json('GET', path)).json;
    const listed = await raw('GET', path, undefined, { accept: TYPED });
    const list = pb(listed);
    assert.equal(list.kind, 'ConfigMapList');
    assert.equal(list.metadata.resourceVersion, asJson.metadata.resourceVersion);
    // Items of a protobuf list carry no apiVersion and kind (the item messages have no TypeMeta, as in kube).
    assert.deepEqual(list.items, asJson.items.map(({ apiVersion: _a, kind: _k, ...item }: any) => item));
    sameAsGo(listed.body);

    const metaAnswer = await raw('GET', path, undefined, { accept: `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json` });
    sameAsGo(metaAnswer.body);
    const meta = pb(metaAnswer);
    assert.equal(meta.kind, 'PartialObjectMetadataList');
    assert.deepEqual(meta.items.map((i: any) => i.metadata.name), ['c0', 'c1', 'c2', 'c3', 'c4']);
    assert.equal(meta.items[0].data, undefined);

    const removed = await raw('DELETE', path, undefined, { accept: TYPED });
    assert.equal(removed.status, 200);
    assert.equal(pb(removed).items.length, 5);
  });

  test('a large list (sliced) is whole, and other requests are answered meanwhile', async () => {
    await json('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'pbbig' } });
    const pad = 'x'.repeat(2000);
    for (let i = 0; i < 400; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => json('POST', '/clusters/root/api/v1/namespaces/pbbig/configmaps', CM(`big-${i + j}`, { pad }))));
    }
    const lists = Array.from({ length: 3 }, () => raw('GET', '/clusters/root/api/v1/namespaces/pbbig/configmaps', undefined, { accept: TYPED }));
    const probe = json('GET', '/clusters/root/api/v1/namespaces/default');
    const [first] = await Promise.all(lists);
    assert.equal((await probe).status, 200);
    const list = pb(first!);
    sameAsGo(first!.body);
    // Every namespace also holds the kube-root-ca.crt ConfigMap (root CA publisher).
    const names = list.items.map((i: any) => i.metadata.name).filter((n: string) => n.startsWith('big-'));
    assert.equal(names.length, 400);
    assert.ok(first!.body.length > 800_000, `${first!.body.length} bytes`);
    assert.deepEqual(names.sort(), Array.from({ length: 400 }, (_, i) => `big-${i}`).sort());
    assert.equal(list.items.find((i: any) => i.metadata.name === 'big-7').data.pad, pad);
  });

  test('a wildcard list carries kcp.io/cluster on every item', async () => {
    const list = pb(await raw('GET', '/clusters/*/api/v1/namespaces', undefined, { accept: TYPED }, srv.masters));
    assert.ok(list.items.length > 0);
    for (const item of list.items) assert.ok(item.metadata.annotations['kcp.io/cluster'], item.metadata.name);
  });
});

describe('watch in protobuf', () => {
  test('initial events, the initial-events-end bookmark, then live events, framed as kube', async () => {
    await json('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'pbwatch' } });
    assert.equal((await json('POST', '/clusters/root/api/v1/namespaces/pbwatch/configmaps', CM('w0'))).status, 201);
    const w = pbWatch('/clusters/root/api/v1/namespaces/pbwatch/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan');
    try {
      assert.equal(await w.type, `${PB};stream=watch`);
      // The root CA publisher's ConfigMap may arrive in the namespace at any time, and progress
      // bookmarks too: the events of w0 and the initial-events-end bookmark are what this test follows.
      const ours = (e: WatchEventRead) => e.object.metadata.name === 'w0' || e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true';
      const initial = await w.waitFor(2, ours);
      assert.deepEqual(initial.map((e) => e.type), ['ADDED', 'BOOKMARK']);
      assert.equal(initial[0]!.object.metadata.name, 'w0');
      const bookmark = initial[1]!.object;
      assert.equal(bookmark.kind, 'ConfigMap');
      assert.deepEqual(bookmark.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });
      assert.match(bookmark.metadata.resourceVersion, /^\d+$/);
      assert.equal(bookmark.metadata.name, undefined);

      assert.equal((await json('PUT', '/clusters/root/api/v1/namespaces/pbwatch/configmaps/w0', { ...CM('w0', { a: '2' }) })).status, 200);
      assert.equal((await json('DELETE', '/clusters/root/api/v1/namespaces/pbwatch/configmaps/w0')).status, 200);
      const all = await w.waitFor(4, ours);
      assert.deepEqual(all.map((e) => e.type), ['ADDED', 'BOOKMARK', 'MODIFIED', 'DELETED']);
      // Each frame as kube-apiserver writes it for the same event.
      for (const e of all) assert.ok(goWatchFrame(e.type, e.object).equals(e.frame), `${e.type} frame`);
      assert.deepEqual(all[2]!.object.data, { a: '2' });
    } finally { w.close(); }
  });

  test('PartialObjectMetadata events for a custom resource (the metadata informer); JSON where protobuf cannot be', async () => {
    await createWidgetCRD();
    assert.equal((await json('POST', WIDGETS, { apiVersion: `${CRD_GROUP}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } })).status, 201);
    const w = pbWatch(`${WIDGETS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`,
      `${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json`);
    try {
      assert.equal(await w.type, `${PB};stream=watch`);
      // Progress bookmarks may come too (one did, in the same read): w1 and the
      // initial-events-end bookmark are what this test follows.
      const ours = (e: WatchEventRead) => e.object.metadata?.name === 'w1' || e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true';
      const events = await w.waitFor(2, ours);
      assert.deepEqual(events.map((e) => [e.type, e.object.kind]), [['ADDED', 'PartialObjectMetadata'], ['BOOKMARK', 'PartialObjectMetadata']]);
      assert.equal(events[0]!.object.metadata.name, 'w1');
      assert.equal(events[0]!.object.spec, undefined);
    } finally { w.close(); }
    // A typed-client Accept on a custom resource falls back to JSON lines.
    const r = await call(srv, srv.creds, 'GET', `${WIDGETS}?watch=1&timeoutSeconds=1`, undefined, { accept: TYPED });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(JSON.parse(r.body.split('\n')[0]!).object.metadata.name, 'w1');
  });

  test('a watch refused before it starts answers a protobuf Status; YAML has no watch form', async () => {
    const r = await raw('GET', `${NS}/configmaps?watch=1&resourceVersion=abc`, undefined, { accept: TYPED });
    assert.equal(r.status, 400);
    assert.equal(pb(r).reason, 'BadRequest');
    const y = await raw('GET', `${NS}/configmaps?watch=1`, undefined, { accept: 'application/yaml' });
    assert.equal(y.status, 406);
    assert.equal(y.type, 'application/yaml'); // the Status in the form asked for, as kube
    assert.equal(parseYaml(y.body.toString()).message, 'only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch');
  });
});

async function createWidgetCRD(): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `widgets.${CRD_GROUP}` },
    spec: {
      group: CRD_GROUP, scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
  const r = await json('POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  assert.ok(r.status === 201 || r.status === 409, r.body);
  await eventually('widgets served', async () => (await json('GET', WIDGETS)).status === 200);
}

describe('custom resources and errors', () => {
  test('custom resources: protobuf alone is 406 (the Status itself in protobuf), a typed Accept gets JSON, a protobuf body 415', async () => {
    await createWidgetCRD();
    const only = await raw('GET', WIDGETS, undefined, { accept: PB });
    assert.equal(only.status, 406);
    assert.equal(pb(only).message, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
    const typed = await raw('GET', WIDGETS, undefined, { accept: TYPED });
    assert.equal(typed.status, 200);
    assert.equal(typed.type, 'application/json');
    const patch = await raw('PATCH', `${WIDGETS}/w1`, encodeKubernetesProtobuf(CM('w1')), { accept: 'application/json' });
    assert.equal(patch.status, 415);
    assert.equal(JSON.parse(patch.body.toString()).message, 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
    const body = await raw('POST', WIDGETS, encodeKubernetesProtobuf(CM('w9')), { accept: 'application/json' });
    assert.equal(body.status, 415);
    assert.equal(JSON.parse(body.body.toString()).message, 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
    // kube's metadata client: PartialObjectMetadataList in protobuf for custom resources too.
    const meta = await raw('GET', WIDGETS, undefined, { accept: `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json` });
    assert.equal(pb(meta).kind, 'PartialObjectMetadataList');
    // A custom resource's 404 to a typed Accept is a protobuf Status, as kube.
    const missing = await raw('GET', `${WIDGETS}/nope`, undefined, { accept: TYPED });
    assert.equal(missing.status, 404);
    assert.equal(pb(missing).reason, 'NotFound');
  });

  test('error Statuses follow Accept: protobuf when accepted without a transformation, else JSON', async () => {
    const missing = await raw('GET', `${NS}/configmaps/nope`, undefined, { accept: TYPED });
    assert.equal(missing.status, 404);
    sameAsGo(missing.body);
    const status = pb(missing);
    assert.deepEqual([status.kind, status.apiVersion, status.reason, status.code, status.details.name], ['Status', 'v1', 'NotFound', 404, 'nope']);
    const table = await raw('GET', `${NS}/configmaps/nope`, undefined, { accept: `${PB};as=Table;v=v1;g=meta.k8s.io` });
    assert.equal(table.status, 406);
    assert.equal(table.type, 'application/json');
    const bad = await raw('POST', `${NS}/configmaps`, Buffer.from('{bad'), { accept: TYPED, 'content-type': 'application/json' });
    assert.equal(bad.status, 400);
    assert.match(pb(bad).message, /^the object provided is unrecognized \(must be of type ConfigMap\)/);
    const anonymous = await raw('GET', `${NS}/configmaps`, undefined, { accept: TYPED }, { ca: srv.creds.ca });
    assert.equal(anonymous.status, 401);
    assert.equal(pb(anonymous).reason, 'Unauthorized');
    const garbage = await raw('POST', `${NS}/configmaps`, Buffer.from('garbage'), { accept: 'application/json' });
    assert.equal(garbage.status, 400);
  });
});

describe('discovery in protobuf', () => {
  /** client-go v0.34 discovery's Accept for /api and /apis (discovery_client.go acceptDiscoveryFormats): aggregated v2, v2beta1, then legacy, all JSON. */
  const CLIENT_GO_DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
  /** The protobuf-first form: aggregated v2 in protobuf, then as client-go v0.34. */
  const PROTOBUF_DISCOVERY = `${PB};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,${CLIENT_GO_DISCOVERY}`;
  const AGGREGATED_PB = `${PB};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`;

  test('/api, /apis, /apis/<group>, /api/v1 and /apis/<group>/<version> answer protobuf to a typed Accept: the JSON documents, Go\'s bytes', async () => {
    for (const [path, kind] of [['/clusters/root/apis', 'APIGroupList'], ['/clusters/root/apis/rbac.authorization.k8s.io', 'APIGroup'],
      ['/clusters/root/api/v1', 'APIResourceList'], ['/clusters/root/apis/coordination.k8s.io/v1', 'APIResourceList']] as const) {
      const asJson = (await json('GET', path)).json;
      const answer = await raw('GET', path, undefined, { accept: TYPED });
      assert.equal(answer.status, 200, path);
      const doc = pb(answer);
      assert.equal(doc.kind, kind);
      assert.deepEqual(doc, asJson, path);
      sameAsGo(answer.body);
    }
    // /api: APIVersions with the empty apiVersion of kube's stripVersionEncoder, in JSON (none) and protobuf alike.
    const asJson = (await json('GET', '/clusters/root/api')).json;
    assert.equal(asJson.apiVersion, undefined);
    const answer = await raw('GET', '/clusters/root/api', undefined, { accept: TYPED });
    assert.equal(answer.type, PB);
    assert.ok(answer.body.equals(protoref(['encode', '--strip-version'], JSON.stringify({ ...asJson, apiVersion: 'v1' }))), 'Go\'s bytes');
    // (client-go's discovery client asks /api in JSON: its protobuf decoder refuses an empty apiVersion.)
  });

  test('aggregated discovery: protobuf when asked first, typed with g, v and as; client-go v0.34\'s JSON Accept still answered in JSON', async () => {
    for (const path of ['/clusters/root/api', '/clusters/root/apis']) {
      const asJson = await raw('GET', path, undefined, { accept: CLIENT_GO_DISCOVERY });
      assert.equal(asJson.type, 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
      const expected = JSON.parse(asJson.body.toString());
      const answer = await raw('GET', path, undefined, { accept: PROTOBUF_DISCOVERY });
      assert.equal(answer.status, 200);
      assert.equal(answer.type, AGGREGATED_PB);
      const doc = decodeKubernetesProtobuf(answer.body);
      assert.deepEqual(doc, expected, path);
      assert.equal(doc.kind, 'APIGroupDiscoveryList');
      sameAsGo(answer.body);
      // v2beta1 in protobuf too (kube serves both while v2beta1 is not removed).
      const beta = await raw('GET', path, undefined, { accept: `${PB};g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList` });
      assert.equal(beta.type, `${PB};g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList`);
      assert.equal(decodeKubernetesProtobuf(beta.body).apiVersion, 'apidiscovery.k8s.io/v2beta1');
    }
  });

  test('meta.k8s.io/v1beta1 PartialObjectMetadataList in protobuf: items = 1, metadata = 2, Go\'s bytes', async () => {
    const path = '/clusters/root/api/v1/namespaces/default/configmaps';
    assert.equal((await json('POST', path, CM('pbv1beta1', { a: '1' }))).status, 201);
    const accept = `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1,application/json`;
    const answer = await raw('GET', path, undefined, { accept });
    assert.equal(answer.status, 200);
    const list = pb(answer);
    assert.equal(list.apiVersion, 'meta.k8s.io/v1beta1');
    assert.ok(list.items.some((i: any) => i.metadata.name === 'pbv1beta1'));
    assert.ok(list.metadata.resourceVersion);
    sameAsGo(answer.body);
  });
});
