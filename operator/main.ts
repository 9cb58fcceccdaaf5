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
import { QueueRedisMonitor, operatorHealthChecks } from './health.js';
import { answerHealth, healthEndpointOf } from '../src/server/health.js';

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
                                    /livez (= /healthz: the process serves) and /readyz
                                    (the queue's Redis answers, the informers listed)
                                    (default :8081)
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
  let synced = false;
  let leading = !values['leader-elect'];
  let stopping = false;
  const servers: Server[] = [];
  let elector: LeaderElector | undefined;
  let exitCode = 0;
  const queueRedisUrl = values['redis-url'] ?? 'redis://127.0.0.1:6379';
  // Watched from the start, by standbys too: readiness says whether this process could reconcile.
  // Logged once per change of state (the probes only read it).
  const queue = new QueueRedisMonitor(queueRedisUrl, {
    onChange: (reachable, reason) => {
      log(reachable ? `controller queue Redis ${queueRedisUrl} is reachable${leading ? '; reconciling' : ''}`
        : `controller queue Redis ${queueRedisUrl} is unreachable (${reason}): not ready, nothing is reconciled until it is back`);
      operator?.queueReachable(reachable, reason);
    },
  });
  const checks = operatorHealthChecks({ queue, leading: () => leading, synced: () => synced, stopping: () => stopping || shutdown.signal.aborted });
  try {
    if (healthBind) {
      const health = createServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://operator');
        const endpoint = healthEndpointOf(url.pathname);
        const answer = endpoint ? answerHealth(endpoint[0], checks[endpoint[0]], endpoint[1], url.searchParams) : { code: 404, body: '404 page not found\n' };
        res.writeHead(answer.code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
        res.end(answer.body);
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
      leading = true;
    }
    // Starting waits for the queue's Redis; a stop while it does must not wait for it.
    const starting = startOperator({ kubeConfig: kc, namespace: values.namespace, queueRedisUrl, log, registry });
    const started = await Promise.race([starting, stopped.then(() => undefined)]);
    if (!started) {
      starting.then((op) => op.stop(), () => undefined);
      return 0;
    }
    operator = started;
    if (queue.known && !queue.reachable) operator.queueReachable(false, queue.reason);
    operator.synced.then(() => {
      synced = true;
      log(queue.reachable ? 'informers synced; reconciling' : `informers synced; reconciling waits for the controller queue Redis (${queue.reason})`);
    }, () => undefined);
    await Promise.race([stopped, lost]);
    return exitCode;
  } catch (err) {
    log((err as Error).message);
    return 1;
  } finally {
    stopping = true;
    queue.stop();
    await operator?.stop().catch(() => undefined);
    await elector?.release();
    for (const s of servers) s.close();
    shutdown.dispose();
  }
}
