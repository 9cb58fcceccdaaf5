/**
 * kcp's conditions (github kcp-dev/kcp sdk apis/third_party/conditions, a copy of cluster-api's):
 * a condition has a `severity` (Error, Warning, Info, or none) besides type, status, reason and
 * message; `lastTransitionTime` moves whenever one of those changes; the list is kept sorted
 * with `Ready` first, then by type; `Ready` can be a summary of other conditions (`SetSummary`).
 * TMC's SyncTarget and Placement carry these (contrib-tmc apis).
 */
import type { Condition } from '../apimachinery/conditions.js';
import { nowRFC3339 } from '../apimachinery/meta.js';

/** kcp's condition severities (`conditionsv1alpha1.ConditionSeverity`). */
export type Severity = 'Error' | 'Warning' | 'Info' | '';

/** The `Ready` condition type (kcp `conditionsv1alpha1.ReadyCondition`). */
export const READY = 'Ready';

const sameState = (a: Condition, b: Condition) =>
  a.type === b.type && a.status === b.status && (a.reason ?? '') === (b.reason ?? '') && (a.severity ?? '') === (b.severity ?? '') && (a.message ?? '') === (b.message ?? '');

/** kcp's `lexicographicLess`: Ready first, then by type. */
const order = (a: Condition, b: Condition) => (a.type === READY ? -1 : b.type === READY ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : 0);

/**
 * A copy of `conds` with `c` set (kcp `conditions.Set`): `lastTransitionTime` is kept when the
 * state (status, reason, severity, message) is unchanged, else now; sorted Ready first.
 */
export function setKcpCondition(conds: readonly Condition[] | undefined, c: Condition): Condition[] {
  const list = [...(conds ?? [])];
  const i = list.findIndex((x) => x.type === c.type);
  const next: Condition = { type: c.type, status: c.status };
  if (c.severity) next.severity = c.severity;
  if (c.reason) next.reason = c.reason;
  if (c.message) next.message = c.message;
  if (i >= 0 && sameState(list[i]!, next)) next.lastTransitionTime = list[i]!.lastTransitionTime;
  else next.lastTransitionTime = nowRFC3339();
  if (i >= 0) list[i] = next; else list.push(next);
  return list.sort(order);
}

/** `conditions.MarkTrue`. */
export function markTrue(conds: readonly Condition[] | undefined, type: string): Condition[] {
  return setKcpCondition(conds, { type, status: 'True' });
}

/** `conditions.MarkFalse`. */
export function markFalse(conds: readonly Condition[] | undefined, type: string, reason: string, severity: Severity, message: string): Condition[] {
  return setKcpCondition(conds, { type, status: 'False', reason, severity, message });
}

/** True when the condition of `type` exists with status True (`conditions.IsTrue`). */
export function isTrue(conds: readonly Condition[] | undefined, type: string): boolean {
  return conds?.find((c) => c.type === type)?.status === 'True';
}

/** True when the condition of `type` exists with status False (`conditions.IsFalse`). */
export function isFalse(conds: readonly Condition[] | undefined, type: string): boolean {
  return conds?.find((c) => c.type === type)?.status === 'False';
}

/** Merge priority of a group (kcp merge.go `mergePriority`): errors first, Unknown last. */
function priority(c: Condition): number {
  if (c.status === 'False') return c.severity === 'Error' ? 0 : c.severity === 'Warning' ? 1 : c.severity === 'Info' ? 2 : 99;
  if (c.status === 'True') return 3;
  if (c.status === 'Unknown') return 4;
  return 99;
}

/**
 * `conditions.SetSummary(obj, WithConditions(types...))`: a `Ready` condition summarising those
 * of `types` present on the object — True when the top group (lowest merge priority) is True,
 * else False (or Unknown) with the reason, severity and message of the first condition of that
 * group in `types` order. When none of `types` is present, nothing changes.
 */
export function setSummary(conds: readonly Condition[] | undefined, types: readonly string[]): Condition[] {
  const present = types.map((t) => conds?.find((c) => c.type === t)).filter((c): c is Condition => Boolean(c));
  if (!present.length) return [...(conds ?? [])];
  const top = Math.min(...present.map(priority));
  const group = present.filter((c) => priority(c) === top && c.status === present.find((x) => priority(x) === top)!.status);
  const first = group[0]!;
  if (first.status === 'True') return markTrue(conds, READY);
  return setKcpCondition(conds, { type: READY, status: first.status, reason: first.reason, severity: first.status === 'False' ? first.severity : '', message: first.message });
}
