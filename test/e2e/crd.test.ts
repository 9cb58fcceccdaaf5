/**
 * Custom resources per logical cluster with real CRDs (cert-manager, prometheus-operator) and
 * real kubectl: CRDs become Established, their kinds are served with schema validation, CEL
 * rules, pruning and defaulting, kubectl explain works, two logical clusters hold different
 * versions of one CRD, and deleting a CRD deletes its resources.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call, eventually, sleep, type TestServer, createLogicalCluster, useTestServer, type Kubectl, watch } from '../helpers.js';
import { TESTDATA_CRDS } from '../helpers.js';

const CRDS = TESTDATA_CRDS;
let srv: TestServer;
let kc: Kubectl;

useTestServer((s, _r, k) => { srv = s; kc = k; });

async function waitEstablished(cluster: string, name: string): Promise<any> {
  for (let i = 0; i < 100; i++) {
    const r = await call(srv, srv.creds, 'GET', `/clusters/${cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    if (r.json?.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True')) return r.json;
    await sleep(50);
  }
  throw new Error(`CRD ${name} not Established`);
}

const certificate = (name: string, spec: Record<string, unknown>) => `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: ${name}
  namespace: default
spec: ${JSON.stringify(spec)}
`;

describe('cert-manager CRDs', () => {
  test('apply (client-side) → Established → served, listed and explained', async () => {
    await kc(['apply', '-f', join(CRDS, 'cert-manager')]);
    for (const n of ['certificates', 'issuers', 'clusterissuers', 'certificaterequests']) await waitEstablished('root', `${n}.cert-manager.io`);
    await waitEstablished('root', 'challenges.acme.cert-manager.io');
    const res = (await kc(['api-resources', '--api-group', 'cert-manager.io', '-o', 'name'])).stdout.split('\n').filter(Boolean).sort();
    assert.deepEqual(res, ['certificaterequests.cert-manager.io', 'certificates.cert-manager.io', 'clusterissuers.cert-manager.io', 'issuers.cert-manager.io']);
    const explain = (await kc(['explain', 'certificate.spec.secretName'])).stdout;
    assert.match(explain, /FIELD:\s+secretName <string>/);
    // The type and object metadata are described in kube's words (the CRD OpenAPI builder's
    // TypeMeta and ObjectMeta texts), as Kubernetes' CustomResourcePublishOpenAPI spec expects.
    // kubectl wraps descriptions at 80 columns: compare with whitespace collapsed.
    const flat = (text: string) => text.replace(/\s+/g, ' ');
    const top = flat((await kc(['explain', 'certificate'])).stdout);
    assert.match(top, /apiVersion <string> APIVersion defines the versioned schema of this representation of an object\./);
    assert.match(top, /kind <string> Kind is a string value representing the REST resource this object represents\./);
    assert.match(top, /metadata <ObjectMeta> Standard object's metadata\./);
    const meta = flat((await kc(['explain', 'certificate.metadata'])).stdout);
    assert.match(meta, /creationTimestamp <string> CreationTimestamp is a timestamp representing the server time/);
  });

  test('valid Certificate accepted, shown with its printer columns; invalid ones rejected with field paths', async () => {
    const ok = await kc(['apply', '-f', '-'], { input: certificate('good', { secretName: 'good-tls', dnsNames: ['a.example.com'], issuerRef: { name: 'ca' } }) });
    assert.match(ok.stdout, /certificate.cert-manager.io\/good created/);
    const table = (await kc(['get', 'certificates'])).stdout;
    assert.match(table, /^NAME\s+READY\s+SECRET\s+AGE/);
    assert.match(table, /^good\s+\S*\s*good-tls\s+/m);
    const missing = await kc(['apply', '-f', '-'], { input: certificate('missing', { dnsNames: ['a.example.com'] }), allowFail: true });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /spec.secretName: Required value/);
    assert.match(missing.stderr, /spec.issuerRef: Required value/);
    const wrongType = await kc(['apply', '-f', '-'], { input: certificate('wrongtype', { secretName: 'x', issuerRef: { name: 'ca' }, dnsNames: 'not-a-list' }), allowFail: true });
    assert.notEqual(wrongType.code, 0);
    assert.match(wrongType.stderr, /spec.dnsNames/);
    const unknown = await kc(['apply', '-f', '-'], { input: certificate('unknown', { secretName: 'x', issuerRef: { name: 'ca' }, bogus: 1 }), allowFail: true });
    assert.match(unknown.stderr, /unknown field "spec.bogus"/, 'kubectl asks for Strict field validation');
    const pruned = await call(srv, srv.creds, 'POST', '/clusters/root/apis/cert-manager.io/v1/namespaces/default/certificates?fieldValidation=Ignore',
      { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'pruned' }, spec: { secretName: 'x', issuerRef: { name: 'ca' }, bogus: 1 } });
    assert.equal(pruned.status, 201, pruned.body);
    assert.equal(pruned.json.spec.bogus, undefined);
    assert.equal(pruned.json.metadata.generation, 1);
  });

  test('the Issuer CEL rule ("exactly one of …") is enforced', async () => {
    const issuer = (spec: Record<string, unknown>) => ({ apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name: 'i' }, spec });
    const tpp = { url: 'https://tpp.example.com', credentialsRef: { name: 'creds' } };
    const cloud = { apiTokenSecretRef: { name: 'token', key: 'k' } };
    const url = '/clusters/root/apis/cert-manager.io/v1/namespaces/default/issuers';
    const two = await call(srv, srv.creds, 'POST', url, issuer({ venafi: { zone: 'z', tpp, cloud } }));
    assert.equal(two.status, 422, two.body);
    assert.equal(two.json.reason, 'Invalid');
    assert.deepEqual(two.json.details.causes.map((c: any) => c.field), ['spec.venafi']);
    assert.match(two.json.message, /exactly one of tpp, cloud, or ngts must be configured/);
    const none = await call(srv, srv.creds, 'POST', url, issuer({ venafi: { zone: 'z' } }));
    assert.equal(none.status, 422);
    const one = await call(srv, srv.creds, 'POST', url, issuer({ venafi: { zone: 'z', tpp } }));
    assert.equal(one.status, 201, one.body);
  });

  test('deleting the CRD deletes its custom resources', async () => {
    await kc(['delete', 'crd', 'certificates.cert-manager.io', '--timeout=30s']);
    const gone = await call(srv, srv.creds, 'GET', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io');
    assert.equal(gone.status, 404);
    assert.equal((await call(srv, srv.creds, 'GET', '/clusters/root/apis/cert-manager.io/v1/namespaces/default/certificates')).status, 404);
    // Re-created, it starts empty: the old objects were deleted with it.
    await kc(['apply', '-f', join(CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml')]);
    await waitEstablished('root', 'certificates.cert-manager.io');
    const list = await call(srv, srv.creds, 'GET', '/clusters/root/apis/cert-manager.io/v1/certificates');
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.items, []);
  });
});

describe('prometheus-operator CRDs', () => {
  test('prometheuses is over the annotation limit for client-side apply, and creates fine', async () => {
    const file = join(CRDS, 'prometheus-operator', 'monitoring.coreos.com_prometheuses.yaml');
    const r = await kc(['apply', '-f', file], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /metadata.annotations: Too long: must have at most 262144 bytes/);
    await kc(['create', '-f', file]);
    await waitEstablished('root', 'prometheuses.monitoring.coreos.com');
    const p = await call(srv, srv.creds, 'POST', '/clusters/root/apis/monitoring.coreos.com/v1/namespaces/default/prometheuses', { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: 'p' }, spec: { replicas: 1 } });
    assert.equal(p.status, 201, p.body);
  });
});

describe('logical clusters hold their own CRDs', () => {
  test('same group and kind, different versions and schemas, each enforced', async () => {
    const crd = (version: string, field: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', required: [field], properties: { [field]: { type: 'string' }, size: { type: 'integer', default: 3 } } } } } } }],
      },
    });
    for (const [c, v, f] of [['wa', 'v1', 'color'], ['wb', 'v2', 'shape']] as const) {
      assert.equal((await createLogicalCluster(srv, c)).status, 201);
      await call(srv, srv.creds, 'POST', `/clusters/${c}/api/v1/namespaces`, { metadata: { name: 'default' } });
      const r = await call(srv, srv.creds, 'POST', `/clusters/${c}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd(v, f));
      assert.equal(r.status, 201, r.body);
      await waitEstablished(c, 'widgets.example.com');
    }
    const w = (v: string, spec: object) => ({ apiVersion: `example.com/${v}`, kind: 'Widget', metadata: { name: 'w' }, spec });
    const a = await call(srv, srv.creds, 'POST', '/clusters/wa/apis/example.com/v1/namespaces/default/widgets', w('v1', { color: 'red' }));
    assert.equal(a.status, 201, a.body);
    assert.equal(a.json.spec.size, 3, 'default applied');
    assert.equal((await call(srv, srv.creds, 'POST', '/clusters/wa/apis/example.com/v1/namespaces/default/widgets', { ...w('v1', { shape: 'round' }), metadata: { name: 'w2' } })).status, 422);
    assert.equal((await call(srv, srv.creds, 'GET', '/clusters/wa/apis/example.com/v2/namespaces/default/widgets')).status, 404);
    const b = await call(srv, srv.creds, 'POST', '/clusters/wb/apis/example.com/v2/namespaces/default/widgets', w('v2', { shape: 'round' }));
    assert.equal(b.status, 201, b.body);
    assert.equal((await call(srv, srv.creds, 'POST', '/clusters/wb/apis/example.com/v2/namespaces/default/widgets', { ...w('v2', { color: 'red' }), metadata: { name: 'w2' } })).status, 422);
    assert.equal((await call(srv, srv.creds, 'GET', '/clusters/root/apis/example.com/v1/namespaces/default/widgets')).status, 404);
  });
});

describe('subresources of custom resources', () => {
  test('status and scale (kubectl scale)', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'pools.example.org' },
      spec: {
        group: 'example.org', scope: 'Namespaced', names: { plural: 'pools', singular: 'pool', kind: 'Pool', shortNames: ['pl'] },
        versions: [{
          name: 'v1', served: true, storage: true,
          subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } },
          additionalPrinterColumns: [{ name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' }],
          schema: { openAPIV3Schema: { type: 'object', properties: {
            spec: { type: 'object', properties: { replicas: { type: 'integer', minimum: 0 } } },
            status: { type: 'object', properties: { replicas: { type: 'integer' }, selector: { type: 'string' } } },
          } } },
        }],
      },
    };
    assert.equal((await call(srv, srv.creds, 'POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status, 201);
    await waitEstablished('root', 'pools.example.org');
    const base = '/clusters/root/apis/example.org/v1/namespaces/default/pools';
    const created = await call(srv, srv.creds, 'POST', base, { apiVersion: 'example.org/v1', kind: 'Pool', metadata: { name: 'p' }, spec: { replicas: 1 }, status: { replicas: 9 } });
    assert.equal(created.status, 201, created.body);
    assert.equal(created.json.status, undefined, 'status is not set on create');
    const st = await call(srv, srv.creds, 'PUT', `${base}/p/status`, { ...created.json, status: { replicas: 1, selector: 'app=p' } });
    assert.equal(st.status, 200, st.body);
    await kc(['scale', 'pool', 'p', '--replicas=4']);
    const scale = await call(srv, srv.creds, 'GET', `${base}/p/scale`);
    assert.deepEqual([scale.json.kind, scale.json.apiVersion, scale.json.spec.replicas, scale.json.status], ['Scale', 'autoscaling/v1', 4, { replicas: 1, selector: 'app=p' }]);
    const obj = (await call(srv, srv.creds, 'GET', `${base}/p`)).json;
    assert.equal(obj.spec.replicas, 4);
    assert.equal(obj.metadata.generation, 2);
    assert.equal((await call(srv, srv.creds, 'PUT', `${base}/p/scale`, { ...scale.json, spec: { replicas: -1 } })).status, 422);
    assert.match((await kc(['get', 'pl'])).stdout, /^p\s+4\s*$/m);
    // Deleting a namespace deletes its custom resources too.
    await kc(['create', 'namespace', 'pools']);
    await kc(['-n', 'pools', 'apply', '-f', '-'], { input: 'apiVersion: example.org/v1\nkind: Pool\nmetadata: {name: q}\nspec: {replicas: 2}\n' });
    await kc(['delete', 'namespace', 'pools', '--timeout=30s']);
    const left = await call(srv, srv.creds, 'GET', '/clusters/root/apis/example.org/v1/pools');
    assert.deepEqual(left.json.items.map((i: any) => i.metadata.namespace), ['default']);
  });
});

describe('versions and schema changes', () => {
  test('two served versions share storage (conversion None); a schema update applies to later writes', async () => {
    const schema = (required: string[]) => ({ openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', required, properties: { a: { type: 'string' }, b: { type: 'string' } } } } } });
    const crd = (required: string[], rv?: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gadgets.example.net', ...(rv ? { resourceVersion: rv } : {}) },
      spec: {
        group: 'example.net', scope: 'Cluster', names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [
          { name: 'v1', served: true, storage: true, schema: schema(required) },
          { name: 'v2beta1', served: true, storage: false, schema: schema(required) },
        ],
      },
    });
    const CRDS_URL = '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    assert.equal((await call(srv, srv.creds, 'POST', CRDS_URL, crd(['a']))).status, 201);
    await waitEstablished('root', 'gadgets.example.net');
    const made = await call(srv, srv.creds, 'POST', '/clusters/root/apis/example.net/v2beta1/gadgets', { apiVersion: 'example.net/v2beta1', kind: 'Gadget', metadata: { name: 'g' }, spec: { a: 'x' } });
    assert.equal(made.status, 201, made.body);
    assert.equal(made.json.apiVersion, 'example.net/v2beta1');
    const v1 = await call(srv, srv.creds, 'GET', '/clusters/root/apis/example.net/v1/gadgets/g');
    assert.equal(v1.json.apiVersion, 'example.net/v1');
    assert.equal(v1.json.metadata.uid, made.json.metadata.uid);
    const list = await call(srv, srv.creds, 'GET', '/clusters/root/apis/example.net/v2beta1/gadgets');
    assert.deepEqual(list.json.items.map((i: any) => i.apiVersion), ['example.net/v2beta1']);
    // Make spec.b required: later writes are checked against the new schema.
    const current = (await call(srv, srv.creds, 'GET', `${CRDS_URL}/gadgets.example.net`)).json;
    const upd = await call(srv, srv.creds, 'PUT', `${CRDS_URL}/gadgets.example.net`, { ...crd(['a', 'b'], current.metadata.resourceVersion), status: current.status });
    assert.equal(upd.status, 200, upd.body);
    let r = { status: 0 } as Awaited<ReturnType<typeof call>>;
    for (let i = 0; i < 50; i++) {
      r = await call(srv, srv.creds, 'POST', '/clusters/root/apis/example.net/v1/gadgets', { apiVersion: 'example.net/v1', kind: 'Gadget', metadata: { name: `h${i}` }, spec: { a: 'x' } });
      if (r.status === 422) break;
      await sleep(20);
    }
    assert.equal(r.status, 422);
    assert.match(r.json.message, /spec.b: Required value/);
  });
});

describe('defaulting on read', () => {
  test('a default added to the schema later shows on existing objects in get, list, watch and the update base; nothing is written back', async () => {
    const CRDS_URL = '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const spec = (withDefaults: boolean) => ({
      type: 'object', properties: {
        a: { type: 'string', default: 'A' },
        b: { type: 'string', ...(withDefaults ? { default: 'B' } : {}) },
        items: { type: 'array', items: { type: 'object', properties: { n: { type: 'integer', ...(withDefaults ? { default: 7 } : {}) }, m: { type: 'string' } } } },
      },
    });
    // v1 stores; v2 is served (conversion None) without the defaults: objects are defaulted by
    // the schema of the version they are stored in, whatever version serves them.
    const crd = (withDefaults: boolean, rv?: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.defaults.example', ...(rv ? { resourceVersion: rv } : {}) },
      spec: {
        group: 'defaults.example', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: spec(withDefaults) } } } },
          { name: 'v2', served: true, storage: false, schema: { openAPIV3Schema: { type: 'object', properties: { spec: spec(false) } } } },
        ],
      },
    });
    assert.equal((await call(srv, srv.creds, 'POST', CRDS_URL, crd(false))).status, 201);
    await waitEstablished('root', 'widgets.defaults.example');
    const url = '/clusters/root/apis/defaults.example/v1/namespaces/default/widgets';
    const made = await call(srv, srv.creds, 'POST', url, { apiVersion: 'defaults.example/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { items: [{ m: 'x' }] } });
    assert.equal(made.status, 201, made.body);
    assert.deepEqual(made.json.spec, { a: 'A', items: [{ m: 'x' }] }, 'request defaulting');
    const rv = made.json.metadata.resourceVersion;
    const readOnly = await call(srv, srv.creds, 'POST', url, { apiVersion: 'defaults.example/v1', kind: 'Widget', metadata: { name: 'r' }, spec: { items: [{ m: 'x' }] } });
    assert.equal(readOnly.status, 201, readOnly.body);

    const setDefaults = async (withDefaults: boolean) => {
      const current = (await call(srv, srv.creds, 'GET', `${CRDS_URL}/widgets.defaults.example`)).json;
      const upd = await call(srv, srv.creds, 'PUT', `${CRDS_URL}/widgets.defaults.example`, { ...crd(withDefaults, current.metadata.resourceVersion), status: current.status });
      assert.equal(upd.status, 200, upd.body);
    };
    const w = watch(srv, srv.creds, `${url}?watch=true&resourceVersion=${rv}`);
    try {
      assert.equal(await w.status, 200);
      await setDefaults(true);
      const defaulted = { a: 'A', b: 'B', items: [{ m: 'x', n: 7 }] };
      let got: any;
      for (let i = 0; i < 100; i++) {
        got = (await call(srv, srv.creds, 'GET', `${url}/w`)).json;
        if (got?.spec?.b === 'B') break;
        await sleep(20);
      }
      assert.deepEqual(got.spec, defaulted, 'get');
      assert.equal(got.metadata.resourceVersion, rv, 'a read writes nothing');
      const list = (await call(srv, srv.creds, 'GET', url)).json;
      assert.deepEqual(list.items.map((o: any) => o.spec), [defaulted, defaulted], 'list');
      const v2 = (await call(srv, srv.creds, 'GET', '/clusters/root/apis/defaults.example/v2/namespaces/default/widgets/w')).json;
      assert.equal(v2.apiVersion, 'defaults.example/v2');
      assert.deepEqual(v2.spec, defaulted, 'served in another version: defaulted by the stored version\'s schema');
      const meta = await call(srv, srv.creds, 'GET', url, undefined, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' });
      assert.equal(meta.json.kind, 'PartialObjectMetadataList');
      assert.deepEqual(meta.json.items.map((o: any) => o.metadata.resourceVersion), [readOnly.json.metadata.resourceVersion, rv]);
      // A new watch from before the object's creation replays it defaulted.
      const replay = watch(srv, srv.creds, `${url}?watch=true&resourceVersion=0`);
      try {
        const evs = await replay.waitFor(1);
        assert.deepEqual(evs[0]?.object?.spec, defaulted, 'watch replay');
        assert.equal((await call(srv, srv.creds, 'GET', `${url}/r`)).json.metadata.resourceVersion, readOnly.json.metadata.resourceVersion);
      } finally { replay.close(); }
      // A label patch starts from the defaulted object: the defaults are written with it.
      const patched = await call(srv, srv.creds, 'PATCH', `${url}/w`, { metadata: { labels: { l: '1' } } }, { 'content-type': 'application/merge-patch+json' });
      assert.equal(patched.status, 200, patched.body);
      assert.deepEqual(patched.json.spec, defaulted);
      await w.waitFor(2);
      const modified = w.events.find((e) => e.type === 'MODIFIED' && e.object.metadata.name === 'w');
      assert.deepEqual(modified?.object.spec, defaulted, 'watch event');
      assert.equal(modified.object.metadata.labels.l, '1');
    } finally { w.close(); }

    // Created with the defaults in the schema: written with them.
    const later = await call(srv, srv.creds, 'POST', url, { apiVersion: 'defaults.example/v1', kind: 'Widget', metadata: { name: 'l' }, spec: { a: 'z', items: [{ m: 'y' }] } });
    assert.equal(later.status, 201, later.body);
    assert.deepEqual(later.json.spec, { a: 'z', b: 'B', items: [{ m: 'y', n: 7 }] });
    // Taking the defaults away again shows what is stored: reads wrote nothing ("r"), writes
    // wrote the defaults ("w", "l").
    await setDefaults(false);
    let specs: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      const items = (await call(srv, srv.creds, 'GET', url)).json.items as any[];
      specs = Object.fromEntries(items.map((o) => [o.metadata.name, o.spec]));
      if (!(specs.r as any)?.b) break;
      await sleep(20);
    }
    assert.deepEqual(specs, {
      l: { a: 'z', b: 'B', items: [{ m: 'y', n: 7 }] },
      r: { a: 'A', items: [{ m: 'x' }] },
      w: { a: 'A', b: 'B', items: [{ m: 'x', n: 7 }] },
    });
    await call(srv, srv.creds, 'DELETE', `${CRDS_URL}/widgets.defaults.example`);
  });
});

describe('defaulting on read: bounded', () => {
  test('an object whose new defaults would exceed the defaulting budget is served as stored, and its next write is a 413', async () => {
    const CRDS_URL = '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const crd = (withDefault: boolean, rv?: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'blowups.defaults.example', ...(rv ? { resourceVersion: rv } : {}) },
      spec: {
        group: 'defaults.example', scope: 'Cluster', names: { plural: 'blowups', singular: 'blowup', kind: 'Blowup' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: {
          items: { type: 'array', items: { type: 'object', properties: { d: { type: 'string', ...(withDefault ? { default: 'x'.repeat(1000) } : {}) } } } },
        } } } } } }],
      },
    });
    assert.equal((await call(srv, srv.creds, 'POST', CRDS_URL, crd(false))).status, 201);
    await waitEstablished('root', 'blowups.defaults.example');
    const url = '/clusters/root/apis/defaults.example/v1/blowups';
    // 4,000 empty items: 12 KB stored, 4 MB with the default in each.
    const made = await call(srv, srv.creds, 'POST', url, { apiVersion: 'defaults.example/v1', kind: 'Blowup', metadata: { name: 'b' }, spec: { items: Array.from({ length: 4000 }, () => ({})) } });
    assert.equal(made.status, 201, made.body);
    const current = (await call(srv, srv.creds, 'GET', `${CRDS_URL}/blowups.defaults.example`)).json;
    assert.equal((await call(srv, srv.creds, 'PUT', `${CRDS_URL}/blowups.defaults.example`, { ...crd(true, current.metadata.resourceVersion), status: current.status })).status, 200);
    let patched = { status: 0 } as Awaited<ReturnType<typeof call>>;
    for (let i = 0; i < 100; i++) {
      patched = await call(srv, srv.creds, 'PATCH', `${url}/b`, { metadata: { labels: { l: '1' } } }, { 'content-type': 'application/merge-patch+json' });
      if (patched.status === 413) break;
      await sleep(20);
    }
    assert.equal(patched.status, 413, patched.body);
    assert.equal(patched.json.reason, 'RequestEntityTooLarge');
    assert.match(patched.json.message, /defaults of the schema would add more than 3145728 characters/);
    const got = await call(srv, srv.creds, 'GET', `${url}/b`);
    assert.equal(got.status, 200);
    assert.equal(got.json.spec.items.length, 4000);
    assert.deepEqual(got.json.spec.items[0], {}, 'served as stored');
    const list = await call(srv, srv.creds, 'GET', url);
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.items[0].spec.items[0], {});
    await call(srv, srv.creds, 'DELETE', `${CRDS_URL}/blowups.defaults.example`);
  });
});

describe('OpenAPI documents follow one CRD', () => {
  test('a schema change is published in /openapi/v2 (JSON and protobuf) and /openapi/v3; other group/versions keep their hash; another logical cluster sees none of it', async () => {
    for (const c of ['openapi-a', 'openapi-b']) assert.equal((await createLogicalCluster(srv, c)).status, 201);
    const crdsUrl = '/clusters/openapi-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const schema = (props: Record<string, unknown>) => ({ openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: props } } } });
    const created = await call(srv, srv.creds, 'POST', crdsUrl, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.oa.example.com' },
      spec: { group: 'oa.example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: schema({ size: { type: 'integer' } }) }] },
    });
    assert.equal(created.status, 201, created.body);
    await waitEstablished('openapi-a', 'widgets.oa.example.com');
    const get = (cluster: string, path: string, headers: Record<string, string> = {}) => call(srv, srv.creds, 'GET', `/clusters/${cluster}${path}`, undefined, headers);
    const PROTO = { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' };
    const specProps = async () => (await get('openapi-a', '/openapi/v2')).json?.definitions?.['com.example.oa.v1.Widget']?.properties?.spec?.properties;
    await eventually('the Widget schema in /openapi/v2', async () => (await specProps())?.size?.type === 'integer');
    const hashes = async () => Object.fromEntries(Object.entries<any>((await get('openapi-a', '/openapi/v3')).json.paths).map(([k, v]) => [k, /hash=([0-9A-F]+)/.exec(v.serverRelativeURL)![1]]));
    const before = await hashes();
    assert.ok(before['apis/oa.example.com/v1'] && before['api/v1'], JSON.stringify(Object.keys(before)));
    assert.doesNotMatch((await get('openapi-a', '/openapi/v2', PROTO)).body, /colour/);

    const patched = await call(srv, srv.creds, 'PATCH', `${crdsUrl}/widgets.oa.example.com`,
      [{ op: 'replace', path: '/spec/versions/0/schema', value: schema({ size: { type: 'integer' }, colour: { type: 'string' } }) }],
      { 'content-type': 'application/json-patch+json' });
    assert.equal(patched.status, 200, patched.body);
    await eventually('the new field in /openapi/v2', async () => (await specProps())?.colour?.type === 'string');
    const after = await hashes();
    assert.notEqual(after['apis/oa.example.com/v1'], before['apis/oa.example.com/v1']);
    for (const [gv, hash] of Object.entries(before)) if (gv !== 'apis/oa.example.com/v1') assert.equal(after[gv], hash, gv);
    const proto = await get('openapi-a', '/openapi/v2', PROTO);
    assert.equal(proto.status, 200);
    assert.match(proto.body, /com\.example\.oa\.v1\.Widget[\s\S]*colour/);
    const gvDoc = await get('openapi-a', `/openapi/v3/apis/oa.example.com/v1?hash=${after['apis/oa.example.com/v1']}`);
    assert.equal(gvDoc.json.components.schemas['com.example.oa.v1.Widget'].properties.spec.properties.colour.type, 'string');

    const other = await get('openapi-b', '/openapi/v2');
    assert.equal(other.status, 200);
    assert.equal(other.json.definitions['com.example.oa.v1.Widget'], undefined);
    assert.ok(other.json.definitions['io.k8s.api.core.v1.ConfigMap']);
    assert.equal((await get('openapi-b', '/openapi/v3/apis/oa.example.com/v1')).status, 404);
  });
});
