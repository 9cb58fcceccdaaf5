/**
 * The Shard reconciler: an additional shard of an instance — its certificates, Redis, Deployment
 * and Service, at the version the instance's rollout gives it (or its pinned one) — and its
 * registration: the shard process registers its core.kcp.io Shard object in the root workspace
 * itself (`--root-shard-kubeconfig-file`).
 *
 * Drain (operator/drain.ts): `spec.drain: true` has kcp migrate the shard's logical clusters to
 * the other shards, reports `Drained`, and then runs the shard at 0 pods (the Shard, its Redis
 * and its kcp Shard object stay); `spec.drain: false` brings the pods back and, once they are
 * ready, lets kcp schedule onto the shard again. Deleting a Shard drains it first (its
 * finalizer), then deletes its Deployment, waits for its pods to go, and removes its kcp Shard
 * object, so no workspace is lost and none is scheduled to a shard that is gone.
 *
 * The name `root` is the instance's own shard (`KcpInstance.spec.rootShard`): a Shard of that
 * name is refused (a condition says why), never drained, and its deletion is not held.
 */
import type { ReconcileResult } from '../../src/controllers/runtime.js';
import { RestClient } from '../../src/client/rest.js';
import { LABELS, SHARD_FINALIZER, type Condition, type KcpInstance, type Shard } from '../api/types.js';
import { applyAll, cached, prune, type OperatorContext } from '../context.js';
import { conditionsOf, writeStatus } from '../status.js';
import { backupCronJob } from '../backups.js';
import { fromB64, serialOf } from '../pki.js';
import { names, ownerOf, ROOT_SHARD, shardBaseURL, shardWorkload, redisWorkload, type ShardPlan } from '../resources.js';
import { existingCA } from './certificates.js';
import { deploymentState, instanceRollout, nextRenewalMs, redisOf, serialsOf, shardCertificates, shardsOf } from './instance.js';
import { DRAIN_ANNOTATION, DRAINED_CONDITION, SKIP_DRAIN_ANNOTATION, decideDrain, drainedCondition, kcpShardPath, needsObservation, observeDrain, type DrainDecision, type DrainObservation } from '../drain.js';
import { readKubeconfig, resolveKubeconfigContext } from '../../src/pki/kubeconfig.js';

/** Reconciles the Shard `<namespace>/<name>` (see the module comment). */
export async function reconcileShard(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const [ns, name] = key.split('/') as [string, string];
  const shard = ctx.shards.get(name, ns);
  if (!shard) return;
  if (name === ROOT_SHARD) return refuseRootShard(ctx, shard);
  const inst = ctx.instances.get(shard.spec.instanceRef.name, ns);
  if (shard.metadata.deletionTimestamp) return finalize(ctx, shard, inst);

  // The finalizer, and an ownerReference to the instance: deleting the instance deletes its shards.
  const meta = {
    finalizers: [SHARD_FINALIZER],
    ...(inst ? { ownerReferences: [{ ...ownerOf(inst), controller: false }] } : {}),
  };
  const hasFinalizer = shard.metadata.finalizers?.includes(SHARD_FINALIZER);
  const hasOwner = !inst || shard.metadata.ownerReferences?.some((r) => r.uid === inst.metadata.uid);
  if (!hasFinalizer || !hasOwner) {
    await ctx.client.apply({ apiVersion: shard.apiVersion, kind: 'Shard', metadata: { name, namespace: ns, ...meta } });
  }
  if (!inst) {
    await writeStatus(ctx, shard, {
      observedGeneration: shard.metadata.generation,
      conditions: conditionsOf({ ready: false, progressing: false, degraded: true, reason: 'InstanceNotFound', message: `KcpInstance ${ns}/${shard.spec.instanceRef.name} does not exist` }, shard.metadata.generation, shard.status?.conditions, new Date(ctx.now())),
    });
    return;
  }
  const owner = ownerOf(shard);
  const i = inst.metadata.name;
  const ca = await existingCA(ctx, inst);
  const frontProxyCA = cached(ctx, 'Secret', ns, names.frontProxyCA(i)) as { data?: Record<string, string> } | undefined;
  // The instance's reconciler creates the CAs; this shard's certificates and pods wait for them.
  if (!ca || !frontProxyCA) return { requeueAfterMs: 1000 };
  const certs = await shardCertificates(ctx, inst, name, owner, ca);
  const { plan, states } = instanceRollout(ctx, inst, shardsOf(ctx, inst));
  const st = states.get(`shard:${name}`) ?? { ready: false, failed: false, exists: false };
  const drain = await drainStep(ctx, inst, shard, st.ready && liveReplicas(ctx, inst, name) > 0, false);
  const shardPlan: ShardPlan = {
    name, version: plan.versions.get(`shard:${name}`) ?? shard.spec.version ?? inst.spec.version,
    replicas: drain.scaleToZero ? 0 : shard.spec.replicas ?? 1, resources: shard.spec.resources, redis: redisOf(shard.spec.redis),
    labels: shard.spec.labels, owner,
    // The front-proxy CA is the instance's (its Secret, read from the cache): a new one rolls the shard too.
    certificateSerials: [serialsOf(ca, ...certs.map((c) => c.pair)), serialOf(fromB64(frontProxyCA?.data, 'tls.crt'))].join(','),
  };
  const desired = [...certs.map((c) => c.secret), ...redisWorkload(inst, shardPlan), ...shardWorkload(inst, shardPlan), ...backupCronJob(inst, shardPlan)];
  await applyAll(ctx, desired);
  await prune(ctx, ns, shard.metadata.uid!, desired);

  const pinned = shard.spec.version !== undefined && shard.spec.version !== inst.spec.version;
  const onVersion = st.version === shardPlan.version;
  const ready = st.ready && onVersion;
  await writeStatus(ctx, shard, {
    observedGeneration: shard.metadata.generation,
    ...(st.version ? { version: st.version } : {}),
    baseURL: shardBaseURL(inst, name),
    conditions: conditionsOf({
      ready, progressing: !ready && !st.failed, degraded: st.failed,
      reason: ready ? (drain.scaleToZero ? 'Drained' : pinned ? 'AvailablePinned' : 'Available') : st.failed ? 'ProgressDeadlineExceeded' : st.exists ? 'RollingOut' : 'Creating',
      message: ready ? (drain.scaleToZero ? `shard drained: it runs no pods (spec.drain), version ${st.version}` : `shard runs ${st.version}${pinned ? ' (pinned)' : ''}`)
        : st.failed ? `did not become ready on ${st.version} within the progress deadline` : `waiting for the shard to become ready on ${shardPlan.version}`,
    }, shard.metadata.generation, shard.status?.conditions, new Date(ctx.now())).concat(drainConditions(ctx, shard, drain)),
  });
  const renewal = nextRenewalMs(inst, [ca, ...certs.map((c) => c.pair)], ctx.now());
  return { requeueAfterMs: Math.min(renewal, drain.requeueAfterMs ?? Infinity) };
}

/** The `Drained` condition of a decision (none without one), its transition time kept. */
function drainConditions(ctx: OperatorContext, shard: Shard, drain: DrainDecision): Condition[] {
  if (!drain.condition) return [];
  return [drainedCondition(drain.condition, previousDrained(shard), shard.metadata.generation, new Date(ctx.now()))];
}

const previousDrained = (shard: Shard): Condition | undefined => shard.status?.conditions?.find((c) => c.type === DRAINED_CONDITION);

/** `spec.replicas` of the shard's live Deployment (0 when there is none). */
function liveReplicas(ctx: OperatorContext, inst: KcpInstance, shard: string): number {
  const d = cached(ctx, 'Deployment', inst.metadata.namespace!, names.shard(inst.metadata.name, shard));
  return d ? ((d.spec as { replicas?: number } | undefined)?.replicas ?? 1) : 0;
}

/**
 * Clients of the instance's kcp with the shard's own credentials (its root kubeconfig: a client
 * certificate of the instance's CA in `system:masters`): `root`, the root shard's Service (where
 * the shard registers), and `self`, the shard's own Service. Undefined before that Secret exists.
 */
function kcpClients(ctx: OperatorContext, inst: KcpInstance, shard: string): { root: RestClient; self: RestClient } | undefined {
  const secret = cached(ctx, 'Secret', inst.metadata.namespace!, names.shardRootKubeconfig(inst.metadata.name, shard)) as { data?: Record<string, string> } | undefined;
  const text = fromB64(secret?.data, 'kubeconfig');
  if (!text) return undefined;
  const c = resolveKubeconfigContext(readKubeconfig(text));
  const creds = { ca: c.caPem ?? '', cert: c.certPem, key: c.keyPem };
  const connect = (base: string) => {
    const url = new URL(base);
    const address = ctx.serviceAddress?.(url.hostname);
    return new RestClient(address ? { url: `${url.protocol}//${address}:${url.port}`, serverName: url.hostname, ...creds } : { url: url.origin, ...creds }, 2);
  };
  return { root: connect(c.server), self: connect(shardBaseURL(inst, shard)) };
}

/**
 * One step of a drain (operator/drain.ts): observes kcp when the decision needs it, decides,
 * and sets or removes the drain annotation of the kcp Shard object. A failure to reach kcp is
 * logged and decided as "could not ask" (the decision then waits and looks again).
 */
async function drainStep(ctx: OperatorContext, inst: KcpInstance, shard: Shard, podsReady: boolean, deleting: boolean): Promise<DrainDecision> {
  const base = { drain: shard.spec.drain === true, deleting, previous: previousDrained(shard), podsReady };
  if (!needsObservation(base)) return decideDrain(base);
  const clients = kcpClients(ctx, inst, shard.metadata.name);
  if (!clients) return decideDrain(base);
  const where = `${shard.metadata.namespace}/${shard.metadata.name}`;
  try {
    let observed: DrainObservation | undefined;
    try {
      observed = await observeDrain(clients.root, podsReady ? clients.self : undefined, shard.metadata.name);
    } catch (err) {
      ctx.log(`drain of shard ${where}: ${(err as Error).message}; retrying`);
    }
    const decision = decideDrain({ ...base, observed });
    if (decision.annotate !== undefined) {
      const patch = { metadata: { annotations: { [DRAIN_ANNOTATION]: decision.annotate ? 'true' : null } } };
      const res = await clients.root.request('PATCH', kcpShardPath(shard.metadata.name), patch, { contentType: 'application/merge-patch+json' });
      if (res.status >= 300) {
        ctx.log(`drain of shard ${where}: ${decision.annotate ? 'annotating' : 'removing the annotation of'} its kcp Shard: HTTP ${res.status}; retrying`);
        return { ...decision, requeueAfterMs: 5000 };
      }
      ctx.log(`drain of shard ${where}: ${decision.annotate ? 'annotated' : 'removed the annotation of'} its kcp Shard (${DRAIN_ANNOTATION})`);
      if (!decision.annotate) return { ...decision, condition: undefined, requeueAfterMs: undefined };
      return { ...decision, requeueAfterMs: 1000 };
    }
    return decision;
  } catch (err) {
    ctx.log(`drain of shard ${where}: ${(err as Error).message}; retrying`);
    return { ...decideDrain(base), requeueAfterMs: 5000 };
  } finally {
    clients.root.close();
    clients.self.close();
  }
}

/**
 * A Shard named `root`: the instance's own shard is the KcpInstance's (`spec.rootShard`), so this
 * object is refused — nothing is created for it, it gets no finalizer, and a finalizer an older
 * operator added is dropped on deletion without touching kcp (deleting the root shard's kcp
 * Shard object would unregister the root shard itself). The root shard cannot be drained: it
 * holds `root` and the system logical clusters, which no other shard serves.
 */
async function refuseRootShard(ctx: OperatorContext, shard: Shard): Promise<void> {
  if (shard.metadata.deletionTimestamp) {
    if (!shard.metadata.finalizers?.includes(SHARD_FINALIZER)) return;
    const finalizers = shard.metadata.finalizers.filter((f) => f !== SHARD_FINALIZER);
    await ctx.client.mergePatch('Shard', shard.metadata.namespace, shard.metadata.name, { metadata: { finalizers, resourceVersion: shard.metadata.resourceVersion } });
    return;
  }
  const now = new Date(ctx.now());
  const message = 'the root shard is the KcpInstance\'s own (spec.rootShard); a Shard named root is not reconciled';
  const conditions = conditionsOf({ ready: false, progressing: false, degraded: true, reason: 'RootShardReserved', message }, shard.metadata.generation, shard.status?.conditions, now);
  if (shard.spec.drain) {
    conditions.push(drainedCondition({ status: 'False', reason: 'RootShardNotDrainable', message: 'the root shard holds the root and system logical clusters, which no other shard serves: it cannot be drained' }, previousDrained(shard), shard.metadata.generation, now));
  }
  await writeStatus(ctx, shard, { observedGeneration: shard.metadata.generation, conditions });
}

/**
 * A Shard being deleted (its finalizer): drains it (above), then deletes its Deployment and waits
 * until its pods are gone (a pod still running would register the shard again), then removes its
 * core.kcp.io Shard object from the root workspace, then the finalizer; the garbage collector
 * removes the rest (Redis, Services, Secrets). When the instance is gone or going, there is
 * nothing to drain to or unregister from; with {@link SKIP_DRAIN_ANNOTATION} the drain is skipped.
 */
async function finalize(ctx: OperatorContext, shard: Shard, inst: KcpInstance | undefined): Promise<ReconcileResult | void> {
  if (!shard.metadata.finalizers?.includes(SHARD_FINALIZER)) return;
  const ns = shard.metadata.namespace!;
  const name = shard.metadata.name;
  if (inst && !inst.metadata.deletionTimestamp) {
    const i = inst.metadata.name;
    if (shard.metadata.annotations?.[SKIP_DRAIN_ANNOTATION] !== 'true') {
      const deployment = cached(ctx, 'Deployment', ns, names.shard(i, name));
      const drain = await drainStep(ctx, inst, shard, deploymentState(deployment).ready && liveReplicas(ctx, inst, name) > 0, true);
      const others = (shard.status?.conditions ?? []).filter((c) => c.type !== DRAINED_CONDITION);
      await writeStatus(ctx, shard, { ...(shard.status ?? {}), conditions: [...others, ...drainConditions(ctx, shard, drain)] });
      if (!drain.drained) return { requeueAfterMs: drain.requeueAfterMs ?? 5000 };
    }
    if (cached(ctx, 'Deployment', ns, names.shard(i, name))) {
      ctx.log(`delete Deployment ${ns}/${names.shard(i, name)} (Shard being deleted)`);
      await ctx.client.delete('Deployment', ns, names.shard(i, name));
      return { requeueAfterMs: 1000 };
    }
    const selector = `${LABELS.instance}=${i},${LABELS.component}=shard,${LABELS.shard}=${name}`;
    const pods = await ctx.client.list('Pod', ns, selector);
    if (pods.items.length) return { requeueAfterMs: 2000 };
    const clients = kcpClients(ctx, inst, name);
    if (clients) {
      try {
        const res = await clients.root.request('DELETE', kcpShardPath(name));
        if (res.status >= 300 && res.status !== 404) throw new Error(`HTTP ${res.status}: ${(res.json as { message?: string } | undefined)?.message ?? res.body.slice(0, 200)}`);
      } catch (err) {
        ctx.log(`unregistering shard ${ns}/${name} from root: ${(err as Error).message}; retrying`);
        return { requeueAfterMs: 5000 };
      } finally {
        clients.root.close();
        clients.self.close();
      }
    }
  }
  const finalizers = (shard.metadata.finalizers ?? []).filter((f) => f !== SHARD_FINALIZER);
  await ctx.client.mergePatch('Shard', ns, name, { metadata: { finalizers, resourceVersion: shard.metadata.resourceVersion } });
}
