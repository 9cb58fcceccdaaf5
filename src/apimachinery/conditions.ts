/**
 * `metav1.Condition` lists (Kubernetes API conventions, "Typical status properties"): one entry
 * per type, `lastTransitionTime` moved only when the status changes.
 */
import { nowRFC3339 } from './meta.js';

/** One condition (`type`, `status` True/False/Unknown, a CamelCase `reason`, a human `message`). */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  severity?: string;
  lastTransitionTime?: string;
}

/**
 * A copy of `conds` with `c` set: replaces the condition of the same type, keeping its
 * `lastTransitionTime` when the status is unchanged (else now). Order of the other types is kept.
 */
export function setCondition<C extends Condition>(conds: readonly C[], c: C): C[] {
  const old = conds.find((x) => x.type === c.type);
  const next = { ...c, lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : nowRFC3339() };
  return old ? conds.map((x) => (x.type === c.type ? next : x)) : [...conds, next];
}

/** The condition of a type in a list, if any. */
export function findCondition<C extends Condition>(conds: readonly C[] | undefined, type: string): C | undefined {
  return conds?.find((c) => c.type === type);
}
