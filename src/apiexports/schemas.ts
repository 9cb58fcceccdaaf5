/**
 * APIResourceSchemas as served resources. An APIResourceSchema is a CRD spec frozen under a
 * name `<prefix>.<plural>.<group>` (kcp docs "APIs in kcp"): its versions carry the OpenAPI v3
 * schema directly (`versions[].schema`) instead of CRD's `schema.openAPIV3Schema`. Bound into a
 * workspace, it is served by the same custom-resource machinery as a CRD (validation, pruning,
 * defaulting, CEL rules, printer columns, `/status`, `/scale`, server-side apply), stored under the
 * export's identity hash.
 */
import type { StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import { descriptorsForCRD } from '../apiextensions/customresources.js';
import { applyCRDDefaults, validateCRD } from '../apiextensions/crdvalidation.js';
import { asObj } from '../apimachinery/objects.js';

type Obj = Record<string, unknown>;

/** Group/resource of APIResourceSchemas, APIExports and APIBindings in the watch cache. */
export const SCHEMAS_GR = 'apis.kcp.io/apiresourceschemas';
export const EXPORTS_GR = 'apis.kcp.io/apiexports';
export const BINDINGS_GR = 'apis.kcp.io/apibindings';
export const ENDPOINT_SLICES_GR = 'apis.kcp.io/apiexportendpointslices';

/** Single-word groups an APIResourceSchema may have (kcp's `singleSegmentGroupExceptions`). */
const SINGLE_SEGMENT_GROUP_EXCEPTIONS = new Set(['apps', 'batch', 'extensions', 'policy', 'autoscaling']);

/** The CRD an APIResourceSchema stands for (same uid and resourceVersion: compiled once). */
export function crdOfSchema(schema: KubeObject): KubeObject {
  const spec = asObj(schema.spec);
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: `${asObj(spec.names).plural}.${spec.group}`, uid: schema.metadata.uid, resourceVersion: schema.metadata.resourceVersion },
    spec: {
      group: spec.group, names: spec.names, scope: spec.scope,
      versions: (Array.isArray(spec.versions) ? spec.versions as Obj[] : []).map((v) => {
        const { schema: openAPIV3Schema, ...rest } = v;
        return { ...rest, schema: { openAPIV3Schema } };
      }),
    },
  };
}

/**
 * The descriptors (one per served version) of a schema bound from an export with identity hash
 * `identity`: objects live under `<group>/<plural>:<identity>` in the consumer's logical cluster.
 */
export function descriptorsForSchema(schema: KubeObject, identity: string): ResourceDescriptor[] {
  return descriptorsForCRD(crdOfSchema(schema)).map((d) => ({ ...d, identity }));
}

/**
 * Validates an APIResourceSchema's name against its spec: kcp requires
 * `<prefix>.<plural>.<group>` (core group: `core`), so one workspace can hold several
 * generations of a resource's schema side by side.
 */
export function validateSchemaName(schema: KubeObject): StatusCause[] {
  const spec = asObj(schema.spec);
  const plural = asObj(spec.names).plural;
  if (typeof plural !== 'string' || !plural) return []; // the schema reports the missing names
  const group = String(spec.group ?? '') || 'core';
  const suffix = `.${plural}.${group}`;
  const name = schema.metadata.name ?? '';
  if (name.endsWith(suffix) && name.length > suffix.length) return [];
  return [{ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "${name}": must be <prefix>${suffix}` }];
}

/**
 * Validates an APIResourceSchema's spec as the CRD it stands for (kcp's apiresourceschema
 * admission runs kube's CRD validation): structural schema, types, defaults, CEL rules, names,
 * versions. Causes name the schema's fields (`spec.versions[i].schema…`).
 */
export function validateSchemaSpec(schema: KubeObject): StatusCause[] {
  const crd = crdOfSchema({ ...schema, metadata: { ...schema.metadata, uid: schema.metadata.uid ?? 'new' } }) as unknown as Obj;
  applyCRDDefaults(crd);
  // kcp's group rule for schemas (pkg/admission/apiresourceschema validation.go), not a CRD's:
  // '' is the core group, and Kubernetes' single-word groups are allowed.
  const group = String(asObj(schema.spec).group ?? '');
  const kcpGroup = group === '' || SINGLE_SEGMENT_GROUP_EXCEPTIONS.has(group);
  return validateCRD(crd)
    .filter((c) => !c.field?.startsWith('metadata.'))
    .filter((c) => !(kcpGroup && c.field === 'spec.group'))
    .map((c) => ({ ...c, field: c.field?.replace(/^(spec\.versions\[\d+\]\.schema)\.openAPIV3Schema/, '$1') }));
}

/**
 * Validates an APIExport's resources (v1alpha2; v1alpha1 `latestResourceSchemas`): each names its
 * schema `<prefix>.<name>.<group>`
 * (kcp's APIExport admission "must end in ..."), and a group/resource appears once.
 */
export function validateExportResources(exp: KubeObject): StatusCause[] {
  const out: StatusCause[] = [];
  const seen = new Set<string>();
  (Array.isArray(asObj(exp.spec).latestResourceSchemas) ? asObj(exp.spec).latestResourceSchemas as unknown[] : []).forEach((name, i) => {
    if (String(name).split('.').length < 3) out.push({ reason: 'FieldValueInvalid', field: `spec.latestResourceSchemas[${i}]`, message: `Invalid value: "${String(name)}": must be <prefix>.<resource>.<group>` });
  });
  (Array.isArray(asObj(exp.spec).resources) ? asObj(exp.spec).resources as Obj[] : []).forEach((r, i) => {
    const suffix = `.${r.name}.${String(r.group ?? '') || 'core'}`;
    const schema = String(r.schema ?? '');
    if (!schema.endsWith(suffix) || schema.length === suffix.length) out.push({ reason: 'FieldValueInvalid', field: `spec.resources[${i}].schema`, message: `Invalid value: "${schema}": must end in ${suffix}` });
    const key = `${r.group ?? ''}/${r.name}`;
    if (seen.has(key)) out.push({ reason: 'FieldValueDuplicate', field: `spec.resources[${i}]`, message: `Duplicate value: "${r.name}.${r.group ?? ''}"` });
    seen.add(key);
  });
  return out;
}
