/**
 * A shard that is not the root registers itself in the root shard, as kcp's shards do: its
 * `core.kcp.io/v1alpha1 Shard` object in the root workspace, created or brought up to date (URLs,
 * labels) on every start. Retried until the root shard answers, so a shard may start before or
 * while the root shard is down.
 */
import type { RestClient } from '../client/rest.js';
import { shardObject, shardObjectDiffers, type ShardURLs } from '../server/bootstrap.js';

const SHARDS = '/clusters/root/apis/core.kcp.io/v1alpha1/shards';

/**
 * One attempt: creates or updates the Shard object. Resolves true when it is current.
 * @throws on a network error or an unexpected answer (the message names the status)
 */
export async function registerShardOnce(root: RestClient, shard: ShardURLs): Promise<boolean> {
  const wanted = shardObject(shard);
  const got = await root.request('GET', `${SHARDS}/${encodeURIComponent(shard.name)}`);
  if (got.status === 404) {
    const created = await root.request('POST', SHARDS, wanted);
    if (created.status === 201 || created.status === 409) return created.status === 201;
    throw new Error(`creating Shard ${shard.name} in the root shard: ${created.status} ${created.json?.message ?? ''}`);
  }
  if (got.status !== 200) throw new Error(`reading Shard ${shard.name} from the root shard: ${got.status} ${got.json?.message ?? ''}`);
  if (!shardObjectDiffers(got.json, wanted)) return true;
  const updated = await root.request('PUT', `${SHARDS}/${encodeURIComponent(shard.name)}`, { ...got.json, metadata: { ...got.json.metadata, labels: wanted.metadata.labels }, spec: wanted.spec });
  if (updated.status === 200) return true;
  if (updated.status === 409) return false;
  throw new Error(`updating Shard ${shard.name} in the root shard: ${updated.status} ${updated.json?.message ?? ''}`);
}

/**
 * Registers until it succeeded or `signal` aborted, waiting 200 ms doubling to 5 s between
 * attempts; `onRetry` hears why an attempt failed.
 */
export async function registerShard(root: RestClient, shard: ShardURLs, signal: AbortSignal, onRetry: (why: string) => void): Promise<void> {
  let wait = 200;
  while (!signal.aborted) {
    try {
      if (await registerShardOnce(root, shard)) return;
    } catch (err) {
      onRetry(err instanceof Error ? err.message : String(err));
    }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 5000);
  }
}
