/**
 * Admission of apis.kcp.io resources, with kcp's rules (pkg/admission/apibinding,
 * apibindingfinalizer, apiexport, apiexportendpointslice, apiresourceschema):
 * - an APIBinding (and an APIExportEndpointSlice) may refer to an export only when its creator
 *   is allowed the `bind` verb on that APIExport in the export's workspace (a SubjectAccessReview
 *   there, on the export's shard when that is another one); the binding gets the
 *   `internal.apis.kcp.io/export` label and the finalizer that cleans up its objects;
 * - an APIResourceSchema is named `<prefix>.<plural>.<group>`, is a valid CRD spec, and never
 *   changes;
 * - a CRD may not take a group/resource a binding of its workspace serves;
 * - an APIExport's resources name their schemas consistently, and its permission claims name
 *   resources that are not built in by their identity hash.
 */
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { AdmissionAttributes } from '../admission/plugins.js';
import type { KcpStrategies } from '../apis/kcp/index.js';
import type { AdmissionPlugin } from '../admission/plugins.js';
import type { UserInfo } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { boundResourcesOf, type APICatalog, type ExportReference } from './catalog.js';
import { base62Sha224 } from './identity.js';
import { BINDINGS_GR, validateExportResources, validateSchemaName, validateSchemaSpec } from './schemas.js';

/** Finalizer of APIBindings: their bound objects are deleted before they go (kcp's name). */
export const APIBINDING_FINALIZER = 'apis.kcp.io/apibinding-finalizer';
/** Label of an APIBinding naming its export: Base62(SHA-224("<export cluster>:<export name>")). */
export const EXPORT_LABEL = 'internal.apis.kcp.io/export';

/**
 * Admission of CRDs (kcp's `crdnooverlappinggvr`): a CRD may not be created for a group/resource
 * an APIBinding of the workspace serves. 403 Forbidden naming the binding.
 */
export function crdOverlapAdmission(cache: WatchCache): (obj: KubeObject, attrs: AdmissionAttributes) => void {
  return (crd, attrs) => {
    if (attrs.operation !== 'create' || attrs.subresource) return;
    const spec = (crd.spec ?? {}) as { group?: string; names?: { plural?: string } };
    for (const e of cache.list(BINDINGS_GR, attrs.cluster)) {
      if (!boundResourcesOf(e).some((b) => b.group === spec.group && b.resource === spec.names?.plural)) continue;
      throw new StatusError(403, 'Forbidden',
        `customresourcedefinitions.apiextensions.k8s.io "${crd.metadata.name}" is forbidden: cannot create "${crd.metadata.name}" CustomResourceDefinition with "${spec.group}" group and "${spec.names?.plural}" resource because it overlaps with a bound CustomResourceDefinition for "${e.name}" APIBinding in "${attrs.cluster}" logical cluster`,
        { name: crd.metadata.name, group: 'apiextensions.k8s.io', kind: 'customresourcedefinitions' });
    }
  };
}

/** The value of {@link EXPORT_LABEL} for an export. */
export function exportLabelValue(exportCluster: string, exportName: string): string {
  return base62Sha224(`${exportCluster}:${exportName}`);
}

/**
 * Whether `user` may `verb` the APIExport `name` (optionally its `subresource`) in logical
 * cluster `cluster`, wherever that cluster lives. May reject with a 503 StatusError when the
 * export's shard cannot be asked.
 */
export type ExportAuthorizer = (user: UserInfo, cluster: string, verb: string, name: string, subresource?: string) => boolean | Promise<boolean>;

type Obj = Record<string, unknown>;
const referenceOf = (o: KubeObject, field: 'reference' | 'export'): ExportReference | undefined => {
  const spec = (o.spec ?? {}) as Obj;
  const ref = field === 'reference' ? (spec.reference as Obj | undefined)?.export as Obj | undefined : spec.export as Obj | undefined;
  return ref?.name ? { name: String(ref.name), ...(ref.path ? { path: String(ref.path) } : {}) } : undefined;
};
const display = (ref: ExportReference) => (ref.path ? `${ref.path}:${ref.name}` : ref.name);

/** Admission plugins and strategy additions of apis.kcp.io resources (see the module comment). */
export function apisAdmission(catalog: APICatalog, mayBind: ExportAuthorizer, isBuiltin: (group: string, resource: string) => boolean): { plugins: AdmissionPlugin[]; strategies: KcpStrategies } {
  /** kcp's APIExport admission: a claim names a resource that is not built in by its identity. */
  const claimCauses = (exp: KubeObject): StatusCause[] => {
    const claims = ((exp.spec ?? {}) as { permissionClaims?: { group?: string; resource?: string; identityHash?: string }[] }).permissionClaims ?? [];
    return claims.flatMap((c, i) => (c.identityHash || isBuiltin(c.group ?? '', c.resource ?? '') || c.group === 'apis.kcp.io') ? []
      : [{ reason: 'FieldValueInvalid', field: `spec.permissionClaims[${i}].identityHash`, message: 'Invalid value: "": identityHash is required for API types that are not built-in' }]);
  };
  /** Throws 403 unless the caller may bind the export `ref` names. Returns its logical cluster. */
  const checkBind = async (obj: KubeObject, ref: ExportReference, attrs: AdmissionAttributes, what: 'APIBinding' | 'APIExportEndpointSlice'): Promise<string> => {
    const verb = attrs.operation;
    // kube's admission Forbidden: `<resource>.<group> "<name>" is forbidden: <reason>`.
    const resource = what === 'APIBinding' ? 'apibindings' : 'apiexportendpointslices';
    const name = obj.metadata.name ?? '';
    const refused = () => new StatusError(403, 'Forbidden', `${resource}.apis.kcp.io "${name}" is forbidden: unable to ${verb} ${what}: no permission to bind to export ${display(ref)}`,
      { name, group: 'apis.kcp.io', kind: resource });
    const cluster = catalog.exportCluster(attrs.cluster, ref);
    if (!cluster) throw refused();
    if (!(await mayBind(attrs.user, cluster, 'bind', ref.name))) throw refused();
    return cluster;
  };

  const plugins: AdmissionPlugin[] = [{
    name: 'apis.kcp.io/APIBinding', resources: ['apis.kcp.io/apibindings'],
    async admit(obj, attrs) {
      if (attrs.subresource) return;
      const ref = referenceOf(obj, 'reference');
      if (!ref) return; // the schema requires it: 422 follows
      if (attrs.operation === 'create') {
        const cluster = await checkBind(obj, ref, attrs, 'APIBinding');
        obj.metadata.labels = { ...(obj.metadata.labels ?? {}), [EXPORT_LABEL]: exportLabelValue(cluster, ref.name) };
      } else if (obj.metadata.labels?.[EXPORT_LABEL] !== attrs.old!.metadata.labels?.[EXPORT_LABEL]) {
        // The label is the server's: kept as it was. (A changed reference is refused by the
        // schema's rule "APIExport reference must not be changed".)
        const labels = { ...(obj.metadata.labels ?? {}) };
        const old = attrs.old!.metadata.labels?.[EXPORT_LABEL];
        if (old === undefined) delete labels[EXPORT_LABEL]; else labels[EXPORT_LABEL] = old;
        obj.metadata.labels = labels;
      }
      const finalizers = obj.metadata.finalizers ?? [];
      if (!obj.metadata.deletionTimestamp && !finalizers.includes(APIBINDING_FINALIZER)) obj.metadata.finalizers = [...finalizers, APIBINDING_FINALIZER];
    },
  }, {
    name: 'apis.kcp.io/APIExportEndpointSlice', resources: ['apis.kcp.io/apiexportendpointslices'],
    async admit(obj, attrs) {
      if (attrs.subresource) return;
      const ref = referenceOf(obj, 'export');
      if (!ref) return;
      if (attrs.operation === 'update' && JSON.stringify(referenceOf(attrs.old!, 'export')) === JSON.stringify(ref)) return;
      await checkBind(obj, ref, attrs, 'APIExportEndpointSlice');
    },
  }];

  const strategies: KcpStrategies = {
    apiresourceschemas: {
      validate: (o) => [...validateSchemaName(o), ...validateSchemaSpec(o)],
      validateUpdate: (o, old): StatusCause[] => JSON.stringify(o.spec) === JSON.stringify(old.spec) ? []
        : [{ reason: 'FieldValueForbidden', field: 'spec', message: 'Forbidden: APIResourceSchema is immutable' }],
    },
    apiexports: {
      validate: (o) => [...validateExportResources(o), ...claimCauses(o)],
      validateUpdate: (o) => [...validateExportResources(o), ...claimCauses(o)],
    },
  };
  return { plugins, strategies };
}
