/**
 * Schema compatibility and least common denominator (LCD) of two CRD structural schemas, as kcp's
 * API negotiation checks them (kcp-dev/kcp pkg/schemacompat/schemacompat.go
 * `EnsureStructuralSchemaCompatibility`, used by its `compat` command and by TMC's negotiation of
 * the resources a syncer may sync).
 *
 * The question asked: is every document the existing schema accepts also accepted by the new one
 * (the new schema is backward-compatible with the existing one)? Every rule that answers "no" is a
 * field error (kube's field.ErrorList as `StatusCause`s). With `narrowExisting`, the existing schema
 * is narrowed where it can be (properties the new schema lacks are dropped, an `enum` is reduced
 * to the common values, `number` becomes `integer`, `uniqueItems` is set, …) and that LCD is
 * returned; constructs the negotiation cannot compare (`allOf`, `anyOf`, `oneOf`, `not`, numeric
 * and length bounds that changed, …) are refused rather than guessed, as kcp does.
 *
 * kcp's rules, paths and messages are kept; where kcp's code contradicts its own contract (a schema
 * reported compatible that is not, or a crash on input kube accepts), the rule is completed here;
 * each such difference is marked "kcp-ts:" below and listed in docs/apis.md ("Schema
 * compatibility").
 *
 * Bounds: both schemas are tenant input (a SyncTarget's cluster publishes them). They are refused
 * when nested deeper than {@link MAX_NESTING_DEPTH} (checked without recursion), so the recursive
 * walk below never goes deeper than that; the walk visits each node of the existing schema once
 * (paired with one node of the new schema), so its cost is linear in the existing schema's size
 * plus one pass over the new schema.
 */
import type { StatusCause } from '../apimachinery/errors.js';
import { MAX_NESTING_DEPTH, valueDeeperThan } from '../apimachinery/depth.js';
import { isObj } from '../apimachinery/objects.js';
import { childPath, forbiddenCause, goJSON, goNumber, goQuote, keyPath } from './schema-errors.js';

/** A CRD version's `openAPIV3Schema` (or a node of it), as decoded from JSON or YAML. */
export type JSONSchemaProps = Record<string, unknown>;

/** Result of {@link ensureStructuralSchemaCompatibility}. */
export interface SchemaCompatibility {
  /**
   * When `errors` is empty: the LCD of the two schemas (with `narrowExisting`) or a copy of the
   * existing schema; either is accepted by the new schema. Undefined when there are errors (as
   * kcp returns nil).
   */
  schema: JSONSchemaProps | undefined;
  /**
   * The incompatibilities, in kcp's order: `field` is the path below the `fldPath` given
   * (`openAPIV3Schema.properties[spec].properties[replicas].type`), `reason` kube's error type
   * (`FieldValueInvalid`, `FieldValueForbidden`, …), `message` kube's `ErrorBody()` (`Invalid
   * value: "string": The type changed (was "integer", now "string")`).
   */
  errors: StatusCause[];
}

/**
 * Compares a new structural schema to an existing one: whether the existing schema is a
 * sub-schema of the new one, i.e. every document it validates is validated by the new schema too
 * (kcp `EnsureStructuralSchemaCompatibility(fldPath, existing, new, narrowExisting)`).
 *
 * @param fldPath path of both schemas' roots in the errors (`''`: paths start at `properties…`)
 * @param existing the schema objects are stored with now (not modified)
 * @param next the new schema (not modified)
 * @param narrowExisting whether to narrow the existing schema to the LCD where it can be, instead
 *   of reporting those differences as incompatible
 * @returns the LCD (or a copy of `existing`) and the errors; never throws on malformed input:
 *   what is not a structural schema (`$ref`, `items` as an array, nesting deeper than
 *   {@link MAX_NESTING_DEPTH}, …) is a field error too (kube's `schema.NewStructural` messages).
 */
export function ensureStructuralSchemaCompatibility(fldPath: string, existing: JSONSchemaProps, next: JSONSchemaProps, narrowExisting: boolean): SchemaCompatibility {
  const errors: StatusCause[] = [];
  for (const [which, schema] of [['existing', existing], ['new', next]] as const) {
    if (!isObj(schema)) errors.push(invalid(fldPath, schema, `the ${which} schema is not an object`));
    else if (valueDeeperThan(schema, MAX_NESTING_DEPTH)) errors.push(forbiddenCause(fldPath, `the ${which} schema nests deeper than ${MAX_NESTING_DEPTH} levels`));
    else checkStructural(fldPath, schema, which, errors);
  }
  if (errors.length) return { schema: undefined, errors };
  const lcd = structuredClone(existing);
  new Negotiation(narrowExisting, errors).compare(fldPath, existing, next, lcd);
  if (!errors.length) return { schema: lcd, errors };
  // An int-or-string node is checked by the string and the integer rules, which may both refuse
  // the same construct: report it once.
  const seen = new Set<string>();
  return { schema: undefined, errors: errors.filter((e) => { const id = `${e.field}\0${e.message}`; return !seen.has(id) && Boolean(seen.add(id)); }) };
}

/**
 * Renders field errors as Go's `field.Error.Error()` does (`<path>: <body>`), one per element;
 * kcp joins them with `; ` (multierr).
 */
export function formatFieldErrors(errors: readonly StatusCause[]): string[] {
  return errors.map((e) => (e.field ? `${e.field}: ${e.message ?? ''}` : e.message ?? ''));
}

// ---------------------------------------------------------------------------------------------
// Structural schema check (kube schema.NewStructural's refusals)
// ---------------------------------------------------------------------------------------------

/** Fields `schema.NewStructural` refuses (validateUnsupportedFields), with kube's names. */
const UNSUPPORTED_FIELDS: ReadonlyArray<[string, string]> = [
  ['id', 'id'], ['$schema', 'schema'], ['$ref', '$ref'], ['patternProperties', 'patternProperties'],
  ['dependencies', 'dependencies'], ['additionalItems', 'additionalItems'], ['definitions', 'definitions'],
];

/**
 * What kube's `schema.NewStructural` refuses, as field errors at the node (kcp fails the whole
 * comparison with that plain error): unsupported fields, `items` as an array, a false
 * `x-kubernetes-preserve-unknown-fields`; plus schema nodes that are not objects. Iterative.
 */
function checkStructural(root: string, schema: Raw, which: string, errors: StatusCause[]): void {
  const stack: Array<[string, unknown]> = [[root, schema]];
  while (stack.length) {
    const [path, node] = stack.pop()!;
    if (!isObj(node)) { errors.push(invalid(path, node, `the ${which} schema has a node that is not a schema object`)); continue; }
    for (const [key, name] of UNSUPPORTED_FIELDS) {
      const v = node[key];
      if (v !== undefined && v !== null && v !== '' && !(isObj(v) && Object.keys(v).length === 0)) {
        errors.push(forbiddenCause(childPath(path, key), `OpenAPIV3Schema '${name}' is not supported (${which} schema)`));
      }
    }
    if (node['x-kubernetes-preserve-unknown-fields'] === false) {
      errors.push(invalid(childPath(path, 'x-kubernetes-preserve-unknown-fields'), false, `'x-kubernetes-preserve-unknown-fields' must be true or undefined (${which} schema)`));
    }
    if (node.type !== undefined && typeof node.type !== 'string') errors.push(invalid(childPath(path, 'type'), node.type, `type must be a string (${which} schema)`));
    if (Array.isArray(node.items)) errors.push(forbiddenCause(childPath(path, 'items'), `OpenAPIV3Schema 'items' must be a schema, but is an array (${which} schema)`));
    else if (node.items !== undefined && node.items !== null) stack.push([childPath(path, 'items'), node.items]);
    if (node.properties !== undefined && node.properties !== null) {
      if (!isObj(node.properties)) errors.push(invalid(childPath(path, 'properties'), node.properties, `properties must be a map of schemas (${which} schema)`));
      else for (const [k, v] of Object.entries(node.properties)) stack.push([keyPath(childPath(path, 'properties'), k), v]);
    }
    const ap = node.additionalProperties;
    if (isObj(ap)) stack.push([childPath(path, 'additionalProperties'), ap]);
    else if (ap !== undefined && ap !== null && typeof ap !== 'boolean') errors.push(invalid(childPath(path, 'additionalProperties'), ap, `additionalProperties must be a schema or a boolean (${which} schema)`));
    // Value validations nest schemas too (kube's newNestedValueValidation checks them).
    if (node.not !== undefined && node.not !== null) stack.push([childPath(path, 'not'), node.not]);
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
      const list = node[key];
      if (Array.isArray(list)) list.forEach((m, i) => stack.push([`${childPath(path, key)}[${i}]`, m]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The comparison
// ---------------------------------------------------------------------------------------------

type Raw = Record<string, unknown>;

/** `additionalProperties` as kube's structural schema holds it (StructuralOrBool). */
interface Additional {
  /** The schema of any further property; undefined for the boolean form. */
  schema: Raw | undefined;
  /** true for a schema or `true`, false for `false`. */
  allows: boolean;
}

function typeOf(s: Raw): string { return typeof s.type === 'string' ? s.type : ''; }
function preserves(s: Raw): boolean { return s['x-kubernetes-preserve-unknown-fields'] === true; }
function intOrString(s: Raw): boolean { return s['x-kubernetes-int-or-string'] === true; }
/** Properties of a node, undefined when none (kube checks `len(Properties) > 0`). */
function propertiesOf(s: Raw): Record<string, Raw> | undefined {
  return isObj(s.properties) && Object.keys(s.properties).length > 0 ? s.properties as Record<string, Raw> : undefined;
}
function additionalOf(s: Raw): Additional | undefined {
  const ap = s.additionalProperties;
  if (isObj(ap)) return { schema: ap, allows: true };
  if (typeof ap === 'boolean') return { schema: undefined, allows: ap };
  return undefined;
}
/** Whether a value validation is set (Go's `reflect.Value.IsZero` is false): empty lists count as unset. */
function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}
/** The string list a field holds, or undefined. */
function stringList(v: unknown): string[] | undefined {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined;
}
function optString(v: unknown): string | undefined { return typeof v === 'string' ? v : undefined; }

/** Deep equality of decoded JSON values (schemas are bounded in depth before this is used). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ka = Object.keys(a).filter((k) => (a as Raw)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Raw)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Raw)[k], (b as Raw)[k]));
}

/**
 * A bad value as `field.Error.ErrorBody` prints it (apimachinery ≥ 0.34, which kcp uses): `%v` for
 * numbers and booleans, `%q` for strings, JSON for everything else (`["a","b"]`, `null`).
 */
function printValue(v: unknown): string {
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  return goJSON(v ?? null);
}

/** `field.Invalid(path, value, detail)`. */
function invalid(path: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${printValue(value)}: ${detail}` };
}

/** kcp `checkUnsupportedValidation`'s refusal of a construct the negotiation does not compare. */
function unsupported(path: string, construct: string, typeName: string): StatusCause {
  return forbiddenCause(path, `The ${goQuote(construct)} JSON Schema construct is not supported by the Schema negotiation for type ${goQuote(typeName)}`);
}

const sortedKeys = (o: Raw): string[] => Object.keys(o).sort(byCodePoint);
function byCodePoint(a: string, b: string): number { return a < b ? -1 : a > b ? 1 : 0; }

/** One comparison: the mode and the errors found so far. */
class Negotiation {
  constructor(private readonly narrow: boolean, private readonly errors: StatusCause[]) {}

  private add(...errs: StatusCause[]): void { this.errors.push(...errs); }

  /** kcp `lcdForStructural`: one node of the existing schema, its counterpart and its LCD copy. */
  compare(path: string, existing: Raw, next: Raw | undefined, lcd: Raw): void {
    if (next === undefined) { this.add(invalid(path, null, "new schema doesn't allow anything")); return; }
    const was = preserves(existing), now = preserves(next);
    if (was !== now) {
      this.add(invalid(childPath(path, 'x-kubernetes-preserve-unknown-fields'), now, `x-kubernetes-preserve-unknown-fields value changed (was ${was}, now ${now})`));
      return;
    }
    switch (typeOf(existing)) {
      case 'number': this.number(path, existing, next, lcd); break;
      case 'integer': this.integer(path, existing, next, lcd); break;
      case 'string': this.sameType(path, existing, next); this.stringValidation(path, existing, next, lcd); break;
      case 'boolean': this.sameType(path, existing, next); this.commonValidation(path, existing, next, 'boolean', true); break;
      case 'array': this.array(path, existing, next, lcd); break;
      case 'object': this.object(path, existing, next, lcd); break;
      case '':
        if (intOrString(existing)) { this.intOrString(path, existing, next, lcd); break; }
        if (preserves(existing)) { this.sameType(path, existing, next); break; }
        this.add(invalid(childPath(path, 'type'), typeOf(existing), 'Invalid type'));
        return;
      default:
        this.add(invalid(childPath(path, 'type'), typeOf(existing), 'Invalid type'));
        return;
    }
    this.extensions(path, existing, next, lcd);
  }

  /** kcp `checkTypesAreTheSame`. */
  private sameType(path: string, existing: Raw, next: Raw): boolean {
    const was = typeOf(existing), now = typeOf(next);
    if (was === now) return true;
    this.add(invalid(childPath(path, 'type'), now, `The type changed (was ${goQuote(was)}, now ${goQuote(now)})`));
    return false;
  }

  /**
   * kcp-ts: what every type shares and kcp does not compare. `nullable` true → false refuses
   * null (narrowed to false); `x-kubernetes-embedded-resource` changes what a value is;
   * `x-kubernetes-validations` (CEL) that differ are a construct the negotiation cannot compare.
   */
  private extensions(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    if (existing.nullable === true && next.nullable !== true) {
      if (this.narrow) lcd.nullable = false;
      else this.add(invalid(childPath(path, 'nullable'), false, 'nullable value has been changed in an incompatible way'));
    }
    const embeddedWas = existing['x-kubernetes-embedded-resource'] === true, embeddedNow = next['x-kubernetes-embedded-resource'] === true;
    if (embeddedWas !== embeddedNow) {
      this.add(invalid(childPath(path, 'x-kubernetes-embedded-resource'), embeddedNow, 'x-kubernetes-embedded-resource value has been changed in an incompatible way'));
    }
    const rulesWas = existing['x-kubernetes-validations'], rulesNow = next['x-kubernetes-validations'];
    if ((isSet(rulesWas) || isSet(rulesNow)) && !jsonEqual(rulesWas ?? [], rulesNow ?? [])) {
      this.add(unsupported(path, 'x-kubernetes-validations', typeOf(existing) || (intOrString(existing) ? 'int-or-string' : 'any')));
    }
  }

  /**
   * The constructs kcp refuses whenever either side has them: `allOf`, `anyOf`, `oneOf` (kcp
   * checks `allOf` three times for strings, booleans, arrays and objects — kcp-ts checks each),
   * `not` (kcp-ts: kcp checks it for numbers only), and `enum` unless the type compares it.
   */
  private commonValidation(path: string, existing: Raw, next: Raw, typeName: string, withEnum: boolean): void {
    for (const construct of ['not', 'allOf', 'anyOf', 'oneOf', ...(withEnum ? ['enum'] : [])]) {
      if (isSet(existing[construct]) || isSet(next[construct])) this.add(unsupported(path, construct, typeName));
    }
  }

  /** Refuses `names` (present on either side) when any of `compared` differs (kcp's bound checks). */
  private changedBounds(path: string, existing: Raw, next: Raw, compared: readonly string[], names: readonly string[], typeName: string): void {
    if (compared.every((k) => jsonEqual(existing[k] ?? null, next[k] ?? null) || (!isSet(existing[k]) && !isSet(next[k])))) return;
    for (const k of names) if (existing[k] !== undefined && existing[k] !== null || next[k] !== undefined && next[k] !== null) this.add(unsupported(path, k, typeName));
  }

  /** kcp `checkUnsupportedValidationForNumerics`. */
  private numericValidation(path: string, existing: Raw, next: Raw, typeName: string): void {
    this.commonValidation(path, existing, next, typeName, true);
    this.changedBounds(path, existing, next, ['maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum'], ['maximum', 'minimum'], typeName);
    this.changedBounds(path, existing, next, ['multipleOf'], ['multipleOf'], typeName);
  }

  private format(path: string, existing: Raw, next: Raw): void {
    const was = optString(existing.format) ?? '', now = optString(next.format) ?? '';
    if (was !== now) this.add(invalid(childPath(path, 'format'), now, 'format value has been changed in an incompatible way'));
  }

  /** kcp `lcdForNumber`: an integer is a number, so `integer` narrows `number`. */
  private number(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    if (typeOf(next) === 'integer') {
      if (!this.narrow) { this.sameType(path, existing, next); return; }
      lcd.type = 'integer';
      this.numericValidation(path, existing, next, 'integer');
      this.numericFormat(path, existing, next, lcd);
      return;
    }
    if (!this.sameType(path, existing, next)) return;
    this.numericValidation(path, existing, next, 'numbers');
    this.numericFormat(path, existing, next, lcd);
  }

  /**
   * kcp-ts: kcp compares `format` for strings only, so `int64` → `int32` passed. A changed format
   * is incompatible; narrowing adopts the new format where the existing node had none (a
   * `number` narrowed to an `integer` drops a float format for the new one).
   */
  private numericFormat(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    const was = optString(existing.format) ?? '', now = optString(next.format) ?? '';
    if (was === now || now === '') return;
    const floatToInteger = typeOf(existing) === 'number' && typeOf(lcd) === 'integer' && (was === 'float' || was === 'double');
    if (this.narrow && (was === '' || floatToInteger)) lcd.format = now;
    else this.add(invalid(childPath(path, 'format'), now, 'format value has been changed in an incompatible way'));
  }

  /** kcp `lcdForInteger`: a new `number` accepts every integer (the LCD stays `integer`). */
  private integer(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    if (typeOf(next) !== 'number' && !this.sameType(path, existing, next)) return;
    this.numericValidation(path, existing, next, 'integer');
    this.numericFormat(path, existing, next, lcd);
  }

  /** kcp `lcdForStringValidation`. */
  private stringValidation(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    for (const construct of ['not', 'allOf', 'anyOf', 'oneOf']) {
      if (isSet(existing[construct]) || isSet(next[construct])) this.add(unsupported(path, construct, 'string'));
    }
    this.changedBounds(path, existing, next, ['maxLength', 'minLength'], ['maxLength', 'minLength'], 'string');
    if ((optString(existing.pattern) ?? '') !== (optString(next.pattern) ?? '')) this.add(unsupported(path, 'pattern', 'string'));
    this.stringEnum(path, existing, next, lcd);
    this.format(path, existing, next);
  }

  /**
   * The `enum` of a string: the new values must include the existing ones; narrowed to the
   * common values. kcp-ts: no enum means any string (kcp compares empty sets, so it accepts a new
   * enum on a free string and narrows a removed enum to none, i.e. to any string), an empty
   * intersection cannot be narrowed, and the error names the values no longer accepted (kcp: the
   * values added).
   */
  private stringEnum(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    const enumPath = childPath(path, 'enum');
    const toSet = (values: unknown): Set<string> | undefined => {
      if (!Array.isArray(values) || values.length === 0) return undefined;
      const set = new Set<string>();
      for (const v of values) if (typeof v === 'string') set.add(v);
      // kcp reports the whole enum once per value that is not a string; once per enum here (an
      // enum of n numbers would print n² values).
      if (set.size < values.length) this.add(invalid(enumPath, values, "enum value should be a 'string' for Json type 'string'"));
      return set;
    };
    const was = toSet(existing.enum), now = toSet(next.enum);
    if (now === undefined) return;
    if (was === undefined) {
      if (this.narrow) lcd.enum = [...now].sort(byCodePoint);
      else this.add(invalid(enumPath, [...now].sort(byCodePoint), 'enum value has been changed in an incompatible way'));
      return;
    }
    const removed = [...was].filter((v) => !now.has(v)).sort(byCodePoint);
    if (!removed.length) return;
    const common = [...was].filter((v) => now.has(v)).sort(byCodePoint);
    if (this.narrow && common.length) lcd.enum = common;
    else this.add(invalid(enumPath, removed, 'enum value has been changed in an incompatible way'));
  }

  /** kcp `lcdForArray` and `lcdForArrayValidation`. */
  private array(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    this.sameType(path, existing, next);
    this.commonValidation(path, existing, next, 'array', true);
    // kcp-ts: kcp compares maxLength/minLength here (so a changed maxItems passes unnoticed).
    this.changedBounds(path, existing, next, ['maxItems', 'minItems'], ['maxItems', 'minItems'], 'array');
    if (existing.uniqueItems !== true && next.uniqueItems === true) {
      if (this.narrow) lcd.uniqueItems = true;
      else this.add(invalid(childPath(path, 'uniqueItems'), true, 'uniqueItems value has been changed in an incompatible way'));
    }
    // kcp-ts: the path is `items` (kcp: `Items`), the JSON field's name.
    const itemsPath = childPath(path, 'items');
    const existingItems = isObj(existing.items) ? existing.items : undefined;
    const nextItems = isObj(next.items) ? next.items : undefined;
    if (existingItems) this.compare(itemsPath, existingItems, nextItems, lcd.items as Raw);
    else if (nextItems) {
      // kcp-ts: kcp crashes here. Items of any schema before, of one schema now.
      if (this.narrow) lcd.items = structuredClone(nextItems);
      else this.add(invalid(itemsPath, null, 'items value has been changed in an incompatible way'));
    }
    const listType = optString(existing['x-kubernetes-list-type']), newListType = optString(next['x-kubernetes-list-type']);
    if (listType !== newListType) {
      this.add(invalid(childPath(path, 'x-kubernetes-list-type'), newListType ?? null, 'x-kubernetes-list-type value has been changed in an incompatible way'));
    }
    const keys = new Set(stringList(existing['x-kubernetes-list-map-keys']) ?? []);
    const newKeys = stringList(next['x-kubernetes-list-map-keys']) ?? [];
    const newKeySet = new Set(newKeys);
    if (keys.size !== newKeySet.size || [...keys].some((k) => !newKeySet.has(k))) {
      this.add(invalid(childPath(path, 'x-kubernetes-list-map-keys'), newKeys, 'x-kubernetes-list-map-keys value has been changed in an incompatible way'));
    }
  }

  /** kcp `lcdForObject` and `lcdForObjectValidation`. */
  private object(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    this.sameType(path, existing, next);
    const mapType = optString(existing['x-kubernetes-map-type']), newMapType = optString(next['x-kubernetes-map-type']);
    if (mapType !== newMapType) {
      this.add(invalid(childPath(path, 'x-kubernetes-map-type'), newMapType ?? null, 'x-kubernetes-map-type value has been changed in an incompatible way'));
    }
    // In structural schemas, properties and additionalProperties exclude each other.
    const propsPath = childPath(path, 'properties');
    const props = propertiesOf(existing), newProps = propertiesOf(next);
    const additional = additionalOf(existing), newAdditional = additionalOf(next);
    // Both sides preserve unknown fields here or neither does (compare() checked).
    const preserving = preserves(next);
    const removedProps: string[] = [];
    if (props) {
      const lcdProps = lcd.properties as Record<string, Raw>;
      if (newProps) {
        const removed = sortedKeys(props).filter((k) => !Object.hasOwn(newProps, k));
        // kcp-ts: a property the new schema lacks is an unknown field it preserves, not a removal.
        if (removed.length && !preserving) {
          if (this.narrow) { for (const k of removed) delete lcdProps[k]; removedProps.push(...removed); }
          else this.add(invalid(propsPath, removed, 'properties have been removed in an incompatible way'));
        }
        for (const k of sortedKeys(props)) {
          if (Object.hasOwn(newProps, k)) this.compare(keyPath(propsPath, k), props[k]!, newProps[k], lcdProps[k]!);
        }
        if (preserving) this.preservedNowValidated(propsPath, props, newProps, lcd);
      } else if (newAdditional?.schema) {
        for (const k of sortedKeys(props)) this.compare(keyPath(propsPath, k), props[k]!, newAdditional.schema, lcdProps[k]!);
      } else if (newAdditional?.allows || preserving) {
        // Any property of any schema is allowed now (kcp-ts: so are preserved unknown fields):
        // the existing properties are the LCD.
      } else {
        this.add(invalid(propsPath, sortedKeys(props), 'properties value has been completely cleared in an incompatible way'));
      }
    } else if (additional) {
      const apPath = childPath(path, 'additionalProperties');
      if (additional.schema) {
        if (newAdditional?.schema) this.compare(apPath, additional.schema, newAdditional.schema, lcd.additionalProperties as Raw);
        else if (newAdditional?.allows || (preserving && !newProps)) {
          // Any property of any schema now: a superset of the existing properties of one schema.
        } else {
          // kcp-ts: kcp crashes when the new schema has no additionalProperties at all.
          this.add(invalid(apPath, newAdditional?.allows ?? null, 'additionalProperties value has been changed in an incompatible way'));
        }
      } else if (additional.allows && !newAdditional?.allows && !(preserving && !newProps)) {
        if (this.narrow) {
          if (newAdditional) lcd.additionalProperties = false; else delete lcd.additionalProperties;
        } else {
          this.add(invalid(apPath, newAdditional?.allows ?? null, 'additionalProperties value has been changed in an incompatible way'));
        }
      } else if (additional.allows && newAdditional?.schema) {
        // kcp-ts: any property of any schema before, of one schema now (kcp keeps `true` as the
        // LCD: its structural form counts a schema as `true` too).
        if (this.narrow) lcd.additionalProperties = structuredClone(newAdditional.schema);
        else this.add(invalid(apPath, newAdditional.schema, 'additionalProperties value has been changed in an incompatible way'));
      }
    } else if (preserving && newProps) {
      // kcp-ts: unknown fields of any value before, some of them validated now.
      this.preservedNowValidated(propsPath, {}, newProps, lcd);
    }
    this.commonValidation(path, existing, next, 'object', true);
    this.objectBounds(path, existing, next, lcd, removedProps);
  }

  /**
   * kcp-ts: in an object that preserves unknown fields, a property only the new schema declares
   * was an unknown field of any value: incompatible, narrowed to the new property's schema.
   */
  private preservedNowValidated(propsPath: string, props: Record<string, Raw>, newProps: Record<string, Raw>, lcd: Raw): void {
    const added = sortedKeys(newProps).filter((k) => !Object.hasOwn(props, k));
    if (!added.length) return;
    if (!this.narrow) { this.add(invalid(propsPath, added, 'properties value has been changed in an incompatible way')); return; }
    const lcdProps = (isObj(lcd.properties) ? lcd.properties : (lcd.properties = {})) as Record<string, Raw>;
    // Defined, not assigned: a property named `__proto__` must stay a property.
    for (const k of added) Object.defineProperty(lcdProps, k, { value: structuredClone(newProps[k]!), enumerable: true, writable: true, configurable: true });
  }

  /**
   * kcp-ts: `maxProperties`/`minProperties` (refused when changed, as kcp refuses other bounds)
   * and `required`, which kcp does not compare: a property the new schema requires and the
   * existing one does not is incompatible, narrowed by requiring it when the LCD has the
   * property; narrowing cannot drop a property the existing schema requires (objects stored
   * without it would be refused where the existing schema is served).
   */
  private objectBounds(path: string, existing: Raw, next: Raw, lcd: Raw, removedProps: string[]): void {
    this.changedBounds(path, existing, next, ['maxProperties', 'minProperties'], ['maxProperties', 'minProperties'], 'object');
    const reqPath = childPath(path, 'required');
    const required = new Set(stringList(existing.required) ?? []);
    const removedRequired = removedProps.filter((k) => required.has(k));
    if (removedRequired.length) this.add(invalid(reqPath, removedRequired, 'required properties have been removed in an incompatible way'));
    const added = [...new Set(stringList(next.required) ?? [])].filter((k) => !required.has(k)).sort(byCodePoint);
    if (!added.length) return;
    const lcdProps = isObj(lcd.properties) ? lcd.properties : {};
    const narrowable = this.narrow ? added.filter((k) => Object.hasOwn(lcdProps, k)) : [];
    const narrowed = new Set(narrowable);
    const refused = added.filter((k) => !narrowed.has(k));
    if (narrowable.length) lcd.required = [...(stringList(lcd.required) ?? []), ...narrowable];
    if (refused.length) this.add(invalid(reqPath, refused, 'required value has been changed in an incompatible way'));
  }

  /**
   * kcp `lcdForIntOrString`: both int-or-string with the same `anyOf` (the one such schemas are
   * expected to carry), then the string and the integer rules without `anyOf`.
   */
  private intOrString(path: string, existing: Raw, next: Raw, lcd: Raw): void {
    this.sameType(path, existing, next);
    if (!intOrString(next)) {
      this.add(invalid(childPath(path, 'x-kubernetes-int-or-string'), false, 'x-kubernetes-int-or-string value has been changed in an incompatible way'));
    }
    if (!jsonEqual(isSet(existing.anyOf) ? existing.anyOf : undefined, isSet(next.anyOf) ? next.anyOf : undefined)) {
      this.add(invalid(childPath(path, 'anyOf'), isSet(next.anyOf) ? next.anyOf : null, 'anyOf value has been changed in an incompatible way'));
    }
    const withoutAnyOf = (s: Raw): Raw => ({ ...s, anyOf: undefined });
    const e = withoutAnyOf(existing), n = withoutAnyOf(next);
    this.stringValidation(path, e, n, lcd);
    this.numericValidation(path, e, n, 'integer');
  }
}
