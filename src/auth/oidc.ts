/**
 * JWT (OpenID Connect) authenticators of a structured authentication configuration
 * (src/auth/authconfig.ts), as kube 1.34's k8s.io/apiserver/plugin/pkg/authenticator/token/oidc
 * with go-oidc v2 verifying:
 *
 * - A token is an authenticator's only when its unverified `iss` equals the issuer URL; any other
 *   token is left to the other authenticators (kube's union authenticator). A token of the issuer
 *   that fails is refused (401), with kube's reason.
 * - Discovery (`{url}/.well-known/openid-configuration`, or `discoveryURL`) and JWKS are fetched
 *   over HTTPS trusting `certificateAuthority` (else the system roots), 30 s timeout, at most
 *   {@link MAX_DOCUMENT_BYTES} per document. The discovery document's `issuer` must equal the URL.
 *   Discovery is retried every {@link RETRY_INTERVAL_MS} until it works (kube polls every 10 s);
 *   until then the issuer's tokens are refused with `oidc: authenticator not initialized`.
 * - Keys are cached; a token whose `kid` (or, without `kid`, whose signature) matches no cached
 *   key makes the keys be fetched again — at most once per {@link KEY_REFRESH_INTERVAL_MS}, so
 *   tokens with random `kid`s cannot make the server hammer the issuer (go-oidc refetches on every
 *   miss); concurrent misses share one fetch.
 * - Signature algorithms: RS256/384/512, ES256/384/512, PS256/384/512 with the structured
 *   configuration (kube allows all of them then), RS256 only with the `--oidc-*` flags (kube's
 *   `--oidc-signing-algs` default).
 * - `exp` is required and checked with no leeway, `nbf` with 1 minute (go-oidc v2); `iat` is not
 *   checked. `aud` must contain one of the audiences.
 * - Claim mappings, claim validation rules and user validation rules as kube's
 *   jwtAuthenticator.AuthenticateToken, with its error messages; CEL per src/auth/oidccel.ts.
 * - A `jti` claim adds `authentication.kubernetes.io/credential-id: JTI=<jti>` to extra.
 * - Successful verifications are cached by a hash of the token for at most
 *   {@link SUCCESS_CACHE_TTL_MS} (and never past `exp`), at most {@link SUCCESS_CACHE_ENTRIES}
 *   tokens (kube's token cache in front of its authenticators does the same with 10 s).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { Agent, request } from 'undici';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { LRUCache } from 'lru-cache';
import type { UserInfo } from '../registry/store.js';
import type { AuthenticationConfiguration, JWTAuthenticatorConfig } from './authconfig.js';
import { celStringList, evaluateAuthenticationExpression, jsonToCel } from './oidccel.js';

/** Largest discovery document or JWKS read from an issuer (bytes). */
export const MAX_DOCUMENT_BYTES = 1024 * 1024;
/** Keys of one issuer kept (a JWKS with more is cut). */
export const MAX_KEYS = 100;
/** Least time between two key fetches caused by unknown `kid`s (ms). */
export const KEY_REFRESH_INTERVAL_MS = 10_000;
/** Time between discovery attempts while an issuer is unreachable (ms; kube's poll interval). */
export const RETRY_INTERVAL_MS = 10_000;
/** Timeout of a discovery or JWKS fetch (ms; kube's http.Client timeout). */
export const FETCH_TIMEOUT_MS = 30_000;
/** How long a verified token's user is reused (ms). */
export const SUCCESS_CACHE_TTL_MS = 10_000;
/** Verified tokens cached. */
export const SUCCESS_CACHE_ENTRIES = 10_000;
/** nbf leeway (go-oidc v2 verify.go). */
const NBF_LEEWAY_S = 60;

/** Every algorithm kube allows (oidc.AllValidSigningAlgorithms). */
export const ALL_SIGNING_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'] as const;

/** What an authenticator answers: not its token (undefined), a user, or why the token is refused. */
export type JWTResult = undefined | { user: UserInfo } | { error: string };

/** Reads a JSON document over HTTPS with a size bound. */
async function fetchJSON(url: string, dispatcher: Agent): Promise<unknown> {
  const res = await request(url, { method: 'GET', dispatcher, headersTimeout: FETCH_TIMEOUT_MS, bodyTimeout: FETCH_TIMEOUT_MS, headers: { accept: 'application/json' } });
  const chunks: Buffer[] = []; let size = 0;
  for await (const c of res.body) {
    size += (c as Buffer).length;
    if (size > MAX_DOCUMENT_BYTES) { res.body.destroy(); throw new Error(`${url}: response larger than ${MAX_DOCUMENT_BYTES} bytes`); }
    chunks.push(c as Buffer);
  }
  const body = Buffer.concat(chunks).toString('utf8');
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${body.slice(0, 200)}`);
  try { return JSON.parse(body); } catch (err) { throw new Error(`${url}: malformed response body: ${(err as Error).message}`); }
}

/** The unverified `iss` of a compact JWT, or undefined (kube's untrustedIssuer). */
export function untrustedIssuer(token: string): string | undefined {
  if (token.trimStart().startsWith('{')) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const iss = (JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { iss?: unknown }).iss;
    if (typeof iss !== 'string') return undefined;
    return iss === 'accounts.google.com' ? 'https://accounts.google.com' : iss;
  } catch { return undefined; }
}

type KeyEntry = { kid?: string; alg?: string; key: CryptoKey | Uint8Array };

/** One configured JWT authenticator. */
export class JWTAuthenticator {
  readonly issuer: string;
  private readonly dispatcher: Agent;
  private readonly audiences: Set<string>;
  private jwksURI: string | undefined;
  private discovering: Promise<void> | undefined;
  private discoveryError: { message: string; at: number } | undefined;
  private keys: KeyEntry[] = [];
  private keysFetchedAt = 0;
  private fetchingKeys: Promise<void> | undefined;
  /** Number of JWKS fetches made (observable by tests and metrics). */
  keyFetches = 0;

  /**
   * `config` must be valid (src/auth/authconfig.ts validates it). `algorithms`: the accepted
   * signature algorithms. `now` (seconds since the epoch) is for tests.
   */
  constructor(readonly config: JWTAuthenticatorConfig, private readonly algorithms: readonly string[] = ALL_SIGNING_ALGORITHMS, private readonly now: () => number = () => Date.now() / 1000) {
    this.issuer = config.issuer.url;
    this.audiences = new Set(config.issuer.audiences);
    const ca = config.issuer.certificateAuthority;
    if (ca) for (const pem of ca.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) new X509Certificate(pem);
    this.dispatcher = new Agent({ connect: { ...(ca ? { ca } : {}), timeout: FETCH_TIMEOUT_MS }, connections: 4 });
  }

  /** Starts discovery in the background (retried on failure); authentication also starts it. */
  start(): void { void this.discover().catch(() => undefined); }

  /** Closes the HTTP connections to the issuer. */
  async close(): Promise<void> { await this.dispatcher.close(); }

  /** Runs discovery unless done, in flight, or failed less than {@link RETRY_INTERVAL_MS} ago. */
  private discover(): Promise<void> {
    if (this.jwksURI) return Promise.resolve();
    if (this.discovering) return this.discovering;
    if (this.discoveryError && Date.now() - this.discoveryError.at < RETRY_INTERVAL_MS) return Promise.reject(new Error(this.discoveryError.message));
    const url = this.config.issuer.discoveryURL ?? `${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    this.discovering = (async () => {
      const doc = await fetchJSON(url, this.dispatcher) as { issuer?: unknown; jwks_uri?: unknown };
      if (doc.issuer !== this.issuer) throw new Error(`oidc: issuer did not match the issuer returned by provider, expected ${JSON.stringify(this.issuer)} got ${JSON.stringify(doc.issuer)}`);
      if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri.startsWith('https://')) throw new Error('oidc: discovery document has no https jwks_uri');
      this.jwksURI = doc.jwks_uri;
      this.discoveryError = undefined;
      await this.refreshKeys(true);
    })().catch((err: unknown) => {
      this.discoveryError = { message: `oidc: authenticator not initialized: ${(err as Error).message}`, at: Date.now() };
      throw new Error(this.discoveryError.message);
    }).finally(() => { this.discovering = undefined; });
    return this.discovering;
  }

  /** Fetches the JWKS (shared by concurrent callers; at most once per interval unless `force`). */
  private refreshKeys(force = false): Promise<void> {
    if (this.fetchingKeys) return this.fetchingKeys;
    if (!force && Date.now() - this.keysFetchedAt < KEY_REFRESH_INTERVAL_MS) return Promise.resolve();
    this.keysFetchedAt = Date.now();
    this.keyFetches++;
    this.fetchingKeys = (async () => {
      const set = await fetchJSON(this.jwksURI!, this.dispatcher) as { keys?: unknown };
      if (!Array.isArray(set.keys)) throw new Error('oidc: failed to decode keys: no "keys" list');
      const keys: KeyEntry[] = [];
      for (const jwk of set.keys.slice(0, MAX_KEYS) as JWK[]) {
        if (!jwk || typeof jwk !== 'object' || (jwk.use !== undefined && jwk.use !== 'sig')) continue;
        const algs = jwk.alg ? [jwk.alg] : jwk.kty === 'RSA' ? ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] : jwk.kty === 'EC' ? [{ 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' }[jwk.crv ?? ''] ?? ''] : [];
        for (const alg of algs) {
          if (!this.algorithms.includes(alg)) continue;
          try { keys.push({ kid: jwk.kid, alg, key: await importJWK({ ...jwk, alg }, alg) }); } catch { /* a key jose cannot use is skipped, as go-jose skips it */ }
        }
      }
      this.keys = keys;
    })().finally(() => { this.fetchingKeys = undefined; });
    return this.fetchingKeys;
  }

  /** Verifies the signature against cached keys; undefined when none matches. */
  private async verifyWithCache(token: string, kid: string | undefined, alg: string): Promise<Uint8Array | undefined> {
    for (const k of this.keys) {
      if (k.alg !== alg || (kid !== undefined && k.kid !== undefined && k.kid !== kid)) continue;
      try { return (await compactVerify(token, k.key, { algorithms: [alg] })).payload; } catch { /* try the next key */ }
    }
    return undefined;
  }

  /**
   * Authenticates `token` if its `iss` is this issuer's (else undefined). Never throws.
   */
  async authenticate(token: string): Promise<JWTResult> {
    if (untrustedIssuer(token) !== this.issuer) return undefined;
    try {
      return { user: await this.verify(token) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  private async verify(token: string): Promise<UserInfo> {
    await this.discover();
    let header: { alg?: string; kid?: string };
    try { header = decodeProtectedHeader(token); } catch (err) { throw new Error(`oidc: verify token: oidc: malformed jwt: ${(err as Error).message}`); }
    const alg = header.alg ?? '';
    if (!this.algorithms.includes(alg)) throw new Error(`oidc: verify token: oidc: id token signed with unsupported algorithm, expected ${JSON.stringify(this.algorithms)} got ${JSON.stringify(alg)}`);
    let payload = await this.verifyWithCache(token, header.kid, alg);
    if (!payload) {
      // Keys may have rotated: fetch them again (rate-limited), then retry once.
      await this.refreshKeys();
      payload = await this.verifyWithCache(token, header.kid, alg);
    }
    if (!payload) throw new Error('oidc: verify token: failed to verify signature: failed to verify id token signature');
    let claims: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(new TextDecoder().decode(payload));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      claims = parsed as Record<string, unknown>;
    } catch (err) { throw new Error(`oidc: verify token: oidc: failed to unmarshal claims: ${(err as Error).message}`); }
    this.checkStandardClaims(claims);
    return this.userOf(claims);
  }

  /** go-oidc's checks: issuer, audience, expiry, not-before. */
  private checkStandardClaims(c: Record<string, unknown>): void {
    if (c.iss !== this.issuer) throw new Error(`oidc: verify token: oidc: id token issued by a different provider, expected ${JSON.stringify(this.issuer)} got ${JSON.stringify(c.iss)}`);
    const aud = typeof c.aud === 'string' ? [c.aud] : Array.isArray(c.aud) ? c.aud.filter((a): a is string => typeof a === 'string') : [];
    if (!aud.some((a) => this.audiences.has(a))) {
      throw new Error(this.audiences.size === 1
        ? `oidc: verify token: oidc: expected audience ${JSON.stringify([...this.audiences][0])} got ${JSON.stringify(aud)}`
        : `oidc: verify token: oidc: expected audience in ${JSON.stringify([...this.audiences].sort())} got ${JSON.stringify(aud)}`);
    }
    const now = this.now();
    if (typeof c.exp !== 'number') throw new Error('oidc: verify token: oidc: malformed jwt: no exp claim');
    if (c.exp < now) throw new Error(`oidc: verify token: oidc: token is expired (Token Expiry: ${new Date(c.exp * 1000).toISOString()})`);
    if (c.nbf !== undefined) {
      if (typeof c.nbf !== 'number') throw new Error('oidc: verify token: oidc: malformed jwt: nbf is not a number');
      if (now + NBF_LEEWAY_S < c.nbf) throw new Error(`oidc: verify token: oidc: current time ${new Date(now * 1000).toISOString()} before the nbf (not before) time: ${new Date(c.nbf * 1000).toISOString()}`);
    }
  }

  /** kube's claim mappings and validation rules, in its order. */
  private userOf(c: Record<string, unknown>): UserInfo {
    const m = this.config.claimMappings;
    const celClaims = jsonToCel(c);
    const evalClaims = (expr: string, what: string): unknown => {
      try { return evaluateAuthenticationExpression(expr, { claims: celClaims }); } catch (err) { throw new Error(`oidc: error evaluating ${what}: ${(err as Error).message.split('\n')[0]}`); }
    };
    // username
    let username: string;
    if (m.username.expression) {
      const v = evalClaims(m.username.expression, 'username claim expression');
      if (typeof v !== 'string') throw new Error('oidc: error evaluating username claim expression: username claim expression must return a string');
      if (!v) throw new Error('oidc: empty username via CEL expression is not allowed');
      username = v;
    } else {
      const claim = m.username.claim!;
      const v = c[claim];
      if (typeof v !== 'string') throw new Error(`oidc: parse username claims ${JSON.stringify(claim)}: ${v === undefined ? 'claim not present' : 'not a string'}`);
      if (claim === 'email' && 'email_verified' in c) {
        if (typeof c.email_verified !== 'boolean') throw new Error("oidc: parse 'email_verified' claim: not a boolean");
        if (!c.email_verified) throw new Error('oidc: email not verified');
      }
      username = (m.username.prefix ?? '') + v;
    }
    // groups
    let groups: string[] = [];
    const gc = m.groups?.claim;
    if (gc && gc in c) {
      const v = c[gc];
      const list = typeof v === 'string' ? [v] : Array.isArray(v) && v.every((g) => typeof g === 'string') ? v as string[] : undefined;
      if (!list) throw new Error(`oidc: parse groups claim ${JSON.stringify(gc)}: not a string or a list of strings`);
      groups = list.map((g) => (m.groups?.prefix ?? '') + g);
    } else if (m.groups?.expression) {
      try { groups = celStringList(evalClaims(m.groups.expression, 'group claim expression')); } catch (err) {
        const msg = (err as Error).message;
        throw new Error(msg.startsWith('oidc:') ? msg : `oidc: error evaluating group claim expression: ${msg}`);
      }
    }
    // uid
    let uid = '';
    if (m.uid?.claim) {
      const v = c[m.uid.claim];
      if (typeof v !== 'string') throw new Error(`oidc: parse uid claim ${JSON.stringify(m.uid.claim)}: ${v === undefined ? 'claim not present' : 'not a string'}`);
      uid = v;
    } else if (m.uid?.expression) {
      const v = evalClaims(m.uid.expression, 'uid claim expression');
      if (typeof v !== 'string') throw new Error('oidc: error evaluating uid claim expression: uid claim expression must return a string');
      uid = v;
    }
    // extra
    const extra: Record<string, string[]> = {};
    if (typeof c.jti === 'string') extra['authentication.kubernetes.io/credential-id'] = [`JTI=${c.jti}`];
    for (const x of m.extra ?? []) {
      let values: string[];
      try { values = celStringList(evalClaims(x.valueExpression, 'extra claim expression')); } catch (err) {
        const msg = (err as Error).message;
        throw new Error(msg.startsWith('oidc:') ? msg : `oidc: error evaluating extra claim expression: ${x.valueExpression}: ${msg}`);
      }
      if (values.length) extra[x.key] = values;
    }
    // claim validation rules: required claims, then expressions
    for (const r of this.config.claimValidationRules ?? []) {
      if (!r.claim) continue;
      if (!(r.claim in c)) throw new Error(`oidc: required claim ${r.claim} not present in ID token`);
      const v = c[r.claim];
      if (typeof v !== 'string') throw new Error(`oidc: parse claim ${r.claim}: not a string`);
      if (v !== (r.requiredValue ?? '')) throw new Error(`oidc: required claim ${r.claim} value does not match. Got = ${v}, want = ${r.requiredValue ?? ''}`);
    }
    for (const r of this.config.claimValidationRules ?? []) {
      if (!r.expression) continue;
      const v = evalClaims(r.expression, 'claim validation expression');
      if (typeof v !== 'boolean') throw new Error('oidc: error evaluating claim validation expression: validation expression must return a boolean');
      if (!v) throw new Error(`oidc: error evaluating claim validation expression: validation expression '${r.expression}' failed: ${r.message ?? ''}`);
    }
    const user: UserInfo = { name: username, groups, ...(uid ? { uid } : {}), ...(Object.keys(extra).length ? { extra } : {}) };
    if (this.config.userValidationRules?.length) {
      const celUser = jsonToCel({ username, uid, groups, extra });
      for (const r of this.config.userValidationRules) {
        let v: unknown;
        try { v = evaluateAuthenticationExpression(r.expression, { user: celUser }); } catch (err) { throw new Error(`oidc: error evaluating user info validation rule: ${(err as Error).message.split('\n')[0]}`); }
        if (typeof v !== 'boolean') throw new Error('oidc: error evaluating user info validation rule: validation expression must return a boolean');
        if (!v) throw new Error(`oidc: error evaluating user info validation rule: validation expression '${r.expression}' failed: ${r.message ?? ''}`);
      }
    }
    return user;
  }
}

/**
 * The JWT authenticators of one configuration, tried as kube's union: the one whose issuer the
 * token names decides. Verified tokens are cached briefly (see module doc).
 */
export class JWTAuthenticators {
  readonly authenticators: JWTAuthenticator[];
  private readonly byIssuer = new Map<string, JWTAuthenticator>();
  private readonly cache = new LRUCache<string, { user: UserInfo; until: number }>({ max: SUCCESS_CACHE_ENTRIES });

  /** `algorithms`: kube allows all with a configuration file and RS256 with the `--oidc-*` flags. */
  constructor(config: AuthenticationConfiguration, algorithms: readonly string[] = ALL_SIGNING_ALGORITHMS) {
    this.authenticators = config.jwt.map((a) => new JWTAuthenticator(a, algorithms));
    for (const a of this.authenticators) this.byIssuer.set(a.issuer, a);
  }

  /** Starts every issuer's discovery in the background. */
  start(): void { for (const a of this.authenticators) a.start(); }

  /** Closes the connections to the issuers. */
  async close(): Promise<void> { await Promise.all(this.authenticators.map((a) => a.close())); }

  /**
   * undefined when no configured issuer issued `token` (cheap: decodes the payload only);
   * otherwise a promise of the user or of the reason it is refused.
   */
  authenticate(token: string): Promise<JWTResult> | undefined {
    const iss = untrustedIssuer(token);
    const a = iss === undefined ? undefined : this.byIssuer.get(iss);
    if (!a) return undefined;
    const key = createHash('sha256').update(token).digest('base64url');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return Promise.resolve({ user: hit.user });
    return a.authenticate(token).then((r) => {
      if (r && 'user' in r) {
        let exp = Infinity;
        try { exp = Number((JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { exp?: number }).exp) * 1000; } catch { /* verified above */ }
        this.cache.set(key, { user: r.user, until: Math.min(Date.now() + SUCCESS_CACHE_TTL_MS, exp) });
      }
      return r;
    });
  }
}
