/**
 * Shared APIs end to end, with real clients: a provider workspace exports a Widget API (kubectl
 * applies its APIResourceSchema and APIExport), two consumers bind it, create widgets with
 * kubectl, and a provider controller written with @kubernetes/client-node informers on the
 * apiexport virtual workspace sees both consumers' widgets, writes their status, and is refused
 * what the export does not allow. Then: permission claims accepted and rejected, two exports of
 * the same group/resource kept apart by identity, conflicts, the `bind` permission, unbinding.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { call, eventually, kubectl, sleep, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'apis');
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
writeFileSync(tokenFile, '# token,user,uid,groups\nprovider-token,provider-dev,2001\ntenant-token,tenant,2002\nstranger-token,stranger,2003\n');

let redis: TestRedis;
let srv: TestServer;
/** Logical cluster names by workspace name. */
const ws: Record<string, string> = {};

const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res> => call(srv, srv.creds, method, path, body, headers);
const as = (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> =>
  call(srv, { ca: srv.caPem }, method, path, body, { authorization: `Bearer ${token}`, ...headers });
const kc = (workspace: string, args: string[], opts?: Parameters<typeof kubectl>[2]) =>
  kubectl(srv.kubeconfigPath, [`--server=${srv.url}/clusters/root:${workspace}`, ...args], opts);
const vwBase = (exportWs: string, exportName: string) => `/services/apiexport/${ws[exportWs]}/${exportName}`;

async function createWorkspace(name: string): Promise<void> {
  const res = await admin('POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
  assert.equal(res.status, 201, res.body);
  const ready = await eventually(`workspace ${name} Ready`, async () => {
    const w = await admin('GET', `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`);
    return w.json?.status?.phase === 'Ready' && w.json;
  }, 15_000);
  ws[name] = ready.spec.cluster;
}

async function bindingStatus(workspace: string, name: string): Promise<Record<string, any>> {
  return (await admin('GET', `/clusters/root:${workspace}/apis/apis.kcp.io/v1alpha2/apibindings/${name}`)).json?.status ?? {};
}

async function bind(workspace: string, name: string, exportWs: string, exportName: string, claims: unknown[] = []): Promise<Res> {
  return admin('POST', `/clusters/root:${workspace}/apis/apis.kcp.io/v1alpha2/apibindings`, {
    apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name },
    spec: { reference: { export: { path: `root:${exportWs}`, name: exportName } }, ...(claims.length ? { permissionClaims: claims } : {}) },
  });
}

const CONFIGMAP_CLAIM = (state: 'Accepted' | 'Rejected') => ({ group: '', resource: 'configmaps', verbs: ['*'], selector: { matchAll: true }, state });

/** A KubeConfig for the provider's user on a virtual workspace URL. */
function providerConfig(server: string, token = 'provider-token'): k8s.KubeConfig {
  const kcfg = new k8s.KubeConfig();
  kcfg.loadFromOptions({
    clusters: [{ name: 'vw', server, caData: Buffer.from(srv.caPem).toString('base64') }],
    users: [{ name: 'provider', token }],
    contexts: [{ name: 'vw', cluster: 'vw', user: 'provider' }],
    currentContext: 'vw',
  });
  return kcfg;
}

before(async () => {
  redis = await startRedis();
  srv = await startTestServer(redis, { tokenAuthFile: tokenFile });
  for (const name of ['provider', 'consumer-a', 'consumer-b', 'other-provider', 'consumer-c']) await createWorkspace(name);
  // The provider's developer may see the export's content (kcp: apiexports/content).
  for (const doc of [
    // No access to the provider's workspace is needed for that (kcp's deep SubjectAccessReview).
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'widgets-provider' }, rules: [{ apiGroups: ['apis.kcp.io'], resources: ['apiexports/content'], resourceNames: ['widgets'], verbs: ['*'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'widgets-provider' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'widgets-provider' }, subjects: [{ kind: 'User', name: 'provider-dev' }] },
  ]) {
    const plural = doc.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
    assert.equal((await admin('POST', `/clusters/root:provider/apis/rbac.authorization.k8s.io/v1/${plural}`, doc)).status, 201);
  }
});
after(async () => { await srv?.stop(); await redis?.stop(); });

describe('a shared Widget API', () => {
  test('the provider applies a schema and an export with kubectl: identity, endpoint slice', async () => {
    const applied = await kc('provider', ['apply', '-f', FIXTURES]);
    assert.match(applied.stdout, /apiexport.apis.kcp.io\/widgets created/);
    assert.match(applied.stdout, /apiresourceschema.apis.kcp.io\/v1.widgets.example.com created/);
    const exp = await eventually('identity hash', async () => {
      const e = (await admin('GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets')).json;
      return e?.status?.identityHash && e;
    });
    assert.match(exp.status.identityHash, /^[0-9a-f]{64}$/);
    assert.deepEqual(exp.spec.identity.secretRef, { namespace: 'kcp-system', name: 'widgets' });
    assert.equal(exp.status.conditions.find((c: { type: string }) => c.type === 'IdentityValid')?.status, 'True');
    const secret = (await admin('GET', '/clusters/root:provider/api/v1/namespaces/kcp-system/secrets/widgets')).json;
    const { createHash } = await import('node:crypto');
    assert.equal(createHash('sha256').update(Buffer.from(secret.data.key, 'base64')).digest('hex'), exp.status.identityHash);
    // v1alpha1 view of the same object (conversion).
    const v1 = (await admin('GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiexports/widgets')).json;
    assert.deepEqual(v1.spec.latestResourceSchemas, ['v1.widgets.example.com']);
    const slice = await eventually('endpoint slice', async () => {
      const s = (await admin('GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/widgets')).json;
      return s?.status?.endpoints?.length && s;
    });
    assert.deepEqual(slice.status.endpoints, [{ url: `${srv.url}${vwBase('provider', 'widgets')}` }]);
    // A schema is a valid CRD spec under its <prefix>.<plural>.<group> name.
    const badSchema = { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: 'v2.widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' }, versions: [{ name: 'v2', served: true, storage: true, schema: { type: 'object', properties: { spec: { type: 'foo' } } } }] } };
    const refused = await admin('POST', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiresourceschemas', badSchema);
    assert.equal(refused.status, 422, refused.body);
    assert.equal(refused.json.details.causes[0].field, 'spec.versions[0].schema.properties[spec].type');
    const misnamed = await admin('POST', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiresourceschemas', { ...badSchema, metadata: { name: 'v2.gadgets.example.com' } });
    assert.equal(misnamed.status, 422);
    // A schema never changes.
    const edit = await admin('PATCH', '/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiresourceschemas/v1.widgets.example.com', { spec: { names: { shortNames: ['x'] } } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(edit.status, 422, edit.body);
    assert.match(edit.json.message, /immutable/);
  });

  test('two consumers bind it; widgets are served, validated and stored in each', async () => {
    assert.equal((await bind('consumer-a', 'widgets', 'provider', 'widgets', [CONFIGMAP_CLAIM('Accepted')])).status, 201);
    const yaml = `apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata:\n  name: widgets\nspec:\n  reference:\n    export:\n      path: root:provider\n      name: widgets\n`;
    const created = await kc('consumer-b', ['apply', '-f', '-'], { input: yaml });
    assert.match(created.stdout, /apibinding.apis.kcp.io\/widgets created/);
    for (const c of ['consumer-a', 'consumer-b']) {
      const st = await eventually(`${c} bound`, async () => { const s = await bindingStatus(c, 'widgets'); return s.phase === 'Bound' && s; });
      assert.equal(st.apiExportClusterName, ws.provider);
      assert.deepEqual(st.boundResources.map((b: { group: string; resource: string }) => `${b.resource}.${b.group}`), ['widgets.example.com']);
      assert.equal(st.conditions.find((x: { type: string }) => x.type === 'Ready')?.status, 'True');
    }
    const resources = await kc('consumer-a', ['api-resources', '--api-group=example.com']);
    assert.match(resources.stdout, /widgets\s+wd\s+example.com\/v1\s+true\s+Widget/);
    const explain = await kc('consumer-a', ['explain', 'widgets.spec.size']);
    assert.match(explain.stdout, /How big the widget is/);
    for (const [c, name] of [['consumer-a', 'w-a'], ['consumer-b', 'w-b']]) {
      const out = await kc(c!, ['apply', '-f', '-'], { input: `apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ${name}\n  namespace: default\nspec:\n  color: blue\n` });
      assert.match(out.stdout, new RegExp(`widget.example.com/${name} created`));
    }
    const bad = await kc('consumer-a', ['apply', '-f', '-'], { input: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w-bad\n  namespace: default\nspec:\n  color: pink\n', allowFail: true });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /color must be red, green or blue/);
    // Defaulted by the schema; each consumer sees only its own.
    const a = JSON.parse((await kc('consumer-a', ['get', 'widgets', '-A', '-o', 'json'])).stdout);
    assert.deepEqual(a.items.map((w: { metadata: { name: string } }) => w.metadata.name), ['w-a']);
    assert.equal(a.items[0].spec.size, 1);
    const b = JSON.parse((await kc('consumer-b', ['get', 'widgets', '-A', '-o', 'json'])).stdout);
    assert.deepEqual(b.items.map((w: { metadata: { name: string } }) => w.metadata.name), ['w-b']);
    // The provider's own workspace does not serve widgets.
    assert.notEqual((await kc('provider', ['get', 'widgets'], { allowFail: true })).code, 0);
  });

  test('a provider controller on the virtual workspace (client-node informers) sees both consumers and writes status to each', async () => {
    const wildcard = providerConfig(`${srv.url}${vwBase('provider', 'widgets')}/clusters/*`);
    const objects = wildcard.makeApiClient(k8s.CustomObjectsApi);
    const seen = new Map<string, any>();
    const informer = k8s.makeInformer(wildcard, '/apis/example.com/v1/widgets',
      () => objects.listClusterCustomObject({ group: 'example.com', version: 'v1', plural: 'widgets' }) as Promise<any>);
    const key = (o: any) => `${o.metadata.annotations['kcp.io/cluster']}/${o.metadata.name}`;
    informer.on('add', (o: any) => seen.set(key(o), o));
    informer.on('update', (o: any) => seen.set(key(o), o));
    informer.on('delete', (o: any) => seen.delete(key(o)));
    await informer.start();
    try {
      await eventually('both widgets seen', async () => seen.size === 2);
      assert.deepEqual([...seen.keys()].sort(), [`${ws['consumer-a']}/w-a`, `${ws['consumer-b']}/w-b`].sort());
      // Reconcile: write status into each consumer through the virtual workspace.
      for (const o of seen.values()) {
        const cluster = o.metadata.annotations['kcp.io/cluster'];
        const one = providerConfig(`${srv.url}${vwBase('provider', 'widgets')}/clusters/${cluster}`).makeApiClient(k8s.CustomObjectsApi);
        await one.patchNamespacedCustomObjectStatus({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', name: o.metadata.name, body: { status: { phase: `Ready in ${cluster}` } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      }
      for (const [c, name] of [['consumer-a', 'w-a'], ['consumer-b', 'w-b']]) {
        const w = JSON.parse((await kc(c!, ['get', 'widget', name!, '-n', 'default', '-o', 'json'])).stdout);
        assert.equal(w.status.phase, `Ready in ${ws[c!]}`);
      }
      // The informer saw the status updates (watch through the virtual workspace).
      await eventually('status seen by the informer', async () => [...seen.values()].every((o) => o.status?.phase?.startsWith('Ready in')));
      // A new widget in a consumer arrives at the provider.
      await kc('consumer-b', ['apply', '-f', '-'], { input: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w-b2\n  namespace: default\nspec:\n  size: 3\n' });
      await eventually('w-b2 seen', async () => seen.has(`${ws['consumer-b']}/w-b2`));
    } finally {
      await informer.stop();
    }
  });

  test('the virtual workspace refuses what the export does not allow', async () => {
    const vw = vwBase('provider', 'widgets');
    // Secrets are not claimed: not served.
    assert.equal((await as('provider-token', 'GET', `${vw}/clusters/${ws['consumer-a']}/api/v1/namespaces/default/secrets`)).status, 404);
    // Bindings are read-only.
    const del = await as('provider-token', 'DELETE', `${vw}/clusters/${ws['consumer-a']}/apis/apis.kcp.io/v1alpha2/apibindings/widgets`);
    assert.equal(del.status, 403, del.body);
    // consumer-b has not accepted the ConfigMap claim.
    const cm = await as('provider-token', 'POST', `${vw}/clusters/${ws['consumer-b']}/api/v1/namespaces/default/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    assert.equal(cm.status, 403, cm.body);
    // A workspace without a binding to the export.
    const none = await as('provider-token', 'GET', `${vw}/clusters/${ws['other-provider']}/apis/example.com/v1/widgets`);
    assert.equal(none.status, 403);
    assert.match(none.json.message, /could not find suitable APIBinding/);
    // Wildcard: list and watch only.
    assert.equal((await as('provider-token', 'POST', `${vw}/clusters/*/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'z' } })).status, 405);
    // Someone without apiexports/content.
    const stranger = await as('stranger-token', 'GET', `${vw}/clusters/*/apis/example.com/v1/widgets`);
    assert.equal(stranger.status, 403);
    assert.equal(stranger.json.kind, 'Status');
    // An unknown export.
    assert.equal((await as('provider-token', 'GET', `/services/apiexport/${ws.provider}/nope/clusters/*/apis/example.com/v1/widgets`)).status, 404);
    // A consumer's own RBAC is not the provider's way in: the direct URL is refused.
    assert.equal((await as('provider-token', 'GET', `/clusters/root:consumer-a/apis/example.com/v1/widgets`)).status, 403);
  });

  test('permission claims: ConfigMaps visible once accepted, gone once rejected', async () => {
    const vw = vwBase('provider', 'widgets');
    for (const c of ['consumer-a', 'consumer-b']) assert.equal((await admin('POST', `/clusters/root:${c}/api/v1/namespaces/default/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${c}` } })).status, 201);
    const names = async () => ((await as('provider-token', 'GET', `${vw}/clusters/*/api/v1/configmaps`)).json.items as any[])
      .filter((o) => o.metadata.name.startsWith('cm-')).map((o) => o.metadata.name).sort();
    assert.deepEqual(await names(), ['cm-consumer-a']);
    // consumer-b accepts.
    const patch = { spec: { permissionClaims: [CONFIGMAP_CLAIM('Accepted')] } };
    assert.equal((await admin('PATCH', '/clusters/root:consumer-b/apis/apis.kcp.io/v1alpha2/apibindings/widgets', patch, { 'content-type': 'application/merge-patch+json' })).status, 200);
    await eventually('claim accepted', async () => JSON.stringify(await names()) === JSON.stringify(['cm-consumer-a', 'cm-consumer-b']));
    // Now the provider may write ConfigMaps there.
    const created = await as('provider-token', 'POST', `${vw}/clusters/${ws['consumer-b']}/api/v1/namespaces/default/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-provider' } });
    assert.equal(created.status, 201, created.body);
    assert.equal((await admin('GET', '/clusters/root:consumer-b/api/v1/namespaces/default/configmaps/from-provider')).status, 200);
    // consumer-a rejects.
    const reject = { spec: { permissionClaims: [CONFIGMAP_CLAIM('Rejected')] } };
    assert.equal((await admin('PATCH', '/clusters/root:consumer-a/apis/apis.kcp.io/v1alpha2/apibindings/widgets', reject, { 'content-type': 'application/merge-patch+json' })).status, 200);
    await eventually('claim rejected', async () => JSON.stringify(await names()) === JSON.stringify(['cm-consumer-b']));
    assert.equal((await as('provider-token', 'GET', `${vw}/clusters/${ws['consumer-a']}/api/v1/namespaces/default/configmaps`)).status, 403);
  });

  test('identity: another export of the same group/resource stays apart', async () => {
    // other-provider exports its own widgets.example.com.
    await kc('other-provider', ['apply', '-f', join(FIXTURES, 'widgets-schema.yaml')]);
    const exportYaml = readFileSync(join(FIXTURES, 'widgets-export.yaml'), 'utf8');
    await kc('other-provider', ['apply', '-f', '-'], { input: exportYaml });
    const [mine, theirs] = await Promise.all(['provider', 'other-provider'].map((w) => eventually('hash', async () => (await admin('GET', `/clusters/root:${w}/apis/apis.kcp.io/v1alpha2/apiexports/widgets`)).json?.status?.identityHash)));
    assert.notEqual(mine, theirs);
    assert.equal((await bind('consumer-c', 'widgets', 'other-provider', 'widgets')).status, 201);
    await eventually('consumer-c bound', async () => (await bindingStatus('consumer-c', 'widgets')).phase === 'Bound');
    await kc('consumer-c', ['apply', '-f', '-'], { input: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w-c\n  namespace: default\n' });
    const list = async (exportWs: string) => ((await admin('GET', `${vwBase(exportWs, 'widgets')}/clusters/*/apis/example.com/v1/widgets`)).json.items as any[]).map((o) => o.metadata.name).sort();
    assert.deepEqual(await list('provider'), ['w-a', 'w-b', 'w-b2']);
    assert.deepEqual(await list('other-provider'), ['w-c']);
    // A claim accepted for some objects only (a label selector) is not applied here: nothing
    // of the resource is shared, and the binding says why.
    assert.equal((await admin('POST', '/clusters/root:consumer-c/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'team-a', labels: { team: 'a' } } })).status, 201);
    const selective = { spec: { permissionClaims: [{ group: '', resource: 'configmaps', verbs: ['*'], selector: { matchLabels: { team: 'a' } }, state: 'Accepted' }] } };
    assert.equal((await admin('PATCH', '/clusters/root:consumer-c/apis/apis.kcp.io/v1alpha2/apibindings/widgets', selective, { 'content-type': 'application/merge-patch+json' })).status, 200);
    const applied = await eventually('selector reported', async () => (await bindingStatus('consumer-c', 'widgets')).conditions?.find((c: { type: string; reason?: string }) => c.type === 'PermissionClaimsApplied' && c.reason === 'SelectorNotSupported'));
    assert.match(applied.message, /selectors other than matchAll are not supported \(configmaps\./);
    const cms = await admin('GET', `${vwBase('other-provider', 'widgets')}/clusters/*/api/v1/configmaps`);
    assert.deepEqual(cms.json.items, []);
    assert.equal((await admin('GET', `${vwBase('other-provider', 'widgets')}/clusters/${ws['consumer-c']}/api/v1/namespaces/default/configmaps/team-a`)).status, 403);
  });

  test('conflicts: a second binding or a CRD of the same group/resource is refused with a condition', async () => {
    // consumer-a already binds widgets.example.com from provider.
    assert.equal((await bind('consumer-a', 'other-widgets', 'other-provider', 'widgets')).status, 201);
    const st = await eventually('conflict reported', async () => {
      const s = await bindingStatus('consumer-a', 'other-widgets');
      return s.conditions?.find((c: { type: string; reason?: string }) => c.type === 'BindingUpToDate' && c.reason === 'NamingConflicts') && s;
    });
    assert.match(st.conditions.find((c: { type: string }) => c.type === 'BindingUpToDate').message, /naming conflict with APIBinding "widgets"/);
    assert.notEqual(st.phase, 'Bound');
    // The first binding still serves consumer-a's widgets.
    assert.equal((await admin('GET', '/clusters/root:consumer-a/apis/example.com/v1/namespaces/default/widgets/w-a')).status, 200);
    assert.equal((await admin('DELETE', '/clusters/root:consumer-a/apis/apis.kcp.io/v1alpha2/apibindings/other-widgets')).status, 200);
    // A CRD first, then a binding.
    await createWorkspace('crd-owner');
    const crd = parseAllDocuments(readFileSync(join(FIXTURES, 'widgets-schema.yaml'), 'utf8'))[0]!.toJS();
    const crdObj = {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', names: crd.spec.names, scope: 'Namespaced', versions: crd.spec.versions.map((v: any) => ({ name: v.name, served: true, storage: true, schema: { openAPIV3Schema: v.schema } })) },
    };
    assert.equal((await admin('POST', '/clusters/root:crd-owner/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crdObj)).status, 201);
    // The other way round: no CRD for a bound group/resource (kcp's crdnooverlappinggvr).
    const overlap = await admin('POST', '/clusters/root:consumer-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crdObj);
    assert.equal(overlap.status, 403, overlap.body);
    assert.match(overlap.json.message, /overlaps with a bound CustomResourceDefinition for "widgets" APIBinding/);
    assert.equal((await bind('crd-owner', 'widgets', 'provider', 'widgets')).status, 201);
    const crdConflict = await eventually('CRD conflict', async () => {
      const s = await bindingStatus('crd-owner', 'widgets');
      return s.conditions?.find((c: { type: string; reason?: string }) => c.type === 'InitialBindingCompleted' && c.reason === 'NamingConflicts');
    });
    assert.match(crdConflict.message, /naming conflict with CustomResourceDefinition "widgets.example.com"/);
  });

  test('binding needs the bind verb on the export', async () => {
    await createWorkspace('tenant-ws');
    const grant = (ws: string, name: string, rules: unknown[]) => Promise.all([
      admin('POST', `/clusters/root:${ws}/apis/rbac.authorization.k8s.io/v1/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules }),
    ]).then(() => admin('POST', `/clusters/root:${ws}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'User', name: 'tenant' }],
    }));
    await grant('tenant-ws', 'tenant-admin', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { nonResourceURLs: ['/'], verbs: ['access'] }]);
    const body = { apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'widgets' }, spec: { reference: { export: { path: 'root:provider', name: 'widgets' } } } };
    const refused = await as('tenant-token', 'POST', '/clusters/root:tenant-ws/apis/apis.kcp.io/v1alpha2/apibindings', body);
    assert.equal(refused.status, 403, refused.body);
    assert.equal(refused.json.message, 'apibindings.apis.kcp.io "widgets" is forbidden: unable to create APIBinding: no permission to bind to export root:provider:widgets');
    assert.deepEqual([refused.json.reason, refused.json.details.kind, refused.json.details.name], ['Forbidden', 'apibindings', 'widgets']);
    await grant('provider', 'tenant-bind', [{ apiGroups: ['apis.kcp.io'], resources: ['apiexports'], resourceNames: ['widgets'], verbs: ['bind'] }]);
    const ok = await as('tenant-token', 'POST', '/clusters/root:tenant-ws/apis/apis.kcp.io/v1alpha2/apibindings', body);
    assert.equal(ok.status, 201, ok.body);
    assert.ok(ok.json.metadata.finalizers.includes('apis.kcp.io/apibinding-finalizer'));
    assert.ok(ok.json.metadata.labels['internal.apis.kcp.io/export']);
    // The reference cannot change afterwards.
    const moved = await as('tenant-token', 'PATCH', '/clusters/root:tenant-ws/apis/apis.kcp.io/v1alpha2/apibindings/widgets', { spec: { reference: { export: { path: 'root:other-provider', name: 'widgets' } } } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(moved.status, 422, moved.body);
  });

  test('a claim by identity hash: another export\'s provider sees the bound widgets of consumers that accept it', async () => {
    await createWorkspace('watcher');
    const hash = (await admin('GET', '/clusters/root:provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets')).json.status.identityHash;
    const exportOf = (claim: Record<string, unknown>) => ({ apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIExport', metadata: { name: 'widget-watcher' }, spec: { permissionClaims: [claim] } });
    // A resource that is not built in must be named by its identity.
    const unnamed = await admin('POST', '/clusters/root:watcher/apis/apis.kcp.io/v1alpha2/apiexports', exportOf({ group: 'example.com', resource: 'widgets', verbs: ['get'] }));
    assert.equal(unnamed.status, 422, unnamed.body);
    assert.match(unnamed.json.message, /identityHash is required for API types that are not built-in/);
    assert.equal((await admin('POST', '/clusters/root:watcher/apis/apis.kcp.io/v1alpha2/apiexports', exportOf({ group: 'example.com', resource: 'widgets', identityHash: hash, verbs: ['get', 'list', 'watch'] }))).status, 201);
    await eventually('watcher identity', async () => (await admin('GET', '/clusters/root:watcher/apis/apis.kcp.io/v1alpha2/apiexports/widget-watcher')).json?.status?.identityHash);
    assert.equal((await bind('consumer-a', 'widget-watcher', 'watcher', 'widget-watcher', [{ group: 'example.com', resource: 'widgets', identityHash: hash, verbs: ['*'], selector: { matchAll: true }, state: 'Accepted' }])).status, 201);
    await eventually('watcher bound', async () => (await bindingStatus('consumer-a', 'widget-watcher')).phase === 'Bound');
    const vw = vwBase('watcher', 'widget-watcher');
    const list = await admin('GET', `${vw}/clusters/*/apis/example.com/v1/widgets`);
    assert.equal(list.status, 200, list.body);
    assert.deepEqual(list.json.items.map((o: any) => `${o.metadata.annotations['kcp.io/cluster']}/${o.metadata.name}`), [`${ws['consumer-a']}/w-a`]);
    // The export asked for reading only.
    const write = await admin('POST', `${vw}/clusters/${ws['consumer-a']}/apis/example.com/v1/namespaces/default/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'from-watcher' } });
    assert.equal(write.status, 403, write.body);
    assert.equal((await admin('GET', `${vw}/clusters/${ws['consumer-a']}/apis/example.com/v1/namespaces/default/widgets/w-a`)).status, 200);
  });

  test('a maximal permission policy caps what consumers may do with the bound resource', async () => {
    // other-provider's export (bound in consumer-c) gets a local policy: nothing is allowed
    // until its workspace grants the prefixed user or groups.
    const patched = await admin('PATCH', '/clusters/root:other-provider/apis/apis.kcp.io/v1alpha2/apiexports/widgets', { spec: { maximalPermissionPolicy: { local: {} } } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(patched.status, 200, patched.body);
    const list = () => admin('GET', '/clusters/root:consumer-c/apis/example.com/v1/namespaces/default/widgets');
    const refused = await eventually('policy applied', async () => { const r = await list(); return r.status === 403 && r; });
    assert.match(refused.json.message, /maximal permission policy of APIExport/);
    // ConfigMaps of the same workspace are not the export's: unaffected.
    assert.equal((await admin('GET', '/clusters/root:consumer-c/api/v1/namespaces/default/configmaps')).status, 200);
    for (const doc of [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'widgets-readers' }, rules: [{ apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get', 'list', 'watch'] }] },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'widgets-readers' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'widgets-readers' }, subjects: [{ kind: 'Group', name: 'apis.kcp.io:binding:system:kcp:admin' }] },
    ]) {
      const plural = doc.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
      assert.equal((await admin('POST', `/clusters/root:other-provider/apis/rbac.authorization.k8s.io/v1/${plural}`, doc)).status, 201);
    }
    await eventually('reads allowed', async () => (await list()).status === 200);
    const create = await admin('POST', '/clusters/root:consumer-c/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w-c2' } });
    assert.equal(create.status, 403, create.body);
  });

  test('unbinding deletes the consumer\'s objects and stops serving the resource', async () => {
    assert.equal((await admin('DELETE', '/clusters/root:consumer-b/apis/apis.kcp.io/v1alpha2/apibindings/widgets')).status, 200);
    await eventually('binding gone', async () => (await admin('GET', '/clusters/root:consumer-b/apis/apis.kcp.io/v1alpha2/apibindings/widgets')).status === 404, 15_000);
    assert.equal((await admin('GET', '/clusters/root:consumer-b/apis/example.com/v1/namespaces/default/widgets')).status, 404);
    const left = ((await admin('GET', `${vwBase('provider', 'widgets')}/clusters/*/apis/example.com/v1/widgets`)).json.items as any[]).map((o) => o.metadata.name);
    assert.deepEqual(left, ['w-a']);
    // Binding again starts empty.
    assert.equal((await bind('consumer-b', 'widgets', 'provider', 'widgets')).status, 201);
    await eventually('rebound', async () => (await bindingStatus('consumer-b', 'widgets')).phase === 'Bound');
    await sleep(100);
    const again = await eventually('served again', async () => { const r = await admin('GET', '/clusters/root:consumer-b/apis/example.com/v1/namespaces/default/widgets'); return r.status === 200 && r; });
    assert.deepEqual(again.json.items, []);
  });
});
