/**
 * The migration fence of a shard (src/storage/migration.ts): a request for a logical cluster that
 * is being handed over to another shard, or has been, is answered 429 with `Retry-After: 1` and
 * the {@link MIGRATION_HEADER} header, which the front-proxy takes as "hold this request and send
 * it again where the logical cluster is now" — its client sees a pause, not an error. Reads are
 * refused too while the fence stands: a list or watch answered then could hand out a revision of
 * this shard that the destination cannot place (kcp's migration bars all access as well).
 * Mutating requests admitted before a fence are tracked so that the fence waits for them.
 */
import { ClusterFences, MIGRATION_HEADER } from '../../storage/migration.js';
import type { Filter } from '../context.js';

/** Refuses requests of fenced or moved logical clusters. */
export const withMigrationFence: Filter = async (ctx, req, reply, next) => {
  const fences = ctx.migrationFences;
  const info = req.kcpInfo!;
  if (!fences || !info.cluster || info.cluster === '*' || req.kcpView) return next(ctx, req, reply);
  const f = fences.get(info.cluster);
  if (f) {
    reply.header(MIGRATION_HEADER, ClusterFences.headerValue(f));
    throw fences.refusal(info.cluster, f);
  }
  try {
    return await next(ctx, req, reply);
  } catch (err) {
    // Fenced between admission and the write: the front-proxy may send it again elsewhere.
    const now = ClusterFences.isRefusal(err) ? fences.get(info.cluster) : undefined;
    if (now && !reply.sent) reply.header(MIGRATION_HEADER, ClusterFences.headerValue(now));
    throw err;
  }
};
