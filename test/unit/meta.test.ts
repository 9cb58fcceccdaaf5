/**
 * withClusterAnnotation: the kcp.io/cluster annotation spliced into stored JSON must give the
 * same object as parsing, annotating and serialising, whatever the object looks like.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withClusterAnnotation } from '../../src/apimachinery/meta.js';

const slow = (o: any, cluster: string) => ({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, 'kcp.io/cluster': cluster } } });

test('the kcp.io/cluster annotation is spliced in exactly where parsing would put it', () => {
  const cases: any[] = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', annotations: {} } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', annotations: { x: 'y', 'quote"d': 'a\\"annotations":{' } } },
    // A nested annotations map (a pod template) before and after metadata.
    { spec: { template: { metadata: { annotations: { inner: '1' } } } }, metadata: { name: 'a' }, status: { annotations: { s: '2' } } },
    { metadata: { name: 'a', labels: { annotations: 'x' }, managedFields: [{ fieldsV1: { 'f:metadata': { 'f:annotations': {} } } }], annotations: { z: '1' } } },
    // Already annotated (by a client): replaced, not duplicated.
    { metadata: { name: 'a', annotations: { 'kcp.io/cluster': 'wrong' } } },
    { kind: 'Weird', metadata: { name: 'a', annotations: { '{': '}' } }, data: { 'metadata': '{"annotations":{}}' } },
  ];
  for (const o of cases) {
    const out = withClusterAnnotation(JSON.stringify(o), 'c1');
    assert.deepEqual(JSON.parse(out), slow(o, 'c1'), JSON.stringify(o));
    assert.equal((out.match(/"kcp\.io\/cluster"/g) ?? []).length, 1);
  }
});
