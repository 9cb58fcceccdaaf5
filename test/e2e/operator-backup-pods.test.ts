/**
 * Backup and restore through the operator, run: a KcpInstance with `spec.backup` on a real
 * kube-apiserver whose kube-controller-manager runs the CronJob and Job controllers, its pods run
 * by the stand-in kubelet (test/podrunner.ts). A scheduled backup runs as a Job to completion; the
 * instance is deleted; a new instance with `spec.restoreFrom` (and the same CA, `pki.caSecretRef`)
 * restores its shard's Redis in an init container before the shard starts, serves every object
 * of the backup, and accepts the old instance's admin kubeconfig.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { readKubeconfig, resolveKubeconfigContext, buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { createCA } from '../../src/pki/certs.js';
import { startOperator, type RunningOperator } from '../../operator/manager.js';
import { startHostCluster, type HostCluster } from '../hostcluster.js';
import { PodRunner } from '../podrunner.js';
import { eventually, settleAll, startRedis, KCP_TS_BIN, type TestRedis } from '../helpers.js';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'kcp-operator');
const NS = 'kcp-system';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('a scheduled backup, the instance deleted, a new one restored from it', { timeout: 900_000 }, () => {
  let host: HostCluster;
  let redis: TestRedis;
  let operator: RunningOperator | undefined;
  let runner: PodRunner | undefined;
  const logs: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bkpods-'));

  before(async () => {
    await settleAll([startHostCluster({ controllers: ['job', 'cronjob'] }).then((h) => { host = h; }), startRedis().then((r) => { redis = r; })]);
    await host.helm(['install', 'kcp-operator', CHART, '-n', NS, '--create-namespace', '--set', 'replicaCount=0']);
    const kc = new KubeConfig();
    kc.loadFromFile(host.kubeconfig);
    operator = await startOperator({ kubeConfig: kc, queueRedisUrl: redis.url, log: (m) => logs.push(m) });
    runner = new PodRunner({
      kubeconfig: host.kubeconfig, namespace: NS, selector: 'app.kubernetes.io/managed-by=kcp-ts-operator', dir, subnet: 78,
      commands: (argv) => (argv[0] === 'kcp-ts' ? [process.execPath, KCP_TS_BIN, ...argv.slice(1)] : undefined),
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
  const ready = (name: string) => eventually(`${name} Ready`, async () => {
    const o = await getJson(['get', 'kcpinstance', name, '-n', NS]);
    return o.status?.conditions?.find((c: { type: string; status: string }) => c.type === 'Ready')?.status === 'True';
  }, 240_000).catch((err: Error) => { throw new Error(`${err.message}\nrunner: ${runner!.events.slice(-15).join('\n')}\noperator: ${logs.slice(-10).join('\n')}`); });
  /** The admin kubeconfig of `instance`'s Secret, aimed at its front-proxy pod (kcp.example.com is not in DNS here). */
  const adminKubeconfig = async (instance: string, file: string, credentialsOf = instance) => {
    const secret = await getJson(['get', 'secret', `${credentialsOf}-admin-kubeconfig`, '-n', NS]);
    const admin = resolveKubeconfigContext(readKubeconfig(Buffer.from(secret.data.kubeconfig, 'base64').toString()));
    const ip = await eventually('front-proxy pod', async () => runner!.podIP(`${instance}-front-proxy`), 60_000);
    const path = join(dir, file);
    writeFileSync(path, buildKubeconfig({
      clusters: [{ name: 'root', server: `https://${ip}:6443/clusters/root`, caPem: admin.caPem, tlsServerName: 'kcp.example.com' }],
      users: [{ name: 'kcp-admin', certPem: admin.certPem, keyPem: admin.keyPem }],
      contexts: [{ name: 'root', cluster: 'root', user: 'kcp-admin' }], currentContext: 'root',
    }));
    return path;
  };
  const names = Array.from({ length: 20 }, (_, i) => `kept-${i}`);
  let oldKubeconfig = '';

  it('a scheduled backup runs as a Job to completion while the instance serves', async () => {
    const ca = await createCA('kcp-kept-ca', 3650);
    await host.kubectl(['apply', '-f', '-'], {
      input: [
        `apiVersion: v1\nkind: Secret\nmetadata: {name: kcp-kept-ca, namespace: ${NS}}\ntype: kubernetes.io/tls\ndata: {tls.crt: ${b64(ca.certPem)}, tls.key: ${b64(ca.keyPem)}}\n`,
        `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: backups, namespace: ${NS}}\nspec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}\n`,
        `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp, namespace: ${NS}}\nspec:\n  version: "0.1.0"\n  external: {hostname: kcp.example.com}\n  pki: {caSecretRef: {name: kcp-kept-ca}}\n  backup: {schedule: "* * * * *", retain: 2, claimName: backups}\n`,
      ].join('---\n'),
    });
    await ready('kcp');
    oldKubeconfig = await adminKubeconfig('kcp', 'old-admin.kubeconfig');
    const list = { apiVersion: 'v1', kind: 'List', items: names.map((n) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n, namespace: 'default' }, data: { n } })) };
    await eventually('objects created', async () => (await host.kubectl(['apply', '-f', '-'], { kubeconfig: oldKubeconfig, input: JSON.stringify(list), allowFail: true })).code === 0, 60_000);
    const createdAt = Date.now();
    // A Job the CronJob made after the objects existed, completed.
    await eventually('a scheduled backup completed', async () => {
      const jobs = (await getJson(['get', 'jobs', '-n', NS, '-l', 'app.kubernetes.io/component=backup'])).items as { metadata: { creationTimestamp: string; ownerReferences?: { kind: string }[] }; status?: { succeeded?: number } }[];
      return jobs.some((j) => j.metadata.ownerReferences?.[0]?.kind === 'CronJob' && Date.parse(j.metadata.creationTimestamp) >= createdAt - 1000 && (j.status?.succeeded ?? 0) >= 1);
    }, 240_000).catch((err: Error) => { throw new Error(`${err.message}\nrunner: ${runner!.events.slice(-15).join('\n')}`); });
    const files = readdirSync(join(dir, 'pvcs', 'backups', 'kcp'));
    assert.ok(files.some((f) => /^root-\d{8}T\d{6}Z\.kcpbackup$/.test(f)), files.join(', '));
  });

  it('deleted, then created again from the backup: every object, and the old admin kubeconfig works', async () => {
    // Stop scheduling, then delete the instance: everything it owned goes (garbage collector).
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', '{"spec":{"backup":{"suspend":true}}}']);
    await host.kubectl(['delete', 'kcpinstance', 'kcp', '-n', NS, '--wait=true', '--timeout=120s']);
    await eventually('old pods gone', async () => !runner!.podIP('kcp-front-proxy') && !runner!.podIP('kcp-shard-root'), 120_000);
    // A new instance (another name: its Redis volume is new and empty) from the backups of "kcp", with the same CA.
    await host.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp2, namespace: ${NS}}\nspec:\n  version: "0.1.0"\n  external: {hostname: kcp.example.com}\n  pki: {caSecretRef: {name: kcp-kept-ca}}\n  restoreFrom: {claimName: backups, path: kcp}\n`,
    });
    await ready('kcp2');
    // The old kubeconfig's credentials, aimed at the new front-proxy.
    const ip = runner!.podIP('kcp2-front-proxy')!;
    const old = resolveKubeconfigContext(readKubeconfig((await import('node:fs')).readFileSync(oldKubeconfig, 'utf8')));
    const path = join(dir, 'old-admin-new-proxy.kubeconfig');
    writeFileSync(path, buildKubeconfig({
      clusters: [{ name: 'root', server: `https://${ip}:6443/clusters/root`, caPem: old.caPem, tlsServerName: 'kcp.example.com' }],
      users: [{ name: 'kcp-admin', certPem: old.certPem, keyPem: old.keyPem }],
      contexts: [{ name: 'root', cluster: 'root', user: 'kcp-admin' }], currentContext: 'root',
    }));
    const got = await eventually('objects served', async () => {
      const r = await host.kubectl(['get', 'configmaps', '-n', 'default', '-o', 'jsonpath={.items[*].metadata.name}'], { kubeconfig: path, allowFail: true });
      return r.code === 0 && names.every((n) => r.stdout.split(' ').includes(n)) ? r.stdout : undefined;
    }, 60_000).catch((err: Error) => { throw new Error(`${err.message}\nrunner: ${runner!.events.slice(-15).join('\n')}`); });
    assert.ok(got);
    // The restore ran in the init container, once.
    const pod = (await getJson(['get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/instance=kcp2,app.kubernetes.io/component=shard'])).items[0];
    assert.equal(pod.spec.initContainers[0].name, 'restore');
  });
});
