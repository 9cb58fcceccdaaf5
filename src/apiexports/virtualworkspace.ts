/**
 * The apiexport virtual workspace (kcp pkg/virtual/apiexport, docs "APIs in kcp"):
 * `/services/apiexport/<export cluster>/<export name>/clusters/<cluster | *>/…` gives the
 * provider of an APIExport one Kubernetes-like endpoint over every workspace bound to it:
 * - the export's resources, as bound (stored under the export's identity): list and watch across
 *   all consumers with `clusters/*` (each object annotated `kcp.io/cluster`, one resourceVersion
 *   order per shard), every verb including `/status` in one consumer;
 * - the resources of the export's permission claims (ConfigMaps, …), in the consumers that
 *   accepted the claim, with the verbs both the export and the binding name;
 * - the consumers' APIBindings to this export, read-only.
 * Access: the caller's verb on `apiexports/content` of the export, in the export's workspace.
 *
 * Where kcp labels claimed objects (`claimed.internal.apis.kcp.io/…`) and filters by label, this
 * shard keeps a live index of which consumers accepted which claims: the same answers, no label
 * writes into tenants' objects.
 */
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { APIRegistry, ClusterAPIs } from '../apiextensions/registry.js';
import type { Store, UserInfo } from '../registry/store.js';
import type { CacheEntry, WatchCache } from '../storage/watchcache.js';
import { exportLabelValue, EXPORT_LABEL } from './admission.js';
import { claimMatchesAll, type APICatalog, type BoundResource } from './catalog.js';
import { BINDINGS_GR } from './schemas.js';
import { asObj } from '../apimachinery/objects.js';

/** What a virtual workspace request addresses, after its prefix. */
export interface VirtualRequest {
  user: UserInfo;
  /** Logical cluster name, or `*`. */
  cluster: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
}

/** How a virtual workspace serves one request (see app.ts). */
export interface VirtualView {
  /** The APIs it serves (discovery, OpenAPI, stores). */
  apis: ClusterAPIs;
  /** The APIs it serves in one logical cluster (not `*`), when they differ from `apis`. */
  apisFor?(cluster: string): ClusterAPIs;
  /**
   * Authorizes a request (`resource` '' for discovery and OpenAPI): undefined when allowed, else
   * the reason it is refused
   * (403). May reject with a StatusError (503 when the export's shard cannot be asked).
   */
  authorize(r: VirtualRequest): Promise<string | undefined>;
  /** For a wildcard `list` or `watch` (`verb`) of `store`: the objects the view may show. */
  restrict(store: Store, verb: 'list' | 'watch'): ((e: CacheEntry) => boolean) | undefined;
}

/** Whether `user` may `verb` the export's `content` in its logical cluster (apiexports/content). */
export type ContentAuthorizer = (user: UserInfo, exportCluster: string, verb: string, exportName: string) => boolean | Promise<boolean>;

type Obj = Record<string, unknown>;
interface Claim { group?: string; resource?: string; identityHash?: string; verbs?: string[]; state?: string }
const grKey = (group: string, resource: string) => `${resource}.${group}`;

/** The consumers' bindings on this shard, by export: bound resources and accepted claims. */
class BindingIndex {
  /** export label value → cluster → binding summary. */
  private readonly byExport = new Map<string, Map<string, { name: string; bound: Set<string>; claims: Map<string, string[]> }>>();
  /** `<cluster>/<binding name>` → export label value (to undo a binding's entry). */
  private readonly exportOf = new Map<string, string>();

  constructor(cache: WatchCache) {
    const load = () => {
      this.byExport.clear(); this.exportOf.clear();
      for (const e of cache.list(BINDINGS_GR, '*')) this.put(e);
    };
    cache.subscribe((ev) => {
      if (!ev) { load(); return; }
      if (ev.entry.groupResource !== BINDINGS_GR) return;
      this.remove(ev.entry.cluster, ev.entry.name);
      if (ev.type !== 'DELETED') this.put(ev.entry);
    });
    load();
  }

  private put(e: CacheEntry): void {
    const label = e.labels?.[EXPORT_LABEL];
    if (!label) return;
    const b = JSON.parse(e.json) as KubeObject;
    if (b.metadata.deletionTimestamp) return;
    const bound = new Set(((asObj(b.status).boundResources ?? []) as BoundResource[]).map((r) => grKey(r.group, r.resource)));
    const claims = new Map<string, string[]>();
    for (const c of (asObj(b.spec).permissionClaims ?? []) as Claim[]) {
      // Only claims on all objects are applied (the apibinding controller reports the others).
      if (c.state === 'Accepted' && claimMatchesAll(c)) claims.set(`${grKey(c.group ?? '', c.resource ?? '')}/${c.identityHash ?? ''}`, c.verbs ?? ['*']);
    }
    let clusters = this.byExport.get(label);
    if (!clusters) { clusters = new Map(); this.byExport.set(label, clusters); }
    clusters.set(e.cluster, { name: e.name, bound, claims });
    this.exportOf.set(`${e.cluster}/${e.name}`, label);
  }

  private remove(cluster: string, name: string): void {
    const label = this.exportOf.get(`${cluster}/${name}`);
    if (!label) return;
    this.exportOf.delete(`${cluster}/${name}`);
    const clusters = this.byExport.get(label);
    if (clusters?.get(cluster)?.name === name) clusters.delete(cluster);
    if (clusters && !clusters.size) this.byExport.delete(label);
  }

  /** The binding to export `label` in `cluster`, if any. */
  binding(label: string, cluster: string) { return this.byExport.get(label)?.get(cluster); }
}

/** The apiexport virtual workspace of a shard (see the module comment). */
export class APIExportVirtualWorkspace {
  private readonly bindings: BindingIndex;

  constructor(private readonly deps: { cache: WatchCache; catalog: APICatalog; registry: APIRegistry; mayAccessContent: ContentAuthorizer }) {
    this.bindings = new BindingIndex(deps.cache);
  }

  /**
   * The view of export `exportName` in logical cluster `exportCluster` (a name or path).
   * @throws {StatusError} 404 when the export is not known here
   */
  view(exportClusterOrPath: string, exportName: string, resolve: (segment: string) => string | undefined): VirtualView {
    const notFound = () => new StatusError(404, 'NotFound', `APIExport ${exportClusterOrPath}|${exportName} not found`);
    const exportCluster = resolve(exportClusterOrPath);
    const exp = exportCluster ? this.deps.catalog.export(exportCluster, exportName) : undefined;
    if (!exp || !exportCluster) throw notFound();
    const identity = String(asObj(exp.status).identityHash ?? '');
    const label = exportLabelValue(exportCluster, exportName);
    const spec = asObj(exp.spec);
    const descriptors: ResourceDescriptor[] = [];
    const stores = new Map<string, Store>();
    const add = (d: ResourceDescriptor, store: Store) => {
      const k = `${d.group}/${d.version}/${d.plural}`;
      if (stores.has(k)) return;
      stores.set(k, store);
      descriptors.push(d);
    };
    // Exported resources (nothing is served before the export has its identity).
    const exported = new Set<string>();
    if (identity) {
      for (const r of (Array.isArray(spec.resources) ? spec.resources as Obj[] : [])) {
        const schema = this.deps.catalog.schema(exportCluster, String(r.schema));
        if (!schema) continue;
        for (const d of this.deps.catalog.descriptorsOf(schema, identity)) { add(d, this.deps.registry.boundStore(d)); exported.add(grKey(d.group, d.plural)); }
      }
    }
    // Claimed resources: built-in ones, and other exports' resources named by their identity
    // hash (bound in the consumers from that export). Claim keys are `<gr>/<identity hash>`.
    const exportClaims = new Map<string, string[]>();
    /** Claimed group/resource → its claim key. */
    const claimed = new Map<string, string>();
    for (const c of (Array.isArray(spec.permissionClaims) ? spec.permissionClaims : []) as Claim[]) {
      const gr = grKey(c.group ?? '', c.resource ?? '');
      const key = `${gr}/${c.identityHash ?? ''}`;
      exportClaims.set(key, c.verbs ?? ['*']);
      if (exported.has(gr) || claimed.has(gr)) continue;
      if (c.identityHash) {
        const schema = this.deps.catalog.schemaByIdentity(c.identityHash, c.group ?? '', c.resource ?? '');
        if (!schema) continue;
        for (const d of this.deps.catalog.descriptorsOf(schema, c.identityHash)) add(d, this.deps.registry.boundStore(d));
      } else {
        for (const d of this.deps.registry.builtins.descriptors) {
          if (d.group === (c.group ?? '') && d.plural === c.resource && !d.virtual) add(d, this.deps.registry.builtins.store(d.group, d.version, d.plural)!);
        }
      }
      claimed.set(gr, key);
    }
    // The consumers' APIBindings (read-only).
    for (const d of this.deps.registry.builtins.descriptors) {
      if (d.group === 'apis.kcp.io' && d.plural === 'apibindings') add(d, this.deps.registry.builtins.store(d.group, d.version, d.plural)!);
    }
    const apis: ClusterAPIs = {
      descriptors,
      store: (g, v, p) => stores.get(`${g}/${v}/${p}`),
      namespacedStores: () => [],
      storedStores: () => [],
    };
    /** What a consumer's binding allows of a claimed group/resource: the verbs both name. */
    const claimVerbs = (gr: string, binding: { claims: Map<string, string[]> } | undefined): string[] => {
      const key = claimed.get(gr);
      const own = key && exportClaims.get(key);
      const bindingVerbs = key ? binding?.claims.get(key) : undefined;
      if (!own || !bindingVerbs) return [];
      if (own.includes('*')) return bindingVerbs;
      return bindingVerbs.includes('*') ? own : own.filter((v) => bindingVerbs.includes(v));
    };
    return {
      apis,
      authorize: async (r) => {
        const gr = grKey(r.apiGroup, r.resource);
        const isBindings = r.apiGroup === 'apis.kcp.io' && r.resource === 'apibindings';
        if (isBindings && !['get', 'list', 'watch'].includes(r.verb)) return 'APIBindings are read-only in the apiexport virtual workspace';
        if (r.cluster !== '*') {
          const binding = this.bindings.binding(label, r.cluster);
          if (!binding) return 'could not find suitable APIBinding in target logical cluster';
          if (!r.resource) {
            // Discovery of the consumer: the binding is enough.
          } else if (exported.has(gr)) {
            if (!binding.bound.has(gr)) return `${gr} is not bound in the target logical cluster`;
          } else if (!isBindings) {
            const verbs = claimVerbs(gr, binding);
            if (!verbs.includes('*') && !verbs.includes(r.verb)) return `the permission claim for ${gr} is not accepted for verb "${r.verb}" in the target logical cluster`;
          }
        }
        const allowed = await this.deps.mayAccessContent(r.user, exportCluster, r.verb, exportName);
        return allowed ? undefined : `access to the content of APIExport ${exportClusterOrPath}|${exportName} is not allowed`;
      },
      restrict: (store, verb) => {
        const d = store.desc;
        const gr = grKey(d.group, d.plural);
        if (d.group === 'apis.kcp.io' && d.plural === 'apibindings') return (e) => e.labels?.[EXPORT_LABEL] === label;
        if (exported.has(gr)) return undefined; // the identity's storage holds only consumers' objects
        return (e) => {
          const binding = this.bindings.binding(label, e.cluster);
          const verbs = claimVerbs(gr, binding);
          return verbs.includes('*') || verbs.includes(verb);
        };
      },
    };
  }
}
