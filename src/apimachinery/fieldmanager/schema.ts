/**
 * Convenience `SchemaResolver`s for built-in kinds and custom resources.
 *
 * kube-apiserver builds the SMD type of a custom resource from its CRD schema with the standard
 * `ObjectMeta` (and `apiVersion`/`kind`) spliced in (apiextensions-apiserver
 * pkg/controller/openapi/builder), so `metadata.labels` is a granular map, `metadata.finalizers`
 * a set and `metadata.ownerReferences` a list-map keyed by `uid` there as for built-in kinds.
 */
import { BUILTIN_SCHEMAS, definitionName } from '../../apis/schemas/index.js';
import type { SchemaResolver } from './typed.js';

const OBJECT_META_REF = { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' };

/** The resolver of a built-in kind (undefined when kcp-ts has no schema for it). */
export function builtinSchemaResolver(group: string, version: string, kind: string): SchemaResolver | undefined {
  const root = BUILTIN_SCHEMAS[definitionName(group, version, kind)];
  return root ? { root, definitions: BUILTIN_SCHEMAS } : undefined;
}

/** The resolver of a custom resource from its CRD version's `openAPIV3Schema`. */
export function crdSchemaResolver(openAPIV3Schema: object | undefined): SchemaResolver {
  const s = (openAPIV3Schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as Record<string, unknown>;
  const props = (s.properties && typeof s.properties === 'object' ? s.properties : {}) as Record<string, unknown>;
  const root = {
    ...s,
    type: 'object',
    properties: { ...props, apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: OBJECT_META_REF },
  };
  return { root, definitions: BUILTIN_SCHEMAS };
}

/**
 * The resolver of a resource: its CRD (or APIResourceSchema) schema when it has one, else its
 * built-in kind's (undefined when kcp-ts has no schema for it).
 */
export function resourceSchemaResolver(r: { group: string; version: string; kind: string; schema?: object }): SchemaResolver | undefined {
  return r.schema ? crdSchemaResolver(r.schema) : builtinSchemaResolver(r.group, r.version, r.kind);
}
