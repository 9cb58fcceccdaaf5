/**
 * Built-in OpenAPI v3 schemas of every kind kcp-ts serves, keyed by kube's definition names
 * (`io.k8s.api.core.v1.ConfigMap`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, …), plus
 * the mapping from a group/version/kind to its definition name.
 *
 * `$ref`s inside these schemas use the v3 form `#/components/schemas/<name>`; openapi.ts rewrites
 * them for `/openapi/v2`.
 */
import type { Schema } from './helpers.js';
import { META_SCHEMAS } from './meta.js';
import { CORE_SCHEMAS } from './core.js';
import { EVENTS_COORDINATION_SCHEMAS } from './events.js';
import { RBAC_SCHEMAS } from './rbac.js';
import { AUTHORIZATION_SCHEMAS } from './authorization.js';
import { APIEXTENSIONS_SCHEMAS } from './apiextensions.js';
import { CERTIFICATES_SCHEMAS } from './certificates.js';
import { ADMISSION_SCHEMAS } from './admissionregistration.js';
import { FLOWCONTROL_SCHEMAS } from './flowcontrol.js';

export type { Schema } from './helpers.js';
export { V3_REF_PREFIX, listSchema } from './helpers.js';

function sortedMerge(...maps: Array<Record<string, Schema>>): Record<string, Schema> {
  const all: Record<string, Schema> = {};
  for (const m of maps) Object.assign(all, m);
  const out: Record<string, Schema> = {};
  for (const k of Object.keys(all).sort()) out[k] = all[k]!;
  return out;
}

/**
 * Every built-in schema keyed by definition name (sorted). Treat as read-only: callers that
 * need to modify a schema must copy it first.
 */
export const BUILTIN_SCHEMAS: Record<string, object> = sortedMerge(
  META_SCHEMAS,
  CORE_SCHEMAS,
  EVENTS_COORDINATION_SCHEMAS,
  RBAC_SCHEMAS,
  AUTHORIZATION_SCHEMAS,
  APIEXTENSIONS_SCHEMAS,
  ADMISSION_SCHEMAS,
  CERTIFICATES_SCHEMAS,
  FLOWCONTROL_SCHEMAS,
);

/** Go package prefix of built-in groups whose definition names do not follow the general rule. */
const SPECIAL_GROUP_PREFIXES: Record<string, string> = {
  '': 'io.k8s.api.core',
  'apiextensions.k8s.io': 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions',
  'apiregistration.k8s.io': 'io.k8s.kube-aggregator.pkg.apis.apiregistration',
  'internal.apiserver.k8s.io': 'io.k8s.api.apiserverinternal',
  'meta.k8s.io': 'io.k8s.apimachinery.pkg.apis.meta',
};

/**
 * The OpenAPI definition name kube-apiserver uses for a kind:
 *
 * - core group → `io.k8s.api.core.v1.<Kind>`;
 * - Kubernetes groups (`*.k8s.io` or dot-less like `apps`) → `io.k8s.api.<first label>.<version>.<Kind>`
 *   (`rbac.authorization.k8s.io` → `io.k8s.api.rbac.v1`), with the few packages living elsewhere
 *   (`apiextensions.k8s.io` → `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1`, …);
 * - any other group (CRD-style, e.g. kcp's) → reversed group: `core.kcp.io` →
 *   `io.kcp.core.v1alpha1.<Kind>`, the name kube's CRD OpenAPI builder gives custom resources.
 */
export function definitionName(group: string, version: string, kind: string): string {
  const special = SPECIAL_GROUP_PREFIXES[group];
  if (special !== undefined) return `${special}.${version}.${kind}`;
  if (!group.includes('.') || group.endsWith('.k8s.io')) {
    return `io.k8s.api.${group.split('.')[0]}.${version}.${kind}`;
  }
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

/**
 * Whether a group is served by Kubernetes' own (compiled-in) API types — the core group, dot-less
 * groups and `*.k8s.io` — rather than by CRD-style schemas. Built-in types accept strategic merge
 * patch; custom resources do not.
 */
export function isKubernetesGroup(group: string): boolean {
  return group === '' || !group.includes('.') || group.endsWith('.k8s.io');
}
