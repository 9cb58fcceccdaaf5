/**
 * Watch cache windows and several servers on one shard: 410 Expired for watches and continue
 * tokens older than the history window; two processes on one Redis see each other's writes
 * (consistent lists, watches); metrics.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CM, call, startRedis, startTestServer, watch, type TestRedis, type TestServer } from '../helpers.js';

let redis: TestRedis;
let a: TestServer;
let b: TestServer;
const NS = '/clusters/root/api/v1/namespaces/default/configmaps';

before(async () => {
  redis = await startRedis();
  a = await startTestServer(redis, { watchHistorySize: 20 });
  // A second server process of the same shard, on the same Redis.
  b = await startTestServer(redis, { watchHistorySize: 20 });
});
after(async () => { await a?.stop(); await b?.stop(); await redis?.stop(); });

test('watch and continue older than the history window → 410 Expired', async () => {
  const first = await call(a, a.creds, 'POST', NS, CM('h0'));
  const oldRv = first.json.metadata.resourceVersion;
  for (let i = 1; i <= 3; i++) await call(a, a.creds, 'POST', NS, CM(`h${i}`));
  const page = await call(a, a.creds, 'GET', `${NS}?limit=2`);
  assert.ok(page.json.metadata.continue);
  for (let i = 4; i < 40; i++) await call(a, a.creds, 'POST', NS, CM(`h${i}`));
  const w = watch(a, a.creds, `${NS}?watch=true&resourceVersion=${oldRv}`);
  assert.equal(await w.status, 410);
  const body = await w.waitFor(0, 200);
  w.close();
  assert.equal(body.length, 0);
  const expired = await call(a, a.creds, 'GET', `${NS}?watch=true&resourceVersion=${oldRv}`);
  assert.equal(expired.json.reason, 'Expired');
  const cont = await call(a, a.creds, 'GET', `${NS}?limit=2&continue=${encodeURIComponent(page.json.metadata.continue)}`);
  assert.equal(cont.status, 410);
  assert.equal(cont.json.reason, 'Expired');
  assert.equal((await call(a, a.creds, 'GET', `${NS}?limit=2&continue=garbage!`)).status, 400);
});

test('two servers on one Redis: writes on one are listed and watched on the other', async () => {
  const start = (await call(b, b.creds, 'GET', NS)).json.metadata.resourceVersion;
  const w = watch(b, b.creds, `${NS}?watch=true&resourceVersion=${start}`);
  assert.equal(await w.status, 200);
  const created = await call(a, a.creds, 'POST', NS, CM('shared', { from: 'a' }));
  assert.equal(created.status, 201);
  // A list without resourceVersion on b is consistent: it includes a's acknowledged write.
  const list = await call(b, b.creds, 'GET', NS);
  assert.ok(list.json.items.some((i: any) => i.metadata.name === 'shared'));
  const got = await call(b, b.creds, 'GET', `${NS}/shared`);
  assert.equal(got.json.data.from, 'a');
  const ev = await w.waitFor(1);
  w.close();
  assert.equal(ev[0].type, 'ADDED');
  assert.equal(ev[0].object.metadata.resourceVersion, created.json.metadata.resourceVersion);
});

test('a server started later replays the history with the event types of the writes, and lists at an older resourceVersion', async () => {
  const created = await call(a, a.creds, 'POST', NS, CM('replayed', { v: '1' }, { tier: 'x' }));
  const from = created.json.metadata.resourceVersion;
  const modified = await call(a, a.creds, 'PUT', `${NS}/replayed`, { ...created.json, data: { v: '2' } });
  assert.equal(modified.status, 200);
  const moved = await call(a, a.creds, 'PUT', `${NS}/replayed`, { ...modified.json, metadata: { ...modified.json.metadata, labels: { tier: 'y' } } });
  assert.equal(moved.status, 200);
  assert.equal((await call(a, a.creds, 'DELETE', `${NS}/replayed`)).status, 200);
  // Its watch cache is loaded from the stream, which holds new states only.
  const late = await startTestServer(redis, { watchHistorySize: 20 });
  try {
    const all = watch(late, late.creds, `${NS}?watch=true&resourceVersion=${from}`);
    const selected = watch(late, late.creds, `${NS}?watch=true&resourceVersion=${from}&labelSelector=tier%3Dx`);
    const types = (await all.waitFor(3)).filter((e) => e.object.metadata.name === 'replayed').map((e) => e.type);
    const selectedTypes = (await selected.waitFor(2)).filter((e) => e.object.metadata.name === 'replayed').map((e) => e.type);
    all.close(); selected.close();
    assert.deepEqual(types, ['MODIFIED', 'MODIFIED', 'DELETED']);
    // Leaving the selector is a DELETED for a selector watch, as kube's cacher reports it.
    assert.deepEqual(selectedTypes, ['MODIFIED', 'DELETED']);
    const then = await call(late, late.creds, 'GET', `${NS}?resourceVersion=${from}&resourceVersionMatch=Exact`);
    assert.equal(then.status, 200, then.body);
    assert.deepEqual(then.json.items.find((i: any) => i.metadata.name === 'replayed')?.data, { v: '1' });
  } finally {
    await late.stop();
  }
});

test('/metrics exposes request counts and open watches; needs credentials', async () => {
  const w = watch(a, a.creds, `${NS}?watch=true`);
  await w.status;
  const m = await call(a, a.creds, 'GET', '/metrics');
  w.close();
  assert.equal(m.status, 200);
  assert.match(m.body, /apiserver_request_total\{verb="create",resource="configmaps",code="201"\} \d+/);
  assert.match(m.body, /apiserver_request_duration_seconds_bucket\{le="0.005",verb="create",resource="configmaps"\}/);
  assert.match(m.body, /apiserver_longrunning_requests [1-9]/);
  assert.equal((await call(a, { ca: a.creds.ca }, 'GET', '/metrics')).status, 401);
});
