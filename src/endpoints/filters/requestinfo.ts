/**
 * Request info (kube: k8s.io/apiserver/pkg/endpoints/filters/requestinfo.go) behind kcp's prefixes:
 * `/services/<virtual workspace>/<segments…>` selects a virtual workspace, `/clusters/<path>` a
 * logical cluster, which is resolved here from a name or workspace path. Sets `req.kcpInfo`,
 * `req.kcpView`, `req.kcpPrefix` and `req.kcpHome`.
 */
import { StatusError, badRequest, workspaceAccessDenied } from '../../apimachinery/errors.js';
import { parseRequestInfo, type RequestInfo } from '../requestinfo.js';
import { queryOf, type Filter } from '../context.js';

/** Whether the request is `GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~` (the caller's home workspace). */
function isHomeWorkspaceRequest(info: RequestInfo): boolean {
  return info.verb === 'get' && info.name === '~' && info.apiGroup === 'tenancy.kcp.io' && info.resource === 'workspaces' && !info.subresource && info.cluster === 'root';
}

/**
 * Parses the path; throws 404 for an unknown virtual workspace and kcp's workspace-access denial
 * (403) for a cluster path that does not resolve, so that nothing is revealed about it.
 */
export const withRequestInfo: Filter = async (ctx, req, reply, next) => {
  const q = req.url.indexOf('?');
  const rawPath = q < 0 ? req.url : req.url.slice(0, q);
  let path = rawPath;
  if (rawPath.startsWith('/services/')) {
    // `/services/<name>/<segments…>` then `/clusters/<cluster>/…` as anywhere else.
    const parts = rawPath.split('/');
    const vw = ctx.virtualWorkspaces?.[parts[2] ?? ''];
    const args = parts.slice(3, 3 + (vw?.segments ?? 0));
    path = `/${parts.slice(3 + (vw?.segments ?? 0)).join('/')}`;
    if (!vw || args.length < vw.segments || args.some((a) => !a) || !path.startsWith('/clusters/')) {
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    req.kcpPrefix = parts.slice(0, 3 + vw.segments).join('/');
    req.kcpView = vw.view(args.map((a) => {
      try { return decodeURIComponent(a); } catch { throw badRequest(`malformed URL path segment "${a}"`); }
    }));
  }
  const info = parseRequestInfo(req.method, path, queryOf(req));
  req.kcpInfo = info;
  req.kcpHome = !req.kcpView && isHomeWorkspaceRequest(info);
  if (info.cluster && info.cluster !== '*') {
    req.kcpClusterSegment = info.cluster;
    const resolved = ctx.resolveCluster(info.cluster);
    // An unknown path is refused like a logical cluster one may not access: nothing is revealed.
    if (resolved === undefined) throw workspaceAccessDenied(info.cluster);
    info.cluster = resolved;
  }
  return next(ctx, req, reply);
};
