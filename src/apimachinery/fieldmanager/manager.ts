/**
 * Server-side apply and `metadata.managedFields`, after k8s.io/apimachinery/pkg/util/managedfields
 * (internal/fieldmanager.go, structuredmerge.go, managedfieldsupdater.go, stripmeta.go,
 * buildmanagerinfo.go, capmanagers.go, lastappliedmanager.go, lastappliedupdater.go,
 * conflict.go, managedfields.go) and sigs.k8s.io/structured-merge-diff/v4 merge/update.go
 * (`Updater.Update`, `Updater.Apply`, `prune`). See
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/.
 */
import type { KubeObject, ManagedFieldsEntry } from '../meta.js';
import { nowRFC3339, parseApiVersion } from '../meta.js';
import { StatusError, badRequest, internalError, invalid, type StatusCause } from '../errors.js';
import { FieldSet, type Path, pathString } from './fieldpath.js';
import {
  type Comparison, type SchemaResolver, type TypeNode, TypeResolver, TypedError, compare, ensureNamedFieldsAreMembers, merge, undeclaredFields,
  removeItems, toFieldSet, addedFieldSet,
} from './typed.js';
import { isObj } from '../objects.js';

export type { SchemaResolver } from './typed.js';

/** The annotation kubectl client-side apply keeps its last applied configuration in. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Max number of Update entries before the oldest are merged into `ancient-changes` (capmanagers.go). */
export const DEFAULT_MAX_UPDATE_MANAGERS = 10;

/**
 * Fields never tracked: type meta, `metadata` itself and server-owned metadata (stripmeta.go
 * `NewStripMetaManager`, plus `metadata.deletionTimestamp`, which only the server sets).
 */
const STRIP_SET = FieldSet.of(
  ...[['apiVersion'], ['kind'], ['metadata'], ...[
    'name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields',
    'resourceVersion', 'deletionTimestamp',
  ].map((f) => ['metadata', f])].map((p) => p.map((field) => ({ field }))),
);

/** One decoded managedFields entry (SMD `VersionedSet` plus its time). */
interface ManagerRecord {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  subresource?: string;
  time?: string;
  set: FieldSet;
}

/** Decoded managedFields keyed by manager identifier. */
type Managed = Map<string, ManagerRecord>;

/**
 * `BuildManagerIdentifier`: the entry's JSON without fieldsType, fieldsV1 and time, and without
 * apiVersion for appliers (so an applier keeps one entry across versions).
 */
function managerKey(r: { manager?: string; operation?: string; apiVersion?: string; subresource?: string }): string {
  const o: Record<string, string> = {};
  if (r.manager) o.manager = r.manager;
  if (r.operation) o.operation = r.operation;
  if (r.operation !== 'Apply' && r.apiVersion) o.apiVersion = r.apiVersion;
  if (r.subresource) o.subresource = r.subresource;
  return JSON.stringify(o);
}

/** `printManager` of conflict.go: `"name"`, `"name" with subresource "status"`, `… using v1`. */
function printManager(key: string): string {
  let e: { manager?: string; operation?: string; apiVersion?: string; subresource?: string };
  try {
    e = JSON.parse(key) as typeof e;
  } catch {
    return JSON.stringify(key);
  }
  let s = JSON.stringify(e.manager ?? '');
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === 'Update') s += ` using ${e.apiVersion ?? ''}`;
  return s;
}

/**
 * `DecodeManagedFields`: throws on invalid entries or duplicate managers. `stored`: the entries
 * are the stored object's (encoded here), so an entry left unchanged is written back as it was
 * instead of being encoded again.
 */
function decodeManagedFields(entries: ManagedFieldsEntry[] | undefined, stored = false): Managed {
  const out: Managed = new Map();
  for (const e of entries ?? []) {
    if (e === null || typeof e !== 'object') throw new Error('managedFields entries must be objects');
    const key = managerKey(e);
    if (out.has(key)) throw new Error(`found duplicate manager: ${key}`);
    if (e.operation !== undefined && e.operation !== 'Apply' && e.operation !== 'Update' && Object.keys(e).length) {
      throw new Error(`operation must be \`Apply\` or \`Update\`: ${String(e.operation)}`);
    }
    if (e.fieldsType !== undefined && e.fieldsType !== 'FieldsV1') throw new Error(`invalid fieldsType: ${e.fieldsType}`);
    out.set(key, {
      manager: e.manager ?? '',
      operation: e.operation === 'Apply' ? 'Apply' : 'Update',
      apiVersion: e.apiVersion ?? '',
      subresource: e.subresource || undefined,
      time: e.time,
      set: e.fieldsV1 ? FieldSet.fromFieldsV1(e.fieldsV1, stored) : new FieldSet(),
    });
  }
  return out;
}

/** `encodeManagedFields` + `sortEncodedManagedFields`: Apply before Update, then by time, manager, apiVersion, subresource. */
function encodeManagedFields(managed: Managed): ManagedFieldsEntry[] {
  const entries: ManagedFieldsEntry[] = [];
  for (const r of managed.values()) {
    if (r.set.empty()) continue;
    const e: ManagedFieldsEntry = { manager: r.manager, operation: r.operation, apiVersion: r.apiVersion };
    if (r.time) e.time = r.time;
    e.fieldsType = 'FieldsV1';
    e.fieldsV1 = r.set.toFieldsV1();
    if (r.subresource) e.subresource = r.subresource;
    entries.push(e);
  }
  const secs = (t?: string) => (t ? Math.floor(Date.parse(t) / 1000) || 0 : 0);
  const cmp = (a = '', b = '') => (a < b ? -1 : a > b ? 1 : 0);
  return entries.sort((p, q) =>
    cmp(p.operation, q.operation) || secs(p.time) - secs(q.time) || cmp(p.manager, q.manager) ||
    cmp(p.apiVersion, q.apiVersion) || cmp(p.subresource, q.subresource));
}

const resolvers = new WeakMap<SchemaResolver, TypeNode>();

function rootType(schema: SchemaResolver): TypeNode {
  let t = resolvers.get(schema);
  if (!t) {
    t = new TypeResolver(schema).root();
    resolvers.set(schema, t);
  }
  return t;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** A read-only view of an object without `metadata.managedFields` (shares everything else). */
function managedFieldsHidden(o: KubeObject | undefined): KubeObject {
  if (!o) return { metadata: {} };
  if (!o.metadata || o.metadata.managedFields === undefined) return o;
  const { managedFields: _omit, ...metadata } = o.metadata;
  return { ...o, metadata };
}

/** A deep copy of an object without `metadata.managedFields` (`RemoveObjectManagedFields`). */
function withoutManagedFields(o: KubeObject | undefined): KubeObject {
  if (!o) return { metadata: {} };
  const c = clone(o);
  if (c.metadata) delete c.metadata.managedFields;
  return c;
}

/** Conflicting paths per manager identifier. */
type Conflicts = Map<string, FieldSet>;

class ConflictsError extends Error {
  constructor(readonly conflicts: Conflicts) {
    super('conflicts');
  }
}

/**
 * SMD `Updater.update`: fields changed between `oldV` and `newV` that other managers own are
 * conflicts (thrown unless `force`, else taken away); removed fields leave every other set.
 */
function smdUpdate(oldV: unknown, newV: unknown, t: TypeNode, managers: Managed, workflow: string, force: boolean, resetFields?: FieldSet) {
  const cmp = filterComparison(compare(oldV, newV, t), resetFields);
  const changed = cmp.modified.union(cmp.added);
  const conflicts: Conflicts = new Map();
  for (const [key, r] of managers) {
    if (key === workflow) continue;
    const c = r.set.intersection(changed);
    if (!c.empty()) conflicts.set(key, c);
  }
  if (!force && conflicts.size) throw new ConflictsError(conflicts);
  const removed = !cmp.removed.empty();
  for (const [key, r] of managers) {
    if (key === workflow) continue;
    const c = conflicts.get(key);
    if (!c && !removed) continue; // unchanged: keeps its set (and encoding)
    let s = r.set;
    if (c) s = s.difference(c);
    if (removed) s = s.difference(cmp.removed);
    if (s.empty()) managers.delete(key);
    else managers.set(key, { ...r, set: s });
  }
  for (const [key, r] of managers) if (r.set.empty()) managers.delete(key);
  return cmp;
}

/** SMD `Comparison.FilterFields` with an exclude filter: changes at or below a reset field do not count. */
function filterComparison(cmp: Comparison, resetFields: FieldSet | undefined): Comparison {
  if (!resetFields || resetFields.empty()) return cmp;
  return { added: cmp.added.recursiveDifference(resetFields), modified: cmp.modified.recursiveDifference(resetFields), removed: cmp.removed.recursiveDifference(resetFields) };
}

/** `capUpdateManagers`: merges the oldest Update entries into `ancient-changes` per apiVersion. */
function capUpdateManagers(managed: Managed, max = DEFAULT_MAX_UPDATE_MANAGERS): void {
  const updaters = [...managed.entries()].filter(([, r]) => r.operation === 'Update').map(([k]) => k);
  if (updaters.length <= max) return;
  const secs = (k: string) => {
    const t = managed.get(k)?.time;
    return t ? Math.floor(Date.parse(t) / 1000) || 0 : 0;
  };
  updaters.sort((a, b) => secs(a) - secs(b) || (a < b ? -1 : a > b ? 1 : 0));
  const firstByVersion = new Map<string, string>();
  let length = updaters.length;
  for (let i = 0; i < updaters.length && length > max; i++) {
    const key = updaters[i]!;
    const r = managed.get(key)!;
    const bucket = managerKey({ manager: 'ancient-changes', operation: 'Update', apiVersion: r.apiVersion });
    const first = firstByVersion.get(r.apiVersion);
    if (first !== undefined) {
      if (!managed.has(bucket)) {
        const f = managed.get(first)!;
        managed.delete(first);
        managed.set(bucket, { ...f, manager: 'ancient-changes', operation: 'Update', subresource: undefined });
      }
      const b = managed.get(bucket)!;
      managed.set(bucket, { ...b, set: r.set.union(b.set), time: r.time });
      managed.delete(key);
      length--;
    } else firstByVersion.set(r.apiVersion, key);
  }
}

function stripFields(managed: Managed, key: string): void {
  const r = managed.get(key);
  if (!r) return;
  const s = r.set.difference(STRIP_SET);
  if (s.empty()) managed.delete(key);
  else managed.set(key, { ...r, set: s });
}

/**
 * Managed fields after an update operation (create, update, non-apply patch), as kube's
 * `FieldManager.Update` → `managedFieldsUpdater` → `stripMetaManager` → SMD `Updater.Update`:
 *
 * - managedFields sent in `next` (main resource only, non-empty and valid) replace the live ones,
 *   which lets clients edit or reset (`[{}]`) them; otherwise the live entries are used, and when
 *   those cannot be decoded tracking restarts from nothing;
 * - the fields that differ between `live` (empty on create) and `next` are taken from every other
 *   manager and added to the `manager`/Update/apiVersion/subresource entry, whose time becomes now;
 * - removed fields leave every set; empty entries are dropped; more than 10 Update entries are
 *   folded into `ancient-changes`.
 */
export function updateManagedFields(
  live: KubeObject | undefined,
  next: KubeObject,
  manager: string,
  schema: SchemaResolver,
  subresource = '',
): ManagedFieldsEntry[] {
  const steps = managedFieldsSteps(live, next, manager, schema, subresource);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * {@link updateManagedFields} in three stages — decoding the live entries, comparing the objects,
 * encoding the result — with `pause()` awaited between them (a large write gives the event loop a
 * turn there: for a map of 60,000 keys each stage takes 50 to 300 ms).
 */
export async function updateManagedFieldsInStages(
  live: KubeObject | undefined,
  next: KubeObject,
  manager: string,
  schema: SchemaResolver,
  subresource: string,
  pause: () => Promise<void>,
): Promise<ManagedFieldsEntry[]> {
  const steps = managedFieldsSteps(live, next, manager, schema, subresource);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await pause();
  }
}

/** The work of {@link updateManagedFields}, yielding between its stages. */
function* managedFieldsSteps(
  live: KubeObject | undefined,
  next: KubeObject,
  manager: string,
  schema: SchemaResolver,
  subresource: string,
): Generator<void, ManagedFieldsEntry[]> {
  const t = rootType(schema);
  let managed: Managed | undefined;
  const sent = next.metadata?.managedFields;
  if (!subresource && Array.isArray(sent) && sent.length) {
    try {
      managed = decodeManagedFields(sent);
      if (managed.size === 0) managed = undefined;
    } catch {
      managed = undefined;
    }
  }
  if (!managed) {
    try {
      managed = decodeManagedFields(live?.metadata?.managedFields, true);
    } catch {
      return [];
    }
  }
  yield;
  // compare() only reads its inputs: views without managedFields suffice (no deep copies on
  // every write).
  const oldV = managedFieldsHidden(live);
  const newV = managedFieldsHidden(next);
  const self = '\u0000current-operation';
  let ownSet: FieldSet;
  try {
    if (!live && managed.size === 0) {
      // A create: everything is added — one walk instead of a comparison with nothing.
      ownSet = addedFieldSet(newV, t).difference(STRIP_SET);
    } else {
      const cmp = smdUpdate(oldV, newV, t, managed, self, true);
      ownSet = cmp.modified.union(cmp.added).difference(STRIP_SET);
    }
  } catch (e) {
    if (e instanceof TypedError) return encodeManagedFields(managed);
    throw e;
  }
  const apiVersion = next.apiVersion ?? live?.apiVersion ?? '';
  if (!ownSet.empty()) {
    const key = managerKey({ manager, operation: 'Update', apiVersion, subresource });
    const prev = managed.get(key);
    managed.set(key, {
      manager, operation: 'Update', apiVersion, subresource: subresource || undefined,
      time: nowRFC3339(), set: prev ? ownSet.union(prev.set) : ownSet,
    });
  }
  capUpdateManagers(managed);
  yield;
  return encodeManagedFields(managed);
}

/** `NewConflictError` of conflict.go: 409 Conflict with one FieldManagerConflict cause per path. */
function conflictError(conflicts: Conflicts): StatusError {
  const list: Array<{ key: string; path: Path }> = [];
  for (const key of [...conflicts.keys()].sort()) for (const p of conflicts.get(key)!.paths()) list.push({ key, path: p });
  const causes: StatusCause[] = list.map((c) => ({
    reason: 'FieldManagerConflict', message: `conflict with ${printManager(c.key)}`, field: pathString(c.path),
  }));
  let message: string;
  if (list.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(list[0]!.key)}: ${pathString(list[0]!.path)}`;
  } else {
    const lines: string[] = [];
    for (const key of [...conflicts.keys()].sort()) {
      lines.push(`conflicts with ${printManager(key)}:`);
      for (const c of list) if (c.key === key) lines.push(`- ${pathString(c.path)}`);
    }
    message = `Apply failed with ${list.length} conflicts: ${lines.join('\n')}`;
  }
  return new StatusError(409, 'Conflict', message, { causes });
}

/** `objectGVKNN`: `<namespace>/<name>; <group>/<version>, Kind=<kind>`. */
function gvknn(o: KubeObject): string {
  const { group, version } = parseApiVersion(o.apiVersion ?? '');
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}; ${group}/${version}, Kind=${o.kind ?? ''}`;
}

/**
 * The failure of an applied configuration with keys its kind's schema does not declare, whatever
 * `fieldValidation` says: `failed to create typed patch object (<namespace>/<name>; <group>/<version>,
 * Kind=<kind>): .unknownField: field not declared in schema` (several: `errors:` and one
 * `\n  <error>` line each, the first 100) — k8s.io/apimachinery managedfields/internal/structuredmerge.go
 * Apply wrapping SMD's `ValidationErrors`. Namespace and name are the configuration's as sent.
 *
 * 400 BadRequest: kube returns this error unwrapped, which its handler turns into a 500 without
 * a reason (kubernetes issue 122480); the client sent the undeclared field, so it is a client
 * error here, as the pending upstream fix (kubernetes pull 139255) answers it. Undefined when
 * every key is declared.
 */
export function undeclaredFieldsError(config: KubeObject, schema: SchemaResolver): StatusError | undefined {
  const errors = undeclaredFields(config, rootType(schema));
  if (!errors.length) return undefined;
  const text = errors.length === 1 ? errors[0]! : ['errors:', ...errors.map((e) => `  ${e}`)].join('\n');
  return badRequest(`failed to create typed patch object (${gvknn(config)}): ${text}`);
}

/** SMD `Updater.prune`: drops what the applier owned last time, omits now and nobody else owns. */
function prune(merged: unknown, managers: Managed, lastSet: FieldSet | undefined, t: TypeNode): unknown {
  if (!lastSet || lastSet.empty()) return merged;
  const ens = (s: FieldSet) => ensureNamedFieldsAreMembers(s, t);
  const obj = (v: unknown) => (v === undefined ? {} : v);
  let pruned = obj(removeItems(merged, ens(lastSet), t));
  // addBackOwnedItems
  let managedAll = new FieldSet();
  for (const r of managers.values()) managedAll = managedAll.union(r.set);
  const mergedSet = ens(toFieldSet(merged, t));
  const prunedSet = ens(toFieldSet(pruned, t));
  pruned = obj(removeItems(merged, mergedSet.difference(prunedSet.union(ens(managedAll))), t));
  // addBackDanglingItems
  const prunedSet2 = ens(toFieldSet(pruned, t));
  return obj(removeItems(merged, mergedSet.difference(prunedSet2).intersection(ens(lastSet)), t));
}

/**
 * `lastAppliedManager.allowedConflictsFromLastApplied`: for `kubectl` migrating from client-side
 * apply, conflicts on fields where the last-applied annotation and the live object agree are allowed.
 */
function allowedConflictsFromLastApplied(live: KubeObject, t: TypeNode): FieldSet | undefined {
  const raw = live.metadata?.annotations?.[LAST_APPLIED_ANNOTATION];
  if (!raw) return undefined;
  try {
    const last = JSON.parse(raw) as unknown;
    if (last === null || typeof last !== 'object') return undefined;
    const lastSet = toFieldSet(last, t);
    const cmp = compare(last, withoutManagedFields(live), t);
    return lastSet.difference(cmp.modified);
  } catch {
    return undefined;
  }
}


/**
 * Server-side apply of `config` (an `application/apply-patch+yaml` body, already parsed) by
 * `manager` onto `live` (undefined → create), as kube's `FieldManager.Apply` with SMD
 * `Updater.Apply`:
 *
 * 1. the config is merged into the live object;
 * 2. the manager's Apply set becomes the config's field set, and fields it owned before but
 *    omits now are pruned unless another manager owns them;
 * 3. fields changed from live that other managers own are conflicts → 409 (unless `force`,
 *    which takes them over); equal values never conflict;
 * 4. for manager `kubectl`, conflicts on fields where the live object still matches its
 *    `last-applied-configuration` annotation are allowed (client-side → server-side apply
 *    migration), and an existing annotation is rewritten to the new config.
 *
 * `defaults` (the kind's defaulting) runs on the merged object before it is compared with the live one.
 * `resetFields` (the strategy's `GetResetFields`, field paths) are left out of the applier's set
 * and of conflicts, as SMD's ignore filter does.
 * Returns the new object with `metadata.managedFields` set. The Apply entry's time is renewed
 * only when the object changed (managedfieldsupdater.go).
 */
export function applyConfiguration(
  live: KubeObject | undefined,
  config: KubeObject,
  manager: string,
  force: boolean,
  schema: SchemaResolver,
  defaults?: (obj: KubeObject) => void,
  resetFields?: FieldSet,
): KubeObject {
  if (!isObj(config)) throw badRequest('apply patch must be a JSON/YAML object');
  if (!config.kind) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(config)}'`);
  if (!config.apiVersion) throw badRequest(`Object 'apiVersion' is missing in '${JSON.stringify(config)}'`);
  if (config.metadata !== undefined && !isObj(config.metadata)) throw badRequest('metadata must be an object');
  if (live?.apiVersion && config.apiVersion !== live.apiVersion) {
    throw badRequest(`Incorrect version specified in apply patch. Specified patch version: ${config.apiVersion}, expected: ${live.apiVersion}`);
  }
  if (live?.kind && config.kind !== live.kind) {
    throw badRequest(`Incorrect kind specified in apply patch. Specified patch kind: ${config.kind}, expected: ${live.kind}`);
  }
  if (config.metadata?.managedFields != null) throw badRequest('metadata.managedFields must be nil');
  const liveName = live?.metadata?.name;
  const name = config.metadata?.name;
  if (liveName && name && name !== liveName) {
    throw badRequest(`the name of the object (${name}) does not match the name on the URL (${liveName})`);
  }
  if (!liveName && !name) {
    const { group } = parseApiVersion(config.apiVersion);
    throw invalid(config.kind, group, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name is required' }]);
  }

  const t = rootType(schema);
  let managed: Managed;
  try {
    managed = decodeManagedFields(live?.metadata?.managedFields, true);
  } catch (e) {
    throw internalError(`failed to decode managed fields: ${(e as Error).message}`);
  }
  const cfg = clone(config);
  if (!cfg.metadata) cfg.metadata = {};
  let cfgSet: FieldSet;
  try {
    cfgSet = toFieldSet(cfg, t, false);
    // The strategy's reset fields are never owned by an applier, nor conflicts (kube's
    // GetResetFields through SMD's ignore filter): the strategy resets them anyway.
    if (resetFields) cfgSet = cfgSet.recursiveDifference(resetFields);
  } catch (e) {
    if (e instanceof TypedError) throw badRequest(`failed to create typed patch object (${gvknn(cfg)}): ${e.message}`);
    throw e;
  }
  const liveV = withoutManagedFields(live);
  const key = managerKey({ manager, operation: 'Apply' });

  const attempt = (forced: boolean): { obj: KubeObject | undefined; managed: Managed } => {
    const m: Managed = new Map(managed);
    let merged: unknown;
    try {
      merged = merge(liveV, cfg, t);
      const lastSet = m.get(key)?.set;
      m.set(key, { manager, operation: 'Apply', apiVersion: cfg.apiVersion!, time: m.get(key)?.time, set: cfgSet });
      merged = prune(merged, m, lastSet, t);
      smdUpdate(liveV, merged, t, m, key, forced, resetFields);
    } catch (e) {
      if (e instanceof TypedError) throw internalError(`failed to merge config: ${e.message}`);
      throw e;
    }
    stripFields(m, key);
    const obj = merged as KubeObject;
    if (!obj.metadata) obj.metadata = {};
    // kube's structuredMergeManager defaults the merged object before the change is judged: a
    // configuration that only leaves out (or empties) what defaults fill changes nothing.
    defaults?.(obj);
    const unchanged = live !== undefined && JSON.stringify(canon(obj)) === JSON.stringify(canon(liveV));
    return { obj: unchanged ? undefined : obj, managed: m };
  };

  let result: { obj: KubeObject | undefined; managed: Managed };
  try {
    result = attempt(force);
  } catch (e) {
    if (!(e instanceof ConflictsError)) throw e;
    if (manager !== 'kubectl' || !live) throw conflictError(e.conflicts);
    const allowed = allowedConflictsFromLastApplied(live, t);
    if (!allowed) throw conflictError(e.conflicts);
    const remaining: Conflicts = new Map();
    for (const [k, s] of e.conflicts) {
      const d = s.difference(allowed);
      if (!d.empty()) remaining.set(k, d);
    }
    if (remaining.size) throw conflictError(remaining);
    result = attempt(true);
  }

  const { managed: m } = result;
  let obj = result.obj;
  const entry = m.get(key);
  if (obj) {
    if (entry) entry.time = nowRFC3339();
  } else {
    obj = withoutManagedFields(live);
  }
  capUpdateManagers(m);
  // lastAppliedUpdater: keep an existing client-side apply annotation in sync for kubectl.
  const ann = obj.metadata.annotations;
  if (manager === 'kubectl' && ann && ann[LAST_APPLIED_ANNOTATION]) {
    const c = clone(config);
    if (c.metadata?.annotations) {
      delete c.metadata.annotations[LAST_APPLIED_ANNOTATION];
    }
    obj.metadata.annotations = { ...ann, [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(c)}\n` };
  }
  obj.metadata.managedFields = encodeManagedFields(m);
  return obj;
}

/** Canonical form for equality (key order independent). */
function canon(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canon);
  if (isObj(v)) {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) if (v[k] !== undefined) o[k] = canon(v[k]);
    return o;
  }
  return v;
}

/** Exposed for tests and callers that need raw access (e.g. a managedFields validator). */
export const internals = { decodeManagedFields, encodeManagedFields, managerKey, printManager, STRIP_SET };
