/**
 * kcp's own resources — tenancy.kcp.io Workspace and WorkspaceType, core.kcp.io LogicalCluster
 * and Shard, apis.kcp.io APIResourceSchema, APIExport, APIExportEndpointSlice and APIBinding —
 * served in every logical cluster from kcp's CRD schemas (crds.ts) through the same
 * custom-resource machinery as user CRDs (validation, defaulting, CEL rules, printer columns,
 * `/status`), plus what a resource needs beyond its schema: validation (apis.kcp.io:
 * apiexports/admission.ts) and, for APIExport and APIBinding, the conversion between v1alpha1 and
 * the storage version v1alpha2 (apiexports/conversion.ts). Their admission plugins (Workspace:
 * tenancy/admission.ts; apis.kcp.io: apiexports/admission.ts) are in the shard's admission chain.
 */
import type { ResourceDescriptor, ResourceStrategy } from '../types.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { descriptorsForCRD } from '../../apiextensions/customresources.js';
import { apiBindingToV1alpha1, apiBindingToV1alpha2, apiExportToV1alpha1, apiExportToV1alpha2 } from '../../apiexports/conversion.js';
import { KCP_CRDS } from './crds.js';
import { TMC_CRDS } from './tmccrds.js';
import { MIGRATION_CRDS } from './migrationcrds.js';

/** The plurals of kcp's resources. */
export type KcpPlural = 'workspaces' | 'workspacetypes' | 'logicalclusters' | 'shards' | 'apiresourceschemas' | 'apiexports' | 'apiexportendpointslices' | 'apibindings'
  | 'synctargets' | 'locations' | 'placements' | 'apiresourceimports' | 'negotiatedapiresources' | 'logicalclustermigrations';

/** Strategy hooks added to kcp resources' schema-based ones (validation beyond the schema), by plural. */
export type KcpStrategies = Partial<Record<KcpPlural, Pick<ResourceStrategy, 'validate' | 'validateUpdate'>>>;

/** Conversions of v1alpha1 to and from the storage version, by plural. */
const CONVERSIONS: Record<string, { toStorage(o: KubeObject): KubeObject; fromStorage(o: KubeObject): KubeObject }> = {
  apiexports: { toStorage: apiExportToV1alpha2, fromStorage: apiExportToV1alpha1 },
  apibindings: { toStorage: apiBindingToV1alpha2, fromStorage: apiBindingToV1alpha1 },
};

/**
 * The descriptors of kcp's resources (one per served version), with the given strategy
 * additions. `validate`/`validateUpdate` run after the schema's and add their causes.
 */
export function kcpResources(strategies: KcpStrategies = {}): ResourceDescriptor[] {
  const out: ResourceDescriptor[] = [];
  for (const crd of [...KCP_CRDS, ...TMC_CRDS, ...MIGRATION_CRDS]) {
    // A stable identity for the compiled-schema cache of descriptorsForCRD.
    const system = { ...crd, metadata: { ...crd.metadata, uid: `kcp-system-${crd.metadata.name}`, resourceVersion: '1' } };
    for (const d of descriptorsForCRD(system)) {
      const plural = d.plural as KcpPlural;
      const extra = strategies[plural];
      const strategy: ResourceStrategy = { ...d.strategy };
      if (extra?.validate) { const own = extra.validate; const schema = d.strategy!.validate!; strategy.validate = (o) => [...schema(o), ...own(o)]; }
      if (extra?.validateUpdate) { const own = extra.validateUpdate; const schema = d.strategy!.validateUpdate!; strategy.validateUpdate = (o, old) => [...schema(o, old), ...own(o, old)]; }
      const conversion = d.storage && CONVERSIONS[plural];
      out.push({ ...d, strategy, ...(conversion ? { storage: { ...d.storage!, ...conversion } } : {}) });
    }
  }
  return out;
}
