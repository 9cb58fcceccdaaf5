/**
 * The request chain's building blocks (src/endpoints): the filter composition, the request
 * timeout filter on a real Fastify app, and sliced encoding of large responses.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { chain, type AppContext, type Filter, type Handler } from '../../src/endpoints/context.js';
import { withTimeout } from '../../src/endpoints/filters/timeout.js';
import { sendStatus, toStatusError } from '../../src/endpoints/response.js';
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { nextHeavyStage, runInTurnBudget, slicedStream, SLICE_BUDGET_MS, SLICE_BYTES, yieldToLoop } from '../../src/endpoints/slicing.js';

describe('chain', () => {
  test('runs filters outermost first around the handler, each may stop the request', async () => {
    const seen: string[] = [];
    const f = (name: string, stop = false): Filter => async (ctx, req, reply, next) => {
      seen.push(`>${name}`);
      if (stop) throw new Error(`stopped by ${name}`);
      await next(ctx, req, reply);
      seen.push(`<${name}`);
    };
    const handler: Handler = async () => { seen.push('handler'); };
    await chain([f('a'), f('b')], handler)({} as AppContext, {} as never, {} as never);
    assert.deepEqual(seen, ['>a', '>b', 'handler', '<b', '<a']);
    seen.length = 0;
    await assert.rejects(chain([f('a'), f('b', true)], handler)({} as AppContext, {} as never, {} as never), /stopped by b/);
    assert.deepEqual(seen, ['>a', '>b']);
  });
});

describe('request timeout filter', () => {
  /** A Fastify app whose one route runs `handler` behind the timeout filter with `--request-timeout` = `timeoutMs`. */
  const appWith = (timeoutMs: number, handler: Handler, verb = 'get') => {
    const app = Fastify();
    app.setErrorHandler((err, _req, reply) => sendStatus(reply, toStatusError(err)));
    const run = chain([withTimeout], handler);
    app.get('/*', async (req, reply) => {
      req.kcpInfo = { verb } as never;
      await run({ requestTimeoutMs: timeoutMs } as AppContext, req, reply);
    });
    return app;
  };
  const slow = (ms: number): Handler => async (_ctx, _req, reply) => { await new Promise((r) => setTimeout(r, ms)); reply.send('late'); };

  test('a request past --request-timeout is answered 504 Timeout as kube, and the late answer is dropped', async () => {
    const app = appWith(50, slow(300));
    const t0 = Date.now();
    const res = await app.inject('/x');
    assert.ok(Date.now() - t0 < 250, 'answered at the deadline, not when the handler ends');
    assert.equal(res.statusCode, 504);
    const status = res.json();
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'Timeout');
    assert.equal(status.code, 504);
    assert.equal(status.message, 'Timeout: request did not complete within requested timeout - context deadline exceeded');
    await new Promise((r) => setTimeout(r, 300));
    await app.close();
  });

  test('?timeout= shortens the deadline, never lengthens it; a malformed one is 400', async () => {
    const app = appWith(60_000, slow(300));
    const short = await app.inject('/x?timeout=50ms');
    assert.equal(short.statusCode, 504);
    const fast = appWith(60_000, async (_c, _r, reply) => { reply.send('ok'); });
    assert.equal((await fast.inject('/x?timeout=1h')).body, 'ok');
    const bad = await fast.inject('/x?timeout=soon');
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /invalid timeout specified in the request URL/);
    await new Promise((r) => setTimeout(r, 300));
    await app.close();
    await fast.close();
  });

  test('watches are long-running: no deadline', async () => {
    const app = appWith(30, slow(120), 'watch');
    const res = await app.inject('/x');
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, 'late');
    await app.close();
  });
});

describe('sliced encoding', () => {
  test('slicedStream produces exactly the joined document, a slice per turn of the event loop', async () => {
    const parts = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(1000) }));
    let turns = 0;
    const ticker = setInterval(() => { turns++; }, 0);
    const chunks: string[] = [];
    for await (const c of slicedStream('{"items":[', parts.length, (i) => parts[i]!, ',', ']}', new EventEmitter())) chunks.push(String(c));
    clearInterval(ticker);
    const text = chunks.join('');
    assert.equal(text, `{"items":[${parts.join(',')}]}`);
    assert.equal(JSON.parse(text).items.length, 3000);
    assert.ok(chunks.length >= Math.floor(text.length / SLICE_BYTES), `${chunks.length} chunks for ${text.length} bytes`);
    assert.ok(chunks.every((c) => c.length < SLICE_BYTES + 2000), 'no slice much over the slice size');
    assert.ok(turns > 0, 'timers ran while the document was produced');
  });

  test('slicedStream with a time bound ends a slice once its parts took that long', async () => {
    // Parts of 100 bytes that take 0.3 ms each: by bytes alone, all 200 would go in one slice.
    const part = (i: number): string => { const end = performance.now() + 0.3; while (performance.now() < end); return String(i % 10).repeat(100); };
    const chunks: string[] = [];
    for await (const c of slicedStream('[', 200, part, '', ']', new EventEmitter(), 1)) chunks.push(String(c));
    assert.equal(chunks.join(''), `[${Array.from({ length: 200 }, (_, i) => String(i % 10).repeat(100)).join('')}]`);
    assert.ok(chunks.length >= 40, `${chunks.length} slices: at most about 4 parts of 0.3 ms in one of 1 ms`);
    const single: string[] = [];
    for await (const c of slicedStream('[', 2, part, '', ']', new EventEmitter(), 0)) single.push(String(c));
    assert.equal(single.length, 2, 'at least one part per slice, even when the bound is spent at once');
  });

  test('pooled slice buffers: slow clients get every byte intact, and a finished response gives its buffers to the next', async () => {
    const parts = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ i, pad: String(i % 10).repeat(1000) }));
    const expected = `{"items":[${parts.join(',')}]}`;
    const arrayBuffers: Set<ArrayBufferLike>[] = [];
    // HTTP/2: a stream's data waits in the session, referencing the chunk, until the client's
    // flow-control window lets it out; a buffer reused too early shows as corrupted bytes.
    const server = http2.createServer((_req, res) => {
      const seen = new Set<ArrayBufferLike>();
      arrayBuffers.push(seen);
      const stream = slicedStream('{"items":[', parts.length, (i) => parts[i]!, ',', ']}', res);
      stream.on('data', (c: Buffer) => seen.add(c.buffer));
      stream.pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    // A client that reads a chunk, then waits: its window closes and slices queue behind it.
    const slowGet = (): Promise<string> => new Promise((resolve, reject) => {
      const req = client.request({ ':path': '/' });
      const got: Buffer[] = [];
      req.on('data', (c: Buffer) => { got.push(c); req.pause(); setTimeout(() => req.resume(), 1); });
      req.on('end', () => resolve(Buffer.concat(got).toString()));
      req.on('error', reject);
      req.end();
    });
    try {
      const concurrent = await Promise.all([slowGet(), slowGet(), slowGet()]);
      for (const body of concurrent) assert.ok(body === expected, 'a concurrent slow client received the document byte for byte');
      await new Promise((r) => setTimeout(r, 20));
      assert.ok(await slowGet() === expected, 'a later client received the document byte for byte');
    } finally {
      client.close();
      server.close();
    }
    const earlier = new Set(arrayBuffers.slice(0, 3).flatMap((s) => [...s]));
    const later = [...arrayBuffers[3]!];
    assert.ok(later.length > 0 && later.every((b) => earlier.has(b)), 'the later response wrote from the earlier ones\' buffers, allocating none');
    assert.ok(arrayBuffers.every((s) => s.size <= 2), `each response held at most two buffers: ${arrayBuffers.map((s) => s.size).join(', ')}`);
  });

  test('the shared slice budget counts the nextTick work of each slice (socket writes)', async () => {
    const spin = (ms: number) => { const until = performance.now() + ms; while (performance.now() < until) { /* busy */ } };
    // 40 responses resume for a slice each; a slice's own work is small, its socket write (as
    // Node's HTTP/1.1 cork/uncork does) runs in a nextTick: 1 ms each, 40 ms in all.
    const done = Promise.all(Array.from({ length: 40 }, async () => {
      await yieldToLoop();
      process.nextTick(() => spin(1));
    }));
    let finished = false;
    void done.then(() => { finished = true; });
    let last = performance.now();
    let longest = 0;
    let turns = 0;
    while (!finished) {
      await new Promise((r) => setImmediate(r));
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      turns++;
    }
    assert.ok(longest < 15, `longest turn ${longest.toFixed(1)} ms (budget ${SLICE_BUDGET_MS} ms; unbudgeted, one turn of 40 ms)`);
    assert.ok(turns >= 5, `spread over ${turns} turns`);
  });

  test('stages of large writes: one a turn, after the turn\'s slices, then a rest in which other work runs', async () => {
    const spin = (ms: number) => { const until = performance.now() + ms; while (performance.now() < until) { /* busy */ } };
    const log: string[] = [];
    // Three writes ask for their next stage (20 ms each), then a slice asks for its turn.
    const stages = Promise.all([0, 1, 2].map(async (i) => { await nextHeavyStage(); log.push(`stage${i}`); spin(20); }));
    runInTurnBudget(() => log.push('slice'));
    assert.deepEqual(log, [], 'nothing runs in the turn that asked');
    // Meanwhile other work keeps the loop busy: a timer every 2 ms doing 1 ms of work.
    let busy = true;
    let timers = 0;
    const tick = (): void => { if (!busy) return; timers++; spin(1); setTimeout(tick, 2); };
    setTimeout(tick, 2);
    const turnsAt: number[] = [];
    let finished = false;
    void stages.then(() => { finished = true; });
    while (!finished) {
      await new Promise((r) => setImmediate(r));
      turnsAt.push(log.length);
    }
    busy = false;
    assert.equal(log[0], 'slice', 'the slice ran before the first stage');
    assert.deepEqual(log.slice(1), ['stage0', 'stage1', 'stage2'], 'stages in the order asked');
    for (let i = 1; i < turnsAt.length; i++) assert.ok(turnsAt[i]! - turnsAt[i - 1]! <= 1, 'at most one stage a turn');
    // Each 20 ms stage is followed by about 20 ms of rest while the timers keep the loop busy.
    assert.ok(timers >= 10, `other work ran between the stages: ${timers} timers`);
  });

  test('runInTurnBudget runs work in later turns, in order', async () => {
    const order: number[] = [];
    for (let i = 0; i < 5; i++) runInTurnBudget(() => order.push(i));
    assert.deepEqual(order, [], 'nothing runs in the turn that asked');
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
  });
});
