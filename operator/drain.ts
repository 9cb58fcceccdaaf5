/**
 * Draining a Shard through kcp (docs/operator.md, "Draining and removing a shard"): the operator
 * annotates the shard's core.kcp.io Shard object in the root workspace `kcp-ts.io/drain=true`
 * (src/shards/directory.ts DRAIN_ANNOTATION); the root shard then takes no new workspaces onto it
 * and migrates each of its logical clusters to the other shards with a LogicalClusterMigration
 * labelled `kcp-ts.io/drained-shard=<shard>` (src/shards/migration.ts). The operator watches what
 * is left — the shard's own LogicalClusters that a drain moves, and the unfinished or failed
 * migrations of the label — reports it as the `Drained` condition, and once nothing is left lets
 * the Shard's pods go (spec.drain: scaled to 0, the Shard kept) or removes the shard (deletion).
 *
 * {@link decideDrain} is the decision, a pure function of what was observed (unit-tested);
 * {@link observeDrain} does the observing over kcp's API.
 */
import { CLUSTER_ANNOTATION } from '../src/apimachinery/meta.js';
import type { RestClient, RestResponse } from '../src/client/rest.js';
import { DRAIN_ANNOTATION } from '../src/shards/directory.js';
import { isMigratable } from '../src/shards/migration.js';
import type { Condition } from './api/types.js';

export { DRAIN_ANNOTATION };

/** Type of the condition a draining Shard reports. */
export const DRAINED_CONDITION = 'Drained';
/** Label of the LogicalClusterMigrations the root shard creates for a drained shard (src/shards/migration.ts). */
export const DRAINED_SHARD_LABEL = 'kcp-ts.io/drained-shard';
/**
 * Annotation of an operator `Shard` (value `true`) that lets its deletion go on without draining:
 * for a shard that cannot be reached any more; its workspaces are lost with it.
 */
export const SKIP_DRAIN_ANNOTATION = 'operator.kcp-ts.io/skip-drain';
/** Logical cluster names a condition message lists at most. */
const SAMPLE = 5;
/** Page size of the lists an observation reads (LogicalClusters, migrations). */
const PAGE = 500;
/** How often a drain in progress is looked at again, in ms. */
export const DRAIN_POLL_MS = 5000;

/** What {@link observeDrain} saw of a shard in kcp. */
export interface DrainObservation {
  /** Its core.kcp.io Shard object exists in root (a shard never registered holds nothing). */
  registered: boolean;
  /** That object carries `kcp-ts.io/drain: "true"`. */
  annotated: boolean;
  /** Logical clusters on the shard that a drain moves; undefined when the shard could not be asked. */
  remaining?: number;
  /** Up to {@link SAMPLE} of their names. */
  sample: string[];
  /** Why the shard could not be asked, when `remaining` is undefined. */
  unreachable?: string;
  /** Drain migrations of the shard neither Completed nor Failed. */
  unfinished: number;
  /** Failed drain migrations of the shard (at most {@link SAMPLE}): name and the reason kcp gave. */
  failed: { name: string; message: string }[];
}

/** The input of {@link decideDrain}. */
export interface DrainInput {
  /** `spec.drain`. */
  drain: boolean;
  /** The Shard is being deleted (its finalizer drains first). */
  deleting: boolean;
  /** The previous `Drained` condition, if any (the record that the operator drained this shard). */
  previous?: Condition;
  /** The shard's pods are running and ready (a shard scaled to 0 is not asked). */
  podsReady: boolean;
  /** What kcp says; undefined when it was not asked (see {@link needsObservation}). */
  observed?: DrainObservation;
}

/** What to do, as {@link decideDrain} decides it. */
export interface DrainDecision {
  /** Set (`true`) or remove (`false`) the drain annotation on the kcp Shard object; undefined: leave it. */
  annotate?: boolean;
  /** Run the shard's pods at 0 replicas. */
  scaleToZero: boolean;
  /** The shard holds nothing any more: a deletion may remove it. */
  drained: boolean;
  /** The `Drained` condition to report (status, reason, message); undefined: none (no drain). */
  condition?: Pick<Condition, 'status' | 'reason' | 'message'>;
  /** Look again after this many ms; undefined: only on the next change. */
  requeueAfterMs?: number;
}

/** Whether {@link decideDrain} needs an observation of kcp for this input (asking kcp costs requests). */
export function needsObservation(input: Omit<DrainInput, 'observed'>): boolean {
  if (input.drain || input.deleting) return true; // drained too: a shard registered meanwhile gets the annotation
  return input.previous !== undefined && input.podsReady; // undraining: the annotation goes once the pods are back
}

/**
 * The drain decision for one Shard (see the module comment):
 * - no drain asked and none recorded: nothing (no condition);
 * - drain asked (spec.drain or deletion), already drained (previous `Drained=True`, reason
 *   Drained): stays drained, pods at 0 — a shard at 0 replicas cannot be asked again and takes
 *   no workspaces (its kcp Shard object keeps the annotation, set again if it is missing);
 * - not registered in root: drained (nothing was ever scheduled onto it);
 * - registered, not annotated: annotate; `Draining`;
 * - annotated, shard not reachable: `ShardUnreachable` (a deletion waits, see
 *   {@link SKIP_DRAIN_ANNOTATION});
 * - logical clusters or unfinished migrations left: `Draining` with the count; a failed drain
 *   migration makes it `DrainFailed` (the root shard does not retry it by itself: delete it);
 * - nothing left: `Drained=True`, pods to 0;
 * - drain no longer asked but recorded: pods back; once ready, the annotation is removed and the
 *   condition goes (`Undraining` until then).
 */
export function decideDrain(input: DrainInput): DrainDecision {
  const { drain, deleting, previous, podsReady, observed } = input;
  if (!drain && !deleting) {
    if (!previous) return { scaleToZero: false, drained: false };
    if (!podsReady || !observed) {
      return { scaleToZero: false, drained: false, condition: { status: 'False', reason: 'Undraining', message: 'drain ended: waiting for the shard\'s pods to be ready before it takes workspaces again' }, requeueAfterMs: DRAIN_POLL_MS };
    }
    if (observed.annotated) return { annotate: false, scaleToZero: false, drained: false, condition: { status: 'False', reason: 'Undraining', message: 'drain ended: removing the drain annotation' }, requeueAfterMs: 0 };
    return { scaleToZero: false, drained: false };
  }
  if (previous?.status === 'True' && previous.reason === 'Drained') {
    // Its pods are at 0, so it cannot be asked; a pod that registered it just before it went
    // left the kcp Shard without the annotation: set it, so nothing is scheduled onto it.
    const annotate = observed?.registered && !observed.annotated ? { annotate: true } : {};
    return { ...annotate, scaleToZero: true, drained: true, condition: { status: 'True', reason: 'Drained', message: previous.message ?? 'no logical cluster left' } };
  }
  if (!observed) {
    return { scaleToZero: false, drained: false, condition: { status: 'False', reason: 'ShardUnreachable', message: 'waiting for the shard to be ready to drain it' }, requeueAfterMs: DRAIN_POLL_MS };
  }
  if (!observed.registered) {
    return { scaleToZero: true, drained: true, condition: { status: 'True', reason: 'Drained', message: 'not registered in the root workspace: no logical cluster was ever scheduled onto it' } };
  }
  if (!observed.annotated) {
    return { annotate: true, scaleToZero: false, drained: false, condition: { status: 'False', reason: 'Draining', message: `annotating the kcp Shard ${DRAIN_ANNOTATION}=true` }, requeueAfterMs: 0 };
  }
  if (observed.remaining === undefined) {
    return { scaleToZero: false, drained: false, condition: { status: 'False', reason: 'ShardUnreachable', message: `cannot list the shard's logical clusters: ${observed.unreachable ?? 'not reachable'}` }, requeueAfterMs: DRAIN_POLL_MS };
  }
  if (observed.failed.length) {
    const which = observed.failed.map((f) => `${f.name}: ${f.message}`).join('; ');
    return { scaleToZero: false, drained: false, condition: { status: 'False', reason: 'DrainFailed', message: `${observed.remaining} logical clusters left; failed LogicalClusterMigrations (delete one to retry it): ${which}` }, requeueAfterMs: DRAIN_POLL_MS };
  }
  if (observed.remaining > 0 || observed.unfinished > 0) {
    const names = observed.sample.length ? ` (${observed.sample.join(', ')}${observed.remaining > observed.sample.length ? ', …' : ''})` : '';
    return { scaleToZero: false, drained: false, condition: { status: 'False', reason: 'Draining', message: `${observed.remaining} logical clusters left${names}, ${observed.unfinished} migrations unfinished` }, requeueAfterMs: DRAIN_POLL_MS };
  }
  return { scaleToZero: true, drained: true, condition: { status: 'True', reason: 'Drained', message: 'no logical cluster left' } };
}

/** `previous` updated to `want` (its lastTransitionTime kept when the status did not change). */
export function drainedCondition(want: Pick<Condition, 'status' | 'reason' | 'message'>, previous: Condition | undefined, generation: number | undefined, now: Date): Condition {
  return {
    type: DRAINED_CONDITION, status: want.status, reason: want.reason, message: want.message,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTransitionTime: previous && previous.status === want.status && previous.lastTransitionTime ? previous.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

const errorOf = (res: RestResponse): string => `HTTP ${res.status}: ${(res.json as { message?: string } | undefined)?.message ?? res.body.slice(0, 200)}`;

/** Path of a shard's core.kcp.io Shard object in root. */
export function kcpShardPath(shard: string): string {
  return `/clusters/root/apis/core.kcp.io/v1alpha1/shards/${encodeURIComponent(shard)}`;
}

/**
 * Reads a shard's drain state: its kcp Shard object and drain migrations through `root` (the
 * root shard), its LogicalClusters through `self` (the shard, when given: a shard at 0 replicas
 * is not asked), each list in pages of {@link PAGE}, keeping only counts and a few names.
 * @throws {Error} when the root shard does not answer as expected (the caller retries)
 */
export async function observeDrain(root: RestClient, self: RestClient | undefined, shard: string): Promise<DrainObservation> {
  const got = await root.request('GET', kcpShardPath(shard));
  if (got.status === 404) return { registered: false, annotated: false, remaining: 0, sample: [], unfinished: 0, failed: [] };
  if (got.status !== 200) throw new Error(`reading the kcp Shard ${shard}: ${errorOf(got)}`);
  const annotated = (got.json as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.[DRAIN_ANNOTATION] === 'true';
  const observation: DrainObservation = { registered: true, annotated, sample: [], unfinished: 0, failed: [] };
  if (!annotated) return observation;

  const selector = encodeURIComponent(`${DRAINED_SHARD_LABEL}=${shard}`);
  await eachPage(root, `/clusters/root/apis/migration.kcp.io/v1alpha1/logicalclustermigrations?labelSelector=${selector}`, (m) => {
    const status = (m.status ?? {}) as { phase?: string; conditions?: { type: string; status: string; message?: string }[] };
    if (status.phase === 'Failed') {
      // The root shard records why in `Completed=False` (src/shards/migration.ts).
      const why = status.conditions?.find((c) => c.type === 'Completed' && c.status === 'False')?.message ?? 'failed';
      if (observation.failed.length < SAMPLE) observation.failed.push({ name: m.metadata.name, message: why });
    } else if (status.phase !== 'Completed') {
      observation.unfinished++;
    }
  });
  if (!self) return { ...observation, unreachable: 'the shard has no ready pods' };
  try {
    let remaining = 0;
    await eachPage(self, '/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters', (lc) => {
      const cluster = lc.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '';
      if (!isMigratable(cluster)) return;
      remaining++;
      if (observation.sample.length < SAMPLE) observation.sample.push(cluster);
    });
    observation.remaining = remaining;
  } catch (err) {
    observation.unreachable = (err as Error).message;
    observation.sample = [];
  }
  return observation;
}

type Item = { metadata: { name: string; annotations?: Record<string, string> }; status?: unknown };

/** Lists `path` in pages (limit/continue), calling `each` per item. @throws {Error} on an answer other than 200 */
async function eachPage(client: RestClient, path: string, each: (item: Item) => void): Promise<void> {
  let token = '';
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await client.request('GET', `${path}${sep}limit=${PAGE}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
    if (res.status !== 200) throw new Error(`listing ${path.split('?')[0]}: ${errorOf(res)}`);
    const list = res.json as { metadata?: { continue?: string }; items?: Item[] };
    for (const item of list.items ?? []) each(item);
    token = list.metadata?.continue ?? '';
  } while (token);
}
