/**
 * Noisy neighbour (`npm run bench -- noisy-neighbour`, or `node --import tsx bench/noisyneighbour.ts`):
 * workspace A floods one shard while workspace B sends one GET every 20 ms; B's GET latency
 * (p50/p99/max), A's throughput against A alone and the server's event-loop delay
 * (perf_hooks.monitorEventLoopDelay in the server process) per flood, with API priority and
 * fairness on and off (kube's max-in-flight limits) side by side.
 *
 * Floods of A (ws-a, namespace bench, 2,000 ConfigMaps of about 1 KiB):
 * - `list`: 64 concurrent LIST loops of the 2,000 ConfigMaps;
 * - `write`: 50 concurrent writers (ConfigMap updates);
 * - `watch`: 2,000 watches opened at once (from the current resourceVersion): as client-go opens
 *   them, streams of HTTP/2 connections (1,000 each, the server's stream limit), or with
 *   BENCH_NN_WATCH_PROTO=h1 each on its own TLS connection (a client that wants to cost the most);
 *   opened/s counts until the server holds all of them;
 * - `bigwrite` (not in the default set): 20 writers, each rewriting its own ConfigMap of 60,000
 *   keys (about 1 MB, under ConfigMap's 1 MiB): the work of each write grows with its object, and
 *   all of it runs on the server's one event loop.
 * - `hello` (not in the default set): 500 concurrent loops from another address (127.0.0.2), each
 *   opening a TCP connection, sending a canned TLS ClientHello and closing on the server's answer:
 *   the server pays the key exchange and signature of every handshake, the sender nothing. A's
 *   figure is answered ClientHellos/s.
 * - `openapi` (not in the default set): A holds 20 copies of prometheus-operator's `prometheuses`
 *   CRD (833 KB of YAML each, test/fixtures) under groups of their own; 2 loops each patch one of
 *   them (a printer column: the workspace's APIs change) and then ask `/openapi/v2` as JSON, as
 *   protobuf, and the `/openapi/v3` root, as kubectl does after a change. A's figure is requests/s.
 * - `crdchurn` (not in the default set): beside those 20, 2 loops create a copy of that CRD under a
 *   new group and delete it again. A's figure is requests/s.
 * - `watchdrop` (not in the default set): 1,000 watches opened on one HTTP/2 connection, then the
 *   connection dropped with all of them open, again and again. A's figure is watches opened/s.
 * - `get` (not in the default set): 64 loops of GETs of A's ConfigMaps, each a consistent read
 *   (the reads of one turn of the server's loop share its current revision). A's figure is GETs/s.
 * Both workspaces are used with the same admin identity: flows are `<cluster>/<user>`, so A and
 * B are distinct flows of the global-default priority level.
 *
 * Environment: BENCH_NN_PHASE_MS (measured period of each flood, default 5000), BENCH_NN_MODES
 * (`on,off`), BENCH_NN_FLOODS (`list,write,watch`), BENCH_NN_WATCH_PROTO (`h2`, `h1`),
 * BENCH_NN_LIST_ACCEPT (the Accept header of A's LISTs, default `application/json`; e.g.
 * `application/yaml`, or `application/json;as=Table;v=v1;g=meta.k8s.io` as kubectl get asks).
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { connect as netConnect, createServer as netServer, type AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { RawConnection, closeClients, makeClients, type Client, type Creds } from './lib/client.js';
import { runCount, summarize, type LatencySummary } from './lib/load.js';
import { killAllSync, removeRoot, startServerProc, type ServerProc } from './lib/procs.js';
import { openWatches, openWatchesH2 } from './lib/watchers.js';
import type { Report, Row } from './workspaces.js';

const PHASE_MS = Number(process.env.BENCH_NN_PHASE_MS ?? 5000);
const MODES = (process.env.BENCH_NN_MODES ?? 'on,off').split(',').filter(Boolean) as ('on' | 'off')[];
const FLOODS = (process.env.BENCH_NN_FLOODS ?? 'list,write,watch').split(',').filter(Boolean);
/** How A opens its watches: `h2`, streams of one HTTP/2 connection per 1,000 (client-go); `h1`, a TLS connection each. */
const WATCH_PROTO = process.env.BENCH_NN_WATCH_PROTO === 'h1' ? 'h1' : 'h2';
const LIST_ACCEPT = process.env.BENCH_NN_LIST_ACCEPT || 'application/json';
const OBJECTS = 2000;
const LISTERS = 64;
const WRITERS = 50;
const WATCHES = 2000;
/** Watches of one connection in the `watchdrop` flood (the server's stream limit). */
const DROP_WATCHES = 1000;
const B_INTERVAL_MS = 20;
const BIG_WRITERS = 20;
const BIG_KEYS = 60_000;
const HELLO_LOOPS = 500;
const BIG_CRDS = 20;
const CRD_LOOPS = 2;
let churned = 0;
const CRDS = '/clusters/ws-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
/** prometheus-operator's `prometheuses` CRD (the largest of test/fixtures) under group `<prefix><i>.example.com`. */
const bigCrd = (() => {
  let base: { spec: { group: string }; metadata: unknown } | undefined;
  return (prefix: string, i: number) => {
    base ??= yaml.load(readFileSync(fileURLToPath(new URL('../test/fixtures/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml', import.meta.url)), 'utf8')) as typeof base;
    return JSON.stringify({ ...base, metadata: { name: `prometheuses.${prefix}${i}.example.com` }, spec: { ...base!.spec, group: `${prefix}${i}.example.com` } });
  };
})();

const log = (s: string) => process.stderr.write(`[noisy-neighbour] ${s}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const A = '/clusters/ws-a/api/v1/namespaces/bench/configmaps';
const B = '/clusters/ws-b/api/v1/namespaces/bench/configmaps';
const payload = 'x'.repeat(1000);
const cm = (name: string, v = payload) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v } });
/** A ConfigMap of {@link BIG_KEYS} keys (about 1 MB of JSON); `i` in every value, so each write changes it. */
const bigCm = (name: string, i: number) => {
  const data: Record<string, string> = {};
  for (let k = 0; k < BIG_KEYS; k++) data[`k${k}`] = `${i}`;
  return JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
};

async function must(c: Client, method: string, path: string, body?: string): Promise<void> {
  const r = await c.request(method, path, body);
  if (r.status >= 300 && r.status !== 409) throw new Error(`${method} ${path} → ${r.status}: ${r.body.toString().slice(0, 300)}`);
}

/** Logical clusters ws-a and ws-b, namespace bench in each, A's 2,000 ConfigMaps and B's probe. */
async function populate(s: ServerProc): Promise<void> {
  const masters: Creds = { ...s.creds, cert: readFileSync(join(s.root, 'system-admin.crt'), 'utf8'), key: readFileSync(join(s.root, 'system-admin.key'), 'utf8') };
  const m = new RawConnection(new URL(s.url).hostname, Number(new URL(s.url).port), masters);
  for (const ws of ['ws-a', 'ws-b']) {
    await must(m, 'POST', `/clusters/${ws}/apis/core.kcp.io/v1alpha1/logicalclusters`, JSON.stringify({ metadata: { name: 'cluster' } }));
    for (let i = 0; ; i++) {
      const r = await m.request('GET', `/clusters/${ws}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`);
      if ((JSON.parse(r.body.toString()) as { status?: { phase?: string } }).status?.phase === 'Ready') break;
      if (i > 500) throw new Error(`${ws} not Ready`);
      await sleep(20);
    }
    await must(m, 'POST', `/clusters/${ws}/api/v1/namespaces`, JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
  }
  m.close();
  const clients = makeClients(s.url, s.creds, 50);
  const r = await runCount(clients, OBJECTS, (k) => ({ method: 'POST', path: A, body: cm(`cm-${k}`) }), ((st: number) => st === 201 || st === 409) as (s: number) => s is 200 | 201);
  if (r.errors) throw new Error(`populating: ${r.errorSamples.join('; ')}`);
  await must(clients[0]!, 'POST', B, cm('probe', 'b'));
  if (FLOODS.includes('bigwrite')) for (let c = 0; c < BIG_WRITERS; c++) await must(clients[0]!, 'POST', A, bigCm(`big-${c}`, 0));
  if (FLOODS.includes('openapi') || FLOODS.includes('crdchurn')) {
    for (let i = 0; i < BIG_CRDS; i++) await must(clients[0]!, 'POST', CRDS, bigCrd('g', i));
    // Served (Established) before anything is measured.
    for (let i = 0; ; i++) {
      const r = await clients[0]!.request('GET', '/clusters/ws-a/apis');
      if ((JSON.parse(r.body.toString()) as { groups: Array<{ name: string }> }).groups.filter((g) => /^g\d+\.example\.com$/.test(g.name)).length === BIG_CRDS) break;
      if (i > 500) throw new Error('CRDs not served');
      await sleep(20);
    }
  }
  closeClients(clients);
}

/**
 * B in a worker thread (its own event loop, so the load generator's work for A's 2 MB
 * responses does not delay B's sends or receipts): one GET every 20 ms over 16 warm keep-alive
 * connections, latencies from the send.
 */
async function probeB(s: ServerProc): Promise<{ stop(): Promise<{ lat: LatencySummary; errors: number; codes: Record<string, number> }> }> {
  const worker = new Worker(`
    const { parentPort, workerData: d } = require('node:worker_threads');
    const https = require('node:https');
    const agent = new https.Agent({ keepAlive: true, maxSockets: d.sockets, maxFreeSockets: d.sockets, ca: d.ca, cert: d.cert, key: d.key, servername: 'localhost' });
    const u = new URL(d.url);
    const lat = []; const codes = {}; let errors = 0; let inFlight = 0; let stopping = false; let timer;
    const done = () => { if (stopping && inFlight === 0) { agent.destroy(); parentPort.postMessage({ lat, codes, errors }); } };
    const get = (cb) => {
      const t0 = performance.now(); inFlight++;
      const req = https.request({ host: u.hostname, port: Number(u.port), path: d.path, agent, headers: { accept: 'application/json' } }, (res) => {
        res.on('data', () => {}); res.on('end', () => { inFlight--; cb(res.statusCode, performance.now() - t0); done(); });
      });
      req.on('error', () => { inFlight--; cb(0, 0); done(); });
      req.end();
    };
    // Open loop: one GET every interval on a pool of warm keep-alive connections (TLS handshakes
    // before anything is measured); a GET sent while every connection is busy waits for one, and
    // that wait counts in its latency.
    let warm = 0;
    for (let i = 0; i < d.sockets; i++) get(() => {
      if (++warm < d.sockets) return;
      parentPort.postMessage('ready');
      timer = setInterval(() => get((code, ms) => {
        codes[code] = (codes[code] || 0) + 1;
        if (code === 200) lat.push(ms); else errors++;
      }), d.interval);
    });
    parentPort.on('message', () => { stopping = true; clearInterval(timer); done(); });
  `, { eval: true, workerData: { url: s.url, ca: s.creds.ca, cert: s.creds.cert, key: s.creds.key, path: `${B}/probe`, interval: B_INTERVAL_MS, sockets: 16 } });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', (m: unknown) => (m === 'ready' ? resolve() : reject(new Error(`B's probe: ${JSON.stringify(m)}`))));
    worker.once('error', reject);
  });
  return {
    stop: () => new Promise((resolve, reject) => {
      worker.once('message', (m: { lat: number[]; codes: Record<string, number>; errors: number }) => {
        void worker.terminate();
        resolve({ lat: summarize(m.lat), errors: m.errors, codes: m.codes });
      });
      worker.once('error', reject);
      worker.postMessage('stop');
    }),
  };
}

/** Runs A's closed loop of `n` clients for `ms`; returns completed operations/s and status counts. */
async function loop(s: ServerProc, n: number, ms: number, next: (c: number, i: number) => { method: string; path: string; body?: string; accept?: string; contentType?: string }): Promise<{ perSec: number; codes: Record<string, number> }> {
  const clients = makeClients(s.url, s.creds, n);
  const end = performance.now() + ms;
  let ok = 0;
  const codes: Record<string, number> = {};
  await Promise.all(clients.map(async (c, ci) => {
    for (let i = 0; performance.now() < end; i++) {
      const r = next(ci, i);
      const res = await c.request(r.method, r.path, r.body, r.contentType, r.accept).catch(() => ({ status: 0, body: Buffer.alloc(0) }));
      codes[res.status] = (codes[res.status] ?? 0) + 1;
      if (res.status === 200 || res.status === 201) ok++;
      // A refused client waits as told (Retry-After: 1).
      else if (res.status === 429) await sleep(1000);
    }
  }));
  closeClients(clients);
  return { perSec: ok / (ms / 1000), codes };
}

/** A TLS 1.3 ClientHello as Node's client sends it (ALPN h2 and http/1.1), captured from a local listener. */
async function captureClientHello(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const capture = netServer((sock) => sock.once('data', (b: Buffer) => { sock.destroy(); capture.close(); resolve(b); }));
    capture.on('error', reject);
    capture.listen(0, '127.0.0.1', () => {
      const c = tlsConnect({ port: (capture.address() as AddressInfo).port, host: '127.0.0.1', servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'] });
      c.on('error', () => undefined);
    });
  });
}

/**
 * The `hello` flood: {@link HELLO_LOOPS} loops from 127.0.0.2, each sending a canned ClientHello
 * on a new connection and closing on the server's first bytes, for `ms`; answered per second.
 */
async function helloFlood(s: ServerProc, ms: number): Promise<{ perSec: number; codes: Record<string, number> }> {
  const hello = await captureClientHello();
  const u = new URL(s.url);
  const end = performance.now() + ms;
  let answered = 0; let failed = 0;
  const one = () => new Promise<void>((resolve) => {
    const sock = netConnect({ host: u.hostname, port: Number(u.port), localAddress: '127.0.0.2' }, () => sock.write(hello));
    sock.once('data', () => { answered++; sock.destroy(); });
    sock.on('error', () => { failed++; });
    sock.once('close', () => resolve());
  });
  await Promise.all(Array.from({ length: HELLO_LOOPS }, async () => { while (performance.now() < end) await one(); }));
  return { perSec: answered / (ms / 1000), codes: { answered, failed } };
}

/** The resourceVersion of a LIST of A's ConfigMaps now. */
async function currentResourceVersion(s: ServerProc): Promise<string> {
  const c = makeClients(s.url, s.creds, 1)[0]!;
  const r = await c.request('GET', A);
  c.close();
  return (JSON.parse(r.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

interface FloodResult { b: LatencySummary; bErrors: number; bCodes: Record<string, number>; aPerSec: number; aAlonePerSec: number; aCodes: Record<string, number>; loop: { p50: number; p99: number; max: number } }

/** Count and sum (seconds) of the server's `apiserver_request_duration_seconds` for GETs of ConfigMaps. */
async function serverGets(s: ServerProc): Promise<{ count: number; sum: number; buckets: Map<number, number>; text: string }> {
  const c = makeClients(s.url, s.creds, 1)[0]!;
  const text = (await c.request('GET', '/metrics')).body.toString();
  c.close();
  const num = (name: string) => Number(new RegExp(`^apiserver_request_duration_seconds_${name}\\{verb="get",resource="configmaps"\\} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^apiserver_request_duration_seconds_bucket\{le="([^"]+)",verb="get",resource="configmaps"\} (\S+)/gm)) buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  return { count: num('count'), sum: num('sum'), buckets, text };
}

/** Per priority level, the requests that waited in an APF queue between two scrapes and their mean wait, e.g. `workload-low: 120, 3.1 ms`. */
function apfWait(before: string, after: string): string {
  const read = (text: string) => {
    const out = new Map<string, { count: number; sum: number }>();
    for (const m of text.matchAll(/^apiserver_flowcontrol_request_wait_duration_seconds_(count|sum)\{([^}]*)\} (\S+)/gm)) {
      const level = /priority_level="([^"]*)"/.exec(m[2]!)?.[1] ?? '?';
      const e = out.get(level) ?? { count: 0, sum: 0 };
      e[m[1] as 'count' | 'sum'] += Number(m[3]);
      out.set(level, e);
    }
    return out;
  };
  const b = read(before); const a = read(after);
  return [...a].map(([level, v]) => {
    const n = v.count - (b.get(level)?.count ?? 0);
    return n ? `${level}: ${n}, ${round(((v.sum - (b.get(level)?.sum ?? 0)) / n) * 1000, 2)} ms` : '';
  }).filter(Boolean).join('; ') || 'none';
}

/** The upper bound (s) of the histogram bucket holding quantile `q` of the observations between two scrapes. */
function bucketQuantile(before: Map<number, number>, after: Map<number, number>, q: number): number {
  const les = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  for (const le of les) if ((after.get(le)! - (before.get(le) ?? 0)) >= q * total) return le;
  return Infinity;
}

async function flood(s: ServerProc, kind: string): Promise<FloodResult> {
  const listReq = () => ({ method: 'GET', path: A, accept: LIST_ACCEPT });
  const writeReq = (c: number, i: number) => ({ method: 'PUT', path: `${A}/cm-${(c * 40 + i) % OBJECTS}`, body: cm(`cm-${(c * 40 + i) % OBJECTS}`, `${payload.slice(0, 990)}${i}`) });
  const run = async () => {
    if (kind === 'list') return loop(s, LISTERS, PHASE_MS, listReq);
    if (kind === 'write') return loop(s, WRITERS, PHASE_MS, writeReq);
    if (kind === 'hello') return helloFlood(s, PHASE_MS);
    if (kind === 'openapi') {
      return loop(s, CRD_LOOPS, PHASE_MS, (c, i) => {
        const step = i % 4;
        if (step === 0) {
          const patch = [{ op: 'replace', path: '/spec/versions/0/additionalPrinterColumns', value: [{ name: `c${i}`, type: 'string', jsonPath: '.metadata.name' }] }];
          return { method: 'PATCH', path: `${CRDS}/prometheuses.g${(c * 7 + i) % BIG_CRDS}.example.com`, body: JSON.stringify(patch), contentType: 'application/json-patch+json' };
        }
        if (step === 1) return { method: 'GET', path: '/clusters/ws-a/openapi/v2' };
        if (step === 2) return { method: 'GET', path: '/clusters/ws-a/openapi/v2', accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' };
        return { method: 'GET', path: '/clusters/ws-a/openapi/v3' };
      });
    }
    if (kind === 'crdchurn') {
      // A new group each time (the run alone and the run beside B included): a deleted CRD may still be going.
      const current: string[] = [];
      return loop(s, CRD_LOOPS, PHASE_MS, (c, i) => {
        if (i % 2 === 0) current[c] = `l${churned++}-`;
        return i % 2 === 0 ? { method: 'POST', path: CRDS, body: bigCrd(current[c]!, 0) } : { method: 'DELETE', path: `${CRDS}/prometheuses.${current[c]}0.example.com` };
      });
    }
    if (kind === 'get') return loop(s, LISTERS, PHASE_MS, (c, i) => ({ method: 'GET', path: `${A}/cm-${(c * 31 + i) % OBJECTS}` }));
    if (kind === 'bigwrite') return loop(s, BIG_WRITERS, PHASE_MS, (c, i) => ({ method: 'PUT', path: `${A}/big-${c}`, body: bigCm(`big-${c}`, i + 1) }));
    if (kind === 'watchdrop') {
      // A client that wants to cost the others the most per watch: 1,000 watches on one HTTP/2
      // connection, opened, then the connection dropped with all of them open; again, for the phase.
      const rv = await currentResourceVersion(s);
      const paths = Array.from({ length: DROP_WATCHES }, () => `${A}?watch=true&resourceVersion=${rv}`);
      const t0 = performance.now();
      let opened = 0; let errors = 0; let drops = 0;
      while (performance.now() - t0 < PHASE_MS) {
        const set = await openWatchesH2(s.url, s.creds, paths);
        const t = performance.now();
        while (set.established + set.ended < DROP_WATCHES && performance.now() - t < 10_000) await sleep(2);
        opened += set.established; errors += set.errors.length; drops++;
        set.close();
      }
      return { perSec: opened / ((performance.now() - t0) / 1000), codes: { drops, errors } };
    }
    // watch: 2,000 watches opened at once from the current resourceVersion; throughput = opened/s
    // until the server has registered all of them (it answers a watch with its headers once the
    // watch is registered). Counted in this process: scraping /metrics every 20 ms for it, as
    // before, cost the server 4-10 ms of its loop per scrape, a third of its turns while the
    // watches opened, and B waited behind them.
    const rv = await currentResourceVersion(s);
    const paths = Array.from({ length: WATCHES }, () => `${A}?watch=true&resourceVersion=${rv}`);
    const t0 = performance.now();
    const set = WATCH_PROTO === 'h1' ? await openWatches(s.url, s.creds, paths, WATCHES) : await openWatchesH2(s.url, s.creds, paths);
    while (set.established + set.ended < WATCHES && performance.now() - t0 < 60_000) await sleep(2);
    const opened = performance.now() - t0;
    await sleep(Math.max(0, PHASE_MS - opened));
    set.close();
    return { perSec: WATCHES / (opened / 1000), codes: { errors: set.errors.length } };
  };
  const alone = await run();
  await sleep(500);
  await s.loopDelay();
  const before = await serverGets(s);
  const probe = await probeB(s);
  const busy = await run();
  const b = await probe.stop();
  const loopDelay = await s.loopDelay();
  const after = await serverGets(s);
  log(`APF queue wait (priority level: requests, mean): ${apfWait(before.text, after.text)}`);
  log(`server-side GET mean ${round((after.sum - before.sum) / Math.max(1, after.count - before.count) * 1000, 2)} ms over ${after.count - before.count}, p50 ≤ ${bucketQuantile(before.buckets, after.buckets, 0.5) * 1000} ms, p99 ≤ ${bucketQuantile(before.buckets, after.buckets, 0.99) * 1000} ms (histogram buckets)`);
  return { b: b.lat, bErrors: b.errors, bCodes: b.codes, aPerSec: busy.perSec, aAlonePerSec: alone.perSec, aCodes: busy.codes, loop: loopDelay };
}

/** Runs every mode and flood; returns the figures and the summary rows. */
export async function noisyNeighbour(): Promise<Report> {
  const result: Record<string, unknown> = {};
  const rows: Row[] = [];
  for (const mode of MODES) {
    process.env.BENCH_APF = mode;
    const s = await startServerProc(undefined, { label: `noisy-neighbour-${mode}` });
    try {
      await populate(s);
      const probe = await probeB(s);
      await sleep(2000);
      const idle = await probe.stop();
      const perMode: Record<string, unknown> = { idleB: idle.lat };
      log(`APF ${mode}: B alone p50 ${round(idle.lat.p50, 2)} ms p99 ${round(idle.lat.p99, 2)} ms`);
      for (const kind of FLOODS) {
        const r = await flood(s, kind);
        perMode[kind] = r;
        log(`APF ${mode}, ${kind}: B p50 ${round(r.b.p50)} p99 ${round(r.b.p99)} max ${round(r.b.max)} ms (${r.b.count} ok, ${r.bErrors} failed ${JSON.stringify(r.bCodes)}); ` +
          `A ${round(r.aPerSec)}/s vs ${round(r.aAlonePerSec)}/s alone ${JSON.stringify(r.aCodes)}; loop p99 ${r.loop.p99} max ${r.loop.max} ms`);
        rows.push({
          scenario: `noisy-neighbour/${kind}`, figure: `B GET p99 (APF ${mode}), A ${kind} flood`, value: `${round(r.b.p99)} ms`, target: mode === 'on' ? '< 50 ms' : '(reference)',
          met: mode === 'on' ? (r.b.p99 < 50 ? 'yes' : 'NO') : '-',
          detail: `B p50 ${round(r.b.p50)} max ${round(r.b.max)} ms, ${r.bErrors} failed; A ${round(r.aPerSec)}/s vs ${round(r.aAlonePerSec)}/s alone; event-loop delay p99 ${r.loop.p99} max ${r.loop.max} ms`,
        });
      }
      result[`apf-${mode}`] = perMode;
    } finally {
      await s.stop();
      removeRoot(s.root);
      delete process.env.BENCH_APF;
    }
  }
  return { result, rows };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.on('SIGINT', () => { killAllSync(); process.exit(130); });
  noisyNeighbour().then((r) => {
    for (const row of r.rows) process.stdout.write(`${row.scenario}\t${row.figure}\t${row.value}\t${row.detail}\n`);
  }, (err: unknown) => { killAllSync(); process.stderr.write(`${String((err as Error).stack ?? err)}\n`); process.exit(1); });
}
