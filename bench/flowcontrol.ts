/**
 * `npm run bench -- flowcontrol-cost`: the CPU cost of the request filter between impersonation
 * and authorization (src/flowcontrol/filter.ts), in this process (no server): one admit and release
 * of a GET, a LIST and a create by a tenant's user, with priority and fairness (kube's suggested
 * configuration, metrics on) against kube's max-in-flight limits (`--enable-priority-and-fairness=false`).
 * Figures are CPU microseconds per request (median of 5 time-boxed rounds). The difference is what
 * priority and fairness adds to every request; compare it with a request's whole server CPU (the
 * create/get/list scenarios).
 */
import { Registry } from 'prom-client';
import { createRequestFilter, type FlowControlRequest } from '../src/flowcontrol/filter.js';
import { FlowControlMetrics } from '../src/flowcontrol/metrics.js';
import { SUGGESTED_FLOW_SCHEMAS, SUGGESTED_PRIORITY_LEVELS } from '../src/flowcontrol/bootstrap.js';
import type { KubeObject } from '../src/apimachinery/meta.js';
import { cpuMsPerCall } from './lib/cputime.js';
import type { Report } from './workspaces.js';

const object = (name: string, spec: unknown): KubeObject => ({ apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: '', metadata: { name, uid: `${name}-uid` }, spec: spec as Record<string, unknown> });

/** A request of the kind the server filter passes (src/endpoints/filters/flowcontrol.ts). */
function request(verb: string, i: number): FlowControlRequest {
  return {
    user: { name: `user-${i % 10}`, groups: ['system:authenticated'] }, cluster: `tenant-${i % 100}`, verb, apiGroup: '', resource: 'configmaps', subresource: '',
    namespace: 'default', isResourceRequest: true, path: '/api/v1/namespaces/default/configmaps', isLongRunning: false, groupResource: 'core/configmaps',
    query: new URLSearchParams(verb === 'list' ? 'limit=500' : ''), cancellation: {}, setHeader: () => { /* headers are not the filter's cost */ },
  };
}

/** Measures admit + release per verb with priority and fairness on and off. */
export async function flowControlCostBench(): Promise<Report> {
  const result: Record<string, Record<string, number>> = {};
  const rows: Report['rows'] = [];
  for (const verb of ['get', 'list', 'create']) {
    const figures: Record<string, number> = {};
    for (const apf of [true, false]) {
      const filter = createRequestFilter({
        enablePriorityAndFairness: apf,
        config: { flowSchemas: () => Object.entries(SUGGESTED_FLOW_SCHEMAS).map(([n, s]) => object(n, s)), priorityLevels: () => Object.entries(SUGGESTED_PRIORITY_LEVELS).map(([n, s]) => object(n, s)) },
        counts: { objects: () => 2_000, storedSize: () => 2_000 * 1024, watches: () => 5, objectSize: () => 1024 },
        metrics: apf ? new FlowControlMetrics(new Registry()) : undefined,
      });
      const requests = Array.from({ length: 1000 }, (_, i) => request(verb, i));
      let i = 0;
      const us = cpuMsPerCall(() => {
        const r = requests[i++ % requests.length]!;
        r.cancellation = {};
        const grant = filter.admit(r);
        if (grant instanceof Promise) throw new Error('the bench never queues');
        grant.release();
      }) * 1000;
      figures[apf ? 'apfUs' : 'maxInFlightUs'] = Math.round(us * 100) / 100;
    }
    result[verb] = figures;
    rows.push({
      scenario: 'flowcontrol-cost', figure: `${verb}: filter CPU µs per request, APF on vs off`, value: `${figures.apfUs} vs ${figures.maxInFlightUs}`,
      target: '(reference)', met: '-', detail: `priority and fairness adds ${(figures.apfUs! - figures.maxInFlightUs!).toFixed(2)} µs per ${verb}`,
    });
  }
  return { result, rows };
}
