/**
 * Operator benchmarks (`npm run build && npm run bench -- operator`): `kcp-ts operator` as its own
 * process against a real kube-apiserver (test/hostcluster.ts; tools from test/tools/build.sh).
 *
 * - new KcpInstance → every host object it needs exists (18: 2 Deployments, 1 StatefulSet,
 *   3 Services, 10 Secrets, 2 ConfigMaps), 10 instances one after another;
 * - the operator's memory (RSS) with 100 KcpInstances reconciled;
 * - host-API writes by the operator during 60 s with nothing changing (its
 *   `kcp_ts_operator_host_requests_total{kind="write"}`), target 0.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { startHostCluster } from '../test/hostcluster.js';
import { freePort, startRedis } from '../test/helpers.js';
import { HostClient } from '../operator/kube/client.js';
import type { Report, Row } from './workspaces.js';

const REPO = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const KINDS = ['Deployment', 'StatefulSet', 'Service', 'Secret', 'ConfigMap'] as const;
const OBJECTS_PER_INSTANCE = 18;
const INSTANCES = Number(process.env.BENCH_OPERATOR_INSTANCES ?? 100);
const IDLE_MS = Number(process.env.BENCH_OPERATOR_IDLE_MS ?? 60_000);

/** Runs the operator scenario (see the module comment). */
export async function operatorBench(): Promise<Report> {
  const host = await startHostCluster();
  const redis = await startRedis();
  const metricsPort = await freePort();
  let proc: ReturnType<typeof spawn> | undefined;
  try {
    await host.kubectl(['apply', '-f', join(REPO, 'crds')]);
    for (const crd of ['kcpinstances', 'shards', 'rootworkspaces']) await host.kubectl(['wait', '--for=condition=Established', `crd/${crd}.operator.kcp-ts.io`]);
    await host.kubectl(['create', 'namespace', 'bench']);
    proc = spawn(process.execPath, [join(REPO, 'bin', 'kcp-ts'), 'operator', '--kubeconfig', host.kubeconfig, '--redis-url', redis.url,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`, `--health-probe-bind-address=127.0.0.1:${await freePort()}`], { stdio: ['ignore', 'ignore', 'inherit'] });
    const metric = async (name: string) => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(name));
      return line ? Number(line.split(' ').pop()) : NaN;
    };
    for (let i = 0; i < 200 && Number.isNaN(await metric('kcp_ts_operator_host_requests_total{kind="write"}').catch(() => NaN)); i++) await sleep(100);
    const kc = new KubeConfig();
    kc.loadFromFile(host.kubeconfig);
    const client = new HostClient(kc);
    const countObjects = async (instance: string) => {
      const lists = await Promise.all(KINDS.map((k) => client.list(k, 'bench', `app.kubernetes.io/instance=${instance}`)));
      return lists.reduce((n, l) => n + l.items.length, 0);
    };
    const create = (name: string) => client.request('POST', '/apis/operator.kcp-ts.io/v1alpha1/namespaces/bench/kcpinstances', { apiVersion: 'operator.kcp-ts.io/v1alpha1', kind: 'KcpInstance', metadata: { name }, spec: { version: '0.1.0' } });

    // 1. New instance → all its host objects, one after another.
    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const name = `lat-${i}`;
      const t0 = performance.now();
      await create(name);
      while ((await countObjects(name)) < OBJECTS_PER_INSTANCE) await sleep(20);
      latencies.push(performance.now() - t0);
      log(`instance ${name}: ${Math.round(latencies.at(-1)!)} ms`);
    }
    latencies.sort((a, b) => a - b);

    // 2. Memory with 100 instances.
    for (let i = 10; i < INSTANCES; i++) await create(`mem-${i}`);
    const t1 = performance.now();
    for (;;) {
      const list = await client.list<{ apiVersion: string; kind: string; metadata: { name: string; generation?: number }; status?: { observedGeneration?: number } }>('KcpInstance', 'bench');
      if (list.items.length === INSTANCES && list.items.every((o) => o.status?.observedGeneration === o.metadata.generation)) break;
      await sleep(200);
    }
    const convergeMs = performance.now() - t1;
    await sleep(5000);
    const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))![1]);
    const heap = await metric('nodejs_heap_size_used_bytes');

    // 3. Writes while nothing changes.
    const w0 = await metric('kcp_ts_operator_host_requests_total{kind="write"}');
    const r0 = await metric('kcp_ts_operator_host_requests_total{kind="read"}');
    await sleep(IDLE_MS);
    const idleWrites = (await metric('kcp_ts_operator_host_requests_total{kind="write"}')) - w0;
    const idleReads = (await metric('kcp_ts_operator_host_requests_total{kind="read"}')) - r0;

    const p50 = latencies[Math.floor(latencies.length / 2)]!;
    const max = latencies.at(-1)!;
    const rows: Row[] = [
      { scenario: 'operator', figure: 'new KcpInstance → its 18 host objects (p50 / max of 10)', value: `${Math.round(p50)} ms / ${Math.round(max)} ms`, target: '< 2 s', met: max < 2000 ? 'yes' : 'no', detail: `latencies ${latencies.map(Math.round).join(', ')} ms` },
      { scenario: 'operator', figure: `operator memory with ${INSTANCES} KcpInstances`, value: `RSS ${round(rssKiB / 1024, 1)} MiB, heap ${round(heap / 2 ** 20, 1)} MiB`, target: '–', met: '–', detail: `${INSTANCES} instances converged (status observed) in ${Math.round(convergeMs)} ms after the last create; ${INSTANCES * OBJECTS_PER_INSTANCE} host objects` },
      { scenario: 'operator', figure: `host-API writes in ${IDLE_MS / 1000} s with nothing changing`, value: String(idleWrites), target: '0', met: idleWrites === 0 ? 'yes' : 'no', detail: `reads in that time: ${idleReads} (informers watch; nothing is polled)` },
    ];
    return { result: { createP50Ms: round(p50), createMaxMs: round(max), latenciesMs: latencies.map((l) => round(l)), instances: INSTANCES, rssMiB: round(rssKiB / 1024, 1), heapMiB: round(heap / 2 ** 20, 1), convergeMs: Math.round(convergeMs), idleMs: IDLE_MS, idleWrites, idleReads }, rows };
  } finally {
    proc?.kill('SIGTERM');
    await sleep(500);
    await redis.stop();
    await host.stop();
  }
}
