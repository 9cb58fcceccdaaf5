/**
 * The apis.kcp.io controllers, with kcp's behaviour (pkg/reconciler/apis: apiexport,
 * apiexportendpointslice, apibinding, apibindingdeletion):
 * - **APIExport**: generates the identity (a Secret `kcp-system/<export>` with a random `key`,
 *   `spec.identity.secretRef` pointing at it), verifies it and publishes `status.identityHash`
 *   (condition `IdentityValid`); creates the export's APIExportEndpointSlice (same name, owned by
 *   the export) unless annotated `apiexports.apis.kcp.io/skip-endpointslice`.
 * - **APIExportEndpointSlice**: `status.endpoints` lists the apiexport virtual workspace URL of
 *   every shard of the instance (`<virtualWorkspaceURL>/services/apiexport/<cluster>/<export>`),
 *   condition `APIExportValid`.
 * - **APIBinding**: resolves the export and its schemas, refuses group/resources that a CRD or
 *   another binding of the workspace already serves (condition `BindingUpToDate`/
 *   `InitialBindingCompleted` False, reason `NamingConflicts`), records `status.boundResources`
 *   (then the registry serves them), the export's and the applied permission claims, and phase
 *   `Bound`; on deletion, deletes every object of the bound resources, then removes the
 *   `apis.kcp.io/apibinding-finalizer`.
 *
 * Keys are `<cluster>|<name>`.
 */
import { isStatus } from '../../apimachinery/errors.js';
import { setCondition, findCondition, type Condition } from '../../apimachinery/conditions.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { CRD_GR } from '../../apiextensions/customresources.js';
import { boundResourcesOf, claimMatchesAll, type APICatalog, type BoundResource, type ExportReference } from '../../apiexports/catalog.js';
import { APIBINDING_FINALIZER } from '../../apiexports/admission.js';
import { IDENTITY_SECRET_KEY, IDENTITY_SECRET_NAMESPACE, identityHash, newIdentityKey } from '../../apiexports/identity.js';
import type { ResourceDescriptor } from '../../apis/types.js';
import type { RequestScope, Store } from '../../registry/store.js';
import { entryObject, type WatchCache } from '../../storage/watchcache.js';
import { splitKey } from '../namespace/controller.js';
import { deleteAll, getIfExists, type ReconcileResult } from '../runtime.js';
import { BINDINGS_GR } from '../../apiexports/schemas.js';
import { asObj } from '../../apimachinery/objects.js';

/** Annotation of an APIExport that keeps its endpoint slice from being created (kcp's). */
export const SKIP_ENDPOINT_SLICE_ANNOTATION = 'apiexports.apis.kcp.io/skip-endpointslice';
/** How long a binding waits before looking again for an export or schema it cannot see yet (ms). */
const RETRY_MS = 1000;

/**
 * The wait before an object looks again for what it refers to (an export on another shard,
 * replicated later): a second while it is new, then a tenth of its age, at most 30 s — a binding
 * to an export that never comes costs little.
 */
function retryAfterMs(obj: KubeObject): number {
  const age = Date.now() - Date.parse(obj.metadata.creationTimestamp ?? '');
  return Number.isFinite(age) ? Math.min(30_000, Math.max(RETRY_MS, age / 10)) : RETRY_MS;
}

type Obj = Record<string, unknown>;
const conditionsOf = (o: KubeObject): Condition[] => (Array.isArray(asObj(o.status).conditions) ? asObj(o.status).conditions as Condition[] : []);

/** The apiexport virtual workspace URL of an export on a shard whose virtual workspaces are at `vwURL`. */
export function apiExportURL(vwURL: string, exportCluster: string, exportName: string): string {
  return `${vwURL.replace(/\/+$/, '')}/services/apiexport/${exportCluster}/${exportName}`;
}

/** Dependencies of the apis.kcp.io reconcilers. */
export interface APIsReconcilerDeps {
  cache: WatchCache;
  catalog: APICatalog;
  exports: Store;
  endpointSlices: Store;
  bindings: Store;
  secrets: Store;
  namespaces: Store;
  /** The one store of a bound resource's descriptor (registry). */
  boundStore: (d: ResourceDescriptor) => Store;
  /** The workspace path of a logical cluster on this shard (`root:org`), if known. */
  pathOf: (cluster: string) => string | undefined;
  /** The virtual workspace base URL of every shard of the instance. */
  shardVirtualWorkspaceURLs: () => string[];
  scope: (cluster: string, namespace?: string) => RequestScope;
}

async function writeStatus(store: Store, scope: RequestScope, obj: KubeObject, status: Obj): Promise<void> {
  if (JSON.stringify(status) === JSON.stringify(obj.status ?? {})) return;
  await store.update(scope, obj.metadata.name!, { ...obj, status }, 'status');
}

/** Creates an object unless it exists. */
async function createIfMissing(store: Store, scope: RequestScope, obj: KubeObject): Promise<void> {
  try { await store.create(scope, obj); } catch (err) { if (!isStatus(err, 409)) throw err; }
}

/** Reconciles one APIExport (identity, endpoint slice). */
export function apiExportReconciler(deps: APIsReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const scope = deps.scope(cluster);
    const found = await getIfExists(deps.exports, scope, name);
    if (!found || found.metadata.deletionTimestamp) return;
    let exp: KubeObject = found;
    const spec = asObj(exp.spec);
    let ref = asObj(asObj(spec.identity).secretRef);
    if (!ref.name) {
      // A new identity: the Secret first, then the reference to it.
      await createIfMissing(deps.namespaces, scope, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: IDENTITY_SECRET_NAMESPACE } });
      const secretScope = deps.scope(cluster, IDENTITY_SECRET_NAMESPACE);
      await createIfMissing(deps.secrets, secretScope, {
        apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: IDENTITY_SECRET_NAMESPACE }, type: 'Opaque',
        data: { [IDENTITY_SECRET_KEY]: Buffer.from(newIdentityKey()).toString('base64') },
      });
      ref = { namespace: IDENTITY_SECRET_NAMESPACE, name };
      exp = await deps.exports.update(scope, name, { ...exp, spec: { ...spec, identity: { ...asObj(spec.identity), secretRef: ref } } }).then((r) => deps.exports.decode(r.json));
    }
    const status = asObj(exp.status);
    let conds = conditionsOf(exp);
    const secret = await getIfExists(deps.secrets, deps.scope(cluster, String(ref.namespace ?? IDENTITY_SECRET_NAMESPACE)), String(ref.name));
    const keyB64 = asObj(secret?.data)[IDENTITY_SECRET_KEY];
    const next: Obj = { ...status };
    if (typeof keyB64 !== 'string') {
      conds = setCondition(conds, { type: 'IdentityValid', status: 'False', reason: 'IdentityVerificationFailed', severity: 'Error', message: secret ? `identity secret ${ref.namespace}/${ref.name} has no data.${IDENTITY_SECRET_KEY}` : `identity secret ${ref.namespace}/${ref.name} not found` });
    } else {
      const hash = identityHash(Buffer.from(keyB64, 'base64'));
      if (!status.identityHash) next.identityHash = hash;
      if (next.identityHash !== hash) {
        conds = setCondition(conds, { type: 'IdentityValid', status: 'False', reason: 'IdentityVerificationFailed', severity: 'Error', message: `hash mismatch: identity secret hash "${hash}" must match status.identityHash "${status.identityHash}"` });
      } else {
        conds = setCondition(conds, { type: 'IdentityValid', status: 'True' });
      }
    }
    next.conditions = conds;
    await writeStatus(deps.exports, scope, exp, next);

    if (exp.metadata.annotations?.[SKIP_ENDPOINT_SLICE_ANNOTATION] === undefined && !deps.cache.getEntry('apis.kcp.io/apiexportendpointslices', cluster, '', name)) {
      const path = deps.pathOf(cluster);
      await createIfMissing(deps.endpointSlices, scope, {
        apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExportEndpointSlice',
        metadata: { name, ownerReferences: [{ apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExport', name, uid: exp.metadata.uid!, controller: true, blockOwnerDeletion: true }] },
        spec: { export: { name, ...(path ? { path } : {}) } },
      });
    }
  };
}

/** Reconciles one APIExportEndpointSlice (its endpoints). */
export function endpointSliceReconciler(deps: APIsReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const scope = deps.scope(cluster);
    const slice = await getIfExists(deps.endpointSlices, scope, name);
    if (!slice || slice.metadata.deletionTimestamp) return;
    const ref = asObj(asObj(slice.spec).export) as unknown as ExportReference;
    const exportCluster = deps.catalog.exportCluster(cluster, ref);
    const exp = exportCluster ? deps.catalog.export(exportCluster, ref.name) : undefined;
    const status = asObj(slice.status);
    let conds = conditionsOf(slice);
    let endpoints: Obj[] = [];
    if (!exp) {
      conds = setCondition(conds, { type: 'APIExportValid', status: 'False', reason: 'APIExportNotFound', severity: 'Error', message: `Error getting APIExport ${ref.path ?? ''}|${ref.name}` });
    } else {
      conds = setCondition(conds, { type: 'APIExportValid', status: 'True' });
      endpoints = [...new Set(deps.shardVirtualWorkspaceURLs())].sort().map((u) => ({ url: apiExportURL(u, exportCluster!, ref.name) }));
    }
    await writeStatus(deps.endpointSlices, scope, slice, { ...status, conditions: conds, endpoints, shardSelector: status.shardSelector ?? '' });
    // An export on another shard may appear later (replication): look again.
    return exp ? undefined : { requeueAfterMs: retryAfterMs(slice) };
  };
}

/** The group/resources a CRD of the cluster serves, as `<plural>.<group>` → CRD name. */
function crdResources(cache: WatchCache, cluster: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of cache.list(CRD_GR, cluster)) {
    const spec = asObj(entryObject<KubeObject>(e).spec);
    out.set(`${asObj(spec.names).plural}.${spec.group}`, e.name);
  }
  return out;
}

/** Reconciles one APIBinding (binding, conflicts, claims; deletion). */
export function apiBindingReconciler(deps: APIsReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const scope = deps.scope(cluster);
    const binding = await getIfExists(deps.bindings, scope, name);
    if (!binding) return;
    if (binding.metadata.deletionTimestamp) return finalize(deps, scope, binding);
    const status = asObj(binding.status);
    let conds = conditionsOf(binding);
    const next: Obj = { ...status };
    const done = async (retry: boolean) => {
      next.conditions = conds;
      if (!next.phase) next.phase = 'Binding';
      await writeStatus(deps.bindings, scope, binding, next);
      return retry ? { requeueAfterMs: retryAfterMs(binding) } : undefined;
    };
    const waiting = (reason: string, message: string) => {
      conds = setCondition(conds, { type: 'APIExportValid', status: 'False', reason, severity: 'Error', message });
      if (findCondition(conds, 'InitialBindingCompleted')?.status !== 'True') {
        conds = setCondition(conds, { type: 'InitialBindingCompleted', status: 'False', reason: 'WaitingForEstablished', severity: 'Info', message: 'Waiting for API(s) to be established' });
        conds = setCondition(conds, { type: 'Ready', status: 'False', reason: 'WaitingForEstablished', severity: 'Info', message: 'Waiting for API(s) to be established' });
      }
    };

    const ref = asObj(asObj(asObj(binding.spec).reference).export) as unknown as ExportReference;
    const exportCluster = deps.catalog.exportCluster(cluster, ref);
    const exp = exportCluster ? deps.catalog.export(exportCluster, ref.name) : undefined;
    if (!exp) { waiting('APIExportNotFound', `APIExport ${ref.path ?? ''}|${ref.name} not found`); return done(true); }
    const expSpec = asObj(exp.spec);
    const hash = String(asObj(exp.status).identityHash ?? '');
    next.apiExportClusterName = exportCluster;
    next.exportPermissionClaims = Array.isArray(expSpec.permissionClaims) ? expSpec.permissionClaims : [];
    if (!hash) { waiting('MissingIdentityHash', `APIExport ${ref.path ?? ''}|${ref.name} is missing status.identityHash`); return done(true); }

    // The export's schemas, and the group/resources they would serve here.
    const resources = (Array.isArray(expSpec.resources) ? expSpec.resources as Obj[] : []).filter((r) => !r.storage || asObj(r.storage).crd !== undefined);
    const schemas: KubeObject[] = [];
    for (const r of resources) {
      const schema = deps.catalog.schema(exportCluster!, String(r.schema));
      if (!schema) { waiting('InternalError', `Invalid APIExport. Please contact the APIExport owner to resolve: APIResourceSchema "${r.schema}" not found`); return done(true); }
      schemas.push(schema);
    }
    conds = setCondition(conds, { type: 'APIExportValid', status: 'True' });

    // Conflicts: a CRD of the workspace, or another binding, serving the same group/resource.
    const crds = crdResources(deps.cache, cluster);
    const otherBound = new Map<string, string>();
    for (const e of deps.cache.list(BINDINGS_GR, cluster)) {
      if (e.name === name) continue;
      for (const b of boundResourcesOf(e)) otherBound.set(`${b.resource}.${b.group}`, e.name);
    }
    const conflicts: string[] = [];
    const bound: BoundResource[] = [];
    const previous = new Map<string, BoundResource>(((status.boundResources ?? []) as BoundResource[]).map((b) => [`${b.resource}.${b.group}`, b]));
    for (const schema of schemas) {
      const spec = asObj(schema.spec);
      const group = String(spec.group ?? '');
      const plural = String(asObj(spec.names).plural);
      const gr = `${plural}.${group}`;
      const crd = crds.get(gr);
      const other = otherBound.get(gr);
      if (crd) { conflicts.push(`naming conflict with CustomResourceDefinition "${crd}": spec.names.plural=${plural} is forbidden`); continue; }
      if (other) { conflicts.push(`naming conflict with APIBinding "${other}" bound to APIExport ${ref.path ? `${ref.path}:` : ''}${ref.name}: spec.names.plural=${plural} is forbidden`); continue; }
      const versions = Array.isArray(spec.versions) ? spec.versions as Obj[] : [];
      const storage = String(versions.find((v) => v.storage === true)?.name ?? versions[0]?.name ?? '');
      const storageVersions = [...new Set([...(previous.get(gr)?.storageVersions ?? []), storage])].sort();
      bound.push({ group, resource: plural, schema: { name: schema.metadata.name!, UID: schema.metadata.uid!, identityHash: hash }, storageVersions });
    }
    next.boundResources = bound;
    if (conflicts.length) {
      const message = `Unable to bind APIs: ${conflicts.join('; ')}`;
      conds = setCondition(conds, { type: 'BindingUpToDate', status: 'False', reason: 'NamingConflicts', severity: 'Error', message });
      if (findCondition(conds, 'InitialBindingCompleted')?.status !== 'True') {
        conds = setCondition(conds, { type: 'InitialBindingCompleted', status: 'False', reason: 'NamingConflicts', severity: 'Error', message });
        conds = setCondition(conds, { type: 'Ready', status: 'False', reason: 'NamingConflicts', severity: 'Error', message });
      }
      next.phase = status.phase === 'Bound' ? 'Bound' : 'Binding';
      return done(false);
    }

    // Permission claims: applied = the export's claims this binding accepted.
    const claimKey = (c: Obj) => `${c.group ?? ''}/${c.resource}/${c.identityHash ?? ''}`;
    const exportClaims = new Map(((next.exportPermissionClaims ?? []) as Obj[]).map((c) => [claimKey(c), c] as const));
    const accepted = ((asObj(binding.spec).permissionClaims ?? []) as Obj[]).filter((c) => c.state === 'Accepted');
    const unknown = accepted.filter((c) => !exportClaims.has(claimKey(c)));
    // A claim limited to some objects (a selector other than matchAll) is not applied: this
    // server shares all of a claimed resource or nothing, and never more than was accepted.
    const selective = accepted.filter((c) => exportClaims.has(claimKey(c)) && !claimMatchesAll(c));
    next.appliedPermissionClaims = accepted.filter((c) => exportClaims.has(claimKey(c)) && claimMatchesAll(c)).map(({ state: _state, ...c }) => c);
    conds = setCondition(conds, unknown.length
      ? { type: 'PermissionClaimsValid', status: 'False', reason: 'InvalidPermissionClaims', severity: 'Error', message: `${unknown.length} unexpected and/or invalid permission claims (${unknown.map((c) => `${c.resource}.${c.group ?? ''}`).join(', ')})` }
      : { type: 'PermissionClaimsValid', status: 'True' });
    conds = setCondition(conds, selective.length
      ? { type: 'PermissionClaimsApplied', status: 'False', reason: 'SelectorNotSupported', severity: 'Error', message: `Permission claims have not been fully applied: selectors other than matchAll are not supported (${selective.map((c) => `${c.resource}.${c.group ?? ''}`).join(', ')})` }
      : { type: 'PermissionClaimsApplied', status: 'True' });
    conds = setCondition(conds, { type: 'BindingUpToDate', status: 'True' });
    conds = setCondition(conds, { type: 'InitialBindingCompleted', status: 'True' });
    conds = setCondition(conds, { type: 'Ready', status: 'True' });
    next.phase = 'Bound';
    return done(false);
  };
}

/** Deletes the objects of a deleted binding's resources, then lets the binding go. */
async function finalize(deps: APIsReconcilerDeps, scope: RequestScope, binding: KubeObject): Promise<ReconcileResult | void> {
  const finalizers = binding.metadata.finalizers ?? [];
  if (!finalizers.includes(APIBINDING_FINALIZER)) return;
  const status = asObj(binding.status);
  const exportCluster = String(status.apiExportClusterName ?? '');
  let remaining = 0;
  const left: string[] = [];
  // Another binding of the workspace serving the same schema and identity keeps the objects.
  const adopted = new Set<string>();
  for (const e of deps.cache.list(BINDINGS_GR, scope.cluster)) {
    if (e.name === binding.metadata.name || e.json.includes('"deletionTimestamp"')) continue;
    for (const b of boundResourcesOf(e)) adopted.add(`${b.schema.UID}/${b.schema.identityHash}`);
  }
  for (const b of (status.boundResources ?? []) as BoundResource[]) {
    if (adopted.has(`${b.schema.UID}/${b.schema.identityHash}`)) continue;
    const schema = deps.catalog.schema(exportCluster, b.schema.name);
    const d = schema ? deps.catalog.descriptorsOf(schema, b.schema.identityHash)[0] : undefined;
    if (!d) continue; // the schema is gone: nothing can be served or found through it
    const n = await deleteAll(deps.boundStore(d), scope);
    if (n > 0) { remaining += n; left.push(`${b.resource}.${b.group} has ${n} resource instances`); }
  }
  if (remaining > 0) {
    const conds = setCondition(conditionsOf(binding), { type: 'BindingResourceDeleteSuccess', status: 'False', reason: 'SomeResourcesRemain', severity: 'Info', message: `Some resources are remaining: ${left.join(', ')}` });
    await writeStatus(deps.bindings, scope, binding, { ...status, conditions: conds });
    return { requeueAfterMs: RETRY_MS };
  }
  await deps.bindings.update(scope, binding.metadata.name!, { ...binding, metadata: { ...binding.metadata, finalizers: finalizers.filter((f) => f !== APIBINDING_FINALIZER) } });
}
