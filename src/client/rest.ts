/**
 * A small HTTPS client for talking to kcp-ts shards from inside kcp-ts: a shard registering
 * itself in the root shard, shards reading each other's replicated objects, the workspace
 * scheduler creating logical clusters on other shards, and the front-proxy's index. It speaks
 * JSON, keeps connections alive, and authenticates with a client certificate (or a token).
 */
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';

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

/** An answer: status, parsed JSON (undefined when the body is not JSON) and the raw body. */
export interface RestResponse { status: number; headers: IncomingMessage['headers']; json: any; body: string }

/** Requests to one server over kept-alive connections. */
export class RestClient {
  readonly agent: Agent;
  private readonly base: URL;

  /** `maxSockets` bounds concurrent connections to the server (default 32). */
  constructor(readonly conn: Connection, maxSockets = 32) {
    this.base = new URL(conn.url);
    this.agent = new Agent({ keepAlive: true, maxSockets, ca: conn.ca, cert: conn.cert, key: conn.key, ...(conn.serverName ? { servername: conn.serverName } : {}) });
  }

  /** Options of a request to `path` (which may carry a query). */
  requestOptions(method: string, path: string, headers: Record<string, string> = {}): RequestOptions {
    return {
      host: this.base.hostname.replace(/^\[|\]$/g, ''), port: this.base.port || 443, path, method, agent: this.agent,
      ca: this.conn.ca, cert: this.conn.cert, key: this.conn.key, ...(this.conn.serverName ? { servername: this.conn.serverName } : {}),
      headers: { accept: 'application/json', ...(this.conn.token ? { authorization: `Bearer ${this.conn.token}` } : {}), ...headers },
    };
  }

  /**
   * One request; `body` objects are sent as JSON. Rejects on a network error (connection refused,
   * reset, TLS failure) or after `timeoutMs` (default 30 s) without an answer; an HTTP error status
   * is an answer, not a rejection.
   */
  request(method: string, path: string, body?: unknown, opts: { headers?: Record<string, string>; timeoutMs?: number; contentType?: string } = {}): Promise<RestResponse> {
    const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const headers = { ...(data ? { 'content-type': opts.contentType ?? 'application/json', 'content-length': String(data.length) } : {}), ...opts.headers };
    return new Promise((resolve, reject) => {
      const req = request(this.requestOptions(method, path, headers), (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: unknown;
          try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json, body: text });
        });
      });
      req.setTimeout(opts.timeoutMs ?? 30_000, () => req.destroy(new Error(`no answer from ${this.conn.url} within ${opts.timeoutMs ?? 30_000} ms`)));
      req.on('error', reject);
      if (data) req.write(data);
      req.end();
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }
}
