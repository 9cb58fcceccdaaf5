/**
 * Conformance cases of kube's test/e2e/apimachinery/resource_quota.go that need no Pods, Services
 * or ReplicaSets: the quota's status promptly calculated, the life of a ConfigMap and of a Secret
 * under a quota, and updating and deleting a ResourceQuota. Only the expectations are carried
 * over (the hard names of upstream's test quota, the usage it waits for, the refusal of a create
 * over the limit).
 */
import type { Case, CaseContext } from './types.js';
import { configMap, expect, expectStatus, until } from './util.js';

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
      const latest = (await ctx.api('GET', `${path}/test-quota`)).json;
      const updated = expectStatus(await ctx.api('PUT', `${path}/test-quota`, { ...latest, spec: { hard: { cpu: '2', memory: '1Gi' } } }), 200, 'update').json;
      expect(updated.spec.hard.cpu === '2' && updated.spec.hard.memory === '1Gi', `updated hard ${JSON.stringify(updated.spec.hard)}`);
      expectStatus(await ctx.api('DELETE', `${path}/test-quota`), 200, 'delete');
      expectStatus(await ctx.api('GET', `${path}/test-quota`), 404, 'get after delete');
    },
  },
];
