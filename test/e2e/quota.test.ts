/**
 * ResourceQuota with real kubectl, as a user tries it: `kubectl create quota` then more ConfigMaps
 * than it allows (kube's 403 on the surplus, status.used filled), kcp's cluster-scoped quota across
 * two namespaces, a custom resource's `count/<plural>.<group>`, and 20 parallel `kubectl create`
 * against hard=5.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, useTestServer, type Kubectl } from '../helpers.js';

let kc: Kubectl;
useTestServer((_s, _r, k) => { kc = k; });

/** status.used of a quota, read with kubectl. */
async function used(ns: string, name: string): Promise<Record<string, string> | undefined> {
  const q = JSON.parse((await kc(['-n', ns, 'get', 'quota', name, '-o', 'json'])).stdout);
  return q.status?.used;
}

describe('kubectl and ResourceQuota', () => {
  test('kubectl create quota q --hard=count/configmaps=4, then five ConfigMaps: 3 created beside kube-root-ca.crt, 2 refused with kube\'s message', async () => {
    await kc(['create', 'namespace', 'quota-e2e']);
    // The namespace's kube-root-ca.crt (root CA publisher) counts, as in kube.
    await eventually('kube-root-ca.crt', async () => (await kc(['-n', 'quota-e2e', 'get', 'configmap', 'kube-root-ca.crt'], { allowFail: true })).code === 0);
    await kc(['-n', 'quota-e2e', 'create', 'quota', 'q', '--hard=count/configmaps=4']);
    await eventually('status.used', async () => (await used('quota-e2e', 'q'))?.['count/configmaps'] === '1');
    const results = [];
    for (let i = 1; i <= 5; i++) results.push(await kc(['-n', 'quota-e2e', 'create', 'configmap', `cm${i}`, '--from-literal=a=1'], { allowFail: true }));
    assert.deepEqual(results.map((r) => r.code), [0, 0, 0, 1, 1]);
    assert.equal(results[3]!.stderr.trim(), 'error: failed to create configmap: configmaps "cm4" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=4, limited: count/configmaps=4');
    assert.match(results[4]!.stderr, /configmaps "cm5" is forbidden: exceeded quota: q, requested: count\/configmaps=1, used: count\/configmaps=4, limited: count\/configmaps=4/);
    assert.equal((await used('quota-e2e', 'q'))?.['count/configmaps'], '4');
    const describe = (await kc(['-n', 'quota-e2e', 'describe', 'quota', 'q'])).stdout;
    assert.match(describe, /count\/configmaps\s+4\s+4/);
    // Deleting one frees a slot.
    await kc(['-n', 'quota-e2e', 'delete', 'configmap', 'cm1']);
    await eventually('used back to 3', async () => (await used('quota-e2e', 'q'))?.['count/configmaps'] === '3');
    await kc(['-n', 'quota-e2e', 'create', 'configmap', 'cm6']);
  });

  test('cluster-scoped quota (namespace admin, annotated) counts Secrets of two namespaces', async () => {
    for (const ns of ['admin', 'team-a', 'team-b']) await kc(['create', 'namespace', ns], { allowFail: true });
    await kc(['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: ResourceQuota
metadata:
  name: cluster-wide
  namespace: admin
  annotations:
    experimental.quota.kcp.io/cluster-scoped: "true"
spec:
  hard:
    count/secrets: "2"
`,
    });
    await eventually('cluster-wide used', async () => (await used('admin', 'cluster-wide'))?.['count/secrets'] === '0');
    await kc(['-n', 'team-a', 'create', 'secret', 'generic', 's1', '--from-literal=a=1']);
    await kc(['-n', 'team-b', 'create', 'secret', 'generic', 's2', '--from-literal=a=1']);
    const refused = await kc(['-n', 'team-a', 'create', 'secret', 'generic', 's3', '--from-literal=a=1'], { allowFail: true });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /secrets "s3" is forbidden: exceeded quota: cluster-wide, requested: count\/secrets=1, used: count\/secrets=2, limited: count\/secrets=2/);
    assert.equal((await used('admin', 'cluster-wide'))?.['count/secrets'], '2');
  });

  test('a custom resource counted as count/<plural>.<group>', async () => {
    await kc(['apply', '-f', '-'], {
      input: `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.quota.example.com
spec:
  group: quota.example.com
  scope: Namespaced
  names: { plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList }
  versions:
  - name: v1
    served: true
    storage: true
    schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`,
    });
    await kc(['wait', '--for=condition=Established', 'crd/gadgets.quota.example.com', '--timeout=30s']);
    await kc(['create', 'namespace', 'gadgets']);
    await kc(['-n', 'gadgets', 'create', 'quota', 'g', '--hard=count/gadgets.quota.example.com=1']);
    await eventually('gadget quota used', async () => (await used('gadgets', 'g'))?.['count/gadgets.quota.example.com'] === '0');
    const gadget = (name: string) => `apiVersion: quota.example.com/v1\nkind: Gadget\nmetadata:\n  name: ${name}\n  namespace: gadgets\n`;
    await eventually('first gadget', async () => (await kc(['create', '-f', '-'], { input: gadget('g1'), allowFail: true })).code === 0);
    const r = await kc(['create', '-f', '-'], { input: gadget('g2'), allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /gadgets\.quota\.example\.com "g2" is forbidden: exceeded quota: g, requested: count\/gadgets\.quota\.example\.com=1, used: count\/gadgets\.quota\.example\.com=1, limited: count\/gadgets\.quota\.example\.com=1/);
  });

  test('20 parallel kubectl create against hard=6 (kube-root-ca.crt counts): exactly 5 created', async () => {
    await kc(['create', 'namespace', 'quota-race']);
    await eventually('kube-root-ca.crt', async () => (await kc(['-n', 'quota-race', 'get', 'configmap', 'kube-root-ca.crt'], { allowFail: true })).code === 0);
    await kc(['-n', 'quota-race', 'create', 'quota', 'q', '--hard=count/configmaps=6']);
    await eventually('race quota used', async () => (await used('quota-race', 'q'))?.['count/configmaps'] === '1');
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => kc(['-n', 'quota-race', 'create', 'configmap', `p${i}`], { allowFail: true })));
    assert.equal(runs.filter((r) => r.code === 0).length, 5);
    for (const r of runs.filter((x) => x.code !== 0)) assert.match(r.stderr, /is forbidden: exceeded quota: q, requested: count\/configmaps=1, used: count\/configmaps=6, limited: count\/configmaps=6/);
    const names = (await kc(['-n', 'quota-race', 'get', 'configmaps', '-o', 'name'])).stdout.trim().split('\n');
    assert.equal(names.length, 6, 'five and kube-root-ca.crt');
    assert.equal((await used('quota-race', 'q'))?.['count/configmaps'], '6');
  });
});
