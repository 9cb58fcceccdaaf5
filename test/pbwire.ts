/**
 * A raw HTTPS client for protobuf answers in tests: the bytes of an answer, and a reader of
 * `application/vnd.kubernetes.protobuf;stream=watch` streams (4-byte big-endian length, then a
 * meta/v1 WatchEvent {type = 1, object = 2 RawExtension {raw = 1}}), objects decoded with the codec.
 */
import assert from 'node:assert/strict';
import { request, Agent } from 'node:https';
import { decodeKubernetesProtobuf } from '../src/apimachinery/protobuf.js';
import { sleep, type Creds } from './helpers.js';

export const PB = 'application/vnd.kubernetes.protobuf';
/** The Accept header of client-go's typed clients. */
export const TYPED = `${PB},application/json`;

export interface RawRes { status: number; type: string | undefined; body: Buffer }

/** One request on a new connection; the answer's bytes as they came. `body`: a Buffer is sent as protobuf, else as JSON. */
export function rawCall(server: { url: string }, creds: Partial<Creds> & { ca: string }, method: string, path: string, body?: Buffer | object, headers: Record<string, string> = {}): Promise<RawRes> {
  const u = new URL(server.url + path);
  const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method, ca: creds.ca, cert: creds.cert, key: creds.key, agent: false,
      headers: { ...(data ? { 'content-type': Buffer.isBuffer(body) ? PB : 'application/json', 'content-length': String(data.length) } : {}), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/** The decoded protobuf answer, after checking its Content-Type is kube's. */
export function decodedProtobuf(r: RawRes): any {
  assert.equal(r.type, PB, `${r.status} ${r.type}: ${r.body.toString().slice(0, 300)}`);
  return decodeKubernetesProtobuf(r.body);
}

/** Splits a WatchEvent message (length-delimited fields only) and decodes its object with the codec. */
export function decodeWatchEvent(frame: Buffer): { type: string; object: any } {
  const fields = (b: Buffer): Map<number, Buffer> => {
    const out = new Map<number, Buffer>();
    let at = 0;
    const varint = (): number => { let v = 0; let mul = 1; for (;;) { const x = b[at++]!; v += (x & 0x7f) * mul; if (x < 0x80) return v; mul *= 128; } };
    while (at < b.length) {
      const key = varint();
      assert.equal(key & 7, 2, 'length-delimited field');
      const len = varint();
      out.set(key >> 3, b.subarray(at, at + len));
      at += len;
    }
    return out;
  };
  const event = fields(frame);
  const raw = fields(event.get(2)!).get(1)!;
  return { type: event.get(1)!.toString(), object: decodeKubernetesProtobuf(raw) };
}

export interface ProtobufWatch {
  events: { type: string; object: any }[];
  /** The answer's Content-Type. */
  type: Promise<string | undefined>;
  status: Promise<number>;
  close(): void;
  /** Resolves once `n` events arrived, or after 8 s with what arrived. */
  waitFor(n: number): Promise<{ type: string; object: any }[]>;
}

/** Reads a protobuf watch stream (see the module comment). */
export function protobufWatch(server: { url: string }, creds: Creds, path: string, accept = PB): ProtobufWatch {
  const u = new URL(server.url + path);
  const events: { type: string; object: any }[] = [];
  let buf = Buffer.alloc(0);
  let typeResolve!: (t: string | undefined) => void;
  let statusResolve!: (n: number) => void;
  const type = new Promise<string | undefined>((r) => { typeResolve = r; });
  const status = new Promise<number>((r) => { statusResolve = r; });
  const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', ca: creds.ca, cert: creds.cert, key: creds.key, agent: new Agent({ keepAlive: false }), headers: { accept } }, (res) => {
    typeResolve(res.headers['content-type']);
    statusResolve(res.statusCode ?? 0);
    res.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readUInt32BE(0));
        buf = buf.subarray(4 + frame.length);
        events.push(decodeWatchEvent(frame));
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end();
  return {
    events, type, status,
    close() { req.destroy(); },
    async waitFor(n: number) {
      const end = Date.now() + 8000;
      while (events.length < n && Date.now() < end) await sleep(10);
      return events;
    },
  };
}
