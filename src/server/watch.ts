/**
 * Watch over the watch cache: replay from a resourceVersion or initial events, then live events,
 * with selector transitions (an object that stops matching is seen as DELETED), bookmarks,
 * `sendInitialEvents` (KEP-3157: initial ADDED events, then a BOOKMARK annotated
 * `k8s.io/initial-events-end: "true"`), `timeoutSeconds`, and termination of slow consumers.
 */
import { SLICE_BYTES, runInTurnBudget, yieldToLoop } from '../endpoints/slicing.js';
import type { ServerResponse } from 'node:http';
import { badRequest } from '../apimachinery/errors.js';
import type { CacheEntry, CacheEvent, CacheWatcher, WatchCache } from '../storage/watchcache.js';

/**
 * How a watch's events go on the wire: each method returns one whole frame, ready to write (a JSON
 * line, or a length-prefixed protobuf WatchEvent). The handler picks it by negotiation
 * (src/endpoints/handlers/watch.ts).
 */
export interface WatchEventEncoder {
  /** The Content-Type of the stream. */
  readonly contentType: string;
  /** An ADDED, MODIFIED or DELETED event carrying the cached object. */
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', e: CacheEntry): string | Buffer;
  /** A BOOKMARK at revision `rv` (`initialEventsEnd`: annotated `k8s.io/initial-events-end: "true"`). */
  bookmark(rv: number, initialEventsEnd: boolean): string | Buffer;
  /** An ERROR event carrying a meta/v1 Status. */
  error(status: Record<string, unknown>): string | Buffer;
}

/** What one watch asks for. */
export interface WatchRequest {
  groupResource: string;
  cluster: string;
  namespace?: string;
  filter: (e: CacheEntry) => boolean;
  resourceVersion?: string;
  sendInitialEvents?: boolean;
  allowBookmarks: boolean;
  timeoutSeconds?: number;
  /** The wire form of the events. */
  encoder: WatchEventEncoder;
  /**
   * Asynchronous preparation of entries before `filter` and the encoder see them (a conversion
   * webhook converting them; undefined when nothing is to be awaited). When set, the watch's
   * events and bookmarks are written in order behind it; a rejection ends the watch with an
   * ERROR event carrying its Status.
   */
  prepare?: (entries: CacheEntry[]) => Promise<void> | undefined;
  /**
   * Called once the watch is initialised: its initial events (and their bookmark) are written, or
   * at once for a watch that resumes from a resourceVersion (priority and fairness count a watch
   * while it initialises). Not called when the watch ends first.
   */
  onInitialized?: () => void;
}

/** Bytes buffered for one watch before it is ended as too slow (kube ends slow watchers too). */
const MAX_BUFFERED = 32 * 1024 * 1024;

/** Keeps the open watches of a server; one timer for all bookmarks. */
export class WatchHub {
  private readonly open = new Set<ActiveWatch>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly cache: WatchCache, private readonly latestRevision: () => Promise<number>, bookmarkIntervalMs = 15_000) {
    this.timer = setInterval(() => { for (const w of this.open) w.sendBookmark(); }, bookmarkIntervalMs);
    this.timer.unref();
  }

  /** Number of open watches. */
  get size(): number { return this.open.size; }

  /** The cache's revision: every event up to it has been dispatched to every watcher. */
  get revision(): number { return this.cache.currentRevision; }

  /**
   * Starts a watch on an HTTP response the caller has taken over. Validation errors (400, 410)
   * are thrown before anything is written.
   */
  async start(req: WatchRequest, res: ServerResponse): Promise<void> {
    const cache = this.cache;
    const rvParam = req.resourceVersion ?? '';
    if (rvParam !== '' && !/^\d+$/.test(rvParam)) throw badRequest(`invalid resourceVersion: "${rvParam}"`);
    const fromRv = rvParam === '' ? undefined : Number(rvParam);
    const initial = req.sendInitialEvents ?? (fromRv === undefined || fromRv === 0);
    if (req.sendInitialEvents && !req.allowBookmarks) throw badRequest('sendInitialEvents requires allowWatchBookmarks=true');
    if (fromRv === undefined && initial) {
      // Consistent start: wait for the cache to reach the shard's current revision.
      await cache.waitForRevision(await this.latestRevision());
    }
    const w = new ActiveWatch(req, res, this);
    const replay = cache.addWatcher(w, initial ? undefined : fromRv);
    // No Transfer-Encoding: HTTP/1.1 chunks an answer without a length by itself, and HTTP/2
    // forbids connection-specific headers (RFC 9113 §8.2.2).
    res.writeHead(200, { 'Content-Type': req.encoder.contentType, 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    this.open.add(w);
    if (initial) {
      const entries = cache.list(req.groupResource, req.cluster, req.namespace);
      const rv = cache.currentRevision;
      w.lastRv = rv;
      // Behind the preparation (if any) of the initial objects, before any later event.
      // Written in slices (src/endpoints/slicing.ts): thousands of initial objects do not hold
      // the event loop; events that arrive meanwhile queue behind them.
      w.after(entries, async () => {
        let written = 0;
        for (const e of entries) {
          if (!req.filter(e)) continue;
          written += w.emit(() => req.encoder.event('ADDED', e));
          if (written >= SLICE_BYTES) { written = 0; await w.drained(); }
        }
        if (req.sendInitialEvents) w.emit(() => req.encoder.bookmark(rv, true));
        req.onInitialized?.();
      });
    } else {
      w.lastRv = fromRv ?? cache.currentRevision;
      for (const ev of replay) w.onEvent(ev);
      req.onInitialized?.();
    }
  }

  /** Ends every watch (server shutdown). */
  closeAll(): void {
    clearInterval(this.timer);
    for (const w of [...this.open]) w.end();
  }

  /** @internal */
  removed(w: ActiveWatch): void {
    this.open.delete(w);
    this.cache.removeWatcher(w);
  }
}

class ActiveWatch implements CacheWatcher {
  readonly groupResource: string;
  readonly cluster: string;
  lastRv = 0;
  private ended = false;
  private timeout: NodeJS.Timeout | undefined;
  /** Writes waiting for `req.prepare`, in order (only with `prepare`). */
  private queue: Promise<void> | undefined;

  constructor(private readonly req: WatchRequest, private readonly res: ServerResponse, private readonly hub: WatchHub) {
    this.groupResource = req.groupResource;
    this.cluster = req.cluster;
    res.on('close', () => this.end());
    if (req.timeoutSeconds && req.timeoutSeconds > 0) {
      this.timeout = setTimeout(() => this.end(), req.timeoutSeconds * 1000);
    }
  }

  /**
   * Runs `emit` once `req.prepare` has prepared `entries`, after every write queued before it;
   * at once when there is nothing to wait for.
   */
  after(entries: readonly (CacheEntry | undefined)[], emit: () => void | Promise<void>): void {
    const prepare = this.req.prepare;
    const wait = prepare?.(entries.filter((e): e is CacheEntry => e !== undefined));
    if (!wait && !this.queue) {
      const emitted = emit();
      if (emitted) this.enqueue(emitted);
      return;
    }
    // Handled below, possibly after it settles: not an unhandled rejection meanwhile.
    wait?.catch(() => undefined);
    const run = () => (this.ended ? undefined : emit());
    this.enqueue((this.queue ?? Promise.resolve()).then(() => wait).then(run));
  }

  /** Makes `work` the tail of the queue later writes wait for; its failure ends the watch with an ERROR event. */
  private enqueue(work: Promise<void>): void {
    const queued: Promise<void> = work.catch((err: unknown) => this.fail(err));
    this.queue = queued;
    queued.finally(() => { if (this.queue === queued) this.queue = undefined; }).catch(() => undefined);
  }

  /**
   * Resolves after a turn of the event loop, and once the client has taken what is buffered
   * beyond one slice (so a slow client slows its own initial events, not the shard's memory).
   */
  async drained(): Promise<void> {
    await yieldToLoop();
    while (!this.ended && this.res.writableLength > SLICE_BYTES * 4) {
      await new Promise<void>((resolve) => { this.res.once('drain', resolve); this.res.once('close', resolve); });
    }
  }

  /** Ends the watch with an ERROR event carrying the Status of a failed preparation. */
  private fail(err: unknown): void {
    if (this.ended) return;
    const e = err as { toStatus?: () => object; message?: string };
    const status = typeof e.toStatus === 'function' ? e.toStatus() as Record<string, unknown>
      : { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: String(e.message ?? err), reason: 'InternalError', code: 500 };
    try { this.write(this.req.encoder.error(status)); } catch { /* ended below without it */ }
    this.end();
  }

  onEvent(ev: CacheEvent): void {
    if (this.ended || ev.rv <= this.lastRv) return;
    const { entry, prev } = ev;
    const ns = this.req.namespace;
    if (ns && entry.namespace !== ns) return;
    this.lastRv = ev.rv;
    if (this.req.prepare || this.queue) { this.after([entry, prev], () => this.dispatch(ev)); return; }
    const writing = this.dispatch(ev);
    if (writing) this.enqueue(writing);
  }

  /**
   * Writes the event (or the transition a selector makes of it); a promise while a large frame
   * waits for its turn ({@link emitLive}).
   */
  private dispatch(ev: CacheEvent): Promise<void> | undefined {
    const { entry, prev } = ev;
    const now = this.req.filter(entry);
    const enc = this.req.encoder;
    if (ev.type === 'ADDED') return now ? this.emitLive(() => enc.event('ADDED', entry)) : undefined;
    if (ev.type === 'DELETED') return (prev && this.req.filter(prev)) || now ? this.emitLive(() => enc.event('DELETED', entry)) : undefined;
    // A MODIFIED event replayed from history loaded at start-up may not know the state it
    // replaced: the object existed, so it is MODIFIED when it matches and, when it does not, a
    // DELETED the client ignores if it never held the object (never a missed removal).
    const before = prev ? this.req.filter(prev) : true;
    if (now && before) return this.emitLive(() => enc.event('MODIFIED', entry));
    if (now) return this.emitLive(() => enc.event('ADDED', entry));
    if (before) return this.emitLive(() => enc.event('DELETED', entry));
    return undefined;
  }

  /**
   * Writes a live event's frame: at once, or, for a frame of SLICE_BYTES or more, in a later turn
   * within the slices' shared budget (the promise; later events wait behind it in the queue). The
   * watch cache hands an event to every watch in one turn, and the socket write encodes and
   * encrypts the frame there: one write of a 1 MB ConfigMap to 100 watches held the loop for
   * hundreds of milliseconds (the other tenant's GET p99 1.2 s).
   */
  private emitLive(make: () => string | Buffer): Promise<void> | undefined {
    const frame = this.frameOf(make);
    if (frame === undefined) return undefined;
    if (frame.length < SLICE_BYTES) { this.write(frame); return undefined; }
    return new Promise<void>((resolve) => runInTurnBudget(() => { this.write(frame); resolve(); }));
  }

  sendBookmark(): void {
    if (!this.req.allowBookmarks || this.ended) return;
    // Events are dispatched synchronously as the cache applies them, so this watch has seen
    // everything up to the cache's revision: a client resuming from it misses nothing, and a
    // quiet watch does not fall behind the history window. Events still being prepared are
    // written first: the bookmark follows them.
    const rv = Math.max(this.lastRv, this.hub.revision);
    if (this.queue) this.after([], () => { this.emit(() => this.req.encoder.bookmark(rv, false)); });
    else this.emit(() => this.req.encoder.bookmark(rv, false));
  }

  /**
   * Writes the frame `make` encodes; returns its length (characters or bytes; 0 once ended). An
   * object the encoder cannot write (500) ends this watch with an ERROR event, never the others.
   */
  emit(make: () => string | Buffer): number {
    const frame = this.frameOf(make);
    return frame === undefined ? 0 : this.write(frame);
  }

  /** The frame `make` encodes; undefined once ended, or when encoding failed (the watch ends with an ERROR event). */
  private frameOf(make: () => string | Buffer): string | Buffer | undefined {
    if (this.ended) return undefined;
    try { return make(); } catch (err) { this.fail(err); return undefined; }
  }

  /** Writes one event frame; returns its length (characters or bytes; 0 once ended). */
  write(frame: string | Buffer): number {
    if (this.ended) return 0;
    this.res.write(frame);
    if (this.res.writableLength > MAX_BUFFERED) this.end();
    return frame.length;
  }

  onTerminate(status?: Record<string, unknown>): void {
    // Written behind events still being prepared, so it is the last thing the client reads.
    if (status && !this.ended) {
      if (this.queue) { this.after([], () => { this.emit(() => this.req.encoder.error(status)); this.end(); }); return; }
      this.emit(() => this.req.encoder.error(status));
    }
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.timeout) clearTimeout(this.timeout);
    this.hub.removed(this);
    if (!this.res.writableEnded) this.res.end();
  }
}
