/**
 * @kubernetes/client-node ~1.4 as a second client: an informer sees every add/update/delete in
 * order and carries on across a server restart (resume, or relist on 410) without missing the
 * final state.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { sleep, startRedis, startTestServer, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let srv: TestServer;

before(async () => { redis = await startRedis(); srv = await startTestServer(redis); });
after(async () => {
  await srv?.stop();
  await redis?.stop();
});

function client(kubeconfigPath: string): { kc: k8s.KubeConfig; core: k8s.CoreV1Api } {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

test('informer sees add/update/delete in order and survives a server restart', async () => {
  let { kc, core } = client(srv.kubeconfigPath);
  await core.createNamespace({ body: { metadata: { name: 'inf' } } });
  const seen: string[] = [];
  const state = new Map<string, string>();
  const informer = k8s.makeInformer(kc, '/api/v1/namespaces/inf/configmaps', () => core.listNamespacedConfigMap({ namespace: 'inf' }));
  // The namespace's kube-root-ca.crt (root CA publisher) is not what this test writes.
  const mine = (o: { metadata?: { name?: string } }) => o.metadata?.name !== 'kube-root-ca.crt';
  informer.on('add', (o) => { if (!mine(o)) return; seen.push(`add ${o.metadata!.name}`); state.set(o.metadata!.name!, o.data?.v ?? ''); });
  informer.on('update', (o) => { if (!mine(o)) return; seen.push(`update ${o.metadata!.name} ${o.data?.v}`); state.set(o.metadata!.name!, o.data?.v ?? ''); });
  informer.on('delete', (o) => { if (!mine(o)) return; seen.push(`delete ${o.metadata!.name}`); state.delete(o.metadata!.name!); });
  let stopped = false;
  // client-node's documented pattern: on error, start again (it relists when the watch cannot resume).
  informer.on('error', () => { if (!stopped) setTimeout(() => { if (!stopped) informer.start().catch(() => undefined); }, 200); });
  await informer.start();
  // Stopped whatever happens: a running informer reconnects forever and keeps the test process alive.
  try {
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'a' }, data: { v: '1' } } });
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'inf', body: { metadata: { name: 'a' }, data: { v: '2' } } });
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'b' }, data: { v: '1' } } });
    await core.deleteNamespacedConfigMap({ name: 'b', namespace: 'inf' });
    const t0 = Date.now();
    while (seen.length < 4 && Date.now() - t0 < 5000) await sleep(20);
    assert.deepEqual(seen, ['add a', 'update a 2', 'add b', 'delete b']);

    // Restart the server on the same port and Redis; changes made meanwhile must arrive.
    const port = srv.port;
    await srv.stop();
    srv = await startTestServer(redis, { securePort: port }, srv.root);
    ({ core } = client(srv.kubeconfigPath));
    await core.replaceNamespacedConfigMap({ name: 'a', namespace: 'inf', body: { metadata: { name: 'a' }, data: { v: '3' } } });
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'c' }, data: { v: 'x' } } });
    const t1 = Date.now();
    while (!(state.get('a') === '3' && state.has('c')) && Date.now() - t1 < 20_000) await sleep(50);
    assert.equal(state.get('a'), '3');
    assert.equal(state.get('c'), 'x');
    assert.ok(!state.has('b'));
  } finally {
    stopped = true;
    await informer.stop();
  }
});
