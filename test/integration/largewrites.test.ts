/**
 * Large writes on a real server run in stages (src/registry/store.ts, STAGED_WRITE_BYTES in
 * src/endpoints/slicing.ts): a ConfigMap of 60,000 keys (about 1 MB, under kube's limit) is
 * created, updated, patched and applied as it would be in one piece, while small requests of
 * another logical cluster are answered between the stages instead of after the whole write.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { call, useTestServer, type TestServer } from '../helpers.js';

let srv: TestServer;
useTestServer((s) => { srv = s; });
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(srv, srv.creds, method, path, body, headers);

const KEYS = 60_000;
const LARGE = '/clusters/root/api/v1/namespaces/default/configmaps';

/** A ConfigMap of KEYS keys, every value `value`, as a request body. */
function largeConfigMap(value: string, resourceVersion?: string, name = 'large'): Buffer {
  const data: Record<string, string> = {};
  for (let k = 0; k < KEYS; k++) data[`k${k}`] = value;
  return Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) }, data }));
}

/** How many keys of `data` a managedFields entry of `manager` owns (`f:<key>` members of its `f:data`). */
function ownedDataKeys(obj: any, manager: string): number {
  const entry = (obj.metadata.managedFields ?? []).find((e: { manager: string }) => e.manager === manager);
  return Object.keys(entry?.fieldsV1?.['f:data'] ?? {}).filter((k) => k.startsWith('f:')).length;
}

/** A watch with an Accept header; resolves with its first `count` events (JSON lines). */
function watchEvents(path: string, accept: string, count: number): { events: Promise<any[]>; close(): void } {
  const u = new URL(srv.url + path);
  let close = (): void => undefined;
  const events = new Promise<any[]>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, ca: srv.creds.ca, cert: srv.creds.cert, key: srv.creds.key, agent: false, headers: { accept } }, (res) => {
      const got: any[] = [];
      let buf = '';
      res.on('data', (c: Buffer) => {
        // Frames of megabytes come in many chunks: look for the end of a line in the new one only.
        let from = buf.length;
        buf += c.toString();
        for (let nl = buf.indexOf('\n', from); nl >= 0; nl = buf.indexOf('\n')) {
          got.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          from = 0;
          if (got.length === count) { resolve(got); req.destroy(); }
        }
      });
    });
    req.on('error', (err) => { if (!(err as { code?: string }).code?.includes('ECONNRESET')) reject(err); });
    req.end();
    close = () => req.destroy();
  });
  return { events, close };
}

describe('watch events in a transformed form', () => {
  test('watches asking for the same form share it, other forms get theirs', async () => {
    const path = '/clusters/root/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dshared';
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io';
    const metadata = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io';
    const created = await api('POST', LARGE, { metadata: { name: 'shared' }, data: { a: '1' } });
    assert.equal(created.status, 201, created.body);
    const watches = [watchEvents(path, table, 2), watchEvents(path, table, 2), watchEvents(path, metadata, 2)];
    await new Promise((r) => setTimeout(r, 300));
    const updated = await api('PUT', `${LARGE}/shared`, { metadata: { name: 'shared' }, data: { a: '2' } });
    assert.equal(updated.status, 200, updated.body);
    const [t1, t2, m] = await Promise.all(watches.map((w) => w.events));
    for (const events of [t1!, t2!]) {
      assert.equal(events[1].type, 'MODIFIED');
      assert.equal(events[1].object.kind, 'Table');
      assert.equal(events[1].object.rows[0].object.metadata.resourceVersion, updated.json.metadata.resourceVersion);
    }
    assert.deepEqual(t1![1], t2![1], 'both Table watches got the same event');
    assert.equal(m![1].object.kind, 'PartialObjectMetadata');
    assert.equal(m![1].object.metadata.resourceVersion, updated.json.metadata.resourceVersion);
  });
});

describe('large writes in stages', () => {
  test('create, update, patch and apply give the results of a write in one piece', async () => {
    const created = await api('POST', LARGE, largeConfigMap('0'), { 'user-agent': 'writer/1' });
    assert.equal(created.status, 201, created.body.slice(0, 300));
    assert.equal(Object.keys(created.json.data).length, KEYS);
    assert.equal(ownedDataKeys(created.json, 'writer'), KEYS, 'the creator owns every key');

    const updated = await api('PUT', `${LARGE}/large`, largeConfigMap('1', created.json.metadata.resourceVersion), { 'user-agent': 'writer/1' });
    assert.equal(updated.status, 200, updated.body.slice(0, 300));
    assert.equal(updated.json.data.k59999, '1');
    assert.ok(Number(updated.json.metadata.resourceVersion) > Number(created.json.metadata.resourceVersion));
    const stale = await api('PUT', `${LARGE}/large`, largeConfigMap('2', created.json.metadata.resourceVersion));
    assert.equal(stale.status, 409, 'a stale resourceVersion is still a conflict');

    const patched = await api('PATCH', `${LARGE}/large`, { data: { k7: 'patched' } }, { 'content-type': 'application/merge-patch+json', 'user-agent': 'patcher/1' });
    assert.equal(patched.status, 200, patched.body.slice(0, 300));
    assert.equal(patched.json.data.k7, 'patched');
    assert.equal(patched.json.data.k8, '1');
    assert.equal(ownedDataKeys(patched.json, 'patcher'), 1, 'the patcher owns the key it changed');
    assert.equal(ownedDataKeys(patched.json, 'writer'), KEYS - 1, 'and the writer no longer does');

    const applied = await api('PATCH', `${LARGE}/large?fieldManager=applier&force=true`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'large' }, data: { k9: 'applied' } }, { 'content-type': 'application/apply-patch+yaml' });
    assert.equal(applied.status, 200, applied.body.slice(0, 300));
    assert.equal(applied.json.data.k9, 'applied');
    assert.equal(Object.keys(applied.json.data).length, KEYS);
  });

  test('concurrent unconditional updates all succeed, each attempt from the body as sent', async () => {
    const bodies = ['a', 'b', 'c'].map((v) => largeConfigMap(v));
    const results = await Promise.all(bodies.map((b) => api('PUT', `${LARGE}/large`, b)));
    for (const r of results) assert.equal(r.status, 200, r.body.slice(0, 300));
    const final = await api('GET', `${LARGE}/large`);
    const value = final.json.data.k0 as string;
    assert.ok(['a', 'b', 'c'].includes(value));
    assert.ok(Object.values(final.json.data as Record<string, string>).every((v) => v === value), 'one body whole, not a mix');
    assert.equal(final.json.data.k7, value, 'a retried attempt did not keep what an earlier attempt merged in');
  });

  test('watches get a large event written in later turns, still before the events after it', async () => {
    const cms = '/clusters/root/api/v1/namespaces/default/configmaps';
    const created = await api('POST', LARGE, largeConfigMap('0', undefined, 'watched'));
    assert.equal(created.status, 201, created.body.slice(0, 300));
    const small = await api('POST', cms, { metadata: { name: 'after-large' }, data: { a: '0' } });
    assert.equal(small.status, 201, small.body);
    // 8 watches: the large frame goes to them over several turns, and the small write's event
    // comes meanwhile.
    const watches = Array.from({ length: 8 }, () => watchEvents(`${cms}?watch=1&resourceVersion=${small.json.metadata.resourceVersion}`, 'application/json', 2));
    await new Promise((r) => setTimeout(r, 300));
    const large = await api('PUT', `${LARGE}/watched`, largeConfigMap('ordered', undefined, 'watched'));
    assert.equal(large.status, 200, large.body.slice(0, 300));
    const next = await api('PUT', `${cms}/after-large`, { metadata: { name: 'after-large' }, data: { a: '1' } });
    assert.equal(next.status, 200, next.body);
    for (const w of watches) {
      const events = await w.events;
      assert.deepEqual(events.map((e) => e.object.metadata.name), ['watched', 'after-large']);
      assert.equal(Object.keys(events[0].object.data).length, KEYS);
      assert.equal(events[1].object.metadata.resourceVersion, next.json.metadata.resourceVersion);
    }
  });

  test('another logical cluster is answered between the stages of a large write', async () => {
    const ws = await api('POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'other' } });
    assert.equal(ws.status, 201, ws.body);
    const small = '/clusters/root:other/api/v1/namespaces/default/configmaps';
    for (let i = 0; ; i++) {
      const r = await api('POST', small, { metadata: { name: 'small' } });
      if (r.status === 201) break;
      assert.ok(i < 100, `the workspace became usable: ${r.status} ${r.body}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const created = await api('POST', LARGE, largeConfigMap('0', undefined, 'probed'));
    assert.equal(created.status, 201, created.body.slice(0, 300));
    const body = largeConfigMap('x', undefined, 'probed');
    let writing = true;
    let answered = 0;
    const put = api('PUT', `${LARGE}/probed`, body).finally(() => { writing = false; });
    const probes = (async () => {
      while (writing) {
        const r = await api('GET', `${small}/small`);
        assert.equal(r.status, 200);
        if (writing) answered++;
      }
    })();
    const res = await put;
    await probes;
    assert.equal(res.status, 200, res.body.slice(0, 300));
    // In one piece the write held the loop from its first stage to its last: a GET sent meanwhile
    // was answered once at most, at the write's single await on Redis.
    assert.ok(answered >= 15, `${answered} GETs of the other workspace answered during the write`);
  });
});
