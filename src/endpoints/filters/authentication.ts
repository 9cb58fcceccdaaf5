/**
 * Authentication (kube: k8s.io/apiserver/pkg/endpoints/filters/authentication.go): every request
 * but the public health and version endpoints carries a user — client certificate, bearer token or
 * service account token (src/auth/authn.ts) — or is answered 401.
 */
import type { FastifyInstance } from 'fastify';
import { StatusError } from '../../apimachinery/errors.js';
import type { AuthnResult } from '../../auth/authn.js';
import type { AppContext } from '../context.js';
import { sendStatus, toStatusError } from '../response.js';
import { connectionOf, headersDistinctOf } from '../../server/serving.js';

const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);

/** Whether `path` is answered without authentication (probes and `/version`, as kube's `system:public-info-viewer`). */
function isPublic(path: string): boolean {
  return PUBLIC_PATHS.has(path) || path.startsWith('/readyz/') || path.startsWith('/livez/') || path.startsWith('/healthz/');
}

/**
 * Installs authentication as the app's first `onRequest` hook after audit's, so it runs for every
 * route (resource paths, `/metrics`, probes); sets `req.kcpUser`.
 */
export function installAuthentication(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', (req, reply, done) => {
    const finish = (result: AuthnResult) => {
      if (result && 'user' in result) { req.kcpUser = result.user; done(); return; }
      if (isPublic(req.url.split('?')[0]!)) { done(); return; }
      sendStatus(reply, new StatusError(401, 'Unauthorized', 'Unauthorized'));
    };
    // The target logical cluster (`/clusters/<name or path>/…`), for per-workspace authentication.
    const segment = req.headers.authorization ? /^\/clusters\/([^/?]+)/.exec(req.url)?.[1] : undefined;
    let cluster: string | undefined;
    if (segment !== undefined && segment !== '*') { try { cluster = ctx.resolveCluster(decodeURIComponent(segment)); } catch { cluster = undefined; } }
    const result = ctx.authn.authenticate(connectionOf(req.raw), req.headers.authorization, headersDistinctOf(req.raw), cluster);
    // Service account tokens' first use and OpenID Connect tokens are asynchronous (signatures).
    if (result instanceof Promise) result.then(finish, (err: unknown) => sendStatus(reply, toStatusError(err)));
    else finish(result);
  });
}
