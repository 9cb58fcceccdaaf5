/**
 * kube's defaulting of the built-in kinds that have no module of their own (core and rbac), as
 * `ResourceStrategy.defaults` (src/apis/types.ts): what k8s.io/kubernetes
 * pkg/apis/<group>/<version>/zz_generated.defaults.go `SetObjectDefaults_<Kind>` calls, with the
 * `SetDefaults_*` of the defaults.go beside it. Kinds of other modules default in their own module:
 * webhook configurations (src/admission/webhooks.ts), admission policies and their bindings
 * (src/admission/policies.ts, src/admission/mutating.ts), CRDs (src/apiextensions/crdvalidation.ts
 * `applyCRDDefaults`), flow control (src/flowcontrol/types.ts).
 *
 * Kinds kube gives no visible default: ConfigMap (`SetDefaults_ConfigMap` makes `data` an empty
 * map, which JSON omits), ServiceAccount, core and events.k8s.io Event, Lease, Role, ClusterRole,
 * CertificateSigningRequest, the access and token reviews. ResourceQuota's and LimitRange's
 * `SetDefaults_ResourceList` rounds quantities up to milli precision; kcp-ts stores quantities as
 * sent (docs/architecture.md, "Defaulting").
 *
 * Every function takes any shape: a field of the wrong type is left for validation to refuse.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import { isObj } from '../apimachinery/objects.js';

/** The group of RBAC's kinds (`rbacv1.GroupName`), the default of `roleRef.apiGroup`. */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** The label every namespace carries with its own name (`v1.LabelMetadataName`). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * Namespace (`SetDefaults_Namespace`, `SetDefaults_NamespaceStatus`): the label
 * `kubernetes.io/metadata.name` set to the name when the name is known (a `generateName` create
 * gets it from the strategy once named), and `status.phase` `Active` when empty.
 */
export function defaultNamespace(obj: KubeObject): void {
  const meta = obj.metadata;
  if (typeof meta.name === 'string' && meta.name.length > 0 && (meta.labels === undefined || isObj(meta.labels))) {
    meta.labels = { ...meta.labels, [NAMESPACE_NAME_LABEL]: meta.name };
  }
  if (obj.status === undefined || obj.status === null) obj.status = {};
  if (isObj(obj.status) && (obj.status.phase === undefined || obj.status.phase === null || obj.status.phase === '')) obj.status.phase = 'Active';
}

/** Secret (`SetDefaults_Secret`): `type` `Opaque` when empty. */
export function defaultSecret(obj: KubeObject): void {
  if (obj.type === undefined || obj.type === null || obj.type === '') obj.type = 'Opaque';
}

const LIMIT_RANGE_RESOURCE_LISTS = ['max', 'min', 'default', 'defaultRequest'] as const;

/**
 * LimitRange (`SetDefaults_LimitRangeItem`), for each item of type `Container`: `default` gets
 * `max`'s value of each resource it lacks; `defaultRequest` gets `default`'s, then `min`'s, of
 * each resource it lacks (both maps are created, empty if nothing fills them).
 */
export function defaultLimitRange(obj: KubeObject): void {
  const spec = obj.spec;
  if (!isObj(spec) || !Array.isArray(spec.limits)) return;
  for (const item of spec.limits as unknown[]) {
    if (!isObj(item) || item.type !== 'Container') continue;
    if (LIMIT_RANGE_RESOURCE_LISTS.some((k) => item[k] !== undefined && item[k] !== null && !isObj(item[k]))) continue;
    const def = (item.default ??= {}) as Record<string, unknown>;
    const defReq = (item.defaultRequest ??= {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries((item.max ?? {}) as Record<string, unknown>)) if (!(k in def)) def[k] = v;
    for (const [k, v] of Object.entries(def)) if (!(k in defReq)) defReq[k] = v;
    for (const [k, v] of Object.entries((item.min ?? {}) as Record<string, unknown>)) if (!(k in defReq)) defReq[k] = v;
  }
}

/**
 * RoleBinding and ClusterRoleBinding (`SetDefaults_RoleBinding`, `SetDefaults_ClusterRoleBinding`,
 * `SetDefaults_Subject`): an empty `roleRef.apiGroup` is `rbac.authorization.k8s.io`; a subject
 * without `apiGroup` gets `rbac.authorization.k8s.io` when its kind is User or Group, and stays
 * without one ("", the core group) when it is a ServiceAccount.
 */
export function defaultRoleBinding(obj: KubeObject): void {
  if (obj.roleRef === undefined || obj.roleRef === null) obj.roleRef = {};
  if (isObj(obj.roleRef) && (obj.roleRef.apiGroup === undefined || obj.roleRef.apiGroup === null || obj.roleRef.apiGroup === '')) obj.roleRef.apiGroup = RBAC_GROUP;
  if (!Array.isArray(obj.subjects)) return;
  for (const s of obj.subjects as unknown[]) {
    if (!isObj(s) || (s.apiGroup !== undefined && s.apiGroup !== null && s.apiGroup !== '')) continue;
    if (s.kind === 'User' || s.kind === 'Group') s.apiGroup = RBAC_GROUP;
  }
}
