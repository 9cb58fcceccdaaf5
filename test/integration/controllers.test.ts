/**
 * The BullMQ controller runtime on a real Redis: per-key mutual exclusion across processes
 * (two controllers on one queue stand for two server processes), level-triggered follow-ups,
 * retries under client-go's rate limiter (never dropped, capped delays, forgotten on success);
 * and two servers on one Redis scheduling workspaces together.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Controller, QueueThread } from '../../src/controllers/runtime.js';
import { Redis } from 'ioredis';
import { call, eventually, sleep, startRedis, startTestServer, type TestRedis } from '../helpers.js';

let redis: TestRedis;
const threads: QueueThread[] = [];
before(async () => { redis = await startRedis(); });
after(async () => { for (const t of threads) await t.close(); await redis?.stop(); });

/** A queue thread of its own: each stands for one server process. */
function thread(): QueueThread {
  const t = new QueueThread(redis.url);
  threads.push(t);
  return t;
}

test('two controllers on one queue never reconcile the same key at once; the last enqueue is always seen', async () => {
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;
  const starts: Record<string, number[]> = {};
  const reconcile = async (key: string) => {
    const n = (inFlight.get(key) ?? 0) + 1;
    inFlight.set(key, n);
    maxInFlight = Math.max(maxInFlight, n);
    (starts[key] ??= []).push(Date.now());
    // Longer than the gap between two enqueues of one key (each awaited enqueue waits for its
    // batch, about batchPeriodMs), so enqueues land while the key's job runs and are folded.
    await sleep(50);
    inFlight.set(key, n - 1);
  };
  const a = new Controller({ name: 'mutex', prefix: '{t}:ctrl', thread: thread(), concurrency: 8, reconcile });
  const b = new Controller({ name: 'mutex', prefix: '{t}:ctrl', thread: thread(), concurrency: 8, reconcile });
  try {
    let lastEnqueue = 0;
    for (let i = 0; i < 60; i++) {
      const key = `k${i % 3}`;
      await (i % 2 ? a : b).enqueue(key);
      lastEnqueue = Date.now();
      if (i % 10 === 0) await sleep(10);
    }
    const deadline = Date.now() + 5000;
    while ((await a.depth()) > 0 && Date.now() < deadline) await sleep(20);
    await sleep(50);
    assert.equal(maxInFlight, 1, 'at most one reconcile per key at any time');
    for (const k of ['k0', 'k1', 'k2']) {
      assert.ok(starts[k]!.length >= 1);
      assert.ok(starts[k]!.length < 20, `deduplicated: ${starts[k]!.length} reconciles for 20 enqueues`);
      assert.ok(Math.max(...starts[k]!) >= lastEnqueue - 200, 'a reconcile ran after the last enqueue of the key');
    }
  } finally { await a.close(); await b.close(); }
});

test('keys enqueued within the batch period are added together; a key after an idle period at once', async () => {
  const t = thread();
  const adds: string[][] = [];
  const add = t.add.bind(t);
  t.add = (name, keys) => { adds.push(keys.map(([k]) => k)); return add(name, keys); };
  const seen: string[] = [];
  const c = new Controller({ name: 'batch', prefix: '{t}:ctrl', thread: t, batchPeriodMs: 1000, reconcile: async (key) => { seen.push(key); } });
  try {
    await c.ready();
    const t0 = performance.now();
    await c.enqueue('first');
    const firstAddedAfter = performance.now() - t0;
    // Three more keys in separate event-loop turns, within the period of the first add.
    const more = ['a', 'b', 'c'].map(async (k, i) => { await sleep(i * 20); return c.enqueue(k); });
    await Promise.all(more);
    const batchAddedAfter = performance.now() - t0;
    assert.deepEqual(adds, [['first'], ['a', 'b', 'c']]);
    assert.ok(firstAddedAfter < 500, `the first key is not held back: ${firstAddedAfter} ms`);
    assert.ok(batchAddedAfter >= 950, `the next keys wait for the period: ${batchAddedAfter} ms`);
    const deadline = Date.now() + 5000;
    while (seen.length < 4 && Date.now() < deadline) await sleep(10);
    assert.deepEqual([...seen].sort(), ['a', 'b', 'c', 'first']);
  } finally { await c.close(); }
});

test('an event during a reconcile that asks for a late requeue is acted on at once, not after the delay', async () => {
  const runs: number[] = [];
  let c!: Controller;
  c = new Controller({
    name: 'eventwhileactive', prefix: '{t}:ctrl', thread: thread(), batchPeriodMs: 0,
    reconcile: async () => {
      runs.push(Date.now());
      // The first reconcile sees an event for its own key (its write coming back), then asks to
      // be looked at again in an hour (a certificate renewal, say).
      if (runs.length === 1) { await c.enqueue('k'); await sleep(50); }
      return { requeueAfterMs: 3_600_000 };
    },
  });
  try {
    await c.ready();
    await c.enqueue('k');
    const deadline = Date.now() + 5000;
    while (runs.length < 2 && Date.now() < deadline) await sleep(10);
    assert.equal(runs.length, 2, 'the event seen while reconciling leads to a second reconcile');
    await sleep(300);
    assert.equal(runs.length, 2, 'and then the hour-long requeue holds');
  } finally { await c.close(); }
});

test('a failing key is retried past 25 attempts with capped delays, then its success forgets the failures', async () => {
  const times: number[] = [];
  let failUntil = 27;
  // client-go's limiter at a test scale: 25 ms doubled per failure, capped at 200 ms; the bucket
  // (1,000 per second, burst 1,000) never binds here. Delayed jobs wake up to ~100 ms late (the
  // queue Redis checks blocking timeouts about ten times a second), hence the upper margins.
  const rateLimiter = { baseDelayMs: 25, maxDelayMs: 200, qps: 1000, burst: 1000 };
  const c = new Controller({
    name: 'retries', prefix: '{t}:ctrl', thread: thread(), batchPeriodMs: 0, rateLimiter,
    reconcile: async () => { times.push(performance.now()); if (times.length <= failUntil) throw new Error('not yet'); },
  });
  const failures = new Redis(redis.url);
  try {
    await c.enqueue('x');
    await eventually('28 reconciles', async () => times.length >= 28, 30_000);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    const shown = gaps.map(Math.round).join(',');
    // Gap i follows failure i+1: min(25 · 2^i, 200) ms = 25, 50, 100, 200, 200, …
    gaps.forEach((g, i) => {
      const want = Math.min(25 * 2 ** i, 200);
      assert.ok(g >= want - 2, `retry ${i + 1} after ${g.toFixed(1)} ms, the limiter says ${want} ms (gaps ${shown})`);
    });
    assert.ok(gaps[0]! < 25 + 150, `the first retry comes after about the base delay: ${shown}`);
    assert.ok(Math.max(...gaps.slice(3)) < 200 + 150, `delays stay at the cap: ${shown}`);
    // Forget: the success removed the key's failure count, so the next failure is its first.
    await eventually('failure count forgotten', async () => (await failures.hexists('{t}:ctrl:retries:failures', 'x')) === 0);
    failUntil = times.length + 1;
    const n = times.length;
    await c.enqueue('x');
    await eventually('two more reconciles', async () => times.length >= n + 2);
    // The count is removed after the reconcile returns, not before: wait for it, bounded.
    await eventually('forgotten again after the next success', async () => (await failures.hexists('{t}:ctrl:retries:failures', 'x')) === 0);
    failUntil = Infinity;
    await c.enqueue('x');
    await eventually('counted from 1 again', async () => (await failures.hget('{t}:ctrl:retries:failures', 'x')) === '1');
  } finally { failures.disconnect(); await c.close(); }
});

test('an event during a failing reconcile makes its retry immediate; the failure still counts', async () => {
  const runs: number[] = [];
  let c!: Controller;
  c = new Controller({
    name: 'failwhileactive', prefix: '{t}:ctrl', thread: thread(), batchPeriodMs: 0,
    rateLimiter: { baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 },
    reconcile: async () => {
      runs.push(Date.now());
      if (runs.length === 1) { await c.enqueue('k'); await sleep(50); }
      throw new Error('still failing');
    },
  });
  const failures = new Redis(redis.url);
  try {
    await c.ready();
    await c.enqueue('k');
    await eventually('a second reconcile for the event', async () => runs.length >= 2);
    await eventually('two failures counted', async () => (await failures.hget('{t}:ctrl:failwhileactive:failures', 'k')) === '2');
    // Negative check: the second failure saw no event, so its hour-long delay holds.
    await sleep(300);
    assert.equal(runs.length, 2);
  } finally { failures.disconnect(); await c.close(); }
});

test('two servers on one Redis schedule workspaces together, once each', async () => {
  const s1 = await startTestServer(redis);
  const s2 = await startTestServer(redis);
  try {
    const names = Array.from({ length: 30 }, (_, i) => `w${i}`);
    const created = await Promise.all(names.map((n, i) => {
      const s = i % 2 ? s1 : s2;
      return call(s, s.creds, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: n } });
    }));
    assert.deepEqual(created.map((r) => r.status), names.map(() => 201));
    const deadline = Date.now() + 10_000;
    let ready: any[] = [];
    while (Date.now() < deadline) {
      const list = await call(s1, s1.creds, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces');
      ready = list.json.items.filter((w: any) => w.status?.phase === 'Ready');
      if (ready.length === names.length) break;
      await sleep(50);
    }
    assert.equal(ready.length, names.length);
    // One LogicalCluster per workspace, owned by it.
    const lcs = await call(s2, s2.masters, 'GET', '/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters');
    for (const w of ready) {
      const owned = lcs.json.items.filter((l: any) => l.spec.owner?.uid === w.metadata.uid);
      assert.equal(owned.length, 1, `${w.metadata.name}: ${owned.length} logical clusters`);
    }
    // Both processes ran workspace reconciles.
    for (const s of [s1, s2]) {
      const m = await call(s, s.creds, 'GET', '/metrics');
      assert.match(m.body, /controller_runtime_reconcile_total\{controller="workspace",result="success"\} [1-9]/);
    }
  } finally { await s1.stop(); await s2.stop(); }
});

test('queues in their own Redis: when it comes back empty, informers enqueue every object again', async () => {
  const queue = await startRedis();
  const s = await startTestServer(redis, { queueRedisUrl: queue.url });
  const adds = async () => {
    const m = await call(s, s.creds, 'GET', '/metrics');
    return Number(/workqueue_adds_total\{name="crd"\} (\d+)/.exec(m.body)?.[1] ?? 0);
  };
  try {
    // A CRD: the CRD controller's informer enqueues every CRD at each relist.
    const crd = await call(s, s.creds, 'POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    assert.equal(crd.status, 201);
    await sleep(300);
    const before = await adds();
    queue.kill9();
    await sleep(300);
    rmSync(join(queue.dir, 'appendonlydir'), { recursive: true, force: true }); // the queues are lost
    await queue.restart();
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && (await adds()) <= before) await sleep(100);
    assert.ok((await adds()) > before, 'keys enqueued again after the queue Redis came back');
    // The controllers work on the new queue Redis: a workspace created now becomes Ready.
    const ws = await call(s, s.creds, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'after-queue-restart' } });
    assert.equal(ws.status, 201);
    let phase = '';
    for (let i = 0; i < 100 && phase !== 'Ready'; i++) {
      await sleep(100);
      phase = (await call(s, s.creds, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/after-queue-restart')).json.status?.phase ?? '';
    }
    assert.equal(phase, 'Ready');
  } finally { await s.stop(); await queue.stop(); }
});
