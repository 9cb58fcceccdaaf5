/**
 * OpenAPI v3 schemas of k8s.io/apimachinery/pkg/apis/meta/v1 (and `resource.Quantity`), under
 * kube's definition names. Field names, types, required lists and list/map extensions follow the
 * Go types (json tags, `+optional`, `+listType`, `+patchStrategy`, `+structType`).
 */
import {
  type Schema,
  META,
  MICRO_TIME,
  QUANTITY,
  TIME,
  apiVersionProp,
  arrayOf,
  bool,
  int32,
  int64,
  kindProp,
  listMetaProp,
  object,
  ref,
  str,
  stringList,
  stringMap,
  gvkExtension,
} from './helpers.js';

/**
 * ObjectMeta with the field descriptions k8s.io/apimachinery publishes (its generated OpenAPI,
 * `schema_pkg_apis_meta_v1_ObjectMeta`): `kubectl explain <kind>.metadata` shows them, and
 * Kubernetes' CustomResourcePublishOpenAPI conformance spec matches that wording.
 */
const objectMeta = object(
  'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
  {
    annotations: stringMap("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
    creationTimestamp: ref(TIME, "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
    deletionGracePeriodSeconds: int64("Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only."),
    deletionTimestamp: ref(TIME, "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will react by sending a graceful termination signal to the containers in the pod. After that 30 seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and after cleanup, remove the pod from the API. In the presence of network partitions, this object may still exist after this timestamp, until an administrator or automated process can determine the resource is fully terminated. If not set, graceful deletion of the object has not been requested.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
    finalizers: stringList("Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list.", { listType: 'set', patchStrategy: 'merge' }),
    generateName: str("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
    generation: int64("A sequence number representing a specific generation of the desired state. Populated by the system. Read-only."),
    labels: stringMap("Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
    managedFields: arrayOf(ref(`${META}.ManagedFieldsEntry`), "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set or understand this field. A workflow can be the user's name, a controller's name, or the name of a specific apply path like \"ci-cd\". The set of fields is always in the version that the workflow used when modifying the object.", { listType: 'atomic' }),
    name: str("Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
    namespace: str("Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the \"default\" namespace, but \"default\" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
    ownerReferences: arrayOf(ref(`${META}.OwnerReference`), "List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.", {
      listType: 'map',
      mapKeys: ['uid'],
      patchStrategy: 'merge',
      patchMergeKey: 'uid',
    }),
    resourceVersion: str("An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
    selfLink: str("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
    uid: str("UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
  },
);

const listMeta = object('Metadata of list responses.', {
  continue: str('Token to pass as `continue` to fetch the next page of a paginated list; empty on the last page.'),
  remainingItemCount: int64('Approximate number of items after this page when paginating; may be absent.'),
  resourceVersion: str('Resource version of the list, usable to start a watch from this point. Opaque.'),
  selfLink: str('Deprecated and no longer populated.'),
});

const ownerReference = object(
  'Identifies an owning object. The owner must be in the same namespace as the dependent, or cluster-scoped.',
  {
    apiVersion: str('API version of the owner.'),
    blockOwnerDeletion: bool(
      'If true, foreground deletion of the owner waits until this dependent is removed.',
    ),
    controller: bool('If true, this owner is the managing controller. At most one owner may be the controller.'),
    kind: str('Kind of the owner.'),
    name: str('Name of the owner.'),
    uid: str('UID of the owner.'),
  },
  { required: ['apiVersion', 'kind', 'name', 'uid'], atomic: true },
);

const managedFieldsEntry = object(
  'One field manager\'s ownership record: the workflow, API version and set of fields it manages.',
  {
    apiVersion: str('Version of the resource the fieldset applies to.'),
    fieldsType: str('Format of the fields description; currently always `FieldsV1`.'),
    fieldsV1: ref(`${META}.FieldsV1`, 'The set of owned fields, in FieldsV1 format.'),
    manager: str('Identifier of the workflow managing these fields.'),
    operation: str('Kind of operation that produced this entry: `Apply` or `Update`.'),
    subresource: str('Subresource the object was written through, empty for the main resource.'),
    time: ref(TIME, 'When the entry was last changed.'),
  },
);

const fieldsV1: Schema = {
  description: 'FieldsV1 stores a set of fields in the structured-merge-diff trie format (`f:<name>`, `k:<keys>`, `v:<value>`, `i:<index>`).',
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
};

const time: Schema = {
  description: 'A timestamp serialized as an RFC 3339 string in UTC, second precision.',
  type: 'string',
  format: 'date-time',
};

const microTime: Schema = {
  description: 'A timestamp serialized as an RFC 3339 string in UTC with microsecond precision.',
  type: 'string',
  format: 'date-time',
};

const labelSelector = object(
  'A label query. `matchLabels` and `matchExpressions` are ANDed; an empty selector matches everything, a null one nothing.',
  {
    matchExpressions: arrayOf(ref(`${META}.LabelSelectorRequirement`), 'Label requirements, all of which must match.', {
      listType: 'atomic',
    }),
    matchLabels: stringMap('Exact key/value pairs that must all be present.'),
  },
  { atomic: true },
);

const labelSelectorRequirement = object(
  'A selector requirement: a label key, an operator and (for In/NotIn) values.',
  {
    key: str('The label key the requirement applies to.'),
    operator: str('Relation between key and values: In, NotIn, Exists or DoesNotExist.'),
    values: stringList('Values for In/NotIn (non-empty); must be empty for Exists/DoesNotExist.'),
  },
  { required: ['key', 'operator'] },
);

const fieldSelectorRequirement = object(
  'A field selector requirement: a field path, an operator and values.',
  {
    key: str('The field path the requirement applies to.'),
    operator: str('Relation between key and values: In, NotIn, Exists or DoesNotExist.'),
    values: stringList('Values for In/NotIn (non-empty); must be empty for Exists/DoesNotExist.'),
  },
  { required: ['key', 'operator'] },
);

const status: Schema = object('Result of an operation that does not return an object, most often an error.', {
  apiVersion: apiVersionProp(),
  code: int32('HTTP status code of the response; 0 if not set.'),
  details: ref(`${META}.StatusDetails`, 'Additional, reason-specific data about the failure.'),
  kind: kindProp(),
  message: str('Human-readable description of the result.'),
  metadata: listMetaProp(),
  reason: str('Machine-readable reason (e.g. NotFound, AlreadyExists, Invalid). Empty when unknown.'),
  status: str('`Success` or `Failure`.'),
});
status['x-kubernetes-group-version-kind'] = gvkExtension('', 'v1', 'Status');

const statusDetails = object('Extra data about a failed operation: the object involved and the individual causes.', {
  causes: arrayOf(ref(`${META}.StatusCause`), 'Individual causes of the failure, e.g. one per invalid field.', {
    listType: 'atomic',
  }),
  group: str('Group of the object the failure is about.'),
  kind: str('Kind of the object the failure is about.'),
  name: str('Name of the object the failure is about.'),
  retryAfterSeconds: int32('Seconds the client should wait before retrying, when the failure is temporary.'),
  uid: str('UID of the object the failure is about.'),
});

const statusCause = object('One cause of a failure, usually tied to a field.', {
  field: str('Path of the field that caused the failure, e.g. `spec.rules[0].verbs`.'),
  message: str('Human-readable description of the cause.'),
  reason: str('Machine-readable cause, e.g. FieldValueRequired or FieldValueInvalid.'),
});

const deleteOptions = object('Options of a delete request.', {
  apiVersion: apiVersionProp(),
  dryRun: stringList('If `All`, the deletion is validated but not persisted.'),
  gracePeriodSeconds: int64('Seconds before the object is deleted; 0 means immediately. Defaults per kind.'),
  ignoreStoreReadErrorWithClusterBreakingPotential: bool(
    'Delete an object whose stored data cannot be read. Dangerous: skips finalizers and admission.',
  ),
  kind: kindProp(),
  orphanDependents: bool('Deprecated: use propagationPolicy. Whether dependents are orphaned.'),
  preconditions: ref(`${META}.Preconditions`, 'Conditions (uid, resourceVersion) that must hold for the deletion to proceed.'),
  propagationPolicy: str('Garbage collection of dependents: Orphan, Background or Foreground.'),
});
deleteOptions['x-kubernetes-group-version-kind'] = gvkExtension('', 'v1', 'DeleteOptions');

const preconditions = object('Conditions a write is checked against before it is carried out.', {
  resourceVersion: str('The object must have this resourceVersion.'),
  uid: str('The object must have this UID.'),
});

const patch: Schema = {
  description: 'Body of a PATCH request: a JSON patch, merge patch, strategic merge patch or apply configuration.',
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
};

const condition = object(
  'Standard condition of an object\'s status.',
  {
    lastTransitionTime: ref(TIME, 'When the condition last changed status.'),
    message: str('Human-readable details about the transition.'),
    observedGeneration: int64('metadata.generation the condition was computed from.'),
    reason: str('CamelCase machine-readable reason of the last transition.'),
    status: str('True, False or Unknown.'),
    type: str('Type of the condition, CamelCase or `<domain>/<CamelCase>`.'),
  },
  { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
);

const quantity: Schema = {
  description:
    'A fixed-point number with an optional suffix: binary SI (Ki, Mi, Gi, …), decimal SI (m, k, M, G, …) or an ' +
    'exponent (e.g. 1e3). Serialized as a string such as "500m" or "2Gi".',
  oneOf: [{ type: 'string' }, { type: 'number' }],
};

/** apimachinery schemas keyed by definition name. */
export const META_SCHEMAS: Record<string, Schema> = {
  [`${META}.Condition`]: condition,
  [`${META}.DeleteOptions`]: deleteOptions,
  [`${META}.FieldSelectorRequirement`]: fieldSelectorRequirement,
  [`${META}.FieldsV1`]: fieldsV1,
  [`${META}.LabelSelector`]: labelSelector,
  [`${META}.LabelSelectorRequirement`]: labelSelectorRequirement,
  [`${META}.ListMeta`]: listMeta,
  [`${META}.ManagedFieldsEntry`]: managedFieldsEntry,
  [MICRO_TIME]: microTime,
  [`${META}.ObjectMeta`]: objectMeta,
  [`${META}.OwnerReference`]: ownerReference,
  [`${META}.Patch`]: patch,
  [`${META}.Preconditions`]: preconditions,
  [`${META}.Status`]: status,
  [`${META}.StatusCause`]: statusCause,
  [`${META}.StatusDetails`]: statusDetails,
  [TIME]: time,
  [QUANTITY]: quantity,
};
