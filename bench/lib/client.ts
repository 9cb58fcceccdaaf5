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
import { connect, type TLSSocket } from 'node:tls';

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

/** One keep-alive TLS connection with a hand-written HTTP/1.1 client. */
export class RawConnection implements Client {
  private socket: TLSSocket | undefined;
  private connecting: Promise<TLSSocket> | undefined;
  private buf: Buffer = Buffer.alloc(0);
  /** Received bytes not yet consumed (joined into `buf` when a response may be complete). */
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes the pending response needs at least (its head and Content-Length), 0 when unknown. */
  private need = 0;
  /** A chunked body being decoded: the chunks read so far and where the next chunk's size line starts. */
  private chunked: { parts: Buffer[]; at: number } | undefined;
  private pending: { resolve: (r: Res) => void; reject: (e: Error) => void } | undefined;
  private hostHeader: string;

  constructor(private readonly host: string, private readonly port: number, private readonly creds: Creds) {
    this.hostHeader = `${host}:${port}`;
  }

  private connect(): Promise<TLSSocket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    this.connecting ??= new Promise<TLSSocket>((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port, ca: this.creds.ca, cert: this.creds.cert, key: this.creds.key, servername: 'localhost' });
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
    this.buf = Buffer.alloc(0);
    this.chunks = []; this.size = 0; this.need = 0; this.chunked = undefined;
    p?.reject(e);
  }

  private onData(d: Buffer): void {
    // Chunks are joined only once a response can be complete: joining on every chunk costs
    // O(n²) copies for a body of megabytes (a list of 10,000 objects).
    this.chunks.push(d);
    this.size += d.length;
    if (!this.pending || this.size < this.need) return;
    this.buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    this.chunks = [this.buf];
    const he = this.buf.indexOf(CRLF_CRLF);
    if (he < 0) return;
    const head = this.buf.toString('latin1', 0, he);
    const status = Number(head.slice(9, 12));
    const lower = head.toLowerCase();
    const cl = /\r\ncontent-length:\s*(\d+)/.exec(lower);
    const bodyStart = he + 4;
    let body: Buffer;
    let consumed: number;
    if (cl) {
      const len = Number(cl[1]);
      if (this.buf.length < bodyStart + len) { this.need = bodyStart + len; return; }
      body = this.buf.subarray(bodyStart, bodyStart + len);
      consumed = bodyStart + len;
    } else if (lower.includes('\r\ntransfer-encoding: chunked')) {
      // Decoded incrementally: the chunks already seen are kept and `need` says how many bytes
      // the next step waits for, so a body of many chunks is not re-joined and re-parsed on every
      // read (that was O(n²) copies per large LIST and made the load generator the bottleneck).
      const st = this.chunked ??= { parts: [], at: bodyStart };
      for (;;) {
        const le = this.buf.indexOf('\r\n', st.at);
        if (le < 0) { this.need = this.buf.length + 1; return; }
        const size = parseInt(this.buf.toString('latin1', st.at, le), 16);
        const end = le + 2 + size + 2;
        if (this.buf.length < end) { this.need = end; return; }
        if (size === 0) { consumed = end; break; }
        st.parts.push(this.buf.subarray(le + 2, le + 2 + size));
        st.at = end;
      }
      body = Buffer.concat(st.parts);
      this.chunked = undefined;
    } else {
      body = Buffer.alloc(0);
      consumed = bodyStart;
    }
    const p = this.pending;
    this.pending = undefined;
    // Copy out what the next response may still need (the rest of buf) and release the rest.
    this.buf = consumed < this.buf.length ? Buffer.from(this.buf.subarray(consumed)) : Buffer.alloc(0);
    this.chunks = this.buf.length ? [this.buf] : [];
    this.size = this.buf.length;
    this.need = 0;
    p.resolve({ status, body: Buffer.from(body) });
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
