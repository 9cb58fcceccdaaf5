/**
 * StalledReaders (src/endpoints/filters/stalledreaders.ts) on writables whose reader never takes
 * anything, swept with a clock of the test's own: seats go back after the stall interval, a
 * 'drain' restarts the count, and past the per-flow bound a stalled response is aborted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { StalledReaders } from '../../src/endpoints/filters/stalledreaders.js';
import type { AnyResponse } from '../../src/server/serving.js';

/** A response whose client stopped reading: its first write is never taken. */
function stalledResponse(): Writable {
  const w = new Writable({ highWaterMark: 1, write(_chunk, _enc, _taken) { /* the reader stopped */ } });
  w.write('x');
  assert.equal(w.writableNeedDrain, true);
  return w;
}

/** A response whose client reads everything at once. */
function readResponse(): Writable {
  return new Writable({ write(_chunk, _enc, taken) { taken(); } });
}

function held(sr: StalledReaders, res: Writable, flow: string, longRunning = false): { released: () => number; forget: () => void } {
  let n = 0;
  const forget = sr.hold(res as unknown as AnyResponse, flow, longRunning, () => { n++; });
  return { released: () => n, forget };
}

const tick = () => new Promise((r) => setImmediate(r));

test('a response waiting for its reader gives its seats back after the stall interval; a reading one keeps them', () => {
  const sr = new StalledReaders({ stallMs: 250, sweepMs: 1e9 });
  const stalled = held(sr, stalledResponse(), 'ws/u');
  const reading = held(sr, readResponse(), 'ws/u');
  sr.sweep(1000);
  sr.sweep(1200);
  assert.equal(stalled.released(), 0, 'not before 250 ms');
  sr.sweep(1260);
  assert.equal(stalled.released(), 1);
  assert.equal(reading.released(), 0);
  assert.deepEqual(sr.counts, { parked: 1, aborted: 0, holding: 1 });
  sr.sweep(2000);
  assert.equal(stalled.released(), 1, 'released once');
  reading.forget();
  assert.equal(sr.counts.holding, 0);
});

test('a drain (the reader took something) restarts the count', () => {
  const sr = new StalledReaders({ stallMs: 250, sweepMs: 1e9 });
  const res = stalledResponse();
  const h = held(sr, res, 'ws/u');
  sr.sweep(0);
  res.emit('drain');
  sr.sweep(300);
  assert.equal(h.released(), 0, 'it read at 0–300 ms');
  sr.sweep(560);
  assert.equal(h.released(), 1);
});

test('an answer written whole and ended waits for its reader all the same', () => {
  const sr = new StalledReaders({ stallMs: 250, sweepMs: 1e9 });
  const res = stalledResponse();
  res.end();
  assert.equal(res.writableNeedDrain, false, 'ended: no longer says it needs a drain');
  const h = held(sr, res, 'ws/u');
  sr.sweep(1000);
  sr.sweep(1300);
  assert.equal(h.released(), 1);
});

test('a reader that takes part of what waits restarts the count', () => {
  const sr = new StalledReaders({ stallMs: 250, sweepMs: 1e9 });
  const takes: (() => void)[] = [];
  const res = new Writable({ highWaterMark: 1, write(_chunk, _enc, taken) { takes.push(taken); } });
  for (const c of ['a', 'b', 'c']) res.write(c);
  const h = held(sr, res, 'ws/u');
  sr.sweep(1000);
  takes.shift()!();
  assert.equal(res.writableLength, 2);
  sr.sweep(1300);
  assert.equal(h.released(), 0, 'it took a chunk at 1000–1300 ms');
  sr.sweep(1560);
  assert.equal(h.released(), 1);
});

test('past the per-flow bound a stalled response is aborted; another flow and watches still park; a closed parked one frees its place', async () => {
  const sr = new StalledReaders({ stallMs: 250, sweepMs: 1e9, parkedPerFlow: 2, parkedMax: 10 });
  const a = [stalledResponse(), stalledResponse(), stalledResponse()];
  const ha = a.map((r) => held(sr, r, 'ws-a/u'));
  const hb = held(sr, stalledResponse(), 'ws-b/u');
  const watch = held(sr, stalledResponse(), 'ws-a/u', true);
  sr.sweep(0);
  sr.sweep(300);
  assert.deepEqual(ha.map((h) => h.released()), [1, 1, 0]);
  assert.deepEqual(a.map((r) => r.destroyed), [false, false, true]);
  assert.equal(hb.released(), 1);
  assert.equal(watch.released(), 1, 'a watch parks beyond the bound');
  assert.deepEqual(sr.counts, { parked: 3, aborted: 1, holding: 0 });
  a[0]!.destroy();
  await tick();
  assert.equal(sr.counts.parked, 2);
  const next = held(sr, stalledResponse(), 'ws-a/u');
  sr.sweep(1000);
  sr.sweep(1300);
  assert.equal(next.released(), 1, 'parked in the freed place');
  assert.equal(sr.counts.aborted, 1);
});

test('the process-wide bound aborts whatever the flow', () => {
  const sr = new StalledReaders({ stallMs: 10, sweepMs: 1e9, parkedPerFlow: 5, parkedMax: 2 });
  const res = [stalledResponse(), stalledResponse(), stalledResponse()];
  res.forEach((r, i) => held(sr, r, `ws-${i}/u`));
  sr.sweep(0);
  sr.sweep(20);
  assert.deepEqual(res.map((r) => r.destroyed), [false, false, true]);
});

test('a response no longer held (seats released otherwise) is not looked at', () => {
  const sr = new StalledReaders({ stallMs: 10, sweepMs: 1e9 });
  const h = held(sr, stalledResponse(), 'ws/u');
  sr.sweep(0);
  h.forget();
  sr.sweep(100);
  assert.equal(h.released(), 0);
  assert.equal(sr.counts.holding, 0);
});
