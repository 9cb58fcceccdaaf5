/**
 * The APIs of each logical cluster: the built-in resources plus the custom resources of the
 * cluster's established CRDs. Two logical clusters can serve the same group and kind with
 * different schemas and versions. A cluster without CRDs shares the built-in set: it costs
 * nothing. Per-cluster sets are built on first use and dropped when a CRD of the cluster changes.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import { Store, type StoreBackend } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { CRD_GR, descriptorsForCRD, isEstablished } from './customresources.js';

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

class APISet implements ClusterAPIs {
  constructor(readonly descriptors: ResourceDescriptor[], private readonly stores: Map<string, Store>) {}

  store(group: string, version: string, plural: string): Store | undefined {
    return this.stores.get(storeKey(group, version, plural));
  }

  namespacedStores(): Store[] {
    return this.storedStores().filter((s) => s.desc.namespaced);
  }

  storedStores(): Store[] {
    const seen = new Set<string>();
    const out: Store[] = [];
    for (const s of this.stores.values()) {
      if (s.desc.virtual || seen.has(s.groupResource)) continue;
      seen.add(s.groupResource);
      out.push(s);
    }
    return out;
  }
}

/** Resolves the APIs of logical clusters. */
export class APIRegistry {
  private readonly builtin: APISet;
  private readonly clusters = new Map<string, APISet>();
  /** Stores of a CRD, reused while the CRD's resourceVersion is unchanged. */
  private readonly crdStores = new Map<string, { rv: string; stores: Store[] }>();

  constructor(private readonly cache: WatchCache, private readonly backend: StoreBackend, builtins: ResourceDescriptor[]) {
    const stores = new Map<string, Store>();
    for (const d of builtins) stores.set(storeKey(d.group, d.version, d.plural), new Store(d, backend));
    this.builtin = new APISet(builtins, stores);
    cache.subscribe((ev) => {
      if (!ev) { this.clusters.clear(); return; }
      if (ev.entry.groupResource !== CRD_GR) return;
      this.clusters.delete(ev.entry.cluster);
      if (ev.type === 'DELETED') this.crdStores.delete(`${ev.entry.cluster}/${ev.entry.name}`);
    });
  }

  /** Built-in APIs (also what paths without a logical cluster and wildcard requests see). */
  get builtins(): ClusterAPIs { return this.builtin; }

  /** The APIs served in a logical cluster. */
  forCluster(cluster: string): ClusterAPIs {
    if (!cluster || cluster === '*') return this.builtin;
    const cached = this.clusters.get(cluster);
    if (cached) return cached;
    const crds = this.cache.list(CRD_GR, cluster);
    if (!crds.length) return this.builtin;
    const descriptors = [...this.builtin.descriptors];
    const stores = new Map(this.builtinStores());
    for (const e of crds) {
      const crd = JSON.parse(e.json) as KubeObject;
      if (!isEstablished(crd) || crd.metadata.deletionTimestamp) continue;
      const key = `${cluster}/${e.name}`;
      let entry = this.crdStores.get(key);
      if (!entry || entry.rv !== crd.metadata.resourceVersion) {
        entry = { rv: crd.metadata.resourceVersion!, stores: descriptorsForCRD(crd).map((d) => new Store(d, this.backend)) };
        this.crdStores.set(key, entry);
      }
      for (const s of entry.stores) {
        const k = storeKey(s.desc.group, s.desc.version, s.desc.plural);
        if (stores.has(k)) continue; // built-in resources cannot be shadowed
        stores.set(k, s);
        descriptors.push(s.desc);
      }
    }
    const set = new APISet(descriptors, stores);
    this.clusters.set(cluster, set);
    return set;
  }

  private builtinStores(): Iterable<[string, Store]> {
    return this.builtin.descriptors.map((d) => [storeKey(d.group, d.version, d.plural), this.builtin.store(d.group, d.version, d.plural)!] as [string, Store]);
  }
}
