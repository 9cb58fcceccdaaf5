/**
 * User impersonation (`kubectl --as`, `--as-group`, `--as-uid`), as kube-apiserver's
 * WithImpersonation filter (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#user-impersonation):
 * the caller needs the `impersonate` verb on `users` (or `serviceaccounts` for
 * `system:serviceaccount:<ns>:<name>`), on `groups` for each group, on
 * `userextras/<key>` for each extra and on `uids` for the uid. The impersonated user gets
 * `system:authenticated` unless it is `system:anonymous`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { StatusError, badRequest } from '../apimachinery/errors.js';
import type { UserInfo } from '../registry/store.js';
import { AUTHENTICATED_GROUP } from './authn.js';
import type { Authorizer, AuthzAttributes } from './authorizer.js';

function values(h: string | string[] | undefined): string[] {
  if (h === undefined) return [];
  return (Array.isArray(h) ? h : [h]).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/**
 * Returns the impersonated user, or `user` when the request carries no impersonation headers.
 * Throws 403 when the caller may not impersonate, 400 for headers without `Impersonate-User`.
 */
export function impersonate(authz: Authorizer, user: UserInfo, headers: IncomingHttpHeaders, cluster: string, clusterExists: boolean): UserInfo {
  const name = headers['impersonate-user'];
  const groups = values(headers['impersonate-group']);
  const uid = headers['impersonate-uid'];
  const extras: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.startsWith('impersonate-extra-')) extras[decodeURIComponent(k.slice('impersonate-extra-'.length))] = values(v);
  }
  if (name === undefined) {
    if (groups.length || uid !== undefined || Object.keys(extras).length) throw badRequest('requested impersonation of groups, uid or extras without impersonating a user');
    return user;
  }
  const target = Array.isArray(name) ? name[0]! : name;
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
