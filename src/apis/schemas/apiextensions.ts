/**
 * OpenAPI v3 schemas of apiextensions.k8s.io/v1 CustomResourceDefinition and its nested types,
 * following k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 (types.go and
 * types_jsonschema.go). `JSONSchemaProps` is spelled out field by field (recursing through
 * `$ref`s) so strict field validation catches typos in CRD schemas; the value-or-alternative
 * types (`JSON`, `JSONSchemaPropsOrArray`, `JSONSchemaPropsOrBool`, `JSONSchemaPropsOrStringArray`)
 * have no fixed type, as in kube, and are marked `x-kubernetes-preserve-unknown-fields`.
 */
import {
  type Schema,
  TIME,
  arrayOf,
  bool,
  bytes,
  double,
  int32,
  int64,
  kindSchema,
  mapOf,
  object,
  ref,
  str,
  stringList,
} from './helpers.js';

/** Definition-name prefix of apiextensions.k8s.io/v1 types. */
export const APIEXTENSIONS = 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1';
const GROUP = 'apiextensions.k8s.io';
const P = APIEXTENSIONS;

const crd = kindSchema(
  GROUP,
  'v1',
  'CustomResourceDefinition',
  'A CustomResourceDefinition adds a custom resource type to the API. Its name must be `<plural>.<group>`.',
  {
    spec: ref(`${P}.CustomResourceDefinitionSpec`, 'How the custom resource is served: group, names, scope and versions.'),
    status: ref(`${P}.CustomResourceDefinitionStatus`, 'Observed state of the definition.'),
  },
  { required: ['spec'] },
);

const crdSpec = object(
  'CustomResourceDefinitionSpec describes how a custom resource is served.',
  {
    conversion: ref(`${P}.CustomResourceConversion`, 'How objects are converted between versions. Defaults to None.'),
    group: str('API group of the resource, served at /apis/<group>/...; must match the part of the name after the first dot.'),
    names: ref(`${P}.CustomResourceDefinitionNames`, 'Resource and kind names of the custom resource.'),
    preserveUnknownFields: bool('Deprecated: keep unspecified fields. Must be false in apiextensions.k8s.io/v1; use x-kubernetes-preserve-unknown-fields in schemas.'),
    scope: str('Whether objects are Cluster or Namespaced.'),
    versions: arrayOf(
      ref(`${P}.CustomResourceDefinitionVersion`),
      'Served versions; exactly one must be the storage version.',
      { listType: 'atomic' },
    ),
  },
  { required: ['group', 'names', 'scope', 'versions'] },
);

const crdStatus = object('CustomResourceDefinitionStatus reports the names accepted and the conditions of a CustomResourceDefinition.', {
  acceptedNames: ref(`${P}.CustomResourceDefinitionNames`, 'Names actually being served; may differ from spec.names on conflicts.'),
  conditions: arrayOf(ref(`${P}.CustomResourceDefinitionCondition`), 'Latest observations of the definition state.', {
    listType: 'map',
    mapKeys: ['type'],
  }),
  observedGeneration: int64('metadata.generation this status reflects.'),
  storedVersions: stringList('Versions objects have ever been stored in; used for storage migration.'),
});

const crdNames = object(
  'CustomResourceDefinitionNames lists the resource and kind names of a custom resource.',
  {
    categories: stringList('Groupings the resource belongs to, e.g. `all`, for `kubectl get <category>`.'),
    kind: str('CamelCase kind of the objects.'),
    listKind: str('Kind of list objects; defaults to `<kind>List`.'),
    plural: str('Plural lower-case resource name used in URLs; must match the start of the definition name.'),
    shortNames: stringList('Short aliases usable on the command line.'),
    singular: str('Singular lower-case name; defaults to the lower-cased kind.'),
  },
  { required: ['plural', 'kind'] },
);

const crdCondition = object(
  'One observation of a CustomResourceDefinition\'s state.',
  {
    lastTransitionTime: ref(TIME, 'When the condition last changed status.'),
    message: str('Human-readable details about the transition.'),
    observedGeneration: int64('metadata.generation the condition was computed from.'),
    reason: str('CamelCase reason of the last transition.'),
    status: str('True, False or Unknown.'),
    type: str('Type of the condition, e.g. Established or NamesAccepted.'),
  },
  { required: ['type', 'status'] },
);

const crdVersion = object(
  'One version of a custom resource.',
  {
    additionalPrinterColumns: arrayOf(
      ref(`${P}.CustomResourceColumnDefinition`),
      'Extra columns shown in table output (kubectl get). If empty, only an Age column is shown.',
      { listType: 'atomic' },
    ),
    deprecated: bool('Whether this version is deprecated; requests then get a warning header.'),
    deprecationWarning: str('Custom warning returned to clients of a deprecated version.'),
    name: str('Version name, e.g. v1 or v1beta2; served at /apis/<group>/<version>/....'),
    schema: ref(`${P}.CustomResourceValidation`, 'Schema used for validation, pruning and defaulting.'),
    selectableFields: arrayOf(ref(`${P}.SelectableField`), 'Extra fields usable in field selectors.', {
      listType: 'atomic',
    }),
    served: bool('Whether this version is served by the REST API.'),
    storage: bool('Whether objects are persisted in this version. Exactly one version is the storage version.'),
    subresources: ref(`${P}.CustomResourceSubresources`, 'Subresources (status, scale) served for this version.'),
  },
  { required: ['name', 'served', 'storage'] },
);

const columnDefinition = object(
  'An extra table column of a custom resource.',
  {
    description: str('Human-readable description of the column.'),
    format: str('Optional OpenAPI format of the column, e.g. `name`.'),
    jsonPath: str('Simple JSONPath evaluated against each object to compute the cell.'),
    name: str('Column header.'),
    priority: int32('0 for columns shown by default, higher for wide output only.'),
    type: str('OpenAPI type of the column: integer, number, string, boolean or date.'),
  },
  { required: ['name', 'type', 'jsonPath'] },
);

const selectableField = object(
  'A field usable in field selectors.',
  { jsonPath: str('Simple JSONPath of the field, which must be a string, integer or boolean.') },
  { required: ['jsonPath'] },
);

const validation = object('Validation schema of a custom resource version.', {
  openAPIV3Schema: ref(`${P}.JSONSchemaProps`, 'Structural OpenAPI v3 schema of the objects.'),
});

const subresources = object('Subresources of a custom resource version.', {
  scale: ref(`${P}.CustomResourceSubresourceScale`, 'Serve /scale, for autoscalers.'),
  status: ref(`${P}.CustomResourceSubresourceStatus`, 'Serve /status; the main resource then ignores status changes.'),
});

const subresourceStatus: Schema = {
  description: 'Enables the /status subresource. Has no fields.',
  type: 'object',
};

const subresourceScale = object(
  'Where the /scale subresource finds replica counts.',
  {
    labelSelectorPath: str('JSONPath of the serialized label selector in the object, for HPA.'),
    specReplicasPath: str('JSONPath of the desired replica count, under .spec.'),
    statusReplicasPath: str('JSONPath of the observed replica count, under .status.'),
  },
  { required: ['specReplicasPath', 'statusReplicasPath'] },
);

const conversion = object(
  'CustomResourceConversion chooses the conversion strategy of a CustomResourceDefinition.',
  {
    strategy: str('None (only apiVersion changes) or Webhook.'),
    webhook: ref(`${P}.WebhookConversion`, 'Webhook configuration; required for the Webhook strategy.'),
  },
  { required: ['strategy'] },
);

const webhookConversion = object(
  'WebhookConversion configures a conversion webhook: where it is and which ConversionReview versions it accepts.',
  {
    clientConfig: ref(`${P}.WebhookClientConfig`, 'How to reach the webhook.'),
    conversionReviewVersions: stringList('ConversionReview versions the webhook understands, in preference order.'),
  },
  { required: ['conversionReviewVersions'] },
);

const webhookClientConfig = object('WebhookClientConfig holds how to connect to a webhook: a URL or an in-cluster service, and the CA bundle to trust.', {
  caBundle: bytes('PEM CA bundle used to verify the webhook\'s serving certificate.'),
  service: ref(`${P}.ServiceReference`, 'In-cluster service of the webhook.'),
  url: str('HTTPS URL of the webhook.'),
});

const serviceReference = object(
  'Reference to a Service.',
  {
    name: str('Name of the service.'),
    namespace: str('Namespace of the service.'),
    path: str('URL path requests are sent to.'),
    port: int32('Service port; defaults to 443.'),
  },
  { required: ['namespace', 'name'] },
);

function props(description: string): Schema {
  return mapOf(ref(`${P}.JSONSchemaProps`), description);
}

function propsList(description: string): Schema {
  return arrayOf(ref(`${P}.JSONSchemaProps`), description, { listType: 'atomic' });
}

const jsonSchemaProps = object('A JSON-Schema (OpenAPI v3 subset) describing a value.', {
  $ref: str('Reference to another schema (not allowed in CRD schemas).'),
  $schema: str('JSON-Schema version URL.'),
  additionalItems: ref(`${P}.JSONSchemaPropsOrBool`, 'Schema of extra array items, or a boolean.'),
  additionalProperties: ref(`${P}.JSONSchemaPropsOrBool`, 'Schema of map values, or a boolean.'),
  allOf: propsList('The value must match all of these schemas.'),
  anyOf: propsList('The value must match at least one of these schemas.'),
  default: ref(`${P}.JSON`, 'Default applied when the field is unset (structural schemas only).'),
  definitions: props('Named sub-schemas.'),
  dependencies: mapOf(ref(`${P}.JSONSchemaPropsOrStringArray`), 'Property dependencies.'),
  description: str('Human-readable description of the value.'),
  enum: arrayOf(ref(`${P}.JSON`), 'Allowed values.', { listType: 'atomic' }),
  example: ref(`${P}.JSON`, 'Example value.'),
  exclusiveMaximum: bool('Whether `maximum` itself is excluded.'),
  exclusiveMinimum: bool('Whether `minimum` itself is excluded.'),
  externalDocs: ref(`${P}.ExternalDocumentation`, 'Link to external documentation.'),
  format: str('Format of a string or number, e.g. date-time, int32, byte.'),
  id: str('Schema identifier.'),
  items: ref(`${P}.JSONSchemaPropsOrArray`, 'Schema of array items.'),
  maxItems: int64('Maximum array length.'),
  maxLength: int64('Maximum string length.'),
  maxProperties: int64('Maximum number of object properties.'),
  maximum: double('Maximum numeric value.'),
  minItems: int64('Minimum array length.'),
  minLength: int64('Minimum string length.'),
  minProperties: int64('Minimum number of object properties.'),
  minimum: double('Minimum numeric value.'),
  multipleOf: double('The number must be a multiple of this.'),
  not: ref(`${P}.JSONSchemaProps`, 'The value must not match this schema.'),
  nullable: bool('Whether null is accepted (and kept) as a value.'),
  oneOf: propsList('The value must match exactly one of these schemas.'),
  pattern: str('ECMA-262 regular expression a string must match.'),
  patternProperties: props('Schemas of properties whose name matches a pattern.'),
  properties: props('Schemas of object properties by name.'),
  required: stringList('Properties that must be present.'),
  title: str('Short title.'),
  type: str('Type of the value: object, array, string, number, integer or boolean.'),
  uniqueItems: bool('Whether array items must be unique.'),
  'x-kubernetes-embedded-resource': bool('The value is an embedded object with apiVersion, kind and metadata.'),
  'x-kubernetes-int-or-string': bool('The value may be an integer or a string.'),
  'x-kubernetes-list-map-keys': stringList('Keys identifying items of a `map` list.'),
  'x-kubernetes-list-type': str('List semantics for merges: atomic, set or map.'),
  'x-kubernetes-map-type': str('Map semantics for merges: granular or atomic.'),
  'x-kubernetes-preserve-unknown-fields': bool('Keep fields not described by the schema instead of pruning them.'),
  'x-kubernetes-validations': arrayOf(ref(`${P}.ValidationRule`), 'CEL validation rules.', {
    listType: 'map',
    mapKeys: ['rule'],
    patchStrategy: 'merge',
    patchMergeKey: 'rule',
  }),
});

const validationRule = object(
  'A CEL validation rule.',
  {
    fieldPath: str('Path of the field reported on failure, relative to the schema the rule is on.'),
    message: str('Message returned on failure.'),
    messageExpression: str('CEL expression computing the failure message.'),
    optionalOldSelf: bool('Evaluate transition rules also on create (oldSelf is then an optional).'),
    reason: str('Reason returned on failure: FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate.'),
    rule: str('The CEL expression; `self` is the value, `oldSelf` the previous one.'),
  },
  { required: ['rule'] },
);

function anyValue(description: string): Schema {
  return { description, 'x-kubernetes-preserve-unknown-fields': true };
}

const externalDocumentation = object('ExternalDocumentation points at more documentation of a schema.', {
  description: str('Description of the link.'),
  url: str('The URL.'),
});

/** apiextensions.k8s.io/v1 schemas keyed by definition name. */
export const APIEXTENSIONS_SCHEMAS: Record<string, Schema> = {
  [`${P}.CustomResourceColumnDefinition`]: columnDefinition,
  [`${P}.CustomResourceConversion`]: conversion,
  [`${P}.CustomResourceDefinition`]: crd,
  [`${P}.CustomResourceDefinitionCondition`]: crdCondition,
  [`${P}.CustomResourceDefinitionNames`]: crdNames,
  [`${P}.CustomResourceDefinitionSpec`]: crdSpec,
  [`${P}.CustomResourceDefinitionStatus`]: crdStatus,
  [`${P}.CustomResourceDefinitionVersion`]: crdVersion,
  [`${P}.CustomResourceSubresourceScale`]: subresourceScale,
  [`${P}.CustomResourceSubresourceStatus`]: subresourceStatus,
  [`${P}.CustomResourceSubresources`]: subresources,
  [`${P}.CustomResourceValidation`]: validation,
  [`${P}.ExternalDocumentation`]: externalDocumentation,
  [`${P}.JSON`]: anyValue('Any JSON value: boolean, number, string, array, object or null.'),
  [`${P}.JSONSchemaProps`]: jsonSchemaProps,
  [`${P}.JSONSchemaPropsOrArray`]: anyValue('A schema, or an array of schemas.'),
  [`${P}.JSONSchemaPropsOrBool`]: anyValue('A schema, or a boolean (true allows anything, false nothing).'),
  [`${P}.JSONSchemaPropsOrStringArray`]: anyValue('A schema, or an array of property names.'),
  [`${P}.SelectableField`]: selectableField,
  [`${P}.ServiceReference`]: serviceReference,
  [`${P}.ValidationRule`]: validationRule,
  [`${P}.WebhookClientConfig`]: webhookClientConfig,
  [`${P}.WebhookConversion`]: webhookConversion,
};
