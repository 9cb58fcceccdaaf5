/**
 * The root CA publisher's reconcile decisions (kube's syncNamespace), on a watch cache made of
 * plain entries and a store that records writes: create when missing, rewrite data and annotation
 * when they differ (other keys dropped, other annotations kept), nothing when up to date, nothing
 * in a terminating or missing namespace, an immutable ConfigMap's 422 not retried, a quota's 403
 * retried.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/apimachinery/errors.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { Store } from '../../src/registry/store.js';
import { CONFIGMAPS_GR, DESCRIPTION_ANNOTATION, ROOT_CA_CONFIGMAP, ROOT_CA_DESCRIPTION, rootCAConfigMap, rootCAPublisherReconciler, upToDate } from '../../src/controllers/rootcacertpublisher/controller.js';
import { NAMESPACES_GR } from '../../src/controllers/namespace/controller.js';

const BUNDLE = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function setup(objects: Record<string, unknown>, fail?: StatusError) {
  const writes: Array<{ verb: string; obj: KubeObject }> = [];
  const cache = {
    getEntry(gr: string, cluster: string, ns: string, name: string) {
      const o = objects[`${gr}|${cluster}|${ns}|${name}`];
      return o === undefined ? undefined : { json: JSON.stringify(o) } as never;
    },
  };
  const store = {
    async create(_s: unknown, obj: KubeObject) { if (fail) throw fail; writes.push({ verb: 'create', obj }); return ''; },
    async update(_s: unknown, _n: string, obj: KubeObject) { if (fail) throw fail; writes.push({ verb: 'update', obj }); return { json: '', created: false }; },
  } as unknown as Store;
  const reconcile = rootCAPublisherReconciler({ configMaps: store, cache, scope: (cluster) => ({ cluster, user: { name: 'system:admin', groups: [] } }), bundle: () => BUNDLE });
  return { writes, reconcile };
}
const ns = (name: string, extra: object = {}) => ({ [`${NAMESPACES_GR}|c||${name}`]: { metadata: { name }, status: { phase: 'Active' }, ...extra } });
const cm = (namespace: string, o: object) => ({ [`${CONFIGMAPS_GR}|c|${namespace}|${ROOT_CA_CONFIGMAP}`]: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ROOT_CA_CONFIGMAP, namespace, resourceVersion: '7' }, ...o } });

test('missing: created with kube\'s annotation and exactly ca.crt', async () => {
  const { writes, reconcile } = setup({ ...ns('a') });
  await reconcile('c|a');
  assert.deepEqual(writes, [{ verb: 'create', obj: rootCAConfigMap('a', BUNDLE) }]);
  assert.equal(writes[0]!.obj.metadata.annotations![DESCRIPTION_ANNOTATION], ROOT_CA_DESCRIPTION);
});

test('up to date: no write; changed data or an empty annotation: rewritten, other annotations kept', async () => {
  const good = { data: { 'ca.crt': BUNDLE }, metadata: { name: ROOT_CA_CONFIGMAP, annotations: { [DESCRIPTION_ANNOTATION]: 'anything' } } };
  assert.equal(upToDate(good as unknown as KubeObject, BUNDLE), true);
  const ok = setup({ ...ns('a'), ...cm('a', { metadata: { ...good.metadata, namespace: 'a', resourceVersion: '7' }, data: good.data }) });
  await ok.reconcile('c|a');
  assert.deepEqual(ok.writes, []);
  const changed = setup({ ...ns('a'), ...cm('a', { metadata: { name: ROOT_CA_CONFIGMAP, namespace: 'a', resourceVersion: '7', annotations: { [DESCRIPTION_ANNOTATION]: '', mine: 'x' } }, data: { 'ca.crt': BUNDLE, extra: 'y' } }) });
  await changed.reconcile('c|a');
  assert.equal(changed.writes.length, 1);
  const w = changed.writes[0]!.obj;
  assert.deepEqual(w.data, { 'ca.crt': BUNDLE });
  assert.deepEqual(w.metadata.annotations, { [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION, mine: 'x' });
  assert.equal(w.metadata.resourceVersion, '7', 'the update is a compare-and-swap on what was read');
});

test('terminating or missing namespace: nothing; refusals that a retry cannot fix are not retried', async () => {
  for (const objects of [{}, ns('a', { metadata: { name: 'a', deletionTimestamp: '2026-01-01T00:00:00Z' } }), ns('a', { status: { phase: 'Terminating' } })]) {
    const { writes, reconcile } = setup(objects);
    await reconcile('c|a');
    assert.deepEqual(writes, []);
  }
  const terminating = new StatusError(403, 'Forbidden', 'terminated', { name: 'a', kind: 'namespaces', causes: [{ reason: 'NamespaceTerminating', message: 'm', field: 'metadata.namespace' }] });
  for (const err of [terminating, new StatusError(404, 'NotFound', 'gone'), new StatusError(422, 'Invalid', 'immutable')]) {
    const { reconcile } = setup({ ...ns('a') }, err);
    await assert.doesNotReject(reconcile('c|a'));
  }
  // Retried with backoff: a conflict, and a quota's (or a policy's) 403.
  for (const err of [new StatusError(409, 'Conflict', 'stale'), new StatusError(403, 'Forbidden', 'exceeded quota')]) {
    const { reconcile } = setup({ ...ns('a') }, err);
    await assert.rejects(reconcile('c|a'), new RegExp(err.message));
  }
});
