/**
 * `kcp-ts syncer [flags]`: runs the syncer of one SyncTarget (syncer.ts) with kcp's flags
 * (contrib-tmc cmd/syncer options): `--from-kubeconfig` (kcp, the kubeconfig `kubectl kcp
 * workload sync` puts in the syncer's Secret), `--from-cluster`, `--sync-target-name`,
 * `--sync-target-uid`, `--resources` (repeatable, comma-separated), `--kubeconfig` (the physical
 * cluster; in-cluster service account when not given), `--qps`, `--burst`,
 * `--api-import-poll-interval` (how often the schemas of `--resources` are imported again, API
 * negotiation's `importAPIResources`; default 1 m). kcp's `--downstream-namespace-clean-delay`,
 * `--dns-image` and `--feature-gates` are accepted (the manifest kcp's format writes passes them)
 * and have no effect.
 * Exit codes: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 on usage errors.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Connection } from '../client/rest.js';
import { clientConfig, loadConfig, loadingRules } from '../cli/ws/kubeconfig.js';
import type { ShutdownSignals } from '../cli/signals.js';
import { RestClient } from '../client/rest.js';
import { importAPIResources } from '../apinegotiation/index.js';
import { parseDuration } from '../cli/pflag.js';
import { Syncer } from './syncer.js';

const USAGE = `Usage: kcp-ts syncer [flags]

Synchronizes the workloads scheduled to a SyncTarget between kcp and a physical cluster.

Flags:
      --from-kubeconfig string       kubeconfig of kcp (the syncer's service account)
      --from-cluster string          workspace path or logical cluster of the SyncTarget
      --sync-target-name string      name of the SyncTarget
      --sync-target-uid string       uid of the SyncTarget
      --resources strings            resources to sync (resource.group), when the SyncTarget names none
      --kubeconfig string            kubeconfig of the physical cluster (default: in-cluster service account)
      --qps float                    requests per second to each side (default 20)
      --burst int                    burst of requests to each side (default 30)
      --heartbeat-interval duration  interval of SyncTarget heartbeats (default 20s)
      --api-import-poll-interval duration
                                     interval of the API imports of --resources (default 1m0s)
`;

/** The connection of a kubeconfig's current context (inline data or files; token or client certificate). @throws Error for a kubeconfig it cannot use */
export function connectionFromKubeconfigFile(path: string): Connection {
  const cfg = clientConfig(loadConfig(loadingRules(path, {})).config, {});
  const c = cfg.cluster; const u = cfg.user;
  const data = (inline: string | undefined, file: string | undefined): string | undefined =>
    inline ? Buffer.from(inline.replace(/\s+/g, ''), 'base64').toString('utf8') : file ? readFileSync(file, 'utf8') : undefined;
  const token = u.token ?? (u.tokenFile ? readFileSync(u.tokenFile, 'utf8').trim() : undefined);
  const url = new URL(cfg.server);
  return {
    url: url.origin, ca: data(c['certificate-authority-data'], c['certificate-authority']) ?? '',
    cert: data(u['client-certificate-data'], u['client-certificate']), key: data(u['client-key-data'], u['client-key']),
    ...(token ? { token } : {}), ...(c['tls-server-name'] ? { serverName: c['tls-server-name'] } : {}),
  };
}

/** The in-cluster connection of a pod (client-go `rest.InClusterConfig`). @throws Error outside a pod */
export function inClusterConnection(env: NodeJS.ProcessEnv = process.env): Connection {
  const host = env.KUBERNETES_SERVICE_HOST; const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new Error('unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined (or give --kubeconfig)');
  const dir = '/var/run/secrets/kubernetes.io/serviceaccount';
  return { url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, ca: readFileSync(`${dir}/ca.crt`, 'utf8'), token: readFileSync(`${dir}/token`, 'utf8').trim() };
}

/** A Go duration flag (`20s`, `1m0s`, `500ms`) in ms; undefined when malformed or not positive. */
function durationMs(s: string): number | undefined {
  const ms = parseDuration(s);
  return ms !== undefined && ms > 0 ? ms : undefined;
}

/** Runs `kcp-ts syncer` with `argv` (after `syncer`) until a shutdown signal; resolves to the exit code. */
export async function syncerMain(argv: string[], shutdown: ShutdownSignals): Promise<number> {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: {
        'from-kubeconfig': { type: 'string' }, 'from-cluster': { type: 'string' }, 'sync-target-name': { type: 'string' }, 'sync-target-uid': { type: 'string' },
        resources: { type: 'string', multiple: true }, kubeconfig: { type: 'string' }, qps: { type: 'string' }, burst: { type: 'string' },
        'heartbeat-interval': { type: 'string' }, 'api-import-poll-interval': { type: 'string' }, 'downstream-namespace-clean-delay': { type: 'string' },
        'dns-image': { type: 'string' }, 'feature-gates': { type: 'string' }, help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts syncer: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(USAGE); return 0; }
  const str = (k: string) => (typeof values[k] === 'string' ? values[k] as string : undefined);
  const missing = ['from-kubeconfig', 'from-cluster', 'sync-target-name', 'sync-target-uid'].filter((k) => !str(k));
  const qps = str('qps') === undefined ? 20 : Number(str('qps'));
  const burst = str('burst') === undefined ? 30 : Number(str('burst'));
  const heartbeat = str('heartbeat-interval') === undefined ? 20_000 : durationMs(str('heartbeat-interval')!);
  const usage = missing.length ? `missing ${missing.map((k) => `--${k}`).join(', ')}`
    : !(qps > 0) ? `invalid --qps ${JSON.stringify(str('qps'))}` : !(Number.isInteger(burst) && burst > 0) ? `invalid --burst ${JSON.stringify(str('burst'))}`
      : !heartbeat ? `invalid --heartbeat-interval ${JSON.stringify(str('heartbeat-interval'))}` : '';
  if (usage) { process.stderr.write(`kcp-ts syncer: ${usage}\n\n${USAGE}`); return 2; }
  const resources = ((values.resources ?? []) as string[]).flatMap((r) => r.split(',')).map((r) => r.trim()).filter(Boolean);
  const pollMs = str('api-import-poll-interval') === undefined ? 60_000 : durationMs(str('api-import-poll-interval')!);
  if (!pollMs) { process.stderr.write(`kcp-ts syncer: invalid --api-import-poll-interval ${JSON.stringify(str('api-import-poll-interval'))}\n\n${USAGE}`); return 2; }
  let syncer: Syncer;
  let importer: NodeJS.Timeout | undefined;
  const clients: RestClient[] = [];
  try {
    const upstream = connectionFromKubeconfigFile(str('from-kubeconfig')!);
    const downstream = str('kubeconfig') ? connectionFromKubeconfigFile(str('kubeconfig')!) : inClusterConnection();
    const fromCluster = str('from-cluster')!; const name = str('sync-target-name')!;
    syncer = new Syncer({
      upstream, downstream, fromCluster, syncTargetName: name, syncTargetUID: str('sync-target-uid')!,
      resources, qps, burst, heartbeatIntervalMs: heartbeat,
      // API negotiation (src/apinegotiation): the schemas of --resources as APIResourceImports, at
      // start and every --api-import-poll-interval, as kcp's syncer API importer.
      negotiate: async (rs) => {
        if (!rs.length) return;
        const up = new RestClient(upstream, 4); const down = new RestClient(downstream, 4);
        clients.push(up, down);
        const run = () => importAPIResources({ client: up, path: `/clusters/${fromCluster}` }, { client: down }, name, rs)
          .then((r) => { for (const e of r.errors) process.stderr.write(`${new Date().toISOString()} api import ${e.resource}: ${e.message}\n`); })
          .catch((err: Error) => process.stderr.write(`${new Date().toISOString()} api import: ${err.message}\n`));
        await run();
        importer = setInterval(() => { void run(); }, pollMs);
        importer.unref();
      },
    });
    await syncer.start();
  } catch (err) {
    process.stderr.write(`kcp-ts syncer: ${(err as Error).message}\n`);
    return 1;
  }
  await new Promise<void>((r) => shutdown.onShutdown(r));
  if (importer) clearInterval(importer);
  await syncer.stop();
  for (const c of clients) c.close();
  return 0;
}
