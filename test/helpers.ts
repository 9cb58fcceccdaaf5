/**
 * Test harness: a real redis-server per test file, servers started in-process with
 * `startServer`, an HTTPS client with the admin credentials, and real kubectl.
 */
import { after, before } from 'node:test';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { request, Agent } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startServer, type RunningServer, type ServerOptions } from '../src/index.js';

const execFileP = promisify(execFile);

/**
 * Real input nobody on this project wrote (cert-manager and prometheus-operator CRDs), copied into
 * `test/fixtures/crds` with their upstream source, version and licence (test/fixtures/README.md).
 */
export const TESTDATA_CRDS = join(import.meta.dirname, 'fixtures', 'crds');

/** A free loopback TCP port. */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const a = s.address(); s.close(() => res(typeof a === 'object' && a ? a.port : 0)); });
  });
}

/** A redis-server child on a free port with its own data directory. */
export interface TestRedis { url: string; port: number; dir: string; proc: ChildProcess; stop(): Promise<void>; kill9(): void; restart(): Promise<void> }

export async function startRedis(dir = mkdtempSync(join(tmpdir(), 'kcp-redis-'))): Promise<TestRedis> {
  const port = await freePort();
  const launch = async (): Promise<ChildProcess> => {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], { stdio: 'ignore' });
    for (let i = 0; i < 200; i++) {
      const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => undefined);
      try { await r.connect(); await r.ping(); r.disconnect(); return proc; } catch { r.disconnect(); await sleep(25); }
    }
    throw new Error('redis-server did not start');
  };
  const t: TestRedis = {
    url: `redis://127.0.0.1:${port}`, port, dir, proc: await launch(),
    async stop() { if (t.proc.exitCode === null && t.proc.signalCode === null) { t.proc.kill('SIGTERM'); await new Promise((r) => t.proc.once('exit', r)); } },
    kill9() { t.proc.kill('SIGKILL'); },
    async restart() { t.proc = await launch(); },
  };
  return t;
}

export function sleep(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }

/** mulberry32: a small seeded PRNG; returns floats in [0, 1) (the crash and fuzz suites' randomness). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Waits for every promise to settle, then throws the first rejection (an AggregateError when
 * several reject). Unlike `Promise.all`, nothing is still starting when it throws: an `after`
 * hook can stop everything that did start.
 */
export async function settleAll(promises: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(promises)).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length === 1) throw failed[0]!.reason;
  if (failed.length > 1) throw new AggregateError(failed.map((r) => r.reason as unknown), failed.map((r) => String((r.reason as Error)?.message ?? r.reason)).join('; '));
}

/** Polls `fn` every 25 ms until it returns a truthy value, which it returns; fails (naming `what` and the last value) after `ms`. */
export async function eventually<T>(what: string, fn: () => Promise<T>, ms = 8000): Promise<Exclude<T, false | 0 | '' | null | undefined>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const last = await fn();
    if (last) return last as Exclude<T, false | 0 | '' | null | undefined>;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)} after ${ms} ms`);
    await sleep(25);
  }
}

/** Credentials read from the server's PKI directory. */
export interface Creds { ca: string; cert: string; key: string }

export function adminCreds(root: string, which: 'admin' | 'system-admin' = 'admin'): Creds {
  return { ca: readFileSync(join(root, 'ca.crt'), 'utf8'), cert: readFileSync(join(root, `${which}.crt`), 'utf8'), key: readFileSync(join(root, `${which}.key`), 'utf8') };
}

/** A started server with its root directory and helpers. */
export interface TestServer extends RunningServer { root: string; creds: Creds; masters: Creds }

export async function startTestServer(redis: TestRedis, opts: ServerOptions = {}, root = mkdtempSync(join(tmpdir(), 'kcp-root-'))): Promise<TestServer> {
  const s = await startServer({ rootDirectory: root, securePort: 0, redisUrl: redis.url, bookmarkIntervalMs: 500, ...opts });
  return Object.assign(s, { root, creds: adminCreds(root), masters: adminCreds(root, 'system-admin') });
}

/** kubectl bound to one kubeconfig. */
export type Kubectl = (args: string[], opts?: Parameters<typeof kubectl>[2]) => ReturnType<typeof kubectl>;

/**
 * For a test file: starts a Redis and a server before its tests and stops both after them
 * (node:test root hooks). `ready` receives the server, the Redis and kubectl on the server's
 * admin kubeconfig.
 */
export function useTestServer(ready: (srv: TestServer, redis: TestRedis, kc: Kubectl) => void, opts: ServerOptions = {}): void {
  let redis: TestRedis | undefined;
  let srv: TestServer | undefined;
  before(async () => {
    redis = await startRedis();
    const s = srv = await startTestServer(redis, opts);
    ready(s, redis, (args, o) => kubectl(s.kubeconfigPath, args, o));
  });
  after(async () => { await srv?.stop(); await redis?.stop(); });
}

export interface Res { status: number; headers: Record<string, string | string[] | undefined>; body: string; json: any }

/**
 * One HTTPS request. `body` objects are sent as JSON unless contentType says otherwise. A new
 * connection each time, unless `agent` (a keep-alive pool with the same credentials) is given.
 */
export function call(server: { url: string }, creds: Partial<Creds> & { ca: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, agent?: Agent): Promise<Res> {
  const u = new URL(server.url + path);
  const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : typeof body === 'string' ? Buffer.from(body) : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method, ca: creds.ca, cert: creds.cert, key: creds.key, agent: agent ?? false,
      headers: { ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json });
      });
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/**
 * Creates a bare logical cluster (its LogicalCluster object, as system:masters) and waits until
 * the logical cluster controller has made it Ready. Returns the creation response.
 */
export async function createLogicalCluster(server: TestServer, name: string, ms = 5000): Promise<Res> {
  const res = await call(server, server.masters, 'POST', `/clusters/${name}/apis/core.kcp.io/v1alpha1/logicalclusters`, { metadata: { name: 'cluster' } });
  if (res.status !== 201) return res;
  const deadline = Date.now() + ms;
  for (;;) {
    const lc = await call(server, server.masters, 'GET', `/clusters/${name}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`);
    if (lc.json?.status?.phase === 'Ready') return res;
    if (Date.now() > deadline) throw new Error(`logical cluster ${name} not Ready after ${ms} ms: ${lc.body}`);
    await sleep(20);
  }
}

/** Streams a watch; returns collected events and a close function. */
export function watch(server: { url: string }, creds: Creds, path: string): { events: any[]; status: Promise<number>; close(): void; waitFor(n: number, ms?: number): Promise<any[]> } {
  const u = new URL(server.url + path);
  const events: any[] = [];
  let buf = '';
  let statusResolve!: (n: number) => void;
  const status = new Promise<number>((r) => { statusResolve = r; });
  const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', ca: creds.ca, cert: creds.cert, key: creds.key, agent: new Agent({ keepAlive: false }) }, (res) => {
    statusResolve(res.statusCode ?? 0);
    res.on('data', (c) => {
      buf += c.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1); if (line.trim()) events.push(JSON.parse(line)); }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end();
  return {
    events, status,
    close() { req.destroy(); },
    async waitFor(n: number, ms = 5000) {
      const end = Date.now() + ms;
      while (events.length < n && Date.now() < end) await sleep(10);
      return events;
    },
  };
}

/** Runs kubectl (default: the one on PATH) with a kubeconfig and a private cache dir. */
export async function kubectl(kubeconfig: string, args: string[], opts: { bin?: string; input?: string; allowFail?: boolean } = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  const cache = mkdtempSync(join(tmpdir(), 'kubectl-cache-'));
  try {
    const child = execFileP(opts.bin ?? 'kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cache, ...args], { env: { ...process.env, HOME: cache }, timeout: 60_000 });
    if (opts.input !== undefined) { child.child.stdin!.write(opts.input); child.child.stdin!.end(); }
    const r = await child;
    return { stdout: r.stdout, stderr: r.stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; code?: number };
    if (!opts.allowFail) throw new Error(`kubectl ${args.join(' ')} failed: ${err.stderr ?? e}`);
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '', code: typeof err.code === 'number' ? err.code : 1 };
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

/**
 * Path of a versioned kubectl (`kubectl.1.27`, …): on PATH, else beside the real binary of the
 * `kubectl` on PATH (SDK installs ship the versioned ones there). Throws when absent: tests that
 * need it fail rather than skip.
 */
export function versionedKubectl(v: string): string {
  const name = `kubectl.${v}`;
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const dir of dirs) if (existsSync(join(dir, name))) return join(dir, name);
  for (const dir of dirs) {
    const k = join(dir, 'kubectl');
    if (!existsSync(k)) continue;
    const beside = join(dirname(realpathSync(k)), name);
    if (existsSync(beside)) return beside;
  }
  throw new Error(`${name} is not installed (looked on PATH and beside kubectl)`);
}

/** A `kcp-ts` process run as a user runs it: the built `bin/kcp-ts` (npm test builds first). */
export interface CliProcess {
  proc: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves to the server URL once it printed "ready", rejects if it exits first. */
  ready: Promise<string>;
  /** Resolves to the exit code (or the signal's name) once it exited. */
  exited: Promise<number | string>;
}

/** Path of the shipped `kcp-ts` executable. */
export const KCP_TS_BIN = join(import.meta.dirname, '..', 'bin', 'kcp-ts');

/**
 * Runs `kcp-ts <args>`. With `detached`, it leads its own process group, so a test can signal the
 * group as a terminal's Ctrl-C does (`process.kill(-proc.pid, 'SIGINT')`).
 */
export function spawnCli(args: string[], opts: { cwd?: string; detached?: boolean; env?: NodeJS.ProcessEnv } = {}): CliProcess {
  const proc = spawn(process.execPath, [KCP_TS_BIN, ...args], { cwd: opts.cwd, env: opts.env ?? process.env, detached: opts.detached ?? false, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => { out += String(d); });
  proc.stderr!.on('data', (d) => { out += String(d); });
  const exited = new Promise<number | string>((r) => proc.once('exit', (code, signal) => r(code ?? signal ?? -1)));
  const ready = new Promise<string>((resolve, reject) => {
    const t = setInterval(() => {
      const m = /ready in \d+ ms at (https:\/\/\S+)/.exec(out);
      if (m) { clearInterval(t); resolve(m[1]!); }
    }, 20);
    void exited.then((code) => { clearInterval(t); reject(new Error(`kcp-ts ${args.join(' ')} exited (${code}) before it was ready: ${out}`)); });
  });
  ready.catch(() => undefined);
  return { proc, output: () => out, ready, exited };
}

/** Stops a `kcp-ts` process with SIGTERM (if it still runs) and resolves to its exit code. */
export async function stopCli(cli: CliProcess): Promise<number | string> {
  if (cli.proc.exitCode === null && cli.proc.signalCode === null) cli.proc.kill('SIGTERM');
  return cli.exited;
}

export const CM = (name: string, data: Record<string, string> = { a: '1' }, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data });

/**
 * A directory of kubectl plugin executables (`kubectl-ws`, …) that run the plugins' TypeScript
 * entries (paths relative to the repository) with this Node and tsx, so plugin tests exercise the
 * sources (no build needed).
 */
export function pluginBinDir(plugins: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'kubectl-plugins-'));
  const tsx = import.meta.resolve('tsx');
  const q = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;
  for (const [name, entry] of Object.entries(plugins)) {
    writeFileSync(join(d, name), `#!/bin/sh\nexec ${q(process.execPath)} --import ${q(tsx)} ${q(join(import.meta.dirname, '..', entry))} "$@"\n`);
    chmodSync(join(d, name), 0o755);
  }
  return d;
}

/** What a command printed and its exit code. */
export interface Run { stdout: string; stderr: string; code: number }

/** Runs the real kubectl with `binDir` first on PATH and `env` (HOME, KUBECONFIG, …) added. */
export function kubectlWithPlugins(binDir: string, env: Record<string, string>, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile('kubectl', args, { env: { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}`, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ stdout, stderr, code });
    });
  });
}

/**
 * Creates workspace `name` under root as the server's admin and waits until it is Ready; resolves
 * to its logical cluster name. Throws when the create is refused or it is not Ready within `ms`.
 */
export async function createWorkspace(server: Pick<TestServer, 'url' | 'creds'>, name: string, ms = 15_000): Promise<string> {
  const res = await call(server, server.creds, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } });
  if (res.status !== 201) throw new Error(`create workspace ${name}: ${res.status} ${res.body}`);
  const ws = await eventually(`workspace ${name} Ready`, async () => {
    const w = (await call(server, server.creds, 'GET', `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/${name}`)).json;
    return w?.status?.phase === 'Ready' && w;
  }, ms);
  return String(ws.spec.cluster);
}

/**
 * A workspace for admission policy tests: created Ready, with a CRD (served once this resolves)
 * and the namespaces `test` and `prod` labelled `environment: test|production`, as the Kubernetes
 * docs' policy examples expect.
 */
export async function policyWorkspace(server: TestServer, name: string, crd: { spec: { group: string; names: { plural: string }; versions: { name: string }[] } }): Promise<void> {
  await createWorkspace(server, name);
  const admin = (method: string, path: string, body?: unknown) => call(server, server.creds, method, path, body);
  const created = await admin('POST', `/clusters/root:${name}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd);
  if (created.status !== 201) throw new Error(`create CRD in ${name}: ${created.status} ${created.body}`);
  const { group, names, versions } = crd.spec;
  await eventually(`${names.plural} served`, async () => (await admin('GET', `/clusters/root:${name}/apis/${group}/${versions[0]!.name}/${names.plural}`)).status === 200);
  for (const [ns, env] of [['test', 'test'], ['prod', 'production']]) {
    await admin('POST', `/clusters/root:${name}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { environment: env } } });
  }
}


/** The ConfigMap the root CA publisher keeps in every namespace (src/controllers/rootcacertpublisher). */
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';

/** List items without the root CA publisher's ConfigMap: what a test wrote itself. */
export function withoutRootCA<T extends { metadata: { name?: string } }>(items: T[]): T[] {
  return items.filter((i) => i.metadata.name !== ROOT_CA_CONFIGMAP);
}

/** Waits until a namespace holds its kube-root-ca.crt, so that lists and quota usage that count it are stable. */
export async function waitForRootCA(server: { url: string }, creds: Creds, cluster: string, namespace: string, ms = 5000): Promise<void> {
  await eventually(`kube-root-ca.crt in ${cluster}/${namespace}`, async () => (await call(server, creds, 'GET', `/clusters/${cluster}/api/v1/namespaces/${namespace}/configmaps/${ROOT_CA_CONFIGMAP}`)).status === 200, ms);
}
