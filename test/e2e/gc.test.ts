/**
 * Real kubectl (1.32 on PATH): `kubectl delete --cascade=background|foreground|orphan` against
 * owners with dependents, as against kube-apiserver with kube-controller-manager's garbage
 * collector.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep, useTestServer, type Kubectl } from '../helpers.js';

let kc: Kubectl;

useTestServer((_s, _r, k) => { kc = k; });

/** Creates an owner ConfigMap and two dependents (one blocking its owner's deletion). */
async function family(ns: string, owner: string): Promise<void> {
  await kc(['-n', ns, 'create', 'configmap', owner, '--from-literal=a=1']);
  const uid = (await kc(['-n', ns, 'get', 'configmap', owner, '-o', 'jsonpath={.metadata.uid}'])).stdout;
  const dep = (name: string, block: boolean) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: ${owner}
    uid: ${uid}
    blockOwnerDeletion: ${block}
data:
  k: v
`;
  await kc(['-n', ns, 'apply', '-f', '-'], { input: `${dep(`${owner}-a`, true)}---\n${dep(`${owner}-b`, false)}` });
}

async function names(ns: string): Promise<string[]> {
  const out = (await kc(['-n', ns, 'get', 'configmaps', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout.trim();
  // Without the root CA publisher's kube-root-ca.crt, which every namespace has.
  return out ? out.split(/\s+/).filter((n) => n !== 'kube-root-ca.crt').sort() : [];
}

async function eventuallyNames(ns: string, want: string[], ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await names(ns);
    if (JSON.stringify(got) === JSON.stringify(want)) return;
    if (Date.now() > deadline) assert.deepEqual(got, want);
    await sleep(100);
  }
}

describe('kubectl delete --cascade', () => {
  test('background, foreground and orphan', async () => {
    await kc(['create', 'namespace', 'gc']);

    await family('gc', 'bg');
    const bg = await kc(['-n', 'gc', 'delete', 'configmap', 'bg', '--cascade=background']);
    assert.match(bg.stdout, /configmap "bg" deleted/);
    await eventuallyNames('gc', []);

    // Foreground: kubectl waits until the owner is gone, which is after its dependents.
    await family('gc', 'fg');
    const fg = await kc(['-n', 'gc', 'delete', 'configmap', 'fg', '--cascade=foreground']);
    assert.match(fg.stdout, /configmap "fg" deleted/);
    assert.ok(!(await names('gc')).includes('fg-a'), 'foreground: the blocking dependent went before the owner');
    await eventuallyNames('gc', []);

    await family('gc', 'or');
    const or = await kc(['-n', 'gc', 'delete', 'configmap', 'or', '--cascade=orphan']);
    assert.match(or.stdout, /configmap "or" deleted/);
    await eventuallyNames('gc', ['or-a', 'or-b']);
    const refs = (await kc(['-n', 'gc', 'get', 'configmaps', '-o', 'jsonpath={.items[*].metadata.ownerReferences}'])).stdout.trim();
    assert.equal(refs, '', 'orphans have no ownerReferences left');
  });
});
