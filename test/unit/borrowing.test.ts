/**
 * Concurrency borrowing between priority levels (src/flowcontrol/borrowing.ts and the
 * dispatcher's `updateBorrowing`), kube's KEP-1040 borrowing: limits from lendable and borrowing
 * percentages, the seat-demand integrator, the allocation, and a busy level taking the seats idle
 * levels lend while the others keep what they use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import { BOOTSTRAP } from '../../src/flowcontrol/bootstrap.js';
import { allocateConcurrency, levelLimits, SeatDemandIntegrator, SeatDemandStats } from '../../src/flowcontrol/borrowing.js';
import { Dispatcher } from '../../src/flowcontrol/controller.js';
import type { RequestDigest } from '../../src/flowcontrol/match.js';
import type { WorkEstimate } from '../../src/flowcontrol/queueset.js';

function fakeClock() { let t = 0; return { now: () => t, advance: (ms: number) => { t += ms; } }; }

test('a level\'s limits: kube\'s suggested global-default at 600 server seats', () => {
  // nominal ceil(600 × 20 / 245) = 49; lendable 50 %: round(24.5) = 25; no borrowing limit.
  assert.deepEqual(levelLimits(49, 50, undefined, 600, 6), { minCL: 24, maxCL: 649, initialCL: 37, maxSeats: 8 });
  // workload-low: nominal 245, lendable 90 %: round(220.5) = 221; hand 6 → max seats min(ceil(36.75), 40) = 37.
  assert.deepEqual(levelLimits(245, 90, undefined, 600, 6), { minCL: 24, maxCL: 845, initialCL: 135, maxSeats: 37 });
  // leader-election: nominal 25, lendable 0, borrowing limit 0 %.
  assert.deepEqual(levelLimits(25, 0, 0, 600, 4), { minCL: 25, maxCL: 25, initialCL: 25, maxSeats: 4 });
  // A Reject level (no hand) has no max-seats limit of its own; a tiny level at least 1.
  assert.equal(levelLimits(10, 0, undefined, 600, undefined).maxSeats, 0);
  assert.equal(levelLimits(1, 0, undefined, 600, 6).maxSeats, 1);
});

test('seat demand is integrated over time: mean, deviation and high watermark of a period', () => {
  const clock = fakeClock();
  const d = new SeatDemandIntegrator(clock.now);
  d.set(10);
  clock.advance(500);
  d.set(30);
  clock.advance(500);
  const obs = d.reset();
  assert.equal(obs.durationMs, 1000);
  assert.equal(obs.average, 20);
  assert.equal(obs.deviation, 10);
  assert.equal(obs.max, 30);
  clock.advance(1000);
  const next = d.reset();
  assert.deepEqual(next, { average: 30, deviation: 0, max: 30, durationMs: 1000 }, 'the next period starts at the current value');
  const stats = new SeatDemandStats();
  stats.update(obs);
  assert.equal(stats.highWatermark, 30);
  assert.equal(stats.smoothed, 30, 'the envelope (mean + deviation) at once');
  stats.update({ average: 0, deviation: 0, max: 0, durationMs: 1000 });
  assert.ok(Math.abs(stats.smoothed - 30 * 0.977) < 1e-9, 'then it decays by the smoothing coefficient');
});

test('allocation: proportional to the targets within the bounds, summing to the server\'s seats', () => {
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  // No bound binds: 100 seats in proportion 1 : 3.
  let a = allocateConcurrency(100, [{ lowerBound: 0, upperBound: 100, target: 10 }, { lowerBound: 0, upperBound: 100, target: 30 }]);
  assert.ok(Math.abs(a[0]! - 25) < 1e-6 && Math.abs(a[1]! - 75) < 1e-6, String(a));
  // An upper bound binds: the other takes the rest.
  a = allocateConcurrency(100, [{ lowerBound: 0, upperBound: 10, target: 50 }, { lowerBound: 0, upperBound: 100, target: 50 }]);
  assert.ok(Math.abs(a[0]! - 10) < 1e-6 && Math.abs(sum(a) - 100) < 1e-6, String(a));
  // A lower bound binds: an idle level keeps its floor.
  a = allocateConcurrency(100, [{ lowerBound: 20, upperBound: 100, target: 20 }, { lowerBound: 5, upperBound: 100, target: 400 }]);
  assert.ok(Math.abs(a[0]! - 20) < 1e-6 && Math.abs(a[1]! - 80) < 1e-6, String(a));
  // No room: lower bounds, or upper bounds.
  assert.deepEqual(allocateConcurrency(10, [{ lowerBound: 6, upperBound: 9, target: 6 }, { lowerBound: 5, upperBound: 9, target: 5 }]), [6, 5]);
  assert.deepEqual(allocateConcurrency(30, [{ lowerBound: 6, upperBound: 9, target: 6 }, { lowerBound: 5, upperBound: 9, target: 5 }]), [9, 9]);
  assert.throws(() => allocateConcurrency(10, [{ lowerBound: 6, upperBound: 5, target: 6 }]), RangeError);
});

const objs = (specs: Record<string, object>, kind: string): KubeObject[] => Object.entries(specs).map(([name, spec]) => ({ apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind, metadata: { name, uid: name }, spec: structuredClone(spec) as Record<string, unknown> }));
const source = { flowSchemas: () => objs(BOOTSTRAP.flowSchemas, 'FlowSchema'), priorityLevels: () => objs(BOOTSTRAP.priorityLevels, 'PriorityLevelConfiguration') };
const alice = (cluster: string): RequestDigest => ({ cluster, user: { name: 'alice', groups: ['system:authenticated'] }, isResourceRequest: true, verb: 'list', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'default', path: '/api/v1/namespaces/default/configmaps' });
const list: WorkEstimate = { initialSeats: 10, finalSeats: 0, additionalLatencyMs: 0 };
const get: WorkEstimate = { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 };

test('a LIST flood in global-default borrows the seats idle levels lend; a wide request holds at most the level\'s max seats', async () => {
  const clock = fakeClock();
  const d = new Dispatcher(source, { serverConcurrencyLimit: 600, now: clock.now });
  try {
    // Before any adjustment: nominal less half the lendable seats; a LIST of 10 seats holds 8.
    const held = [];
    let admitted = 0;
    const waiting: Promise<unknown>[] = [];
    for (let i = 0; i < 64; i++) {
      const a = d.admit(alice('ws-a'), list);
      if (a instanceof Promise) waiting.push(a.then((g) => { held.push(g); admitted++; }, () => undefined)); else { held.push(a); admitted++; }
    }
    assert.equal(admitted, 4, '37 seats: four LISTs of 8 seats');
    // Ten seconds of that demand (64 × 8 seats wanted), then the adjustment.
    clock.advance(10_000);
    d.updateBorrowing();
    await new Promise((r) => setImmediate(r));
    // The idle levels keep only what they do not lend (their lower limits); global-default takes the rest.
    const levels = (d as unknown as { levels: Map<string, { currentCL: number; minCL: number; exempt: boolean }> }).levels;
    let othersFloor = 0;
    for (const [name, l] of levels) if (!l.exempt && name !== 'global-default') othersFloor += l.minCL;
    const current = levels.get('global-default')!.currentCL;
    assert.ok(Math.abs(current - (600 - othersFloor)) <= levels.size,  `global-default has ${current} seats, the others lend all but ${othersFloor}`);
    assert.equal(admitted, Math.floor(current / 8), `${admitted} LISTs run once global-default borrowed (was 4)`);
    // B's GET starts as LISTs finish, before A's 18 queued LISTs have all started (fair queuing:
    // A's flow waits behind itself), and with 46 LISTs running one finishes ten times as often as with 4.
    const b = d.admit(alice('ws-b'), get);
    let bStarted = !(b instanceof Promise);
    if (b instanceof Promise) void b.then(() => { bStarted = true; });
    let releases = 0;
    while (!bStarted && releases < 18) {
      (held.shift() as { release(): void }).release();
      releases++;
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(bStarted, 'B\'s GET started');
    assert.ok(releases < 18, `B's GET waited for ${releases} LISTs to finish, not behind all of A's queued ones`);
    // Idle levels keep at least what they do not lend; the server's seats are not exceeded.
    clock.advance(10_000);
    d.updateBorrowing();
    let total = 0;
    for (const [name, l] of levels) {
      if (l.exempt) continue;
      assert.ok(l.currentCL >= l.minCL, `${name} keeps its lower limit`);
      total += l.currentCL;
    }
    assert.ok(total <= 600 + levels.size, `${total} seats in all`);
  } finally {
    d.close();
  }
});
