/**
 * The APIs of each logical cluster: the built-in resources plus the custom resources of the
 * cluster's established CRDs and the resources bound by its APIBindings. Two logical clusters can serve the same group and kind with
 * different schemas and versions. A cluster without CRDs shares the built-in set: it costs
 * nothing. Per-cluster sets are built on first use and dropped when a CRD or an APIBinding of the
 * cluster changes.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import { Store, type StoreBackend } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { CRD_GR, descriptorsForCRD, isEstablished } from './customresources.js';
import { LRUCache } from 'lru-cache';

/** Key of a store: `<group>/<version>/<plural>`. */
export function storeKey(group: string, version: string, plural: string): string {
  return `${group}/${version}/${plural}`;
}

/** The resources one logical cluster serves. */
export interface ClusterAPIs {
  descriptors: ResourceDescriptor[];
  store(group: string, version: string, plural: string): Store | undefined;
  /** Stores of namespaced, stored resources, one per storage location (namespace deletion). */
  namespacedStores(): Store[];
  /** Stores of every stored resource, one per storage location (logical cluster deletion). */
  storedStores(): Store[];
}

/**
 * The APIs of one cluster: the built-in set, plus (`own`) what the cluster's CRDs and bindings
 * add. The built-in stores are not copied per cluster: a lookup falls back to them, so a cluster
 * with one binding costs its own entries only.
 */
class APISet implements ClusterAPIs {
  private ownDescriptors: ResourceDescriptor[] | undefined;

  constructor(
    private readonly builtin: { descriptors: ResourceDescriptor[]; stores: Map<string, Store> },
    private readonly own: Map<string, Store> = new Map(),
  ) {}

  get descriptors(): ResourceDescriptor[] {
    if (!this.own.size) return this.builtin.descriptors;
    return this.ownDescriptors ??= [...this.builtin.descriptors, ...[...this.own.values()].map((s) => s.desc)];
  }

  store(group: string, version: string, plural: string): Store | undefined {
    const k = storeKey(group, version, plural);
    return this.builtin.stores.get(k) ?? this.own.get(k);
  }

  namespacedStores(): Store[] {
    return this.storedStores().filter((s) => s.desc.namespaced);
  }

  storedStores(): Store[] {
    const seen = new Set<string>();
    const out: Store[] = [];
    for (const stores of [this.builtin.stores, this.own]) {
      for (const s of stores.values()) {
        if (s.desc.virtual || seen.has(s.groupResource)) continue;
        seen.add(s.groupResource);
        out.push(s);
      }
    }
    return out;
  }
}

/**
 * Resources bound into logical clusters by APIBindings (src/apiexports): the cache's group/resource
 * of bindings, and the descriptors one binding makes served.
 */
export interface BoundAPIs {
  bindingsGR: string;
  descriptors(binding: KubeObject): ResourceDescriptor[];
}

/** Logical clusters whose resolved APIs the registry keeps. */
export const API_SET_CLUSTERS = 4_096;

/** Resolves the APIs of logical clusters. */
export class APIRegistry {
  private readonly builtin: APISet;
  private readonly builtinSet: { descriptors: ResourceDescriptor[]; stores: Map<string, Store> };
  /**
   * Resolved APIs of logical clusters that serve CRDs or bindings, at most
   * {@link API_SET_CLUSTERS} (LRU; a miss resolves them again from the watch cache, reusing the
   * CRDs' stores).
   */
  private readonly clusters = new LRUCache<string, APISet>({ max: API_SET_CLUSTERS });
  /** Stores of a CRD (none while it is not established or is being deleted), reused while its resourceVersion is unchanged. */
  private readonly crdStores = new Map<string, { rv: number; stores: Store[] }>();
  /** Stores of bound resources by descriptor (shared by every binding of the same export). */
  private readonly boundStores = new WeakMap<ResourceDescriptor, Store>();

  constructor(private readonly cache: WatchCache, private readonly backend: StoreBackend, builtins: ResourceDescriptor[], private readonly bound?: BoundAPIs) {
    const stores = new Map<string, Store>();
    for (const d of builtins) stores.set(storeKey(d.group, d.version, d.plural), new Store(d, backend));
    this.builtinSet = { descriptors: builtins, stores };
    this.builtin = new APISet(this.builtinSet);
    cache.subscribe((ev) => {
      if (!ev) { this.clusters.clear(); return; }
      const gr = ev.entry.groupResource;
      if (gr !== CRD_GR && gr !== bound?.bindingsGR) return;
      this.clusters.delete(ev.entry.cluster);
      if (ev.type === 'DELETED' && gr === CRD_GR) this.crdStores.delete(`${ev.entry.cluster}/${ev.entry.name}`);
    });
  }

  /** Forgets every cluster's resolved APIs (a schema or export arrived from another shard). */
  invalidate(): void { this.clusters.clear(); }

  /** The one store of a bound resource's descriptor (from `BoundAPIs.descriptors`). */
  boundStore(d: ResourceDescriptor): Store {
    let store = this.boundStores.get(d);
    if (!store) { store = new Store(d, this.backend); this.boundStores.set(d, store); }
    return store;
  }

  /** Built-in APIs (also what paths without a logical cluster and wildcard requests see). */
  get builtins(): ClusterAPIs { return this.builtin; }

  /** The APIs served in a logical cluster. */
  forCluster(cluster: string): ClusterAPIs {
    if (!cluster || cluster === '*') return this.builtin;
    const cached = this.clusters.get(cluster);
    if (cached) return cached;
    const crds = this.cache.list(CRD_GR, cluster);
    const bindings = this.bound ? this.cache.list(this.bound.bindingsGR, cluster) : [];
    if (!crds.length && !bindings.length) return this.builtin;
    const stores = new Map<string, Store>();
    // Bound resources first: a binding refuses a group/resource a CRD already serves (its
    // controller), so a later CRD of the same group/resource is the one left unserved.
    for (const e of bindings) {
      const binding = JSON.parse(e.json) as KubeObject;
      if (binding.metadata.deletionTimestamp) continue;
      for (const d of this.bound!.descriptors(binding)) {
        const k = storeKey(d.group, d.version, d.plural);
        if (stores.has(k) || this.builtinSet.stores.has(k)) continue;
        stores.set(k, this.boundStore(d));
      }
    }
    for (const e of crds) {
      const key = `${cluster}/${e.name}`;
      let entry = this.crdStores.get(key);
      // Only a CRD that changed is read again: a workspace's CRDs can hold megabytes of schema,
      // and every change to one of them resolves the workspace's APIs anew.
      if (!entry || entry.rv !== e.rv) {
        const crd = JSON.parse(e.json) as KubeObject;
        const served = isEstablished(crd) && !crd.metadata.deletionTimestamp;
        entry = { rv: e.rv, stores: served ? descriptorsForCRD(crd).map((d) => new Store(d, this.backend)) : [] };
        this.crdStores.set(key, entry);
      }
      for (const s of entry.stores) {
        const k = storeKey(s.desc.group, s.desc.version, s.desc.plural);
        if (stores.has(k) || this.builtinSet.stores.has(k)) continue; // built-in resources cannot be shadowed
        stores.set(k, s);
      }
    }
    const own = new APISet(this.builtinSet, stores);
    this.clusters.set(cluster, own);
    return own;
  }
}
