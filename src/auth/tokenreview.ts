/**
 * TokenReview (authentication.k8s.io/v1, create-only, never stored): authenticates `spec.token`
 * with the shard's bearer-token authenticators — the static token file and service-account
 * tokens — and answers what they decided, as kube-apiserver's
 * pkg/registry/authentication/tokenreview/storage.go does
 * (https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-review-v1/):
 *
 * - an empty `spec.token` → 400 `token is required for TokenReview in authentication`;
 * - a token nobody recognises → 201 with `authenticated` false and `error` (`invalid bearer
 *   token`, or the service-account authenticator's reason), never a 401;
 * - `spec.audiences` empty → the API audiences; a token must share one of them. Static tokens
 *   and OpenID Connect tokens are audience-agnostic (kube's `WrapAudienceAgnosticToken` around its
 *   token file and JWT authenticators, pkg/kubeapiserver/authenticator/config.go): they
 *   authenticate only for the API audiences. `status.audiences` is the intersection.
 * - A service-account token of another logical cluster authenticates as the authenticator
 *   answers everywhere: the service account with its `authentication.kcp.io/cluster-name` extra
 *   naming its own cluster (the authorizer, not the authenticator, scopes it down elsewhere).
 */
import { decodeJwt } from 'jose';
import { badRequest } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { userInfoJSON, type Authenticator } from './authn.js';

/** What a TokenReview needs of the shard. */
export interface TokenReviewDeps {
  authn: Pick<Authenticator, 'authenticate'>;
  /** The API audiences (`--api-audiences`; the service-account issuer by default). */
  apiAudiences: readonly string[];
  /**
   * `iss` of the shard's service-account tokens: only their `aud` counts; every other credential
   * (static and OpenID Connect tokens) is audience-agnostic. Undefined: any JWT's `aud` counts.
   */
  serviceAccountIssuer?: string;
}

/**
 * Evaluates a TokenReview `review` (already type-checked by the store): returns it with `status`.
 * @throws StatusError 400 when `spec.token` is empty or not a string
 */
export async function evaluateTokenReview(deps: TokenReviewDeps, review: KubeObject): Promise<KubeObject> {
  const spec = (review.spec && typeof review.spec === 'object' ? review.spec : {}) as { token?: unknown; audiences?: unknown };
  if (spec.token !== undefined && typeof spec.token !== 'string') throw badRequest(`json: cannot unmarshal ${typeof spec.token} into Go struct field TokenReviewSpec.spec.token of type string`);
  const token = (spec.token as string | undefined) ?? '';
  if (!token) throw badRequest('token is required for TokenReview in authentication');
  const requested = Array.isArray(spec.audiences) ? (spec.audiences as unknown[]).filter((a): a is string => typeof a === 'string') : [];
  const auds = requested.length ? requested : [...deps.apiAudiences];
  const status: Record<string, unknown> = { user: {} };
  const answer = await deps.authn.authenticate(undefined, `Bearer ${token}`);
  if (!answer) status.error = 'invalid bearer token';
  else if ('error' in answer) status.error = answer.error;
  else {
    // Audiences of the credential: a JWT's `aud`, else (static tokens) the API audiences.
    let tokenAuds = [...deps.apiAudiences];
    try {
      const { aud, iss } = decodeJwt(token);
      const own = deps.serviceAccountIssuer === undefined || iss === deps.serviceAccountIssuer;
      if (aud !== undefined && own) tokenAuds = Array.isArray(aud) ? aud : [aud];
    } catch { /* not a JWT */ }
    const common = auds.filter((a) => tokenAuds.includes(a));
    if (!common.length) status.error = 'invalid bearer token';
    else {
      status.authenticated = true;
      status.user = userInfoJSON(answer.user);
      status.audiences = common;
    }
  }
  const out: KubeObject = {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview',
    metadata: { ...(review.metadata ?? {}), creationTimestamp: null as unknown as string },
    spec: { ...spec, ...(requested.length ? { audiences: requested } : {}) },
    status,
  };
  return out;
}
