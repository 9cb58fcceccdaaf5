/**
 * The Shard reconciler: an additional shard of an instance — its certificates, Redis, Deployment
 * and Service, at the version the instance's rollout gives it (or its pinned one) — and its
 * registration: the shard process registers its core.kcp.io Shard object in the root workspace
 * itself (`--root-shard-kubeconfig-file`); the operator's finalizer removes that object when the
 * Shard is deleted, so workspaces are no longer scheduled to a shard that is gone.
 */
import type { ReconcileResult } from '../../src/controllers/runtime.js';
import { RestClient } from '../../src/client/rest.js';
import { SHARD_FINALIZER, type KcpInstance, type Shard } from '../api/types.js';
import { applyAll, cached, prune, type OperatorContext } from '../context.js';
import { conditionsOf, writeStatus } from '../status.js';
import { backupCronJob } from '../backups.js';
import { fromB64, serialOf } from '../pki.js';
import { names, ownerOf, shardBaseURL, shardWorkload, redisWorkload, type ShardPlan } from '../resources.js';
import { existingCA } from './certificates.js';
import { instanceRollout, nextRenewalMs, redisOf, serialsOf, shardCertificates, shardsOf } from './instance.js';
import { readKubeconfig, resolveKubeconfigContext } from '../../src/pki/kubeconfig.js';

/** Reconciles the Shard `<namespace>/<name>` (see the module comment). */
export async function reconcileShard(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const [ns, name] = key.split('/') as [string, string];
  const shard = ctx.shards.get(name, ns);
  if (!shard) return;
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
  const shardPlan: ShardPlan = {
    name, version: plan.versions.get(`shard:${name}`) ?? shard.spec.version ?? inst.spec.version,
    replicas: shard.spec.replicas ?? 1, resources: shard.spec.resources, redis: redisOf(shard.spec.redis),
    labels: shard.spec.labels, owner,
    // The front-proxy CA is the instance's (its Secret, read from the cache): a new one rolls the shard too.
    certificateSerials: [serialsOf(ca, ...certs.map((c) => c.pair)), serialOf(fromB64(frontProxyCA?.data, 'tls.crt'))].join(','),
  };
  const desired = [...certs.map((c) => c.secret), ...redisWorkload(inst, shardPlan), ...shardWorkload(inst, shardPlan), ...backupCronJob(inst, shardPlan)];
  await applyAll(ctx, desired);
  await prune(ctx, ns, shard.metadata.uid!, desired);

  const st = states.get(`shard:${name}`) ?? { ready: false, failed: false, exists: false };
  const pinned = shard.spec.version !== undefined && shard.spec.version !== inst.spec.version;
  const onVersion = st.version === shardPlan.version;
  const ready = st.ready && onVersion;
  await writeStatus(ctx, shard, {
    observedGeneration: shard.metadata.generation,
    ...(st.version ? { version: st.version } : {}),
    baseURL: shardBaseURL(inst, name),
    conditions: conditionsOf({
      ready, progressing: !ready && !st.failed, degraded: st.failed,
      reason: ready ? (pinned ? 'AvailablePinned' : 'Available') : st.failed ? 'ProgressDeadlineExceeded' : st.exists ? 'RollingOut' : 'Creating',
      message: ready ? `shard runs ${st.version}${pinned ? ' (pinned)' : ''}` : st.failed ? `did not become ready on ${st.version} within the progress deadline` : `waiting for the shard to become ready on ${shardPlan.version}`,
    }, shard.metadata.generation, shard.status?.conditions, new Date(ctx.now())),
  });
  return { requeueAfterMs: nextRenewalMs(inst, [ca, ...certs.map((c) => c.pair)], ctx.now()) };
}

/**
 * A Shard being deleted: removes its core.kcp.io Shard object from the root workspace (through
 * the root shard's Service, with the shard's own client certificate), then the finalizer. When
 * the instance is gone or going, there is nothing to unregister from.
 */
async function finalize(ctx: OperatorContext, shard: Shard, inst: KcpInstance | undefined): Promise<ReconcileResult | void> {
  if (!shard.metadata.finalizers?.includes(SHARD_FINALIZER)) return;
  const ns = shard.metadata.namespace!;
  const name = shard.metadata.name;
  if (inst && !inst.metadata.deletionTimestamp) {
    const secret = cached(ctx, 'Secret', ns, names.shardRootKubeconfig(inst.metadata.name, name)) as { data?: Record<string, string> } | undefined;
    const text = fromB64(secret?.data, 'kubeconfig');
    if (text) {
      const c = resolveKubeconfigContext(readKubeconfig(text));
      const client = new RestClient({ url: new URL(c.server).origin, ca: c.caPem ?? '', cert: c.certPem, key: c.keyPem });
      try {
        const res = await client.request('DELETE', `/clusters/root/apis/core.kcp.io/v1alpha1/shards/${encodeURIComponent(name)}`);
        if (res.status >= 300 && res.status !== 404) throw new Error(`HTTP ${res.status}: ${(res.json as { message?: string } | undefined)?.message ?? res.body.slice(0, 200)}`);
      } catch (err) {
        ctx.log(`unregistering shard ${ns}/${name} from root: ${(err as Error).message}; retrying`);
        return { requeueAfterMs: 5000 };
      } finally {
        client.close();
      }
    }
  }
  const finalizers = (shard.metadata.finalizers ?? []).filter((f) => f !== SHARD_FINALIZER);
  await ctx.client.mergePatch('Shard', ns, name, { metadata: { finalizers, resourceVersion: shard.metadata.resourceVersion } });
}

