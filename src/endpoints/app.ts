/**
 * The Fastify application of a shard — kube-apiserver's `DefaultBuildHandlerChain`
 * (k8s.io/apiserver/pkg/server/config.go) as one module per concern:
 *
 *   audit (hooks) → authentication (hook) → request info → migration fence → workspace access → impersonation →
 *   resource → priority and fairness → authorization → timeout → handler of the verb
 *
 * Audit and authentication are Fastify hooks, since they apply to every route (probes and
 * `/metrics` too); the rest is the chain of `/clusters/*`, `/services/*` and the base API paths.
 * Each filter reads what the ones before it left on the request (src/endpoints/context.ts).
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { StatusError, badRequest } from '../apimachinery/errors.js';
import { chain, MAX_BODY_BYTES, VERSION_INFO, type AppContext, type Filter } from './context.js';
import { sendStatus, toStatusError } from './response.js';
import { installAudit } from './filters/audit.js';
import { installAuthentication } from './filters/authentication.js';
import { authorizeNonResource, withAuthorization } from './filters/authorization.js';
import { withImpersonation } from './filters/impersonation.js';
import { withRequestInfo } from './filters/requestinfo.js';
import { withResource } from './filters/resource.js';
import { withPriorityAndFairness } from './filters/flowcontrol.js';
import { withTimeout } from './filters/timeout.js';
import { withWorkspaceAccess } from './filters/workspaceaccess.js';
import { withMigrationFence } from './filters/migration.js';
import { serveRequest } from './handlers/index.js';
import { serveHealth } from './handlers/nonresource.js';
import { HEALTH_ENDPOINTS } from '../server/health.js';
import { createServingServer, type AnyRequest, type AnyResponse } from '../server/serving.js';

/** The filters of the API paths, outermost first. */
export const DEFAULT_FILTERS: readonly Filter[] = [withRequestInfo, withMigrationFence, withWorkspaceAccess, withImpersonation, withResource, withPriorityAndFairness, withAuthorization, withTimeout];

/**
 * Builds the Fastify app (not listening). `https` holds the TLS options; the server speaks HTTP/2
 * and HTTP/1.1 (src/server/serving.ts), `http2MaxStreamsPerConnection` as kube's
 * `--http2-max-streams-per-connection` (0: HTTP/1.1 only).
 */
export function buildApp(ctx: AppContext, https: { key: string; cert: string; ca: string | string[] }, serving: { http2MaxStreamsPerConnection?: number } = {}): FastifyInstance {
  // Typed as Fastify's HTTP/1.1 instance, as the rest of the chain is written: the raw request and
  // response may be HTTP/2's compatibility objects, which the few places touching them allow
  // for (connectionOf, headersDistinctOf; no connection-specific headers).
  const app = Fastify({
    http2: true,
    https: { allowHTTP1: true },
    serverFactory: (handler: (req: AnyRequest, res: AnyResponse) => void) => createServingServer({ tls: https, http2MaxStreamsPerConnection: serving.http2MaxStreamsPerConnection }, handler),
    logger: ctx.logger ?? false,
    bodyLimit: MAX_BODY_BYTES,
    forceCloseConnections: true,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Errors the router finds before a handler runs (a path with malformed percent-encoding): a
    // 400 Status like every other client mistake, not Fastify's own body.
    frameworkErrors: (err: Error & { statusCode?: number }, _req: FastifyRequest, reply: FastifyReply) => sendStatus(reply, err.statusCode && err.statusCode < 500 ? badRequest(err.message) : toStatusError(err)),
  } as unknown as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err, req, reply) => {
    const status = toStatusError(err);
    if (status.code >= 500 && status.code !== 503 && status.code !== 504) req.log.error({ err }, 'request failed');
    sendStatus(reply, status);
  });
  app.setNotFoundHandler((_req, reply) => sendStatus(reply, new StatusError(404, 'NotFound', 'the server could not find the requested resource')));

  // Before authentication: failed authentications are audited too.
  if (ctx.audit) installAudit(app, ctx.audit);
  app.addHook('onResponse', (req, reply, done) => {
    const info = req.kcpInfo;
    // A failed request names its resource only when it resolved: a path a tenant made up is not a series.
    const resource = info && (req.kcpStore || reply.statusCode < 400) ? info.resource : '';
    ctx.metrics.observeRequest(info?.verb ?? req.method.toLowerCase(), resource, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  installAuthentication(app, ctx);

  // At the server's base without authentication (probes); under /clusters/<path> through the chain.
  for (const endpoint of HEALTH_ENDPOINTS) {
    const serve = async (req: FastifyRequest, reply: FastifyReply) => serveHealth(ctx, req, reply, endpoint, req.url.split('?')[0]!.slice(endpoint.length + 1));
    app.get(`/${endpoint}`, serve);
    app.get(`/${endpoint}/*`, serve);
  }
  app.get('/version', async () => VERSION_INFO);
  app.get('/metrics', async (req, reply) => {
    await authorizeNonResource(ctx, req, '/metrics', '');
    reply.type(ctx.metrics.contentType).send(await ctx.metrics.render());
  });

  const handler = chain(DEFAULT_FILTERS, serveRequest);
  // Resolving to the reply tells Fastify the answer is (or is being) sent: a streamed body
  // (slicing.ts) is not cut short when the handler's promise settles first.
  const apiHandler = async (req: FastifyRequest, reply: FastifyReply) => { await handler(ctx, req, reply); return reply; };
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
  for (const url of ['/clusters/*', '/api', '/api/*', '/apis', '/apis/*', '/services/*']) app.route({ method: methods, url, handler: apiHandler });
  app.route({ method: ['GET'], url: '/openapi/*', handler: apiHandler });
  return app;
}
