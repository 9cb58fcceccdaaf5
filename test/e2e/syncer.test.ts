/**
 * The syncer end to end, against a real physical cluster (kube-apiserver, etcd and
 * kube-controller-manager as test/hostcluster.ts starts them; no kubelet, so pods stay Pending):
 *
 * - `kubectl kcp workload sync west --syncer-image … -o syncer.yaml --resources deployments.apps`
 *   creates the SyncTarget, the syncer's service account and RBAC in the workspace, and
 *   `kubectl apply -f syncer.yaml` installs the manifest on the physical cluster. Without a kubelet
 *   the Deployment cannot run, so the test runs `kcp-ts syncer` as a process with the manifest's
 *   arguments, the manifest's kubeconfig Secret for kcp, and a token of the manifest's service
 *   account (its downstream RBAC) for the physical cluster.
 * - Deployments are served in the workspace by API negotiation: the syncer imports
 *   `deployments.apps` from the physical cluster, the shard publishes it in the workspace's
 *   `kubernetes` APIExport and marks it Accepted in the SyncTarget's `status.syncedResources`,
 *   and the workspace binds that export. A Location and a Placement schedule the namespace (the
 *   scheduler writes `state.workload.kcp.io/<key>: Sync`).
 * - A labelled Deployment appears downstream in `kcp-<hash>` with its ConfigMap and Secret (a
 *   service-account token Secret does not); its status comes back up; heartbeats arrive; a
 *   `kill -9` of the syncer during writes, and changes while it is down, are resynced with nothing
 *   lost or duplicated (counted); a syncer killed and started again in the middle of a stream of
 *   Deployment creations leaves exactly one copy of each downstream, each created once (counted
 *   with a watch on the physical cluster), and every status back up; deletion upstream goes down
 *   and the finalizer is released;
 *   removal from the SyncTarget (the Placement stops selecting the namespace) removes the copies and
 *   the state labels; the
 *   deletion of the workspace's namespace removes the downstream namespace; SIGTERM stops the syncer.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { get as httpsGet, type RequestOptions } from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { call, createWorkspace, eventually, kubectlWithPlugins, pluginBinDir, settleAll, sleep, startRedis, startTestServer, type Res, type TestRedis, type TestServer } from '../helpers.js';
import { startHostCluster, type HostCluster } from '../hostcluster.js';
import { namespaceLocator, physicalClusterNamespaceName, syncerID, tenantID } from '../../src/syncer/names.js';
import { syncTargetKey } from '../../src/workload/keys.js';

const REPO = join(import.meta.dirname, '..', '..');
let host: HostCluster;
let redis: TestRedis;
let srv: TestServer;
let dir: string;
let binDir: string;
let cluster = '';
let key = '';
let uid = '';
let downstreamNs = '';
let syncerArgs: string[] = [];
let syncer: ChildProcess | undefined;
let syncerOut = '';

const WS = '/clusters/root:tmc';
const merge = { 'content-type': 'application/merge-patch+json' };
const up = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> => call(srv, srv.creds, method, `${WS}${path}`, body, headers);
const hostGet = async (args: string[]): Promise<any> => {
  const r = await host.kubectl(['get', ...args, '-o', 'json'], { allowFail: true });
  return r.code === 0 ? JSON.parse(r.stdout) : undefined;
};

/** The binding of the workspace's own `kubernetes` export, which API negotiation fills. */
const KUBERNETES_BINDING = {
  apiVersion: 'apis.kcp.io/v1alpha2', kind: 'APIBinding', metadata: { name: 'kubernetes' },
  spec: { reference: { export: { path: 'root:tmc', name: 'kubernetes' } } },
};

const labels = () => ({ [`state.workload.kcp.io/${key}`]: 'Sync' });
const deployment = (name: string, replicas: number) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, labels: { app: name, ...labels() } },
  spec: {
    replicas, selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.9', envFrom: [{ configMapRef: { name: 'web-config' } }, { secretRef: { name: 'web-secret' } }] }] },
    },
  },
});

function startSyncer(): void {
  syncerOut = '';
  syncer = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src', 'cli', 'bin.ts'), ...syncerArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  syncer.stdout!.on('data', (d) => { syncerOut += String(d); });
  syncer.stderr!.on('data', (d) => { syncerOut += String(d); });
}

async function killSyncer(signal: NodeJS.Signals): Promise<void> {
  const p = syncer;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill(signal);
  await exited;
}

before(async () => {
  await settleAll([startHostCluster().then((h) => { host = h; }), startRedis().then((r) => { redis = r; })]);
  srv = await startTestServer(redis);
  dir = mkdtempSync(join(tmpdir(), 'kcp-syncer-e2e-'));
  binDir = pluginBinDir({ 'kubectl-kcp': 'src/cli/kcp/bin.ts' });
  cluster = await createWorkspace(srv, 'tmc');
  key = syncTargetKey(cluster, 'west');
});

after(async () => {
  await killSyncer('SIGKILL');
  await srv?.stop();
  await redis?.stop();
  await host?.stop();
});

describe('kcp-ts syncer against a real physical cluster', { timeout: 600_000 }, () => {
  test('kubectl kcp workload sync creates the SyncTarget, the syncer identity and its manifest; kubectl apply installs it', async () => {
    const out = join(dir, 'syncer.yaml');
    const r = await kubectlWithPlugins(binDir, { HOME: dir, KUBECONFIG: srv.kubeconfigPath }, [
      'kcp', 'workload', 'sync', 'west', '--syncer-image', 'ghcr.io/kcp-ts/kcp-ts:test', '-o', out, '--resources', 'deployments.apps', `--server=${srv.url}${WS}`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Wrote physical cluster manifest to/);
    const st = (await up('GET', '/apis/workload.kcp.io/v1alpha1/synctargets/west')).json;
    uid = st.metadata.uid;
    assert.deepEqual(st.spec.supportedAPIExports, [{ export: 'kubernetes' }]);
    const id = syncerID('west', uid);
    assert.match(id, /^kcp-syncer-west-[0-9a-z]{8}$/);
    assert.equal((await up('GET', `/api/v1/namespaces/default/serviceaccounts/${id}`)).status, 200);
    const role = (await up('GET', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${id}`)).json;
    assert.deepEqual(role.rules[0], { verbs: ['sync'], apiGroups: ['workload.kcp.io'], resourceNames: ['west'], resources: ['synctargets'] });
    assert.equal(role.metadata.ownerReferences[0].uid, uid);
    assert.equal((await up('GET', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${id}`)).json.subjects[0].name, id);

    const applied = await host.kubectl(['apply', '-f', out]);
    assert.match(applied.stdout, new RegExp(`deployment.apps/${id} created`));
    const docs = parseAllDocuments(readFileSync(out, 'utf8')).map((d) => d.toJS()).filter(Boolean);
    assert.deepEqual(docs.map((d: any) => d.kind), ['Namespace', 'ServiceAccount', 'Secret', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Secret', 'Deployment']);
    const dep = await hostGet(['deployment', '-n', id, id]);
    const container = dep.spec.template.spec.containers[0];
    assert.equal(container.image, 'ghcr.io/kcp-ts/kcp-ts:test');
    assert.deepEqual(container.command, ['kcp-ts']);
    // The Deployment cannot run here (no kubelet): the syncer runs as a process with its arguments,
    // the manifest's kubeconfig for kcp and its service account's token for the physical cluster.
    const secret = docs.find((d: any) => d.kind === 'Secret' && d.metadata.name === id) as any;
    const fromKubeconfig = join(dir, 'from.kubeconfig');
    writeFileSync(fromKubeconfig, secret.stringData.kubeconfig);
    const downKubeconfig = await host.serviceAccountKubeconfig(id, id);
    syncerArgs = [...container.args.map((a: string) => (a === '--from-kubeconfig=/kcp/kubeconfig' ? `--from-kubeconfig=${fromKubeconfig}` : a)), `--kubeconfig=${downKubeconfig}`, '--heartbeat-interval=1s'];
    assert.deepEqual(syncerArgs.slice(0, 5), ['syncer', `--from-kubeconfig=${fromKubeconfig}`, '--sync-target-name=west', `--sync-target-uid=${uid}`, '--from-cluster=root:tmc']);
    assert.ok(syncerArgs.includes('--resources=deployments.apps'));
  });

  test('the syncer starts, heartbeats arrive', async () => {
    startSyncer();
    const first = await eventually('a heartbeat', async () => (await up('GET', '/apis/workload.kcp.io/v1alpha1/synctargets/west')).json?.status?.lastSyncerHeartbeatTime, 30_000);
    await eventually('a later heartbeat', async () => {
      const t = (await up('GET', '/apis/workload.kcp.io/v1alpha1/synctargets/west')).json?.status?.lastSyncerHeartbeatTime;
      return t && t !== first;
    }, 10_000).catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
  });

  test('API negotiation: the syncer imports deployments.apps, the workspace binds the `kubernetes` export', async () => {
    const accepted = await eventually('deployments.apps Accepted in status.syncedResources', async () => {
      const st = (await up('GET', '/apis/workload.kcp.io/v1alpha1/synctargets/west')).json;
      return (st?.status?.syncedResources ?? []).find((r: any) => r.group === 'apps' && r.resource === 'deployments' && r.state === 'Accepted');
    }, 90_000).catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
    assert.ok(accepted.versions.includes('v1'));
    const r = await up('POST', '/apis/apis.kcp.io/v1alpha2/apibindings', KUBERNETES_BINDING);
    assert.equal(r.status, 201, r.body);
    await eventually('deployments served upstream', async () => (await up('GET', '/apis/apps/v1/deployments')).status === 200, 30_000);
    // The scheduler owns the state labels (a namespace no Placement selects loses them, as in kcp):
    // a Location of the SyncTarget and a Placement of the namespaces labelled app=web.
    const gvr = { group: 'workload.kcp.io', version: 'v1alpha1', resource: 'synctargets' };
    assert.equal((await up('POST', '/apis/scheduling.kcp.io/v1alpha1/locations', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Location', metadata: { name: 'west', labels: { region: 'west' } }, spec: { resource: gvr, instanceSelector: {} } })).status, 201);
    assert.equal((await up('POST', '/apis/scheduling.kcp.io/v1alpha1/placements', { apiVersion: 'scheduling.kcp.io/v1alpha1', kind: 'Placement', metadata: { name: 'web' }, spec: { locationResource: gvr, locationSelectors: [{ matchLabels: { region: 'west' } }], namespaceSelector: { matchLabels: { app: 'web' } } } })).status, 201);
    await eventually('the Placement chose the SyncTarget', async () => (await up('GET', '/apis/scheduling.kcp.io/v1alpha1/placements/web')).json?.metadata?.annotations?.['internal.workload.kcp.io/synctarget'] === key, 30_000);
  });

  test('a scheduled Deployment goes down into kcp-<hash> with its ConfigMap and Secret; a token Secret does not', async () => {
    assert.equal((await up('POST', '/api/v1/namespaces', { metadata: { name: 'web', labels: { app: 'web' } } })).status, 201);
    await eventually('the namespace scheduled to the SyncTarget', async () => (await up('GET', '/api/v1/namespaces/web')).json?.metadata?.labels?.[`state.workload.kcp.io/${key}`] === 'Sync', 30_000);
    assert.equal((await up('POST', '/api/v1/namespaces/web/configmaps', { metadata: { name: 'web-config', labels: labels() }, data: { GREETING: 'hello' } })).status, 201);
    assert.equal((await up('POST', '/api/v1/namespaces/web/secrets', { metadata: { name: 'web-secret', labels: labels() }, stringData: { PASSWORD: 's3cret' } })).status, 201);
    const tok = await up('POST', '/api/v1/namespaces/web/secrets', { metadata: { name: 'web-token', labels: labels(), annotations: { 'kubernetes.io/service-account.name': 'default' } }, type: 'kubernetes.io/service-account-token' });
    assert.equal(tok.status, 201, tok.body);
    const created = await up('POST', '/apis/apps/v1/namespaces/web/deployments', deployment('web', 2));
    assert.equal(created.status, 201, created.body);
    const loc = namespaceLocator(cluster, cluster, uid, 'west', 'web');
    downstreamNs = physicalClusterNamespaceName(loc);
    const dep = await eventually('the Deployment downstream', () => hostGet(['deployment', '-n', downstreamNs, 'web']), 30_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
    assert.equal(dep.spec.replicas, 2);
    assert.equal(dep.metadata.labels['internal.workload.kcp.io/cluster'], key);
    assert.equal(dep.metadata.labels[`state.workload.kcp.io/${key}`], undefined);
    assert.equal(dep.metadata.ownerReferences, undefined);
    assert.equal(dep.metadata.annotations?.['kcp.io/cluster'], undefined);
    const ns = await hostGet(['namespace', downstreamNs]);
    assert.equal(ns.metadata.annotations['kcp.io/namespace-locator'], `{"syncTarget":{"cluster":"${cluster}","name":"west","uid":"${uid}"},"cluster":"${cluster}","namespace":"web"}`);
    assert.equal(ns.metadata.labels['kcp.io/tenant-id'], tenantID(loc));
    const cm = await eventually('the ConfigMap downstream', () => hostGet(['configmap', '-n', downstreamNs, 'web-config']));
    assert.equal(cm.data.GREETING, 'hello');
    const secret = await eventually('the Secret downstream', () => hostGet(['secret', '-n', downstreamNs, 'web-secret']));
    assert.equal(Buffer.from(secret.data.PASSWORD, 'base64').toString(), 's3cret');
    assert.equal(await hostGet(['secret', '-n', downstreamNs, 'web-token']), undefined);
    const upstream = (await up('GET', '/apis/apps/v1/namespaces/web/deployments/web')).json;
    assert.ok(upstream.metadata.finalizers.includes(`workload.kcp.io/syncer-${key}`));
  });

  test('status comes back up', async () => {
    // The physical cluster's deployment controller reports replicas (pods stay Pending: no kubelet).
    const status = await eventually('upstream status from downstream', async () => {
      const s = (await up('GET', '/apis/apps/v1/namespaces/web/deployments/web')).json?.status;
      return s?.replicas === 2 && s;
    }, 30_000);
    const down = (await hostGet(['deployment', '-n', downstreamNs, 'web'])).status;
    assert.equal(status.observedGeneration, down.observedGeneration);
    assert.equal(status.unavailableReplicas, 2);
  });

  test('kill -9 during writes and changes while down: resynced, nothing lost or duplicated', async () => {
    const writes: Promise<Res>[] = [];
    for (let i = 0; i < 30; i++) {
      writes.push(up('POST', '/api/v1/namespaces/web/configmaps', { metadata: { name: `cm-${i}`, labels: labels() }, data: { i: String(i) } }));
      if (i === 12) await killSyncer('SIGKILL');
    }
    for (const r of await Promise.all(writes)) assert.equal(r.status, 201, r.body);
    // While it is down: a new Deployment, a changed one, a deleted ConfigMap (held by the finalizer).
    assert.equal((await up('POST', '/apis/apps/v1/namespaces/web/deployments', deployment('web2', 1))).status, 201);
    assert.equal((await up('PATCH', '/apis/apps/v1/namespaces/web/deployments/web', { spec: { replicas: 3 } }, merge)).status, 200);
    assert.equal((await up('DELETE', '/api/v1/namespaces/web/configmaps/cm-0')).status, 200);
    startSyncer();
    await eventually('everything resynced', async () => {
      const cms = await hostGet(['configmaps', '-n', downstreamNs]);
      const names = new Set((cms?.items ?? []).map((c: any) => c.metadata.name));
      const web = await hostGet(['deployment', '-n', downstreamNs, 'web']);
      const web2 = await hostGet(['deployment', '-n', downstreamNs, 'web2']);
      return web?.spec.replicas === 3 && web2 && !names.has('cm-0') && [...Array(30).keys()].slice(1).every((i) => names.has(`cm-${i}`));
    }, 60_000).catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
    await eventually('cm-0 released upstream', async () => (await up('GET', '/api/v1/namespaces/web/configmaps/cm-0')).status === 404, 20_000);
    // Counted: one namespace for the workspace's namespace, each object once.
    const nss = await hostGet(['namespaces', '-l', `internal.workload.kcp.io/cluster=${key}`]);
    assert.deepEqual(nss.items.map((n: any) => n.metadata.name), [downstreamNs]);
    const cms = (await hostGet(['configmaps', '-n', downstreamNs, '-l', `internal.workload.kcp.io/cluster=${key}`])).items.map((c: any) => c.metadata.name).sort();
    // The namespace's kube-root-ca.crt goes down too, renamed kcp-root-ca.crt as kcp's syncer does
    // (the physical cluster publishes its own kube-root-ca.crt there).
    assert.deepEqual(cms, ['web-config', 'kcp-root-ca.crt', ...[...Array(29).keys()].map((i) => `cm-${i + 1}`)].sort());
    const deps = (await hostGet(['deployments', '-n', downstreamNs])).items.map((d: any) => d.metadata.name).sort();
    assert.deepEqual(deps, ['web', 'web2']);
  });

  test('a restart (kill -9, started again) during a stream of creations: exactly N downstream, each created once, status up for all (counted)', async () => {
    const N = 40;
    assert.equal((await up('POST', '/api/v1/namespaces', { metadata: { name: 'burst', labels: { app: 'web' } } })).status, 201);
    await eventually('burst scheduled to the SyncTarget', async () => (await up('GET', '/api/v1/namespaces/burst')).json?.metadata?.labels?.[`state.workload.kcp.io/${key}`] === 'Sync', 30_000);
    const burstNs = physicalClusterNamespaceName(namespaceLocator(cluster, cluster, uid, 'west', 'burst'));
    // Every creation and deletion of a synced Deployment on the physical cluster, as they happen: a
    // watch from the resourceVersion of a list, resumed from the last event's when it closes (as an
    // informer does), so no event is missed or seen twice.
    const added = new Map<string, number>();
    const removed: string[] = [];
    const kc = new KubeConfig();
    kc.loadFromFile(host.kubeconfig);
    const selector = `internal.workload.kcp.io/cluster=${key}`;
    const hostRequest = async (query: Record<string, string>, onResponse: (res: IncomingMessage) => void): Promise<ClientRequest> => {
      const url = new URL(`${host.url}/apis/apps/v1/deployments`);
      for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
      const opts: RequestOptions = { hostname: url.hostname, port: url.port, path: url.pathname + url.search };
      await kc.applyToHTTPSOptions(opts);
      return httpsGet(opts, onResponse);
    };
    // The list's own resourceVersion (kubectl prints lists without one).
    let resourceVersion = await new Promise<string>((resolve, reject) => {
      void hostRequest({ labelSelector: selector }, (res) => {
        let body = '';
        res.on('data', (d) => { body += String(d); });
        res.on('end', () => { try { resolve(JSON.parse(body).metadata.resourceVersion); } catch (err) { reject(err); } });
      }).then((req) => req.on('error', reject));
    });
    assert.match(resourceVersion, /^\d+$/);
    let watching: ClientRequest | undefined;
    let stopped = false;
    let resumed = 0;
    let watchError: unknown;
    const onEvent = (line: string): void => {
      const { type, object } = JSON.parse(line) as { type: string; object: any };
      if (object?.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
      if (type === 'ERROR') { watchError ??= `ERROR event: ${line}`; return; }
      if (object?.metadata?.namespace !== burstNs) return;
      if (type === 'ADDED') added.set(object.metadata.name, (added.get(object.metadata.name) ?? 0) + 1);
      if (type === 'DELETED') removed.push(object.metadata.name);
    };
    const watchFrom = async (): Promise<void> => {
      watching = await hostRequest({ watch: 'true', labelSelector: selector, resourceVersion, allowWatchBookmarks: 'true' }, (res) => {
        if (res.statusCode !== 200) { watchError = `watch answered ${res.statusCode}`; res.resume(); return; }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line) onEvent(line);
          }
        });
        res.on('end', () => {
          if (stopped || watchError !== undefined) return;
          // A watch that closes at once again and again is a failure, not something to spin on.
          if (++resumed > 100) { watchError = `the watch closed 100 times (last from resourceVersion ${resourceVersion})`; return; }
          void watchFrom();
        });
      });
      watching.on('error', (err) => { if (!stopped) watchError = err; });
    };
    await watchFrom();
    try {
      // One creation every 50 ms; the syncer is killed after the 10th and started again after the
      // 20th, so creations arrive before, while it is dead, while it starts and after.
      const statuses: number[] = [];
      for (let i = 0; i < N; i++) {
        const r = await up('POST', '/apis/apps/v1/namespaces/burst/deployments', {
          apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `d-${i}`, labels: labels() },
          spec: { replicas: 1, selector: { matchLabels: { app: `d-${i}` } }, template: { metadata: { labels: { app: `d-${i}` } }, spec: { containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.9' }] } } },
        });
        statuses.push(r.status);
        if (i === 9) await killSyncer('SIGKILL');
        if (i === 19) startSyncer();
        await sleep(50);
      }
      assert.deepEqual(statuses, Array(N).fill(201));
      const names = [...Array(N).keys()].map((i) => `d-${i}`).sort();
      const synced = await eventually(`${N} Deployments downstream, every status up`, async () => {
        const down = ((await hostGet(['deployments', '-n', burstNs]))?.items ?? []) as any[];
        const upstream = ((await up('GET', '/apis/apps/v1/namespaces/burst/deployments')).json?.items ?? []) as any[];
        if (down.length !== N || upstream.length !== N) return false;
        const downByName = new Map(down.map((d) => [d.metadata.name, d]));
        // Status up: each upstream status is its copy's, once the cluster has counted the replica.
        return upstream.every((u) => downByName.get(u.metadata.name)?.status?.replicas === 1 && isDeepStrictEqual(u.status, downByName.get(u.metadata.name).status)) && { down, upstream };
      }, 90_000).catch(async (err) => {
        const down = ((await hostGet(['deployments', '-n', burstNs]))?.items ?? []).length;
        throw new Error(`${(err as Error).message}: ${down} downstream\n${syncerOut}`);
      });
      // Counted: exactly the N names, each created once downstream and never deleted, in one namespace.
      assert.deepEqual(synced.down.map((d: any) => d.metadata.name).sort(), names);
      assert.equal(watchError, undefined, 'the watch ran throughout');
      assert.deepEqual([...added.keys()].sort(), names);
      assert.deepEqual([...added.entries()].filter(([, n]) => n !== 1), [], 'each created once');
      assert.deepEqual(removed, [], 'none deleted and created again');
      // (Not the generations: a Deployment's annotations count too, and the spec-diff annotation
      // of tmc-deployment-coordination may arrive after the first apply, as in kcp.)
      const nss = (await hostGet(['namespaces', '-l', `internal.workload.kcp.io/cluster=${key}`])).items.map((n: any) => n.metadata.name).sort();
      assert.deepEqual(nss, [downstreamNs, burstNs].sort(), 'one downstream namespace per workspace namespace');
      process.stderr.write(`# ${N} creations across a kill -9 and restart of the syncer: ${N} downstream, each ADDED once, 0 deleted, ${N} statuses up (watch resumed ${resumed} times)\n`);
    } finally {
      stopped = true;
      watching?.destroy();
    }
  });

  test('deletion upstream goes down, then the finalizer is released', async () => {
    assert.equal((await up('DELETE', '/apis/apps/v1/namespaces/web/deployments/web')).status, 200);
    await eventually('deleted downstream', async () => (await hostGet(['deployment', '-n', downstreamNs, 'web'])) === undefined, 30_000);
    await eventually('released and gone upstream', async () => (await up('GET', '/apis/apps/v1/namespaces/web/deployments/web')).status === 404, 20_000);
  });

  test('removal from the SyncTarget (the Placement no longer selects the namespace): the copies go, the state labels and finalizers are removed', async () => {
    assert.equal((await up('PATCH', '/api/v1/namespaces/web', { metadata: { labels: { app: null } } }, merge)).status, 200);
    await eventually('removed downstream', async () => (await hostGet(['deployment', '-n', downstreamNs, 'web2'])) === undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
    const obj = await eventually('state label removed upstream', async () => {
      const o = (await up('GET', '/apis/apps/v1/namespaces/web/deployments/web2')).json;
      return o?.metadata && !o.metadata.labels?.[`state.workload.kcp.io/${key}`] && o;
    }, 30_000);
    assert.equal((obj.metadata.finalizers ?? []).includes(`workload.kcp.io/syncer-${key}`), false);
    assert.equal(obj.metadata.annotations?.[`deletion.internal.workload.kcp.io/${key}`], undefined);
  });

  test('deleting the workspace\'s namespace: its objects and the downstream namespace go, every finalizer is released', async () => {
    assert.equal((await up('DELETE', '/api/v1/namespaces/web')).status, 200);
    await eventually('downstream namespace gone', async () => (await hostGet(['namespace', downstreamNs])) === undefined, 60_000)
      .catch((err) => { throw new Error(`${(err as Error).message}\n${syncerOut}`); });
    await eventually('upstream namespace gone', async () => (await up('GET', '/api/v1/namespaces/web')).status === 404, 60_000)
      .catch(async (err) => { throw new Error(`${(err as Error).message}: ${(await up('GET', '/api/v1/namespaces/web')).body}\n${syncerOut}`); });
    await killSyncer('SIGTERM');
    assert.equal(syncer!.exitCode, 0, syncerOut);
  });
});
