/**
 * Field errors as k8s.io/apimachinery/pkg/util/validation/field builds them (Kubernetes 1.32), and
 * the Go value formatting their messages depend on.
 *
 * A `field.Error` becomes a `StatusCause` with `reason` = the error type (`FieldValueInvalid`…),
 * `field` = the path and `message` = `ErrorBody()` (k8s.io/apimachinery/pkg/api/errors
 * `NewInvalid`), e.g. `Invalid value: "x": spec.a in body should match '^a'`.
 */
import type { StatusCause } from '../apimachinery/errors.js';
import { goQuote } from '../apimachinery/pruning.js';

export { goQuote };

/** `field.Path` of a nil parent, as kube prints it (`(*Path)(nil).String()`). */
export const NIL_PATH = '<nil>';

/**
 * Go's `fmt` `%v` of a float64: `strconv.FormatFloat(f, 'g', -1, 64)`, i.e. the shortest digits,
 * in exponent form (`1e+06`, `1.5e-07`) when the decimal exponent is < -4 or >= 6 (strconv/ftoa.go:
 * "if precision was the shortest possible, use precision 6 for this decision").
 */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expStr] = f.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 6) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  return String(f);
}

/**
 * `%v` of a decoded JSON number: kube's JSON decoder makes integral numbers int64 (printed as
 * integers) and the others float64 (printed as {@link goFloat}).
 */
export function goNumber(n: number): string {
  return Number.isInteger(n) && Math.abs(n) < 9.223372036854775807e18 ? String(n) : goFloat(n);
}

/** Go's byte-wise string order (code point order). */
function goStringCompare(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Go `%#v` of a value inside an `interface{}`: `map[string]interface {}{"a":1}`, `[]interface {}{"x"}`. */
export function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharpV).join(', ')}}`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).sort(goStringCompare);
    return `map[string]interface {}{${keys.map((k) => `${goQuote(k)}:${goSharpV(o[k])}`).join(', ')}}`;
  }
  return String(v);
}

/**
 * How `field.Error.ErrorBody` (1.32) prints a bad value: nil becomes the string `"null"`, `%v` for
 * numbers and booleans, `%q` for strings and `%#v` for everything else.
 */
export function badValue(v: unknown): string {
  if (v === null || v === undefined) return '"null"';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return goSharpV(v);
}

/** Go `encoding/json` of a JSON value (compact, keys sorted, `<>&` escaped). */
export function goJSON(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') {
    if (Number.isInteger(v) && Math.abs(v) < 1e21) return String(v);
    const abs = Math.abs(v);
    if (abs !== 0 && (abs < 1e-6 || abs >= 1e21)) {
      return String(v).replace(/e([+-])(\d)$/, 'e$10$2');
    }
    return String(v);
  }
  if (typeof v === 'string') {
    return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  if (typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(goJSON).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort(goStringCompare);
  return `{${keys.map((k) => `${goJSON(k)}:${goJSON(o[k])}`).join(',')}}`;
}

/** `field.Invalid(path, value, detail)`. */
export function invalidCause(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${badValue(value)}${detail ? `: ${detail}` : ''}` };
}

/** `field.Invalid` with a value printed as given (already formatted). */
export function invalidCauseRaw(field: string, printedValue: string, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${printedValue}${detail ? `: ${detail}` : ''}` };
}

/** `field.TypeInvalid(path, value, detail)`. */
export function typeInvalidCause(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueTypeInvalid', field, message: `Invalid value: ${badValue(value)}${detail ? `: ${detail}` : ''}` };
}

/** `field.Required(path, detail)`. */
export function requiredCause(field: string, detail = ''): StatusCause {
  return { reason: 'FieldValueRequired', field, message: detail ? `Required value: ${detail}` : 'Required value' };
}

/** `field.Forbidden(path, detail)`. */
export function forbiddenCause(field: string, detail: string): StatusCause {
  return { reason: 'FieldValueForbidden', field, message: detail ? `Forbidden: ${detail}` : 'Forbidden' };
}

/** `field.Duplicate(path, value)`. */
export function duplicateCause(field: string, value: unknown): StatusCause {
  return { reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${badValue(value)}` };
}

/** `field.NotSupported(path, value, validValues)`. */
export function notSupportedCause(field: string, value: unknown, valid: readonly string[]): StatusCause {
  const detail = valid.length ? `supported values: ${valid.map((v) => goQuote(v)).join(', ')}` : '';
  return { reason: 'FieldValueNotSupported', field, message: `Unsupported value: ${badValue(value)}${detail ? `: ${detail}` : ''}` };
}

/** `field.TooLong(path, _, max)` (1.32 wording: `may not be more than N bytes`). */
export function tooLongCause(field: string, max: number): StatusCause {
  return { reason: 'FieldValueTooLong', field, message: `Too long: ${max >= 0 ? `may not be more than ${max} bytes` : 'value is too long'}` };
}

/** `field.TooMany(path, actual, max)`. */
export function tooManyCause(field: string, actual: number, max: number): StatusCause {
  const detail = max >= 0 ? `must have at most ${max} items` : 'has too many items';
  return { reason: 'FieldValueTooMany', field, message: actual >= 0 ? `Too many: ${actual}: ${detail}` : `Too many: ${detail}` };
}

/**
 * A `field.Path` under construction, printed as kube does: children joined with `.`, list
 * indices and map keys in brackets (`spec.containers[0]`, `spec.labels[app]`).
 */
export function childPath(base: string, name: string): string {
  return base ? `${base}.${name}` : name;
}

/** `path.Index(i)`. */
export function indexPath(base: string, i: number): string {
  return `${base}[${i}]`;
}

/** `path.Key(k)`. */
export function keyPath(base: string, key: string): string {
  return `${base}[${key}]`;
}
