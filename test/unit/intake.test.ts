/**
 * Request intake (src/server/intake.ts): requests read together start within a per-turn budget,
 * the rest round-robin by logical cluster in later turns, so a tenant's burst does not hold the
 * event loop and another tenant's request starts within a turn or two.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { intakeFlowOf, RequestIntake } from '../../src/server/intake.js';

/** Holds the thread for `ms` (a request's synchronous part). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

describe('request intake', () => {
  it('names the flow by the logical cluster in the path', () => {
    assert.equal(intakeFlowOf('/clusters/root:org:team/api/v1/namespaces'), 'root:org:team');
    assert.equal(intakeFlowOf('/clusters/abc?watch=1'), 'abc');
    assert.equal(intakeFlowOf('/clusters/abc'), 'abc');
    assert.equal(intakeFlowOf('/api/v1/namespaces'), '');
    assert.equal(intakeFlowOf('/readyz'), '');
    assert.equal(intakeFlowOf(undefined), '');
  });

  it('starts a request at once while the turn has budget', async () => {
    await nextTurn();
    const started: number[] = [];
    const intake = new RequestIntake<number, null>((n) => started.push(n), () => 'x', 5);
    for (let i = 0; i < 10; i++) intake.submit(i, null);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'ten cheap requests of one turn start synchronously');
    assert.equal(intake.stats.deferred, 0);
  });

  it('a burst of one tenant waits for later turns; another tenant\'s request starts within a turn or two', async () => {
    await nextTurn();
    const order: string[] = [];
    const intake = new RequestIntake<string, number>((flow) => { order.push(flow); spin(0.5); }, (flow) => flow, 5);
    // 400 requests of tenant a read in one turn: 200 ms of work.
    for (let i = 0; i < 400; i++) intake.submit('a', i);
    const startedInFirstTurn = order.length;
    assert.ok(startedInFirstTurn >= 1 && startedInFirstTurn <= 15, `${startedInFirstTurn} started in the turn that read them (budget 5 ms, 0.5 ms each)`);
    assert.ok(intake.stats.waiting > 350);
    // The loop turns while a's requests wait; b's request arrives in a later turn.
    let turns = 0;
    await nextTurn(); turns++;
    intake.submit('b', 0);
    const aBeforeB = () => order.indexOf('b') - startedInFirstTurn;
    while (!order.includes('b')) { await nextTurn(); turns++; }
    assert.ok(aBeforeB() <= 25, `${aBeforeB()} of a's requests started between b's arrival and its start`);
    while (intake.stats.waiting > 0) { await nextTurn(); turns++; }
    assert.equal(order.length, 401, 'every request starts');
    assert.ok(turns >= 20, `the 200 ms of work was spread over ${turns} turns`);
  });

  it('a turn\'s budget counts the asynchronous work of the requests it started', async () => {
    await nextTurn();
    const order: number[] = [];
    // A request whose filters do little synchronously and the rest in promise continuations and
    // nextTick callbacks (authentication, admission, the socket write): 1 ms of work in all.
    const intake = new RequestIntake<number, null>((n) => {
      order.push(n);
      if (n === 0) { spin(6); return; } // fills the first turn's budget: the rest wait
      void Promise.resolve().then(() => spin(0.5));
      process.nextTick(() => spin(0.5));
    }, () => 'a', 5);
    for (let i = 0; i <= 100; i++) intake.submit(i, null);
    assert.equal(order.length, 1);
    // The longest turn while the 100 ms of work drains (the gap between two check phases).
    let last = performance.now();
    let longest = 0;
    let turns = 0;
    while (intake.stats.waiting > 0 || order.length < 101) {
      await nextTurn();
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      turns++;
    }
    assert.ok(longest < 20, `longest turn ${longest.toFixed(1)} ms (budget 5 ms; all in one turn would be 100 ms)`);
    assert.ok(turns >= 10, `the 100 ms of work was spread over ${turns} turns`);
  });

  it('serves waiting flows round-robin', async () => {
    await nextTurn();
    const order: string[] = [];
    const intake = new RequestIntake<string, number>((flow) => { order.push(flow); spin(1); }, (flow) => flow, 2);
    for (let i = 0; i < 20; i++) intake.submit('a', i);
    for (let i = 0; i < 20; i++) intake.submit('c', i);
    const first = order.length;
    while (intake.stats.waiting > 0) await nextTurn();
    const waited = order.slice(first);
    assert.equal(waited.length, 40 - first);
    // Once c's requests wait beside a's, they alternate.
    const firstC = waited.indexOf('c');
    const tail = waited.slice(Math.max(0, firstC - 1), firstC + 20);
    for (let i = 1; i < tail.length && tail[i] !== undefined; i++) {
      if (tail.slice(i).every((f) => f === tail[i])) break; // one flow ran out
      assert.notEqual(tail[i], tail[i - 1], `round-robin broken at ${i}: ${tail.join(',')}`);
    }
  });
});
