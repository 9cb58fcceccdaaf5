/**
 * kcp's per-workspace authentication (pkg/authentication: NewStandaloneWorkspaceAuthenticator,
 * the shard-local form): a WorkspaceType names WorkspaceAuthenticationConfigurations
 * (tenancy.kcp.io/v1alpha1, cluster-scoped, in the WorkspaceType's own logical cluster) in
 * `spec.authenticationConfigurations[].name`; their `spec.jwt[]` authenticators (kube's
 * JWTAuthenticator shape, src/auth/oidc.ts) authenticate bearer tokens in every workspace of that
 * type — and nowhere else: they are consulted only for requests to a logical cluster whose
 * `internal.tenancy.kcp.io/type` is that WorkspaceType.
 *
 * As kcp (pkg/authentication/index.go `wrapWithSecurityFilters`, authenticators.go
 * `withClusterScope`):
 * - a user name starting with `system:` is refused; groups starting with `system:` and extra keys
 *   containing `kcp.io` are dropped; `system:authenticated` is added;
 * - the user is scoped to the target logical cluster: extra `authentication.kcp.io/scopes:
 *   cluster:<name>` and `authentication.kcp.io/cluster-name: <name>`;
 * - a token must also name one of the API audiences (kcp: the global `--api-audiences`).
 *
 * Bounds (the configurations are tenant input): an invalid `jwt[]` entry is skipped (as kcp skips
 * an authenticator it cannot build); at most {@link MAX_CONFIGS_PER_TYPE} configurations per
 * WorkspaceType; built authenticator sets are cached by the configurations' revisions, at most
 * {@link MAX_CACHED_TYPES} (least recently used closed first). Fetches from a tenant's issuer are
 * bounded as src/auth/oidc.ts states (1 MiB, 30 s, keys refetched at most every 10 s).
 *
 * The WorkspaceType and its configurations are read from this shard, else from those replicated
 * from the instance's other shards (kcp reads them from its cache server). kcp's front-proxy form
 * (the proxy authenticating) is not implemented: the proxy passes such tokens on to the shard.
 */
import { LRUCache } from 'lru-cache';
import type { KubeObject } from '../apimachinery/meta.js';
import type { WatchCache } from '../storage/watchcache.js';
import type { LogicalClusterIndex } from '../tenancy/index.js';
import type { UserInfo } from '../registry/store.js';
import { validateJWTAuthenticator, type JWTAuthenticatorConfig } from './authconfig.js';
import { JWTAuthenticators, untrustedIssuer, type JWTResult } from './oidc.js';

/** Group/resource of WorkspaceAuthenticationConfigurations in the watch cache. */
export const WORKSPACE_AUTH_CONFIGS_GR = 'tenancy.kcp.io/workspaceauthenticationconfigurations';
const WORKSPACE_TYPES_GR = 'tenancy.kcp.io/workspacetypes';
/** Configurations of one WorkspaceType used (more are ignored). */
export const MAX_CONFIGS_PER_TYPE = 16;
/** WorkspaceTypes whose authenticators are kept built. */
export const MAX_CACHED_TYPES = 1000;
/** kcp's scope extra key. */
export const SCOPES_EXTRA = 'authentication.kcp.io/scopes';
/** kcp's cluster-name extra key. */
export const CLUSTER_NAME_EXTRA = 'authentication.kcp.io/cluster-name';

/**
 * WorkspaceTypes and WorkspaceAuthenticationConfigurations of the instance's other shards, as
 * replicated to this one (src/shards/directory.ts), and the logical cluster of a workspace path.
 */
export interface RemoteObjects {
  resolvePath(path: string): string | undefined;
  /** `groupResource` e.g. `tenancy.kcp.io/workspacetypes`. */
  get(groupResource: string, cluster: string, name: string): KubeObject | undefined;
}

/** Per-workspace JWT authenticators of a shard. */
export class WorkspaceAuthenticators {
  /** Configuration names of a WorkspaceType revision (`<cluster>|<type>@<rv>`). */
  private readonly typeNames = new LRUCache<string, string[]>({ max: MAX_CACHED_TYPES });
  private readonly built = new LRUCache<string, { key: string; jwt: JWTAuthenticators }>({
    max: MAX_CACHED_TYPES, dispose: (v) => { void v.jwt.close(); },
  });

  /**
   * `disallowedIssuers`: issuers a workspace may not configure (the service-account issuer);
   * `apiAudiences`: one of them must be in every token's `aud`; `warn` receives skipped entries.
   */
  constructor(private readonly cache: WatchCache, private readonly index: LogicalClusterIndex, private readonly apiAudiences: readonly string[], private readonly disallowedIssuers: readonly string[], private readonly warn: (m: string) => void = () => undefined, private readonly remote?: RemoteObjects) {}

  /** An object of this shard's cache, else one replicated from another shard; with its revision. */
  private lookup(gr: string, cluster: string, name: string): { obj: () => KubeObject; rv: string } | undefined {
    const e = this.cache.getEntry(gr, cluster, '', name);
    if (e) return { obj: () => JSON.parse(e.json) as KubeObject, rv: String(e.rv) };
    const o = this.remote?.get(gr, cluster, name);
    return o ? { obj: () => o, rv: `r${o.metadata.resourceVersion ?? ''}` } : undefined;
  }

  /** Closes every issuer connection. */
  async close(): Promise<void> {
    const all = [...this.built.values()];
    this.built.clear();
    await Promise.all(all.map((v) => v.jwt.close()));
  }

  /** The authenticators of the WorkspaceType of logical cluster `cluster`, if it has any. */
  private authenticatorsOf(cluster: string): JWTAuthenticators | undefined {
    const type = this.index.get(cluster)?.type;
    if (!type) return undefined;
    const colon = type.lastIndexOf(':');
    if (colon <= 0) return undefined;
    const typePath = type.slice(0, colon);
    const typeCluster = this.index.resolvePath(typePath) ?? this.remote?.resolvePath(typePath) ?? typePath;
    const wst = this.lookup(WORKSPACE_TYPES_GR, typeCluster, type.slice(colon + 1));
    if (!wst) return undefined;
    // Parsed once per WorkspaceType revision: requests only compare revisions.
    const namesKey = `${typeCluster}|${type}@${wst.rv}`;
    let names = this.typeNames.get(namesKey);
    if (!names) {
      const refs = (wst.obj().spec as { authenticationConfigurations?: { name?: unknown }[] } | undefined)?.authenticationConfigurations ?? [];
      names = refs.map((r) => r?.name).filter((n): n is string => typeof n === 'string' && n !== '').slice(0, MAX_CONFIGS_PER_TYPE);
      this.typeNames.set(namesKey, names);
    }
    if (!names.length) return undefined;
    const entries = names.map((n) => this.lookup(WORKSPACE_AUTH_CONFIGS_GR, typeCluster, n));
    const key = `${wst.rv}|${entries.map((e, i) => `${names[i]}@${e?.rv ?? 0}`).join(',')}`;
    const id = `${typeCluster}|${type}`;
    const hit = this.built.get(id);
    if (hit?.key === key) return hit.jwt;
    const jwt: JWTAuthenticatorConfig[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      if (!e) continue;
      const obj = e.obj();
      const list = ((obj.spec as { jwt?: unknown } | undefined)?.jwt ?? []) as JWTAuthenticatorConfig[];
      if (!Array.isArray(list)) continue;
      list.slice(0, 64).forEach((a, i) => {
        const errs = validateJWTAuthenticator(a, `spec.jwt[${i}]`, this.disallowedIssuers);
        if (!errs.length && seen.has(a.issuer.url)) errs.push(`spec.jwt[${i}].issuer.url: Duplicate value: ${JSON.stringify(a.issuer.url)}`);
        if (errs.length) { this.warn(`WorkspaceAuthenticationConfiguration ${typeCluster}|${obj.metadata.name}: skipped: ${errs.join(', ')}`); return; }
        seen.add(a.issuer.url);
        jwt.push(a);
      });
    }
    if (hit) this.built.delete(id);
    if (!jwt.length) return undefined;
    const built = new JWTAuthenticators({ jwt });
    built.start();
    this.built.set(id, { key, jwt: built });
    return built;
  }

  /**
   * Authenticates `token` for a request to logical cluster `cluster`: undefined when its
   * WorkspaceType configures no issuer of the token; else the scoped user or why it is refused.
   */
  authenticate(cluster: string, token: string): Promise<JWTResult> | undefined {
    if (untrustedIssuer(token) === undefined) return undefined;
    let authenticators: JWTAuthenticators | undefined;
    try { authenticators = this.authenticatorsOf(cluster); } catch { return undefined; }
    const pending = authenticators?.authenticate(token);
    if (!pending) return undefined;
    return pending.then((r) => {
      if (!r || 'error' in r) return r;
      if (this.apiAudiences.length) {
        let aud: unknown;
        try { aud = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { aud?: unknown }).aud; } catch { /* verified */ }
        const auds = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
        if (!this.apiAudiences.some((a) => auds.includes(a))) return { error: `token audiences ${JSON.stringify(auds)} do not include the API audiences ${JSON.stringify(this.apiAudiences)}` };
      }
      return scopeToCluster(r.user, cluster);
    });
  }
}

/** kcp's security filters and cluster scope for a workspace-authenticated user. */
function scopeToCluster(u: UserInfo, cluster: string): { user: UserInfo } | { error: string } {
  if (u.name.startsWith('system:')) return { error: 'usernames starting with "system:" are not allowed' };
  const groups = u.groups.filter((g) => !g.startsWith('system:'));
  groups.push('system:authenticated');
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(u.extra ?? {})) if (!k.includes('kcp.io')) extra[k] = v;
  extra[SCOPES_EXTRA] = [`cluster:${cluster}`];
  extra[CLUSTER_NAME_EXTRA] = [cluster];
  return { user: { ...u, groups, extra } };
}
