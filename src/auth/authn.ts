/**
 * Authentication: client certificates (CN = user, O = groups, verified against the shard's CA),
 * static bearer tokens (`--token-auth-file`, kube-apiserver's CSV format:
 * `token,user,uid,"group1,group2"`; https://kubernetes.io/docs/reference/access-authn-authz/authentication/#static-token-file)
 * JWTs of the configured OpenID Connect issuers (`--authentication-config`/`--oidc-*`,
 * src/auth/oidc.ts) and service account tokens (JWTs issued by the shard,
 * src/auth/serviceaccounts.ts), tried in that order for bearer tokens as kube-apiserver's union
 * authenticator does: a JWT whose `iss` names a configured issuer is that issuer's to accept or
 * refuse; other tokens go on to the service-account authenticator.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import type { UserInfo } from '../registry/store.js';
import { certificateScopes } from './serviceaccounts.js';
import type { ServiceAccountTokens } from './serviceaccounts.js';
import type { JWTAuthenticators } from './oidc.js';
import type { WorkspaceAuthenticators } from './workspaceauth.js';

/** Group every authenticated request carries. */
export const AUTHENTICATED_GROUP = 'system:authenticated';

/** Parses one CSV line with RFC 4180 quoting. */
function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = ''; let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"') { if (line[i + 1] === '"') { cur += '"'; i++; } else quoted = false; }
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { out.push(cur); cur = ''; }
    else cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim());
}

/**
 * Loads a static token file. Throws an Error naming the line for a malformed entry (fewer than
 * three columns, or an empty token or user).
 */
export function loadTokenFile(path: string): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  const lines = readFileSync(path, 'utf8').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const cols = splitCsvLine(line);
    if (cols.length < 3 || !cols[0] || !cols[1]) throw new Error(`${path}:${i + 1}: expected token,user,uid[,"groups"]`);
    const groups = cols[3] ? cols[3].split(',').map((g) => g.trim()).filter(Boolean) : [];
    tokens.set(cols[0], { name: cols[1], uid: cols[2], groups });
  });
  return tokens;
}

/**
 * A user as `authentication.k8s.io/v1` UserInfo JSON (`username`, `uid`, `groups`, `extra`; empty
 * fields omitted) — the shape of SelfSubjectReview status, kcp's owner annotation and
 * `LogicalCluster.spec.createdBy`.
 */
export function userInfoJSON(user: UserInfo): { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } {
  const v: { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } = { username: user.name };
  if (user.uid) v.uid = user.uid;
  if (user.groups.length) v.groups = user.groups;
  if (user.extra && Object.keys(user.extra).length) v.extra = user.extra;
  return v;
}

/**
 * Request-header authentication (kube-apiserver's `--requestheader-*` flags,
 * https://kubernetes.io/docs/tasks/extend-kubernetes/configure-aggregation-layer/#authentication-flow):
 * a client certificate signed by `clientCA` whose CN is in `allowedNames` (any CN when empty) may
 * state the user in headers — the front-proxy's way of passing on whom it authenticated.
 */
export interface RequestHeaderConfig {
  /** PEM of the CA that signs the proxies' client certificates (kcp-ts: the front-proxy CA). */
  clientCA: string;
  /** CNs allowed to state identities (kube `--requestheader-allowed-names`); empty = any. */
  allowedNames: string[];
  /** Headers with the user name, first non-empty wins (default `X-Remote-User`). */
  usernameHeaders: string[];
  /** Headers with groups, each value one group (default `X-Remote-Group`). */
  groupHeaders: string[];
  /** Prefixes of extra headers: `<prefix><key>: value`, key percent-decoded and lower-cased (default `X-Remote-Extra-`). */
  extraHeaderPrefixes: string[];
}

/** kube-apiserver's usual request-header names, as kcp's front-proxy sends them. */
export const DEFAULT_REQUEST_HEADERS = { usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], extraHeaderPrefixes: ['X-Remote-Extra-'] } as const;

/** Result of authentication: a user, or why not. */
export type AuthnResult = { user: UserInfo } | { error: string } | undefined;

/**
 * What a connection's client certificate says, worked out once per connection (a certificate is
 * the connection's, not the request's): whether it is an allowed front-proxy (`true`), another
 * certificate of the request-header CA (an error), or neither (null); and its user with the serial
 * number (checked against revocation on every request), an error for a certificate that failed
 * verification, or null without one.
 */
interface ConnectionIdentity {
  proxy: true | { error: string } | null;
  cert: { user: UserInfo; serial: string } | { error: string } | null;
}

const NO_CERTIFICATE: ConnectionIdentity = { proxy: null, cert: null };

/** Authenticates requests by client certificate or bearer token. */
export class Authenticator {
  private readonly connections = new WeakMap<TLSSocket, ConnectionIdentity>();
  private readonly requestHeaderCA: X509Certificate | undefined;
  /** The request-header CA's subject as `getPeerCertificate()` writes a certificate's issuer (JSON). */
  private readonly requestHeaderIssuer: string | undefined;

  /**
   * `tokens`: the static token file; `serviceAccounts`: the shard's service account token
   * authenticator (bearer tokens not in the file are tried there); `requestHeader`: identities
   * stated by a front-proxy. The TLS server must trust `requestHeader.clientCA` besides the client
   * CA; a certificate of the request-header CA never authenticates as its own CN.
   */
  constructor(private readonly tokens: Map<string, UserInfo> = new Map(), private readonly serviceAccounts?: ServiceAccountTokens, private readonly requestHeader?: RequestHeaderConfig, private readonly revoked?: { has(serialHex: string): boolean }, private readonly jwt?: JWTAuthenticators, private readonly workspace?: WorkspaceAuthenticators) {
    this.requestHeaderCA = requestHeader ? new X509Certificate(requestHeader.clientCA) : undefined;
    this.requestHeaderIssuer = this.requestHeaderCA ? JSON.stringify((this.requestHeaderCA.toLegacyObject() as PeerCertificate).subject) : undefined;
  }

  /**
   * Returns the user, an error (bad credentials → 401), or undefined when no credentials were
   * presented. Synchronous except for the first use of a service account token (its signature is
   * verified once, then cached) and OpenID Connect tokens: then a promise of the same. Order as kube's union authenticator:
   * request header (a front-proxy's certificate and a user header), bearer token, client certificate.
   * A client certificate whose serial number is in `revoked` is refused on every request (also on
   * connections opened before it was revoked). `cluster`: the logical cluster the request targets,
   * whose workspace authenticators (src/auth/workspaceauth.ts) a bearer token may also satisfy.
   */
  authenticate(socket: TLSSocket | undefined, authorization: string | undefined, headers: NodeJS.Dict<string[]> = {}, cluster?: string): AuthnResult | Promise<AuthnResult> {
    const { proxy, cert } = socket ? this.identityOf(socket) : NO_CERTIFICATE;
    if (proxy !== null) {
      if (proxy !== true) return proxy;
      const user = this.headerUser(headers);
      if (user) return { user };
      // A proxy passing a request on without a user header: its bearer token, if any, decides.
      if (!authorization) return undefined;
    }
    if (authorization) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!m) return { error: 'invalid bearer token' };
      const user = this.tokens.get(m[1]!);
      if (user) return { user: withAuthenticated(user) };
      const oidc = this.jwt?.authenticate(m[1]!);
      if (oidc) return oidc.then((r) => (r && 'user' in r ? { user: withAuthenticated(r.user) } : r ?? { error: 'invalid bearer token' }));
      const token = m[1]!;
      // kcp's per-workspace authenticators of the target cluster's WorkspaceType: an alternative
      // to the shard's own (a union), tried when those do not accept the token.
      const orWorkspace = (r: AuthnResult): AuthnResult | Promise<AuthnResult> => {
        if (r && 'user' in r) return r;
        const ws = cluster === undefined ? undefined : this.workspace?.authenticate(cluster, token);
        return ws ? ws.then((w) => w ?? r ?? { error: 'invalid bearer token' }) : r ?? { error: 'invalid bearer token' };
      };
      const sa = this.serviceAccounts?.authenticate(token);
      if (sa instanceof Promise) return sa.then(orWorkspace);
      return orWorkspace(sa);
    }
    if (proxy !== null || cert === null) return undefined;
    if ('error' in cert) return cert;
    if (this.revoked?.has(cert.serial)) return { error: 'client certificate revoked' };
    return { user: cert.user };
  }

  /**
   * The connection's {@link ConnectionIdentity}, from its peer certificate read once (in the form
   * `getPeerCertificate()` gives). Only a certificate naming the request-header CA as its issuer
   * can be the CA's, so only such a one is read again as an X509Certificate for the signature
   * check: reading every client's certificate that way cost 0.3 ms of CPU per connection, spent
   * before anyone knows the connection's tenant.
   */
  private identityOf(socket: TLSSocket): ConnectionIdentity {
    let known = this.connections.get(socket);
    if (known) return known;
    if (typeof socket.getPeerCertificate !== 'function') return NO_CERTIFICATE;
    const peer = socket.getPeerCertificate();
    known = { proxy: null, cert: null };
    if (peer && Object.keys(peer).length > 0) {
      if (!socket.authorized) {
        // Refused on every request of the connection, not only its first.
        known.cert = { error: `verifying certificate: ${String(socket.authorizationError ?? 'unknown authority')}` };
      } else {
        const ca = this.requestHeaderCA;
        const x509 = ca && JSON.stringify(peer.issuer) === this.requestHeaderIssuer ? socket.getPeerX509Certificate() : undefined;
        if (ca && x509 && x509.checkIssued(ca) && x509.verify(ca.publicKey)) {
          const cn = /(?:^|\n)CN=([^\n]*)/.exec(x509.subject)?.[1] ?? '';
          const allowed = this.requestHeader!.allowedNames;
          known.proxy = allowed.length === 0 || allowed.includes(cn) ? true : { error: `requestheader: client certificate CN "${cn}" is not in the allowed names` };
        }
        const subject = peer.subject as unknown as Record<string, string | string[]>;
        const cn = subject.CN;
        const o = subject.O;
        const name = Array.isArray(cn) ? cn[0] : cn;
        const extra = certificateScopes(peer.subjectaltname);
        if (name) known.cert = { user: withAuthenticated({ name, groups: o === undefined ? [] : Array.isArray(o) ? o : [o], ...(extra ? { extra } : {}) }), serial: peer.serialNumber };
      }
    }
    this.connections.set(socket, known);
    return known;
  }

  /**
   * The user a proxy states in the request headers (each header line one value, as Node's
   * `headersDistinct` keeps them: a group may contain a comma), or undefined without a user name.
   */
  private headerUser(headers: NodeJS.Dict<string[]>): UserInfo | undefined {
    const cfg = this.requestHeader!;
    const values = (name: string): string[] => headers[name.toLowerCase()] ?? [];
    const name = cfg.usernameHeaders.map((h) => values(h)[0]?.trim()).find((v) => v);
    if (!name) return undefined;
    const groups = cfg.groupHeaders.flatMap((h) => values(h).map((g) => g.trim()).filter(Boolean));
    const extra: Record<string, string[]> = {};
    for (const prefix of cfg.extraHeaderPrefixes) {
      const p = prefix.toLowerCase();
      for (const [header, v] of Object.entries(headers)) {
        if (!header.startsWith(p) || header.length === p.length || v === undefined) continue;
        let key: string;
        try { key = decodeURIComponent(header.slice(p.length)).toLowerCase(); } catch { continue; }
        (extra[key] ??= []).push(...v);
      }
    }
    return withAuthenticated({ name, groups, ...(Object.keys(extra).length ? { extra } : {}) });
  }
}

function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}
