/**
 * The garbage collector's in-process view of ownership (the part of kube's GraphBuilder,
 * k8s.io/kubernetes/pkg/controller/garbagecollector/graph_builder.go, that this server needs),
 * built from the watch cache.
 *
 * Memory is spent only on objects that take part in ownership: an object is indexed when its
 * stored JSON contains `"ownerReferences"` (a substring test before any parse), and an owner is
 * known only by its uid as long as some dependent names it. Liveness of owners is never tracked
 * here: it is answered by looking the owner up in the watch cache by its coordinates (kind →
 * resource, name, the dependent's namespace) and comparing uids, as kube's `isDangling` does.
 * Objects whose deletion waits for their dependents (`foregroundDeletion`) are remembered while
 * they wait, so a change of one of their dependents wakes them.
 *
 * Object keys are the watch cache's (`<group>/<resource>/<cluster>/[<ns>/]<name>`, `core` for
 * the empty group); they are also the garbage collector's queue keys.
 */
import type { OwnerReference } from '../../apimachinery/meta.js';
import { parseObjectKey } from '../../storage/keys.js';
import type { CacheEntry, CacheEvent } from '../../storage/watchcache.js';
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN } from '../../registry/store.js';

export { FINALIZER_FOREGROUND, FINALIZER_ORPHAN };

/** Object key of an object, as the watch cache builds it (`ShardKeys.objectKey`). */
export function objectKeyFor(groupResource: string, cluster: string, namespace: string, name: string): string {
  return `${groupResource}/${cluster}/${namespace ? `${namespace}/` : ''}${name}`;
}

/** The parts of an object key: `{ groupResource, cluster, namespace ('' if cluster-scoped), name }`. */
export { parseObjectKey };

/**
 * `metadata.uid` of stored JSON without parsing it: the storage serialiser writes metadata
 * keys as name, generateName, namespace, uid first (src/storage/redis.ts), and nothing before
 * them is client-controlled free text, so the first `"uid":"` is the object's own. '' if absent.
 */
export function uidOfJson(json: string): string {
  const at = json.indexOf('"uid":"');
  if (at < 0) return '';
  const start = at + 7;
  return json.slice(start, json.indexOf('"', start));
}

/** The parts of stored metadata the garbage collector reads. */
interface GCMeta {
  uid?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

/** Decides whether a dependent's owners need the garbage collector's attention (see `ownersSettled`). */
export type OwnersSettled = (dependent: { cluster: string; namespace: string }, refs: readonly OwnerReference[]) => boolean;

/**
 * Owner uid → dependents, dependent → its ownerReferences, and the owners waiting for their
 * dependents' deletion. `observe` keeps it current from watch-cache events and returns the
 * object keys that need a reconcile, following kube's graph builder:
 * - a deleted object: its dependents (their owner may now be absent) and those of its owners
 *   that wait for their dependents (one fewer to wait for);
 * - an object newly owned or whose ownerReferences changed: the object itself unless every
 *   owner is present and not deleting its dependents (`settled`);
 * - an ownerReference removed or no longer blocking: that owner if it waits for its dependents;
 * - an object being deleted with `orphan` or `foregroundDeletion`: the object itself.
 */
export class DependentIndex {
  /** `<cluster>|<owner uid>` → object keys of dependents. */
  private readonly byOwner = new Map<string, Set<string>>();
  /** Dependent object key → its ownerReferences. */
  private readonly refsOf = new Map<string, OwnerReference[]>();
  /** `<cluster>|<uid>` → object key of an object being deleted in the foreground. */
  private readonly waiting = new Map<string, string>();

  constructor(private readonly settled: OwnersSettled) {}

  /** Number of indexed dependents. */
  get dependentCount(): number { return this.refsOf.size; }

  /** Number of owner uids named by some dependent. */
  get ownerCount(): number { return this.byOwner.size; }

  /** Object keys of the dependents recorded for an owner uid in a logical cluster. */
  dependentsOf(cluster: string, uid: string): string[] {
    const s = this.byOwner.get(`${cluster}|${uid}`);
    return s ? [...s] : [];
  }

  /** Forgets everything (before a rebuild after a cache resynchronisation). */
  clear(): void {
    this.byOwner.clear(); this.refsOf.clear(); this.waiting.clear();
  }

  /** Applies one cache event (or a current entry at start-up, as ADDED); returns keys to reconcile. */
  observe(ev: Pick<CacheEvent, 'type' | 'entry'>): string[] {
    const e = ev.entry;
    const out: string[] = [];
    const prev = this.refsOf.get(e.key);
    if (ev.type === 'DELETED') {
      const uid = uidOfJson(e.json);
      if (prev) {
        this.unindex(e, prev);
        for (const r of prev) this.wake(e.cluster, r.uid, out);
      }
      const deps = this.byOwner.get(`${e.cluster}|${uid}`);
      if (deps) out.push(...deps);
      this.waiting.delete(`${e.cluster}|${uid}`);
      return out;
    }
    const json = e.json;
    const owned = json.includes('"ownerReferences"');
    const deleting = json.includes('"deletionTimestamp"') && (json.includes(`"${FINALIZER_FOREGROUND}"`) || json.includes(`"${FINALIZER_ORPHAN}"`));
    let meta: GCMeta | undefined;
    if (owned || deleting) meta = (JSON.parse(json) as { metadata: GCMeta }).metadata;
    if (this.waiting.size) this.waiting.delete(`${e.cluster}|${meta?.uid ?? uidOfJson(json)}`);
    if (meta?.deletionTimestamp) {
      const f = meta.finalizers ?? [];
      if (f.includes(FINALIZER_FOREGROUND)) this.waiting.set(`${e.cluster}|${meta.uid}`, e.key);
      if (f.includes(FINALIZER_FOREGROUND) || f.includes(FINALIZER_ORPHAN)) out.push(e.key);
    }
    const refs = meta?.ownerReferences?.length ? meta.ownerReferences : undefined;
    if (!refs) {
      if (prev) {
        this.unindex(e, prev);
        for (const r of prev) this.wake(e.cluster, r.uid, out);
      }
      return out;
    }
    if (prev && sameRefs(prev, refs)) return out;
    if (prev) {
      // Owners that lost this dependent, or no longer blocked by it, may be done waiting.
      for (const r of prev) {
        const now = refs.find((x) => x.uid === r.uid);
        if (!now || (r.blockOwnerDeletion === true && now.blockOwnerDeletion !== true)) this.wake(e.cluster, r.uid, out);
      }
      this.unindex(e, prev);
    }
    this.refsOf.set(e.key, refs.map((r) => ({ apiVersion: r.apiVersion, kind: r.kind, name: r.name, uid: r.uid, ...(r.blockOwnerDeletion !== undefined ? { blockOwnerDeletion: r.blockOwnerDeletion } : {}) })));
    for (const r of refs) {
      const k = `${e.cluster}|${r.uid}`;
      let s = this.byOwner.get(k);
      if (!s) { s = new Set(); this.byOwner.set(k, s); }
      s.add(e.key);
    }
    if (!meta?.deletionTimestamp && !this.settled({ cluster: e.cluster, namespace: e.namespace }, refs)) out.push(e.key);
    return out;
  }

  private unindex(e: CacheEntry, refs: readonly OwnerReference[]): void {
    this.refsOf.delete(e.key);
    for (const r of refs) {
      const k = `${e.cluster}|${r.uid}`;
      const s = this.byOwner.get(k);
      if (!s) continue;
      s.delete(e.key);
      if (s.size === 0) this.byOwner.delete(k);
    }
  }

  private wake(cluster: string, uid: string, out: string[]): void {
    const k = this.waiting.get(`${cluster}|${uid}`);
    if (k) out.push(k);
  }
}

function sameRefs(a: readonly OwnerReference[], b: readonly OwnerReference[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!; const y = b[i]!;
    if (x.uid !== y.uid || x.name !== y.name || x.kind !== y.kind || x.apiVersion !== y.apiVersion || (x.blockOwnerDeletion === true) !== (y.blockOwnerDeletion === true)) return false;
  }
  return true;
}
