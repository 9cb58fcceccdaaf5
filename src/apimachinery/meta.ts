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
