/**
 * A stand-in kubelet for tests on a host cluster without nodes: no kubelet runs pods here and no
 * image registry is reachable, so this runs the pods of the operator's Deployments and
 * StatefulSets as local processes, as a kubelet would: it binds each pod to a node, gives it its
 * own network namespace and IP on a bridge (so every pod can listen on its ports, as in a
 * cluster), resolves Services to the IPs of the pods they select (a hosts file per pod, in place
 * of cluster DNS), writes the pod's Secret, ConfigMap, emptyDir and PVC volumes to directories
 * bind-mounted at their mountPaths in a private mount namespace, runs the container's command and
 * args (with `$(VAR)` expanded from its env) after its init containers (each until it exits 0)
 * and restarts it when it exits (a `restartPolicy: Never` pod, a Job's, runs once and ends
 * Succeeded or Failed), keeps Secret and
 * ConfigMap volumes current, probes readiness as
 * the pod declares it and reports it in the pod's status — from which kube-controller-manager's
 * controllers compute the workloads' status. Deleted pods are stopped and then removed. It
 * registers its Node (Ready, the pod network's gateway as its address), as a kubelet does.
 *
 * Which pods: those of one namespace, or of every namespace — optionally only the namespaces
 * carrying an annotation, e.g. kcp's namespace-locator on the namespaces a syncer creates (their
 * names are hashes the test does not choose) — and optionally only those matching a label selector.
 * Each runner has its own pod network (`subnet`), so several clusters can run pods side by side.
 *
 * Needs root (ip netns, veth, bridge, mount): what the tests run as here.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { HostClient, collectionPath } from '../operator/kube/client.js';
import { sleep } from './helpers.js';

/** How a container's command is run: the local executable and arguments, or undefined to run it as given. */
export type CommandMap = (command: string[], image: string) => string[] | undefined;

/** Options of {@link PodRunner}. */
export interface PodRunnerOptions {
  kubeconfig: string;
  /** The namespace whose pods it runs; every namespace when omitted (see `namespaceAnnotation`). */
  namespace?: string;
  /** Without `namespace`: only the namespaces carrying this annotation (any value). */
  namespaceAnnotation?: string;
  /** Only pods matching this label selector (`k=v`); every pod when omitted. */
  selector?: string;
  /** Directory for the pods' volumes and logs. */
  dir: string;
  /** Maps container commands to local ones (e.g. `kcp-ts` → node bin/kcp-ts). */
  commands: CommandMap;
  /** Third octet of the pod network 10.244.X.0/24 (tests running at once need different ones); 77 when omitted. */
  subnet?: number;
  /** The Node the pods are bound to, registered by the runner; `kcp-ts-test-node` when omitted. */
  node?: string;
}

interface Container { name: string; image: string; command?: string[]; args?: string[]; env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: KeyRef; configMapKeyRef?: KeyRef; fieldRef?: { fieldPath: string } } }[]; envFrom?: { prefix?: string; configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean } }[]; ports?: { name?: string; containerPort: number }[]; readinessProbe?: Probe; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }
interface KeyRef { name: string; key: string; optional?: boolean }
interface Probe { httpGet?: { path: string; port: number | string; scheme?: string }; tcpSocket?: { port: number | string } }
interface Pod {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string; restartPolicy?: string; initContainers?: Container[]; containers: Container[]; volumes?: { name: string; secret?: { secretName: string }; configMap?: { name: string }; emptyDir?: object; persistentVolumeClaim?: { claimName: string } }[] };
}
interface Running { pod: Pod; id: number; ip: string; netns: string; proc?: ChildProcess; initProc?: ChildProcess; initialized: boolean; exitCode?: number; restarts: number; ready: boolean; stopping: boolean; startedAt: string; lastReported?: string; volumes: Map<string, string> }

/** A namespaced object with data (Secret: base64 values; ConfigMap: text values). */
type WithData = { apiVersion: string; kind: string; metadata: { name: string }; data?: Record<string, string> };

/** The stand-in kubelet (see the module comment). */
export class PodRunner {
  private readonly client: HostClient;
  private readonly pods = new Map<string, Running>();
  private nextId = 2;
  private stopped = false;
  private rounds = 0;
  private loop: Promise<void> | undefined;
  private readonly bridge: string;
  private readonly net: string;
  private readonly subnet: number;
  private readonly node: string;
  private nodeRegistered = false;
  /** Lines describing what happened, for failure messages. */
  readonly events: string[] = [];

  constructor(private readonly opts: PodRunnerOptions) {
    const kc = new KubeConfig();
    kc.loadFromFile(opts.kubeconfig);
    this.client = new HostClient(kc);
    this.subnet = opts.subnet ?? 77;
    this.net = `10.244.${this.subnet}`;
    this.bridge = `kcpbr${this.subnet}`;
    this.node = opts.node ?? 'kcp-ts-test-node';
  }

  private ip(args: string[]): void { execFileSync('ip', args, { stdio: 'pipe' }); }

  /** Creates the pod network and starts reconciling pods every 300 ms. */
  start(): void {
    try { this.ip(['link', 'del', this.bridge]); } catch { /* not there */ }
    this.ip(['link', 'add', this.bridge, 'type', 'bridge']);
    this.ip(['addr', 'add', `${this.net}.1/24`, 'dev', this.bridge]);
    this.ip(['link', 'set', this.bridge, 'up']);
    mkdirSync(this.opts.dir, { recursive: true });
    this.loop = (async () => {
      while (!this.stopped) {
        try { await this.sync(); } catch (err) { this.events.push(`sync: ${(err as Error).message}`); }
        await sleep(300);
      }
    })();
  }

  /** The IP of a ready pod whose name starts with `prefix` and that has `labels`, e.g. the front-proxy's. */
  podIP(prefix: string, labels: Record<string, string> = {}): string | undefined {
    for (const r of this.pods.values()) {
      if (!r.pod.metadata.name.startsWith(prefix) || r.stopping || !r.ready) continue;
      if (Object.entries(labels).every(([k, v]) => r.pod.metadata.labels?.[k] === v)) return r.ip;
    }
    return undefined;
  }

  /** The running pods of namespace `ns` (all when omitted) that are not being stopped, for a test's checks. */
  running(ns?: string): { name: string; namespace: string; ip: string; ready: boolean }[] {
    return [...this.pods.values()].filter((r) => !r.stopping && (ns === undefined || r.pod.metadata.namespace === ns))
      .map((r) => ({ name: r.pod.metadata.name, namespace: r.pod.metadata.namespace, ip: r.ip, ready: r.ready }));
  }

  /**
   * Creates the Node the pods are bound to and reports it Ready (what a kubelet registers), so the
   * cluster's Node list shows where its pods run. A Node left from an earlier run is reused.
   */
  private async registerNode(): Promise<void> {
    const path = `/api/v1/nodes/${this.node}`;
    await this.client.request('POST', '/api/v1/nodes', {
      apiVersion: 'v1', kind: 'Node', metadata: { name: this.node, labels: { 'kubernetes.io/hostname': this.node, 'kubernetes.io/os': 'linux' } }, spec: { podCIDR: `${this.net}.0/24` },
    }).catch((err: Error) => { if (!/already exists/.test(err.message)) throw err; });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await this.client.request('PATCH', `${path}/status`, {
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'pods run as local processes', lastHeartbeatTime: now, lastTransitionTime: now }],
        addresses: [{ type: 'InternalIP', address: `${this.net}.1` }, { type: 'Hostname', address: this.node }],
        capacity: { cpu: '2', memory: '4Gi', pods: '250' }, allocatable: { cpu: '2', memory: '4Gi', pods: '250' },
      },
    }, 'application/merge-patch+json');
    this.nodeRegistered = true;
  }

  /** The pods it runs (see the module comment): of its namespace, or of every (annotated) namespace. */
  private async watchedPods(): Promise<Pod[]> {
    const { namespace, namespaceAnnotation, selector } = this.opts;
    const pods = (await this.client.request<{ items: Pod[] }>('GET', collectionPath('Pod', namespace), undefined, undefined, selector ? { labelSelector: selector } : {})).items;
    if (namespace !== undefined || namespaceAnnotation === undefined) return pods;
    const namespaces = await this.client.request<{ items: { metadata: { name: string; annotations?: Record<string, string> } }[] }>('GET', '/api/v1/namespaces');
    const marked = new Set(namespaces.items.filter((n) => n.metadata.annotations?.[namespaceAnnotation] !== undefined).map((n) => n.metadata.name));
    return pods.filter((p) => marked.has(p.metadata.namespace));
  }

  private async sync(): Promise<void> {
    if (!this.nodeRegistered) await this.registerNode();
    const seen = new Set<string>();
    for (const pod of await this.watchedPods()) {
      seen.add(pod.metadata.uid);
      const r = this.pods.get(pod.metadata.uid);
      if (pod.metadata.deletionTimestamp) {
        if (r && !r.stopping) void this.stopPod(r, true);
        else if (!r) await this.client.request('DELETE', `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } }).catch(() => undefined);
        continue;
      }
      if (!r) await this.startPod(pod);
    }
    for (const r of this.pods.values()) if (!seen.has(r.pod.metadata.uid) && !r.stopping) void this.stopPod(r, false);
    await this.writeHosts();
    if (++this.rounds % 5 === 0) await this.refreshVolumes();
    await Promise.all([...this.pods.values()].filter((r) => !r.stopping).map((r) => this.probeAndReport(r)));
  }

  private async startPod(pod: Pod): Promise<void> {
    const ns = pod.metadata.namespace;
    const name = pod.metadata.name;
    if (!pod.spec.nodeName) {
      await this.client.request('POST', `/api/v1/namespaces/${ns}/pods/${name}/binding`, { apiVersion: 'v1', kind: 'Binding', metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: this.node } });
    }
    const dir = join(this.opts.dir, 'pods', `${name}-${pod.metadata.uid.slice(0, 8)}`);
    // The container logs go here, whether or not a volume of the pod lives under it.
    mkdirSync(dir, { recursive: true });
    // Volumes first: a Secret that does not exist yet keeps the pod waiting, as kubelet does.
    const volumeDirs = new Map<string, string>();
    for (const v of pod.spec.volumes ?? []) {
      const vdir = v.persistentVolumeClaim ? join(this.opts.dir, 'pvcs', v.persistentVolumeClaim.claimName) : join(dir, 'volumes', v.name);
      mkdirSync(vdir, { recursive: true });
      await this.writeVolume(ns, v, vdir);
      volumeDirs.set(v.name, vdir);
    }
    const id = this.nextId++;
    const ip = `${this.net}.${id}`;
    const netns = `kp${this.subnet}-${id}`;
    // Both ends named by subnet and pod: the peer is created in the host's namespace before it moves
    // into the pod's, where a runner of another subnet may be creating its own at the same moment.
    const hostEnd = `kv${id}h${this.subnet}`;
    const podEnd = `kv${id}p${this.subnet}`;
    // Leftovers of a run that was killed would make the names clash.
    for (const leftover of [['netns', 'del', netns], ['link', 'del', hostEnd], ['link', 'del', podEnd]]) { try { this.ip(leftover); } catch { /* none */ } }
    this.ip(['netns', 'add', netns]);
    this.ip(['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', podEnd]);
    this.ip(['link', 'set', podEnd, 'netns', netns]);
    this.ip(['link', 'set', hostEnd, 'master', this.bridge]);
    this.ip(['link', 'set', hostEnd, 'up']);
    this.ip(['netns', 'exec', netns, 'ip', 'addr', 'add', `${ip}/24`, 'dev', podEnd]);
    this.ip(['netns', 'exec', netns, 'ip', 'link', 'set', podEnd, 'up']);
    this.ip(['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up']);
    this.ip(['netns', 'exec', netns, 'ip', 'route', 'add', 'default', 'via', `${this.net}.1`]);
    mkdirSync(`/etc/netns/${netns}`, { recursive: true });
    writeFileSync(`/etc/netns/${netns}/hosts`, '127.0.0.1 localhost\n');
    const r: Running = { pod, id, ip, netns, initialized: !pod.spec.initContainers?.length, restarts: 0, ready: false, stopping: false, startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), volumes: volumeDirs };
    this.pods.set(pod.metadata.uid, r);
    this.events.push(`start ${name} at ${ip} (${pod.spec.containers[0]!.image})`);

    /** How one container is run: its environment, local argv, mounts and log file. */
    const prepare = async (c: Container) => {
      // kubelet's order: HOSTNAME, then envFrom (each source's keys, prefixed), then env, later entries winning.
      const env: Record<string, string> = { HOSTNAME: name };
      for (const from of c.envFrom ?? []) {
        const data = from.configMapRef ? await this.dataOf('ConfigMap', ns, from.configMapRef.name) : from.secretRef ? await this.dataOf('Secret', ns, from.secretRef.name) : {};
        for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ''}${k}`] = v;
      }
      const fields: Record<string, string> = { 'metadata.name': name, 'metadata.namespace': ns, 'metadata.uid': pod.metadata.uid, 'status.podIP': ip, 'spec.nodeName': this.node };
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
        if (e.value !== undefined) env[e.name] = e.value;
        else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
        else if (ref) env[e.name] = (await this.dataOf(e.valueFrom!.configMapKeyRef ? 'ConfigMap' : 'Secret', ns, ref.name))[ref.key] ?? '';
      }
      const expand = (s: string) => s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => env[v] ?? m);
      const argv = [...(c.command ?? []), ...(c.args ?? [])].map(expand);
      const local = this.opts.commands(argv, c.image) ?? argv;
      // A mount over a directory holding the program itself (this checkout under /tmp, say) would
      // hide it from the process: such a mount is left out, the pod sees the host's directory there.
      const programs = local[0] === process.execPath ? local.slice(0, 2) : local.slice(0, 1);
      const hides = (mountPath: string) => programs.some((a) => a.startsWith('/') && (a === mountPath || a.startsWith(`${mountPath.replace(/\/$/, '')}/`)));
      const mounts = (c.volumeMounts ?? []).filter((m) => !hides(m.mountPath)).map((m) => {
        const src = volumeDirs.get(m.name)!;
        // The mount point is made on the host (empty); what is mounted on it exists in the pod's mount namespace only.
        return `mkdir -p '${m.mountPath}' && mount --bind '${src}' '${m.mountPath}'${m.readOnly ? ` && mount -o remount,bind,ro '${m.mountPath}'` : ''}`;
      });
      return { name: c.name, env, local, mounts, log: join(dir, `${c.name}.log`) };
    };
    const main = await prepare(pod.spec.containers[0]!);
    const inits: Array<Awaited<ReturnType<typeof prepare>>> = [];
    for (const ic of pod.spec.initContainers ?? []) inits.push(await prepare(ic));
    const run = (p: typeof main) => spawn('ip', ['netns', 'exec', netns, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', `${p.mounts.join(' && ') || 'true'} && exec "$@"`, 'sh', ...p.local], {
      env: { PATH: process.env.PATH, HOME: '/tmp', ...p.env }, stdio: ['ignore', openSync(p.log, 'a'), openSync(p.log, 'a')],
    });
    // restartPolicy Never (a Job's pod): the container runs once and the pod ends Succeeded or Failed.
    const once = pod.spec.restartPolicy === 'Never';
    let initsDone = 0;
    const backoff = () => Math.min(10_000, 1000 * 2 ** Math.min(r.restarts - 1, 4));
    const launch = () => {
      if (r.stopping || this.stopped) return;
      // Init containers first, one after the other, each until it exits 0 (as kubelet).
      if (initsDone < inits.length) {
        const p = inits[initsDone]!;
        const proc = run(p);
        r.initProc = proc;
        proc.on('exit', (code, signal) => {
          if (r.stopping || this.stopped) return;
          if (code === 0) { initsDone++; r.initialized = initsDone === inits.length; launch(); return; }
          r.restarts++;
          this.events.push(`${name} init container ${p.name} exited ${code ?? signal}; retry ${r.restarts}`);
          setTimeout(launch, backoff()).unref();
        });
        return;
      }
      const proc = run(main);
      r.proc = proc;
      proc.on('exit', (code, signal) => {
        if (r.stopping || this.stopped) return;
        r.ready = false;
        if (once) { r.exitCode = code ?? 128; this.events.push(`${name} exited ${code ?? signal} (restartPolicy Never)`); return; }
        r.restarts++;
        this.events.push(`${name} exited ${code ?? signal}; restart ${r.restarts}`);
        // CrashLoopBackOff: 1 s, 2 s, 4 s … 10 s.
        setTimeout(launch, backoff()).unref();
      });
    };
    launch();
  }

  /** The decoded data of a ConfigMap or Secret for a container's environment; empty when it does not exist. */
  private async dataOf(kind: 'ConfigMap' | 'Secret', ns: string, name: string): Promise<Record<string, string>> {
    const o = await this.client.get<WithData>(kind, ns, name).catch(() => undefined);
    return mapValues(o?.data ?? {}, (v) => (kind === 'Secret' ? Buffer.from(v, 'base64').toString() : v));
  }

  /** Writes a Secret or ConfigMap volume's keys as files (again: kubelet keeps them current). @throws when the object does not exist */
  private async writeVolume(ns: string, v: NonNullable<Pod['spec']['volumes']>[number], vdir: string): Promise<void> {
    const data = v.secret
      ? mapValues(((await this.client.get<WithData>('Secret', ns, v.secret.secretName)) ?? missing(`Secret ${v.secret.secretName}`)).data ?? {}, (b) => Buffer.from(b, 'base64'))
      : v.configMap ? mapValues(((await this.client.get<WithData>('ConfigMap', ns, v.configMap.name)) ?? missing(`ConfigMap ${v.configMap.name}`)).data ?? {}, (t) => Buffer.from(t)) : {};
    for (const [k, b] of Object.entries(data)) {
      const file = join(vdir, k);
      if (!existsSync(file) || !readFileSync(file).equals(b)) writeFileSync(file, b, { mode: 0o600 });
    }
  }

  /** Refreshes every running pod's Secret and ConfigMap volumes, as kubelet does periodically. */
  private async refreshVolumes(): Promise<void> {
    for (const r of this.pods.values()) {
      if (r.stopping) continue;
      for (const v of r.pod.spec.volumes ?? []) {
        if (!v.secret && !v.configMap) continue;
        await this.writeVolume(r.pod.metadata.namespace, v, r.volumes.get(v.name)!).catch(() => undefined);
      }
    }
  }

  private async stopPod(r: Running, deleteObject: boolean): Promise<void> {
    r.stopping = true;
    r.ready = false;
    if (r.initProc && r.initProc.exitCode === null && r.initProc.signalCode === null) r.initProc.kill('SIGKILL');
    const proc = r.proc;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      await Promise.race([new Promise((res) => proc.once('exit', res)), sleep(10_000)]);
      if (proc.exitCode === null && proc.signalCode === null) { proc.kill('SIGKILL'); await new Promise((res) => proc.once('exit', res)); }
    }
    try { this.ip(['netns', 'del', r.netns]); } catch { /* gone */ }
    rmSync(`/etc/netns/${r.netns}`, { recursive: true, force: true });
    this.pods.delete(r.pod.metadata.uid);
    this.events.push(`stopped ${r.pod.metadata.name}`);
    if (deleteObject) {
      await this.client.request('DELETE', `/api/v1/namespaces/${r.pod.metadata.namespace}/pods/${r.pod.metadata.name}`, { gracePeriodSeconds: 0, preconditions: { uid: r.pod.metadata.uid } }).catch(() => undefined);
    }
  }

  /** Service names → the IP of a running pod each selects (of the Service's namespace), into the hosts file of every pod of that namespace. */
  private async writeHosts(): Promise<void> {
    if (this.pods.size === 0) return;
    const services = await this.client.list<{ apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec?: { selector?: Record<string, string> } }>('Service', this.opts.namespace);
    const lines = new Map<string, string[]>();
    for (const r of this.pods.values()) lines.set(r.pod.metadata.namespace, ['127.0.0.1 localhost']);
    for (const s of services.items) {
      const sel = s.spec?.selector;
      const ns = s.metadata.namespace;
      if (!sel || !lines.has(ns)) continue;
      const pods = [...this.pods.values()].filter((r) => !r.stopping && r.pod.metadata.namespace === ns && Object.entries(sel).every(([k, v]) => r.pod.metadata.labels?.[k] === v));
      const target = pods.find((p) => p.ready) ?? pods[0];
      if (!target) continue;
      const n = s.metadata.name;
      lines.get(ns)!.push(`${target.ip} ${n} ${n}.${ns} ${n}.${ns}.svc ${n}.${ns}.svc.cluster.local`);
    }
    for (const r of this.pods.values()) {
      // Rewritten in place (same inode): the file is bind-mounted over /etc/hosts in the pod.
      if (existsSync(`/etc/netns/${r.netns}/hosts`)) writeFileSync(`/etc/netns/${r.netns}/hosts`, `${lines.get(r.pod.metadata.namespace)!.join('\n')}\n`);
    }
  }

  private async probeAndReport(r: Running): Promise<void> {
    const c = r.pod.spec.containers[0]!;
    const running = r.proc !== undefined && r.proc.exitCode === null && r.proc.signalCode === null;
    r.ready = running && (c.readinessProbe ? await probe(c.readinessProbe, r.ip, c.ports ?? []) : true);
    const state = `${running}/${r.ready}/${r.restarts}/${r.initialized}/${r.exitCode}`;
    if (state === r.lastReported) return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const cond = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastTransitionTime: now });
    const done = r.exitCode !== undefined;
    const containerState = done
      ? { terminated: { exitCode: r.exitCode, reason: r.exitCode === 0 ? 'Completed' : 'Error', startedAt: r.startedAt, finishedAt: now } }
      : running ? { running: { startedAt: r.startedAt } } : { waiting: { reason: r.initialized ? 'CrashLoopBackOff' : 'PodInitializing' } };
    try {
      await this.client.mergePatch('Pod', r.pod.metadata.namespace, r.pod.metadata.name, {
        status: {
          phase: done ? (r.exitCode === 0 ? 'Succeeded' : 'Failed') : r.initialized ? 'Running' : 'Pending',
          hostIP: `${this.net}.1`, podIP: r.ip, podIPs: [{ ip: r.ip }], startTime: r.startedAt,
          conditions: [cond('PodScheduled', true), cond('Initialized', r.initialized), cond('ContainersReady', r.ready), cond('Ready', r.ready)],
          containerStatuses: [{
            name: c.name, image: c.image, imageID: '', ready: r.ready, started: running, restartCount: r.restarts,
            state: containerState,
          }],
        },
      }, 'status');
      r.lastReported = state;
    } catch (err) {
      this.events.push(`status of ${r.pod.metadata.name}: ${(err as Error).message}`);
    }
  }

  /** Stops every pod process and removes the pod network. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await Promise.all([...this.pods.values()].map((r) => this.stopPod(r, false)));
    try { this.ip(['link', 'del', this.bridge]); } catch { /* gone */ }
  }
}

function missing(what: string): never { throw new Error(`${what} does not exist yet`); }

function mapValues<T>(o: Record<string, string>, f: (v: string) => T): Record<string, T> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));
}

/** One readiness probe (HTTPS/HTTP GET or TCP) against the pod's IP; true when it passes. */
async function probe(p: Probe, ip: string, ports: { name?: string; containerPort: number }[]): Promise<boolean> {
  const port = (x: number | string) => (typeof x === 'number' ? x : ports.find((q) => q.name === x)?.containerPort ?? Number(x));
  if (p.tcpSocket) {
    return new Promise((resolve) => {
      const s = connect(port(p.tcpSocket!.port), ip, () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
      s.setTimeout(2000, () => { s.destroy(); resolve(false); });
    });
  }
  if (p.httpGet) {
    // HTTP unless the probe says HTTPS, as kubelet; it does not verify probe certificates.
    const target = { host: ip, port: port(p.httpGet.port), path: p.httpGet.path, timeout: 2000 };
    return new Promise((resolve) => {
      const onResponse = (res: IncomingMessage) => { res.resume(); resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400); };
      const req = p.httpGet!.scheme === 'HTTPS' ? httpsRequest({ ...target, rejectUnauthorized: false }, onResponse) : httpRequest(target, onResponse);
      req.on('error', () => resolve(false));
      req.on('timeout', () => { req.destroy(); resolve(false); });
      req.end();
    });
  }
  return true;
}
