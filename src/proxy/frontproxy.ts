/**
 * The front-proxy (`kcp-ts front-proxy`): one URL space over every shard of an instance, as kcp's
 * pkg/proxy. It terminates TLS, authenticates the client (client certificates of the instance's
 * client CA, the static token file), and forwards `/clusters/<path or name>/…` to the shard
 * holding that logical cluster over mTLS with its own certificate, stating the user in kube's
 * request headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-<key>`), which shards trust
 * only from the front-proxy CA. Other bearer tokens (service-account tokens of any shard) are
 * passed on for the shard to verify. Responses, watches included, are streamed, not buffered.
 *
 * Its index (path → shard, logical cluster) is a {@link ShardDirectory}: watches on every shard's
 * LogicalClusters, so a new workspace is routable as soon as the watch event arrives.
 *
 * Answers of its own are Kubernetes `Status` objects: 403 for an unknown path (exactly as one
 * shard answers, so existence is not revealed), 403 for `/clusters/*` (wildcard requests go to
 * shards directly, as in kcp), 503 with `Retry-After` when the owning shard is unreachable.
 */
import { certificateScopes } from '../auth/serviceaccounts.js';
import { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { Pool, type Dispatcher } from 'undici';
import type { IncomingMessage, ServerResponse, OutgoingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { StatusError, workspaceAccessDenied } from '../apimachinery/errors.js';
import { encodeStatus } from '../endpoints/negotiation.js';
import { AUTHENTICATED_GROUP } from '../auth/authn.js';
import type { JWTAuthenticators } from '../auth/oidc.js';
import type { UserInfo } from '../registry/store.js';
import type { Connection } from '../client/rest.js';
import { ShardDirectory } from '../shards/directory.js';
import { ROOT } from '../tenancy/paths.js';
import { answerHealth, healthEndpointOf, type HealthCheck } from '../server/health.js';

/** Options of {@link startFrontProxy} (flags of `kcp-ts front-proxy`). */
export interface FrontProxyOptions {
  /** Port to listen on (0 picks one). */
  securePort: number;
  /** Address to listen on (default 127.0.0.1). */
  bindAddress?: string;
  /** Serving certificate and key (PEM). */
  servingCert: string;
  servingKey: string;
  /** CA (PEM) whose client certificates authenticate users. */
  clientCA: string;
  /** The root shard: its URL, its CA and the credentials the index watches shards with. */
  rootShard: Connection;
  /** The front-proxy's client certificate (signed by the shards' request-header CA) for forwarding. */
  proxyClientCert: string;
  proxyClientKey: string;
  /** Static tokens (kube CSV format, loaded): token → user. */
  tokens?: Map<string, UserInfo>;
  /** Revoked client certificates (src/auth/revocation.ts): refused with 401. */
  revoked?: { has(serialHex: string): boolean };
  /**
   * OpenID Connect issuers (`--authentication-config`/`--oidc-*`, src/auth/oidc.ts): a token one of
   * them issued is verified here and the user forwarded in headers; one it refuses is a 401.
   * Other tokens still go to the shards.
   */
  jwt?: JWTAuthenticators;
  /** Notices. */
  log?: (message: string) => void;
  /**
   * Checks `/readyz` runs besides `ping` and `shard-index` (the root shard's Shard objects were
   * listed), e.g. `kcp-ts start --shards N`'s "every shard registered" (src/server/instance.ts).
   */
  readyChecks?: readonly HealthCheck[];
}

/** A running front-proxy. */
export interface RunningFrontProxy {
  url: string;
  port: number;
  directory: ShardDirectory;
  server: Server;
  stop(): Promise<void>;
}

/**
 * Largest shard answer the proxy holds in memory to send in one write (1 MiB); larger ones, and
 * answers without a length, are streamed with backpressure, so a tenant's big LIST costs the
 * proxy a socket buffer, not its size.
 */
export const PROXY_BUFFER_BYTES = 1024 * 1024;

/** Request headers never passed on: hop-by-hop ones (RFC 9110 §7.6.1) and identity a client might forge. */
const DROPPED = /^(connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|host|x-remote-.*)$/i;

/**
 * Answers the proxy's own refusal as a kube Status in the form the client accepts (JSON, YAML or
 * protobuf: kube's responsewriters.ErrorNegotiated). Shard answers pass through as they are.
 */
function answer(res: ServerResponse, err: StatusError, retryAfter?: number): void {
  if (res.headersSent) { res.destroy(); return; }
  const { contentType, body } = encodeStatus(err, res.req?.headers.accept);
  res.writeHead(err.code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...(retryAfter ? { 'retry-after': String(retryAfter) } : {}) });
  res.end(body);
}

/** The `/clusters/<segment>` of a path, or undefined for paths outside any logical cluster. */
export function clusterSegment(path: string): string | undefined {
  if (!path.startsWith('/clusters/')) return undefined;
  const end = path.indexOf('/', 10);
  return decodeURIComponent(end < 0 ? path.slice(10) : path.slice(10, end));
}

/**
 * Starts the front-proxy; resolves once it listens and its index has synced (or 10 s passed).
 * @throws when the port cannot be bound
 */
export async function startFrontProxy(opts: FrontProxyOptions): Promise<RunningFrontProxy> {
  const log = opts.log ?? (() => undefined);
  const clientCA = new X509Certificate(opts.clientCA);
  const directory = new ShardDirectory({
    shards: { remote: opts.rootShard },
    credentials: { ca: opts.rootShard.ca, cert: opts.rootShard.cert, key: opts.rootShard.key },
    log, routingOnly: true,
  });
  const users = new WeakMap<TLSSocket, { user: UserInfo; serial: string } | null>();

  const certUser = (socket: TLSSocket): UserInfo | null | { error: string } => {
    let u = users.get(socket);
    if (u === undefined) {
      u = null;
      const cert = socket.getPeerX509Certificate?.();
      if (cert) {
        if (!socket.authorized || !cert.checkIssued(clientCA) || !cert.verify(clientCA.publicKey)) return { error: 'client certificate not signed by the client CA' };
        const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1];
        const groups = [...cert.subject.matchAll(/(?:^|\n)O=([^\n]*)/g)].map((m) => m[1]!);
        const extra = certificateScopes(cert.subjectAltName);
        if (cn) u = { user: { name: cn, groups: groups.includes(AUTHENTICATED_GROUP) ? groups : [...groups, AUTHENTICATED_GROUP], ...(extra ? { extra } : {}) }, serial: cert.serialNumber };
      }
      users.set(socket, u);
    }
    // Checked on every request: a revocation reaches connections opened before it.
    if (u && opts.revoked?.has(u.serial)) return { error: 'client certificate revoked' };
    return u ? u.user : null;
  };

  const server = createServer({ key: opts.servingKey, cert: opts.servingCert, ca: opts.clientCA, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    void route(req, res).catch((err: unknown) => answer(res, new StatusError(503, 'ServiceUnavailable', `front-proxy: ${err instanceof Error ? err.message : String(err)}`), 1));
  });
  // Watches are long; a slow client must not hold a socket forever before sending its headers.
  server.headersTimeout = 60_000;
  server.requestTimeout = 0;

  // kube's health endpoints (src/server/health.ts). Ready once the index knows the shards (the
  // root shard's Shard objects were listed), and whatever the caller adds.
  const ping: HealthCheck = { name: 'ping', check: () => undefined };
  const index: HealthCheck = { name: 'shard-index', check: () => (directory.get(ROOT) ? undefined : 'the root shard\'s Shard objects are not listed yet') };
  const healthChecks = { livez: [ping], healthz: [ping, index], readyz: [ping, index, ...(opts.readyChecks ?? [])] };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const path = url.split('?')[0]!;
    const health = healthEndpointOf(path);
    if (health) {
      const r = answerHealth(health[0], healthChecks[health[0]], health[1], new URLSearchParams(url.slice(path.length + 1)));
      res.writeHead(r.code, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end(r.body);
      return;
    }
    // Authentication: a bearer token in the token file, else any other token is the shard's to
    // verify; else the client certificate; else anonymous (the shard answers 401 where kube would).
    let user: UserInfo | undefined;
    let passToken = false;
    const auth = req.headers.authorization;
    if (auth) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
      const known = m ? opts.tokens?.get(m[1]!) : undefined;
      const oidc = !known && m ? opts.jwt?.authenticate(m[1]!) : undefined;
      const verified = oidc ? await oidc : undefined;
      if (verified && 'error' in verified) { answer(res, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      const found = known ?? verified?.user;
      if (found) user = found.groups.includes(AUTHENTICATED_GROUP) ? found : { ...found, groups: [...found.groups, AUTHENTICATED_GROUP] };
      else passToken = true;
    } else {
      const u = certUser(req.socket as TLSSocket);
      if (u && 'error' in u) { answer(res, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      if (u) user = u;
    }

    let segment: string | undefined;
    try { segment = clusterSegment(path); } catch { answer(res, new StatusError(400, 'BadRequest', `invalid path ${JSON.stringify(path)}`)); return; }
    let shard = segment === undefined ? directory.get(ROOT) : undefined;
    if (segment !== undefined) {
      if (!user && !passToken) { answer(res, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      if (segment === '*') { answer(res, new StatusError(403, 'Forbidden', 'wildcard requests (/clusters/*) are not served through the front-proxy')); return; }
      const loc = directory.locate(segment);
      // Worded as a shard words a workspace one may not enter: existence does not leak.
      if (!loc) { answer(res, workspaceAccessDenied(segment)); return; }
      shard = directory.get(loc.shard);
    }
    if (!shard) { answer(res, new StatusError(503, 'ServiceUnavailable', 'the root shard is not known yet'), 1); return; }

    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!DROPPED.test(k) && v !== undefined) headers[k] = v;
    if (user) {
      delete headers.authorization;
      headers['x-remote-user'] = user.name;
      if (user.groups.length) headers['x-remote-group'] = user.groups;
      for (const [k, vs] of Object.entries(user.extra ?? {})) headers[`x-remote-extra-${encodeURIComponent(k)}`] = vs;
    }
    const aborted = new AbortController();
    res.on('close', () => { if (!res.writableFinished) aborted.abort(); });
    const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
    let upstream;
    try {
      upstream = await poolFor(shard.baseURL).request({
        path: url, method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : undefined, signal: aborted.signal,
        // A watch may stay silent between bookmarks; the client's own timeouts govern it.
        headersTimeout: 60_000, bodyTimeout: 0,
      });
    } catch (err) {
      if (aborted.signal.aborted) return;
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      answer(res, new StatusError(503, 'ServiceUnavailable', `shard ${shard.name} is unavailable: ${code}`, { retryAfterSeconds: 1 }), 1);
      return;
    }
    const out: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(upstream.headers)) if (!/^(connection|keep-alive|transfer-encoding)$/i.test(k) && v !== undefined) out[k] = v;
    res.writeHead(upstream.statusCode, out);
    upstream.body.on('error', () => res.destroy());
    const length = upstream.headers['content-length'];
    if (length === undefined || Number(length) > PROXY_BUFFER_BYTES) {
      // Streamed (a watch, or a large answer such as a big LIST): the headers now, then the body
      // as it arrives, at the pace the client reads it.
      res.flushHeaders();
      upstream.body.pipe(res);
      return;
    }
    // A small sized answer leaves in one write with its headers (each write is a TLS record and
    // a system call: half of the proxy's cost per request when sent apart).
    const chunks: Buffer[] = [];
    upstream.body.on('data', (c: Buffer) => chunks.push(c));
    upstream.body.on('end', () => res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  }

  // One connection pool per shard, over mTLS with the front-proxy's client certificate.
  const pools = new Map<string, Pool>();
  function poolFor(base: string): Pool {
    let p = pools.get(base);
    if (!p) {
      p = new Pool(base, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000, connect: { ca: opts.rootShard.ca, cert: opts.proxyClientCert, key: opts.proxyClientKey } });
      pools.set(base, p);
    }
    return p;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.securePort, opts.bindAddress ?? '127.0.0.1', () => { server.off('error', reject); resolve(); });
  });
  await directory.synced();
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.securePort;
  const host = opts.bindAddress && opts.bindAddress !== '0.0.0.0' && opts.bindAddress !== '::' ? opts.bindAddress : '127.0.0.1';
  return {
    url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, port, directory, server,
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(() => r(undefined)));
      await Promise.all([...pools.values()].map((p) => p.destroy()));
      await directory.stop();
    },
  };
}
