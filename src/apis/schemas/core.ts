/**
 * OpenAPI v3 schemas of the core (`""`, v1) kinds kcp-ts serves — Namespace, ConfigMap, Secret,
 * ServiceAccount, Event, LimitRange, ResourceQuota — and their nested types, following
 * k8s.io/api/core/v1 (json tags, `+optional`, `+listType`, `+patchStrategy`, `+structType`).
 */
import {
  type Schema,
  MICRO_TIME,
  QUANTITY,
  TIME,
  arrayOf,
  bool,
  bytes,
  int32,
  kindSchema,
  mapOf,
  object,
  objectMetaProp,
  ref,
  str,
  strEnum,
  stringList,
  stringMap,
} from './helpers.js';

/** Definition-name prefix of core/v1 types. */
export const CORE = 'io.k8s.api.core.v1';

/** `ResourceList`: resource name → quantity. */
function resourceList(description: string): Schema {
  return mapOf(ref(QUANTITY), description);
}

const namespace = kindSchema(
  '',
  'v1',
  'Namespace',
  'A Namespace scopes names: most objects live in exactly one namespace.',
  {
    spec: ref(`${CORE}.NamespaceSpec`, 'Spec defines the behavior of the Namespace. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status'),
    status: ref(`${CORE}.NamespaceStatus`, 'Status describes the current status of the Namespace. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status'),
  },
);

const namespaceSpec = object('NamespaceSpec describes the attributes of a Namespace.', {
  finalizers: stringList('Finalizers that must be cleared before the namespace is removed from storage.'),
});

const namespaceStatus = object('NamespaceStatus is information about the current status of a Namespace.', {
  conditions: arrayOf(ref(`${CORE}.NamespaceCondition`), 'Latest observations of the namespace state.', {
    listType: 'map',
    mapKeys: ['type'],
    patchStrategy: 'merge',
    patchMergeKey: 'type',
  }),
  phase: strEnum(['Active', 'Terminating'], 'Lifecycle phase of the namespace: Active or Terminating.'),
});

const namespaceCondition = object(
  'One observation of a namespace\'s state.',
  {
    lastTransitionTime: ref(TIME, 'When the condition last changed status.'),
    message: str('Human-readable details about the condition.'),
    reason: str('CamelCase reason of the last transition.'),
    status: str('True, False or Unknown.'),
    type: str('Type of the condition.'),
  },
  { required: ['type', 'status'] },
);

const configMap = kindSchema('', 'v1', 'ConfigMap', 'A ConfigMap holds non-confidential configuration data as key/value pairs.', {
  binaryData: mapOf(
    bytes(),
    'Binary values, base64-encoded. Keys must be valid file-name-like keys and must not collide with keys in `data`.',
  ),
  data: stringMap(
    'UTF-8 configuration values. Keys consist of alphanumerics, `-`, `_` or `.` and must not collide with `binaryData`.',
  ),
  immutable: bool('If true, `data` and `binaryData` cannot be changed anymore (only metadata may be updated).'),
});

const secret = kindSchema('', 'v1', 'Secret', 'A Secret holds a small amount of sensitive data such as passwords, tokens or keys.', {
  data: mapOf(bytes(), 'Secret values, base64-encoded in JSON/YAML. Keys consist of alphanumerics, `-`, `_` or `.`.'),
  immutable: bool('If true, `data` cannot be changed anymore (only metadata may be updated).'),
  stringData: stringMap(
    'Write-only convenience: plain-text values merged into `data` on write (overriding same keys). Never returned on read.',
  ),
  type: str('Type of the secret, used to validate its contents programmatically (e.g. `Opaque`, `kubernetes.io/tls`).'),
});

const serviceAccount = kindSchema(
  '',
  'v1',
  'ServiceAccount',
  'A ServiceAccount is an identity for processes and controllers, usable to authenticate to the API server.',
  {
    automountServiceAccountToken: bool('Whether pods using this account get an API token mounted automatically.'),
    imagePullSecrets: arrayOf(
      ref(`${CORE}.LocalObjectReference`),
      'Secrets in the same namespace used to pull images for pods running as this account.',
      { listType: 'atomic' },
    ),
    secrets: arrayOf(
      ref(`${CORE}.ObjectReference`),
      'Deprecated: secrets holding legacy tokens for this account. Not auto-populated anymore.',
      { listType: 'map', mapKeys: ['name'], patchStrategy: 'merge', patchMergeKey: 'name' },
    ),
  },
);

const objectReference = object(
  'A reference to an object, possibly pointing at a field inside it.',
  {
    apiVersion: str('API version of the referent.'),
    fieldPath: str('Path of a field within the referent, e.g. `spec.containers{name}`.'),
    kind: str('Kind of the referent.'),
    name: str('Name of the referent.'),
    namespace: str('Namespace of the referent.'),
    resourceVersion: str('Specific resourceVersion the reference points to, if any.'),
    uid: str('UID of the referent.'),
  },
  { atomic: true },
);

const localObjectReference = object(
  'A reference to an object by name within the same namespace.',
  { name: str('Name of the referent. Effectively required.') },
  { atomic: true },
);

const event = kindSchema(
  '',
  'v1',
  'Event',
  'An Event reports something that happened to an object (legacy core/v1 form; see events.k8s.io/v1).',
  {
    action: str('What action was taken or failed regarding the involved object.'),
    count: int32('How many times this event has occurred.'),
    eventTime: ref(MICRO_TIME, 'When the event was first observed.'),
    firstTimestamp: ref(TIME, 'When the event was first recorded.'),
    involvedObject: ref(`${CORE}.ObjectReference`, 'The object the event is about.'),
    lastTimestamp: ref(TIME, 'When the most recent occurrence was recorded.'),
    message: str('Human-readable description of the event.'),
    metadata: objectMetaProp(),
    reason: str('Short CamelCase machine-readable reason for the event.'),
    related: ref(`${CORE}.ObjectReference`, 'A secondary object involved in the event, if any.'),
    reportingComponent: str('Name of the controller that emitted the event, e.g. `kubernetes.io/kubelet`.'),
    reportingInstance: str('ID of the controller instance that emitted the event.'),
    series: ref(`${CORE}.EventSeries`, 'Data about a series of repeated events, if this is one.'),
    source: ref(`${CORE}.EventSource`, 'The component reporting the event.'),
    type: str('Type of the event: Normal or Warning.'),
  },
  { required: ['metadata', 'involvedObject'] },
);

const eventSource = object('Component that reported an event.', {
  component: str('Component the event comes from.'),
  host: str('Node the event was generated on.'),
});

const eventSeries = object('EventSeries counts the occurrences of a recurring event and when it was last seen.', {
  count: int32('Number of occurrences in the series so far.'),
  lastObservedTime: ref(MICRO_TIME, 'When the last occurrence was observed.'),
});

const limitRange = kindSchema('', 'v1', 'LimitRange', 'A LimitRange sets resource usage limits per kind of object in a namespace.', {
  spec: ref(`${CORE}.LimitRangeSpec`, 'The limits enforced.'),
});

const limitRangeSpec = object(
  'LimitRangeSpec lists the LimitRangeItems to enforce.',
  {
    limits: arrayOf(ref(`${CORE}.LimitRangeItem`), 'The limits, one entry per kind of object.', { listType: 'atomic' }),
  },
  { required: ['limits'] },
);

const limitRangeItem = object(
  'Min/max and default resource limits for one kind of object.',
  {
    default: resourceList('Default limits applied when a resource limit is omitted.'),
    defaultRequest: resourceList('Default requests applied when a resource request is omitted.'),
    max: resourceList('Maximum usage per resource.'),
    maxLimitRequestRatio: resourceList('Maximum ratio of limit to request per resource.'),
    min: resourceList('Minimum usage per resource.'),
    type: str('Kind of object the limits apply to, e.g. Container, Pod or PersistentVolumeClaim.'),
  },
  { required: ['type'] },
);

const resourceQuota = kindSchema('', 'v1', 'ResourceQuota', 'A ResourceQuota caps aggregate resource consumption per namespace.', {
  spec: ref(`${CORE}.ResourceQuotaSpec`, 'The desired hard limits.'),
  status: ref(`${CORE}.ResourceQuotaStatus`, 'The enforced limits and current usage.'),
});

const resourceQuotaSpec = object('ResourceQuotaSpec defines the hard limits of a ResourceQuota.', {
  hard: resourceList('Hard limit per named resource.'),
  scopeSelector: ref(`${CORE}.ScopeSelector`, 'Selects which objects the quota tracks, by scope; ANDed with `scopes`.'),
  scopes: stringList('Filters that must all match an object for it to be tracked by the quota.'),
});

const resourceQuotaStatus = object('ResourceQuotaStatus is the enforced hard limits and the current usage.', {
  hard: resourceList('Hard limits being enforced.'),
  used: resourceList('Current observed total usage in the namespace.'),
});

const scopeSelector = object(
  'AND of scoped-resource selector requirements.',
  {
    matchExpressions: arrayOf(ref(`${CORE}.ScopedResourceSelectorRequirement`), 'Requirements by scope name.', {
      listType: 'atomic',
    }),
  },
  { atomic: true },
);

const scopedResourceSelectorRequirement = object(
  'A requirement on a quota scope: a scope name, an operator and values.',
  {
    operator: str('Relation of scope name to values: In, NotIn, Exists or DoesNotExist.'),
    scopeName: str('Name of the scope the requirement applies to.'),
    values: stringList('Values for In/NotIn (non-empty); empty for Exists/DoesNotExist.'),
  },
  { required: ['scopeName', 'operator'] },
);

/** core/v1 schemas keyed by definition name. */
export const CORE_SCHEMAS: Record<string, Schema> = {
  [`${CORE}.ConfigMap`]: configMap,
  [`${CORE}.Event`]: event,
  [`${CORE}.EventSeries`]: eventSeries,
  [`${CORE}.EventSource`]: eventSource,
  [`${CORE}.LimitRange`]: limitRange,
  [`${CORE}.LimitRangeItem`]: limitRangeItem,
  [`${CORE}.LimitRangeSpec`]: limitRangeSpec,
  [`${CORE}.LocalObjectReference`]: localObjectReference,
  [`${CORE}.Namespace`]: namespace,
  [`${CORE}.NamespaceCondition`]: namespaceCondition,
  [`${CORE}.NamespaceSpec`]: namespaceSpec,
  [`${CORE}.NamespaceStatus`]: namespaceStatus,
  [`${CORE}.ObjectReference`]: objectReference,
  [`${CORE}.ResourceQuota`]: resourceQuota,
  [`${CORE}.ResourceQuotaSpec`]: resourceQuotaSpec,
  [`${CORE}.ResourceQuotaStatus`]: resourceQuotaStatus,
  [`${CORE}.ScopeSelector`]: scopeSelector,
  [`${CORE}.ScopedResourceSelectorRequirement`]: scopedResourceSelectorRequirement,
  [`${CORE}.Secret`]: secret,
  [`${CORE}.ServiceAccount`]: serviceAccount,
};
