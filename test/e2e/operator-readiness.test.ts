/**
 * The operator tells the truth about itself, on a real kube-apiserver (+ etcd, + the
 * controller-manager) with the `kcp-ts operator` command: while its queue's Redis does not
 * answer, /readyz fails (naming the check), /livez and /healthz do not (a restart cannot bring
 * Redis back), the reason is logged once per change of state, and the Ready condition of what it
 * manages is Unknown; once Redis answers it becomes ready and reconciles. A KcpInstance with
 * `spec: {}` (or no spec) is accepted, its version the chart's appVersion.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startHostCluster, type HostCluster } from '../hostcluster.js';
import { eventually, freePort, settleAll, sleep, spawnCli, stopCli, type CliProcess } from '../helpers.js';

const REPO = join(import.meta.dirname, '..', '..');
const NS = 'kcp-readiness';
const APP_VERSION = (parse(readFileSync(join(REPO, 'charts', 'kcp-operator', 'Chart.yaml'), 'utf8')) as { appVersion: string }).appVersion;

interface Condition { type: string; status: string; reason?: string; message?: string }

/** A redis-server on `port` (no persistence), resolved once it answers. */
async function redisOn(port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await eventually(`redis-server on ${port}`, async () => {
    await sleep(50);
    return new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
      s.once('error', () => resolve(false));
    });
  }, 10_000);
  return proc;
}

async function stopProc(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
}

describe('operator readiness with its queue Redis down and back', { timeout: 300_000 }, () => {
  let host: HostCluster;
  let cli: CliProcess | undefined;
  let redis: ChildProcess | undefined;
  let queuePort: number;
  let healthPort: number;

  before(async () => {
    [queuePort, healthPort] = [await freePort(), await freePort()];
    host = await startHostCluster();
    await host.kubectl(['create', 'namespace', NS]);
    const applied = await host.kubectl(['apply', '--server-side', '--validate=strict', '-f', join(REPO, 'crds')]);
    assert.doesNotMatch(applied.stderr, /unknown field/);
    for (const crd of ['kcpinstances', 'shards', 'rootworkspaces']) await host.kubectl(['wait', '--for=condition=Established', `crd/${crd}.operator.kcp-ts.io`, '--timeout=30s']);
  });
  after(async () => {
    if (process.env.SHOW_OPERATOR_LOG) process.stderr.write(cli?.output() ?? "");
    await settleAll([cli ? stopCli(cli) : Promise.resolve(), stopProc(redis)]);
    await host?.stop();
  });

  const probe = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${healthPort}${path}`);
    return { status: res.status, body: await res.text() };
  };
  const getJson = async (args: string[]) => JSON.parse((await host.kubectl([...args, '-o', 'json'])).stdout);
  const readyOf = async (kind: string, name: string): Promise<Condition | undefined> =>
    ((await getJson(['get', kind, name, '-n', NS])).status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready');
  const lines = (re: RegExp) => cli!.output().split('\n').filter((l) => re.test(l));

  it('a KcpInstance with spec: {} or without spec is accepted; spec.version is the chart\'s appVersion', async () => {
    await host.kubectl(['apply', '-f', '-'], { input: `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: empty, namespace: ${NS}}\nspec: {}\n` });
    await host.kubectl(['apply', '-f', '-'], { input: `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: nospec, namespace: ${NS}}\n` });
    for (const name of ['empty', 'nospec']) {
      const spec = (await getJson(['get', 'kcpinstance', name, '-n', NS])).spec;
      assert.equal(spec.version, APP_VERSION, `${name}: spec.version defaulted`);
      assert.equal(spec.pki?.caDuration, undefined, `${name}: an absent pki stays absent (only present objects get defaults)`);
    }
    await host.kubectl(['apply', '-f', '-'], { input: `apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: alpha, namespace: ${NS}}\nspec: {instanceRef: {name: empty}}\n` });
    const explained = await host.kubectl(['explain', 'kcpinstances.spec.pki.caDuration']);
    assert.match(explained.stdout.replace(/\s+/g, ' '), /Validity of a generated CA, a Go duration in hours, minutes and seconds \(87600h is ten years\)\./);
  });

  it('not ready while the queue Redis is unreachable: /readyz 500 naming queue-redis, /livez and /healthz 200, Ready Unknown, the reason logged once', async () => {
    cli = spawnCli(['operator', '--kubeconfig', host.kubeconfig, '--namespace', NS, '--redis-url', `redis://127.0.0.1:${queuePort}`,
      '--health-probe-bind-address', `127.0.0.1:${healthPort}`, '--metrics-bind-address', '0']);
    await eventually('the health endpoint serves', async () => { await sleep(200); return probe('/livez').then((r) => r.status === 200, () => false); }, 60_000);
    await eventually('the unreachable queue is logged', async () => { await sleep(200); return lines(/controller queue Redis .* is unreachable/).length === 1; }, 30_000);
    const ready = await probe('/readyz');
    assert.equal(ready.status, 500);
    assert.match(ready.body, /^\[-\]queue-redis failed: reason withheld$/m);
    assert.match(ready.body, /readyz check failed/);
    assert.equal((await probe('/readyz/queue-redis')).status, 500);
    assert.equal((await probe('/livez')).status, 200, 'liveness does not depend on Redis');
    assert.equal((await probe('/healthz')).status, 200);
    assert.match(lines(/is unreachable/)[0]!, /ECONNREFUSED/, 'the log line says why');
    // Ready is Unknown on what the operator manages: it cannot reconcile it.
    for (const [kind, name] of [['kcpinstance', 'empty'], ['kcpinstance', 'nospec'], ['shards.operator.kcp-ts.io', 'alpha']] as const) {
      const c = await eventually(`${name} Ready Unknown`, async () => { await sleep(300); const r = await readyOf(kind, name); return r?.status === 'Unknown' && r; }, 30_000);
      assert.equal(c.reason, 'OperatorQueueUnavailable');
      assert.match(c.message!, /cannot reach its controller queue/);
    }
    // Probes keep failing; the log does not repeat.
    for (let i = 0; i < 10; i++) { assert.equal((await probe('/readyz')).status, 500); await sleep(400); }
    assert.equal(lines(/controller queue Redis .* is unreachable/).length, 1, 'logged once per change of state, not per probe or PING');
    assert.equal(lines(/informers synced; reconciling waits for the controller queue Redis/).length, 1);
    assert.doesNotMatch(cli.output(), /informers synced; reconciling\n/);
    // Nothing was reconciled.
    assert.equal((await getJson(['get', 'deployments', '-n', NS])).items.length, 0);
    assert.equal((await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS])).metadata.finalizers, undefined, 'the Shard reconciler has not run');
  });

  it('ready once the queue Redis answers: it reconciles, Ready reflects the instance again; down again is logged again', async () => {
    redis = await redisOn(queuePort);
    await eventually('/readyz 200', async () => { await sleep(300); return (await probe('/readyz')).status === 200; }, 30_000);
    assert.match((await probe('/readyz?verbose')).body, /\[\+\]queue-redis ok\n\[\+\]informer-sync ok\n\[\+\]shutdown ok\nreadyz check passed/);
    assert.equal(lines(/controller queue Redis .* is reachable; reconciling/).length, 1);
    await eventually('the instance reconciled (its front-proxy Deployment)', async () => {
      await sleep(500);
      return (await getJson(['get', 'deployments', '-n', NS])).items.some((d: { metadata: { name: string } }) => d.metadata.name === 'empty-front-proxy');
    }, 60_000);
    // No kubelet runs the pods: the instance is Ready=False (Creating), no longer Unknown.
    const c = await eventually('Ready from the reconciler', async () => { await sleep(300); const r = await readyOf('kcpinstance', 'empty'); return r?.reason !== 'OperatorQueueUnavailable' && r; }, 60_000);
    assert.equal(c.status, 'False');
    const shardReady = await eventually('the Shard\'s Ready from its reconciler', async () => { await sleep(300); const r = await readyOf('shards.operator.kcp-ts.io', 'alpha'); return r?.reason !== 'OperatorQueueUnavailable' && r; }, 60_000);
    assert.equal(shardReady.status, 'False');
    assert.equal((await getJson(['get', 'kcpinstance', 'empty', '-n', NS])).status.targetVersion, APP_VERSION);

    await stopProc(redis);
    redis = undefined;
    await eventually('/readyz 500 again', async () => { await sleep(300); return (await probe('/readyz')).status === 500; }, 30_000);
    await eventually('logged again', async () => { await sleep(200); return lines(/controller queue Redis .* is unreachable/).length === 2; }, 10_000);
    await eventually('Ready Unknown again', async () => { await sleep(300); return (await readyOf('kcpinstance', 'empty'))?.reason === 'OperatorQueueUnavailable'; }, 30_000);
  });

  it('with leader election a standby is ready (its queue answers), so a rolling update can hand the Lease over', async () => {
    await stopCli(cli!);
    cli = undefined;
    redis = await redisOn(queuePort);
    const ports = [await freePort(), await freePort()];
    const start = (port: number) => spawnCli(['operator', '--kubeconfig', host.kubeconfig, '--namespace', NS, '--redis-url', `redis://127.0.0.1:${queuePort}`,
      '--health-probe-bind-address', `127.0.0.1:${port}`, '--metrics-bind-address', '0', '--leader-elect', '--leader-election-namespace', NS]);
    const ops = [start(ports[0]!)];
    try {
      await eventually('the first leads', async () => { await sleep(200); return /leading as/.test(ops[0]!.output()); }, 60_000);
      ops.push(start(ports[1]!));
      const at = (port: number, path: string) => fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => ({ status: r.status, body: await r.text() }), () => ({ status: 0, body: '' }));
      const standby = await eventually('the standby is ready', async () => { await sleep(300); const r = await at(ports[1]!, '/readyz?verbose'); return r.status === 200 && r; }, 60_000);
      assert.match(standby.body, /\[\+\]queue-redis ok\n\[\+\]informer-sync ok/);
      assert.doesNotMatch(ops[1]!.output(), /leading as/, 'it does not lead');
      await eventually('the leader is ready', async () => { await sleep(300); return (await at(ports[0]!, '/readyz')).status === 200; }, 60_000);
      // The old pod goes (SIGTERM releases the Lease); the standby takes over and reconciles.
      assert.equal(await stopCli(ops[0]!), 0);
      await eventually('the standby leads and syncs', async () => { await sleep(300); return /leading as[\s\S]*informers synced; reconciling/.test(ops[1]!.output()); }, 60_000);
      assert.equal((await at(ports[1]!, '/readyz')).status, 200);
    } finally {
      for (const op of ops) await stopCli(op);
    }
  });
});
