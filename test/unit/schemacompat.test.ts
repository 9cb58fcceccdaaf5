/**
 * Schema compatibility and LCD (src/apiextensions/schemacompat.ts). The first group are the cases
 * of kcp-dev/kcp pkg/schemacompat/schemacompat_test.go `TestCompatibility` (same schemas, paths
 * and messages); then each rule of kcp's schemacompat.go, and the rules kcp-ts completes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StatusCause } from '../../src/apimachinery/errors.js';
import { MAX_NESTING_DEPTH } from '../../src/apimachinery/depth.js';
import { ensureStructuralSchemaCompatibility, formatFieldErrors, type JSONSchemaProps } from '../../src/apiextensions/schemacompat.js';

type S = JSONSchemaProps;
const ROOT = 'schema.openAPISchema';

const obj = (properties: Record<string, S>, extra: S = {}): S => ({ type: 'object', properties, ...extra });
const str: S = { type: 'string' };
const int: S = { type: 'integer' };
const num: S = { type: 'number' };
const bool: S = { type: 'boolean' };

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') { for (const x of Object.values(v)) deepFreeze(x); Object.freeze(v); }
  return v;
}

/** Runs the comparison on frozen inputs (it must not modify them). */
function check(existing: S, next: S, narrow = false) {
  return ensureStructuralSchemaCompatibility(ROOT, deepFreeze(structuredClone(existing)), deepFreeze(structuredClone(next)), narrow);
}

function assertLCD(existing: S, next: S, narrow: boolean, want: S): void {
  const r = check(existing, next, narrow);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.schema, want);
}

function assertErrors(existing: S, next: S, narrow: boolean, want: string[]): StatusCause[] {
  const r = check(existing, next, narrow);
  assert.deepEqual(formatFieldErrors(r.errors), want);
  assert.equal(r.schema, undefined, 'no LCD when incompatible');
  return r.errors;
}

// --- kcp's TestCompatibility ------------------------------------------------------------------

test('kcp: new has more properties: the LCD is the existing schema', () => {
  assertLCD(obj({ existing: str }), obj({ existing: str, new: int }), false, obj({ existing: str }));
});

test('kcp: new has fewer properties: properties removed (Invalid, the removed names)', () => {
  const errs = assertErrors(obj({ existing: str, new: int }), obj({ existing: str }), false,
    ['schema.openAPISchema.properties: Invalid value: ["new"]: properties have been removed in an incompatible way']);
  assert.equal(errs[0]!.reason, 'FieldValueInvalid');
  assert.equal(errs[0]!.field, 'schema.openAPISchema.properties');
});

test('kcp: new has fewer properties, narrow existing: the LCD drops them', () => {
  assertLCD(obj({ existing: str, new: int }), obj({ existing: str }), true, obj({ existing: str }));
});

const prop1 = obj({ subProp1: str });
const prop2 = obj({ subProp1: str, subProp2: str });

test('kcp: new allows any property of a schema compatible with the existing properties', () => {
  assertLCD(obj({ prop1, prop2 }), { type: 'object', additionalProperties: prop2 }, false, obj({ prop1, prop2 }));
});

test('kcp: new allows any property of a schema not compatible with an existing property', () => {
  assertErrors(obj({ prop1, prop2 }), { type: 'object', additionalProperties: prop1 }, false,
    ['schema.openAPISchema.properties[prop2].properties: Invalid value: ["subProp2"]: properties have been removed in an incompatible way']);
});

test('kcp: new allows any property of any schema (additionalProperties: true)', () => {
  assertLCD(obj({ existing: str }), { type: 'object', additionalProperties: true }, false, obj({ existing: str }));
});

test('kcp: new has more properties, existing contains number / integer / boolean', () => {
  assertLCD(obj({ existing: num }), obj({ existing: num, new: int }), false, obj({ existing: num }));
  assertLCD(obj({ existing: int }), obj({ existing: int, new: num }), false, obj({ existing: int }));
  assertLCD(obj({ existing: bool }), obj({ existing: bool, new: num }), false, obj({ existing: bool }));
});

test('kcp: new has more properties, existing is int-or-string / preserves unknown fields (no type): kept as is', () => {
  const ios = { 'x-kubernetes-int-or-string': true, properties: { existing: int } };
  assertLCD(ios, { ...ios, properties: { existing: int, new: num } }, false, ios);
  const pres = { 'x-kubernetes-preserve-unknown-fields': true, properties: { existing: int } };
  assertLCD(pres, { ...pres, properties: { existing: int, new: num } }, false, pres);
});

test('kcp: new has more properties, existing contains array', () => {
  const arr = (items: S): S => ({ type: 'array', items });
  assertLCD(arr(obj({ existing: int })), arr(obj({ existing: int, new: num })), false, arr(obj({ existing: int })));
});

test('kcp: new has more properties, existing contains additional properties', () => {
  assertLCD({ type: 'object', additionalProperties: obj({ subProp1: str }) },
    { type: 'object', additionalProperties: obj({ subProp1: str, subProp2: str }) }, false,
    { type: 'object', additionalProperties: obj({ subProp1: str }) });
});

test('kcp: existing additionalProperties of a schema, new additionalProperties: true: the LCD is the existing schema', () => {
  assertLCD({ type: 'object', additionalProperties: bool }, { type: 'object', additionalProperties: true }, false,
    { type: 'object', additionalProperties: bool });
});

test('kcp-ts (kcp differs): existing additionalProperties: true, new of a schema: incompatible, narrowed to the schema', () => {
  // kcp's test expects the existing schema as the LCD: its structural form counts a schema as
  // `true`, so {"a": "x"} — accepted before, refused now — passes unnoticed.
  assertErrors({ type: 'object', additionalProperties: true }, { type: 'object', additionalProperties: bool }, false,
    ['schema.openAPISchema.additionalProperties: Invalid value: {"type":"boolean"}: additionalProperties value has been changed in an incompatible way']);
  assertLCD({ type: 'object', additionalProperties: true }, { type: 'object', additionalProperties: bool }, true,
    { type: 'object', additionalProperties: bool });
});

test('kcp: existing has properties, new has neither properties nor additionalProperties (and another type)', () => {
  assertErrors(obj({ existing: bool }), { type: 'array', items: obj({ existing: int }) }, false, [
    'schema.openAPISchema.type: Invalid value: "array": The type changed (was "object", now "array")',
    'schema.openAPISchema.properties: Invalid value: ["existing"]: properties value has been completely cleared in an incompatible way',
  ]);
});

// --- kcp's rules, one by one --------------------------------------------------------------------

test('types: a changed type is Invalid at .type; number narrows to integer, integer stays integer under number', () => {
  assertErrors(obj({ a: str }), obj({ a: int }), false,
    ['schema.openAPISchema.properties[a].type: Invalid value: "integer": The type changed (was "string", now "integer")']);
  assertErrors(obj({ a: bool }), obj({ a: str }), true,
    ['schema.openAPISchema.properties[a].type: Invalid value: "string": The type changed (was "boolean", now "string")']);
  // number → integer: incompatible, narrowed when asked.
  assertErrors(num, int, false, ['schema.openAPISchema.type: Invalid value: "integer": The type changed (was "number", now "integer")']);
  assertLCD(num, int, true, int);
  // integer → number: every integer is a number, the LCD keeps integer.
  assertLCD(int, num, false, int);
  assertLCD(int, num, true, int);
  // Unknown or missing types.
  assertErrors({ type: 'date' }, { type: 'date' }, false, ['schema.openAPISchema.type: Invalid value: "date": Invalid type']);
  assertErrors({}, {}, false, ['schema.openAPISchema.type: Invalid value: "": Invalid type']);
});

test('x-kubernetes-preserve-unknown-fields: a change is Invalid, even when narrowing', () => {
  const pres = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  assertErrors(pres, { type: 'object' }, true,
    ['schema.openAPISchema.x-kubernetes-preserve-unknown-fields: Invalid value: false: x-kubernetes-preserve-unknown-fields value changed (was true, now false)']);
  assertErrors({ type: 'object' }, pres, false,
    ['schema.openAPISchema.x-kubernetes-preserve-unknown-fields: Invalid value: true: x-kubernetes-preserve-unknown-fields value changed (was false, now true)']);
});

test('numbers: not/allOf/anyOf/oneOf/enum refused; maximum/minimum/multipleOf refused when changed', () => {
  const refused = (construct: string, type = 'numbers') =>
    `schema.openAPISchema: Forbidden: The "${construct}" JSON Schema construct is not supported by the Schema negotiation for type "${type}"`;
  assertErrors({ ...num, enum: [1, 2] }, { ...num, enum: [1, 2] }, false, [refused('enum')]);
  assertErrors(num, { ...num, not: { minimum: 3 } }, false, [refused('not')]);
  assertErrors({ ...int, allOf: [{ minimum: 1 }] }, int, false, [refused('allOf', 'integer')]);
  assertLCD({ ...num, maximum: 5, minimum: 0 }, { ...num, maximum: 5, minimum: 0 }, false, { ...num, maximum: 5, minimum: 0 });
  assertErrors({ ...num, maximum: 5, minimum: 0 }, { ...num, maximum: 6, minimum: 0 }, true, [refused('maximum'), refused('minimum')]);
  assertErrors({ ...int, maximum: 5 }, { ...int, maximum: 5, exclusiveMaximum: true }, false, [refused('maximum', 'integer')]);
  assertErrors({ ...int, multipleOf: 2 }, int, false, [refused('multipleOf', 'integer')]);
  // kcp-ts: numeric formats compared (kcp: strings only); a missing one narrows.
  assertErrors({ ...int, format: 'int64' }, { ...int, format: 'int32' }, true,
    ['schema.openAPISchema.format: Invalid value: "int32": format value has been changed in an incompatible way']);
  assertLCD({ ...int, format: 'int64' }, int, false, { ...int, format: 'int64' });
  assertLCD(int, { ...int, format: 'int32' }, true, { ...int, format: 'int32' });
  assertLCD({ ...num, format: 'double' }, { ...int, format: 'int64' }, true, { ...int, format: 'int64' });
});

test('strings: bounds, pattern, format and constructs', () => {
  const refused = (construct: string) =>
    `schema.openAPISchema: Forbidden: The "${construct}" JSON Schema construct is not supported by the Schema negotiation for type "string"`;
  assertLCD({ ...str, maxLength: 5, pattern: '^a' }, { ...str, maxLength: 5, pattern: '^a' }, false, { ...str, maxLength: 5, pattern: '^a' });
  assertErrors({ ...str, maxLength: 5 }, { ...str, maxLength: 4 }, true, [refused('maxLength')]);
  // As kcp: once either bound changed, each bound set on either side is refused.
  assertErrors({ ...str, maxLength: 5 }, { ...str, minLength: 1, maxLength: 5 }, false, [refused('maxLength'), refused('minLength')]);
  assertErrors(str, { ...str, pattern: '^a' }, false, [refused('pattern')]);
  // One error per construct (kcp checks allOf three times, under three names).
  assertErrors({ ...str, allOf: [{ minLength: 1 }] }, str, false, [refused('allOf')]);
  assertErrors(str, { ...str, oneOf: [{ minLength: 1 }, { maxLength: 0 }] }, false, [refused('oneOf')]);
  assertErrors(str, { ...str, format: 'date-time' }, true,
    ['schema.openAPISchema.format: Invalid value: "date-time": format value has been changed in an incompatible way']);
  assertErrors({ ...str, format: 'date-time' }, str, false,
    ['schema.openAPISchema.format: Invalid value: "": format value has been changed in an incompatible way']);
});

test('string enums: a superset is compatible, removed values are refused or narrowed to the common values', () => {
  const e = (...values: unknown[]): S => ({ ...str, enum: values });
  assertLCD(e('a', 'b'), e('b', 'a', 'c'), false, e('a', 'b'));
  assertErrors(e('a', 'b', 'c'), e('b', 'd'), false,
    ['schema.openAPISchema.enum: Invalid value: ["a","c"]: enum value has been changed in an incompatible way']);
  assertLCD(e('c', 'a', 'b'), e('b', 'd', 'c'), true, e('b', 'c'));
  // kcp-ts: no enum is any string.
  assertLCD(e('a'), str, false, e('a'));
  assertErrors(str, e('x', 'y'), false, ['schema.openAPISchema.enum: Invalid value: ["x","y"]: enum value has been changed in an incompatible way']);
  assertLCD(str, e('y', 'x'), true, e('x', 'y'));
  // Nothing in common cannot be narrowed.
  assertErrors(e('a'), e('b'), true, ['schema.openAPISchema.enum: Invalid value: ["a"]: enum value has been changed in an incompatible way']);
  // Values that are not strings.
  assertErrors(e('a', 1), e('a', 1), false,
    ['schema.openAPISchema.enum: Invalid value: ["a",1]: enum value should be a \'string\' for Json type \'string\'']);
});

test('booleans: enum and constructs refused', () => {
  assertErrors({ ...bool, enum: [true] }, bool, false,
    ['schema.openAPISchema: Forbidden: The "enum" JSON Schema construct is not supported by the Schema negotiation for type "boolean"']);
});

test('arrays: items, uniqueItems, maxItems/minItems, list type and map keys', () => {
  const arr = (items: S, extra: S = {}): S => ({ type: 'array', items, ...extra });
  assertErrors(arr(str), arr(int), false,
    ['schema.openAPISchema.items.type: Invalid value: "integer": The type changed (was "string", now "integer")']);
  assertErrors(arr(str), { type: 'array' }, false, ["schema.openAPISchema.items: Invalid value: null: new schema doesn't allow anything"]);
  assertErrors(arr(str), arr(str, { uniqueItems: true }), false,
    ['schema.openAPISchema.uniqueItems: Invalid value: true: uniqueItems value has been changed in an incompatible way']);
  assertLCD(arr(str), arr(str, { uniqueItems: true }), true, arr(str, { uniqueItems: true }));
  assertLCD(arr(str, { uniqueItems: true }), arr(str), false, arr(str, { uniqueItems: true }));
  assertErrors(arr(str, { maxItems: 3 }), arr(str, { maxItems: 2 }), true,
    ['schema.openAPISchema: Forbidden: The "maxItems" JSON Schema construct is not supported by the Schema negotiation for type "array"']);
  assertErrors(arr(str), arr(str, { 'x-kubernetes-list-type': 'set' }), true,
    ['schema.openAPISchema.x-kubernetes-list-type: Invalid value: "set": x-kubernetes-list-type value has been changed in an incompatible way']);
  const map = (keys: string[]) => arr(obj({ name: str, port: int }, { required: keys }), { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': keys });
  assertLCD(map(['name', 'port']), map(['port', 'name']), false, map(['name', 'port']));
  assertErrors(map(['name']), { ...map(['name']), 'x-kubernetes-list-map-keys': ['name', 'port'] }, false,
    ['schema.openAPISchema.x-kubernetes-list-map-keys: Invalid value: ["name","port"]: x-kubernetes-list-map-keys value has been changed in an incompatible way']);
});

test('objects: map type, constructs, nested paths', () => {
  assertErrors({ type: 'object', additionalProperties: str, 'x-kubernetes-map-type': 'granular' },
    { type: 'object', additionalProperties: str, 'x-kubernetes-map-type': 'atomic' }, true,
    ['schema.openAPISchema.x-kubernetes-map-type: Invalid value: "atomic": x-kubernetes-map-type value has been changed in an incompatible way']);
  assertErrors(obj({ a: str }, { oneOf: [{ required: ['a'] }] }), obj({ a: str }), false,
    ['schema.openAPISchema: Forbidden: The "oneOf" JSON Schema construct is not supported by the Schema negotiation for type "object"']);
  assertErrors(obj({ spec: obj({ template: obj({ image: str }) }) }), obj({ spec: obj({ template: obj({ image: int }) }) }), false,
    ['schema.openAPISchema.properties[spec].properties[template].properties[image].type: Invalid value: "integer": The type changed (was "string", now "integer")']);
  // additionalProperties of a schema before, neither now (kcp-ts: kcp crashes here).
  assertErrors({ type: 'object', additionalProperties: str }, obj({ a: str }), false,
    ['schema.openAPISchema.additionalProperties: Invalid value: null: additionalProperties value has been changed in an incompatible way']);
});

test('int-or-string: both int-or-string with the same anyOf; string and integer rules apply', () => {
  const anyOf = [{ type: 'integer' }, { type: 'string' }];
  const ios: S = { 'x-kubernetes-int-or-string': true, anyOf };
  assertLCD(ios, ios, true, ios);
  assertErrors(ios, { ...str }, false, [
    'schema.openAPISchema.type: Invalid value: "string": The type changed (was "", now "string")',
    'schema.openAPISchema.x-kubernetes-int-or-string: Invalid value: false: x-kubernetes-int-or-string value has been changed in an incompatible way',
    'schema.openAPISchema.anyOf: Invalid value: null: anyOf value has been changed in an incompatible way',
  ]);
  assertErrors(ios, { ...ios, anyOf: [{ type: 'integer' }] }, false,
    ['schema.openAPISchema.anyOf: Invalid value: [{"type":"integer"}]: anyOf value has been changed in an incompatible way']);
  assertErrors(ios, { ...ios, pattern: '^[0-9]+%$' }, false,
    ['schema.openAPISchema: Forbidden: The "pattern" JSON Schema construct is not supported by the Schema negotiation for type "string"']);
});

test('preserve-unknown-fields without a type: only the type is compared', () => {
  const pres: S = { 'x-kubernetes-preserve-unknown-fields': true };
  assertLCD(pres, pres, false, pres);
  assertErrors(pres, { ...pres, type: 'object' }, false,
    ['schema.openAPISchema.type: Invalid value: "object": The type changed (was "", now "object")']);
});

// --- rules kcp-ts completes -----------------------------------------------------------------

test('kcp-ts: required: a newly required property is incompatible, narrowed by requiring it', () => {
  assertErrors(obj({ a: str, b: str }), obj({ a: str, b: str }, { required: ['b'] }), false,
    ['schema.openAPISchema.required: Invalid value: ["b"]: required value has been changed in an incompatible way']);
  assertLCD(obj({ a: str, b: str }, { required: ['a'] }), obj({ a: str, b: str }, { required: ['b', 'a'] }), true,
    obj({ a: str, b: str }, { required: ['a', 'b'] }));
  // No longer required: compatible.
  assertLCD(obj({ a: str }, { required: ['a'] }), obj({ a: str }), false, obj({ a: str }, { required: ['a'] }));
  // Required now, unknown before: nothing stored has it.
  assertErrors(obj({ a: str }), obj({ a: str, c: str }, { required: ['c'] }), true,
    ['schema.openAPISchema.required: Invalid value: ["c"]: required value has been changed in an incompatible way']);
  // Narrowing cannot drop a property the existing schema requires.
  assertErrors(obj({ a: str, b: str }, { required: ['b'] }), obj({ a: str }), true,
    ['schema.openAPISchema.required: Invalid value: ["b"]: required properties have been removed in an incompatible way']);
});

test('kcp-ts: maxProperties/minProperties, nullable, embedded resources and CEL rules', () => {
  assertErrors({ type: 'object', additionalProperties: str, maxProperties: 3 }, { type: 'object', additionalProperties: str }, false,
    ['schema.openAPISchema: Forbidden: The "maxProperties" JSON Schema construct is not supported by the Schema negotiation for type "object"']);
  assertErrors(obj({ a: { ...str, nullable: true } }), obj({ a: str }), false,
    ['schema.openAPISchema.properties[a].nullable: Invalid value: false: nullable value has been changed in an incompatible way']);
  assertLCD(obj({ a: { ...str, nullable: true } }), obj({ a: str }), true, obj({ a: { ...str, nullable: false } }));
  assertLCD(obj({ a: str }), obj({ a: { ...str, nullable: true } }), false, obj({ a: str }));
  const embedded = { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true };
  assertErrors(embedded, { ...embedded, 'x-kubernetes-embedded-resource': undefined }, true,
    ['schema.openAPISchema.x-kubernetes-embedded-resource: Invalid value: false: x-kubernetes-embedded-resource value has been changed in an incompatible way']);
  const rule = [{ rule: 'self.a != "x"' }];
  assertLCD(obj({ a: str }, { 'x-kubernetes-validations': rule }), obj({ a: str }, { 'x-kubernetes-validations': rule }), false,
    obj({ a: str }, { 'x-kubernetes-validations': rule }));
  assertErrors(obj({ a: str }), obj({ a: str }, { 'x-kubernetes-validations': rule }), true,
    ['schema.openAPISchema: Forbidden: The "x-kubernetes-validations" JSON Schema construct is not supported by the Schema negotiation for type "object"']);
});

test('kcp-ts: objects preserving unknown fields: a dropped property stays an unknown field, a new one validates a former unknown field', () => {
  const p = (props: Record<string, S>): S => obj(props, { 'x-kubernetes-preserve-unknown-fields': true });
  assertLCD(p({ a: str, b: int }), p({ a: str }), false, p({ a: str, b: int }));
  assertErrors(p({ a: str }), p({ a: str, c: int }), false,
    ['schema.openAPISchema.properties: Invalid value: ["c"]: properties value has been changed in an incompatible way']);
  assertLCD(p({ a: str }), p({ a: str, c: int }), true, p({ a: str, c: int }));
  const free: S = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  assertLCD(p({ a: str }), free, false, p({ a: str }));
  assertLCD(free, p({ c: int }), true, p({ c: int }));
});

test('not a structural schema: kube NewStructural refusals are field errors', () => {
  assertErrors(obj({ a: { $ref: '#/definitions/x' } }), obj({ a: str }), false,
    ["schema.openAPISchema.properties[a].$ref: Forbidden: OpenAPIV3Schema '$ref' is not supported (existing schema)"]);
  assertErrors({ type: 'array', items: str }, { type: 'array', items: [str] }, true,
    ["schema.openAPISchema.items: Forbidden: OpenAPIV3Schema 'items' must be a schema, but is an array (new schema)"]);
  assertErrors(obj({ a: str }), obj({ a: 'string' as unknown as S }), false,
    ['schema.openAPISchema.properties[a]: Invalid value: "string": the new schema has a node that is not a schema object']);
  assertErrors(obj({ a: str }), obj({ a: { ...str, 'x-kubernetes-preserve-unknown-fields': false } }), false,
    ["schema.openAPISchema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: 'x-kubernetes-preserve-unknown-fields' must be true or undefined (new schema)"]);
});

test('bounded: a 10,000-deep schema is refused without recursion; one within the limit is compared', () => {
  const nest = (levels: number, leaf: S): S => {
    let s = leaf;
    for (let i = 0; i < levels; i++) s = obj({ x: s });
    return s;
  };
  const deep = nest(10_000, str);
  const r = ensureStructuralSchemaCompatibility('', deep, deep, true);
  assert.equal(r.schema, undefined);
  assert.deepEqual(formatFieldErrors(r.errors), [
    `Forbidden: the existing schema nests deeper than ${MAX_NESTING_DEPTH} levels`,
    `Forbidden: the new schema nests deeper than ${MAX_NESTING_DEPTH} levels`,
  ]);
  // Each level is two JSON objects (the schema and its properties): the deepest allowed.
  const levels = Math.floor(MAX_NESTING_DEPTH / 2) - 1;
  const ok = ensureStructuralSchemaCompatibility('', nest(levels, str), nest(levels, int), false);
  assert.equal(ok.errors.length, 1);
  assert.match(ok.errors[0]!.field!, /^properties\[x\](\.properties\[x\]){248}\.type$/);
  assert.equal(levels, 249);
});

test('the LCD is a copy: later changes to it do not reach the inputs', () => {
  const existing = obj({ a: str, b: int });
  const r = ensureStructuralSchemaCompatibility('', existing, obj({ a: str }), true);
  assert.deepEqual(r.schema, obj({ a: str }));
  (r.schema!.properties as Record<string, S>).a!.type = 'integer';
  assert.deepEqual(existing, obj({ a: str, b: int }));
});

test('hostile input: __proto__ stays a property; enums and required lists cost linear time and bounded messages', () => {
  const e = JSON.parse('{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"__proto__":{"type":"string"}}}') as S;
  const n = JSON.parse('{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"__proto__":{"type":"string"},"constructor":{"type":"integer"}}}') as S;
  const r = ensureStructuralSchemaCompatibility('', e, n, true);
  assert.deepEqual(r.errors, []);
  const props = r.schema!.properties as Record<string, S>;
  assert.equal(Object.getPrototypeOf(props), Object.prototype);
  assert.deepEqual(Object.keys(props), ['__proto__', 'constructor']);

  // 50,000 numbers in a string enum: one error, not one per value.
  const numbers = Array.from({ length: 50_000 }, (_, i) => i);
  const en = check({ ...str, enum: numbers }, { ...str, enum: numbers });
  assert.equal(en.errors.length, 1);
  // 50,000 required names and 20,000 properties against one additionalProperties schema.
  const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`p${i}`, str]));
  const required = Array.from({ length: 50_000 }, (_, i) => `p${i}`);
  const t0 = performance.now();
  const big = ensureStructuralSchemaCompatibility('', obj(many), { type: 'object', additionalProperties: str, required }, true);
  const lines = formatFieldErrors(big.errors);
  assert.equal(lines.length, 1);
  assert.ok(lines[0]!.startsWith('required: Invalid value: ["p20000","p20001",'), lines[0]!.slice(0, 80));
  assert.ok(lines[0]!.endsWith('"p49999"]: required value has been changed in an incompatible way'));
  assert.ok(performance.now() - t0 < 5000);
});
