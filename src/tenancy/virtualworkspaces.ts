/**
 * The initializing and terminating virtual workspaces (kcp pkg/virtual/initializingworkspaces and
 * pkg/virtual/terminatingworkspaces): what the controller behind a WorkspaceType initializer
 * (`spec.initializer: true`) or terminator (`spec.terminator: true`) uses to finish setting up,
 * or tearing down, the workspaces of that type.
 *
 * `/services/initializingworkspaces/<initializer>/clusters/…` (and `terminatingworkspaces/<terminator>`):
 * - `clusters/*`: list and watch of the LogicalClusters (`cluster`, one per logical cluster) in the
 *   phase the workspace serves — `Initializing` / being deleted — whose `status.initializers` /
 *   `status.terminators` hold `<initializer>` (each object annotated `kcp.io/cluster`). A watch
 *   sees a LogicalCluster leave (DELETED) once it no longer matches.
 * - `clusters/<name>`, while that logical cluster matches: `get` of its LogicalCluster, and
 *   update/patch of its `/status` that may only remove `<initializer>` from the list (or leave it
 *   as it is; 422 otherwise); every other resource is the workspace's own content, with every verb
 *   its APIs allow (the initializer sets the workspace up). A logical cluster that does not match
 *   answers 403 `initializer "<i>" cannot access this workspace`.
 * Access: verb `initialize` / `terminate` on the `workspacetypes` named by the initializer's type
 * name, in the WorkspaceType's own workspace (an initializer is `<type workspace path>:<type name>`).
 *
 * Where kcp selects LogicalClusters by labels it writes (`initializer.internal.kcp.io/…`), this
 * shard filters the watch cache's LogicalClusters directly. kcp forwards content requests to the
 * shard impersonating the workspace's owner; here they run as the caller, once the virtual
 * workspace authorized them (the owner is the workspace's admin: the same reach). kcp refuses a
 * status update that leaves the list unchanged; here it is a no-op.
 */
import { StatusError, invalid } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { AdmissionAttributes } from '../admission/plugins.js';
import type { APIRegistry, ClusterAPIs } from '../apiextensions/registry.js';
import type { VirtualView } from '../apiexports/virtualworkspace.js';
import { Store, jsonEqual, type StoreBackend, type UserInfo } from '../registry/store.js';
import type { CacheEntry, WatchCache } from '../storage/watchcache.js';
import { LOGICAL_CLUSTERS_GR } from './index.js';
import { LRUCache } from 'lru-cache';

/** What distinguishes the initializing from the terminating virtual workspace. */
export interface LifecycleKind {
  /** Name under `/services/` (`initializingworkspaces`). */
  service: string;
  /** What the path segment names (`initializer`), in messages. */
  noun: string;
  /** The LogicalCluster status list it works on (`initializers`). */
  field: 'initializers' | 'terminators';
  /** Verb the caller needs on the WorkspaceType (`initialize`). */
  verb: string;
  /** Whether a LogicalCluster is in the phase the workspace serves. */
  inPhase(lc: KubeObject): boolean;
}

type LCStatus = { phase?: string; initializers?: string[]; terminators?: string[] } & Record<string, unknown>;
const statusOf = (lc: KubeObject): LCStatus => (lc.status && typeof lc.status === 'object' ? lc.status as LCStatus : {});

/** kcp's initializingworkspaces: LogicalClusters in phase `Initializing` (not being deleted). */
export const INITIALIZING: LifecycleKind = {
  service: 'initializingworkspaces', noun: 'initializer', field: 'initializers', verb: 'initialize',
  inPhase: (lc) => !lc.metadata.deletionTimestamp && statusOf(lc).phase === 'Initializing',
};

/** kcp's terminatingworkspaces: LogicalClusters being deleted (phase `Terminating` while terminators remain). */
export const TERMINATING: LifecycleKind = {
  service: 'terminatingworkspaces', noun: 'terminator', field: 'terminators', verb: 'terminate',
  inPhase: (lc) => Boolean(lc.metadata.deletionTimestamp),
};

/** Whether `user` may do `attributes` in logical cluster `cluster` (shard.ts `authorizeIn`). */
export type ClusterAuthorizer = (user: UserInfo, cluster: string, attributes: { verb: string; group: string; resource: string; name: string }) => boolean | Promise<boolean>;

/** Dependencies of {@link WorkspaceLifecycleVirtualWorkspace}. */
export interface LifecycleVirtualWorkspaceDeps {
  cache: WatchCache;
  registry: APIRegistry;
  /** Backend of the LogicalCluster stores the workspace derives (same storage as the built-in one). */
  backend: StoreBackend;
  /** Resolves a workspace path (or logical cluster name) to a logical cluster name, also on other shards. */
  resolvePath(segment: string): string | undefined;
  authorizeIn: ClusterAuthorizer;
}

/** Splits `<type workspace path>:<type name>` at its last `:`; undefined when either part is empty. */
export function splitTypeReference(ref: string): { path: string; name: string } | undefined {
  const i = ref.lastIndexOf(':');
  if (i <= 0 || i === ref.length - 1) return undefined;
  return { path: ref.slice(0, i), name: ref.slice(i + 1) };
}

/** What one initializer's (terminator's) views share: the derived LogicalCluster stores and API sets. */
interface NameState {
  wildcard: ClusterAPIs;
  lcKey: string;
  lcDesc: ResourceDescriptor;
  lcStore: Store;
  /** A logical cluster's APIs with its LogicalCluster store replaced, by the cluster's own set. */
  perCluster: WeakMap<ClusterAPIs, ClusterAPIs>;
}

/** How many initializers' states are kept (any string can be asked for before authorization). */
const MAX_STATES = 512;

/**
 * The initializing or terminating virtual workspace of a shard, per {@link LifecycleKind} (see the
 * module comment): `view(<initializer>)` is what app.ts serves under `/services/<service>/<initializer>`.
 */
export class WorkspaceLifecycleVirtualWorkspace {
  /** States by initializer or terminator name: an LRU cache of {@link MAX_STATES}. */
  private readonly states = new LRUCache<string, NameState>({ max: MAX_STATES });
  private readonly baseDesc: ResourceDescriptor;

  constructor(readonly kind: LifecycleKind, private readonly deps: LifecycleVirtualWorkspaceDeps) {
    const d = deps.registry.builtins.descriptors.find((x) => x.group === 'core.kcp.io' && x.plural === 'logicalclusters');
    if (!d) throw new Error('logicalclusters.core.kcp.io is not served');
    this.baseDesc = d;
  }

  /** The LogicalCluster of `cluster` on this shard, if any. */
  private logicalCluster(cluster: string): KubeObject | undefined {
    const e = this.deps.cache.getEntry(LOGICAL_CLUSTERS_GR, cluster, '', 'cluster');
    return e ? JSON.parse(e.json) as KubeObject : undefined;
  }

  /** Whether a LogicalCluster is in the workspace's phase with `name` in its list. */
  private matches(lc: KubeObject, name: string): boolean {
    const list = statusOf(lc)[this.kind.field];
    return this.kind.inPhase(lc) && Array.isArray(list) && list.includes(name);
  }

  /**
   * The check of a LogicalCluster `/status` write through the view of `name`: the list may lose
   * exactly `name` (or stay as it is); the phase and the other lifecycle list may not change.
   * @throws {StatusError} 422 Invalid otherwise
   */
  private checkStatusUpdate(name: string, obj: KubeObject, attrs: AdmissionAttributes): void {
    const old = attrs.old;
    if (attrs.operation !== 'update' || !old) return;
    const { field, noun } = this.kind;
    const before = statusOf(old); const after = statusOf(obj);
    const prev = Array.isArray(before[field]) ? before[field] : [];
    const next = after[field] ?? [];
    const lcName = obj.metadata.name ?? 'cluster';
    if (!jsonEqual(next, prev) && !(prev.includes(name) && jsonEqual(next, prev.filter((x) => x !== name)))) {
      throw invalid('LogicalCluster', 'core.kcp.io', lcName, [{
        reason: 'FieldValueInvalid', field: `status.${field}`, message: `Invalid value: ${JSON.stringify(next)}: only removing the ${JSON.stringify(name)} ${noun} is supported`,
      }]);
    }
    const other = field === 'initializers' ? 'terminators' : 'initializers';
    for (const f of ['phase', other] as const) {
      if (!jsonEqual(after[f], before[f])) {
        throw invalid('LogicalCluster', 'core.kcp.io', lcName, [{
          reason: 'FieldValueForbidden', field: `status.${f}`, message: `Forbidden: may not be changed through the ${this.kind.service} virtual workspace`,
        }]);
      }
    }
  }

  private state(name: string): NameState {
    let s = this.states.get(name);
    if (s) return s;
    const base = this.baseDesc;
    // Wildcard: list and watch only. One logical cluster: get, and the `/status` writes checked
    // here before the shard's admission chain.
    const wildcardDesc: ResourceDescriptor = { ...base, verbs: ['list', 'watch'], hasStatus: false };
    const lcDesc: ResourceDescriptor = { ...base, verbs: ['get'] };
    const shard = this.deps.backend;
    const lcBackend: StoreBackend = {
      ...shard,
      admission: {
        mutate: async (a) => {
          if (a.operation === 'UPDATE') this.checkStatusUpdate(name, a.object!, { operation: 'update', cluster: a.cluster, user: a.user, old: a.oldObject });
          return shard.admission ? shard.admission.mutate(a) : a.object;
        },
        validate: async (a) => { await shard.admission?.validate(a); },
      },
    };
    const wildcardStore = new Store(wildcardDesc, this.deps.backend);
    const lcKey = `${base.group}/${base.version}/${base.plural}`;
    s = {
      wildcard: {
        descriptors: [wildcardDesc],
        store: (g, v, p) => (`${g}/${v}/${p}` === lcKey ? wildcardStore : undefined),
        namespacedStores: () => [],
        storedStores: () => [],
      },
      lcKey, lcDesc, lcStore: new Store(lcDesc, lcBackend), perCluster: new WeakMap(),
    };
    this.states.set(name, s);
    return s;
  }

  /** A logical cluster's own APIs, its LogicalCluster resource being the view's. */
  private clusterAPIs(s: NameState, cluster: string): ClusterAPIs {
    const own = this.deps.registry.forCluster(cluster);
    let apis = s.perCluster.get(own);
    if (!apis) {
      apis = {
        descriptors: own.descriptors.map((d) => (`${d.group}/${d.version}/${d.plural}` === s.lcKey ? s.lcDesc : d)),
        store: (g, v, p) => (`${g}/${v}/${p}` === s.lcKey ? s.lcStore : own.store(g, v, p)),
        namespacedStores: () => own.namespacedStores(),
        storedStores: () => own.storedStores(),
      };
      s.perCluster.set(own, apis);
    }
    return apis;
  }

  /**
   * The view of initializer (terminator) `name`, `<type workspace path>:<type name>`.
   * @throws {StatusError} 404 when `name` is not of that form
   */
  view(name: string): VirtualView {
    const ref = splitTypeReference(name);
    if (!ref) throw new StatusError(404, 'NotFound', `${this.kind.noun} "${name}" is not of the form <workspace type path>:<workspace type name>`);
    const s = this.state(name);
    const { noun, verb } = this.kind;
    return {
      apis: s.wildcard,
      apisFor: (cluster) => this.clusterAPIs(s, cluster),
      authorize: async (r) => {
        const typeCluster = this.deps.resolvePath(ref.path);
        const allowed = typeCluster !== undefined
          && await this.deps.authorizeIn(r.user, typeCluster, { verb, group: 'tenancy.kcp.io', resource: 'workspacetypes', name: ref.name });
        if (!allowed) return `access to the ${noun} "${name}" is not allowed: needs verb "${verb}" on workspacetypes "${ref.name}" in workspace "${ref.path}"`;
        if (r.cluster === '*') return undefined;
        const lc = this.logicalCluster(r.cluster);
        return lc && this.matches(lc, name) ? undefined : `${noun} ${JSON.stringify(name)} cannot access this workspace`;
      },
      restrict: (store) => {
        if (store.groupResource !== LOGICAL_CLUSTERS_GR) return () => false;
        const quoted = JSON.stringify(name);
        // Cheap test first: only a LogicalCluster naming it anywhere can match.
        return (e: CacheEntry) => e.json.includes(quoted) && this.matches(JSON.parse(e.json) as KubeObject, name);
      },
    };
  }
}

/**
 * The `virtualWorkspaces` entry of app.ts for `kind`: `/services/<kind.service>/<initializer>/…`.
 */
export function lifecycleVirtualWorkspace(kind: LifecycleKind, deps: LifecycleVirtualWorkspaceDeps): { segments: number; view(args: string[]): VirtualView } {
  const vw = new WorkspaceLifecycleVirtualWorkspace(kind, deps);
  return { segments: 1, view: ([name]) => vw.view(name ?? '') };
}
