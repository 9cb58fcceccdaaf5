/**
 * Redis key layout of one shard. Every key carries the shard's hash tag `{<shard>}` so that one
 * write script's keys stay in one Redis Cluster slot (docs/architecture.md, "Storage (Redis)").
 *
 * - `{shard}:rv`               the shard's resourceVersion counter (INCR)
 * - `{shard}:events`           the shard's watch-event stream, entry ID `<rv>-0`
 * - `{shard}:o:<object key>`   one object, JSON
 * - `{shard}:restoring`        present while a restore writes the shard (docs/backup.md): a shard
 *                              refuses to start on a half-restored keyspace
 * - `{shard}:restored`         which backup the keyspace was restored from (JSON)
 * - `{shard}:floors`, `{shard}:moved`  logical clusters migrated in / away (./migration.ts)
 *
 * The object key mirrors kcp's etcd layout (`/<group>/<resource>/<cluster>/[<namespace>/]<name>`,
 * see kcp docs "etcd structure"), with `core` standing for the empty group.
 */

/** Identifies the resource part of a storage key: API group and plural resource. */
export interface ResourceKey { group: string; resource: string }

/** Redis keys of one shard. */
export class ShardKeys {
  readonly tag: string;
  readonly rv: string;
  readonly events: string;
  readonly objectPrefix: string;
  readonly restoring: string;
  readonly restored: string;

  constructor(readonly shard: string) {
    this.tag = `{${shard}}`;
    this.rv = `${this.tag}:rv`;
    this.events = `${this.tag}:events`;
    this.objectPrefix = `${this.tag}:o:`;
    this.restoring = `${this.tag}:restoring`;
    this.restored = `${this.tag}:restored`;
  }

  /** Storage key of one object (without the shard prefix): `<group>/<resource>/<cluster>/<ns>/<name>`. */
  static objectKey(r: ResourceKey, cluster: string, namespace: string | undefined, name: string): string {
    return `${r.group || 'core'}/${r.resource}/${cluster}/${namespace ? `${namespace}/` : ''}${name}`;
  }

  /** Full Redis key of an object key. */
  redisKey(objectKey: string): string {
    return this.objectPrefix + objectKey;
  }
}

/** The parts of an object key, as `ShardKeys.objectKey` builds it. */
export interface ParsedObjectKey {
  /** `<group>/<resource>` with `core` for the empty group. */
  groupResource: string;
  cluster: string;
  namespace: string;
  name: string;
}

/** Splits an object key; namespaced keys have five segments, cluster-scoped four. */
export function parseObjectKey(key: string): ParsedObjectKey {
  const parts = key.split('/');
  if (parts.length === 5) {
    return { groupResource: `${parts[0]}/${parts[1]}`, cluster: parts[2]!, namespace: parts[3]!, name: parts[4]! };
  }
  return { groupResource: `${parts[0]}/${parts[1]}`, cluster: parts[2]!, namespace: '', name: parts[3]! };
}
