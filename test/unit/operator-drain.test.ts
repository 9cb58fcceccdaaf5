/**
 * The operator's Shard drain (operator/drain.ts): the decision from what kcp reports — annotate,
 * wait and say how much is left, scale to 0, undrain — and the observation over kcp's API
 * (pages, which logical clusters a drain moves, failed migrations); a Shard named root refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RestClient, RestResponse } from '../../src/client/rest.js';
import type { Condition, Shard } from '../../operator/api/types.js';
import type { OperatorContext } from '../../operator/context.js';
import { reconcileShard } from '../../operator/reconcilers/shard.js';
import { DRAIN_ANNOTATION, decideDrain, needsObservation, observeDrain, type DrainObservation } from '../../operator/drain.js';

const seen = (o: Partial<DrainObservation> = {}): DrainObservation => ({ registered: true, annotated: true, remaining: 0, sample: [], unfinished: 0, failed: [], ...o });
const drained: Condition = { type: 'Drained', status: 'True', reason: 'Drained', message: 'no logical cluster left' };
const draining: Condition = { type: 'Drained', status: 'False', reason: 'Draining', message: '3 logical clusters left' };

describe('drain decision', () => {
  it('does nothing without a drain asked or recorded', () => {
    const d = decideDrain({ drain: false, deleting: false, podsReady: true });
    assert.deepEqual(d, { scaleToZero: false, drained: false });
    assert.equal(needsObservation({ drain: false, deleting: false, podsReady: true }), false, 'no request to kcp for a shard that is not drained');
  });

  it('annotates the kcp Shard first, then waits while logical clusters or migrations are left', () => {
    let d = decideDrain({ drain: true, deleting: false, podsReady: true, observed: seen({ annotated: false, remaining: undefined }) });
    assert.equal(d.annotate, true);
    assert.equal(d.scaleToZero, false);
    assert.equal(d.condition?.reason, 'Draining');
    d = decideDrain({ drain: true, deleting: false, podsReady: true, observed: seen({ remaining: 7, sample: ['a', 'b'], unfinished: 1 }) });
    assert.deepEqual([d.annotate, d.scaleToZero, d.drained, d.condition?.status, d.condition?.reason], [undefined, false, false, 'False', 'Draining']);
    assert.match(d.condition!.message!, /^7 logical clusters left \(a, b, …\), 1 migrations unfinished$/);
    assert.ok(d.requeueAfterMs! > 0, 'a drain in progress is looked at again');
    d = decideDrain({ drain: true, deleting: false, podsReady: true, observed: seen({ remaining: 0, unfinished: 1 }) });
    assert.equal(d.drained, false, 'a migration still cleaning up its origin is not the end');
  });

  it('is drained when nothing is left: pods to 0, Drained=True', () => {
    const d = decideDrain({ drain: true, deleting: false, podsReady: true, observed: seen() });
    assert.deepEqual([d.scaleToZero, d.drained, d.condition?.status, d.condition?.reason], [true, true, 'True', 'Drained']);
    assert.equal(d.requeueAfterMs, undefined);
  });

  it('stays drained at 0 pods, and annotates again a kcp Shard registered without the annotation', () => {
    let d = decideDrain({ drain: true, deleting: false, podsReady: false, previous: drained, observed: seen({ remaining: undefined, unreachable: 'the shard has no ready pods' }) });
    assert.deepEqual([d.annotate, d.scaleToZero, d.drained, d.condition?.status], [undefined, true, true, 'True']);
    d = decideDrain({ drain: true, deleting: false, podsReady: false, previous: drained, observed: seen({ annotated: false, remaining: undefined }) });
    assert.equal(d.annotate, true);
    assert.equal(d.scaleToZero, true);
    d = decideDrain({ drain: true, deleting: false, podsReady: false, previous: drained });
    assert.equal(d.drained, true, 'kcp not answering does not undo a finished drain');
  });

  it('a shard never registered in root holds nothing', () => {
    const d = decideDrain({ drain: false, deleting: true, podsReady: false, observed: seen({ registered: false, annotated: false }) });
    assert.equal(d.drained, true);
    assert.match(d.condition!.message!, /not registered/);
  });

  it('waits, and says why, while the shard cannot be asked or a migration failed', () => {
    let d = decideDrain({ drain: true, deleting: false, podsReady: false, observed: seen({ remaining: undefined, unreachable: 'the shard has no ready pods' }) });
    assert.deepEqual([d.drained, d.scaleToZero, d.condition?.reason], [false, false, 'ShardUnreachable']);
    assert.match(d.condition!.message!, /no ready pods/);
    d = decideDrain({ drain: false, deleting: true, podsReady: true });
    assert.deepEqual([d.drained, d.condition?.reason], [false, 'ShardUnreachable'], 'a deletion does not go on without knowing');
    d = decideDrain({ drain: true, deleting: false, podsReady: true, observed: seen({ remaining: 2, failed: [{ name: 'drain-abc-x1', message: 'the watch history no longer reaches revision 5' }] }) });
    assert.equal(d.condition?.reason, 'DrainFailed');
    assert.match(d.condition!.message!, /^2 logical clusters left; failed LogicalClusterMigrations \(delete one to retry it\): drain-abc-x1: the watch history/);
    assert.equal(d.drained, false);
  });

  it('undrains: pods back first, the annotation removed once they are ready, then no condition', () => {
    for (const previous of [drained, draining]) {
      let d = decideDrain({ drain: false, deleting: false, podsReady: false, previous });
      assert.deepEqual([d.annotate, d.scaleToZero, d.condition?.reason], [undefined, false, 'Undraining']);
      assert.equal(needsObservation({ drain: false, deleting: false, podsReady: false, previous }), false);
      assert.equal(needsObservation({ drain: false, deleting: false, podsReady: true, previous }), true);
      d = decideDrain({ drain: false, deleting: false, podsReady: true, previous, observed: seen({ remaining: 4 }) });
      assert.deepEqual([d.annotate, d.scaleToZero], [false, false]);
      d = decideDrain({ drain: false, deleting: false, podsReady: true, previous, observed: seen({ annotated: false, remaining: 4 }) });
      assert.deepEqual(d, { scaleToZero: false, drained: false }, 'annotation gone: the condition goes');
    }
  });
});

/** A client answering GETs from `routes` (path without query → pages by continue token). */
function fakeClient(routes: Record<string, (query: URLSearchParams) => { status: number; json: unknown }>, calls: string[] = []): RestClient {
  return {
    async request(method: string, path: string): Promise<RestResponse> {
      calls.push(`${method} ${path}`);
      const url = new URL(path, 'https://x');
      const route = routes[decodeURIComponent(url.pathname)];
      const { status, json } = route ? route(url.searchParams) : { status: 404, json: { message: 'not found' } };
      return { status, json, body: JSON.stringify(json), headers: {} as never };
    },
  } as unknown as RestClient;
}

describe('drain observation', () => {
  const shardPath = '/clusters/root/apis/core.kcp.io/v1alpha1/shards/shard-1';
  const migrations = '/clusters/root/apis/migration.kcp.io/v1alpha1/logicalclustermigrations';
  const lcs = '/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters';
  const lc = (cluster: string) => ({ metadata: { name: 'cluster', annotations: { 'kcp.io/cluster': cluster } } });

  it('counts the logical clusters a drain moves, over pages, and the drain migrations by phase', async () => {
    const calls: string[] = [];
    const root = fakeClient({
      [shardPath]: () => ({ status: 200, json: { metadata: { name: 'shard-1', annotations: { [DRAIN_ANNOTATION]: 'true' } } } }),
      [migrations]: (q) => {
        assert.equal(q.get('labelSelector'), 'kcp-ts.io/drained-shard=shard-1');
        return {
          status: 200, json: {
            metadata: {}, items: [
              { metadata: { name: 'drain-a-1' }, status: { phase: 'Completed' } },
              { metadata: { name: 'drain-b-1' }, status: { phase: 'Migrating' } },
              { metadata: { name: 'drain-c-1' } },
              { metadata: { name: 'drain-d-1' }, status: { phase: 'Failed', conditions: [{ type: 'Completed', status: 'False', reason: 'CopyFailed', message: 'boom' }] } },
            ],
          },
        };
      },
    }, calls);
    const self = fakeClient({
      [lcs]: (q) => q.get('continue') === 'p2'
        ? { status: 200, json: { metadata: {}, items: [lc('c3'), lc('system:admin')] } }
        : { status: 200, json: { metadata: { continue: 'p2' }, items: [lc('c1'), lc('c2'), lc('root')] } },
    }, calls);
    const o = await observeDrain(root, self, 'shard-1');
    assert.deepEqual(o, { registered: true, annotated: true, remaining: 3, sample: ['c1', 'c2', 'c3'], unfinished: 2, failed: [{ name: 'drain-d-1', message: 'boom' }] });
    assert.ok(calls.every((c) => !c.includes('logicalclusters') || c.includes('limit=')), 'lists are paged');
  });

  it('an unregistered shard holds nothing; an unannotated one is not counted yet; an unreachable one says why', async () => {
    assert.deepEqual(await observeDrain(fakeClient({}), undefined, 'shard-1'), { registered: false, annotated: false, remaining: 0, sample: [], unfinished: 0, failed: [] });
    const unannotated = fakeClient({ [shardPath]: () => ({ status: 200, json: { metadata: { name: 'shard-1' } } }) });
    const o = await observeDrain(unannotated, fakeClient({}), 'shard-1');
    assert.deepEqual([o.registered, o.annotated, o.remaining], [true, false, undefined]);
    const root = fakeClient({
      [shardPath]: () => ({ status: 200, json: { metadata: { name: 'shard-1', annotations: { [DRAIN_ANNOTATION]: 'true' } } } }),
      [migrations]: () => ({ status: 200, json: { metadata: {}, items: [] } }),
    });
    const down = await observeDrain(root, fakeClient({ [lcs]: () => ({ status: 503, json: { message: 'shutting down' } }) }), 'shard-1');
    assert.equal(down.remaining, undefined);
    assert.match(down.unreachable!, /HTTP 503: shutting down/);
    assert.equal((await observeDrain(root, undefined, 'shard-1')).unreachable, 'the shard has no ready pods');
    await assert.rejects(observeDrain(fakeClient({ [shardPath]: () => ({ status: 403, json: { message: 'forbidden' } }) }), undefined, 'shard-1'), /HTTP 403: forbidden/);
  });
});

describe('a Shard named root', () => {
  /** A context whose host client records its writes; the instance exists. */
  function context(shard: Shard) {
    const writes: { verb: string; body: unknown; subresource?: string }[] = [];
    const ctx = {
      client: {
        apply: async (obj: unknown, subresource?: string) => { writes.push({ verb: 'apply', body: obj, subresource }); return obj; },
        mergePatch: async (_k: string, _ns: string, _n: string, patch: unknown) => { writes.push({ verb: 'mergePatch', body: patch }); return patch; },
      },
      shards: { get: () => shard, list: () => [shard] },
      instances: { get: () => ({ apiVersion: 'operator.kcp-ts.io/v1alpha1', kind: 'KcpInstance', metadata: { name: 'kcp', namespace: 'ns', uid: 'i1' }, spec: { version: '1' } }) },
      rootWorkspaces: { get: () => undefined, list: () => [] },
      owned: {}, log: () => {}, now: () => Date.parse('2026-01-01T00:00:00Z'),
    } as unknown as OperatorContext;
    return { ctx, writes };
  }
  const root = (extra: Partial<Shard['metadata']> = {}, drain = true): Shard => ({ apiVersion: 'operator.kcp-ts.io/v1alpha1', kind: 'Shard', metadata: { name: 'root', namespace: 'ns', uid: 'r1', generation: 1, ...extra }, spec: { instanceRef: { name: 'kcp' }, drain } });

  it('is refused with conditions saying why, and gets no finalizer and no objects', async () => {
    const { ctx, writes } = context(root());
    await reconcileShard(ctx, 'ns/root');
    assert.equal(writes.length, 1, 'only its status is written');
    assert.equal(writes[0]!.subresource, 'status');
    const conditions = (writes[0]!.body as { status: { conditions: Condition[] } }).status.conditions;
    const by = (t: string) => conditions.find((c) => c.type === t);
    assert.deepEqual([by('Ready')?.status, by('Ready')?.reason, by('Degraded')?.status], ['False', 'RootShardReserved', 'True']);
    assert.deepEqual([by('Drained')?.status, by('Drained')?.reason], ['False', 'RootShardNotDrainable']);
    const { ctx: ctx2, writes: w2 } = context(root({}, false));
    await reconcileShard(ctx2, 'ns/root');
    assert.equal((w2[0]!.body as { status: { conditions: Condition[] } }).status.conditions.find((c) => c.type === 'Drained'), undefined);
  });

  it('its deletion is not held: a finalizer is dropped at once, kcp is not asked', async () => {
    const { ctx, writes } = context(root({ deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['operator.kcp-ts.io/shard-registration', 'other'], resourceVersion: '7' }));
    await reconcileShard(ctx, 'ns/root');
    assert.deepEqual(writes, [{ verb: 'mergePatch', body: { metadata: { finalizers: ['other'], resourceVersion: '7' } } }]);
  });
});
