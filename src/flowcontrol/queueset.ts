/**
 * Fair queuing for one priority level, after kube-apiserver's queueset
 * (k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset/queueset.go): requests hold
 * "seats" of the level's concurrency limit while they execute; those that do not fit wait in
 * one of the level's queues, picked by shuffle sharding from the flow's hash; the next request
 * to run is the head of the queue whose virtual finish time is the smallest, virtual time
 * advancing (in seat-seconds) as if every active queue were served at an equal share of the
 * level's seats. A flow that floods its queues therefore waits behind itself, not in front of
 * another flow.
 *
 * On Node's single event loop a seat bounds how many requests may have their work in progress at
 * once: it is held from dispatch until the response has been written (a watch: until its initial
 * events are sent).
 *
 * One difference from kube: when the chosen head does not fit in the free seats (a wide LIST
 * waiting for seats to free), kube dispatches nothing until it fits; here a one-seat head of
 * another queue may run in the meantime ("backfill"), in virtual-finish order, as long as the
 * seats of all backfilled requests leave room for the blocked head
 * (`backfilled seats + 1 ≤ limit − head's seats`): the head then fits once the requests that
 * held its seats before it blocked have finished, whatever the backfilled ones do, so it is
 * delayed by no backfilled request. Why: here a LIST of thousands of objects holds its seats for
 * hundreds of milliseconds (one event loop writes it as the client reads), and under kube's rule
 * another tenant's GET waited behind a flood's LISTs for as long (noisy-neighbour benchmark, LIST
 * flood: the other tenant's GET p99 763 ms with kube's rule, 225 ms with backfill, 318 ms without
 * priority and fairness; docs/benchmarks.md).
 */
import { runInTurnBudget } from '../endpoints/slicing.js';
import { Dealer } from './shufflesharding.js';

/**
 * Work of a request (kube's `WorkEstimate`, request/width.go): seats held while it executes,
 * seats held for `additionalLatencyMs` after it finished (the fan-out of a write's events to
 * watchers), in milliseconds.
 */
export interface WorkEstimate {
  initialSeats: number;
  finalSeats: number;
  additionalLatencyMs: number;
}

/** Seats a request occupies from dispatch until its additional latency has passed: the larger of initial and final. */
export function maxSeats(w: WorkEstimate): number { return Math.max(w.initialSeats, w.finalSeats); }

/**
 * Why a request was refused (the `reason` label of kube's `apiserver_flowcontrol_rejected_requests_total`):
 * its queue was full, a level without queues had no free seat, it waited longer than allowed, or
 * its client went away while it waited.
 */
export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';

/** A refusal of the queue set. */
export class RejectedError extends Error {
  constructor(readonly reason: RejectReason) { super(`request rejected: ${reason}`); }
}

/** How a priority level limits and queues its requests. */
export interface QueueSetConfig {
  /** The priority level's name (for messages). */
  name: string;
  /** Seats the level may have in use at once (≥ 0). */
  concurrencyLimit: number;
  /**
   * Number of queues: > 0 queues requests that do not fit (limitResponse `Queue`), 0 refuses them
   * at once (limitResponse `Reject`).
   */
  queues: number;
  /** Queues dealt to each flow (1 ≤ handSize ≤ queues; ignored without queues). */
  handSize: number;
  /** Requests one queue may hold while all seats are in use (≥ 1). */
  queueLengthLimit: number;
}

/**
 * How the caller withdraws a request that waits in a queue: the queue set fills `cancel` when it
 * queues the request; calling it refuses the request with reason `cancelled` (its client went
 * away). A plain object: an AbortController per request costs more than the rest of a dispatch.
 */
export interface Cancellation { cancel?: () => void }

/** A request admitted to execute: call `finish` once, when its work is done. */
export interface Ticket {
  /** Milliseconds it waited in a queue (0 when dispatched at once). */
  readonly waitedMs: number;
  /** Releases its seats (after its additional latency) and dispatches waiting requests. */
  finish(): void;
}

/**
 * Virtual service time assumed for a request before it finished (kube's
 * `estimatedServiceDuration`, 3 ms), in seconds; corrected by the actual duration when it ends.
 */
export const ESTIMATED_SERVICE_SECONDS = 0.003;

/** Flows whose hand a queue set remembers (a deal costs BigInt divisions). */
const HAND_CACHE_SIZE = 10_000;

/** A request of the queue set; once dispatched it is its own ticket. */
class Request implements Ticket {
  state: 'waiting' | 'executing' | 'finished' | 'rejected' = 'waiting';
  arrivalR = 0;
  startMs = 0;
  readonly enqueuedMs: number;
  /** Dispatched past a blocked head (see the module comment). */
  backfilled = false;
  resolve?: (t: Ticket) => void;
  reject?: (e: Error) => void;
  timer?: NodeJS.Timeout;
  constructor(private readonly onFinish: (r: Request) => void, readonly work: WorkEstimate, readonly seats: number, readonly totalWork: number, readonly queue: Queue | undefined, now: number) {
    this.enqueuedMs = now;
  }
  get waitedMs(): number { return this.startMs - this.enqueuedMs; }
  finish(): void { this.onFinish(this); }
}

class Queue {
  readonly waiting: Request[] = [];
  nextDispatchR = 0;
  executing = 0;
  seatsInUse = 0;
  /** Sum of the initial seats of the executing requests. */
  executingSeats = 0;
  /** Sum of initial seats × dispatch time (ms) of the executing requests. */
  executingSeatStartMs = 0;
  /** Sum of the total work (seat-seconds) of the waiting requests. */
  waitingWork = 0;
  /** Sum of the max seats of the waiting requests. */
  waitingSeats = 0;
  constructor(readonly index: number) {}
  get idle(): boolean { return this.waiting.length === 0 && this.executing === 0 && this.seatsInUse === 0; }
}

/** The queues and seats of one priority level. Time is read from `now` (ms, monotonic). */
export class QueueSet {
  private config: QueueSetConfig;
  private dealer: Dealer | undefined;
  /** Queues that hold waiting or executing requests, by index (the others are implicitly empty). */
  private readonly queues = new Map<number, Queue>();
  private currentR = 0;
  private lastMs: number;
  private enqueues = 0;
  /** Hands dealt, by flow hash (at most HAND_CACHE_SIZE; cleared when full or reconfigured). */
  private readonly hands = new Map<bigint, number[]>();
  private seatsInUse = 0;
  /** Seats held by requests dispatched as backfill (see the module comment). */
  private backfilledSeats = 0;
  private executing = 0;
  private waiting = 0;

  constructor(config: QueueSetConfig, private readonly now: () => number = () => performance.now()) {
    this.config = config;
    this.dealer = config.queues > 0 ? new Dealer(config.queues, config.handSize) : undefined;
    this.lastMs = now();
  }

  /** Seats in use, requests executing and requests waiting. */
  get stats(): { seatsInUse: number; executing: number; waiting: number; concurrencyLimit: number } {
    return { seatsInUse: this.seatsInUse, executing: this.executing, waiting: this.waiting, concurrencyLimit: this.config.concurrencyLimit };
  }

  /** Whether nothing waits, executes or holds seats. */
  get idle(): boolean { return this.seatsInUse === 0 && this.executing === 0 && this.waiting === 0; }

  /**
   * Applies a new configuration; requests already queued stay in their queues and drain (kube
   * keeps them too), a larger limit dispatches waiting requests at once.
   */
  setConfig(config: QueueSetConfig): void {
    this.syncTime();
    const dealer = config.queues > 0 ? new Dealer(config.queues, config.handSize) : undefined;
    this.config = config;
    this.dealer = dealer;
    this.hands.clear();
    this.dispatchAsMuchAsPossible();
  }

  /**
   * Asks to execute a request of the flow with hash `flowHash`. Returns a ticket when it may run
   * at once, else a promise of one that resolves when it is dispatched.
   * @throws RejectedError `queue-full` when its queue is at `queueLengthLimit` and every seat is
   *   in use, `concurrency-limit` when the level has no queues and no free seat; the promise
   *   rejects with `time-out` after `waitLimitMs` in the queue and `cancelled` when
   *   `cancellation.cancel` is called
   */
  start(flowHash: bigint, work: WorkEstimate, opts: { waitLimitMs: number; cancellation?: Cancellation }): Ticket | Promise<Ticket> {
    const now = this.syncTime();
    const seats = maxSeats(work);
    const totalWork = work.initialSeats * ESTIMATED_SERVICE_SECONDS + work.finalSeats * work.additionalLatencyMs / 1000;
    if (!this.dealer) {
      // No queues (limitResponse Reject): run now or refuse.
      if (!this.canAccommodate(seats)) throw new RejectedError('concurrency-limit');
      const r = new Request(this.finishRequest, work, seats, totalWork, undefined, now);
      this.begin(r);
      return r;
    }
    const queue = this.shuffleShard(flowHash);
    if (this.seatsInUse >= this.config.concurrencyLimit && queue.waiting.length >= this.config.queueLengthLimit) {
      if (queue.idle) this.queues.delete(queue.index);
      throw new RejectedError('queue-full');
    }
    const r = new Request(this.finishRequest, work, seats, totalWork, queue, now);
    // A queue that becomes active starts at the current virtual time.
    if (queue.waiting.length === 0 && queue.executing === 0) queue.nextDispatchR = this.currentR;
    r.arrivalR = this.currentR;
    queue.waiting.push(r);
    queue.waitingWork += totalWork;
    queue.waitingSeats += seats;
    this.waiting++;
    this.dispatchAsMuchAsPossible();
    if (r.state === 'executing') return r;
    return new Promise<Ticket>((resolve, reject) => {
      r.resolve = resolve;
      r.reject = reject;
      r.timer = setTimeout(() => this.cancel(r, 'time-out'), opts.waitLimitMs);
      if (opts.cancellation) opts.cancellation.cancel = () => this.cancel(r, 'cancelled');
    });
  }

  /** The least loaded queue (by waiting work) of the flow's hand, visited from a rotating offset (kube's shuffleShardLocked). */
  private shuffleShard(hash: bigint): Queue {
    let hand = this.hands.get(hash);
    if (!hand) {
      if (this.hands.size >= HAND_CACHE_SIZE) this.hands.clear();
      hand = this.dealer!.deal(hash);
      this.hands.set(hash, hand);
    }
    const offset = this.enqueues++ % hand.length;
    let best = -1;
    let bestWork = Infinity;
    for (let i = 0; i < hand.length; i++) {
      const idx = hand[(offset + i) % hand.length]!;
      const work = this.queues.get(idx)?.waitingWork ?? 0;
      if (work < bestWork) { bestWork = work; best = idx; }
    }
    let q = this.queues.get(best);
    if (!q) { q = new Queue(best); this.queues.set(best, q); }
    return q;
  }

  /** Advances virtual time by the real time elapsed times the rate at which each active queue is served. */
  private syncTime(): number {
    const now = this.now();
    const elapsed = (now - this.lastMs) / 1000;
    this.lastMs = now;
    if (elapsed <= 0) return now;
    let active = 0;
    let seatsRequested = 0;
    for (const q of this.queues.values()) {
      seatsRequested += q.seatsInUse + q.waitingSeats;
      if (q.waiting.length > 0 || q.executing > 0) active++;
    }
    if (active > 0) this.currentR += elapsed * Math.min(seatsRequested, this.config.concurrencyLimit) / active;
    return now;
  }

  private canAccommodate(seats: number): boolean {
    // A request wider than the whole level runs alone rather than never.
    if (seats > this.config.concurrencyLimit) return this.executing === 0;
    return this.seatsInUse + seats <= this.config.concurrencyLimit;
  }

  /** A level of 0 seats still runs one request at a time (canAccommodate lets a request wider than the level run alone). */
  private dispatchAsMuchAsPossible(): void {
    while (this.waiting > 0 && this.seatsInUse < Math.max(1, this.config.concurrencyLimit) && this.dispatchOne()) { /* next */ }
  }

  /**
   * Dispatches the head of the queue with the smallest virtual finish time if it fits, else the
   * one-seat head with the smallest virtual finish time as backfill when the blocked head leaves
   * room for it (see the module comment).
   */
  private dispatchOne(): boolean {
    let min: Queue | undefined;
    let minFinish = Infinity;
    let narrow: Queue | undefined;
    let narrowFinish = Infinity;
    const now = this.lastMs;
    for (const q of this.queues.values()) {
      const head = q.waiting[0];
      if (!head) continue;
      const finish = q.nextDispatchR + this.overrun(q, now) + head.totalWork;
      if (finish < minFinish) { minFinish = finish; min = q; }
      if (head.seats === 1 && finish < narrowFinish) { narrowFinish = finish; narrow = q; }
    }
    let head = min?.waiting[0];
    if (!min || !head) return false;
    if (!this.canAccommodate(head.seats)) {
      const blocked = head;
      if (!narrow || blocked.seats > this.config.concurrencyLimit || this.backfilledSeats + 1 > this.config.concurrencyLimit - blocked.seats || !this.canAccommodate(1)) return false;
      min = narrow;
      head = narrow.waiting[0]!;
      head.backfilled = true;
      this.backfilledSeats += head.seats;
    }
    min.waiting.shift();
    min.waitingWork -= head.totalWork;
    min.waitingSeats -= head.seats;
    this.waiting--;
    min.nextDispatchR += head.totalWork;
    this.boundNextDispatch(min);
    this.begin(head);
    // Its seats are taken now; its work starts in a later turn, within the loop's shared budget
    // (src/endpoints/slicing.ts): a seat freed by a finishing request is not refilled by the next
    // queued request's work before the requests that just arrived have been read (and, if they
    // fit, admitted), and the requests dispatched at once (2,000 watches, each releasing its
    // seat as soon as it is set up) do not all run in one turn — once they did, and one turn held
    // another tenant's GET for 100 ms.
    const resolve = head.resolve;
    if (resolve) runInTurnBudget(() => resolve(head));
    return true;
  }

  /**
   * Virtual time a queue's executing requests have used beyond the estimate they were charged at
   * dispatch (seat-seconds, ≥ 0). kube corrects a queue's virtual time only when a request
   * finishes; while the loop is busy a request runs several times the 3 ms estimate, so a queue
   * whose requests are executing looked served less than it was, and another flow's request that
   * had just arrived waited behind several requests of each of the flood's queues (measured: up to
   * 50 ms in the write flood of the noisy-neighbour benchmark). Charging the time they have run
   * so far orders the heads by the service each queue has really had.
   */
  private overrun(q: Queue, now: number): number {
    if (q.executingSeats === 0) return 0;
    const ran = (q.executingSeats * now - q.executingSeatStartMs) / 1000;
    return Math.max(0, ran - q.executingSeats * ESTIMATED_SERVICE_SECONDS);
  }

  private begin(r: Request): void {
    r.state = 'executing';
    r.startMs = this.lastMs;
    if (r.timer) clearTimeout(r.timer);
    this.executing++;
    this.seatsInUse += r.seats;
    const q = r.queue;
    if (q) {
      q.executing++;
      q.seatsInUse += r.seats;
      q.executingSeats += r.work.initialSeats;
      q.executingSeatStartMs += r.work.initialSeats * r.startMs;
    }
  }

  /** Anti-windup: a queue's virtual dispatch time never precedes its head's arrival. */
  private boundNextDispatch(q: Queue): void {
    const head = q.waiting[0];
    if (head && q.nextDispatchR < head.arrivalR) q.nextDispatchR = head.arrivalR;
  }

  /** Ends an executing request (its Ticket.finish): frees its seats after its additional latency. One function per queue set, not a closure per request. */
  private readonly finishRequest = (r: Request): void => {
    if (r.state !== 'executing') return;
    r.state = 'finished';
    const now = this.syncTime();
    this.executing--;
    const q = r.queue;
    if (q) {
      q.executing--;
      q.executingSeats -= r.work.initialSeats;
      // Exactly 0 when nothing executes: no rounding residue is carried on.
      q.executingSeatStartMs = q.executingSeats === 0 ? 0 : q.executingSeatStartMs - r.work.initialSeats * r.startMs;
      // The actual service time replaces the estimate in the queue's virtual clock.
      const actual = (now - r.startMs) / 1000;
      q.nextDispatchR -= r.work.initialSeats * (ESTIMATED_SERVICE_SECONDS - actual);
      this.boundNextDispatch(q);
    }
    if (r.work.additionalLatencyMs > 0) {
      const t = setTimeout(() => { this.syncTime(); this.releaseSeats(r); }, r.work.additionalLatencyMs);
      t.unref?.();
    } else this.releaseSeats(r);
  };

  private releaseSeats(r: Request): void {
    this.seatsInUse -= r.seats;
    if (r.backfilled) this.backfilledSeats -= r.seats;
    const q = r.queue;
    if (q) {
      q.seatsInUse -= r.seats;
      if (q.idle) this.queues.delete(q.index);
    }
    this.dispatchAsMuchAsPossible();
  }

  private cancel(r: Request, reason: RejectReason): void {
    if (r.state !== 'waiting') return;
    this.syncTime();
    r.state = 'rejected';
    if (r.timer) clearTimeout(r.timer);
    const q = r.queue!;
    const i = q.waiting.indexOf(r);
    if (i >= 0) {
      q.waiting.splice(i, 1);
      q.waitingWork -= r.totalWork;
      q.waitingSeats -= r.seats;
      this.waiting--;
      if (i === 0) this.boundNextDispatch(q);
    }
    if (q.idle) this.queues.delete(q.index);
    r.reject?.(new RejectedError(reason));
  }
}
