/**
 * JSON against Kubernetes protobuf (`npm run bench -- protobuf-serving`), on one server child: GET of one
 * ConfigMap and LIST of 1,000, each asked as a JSON client asks (`Accept: application/json`) and
 * as client-go's typed clients ask (`application/vnd.kubernetes.protobuf,application/json`), on the
 * same server and data, in the order JSON, protobuf, protobuf, JSON (each figure is the mean of its
 * two runs, so warm-up and drift weigh on both alike). Reported: throughput, latency, the server's
 * CPU per request and the bytes of an answer. Short runs (`BENCH_PROTOBUF_MS`, default 3,000 ms
 * each after a 1 s warm-up): the reference machine is shared, the figures are for comparison
 * between the two forms, not ceilings.
 */
import { closeClients, makeClients, type Client } from './lib/client.js';
import { runCount, runLoad, type LoadResult, type Req } from './lib/load.js';
import { waitForQuiet, type ServerProc } from './lib/procs.js';
import type { Report } from './workspaces.js';

const PB = 'application/vnd.kubernetes.protobuf';
const TYPED = `${PB},application/json`;
const JSON_ONLY = 'application/json';
const NS = 'pbbench';
const PATH = `/clusters/root/api/v1/namespaces/${NS}/configmaps`;
const OBJECTS = 1000;
const DURATION_MS = Number(process.env.BENCH_PROTOBUF_MS ?? 3000);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

/** A ConfigMap of about 1 KiB as JSON: labels, an annotation and a few data keys (managedFields added by the server). */
function configMap(i: number): string {
  const data: Record<string, string> = {};
  for (let k = 0; k < 6; k++) data[`key-${k}`] = `value-${i}-${k}-${'v'.repeat(60)}`;
  return JSON.stringify({
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: `cm-${i}`, labels: { app: 'bench', tier: String(i % 3) }, annotations: { 'example.com/owner': `team-${i % 7}` } },
    data,
  });
}

interface Measured { opsPerSec: number; p50: number; p99: number; serverCpuMsPerOp: number; responseBytes: number; errors: number }

function measured(r: LoadResult, responseBytes: number): Measured {
  return {
    opsPerSec: round(r.opsPerSec, 1), p50: round(r.latencyMs.p50), p99: round(r.latencyMs.p99),
    serverCpuMsPerOp: round((r.cpu.server / 100) * r.seconds * 1000 / Math.max(1, r.ops), 3), responseBytes, errors: r.errors,
  };
}

/** The protobuf-against-JSON comparison (see the module comment). */
export async function protobufServingBench(s: ServerProc): Promise<Report> {
  const admin = makeClients(s.url, s.creds, 1)[0]!;
  await admin.request('POST', '/clusters/root/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }));
  const fillers = makeClients(s.url, s.creds, 20);
  try {
    const f = await runCount(fillers, OBJECTS, (k) => ({ method: 'POST', path: PATH, body: configMap(k) }));
    if (f.errors) throw new Error(`fill: ${f.errors} errors, e.g. ${f.errorSamples.join(' | ')}`);
  } finally { closeClients(fillers); }
  const size = async (path: string, accept: string): Promise<number> => {
    const r = await admin.request('GET', path, undefined, undefined, accept);
    if (r.status !== 200) throw new Error(`GET ${path} (${accept}) → ${r.status}: ${r.body.toString().slice(0, 200)}`);
    return r.body.length;
  };
  const bytes = {
    getJson: await size(`${PATH}/cm-1`, JSON_ONLY), getProtobuf: await size(`${PATH}/cm-1`, TYPED),
    listJson: await size(PATH, JSON_ONLY), listProtobuf: await size(PATH, TYPED),
  };
  admin.close();

  const once = async (clients: Client[], next: () => Req, responseBytes: number): Promise<Measured> => {
    await waitForQuiet();
    return measured(await runLoad({ clients, warmupMs: 1000, durationMs: DURATION_MS, cpu: s.cpu, next, ok: (st) => st === 200 }), responseBytes);
  };
  const mean = (a: Measured, b: Measured): Measured => ({
    opsPerSec: round((a.opsPerSec + b.opsPerSec) / 2, 1), p50: round((a.p50 + b.p50) / 2), p99: round((a.p99 + b.p99) / 2),
    serverCpuMsPerOp: round((a.serverCpuMsPerOp + b.serverCpuMsPerOp) / 2, 3), responseBytes: a.responseBytes, errors: a.errors + b.errors,
  });
  /** JSON, protobuf, protobuf, JSON; the mean of each pair. */
  const pair = async (clients: Client[], next: (accept: string) => Req, jsonBytes: number, protobufBytes: number): Promise<[Measured, Measured]> => {
    const j1 = await once(clients, () => next(JSON_ONLY), jsonBytes);
    const p1 = await once(clients, () => next(TYPED), protobufBytes);
    const p2 = await once(clients, () => next(TYPED), protobufBytes);
    const j2 = await once(clients, () => next(JSON_ONLY), jsonBytes);
    return [mean(j1, j2), mean(p1, p2)];
  };
  const getClients = makeClients(s.url, s.creds, 50);
  const listClients = makeClients(s.url, s.creds, 4);
  const get = (accept: string): Req => ({ method: 'GET', path: `${PATH}/cm-${Math.floor(Math.random() * OBJECTS)}`, accept });
  try {
    log('protobuf: GET (JSON, protobuf) and LIST of 1,000 (JSON, protobuf)');
    const [getJson, getProtobuf] = await pair(getClients, get, bytes.getJson, bytes.getProtobuf);
    const [listJson, listProtobuf] = await pair(listClients, (accept) => ({ method: 'GET', path: PATH, accept }), bytes.listJson, bytes.listProtobuf);
    const detail = (m: Measured) => `p50 ${m.p50} ms, p99 ${m.p99} ms; server CPU ${m.serverCpuMsPerOp} ms per request; ${fmtInt(m.responseBytes)} bytes per answer${m.errors ? `; ${m.errors} errors` : ''}`;
    return {
      result: { objects: OBJECTS, durationMs: DURATION_MS, getConcurrency: 50, listConcurrency: 4, getJson, getProtobuf, listJson, listProtobuf },
      rows: [
        { scenario: 'protobuf-serving', figure: 'GET/s, JSON, 50 clients', value: fmtInt(getJson.opsPerSec), target: '(none)', met: '-', detail: detail(getJson) },
        { scenario: 'protobuf-serving', figure: 'GET/s, protobuf, 50 clients', value: fmtInt(getProtobuf.opsPerSec), target: '(none)', met: '-', detail: detail(getProtobuf) },
        { scenario: 'protobuf-serving', figure: 'LIST of 1,000/s, JSON, 4 clients', value: fmtInt(listJson.opsPerSec), target: '(none)', met: '-', detail: detail(listJson) },
        { scenario: 'protobuf-serving', figure: 'LIST of 1,000/s, protobuf, 4 clients', value: fmtInt(listProtobuf.opsPerSec), target: '(none)', met: '-', detail: detail(listProtobuf) },
      ],
    };
  } finally { closeClients(getClients); closeClients(listClients); }
}
