/**
 * HTTP/2 and the front-proxy, measured with client-go (`npm run bench -- proxy-h2`): one shard and
 * one front-proxy, each its own compiled `kcp-ts` process, and the neutral client-go load
 * generator (a Go program using client-go's default transport: HTTP/2 when the server offers it,
 * HTTP/1.1 with `DISABLE_HTTP2=1`, client-go's own switch). Its path comes from `KCP_TS_LOADGEN`
 * (default `~/.cache/kcp-ts/loadgen`).
 *
 * Four variants, GET of one ConfigMap — straight to the shard and through the proxy, over HTTP/2
 * and over HTTP/1.1 — run interleaved, `BENCH_REPEAT` rounds (default 3) in a rotated order each,
 * so a busy moment of the machine does not fall on one variant: throughput at `BENCH_CONCURRENCY`
 * workers (default 50) for `BENCH_DURATION_MS` (default 5,000), and latency at one worker. Per
 * round the ratio proxied/direct and the p50 the proxy adds; the median and range of the rounds
 * are reported, with the CPU of the shard and proxy processes per request.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, spawnKcp, stopProc, type Proc } from './shards.js';
import { cpuSecondsOf, waitForQuiet } from './lib/procs.js';
import type { Report, Row } from './workspaces.js';

type Json = Record<string, unknown>;
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const median = (a: number[]) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2; };
const range = (a: number[], d = 2) => `${round(Math.min(...a), d)}–${round(Math.max(...a), d)}`;

/** The load generator's path: `KCP_TS_LOADGEN`, else the tool cache. */
export function loadgenPath(): string {
  return process.env.KCP_TS_LOADGEN ?? join(homedir(), '.cache', 'kcp-ts', 'loadgen');
}

/** One `RESULT {…}` line of the load generator. */
interface LoadgenResult { ops: number; errors: number; first_errors?: string[]; seconds: number; rate_per_s: number; p50_ms: number; p99_ms: number }

/**
 * Runs the load generator with `args` (HTTP/1.1 when `http1`); resolves to its RESULT.
 * @throws when it exits non-zero or prints no RESULT
 */
export function runLoadgen(args: string[], http1: boolean): Promise<LoadgenResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...(http1 ? { DISABLE_HTTP2: '1' } : {}) };
    const child = spawn(loadgenPath(), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += String(d); });
    child.stderr.on('data', (d) => { out += String(d); });
    child.once('error', reject);
    child.once('exit', (code) => {
      const m = /^RESULT (.*)$/m.exec(out);
      if (code !== 0 || !m) { reject(new Error(`loadgen ${args.join(' ')} exited ${code}: ${out.slice(-1500)}`)); return; }
      resolve(JSON.parse(m[1]!) as LoadgenResult);
    });
  });
}

interface Variant { name: string; proxied: boolean; http1: boolean }
const VARIANTS: Variant[] = [
  { name: 'direct h2', proxied: false, http1: false }, { name: 'proxy h2', proxied: true, http1: false },
  { name: 'direct h1', proxied: false, http1: true }, { name: 'proxy h1', proxied: true, http1: true },
];

/** `proxy-h2`: GET throughput and p50 through the front-proxy vs straight to the shard, HTTP/2 and HTTP/1.1. */
export async function proxyHttp2(): Promise<Report> {
  if (!existsSync(loadgenPath())) throw new Error(`the load generator is missing at ${loadgenPath()} (build it, or set KCP_TS_LOADGEN)`);
  const rounds = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
  const durationMs = Number(process.env.BENCH_DURATION_MS ?? 5000);
  const root = mkdtempSync(join(tmpdir(), 'kcpb-h2-'));
  const [pProxy, pShard] = await freePorts(2);
  const procs: Proc[] = [];
  try {
    const shard = await spawnKcp(['start', '--root-directory', root, '--secure-port', String(pShard), '--shard-external-url', `https://127.0.0.1:${pProxy}`]);
    procs.push(shard);
    const proxy = await spawnKcp(['front-proxy', '--pki-directory', root, '--root-shard-url', shard.url, '--secure-port', String(pProxy)]);
    procs.push(proxy);
    const kubeconfig = join(root, 'admin.kubeconfig');
    const base = (v: Variant) => `${v.proxied ? proxy.url : shard.url}/clusters/root`;
    const common = (v: Variant) => ['-kubeconfig', kubeconfig, '-server', base(v), '-scenario', 'get', '-namespace', 'bench-h2', '-label', v.name];
    // Warm-up (creates the namespace and the ConfigMap; JIT of both processes), not measured.
    for (const v of VARIANTS) await runLoadgen([...common(v), '-concurrency', String(concurrency), '-duration', '1500ms'], v.http1);
    const load: Record<string, { rate: number; p50: number; shardCpuUs: number; proxyCpuUs: number }[]> = {};
    const serial: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]!);
      for (const v of order) {
        const busy = await waitForQuiet();
        const cpu0 = [cpuSecondsOf(shard.child.pid!), cpuSecondsOf(proxy.child.pid!)];
        const res = await runLoadgen([...common(v), '-concurrency', String(concurrency), '-duration', `${durationMs}ms`], v.http1);
        const cpu1 = [cpuSecondsOf(shard.child.pid!), cpuSecondsOf(proxy.child.pid!)];
        if (res.errors) throw new Error(`${v.name}: ${res.errors} errors, e.g. ${res.first_errors?.join(' | ')}`);
        (load[v.name] ??= []).push({ rate: res.rate_per_s, p50: res.p50_ms, shardCpuUs: ((cpu1[0]! - cpu0[0]!) / res.ops) * 1e6, proxyCpuUs: ((cpu1[1]! - cpu0[1]!) / res.ops) * 1e6 });
        const one = await runLoadgen([...common(v), '-concurrency', '1', '-duration', '2s'], v.http1);
        (serial[v.name] ??= []).push(one.p50_ms);
        log(`round ${r + 1} ${v.name}: ${fmtInt(res.rate_per_s)}/s (p50 ${res.p50_ms} ms at ${concurrency}), p50 ${one.p50_ms} ms at 1 (machine ${busy} % busy before)`);
      }
    }
    const rows: Row[] = [];
    const result: Json = { concurrency, durationMs, rounds, load, serialP50Ms: serial };
    for (const proto of ['h2', 'h1']) {
      const d = load[`direct ${proto}`]!;
      const p = load[`proxy ${proto}`]!;
      const ratios = d.map((x, i) => (p[i]!.rate / x.rate) * 100);
      const added = serial[`direct ${proto}`]!.map((x, i) => serial[`proxy ${proto}`]![i]! - x);
      result[`ratio ${proto}`] = ratios.map((x) => round(x, 1));
      result[`addedP50Ms ${proto}`] = added.map((x) => round(x, 3));
      const protocol = proto === 'h2' ? 'HTTP/2' : 'HTTP/1.1';
      rows.push({
        scenario: 'proxy-h2', figure: `GET throughput through the proxy / direct, ${protocol}`, value: `${round(median(ratios), 1)} %`, target: proto === 'h2' ? '≥ 80 %' : '–',
        met: proto === 'h2' ? (median(ratios) >= 80 ? 'yes' : 'NO') : '–',
        detail: `rounds ${range(ratios, 1)} %; direct ${fmtInt(median(d.map((x) => x.rate)))}/s (runs ${d.map((x) => fmtInt(x.rate)).join(', ')}), through the proxy ${fmtInt(median(p.map((x) => x.rate)))}/s (runs ${p.map((x) => fmtInt(x.rate)).join(', ')}); CPU per request: shard ${round(median(d.map((x) => x.shardCpuUs)), 1)} µs direct, shard ${round(median(p.map((x) => x.shardCpuUs)), 1)} µs + proxy ${round(median(p.map((x) => x.proxyCpuUs)), 1)} µs proxied; ${concurrency} workers`,
      });
      rows.push({
        scenario: 'proxy-h2', figure: `p50 the proxy adds to a GET (1 worker), ${protocol}`, value: `${round(median(added), 3)} ms`, target: proto === 'h2' ? '< 0.3 ms' : '–',
        met: proto === 'h2' ? (median(added) < 0.3 ? 'yes' : 'NO') : '–',
        detail: `rounds ${range(added, 3)} ms; direct p50 ${range(serial[`direct ${proto}`]!, 3)} ms, through the proxy ${range(serial[`proxy ${proto}`]!, 3)} ms`,
      });
    }
    return { result, rows };
  } finally {
    for (const p of procs.reverse()) await stopProc(p).catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  }
}
