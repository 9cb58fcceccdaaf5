/**
 * The operator's CRDs as shipped (crds/ and the chart's copy) against its API types
 * (operator/api/types.ts): every schema node has only keys of apiextensions.k8s.io/v1
 * JSONSchemaProps (a YAML flow mapping cut at a comma adds a key such as `hours).`, which kube
 * reports as an unknown field), every description is a whole sentence, the field set of each
 * kind's spec and status is the same in the CRD and in the TypeScript types (a field missing on
 * either side fails), and `spec.version`'s default is the chart's appVersion.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { parse } from 'yaml';

const REPO = join(import.meta.dirname, '..', '..');
const CRD_DIRS = [join(REPO, 'crds'), join(REPO, 'charts', 'kcp-operator', 'files', 'crds')];

/**
 * The JSON field names of apiextensions.k8s.io/v1 JSONSchemaProps
 * (k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1/types_jsonschema.go).
 */
const JSON_SCHEMA_PROPS_FIELDS = new Set([
  'id', '$schema', '$ref', 'description', 'type', 'format', 'title', 'default', 'maximum', 'exclusiveMaximum', 'minimum',
  'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'multipleOf', 'enum',
  'maxProperties', 'minProperties', 'required', 'items', 'allOf', 'oneOf', 'anyOf', 'not', 'properties', 'additionalProperties',
  'patternProperties', 'dependencies', 'additionalItems', 'definitions', 'externalDocs', 'example', 'nullable',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations',
]);

interface Schema {
  [key: string]: unknown;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  default?: unknown;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

interface Crd { spec: { names: { kind: string }; versions: { name: string; schema: { openAPIV3Schema: Schema } }[] } }

/** Every shipped CRD file: directory, name and parsed object (YAML 1.1, as sigs.k8s.io/yaml reads it). */
function shippedCrds(): { file: string; crd: Crd }[] {
  return CRD_DIRS.flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => ({
    file: join(dir, f).slice(REPO.length + 1), crd: parse(readFileSync(join(dir, f), 'utf8'), { version: '1.1', merge: true }) as Crd,
  })));
}

/** Calls `visit` with every schema node below `schema` and its path. */
function walkSchema(schema: Schema, path: string, visit: (s: Schema, path: string) => void): void {
  visit(schema, path);
  for (const [k, v] of Object.entries(schema.properties ?? {})) walkSchema(v, `${path}.${k}`, visit);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') walkSchema(schema.additionalProperties, `${path}{}`, visit);
  if (schema.items) walkSchema(schema.items, `${path}[]`, visit);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((s: Schema, i) => walkSchema(s, `${path}<${key}${i}>`, visit));
  }
}

/**
 * The field set of a schema: one path per field (`a.b`, `a.list[]`, `a.map{}`); a field whose
 * content is free-form (x-kubernetes-preserve-unknown-fields) is listed with `*` after it.
 */
function crdFields(schema: Schema, path: string, out = new Set<string>()): Set<string> {
  if (schema['x-kubernetes-preserve-unknown-fields']) { out.add(`${path}*`); return out; }
  for (const [k, v] of Object.entries(schema.properties ?? {})) { out.add(`${path}.${k}`); crdFields(v, `${path}.${k}`, out); }
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') { out.add(`${path}{}`); crdFields(schema.additionalProperties, `${path}{}`, out); }
  if (schema.items) { out.add(`${path}[]`); crdFields(schema.items, `${path}[]`, out); }
  return out;
}

/** The same field set of a TypeScript type (`unknown` values and `Record<string, unknown>` are free-form). */
function typeFields(checker: ts.TypeChecker, type: ts.Type, path: string, out = new Set<string>(), depth = 0): Set<string> {
  if (depth > 20) throw new Error(`${path}: types nest too deep`);
  // Checked before removing undefined: NonNullable<unknown> is `{}`, an object without fields.
  if (type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) { out.add(`${path}*`); return out; }
  const t = checker.getNonNullableType(type);
  if (t.flags & (ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike)) return out;
  if (t.isUnion()) {
    // A union of scalars (`'True' | 'False'`, `string | number`) is a scalar.
    if (t.types.every((u) => u.flags & (ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike))) return out;
    throw new Error(`${path}: a union of object types has no single CRD schema`);
  }
  if (checker.isArrayType(t)) {
    out.add(`${path}[]`);
    return typeFields(checker, checker.getTypeArguments(t as ts.TypeReference)[0]!, `${path}[]`, out, depth + 1);
  }
  const index = checker.getIndexInfoOfType(t, ts.IndexKind.String);
  if (index) {
    if (index.type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) { out.add(`${path}*`); return out; }
    out.add(`${path}{}`);
    return typeFields(checker, index.type, `${path}{}`, out, depth + 1);
  }
  for (const p of checker.getPropertiesOfType(t)) {
    out.add(`${path}.${p.name}`);
    typeFields(checker, checker.getTypeOfSymbol(p), `${path}.${p.name}`, out, depth + 1);
  }
  return out;
}

/** Drops every path below a free-form field (`x*`) of either set, and the markers themselves. */
function comparable(fields: Set<string>, other: Set<string>): string[] {
  const freeForm = [...fields, ...other].filter((f) => f.endsWith('*')).map((f) => f.slice(0, -1));
  return [...fields].filter((f) => !f.endsWith('*') && !freeForm.some((p) => f.startsWith(`${p}.`) || f.startsWith(`${p}[]`) || f.startsWith(`${p}{}`))).sort();
}

/** Fields of `part` (spec or status) only in the CRD's schema, and only in the TypeScript type. */
function fieldDifferences(schema: Schema, checker: ts.TypeChecker, type: ts.Type, part: string): { crdOnly: string[]; typesOnly: string[] } {
  const prop = checker.getPropertyOfType(type, part);
  assert.ok(prop, `the type has ${part}`);
  const fromCrd = crdFields(schema, part);
  const fromTypes = typeFields(checker, checker.getTypeOfSymbol(prop), part);
  const a = comparable(fromCrd, fromTypes);
  const b = comparable(fromTypes, fromCrd);
  return { crdOnly: a.filter((f) => !b.includes(f)), typesOnly: b.filter((f) => !a.includes(f)) };
}

/** The exported types of operator/api/types.ts, through the TypeScript compiler. */
function apiTypes(): { checker: ts.TypeChecker; type(name: string): ts.Type } {
  const file = join(REPO, 'operator', 'api', 'types.ts');
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
  return {
    checker,
    type(name) {
      const sym = exports.find((s) => s.name === name);
      if (!sym) throw new Error(`operator/api/types.ts exports no ${name}`);
      return checker.getDeclaredTypeOfSymbol(sym);
    },
  };
}

describe('shipped CRDs', () => {
  const crds = shippedCrds();

  it('are found in crds/ and in the chart', () => {
    assert.deepEqual([...new Set(crds.map((c) => c.crd.spec.names.kind))].sort(), ['KcpInstance', 'RootWorkspace', 'Shard']);
    assert.equal(crds.length, 6);
  });

  it('have only JSONSchemaProps keys in every schema node (no field cut from a description)', () => {
    for (const { file, crd } of crds) {
      for (const v of crd.spec.versions) {
        walkSchema(v.schema.openAPIV3Schema, v.name, (s, path) => {
          for (const key of Object.keys(s)) assert.ok(JSON_SCHEMA_PROPS_FIELDS.has(key), `${file}: ${path} has the key ${JSON.stringify(key)}, not a JSONSchemaProps field`);
        });
      }
    }
  });

  it('have whole descriptions: strings, one sentence or more, ending with a full stop, brackets and quotes closed', () => {
    let count = 0;
    for (const { file, crd } of crds) {
      for (const v of crd.spec.versions) {
        walkSchema(v.schema.openAPIV3Schema, v.name, (s, path) => {
          if (!('description' in s)) return;
          const d = s.description;
          count++;
          assert.equal(typeof d, 'string', `${file}: ${path}.description is not a string`);
          assert.match(d!, /^[A-Za-z"'.(]/, `${file}: ${path}.description starts oddly: ${d}`);
          assert.match(d!, /[.)]$/, `${file}: ${path}.description does not end a sentence: ${d}`);
          const opened = (d!.match(/\(/g) ?? []).length;
          assert.equal((d!.match(/\)/g) ?? []).length, opened, `${file}: ${path}.description has unbalanced parentheses: ${d}`);
          assert.equal((d!.match(/"/g) ?? []).length % 2, 0, `${file}: ${path}.description has an unclosed quote: ${d}`);
        });
      }
    }
    assert.ok(count > 50, `descriptions checked: ${count}`);
  });

  it('have the field set of operator/api/types.ts, spec and status of every kind', () => {
    const api = apiTypes();
    for (const { file, crd } of crds) {
      const kind = crd.spec.names.kind;
      const type = api.type(kind);
      for (const v of crd.spec.versions) {
        for (const part of ['spec', 'status'] as const) {
          const schema = v.schema.openAPIV3Schema.properties?.[part];
          assert.ok(schema, `${file}: ${part} is declared`);
          const { crdOnly, typesOnly } = fieldDifferences(schema, api.checker, type, part);
          assert.deepEqual(crdOnly, [], `${file}: fields of ${kind} in the CRD but not in types.ts`);
          assert.deepEqual(typesOnly, [], `${file}: fields of ${kind} in types.ts but not in the CRD`);
        }
      }
    }
  });

  it('the comparison sees a field missing on either side and a cut description', () => {
    const api = apiTypes();
    const prop = api.checker.getPropertyOfType(api.type('KcpInstance'), 'spec')!;
    const fromTypes = typeFields(api.checker, api.checker.getTypeOfSymbol(prop), 'spec');
    assert.ok(fromTypes.has('spec.pki.caDuration') && fromTypes.has('spec.upgrade.canaryShards[]') && fromTypes.has('spec.runtimeConfig{}'));
    assert.ok(fromTypes.has('spec.audit.policy*'), 'a Record<string, unknown> is free-form');
    // A field taken out of the CRD, and one added to it.
    const crd = shippedCrds().find((c) => c.crd.spec.names.kind === 'KcpInstance')!.crd;
    const spec = structuredClone(crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!);
    delete spec.properties!.pki!.properties!.caDuration;
    spec.properties!.upgrade!.properties!.maxSurge = { type: 'integer' };
    assert.deepEqual(fieldDifferences(spec, api.checker, api.type('KcpInstance'), 'spec'), { crdOnly: ['spec.upgrade.maxSurge'], typesOnly: ['spec.pki.caDuration'] });
    const cut = parse('{type: string, description: Validity of a CA (Go duration, hours).}', { version: '1.1' }) as Schema;
    assert.deepEqual(Object.keys(cut), ['type', 'description', 'hours).'], 'YAML cuts a flow mapping at the comma');
  });

  it('default spec.version to the chart\'s appVersion, which is the package version', () => {
    const chart = parse(readFileSync(join(REPO, 'charts', 'kcp-operator', 'Chart.yaml'), 'utf8')) as { appVersion: string };
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
    assert.equal(chart.appVersion, pkg.version);
    for (const { file, crd } of crds) {
      if (crd.spec.names.kind !== 'KcpInstance') continue;
      const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
      assert.equal(spec.properties!.version!.default, chart.appVersion, `${file}: spec.version defaults to the appVersion`);
      assert.deepEqual(spec.default, {}, `${file}: a KcpInstance without spec gets one, so its defaults apply`);
      assert.ok(!((spec.required as string[] | undefined) ?? []).includes('version'), `${file}: spec.version is not required`);
    }
  });
});
