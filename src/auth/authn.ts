/**
 * Authentication: client certificates (CN = user, O = groups, verified against the shard's CA),
 * static bearer tokens (`--token-auth-file`, kube-apiserver's CSV format:
 * `token,user,uid,"group1,group2"`; https://kubernetes.io/docs/reference/access-authn-authz/authentication/#static-token-file)
 * and service account tokens (JWTs issued by the shard, src/auth/serviceaccounts.ts), tried in
 * that order for bearer tokens as kube-apiserver's union authenticator does.
 */
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import type { UserInfo } from '../registry/store.js';
import type { ServiceAccountTokens } from './serviceaccounts.js';

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

/** Result of authentication: a user, or why not. */
export type AuthnResult = { user: UserInfo } | { error: string } | undefined;

/** Authenticates requests by client certificate or bearer token. */
export class Authenticator {
  private readonly certUsers = new WeakMap<TLSSocket, UserInfo | null>();

  /**
   * `tokens`: the static token file; `serviceAccounts`: the shard's service account token
   * authenticator (bearer tokens not in the file are tried there).
   */
  constructor(private readonly tokens: Map<string, UserInfo> = new Map(), private readonly serviceAccounts?: ServiceAccountTokens) {}

  /**
   * Returns the user, an error (bad credentials → 401), or undefined when no credentials were
   * presented. Synchronous except for the first use of a service account token (its signature is
   * verified once, then cached): then a promise of the same.
   */
  authenticate(socket: TLSSocket | undefined, authorization: string | undefined): AuthnResult | Promise<AuthnResult> {
    if (authorization) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!m) return { error: 'invalid bearer token' };
      const user = this.tokens.get(m[1]!);
      if (user) return { user: withAuthenticated(user) };
      const sa = this.serviceAccounts?.authenticate(m[1]!);
      if (sa === undefined) return { error: 'invalid bearer token' };
      if (sa instanceof Promise) return sa.then((r) => r ?? { error: 'invalid bearer token' });
      return sa;
    }
    if (!socket || typeof socket.getPeerCertificate !== 'function') return undefined;
    let cached = this.certUsers.get(socket);
    if (cached === undefined) {
      cached = null;
      const cert = socket.getPeerCertificate();
      if (cert && Object.keys(cert).length > 0) {
        if (!socket.authorized) {
          this.certUsers.set(socket, null);
          return { error: `verifying certificate: ${String(socket.authorizationError ?? 'unknown authority')}` };
        }
        const subject = cert.subject as unknown as Record<string, string | string[]>;
        const cn = subject.CN;
        const o = subject.O;
        const name = Array.isArray(cn) ? cn[0] : cn;
        if (name) cached = withAuthenticated({ name, groups: o === undefined ? [] : Array.isArray(o) ? o : [o] });
      }
      this.certUsers.set(socket, cached);
    }
    return cached ? { user: cached } : undefined;
  }
}

function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}
