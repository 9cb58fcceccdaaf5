/**
 * Type checking of ValidatingAdmissionPolicy expressions (src/admission/typecheck.ts; kube's
 * k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go): cel-go's messages for
 * operators and undefined fields, schema types, what stays dyn (no false warnings), the kinds
 * checked and the warnings' format.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkExpression, checkPolicy, typesToCheck, type CheckedKind } from '../../src/admission/typecheck.js';
import { schemaType } from '../../src/apiextensions/celtypes.js';
import { BUILTIN_SCHEMAS } from '../../src/apis/schemas/index.js';

const CRONTAB = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' }, image: { type: 'string' }, ratio: { type: 'number' }, 'max-surge': { type: 'integer' },
        ports: { type: 'array', items: { type: 'integer' } }, limits: { type: 'object', additionalProperties: { type: 'integer' } },
        port: { 'x-kubernetes-int-or-string': true }, extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        when: { type: 'string', format: 'date-time' }, maybe: { type: 'integer', nullable: true },
      },
    },
  },
};
const T = schemaType(CRONTAB, true);

test('operators without a matching overload: cel-go wording and location', () => {
  assert.equal(checkExpression("object.spec.replicas > '1'", T),
    "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^");
  assert.match(checkExpression("'wants replicas > 1, got ' + object.spec.replicas", T), /<input>:1:28: found no matching overload for '_\+_' applied to '\(string, int\)'/);
  assert.match(checkExpression('object.spec.replicas + 1.5', T), /'_\+_' applied to '\(int, double\)'/);
  assert.match(checkExpression("object.spec.limits.cpu * 'x'", T), /'_\*_' applied to '\(int, string\)'/);
  assert.match(checkExpression('object.spec.ports[0] % 2.0', T), /'_%_' applied to '\(int, double\)'/);
  assert.match(checkExpression('size(object.spec.image) + "a"', T), /'_\+_' applied to '\(int, string\)'/);
  assert.match(checkExpression('object.spec.image.size() < "a"', T), /'_<_' applied to '\(int, string\)'/);
  assert.match(checkExpression('true + true', T), /'_\+_' applied to '\(bool, bool\)'/);
});

test('undefined fields, also under has(), metadata from ObjectMeta', () => {
  assert.equal(checkExpression('object.spec.maxRetries < 10', T),
    "ERROR: <input>:1:12: undefined field 'maxRetries'\n | object.spec.maxRetries < 10\n | ...........^");
  assert.match(checkExpression('has(object.spec.foo)', T), /1:16: undefined field 'foo'/);
  assert.match(checkExpression('oldObject.status.x', T), /undefined field 'status'/);
  assert.match(checkExpression('object.metadata.nope == "a"', T), /undefined field 'nope'/);
  assert.equal(checkExpression('object.metadata.name == "a" && object.apiVersion != "" && object.kind != ""', T), '');
  assert.equal(checkExpression('object.metadata.namespace + object.metadata.__namespace__ != ""', T), '');
  assert.equal(checkExpression('object.spec.max__dash__surge > 1', T), '');
});

test('well-typed and dyn expressions give no warning', () => {
  for (const e of [
    'object.spec.replicas > 1', 'object.spec.replicas > 1.5', 'object.spec.replicas >= 1u', 'object.spec.ratio * 2.0 > 1.0',
    "object.spec.image + ':latest' != ''", 'size(object.spec.ports) > 1', 'object.spec.ports.all(p, p > 0)',
    "object.spec.port > 'a'", 'object.spec.port > 1', 'object.spec.extra.anything.deep > 1', "object.spec.when > 'x'",
    'object.spec.maybe > 1', "variables.foo > 'x'", "params.max > object.spec.replicas", "request.name + 1",
    'oldObject == null || object.spec.replicas >= oldObject.spec.replicas', "object.spec.?replicas.orValue(0) > 'a'",
    "(object.spec.replicas > 1 ? 1 : 'a') > 2", "object.spec['replicas'] > 'a'", "[1, 'a'][0] > 'b'",
    // A macro variable shadowing `object`: not checked at all.
    "object.spec.ports.all(object, object > 'a')",
    // Parse errors are the write's business.
    'object.spec.replicas >',
  ]) assert.equal(checkExpression(e, T), '', e);
  // Anything is dyn when there is no schema.
  assert.equal(checkExpression("object.spec.replicas > '1' && object.x.y", schemaType(undefined, true)), '');
});

test('built-in schemas: references resolve, maps of strings', () => {
  const cm = schemaType(BUILTIN_SCHEMAS['io.k8s.api.core.v1.ConfigMap'], true);
  assert.equal(checkExpression("object.data.a == 'b' && object.metadata.labels.x.startsWith('a')", cm), '');
  assert.match(checkExpression('object.data.a > 1', cm), /'_>_' applied to '\(string, int\)'/);
  assert.match(checkExpression('object.spec', cm), /undefined field 'spec'/);
});

test('kinds checked: concrete, served, sorted, deduplicated; wildcards and subresources skipped', () => {
  const served: Record<string, CheckedKind> = {
    'stable.example.com/v1/crontabs': { group: 'stable.example.com', version: 'v1', kind: 'CronTab', schema: CRONTAB },
    '/v1/configmaps': { group: '', version: 'v1', kind: 'ConfigMap', schema: undefined },
  };
  const resolve = (g: string, v: string, r: string) => served[`${g}/${v}/${r}`];
  const policy = (rules: object[]) => ({ spec: { matchConstraints: { resourceRules: rules } } });
  const kinds = typesToCheck(policy([
    { apiGroups: ['stable.example.com'], apiVersions: ['v1'], resources: ['crontabs', 'crontabs/status'] },
    { apiGroups: ['', 'apps'], apiVersions: ['v1'], resources: ['configmaps', 'deployments'] },
    { apiGroups: ['*'], apiVersions: ['v1'], resources: ['crontabs'] },
    { apiGroups: ['stable.example.com'], apiVersions: ['v1'], resources: ['crontabs'] },
  ]), resolve);
  assert.deepEqual(kinds.map((k) => `${k.group}/${k.version}/${k.kind}`), ['/v1/ConfigMap', 'stable.example.com/v1/CronTab']);
  assert.deepEqual(typesToCheck(policy([{ apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }]), resolve), []);
  assert.deepEqual(typesToCheck({ spec: {} }, resolve), []);
});

test('warnings: fieldRef per expression and messageExpression, kube\'s "<gvk>: <issues>\\n" per kind', () => {
  const kinds: CheckedKind[] = [{ group: 'stable.example.com', version: 'v1', kind: 'CronTab', schema: CRONTAB }];
  const w = checkPolicy({
    spec: {
      validations: [
        { expression: "object.spec.replicas > '1'", messageExpression: "'got ' + object.spec.replicas" },
        { expression: 'object.spec.replicas > 1', messageExpression: "'ok'" },
        { expression: 'object.spec.maxRetries < 10' },
      ],
      // kube checks only validations: these are not.
      auditAnnotations: [{ key: 'a', valueExpression: 'object.spec.nope' }],
      matchConditions: [{ name: 'm', expression: 'object.spec.nope' }],
    },
  }, kinds);
  assert.deepEqual(w.map((x) => x.fieldRef), ['spec.validations[0].expression', 'spec.validations[0].messageExpression', 'spec.validations[2].expression']);
  assert.equal(w[0]!.warning, "stable.example.com/v1, Kind=CronTab: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^\n");
  assert.match(w[2]!.warning, /^stable\.example\.com\/v1, Kind=CronTab: ERROR: <input>:1:12: undefined field 'maxRetries'/);
  // Two kinds: a line each, joined by a newline.
  const two = checkPolicy({ spec: { validations: [{ expression: 'object.spec.maxRetries < 10' }] } }, [{ group: '', version: 'v1', kind: 'A', schema: CRONTAB }, { group: '', version: 'v1', kind: 'B', schema: CRONTAB }]);
  assert.match(two[0]!.warning, /^\/v1, Kind=A: ERROR.*\n.*\n.*\^\n\n\/v1, Kind=B: ERROR/);
  assert.deepEqual(checkPolicy({ spec: { validations: [{ expression: "object.spec.replicas > '1'" }] } }, []), []);
});
