/**
 * Work estimation, kube-apiserver's (k8s.io/apiserver/pkg/util/flowcontrol/request:
 * list_work_estimator.go, mutating_work_estimator.go, config.go): how many seats a request holds.
 *
 * - LIST (and WATCH with initial events): one seat per 100 objects it processes, at least 1,
 *   at most 10. The object count comes from the watch cache, per logical cluster (and namespace
 *   when the request names one): kcp's unit of a list. Every list here is served from the watch
 *   cache, so a selector processes every stored object, while a `limit` without a selector stops
 *   after `limit` objects. Not kube's: also one seat per 100 KiB of the objects' stored JSON,
 *   whichever gives more. kube counts objects only, which makes a LIST of 60 objects of 500 KB
 *   (30 MB to write) one seat; many of them, slow to write (YAML) or to a client that reads
 *   slowly, held every seat of their priority level while the other tenants' requests waited
 *   for seconds. For objects of about 1 KiB both counts agree.
 * - create/update/patch/delete: 1 seat while executing, then, with at least 10 watches open on
 *   the resource, ceil(watches / 10) seats for 5 ms per seat (the fan-out of its event), reshaped
 *   to at most 10 seats for a proportionally longer time.
 * - everything else (get, deletecollection, non-resource requests): 1 seat.
 * - Not kube's: a get, create, update, patch or delete holds a seat per 100 KiB of its request
 *   body or of the stored JSON of the object it names, whichever is larger (at most 10). Its
 *   work grows with the object (decoding, validation, managed fields, encoding: about 150 ms of
 *   the event loop for a write of 1.4 MB holding 700,000 values), all of it on the one event
 *   loop, where kube spreads it over goroutines. With one seat each, 20 such writers of one
 *   workspace kept dozens of these in progress at once and another workspace's GET waited for
 *   seconds behind them.
 */
import type { WorkEstimate } from './queueset.js';

/** Objects one seat accounts for (kube's `objectsPerSeat`). */
export const OBJECTS_PER_SEAT = 100;
/** Seats of the cheapest request (kube's `minimumSeats`). */
export const MINIMUM_SEATS = 1;
/** Seats of the most expensive request (kube's `maximumSeatsLimit`). */
export const MAXIMUM_SEATS = 10;
/** Characters of stored JSON one seat of a LIST accounts for: 100 objects of 1 KiB (see the module comment). */
export const STORED_CHARS_PER_SEAT = 100 * 1024;
/** Watches one seat of event fan-out accounts for (kube's `watchesPerSeat`). */
export const WATCHES_PER_SEAT = 10;
/** Time one seat is held per event fan-out (kube's `eventAdditionalDuration`, 5 ms). */
export const EVENT_ADDITIONAL_DURATION_MS = 5;

/** Counts the estimator reads; both must be cheap (O(1)): they run on every request. */
export interface WorkCounts {
  /** Objects of a resource (watch-cache key `<group>/<plural>`) in a logical cluster (`*`: all), in one namespace when given. */
  objects(groupResource: string, cluster: string, namespace?: string): number;
  /** Characters of those objects' stored JSON. */
  storedSize(groupResource: string, cluster: string, namespace?: string): number;
  /** Open watches that see events of a resource in a logical cluster (its own and wildcard ones). */
  watches(groupResource: string, cluster: string): number;
  /** Characters of one object's stored JSON; 0 when it does not exist. */
  objectSize(groupResource: string, cluster: string, namespace: string, name: string): number;
}

/** What the estimator reads of a request. */
export interface EstimateInput {
  verb: string;
  isResourceRequest: boolean;
  /** Watch-cache key of the resource; undefined when not resolved (then: minimum seats, as kube's unknown count). */
  groupResource?: string;
  cluster: string;
  namespace: string;
  subresource: string;
  /** The object the request names (get, update, patch, delete); absent for collections. */
  name?: string;
  /** Bytes of the request body (0 or absent: none). */
  bodyBytes?: number;
  /** The request's query (`limit`, `labelSelector`, `fieldSelector`, `sendInitialEvents`, `resourceVersion`). */
  query?: URLSearchParams;
}

const MINIMUM: WorkEstimate = { initialSeats: MINIMUM_SEATS, finalSeats: 0, additionalLatencyMs: 0 };

/** The work of a request (seats and additional latency), from cheap counts. */
export function estimateWork(input: EstimateInput, counts: WorkCounts): WorkEstimate {
  if (!input.isResourceRequest || !input.groupResource) return MINIMUM;
  switch (input.verb) {
    case 'list': case 'watch': return estimateList(input, counts);
    case 'create': case 'update': case 'patch': case 'delete': return withObjectSize(estimateMutating(input, counts), input, counts);
    case 'get': return withObjectSize(MINIMUM, input, counts);
    default: return MINIMUM;
  }
}

/** `work` with at least a seat per {@link STORED_CHARS_PER_SEAT} of the request body or of the named object's stored JSON (see the module comment). */
function withObjectSize(work: WorkEstimate, input: EstimateInput, counts: WorkCounts): WorkEstimate {
  const stored = input.name ? counts.objectSize(input.groupResource!, input.cluster, input.namespace, input.name) : 0;
  const seats = Math.min(MAXIMUM_SEATS, Math.ceil(Math.max(input.bodyBytes ?? 0, stored) / STORED_CHARS_PER_SEAT));
  return seats > work.initialSeats ? { ...work, initialSeats: seats } : work;
}

function estimateList(input: EstimateInput, counts: WorkCounts): WorkEstimate {
  const q = input.query;
  if (input.verb === 'watch') {
    // kube counts a watch's initial events only when asked for with sendInitialEvents=true; here a
    // watch from no resource version (or "0") sends the current state as ADDED events as well, on
    // the same event loop, so it is estimated like a list.
    const rv = q?.get('resourceVersion');
    const initial = q?.get('sendInitialEvents') === 'true' || rv === null || rv === undefined || rv === '' || rv === '0';
    if (!initial) return MINIMUM;
  }
  const namespace = input.namespace || undefined;
  const stored = counts.objects(input.groupResource!, input.cluster, namespace);
  const limitParam = q?.get('limit');
  const limit = limitParam && /^\d+$/.test(limitParam) ? Number(limitParam) : 0;
  const selective = !!(q?.get('labelSelector') || q?.get('fieldSelector'));
  const processed = input.verb === 'list' && limit > 0 && !selective ? Math.min(limit, stored) : stored;
  // The objects it writes: all of them, or `limit` of average size.
  const size = stored ? counts.storedSize(input.groupResource!, input.cluster, namespace) * (processed / stored) : 0;
  const seats = Math.min(MAXIMUM_SEATS, Math.max(MINIMUM_SEATS, Math.ceil(processed / OBJECTS_PER_SEAT), Math.ceil(size / STORED_CHARS_PER_SEAT)));
  return { initialSeats: seats, finalSeats: 0, additionalLatencyMs: 0 };
}

function estimateMutating(input: EstimateInput, counts: WorkCounts): WorkEstimate {
  // A TokenRequest writes nothing watchers see (kube's isRequestExemptFromWatchEvents).
  if (input.groupResource === 'core/serviceaccounts' && input.subresource === 'token') return MINIMUM;
  const watches = counts.watches(input.groupResource!, input.cluster);
  if (watches < WATCHES_PER_SEAT) return MINIMUM;
  let finalSeats = Math.ceil(watches / WATCHES_PER_SEAT);
  // Work of the fan-out in seat-milliseconds, kept when the seats are capped.
  const work = finalSeats * EVENT_ADDITIONAL_DURATION_MS;
  if (finalSeats > MAXIMUM_SEATS) finalSeats = MAXIMUM_SEATS;
  return { initialSeats: MINIMUM_SEATS, finalSeats, additionalLatencyMs: work / finalSeats };
}
