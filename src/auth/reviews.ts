/**
 * Access reviews (authorization.k8s.io/v1): SelfSubjectAccessReview answers for the caller,
 * SubjectAccessReview for the user in `spec` (https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access).
 * Both are create-only and never stored; `kubectl auth can-i` uses the former.
 */
import { invalid } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { UserInfo } from '../registry/store.js';
import type { Authorizer } from './authorizer.js';
import { userInfoJSON } from './authn.js';

interface ResourceAttributes { namespace?: string; verb?: string; group?: string; resource?: string; subresource?: string; name?: string }
interface NonResourceAttributes { path?: string; verb?: string }

/**
 * Evaluates an access review object against the authorizer for `user` in `cluster`; returns
 * the object with `status` set. Throws 422 when neither or both attribute kinds are given.
 */
export function evaluateAccessReview(authz: Authorizer, review: KubeObject, user: UserInfo, cluster: string, clusterExists: boolean): KubeObject {
  const spec = (review.spec ?? {}) as { resourceAttributes?: ResourceAttributes; nonResourceAttributes?: NonResourceAttributes; user?: string; groups?: string[]; uid?: string };
  const ra = spec.resourceAttributes; const nra = spec.nonResourceAttributes;
  if ((ra && nra) || (!ra && !nra)) {
    throw invalid(review.kind ?? 'SubjectAccessReview', 'authorization.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'spec.resourceAttributes', message: 'Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified' }]);
  }
  let subject = user;
  if (review.kind === 'SubjectAccessReview') {
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
  }, clusterExists);
  const status: Record<string, unknown> = { allowed: d.allowed };
  if (d.reason) status.reason = d.reason;
  return { ...review, metadata: { ...review.metadata, creationTimestamp: null as unknown as string }, status };
}

/**
 * SelfSubjectRulesReview: the rules the caller has in `spec.namespace` of the logical cluster
 * (what `kubectl auth can-i --list` prints). Throws 422 without a namespace, as kube-apiserver.
 */
export function evaluateRulesReview(authz: Authorizer, review: KubeObject, user: UserInfo, cluster: string, clusterExists: boolean): KubeObject {
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
