/**
 * kcp's own resources — tenancy.kcp.io Workspace and WorkspaceType, core.kcp.io LogicalCluster
 * and Shard — served in every logical cluster from kcp's CRD schemas (crds.ts) through the same
 * custom-resource machinery as user CRDs (validation, defaulting, CEL rules, printer columns,
 * `/status`), plus the admission a resource needs (Workspace: tenancy/admission.ts).
 */
import type { AdmissionAttributes, ResourceDescriptor } from '../types.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { descriptorsForCRD } from '../../apiextensions/customresources.js';
import { KCP_CRDS } from './crds.js';

/** Admission hooks of kcp resources, by plural. */
export type KcpAdmission = Partial<Record<'workspaces' | 'workspacetypes' | 'logicalclusters' | 'shards', (obj: KubeObject, attrs: AdmissionAttributes) => void | Promise<void>>>;

/** The descriptors of kcp's resources (one per served version), with the given admission hooks. */
export function kcpResources(admission: KcpAdmission = {}): ResourceDescriptor[] {
  const out: ResourceDescriptor[] = [];
  for (const crd of KCP_CRDS) {
    // A stable identity for the compiled-schema cache of descriptorsForCRD.
    const system = { ...crd, metadata: { ...crd.metadata, uid: `kcp-system-${crd.metadata.name}`, resourceVersion: '1' } };
    for (const d of descriptorsForCRD(system)) {
      const admit = admission[d.plural as keyof KcpAdmission];
      out.push(admit ? { ...d, strategy: { ...d.strategy, admit } } : d);
    }
  }
  return out;
}
