/**
 * An APIExport's maximal permission policy (kcp docs "APIs in kcp", "Maximal permission policy";
 * pkg/authorization/maximal_permission_policy_authorizer.go): an export with
 * `spec.maximalPermissionPolicy.local` caps what anyone may do with its resources in the
 * consumers' workspaces. A request on a bound resource, already allowed by the consumer's own
 * RBAC, must also be allowed by the RBAC of the export's workspace for the same user and groups
 * with the prefix `apis.kcp.io:binding:` (a deep SubjectAccessReview there).
 */
import type { ResourceDescriptor } from '../apis/types.js';
import type { AuthzAttributes } from '../auth/authorizer.js';
import type { UserInfo } from '../registry/store.js';
import type { APICatalog } from './catalog.js';

/** Prefix of the user and groups a maximal permission policy is written for. */
export const MAXIMAL_PERMISSION_PREFIX = 'apis.kcp.io:binding:';

/** Asks whether `user` may do `attrs` in logical cluster `cluster` (deep: no workspace checks). */
export type DeepAuthorizer = (user: UserInfo, cluster: string, attrs: AuthzAttributes) => boolean | Promise<boolean>;

/**
 * The check of a request on a bound resource (`desc.identity` set) in logical cluster
 * `cluster`: undefined when allowed (or when the export has no local policy), else the reason.
 */
export function maximalPermissionPolicy(deps: { catalog: APICatalog; authorize: DeepAuthorizer }) {
  return async (cluster: string, desc: ResourceDescriptor, attrs: AuthzAttributes): Promise<string | undefined> => {
    const from = deps.catalog.exportOfBound(cluster, desc);
    if (!from) return undefined;
    const exp = deps.catalog.export(from.cluster, from.name);
    const policy = (exp?.spec as { maximalPermissionPolicy?: { local?: unknown } } | undefined)?.maximalPermissionPolicy;
    if (!policy?.local) return undefined;
    const user = attrs.user;
    const prefixed: UserInfo = { ...user, name: `${MAXIMAL_PERMISSION_PREFIX}${user.name}`, groups: user.groups.map((g) => `${MAXIMAL_PERMISSION_PREFIX}${g}`) };
    if (await deps.authorize(prefixed, from.cluster, { ...attrs, user: prefixed, cluster: from.cluster })) return undefined;
    return `the maximal permission policy of APIExport ${from.cluster}|${from.name} does not allow it`;
  };
}
