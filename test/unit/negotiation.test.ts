/**
 * Content negotiation as kube-apiserver's handlers/negotiation (src/endpoints/negotiation.ts) and
 * the protobuf framing of responses (src/endpoints/protobufwire.ts). The expectations were taken
 * from a kube-apiserver v1.34 answering the same Accept headers.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyReply } from 'fastify';
import { StatusError } from '../../src/apimachinery/errors.js';
import { send } from '../../src/endpoints/response.js';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf, encodeProtobufWatchEvent, protobufFieldHeader as fieldHeader, protobufWatchFrame as watchFrame } from '../../src/apimachinery/protobuf.js';
import { YAML_BLOCK_BUDGET, YAML_OUTPUT_OPTIONS, decodeApplyPatch, decodeBody, encodeBody, encodeYaml, negotiateOutput, negotiateStatus, yamlListParts, type Endpoint } from '../../src/endpoints/negotiation.js';
import { dump as dumpYaml } from 'js-yaml';
import { parse as parseYaml } from 'yaml';
import { hasProtobuf, protobufList } from '../../src/endpoints/protobufwire.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { watchEventEncoder } from '../../src/endpoints/handlers/watch.js';
import { decodeWatchEvent } from '../pbwire.js';
import type { Store } from '../../src/registry/store.js';
import type { CacheEntry } from '../../src/storage/watchcache.js';

const PB = 'application/vnd.kubernetes.protobuf';
const TYPED_ACCEPT = `${PB},application/json`;
const builtin: Endpoint = { shape: 'object', protobuf: true };
const builtinList: Endpoint = { shape: 'list', protobuf: true };
const custom: Endpoint = { shape: 'object', protobuf: false };
const customList: Endpoint = { shape: 'list', protobuf: false };

function refused(fn: () => unknown, code: number, message: string): void {
  assert.throws(fn, (err: unknown) => err instanceof StatusError && err.code === code && err.message === message);
}

describe('negotiateOutput', () => {
  test('protobuf for built-in kinds; what typed clients send picks it', () => {
    assert.equal(negotiateOutput(PB, builtin).media, 'protobuf');
    assert.equal(negotiateOutput(`${PB},application/json`, builtinList).media, 'protobuf');
    assert.equal(negotiateOutput(`${PB};stream=watch`, builtinList).media, 'protobuf');
    assert.equal(negotiateOutput(undefined, builtin).media, 'json');
    assert.equal(negotiateOutput('*/*', builtin).media, 'json');
    assert.equal(negotiateOutput('application/*', builtin).media, 'json');
  });

  test('custom resources skip the protobuf range for the next one; protobuf alone is 406 with kube\'s message', () => {
    assert.equal(negotiateOutput(`${PB},application/json`, custom).media, 'json');
    assert.equal(negotiateOutput(`${PB},application/yaml`, customList).media, 'yaml');
    refused(() => negotiateOutput(PB, custom), 406, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
    refused(() => negotiateOutput('text/plain', builtin), 406, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  });

  test('PartialObjectMetadata in protobuf, custom resources too (the metadata informer\'s Accept)', () => {
    const listAccept = `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json`;
    const listMeta = { media: 'json', as: 'PartialObjectMetadataList', asVersion: 'v1' } as const;
    assert.deepEqual(negotiateOutput(listAccept, customList), { ...listMeta, media: 'protobuf', fallback: listMeta });
    assert.deepEqual(negotiateOutput(`${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1`, custom), { media: 'protobuf', as: 'PartialObjectMetadata', asVersion: 'v1beta1' });
    const watchAccept = `${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json`;
    const meta = { media: 'json', as: 'PartialObjectMetadata', asVersion: 'v1' } as const;
    assert.deepEqual(negotiateOutput(watchAccept, { shape: 'watch', protobuf: false }), { ...meta, media: 'protobuf', fallback: meta });
    // A list asked for as one object's metadata (or the reverse) tries the next range.
    assert.deepEqual(negotiateOutput(`${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json`, builtinList), { media: 'json', asVersion: 'v1' });
  });

  test('as=Table is JSON or YAML only, as kube', () => {
    refused(() => negotiateOutput(`${PB};as=Table;v=v1;g=meta.k8s.io`, builtinList), 406, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
    assert.deepEqual(negotiateOutput(`${PB};as=Table;v=v1;g=meta.k8s.io,application/json`, builtinList), { media: 'json', asVersion: 'v1' });
    assert.deepEqual(negotiateOutput('application/json;as=Table;v=v1;g=meta.k8s.io', builtinList), { media: 'json', as: 'Table', asVersion: 'v1' });
    assert.deepEqual(negotiateOutput('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', { ...builtin, table: false }), { media: 'json', asVersion: 'v1' });
  });

  test('ranges in goautoneg order: q first, then concrete before wildcard', () => {
    assert.equal(negotiateOutput(`application/json;q=0.5,${PB}`, builtin).media, 'protobuf');
    assert.equal(negotiateOutput(`*/*,${PB}`, builtin).media, 'protobuf');
    assert.equal(negotiateOutput('application/yaml;q=abc,application/json;q=0.1', builtin).media, 'json');
  });

  test('a watch has no YAML form', () => {
    const watch: Endpoint = { shape: 'watch', protobuf: true };
    assert.equal(negotiateOutput(`${PB}`, watch).media, 'protobuf');
    refused(() => negotiateOutput('application/yaml,application/json', watch), 406,
      'only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch');
    refused(() => negotiateOutput(PB, { shape: 'watch', protobuf: false }), 406,
      'only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch');
  });
});

describe('fallback', () => {
  test('protobuf keeps the client\'s JSON alternative; an object the codec cannot write is answered in it', () => {
    assert.deepEqual(negotiateOutput(TYPED_ACCEPT, builtin).fallback, { media: 'json', asVersion: 'v1' });
    assert.equal(negotiateOutput(PB, builtin).fallback, undefined);
    // PartialObjectMetadata in protobuf, then the object itself in JSON: not the same answer, no fallback.
    assert.equal(negotiateOutput(`${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json`, builtin).fallback, undefined);
    const sent: { code?: number; type?: string; body?: unknown; warned?: boolean } = {};
    const reply = {
      code(c: number) { sent.code = c; return this; }, type(t: string) { sent.type = t; return this; }, send(b: unknown) { sent.body = b; return this; },
      log: { warn() { sent.warned = true; } },
    } as unknown as FastifyReply;
    const misfit = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: 5 } };
    send(reply, 200, misfit, negotiateOutput(TYPED_ACCEPT, builtin));
    assert.deepEqual([sent.code, sent.type, JSON.parse(String(sent.body)), sent.warned], [200, 'application/json', misfit, true]);
    assert.throws(() => send(reply, 200, misfit, negotiateOutput(PB, builtin)), (err: unknown) => err instanceof StatusError && err.code === 500);
  });
});

describe('YAML output', () => {
  test('strings a YAML 1.1 parser (go-yaml v2, Go clients) would read as another type stay strings', () => {
    const data: Record<string, string> = {};
    for (const s of ['on', 'off', 'yes', 'no', 'y', 'n', 'Y', 'True', 'NULL', '~', '', '123', '0x1F', '1e3', '0o17', '017', '1_000', '.inf', '-.NaN',
      '2026-11-28', '2026-11-28T10:00:00Z', '12:30:00', ' lead', 'trail ', 'a: b', '#c', '- x', '? q', '@at', '`t', '"q"', "'s'", 'multi\nline\n', '{a}', '[1]', '*alias', '&anchor', '!tag', '%pct', '|', '>', 'x'.repeat(300)]) data[s === '' ? 'empty' : s] = s;
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'q', labels: { on: 'off' }, annotations: undefined }, data, list: [1, 2.5, true, null, 'on'] };
    const text = encodeYaml(obj);
    const expected = JSON.parse(JSON.stringify(obj)) as unknown;
    assert.deepEqual(parseYaml(text, { version: '1.1' }), expected, 'read as YAML 1.1');
    assert.deepEqual(parseYaml(text), expected, 'read as YAML 1.2');
    assert.ok(!/^\s*annotations:/m.test(text), 'an undefined property is left out, as in JSON');
  });

  test('a deeply nested object does not grow by its indentation: flow style past 16 levels', () => {
    let deep: unknown = Array.from({ length: 2_000 }, () => 'a');
    for (let i = 0; i < 200; i++) deep = { k: deep };
    const json = JSON.stringify({ a: deep });
    const text = encodeYaml({ a: deep });
    assert.ok(text.length < 2 * json.length, `${text.length} characters of YAML for ${json.length} of JSON`);
    assert.equal(JSON.stringify(parseYaml(text)), json);
    const managed = { metadata: { managedFields: [{ fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"x"}': { 'f:resources': { 'f:limits': { 'f:cpu': {} } } } } } } } } }] } };
    assert.ok(!encodeYaml({ items: [managed] }).includes('{f:'), 'managedFields of a list item stay in block style');
  });

  test('a document too dear for js-yaml is its JSON text, which YAML 1.1 and 1.2 read as the same data', () => {
    // 700,000 numbers in 1.4 MB (a schema that preserves unknown fields takes them): js-yaml held
    // the loop for 0.7 s writing them; JSON.stringify takes a few milliseconds.
    const odd = 'del\u007f c1\u0085\u009f ls\u2028 ps\u2029 bom\ufeff nonchar\uffff tab\t quote" on';
    const big = { apiVersion: 'x.example.com/v1', kind: 'Blob', metadata: { name: 'big', labels: { on: 'off' } }, spec: { a: new Array(YAML_BLOCK_BUDGET).fill(0), s: odd, y: 'y' } };
    const text = encodeYaml(big);
    assert.ok(text.startsWith('{"apiVersion":"x.example.com/v1"'), text.slice(0, 80));
    assert.ok(!/[\u007f-\u009f\u2028\u2029\ufeff\uffff]/.test(text), 'no character a YAML stream may not hold raw, or that YAML 1.1 reads as a line break');
    assert.deepEqual(parseYaml(text, { version: '1.1' }), big, 'read as YAML 1.1');
    assert.deepEqual(parseYaml(text), big, 'read as YAML 1.2');
    // The stored text of a large object takes the same form without being decoded.
    const stored = JSON.stringify({ ...big, spec: { ...big.spec, a: new Array(25 * YAML_BLOCK_BUDGET).fill(0) } });
    const fromText = String(encodeBody('yaml', stored).body);
    assert.deepEqual(parseYaml(fromText, { version: '1.1' }), JSON.parse(stored));
    assert.ok(fromText.startsWith('{'));
    // Just within the budget: block style.
    assert.ok(encodeYaml({ a: new Array(YAML_BLOCK_BUDGET - 10).fill(0) }).startsWith('a:\n  - 0\n'));
  });

  test('a list in YAML: block entries make the text of the whole document, a dear entry is its JSON text alone', () => {
    const envelope = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '9' } };
    const items = Array.from({ length: 50 }, (_, i) => ({ metadata: { name: `cm-${i}`, labels: { on: 'yes' } }, data: { k: 'v\nw', n: '1_000' } }));
    const { head, entry } = yamlListParts(envelope, 'items');
    assert.equal(items.reduce((t, e) => t + entry(e), head), dumpYaml({ ...envelope, items }, YAML_OUTPUT_OPTIONS));
    const big = { metadata: { name: 'big' }, data: Object.fromEntries(Array.from({ length: YAML_BLOCK_BUDGET }, (_, i) => [`k${i}`, 'v'])) };
    const mixed = [items[0], big, items[1]];
    const text = mixed.reduce((t, e) => t + entry(e), head);
    assert.match(text, /\n {2}- \{"metadata":\{"name":"big"\}/);
    assert.match(text, /\n {2}- metadata:\n {6}name: cm-1\n/, 'the entry after it is in block style');
    assert.deepEqual(parseYaml(text, { version: '1.1' }), { ...envelope, items: mixed });
  });

  test('documents in the order of their keys, sequences indented under their key', () => {
    assert.equal(encodeYaml({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [{ a: 1 }] }), 'kind: List\napiVersion: v1\nmetadata:\n  resourceVersion: \'7\'\nitems:\n  - a: 1\n');
  });
});

describe('negotiateStatus', () => {
  test('an error Status follows Accept without transformations, JSON when nothing qualifies', () => {
    assert.equal(negotiateStatus(undefined), 'json');
    assert.equal(negotiateStatus(`${PB},application/json`), 'protobuf');
    assert.equal(negotiateStatus(PB), 'protobuf');
    assert.equal(negotiateStatus('application/yaml'), 'yaml');
    assert.equal(negotiateStatus(`${PB};as=Table;v=v1;g=meta.k8s.io`), 'json');
    assert.equal(negotiateStatus(`${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json`), 'json');
    assert.equal(negotiateStatus('text/plain'), 'json');
  });
});

describe('decodeBody', () => {
  test('a protobuf body where the kind has no protobuf form is 415 naming JSON and YAML', () => {
    const body = encodeKubernetesProtobuf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    refused(() => decodeBody(PB, body, 'Widget', { protobuf: false }), 415, 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
    assert.equal((decodeBody(PB, body, 'ConfigMap', { protobuf: true }) as { kind: string }).kind, 'ConfigMap');
    refused(() => decodeBody('text/plain', Buffer.from('x'), 'ConfigMap', { protobuf: true }), 415,
      'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  });
});

describe('protobuf framing', () => {
  test('fieldHeader writes the key and a varint length', () => {
    assert.deepEqual([...fieldHeader(2, 5)], [0x12, 5]);
    assert.deepEqual([...fieldHeader(1, 300)], [0x0a, 0xac, 0x02]);
    assert.deepEqual([...fieldHeader(2, 2 ** 31 + 1)], [0x12, 0x81, 0x80, 0x80, 0x80, 0x08]);
  });

  test('watchFrame around an encoded object is the codec\'s watch event, byte for byte', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', resourceVersion: '7' }, data: { a: 'x'.repeat(200) } };
    for (const type of ['ADDED', 'MODIFIED', 'DELETED']) {
      assert.deepEqual(watchFrame(type, encodeKubernetesProtobuf(cm)), encodeProtobufWatchEvent(type, cm));
    }
  });
});

describe('protobuf lists', () => {
  const configmaps = BUILTIN_RESOURCES.find((d) => d.kind === 'ConfigMap')!;
  const store = { desc: configmaps, decodeEntry: (e: CacheEntry) => JSON.parse(e.json) } as unknown as Store;
  const entry = (name: string, cluster = 'c1'): CacheEntry => ({ key: name, groupResource: '/configmaps', cluster, namespace: 'n', name, rv: 5, labels: undefined,
    json: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'n', resourceVersion: '5' }, data: { k: name } }) });

  test('an empty list is byte for byte what kube-apiserver v1.34 answered', async () => {
    const { parts, length } = await protobufList(store, [], { resourceVersion: '200' }, { media: 'protobuf', asVersion: 'v1' }, false, false);
    const bytes = Buffer.concat(parts);
    assert.equal(bytes.length, length);
    assert.equal(bytes.toString('hex'), '6b3873000a130a02763112' + '0d' + Buffer.from('ConfigMapList').toString('hex') + '120b0a090a001203323030' + '1a00' + '1a002200');
  });

  test('items in parts of about a slice, decoded back whole; wildcard items annotated; PartialObjectMetadataList', async () => {
    const entries = Array.from({ length: 3000 }, (_, i) => entry(`cm-${i}-${'x'.repeat(100)}`));
    const { parts, length } = await protobufList(store, entries, { resourceVersion: '9' }, { media: 'protobuf', asVersion: 'v1' }, true, true);
    assert.ok(parts.length > 3, `${parts.length} parts`);
    const list = decodeKubernetesProtobuf(Buffer.concat(parts, length)) as any;
    assert.equal(list.items.length, 3000);
    assert.equal(list.items[2999].metadata.annotations['kcp.io/cluster'], 'c1');
    assert.equal(list.items[10].data.k, entries[10]!.name);
    const meta = decodeKubernetesProtobuf(Buffer.concat((await protobufList(store, entries.slice(0, 2), {}, { media: 'protobuf', as: 'PartialObjectMetadataList', asVersion: 'v1' }, false, false)).parts)) as any;
    assert.equal(meta.kind, 'PartialObjectMetadataList');
    assert.deepEqual(meta.items.map((i: any) => [i.metadata.name === entries[0]!.name || i.metadata.name === entries[1]!.name, i.data]), [[true, undefined], [true, undefined]]);
  });

  test('only built-in kinds have a protobuf form', () => {
    assert.equal(hasProtobuf(configmaps), true);
    assert.equal(hasProtobuf(configmaps, true), true);
    assert.equal(hasProtobuf({ ...configmaps }), false); // a descriptor not among the built-ins (a CRD reusing the name)
    const workspaces = BUILTIN_RESOURCES.find((d) => d.group === 'tenancy.kcp.io');
    if (workspaces) assert.equal(hasProtobuf(workspaces), false);
  });
});

describe('watch event encoders', () => {
  const configmaps = BUILTIN_RESOURCES.find((d) => d.kind === 'ConfigMap')!;
  const store = { desc: configmaps, decodeEntry: (e: CacheEntry) => JSON.parse(e.json), renderEntry: (e: CacheEntry) => e.json } as unknown as Store;
  const e: CacheEntry = { key: 'k', groupResource: '/configmaps', cluster: 'c1', namespace: 'n', name: 'a', rv: 5, labels: undefined,
    json: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'n', resourceVersion: '5' }, data: { k: 'v' } }) };
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'conversion webhook failed', reason: 'InternalError', code: 500 };
  const frame = (b: string | Buffer) => { assert.ok(Buffer.isBuffer(b)); assert.equal(b.readUInt32BE(0), b.length - 4); return decodeWatchEvent(b.subarray(4)); };

  test('protobuf: events, bookmarks (the kind with only resourceVersion and annotations), an ERROR carrying a Status', () => {
    const pb = watchEventEncoder(store, { media: 'protobuf', asVersion: 'v1' }, 'None', false);
    assert.equal(pb.contentType, 'application/vnd.kubernetes.protobuf;stream=watch');
    const added = frame(pb.event('ADDED', e));
    assert.deepEqual([added.type, added.object.kind, added.object.data], ['ADDED', 'ConfigMap', { k: 'v' }]);
    assert.ok(pb.event('MODIFIED', e).subarray(4 + 10).equals(pb.event('ADDED', e).subarray(4 + 7)), 'one encoding of the object for every event');
    const bookmark = frame(pb.bookmark(42, true));
    assert.equal(bookmark.type, 'BOOKMARK');
    assert.deepEqual(bookmark.object.metadata, { resourceVersion: '42', annotations: { 'k8s.io/initial-events-end': 'true' } });
    const error = frame(pb.error(status));
    assert.deepEqual([error.type, error.object.kind, error.object.message, error.object.code], ['ERROR', 'Status', 'conversion webhook failed', 500]);
    const meta = watchEventEncoder(store, { media: 'protobuf', as: 'PartialObjectMetadata', asVersion: 'v1' }, 'None', true);
    const pom = frame(meta.event('DELETED', e)).object;
    assert.deepEqual([pom.kind, pom.metadata.annotations['kcp.io/cluster'], pom.data], ['PartialObjectMetadata', 'c1', undefined]);
    assert.equal(frame(meta.bookmark(7, false)).object.kind, 'PartialObjectMetadata');
  });

  test('JSON: the same events as lines', () => {
    const json = watchEventEncoder(store, { media: 'json', asVersion: 'v1' }, 'Metadata', false);
    assert.equal(json.contentType, 'application/json');
    assert.deepEqual(JSON.parse(json.event('ADDED', e) as string), { type: 'ADDED', object: JSON.parse(e.json) });
    assert.deepEqual(JSON.parse(json.bookmark(42, false) as string), { type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '42' } } });
    assert.deepEqual(JSON.parse(json.error(status) as string), { type: 'ERROR', object: status });
  });
});

// The reports below are go-yaml v2's (sigs.k8s.io/yaml v1.6.0 YAMLToJSONStrict) for the same texts.
test('decodeApplyPatch: repeated keys keep the last value and are reported as go-yaml\'s strict decoding does (value line, value first)', () => {
  const yaml = decodeApplyPatch(Buffer.from('a: 1\nspec:\n  x: 1\n  x: 2\nspec:\n  z: 2\n  z: 3\n1: a\n1: b\n'));
  assert.deepEqual(yaml.value, { 1: 'b', a: 1, spec: { z: 3 } });
  assert.deepEqual(yaml.repeatedKeys, [
    'line 4: key "x" already set in map',
    'line 7: key "z" already set in map',
    'line 6: key "spec" already set in map',
    'line 9: key 1 already set in map',
  ]);
  const spec = decodeApplyPatch(Buffer.from('\napiVersion: a/v1\nkind: K\nmetadata:\n  name: n\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n'));
  assert.deepEqual(spec.repeatedKeys, ['line 9: key "foo" already set in map']);
  const json = decodeApplyPatch(Buffer.from('{"a":1,\n"b":{"c":1,"c":\n2},"b":{"x":[1,{"y":1,"y":2}]}, "a": null}'));
  assert.deepEqual(json.value, { a: null, b: { x: [1, { y: 2 }] } });
  assert.deepEqual(json.repeatedKeys, [
    'line 3: key "c" already set in map',
    'line 3: key "y" already set in map',
    'line 3: key "b" already set in map',
    'line 3: key "a" already set in map',
  ]);
  assert.deepEqual(decodeApplyPatch(Buffer.from('{"a\\"q":1,"a\\"q":true}')).repeatedKeys, ['line 1: key "a\\"q" already set in map']);
  assert.deepEqual(decodeApplyPatch(Buffer.from('kind: K\n')).repeatedKeys, []);
  // Bounded: the first 100 reports of a body that repeats more.
  const repeats = decodeApplyPatch(Buffer.from('a: 0\n'.repeat(150)));
  assert.equal(repeats.repeatedKeys.length, 100);
  assert.equal(repeats.repeatedKeys[99], 'line 101: key "a" already set in map');
  assert.equal(decodeApplyPatch(Buffer.from(`{${'"a":0,'.repeat(150)}"b":1}`)).repeatedKeys.length, 100);
  assert.throws(() => decodeApplyPatch(Buffer.from('a: [1\n')), (e: unknown) => e instanceof StatusError && e.code === 400 && /^error decoding YAML: /.test(e.message));
});
