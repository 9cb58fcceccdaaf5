/**
 * Quota helpers (src/admission/plugins/resourcequota.ts): quantities as kube parses and prints
 * them, the resource names an object counts towards, kcp's cluster-scoped quota rule, and the
 * in-flight reservations the quota controller adds to its counts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  QuotaReservations, ResourceQuotaAdmission, countedResourceNames, formatCount, isClusterScopedQuota, isQuotaIgnored, parseCountedResource, parseQuantity,
} from '../../src/admission/plugins/resourcequota.js';
import type { CacheEvent } from '../../src/storage/watchcache.js';
import { computeQuotaStatus, needsStatus } from '../../src/controllers/resourcequota/controller.js';
import { chainAdmission } from '../../src/admission/index.js';
import type { WebhookAttributes } from '../../src/registry/store.js';

test('quantities: kube\'s suffixes and exponents; counts printed as DecimalSI', () => {
  assert.equal(parseQuantity('3'), 3);
  assert.equal(parseQuantity('1k'), 1000);
  assert.equal(parseQuantity('1Ki'), 1024);
  assert.equal(parseQuantity('1G'), 1e9);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('.5'), 0.5);
  for (const bad of ['', 'abc', '1kk', '1 k', '--1', '1KB']) assert.equal(parseQuantity(bad), undefined, bad);
  assert.deepEqual([0, 3, 999, 1000, 1500, 2000, 1_000_000, 1_234_000].map(formatCount), ['0', '3', '999', '1k', '1500', '2k', '1M', '1234k']);
});

test('resource names an object counts towards, and back', () => {
  assert.deepEqual(countedResourceNames('', 'configmaps'), ['count/configmaps', 'configmaps']);
  assert.deepEqual(countedResourceNames('', 'serviceaccounts'), ['count/serviceaccounts']);
  assert.deepEqual(countedResourceNames('example.com', 'sheriffs'), ['count/sheriffs.example.com']);
  assert.deepEqual(parseCountedResource('count/sheriffs.example.com'), { group: 'example.com', plural: 'sheriffs' });
  assert.deepEqual(parseCountedResource('count/workspaces.tenancy.kcp.io'), { group: 'tenancy.kcp.io', plural: 'workspaces' });
  assert.deepEqual(parseCountedResource('count/configmaps'), { group: '', plural: 'configmaps' });
  assert.deepEqual(parseCountedResource('secrets'), { group: '', plural: 'secrets' });
  for (const other of ['cpu', 'requests.memory', 'pods', 'count/', 'services.loadbalancers']) assert.equal(parseCountedResource(other), undefined, other);
  assert.ok(isQuotaIgnored('', 'events'));
  assert.ok(isQuotaIgnored('events.k8s.io', 'events'));
  assert.ok(!isQuotaIgnored('', 'configmaps'));
});

test('kcp\'s cluster-scoped quota: namespace admin and a ParseBool-true annotation', () => {
  const q = (namespace: string, value?: string) => ({ metadata: { name: 'q', namespace, ...(value !== undefined ? { annotations: { 'experimental.quota.kcp.io/cluster-scoped': value } } : {}) } });
  for (const v of ['true', 'True', 'TRUE', 't', '1']) assert.ok(isClusterScopedQuota(q('admin', v)), v);
  for (const v of ['false', 'yes', '', 'on']) assert.ok(!isClusterScopedQuota(q('admin', v)), v);
  assert.ok(!isClusterScopedQuota(q('admin')));
  assert.ok(!isClusterScopedQuota(q('default', 'true')));
});

test('controller status: counts from the cache plus reservations; scopes and other names 0; ignored names left out', () => {
  const listeners: ((ev: CacheEvent | undefined) => void)[] = [];
  const reservations = new QuotaReservations({ subscribe: (l) => { listeners.push(l); return () => undefined; }, getEntry: () => undefined }, 60_000);
  const counts: Record<string, number> = { 'core/configmaps|c|ns': 2, 'core/configmaps|c|*': 7, 'example.com/sheriffs|c|ns': 1 };
  const deps = {
    cache: { count: (gr: string, c: string, ns?: string) => counts[`${gr}|${c}|${ns ?? '*'}`] ?? 0, getEntry: () => undefined },
    storageResource: (_c: string, group: string, plural: string) => (plural === 'missing' ? undefined : `${group || 'core'}/${plural}`),
    reservations,
  };
  const quota = (namespace: string, hard: Record<string, string>, extra: Record<string, unknown> = {}) => ({ metadata: { name: 'q', namespace, ...extra }, spec: { hard } });
  const q = quota('ns', { 'count/configmaps': '5', configmaps: '5', 'count/sheriffs.example.com': '3', 'count/missing.example.com': '1', cpu: '2', 'count/events': '9' });
  assert.deepEqual(computeQuotaStatus(deps, 'c', q).used, { 'count/configmaps': '2', configmaps: '2', 'count/sheriffs.example.com': '1', 'count/missing.example.com': '0', cpu: '0' });
  reservations.reserve('c', 'uid-1', { groupResource: 'core/configmaps', namespace: 'ns', name: 'x' }, 'c|ns/q', ['count/configmaps']);
  assert.equal(computeQuotaStatus(deps, 'c', q).used['count/configmaps'], '3');
  assert.equal(computeQuotaStatus(deps, 'c', q).used.configmaps, '2');
  // Another object of the same name (another resource) does not end it; the object itself does.
  for (const l of listeners) l({ rv: 8, type: 'ADDED', entry: { key: 'k0', groupResource: 'core/secrets', cluster: 'c', namespace: 'ns', name: 'x', rv: 8, json: '{"metadata":{"uid":"uid-0"}}', labels: undefined } });
  assert.equal(reservations.size, 1);
  for (const l of listeners) l({ rv: 9, type: 'ADDED', entry: { key: 'k', groupResource: 'core/configmaps', cluster: 'c', namespace: 'ns', name: 'x', rv: 9, json: '{"metadata":{"uid":"uid-1"}}', labels: undefined } });
  assert.equal(reservations.size, 0);
  const clusterWide = quota('admin', { 'count/configmaps': '10' }, { annotations: { 'experimental.quota.kcp.io/cluster-scoped': 'true' } });
  assert.equal(computeQuotaStatus(deps, 'c', clusterWide).used['count/configmaps'], '7');
  const scoped = { ...quota('ns', { 'count/configmaps': '5' }), spec: { hard: { 'count/configmaps': '5' }, scopes: ['Terminating'] } };
  assert.equal(computeQuotaStatus(deps, 'c', scoped).used['count/configmaps'], '0');
  assert.ok(needsStatus(q));
  assert.ok(!needsStatus({ ...q, status: { hard: q.spec.hard, used: computeQuotaStatus(deps, 'c', q).used } }));
  // A refused create's release reports the quota as freed.
  const freed: string[][] = [];
  reservations.onFreed = (keys) => freed.push(keys);
  reservations.reserve('c', 'uid-2', { groupResource: 'core/configmaps', namespace: 'ns', name: 'y' }, 'c|ns/q', ['count/configmaps']);
  reservations.release('c', 'uid-2');
  assert.deepEqual(freed, [['c|ns/q']]);
  reservations.close();
});

test('a create the store failed after admission: the chain hands it to the plugins, quota drops its reservation and reports the quota', () => {
  const reservations = new QuotaReservations({ subscribe: () => () => undefined, getEntry: () => undefined }, 60_000);
  const freed: string[][] = [];
  reservations.onFreed = (keys) => freed.push(keys);
  const quota = new ResourceQuotaAdmission({ cache: {} as never, quotas: () => { throw new Error('not used'); }, reservations, scope: () => { throw new Error('not used'); } });
  const seen: string[] = [];
  const chain = chainAdmission([
    { name: 'Other', resources: ['/secrets'], release: () => seen.push('Other') },
    { name: 'ResourceQuota', resources: ['*'], release: (a) => { seen.push('ResourceQuota'); quota.release(a); } },
  ]);
  const a = (uid: string, extra: Partial<WebhookAttributes> = {}) => ({
    operation: 'CREATE', cluster: 'c', desc: { group: '', plural: 'configmaps' }, subresource: '', namespace: 'ns', name: 'x',
    user: { username: 'u', groups: [] }, object: { metadata: { name: 'x', namespace: 'ns', uid } }, dryRun: false, ...extra,
  }) as unknown as WebhookAttributes;
  const target = { groupResource: 'core/configmaps', namespace: 'ns', name: 'x' };
  reservations.reserve('c', 'uid-1', target, 'c|ns/q', ['count/configmaps']);
  reservations.reserve('c', 'uid-1', target, 'c|admin/cluster', ['count/configmaps']);
  // A dry run or an update charged nothing: nothing is released.
  chain.release!(a('uid-1', { dryRun: true }));
  chain.release!(a('uid-1', { operation: 'UPDATE' }));
  assert.equal(reservations.size, 1);
  chain.release!(a('uid-1'));
  assert.deepEqual(seen, ['ResourceQuota', 'ResourceQuota', 'ResourceQuota']);
  assert.equal(reservations.size, 0);
  assert.deepEqual(freed, [['c|ns/q', 'c|admin/cluster']]);
  // Releasing twice (or a create never charged) is a no-op.
  chain.release!(a('uid-1'));
  assert.equal(freed.length, 1);
  reservations.close();
});
