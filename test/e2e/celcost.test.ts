/**
 * CEL cost against a real server: a CRD whose rule kube would estimate beyond its budget is a 422
 * naming the cost; the same rule with maxItems/maxLength is accepted and its custom resources are
 * validated; and a ValidatingAdmissionPolicy whose expression runs away is stopped at kube's
 * per-call limit instead of holding the request.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, sleep, type TestServer, useTestServer } from '../helpers.js';

let srv: TestServer;
useTestServer((s) => { srv = s; });

const RULE = "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != 'abc')))";
const crd = (items: Record<string, unknown>, maxItems?: number) => ({
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [{
      name: 'v1', served: true, storage: true,
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: {
        type: 'object', 'x-kubernetes-validations': [{ rule: RULE, message: 'no abc' }],
        properties: { l: { type: 'array', ...(maxItems ? { maxItems } : {}), items } },
      } } } },
    }],
  },
});
const CRDS = '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

test('the issue CRD (unbounded list of unbounded strings) is a 422 naming the estimated cost', async () => {
  const r = await call(srv, srv.creds, 'POST', CRDS, crd({ type: 'string' }));
  assert.equal(r.status, 422, r.body);
  assert.equal(r.json.reason, 'Invalid');
  const causes = r.json.details.causes as Array<{ field: string; message: string }>;
  assert.ok(causes.some((c) => c.field === 'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule' || /x-kubernetes-validations\[0\]\.rule$/.test(c.field)), r.body);
  assert.match(r.json.message, /estimated rule cost exceeds budget by factor of more than 100x \(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared\)/);
  assert.match(r.json.message, /x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget/);
});

test('bounded by maxItems and maxLength, the rule is accepted and enforced', async () => {
  const r = await call(srv, srv.creds, 'POST', CRDS, crd({ type: 'string', maxLength: 10 }, 10));
  assert.equal(r.status, 201, r.body);
  const path = '/clusters/root/apis/example.com/v1/namespaces/default/widgets';
  let created = 0;
  for (let i = 0; i < 100 && created === 0; i++) {
    const w = await call(srv, srv.creds, 'POST', path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'ok' }, spec: { l: ['a', 'b'] } });
    if (w.status === 201) created = 1;
    else await sleep(50);
  }
  assert.equal(created, 1);
  const bad = await call(srv, srv.creds, 'POST', path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'bad' }, spec: { l: ['a', 'b', 'c'] } });
  assert.equal(bad.status, 422, bad.body);
  assert.match(bad.json.message, /no abc/);
});

test('a runaway ValidatingAdmissionPolicy expression is stopped at the per-call limit', async () => {
  const expr = "object.data.all(a, object.data.all(b, object.data.all(c, a + b + c != 'abc')))";
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'cubic' },
    spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }, validations: [{ expression: expr }] },
  };
  assert.equal((await call(srv, srv.creds, 'POST', '/clusters/root/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', policy)).status, 201);
  const binding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'cubic' }, spec: { policyName: 'cubic', validationActions: ['Deny'] } };
  assert.equal((await call(srv, srv.creds, 'POST', '/clusters/root/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings', binding)).status, 201);
  const data = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, `v${i}`]));
  let r;
  for (let i = 0; i < 100; i++) {
    const t0 = performance.now();
    r = await call(srv, srv.creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm${i}` }, data });
    if (r.status === 201) { await sleep(50); continue; } // the policy is not in the watch cache yet
    assert.ok(performance.now() - t0 < 5000);
    break;
  }
  assert.equal(r!.status, 422, r!.body);
  assert.match(r!.json.message, /ValidatingAdmissionPolicy 'cubic' with binding 'cubic' denied request: expression '.*' resulted in error: operation cancelled: actual cost limit exceeded/);
});
