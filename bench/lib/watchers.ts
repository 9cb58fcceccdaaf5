/**
 * Many concurrent watches, each on its own HTTPS connection (node:https, one agent with enough
 * sockets) or as streams of a few HTTP/2 connections (as client-go opens them), recording the delivery latency of every event whose object carries a write timestamp
 * in `data.t` (ms, `performance.timeOrigin + performance.now()` of the writer).
 */
import { Agent, request } from 'node:https';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { Creds } from './client.js';
import { Samples } from './load.js';

export interface WatchSet {
  /** Events whose write timestamp is before this (ms, `nowMs()` clock) count as warm-up only. */
  measureFrom: number;
  /** Delivery latencies (receive − write timestamp) of measured events, ms. */
  latencies: Samples;
  /** Write timestamps of the measured events, parallel to `latencies`. */
  writeTimes: Samples;
  /** Events received during the warm-up. */
  warmupEvents: number;
  /** Delivery latencies of the warm-up events (first event on each watch connection among them). */
  warmupLatencies: Samples;
  /** Events received, by type. */
  events: Record<string, number>;
  /**
   * Watches the server answered with 200: it sends (and flushes) the response headers once the
   * watch is registered, which is when client-go's `Watch()` returns.
   */
  established: number;
  /** Watches that ended or failed before close(). */
  ended: number;
  errors: string[];
  close(): void;
}

const T_FIELD = /"t":"([0-9.]+)"/;

/** Wall-clock-like milliseconds shared by writer and watchers (same process). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A watch response's data handler: counts its events by type and records the latencies of those carrying `data.t`. */
function eventLines(set: WatchSet): (chunk: string) => void {
  let rest = '';
  return (chunk: string) => {
    const recv = nowMs();
    const text = rest + chunk;
    let from = 0;
    let nl = text.indexOf('\n');
    while (nl >= 0) {
      const line = text.slice(from, nl);
      from = nl + 1;
      nl = text.indexOf('\n', from);
      const tq = line.indexOf('"type":"');
      const type = tq >= 0 ? line.slice(tq + 8, line.indexOf('"', tq + 8)) : '?';
      set.events[type] = (set.events[type] ?? 0) + 1;
      const m = T_FIELD.exec(line);
      if (m) {
        const t = Number(m[1]);
        if (t < set.measureFrom) { set.warmupEvents++; set.warmupLatencies.push(recv - t); }
        else { set.latencies.push(recv - t); set.writeTimes.push(t); }
      }
    }
    rest = text.slice(from);
  };
}

/** An empty watch set whose `close` runs `onClose` (after marking it closing, see `closing`). */
function newWatchSet(onClose: () => void): WatchSet & { closing: boolean } {
  const set = {
    measureFrom: Infinity, latencies: new Samples(), writeTimes: new Samples(), warmupEvents: 0, warmupLatencies: new Samples(),
    events: {} as Record<string, number>, established: 0, ended: 0, errors: [] as string[], closing: false,
    close() { set.closing = true; onClose(); },
  };
  return set;
}

/**
 * Opens `paths.length` watches as client-go does over HTTP/2: streams of as few connections as the
 * server's stream limit allows (`streamsPerConnection`, kube's default 1,000), and resolves once
 * every request is sent; `established` counts those the server has registered.
 */
export async function openWatchesH2(url: string, creds: Creds, paths: string[], streamsPerConnection = 1000): Promise<WatchSet> {
  const sessions: ClientHttp2Session[] = [];
  const set = newWatchSet(() => { for (const s of sessions) s.destroy(); });
  const fail = (path: string, msg: string) => { if (!set.closing) { set.ended++; if (set.errors.length < 5) set.errors.push(`${path}: ${msg}`); } };
  for (let i = 0; i < paths.length; i += streamsPerConnection) {
    const session = http2Connect(url, { ca: creds.ca, cert: creds.cert, key: creds.key, servername: 'localhost' });
    session.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => { session.once('connect', () => resolve()); session.once('error', reject); });
    sessions.push(session);
    for (const path of paths.slice(i, i + streamsPerConnection)) {
      const stream = session.request({ ':method': 'GET', ':path': path, accept: 'application/json' });
      stream.setEncoding('utf8');
      stream.on('response', (headers) => {
        const status = Number(headers[':status']);
        if (status !== 200) { let b = ''; stream.on('data', (d: string) => { b += d; }); stream.on('end', () => fail(path, `${status} ${b.slice(0, 200)}`)); return; }
        set.established++;
        stream.on('data', eventLines(set));
        stream.on('end', () => { if (!set.closing) set.ended++; });
      });
      stream.on('error', (e) => fail(path, e.message));
      stream.end();
    }
  }
  return set;
}

/**
 * Opens `paths.length` watches (path i on its own socket), `batch` at a time, and resolves once
 * every request is written. Whether the server registered them is checked by the caller.
 */
export async function openWatches(url: string, creds: Creds, paths: string[], batch = 100): Promise<WatchSet> {
  const u = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets: paths.length + 10, maxFreeSockets: 0, ca: creds.ca, cert: creds.cert, key: creds.key, servername: 'localhost' });
  const set = newWatchSet(() => agent.destroy());
  const { errors } = set;
  // Resolves once the request is written on an established TLS connection. The response headers
  // may come only with the first event: kcp-ts does not flush them for a watch that starts at a
  // resourceVersion (see docs/benchmarks.md), so the caller confirms registration via /metrics.
  const open = (path: string) => new Promise<void>((resolve) => {
    const req = request({ host: u.hostname, port: Number(u.port), path, method: 'GET', agent, headers: { accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        let b = '';
        res.on('data', (d) => { b += String(d); });
        res.on('end', () => { if (errors.length < 5) errors.push(`${res.statusCode} ${path}: ${b.slice(0, 200)}`); set.ended++; });
        return;
      }
      set.established++;
      res.setEncoding('utf8');
      res.on('data', eventLines(set));
      res.on('end', () => { if (!set.closing) set.ended++; });
      res.on('error', () => undefined);
    });
    req.on('finish', () => resolve());
    req.on('error', (e) => { if (!set.closing) { set.ended++; if (errors.length < 5) errors.push(`${path}: ${e.message}`); } resolve(); });
    req.end();
  });
  for (let i = 0; i < paths.length; i += batch) await Promise.all(paths.slice(i, i + batch).map(open));
  return set;
}
