/**
 * Tenant regular expressions against a real server: what Go's regexp refuses (look-arounds,
 * back-references) is a 422 at CRD creation with kube's message, and a pattern that makes a
 * backtracking engine explode (`^(a+)+$` against 100 near-matching characters) is answered at once,
 * by OpenAPI `pattern` and by CEL `matches`, while another workspace is served as usual.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, createWorkspace, eventually, useTestServer, type Kubectl, type TestServer } from '../helpers.js';

let srv: TestServer;
let kc: Kubectl;
useTestServer((s, _r, k) => { srv = s; kc = k; });

const HOSTILE = `${'a'.repeat(99)}!`;

/** A CRD `things.<group>` whose `spec.s` has `pattern` and whose spec has CEL `rule`. */
function crd(group: string, pattern: string, rule: string): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `things.${group}` },
    spec: {
      group, scope: 'Namespaced', names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: {
        spec: { type: 'object', properties: { s: { type: 'string', maxLength: 1000, pattern }, t: { type: 'string', maxLength: 1000 } }, 'x-kubernetes-validations': [{ rule }] },
      } } } }],
    },
  };
}

const thing = (name: string, spec: Record<string, string>) => ({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name }, spec });
const CRDS = '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

describe('tenant regular expressions', () => {
  test("a pattern or a constant CEL regex Go's regexp refuses is a 422 at CRD creation, with kube's message", async () => {
    const look = await call(srv, srv.creds, 'POST', CRDS, crd('lookahead.example.com', '^(?=a)a+$', 'true'));
    assert.equal(look.status, 422, look.body);
    assert.equal(look.json.reason, 'Invalid');
    assert.ok(look.json.details.causes.some((c: { field: string; message: string }) => c.field === 'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[s].pattern'
      && c.message === 'Invalid value: "^(?=a)a+$": must be a valid regular expression, but isn\'t: error parsing regexp: invalid or unsupported Perl syntax: `(?=`'), look.body);

    const backref = await call(srv, srv.creds, 'POST', CRDS, crd('backref.example.com', '^a+$', "self.t.matches('(a)\\\\1')"));
    assert.equal(backref.status, 422, backref.body);
    assert.match(backref.body, /x-kubernetes-validations\[0\]\.rule.*compilation failed: ERROR: <input>:1:16: invalid matches argument/);

    const lookbehind = await call(srv, srv.creds, 'POST', CRDS, crd('lookbehind.example.com', '^a+$', "self.t.find('(?<!b)a') == ''"));
    assert.equal(lookbehind.status, 422, lookbehind.body);
    assert.match(lookbehind.body, /program instantiation failed: error parsing regexp: invalid named capture: `\(\?<!b\)a`/);
  });

  test('^(a+)+$ against 100 near-matching characters: refused at once by pattern and by CEL; another workspace is served meanwhile', async (t) => {
    const created = await call(srv, srv.creds, 'POST', CRDS, crd('example.com', '^(a+)+$', "!has(self.t) || self.t.matches('^(a+)+$')"));
    assert.equal(created.status, 201, created.body);
    const things = '/clusters/root/apis/example.com/v1/namespaces/default/things';
    await eventually('things served', async () => (await call(srv, srv.creds, 'GET', things)).status === 200);
    await createWorkspace(srv, 'neighbour');
    const neighbourNs = '/clusters/root:neighbour/api/v1/namespaces/default';
    await eventually('default namespace of the neighbour', async () => (await call(srv, srv.creds, 'GET', neighbourNs)).status === 200);
    const ok = await call(srv, srv.creds, 'POST', things, thing('ok', { s: 'aaa', t: 'aaa' }));
    assert.equal(ok.status, 201, ok.body);

    const timedCall = async (f: () => Promise<{ status: number; body: string }>) => { const t0 = performance.now(); const r = await f(); return { ...r, ms: performance.now() - t0 }; };
    // Each hostile create races a GET in another workspace, sent right after it.
    for (const [what, spec] of [['pattern', { s: HOSTILE }], ['CEL matches', { s: 'a', t: HOSTILE }]] as const) {
      const [hostile, neighbour] = await Promise.all([
        timedCall(() => call(srv, srv.creds, 'POST', things, thing(`bad-${what.length}`, spec))),
        timedCall(() => call(srv, srv.creds, 'GET', neighbourNs)),
      ]);
      assert.equal(hostile.status, 422, hostile.body);
      assert.match(hostile.body, what === 'pattern' ? /spec\.s in body should match '\^\(a\+\)\+\$'/ : /failed rule: !has\(self\.t\) \|\| self\.t\.matches/);
      assert.equal(neighbour.status, 200, neighbour.body);
      assert.ok(hostile.ms < 2000, `${what}: the hostile create took ${hostile.ms} ms`);
      assert.ok(neighbour.ms < 2000, `${what}: the neighbour's GET took ${neighbour.ms} ms`);
      t.diagnostic(`${what}: hostile create ${hostile.ms.toFixed(1)} ms (422), GET in another workspace ${neighbour.ms.toFixed(1)} ms`);
    }
    // kubectl in the other workspace, while hostile creates keep coming.
    const flood = Promise.all(Array.from({ length: 20 }, (_, i) => call(srv, srv.creds, 'POST', things, thing(`flood-${i}`, i % 2 ? { s: HOSTILE } : { s: 'a', t: HOSTILE }))));
    const t0 = performance.now();
    const get = await kc(['--server', `${srv.url}/clusters/root:neighbour`, 'get', 'ns', 'default', '-o', 'name']);
    const kubectlMs = performance.now() - t0;
    assert.equal(get.stdout.trim(), 'namespace/default');
    assert.ok((await flood).every((r) => r.status === 422));
    t.diagnostic(`kubectl get ns default during 20 hostile creates: ${kubectlMs.toFixed(0)} ms`);
  });
});
