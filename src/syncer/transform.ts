/**
 * What the syncer writes downstream for an upstream object, as kcp's spec syncer
 * (contrib-tmc pkg/syncer/spec spec_process.go `applyToDownstream`, `getTransformedName`).
 */
import * as jsonPatch from 'rfc6902';
import type { KubeObject } from '../apimachinery/meta.js';
import { RESOURCE_STATE_LABEL_PREFIX, SPEC_DIFF_ANNOTATION_PREFIX, STATUS_ANNOTATION_PREFIX } from '../workload/keys.js';
import { DOWNSTREAM_CLUSTER_LABEL, NAMESPACE_LOCATOR_ANNOTATION, locatorJSON, type NamespaceLocator } from './names.js';

/** The annotation of an object's logical cluster (dropped downstream). */
const CLUSTER_ANNOTATION = 'kcp.io/cluster';

/** Secrets of this type are not synced: a service account's token is only valid where it was issued. */
export const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';

/** Whether an upstream object goes downstream at all: not a service-account token Secret (kcp syncs none; the downstream cluster issues its own). */
export function isSyncable(resource: { group: string; resource: string }, obj: KubeObject): boolean {
  return !(resource.group === '' && resource.resource === 'secrets' && (obj as { type?: string }).type === SERVICE_ACCOUNT_TOKEN_TYPE);
}

/**
 * The downstream name of an upstream object (kcp `getTransformedName`): the workspace's
 * `kube-root-ca.crt` ConfigMap becomes `kcp-root-ca.crt` (the downstream namespace has its own),
 * anything else keeps its name.
 */
export function downstreamName(resource: { group: string; resource: string }, name: string): string {
  if (resource.group === '' && resource.resource === 'configmaps' && name === 'kube-root-ca.crt') return 'kcp-root-ca.crt';
  return name;
}

/** The upstream name of a downstream object (kcp `GetUpstreamResourceName`). */
export function upstreamName(resource: { group: string; resource: string }, name: string): string {
  if (resource.group === '' && resource.resource === 'configmaps' && name === 'kcp-root-ca.crt') return 'kube-root-ca.crt';
  return name;
}

/** JSON Patch operations a spec diff may use: none copies, so the patched spec is at most the spec plus the patch. */
const SPEC_DIFF_OPS: ReadonlySet<string> = new Set(['add', 'remove', 'replace', 'move', 'test']);

/**
 * `spec` with the SyncTarget's spec diff applied (kcp spec_process.go `applyToDownstream`, advanced
 * scheduling): `patch` is the value of `experimental.spec-diff.workload.kcp.io/<key>`, a JSON Patch
 * whose root is `spec`. Returns a new spec; `spec` is not changed.
 * @throws {Error} when the patch is not a JSON array of operations, uses `copy` (refused here: a
 *   tenant's patch must not grow the copy beyond its own size), or does not apply (kcp: the object is
 *   not synced and retried)
 */
export function applySpecDiff(spec: unknown, patch: string): unknown {
  let ops: unknown;
  try { ops = JSON.parse(patch); } catch (e) { throw new Error(`invalid spec diff: ${(e as Error).message}`); }
  if (!Array.isArray(ops)) throw new Error('invalid spec diff: not a JSON Patch array');
  for (const op of ops) {
    if (!op || typeof op !== 'object' || !SPEC_DIFF_OPS.has((op as { op?: unknown }).op as string)) {
      throw new Error(`invalid spec diff: operation ${JSON.stringify((op as { op?: unknown } | null)?.op ?? null)} not allowed`);
    }
  }
  const out = structuredClone(spec);
  const results = jsonPatch.applyPatch(out, ops as jsonPatch.Operation[]);
  const failed = results.findIndex((r) => r !== null);
  if (failed >= 0) throw new Error(`spec diff operation ${failed} failed: ${(results[failed] as Error).message}`);
  return out;
}

/**
 * The object the syncer applies downstream for the syncer view `view` of an upstream object:
 * in `downstreamNamespace` ('' cluster-scoped: then annotated with the `locator`), renamed as
 * {@link downstreamName}; without what only makes sense upstream — uid, resourceVersion,
 * generation, creationTimestamp, managedFields, ownerReferences, finalizers, deletion fields,
 * the `kcp.io/cluster` and status annotations, the state label, and the status (the downstream
 * cluster's controllers write it); labelled `internal.workload.kcp.io/cluster: <key>`; its `spec`
 * patched with `experimental.spec-diff.workload.kcp.io/<key>` when the object has one
 * ({@link applySpecDiff}; throws as it does).
 */
export function toDownstream(view: KubeObject, resource: { group: string; resource: string }, key: string, downstreamNamespace: string, locator: NamespaceLocator): KubeObject {
  const out = structuredClone(view) as KubeObject & Record<string, unknown>;
  const m = out.metadata as Record<string, unknown> & KubeObject['metadata'];
  for (const f of ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'ownerReferences', 'finalizers', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink', 'generateName']) delete m[f];
  m.name = downstreamName(resource, String(view.metadata.name ?? ''));
  if (downstreamNamespace) m.namespace = downstreamNamespace; else delete m.namespace;
  const annotations = { ...(m.annotations ?? {}) };
  delete annotations[CLUSTER_ANNOTATION];
  delete annotations[STATUS_ANNOTATION_PREFIX + key];
  if (!downstreamNamespace) annotations[NAMESPACE_LOCATOR_ANNOTATION] = locatorJSON(locator);
  if (Object.keys(annotations).length) m.annotations = annotations; else delete m.annotations;
  const labels = { ...(m.labels ?? {}) };
  delete labels[RESOURCE_STATE_LABEL_PREFIX + key];
  labels[DOWNSTREAM_CLUSTER_LABEL] = key;
  m.labels = labels;
  delete out.status;
  const specDiff = view.metadata.annotations?.[SPEC_DIFF_ANNOTATION_PREFIX + key];
  if (specDiff && out.spec && typeof out.spec === 'object') out.spec = applySpecDiff(out.spec, specDiff);
  return out;
}
