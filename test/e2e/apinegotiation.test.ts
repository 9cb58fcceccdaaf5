/**
 * The crd-puller against a real kube-apiserver (one per file, test/hostcluster.ts): Deployments,
 * Services, Ingresses and a CRD of the cluster are pulled from its discovery and OpenAPI v3; the
 * pulled schemas accept real objects — each object the cluster created (with its defaults) is
 * created through a CRD made from its pulled schema in a kcp-ts workspace and comes back with the
 * same spec (nothing pruned, nothing refused). Then the syncer's importAPIResources for a
 * SyncTarget: APIResourceImports, the negotiated `kubernetes` export, and a consumer workspace
 * binding it gets Deployments with the cluster's schema.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, createWorkspace, eventually, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';
import { startHostCluster, type HostCluster } from '../hostcluster.js';
import { RestClient } from '../../src/client/rest.js';
import { endpointFromKubeconfig, importAPIResources, pullCRDs } from '../../src/apinegotiation/index.js';
import { crdMain } from '../../src/cli/crdcompat.js';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/apimachinery/meta.js';

let host: HostCluster;
let redis: TestRedis;
let srv: TestServer;
let downstream: RestClient;
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'] },
    versions: [{
      name: 'v1', served: true, storage: true, subresources: { status: {} },
      additionalPrinterColumns: [{ name: 'Size', type: 'string', jsonPath: '.spec.size' }],
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: {
        size: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
      } } } } },
    }],
  },
};

before(async () => {
  host = await startHostCluster();
  const ep = endpointFromKubeconfig(readFileSync(host.kubeconfig, 'utf8'));
  assert.equal(ep.path, '');
  downstream = ep.client;
  await host.kubectl(['apply', '-f', '-'], { input: JSON.stringify(WIDGET_CRD) });
  await host.kubectl(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=30s']);
  redis = await startRedis();
  srv = await startTestServer(redis);
});
after(async () => { downstream?.close(); await srv?.stop(); await redis?.stop(); await host?.stop(); });

let pulled: KubeObject[] = [];

test('pulls Deployments, Services, Ingresses and a CRD from the cluster as CRDs', async () => {
  const t0 = performance.now();
  const res = await pullCRDs({ client: downstream }, ['deployments.apps', 'services', 'ingresses.networking.k8s.io', 'widgets.example.com', 'nosuchthings.apps']);
  const cold = performance.now() - t0;
  const t1 = performance.now();
  await pullCRDs({ client: downstream }, ['deployments.apps', 'services', 'ingresses.networking.k8s.io', 'widgets.example.com']);
  console.log(`# pull of 4 resources: ${cold.toFixed(0)} ms from a fresh kube-apiserver, ${(performance.now() - t1).toFixed(0)} ms again`);
  assert.deepEqual(res.errors.map((e) => e.resource), ['nosuchthings.apps']);
  assert.match(res.errors[0]!.message, /does not serve "nosuchthings" in apps\/v1/);
  pulled = res.crds;
  assert.deepEqual(pulled.map((c) => c.metadata.name), ['deployments.apps', 'services.core', 'ingresses.networking.k8s.io', 'widgets.example.com']);
  const [dep, svc, ing, widget] = pulled.map((c) => c.spec as any);
  assert.deepEqual(dep.names, { plural: 'deployments', singular: 'deployment', kind: 'Deployment', listKind: 'DeploymentList', shortNames: ['deploy'], categories: ['all'] });
  assert.equal(dep.scope, 'Namespaced');
  assert.deepEqual(dep.versions[0].subresources, { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } });
  const depSchema = dep.versions[0].schema.openAPIV3Schema;
  assert.deepEqual(depSchema.properties.metadata, { type: 'object' });
  assert.deepEqual(depSchema.properties.spec.properties.template.properties.metadata.type, 'object');
  assert.equal(depSchema.properties.spec.properties.template.properties.metadata['x-kubernetes-preserve-unknown-fields'], true);
  const containers = depSchema.properties.spec.properties.template.properties.spec.properties.containers;
  assert.equal(containers['x-kubernetes-list-type'], 'map');
  assert.equal(containers.items.properties.ports.items.properties.protocol.default, 'TCP');
  assert.equal(depSchema.properties.spec.properties.strategy.properties.rollingUpdate.properties.maxSurge['x-kubernetes-int-or-string'], true);
  assert.ok(!JSON.stringify(depSchema).includes('$ref'), 'every $ref resolved');
  assert.equal(svc.group, '');
  assert.equal(ing.group, 'networking.k8s.io');
  assert.equal(pulled[2]!.metadata.annotations?.['api-approved.kubernetes.io'], 'https://github.com/kcp-dev/kubernetes/pull/4');
  // The CRD's own schema and columns (kcp's puller reads the CRD).
  assert.equal(widget.versions[0].schema.openAPIV3Schema.properties.spec.properties.template['x-kubernetes-embedded-resource'], true);
  assert.deepEqual(widget.versions[0].additionalPrinterColumns, WIDGET_CRD.spec.versions[0]!.additionalPrinterColumns);
  assert.deepEqual(widget.names.shortNames, ['wd']);
});

test('the pulled schemas accept the objects the cluster made: the same spec comes back from kcp-ts', async () => {
  await createWorkspace(srv, 'pulled');
  await host.kubectl(['create', 'deployment', 'web', '--image=nginx:1.27', '--replicas=2', '--port=8080']);
  await host.kubectl(['create', 'service', 'clusterip', 'web', '--tcp=80:8080']);
  await host.kubectl(['create', 'ingress', 'web', '--rule=web.example.com/=web:80']);
  await host.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { size: '10%', template: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } } } }) });
  for (const crd of pulled) {
    const spec = crd.spec as any;
    const { plural, kind } = spec.names;
    // kcp-ts' CRDs need a group with a dot (kube's rule): the same schema under a test group.
    const group = `${spec.group || 'core'}.pulled.example`;
    const created = await admin('POST', '/clusters/root:pulled/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { ...crd, metadata: { name: `${plural}.${group}` }, spec: { ...spec, group } });
    assert.equal(created.status, 201, `${crd.metadata.name}: ${created.body.slice(0, 2000)}`);
    await eventually(`${plural} served`, async () => (await admin('GET', `/clusters/root:pulled/apis/${group}/v1/namespaces/default/${plural}`)).status === 200, 15_000);
    const name = kind === 'Widget' ? 'w' : 'web';
    const real = JSON.parse((await host.kubectl(['get', `${plural}.${spec.group || ''}`.replace(/\.$/, ''), name, '-n', 'default', '-o', 'json'])).stdout);
    const obj = { apiVersion: `${group}/v1`, kind, metadata: { name, namespace: 'default', labels: real.metadata.labels }, spec: real.spec };
    const res = await admin('POST', `/clusters/root:pulled/apis/${group}/v1/namespaces/default/${plural}`, obj);
    assert.equal(res.status, 201, `${kind}: ${res.body.slice(0, 2000)}`);
    assert.deepEqual(res.json.spec, real.spec, `${kind}: nothing pruned`);
    const bad = await admin('POST', `/clusters/root:pulled/apis/${group}/v1/namespaces/default/${plural}`, { ...obj, metadata: { name: 'bad' }, spec: { ...real.spec, ...(kind === 'Deployment' ? { replicas: 'two' } : kind === 'Service' ? { ports: 'x' } : kind === 'Ingress' ? { rules: 1 } : { size: true }) } });
    assert.equal(bad.status, 422, `${kind} with a wrong type: ${bad.body.slice(0, 500)}`);
  }
});

test("the syncer's import: APIResourceImports, the kubernetes export, and a binding that serves the cluster's Deployments", async () => {
  const compute = await createWorkspace(srv, 'compute');
  await createWorkspace(srv, 'consumer');
  const st = await admin('POST', '/clusters/root:compute/apis/workload.kcp.io/v1alpha1/synctargets', { apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', metadata: { name: 'cluster-a' } });
  assert.equal(st.status, 201, st.body);
  const upstream = new RestClient({ url: srv.url, ca: srv.creds.ca, cert: srv.creds.cert, key: srv.creds.key });
  try {
    const t0 = performance.now();
    const first = await importAPIResources({ client: upstream, path: '/clusters/root:compute' }, { client: downstream }, 'cluster-a', ['deployments.apps', 'ingresses.networking.k8s.io']);
    const ms = performance.now() - t0;
    assert.deepEqual(first.errors, []);
    assert.deepEqual(first.imported.sort(), ['deployments.cluster-a.v1.apps', 'ingresses.cluster-a.v1.networking.k8s.io']);
    console.log(`# importAPIResources (2 resources, first run): ${ms.toFixed(0)} ms`);
    const imp = (await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/apiresourceimports/deployments.cluster-a.v1.apps')).json;
    assert.equal(imp.spec.location, 'cluster-a');
    assert.equal(imp.metadata.annotations['apiresource.kcp.io/apiVersion'], 'apps/v1');
    assert.equal(imp.metadata.ownerReferences[0].kind, 'SyncTarget');
    // Idempotent: a second run writes nothing.
    const again = await importAPIResources({ client: upstream, path: '/clusters/root:compute' }, { client: downstream }, 'cluster-a', ['deployments.apps', 'ingresses.networking.k8s.io']);
    assert.deepEqual(again.errors, []);
    const after2 = (await admin('GET', '/clusters/root:compute/apis/apiresource.kcp.io/v1alpha1/apiresourceimports/deployments.cluster-a.v1.apps')).json;
    assert.equal(after2.metadata.generation, imp.metadata.generation);

    const synced = await eventually('syncedResources Accepted', async () => {
      const s = (await admin('GET', '/clusters/root:compute/apis/workload.kcp.io/v1alpha1/synctargets/cluster-a')).json;
      const r = s?.status?.syncedResources ?? [];
      return r.length === 2 && r.every((x: any) => x.state === 'Accepted') && r;
    }, 20_000);
    assert.deepEqual(synced.map((r: any) => `${r.resource}.${r.group}`), ['deployments.apps', 'ingresses.networking.k8s.io']);
    assert.ok(compute);

    const b = await admin('POST', '/clusters/root:consumer/apis/apis.kcp.io/v1alpha1/apibindings', {
      apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIBinding', metadata: { name: 'kubernetes' }, spec: { reference: { export: { path: 'root:compute', name: 'kubernetes' } } },
    });
    assert.equal(b.status, 201, b.body);
    await eventually('deployments served', async () => (await admin('GET', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments')).status === 200, 15_000);
    const real = JSON.parse((await host.kubectl(['get', 'deployment', 'web', '-n', 'default', '-o', 'json'])).stdout);
    const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: real.metadata.labels }, spec: real.spec };
    const created = await admin('POST', '/clusters/root:consumer/apis/apps/v1/namespaces/default/deployments', dep);
    assert.equal(created.status, 201, created.body.slice(0, 2000));
    assert.deepEqual(created.json.spec, real.spec);
  } finally {
    upstream.close();
  }
});

test('kcp-ts crd pull: YAML on stdout or files, unknown resources on stderr with exit 1', async () => {
  let out = '', err = '';
  const io = { stdout: (t: string) => { out += t; }, stderr: (t: string) => { err += t; } };
  assert.equal(await crdMain(['pull', '--kubeconfig', host.kubeconfig, 'deployments.apps', 'services'], io), 0, err);
  const docs = parseAllDocuments(out).map((d) => d.toJS()).filter(Boolean);
  assert.deepEqual(docs.map((d: any) => d.metadata.name), ['deployments.apps', 'services.core']);
  assert.equal(docs[0].spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.replicas.type, 'integer');
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pull-'));
  err = '';
  assert.equal(await crdMain(['pull', '--kubeconfig', host.kubeconfig, '--output-dir', dir, 'ingresses.networking.k8s.io', 'nosuchthings'], io), 1);
  assert.deepEqual(readdirSync(dir), ['ingresses.networking.k8s.io.yaml']);
  assert.match(err, /^kcp-ts crd pull: nosuchthings: the server does not serve "nosuchthings" in v1\n$/);
  assert.equal(await crdMain(['pull', '--kubeconfig', join(dir, 'missing'), 'pods'], io), 2);
});
