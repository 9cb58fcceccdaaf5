/**
 * A small HTTPS client for talking to kcp-ts shards from inside kcp-ts: a shard registering
 * itself in the root shard, shards reading each other's replicated objects, the workspace
 * scheduler creating logical clusters on other shards, and the front-proxy's index. It speaks
 * JSON over an undici keep-alive pool and authenticates with a client certificate (or a token).
 * Answers are read up to {@link SHARD_RESPONSE_LIMIT} bytes: their size follows what tenants
 * store, and a shard must not hold an unbounded answer of another in memory.
 */
import { createSecureContext } from 'node:tls';
import { Pool, type Dispatcher } from 'undici';
import { readLimited } from '../apimachinery/httpbody.js';

/** Where a server is and how to authenticate to it (what a kubeconfig context says). */
export interface Connection {
  /** `https://host:port`, without a path. */
  url: string;
  /** PEM of the CA that signed the server's certificate. */
  ca: string;
  /** Client certificate and key (PEM). */
  cert?: string;
  key?: string;
  /** Bearer token, when no client certificate is given. */
  token?: string;
  /** Name the server's certificate is verified for, when not the URL's host (TLS SNI too). */
  serverName?: string;
}

/** Response headers (lower-case names). */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** An answer: status, parsed JSON (undefined when the body is not JSON) and the raw body. */
export interface RestResponse { status: number; headers: ResponseHeaders; json: any; body: string }

/**
 * Largest answer a {@link RestClient} reads (64 MiB): a list page of 1,000 objects of 64 KiB.
 * A larger one rejects with {@link ResponseTooLargeError} (the informer then lists in smaller
 * pages).
 */
export const SHARD_RESPONSE_LIMIT = 64 * 1024 * 1024;

/** An answer larger than the client's limit: it was cut off unread. */
export class ResponseTooLargeError extends Error {
  constructor(url: string, path: string, limit: number) {
    super(`the answer of ${url}${path} is larger than ${limit} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

/** Requests to one server over kept-alive connections. */
export class RestClient {
  /** The keep-alive connections (undici), for streaming requests such as watches. */
  readonly pool: Pool;

  /**
   * `maxSockets` bounds concurrent connections to the server (default 32); answers are read up
   * to `maxResponseBytes` (default {@link SHARD_RESPONSE_LIMIT}).
   */
  constructor(readonly conn: Connection, maxSockets = 32, readonly maxResponseBytes = SHARD_RESPONSE_LIMIT) {
    // One TLS context for every connection of the pool: given CA, certificate and key, each new
    // connection would parse them into a context of its own (a few ms of CPU, paid again whenever
    // the pool grows under load).
    const secureContext = createSecureContext({ ca: conn.ca, cert: conn.cert, key: conn.key });
    this.pool = new Pool(conn.url, {
      connections: maxSockets, pipelining: 1, keepAliveTimeout: 30_000,
      connect: { secureContext, ...(conn.serverName ? { servername: conn.serverName } : {}) },
    });
  }

  /** Request headers: JSON accepted, the bearer token if any, then `extra`. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { accept: 'application/json', ...(this.conn.token ? { authorization: `Bearer ${this.conn.token}` } : {}), ...extra };
  }

  /**
   * One request; `body` objects are sent as JSON. Rejects on a network error (connection refused,
   * reset, TLS failure), after `timeoutMs` (default 30 s) without headers or between body chunks
   * (`no answer from <url> within N ms`), or with {@link ResponseTooLargeError}; an HTTP error
   * status is an answer, not a rejection.
   */
  async request(method: string, path: string, body?: unknown, opts: { headers?: Record<string, string>; timeoutMs?: number; contentType?: string } = {}): Promise<RestResponse> {
    const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const headers = this.headers({ ...(data ? { 'content-type': opts.contentType ?? 'application/json' } : {}), ...opts.headers });
    const timedOut = (err: Error & { code?: string }): never => {
      if (err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') throw new Error(`no answer from ${this.conn.url} within ${timeoutMs} ms`);
      throw err;
    };
    const res = await this.pool.request({ method: method as Dispatcher.HttpMethod, path, headers, body: data, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }).catch(timedOut);
    const text = await readLimited(res.body, this.maxResponseBytes, res.headers['content-length']).catch((err: Error & { code?: string }) => {
      if (/^response body larger than/.test(err.message)) throw new ResponseTooLargeError(this.conn.url, path, this.maxResponseBytes);
      return timedOut(err);
    });
    let json: unknown;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.statusCode, headers: res.headers, json, body: text };
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.pool.destroy().catch(() => undefined);
  }
}
