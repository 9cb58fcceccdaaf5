/**
 * What the operator renders, run: a KcpInstance with two Shards on a real kube-apiserver whose
 * pods a stand-in kubelet runs as local processes (test/podrunner.ts: own network namespace per
 * pod, Services resolved to pod IPs, volumes mounted, readiness probed into pod status). The
 * instance comes up Ready (kstatus Current); kubectl with the generated admin kubeconfig, through
 * the front-proxy, creates workspaces on both shards; a certificate renewal rolls the pods; a
 * version change rolls the components in the documented order, each gated on readiness; a
 * version that never becomes ready is rolled back on the canary and the instance reports Degraded
 * (kstatus Failed).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { readKubeconfig, resolveKubeconfigContext, buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { inspectCertificate } from '../../src/pki/certs.js';
import { startOperator, type RunningOperator } from '../../operator/manager.js';
import { versionOfImage } from '../../operator/resources.js';
import { startHostCluster, kstatus, type HostCluster } from '../hostcluster.js';
import { PodRunner } from '../podrunner.js';
import { eventually, settleAll, sleep, startRedis, KCP_TS_BIN, type TestRedis } from '../helpers.js';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'kcp-operator');
const NS = 'kcp-system';

describe('a KcpInstance with two Shards, run as processes', { timeout: 900_000 }, () => {
  let host: HostCluster;
  let redis: TestRedis;
  let operator: RunningOperator | undefined;
  let runner: PodRunner | undefined;
  const logs: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pods-'));

  before(async () => {
    // Both settle before a failure is thrown, so that `after` stops whichever did start (a Redis
    // left running keeps the test process alive forever).
    await settleAll([startHostCluster().then((h) => { host = h; }), startRedis().then((r) => { redis = r; })]);
    await host.helm(['install', 'kcp-operator', CHART, '-n', NS, '--create-namespace', '--set', 'replicaCount=0']);
    const kc = new KubeConfig();
    kc.loadFromFile(host.kubeconfig);
    operator = await startOperator({ kubeConfig: kc, queueRedisUrl: redis.url, log: (m) => logs.push(m) });
    runner = new PodRunner({
      kubeconfig: host.kubeconfig, namespace: NS, selector: 'app.kubernetes.io/managed-by=kcp-ts-operator', dir,
      // The image's `kcp-ts` is this checkout's; a version named "broken" is a release that cannot start.
      commands: (argv, image) => argv[0] === 'kcp-ts'
        ? [process.execPath, KCP_TS_BIN, ...(versionOfImage(image).includes('broken') ? ['start', '--flag-this-release-does-not-know'] : argv.slice(1))]
        : undefined,
    });
    runner.start();
  });
  after(async () => {
    await runner?.stop();
    await operator?.stop();
    await redis?.stop();
    await host?.stop();
  });

  const getJson = async (args: string[]) => JSON.parse((await host.kubectl([...args, '-o', 'json'])).stdout);
  const instance = () => getJson(['get', 'kcpinstance', 'kcp', '-n', NS]);
  const condition = (o: { status?: { conditions?: { type: string; status: string; reason?: string }[] } }, type: string) => o.status?.conditions?.find((c) => c.type === type);
  const deploymentVersions = async () => Object.fromEntries(((await getJson(['get', 'deployments', '-n', NS, '-l', 'app.kubernetes.io/instance=kcp'])).items as { metadata: { name: string }; spec: { template: { spec: { containers: { image: string }[] } } } }[])
    .map((d) => [d.metadata.name.replace(/^kcp-/, ''), versionOfImage(d.spec.template.spec.containers[0]!.image)]));
  const diagnostics = () => `runner: ${runner!.events.slice(-15).join('\n')}\noperator: ${logs.slice(-10).join('\n')}`;
  let kubeconfig = '';
  const kcp = (args: string[], o: { allowFail?: boolean; input?: string } = {}) => host.kubectl(args, { ...o, kubeconfig });

  it('comes up Ready: every pod runs, kstatus Current', async () => {
    await host.kubectl(['apply', '-f', '-'], {
      input: [
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp, namespace: kcp-system}\nspec:\n  version: "0.1.0"\n  external: {hostname: kcp.example.com}\n  upgrade: {progressDeadlineSeconds: 20}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: alpha, namespace: kcp-system}\nspec: {instanceRef: {name: kcp}, labels: {region: eu}}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: beta, namespace: kcp-system}\nspec: {instanceRef: {name: kcp}, labels: {region: us}}\n',
      ].join('---\n'),
    });
    const inst = await eventually('instance Ready', async () => { const o = await instance(); return condition(o, 'Ready')?.status === 'True' ? o : undefined; }, 180_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${diagnostics()}`); });
    assert.equal(inst.status.currentVersion, '0.1.0');
    assert.deepEqual(inst.status.shards.map((s: { name: string; ready: boolean }) => [s.name, s.ready]), [['root', true], ['alpha', true], ['beta', true]]);
    assert.match(kstatus(JSON.stringify(inst)), /^KcpInstance\/kcp Current/);
    const shard = await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS]);
    assert.equal(condition(shard, 'Ready')?.status, 'True');
    assert.match(kstatus(JSON.stringify(shard)), /^Shard\/alpha Current/);
  });

  it('kubectl with the generated admin kubeconfig, through the front-proxy, creates workspaces on both shards', async () => {
    const secret = await getJson(['get', 'secret', 'kcp-admin-kubeconfig', '-n', NS]);
    const admin = resolveKubeconfigContext(readKubeconfig(Buffer.from(secret.data.kubeconfig, 'base64').toString()));
    assert.equal(admin.server, 'https://kcp.example.com:6443/clusters/root');
    // kcp.example.com is not in this machine's DNS: the same kubeconfig, aimed at the front-proxy pod's IP.
    const proxyIP = runner!.podIP('kcp-front-proxy');
    assert.ok(proxyIP, 'the front-proxy pod runs');
    kubeconfig = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfig, buildKubeconfig({
      clusters: [{ name: 'root', server: `https://${proxyIP}:6443/clusters/root`, caPem: admin.caPem, tlsServerName: 'kcp.example.com' }],
      users: [{ name: 'kcp-admin', certPem: admin.certPem, keyPem: admin.keyPem }],
      contexts: [{ name: 'root', cluster: 'root', user: 'kcp-admin' }], currentContext: 'root',
    }));
    const shards = await eventually('shards registered', async () => {
      const r = await kcp(['get', 'shards.core.kcp.io', '-o', 'jsonpath={.items[*].metadata.name}'], { allowFail: true });
      return r.stdout.split(' ').sort().join(',') === 'alpha,beta,root' ? r.stdout : undefined;
    }, 60_000);
    assert.ok(shards);
    for (const [ws, region, shard] of [['eu-org', 'eu', 'alpha'], ['us-org', 'us', 'beta']] as const) {
      await kcp(['create', '-f', '-'], { input: `apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: ${ws}}\nspec: {location: {selector: {matchLabels: {region: ${region}}}}}\n` });
      await eventually(`${ws} Ready`, async () => (await kcp(['get', 'workspace', ws, '-o', 'jsonpath={.status.phase}'])).stdout === 'Ready', 60_000);
      assert.equal((await kcp(['get', 'workspace', ws, '-o', 'jsonpath={.metadata.annotations.core\\.kcp\\.io/shard}'])).stdout, shard);
      const server = `https://${runner!.podIP('kcp-front-proxy')}:6443/clusters/root:${ws}`;
      // kubectl drops the kubeconfig's tls-server-name when --server is given.
      // The front-proxy learns of the new logical cluster from the shard's watch, a moment after Ready.
      await eventually(`${ws} reachable through the front-proxy`, async () => (await kcp(['--server', server, '--tls-server-name', 'kcp.example.com', 'create', 'configmap', 'hello', `--from-literal=shard=${shard}`], { allowFail: true })).code === 0, 15_000);
      assert.equal((await kcp(['--server', server, '--tls-server-name', 'kcp.example.com', 'get', 'configmap', 'hello', '-o', 'jsonpath={.data.shard}'])).stdout, shard);
    }
  });

  it('RootWorkspace: the tree, bindings and a kubeconfig appear; what leaves the spec is deleted or revoked; what it did not create is left alone', async () => {
    const proxy = () => `https://${runner!.podIP('kcp-front-proxy')}:6443`;
    const rw = (extra: string) => `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: RootWorkspace\nmetadata: {name: content, namespace: kcp-system}\nspec:\n  instanceRef: {name: kcp}\n  endpoint: ${proxy()}\n  workspaceTypes: [{name: tenant, spec: {}}]\n${extra}`;
    const full = '  workspaces: [{path: platform}, {path: "platform:team-a"}, {path: eu-org}]\n  clusterRoleBindings: [{workspace: "root:platform", name: alice-admin, clusterRole: cluster-admin, subjects: [{kind: User, name: alice}]}]\n  kubeconfigs: [{name: alice, user: alice, workspace: "root:platform", secretName: alice-kubeconfig}]\n';
    await host.kubectl(['apply', '-f', '-'], { input: rw(full) });
    const status = await eventually('RootWorkspace applied', async () => {
      const o = await getJson(['get', 'rootworkspace', 'content', '-n', NS]);
      const inv = (o.status?.inventory ?? []) as { kind: string; name: string; state: string; error?: string }[];
      return inv.filter((i) => i.state === 'Applied').length === 5 ? o : undefined;
    }, 120_000).catch(async (err: Error) => { throw new Error(`${err.message}\n${JSON.stringify((await getJson(['get', 'rootworkspace', 'content', '-n', NS])).status)}\n${diagnostics()}`); });
    const inv = status.status.inventory as { kind: string; workspace: string; name: string; state: string; error?: string }[];
    const euOrg = inv.find((i) => i.name === 'eu-org')!;
    assert.equal(euOrg.state, 'Failed');
    assert.match(euOrg.error!, /not created by this RootWorkspace: left alone/);
    assert.equal(condition(status, 'Ready')?.status, 'False', 'an item it may not manage keeps it from Ready');
    assert.ok(status.metadata.finalizers.includes('operator.kcp-ts.io/root-workspace-content'));
    assert.equal((await kcp(['--server', `${proxy()}/clusters/root:platform`, '--tls-server-name', 'kcp.example.com', 'get', 'workspace', 'team-a', '-o', 'jsonpath={.status.phase}'])).stdout, 'Ready');
    assert.equal((await kcp(['get', 'workspacetype', 'tenant', '-o', 'jsonpath={.metadata.labels.operator\\.kcp-ts\\.io/root-workspace}'])).stdout, status.metadata.uid);

    // The kubeconfig it issued works with kubectl, as alice, where the binding lets her.
    const secret = await getJson(['get', 'secret', 'alice-kubeconfig', '-n', NS]);
    const alice = resolveKubeconfigContext(readKubeconfig(Buffer.from(secret.data.kubeconfig, 'base64').toString()));
    assert.equal(alice.server, 'https://kcp.example.com:6443/clusters/root:platform');
    const aliceKubeconfig = join(dir, 'alice.kubeconfig');
    writeFileSync(aliceKubeconfig, buildKubeconfig({
      clusters: [{ name: 'c', server: `${proxy()}/clusters/root:platform`, caPem: alice.caPem, tlsServerName: 'kcp.example.com' }],
      users: [{ name: 'alice', certPem: alice.certPem, keyPem: alice.keyPem }], contexts: [{ name: 'c', cluster: 'c', user: 'alice' }], currentContext: 'c',
    }));
    const asAlice = (args: string[]) => host.kubectl(args, { kubeconfig: aliceKubeconfig, allowFail: true });
    const ok = await asAlice(['create', 'configmap', 'from-alice']);
    assert.equal(ok.code, 0, ok.stderr);
    const denied = await asAlice(['--server', `${proxy()}/clusters/root:us-org`, '--tls-server-name', 'kcp.example.com', 'get', 'configmaps']);
    assert.match(denied.stderr, /Forbidden|not permitted/);

    // Out of the spec: team-a is deleted, the kubeconfig's Secret is deleted and its certificate revoked.
    await host.kubectl(['apply', '-f', '-'], { input: rw('  workspaces: [{path: platform}, {path: eu-org}]\n  clusterRoleBindings: [{workspace: "root:platform", name: alice-admin, clusterRole: cluster-admin, subjects: [{kind: User, name: alice}]}]\n') });
    await eventually('kubeconfig Secret deleted', async () => (await host.kubectl(['get', 'secret', 'alice-kubeconfig', '-n', NS], { allowFail: true })).code !== 0, 60_000);
    await eventually('team-a deleted', async () => (await kcp(['--server', `${proxy()}/clusters/root:platform`, '--tls-server-name', 'kcp.example.com', 'get', 'workspace', 'team-a'], { allowFail: true })).code !== 0, 60_000);
    const revokedList = await eventually('revocation recorded', async () => (await getJson(['get', 'configmap', 'kcp-revoked-certificates', '-n', NS])).data?.serials as string | undefined, 30_000);
    assert.ok(revokedList.startsWith(inspectCertificate(alice.certPem!).serialNumber), revokedList);
    const refused = await eventually('alice refused', async () => { const r = await asAlice(['get', 'configmaps']); return r.code !== 0 && /Unauthorized|must be logged in/.test(r.stderr) ? r : undefined; }, 30_000);
    assert.ok(refused);
    // Directly at a shard too, not only through the front-proxy.
    const shardIP = runner!.podIP('kcp-shard-root', { 'app.kubernetes.io/component': 'shard' });
    const direct = await eventually('alice refused by the shard', async () => {
      const r = await asAlice(['--server', `https://${shardIP}:6443/clusters/root`, '--tls-server-name', 'kcp-shard-root.kcp-system.svc', 'get', 'configmaps']);
      return /Unauthorized|must be logged in/.test(r.stderr) ? r : undefined;
    }, 30_000);
    assert.notEqual(direct.code, 0);

    // Deleting the RootWorkspace removes what it created and nothing else.
    await host.kubectl(['delete', 'rootworkspace', 'content', '-n', NS, '--timeout=60s']);
    assert.notEqual((await kcp(['get', 'workspace', 'platform'], { allowFail: true })).code, 0, 'platform deleted');
    assert.notEqual((await kcp(['get', 'workspacetype', 'tenant'], { allowFail: true })).code, 0, 'tenant deleted');
    assert.equal((await kcp(['get', 'workspace', 'eu-org', '-o', 'jsonpath={.status.phase}'])).stdout, 'Ready', 'eu-org, not created by it, is untouched');
  });

  it('a certificate renewal rolls the pods that mount it, and everything is Ready again', async () => {
    const serialBefore = async () => inspectCertificate(Buffer.from((await getJson(['get', 'secret', 'kcp-shard-alpha-serving', '-n', NS])).data['tls.crt'], 'base64').toString()).serialNumber;
    const before = await serialBefore();
    const podsBefore = (await getJson(['get', 'pods', '-n', NS, '-l', 'operator.kcp-ts.io/shard=alpha,app.kubernetes.io/component=shard'])).items.map((p: { metadata: { name: string } }) => p.metadata.name);
    assert.equal(podsBefore.length, 1);
    // Renew when less than a year is left (every leaf certificate, issued for a year), issue for two.
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', '{"spec":{"pki":{"certificateDuration":"17520h","renewBefore":"8760h"}}}']);
    await eventually('certificate renewed', async () => (await serialBefore()) !== before, 60_000);
    await eventually('alpha pods replaced', async () => {
      const now = (await getJson(['get', 'pods', '-n', NS, '-l', 'operator.kcp-ts.io/shard=alpha,app.kubernetes.io/component=shard'])).items.map((p: { metadata: { name: string } }) => p.metadata.name);
      return now.length === 1 && !podsBefore.includes(now[0]);
    }, 120_000);
    await eventually('instance Ready again', async () => condition(await instance(), 'Ready')?.status === 'True', 180_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${diagnostics()}`); });
    // The front-proxy pod was replaced too: a first request may meet the old pod's address or a
    // process still starting. A client retries, as this one does.
    const shard = await eventually('served through the new front-proxy', async () => {
      const server = `https://${runner!.podIP('kcp-front-proxy')}:6443/clusters/root:eu-org`;
      return (await kcp(['--server', server, '--tls-server-name', 'kcp.example.com', '--request-timeout=5s', 'get', 'configmap', 'hello', '-o', 'jsonpath={.data.shard}']).catch(() => undefined))?.stdout;
    }, 60_000);
    assert.equal(shard, 'alpha', 'data survives the rollout (Redis kept it)');
  });

  it('a version change rolls canary, other shards, root, front-proxy in order, each after the previous is ready', async () => {
    const seen: { at: number; versions: Record<string, string> }[] = [];
    let watching = true;
    const watcher = (async () => { while (watching) { seen.push({ at: Date.now(), versions: await deploymentVersions() }); await sleep(200); } })();
    let done;
    try {
      await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', '{"spec":{"version":"0.2.0"}}']);
      await sleep(1000);
      assert.equal(kstatus(JSON.stringify(await instance())).split(' ')[1], 'InProgress');
      done = await eventually('0.2.0 everywhere and Ready', async () => { const o = await instance(); return o.status?.currentVersion === '0.2.0' && condition(o, 'Ready')?.status === 'True' ? o : undefined; }, 300_000)
        .catch((err: Error) => { throw new Error(`${err.message}\n${diagnostics()}`); });
    } finally {
      watching = false;
      await watcher.catch(() => undefined);
    }
    assert.match(kstatus(JSON.stringify(done)), /^KcpInstance\/kcp Current/);
    // When did each Deployment switch to 0.2.0?
    const switched = (name: string) => seen.find((s) => s.versions[name] === '0.2.0')!.at;
    const order = ['shard-alpha', 'shard-beta', 'shard-root', 'front-proxy'].sort((a, b) => switched(a) - switched(b));
    assert.deepEqual(order, ['shard-alpha', 'shard-beta', 'shard-root', 'front-proxy']);
    // One at a time: while one was switching, the next had not yet.
    for (const s of seen) {
      const moved = ['shard-alpha', 'shard-beta', 'shard-root', 'front-proxy'].filter((n) => s.versions[n] === '0.2.0');
      assert.deepEqual(moved, ['shard-alpha', 'shard-beta', 'shard-root', 'front-proxy'].slice(0, moved.length), `out of order at ${JSON.stringify(s.versions)}`);
    }
  });

  it('a version that never becomes ready is rolled back on the canary; the instance is Degraded (kstatus Failed)', async () => {
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', '{"spec":{"version":"0.3.0-broken"}}']);
    const failed = await eventually('rolled back', async () => { const o = await instance(); return condition(o, 'Degraded')?.status === 'True' ? o : undefined; }, 180_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${diagnostics()}`); });
    assert.equal(condition(failed, 'Degraded')!.reason, 'RolledBack');
    assert.equal(failed.status.failedVersion, '0.3.0-broken');
    assert.match(kstatus(JSON.stringify(failed)), /^KcpInstance\/kcp Failed/);
    await eventually('canary back on 0.2.0', async () => (await deploymentVersions())['shard-alpha'] === '0.2.0', 60_000);
    const v = await deploymentVersions();
    assert.deepEqual([v['shard-beta'], v['shard-root'], v['front-proxy']], ['0.2.0', '0.2.0', '0.2.0'], 'the rest never moved');
    // The canary serves again on the old version.
    await eventually('alpha Ready again', async () => condition(await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS]), 'Ready')?.status === 'True', 120_000);
  });

  it('deleting the KcpInstance stops every pod and leaves nothing behind', async () => {
    await host.kubectl(['delete', 'kcpinstance', 'kcp', '-n', NS, '--wait=false']);
    await eventually('nothing left', async () => {
      const left = (await getJson(['get', 'deployments,statefulsets,pods,secrets,services,configmaps,shards.operator.kcp-ts.io', '-n', NS, '-l', 'app.kubernetes.io/instance=kcp'])).items.length;
      const shards = (await getJson(['get', 'shards.operator.kcp-ts.io', '-n', NS])).items.length;
      return left + shards === 0;
    }, 120_000);
    assert.deepEqual(operator!.errors(), [], 'reconciles failed other than by write conflicts');
  });
});
