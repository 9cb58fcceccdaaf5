/**
 * Access reviews (authorization.k8s.io/v1): SelfSubjectAccessReview answers for the caller,
 * SubjectAccessReview for the user in `spec`, LocalSubjectAccessReview for the user in `spec`
 * within the request's namespace (https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access).
 * All are create-only and never stored; `kubectl auth can-i` uses the first.
 */
import { type StatusCause, badRequest, invalid } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { UserInfo } from '../registry/store.js';
import type { Authorizer } from './authorizer.js';
import { userInfoJSON } from './authn.js';

interface ResourceAttributes { namespace?: string; verb?: string; group?: string; resource?: string; subresource?: string; name?: string }
interface NonResourceAttributes { path?: string; verb?: string }

/** The JSON type of a value in Go's decoding-error words. */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

/**
 * Checks the types of a review's `spec` fields as decoding into kube's Go structs does: reviews
 * are not stored, so no schema validation sees them before the authorizer does. Throws 400 `json:
 * cannot unmarshal <type> into Go struct field <path> of type <type>`.
 */
function checkReviewSpec(review: KubeObject): void {
  const kind = review.kind ?? 'SubjectAccessReview';
  const fail = (path: string, v: unknown, goType: string) => {
    throw badRequest(`json: cannot unmarshal ${jsonType(v)} into Go struct field ${kind}.${path} of type ${goType}`);
  };
  const str = (o: Record<string, unknown>, base: string, keys: string[]) => {
    for (const k of keys) if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'string') fail(`${base}.${k}`, o[k], 'string');
  };
  const obj = (v: unknown, path: string): Record<string, unknown> | undefined => {
    if (v === undefined || v === null) return undefined;
    if (jsonType(v) !== 'object') fail(path, v, 'struct');
    return v as Record<string, unknown>;
  };
  const spec = obj(review.spec, 'spec');
  if (!spec) return;
  str(spec, 'spec', ['user', 'uid', 'namespace']);
  const groups = spec.groups;
  if (groups !== undefined && groups !== null) {
    if (!Array.isArray(groups)) fail('spec.groups', groups, '[]string');
    for (const g of groups as unknown[]) if (typeof g !== 'string') fail('spec.groups', g, 'string');
  }
  const extra = obj(spec.extra, 'spec.extra');
  for (const v of Object.values(extra ?? {})) {
    if (v !== null && !Array.isArray(v)) fail('spec.extra', v, 'v1.ExtraValue');
    for (const x of (v ?? []) as unknown[]) if (typeof x !== 'string') fail('spec.extra', x, 'string');
  }
  const ra = obj(spec.resourceAttributes, 'spec.resourceAttributes');
  if (ra) str(ra, 'spec.resourceAttributes', ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name']);
  const nra = obj(spec.nonResourceAttributes, 'spec.nonResourceAttributes');
  if (nra) str(nra, 'spec.nonResourceAttributes', ['path', 'verb']);
}

/**
 * Evaluates an access review object against the authorizer for `user` in `cluster`; returns
 * the object with `status` set (`deep`: see `Authorizer.authorize`). Throws 422 when neither or
 * both attribute kinds are given (a LocalSubjectAccessReview: `localSubjectAccessReviewCauses`).
 * SubjectAccessReview and LocalSubjectAccessReview are evaluated for the user in `spec`.
 */
export function evaluateAccessReview(authz: Authorizer, review: KubeObject, user: UserInfo, cluster: string, clusterExists: boolean, deep = false): KubeObject {
  checkReviewSpec(review);
  const spec = (review.spec ?? {}) as { resourceAttributes?: ResourceAttributes; nonResourceAttributes?: NonResourceAttributes; user?: string; groups?: string[]; uid?: string };
  if (review.kind === 'LocalSubjectAccessReview') {
    const causes = localSubjectAccessReviewCauses(review);
    if (causes.length) throw invalid('LocalSubjectAccessReview', 'authorization.k8s.io', '', causes);
  }
  const ra = spec.resourceAttributes; const nra = spec.nonResourceAttributes;
  if ((ra && nra) || (!ra && !nra)) {
    throw invalid(review.kind ?? 'SubjectAccessReview', 'authorization.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'spec.resourceAttributes', message: 'Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified' }]);
  }
  let subject = user;
  if (review.kind === 'SubjectAccessReview' || review.kind === 'LocalSubjectAccessReview') {
    if (!spec.user && !spec.groups?.length) {
      throw invalid('SubjectAccessReview', 'authorization.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'spec.user', message: 'Required value: at least one of user or group must be specified' }]);
    }
    subject = { name: spec.user ?? '', groups: spec.groups ?? [], uid: spec.uid };
  }
  const d = authz.authorize(ra ? {
    user: subject, verb: ra.verb ?? '', cluster, isResourceRequest: true, namespace: ra.namespace ?? '',
    apiGroup: ra.group ?? '', resource: ra.resource ?? '', subresource: ra.subresource ?? '', name: ra.name ?? '', path: '',
  } : {
    user: subject, verb: nra!.verb ?? '', cluster, isResourceRequest: false, namespace: '', apiGroup: '', resource: '', subresource: '', name: '', path: nra!.path ?? '',
  }, clusterExists, deep);
  const status: Record<string, unknown> = { allowed: d.allowed };
  if (d.reason) status.reason = d.reason;
  return { ...review, metadata: { ...review.metadata, creationTimestamp: null as unknown as string }, status };
}

const isSet = (v: unknown): boolean => v !== undefined && v !== null;

/** A value of an Invalid cause as kube's field errors print it: strings quoted, absent as null. */
function shown(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : isSet(v) ? JSON.stringify(v) : 'null';
}

/** Whether an ObjectMeta field holds anything but its zero value (Go's semantic equality). */
function nonZero(v: unknown): boolean {
  if (!isSet(v) || v === '' || v === 0 || v === false) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

/**
 * Validation of a LocalSubjectAccessReview, as kube's `ValidateLocalSubjectAccessReview`
 * (k8s.io/kubernetes pkg/apis/authorization/validation): the SubjectAccessReview spec rules
 * (exactly one of resourceAttributes / nonResourceAttributes, a user or a group), metadata empty
 * but for the namespace, `spec.resourceAttributes.namespace` equal to `metadata.namespace` (the
 * request's: the generic create handler already answered 400 for a body naming another one), and
 * no nonResourceAttributes. All causes are `FieldValueInvalid`, answered together as one 422.
 */
export function localSubjectAccessReviewCauses(review: KubeObject): StatusCause[] {
  const spec = (review.spec ?? {}) as Record<string, unknown>;
  const ra = spec.resourceAttributes as ResourceAttributes | null | undefined;
  const nra = spec.nonResourceAttributes;
  const causes: StatusCause[] = [];
  const bad = (path: string, value: unknown, detail: string) => causes.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${shown(value)}: ${detail}` });
  if (isSet(ra) && isSet(nra)) bad('spec.nonResourceAttributes', nra, 'cannot be specified in combination with resourceAttributes');
  if (!isSet(ra) && !isSet(nra)) bad('spec.resourceAttributes', nra, 'exactly one of nonResourceAttributes or resourceAttributes must be specified');
  const groups = Array.isArray(spec.groups) ? spec.groups : [];
  if (!spec.user && groups.length === 0) bad('spec.user', spec.user ?? '', 'at least one of user or group must be specified');
  const meta = review.metadata as Record<string, unknown>;
  if (Object.entries(meta).some(([k, v]) => k !== 'namespace' && k !== 'managedFields' && nonZero(v))) bad('metadata', meta, 'must be empty except for namespace');
  const namespace = meta.namespace ?? '';
  if (isSet(ra) && (ra!.namespace ?? '') !== namespace) bad('spec.resourceAttributes.namespace', ra!.namespace ?? '', 'must match metadata.namespace');
  if (isSet(nra)) bad('spec.nonResourceAttributes', nra, 'disallowed on this kind of request');
  return causes;
}

/**
 * SelfSubjectRulesReview: the rules the caller has in `spec.namespace` of the logical cluster
 * (what `kubectl auth can-i --list` prints). Throws 422 without a namespace, as kube-apiserver.
 */
export function evaluateRulesReview(authz: Authorizer, review: KubeObject, user: UserInfo, cluster: string, clusterExists: boolean): KubeObject {
  checkReviewSpec(review);
  const namespace = (review.spec as { namespace?: string } | undefined)?.namespace ?? '';
  if (!namespace) {
    throw invalid('SelfSubjectRulesReview', 'authorization.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'spec.namespace', message: 'Required value: no namespace on request' }]);
  }
  const { resourceRules, nonResourceRules } = authz.rulesFor(user, cluster, namespace, clusterExists);
  return { ...review, metadata: { ...review.metadata, creationTimestamp: null as unknown as string }, status: { resourceRules, nonResourceRules, incomplete: false } };
}

/**
 * SelfSubjectReview (authentication.k8s.io/v1, `kubectl auth whoami`): the caller's user info as
 * the server authenticated it (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#self-subject-review).
 */
export function evaluateSelfSubjectReview(review: KubeObject, user: UserInfo): KubeObject {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', metadata: { ...review.metadata, creationTimestamp: null as unknown as string }, status: { userInfo: userInfoJSON(user) } };
}
