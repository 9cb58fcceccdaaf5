/**
 * Object metadata types shared by every resource (k8s.io/apimachinery/pkg/apis/meta/v1).
 */

/** `metav1.OwnerReference`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** `metav1.ManagedFieldsEntry`. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: Record<string, unknown>;
  subresource?: string;
}

/** `metav1.ObjectMeta` (timestamps are RFC 3339 strings, second precision). */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
  [extra: string]: unknown;
}

/** Any API object as it travels: apiVersion, kind, metadata and arbitrary content. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** Identity of a kind: `schema.GroupVersionKind`. */
export interface GroupVersionKind { group: string; version: string; kind: string }

/** `apiVersion` string of a group/version: `v1` for the core group, `<group>/<version>` otherwise. */
export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** Splits an `apiVersion` into group and version. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** RFC 3339 timestamp at second precision, as metav1.Time serialises. */
export function nowRFC3339(date?: Date): string {
  if (date) return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
  // The current second's text is formatted once per second (writes ask for it thousands of times).
  const now = Date.now();
  const second = now - (now % 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    lastSecondText = new Date(second).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  return lastSecondText;
}
let lastSecond = -1;
let lastSecondText = '';

/** The annotation kcp sets on objects returned from wildcard (`/clusters/*`) requests. */
export const CLUSTER_ANNOTATION = 'kcp.io/cluster';

/**
 * Where the value of top-level key `key` starts in the JSON object text `json` from `from` (the
 * index just after the object's `{`), or -1: a scan of that object's own keys that skips strings
 * and nested values, so a key of the same name deeper down is never taken.
 */
function topLevelValue(json: string, key: string, from: number): number {
  const want = `"${key}"`;
  let depth = 0;
  for (let i = from; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 34 /* " */) {
      const start = i;
      for (i++; i < json.length; i++) {
        const d = json.charCodeAt(i);
        if (d === 92 /* \ */) i++;
        else if (d === 34) break;
      }
      if (depth === 0 && json.startsWith(want, start) && i === start + want.length - 1) {
        let j = i + 1;
        while (json[j] === ' ' || json[j] === ':') j++;
        return j;
      }
    } else if (c === 123 /* { */ || c === 91 /* [ */) depth++;
    else if (c === 125 /* } */ || c === 93 /* ] */) { if (depth === 0) return -1; depth--; }
  }
  return -1;
}

/**
 * The JSON text of an object with `metadata.annotations["kcp.io/cluster"]` set to `cluster`,
 * spliced into the text instead of a parse and re-serialisation (a wildcard list of 10,000
 * objects costs a scan of each one's metadata instead). `json` is one compact JSON object with
 * a `metadata` object, as stored; anything else is parsed and annotated the slow way.
 */
export function withClusterAnnotation(json: string, cluster: string): string {
  const entry = `${JSON.stringify(CLUSTER_ANNOTATION)}:${JSON.stringify(cluster)}`;
  // An object that already carries the annotation (a client wrote one) takes the slow path,
  // which replaces it: the answer names the logical cluster the object really is in.
  const meta = json.charCodeAt(0) === 123 && !json.includes(`"${CLUSTER_ANNOTATION}"`) ? topLevelValue(json, 'metadata', 1) : -1;
  if (meta >= 0 && json[meta] === '{') {
    const ann = topLevelValue(json, 'annotations', meta + 1);
    if (ann >= 0 && json[ann] === '{') {
      const empty = json[ann + 1] === '}';
      return `${json.slice(0, ann + 1)}${entry}${empty ? '' : ','}${json.slice(ann + 1)}`;
    }
    if (ann < 0) {
      const empty = json[meta + 1] === '}';
      return `${json.slice(0, meta + 1)}"annotations":{${entry}}${empty ? '' : ','}${json.slice(meta + 1)}`;
    }
  }
  const obj = JSON.parse(json) as KubeObject;
  obj.metadata = { ...obj.metadata, annotations: { ...obj.metadata?.annotations, [CLUSTER_ANNOTATION]: cluster } };
  return JSON.stringify(obj);
}
