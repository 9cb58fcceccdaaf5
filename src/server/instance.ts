/**
 * A whole kcp-ts instance in one process for local use (`kcp-ts start --shards N`): the root
 * shard, N−1 more shards and a front-proxy, sharing one PKI, each shard with its own embedded
 * Redis. The admin kubeconfig points at the front-proxy.
 *
 * Layout of the root directory: the PKI, `admin.kubeconfig` and the root shard's data at its top,
 * shard `shard-<i>` under `shards/shard-<i>/` (its own lock and Redis).
 */
import { join, resolve } from 'node:path';
import { startFrontProxy, type RunningFrontProxy } from '../proxy/frontproxy.js';
import { startServer, writeAdminKubeconfig, type RunningServer, type ServerOptions } from './shard.js';
import { ensurePki } from '../pki/store.js';
import { loadTokenFile } from '../auth/authn.js';

/** Options of {@link startInstance}. */
export interface InstanceOptions extends Pick<ServerOptions, 'rootDirectory' | 'bindAddress' | 'tokenAuthFile' | 'logger' | 'signal'> {
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

/**
 * Starts the instance; resolves once every shard is ready and the front-proxy has indexed them.
 * On failure (or abort) stops what it started and rejects with the first error.
 * @throws RangeError for fewer than one shard
 */
export async function startInstance(opts: InstanceOptions): Promise<RunningInstance> {
  if (!Number.isInteger(opts.shards) || opts.shards < 1) throw new RangeError(`--shards must be a positive integer, got ${opts.shards}`);
  const root = resolve(opts.rootDirectory ?? '.kcp');
  const base = opts.securePort ?? 6443;
  const portOf = (i: number) => (base === 0 ? 0 : base + 1 + i);
  const shards: RunningServer[] = [];
  let proxy: RunningFrontProxy | undefined;
  const stopAll = async () => {
    await proxy?.stop().catch(() => undefined);
    for (const s of shards.reverse()) await s.stop().catch(() => undefined);
  };
  try {
    const common = { bindAddress: opts.bindAddress, tokenAuthFile: opts.tokenAuthFile, logger: opts.logger, signal: opts.signal, pkiDirectory: root };
    const rootShard = await startServer({ ...common, rootDirectory: root, securePort: portOf(0) });
    shards.push(rootShard);
    const pki = await ensurePki(root, { hostnames: [], ipAddresses: [] });
    const rootConnection = { url: rootShard.url, ca: pki.ca.certPem, cert: pki.systemAdmin.certPem, key: pki.systemAdmin.keyPem };
    for (let i = 1; i < opts.shards; i++) {
      shards.push(await startServer({ ...common, rootDirectory: join(root, 'shards', `shard-${i}`), shardName: `shard-${i}`, securePort: portOf(i), rootShard: rootConnection }));
    }
    proxy = await startFrontProxy({
      securePort: base, bindAddress: opts.bindAddress,
      servingCert: pki.serving.certPem, servingKey: pki.serving.keyPem, clientCA: pki.ca.certPem,
      rootShard: rootConnection, proxyClientCert: pki.frontProxyClient.certPem, proxyClientKey: pki.frontProxyClient.keyPem,
      tokens: opts.tokenAuthFile ? loadTokenFile(opts.tokenAuthFile) : undefined,
    });
    // Until every shard is in the index, a new workspace could be placed where the proxy cannot route.
    const deadline = Date.now() + 10_000;
    while (shards.some((s, i) => i > 0 && !proxy!.directory.get(`shard-${i}`)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const kubeconfigPath = writeAdminKubeconfig(root, proxy.url, pki);
    return { url: proxy.url, kubeconfigPath, shards, proxy, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
