/**
 * Conformance cases of kube's test/e2e/apimachinery/resource_quota.go that need no Pods, Services
 * or ReplicaSets: the quota's status promptly calculated, the life of a ConfigMap and of a Secret
 * under a quota, and updating and deleting a ResourceQuota. Only the expectations are carried
 * over (the hard names of upstream's test quota, the usage it waits for, the refusal of a create
 * over the limit).
 */
import type { Case, CaseContext } from './types.js';
import { PATCH, configMap, expect, expectStatus, until } from './util.js';

const E2E = 'test/e2e/apimachinery/resource_quota.go';

/** Upstream's `newTestResourceQuota` hard names (kcp-ts serves no pods, services or volume claims: their usage is 0). */
function testQuota(name: string, extra: Record<string, string> = {}): object {
  return {
    apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name },
    spec: {
      hard: {
        pods: '5', 'requests.cpu': '1', 'requests.memory': '500Mi', configmaps: '10', persistentvolumeclaims: '10', replicationcontrollers: '10',
        resourcequotas: '1', secrets: '10', services: '10', 'services.loadbalancers': '10', 'services.nodeports': '10',
        'requests.storage': '10Gi', 'requests.example.com/dongle': '3', 'count/replicasets.apps': '5', ...extra,
      },
    },
  };
}

/** Upstream's `waitForResourceQuota`: until `status.used` has every value of `used`. */
async function waitForUsed(ctx: CaseContext, name: string, used: Record<string, string>): Promise<any> {
  return until(`quota ${name} used ${JSON.stringify(used)}`, async () => {
    const q = (await ctx.api('GET', `${ctx.core}/resourcequotas/${name}`)).json;
    return Object.entries(used).every(([k, v]) => q?.status?.used?.[k] === v) ? q : undefined;
  });
}

/** The life of one counted kind under a quota allowing one more than the namespace holds. */
async function lifeOf(ctx: CaseContext, plural: 'configmaps' | 'secrets', make: (name: string) => object): Promise<void> {
  const existing = expectStatus(await ctx.api('GET', `${ctx.core}/${plural}`), 200, `list ${plural}`).json.items.length as number;
  expectStatus(await ctx.api('POST', `${ctx.core}/resourcequotas`, testQuota('test-quota', { [plural]: String(existing + 1) })), 201, 'create quota');
  await waitForUsed(ctx, 'test-quota', { resourcequotas: '1', [plural]: String(existing) });
  expectStatus(await ctx.api('POST', `${ctx.core}/${plural}`, make('test-object')), 201, `create one of ${plural}`);
  await waitForUsed(ctx, 'test-quota', { resourcequotas: '1', [plural]: String(existing + 1) });
  const over = expectStatus(await ctx.api('POST', `${ctx.core}/${plural}`, make('too-many')), 403, 'a create that exceeds the remaining quota');
  expect(/exceeded quota: test-quota/.test(over.json?.message ?? ''), `refusal message: ${over.body.slice(0, 300)}`);
  expectStatus(await ctx.api('DELETE', `${ctx.core}/${plural}/test-object`), 200, 'delete');
  await waitForUsed(ctx, 'test-quota', { resourcequotas: '1', [plural]: String(existing) });
}

/** `hard` as a stable string (key order aside). */
const hardOf = (h: Record<string, string> | undefined) => JSON.stringify(Object.entries(h ?? {}).sort());

/** The ResourceQuota cases. */
export const QUOTA_CASES: Case[] = [
  {
    id: 'quota-status-promptly', area: 'quota',
    source: { file: E2E, it: 'should create a ResourceQuota and ensure its status is promptly calculated.' },
    note: 'upstream\'s test quota, with its pod, service and volume names (usage 0 here: none are served)',
    async check(ctx) {
      expectStatus(await ctx.api('POST', `${ctx.core}/resourcequotas`, testQuota('test-quota')), 201, 'create quota');
      const q = await waitForUsed(ctx, 'test-quota', { resourcequotas: '1' });
      expect(JSON.stringify(q.status.hard) === JSON.stringify(q.spec.hard), `status.hard ${JSON.stringify(q.status.hard)} is spec.hard`);
    },
  },
  {
    id: 'quota-life-configmap', area: 'quota',
    source: { file: E2E, it: 'should create a ResourceQuota and capture the life of a configMap.' },
    async check(ctx) { await lifeOf(ctx, 'configmaps', (name) => configMap(name)); },
  },
  {
    id: 'quota-life-secret', area: 'quota',
    source: { file: E2E, it: 'should create a ResourceQuota and capture the life of a secret.' },
    async check(ctx) { await lifeOf(ctx, 'secrets', (name) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { 'data-1': Buffer.from('value-1\n').toString('base64') } })); },
  },
  {
    id: 'quota-update-delete', area: 'quota',
    source: { file: E2E, it: 'should be able to update and delete ResourceQuota.' },
    async check(ctx) {
      const path = `${ctx.core}/resourcequotas`;
      expectStatus(await ctx.api('POST', path, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'test-quota' }, spec: { hard: { cpu: '1', memory: '500Mi' } } }), 201, 'create');
      const got = expectStatus(await ctx.api('GET', `${path}/test-quota`), 200, 'get').json;
      expect(got.spec.hard.cpu === '1' && got.spec.hard.memory === '500Mi', `hard ${JSON.stringify(got.spec.hard)}`);
      // The controller writes the status meanwhile: read and update again on a conflict (client-go's RetryOnConflict).
      const update = async () => ctx.api('PUT', `${path}/test-quota`, { ...(await ctx.api('GET', `${path}/test-quota`)).json, spec: { hard: { cpu: '2', memory: '1Gi' } } });
      let res = await update();
      for (let i = 0; i < 5 && res.status === 409; i++) res = await update();
      const updated = expectStatus(res, 200, 'update').json;
      expect(updated.spec.hard.cpu === '2' && updated.spec.hard.memory === '1Gi', `updated hard ${JSON.stringify(updated.spec.hard)}`);
      expectStatus(await ctx.api('DELETE', `${path}/test-quota`), 200, 'delete');
      expectStatus(await ctx.api('GET', `${path}/test-quota`), 404, 'get after delete');
    },
  },
  {
    id: 'quota-status-changes', area: 'quota',
    source: { file: E2E, it: 'should apply changes to a resourcequota status' },
    note: 'status.hard written by hand is set back to spec.hard by the resource quota controller, as upstream waits for',
    async check(ctx) {
      const path = `${ctx.core}/resourcequotas/e2e-rq-status`;
      const created = expectStatus(await ctx.api('POST', `${ctx.core}/resourcequotas`, {
        apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'e2e-rq-status', labels: { 'e2e-rq-label': 'e2e-rq-status' } }, spec: { hard: { cpu: '500m', memory: '500Mi' } },
      }), 201, 'create').json;
      expect(created.spec.hard.cpu === '500m' && created.spec.hard.memory === '500Mi', `spec.hard ${JSON.stringify(created.spec.hard)}`);
      const settled = (what: string) => until(what, async () => {
        const q = (await ctx.api('GET', `${path}/status`)).json;
        return q?.status?.hard && hardOf(q.status.hard) === hardOf(q.spec.hard) ? q : undefined;
      });
      const first = await settled('status.hard reported as spec.hard');
      const updated = expectStatus(await ctx.api('PUT', `${path}/status`, { ...first, status: { ...first.status, hard: { cpu: '1', memory: '1Gi' } } }), 200, 'update /status').json;
      expect(updated.status.hard.cpu === '1' && updated.status.hard.memory === '1Gi', `updated status.hard ${JSON.stringify(updated.status.hard)}`);
      expect(updated.spec.hard.cpu === '500m', 'spec unchanged by the /status update');
      await settled('status.hard set back to spec.hard');
      const patched = expectStatus(await ctx.api('PATCH', path, { spec: { hard: { cpu: '1', memory: '1Gi' } } }, PATCH.strategic), 200, 'patch spec.hard').json;
      expect(patched.spec.hard.cpu === '1' && patched.spec.hard.memory === '1Gi', `patched spec.hard ${JSON.stringify(patched.spec.hard)}`);
      await settled('status.hard follows the new spec.hard');
      const statusPatched = expectStatus(await ctx.api('PATCH', `${path}/status`, { status: { hard: { cpu: '2', memory: '2Gi' } } }, PATCH.strategic), 200, 'patch /status').json;
      expect(statusPatched.status.hard.cpu === '2' && statusPatched.spec.hard.cpu === '1', `after the /status patch: ${JSON.stringify({ spec: statusPatched.spec, status: statusPatched.status })}`);
      const got = await settled('status.hard back to spec.hard after the patch');
      expect(got.status.hard.cpu === '1' && got.status.hard.memory === '1Gi', `status.hard ${JSON.stringify(got.status.hard)}`);
      const again = expectStatus(await ctx.api('PATCH', `${path}/status`, { status: { hard: { cpu: '3' } } }, PATCH.merge), 200, 'repatch /status').json;
      expect(again.spec.hard.cpu === '1' && again.spec.hard.memory === '1Gi', 'spec unchanged by patching /status');
    },
  },
  {
    id: 'quota-lifecycle', area: 'quota',
    source: { file: E2E, it: 'should manage the lifecycle of a ResourceQuota' },
    async check(ctx) {
      const label = { 'e2e-rq-label': `lifecycle-${ctx.uid}` };
      const selector = `labelSelector=${encodeURIComponent(`e2e-rq-label=lifecycle-${ctx.uid}`)}`;
      expectStatus(await ctx.api('POST', `${ctx.core}/resourcequotas`, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'e2e-quota', labels: label }, spec: { hard: { cpu: '1', memory: '500Mi' } } }), 201, 'create');
      const got = expectStatus(await ctx.api('GET', `${ctx.core}/resourcequotas/e2e-quota`), 200, 'get').json;
      expect(got.spec.hard.cpu === '1', `hard ${JSON.stringify(got.spec.hard)}`);
      const all = expectStatus(await ctx.api('GET', `${ctx.cluster}/api/v1/resourcequotas?${selector}`), 200, 'list in all namespaces').json;
      expect(all.items.length === 1 && all.items[0].metadata.name === 'e2e-quota', `listed: ${all.items.map((i: any) => i.metadata.name)}`);
      const patched = expectStatus(await ctx.api('PATCH', `${ctx.core}/resourcequotas/e2e-quota`, { metadata: { labels: { 'e2e-rq-label-patched': 'true' } }, spec: { hard: { memory: '750Mi' } } }, PATCH.strategic), 200, 'patch').json;
      expect(patched.metadata.labels['e2e-rq-label-patched'] === 'true' && patched.spec.hard.memory === '750Mi' && patched.spec.hard.cpu === '1', `patched: ${JSON.stringify(patched.metadata.labels)} ${JSON.stringify(patched.spec.hard)}`);
      expectStatus(await ctx.api('DELETE', `${ctx.core}/resourcequotas?${selector}`), 200, 'delete collection');
      await until('quota gone', async () => (await ctx.api('GET', `${ctx.core}/resourcequotas/e2e-quota`)).status === 404);
    },
  },
];
