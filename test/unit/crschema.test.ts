import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { StatusCause } from '../../src/apimachinery/errors.js';
import { compileSchema, compileSchemaEagerly, MAX_DEFAULTED_CHARS } from '../../src/apiextensions/schema.js';
import { StatusError } from '../../src/apimachinery/errors.js';
import { TESTDATA_CRDS } from '../helpers.js';

const CRDS = TESTDATA_CRDS;

type Obj = Record<string, any>;

/** `spec.versions[name].schema.openAPIV3Schema` of a real CRD file. */
function crdSchema(file: string, version = 'v1'): Obj {
  const crd = parse(readFileSync(`${CRDS}/${file}`, 'utf8')) as Obj;
  const v = (crd.spec.versions as Obj[]).find((x) => x.name === version);
  assert.ok(v, `${file}: no version ${version}`);
  return v.schema.openAPIV3Schema as Obj;
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** What the API server does with a write: prune, default, validate. */
function admit(schema: Obj, obj: Obj, old?: Obj): { pruned: string[]; causes: StatusCause[] } {
  const c = compileSchema(schema);
  const pruned = c.prune(obj);
  c.applyDefaults(obj);
  return { pruned, causes: c.validate(obj, old) };
}

/** A CR schema: `spec` with the given properties (plus optional extras on spec). */
function crSchema(specProps: Obj, specExtra: Obj = {}): Obj {
  return {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: { type: 'object', properties: specProps, ...specExtra },
    },
  };
}

function cr(spec: Obj): Obj {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec };
}

// ---------------------------------------------------------------------------------------------
// cert-manager Certificate
// ---------------------------------------------------------------------------------------------

const CERTIFICATE = crdSchema('cert-manager/cert-manager.io_certificates.yaml');

function certificate(): Obj {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      secretName: 'web-tls',
      issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      commonName: 'web.example.com',
      dnsNames: ['web.example.com', 'www.example.com'],
      duration: '2160h',
      renewBefore: '360h',
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      usages: ['digital signature', 'key encipherment', 'server auth'],
      secretTemplate: { labels: { app: 'web' }, annotations: { 'example.com/a': 'b' } },
    },
  };
}

test('Certificate: a valid Certificate passes', () => {
  const { pruned, causes } = admit(CERTIFICATE, certificate());
  assert.deepEqual(pruned, []);
  assert.deepEqual(causes, []);
});

test('Certificate: missing spec.secretName and spec.issuerRef are FieldValueRequired', () => {
  const c = certificate();
  delete c.spec.secretName;
  delete c.spec.issuerRef;
  const { causes } = admit(CERTIFICATE, c);
  assert.deepEqual(
    [...causes].sort((a, b) => a.field!.localeCompare(b.field!)),
    [
      { reason: 'FieldValueRequired', field: 'spec.issuerRef', message: 'Required value' },
      { reason: 'FieldValueRequired', field: 'spec.secretName', message: 'Required value' },
    ],
  );
});

test('Certificate: a nested required field is reported with its path', () => {
  const c = certificate();
  delete c.spec.issuerRef.name;
  assert.deepEqual(admit(CERTIFICATE, c).causes, [{ reason: 'FieldValueRequired', field: 'spec.issuerRef.name', message: 'Required value' }]);
});

test('Certificate: wrong type is FieldValueTypeInvalid with kube-openapi wording', () => {
  const c = certificate();
  c.spec.duration = 5;
  assert.deepEqual(admit(CERTIFICATE, c).causes, [{
    reason: 'FieldValueTypeInvalid',
    field: 'spec.duration',
    message: 'Invalid value: "integer": spec.duration in body must be of type string: "integer"',
  }]);
  const d = certificate();
  d.spec.privateKey.size = '256';
  d.spec.dnsNames = 'web.example.com';
  assert.deepEqual(admit(CERTIFICATE, d).causes, [
    { reason: 'FieldValueTypeInvalid', field: 'spec.dnsNames', message: 'Invalid value: "string": spec.dnsNames in body must be of type array: "string"' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.privateKey.size', message: 'Invalid value: "string": spec.privateKey.size in body must be of type integer: "string"' },
  ]);
});

test('Certificate: enum violations are FieldValueNotSupported', () => {
  const c = certificate();
  c.spec.privateKey.algorithm = 'DSA';
  assert.deepEqual(admit(CERTIFICATE, c).causes, [{
    reason: 'FieldValueNotSupported',
    field: 'spec.privateKey.algorithm',
    message: 'Unsupported value: "DSA": supported values: "RSA", "ECDSA", "Ed25519"',
  }]);
});

test('Certificate: unknown fields are pruned and reported in strict-decoding format', () => {
  const c = certificate();
  c.spec.bogus = 1;
  c.spec.privateKey.extra = { a: 1 };
  c.spec.secretTemplate.labels.kept = 'yes'; // map values are never unknown
  c.status = { conditions: [{ type: 'Ready', status: 'True', nope: true }] };
  c.topLevel = 'x';
  const { pruned, causes } = admit(CERTIFICATE, c);
  assert.deepEqual(pruned, ['spec.privateKey.extra', 'spec.bogus', 'status.conditions[0].nope', 'topLevel']);
  assert.equal(c.spec.bogus, undefined);
  assert.equal(c.spec.privateKey.extra, undefined);
  assert.equal(c.status.conditions[0].nope, undefined);
  assert.equal(c.topLevel, undefined);
  assert.equal(c.spec.secretTemplate.labels.kept, 'yes');
  assert.deepEqual(c.metadata, { name: 'web', namespace: 'default' });
  assert.deepEqual(causes, []);
});

test('Certificate: root apiVersion, kind and metadata are never pruned', () => {
  const c = certificate();
  c.metadata.bogus = 1; // root metadata is not this pruner's business
  const { pruned } = admit(CERTIFICATE, c);
  assert.deepEqual(pruned, []);
  assert.equal(c.metadata.bogus, 1);
  assert.equal(c.apiVersion, 'cert-manager.io/v1');
  assert.equal(c.kind, 'Certificate');
});

test('Certificate: validation is fast (compiled once, validated many times)', (t) => {
  const schema = clone(CERTIFICATE);
  let t0 = performance.now();
  const c = compileSchemaEagerly(schema);
  const compileMs = performance.now() - t0;
  const objs = Array.from({ length: 3000 }, certificate);
  for (const o of objs.slice(0, 500)) c.validate(o); // warm up
  t0 = performance.now();
  for (const o of objs) assert.equal(c.validate(o).length, 0);
  const perValidate = (performance.now() - t0) / objs.length;
  t0 = performance.now();
  for (const o of objs) { c.prune(o); c.applyDefaults(o); }
  const perPruneDefault = (performance.now() - t0) / objs.length;
  t.diagnostic(`Certificate: compile ${compileMs.toFixed(1)} ms, validate ${(perValidate * 1000).toFixed(1)} µs, prune+default ${(perPruneDefault * 1000).toFixed(1)} µs`);
  assert.ok(perValidate < 0.3, `validate takes ${perValidate} ms`);
  assert.equal(compileSchema(schema), c, 'compiled schemas are cached per schema object');
});

// ---------------------------------------------------------------------------------------------
// cert-manager Issuer / ClusterIssuer CEL rule
// ---------------------------------------------------------------------------------------------

for (const [file, kind] of [['cert-manager/cert-manager.io_issuers.yaml', 'Issuer'], ['cert-manager/cert-manager.io_clusterissuers.yaml', 'ClusterIssuer']] as const) {
  const schema = crdSchema(file);
  const venafi = schema.properties.spec.properties.venafi;
  const rule = venafi['x-kubernetes-validations'][0];

  const issuer = (v: Obj): Obj => ({ apiVersion: 'cert-manager.io/v1', kind, metadata: { name: 'v' }, spec: { venafi: v } });
  const tpp = { url: 'https://tpp.example.com/vedsdk', credentialsRef: { name: 'tpp-secret' } };
  const cloud = { apiTokenSecretRef: { name: 'cloud-secret', key: 'api-key' } };

  test(`${kind}: the venafi "exactly one of" CEL rule from the CRD`, () => {
    assert.match(rule.rule, /has\(self\.tpp\)/);
    assert.deepEqual(admit(schema, issuer({ zone: 'z', tpp })).causes, []);
    assert.deepEqual(admit(schema, issuer({ zone: 'z', cloud })).causes, []);
    const expected = [{ reason: 'FieldValueInvalid', field: 'spec.venafi', message: `Invalid value: "object": ${rule.message}` }];
    assert.deepEqual(admit(schema, issuer({ zone: 'z', tpp, cloud })).causes, expected);
    assert.deepEqual(admit(schema, issuer({ zone: 'z' })).causes, expected);
  });

  test(`${kind}: CEL rules are not run when schema errors block them`, () => {
    const { causes } = admit(schema, issuer({ tpp, cloud }));
    assert.deepEqual(causes, [
      { reason: 'FieldValueRequired', field: 'spec.venafi.zone', message: 'Required value' },
      { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' },
    ]);
  });
}

// ---------------------------------------------------------------------------------------------
// prometheus-operator Prometheus
// ---------------------------------------------------------------------------------------------

const PROMETHEUS = crdSchema('prometheus-operator/monitoring.coreos.com_prometheuses.yaml');

function prometheus(spec: Obj = {}): Obj {
  return { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: 'k8s', namespace: 'monitoring' }, spec };
}

test('Prometheus: the ~800 KB schema compiles', (t) => {
  const t0 = performance.now();
  const c = compileSchemaEagerly(PROMETHEUS);
  const ms = performance.now() - t0;
  t.diagnostic(`Prometheus: compile (structural + CEL + ajv) ${ms.toFixed(0)} ms`);
  assert.ok(c);
  assert.ok(ms < 10_000);
});

test('Prometheus: a minimal valid Prometheus passes and gets the schema defaults', () => {
  const p = prometheus({ replicas: 2, serviceAccountName: 'prometheus', serviceMonitorSelector: {} });
  const { pruned, causes } = admit(PROMETHEUS, p);
  assert.deepEqual(pruned, []);
  assert.deepEqual(causes, []);
  // `default:` values of spec properties (evaluationInterval: 30s, portName: web, …).
  assert.equal(p.spec.evaluationInterval, '30s');
  assert.equal(p.spec.scrapeInterval, '30s');
  assert.equal(p.spec.portName, 'web');
  assert.equal(p.spec.shards, 1);
  assert.equal(p.spec.replicas, 2);
  // Absent objects are not created to hold nested defaults.
  assert.equal(p.spec.containers, undefined);
});

test('Prometheus: defaults inside list items, and explicit values are kept', () => {
  const p = prometheus({
    scrapeInterval: '1m',
    containers: [{ name: 'sidecar', ports: [{ containerPort: 8080 }, { containerPort: 9090, protocol: 'UDP' }] }],
    scrapeClasses: [{ name: 'default', metricRelabelings: [{ sourceLabels: ['a'] }] }],
  });
  const { causes } = admit(PROMETHEUS, p);
  assert.deepEqual(causes, []);
  assert.equal(p.spec.scrapeInterval, '1m');
  assert.deepEqual(p.spec.containers[0].ports, [{ containerPort: 8080, protocol: 'TCP' }, { containerPort: 9090, protocol: 'UDP' }]);
  assert.equal(p.spec.scrapeClasses[0].metricRelabelings[0].action, 'replace');
});

test('Prometheus: CEL rules of the CRD evaluate (spec, nested object, list items)', () => {
  assert.deepEqual(admit(PROMETHEUS, prometheus({ updateStrategy: { type: 'OnDelete', rollingUpdate: { maxUnavailable: 1 } } })).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.updateStrategy', message: 'Invalid value: "object": rollingUpdate requires type to be RollingUpdate' },
  ]);
  assert.deepEqual(admit(PROMETHEUS, prometheus({ updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%' } } })).causes, []);

  // Rule on spec: `(has(self.shards) ? self.shards : 1) >= self.shardingStrategy.topology.values.size()` (int arithmetic).
  const topo = { mode: 'Topology', topology: { values: ['a', 'b', 'c'] } };
  assert.deepEqual(admit(PROMETHEUS, prometheus({ shards: 2, shardingStrategy: topo })).causes, [{
    reason: 'FieldValueInvalid',
    field: 'spec',
    message: 'Invalid value: "object": shards must be greater than or equal to the number of topology values when sharding strategy mode is Topology',
  }]);
  assert.deepEqual(admit(PROMETHEUS, prometheus({ shards: 3, shardingStrategy: topo })).causes, []);
  assert.deepEqual(admit(PROMETHEUS, prometheus({ shardingStrategy: { mode: 'Address', topology: {} } })).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.shardingStrategy', message: "Invalid value: \"object\": topology can only be defined when mode is set to 'Topology'" },
  ]);

  // Rule inside list items.
  assert.deepEqual(admit(PROMETHEUS, prometheus({ remoteWrite: [{ url: 'http://a' }, { url: 'http://b', sigv4: { externalId: 'x' } }] })).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.remoteWrite[1].sigv4', message: 'Invalid value: "object": externalId can only be used when roleArn is specified' },
  ]);
  assert.deepEqual(admit(PROMETHEUS, prometheus({ remoteWrite: [{ url: 'http://b', sigv4: { externalId: 'x', roleArn: 'arn' } }] })).causes, []);
});

test('Prometheus: int-or-string quantities (anyOf + pattern) report kube-openapi errors', () => {
  const p = prometheus({ resources: { limits: { cpu: '500m', memory: 1073741824, gpu: true, bad: 'lots' } } });
  const pattern = PROMETHEUS.properties.spec.properties.resources.properties.limits.additionalProperties.pattern;
  assert.deepEqual(admit(PROMETHEUS, p).causes, [
    { reason: 'FieldValueTypeInvalid', field: 'spec.resources.limits.gpu', message: 'Invalid value: "boolean": spec.resources.limits.gpu in body must be of type integer,string: "boolean"' },
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "": "spec.resources.limits.gpu" must validate at least one schema (anyOf)' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.resources.limits.gpu', message: 'Invalid value: "boolean": spec.resources.limits.gpu in body must be of type integer: "boolean"' },
    { reason: 'FieldValueInvalid', field: 'spec.resources.limits.bad', message: `Invalid value: "lots": spec.resources.limits.bad in body should match '${pattern}'` },
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' },
  ]);
});

test('Prometheus: x-kubernetes-list-type map duplicates (single and multiple keys)', () => {
  assert.deepEqual(admit(PROMETHEUS, prometheus({ hostAliases: [{ ip: '10.0.0.1', hostnames: ['a'] }, { ip: '10.0.0.2', hostnames: ['b'] }, { ip: '10.0.0.1', hostnames: ['c'] }] })).causes, [
    { reason: 'FieldValueDuplicate', field: 'spec.hostAliases[2]', message: 'Duplicate value: map[string]interface {}{"ip":"10.0.0.1"}' },
  ]);
  // ports are keyed by containerPort+protocol; protocol defaults to TCP before validation.
  const p = prometheus({ containers: [{ name: 'c', ports: [{ containerPort: 80 }, { containerPort: 80, protocol: 'UDP' }, { containerPort: 80, protocol: 'TCP' }] }] });
  assert.deepEqual(admit(PROMETHEUS, p).causes, [
    { reason: 'FieldValueDuplicate', field: 'spec.containers[0].ports[2]', message: 'Duplicate value: map[string]interface {}{"containerPort":80, "protocol":"TCP"}' },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Synthetic schemas: x-kubernetes-* extensions
// ---------------------------------------------------------------------------------------------

test('x-kubernetes-int-or-string: integers and strings pass, other types fail', () => {
  const schema = crSchema({ port: { 'x-kubernetes-int-or-string': true } });
  assert.deepEqual(admit(schema, cr({ port: 8080 })).causes, []);
  assert.deepEqual(admit(schema, cr({ port: 'http' })).causes, []);
  assert.deepEqual(admit(schema, cr({ port: true })).causes, [
    { reason: 'FieldValueTypeInvalid', field: 'spec.port', message: 'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"' },
  ]);
  assert.deepEqual(admit(schema, cr({ port: 1.5 })).causes, [
    { reason: 'FieldValueTypeInvalid', field: 'spec.port', message: 'Invalid value: "number": spec.port in body must be of type integer,string: "number"' },
  ]);
  // As a CEL value, an int-or-string is an int or a string.
  const withRule = crSchema({ port: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-validations': [{ rule: 'type(self) == string || self < 65536', message: 'port too high' }] } });
  assert.deepEqual(admit(withRule, cr({ port: 80 })).causes, []);
  assert.deepEqual(admit(withRule, cr({ port: 'http' })).causes, []);
  assert.deepEqual(admit(withRule, cr({ port: 70000 })).causes, [{ reason: 'FieldValueInvalid', field: 'spec.port', message: 'Invalid value: 70000: port too high' }]);
});

test('nullable: null allowed only with nullable: true; non-nullable nulls are dropped or defaulted', () => {
  const schema = crSchema({
    maybe: { type: 'string', nullable: true },
    never: { type: 'string' },
    withDefault: { type: 'string', default: 'dflt' },
    nullableInt: { 'x-kubernetes-int-or-string': true, nullable: true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
  });
  const o = cr({ maybe: null, never: null, withDefault: null, nullableInt: null });
  const { pruned, causes } = admit(schema, o);
  assert.deepEqual(pruned, []); // dropped nulls are not unknown fields
  assert.deepEqual(causes, []);
  assert.deepEqual(o.spec, { maybe: null, withDefault: 'dflt', nullableInt: null });
  // Validated as is (no pruning), a non-nullable null is a type error.
  assert.deepEqual(compileSchema(schema).validate(cr({ never: null })), [
    { reason: 'FieldValueTypeInvalid', field: 'spec.never', message: 'Invalid value: "null": spec.never in body must be of type string: "null"' },
  ]);
});

test('x-kubernetes-preserve-unknown-fields keeps unknown fields but prunes below known ones', () => {
  const schema = crSchema({
    config: {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: { known: { type: 'object', properties: { a: { type: 'string' } } } },
    },
    raw: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
  });
  const o = cr({ config: { anything: { deep: [1, 2] }, known: { a: 'x', b: 'pruned' } }, raw: { x: { y: 'z' } }, other: 1 });
  const { pruned, causes } = admit(schema, o);
  assert.deepEqual(pruned, ['spec.config.known.b', 'spec.other']);
  assert.deepEqual(o.spec, { config: { anything: { deep: [1, 2] }, known: { a: 'x' } }, raw: { x: { y: 'z' } } });
  assert.deepEqual(causes, []);
});

test('x-kubernetes-embedded-resource: apiVersion/kind/metadata kept, metadata pruned, TypeMeta and ObjectMeta validated', () => {
  const schema = crSchema({
    template: {
      type: 'object',
      'x-kubernetes-embedded-resource': true,
      'x-kubernetes-preserve-unknown-fields': true,
    },
    strict: {
      type: 'object',
      'x-kubernetes-embedded-resource': true,
      properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } },
    },
  });
  const o = cr({
    template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' }, bogus: 1 }, spec: { containers: [] } },
    strict: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { a: 'x', b: 'y' }, extra: true },
  });
  const { pruned, causes } = admit(schema, o);
  assert.deepEqual(pruned, ['spec.template.metadata.bogus', 'spec.strict.spec.b', 'spec.strict.extra']);
  assert.deepEqual(o.spec.template, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: 'b' } }, spec: { containers: [] } });
  assert.deepEqual(o.spec.strict, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { a: 'x' } });
  assert.deepEqual(causes, []);

  const bad = cr({ template: { apiVersion: 'a/b/c', metadata: { name: 'a/b' } }, strict: { apiVersion: 'v1', kind: 'My_Kind' } });
  assert.deepEqual(admit(schema, bad).causes, [
    { reason: 'FieldValueRequired', field: 'spec.template.kind', message: 'Required value' },
    { reason: 'FieldValueInvalid', field: 'spec.template.apiVersion', message: 'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c' },
    { reason: 'FieldValueInvalid', field: 'spec.template.metadata.name', message: `Invalid value: "a/b": may not contain '/' or '%'` },
    {
      reason: 'FieldValueInvalid',
      field: 'spec.strict.kind',
      message: "Invalid value: \"My_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    },
  ]);
});

test('x-kubernetes-list-type set and map: duplicates are FieldValueDuplicate', () => {
  const schema = crSchema({
    tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
    ports: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } },
    },
    byMap: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'integer' }, 'x-kubernetes-list-type': 'set' },
    },
  });
  assert.deepEqual(admit(schema, cr({ tags: ['a', 'b'], ports: [{ name: 'http', port: 80 }, { name: 'https', port: 443 }] })).causes, []);
  assert.deepEqual(admit(schema, cr({ tags: ['a', 'b', 'a', 'a'], ports: [{ name: 'http', port: 80 }, { name: 'http', port: 8080 }], byMap: { x: [1, 1] } })).causes, [
    { reason: 'FieldValueDuplicate', field: 'spec.tags[2]', message: 'Duplicate value: "a"' },
    { reason: 'FieldValueDuplicate', field: 'spec.ports[1]', message: 'Duplicate value: map[string]interface {}{"name":"http"}' },
    { reason: 'FieldValueDuplicate', field: 'spec.byMap[x][1]', message: 'Duplicate value: 1' },
  ]);
  // On update, list invariants are only enforced if the old object satisfied them (ratcheting).
  const old = cr({ tags: ['a', 'a'] });
  assert.deepEqual(admit(schema, cr({ tags: ['a', 'a', 'b'] }), old).causes, []);
});

test('transition rules: self == oldSelf (immutability) is checked on update only', () => {
  const schema = crSchema({
    name: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'Value is immutable' }] },
    size: { type: 'integer' },
  }, { 'x-kubernetes-validations': [{ rule: '!has(oldSelf.size) || self.size >= oldSelf.size', message: 'size may not shrink' }] });
  assert.deepEqual(admit(schema, cr({ name: 'a', size: 1 })).causes, [], 'create: transition rules are skipped');
  assert.deepEqual(admit(schema, cr({ name: 'a', size: 2 }), cr({ name: 'a', size: 1 })).causes, []);
  assert.deepEqual(admit(schema, cr({ name: 'b', size: 0 }), cr({ name: 'a', size: 1 })).causes, [
    { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": size may not shrink' },
    { reason: 'FieldValueInvalid', field: 'spec.name', message: 'Invalid value: "b": Value is immutable' },
  ]);
  // A field that did not exist before has no oldSelf: the rule is skipped.
  assert.deepEqual(admit(schema, cr({ name: 'b' }), cr({})).causes, []);
});

test('transition rules in map-type list items correlate old items by key', () => {
  const schema = crSchema({
    items: {
      type: 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, value: { type: 'string' } },
        'x-kubernetes-validations': [{ rule: 'self.value == oldSelf.value', message: 'value is immutable' }],
      },
    },
  });
  const old = cr({ items: [{ name: 'a', value: '1' }, { name: 'b', value: '2' }] });
  assert.deepEqual(admit(schema, cr({ items: [{ name: 'b', value: '2' }, { name: 'a', value: '1' }, { name: 'c', value: '3' }] }), old).causes, []);
  assert.deepEqual(admit(schema, cr({ items: [{ name: 'b', value: 'x' }] }), old).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.items[0]', message: 'Invalid value: "object": value is immutable' },
  ]);
});

test('ratcheting: unchanged invalid values do not fail an update', () => {
  const schema = crSchema({
    replicas: { type: 'integer', maximum: 5 },
    name: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self.startsWith("x")', message: 'must start with x' }] },
  });
  const old = cr({ replicas: 10, name: 'bad' });
  assert.deepEqual(admit(schema, cr({ replicas: 10, name: 'bad' }), old).causes, []);
  assert.deepEqual(admit(schema, cr({ replicas: 11, name: 'bad' }), old).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'Invalid value: 11: spec.replicas in body should be less than or equal to 5' },
  ]);
  assert.deepEqual(admit(schema, cr({ replicas: 10, name: 'worse' }), old).causes, [
    { reason: 'FieldValueInvalid', field: 'spec.name', message: 'Invalid value: "worse": must start with x' },
  ]);
});

test('CEL: messageExpression, fieldPath, reason, default message, int/double values, runtime errors', () => {
  const schema = crSchema({
    replicas: { type: 'integer' },
    ratio: { type: 'number' },
    when: { type: 'string', format: 'date-time' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
  }, {
    'x-kubernetes-validations': [
      { rule: 'self.replicas <= 3', messageExpression: "'replicas ' + string(self.replicas) + ' is more than 3'" },
      { rule: 'self.replicas + 1 > 1', fieldPath: '.replicas', reason: 'FieldValueForbidden', message: 'must be positive' },
      { rule: '!has(self.ratio) || self.ratio * 2.0 < 3.0' },
      { rule: "!has(self.when) || self.when < timestamp('2100-01-01T00:00:00Z')", message: 'too late' },
      { rule: "!has(self.labels) || self.labels.all(k, k.startsWith('app'))", fieldPath: '.labels', message: 'labels must start with app' },
      { rule: 'self.missing == 1' },
    ],
  });
  assert.deepEqual(admit(schema, cr({ replicas: 2, ratio: 1, when: '2024-01-01T00:00:00Z', labels: { app: 'x' } })).causes, [
    { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": no such key: missing evaluating rule: self.missing == 1' },
  ]);
  assert.deepEqual(admit(schema, cr({ replicas: 0, ratio: 1.6, when: '2200-01-01T00:00:00Z', labels: { team: 'x' } })).causes.slice(0, 5), [
    { reason: 'FieldValueForbidden', field: 'spec.replicas', message: 'Forbidden: must be positive' },
    { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": failed rule: !has(self.ratio) || self.ratio * 2.0 < 3.0' },
    { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": too late' },
    { reason: 'FieldValueInvalid', field: 'spec.labels', message: 'Invalid value: "object": labels must start with app' },
    { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": no such key: missing evaluating rule: self.missing == 1' },
  ]);
  assert.deepEqual(admit(schema, cr({ replicas: 7 })).causes[0], {
    reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": replicas 7 is more than 3',
  });
});

test('CEL: Kubernetes library functions and escaped property names', () => {
  const schema = crSchema({
    'x-name': { type: 'string' },
    namespace: { type: 'string' },
    url: { type: 'string' },
    ips: { type: 'array', items: { type: 'string' } },
    memory: { 'x-kubernetes-int-or-string': true },
  }, {
    'x-kubernetes-validations': [
      { rule: "self.x__dash__name.lowerAscii() == 'abc'", message: 'x-name' },
      { rule: "self.__namespace__ == 'ns'", message: 'namespace' },
      { rule: "isURL(self.url) && url(self.url).getHost() == 'example.com'", message: 'url' },
      { rule: 'self.ips.all(ip, isIP(ip)) && self.ips.isSorted()', message: 'ips' },
      { rule: "quantity(string(self.memory)).isLessThan(quantity('1Gi'))", message: 'memory' },
      { rule: "self.x__dash__name.matches('^[a-zA-Z]+$') && self.x__dash__name.lowerAscii().find('[a-z]+') == 'abc'", message: 'regex' },
    ],
  });
  assert.deepEqual(admit(schema, cr({ 'x-name': 'ABC', namespace: 'ns', url: 'https://example.com/x', ips: ['10.0.0.1', '10.0.0.2'], memory: '512Mi' })).causes, []);
  const causes = admit(schema, cr({ 'x-name': 'abd', namespace: 'other', url: 'nope', ips: ['10.0.0.2', '10.0.0.1'], memory: '2Gi' })).causes;
  assert.deepEqual(causes.map((c) => c.message!.replace('Invalid value: "object": ', '')), ['x-name', 'namespace', 'url', 'ips', 'memory', 'regex']);
});

test('OpenAPI keywords report kube-openapi messages', () => {
  const schema = crSchema({
    name: { type: 'string', pattern: '^a', maxLength: 5, minLength: 2 },
    count: { type: 'integer', minimum: 1, maximum: 10, multipleOf: 2 },
    ratio: { type: 'number', exclusiveMinimum: true, minimum: 0, exclusiveMaximum: true, maximum: 1 },
    list: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2, uniqueItems: true },
    map: { type: 'object', additionalProperties: { type: 'integer' }, minProperties: 1, maxProperties: 1 },
    when: { type: 'string', format: 'date-time' },
    id: { type: 'string', format: 'uuid' },
    bigint: { type: 'integer', format: 'int32' },
    odd: { type: 'string', format: 'my-own-format' },
    mode: { type: 'string', enum: ['A', 'B'] },
    num: { type: 'integer', enum: [1, 2] },
  });
  assert.deepEqual(admit(schema, cr({
    name: 'abc', count: 2, ratio: 0.5, list: ['x'], map: { a: 1 }, when: '2024-01-01T10:00:00Z', id: 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6',
    bigint: 3_000_000_000, odd: 'whatever', mode: 'A', num: 2,
  })).causes, []);
  const causes = admit(schema, cr({
    name: 'b', count: 13, ratio: 1, list: ['x', 'x', 'y'], map: { a: 1, b: 'x' }, when: 'yesterday', id: 'nope', mode: 'C', num: 3,
  })).causes;
  assert.deepEqual(causes, [
    { reason: 'FieldValueInvalid', field: 'spec.name', message: 'Invalid value: "b": spec.name in body should be at least 2 chars long' },
    { reason: 'FieldValueInvalid', field: 'spec.name', message: "Invalid value: \"b\": spec.name in body should match '^a'" },
    { reason: 'FieldValueInvalid', field: 'spec.count', message: 'Invalid value: 13: spec.count in body should be less than or equal to 10' },
    { reason: 'FieldValueInvalid', field: 'spec.count', message: 'Invalid value: 13: spec.count in body should be a multiple of 2' },
    { reason: 'FieldValueInvalid', field: 'spec.ratio', message: 'Invalid value: 1: spec.ratio in body should be less than 1' },
    { reason: 'FieldValueTooMany', field: 'spec.list', message: 'Too many: 3: must have at most 2 items' },
    { reason: 'FieldValueInvalid', field: 'spec.list', message: 'Invalid value: "": spec.list in body shouldn\'t contain duplicates' },
    { reason: 'FieldValueTooMany', field: 'spec.map', message: 'Too many: 2: must have at most 1 items' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.map.b', message: 'Invalid value: "string": spec.map.b in body must be of type integer: "string"' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.when', message: 'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.id', message: 'Invalid value: "nope": spec.id in body must be of type uuid: "nope"' },
    { reason: 'FieldValueNotSupported', field: 'spec.mode', message: 'Unsupported value: "C": supported values: "A", "B"' },
    { reason: 'FieldValueNotSupported', field: 'spec.num', message: 'Unsupported value: 3: supported values: "1", "2"' },
  ]);
  assert.deepEqual(admit(schema, cr({ name: 'abcdefg', list: [], map: {} })).causes, [
    { reason: 'FieldValueTooLong', field: 'spec.name', message: 'Too long: may not be more than 5 bytes' },
    { reason: 'FieldValueInvalid', field: 'spec.list', message: 'Invalid value: 0: spec.list in body should have at least 1 items' },
    { reason: 'FieldValueInvalid', field: 'spec.map', message: 'Invalid value: 0: spec.map in body should have at least 1 properties' },
  ]);
  // Type errors with a format: kube-openapi names the format and the Go kind of the value.
  assert.deepEqual(admit(schema, cr({ when: 5, bigint: 1.5 })).causes, [
    { reason: 'FieldValueTypeInvalid', field: 'spec.when', message: 'Invalid value: "int64": spec.when in body must be of type date-time: "int64"' },
    { reason: 'FieldValueTypeInvalid', field: 'spec.bigint', message: 'Invalid value: "float64": spec.bigint in body must be of type int32: "float64"' },
  ]);
});

test('allOf, oneOf and not report kube-openapi composite errors', () => {
  const schema = crSchema({
    a: { type: 'object', properties: { x: { type: 'string' }, y: { type: 'string' } }, oneOf: [{ required: ['x'] }, { required: ['y'] }] },
    b: { type: 'string', allOf: [{ minLength: 2 }, { pattern: '^b' }] },
    c: { type: 'string', not: { enum: ['forbidden'] } },
  });
  assert.deepEqual(admit(schema, cr({ a: { x: '1' }, b: 'bb', c: 'ok' })).causes, []);
  assert.deepEqual(admit(schema, cr({ a: { x: '1', y: '2' }, b: 'a', c: 'forbidden' })).causes, [
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "": "spec.a" must validate one and only one schema (oneOf). Found 2 valid alternatives' },
    { reason: 'FieldValueInvalid', field: 'spec.b', message: 'Invalid value: "a": spec.b in body should be at least 2 chars long' },
    { reason: 'FieldValueInvalid', field: 'spec.b', message: "Invalid value: \"a\": spec.b in body should match '^b'" },
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "": "spec.b" must validate all the schemas (allOf). None validated' },
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "": "spec.c" must not validate the schema (not)' },
  ]);
  assert.deepEqual(admit(schema, cr({ a: {} })).causes, [
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "": "spec.a" must validate one and only one schema (oneOf). Found none valid' },
    { reason: 'FieldValueRequired', field: 'spec.a.x', message: 'Required value' },
  ]);
});

test('defaults: nested, in list items and map values, pruned, and for non-nullable nulls', () => {
  const schema = crSchema({
    config: {
      type: 'object',
      default: { mode: 'auto', unknown: 'pruned-from-default' },
      properties: { mode: { type: 'string' }, level: { type: 'integer', default: 3 } },
    },
    list: { type: 'array', items: { type: 'object', properties: { kind: { type: 'string', default: 'k' } } } },
    map: { type: 'object', additionalProperties: { type: 'object', properties: { on: { type: 'boolean', default: true } } } },
    nulls: { type: 'array', items: { type: 'string', default: 'filled' } },
  });
  const o = cr({ list: [{}, { kind: 'x' }], map: { a: {}, b: { on: false } }, nulls: ['a', null] });
  const { causes } = admit(schema, o);
  assert.deepEqual(causes, []);
  assert.deepEqual(o.spec, {
    config: { mode: 'auto', level: 3 },
    list: [{ kind: 'k' }, { kind: 'x' }],
    map: { a: { on: true }, b: { on: false } },
    nulls: ['a', 'filled'],
  });
  // Defaults are deep-copied.
  const o2 = cr({});
  admit(schema, o2);
  o2.spec.config.mode = 'changed';
  const o3 = cr({});
  admit(schema, o3);
  assert.equal(o3.spec.config.mode, 'auto');
});

test('pruning: list items and nested unknowns are reported with indices, in document order', () => {
  const schema = crSchema({
    items: { type: 'array', items: { type: 'object', properties: { a: { type: 'string' }, sub: { type: 'object', properties: { b: { type: 'string' } } } } } },
    noSchemaItems: { type: 'array' },
  });
  const o = cr({ z: 1, items: [{ a: 'x', y: 1 }, { sub: { b: 'x', c: 2 } }], noSchemaItems: [{ q: 1 }, 'scalar'] });
  const { pruned } = admit(schema, o);
  assert.deepEqual(pruned, ['spec.z', 'spec.items[0].y', 'spec.items[1].sub.c', 'spec.noSchemaItems[0].q']);
  assert.deepEqual(o.spec, { items: [{ a: 'x' }, { sub: { b: 'x' } }], noSchemaItems: [{}, 'scalar'] });
});

test('defaulting says whether it set anything, and a schema says whether it has defaults (defaulting on read)', () => {
  const plain = compileSchema({ type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } });
  assert.equal(plain.hasDefaults, false);
  assert.equal(plain.applyDefaults({ spec: {} }), false);
  const c = compileSchema({
    type: 'object', properties: { spec: { type: 'object', properties: {
      a: { type: 'string', default: 'A' },
      list: { type: 'array', items: { type: 'object', properties: { n: { type: 'integer', default: 1 } } } },
      map: { type: 'object', additionalProperties: { type: 'string', default: 'v' } },
    } } },
  });
  assert.equal(c.hasDefaults, true);
  const missing = { spec: { list: [{}, { n: 5 }], map: { k: null } } };
  assert.equal(c.applyDefaults(missing), true);
  assert.deepEqual(missing, { spec: { a: 'A', list: [{ n: 1 }, { n: 5 }], map: { k: 'v' } } });
  assert.equal(c.applyDefaults(missing), false, 'an object that has every default is left as it is');
  const nested = { spec: { a: 'x', list: [{ n: 2 }, {}] } };
  assert.equal(c.applyDefaults(nested), true, 'a default deep in a list item counts');
  assert.deepEqual(nested.spec.list, [{ n: 2 }, { n: 1 }]);
  assert.equal(c.applyDefaults({ metadata: { name: 'x' } }), false, 'no spec: nothing to default under it');
});

test('defaulting refuses with 413 to copy more than MAX_DEFAULTED_CHARS of defaults into one object', () => {
  const big = 'x'.repeat(1000);
  const c = compileSchema({ type: 'object', properties: { spec: { type: 'object', properties: {
    items: { type: 'array', items: { type: 'object', properties: { d: { type: 'string', default: big } } } },
  } } } });
  const within = { spec: { items: Array.from({ length: 3000 }, () => ({})) } };
  assert.equal(c.applyDefaults(within), true);
  assert.equal((within.spec.items[2999] as any).d, big);
  const beyond = { spec: { items: Array.from({ length: Math.ceil(MAX_DEFAULTED_CHARS / 1002) + 1 }, () => ({})) } };
  assert.throws(() => c.applyDefaults(beyond), (err: any) => err instanceof StatusError && err.code === 413 && err.reason === 'RequestEntityTooLarge'
    && /defaults of the schema would add more than 3145728 characters/.test(err.message));
});
