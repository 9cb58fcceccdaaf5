/**
 * The API negotiation controller on a real Redis and shard: three SyncTargets of one workspace
 * import Deployments (apps/v1) with different schemas — one lacks a field (the export serves the
 * LCD without it), one has an incompatible type (its import is `Compatible: False` with the
 * reason, its synced resource `Incompatible`, and the export keeps the compatible schema); a
 * consumer workspace binding the `kubernetes` export gets Deployments. Imports going away widen
 * the schema again and drop what nobody serves.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, createWorkspace, eventually, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;
let compute = '';
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);
const IMPORTS = '/apis/apiresource.kcp.io/v1alpha1/apiresourceimports';

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis);
  compute = await createWorkspace(srv, 'compute');
  await createWorkspace(srv, 'consumer');
});
after(async () => { await srv?.stop(); await redis?.stop(); });

function deploymentSchema(spec: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' },
      spec: { type: 'object', required: ['selector'], properties: { selector: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, template: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, ...spec } },
      status: { type: 'object', properties: { replicas: { type: 'integer', format: 'int32' }, readyReplicas: { type: 'integer', format: 'int32' } } },
    },
  };
}

async function syncTarget(name: string): Promise<void> {
  const r = await admin('POST', '/clusters/root:compute/apis/workload.kcp.io/v1alpha1/synctargets', { apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', metadata: { name } });
  assert.equal(r.status, 201, r.body);
}

async function importFor(location: string, spec: Record<string, unknown>): Promise<void> {
  const r = await admin('POST', `/clusters/root:compute${IMPORTS}`, {
    apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'APIResourceImport', metadata: { name: `deployments.${location}.v1.apps` },
    spec: {
      groupVersion: { group: 'apps', version: 'v1' }, scope: 'Namespaced', plural: 'deployments', singular: 'deployment', kind: 'Deployment', listKind: 'DeploymentList',
      subResources: [{ name: 'scale' }, { name: 'status' }], location, schemaUpdateStrategy: 'UpdatePublished', openAPIV3Schema: deploymentSchema(spec),
    },
  });
  assert.equal(r.status, 201, r.body);
}

const specProps = async (): Promise<Record<string, unknown> | false> => {
  const n = await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/negotiatedapiresources/deployments.v1.apps');
  return n.status === 200 && n.json.spec.openAPIV3Schema.properties.spec.properties;
};
const exportSchema = async (): Promise<any> => {
  const e = await admin('GET', '/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiexports/kubernetes');
  const name = e.json?.spec?.latestResourceSchemas?.[0];
  if (!name) return false;
  const s = await admin('GET', `/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiresourceschemas/${name}`);
  return s.status === 200 && s.json;
};
const condition = (o: any, type: string) => o?.status?.conditions?.find((c: any) => c.type === type);

test('two SyncTargets: the export serves the LCD; a third with an incompatible type is reported and changes nothing', async () => {
  await syncTarget('a');
  await importFor('a', { replicas: { type: 'integer', format: 'int32' }, paused: { type: 'boolean' } });
  await eventually('negotiated from a', async () => { const p = await specProps(); return p && 'paused' in p; });
  await syncTarget('b');
  const t0 = performance.now();
  await importFor('b', { replicas: { type: 'integer', format: 'int32' } });
  const lcd = await eventually('LCD without paused', async () => { const p = await specProps(); return p && !('paused' in p) && p; });
  assert.deepEqual(Object.keys(lcd).sort(), ['replicas', 'selector', 'template']);

  const schema = await eventually('export schema is the LCD', async () => { const s = await exportSchema(); return s && !('paused' in s.spec.versions[0].schema.properties.spec.properties) && s; });
  console.log(`# import written → LCD schema in the export: ${(performance.now() - t0).toFixed(0)} ms (polled)`);
  assert.match(schema.metadata.name, /^rev-\d+\.deployments\.apps$/, "kcp's schema naming");
  assert.equal(schema.spec.group, 'apps');
  assert.deepEqual(schema.spec.versions[0].subresources, { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } });
  assert.equal(schema.metadata.ownerReferences[0].kind, 'APIExport');

  await syncTarget('c');
  await importFor('c', { replicas: { type: 'string' }, paused: { type: 'boolean' } });
  const c = await eventually('c incompatible', async () => {
    const i = (await admin('GET', `/clusters/root:compute${IMPORTS}/deployments.c.v1.apps`)).json;
    return condition(i, 'Compatible')?.status === 'False' && i;
  });
  assert.equal(condition(c, 'Compatible').reason, 'IncompatibleSchema');
  assert.match(condition(c, 'Compatible').message, /Deployment\.properties\[spec\]\.properties\[replicas\]\.type: Invalid value: "string": The type changed \(was "integer", now "string"\)/);
  assert.equal(condition(c, 'Available').status, 'False');
  for (const loc of ['a', 'b']) {
    const i = await eventually(`${loc} available`, async () => { const x = (await admin('GET', `/clusters/root:compute${IMPORTS}/deployments.${loc}.v1.apps`)).json; return condition(x, 'Available')?.status === 'True' && x; });
    assert.equal(condition(i, 'Compatible').status, 'True');
  }
  assert.equal((await exportSchema()).metadata.name, schema.metadata.name, 'the export keeps the compatible schema');

  const states = await eventually('synced resources', async () => {
    const out: Record<string, string> = {};
    for (const st of ['a', 'b', 'c']) {
      const s = (await admin('GET', `/clusters/root:compute/apis/workload.kcp.io/v1alpha1/synctargets/${st}`)).json;
      const r = s?.status?.syncedResources?.[0];
      if (!r) return false;
      assert.deepEqual({ ...r, state: undefined, identityHash: undefined }, { group: 'apps', resource: 'deployments', versions: ['v1'], state: undefined, identityHash: undefined });
      assert.ok(r.identityHash, 'the export identity');
      out[st] = r.state;
    }
    return out.c === 'Incompatible' && out;
  });
  assert.deepEqual(states, { a: 'Accepted', b: 'Accepted', c: 'Incompatible' });
  const neg = (await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/negotiatedapiresources/deployments.v1.apps')).json;
  assert.equal(condition(neg, 'Published').status, 'True');
});

test('a workspace binding the kubernetes export gets Deployments with the negotiated schema, and core-group Services', async () => {
  const svc = await admin('POST', `/clusters/root:compute${IMPORTS}`, {
    apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'APIResourceImport', metadata: { name: 'services.a.v1.core' },
    spec: {
      groupVersion: { version: 'v1' }, scope: 'Namespaced', plural: 'services', singular: 'service', kind: 'Service', listKind: 'ServiceList', shortNames: ['svc'],
      subResources: [{ name: 'status' }], location: 'a', schemaUpdateStrategy: 'UpdatePublished',
      openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { ports: { type: 'array', items: { type: 'object', properties: { port: { type: 'integer' } } } } } } } },
    },
  });
  assert.equal(svc.status, 201, svc.body);
  await eventually('services exported', async () => {
    const e = await admin('GET', '/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiexports/kubernetes');
    return (e.json?.spec?.latestResourceSchemas ?? []).some((n: string) => n.endsWith('.services.core'));
  });
  const b = await admin('POST', '/clusters/root:consumer/apis/apis.kcp.io/v1alpha1/apibindings', {
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:compute', name: 'kubernetes' } } },
  });
  assert.equal(b.status, 201, b.body);
  await eventually('deployments served', async () => (await admin('GET', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments')).status === 200, 15_000);
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } } } } };
  const created = await admin('POST', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments', dep);
  assert.equal(created.status, 201, created.body);
  const bad = await admin('POST', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments', { ...dep, metadata: { name: 'bad' }, spec: { ...dep.spec, replicas: 'two' } });
  assert.equal(bad.status, 422, bad.body);
  assert.match(bad.body, /spec\.replicas/);
  // paused is not in the LCD: pruned (kube drops unknown fields of custom resources), with a warning.
  const paused = await admin('POST', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments', { ...dep, metadata: { name: 'paused' }, spec: { ...dep.spec, paused: true } });
  assert.equal(paused.status, 201, paused.body);
  assert.equal(paused.json.spec.paused, undefined);
  const scale = await admin('GET', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments/web/scale');
  assert.equal(scale.json?.spec?.replicas, 2, scale.body);
  await eventually('services served', async () => (await admin('GET', '/clusters/root:consumer/api/v1/namespaces/default/services')).status === 200, 15_000);
  const service = await admin('POST', '/clusters/root:consumer/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } });
  assert.equal(service.status, 201, service.body);
});

test('a negotiated schema the API refuses is reported and holds up nothing else', async () => {
  const r = await admin('POST', `/clusters/root:compute${IMPORTS}`, {
    apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'APIResourceImport', metadata: { name: 'widgets.a.v1.example.com' },
    spec: {
      groupVersion: { group: 'example.com', version: 'v1' }, scope: 'Namespaced', plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList',
      location: 'a', schemaUpdateStrategy: 'UpdatePublished',
      openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer', default: 'big' } } } } },
    },
  });
  assert.equal(r.status, 201, r.body);
  const n = await eventually('widgets refused', async () => {
    const x = (await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/negotiatedapiresources/widgets.v1.example.com')).json;
    return condition(x, 'Published')?.status === 'False' && x;
  });
  assert.equal(condition(n, 'Published').reason, 'InvalidSchema');
  assert.match(condition(n, 'Published').message, /default/);
  const e = (await admin('GET', '/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiexports/kubernetes')).json;
  assert.deepEqual(e.spec.latestResourceSchemas.map((x: string) => x.replace(/^rev-\d+\./, '')).sort(), ['deployments.apps', 'services.core']);
  assert.equal((await admin('DELETE', `/clusters/root:compute${IMPORTS}/widgets.a.v1.example.com`)).status, 200);
});

test('imports going away: the schema widens again, and a resource nobody imports leaves the export', async () => {
  assert.equal((await admin('DELETE', `/clusters/root:compute${IMPORTS}/deployments.b.v1.apps`)).status, 200);
  await eventually('paused back', async () => { const p = await specProps(); return p && 'paused' in p; });
  await eventually('export widened', async () => { const s = await exportSchema(); return s && 'paused' in s.spec.versions[0].schema.properties.spec.properties; });
  // The binding follows the export: paused is served again in the consumer.
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'paused-again' }, spec: { paused: true, selector: { matchLabels: { app: 'web' } } } };
  await eventually('paused served in the consumer', async () => {
    const r = await admin('POST', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments?dryRun=All', dep);
    return r.status === 201 && r.json.spec.paused === true;
  });
  for (const loc of ['a', 'c']) assert.equal((await admin('DELETE', `/clusters/root:compute${IMPORTS}/deployments.${loc}.v1.apps`)).status, 200);
  assert.equal((await admin('DELETE', `/clusters/root:compute${IMPORTS}/services.a.v1.core`)).status, 200);
  await eventually('negotiated resource deleted', async () => (await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/negotiatedapiresources/deployments.v1.apps')).status === 404);
  await eventually('export emptied', async () => {
    const e = (await admin('GET', '/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiexports/kubernetes')).json;
    return !(e?.spec?.latestResourceSchemas?.length) && (await admin('GET', '/clusters/root:compute/apis/apis.kcp.io/v1alpha1/apiresourceschemas')).json.items.length === 0;
  });
  const st = (await admin('GET', '/clusters/root:compute/apis/workload.kcp.io/v1alpha1/synctargets/a')).json;
  assert.equal(st.status?.syncedResources, undefined);
});
