/**
 * Where a shard finds the APIExports and APIResourceSchemas that bindings refer to: in its own
 * watch cache when the export's workspace lives on this shard, else in the objects replicated
 * from the instance's other shards (shards/directory.ts, `replicate`). Exports are read in their
 * storage version (`v1alpha2`) either way. What it returns is shared (parsed once per stored
 * version): callers read it and never mutate it.
 */
import { CLUSTER_ANNOTATION, type KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import { entryObject, type CacheEntry, type WatchCache } from '../storage/watchcache.js';
import { BINDINGS_GR, descriptorsForSchema, EXPORTS_GR, SCHEMAS_GR } from './schemas.js';
import { LRUCache } from 'lru-cache';

/** Replicated resource paths (ShardDirectory `replicate`) of exports and schemas. */
export const EXPORTS_PATH = 'apis/apis.kcp.io/v1alpha2/apiexports';
export const SCHEMAS_PATH = 'apis/apis.kcp.io/v1alpha1/apiresourceschemas';
/** The replicated paths the catalog reads: a change to them may change a logical cluster's APIs. */
export const CATALOG_PATHS: readonly string[] = [EXPORTS_PATH, SCHEMAS_PATH];

/** `spec.reference.export` of an APIBinding. */
export interface ExportReference { path?: string; name: string }

/** One entry of an APIBinding's `status.boundResources`. */
export interface BoundResource {
  group: string;
  resource: string;
  schema: { name: string; UID: string; identityHash: string };
  storageVersions?: string[];
}

/**
 * Whether a binding's accepted permission claim covers every object of its resource
 * (`selector.matchAll`, or no selector as v1alpha1's `all`). Only such claims are applied here.
 */
export function claimMatchesAll(claim: object): boolean {
  const selector = (claim as { selector?: { matchAll?: boolean } }).selector;
  return selector === undefined || selector.matchAll === true;
}

/** The `status.boundResources` of a cached APIBinding (read-only). */
export function boundResourcesOf(binding: CacheEntry): BoundResource[] {
  return ((entryObject<KubeObject>(binding).status as { boundResources?: BoundResource[] } | undefined)?.boundResources) ?? [];
}

/** What the catalog reads from. */
export interface CatalogSources {
  cache: WatchCache;
  /** An object replicated from another shard (`resource` one of the paths above), if any. */
  replicated?: (resource: string, cluster: string, name: string) => KubeObject | undefined;
  /** Every object of `resource` replicated from other shards (annotated `kcp.io/cluster`). */
  replicatedList?: (resource: string) => KubeObject[];
  /** Maps a workspace path (`root:org`) or logical cluster name to the logical cluster name. */
  resolvePath: (pathOrName: string) => string | undefined;
}

type Obj = Record<string, unknown>;

/** Lookups of exports and schemas across the instance (see the module comment). */
export class APICatalog {
  /**
   * Descriptors per schema uid and identity: shared by every binding of the same export. An LRU
   * cache of 2,000 schemas (schemas are immutable, so an entry never goes stale, but deleted ones
   * would otherwise stay for ever); a miss builds the descriptors again.
   */
  private readonly descriptors = new LRUCache<string, ResourceDescriptor[]>({ max: 2_000 });

  constructor(private readonly src: CatalogSources) {}

  private read(gr: string, path: string, cluster: string, name: string): KubeObject | undefined {
    const e = this.src.cache.getEntry(gr, cluster, '', name);
    if (e) return entryObject<KubeObject>(e);
    return this.src.replicated?.(path, cluster, name);
  }

  /** The APIExport `name` in logical cluster `cluster` (v1alpha2), if known. */
  export(cluster: string, name: string): KubeObject | undefined {
    return this.read(EXPORTS_GR, EXPORTS_PATH, cluster, name);
  }

  /** The APIResourceSchema `name` in logical cluster `cluster`, if known. */
  schema(cluster: string, name: string): KubeObject | undefined {
    return this.read(SCHEMAS_GR, SCHEMAS_PATH, cluster, name);
  }

  /**
   * The schema of group/resource `group`/`resource` exported with identity hash `identity` by
   * any export known here (a permission claim names another export's resource this way), or
   * undefined.
   */
  schemaByIdentity(identity: string, group: string, resource: string): KubeObject | undefined {
    const candidates: [string, KubeObject][] = this.src.cache.list(EXPORTS_GR, '*')
      .filter((e) => e.json.includes(identity)).map((e) => [e.cluster, entryObject<KubeObject>(e)]);
    for (const o of this.src.replicatedList?.(EXPORTS_PATH) ?? []) candidates.push([o.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '', o]);
    for (const [cluster, exp] of candidates) {
      if ((exp.status as { identityHash?: string } | undefined)?.identityHash !== identity) continue;
      const r = ((exp.spec as { resources?: { group?: string; name?: string; schema?: string }[] } | undefined)?.resources ?? [])
        .find((x) => (x.group ?? '') === group && x.name === resource);
      if (r?.schema) return this.schema(cluster, r.schema);
    }
    return undefined;
  }

  /**
   * The export a bound resource of logical cluster `cluster` comes from: the APIBinding of the
   * cluster that binds `desc`'s group/resource with `desc.identity`, and its export's logical
   * cluster and name. Undefined for a resource that is not bound.
   */
  exportOfBound(cluster: string, desc: ResourceDescriptor): { cluster: string; name: string } | undefined {
    if (!desc.identity) return undefined;
    for (const e of this.src.cache.list(BINDINGS_GR, cluster)) {
      if (!e.json.includes(desc.identity)) continue;
      const binding = entryObject<KubeObject>(e);
      const status = (binding.status ?? {}) as { apiExportClusterName?: string; boundResources?: BoundResource[] };
      if (!status.boundResources?.some((b) => b.group === desc.group && b.resource === desc.plural && b.schema.identityHash === desc.identity)) continue;
      const name = (binding.spec as { reference?: { export?: { name?: string } } } | undefined)?.reference?.export?.name;
      if (status.apiExportClusterName && name) return { cluster: status.apiExportClusterName, name };
    }
    return undefined;
  }

  /**
   * The logical cluster of an export reference made in `from`: its own cluster without a path
   * (kcp: a local export), else the path's logical cluster; undefined when the path is unknown.
   */
  exportCluster(from: string, ref: ExportReference): string | undefined {
    return ref.path ? this.src.resolvePath(ref.path) : from;
  }

  /**
   * The descriptors an APIBinding makes served in its workspace: for each `status.boundResources`
   * entry, the served versions of its schema (from `status.apiExportClusterName`), stored under
   * the export's identity. A schema not (yet) known here contributes nothing.
   */
  boundDescriptors(binding: KubeObject): ResourceDescriptor[] {
    const status = (binding.status ?? {}) as Obj;
    const exportCluster = String(status.apiExportClusterName ?? '');
    const bound = (Array.isArray(status.boundResources) ? status.boundResources : []) as BoundResource[];
    const out: ResourceDescriptor[] = [];
    for (const b of bound) {
      const schema = this.schema(exportCluster, b.schema.name);
      if (!schema || schema.metadata.uid !== b.schema.UID) continue;
      out.push(...this.descriptorsOf(schema, b.schema.identityHash));
    }
    return out;
  }

  /**
   * The descriptors of a schema bound with identity `identity` (descriptorsForSchema), the same
   * objects on every call: schemas are immutable, so one compilation serves every binding.
   */
  descriptorsOf(schema: KubeObject, identity: string): ResourceDescriptor[] {
    const key = `${schema.metadata.uid}/${identity}`;
    let ds = this.descriptors.get(key);
    if (!ds) { ds = descriptorsForSchema(schema, identity); this.descriptors.set(key, ds); }
    return ds;
  }
}
