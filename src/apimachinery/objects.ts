/**
 * The one test for "a JSON object" used across kcp-ts when reading decoded JSON (objects,
 * schemas, reviews): a non-null object that is not an array. Decoded JSON holds nothing else
 * that is an object, so no prototype check is needed.
 */

/** A decoded JSON object. */
export type JSONObject = Record<string, unknown>;

/** Whether `v` is a JSON object (not null, not an array). */
export function isObj(v: unknown): v is JSONObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `v` when it is a JSON object, else a new empty object: for reading optional nested fields
 * (`asObj(asObj(crd.spec).names).kind`) without a check at every level. Never throws.
 */
export function asObj(v: unknown): JSONObject {
  return isObj(v) ? v : {};
}
