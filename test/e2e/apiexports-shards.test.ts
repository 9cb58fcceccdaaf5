/**
 * Shared APIs across shards (an instance of two shards behind the front-proxy): the export lives
 * on one shard, consumers on both. A consumer's shard reads the export and its schema replicated
 * from the other shard, asks that shard whether the caller may bind, and serves the bound
 * resource; the endpoint slice lists both shards' virtual workspace URLs and each serves its own
 * consumers. The provider's validating webhook (a real https server of the test) applies to its
 * widgets in the consumers of both shards: webhook configurations are replicated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createServer, type Server } from 'node:https';
import { adminCreds, call, eventually, type Creds } from '../helpers.js';
import { startInstance, type RunningInstance } from '../../src/server/instance.js';
import { createCA, issueServingCert } from '../../src/pki/certs.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'apis');
let inst: RunningInstance;
let admin: Creds;
let hook: Server | undefined;
/** Workspace name → { cluster, shard index }. */
const placed = new Map<string, { cluster: string; shard: number }>();

async function createWorkspace(name: string): Promise<{ cluster: string; shard: number }> {
  const res = await call(inst, admin, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
  assert.equal(res.status, 201, res.body);
  const ws = await eventually(`${name} Ready`, async () => {
    const w = (await call(inst, admin, 'GET', `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`)).json;
    return w?.status?.phase === 'Ready' && w;
  }, 15_000);
  const cluster = ws.spec.cluster as string;
  const shard = (await call(inst.shards[0]!, admin, 'GET', `/clusters/${cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).status === 200 ? 0 : 1;
  const at = { cluster, shard };
  placed.set(name, at);
  return at;
}

before(async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-apis-shards-'));
  inst = await startInstance({ rootDirectory: root, shards: 2, securePort: 0 });
  admin = adminCreds(root);
});
after(async () => { await inst?.stop(); hook?.closeAllConnections(); hook?.close(); });

/** A validating webhook server refusing widgets of size 13; resolves to its clientConfig. */
async function startWidgetWebhook(): Promise<{ url: string; caBundle: string }> {
  const ca = await createCA('widget-webhook-ca');
  const serving = await issueServingCert(ca, { commonName: 'widget-webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  hook = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = JSON.parse(Buffer.concat(chunks).toString()).request;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, allowed: r.object?.spec?.size !== 13, status: { message: 'size 13 is unlucky' } } }));
    });
  });
  await new Promise<void>((resolve) => hook!.listen(0, '127.0.0.1', () => resolve()));
  return { url: `https://127.0.0.1:${(hook.address() as { port: number }).port}/validate`, caBundle: Buffer.from(ca.certPem).toString('base64') };
}

test('an export on one shard, bound by consumers on both, each shard serving its own consumers', async () => {
  // Workspaces are spread over the shards: create until there is a consumer on each.
  const provider = await createWorkspace('provider');
  for (const f of ['widgets-schema.yaml', 'widgets-export.yaml']) {
    const obj = parse(readFileSync(join(FIXTURES, f), 'utf8'));
    const plural = obj.kind === 'APIExport' ? 'apiexports' : 'apiresourceschemas';
    assert.equal((await call(inst, admin, 'POST', `/clusters/root:provider/apis/${obj.apiVersion}/${plural}`, obj)).status, 201);
  }
  await eventually('identity', async () => (await call(inst, admin, 'GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets')).json?.status?.identityHash);
  const consumers: string[] = [];
  for (let i = 0; consumers.length < 2 && i < 12; i++) {
    const c = await createWorkspace(`consumer-${i}`);
    if (!consumers.some((n) => placed.get(n)!.shard === c.shard)) consumers.push(`consumer-${i}`);
  }
  assert.equal(consumers.length, 2, 'a consumer on each shard');
  const remote = consumers.find((n) => placed.get(n)!.shard !== provider.shard)!;

  for (const c of consumers) {
    const body = { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'widgets' }, spec: { reference: { export: { path: 'root:provider', name: 'widgets' } } } };
    const created = await call(inst, admin, 'POST', `/clusters/root:${c}/apis/apis.kcp.io/v1alpha2/apibindings`, body);
    assert.equal(created.status, 201, created.body);
    await eventually(`${c} Bound`, async () => (await call(inst, admin, 'GET', `/clusters/root:${c}/apis/apis.kcp.io/v1alpha2/apibindings/widgets`)).json?.status?.phase === 'Bound', 15_000);
    const w = await eventually(`widget in ${c}`, async () => {
      const r = await call(inst, admin, 'POST', `/clusters/root:${c}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: `w-${c}` }, spec: { color: 'red' } });
      return r.status === 201 && r;
    });
    assert.equal(w.json.spec.size, 1, 'defaulted by the schema replicated from the export\'s shard');
  }
  // The remote consumer's shard checked `bind` with the export's shard: without it, refused.
  await call(inst, admin, 'POST', `/clusters/root:provider/apis/rbac.authorization.k8s.io/v1/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'nothing' }, rules: [] });
  const sa = await call(inst, admin, 'POST', `/clusters/root:${remote}/api/v1/namespaces/default/serviceaccounts/default/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
  assert.equal(sa.status, 201, sa.body);
  await call(inst, admin, 'POST', `/clusters/root:${remote}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'sa-admin' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }],
  });
  const refused = await call(inst, { ca: admin.ca }, 'POST', `/clusters/root:${remote}/apis/apis.kcp.io/v1alpha2/apibindings`,
    { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'again' }, spec: { reference: { export: { path: 'root:provider', name: 'widgets' } } } },
    { authorization: `Bearer ${sa.json.status.token}` });
  assert.equal(refused.status, 403, refused.body);
  assert.match(refused.json.message, /no permission to bind to export root:provider:widgets/);

  // One endpoint per shard; each shard's virtual workspace lists its own consumers' widgets.
  const slice = await eventually('two endpoints', async () => {
    const s = (await call(inst, admin, 'GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/widgets')).json;
    return s?.status?.endpoints?.length === 2 && s;
  }, 15_000);
  const urls = (slice.status.endpoints as { url: string }[]).map((e) => e.url).sort();
  assert.deepEqual(urls, inst.shards.map((s) => `${s.url}/services/apiexport/${provider.cluster}/widgets`).sort());
  for (const [i, shard] of inst.shards.entries()) {
    const list = await call(shard, admin, 'GET', `/services/apiexport/${provider.cluster}/widgets/clusters/*/apis/example.com/v1/widgets`);
    assert.equal(list.status, 200, list.body);
    const mine = consumers.filter((c) => placed.get(c)!.shard === i);
    assert.deepEqual(list.json.items.map((o: any) => [o.metadata.name, o.metadata.annotations['kcp.io/cluster']]), mine.map((c) => [`w-${c}`, placed.get(c)!.cluster]));
  }
  // Writes into the remote consumer through its shard's virtual workspace.
  const st = await call(inst.shards[placed.get(remote)!.shard]!, admin, 'PATCH',
    `/services/apiexport/${provider.cluster}/widgets/clusters/${placed.get(remote)!.cluster}/apis/example.com/v1/namespaces/default/widgets/w-${remote}/status`,
    { status: { phase: 'Provisioned' } }, { 'content-type': 'application/merge-patch+json' });
  assert.equal(st.status, 200, st.body);
  assert.equal((await call(inst, admin, 'GET', `/clusters/root:${remote}/apis/example.com/v1/namespaces/default/widgets/w-${remote}`)).json.status.phase, 'Provisioned');

  // The provider's webhook for its bound resource, in consumers on both shards.
  const clientConfig = await startWidgetWebhook();
  const cfg = await call(inst, admin, 'POST', '/clusters/root:provider/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'widgets' },
    webhooks: [{ name: 'widgets.example.com', clientConfig, sideEffects: 'None', admissionReviewVersions: ['v1'], rules: [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['widgets'] }] }],
  });
  assert.equal(cfg.status, 201, cfg.body);
  for (const c of consumers) {
    const denied = await eventually(`webhook applies in ${c}`, async () => {
      const r = await call(inst, admin, 'POST', `/clusters/root:${c}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'unlucky' }, spec: { size: 13 } });
      if (r.status === 201) await call(inst, admin, 'DELETE', `/clusters/root:${c}/apis/example.com/v1/namespaces/default/widgets/unlucky`);
      return r.status === 400 && r;
    }, 10_000);
    assert.equal(denied.json.message, 'admission webhook "widgets.example.com" denied the request: size 13 is unlucky', `${c} on shard ${placed.get(c)!.shard}`);
    const lucky = await call(inst, admin, 'POST', `/clusters/root:${c}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'lucky' }, spec: { size: 7 } });
    assert.equal(lucky.status, 201, lucky.body);
  }
});
