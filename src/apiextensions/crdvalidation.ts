/**
 * CustomResourceDefinition validation (apiextensions.k8s.io/v1) and name acceptance.
 *
 * Rules and messages are carried over from kubernetes/apiextensions-apiserver:
 *
 * - `pkg/apis/apiextensions/validation/validation.go` — `ValidateCustomResourceDefinition`,
 *   `ValidateCustomResourceDefinitionUpdate`, names, versions, subresources, printer columns,
 *   selectable fields, conversion, the OpenAPI schema walk (`ValidateCustomResourceDefinitionOpenAPISchema`,
 *   `specStandardValidatorV3`), list/map-type extensions, `x-kubernetes-validations`, API approval,
 *   `preserveUnknownFields`, stored versions, and the update "ratcheting" (`requireXxx(oldSpec)`);
 * - `pkg/apiserver/schema/convert.go` (`NewStructural`: unsupported fields), `validation.go`
 *   (`ValidateStructural`: types everywhere, metadata restrictions, nested value validations) and
 *   `complete.go` (value validations must be structurally specified);
 * - `pkg/apiserver/schema/defaulting/validation.go` (`ValidateDefaults`: defaults pruned and valid)
 *   and `pkg/apiserver/schema/pruning/algorithm.go` (pruning used for that check);
 * - `pkg/apis/apiextensions/v1/defaults.go` (`SetDefaults_CustomResourceDefinition`);
 * - `pkg/controller/status/naming_controller.go` (`calculateNamesAndConditions`) for {@link acceptNames}.
 *
 * Field paths and messages are formatted as apimachinery's `field.Error` (`<path>: <Type>: <value>: <detail>`).
 * Deliberate differences from kube-apiserver:
 *
 * - kube validates the *internal* CRD type, into which identical per-version schemas/subresources/
 *   columns of a v1 object are hoisted (so a single-version CRD's schema errors read
 *   `spec.validation.openAPIV3Schema…`). Here every per-version field is reported at its v1 path
 *   (`spec.versions[0].schema.openAPIV3Schema…`), which is what kube prints for CRDs whose versions differ.
 * - `spec.conversion.strategy: Webhook` is refused: this server cannot call conversion webhooks.
 * - CEL rules are only syntax-checked (cel-js parser); kube's type checking against the schema and
 *   cost estimation are not done. Defaults are checked against the schema's OpenAPI value validations
 *   (not against CEL rules nor as full ObjectMeta).
 * - Go RE2 `pattern` syntax is approximated with JavaScript regular expressions.
 * - Very large bad values (kube prints e.g. the whole `spec.versions` list) are abbreviated.
 */
import { Environment } from '@marcbachmann/cel-js';
import type { StatusCause } from '../apimachinery/errors.js';
import { goQuote } from '../apimachinery/pruning.js';
import { regexpError, tenantRegExp } from '../apimachinery/regexp.js';
import { checkAst, formatIssues, schemaType } from './celtypes.js';
import { constantRegexErrors } from './cel-library.js';
import {
  STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, childCardinalityFactor, costErrorMessage, estimateCost, maxCardinality, sizedTypeOf,
} from './celcost.js';
import { caBundleError, webhookURLErrors } from '../apimachinery/webhookclient.js';
import { asObj, isObj } from '../apimachinery/objects.js';

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Small helpers: JSON shapes, field paths and apimachinery field errors
// ---------------------------------------------------------------------------------------------

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const isSet = (v: unknown): boolean => v !== undefined && v !== null;
const strList = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');

/** `field.Path.Child`: `a.b`. */
function child(p: string, ...names: string[]): string {
  let out = p;
  for (const n of names) out = out ? `${out}.${n}` : n;
  return out;
}
/** `field.Path.Index`: `a[0]`. */
const index = (p: string, i: number): string => `${p}[${i}]`;
/** `field.Path.Key`: `a[key]` (no quotes, as kube prints). */
const key = (p: string, k: string): string => `${p}[${k}]`;

const MAX_VALUE_CHARS = 256;

/**
 * Renders a bad value as `field.Error.ErrorBody` does: strings Go-quoted, numbers and booleans
 * plain, everything else as JSON (abbreviated when long).
 */
function fmtValue(v: unknown): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  let json: string;
  try { json = JSON.stringify(v) ?? 'null'; } catch { json = String(v); }
  if (json.length > MAX_VALUE_CHARS) json = Array.isArray(v) ? '[...]' : '{...}';
  return json;
}

function cause(reason: string, field: string, body: string, detail?: string): StatusCause {
  return { reason, field, message: detail ? `${body}: ${detail}` : body };
}
/** `field.Required`. */
const required = (f: string, detail = ''): StatusCause => cause('FieldValueRequired', f, 'Required value', detail);
/** `field.Forbidden`. */
const forbidden = (f: string, detail: string): StatusCause => cause('FieldValueForbidden', f, 'Forbidden', detail);
/** `field.Invalid`. */
const invalid = (f: string, value: unknown, detail: string): StatusCause => cause('FieldValueInvalid', f, `Invalid value: ${fmtValue(value)}`, detail);
/** `field.TypeInvalid`. */
const typeInvalid = (f: string, value: unknown, detail: string): StatusCause => cause('FieldValueTypeInvalid', f, `Invalid value: ${fmtValue(value)}`, detail);
/** `field.Duplicate`. */
const duplicate = (f: string, value: unknown): StatusCause => cause('FieldValueDuplicate', f, `Duplicate value: ${fmtValue(value)}`);
/** `field.NotSupported`. */
const notSupported = (f: string, value: unknown, supported: readonly string[]): StatusCause =>
  cause('FieldValueNotSupported', f, `Unsupported value: ${fmtValue(value)}`, supported.length ? `supported values: ${supported.map((s) => goQuote(s)).join(', ')}` : '');
/** `field.TooLong`. */
const tooLong = (f: string, max: number): StatusCause => cause('FieldValueTooLong', f, 'Too long', `may not be more than ${max} ${max === 1 ? 'byte' : 'bytes'}`);
/** `field.TooMany`. */
const tooMany = (f: string, actual: number, max: number): StatusCause => cause('FieldValueTooMany', f, `Too many: ${actual}`, `must have at most ${max} ${max === 1 ? 'item' : 'items'}`);

/** A typed-JSON check standing in for kube's decoding into Go structs. */
function expectType(causes: StatusCause[], f: string, v: unknown, want: 'string' | 'boolean' | 'object' | 'array' | 'integer'): boolean {
  if (v === undefined || v === null) return true;
  const ok = want === 'object' ? isObj(v) : want === 'array' ? Array.isArray(v) : want === 'integer' ? Number.isInteger(v) : typeof v === want;
  if (!ok) causes.push(invalid(f, v, `must be ${want === 'array' || want === 'object' || want === 'integer' ? `an ${want}` : `a ${want}`}`));
  return ok;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ka = Object.keys(a as Obj);
  const kb = Object.keys(b as Obj);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as Obj)[k], (b as Obj)[k]));
}

function clone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v)) as T;
}

// ---------------------------------------------------------------------------------------------
// apimachinery name validation (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------------

const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** `validation.RegexError`. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (!examples.length) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

/** `validation.IsDNS1035Label`. */
function isDNS1035Label(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push('must be no more than 63 characters');
  if (!DNS1035_LABEL.test(v)) {
    errs.push(regexError("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character", DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  }
  return errs;
}

/** `validation.IsDNS1123Subdomain`. */
function isDNS1123Subdomain(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push('must be no more than 253 characters');
  if (!DNS1123_SUBDOMAIN.test(v)) {
    errs.push(regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", DNS1123_SUBDOMAIN_FMT, 'example.com'));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Defaults (apiextensions v1 SetDefaults_CustomResourceDefinition)
// ---------------------------------------------------------------------------------------------

/** `spec.names` of a CRD with v1 defaulting applied (singular = lower-case kind, listKind = kind + "List"). */
function effectiveNames(spec: Obj): Obj {
  const names = { ...asObj(spec.names) };
  const kind = str(names.kind);
  const unset = (v: unknown) => v === undefined || v === null || v === '';
  if (unset(names.singular)) names.singular = kind.toLowerCase();
  if (unset(names.listKind) && kind) names.listKind = `${kind}List`;
  return names;
}

/**
 * Applies apiextensions.k8s.io/v1 defaulting in place, as kube does on decode
 * (`SetDefaults_CustomResourceDefinition`): `spec.names.singular` = lower-case kind,
 * `spec.names.listKind` = kind + "List", `spec.conversion` = `{strategy: None}`, webhook service
 * port 443, and `status.storedVersions` = [the storage version] when empty.
 */
export function applyCRDDefaults(crd: Record<string, unknown>): void {
  if (!isObj(crd.spec)) return;
  const spec = crd.spec;
  if (isObj(spec.names)) {
    const n = spec.names;
    if (!n.singular && typeof n.kind === 'string') n.singular = n.kind.toLowerCase();
    if (!n.listKind && typeof n.kind === 'string' && n.kind) n.listKind = `${n.kind}List`;
  }
  if (spec.conversion === undefined || spec.conversion === null) spec.conversion = { strategy: 'None' };
  const svc = asObj(asObj(asObj(spec.conversion).webhook).clientConfig).service;
  if (isObj(svc) && (svc.port === undefined || svc.port === null)) svc.port = 443;
  const status = isObj(crd.status) ? crd.status : (crd.status = {}) as Obj;
  if (!Array.isArray(status.storedVersions) || status.storedVersions.length === 0) {
    const storage = arr(spec.versions).find((v) => asObj(v).storage === true);
    if (storage !== undefined && typeof asObj(storage).name === 'string') status.storedVersions = [asObj(storage).name];
  }
}

// ---------------------------------------------------------------------------------------------
// Schema traversal helpers (validation.go SchemaHas & friends)
// ---------------------------------------------------------------------------------------------

/** Per-version OpenAPI schemas of a v1 spec (objects only). */
function versionSchemas(spec: Obj): Obj[] {
  const out: Obj[] = [];
  for (const v of arr(spec.versions)) {
    const s = asObj(asObj(v).schema).openAPIV3Schema;
    if (isObj(s)) out.push(s);
  }
  return out;
}

/** `SchemaHas`: whether `pred` holds for `s` or any schema nested in it. */
function schemaHas(s: unknown, pred: (s: Obj) => boolean): boolean {
  if (!isObj(s)) return false;
  if (pred(s)) return true;
  const items = s.items;
  if (isObj(items) && schemaHas(items, pred)) return true;
  if (Array.isArray(items) && items.some((x) => schemaHas(x, pred))) return true;
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) if (arr(s[k]).some((x) => schemaHas(x, pred))) return true;
  if (schemaHas(s.not, pred)) return true;
  for (const k of ['properties', 'patternProperties', 'definitions', 'dependencies'] as const) {
    if (isObj(s[k]) && Object.values(s[k] as Obj).some((x) => schemaHas(x, pred))) return true;
  }
  if (schemaHas(s.additionalProperties, pred)) return true;
  if (schemaHas(s.additionalItems, pred)) return true;
  return false;
}

const OPENAPI_V3_TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];
const hasDefault = (s: Obj): boolean => isSet(s.default);

function hasKubernetesExtensions(s: Obj): boolean {
  return s['x-kubernetes-embedded-resource'] === true || isSet(s['x-kubernetes-preserve-unknown-fields']) || s['x-kubernetes-int-or-string'] === true
    || arr(s['x-kubernetes-list-map-keys']).length > 0 || isSet(s['x-kubernetes-list-type']) || arr(s['x-kubernetes-validations']).length > 0;
}

function hasInvalidType(s: Obj): boolean {
  return typeof s.type === 'string' && s.type !== '' && !OPENAPI_V3_TYPES.includes(s.type);
}

function hasNonAtomicSetType(s: Obj): boolean {
  if (s['x-kubernetes-list-type'] !== 'set' || !isObj(s.items)) return false;
  const is = s.items;
  if (is.type === 'array') return isSet(is['x-kubernetes-list-type']) && is['x-kubernetes-list-type'] !== 'atomic';
  if (is.type === 'object') return is['x-kubernetes-map-type'] !== 'atomic';
  return false;
}

// ---------------------------------------------------------------------------------------------
// Structural schemas (pkg/apiserver/schema: convert.go, validation.go, complete.go)
// ---------------------------------------------------------------------------------------------

/** JSON keys that kube's `JSONSchemaProps` knows; unknown keys are dropped on decode. */
const KNOWN_SCHEMA_KEYS = [
  'id', '$schema', '$ref', 'description', 'type', 'nullable', 'format', 'title', 'default', 'maximum', 'exclusiveMaximum',
  'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'multipleOf',
  'enum', 'maxProperties', 'minProperties', 'required', 'items', 'allOf', 'oneOf', 'anyOf', 'not', 'properties',
  'additionalProperties', 'patternProperties', 'dependencies', 'additionalItems', 'definitions', 'externalDocs', 'example',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations',
] as const;

/** Go field names of `JSONSchemaProps`, for the root-schema message of status-enabled CRDs. */
const GO_FIELD_NAMES: Record<string, string> = {
  id: 'ID', $schema: 'Schema', $ref: 'Ref', description: 'Description', type: 'Type', nullable: 'Nullable', format: 'Format',
  title: 'Title', default: 'Default', maximum: 'Maximum', exclusiveMaximum: 'ExclusiveMaximum', minimum: 'Minimum',
  exclusiveMinimum: 'ExclusiveMinimum', maxLength: 'MaxLength', minLength: 'MinLength', pattern: 'Pattern', maxItems: 'MaxItems',
  minItems: 'MinItems', uniqueItems: 'UniqueItems', multipleOf: 'MultipleOf', enum: 'Enum', maxProperties: 'MaxProperties',
  minProperties: 'MinProperties', required: 'Required', items: 'Items', allOf: 'AllOf', oneOf: 'OneOf', anyOf: 'AnyOf', not: 'Not',
  properties: 'Properties', additionalProperties: 'AdditionalProperties', patternProperties: 'PatternProperties',
  dependencies: 'Dependencies', additionalItems: 'AdditionalItems', definitions: 'Definitions', externalDocs: 'ExternalDocs',
  example: 'Example', 'x-kubernetes-preserve-unknown-fields': 'XPreserveUnknownFields', 'x-kubernetes-embedded-resource': 'XEmbeddedResource',
  'x-kubernetes-int-or-string': 'XIntOrString', 'x-kubernetes-list-map-keys': 'XListMapKeys', 'x-kubernetes-list-type': 'XListType',
  'x-kubernetes-map-type': 'XMapType', 'x-kubernetes-validations': 'XValidations',
};

/** Root fields allowed when the status subresource is enabled (`allowedFieldsAtRootSchema`). */
const ALLOWED_AT_ROOT = ['Description', 'Type', 'Format', 'Title', 'Maximum', 'ExclusiveMaximum', 'Minimum', 'ExclusiveMinimum', 'MaxLength',
  'MinLength', 'Pattern', 'MaxItems', 'MinItems', 'UniqueItems', 'MultipleOf', 'Required', 'Items', 'Properties', 'ExternalDocs', 'Example',
  'XPreserveUnknownFields', 'XValidations'];

/** Keys that are Go pointers: set even when `false`/`""`/`0`. */
const POINTER_KEYS = new Set(['$ref', 'default', 'example', 'maximum', 'minimum', 'maxLength', 'minLength', 'maxItems', 'minItems', 'multipleOf',
  'maxProperties', 'minProperties', 'items', 'not', 'additionalProperties', 'additionalItems', 'externalDocs',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-list-type', 'x-kubernetes-map-type']);

/** Whether a schema field holds a non-zero Go value. */
function nonZero(k: string, v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (POINTER_KEYS.has(k)) return true;
  if (v === false || v === '') return false;
  if (Array.isArray(v) && v.length === 0 && (k === 'allOf' || k === 'anyOf' || k === 'oneOf' || k === 'enum')) return false;
  if (isObj(v) && Object.keys(v).length === 0 && (k === 'properties' || k === 'patternProperties' || k === 'definitions' || k === 'dependencies')) return false;
  return true;
}

/** `validateUnsupportedFields` + the other `NewStructural` failures, or undefined if convertible. */
function structuralInitError(s: unknown): string | undefined {
  if (!isObj(s)) return undefined;
  if (str(s.id)) return "OpenAPIV3Schema 'id' is not supported";
  if (str(s.$schema)) return "OpenAPIV3Schema 'schema' is not supported";
  if (typeof s.$ref === 'string' && s.$ref) return "OpenAPIV3Schema '$ref' is not supported";
  if (isObj(s.patternProperties) && Object.keys(s.patternProperties).length) return "OpenAPIV3Schema 'patternProperties' is not supported";
  if (isObj(s.dependencies) && Object.keys(s.dependencies).length) return "OpenAPIV3Schema 'dependencies' is not supported";
  if (isSet(s.additionalItems)) return "OpenAPIV3Schema 'additionalItems' is not supported";
  if (isObj(s.definitions) && Object.keys(s.definitions).length) return "OpenAPIV3Schema 'definitions' is not supported";
  if (s['x-kubernetes-preserve-unknown-fields'] === false) return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
  if (Array.isArray(s.items) && s.items.length > 0) return "OpenAPIV3Schema 'items' must be a schema, but is an array";
  const subs: unknown[] = [s.not, ...arr(s.allOf), ...arr(s.anyOf), ...arr(s.oneOf), s.items, s.additionalProperties];
  if (isObj(s.properties)) subs.push(...Object.values(s.properties));
  for (const sub of subs) {
    const e = structuralInitError(sub);
    if (e) return e;
  }
  return undefined;
}

type Level = 'root' | 'item' | 'field';

/** `anyOf: [{type: integer}, {type: string}]` exactly (the IntOrString pattern). */
function isIntOrStringAnyOf(anyOf: unknown): boolean {
  const a = arr(anyOf);
  if (a.length !== 2) return false;
  const only = (x: unknown, t: string) => isObj(x) && x.type === t && Object.entries(x).every(([k, v]) => k === 'type' || !KNOWN_SCHEMA_KEYS.includes(k as never) || !nonZero(k, v));
  return only(a[0], 'integer') && only(a[1], 'string');
}

/** `ValidateStructural`: invariants plus completeness, sorted by message as kube does. */
function validateStructural(p: string, s: Obj): StatusCause[] {
  const errs = [...structuralInvariants(s, 'root', p), ...structuralCompleteness(s, p)];
  const text = (c: StatusCause) => `${c.field}: ${c.message}`;
  return errs.sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
}

function structuralInvariants(s: Obj, lvl: Level, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const type = str(s.type);
  const props = asObj(s.properties);
  const pUF = s['x-kubernetes-preserve-unknown-fields'] === true;
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  const ap = s.additionalProperties;

  if (type === 'array' && !isSet(s.items)) errs.push(required(child(p, 'items'), 'must be specified'));
  if (isObj(s.items)) errs.push(...structuralInvariants(s.items, 'item', child(p, 'items')));
  for (const [k, v] of Object.entries(props)) if (isObj(v)) errs.push(...structuralInvariants(v, 'field', key(child(p, 'properties'), k)));
  if (isSet(ap)) {
    if (lvl === 'root') errs.push(forbidden(child(p, 'additionalProperties'), 'must not be used at the root'));
    if (isObj(ap)) errs.push(...structuralInvariants(ap, 'field', child(p, 'additionalProperties')));
  }

  if (intOrString && pUF) errs.push(invalid(child(p, 'x-kubernetes-preserve-unknown-fields'), true, 'must be false if x-kubernetes-int-or-string is true'));
  if (intOrString && embedded) errs.push(invalid(child(p, 'x-kubernetes-embedded-resource'), true, 'must be false if x-kubernetes-int-or-string is true'));

  const skipAnyOf = isIntOrStringAnyOf(s.anyOf);
  const skipFirstAllOfAnyOf = arr(s.allOf).length >= 1 && isIntOrStringAnyOf(asObj(arr(s.allOf)[0]).anyOf);
  errs.push(...valueValidation(s, skipAnyOf, skipFirstAllOfAnyOf, lvl, p));

  const checkMetadata = lvl === 'root' || embedded;
  if (embedded && type !== 'object') {
    errs.push(type ? invalid(child(p, 'type'), type, 'must be object if x-kubernetes-embedded-resource is true')
      : required(child(p, 'type'), 'must be object if x-kubernetes-embedded-resource is true'));
  } else if (!type && !intOrString && !pUF) {
    const why = lvl === 'root' ? 'must not be empty at the root' : lvl === 'item' ? 'must not be empty for specified array items' : 'must not be empty for specified object fields';
    errs.push(required(child(p, 'type'), why));
  }
  if (embedded && isSet(ap)) errs.push(forbidden(child(p, 'additionalProperties'), 'must not be used if x-kubernetes-embedded-resource is set'));
  if (lvl === 'root' && type && type !== 'object') errs.push(invalid(child(p, 'type'), type, 'must be object at the root'));

  for (const meta of ['kind', 'apiVersion']) {
    if (checkMetadata && isObj(props[meta]) && str(props[meta].type) !== 'string') {
      errs.push(invalid(child(key(child(p, 'properties'), meta), 'type'), str(props[meta].type), 'must be string'));
    }
  }
  if (isObj(props.metadata)) errs.push(...metadataInvariants(props.metadata, checkMetadata, lvl, key(child(p, 'properties'), 'metadata')));

  if (embedded && !pUF && Object.keys(props).length === 0) {
    errs.push(required(child(p, 'properties'), 'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields'));
  }
  return errs;
}

/** `validateStructuralMetadataInvariants`: root metadata may only restrict name and generateName. */
function metadataInvariants(m: Obj, checkMetadata: boolean, lvl: Level, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (checkMetadata && str(m.type) !== 'object') errs.push(invalid(child(p, 'type'), str(m.type), 'must be object'));
  if (lvl === 'root') {
    const names = Object.keys(asObj(m.properties));
    const hasName = names.includes('name');
    const hasGen = names.includes('generateName');
    const propsCleared = names.length === 0 || (hasName && hasGen && names.length === 2) || ((hasName || hasGen) && names.length === 1);
    const others = KNOWN_SCHEMA_KEYS.filter((k) => k !== 'type' && k !== 'default' && k !== 'properties' && nonZero(k, m[k]));
    if (!propsCleared || others.length) {
      errs.push(forbidden(p, 'must not specify anything other than name and generateName, but metadata is implicitly specified'));
    }
  }
  return errs;
}

function valueValidation(v: Obj, skipAnyOf: boolean, skipFirstAllOfAnyOf: boolean, lvl: Level, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (!skipAnyOf) arr(v.anyOf).forEach((x, i) => errs.push(...nestedValueValidation(x, false, false, lvl, index(child(p, 'anyOf'), i))));
  arr(v.allOf).forEach((x, i) => errs.push(...nestedValueValidation(x, skipFirstAllOfAnyOf && i === 0, false, lvl, index(child(p, 'allOf'), i))));
  arr(v.oneOf).forEach((x, i) => errs.push(...nestedValueValidation(x, false, false, lvl, index(child(p, 'oneOf'), i))));
  errs.push(...nestedValueValidation(v.not, false, false, lvl, child(p, 'not')));
  if (typeof v.pattern === 'string' && v.pattern) {
    // Go's regexp.Compile, by RE2: look-arounds, back-references, possessive quantifiers are refused.
    const e = regexpError(v.pattern);
    if (e) errs.push(invalid(child(p, 'pattern'), v.pattern, `must be a valid regular expression, but isn't: ${e}`));
  }
  return errs;
}

/** `validateNestedValueValidation`: under anyOf/allOf/oneOf/not only value validations are allowed. */
function nestedValueValidation(v: unknown, skipAnyOf: boolean, skipAllOfAnyOf: boolean, lvl: Level, p: string): StatusCause[] {
  if (!isObj(v)) return [];
  const errs = valueValidation(v, skipAnyOf, skipAllOfAnyOf, lvl, p);
  if (isObj(v.items)) errs.push(...nestedValueValidation(v.items, false, false, lvl, child(p, 'items')));
  for (const [k, x] of Object.entries(asObj(v.properties))) errs.push(...nestedValueValidation(x, false, false, 'field', key(child(p, 'properties'), k)));
  if (str(v.type)) errs.push(forbidden(child(p, 'type'), 'must be empty to be structural'));
  if (v.additionalProperties === true || isObj(v.additionalProperties)) errs.push(forbidden(child(p, 'additionalProperties'), 'must be undefined to be structural'));
  if (isSet(v.default)) errs.push(forbidden(child(p, 'default'), 'must be undefined to be structural'));
  if (str(v.title)) errs.push(forbidden(child(p, 'title'), 'must be empty to be structural'));
  if (str(v.description)) errs.push(forbidden(child(p, 'description'), 'must be empty to be structural'));
  if (v.nullable === true) errs.push(forbidden(child(p, 'nullable'), 'must be false to be structural'));
  if (v['x-kubernetes-preserve-unknown-fields'] === true) errs.push(forbidden(child(p, 'x-kubernetes-preserve-unknown-fields'), 'must be false to be structural'));
  if (v['x-kubernetes-embedded-resource'] === true) errs.push(forbidden(child(p, 'x-kubernetes-embedded-resource'), 'must be false to be structural'));
  if (v['x-kubernetes-int-or-string'] === true) errs.push(forbidden(child(p, 'x-kubernetes-int-or-string'), 'must be false to be structural'));
  if (arr(v['x-kubernetes-list-map-keys']).length) errs.push(forbidden(child(p, 'x-kubernetes-list-map-keys'), 'must be empty to be structural'));
  if (isSet(v['x-kubernetes-list-type'])) errs.push(forbidden(child(p, 'x-kubernetes-list-type'), 'must be undefined to be structural'));
  if (isSet(v['x-kubernetes-map-type'])) errs.push(forbidden(child(p, 'x-kubernetes-map-type'), 'must be undefined to be structural'));
  if (arr(v['x-kubernetes-validations']).length) errs.push(forbidden(child(p, 'x-kubernetes-validations'), 'must be empty to be structural'));
  if (isObj(v.properties) && 'metadata' in v.properties) errs.push(forbidden(key(child(p, 'properties'), 'metadata'), 'must not be specified in a nested context'));
  return errs;
}

/** `validateStructuralCompleteness`: properties/items used in the root's value validations must be specified structurally. */
function structuralCompleteness(s: Obj, p: string): StatusCause[] {
  return vvCompleteness(s, s, p, p);
}

function vvCompleteness(v: Obj, s: Obj | undefined, sPath: string, vPath: string): StatusCause[] {
  if (!s) return [required(sPath, `because it is defined in ${vPath}`)];
  const errs = nestedCompleteness(v.not, s, sPath, child(vPath, 'not'));
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) arr(v[k]).forEach((x, i) => errs.push(...nestedCompleteness(x, s, sPath, index(child(vPath, k), i))));
  return errs;
}

function nestedCompleteness(v: unknown, s: Obj | undefined, sPath: string, vPath: string): StatusCause[] {
  if (!isObj(v)) return [];
  if (!s) return [required(sPath, `because it is defined in ${vPath}`)];
  const errs = vvCompleteness(v, s, sPath, vPath);
  if (isObj(v.items)) errs.push(...nestedCompleteness(v.items, isObj(s.items) ? s.items : undefined, child(sPath, 'items'), child(vPath, 'items')));
  const sProps = asObj(s.properties);
  for (const [k, x] of Object.entries(asObj(v.properties))) {
    if (isObj(sProps[k])) errs.push(...nestedCompleteness(x, sProps[k] as Obj, key(child(sPath, 'properties'), k), key(child(vPath, 'properties'), k)));
    else errs.push(required(key(child(sPath, 'properties'), k), `because it is defined in ${key(child(vPath, 'properties'), k)}`));
  }
  return errs;
}

/** Whether a schema (as stored) is not structural (`schemaIsNonStructural`). */
function schemaIsNonStructural(s: unknown): boolean {
  if (!isObj(s)) return false;
  if (structuralInitError(s)) return true;
  return validateStructural('', s).length > 0;
}

// ---------------------------------------------------------------------------------------------
// Pruning and value validation of defaults (schema/defaulting/validation.go, pruning/algorithm.go)
// ---------------------------------------------------------------------------------------------

const META_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

/** kube's `pruning.Prune` on a plain JSON value (in place). */
function pruneValue(x: unknown, s: Obj | undefined, isResourceRoot: boolean): void {
  if (isResourceRoot) s = { ...(s ?? {}), 'x-kubernetes-embedded-resource': true };
  pruneRec(x, s);
}

function pruneRec(x: unknown, s: Obj | undefined): void {
  if (s && s['x-kubernetes-preserve-unknown-fields'] === true) { skipPrune(x, s); return; }
  if (isObj(x)) {
    if (!s) { for (const k of Object.keys(x)) delete x[k]; return; }
    const props = asObj(s.properties);
    for (const k of Object.keys(x)) {
      if (s['x-kubernetes-embedded-resource'] === true && META_FIELDS.has(k)) continue;
      if (isObj(props[k])) pruneRec(x[k], props[k] as Obj);
      else if (isSet(s.additionalProperties)) pruneRec(x[k], isObj(s.additionalProperties) ? s.additionalProperties : undefined);
      else delete x[k];
    }
  } else if (Array.isArray(x)) {
    const items = s && isObj(s.items) ? s.items : undefined;
    for (const v of x) pruneRec(v, items);
  }
}

function skipPrune(x: unknown, s: Obj | undefined): void {
  if (!s) return;
  if (isObj(x)) {
    const props = asObj(s.properties);
    for (const k of Object.keys(x)) {
      if (s['x-kubernetes-embedded-resource'] === true && META_FIELDS.has(k)) continue;
      if (isObj(props[k])) pruneRec(x[k], props[k] as Obj);
      else if (isSet(s.additionalProperties)) pruneRec(x[k], isObj(s.additionalProperties) ? s.additionalProperties : undefined);
    }
  } else if (Array.isArray(x)) {
    for (const v of x) skipPrune(v, isObj(s.items) ? s.items : undefined);
  }
}

/** go-openapi's name for a JSON value's type. */
function jsonTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function matchesType(v: unknown, t: string): boolean {
  switch (t) {
    case 'object': return isObj(v);
    case 'array': return Array.isArray(v);
    case 'string': return typeof v === 'string';
    case 'boolean': return typeof v === 'boolean';
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'number': return typeof v === 'number';
    default: return true;
  }
}

const FORMAT_CHECKS: Record<string, (s: string) => boolean> = {
  byte: (s) => /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0,
  'date-time': (s) => /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/.test(s) && !Number.isNaN(Date.parse(s.replace(' ', 'T'))),
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)),
  uuid: (s) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(s),
  ipv4: (s) => /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(s),
};

/**
 * Validates a default value against a schema node with go-openapi's keywords, reporting as
 * kube's `kubeOpenAPIResultToFieldErrors` (`base` = the `default` path; `name` = dotted path inside
 * the value, appended to the field path and used in the message).
 */
function validateValue(x: unknown, s: unknown, base: string, name: string, out: StatusCause[]): void {
  if (!isObj(s)) return;
  const f = name ? child(base, name) : base;
  const label = name ? `${name} in body` : 'in body';
  const sub = (n: string | number) => (name ? `${name}.${n}` : String(n));
  const type = str(s.type);
  if (x === null) {
    if (s.nullable !== true && type) out.push(typeInvalid(f, 'null', `${label} must be of type ${type}: "null"`));
    return;
  }
  if (type && !matchesType(x, type)) {
    out.push(typeInvalid(f, jsonTypeName(x), `${label} must be of type ${type}: ${goQuote(jsonTypeName(x))}`));
    return;
  }
  if (Array.isArray(s.enum) && s.enum.length && !s.enum.some((e) => deepEqual(e, x))) {
    out.push(notSupported(f, x, s.enum.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)))));
  }
  if (typeof x === 'string') {
    const n = [...x].length;
    if (typeof s.maxLength === 'number' && n > s.maxLength) out.push(tooLong(f, s.maxLength));
    if (typeof s.minLength === 'number' && n < s.minLength) out.push(invalid(f, x, `${label} should be at least ${s.minLength} chars long`));
    if (typeof s.pattern === 'string' && s.pattern) {
      const err = regexpError(s.pattern);
      if (err !== undefined) out.push(invalid(f, x, `${label} should match '${s.pattern}, but pattern is invalid: ${err}'`));
      else if (!tenantRegExp(s.pattern).test(x)) out.push(invalid(f, x, `${label} should match '${s.pattern}'`));
    }
    const check = typeof s.format === 'string' ? FORMAT_CHECKS[s.format] : undefined;
    if (check && !check(x)) out.push(typeInvalid(f, x, `${label} must be of type ${s.format}: ${goQuote(x)}`));
  }
  if (typeof x === 'number') {
    if (typeof s.maximum === 'number') {
      if (s.exclusiveMaximum === true ? x >= s.maximum : x > s.maximum) out.push(invalid(f, x, `${label} should be less than ${s.exclusiveMaximum === true ? '' : 'or equal to '}${s.maximum}`));
    }
    if (typeof s.minimum === 'number') {
      if (s.exclusiveMinimum === true ? x <= s.minimum : x < s.minimum) out.push(invalid(f, x, `${label} should be greater than ${s.exclusiveMinimum === true ? '' : 'or equal to '}${s.minimum}`));
    }
    if (typeof s.multipleOf === 'number' && s.multipleOf > 0) {
      const q = x / s.multipleOf;
      if (Math.abs(q - Math.round(q)) > 1e-9) out.push(invalid(f, x, `${label} should be a multiple of ${s.multipleOf}`));
    }
  }
  if (Array.isArray(x)) {
    if (typeof s.maxItems === 'number' && x.length > s.maxItems) out.push(tooMany(f, x.length, s.maxItems));
    if (typeof s.minItems === 'number' && x.length < s.minItems) out.push(invalid(f, x, `${label} should have at least ${s.minItems} items`));
    if (s.uniqueItems === true && x.some((a, i) => x.some((b, j) => j > i && deepEqual(a, b)))) out.push(invalid(f, x, `${label} shouldn't contain duplicates`));
    if (isObj(s.items)) x.forEach((v, i) => validateValue(v, s.items, base, sub(i), out));
  }
  if (isObj(x)) {
    const n = Object.keys(x).length;
    for (const r of strList(s.required)) if (!(r in x)) out.push(required(child(base, sub(r))));
    if (typeof s.maxProperties === 'number' && n > s.maxProperties) out.push(tooMany(f, n, s.maxProperties));
    if (typeof s.minProperties === 'number' && n < s.minProperties) out.push(invalid(f, x, `${label} should have at least ${s.minProperties} properties`));
    const props = asObj(s.properties);
    for (const [k, v] of Object.entries(x)) {
      if (isObj(props[k])) validateValue(v, props[k], base, sub(k), out);
      else if (isObj(s.additionalProperties)) validateValue(v, s.additionalProperties, base, sub(k), out);
      else if (s.additionalProperties === false) out.push(invalid(child(base, sub(k)), '', `${sub(k)} in body is a forbidden property`));
    }
  }
  const branchOk = (b: unknown) => { const e: StatusCause[] = []; validateValue(x, b, base, name, e); return e.length === 0; };
  for (const b of arr(s.allOf)) validateValue(x, b, base, name, out);
  if (arr(s.anyOf).length && !arr(s.anyOf).some(branchOk)) out.push(invalid(f, '', `${label} must validate at least one schema (anyOf)`));
  if (arr(s.oneOf).length && arr(s.oneOf).filter(branchOk).length !== 1) out.push(invalid(f, '', `${label} must validate one and only one schema (oneOf)`));
  if (isObj(s.not) && branchOk(s.not)) out.push(invalid(f, '', `${label} must not validate the schema (not)`));
}

/** `ValidateDefaults`: every default must be pruned (no unknown fields) and valid against its schema. */
function validateDefaults(p: string, root: Obj, requirePrunedDefaults: boolean): StatusCause[] {
  const errs: StatusCause[] = [];
  const walk = (s: Obj, path: string, insideMeta: boolean, isRoot: boolean) => {
    const embedded = isRoot || s['x-kubernetes-embedded-resource'] === true;
    if (embedded) insideMeta = false;
    if (isSet(s.default)) {
      const dp = child(path, 'default');
      if (!insideMeta && requirePrunedDefaults) {
        const pruned = clone(s.default);
        pruneValue(pruned, s, embedded);
        if (!deepEqual(pruned, s.default)) errs.push(invalid(dp, s.default, 'must not have unknown fields'));
      }
      if (embedded && isObj(s.default)) {
        for (const m of ['apiVersion', 'kind'] as const) {
          const v = s.default[m];
          if (v !== undefined && typeof v !== 'string') errs.push(invalid(child(dp, m), v, 'must be a string'));
        }
        if (s.default.metadata !== undefined && !isObj(s.default.metadata)) errs.push(invalid(child(dp, 'metadata'), s.default.metadata, 'must be an object'));
      }
      validateValue(s.default, s, dp, '', errs);
    }
    if (isObj(s.items)) walk(s.items, child(path, 'items'), insideMeta, false);
    for (const [k, v] of Object.entries(asObj(s.properties))) {
      if (isObj(v)) walk(v, key(child(path, 'properties'), k), insideMeta || (embedded && META_FIELDS.has(k)), false);
    }
  };
  walk(root, p, false, true);
  return errs;
}

/** `schemaHasUnprunedDefaults` (for update ratcheting). */
function schemaHasUnprunedDefaults(s: unknown): boolean {
  if (!isObj(s) || !schemaHas(s, hasDefault) || schemaIsNonStructural(s)) return false;
  let found = false;
  const walk = (n: Obj) => {
    if (found) return;
    if (isSet(n.default)) {
      const pruned = clone(n.default);
      pruneValue(pruned, n, n['x-kubernetes-embedded-resource'] === true);
      if (!deepEqual(pruned, n.default)) { found = true; return; }
    }
    if (isObj(n.items)) walk(n.items);
    if (isObj(n.additionalProperties)) walk(n.additionalProperties);
    for (const v of Object.values(asObj(n.properties))) if (isObj(v)) walk(v);
  };
  walk(s);
  return found;
}

// ---------------------------------------------------------------------------------------------
// CEL (x-kubernetes-validations): syntax, and the types celtypes.ts models
// ---------------------------------------------------------------------------------------------

let celEnv: Environment | undefined;

/** Parses a CEL expression; returns its AST (when it parses), the error, and whether it uses oldSelf. */
function parseCEL(expr: string): { error?: string; usesOldSelf: boolean; ast?: unknown } {
  celEnv ??= new Environment({ enableOptionalTypes: true, unlistedVariablesAreDyn: true });
  try {
    const parsed = celEnv.parse(expr);
    let uses = false;
    const visit = (n: unknown): void => {
      if (uses) return;
      if (Array.isArray(n)) { n.forEach(visit); return; }
      if (!isObj(n)) return;
      if (n.op === 'id' && n.args === 'oldSelf') { uses = true; return; }
      visit(n.args);
    };
    visit(parsed.ast);
    return { usesOldSelf: uses, ast: parsed.ast };
  } catch (e) {
    const err = e as { summary?: string; message?: string };
    const msg = (typeof err.summary === 'string' && err.summary) || String(err.message ?? e).split('\n')[0];
    return { error: msg, usesOldSelf: /\boldSelf\b/.test(expr) };
  }
}

/** `cel.ValidFieldPath`: a JSON path of field (and, if allowed, `['key']`) accessors valid for `schema`. */
function validFieldPath(jsonPath: string, schema: Obj | undefined, allowArrayNotation: boolean): { path: string[]; schema: Obj | undefined } | { error: string } {
  const tokens: string[] = [];
  for (let i = 0; i < jsonPath.length;) {
    const c = jsonPath[i]!;
    if (c === '.' || c === '[' || c === ']') { tokens.push(c); i++; continue; }
    if (c === "'") {
      let j = i + 1;
      while (j < jsonPath.length && !(jsonPath[j] === "'" && jsonPath[j - 1] !== '\\')) j++;
      tokens.push(jsonPath.slice(i, j + 1));
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < jsonPath.length && !'.[]'.includes(jsonPath[j]!)) j++;
    tokens.push(jsonPath.slice(i, j));
    i = j;
  }
  const path: string[] = [];
  let s = schema;
  const step = (name: string): string | undefined => {
    if (s && isObj(s.properties) && Object.keys(s.properties).length) {
      path.push(name);
      const next = s.properties[name];
      if (!isObj(next)) return 'does not refer to a valid field';
      s = next;
    } else if (s && isSet(s.additionalProperties)) {
      path.push(name);
      s = isObj(s.additionalProperties) ? s.additionalProperties : undefined;
    } else {
      return 'does not refer to a valid field';
    }
    return undefined;
  };
  for (let t = 0; t < tokens.length; t++) {
    const tok = tokens[t]!;
    if (tok === '[') {
      if (!allowArrayNotation) return { error: 'array notation is not allowed' };
      const q = tokens[++t];
      if (q === undefined) return { error: 'unexpected end of JSON path' };
      if (q.length < 2 || q[0] !== "'" || q[q.length - 1] !== "'") return { error: `expected single quoted string but got ${q}` };
      const e = step(q.slice(1, -1).replace(/\\'/g, "'").replace(/\\\\/g, '\\'));
      if (e) return { error: e };
      const close = tokens[++t];
      if (close === undefined) return { error: 'unexpected end of JSON path' };
      if (close !== ']') return { error: `expected ] but got ${close}` };
    } else if (tok === '.') {
      const n = tokens[++t];
      if (n === undefined) return { error: 'unexpected end of JSON path' };
      const e = step(n);
      if (e) return { error: e };
    } else {
      return { error: `expected [ or . but got: ${tok}` };
    }
  }
  return { path, schema: s };
}

// ---------------------------------------------------------------------------------------------
// OpenAPI schema walk (ValidateCustomResourceDefinitionOpenAPISchema, specStandardValidatorV3)
// ---------------------------------------------------------------------------------------------

interface SchemaOptions {
  allowDefaults: boolean;
  requireValidPropertyType: boolean;
  requireStructuralSchema: boolean;
  requirePrunedDefaults: boolean;
  requireAtomicSetType: boolean;
  requireMapListKeysMapSetValidation: boolean;
  /**
   * Rules the stored CRD already has: not type checked again on update (kube's
   * `preexistingExpressions`: an expression that no longer compiles stays writable).
   */
  preexistingRules: ReadonlySet<string>;
}

/** `specStandardValidatorV3` state. */
interface Ssv {
  allowDefaults: boolean;
  disallowDefaultsReason: string;
  insideResourceMeta: boolean;
  requireValidPropertyType: boolean;
  /** First ancestor path where `oldSelf` cannot be correlated, if any. */
  uncorrelatablePath?: string;
}

const withForbiddenDefaults = (v: Ssv, reason: string): Ssv => ({ ...v, allowDefaults: false, disallowDefaultsReason: reason });
const withForbidOldSelf = (v: Ssv, p: string): Ssv => (v.uncorrelatablePath !== undefined ? v : { ...v, uncorrelatablePath: p });
const mapIsCorrelatable = (t: unknown): boolean => !isSet(t) || t === 'granular' || t === 'atomic';

const SUPPORTED_RULE_REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'];

interface SchemaErrors { schema: StatusCause[]; cel: StatusCause[] }

function ssvValidate(s: Obj, p: string, v: Ssv): StatusCause[] {
  const errs: StatusCause[] = [];
  if (s.type !== undefined && s.type !== null && typeof s.type !== 'string') errs.push(invalid(child(p, 'type'), s.type, 'must be a string'));
  else if (v.requireValidPropertyType && str(s.type) && !OPENAPI_V3_TYPES.includes(str(s.type))) errs.push(notSupported(child(p, 'type'), s.type, OPENAPI_V3_TYPES));
  if (isSet(s.default) && !v.allowDefaults) errs.push(forbidden(child(p, 'default'), `must not be set${v.disallowDefaultsReason ? ` ${v.disallowDefaultsReason}` : ''}`));
  if (str(s.id)) errs.push(forbidden(child(p, 'id'), 'id is not supported'));
  if (isSet(s.additionalItems)) errs.push(forbidden(child(p, 'additionalItems'), 'additionalItems is not supported'));
  if (isObj(s.patternProperties) && Object.keys(s.patternProperties).length) errs.push(forbidden(child(p, 'patternProperties'), 'patternProperties is not supported'));
  if (isObj(s.definitions) && Object.keys(s.definitions).length) errs.push(forbidden(child(p, 'definitions'), 'definitions is not supported'));
  if (isSet(s.dependencies)) errs.push(forbidden(child(p, 'dependencies'), 'dependencies is not supported'));
  if (isSet(s.$ref)) errs.push(forbidden(child(p, '$ref'), '$ref is not supported'));
  if (s.type === 'null') errs.push(forbidden(child(p, 'type'), 'type cannot be set to null, use nullable as an alternative'));
  if (Array.isArray(s.items) && s.items.length) errs.push(forbidden(child(p, 'items'), 'items must be a schema object and not an array'));
  if (v.insideResourceMeta && s['x-kubernetes-embedded-resource'] === true) errs.push(forbidden(child(p, 'x-kubernetes-embedded-resource'), 'must not be used inside of resource meta'));
  return errs;
}

/**
 * The estimated cost of a version schema's rules (kube's `TotalCost`): the sum, and the (at most
 * four) rules contributing at least 1% of {@link STATIC_ESTIMATED_CRD_COST_LIMIT}, most expensive first.
 */
interface TotalCost { total: number; mostExpensive: { path: string; cost: number }[] }

/** kube's `CELSchemaContext` for cost: how often the node can occur (undefined: unbounded), and the schema's total. */
interface RuleCostContext { cardinality: number | undefined; total: TotalCost }

function observeCost(t: TotalCost, path: string, cost: number): void {
  t.total = Math.min(Number.MAX_VALUE, t.total + cost);
  if (cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100) return;
  t.mostExpensive.push({ path, cost });
  t.mostExpensive.sort((a, b) => b.cost - a.cost);
  if (t.mostExpensive.length > 4) t.mostExpensive.length = 4;
}

/** `childContext`: a child occurs `extractMaxElements(parent)` times as often as its parent. */
function childCost(c: RuleCostContext | undefined, parent: Obj): RuleCostContext | undefined {
  if (!c) return undefined;
  const f = c.cardinality === undefined ? undefined : childCardinalityFactor(parent);
  return { cardinality: f === undefined ? undefined : c.cardinality! * f, total: c.total };
}

function validateSchemaNode(s: unknown, p: string, v: Ssv, isRoot: boolean, opts: SchemaOptions, celEnabled: boolean, cost?: RuleCostContext): SchemaErrors {
  const out: SchemaErrors = { schema: [], cel: [] };
  if (s === undefined || s === null) return out;
  if (!isObj(s)) { out.schema.push(invalid(p, s, 'must be an object')); return out; }
  const sub = childCost(cost, s);
  const add = (r: SchemaErrors) => { out.schema.push(...r.schema); out.cel.push(...r.cel); };
  const type = str(s.type);
  const props = isObj(s.properties) ? s.properties : undefined;
  const hasProps = !!props && Object.keys(props).length > 0;

  out.schema.push(...ssvValidate(s, p, v));
  if (s.uniqueItems === true) out.schema.push(forbidden(child(p, 'uniqueItems'), 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'));

  const ap = s.additionalProperties;
  if (isSet(ap)) {
    if (typeof ap !== 'boolean' && !isObj(ap)) out.schema.push(invalid(child(p, 'additionalProperties'), ap, 'must be a boolean or a schema'));
    if (hasProps && (ap === false || isObj(ap))) out.schema.push(forbidden(child(p, 'additionalProperties'), 'additionalProperties and properties are mutual exclusive'));
    const apv = v.insideResourceMeta ? withForbiddenDefaults(v, 'inside additionalProperties applying to object metadata') : v;
    if (isObj(ap)) add(validateSchemaNode(ap, child(p, 'additionalProperties'), apv, false, opts, celEnabled, sub));
  }

  if (props) {
    for (const [k, ps] of Object.entries(props)) {
      let pv = v;
      if (!mapIsCorrelatable(s['x-kubernetes-map-type'])) pv = withForbidOldSelf(pv, p);
      if ((isRoot || s['x-kubernetes-embedded-resource'] === true) && META_FIELDS.has(k)) {
        pv = { ...pv, insideResourceMeta: true };
        if (isRoot) pv = withForbiddenDefaults(pv, `in top-level ${k}`);
      }
      add(validateSchemaNode(ps, key(child(p, 'properties'), k), pv, false, opts, celEnabled, sub));
    }
  } else if (isSet(s.properties)) {
    out.schema.push(invalid(child(p, 'properties'), s.properties, 'must be an object'));
  }

  add(validateSchemaNode(s.not, child(p, 'not'), v, false, opts, false));
  for (const k of ['allOf', 'oneOf', 'anyOf'] as const) {
    if (isSet(s[k]) && !Array.isArray(s[k])) out.schema.push(invalid(child(p, k), s[k], 'must be an array'));
    arr(s[k]).forEach((x, i) => add(validateSchemaNode(x, index(child(p, k), i), v, false, opts, false)));
  }
  for (const [k, d] of Object.entries(asObj(s.definitions))) add(validateSchemaNode(d, key(child(p, 'definitions'), k), v, false, opts, false));

  if (isSet(s.items)) {
    const iv = s['x-kubernetes-list-type'] !== 'map' ? withForbidOldSelf(v, p) : v;
    if (Array.isArray(s.items)) s.items.forEach((x, i) => add(validateSchemaNode(x, index(child(p, 'items'), i), iv, false, opts, celEnabled, sub)));
    else add(validateSchemaNode(s.items, child(p, 'items'), iv, false, opts, celEnabled, sub));
  }
  for (const [k, d] of Object.entries(asObj(s.dependencies))) if (isObj(d)) add(validateSchemaNode(d, key(child(p, 'dependencies'), k), v, false, opts, false));

  if (s['x-kubernetes-preserve-unknown-fields'] === false) out.schema.push(invalid(child(p, 'x-kubernetes-preserve-unknown-fields'), false, 'must be true or undefined'));

  const mapType = s['x-kubernetes-map-type'];
  if (isSet(mapType) && type !== 'object') {
    out.schema.push(type ? invalid(child(p, 'type'), type, 'must be object if x-kubernetes-map-type is specified') : required(child(p, 'type'), 'must be object if x-kubernetes-map-type is specified'));
  }
  if (isSet(mapType) && mapType !== 'atomic' && mapType !== 'granular') out.schema.push(notSupported(child(p, 'x-kubernetes-map-type'), mapType, ['atomic', 'granular']));

  const listType = s['x-kubernetes-list-type'];
  const items = s.items;
  if (isSet(listType) && type !== 'array') {
    out.schema.push(type ? invalid(child(p, 'type'), type, 'must be array if x-kubernetes-list-type is specified') : required(child(p, 'type'), 'must be array if x-kubernetes-list-type is specified'));
  } else if (opts.requireAtomicSetType && listType === 'set' && isObj(items)) {
    if (items.type === 'array' && isSet(items['x-kubernetes-list-type']) && items['x-kubernetes-list-type'] !== 'atomic') {
      out.schema.push(invalid(child(p, 'items', 'x-kubernetes-list-type'), items['x-kubernetes-list-type'], 'must be atomic as item of a list with x-kubernetes-list-type=set'));
    } else if (items.type === 'object' && items['x-kubernetes-map-type'] !== 'atomic') {
      out.schema.push(invalid(child(p, 'items', 'x-kubernetes-map-type'), items['x-kubernetes-map-type'] ?? null, 'must be atomic as item of a list with x-kubernetes-list-type=set'));
    }
  }
  if (isSet(listType) && listType !== 'atomic' && listType !== 'set' && listType !== 'map') {
    out.schema.push(notSupported(child(p, 'x-kubernetes-list-type'), listType, ['atomic', 'set', 'map']));
  }
  const mapKeys = arr(s['x-kubernetes-list-map-keys']);
  if (mapKeys.length) {
    if (!isSet(listType)) out.schema.push(required(child(p, 'x-kubernetes-list-type'), 'must be map if x-kubernetes-list-map-keys is non-empty'));
    else if (listType !== 'map') out.schema.push(invalid(child(p, 'x-kubernetes-list-type'), listType, 'must be map if x-kubernetes-list-map-keys is non-empty'));
  }
  if (listType === 'map') {
    if (!mapKeys.length) out.schema.push(required(child(p, 'x-kubernetes-list-map-keys'), 'must not be empty if x-kubernetes-list-type is map'));
    if (!isSet(items)) out.schema.push(required(child(p, 'items'), 'must have a schema if x-kubernetes-list-type is map'));
    if (Array.isArray(items)) out.schema.push(invalid(child(p, 'items'), items, 'must only have a single schema if x-kubernetes-list-type is map'));
    if (isObj(items) && items.type !== 'object') out.schema.push(invalid(child(p, 'items', 'type'), str(items.type), "must be object if parent array's x-kubernetes-list-type is map"));
    if (isObj(items) && items.type === 'object') {
      const itemProps = asObj(items.properties);
      const seen = new Set<unknown>();
      for (const k of mapKeys) {
        const ks = String(k);
        if (isObj(itemProps[ks])) {
          const kt = (itemProps[ks] as Obj).type;
          if (kt === 'array' || kt === 'object') out.schema.push(invalid(child(key(child(p, 'items', 'properties'), ks), 'type'), kt, "must be a scalar type if parent array's x-kubernetes-list-type is map"));
        } else {
          out.schema.push(invalid(child(p, 'x-kubernetes-list-map-keys'), mapKeys, 'entries must all be names of item properties'));
        }
        if (seen.has(k)) out.schema.push(invalid(child(p, 'x-kubernetes-list-map-keys'), mapKeys, 'must not contain duplicate entries'));
        seen.add(k);
      }
    }
  }
  if (opts.requireMapListKeysMapSetValidation) out.schema.push(...mapListKeysMapSet(s, p));

  const rules = arr(s['x-kubernetes-validations']);
  if (isSet(s['x-kubernetes-validations']) && !Array.isArray(s['x-kubernetes-validations'])) out.schema.push(invalid(child(p, 'x-kubernetes-validations'), s['x-kubernetes-validations'], 'must be an array'));
  if (rules.length) {
    const vp = child(p, 'x-kubernetes-validations');
    rules.forEach((r, i) => {
      const rp = index(vp, i);
      const rule = asObj(r);
      const ruleText = str(rule.rule);
      const message = str(rule.message);
      const trimmedRule = ruleText.trim();
      const trimmedMsg = message.trim();
      if (!trimmedRule) out.schema.push(required(child(rp, 'rule'), 'rule is not specified'));
      else if (message.length > 0 && !trimmedMsg) out.schema.push(invalid(child(rp, 'message'), message, 'must be non-empty if specified'));
      else if (/[\n\r]/.test(trimmedMsg)) out.schema.push(invalid(child(rp, 'message'), message, 'must not contain line breaks'));
      else if (/[\n\r]/.test(trimmedRule) && !trimmedMsg) out.schema.push(required(child(rp, 'message'), 'message must be specified if rule contains line breaks'));
      const msgExpr = str(rule.messageExpression);
      if (msgExpr.length > 0 && !msgExpr.trim()) out.schema.push(required(child(rp, 'messageExpression'), 'messageExpression must be non-empty if specified'));
      if (isSet(rule.reason) && !SUPPORTED_RULE_REASONS.includes(str(rule.reason))) out.schema.push(notSupported(child(rp, 'reason'), rule.reason, SUPPORTED_RULE_REASONS));
      const fieldPath = str(rule.fieldPath);
      if (fieldPath.length > 0 && !fieldPath.trim()) out.schema.push(invalid(child(rp, 'fieldPath'), fieldPath, 'must be non-empty if specified'));
      if (/[\n\r]/.test(fieldPath)) out.schema.push(invalid(child(rp, 'fieldPath'), fieldPath, 'must not contain line breaks'));
      if (fieldPath.length > 0 && !structuralInitError(s) && 'error' in validFieldPath(fieldPath, s, true)) {
        out.schema.push(invalid(child(rp, 'fieldPath'), fieldPath, 'must be a valid path'));
      }
    });
    // Like kube, CEL is only looked at when the schema at and below this node is fine.
    if (out.schema.length === 0 && celEnabled) {
      rules.forEach((r, i) => {
        const rp = index(vp, i);
        const rule = asObj(r);
        const parsed = parseCEL(str(rule.rule));
        const isNew = !opts.preexistingRules.has(str(rule.rule));
        // kube's estimated cost (validation.go `getExpressionCost`): the rule's worst case over
        // the node's declared sizes, times how often the node can occur. Rules the stored CRD
        // already has are not estimated again (they were accepted; evaluation stays metered).
        const selfType = parsed.ast !== undefined && isNew && cost ? sizedTypeOf(s, isRoot || s['x-kubernetes-embedded-resource'] === true) : undefined;
        if (selfType && cost) {
          const vars = new Map([['self', selfType], ['oldSelf', selfType]]);
          const ruleCost = Math.min(Number.MAX_VALUE, estimateCost(parsed.ast, vars).max * (cost.cardinality ?? maxCardinality(selfType.minSize)));
          if (ruleCost > STATIC_ESTIMATED_COST_LIMIT) out.cel.push(forbidden(child(rp, 'rule'), costErrorMessage('estimated rule cost', ruleCost, STATIC_ESTIMATED_COST_LIMIT)));
          observeCost(cost.total, child(rp, 'rule'), ruleCost);
          const me = str(rule.messageExpression).trim() ? parseCEL(str(rule.messageExpression)) : undefined;
          if (me?.ast !== undefined) {
            const msgCost = estimateCost(me.ast, vars).max;
            if (msgCost > STATIC_ESTIMATED_COST_LIMIT) out.cel.push(forbidden(child(rp, 'messageExpression'), costErrorMessage('estimated messageExpression cost', msgCost, STATIC_ESTIMATED_COST_LIMIT)));
            observeCost(cost.total, child(rp, 'messageExpression'), msgCost);
          }
        }
        if (parsed.error) out.cel.push(invalid(child(rp, 'rule'), r, `compilation failed: ${parsed.error}`));
        else if (isNew) {
          // cel-go compiles the rule with `self` (and `oldSelf`) declared as the node's type: an
          // undefined field or a wrong operand type is a compile error (celtypes.ts).
          const self = schemaType(s, isRoot);
          let issues: ReturnType<typeof checkAst>;
          try {
            issues = checkAst(parsed.ast, str(rule.rule), new Map([['self', self], ['oldSelf', rule.optionalOldSelf === true ? { k: 'dyn' } as const : self]]));
          } catch (err) {
            // A chain of tens of thousands of operators (cel-js does not balance them as cel-go
            // does) is deeper than the checker's recursion: a compile error, not a server error.
            if (!(err instanceof RangeError)) throw err;
            issues = [{ message: 'expression is nested too deeply', offset: 0 }];
          }
          // cel-go runs its AST validators (constant regexes) once the expression type-checks.
          const regex = issues.length ? { issues: [] } : constantRegexErrors(parsed.ast);
          if (issues.length || regex.issues.length) out.cel.push(invalid(child(rp, 'rule'), r, `compilation failed: ${formatIssues(str(rule.rule), issues.length ? issues : regex.issues)}`));
          else if (regex.programError !== undefined) out.cel.push(invalid(child(rp, 'rule'), r, `program instantiation failed: ${regex.programError}`));
        }
        const msgExpr = str(rule.messageExpression);
        if (msgExpr.trim()) {
          const m = parseCEL(msgExpr);
          if (m.error) out.cel.push(invalid(child(rp, 'messageExpression'), r, `messageExpression compilation failed: ${m.error}`));
        }
        if (parsed.usesOldSelf) {
          if (v.uncorrelatablePath !== undefined) {
            out.cel.push(invalid(child(rp, 'rule'), str(rule.rule), `oldSelf cannot be used on the uncorrelatable portion of the schema within ${v.uncorrelatablePath}`));
          }
        } else if (isSet(rule.optionalOldSelf)) {
          out.cel.push(invalid(child(rp, 'optionalOldSelf'), rule.optionalOldSelf, 'may not be set if oldSelf is not used in rule'));
        }
      });
    }
  }
  return out;
}

/** `validateMapListKeysMapSet`: set/map list items and map keys are not nullable; keys required or defaulted. */
function mapListKeysMapSet(s: Obj, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const items = s.items;
  const listType = s['x-kubernetes-list-type'];
  if (!isObj(items) || (listType !== 'set' && listType !== 'map')) return errs;
  if (items.nullable === true) errs.push(forbidden(child(p, 'items', 'nullable'), `cannot be nullable when x-kubernetes-list-type is ${listType}`));
  if (listType === 'map') {
    const req = new Set(strList(items.required));
    const props = asObj(items.properties);
    for (const k of strList(s['x-kubernetes-list-map-keys'])) {
      const ks = props[k];
      if (!isObj(ks)) continue;
      const kp = key(child(p, 'items', 'properties'), k);
      if (!req.has(k) && !isSet(ks.default)) errs.push(required(child(kp, 'default'), 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property'));
      if (ks.nullable === true) errs.push(forbidden(child(kp, 'nullable'), 'this property is in x-kubernetes-list-map-keys, so it cannot be nullable'));
    }
  }
  return errs;
}

/**
 * `validateCustomResourceDefinitionValidation` for one version's `schema`: root restrictions with the
 * status subresource, structural schema, defaults, and the OpenAPI walk.
 */
function validateVersionSchema(schemaWrapper: unknown, statusEnabled: boolean, opts: SchemaOptions, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (!isSet(schemaWrapper)) return errs;
  if (!isObj(schemaWrapper)) return [invalid(p, schemaWrapper, 'must be an object')];
  const sp = child(p, 'openAPIV3Schema');
  const schema = schemaWrapper.openAPIV3Schema;
  if (!isSet(schema)) return errs;
  if (!isObj(schema)) return [invalid(sp, schema, 'must be an object')];

  if (statusEnabled) {
    if (str(schema.type) && schema.type !== 'object') {
      errs.push(invalid(child(p, 'openAPIV3Schema.type'), schema.type, 'only "object" is allowed as the type at the root of the schema if the status subresource is enabled'));
    } else {
      const bad = KNOWN_SCHEMA_KEYS.find((k) => k !== 'type' && nonZero(k, schema[k]) && !ALLOWED_AT_ROOT.includes(GO_FIELD_NAMES[k]!));
      if (bad) errs.push(invalid(sp, schema, `only [${ALLOWED_AT_ROOT.join(' ')}] fields are allowed at the root of the schema if the status subresource is enabled`));
    }
  }
  if (schema.nullable === true) errs.push(forbidden(child(p, 'openAPIV3Schema.nullable'), 'nullable cannot be true at the root'));

  let celEnabled = false;
  const structuralInitErrs: StatusCause[] = [];
  if (opts.requireStructuralSchema) {
    const initErr = structuralInitError(schema);
    if (initErr) {
      structuralInitErrs.push(invalid(sp, '', initErr));
    } else {
      const se = validateStructural(sp, schema);
      if (se.length) errs.push(...se);
      else {
        const de = validateDefaults(sp, schema, opts.requirePrunedDefaults);
        if (de.length) errs.push(...de);
        else celEnabled = true;
      }
    }
  }
  const ssv: Ssv = { allowDefaults: opts.allowDefaults, disallowDefaultsReason: '', insideResourceMeta: false, requireValidPropertyType: opts.requireValidPropertyType };
  const total: TotalCost = { total: 0, mostExpensive: [] };
  const r = validateSchemaNode(schema, sp, ssv, true, opts, celEnabled, { cardinality: 1, total });
  errs.push(...r.schema, ...r.cel);
  if (total.total > STATIC_ESTIMATED_CRD_COST_LIMIT) {
    for (const e of total.mostExpensive) errs.push(forbidden(e.path, 'contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema'));
    errs.push(forbidden(sp, costErrorMessage('x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema', total.total, STATIC_ESTIMATED_CRD_COST_LIMIT)));
  }
  if (errs.length === 0) errs.push(...structuralInitErrs);
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Versions: subresources, printer columns, selectable fields, deprecation
// ---------------------------------------------------------------------------------------------

/** `validateSimpleJSONPath`. */
function simpleJSONPath(s: string, p: string): StatusCause[] {
  if (s.length === 0) return [invalid(p, s, 'must not be empty')];
  if (s[0] !== '.') return [invalid(p, s, 'must be a simple json path starting with .')];
  return [];
}

/** `ValidateCustomResourceDefinitionSubresources`. */
function validateSubresources(sub: unknown, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (!isSet(sub)) return errs;
  if (!expectType(errs, p, sub, 'object')) return errs;
  const o = sub as Obj;
  expectType(errs, child(p, 'status'), o.status, 'object');
  if (!isSet(o.scale)) return errs;
  if (!expectType(errs, child(p, 'scale'), o.scale, 'object')) return errs;
  const scale = o.scale as Obj;
  const spec = scale.specReplicasPath;
  if (!str(spec)) errs.push(required(child(p, 'scale.specReplicasPath')));
  else {
    const e = simpleJSONPath(str(spec), child(p, 'scale.specReplicasPath'));
    if (e.length) errs.push(...e);
    else if (!str(spec).startsWith('.spec.')) errs.push(invalid(child(p, 'scale.specReplicasPath'), spec, 'should be a json path under .spec'));
  }
  const status = scale.statusReplicasPath;
  if (!str(status)) errs.push(required(child(p, 'scale.statusReplicasPath')));
  else {
    const e = simpleJSONPath(str(status), child(p, 'scale.statusReplicasPath'));
    if (e.length) errs.push(...e);
    else if (!str(status).startsWith('.status.')) errs.push(invalid(child(p, 'scale.statusReplicasPath'), status, 'should be a json path under .status'));
  }
  const sel = str(scale.labelSelectorPath);
  if (sel) {
    const e = simpleJSONPath(sel, child(p, 'scale.labelSelectorPath'));
    if (e.length) errs.push(...e);
    else if (!sel.startsWith('.spec.') && !sel.startsWith('.status.')) errs.push(invalid(child(p, 'scale.labelSelectorPath'), sel, 'should be a json path under either .spec or .status'));
  }
  return errs;
}

const PRINTER_COLUMN_TYPES = ['boolean', 'date', 'integer', 'number', 'string'];
const PRINTER_COLUMN_FORMATS = ['byte', 'date', 'date-time', 'double', 'float', 'int32', 'int64', 'password'];

/** `ValidateCustomResourceColumnDefinition` (kube names the path field `JSONPath`). */
function validateColumn(col: unknown, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (!expectType(errs, p, col, 'object') || !isObj(col)) return errs;
  if (!str(col.name)) errs.push(required(child(p, 'name')));
  const type = str(col.type);
  if (!type) errs.push(required(child(p, 'type'), `must be one of ${PRINTER_COLUMN_TYPES.join(',')}`));
  else if (!PRINTER_COLUMN_TYPES.includes(type)) errs.push(invalid(child(p, 'type'), type, `must be one of ${PRINTER_COLUMN_TYPES.join(',')}`));
  const format = str(col.format);
  if (format && !PRINTER_COLUMN_FORMATS.includes(format)) errs.push(invalid(child(p, 'format'), format, `must be one of ${PRINTER_COLUMN_FORMATS.join(',')}`));
  const jp = str(col.jsonPath);
  if (!jp) errs.push(required(child(p, 'JSONPath')));
  else errs.push(...simpleJSONPath(jp, child(p, 'JSONPath')));
  expectType(errs, child(p, 'priority'), col.priority, 'integer');
  return errs;
}

/** Maximum selectable fields per version (`MaxSelectableFields`). */
const MAX_SELECTABLE_FIELDS = 8;

/** `ValidateCustomResourceSelectableFields`. */
function validateSelectableFields(fields: unknown[], schema: Obj | undefined, p: string, allowTooMany: boolean): StatusCause[] {
  const errs: StatusCause[] = [];
  const unique = new Set<string>();
  fields.forEach((sf, i) => {
    const ip = index(p, i);
    const jp = str(asObj(sf).jsonPath);
    if (!jp) { errs.push(required(child(ip, 'jsonPath'))); return; }
    const r = validFieldPath(jp, schema, false);
    if ('error' in r) { errs.push(invalid(child(ip, 'jsonPath'), jp, `is an invalid path: ${r.error}`)); return; }
    if (r.path[0] === 'metadata') errs.push(invalid(child(ip, 'jsonPath'), jp, 'must not point to fields in metadata'));
    const t = r.schema ? str(r.schema.type) : '';
    if (t !== 'string' && t !== 'boolean' && t !== 'integer') {
      errs.push(invalid(child(ip, 'jsonPath'), jp, 'must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.'));
    }
    const norm = r.path.join('.');
    if (unique.has(norm)) errs.push(duplicate(child(ip, 'jsonPath'), jp));
    else unique.add(norm);
  });
  if (unique.size > MAX_SELECTABLE_FIELDS && !allowTooMany) errs.push(tooMany(p, unique.size, MAX_SELECTABLE_FIELDS));
  return errs;
}

const GO_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const GO_CONTROL = /^\p{Cc}$/u;

/** `validateDeprecationWarning`. */
function deprecationWarningErrors(deprecated: boolean, warning: unknown): string[] {
  if (!deprecated && isSet(warning)) return ['can only be set for deprecated versions'];
  if (!isSet(warning)) return [];
  const w = String(warning);
  const errs: string[] = [];
  const bytes = Buffer.byteLength(w, 'utf8');
  if (bytes > 256) errs.push('must be <= 256 characters long');
  if (w.length === 0) errs.push('must not be an empty string');
  let at = 0;
  for (const ch of w) {
    if (!GO_PRINTABLE.test(ch)) { errs.push(`must only contain printable UTF-8 characters; non-printable character found at index ${at}`); break; }
    if (GO_CONTROL.test(ch)) { errs.push(`must only contain printable UTF-8 characters; control character found at index ${at}`); break; }
    at += Buffer.byteLength(ch, 'utf8');
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Names, conversion, API approval
// ---------------------------------------------------------------------------------------------

/** `ValidateCustomResourceDefinitionNames` (formats only; `Required` is checked for spec names separately). */
function validateNames(names: Obj, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const k of ['plural', 'singular', 'kind', 'listKind'] as const) expectType(errs, child(p, k), names[k], 'string');
  for (const k of ['shortNames', 'categories'] as const) expectType(errs, child(p, k), names[k], 'array');
  const plural = str(names.plural);
  const singular = str(names.singular);
  const kind = str(names.kind);
  const listKind = str(names.listKind);
  let e: string[];
  if (plural && (e = isDNS1035Label(plural)).length) errs.push(invalid(child(p, 'plural'), plural, e.join(',')));
  if (singular && (e = isDNS1035Label(singular)).length) errs.push(invalid(child(p, 'singular'), singular, e.join(',')));
  if (kind && (e = isDNS1035Label(kind.toLowerCase())).length) errs.push(invalid(child(p, 'kind'), kind, `may have mixed case, but should otherwise match: ${e.join(',')}`));
  if (listKind && (e = isDNS1035Label(listKind.toLowerCase())).length) errs.push(invalid(child(p, 'listKind'), listKind, `may have mixed case, but should otherwise match: ${e.join(',')}`));
  arr(names.shortNames).forEach((sn, i) => {
    if ((e = isDNS1035Label(str(sn))).length) errs.push(invalid(index(child(p, 'shortNames'), i), sn, e.join(',')));
  });
  if (kind && kind === listKind) errs.push(invalid(child(p, 'listKind'), listKind, 'kind and listKind may not be the same'));
  arr(names.categories).forEach((c, i) => {
    if ((e = isDNS1035Label(str(c))).length) errs.push(invalid(index(child(p, 'categories'), i), c, e.join(',')));
  });
  return errs;
}

const ACCEPTED_CONVERSION_REVIEW_VERSIONS = ['v1', 'v1beta1'];

/** Cause for a conversion webhook's `service` reference, which this server cannot route to. */
export const CONVERSION_SERVICE_UNSUPPORTED = 'service references are not supported: kcp-ts has no Services to route to; use url';

/**
 * `validateCustomResourceConversion` for the v1 shape (`spec.conversion.webhook.{clientConfig,
 * conversionReviewVersions}`; kube reports them under the internal names `webhookClientConfig` and
 * `conversionReviewVersions`, which are used here too). A `service` reference is additionally
 * refused (see src/apimachinery/webhookclient.ts), after kube's own checks of it.
 */
function validateConversion(conv: unknown, requireRecognizedVersion: boolean, p: string): StatusCause[] {
  const errs: StatusCause[] = [];
  if (!isSet(conv)) return errs;
  if (!expectType(errs, p, conv, 'object')) return errs;
  const c = conv as Obj;
  const strategy = str(c.strategy);
  const sp = child(p, 'strategy');
  if (!strategy) errs.push(required(sp));
  else if (strategy !== 'None' && strategy !== 'Webhook') errs.push(notSupported(sp, strategy, ['None', 'Webhook']));
  const webhook = asObj(c.webhook);
  const cc = webhook.clientConfig;
  const reviewVersions = webhook.conversionReviewVersions;
  if (strategy === 'Webhook') {
    const ccp = child(p, 'webhookClientConfig');
    if (!isObj(cc)) errs.push(required(ccp, 'required when strategy is set to Webhook'));
    else if (isSet(cc.url) === isSet(cc.service)) errs.push(required(ccp, 'exactly one of url or service is required'));
    else if (isSet(cc.url)) errs.push(...validateWebhookURL(child(ccp, 'url'), str(cc.url)));
    else {
      const svc = asObj(cc.service);
      const svp = child(ccp, 'service');
      if (!str(svc.name)) errs.push(required(child(svp, 'name'), 'service name is required'));
      if (!str(svc.namespace)) errs.push(required(child(svp, 'namespace'), 'service namespace is required'));
      const path = str(svc.path);
      if (path && !path.startsWith('/')) errs.push(invalid(child(svp, 'path'), path, "must start with a '/'"));
      if (isSet(svc.port) && !(Number.isInteger(svc.port) && (svc.port as number) >= 1 && (svc.port as number) <= 65535)) {
        errs.push(invalid(child(svp, 'port'), svc.port, 'port is not valid: must be between 1 and 65535, inclusive'));
      }
      errs.push(forbidden(svp, CONVERSION_SERVICE_UNSUPPORTED));
    }
    const caError = caBundleError(asObj(cc).caBundle);
    if (caError) errs.push(invalid(child(ccp, 'caBundle'), '', caError));
    const rp = child(p, 'conversionReviewVersions');
    const versions = arr(reviewVersions);
    if (!versions.length) errs.push(required(rp));
    else {
      const seen = new Set<string>();
      let hasAccepted = false;
      versions.forEach((v, i) => {
        const s = str(v);
        if (seen.has(s)) { errs.push(invalid(index(rp, i), s, 'duplicate version')); return; }
        seen.add(s);
        for (const e of isDNS1035Label(s)) errs.push(invalid(index(rp, i), s, e));
        if (ACCEPTED_CONVERSION_REVIEW_VERSIONS.includes(s)) hasAccepted = true;
      });
      if (requireRecognizedVersion && !hasAccepted) errs.push(invalid(rp, versions, `must include at least one of ${ACCEPTED_CONVERSION_REVIEW_VERSIONS.join(', ')}`));
    }
  } else {
    if (isSet(cc)) errs.push(forbidden(child(p, 'webhookClientConfig'), 'should not be set when strategy is not set to Webhook'));
    if (arr(reviewVersions).length) errs.push(forbidden(child(p, 'conversionReviewVersions'), 'should not be set when strategy is not set to Webhook'));
  }
  return errs;
}

/** `webhook.ValidateWebhookURL(…, forceHttps=true)` as field causes. */
function validateWebhookURL(p: string, raw: string): StatusCause[] {
  return webhookURLErrors(raw).map((e) => invalid(p, raw, e));
}

const API_APPROVAL_ANNOTATION = 'api-approved.kubernetes.io';

/** `apihelpers.IsProtectedCommunityGroup`. */
function isProtectedCommunityGroup(group: string): boolean {
  return group === 'k8s.io' || group.endsWith('.k8s.io') || group === 'kubernetes.io' || group.endsWith('.kubernetes.io');
}

type ApprovalState = 'Invalid' | 'Approved' | 'Bypassed' | 'Missing';

/** `apihelpers.GetAPIApprovalState`. */
function apiApprovalState(annotations: Obj): [ApprovalState, string] {
  const a = str(annotations[API_APPROVAL_ANNOTATION]);
  if (!a) return ['Missing', `protected groups must have approval annotation "${API_APPROVAL_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111`];
  if (a.startsWith('unapproved')) return ['Bypassed', `not approved: ${goQuote(a)}`];
  try {
    const u = new URL(a);
    if (u.host && u.protocol) return ['Approved', `approved in ${a}`];
  } catch { /* fall through */ }
  return ['Invalid', `protected groups must have approval annotation "${API_APPROVAL_ANNOTATION}" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111`];
}

/** `validateAPIApproval`. */
function validateAPIApproval(crd: Obj, old: Obj | undefined): StatusCause[] {
  const group = str(asObj(crd.spec).group);
  if (!isProtectedCommunityGroup(group)) return [];
  const annotations = asObj(asObj(crd.metadata).annotations);
  const [state, reason] = apiApprovalState(annotations);
  if (old && apiApprovalState(asObj(asObj(old.metadata).annotations))[0] === state) return [];
  const f = key('metadata.annotations', API_APPROVAL_ANNOTATION);
  if (state === 'Missing') return [required(f, reason)];
  if (state === 'Invalid') return [invalid(f, str(annotations[API_APPROVAL_ANNOTATION]), reason)];
  return [];
}

function conditionTrue(crd: Obj | undefined, type: string): boolean {
  return arr(asObj(crd?.status).conditions).some((c) => asObj(c).type === type && asObj(c).status === 'True');
}

// ---------------------------------------------------------------------------------------------
// validateCRD
// ---------------------------------------------------------------------------------------------

/**
 * Validates an apiextensions.k8s.io/v1 CustomResourceDefinition as kube-apiserver does
 * (`ValidateCustomResourceDefinition`, or `ValidateCustomResourceDefinitionUpdate` when `old` is
 * given), returning field causes (empty = valid). v1 defaulting (singular, listKind, conversion,
 * storedVersions) is taken into account without mutating `crd`; see {@link applyCRDDefaults}.
 *
 * On update, the same ratcheting as kube applies: checks that the stored `old` object already
 * failed (non-structural schema, invalid property types, unpruned defaults, non-atomic set items,
 * map-list keys, missing schemas, unrecognized conversion review versions) are not tightened;
 * `spec.group` and `spec.names.plural` are immutable, and `spec.scope` and `spec.names.kind` too
 * once `old` has the `Established` condition.
 *
 * Source: k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go.
 */
export function validateCRD(crd: Record<string, unknown>, old?: Record<string, unknown>): StatusCause[] {
  const causes: StatusCause[] = [];
  const meta = asObj(crd.metadata);
  if (isSet(crd.spec) && !isObj(crd.spec)) return [invalid('spec', crd.spec, 'must be an object')];
  const spec = asObj(crd.spec);
  const oldSpec = old ? asObj(old.spec) : undefined;
  const names = effectiveNames(spec);
  const group = str(spec.group);

  // metadata.name (create only: the name is immutable afterwards, as are plural and group).
  if (!old && typeof meta.name === 'string' && meta.name) {
    const requiredName = `${str(names.plural)}.${group}`;
    if (meta.name !== requiredName) causes.push(invalid('metadata.name', meta.name, 'must be spec.names.plural+"."+spec.group'));
  }

  // An update that leaves the spec as stored (a status write, a finalizer or label change) does
  // not validate it again: the spec's rules only ratchet on what the stored spec already has, and
  // validating a CRD of megabytes (schemas, CEL rules and their cost) took 26–61 ms of the event
  // loop, three times per CRD a tenant creates and deletes. The store has already told: the status
  // door keeps the stored spec itself, and the main door bumps `metadata.generation` exactly when
  // the spec changed (src/registry/store.ts, `tracksGeneration`).
  const generation = meta.generation;
  const specKept = oldSpec !== undefined && (spec === oldSpec || (generation !== undefined && generation === asObj(old!.metadata).generation));
  if (!specKept) causes.push(...validateSpec(spec, names, oldSpec));

  if (old && oldSpec) {
    const oldNames = effectiveNames(oldSpec);
    if (conditionTrue(old, 'Established')) {
      if (str(spec.scope) !== str(oldSpec.scope)) causes.push(invalid('spec.scope', str(spec.scope), 'field is immutable'));
      if (str(names.kind) !== str(oldNames.kind)) causes.push(invalid('spec.names.kind', str(names.kind), 'field is immutable'));
    }
    if (group !== str(oldSpec.group)) causes.push(invalid('spec.group', group, 'field is immutable'));
    if (str(names.plural) !== str(oldNames.plural)) causes.push(invalid('spec.names.plural', str(names.plural), 'field is immutable'));
  }

  // status: accepted names (kube resets status on create), then stored versions as kube's
  // PrepareForCreate/PrepareForUpdate leave them (old ones plus the current storage version).
  if (old) causes.push(...validateNames(asObj(asObj(crd.status).acceptedNames), 'status.acceptedNames'));
  causes.push(...validateStoredVersions(crd, old));

  causes.push(...validateAPIApproval(crd, old));

  // preserveUnknownFields: true is only tolerated when the stored object already had it.
  if (!(old && oldSpec?.preserveUnknownFields === true) && spec.preserveUnknownFields === true) {
    causes.push(invalid('spec.preserveUnknownFields', true, 'cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead'));
  }
  return causes;
}

function storageVersion(spec: Obj): string | undefined {
  const v = arr(spec.versions).find((x) => asObj(x).storage === true);
  return v === undefined ? undefined : str(asObj(v).name);
}

/** `ValidateCustomResourceDefinitionStoredVersions` after kube's strategy has maintained `status.storedVersions`. */
function validateStoredVersions(crd: Obj, old: Obj | undefined): StatusCause[] {
  const spec = asObj(crd.spec);
  let stored: string[] = [];
  if (old) {
    stored = strList(asObj(old.status).storedVersions);
    if (!stored.length) { const s = storageVersion(asObj(old.spec)); if (s !== undefined) stored = [s]; }
  }
  const current = storageVersion(spec);
  if (current !== undefined && !stored.includes(current)) stored = [...stored, current];
  const p = 'status.storedVersions';
  if (!stored.length) return [invalid(p, [], 'must have at least one stored version')];
  const inSpec = new Set(arr(spec.versions).map((v) => str(asObj(v).name)));
  const errs: StatusCause[] = [];
  stored.forEach((v, i) => {
    if (!inSpec.has(v)) {
      errs.push(invalid(index(p, i), v, `missing from spec.versions; ${v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${v} and removes ${v} from status.storedVersions`));
    }
  });
  return errs;
}

/** `validateCustomResourceDefinitionSpec` for the v1 shape, with the ratcheting options derived from `oldSpec`. */
function validateSpec(spec: Obj, names: Obj, oldSpec: Obj | undefined): StatusCause[] {
  const errs: StatusCause[] = [];
  const p = 'spec';
  const pUF = spec.preserveUnknownFields === true;
  const versionsRaw = spec.versions;
  expectType(errs, child(p, 'group'), spec.group, 'string');
  expectType(errs, child(p, 'scope'), spec.scope, 'string');
  expectType(errs, child(p, 'preserveUnknownFields'), spec.preserveUnknownFields, 'boolean');
  expectType(errs, child(p, 'names'), spec.names, 'object');
  expectType(errs, child(p, 'versions'), versionsRaw, 'array');
  const versions = arr(versionsRaw);

  const group = str(spec.group);
  if (!group) errs.push(required(child(p, 'group')));
  else {
    const e = isDNS1123Subdomain(group);
    if (e.length) errs.push(invalid(child(p, 'group'), group, e.join(',')));
    else if (group.split('.').length < 2) errs.push(invalid(child(p, 'group'), group, 'should be a domain with at least one dot'));
  }

  const scope = str(spec.scope);
  if (!scope) errs.push(required(child(p, 'scope')));
  else if (scope !== 'Cluster' && scope !== 'Namespaced') errs.push(notSupported(child(p, 'scope'), scope, ['Cluster', 'Namespaced']));

  // Ratcheting: do not tighten validation of what the stored object already had.
  const oldSchemas = oldSpec ? versionSchemas(oldSpec) : [];
  const requireOpenAPISchema = !oldSpec || arr(oldSpec.versions).every((v) => isObj(asObj(asObj(v).schema).openAPIV3Schema));
  const newSchemas = versionSchemas(spec);
  const specHasDefaults = newSchemas.some((s) => schemaHas(s, hasDefault));
  const requireStructuralSchema = !pUF || specHasDefaults || newSchemas.some((s) => schemaHas(s, hasKubernetesExtensions))
    || !oldSpec || !oldSchemas.some(schemaIsNonStructural);
  const opts: SchemaOptions = {
    allowDefaults: true,
    requireValidPropertyType: !oldSchemas.some((s) => schemaHas(s, hasInvalidType)),
    requireStructuralSchema,
    requirePrunedDefaults: !oldSchemas.some(schemaHasUnprunedDefaults),
    requireAtomicSetType: !oldSchemas.some((s) => schemaHas(s, hasNonAtomicSetType)),
    requireMapListKeysMapSetValidation: !oldSchemas.some((s) => schemaHas(s, (n) => mapListKeysMapSet(n, '').length > 0)),
    preexistingRules: new Set(oldSchemas.flatMap((s) => {
      const rules: string[] = [];
      schemaHas(s, (n) => { for (const r of arr(n['x-kubernetes-validations'])) rules.push(str(asObj(r).rule)); return false; });
      return rules;
    })),
  };

  if (requireOpenAPISchema) {
    versions.forEach((v, i) => {
      if (!isObj(asObj(asObj(v).schema).openAPIV3Schema)) errs.push(required(child(index(child(p, 'versions'), i), 'schema', 'openAPIV3Schema')));
    });
  } else if (!pUF) {
    versions.forEach((v, i) => {
      if (asObj(v).served === true && !isObj(asObj(asObj(v).schema).openAPIV3Schema)) {
        errs.push(required(child(index(child(p, 'versions'), i), 'schema', 'openAPIV3Schema'), 'because otherwise all fields are pruned'));
      }
    });
  }
  if (specHasDefaults && pUF) errs.push(invalid(child(p, 'preserveUnknownFields'), true, 'must be false in order to use defaults in the schema'));

  let storageCount = 0;
  const seen = new Set<string>();
  let unique = true;
  const oldVersions = new Map(arr(oldSpec?.versions).map((v) => [str(asObj(v).name), asObj(v)]));
  versions.forEach((raw, i) => {
    const vp = index(child(p, 'versions'), i);
    if (!isObj(raw)) { errs.push(invalid(vp, raw, 'must be an object')); return; }
    const v = raw;
    expectType(errs, child(vp, 'name'), v.name, 'string');
    expectType(errs, child(vp, 'served'), v.served, 'boolean');
    expectType(errs, child(vp, 'storage'), v.storage, 'boolean');
    expectType(errs, child(vp, 'deprecated'), v.deprecated, 'boolean');
    expectType(errs, child(vp, 'additionalPrinterColumns'), v.additionalPrinterColumns, 'array');
    expectType(errs, child(vp, 'selectableFields'), v.selectableFields, 'array');
    const name = str(v.name);
    if (v.storage === true) storageCount++;
    if (seen.has(name)) unique = false;
    else seen.add(name);
    const ne = isDNS1035Label(name);
    if (ne.length) errs.push(invalid(child(vp, 'name'), name, ne.join(',')));

    // validateCustomResourceDefinitionVersion
    for (const e of deprecationWarningErrors(v.deprecated === true, v.deprecationWarning)) errs.push(invalid(child(vp, 'deprecationWarning'), v.deprecationWarning ?? null, e));
    const statusEnabled = isSet(asObj(v.subresources).status);
    errs.push(...validateVersionSchema(v.schema, statusEnabled, opts, child(vp, 'schema')));
    errs.push(...validateSubresources(v.subresources, child(vp, 'subresources')));
    arr(v.additionalPrinterColumns).forEach((c, j) => errs.push(...validateColumn(c, index(child(vp, 'additionalPrinterColumns'), j))));
    const sfs = arr(v.selectableFields);
    if (sfs.length) {
      const schema = asObj(v.schema).openAPIV3Schema;
      if (!isObj(schema)) errs.push(invalid(child(vp, 'selectableFields'), '', 'may only be set when `version.schema.openAPIV3Schema` is not included'));
      else {
        const initErr = structuralInitError(schema);
        if (initErr) errs.push(invalid(child(vp, 'schema.openAPIV3Schema'), '', initErr));
        const oldV = oldVersions.get(name);
        const allowTooMany = !!oldV && arr(oldV.selectableFields).length > MAX_SELECTABLE_FIELDS && deepEqual(oldV.selectableFields, v.selectableFields);
        // (kube would go on with a nil schema; the paths cannot be checked without one)
        if (!initErr) errs.push(...validateSelectableFields(sfs, schema, child(vp, 'selectableFields'), allowTooMany));
      }
    }
  });

  const versionsSummary = versions.map((v) => ({ name: asObj(v).name, served: asObj(v).served, storage: asObj(v).storage }));
  if (!unique) errs.push(invalid(child(p, 'versions'), versionsSummary, 'must contain unique version names'));
  if (storageCount !== 1) errs.push(invalid(child(p, 'versions'), versionsSummary, 'must have exactly one version marked as storage version'));

  for (const k of ['plural', 'singular', 'kind', 'listKind'] as const) {
    if (!str(names[k])) errs.push(required(child(p, 'names', k)));
  }
  errs.push(...validateNames(names, child(p, 'names')));

  const conversion = spec.conversion;
  const strategy = str(asObj(conversion).strategy);
  if (isSet(conversion) && strategy !== 'None' && pUF) {
    errs.push(invalid(child(p, 'conversion', 'strategy'), strategy, 'must be None if spec.preserveUnknownFields is true'));
  }
  const oldReview = arr(asObj(asObj(oldSpec?.conversion).webhook).conversionReviewVersions).map(str);
  const requireRecognized = !oldSpec || oldReview.length === 0 || oldReview.some((r) => ACCEPTED_CONVERSION_REVIEW_VERSIONS.includes(r));
  errs.push(...validateConversion(conversion, requireRecognized, child(p, 'conversion')));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Naming controller
// ---------------------------------------------------------------------------------------------

/** A CRD condition as the naming controller computes it. */
export interface NamesAcceptedCondition {
  type: 'NamesAccepted';
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** The `Established` condition kube's naming controller writes along with NamesAccepted. */
export interface EstablishedCondition {
  type: 'Established';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/**
 * Computes `status.acceptedNames` and the `NamesAccepted` condition of a CRD, as kube's naming
 * controller (`NamingConditionController.calculateNamesAndConditions`): each requested name
 * (plural, singular, shortNames, kind, listKind; defaulted as v1 does) is accepted if it equals the
 * name this CRD already accepted, or if no CRD of the same group has accepted it (plural, singular
 * and short names share one namespace, kind and listKind another). Conflicting names keep their
 * previously accepted value; the condition is then False with reason `PluralConflict`,
 * `SingularConflict`, `ShortNamesConflict`, `KindConflict` or `ListKindConflict` (the last
 * conflict found wins, as in kube) and a message like `"foos" is already in use`. Without
 * conflicts: True, `NoConflicts`, `no conflicts found`. Categories are always accepted.
 *
 * `others` are the other CRDs of the logical cluster (entries of other groups, and `crd` itself
 * matched by `metadata.name`, are ignored); their `status.acceptedNames` count as taken, as do
 * the names `crd` itself already accepted (kube lists the CRD among its group).
 *
 * Also returned: the `Established` condition kube writes along (False `NotAccepted` until names
 * are accepted, then False `Installing` unless already True).
 *
 * Source: k8s.io/apiextensions-apiserver/pkg/controller/status/naming_controller.go.
 */
export function acceptNames(crd: Record<string, unknown>, others: Record<string, unknown>[]): {
  acceptedNames: Record<string, unknown> | undefined;
  condition: NamesAcceptedCondition;
  established: EstablishedCondition;
} {
  const spec = asObj(crd.spec);
  const group = str(spec.group);
  const selfName = str(asObj(crd.metadata).name);
  const requested = effectiveNames(spec);
  const accepted = asObj(asObj(crd.status).acceptedNames);

  const resources = new Set<string>();
  const kinds = new Set<string>();
  const take = (n: Obj) => {
    resources.add(str(n.plural));
    resources.add(str(n.singular));
    for (const s of strList(n.shortNames)) resources.add(s);
    kinds.add(str(n.kind));
    kinds.add(str(n.listKind));
  };
  for (const o of others) {
    if (str(asObj(o.spec).group) !== group) continue;
    if (selfName && str(asObj(o.metadata).name) === selfName) continue;
    take(asObj(asObj(o.status).acceptedNames));
  }
  take(accepted);

  const inUse = (requestedName: string, acceptedName: string, used: Set<string>): string | undefined =>
    requestedName === acceptedName || !used.has(requestedName) ? undefined : `${goQuote(requestedName)} is already in use`;

  const cond: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } = { status: 'Unknown', reason: '', message: '' };
  const conflict = (r: string, m: string) => { cond.status = 'False'; cond.reason = r; cond.message = m; };
  const out: Obj = {
    plural: str(accepted.plural), singular: str(accepted.singular), shortNames: strList(accepted.shortNames),
    kind: str(accepted.kind), listKind: str(accepted.listKind), categories: strList(accepted.categories),
  };

  let e = inUse(str(requested.plural), str(accepted.plural), resources);
  if (e) conflict('PluralConflict', e); else out.plural = str(requested.plural);
  e = inUse(str(requested.singular), str(accepted.singular), resources);
  if (e) conflict('SingularConflict', e); else out.singular = str(requested.singular);
  const reqShort = strList(requested.shortNames);
  const accShort = strList(accepted.shortNames);
  if (!deepEqual(reqShort, accShort)) {
    const owned = new Set(accShort);
    const msgs: string[] = [];
    for (const sn of reqShort) {
      if (owned.has(sn)) continue;
      const m = inUse(sn, '', resources);
      if (m && !msgs.includes(m)) msgs.push(m);
    }
    if (msgs.length) conflict('ShortNamesConflict', msgs.length === 1 ? msgs[0]! : `[${msgs.join(', ')}]`);
    else out.shortNames = reqShort;
  }
  e = inUse(str(requested.kind), str(accepted.kind), kinds);
  if (e) conflict('KindConflict', e); else out.kind = str(requested.kind);
  e = inUse(str(requested.listKind), str(accepted.listKind), kinds);
  if (e) conflict('ListKindConflict', e); else out.listKind = str(requested.listKind);
  out.categories = strList(requested.categories);

  if (cond.status === 'Unknown') { cond.status = 'True'; cond.reason = 'NoConflicts'; cond.message = 'no conflicts found'; }
  const status: 'True' | 'False' = cond.status === 'True' ? 'True' : 'False';

  // omitempty as in the v1 type: plural and kind are always written.
  const acceptedNames: Obj = { plural: out.plural, kind: out.kind };
  if (out.singular) acceptedNames.singular = out.singular;
  if ((out.shortNames as string[]).length) acceptedNames.shortNames = out.shortNames;
  if (out.listKind) acceptedNames.listKind = out.listKind;
  if ((out.categories as string[]).length) acceptedNames.categories = out.categories;

  const oldEst = arr(asObj(crd.status).conditions).map(asObj).find((c) => c.type === 'Established');
  let established: EstablishedCondition = oldEst
    ? { type: 'Established', status: (['True', 'False', 'Unknown'].includes(str(oldEst.status)) ? oldEst.status : 'Unknown') as EstablishedCondition['status'], reason: str(oldEst.reason), message: str(oldEst.message) }
    : { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' };
  if (established.status !== 'True' && status === 'True') {
    established = { type: 'Established', status: 'False', reason: 'Installing', message: 'the initial names have been accepted' };
  }

  return { acceptedNames, condition: { type: 'NamesAccepted', status, reason: cond.reason, message: cond.message }, established };
}
