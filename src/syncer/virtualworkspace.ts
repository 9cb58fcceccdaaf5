/**
 * The syncer virtual workspace (kcp v0.11 pkg/virtual/syncer): what one SyncTarget's syncer sees.
 *
 * `/services/syncer/<cluster>/<synctarget name>/<synctarget uid>/clusters/<cluster | *>/…`
 * - serves the resource types the SyncTarget syncs: `status.syncedResources` in state `Accepted`
 *   (resolved in the SyncTarget's logical cluster: built-in, CRD or bound), and always
 *   `namespaces`, `configmaps` and `secrets` (the types kcp's `workload sync` always grants);
 * - shows, across all logical clusters (`clusters/*`: list and watch) or in one (get, list, watch,
 *   update, patch, `/status`), only the objects labelled `state.workload.kcp.io/<key>: Sync` for
 *   this SyncTarget's key (src/workload/keys.ts);
 * - presents each object as kcp's transformer (pkg/virtual/syncer/transformations transformer.go
 *   `AfterRead`) does: no finalizers but the syncer's own `workload.kcp.io/syncer-<key>`, no
 *   deletionTimestamp but the one of `deletion.internal.workload.kcp.io/<key>` (only while
 *   `finalizers.workload.kcp.io/<key>` is empty, kcp's "soft finalizers"), no
 *   `diff.syncer.internal.kcp.io/*` annotation, and `status` as this SyncTarget reported it (kept
 *   in `diff.syncer.internal.kcp.io/<key>` as `{"status": …}`, or `"##promoted##"` when it is the
 *   object's own status because one SyncTarget syncs it);
 * - takes writes as kcp's `BeforeWrite`: only the syncer finalizer, the status (through `/status`)
 *   and, when the view has a deletionTimestamp and no syncer finalizer any more, the removal from
 *   the SyncTarget (state label, syncer finalizer, deletion and syncer-view annotations dropped:
 *   an object being deleted whose last finalizer that was is then deleted). Everything else the
 *   syncer writes is ignored: the spec belongs to the workspace.
 * Access: verb `sync` on `synctargets/<name>` in the SyncTarget's workspace (the role
 * `kubectl kcp workload sync` binds to the syncer's service account). A SyncTarget that does not
 * exist here, or has another uid, is 404.
 *
 * Differences from kcp: kcp refuses a write to an object not assigned to the SyncTarget, or
 * without the syncer finalizer in the view, with 500; here these are 409 Conflict (the object
 * changed under the syncer). kcp shows a deletionTimestamp only from the deletion annotation (its
 * resource controller copies an object's own deletionTimestamp there); here an object's own
 * deletionTimestamp is shown too when the annotation is absent, so deletion reaches the syncer
 * whichever component runs first. Not implemented: promoting another SyncTarget's status when
 * one of two leaves (kcp `BeforeWrite`'s `removedFromSyncer` promotion), summarizing rules from
 * `experimental.summarizing.workload.kcp.io`, the upsyncer virtual workspace, and the per-SyncTarget
 * API set built from APIResourceImports (kcp's apireconciler): the types are resolved in the
 * SyncTarget's own workspace.
 */
import { StatusError, conflict, notFound } from '../apimachinery/errors.js';
import { decodeJSONPatchBody } from '../apimachinery/jsonsyntax.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { asObj } from '../apimachinery/objects.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { APIRegistry, ClusterAPIs } from '../apiextensions/registry.js';
import type { VirtualView } from '../apiexports/virtualworkspace.js';
import { Store, type DeleteOptions, type DeleteResult, type ListOptions, type RequestScope, type StoreBackend, type UserInfo } from '../registry/store.js';
import type { CacheEntry, WatchCache } from '../storage/watchcache.js';
import {
  DELETION_TIMESTAMP_ANNOTATION_PREFIX, RESOURCE_STATE_LABEL_PREFIX, SYNCER_FINALIZER_PREFIX, SYNCER_VIEW_ANNOTATION_PREFIX,
  SYNC_TARGET_FINALIZERS_ANNOTATION_PREFIX, syncTargetKey,
} from '../workload/keys.js';
import { LRUCache } from 'lru-cache';

/** The storage group/resource of SyncTargets (served in every logical cluster). */
export const SYNC_TARGETS_GR = 'workload.kcp.io/synctargets';

/** kcp's marker, in the syncer-view annotation, of a field whose value is the upstream object's own. */
export const PROMOTED_TO_UPSTREAM = '##promoted##';

/** The types every syncer view serves besides `status.syncedResources` (kcp's required resources). */
export const REQUIRED_RESOURCES: ReadonlyArray<{ group: string; resource: string }> = [
  { group: '', resource: 'namespaces' }, { group: '', resource: 'configmaps' }, { group: '', resource: 'secrets' },
];

/** The verbs of a syncer view (kcp's syncer virtual workspace serves no create or delete). */
const VIEW_VERBS = ['get', 'list', 'watch', 'update', 'patch'];

type Fields = Record<string, unknown>;

/** The syncer-view fields of `key` on an upstream object (`diff.syncer.internal.kcp.io/<key>`, JSON); {} when absent or not an object. */
export function syncerViewFields(obj: KubeObject, key: string): Fields {
  const raw = obj.metadata.annotations?.[SYNCER_VIEW_ANNOTATION_PREFIX + key];
  if (!raw) return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? v as Fields : {};
  } catch { return {}; }
}

/** The SyncTarget keys an object is labelled for, with their state (kcp helpers `GetSyncIntents`). */
export function syncIntents(obj: KubeObject): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) if (k.startsWith(RESOURCE_STATE_LABEL_PREFIX)) out.set(k.slice(RESOURCE_STATE_LABEL_PREFIX.length), v);
  return out;
}

/** Whether an upstream object is shown to the syncer of `key` (labelled `Sync` for it). */
export function isSyncedTo(labels: Record<string, string> | undefined, key: string): boolean {
  return labels?.[RESOURCE_STATE_LABEL_PREFIX + key] === 'Sync';
}

/**
 * An upstream object as the syncer of SyncTarget `key` sees it (kcp transformer.go `AfterRead`
 * with the default summarizing rules: `status`, promotable). Changes `obj` in place.
 */
export function toSyncerView(obj: KubeObject, key: string): KubeObject {
  const m = obj.metadata;
  const fields = syncerViewFields(obj, key);
  const finalizer = SYNCER_FINALIZER_PREFIX + key;
  const ownDeletion = m.deletionTimestamp;
  const hadFinalizer = (m.finalizers ?? []).includes(finalizer);
  delete m.finalizers;
  delete m.deletionTimestamp;
  delete m.deletionGracePeriodSeconds;
  if (m.annotations) {
    for (const k of Object.keys(m.annotations)) if (k.startsWith(SYNCER_VIEW_ANNOTATION_PREFIX)) delete m.annotations[k];
  }
  // Status is always the syncer's: absent until it reported one.
  const status = fields.status;
  if (status === undefined) delete obj.status;
  else if (status !== PROMOTED_TO_UPSTREAM) obj.status = status;
  if (hadFinalizer) m.finalizers = [finalizer];
  const annotations = m.annotations ?? {};
  const softFinalizers = annotations[SYNC_TARGET_FINALIZERS_ANNOTATION_PREFIX + key];
  const deletion = annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + key] || ownDeletion;
  if (deletion && !softFinalizers) m.deletionTimestamp = deletion;
  return obj;
}

/**
 * The upstream object a syncer's write of `view` makes of `current` (kcp transformer.go
 * `BeforeWrite`, default summarizing rules); `subresource` is '' or `status`.
 * @throws {StatusError} 409 when `current` is not labelled `Sync` for `key`, or the view drops the
 *   syncer finalizer without a deletionTimestamp
 */
export function fromSyncerView(current: KubeObject, view: KubeObject, key: string, subresource: string, gr: { group: string; resource: string }): KubeObject {
  const next = structuredClone(current);
  const m = next.metadata;
  const name = m.name ?? '';
  const finalizer = SYNCER_FINALIZER_PREFIX + key;
  const viewHasFinalizer = (view.metadata?.finalizers ?? []).includes(finalizer);
  const removed = Boolean(view.metadata?.deletionTimestamp) && !viewHasFinalizer && !subresource;
  if (removed) {
    if (m.labels) delete m.labels[RESOURCE_STATE_LABEL_PREFIX + key];
    if (m.finalizers) m.finalizers = m.finalizers.filter((f) => f !== finalizer);
    if (m.annotations) {
      delete m.annotations[SYNCER_VIEW_ANNOTATION_PREFIX + key];
      delete m.annotations[DELETION_TIMESTAMP_ANNOTATION_PREFIX + key];
    }
    return next;
  }
  const intents = syncIntents(current);
  const what = `${[gr.resource, subresource].filter(Boolean).join('/')}(${m.namespace ?? ''}/${name})`;
  if (intents.get(key) !== 'Sync') throw conflict(gr, name, `tried to write resource ${what} though it is not assigned to the current SyncTarget`);
  if (!viewHasFinalizer) throw conflict(gr, name, `tried to write resource ${what} though it is not owning it (syncer finalizer doesn't exist)`);
  const owners = (current.metadata.finalizers ?? []).filter((f) => f.startsWith(SYNCER_FINALIZER_PREFIX));
  const annotations = (m.annotations ??= {});
  const setFields = (k: string, f: Fields) => {
    if (Object.keys(f).length) annotations[SYNCER_VIEW_ANNOTATION_PREFIX + k] = JSON.stringify(f);
    else delete annotations[SYNCER_VIEW_ANNOTATION_PREFIX + k];
  };
  // A second SyncTarget: the single owner's promoted status goes back to its own annotation.
  if (intents.size > 1 && owners.length === 1) {
    const owner = owners[0]!.slice(SYNCER_FINALIZER_PREFIX.length);
    const ownerFields = syncerViewFields(current, owner);
    if (ownerFields.status === PROMOTED_TO_UPSTREAM && current.status !== undefined) {
      ownerFields.status = current.status;
      setFields(owner, ownerFields);
    }
  }
  const existing = syncerViewFields(current, key);
  const fields: Fields = {};
  if (subresource === 'status') {
    if (view.status !== undefined) {
      if (intents.size === 1) { next.status = view.status; fields.status = PROMOTED_TO_UPSTREAM; } else fields.status = view.status;
    }
  } else if (existing.status !== undefined) fields.status = existing.status;
  setFields(key, fields);
  if (!owners.includes(finalizer)) m.finalizers = [...(m.finalizers ?? []), finalizer].sort();
  return next;
}

/** The store of one resource type in one SyncTarget's view (see the module comment). */
export class SyncerViewStore extends Store {
  /** The same resource without the view: reads of upstream objects and the writes. */
  private readonly upstream: Store;

  /** `base` is the resource's descriptor in the SyncTarget's workspace. */
  constructor(base: ResourceDescriptor, backend: StoreBackend, readonly key: string) {
    const baseDefaults = base.readDefaults;
    super({
      ...base, verbs: VIEW_VERBS,
      // Every read of the view (get, list, watch, protobuf) goes through the read hook.
      readDefaults: (obj) => { baseDefaults?.(obj); toSyncerView(obj, key); return true; },
    }, backend);
    this.upstream = new Store(base, backend);
  }

  private get grOf() { return { group: this.desc.group, resource: this.desc.plural }; }

  /** Objects labelled `Sync` for this view's SyncTarget, and what `opts` selects. */
  override compileFilter(opts: ListOptions): (e: CacheEntry) => boolean {
    const key = this.key;
    const restrict = opts.restrict;
    return super.compileFilter({ ...opts, restrict: (e) => isSyncedTo(e.labels, key) && (!restrict || restrict(e)) });
  }

  /** The upstream object, when this view shows it. @throws {StatusError} 404 otherwise */
  private async current(scope: RequestScope, name: string): Promise<KubeObject> {
    const obj = JSON.parse(await this.upstream.get(scope, name)) as KubeObject;
    if (!isSyncedTo(obj.metadata.labels, this.key)) throw notFound(this.grOf, name);
    return obj;
  }

  /**
   * The upstream object as the watch cache has it now, without waiting for the shard's current
   * revision; undefined when the cache has none this view shows. Only for writes: the write's
   * revision check (`expectedRv`) refuses it if it was stale, as kube's `GuaranteedUpdate` starting
   * from its cached object.
   */
  private async cached(scope: RequestScope, name: string): Promise<KubeObject | undefined> {
    const e = this.upstream.cachedEntry(scope, name);
    if (!e || !isSyncedTo(e.labels, this.key)) return undefined;
    const converting = this.upstream.prepare([e]);
    if (converting) await converting;
    return this.upstream.decodeEntry(e);
  }

  override async get(scope: RequestScope, name: string): Promise<string> {
    return JSON.stringify(toSyncerView(await this.current(scope, name), this.key));
  }

  /**
   * A write of the view: see {@link fromSyncerView}; a resourceVersion in `body` is a precondition
   * (409). When the watch cache holds the object at that resourceVersion the write starts from it
   * (no read of the storage: one write per syncer request, the finalizer on every object first).
   */
  override async update(scope: RequestScope, name: string, body: unknown, subresource?: string): Promise<{ json: string; created: boolean }> {
    const view = this.checkBody(body, scope);
    this.checkSubresource(subresource);
    const rv = view.metadata.resourceVersion;
    const hit = rv ? await this.cached(scope, name) : undefined;
    return { json: await this.write(scope, name, hit && hit.metadata.resourceVersion === rv ? hit : await this.current(scope, name), view, subresource), created: false };
  }

  private checkSubresource(subresource: string | undefined): void {
    if (subresource && subresource !== 'status') throw new StatusError(405, 'MethodNotAllowed', `the ${subresource} subresource is not served by the syncer virtual workspace`);
  }

  /** Writes `view` over `current` (see {@link update}); the answer is the written object's view. */
  private async write(scope: RequestScope, name: string, current: KubeObject, view: KubeObject, subresource: string | undefined): Promise<string> {
    const rv = view.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) throw conflict(this.grOf, name, 'the object has been modified; please apply your changes to the latest version and try again');
    const next = fromSyncerView(current, view, this.key, subresource ?? '', this.grOf);
    // One write of metadata and status together (the status is the syncer's to set here); its
    // precondition is the revision `current` was read at.
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    const res = await this.upstream.update({ ...scope, withStatus: true }, name, next);
    return JSON.stringify(toSyncerView(JSON.parse(res.json) as KubeObject, this.key));
  }

  /**
   * A patch of the view: applied to the view as read, then written as {@link update}; retried on a
   * conflict it did not ask for. The first attempt reads the watch cache (see {@link cached}); a
   * retry, or a patch asking for a resourceVersion the cache does not have yet, reads the storage.
   */
  override async patch(scope: RequestScope, name: string, contentType: string, patchBody: Buffer, subresource?: string): Promise<string> {
    this.checkSubresource(subresource);
    const patch = decodeJSONPatchBody(patchBody);
    for (let attempt = 0; ; attempt++) {
      let current = attempt === 0 ? await this.cached(scope, name) : undefined;
      let view: KubeObject; let patched: unknown; let asked: boolean;
      for (;;) {
        const base = current ?? await this.current(scope, name);
        view = toSyncerView(structuredClone(base), this.key);
        patched = this.applyPatch(view, contentType, patch);
        if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw new StatusError(400, 'BadRequest', 'the patch produced a value that is not an object');
        asked = (patched as KubeObject).metadata?.resourceVersion !== view.metadata.resourceVersion;
        // A cached object older than the one the patch asks for: read the storage.
        if (!current || !asked) { current = base; break; }
        current = undefined;
      }
      try {
        return await this.write(scope, name, current, this.checkBody(patched, scope), subresource);
      } catch (err) {
        if (err instanceof StatusError && err.code === 409 && !asked && attempt < 3 && /modified/.test(err.message)) continue;
        throw err;
      }
    }
  }

  override apply(): Promise<{ json: string; created: boolean }> { return Promise.reject(this.notServed('apply')); }
  override create(): Promise<string> { return Promise.reject(this.notServed('create')); }
  override delete(_scope: RequestScope, _name: string, _opts?: DeleteOptions): Promise<DeleteResult> { return Promise.reject(this.notServed('delete')); }
  override deleteCollection(): Promise<CacheEntry[]> { return Promise.reject(this.notServed('deletecollection')); }

  private notServed(verb: string): StatusError {
    return new StatusError(405, 'MethodNotAllowed', `${verb} is not supported by the syncer virtual workspace`);
  }
}

/** Dependencies of {@link SyncerVirtualWorkspace}. */
export interface SyncerVirtualWorkspaceDeps {
  cache: WatchCache;
  registry: APIRegistry;
  /** Backend of the shard's stores (the views write through it). */
  backend: StoreBackend;
  /** Resolves a workspace path (or logical cluster name) to a logical cluster name. */
  resolvePath(segment: string): string | undefined;
  /** Whether `user` may do `attributes` in logical cluster `cluster` (shard.ts `authorizeIn`). */
  authorizeIn(user: UserInfo, cluster: string, attributes: { verb: string; group: string; resource: string; name: string }): boolean | Promise<boolean>;
}

/** How many SyncTargets' views a shard keeps built (LRU; any path can be asked for). */
const MAX_VIEWS = 1024;

/** The syncer virtual workspace of a shard (see the module comment). */
export class SyncerVirtualWorkspace {
  /** Stores by `<key>/<group>/<version>/<plural>` and their base descriptor (a CRD change makes a new one). */
  private readonly stores = new LRUCache<string, { base: ResourceDescriptor; store: SyncerViewStore }>({ max: MAX_VIEWS * 8 });
  /**
   * Views by `<cluster>|<path as asked>|<name>|<uid>`, with the SyncTarget entry and the cluster's APIs they were
   * built from: a view is built again only when either changed (every request of a syncer names
   * its view; building it parses the SyncTarget and walks the cluster's types).
   */
  private readonly views = new LRUCache<string, { entry: CacheEntry; apis: ClusterAPIs; view: VirtualView }>({ max: MAX_VIEWS });

  constructor(private readonly deps: SyncerVirtualWorkspaceDeps) {}

  private storeFor(key: string, base: ResourceDescriptor): SyncerViewStore {
    const k = `${key}/${base.group}/${base.version}/${base.plural}`;
    const hit = this.stores.get(k);
    if (hit && hit.base === base) return hit.store;
    const store = new SyncerViewStore(base, this.deps.backend, key);
    this.stores.set(k, { base, store });
    return store;
  }

  /**
   * The view of SyncTarget `name` (uid `uid`) in `clusterOrPath`.
   * @throws {StatusError} 404 when no such SyncTarget is on this shard
   */
  view(clusterOrPath: string, name: string, uid: string): VirtualView {
    const cluster = this.deps.resolvePath(clusterOrPath);
    const entry = cluster ? this.deps.cache.getEntry(SYNC_TARGETS_GR, cluster, '', name) : undefined;
    const notFound = () => new StatusError(404, 'NotFound', `SyncTarget ${clusterOrPath}|${name} with uid ${JSON.stringify(uid)} not found`);
    if (!cluster || !entry) throw notFound();
    const own = this.deps.registry.forCluster(cluster);
    const memo = `${cluster}|${clusterOrPath}|${name}|${uid}`;
    const hit = this.views.get(memo);
    if (hit && hit.entry === entry && hit.apis === own) return hit.view;
    const st = JSON.parse(entry.json) as KubeObject;
    if (st.metadata.uid !== uid) throw notFound();
    const view = this.build(cluster, clusterOrPath, name, st, own);
    this.views.set(memo, { entry, apis: own, view });
    return view;
  }

  /** The view of SyncTarget `st` in `cluster` over the cluster's APIs `own` (see {@link view}). */
  private build(cluster: string, clusterOrPath: string, name: string, st: KubeObject, own: ClusterAPIs): VirtualView {
    const key = syncTargetKey(cluster, name);
    const wanted = [...REQUIRED_RESOURCES];
    for (const r of (asObj(st.status).syncedResources ?? []) as Array<{ group?: string; resource?: string; state?: string }>) {
      if (r.state === 'Accepted' && r.resource) wanted.push({ group: r.group ?? '', resource: r.resource });
    }
    const descriptors: ResourceDescriptor[] = [];
    const stores = new Map<string, SyncerViewStore>();
    for (const w of wanted) {
      for (const d of own.descriptors) {
        if (d.group !== w.group || d.plural !== w.resource || d.virtual) continue;
        const k = `${d.group}/${d.version}/${d.plural}`;
        if (stores.has(k)) continue;
        const base = own.store(d.group, d.version, d.plural);
        if (!base) continue;
        const store = this.storeFor(key, base.desc);
        stores.set(k, store);
        descriptors.push(store.desc);
      }
    }
    const apis: ClusterAPIs = {
      descriptors,
      store: (g, v, p) => stores.get(`${g}/${v}/${p}`),
      namespacedStores: () => [],
      storedStores: () => [],
    };
    return {
      apis,
      authorize: async (r) => {
        const allowed = await this.deps.authorizeIn(r.user, cluster, { verb: 'sync', group: 'workload.kcp.io', resource: 'synctargets', name });
        return allowed ? undefined : `access to the syncer virtual workspace of SyncTarget ${clusterOrPath}|${name} is not allowed: needs verb "sync" on synctargets "${name}"`;
      },
      restrict: () => (e) => isSyncedTo(e.labels, key),
    };
  }
}

/** The `virtualWorkspaces` entry of app.ts: `/services/syncer/<cluster>/<synctarget name>/<synctarget uid>/…`. */
export function syncerVirtualWorkspace(deps: SyncerVirtualWorkspaceDeps): { segments: number; view(args: string[]): VirtualView } {
  const vw = new SyncerVirtualWorkspace(deps);
  return { segments: 3, view: ([cluster, name, uid]) => vw.view(cluster ?? '', name ?? '', uid ?? '') };
}
