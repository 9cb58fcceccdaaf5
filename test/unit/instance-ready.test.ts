/** `kcp-ts start --shards N` readiness (src/server/instance.ts instanceNotReady): whole, or says what it waits for. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceNotReady } from '../../src/server/instance.js';

/** A directory that knows `known` and reaches `reached`. */
const dir = (known: string[], reached = known) => ({ get: (n: string) => (known.includes(n) ? { name: n } as never : undefined), reachable: (n: string) => reached.includes(n) });
const all = ['root', 'shard-1', 'shard-2'];

test('ready only when the front-proxy and every shard know and reach every shard', () => {
  const shards = (d: ReturnType<typeof dir>[]) => d.map((s, i) => ({ name: all[i]!, shards: s }));
  assert.equal(instanceNotReady(all, dir(all), shards([dir(all), dir(all), dir(all)])), undefined);
  assert.equal(instanceNotReady(all, undefined, shards([dir(all), dir(all), dir(all)])), 'the front-proxy is not running yet');
  assert.match(instanceNotReady(all, dir(['root', 'shard-1']), shards([dir(all), dir(all), dir(all)]))!, /^the front-proxy does not know shard shard-2 yet/);
  assert.match(instanceNotReady(all, dir(all, ['root']), shards([dir(all), dir(all), dir(all)]))!, /^the front-proxy has not connected to shard shard-1 yet/);
  // The root shard schedules root's children: it must know and reach every shard too.
  assert.match(instanceNotReady(all, dir(all), shards([dir(['root', 'shard-1']), dir(all), dir(all)]))!, /^shard root does not know shard shard-2 yet/);
  assert.match(instanceNotReady(all, dir(all), shards([dir(all), dir(all), dir(all, ['root', 'shard-2'])]))!, /^shard shard-2 has not connected to shard shard-1 yet/);
});
