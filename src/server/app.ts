/**
 * The Fastify application of a shard: `/clusters/<cluster>/…` routing, authentication,
 * authorization, discovery, OpenAPI and the generic resource handlers over the REST stores.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TLSSocket } from 'node:tls';
import { stringify as toYaml } from 'yaml';
import { StatusError, badRequest, forbidden, invalid, methodNotAllowed, notFound, workspaceAccessDenied } from '../apimachinery/errors.js';
import { CLUSTER_ANNOTATION, withClusterAnnotation, type KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { Authenticator, AuthnResult } from '../auth/authn.js';
import type { Authorizer, AuthzAttributes } from '../auth/authorizer.js';
import { impersonate } from '../auth/impersonation.js';
import { fieldValidationMode } from '../apimachinery/pruning.js';
import { PATCH_TYPES, Store, type DeleteOptions, type ListOptions, type RequestScope, type UserInfo } from '../registry/store.js';
import type { CacheEntry } from '../storage/watchcache.js';
import { parseRequestInfo, queryBool, type RequestInfo } from './requestinfo.js';
import { decodeApplyPatch, decodeBody, negotiateOutput, type OutputFormat } from './negotiation.js';
import { parseIncludeObject, partialObjectMetadata, toTable } from './table.js';
import { aggregatedDiscovery, apiGroupDoc, apiGroupList, apiResourceList, apiVersions } from './discovery.js';
import type { WatchHub } from './watch.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import type { Metrics } from './metrics.js';
import type { VirtualView } from '../apiexports/virtualworkspace.js';
import { buildOpenAPIV2, buildOpenAPIV3GroupVersion, buildOpenAPIV3Root } from '../apis/openapi.js';
import { encodeOpenAPIV2Protobuf } from '../apis/openapiv2proto.js';
import { answerHealth, healthEndpointOf, HEALTH_ENDPOINTS, type HealthCheck, type HealthEndpoint } from './health.js';
import { addAuditAnnotation, auditAuthorization, auditResponseStarted, installAudit, type Auditor } from './audit.js';
import type { FlowControlGrant, RequestFilter } from '../flowcontrol/filter.js';

/** Maximum request body: 3 MiB, as kube-apiserver's default `MaxRequestBodyBytes`. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Version reported by `/version`. */
export const VERSION_INFO = {
  major: '1', minor: '32', gitVersion: 'v1.32.0+kcp-ts-0.1.0', gitCommit: '', gitTreeState: 'clean',
  buildDate: '2026-11-22T00:00:00Z', goVersion: 'node', compiler: 'tsc', platform: `${process.platform}/${process.arch}`,
};

/** Everything the handlers need from the running shard. */
export interface AppContext {
  /** The resources each logical cluster serves (built-ins and its custom resources). */
  apis(cluster: string): ClusterAPIs;
  authn: Authenticator;
  authz: Authorizer;
  hub: WatchHub;
  metrics: Metrics;
  /** Whether a logical cluster exists (LogicalCluster `cluster` stored in it). */
  clusterExists(cluster: string): Promise<boolean>;
  /** The checks of `/livez`, `/readyz` and `/healthz` (health.ts). */
  healthChecks: Record<HealthEndpoint, readonly HealthCheck[]>;
  /** Address clients use (`host:port`), for `/api` serverAddressByClientCIDRs. */
  externalAddress: string;
  /**
   * Maps the `<x>` of `/clusters/<x>` to a logical cluster name: names pass through, workspace
   * paths (`root:org:team`, `user:alice`) resolve through the LogicalCluster index; undefined when
   * a path does not resolve.
   */
  resolveCluster(segment: string): string | undefined;
  /**
   * `GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~`: creates the caller's home
   * workspace if needed and returns it (429 with Retry-After while it initializes).
   */
  homeWorkspace(user: UserInfo): Promise<KubeObject>;
  /**
   * Create handler of virtual resources (access reviews). `deep`: a SubjectAccessReview asked
   * for with kcp's deep-SAR header by `system:masters` (another shard), see `Authorizer.authorize`.
   */
  createVirtual(desc: ResourceDescriptor, body: KubeObject, user: UserInfo, cluster: string, deep: boolean): KubeObject | Promise<KubeObject>;
  /**
   * `create` handlers of the descriptors' `extraSubresources`, by `<group>/<plural>/<subresource>`
   * (core group empty), e.g. `/serviceaccounts/token` (TokenRequest, src/auth/serviceaccounts.ts).
   * A listed subresource without a handler answers 404.
   */
  subresourceCreate?: Record<string, (scope: RequestScope, name: string, body: unknown) => Promise<KubeObject>>;
  /**
   * Virtual workspaces served at `/services/<name>/<segments…>/clusters/<cluster>/…` (kcp's), by
   * name: how many path segments follow the name (`apiexport`: the export's logical cluster and
   * name), and the view they select. `view` throws a StatusError (404) for unknown segments.
   */
  virtualWorkspaces?: Record<string, { segments: number; view(args: string[]): VirtualView }>;
  /**
   * For a request on a bound resource (`desc.identity`) that RBAC allowed: the export's maximal
   * permission policy (src/apiexports/maximalpermission.ts); undefined when allowed, else why not.
   */
  maximalPermission?(cluster: string, desc: ResourceDescriptor, attrs: AuthzAttributes): Promise<string | undefined>;
  logger?: boolean | object;
  /** Audit policy and log (audit.ts; `--audit-policy-file`, `--audit-log-*`); absent: no auditing. */
  audit?: Auditor;
  /**
   * Priority and fairness, or max-in-flight limits (src/flowcontrol/filter.ts), applied after
   * impersonation and before authorization; absent: no limit.
   */
  flowControl?: RequestFilter;
}

declare module 'fastify' {
  interface FastifyRequest {
    kcpInfo?: RequestInfo;
    kcpUser?: UserInfo;
    /** The virtual workspace the request is for, if any. */
    kcpView?: VirtualView;
    /** The path prefix before `/clusters/<x>` (`/services/apiexport/<c>/<e>`), '' for none. */
    kcpPrefix?: string;
  }
}

/** The APIs a request sees: its virtual workspace's, else its logical cluster's. */
function apisOf(ctx: AppContext, req: FastifyRequest, cluster: string): ClusterAPIs {
  const view = req.kcpView;
  if (!view) return ctx.apis(cluster);
  return cluster && cluster !== '*' && view.apisFor ? view.apisFor(cluster) : view.apis;
}

/** kcp's header asking a SubjectAccessReview to be evaluated deep (honoured for system:masters only). */
export const DEEP_SAR_HEADER = 'x-kcp-internal-deep-subjectaccessreview';

const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);

/** Builds the Fastify app (not listening). `https` holds the TLS options. */
export function buildApp(ctx: AppContext, https: { key: string; cert: string; ca: string | string[] }): FastifyInstance {
  const app = Fastify({
    https: { key: https.key, cert: https.cert, ca: https.ca, requestCert: true, rejectUnauthorized: false },
    logger: ctx.logger ?? false,
    bodyLimit: MAX_BODY_BYTES,
    forceCloseConnections: true,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Errors the router finds before a handler runs (a path with malformed percent-encoding): a
    // 400 Status like every other client mistake, not Fastify's own body.
    frameworkErrors: (err, _req, reply) => sendStatus(reply, err.statusCode && err.statusCode < 500 ? badRequest(err.message) : toStatusError(err)),
  });
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
    ctx.metrics.observeRequest(info?.verb ?? req.method.toLowerCase(), info?.resource ?? '', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  // Authentication for everything but the public health and version endpoints.
  app.addHook('onRequest', (req, reply, done) => {
    const path = req.url.split('?')[0]!;
    const finish = (result: AuthnResult) => {
      if (result && 'user' in result) { req.kcpUser = result.user; done(); return; }
      if (PUBLIC_PATHS.has(path) || path.startsWith('/readyz/') || path.startsWith('/livez/') || path.startsWith('/healthz/')) { done(); return; }
      sendStatus(reply, new StatusError(401, 'Unauthorized', 'Unauthorized'));
    };
    const result = ctx.authn.authenticate(req.raw.socket as TLSSocket, req.headers.authorization, req.raw.headersDistinct);
    // Only a service account token's first use is asynchronous (signature verification).
    if (result instanceof Promise) result.then(finish, (err: unknown) => sendStatus(reply, toStatusError(err)));
    else finish(result);
  });

  // At the server's base without authentication (probes); under /clusters/<path> in handle().
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

  const resourceHandler = async (req: FastifyRequest, reply: FastifyReply) => handle(ctx, req, reply);
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/clusters/*', handler: resourceHandler });
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/api', handler: resourceHandler });
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/api/*', handler: resourceHandler });
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/apis', handler: resourceHandler });
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/apis/*', handler: resourceHandler });
  app.route({ method: ['GET'], url: '/openapi/*', handler: resourceHandler });
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/services/*', handler: resourceHandler });
  return app;
}

/** Maps any thrown value to a StatusError (client mistakes keep their 4xx code). */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return new StatusError(413, 'RequestEntityTooLarge', `the request body is too large: limit is ${MAX_BODY_BYTES} bytes`);
  }
  if (e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e?.statusCode === 415) return new StatusError(415, 'UnsupportedMediaType', e.message ?? 'unsupported media type');
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) return new StatusError(400, 'BadRequest', e.message ?? 'bad request');
  return new StatusError(500, 'InternalError', `Internal error occurred: ${e?.message ?? String(err)}`);
}

/** Answers a health endpoint (health.ts) in kube's plain-text form; failing checks are logged. */
function serveHealth(ctx: AppContext, req: FastifyRequest, reply: FastifyReply, endpoint: HealthEndpoint, subPath: string): void {
  const res = answerHealth(endpoint, ctx.healthChecks[endpoint], subPath, queryOf(req), (name, reason) => req.log.warn(`${endpoint} check ${name} failed: ${reason}`));
  reply.code(res.code).header('x-content-type-options', 'nosniff').type('text/plain; charset=utf-8').send(res.body);
}

function sendStatus(reply: FastifyReply, err: StatusError): void {
  if (reply.sent || reply.raw.headersSent) return;
  if (err.details?.retryAfterSeconds && (err.code === 503 || err.code === 429 || err.code === 504)) reply.header('Retry-After', String(err.details.retryAfterSeconds));
  reply.code(err.code).type('application/json').send(JSON.stringify(err.toStatus()));
}

async function authorizeNonResource(ctx: AppContext, req: FastifyRequest, path: string, cluster: string): Promise<void> {
  const user = req.kcpUser!;
  const verb = req.method === 'GET' || req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
  const d = ctx.authz.authorize({ user, verb, cluster, isResourceRequest: false, namespace: '', apiGroup: '', resource: '', subresource: '', name: '', path }, cluster ? await ctx.clusterExists(cluster) : true);
  auditAuthorization(req, d.allowed, d.reason);
  if (!d.allowed) throw new StatusError(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${verb} path "${path}"${d.reason ? `: ${d.reason}` : ''}`);
}

function send(reply: FastifyReply, code: number, body: string | object, out: OutputFormat): void {
  if (out.yaml) {
    const obj = typeof body === 'string' ? JSON.parse(body) : body;
    reply.code(code).type('application/yaml').send(toYaml(obj));
    return;
  }
  reply.code(code).type('application/json').send(typeof body === 'string' ? body : JSON.stringify(body));
}

function queryOf(req: FastifyRequest): URLSearchParams {
  const q = req.url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
}

/** Whether the request is `GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~` (the caller's home workspace). */
function isHomeWorkspaceRequest(info: RequestInfo): boolean {
  return info.verb === 'get' && info.name === '~' && info.apiGroup === 'tenancy.kcp.io' && info.resource === 'workspaces' && !info.subresource && info.cluster === 'root';
}

/** 403 in kube-apiserver's wording for a request refused before its resource was resolved. */
function forbiddenRequest(user: UserInfo, info: RequestInfo, why: string): StatusError {
  if (!info.isResourceRequest) return new StatusError(403, 'Forbidden', `forbidden: User "${user.name}" cannot ${info.verb} path "${info.path}": ${why}`);
  const scope = info.namespace ? `in the namespace "${info.namespace}"` : 'at the cluster scope';
  return forbidden(user.name, info.verb, { group: info.apiGroup, resource: info.subresource ? `${info.resource}/${info.subresource}` : info.resource }, info.name || undefined, why, scope);
}

/** Resolves a URL resource to its descriptor and store, or throws 404. */
function resolveStore(ctx: AppContext, req: FastifyRequest, info: RequestInfo): Store {
  const store = apisOf(ctx, req, info.cluster).store(info.apiGroup, info.apiVersion, info.resource);
  if (!store) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  return store;
}

async function handle(ctx: AppContext, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const q = req.url.indexOf('?');
  const rawPath = q < 0 ? req.url : req.url.slice(0, q);
  const query = queryOf(req);
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
  const view = req.kcpView;
  const info = parseRequestInfo(req.method, path, query);
  req.kcpInfo = info;
  const home = !view && isHomeWorkspaceRequest(info);
  if (view) {
    // A virtual workspace authorizes by its own rules (view.authorize): no workspace gate.
    if (info.cluster !== '*') {
      const resolved = ctx.resolveCluster(info.cluster);
      if (resolved === undefined) throw workspaceAccessDenied(info.cluster);
      info.cluster = resolved;
    }
  } else if (info.cluster && info.cluster !== '*') {
    const segment = info.cluster;
    const resolved = ctx.resolveCluster(segment);
    // An unknown path is refused like a logical cluster one may not access: nothing is revealed.
    if (resolved === undefined) throw workspaceAccessDenied(segment);
    info.cluster = resolved;
    // The workspace gate comes before anything that depends on the logical cluster's content
    // (its resources and CRDs, subresources, verbs, impersonation), so that a caller without
    // access gets one answer whether the workspace exists or not. `~` is everyone's (kcp).
    if (!home) {
      const denial = ctx.authz.workspaceGate(req.kcpUser!, resolved, await ctx.clusterExists(resolved));
      if (denial) { auditAuthorization(req, false, denial); throw workspaceAccessDenied(segment, denial); }
    }
  } else if (info.cluster === '*') {
    const denial = ctx.authz.workspaceGate(req.kcpUser!, '*', true);
    if (denial) throw forbiddenRequest(req.kcpUser!, info, denial);
  }
  const h = req.headers;
  if (h['impersonate-user'] !== undefined || h['impersonate-group'] !== undefined || h['impersonate-uid'] !== undefined || Object.keys(h).some((k) => k.startsWith('impersonate-extra-'))) {
    if (view) throw new StatusError(403, 'Forbidden', 'impersonation is not supported in virtual workspaces');
    const cluster = info.cluster === '*' ? '' : info.cluster;
    req.kcpUser = impersonate(ctx.authz, req.kcpUser!, h, cluster, cluster ? await ctx.clusterExists(cluster) : true);
  }
  const user = req.kcpUser!;
  const flowGrant = ctx.flowControl && await admitFlow(ctx.flowControl, ctx, req, reply, info, query);
  if (view && !info.isResourceRequest) {
    const denial = await view.authorize({ user, cluster: info.cluster, verb: 'get', apiGroup: '', resource: '', subresource: '' });
    if (denial) throw forbiddenRequest(user, info, denial);
  }
  if (info.path.startsWith('/openapi/') || info.path === '/openapi') {
    if (!view) await authorizeNonResource(ctx, req, info.path, info.cluster);
    return serveOpenAPI(ctx, req, reply, info);
  }
  if (!info.cluster && info.isResourceRequest) {
    throw new StatusError(404, 'NotFound', `the server could not find the requested resource: use /clusters/<logical cluster>${rawPath}`);
  }
  if (!info.isResourceRequest) {
    if (!view) await authorizeNonResource(ctx, req, info.path, info.cluster === '*' ? '' : info.cluster);
    // What kube serves at its base, served at every /clusters/<path> base too (as kcp).
    if (req.method === 'GET' && (info.path === '/version' || info.path === '/version/')) return send(reply, 200, VERSION_INFO, negotiateOutput(req.headers.accept, false));
    const health = req.method === 'GET' ? healthEndpointOf(info.path) : undefined;
    if (health) return serveHealth(ctx, req, reply, health[0], health[1]);
    return serveDiscovery(ctx, req, reply, info);
  }
  if (home) {
    return send(reply, 200, await ctx.homeWorkspace(user), negotiateOutput(req.headers.accept, false));
  }
  const store = resolveStore(ctx, req, info);
  const desc = store.desc;
  // Subresources
  if (info.subresource) {
    const extra = desc.extraSubresources?.find((s) => s.name === info.subresource);
    const ok = extra !== undefined || (info.subresource === 'status' && desc.hasStatus) || (info.subresource === 'scale' && desc.scale !== undefined) || (info.subresource === 'finalize' && desc.group === '' && desc.plural === 'namespaces' && info.verb === 'update');
    if (!ok) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (!(extra?.verbs ?? ['get', 'update', 'patch']).includes(info.verb)) throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
  if (!desc.verbs.includes(info.verb) && !info.subresource) {
    throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
  if (info.cluster === '*' && info.verb !== 'list' && info.verb !== 'watch') {
    throw methodNotAllowed(`the wildcard logical cluster "*" supports only list and watch`);
  }
  let namespace = desc.namespaced ? info.namespace : '';
  if (!desc.namespaced && info.namespace && info.resource !== 'namespaces') {
    throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  }
  if (desc.namespaced && !namespace && !['list', 'watch'].includes(info.verb)) {
    throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  }
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
  const dryRunParam = query.getAll('dryRun');
  for (const d of dryRunParam) if (d !== 'All') throw badRequest(`dryRun: Unsupported value: "${d}": supported values: "All"`);
  const optionsKind = info.verb === 'create' ? 'CreateOptions' : info.verb === 'update' ? 'UpdateOptions' : 'PatchOptions';
  const fieldValidation = ['create', 'update', 'patch'].includes(info.verb) ? fieldValidationMode(query.get('fieldValidation'), optionsKind) : undefined;
  const warnings: string[] = [];
  const scope: RequestScope = {
    cluster: info.cluster, namespace: namespace || undefined, user, dryRun: dryRunParam.length > 0, fieldValidation, warnings,
    fieldManager: fieldManagerOf(query, req.headers['user-agent'], optionsKind), audit: (key, value) => addAuditAnnotation(req, key, value),
  };
  const addWarnings = () => {
    // RFC 7234 warn-code 299 "Miscellaneous persistent warning", as kube-apiserver sends them.
    if (warnings.length) reply.header('Warning', warningHeaders(warnings));
  };
  const accept = req.headers.accept;
  const body = req.body as Buffer | undefined;

  switch (info.verb) {
    case 'get': {
      const out = negotiateOutput(accept, false);
      if (info.subresource === 'scale') return send(reply, 200, await store.getScale(scope, info.name), out);
      const json = await store.get(scope, info.name);
      return sendObject(reply, 200, json, store.desc, out, query);
    }
    case 'list': {
      const out = negotiateOutput(accept, true);
      const opts = listOptions(query);
      if (view && info.cluster === '*') opts.restrict = view.restrict(store, 'list');
      const res = await store.list(scope, opts);
      const converting = store.prepare(res.items);
      if (converting) await converting;
      return sendList(reply, res.items, { resourceVersion: res.resourceVersion, continue: res.continue, remainingItemCount: res.remainingItemCount }, store, out, query, info.cluster === '*');
    }
    case 'watch': {
      const out = negotiateOutput(accept, true);
      const opts = listOptions(query);
      if (view && info.cluster === '*') opts.restrict = view.restrict(store, 'watch');
      const filter = store.compileFilter(opts);
      const include = parseIncludeObject(query.get('includeObject'));
      const wildcard = info.cluster === '*';
      const encode = (e: CacheEntry): string => {
        if (!out.as && !wildcard) return store.renderEntry(e);
        if (!out.as && !desc.storage) return withClusterAnnotation(e.json, e.cluster);
        let obj = store.decodeEntry(e);
        if (wildcard) obj = annotateCluster(obj, e.cluster);
        if (out.as === 'Table') return JSON.stringify(toTable(desc, [obj], { resourceVersion: String(e.rv) }, out.asVersion, include));
        if (out.as) return JSON.stringify(partialObjectMetadata(obj, out.asVersion));
        return JSON.stringify(obj);
      };
      const bookmark = (rv: number, end: boolean): string => {
        const meta: Record<string, unknown> = { resourceVersion: String(rv) };
        if (end) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
        if (out.as === 'Table') return JSON.stringify({ kind: 'Table', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata: meta, columnDefinitions: [], rows: [] });
        return JSON.stringify({ kind: desc.kind, apiVersion: desc.group ? `${desc.group}/${desc.version}` : desc.version, metadata: meta });
      };
      const timeout = query.get('timeoutSeconds');
      if (timeout !== null && !/^\d+$/.test(timeout)) throw badRequest(`invalid timeoutSeconds: "${timeout}"`);
      reply.hijack();
      try {
        await ctx.hub.start({
          groupResource: store.groupResource, cluster: info.cluster, namespace: namespace || undefined, filter,
          resourceVersion: opts.resourceVersion, sendInitialEvents: queryBool(query, 'sendInitialEvents'),
          allowBookmarks: queryBool(query, 'allowWatchBookmarks') === true, timeoutSeconds: timeout === null ? 1800 : Number(timeout),
          encode, bookmark, prepare: desc.storage?.webhook ? (entries) => store.prepare(entries) : undefined,
        }, reply.raw, 'application/json');
        // A watch holds its seats while it initialises (its initial events are written).
        flowGrant?.release();
        auditResponseStarted(req, reply);
      } catch (err) {
        flowGrant?.release();
        const status = toStatusError(err);
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(status.code, { 'Content-Type': 'application/json' });
          reply.raw.end(JSON.stringify(status.toStatus()));
        } else reply.raw.end();
      }
      return;
    }
    case 'create': {
      const out = negotiateOutput(accept, false, false, !desc.virtual && !info.subresource);
      const obj = decodeBody(req.headers['content-type'], body, desc.kind, scope.duplicateFields = []);
      // Only extra subresources take `create` (the checks above answered 404/405 for the others).
      if (info.subresource) {
        const create = ctx.subresourceCreate?.[`${desc.group}/${desc.plural}/${info.subresource}`];
        if (!create) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
        return send(reply, 201, await create(scope, info.name, obj), out);
      }
      if (desc.virtual) {
        const checked = store.checkBody(obj, scope);
        const deep = req.headers[DEEP_SAR_HEADER] === 'true' && user.groups.includes('system:masters');
        return sendObject(reply, 201, JSON.stringify(await ctx.createVirtual(desc, checked, user, info.cluster, deep)), desc, out, query);
      }
      const json = await store.create(scope, obj);
      addWarnings();
      return sendObject(reply, 201, json, desc, out, query);
    }
    case 'update': {
      const out = negotiateOutput(accept, false);
      const obj = decodeBody(req.headers['content-type'], body, desc.kind, scope.duplicateFields = []);
      if (info.subresource === 'scale') return send(reply, 200, await store.updateScale(scope, info.name, obj), out);
      const res = await store.update(scope, info.name, obj, info.subresource || undefined);
      addWarnings();
      return sendObject(reply, res.created ? 201 : 200, res.json, desc, out, query);
    }
    case 'patch': {
      const out = negotiateOutput(accept, false);
      const ct = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (!Object.values(PATCH_TYPES).includes(ct as never)) {
        throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`);
      }
      if (!body?.length) throw badRequest('the patch body is empty');
      if (ct === PATCH_TYPES.apply) {
        if (info.subresource) throw new StatusError(415, 'UnsupportedMediaType', `server-side apply is not supported on the ${info.subresource} subresource yet`);
        if (!query.get('fieldManager')) {
          throw invalid('PatchOptions', 'meta.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }]);
        }
        const res = await store.apply(scope, info.name, decodeApplyPatch(body), queryBool(query, 'force') === true);
        addWarnings();
        return sendObject(reply, res.created ? 201 : 200, res.json, desc, out, query);
      }
      if (info.subresource === 'scale') return send(reply, 200, await store.patchScale(scope, info.name, ct, body), out);
      const json = await store.patch(scope, info.name, ct, body, info.subresource || undefined);
      addWarnings();
      return sendObject(reply, 200, json, desc, out, query);
    }
    case 'delete': {
      const out = negotiateOutput(accept, false);
      const opts = deleteOptions(req, query);
      const res = await store.delete(scope, info.name, opts);
      // kube answers 202 Accepted when the object stays (finalizers) and the client asked for
      // cascading deletion with orphanDependents=false; 200 otherwise (handlers/delete.go).
      if (!res.deleted) return sendObject(reply, opts.orphanDependents === false ? 202 : 200, res.json, desc, out, query);
      const obj = JSON.parse(res.json) as KubeObject;
      return send(reply, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: info.name, group: desc.group, kind: desc.plural, uid: obj.metadata.uid } }, out);
    }
    case 'deletecollection': {
      const out = negotiateOutput(accept, true);
      const removed = await store.deleteCollection(scope, listOptions(query), deleteOptions(req, query));
      await store.prepare(removed);
      return sendList(reply, removed, {}, store, out, query, false);
    }
    default:
      throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
}

/**
 * Asks the flow-control filter for seats: held until the response is closed (a watch releases
 * them itself once initialised); a client that goes away while queued stops waiting. Sets the
 * `X-Kubernetes-PF-*` headers. Throws the filter's 429.
 */
async function admitFlow(filter: RequestFilter, ctx: AppContext, req: FastifyRequest, reply: FastifyReply, info: RequestInfo, query: URLSearchParams): Promise<FlowControlGrant> {
  const gone = new AbortController();
  let grant: FlowControlGrant | undefined;
  let closed = false;
  reply.raw.once('close', () => { closed = true; gone.abort(); grant?.release(); });
  const store = info.isResourceRequest && info.cluster ? apisOf(ctx, req, info.cluster).store(info.apiGroup, info.apiVersion, info.resource) : undefined;
  grant = await filter.admit({
    user: req.kcpUser!, cluster: info.cluster, verb: info.verb, apiGroup: info.apiGroup, resource: info.resource, subresource: info.subresource,
    namespace: info.namespace, isResourceRequest: info.isResourceRequest, path: info.path, isLongRunning: info.verb === 'watch',
    groupResource: store?.groupResource, query, signal: gone.signal, setHeader: (name, value) => { reply.raw.setHeader(name, value); },
  });
  if (closed) grant.release();
  return grant;
}

/** Total length of the warnings of one response, in characters, and of one when they exceed it (kube's warning filter). */
const WARNINGS_TOTAL_CHARS = 4096;
const WARNING_ITEM_CHARS = 256;

/**
 * `Warning` header values (RFC 7234 code 299) for deduplicated warnings, limited as
 * kube-apiserver's warning recorder does: over 4,096 characters in total, each is cut to 256, and
 * those that still do not fit are dropped. A warning may quote client input (an unknown field's
 * name): the value goes out as UTF-8 bytes, control characters escaped, since Node refuses header
 * values with characters above U+00FF or control characters.
 */
export function warningHeaders(warnings: readonly string[]): string[] {
  let items = [...new Set(warnings)];
  const total = (xs: string[]) => xs.reduce((n, w) => n + w.length, 0);
  if (total(items) > WARNINGS_TOTAL_CHARS) {
    items = items.map((w) => (w.length > WARNING_ITEM_CHARS ? `${w.slice(0, WARNING_ITEM_CHARS)}...` : w));
    const kept: string[] = [];
    let used = 0;
    for (const w of items) { if (used + w.length > WARNINGS_TOTAL_CHARS) break; kept.push(w); used += w.length; }
    items = kept;
  }
  return items.map((w) => {
    // JSON quoting escapes '"', '\\' and C0 controls; DEL too, then UTF-8 bytes as a latin1 string.
    const quoted = JSON.stringify(w).replace(/\x7f/g, '\\u007f');
    return Buffer.from(`299 - ${quoted}`, 'utf8').toString('latin1');
  });
}

/**
 * The field manager of a write: `?fieldManager=`, else the User-Agent up to its first `/`
 * (kube-apiserver's `prefixFromUserAgent`). Throws 422 for a name over 128 characters or with
 * non-printable characters (kube's ValidateFieldManager).
 */
function fieldManagerOf(query: URLSearchParams, userAgent: string | undefined, optionsKind: string): string {
  const given = query.get('fieldManager');
  if (given !== null) {
    if (given.length > 128 || !/^[\x20-\x7e]*$/.test(given)) {
      throw invalid(optionsKind, 'meta.k8s.io', '', [{ reason: 'FieldValueInvalid', field: 'fieldManager', message: `Invalid value: ${JSON.stringify(given)}: must be at most 128 printable characters` }]);
    }
    if (given) return given;
  }
  return (userAgent ?? 'unknown').split('/')[0]!.slice(0, 128) || 'unknown';
}

function annotateCluster(obj: KubeObject, cluster: string): KubeObject {
  obj.metadata.annotations = { ...obj.metadata.annotations, [CLUSTER_ANNOTATION]: cluster };
  return obj;
}

function listOptions(query: URLSearchParams): ListOptions {
  const limit = query.get('limit');
  if (limit !== null && !/^\d+$/.test(limit)) throw badRequest(`invalid limit: "${limit}"`);
  return {
    labelSelector: query.get('labelSelector') ?? undefined,
    fieldSelector: query.get('fieldSelector') ?? undefined,
    limit: limit === null ? undefined : Number(limit),
    continue: query.get('continue') ?? undefined,
    resourceVersion: query.get('resourceVersion') ?? undefined,
    resourceVersionMatch: query.get('resourceVersionMatch') ?? undefined,
  };
}

function deleteOptions(req: FastifyRequest, query: URLSearchParams): DeleteOptions {
  const body = req.body as Buffer | undefined;
  let opts: DeleteOptions = {};
  if (body && body.length) {
    const parsed = decodeBody(req.headers['content-type'], body, 'DeleteOptions');
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('DeleteOptions must be an object');
    const kind = (parsed as { kind?: string }).kind;
    if (kind !== undefined && kind !== 'DeleteOptions') throw badRequest(`the body must be a DeleteOptions object, got kind "${kind}"`);
    opts = parsed as DeleteOptions;
  }
  const pp = query.get('propagationPolicy');
  if (pp) opts.propagationPolicy = pp;
  // Deprecated, still honoured by kube-apiserver as a query parameter.
  const orphan = queryBool(query, 'orphanDependents');
  if (orphan !== undefined) opts.orphanDependents = orphan;
  if (opts.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(opts.propagationPolicy)) {
    throw badRequest(`propagationPolicy: Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"`);
  }
  return opts;
}

function sendObject(reply: FastifyReply, code: number, json: string, desc: ResourceDescriptor, out: OutputFormat, query: URLSearchParams): void {
  if (!out.as) {
    if (!out.yaml) { reply.code(code).type('application/json').send(json); return; }
    send(reply, code, json, out);
    return;
  }
  const obj = JSON.parse(json) as KubeObject;
  if (out.as === 'Table') {
    send(reply, code, toTable(desc, [obj], { resourceVersion: obj.metadata.resourceVersion }, out.asVersion, parseIncludeObject(query.get('includeObject'))), out);
    return;
  }
  send(reply, code, partialObjectMetadata(obj, out.asVersion), out);
}

function sendList(reply: FastifyReply, items: CacheEntry[], listMeta: Record<string, unknown>, store: Store, out: OutputFormat, query: URLSearchParams, wildcard: boolean): void {
  const desc = store.desc;
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(listMeta)) if (v !== undefined) meta[k] = v;
  if (!out.as && !out.yaml && (!desc.storage || desc.storage.webhook)) {
    // Fast path: the stored (or converted) JSON of each item is the list item as is (wildcard:
    // with the kcp.io/cluster annotation spliced in).
    const apiVersion = desc.group ? `${desc.group}/${desc.version}` : desc.version;
    let s = `{"kind":"${desc.listKind}","apiVersion":"${apiVersion}","metadata":${JSON.stringify(meta)},"items":[`;
    for (let i = 0; i < items.length; i++) {
      const json = desc.storage ? store.renderEntry(items[i]!) : items[i]!.json;
      s += (i ? ',' : '') + (wildcard ? withClusterAnnotation(json, items[i]!.cluster) : json);
    }
    reply.code(200).type('application/json').send(`${s}]}`);
    return;
  }
  const objs = items.map((e) => {
    const o = store.decodeEntry(e);
    return wildcard ? annotateCluster(o, e.cluster) : o;
  });
  if (out.as === 'Table') {
    send(reply, 200, toTable(desc, objs, meta, out.asVersion, parseIncludeObject(query.get('includeObject'))), out);
    return;
  }
  if (out.as === 'PartialObjectMetadataList') {
    send(reply, 200, { kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata: meta, items: objs.map((o) => partialObjectMetadata(o, out.asVersion)) }, out);
    return;
  }
  send(reply, 200, { kind: desc.listKind, apiVersion: desc.group ? `${desc.group}/${desc.version}` : desc.version, metadata: meta, items: objs }, out);
}

function serveDiscovery(ctx: AppContext, req: FastifyRequest, reply: FastifyReply, info: RequestInfo): void {
  const parts = info.path.split('/').filter(Boolean);
  // A path that is no discovery document is unknown whatever the method (kube: 404, not 405).
  if (parts[0] !== 'api' && parts[0] !== 'apis') throw notFound({ group: '', resource: '' }, info.path);
  if (info.verb !== 'get') throw methodNotAllowed('the server does not allow this method on the requested resource');
  const descs = apisOf(ctx, req, info.cluster).descriptors;
  const out = negotiateOutput(req.headers.accept, false, parts.length === 1);
  if (parts.length === 1 && out.discovery) {
    const doc = aggregatedDiscovery(descs, parts[0] === 'api', out.discovery);
    reply.code(200).header('Vary', 'Accept').type(`application/json;g=apidiscovery.k8s.io;v=${out.discovery};as=APIGroupDiscoveryList`).send(JSON.stringify(doc));
    return;
  }
  let doc: object | undefined;
  if (parts[0] === 'api') {
    if (parts.length === 1) doc = apiVersions(ctx.externalAddress);
    else if (parts.length === 2) doc = apiResourceList(descs, '', parts[1]!);
  } else if (parts[0] === 'apis') {
    if (parts.length === 1) doc = apiGroupList(descs);
    else if (parts.length === 2) doc = apiGroupDoc(descs, parts[1]!);
    else if (parts.length === 3) doc = apiResourceList(descs, parts[1]!, parts[2]!);
  }
  if (!doc) throw notFound({ group: '', resource: '' }, info.path);
  send(reply, 200, doc, out);
}

/** OpenAPI documents rendered once per descriptor set. */
interface OpenAPICache { v2json?: string; v2proto?: Buffer; v3root?: string; gv: Map<string, string | null> }
const openapiCache = new WeakMap<ResourceDescriptor[], OpenAPICache>();

/**
 * `/openapi/v2` (JSON, or gnostic protobuf when asked: kubectl 1.27/1.28 accept only that),
 * `/openapi/v3` and its per-group-version documents.
 */
function serveOpenAPI(ctx: AppContext, req: FastifyRequest, reply: FastifyReply, info: RequestInfo): void {
  const descs = apisOf(ctx, req, info.cluster).descriptors;
  let cache = openapiCache.get(descs);
  if (!cache) { cache = { gv: new Map() }; openapiCache.set(descs, cache); }
  if (info.path === '/openapi/v2') {
    const accept = req.headers.accept ?? '';
    if (accept.includes('proto-openapi.spec.v2')) {
      cache.v2proto ??= encodeOpenAPIV2Protobuf(buildOpenAPIV2(descs) as Record<string, unknown>);
      // Go's media-type parser rejects '@': answer with the dotted form, as kube-openapi does.
      reply.type('application/com.github.proto-openapi.spec.v2.v1.0+protobuf').send(cache.v2proto);
      return;
    }
    cache.v2json ??= JSON.stringify(buildOpenAPIV2(descs));
    reply.type('application/json').send(cache.v2json);
    return;
  }
  if (info.path === '/openapi/v3') {
    cache.v3root ??= JSON.stringify(buildOpenAPIV3Root(descs));
    const root = JSON.parse(cache.v3root) as { paths: Record<string, { serverRelativeURL: string }> };
    if (info.cluster) {
      // Clients follow serverRelativeURL: keep them inside the logical cluster.
      for (const v of Object.values(root.paths)) v.serverRelativeURL = `${req.kcpPrefix ?? ''}/clusters/${info.cluster}${v.serverRelativeURL}`;
    }
    reply.type('application/json').send(JSON.stringify(root));
    return;
  }
  const m = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/.exec(info.path);
  if (m) {
    let doc = cache.gv.get(m[1]!);
    if (doc === undefined) {
      const seg = m[1]!.split('/');
      const [group, version] = seg[0] === 'api' ? ['', 'v1'] : [seg[1]!, seg[2]!];
      const built = buildOpenAPIV3GroupVersion(descs, group, version);
      doc = built ? JSON.stringify(built) : null;
      cache.gv.set(m[1]!, doc);
    }
    if (doc) {
      reply.header('Cache-Control', 'public, immutable').type('application/json').send(doc);
      return;
    }
  }
  throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
}
