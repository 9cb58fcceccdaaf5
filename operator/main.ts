/**
 * `kcp-ts operator [flags]`: runs the operator (manager.ts) with leader election on a Lease,
 * Prometheus metrics and health probes, as the Helm chart's Deployment starts it (its queue's
 * Redis is a sidecar without persistence: state is rebuilt from the informers at every start).
 * Exit codes: 0 after SIGTERM/SIGINT, 1 on failure or when leadership is lost, 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { ShutdownSignals } from '../src/cli/signals.js';
import { startOperator, type RunningOperator } from './manager.js';
import { LeaderElector } from './leaderelection.js';
import { HostClient } from './kube/client.js';

export const OPERATOR_USAGE = `Usage: kcp-ts operator [flags]

Runs the kcp-ts operator: reconciles KcpInstance, Shard and RootWorkspace objects
(operator.kcp-ts.io/v1alpha1) of the cluster it runs in.

Flags:
  --kubeconfig FILE                 host cluster credentials (default: in-cluster service account,
                                    else $KUBECONFIG or ~/.kube/config)
  --namespace NS                    reconcile only this namespace (default: all)
  --redis-url URL                   Redis of the controller queues (default redis://127.0.0.1:6379,
                                    the pod's sidecar; needs no persistence)
  --metrics-bind-address ADDR:PORT  Prometheus /metrics (default :8080; 0 turns it off)
  --health-probe-bind-address ADDR:PORT
                                    /healthz and /readyz (default :8081)
  --leader-elect                    hold a Lease before reconciling (run several replicas safely)
  --leader-election-namespace NS    namespace of the Lease (default $POD_NAMESPACE, else default)
  --leader-election-id NAME         name of the Lease (default kcp-ts-operator)
  -h, --help                        this help
`;

/** `host:port` / `:port` → listen arguments; undefined for "0". @throws Error on a malformed address */
function parseBind(flag: string, text: string): { host: string; port: number } | undefined {
  if (text === '0') return undefined;
  const at = text.lastIndexOf(':');
  const port = Number(text.slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--${flag}: want HOST:PORT or :PORT, got "${text}"`);
  return { host: text.slice(0, at) || '0.0.0.0', port };
}

function listen(server: Server, bind: { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => { server.once('error', reject); server.listen(bind.port, bind.host, () => resolve()); });
}

/** Runs `kcp-ts operator` with its arguments; resolves to the exit code. */
export async function operatorMain(args: string[], shutdown: ShutdownSignals): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args, strict: true, allowPositionals: false,
      options: {
        kubeconfig: { type: 'string' }, namespace: { type: 'string' }, 'redis-url': { type: 'string' },
        'metrics-bind-address': { type: 'string' }, 'health-probe-bind-address': { type: 'string' },
        'leader-elect': { type: 'boolean' }, 'leader-election-namespace': { type: 'string' }, 'leader-election-id': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts operator: ${(err as Error).message}\n\n${OPERATOR_USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(OPERATOR_USAGE); return 0; }
  const log = (m: string) => process.stderr.write(`${new Date().toISOString()} kcp-ts operator: ${m}\n`);
  let metricsBind, healthBind;
  const kc = new KubeConfig();
  try {
    metricsBind = parseBind('metrics-bind-address', values['metrics-bind-address'] ?? ':8080');
    healthBind = parseBind('health-probe-bind-address', values['health-probe-bind-address'] ?? ':8081');
    if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
    else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else kc.loadFromDefault();
    if (!kc.getCurrentCluster()) throw new Error('no host cluster: give --kubeconfig, or run in a pod');
  } catch (err) {
    process.stderr.write(`kcp-ts operator: ${(err as Error).message}\n`);
    return 2;
  }
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let operator: RunningOperator | undefined;
  let ready = false;
  const servers: Server[] = [];
  let elector: LeaderElector | undefined;
  let exitCode = 0;
  try {
    if (healthBind) {
      const health = createServer((req, res) => {
        const path = (req.url ?? '/').split('?')[0];
        if (path === '/healthz' || path === '/livez') { res.end('ok'); return; }
        if (path === '/readyz') { res.statusCode = ready ? 200 : 503; res.end(ready ? 'ok' : 'informers not synced'); return; }
        res.statusCode = 404; res.end('not found');
      });
      await listen(health, healthBind);
      servers.push(health);
    }
    if (metricsBind) {
      const metrics = createServer((req, res) => {
        if ((req.url ?? '/').split('?')[0] !== '/metrics') { res.statusCode = 404; res.end('not found'); return; }
        registry.metrics().then((text) => { res.setHeader('Content-Type', registry.contentType); res.end(text); }, (err: Error) => { res.statusCode = 500; res.end(err.message); });
      });
      await listen(metrics, metricsBind);
      servers.push(metrics);
    }
    const stopped = new Promise<void>((resolve) => shutdown.onShutdown(resolve));
    let onLost: () => void = () => undefined;
    const lost = new Promise<void>((resolve) => { onLost = () => { exitCode = 1; resolve(); }; });
    if (values['leader-elect']) {
      elector = new LeaderElector(new HostClient(kc), {
        namespace: values['leader-election-namespace'] ?? process.env.POD_NAMESPACE ?? 'default',
        name: values['leader-election-id'] ?? 'kcp-ts-operator', identity: `${hostname()}_${process.pid}`, log,
      });
      // acquire() resolves once this process leads; until then it only campaigns.
      await Promise.race([elector.acquire(onLost), stopped]);
      if (shutdown.signal.aborted) return 0;
    }
    // Starting waits for the queue's Redis; a stop while it does must not wait for it.
    const starting = startOperator({ kubeConfig: kc, namespace: values.namespace, queueRedisUrl: values['redis-url'] ?? 'redis://127.0.0.1:6379', log, registry });
    const started = await Promise.race([starting, stopped.then(() => undefined)]);
    if (!started) {
      starting.then((op) => op.stop(), () => undefined);
      return 0;
    }
    operator = started;
    operator.synced.then(() => { ready = true; log('informers synced; reconciling'); }, () => undefined);
    await Promise.race([stopped, lost]);
    return exitCode;
  } catch (err) {
    log((err as Error).message);
    return 1;
  } finally {
    await operator?.stop().catch(() => undefined);
    await elector?.release();
    for (const s of servers) s.close();
    shutdown.dispose();
  }
}
