/**
 * `KcpInstance.spec.backup` and `spec.restoreFrom` on a real kube-apiserver with the chart's RBAC:
 * the operator creates one backup CronJob per shard (owned by the instance or the Shard), keeps it
 * as declared and removes it when backups are turned off; an instance restored from backups gets
 * the restore init container in its shard pods. The commands those objects declare are then run
 * as written (volume and Redis addresses mapped to local ones) against a real shard: the CronJob's
 * takes a backup, the init container's restores it into an empty Redis and leaves it alone on the
 * next start, and a shard started there serves the objects.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { startOperator, type RunningOperator } from '../../operator/manager.js';
import { startHostCluster, type HostCluster } from '../hostcluster.js';
import { adminCreds, call, CM, eventually, KCP_TS_BIN, settleAll, startRedis, type TestRedis } from '../helpers.js';
import { startServer, type RunningServer } from '../../src/server/shard.js';

const execFileP = promisify(execFile);
const CHART = join(import.meta.dirname, '..', '..', 'charts', 'kcp-operator');
const NS = 'kcp-system';

describe('backups and restores declared on a KcpInstance', { timeout: 600_000 }, () => {
  let host: HostCluster;
  let queue: TestRedis;
  let data: TestRedis;
  let empty: TestRedis;
  let operator: RunningOperator | undefined;
  const servers: RunningServer[] = [];
  const logs: string[] = [];

  before(async () => {
    await settleAll([
      startHostCluster().then((h) => { host = h; }), startRedis().then((r) => { queue = r; }),
      startRedis().then((r) => { data = r; }), startRedis().then((r) => { empty = r; }),
    ]);
    await host.helm(['install', 'kcp-operator', CHART, '-n', NS, '--create-namespace', '--set', 'replicaCount=0']);
    const kc = new KubeConfig();
    kc.loadFromFile(await host.serviceAccountKubeconfig(NS, 'kcp-operator'));
    operator = await startOperator({ kubeConfig: kc, queueRedisUrl: queue.url, log: (m) => logs.push(m) });
  });
  after(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    await operator?.stop();
    for (const r of [queue, data, empty]) await r?.stop();
    await host?.stop();
  });

  const getJson = async (args: string[]) => JSON.parse((await host.kubectl([...args, '-o', 'json'])).stdout);
  const cronJobs = async () => ((await getJson(['get', 'cronjobs', '-n', NS, '-l', 'app.kubernetes.io/instance=kcp'])).items as { metadata: { name: string } }[]).map((o) => o.metadata.name).sort();

  /** Runs a container's command as declared, with its Redis URL and volume mapped to local ones. */
  async function runAsDeclared(container: { command: string[]; args: string[] }, redisUrl: string, volumeDir: string) {
    assert.deepEqual(container.command, ['kcp-ts']);
    const args = container.args.map((a) => (a.startsWith('--redis-url=') ? `--redis-url=${redisUrl}` : a.replace(/^(--output-directory=)?\/backups/, `$1${volumeDir}`)));
    try {
      const { stdout } = await execFileP(process.execPath, [KCP_TS_BIN, ...args], { timeout: 60_000 });
      return { code: 0, stdout };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: `${e.stdout ?? ''}${e.stderr ?? ''}` };
    }
  }

  let rootCronJob: any;

  it('creates a backup CronJob per shard, owned like the shard\'s other objects', async () => {
    await host.kubectl(['apply', '-f', '-'], {
      input: [
        'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: backups, namespace: kcp-system}\nspec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp, namespace: kcp-system}\nspec:\n  version: "0.1.0"\n  backup: {schedule: "0 3 * * *", timeZone: Europe/Berlin, retain: 3, claimName: backups}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: alpha, namespace: kcp-system}\nspec: {instanceRef: {name: kcp}}\n',
      ].join('---\n'),
    });
    await eventually('CronJobs', async () => JSON.stringify(await cronJobs()) === JSON.stringify(['kcp-shard-alpha-backup', 'kcp-shard-root-backup']), 60_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${logs.slice(-10).join('\n')}`); });
    const inst = await getJson(['get', 'kcpinstance', 'kcp', '-n', NS]);
    const alpha = await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS]);
    rootCronJob = await getJson(['get', 'cronjob', 'kcp-shard-root-backup', '-n', NS]);
    const alphaCronJob = await getJson(['get', 'cronjob', 'kcp-shard-alpha-backup', '-n', NS]);
    assert.equal(rootCronJob.metadata.ownerReferences[0].uid, inst.metadata.uid);
    assert.equal(alphaCronJob.metadata.ownerReferences[0].uid, alpha.metadata.uid);
    const spec = rootCronJob.spec;
    assert.equal(spec.schedule, '0 3 * * *');
    assert.equal(spec.timeZone, 'Europe/Berlin');
    assert.equal(spec.concurrencyPolicy, 'Forbid');
    assert.equal(spec.suspend, false);
    const pod = spec.jobTemplate.spec.template.spec;
    assert.equal(pod.restartPolicy, 'Never');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const c = pod.containers[0];
    assert.equal(c.image, 'ghcr.io/kcp-ts/kcp-ts:0.1.0');
    assert.deepEqual(c.args, ['backup', '--redis-url=redis://kcp-shard-root-redis.kcp-system.svc:6379', '--shard-name=root', '--output-directory=/backups/kcp', '--retain=3']);
    assert.deepEqual(c.volumeMounts, [{ name: 'backups', mountPath: '/backups' }]);
    assert.deepEqual(pod.volumes, [{ name: 'backups', persistentVolumeClaim: { claimName: 'backups' } }]);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.ok(alphaCronJob.spec.jobTemplate.spec.template.spec.containers[0].args.includes('--shard-name=alpha'));
    // A Job made from it is one the kube-apiserver accepts (what the CronJob controller creates at the schedule).
    const job = await host.kubectl(['create', 'job', 'manual-backup', '--from=cronjob/kcp-shard-root-backup', '-n', NS]);
    assert.match(job.stdout, /job.batch\/manual-backup created/);
  });

  it('keeps the CronJobs as declared and removes them when backups are turned off', async () => {
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', '{"spec":{"backup":{"suspend":true,"schedule":"30 1 * * *"}}}']);
    await eventually('suspended', async () => {
      const cj = await getJson(['get', 'cronjob', 'kcp-shard-alpha-backup', '-n', NS]);
      return cj.spec.suspend === true && cj.spec.schedule === '30 1 * * *';
    }, 30_000);
    // Drift is undone.
    await host.kubectl(['patch', 'cronjob', 'kcp-shard-root-backup', '-n', NS, '--type=merge', '-p', '{"spec":{"schedule":"* * * * *"}}']);
    await eventually('drift undone', async () => (await getJson(['get', 'cronjob', 'kcp-shard-root-backup', '-n', NS])).spec.schedule === '30 1 * * *', 30_000);
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/backup"}]']);
    await eventually('CronJobs removed', async () => (await cronJobs()).length === 0, 30_000);
  });

  it('the CronJob\'s command, run as declared, backs a serving shard up; the restore init container\'s restores it once', async () => {
    const root = mkdtempSync(join(tmpdir(), 'kcp-opbk-root-'));
    const volume = mkdtempSync(join(tmpdir(), 'kcp-opbk-volume-'));
    const shard = await startServer({ rootDirectory: root, securePort: 0, redisUrl: data.url });
    servers.push(shard);
    const creds = adminCreds(root);
    for (let i = 0; i < 30; i++) assert.equal((await call(shard, creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', CM(`cm${i}`))).status, 201);
    const backup = await runAsDeclared(rootCronJob.spec.jobTemplate.spec.template.spec.containers[0], data.url, volume);
    assert.equal(backup.code, 0, backup.stdout);
    assert.match(readdirSync(join(volume, 'kcp')).join(','), /^root-\d{8}T\d{6}Z\.kcpbackup$/);
    // Retention (--retain=3 as declared): after more runs, the newest three are kept.
    for (let r = 0; r < 3; r++) {
      await new Promise((res) => setTimeout(res, 1100));
      assert.equal((await runAsDeclared(rootCronJob.spec.jobTemplate.spec.template.spec.containers[0], data.url, volume)).code, 0);
    }
    const kept = readdirSync(join(volume, 'kcp')).sort();
    assert.equal(kept.length, 3, kept.join(', '));

    // An instance created from the backups: its shard pods restore before they start.
    await host.kubectl(['apply', '-f', '-'], {
      input: 'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp2, namespace: kcp-system}\nspec:\n  version: "0.1.0"\n  restoreFrom: {claimName: backups, path: kcp}\n',
    });
    const deployment = await eventually('restored instance\'s root shard', async () => {
      const d = await host.kubectl(['get', 'deployment', 'kcp2-shard-root', '-n', NS, '-o', 'json'], { allowFail: true });
      return d.code === 0 ? JSON.parse(d.stdout) : undefined;
    }, 60_000);
    const pod = deployment.spec.template.spec;
    const init = pod.initContainers[0];
    assert.equal(init.name, 'restore');
    assert.deepEqual(init.args, ['restore', '--redis-url=redis://kcp2-shard-root-redis.kcp-system.svc:6379', '--shard-name=root', '--if-empty', '--allow-missing', '/backups/kcp']);
    assert.deepEqual(init.volumeMounts, [{ name: 'restore-from', mountPath: '/backups', readOnly: true }]);
    assert.deepEqual(pod.volumes.find((v: { name: string }) => v.name === 'restore-from'), { name: 'restore-from', persistentVolumeClaim: { claimName: 'backups', readOnly: true } });
    assert.equal(pod.containers[0].name, 'kcp-ts');

    const first = await runAsDeclared(init, empty.url, volume);
    assert.equal(first.code, 0, first.stdout);
    assert.match(first.stdout, /restored shard "root" from .*root-\d{8}T\d{6}Z\.kcpbackup/);
    const second = await runAsDeclared(init, empty.url, volume);
    assert.equal(second.code, 0, second.stdout);
    assert.match(second.stdout, /already holds data \(--if-empty\); nothing written/);
    // A shard without a backup in the directory starts empty.
    const other = await runAsDeclared({ command: ['kcp-ts'], args: init.args.map((a: string) => (a === '--shard-name=root' ? '--shard-name=beta' : a)) }, empty.url, volume);
    assert.equal(other.code, 0, other.stdout);
    assert.match(other.stdout, /no backup of shard "beta"/);

    await shard.stop();
    const restored = await startServer({ rootDirectory: root, securePort: 0, redisUrl: empty.url });
    servers.push(restored);
    const list = await call(restored, creds, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps');
    assert.equal(list.status, 200);
    for (let i = 0; i < 30; i++) assert.ok(list.json.items.some((o: { metadata: { name: string } }) => o.metadata.name === `cm${i}`), `cm${i}`);
  });
});
