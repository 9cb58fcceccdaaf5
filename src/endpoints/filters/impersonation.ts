/**
 * Impersonation (kube: k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): `Impersonate-*`
 * headers replace `req.kcpUser` when the user may impersonate in the logical cluster
 * (src/auth/impersonation.ts). Not in virtual workspaces (kcp).
 */
import { StatusError } from '../../apimachinery/errors.js';
import { impersonate } from '../../auth/impersonation.js';
import type { Filter } from '../context.js';

/** Whether the request carries any impersonation header. */
function impersonates(h: Record<string, string | string[] | undefined>): boolean {
  return h['impersonate-user'] !== undefined || h['impersonate-group'] !== undefined || h['impersonate-uid'] !== undefined || Object.keys(h).some((k) => k.startsWith('impersonate-extra-'));
}

/** Throws 403 when impersonation is not allowed (or asked in a virtual workspace). */
export const withImpersonation: Filter = async (ctx, req, reply, next) => {
  if (impersonates(req.headers)) {
    if (req.kcpView) throw new StatusError(403, 'Forbidden', 'impersonation is not supported in virtual workspaces');
    const info = req.kcpInfo!;
    const cluster = info.cluster === '*' ? '' : info.cluster;
    req.kcpUser = impersonate(ctx.authz, req.kcpUser!, req.headers, cluster, cluster ? await ctx.clusterExists(cluster) : true);
  }
  return next(ctx, req, reply);
};
