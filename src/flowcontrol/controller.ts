/**
 * The priority-and-fairness dispatcher of a shard, after kube-apiserver's configController
 * (k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go): it digests the FlowSchemas and
 * PriorityLevelConfigurations of the configuration's logical cluster (`system:admin`) into one
 * queue set per priority level, classifies each request by the FlowSchemas in matching order
 * (precedence ascending, then name) and asks its level's queue set for seats.
 *
 * Concurrency: the server's limit (`--max-requests-inflight` + `--max-mutating-requests-inflight`)
 * is divided among the Limited levels by their nominal shares: NominalCL(i) = ceil(ServerCL ×
 * NCS(i) / ΣNCS). Borrowing between levels (lendablePercent, borrowingLimitPercent) is not
 * implemented: each level runs at its nominal limit.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import { StatusError } from '../apimachinery/errors.js';
import { MANDATORY_FLOW_SCHEMAS, MANDATORY_PRIORITY_LEVELS } from './bootstrap.js';
import { flowDistinguisher, matchesFlowSchema, userFlow, type RequestDigest } from './match.js';
import type { FlowControlMetrics, FlowControlSeries } from './metrics.js';
import { QueueSet, RejectedError, maxSeats, type Cancellation, type Ticket, type WorkEstimate } from './queueset.js';
import { hashFlow } from './shufflesharding.js';
import { CATCH_ALL, DEFAULT_MATCHING_PRECEDENCE, EXEMPT, type FlowSchemaSpec, type PriorityLevelSpec } from './types.js';

/** kube's answer to a request it will not serve now. */
export const TOO_MANY_REQUESTS_MESSAGE = 'Too many requests, please try again later.';
/** Seconds a refused client is told to wait (kube's `Retry-After: 1`). */
export const RETRY_AFTER_SECONDS = 1;

/** The 429 StatusError of a refused request (reason TooManyRequests, Retry-After 1 s). */
export function tooManyRequests(): StatusError {
  return new StatusError(429, 'TooManyRequests', TOO_MANY_REQUESTS_MESSAGE, { retryAfterSeconds: RETRY_AFTER_SECONDS });
}

/** Where the configuration is read from: the stored objects, and a notification when they change. */
export interface ConfigSource {
  flowSchemas(): readonly KubeObject[];
  priorityLevels(): readonly KubeObject[];
}

/** A digested FlowSchema. */
interface FlowSchemaState { name: string; uid: string; precedence: number; spec: FlowSchemaSpec; level: PriorityLevelState }

/** A digested priority level and its queue set (none when exempt). */
class PriorityLevelState {
  nominalCL = 0;
  queueSet?: QueueSet;
  constructor(readonly name: string, public uid: string, public spec: PriorityLevelSpec) {}
  get exempt(): boolean { return this.spec.type === 'Exempt'; }
}

/** The result of classifying a request. */
export interface Classification {
  flowSchema: string;
  flowSchemaUID: string;
  priorityLevel: string;
  priorityLevelUID: string;
  /** `<cluster>/<user>`, `<cluster>/<namespace>` or `<cluster>`. */
  flow: string;
  exempt: boolean;
}

/**
 * A request admitted to execute; `release` (idempotent) frees its seats. `seatsOf` is the flow
 * whose seats it holds, undefined for an exempt request (it holds none).
 */
export interface Admission { classification: Classification; readonly seatsOf: string | undefined; release(): void }

/** Options of the dispatcher. */
export interface DispatcherOptions {
  /** Seats of the whole server (kube: max-requests-inflight + max-mutating-requests-inflight). */
  serverConcurrencyLimit: number;
  /** Longest wait in a queue before a 429 (kube: a quarter of the request timeout; default 15 s). */
  queueWaitLimitMs?: number;
  metrics?: FlowControlMetrics;
  /** Monotonic clock in ms (tests). */
  now?: () => number;
}

/** The dispatcher: configuration digestion, classification and queuing. */
export class Dispatcher {
  private schemas: FlowSchemaState[] = [];
  private readonly levels = new Map<string, PriorityLevelState>();
  private readonly waitLimitMs: number;
  /** Flow hashes by `<schema> NUL <flow>` (at most FLOW_HASH_CACHE_SIZE; cleared when full): SHA-256 per request costs more than the rest of the dispatch. */
  private readonly hashes = new Map<string, bigint>();
  /** FlowSchemas whose priority level does not exist (kube's Dangling condition), by name → level name. */
  dangling = new Map<string, string>();

  constructor(private readonly source: ConfigSource, private readonly options: DispatcherOptions) {
    this.waitLimitMs = options.queueWaitLimitMs ?? 15_000;
    this.reconfigure();
  }

  /** Re-reads the configuration: new levels get queue sets, changed ones new limits, removed ones drain. */
  reconfigure(): void {
    const plObjects = new Map<string, KubeObject>();
    for (const o of this.source.priorityLevels()) if (o.metadata.name) plObjects.set(o.metadata.name, o);
    // The mandatory objects apply even while missing from storage (kube imagines them too).
    for (const [name, spec] of Object.entries(MANDATORY_PRIORITY_LEVELS)) if (!plObjects.has(name)) plObjects.set(name, { apiVersion: '', kind: '', metadata: { name, uid: '' }, spec });
    const seen = new Set<string>();
    let sumShares = 0;
    for (const [name, o] of plObjects) {
      const spec = o.spec as PriorityLevelSpec;
      sumShares += shareOf(spec);
      seen.add(name);
      let level = this.levels.get(name);
      if (!level) { level = new PriorityLevelState(name, o.metadata.uid ?? '', spec); this.levels.set(name, level); }
      level.uid = o.metadata.uid ?? '';
      level.spec = spec;
    }
    for (const [name, level] of this.levels) {
      if (!seen.has(name)) {
        // A removed level keeps serving what it holds and is dropped once idle.
        if (!level.queueSet || level.queueSet.idle) { this.levels.delete(name); this.options.metrics?.removeLevel(name); }
        continue;
      }
      const shares = shareOf(level.spec);
      level.nominalCL = sumShares > 0 ? Math.ceil(this.options.serverConcurrencyLimit * shares / sumShares) : 0;
      this.options.metrics?.nominalLimit(name, level.nominalCL);
      if (level.exempt) { level.queueSet = undefined; continue; }
      const response = level.spec.limited?.limitResponse;
      const queuing = response?.type === 'Queue' ? response.queuing : undefined;
      const config = {
        name, concurrencyLimit: level.nominalCL,
        queues: queuing?.queues ?? 0, handSize: queuing?.handSize ?? 1, queueLengthLimit: queuing?.queueLengthLimit ?? 1,
      };
      if (level.queueSet) level.queueSet.setConfig(config);
      else level.queueSet = new QueueSet(config, this.options.now);
    }
    const fsObjects = new Map<string, KubeObject>();
    for (const o of this.source.flowSchemas()) if (o.metadata.name) fsObjects.set(o.metadata.name, o);
    for (const [name, spec] of Object.entries(MANDATORY_FLOW_SCHEMAS)) if (!fsObjects.has(name)) fsObjects.set(name, { apiVersion: '', kind: '', metadata: { name, uid: '' }, spec });
    const schemas: FlowSchemaState[] = [];
    const dangling = new Map<string, string>();
    for (const [name, o] of fsObjects) {
      const spec = o.spec as FlowSchemaSpec;
      const levelName = spec?.priorityLevelConfiguration?.name ?? '';
      const level = seen.has(levelName) ? this.levels.get(levelName) : undefined;
      if (!level) { dangling.set(name, levelName); continue; }
      schemas.push({ name, uid: o.metadata.uid ?? '', precedence: spec.matchingPrecedence ?? DEFAULT_MATCHING_PRECEDENCE, spec, level });
    }
    schemas.sort((a, b) => a.precedence - b.precedence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.schemas = schemas;
    this.dangling = dangling;
  }

  private hashOf(flowSchema: string, flow: string): bigint {
    const key = `${flowSchema}\0${flow}`;
    let h = this.hashes.get(key);
    if (h === undefined) {
      if (this.hashes.size >= FLOW_HASH_CACHE_SIZE) this.hashes.clear();
      h = hashFlow(flowSchema, flow);
      this.hashes.set(key, h);
    }
    return h;
  }

  /** Nominal seats of each priority level. */
  get nominalLimits(): Record<string, number> {
    return Object.fromEntries([...this.levels].map(([n, l]) => [n, l.nominalCL]));
  }

  /**
   * The FlowSchema and priority level of a request: the first matching schema in matching order;
   * a request no schema matches goes to catch-all (kube does the same).
   */
  classify(d: RequestDigest): Classification {
    for (const fs of this.schemas) {
      if (!matchesFlowSchema(d, fs.spec)) continue;
      return { flowSchema: fs.name, flowSchemaUID: fs.uid, priorityLevel: fs.level.name, priorityLevelUID: fs.level.uid, flow: flowDistinguisher(d, fs.spec), exempt: fs.level.exempt };
    }
    const level = this.levels.get(CATCH_ALL) ?? this.levels.get(EXEMPT)!;
    return { flowSchema: CATCH_ALL, flowSchemaUID: '', priorityLevel: level.name, priorityLevelUID: level.uid, flow: userFlow(d.cluster, d.user.name), exempt: level.exempt };
  }

  /**
   * Classifies a request and waits for its seats. `onClassified` sees the classification first
   * (for the response headers, set on refusals too).
   * @throws StatusError 429 TooManyRequests (Retry-After 1) when its queue is full, its level
   *   rejects, it waited longer than the queue wait limit, or `cancellation.cancel` was called
   *   while it waited
   */
  admit(d: RequestDigest, work: WorkEstimate, opts: { cancellation?: Cancellation; onClassified?: (c: Classification) => void } = {}): Admission | Promise<Admission> {
    const c = this.classify(d);
    opts.onClassified?.(c);
    const series = this.options.metrics?.of(c.priorityLevel, c.flowSchema);
    const level = this.levels.get(c.priorityLevel)!;
    const seats = maxSeats(work);
    if (!level.queueSet) {
      series?.started(seats, 0);
      return new Grant(c, series, seats, undefined);
    }
    let started: Ticket | Promise<Ticket>;
    try {
      started = level.queueSet.start(this.hashOf(c.flowSchema, c.flow), work, { waitLimitMs: this.waitLimitMs, cancellation: opts.cancellation });
    } catch (err) {
      return this.refused(c, err, 0);
    }
    if (!(started instanceof Promise)) {
      series?.started(seats, 0);
      return new Grant(c, series, seats, started);
    }
    const since = performance.now();
    series?.queued(1);
    return started.then(
      (t) => { series?.queued(-1); series?.started(seats, t.waitedMs / 1000); return new Grant(c, series, seats, t); },
      (err: unknown) => { series?.queued(-1); return this.refused(c, err, performance.now() - since); },
    );
  }

  private refused(c: Classification, err: unknown, waitedMs: number): never {
    if (err instanceof RejectedError) {
      this.options.metrics?.rejectedRequest(c.priorityLevel, c.flowSchema, err.reason, waitedMs / 1000);
      throw tooManyRequests();
    }
    throw err;
  }
}

/** The seats of an admitted request (a class, not closures: one is made per request). */
class Grant implements Admission {
  private done = false;
  constructor(readonly classification: Classification, private readonly series: FlowControlSeries | undefined, private readonly seats: number, private readonly ticket: Ticket | undefined) {}
  get seatsOf(): string | undefined { return this.classification.exempt ? undefined : this.classification.flow; }
  release(): void {
    if (this.done) return;
    this.done = true;
    this.ticket?.finish();
    this.series?.finished(this.seats);
  }
}

/** Flows whose hash the dispatcher remembers. */
const FLOW_HASH_CACHE_SIZE = 10_000;

function shareOf(spec: PriorityLevelSpec | undefined): number {
  if (!spec) return 0;
  if (spec.type === 'Exempt') return spec.exempt?.nominalConcurrencyShares ?? 0;
  return spec.limited?.nominalConcurrencyShares ?? 0;
}
