/**
 * The request filter between authentication/impersonation and authorization (kube's
 * `WithPriorityAndFairness`, k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go, or,
 * with priority and fairness off, `WithMaxInFlightLimit`, maxinflight.go). Self-contained: it
 * takes the request's attributes and returns a grant to release when the request's work is done
 * (a watch: once its initial events are sent), or throws kube's 429.
 */
import type { UserInfo } from '../registry/store.js';
import { Dispatcher, tooManyRequests, type Classification, type ConfigSource } from './controller.js';
import { estimateWork, type WorkCounts } from './estimator.js';
import { userFlow } from './match.js';
import type { FlowControlMetrics } from './metrics.js';
import type { Cancellation, WorkEstimate } from './queueset.js';

/** kube's response headers naming the FlowSchema and priority level a request was classified into (their UIDs). */
export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-PF-PriorityLevel-UID';

/**
 * kube's defaults of `--max-requests-inflight` (400) and `--max-mutating-requests-inflight` (200).
 * Fewer seats suit one event loop better under a flood (global-default at 13 instead of 49
 * seats: another tenant's GET p50 19–23 → 8–9 ms in the noisy-neighbour write flood,
 * docs/benchmarks.md) but cost a lone tenant about 11 % of its creates, and kube's seats meet the
 * benchmark's goals. A tenant whose clients stop reading no longer holds seats for it
 * (src/endpoints/filters/stalledreaders.ts), so the seat count is free to change on figures alone.
 */
export const DEFAULT_MAX_REQUESTS_INFLIGHT = 400;
export const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT = 200;

/** What the filter reads of a request. */
export interface FlowControlRequest {
  user: UserInfo;
  /** Resolved logical cluster, `*` (wildcard) or '' (no `/clusters/` prefix). */
  cluster: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  isResourceRequest: boolean;
  /** Path below the cluster prefix. */
  path: string;
  /** A watch (or another request that holds its connection open). */
  isLongRunning: boolean;
  /** Watch-cache key of the resource (`<group>/<plural>`) for the work estimate; undefined when unresolved. */
  groupResource?: string;
  /** The query (list options) for the work estimate. */
  query?: URLSearchParams;
  /** The object the request names, for the work estimate. */
  name?: string;
  /** Bytes of the request body, for the work estimate. */
  bodyBytes?: number;
  /** A precomputed estimate; without it the filter estimates from the watch cache's counts. */
  estimate?: WorkEstimate;
  /** Withdraws the request while it waits in a queue (the client went away): see {@link Cancellation}. */
  cancellation?: Cancellation;
  /** Sets a response header (the X-Kubernetes-PF-* headers, on refusals too). */
  setHeader?: (name: string, value: string) => void;
}

/** Seats held by an admitted request; `release` is idempotent. */
export interface FlowControlGrant {
  /** The classification (APF), undefined with the max-in-flight filter. */
  readonly classification?: Classification;
  /**
   * The flow whose seats the grant holds (`<cluster>/<user>` with the max-in-flight filter);
   * undefined when it holds none: an exempt request, a watch with priority and fairness off.
   */
  readonly seatsOf: string | undefined;
  release(): void;
}

/** The filter. */
export interface RequestFilter {
  /**
   * Admits a request now, later (a promise) or never.
   * @throws StatusError 429 TooManyRequests with Retry-After 1 ("Too many requests, please try again later.")
   */
  admit(req: FlowControlRequest): FlowControlGrant | Promise<FlowControlGrant>;
  /** Re-reads the flow-control configuration (APF; no-op otherwise). */
  reconfigure(): void;
  /** The dispatcher (APF on), for status and tests. */
  readonly dispatcher?: Dispatcher;
}

/** Options of {@link createRequestFilter} (kube's flags). */
export interface RequestFilterOptions {
  /** `--enable-priority-and-fairness` (default true). */
  enablePriorityAndFairness?: boolean;
  /** `--max-requests-inflight` (default {@link DEFAULT_MAX_REQUESTS_INFLIGHT}; 0: unlimited without APF). */
  maxRequestsInflight?: number;
  /** `--max-mutating-requests-inflight` (default {@link DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT}; 0: unlimited without APF). */
  maxMutatingRequestsInflight?: number;
  /** Configuration (APF). */
  config: ConfigSource;
  /** Object and watch counts for the work estimator (APF). */
  counts: WorkCounts;
  metrics?: FlowControlMetrics;
  /** Longest wait in a queue (APF; default 15 s, a quarter of kube's 60 s request timeout). */
  queueWaitLimitMs?: number;
}

const NOTHING: FlowControlGrant = { seatsOf: undefined, release() { /* nothing held */ } };

/** The filter of kube's flags: priority and fairness, or max-in-flight limits when it is off. */
export function createRequestFilter(opts: RequestFilterOptions): RequestFilter {
  const maxReadOnly = opts.maxRequestsInflight ?? DEFAULT_MAX_REQUESTS_INFLIGHT;
  const maxMutating = opts.maxMutatingRequestsInflight ?? DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT;
  if (opts.enablePriorityAndFairness === false) return maxInFlightFilter(maxReadOnly, maxMutating);
  const dispatcher = new Dispatcher(opts.config, { serverConcurrencyLimit: maxReadOnly + maxMutating, metrics: opts.metrics, queueWaitLimitMs: opts.queueWaitLimitMs });
  return {
    dispatcher,
    reconfigure: () => dispatcher.reconfigure(),
    admit(req) {
      const work = req.estimate ?? estimateWork(req, opts.counts);
      return dispatcher.admit(req, work, {
        cancellation: req.cancellation,
        onClassified: req.setHeader && ((c) => {
          req.setHeader!(FLOW_SCHEMA_UID_HEADER, c.flowSchemaUID);
          req.setHeader!(PRIORITY_LEVEL_UID_HEADER, c.priorityLevelUID);
        }),
      });
    },
  };
}

const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);

/**
 * kube's max-in-flight filter: at most `maxReadOnly` get/list requests and `maxMutating` others
 * at once (0: unlimited); long-running requests are not counted; system:masters is never refused.
 */
function maxInFlightFilter(maxReadOnly: number, maxMutating: number): RequestFilter {
  const inFlight = { readOnly: 0, mutating: 0 };
  return {
    reconfigure() { /* no configuration */ },
    admit(req) {
      if (req.isLongRunning) return NOTHING;
      const kind = READ_ONLY_VERBS.has(req.verb) ? 'readOnly' : 'mutating';
      const limit = kind === 'readOnly' ? maxReadOnly : maxMutating;
      if (limit > 0 && inFlight[kind] >= limit && !req.user.groups.includes('system:masters')) throw tooManyRequests();
      inFlight[kind]++;
      let done = false;
      return { seatsOf: userFlow(req.cluster, req.user.name), release() { if (!done) { done = true; inFlight[kind]--; } } };
    },
  };
}
