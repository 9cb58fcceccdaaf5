import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { StatusCause } from '../../src/apimachinery/errors.js';
import { acceptNames, applyCRDDefaults, validateCRD, CONVERSION_SERVICE_UNSUPPORTED } from '../../src/apiextensions/crdvalidation.js';
import { TESTDATA_CRDS } from '../helpers.js';

type Obj = Record<string, any>;

const TESTDATA = TESTDATA_CRDS;

function loadTestdata(): Array<{ file: string; crd: Obj }> {
  const out: Array<{ file: string; crd: Obj }> = [];
  for (const dir of readdirSync(TESTDATA)) {
    for (const f of readdirSync(join(TESTDATA, dir))) {
      if (!/\.ya?ml$/.test(f)) continue;
      for (const doc of parseAllDocuments(readFileSync(join(TESTDATA, dir, f), 'utf8'))) {
        const crd = doc.toJS() as Obj | null;
        if (crd && crd.kind === 'CustomResourceDefinition') out.push({ file: `${dir}/${f}`, crd });
      }
    }
  }
  return out;
}

const show = (cs: StatusCause[]) => cs.map((c) => `${c.field}: ${c.message}`).join('\n');

/** A minimal valid v1 CRD. */
function baseCRD(): Obj {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'], categories: ['all'] },
      scope: 'Namespaced',
      versions: [{
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  replicas: { type: 'integer', default: 1, minimum: 0 },
                  port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
                  ports: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } },
                  },
                  selector: { type: 'string' },
                },
                'x-kubernetes-validations': [{ rule: 'self.replicas >= 0', message: 'replicas must not be negative' }],
              },
              status: { type: 'object', properties: { replicas: { type: 'integer' }, selector: { type: 'string' } } },
            },
          },
        },
        subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } },
        additionalPrinterColumns: [{ name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' }],
        selectableFields: [{ jsonPath: '.spec.selector' }],
      }],
    },
  };
}

const v0 = 'spec.versions[0]';
const root = `${v0}.schema.openAPIV3Schema`;

function fieldsOf(cs: StatusCause[]): string[] {
  return cs.map((c) => c.field ?? '');
}

test('every testdata CRD (cert-manager, prometheus-operator) is valid on create and on update against itself', () => {
  const crds = loadTestdata();
  assert.ok(crds.length >= 10, `expected the testdata CRDs, found ${crds.length}`);
  for (const { file, crd } of crds) {
    const created = validateCRD(crd);
    assert.deepEqual(created, [], `${file} (create):\n${show(created)}`);
    const updated = validateCRD(structuredClone(crd), crd);
    assert.deepEqual(updated, [], `${file} (update):\n${show(updated)}`);
    const established = { ...crd, status: { conditions: [{ type: 'Established', status: 'True' }], storedVersions: crd.spec.versions.filter((v: Obj) => v.storage).map((v: Obj) => v.name) } };
    assert.deepEqual(validateCRD(structuredClone(crd), established), [], `${file} (update of established)`);
  }
});

test('the base CRD is valid', () => {
  assert.deepEqual(validateCRD(baseCRD()), []);
  assert.deepEqual(validateCRD(baseCRD(), baseCRD()), []);
});

interface Case {
  name: string;
  mutate: (crd: Obj) => void;
  /** Mutation of the old object, for update cases. */
  old?: (old: Obj) => void;
  field: string;
  /** Expected message (substring). */
  message?: string;
  reason?: string;
}

const cases: Case[] = [
  {
    name: 'name mismatch', mutate: (c) => { c.metadata.name = 'gadgets.example.com'; },
    field: 'metadata.name', message: 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group',
  },
  {
    name: 'two storage versions',
    mutate: (c) => { c.spec.versions.push({ ...structuredClone(c.spec.versions[0]), name: 'v2' }); },
    field: 'spec.versions', message: 'must have exactly one version marked as storage version',
  },
  {
    name: 'no storage version', mutate: (c) => { c.spec.versions[0].storage = false; },
    field: 'spec.versions', message: 'must have exactly one version marked as storage version',
  },
  {
    name: 'no versions at all', mutate: (c) => { c.spec.versions = []; },
    field: 'spec.versions', message: 'must have exactly one version marked as storage version',
  },
  {
    name: 'duplicate version names',
    mutate: (c) => { c.spec.versions.push({ ...structuredClone(c.spec.versions[0]), storage: false }); },
    field: 'spec.versions', message: 'must contain unique version names',
  },
  {
    name: 'bad version name', mutate: (c) => { c.spec.versions[0].name = 'V1'; },
    field: `${v0}.name`, message: 'a DNS-1035 label must consist of lower case alphanumeric characters',
  },
  {
    name: 'a conversion webhook service reference is refused by this server',
    mutate: (c) => {
      c.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { service: { name: 'conv', namespace: 'default', path: '/convert' } }, conversionReviewVersions: ['v1'] } };
    },
    field: 'spec.conversion.webhookClientConfig.service', message: `Forbidden: ${CONVERSION_SERVICE_UNSUPPORTED}`, reason: 'FieldValueForbidden',
  },
  {
    name: 'a conversion webhook URL must be https',
    mutate: (c) => {
      c.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { url: 'http://127.0.0.1:8443/convert' }, conversionReviewVersions: ['v1'] } };
    },
    field: 'spec.conversion.webhookClientConfig.url', message: "'https' is the only allowed URL scheme",
  },
  {
    name: 'a conversion webhook caBundle must be PEM',
    mutate: (c) => {
      c.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://127.0.0.1:8443/convert', caBundle: 'bm90IGEgY2VydA==' }, conversionReviewVersions: ['v1'] } };
    },
    field: 'spec.conversion.webhookClientConfig.caBundle', message: 'must be a base64-encoded PEM certificate bundle',
  },
  {
    name: 'unknown conversion strategy', mutate: (c) => { c.spec.conversion = { strategy: 'Magic' }; },
    field: 'spec.conversion.strategy', message: 'Unsupported value: "Magic": supported values: "None", "Webhook"',
  },
  {
    name: 'missing type in a property', mutate: (c) => { delete c.spec.versions[0].schema.openAPIV3Schema.properties.spec.type; },
    field: `${root}.properties[spec].type`, message: 'Required value: must not be empty for specified object fields', reason: 'FieldValueRequired',
  },
  {
    name: 'missing type in array items',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array', items: { description: 'x' } }; },
    field: `${root}.properties[spec].properties[tags].items.type`, message: 'must not be empty for specified array items',
  },
  {
    name: 'array without items',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array' }; },
    field: `${root}.properties[spec].properties[tags].items`, message: 'Required value: must be specified',
  },
  {
    name: 'root type not object', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.type = 'string'; delete c.spec.versions[0].subresources; },
    field: `${root}.type`, message: 'Invalid value: "string": must be object at the root',
  },
  {
    name: 'missing root type', mutate: (c) => { delete c.spec.versions[0].schema.openAPIV3Schema.type; },
    field: `${root}.type`, message: 'must not be empty at the root',
  },
  {
    name: 'bad printer column type', mutate: (c) => { c.spec.versions[0].additionalPrinterColumns[0].type = 'float'; },
    field: `${v0}.additionalPrinterColumns[0].type`, message: 'Invalid value: "float": must be one of boolean,date,integer,number,string',
  },
  {
    name: 'printer column without jsonPath', mutate: (c) => { delete c.spec.versions[0].additionalPrinterColumns[0].jsonPath; },
    field: `${v0}.additionalPrinterColumns[0].JSONPath`, message: 'Required value',
  },
  {
    name: 'printer column jsonPath not starting with a dot', mutate: (c) => { c.spec.versions[0].additionalPrinterColumns[0].jsonPath = 'spec.replicas'; },
    field: `${v0}.additionalPrinterColumns[0].JSONPath`, message: 'must be a simple json path starting with .',
  },
  {
    name: 'scope change on update (established)', mutate: (c) => { c.spec.scope = 'Cluster'; },
    old: (o) => { o.status = { conditions: [{ type: 'Established', status: 'True' }] }; },
    field: 'spec.scope', message: 'Invalid value: "Cluster": field is immutable',
  },
  {
    name: 'kind change on update (established)', mutate: (c) => { c.spec.names.kind = 'Gadget'; c.spec.names.listKind = 'GadgetList'; },
    old: (o) => { o.status = { conditions: [{ type: 'Established', status: 'True' }] }; },
    field: 'spec.names.kind', message: 'field is immutable',
  },
  {
    name: 'group change on update', mutate: (c) => { c.spec.group = 'other.io'; },
    old: () => {},
    field: 'spec.group', message: 'Invalid value: "other.io": field is immutable',
  },
  {
    name: 'plural change on update', mutate: (c) => { c.spec.names.plural = 'gizmos'; },
    old: () => {},
    field: 'spec.names.plural', message: 'field is immutable',
  },
  {
    name: 'stored version removed from spec.versions on update',
    mutate: (c) => { c.spec.versions[0].name = 'v2'; },
    old: (o) => { o.status = { storedVersions: ['v1'] }; },
    field: 'status.storedVersions[0]', message: 'missing from spec.versions; v1 was previously a storage version',
  },
  {
    name: 'preserveUnknownFields true', mutate: (c) => { c.spec.preserveUnknownFields = true; },
    field: 'spec.preserveUnknownFields', message: 'Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead',
  },
  {
    name: '$ref', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ref = { $ref: '#/definitions/foo' }; },
    field: `${root}.properties[spec].properties[ref].$ref`, message: 'Forbidden: $ref is not supported', reason: 'FieldValueForbidden',
  },
  {
    name: 'metadata restricting labels',
    mutate: (c) => {
      c.spec.versions[0].schema.openAPIV3Schema.properties.metadata = {
        type: 'object', properties: { labels: { type: 'object', additionalProperties: { type: 'string' }, maxProperties: 2 } },
      };
    },
    field: `${root}.properties[metadata]`, message: 'Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified',
  },
  {
    name: 'metadata name restriction with a default', mutate: (c) => {
      c.spec.versions[0].schema.openAPIV3Schema.properties.metadata = { type: 'object', properties: { name: { type: 'string', maxLength: 10, default: 'x' } } };
    },
    field: `${root}.properties[metadata].properties[name].default`, message: 'Forbidden: must not be set in top-level metadata',
  },
  {
    name: 'group without a dot', mutate: (c) => { c.spec.group = 'example'; c.metadata.name = 'widgets.example'; },
    field: 'spec.group', message: 'Invalid value: "example": should be a domain with at least one dot',
  },
  {
    name: 'group not a DNS subdomain', mutate: (c) => { c.spec.group = 'Example.com'; c.metadata.name = 'widgets.Example.com'; },
    field: 'spec.group', message: 'a lowercase RFC 1123 subdomain',
  },
  {
    name: 'unsupported scope', mutate: (c) => { c.spec.scope = 'Global'; },
    field: 'spec.scope', message: 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
  },
  {
    name: 'missing scope', mutate: (c) => { delete c.spec.scope; }, field: 'spec.scope', message: 'Required value',
  },
  {
    name: 'uppercase plural', mutate: (c) => { c.spec.names.plural = 'Widgets'; c.metadata.name = 'Widgets.example.com'; },
    field: 'spec.names.plural', message: 'Invalid value: "Widgets": a DNS-1035 label',
  },
  {
    name: 'listKind equal to kind', mutate: (c) => { c.spec.names.listKind = 'Widget'; },
    field: 'spec.names.listKind', message: 'kind and listKind may not be the same',
  },
  {
    name: 'kind with an invalid character', mutate: (c) => { c.spec.names.kind = 'Wid_get'; },
    field: 'spec.names.kind', message: 'may have mixed case, but should otherwise match',
  },
  {
    name: 'bad short name', mutate: (c) => { c.spec.names.shortNames = ['ok', 'Not_OK']; },
    field: 'spec.names.shortNames[1]', message: 'Invalid value: "Not_OK"',
  },
  {
    name: 'bad category', mutate: (c) => { c.spec.names.categories = ['all', 'a b']; },
    field: 'spec.names.categories[1]',
  },
  {
    name: 'missing kind', mutate: (c) => { delete c.spec.names.kind; delete c.spec.names.listKind; },
    field: 'spec.names.kind', message: 'Required value',
  },
  {
    name: 'missing schema', mutate: (c) => { delete c.spec.versions[0].schema; delete c.spec.versions[0].selectableFields; },
    field: `${v0}.schema.openAPIV3Schema`, message: 'Required value',
  },
  {
    name: 'scale specReplicasPath outside .spec', mutate: (c) => { c.spec.versions[0].subresources.scale.specReplicasPath = '.status.replicas'; },
    field: `${v0}.subresources.scale.specReplicasPath`, message: 'should be a json path under .spec',
  },
  {
    name: 'scale without statusReplicasPath', mutate: (c) => { delete c.spec.versions[0].subresources.scale.statusReplicasPath; },
    field: `${v0}.subresources.scale.statusReplicasPath`, message: 'Required value',
  },
  {
    name: 'scale labelSelectorPath outside spec/status', mutate: (c) => { c.spec.versions[0].subresources.scale.labelSelectorPath = '.metadata.labels'; },
    field: `${v0}.subresources.scale.labelSelectorPath`, message: 'should be a json path under either .spec or .status',
  },
  {
    name: 'root field not allowed with the status subresource', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.anyOf = [{ required: ['spec'] }]; },
    field: root, message: 'fields are allowed at the root of the schema if the status subresource is enabled',
  },
  {
    name: 'additionalProperties with properties',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.additionalProperties = { type: 'string' }; },
    field: `${root}.properties[spec].additionalProperties`, message: 'additionalProperties and properties are mutual exclusive',
  },
  {
    name: 'additionalProperties at the root', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.additionalProperties = true; delete c.spec.versions[0].subresources; delete c.spec.versions[0].schema.openAPIV3Schema.properties; delete c.spec.versions[0].selectableFields; },
    field: `${root}.additionalProperties`, message: 'must not be used at the root',
  },
  {
    name: 'type inside anyOf (not structural)',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.selector.anyOf = [{ type: 'string', pattern: '^a' }, { type: 'string', maxLength: 3 }]; },
    field: `${root}.properties[spec].properties[selector].anyOf[0].type`, message: 'Forbidden: must be empty to be structural',
  },
  {
    name: 'value validation of an unspecified property',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.extra = { type: 'object', properties: { a: { type: 'string' } } }; c.spec.versions[0].schema.openAPIV3Schema.anyOf = [{ properties: { bogus: { maxLength: 3 } } }]; delete c.spec.versions[0].subresources; },
    field: `${root}.properties[bogus]`, message: `Required value: because it is defined in ${root}.anyOf[0].properties[bogus]`,
  },
  {
    name: 'list-map-keys without list-type map',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ports['x-kubernetes-list-type'] = 'atomic'; },
    field: `${root}.properties[spec].properties[ports].x-kubernetes-list-type`, message: 'must be map if x-kubernetes-list-map-keys is non-empty',
  },
  {
    name: 'list-map key neither required nor defaulted',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ports.items.required = []; },
    field: `${root}.properties[spec].properties[ports].items.properties[name].default`, message: 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property',
  },
  {
    name: 'list-map key not scalar',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ports.items.properties.name = { type: 'object' }; },
    field: `${root}.properties[spec].properties[ports].items.properties[name].type`, message: "must be a scalar type if parent array's x-kubernetes-list-type is map",
  },
  {
    name: 'list-map key not a property',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ports['x-kubernetes-list-map-keys'] = ['nope']; },
    field: `${root}.properties[spec].properties[ports].x-kubernetes-list-map-keys`, message: 'entries must all be names of item properties',
  },
  {
    name: 'unknown list type',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'bag' }; },
    field: `${root}.properties[spec].properties[tags].x-kubernetes-list-type`, message: 'Unsupported value: "bag"',
  },
  {
    name: 'set of non-atomic objects',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array', items: { type: 'object' }, 'x-kubernetes-list-type': 'set' }; },
    field: `${root}.properties[spec].properties[tags].items.x-kubernetes-map-type`, message: 'must be atomic as item of a list with x-kubernetes-list-type=set',
  },
  {
    name: 'unsupported property type',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.selector.type = 'text'; },
    field: `${root}.properties[spec].properties[selector].type`, message: 'Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string"',
  },
  {
    name: 'uniqueItems', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array', items: { type: 'string' }, uniqueItems: true }; },
    field: `${root}.properties[spec].properties[tags].uniqueItems`, message: 'quadratic',
  },
  {
    name: 'x-kubernetes-preserve-unknown-fields: false',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-preserve-unknown-fields'] = false; },
    field: `${root}.properties[spec].x-kubernetes-preserve-unknown-fields`, message: 'Invalid value: false: must be true or undefined',
  },
  {
    name: 'default of the wrong type', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.replicas.default = 'one'; },
    field: `${root}.properties[spec].properties[replicas].default`, message: 'must be of type integer: "string"', reason: 'FieldValueTypeInvalid',
  },
  {
    name: 'default violating minimum', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.replicas.default = -1; },
    field: `${root}.properties[spec].properties[replicas].default`, message: 'should be greater than or equal to 0',
  },
  {
    name: 'default with unknown fields', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.default = { replicas: 2, bogus: true }; },
    field: `${root}.properties[spec].default`, message: 'must not have unknown fields',
  },
  {
    name: 'default of a nested property of the wrong type', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.default = { selector: 3 }; },
    field: `${root}.properties[spec].default.selector`, message: 'selector in body must be of type string: "integer"',
  },
  {
    name: 'invalid pattern', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.selector.pattern = '^(a'; },
    field: `${root}.properties[spec].properties[selector].pattern`, message: "must be a valid regular expression, but isn't",
  },
  {
    name: 'CEL syntax error', mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = [{ rule: 'self.replicas >=' }]; },
    field: `${root}.properties[spec].x-kubernetes-validations[0].rule`, message: 'compilation failed',
  },
  {
    name: 'CEL rule with a line break and no message',
    mutate: (c) => { c.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = [{ rule: 'self.replicas >= 0 &&\nself.replicas < 10' }]; },
    field: `${root}.properties[spec].x-kubernetes-validations[0].message`, message: 'message must be specified if rule contains line breaks',
  },
  {
    name: 'oldSelf under a list item', mutate: (c) => {
      c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags = { type: 'array', items: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf' }] } };
    },
    field: `${root}.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule`, message: 'oldSelf cannot be used on the uncorrelatable portion of the schema within',
  },
  {
    name: 'selectable field pointing at an object', mutate: (c) => { c.spec.versions[0].selectableFields = [{ jsonPath: '.spec' }]; },
    field: `${v0}.selectableFields[0].jsonPath`, message: 'must point to a field of type string, boolean or integer',
  },
  {
    name: 'selectable field with an unknown path', mutate: (c) => { c.spec.versions[0].selectableFields = [{ jsonPath: '.spec.nope' }]; },
    field: `${v0}.selectableFields[0].jsonPath`, message: 'is an invalid path: does not refer to a valid field',
  },
  {
    name: 'deprecationWarning on a non-deprecated version', mutate: (c) => { c.spec.versions[0].deprecationWarning = 'old'; },
    field: `${v0}.deprecationWarning`, message: 'can only be set for deprecated versions',
  },
  {
    name: 'protected group without API approval', mutate: (c) => { c.spec.group = 'widgets.k8s.io'; c.metadata.name = 'widgets.widgets.k8s.io'; },
    field: 'metadata.annotations[api-approved.kubernetes.io]', message: 'protected groups must have approval annotation',
  },
  {
    name: 'embedded resource without type object', mutate: (c) => {
      c.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.template = { 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true };
    },
    field: `${root}.properties[spec].properties[template].type`, message: 'must be object if x-kubernetes-embedded-resource is true',
  },
];

for (const c of cases) {
  test(`invalid CRD: ${c.name} → ${c.field}`, () => {
    const crd = baseCRD();
    c.mutate(crd);
    let old: Obj | undefined;
    if (c.old) { old = baseCRD(); c.old(old); }
    const causes = validateCRD(crd, old);
    const hit = causes.find((x) => x.field === c.field && (!c.message || x.message?.includes(c.message)));
    assert.ok(hit, `expected a cause at ${c.field}${c.message ? ` containing ${JSON.stringify(c.message)}` : ''}, got:\n${show(causes)}`);
    if (c.reason) assert.equal(hit.reason, c.reason);
  });
}

test('messages and paths are formatted as kube field errors', () => {
  const crd = baseCRD();
  delete crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.type;
  const causes = validateCRD(crd);
  assert.deepEqual(causes, [{
    reason: 'FieldValueRequired',
    field: 'spec.versions[0].schema.openAPIV3Schema.properties[spec].type',
    message: 'Required value: must not be empty for specified object fields',
  }]);
});

test('$ref only reports the unsupported field (structural errors are suppressed as kube does)', () => {
  const crd = baseCRD();
  crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ref = { $ref: '#/definitions/foo' };
  delete crd.spec.versions[0].selectableFields;
  assert.deepEqual(fieldsOf(validateCRD(crd)), [`${root}.properties[spec].properties[ref].$ref`]);
});

test('webhook conversion: accepted with a url, with webhook configuration checks', () => {
  const crd = baseCRD();
  crd.spec.conversion = { strategy: 'Webhook' };
  const causes = validateCRD(crd);
  assert.deepEqual(fieldsOf(causes), ['spec.conversion.webhookClientConfig', 'spec.conversion.conversionReviewVersions']);
  crd.spec.conversion = { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://127.0.0.1:9443/convert' }, conversionReviewVersions: ['v1beta1', 'v1'] } };
  assert.deepEqual(validateCRD(crd), []);
  crd.spec.conversion = { strategy: 'None', webhook: { conversionReviewVersions: ['v1'] } };
  assert.deepEqual(fieldsOf(validateCRD(crd)), ['spec.conversion.conversionReviewVersions']);
  crd.spec.conversion = { strategy: 'None' };
  assert.deepEqual(validateCRD(crd), []);
});

test('scope may change before the CRD is established (kube only freezes it once Established)', () => {
  const crd = baseCRD();
  crd.spec.scope = 'Cluster';
  assert.deepEqual(validateCRD(crd, baseCRD()), []);
});

test('v1 defaulting: singular and listKind may be omitted', () => {
  const crd = baseCRD();
  delete crd.spec.names.singular;
  delete crd.spec.names.listKind;
  assert.deepEqual(validateCRD(crd), []);
  applyCRDDefaults(crd);
  assert.equal(crd.spec.names.singular, 'widget');
  assert.equal(crd.spec.names.listKind, 'WidgetList');
  assert.deepEqual(crd.spec.conversion, { strategy: 'None' });
  assert.deepEqual(crd.status.storedVersions, ['v1']);
});

test('update ratcheting: what the stored object already had is not tightened', () => {
  // A stored CRD with an unsupported property type (accepted by an older server) can still be updated.
  const old = baseCRD();
  old.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.selector.type = 'text';
  const next = structuredClone(old);
  next.metadata.labels = { a: 'b' };
  assert.ok(validateCRD(next).some((c) => c.field?.endsWith('properties[selector].type')));
  assert.deepEqual(validateCRD(next, old).filter((c) => c.field?.endsWith('properties[selector].type')), []);
  // preserveUnknownFields: true is tolerated when the stored object has it.
  const oldPUF = baseCRD();
  oldPUF.spec.preserveUnknownFields = true;
  assert.ok(!validateCRD(structuredClone(oldPUF), oldPUF).some((c) => c.field === 'spec.preserveUnknownFields' && c.message?.includes('cannot set to true')));
});

test('defaults: int-or-string, nested embedded resources and preserve-unknown-fields are accepted', () => {
  const crd = baseCRD();
  const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
  spec.properties.port.default = '8080';
  spec.properties.ports.default = [{ name: 'http', port: 80 }];
  spec.properties.template = {
    type: 'object', 'x-kubernetes-embedded-resource': true, properties: { foo: { type: 'string' } },
    default: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, foo: 'bar' },
  };
  spec.properties.free = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, default: { anything: { goes: 1 } } };
  assert.deepEqual(validateCRD(crd), []);
});

test('root metadata may restrict name and generateName', () => {
  const crd = baseCRD();
  crd.spec.versions[0].schema.openAPIV3Schema.properties.metadata = { type: 'object', properties: { name: { type: 'string', maxLength: 20 }, generateName: { type: 'string' } } };
  assert.deepEqual(validateCRD(crd), []);
});

// ---------------------------------------------------------------------------------------------
// acceptNames
// ---------------------------------------------------------------------------------------------

function accepted(crd: Obj): Obj {
  const c = structuredClone(crd);
  c.status = { acceptedNames: structuredClone(c.spec.names) };
  return c;
}

test('acceptNames: no conflicts → NamesAccepted True NoConflicts', () => {
  const crd = baseCRD();
  const gadgets = baseCRD();
  gadgets.metadata.name = 'gadgets.example.com';
  gadgets.spec.names = { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' };
  const r = acceptNames(crd, [accepted(gadgets)]);
  assert.deepEqual(r.condition, { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' });
  assert.deepEqual(r.acceptedNames, { plural: 'widgets', singular: 'widget', shortNames: ['wd'], kind: 'Widget', listKind: 'WidgetList', categories: ['all'] });
  assert.deepEqual(r.established, { type: 'Established', status: 'False', reason: 'Installing', message: 'the initial names have been accepted' });
});

test('acceptNames: a plural already accepted by another CRD of the group → False PluralConflict', () => {
  const crd = baseCRD();
  crd.metadata.name = 'widgets.example.com';
  const other = baseCRD();
  other.metadata.name = 'widgets-old.example.com';
  other.spec.names = { plural: 'widgets', singular: 'widgetold', kind: 'WidgetOld', listKind: 'WidgetOldList' };
  const r = acceptNames(crd, [accepted(other)]);
  assert.equal(r.condition.status, 'False');
  assert.equal(r.condition.reason, 'PluralConflict');
  assert.equal(r.condition.message, '"widgets" is already in use');
  assert.equal(r.acceptedNames?.plural, '', 'the conflicting plural is not accepted');
  assert.equal(r.acceptedNames?.kind, 'Widget', 'non-conflicting names are accepted');
  assert.deepEqual(r.established, { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' });
});

test('acceptNames: other groups do not conflict; kinds and short names conflict separately', () => {
  const crd = baseCRD();
  const elsewhere = accepted({ ...baseCRD(), metadata: { name: 'widgets.other.io' }, spec: { ...baseCRD().spec, group: 'other.io' } });
  assert.equal(acceptNames(crd, [elsewhere]).condition.status, 'True');

  const kindTaken = baseCRD();
  kindTaken.metadata.name = 'things.example.com';
  kindTaken.spec.names = { plural: 'things', singular: 'thing', kind: 'Widget', listKind: 'ThingList', shortNames: ['wd'] };
  const r = acceptNames(crd, [accepted(kindTaken)]);
  assert.equal(r.condition.status, 'False');
  assert.equal(r.condition.reason, 'KindConflict', 'the last conflict found wins, as in kube');
  assert.equal(r.acceptedNames?.shortNames, undefined);
  assert.equal(r.acceptedNames?.kind, '');
  assert.equal(r.acceptedNames?.plural, 'widgets');

  const shortOnly = structuredClone(kindTaken);
  shortOnly.spec.names.kind = 'Thing';
  const s = acceptNames(crd, [accepted(shortOnly)]);
  assert.deepEqual([s.condition.reason, s.condition.message], ['ShortNamesConflict', '"wd" is already in use']);
});

test('acceptNames: names the CRD already accepted stay accepted; itself in `others` is ignored', () => {
  const crd = accepted(baseCRD());
  crd.status.conditions = [{ type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' }];
  const r = acceptNames(crd, [crd]);
  assert.equal(r.condition.status, 'True');
  assert.equal(r.established.status, 'True');
  assert.deepEqual(r.acceptedNames, crd.status.acceptedNames);
});

test('CEL rules are type checked as cel-go compiles them: an undefined field or a wrong operand type is a compile error; what the checker does not model passes', () => {
  const withRules = (rules: object[]) => {
    const crd = baseCRD();
    crd.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = rules;
    return validateCRD(crd);
  };
  const undef = withRules([{ rule: 'self.z == 100' }]);
  assert.deepEqual(fieldsOf(undef), [`${root}.properties[spec].x-kubernetes-validations[0].rule`]);
  assert.match(undef[0]!.message, /compilation failed: ERROR: <input>:1:5: undefined field 'z'/);
  const wrongType = withRules([{ rule: "self.replicas > 'one'" }]);
  assert.match(wrongType[0]!.message, /found no matching overload for '_>_' applied to '\(int, string\)'/);
  // int-or-string is dyn; oldSelf of a transition rule is typed as self; the root has metadata.
  assert.deepEqual(withRules([{ rule: "self.replicas >= 0 && (self.port == 80 || self.port == 'http')" }, { rule: 'self.replicas >= oldSelf.replicas' }]), []);
  const crd = baseCRD();
  crd.spec.versions[0].schema.openAPIV3Schema['x-kubernetes-validations'] = [{ rule: "self.metadata.name != 'forbidden' && has(self.spec)" }];
  assert.deepEqual(validateCRD(crd), []);
});

test('a rule the stored CRD already has is not type checked again on update (kube\'s preexistingExpressions); a new one is', () => {
  const old = baseCRD();
  old.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = [{ rule: 'self.z == 100' }];
  const next = structuredClone(old);
  next.metadata.labels = { touched: 'yes' };
  assert.deepEqual(validateCRD(next, old), []);
  next.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'].push({ rule: 'self.y == 1' });
  assert.match(validateCRD(next, old).map((c) => c.message).join('\n'), /undefined field 'y'/);
});
