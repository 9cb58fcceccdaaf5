/**
 * What every reconciler of the operator shares: the host client, the informers' caches of the
 * kinds it reads, and the apply/prune steps that keep "no write when nothing changed".
 */
import type { HostObject, KcpInstance, RootWorkspace, Shard } from './api/types.js';
import { LABELS, MANAGED_BY } from './api/types.js';
import type { HostClient } from './kube/client.js';
import type { HostInformer } from './kube/informers.js';
import { applyReason, withAppliedHash } from './kube/apply.js';

/** The kinds the operator creates, whose changes lead back to their instance. */
export const OWNED_KINDS = ['Deployment', 'StatefulSet', 'Service', 'Secret', 'ConfigMap', 'CronJob'] as const;
/** One of {@link OWNED_KINDS}. */
export type OwnedKind = (typeof OWNED_KINDS)[number];

/** Label selector of every host object the operator created. */
export const MANAGED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

/** Shared state of the reconcilers (see the module comment). */
export interface OperatorContext {
  client: HostClient;
  instances: HostInformer<KcpInstance>;
  shards: HostInformer<Shard>;
  rootWorkspaces: HostInformer<RootWorkspace>;
  /** Caches of the operator's own objects (label {@link MANAGED_SELECTOR}). */
  owned: Record<OwnedKind, HostInformer<HostObject>>;
  /** Logs one line (structured by the caller). */
  log: (msg: string) => void;
  /** Now, in ms (tests move it to see renewals). */
  now: () => number;
  /**
   * The address at which a Service's DNS name (`<service>.<namespace>.svc`) is reached, for an
   * operator outside the cluster whose pod addresses it can route to (the e2e tests, whose pods
   * are local processes); TLS still verifies the Service's name. Undefined, or no answer: the
   * name itself (the cluster's DNS, for an operator in the cluster).
   */
  serviceAddress?: (host: string) => string | undefined;
}

/** The cached object of an owned kind, or undefined. */
export function cached(ctx: OperatorContext, kind: OwnedKind, namespace: string, name: string): HostObject | undefined {
  return ctx.owned[kind].get(name, namespace);
}

/**
 * Applies each desired object whose live copy differs (kube/apply.ts); returns how many were
 * written. The live copy is the informer's; an apply that the cache has not seen yet is repeated
 * at most once more, harmlessly (the hash then matches).
 */
export async function applyAll(ctx: OperatorContext, desired: HostObject[]): Promise<number> {
  let writes = 0;
  for (const obj of desired) {
    const want = withAppliedHash(obj);
    const kind = obj.kind as OwnedKind;
    const live = ctx.owned[kind] ? cached(ctx, kind, obj.metadata.namespace!, obj.metadata.name) : await ctx.client.get(obj.kind, obj.metadata.namespace, obj.metadata.name);
    const why = applyReason(want, live);
    if (!why) continue;
    ctx.log(`apply ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} (${why})`);
    await ctx.client.apply(want);
    writes++;
  }
  return writes;
}

/**
 * Deletes the operator's objects owned by `ownerUid` that are not in `desired` (a provisioned
 * Redis replaced by an external one, say). Only objects carrying the operator's labels and this
 * owner's controller reference are considered: nothing a user made is touched.
 */
export async function prune(ctx: OperatorContext, namespace: string, ownerUid: string, desired: HostObject[]): Promise<number> {
  const keep = new Set(desired.map((o) => `${o.kind}/${o.metadata.name}`));
  let deleted = 0;
  for (const kind of OWNED_KINDS) {
    for (const obj of ctx.owned[kind].list(namespace)) {
      const owned = obj.metadata.ownerReferences?.some((r) => r.uid === ownerUid && r.controller);
      if (!owned || keep.has(`${kind}/${obj.metadata.name}`) || obj.metadata.deletionTimestamp) continue;
      ctx.log(`delete ${kind} ${namespace}/${obj.metadata.name} (no longer declared)`);
      if (await ctx.client.delete(kind, namespace, obj.metadata.name, obj.metadata.uid)) deleted++;
    }
  }
  return deleted;
}
