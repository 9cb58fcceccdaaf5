/**
 * Seats count the server's work, not a client's reading. A request admitted by priority and
 * fairness holds its seats until its response is written; kube releases them when the handler
 * returns, and a handler writing a response its client does not read blocks until the request
 * timeout. So does ours (a sliced LIST waits for the client to take each slice; a watch's initial
 * events wait for it too). A tenant whose clients open large LISTs and stop reading therefore
 * held every seat of its priority level — at 13 seats, 13 stalled LISTs made every other tenant of
 * the level wait 15 s for a 429 (docs/benchmarks.md, Stalled readers) — and a watch that
 * never read its initial events held its seat for as long as it stayed open.
 *
 * Here a response that has waited {@link STALL_MS} for its reader (more bytes waiting in its
 * socket or HTTP/2 stream than it takes at once, none of them taken since) is *parked*: its seats go back to the level, the response goes on as the
 * client reads. Parked responses keep memory (the slice in flight, the list being written) and a
 * request-timeout's worth of life, so they are bounded: at most {@link PARKED_PER_FLOW} per flow
 * (`<cluster>/<user>`) and {@link PARKED_MAX} in the process. A stalled response beyond either
 * bound is aborted (HTTP/1.1: the connection closed; HTTP/2: the stream reset with
 * ENHANCE_YOUR_CALM) — the client sees a cut response and lists again, as after a dropped
 * connection. Watches park without bound: once initialised they hold no seats anyway, and their
 * buffer is bounded by the watch itself (src/server/watch.ts).
 *
 * Not kube's behaviour: a departure recorded in docs/architecture.md (Priority and fairness).
 */
import { constants as http2 } from 'node:http2';
import type { Writable } from 'node:stream';
import type { AnyResponse } from '../../server/serving.js';

/**
 * How long (ms) a response waits for a reader that takes nothing before its seats go back: a client
 * on a working network takes a slice (256 KiB) well within it; 60 s (the request timeout) was the bound before.
 */
export const STALL_MS = 250;
/** How often (ms) the responses holding seats are looked at. */
export const SWEEP_MS = 100;
/** Parked (seatless, stalled) non-watch responses one flow may have; beyond, a stalled one is aborted. */
export const PARKED_PER_FLOW = 8;
/** Parked non-watch responses of the whole process; beyond, a stalled one is aborted. */
export const PARKED_MAX = 512;

/** Options of {@link StalledReaders} (the defaults above; tests shorten them). */
export interface StalledReadersOptions {
  stallMs?: number;
  sweepMs?: number;
  parkedPerFlow?: number;
  parkedMax?: number;
}

interface Held {
  res: AnyResponse;
  out: Writable;
  flow: string;
  longRunning: boolean;
  release: () => void;
  /** When (Date.now(), ms) the response was last seen waiting for its reader without progress; undefined: not waiting. */
  blockedSince: number | undefined;
  /** Bytes it had waiting to be taken at the last look. */
  pending: number;
  drainListener?: () => void;
}

/** The writable a response's bytes go through: the HTTP/1.1 response itself, or the HTTP/2 stream. */
function outputOf(res: AnyResponse): Writable {
  return 'stream' in res ? res.stream : res;
}

/**
 * Responses holding seats, looked at every {@link SWEEP_MS}; one instance per server (see the
 * module comment).
 */
export class StalledReaders {
  private readonly held = new Set<Held>();
  private readonly parkedByFlow = new Map<string, number>();
  private parked = 0;
  private aborted = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly stallMs: number;
  private readonly sweepMs: number;
  private readonly perFlow: number;
  private readonly max: number;

  constructor(opts: StalledReadersOptions = {}) {
    this.stallMs = opts.stallMs ?? STALL_MS;
    this.sweepMs = opts.sweepMs ?? SWEEP_MS;
    this.perFlow = opts.parkedPerFlow ?? PARKED_PER_FLOW;
    this.max = opts.parkedMax ?? PARKED_MAX;
  }

  /** Parked non-watch responses now, and responses aborted so far (for tests and status). */
  get counts(): { parked: number; aborted: number; holding: number } {
    return { parked: this.parked, aborted: this.aborted, holding: this.held.size };
  }

  /**
   * Watches `res` while its request holds seats. `release` frees the seats (idempotent). Returns
   * the function to call when the seats are released otherwise (the response done, the client
   * gone, a watch initialised): the response is no longer watched.
   */
  hold(res: AnyResponse, flow: string, longRunning: boolean, release: () => void): () => void {
    const h: Held = { res, out: outputOf(res), flow, longRunning, release, blockedSince: undefined, pending: 0 };
    this.held.add(h);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(Date.now()), this.sweepMs);
      this.timer.unref();
    }
    return () => this.forget(h);
  }

  private forget(h: Held): void {
    if (!this.held.delete(h)) return;
    if (h.drainListener) h.out.removeListener('drain', h.drainListener);
  }

  /** One look at every response holding seats (exposed for tests with their own clock). */
  sweep(now: number): void {
    // The timer stops at the first look that finds nothing held (not at every release: a request
    // at a time would start and stop it each time).
    if (this.held.size === 0 && this.timer) { clearInterval(this.timer); this.timer = undefined; return; }
    for (const h of this.held) {
      // Waiting for its reader: more bytes handed to the socket (or the HTTP/2 stream) than it
      // takes at once. Not `writableNeedDrain`, which turns false once the response is ended: a
      // large answer written whole (YAML, a Table) is ended at once and then waits all the same.
      const pending = h.out.writableLength;
      if (pending < h.out.writableHighWaterMark) { h.blockedSince = undefined; h.pending = pending; continue; }
      // The reader took something since the last look (fewer bytes waiting, or a 'drain'): the
      // count starts again.
      if (h.blockedSince === undefined || pending < h.pending) {
        h.blockedSince = now;
        h.pending = pending;
        if (!h.drainListener) {
          h.drainListener = () => { h.blockedSince = undefined; };
          h.out.on('drain', h.drainListener);
        }
        continue;
      }
      h.pending = pending;
      if (now - h.blockedSince >= this.stallMs) this.park(h);
    }
  }

  private park(h: Held): void {
    this.forget(h);
    if (!h.longRunning) {
      const n = this.parkedByFlow.get(h.flow) ?? 0;
      if (n >= this.perFlow || this.parked >= this.max) {
        this.aborted++;
        abort(h.res);
        return;
      }
      this.parkedByFlow.set(h.flow, n + 1);
      this.parked++;
      h.res.once('close', () => {
        this.parked--;
        const left = (this.parkedByFlow.get(h.flow) ?? 1) - 1;
        if (left > 0) this.parkedByFlow.set(h.flow, left); else this.parkedByFlow.delete(h.flow);
      });
    }
    h.release();
  }
}

/** Ends a response its client stopped reading (its 'close' then releases what it held). */
function abort(res: AnyResponse): void {
  if ('stream' in res) res.stream.close(http2.NGHTTP2_ENHANCE_YOUR_CALM);
  else res.destroy();
}
