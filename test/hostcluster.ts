/**
 * A real host cluster for the operator's tests: etcd (Debian's etcd-server), kube-apiserver and
 * kube-controller-manager (garbage collector, namespace, deployment, replicaset, statefulset and
 * PVC-protection controllers) built by test/tools/build.sh, and helm. No kubelet: pods are objects only (a test
 * that needs them running starts their processes itself).
 *
 * Binaries: $KUBE_APISERVER, $KUBE_CONTROLLER_MANAGER, $HELM, $KSTATUS, $ETCD when set, else the
 * cache test/tools/build.sh fills (~/.cache/kcp-ts/tools or $KCP_TS_TOOLS_CACHE), which is run when
 * they are missing. What is still missing then is an error that says how to get it, never a
 * skipped test.
 */
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { createCA, issueClientCert, issueServingCert } from '../src/pki/certs.js';
import { buildKubeconfig } from '../src/pki/kubeconfig.js';
import { freePort, sleep } from './helpers.js';

const REPO = join(import.meta.dirname, '..');

/** Paths of the host-cluster tools (see the module comment). @throws Error naming what is missing and how to get it */
export function hostTools(): { kubeApiserver: string; kubeControllerManager: string; helm: string; kstatus: string; etcd: string } {
  // The build script names its cache directories (keyed by version): one rule for both.
  const [kubeDir, helmDir] = execFileSync(join(REPO, 'test', 'tools', 'build.sh'), ['--print'], { encoding: 'utf8' }).trim().split('\n') as [string, string];
  const etcd = process.env.ETCD ?? ['/usr/bin/etcd', '/usr/local/bin/etcd'].find(existsSync) ?? 'etcd';
  const tools = {
    kubeApiserver: process.env.KUBE_APISERVER ?? join(kubeDir, 'kube-apiserver'),
    kubeControllerManager: process.env.KUBE_CONTROLLER_MANAGER ?? join(kubeDir, 'kube-controller-manager'),
    helm: process.env.HELM ?? join(helmDir, 'helm'),
    kstatus: process.env.KSTATUS ?? join(helmDir, 'kstatus'),
    etcd,
  };
  let missing = Object.entries(tools).filter(([, p]) => !existsSync(p));
  const fromBuild = { kubeApiserver: 'KUBE_APISERVER', kubeControllerManager: 'KUBE_CONTROLLER_MANAGER', helm: 'HELM', kstatus: 'KSTATUS' } as const;
  if (missing.some(([k]) => k in fromBuild && !process.env[fromBuild[k as keyof typeof fromBuild]])) {
    // Built once (minutes), then cached: a fresh machine's `npm test` needs nothing more than Go.
    process.stderr.write('building the host-cluster tools with test/tools/build.sh (once; cached outside the repository)\n');
    try { execFileSync(join(REPO, 'test', 'tools', 'build.sh'), [], { stdio: ['ignore', 'ignore', 'inherit'] }); } catch { /* reported below */ }
    missing = Object.entries(tools).filter(([, p]) => !existsSync(p));
  }
  if (missing.length > 0) {
    throw new Error(`host-cluster tools missing: ${missing.map(([k, p]) => `${k} (${p})`).join(', ')}. Build them with test/tools/build.sh (needs Go), ` +
      'install etcd with `apt-get install etcd-server`, or point KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, HELM, KSTATUS, ETCD at existing binaries');
  }
  return tools;
}

/** A running host cluster. */
export interface HostCluster {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** Directory with its PKI, data and logs. */
  dir: string;
  /** kubeconfig of a system:masters user. */
  kubeconfig: string;
  /** CA PEM of the cluster (serving and client). */
  caPem: string;
  /** Runs kubectl against it (admin unless `kubeconfig` is given); rejects on a non-zero exit unless `allowFail`. */
  kubectl(args: string[], opts?: { input?: string; allowFail?: boolean; kubeconfig?: string }): Promise<{ stdout: string; stderr: string; code: number }>;
  /** Runs helm against it. */
  helm(args: string[], opts?: { allowFail?: boolean }): Promise<{ stdout: string; stderr: string; code: number }>;
  /** A kubeconfig for a ServiceAccount's token (TokenRequest), written to a file; returns its path. */
  serviceAccountKubeconfig(namespace: string, name: string): Promise<string>;
  /** Stops its kube-apiserver (SIGTERM, then SIGKILL after 5 s), the cluster's outage as clients see it; etcd and the controller manager keep running. */
  stopApiserver(): Promise<void>;
  /** Starts its kube-apiserver again with the same flags and port; resolves once `/readyz` answers. */
  startApiserver(): Promise<void>;
  stop(): Promise<void>;
}

async function run(bin: string, args: string[], opts: { input?: string; allowFail?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    const child = execFile(bin, args, { env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      if (code !== 0 && !opts.allowFail) reject(new Error(`${bin.split('/').pop()} ${args.join(' ')} exited ${code}: ${stderr || stdout}`));
      else resolve({ stdout, stderr, code: typeof code === 'number' ? code : 1 });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

async function waitHttpOk(url: string, ca: string, cert: string, key: string, ms: number, what: string, proc: ChildProcess, log: string): Promise<void> {
  const { request } = await import('node:https');
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited ${proc.exitCode}: ${readFileSync(log, 'utf8').slice(-3000)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(url, { ca, cert, key }, (res) => { res.resume(); resolve(res.statusCode === 200); });
      req.on('error', () => resolve(false));
      req.setTimeout(2000, () => { req.destroy(); resolve(false); });
      req.end();
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${ms} ms: ${readFileSync(log, 'utf8').slice(-3000)}`);
    await sleep(250);
  }
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on loopback (see the module comment);
 * `controllers` adds kube-controller-manager controllers to the default ones (e.g. `job`, `cronjob`).
 */
export async function startHostCluster(options: { controllers?: string[] } = {}): Promise<HostCluster> {
  const tools = hostTools();
  const dir = mkdtempSync(join(tmpdir(), 'kcp-host-'));
  const procs: ChildProcess[] = [];
  const stopAll = async () => {
    for (const p of procs.reverse()) {
      if (p.exitCode === null && p.signalCode === null) { p.kill('SIGTERM'); await Promise.race([new Promise((r) => p.once('exit', r)), sleep(5000)]); p.kill('SIGKILL'); }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ca = await createCA('kcp-ts-test-host-ca', 30);
    const serving = await issueServingCert(ca, { commonName: 'kube-apiserver', dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'], ipAddresses: ['127.0.0.1', '10.96.0.1'], validityDays: 30 });
    const admin = await issueClientCert(ca, { user: 'kubernetes-admin', groups: ['system:masters'], validityDays: 30 });
    const kcm = await issueClientCert(ca, { user: 'system:kube-controller-manager', groups: [], validityDays: 30 });
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const f = (name: string, text: string) => { const p = join(dir, name); writeFileSync(p, text, { mode: 0o600 }); return p; };
    const caFile = f('ca.crt', ca.certPem);
    f('ca.key', ca.keyPem);
    const saKey = f('sa.key', sa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const saPub = f('sa.pub', sa.publicKey.export({ type: 'spki', format: 'pem' }) as string);

    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdLog = join(dir, 'etcd.log');
    const etcd = spawn(tools.etcd, [
      '--data-dir', join(dir, 'etcd'), '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`, '--unsafe-no-fsync',
    ], { stdio: ['ignore', openSync(etcdLog, 'a'), openSync(etcdLog, 'a')] });
    procs.push(etcd);

    const url = `https://127.0.0.1:${apiPort}`;
    const apiLog = join(dir, 'kube-apiserver.log');
    const apiArgs = [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`, '--bind-address=127.0.0.1', `--secure-port=${apiPort}`, '--advertise-address=127.0.0.1',
      `--tls-cert-file=${f('apiserver.crt', serving.certPem)}`, `--tls-private-key-file=${f('apiserver.key', serving.keyPem)}`, `--client-ca-file=${caFile}`,
      `--service-account-issuer=https://kubernetes.default.svc`, `--service-account-key-file=${saPub}`, `--service-account-signing-key-file=${saKey}`,
      '--authorization-mode=Node,RBAC', '--service-cluster-ip-range=10.96.0.0/16', `--cert-dir=${join(dir, 'certs')}`,
      '--enable-priority-and-fairness=false', '--endpoint-reconciler-type=none', '--disable-admission-plugins=ServiceAccount',
      '--profiling=false', '--v=1',
    ];
    let api = spawn(tools.kubeApiserver, apiArgs, { stdio: ['ignore', openSync(apiLog, 'a'), openSync(apiLog, 'a')] });
    procs.push(api);
    await waitHttpOk(`${url}/readyz`, ca.certPem, admin.certPem, admin.keyPem, 90_000, 'kube-apiserver', api, apiLog);

    const kubeconfig = f('admin.kubeconfig', buildKubeconfig({
      clusters: [{ name: 'host', server: url, caPem: ca.certPem }], users: [{ name: 'admin', certPem: admin.certPem, keyPem: admin.keyPem }],
      contexts: [{ name: 'host', cluster: 'host', user: 'admin' }], currentContext: 'host',
    }));
    const kcmKubeconfig = f('kcm.kubeconfig', buildKubeconfig({
      clusters: [{ name: 'host', server: url, caPem: ca.certPem }], users: [{ name: 'kcm', certPem: kcm.certPem, keyPem: kcm.keyPem }],
      contexts: [{ name: 'host', cluster: 'host', user: 'kcm' }], currentContext: 'host',
    }));
    const kcmLog = join(dir, 'kube-controller-manager.log');
    const kcmProc = spawn(tools.kubeControllerManager, [
      `--kubeconfig=${kcmKubeconfig}`, `--authentication-kubeconfig=${kcmKubeconfig}`, `--authorization-kubeconfig=${kcmKubeconfig}`,
      `--controllers=${['garbagecollector', 'namespace', 'deployment', 'replicaset', 'statefulset', 'serviceaccount', 'serviceaccount-token', 'pvc-protection', ...(options.controllers ?? [])].join(',')}`,
      '--leader-elect=false', '--secure-port=0', `--service-account-private-key-file=${saKey}`, `--root-ca-file=${caFile}`,
      '--use-service-account-credentials=true', '--concurrent-gc-syncs=5', '--v=1',
    ], { stdio: ['ignore', openSync(kcmLog, 'a'), openSync(kcmLog, 'a')] });
    procs.push(kcmProc);

    const env = { ...process.env, KUBECONFIG: kubeconfig, HELM_CACHE_HOME: join(dir, 'helm', 'cache'), HELM_CONFIG_HOME: join(dir, 'helm', 'config'), HELM_DATA_HOME: join(dir, 'helm', 'data') };
    mkdirSync(join(dir, 'helm'), { recursive: true });
    const host: HostCluster = {
      url, dir, kubeconfig, caPem: ca.certPem,
      kubectl: (args, o = {}) => run('kubectl', ['--kubeconfig', o.kubeconfig ?? kubeconfig, ...args], { input: o.input, allowFail: o.allowFail }),
      helm: (args, o = {}) => run(tools.helm, args, { allowFail: o.allowFail, env }),
      async serviceAccountKubeconfig(namespace, name) {
        const { stdout } = await host.kubectl(['create', 'token', name, '-n', namespace, '--duration=2h']);
        return f(`sa-${namespace}-${name}.kubeconfig`, buildKubeconfig({
          clusters: [{ name: 'host', server: url, caPem: ca.certPem }], users: [{ name, token: stdout.trim() }],
          contexts: [{ name: 'host', cluster: 'host', user: name, namespace }], currentContext: 'host',
        }));
      },
      async stopApiserver() {
        if (api.exitCode !== null || api.signalCode !== null) return;
        const exited = new Promise((r) => api.once('exit', r));
        api.kill('SIGTERM');
        await Promise.race([exited, sleep(5000)]);
        api.kill('SIGKILL');
        await exited;
      },
      async startApiserver() {
        if (api.exitCode === null && api.signalCode === null) return;
        api = spawn(tools.kubeApiserver, apiArgs, { stdio: ['ignore', openSync(apiLog, 'a'), openSync(apiLog, 'a')] });
        procs.push(api);
        await waitHttpOk(`${url}/readyz`, ca.certPem, admin.certPem, admin.keyPem, 90_000, 'kube-apiserver', api, apiLog);
      },
      stop: stopAll,
    };
    // The default namespace exists once the apiserver's bootstrap controllers ran; the
    // controller manager is up once it created the default ServiceAccount there.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await host.kubectl(['get', 'serviceaccount', 'default', '-n', 'default', '-o', 'name'], { allowFail: true });
      if (r.code === 0) break;
      if (kcmProc.exitCode !== null) throw new Error(`kube-controller-manager exited: ${readFileSync(kcmLog, 'utf8').slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`kube-controller-manager did not start: ${readFileSync(kcmLog, 'utf8').slice(-3000)}`);
      await sleep(500);
    }
    return host;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** The kstatus of objects (JSON from `kubectl get -o json`), as Argo CD and Flux compute it: `Current`, `InProgress`, `Failed`, … */
export function kstatus(objectJson: string): string {
  return execFileSync(hostTools().kstatus, [], { input: objectJson, encoding: 'utf8' }).trim();
}

