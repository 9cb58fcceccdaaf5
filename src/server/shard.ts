/**
 * Starts one shard in-process: PKI, (embedded) Redis, storage, watch cache, stores, bootstrap,
 * controllers and the HTTPS server. `kcp-ts start` and the tests both use `startServer`.
 */
import { mkdirSync, writeFileSync, renameSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ensurePki, type ServerPki } from '../pki/store.js';
import { buildKubeconfig } from '../pki/kubeconfig.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../storage/embedded.js';
import { RedisStorage, connectRedis, waitForRedis } from '../storage/redis.js';
import { WatchCache } from '../storage/watchcache.js';
import { ShardKeys } from '../storage/keys.js';
import { unfinishedRestore } from '../storage/backup.js';
import { Store, type RequestScope, type StoreBackend, type TransactionItem } from '../registry/store.js';
import { servedBuiltins } from '../apis/builtin.js';
import { Authenticator, DEFAULT_REQUEST_HEADERS, loadTokenFile, type RequestHeaderConfig } from '../auth/authn.js';
import type { Connection } from '../client/rest.js';
import { FRONT_PROXY_USER } from '../pki/store.js';
import { ServiceAccountTokens, createTokenRequest } from '../auth/serviceaccounts.js';
import { Authorizer, SYSTEM_MASTERS } from '../auth/authorizer.js';
import { evaluateAccessReview, evaluateRulesReview, evaluateSelfSubjectReview } from '../auth/reviews.js';
import { StatusError, notFound } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { UserInfo } from '../registry/store.js';
import { buildApp } from '../endpoints/app.js';
import { DEEP_SAR_HEADER } from '../endpoints/context.js';
import { APIRegistry } from '../apiextensions/registry.js';
import { WatchHub } from './watch.js';
import { LISTEN_BACKLOG, type ServingServer } from './serving.js';
import { Metrics } from './metrics.js';
import { bootstrapShard, type ShardURLs } from './bootstrap.js';
import { RestClient } from '../client/rest.js';
import { ShardDirectory, shardInfoOf, type ShardInfo } from '../shards/directory.js';
import { registerShard } from '../shards/registration.js';
import { MigrationCoordinator, registerMigrationEndpoints } from '../shards/migration.js';
import { ClusterFences } from '../storage/migration.js';
import { kcpResources } from '../apis/kcp/index.js';
import { LOGICAL_CLUSTERS_GR, LogicalClusterIndex } from '../tenancy/index.js';
import { WorkspaceTypeResolver } from '../tenancy/workspacetypes.js';
import { namespaceDeleteAdmission, workspaceAdmission } from '../tenancy/admission.js';
import { logicalClusterAdmission } from '../tenancy/logicalclusters.js';
import { homeWorkspaces } from '../tenancy/home.js';
import { startControllers } from '../controllers/index.js';
import { QueueThread } from '../controllers/runtime.js';
import { NAMESPACES_GR } from '../controllers/namespace/controller.js';
import { classifyClusterSegment } from '../tenancy/paths.js';
import { APICatalog, CATALOG_PATHS } from '../apiexports/catalog.js';
import { apisAdmission, crdOverlapAdmission } from '../apiexports/admission.js';
import { BINDINGS_GR } from '../apiexports/schemas.js';
import { syncerVirtualWorkspace } from '../syncer/virtualworkspace.js';
import { APIExportVirtualWorkspace } from '../apiexports/virtualworkspace.js';
import { maximalPermissionPolicy } from '../apiexports/maximalpermission.js';
import { Webhooks, WEBHOOK_CONFIGURATION_PATHS } from '../admission/webhooks.js';
import { ValidatingPolicies } from '../admission/policies.js';
import { MutatingPolicies } from '../admission/mutating.js';
import { chainAdmission } from '../admission/index.js';
import type { AdmissionPlugin } from '../admission/plugins.js';
import { QuotaReservations, ResourceQuotaAdmission } from '../admission/plugins/resourcequota.js';
import type { AuthenticationConfiguration } from '../auth/authconfig.js';
import { JWTAuthenticators } from '../auth/oidc.js';
import { WORKSPACE_AUTH_CONFIGS_GR, WorkspaceAuthenticators } from '../auth/workspaceauth.js';
import type { AdmissionAuthorize } from '../admission/celauthorizer.js';
import { INITIALIZING, TERMINATING, lifecycleVirtualWorkspace } from '../tenancy/virtualworkspaces.js';
import { lockRootDirectory } from './rootlock.js';
import { RevokedCertificates } from '../auth/revocation.js';
import { AuditLogWriter, loadAuditPolicy, type AuditPolicy, type Auditor } from '../endpoints/filters/audit.js';
import type { HealthCheck } from './health.js';
import { evaluateTokenReview } from '../auth/tokenreview.js';
import { csrAdmission } from '../certificates/csr.js';
import { createRequestFilter } from '../flowcontrol/filter.js';
import { StalledReaders } from '../endpoints/filters/stalledreaders.js';
import { FlowControlMetrics } from '../flowcontrol/metrics.js';
import { ensureConfiguration } from '../flowcontrol/bootstrap.js';
import { syncDanglingConditions } from '../flowcontrol/status.js';
import { FLOWCONTROL_GROUP, FLOW_SCHEMAS_GR, PRIORITY_LEVELS_GR } from '../flowcontrol/types.js';
import { SYSTEM_ADMIN_CLUSTER } from '../auth/authorizer.js';
import { startTrace } from './starttrace.js';

/** Options of `startServer` (flag names of `kcp-ts start`, as kcp's). */
export interface ServerOptions {
  /** Directory for PKI, kubeconfig and embedded Redis data (default `.kcp`). */
  rootDirectory?: string;
  /** HTTPS port (default 6443; 0 picks a free port). */
  securePort?: number;
  /** Address to listen on (default 127.0.0.1). */
  bindAddress?: string;
  /** Host name clients use; added to the serving certificate and written into kubeconfigs. */
  externalHostname?: string;
  /** Shard name (default `root`); also the Redis hash tag of the shard's keys. */
  shardName?: string;
  /**
   * The root shard, for a shard that is not the root (kcp `--root-shard-kubeconfig-file`): its URL,
   * CA and credentials with which this shard registers its `Shard` object there and reads the
   * instance's shards. Absent: this is the root shard.
   */
  rootShard?: Connection;
  /** URL other shards and the front-proxy reach this shard at (kcp `--shard-base-url`; default its own URL). */
  shardBaseURL?: string;
  /** URL clients reach workspaces at, written into `Workspace.spec.URL` (kcp `--shard-external-url`; default the base URL). */
  shardExternalURL?: string;
  /** kcp `--shard-virtual-workspace-url` (default the base URL). */
  shardVirtualWorkspaceURL?: string;
  /** Labels of this shard's `Shard` object, matched by workspaces' `spec.location.selector`. */
  shardLabels?: Record<string, string>;
  /**
   * Directory of the instance's PKI (CA, front-proxy CA, service-account key), shared by its shards
   * and front-proxy (default: the root directory).
   */
  pkiDirectory?: string;
  /**
   * Certificates given as files, as kube-apiserver takes them (`--tls-cert-file`, …), instead of a
   * PKI directory this shard manages: what a shard run by the operator gets, its Secrets mounted
   * read-only. With it nothing is written to a PKI directory, `shardClientCert` is required (the
   * shard's identity towards the other shards), request-header authentication needs
   * `requestHeader.clientCA`, and no admin kubeconfig is written (`kubeconfigPath` is '').
   */
  certificates?: ProvidedCertificates;
  /**
   * File of revoked client certificate serial numbers (src/auth/revocation.ts), re-read when it
   * changes: those certificates are refused with 401 (`--revoked-client-certificates-file`).
   */
  revokedClientCertificatesFile?: string;
  /**
   * Client certificate and key (PEM) this shard uses towards the other shards (kcp
   * `--shard-client-cert-file`/`--shard-client-key-file`); default the PKI's system:admin pair.
   */
  shardClientCert?: { cert: string; key: string };
  /**
   * Request-header authentication (kube `--requestheader-*`); default: the PKI's front-proxy CA,
   * allowed name `kcp-front-proxy`, `X-Remote-User`/`X-Remote-Group`/`X-Remote-Extra-`. `false`
   * turns it off.
   */
  requestHeader?: Partial<RequestHeaderConfig> | false;
  /** External Redis (`redis://…` or `unix://…`); without it an embedded redis-server is started. */
  redisUrl?: string;
  /**
   * Redis of the controllers' queues (needs no persistence). Default: with `redisUrl` the same
   * Redis, else a second embedded, non-persistent redis-server.
   */
  queueRedisUrl?: string;
  /** Static token file (kube-apiserver CSV format). */
  tokenAuthFile?: string;
  /**
   * JWT (OpenID Connect) authenticators: a validated `--authentication-config` or the
   * `--oidc-*` flags (src/auth/authconfig.ts `authenticationConfigFromFlags`); `algorithms` the
   * accepted signature algorithms (default all kube allows; kube's `--oidc-*` default is RS256).
   */
  authentication?: { config: AuthenticationConfiguration; algorithms?: readonly string[] };
  /**
   * Audit (src/endpoints/filters/audit.ts), kube-apiserver's `--audit-policy-file` (a parsed policy, or the
   * file: then an invalid one rejects the start with an `AuditPolicyError`) and `--audit-log-*`
   * (`path` a file or `-` for stdout; `maxSizeMB` 0: 100 MiB as lumberjack; `maxBackups`,
   * `maxAgeDays` 0: kept). Without a policy and a path nothing is audited.
   */
  audit?: { policy: AuditPolicy | string; path: string; maxSizeMB?: number; maxBackups?: number; maxAgeDays?: number };
  /**
   * Group/versions turned on or off beyond the defaults (`--runtime-config`, kube's syntax;
   * `admissionregistration.k8s.io/v1beta1` for MutatingAdmissionPolicy, off by default as in
   * kube 1.34 and kcp).
   */
  runtimeConfig?: Record<string, boolean>;
  /**
   * `--request-timeout` in milliseconds: requests other than watches are answered 504 after it
   * (src/endpoints/filters/timeout.ts). Default 60,000 as kube-apiserver; 0: no limit.
   */
  requestTimeoutMs?: number;
  /**
   * kube's `--http2-max-streams-per-connection` (default 1,000): the streams one HTTP/2 client
   * may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); 0 serves HTTP/1.1 only
   * (src/server/serving.ts).
   */
  http2MaxStreamsPerConnection?: number;
  /** Watch events kept in memory for resuming watches. */
  watchHistorySize?: number;
  /** Events kept in the Redis stream (approximate). */
  streamMaxLen?: number;
  /** Bookmark interval of watches, ms (default 15,000). */
  bookmarkIntervalMs?: number;
  /** Fastify/pino logger options or true for info logs. */
  logger?: boolean | object;
  /** Run the controllers in this process (default true). */
  controllers?: boolean;
  /**
   * kcp's `--sync-target-heartbeat-threshold` in ms: a SyncTarget whose syncer's last heartbeat
   * is older is not Ready, and its namespaces move to another SyncTarget (src/workload). Default
   * 30,000 (kcp's is one minute).
   */
  syncTargetHeartbeatThresholdMs?: number;
  /**
   * API priority and fairness (src/flowcontrol; kube's `--enable-priority-and-fairness`, default
   * true), configured by the FlowSchemas and PriorityLevelConfigurations of `system:admin`; off:
   * kube's max-in-flight limits.
   */
  enablePriorityAndFairness?: boolean;
  /** kube's `--max-requests-inflight` (default 400): with priority and fairness, part of the server's seats. */
  maxRequestsInflight?: number;
  /** kube's `--max-mutating-requests-inflight` (default 200). */
  maxMutatingRequestsInflight?: number;
  /**
   * Aborts the start-up: `startServer` then undoes what it did (stops what it started, releases
   * the root directory) and rejects with an `AbortError`. Has no effect once it resolved; stop a
   * running server with `stop()`.
   */
  signal?: AbortSignal;
}

/** PEM contents of the certificates of {@link ServerOptions.certificates}. */
export interface ProvidedCertificates {
  /** Serving certificate (chain) and its key: kube `--tls-cert-file`, `--tls-private-key-file`. */
  servingCert: string;
  servingKey: string;
  /** CA(s) of client certificates, also what other shards' serving certificates are checked against: kube `--client-ca-file`. */
  clientCA: string;
  /** Private key signing service account tokens: kube `--service-account-signing-key-file`. */
  serviceAccountSigningKey: string;
}

/** A running server. */
export interface RunningServer {
  /** `https://HOST:PORT` (bare host). */
  url: string;
  port: number;
  /** Path of `admin.kubeconfig`. */
  kubeconfigPath: string;
  /** PEM of the CA. */
  caPem: string;
  /** Redis URL in use (embedded or external). */
  redisUrl: string;
  app: FastifyInstance;
  /** The instance's shards as this one knows them (their Shard objects, whether their watches are connected; retryNow reconnects them at once). */
  shards: Pick<ShardDirectory, 'get' | 'list' | 'reachable' | 'retryNow'>;
  /** Stops serving: ends watches, closes controllers, storage and the embedded Redis. */
  stop(): Promise<void>;
}

/**
 * `promise`, or a rejection with the signal's reason as soon as `signal` aborts (the promise's own
 * outcome is then ignored).
 */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) { onAbort(); return; }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Writes `<dir>/admin.kubeconfig` for a server at `url` (a shard, or an instance's front-proxy):
 * contexts `root` (current), `base` and `system:admin`, users kcp-admin and the system:masters
 * shard admin. Returns its path.
 */
export function writeAdminKubeconfig(dir: string, url: string, pki: Pick<ServerPki, 'ca' | 'admin' | 'systemAdmin'>): string {
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  writeAtomic(kubeconfigPath, buildKubeconfig({
    clusters: [
      { name: 'root', server: `${url}/clusters/root`, caPem: pki.ca.certPem },
      { name: 'base', server: url, caPem: pki.ca.certPem },
      { name: 'system:admin', server: `${url}/clusters/system:admin`, caPem: pki.ca.certPem },
    ],
    users: [
      { name: 'kcp-admin', certPem: pki.admin.certPem, keyPem: pki.admin.keyPem },
      { name: 'shard-admin', certPem: pki.systemAdmin.certPem, keyPem: pki.systemAdmin.keyPem },
    ],
    contexts: [
      { name: 'root', cluster: 'root', user: 'kcp-admin' },
      { name: 'base', cluster: 'base', user: 'kcp-admin' },
      { name: 'system:admin', cluster: 'system:admin', user: 'shard-admin' },
    ],
    currentContext: 'root',
  }));
  return kubeconfigPath;
}

function writeAtomic(path: string, content: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, content, { mode: 0o600 });
  renameSync(tmp, path);
}

/**
 * Starts a shard and resolves once it serves and is ready.
 *
 * Takes the root directory's lock before touching anything in it (see rootlock.ts) and holds it
 * until `stop()`. On every failure, and when `options.signal` aborts, what was started is stopped
 * again and the lock released before the promise rejects.
 *
 * @throws RootDirectoryInUseError when another process serves the same root directory
 * @throws RedisServerMissingError when an embedded Redis is needed and redis-server is missing
 * @throws DOMException `AbortError` when `options.signal` aborted the start-up
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const signal = options.signal;
  signal?.throwIfAborted();
  const root = resolve(options.rootDirectory ?? '.kcp');
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const lock = await lockRootDirectory(root, options.rootDirectory ?? '.kcp');
  let running: RunningServer;
  try {
    running = await startLocked(root, options, signal);
  } catch (err) {
    await lock.release();
    throw err;
  }
  const stopServer = running.stop;
  let stopped: Promise<void> | undefined;
  running.stop = () => stopped ??= stopServer().finally(() => lock.release());
  return running;
}

/** Path (under a logical cluster) of the WorkspaceTypes every shard reads from every shard. */
const WORKSPACE_TYPES_PATH = 'apis/tenancy.kcp.io/v1alpha1/workspacetypes';
const WORKSPACE_AUTH_CONFIGS_PATH = 'apis/tenancy.kcp.io/v1alpha1/workspaceauthenticationconfigurations';

/** Feeds `listener` the Shard objects of the root workspace in `cache`, now and on every change. */
function watchLocalShards(cache: WatchCache, listener: (shards: ShardInfo[]) => void): void {
  const emit = () => listener(cache.list('core.kcp.io/shards', 'root').map((e) => shardInfoOf(JSON.parse(e.json) as KubeObject)));
  cache.subscribe((ev) => { if (!ev || (ev.entry.groupResource === 'core.kcp.io/shards' && ev.entry.cluster === 'root')) emit(); });
  emit();
}

/**
 * Asks the shard holding logical cluster `cluster` whether `user` may do what `attributes` say
 * there (a SubjectAccessReview, kube's authorization.k8s.io/v1, evaluated by that shard's
 * authorizer over its own RBAC): the decision for a WorkspaceType of another shard.
 * @throws StatusError 503 (Retry-After 1) when that shard cannot be asked
 */
async function remoteAccessReview(directory: ShardDirectory, shard: string, cluster: string, user: UserInfo, attributes: { verb: string; group: string; resource: string; subresource?: string; name: string }, deep = false): Promise<boolean> {
  const client = directory.client(shard);
  const unavailable = (why: string) => new StatusError(503, 'ServiceUnavailable', `cannot authorize in logical cluster "${cluster}" on shard "${shard}": ${why}`, { retryAfterSeconds: 1 });
  if (!client) throw unavailable('the shard is not known here');
  const review = {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
    spec: { user: user.name, groups: user.groups, ...(user.uid ? { uid: user.uid } : {}), ...(user.extra ? { extra: user.extra } : {}), resourceAttributes: attributes },
  };
  let answer;
  try {
    answer = await client.request('POST', `/clusters/${cluster}/apis/authorization.k8s.io/v1/subjectaccessreviews`, review, { timeoutMs: 5000, ...(deep ? { headers: { [DEEP_SAR_HEADER]: 'true' } } : {}) });
  } catch (err) {
    throw unavailable((err as Error).message);
  }
  if (answer.status !== 201 && answer.status !== 200) throw unavailable(`${answer.status} ${answer.json?.message ?? ''}`.trim());
  return answer.json?.status?.allowed === true;
}

/** What a shard needs of a PKI: the managed one ({@link ensurePki}) or certificates given as files. */
type ShardPki = ServerPki | {
  ca: { certPem: string };
  serving: { certPem: string; keyPem: string };
  serviceAccountKey: { keyPem: string };
};

/** `startServer` once the root directory is locked. */
async function startLocked(root: string, options: ServerOptions, signal: AbortSignal | undefined): Promise<RunningServer> {
  const bindAddress = options.bindAddress ?? '127.0.0.1';
  const shard = options.shardName ?? 'root';
  const external = options.externalHostname;
  // Checked after every step that takes time; what the step started is in `cleanups` by then.
  const checkpoint = () => signal?.throwIfAborted();
  const given = options.certificates;
  if (given && !options.shardClientCert) throw new Error('a shard given its certificates needs a client certificate towards the other shards (--shard-client-cert-file)');
  const embedded: EmbeddedRedis[] = [];
  // Until the server's logger exists, supervision messages of the embedded Redis go to stderr.
  let warn = (m: string): void => { process.stderr.write(`kcp-ts: ${m}\n`); };
  const stopEmbedded = async () => { for (const e of embedded.splice(0)) await e.stop().catch(() => undefined); };
  const cleanups: (() => Promise<void>)[] = [];
  // The PKI and both embedded redis-servers are independent: they start together (a redis-server
  // takes tens of ms to answer, the PKI as long to read or generate). Settled all, so that a
  // failure of one stops whatever the others started.
  const embed = async (role: 'storage' | 'queue') => {
    checkpoint();
    const e = await startEmbeddedRedis(root, role, { onEvent: (m) => warn(m), signal });
    embedded.push(e);
    return e.url;
  };
  const [pkiResult, redisResult, queueResult] = await Promise.allSettled([
    given
      ? {
        ca: { certPem: given.clientCA }, serving: { certPem: given.servingCert, keyPem: given.servingKey },
        serviceAccountKey: { keyPem: given.serviceAccountSigningKey },
      } satisfies ShardPki
      : ensurePki(options.pkiDirectory ? resolve(options.pkiDirectory) : root, {
        hostnames: external && !isIP(external) ? [external] : [],
        ipAddresses: [...(external && isIP(external) ? [external] : []), ...(bindAddress !== '0.0.0.0' && bindAddress !== '::' && isIP(bindAddress) ? [bindAddress] : [])],
      }),
    options.redisUrl ?? embed('storage'),
    options.queueRedisUrl ?? options.redisUrl ?? embed('queue'),
  ]);
  const failed = [pkiResult, redisResult, queueResult].find((r) => r.status === 'rejected');
  if (failed) {
    await stopEmbedded();
    throw failed.reason;
  }
  const pki: ShardPki = (pkiResult as PromiseFulfilledResult<ShardPki>).value;
  const redisUrl = (redisResult as PromiseFulfilledResult<string>).value;
  const queueRedisUrl = (queueResult as PromiseFulfilledResult<string>).value;
  startTrace(`${shard}: pki and embedded redis-servers`);
  const managed = 'systemAdmin' in pki ? pki : undefined;
  if (signal?.aborted) {
    await stopEmbedded();
    throw signal.reason;
  }
  // Started now, handed to the controllers later: the thread loads BullMQ while the shard starts.
  let queueThread = (options.controllers ?? true)
    ? new QueueThread(queueRedisUrl, { onError: (err) => warn(`controller queue thread failed: ${(err as Error).message}`) })
    : undefined;
  cleanups.push(async () => { await queueThread?.close(); });
  try {
    // The embedded Redis is this process's alone (the root directory's lock): it is its keys' only writer.
    const storage = new RedisStorage({ url: redisUrl, shard, streamMaxLen: options.streamMaxLen, soleWriter: options.redisUrl === undefined });
    cleanups.push(() => storage.close());
    await abortable(storage.ready(), signal);
    startTrace(`${shard}: storage connected`);
    // A restore that did not finish left part of a keyspace: serving it would lose objects silently.
    const halfRestored = await unfinishedRestore(storage.client, storage.keys);
    if (halfRestored) throw new Error(halfRestored);
    checkpoint();
    if (queueRedisUrl !== redisUrl && (options.controllers ?? true)) {
      // The queue thread would wait for it silently: an unreachable queue Redis fails the start.
      const probe = connectRedis(queueRedisUrl);
      probe.on('error', () => undefined);
      try { await abortable(waitForRedis(probe, queueRedisUrl), signal); } finally { probe.disconnect(); }
    }
    checkpoint();
    // Logical clusters being migrated away, or moved away (src/storage/migration.ts).
    const fences = new ClusterFences();
    await fences.load(storage.client, storage.keys);
    storage.fences = fences;
    const cache = new WatchCache(storage.client, new ShardKeys(shard), { historySize: options.watchHistorySize });
    cleanups.push(() => cache.stop());
    await cache.start();
    startTrace(`${shard}: watch cache synced`);
    checkpoint();

    const clusterKnown = async (cluster: string): Promise<boolean> => {
      if (cache.getEntry(LOGICAL_CLUSTERS_GR, cluster, '', 'cluster')) return true;
      // The cache may trail a just-created logical cluster by a moment: ask Redis.
      return (await storage.get(ShardKeys.objectKey({ group: 'core.kcp.io', resource: 'logicalclusters' }, cluster, undefined, 'cluster'))) !== null;
    };
    const backend: StoreBackend = {
      storage, cache,
      async checkNamespace(cluster, namespace) {
        let json = cache.getEntry(NAMESPACES_GR, cluster, '', namespace)?.json;
        if (!json) json = (await storage.get(ShardKeys.objectKey({ group: '', resource: 'namespaces' }, cluster, undefined, namespace))) ?? undefined;
        if (!json) throw notFound({ group: '', resource: 'namespaces' }, namespace);
        // Cheap test first: only a terminating namespace has a deletionTimestamp anywhere in it.
        if (json.includes('"deletionTimestamp"') && (JSON.parse(json) as KubeObject).metadata.deletionTimestamp) {
          throw new StatusError(403, 'Forbidden', `unable to create new content in namespace ${namespace} because it is being terminated`,
            { name: namespace, kind: 'namespaces', causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }] });
        }
      },
    };
    const index = new LogicalClusterIndex(cache);
    const authz = new Authorizer(cache, index);
    // The other shards of the instance: their Shard objects (local on the root shard, read from
    // the root shard elsewhere), logical clusters and WorkspaceTypes.
    const shardCredentials = { ca: pki.ca.certPem, ...(options.shardClientCert ?? { cert: managed!.systemAdmin.certPem, key: managed!.systemAdmin.keyPem }) };
    const directory = new ShardDirectory({
      self: shard,
      shards: options.rootShard ? { remote: options.rootShard } : { local: (listener) => watchLocalShards(cache, listener) },
      credentials: shardCredentials,
      // Webhook configurations: a provider's webhooks apply to its bound resources in consumers
      // on every shard (kcp replicates them to its cache server for the same reason).
      // WorkspaceAuthenticationConfigurations: per-workspace authentication in workspaces whose type is elsewhere.
      replicate: [WORKSPACE_TYPES_PATH, WORKSPACE_AUTH_CONFIGS_PATH, ...CATALOG_PATHS, ...WEBHOOK_CONFIGURATION_PATHS],
      log: (m) => warn(m),
    });
    cleanups.unshift(() => directory.stop());
    const types = new WorkspaceTypeResolver(cache, index, {
      resolvePath: (path) => directory.locate(path)?.cluster,
      get: (cluster, name) => directory.replicated(WORKSPACE_TYPES_PATH, cluster, name),
    });
    // A LogicalCluster created over the API (by another shard's scheduler, or home workspaces)
    // is born initialized, as the logical cluster controller would leave it: set once the
    // controllers run (without them it stays Scheduling for another process's controllers).
    let prepareLogicalCluster: ((cluster: string, lc: KubeObject) => { status: Record<string, unknown>; content: TransactionItem[] }) | undefined;
    const initialLogicalCluster = (lc: KubeObject, attrs: { cluster: string }) => {
      const phase = (lc.status as { phase?: string } | undefined)?.phase;
      if (!prepareLogicalCluster || lc.metadata?.name !== 'cluster' || (phase && phase !== 'Scheduling')) return undefined;
      // Malformed input is left to the create's validation (422), not to this hook.
      try { return prepareLogicalCluster(attrs.cluster, lc); } catch { return undefined; }
    };
    /**
     * Whether `user` may do `attributes` in logical cluster `cluster`: this shard's authorizer
     * for its own logical clusters, a SubjectAccessReview on the shard that holds another;
     * `deep` as in `Authorizer.authorize`.
     */
    const authorizeIn = (user: UserInfo, cluster: string, attributes: { verb: string; group: string; resource: string; subresource?: string; name: string }, deep = false): boolean | Promise<boolean> => {
      const remote = index.get(cluster) ? undefined : directory.locate(cluster);
      if (remote) return remoteAccessReview(directory, remote.shard, remote.cluster, user, attributes, deep);
      return authz.authorize({
        user, verb: attributes.verb, cluster, isResourceRequest: true, namespace: '', apiGroup: attributes.group, resource: attributes.resource,
        subresource: attributes.subresource ?? '', name: attributes.name, path: '',
      }, index.get(cluster) !== undefined, deep).allowed;
    };
    const resolvePath = (segment: string): string | undefined => {
      const kind = classifyClusterSegment(segment);
      return kind === 'name' ? segment : kind === 'path' ? index.resolvePath(segment) ?? directory.locate(segment)?.cluster : undefined;
    };
    const catalog = new APICatalog({
      cache, resolvePath,
      replicated: (resource, cluster, name) => directory.replicated(resource, cluster, name),
      replicatedList: (resource) => directory.replicatedList(resource),
    });
    const builtins = servedBuiltins(options.runtimeConfig);
    const mutatingPolicies = builtins.some((d) => d.kind === 'MutatingAdmissionPolicy');
    // CEL's `authorizer`: the request's user in the request's logical cluster (always this shard's).
    const authorize: AdmissionAuthorize = (user, cluster, attributes) => authz.authorize({ ...attributes, user, cluster }, index.get(cluster) !== undefined);
    const quotaReservations = new QuotaReservations(cache);
    cleanups.push(async () => quotaReservations.close());
    const quota = new ResourceQuotaAdmission({
      cache, reservations: quotaReservations, quotas: () => storeOf('resourcequotas', ''),
      scope: (cluster, namespace) => ({ cluster, namespace, user: { name: 'system:apiserver', groups: [SYSTEM_MASTERS] }, fieldManager: 'kube-apiserver' }),
    });
    // Permissions on an export are held without entering its workspace (kcp's deep SAR).
    const builtinGRs = new Set(builtins.map((d) => `${d.group}/${d.plural}`));
    const apis = apisAdmission(catalog, (user, cluster, verb, name, subresource) => authorizeIn(user, cluster, { verb, group: 'apis.kcp.io', resource: 'apiexports', subresource, name }, true),
      (group, resource) => builtinGRs.has(`${group}/${resource}`));
    // Built-in admission plugins (kube's and kcp's compiled-in ones), then dynamic admission in
    // kube's plugin order (src/admission/index.ts): mutating admission policies, mutating
    // webhooks, validating admission policies, validating webhooks — of each logical cluster
    // (webhooks also of the export of a bound resource).
    const plugins: AdmissionPlugin[] = [
      { name: 'NamespaceLifecycle', resources: ['/namespaces'], admitDelete: namespaceDeleteAdmission((cluster) => index.get(cluster)?.deleting ?? false) },
      { name: 'apis.kcp.io/CRDNoOverlappingGVR', resources: ['apiextensions.k8s.io/customresourcedefinitions'], admit: crdOverlapAdmission(cache) },
      {
        name: 'tenancy.kcp.io/Workspace', resources: ['tenancy.kcp.io/workspaces'],
        admit: workspaceAdmission({
          index, types,
          canUseType: (user, cluster, name) => authorizeIn(user, cluster, { verb: 'use', group: 'tenancy.kcp.io', resource: 'workspacetypes', name }),
        }),
      },
      { name: 'core.kcp.io/LogicalCluster', resources: ['core.kcp.io/logicalclusters'], admit: logicalClusterAdmission },
      ...apis.plugins,
      {
        // CSR approval and signing admission: `approve`/`sign` on certificates.k8s.io `signers`.
        name: 'CertificateApproval', resources: ['certificates.k8s.io/certificatesigningrequests'],
        admit: csrAdmission((user, cluster, verb, name) => authz.authorize({
          user, verb, cluster, isResourceRequest: true, namespace: '', apiGroup: 'certificates.k8s.io', resource: 'signers', subresource: '', name, path: '',
        }, index.get(cluster) !== undefined).allowed),
      },
      {
        // kube's ResourceQuota plugin comes last (AllOrderedPlugins), kcp's per logical cluster.
        name: 'ResourceQuota', resources: ['*'],
        validate: (a) => quota.validate(a),
        release: (a) => quota.release(a),
      },
    ];
    backend.admission = chainAdmission(plugins,
      ...(mutatingPolicies ? [new MutatingPolicies({ cache, apis: (cluster: string) => registry.forCluster(cluster), authorize })] : []),
      new ValidatingPolicies({ cache, apis: (cluster) => registry.forCluster(cluster), authorize }),
      new Webhooks({
        cache, exportClusterOf: (cluster, desc) => catalog.exportOfBound(cluster, desc)?.cluster,
        remoteConfigurations: (path, cluster) => (index.get(cluster) ? [] : directory.replicatedIn(path, cluster)),
        apis: (cluster) => registry.forCluster(cluster), authorize,
      }),
    );
    backend.initialContent = (desc, lc, attrs) => (desc.group === 'core.kcp.io' && desc.plural === 'logicalclusters' ? initialLogicalCluster(lc, attrs) : undefined);
    const resources = [...builtins, ...kcpResources(apis.strategies)];
    const registry = new APIRegistry(cache, backend, resources, { bindingsGR: BINDINGS_GR, descriptors: (b) => catalog.boundDescriptors(b) });
    // A schema replicated from another shard may complete a binding made before it arrived.
    // (Replicated objects change with no logical cluster location; routing changes are left alone.)
    directory.subscribe((change) => {
      if (!change.location && !change.deleted && (!change.resource || CATALOG_PATHS.includes(change.resource))) registry.invalidate();
    });
    const storeOf = (plural: string, group: string): Store => {
      const d = resources.find((x) => x.plural === plural && x.group === group);
      const s = d && registry.builtins.store(d.group, d.version, d.plural);
      if (!s) throw new Error(`no store for ${plural}.${group}`);
      return s;
    };
    const masters = (cluster: string, namespace?: string): RequestScope => ({ cluster, namespace, user: { name: 'system:kcp:controller', groups: [SYSTEM_MASTERS] } });

    const saTokens = await ServiceAccountTokens.load({ privateKeyPem: pki.serviceAccountKey.keyPem, objects: cache });
    startTrace(`${shard}: stores, admission, service-account keys`);
    const requestHeaderCA = options.requestHeader === false ? undefined : (options.requestHeader?.clientCA ?? managed?.frontProxyCA.certPem);
    const requestHeader: RequestHeaderConfig | undefined = requestHeaderCA === undefined ? undefined : {
      clientCA: requestHeaderCA, allowedNames: [FRONT_PROXY_USER],
      usernameHeaders: [...DEFAULT_REQUEST_HEADERS.usernameHeaders], groupHeaders: [...DEFAULT_REQUEST_HEADERS.groupHeaders],
      extraHeaderPrefixes: [...DEFAULT_REQUEST_HEADERS.extraHeaderPrefixes], ...(options.requestHeader ?? {}),
    };
    const revoked = options.revokedClientCertificatesFile ? new RevokedCertificates(options.revokedClientCertificatesFile, (m) => warn(m)) : undefined;
    if (revoked) cleanups.unshift(async () => revoked.close());
    const jwt = options.authentication?.config.jwt.length ? new JWTAuthenticators(options.authentication.config, options.authentication.algorithms) : undefined;
    if (jwt) { jwt.start(); cleanups.unshift(() => jwt.close()); }
    const workspaceAuth = new WorkspaceAuthenticators(cache, index, saTokens.audiences, [saTokens.issuer], (m) => warn(m), {
      resolvePath: (path) => directory.locate(path)?.cluster,
      get: (gr, cluster, name) => directory.replicated(gr === WORKSPACE_AUTH_CONFIGS_GR ? WORKSPACE_AUTH_CONFIGS_PATH : WORKSPACE_TYPES_PATH, cluster, name),
    });
    cleanups.unshift(() => workspaceAuth.close());
    const authn = new Authenticator(options.tokenAuthFile ? loadTokenFile(options.tokenAuthFile) : new Map(), saTokens, requestHeader, revoked, jwt, workspaceAuth);
    const hub = new WatchHub(cache, () => storage.currentRevision(), options.bookmarkIntervalMs);
    let audit: Auditor | undefined;
    if (options.audit) {
      const a = options.audit;
      const policy = typeof a.policy === 'string' ? loadAuditPolicy(a.policy) : a.policy;
      audit = { policy, writer: new AuditLogWriter({ path: a.path, maxSizeBytes: (a.maxSizeMB ?? 0) * 1024 * 1024, maxBackups: a.maxBackups, maxAgeDays: a.maxAgeDays, warn: (m) => warn(m) }) };
      // Flushed once the app is closed (cleanups run first to last; app.close is unshifted later).
      const writer = audit.writer;
      cleanups.unshift(() => writer.close());
    }
    cleanups.push(async () => hub.closeAll());
    const metrics = new Metrics(() => hub.size, () => cache.size);
    // Priority and fairness: the configuration of system:admin, re-read when it changes.
    const flowConfig = (gr: string) => () => cache.list(gr, SYSTEM_ADMIN_CLUSTER).map((e) => JSON.parse(e.json) as KubeObject);
    const apf = options.enablePriorityAndFairness ?? true;
    const flowControl = createRequestFilter({
      enablePriorityAndFairness: apf, maxRequestsInflight: options.maxRequestsInflight, maxMutatingRequestsInflight: options.maxMutatingRequestsInflight,
      config: { flowSchemas: flowConfig(FLOW_SCHEMAS_GR), priorityLevels: flowConfig(PRIORITY_LEVELS_GR) },
      counts: { objects: (gr, cluster, ns) => cache.count(gr, cluster, ns), storedSize: (gr, cluster, ns) => cache.storedSize(gr, cluster, ns), watches: (gr, cluster) => cache.watchersOf(gr, cluster), objectSize: (gr, cluster, ns, name) => cache.getEntry(gr, cluster, ns, name)?.json.length ?? 0 },
      metrics: apf ? new FlowControlMetrics(metrics.registry) : undefined,
    });
    let ensureFlowControl: (() => void) | undefined;
    let reconfiguring: NodeJS.Immediate | undefined;
    let ensuring: NodeJS.Timeout | undefined;
    const unsubscribeFlowControl = cache.subscribe((ev) => {
      if (ev && !((ev.entry.groupResource === FLOW_SCHEMAS_GR || ev.entry.groupResource === PRIORITY_LEVELS_GR) && ev.entry.cluster === SYSTEM_ADMIN_CLUSTER)) return;
      reconfiguring ??= setImmediate(() => { reconfiguring = undefined; flowControl.reconfigure(); });
      // The mandatory objects come back when deleted or changed (kube's ensurer); FlowSchemas get
      // their Dangling condition.
      if (ensureFlowControl) ensuring ??= setTimeout(() => { ensuring = undefined; ensureFlowControl?.(); }, 200);
    });
    cleanups.push(async () => { unsubscribeFlowControl(); ensureFlowControl = undefined; if (ensuring) clearTimeout(ensuring); if (reconfiguring) clearImmediate(reconfiguring); });
    let started = false;
    let stopping: Promise<void> | undefined;
    let externalAddress = '';

    const apiExportVW = new APIExportVirtualWorkspace({
      cache, catalog, registry,
      mayAccessContent: (user, cluster, verb, name) => authorizeIn(user, cluster, { verb, group: 'apis.kcp.io', resource: 'apiexports', subresource: 'content', name }, true),
    });
    const app = buildApp({
      apis: (cluster) => registry.forCluster(cluster), authn, authz, hub, metrics,
      clusterExists: clusterKnown,
      resolveCluster: (segment) => {
        const kind = classifyClusterSegment(segment);
        // A path of a logical cluster on another shard is refused as an unknown one (403), unless
        // it moved (or is moving) away from this one: its copy here, and with it the path in the
        // local index, is removed after the hand-over while a front-proxy that has not learned
        // the move yet still sends requests here — and this shard's index of the others may not
        // have learned it either, so the fences remember the path. Resolved to its name, such a
        // request meets the migration fence (429 and where the cluster is now: the proxy sends
        // it there).
        const name = resolvePath(segment) ?? (kind === 'path' ? fences.clusterOfPath(segment) : undefined);
        return name === undefined || index.get(name) || kind !== 'path' || fences.get(name) ? name : undefined;
      },
      homeWorkspace: homeWorkspaces({
        logicalClusters: storeOf('logicalclusters', 'core.kcp.io'), index, types, scope: masters,
        remote: {
          self: shard,
          shardNames: () => directory.list().map((s) => s.name),
          locate: (cluster) => directory.locate(cluster),
          create: async (target, cluster, lc) => {
            const client = directory.client(target);
            const unavailable = (why: string) => new StatusError(503, 'ServiceUnavailable', `cannot create the home workspace on shard "${target}": ${why}`, { retryAfterSeconds: 1 });
            if (!client) throw unavailable('the shard is not known here');
            let r;
            try { r = await client.request('POST', `/clusters/${cluster}/apis/core.kcp.io/v1alpha1/logicalclusters`, lc, { timeoutMs: 5000 }); } catch (err) { throw unavailable((err as Error).message); }
            if (r.status !== 201 && r.status !== 409) throw unavailable(`${r.status} ${r.json?.message ?? ''}`.trim());
          },
        },
        mayCreate: (user) => authz.authorize({
          user, verb: 'create', cluster: 'root', isResourceRequest: true, namespace: '', apiGroup: 'tenancy.kcp.io', resource: 'workspaces', subresource: '', name: '~', path: '',
        }, true).allowed,
      }),
      healthChecks: (() => {
        const ping: HealthCheck = { name: 'ping', check: () => undefined };
        const redis: HealthCheck = { name: 'redis', check: () => storage.client.status === 'ready' ? undefined : `storage Redis connection is ${storage.client.status}` };
        const watchCache: HealthCheck = { name: 'watch-cache', check: () => cache.isReady ? undefined : 'the watch cache has not synced from Redis' };
        const bootstrapped: HealthCheck = { name: 'poststarthook/bootstrap-shard', check: () => started ? undefined : 'not finished' };
        const shutdown: HealthCheck = { name: 'shutdown', check: () => stopping ? 'the server is shutting down' : undefined };
        return { livez: [ping], readyz: [ping, redis, watchCache, bootstrapped, shutdown], healthz: [ping, redis, watchCache, bootstrapped] };
      })(),
      get externalAddress() { return externalAddress; },
      subresourceCreate: {
        '/serviceaccounts/token': (scope, name, body) => createTokenRequest({ tokens: saTokens, serviceAccounts: storeOf('serviceaccounts', ''), secrets: storeOf('secrets', '') }, scope, name, body),
      },
      createVirtual: (desc, body, user, cluster, deep) => {
        const exists = cache.getEntry(LOGICAL_CLUSTERS_GR, cluster, '', 'cluster') !== undefined;
        if (desc.kind === 'SelfSubjectReview') return evaluateSelfSubjectReview(body, user);
        if (desc.kind === 'TokenReview') return evaluateTokenReview({ authn, apiAudiences: saTokens.audiences, serviceAccountIssuer: saTokens.issuer }, body);
        return desc.kind === 'SelfSubjectRulesReview' ? evaluateRulesReview(authz, body, user, cluster, exists) : evaluateAccessReview(authz, body, user, cluster, exists, deep);
      },
      maximalPermission: maximalPermissionPolicy({
        catalog,
        authorize: (user, cluster, attrs) => authorizeIn(user, cluster, { verb: attrs.verb, group: attrs.apiGroup, resource: attrs.resource, subresource: attrs.subresource, name: attrs.name }, true),
      }),
      virtualWorkspaces: {
        apiexport: { segments: 2, view: ([cluster, name]) => apiExportVW.view(cluster!, name!, resolvePath) },
        initializingworkspaces: lifecycleVirtualWorkspace(INITIALIZING, { cache, registry, backend, resolvePath, authorizeIn }),
        terminatingworkspaces: lifecycleVirtualWorkspace(TERMINATING, { cache, registry, backend, resolvePath, authorizeIn }),
        syncer: syncerVirtualWorkspace({ cache, registry, backend, resolvePath, authorizeIn }),
      },
      logger: options.logger, audit, requestTimeoutMs: options.requestTimeoutMs, flowControl, stalledReaders: new StalledReaders(), migrationFences: fences,
    }, { key: pki.serving.keyPem, cert: pki.serving.certPem, ca: requestHeader ? [pki.ca.certPem, requestHeader.clientCA] : pki.ca.certPem },
    { http2MaxStreamsPerConnection: options.http2MaxStreamsPerConnection });
    cleanups.unshift(() => app.close());
    if (options.logger) warn = (m) => app.log.warn(m);
    registerMigrationEndpoints(app, { storage, cache, fences });
    startTrace(`${shard}: app built`);

    metrics.observeHandshakes(() => (app.server as unknown as ServingServer).handshakeStats());
    await app.listen({ port: options.securePort ?? 6443, host: bindAddress, backlog: LISTEN_BACKLOG });
    startTrace(`${shard}: listening`);
    checkpoint();
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : (options.securePort ?? 6443);
    const host = external ?? (bindAddress === '0.0.0.0' || bindAddress === '::' ? 'localhost' : bindAddress);
    const hostPort = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    externalAddress = hostPort;
    const url = `https://${hostPort}`;

    const isRoot = !options.rootShard;
    const baseURL = options.shardBaseURL ?? url;
    const shardURLs: ShardURLs = {
      name: shard, baseURL, externalURL: options.shardExternalURL ?? baseURL, virtualWorkspaceURL: options.shardVirtualWorkspaceURL ?? baseURL, labels: options.shardLabels,
    };
    await bootstrapShard(storeOf, masters, shardURLs, { root: isRoot });
    startTrace(`${shard}: bootstrap objects`);
    checkpoint();
    if (apf) {
      const target = { flowSchemas: storeOf('flowschemas', FLOWCONTROL_GROUP), priorityLevels: storeOf('prioritylevelconfigurations', FLOWCONTROL_GROUP), scope: masters(SYSTEM_ADMIN_CLUSTER) };
      await ensureConfiguration(target);
      // Serve with the configuration just written, not the mandatory objects alone.
      await cache.waitForRevision(await storage.currentRevision());
      flowControl.reconfigure();
      const conditions = () => syncDanglingConditions(target.flowSchemas, target.scope, flowConfig(FLOW_SCHEMAS_GR)(), flowControl.dispatcher?.dangling ?? new Map());
      await conditions();
      startTrace(`${shard}: flow-control configuration`);
      ensureFlowControl = () => {
        ensureConfiguration(target).then(conditions).catch((err: unknown) => warn(`ensuring the flow-control configuration: ${(err as Error).message}`));
      };
      checkpoint();
    }

    if (options.rootShard) {
      const rootClient = new RestClient(options.rootShard, 2);
      const registration = new AbortController();
      const registered = registerShard(rootClient, shardURLs, registration.signal, (why) => warn(`registering shard ${shard} in the root shard: ${why}; retrying`));
      cleanups.unshift(async () => { registration.abort(); await registered; rootClient.close(); });
    }

    if (options.controllers ?? true) {
      const controllers = await startControllers({
        shard, url: shardURLs.externalURL, shards: directory, queueRedisUrl, queueThread, cache, backend, registry, index, types, catalog, metrics: metrics.controllers,
        storeOf, masters, log: app.log, clientCA: managed?.ca, quotaReservations,
        syncTargetHeartbeatThresholdMs: options.syncTargetHeartbeatThresholdMs,
        // The CA of the serving certificate: the PKI's CA, or the given client CA (which also
        // checks the shards' serving certificates).
        rootCABundle: pki.ca.certPem,
      });
      // The controllers close the queue thread when they stop.
      queueThread = undefined;
      cleanups.unshift(controllers.stop);
      prepareLogicalCluster = controllers.prepareLogicalCluster;
      startTrace(`${shard}: controllers started`);
      checkpoint();
    }

    if (isRoot) {
      // The LogicalClusterMigrations of the root workspace (src/shards/migration.ts).
      const selfClient = new RestClient({ ...shardCredentials, url }, 4);
      const coordinator = new MigrationCoordinator({
        self: shard, cache, migrations: storeOf('logicalclustermigrations', 'migration.kcp.io'), scope: masters, directory, selfClient,
        holds: (cluster) => index.get(cluster) !== undefined, localClusters: () => cache.clustersOf(LOGICAL_CLUSTERS_GR), log: (m) => warn(m),
      });
      cleanups.unshift(async () => { coordinator.stop(); selfClient.close(); });
    }

    const kubeconfigPath = managed ? writeAdminKubeconfig(root, url, managed) : '';
    startTrace(`${shard}: ready`);
    started = true;

    return {
      url, port, kubeconfigPath, caPem: pki.ca.certPem, redisUrl, app, shards: directory,
      stop() {
        stopping ??= (async () => {
          hub.closeAll();
          for (const c of cleanups) await c().catch(() => undefined);
          await stopEmbedded();
        })();
        return stopping;
      },
    };
  } catch (err) {
    for (const c of cleanups) await c().catch(() => undefined);
    await stopEmbedded();
    throw err;
  }
}
