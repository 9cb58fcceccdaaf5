/**
 * Server-side apply and managedFields (k8s.io/apimachinery/pkg/util/managedfields over
 * sigs.k8s.io/structured-merge-diff/v4). See manager.ts for the entry points.
 */
export { applyConfiguration, undeclaredFieldsError, updateManagedFields, updateManagedFieldsInStages, LAST_APPLIED_ANNOTATION, DEFAULT_MAX_UPDATE_MANAGERS } from './manager.js';
export type { SchemaResolver } from './typed.js';
export { FieldSet, pathString, type Path, type PathElement } from './fieldpath.js';
export { TypeResolver, undeclaredFields, toFieldSet, merge, compare, removeItems, ensureNamedFieldsAreMembers } from './typed.js';
export { builtinSchemaResolver, crdSchemaResolver, resourceSchemaResolver } from './schema.js';
