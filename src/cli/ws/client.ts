/**
 * A minimal REST client for the `kubectl ws` plugin: JSON requests to a kcp server with the
 * credentials of a kubeconfig context (CA, client certificate, bearer token, basic auth,
 * impersonation), over node:https / node:http.
 *
 * Like kcp's plugin (`newKCPClusterClient` in kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli/pkg/workspace/plugin/create.go`), requests go to the server
 * URL with its path removed, followed by `/clusters/<path>/…`. Errors carry the message of the
 * server's `Status` (what client-go prints); 429 answers are retried after `Retry-After`, as
 * client-go retries them (at most 10 times).
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ClientConfig } from './kubeconfig.js';
import { ConfigError } from './kubeconfig.js';
import { StatusError } from '../../apimachinery/errors.js';

/** TLS and authentication settings derived from a {@link ClientConfig}. */
interface Transport {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized: boolean;
  servername?: string;
  headers: Record<string, string>;
}

function b64(s: string): Buffer {
  return Buffer.from(s.replace(/\s+/g, ''), 'base64');
}

function readRef(path: string, what: string): Buffer {
  try { return readFileSync(path); } catch (err) {
    throw new ConfigError(`unable to read ${what} ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
}

/**
 * Builds the transport of a context (client-go `rest.Config` from `clientcmd`).
 *
 * @throws {ConfigError} for credentials this plugin cannot use (exec plugins, auth providers) or
 *   unreadable files.
 */
function transportFor(cfg: ClientConfig): Transport {
  const c = cfg.cluster;
  const u = cfg.user as ClientConfig['user'] & { exec?: unknown; 'auth-provider'?: unknown };
  if (u.exec !== undefined) throw new ConfigError(`user ${JSON.stringify(cfg.userName)}: exec credential plugins are not supported by this kubectl-ws`);
  if (u['auth-provider'] !== undefined) throw new ConfigError(`user ${JSON.stringify(cfg.userName)}: auth providers are not supported by this kubectl-ws`);
  if (c['proxy-url']) throw new ConfigError(`cluster proxy-url ${JSON.stringify(c['proxy-url'])} is not supported by this kubectl-ws`);
  const t: Transport = { rejectUnauthorized: !c['insecure-skip-tls-verify'], headers: {} };
  if (c['certificate-authority-data']) t.ca = b64(c['certificate-authority-data']);
  else if (c['certificate-authority']) t.ca = readRef(c['certificate-authority'], 'certificate authority');
  if (c['tls-server-name']) t.servername = c['tls-server-name'];
  if (u['client-certificate-data']) t.cert = b64(u['client-certificate-data']);
  else if (u['client-certificate']) t.cert = readRef(u['client-certificate'], 'client certificate');
  if (u['client-key-data']) t.key = b64(u['client-key-data']);
  else if (u['client-key']) t.key = readRef(u['client-key'], 'client key');
  let token = u.token;
  if (!token && u.tokenFile) token = readRef(u.tokenFile, 'token file').toString('utf8').trim();
  if (token) t.headers['authorization'] = `Bearer ${token}`;
  else if (u.username !== undefined || u.password !== undefined) {
    t.headers['authorization'] = `Basic ${Buffer.from(`${u.username ?? ''}:${u.password ?? ''}`).toString('base64')}`;
  }
  if (u.as) t.headers['impersonate-user'] = u.as;
  if (u['as-uid']) t.headers['impersonate-uid'] = u['as-uid'];
  return t;
}

/** A JSON response. */
export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** Talks to one kcp server as one user. */
export class KcpClient {
  private readonly transport: Transport;
  private readonly base: URL;

  /**
   * @param cfg The effective connection of the context in use.
   * @param userAgent Value of the User-Agent header.
   */
  constructor(cfg: ClientConfig, private readonly userAgent = 'kubectl-ws') {
    this.transport = transportFor(cfg);
    let base: URL;
    try { base = new URL(cfg.server); } catch { throw new ConfigError(`invalid server URL ${JSON.stringify(cfg.server)}`); }
    base.pathname = '';
    base.search = '';
    base.hash = '';
    this.base = base;
  }

  /**
   * Sends one request and decodes the JSON answer; 429 is retried after `Retry-After` (default 1 s,
   * at most 10 times).
   *
   * @param path Request path starting with `/`, e.g. `/clusters/root/api`.
   * @throws {StatusError} for a non-2xx answer (message of the `Status`, else a generic one) or a
   *   connection error (code 0).
   */
  async request(method: string, path: string, body?: unknown): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.once(method, path, body);
      if (res.status === 429 && attempt < 10) {
        const after = Number(res.headers['retry-after']);
        await new Promise((r) => setTimeout(r, (Number.isFinite(after) && after > 0 ? after : 1) * 1000));
        continue;
      }
      if (res.status >= 200 && res.status < 300) return res;
      throw toStatusError(res, method, path);
    }
  }

  /** GET, returning the decoded object. */
  async get<T = unknown>(path: string): Promise<T> {
    return (await this.request('GET', path)).body as T;
  }

  /** POST of a JSON object, returning the decoded answer. */
  async post<T = unknown>(path: string, body: unknown): Promise<T> {
    return (await this.request('POST', path, body)).body as T;
  }

  private once(method: string, path: string, body?: unknown): Promise<Response> {
    const url = new URL(this.base.href);
    const q = path.indexOf('?');
    url.pathname = `${this.base.pathname.replace(/\/+$/, '')}${q < 0 ? path : path.slice(0, q)}`;
    if (q >= 0) url.search = path.slice(q);
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const t = this.transport;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...t.headers,
      ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}),
    };
    const isHttps = url.protocol === 'https:';
    return new Promise((resolvePromise, reject) => {
      const options = {
        method,
        headers,
        ...(isHttps ? { ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: t.rejectUnauthorized, servername: t.servername } : {}),
      };
      const onResponse = (res: import('node:http').IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try { parsed = text ? JSON.parse(text) : undefined; } catch { /* not JSON */ }
          resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      };
      const req = isHttps ? httpsRequest(url, options, onResponse) : httpRequest(url, options, onResponse);
      req.on('error', (err) => reject(new StatusError(0, 'ConnectionError', `${method} ${url.href}: ${err.message}`)));
      req.setTimeout(60_000, () => req.destroy(new Error('request timed out')));
      if (data) req.write(data);
      req.end();
    });
  }
}

const GENERIC: Record<number, [string, string]> = {
  401: ['Unauthorized', 'Unauthorized'],
  403: ['Forbidden', 'forbidden'],
  404: ['NotFound', 'the server could not find the requested resource'],
  409: ['Conflict', 'the server reported a conflict'],
  429: ['TooManyRequests', 'the server has received too many requests and has asked us to try again later'],
  500: ['InternalError', 'an error on the server has prevented the request from succeeding'],
  503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
};

function toStatusError(res: Response, method: string, path: string): StatusError {
  const b = res.body as { kind?: string; message?: string; reason?: string } | undefined;
  if (b && typeof b === 'object' && b.kind === 'Status' && b.message) {
    return new StatusError(res.status, b.reason ?? '', b.message);
  }
  const [reason, message] = GENERIC[res.status] ?? ['Unknown', `the server responded with the status code ${res.status} but did not return more information (${method} ${path})`];
  return new StatusError(res.status, reason, message);
}
