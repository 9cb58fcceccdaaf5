/**
 * The ValidatingAdmissionPolicy status controller, as kube-controller-manager's
 * (pkg/controller/validatingadmissionpolicystatus/controller.go): a policy whose
 * `metadata.generation` is newer than `status.observedGeneration` is type checked
 * (src/admission/typecheck.ts, kube's k8s.io/apiserver/pkg/admission/plugin/policy/validating/
 * typechecking.go) against the kinds its `matchConstraints` name in its logical cluster, and
 * `status.typeChecking` (`expressionWarnings`) and `status.observedGeneration` are written through
 * the status subresource — only when they changed.
 */
import type { KubeObject } from '../../apimachinery/meta.js';
import type { ClusterAPIs } from '../../apiextensions/registry.js';
import { POLICIES_GR } from '../../admission/policies.js';
import { checkPolicy, typesToCheck, type CheckedKind } from '../../admission/typecheck.js';
import { isStatus } from '../../apimachinery/errors.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { WatchCache } from '../../storage/watchcache.js';
import type { ReconcileResult } from '../runtime.js';

export interface PolicyStatusDeps {
  policies: Store;
  cache: WatchCache;
  /** The APIs a logical cluster serves (built-in, CRDs, bound). */
  apis(cluster: string): ClusterAPIs;
  scope(cluster: string): RequestScope;
}

/** The kind and schema of a resource a logical cluster serves; undefined when it does not. */
export function servedKind(apis: ClusterAPIs, group: string, version: string, resource: string): CheckedKind | undefined {
  const d = apis.store(group, version, resource)?.desc;
  return d && { group: d.group, version: d.version, kind: d.kind, schema: d.schema };
}

/** Reconciles `<cluster>|<name>` of a ValidatingAdmissionPolicy. */
export function policyStatusReconciler(deps: PolicyStatusDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const bar = key.indexOf('|');
    const cluster = key.slice(0, bar); const name = key.slice(bar + 1);
    const entry = deps.cache.getEntry(POLICIES_GR, cluster, '', name);
    if (!entry) return;
    const policy = JSON.parse(entry.json) as KubeObject & { status?: Record<string, unknown> };
    const generation = policy.metadata.generation ?? 0;
    const old = policy.status ?? {};
    // kube: `if policy.Generation <= policy.Status.ObservedGeneration { return nil }`.
    if (typeof old.observedGeneration === 'number' && generation <= old.observedGeneration) return;
    const apis = deps.apis(cluster);
    const kinds = typesToCheck(policy, (g, v, r) => servedKind(apis, g, v, r));
    const warnings = checkPolicy(policy, kinds);
    const status = { ...old, observedGeneration: generation, typeChecking: warnings.length ? { expressionWarnings: warnings } : {} };
    if (JSON.stringify(status) === JSON.stringify(old)) return;
    try {
      await deps.policies.update(deps.scope(cluster), name, { ...policy, status }, 'status');
    } catch (err) {
      // Gone, or changed meanwhile (the informer brings the new version).
      if (isStatus(err, 404, 409)) return;
      throw err;
    }
  };
}
