/**
 * The HTTPS server of shards and the front-proxy: HTTP/2 with HTTP/1.1 fallback, negotiated by
 * ALPN (`h2`, `http/1.1`), as kube-apiserver serves (k8s.io/apiserver/pkg/server/secure_serving.go).
 * One client (client-go, kubectl) sends all its requests and watches as streams of one HTTP/2
 * connection; an HTTP/1.1 client (or one offering no ALPN) is served as before. Both protocols
 * reach the same request handler through Node's compatibility API (`Http2ServerRequest` /
 * `Http2ServerResponse` or `IncomingMessage` / `ServerResponse`).
 *
 * HTTP/2 settings, from kube's secure_serving.go and recommended.go:
 * - SETTINGS_MAX_CONCURRENT_STREAMS: `--http2-max-streams-per-connection`, default 1,000 (kube's
 *   recommended options); a client opening more gets REFUSED_STREAM.
 * - SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE 256 KiB (kube's
 *   `resourceBody99Percentile`: most request bodies fit one frame and one window).
 * - an idle connection (no open stream) gets GOAWAY after 90 s (kube's `IdleTimeout`).
 *
 * What bounds a hostile client (one connection, any number of connections): streams per
 * connection (above); the header list (SETTINGS_MAX_HEADER_LIST_SIZE) as large as HTTP/1.1's
 * header limit (Node's `http.maxHeaderSize`, 16 KiB unless `--max-http-header-size`); the
 * memory nghttp2 may hold per connection (`maxSessionMemory`, 10 MiB; past it new streams are
 * refused with ENHANCE_YOUR_CALM); streams it refuses (`maxSessionRejectedStreams`, 100) and
 * invalid frames (`maxSessionInvalidFrames`, 1,000) before the connection is closed. Rapid reset
 * (CVE-2023-44487: open and cancel streams in a loop) is bounded by nghttp2's own limit on
 * stream resets (Node ≥ 20.8.1), CONTINUATION floods (CVE-2024-27983) by Node ≥ 20.12.1. The
 * request body limit, request timeout and priority and fairness apply per stream as per request.
 * The streams of a connection its client drops are closed {@link HTTP2_TEARDOWN_STREAMS_PER_TURN}
 * per turn, not all in one callback. Requests read together start within a per-turn budget,
 * round-robin by logical cluster
 * (./intake.ts); TLS handshakes start a few at a time, round-robin by client address
 * (./handshakes.ts).
 */
import { createSecureServer, type IncomingHttpHeaders, type ServerHttp2Stream, type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse, type Http2Session, type ServerHttp2Session } from 'node:http2';
import { maxHeaderSize, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { HandshakeGate, type HandshakeGateOptions, type HandshakeGateStats } from './handshakes.js';
import { intakeFlowOf, RequestIntake } from './intake.js';

/** kube-apiserver's `--http2-max-streams-per-connection` default (k8s.io/apiserver/pkg/server/options/recommended.go). */
export const DEFAULT_HTTP2_MAX_STREAMS = 1000;

/** Per-stream receive window and largest frame (kube's `resourceBody99Percentile`, 256 KiB). */
export const HTTP2_STREAM_WINDOW_BYTES = 256 * 1024;

/**
 * Receive window of a whole connection: 16 streams' windows (4 MiB). kube multiplies the stream
 * window by the stream limit (256 MiB at 1,000); nghttp2 holds what a client sends within it, so
 * here it is kept well under the session memory limit.
 */
export const HTTP2_CONNECTION_WINDOW_BYTES = 16 * HTTP2_STREAM_WINDOW_BYTES;

/** A connection with no open stream gets GOAWAY after this long (kube's `IdleTimeout`, 90 s). */
export const HTTP2_IDLE_TIMEOUT_MS = 90_000;

/**
 * Length of the listen queue asked of the kernel (which caps it at net.core.somaxconn): Go's
 * listeners, kube-apiserver's among them, ask for somaxconn (4,096 on current Linux); Node's
 * default is 511. Connections the loop has not accepted yet wait there; when it is full, the
 * kernel drops the client's ACK and the client's first bytes wait for a retransmission (0.2–1 s
 * and more) — seen under a handshake flood during garbage-collection pauses.
 */
export const LISTEN_BACKLOG = 4096;

/**
 * An HTTP/1.1 connection that has not started a request this long (ms) after its handshake is
 * closed: kube-apiserver's `ReadHeaderTimeout` (32 s, k8s.io/apiserver/pkg/server/secure_serving.go),
 * which Go applies to the wait for a connection's first request too. Node's `headersTimeout` and
 * `keepAliveTimeout` do not cover a connection that never starts one: 10,000 such connections,
 * about 23 KB each, stayed open indefinitely, a way to exhaust a shard's memory that needs no
 * credentials. (HTTP/2 connections without a stream get GOAWAY after {@link HTTP2_IDLE_TIMEOUT_MS}.)
 */
export const FIRST_REQUEST_TIMEOUT_MS = 32_000;

/**
 * A TLS handshake not finished this long (ms) after it started is abandoned and its connection
 * closed: Go's net/http bounds the handshake by the smallest of the server's read, write and
 * read-header timeouts, which for kube-apiserver is `ReadHeaderTimeout` (32 s). Node's default,
 * 120 s, let a client that sends part of a ClientHello, or never answers the server's flight, hold
 * a connection four times as long.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 32_000;

/** After GOAWAY at shutdown, streams still open are reset after this long (ms). */
export const SHUTDOWN_GRACE_MS = 2_000;

/**
 * Streams of an HTTP/2 connection its client dropped (the socket closed or failed) that are
 * closed per turn of the event loop. Node's http2 core closes all of a session's streams in the
 * one callback that sees its socket close: 1,000 open watches held the loop 85–135 ms (each
 * stream's compatibility request and response, their listeners, the handler's cleanup), a stall
 * every other tenant waited behind and that a client could repeat at will. 50 streams take a few
 * milliseconds. The budget is the server's, shared by all connections dropped at the same time.
 */
export const HTTP2_TEARDOWN_STREAMS_PER_TURN = 50;

/** A request of either protocol. */
export type AnyRequest = IncomingMessage | Http2ServerRequest;
/** A response of either protocol. */
export type AnyResponse = ServerResponse | Http2ServerResponse;

/** Options of {@link createServingServer}. */
export interface ServingOptions {
  /** TLS: serving certificate and key, client CA(s) (PEM). Client certificates are requested, not required. */
  tls: { key: string; cert: string; ca: string | string[] };
  /**
   * `--http2-max-streams-per-connection` (default {@link DEFAULT_HTTP2_MAX_STREAMS}); 0 turns
   * HTTP/2 off (only `http/1.1` is offered by ALPN), as kube's `DisableHTTP2`.
   */
  http2MaxStreamsPerConnection?: number;
  /** Bounds of the TLS handshake admission (./handshakes.ts); unset, its defaults. */
  handshakes?: Partial<HandshakeGateOptions>;
  /** {@link FIRST_REQUEST_TIMEOUT_MS} unless set (ms). */
  firstRequestTimeoutMs?: number;
  /** {@link TLS_HANDSHAKE_TIMEOUT_MS} unless set (ms). */
  handshakeTimeoutMs?: number;
}

/** The connection accounting {@link createServingServer} adds to its server. */
export interface ServingControls {
  /**
   * Shutdown of every connection: GOAWAY to each HTTP/2 client (it opens no new stream here and
   * retries elsewhere; streams already open finish, those still open after
   * {@link SHUTDOWN_GRACE_MS} are reset) and HTTP/1.1 connections closed. Fastify calls it on
   * `close()` (`forceCloseConnections`).
   */
  closeAllConnections(): void;
  /** Open connections by protocol (`h2`, `http/1.1`). */
  connectionCounts(): { h2: number; http1: number };
  /** The TLS handshake admission's counters (./handshakes.ts). */
  handshakeStats(): HandshakeGateStats;
}

/** The server: HTTP/2 with HTTP/1.1 fallback, or HTTP/1.1 alone when HTTP/2 is turned off. */
export type ServingServer = (Http2SecureServer | HttpsServer) & ServingControls;

/**
 * Creates the server (not listening). `handler` receives requests of both protocols — unless
 * `onStream` is given: then HTTP/2 streams go to it in Node's core API (no compatibility objects,
 * the front-proxy's hot path) and `handler` receives HTTP/1.1 requests only.
 * @throws RangeError for a negative or fractional stream limit
 */
export function createServingServer(opts: ServingOptions, handler?: (req: AnyRequest, res: AnyResponse) => void,
  onStream?: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void): ServingServer {
  const maxStreams = opts.http2MaxStreamsPerConnection ?? DEFAULT_HTTP2_MAX_STREAMS;
  if (!Number.isInteger(maxStreams) || maxStreams < 0 || maxStreams > 2 ** 31 - 1) throw new RangeError(`--http2-max-streams-per-connection must be a non-negative integer, got ${maxStreams}`);
  const http2 = maxStreams > 0;
  const tls = {
    key: opts.tls.key, cert: opts.tls.cert, ca: opts.tls.ca, requestCert: true, rejectUnauthorized: false,
    handshakeTimeout: opts.handshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS,
  };
  // Node's HTTP/2 server with allowHTTP1 always offers both by ALPN: HTTP/1.1 alone is the HTTPS server.
  const server = (http2 ? createSecureServer({
    ...tls, allowHTTP1: true,
    settings: {
      maxConcurrentStreams: maxStreams,
      initialWindowSize: HTTP2_STREAM_WINDOW_BYTES,
      maxFrameSize: HTTP2_STREAM_WINDOW_BYTES,
      maxHeaderListSize: maxHeaderSize,
    },
    maxSessionMemory: 10,
    maxSessionRejectedStreams: 100,
    maxSessionInvalidFrames: 1000,
  }) : createHttpsServer(tls)) as ServingServer;
  // Handshakes start round-robin by client address, a few at a time (./handshakes.ts).
  const handshakes = new HandshakeGate(opts.handshakes);
  handshakes.install(server);
  // Requests read together (a thousand streams of one HTTP/2 connection, or ready HTTP/1.1
  // connections) start within a per-turn budget, the rest round-robin by logical cluster in the
  // next turns (./intake.ts): one intake for both protocols. An HTTP/2 request waits there as its
  // stream: Node builds its compatibility objects (Http2ServerRequest/Response) in a 'stream'
  // listener it adds with the first 'request' one; that listener is detached and called when the
  // stream starts, not in the read that delivered a thousand streams at once (40–90 ms).
  // HTTP/1.1 connections that have not started a request yet (FIRST_REQUEST_TIMEOUT_MS).
  const awaitingFirstRequest = new Set<Socket>();
  if (handler) {
    // HTTP/2 requests come here once their stream has started (below).
    server.on('request', (req: AnyRequest, res: AnyResponse) => {
      if ((req as { stream?: unknown }).stream) { handler(req, res); return; }
      awaitingFirstRequest.delete(req.socket);
      intake.submit(req, res);
    });
  }
  type StreamListener = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void;
  const compat = handler && http2 ? (server as Http2SecureServer).listeners('stream')[0] as StreamListener : undefined;
  const startStream = onStream ? (stream: ServerHttp2Stream, s: StreamStart) => onStream(stream, s.headers)
    : compat ? (stream: ServerHttp2Stream, s: StreamStart) => compat.call(server, stream, s.headers, s.flags, s.rawHeaders) : undefined;
  const intake = new RequestIntake<AnyRequest | ServerHttp2Stream, AnyResponse | StreamStart>((a, b) => {
    if (!(b instanceof StreamStart)) handler!(a as AnyRequest, b);
    // A stream its client reset while it waited is not started.
    else if (!(a as ServerHttp2Stream).destroyed) startStream!(a as ServerHttp2Stream, b);
  }, (a, b) => intakeFlowOf(b instanceof StreamStart ? b.headers[':path'] as string | undefined : (a as AnyRequest).url));
  if (http2 && startStream) {
    (server as Http2SecureServer).removeAllListeners('stream').on('stream', ((stream, headers, flags, rawHeaders) => intake.submit(stream, new StreamStart(headers, flags, rawHeaders))) as StreamListener);
  }
  // HTTP/1.1 connections (served by Node's http machinery inside this server): as Fastify set
  // them before, no limit on a whole request (watches are long), 60 s for a request's headers.
  const h1 = server as unknown as { keepAliveTimeout: number; requestTimeout: number; headersTimeout: number };
  h1.keepAliveTimeout = 72_000;
  h1.requestTimeout = 0;
  h1.headersTimeout = 60_000;
  server.setTimeout(0);

  const sessions = new Set<ServerHttp2Session>();
  const dropped = new DroppedStreams();
  const sockets = new Set<Socket>();
  const firstRequestMs = opts.firstRequestTimeoutMs ?? FIRST_REQUEST_TIMEOUT_MS;
  let closing = false;
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return;
    sockets.add(socket);
    if (handler) {
      awaitingFirstRequest.add(socket);
      const timer = setTimeout(() => { if (awaitingFirstRequest.delete(socket)) socket.destroy(); }, firstRequestMs);
      timer.unref();
      socket.once('close', () => { clearTimeout(timer); awaitingFirstRequest.delete(socket); });
    }
    socket.once('close', () => sockets.delete(socket));
  });
  (server as Http2SecureServer).on('session', (session: ServerHttp2Session) => {
    if (closing) { session.close(); return; }
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.on('error', () => undefined);
    session.once('connect', () => { try { session.setLocalWindowSize(HTTP2_CONNECTION_WINDOW_BYTES); } catch { /* closed meanwhile */ } });
    trackStreams(session, dropped);
  });
  // A stream error (a client resetting its stream) is the stream's end, not the server's.
  (server as Http2SecureServer).on('stream', (stream) => stream.on('error', () => undefined));
  server.closeAllConnections = () => {
    closing = true;
    handshakes.close();
    for (const s of sockets) s.destroy();
    for (const session of sessions) goAway(session);
  };
  server.connectionCounts = () => ({ h2: sessions.size, http1: sockets.size });
  server.handshakeStats = () => handshakes.stats;
  return server;
}

/** What Node hands a 'stream' listener besides the stream, kept while the stream waits in the intake. */
class StreamStart {
  constructor(readonly headers: IncomingHttpHeaders, readonly flags: number, readonly rawHeaders: string[]) {}
}

/** GOAWAY (NO_ERROR): the client opens no new stream here; what is still open after the grace period is reset. */
function goAway(session: Http2Session): void {
  if (session.closed || session.destroyed) return;
  session.close();
  setTimeout(() => { if (!session.destroyed) session.destroy(); }, SHUTDOWN_GRACE_MS).unref();
}

/**
 * Keeps the open streams of `session`: it gets GOAWAY once it has had none for
 * {@link HTTP2_IDLE_TIMEOUT_MS}, and when its client drops the connection they are closed by
 * `dropped` before Node's http2 core destroys the session ({@link deferSessionTeardown}).
 */
function trackStreams(session: ServerHttp2Session, dropped: DroppedStreams): void {
  const streams = new Set<ServerHttp2Stream>();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => { timer = setTimeout(() => goAway(session), HTTP2_IDLE_TIMEOUT_MS); timer.unref(); };
  arm();
  session.on('stream', (stream: ServerHttp2Stream) => {
    streams.add(stream);
    if (timer) { clearTimeout(timer); timer = undefined; }
    stream.once('close', () => { if (streams.delete(stream) && !streams.size && !session.closed) arm(); });
  });
  session.once('close', () => { if (timer) clearTimeout(timer); });
  deferSessionTeardown(session, streams, dropped);
}

/**
 * The streams of every dropped HTTP/2 connection of one server, destroyed
 * {@link HTTP2_TEARDOWN_STREAMS_PER_TURN} per turn of the event loop (`setImmediate`) across all
 * of them, connection after connection: a client dropping ten connections at once costs no more
 * per turn than one dropping one. Bounded by the streams open on the server.
 */
class DroppedStreams {
  private readonly queue: { streams: Set<ServerHttp2Stream>; done: () => void }[] = [];
  private scheduled = false;
  private static readonly cancel = Object.assign(new Error('The stream has been canceled: its connection was closed'), { code: 'ERR_HTTP2_STREAM_CANCEL' });

  /** Destroys `streams` (emptying the set) in later turns — the first ones at once — then calls `done`. */
  add(streams: Set<ServerHttp2Stream>, done: () => void): void {
    this.queue.push({ streams, done });
    if (!this.scheduled) { this.scheduled = true; this.step(); }
  }

  private readonly step = (): void => {
    let budget = HTTP2_TEARDOWN_STREAMS_PER_TURN;
    // Node's stream teardown ends the writable side of a stream it has already marked destroyed,
    // which makes (and drops) an ERR_STREAM_DESTROYED error per stream: its stack trace was more
    // than half the cost of closing a stream. No stack is taken while the batch is destroyed.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      while (this.queue.length) {
        const head = this.queue[0]!;
        for (const stream of head.streams) {
          if (budget === 0) break;
          budget--;
          head.streams.delete(stream);
          if (!stream.destroyed) stream.destroy(DroppedStreams.cancel);
        }
        if (head.streams.size) break;
        this.queue.shift();
        head.done();
      }
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    if (this.queue.length) setImmediate(this.step);
    else this.scheduled = false;
  };
}

/**
 * When the socket of `session` closes or fails, its `streams` go to `dropped` (destroyed a few
 * per turn), and only then does Node's http2 core see the event and destroy the session, which
 * has no stream left by then. Node's own listeners (`socketOnClose`, `socketOnError`) are taken
 * off the socket and called, with the event's arguments and in the order the events came, after
 * the last stream. On a Node whose listeners are named otherwise nothing changes: the core's
 * teardown runs as before.
 */
function deferSessionTeardown(session: ServerHttp2Session, streams: Set<ServerHttp2Stream>, dropped: DroppedStreams): void {
  let socket: TLSSocket;
  try { socket = session.socket as TLSSocket; } catch { return; } // already unbound
  type Listener = (this: TLSSocket, ...args: unknown[]) => void;
  const coreClose = socket.listeners('close').find((f) => f.name === 'socketOnClose') as Listener | undefined;
  const coreError = socket.listeners('error').find((f) => f.name === 'socketOnError') as Listener | undefined;
  if (!coreClose || !coreError) return;
  socket.removeListener('close', coreClose);
  socket.removeListener('error', coreError);
  const pending: (() => void)[] = [];
  let state: 'open' | 'closing' | 'closed' = 'open';
  const defer = (call: () => void) => {
    if (state === 'closed') { call(); return; }
    pending.push(call);
    if (state === 'open') {
      state = 'closing';
      dropped.add(streams, () => { state = 'closed'; for (const c of pending.splice(0)) c(); });
    }
  };
  socket.on('close', function (this: TLSSocket, ...args: unknown[]) { defer(() => coreClose.apply(this, args)); });
  socket.on('error', function (this: TLSSocket, ...args: unknown[]) { defer(() => coreError.apply(this, args)); });
}

/**
 * The TLS connection a request came on, the same object for every request of a connection (a
 * key for per-connection caches such as the client certificate's user): for HTTP/2 the session's
 * socket (each stream's `req.socket` is a distinct proxy), for HTTP/1.1 the socket itself.
 */
export function connectionOf(req: AnyRequest): TLSSocket {
  const stream = (req as Http2ServerRequest).stream;
  return (stream?.session?.socket ?? req.socket) as TLSSocket;
}

/**
 * The request's headers with every value kept apart, as HTTP/1.1's `headersDistinct` (Node's
 * HTTP/2 request has none; its `rawHeaders` hold each field line, pseudo-headers included).
 */
export function headersDistinctOf(req: AnyRequest): NodeJS.Dict<string[]> {
  const distinct = (req as IncomingMessage).headersDistinct;
  if (distinct) return distinct;
  const out: NodeJS.Dict<string[]> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name.startsWith(':')) continue;
    (out[name] ??= []).push(raw[i + 1]!);
  }
  return out;
}
