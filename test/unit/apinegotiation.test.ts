/**
 * API negotiation's pure parts: the OpenAPI v3 → structural schema walk (kcp's known types,
 * list types, refused recursion, bounds on depth and size for hostile documents) and the
 * negotiation of imports (LCD, incompatible imports reported, synced resource states).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PULLED_SCHEMA_DEPTH, MAX_PULLED_SCHEMA_NODES, SchemaPullError, structuralSchemaForKind } from '../../src/apinegotiation/openapi.js';
import { negotiate, syncedResources, toAPIResourceSchemaSpec, compareKubeAwareVersions } from '../../src/apinegotiation/negotiation.js';
import { parseGroupResource } from '../../src/apinegotiation/puller.js';
import { ensureStructuralSchemaCompatibility } from '../../src/apiextensions/schemacompat.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';

const ref = (n: string) => ({ $ref: `#/components/schemas/${n}` });
const gvk = (kind: string) => ({ 'x-kubernetes-group-version-kind': [{ group: 'example.com', version: 'v1', kind }] });

test('a kind resolves to a structural schema: refs, known types, int-or-string, list types, top-level metadata', () => {
  const defs = {
    'com.example.Widget': {
      ...gvk('Widget'), type: 'object', description: 'A widget.',
      properties: {
        apiVersion: { type: 'string' }, kind: { type: 'string' },
        metadata: { default: {}, allOf: [ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta')] },
        spec: { description: 'the spec', default: {}, allOf: [ref('com.example.WidgetSpec')] },
      },
    },
    'com.example.WidgetSpec': {
      type: 'object', required: ['ports', 'ghost'], 'x-kubernetes-unions': [{}],
      properties: {
        size: ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'),
        memory: ref('io.k8s.apimachinery.pkg.api.resource.Quantity'),
        since: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time'),
        template: { allOf: [ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta')] },
        ports: { type: 'array', items: { default: {}, allOf: [ref('io.k8s.api.core.v1.ContainerPort')] }, 'x-kubernetes-patch-strategy': 'merge', 'x-kubernetes-patch-merge-key': 'containerPort' },
        finalizers: { type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-patch-strategy': 'merge' },
        labels: { type: 'object', additionalProperties: { type: 'string', default: '' } },
        raw: ref('io.k8s.apimachinery.pkg.runtime.RawExtension'),
        odd: { oneOf: [{ type: 'boolean' }, { type: 'object' }] },
        tags: { type: 'array', uniqueItems: true, items: { type: 'string' } },
        either: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
      },
    },
    'io.k8s.api.core.v1.ContainerPort': {
      type: 'object', required: ['containerPort'],
      properties: { containerPort: { type: 'integer', format: 'int32', default: 0 }, protocol: { type: 'string', default: 'TCP', enum: ['TCP', 'UDP'] } },
    },
    'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { type: 'object', properties: { name: { type: 'string' } } },
    'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { format: 'int-or-string', oneOf: [{ type: 'integer' }, { type: 'string' }] },
    'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
    'io.k8s.apimachinery.pkg.apis.meta.v1.Time': { type: 'string', format: 'date-time' },
    'io.k8s.apimachinery.pkg.runtime.RawExtension': { type: 'object' },
  };
  const s = structuralSchemaForKind(defs, 'example.com', 'v1', 'Widget') as any;
  assert.deepEqual(s.properties.metadata, { type: 'object' });
  const spec = s.properties.spec;
  assert.equal(spec.description, 'the spec');
  assert.equal(spec.default, undefined, 'v3 defaults such as {} are dropped');
  assert.deepEqual(spec.required, ['ports'], 'required names a declared property only');
  assert.equal(spec['x-kubernetes-unions'], undefined);
  assert.deepEqual(spec.properties.size, { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });
  assert.equal(spec.properties.memory['x-kubernetes-int-or-string'], true);
  assert.match(spec.properties.memory.pattern, /KMGTPE/);
  assert.deepEqual(spec.properties.since, { type: 'string', format: 'date-time' });
  assert.deepEqual(spec.properties.template, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  const ports = spec.properties.ports;
  assert.equal(ports['x-kubernetes-list-type'], 'map');
  assert.deepEqual(ports['x-kubernetes-list-map-keys'], ['containerPort']);
  assert.deepEqual(ports.items.required, ['containerPort']);
  assert.equal(ports.items.properties.protocol.default, 'TCP', "kcp's known default");
  assert.equal(ports.items.properties.containerPort.default, undefined);
  assert.equal(spec.properties.finalizers['x-kubernetes-list-type'], 'set');
  assert.equal(spec.properties.finalizers.items.default, undefined);
  assert.deepEqual(spec.properties.labels.additionalProperties, { type: 'string' });
  assert.deepEqual(spec.properties.raw, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  assert.deepEqual(spec.properties.odd, { 'x-kubernetes-preserve-unknown-fields': true });
  assert.equal(spec.properties.tags.uniqueItems, undefined);
  assert.deepEqual(spec.properties.either, { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } }, 'value-only oneOf dropped');
  // What the negotiation compares: a structural schema.
  assert.deepEqual(ensureStructuralSchemaCompatibility('', s, s, false).errors, []);
});

test('hostile documents: recursion, depth, exponential expansion, unresolved and external refs are refused quickly', () => {
  const cyclic = { 'a.Node': { ...gvk('Node'), type: 'object', properties: { next: ref('a.Node') } } };
  assert.throws(() => structuralSchemaForKind(cyclic, 'example.com', 'v1', 'Node'), (e: Error) => e instanceof SchemaPullError && /recursive schema are not supported: a.Node/.test(e.message));

  // A chain of references longer than the depth bound (no cycle).
  const chain: Record<string, unknown> = { 'c.0': { ...gvk('Chain'), ...ref('c.1') } };
  for (let i = 1; i < 100_000; i++) chain[`c.${i}`] = { allOf: [ref(`c.${i + 1}`)] };
  chain['c.100000'] = { type: 'string' };
  let t = performance.now();
  assert.throws(() => structuralSchemaForKind(chain, 'example.com', 'v1', 'Chain'), new RegExp(`deeper than ${MAX_PULLED_SCHEMA_DEPTH}`));
  assert.ok(performance.now() - t < 1000);

  // Each level refers to the next twice: 2^40 nodes once expanded.
  const doubling: Record<string, unknown> = { 'd.0': { ...gvk('Double'), type: 'object', properties: { l: ref('d.1'), r: ref('d.1') } } };
  for (let i = 1; i < 40; i++) doubling[`d.${i}`] = { type: 'object', properties: { l: ref(`d.${i + 1}`), r: ref(`d.${i + 1}`) } };
  doubling['d.40'] = { type: 'string' };
  t = performance.now();
  assert.throws(() => structuralSchemaForKind(doubling, 'example.com', 'v1', 'Double'), new RegExp(`more than ${MAX_PULLED_SCHEMA_NODES} nodes`));
  assert.ok(performance.now() - t < 2000, `${performance.now() - t} ms`);

  assert.throws(() => structuralSchemaForKind({ 'x.K': { ...gvk('K'), type: 'object', properties: { a: ref('x.Missing') } } }, 'example.com', 'v1', 'K'), /undefined schema "x.Missing"/);
  assert.throws(() => structuralSchemaForKind({ 'x.K': { ...gvk('K'), type: 'object', properties: { a: { $ref: 'https://evil.example/s.json' } } } }, 'example.com', 'v1', 'K'), /is not to #\/components\/schemas/);
  assert.throws(() => structuralSchemaForKind({ '__proto__': {} }, 'example.com', 'v1', 'K'), /no OpenAPI schema for example.com\/v1, Kind=K/);
});

test('resource names as kcp parses them', () => {
  assert.deepEqual(parseGroupResource('deployments.apps'), { resource: 'deployments', group: 'apps' });
  assert.deepEqual(parseGroupResource('ingresses.networking.k8s.io'), { resource: 'ingresses', group: 'networking.k8s.io' });
  assert.deepEqual(parseGroupResource('services'), { resource: 'services', group: '' });
  assert.deepEqual(parseGroupResource('services.core'), { resource: 'services', group: '' });
  assert.ok(compareKubeAwareVersions('v1', 'v1beta1') > 0 && compareKubeAwareVersions('v1beta2', 'v1beta1') > 0 && compareKubeAwareVersions('v2alpha1', 'v1') < 0);
});

function importOf(location: string, created: string, props: Record<string, unknown>, strategy = 'UpdatePublished'): KubeObject {
  return {
    apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'APIResourceImport',
    metadata: { name: `widgets.${location}.v1.example.com`, creationTimestamp: created },
    spec: {
      groupVersion: { group: 'example.com', version: 'v1' }, scope: 'Namespaced', plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList',
      location, schemaUpdateStrategy: strategy,
      openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: props } } },
    },
  };
}

test('negotiation: the LCD of compatible imports, incompatible ones reported and left out, synced resource states', () => {
  const a = importOf('a', '2026-01-01T00:00:00Z', { replicas: { type: 'integer' }, paused: { type: 'boolean' } });
  const b = importOf('b', '2026-01-01T00:00:01Z', { replicas: { type: 'integer' } });
  const c = importOf('c', '2026-01-01T00:00:02Z', { replicas: { type: 'string' }, paused: { type: 'boolean' } });
  const n = negotiate([c, b, a], () => false);
  const r = n.resources.get('widgets.v1.example.com')!;
  assert.deepEqual((r.spec.openAPIV3Schema as any).properties.spec.properties, { replicas: { type: 'integer' } }, 'paused is not served by b');
  assert.equal(r.spec.location, undefined);
  assert.deepEqual(n.verdicts.get(a.metadata.name!), { compatible: true });
  assert.deepEqual(n.verdicts.get(b.metadata.name!), { compatible: true });
  assert.equal(n.verdicts.get(c.metadata.name!)!.compatible, false);
  assert.match(n.verdicts.get(c.metadata.name!)!.message!, /Widget\.properties\[spec\]\.properties\[replicas\]\.type: Invalid value: "string": The type changed \(was "integer", now "string"\)/);
  // UpdateUnpublished does not narrow a published negotiated resource: b is then incompatible.
  const frozen = negotiate([a, importOf('b', '2026-01-01T00:00:01Z', { replicas: { type: 'integer' } }, 'UpdateUnpublished')], () => true);
  assert.equal(frozen.verdicts.get(b.metadata.name!)!.compatible, false);
  assert.match(frozen.verdicts.get(b.metadata.name!)!.message!, /properties have been removed in an incompatible way/);

  const schema: KubeObject = { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: 'rev-1.widgets.example.com' }, spec: toAPIResourceSchemaSpec(r) };
  const states = (imp: KubeObject[]) => syncedResources([{ schema, identityHash: 'h' }], imp).map((x) => x.state);
  assert.deepEqual(states([a]), ['Accepted']);
  assert.deepEqual(states([b]), ['Accepted']);
  assert.deepEqual(states([c]), ['Incompatible']);
  assert.deepEqual(states([]), ['Incompatible'], 'no import of its own: kcp says Incompatible');
  assert.deepEqual(syncedResources([{ schema, identityHash: 'h' }], [a])[0], { group: 'example.com', resource: 'widgets', versions: ['v1'], identityHash: 'h', state: 'Accepted' });
});

test('pulling from a hostile cluster: an oversized OpenAPI document fails its resource only, within the size cap', async () => {
  const { createServer } = await import('node:http');
  const { pullCRDs, MAX_OPENAPI_DOCUMENT_BYTES } = await import('../../src/apinegotiation/puller.js');
  const { RestClient } = await import('../../src/client/rest.js');
  const resources = (group: string, kind: string, plural: string) => JSON.stringify({ kind: 'APIResourceList', groupVersion: `${group}/v1`, resources: [{ name: plural, singularName: kind.toLowerCase(), namespaced: true, kind }] });
  const doc = (group: string, kind: string) => ({ openapi: '3.0.0', components: { schemas: { [`x.${kind}`]: { type: 'object', 'x-kubernetes-group-version-kind': [{ group, version: 'v1', kind }], properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } } } } });
  let hugeBytes = 0;
  const server = createServer((req, res) => {
    const url = req.url ?? '';
    res.setHeader('content-type', 'application/json');
    if (url === '/apis') return res.end(JSON.stringify({ kind: 'APIGroupList', groups: ['good.example', 'huge.example'].map((name) => ({ name, versions: [{ groupVersion: `${name}/v1`, version: 'v1' }], preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' } })) }));
    if (url === '/apis/good.example/v1') return res.end(resources('good.example', 'Good', 'goods'));
    if (url === '/apis/huge.example/v1') return res.end(resources('huge.example', 'Huge', 'huges'));
    if (url === '/openapi/v3/apis/good.example/v1') return res.end(JSON.stringify(doc('good.example', 'Good')));
    if (url === '/openapi/v3/apis/huge.example/v1') {
      // An endless document: the client must stop reading at its cap.
      res.write('{"components":{"schemas":{"pad":"');
      const chunk = 'x'.repeat(1 << 20);
      const more = () => { while (!res.destroyed && hugeBytes < 4 * MAX_OPENAPI_DOCUMENT_BYTES) { hugeBytes += chunk.length; if (!res.write(chunk)) { res.once('drain', more); return; } } res.end(); };
      return more();
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ kind: 'Status', code: 404, message: 'not found' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new RestClient({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, ca: '' }, 4, MAX_OPENAPI_DOCUMENT_BYTES);
  try {
    const res = await pullCRDs({ client }, ['goods.good.example', 'huges.huge.example']);
    assert.deepEqual(res.crds.map((c) => c.metadata.name), ['goods.good.example']);
    assert.equal(res.errors.length, 1);
    assert.match(res.errors[0]!.message, /larger than 16777216 bytes/);
    assert.ok(hugeBytes < 2 * MAX_OPENAPI_DOCUMENT_BYTES, `read ${hugeBytes} bytes`);
  } finally {
    client.close();
    server.closeAllConnections();
    server.close();
  }
});

test("APIResourceSchemas take kcp's group rule: the core group and Kubernetes' single-word groups, not other single words", async () => {
  const { validateSchemaSpec } = await import('../../src/apiexports/schemas.js');
  const schema = (group: string): KubeObject => ({
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: `rev-1.things.${group || 'core'}` },
    spec: { group, scope: 'Namespaced', names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { type: 'object' } }] },
  });
  for (const g of ['', 'apps', 'batch', 'policy', 'autoscaling', 'extensions', 'example.com']) assert.deepEqual(validateSchemaSpec(schema(g)).filter((c) => c.field === 'spec.group'), [], g);
  assert.match(validateSchemaSpec(schema('example')).find((c) => c.field === 'spec.group')?.message ?? '', /should be a domain with at least one dot/);
});
