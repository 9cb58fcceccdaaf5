/**
 * The operator's controller manager: informers on the host cluster (@kubernetes/client-node)
 * feeding the same BullMQ controller runtime the server's controllers run on
 * (src/controllers/runtime.ts). Keys are `<namespace>/<name>`; any change of an instance's host
 * objects, of the instance or of one of its Shards enqueues the instance and all its Shards (their
 * versions depend on each other during a rollout; a change of the instance also its
 * RootWorkspaces, a RootWorkspace's Secrets only it), so every reconcile is level-triggered and
 * nothing is lost when the queue's Redis is empty (its state is rebuilt from the informers).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Counter, type Registry } from 'prom-client';
import { Controller, ControllerMetrics, QueueThread, type Reconcile } from '../src/controllers/runtime.js';
import { LABELS, type HostObject, type KcpInstance, type RootWorkspace, type Shard } from './api/types.js';
import { HostClient, isHostStatus } from './kube/client.js';
import { HostInformer } from './kube/informers.js';
import { MANAGED_SELECTOR, OWNED_KINDS, type OperatorContext, type OwnedKind } from './context.js';
import { reconcileInstance } from './reconcilers/instance.js';
import { reconcileShard } from './reconcilers/shard.js';
import { reconcileRootWorkspace } from './reconcilers/rootworkspace.js';
import { markReadyUnknown, QUEUE_UNAVAILABLE } from './status.js';

export { QUEUE_UNAVAILABLE };

/** Options of {@link startOperator}. */
export interface OperatorOptions {
  /** Credentials of the host cluster. */
  kubeConfig: KubeConfig;
  /** Reconcile only this namespace (default: all). */
  namespace?: string;
  /** Redis of the controllers' queues (`redis://…`), e.g. the operator pod's sidecar; needs no persistence. */
  queueRedisUrl: string;
  /** BullMQ key prefix (default `{kcp-ts-operator}`): operators sharing a Redis need different ones. */
  queuePrefix?: string;
  /** Log lines (default: stderr). */
  log?: (msg: string) => void;
  /** Where controller metrics go. */
  registry?: Registry;
  /** Parallel reconciles per controller (default 4). */
  concurrency?: number;
  /** Clock (ms); tests move it. */
  now?: () => number;
  /** See {@link OperatorContext.serviceAddress}. */
  serviceAddress?: (host: string) => string | undefined;
}

/** A running operator. */
export interface RunningOperator {
  /** Resolves once every informer has listed. */
  synced: Promise<void>;
  /** Requests sent to the host cluster so far (reads, writes). */
  client: HostClient;
  /** Reconciles that failed so far, other than by conflicts or vanished objects (all are retried with backoff). */
  errors: () => string[];
  /**
   * Tells the operator whether its queue's Redis answers (operator/health.ts watches it). While
   * it does not, no reconcile runs: the `Ready` condition of every KcpInstance, Shard and
   * RootWorkspace becomes `Unknown` (reason {@link QUEUE_UNAVAILABLE}), as the node lifecycle
   * controller marks a Node whose kubelet stopped reporting; when it answers again every object
   * is reconciled, which writes the conditions from what runs.
   */
  queueReachable(reachable: boolean, reason?: string): void;
  stop(): Promise<void>;
}

/** Starts the informers and controllers (see the module comment). */
export async function startOperator(opts: OperatorOptions): Promise<RunningOperator> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`kcp-ts operator: ${m}\n`));
  const client = new HostClient(opts.kubeConfig);
  const ns = opts.namespace;
  const informerOpts = (labelSelector?: string) => ({ namespace: ns, labelSelector, onError: (err: unknown) => log(`watch: ${(err as Error)?.message ?? String(err)}; restarting`) });
  const owned = Object.fromEntries(OWNED_KINDS.map((k) => [k, new HostInformer<HostObject>(client, k, informerOpts(MANAGED_SELECTOR))])) as Record<OwnedKind, HostInformer<HostObject>>;
  const ctx: OperatorContext = {
    client, log, now: opts.now ?? Date.now, owned, serviceAddress: opts.serviceAddress,
    instances: new HostInformer<KcpInstance>(client, 'KcpInstance', informerOpts()),
    shards: new HostInformer<Shard>(client, 'Shard', informerOpts()),
    rootWorkspaces: new HostInformer<RootWorkspace>(client, 'RootWorkspace', informerOpts()),
  };
  const informers = [ctx.instances, ctx.shards, ctx.rootWorkspaces, ...Object.values(owned)];
  const synced = Promise.all(informers.map((i) => i.synced())).then(() => undefined);

  const thread = new QueueThread(opts.queueRedisUrl, {
    onError: (err) => log(`controller queue: ${(err as Error).message}`),
    onQueuesLost: () => enqueueAll(),
  });
  const metrics = opts.registry ? new ControllerMetrics(opts.registry) : undefined;
  if (opts.registry) {
    new Counter({
      name: 'kcp_ts_operator_host_requests_total', help: 'Requests the operator sent to the host cluster\'s API, by kind (read: GET; write: everything else).',
      labelNames: ['kind'], registers: [opts.registry],
      collect() { this.reset(); this.inc({ kind: 'read' }, client.counts.reads); this.inc({ kind: 'write' }, client.counts.writes); },
    });
  }
  const errors: string[] = [];
  const controller = (name: string, reconcile: (ctx: OperatorContext, key: string) => ReturnType<Reconcile>) => new Controller({
    name, prefix: opts.queuePrefix ?? '{kcp-ts-operator}', thread, concurrency: opts.concurrency ?? 4, metrics,
    // Reconciles wait for the caches: a key reconciled against a half-listed cache would prune what it has not seen.
    reconcile: async (key) => { await synced; return reconcile(ctx, key); },
    onError: (key, err) => {
      // A conflict (a write built on a cache a moment old) or an object deleted meanwhile is
      // retried and no fault.
      if (!isHostStatus(err, 409) && !isHostStatus(err, 404)) errors.push(`${name} ${key}: ${(err as Error).message}`);
      log(`reconcile error (retried): ${name} ${key}: ${(err as Error).message}`);
    },
  });
  const instances = controller('kcpinstance', reconcileInstance);
  const shards = controller('shard', reconcileShard);
  const rootWorkspaces = controller('rootworkspace', reconcileRootWorkspace);

  const keyOf = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace}/${o.metadata.name}`;
  const enqueueInstance = (namespace: string, name: string) => {
    instances.enqueue(`${namespace}/${name}`).catch(() => undefined);
    for (const s of ctx.shards.list(namespace)) if (s.spec.instanceRef.name === name) shards.enqueue(keyOf(s)).catch(() => undefined);
    for (const r of ctx.rootWorkspaces.list(namespace)) if (r.spec.instanceRef.name === name) rootWorkspaces.enqueue(keyOf(r)).catch(() => undefined);
  };
  // While the queue's Redis does not answer: why (see RunningOperator.queueReachable).
  let queueDown: string | undefined;
  const markUnknown = (o: KcpInstance | Shard | RootWorkspace) => {
    const why = queueDown;
    if (why === undefined || o.metadata.deletionTimestamp) return;
    markReadyUnknown(ctx, o, QUEUE_UNAVAILABLE, `the operator cannot reach its controller queue (${why}): this object is not reconciled and its other conditions may be out of date`)
      .catch((err: Error) => log(`status ${o.kind} ${keyOf(o)}: ${err.message}`));
  };
  const markAllUnknown = () => { for (const o of [...ctx.instances.list(), ...ctx.shards.list(), ...ctx.rootWorkspaces.list()]) markUnknown(o); };
  for (const inf of [ctx.instances, ctx.shards, ctx.rootWorkspaces] as HostInformer<KcpInstance | Shard | RootWorkspace>[]) {
    inf.onChange((o, type) => { if (type !== 'delete') markUnknown(o); });
  }
  ctx.rootWorkspaces.onChange((o) => { rootWorkspaces.enqueue(keyOf(o)).catch(() => undefined); });
  ctx.instances.onChange((o) => enqueueInstance(o.metadata.namespace!, o.metadata.name));
  ctx.shards.onChange((o) => {
    shards.enqueue(keyOf(o)).catch(() => undefined);
    enqueueInstance(o.metadata.namespace!, o.spec.instanceRef.name);
  });
  for (const inf of Object.values(owned)) {
    inf.onChange((o) => {
      // A RootWorkspace's own objects (its kubeconfigs) lead back to it alone; the rest to the
      // instance and its Shards, whose rollout reads every Deployment's status.
      const rw = o.metadata.ownerReferences?.find((r) => r.kind === 'RootWorkspace');
      if (rw) { rootWorkspaces.enqueue(`${o.metadata.namespace}/${rw.name}`).catch(() => undefined); return; }
      const instance = o.metadata.labels?.[LABELS.instance];
      if (!instance) return;
      instances.enqueue(`${o.metadata.namespace}/${instance}`).catch(() => undefined);
      for (const s of ctx.shards.list(o.metadata.namespace)) if (s.spec.instanceRef.name === instance) shards.enqueue(keyOf(s)).catch(() => undefined);
    });
  }
  const enqueueAll = () => {
    for (const i of ctx.instances.list()) enqueueInstance(i.metadata.namespace!, i.metadata.name);
    for (const s of ctx.shards.list()) shards.enqueue(keyOf(s)).catch(() => undefined);
    for (const r of ctx.rootWorkspaces.list()) rootWorkspaces.enqueue(keyOf(r)).catch(() => undefined);
  };
  await Promise.all([instances.ready(), shards.ready(), rootWorkspaces.ready()]);
  synced.then(enqueueAll, () => undefined);

  return {
    synced, client, errors: () => [...errors],
    queueReachable(reachable, reason) {
      const wasDown = queueDown !== undefined;
      queueDown = reachable ? undefined : (reason || 'no answer');
      // Only once the caches are listed: marking needs the objects, enqueueing them too.
      if (!reachable && !wasDown) synced.then(markAllUnknown, () => undefined);
      if (reachable && wasDown) synced.then(enqueueAll, () => undefined);
    },
    async stop() {
      await Promise.all(informers.map((i) => i.stop().catch(() => undefined)));
      await instances.close();
      await shards.close();
      await rootWorkspaces.close();
      await thread.close();
    },
  };
}
