/**
 * Conversion of APIExport and APIBinding between `apis.kcp.io/v1alpha1` and the storage version
 * `v1alpha2`, with kcp's rules (sdk apis/apis/v1alpha2 types_apiexport_conversion.go,
 * types_apibinding_conversion.go):
 * - APIExport `latestResourceSchemas` (`<prefix>.<plural>.<group>`) ↔ `resources[]`
 *   `{name, group, schema, storage: {crd: {}}}`;
 * - permission claims: v1alpha1 `all`/`resourceSelector` ↔ v1alpha2 `verbs` (default `["*"]`),
 *   `defaultSelector` (exports) and `selector` (bindings; `all` ↔ `matchAll`).
 * What one version cannot express is kept as JSON in `apis.v1alpha2.kcp.io/*` annotations, so a
 * round trip through either version loses nothing. Pure functions on plain objects.
 */
import type { KubeObject } from '../apimachinery/meta.js';

type Obj = Record<string, unknown>;
type Claim = Obj & { group?: string; resource?: string; identityHash?: string };

const ANN = {
  resourceSchemas: 'apis.v1alpha2.kcp.io/resource-schemas',
  exportClaims: 'apis.v1alpha2.kcp.io/permission-claims',
  v1alpha1Claims: 'apis.v1alpha2.kcp.io/v1alpha1-permission-claims',
  bindingClaims: 'apis.v1alpha2.kcp.io/acceptable-permission-claims',
  statusExportClaims: 'apis.v1alpha2.kcp.io/status-export-permission-claims',
  statusAppliedClaims: 'apis.v1alpha2.kcp.io/status-applied-permission-claims',
} as const;

const claimKey = (c: Claim) => `${c.group ?? ''}/${c.resource ?? ''}/${c.identityHash ?? ''}`;
const asArray = (v: unknown): Obj[] => (Array.isArray(v) ? v as Obj[] : []);
const isAllVerbs = (v: unknown) => Array.isArray(v) && v.length === 1 && v[0] === '*';

function clone(o: KubeObject, apiVersion: string): KubeObject {
  const c = structuredClone(o);
  c.apiVersion = apiVersion;
  return c;
}

function takeAnnotation(o: KubeObject, key: string): Obj[] {
  const raw = o.metadata.annotations?.[key];
  if (raw === undefined) return [];
  delete o.metadata.annotations![key];
  if (!Object.keys(o.metadata.annotations!).length) delete o.metadata.annotations;
  try { return asArray(JSON.parse(raw)); } catch { return []; }
}

function putAnnotation(o: KubeObject, key: string, items: Obj[]): void {
  if (!items.length) return;
  o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [key]: JSON.stringify(items) };
}

const base = (c: Claim): Claim => ({
  ...(c.group !== undefined ? { group: c.group } : {}), ...(c.resource !== undefined ? { resource: c.resource } : {}),
  ...(c.identityHash ? { identityHash: c.identityHash } : {}),
});

/** v1alpha2 claims → v1alpha1 (`all: true`, or the v1alpha1 original); the rest stashed. */
function claimsDown(o: KubeObject, claims: Claim[], stash: string, v1Originals: Map<string, Obj>, selectorField?: 'selector'): Claim[] {
  const kept: Obj[] = [];
  const out = claims.map((c) => {
    const original = v1Originals.get(claimKey(c));
    const selector = selectorField ? c[selectorField] as Obj | undefined : c.defaultSelector as Obj | undefined;
    const representable = isAllVerbs(c.verbs) && (selectorField ? selector?.matchAll === true : selector === undefined);
    if (!representable) kept.push(c);
    const v1: Claim = { ...base(c), ...(original ? { ...(original.all !== undefined ? { all: original.all } : {}), ...(original.resourceSelector ? { resourceSelector: original.resourceSelector } : {}) } : { all: true }) };
    if (c.state !== undefined) v1.state = c.state;
    return v1;
  });
  putAnnotation(o, stash, kept);
  return out;
}

/** v1alpha1 claims → v1alpha2 (verbs `["*"]`, selector matchAll unless stashed otherwise). */
function claimsUp(o: KubeObject, claims: Claim[], stash: string, selectorField?: 'selector'): Claim[] & { originals: Obj[] } {
  const stashed = new Map(takeAnnotation(o, stash).map((c) => [claimKey(c), c] as const));
  const originals: Obj[] = [];
  const out = claims.map((c) => {
    if (c.resourceSelector !== undefined || c.all === false) originals.push(c);
    const v2 = stashed.get(claimKey(c));
    if (v2) return { ...v2, ...(c.state !== undefined ? { state: c.state } : {}) };
    const up: Claim = { ...base(c), verbs: ['*'] };
    if (selectorField) up.selector = { matchAll: true };
    if (c.state !== undefined) up.state = c.state;
    return up;
  });
  return Object.assign(out, { originals });
}

/** APIExport `apis.kcp.io/v1alpha2` (storage) → `v1alpha1`. */
export function apiExportToV1alpha1(stored: KubeObject): KubeObject {
  const o = clone(stored, 'apis.kcp.io/v1alpha1');
  const spec = (o.spec ?? {}) as Obj;
  const resources = asArray(spec.resources);
  const nonCRD = resources.filter((r) => r.storage !== undefined && (r.storage as Obj).crd === undefined);
  putAnnotation(o, ANN.resourceSchemas, nonCRD);
  const schemas = resources.filter((r) => !nonCRD.includes(r)).map((r) => String(r.schema));
  delete spec.resources;
  if (schemas.length) spec.latestResourceSchemas = schemas;
  const originals = new Map(takeAnnotation(o, ANN.v1alpha1Claims).map((c) => [claimKey(c), c] as const));
  if (spec.permissionClaims !== undefined) spec.permissionClaims = claimsDown(o, asArray(spec.permissionClaims), ANN.exportClaims, originals);
  return o;
}

/**
 * APIExport `v1alpha1` → `v1alpha2` (storage).
 * @throws {Error} for a schema name with fewer than three dot-separated parts (the API
 *   answers 422 first: APIExport admission checks the names)
 */
export function apiExportToV1alpha2(v1: KubeObject): KubeObject {
  const o = clone(v1, 'apis.kcp.io/v1alpha2');
  const spec = (o.spec ?? {}) as Obj;
  const resources: Obj[] = asArray(spec.latestResourceSchemas).map((s) => {
    const name = String(s);
    const parts = name.split('.');
    if (parts.length < 3) throw new Error(`invalid schema name "${name}": must be <prefix>.<resource>.<group>`);
    const group = parts.slice(2).join('.');
    return { name: parts[1], group: group === 'core' ? '' : group, schema: name, storage: { crd: {} } };
  });
  resources.push(...takeAnnotation(o, ANN.resourceSchemas));
  delete spec.latestResourceSchemas;
  if (resources.length) spec.resources = resources;
  if (spec.permissionClaims !== undefined) {
    const up = claimsUp(o, asArray(spec.permissionClaims), ANN.exportClaims);
    putAnnotation(o, ANN.v1alpha1Claims, up.originals);
    spec.permissionClaims = [...up];
  }
  return o;
}

/** APIBinding `apis.kcp.io/v1alpha2` (storage) → `v1alpha1`. */
export function apiBindingToV1alpha1(stored: KubeObject): KubeObject {
  const o = clone(stored, 'apis.kcp.io/v1alpha1');
  const spec = (o.spec ?? {}) as Obj;
  const status = o.status as Obj | undefined;
  const originals = new Map(takeAnnotation(o, ANN.v1alpha1Claims).map((c) => [claimKey(c), c] as const));
  if (spec.permissionClaims !== undefined) spec.permissionClaims = claimsDown(o, asArray(spec.permissionClaims), ANN.bindingClaims, originals, 'selector');
  if (status?.exportPermissionClaims !== undefined) status.exportPermissionClaims = claimsDown(o, asArray(status.exportPermissionClaims), ANN.statusExportClaims, new Map());
  if (status?.appliedPermissionClaims !== undefined) status.appliedPermissionClaims = claimsDown(o, asArray(status.appliedPermissionClaims), ANN.statusAppliedClaims, new Map(), 'selector');
  return o;
}

/** APIBinding `v1alpha1` → `v1alpha2` (storage). */
export function apiBindingToV1alpha2(v1: KubeObject): KubeObject {
  const o = clone(v1, 'apis.kcp.io/v1alpha2');
  const spec = (o.spec ?? {}) as Obj;
  const status = o.status as Obj | undefined;
  if (spec.permissionClaims !== undefined) {
    const up = claimsUp(o, asArray(spec.permissionClaims), ANN.bindingClaims, 'selector');
    putAnnotation(o, ANN.v1alpha1Claims, up.originals);
    spec.permissionClaims = [...up];
  }
  if (status?.exportPermissionClaims !== undefined) status.exportPermissionClaims = [...claimsUp(o, asArray(status.exportPermissionClaims), ANN.statusExportClaims)];
  if (status?.appliedPermissionClaims !== undefined) status.appliedPermissionClaims = [...claimsUp(o, asArray(status.appliedPermissionClaims), ANN.statusAppliedClaims, 'selector')];
  return o;
}
