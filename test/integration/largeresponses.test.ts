/**
 * Large LIST and watch-initialisation responses on a real server: produced in slices
 * (src/endpoints/slicing.ts) yet byte for byte what a client expects — every object once, in
 * order, the initial-events bookmark after them and later events after it.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { dump as dumpYaml } from 'js-yaml';
import { YAML_OUTPUT_OPTIONS } from '../../src/endpoints/negotiation.js';
import { call, watch, useTestServer, type TestServer } from '../helpers.js';

let srv: TestServer;
useTestServer((s) => { srv = s; });
const NS = '/clusters/root/api/v1/namespaces/default';
const COUNT = 1200;
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(srv, srv.creds, method, path, body, headers);

/** Asserts two long texts are equal, showing where they first differ (not both whole). */
function assertSameText(actual: string, expected: string, what: string): void {
  if (actual === expected) return;
  let i = 0;
  while (i < actual.length && actual[i] === expected[i]) i++;
  assert.fail(`${what}: differs at character ${i} of ${expected.length} (got ${actual.length}):\n got:      ${JSON.stringify(actual.slice(Math.max(0, i - 80), i + 80))}\n expected: ${JSON.stringify(expected.slice(Math.max(0, i - 80), i + 80))}`);
}

describe('large responses in slices', () => {
  before(async () => {
    const pad = 'x'.repeat(1024);
    for (let i = 0; i < COUNT; i += 50) {
      const batch = Array.from({ length: Math.min(50, COUNT - i) }, (_, j) => api('POST', `${NS}/configmaps`, { metadata: { name: `big-${String(i + j).padStart(5, '0')}` }, data: { pad } }));
      for (const r of await Promise.all(batch)) assert.equal(r.status, 201, r.body);
    }
  });

  test('a 1.2 MB list is one valid document with every object once', async () => {
    const r = await api('GET', `${NS}/configmaps`);
    assert.equal(r.status, 200);
    assert.ok(r.body.length > COUNT * 1024, `${r.body.length} bytes`);
    assert.equal(r.json.kind, 'ConfigMapList');
    assert.match(r.json.metadata.resourceVersion, /^\d+$/);
    const names = r.json.items.map((o: { metadata: { name: string } }) => o.metadata.name).filter((n: string) => n.startsWith('big-'));
    assert.equal(names.length, COUNT);
    assert.equal(new Set(names).size, COUNT);
  });

  test('a large Table list (kubectl get) is complete', async () => {
    const r = await api('GET', `${NS}/configmaps`, undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    assert.equal(r.status, 200);
    assert.equal(r.json.kind, 'Table');
    assert.equal(r.json.rows.filter((row: { cells: string[] }) => String(row.cells[0]).startsWith('big-')).length, COUNT);
  });

  test('a large YAML list is the text of the whole document, and other requests are answered while it is produced', async () => {
    const json = await api('GET', `${NS}/configmaps`);
    const { creds } = srv;
    const u = new URL(`${srv.url}${NS}/configmaps`);
    let smallAnsweredAt = 0;
    const yaml = await new Promise<{ text: string; contentType: string; endedAt: number }>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, ca: creds.ca, cert: creds.cert, key: creds.key, agent: false, headers: { accept: 'application/yaml' } }, (res) => {
        // The answer has begun: a small request sent now is answered between its slices, not after it.
        void api('GET', `${NS}/configmaps/big-00000`).then((r) => { assert.equal(r.status, 200); smallAnsweredAt = performance.now(); });
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ text: Buffer.concat(chunks).toString(), contentType: String(res.headers['content-type']), endedAt: performance.now() }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(yaml.contentType, 'application/yaml');
    assertSameText(yaml.text, dumpYaml(json.json, YAML_OUTPUT_OPTIONS), 'the YAML list against the whole list rendered at once');
    assert.ok(smallAnsweredAt > 0 && smallAnsweredAt < yaml.endedAt, 'a GET sent after the YAML list began was answered before it ended');
  });

  test('a bad includeObject on a large Table list is a 400 Status before anything is written', async () => {
    const r = await api('GET', `${NS}/configmaps?includeObject=Everything`, undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    assert.equal(r.status, 400);
    assert.equal(r.json.kind, 'Status');
    assert.equal(r.json.reason, 'BadRequest');
    assert.match(r.json.message, /includeObject: Unsupported value: "Everything"/);
  });

  test('a large metadata-only list in YAML is the text of the whole document', async () => {
    const accept = (media: string) => ({ accept: `${media};as=PartialObjectMetadataList;v=v1;g=meta.k8s.io` });
    const json = await api('GET', `${NS}/configmaps`, undefined, accept('application/json'));
    assert.equal(json.json.kind, 'PartialObjectMetadataList');
    assert.equal(json.json.items.filter((o: { metadata: { name: string } }) => o.metadata.name.startsWith('big-')).length, COUNT);
    const yaml = await api('GET', `${NS}/configmaps`, undefined, accept('application/yaml'));
    assert.equal(yaml.status, 200);
    assertSameText(yaml.body, dumpYaml(json.json, YAML_OUTPUT_OPTIONS), 'the YAML metadata-only list against the whole list rendered at once');
  });

  test('watch initial events: every object, then the bookmark, then later events in order', async () => {
    const w = watch(srv, srv.creds, `${NS}/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`);
    // Written while the initial events are still going out: must come after the bookmark.
    const created = api('POST', `${NS}/configmaps`, { metadata: { name: 'during-init' }, data: {} });
    assert.equal((await created).status, 201);
    const events = await w.waitFor(COUNT + 3, 20_000);
    w.close();
    const end = events.findIndex((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true');
    assert.ok(end > 0, 'initial-events-end bookmark sent');
    const initial = events.slice(0, end);
    assert.ok(initial.every((e) => e.type === 'ADDED'));
    assert.equal(initial.filter((e) => e.object.metadata.name.startsWith('big-')).length, COUNT);
    const later = events.slice(end + 1).filter((e) => e.type !== 'BOOKMARK');
    const during = [...initial, ...later].filter((e) => e.object.metadata.name === 'during-init');
    assert.equal(during.length, 1, 'the object written meanwhile is delivered once');
    // Resource versions never go back after the bookmark.
    const rvs = later.map((e) => Number(e.object.metadata.resourceVersion));
    assert.deepEqual(rvs, [...rvs].sort((a, b) => a - b));
  });
});
