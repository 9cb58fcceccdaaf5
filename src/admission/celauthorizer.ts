/**
 * Kubernetes' CEL authorization library for admission expressions — the `authorizer` variable of
 * ValidatingAdmissionPolicy, MutatingAdmissionPolicy and admission webhooks' `matchConditions`
 * (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/,
 * "Authorization check"; k8s.io/apiserver/pkg/cel/library/authz.go):
 *
 * - `authorizer.group(g).resource(r)` (a resource must not be empty), optionally
 *   `.subresource(s)`, `.namespace(ns)`, `.name(n)`, `.fieldSelector(s)`, `.labelSelector(s)`,
 *   then `.check(verb)` → a Decision;
 * - `authorizer.path(p).check(httpVerb)` for a non-resource path (must not be blank);
 * - `authorizer.serviceAccount(ns, name)`: an authorizer for that service account's user
 *   (`system:serviceaccount:<ns>:<name>`, groups `system:serviceaccounts` and
 *   `system:serviceaccounts:<ns>`, as kube's `ServiceAccountInfo.UserInfo`);
 * - `authorizer.requestResource`: a ResourceCheck of the request's group, resource, subresource,
 *   namespace and name (kube's `NewResourceAuthorizerVal`);
 * - Decision: `allowed()` (the authorizer said allow; no opinion is false), `reason()`,
 *   `errored()`, `error()`.
 *
 * Checks run as the request's user in the request's logical cluster with the shard's authorizer
 * (src/auth/authorizer.ts), given to the admission plugins as an {@link AdmissionAuthorize}.
 * Selectors are recorded but not used: kcp-ts's RBAC authorizer ignores them, as kube's RBAC does.
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { AuthzAttributes, Decision } from '../auth/authorizer.js';
import type { UserInfo } from '../registry/store.js';
import { CelLibraryError } from '../apiextensions/cel-library.js';
import { SERVICE_ACCOUNTS_GROUP, serviceAccountUsername } from '../auth/serviceaccounts.js';
import { validateName } from '../apimachinery/validation.js';

/** What one check asks (kube's `authorizer.AttributesRecord` as authz.go fills it), without user and logical cluster. */
export type AuthorizationCheck = Omit<AuthzAttributes, 'user' | 'cluster'>;

/**
 * Authorizes `user` for `attributes` in logical cluster `cluster` (kube's
 * `authorizer.Authorizer.Authorize` as the admission plugins receive it); may throw, which the
 * Decision reports as `errored()`.
 */
export type AdmissionAuthorize = (user: UserInfo, cluster: string, attributes: AuthorizationCheck) => Decision;

/** CEL type names, as kube declares them (authz.go `AuthorizerType` …). */
export const AUTHORIZER_TYPE = 'kubernetes.authorization.Authorizer';
const PATH_CHECK_TYPE = 'kubernetes.authorization.PathCheck';
const GROUP_CHECK_TYPE = 'kubernetes.authorization.GroupCheck';
const RESOURCE_CHECK_TYPE = 'kubernetes.authorization.ResourceCheck';
const DECISION_TYPE = 'kubernetes.authorization.Decision';

/** The result of a check (kube's `decisionVal`). */
export class AuthzDecision {
  constructor(readonly allowed: boolean, readonly reason: string, readonly error: string | undefined) {}
}

/** The `authorizer` value: a user, a logical cluster and the function that decides (kube's `authorizerVal`). */
export class CelAuthorizer {
  /** `authorizer.requestResource`: set on the request's own authorizer only (kube declares it as a separate variable). */
  requestResource?: ResourceCheck;
  constructor(readonly user: UserInfo, readonly cluster: string, readonly authorize: AdmissionAuthorize | undefined) {}

  /** Runs one check; an authorizer that throws (or none) gives an errored, not allowed, decision. */
  decide(attributes: AuthorizationCheck): AuthzDecision {
    if (!this.authorize) return new AuthzDecision(false, '', 'no authorizer available');
    try {
      const d = this.authorize(this.user, this.cluster, attributes);
      return new AuthzDecision(d.allowed, d.reason, undefined);
    } catch (err) {
      return new AuthzDecision(false, '', (err as Error).message);
    }
  }
}

/** `authorizer.path(p)` (kube's `pathCheckVal`). */
export class PathCheck {
  constructor(readonly authorizer: CelAuthorizer, readonly path: string) {}
}

/** `authorizer.group(g)` (kube's `groupCheckVal`). */
export class GroupCheck {
  constructor(readonly authorizer: CelAuthorizer, readonly group: string) {}
}

/** `….resource(r)` with its optional parts (kube's `resourceCheckVal`); every setter returns a copy. */
export class ResourceCheck {
  constructor(
    readonly authorizer: CelAuthorizer, readonly group: string, readonly resource: string,
    readonly subresource = '', readonly namespace = '', readonly name = '',
    readonly fieldSelector = '', readonly labelSelector = '',
  ) {}

  /** A copy with some parts replaced. */
  with(parts: Partial<Pick<ResourceCheck, 'subresource' | 'namespace' | 'name' | 'fieldSelector' | 'labelSelector'>>): ResourceCheck {
    const p = { subresource: this.subresource, namespace: this.namespace, name: this.name, fieldSelector: this.fieldSelector, labelSelector: this.labelSelector, ...parts };
    return new ResourceCheck(this.authorizer, this.group, this.resource, p.subresource, p.namespace, p.name, p.fieldSelector, p.labelSelector);
  }
}

/**
 * The `authorizer` of one admission evaluation (kube's `NewAuthorizerVal` plus
 * `NewResourceAuthorizerVal` for `authorizer.requestResource`): `user` in `cluster`, with the
 * request's group, resource, subresource, namespace and name.
 */
export function celAuthorizer(authorize: AdmissionAuthorize | undefined, user: UserInfo, cluster: string, request: { group: string; resource: string; subresource: string; namespace: string; name: string }): CelAuthorizer {
  const a = new CelAuthorizer(user, cluster, authorize);
  a.requestResource = new ResourceCheck(a, request.group, request.resource, request.subresource, request.namespace, request.name);
  return a;
}

/**
 * Registers the authorization library's types and functions on an admission CEL environment
 * (kube's `library.Authz()` and `library.AuthzSelectors()`, authz.go); declares nothing else —
 * the caller declares the `authorizer` variable with type {@link AUTHORIZER_TYPE}.
 */
export function registerAuthzLibrary(env: Environment): void {
  env.registerType(RESOURCE_CHECK_TYPE, { ctor: ResourceCheck, fields: {} });
  env.registerType(AUTHORIZER_TYPE, { ctor: CelAuthorizer, fields: { requestResource: RESOURCE_CHECK_TYPE } });
  env.registerType(PATH_CHECK_TYPE, { ctor: PathCheck, fields: {} });
  env.registerType(GROUP_CHECK_TYPE, { ctor: GroupCheck, fields: {} });
  env.registerType(DECISION_TYPE, { ctor: AuthzDecision, fields: {} });
  const fn = (signature: string, handler: (...args: never[]) => unknown) => env.registerFunction(signature, handler as (...args: unknown[]) => unknown);
  const fail = (message: string): never => { throw new CelLibraryError(message); };
  fn(`${AUTHORIZER_TYPE}.path(string): ${PATH_CHECK_TYPE}`, (a: CelAuthorizer, path: string) =>
    (path.trim() ? new PathCheck(a, path) : fail('path must not be empty')));
  fn(`${AUTHORIZER_TYPE}.group(string): ${GROUP_CHECK_TYPE}`, (a: CelAuthorizer, group: string) => new GroupCheck(a, group));
  fn(`${AUTHORIZER_TYPE}.serviceAccount(string, string): ${AUTHORIZER_TYPE}`, (a: CelAuthorizer, namespace: string, name: string) => {
    if (validateName(name, 'dns1123Subdomain').length) fail('Invalid service account name');
    if (validateName(namespace, 'dns1123Label').length) fail('Invalid service account namespace');
    return new CelAuthorizer({ name: serviceAccountUsername(namespace, name), groups: [SERVICE_ACCOUNTS_GROUP, `${SERVICE_ACCOUNTS_GROUP}:${namespace}`] }, a.cluster, a.authorize);
  });
  fn(`${GROUP_CHECK_TYPE}.resource(string): ${RESOURCE_CHECK_TYPE}`, (g: GroupCheck, resource: string) =>
    (resource.trim() ? new ResourceCheck(g.authorizer, g.group, resource) : fail('resource must not be empty')));
  for (const part of ['subresource', 'namespace', 'name', 'fieldSelector', 'labelSelector'] as const) {
    fn(`${RESOURCE_CHECK_TYPE}.${part}(string): ${RESOURCE_CHECK_TYPE}`, (r: ResourceCheck, v: string) => r.with({ [part]: v }));
  }
  fn(`${PATH_CHECK_TYPE}.check(string): ${DECISION_TYPE}`, (p: PathCheck, verb: string) => p.authorizer.decide({
    verb, isResourceRequest: false, path: p.path, apiGroup: '', resource: '', subresource: '', namespace: '', name: '',
  }));
  fn(`${RESOURCE_CHECK_TYPE}.check(string): ${DECISION_TYPE}`, (r: ResourceCheck, verb: string) => r.authorizer.decide({
    verb, isResourceRequest: true, path: '', apiGroup: r.group, resource: r.resource, subresource: r.subresource, namespace: r.namespace, name: r.name,
  }));
  fn(`${DECISION_TYPE}.allowed(): bool`, (d: AuthzDecision) => d.allowed);
  fn(`${DECISION_TYPE}.reason(): string`, (d: AuthzDecision) => d.reason);
  fn(`${DECISION_TYPE}.errored(): bool`, (d: AuthzDecision) => d.error !== undefined);
  fn(`${DECISION_TYPE}.error(): string`, (d: AuthzDecision) => d.error ?? '');
}
