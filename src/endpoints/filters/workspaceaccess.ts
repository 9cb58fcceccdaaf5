/**
 * kcp's workspace access gate (kcp: pkg/authorization/workspace_content_authorizer.go): before
 * anything that depends on a logical cluster's content (its resources and CRDs, subresources,
 * verbs, impersonation), the authenticated user must have access to the workspace — so a caller
 * without access gets one answer whether the workspace exists or not. Virtual workspaces
 * authorize by their own rules; the caller's home workspace (`~`) is everyone's.
 */
import { workspaceAccessDenied } from '../../apimachinery/errors.js';
import { auditAuthorization } from './audit.js';
import { forbiddenRequest } from './authorization.js';
import type { Filter } from '../context.js';

/** Throws 403 (kcp's workspace-access wording) when the user may not enter the logical cluster. */
export const withWorkspaceAccess: Filter = async (ctx, req, reply, next) => {
  const info = req.kcpInfo!;
  if (!req.kcpView && !req.kcpHome && info.cluster) {
    if (info.cluster === '*') {
      const denial = ctx.authz.workspaceGate(req.kcpUser!, '*', true);
      if (denial) throw forbiddenRequest(req.kcpUser!, info, denial);
    } else {
      const denial = ctx.authz.workspaceGate(req.kcpUser!, info.cluster, await ctx.clusterExists(info.cluster));
      if (denial) { auditAuthorization(req, false, denial); throw workspaceAccessDenied(req.kcpClusterSegment ?? info.cluster, denial); }
    }
  }
  return next(ctx, req, reply);
};
