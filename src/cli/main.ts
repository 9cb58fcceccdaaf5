/**
 * `kcp-ts` command line. `kcp-ts start [flags]` runs a shard (flag names as kcp's).
 * Exit codes: 0 after SIGTERM/SIGINT, 1 on start-up failure, 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import { startServer, type ServerOptions } from '../server/shard.js';
import { ShutdownSignals } from './signals.js';

const USAGE = `Usage: kcp-ts start [flags]

Runs a kcp-ts shard: a multi-tenant, Kubernetes-compatible API server.

Flags:
  --root-directory DIR      PKI, kubeconfig and embedded Redis data (default ".kcp")
  --secure-port PORT        HTTPS port (default 6443)
  --bind-address ADDR       listen address (default 127.0.0.1)
  --external-hostname HOST  host name clients use (added to the serving certificate)
  --shard-name NAME         shard name (default "root")
  --redis-url URL           use an existing Redis (redis://HOST:PORT or unix:///path) instead of
                            starting an embedded redis-server
  --queue-redis-url URL     Redis of the controllers' queues, needs no persistence (default: the
                            --redis-url Redis, else a second embedded, non-persistent redis-server)
  --token-auth-file FILE    static bearer tokens, kube-apiserver CSV format
  -v, --verbose             log every request
  -h, --help                this help
`;

/**
 * Runs the CLI with `argv` (without node and script). Resolves to the exit code. `shutdown`
 * (default: installed now) is how SIGTERM/SIGINT reach it; bin.ts installs it before loading this
 * module so that no moment of a process's life is without handlers.
 */
export async function main(argv: string[], shutdown = new ShutdownSignals()): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') { process.stdout.write(USAGE); return command ? 0 : 2; }
  if (command !== 'start') { process.stderr.write(`kcp-ts: unknown command "${command}"\n\n${USAGE}`); return 2; }
  let values;
  try {
    ({ values } = parseArgs({
      args: rest, strict: true, allowPositionals: false,
      options: {
        'root-directory': { type: 'string' }, 'secure-port': { type: 'string' }, 'bind-address': { type: 'string' },
        'external-hostname': { type: 'string' }, 'shard-name': { type: 'string' }, 'redis-url': { type: 'string' },
        'queue-redis-url': { type: 'string' }, 'token-auth-file': { type: 'string' }, verbose: { type: 'boolean', short: 'v' }, help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts start: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(USAGE); return 0; }
  const port = values['secure-port'] === undefined ? 6443 : Number(values['secure-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) { process.stderr.write(`kcp-ts start: invalid --secure-port "${values['secure-port']}"\n`); return 2; }
  const opts: ServerOptions = {
    rootDirectory: values['root-directory'], securePort: port, bindAddress: values['bind-address'],
    externalHostname: values['external-hostname'], shardName: values['shard-name'], redisUrl: values['redis-url'],
    queueRedisUrl: values['queue-redis-url'], tokenAuthFile: values['token-auth-file'], logger: values.verbose ? { level: 'info' } : { level: 'warn' },
  };
  try {
    const t0 = performance.now();
    let server;
    try {
      server = await startServer({ ...opts, signal: shutdown.signal });
    } catch (err) {
      if (shutdown.signal.aborted) return 0;
      process.stderr.write(`kcp-ts start: ${(err as Error).message}\n`);
      return 1;
    }
    process.stdout.write(`kcp-ts shard "${opts.shardName ?? 'root'}" ready in ${Math.round(performance.now() - t0)} ms at ${server.url}\n`);
    process.stdout.write(`Redis: ${server.redisUrl}\n`);
    process.stdout.write(`Use it:  export KUBECONFIG=${server.kubeconfigPath}; kubectl get namespaces\n`);
    const running = server;
    return await new Promise<number>((resolveExit) => {
      shutdown.onShutdown(() => { running.stop().then(() => resolveExit(0), () => resolveExit(1)); });
    });
  } finally {
    shutdown.dispose();
  }
}
