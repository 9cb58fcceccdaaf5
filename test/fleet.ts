/**
 * Physical clusters joined to one workspace of a test shard as kcp TMC does it, for the
 * multi-cluster e2e tests: a real host cluster per member (test/hostcluster.ts), `kubectl kcp
 * workload sync <name>` in the workspace, `kubectl apply -f` of the manifest on the cluster, and
 * the manifest's `kcp-ts syncer` run as a process (no kubelet runs its Deployment) with the
 * manifest's kubeconfig for kcp and a token of its service account for the cluster.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { call, createWorkspace, eventually, kubectlWithPlugins, pluginBinDir, settleAll, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from './helpers.js';
import { startHostCluster, type HostCluster } from './hostcluster.js';
import { namespaceLocator, physicalClusterNamespaceName } from '../src/syncer/names.js';

const REPO = join(import.meta.dirname, '..');

/** One physical cluster of the fleet: its SyncTarget's name and uid, its syncer process and output. */
export interface FleetMember { name: string; host: HostCluster; uid: string; args: string[]; syncer?: ChildProcess; out: string }

/** A test shard with a workspace and the physical clusters joined to it. */
export interface Fleet {
  redis: TestRedis;
  srv: TestServer;
  /** The workspace's logical cluster name. */
  cluster: string;
  members: FleetMember[];
  /** A request to the workspace (`/clusters/root:<workspace>` + path) as the shard's admin. */
  up(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res>;
  /** `kubectl get … -o json` on a member's cluster; undefined when it fails (absent). */
  hostGet(m: FleetMember, args: string[]): Promise<any>;
  /** The member's downstream namespace of workspace namespace `ns` (kcp's name). */
  downstreamNs(m: FleetMember, ns: string): string;
  /** The tails of the syncers' output, for failure messages. */
  logs(): string;
  /** Joins every member (workload sync with `syncArgs`, apply, syncer) and waits until all are Ready with deployments.apps Accepted. */
  join(syncArgs?: (m: FleetMember) => string[]): Promise<void>;
  startSyncer(m: FleetMember): void;
  killSyncer(m: FleetMember, signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts Redis, a shard (`syncTargetHeartbeatThresholdMs`), one host cluster per name and the
 * workspace `root:<workspace>`.
 */
export async function startFleet(workspace: string, names: string[], opts: { syncTargetHeartbeatThresholdMs: number }): Promise<Fleet> {
  const hosts: HostCluster[] = [];
  let redis!: TestRedis;
  await settleAll([...names.map((_, i) => startHostCluster().then((h) => { hosts[i] = h; })), startRedis().then((r) => { redis = r; })]);
  const srv = await startTestServer(redis, { syncTargetHeartbeatThresholdMs: opts.syncTargetHeartbeatThresholdMs });
  const dir = mkdtempSync(join(tmpdir(), `kcp-fleet-${workspace}-`));
  const binDir = pluginBinDir({ 'kubectl-kcp': 'src/cli/kcp/bin.ts' });
  const cluster = await createWorkspace(srv, workspace);
  const ws = `/clusters/root:${workspace}`;
  const members: FleetMember[] = names.map((name, i) => ({ name, host: hosts[i]!, uid: '', args: [], out: '' }));
  const fleet: Fleet = {
    redis, srv, cluster, members,
    up: (method, path, body, headers = {}) => call(srv, srv.creds, method, `${ws}${path}`, body, headers),
    async hostGet(m, args) {
      const r = await m.host.kubectl(['get', ...args, '-o', 'json'], { allowFail: true });
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    },
    downstreamNs: (m, ns) => physicalClusterNamespaceName(namespaceLocator(cluster, cluster, m.uid, m.name, ns)),
    logs: () => members.map((m) => `--- syncer ${m.name}:\n${m.out.slice(-3000)}`).join('\n'),
    startSyncer(m) {
      m.out = '';
      m.syncer = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src', 'cli', 'bin.ts'), ...m.args], { stdio: ['ignore', 'pipe', 'pipe'] });
      m.syncer.stdout!.on('data', (d) => { m.out += String(d); });
      m.syncer.stderr!.on('data', (d) => { m.out += String(d); });
    },
    async killSyncer(m, signal) {
      const p = m.syncer;
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill(signal);
      await exited;
    },
    async join(syncArgs = () => []) {
      for (const m of members) {
        const out = join(dir, `${m.name}.yaml`);
        const r = await kubectlWithPlugins(binDir, { HOME: dir, KUBECONFIG: srv.kubeconfigPath }, [
          'kcp', 'workload', 'sync', m.name, '--syncer-image', 'ghcr.io/kcp-ts/kcp-ts:test', '-o', out, '--resources', 'deployments.apps', ...syncArgs(m), `--server=${srv.url}${ws}`,
        ]);
        if (r.code !== 0) throw new Error(`kubectl kcp workload sync ${m.name}: ${r.stderr}`);
        m.uid = (await fleet.up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${m.name}`)).json.metadata.uid;
        await m.host.kubectl(['apply', '-f', out]);
        const docs = parseAllDocuments(readFileSync(out, 'utf8')).map((d) => d.toJS()).filter(Boolean) as any[];
        const deployment = docs.find((d) => d.kind === 'Deployment');
        const id = deployment.metadata.name as string;
        const secret = docs.find((d) => d.kind === 'Secret' && d.metadata.name === id);
        const fromKubeconfig = join(dir, `${m.name}-from.kubeconfig`);
        writeFileSync(fromKubeconfig, secret.stringData.kubeconfig);
        const downKubeconfig = await m.host.serviceAccountKubeconfig(id, id);
        m.args = [...deployment.spec.template.spec.containers[0].args.map((a: string) => (a === '--from-kubeconfig=/kcp/kubeconfig' ? `--from-kubeconfig=${fromKubeconfig}` : a)),
          `--kubeconfig=${downKubeconfig}`, '--heartbeat-interval=1s'];
        fleet.startSyncer(m);
      }
      await eventually('every SyncTarget Ready with deployments.apps Accepted', async () => {
        for (const m of members) {
          const st = (await fleet.up('GET', `/apis/workload.kcp.io/v1alpha1/synctargets/${m.name}`)).json;
          const ready = st?.status?.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True';
          const accepted = (st?.status?.syncedResources ?? []).some((x: any) => x.resource === 'deployments' && x.state === 'Accepted');
          if (!ready || !accepted) return false;
        }
        return true;
      }, 120_000).catch((err) => { throw new Error(`${(err as Error).message}\n${fleet.logs()}`); });
    },
    async stop() {
      for (const m of members) await fleet.killSyncer(m, 'SIGKILL');
      await srv.stop();
      await redis.stop();
      for (const m of members) await m.host.stop();
    },
  };
  return fleet;
}
