import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { StatusCause } from '../../src/apimachinery/errors.js';
import { applyCRDDefaults, validateCRD } from '../../src/apiextensions/crdvalidation.js';
import { celEnvironment } from '../../src/apiextensions/cel.js';
import {
  CelCostLimitError, CostBudget, OUT_OF_BUDGET, PER_CALL_LIMIT, costErrorMessage, estimateCost, evaluateMetered, maxCardinality, sizedTypeOf,
} from '../../src/apiextensions/celcost.js';
import { compileSchema } from '../../src/apiextensions/schema.js';
import { TESTDATA_CRDS } from '../helpers.js';
import { POLICIES_GR, POLICY_BINDINGS_GR, ValidatingPolicies } from '../../src/admission/policies.js';
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { ClusterAPIs } from '../../src/apiextensions/registry.js';
import type { WebhookAttributes } from '../../src/registry/store.js';
import { objectCache } from './objectcache.js';
import { validateSchemaSpec } from '../../src/apiexports/schemas.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';

const CONFIGMAPS = BUILTIN_RESOURCES.find((d) => d.group === '' && d.plural === 'configmaps')!;

type Obj = Record<string, any>;

const ISSUE_RULE = "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != 'abc')))";

function crdWith(spec: Obj, rules: Obj[] = [{ rule: ISSUE_RULE }]): Obj {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com', scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{
        name: 'v1', served: true, storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-validations': rules, properties: spec } } } },
      }],
    },
  };
}

const unboundedList = { l: { type: 'array', items: { type: 'string' } } };
const boundedList = { l: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 10 } } };
const show = (cs: StatusCause[]) => cs.map((c) => `${c.field}: ${c.message}`).join('\n');
const estimate = (rule: string, schema: Obj): number => {
  const t = sizedTypeOf(schema);
  return estimateCost(celEnvironment().parse(rule).ast, new Map([['self', t], ['oldSelf', t]])).max;
};

test('kube cost error message: factor formats', () => {
  assert.match(costErrorMessage('estimated rule cost', 1e12, 1e7), /exceeds budget by factor of more than 100x \(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared\)$/);
  assert.match(costErrorMessage('estimated rule cost', 2.5e7, 1e7), /by factor of 2\.5x/);
  assert.match(costErrorMessage('estimated rule cost', 1.2e7, 1e7), /by factor of 1\.200000x/);
});

test('sizes follow SchemaDeclType: maxLength ×4, unbounded lists from the 3 MiB request and the item size', () => {
  const t = sizedTypeOf({ type: 'object', properties: unboundedList })!;
  const l = t.fields!.get('l')!;
  assert.equal(l.maxElements, Math.floor((3 * 1024 * 1024 - 2) / 3)); // strings serialize as at least ""
  assert.equal(l.elem!.maxElements, 3 * 1024 * 1024 - 2);
  assert.equal(sizedTypeOf({ type: 'string', maxLength: 10 })!.maxElements, 40);
  assert.equal(sizedTypeOf({ type: 'string', enum: ['a', 'abcd'] })!.maxElements, 4);
  assert.equal(sizedTypeOf({ type: 'string', format: 'date-time' })!.maxElements, 32);
  assert.equal(maxCardinality(2), Math.floor(3 * 1024 * 1024 / 3));
});

test('estimator: the issue rule over unbounded strings is refused, bounded it costs what cel-go estimates', () => {
  assert.ok(estimate(ISSUE_RULE, { type: 'object', properties: unboundedList }) > 1e18);
  // 3 nested comprehensions of 10 over strings of ≤ 40 bytes: cel-go's 27,663.
  assert.equal(estimate(ISSUE_RULE, { type: 'object', properties: boundedList }), 27663);
  // String traversal factors: startsWith costs the prefix, contains the product, matches ×0.25 the pattern.
  const s = { type: 'object', properties: { s: { type: 'string', maxLength: 25 } } };
  assert.equal(estimate("self.s.startsWith('abc')", s), 2 + 1);
  assert.equal(estimate("self.s.contains('abcdefghijk')", s), 2 + 10 * 2);
  assert.equal(estimate("self.s.matches('^[a-z]+$')", s), 2 + 11 * 2);
});

test('CRD creation: the issue rule is refused with the factor named; bounded, it is accepted', () => {
  const crd = crdWith(unboundedList);
  applyCRDDefaults(crd);
  const errs = validateCRD(crd);
  const perRule = errs.find((c) => c.field === 'spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule');
  assert.ok(perRule, show(errs));
  assert.equal(perRule.reason, 'FieldValueForbidden');
  assert.equal(perRule.message, 'Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)');
  const total = errs.find((c) => c.field === 'spec.versions[0].schema.openAPIV3Schema');
  assert.match(total?.message ?? '', /x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x/);

  const ok = crdWith(boundedList);
  applyCRDDefaults(ok);
  assert.deepEqual(validateCRD(ok), []);
});

test('APIResourceSchema (kcp): the issue rule is refused as in its CRD, on the schema\'s own fields', () => {
  const schema = (props: Obj): KubeObject => ({
    apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIResourceSchema', metadata: { name: 'v1.widgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-validations': [{ rule: ISSUE_RULE }], properties: props } } } }] },
  });
  const errs = validateSchemaSpec(schema(unboundedList));
  assert.ok(errs.some((c) => c.field === 'spec.versions[0].schema.properties[spec].x-kubernetes-validations[0].rule' && /estimated rule cost exceeds budget by factor of more than 100x/.test(c.message ?? '')), show(errs));
  assert.ok(errs.some((c) => c.field === 'spec.versions[0].schema' && /estimated rule cost total/.test(c.message ?? '')), show(errs));
  assert.deepEqual(validateSchemaSpec(schema(boundedList)), []);
});

test('cardinality: a rule on list items is multiplied by maxItems, else by the unbounded estimate', () => {
  const item = (maxItems?: number): Obj => ({
    items: { type: 'array', ...(maxItems ? { maxItems } : {}), items: { type: 'object', 'x-kubernetes-validations': [{ rule: 'self.name.startsWith(self.prefix)' }], properties: { name: { type: 'string', maxLength: 1000 }, prefix: { type: 'string', maxLength: 1000 } } } },
  });
  const bounded = crdWith(item(100), []);
  applyCRDDefaults(bounded);
  assert.deepEqual(validateCRD(bounded), []);
  // startsWith over 4,000 bytes (401) × up to 1,048,575 items.
  const unbounded = crdWith(item(), []);
  applyCRDDefaults(unbounded);
  const errs = validateCRD(unbounded);
  assert.ok(errs.some((c) => /estimated rule cost exceeds budget by factor of/.test(c.message ?? '')), show(errs));
});

test('update ratcheting: a rule the stored CRD already has is not estimated again', () => {
  const old = crdWith(unboundedList);
  applyCRDDefaults(old);
  const next = structuredClone(old);
  next.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.other = { type: 'string' };
  assert.deepEqual(validateCRD(next, old), []);
});

test('fixture CRDs (cert-manager, prometheus-operator) and the project CRDs are accepted, and estimation is quick', () => {
  const dirs = [join(TESTDATA_CRDS, 'cert-manager'), join(TESTDATA_CRDS, 'prometheus-operator'), join(import.meta.dirname, '..', '..', 'crds')];
  let n = 0;
  for (const dir of dirs) {
    for (const f of readdirSync(dir)) {
      if (!/\.ya?ml$/.test(f)) continue;
      for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
        const crd = doc.toJS() as Obj | null;
        if (!crd || crd.kind !== 'CustomResourceDefinition') continue;
        applyCRDDefaults(crd);
        const t0 = performance.now();
        const errs = validateCRD(crd).filter((c) => /cost/.test(c.message ?? ''));
        assert.deepEqual(errs, [], `${f}: ${show(errs)} (${Math.round(performance.now() - t0)} ms)`);
        n++;
      }
    }
  }
  assert.ok(n >= 11);
});

test('runtime: an expression stops at the per-call limit with cel-go\'s error, quickly', () => {
  const p = celEnvironment().parse(ISSUE_RULE);
  const l = Array.from({ length: 300 }, (_, i) => `s${i}`);
  const t0 = performance.now();
  assert.throws(() => evaluateMetered(p, { self: { l } }), (e: unknown) => e instanceof CelCostLimitError && e.message === 'operation cancelled: actual cost limit exceeded');
  assert.ok(performance.now() - t0 < 2000);
  // exists swallows errors of later elements in cel-js; the stop still counts.
  const q = celEnvironment().parse("self.l.exists(x, x == 'hit' || self.l.exists(y, self.l.exists(z, y == z + x)))");
  assert.throws(() => evaluateMetered(q, { self: { l: [...l, 'hit'] } }), CelCostLimitError);
  // Ordinary rules run and report their cost.
  const r = evaluateMetered(celEnvironment().parse("self.l.all(x, x.startsWith('s'))"), { self: { l } });
  assert.equal(r.value, true);
  assert.ok(r.cost > 300 && r.cost < PER_CALL_LIMIT, String(r.cost));
});

test('runtime budget: rules of one object share kube\'s budget; a spent budget stops the rest', () => {
  const b = new CostBudget(1000);
  const p = celEnvironment().parse("self.l.all(x, x.startsWith('s'))");
  const l = Array.from({ length: 100 }, (_, i) => `s${i}`);
  assert.equal(b.evaluate(p, { self: { l } }), true);
  assert.throws(() => { for (;;) b.evaluate(p, { self: { l } }); }, (e: unknown) => (e as Error).message === OUT_OF_BUDGET);
  assert.ok(b.remaining < 0);
});

test('custom resource validation: a rule no estimate stopped (e.g. stored before) over a large input is cut off with kube\'s 422 cause in well under a second', () => {
  // The estimate assumes the declared bounds; data that bypasses them (here: maxItems is checked
  // by the OpenAPI validator, but the rules still run over what arrived) must still stop.
  const schema = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        'x-kubernetes-validations': [{ rule: ISSUE_RULE }, { rule: 'self.l.size() >= 0', message: 'never reached' }],
        properties: { l: { type: 'array', items: { type: 'string', maxLength: 10 } } },
      },
    },
  };
  const compiled = compileSchema(schema);
  const obj = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { l: Array.from({ length: 2000 }, (_, i) => `v${i}`) } };
  const t0 = performance.now();
  const causes = compiled.validate(obj);
  const ms = performance.now() - t0;
  assert.ok(ms < 1000, `${ms} ms`);
  const c = causes.find((x) => x.field === 'spec');
  assert.equal(c?.message, `Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: ${ISSUE_RULE}`);
  assert.ok(!causes.some((x) => x.message?.includes('never reached')));
});

const vapRules = { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: '*' }] };
const vapAttrs = (object: KubeObject): WebhookAttributes => ({ operation: 'CREATE', cluster: 'c', desc: CONFIGMAPS, subresource: '', namespace: 'ns', name: 'cm', user: { name: 'u', groups: [] }, object, dryRun: false });
const vap = (validations: Obj[]): ValidatingPolicies => {
  const policy: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' }, spec: { failurePolicy: 'Fail', matchConstraints: vapRules, validations } };
  const binding: KubeObject = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: { policyName: 'p', validationActions: ['Deny'] } };
  return new ValidatingPolicies({ cache: objectCache([[POLICIES_GR, policy], [POLICY_BINDINGS_GR, binding]]), apis: () => ({ descriptors: [] }) as unknown as ClusterAPIs });
};

test('ValidatingAdmissionPolicy: an expression stops at the per-call limit, and a spent budget fails the evaluation, with kube\'s messages', async () => {
  const data = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, `v${i}`]));
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns' }, data };
  const quadratic = 'object.data.all(k, object.data.all(j, k == j || object.data[k] != object.data[j]))';
  const cubic = `object.data.all(a, ${quadratic})`;
  const t0 = performance.now();
  await assert.rejects(vap([{ expression: cubic }]).validate(vapAttrs(cm)), (err: Error) => {
    assert.equal(err.message, `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression '${cubic}' resulted in error: operation cancelled: actual cost limit exceeded`);
    return true;
  });
  assert.ok(performance.now() - t0 < 2000);
  // Each quadratic expression stays under the per-call limit; forty of them exceed the budget.
  await assert.rejects(vap(Array.from({ length: 40 }, () => ({ expression: quadratic }))).validate(vapAttrs(cm)), (err: Error) => {
    assert.equal(err.message, `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ${OUT_OF_BUDGET}`);
    return true;
  });
  await vap([{ expression: quadratic }]).validate(vapAttrs(cm));
});
