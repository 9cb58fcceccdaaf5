/** The operator's pure parts: upgrade order and gating, "no write when nothing changed", durations, CRDs shipped with the chart. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { planRollout, upgradeOrder, type ComponentState } from '../../operator/rollout.js';
import { applyReason, firstDifference, quantityValue, withAppliedHash } from '../../operator/kube/apply.js';
import { parseDuration } from '../../operator/api/types.js';
import { ensureCertificate, replaceReason } from '../../operator/pki.js';
import { isIssuedBy } from '../../src/pki/certs.js';

const REPO = join(import.meta.dirname, '..', '..');

describe('upgrade order', () => {
  it('canaries first (default: the first Shard), then the other shards, root, the front-proxy', () => {
    assert.deepEqual(upgradeOrder(['beta', 'alpha', 'gamma'], undefined), ['shard:alpha', 'shard:beta', 'shard:gamma', 'shard:root', 'front-proxy']);
    assert.deepEqual(upgradeOrder(['beta', 'alpha'], ['beta']), ['shard:beta', 'shard:alpha', 'shard:root', 'front-proxy']);
    assert.deepEqual(upgradeOrder([], undefined), ['shard:root', 'front-proxy']);
    assert.deepEqual(upgradeOrder(['a'], ['root']), ['shard:root', 'shard:a', 'front-proxy']);
    assert.deepEqual(upgradeOrder(['a'], ['nope']), ['shard:a', 'shard:root', 'front-proxy'], 'an unknown canary is ignored');
  });
});

describe('rollout', () => {
  const order = upgradeOrder(['a', 'b'], undefined);
  const c = (name: string, version: string | undefined, ready: boolean, extra: Partial<ComponentState> = {}): ComponentState => ({ name, version, ready, failed: false, ...extra });
  const input = { target: '2', previous: '1', autoRollback: true, order };

  it('moves one component at a time, each only after the one before is ready on the target', () => {
    let p = planRollout(input, [c('shard:root', '1', true), c('shard:a', '1', true), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(p.phase, 'Progressing');
    assert.deepEqual([...p.versions], [['shard:root', '1'], ['shard:a', '2'], ['shard:b', '1'], ['front-proxy', '1']]);
    p = planRollout(input, [c('shard:root', '1', true), c('shard:a', '2', false), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(p.versions.get('shard:b'), '1', 'b waits for the canary');
    assert.match(p.message, /waiting for shard:a/);
    p = planRollout(input, [c('shard:root', '1', true), c('shard:a', '2', true), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(p.versions.get('shard:b'), '2');
    assert.equal(p.versions.get('shard:root'), '1');
    p = planRollout(input, [c('shard:root', '2', true), c('shard:a', '2', true), c('shard:b', '2', true), c('front-proxy', '2', true)]);
    assert.equal(p.phase, 'Complete');
  });

  it('rolls a component back that missed its deadline, and stops', () => {
    const p = planRollout(input, [c('shard:root', '1', true), c('shard:a', '2', false, { failed: true }), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(p.phase, 'RolledBack');
    assert.equal(p.failedVersion, '2');
    assert.equal(p.versions.get('shard:a'), '1');
    const after = planRollout({ ...input, failedVersion: '2' }, [c('shard:root', '1', true), c('shard:a', '1', true), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(after.phase, 'RolledBack');
    assert.equal(after.versions.get('shard:a'), '1', 'the failed version is not tried again');
    const next = planRollout({ ...input, target: '3', failedVersion: '2' }, [c('shard:root', '1', true), c('shard:a', '1', true), c('shard:b', '1', true), c('front-proxy', '1', true)]);
    assert.equal(next.versions.get('shard:a'), '3', 'a new version rolls out again');
  });

  it('leaves pinned shards alone and creates new components at the target', () => {
    const p = planRollout(input, [c('shard:root', '1', true), c('shard:a', '1', true, { pinned: '1' }), c('shard:b', undefined, false), c('front-proxy', '1', true)]);
    assert.equal(p.versions.get('shard:a'), '1');
    assert.equal(p.versions.get('shard:b'), '2');
    assert.equal(p.versions.get('shard:root'), '2', 'the pinned canary does not block; the new shard is not gated');
  });
});

describe('no write when nothing changed', () => {
  const desired = withAppliedHash({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'n' }, spec: { replicas: 1, template: { spec: { containers: [{ name: 'c', resources: { limits: { cpu: '1000m', memory: '1Gi' } } }] } } } });
  const live = JSON.parse(JSON.stringify(desired));
  live.metadata.resourceVersion = '5';
  live.spec.strategy = { type: 'RollingUpdate' };
  live.spec.template.spec.containers[0].resources.limits = { cpu: '1', memory: '1Gi' };
  live.spec.template.spec.containers[0].terminationMessagePath = '/dev/termination-log';
  live.status = { replicas: 1 };

  it('ignores what the server adds and compares quantities by value', () => {
    assert.equal(applyReason(desired, live), undefined);
    assert.equal(quantityValue('1000m'), 1);
    assert.equal(quantityValue('1Gi'), 2 ** 30);
    assert.ok(Number.isNaN(quantityValue('abc')));
  });
  it('applies when missing, when the declaration changed, and when the live object drifted', () => {
    assert.equal(applyReason(desired, undefined), 'missing');
    const changed = withAppliedHash({ ...desired, metadata: { name: 'd', namespace: 'n' }, spec: { replicas: 1 } });
    assert.equal(applyReason(changed, live), 'changed');
    const drifted = JSON.parse(JSON.stringify(live));
    drifted.spec.replicas = 3;
    assert.equal(applyReason(desired, drifted), 'drifted at .spec.replicas');
    assert.equal(firstDifference({ a: [1, 2] }, { a: [1] }), '.a');
  });
});

describe('durations', () => {
  it('reads the CRDs\' Go durations', () => {
    assert.equal(parseDuration('8760h'), 8760 * 3600_000);
    assert.equal(parseDuration('1h30m'), 5400_000);
    assert.equal(parseDuration('45s'), 45_000);
    assert.throws(() => parseDuration('1d'), /invalid duration/);
    assert.throws(() => parseDuration(''), /invalid duration/);
  });
});

describe('CRDs', () => {
  it('the chart ships exactly the CRDs of crds/', () => {
    const files = readdirSync(join(REPO, 'crds')).sort();
    assert.deepEqual(readdirSync(join(REPO, 'charts', 'kcp-operator', 'files', 'crds')).sort(), files);
    for (const f of files) {
      assert.equal(readFileSync(join(REPO, 'charts', 'kcp-operator', 'files', 'crds', f), 'utf8'), readFileSync(join(REPO, 'crds', f), 'utf8'), `${f} differs between crds/ and the chart`);
    }
  });
});

describe('operator PKI', () => {
  const policy = { caValidityMs: 3650 * 86_400_000, validityMs: 365 * 86_400_000, renewBeforeMs: 30 * 86_400_000 };
  it('keeps what fits, re-issues what does not, and re-certifies a CA near its end with its own key', async () => {
    const { pair: ca } = await ensureCertificate(undefined, { kind: 'ca', commonName: 'test-ca' }, undefined, policy);
    const wanted = { kind: 'serving' as const, commonName: 's', dnsNames: ['a.example'], ipAddresses: ['127.0.0.1'] };
    const { pair: leaf, reason } = await ensureCertificate(undefined, wanted, ca, policy);
    assert.equal(reason, 'missing');
    assert.equal(replaceReason(leaf, wanted, ca, policy), undefined, 'a fitting certificate is kept');
    assert.equal(replaceReason(leaf, { ...wanted, dnsNames: ['b.example'] }, ca, policy), 'SANs changed');
    assert.match(replaceReason(leaf, wanted, ca, policy, Date.now() + 340 * 86_400_000)!, /^expires/);
    const { pair: other } = await ensureCertificate(undefined, { kind: 'ca', commonName: 'other' }, undefined, policy);
    assert.equal(replaceReason(leaf, wanted, other, policy), 'not issued by the current CA');
    const later = Date.now() + 3630 * 86_400_000;
    const renewed = await ensureCertificate(ca, { kind: 'ca', commonName: 'test-ca' }, undefined, policy, later);
    assert.match(renewed.reason!, /^expires/);
    assert.equal(renewed.pair.keyPem.length > 0, true);
    assert.ok(isIssuedBy(leaf.certPem, renewed.pair.certPem), 'what the old CA signed verifies against the re-certified one');
  });
});

describe('shard configuration from the KcpInstance', () => {
  it('the audit policy ConfigMap is a policy the shard accepts; runtimeConfig becomes a --runtime-config the shard parses', async () => {
    const { auditPolicyConfigMap, shardWorkload } = await import('../../operator/resources.js');
    const { parseAuditPolicy } = await import('../../src/endpoints/filters/audit.js');
    const { parseRuntimeConfig } = await import('../../src/apis/runtimeconfig.js');
    const owner = { apiVersion: 'operator.kcp-ts.io/v1alpha1', kind: 'KcpInstance', name: 'kcp', uid: 'u', controller: true, blockOwnerDeletion: true };
    const inst = {
      apiVersion: 'operator.kcp-ts.io/v1alpha1', kind: 'KcpInstance' as const, metadata: { name: 'kcp', namespace: 'kcp-system', uid: 'u' },
      spec: {
        version: '0.1.0', runtimeConfig: { 'admissionregistration.k8s.io/v1beta1': true },
        audit: { policy: { apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], rules: [{ level: 'Metadata', resources: [{ group: '', resources: ['secrets'] }] }] } },
      },
    };
    const [cm] = auditPolicyConfigMap(inst, owner) as [{ data: Record<string, string> }];
    const policy = parseAuditPolicy(cm.data['policy.yaml']!, 'policy.yaml');
    assert.ok(policy);
    const plan = { name: 'root', version: '0.1.0', replicas: 1, redis: { mode: 'Provisioned' as const }, owner, certificateSerials: '' };
    const deployment = shardWorkload(inst, plan)[0] as { spec: { template: { spec: { containers: { args: string[] }[] } } } };
    const rc = deployment.spec.template.spec.containers[0]!.args.find((a) => a.startsWith('--runtime-config='))!;
    assert.deepEqual(parseRuntimeConfig(rc.slice('--runtime-config='.length)), { 'admissionregistration.k8s.io/v1beta1': true });
    assert.deepEqual(auditPolicyConfigMap({ ...inst, spec: { version: '0.1.0' } }, owner), []);
  });
});
