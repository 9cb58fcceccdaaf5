/**
 * User impersonation (`kubectl --as`, `--as-group`, `--as-uid`), as kube-apiserver's
 * WithImpersonation filter (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#user-impersonation):
 * the caller needs the `impersonate` verb on `users` (or `serviceaccounts` for
 * `system:serviceaccount:<ns>:<name>`), on `groups` for each group, on
 * `userextras/<key>` for each extra and on `uids` for the uid. The impersonated user gets
 * `system:authenticated` unless it is `system:anonymous`. kcp's gatekeeper comes first: no
 * privileged groups and no kcp-reserved extras for callers outside `system:masters`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { StatusError, badRequest } from '../apimachinery/errors.js';
import type { UserInfo } from '../registry/store.js';
import { AUTHENTICATED_GROUP } from './authn.js';
import { SYSTEM_MASTERS, type Authorizer, type AuthzAttributes } from './authorizer.js';

function values(h: string | string[] | undefined): string[] {
  if (h === undefined) return [];
  return (Array.isArray(h) ? h : [h]).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/**
 * Groups with a special meaning in kcp, by privilege: a caller may impersonate one only if it is
 * itself a member (kcp pkg/server/filters/impersonation.go `specialGroups`).
 */
const KCP_ADMIN_GROUP = 'system:kcp:admin';
const PRIVILEGED_GROUPS = new Set([
  SYSTEM_MASTERS, 'system:kcp:logical-cluster-admin', 'system:kcp:external-logical-cluster-admin',
  'system:kcp:tenancy:workspace-bootstrapper', 'system:kcp:admin', AUTHENTICATED_GROUP,
]);

/**
 * kcp's impersonation gatekeeper (`WithImpersonationGatekeeper`), before any RBAC check: unless the
 * caller is in `system:masters`, it may neither assert a kcp-reserved extra (any key containing
 * `kcp.io`, e.g. `authentication.kcp.io/scopes`, `authentication.kcp.io/cluster-name`,
 * `authorization.kcp.io/warrant`: they grant authority and only the server's own authenticators set
 * them) nor impersonate a privileged group it does not hold (unless it is in `system:kcp:admin`).
 * Throws 403 otherwise.
 */
function gatekeeper(user: UserInfo, groups: string[], extraKeys: string[]): void {
  if (user.groups.includes(SYSTEM_MASTERS)) return;
  const reserved = extraKeys.find((k) => k.toLowerCase().includes('kcp.io'));
  if (reserved !== undefined) throw new StatusError(403, 'Forbidden', `forbidden: impersonating the extra key ${JSON.stringify(reserved)} is not allowed for the requestor`);
  // kcp-ts lets the shard's own admin (system:kcp:admin, cluster-admin of every workspace through
  // the bootstrap policy) impersonate any group, as `kubectl --as … --as-group system:masters`.
  if (user.groups.includes(KCP_ADMIN_GROUP)) return;
  const held = new Set(user.groups);
  if (groups.some((g) => PRIVILEGED_GROUPS.has(g) && !held.has(g))) throw new StatusError(403, 'Forbidden', 'forbidden: impersonation is not allowed for the requestor');
}

/**
 * Returns the impersonated user, or `user` when the request carries no impersonation headers.
 * Throws 403 when the caller may not impersonate (or asks for a privileged group or a kcp-reserved
 * extra), 400 for headers without `Impersonate-User` or a malformed extra key.
 */
export function impersonate(authz: Authorizer, user: UserInfo, headers: IncomingHttpHeaders, cluster: string, clusterExists: boolean): UserInfo {
  const name = headers['impersonate-user'];
  const groups = values(headers['impersonate-group']);
  const uid = headers['impersonate-uid'];
  const extras: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (!k.startsWith('impersonate-extra-')) continue;
    const raw = k.slice('impersonate-extra-'.length);
    let key: string;
    try { key = decodeURIComponent(raw); } catch { throw badRequest(`malformed impersonation header "${k}": the extra key is not valid percent-encoding`); }
    if (!key) throw badRequest(`malformed impersonation header "${k}": empty extra key`);
    extras[key] = values(v);
  }
  if (name === undefined) {
    if (groups.length || uid !== undefined || Object.keys(extras).length) throw badRequest('requested impersonation of groups, uid or extras without impersonating a user');
    return user;
  }
  const target = Array.isArray(name) ? name[0]! : name;
  gatekeeper(user, groups, Object.keys(extras));
  const check = (resource: string, objectName: string, namespace = '', subresource = '') => {
    const a: AuthzAttributes = { user, verb: 'impersonate', cluster, isResourceRequest: true, namespace, apiGroup: resource === 'users' || resource === 'groups' || resource === 'serviceaccounts' ? '' : 'authentication.k8s.io', resource, subresource, name: objectName, path: '' };
    if (!authz.authorize(a, clusterExists).allowed) {
      throw new StatusError(403, 'Forbidden', `${resource} "${objectName}" is forbidden: User "${user.name}" cannot impersonate resource "${resource}" in API group "${a.apiGroup}"${namespace ? ` in the namespace "${namespace}"` : ' at the cluster scope'}`);
    }
  };
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(target);
  if (sa) check('serviceaccounts', sa[2]!, sa[1]!); else check('users', target);
  for (const g of groups) check('groups', g);
  for (const [k, vs] of Object.entries(extras)) for (const v of vs) check('userextras', v, '', k);
  const uidValue = Array.isArray(uid) ? uid[0] : uid;
  if (uidValue !== undefined) check('uids', uidValue);
  const finalGroups = [...groups];
  if (target !== 'system:anonymous' && !finalGroups.includes(AUTHENTICATED_GROUP)) finalGroups.push(AUTHENTICATED_GROUP);
  const out: UserInfo = { name: target, groups: finalGroups };
  if (uidValue !== undefined) out.uid = uidValue;
  if (Object.keys(extras).length) out.extra = extras;
  return out;
}
