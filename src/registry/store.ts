/**
 * The one generic REST store (modelled on kube-apiserver's
 * k8s.io/apiserver/pkg/registry/generic/registry/store.go): create, get, list, update, patch,
 * delete and deletecollection implemented once; each resource contributes a strategy
 * (apis/types.ts `ResourceStrategy`). Watch lives in ./watch.ts on the same cache.
 *
 * Reads of one object go to Redis (read-your-writes without waiting); lists are served from the
 * watch cache at a consistent revision (a list without resourceVersion first waits until the
 * cache has applied the shard's current revision, as kube's consistent reads from cache).
 */
import { randomUUID } from 'node:crypto';
import * as jsonPatch from 'rfc6902';
import jsonMergePatch from 'json-merge-patch';
import { StatusError, alreadyExists, badRequest, conflict, invalid, notFound, isStatus, type StatusCause } from '../apimachinery/errors.js';
import { apiVersionOf, nowRFC3339, type KubeObject, type ObjectMeta } from '../apimachinery/meta.js';
import { validateObjectMeta } from '../apimachinery/validation.js';
import { parseLabelSelector, matchesLabels, type LabelSelector } from '../apimachinery/labels.js';
import { parseFieldSelector, matchesFields, type FieldSelector } from '../apimachinery/fields.js';
import { duplicateFields } from '../apimachinery/duplicatefields.js';
import { decodeJSONPatchBody } from '../apimachinery/jsonsyntax.js';
import { MAX_NESTING_DEPTH, valueDeeperThan } from '../apimachinery/depth.js';
import { strategicMergePatch, BUILTIN_PATCH_META, OBJECT_META_PATCH_META } from '../apimachinery/strategicmerge.js';
import type { ResourceDescriptor, UpdateReset } from '../apis/types.js';
import { BUILTIN_SCHEMAS, definitionName } from '../apis/schemas/index.js';
import { FieldSet, applyConfiguration, resourceSchemaResolver, undeclaredFieldsError, updateManagedFields, updateManagedFieldsInStages, type SchemaResolver } from '../apimachinery/fieldmanager/index.js';
import { pruneUnknownFields, strictErrors, unknownFieldsError, unknownFieldsPatchError, type FieldValidationMode } from '../apimachinery/pruning.js';
import { ShardKeys } from '../storage/keys.js';
import type { UserInfo } from '../auth/user.js';
import type { CommitItem, RedisStorage, WriteResult } from '../storage/redis.js';
import type { CacheEntry, WatchCache } from '../storage/watchcache.js';
import { isObj } from '../apimachinery/objects.js';
import { STAGED_WRITE_BYTES, nextHeavyStage } from '../endpoints/slicing.js';
import { LRUCache } from 'lru-cache';

/** The authenticated caller (`user.Info`). */
export type { UserInfo };

/** Where and as whom a request runs. */
export interface RequestScope {
  /** Logical cluster name, or `*` for wildcard list/watch. */
  cluster: string;
  /** Namespace from the URL (namespaced resources), if any. */
  namespace?: string;
  user: UserInfo;
  /** `dryRun=All`: run admission and validation, persist nothing. */
  dryRun?: boolean;
  /** What to do with fields the schema does not know (default Warn, kube's server default). */
  fieldValidation?: FieldValidationMode;
  /** Collects `Warning` header texts for the response. */
  warnings?: string[];
  /** Records an annotation of the request's audit event (no-op without auditing). */
  audit?: (key: string, value: string) => void;
  /** Who makes the change, recorded in `metadata.managedFields` (server-side apply). */
  fieldManager?: string;
  /** Paths of keys the JSON body repeated (strict decoding's "duplicate field"). */
  duplicateFields?: string[];
  /**
   * For controllers of this server only (never set from a request): a create or an update of
   * the main resource keeps the object's `status` as given, so spec and status are written in
   * one revision (kube clients need two requests, the object then `/status`).
   */
  withStatus?: boolean;
  /**
   * Bytes of the request's body, set by the API handlers of create, update and patch (which decode
   * bodies with the nesting-depth limit). A write with a body, or a stored object, of at least
   * STAGED_WRITE_BYTES yields to the event loop between its stages.
   */
  bodyBytes?: number;
}

/** Query options of list (and watch), as `metav1.ListOptions`. */
/** One object of `Store.commit`: a create (body as for `create`) or an update (full object with its resourceVersion). */
export type TransactionItem =
  | { store: Store; scope: RequestScope; create: unknown; ifAbsent?: boolean }
  | { store: Store; scope: RequestScope; update: unknown };

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
  /**
   * Only objects passing this test (a virtual workspace's wildcard request: the objects of the
   * consumers that accepted a permission claim). Not a URL parameter.
   */
  restrict?: (e: CacheEntry) => boolean;
}

/** Body of a delete (`metav1.DeleteOptions`), the parts this server honours. */
export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  /** `Orphan`, `Background` (the default) or `Foreground` (see `gcFinalizersForDelete`). */
  propagationPolicy?: string;
  /** Deprecated: `true` is `Orphan`, `false` is `Background`; 422 together with `propagationPolicy`. */
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
}

/** Finalizer of an owner whose dependents are deleted before it (`metav1.FinalizerDeleteDependents`). */
export const FINALIZER_FOREGROUND = 'foregroundDeletion';
/** Finalizer of an owner whose dependents lose their ownerReferences to it (`metav1.FinalizerOrphanDependents`). */
export const FINALIZER_ORPHAN = 'orphan';

/**
 * The finalizers an object must carry after a delete with `opts`, as kube's generic registry
 * computes them (k8s.io/apiserver/pkg/registry/generic/registry/store.go
 * `deletionFinalizersForGarbageCollection`, `shouldOrphanDependents`, `shouldDeleteDependents`;
 * every resource here has the default policy "delete dependents"): the two garbage-collector
 * finalizers are dropped, then `orphan` is added when the options say Orphan (or
 * `orphanDependents: true`) — or, without a policy in the options, when the object already had it —
 * and `foregroundDeletion` likewise for Foreground. `changed` is false when the set is the same
 * (the returned list is then the current one).
 */
export function gcFinalizersForDelete(current: readonly string[] | undefined, opts: DeleteOptions): { changed: boolean; finalizers: string[] } {
  const now = current ?? [];
  let orphan: boolean; let foreground: boolean;
  if (opts.orphanDependents !== undefined && opts.orphanDependents !== null) {
    orphan = opts.orphanDependents; foreground = false;
  } else if (opts.propagationPolicy === 'Orphan' || opts.propagationPolicy === 'Background' || opts.propagationPolicy === 'Foreground') {
    orphan = opts.propagationPolicy === 'Orphan'; foreground = opts.propagationPolicy === 'Foreground';
  } else {
    // No policy given: an existing finalizer decides (the first of the two found wins).
    const first = now.find((f) => f === FINALIZER_ORPHAN || f === FINALIZER_FOREGROUND);
    orphan = first === FINALIZER_ORPHAN; foreground = first === FINALIZER_FOREGROUND;
  }
  const next = now.filter((f) => f !== FINALIZER_ORPHAN && f !== FINALIZER_FOREGROUND);
  if (orphan) next.push(FINALIZER_ORPHAN);
  if (foreground) next.push(FINALIZER_FOREGROUND);
  const same = new Set(now).size === new Set(next).size && next.every((f) => now.includes(f));
  return same ? { changed: false, finalizers: [...now] } : { changed: true, finalizers: next };
}

/** A list result: entries at one revision. */
export interface ListResult {
  items: CacheEntry[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/** Result of a delete: the object removed now, or its state while finalizers run. */
export interface DeleteResult {
  deleted: boolean;
  json: string;
}

/** Patch content types (`types.PatchType`). */
export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

const OBJECT_META_SCHEMA = BUILTIN_SCHEMAS['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!;

const GENERATE_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
function generateSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += GENERATE_CHARS[Math.floor(Math.random() * GENERATE_CHARS.length)];
  return s;
}

/** A continue token: the list's revision (0: the latest, after the first one expired) and the last key served. */
interface ContinueToken { rv: number; start: string }

/**
 * kube's message for a continue token whose revision left the history
 * (k8s.io/apiserver/pkg/storage/errors.go), answered with a token to go on inconsistently.
 */
const CONTINUE_EXPIRED = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString()) as ContinueToken;
    if (typeof t.rv !== 'number' || typeof t.start !== 'string') throw new Error('shape');
    return t;
  } catch {
    throw badRequest('invalid continue token');
  }
}

function parseRevision(rv: string, what = 'resourceVersion'): number {
  // Beyond 2^53 a number would be rounded (kube refuses what overflows its uint64 alike).
  if (!/^\d+$/.test(rv) || !Number.isSafeInteger(Number(rv))) throw badRequest(`invalid ${what}: "${rv}"`);
  return Number(rv);
}

/** The stored revision of a JSON object, read without a full parse. */
export function revisionOf(json: string): string {
  const at = json.indexOf('"resourceVersion":"');
  const start = at + '"resourceVersion":"'.length;
  return json.slice(start, json.indexOf('"', start));
}

function deepClone<T>(v: T): T { return structuredClone(v); }

/** Objects decoded from a stored JSON of at least STAGED_WRITE_BYTES (see {@link largeWrite}). */
const largeStored = new WeakSet<KubeObject>();

/**
 * Whether a write runs in stages, yielding to the event loop between them (STAGED_WRITE_BYTES):
 * its body or the stored object it changes is large.
 */
function largeWrite(scope: RequestScope, stored?: KubeObject | null): boolean {
  return (scope.bodyBytes ?? 0) >= STAGED_WRITE_BYTES || (stored != null && largeStored.has(stored));
}

/**
 * Gives the event loop a turn before the next stage of a large write ({@link largeWrite}); nothing
 * to wait for (undefined) for a small one.
 */
function nextStage(large: boolean): Promise<void> | undefined {
  return large ? nextHeavyStage() : undefined;
}

/** Shared backend of all stores of a shard. */
export interface StoreBackend {
  storage: RedisStorage;
  cache: WatchCache;
  /** Checks a namespace can take new objects (exists, not terminating); throws a Status otherwise. */
  checkNamespace(cluster: string, namespace: string): Promise<void>;
  /**
   * Admission (src/admission/index.ts `chainAdmission`): built-in plugins, admission policies and
   * webhooks, run on every create, update, patch and delete; none when absent.
   */
  admission?: WebhookAdmission;
  /**
   * Objects born with a created one (a create request, not apply or dry run): its initial status
   * and other objects of the shard written in the same atomic transaction (Store.commit), e.g. a
   * LogicalCluster created by another shard's workspace scheduler is created already initialized
   * with the owner's binding and its built-in initializers' objects, as kcp's scheduler and
   * initializers would leave it. Undefined: a plain create.
   */
  initialContent?(desc: ResourceDescriptor, obj: KubeObject, attrs: { cluster: string; user: UserInfo }): { status: Record<string, unknown>; content: TransactionItem[] } | undefined;
}

/** What a dynamic admission step sees of a write (kube's admission.Attributes for webhooks). */
export interface WebhookAttributes {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  cluster: string;
  desc: ResourceDescriptor;
  subresource: string;
  namespace: string;
  name: string;
  user: UserInfo;
  /** The object to write (CREATE, UPDATE). */
  object?: KubeObject;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: KubeObject;
  dryRun: boolean;
  /** Collects `Warning` texts for the response. */
  warnings?: string[];
  /** Records an annotation of the request's audit event. */
  audit?: (key: string, value: string) => void;
}

/**
 * Dynamic admission after the resource's own admission (src/admission/webhooks.ts): `mutate`
 * before schema validation (resolves to the object to continue with), `validate` after it; both
 * reject with the StatusError to answer. `release` is told of a create that `validate` admitted
 * and that was then not written (AlreadyExists, a missing namespace, a failed transaction), so
 * that what admission charged for it (ResourceQuota's in-flight reservation) is given back at
 * once instead of when a timeout finds it; it must not throw.
 */
export interface WebhookAdmission {
  mutate(a: WebhookAttributes): Promise<KubeObject | undefined>;
  validate(a: WebhookAttributes): Promise<void>;
  release?(a: WebhookAttributes): void;
}

/** Maximum optimistic-concurrency retries of a patch or internal update. */
const MAX_RETRIES = 10;

/**
 * Attempts of an update without a resourceVersion (kube's GuaranteedUpdate retries those without
 * a limit, until the request's deadline). Every round of concurrent writers to one object lets
 * one through, and priority and fairness bounds how many run at once (49 seats in
 * global-default), so 100 rounds outlast any such crowd while a request still cannot loop forever.
 */
const MAX_UNCONDITIONAL_UPDATE_RETRIES = 100;

/**
 * Where a resource's objects are stored: the storage location's group and plural (a resource
 * stored with another, e.g. events.k8s.io Events with core Events), with a bound resource's
 * export identity (`<plural>:<identity>`).
 */
export function storageKeyOf(desc: Pick<ResourceDescriptor, 'group' | 'plural' | 'storage' | 'identity'>): { group: string; resource: string } {
  const stored = desc.storage ?? { group: desc.group, plural: desc.plural };
  return { group: stored.group, resource: desc.identity ? `${stored.plural}:${desc.identity}` : stored.plural };
}

/** The watch cache's group/resource of a resource's objects (`Store.groupResource`): `core` for the core group. */
export function storageGroupResource(desc: Pick<ResourceDescriptor, 'group' | 'plural' | 'storage' | 'identity'>): string {
  const key = storageKeyOf(desc);
  return `${key.group || 'core'}/${key.resource}`;
}

/** Objects per storage transaction of `Store.deleteCached`. */
export const DELETE_BATCH = 500;

/**
 * Budget of the shard's cache of cached entries as served after defaulting on read (see
 * `ResourceDescriptor.readDefaults`): 64 Mi UTF-16 code units of JSON, the served form and the
 * stored entry's JSON it keeps alive both counted. Least recently read entries are evicted and
 * defaulted again on their next read (linear in the object, as kube defaults on every decode), so
 * a tenant whose schema defaults large values costs the shard at most this much memory.
 */
export const READ_DEFAULTED_CACHE_UNITS = 64 * 1024 * 1024;

/**
 * Served JSON of entries that defaulting on read changed, with the store (one version, one
 * generation of its CRD) that rendered it: a store reading an entry rendered by another renders
 * and replaces it, so a CRD change invalidates what the previous generation rendered.
 */
const readDefaulted = new LRUCache<CacheEntry, { store: Store; json: string }>({
  maxSize: READ_DEFAULTED_CACHE_UNITS,
  sizeCalculation: (v, e) => v.json.length + e.json.length,
});

/** Generic REST store of one resource. */
export class Store {
  readonly groupResource: string;
  private readonly gr: { group: string; resource: string };
  /** Where objects are stored: the resource itself, or the one it shares storage with. */
  private readonly storageKey: { group: string; resource: string };
  /** OpenAPI schema of the kind, for pruning unknown fields. */
  private readonly schema: object | undefined;
  /** Field structure of the kind for managedFields (list types, map types, merge keys). */
  private readonly fields: SchemaResolver | undefined;
  private readonly patchMeta;
  /** kube's `GetResetFields` of the main resource: what the main resource's reset takes from the stored object. */
  private readonly resetFields: FieldSet | undefined;

  constructor(readonly desc: ResourceDescriptor, private readonly backend: StoreBackend) {
    this.storageKey = storageKeyOf(desc);
    this.groupResource = `${this.storageKey.group || 'core'}/${this.storageKey.resource}`;
    this.gr = { group: desc.group, resource: desc.plural };
    this.schema = desc.schema ?? BUILTIN_SCHEMAS[definitionName(desc.group, desc.version, desc.kind)];
    this.fields = desc.virtual ? undefined : resourceSchemaResolver(desc);
    this.patchMeta = desc.patchMeta ?? BUILTIN_PATCH_META[`${desc.group}/${desc.kind}`] ?? OBJECT_META_PATCH_META;
    const main = resetFor(desc, '').reset;
    this.resetFields = main?.base === 'request' && main.fromStored.length ? FieldSet.of(...main.fromStored.map((p) => p.split('.').map((field) => ({ field })))) : undefined;
  }

  /** Storage key of a name in a scope. */
  objectKey(scope: RequestScope, name: string): string {
    return ShardKeys.objectKey(this.storageKey, scope.cluster, this.desc.namespaced ? scope.namespace : undefined, name);
  }

  private get apiVersion(): string { return apiVersionOf(this.desc.group, this.desc.version); }

  /**
   * Stored JSON parsed, with the defaults on read applied (`ResourceDescriptor.readDefaults`);
   * `changed` says whether they set anything. Not converted to the served version. An object
   * whose defaults would exceed the defaulting budget (a 413 from the schema,
   * apiextensions/schema.ts `MAX_DEFAULTED_CHARS`) is served as stored: a tenant's schema must not
   * make its objects unreadable, nor grow one without bound (its next write answers the 413).
   */
  private parseStored(json: string): { obj: KubeObject; changed: boolean } {
    const obj = JSON.parse(json) as KubeObject;
    const readDefaults = this.desc.readDefaults;
    if (!readDefaults) return { obj, changed: false };
    try {
      return { obj, changed: readDefaults(obj) };
    } catch (err) {
      if (err instanceof StatusError && err.code === 413) return { obj: JSON.parse(json) as KubeObject, changed: false };
      throw err;
    }
  }

  /**
   * Stored JSON as this resource serves it: unchanged, or defaulted on read and/or converted from
   * the storage version when the resource shares storage with another (events.k8s.io Events are
   * core Events). Resources converted by a webhook convert asynchronously: see `prepare` and
   * `renderEntry`. Not cached: cached entries go through `renderEntry`.
   */
  render(json: string): string {
    const conv = this.desc.storage;
    if (conv?.webhook) return JSON.stringify(this.decode(json));
    if (!conv && !this.desc.readDefaults) return json;
    const { obj, changed } = this.parseStored(json);
    if (!conv) return changed ? JSON.stringify(obj) : json;
    return JSON.stringify(conv.fromStorage(obj));
  }

  /**
   * Stored (or served) JSON as this resource serves it, parsed (defaulted on read). Throws an
   * Error for an object that needs a conversion webhook (a programming error: those are read
   * through `prepare`).
   */
  decode(json: string): KubeObject {
    const { obj } = this.parseStored(json);
    const conv = this.desc.storage;
    if (!conv) return obj;
    if (!conv.webhook) return conv.fromStorage(obj);
    if (obj.apiVersion !== this.apiVersion) throw new Error(`${this.desc.kind} ${obj.metadata?.name ?? ''} needs its conversion webhook: read it through prepare()`);
    return obj;
  }

  /**
   * Cached entries whose stored JSON already has every default this store applies on read: served
   * without parsing again (weak: an entry leaves with the watch cache's last reference to it; a
   * CRD change makes new stores, so a schema with new defaults looks at every entry once more).
   */
  private readonly defaultsComplete = new WeakSet<CacheEntry>();

  /**
   * A cached entry as served by a store that defaults on read and converts without a webhook:
   * rendered once per entry and store, kept in {@link readDefaulted} when defaulting changed it,
   * remembered in {@link defaultsComplete} when it did not. Never written back to storage.
   */
  private renderDefaulted(e: CacheEntry): string {
    const conv = this.desc.storage;
    if (this.defaultsComplete.has(e)) return conv ? JSON.stringify(conv.fromStorage(JSON.parse(e.json) as KubeObject)) : e.json;
    const cached = readDefaulted.get(e);
    if (cached?.store === this) return cached.json;
    const { obj, changed } = this.parseStored(e.json);
    if (!changed) {
      this.defaultsComplete.add(e);
      return conv ? JSON.stringify(conv.fromStorage(obj)) : e.json;
    }
    const json = JSON.stringify(conv ? conv.fromStorage(obj) : obj);
    readDefaulted.set(e, { store: this, json });
    return json;
  }

  /**
   * Converted forms of cache entries (resources converted by a webhook): the served JSON, or
   * the conversion in flight (shared by concurrent readers). A changed object is a new entry.
   */
  private readonly converted = new WeakMap<CacheEntry, string | Promise<string>>();

  /**
   * Makes the served form of cached entries available to `renderEntry`/`decodeEntry`: the
   * entries not converted yet go to the conversion webhook in one ConversionReview. Undefined
   * (nothing to wait for) unless this resource converts through a webhook and some entry is
   * not converted yet. Rejects with the conversion's StatusError (500).
   */
  prepare(entries: readonly CacheEntry[]): Promise<void> | undefined {
    const webhook = this.desc.storage?.webhook;
    if (!webhook) return undefined;
    const waits: Promise<string>[] = [];
    const missing: CacheEntry[] = [];
    for (const e of entries) {
      const c = this.converted.get(e);
      if (c === undefined) missing.push(e);
      else if (typeof c !== 'string') waits.push(c);
    }
    if (missing.length) {
      // Defaulted on read with the schema of the version they are stored in, then converted.
      const stored = missing.map((e) => this.parseStored(e.json));
      const parsed = stored.map((p) => p.obj);
      // Objects already in the served version come back as they are: their stored JSON is served
      // unless defaulting on read changed it.
      const batch = webhook.converter.convert(parsed, this.apiVersion)
        .then((objs) => objs.map((o, i) => (o === parsed[i] && !stored[i]!.changed ? missing[i]!.json : JSON.stringify(o))));
      missing.forEach((e, i) => {
        const p = batch.then((jsons) => { this.converted.set(e, jsons[i]!); return jsons[i]!; });
        p.catch(() => { if (this.converted.get(e) === p) this.converted.delete(e); });
        this.converted.set(e, p);
        waits.push(p);
      });
    }
    return waits.length ? Promise.all(waits).then(() => undefined) : undefined;
  }

  /** A cached entry as this resource serves it (after `prepare` for webhook-converted resources). */
  renderEntry(e: CacheEntry): string {
    if (!this.desc.storage?.webhook) return this.desc.readDefaults ? this.renderDefaulted(e) : this.render(e.json);
    const c = this.converted.get(e);
    if (typeof c !== 'string') throw new Error(`${this.desc.kind} ${e.name}: read before its conversion (prepare first)`);
    return c;
  }

  /** A cached entry as this resource serves it, parsed (after `prepare`, as `renderEntry`). */
  decodeEntry(e: CacheEntry): KubeObject {
    return this.desc.storage?.webhook || this.desc.readDefaults ? JSON.parse(this.renderEntry(e)) as KubeObject : this.decode(e.json);
  }

  /** Stored objects converted to the served version (one webhook call for all when converted by a webhook). */
  private async fromStorage(objs: KubeObject[]): Promise<KubeObject[]> {
    const conv = this.desc.storage;
    if (!conv) return objs;
    if (conv.webhook) return conv.webhook.converter.convert(objs, this.apiVersion);
    return objs.map((o) => conv.fromStorage(o));
  }

  /** An object of the served version converted to the storage version. */
  private async toStorage(obj: KubeObject): Promise<KubeObject> {
    const conv = this.desc.storage;
    if (!conv) return obj;
    if (conv.webhook) return (await conv.webhook.converter.convert([obj], conv.webhook.storageAPIVersion))[0]!;
    return conv.toStorage(obj);
  }

  /**
   * Objects of this resource's version converted to the version `target` serves, through the
   * storage version they share (kube's equivalent resources: another version of the resource, or
   * another group stored in the same place). Rejects with a conversion webhook's StatusError.
   */
  async convertTo(objs: KubeObject[], target: Store): Promise<KubeObject[]> {
    if (target === this) return objs;
    const stored: KubeObject[] = [];
    for (const o of objs) stored.push(await this.toStorage(o));
    return target.fromStorage(stored);
  }

  private async readCurrent(key: string): Promise<KubeObject | null> {
    const json = await this.backend.storage.get(key);
    if (json === null) return null;
    const large = json.length >= STAGED_WRITE_BYTES;
    await nextStage(large);
    const obj = this.desc.storage?.webhook ? (await this.fromStorage([this.parseStored(json).obj]))[0]! : this.decode(json);
    if (large) largeStored.add(obj);
    return obj;
  }

  /**
   * The object an update starts from. With a resourceVersion precondition that is the object at
   * that revision: when the watch cache holds exactly that version it saves the Redis read (if
   * Redis has moved on, the write script's revision check refuses the write with a conflict, as
   * the read would have). Null when it does not exist.
   */
  private async readBase(scope: RequestScope, key: string, name: string, precondition: string | undefined): Promise<KubeObject | null> {
    const cached = precondition ? this.backend.cache.getEntry(this.groupResource, scope.cluster, this.desc.namespaced ? scope.namespace ?? '' : '', name) : undefined;
    if (!cached || String(cached.rv) !== precondition) return this.readCurrent(key);
    const converting = this.prepare([cached]);
    if (converting) await converting;
    const large = cached.json.length >= STAGED_WRITE_BYTES;
    await nextStage(large);
    const obj = this.decodeEntry(cached);
    if (large) largeStored.add(obj);
    return obj;
  }

  /**
   * Writes the object in the storage version; the answer is the stored JSON as this resource
   * serves it. With a conversion webhook that is the written object with the stored metadata
   * (the webhook may not change metadata other than labels and annotations, which were sent
   * as they are): the write is not followed by a conversion that could fail after it landed.
   */
  private async persist(op: 'create' | 'update' | 'delete', key: string, obj: KubeObject, expectedRv?: string): Promise<WriteResult> {
    const conv = this.desc.storage;
    const res = await this.backend.storage.write(op, key, conv ? await this.toStorage(obj) : obj, expectedRv);
    // The answer is the object as read back from storage: defaulted on read too (kube decodes
    // what etcd returned with the storage codec).
    if (!res.ok || (!conv && !this.desc.readDefaults)) return res;
    if (!conv?.webhook) return { ...res, json: this.render(res.json) };
    return { ...res, json: JSON.stringify({ ...obj, metadata: (JSON.parse(res.json) as KubeObject).metadata }) };
  }

  /**
   * Throws 400 unless the body is an object of this kind (apiVersion/kind may be omitted).
   * `decoded`: the body is the request's, decoded with the nesting-depth limit (RequestScope.bodyBytes),
   * whose depth is not walked again.
   */
  checkBody(body: unknown, scope: RequestScope, decoded = false): KubeObject {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the body of the request must be a JSON or YAML object');
    // A patch may deepen an object one level per request: the limit holds for what is stored too.
    if (!decoded && valueDeeperThan(body)) throw badRequest(`the object is nested deeper than ${MAX_NESTING_DEPTH} levels`);
    const obj = body as KubeObject;
    if (obj.kind !== undefined && obj.kind !== this.desc.kind) {
      throw badRequest(`the kind of the provided object "${String(obj.kind)}" does not match the expected kind "${this.desc.kind}"`);
    }
    if (obj.apiVersion !== undefined && obj.apiVersion !== this.apiVersion) {
      throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${this.apiVersion})`);
    }
    if (obj.metadata === undefined) obj.metadata = {};
    if (typeof obj.metadata !== 'object' || obj.metadata === null || Array.isArray(obj.metadata)) throw badRequest('metadata must be an object');
    obj.apiVersion = this.apiVersion;
    obj.kind = this.desc.kind;
    if (this.desc.namespaced) {
      if (obj.metadata.namespace && scope.namespace && obj.metadata.namespace !== scope.namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      if (scope.namespace) obj.metadata.namespace = scope.namespace;
    }
    return obj;
  }

  /**
   * Drops fields the schema does not know, as kube-apiserver's typed decoding does, and applies
   * `fieldValidation`: Strict fails with `strictError`, Warn adds `Warning` texts, Ignore is silent
   * (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation).
   */
  private prune(obj: KubeObject, scope: RequestScope, strictError: (errors: string[]) => StatusError): void {
    const paths = this.dropUnknownFields(obj);
    const duplicates = scope.duplicateFields ?? [];
    if (!paths.length && !duplicates.length) return;
    const mode = scope.fieldValidation ?? 'Warn';
    if (mode === 'Ignore') return;
    const errors = strictErrors(paths, duplicates);
    if (mode === 'Strict') throw strictError(errors);
    scope.warnings?.push(...errors);
  }

  /**
   * Drops the fields the kind's schema does not know, in place; returns their paths. Custom
   * resources: metadata is pruned as for every kind, the rest by the CRD schema, which also
   * defaults (the strategy's `normalize`).
   */
  private dropUnknownFields(obj: KubeObject): string[] {
    const normalize = this.desc.strategy?.normalize;
    if (normalize) return [...pruneUnknownFields(obj.metadata, OBJECT_META_SCHEMA, BUILTIN_SCHEMAS).map((p) => `metadata.${p}`), ...normalize(obj)];
    return this.schema ? pruneUnknownFields(obj, this.schema, BUILTIN_SCHEMAS) : [];
  }

  /**
   * kube's defaulting of the kind (`ResourceStrategy.defaults`), in place. kube runs it in the
   * decoder, so it is called here for every object a write is about to store: the body of a create
   * (also server-side apply's merged result and a create-on-update), the object an update, a patch
   * of any type or a subresource write computed (before the subresource's reset rules), and what a
   * mutating admission step returned.
   */
  private applyDefaults(obj: KubeObject): void {
    this.desc.strategy?.defaults?.(obj);
  }

  /**
   * Records the fields a create/update/patch changed as owned by the request's field manager
   * (`metadata.managedFields`, operation Update), as kube-apiserver's field manager does; a large
   * write gives the event loop a turn between the field manager's stages.
   */
  private async trackUpdate(old: KubeObject | undefined, next: KubeObject, scope: RequestScope, large: boolean, subresource = ''): Promise<void> {
    if (!this.fields) return;
    if (old && next.metadata.managedFields === undefined) next.metadata.managedFields = old.metadata.managedFields;
    const manager = scope.fieldManager ?? 'unknown';
    next.metadata.managedFields = large
      ? await updateManagedFieldsInStages(old, next, manager, this.fields, subresource, nextHeavyStage)
      : updateManagedFields(old, next, manager, this.fields, subresource);
    if (!next.metadata.managedFields.length) delete next.metadata.managedFields;
  }

  /**
   * Server-side apply (`application/apply-patch+yaml`): merges the applied configuration into
   * the live object (or creates it) with field ownership; 409 Conflict naming the other managers
   * unless `force` (https://kubernetes.io/docs/reference/using-api/server-side-apply/).
   *
   * Field validation as kube's apply patcher (apiserver handlers/patch.go applyPatcher): keys the
   * schema does not declare always fail (400 `failed to create typed patch object …: .x: field
   * not declared in schema`, `undeclaredFieldsError`); `yamlStrictErrors` — the repeated keys of
   * the body (`line 9: key "foo" already set in map`, from `decodeApplyPatch`), whose last value
   * was applied — are judged once the configuration merged without conflict: Strict fails with
   * 400 `error strict decoding YAML: …`, Warn (the default) adds one warning each, Ignore is silent.
   */
  async apply(
    scope: RequestScope, name: string, config: unknown, force: boolean, yamlStrictErrors: readonly string[] = [],
  ): Promise<{ json: string; created: boolean }> {
    if (!this.fields) throw new StatusError(415, 'UnsupportedMediaType', `server-side apply is not supported for ${this.desc.kind}`);
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw badRequest('the applied configuration must be an object');
    const cfg = config as KubeObject;
    if (!cfg.apiVersion || !cfg.kind) throw badRequest('apiVersion and kind are required in an applied configuration');
    // Judged on the configuration as sent (its namespace and name are in the message).
    const undeclared = undeclaredFieldsError(cfg, this.fields);
    const applyCfg = this.checkBody(cfg, scope, scope.bodyBytes !== undefined);
    if (applyCfg.metadata.name !== undefined && applyCfg.metadata.name !== name) {
      throw badRequest(`the name of the object (${String(applyCfg.metadata.name)}) does not match the name on the URL (${name})`);
    }
    if (undeclared) throw undeclared;
    applyCfg.metadata.name = name;
    // What the typed check let through and the pruner still drops (a schema the two read
    // differently) stays an error: nothing applied is silently lost.
    this.prune(applyCfg, { ...scope, fieldValidation: 'Strict' }, (errors) => unknownFieldsPatchError(errors, 'merge', applyCfg));
    const key = this.objectKey(scope, name);
    const manager = scope.fieldManager!;
    for (let attempt = 0; ; attempt++) {
      const live = await this.readCurrent(key);
      const merged = applyConfiguration(live ?? undefined, structuredClone(applyCfg), manager, force, this.fields, (o) => this.applyDefaults(o), this.resetFields);
      if (attempt === 0) this.judgeYamlStrictErrors(yamlStrictErrors, scope);
      await nextStage(largeWrite(scope, live));
      try {
        if (!live) return { json: await this.create(scope, merged, true), created: true };
        return { json: await this.applyUpdate(scope, key, live, merged, undefined, applyCfg.metadata.resourceVersion, true), created: false };
      } catch (err) {
        const retriable = err instanceof StatusError && ((err.code === 409 && err.reason === 'Conflict' && !err.details?.causes?.length) || err.reason === 'AlreadyExists');
        if (retriable && !applyCfg.metadata.resourceVersion && attempt < MAX_RETRIES) continue;
        throw err;
      }
    }
  }

  /**
   * `fieldValidation` on the strict-decoding errors of an apply body (`yamlStrictErrors`, see
   * `apply`): Strict throws 400 `error strict decoding YAML: error converting YAML to JSON: yaml:
   * unmarshal errors:\n  line 9: key "foo" already set in map`, Warn adds each as a warning
   * (apiserver handlers/patch.go applyPatcher, rest.go addStrictDecodingWarnings).
   */
  private judgeYamlStrictErrors(yamlStrictErrors: readonly string[], scope: RequestScope): void {
    if (!yamlStrictErrors.length) return;
    const mode = scope.fieldValidation ?? 'Warn';
    if (mode === 'Strict') {
      throw badRequest(`error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  ${yamlStrictErrors.join('\n  ')}`);
    }
    if (mode === 'Warn') scope.warnings?.push(...yamlStrictErrors);
  }

  private validate(obj: KubeObject, old?: KubeObject): void {
    const causes: StatusCause[] = validateObjectMeta(obj.metadata, this.desc.namespaced, this.desc.strategy?.nameRule ?? 'dns1123Subdomain');
    const s = this.desc.strategy;
    const typeCauses = s ? (old ? (s.validateUpdate?.(obj, old) ?? s.validate?.(obj) ?? []) : (s.validate?.(obj) ?? [])) : [];
    // A name already refused by the object-meta rules is not refused again by a schema's
    // pattern on metadata.name (kcp's Workspace has one): one error per field says it.
    const metaFields = new Set(causes.map((c) => c.field));
    causes.push(...typeCauses.filter((c) => !(c.field === 'metadata.name' || c.field === 'metadata.generateName') || !metaFields.has(c.field)));
    if (old) {
      if (obj.metadata.name !== old.metadata.name) causes.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: 'field is immutable' });
    }
    if (causes.length) throw invalid(this.desc.kind, this.desc.group, obj.metadata.name ?? obj.metadata.generateName ?? '', causes);
  }

  /** Create (POST). Returns the stored JSON (or, with dryRun, the object that would be stored). */
  async create(scope: RequestScope, body: unknown, applied = false): Promise<string> {
    const initial = applied || scope.dryRun || !isObj(body) ? undefined : this.backend.initialContent?.(this.desc, body as KubeObject, { cluster: scope.cluster, user: scope.user });
    if (initial) {
      // Born with its initial status and content, in one transaction (StoreBackend.initialContent).
      const written = await Store.commit([...initial.content, { store: this, scope: { ...scope, withStatus: true }, create: { ...(body as KubeObject), status: initial.status } }]);
      return written[initial.content.length]!;
    }
    const { obj, generated, release } = await this.prepareCreate(scope, body, applied);
    const meta = obj.metadata;
    await nextStage(largeWrite(scope));
    if (scope.dryRun) return JSON.stringify(obj);
    try {
      for (let attempt = 0; ; attempt++) {
        const res = await this.persist('create', this.objectKey(scope, meta.name!), obj);
        if (res.ok) return res.json;
        if (generated && attempt < 5) { meta.name = meta.generateName + generateSuffix(); continue; }
        throw alreadyExists(this.gr, meta.name!);
      }
    } catch (err) {
      release();
      throw err;
    }
  }

  /**
   * Everything a create does before writing: decoding checks, pruning, names, system metadata,
   * strategy, admission, validation, the namespace check (unless `namespaceKnown`), managedFields.
   * `release` tells admission that the admitted object was not written after all
   * (WebhookAdmission.release); a failure here after admission has called it already.
   */
  private async prepareCreate(scope: RequestScope, body: unknown, applied = false, namespaceKnown = false): Promise<{ obj: KubeObject; generated: boolean; release: () => void }> {
    const large = largeWrite(scope);
    const obj = this.checkBody(body, scope, !applied && scope.bodyBytes !== undefined);
    this.prune(obj, scope, (errors) => unknownFieldsError(errors, this.desc.kind, this.desc.version));
    await nextStage(large);
    this.applyDefaults(obj);
    const meta = obj.metadata;
    if (!meta.name && !meta.generateName) {
      throw invalid(this.desc.kind, this.desc.group, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
    }
    const generated = !meta.name;
    if (generated) meta.name = meta.generateName + generateSuffix();
    this.prepareMetaForCreate(meta);
    if (this.desc.strategy?.tracksGeneration) meta.generation = 1;
    if (scope.withStatus && this.desc.hasStatus) {
      const status = obj.status;
      this.desc.strategy?.prepareForCreate?.(obj);
      obj.status = status;
    } else {
      // A client's create never sets status where /status is served: every kube strategy of such
      // a kind (and custom resources') resets it in PrepareForCreate; the kind's own
      // prepareForCreate may then give it an initial status (a Namespace's phase Active).
      if (this.desc.hasStatus) delete obj.status;
      this.desc.strategy?.prepareForCreate?.(obj);
    }
    const hooks = this.backend.admission;
    const attrs = (object: KubeObject): WebhookAttributes => ({
      operation: 'CREATE', cluster: scope.cluster, desc: this.desc, subresource: '', namespace: meta.namespace ?? '', name: meta.name!,
      user: scope.user, object, dryRun: Boolean(scope.dryRun), warnings: scope.warnings, audit: scope.audit,
    });
    const admitted = hooks ? this.keepSystemMeta(obj, await hooks.mutate(attrs(obj))) : obj;
    await nextStage(large);
    this.validate(admitted);
    if (hooks) await hooks.validate(attrs(admitted));
    let released = false;
    const release = () => {
      if (released || !hooks?.release) return;
      released = true;
      hooks.release(attrs(admitted));
    };
    try {
      if (this.desc.namespaced && !namespaceKnown) await this.backend.checkNamespace(scope.cluster, meta.namespace!);
      await nextStage(large);
      if (!applied) await this.trackUpdate(undefined, admitted, scope, large);
    } catch (err) {
      release();
      throw err;
    }
    return { obj: admitted, generated, release };
  }

  /**
   * The object a mutating webhook returned, with what the server owns put back as it was before
   * (name, namespace, uid, creation time, resourceVersion, generation, deletion): a webhook may
   * change labels, annotations, spec and so on, not the object's identity. Fields the schema does
   * not know are dropped silently, and a custom resource defaulted again, as kube decodes a
   * webhook's patched object with the resource's codec (webhook.go "should mutate custom
   * resource with pruning").
   */
  private keepSystemMeta(before: KubeObject, after: KubeObject | undefined): KubeObject {
    if (!after || after === before) return before;
    const b = before.metadata; const m = (after.metadata ??= {});
    for (const k of ['name', 'namespace', 'uid', 'creationTimestamp', 'resourceVersion', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generateName'] as const) {
      if (b[k] === undefined) delete m[k]; else (m as Record<string, unknown>)[k] = b[k];
    }
    after.apiVersion = before.apiVersion; after.kind = before.kind;
    // What admission returns is decoded again, as kube decodes a webhook's patched object: pruned and defaulted.
    this.dropUnknownFields(after);
    this.applyDefaults(after);
    return after;
  }

  /**
   * Writes several objects, of any stores of one shard, in one atomic transaction (a unit of work
   * such as a new logical cluster, its initial content and the Workspace pointing at it):
   *
   * - `create`: prepared exactly as by `create` (a namespaced object whose Namespace is created
   *   in the same transaction skips the namespace check); names are required. With `ifAbsent` an
   *   existing object is left as it is, else it fails the transaction (409 AlreadyExists);
   * - `update`: a full object carrying the resourceVersion it was read at, prepared exactly as by
   *   `update` (with the scope's `withStatus`, spec and status); fails the transaction with 409
   *   Conflict when the object changed, 404 when it is gone. An update that changes nothing is
   *   not written.
   *
   * Either everything is written (each object with its own revision and event, in order) or
   * nothing: the StatusError of the first failing item is thrown, as are invalid objects,
   * before anything is written. Returns, per item, the stored JSON (`undefined` for a skipped
   * create). Stores must not convert storage versions.
   */
  static async commit(items: ReadonlyArray<TransactionItem>): Promise<Array<string | undefined>> {
    if (!items.length) return [];
    const newNamespaces = new Set(items.filter((i) => 'create' in i && i.store.groupResource === 'core/namespaces')
      .map((i) => `${i.scope.cluster}/${((i as { create: unknown }).create as KubeObject).metadata?.name ?? ''}`));
    const ops: CommitItem[] = [];
    /** Per item: its index in `ops`, or the stored JSON of an update that changes nothing (not sent). */
    const sent: Array<number | string> = [];
    /** Per op index of a create: tells admission that its object was not written. */
    const releases = new Map<number, () => void>();
    try {
      return await Store.commitPrepared(items, newNamespaces, ops, sent, releases);
    } catch (err) {
      for (const release of releases.values()) release();
      throw err;
    }
  }

  /** `commit` past its set-up: prepares every item, writes them; creates not written are released. */
  private static async commitPrepared(items: ReadonlyArray<TransactionItem>, newNamespaces: Set<string>, ops: CommitItem[], sent: Array<number | string>, releases: Map<number, () => void>): Promise<Array<string | undefined>> {
    for (const item of items) {
      const { store, scope } = item;
      if (store.desc.storage) throw new Error(`commit: ${store.desc.kind} converts its storage version`);
      if ('create' in item) {
        const body = item.create;
        const ns = store.desc.namespaced ? (scope.namespace ?? (body as KubeObject).metadata?.namespace ?? '') : '';
        const { obj, generated, release } = await store.prepareCreate(scope, body, false, newNamespaces.has(`${scope.cluster}/${ns}`));
        const index = ops.push({ op: 'create', objectKey: store.objectKey(scope, obj.metadata.name!), obj, ifAbsent: item.ifAbsent }) - 1;
        releases.set(index, release);
        if (generated) throw new Error('commit: objects need a name');
        sent.push(index);
        continue;
      }
      const next = store.checkBody(item.update, scope);
      const name = next.metadata.name;
      const precondition = next.metadata.resourceVersion;
      if (!name || !precondition) throw new Error('commit: an update needs the name and resourceVersion it was read at');
      const key = store.objectKey(scope, name);
      const old = await store.readBase(scope, key, name, precondition);
      if (!old) throw notFound(store.gr, name);
      const u = await store.prepareUpdate(scope, old, next, undefined, precondition);
      if (u.action === 'delete') throw new Error('commit: an update may not complete a deletion');
      sent.push(u.action === 'none' ? JSON.stringify(old) : ops.push({ op: 'update', objectKey: key, obj: u.merged, expectedRv: u.oldRv }) - 1);
    }
    const res = await items[0]!.store.backend.storage.commit(ops);
    if (!res.ok) {
      const failed = items[sent.indexOf(res.index)]!;
      throw failed.store.writeFailure(res.reason, ops[res.index]!.obj.metadata.name!);
    }
    // A create skipped because its object exists (`ifAbsent`) was not written either.
    for (const [index, release] of releases) if (res.written[index] === undefined) release();
    return sent.map((s) => (typeof s === 'string' ? s : res.written[s]));
  }

  private prepareMetaForCreate(meta: ObjectMeta): void {
    meta.uid = randomUUID();
    meta.creationTimestamp = nowRFC3339();
    delete meta.generation;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (meta.finalizers && meta.finalizers.length === 0) delete meta.finalizers;
  }

  /**
   * Get by name: the stored JSON. Throws 404. Served from the watch cache once it has applied
   * the shard's current revision (a consistent read, as a quorum read from etcd; concurrent
   * gets share the revision round trip).
   */
  async get(scope: RequestScope, name: string): Promise<string> {
    const cache = this.backend.cache;
    await cache.waitForRevision(await this.backend.storage.currentRevision());
    const e = cache.getEntry(this.groupResource, scope.cluster, this.desc.namespaced ? scope.namespace ?? '' : '', name);
    if (!e) throw notFound(this.gr, name);
    const converting = this.prepare([e]);
    if (converting) await converting;
    return this.renderEntry(e);
  }

  /**
   * The object as the watch cache has it now, without waiting for the shard's current revision
   * (an informer's lister read: may trail the latest write; writes based on it carry its
   * resourceVersion and fail with 409 when it was stale). For controllers.
   */
  getCached(scope: RequestScope, name: string): KubeObject | undefined {
    const e = this.cachedEntry(scope, name);
    return e ? this.decode(e.json) : undefined;
  }

  /** The watch cache's entry of a name, without waiting (see getCached). */
  cachedEntry(scope: RequestScope, name: string): CacheEntry | undefined {
    return this.backend.cache.getEntry(this.groupResource, scope.cluster, this.desc.namespaced ? scope.namespace ?? '' : '', name);
  }

  /**
   * Waits until the watch cache has applied the shard's current revision: cached reads after it
   * are consistent as of this call (one Redis round trip, shared by concurrent callers).
   */
  async syncCache(): Promise<void> {
    await this.backend.cache.waitForRevision(await this.backend.storage.currentRevision());
  }

  /** The cached objects of a scope (all namespaces when it has none), without waiting. */
  listCached(scope: RequestScope): readonly CacheEntry[] {
    return this.backend.cache.list(this.groupResource, scope.cluster, this.desc.namespaced ? scope.namespace : undefined);
  }

  /**
   * Parses a selector pair once for list/watch/deletecollection. For a resource converted by a
   * webhook, entries must be prepared (`prepare`) before a field selector on selectable fields.
   */
  compileFilter(opts: ListOptions): (e: CacheEntry) => boolean {
    const labels: LabelSelector | undefined = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
    const selectable = this.desc.strategy?.selectableFields;
    const allowed = new Set(['metadata.name', 'metadata.namespace', ...Object.keys(selectable ?? {})]);
    const fields: FieldSelector | undefined = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector, allowed) : undefined;
    const restrict = opts.restrict;
    if (!labels && !fields) return restrict ?? (() => true);
    return (e) => {
      if (restrict && !restrict(e)) return false;
      if (labels && !matchesLabels(labels, e.labels)) return false;
      if (fields) {
        const values: Record<string, string> = { 'metadata.name': e.name, 'metadata.namespace': e.namespace };
        if (selectable) {
          const obj = this.decodeEntry(e);
          for (const [f, get] of Object.entries(selectable)) values[f] = get(obj);
        }
        if (!matchesFields(fields, values)) return false;
      }
      return true;
    };
  }

  /**
   * List from the watch cache with kube's resourceVersion semantics
   * (https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list):
   * unset → consistent (most recent), `0` → any, `N` → not older than N (or exactly N with
   * `resourceVersionMatch=Exact`); `limit`/`continue` page at the first page's revision.
   */
  async list(scope: RequestScope, opts: ListOptions): Promise<ListResult> {
    const cache = this.backend.cache;
    const filter = this.compileFilter(opts);
    const ns = this.desc.namespaced ? scope.namespace : undefined;
    let atRv: number | undefined;
    let start = '';
    if (opts.continue) {
      if (opts.resourceVersion) throw badRequest('specifying resource version is not allowed when using continue');
      const t = decodeContinue(opts.continue);
      atRv = t.rv > 0 ? t.rv : undefined; start = t.start;
    } else if (opts.resourceVersion === undefined || opts.resourceVersion === '') {
      if (opts.resourceVersionMatch) throw badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
      await cache.waitForRevision(await this.backend.storage.currentRevision());
    } else {
      const rv = parseRevision(opts.resourceVersion);
      const match = opts.resourceVersionMatch ?? '';
      if (match === 'Exact') {
        if (rv === 0) throw badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
        await cache.waitForRevision(rv);
        atRv = rv;
      } else if (match === '' || match === 'NotOlderThan') {
        if (rv > 0) await cache.waitForRevision(rv);
      } else {
        throw badRequest(`unsupported resourceVersionMatch "${match}"`);
      }
    }
    const revision = atRv ?? cache.currentRevision;
    let all: readonly CacheEntry[];
    try {
      all = atRv !== undefined ? cache.listAt(this.groupResource, scope.cluster, ns, atRv) : cache.list(this.groupResource, scope.cluster, ns);
    } catch (err) {
      // An expired continue token: 410 with a token that goes on from the same key at the latest revision.
      if (!(err instanceof StatusError && err.code === 410 && opts.continue)) throw err;
      throw new StatusError(410, 'Expired', CONTINUE_EXPIRED, undefined, { continue: encodeContinue({ rv: 0, start }) });
    }
    let i = 0;
    if (start) {
      // Entries are sorted by key order: binary search for the first key after the last served.
      let hi = all.length;
      while (i < hi) { const mid = (i + hi) >> 1; if (sortKey(all[mid]!) <= start) i = mid + 1; else hi = mid; }
    }
    const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
    const items: CacheEntry[] = [];
    // A field selector on a selectable field of a webhook-converted version reads converted objects.
    if (opts.fieldSelector && this.desc.strategy?.selectableFields) await this.prepare(i ? all.slice(i) : all);
    for (; i < all.length; i++) {
      const e = all[i]!;
      if (!filter(e)) continue;
      if (limit && items.length === limit) break;
      items.push(e);
    }
    const result: ListResult = { items, resourceVersion: String(revision) };
    if (limit && i < all.length) {
      result.continue = encodeContinue({ rv: revision, start: sortKey(items[items.length - 1]!) });
      if (!opts.labelSelector && !opts.fieldSelector) result.remainingItemCount = all.length - i;
    }
    return result;
  }

  /**
   * Update (PUT) of the object or a subresource (`status`, or `finalize` for namespaces).
   * A resourceVersion in the body is a precondition (409 on mismatch). `created` is true when
   * the strategy allows create-on-update and the object did not exist.
   *
   * `decodeAgain` gives a new copy of the request's body, for another attempt after a conflict
   * (an API handler decodes the request body again); without it the body is copied before the
   * first attempt, which changes it.
   */
  async update(scope: RequestScope, name: string, body: unknown, subresource?: string, decodeAgain?: () => unknown): Promise<{ json: string; created: boolean }> {
    const checked = (value: unknown, s: RequestScope): KubeObject => {
      const o = this.checkBody(value, s, s.bodyBytes !== undefined);
      this.prune(o, s, (errors) => unknownFieldsError(errors, this.desc.kind, this.desc.version));
      if (o.metadata.name !== undefined && o.metadata.name !== name) {
        throw badRequest(`the name of the object (${String(o.metadata.name)}) does not match the name on the URL (${name})`);
      }
      o.metadata.name = name;
      return o;
    };
    const obj = checked(body, scope);
    const key = this.objectKey(scope, name);
    const precondition = obj.metadata.resourceVersion;
    // An update without a resourceVersion is unconditional: a write that lands between its read
    // and its write (a controller's status update) makes it start again from the new object, as
    // kube's GuaranteedUpdate does; with a resourceVersion that is the client's 409.
    const pristine = precondition || decodeAgain ? undefined : structuredClone(obj);
    // Another attempt's body: decoded again (its warnings were given by the first), or the copy.
    const again = (): KubeObject => (decodeAgain ? checked(decodeAgain(), { ...scope, warnings: [] }) : structuredClone(pristine!));
    await nextStage(largeWrite(scope));
    for (let attempt = 0; ; attempt++) {
      const next = attempt === 0 || precondition ? obj : again();
      const current = await this.readBase(scope, key, name, precondition);
      if (current === null) {
        if (!subresource && this.desc.strategy?.allowCreateOnUpdate) return { json: await this.create(scope, next), created: true };
        throw notFound(this.gr, name);
      }
      try {
        return { json: await this.applyUpdate(scope, key, current, next, subresource, precondition), created: false };
      } catch (err) {
        if (!precondition && attempt < MAX_UNCONDITIONAL_UPDATE_RETRIES && err instanceof StatusError && err.code === 409 && err.reason === 'Conflict') continue;
        throw err;
      }
    }
  }

  /**
   * Computes and writes an update of `old` to `next`: keeps system metadata, applies the
   * subresource rules, bumps generation on spec change, validates, writes with a revision CAS,
   * and completes a pending deletion when the last finalizer is gone.
   */
  private async applyUpdate(scope: RequestScope, key: string, old: KubeObject, next: KubeObject, subresource: string | undefined, precondition: string | undefined, applied = false): Promise<string> {
    const u = await this.prepareUpdate(scope, old, next, subresource, precondition, applied);
    if (u.action === 'none') return JSON.stringify(old);
    if (scope.dryRun) return JSON.stringify(u.merged);
    const res = await this.persist(u.action, key, u.merged, u.oldRv);
    if (res.ok) return res.json;
    throw this.writeFailure(res.reason, old.metadata.name!);
  }

  /**
   * Everything an update does before writing (`applyUpdate`): the object to write and whether
   * the write is an update, the delete that completes a pending deletion, or nothing (no change).
   */
  private async prepareUpdate(scope: RequestScope, old: KubeObject, next: KubeObject, subresource: string | undefined, precondition: string | undefined, applied = false): Promise<{ action: 'update' | 'delete' | 'none'; merged: KubeObject; oldRv: string }> {
    const oldRv = old.metadata.resourceVersion!;
    this.applyDefaults(next);
    if (precondition && precondition !== oldRv) {
      throw conflict(this.gr, old.metadata.name!, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const door = resetFor(this.desc, subresource ?? '');
    // A controller of this server writing spec and status in one revision keeps its status.
    const reset = scope.withStatus && door.reset?.base === 'request' ? { ...door.reset, fromStored: door.reset.fromStored.filter((p) => p !== 'status') } : door.reset;
    let merged = reset ? applyReset(reset, next, old) : next;
    if (door.main) this.desc.strategy?.prepareForUpdate?.(merged, old);
    const m = merged.metadata;
    const o = old.metadata;
    m.name = o.name; m.uid = o.uid; m.creationTimestamp = o.creationTimestamp;
    if (this.desc.namespaced) m.namespace = o.namespace;
    if (o.generation === undefined) delete m.generation; else m.generation = o.generation;
    if (o.deletionTimestamp) { m.deletionTimestamp = o.deletionTimestamp; m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds; }
    else { delete m.deletionTimestamp; delete m.deletionGracePeriodSeconds; }
    if (m.finalizers && m.finalizers.length === 0) delete m.finalizers;
    if (o.deletionTimestamp && m.finalizers) {
      const added = m.finalizers.filter((f) => !(o.finalizers ?? []).includes(f));
      if (added.length) {
        throw invalid(this.desc.kind, this.desc.group, o.name!, [{ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}` }]);
      }
    }
    const hooks = this.backend.admission;
    const attrs = (object: KubeObject): WebhookAttributes => ({
      operation: 'UPDATE', cluster: scope.cluster, desc: this.desc, subresource: subresource ?? '', namespace: o.namespace ?? '', name: o.name!,
      user: scope.user, object, oldObject: old, dryRun: Boolean(scope.dryRun), warnings: scope.warnings, audit: scope.audit,
    });
    if (hooks) merged = this.keepSystemMeta(merged, await hooks.mutate(attrs(merged)));
    // After mutating admission, as kube's PrepareForUpdate runs after it: a spec a webhook or policy
    // changed moves the generation too (and validation, which trusts an unmoved generation to mean
    // an unchanged spec, looks at it: src/apiextensions/crdvalidation.ts).
    if (this.desc.strategy?.tracksGeneration && (!subresource || subresource === 'scale') && specChanged(old, merged)) merged.metadata.generation = (o.generation ?? 1) + 1;
    const large = largeWrite(scope, old);
    await nextStage(large);
    this.validate(merged, old);
    if (hooks) await hooks.validate(attrs(merged));
    await nextStage(large);
    if (!applied) await this.trackUpdate(old, merged, scope, large, subresource);
    merged.metadata.resourceVersion = oldRv;
    await nextStage(large);
    if (sameContent(old, merged)) return { action: 'none', merged, oldRv };
    const deleting = merged.metadata.deletionTimestamp && !merged.metadata.finalizers?.length && !this.desc.strategy?.deletionPending?.(merged);
    return { action: deleting ? 'delete' : 'update', merged, oldRv };
  }

  private writeFailure(reason: 'exists' | 'conflict' | 'notfound', name: string): StatusError {
    if (reason === 'notfound') return notFound(this.gr, name);
    if (reason === 'exists') return alreadyExists(this.gr, name);
    return conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
  }

  /**
   * Patch (PATCH) with JSON patch (RFC 6902, applied to a copy, all-or-nothing), JSON merge
   * patch (RFC 7386) or strategic merge patch. Retries on write conflicts unless the patch
   * itself carries a resourceVersion.
   */
  async patch(scope: RequestScope, name: string, contentType: string, patchBody: Buffer, subresource?: string): Promise<string> {
    const patch = decodeJSONPatchBody(patchBody);
    const text = patchBody.toString('utf8');
    // A strategic merge patch is strictly decoded as a map (duplicate keys reported); JSON and
    // merge patches are checked only through their result (k8s.io/apiserver handlers/patch.go).
    if (contentType === PATCH_TYPES.strategic) scope = { ...scope, duplicateFields: duplicateFields(text) };
    const key = this.objectKey(scope, name);
    for (let attempt = 0; ; attempt++) {
      const old = await this.readCurrent(key);
      if (old === null) throw notFound(this.gr, name);
      const patched = this.applyPatch(old, contentType, patch);
      await nextStage(largeWrite(scope, old));
      if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw badRequest('the patch produced a value that is not an object');
      const next = this.checkBody(patched, scope);
      const kind = contentType === PATCH_TYPES.strategic ? 'strategic' : contentType === PATCH_TYPES.merge ? 'merge' : 'json';
      this.prune(next, scope, (errors) => unknownFieldsPatchError(errors, kind, kind === 'strategic' ? patch : patched));
      const precondition = next.metadata.resourceVersion !== old.metadata.resourceVersion ? next.metadata.resourceVersion : undefined;
      try {
        return await this.applyUpdate(scope, key, old, next, subresource, precondition);
      } catch (err) {
        if (err instanceof StatusError && err.code === 409 && err.reason === 'Conflict' && !precondition && attempt < MAX_RETRIES) continue;
        throw err;
      }
    }
  }

  protected applyPatch(old: KubeObject, contentType: string, patch: unknown): unknown {
    switch (contentType) {
      case PATCH_TYPES.json: {
        if (!Array.isArray(patch)) throw badRequest('a JSON patch must be an array of operations');
        const target = deepClone(old);
        let results: ReturnType<typeof jsonPatch.applyPatch>;
        try { results = jsonPatch.applyPatch(target, patch as jsonPatch.Operation[]); } catch (e) {
          throw badRequest(`the JSON patch is invalid: ${(e as Error).message}`);
        }
        const failed = results.findIndex((r) => r !== null);
        if (failed >= 0) {
          const err = results[failed] as Error;
          const op = (patch as jsonPatch.Operation[])[failed];
          if (err.name === 'TestError') throw new StatusError(422, 'Invalid', `the JSON patch test operation failed: ${err.message}`);
          throw new StatusError(422, 'Invalid', `the server rejected our request due to an error in our request: operation ${failed} (${op?.op} ${(op as { path?: string })?.path}): ${err.message}`);
        }
        return target;
      }
      case PATCH_TYPES.merge:
        if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw badRequest('a merge patch must be a JSON object');
        return jsonMergePatch.apply(deepClone(old), patch);
      case PATCH_TYPES.strategic:
        if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw badRequest('a strategic merge patch must be a JSON object');
        if (!this.desc.patchMeta && !BUILTIN_PATCH_META[`${this.desc.group}/${this.desc.kind}`]) {
          throw new StatusError(415, 'UnsupportedMediaType', `strategic merge patch is not supported for ${this.desc.kind}; use a JSON merge patch or JSON patch`);
        }
        return strategicMergePatch(old, patch, this.patchMeta);
      default:
        throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${[PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.strategic].join(', ')}`);
    }
  }

  /**
   * The `scale` subresource of a custom resource: an `autoscaling/v1` Scale whose
   * `spec.replicas` and `status.replicas`/`status.selector` are read from the CRD's
   * `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath`.
   */
  private toScale(obj: KubeObject): KubeObject {
    const sc = this.desc.scale!;
    const m = obj.metadata;
    const status: Record<string, unknown> = { replicas: Number(readPath(obj, sc.statusReplicasPath) ?? 0) };
    if (sc.labelSelectorPath) { const sel = readPath(obj, sc.labelSelectorPath); if (typeof sel === 'string') status.selector = sel; }
    return {
      kind: 'Scale', apiVersion: 'autoscaling/v1',
      metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
      spec: { replicas: Number(readPath(obj, sc.specReplicasPath) ?? 0) },
      status,
    };
  }

  /** GET of `/scale`. */
  async getScale(scope: RequestScope, name: string): Promise<string> {
    return JSON.stringify(this.toScale(this.decode(await this.get(scope, name))));
  }

  /**
   * PUT of `/scale`: sets the replicas of the object (422 unless a non-negative integer); the
   * Scale's resourceVersion is a precondition.
   */
  async updateScale(scope: RequestScope, name: string, body: unknown): Promise<string> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the body of the request must be a Scale object');
    const scale = body as KubeObject & { spec?: { replicas?: unknown } };
    if (scale.kind !== undefined && scale.kind !== 'Scale') throw badRequest(`the kind of the provided object "${String(scale.kind)}" does not match the expected kind "Scale"`);
    const replicas = scale.spec?.replicas;
    if (!Number.isInteger(replicas) || (replicas as number) < 0) {
      throw invalid('Scale', 'autoscaling', name, [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0` }]);
    }
    const key = this.objectKey(scope, name);
    const old = await this.readCurrent(key);
    if (old === null) throw notFound(this.gr, name);
    const next = deepClone(old);
    writePath(next, this.desc.scale!.specReplicasPath, replicas);
    const json = await this.applyUpdate(scope, key, old, next, 'scale', scale.metadata?.resourceVersion);
    return JSON.stringify(this.toScale(JSON.parse(json) as KubeObject));
  }

  /** PATCH of `/scale`: the patch applies to the Scale view, then as `updateScale`. */
  async patchScale(scope: RequestScope, name: string, contentType: string, patchBody: Buffer): Promise<string> {
    const patch = decodeJSONPatchBody(patchBody);
    const current = this.toScale(this.decode(await this.get(scope, name)));
    const patched = contentType === PATCH_TYPES.strategic ? strategicMergePatch(current, patch, OBJECT_META_PATCH_META) : this.applyPatch(current, contentType, patch);
    const result = patched as KubeObject;
    if (result?.metadata?.resourceVersion === current.metadata.resourceVersion) delete result.metadata.resourceVersion;
    return this.updateScale(scope, name, result);
  }

  /**
   * Delete: preconditions (uid, resourceVersion) → 409; `orphanDependents` with
   * `propagationPolicy` → 422. The garbage-collector finalizers follow the propagation policy
   * (`gcFinalizersForDelete`): Foreground adds `foregroundDeletion`, Orphan adds `orphan`,
   * Background (the default) deletes now. With finalizers (or a strategy that holds deletion) the
   * object gets `deletionTimestamp` (and, as kube's `markAsDeleting`, a generation bump) and stays
   * until they are removed. A later delete of an object already being deleted may still change
   * the two garbage-collector finalizers, as kube's `updateForGracefulDeletionAndFinalizers`
   * does; when that leaves none, the object goes. A namespace held by `spec.finalizers` keeps
   * its finalizers once termination began (kube's namespace REST `Delete`).
   */
  async delete(scope: RequestScope, name: string, opts: DeleteOptions = {}): Promise<DeleteResult> {
    if (opts.orphanDependents !== undefined && opts.orphanDependents !== null && opts.propagationPolicy) {
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [{ reason: 'FieldValueInvalid', field: 'propagationPolicy', message: `Invalid value: ${JSON.stringify(opts.propagationPolicy)}: orphanDependents and deletionPropagation cannot be both set` }]);
    }
    const key = this.objectKey(scope, name);
    for (let attempt = 0; ; attempt++) {
      const obj = await this.readCurrent(key);
      if (obj === null) throw notFound(this.gr, name);
      const m = obj.metadata;
      const pre = opts.preconditions;
      if (pre?.uid && pre.uid !== m.uid) {
        throw conflict(this.gr, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${m.uid}`);
      }
      if (pre?.resourceVersion && pre.resourceVersion !== m.resourceVersion) {
        throw conflict(this.gr, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${m.resourceVersion}`);
      }
      if (attempt === 0 && this.backend.admission) {
        const a: WebhookAttributes = { operation: 'DELETE', cluster: scope.cluster, desc: this.desc, subresource: '', namespace: m.namespace ?? '', name, user: scope.user, oldObject: obj, dryRun: Boolean(scope.dryRun), warnings: scope.warnings, audit: scope.audit };
        await this.backend.admission.mutate(a);
        await this.backend.admission.validate(a);
      }
      const op = this.deletionOf(obj, opts);
      if (!op) return { deleted: false, json: JSON.stringify(obj) };
      const pending = op === 'update';
      if (scope.dryRun) return { deleted: !pending, json: JSON.stringify(obj) };
      const res = await this.persist(op, key, obj, m.resourceVersion);
      if (res.ok) return { deleted: !pending, json: res.json };
      if (res.reason === 'notfound') throw notFound(this.gr, name);
      if (pre?.resourceVersion || attempt >= MAX_RETRIES) throw this.writeFailure(res.reason, name);
    }
  }

  /**
   * What deleting `obj` with `opts` writes, applied to `obj` (kube's generic registry
   * `Delete`): `delete` when nothing holds it; `update` when finalizers (or the kind's strategy)
   * hold it — it gets its deletionTimestamp, or only its garbage-collector finalizers change
   * when it already has one; undefined when it is already being deleted and nothing changes.
   */
  private deletionOf(obj: KubeObject, opts: DeleteOptions): 'update' | 'delete' | undefined {
    const m = obj.metadata;
    const heldByStrategy = Boolean(this.desc.strategy?.deletionPending?.(obj));
    if (m.deletionTimestamp && heldByStrategy) return undefined;
    const gc = gcFinalizersForDelete(m.finalizers, opts);
    if (gc.changed) {
      if (gc.finalizers.length) m.finalizers = gc.finalizers; else delete m.finalizers;
    }
    if (!m.finalizers?.length && !heldByStrategy) return 'delete';
    if (m.deletionTimestamp && !gc.changed) return undefined;
    if (!m.deletionTimestamp) {
      if (typeof m.generation === 'number' && m.generation > 0) m.generation += 1;
      m.deletionTimestamp = nowRFC3339();
      m.deletionGracePeriodSeconds = 0;
      this.desc.strategy?.prepareForDeletion?.(obj);
    }
    return 'update';
  }

  /**
   * Deletes the given objects of the watch cache as `delete` without options would, in few
   * storage round trips (a logical cluster's or a namespace's content, by their controllers).
   * Objects already being deleted (held by finalizers) only count as pending: no write, no
   * admission. Every other object goes through DELETE admission, then they are written in
   * atomic transactions of up to {@link DELETE_BATCH} objects — deleted, or given their
   * deletionTimestamp when finalizers hold them — each at the revision the cache holds. When a
   * transaction fails because an object changed or went since, its objects are deleted one by one
   * with `delete` (objects gone by then are skipped), as are objects of resources whose storage
   * version differs. Returns how many objects are still there, held by finalizers. Throws
   * admission's StatusError or a storage failure; objects written before stay deleted (as with
   * one-by-one deletion, the caller's next reconcile carries on).
   */
  static async deleteCached(items: ReadonlyArray<{ store: Store; scope: RequestScope; entry: CacheEntry }>): Promise<number> {
    let pending = 0;
    const ops: CommitItem[] = [];
    /** Per op: how to redo it alone when its transaction fails. */
    const redo: (() => Promise<DeleteResult>)[] = [];
    const one = async (f: () => Promise<DeleteResult>) => {
      try {
        if (!(await f()).deleted) pending++;
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    };
    const flush = async () => {
      if (!ops.length) return;
      const batch = ops.splice(0); const again = redo.splice(0);
      const res = await items[0]!.store.backend.storage.commit(batch);
      if (res.ok) { pending += batch.filter((o) => o.op === 'update').length; return; }
      for (const f of again) await one(f);
    };
    for (const { store, scope, entry } of items) {
      const s = { ...scope, namespace: entry.namespace || scope.namespace };
      const alone = () => store.delete(s, entry.name);
      if (store.desc.storage || scope.dryRun || store.backend.storage !== items[0]!.store.backend.storage) { await one(alone); continue; }
      const obj = store.decode(entry.json);
      // Already being deleted: only its finalizers' owners move it on.
      if (obj.metadata.deletionTimestamp && store.deletionOf(obj, {}) === undefined) { pending++; continue; }
      if (store.backend.admission) {
        const a: WebhookAttributes = { operation: 'DELETE', cluster: s.cluster, desc: store.desc, subresource: '', namespace: obj.metadata.namespace ?? '', name: entry.name, user: s.user, oldObject: obj, dryRun: false, warnings: s.warnings, audit: s.audit };
        await store.backend.admission.mutate(a);
        await store.backend.admission.validate(a);
      }
      const expectedRv = obj.metadata.resourceVersion;
      const op = store.deletionOf(obj, {});
      if (!op) { pending++; continue; }
      ops.push({ op, objectKey: store.objectKey(s, entry.name), obj, expectedRv });
      redo.push(alone);
      if (ops.length >= DELETE_BATCH) await flush();
    }
    await flush();
    return pending;
  }

  /** DELETE on the collection: deletes every object the list options select. */
  async deleteCollection(scope: RequestScope, listOpts: ListOptions, opts: DeleteOptions = {}): Promise<CacheEntry[]> {
    const { items } = await this.list(scope, { ...listOpts, limit: undefined, continue: undefined });
    const removed: CacheEntry[] = [];
    for (const e of items) {
      try {
        await this.delete({ ...scope, namespace: e.namespace || scope.namespace }, e.name, opts);
        removed.push(e);
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
    return removed;
  }
}

/**
 * The store's rule where a kind declares none (`ResourceStrategy.updateResets`): `status` changes
 * only `status`, everything else (metadata but managedFields too) stays as stored —
 * apiextensions-apiserver pkg/registry/customresource/status_strategy.go `PrepareForUpdate`.
 */
export const STATUS_ONLY_RESET: UpdateReset = { base: 'stored', fromRequest: ['status'], metadata: 'stored' };

/**
 * The store's rule for the main resource of a kind with `/status` that declares none: `status`
 * stays as stored (every kube strategy of such a kind: `newObj.Status = oldObj.Status`).
 */
export const STATUS_KEPT_RESET: UpdateReset = { base: 'request', fromStored: ['status'], metadata: 'request' };

/**
 * The reset of an update through `subresource` ('' the main resource): the kind's declared one,
 * else the store's rule (`status`: STATUS_ONLY_RESET; the main resource, `scale` and other
 * undeclared doors: STATUS_KEPT_RESET for a kind with `/status`, none otherwise). `main` tells
 * whether the main resource's rule applies (the strategy's `prepareForUpdate` runs then).
 */
export function resetFor(desc: Pick<ResourceDescriptor, 'hasStatus' | 'strategy'>, subresource: string): { reset?: UpdateReset; main: boolean } {
  const declared = desc.strategy?.updateResets;
  if (declared?.[subresource]) return { reset: declared[subresource], main: subresource === '' };
  if (subresource === 'status') return { reset: STATUS_ONLY_RESET, main: false };
  return { reset: declared?.[''] ?? (desc.hasStatus ? STATUS_KEPT_RESET : undefined), main: true };
}

/** Metadata fields `metav1.ResetObjectMetaForStatus` takes from the stored object (besides the system ones). */
const STATUS_RESET_META = ['labels', 'annotations', 'finalizers', 'ownerReferences'] as const;

/**
 * The object an update writes under `reset` (UpdateReset), from the request's body and the stored
 * object; system metadata is fixed by the caller. Shallow: the request's body may be reused and
 * values of the stored object referenced, but nothing of the stored object is changed.
 */
export function applyReset(reset: UpdateReset, request: KubeObject, stored: KubeObject): KubeObject {
  let out: KubeObject;
  if (reset.base === 'request') {
    out = request;
    for (const p of reset.fromStored) copyPath(stored, out, p);
  } else {
    out = { ...stored };
    for (const p of reset.fromRequest) copyPath(request, out, p);
  }
  const meta = reset.metadata === 'stored' ? { ...stored.metadata } : { ...request.metadata };
  if (reset.metadata === 'resetForStatus') {
    for (const k of STATUS_RESET_META) {
      if (stored.metadata[k] === undefined) delete meta[k]; else (meta as Record<string, unknown>)[k] = stored.metadata[k];
    }
  }
  out.metadata = meta;
  return out;
}

/**
 * Sets the dot path `path` of `to` to its value in `from` (removes it when `from` has none),
 * copying the objects on the way in `to` so that objects shared with another object are not changed.
 */
function copyPath(from: KubeObject, to: KubeObject, path: string): void {
  const parts = path.split('.');
  let src: unknown = from;
  for (const p of parts) src = isObj(src) ? src[p] : undefined;
  let dst = to as Record<string, unknown>;
  for (const p of parts.slice(0, -1)) {
    if (!isObj(dst[p])) {
      if (src === undefined) return;
      dst[p] = {};
    } else dst[p] = { ...(dst[p] as Record<string, unknown>) };
    dst = dst[p] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1]!;
  if (src === undefined) delete dst[last]; else dst[last] = src;
}

/** Reads a simple `.a.b.c` path (CRD scale paths). */
function readPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const p of path.split('.').filter(Boolean)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/** Writes a simple `.a.b.c` path, creating objects on the way. */
function writePath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.').filter(Boolean);
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    if (cur[p] === null || typeof cur[p] !== 'object') cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/** Sort key matching WatchCache order (cluster, namespace, name). */
function sortKey(e: CacheEntry): string {
  return `${e.cluster}\u0000${e.namespace}\u0000${e.name}`;
}

const NON_SPEC = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** Whether anything but metadata and status differs (bumps generation, as kube strategies do). */
function specChanged(a: KubeObject, b: KubeObject): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (NON_SPEC.has(k)) continue;
    if (!jsonEqual(a[k], b[k])) return true;
  }
  return false;
}

function sameContent(a: KubeObject, b: KubeObject): boolean {
  return jsonEqual(a, b);
}

/** Structural equality of JSON values (key order insensitive). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>; const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!jsonEqual(ao[k], bo[k])) return false;
  return true;
}

