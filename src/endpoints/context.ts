/**
 * What the request chain of a shard needs from the running shard (`AppContext`), what each filter
 * leaves on the request for the next (`FastifyRequest.kcp*`), and the chain's two shapes: a
 * `Handler` answers a request, a `Filter` wraps the next handler (kube-apiserver's
 * `DefaultBuildHandlerChain`, k8s.io/apiserver/pkg/server/config.go).
 */
import type { ClusterFences } from '../storage/migration.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { Authenticator } from '../auth/authn.js';
import type { Authorizer, AuthzAttributes } from '../auth/authorizer.js';
import type { RequestScope, Store, UserInfo } from '../registry/store.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import type { VirtualView } from '../apiexports/virtualworkspace.js';
import type { WatchHub } from '../server/watch.js';
import type { Metrics } from '../server/metrics.js';
import type { HealthCheck, HealthEndpoint } from '../server/health.js';
import type { RequestInfo } from './requestinfo.js';
import type { Auditor } from './filters/audit.js';
import type { FlowControlGrant, RequestFilter } from '../flowcontrol/filter.js';
import type { StalledReaders } from './filters/stalledreaders.js';

/** Maximum request body: 3 MiB, as kube-apiserver's default `MaxRequestBodyBytes`. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Version reported by `/version`. */
export const VERSION_INFO = {
  major: '1', minor: '32', gitVersion: 'v1.32.0+kcp-ts-0.1.0', gitCommit: '', gitTreeState: 'clean',
  buildDate: '2026-11-22T00:00:00Z', goVersion: 'node', compiler: 'tsc', platform: `${process.platform}/${process.arch}`,
};

/** kcp's header asking a SubjectAccessReview to be evaluated deep (honoured for system:masters only). */
export const DEEP_SAR_HEADER = 'x-kcp-internal-deep-subjectaccessreview';

/** Everything the filters and handlers need from the running shard. */
export interface AppContext {
  /** The resources each logical cluster serves (built-ins and its custom resources). */
  apis(cluster: string): ClusterAPIs;
  authn: Authenticator;
  authz: Authorizer;
  hub: WatchHub;
  metrics: Metrics;
  /** Whether a logical cluster exists (LogicalCluster `cluster` stored in it). */
  clusterExists(cluster: string): Promise<boolean>;
  /** The checks of `/livez`, `/readyz` and `/healthz` (src/server/health.ts). */
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
  /** Audit policy and log (filters/audit.ts; `--audit-policy-file`, `--audit-log-*`); absent: no auditing. */
  audit?: Auditor;
  /** `--request-timeout` in milliseconds (filters/timeout.ts; default 60,000, 0 = none). */
  requestTimeoutMs?: number;
  /**
   * Priority and fairness, or max-in-flight limits (src/flowcontrol/filter.ts; filters/flowcontrol.ts);
   * absent: no limit.
   */
  flowControl?: RequestFilter;
  /** Gives the seats of a response whose reader stopped reading back (filters/stalledreaders.ts); absent: seats held until the response is done. */
  stalledReaders?: StalledReaders;
  /**
   * Logical clusters this shard is handing over to another shard or has handed over
   * (src/storage/migration.ts, filters/migration.ts); absent: no fences.
   */
  migrationFences?: ClusterFences;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request addresses (filters/requestinfo.ts); `cluster` resolved to a logical cluster name. */
    kcpInfo?: RequestInfo;
    /** The authenticated (then impersonated) user (filters/authentication.ts, filters/impersonation.ts). */
    kcpUser?: UserInfo;
    /** The `<x>` of `/clusters/<x>` as the client wrote it (a name or a workspace path), before resolution. */
    kcpClusterSegment?: string;
    /** The virtual workspace the request is for, if any. */
    kcpView?: VirtualView;
    /** The path prefix before `/clusters/<x>` (`/services/apiexport/<c>/<e>`), '' for none. */
    kcpPrefix?: string;
    /** The request's query parameters. */
    kcpQuery?: URLSearchParams;
    /** `GET …/workspaces/~` in root: the caller's home workspace (no workspace gate, no RBAC). */
    kcpHome?: boolean;
    /** The REST store a resource request addresses (filters/resource.ts). */
    kcpStore?: Store;
    /** The seats priority and fairness granted (filters/flowcontrol.ts); a watch releases them once initialised. */
    kcpFlowGrant?: FlowControlGrant;
  }
}

/** Answers a request (the end of the chain, or the chain so far). */
export type Handler = (ctx: AppContext, req: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * One concern of the request path: it reads what the filters before it left on the request, may
 * answer (usually by throwing a StatusError) or add to the request, and calls `next` to go on.
 */
export type Filter = (ctx: AppContext, req: FastifyRequest, reply: FastifyReply, next: Handler) => Promise<void>;

/** The handler that runs `filters` in order, the first outermost, around `handler`. */
export function chain(filters: readonly Filter[], handler: Handler): Handler {
  return filters.reduceRight<Handler>((next, filter) => (ctx, req, reply) => filter(ctx, req, reply, next), handler);
}

/** The APIs a request sees: its virtual workspace's, else its logical cluster's. */
export function apisOf(ctx: AppContext, req: FastifyRequest, cluster: string): ClusterAPIs {
  const view = req.kcpView;
  if (!view) return ctx.apis(cluster);
  return cluster && cluster !== '*' && view.apisFor ? view.apisFor(cluster) : view.apis;
}

/** The request's query parameters (parsed once, by filters/requestinfo.ts). */
export function queryOf(req: FastifyRequest): URLSearchParams {
  if (req.kcpQuery) return req.kcpQuery;
  const q = req.url.indexOf('?');
  return (req.kcpQuery = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1)));
}
