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
import { connect as connectHttp2, constants as h2, type ClientHttp2Session, type ClientHttp2Stream, type ServerHttp2Stream, type IncomingHttpHeaders as Http2Headers, type OutgoingHttpHeaders as Http2OutgoingHeaders } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { ServerResponse } from 'node:http';
import { StatusError, workspaceAccessDenied } from '../apimachinery/errors.js';
import { encodeStatus } from '../endpoints/negotiation.js';
import { AUTHENTICATED_GROUP } from '../auth/authn.js';
import type { JWTAuthenticators } from '../auth/oidc.js';
import type { UserInfo } from '../registry/store.js';
import type { Connection } from '../client/rest.js';
import { ShardDirectory, type ClusterLocation } from '../shards/directory.js';
import { MIGRATION_HEADER } from '../storage/migration.js';
import { ROOT } from '../tenancy/paths.js';
import { answerHealth, healthEndpointOf, type HealthCheck } from '../server/health.js';
import { connectionOf, createServingServer, LISTEN_BACKLOG, type AnyRequest, type AnyResponse, type ServingServer } from '../server/serving.js';

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
  /**
   * Streams one HTTP/2 client may have open at once (`--http2-max-streams-per-connection`,
   * default 1,000 as kube); 0 serves HTTP/1.1 only. Requests to the shards always go over HTTP/2.
   */
  http2MaxStreamsPerConnection?: number;
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
  server: ServingServer;
  stop(): Promise<void>;
}

/**
 * Largest shard answer the proxy holds in memory to send in one write (1 MiB); larger ones, and
 * answers without a length, are streamed with backpressure, so a tenant's big LIST costs the
 * proxy a socket buffer, not its size.
 */
export const PROXY_BUFFER_BYTES = 1024 * 1024;

/**
 * Request headers never passed on: HTTP/2 pseudo-headers (the upstream request has its own),
 * hop-by-hop ones (RFC 9110 §7.6.1, forbidden in HTTP/2 by RFC 9113 §8.2.2) and identity a client
 * might forge.
 */
const DROPPED = /^(:.*|connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|host|http2-settings|x-remote-.*)$/i;

/** Response headers of a shard never passed on: pseudo-headers and connection-specific ones. */
const DROPPED_RESPONSE = /^(:.*|connection|keep-alive|transfer-encoding|proxy-connection|upgrade)$/i;

/**
 * Answers the proxy's own refusal as a kube Status in the form the client accepts (JSON, YAML or
 * protobuf: kube's responsewriters.ErrorNegotiated). Shard answers pass through as they are.
 */
function answer(ex: Exchange, err: StatusError, retryAfter?: number): void {
  if (ex.headersSent) { ex.destroy(); return; }
  const { contentType, body } = encodeStatus(err, ex.headers.accept);
  ex.send(err.code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...(retryAfter ? { 'retry-after': String(retryAfter) } : {}) }, body);
}

/**
 * One request and its answer, whichever the protocol: HTTP/1.1 (Node's request and response) or
 * an HTTP/2 stream in Node's core API (what most clients use, and cheaper per request than
 * HTTP/2's compatibility objects).
 */
interface Exchange {
  method: string;
  /** Path and query. */
  url: string;
  /** Request headers (HTTP/2's pseudo-headers included). */
  headers: Http2Headers;
  /** The TLS connection (one object per connection: the client certificate's cache key). */
  connection: TLSSocket;
  /** The request body; undefined when the request has none. */
  body: NodeJS.ReadableStream | undefined;
  readonly headersSent: boolean;
  /** Answers with `body` in one write with the headers. */
  send(status: number, headers: Record<string, string | string[] | number>, body: string | Buffer): void;
  /** Sends the headers now; the body is written to what it returns (with backpressure). */
  start(status: number, headers: Record<string, string | string[]>): NodeJS.WritableStream;
  /** Cuts the answer off (an error after the headers left). */
  destroy(): void;
  /** `done` once the exchange is over: `finished` when the whole answer went out. */
  onClose(done: (finished: boolean) => void): void;
  /** Whether the client went away (or the answer was sent). */
  readonly closed: boolean;
}

function http1Exchange(req: AnyRequest, res: AnyResponse): Exchange {
  const hasBody = req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined;
  return {
    method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, connection: connectionOf(req), body: hasBody ? req as NodeJS.ReadableStream : undefined,
    get headersSent() { return res.headersSent; },
    send(status, headers, body) { res.writeHead(status, headers); res.end(body); },
    start(status, headers) { res.writeHead(status, headers); (res as ServerResponse).flushHeaders(); return res as NodeJS.WritableStream; },
    destroy() { res.destroy(); },
    onClose(done) { res.once('close', () => done(res.writableFinished)); },
    get closed() { return res.destroyed || res.writableEnded; },
  };
}

function http2Exchange(stream: ServerHttp2Stream, headers: Http2Headers): Exchange {
  return {
    method: String(headers[h2.HTTP2_HEADER_METHOD] ?? 'GET'), url: String(headers[h2.HTTP2_HEADER_PATH] ?? '/'), headers,
    connection: stream.session?.socket as TLSSocket, body: stream.endAfterHeaders ? undefined : stream,
    get headersSent() { return stream.headersSent; },
    send(status, out, body) {
      if (stream.destroyed || stream.closed || stream.headersSent) return;
      stream.respond({ ...out, [h2.HTTP2_HEADER_STATUS]: status });
      stream.end(body);
    },
    start(status, out) { stream.respond({ ...out, [h2.HTTP2_HEADER_STATUS]: status }); return stream; },
    destroy() { stream.close(h2.NGHTTP2_INTERNAL_ERROR); },
    onClose(done) { stream.once('close', () => done(stream.writableFinished)); },
    get closed() { return stream.destroyed || stream.closed; },
  };
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

  const server = createServingServer({
    tls: { key: opts.servingKey, cert: opts.servingCert, ca: opts.clientCA }, http2MaxStreamsPerConnection: opts.http2MaxStreamsPerConnection,
  }, (req, res) => serve(http1Exchange(req, res)), (stream, headers) => {
    // Opened on a session that is closing, or reset by the client at once: nothing to answer.
    if (stream.destroyed || stream.closed) return;
    serve(http2Exchange(stream, headers));
  });
  const serve = (ex: Exchange) => {
    void route(ex).catch((err: unknown) => answer(ex, new StatusError(503, 'ServiceUnavailable', `front-proxy: ${err instanceof Error ? err.message : String(err)}`), 1));
  };

  // kube's health endpoints (src/server/health.ts). Ready once the index knows the shards (the
  // root shard's Shard objects were listed), and whatever the caller adds.
  const ping: HealthCheck = { name: 'ping', check: () => undefined };
  const index: HealthCheck = { name: 'shard-index', check: () => (directory.get(ROOT) ? undefined : 'the root shard\'s Shard objects are not listed yet') };
  const healthChecks = { livez: [ping], healthz: [ping, index], readyz: [ping, index, ...(opts.readyChecks ?? [])] };

  async function route(ex: Exchange): Promise<void> {
    const url = ex.url;
    const path = url.split('?')[0]!;
    const health = healthEndpointOf(path);
    if (health) {
      const r = answerHealth(health[0], healthChecks[health[0]], health[1], new URLSearchParams(url.slice(path.length + 1)));
      ex.send(r.code, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(r.body) }, r.body);
      return;
    }
    // Authentication: a bearer token in the token file, else any other token is the shard's to
    // verify; else the client certificate; else anonymous (the shard answers 401 where kube would).
    let user: UserInfo | undefined;
    let passToken = false;
    const auth = ex.headers.authorization;
    if (auth) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
      const known = m ? opts.tokens?.get(m[1]!) : undefined;
      const oidc = !known && m ? opts.jwt?.authenticate(m[1]!) : undefined;
      const verified = oidc ? await oidc : undefined;
      if (verified && 'error' in verified) { answer(ex, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      const found = known ?? verified?.user;
      if (found) user = found.groups.includes(AUTHENTICATED_GROUP) ? found : { ...found, groups: [...found.groups, AUTHENTICATED_GROUP] };
      else passToken = true;
    } else {
      const u = certUser(ex.connection);
      if (u && 'error' in u) { answer(ex, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      if (u) user = u;
    }

    let segment: string | undefined;
    try { segment = clusterSegment(path); } catch { answer(ex, new StatusError(400, 'BadRequest', `invalid path ${JSON.stringify(path)}`)); return; }
    let shard = segment === undefined ? directory.get(ROOT) : undefined;
    if (segment !== undefined) {
      if (!user && !passToken) { answer(ex, new StatusError(401, 'Unauthorized', 'Unauthorized')); return; }
      if (segment === '*') { answer(ex, new StatusError(403, 'Forbidden', 'wildcard requests (/clusters/*) are not served through the front-proxy')); return; }
      const loc = await whereNow(segment, Date.now() + MIGRATION_HOLD_MS);
      // Worded as a shard words a workspace one may not enter: existence does not leak.
      if (!loc) { answer(ex, workspaceAccessDenied(segment)); return; }
      if (ex.closed) return;
      shard = directory.get(loc.shard);
    }
    if (!shard) { answer(ex, new StatusError(503, 'ServiceUnavailable', 'the root shard is not known yet'), 1); return; }

    const headers: Http2OutgoingHeaders = {};
    for (const [k, v] of Object.entries(ex.headers)) if (v !== undefined && !DROPPED.test(k)) headers[k] = v;
    if (user) {
      delete headers.authorization;
      headers['x-remote-user'] = user.name;
      if (user.groups.length) headers['x-remote-group'] = user.groups;
      for (const [k, vs] of Object.entries(user.extra ?? {})) headers[`x-remote-extra-${encodeURIComponent(k)}`] = vs;
    }
    headers[h2.HTTP2_HEADER_METHOD] = ex.method;
    headers[h2.HTTP2_HEADER_PATH] = url;
    forward(ex, shard, headers, segment === undefined ? undefined : { segment, until: Date.now() + MIGRATION_HOLD_MS });
  }

  /**
   * Where the logical cluster of `segment` is served now. One that just left a shard without
   * being deleted and is not placed anywhere yet (a migration's origin removed its copy before
   * this index saw it arrive on the destination: each shard's watch is its own stream) is waited
   * for until `until` (epoch ms), so that its requests pause instead of being refused.
   */
  async function whereNow(segment: string, until: number): Promise<ClusterLocation | undefined> {
    const loc = directory.locate(segment);
    if (loc || !directory.departed(segment) || Date.now() >= until) return loc;
    await directory.moved(segment, undefined, until - Date.now());
    return directory.locate(segment);
  }

  /**
   * Sends the request to `shard` and streams the answer back. With `hold` (a request for a
   * logical cluster), an answer saying the logical cluster is being migrated or has moved
   * ({@link MIGRATION_HEADER}) is not passed on: the request is sent again, its body replayed
   * from memory, once the index places the logical cluster elsewhere (or after a short wait, in
   * case the migration was abandoned), until `hold.until`.
   */
  function forward(ex: Exchange, shard: { name: string; baseURL: string }, headers: Http2OutgoingHeaders, hold: { segment: string; until: number; body?: Buffer } | undefined): void {
    const hasBody = hold?.body !== undefined || ex.body !== undefined;
    const name = shard.name;
    let upstream: ClientHttp2Stream;
    try {
      upstream = upstreams.request(shard.baseURL, headers, !hasBody);
    } catch (err) {
      answer(ex, unavailable(name, err), 1);
      return;
    }
    // The client went away (or reset its stream): the shard's stream is cancelled with it.
    ex.onClose((finished) => { if (!finished && !upstream.closed) upstream.close(h2.NGHTTP2_CANCEL); });
    // The body is kept (up to MAX_REPLAY_BYTES) while it streams, to send it again if the
    // logical cluster turns out to be moving.
    const kept: { chunks: Buffer[]; bytes: number; complete: boolean } | undefined = hold && !hold.body ? { chunks: [], bytes: 0, complete: !ex.body } : undefined;
    if (hold?.body) upstream.end(hold.body);
    else if (ex.body) {
      if (kept) {
        ex.body.on('data', (c: Buffer) => {
          if (kept.bytes <= MAX_REPLAY_BYTES) { kept.chunks.push(c); kept.bytes += c.length; }
        });
        ex.body.once('end', () => { kept.complete = true; });
      }
      ex.body.pipe(upstream);
    }
    let handedOver = false;
    upstream.on('error', (err) => { if (handedOver) return; if (!ex.headersSent) answer(ex, unavailable(name, err), 1); else ex.destroy(); });
    upstream.once('response', (head: Http2Headers) => {
      const status = Number(head[h2.HTTP2_HEADER_STATUS]);
      const replayable = hold && (hold.body !== undefined || (kept!.complete && kept!.bytes <= MAX_REPLAY_BYTES));
      if (status === 429 && head[MIGRATION_HEADER] !== undefined && hold && replayable && Date.now() < hold.until) {
        handedOver = true;
        upstream.close(h2.NGHTTP2_CANCEL);
        const body = hold.body ?? (ex.body ? Buffer.concat(kept!.chunks) : undefined);
        void directory.moved(hold.segment, name, Math.min(MIGRATION_RECHECK_MS, hold.until - Date.now())).then(async () => {
          if (ex.closed) return;
          const loc = await whereNow(hold.segment, hold.until);
          if (ex.closed) return;
          const next = loc && directory.get(loc.shard);
          if (!next) { answer(ex, workspaceAccessDenied(hold.segment)); return; }
          forward(ex, next, headers, { ...hold, body });
        });
        return;
      }
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(head)) if (v !== undefined && !DROPPED_RESPONSE.test(k) && k !== MIGRATION_HEADER) out[k] = v;
      const length = head['content-length'];
      if (length === undefined || Number(length) > PROXY_BUFFER_BYTES) {
        // Streamed (a watch, or a large answer such as a big LIST): the headers now, then the
        // body as it arrives, at the pace the client reads it (the shard's stream window fills
        // and the shard waits, as on HTTP/1.1 its socket would).
        let sink: NodeJS.WritableStream;
        // The client's stream may have been reset in this very moment: nothing left to answer.
        try { sink = ex.start(status, out); } catch { upstream.close(h2.NGHTTP2_CANCEL); return; }
        upstream.pipe(sink);
        return;
      }
      // A small sized answer leaves in one write with its headers (each write is a TLS record
      // and a system call).
      const chunks: Buffer[] = [];
      upstream.on('data', (c: Buffer) => chunks.push(c));
      upstream.on('end', () => ex.send(status, out, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    });
  }

  const upstreams = new ShardSessions({ ca: opts.rootShard.ca, cert: opts.proxyClientCert, key: opts.proxyClientKey });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.securePort, host: opts.bindAddress ?? '127.0.0.1', backlog: LISTEN_BACKLOG }, () => { server.off('error', reject); resolve(); });
  });
  await directory.synced();
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.securePort;
  const host = opts.bindAddress && opts.bindAddress !== '0.0.0.0' && opts.bindAddress !== '::' ? opts.bindAddress : '127.0.0.1';
  let stopped: Promise<void> | undefined;
  return {
    url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, port, directory, server,
    stop() {
      return stopped ??= (async () => {
        // GOAWAY to HTTP/2 clients (they reconnect elsewhere), HTTP/1.1 connections closed.
        server.closeAllConnections();
        await new Promise((r) => server.close(() => r(undefined)));
        upstreams.close();
        await directory.stop();
      })();
    },
  };
}

/**
 * Receive window of each stream from a shard (64 KiB, the proxy's buffer per stream whose client
 * does not read); the connection's window is this times the shard's stream limit (at most 1,000:
 * 64 MiB), so stalled streams cannot exhaust it (kube sizes its upload buffers the same way).
 */
export const UPSTREAM_STREAM_WINDOW_BYTES = 64 * 1024;

/**
 * Longest the front-proxy holds a request for a logical cluster that is being migrated (ms): a
 * cutover takes well under a second; past this the shard's 429 (with `Retry-After`) goes to the
 * client.
 */
export const MIGRATION_HOLD_MS = 10_000;
/** How long a held request waits for the index to move before it asks the same shard again (ms). */
export const MIGRATION_RECHECK_MS = 250;
/**
 * Largest request body kept to be sent again after a migration's cutover (3 MiB, the shards'
 * body limit); a larger one is not held, its client gets the 429.
 */
export const MAX_REPLAY_BYTES = 3 * 1024 * 1024;

/** The 503 for a shard that cannot be reached. */
function unavailable(shard: string, err: unknown): StatusError {
  const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  return new StatusError(503, 'ServiceUnavailable', `shard ${shard} is unavailable: ${code}`, { retryAfterSeconds: 1 });
}

/**
 * HTTP/2 connections to the shards, over mTLS with the front-proxy's client certificate: every
 * request and watch of every client to one shard is a stream of one connection, a second
 * connection opened only when the first has as many streams open as the shard allows
 * (SETTINGS_MAX_CONCURRENT_STREAMS; beyond it nghttp2 would queue a stream, and a watch queued
 * behind a thousand others would never start). A connection the shard closes or sends GOAWAY on
 * takes no new stream; its open streams finish on it.
 */
export class ShardSessions {
  private readonly byShard = new Map<string, { session: ClientHttp2Session; open: number }[]>();

  constructor(private readonly tls: { ca: string; cert: string; key: string }) {}

  /**
   * Opens a stream to `base` (`https://host:port`) carrying `headers` (pseudo-headers included).
   * @throws when the session cannot take a stream (it failed synchronously); connection errors
   * arrive as the stream's `error` event
   */
  request(base: string, headers: Http2OutgoingHeaders, endStream: boolean): ClientHttp2Stream {
    const entry = this.pick(base);
    entry.open++;
    let stream: ClientHttp2Stream;
    try {
      stream = entry.session.request(headers, { endStream });
    } catch (err) {
      entry.open--;
      throw err;
    }
    stream.once('close', () => { entry.open--; });
    return stream;
  }

  /** A usable session to `base` with room for one more stream, connecting one if none has. */
  private pick(base: string): { session: ClientHttp2Session; open: number } {
    let list = this.byShard.get(base);
    if (!list) this.byShard.set(base, list = []);
    for (const e of list) {
      const limit = e.session.remoteSettings?.maxConcurrentStreams ?? 100;
      if (!e.session.closed && !e.session.destroyed && e.open < limit) return e;
    }
    const session = connectHttp2(base, {
      ca: this.tls.ca, cert: this.tls.cert, key: this.tls.key,
      settings: { enablePush: false, initialWindowSize: UPSTREAM_STREAM_WINDOW_BYTES },
    });
    const entry = { session, open: 0 };
    list.push(entry);
    const drop = () => { const i = list.indexOf(entry); if (i >= 0) list.splice(i, 1); };
    session.on('error', drop);
    session.once('goaway', drop);
    session.once('close', drop);
    // The connection's window covers every stream's: a client that stops reading stalls its own
    // streams (each holds at most its window here), never another tenant's on this connection.
    session.once('remoteSettings', (settings) => {
      const streams = Math.min(settings.maxConcurrentStreams ?? 100, 1000);
      try { session.setLocalWindowSize(Math.max(65_535, streams * UPSTREAM_STREAM_WINDOW_BYTES)); } catch { /* closed meanwhile */ }
    });
    // Idle connections do not keep the process alive.
    session.unref();
    return entry;
  }

  /** Closes every connection (streams still open are cancelled). */
  close(): void {
    for (const list of this.byShard.values()) for (const e of list.splice(0)) e.session.destroy();
    this.byShard.clear();
  }
}
