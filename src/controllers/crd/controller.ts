/**
 * CustomResourceDefinition controller, modelled on apiextensions-apiserver's naming, establishing
 * and finalizing controllers (pkg/controller/status, establish, finalizer):
 * - computes `status.acceptedNames` and `NamesAccepted` against the other CRDs of the same group
 *   in the logical cluster, then marks the CRD `Established` so its resources are served;
 * - on deletion, deletes every custom resource of the CRD, then removes the
 *   `customresourcecleanup.apiextensions.k8s.io` finalizer so the CRD goes.
 *
 * Keys are `<cluster>|<crd name>`.
 */
import type { KubeObject } from '../../apimachinery/meta.js';
import { setCondition, type Condition } from '../../apimachinery/conditions.js';
import { acceptNames } from '../../apiextensions/crdvalidation.js';
import { CRD_GR } from '../../apiextensions/customresources.js';
import type { RequestScope, Store } from '../../registry/store.js';
import type { WatchCache } from '../../storage/watchcache.js';
import { deleteAll, getIfExists, type ReconcileResult } from '../runtime.js';
import { splitKey } from '../namespace/controller.js';
import { asObj } from '../../apimachinery/objects.js';

/** Finalizer that holds a CRD until its custom resources are deleted. */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

/** Dependencies, as plain values and functions. */
export interface CRDReconcilerDeps {
  crds: Store;
  cache: WatchCache;
  /** A store over the custom resources of a CRD (any version: they share storage), or undefined. */
  customResources: (crd: KubeObject) => Store | undefined;
  scope: (cluster: string, namespace?: string) => RequestScope;
}

type Obj = Record<string, unknown>;

/** Reconciles one CRD. */
export function crdReconciler(deps: CRDReconcilerDeps) {
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const crd = await getIfExists(deps.crds, deps.scope(cluster), name);
    if (!crd) return;
    if (crd.metadata.deletionTimestamp) return finalize(deps, cluster, crd);

    const spec = asObj(crd.spec);
    const others = deps.cache.list(CRD_GR, cluster)
      .filter((e) => e.name !== name)
      .map((e) => JSON.parse(e.json) as KubeObject)
      .filter((o) => asObj(o.spec).group === spec.group);
    const { acceptedNames, condition } = acceptNames(crd as unknown as Obj, others as unknown as Obj[]);
    const status = asObj(crd.status);
    let conds = (Array.isArray(status.conditions) ? status.conditions : []) as Condition[];
    conds = setCondition(conds, condition);
    if (condition.status === 'True') {
      conds = setCondition(conds, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' });
    } else if (!conds.some((c) => c.type === 'Established' && c.status === 'True')) {
      conds = setCondition(conds, { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' });
    }
    const storedVersions = Array.isArray(status.storedVersions) ? status.storedVersions as string[] : [];
    const storage = (Array.isArray(spec.versions) ? spec.versions as Obj[] : []).find((v) => v.storage === true)?.name;
    const nextStatus = {
      ...status,
      conditions: conds,
      acceptedNames: acceptedNames ?? status.acceptedNames ?? {},
      storedVersions: storage && !storedVersions.includes(String(storage)) ? [...storedVersions, String(storage)] : storedVersions,
    };
    if (JSON.stringify(nextStatus) === JSON.stringify(status)) return;
    await deps.crds.update(deps.scope(cluster), name, { ...crd, status: nextStatus }, 'status');
  };
}

async function finalize(deps: CRDReconcilerDeps, cluster: string, crd: KubeObject): Promise<ReconcileResult | void> {
  const finalizers = crd.metadata.finalizers ?? [];
  if (!finalizers.includes(CRD_CLEANUP_FINALIZER)) return;
  // The CRD no longer serves its resources while terminating; clean up through its storage.
  const store = deps.customResources(crd);
  const remaining = store ? await deleteAll(store, deps.scope(cluster)) : 0;
  if (remaining > 0) return { requeueAfterMs: 1000 };
  const next = { ...crd, metadata: { ...crd.metadata, finalizers: finalizers.filter((f) => f !== CRD_CLEANUP_FINALIZER) } };
  await deps.crds.update(deps.scope(cluster), String(crd.metadata.name), next);
}
