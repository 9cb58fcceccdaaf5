/**
 * Large responses in slices. Node runs every request of a shard on one event loop: a LIST of
 * thousands of objects encoded in one synchronous pass holds the loop for every other tenant for
 * as long as it takes. Responses over {@link SLICE_BYTES} are produced a slice at a time instead,
 * yielding to the loop between slices (other requests, watch events and timers run in between),
 * and written as the client reads them (the stream's backpressure).
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';

/**
 * Bytes of response produced per turn of the event loop: 256 KiB is about 0.3 ms of work on the
 * reference machine (2 cores), so one large response delays another request by about that much.
 */
export const SLICE_BYTES = 256 * 1024;

/**
 * Milliseconds of slice work the loop runs per turn, over all large responses together. Without a
 * shared budget, every response waiting for its next slice resumes in the same turn (one
 * `setImmediate` each): 64 concurrent LISTs of 2 MB made one turn last 60 to 300 ms, and a small
 * request of another tenant needs several turns (read, authenticate, read the revision, answer).
 */
export const SLICE_BUDGET_MS = 4;

/**
 * Writes whose request body or stored object has at least this many bytes of JSON are run in
 * stages, each stage resuming through {@link nextHeavyStage} (src/registry/store.ts). Their work
 * grows with the object (a 1 MB ConfigMap of 60,000 keys: decoding, reading the stored object,
 * validation, managed fields and encoding took 850 ms as one synchronous piece on the reference
 * machine, 2 cores), while a small request of another tenant needs only a turn of the loop. At
 * 64 KiB the whole write costs about 25 ms; smaller writes run as before, without yielding.
 */
export const STAGED_WRITE_BYTES = 64 * 1024;

/** Responses waiting for their next slice, in the order they asked (round robin: each asks again at the end). */
const waiting: (() => void)[] = [];
/** Stages of large writes waiting for their turn ({@link nextHeavyStage}), in the order they asked. */
const heavyWaiting: (() => void)[] = [];
let pumpScheduled = false;

/**
 * Time the loop is left to everything else after a stage of a large write, as a fraction of the
 * stage's duration: large writes together take at most half of the loop. Without the rest, the
 * loop ran one stage (50–300 ms for a 1 MB ConfigMap) every turn while such writes were queued,
 * and whatever needs many turns crawled: a watch-cache event of 2 MB arrives from Redis a socket
 * buffer per turn, so the cache trailed the latest revision by up to 1.5 s and every consistent
 * GET of another tenant waited for it.
 */
const HEAVY_REST_RATIO = 1;

/**
 * The rest ends early when the loop has nothing else to do: checked every this many ms, and over
 * when the loop was busy less than {@link IDLE_UTILIZATION} of the time since the last check (so a
 * large write alone is not slowed down by its rests).
 */
const REST_CHECK_MS = 5;
const IDLE_UTILIZATION = 0.05;

/** `performance.now()` before which no stage of a large write starts ({@link HEAVY_REST_RATIO}). */
let heavyNotBefore = 0;
let heavyTimer: NodeJS.Timeout | undefined;

/**
 * Gives the event loop a turn (I/O, timers and other requests run), then resumes the caller when
 * the turn's slice budget ({@link SLICE_BUDGET_MS}, shared by every large response of the process)
 * has room: the callers waiting resume one at a time, each running its next slice, until the
 * budget of the turn is spent; the rest wait for the next turn, in order.
 */
export function yieldToLoop(): Promise<void> {
  return new Promise<void>((resolve) => runInTurnBudget(resolve));
}

/**
 * Runs `work` in a later turn of the event loop, within the turns' shared slice budget, in the
 * order asked (with the slices of {@link yieldToLoop}).
 */
export function runInTurnBudget(work: () => void): void {
  waiting.push(work);
  schedulePump();
}

/**
 * Gives the event loop a turn, then resumes the caller for one stage of a large write
 * ({@link STAGED_WRITE_BYTES}): a turn runs at most one such stage, after the turn's slices and
 * dispatches ({@link runInTurnBudget}), whatever their budget left, and not before the rest that
 * followed the previous stage ({@link HEAVY_REST_RATIO}). A stage takes tens to hundreds
 * of milliseconds; queued with the slices, a small request of another tenant dispatched by
 * priority and fairness waited behind every large write's stage in turn (20 writers of 1 MB
 * ConfigMaps: its GET p50 0.3 s, p99 1.8 s).
 */
export function nextHeavyStage(): Promise<void> {
  return new Promise<void>((resolve) => {
    heavyWaiting.push(resolve);
    schedulePump();
  });
}

function schedulePump(): void {
  if (pumpScheduled) return;
  pumpScheduled = true;
  setImmediate(pump);
}

/**
 * One turn's share of slice work (see {@link yieldToLoop}), then one heavy stage
 * ({@link nextHeavyStage}) unless the loop's rest after the previous one is still running.
 */
function pump(): void {
  pumpScheduled = false;
  const start = performance.now();
  const step = (): void => {
    if (waiting.length && performance.now() - start < SLICE_BUDGET_MS) {
      waiting.shift()!();
      afterPendingWork(step);
      return;
    }
    const now = performance.now();
    // A stage's rest (heavyNotBefore) keeps the next stage out of its turn.
    if (heavyWaiting.length && now >= heavyNotBefore) {
      heavyWaiting.shift()!();
      afterPendingWork(() => {
        const end = performance.now();
        heavyNotBefore = end + (end - now) * HEAVY_REST_RATIO;
        step();
      });
      return;
    }
    if (waiting.length) schedulePump();
    else if (heavyWaiting.length) scheduleHeavy();
  };
  step();
}

/**
 * Runs the pump for the next heavy stage once the loop's rest is over ({@link HEAVY_REST_RATIO}),
 * or as soon as a check finds the loop idle ({@link REST_CHECK_MS}).
 */
function scheduleHeavy(): void {
  if (heavyTimer || pumpScheduled) return;
  const wait = heavyNotBefore - performance.now();
  if (wait <= 0) { schedulePump(); return; }
  const since = performance.eventLoopUtilization();
  heavyTimer = setTimeout(() => {
    heavyTimer = undefined;
    if (performance.eventLoopUtilization(since).utilization < IDLE_UTILIZATION) heavyNotBefore = 0;
    if (heavyNotBefore <= performance.now()) schedulePump(); else scheduleHeavy();
  }, Math.min(REST_CHECK_MS, Math.ceil(wait)));
}

/**
 * Calls `fn` after the work the current callback started: the promise continuations queued so
 * far, then the `process.nextTick` callbacks they queue — among them the socket writes of an
 * HTTP/1.1 response (Node corks the socket and writes, encrypting, in a nextTick). A budget
 * checked in `fn` thereby counts that work too; checked in a plain microtask it would not, as no
 * nextTick callback runs before the microtask queue is empty.
 */
export function afterPendingWork(fn: () => void): void {
  queueMicrotask(() => process.nextTick(fn));
}

/**
 * Strings appended to one Buffer as UTF-8, each encoded straight into it. Building a string of
 * many parts first and encoding it at the end costs 4 to 5 times as much (the engine flattens the
 * rope of parts, then encodes it): 3.3–4.2 against 0.8 ms for a 2 MB list of 2,000 items on the
 * reference machine (2 cores).
 */
export class Utf8Builder {
  private buf: Buffer;
  private used = 0;
  /**
   * @param capacity bytes to start with, or the Buffer to write into; the buffer is replaced by
   *   a larger one (doubling) when a string may not fit
   */
  constructor(capacity: number | Buffer) { this.buf = typeof capacity === 'number' ? Buffer.allocUnsafe(Math.max(64, capacity)) : capacity; }
  /** Bytes written so far. */
  get length(): number { return this.used; }
  append(s: string): void {
    // A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4).
    const bound = s.length * 3;
    if (this.used + bound > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + bound));
      this.buf.copy(next, 0, 0, this.used);
      this.buf = next;
    }
    this.used += this.buf.write(s, this.used);
  }
  /** The bytes written (a view; the builder is not used afterwards). */
  take(): Buffer { return this.buf.subarray(0, this.used); }
}

/**
 * `head`, the parts `part(i)` for i in [0, count) joined by `separator`, then `tail`, as one
 * UTF-8 Buffer (see {@link Utf8Builder}); `capacityHint` is the expected size in bytes.
 */
export function joinUtf8(head: string, count: number, part: (i: number) => string, separator: string, tail: string, capacityHint: number): Buffer {
  const b = new Utf8Builder(capacityHint + head.length + tail.length + count * separator.length);
  b.append(head);
  for (let i = 0; i < count; i++) {
    if (i) b.append(separator);
    b.append(part(i));
  }
  b.append(tail);
  return b.take();
}

/**
 * Bytes of one slice buffer: a slice ends at the first item boundary past {@link SLICE_BYTES},
 * so it needs room for one more item (1 KiB items: 3 KiB at most in UTF-8).
 */
const SLICE_CAPACITY = SLICE_BYTES + SLICE_BYTES / 4;

/**
 * Slice buffers kept for reuse, at most {@link SLICE_POOL_LIMIT} (20 MiB). Without them every
 * slice was a new 320 KiB ArrayBuffer, outside the JavaScript heap: 64 concurrent LISTs of 2 MB
 * allocated about 90 MB/s of it, and V8 answers external memory growth with extra scavenges
 * (37 in 15 s, up to 12 ms each), pauses every tenant's requests wait through.
 */
const freeSlices: Buffer[] = [];

/** Bytes a time-bounded slice starts with (it grows as needed); such slices are not pooled. */
const TIMED_SLICE_CAPACITY = 64 * 1024;
const SLICE_POOL_LIMIT = 64;

/** Buffers a response is writing from. The first ones go back to the pool when it needs a third. */
class SliceLease {
  private readonly held: Buffer[] = [];
  /**
   * A buffer for the next slice. The stream makes slice n+2 only after the consumer took slice
   * n+1, and a piped consumer takes a chunk only when the previous one is written: a slice of
   * {@link SLICE_BYTES} is over any response's high-water mark, so its write returns true only
   * when it was written at once, and otherwise the consumer waits for 'drain'. So slice n's
   * buffer is free to reuse by then (the last, short slice is never followed by another).
   */
  next(): Buffer {
    const buf = this.held.length >= 2 ? this.held.shift()! : (freeSlices.pop() ?? Buffer.allocUnsafeSlow(SLICE_CAPACITY));
    this.held.push(buf);
    return buf;
  }
  /** Gives the buffers back to the pool (the response is written or gone). */
  release(): void {
    for (const buf of this.held.splice(0)) if (freeSlices.length < SLICE_POOL_LIMIT) freeSlices.push(buf);
  }
}

/**
 * A readable stream of `head`, the parts `part(i)` for i in [0, count) joined by `separator`,
 * then `tail`; produced in UTF-8 slices of about {@link SLICE_BYTES} (see {@link pacedStream}).
 * `part` is called lazily, in order, once per index; an error it throws destroys the stream.
 *
 * The slices are written into pooled buffers, which return to the pool when `response` (the
 * response the stream is piped into) emits 'close': Node emits it after the last write completed
 * or the connection is gone, so no buffer is reused while a socket may still read from it.
 *
 * `sliceMs`, when given, also ends a slice once its parts took that many milliseconds (at least
 * one part per slice): for parts far costlier per byte than stored JSON (YAML, Table rows), where
 * {@link SLICE_BYTES} of output would hold the loop for several milliseconds. Such slices are not
 * pooled: a slice smaller than the response's high-water mark is queued by reference and the next
 * one asked for at once, so its buffer may still wait to be written when slice n+2 is made.
 */
export function slicedStream(head: string, count: number, part: (i: number) => string, separator: string, tail: string, response: { once(event: 'close', listener: () => void): unknown }, sliceMs?: number): Readable {
  let i = 0;
  let ended = false;
  const lease = new SliceLease();
  response.once('close', () => lease.release());
  return pacedStream(() => {
    if (ended) return null;
    const slice = new Utf8Builder(sliceMs === undefined ? lease.next() : TIMED_SLICE_CAPACITY);
    if (i === 0) slice.append(head);
    const deadline = sliceMs === undefined ? undefined : performance.now() + sliceMs;
    for (const start = i; i < count && slice.length < SLICE_BYTES; i++) {
      if (deadline !== undefined && i > start && performance.now() >= deadline) break;
      if (i) slice.append(separator);
      slice.append(part(i));
    }
    if (i >= count) {
      slice.append(tail);
      ended = true;
    }
    return slice.take();
  });
}

/**
 * A readable stream whose chunks are `next()`'s answers (null ends it), each produced and
 * written in a step of the shared slice budget ({@link yieldToLoop}): the stream asks for a chunk
 * when the client has taken the previous one, and the chunk is made and handed to the socket
 * (encoded, encrypted) inside the budget, not in whichever I/O callback drained the socket — so
 * many large responses draining at once do not hold one turn of the loop between them. An error
 * `next` throws destroys the stream.
 */
export function pacedStream(next: () => string | Buffer | null): Readable {
  return new Readable({
    // Nothing buffered ahead: a chunk is made when the consumer is ready for it.
    highWaterMark: 0,
    read() {
      yieldToLoop().then(() => {
        if (this.destroyed) return;
        this.push(next());
      }).catch((err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))));
    },
  });
}

/**
 * A readable stream of `chunks`, concatenated, in slices of at most {@link SLICE_BYTES} made and
 * written within the slice budget (see {@link pacedStream}): small chunks are joined into a slice,
 * a large one is cut. For documents kept as many encoded pieces (OpenAPI of many CRDs).
 */
export function chunksStream(chunks: readonly Buffer[]): Readable {
  let i = 0;
  let at = 0;
  return pacedStream(() => {
    if (i >= chunks.length) return null;
    const slice: Buffer[] = [];
    let n = 0;
    while (i < chunks.length && n < SLICE_BYTES) {
      const c = chunks[i]!;
      const take = Math.min(c.length - at, SLICE_BYTES - n);
      slice.push(at === 0 && take === c.length ? c : c.subarray(at, at + take));
      n += take;
      at += take;
      if (at === c.length) { i++; at = 0; }
    }
    return slice.length === 1 ? slice[0]! : Buffer.concat(slice, n);
  });
}

/**
 * `items.map(fn)` a slice at a time: after each `perSlice` items the loop gets a turn. For the
 * decoding of large lists (Table, YAML and metadata-only answers).
 */
export async function mapSliced<T, R>(items: readonly T[], fn: (item: T) => R, perSlice = 200): Promise<R[]> {
  const out: R[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    out[i] = fn(items[i]!);
    if ((i + 1) % perSlice === 0 && i + 1 < items.length) await yieldToLoop();
  }
  return out;
}
