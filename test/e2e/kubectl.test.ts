/**
 * Real kubectl (1.32 on PATH, and 1.27 / 1.33) against a real server with the generated
 * admin.kubeconfig.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, versionedKubectl, type TestServer, useTestServer, type Kubectl } from '../helpers.js';

let srv: TestServer;
let kc: Kubectl;

useTestServer((s, _r, k) => { srv = s; kc = k; });

const CM_YAML = (name: string, value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}
  labels:
    app: web
data:
  key: ${value}
`;

describe('kubectl 1.32', () => {
  test('api-resources lists built-in and kcp resources', async () => {
    const { stdout } = await kc(['api-resources']);
    for (const r of ['configmaps', 'namespaces', 'secrets', 'clusterroles', 'logicalclusters', 'customresourcedefinitions', 'leases']) {
      assert.match(stdout, new RegExp(`^${r}\\s`, 'm'), r);
    }
  });

  test('explain shows kcp\'s descriptions; a field and its type are described once each', async () => {
    const ws = (await kc(['explain', 'workspaces'])).stdout;
    assert.match(ws, /DESCRIPTION:\n\s+Workspace defines a generic Kubernetes-cluster-like endpoint/);
    assert.match((await kc(['explain', 'workspaces.spec.type'])).stdout, /type defines properties of the workspace/);
    assert.match((await kc(['explain', 'logicalclusters.status.phase'])).stdout, /Phase of the logical cluster/);
    const spec = (await kc(['explain', 'namespaces.spec'])).stdout;
    const description = /DESCRIPTION:\n([\s\S]*?)\n\s*FIELDS:/.exec(spec)?.[1] ?? '';
    const text = description.split('\n').map((l) => l.trim()).filter(Boolean).join(' ');
    assert.match(text, /^Spec defines the behavior of the Namespace\. More info: \S+ NamespaceSpec describes the attributes of a Namespace\.$/, spec);
  });

  test('delete of the default namespace is refused as in kube', async () => {
    const r = await kc(['delete', 'namespace', 'default'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Error from server \(Forbidden\): namespaces "default" is forbidden: this namespace may not be deleted/);
  });

  test('create (typed, protobuf bodies), get -o yaml|json|wide', async () => {
    await kc(['create', 'namespace', 'e2e']);
    await kc(['-n', 'e2e', 'create', 'configmap', 'typed', '--from-literal=a=1', '--from-literal=b=2']);
    await kc(['-n', 'e2e', 'create', 'secret', 'generic', 'sec', '--from-literal=p=s3cret']);
    const json = JSON.parse((await kc(['-n', 'e2e', 'get', 'configmap', 'typed', '-o', 'json'])).stdout);
    assert.deepEqual(json.data, { a: '1', b: '2' });
    const secret = JSON.parse((await kc(['-n', 'e2e', 'get', 'secret', 'sec', '-o', 'json'])).stdout);
    assert.equal(Buffer.from(secret.data.p, 'base64').toString(), 's3cret');
    assert.equal(secret.type, 'Opaque');
    const yaml = (await kc(['-n', 'e2e', 'get', 'configmap', 'typed', '-o', 'yaml'])).stdout;
    assert.match(yaml, /^apiVersion: v1$/m);
    assert.match(yaml, /^ {2}name: typed$/m);
    const wide = (await kc(['-n', 'e2e', 'get', 'configmaps', '-o', 'wide'])).stdout;
    assert.match(wide, /^NAME\s+DATA\s+AGE/);
    assert.match(wide, /^typed\s+2\s+/m);
  });

  test('client-side apply creates, then patches with last-applied-configuration', async () => {
    await kc(['-n', 'e2e', 'apply', '-f', '-'], { input: CM_YAML('applied', 'one') });
    const r = await kc(['-n', 'e2e', 'apply', '-f', '-'], { input: CM_YAML('applied', 'two') });
    assert.match(r.stdout, /configmap\/applied configured/);
    const obj = JSON.parse((await kc(['-n', 'e2e', 'get', 'cm', 'applied', '-o', 'json'])).stdout);
    assert.equal(obj.data.key, 'two');
    assert.ok(obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
    const same = await kc(['-n', 'e2e', 'apply', '-f', '-'], { input: CM_YAML('applied', 'two') });
    assert.match(same.stdout, /unchanged/);
  });

  test('create -f rejects an invalid object with the server message', async () => {
    const r = await kc(['-n', 'e2e', 'create', '-f', '-'], { input: CM_YAML('Bad_Name', 'x'), allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /is invalid: metadata.name/);
    // kubectl asks for fieldValidation=Strict: an unknown field is an error, nothing is created.
    const typo = await kc(['-n', 'e2e', 'create', '-f', '-'], { input: `${CM_YAML('typo', 'x')}dataa:\n  k: v\n`, allowFail: true });
    assert.notEqual(typo.code, 0);
    assert.match(typo.stderr, /strict decoding error: unknown field "dataa"/);
    assert.match((await kc(['-n', 'e2e', 'get', 'cm', 'typo'], { allowFail: true })).stderr, /NotFound/);
  });

  test('patch: strategic, merge, json; label; annotate', async () => {
    await kc(['-n', 'e2e', 'patch', 'cm', 'applied', '-p', '{"data":{"s":"1"}}']);
    await kc(['-n', 'e2e', 'patch', 'cm', 'applied', '--type', 'merge', '-p', '{"data":{"m":"2"}}']);
    await kc(['-n', 'e2e', 'patch', 'cm', 'applied', '--type', 'json', '-p', '[{"op":"remove","path":"/data/key"}]']);
    await kc(['-n', 'e2e', 'label', 'cm', 'applied', 'tier=front']);
    await kc(['-n', 'e2e', 'annotate', 'cm', 'applied', 'note=hello']);
    const obj = JSON.parse((await kc(['-n', 'e2e', 'get', 'cm', 'applied', '-o', 'json'])).stdout);
    assert.deepEqual(obj.data, { s: '1', m: '2' });
    assert.equal(obj.metadata.labels.tier, 'front');
    assert.equal(obj.metadata.annotations.note, 'hello');
    const sel = (await kc(['-n', 'e2e', 'get', 'cm', '-l', 'tier in (front),app=web', '-o', 'name'])).stdout.trim();
    assert.equal(sel, 'configmap/applied');
  });

  test('get -w streams changes', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'kubectl-w-'));
    const child = spawn('kubectl', ['--kubeconfig', srv.kubeconfigPath, '--cache-dir', cache, '-n', 'e2e', 'get', 'cm', '-w', '--output-watch-events', '-o', 'name'], { env: { ...process.env, HOME: cache } });
    let out = '';
    child.stdout.on('data', (d) => { out += String(d); });
    try {
      const t0 = Date.now();
      while (!out.includes('configmap/typed') && Date.now() - t0 < 10_000) await sleep(50);
      await kc(['-n', 'e2e', 'create', 'configmap', 'watched']);
      await kc(['-n', 'e2e', 'delete', 'configmap', 'watched']);
      while (out.split('configmap/watched').length < 3 && Date.now() - t0 < 15_000) await sleep(50);
    } finally {
      child.kill();
    }
    // The initial list, then the ADDED and DELETED events of the new object.
    assert.equal(out.split('\n').filter((l) => l.trim() === 'configmap/watched').length, 2, out);
  });

  test('delete waits for finalizers; delete ns cascades', async () => {
    await kc(['-n', 'e2e', 'apply', '-f', '-'], { input: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n` });
    await kc(['-n', 'e2e', 'delete', 'cm', 'held', '--wait=false']);
    const held = JSON.parse((await kc(['-n', 'e2e', 'get', 'cm', 'held', '-o', 'json'])).stdout);
    assert.ok(held.metadata.deletionTimestamp);
    await kc(['-n', 'e2e', 'patch', 'cm', 'held', '--type', 'json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
    const gone = await kc(['-n', 'e2e', 'get', 'cm', 'held'], { allowFail: true });
    assert.match(gone.stderr, /NotFound/);
    // Namespace deletion empties the namespace (namespace controller on BullMQ), then removes it.
    const del = await kc(['delete', 'namespace', 'e2e', '--timeout=30s']);
    assert.match(del.stdout, /namespace "e2e" deleted/);
    const ns = await kc(['get', 'namespace', 'e2e'], { allowFail: true });
    assert.match(ns.stderr, /NotFound/);
    const leftovers = await kc(['get', 'cm', '-n', 'e2e', '-o', 'name']);
    assert.equal(leftovers.stdout.trim(), '');
  });

  test('auth can-i', async () => {
    assert.equal((await kc(['auth', 'can-i', 'create', 'configmaps'])).stdout.trim(), 'yes');
    assert.equal((await kc(['auth', 'can-i', 'delete', 'clusterroles'])).stdout.trim(), 'yes');
  });

  test('contexts of admin.kubeconfig: root, base, system:admin', async () => {
    const ctx = (await kc(['config', 'get-contexts', '-o', 'name'])).stdout.split('\n').filter(Boolean).sort();
    assert.deepEqual(ctx, ['base', 'root', 'system:admin']);
    assert.equal((await kc(['config', 'current-context'])).stdout.trim(), 'root');
    const lc = await kc(['--context', 'system:admin', 'get', 'logicalclusters', '-o', 'name']);
    assert.equal(lc.stdout.trim(), 'logicalcluster.core.kcp.io/cluster');
  });
});

describe('other kubectl versions', () => {
  for (const v of ['1.27', '1.33']) {
    test(`kubectl ${v}: create, apply, get, delete`, async () => {
      const bin = versionedKubectl(v);
      const ns = `v${v.replace('.', '-')}`;
      await kc(['create', 'namespace', ns], { bin });
      await kc(['-n', ns, 'create', 'configmap', 'c', '--from-literal=a=1'], { bin });
      await kc(['-n', ns, 'apply', '-f', '-'], { bin, input: CM_YAML('ap', 'v') });
      const names = (await kc(['-n', ns, 'get', 'cm', '-o', 'name'], { bin })).stdout.trim().split('\n').sort();
      // Beside the namespace's kube-root-ca.crt (root CA publisher), which may not be there yet.
      assert.deepEqual(names.filter((n) => n !== 'configmap/kube-root-ca.crt'), ['configmap/ap', 'configmap/c']);
      await kc(['-n', ns, 'delete', 'cm', 'c'], { bin });
      const table = (await kc(['-n', ns, 'get', 'cm'], { bin })).stdout;
      assert.match(table, /^ap\s+1\s+/m);
    });
  }
});
