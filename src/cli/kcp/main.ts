/**
 * The `kubectl kcp` plugin (npm bin `kubectl-kcp`), kcp's umbrella plugin (kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli/cmd/kubectl-kcp`), with the commands this distribution has:
 *
 * ```
 * kubectl kcp bind apiexport <path>:<export> [--name <binding>] [--timeout 30s]
 *     [--accept-permission-claim resource.group ...] [--reject-permission-claim resource.group ...]
 *     [--accept-all-permission-claims | --reject-all-permission-claims]
 * kubectl kcp workload sync <synctarget> --syncer-image IMAGE -o syncer.yaml [--resources r.g,...]
 *     [--labels k=v] [--apiexports path:export] [-n namespace] [--kcp-namespace ns] [--replicas 0|1] [--qps N] [--burst N]
 * kubectl kcp workspace|ws ...      the `kubectl ws` plugin
 * ```
 */
import { kubectlWs, processIO, type WsIO, type WsOptions } from '../kubectl-ws.js';
import { KcpClient } from '../ws/client.js';
import { clientConfig, loadConfig, loadingRules } from '../ws/kubeconfig.js';
import { CONNECTION_HELP, connectionOverrides } from '../pflag.js';
import { parseClusterURL } from '../ws/paths.js';
import { BIND_FLAGS, CONNECTION_FLAGS, UsageError, parseFlags, type FlagSpec } from './args.js';
import { BindError, bindOptions, runBind } from './bind.js';
import { SYNC_FLAGS, runSync, syncOptions } from './workload.js';

/** Options of {@link kubectlKcp} beyond the IO. */
export interface KcpOptions {
  /** Interval between reads of the APIBinding while waiting for it to be bound (kcp: 500 ms). */
  bindPollMs?: number;
  /** Options passed to the `ws` plugin for `kubectl kcp ws …`. */
  ws?: WsOptions;
}

/** The sub-commands that run the `kubectl ws` plugin. */
const WORKSPACE_COMMANDS = new Set(['workspace', 'ws', 'workspaces']);

/** Index of the first positional argument of `argv`, knowing which flags take a value. */
function firstPositional(argv: string[], specs: FlagSpec[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (a.startsWith('-') && a.length > 1) {
      const long = a.startsWith('--');
      const name = long ? a.slice(2).split('=')[0]! : a[1]!;
      const spec = specs.find((s) => (long ? s.name === name : s.short === name));
      if (spec && spec.type !== 'bool' && (long ? !a.includes('=') : a.length === 2)) i++;
      continue;
    }
    return i;
  }
  return -1;
}

/**
 * Runs the plugin with `argv` (the arguments after `kubectl kcp`).
 *
 * @returns The process exit code: 0 on success (help included), 1 on any error, printed as one
 *   `Error: …` line on stderr as cobra prints the errors of kcp's commands.
 */
export async function kubectlKcp(argv: string[], io: WsIO = processIO(), opts: KcpOptions = {}): Promise<number> {
  const specs = [...CONNECTION_FLAGS, ...BIND_FLAGS, ...SYNC_FLAGS];
  const first = firstPositional(argv, specs);
  if (first >= 0 && WORKSPACE_COMMANDS.has(argv[first]!)) {
    return kubectlWs([...argv.slice(0, first), ...argv.slice(first + 1)], io, opts.ws);
  }
  try {
    const flags = parseFlags(argv, specs);
    const help = flags.bools['help'] === true;
    const [command, sub, ...rest] = flags.args;
    if (command === undefined) { io.stdout(ROOT_USAGE); return 0; }
    // One parse for every command; a command's flags are not another's (pflag: unknown flag).
    const foreign = command === 'workload' ? BIND_FLAGS : SYNC_FLAGS;
    const given = new Set([...Object.keys(flags.strings), ...Object.keys(flags.bools), ...Object.keys(flags.slices), ...Object.keys(flags.durations)]);
    const stray = foreign.find((f) => given.has(f.name) && !CONNECTION_FLAGS.some((c) => c.name === f.name));
    if (stray) throw new UsageError(`unknown flag: --${stray.name}`);
    if (command === 'workload') {
      if (sub === undefined) { io.stdout(WORKLOAD_USAGE); return 0; }
      if (sub !== 'sync') throw new BindError(`unknown command ${JSON.stringify(sub)} for "kcp workload"`);
      if (help) { io.stdout(WORKLOAD_SYNC_USAGE); return 0; }
      const o = syncOptions(flags, rest);
      const cfg = clientConfig(loadConfig(loadingRules(flags.strings['kubeconfig'], io.env)).config, { ...connectionOverrides(flags), namespace: undefined });
      const current = parseClusterURL(cfg.server);
      if (!current) throw new BindError(`current URL ${JSON.stringify(cfg.server)} does not point to workspace`);
      await runSync(o, new KcpClient(cfg, 'kubectl-kcp'), cfg, current.path, (t) => io.stdout(t), (t) => io.stderr(t));
      return 0;
    }
    if (command !== 'bind') throw new BindError(`unknown command ${JSON.stringify(command)} for "kcp"`);
    if (sub === undefined) { io.stdout(BIND_USAGE); return 0; }
    if (sub !== 'apiexport') throw new BindError(`unknown command ${JSON.stringify(sub)} for "kcp bind"`);
    if (help) { io.stdout(BIND_APIEXPORT_USAGE); return 0; }

    const o = bindOptions({ ...flags, args: rest });
    const cfg = clientConfig(loadConfig(loadingRules(flags.strings['kubeconfig'], io.env)).config, connectionOverrides(flags));
    const current = parseClusterURL(cfg.server);
    if (!current) throw new BindError(`current URL ${JSON.stringify(cfg.server)} does not point to workspace`);
    await runBind(o, new KcpClient(cfg, 'kubectl-kcp'), current.path, (t) => io.stdout(t), opts.bindPollMs);
    return 0;
  } catch (err) {
    io.stderr(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}


const ROOT_USAGE = `KCP commands for kubectl.

Usage:
  kubectl kcp [command]

Commands:
  bind apiexport <path>:<export>   Bind to an APIExport in the current workspace
  workload sync <synctarget>       Create a SyncTarget and the manifest of its syncer
  workspace (alias: ws)            Manages kcp workspaces (same as 'kubectl ws')

Use "kubectl kcp <command> --help" for more information about a command.
`;

const BIND_USAGE = `Bind different types into current workspace.

Usage:
  kubectl kcp bind [command]

Commands:
  apiexport <workspace_path:apiexport-name>   Bind to an APIExport

`;

const BIND_APIEXPORT_USAGE = `Bind to an APIExport: create an APIBinding in the current workspace and wait until it is bound.

Usage:
  kubectl kcp bind apiexport <workspace_path:apiexport-name> [flags]

Examples:
  # Create an APIBinding named "my-binding" that binds to the APIExport "my-export" in the "root:my-service" workspace.
  kubectl kcp bind apiexport root:my-service:my-export --name my-binding

  # The same, accepting permission claims.
  kubectl kcp bind apiexport root:my-service:my-export --name my-binding --accept-permission-claim secrets.core,configmaps.core

  # The same, rejecting permission claims.
  kubectl kcp bind apiexport root:my-service:my-export --name my-binding --reject-permission-claim secrets.core,configmaps.core

Flags:
      --name string                       Name of the APIBinding to create (default: the APIExport's name)
      --timeout duration                  Duration to wait for the APIBinding to be bound (default 30s)
      --accept-permission-claim strings   Accepted permission claims, resource.group (group "core" for the core group)
      --reject-permission-claim strings   Rejected permission claims, resource.group
      --accept-all-permission-claims      Accept all permission claims of the APIExport
      --reject-all-permission-claims      Reject all permission claims of the APIExport

${CONNECTION_HELP}`;

const WORKLOAD_USAGE = `Manages workloads of kcp's transparent multi-cluster.

Usage:
  kubectl kcp workload [command]

Commands:
  sync <synctarget-name>   Create a SyncTarget and the manifest of its syncer for a physical cluster

`;

const WORKLOAD_SYNC_USAGE = `Create a SyncTarget in the current workspace, the syncer's service account and RBAC, and write the
manifest that installs the syncer in a physical cluster.

Usage:
  kubectl kcp workload sync <synctarget-name> --syncer-image <image> -o <output-file> [flags]

Examples:
  # Write the manifest of the syncer of SyncTarget "west", syncing deployments too.
  kubectl kcp workload sync west --syncer-image ghcr.io/kcp-ts/kcp-ts:latest -o syncer.yaml --resources deployments.apps
  KUBECONFIG=<pcluster-config> kubectl apply -f syncer.yaml

Flags:
      --syncer-image string                         The syncer image to use in the syncer's deployment YAML (the kcp-ts image)
  -o, --output-file string                          The manifest file to be created and applied to the physical cluster. Use - for stdout.
      --resources strings                           Resources to synchronize with kcp (resource.group)
      --apiexports strings                          APIExports to be supported by the syncer (<workspace path>:<export>)
      --labels strings                              Labels to apply on the SyncTarget created in kcp (key=value)
  -n, --namespace string                            The namespace to create the syncer in the physical cluster (default "kcp-syncer-<synctarget-name>-<uid hash>")
      --kcp-namespace string                        The kcp namespace to create the service account in (default "default")
      --replicas int                                Number of replicas of the syncer deployment, 0 or 1 (default 1)
      --qps float                                   QPS to use when talking to API servers (default 20)
      --burst int                                   Burst to use when talking to API servers (default 30)
      --api-import-poll-interval duration           Polling interval for API import (default 1m0s)
      --downstream-namespace-clean-delay duration   Time to wait before deleting a downstream namespace (default 30s)
      --feature-gates string                        Feature gates of the syncer

${CONNECTION_HELP}`;
