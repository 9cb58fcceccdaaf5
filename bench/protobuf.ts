/**
 * `npm run bench -- protobuf-codec`: the Kubernetes protobuf codec (src/apimachinery/protobuf.ts)
 * against JSON, in this process (no server): encode and decode time and body size of a 500-item
 * ConfigMapList and of the largest prometheus-operator CRD (monitoring.coreos.com_prometheuses,
 * ≈ 0.8 MB of YAML). JSON is `JSON.stringify`/`JSON.parse` (+ UTF-8 conversion), what the server
 * does for application/json. Each figure is CPU time per call, the median of 5 time-boxed rounds (~300 ms each).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf } from '../src/apimachinery/protobuf.js';
import type { Report } from './workspaces.js';
import { cpuMsPerCall as timeIt } from './lib/cputime.js';

type Json = Record<string, unknown>;

const CRD_FILE = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'test', 'fixtures', 'crds', 'prometheus-operator', 'monitoring.coreos.com_prometheuses.yaml');

/** A ConfigMap as the server stores it: full metadata (a managedFields entry included) and 1 KiB of data. */
function configMap(i: number): Json {
  return {
    metadata: {
      name: `cm-${i}`, namespace: 'bench', uid: `0b7e8f1a-5c6d-4e7f-8a9b-${String(i).padStart(12, '0')}`, resourceVersion: String(1000 + i),
      creationTimestamp: '2025-03-04T05:06:07Z', labels: { app: 'bench', index: String(i) },
      managedFields: [{ manager: 'kubectl-create', operation: 'Update', apiVersion: 'v1', time: '2025-03-04T05:06:07Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {}, 'f:b': {} } } }],
    },
    data: { a: 'x'.repeat(512), b: 'y'.repeat(512) },
  };
}

const ms = (v: number): string => (v < 1 ? v.toFixed(3) : v.toFixed(1));
const kib = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;

/** Measures both objects; returns the figures and summary rows. */
export async function protobufCodecBench(): Promise<Report> {
  const list: Json = { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '2000' }, items: Array.from({ length: 500 }, (_, i) => configMap(i)) };
  const crd = parseYaml(readFileSync(CRD_FILE, 'utf8')) as Json;
  const result: Json = {};
  const rows: Report['rows'] = [];
  for (const [name, obj] of [['configmaplist-500', list], ['crd-prometheuses', crd]] as const) {
    const json = Buffer.from(JSON.stringify(obj));
    const pb = encodeKubernetesProtobuf(obj);
    const figures = {
      jsonBytes: json.length,
      protobufBytes: pb.length,
      jsonEncodeMs: timeIt(() => Buffer.from(JSON.stringify(obj))),
      protobufEncodeMs: timeIt(() => encodeKubernetesProtobuf(obj)),
      jsonDecodeMs: timeIt(() => JSON.parse(json.toString('utf8'))),
      protobufDecodeMs: timeIt(() => decodeKubernetesProtobuf(pb)),
    };
    result[name] = figures;
    rows.push({
      scenario: 'protobuf-codec', figure: `${name}: encode / decode CPU ms, protobuf vs JSON`,
      value: `${ms(figures.protobufEncodeMs)} / ${ms(figures.protobufDecodeMs)} vs ${ms(figures.jsonEncodeMs)} / ${ms(figures.jsonDecodeMs)}`,
      target: '(reference)', met: '-', detail: `${name}: size protobuf ${kib(figures.protobufBytes)} vs JSON ${kib(figures.jsonBytes)}`,
    });
  }
  return { result, rows };
}
