/**
 * API priority and fairness (src/flowcontrol): shuffle sharding, the queue set's fairness and
 * refusals, classification by the bootstrap configuration, the work estimator, validation and
 * the max-in-flight filter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/apimachinery/errors.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import { BOOTSTRAP } from '../../src/flowcontrol/bootstrap.js';
import { Dispatcher, type ConfigSource } from '../../src/flowcontrol/controller.js';
import { estimateWork, type EstimateInput, type WorkCounts } from '../../src/flowcontrol/estimator.js';
import { createRequestFilter, type FlowControlRequest } from '../../src/flowcontrol/filter.js';
import type { RequestDigest } from '../../src/flowcontrol/match.js';
import { QueueSet, RejectedError, type Cancellation, type Ticket, type WorkEstimate } from '../../src/flowcontrol/queueset.js';
import { Dealer, hashFlow } from '../../src/flowcontrol/shufflesharding.js';
import { defaultPriorityLevel } from '../../src/flowcontrol/types.js';
import { validateFlowSchema, validatePriorityLevel } from '../../src/flowcontrol/validation.js';

const one: WorkEstimate = { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 };

/** A clock the test moves by hand (ms). */
function fakeClock() { let t = 0; return { now: () => t, advance: (ms: number) => { t += ms; } }; }

test('shuffle sharding: hands are deterministic, distinct and within the deck; kube\'s mixed-radix deal', () => {
  assert.deepEqual(new Dealer(10, 3).deal(0n), [0, 1, 2]);
  // 7 = 7 mod 10, then 0, 0: cards 7, then the first free ones.
  assert.deepEqual(new Dealer(10, 3).deal(7n), [7, 0, 1]);
  const d = new Dealer(128, 6);
  for (const flow of ['ws-a/alice', 'ws-b/alice', 'ws-a/bob']) {
    const h = hashFlow('global-default', flow);
    const hand = d.deal(h);
    assert.deepEqual(hand, d.deal(hashFlow('global-default', flow)), 'same flow, same hand');
    assert.equal(new Set(hand).size, 6);
    for (const c of hand) assert.ok(c >= 0 && c < 128);
  }
  assert.notEqual(hashFlow('global-default', 'ws-a/alice'), hashFlow('global-default', 'ws-b/alice'));
  assert.throws(() => new Dealer(4, 5), /greater than deckSize/);
  assert.throws(() => new Dealer(1 << 20, 4), /entropy/);
});

test('queue set: a flow flooding the level does not delay another flow\'s one request beyond one request\'s service', async () => {
  // 10 seats; every request is served in 3 ms (the estimate), so one seat frees every 0.3 ms.
  const clock = fakeClock();
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 10, queues: 64, handSize: 4, queueLengthLimit: 50 }, clock.now);
  const running: { ticket: Ticket; at: number }[] = [];
  const flood = hashFlow('fs', 'ws-a/alice');
  const startA = () => {
    const r = qs.start(flood, one, { waitLimitMs: 60_000 });
    if (r instanceof Promise) void r.then((ticket) => { running.push({ ticket, at: clock.now() }); }, () => undefined);
    else running.push({ ticket: r, at: clock.now() });
  };
  for (let i = 0; i < 150; i++) startA();
  let bArrived = -1;
  let bStarted = -1;
  for (let step = 0; step < 300; step++) {
    clock.advance(0.3);
    if (step === 100) {
      assert.equal(qs.stats.seatsInUse, 10);
      assert.ok(qs.stats.waiting > 50, `A keeps ${qs.stats.waiting} requests waiting`);
      bArrived = clock.now();
      const b = qs.start(hashFlow('fs', 'ws-b/bob'), one, { waitLimitMs: 60_000 });
      assert.ok(b instanceof Promise, 'no free seat: B waits');
      void b.then((ticket) => { bStarted = clock.now(); running.push({ ticket, at: clock.now() }); });
    }
    const done = running.findIndex((r) => r.at + 3 <= clock.now() + 1e-9);
    if (done >= 0) running.splice(done, 1)[0]!.ticket.finish();
    // A keeps flooding: a new request every 1.5 ms on top of its backlog.
    if (step % 5 === 0) startA();
    await new Promise((r) => setImmediate(r));
  }
  assert.ok(bStarted >= bArrived, 'B was dispatched');
  assert.ok(bStarted - bArrived <= 3, `B waited ${bStarted - bArrived} ms, more than one request's service (3 ms)`);
});

test('queue set: requests running far beyond the 3 ms estimate do not push another flow\'s request behind the flood', async () => {
  // A busy event loop: every request runs 24 ms (8× the estimate) on 12 seats, a seat freeing
  // every 2 ms. A keeps 50 requests in flight; B sends one request now and then. Were A's queues
  // charged only when their requests finish, they would look less served than they are and B
  // would wait behind several requests of each (9 dispatches measured); charging what executing
  // requests have run so far lets B in within a few.
  const service = 24;
  const limit = 12;
  const interval = service / limit;
  const clock = fakeClock();
  const qs = new QueueSet({ name: 'l', concurrencyLimit: limit, queues: 128, handSize: 6, queueLengthLimit: 50 }, clock.now);
  const running: { ticket: Ticket; at: number }[] = [];
  const startA = () => {
    const r = qs.start(hashFlow('fs', 'ws-a/alice'), one, { waitLimitMs: 60_000 });
    if (r instanceof Promise) void r.then((ticket) => { running.push({ ticket, at: clock.now() }); });
    else running.push({ ticket: r, at: clock.now() });
  };
  for (let i = 0; i < 50; i++) startA();
  const waits: number[] = [];
  for (let step = 0; step < 10_000; step++) {
    clock.advance(interval);
    if (step % 200 === 100) {
      const arrived = clock.now();
      const b = qs.start(hashFlow('fs', 'ws-b/bob'), one, { waitLimitMs: 60_000 });
      if (b instanceof Promise) void b.then((ticket) => { waits.push(clock.now() - arrived); running.push({ ticket, at: clock.now() }); });
      else { waits.push(0); running.push({ ticket: b, at: clock.now() }); }
    }
    const done = running.findIndex((r) => r.at + service <= clock.now() + 1e-9);
    // A replaces each finished request: its 50 stay in flight.
    if (done >= 0) { running.splice(done, 1)[0]!.ticket.finish(); startA(); }
    await new Promise((r) => setImmediate(r));
  }
  // Drain A's backlog (its queued requests would otherwise time out after the test).
  while (!qs.idle) {
    for (const r of running.splice(0)) r.ticket.finish();
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(waits.length, 50, 'every B request was dispatched');
  const longest = Math.max(...waits);
  assert.ok(longest <= 4 * interval, `B waited up to ${longest} ms: ${longest / interval} dispatches`);
});

test('queue set: two flooding flows share the seats about equally', async () => {
  const clock = fakeClock();
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 4, queues: 64, handSize: 4, queueLengthLimit: 100 }, clock.now);
  const started: string[] = [];
  const pending: Promise<void>[] = [];
  const tickets: Ticket[] = [];
  for (const flow of ['a', 'b']) {
    for (let i = 0; i < 40; i++) {
      const r = qs.start(hashFlow('fs', flow), one, { waitLimitMs: 60_000 });
      if (r instanceof Promise) pending.push(r.then((t) => { started.push(flow); tickets.push(t); }));
      else { started.push(flow); tickets.push(r); }
    }
  }
  // Serve 40 requests one after the other, 1 ms each.
  for (let i = 0; i < 40; i++) {
    clock.advance(1);
    tickets.shift()!.finish();
    await new Promise((r) => setImmediate(r));
  }
  const served = started.slice(0, 40);
  const a = served.filter((f) => f === 'a').length;
  assert.ok(a >= 16 && a <= 24, `flow a got ${a} of 40`);
  while (tickets.length) { tickets.shift()!.finish(); await new Promise((r) => setImmediate(r)); }
  await Promise.all(pending);
});

test('queue set: 429 reasons — queue full, no seat at a Reject level, wait limit, client gone', async () => {
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 1, queues: 1, handSize: 1, queueLengthLimit: 2 });
  const h = hashFlow('fs', 'x');
  const first = qs.start(h, one, { waitLimitMs: 60_000 }) as Ticket;
  const w1 = qs.start(h, one, { waitLimitMs: 60_000 });
  const w2 = qs.start(h, one, { waitLimitMs: 60_000 });
  assert.ok(w1 instanceof Promise && w2 instanceof Promise);
  assert.throws(() => qs.start(h, one, { waitLimitMs: 60_000 }), (e: unknown) => e instanceof RejectedError && e.reason === 'queue-full');
  first.finish();
  (await w1).finish();
  (await w2).finish();

  const reject = new QueueSet({ name: 'r', concurrencyLimit: 2, queues: 0, handSize: 1, queueLengthLimit: 1 });
  const a = reject.start(h, one, { waitLimitMs: 1 }) as Ticket;
  const b = reject.start(h, one, { waitLimitMs: 1 }) as Ticket;
  assert.throws(() => reject.start(h, one, { waitLimitMs: 1 }), (e: unknown) => e instanceof RejectedError && e.reason === 'concurrency-limit');
  a.finish(); b.finish();

  const busy = qs.start(h, one, { waitLimitMs: 60_000 }) as Ticket;
  await assert.rejects(qs.start(h, one, { waitLimitMs: 20 }) as Promise<Ticket>, (e: unknown) => e instanceof RejectedError && e.reason === 'time-out');
  const gone: Cancellation = {};
  const p = qs.start(h, one, { waitLimitMs: 60_000, cancellation: gone });
  assert.equal(typeof gone.cancel, 'function', 'the queue set fills the hook when the request waits');
  gone.cancel!();
  await assert.rejects(p as Promise<Ticket>, (e: unknown) => e instanceof RejectedError && e.reason === 'cancelled');
  busy.finish();
  assert.equal(qs.idle, true);
});

test('queue set: a request wider than the level runs alone; final seats are held for the additional latency', async () => {
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 4, queues: 8, handSize: 2, queueLengthLimit: 10 });
  const wide = qs.start(1n, { initialSeats: 10, finalSeats: 0, additionalLatencyMs: 0 }, { waitLimitMs: 1000 });
  assert.ok(!(wide instanceof Promise), 'runs when nothing else does');
  const next = qs.start(2n, one, { waitLimitMs: 1000 });
  assert.ok(next instanceof Promise);
  wide.finish();
  const t = await next;
  const fanout = qs.start(3n, { initialSeats: 1, finalSeats: 3, additionalLatencyMs: 30 }, { waitLimitMs: 1000 }) as Ticket;
  assert.equal(qs.stats.seatsInUse, 4);
  fanout.finish();
  t.finish();
  assert.equal(qs.stats.seatsInUse, 3, 'final seats held after finishing');
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(qs.stats.seatsInUse, 0);
});

test('queue set: a one-seat request runs beside a wide head that waits for seats (backfill), never delaying that head', async () => {
  const clock = fakeClock();
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 12, queues: 64, handSize: 1, queueLengthLimit: 50 }, clock.now);
  const wide: WorkEstimate = { initialSeats: 10, finalSeats: 0, additionalLatencyMs: 0 };
  const list1 = qs.start(1n, wide, { waitLimitMs: 60_000 }) as Ticket;
  const list2 = qs.start(1n, wide, { waitLimitMs: 60_000 }) as Promise<Ticket>;
  let list2Started = false;
  void list2.then(() => { list2Started = true; });
  // The flood's queue is behind in virtual time: its waiting LIST is the head kube would insist on.
  clock.advance(1000);
  const gets = [2n, 3n, 4n].map((flow) => qs.start(flow, one, { waitLimitMs: 60_000 }));
  assert.ok(!(gets[0] instanceof Promise) && !(gets[1] instanceof Promise), 'two GETs run in the two free seats');
  assert.ok(gets[2] instanceof Promise, 'a third does not fit');
  assert.equal(qs.stats.seatsInUse, 12);
  // The first LIST ends: the waiting LIST fits beside the backfilled GETs and goes first.
  list1.finish();
  await new Promise((r) => setImmediate(r));
  assert.ok(list2Started, 'the blocked LIST runs once the seats it waited for are free');
  assert.equal(qs.stats.seatsInUse, 12);
  (gets[0] as Ticket).finish();
  const third = await (gets[2] as Promise<Ticket>);
  third.finish(); (gets[1] as Ticket).finish(); (await list2).finish();
  assert.equal(qs.stats.seatsInUse, 0);
});

test('queue set: backfill leaves the blocked head its seats (at most limit − head seats are backfilled)', async () => {
  const clock = fakeClock();
  const qs = new QueueSet({ name: 'l', concurrencyLimit: 12, queues: 64, handSize: 1, queueLengthLimit: 50 }, clock.now);
  const list1 = qs.start(1n, { initialSeats: 3, finalSeats: 0, additionalLatencyMs: 0 }, { waitLimitMs: 60_000 }) as Ticket;
  const list2 = qs.start(1n, { initialSeats: 10, finalSeats: 0, additionalLatencyMs: 0 }, { waitLimitMs: 60_000 }) as Promise<Ticket>;
  clock.advance(1000);
  // 9 seats free, but the blocked head needs 10 of 12: only 2 may go to backfill.
  const gets = [2n, 3n, 4n].map((flow) => qs.start(flow, one, { waitLimitMs: 60_000 }));
  assert.deepEqual(gets.map((g) => g instanceof Promise), [false, false, true]);
  assert.equal(qs.stats.seatsInUse, 5);
  list1.finish();
  assert.equal(qs.stats.seatsInUse, 12, 'the wide head runs beside the two backfilled GETs');
  (gets[0] as Ticket).finish(); (gets[1] as Ticket).finish(); (await list2).finish();
  (await (gets[2] as Promise<Ticket>)).finish();
  assert.equal(qs.stats.seatsInUse, 0);
});

function bootstrapSource(extra: { fs?: KubeObject[]; pl?: KubeObject[] } = {}): ConfigSource {
  const objs = (specs: Record<string, object>, kind: string) => Object.entries(specs).map(([name, spec]) => ({ apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind, metadata: { name, uid: `uid-${name}` }, spec }) as KubeObject);
  return {
    flowSchemas: () => [...objs(BOOTSTRAP.flowSchemas, 'FlowSchema'), ...(extra.fs ?? [])],
    priorityLevels: () => [...objs(BOOTSTRAP.priorityLevels, 'PriorityLevelConfiguration'), ...(extra.pl ?? [])],
  };
}

const digest = (over: Partial<RequestDigest> & { user: RequestDigest['user'] }): RequestDigest => ({
  cluster: 'ws-a', isResourceRequest: true, verb: 'get', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'default', path: '/api/v1/namespaces/default/configmaps/x', ...over,
});
const authed = (name: string, ...groups: string[]) => ({ name, groups: [...groups, 'system:authenticated'] });

test('classification by kube\'s bootstrap configuration: precedence, subjects, rules; flows per logical cluster', () => {
  const d = new Dispatcher(bootstrapSource(), { serverConcurrencyLimit: 600 });
  const c = (x: RequestDigest) => { const r = d.classify(x); return `${r.flowSchema}/${r.priorityLevel} ${r.flow}`; };
  assert.equal(c(digest({ user: { name: 'root', groups: ['system:masters', 'system:authenticated'] } })), 'exempt/exempt ws-a');
  assert.equal(c(digest({ user: authed('alice') })), 'global-default/global-default ws-a/alice');
  assert.equal(c(digest({ user: authed('alice'), cluster: 'ws-b' })), 'global-default/global-default ws-b/alice');
  const sa = authed('system:serviceaccount:kube-system:ctrl', 'system:serviceaccounts', 'system:serviceaccounts:kube-system');
  assert.equal(c(digest({ user: sa, apiGroup: 'coordination.k8s.io', resource: 'leases', verb: 'update' })), 'system-leader-election/leader-election ws-a/system:serviceaccount:kube-system:ctrl');
  assert.equal(c(digest({ user: sa, verb: 'list', namespace: 'kube-system' })), 'kube-system-service-accounts/workload-high ws-a/kube-system');
  const tenantSA = authed('system:serviceaccount:default:app', 'system:serviceaccounts');
  assert.equal(c(digest({ user: tenantSA })), 'service-accounts/workload-low ws-a/system:serviceaccount:default:app');
  assert.equal(c(digest({ user: authed('system:kube-controller-manager'), resource: 'endpoints', verb: 'update' })), 'endpoint-controller/workload-high ws-a/system:kube-controller-manager');
  assert.equal(c(digest({ user: authed('system:node:n1', 'system:nodes'), resource: 'nodes', subresource: 'status', namespace: '', verb: 'patch' })), 'system-node-high/node-high ws-a/system:node:n1');
  assert.equal(c(digest({ user: authed('system:node:n1', 'system:nodes'), resource: 'configmaps' })), 'system-nodes/system ws-a/system:node:n1');
  assert.equal(c(digest({ user: { name: 'system:anonymous', groups: ['system:unauthenticated'] }, isResourceRequest: false, path: '/readyz', resource: '' })), 'probes/exempt ws-a');
  assert.equal(c(digest({ user: authed('alice'), isResourceRequest: false, path: '/metrics', resource: '' })), 'global-default/global-default ws-a/alice');
  // No group at all: no schema matches; catch-all.
  assert.equal(c(digest({ user: { name: 'nobody', groups: [] } })), 'catch-all/catch-all ws-a/nobody');
  assert.equal(d.nominalLimits['global-default'], Math.ceil(600 * 20 / 245));
  assert.equal(d.nominalLimits['workload-low'], Math.ceil(600 * 100 / 245));
});

test('classification: equal precedence is ordered by name; rules on namespaces, cluster scope and subresources; dangling schemas are skipped', () => {
  const fs = (name: string, precedence: number, level: string, rule: object): KubeObject => ({ apiVersion: 'v1', kind: 'FlowSchema', metadata: { name, uid: name }, spec: { priorityLevelConfiguration: { name: level }, matchingPrecedence: precedence, distinguisherMethod: { type: 'ByNamespace' }, rules: [rule] } });
  const alice = [{ kind: 'User', user: { name: 'alice' } }];
  const d = new Dispatcher(bootstrapSource({
    fs: [
      fs('b-secrets', 50, 'workload-high', { subjects: alice, resourceRules: [{ verbs: ['*'], apiGroups: [''], resources: ['secrets'], namespaces: ['prod'] }] }),
      fs('a-secrets', 50, 'workload-low', { subjects: alice, resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['secrets'], namespaces: ['*'] }] }),
      fs('scale', 60, 'system', { subjects: alice, resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['deployments/scale'], clusterScope: true }] }),
      fs('dangling', 10, 'no-such-level', { subjects: alice, resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }] }),
    ],
  }), { serverConcurrencyLimit: 600 });
  const c = (x: Partial<RequestDigest>) => d.classify(digest({ user: authed('alice'), ...x })).flowSchema;
  assert.equal(c({ resource: 'secrets', namespace: 'prod' }), 'a-secrets', 'same precedence: name order');
  assert.equal(c({ resource: 'secrets', namespace: 'prod', verb: 'list' }), 'b-secrets');
  assert.equal(c({ resource: 'secrets', namespace: '', verb: 'list' }), 'global-default', 'no namespace: only clusterScope rules');
  assert.equal(c({ apiGroup: 'apps', resource: 'deployments', subresource: 'scale', namespace: '' }), 'scale');
  assert.equal(c({ apiGroup: 'apps', resource: 'deployments', namespace: '' }), 'global-default');
  assert.equal(d.dangling.get('dangling'), 'no-such-level');
  assert.equal(d.classify(digest({ user: authed('alice'), resource: 'secrets', namespace: 'prod' })).flow, 'ws-a/prod', 'ByNamespace: <cluster>/<namespace>');
});

test('the dispatcher: 429 TooManyRequests with Retry-After when a Reject level is full; exempt never waits', async () => {
  const reject = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'PriorityLevelConfiguration', metadata: { name, uid: name }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } } });
  const fs: KubeObject = { apiVersion: 'v1', kind: 'FlowSchema', metadata: { name: 'tiny', uid: 'tiny' }, spec: { priorityLevelConfiguration: { name: 'tiny' }, matchingPrecedence: 10, rules: [{ subjects: [{ kind: 'User', user: { name: 'carol' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }] }] } };
  // 246 shares in all: the tiny level gets ceil(246 × 1 / 246) = 1 seat.
  const d = new Dispatcher(bootstrapSource({ fs: [fs], pl: [reject('tiny')] }), { serverConcurrencyLimit: 246 });
  assert.equal(d.nominalLimits.tiny, 1);
  const carol = digest({ user: authed('carol') });
  const held = await d.admit(carol, one);
  assert.throws(() => d.admit(carol, one), (e: unknown) => e instanceof StatusError && e.code === 429 && e.reason === 'TooManyRequests'
    && e.message === 'Too many requests, please try again later.' && e.details?.retryAfterSeconds === 1);
  held.release();
  held.release();
  (await d.admit(carol, one)).release();
  const masters = digest({ user: { name: 'admin', groups: ['system:masters'] } });
  const many = await Promise.all(Array.from({ length: 1000 }, () => d.admit(masters, one)));
  assert.equal(many.length, 1000);
  for (const a of many) a.release();
});

test('work estimator: kube\'s list seats from object counts, watches, mutating fan-out; large objects weigh by their size', () => {
  const counts = (objects: number, watches = 0, storedSize = objects * 1000, objectSize = 1000): WorkCounts => ({ objects: () => objects, storedSize: () => storedSize, watches: () => watches, objectSize: () => objectSize });
  const est = (over: Partial<EstimateInput>, c: WorkCounts) => estimateWork({ verb: 'list', isResourceRequest: true, groupResource: 'core/configmaps', cluster: 'ws-a', namespace: 'default', subresource: '', ...over }, c);
  const q = (s: string) => new URLSearchParams(s);
  assert.equal(est({}, counts(2000)).initialSeats, 10, '2,000 objects: 20 seats capped at 10');
  assert.equal(est({}, counts(250)).initialSeats, 3);
  assert.equal(est({}, counts(0)).initialSeats, 1);
  assert.equal(est({ query: q('limit=100') }, counts(2000)).initialSeats, 1, 'a limit without selector stops early');
  assert.equal(est({ query: q('limit=100&labelSelector=a%3Db') }, counts(500)).initialSeats, 5, 'a selector reads every object');
  assert.equal(est({ verb: 'watch', query: q('watch=true&resourceVersion=12') }, counts(2000)).initialSeats, 1, 'a watch from a revision sends no initial events');
  assert.equal(est({ verb: 'watch', query: q('watch=true') }, counts(2000)).initialSeats, 10, 'a watch from now sends the current state');
  assert.deepEqual(est({ verb: 'create' }, counts(0, 9)), { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 });
  assert.deepEqual(est({ verb: 'update' }, counts(0, 25)), { initialSeats: 1, finalSeats: 3, additionalLatencyMs: 5 });
  assert.deepEqual(est({ verb: 'delete' }, counts(0, 200)), { initialSeats: 1, finalSeats: 10, additionalLatencyMs: 10 }, '20 seats × 5 ms reshaped to 10 × 10 ms');
  assert.equal(est({ verb: 'create', groupResource: 'core/serviceaccounts', subresource: 'token' }, counts(0, 500)).finalSeats, 0);
  assert.equal(est({ verb: 'get' }, counts(5000)).initialSeats, 1);
  assert.equal(est({ verb: 'deletecollection' }, counts(5000, 500)).initialSeats, 1);
  assert.equal(est({ isResourceRequest: false }, counts(5000)).initialSeats, 1);
  assert.equal(est({ groupResource: undefined }, counts(5000)).initialSeats, 1, 'unknown resource: minimum seats');
  assert.equal(est({}, counts(60, 0, 60 * 500_000)).initialSeats, 10, '60 objects of 500 KB: by size, capped at 10');
  assert.equal(est({}, counts(20, 0, 20 * 10_240)).initialSeats, 2, '20 objects of 10 KiB: 200 KiB, two seats');
  assert.equal(est({ query: q('limit=5') }, counts(20, 0, 20 * 10_240)).initialSeats, 1, 'a limit writes `limit` objects of average size');
  assert.equal(est({ verb: 'watch', query: q('watch=true') }, counts(60, 0, 60 * 500_000)).initialSeats, 10, 'initial events weigh the same');
  // Not kube's: a request naming an object, or sending a body, weighs by its size too.
  assert.equal(est({ verb: 'get', name: 'big' }, counts(1, 0, 0, 1_400_000)).initialSeats, 10, 'a GET of a 1.4 MB object: by size, capped at 10');
  assert.equal(est({ verb: 'get', name: 'small' }, counts(1, 0, 0, 1_000)).initialSeats, 1);
  assert.deepEqual(est({ verb: 'patch', name: 'mid' }, counts(1, 25, 0, 250_000)), { initialSeats: 3, finalSeats: 3, additionalLatencyMs: 5 }, 'a small patch of a 250 KB object, fan-out kept');
  assert.equal(est({ verb: 'create', bodyBytes: 300_000 }, counts(0, 0, 0, 0)).initialSeats, 3, 'a create of 300 KB');
  assert.equal(est({ verb: 'update', name: 'x', bodyBytes: 50_000 }, counts(1, 0, 0, 500_000)).initialSeats, 5, 'an update shrinking a 500 KB object');
  assert.equal(est({ verb: 'delete', name: 'gone' }, counts(0, 0, 0, 0)).initialSeats, 1, 'an object not in the cache: one seat');
});

const FS = (spec: object, name = 'x'): KubeObject => ({ apiVersion: 'v1', kind: 'FlowSchema', metadata: { name }, spec });
const PL = (spec: object, name = 'x'): KubeObject => { const o: KubeObject = { apiVersion: 'v1', kind: 'PriorityLevelConfiguration', metadata: { name }, spec }; defaultPriorityLevel(o); return o; };
const reasons = (causes: { field?: string; message: string }[]) => causes.map((c) => `${c.field}: ${c.message}`);

test('validation: the bootstrap objects are valid; kube\'s rules and messages', () => {
  for (const [name, spec] of Object.entries(BOOTSTRAP.flowSchemas)) assert.deepEqual(validateFlowSchema(FS(spec, name)), [], name);
  for (const [name, spec] of Object.entries(BOOTSTRAP.priorityLevels)) assert.deepEqual(validatePriorityLevel(PL(structuredClone(spec), name)), [], name);
  const rule = { subjects: [{ kind: 'Group', group: { name: 'g' } }], resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], namespaces: ['*'] }] };
  const ok = { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence: 500, rules: [rule] };
  assert.deepEqual(validateFlowSchema(FS(ok)), []);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, matchingPrecedence: 10001 }))), ['spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000']);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, matchingPrecedence: 0 }))), ['spec.matchingPrecedence: Invalid value: 0: must be a positive value']);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, distinguisherMethod: { type: 'ByCluster' } }))), ['spec.distinguisherMethod.type: Unsupported value: "ByCluster": supported values: "ByNamespace", "ByUser"']);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, rules: [{ ...rule, resourceRules: [{ verbs: ['get', '*'], apiGroups: [''], resources: ['pods'], clusterScope: true }] }] }))),
    ['spec.rules[0].resourceRules[0].verbs: Invalid value: ["get","*"]: if \'*\' is present, must not specify other verbs']);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, rules: [{ ...rule, resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }] }] }))),
    ['spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace']);
  assert.deepEqual(reasons(validateFlowSchema(FS({ ...ok, rules: [{ subjects: [], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['healthz'] }] }] }))),
    ['spec.rules[0].subjects: Required value: subjects must contain at least one value', 'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash']);
  assert.match(reasons(validateFlowSchema(FS({ ...BOOTSTRAP.flowSchemas['catch-all'], matchingPrecedence: 9999 }, 'catch-all'))).join(), /spec of 'catch-all' must equal the fixed value/);

  const queued = (queuing: object) => ({ type: 'Limited', limited: { nominalConcurrencyShares: 10, limitResponse: { type: 'Queue', queuing } } });
  assert.deepEqual(reasons(validatePriorityLevel(PL(queued({ queues: 4, handSize: 5, queueLengthLimit: 10 })))), ['spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)']);
  assert.deepEqual(reasons(validatePriorityLevel(PL(queued({ queues: 1 << 20, handSize: 4, queueLengthLimit: 10 })))),
    [`spec.limited.limitResponse.queuing.handSize: Invalid value: 4: required entropy bits of deckSize ${1 << 20} and handSize 4 should not be greater than 60`]);
  assert.deepEqual(reasons(validatePriorityLevel(PL(queued({ queues: 20_000_000, handSize: 1, queueLengthLimit: 10 })))), ['spec.limited.limitResponse.queuing.queues: Invalid value: 20000000: must not be greater than 10000000']);
  assert.deepEqual(reasons(validatePriorityLevel(PL({ type: 'Exempt' }))), ['spec.type: Invalid value: "Exempt": type must be \'Exempt\' if and only if name is \'exempt\'']);
  assert.deepEqual(reasons(validatePriorityLevel(PL({ type: 'Limited', limited: { lendablePercent: 101, limitResponse: { type: 'Reject', queuing: { queues: 1 } } } }))),
    ['spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive', 'spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Queue']);
  // Mandatory: catch-all's spec is fixed; exempt's shares and lendable percentage may change.
  assert.match(reasons(validatePriorityLevel(PL({ type: 'Limited', limited: { nominalConcurrencyShares: 50, limitResponse: { type: 'Reject' } } }, 'catch-all'))).join(), /spec of 'catch-all' must equal the fixed value/);
  assert.deepEqual(validatePriorityLevel(PL({ type: 'Exempt', exempt: { nominalConcurrencyShares: 10, lendablePercent: 20 } }, 'exempt')), []);
});

test('max-in-flight filter (priority and fairness off): 429 beyond either limit, watches not counted, system:masters never refused', async () => {
  const f = createRequestFilter({ enablePriorityAndFairness: false, maxRequestsInflight: 1, maxMutatingRequestsInflight: 1, config: bootstrapSource(), counts: { objects: () => 0, storedSize: () => 0, watches: () => 0, objectSize: () => 0 } });
  const req = (verb: string, user = authed('alice')): FlowControlRequest => ({ user, cluster: 'ws-a', verb, apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'default', isResourceRequest: true, path: '/', isLongRunning: verb === 'watch' });
  const get = await f.admit(req('get'));
  assert.throws(() => f.admit(req('list')), (e: unknown) => e instanceof StatusError && e.code === 429);
  const create = await f.admit(req('create'));
  assert.throws(() => f.admit(req('delete')), (e: unknown) => e instanceof StatusError && e.code === 429);
  (await f.admit(req('watch'))).release();
  (await f.admit(req('get', { name: 'root', groups: ['system:masters'] }))).release();
  get.release(); create.release();
  (await f.admit(req('list'))).release();
});

test('kcp-ts start flags: --enable-priority-and-fairness as a pflag boolean, --max-*-inflight non-negative integers', async () => {
  const { main } = await import('../../src/cli/main.js');
  const { ShutdownSignals } = await import('../../src/cli/signals.js');
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const [stdout, stderr] = [process.stdout.write, process.stderr.write];
    process.stdout.write = ((s: string) => { out.push(String(s)); return true; }) as typeof process.stdout.write;
    process.stderr.write = ((s: string) => { out.push(String(s)); return true; }) as typeof process.stderr.write;
    const signals = new ShutdownSignals();
    try { return { code: await main(['start', ...args], signals), out: out.join('') }; } finally {
      process.stdout.write = stdout; process.stderr.write = stderr; signals.dispose();
    }
  };
  // --help answers once the flags parsed: a bare pflag boolean and =false are accepted.
  assert.equal((await run('--enable-priority-and-fairness', '--help')).code, 0);
  assert.equal((await run('--enable-priority-and-fairness=false', '--max-requests-inflight', '10', '--help')).code, 0);
  const bad = await run('--enable-priority-and-fairness=maybe');
  assert.equal(bad.code, 2);
  assert.match(bad.out, /invalid argument "maybe" for "--enable-priority-and-fairness" flag/);
  const negative = await run('--max-mutating-requests-inflight=-1');
  assert.equal(negative.code, 2);
  assert.match(negative.out, /invalid --max-mutating-requests-inflight "-1"/);
});

test('reconfiguration: changed shares change the limits at once; a removed level drains what it holds, its schemas become dangling', async () => {
  const level = (shares: number): KubeObject => ({ apiVersion: 'v1', kind: 'PriorityLevelConfiguration', metadata: { name: 'mine', uid: 'mine' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: shares, limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 10 } } } } });
  const schema: KubeObject = { apiVersion: 'v1', kind: 'FlowSchema', metadata: { name: 'mine', uid: 'mine' }, spec: { priorityLevelConfiguration: { name: 'mine' }, matchingPrecedence: 10, distinguisherMethod: { type: 'ByUser' }, rules: [{ subjects: [{ kind: 'User', user: { name: 'dave' } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] } };
  let pl: KubeObject[] = [level(1)];
  const d = new Dispatcher({ ...bootstrapSource({ fs: [schema] }), priorityLevels: () => [...bootstrapSource().priorityLevels(), ...pl] }, { serverConcurrencyLimit: 246 });
  assert.equal(d.nominalLimits.mine, 1);
  const dave = digest({ user: authed('dave'), isResourceRequest: false, path: '/version' });
  const first = await d.admit(dave, one);
  const second = d.admit(dave, one);
  assert.ok(second instanceof Promise, 'one seat: the second waits');
  // More shares: the waiting request is dispatched by the reconfiguration itself.
  pl = [level(246)];
  d.reconfigure();
  assert.equal(d.nominalLimits.mine, Math.ceil(246 * 246 / 491));
  const s = await second;
  // Removed while busy: kept until idle; new requests of its schema go elsewhere.
  pl = [];
  d.reconfigure();
  assert.equal(d.dangling.get('mine'), 'mine');
  assert.equal(d.classify(dave).flowSchema, 'global-default');
  first.release(); s.release();
  d.reconfigure();
  assert.equal(d.nominalLimits.mine, undefined);
});
