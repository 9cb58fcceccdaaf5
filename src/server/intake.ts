/**
 * Request intake: how many requests a turn of the event loop starts, and in which order.
 *
 * Why: requests are read off connections in batches. One HTTP/2 connection delivers every stream
 * whose HEADERS frames arrived together in one read (client-go opening 1,000 watches at once is
 * one such read), and one poll phase reads every HTTP/1.1 connection that is ready. Each request
 * runs its filters (authentication, authorization, priority and fairness) synchronously up to its
 * first storage call, about 0.2–1 ms, so 1,000 requests read together held the loop for a second
 * before any other tenant's request (arriving in the next turn) was looked at. Priority and
 * fairness cannot help: it is one of those filters. kube-apiserver has no such limit because Go
 * runs each request on its own goroutine, spread over every core.
 *
 * How: while a turn has spent less than {@link INTAKE_TURN_BUDGET_MS} since its first request, a
 * request starts at once (the common case: one comparison of the clock). Past it, requests wait
 * in a queue per flow, the flow being the logical cluster named in the path (`/clusters/<name>/`;
 * other paths are one flow), and the next turns start them round-robin across flows, each turn
 * within the budget. A tenant that sends a thousand requests at once therefore waits behind its
 * own requests; another tenant's request is started within a turn or two. Nothing is refused
 * here: what waits is bounded by what the connections may carry (HTTP/2 stream limits, body and
 * header limits); priority and fairness (src/flowcontrol) decides what executes and what is 429.
 */
import { performance } from 'node:perf_hooks';
import { afterPendingWork } from '../endpoints/slicing.js';

/**
 * Time a turn of the event loop may spend starting requests before further ones wait for the
 * next turn (ms): a request of another tenant waits at most about this long plus one request.
 */
export const INTAKE_TURN_BUDGET_MS = 5;


/** The flow of a request: the logical cluster named by its path (`/clusters/<name>/…`), '' for other paths. */
export function intakeFlowOf(url: string | undefined): string {
  if (!url || !url.startsWith('/clusters/')) return '';
  const end = url.indexOf('/', 10);
  const q = url.indexOf('?', 10);
  const stop = end < 0 ? (q < 0 ? url.length : q) : (q >= 0 && q < end ? q : end);
  return url.slice(10, stop);
}

/**
 * The intake of one server (see the module comment): `run(a, b)` starts a request (e.g. the
 * server's handler with its request and response), `flowOf(a, b)` names its flow, asked only when
 * it has to wait.
 */
export class RequestIntake<A, B> {
  /** Waiting requests per flow, as [a, b] pairs; a flow is present while it has some. */
  private readonly queues = new Map<string, [A, B][]>();
  /** Flows with waiting starts, in round-robin order from `ringHead` (the next to serve first). */
  private ring: string[] = [];
  private ringHead = 0;
  private waitingCount = 0;
  /** `performance.now()` of the current turn's first start; -1 when no turn is open. */
  private turnStartedAt = -1;
  private drainScheduled = false;
  private started = 0;
  private deferred = 0;

  /** @param budgetMs time a turn may spend starting requests (default {@link INTAKE_TURN_BUDGET_MS}) */
  constructor(private readonly run: (a: A, b: B) => void, private readonly flowOf: (a: A, b: B) => string, private readonly budgetMs = INTAKE_TURN_BUDGET_MS) {}

  /** Requests waiting for a turn, requests started, and of those how many had to wait. */
  get stats(): { waiting: number; started: number; deferred: number } {
    return { waiting: this.waitingCount, started: this.started, deferred: this.deferred };
  }

  /** Starts the request now when this turn has budget left and nothing waits, else queues it under its flow. */
  submit(a: A, b: B): void {
    if (this.waitingCount === 0 && this.withinBudget()) {
      this.started++;
      this.run(a, b);
      return;
    }
    const flow = this.flowOf(a, b);
    let q = this.queues.get(flow);
    if (!q) { q = []; this.queues.set(flow, q); this.ring.push(flow); }
    // (A flow's queue is an array used as a FIFO: at most a connection's worth of requests.)
    q.push([a, b]);
    this.waitingCount++;
    this.deferred++;
    this.scheduleDrain();
  }

  /** Opens a turn at the first start (its end is the next check phase) and says whether it has time left. */
  private withinBudget(): boolean {
    const now = performance.now();
    if (this.turnStartedAt < 0) {
      this.turnStartedAt = now;
      setImmediate(this.closeTurn);
      return true;
    }
    return now - this.turnStartedAt < this.budgetMs;
  }

  private readonly closeTurn = (): void => { this.turnStartedAt = -1; };

  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(this.drain);
  }

  /**
   * Starts waiting requests round-robin across flows, one per flow per round, for one turn's
   * budget of their synchronous parts; the rest wait for the next turn, after the loop has read
   * what arrived meanwhile.
   */
  private readonly drain = (): void => {
    this.drainScheduled = false;
    const from = performance.now();
    // One request per step, the next after the work the started one queued (its filters'
    // promise continuations, its socket writes): the budget counts them too.
    const step = (): void => {
      if (this.waitingCount > 0 && performance.now() - from < this.budgetMs) {
        const flow = this.ring[this.ringHead++]!;
        const q = this.queues.get(flow)!;
        const [a, b] = q.shift()!;
        this.waitingCount--;
        if (q.length > 0) this.ring.push(flow); else this.queues.delete(flow);
        this.started++;
        this.run(a, b);
        afterPendingWork(step);
        return;
      }
      // The ring is an array read from ringHead: compacted once its consumed half is the larger.
      if (this.ringHead === this.ring.length) { this.ring = []; this.ringHead = 0; }
      else if (this.ringHead > 1024 && this.ringHead * 2 > this.ring.length) { this.ring = this.ring.slice(this.ringHead); this.ringHead = 0; }
      if (this.waitingCount > 0) this.scheduleDrain();
    };
    step();
  };
}
