/**
 * REST semantics against a real server on a real Redis, over HTTPS with client certificates.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { createCA, issueClientCert } from '../../src/pki/certs.js';
import { CM, call, eventually, watch, sleep, type TestServer, createLogicalCluster, useTestServer, waitForRootCA, withoutRootCA } from '../helpers.js';

let srv: TestServer;
const NS = '/clusters/root/api/v1/namespaces/default';

useTestServer((s) => { srv = s; });

const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(srv, srv.creds, method, path, body, headers);

describe('create, get, list', () => {
  test('create sets server fields; get returns the stored object', async () => {
    const r = await api('POST', `${NS}/configmaps`, CM('c1', { k: 'v' }));
    assert.equal(r.status, 201);
    const m = r.json.metadata;
    assert.match(m.uid, /^[0-9a-f-]{36}$/);
    assert.match(m.resourceVersion, /^\d+$/);
    assert.match(m.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(m.namespace, 'default');
    const g = await api('GET', `${NS}/configmaps/c1`);
    assert.equal(g.status, 200);
    assert.deepEqual(g.json, r.json);
  });

  test('generateName produces a unique name', async () => {
    const r = await api('POST', `${NS}/configmaps`, { metadata: { generateName: 'gen-' }, data: {} });
    assert.equal(r.status, 201);
    assert.match(r.json.metadata.name, /^gen-[a-z0-9]{5}$/);
  });

  test('duplicate create is 409 AlreadyExists', async () => {
    const r = await api('POST', `${NS}/configmaps`, CM('c1'));
    assert.equal(r.status, 409);
    assert.equal(r.json.reason, 'AlreadyExists');
    assert.equal(r.json.kind, 'Status');
  });

  test('list paging with limit/continue is consistent at one resourceVersion', async () => {
    await api('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'paging' } });
    // The namespace's kube-root-ca.crt (root CA publisher) sorts first: listed with the rest.
    await waitForRootCA(srv, srv.creds, 'root', 'paging');
    for (let i = 0; i < 7; i++) assert.equal((await api('POST', '/clusters/root/api/v1/namespaces/paging/configmaps', CM(`p${i}`))).status, 201);
    const first = await api('GET', '/clusters/root/api/v1/namespaces/paging/configmaps?limit=3');
    assert.equal(first.json.items.length, 3);
    assert.equal(first.json.metadata.remainingItemCount, 5);
    const rv = first.json.metadata.resourceVersion;
    // A write between pages must not show up in later pages of the same list.
    await api('POST', '/clusters/root/api/v1/namespaces/paging/configmaps', CM('p3a'));
    await api('DELETE', '/clusters/root/api/v1/namespaces/paging/configmaps/p5');
    const names: string[] = first.json.items.map((i: any) => i.metadata.name);
    let cont = first.json.metadata.continue;
    while (cont) {
      const page = await api('GET', `/clusters/root/api/v1/namespaces/paging/configmaps?limit=3&continue=${encodeURIComponent(cont)}`);
      assert.equal(page.status, 200);
      assert.equal(page.json.metadata.resourceVersion, rv);
      names.push(...page.json.items.map((i: any) => i.metadata.name));
      cont = page.json.metadata.continue;
    }
    assert.deepEqual(names, ['kube-root-ca.crt', 'p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
  });

  test('label selectors (equality and set-based) and field selectors', async () => {
    await api('POST', `${NS}/configmaps`, CM('l1', {}, { app: 'web', tier: 'front' }));
    await api('POST', `${NS}/configmaps`, CM('l2', {}, { app: 'web', tier: 'back' }));
    await api('POST', `${NS}/configmaps`, CM('l3', {}, { app: 'db' }));
    const names = async (q: string) => (await api('GET', `${NS}/configmaps?${q}`)).json.items.map((i: any) => i.metadata.name).sort();
    assert.deepEqual(await names('labelSelector=app%3Dweb'), ['l1', 'l2']);
    assert.deepEqual(await names(`labelSelector=${encodeURIComponent('app in (web,db),tier notin (back)')}`), ['l1', 'l3']);
    assert.deepEqual(await names(`labelSelector=${encodeURIComponent('!tier,app')}`), ['l3']);
    assert.deepEqual(await names('fieldSelector=metadata.name%3Dl2'), ['l2']);
    const bad = await api('GET', `${NS}/configmaps?labelSelector=${encodeURIComponent('app in (')}`);
    assert.equal(bad.status, 400);
    const badField = await api('GET', `${NS}/configmaps?fieldSelector=spec.foo%3D1`);
    assert.equal(badField.status, 400);
    assert.match(badField.json.message, /field label not supported/);
  });

  test('Table and PartialObjectMetadata output', async () => {
    const t = await api('GET', `${NS}/configmaps`, undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' });
    assert.equal(t.json.kind, 'Table');
    assert.deepEqual(t.json.columnDefinitions.map((c: any) => c.name), ['Name', 'Data', 'Age']);
    const row = t.json.rows.find((r: any) => r.cells[0] === 'c1');
    assert.equal(row.cells[1], 1);
    assert.equal(row.object.kind, 'PartialObjectMetadata');
    const p = await api('GET', `${NS}/configmaps/c1`, undefined, { accept: 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io' });
    assert.equal(p.json.kind, 'PartialObjectMetadata');
    assert.equal(p.json.metadata.name, 'c1');
    assert.equal(p.json.data, undefined);
    const yaml = await api('GET', `${NS}/configmaps/c1`, undefined, { accept: 'application/yaml' });
    assert.match(yaml.body, /^apiVersion: v1\n/);
  });
});

describe('update, patch, delete', () => {
  test('update with a stale resourceVersion is 409 Conflict; current one succeeds', async () => {
    const c = (await api('POST', `${NS}/configmaps`, CM('u1'))).json;
    const ok = await api('PUT', `${NS}/configmaps/u1`, { ...c, data: { a: '2' } });
    assert.equal(ok.status, 200);
    assert.notEqual(ok.json.metadata.resourceVersion, c.metadata.resourceVersion);
    const stale = await api('PUT', `${NS}/configmaps/u1`, { ...c, data: { a: '3' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.json.reason, 'Conflict');
    assert.equal((await api('GET', `${NS}/configmaps/u1`)).json.data.a, '2');
  });

  test('an update without a resourceVersion is unconditional: concurrent ones all succeed, the last written wins', async () => {
    await api('POST', `${NS}/configmaps`, CM('u2'));
    // Each PUT's read and write interleave with the others': without a resourceVersion none may
    // answer 409 (kube's GuaranteedUpdate starts again from the newer object).
    const puts = await Promise.all(Array.from({ length: 40 }, (_, i) => api('PUT', `${NS}/configmaps/u2`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'u2' }, data: { i: String(i) } })));
    assert.deepEqual(puts.map((r) => r.status), puts.map(() => 200), puts.map((r) => r.body).filter((b) => b.includes('Conflict')).join('\n'));
    const last = puts.reduce((a, b) => (Number(b.json.metadata.resourceVersion) > Number(a.json.metadata.resourceVersion) ? b : a));
    assert.deepEqual((await api('GET', `${NS}/configmaps/u2`)).json.data, last.json.data);
  });

  test('PUT creates only where the strategy allows it (RBAC yes, ConfigMap no)', async () => {
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'put-created' }, rules: [] };
    const r = await api('PUT', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles/put-created', role);
    assert.equal(r.status, 201);
    const again = await api('PUT', '/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterroles/put-created', { ...role, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] });
    assert.equal(again.status, 200);
    assert.equal((await api('PUT', `${NS}/configmaps/never-created`, CM('never-created'))).status, 404);
  });

  test('JSON patch, merge patch and strategic merge patch', async () => {
    await api('POST', `${NS}/configmaps`, { ...CM('p1', { a: '1', b: '2' }), metadata: { name: 'p1', finalizers: ['x.io/a'] } });
    const merge = await api('PATCH', `${NS}/configmaps/p1`, { data: { b: null, c: '3' } }, { 'content-type': 'application/merge-patch+json' });
    assert.deepEqual(merge.json.data, { a: '1', c: '3' });
    const smp = await api('PATCH', `${NS}/configmaps/p1`, { metadata: { finalizers: ['x.io/b'] } }, { 'content-type': 'application/strategic-merge-patch+json' });
    assert.deepEqual([...smp.json.metadata.finalizers].sort(), ['x.io/a', 'x.io/b'], 'finalizers merge as a set');
    const jp = await api('PATCH', `${NS}/configmaps/p1`, [{ op: 'replace', path: '/data/a', value: 'z' }, { op: 'remove', path: '/metadata/finalizers' }], { 'content-type': 'application/json-patch+json' });
    assert.equal(jp.status, 200);
    assert.equal(jp.json.data.a, 'z');
    assert.equal(jp.json.metadata.finalizers, undefined);
    // A failing op leaves the object untouched (all or nothing).
    const before = (await api('GET', `${NS}/configmaps/p1`)).json;
    const bad = await api('PATCH', `${NS}/configmaps/p1`, [{ op: 'replace', path: '/data/a', value: 'q' }, { op: 'remove', path: '/nope/x' }], { 'content-type': 'application/json-patch+json' });
    assert.equal(bad.status, 422);
    assert.deepEqual((await api('GET', `${NS}/configmaps/p1`)).json, before);
    const unsupported = await api('PATCH', `${NS}/configmaps/p1`, '{}', { 'content-type': 'text/plain' });
    assert.equal(unsupported.status, 415);
  });

  test('delete with finalizers sets deletionTimestamp; removing the last finalizer removes it', async () => {
    await api('POST', `${NS}/configmaps`, { ...CM('f1'), metadata: { name: 'f1', finalizers: ['example.com/hold'] } });
    const d = await api('DELETE', `${NS}/configmaps/f1`);
    assert.equal(d.status, 200);
    assert.ok(d.json.metadata.deletionTimestamp);
    assert.equal((await api('GET', `${NS}/configmaps/f1`)).status, 200);
    const cur = (await api('GET', `${NS}/configmaps/f1`)).json;
    const add = await api('PUT', `${NS}/configmaps/f1`, { ...cur, metadata: { ...cur.metadata, finalizers: ['example.com/hold', 'example.com/new'] } });
    assert.equal(add.status, 422, 'no new finalizers on a deleting object');
    const rm = await api('PATCH', `${NS}/configmaps/f1`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(rm.status, 200);
    assert.equal((await api('GET', `${NS}/configmaps/f1`)).status, 404);
  });

  test('delete preconditions', async () => {
    const c = (await api('POST', `${NS}/configmaps`, CM('d1'))).json;
    const wrongUid = await api('DELETE', `${NS}/configmaps/d1`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'nope' } });
    assert.equal(wrongUid.status, 409);
    const wrongRv = await api('DELETE', `${NS}/configmaps/d1`, { preconditions: { resourceVersion: '1' } });
    assert.equal(wrongRv.status, 409);
    const ok = await api('DELETE', `${NS}/configmaps/d1`, { preconditions: { uid: c.metadata.uid, resourceVersion: c.metadata.resourceVersion } });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.status, 'Success');
    assert.equal((await api('DELETE', `${NS}/configmaps/d1`)).status, 404);
  });

  test('dryRun=All persists nothing', async () => {
    const r = await api('POST', `${NS}/configmaps?dryRun=All`, CM('dry'));
    assert.equal(r.status, 201);
    assert.equal((await api('GET', `${NS}/configmaps/dry`)).status, 404);
    assert.equal((await api('POST', `${NS}/configmaps?dryRun=Some`, CM('dry'))).status, 400);
  });

  test('deletecollection with a label selector', async () => {
    await api('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'dc' } });
    for (const n of ['a', 'b', 'c']) await api('POST', '/clusters/root/api/v1/namespaces/dc/configmaps', CM(n, {}, { del: n === 'c' ? 'no' : 'yes' }));
    const r = await api('DELETE', '/clusters/root/api/v1/namespaces/dc/configmaps?labelSelector=del%3Dyes');
    assert.equal(r.status, 200);
    const left = withoutRootCA((await api('GET', '/clusters/root/api/v1/namespaces/dc/configmaps')).json.items).map((i: any) => i.metadata.name);
    assert.deepEqual(left, ['c']);
  });

  test('status subresource: main update keeps status, /status changes only status', async () => {
    const q = await api('POST', `${NS}/resourcequotas`, { metadata: { name: 'q' }, spec: { hard: { pods: '3' } }, status: { used: { pods: '9' } } });
    assert.equal(q.status, 201);
    // The resource quota controller writes the status first (then leaves a status covering the spec alone).
    const settled = await eventually('quota status computed', async () => {
      const g = await api('GET', `${NS}/resourcequotas/q`);
      return g.json?.status?.used?.pods === '0' ? g.json : undefined;
    });
    const s = await api('PUT', `${NS}/resourcequotas/q/status`, { ...settled, spec: { hard: { pods: '100' } }, status: { hard: { pods: '3' }, used: { pods: '1' } } });
    assert.equal(s.status, 200);
    assert.deepEqual(s.json.status, { hard: { pods: '3' }, used: { pods: '1' } });
    assert.deepEqual(s.json.spec, { hard: { pods: '3' } });
    const m = await api('PUT', `${NS}/resourcequotas/q`, { ...s.json, spec: { hard: { pods: '5' } }, status: { used: { pods: '7' } } });
    assert.deepEqual(m.json.status, { hard: { pods: '3' }, used: { pods: '1' } });
    assert.deepEqual(m.json.spec, { hard: { pods: '5' } });
  });
});

describe('events: core v1 and events.k8s.io/v1 share storage', () => {
  test('an event written through one API is read, listed and patched through the other', async () => {
    const EV1 = '/clusters/root/apis/events.k8s.io/v1/namespaces/default/events';
    const created = await api('POST', EV1, {
      metadata: { name: 'ev1' }, eventTime: '2026-11-22T05:00:00.000000Z', reportingController: 'example.com/ctl', reportingInstance: 'ctl-1',
      action: 'Sync', reason: 'Synced', type: 'Normal', note: 'all good', regarding: { kind: 'ConfigMap', name: 'c1', namespace: 'default' },
    });
    assert.equal(created.status, 201, created.body);
    assert.equal(created.json.apiVersion, 'events.k8s.io/v1');
    assert.equal(created.json.note, 'all good');
    const core = await api('GET', `${NS}/events/ev1`);
    assert.equal(core.json.apiVersion, 'v1');
    assert.equal(core.json.message, 'all good');
    assert.equal(core.json.reportingComponent, 'example.com/ctl');
    assert.deepEqual(core.json.involvedObject, { kind: 'ConfigMap', name: 'c1', namespace: 'default' });
    assert.equal(core.json.metadata.resourceVersion, created.json.metadata.resourceVersion);
    const patched = await api('PATCH', `${NS}/events/ev1`, { message: 'changed' }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(patched.status, 200);
    const again = await api('GET', `${EV1}/ev1`);
    assert.equal(again.json.note, 'changed');
    const list = await api('GET', EV1);
    assert.deepEqual(list.json.items.map((i: any) => [i.apiVersion, i.note]), [['events.k8s.io/v1', 'changed']]);
    const invalid = await api('POST', EV1, { metadata: { name: 'ev2' }, type: 'Odd' });
    assert.equal(invalid.status, 422);
    const fields = invalid.json.details.causes.map((c: any) => c.field);
    assert.ok(fields.includes('eventTime') && fields.includes('type'));
  });
});

describe('bad input gets a Status', () => {
  test('malformed JSON and YAML → 400 with kube\'s decode errors, never a JavaScript parser message', async () => {
    const r = await api('POST', `${NS}/configmaps`, '{"metadata": ');
    assert.equal(r.status, 400);
    assert.equal(r.json.kind, 'Status');
    assert.equal(r.json.reason, 'BadRequest');
    assert.equal(r.json.message, 'the object provided is unrecognized (must be of type ConfigMap): couldn\'t get version/kind; json parse error: unexpected end of JSON input ({"metadata": )');
    const n = await api('POST', `${NS}/configmaps`, 'not json');
    assert.equal(n.json.message, 'the object provided is unrecognized (must be of type ConfigMap): couldn\'t get version/kind; json parse error: invalid character \'o\' in literal null (expecting \'u\') (6e6f74206a736f6e)');
    const y = await api('POST', `${NS}/configmaps`, 'metadata: [unclosed', { 'content-type': 'application/yaml' });
    assert.equal(y.status, 400);
    assert.match(y.json.message, /^the object provided is unrecognized \(must be of type ConfigMap\): error converting YAML to JSON: yaml: line 1: /);
    const p = await api('PATCH', `${NS}/configmaps/anything`, '{"data":', { 'content-type': 'application/merge-patch+json' });
    assert.equal(p.status, 400);
    assert.equal(p.json.message, 'error decoding patch: unexpected end of JSON input');
    const a = await api('PATCH', `${NS}/configmaps/anything?fieldManager=m`, 'a: [', { 'content-type': 'application/apply-patch+yaml' });
    assert.equal(a.status, 400);
    assert.match(a.json.message, /^error decoding YAML: error converting YAML to JSON: yaml: line 1: /);
    const d = await api('DELETE', `${NS}/configmaps/anything`, '{]');
    assert.equal(d.status, 400);
    assert.match(d.json.message, /^the object provided is unrecognized \(must be of type DeleteOptions\): couldn't get version\/kind; json parse error: invalid character ']'/);
    for (const res of [r, n, y, p, a, d]) assert.doesNotMatch(res.json.message, /Unexpected|is not valid JSON|position \d/);
    const ok = await api('POST', `${NS}/configmaps`, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\n', { 'content-type': 'application/yaml' });
    assert.equal(ok.status, 201);
  });

  test('unknown fields: Strict rejects, Warn prunes with a Warning header, Ignore prunes silently', async () => {
    const body = { ...CM('fv'), bogus: 1, metadata: { name: 'fv', colour: 'red' } };
    const strict = await api('POST', `${NS}/configmaps?fieldValidation=Strict`, body);
    assert.equal(strict.status, 400);
    assert.equal(strict.json.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.colour", unknown field "bogus"', 'in document order');
    assert.equal((await api('GET', `${NS}/configmaps/fv`)).status, 404, 'nothing written');
    const warn = await api('POST', `${NS}/configmaps?fieldValidation=Warn`, body);
    assert.equal(warn.status, 201);
    assert.equal(warn.json.bogus, undefined);
    assert.equal(warn.json.metadata.colour, undefined);
    assert.match(String(warn.headers.warning), /299 - "unknown field \\"bogus\\""/);
    const ignore = await api('POST', `${NS}/configmaps?fieldValidation=Ignore`, { ...body, metadata: { name: 'fv2' } });
    assert.equal(ignore.status, 201);
    assert.equal(ignore.headers.warning, undefined);
    const patch = await api('PATCH', `${NS}/configmaps/fv?fieldValidation=Strict`, { spec: { x: 1 } }, { 'content-type': 'application/merge-patch+json' });
    assert.equal(patch.status, 422);
    assert.match(patch.json.message, /strict decoding error: unknown field "spec"/);
    assert.equal((await api('POST', `${NS}/configmaps?fieldValidation=strict`, CM('fv3'))).status, 422);
  });

  test('duplicate fields: Strict rejects, Warn keeps the last value with a Warning header, SMP bodies are checked', async () => {
    const body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"},"data":{"a":"1","a":"2"},"bogus":1}';
    const strict = await api('POST', `${NS}/configmaps?fieldValidation=Strict`, body);
    assert.equal(strict.status, 400);
    assert.equal(strict.json.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", duplicate field "data.a", unknown field "bogus"');
    assert.equal((await api('GET', `${NS}/configmaps/dup`)).status, 404, 'nothing written');
    const warn = await api('POST', `${NS}/configmaps`, body);
    assert.equal(warn.status, 201);
    assert.equal(warn.json.data.a, '2');
    assert.match(String(warn.headers.warning), /299 - "duplicate field \\"data.a\\""/);
    const smp = await api('PATCH', `${NS}/configmaps/dup?fieldValidation=Strict`, '{"data":{"b":"1","b":"2"}}', { 'content-type': 'application/strategic-merge-patch+json' });
    assert.equal(smp.status, 422);
    assert.match(smp.json.message, /strict decoding error: duplicate field "data.b"/);
    assert.equal((await api('GET', `${NS}/configmaps/dup`)).json.data.b, undefined, 'patch not applied');
  });

  test('wrongly typed metadata and malformed URLs are client errors', async () => {
    const r = await api('POST', `${NS}/configmaps`, { metadata: { name: 123 } });
    assert.equal(r.status, 422);
    assert.equal(r.json.details.causes[0].field, 'metadata.name');
    assert.equal((await api('POST', `${NS}/configmaps`, { metadata: { name: 'x', labels: 'nope' } })).status, 422);
    assert.equal((await api('GET', `${NS}/configmaps/%ZZ`)).status, 400);
    assert.equal((await api('GET', '/clusters/Root/api/v1/namespaces')).status, 400);
    // Found by the router before any handler: still a Status.
    for (const path of ['/clusters/%ZZ/api/v1/configmaps', '/services/apiexport/%ZZ/x/clusters/*/api/v1/configmaps']) {
      const bad = await api('GET', path);
      assert.equal(bad.status, 400, path);
      assert.deepEqual([bad.json.kind, bad.json.reason], ['Status', 'BadRequest'], path);
    }
  });

  test('kind or apiVersion not matching the URL → 400', async () => {
    assert.equal((await api('POST', `${NS}/configmaps`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } })).status, 400);
    assert.equal((await api('POST', `${NS}/configmaps`, { apiVersion: 'apps/v1', kind: 'ConfigMap', metadata: { name: 'x' } })).status, 400);
    assert.equal((await api('POST', `${NS}/configmaps`, { metadata: { name: 'x', namespace: 'other' } })).status, 400);
  });

  test('invalid name and fields → 422 with causes naming the field', async () => {
    const r = await api('POST', `${NS}/configmaps`, { metadata: { name: 'Bad_Name', labels: { 'bad key!': 'v' } }, data: { 'bad key': 'v' } });
    assert.equal(r.status, 422);
    assert.equal(r.json.reason, 'Invalid');
    const fields = r.json.details.causes.map((c: any) => c.field);
    assert.ok(fields.includes('metadata.name'));
    assert.ok(fields.includes('metadata.labels'));
    assert.ok(fields.includes('data[bad key]'));
  });

  test('unknown resource, object or cluster', async () => {
    assert.equal((await api('GET', '/clusters/root/api/v1/widgets')).status, 404);
    assert.equal((await api('GET', `${NS}/configmaps/absent`)).status, 404);
    assert.equal((await api('GET', '/clusters/root/apis/nope.io/v1/things')).status, 404);
    const missing = await api('GET', '/clusters/doesnotexist/api/v1/namespaces');
    assert.equal(missing.status, 403);
    assert.match(missing.json.message, /workspace access not permitted/);
    assert.equal((await api('POST', `/clusters/root/api/v1/namespaces/absent/configmaps`, CM('x'))).status, 404);
  });

  test('body over 3 MiB → 413; unsupported content type → 415', async () => {
    const big = JSON.stringify(CM('big', { a: 'x'.repeat(3 * 1024 * 1024 + 10) }));
    const r = await api('POST', `${NS}/configmaps`, big);
    assert.equal(r.status, 413);
    assert.equal(r.json.reason, 'RequestEntityTooLarge');
    const t = await api('POST', `${NS}/configmaps`, 'x', { 'content-type': 'text/plain' });
    assert.equal(t.status, 415);
  });

  test('no credentials → 401; bad client CA → 401', async () => {
    const r = await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/api/v1/namespaces');
    assert.equal(r.status, 401);
    assert.equal(r.json.reason, 'Unauthorized');
    assert.equal((await call(srv, { ca: srv.creds.ca }, 'GET', '/readyz')).status, 200);
    // A certificate of a CA the server does not trust: 401 on every request of the connection
    // (its identity is worked out once per connection, the refusal with it).
    const stranger = await createCA('not-the-kcp-ts-ca');
    const cert = await issueClientCert(stranger, { user: 'kcp-admin', groups: ['system:masters'] });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        const bad = await call(srv, { ca: srv.creds.ca, cert: cert.certPem, key: cert.keyPem }, 'GET', '/clusters/root/api/v1/namespaces', undefined, {}, agent);
        assert.equal(bad.status, 401, `request ${i + 1}: ${bad.body}`);
        assert.equal(bad.json.reason, 'Unauthorized');
      }
    } finally {
      agent.destroy();
    }
  });

  test('unsupported Accept → 406', async () => {
    const r = await api('GET', `${NS}/configmaps`, undefined, { accept: 'text/html' });
    assert.equal(r.status, 406);
    assert.equal(r.json.message, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  });
});

describe('logical clusters', () => {
  test('same-named objects in two logical clusters are independent; wildcard lists both', async () => {
    for (const c of ['team-a', 'team-b']) {
      const lc = await createLogicalCluster(srv, c);
      assert.equal(lc.status, 201, lc.body);
      assert.equal((await api('POST', `/clusters/${c}/api/v1/namespaces`, { metadata: { name: 'shared' } })).status, 201);
      assert.equal((await api('POST', `/clusters/${c}/api/v1/namespaces/shared/configmaps`, CM('same', { owner: c }))).status, 201);
    }
    const a = await api('GET', '/clusters/team-a/api/v1/namespaces/shared/configmaps/same');
    const b = await api('GET', '/clusters/team-b/api/v1/namespaces/shared/configmaps/same');
    assert.equal(a.json.data.owner, 'team-a');
    assert.equal(b.json.data.owner, 'team-b');
    assert.notEqual(a.json.metadata.uid, b.json.metadata.uid);
    await api('DELETE', '/clusters/team-a/api/v1/namespaces/shared/configmaps/same');
    assert.equal((await api('GET', '/clusters/team-b/api/v1/namespaces/shared/configmaps/same')).status, 200);
    assert.equal(withoutRootCA((await api('GET', '/clusters/team-a/api/v1/namespaces/shared/configmaps')).json.items).length, 0);

    // Wildcard: system:masters only, list and watch only, annotated with the cluster.
    const w = await call(srv, srv.masters, 'GET', '/clusters/*/api/v1/configmaps');
    assert.equal(w.status, 200);
    const same = w.json.items.filter((i: any) => i.metadata.name === 'same');
    assert.deepEqual(same.map((i: any) => i.metadata.annotations['kcp.io/cluster']), ['team-b']);
    const rvs = w.json.items.map((i: any) => Number(i.metadata.resourceVersion));
    assert.ok(rvs.every((rv: number) => rv <= Number(w.json.metadata.resourceVersion)));
    assert.equal((await api('GET', '/clusters/*/api/v1/configmaps')).status, 403);
    assert.equal((await call(srv, srv.masters, 'POST', '/clusters/*/api/v1/namespaces/x/configmaps', CM('x'))).status, 405);
  });
});

describe('watch', () => {
  test('watch from a resourceVersion sees every change in order, selectors transition', async () => {
    const start = (await api('GET', `${NS}/configmaps`)).json.metadata.resourceVersion;
    const w = watch(srv, srv.creds, `${NS}/configmaps?watch=true&resourceVersion=${start}&labelSelector=w%3Dyes`);
    assert.equal(await w.status, 200);
    await api('POST', `${NS}/configmaps`, CM('w1', {}, { w: 'yes' }));
    await api('PATCH', `${NS}/configmaps/w1`, { data: { x: '1' } }, { 'content-type': 'application/merge-patch+json' });
    await api('PATCH', `${NS}/configmaps/w1`, { metadata: { labels: { w: 'no' } } }, { 'content-type': 'application/merge-patch+json' });
    await api('POST', `${NS}/configmaps`, CM('w2', {}, { w: 'no' }));
    await api('DELETE', `${NS}/configmaps/w2`);
    const ev = await w.waitFor(3);
    w.close();
    assert.deepEqual(ev.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED w1', 'MODIFIED w1', 'DELETED w1']);
    const rvs = ev.map((e) => Number(e.object.metadata.resourceVersion));
    assert.deepEqual([...rvs].sort((a, b) => a - b), rvs);
  });

  test('sendInitialEvents ends with an annotated bookmark; a too old resourceVersion is 410', async () => {
    await api('POST', '/clusters/root/api/v1/namespaces', { metadata: { name: 'wi' } });
    await waitForRootCA(srv, srv.creds, 'root', 'wi');
    await api('POST', '/clusters/root/api/v1/namespaces/wi/configmaps', CM('i1'));
    await api('POST', '/clusters/root/api/v1/namespaces/wi/configmaps', CM('i2'));
    const w = watch(srv, srv.creds, '/clusters/root/api/v1/namespaces/wi/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan');
    const ev = await w.waitFor(4);
    w.close();
    // i1, i2 and the namespace's kube-root-ca.crt, then the bookmark.
    assert.deepEqual(ev.slice(0, 4).map((e) => e.type), ['ADDED', 'ADDED', 'ADDED', 'BOOKMARK']);
    assert.equal(ev[3].object.metadata.annotations['k8s.io/initial-events-end'], 'true');
  });

  test('watch with timeoutSeconds ends by itself', async () => {
    const w = watch(srv, srv.creds, `${NS}/configmaps?watch=true&timeoutSeconds=1`);
    assert.equal(await w.status, 200);
    const t0 = Date.now();
    while (Date.now() - t0 < 4000 && !(w as any).ended) await sleep(50);
    w.close();
  });
});

describe('access reviews and RBAC', () => {
  test('SelfSubjectAccessReview and RBAC of the target logical cluster', async () => {
    const ssar = await api('POST', '/clusters/root/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { spec: { resourceAttributes: { verb: 'create', resource: 'configmaps', namespace: 'default' } } });
    assert.equal(ssar.status, 201);
    assert.equal(ssar.json.status.allowed, true);
    const sar = await api('POST', '/clusters/root/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'alice', resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'default' } } });
    assert.equal(sar.json.status.allowed, false);
    const RB = '/clusters/root/apis/rbac.authorization.k8s.io/v1/namespaces/default';
    assert.equal((await api('POST', `${RB}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] })).status, 201);
    assert.equal((await api('POST', `${RB}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-reads' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' }, subjects: [{ kind: 'User', name: 'alice' }] })).status, 201);
    await eventually('the binding allows alice', async () => {
      const sar2 = await api('POST', '/clusters/root/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'alice', groups: ['system:authenticated'], resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'default' } } });
      return sar2.json.status.allowed === true;
    });
    // Without system:authenticated alice lacks kcp's workspace access (verb access on /) in root.
    const noAccess = await api('POST', '/clusters/root/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'alice', resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'default' } } });
    assert.equal(noAccess.json.status.allowed, false);
    assert.match(noAccess.json.status.reason, /access/);
    const sar3 = await api('POST', '/clusters/root/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'alice', groups: ['system:authenticated'], resourceAttributes: { verb: 'delete', resource: 'configmaps', namespace: 'default' } } });
    assert.equal(sar3.json.status.allowed, false);
  });
});
