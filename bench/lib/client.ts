/**
 * HTTP clients of the load generator.
 *
 * - `RawClient` (default): one persistent TLS connection (client certificate) per virtual client,
 *   writing HTTP/1.1 requests by hand and parsing `Content-Length` or chunked responses. One
 *   request in flight per connection (no pipelining), i.e. what a keep-alive client does, at a
 *   fraction of the CPU of `node:https` so the load generator does not become the bottleneck on a
 *   2-core machine.
 * - `HttpsClient` (`BENCH_CLIENT=https`): `node:https` with a keep-alive `https.Agent`, for comparison.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { connect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';

/** Credentials of the admin user (PEM). */
export interface Creds { ca: string; cert: string; key: string }

/** A response: status and raw body. */
export interface Res { status: number; body: Buffer }

/** What every client offers. */
export interface Client {
  /** One request; `accept` is the Accept header (default `application/json`). */
  request(method: string, path: string, body?: string | Buffer, contentType?: string, accept?: string): Promise<Res>;
  close(): void;
}

const CRLF_CRLF = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const EMPTY = Buffer.alloc(0);

/**
 * Where the response being read stands: its head (up to the blank line), a body of known length,
 * a chunk-size line, a chunk's data, the CRLF after it, or the trailer after the last chunk.
 */
type ReadState =
  | { at: 'head' }
  | { at: 'body'; left: number }
  | { at: 'size' }
  | { at: 'data'; left: number }
  | { at: 'crlf'; left: number }
  | { at: 'trailer' };

/**
 * Secure contexts by credentials: a context parses the CA, the certificate and the key, about
 * 2 ms of the load generator's CPU, so connections with the same credentials share one.
 */
const contexts = new WeakMap<Creds, SecureContext>();

/** One keep-alive TLS connection with a hand-written HTTP/1.1 client. */
export class RawConnection implements Client {
  private socket: TLSSocket | undefined;
  private connecting: Promise<TLSSocket> | undefined;
  /**
   * Received bytes are read once, as they arrive (a state machine over each chunk): a body is kept
   * as views of the chunks it came in and joined once, when complete. Joining the chunks received
   * so far whenever a piece became complete copied a 2 MB LIST several times over, and made the
   * load generator use more CPU than the server it loads on a 2-core machine.
   */
  private state: ReadState = { at: 'head' };
  /** The part of a head, chunk-size line or trailer line read so far (small). */
  private line: Buffer = EMPTY;
  private status = 0;
  private parts: Buffer[] = [];
  private bodyBytes = 0;
  private pending: { resolve: (r: Res) => void; reject: (e: Error) => void } | undefined;
  private hostHeader: string;

  constructor(private readonly host: string, private readonly port: number, private readonly creds: Creds) {
    this.hostHeader = `${host}:${port}`;
  }

  private connect(): Promise<TLSSocket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    this.connecting ??= new Promise<TLSSocket>((resolve, reject) => {
      let secureContext = contexts.get(this.creds);
      if (!secureContext) contexts.set(this.creds, secureContext = createSecureContext({ ca: this.creds.ca, cert: this.creds.cert, key: this.creds.key }));
      const s = connect({ host: this.host, port: this.port, secureContext, servername: 'localhost' });
      s.setNoDelay(true);
      s.once('secureConnect', () => { this.socket = s; this.connecting = undefined; resolve(s); });
      s.on('data', (d: Buffer) => this.onData(d));
      s.on('error', (e) => { this.connecting = undefined; reject(e); this.fail(e); });
      s.on('close', () => { this.socket = undefined; this.fail(new Error('connection closed')); });
    });
    return this.connecting;
  }

  private fail(e: Error): void {
    const p = this.pending;
    this.pending = undefined;
    this.reset();
    p?.reject(e);
  }

  private reset(): void {
    this.state = { at: 'head' };
    this.line = EMPTY;
    this.parts = [];
    this.bodyBytes = 0;
  }

  /**
   * Reads up to `delimiter` across chunks: the text before it (latin1) once found, else
   * undefined with the rest of `d` kept in `line`; `used` is how much of `d` was consumed.
   */
  private readLine(d: Buffer, i: number, delimiter: Buffer): { text: string | undefined; used: number } {
    const from = this.line.length;
    const joined = from ? Buffer.concat([this.line, d.subarray(i)]) : d.subarray(i);
    const at = joined.indexOf(delimiter, Math.max(0, from - delimiter.length + 1));
    if (at < 0) {
      this.line = Buffer.from(joined);
      return { text: undefined, used: d.length - i };
    }
    this.line = EMPTY;
    return { text: joined.toString('latin1', 0, at), used: at + delimiter.length - from };
  }

  private onData(d: Buffer): void {
    let i = 0;
    while (i < d.length) {
      const st = this.state;
      switch (st.at) {
        case 'head': {
          const { text, used } = this.readLine(d, i, CRLF_CRLF);
          i += used;
          if (text === undefined) return;
          this.status = Number(text.slice(9, 12));
          const lower = text.toLowerCase();
          const cl = /\r\ncontent-length:\s*(\d+)/.exec(lower);
          if (cl) this.state = { at: 'body', left: Number(cl[1]) };
          else if (lower.includes('\r\ntransfer-encoding: chunked')) this.state = { at: 'size' };
          else this.state = { at: 'body', left: 0 };
          if (this.state.at === 'body' && this.state.left === 0) this.complete();
          break;
        }
        case 'body':
        case 'data': {
          const n = Math.min(st.left, d.length - i);
          this.parts.push(d.subarray(i, i + n));
          this.bodyBytes += n;
          i += n;
          st.left -= n;
          if (st.left > 0) return;
          if (st.at === 'body') this.complete();
          else this.state = { at: 'crlf', left: 2 };
          break;
        }
        case 'crlf': {
          const n = Math.min(st.left, d.length - i);
          i += n;
          st.left -= n;
          if (st.left === 0) this.state = { at: 'size' };
          break;
        }
        case 'size': {
          const { text, used } = this.readLine(d, i, CRLF);
          i += used;
          if (text === undefined) return;
          const size = parseInt(text, 16);
          this.state = size === 0 ? { at: 'trailer' } : { at: 'data', left: size };
          break;
        }
        case 'trailer': {
          const { text, used } = this.readLine(d, i, CRLF);
          i += used;
          if (text === undefined) return;
          if (text === '') this.complete();
          break;
        }
      }
    }
  }

  /** The response is read: joins its body (once) and answers the pending request. */
  private complete(): void {
    const body = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.bodyBytes);
    const status = this.status;
    const p = this.pending;
    this.pending = undefined;
    this.reset();
    p?.resolve({ status, body });
  }

  async request(method: string, path: string, body?: string | Buffer, contentType = 'application/json', accept = 'application/json'): Promise<Res> {
    const s = await this.connect();
    if (this.pending) throw new Error('RawConnection: one request at a time');
    return new Promise<Res>((resolve, reject) => {
      this.pending = { resolve, reject };
      let head = `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\nAccept: ${accept}\r\n`;
      if (body !== undefined) {
        const b = typeof body === 'string' ? Buffer.from(body) : body;
        head += `Content-Type: ${contentType}\r\nContent-Length: ${b.length}\r\n\r\n`;
        s.write(Buffer.concat([Buffer.from(head, 'latin1'), b]));
      } else {
        s.write(`${head}\r\n`, 'latin1');
      }
    });
  }

  close(): void { this.socket?.destroy(); }
}

/** `node:https` with a shared keep-alive agent; safe for any number of concurrent requests. */
export class HttpsClient implements Client {
  readonly agent: Agent;

  constructor(private readonly host: string, private readonly port: number, creds: Creds, maxSockets = 50) {
    this.agent = new Agent({ keepAlive: true, maxSockets, ca: creds.ca, cert: creds.cert, key: creds.key, servername: 'localhost' });
  }

  request(method: string, path: string, body?: string | Buffer, contentType = 'application/json', accept = 'application/json'): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const data = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body;
      const req = httpsRequest({
        host: this.host, port: this.port, path, method, agent: this.agent,
        headers: { accept, ...(data ? { 'content-type': contentType, 'content-length': String(data.length) } : {}) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(data);
    });
  }

  close(): void { this.agent.destroy(); }
}

/** Which client implementation the load generator uses (`BENCH_CLIENT=raw|https`). */
export function clientKind(): 'raw' | 'https' {
  return process.env.BENCH_CLIENT === 'https' ? 'https' : 'raw';
}

/**
 * `n` clients for `n` concurrent virtual users: `n` raw connections, or one https client shared
 * by all (its agent holds `n` sockets).
 */
export function makeClients(url: string, creds: Creds, n: number): Client[] {
  const u = new URL(url);
  const port = Number(u.port);
  if (clientKind() === 'https') {
    const c = new HttpsClient(u.hostname, port, creds, n);
    return Array.from({ length: n }, () => c);
  }
  return Array.from({ length: n }, () => new RawConnection(u.hostname, port, creds));
}

/** Closes clients (each distinct one once). */
export function closeClients(clients: Client[]): void {
  for (const c of new Set(clients)) c.close();
}
