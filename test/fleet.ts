/**
 * Physical clusters joined to one workspace of a test shard as kcp TMC does it, for the
 * multi-cluster e2e tests: a real host cluster per member (test/hostcluster.ts), `kubectl kcp
 * workload sync <name>` in the workspace, `kubectl apply -f` of the manifest on the cluster, and
 * the manifest's `kcp-ts syncer` run as a process (no kubelet runs its Deployment) with the
 * manifest's kubeconfig for kcp and a token of its service account for the cluster.
 *
 * Each cluster runs the pods of what is synced to it: a stand-in kubelet (test/podrunner.ts) per
 * member, on its own pod network, runs the pods of the namespaces the syncer created (those with
 * kcp's namespace-locator annotation) as local processes — the test images mapped to programs of
 * this machine by {@link workloadCommands} — and reports their readiness, from which the cluster's
 * controllers compute `readyReplicas` and the syncer carries it up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { call, createWorkspace, eventually, kubectl, kubectlWithPlugins, pluginBinDir, settleAll, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from './helpers.js';
import { startHostCluster, type HostCluster } from './hostcluster.js';
import { PodRunner, type CommandMap } from './podrunner.js';
import { namespaceLocator, physicalClusterNamespaceName } from '../src/syncer/names.js';

const REPO = join(import.meta.dirname, '..');

/** One physical cluster of the fleet: its SyncTarget's name and uid, its syncer process and output, the stand-in kubelet running its pods. */
export interface FleetMember { name: string; host: HostCluster; uid: string; args: string[]; syncer?: ChildProcess; out: string; pods: PodRunner }

/** kcp's annotation on the namespaces a syncer creates downstream (src/syncer/names.ts). */
const NAMESPACE_LOCATOR = 'kcp.io/namespace-locator';

/**
 * agnhost's `netexec` as far as the tests use it (kubernetes test/images/agnhost/netexec): an HTTP
 * server on `--http-port` (8080) answering `/healthz` (200 `ok`), `/hostname` (the pod's name,
 * from `HOSTNAME`) and `/shell?shellCommand=…` (`{"output": …}` of `sh -c`), so a readiness
 * probe is served for real and a test can read what the process sees (its environment).
 */
const NETEXEC = `
const http = require('node:http');
const { execFileSync } = require('node:child_process');
const portArg = process.argv.find((a) => a.startsWith('--http-port='));
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://pod');
  if (url.pathname === '/healthz') { res.end('ok'); return; }
  if (url.pathname === '/hostname') { res.end(process.env.HOSTNAME || ''); return; }
  if (url.pathname === '/shell') {
    let output = '';
    try { output = execFileSync('sh', ['-c', url.searchParams.get('shellCommand') || ''], { encoding: 'utf8' }); } catch (err) { output = String(err.stdout || ''); }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ output }));
    return;
  }
  res.statusCode = 404;
  res.end();
}).listen(Number(portArg ? portArg.slice('--http-port='.length) : 8080));
`;

/**
 * How the fleet's pods run here: `registry.k8s.io/pause` (no command) as `sleep infinity`, a
 * process that lives until it is stopped as the pause container does; agnhost's `netexec` as the
 * stand-in above on this Node. Any other image runs its command as given.
 */
export const workloadCommands: CommandMap = (argv, image) => {
  const repo = image.replace(/[:@].*$/, '');
  if (repo === 'registry.k8s.io/pause') return ['sleep', 'infinity'];
  if (repo === 'registry.k8s.io/e2e-test-images/agnhost' && argv[0] === 'netexec') return [process.execPath, '-e', NETEXEC, '--', ...argv.slice(1)];
  return undefined;
};

/** A test shard with a workspace and the physical clusters joined to it. */
export interface Fleet {
  redis: TestRedis;
  srv: TestServer;
  /** The workspace's logical cluster name. */
  cluster: string;
  members: FleetMember[];
  /** A request to the workspace (`/clusters/root:<workspace>` + path) as the shard's admin. */
  up(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res>;
  /** Runs kubectl against the workspace (its server URL) as the shard's admin, as a user of the workspace does. */
  kubectl(args: string[], opts?: { input?: string; allowFail?: boolean }): Promise<{ stdout: string; stderr: string; code: number }>;
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
export async function startFleet(workspace: string, names: string[], opts: { syncTargetHeartbeatThresholdMs: number; podSubnet: number }): Promise<Fleet> {
  const hosts: HostCluster[] = [];
  let redis!: TestRedis;
  await settleAll([...names.map((_, i) => startHostCluster().then((h) => { hosts[i] = h; })), startRedis().then((r) => { redis = r; })]);
  const srv = await startTestServer(redis, { syncTargetHeartbeatThresholdMs: opts.syncTargetHeartbeatThresholdMs });
  const dir = mkdtempSync(join(tmpdir(), `kcp-fleet-${workspace}-`));
  const binDir = pluginBinDir({ 'kubectl-kcp': 'src/cli/kcp/bin.ts' });
  const cluster = await createWorkspace(srv, workspace);
  const ws = `/clusters/root:${workspace}`;
  const members: FleetMember[] = names.map((name, i) => {
    mkdirSync(join(dir, 'pods', name), { recursive: true });
    const pods = new PodRunner({
      kubeconfig: hosts[i]!.kubeconfig, namespaceAnnotation: NAMESPACE_LOCATOR, dir: join(dir, 'pods', name),
      commands: workloadCommands, subnet: opts.podSubnet + i, node: `${name}-node`,
    });
    pods.start();
    return { name, host: hosts[i]!, uid: '', args: [], out: '', pods };
  });
  const fleet: Fleet = {
    redis, srv, cluster, members,
    up: (method, path, body, headers = {}) => call(srv, srv.creds, method, `${ws}${path}`, body, headers),
    kubectl: (args, o) => kubectl(srv.kubeconfigPath, [`--server=${srv.url}${ws}`, ...args], o),
    async hostGet(m, args) {
      const r = await m.host.kubectl(['get', ...args, '-o', 'json'], { allowFail: true });
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    },
    downstreamNs: (m, ns) => physicalClusterNamespaceName(namespaceLocator(cluster, cluster, m.uid, m.name, ns)),
    logs: () => members.map((m) => `--- syncer ${m.name}:\n${m.out.slice(-3000)}\n--- pods of ${m.name}:\n${m.pods.events.slice(-15).join('\n')}`).join('\n'),
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
      for (const m of members) await m.pods.stop();
      await srv.stop();
      await redis.stop();
      for (const m of members) await m.host.stop();
    },
  };
  return fleet;
}
