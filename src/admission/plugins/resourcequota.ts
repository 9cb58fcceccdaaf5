/**
 * ResourceQuota admission, as kube-apiserver's `ResourceQuota` plugin
 * (k8s.io/apiserver/pkg/admission/plugin/resourcequota: admission.go, controller.go,
 * resource_access.go) with kcp's per-logical-cluster delegation (kcp pkg/admission/kubequota,
 * plugin `KCPKubeResourceQuota`) and kcp's cluster-scoped quota.
 *
 * What is counted: objects, on create (kube's generic object count evaluator,
 * k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go, whose `Handles` is `Create` only). An object
 * of resource `<plural>` in group `<group>` counts towards `count/<plural>.<group>`
 * (`count/<plural>` in the core group), and core ConfigMaps, Secrets, ResourceQuotas and
 * ReplicationControllers also towards kube's legacy names `configmaps`, `secrets`,
 * `resourcequotas`, `replicationcontrollers` (pkg/quota/v1/evaluator/core/registry.go
 * legacyObjectCountAliases). kcp serves no pods, services or persistent volume claims, so their
 * usage evaluators (cpu, memory, `services.loadbalancers`, …) have nothing to measure here.
 * Resources kube ignores (pkg/quota/v1/install/registry.go ignoredResources: events, access
 * reviews, token reviews, bindings, componentstatuses) and virtual resources are never counted.
 *
 * Which quotas apply: the ResourceQuotas of the object's namespace, plus kcp's cluster-scoped
 * quotas — a ResourceQuota in namespace `admin` annotated
 * `experimental.quota.kcp.io/cluster-scoped: "true"` (strconv.ParseBool) counts every object of
 * its logical cluster, in all namespaces and cluster-scoped ones (kcp's `namespaceToCheck` in its
 * resourcequota fork; kcp's test/e2e/quota TestClusterScopedQuota). As in kcp, cluster-scoped
 * objects are not exempt (kcp removed kube's namespace check from `Validate`): only
 * cluster-scoped quotas can count them. A quota with `scopes` or a `scopeSelector` matches no
 * counted object (the object count evaluator's scope function matches no scope).
 *
 * The check is kube's `CheckRequest`: a quota matches when its `status.hard` names one of the
 * object's resources; a matching quota whose `status.used` lacks one of them is 403 `status
 * unknown for quota: <name>, resources: <names>`; `used + 1 > hard` is 403 `exceeded quota:
 * <name>, requested: <r>=1, used: <r>=<used>, limited: <r>=<hard>`. A quota whose status has not
 * been computed yet (no `status.hard`) matches nothing, as in kube: enforcement starts once the
 * quota controller (src/controllers/resourcequota) has filled the status.
 *
 * Race freedom is kube's quota evaluator's: admitted usage is written to the quota's
 * `status.used` through the store with the quota's resourceVersion as precondition (a
 * compare-and-swap in the storage script) before the object is admitted; a conflict re-reads the
 * quota and checks again (kube's `checkQuotas`, 3 retries; here {@link MAX_STATUS_RETRIES}).
 * Requests of one logical cluster are evaluated in batches, one batch at a time (kube's
 * per-namespace work queue; one queue per logical cluster here so that a cluster-scoped quota is
 * written by one batch at a time too), so concurrent creates in one process queue up instead of
 * conflicting, and one status write admits a whole batch. Objects admitted but not yet stored are
 * tracked as {@link QuotaReservations}, which the quota controller adds to what it counts, so a
 * recalculation never frees a slot that an in-flight create holds; a create that the store fails
 * after admission (AlreadyExists, a missing namespace, a failed transaction) releases its
 * reservation at once ({@link ResourceQuotaAdmission.release}), which has the controller
 * recalculate its quotas, so its slot is back within a reconcile.
 *
 * Bounds: a namespace holds at most {@link MAX_QUOTAS_PER_NAMESPACE} ResourceQuotas; the pending requests of a cluster are the requests in flight (each one waits for its
 * batch; at most {@link MAX_BATCH} are evaluated together); reservations live until their object
 * appears in the watch cache or {@link RESERVATION_TTL_MS}; the look-aside copies of written quotas
 * (kube's `updatedQuotas` LRU) are at most {@link MAX_WRITTEN_QUOTAS}. A logical cluster with no
 * quota costs two map lookups per create and nothing else.
 */
import type { KubeObject } from '../../apimachinery/meta.js';
import { StatusError, isStatus } from '../../apimachinery/errors.js';
import { storageGroupResource, type RequestScope, type Store, type WebhookAttributes } from '../../registry/store.js';
import { entryObject, type CacheEntry, type CacheEvent, type WatchCache } from '../../storage/watchcache.js';
import type { ResourceDescriptor } from '../../apis/types.js';

/** The watch cache's group/resource of ResourceQuotas. */
export const RESOURCE_QUOTAS_GR = 'core/resourcequotas';
/** kcp's annotation of a cluster-scoped quota (kcp `kcpExperimentalClusterScopedQuotaAnnotationKey`). */
export const CLUSTER_SCOPED_QUOTA_ANNOTATION = 'experimental.quota.kcp.io/cluster-scoped';
/** The namespace a cluster-scoped quota must live in (kcp `kcpClusterScopedQuotaNamespace`). */
export const CLUSTER_SCOPED_QUOTA_NAMESPACE = 'admin';
/** Conflicting status writes retried per batch before the waiting requests get the 409 (kube: 3). */
export const MAX_STATUS_RETRIES = 5;
/** Requests evaluated in one batch at most. */
export const MAX_BATCH = 256;
/** How long an admitted create's reservation is held without its object appearing (ms). */
export const RESERVATION_TTL_MS = 10_000;
/** Reservations are swept this often while there are any (ms). */
export const RESERVATION_SWEEP_MS = 1_000;
/** A reservation whose name another object holds is dropped after this long (ms): its create failed. */
export const RESERVATION_GRACE_MS = 1_000;
/** Look-aside copies of quotas this process wrote, at most (kube's updatedQuotas LRU holds 100). */
export const MAX_WRITTEN_QUOTAS = 1024;
/**
 * ResourceQuotas one namespace may hold (kcp-ts's bound; kube has none): each create in the
 * namespace is checked against, and may write the status of, every one of them, so a tenant
 * must not multiply that work without end. An object is checked against at most twice this
 * many (its namespace's and the cluster-scoped ones of `admin`).
 */
export const MAX_QUOTAS_PER_NAMESPACE = 100;

/** kube's legacyObjectCountAliases (core group only). */
const LEGACY_OBJECT_COUNT_ALIASES = new Set(['configmaps', 'resourcequotas', 'replicationcontrollers', 'secrets']);

/** kube's quota ignoredResources (`<group>/<resource>`). */
const IGNORED_RESOURCES = new Set([
  '/bindings', '/componentstatuses', '/events', 'events.k8s.io/events',
  'authentication.k8s.io/tokenreviews', 'authentication.k8s.io/selfsubjectreviews',
  'authorization.k8s.io/subjectaccessreviews', 'authorization.k8s.io/selfsubjectaccessreviews',
  'authorization.k8s.io/localsubjectaccessreviews', 'authorization.k8s.io/selfsubjectrulesreviews',
]);

/** Whether quota ignores a resource (kube's ignoredResources). */
export function isQuotaIgnored(group: string, plural: string): boolean {
  return IGNORED_RESOURCES.has(`${group}/${plural}`);
}

/** kube's `ObjectCountQuotaResourceNameFor`: `count/<plural>` (core) or `count/<plural>.<group>`. */
export function objectCountResourceName(group: string, plural: string): string {
  return group ? `count/${plural}.${group}` : `count/${plural}`;
}

/** The quota resource names one object of a resource counts towards (object count and legacy alias). */
export function countedResourceNames(group: string, plural: string): string[] {
  const names = [objectCountResourceName(group, plural)];
  if (!group && LEGACY_OBJECT_COUNT_ALIASES.has(plural)) names.push(plural);
  return names;
}

/**
 * The resource a quota resource name counts: `count/<plural>[.<group>]` (the group is everything
 * after the first dot) or a legacy alias; undefined for any other name (compute resources, …).
 */
export function parseCountedResource(name: string): { group: string; plural: string } | undefined {
  if (name.startsWith('count/')) {
    const rest = name.slice('count/'.length);
    const dot = rest.indexOf('.');
    const plural = dot < 0 ? rest : rest.slice(0, dot);
    return plural ? { group: dot < 0 ? '' : rest.slice(dot + 1), plural } : undefined;
  }
  return LEGACY_OBJECT_COUNT_ALIASES.has(name) ? { group: '', plural: name } : undefined;
}

/** Go's strconv.ParseBool true values. */
const TRUE_VALUES = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/**
 * Whether a ResourceQuota is kcp's cluster-scoped quota: in namespace `admin` and annotated
 * `experimental.quota.kcp.io/cluster-scoped` with a true value (kcp `namespaceToCheck`).
 */
export function isClusterScopedQuota(q: KubeObject): boolean {
  return q.metadata.namespace === CLUSTER_SCOPED_QUOTA_NAMESPACE && TRUE_VALUES.has(q.metadata.annotations?.[CLUSTER_SCOPED_QUOTA_ANNOTATION] ?? '');
}

/** Whether a quota restricts itself to scopes (then object counts never match it). */
export function hasScopes(q: KubeObject): boolean {
  const spec = q.spec as { scopes?: unknown[]; scopeSelector?: { matchExpressions?: unknown[] } } | undefined;
  return Boolean(spec?.scopes?.length || spec?.scopeSelector?.matchExpressions?.length);
}

/** A quota's resource lists (`spec.hard`, `status.hard`, `status.used`): name → quantity string. */
export type ResourceList = Record<string, string>;

/** `spec.hard` of a quota ({} when absent or malformed). */
export function specHard(q: KubeObject): ResourceList {
  return resourceList((q.spec as { hard?: unknown } | undefined)?.hard);
}

const parsedStatus = new WeakMap<KubeObject, { hard: ResourceList; used: ResourceList }>();

/**
 * `status.hard` and `status.used` of a quota ({} when absent or malformed), parsed once per
 * object: quota objects (the watch cache's, or one this process wrote) are never changed, so a
 * quota with many names costs its parse once per version, not once per create.
 */
export function quotaStatus(q: KubeObject): { hard: ResourceList; used: ResourceList } {
  let parsed = parsedStatus.get(q);
  if (!parsed) {
    const s = q.status as { hard?: unknown; used?: unknown } | undefined;
    parsed = { hard: resourceList(s?.hard), used: resourceList(s?.used) };
    parsedStatus.set(q, parsed);
  }
  return parsed;
}

function resourceList(v: unknown): ResourceList {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
  const out: ResourceList = Object.create(null) as ResourceList;
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string' || typeof x === 'number') out[k] = String(x);
  return out;
}

const SUFFIXES: Record<string, number> = {
  '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/**
 * The value of a Kubernetes quantity (apimachinery resource.Quantity syntax: decimal with a
 * decimal-SI, binary-SI or exponent suffix) as a number, or undefined when it is not one.
 * Object counts are integers far below 2^53, so comparing them with this value is exact.
 */
export function parseQuantity(s: string): number | undefined {
  const m = QUANTITY.exec(s.trim());
  if (!m) return undefined;
  const base = Number(m[1]);
  return m[2] !== undefined ? base * 10 ** Number(m[2].slice(1)) : base * SUFFIXES[m[3] ?? '']!;
}

/**
 * An object count as kube prints `resource.NewQuantity(n, DecimalSI)`: the canonical form with the
 * largest exact decimal-SI suffix (`999`, `1k`, `1500`, `2M`).
 */
export function formatCount(n: number): string {
  if (n === 0 || !Number.isInteger(n)) return String(n);
  for (const [suffix, factor] of [['E', 1e18], ['P', 1e15], ['T', 1e12], ['G', 1e9], ['M', 1e6], ['k', 1e3]] as const) {
    if (Math.abs(n) >= factor && n % factor === 0) return `${n / factor}${suffix}`;
  }
  return String(n);
}

/** The key of a quota in this module and the quota controller: `<cluster>|<namespace>/<name>`. */
export function quotaKey(cluster: string, namespace: string, name: string): string {
  return `${cluster}|${namespace}/${name}`;
}

/** Splits a {@link quotaKey}. */
export function splitQuotaKey(key: string): { cluster: string; namespace: string; name: string } {
  const bar = key.indexOf('|');
  const rest = key.slice(bar + 1);
  const slash = rest.indexOf('/');
  return { cluster: key.slice(0, bar), namespace: rest.slice(0, slash), name: rest.slice(slash + 1) };
}

/**
 * The ResourceQuota entries that may apply to an object of logical cluster `cluster` in
 * `namespace` ('' for cluster-scoped objects): those of the namespace and kcp's cluster-scoped
 * quotas of the cluster, each once.
 */
export function quotaEntriesFor(cache: Pick<WatchCache, 'list'>, cluster: string, namespace: string): CacheEntry[] {
  const out: CacheEntry[] = namespace ? [...cache.list(RESOURCE_QUOTAS_GR, cluster, namespace)] : [];
  if (namespace !== CLUSTER_SCOPED_QUOTA_NAMESPACE) {
    for (const e of cache.list(RESOURCE_QUOTAS_GR, cluster, CLUSTER_SCOPED_QUOTA_NAMESPACE)) {
      if (isClusterScopedQuota(entryObject<KubeObject>(e))) out.push(e);
    }
  }
  return out;
}

/** Where an admitted object will be stored: the watch cache's group/resource, its namespace and name. */
export interface ReservedObject { groupResource: string; namespace: string; name: string }

/** One admitted create whose object is not stored yet: the quotas and names it was charged on. */
interface Reservation {
  uid: string;
  /** The object (its name when admitted). */
  target: ReservedObject;
  /** `<namespace>/<name>` of the object. */
  object: string;
  /** quota key → resource names charged. */
  charges: Map<string, string[]>;
  /** When it was made, and when it expires (Date.now() ms). */
  since: number;
  expires: number;
}

/** The reservations of one logical cluster, by object uid and by `<namespace>/<name>`. */
interface ClusterReservations {
  byUid: Map<string, Reservation>;
  byObject: Map<string, Set<string>>;
}

/**
 * Creates admitted against a quota whose objects are not in the watch cache yet (in this process).
 * The quota controller adds them to what it counts (`count`), so a recalculation racing with
 * in-flight creates never lowers `status.used` below what was admitted. A reservation ends when
 * its object appears in the watch cache (an ADDED event of its namespace and name whose JSON holds
 * its uid: no parse), when admission releases it (refused, or not written: the store reports a
 * create it failed after admission), when a sweep finds its namespace and name taken by another
 * object for over {@link RESERVATION_GRACE_MS}, or after {@link RESERVATION_TTL_MS} (a failure the
 * store could not report, or a generated name changed on a retry): the last two are backstops.
 * All but the first report the quotas (`onFreed`) so that their usage is recalculated.
 * One sweep timer ({@link RESERVATION_SWEEP_MS}) for all clusters runs only while reservations
 * exist; a cluster without reservations costs one map lookup per event.
 */
export class QuotaReservations {
  private readonly byCluster = new Map<string, ClusterReservations>();
  private timer: NodeJS.Timeout | undefined;
  /** Quotas whose charged usage may be too high now (set by the quota controller). */
  onFreed: (quotaKeys: string[]) => void = () => undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly cache: Pick<WatchCache, 'subscribe' | 'getEntry'>, private readonly ttlMs = RESERVATION_TTL_MS) {
    this.unsubscribe = cache.subscribe((ev) => this.observe(ev));
  }

  /** Charges an in-flight create (object `uid`, to be stored as `target`) on a quota for `names`. */
  reserve(cluster: string, uid: string, target: ReservedObject, key: string, names: string[]): void {
    let c = this.byCluster.get(cluster);
    if (!c) { c = { byUid: new Map(), byObject: new Map() }; this.byCluster.set(cluster, c); }
    let r = c.byUid.get(uid);
    if (!r) {
      const object = `${target.namespace}/${target.name}`;
      const now = Date.now();
      r = { uid, target, object, charges: new Map(), since: now, expires: now + this.ttlMs };
      c.byUid.set(uid, r);
      let uids = c.byObject.get(object);
      if (!uids) { uids = new Set(); c.byObject.set(object, uids); }
      uids.add(uid);
    }
    r.charges.set(key, names);
    this.arm();
  }

  /**
   * Drops a create's charge on one quota, or on all (`key` undefined); reports them as freed
   * unless `report` is false (a conflicting write that is retried at once).
   */
  release(cluster: string, uid: string, key?: string, report = true): void {
    const c = this.byCluster.get(cluster);
    const r = c?.byUid.get(uid);
    if (!r) return;
    const freed = key === undefined ? [...r.charges.keys()] : r.charges.has(key) ? [key] : [];
    if (key === undefined) r.charges.clear(); else r.charges.delete(key);
    if (!r.charges.size) this.drop(cluster, c!, r);
    if (report && freed.length) this.onFreed(freed);
  }

  /** In-flight creates charged on quota `key` for resource `name`. */
  count(cluster: string, key: string, name: string): number {
    const c = this.byCluster.get(cluster);
    if (!c) return 0;
    let n = 0;
    for (const r of c.byUid.values()) if (r.charges.get(key)?.includes(name)) n++;
    return n;
  }

  /** Reservations held (all clusters). */
  get size(): number {
    let n = 0;
    for (const c of this.byCluster.values()) n += c.byUid.size;
    return n;
  }

  /** Stops observing the cache and drops every reservation. */
  close(): void {
    this.unsubscribe();
    this.byCluster.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private drop(cluster: string, c: ClusterReservations, r: Reservation): void {
    c.byUid.delete(r.uid);
    const uids = c.byObject.get(r.object);
    uids?.delete(r.uid);
    if (uids && !uids.size) c.byObject.delete(r.object);
    if (!c.byUid.size) this.byCluster.delete(cluster);
  }

  private observe(ev: CacheEvent | undefined): void {
    if (!ev || ev.type !== 'ADDED') return;
    const c = this.byCluster.get(ev.entry.cluster);
    const uids = c?.byObject.get(`${ev.entry.namespace}/${ev.entry.name}`);
    if (!uids) return;
    for (const uid of uids) {
      // A uid is random and unknown to anyone before its object is stored: only that object holds it.
      if (ev.entry.json.includes(`"${uid}"`)) { this.drop(ev.entry.cluster, c!, c!.byUid.get(uid)!); return; }
    }
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.sweep(), Math.min(RESERVATION_SWEEP_MS, this.ttlMs));
    this.timer.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    const now = Date.now();
    const freed = new Set<string>();
    for (const [cluster, c] of [...this.byCluster]) {
      for (const r of [...c.byUid.values()]) {
        if (r.expires > now) {
          if (now - r.since < RESERVATION_GRACE_MS) continue;
          const t = r.target;
          const there = this.cache.getEntry(t.groupResource, cluster, t.namespace, t.name);
          if (!there || there.json.includes(`"${r.uid}"`)) continue;
        }
        for (const k of r.charges.keys()) freed.add(k);
        this.drop(cluster, c, r);
      }
    }
    if (this.byCluster.size) this.arm();
    if (freed.size) this.onFreed([...freed]);
  }
}

/** What the plugin needs from the shard. */
export interface ResourceQuotaAdmissionOptions {
  /** The shard's watch cache (quotas are read from it). */
  cache: WatchCache;
  /** The ResourceQuota store, for status writes (resolved on first use). */
  quotas: () => Store;
  /** In-flight admitted creates, shared with the quota controller. */
  reservations: QuotaReservations;
  /** The identity status writes are made as, in a logical cluster and namespace. */
  scope: (cluster: string, namespace: string) => RequestScope;
}

/** One request waiting for its batch. */
interface Waiter {
  a: WebhookAttributes;
  /** Resource names the object counts towards. */
  names: string[];
  /** Quotas it still has to be charged on. */
  remaining: Set<string>;
  done: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * kube's ResourceQuota admission plugin (see the module comment): validates creates of every
 * counted resource against the quotas of the object's namespace and the cluster-scoped quotas of
 * its logical cluster, and charges the admitted usage to their `status.used`. Rejects with a
 * 403 Forbidden StatusError (`<resource> "<name>" is forbidden: exceeded quota: …`), or with the
 * 409 of the last conflicting status write after {@link MAX_STATUS_RETRIES} retries.
 */
export class ResourceQuotaAdmission {
  private readonly pending = new Map<string, Waiter[]>();
  private readonly draining = new Set<string>();
  /** Quotas this process wrote, newer than the watch cache may show yet (kube's updatedQuotas). */
  private readonly written = new Map<string, KubeObject>();

  constructor(private readonly opts: ResourceQuotaAdmissionOptions) {}

  /** Checks and charges a create; see the class comment. */
  async validate(a: WebhookAttributes): Promise<void> {
    if (a.operation !== 'CREATE' || a.subresource || a.desc.virtual || !a.object || isQuotaIgnored(a.desc.group, a.desc.plural)) return;
    if (!a.desc.group && a.desc.plural === 'resourcequotas' && this.opts.cache.count(RESOURCE_QUOTAS_GR, a.cluster, a.namespace) >= MAX_QUOTAS_PER_NAMESPACE) {
      throw this.forbidden(a, `a namespace may hold at most ${MAX_QUOTAS_PER_NAMESPACE} ResourceQuotas`);
    }
    const entries = quotaEntriesFor(this.opts.cache, a.cluster, a.namespace);
    if (!entries.length) return;
    const names = countedResourceNames(a.desc.group, a.desc.plural);
    // Only a quota whose status names one of the object's resources can refuse or charge it.
    if (!entries.some((e) => this.matches(this.latest(e), names))) return;
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = { a, names, remaining: new Set(), done: false, resolve, reject };
      let q = this.pending.get(a.cluster);
      if (!q) { q = []; this.pending.set(a.cluster, q); }
      q.push(w);
      if (!this.draining.has(a.cluster)) void this.drain(a.cluster);
    });
  }

  /**
   * A create admitted by {@link validate} was not written (the store failed it afterwards,
   * WebhookAdmission.release): its reservations are dropped and their quotas recalculated by the
   * controller at once. kube leaves such a charge in `status.used` until the next full resync;
   * here the slot is back as soon as the controller has counted again.
   */
  release(a: WebhookAttributes): void {
    const uid = a.object?.metadata.uid;
    if (a.operation !== 'CREATE' || a.dryRun || !uid) return;
    this.opts.reservations.release(a.cluster, uid);
  }

  /** Whether a quota counts objects of `names` (kube's evaluator `Matches`: on status.hard, no scopes). */
  private matches(q: KubeObject, names: string[]): boolean {
    if (hasScopes(q)) return false;
    const { hard } = quotaStatus(q);
    return names.some((n) => n in hard);
  }

  /** The newest known state of a quota: the cache's, or the one this process wrote if newer. */
  private latest(e: CacheEntry): KubeObject {
    const key = quotaKey(e.cluster, e.namespace, e.name);
    const mine = this.written.get(key);
    if (mine) {
      if (Number(mine.metadata.resourceVersion) > e.rv) return mine;
      this.written.delete(key);
    }
    return entryObject<KubeObject>(e);
  }

  private remember(key: string, q: KubeObject): void {
    this.written.delete(key);
    this.written.set(key, q);
    if (this.written.size > MAX_WRITTEN_QUOTAS) this.written.delete(this.written.keys().next().value!);
  }

  /** Evaluates the cluster's waiting requests, one batch at a time, until none is left. */
  private async drain(cluster: string): Promise<void> {
    this.draining.add(cluster);
    try {
      for (;;) {
        const q = this.pending.get(cluster);
        if (!q?.length) { this.pending.delete(cluster); break; }
        const batch = q.splice(0, MAX_BATCH);
        try {
          await this.evaluate(cluster, batch);
        } catch (err) {
          for (const w of batch) this.finish(w, err);
        }
      }
    } finally {
      this.draining.delete(cluster);
    }
  }

  private finish(w: Waiter, err?: unknown): void {
    if (w.done) return;
    w.done = true;
    if (err === undefined) { w.resolve(); return; }
    // A refused create gives back what it was charged (the controller recalculates those quotas).
    const uid = w.a.object!.metadata.uid;
    if (uid && !w.a.dryRun) this.opts.reservations.release(w.a.cluster, uid);
    w.reject(err);
  }

  /**
   * kube's `checkQuotas` for one batch: checks each request against the quotas' usage plus what
   * the batch admitted before it, writes each changed quota's status with its resourceVersion as
   * precondition, and on a conflict re-reads that quota and checks the requests still waiting
   * for it again.
   */
  private async evaluate(cluster: string, batch: Waiter[]): Promise<void> {
    const state = new Map<string, KubeObject>();
    const ofNamespace = new Map<string, CacheEntry[]>();
    for (const w of batch) {
      let entries = ofNamespace.get(w.a.namespace);
      if (!entries) { entries = quotaEntriesFor(this.opts.cache, cluster, w.a.namespace); ofNamespace.set(w.a.namespace, entries); }
      for (const e of entries) {
        const key = quotaKey(e.cluster, e.namespace, e.name);
        const q = state.get(key) ?? this.latest(e);
        if (!this.matches(q, w.names)) continue;
        state.set(key, q);
        w.remaining.add(key);
      }
      if (!w.remaining.size) this.finish(w);
    }
    let lastConflict: unknown;
    for (let attempt = 0; ; attempt++) {
      /** Per quota: new usage and the requests charged on it. */
      const charges = new Map<string, { used: Record<string, number>; waiters: Waiter[]; names: Set<string> }>();
      for (const w of batch) {
        if (w.done) continue;
        const plan: [string, string[]][] = [];
        let refusal: StatusError | undefined;
        for (const key of w.remaining) {
          const q = state.get(key)!;
          const { hard, used } = quotaStatus(q);
          const c = charges.get(key);
          const restricted = w.names.filter((n) => n in hard);
          const unknown = restricted.filter((n) => !(n in used));
          if (unknown.length) {
            refusal = this.forbidden(w.a, `status unknown for quota: ${q.metadata.name}, resources: ${unknown.sort().join(',')}`);
            break;
          }
          const current = (n: string) => c?.used[n] ?? parseQuantity(used[n]!) ?? 0;
          const exceeded = restricted.filter((n) => !(current(n) + 1 <= (parseQuantity(hard[n]!) ?? 0))).sort();
          if (exceeded.length) {
            const list = (f: (n: string) => string) => exceeded.map((n) => `${n}=${f(n)}`).join(',');
            refusal = this.forbidden(w.a, `exceeded quota: ${q.metadata.name}, requested: ${list(() => '1')}, used: ${list((n) => c?.used[n] !== undefined ? formatCount(c.used[n]!) : used[n]!)}, limited: ${list((n) => hard[n]!)}`);
            break;
          }
          plan.push([key, restricted]);
        }
        if (refusal) { this.finish(w, refusal); continue; }
        // A dry run is checked, never charged (kube's checkQuotas skips dry-run attributes).
        if (w.a.dryRun) { this.finish(w); continue; }
        for (const [key, names] of plan) {
          let c = charges.get(key);
          if (!c) { c = { used: {}, waiters: [], names: new Set() }; charges.set(key, c); }
          for (const n of names) { c.used[n] = (c.used[n] ?? parseQuantity(quotaStatus(state.get(key)!).used[n] ?? '') ?? 0) + 1; c.names.add(n); }
          c.waiters.push(w);
          this.opts.reservations.reserve(cluster, w.a.object!.metadata.uid ?? '', { groupResource: storageGroupResource(w.a.desc), namespace: w.a.namespace, name: w.a.name }, key, names);
        }
      }
      const conflicted: string[] = [];
      await Promise.all([...charges].map(async ([key, c]) => {
        const q = state.get(key)!;
        const status = quotaStatus(q);
        const used = { ...status.used };
        for (const n of c.names) used[n] = formatCount(c.used[n]!);
        const { namespace, name } = splitQuotaKey(key);
        const body = { ...structuredClone(q), status: { ...(q.status as object | undefined), hard: status.hard, used } };
        try {
          const res = await this.opts.quotas().update(this.opts.scope(cluster, namespace), name, body, 'status');
          const written = JSON.parse(res.json) as KubeObject;
          this.remember(key, written);
          state.set(key, written);
          for (const w of c.waiters) w.remaining.delete(key);
        } catch (err) {
          for (const w of c.waiters) this.opts.reservations.release(cluster, w.a.object!.metadata.uid ?? '', key, false);
          if (isStatus(err, 404)) {
            // The quota is gone: nothing to charge (kube skips removed quotas on retry).
            for (const w of c.waiters) w.remaining.delete(key);
          } else if (isStatus(err, 409)) {
            conflicted.push(key);
            lastConflict = err;
          } else {
            for (const w of c.waiters) this.finish(w, err);
          }
        }
      }));
      for (const w of batch) if (!w.done && !w.remaining.size) this.finish(w);
      if (!conflicted.length || batch.every((w) => w.done)) return;
      if (attempt >= MAX_STATUS_RETRIES) {
        for (const w of batch) this.finish(w, lastConflict);
        return;
      }
      // Re-read the quotas whose write conflicted, from storage (a consistent read).
      await Promise.all(conflicted.map(async (key) => {
        const { namespace, name } = splitQuotaKey(key);
        try {
          const fresh = JSON.parse(await this.opts.quotas().get(this.opts.scope(cluster, namespace), name)) as KubeObject;
          state.set(key, fresh);
          this.remember(key, fresh);
        } catch (err) {
          if (!isStatus(err, 404)) throw err;
          for (const w of batch) w.remaining.delete(key);
        }
      }));
      for (const w of batch) if (!w.done && !w.remaining.size) this.finish(w);
      // A quota whose status no longer names the object's resources does not apply any more.
      for (const w of batch) {
        if (w.done) continue;
        for (const key of w.remaining) if (!this.matches(state.get(key)!, w.names)) w.remaining.delete(key);
        if (!w.remaining.size) this.finish(w);
      }
    }
  }

  /** kube's admission.NewForbidden: `<resource> "<name>" is forbidden: <why>`. */
  private forbidden(a: WebhookAttributes, why: string): StatusError {
    const gr = a.desc.group ? `${a.desc.plural}.${a.desc.group}` : a.desc.plural;
    return new StatusError(403, 'Forbidden', `${gr} "${a.name}" is forbidden: ${why}`, { name: a.name, group: a.desc.group, kind: a.desc.plural });
  }
}
