/**
 * Authorization (kube: k8s.io/apiserver/pkg/endpoints/filters/authorization.go), the one place a
 * request is authorized: kcp's union authorizer (src/auth/authorizer.ts: workspace content, RBAC)
 * for resource and non-resource requests, then, for a resource bound from an APIExport, the
 * export's maximal permission policy; in a virtual workspace, the view's own rules. The decision
 * is recorded in the audit event. The caller's home workspace authorizes in its handler.
 */
import type { FastifyRequest } from 'fastify';
import { StatusError, forbidden } from '../../apimachinery/errors.js';
import type { AuthzAttributes } from '../../auth/authorizer.js';
import type { UserInfo } from '../../registry/store.js';
import type { RequestInfo } from '../requestinfo.js';
import type { AppContext, Filter } from '../context.js';
import { auditAuthorization } from './audit.js';
import { scopeNamespace } from './resource.js';

/** 403 in kube-apiserver's wording for a request refused before its resource was resolved. */
export function forbiddenRequest(user: UserInfo, info: RequestInfo, why: string): StatusError {
  if (!info.isResourceRequest) return new StatusError(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${info.verb} path "${info.path}": ${why}`);
  const scope = info.namespace ? `in the namespace "${info.namespace}"` : 'at the cluster scope';
  return forbidden(user.name, info.verb, { group: info.apiGroup, resource: info.subresource ? `${info.resource}/${info.subresource}` : info.resource }, info.name || undefined, why, scope);
}

/**
 * Authorizes a non-resource request for `path` in `cluster` ('' for the shard's base); throws 403
 * with kube's wording. Also used for `/metrics`, which is outside the chain.
 */
export async function authorizeNonResource(ctx: AppContext, req: FastifyRequest, path: string, cluster: string): Promise<void> {
  const user = req.kcpUser!;
  const verb = req.method === 'GET' || req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
  const d = ctx.authz.authorize({ user, verb, cluster, isResourceRequest: false, namespace: '', apiGroup: '', resource: '', subresource: '', name: '', path }, cluster ? await ctx.clusterExists(cluster) : true);
  auditAuthorization(req, d.allowed, d.reason);
  if (!d.allowed) throw new StatusError(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${verb} path "${path}"${d.reason ? `: ${d.reason}` : ''}`);
}

/** Throws 403 unless the request is allowed. */
export const withAuthorization: Filter = async (ctx, req, reply, next) => {
  const info = req.kcpInfo!;
  const user = req.kcpUser!;
  const view = req.kcpView;
  if (!info.isResourceRequest) {
    if (view) {
      const denial = await view.authorize({ user, cluster: info.cluster, verb: 'get', apiGroup: '', resource: '', subresource: '' });
      if (denial) throw forbiddenRequest(user, info, denial);
    } else {
      await authorizeNonResource(ctx, req, info.path, info.cluster === '*' ? '' : info.cluster);
    }
    return next(ctx, req, reply);
  }
  if (req.kcpHome) return next(ctx, req, reply);
  const desc = req.kcpStore!.desc;
  const namespace = scopeNamespace(req);
  const attrs: AuthzAttributes = {
    user, verb: info.verb, cluster: info.cluster, isResourceRequest: true, namespace,
    apiGroup: info.apiGroup, resource: info.resource, subresource: info.subresource, name: info.name, path: info.path,
  };
  const exists = info.cluster === '*' || await ctx.clusterExists(info.cluster);
  const decision = view
    ? await view.authorize({ user, cluster: info.cluster, verb: info.verb, apiGroup: info.apiGroup, resource: info.resource, subresource: info.subresource }).then((reason) => ({ allowed: !reason, reason: reason ?? '' }))
    : ctx.authz.authorize(attrs, exists);
  if (decision.allowed && !view && desc.identity && ctx.maximalPermission && !user.groups.includes('system:masters')) {
    const denial = await ctx.maximalPermission(info.cluster, desc, attrs);
    if (denial) Object.assign(decision, { allowed: false, reason: denial });
  }
  auditAuthorization(req, decision.allowed, decision.reason);
  if (!decision.allowed) {
    const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
    throw forbidden(user.name, info.verb, { group: info.apiGroup, resource: info.subresource ? `${info.resource}/${info.subresource}` : info.resource }, info.name || undefined, decision.reason, scope);
  }
  if (view && !exists) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  return next(ctx, req, reply);
};
