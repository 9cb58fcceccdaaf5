/**
 * Conditions in kstatus style (sigs.k8s.io/cli-utils kstatus, read by Argo CD and Flux): the
 * operator's `Ready`, `Progressing` and `Degraded`, mirrored by kstatus's abnormal-true pair
 * `Reconciling` (= Progressing) and `Stalled` (= Degraded), with `observedGeneration`; so kstatus
 * computes `Current` for a converged object, `InProgress` while it converges and `Failed` after a
 * rollback. Status is written only when it changed.
 */
import type { Condition, TypedObject } from './api/types.js';
import type { OperatorContext } from './context.js';
import { firstDifference } from './kube/apply.js';

/** The state an object's conditions describe. */
export interface Health {
  ready: boolean;
  progressing: boolean;
  degraded: boolean;
  /** CamelCase reason of the state, e.g. `Available`, `Creating`, `RollingOut`, `RolledBack`. */
  reason: string;
  message: string;
}

/**
 * The five conditions of `health` at `generation`; a condition whose status did not change keeps
 * its `lastTransitionTime` from `previous`.
 */
export function conditionsOf(health: Health, generation: number | undefined, previous: Condition[] | undefined, now: Date): Condition[] {
  const status = (b: boolean): Condition['status'] => (b ? 'True' : 'False');
  const want: [string, boolean][] = [
    ['Ready', health.ready], ['Progressing', health.progressing], ['Degraded', health.degraded],
    ['Reconciling', health.progressing], ['Stalled', health.degraded],
  ];
  return want.map(([type, value]) => {
    const before = previous?.find((c) => c.type === type);
    const s = status(value);
    return {
      type, status: s, reason: health.reason, message: health.message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: before && before.status === s && before.lastTransitionTime ? before.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
    };
  });
}

/**
 * Applies `status` to `obj`'s status subresource when it differs from the live status; returns
 * whether it wrote. The comparison covers what is declared (extra live fields are the server's).
 */
export async function writeStatus(ctx: OperatorContext, obj: TypedObject & { status?: unknown }, status: Record<string, unknown>): Promise<boolean> {
  const live = (obj as { status?: Record<string, unknown> }).status ?? {};
  const diff = firstDifference(status, live) ?? firstDifference(live, status);
  if (!diff) return false;
  ctx.log(`status ${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name} (${diff})`);
  await ctx.client.apply({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace }, status }, 'status');
  return true;
}

/** Reason of a `Ready=Unknown` condition while the operator's controller queue is unreachable. */
export const QUEUE_UNAVAILABLE = 'OperatorQueueUnavailable';

/**
 * Sets `obj`'s `Ready` condition to `Unknown` with `reason` and `message`, keeping the other
 * conditions and status fields as they are (the operator cannot tell what they are now); writes
 * only when `Ready` is not already `Unknown` for that reason. The kube precedent: the node
 * lifecycle controller sets a Node's `Ready` to `Unknown` when its kubelet stops reporting.
 */
export async function markReadyUnknown(ctx: OperatorContext, obj: TypedObject & { status?: { conditions?: Condition[] } }, reason: string, message: string): Promise<boolean> {
  const status = (obj.status ?? {}) as { conditions?: Condition[] } & Record<string, unknown>;
  const conditions = status.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  if (ready?.status === 'Unknown' && ready.reason === reason) return false;
  const unknown: Condition = {
    type: 'Ready', status: 'Unknown', reason, message,
    ...(ready?.observedGeneration !== undefined ? { observedGeneration: ready.observedGeneration } : {}),
    lastTransitionTime: new Date(ctx.now()).toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  const next = ready ? conditions.map((c) => (c === ready ? unknown : c)) : [...conditions, unknown];
  return writeStatus(ctx, obj, { ...status, conditions: next });
}
