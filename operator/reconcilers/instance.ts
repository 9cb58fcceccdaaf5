/**
 * The KcpInstance reconciler: PKI Secrets, the CA bundle, the root shard (its Redis, Deployment,
 * Service), the front-proxy and the admin kubeconfig; the rollout of `spec.version` over every
 * component (rollout.ts); status with kstatus conditions. Level-triggered: every run derives all
 * of it from the declared spec and the informers' caches, and writes only what differs.
 */
import type { ReconcileResult } from '../../src/controllers/runtime.js';
import { inspectCertificate, type KeyPair } from '../../src/pki/certs.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import type { HostObject, KcpInstance, KcpInstanceStatus, RedisSpec, Shard, ShardSummary } from '../api/types.js';
import { applyAll, cached, prune, type OperatorContext } from '../context.js';
import { planRollout, upgradeOrder, type ComponentState, type RolloutPlan } from '../rollout.js';
import { conditionsOf, writeStatus } from '../status.js';
import { backupCronJob } from '../backups.js';
import { serialOf } from '../pki.js';
import {
  auditPolicyConfigMap, externalHostname, externalURL, frontProxyWorkload, names, ownerOf, redisWorkload, ROOT_SHARD, serviceDnsNames, shardBaseURL,
  shardWorkload, versionOfImage, labelsOf, type ShardPlan,
} from '../resources.js';
import { certificateSecret, instanceCA, kubeconfigOf, policyOf, serviceAccountKeySecret, type CertificateSecret } from './certificates.js';

/** Group of the shards' and the front-proxy's client certificates towards shards (they list across logical clusters). */
const SHARD_CLIENT_GROUP = 'system:masters';

/** How a Deployment stands (apps/v1 status). */
export interface DeploymentState { version?: string; ready: boolean; failed: boolean; exists: boolean }

/** Reads a Deployment's version (its pod template's image tag), readiness and deadline failure. */
export function deploymentState(d: HostObject | undefined): DeploymentState {
  if (!d) return { ready: false, failed: false, exists: false };
  const spec = d.spec as { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
  const status = (d.status ?? {}) as { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number; readyReplicas?: number; conditions?: { type: string; status: string; reason?: string }[] };
  const want = spec.replicas ?? 1;
  const observed = (status.observedGeneration ?? 0) >= (d.metadata.generation ?? 0);
  const ready = observed && (status.updatedReplicas ?? 0) === want && (status.availableReplicas ?? 0) === want && (status.readyReplicas ?? 0) === want && (status.replicas ?? 0) === want;
  const failed = (status.conditions ?? []).some((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded');
  return { version: versionOfImage(spec.template?.spec?.containers?.[0]?.image), ready: want === 0 ? observed : ready, failed, exists: true };
}

/** The instance's Shard objects (not being deleted; not one named `root`, which is refused: reconcilers/shard.ts), by name. */
export function shardsOf(ctx: OperatorContext, inst: KcpInstance): Shard[] {
  return ctx.shards.list(inst.metadata.namespace).filter((s) => s.spec.instanceRef.name === inst.metadata.name && !s.metadata.deletionTimestamp && s.metadata.name !== ROOT_SHARD)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** The rollout decision for an instance now (shared by the instance and Shard reconcilers). */
export function instanceRollout(ctx: OperatorContext, inst: KcpInstance, shards: Shard[]): { plan: RolloutPlan; states: Map<string, DeploymentState> } {
  const ns = inst.metadata.namespace!;
  const i = inst.metadata.name;
  const states = new Map<string, DeploymentState>();
  const components: ComponentState[] = [];
  const add = (name: string, deployment: string, pinned?: string) => {
    const s = deploymentState(cached(ctx, 'Deployment', ns, deployment));
    states.set(name, s);
    components.push({ name, pinned, version: s.exists ? s.version : undefined, ready: s.ready, failed: s.failed });
  };
  add(`shard:${ROOT_SHARD}`, names.shard(i, ROOT_SHARD));
  for (const s of shards) add(`shard:${s.metadata.name}`, names.shard(i, s.metadata.name), s.spec.version);
  add('front-proxy', names.frontProxy(i));
  const status = (inst.status ?? {}) as KcpInstanceStatus;
  const plan = planRollout({
    target: inst.spec.version, previous: status.currentVersion, failedVersion: status.failedVersion,
    autoRollback: inst.spec.upgrade?.autoRollback ?? true,
    order: upgradeOrder(shards.map((s) => s.metadata.name), inst.spec.upgrade?.canaryShards),
  }, components);
  return { plan, states };
}

/** A shard's Redis spec with the CRD's defaults. */
export function redisOf(spec: RedisSpec | undefined): RedisSpec {
  return { mode: spec?.mode ?? 'Provisioned', provisioned: spec?.provisioned, external: spec?.external };
}

/**
 * A shard's serving certificate (its Service's DNS names, 127.0.0.1) and client certificate
 * towards the other shards; for a shard other than root also the kubeconfig with which it
 * registers in the root shard.
 */
export async function shardCertificates(ctx: OperatorContext, inst: KcpInstance, shard: string, owner: ReturnType<typeof ownerOf>, ca: KeyPair): Promise<CertificateSecret[]> {
  const i = inst.metadata.name;
  const ns = inst.metadata.namespace!;
  const serving = await certificateSecret(ctx, inst, names.shardServing(i, shard), 'shard', owner,
    { kind: 'serving', commonName: names.shard(i, shard), dnsNames: serviceDnsNames(names.shard(i, shard), ns), ipAddresses: ['127.0.0.1'] }, ca, shard);
  const identity = { kind: 'client' as const, user: `system:kcp-ts:shard:${shard}`, groups: [SHARD_CLIENT_GROUP] };
  const client = await certificateSecret(ctx, inst, names.shardClient(i, shard), 'shard', owner, identity, ca, shard);
  if (shard === ROOT_SHARD) return [serving, client];
  const rootKubeconfig = await certificateSecret(ctx, inst, names.shardRootKubeconfig(i, shard), 'shard', owner, identity, ca, shard,
    (pair) => ({ kubeconfig: kubeconfigOf(`${shardBaseURL(inst, ROOT_SHARD)}/clusters/root`, ca.certPem, pair, `shard-${shard}`) }));
  return [serving, client, rootKubeconfig];
}

/** Serial numbers of certificates, joined: a pod template annotation that changes when one is renewed. */
export function serialsOf(...pairs: KeyPair[]): string {
  return pairs.map((p) => serialOf(p.certPem)).join(',');
}

/** When the first of these certificates is due for renewal, in ms from now (at least 1 s, at most 1 h). */
export function nextRenewalMs(inst: KcpInstance, pairs: KeyPair[], now: number): number {
  const before = policyOf(inst).renewBeforeMs;
  let first = Infinity;
  for (const p of pairs) {
    try { first = Math.min(first, inspectCertificate(p.certPem).notAfter.getTime() - before - now); } catch { /* reissued next run */ }
  }
  return Math.max(1000, Math.min(3_600_000, first));
}

/** The admin kubeconfig: contexts `root` (current) and `base` at the instance's external URL, user kcp-admin. */
function adminKubeconfig(url: string, ca: string, pair: KeyPair): string {
  return buildKubeconfig({
    clusters: [{ name: 'root', server: `${url}/clusters/root`, caPem: ca }, { name: 'base', server: url, caPem: ca }],
    users: [{ name: 'kcp-admin', certPem: pair.certPem, keyPem: pair.keyPem }],
    contexts: [{ name: 'root', cluster: 'root', user: 'kcp-admin' }, { name: 'base', cluster: 'base', user: 'kcp-admin' }],
    currentContext: 'root',
  });
}

/** Reconciles the KcpInstance `<namespace>/<name>` (see the module comment). */
export async function reconcileInstance(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const [ns, name] = key.split('/') as [string, string];
  const inst = ctx.instances.get(name, ns);
  // Deleted: the garbage collector removes everything it owned (ownerReferences).
  if (!inst || inst.metadata.deletionTimestamp) return;
  const owner = ownerOf(inst);
  const i = name;
  const shards = shardsOf(ctx, inst);

  const ca = await instanceCA(ctx, inst, names.ca(i), owner);
  const frontProxyCA = await certificateSecret(ctx, inst, names.frontProxyCA(i), 'pki', owner, { kind: 'ca', commonName: `${i}-front-proxy-ca` }, undefined);
  const bundle: HostObject = {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: names.caBundle(i), namespace: ns, labels: labelsOf(i, 'pki'), ownerReferences: [owner] },
    data: { 'ca.crt': ca.pair.certPem, 'front-proxy-ca.crt': frontProxyCA.pair.certPem },
  };
  // Revoked client certificates: the RootWorkspace reconciler fills `data` (merge patch, its own
  // record); declaring only metadata here makes the ConfigMap exist before pods mount it.
  const revoked: HostObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: names.revoked(i), namespace: ns, labels: labelsOf(i, 'pki'), ownerReferences: [owner] } };
  const rootCerts = await shardCertificates(ctx, inst, ROOT_SHARD, owner, ca.pair);
  const proxyServing = await certificateSecret(ctx, inst, names.frontProxyServing(i), 'front-proxy', owner, {
    kind: 'serving', commonName: names.frontProxy(i), ipAddresses: ['127.0.0.1'],
    dnsNames: [...new Set([externalHostname(inst), ...serviceDnsNames(names.frontProxy(i), ns)])],
  }, ca.pair);
  const proxyClient = await certificateSecret(ctx, inst, names.frontProxyClient(i), 'front-proxy', owner, { kind: 'client', user: 'kcp-front-proxy', groups: [] }, frontProxyCA.pair);
  const proxyKubeconfig = await certificateSecret(ctx, inst, names.frontProxyKubeconfig(i), 'front-proxy', owner,
    { kind: 'client', user: 'system:kcp-ts:front-proxy', groups: [SHARD_CLIENT_GROUP] }, ca.pair, undefined,
    (pair) => ({ kubeconfig: kubeconfigOf(`${shardBaseURL(inst, ROOT_SHARD)}/clusters/root`, ca.pair.certPem, pair, 'front-proxy') }));
  const url = externalURL(inst);
  const admin = await certificateSecret(ctx, inst, names.adminKubeconfig(i), 'admin', owner,
    { kind: 'client', user: 'kcp-admin', groups: ['system:kcp:admin'] }, ca.pair, undefined,
    (pair) => ({ kubeconfig: adminKubeconfig(url, ca.pair.certPem, pair) }));

  const { plan, states } = instanceRollout(ctx, inst, shards);
  const rootPlan: ShardPlan = {
    name: ROOT_SHARD, version: plan.versions.get(`shard:${ROOT_SHARD}`)!, replicas: inst.spec.rootShard?.replicas ?? 1,
    resources: inst.spec.rootShard?.resources, redis: redisOf(inst.spec.rootShard?.redis), owner,
    certificateSerials: serialsOf(ca.pair, frontProxyCA.pair, ...rootCerts.map((c) => c.pair)),
  };
  const proxySerials = serialsOf(ca.pair, proxyServing.pair, proxyClient.pair, proxyKubeconfig.pair);
  const desired: HostObject[] = [
    ...(ca.secret ? [ca.secret] : []), frontProxyCA.secret, serviceAccountKeySecret(ctx, inst, names.serviceAccountKey(i), owner), bundle, revoked,
    ...rootCerts.map((c) => c.secret), proxyServing.secret, proxyClient.secret, proxyKubeconfig.secret, admin.secret,
    ...auditPolicyConfigMap(inst, owner), ...redisWorkload(inst, rootPlan), ...shardWorkload(inst, rootPlan), ...backupCronJob(inst, rootPlan),
    ...frontProxyWorkload(inst, plan.versions.get('front-proxy')!, proxySerials),
  ];
  await applyAll(ctx, desired);
  await prune(ctx, ns, inst.metadata.uid!, desired);

  // Status.
  const summaries: ShardSummary[] = [ROOT_SHARD, ...shards.map((s) => s.metadata.name)].map((s) => {
    const st = states.get(`shard:${s}`)!;
    return { name: s, ...(st.version ? { version: st.version } : {}), ready: st.ready, baseURL: shardBaseURL(inst, s) };
  });
  const allReady = [...states.values()].every((s) => s.ready);
  const status = (inst.status ?? {}) as KcpInstanceStatus;
  const complete = plan.phase === 'Complete' && allReady;
  const degraded = plan.phase === 'RolledBack';
  const reason = degraded ? 'RolledBack' : complete ? 'Available' : status.currentVersion && status.currentVersion !== inst.spec.version ? 'RollingOut' : plan.phase === 'Complete' ? 'Unavailable' : 'Creating';
  const message = complete ? plan.message : plan.phase === 'Complete'
    ? `waiting for ${[...states].filter(([, s]) => !s.ready).map(([n]) => n).join(', ')} to become ready` : plan.message;
  const next: Record<string, unknown> = {
    observedGeneration: inst.metadata.generation,
    ...(complete ? { currentVersion: inst.spec.version } : status.currentVersion ? { currentVersion: status.currentVersion } : {}),
    targetVersion: inst.spec.version,
    ...(plan.failedVersion ? { failedVersion: plan.failedVersion } : {}),
    externalURL: url, adminKubeconfigSecret: names.adminKubeconfig(i), shards: summaries,
    conditions: conditionsOf({ ready: complete, progressing: !complete && !degraded, degraded, reason, message }, inst.metadata.generation, status.conditions, new Date(ctx.now())),
  };
  await writeStatus(ctx, inst, next);
  return { requeueAfterMs: nextRenewalMs(inst, [ca.pair, frontProxyCA.pair, ...rootCerts.map((c) => c.pair), proxyServing.pair, proxyClient.pair, proxyKubeconfig.pair, admin.pair], ctx.now()) };
}


