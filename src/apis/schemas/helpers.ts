/**
 * Small builders for hand-written OpenAPI v3 schemas (the `components.schemas` entries served at
 * `/openapi/v3`). They produce the same shapes kube-apiserver publishes:
 *
 * - a field that points at another definition is `{allOf: [{$ref}], description}` when it carries
 *   a description (OpenAPI 3.0 ignores siblings of a bare `$ref`), else a bare `{$ref}`;
 * - strategic-merge metadata lives on the list field itself (`x-kubernetes-patch-strategy`,
 *   `x-kubernetes-patch-merge-key`) next to `x-kubernetes-list-type` / `x-kubernetes-list-map-keys`;
 * - `+structType=atomic` types carry `x-kubernetes-map-type: atomic`.
 *
 * Every builder returns a fresh plain object, so callers may mutate results freely.
 */

/** A schema object (plain JSON). */
export type Schema = Record<string, unknown>;

/** Prefix of every `$ref` in an OpenAPI v3 document. */
export const V3_REF_PREFIX = '#/components/schemas/';

/** Definition names of the apimachinery types every resource refers to. */
export const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
export const OBJECT_META = `${META}.ObjectMeta`;
export const LIST_META = `${META}.ListMeta`;
export const TIME = `${META}.Time`;
export const MICRO_TIME = `${META}.MicroTime`;
export const LABEL_SELECTOR = `${META}.LabelSelector`;
export const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

/** Adds `description` to a schema when given. */
function described(s: Schema, description?: string): Schema {
  if (description !== undefined) s.description = description;
  return s;
}

/** A field referring to definition `name` (wrapped in `allOf` when it has a description). */
export function ref(name: string, description?: string): Schema {
  if (description === undefined) return { $ref: V3_REF_PREFIX + name };
  return { allOf: [{ $ref: V3_REF_PREFIX + name }], description };
}

/** A string field. */
export function str(description?: string, extra: Schema = {}): Schema {
  return described({ type: 'string', ...extra }, description);
}

/** A string field restricted to `values` (kube publishes `+enum` types this way). */
export function strEnum(values: string[], description?: string): Schema {
  return described({ type: 'string', enum: [...values] }, description);
}

/** A boolean field. */
export function bool(description?: string): Schema {
  return described({ type: 'boolean' }, description);
}

/** A 32-bit integer field. */
export function int32(description?: string): Schema {
  return described({ type: 'integer', format: 'int32' }, description);
}

/** A 64-bit integer field. */
export function int64(description?: string): Schema {
  return described({ type: 'integer', format: 'int64' }, description);
}

/** A floating point field. */
export function double(description?: string): Schema {
  return described({ type: 'number', format: 'double' }, description);
}

/** A base64 `[]byte` field. */
export function bytes(description?: string): Schema {
  return described({ type: 'string', format: 'byte' }, description);
}

/** `map[string]string`. */
export function stringMap(description?: string): Schema {
  return described({ type: 'object', additionalProperties: { type: 'string' } }, description);
}

/** `map[string]<value schema>`. */
export function mapOf(value: Schema, description?: string): Schema {
  return described({ type: 'object', additionalProperties: value }, description);
}

/** Options of a list field. */
export interface ListOptions {
  /** `x-kubernetes-list-type`: `atomic`, `set` or `map`. */
  listType?: 'atomic' | 'set' | 'map';
  /** `x-kubernetes-list-map-keys` (with listType `map`). */
  mapKeys?: string[];
  /** `x-kubernetes-patch-strategy` (e.g. `merge`). */
  patchStrategy?: string;
  /** `x-kubernetes-patch-merge-key`. */
  patchMergeKey?: string;
}

/** A list field with `items` and the list / strategic-merge extensions. */
export function arrayOf(items: Schema, description?: string, opts: ListOptions = {}): Schema {
  const s: Schema = { type: 'array', items };
  described(s, description);
  if (opts.listType) s['x-kubernetes-list-type'] = opts.listType;
  if (opts.mapKeys) s['x-kubernetes-list-map-keys'] = [...opts.mapKeys];
  if (opts.patchMergeKey) s['x-kubernetes-patch-merge-key'] = opts.patchMergeKey;
  if (opts.patchStrategy) s['x-kubernetes-patch-strategy'] = opts.patchStrategy;
  return s;
}

/** `[]string` with a list type (kube marks most string lists `atomic`). */
export function stringList(description?: string, opts: ListOptions = { listType: 'atomic' }): Schema {
  return arrayOf({ type: 'string' }, description, opts);
}

/** Options of an object (struct) definition. */
export interface ObjectOptions {
  required?: string[];
  /** `+structType=atomic` → `x-kubernetes-map-type: atomic`. */
  atomic?: boolean;
  /** Extra keys merged into the schema (e.g. `x-kubernetes-preserve-unknown-fields`). */
  extra?: Schema;
}

/** A struct definition: `type: object` with `properties` (sorted by name, as kube publishes). */
export function object(description: string, properties: Record<string, Schema>, opts: ObjectOptions = {}): Schema {
  const sorted: Record<string, Schema> = {};
  for (const k of Object.keys(properties).sort()) sorted[k] = properties[k]!;
  const s: Schema = { description, type: 'object', properties: sorted };
  if (opts.required && opts.required.length) s.required = [...opts.required];
  if (opts.atomic) s['x-kubernetes-map-type'] = 'atomic';
  if (opts.extra) Object.assign(s, opts.extra);
  return s;
}

/**
 * Descriptions kube publishes for the type and object metadata of every kind — built-in ones
 * (k8s.io/api's generated OpenAPI inlines TypeMeta) and custom resources alike (apiextensions-apiserver
 * pkg/controller/openapi/builder/builder.go: addTypeMetaProperties copies TypeMeta's `apiVersion` and
 * `kind` from k8s.io/apimachinery's OpenAPI; `metadata` and list `metadata` take
 * metav1beta1.PartialObjectMetadata(List)'s). `kubectl explain` shows them, and Kubernetes'
 * CustomResourcePublishOpenAPI conformance spec matches this exact wording, so it is kube's verbatim.
 */
export const TYPE_META_DESCRIPTIONS = {
  apiVersion:
    'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized ' +
    'schemas to the latest internal value, and may reject unrecognized values. More info: ' +
    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
  kind:
    'Kind is a string value representing the REST resource this object represents. Servers may infer this from the ' +
    'endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: ' +
    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
  objectMetadata:
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
  listMetadata:
    'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
  /** `apiVersion` of an `x-kubernetes-embedded-resource` object (builder.go addEmbeddedProperties). */
  embeddedApiVersion:
    'apiVersion defines the versioned schema of this representation of an object. More info: ' +
    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
  /** `kind` of an `x-kubernetes-embedded-resource` object (builder.go addEmbeddedProperties). */
  embeddedKind:
    'kind is a string value representing the type of this object. In CamelCase. More info: ' +
    'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
} as const;

/** The `apiVersion` property of every top-level kind (TypeMeta's, {@link TYPE_META_DESCRIPTIONS}). */
export function apiVersionProp(): Schema {
  return str(TYPE_META_DESCRIPTIONS.apiVersion);
}

/** The `kind` property of every top-level kind (TypeMeta's, {@link TYPE_META_DESCRIPTIONS}). */
export function kindProp(): Schema {
  return str(TYPE_META_DESCRIPTIONS.kind);
}

/** The standard `metadata` property of a top-level kind. */
export function objectMetaProp(): Schema {
  return ref(OBJECT_META, TYPE_META_DESCRIPTIONS.objectMetadata);
}

/** The standard `metadata` property of a list kind. */
export function listMetaProp(): Schema {
  return ref(LIST_META, TYPE_META_DESCRIPTIONS.listMetadata);
}

/** The `x-kubernetes-group-version-kind` extension value of a kind schema. */
export function gvkExtension(group: string, version: string, kind: string): Array<Record<string, string>> {
  return [{ group, kind, version }];
}

/**
 * A top-level kind: `apiVersion`, `kind`, `metadata` plus `fields`, tagged with its GVK.
 * `required` lists required fields (kube rarely requires `metadata`).
 */
export function kindSchema(
  group: string,
  version: string,
  kind: string,
  description: string,
  fields: Record<string, Schema>,
  opts: ObjectOptions = {},
): Schema {
  const s = object(description, { apiVersion: apiVersionProp(), kind: kindProp(), metadata: objectMetaProp(), ...fields }, opts);
  s['x-kubernetes-group-version-kind'] = gvkExtension(group, version, kind);
  return s;
}

/**
 * The `<Kind>List` schema of a kind: `items` (required) of the kind's definition plus list
 * metadata, tagged with the list GVK — the shape kube publishes for every list type.
 */
export function listSchema(group: string, version: string, listKind: string, kind: string, itemDefinition: string): Schema {
  const s = object(
    `${listKind} is a list of ${kind} objects.`,
    {
      apiVersion: apiVersionProp(),
      items: arrayOf(ref(itemDefinition), `The ${kind} objects in the list.`),
      kind: kindProp(),
      metadata: listMetaProp(),
    },
    { required: ['items'] },
  );
  s['x-kubernetes-group-version-kind'] = gvkExtension(group, version, listKind);
  return s;
}
