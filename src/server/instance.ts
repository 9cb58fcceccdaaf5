/**
 * A whole kcp-ts instance in one process for local use (`kcp-ts start --shards N`): the root
 * shard, N−1 more shards and a front-proxy, sharing one PKI, each shard with its own embedded
 * Redis. The admin kubeconfig points at the front-proxy.
 *
 * Layout of the root directory: the PKI, `admin.kubeconfig` and the root shard's data at its top,
 * shard `shard-<i>` under `shards/shard-<i>/` (its own lock and Redis).
 */
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { startFrontProxy, type RunningFrontProxy } from '../proxy/frontproxy.js';
import { startServer, writeAdminKubeconfig, type RunningServer, type ServerOptions } from './shard.js';
import { ensurePki } from '../pki/store.js';
import { loadTokenFile } from '../auth/authn.js';
import type { ShardDirectory } from '../shards/directory.js';
import { startTrace } from './starttrace.js';

/** Options of {@link startInstance}. */
export interface InstanceOptions extends Pick<ServerOptions, 'rootDirectory' | 'bindAddress' | 'tokenAuthFile' | 'authentication' | 'logger' | 'signal' | 'http2MaxStreamsPerConnection'> {
  /** Shards in all, the root shard included (≥ 1). */
  shards: number;
  /** Port of the front-proxy; shards listen on the following ports (0: all pick free ports). Default 6443. */
  securePort?: number;
}

/** A running instance. */
export interface RunningInstance {
  /** The front-proxy's URL. */
  url: string;
  kubeconfigPath: string;
  shards: RunningServer[];
  proxy: RunningFrontProxy;
  stop(): Promise<void>;
}

/** How long {@link startInstance} waits for every shard to be registered and known everywhere (ms). */
export const INSTANCE_READY_TIMEOUT_MS = 120_000;

/**
 * Why an instance is not ready yet, or undefined when it is: every shard of `names` is registered
 * (its core.kcp.io Shard object in root) and its watches are connected, as the front-proxy sees
 * it and as every shard sees it — the shard of a parent workspace schedules its children among
 * the shards it knows and reaches, so a workspace created the moment this says ready can go to
 * any of them.
 */
export function instanceNotReady(names: readonly string[], proxy: Pick<ShardDirectory, 'get' | 'reachable'> | undefined, shards: readonly { name: string; shards: Pick<ShardDirectory, 'get' | 'reachable'> }[]): string | undefined {
  if (!proxy) return 'the front-proxy is not running yet';
  for (const [who, directory] of [['the front-proxy', proxy], ...shards.map((s) => [`shard ${s.name}`, s.shards] as const)] as const) {
    for (const n of names) {
      if (!directory.get(n)) return `${who} does not know shard ${n} yet (not registered, or its Shard object not seen)`;
      if (!directory.reachable(n)) return `${who} has not connected to shard ${n} yet`;
    }
  }
  return undefined;
}

/**
 * Starts the instance; resolves once it is ready ({@link instanceNotReady}): every shard is
 * registered and known to the front-proxy and to every shard. The front-proxy's `/readyz` says
 * the same (check `shards-registered`). On failure (or abort) stops what it started and rejects
 * with the first error.
 * @throws RangeError for fewer than one shard
 * @throws Error when the instance is not ready within {@link INSTANCE_READY_TIMEOUT_MS}, naming what it waits for
 */
export async function startInstance(opts: InstanceOptions): Promise<RunningInstance> {
  if (!Number.isInteger(opts.shards) || opts.shards < 1) throw new RangeError(`--shards must be a positive integer, got ${opts.shards}`);
  const root = resolve(opts.rootDirectory ?? '.kcp');
  // Every port is known before anything starts: shards write the front-proxy's URL into their
  // workspaces' spec.URL (their external URL).
  const requested = opts.securePort ?? 6443;
  const ports = requested === 0 ? await freePorts(opts.shards + 1, opts.bindAddress ?? '127.0.0.1') : Array.from({ length: opts.shards + 1 }, (_, i) => requested + i);
  const base = ports[0];
  const portOf = (i: number) => ports[i + 1];
  const host = opts.bindAddress && opts.bindAddress !== '0.0.0.0' && opts.bindAddress !== '::' ? opts.bindAddress : (opts.bindAddress ? 'localhost' : '127.0.0.1');
  const proxyURL = `https://${host.includes(':') ? `[${host}]` : host}:${base}`;
  const shards: RunningServer[] = [];
  let proxy: RunningFrontProxy | undefined;
  const stopAll = async () => {
    await proxy?.stop().catch(() => undefined);
    for (const s of shards.reverse()) await s.stop().catch(() => undefined);
  };
  try {
    const common = { bindAddress: opts.bindAddress, tokenAuthFile: opts.tokenAuthFile, authentication: opts.authentication, logger: opts.logger, signal: opts.signal, pkiDirectory: root, shardExternalURL: proxyURL, http2MaxStreamsPerConnection: opts.http2MaxStreamsPerConnection };
    const rootShard = await startServer({ ...common, rootDirectory: root, securePort: portOf(0) });
    shards.push(rootShard);
    const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
    const rootConnection = { url: rootShard.url, ca: pki.ca.certPem, cert: pki.systemAdmin.certPem, key: pki.systemAdmin.keyPem };
    const names = Array.from({ length: opts.shards }, (_, i) => (i === 0 ? 'root' : `shard-${i}`));
    const notReady = () => instanceNotReady(names, proxy?.directory, shards.map((s, i) => ({ name: names[i]!, shards: s.shards })));
    // The other shards need the root shard (to register in), not each other: they start
    // together, their redis-servers, queue threads and connections overlapping. Settled all, so
    // that what did start is stopped when one fails. The front-proxy comes after them: it waits
    // for its first list of every registered shard, and on a restart the Shard objects are there
    // before their shards listen (its watches would back off).
    const otherStarts = await Promise.allSettled(names.slice(1).map((name, k) => startServer({
      ...common, rootDirectory: join(root, 'shards', name), shardName: name, securePort: portOf(k + 1), rootShard: rootConnection,
    })));
    for (const r of otherStarts) if (r.status === 'fulfilled') shards.push(r.value);
    const failed = otherStarts.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    startTrace('instance: every shard started');
    // Every shard listens now: watches of one another that failed while they started need not
    // wait out their backoff (up to seconds by now).
    for (const s of shards) s.shards.retryNow();
    const frontProxy = await startFrontProxy({
      readyChecks: [{ name: 'shards-registered', check: notReady }],
      securePort: base, bindAddress: opts.bindAddress,
      servingCert: pki.serving.certPem, servingKey: pki.serving.keyPem, clientCA: pki.ca.certPem,
      rootShard: rootConnection, proxyClientCert: pki.frontProxyClient.certPem, proxyClientKey: pki.frontProxyClient.keyPem,
      tokens: opts.tokenAuthFile ? loadTokenFile(opts.tokenAuthFile) : undefined, http2MaxStreamsPerConnection: opts.http2MaxStreamsPerConnection,
    });
    proxy = frontProxy;
    startTrace('instance: front-proxy started');
    // Until every shard is known everywhere, a new workspace could be placed where the proxy
    // cannot route, or not on every shard asked for.
    const deadline = Date.now() + INSTANCE_READY_TIMEOUT_MS;
    for (let why = notReady(); why !== undefined; why = notReady()) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (Date.now() > deadline) throw new Error(`the instance did not become ready within ${INSTANCE_READY_TIMEOUT_MS / 1000} s: ${why}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    startTrace('instance: every shard registered and known everywhere');
    const kubeconfigPath = writeAdminKubeconfig(root, frontProxy.url, pki);
    return { url: frontProxy.url, kubeconfigPath, shards, proxy: frontProxy, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** `n` distinct free TCP ports on `host`, held open together while they are found so none repeats. */
async function freePorts(n: number, host: string): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, host, () => res(s));
  })));
  const ports = servers.map((s) => { const a = s.address(); return typeof a === 'object' && a ? a.port : 0; });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
