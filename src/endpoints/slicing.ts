/**
 * Large responses in slices. Node runs every request of a shard on one event loop: a LIST of
 * thousands of objects encoded in one synchronous pass holds the loop for every other tenant for
 * as long as it takes. Responses over {@link SLICE_BYTES} are produced a slice at a time instead,
 * yielding to the loop between slices (other requests, watch events and timers run in between),
 * and written as the client reads them (the stream's backpressure).
 */
import { Readable } from 'node:stream';
import { setImmediate as yieldTurn } from 'node:timers/promises';

/**
 * Bytes of response produced per turn of the event loop: 256 KiB is about 0.3 ms of work on the
 * reference machine (2 cores), so one large response delays another request by about that much.
 */
export const SLICE_BYTES = 256 * 1024;

/** Gives the event loop one turn (I/O, timers and other requests run). */
export function yieldToLoop(): Promise<void> {
  return yieldTurn();
}

/**
 * A readable stream of `head`, the parts `part(i)` for i in [0, count) joined by `separator`,
 * then `tail`; produced in slices of about {@link SLICE_BYTES}, one per turn of the event loop.
 * `part` is called lazily, in order, once per index.
 */
export function slicedStream(head: string, count: number, part: (i: number) => string, separator: string, tail: string): Readable {
  async function* produce(): AsyncGenerator<string> {
    let slice = head;
    for (let i = 0; i < count; i++) {
      slice += (i ? separator : '') + part(i);
      if (slice.length >= SLICE_BYTES) {
        yield slice;
        slice = '';
        await yieldToLoop();
      }
    }
    yield slice + tail;
  }
  return Readable.from(produce(), { objectMode: false });
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
