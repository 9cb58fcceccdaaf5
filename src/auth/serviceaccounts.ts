/**
 * ServiceAccount tokens of a shard: the TokenRequest subresource
 * (`POST /clusters/<c>/api/v1/namespaces/<ns>/serviceaccounts/<name>/token`), the bearer-token
 * authenticator for the tokens it issues, and the rule that a token is only valid in the logical
 * cluster whose ServiceAccount it names.
 *
 * Tokens are kube's bound service account tokens (k8s.io/kubernetes pkg/serviceaccount/claims.go,
 * pkg/registry/core/serviceaccount/storage/token.go), signed ES256 with the shard's
 * `sa.key` (src/pki/store.ts). Claims:
 *
 * ```json
 * { "iss": "https://kcp.default.svc", "sub": "system:serviceaccount:<ns>:<name>", "aud": ["…"],
 *   "exp": …, "iat": …, "nbf": …, "jti": "<uuid>",
 *   "kubernetes.io": { "clusterName": "<logical cluster>", "namespace": "<ns>",
 *                      "serviceaccount": { "name": "<name>", "uid": "<uid>" },
 *                      "secret": { "name": "…", "uid": "…" } } }
 * ```
 *
 * `kubernetes.io.clusterName` is the claim kcp's Kubernetes fork adds (kcp-dev/kubernetes
 * pkg/serviceaccount/claims.go); the issuer default is kcp's `--service-account-issuer` default
 * `https://kcp.default.svc` (kcp pkg/server/options/options.go), and, as in kube-apiserver, the
 * API audiences default to the issuer.
 *
 * An authenticated token becomes the user `system:serviceaccount:<ns>:<name>` (uid = the
 * ServiceAccount's uid) in groups `system:serviceaccounts`, `system:serviceaccounts:<ns>`,
 * `system:authenticated`, with extra `authentication.kcp.io/cluster-name: [<cluster>]`
 * (kcp's `serviceaccount.ClusterNameKey`) and `authentication.kubernetes.io/credential-id:
 * ["JTI=<jti>"]` (kube ≥ 1.30).
 */
import { createHash, createPrivateKey, createPublicKey, randomUUID } from 'node:crypto';
import { SignJWT, errors as joseErrors, importPKCS8, importSPKI, jwtVerify, type JWTPayload } from 'jose';
import { badRequest, conflict, invalid } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store, UserInfo } from '../registry/store.js';
import type { CacheEntry } from '../storage/watchcache.js';
import { LRUCache } from 'lru-cache';

/** User extra naming the logical cluster of a service account (kcp's `serviceaccount.ClusterNameKey`). */
export const SA_CLUSTER_NAME_EXTRA = 'authentication.kcp.io/cluster-name';
/** User extra naming the token (kube's `authentication.kubernetes.io/credential-id`, value `JTI=<jti>`). */
export const CREDENTIAL_ID_EXTRA = 'authentication.kubernetes.io/credential-id';
/** Default token issuer (`iss`), kcp's default `--service-account-issuer`. */
export const DEFAULT_SA_ISSUER = 'https://kcp.default.svc';
/** Group of every service account. */
export const SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
/** User name prefix of service accounts. */
export const SERVICE_ACCOUNT_USER_PREFIX = 'system:serviceaccount:';
/** Watch-cache group/resource of ServiceAccounts. */
export const SERVICE_ACCOUNTS_GR = 'core/serviceaccounts';
/** `spec.expirationSeconds` when not given: one hour (k8s.io/api authentication/v1 defaults). */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** Smallest `spec.expirationSeconds`: 10 minutes (kube's `MinTokenAgeSec`). */
export const MIN_TOKEN_EXPIRATION_SECONDS = 600;
/** Largest `spec.expirationSeconds`: 2^32 seconds (kube's `MaxTokenAgeSec`). */
export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;
/** Clock skew tolerated on `exp`/`nbf`, and on deletion of the bound objects: 60 s (go-jose's `DefaultLeeway`). */
export const TOKEN_LEEWAY_SECONDS = 60;

const AUTHENTICATED = 'system:authenticated';
const PRIVATE_CLAIM = 'kubernetes.io';

/** `system:serviceaccount:<namespace>:<name>` (kube's `serviceaccount.MakeUsername`). */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_USER_PREFIX}${namespace}:${name}`;
}

/** The ServiceAccount a token names, as read back from its claims. */
interface TokenSubject {
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
  secret?: { name: string; uid: string };
}

/** A verified token, kept while valid so that a token is verified once. */
interface VerifiedToken {
  subject: TokenSubject;
  /** `exp` and `nbf` in Unix seconds. */
  exp: number;
  nbf: number;
  /** The user the token authenticates as (shared, never mutated). */
  user: UserInfo;
}

/** Result of a token authenticator: a user, why not (→ 401), or undefined when not its token. */
export type TokenAuthResult = { user: UserInfo } | { error: string } | undefined;

/** What the authenticator reads of the current state (the watch cache in the server). */
export interface ObjectLookup {
  getEntry(groupResource: string, cluster: string, namespace: string, name: string): CacheEntry | undefined;
}

/** Options of {@link ServiceAccountTokens.load}. */
export interface ServiceAccountTokensOptions {
  /** PKCS#8 PEM of the ECDSA P-256 signing key (`sa.key` of the PKI directory). */
  privateKeyPem: string;
  /** Current objects (ServiceAccounts, Secrets of bound tokens). */
  objects: ObjectLookup;
  /** `iss` of issued tokens and the only issuer accepted (default {@link DEFAULT_SA_ISSUER}). */
  issuer?: string;
  /**
   * The API server's audiences (`--api-audiences`): default audiences of issued tokens; a token
   * authenticates only if it names one of them. Default `[issuer]`, as kube-apiserver.
   */
  audiences?: string[];
  /** Verified tokens kept in memory (default 10,000; least recently used evicted first). */
  cacheSize?: number;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** Parsed identity of a cached object: uid and deletion time (ms, or undefined). */
interface ObjectIdentity { uid: string; deletedAtMs: number | undefined }
const identities = new WeakMap<CacheEntry, ObjectIdentity>();

function identityOf(e: CacheEntry): ObjectIdentity {
  let id = identities.get(e);
  if (!id) {
    const m = (JSON.parse(e.json) as KubeObject).metadata;
    id = { uid: m.uid ?? '', deletedAtMs: m.deletionTimestamp ? Date.parse(m.deletionTimestamp) : undefined };
    identities.set(e, id);
  }
  return id;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Issues and authenticates the shard's service account tokens. Create with
 * {@link ServiceAccountTokens.load} (imports the key).
 */
export class ServiceAccountTokens {
  /** `iss` of issued tokens. */
  readonly issuer: string;
  /** The API audiences (default audiences of tokens). */
  readonly audiences: readonly string[];
  /** Verified tokens: an LRU cache of `cacheSize` (a miss verifies the signature again). */
  private readonly verified: LRUCache<string, VerifiedToken>;
  private readonly pending = new Map<string, Promise<VerifiedToken | { error: string }>>();
  private readonly now: () => number;

  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
    /** `kid` header: base64url SHA-256 of the public key's DER, as kube-apiserver's key id. */
    private readonly keyId: string,
    private readonly objects: ObjectLookup,
    opts: ServiceAccountTokensOptions,
  ) {
    this.issuer = opts.issuer ?? DEFAULT_SA_ISSUER;
    this.audiences = opts.audiences?.length ? [...opts.audiences] : [this.issuer];
    this.verified = new LRUCache({ max: opts.cacheSize ?? 10_000 });
    this.now = opts.now ?? Date.now;
  }

  /**
   * Imports the signing key. Throws an Error when the PEM is not an ECDSA P-256 private key.
   */
  static async load(opts: ServiceAccountTokensOptions): Promise<ServiceAccountTokens> {
    const key = createPrivateKey(opts.privateKeyPem);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('service account signing key must be an ECDSA P-256 key');
    }
    const pkcs8 = key.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pub = createPublicKey(key);
    const spkiPem = pub.export({ type: 'spki', format: 'pem' }).toString();
    const kid = createHash('sha256').update(pub.export({ type: 'spki', format: 'der' })).digest('base64url');
    return new ServiceAccountTokens(await importPKCS8(pkcs8, 'ES256'), await importSPKI(spkiPem, 'ES256'), kid, opts.objects, opts);
  }

  /**
   * Signs a token for a ServiceAccount of `cluster`. `expirationSeconds` is the lifetime;
   * `secret` binds the token to a Secret (invalid once it is gone). Returns the JWT and its `exp`
   * (Unix seconds).
   */
  async issue(cluster: string, sa: KubeObject, opts: { audiences: string[]; expirationSeconds: number; secret?: { name: string; uid: string } }): Promise<{ token: string; exp: number }> {
    const now = Math.floor(this.now() / 1000);
    const exp = now + opts.expirationSeconds;
    const k8s: Record<string, unknown> = {
      clusterName: cluster,
      namespace: sa.metadata.namespace,
      serviceaccount: { name: sa.metadata.name, uid: sa.metadata.uid },
    };
    if (opts.secret) k8s.secret = opts.secret;
    const token = await new SignJWT({ [PRIVATE_CLAIM]: k8s })
      .setProtectedHeader({ alg: 'ES256', kid: this.keyId })
      .setIssuer(this.issuer)
      .setSubject(serviceAccountUsername(sa.metadata.namespace ?? '', sa.metadata.name ?? ''))
      .setAudience(opts.audiences)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.privateKey);
    return { token, exp };
  }

  /**
   * Authenticates a bearer token. Returns undefined when the token is not a JWT (another
   * authenticator's), `{error}` when it is not a valid token of this shard (bad signature, other
   * issuer, no API audience, expired, ServiceAccount or bound Secret gone or re-created), else the
   * user. Synchronous once a token has been verified (verified tokens are cached until they
   * expire); the first use of a token returns a promise (signature check with jose).
   */
  authenticate(token: string): TokenAuthResult | Promise<TokenAuthResult> {
    if (!JWT_SHAPE.test(token)) return undefined;
    const hit = this.verified.get(token);
    if (hit) return this.check(hit, token);
    let p = this.pending.get(token);
    if (!p) {
      p = this.verify(token);
      this.pending.set(token, p);
      p.finally(() => this.pending.delete(token)).catch(() => undefined); // the caller sees the rejection
    }
    return p.then((v) => ('error' in v ? v : this.check(v, token)));
  }

  /** Signature, issuer, audience and claim shape (once per token). */
  private async verify(token: string): Promise<VerifiedToken | { error: string }> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.publicKey, {
        algorithms: ['ES256'], issuer: this.issuer, audience: [...this.audiences],
        clockTolerance: TOKEN_LEEWAY_SECONDS, currentDate: new Date(this.now()), requiredClaims: ['sub', 'exp'],
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) return { error: 'service account token has expired' };
      if (err instanceof joseErrors.JOSEError) return { error: `invalid service account token: ${err.code}` };
      throw err;
    }
    const subject = parseSubject(payload);
    if (!subject) return { error: 'service account token claims are invalid' };
    const extra: Record<string, string[]> = { [SA_CLUSTER_NAME_EXTRA]: [subject.cluster] };
    if (typeof payload.jti === 'string' && payload.jti) extra[CREDENTIAL_ID_EXTRA] = [`JTI=${payload.jti}`];
    const v: VerifiedToken = {
      subject, exp: payload.exp!, nbf: payload.nbf ?? 0,
      user: {
        name: serviceAccountUsername(subject.namespace, subject.name), uid: subject.uid,
        groups: [SERVICE_ACCOUNTS_GROUP, `${SERVICE_ACCOUNTS_GROUP}:${subject.namespace}`, AUTHENTICATED], extra,
      },
    };
    this.verified.set(token, v);
    return v;
  }

  /** Checks done on every use: time window, ServiceAccount (and bound Secret) still the same object. */
  private check(v: VerifiedToken, token: string): TokenAuthResult {
    const nowMs = this.now();
    const now = nowMs / 1000;
    if (now > v.exp + TOKEN_LEEWAY_SECONDS) {
      this.verified.delete(token);
      return { error: 'service account token has expired' };
    }
    if (now < v.nbf - TOKEN_LEEWAY_SECONDS) return { error: 'service account token is not valid yet' };
    const s = v.subject;
    // kube's validator: objects deleted more than the leeway ago no longer back a token.
    const gone = (id: ObjectIdentity) => id.deletedAtMs !== undefined && id.deletedAtMs < nowMs - TOKEN_LEEWAY_SECONDS * 1000;
    const sa = this.objects.getEntry(SERVICE_ACCOUNTS_GR, s.cluster, s.namespace, s.name);
    if (!sa) return { error: `serviceaccounts "${s.name}" not found` };
    const said = identityOf(sa);
    if (gone(said)) return { error: `service account ${s.namespace}/${s.name} has been deleted` };
    if (said.uid !== s.uid) return { error: `service account UID (${said.uid}) does not match claim (${s.uid})` };
    if (s.secret) {
      const secret = this.objects.getEntry('core/secrets', s.cluster, s.namespace, s.secret.name);
      if (!secret) return { error: 'service account token has been invalidated' };
      const id = identityOf(secret);
      if (gone(id) || id.uid !== s.secret.uid) return { error: 'service account token has been invalidated' };
    }
    return { user: v.user };
  }
}

function parseSubject(p: JWTPayload): TokenSubject | undefined {
  const k = p[PRIVATE_CLAIM] as { clusterName?: unknown; namespace?: unknown; serviceaccount?: { name?: unknown; uid?: unknown }; secret?: { name?: unknown; uid?: unknown } } | undefined;
  if (!k || typeof k !== 'object') return undefined;
  const { clusterName, namespace } = k;
  const name = k.serviceaccount?.name; const uid = k.serviceaccount?.uid;
  if (typeof clusterName !== 'string' || !clusterName || typeof namespace !== 'string' || !namespace
    || typeof name !== 'string' || !name || typeof uid !== 'string' || !uid) return undefined;
  if (p.sub !== serviceAccountUsername(namespace, name)) return undefined;
  const out: TokenSubject = { cluster: clusterName, namespace, name, uid };
  if (k.secret !== undefined) {
    if (typeof k.secret?.name !== 'string' || typeof k.secret.uid !== 'string') return undefined;
    out.secret = { name: k.secret.name, uid: k.secret.uid };
  }
  return out;
}

/** Stores the TokenRequest handler reads. */
export interface TokenRequestDeps {
  tokens: ServiceAccountTokens;
  serviceAccounts: Store;
  /** For `spec.boundObjectRef` of kind Secret. */
  secrets: Store;
}

interface TokenRequestSpec {
  audiences?: unknown;
  expirationSeconds?: unknown;
  boundObjectRef?: { kind?: unknown; apiVersion?: unknown; name?: unknown; uid?: unknown } | null;
}

/**
 * `create` on `serviceaccounts/token`: validates the TokenRequest `body` (kube's
 * `ValidateTokenRequest`: `spec.expirationSeconds` defaults to 3600 and must be within
 * [600, 2^32] → 422 otherwise), reads the ServiceAccount (404 when missing), resolves
 * `spec.boundObjectRef` (only `v1` `Secret`: 400 for other kinds, 404 when missing, 409 when its
 * uid differs), defaults `spec.audiences` to the API audiences and returns the TokenRequest with
 * `status.token` and `status.expirationTimestamp` (answered with 201).
 * `scope` carries the logical cluster and namespace; `name` is the ServiceAccount.
 */
export async function createTokenRequest(deps: TokenRequestDeps, scope: RequestScope, name: string, body: unknown): Promise<KubeObject> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the body must be a TokenRequest object');
  const req = body as KubeObject & { spec?: TokenRequestSpec };
  if (req.kind !== undefined && req.kind !== 'TokenRequest') throw badRequest(`the body must be a TokenRequest, got kind "${String(req.kind)}"`);
  if (req.apiVersion !== undefined && req.apiVersion !== 'authentication.k8s.io/v1') {
    throw badRequest(`the body must be a TokenRequest in authentication.k8s.io/v1, got apiVersion "${String(req.apiVersion)}"`);
  }
  // A spec of another JSON type fails decoding in kube (400), it is not an empty spec.
  if (req.spec !== undefined && req.spec !== null && (typeof req.spec !== 'object' || Array.isArray(req.spec))) {
    throw badRequest(`TokenRequest.spec: decode: expected an object, got ${JSON.stringify(req.spec)}`);
  }
  const spec: TokenRequestSpec = req.spec ?? {};
  const causes = [];
  const expirationSeconds = spec.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS;
  if (typeof expirationSeconds !== 'number' || !Number.isInteger(expirationSeconds)) {
    causes.push({ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${JSON.stringify(expirationSeconds)}: must be an integer` });
  } else if (expirationSeconds < MIN_TOKEN_EXPIRATION_SECONDS) {
    causes.push({ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes` });
  } else if (expirationSeconds > MAX_TOKEN_EXPIRATION_SECONDS) {
    causes.push({ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds` });
  }
  let audiences: string[] = [];
  if (spec.audiences !== undefined && spec.audiences !== null) {
    if (!Array.isArray(spec.audiences) || !spec.audiences.every((a) => typeof a === 'string')) {
      causes.push({ reason: 'FieldValueInvalid', field: 'spec.audiences', message: 'Invalid value: must be a list of strings' });
    } else audiences = spec.audiences as string[];
  }
  if (causes.length) throw invalid('TokenRequest', 'authentication.k8s.io', '', causes);

  const sa = JSON.parse(await deps.serviceAccounts.get(scope, name)) as KubeObject;
  let secret: { name: string; uid: string } | undefined;
  const ref = spec.boundObjectRef;
  if (ref) {
    const apiVersion = typeof ref.apiVersion === 'string' ? ref.apiVersion : '';
    const kind = typeof ref.kind === 'string' ? ref.kind : '';
    const slash = apiVersion.lastIndexOf('/');
    const group = slash < 0 ? '' : apiVersion.slice(0, slash);
    const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
    // Pods (and Nodes) are not served by kcp: only Secrets can hold a token.
    if (group !== '' || kind !== 'Secret') throw badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
    const refName = typeof ref.name === 'string' ? ref.name : '';
    // kube reads the bound object by name; an empty name fails its key function (400).
    if (!refName) throw badRequest('Name parameter required.');
    const obj = JSON.parse(await deps.secrets.get(scope, refName)) as KubeObject;
    const uid = obj.metadata.uid ?? '';
    if (typeof ref.uid === 'string' && ref.uid && ref.uid !== uid) {
      throw conflict({ group: '', resource: 'Secret' }, refName, `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`);
    }
    secret = { name: refName, uid };
  }
  if (!audiences.length) audiences = [...deps.tokens.audiences];
  const cluster = scope.cluster;
  const { token, exp } = await deps.tokens.issue(cluster, sa, { audiences, expirationSeconds: expirationSeconds as number, secret });
  const metadata = { ...(req.metadata && typeof req.metadata === 'object' ? req.metadata : {}), creationTimestamp: null as unknown as string };
  metadata.name ||= name;
  metadata.namespace ||= scope.namespace;
  return {
    kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', metadata,
    spec: { audiences, expirationSeconds, boundObjectRef: ref ?? null },
    status: { token, expirationTimestamp: new Date(exp * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') },
  };
}

/** kcp's extra of a user valid only in some logical clusters: values `cluster:<name>`. */
export const SCOPES_EXTRA = 'authentication.kcp.io/scopes';

/** URI SAN prefix naming the logical cluster a certificate issued through a CSR is valid in. */
export const LOGICAL_CLUSTER_URI_PREFIX = 'urn:kcp-ts:logical-cluster:';

/**
 * The extra of a client certificate's user from its subjectAltName text (Node's
 * `subjectaltname` / `X509Certificate.subjectAltName`: `URI:…, DNS:…`): a URI SAN
 * `urn:kcp-ts:logical-cluster:<c>` scopes the user to `<c>` ({@link SCOPES_EXTRA}); undefined for
 * certificates without one.
 */
export function certificateScopes(subjectAltName: string | undefined): Record<string, string[]> | undefined {
  const clusters = [...(subjectAltName ?? '').matchAll(/URI:urn:kcp-ts:logical-cluster:([^,\s]+)/g)].map((m) => `cluster:${m[1]}`);
  return clusters.length ? { [SCOPES_EXTRA]: clusters } : undefined;
}

/**
 * kcp's scoping of service accounts to their logical cluster
 * (kcp-dev/kubernetes pkg/registry/rbac/validation/kcp.go `IsForeign`/`IsInScope`/`scopeDown`,
 * `withWarrants`): a service account whose `authentication.kcp.io/cluster-name` extra does not
 * name `cluster` is foreign there. RBAC then sees it only as its global identity
 * `system:kcp:serviceaccount:<its cluster>:<ns>:<name>` with the single group
 * `system:authenticated` (kcp also matches bindings to `system:anonymous`; bindings to that user
 * are not honoured here). Returns that user for a foreign service account, undefined for anything
 * else (other users, local service accounts, service accounts without the extra, which kcp treats
 * as local, e.g. impersonated ones).
 */
export function serviceAccountClusterMismatch(user: UserInfo, cluster: string): UserInfo | undefined {
  // A user scoped to logical clusters (a certificate issued through a CertificateSigningRequest
  // of one workspace) is, outside them, only an authenticated nobody: the name a workspace's
  // admins could put in such a certificate never matches another workspace's bindings.
  const scopes = user.extra?.[SCOPES_EXTRA];
  if (scopes !== undefined && !scopes.includes(`cluster:${cluster}`)) {
    return { name: `system:kcp:scoped:${scopes[0]?.replace(/^cluster:/, '') ?? ''}:${user.name}`, groups: user.groups.includes(AUTHENTICATED) ? [AUTHENTICATED] : [], extra: user.extra };
  }
  if (!user.name.startsWith(SERVICE_ACCOUNT_USER_PREFIX)) return undefined;
  const clusters = user.extra?.[SA_CLUSTER_NAME_EXTRA];
  if (clusters === undefined || clusters.includes(cluster)) return undefined;
  const suffix = user.name.slice(SERVICE_ACCOUNT_USER_PREFIX.length);
  const out: UserInfo = { name: `system:kcp:serviceaccount:${clusters[0] ?? ''}:${suffix}`, groups: user.groups.includes(AUTHENTICATED) ? [AUTHENTICATED] : [] };
  if (user.extra) out.extra = user.extra;
  return out;
}
