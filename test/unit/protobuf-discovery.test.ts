/**
 * The protobuf messages served besides the kinds' own, against client-go's scheme through protoref
 * (test/tools/kube/cmd/protoref): meta.k8s.io/v1beta1 PartialObjectMetadataList (its own layout,
 * items = 1 and metadata = 2) and the discovery documents — `/api` APIVersions (empty apiVersion in
 * the envelope), APIGroupList, APIGroup, APIResourceList and aggregated discovery's
 * APIGroupDiscoveryList (apidiscovery.k8s.io v2 and v2beta1), built by the server's own discovery
 * functions over the built-in resources. Byte for byte, and both ways.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeKubernetesProtobuf, encodeKubernetesProtobuf, encodeProtobufMessage, protobufMessageFor, PROTOBUF_SCHEMA,
} from '../../src/apimachinery/protobuf.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { aggregatedDiscovery, apiGroupDoc, apiGroupList, apiResourceList, apiVersions } from '../../src/endpoints/discovery.js';
import { goDecode, goEncode, protoref } from '../protoref.js';

/** JSON text with the top-level `kind`/`apiVersion` order normalised (Go writes kind first). */
function canonical(obj: Record<string, unknown>): string {
  const { apiVersion, kind, ...rest } = obj;
  return JSON.stringify({ apiVersion, kind, ...rest });
}

/** Our bytes are Go's bytes; Go reads ours back to the object; we read Go's to Go's JSON. */
function assertGoBytes(obj: Record<string, unknown>): void {
  assert.ok(protobufMessageFor(obj.apiVersion as string, obj.kind as string), `a protobuf kind: ${obj.apiVersion as string} ${obj.kind as string}`);
  const ours = encodeKubernetesProtobuf(obj);
  const go = goEncode(obj);
  assert.equal(ours.toString('hex'), go.toString('hex'));
  const goFromOurs = goDecode(ours);
  assert.deepEqual(goFromOurs, JSON.parse(JSON.stringify(obj)));
  assert.equal(canonical(decodeKubernetesProtobuf(go)), canonical(goFromOurs));
}

const DESCS = [...BUILTIN_RESOURCES];

test('meta.k8s.io/v1beta1 PartialObjectMetadataList is its own message: items = 1, metadata = 2 (not v1\'s layout)', () => {
  assert.equal(protobufMessageFor('meta.k8s.io/v1beta1', 'PartialObjectMetadataList'), 'meta.v1beta1.PartialObjectMetadataList');
  assert.equal(protobufMessageFor('meta.k8s.io/v1', 'PartialObjectMetadataList'), 'meta.v1.PartialObjectMetadataList');
  const fields = Object.fromEntries(PROTOBUF_SCHEMA['meta.v1beta1.PartialObjectMetadataList']!.map((f) => [f.json, f.no]));
  assert.deepEqual(fields, { items: 1, metadata: 2 });
  const list = {
    apiVersion: 'meta.k8s.io/v1beta1', kind: 'PartialObjectMetadataList', metadata: { resourceVersion: '5', continue: 'c' },
    items: [
      { metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '4', creationTimestamp: '2025-03-04T05:06:07Z', labels: { x: 'y' } } },
      { metadata: { name: 'b', namespace: 'ns', resourceVersion: '5', creationTimestamp: '2025-03-04T05:06:08Z' } },
    ],
  };
  assertGoBytes(list);
  // The first field of the message is an item (tag 0x0a), as Go writes it.
  const message = encodeProtobufMessage('meta.v1beta1.PartialObjectMetadataList', list);
  assert.equal(message[0], 0x0a);
});

test('/api APIVersions: Go\'s bytes with the empty apiVersion kube\'s discovery stripVersionEncoder writes', () => {
  const doc = apiVersions('10.0.0.1:6443') as Record<string, unknown>;
  assert.equal(doc.apiVersion, undefined, 'JSON has no apiVersion');
  const ours = encodeKubernetesProtobuf({ ...doc, apiVersion: '' });
  const go = protoref(['encode', '--strip-version'], JSON.stringify({ ...doc, apiVersion: 'v1' }));
  assert.equal(ours.toString('hex'), go.toString('hex'));
  // The envelope's typeMeta: apiVersion = 1 empty, kind = 2 "APIVersions".
  assert.ok(ours.includes(Buffer.concat([Buffer.from([0x0a, 0x00, 0x12, 'APIVersions'.length]), Buffer.from('APIVersions')])));
  // As unversioned v1, the same message.
  assertGoBytes({ ...doc, apiVersion: 'v1' });
});

test('/apis APIGroupList, /apis/<group> APIGroup: Go\'s bytes', () => {
  assertGoBytes(apiGroupList(DESCS) as Record<string, unknown>);
  assertGoBytes(apiGroupDoc(DESCS, 'rbac.authorization.k8s.io') as Record<string, unknown>);
});

test('APIResourceList of every built-in group version (verbs a wrapper message, subresources with their group and version): Go\'s bytes', () => {
  const gvs = new Set(DESCS.map((d) => `${d.group}|${d.version}`));
  assert.ok(gvs.size > 5);
  for (const gv of gvs) {
    const [group, version] = gv.split('|') as [string, string];
    assertGoBytes(apiResourceList(DESCS, group, version) as Record<string, unknown>);
  }
  // nil verbs are no field at all; empty verbs an empty wrapper (meta/v1 Verbs, written iff non-nil).
  const r = { name: 'x', singularName: 'x', namespaced: false, kind: 'X' };
  assertGoBytes({ apiVersion: 'v1', kind: 'APIResourceList', groupVersion: 'v1', resources: [{ ...r, verbs: [] }, { ...r, verbs: null }] });
});

test('aggregated discovery APIGroupDiscoveryList (apidiscovery.k8s.io v2 and v2beta1, /api and /apis): Go\'s bytes', () => {
  for (const version of ['v2', 'v2beta1']) {
    for (const legacy of [true, false]) {
      assertGoBytes(aggregatedDiscovery(DESCS, legacy, version) as Record<string, unknown>);
    }
  }
});
