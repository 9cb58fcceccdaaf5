/**
 * Built-in resources served in every logical cluster: descriptors and strategies.
 * Rules follow kube-apiserver's strategies in k8s.io/kubernetes/pkg/registry/<group>/<resource>
 * and validation in k8s.io/kubernetes/pkg/apis/<group>/validation; table columns follow
 * kube's printers (k8s.io/kubernetes/pkg/printers/internalversion).
 */
import type { StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor, TableColumn, UpdateReset } from './types.js';
import { OFF_BY_DEFAULT_GROUP_VERSIONS } from './runtimeconfig.js';
import { applyCRDDefaults, validateCRD } from '../apiextensions/crdvalidation.js';
import { CSR_DESCRIPTOR } from '../certificates/csr.js';
import { FLOW_SCHEMA_DESCRIPTOR, PRIORITY_LEVEL_DESCRIPTOR } from '../flowcontrol/descriptors.js';
import { age } from '../apimachinery/duration.js';
import { defaultWebhookConfiguration, validateWebhookConfiguration } from '../admission/webhooks.js';
import { defaultPolicy, defaultPolicyBinding, validatePolicy, validatePolicyBinding } from '../admission/policies.js';
import { defaultMutatingPolicy, validateMutatingPolicy, validateMutatingPolicyBinding } from '../admission/mutating.js';
import { asObj } from '../apimachinery/objects.js';
import { NAMESPACE_NAME_LABEL, defaultLimitRange, defaultNamespace, defaultRoleBinding, defaultSecret } from './defaults.js';
import { parseQuantity } from '../admission/plugins/resourcequota.js';

/** kube's resource.Quantity syntax, as its error message states it. */
const QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/**
 * ResourceQuota validation (kube: pkg/apis/core/validation ValidateResourceQuota,
 * ValidateResourceQuantityValue): every `spec.hard` value is a quantity, finite and not negative;
 * a quota that names an unparsable limit would otherwise refuse every create of its resource.
 */
function validateResourceQuota(o: KubeObject): StatusCause[] {
  const hard = asObj(asObj(o.spec).hard);
  const causes: StatusCause[] = [];
  for (const [name, v] of Object.entries(hard)) {
    const field = `spec.hard[${name}]`;
    const n = typeof v === 'string' ? parseQuantity(v) : undefined;
    if (n === undefined || !Number.isFinite(n)) causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(v)}: ${QUANTITY_SYNTAX}` });
    else if (n < 0) causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(v)}: must be greater than or equal to 0` });
  }
  return causes;
}

/**
 * The status strategy of most built-in kinds (Namespace, ResourceQuota, CRD,
 * CertificateSigningRequest): `newObj.Spec = oldObj.Spec`, the rest — metadata included — as sent.
 */
export const SPEC_KEPT_RESET: UpdateReset = { base: 'request', fromStored: ['spec'], metadata: 'request' };

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function field(path: string, message: string, reason = 'FieldValueInvalid'): StatusCause {
  return { reason, field: path, message };
}

type Obj = Record<string, unknown>;

function isStringMap(v: unknown): v is Record<string, string> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  // No values array and no callback per key: a ConfigMap may hold 90,000 keys, and this runs on every write.
  for (const k in v) if (typeof (v as Record<string, unknown>)[k] !== 'string') return false;
  return true;
}

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
/** Max size of ConfigMap/Secret data: 1 MiB (kube's `MaxSecretSize`). */
const MAX_DATA_SIZE = 1024 * 1024;

function validateDataMap(path: string, data: unknown, base64: boolean): StatusCause[] {
  if (data === undefined || data === null) return [];
  if (!isStringMap(data)) return [field(path, 'Invalid value: must be a map of string keys to string values')];
  const causes: StatusCause[] = [];
  for (const k in data) {
    const v = data[k]!;
    if (!CONFIG_KEY.test(k) || k.length > 253) {
      causes.push(field(`${path}[${k}]`, `Invalid value: "${k}": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`));
    }
    if (base64 && !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) causes.push(field(`${path}[${k}]`, `Invalid value: "<secret contents redacted>": illegal base64 data`));
  }
  return causes;
}

function dataSize(...maps: unknown[]): number {
  let n = 0;
  for (const m of maps) if (isStringMap(m)) for (const k in m) n += k.length + m[k]!.length;
  return n;
}

function count(obj: KubeObject, ...fields: string[]): number {
  let n = 0;
  for (const f of fields) n += Object.keys(asObj(obj[f])).length;
  return n;
}

const createdAt: TableColumn = { name: 'Created At', type: 'date', priority: 0, cell: (o) => o.metadata.creationTimestamp };

function immutableWhenSet(obj: KubeObject, old: KubeObject, fields: string[]): StatusCause[] {
  if (old.immutable !== true) return obj.immutable === undefined || typeof obj.immutable === 'boolean' ? [] : [field('immutable', 'Invalid value: must be a boolean')];
  const causes: StatusCause[] = [];
  if (obj.immutable !== true) causes.push(field('immutable', 'Forbidden: field is immutable when `immutable` is set', 'FieldValueForbidden'));
  for (const f of fields) {
    if (JSON.stringify(obj[f] ?? null) !== JSON.stringify(old[f] ?? null)) causes.push(field(f, 'Forbidden: field is immutable when `immutable` is set', 'FieldValueForbidden'));
  }
  return causes;
}

function validateRules(rules: unknown, path: string, requireVerbs = true): StatusCause[] {
  if (rules === undefined || rules === null) return [];
  if (!Array.isArray(rules)) return [field(path, 'Invalid value: must be a list')];
  const causes: StatusCause[] = [];
  rules.forEach((r, i) => {
    const rule = asObj(r);
    if (requireVerbs && (!Array.isArray(rule.verbs) || rule.verbs.length === 0)) causes.push(field(`${path}[${i}].verbs`, 'Required value: verbs must contain at least one value', 'FieldValueRequired'));
    const hasNonResource = Array.isArray(rule.nonResourceURLs) && rule.nonResourceURLs.length > 0;
    const hasResource = Array.isArray(rule.resources) && rule.resources.length > 0;
    if (!hasNonResource && !hasResource) causes.push(field(`${path}[${i}]`, 'Required value: resource rules must supply at least one api group', 'FieldValueRequired'));
    if (hasResource && (!Array.isArray(rule.apiGroups) || rule.apiGroups.length === 0)) causes.push(field(`${path}[${i}].apiGroups`, 'Required value: resource rules must supply at least one api group', 'FieldValueRequired'));
  });
  return causes;
}

function validateBinding(obj: KubeObject, clusterScoped: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const ref = asObj(obj.roleRef);
  if (!ref.name) causes.push(field('roleRef.name', 'Required value', 'FieldValueRequired'));
  if (ref.apiGroup !== 'rbac.authorization.k8s.io') causes.push(field('roleRef.apiGroup', `Unsupported value: ${JSON.stringify(ref.apiGroup ?? '')}: supported values: "rbac.authorization.k8s.io"`, 'FieldValueNotSupported'));
  const kinds = clusterScoped ? ['ClusterRole'] : ['Role', 'ClusterRole'];
  if (!kinds.includes(String(ref.kind))) causes.push(field('roleRef.kind', `Unsupported value: ${JSON.stringify(ref.kind ?? '')}: supported values: ${kinds.map((k) => `"${k}"`).join(', ')}`, 'FieldValueNotSupported'));
  const subjects = obj.subjects;
  if (subjects !== undefined && subjects !== null) {
    if (!Array.isArray(subjects)) causes.push(field('subjects', 'Invalid value: must be a list'));
    else subjects.forEach((s, i) => {
      const sub = asObj(s);
      if (!sub.name) causes.push(field(`subjects[${i}].name`, 'Required value', 'FieldValueRequired'));
      if (!['User', 'Group', 'ServiceAccount'].includes(String(sub.kind))) causes.push(field(`subjects[${i}].kind`, `Unsupported value: ${JSON.stringify(sub.kind ?? '')}: supported values: "ServiceAccount", "User", "Group"`, 'FieldValueNotSupported'));
      if (sub.kind === 'ServiceAccount' && !sub.namespace && clusterScoped) causes.push(field(`subjects[${i}].namespace`, 'Required value', 'FieldValueRequired'));
    });
  }
  return causes;
}

function roleRefImmutable(obj: KubeObject, old: KubeObject): StatusCause[] {
  return JSON.stringify(obj.roleRef) === JSON.stringify(old.roleRef) ? [] : [field('roleRef', 'Invalid value: cannot change roleRef')];
}

function subjectsOfKind(obj: KubeObject, kind: string): string {
  const subs = Array.isArray(obj.subjects) ? obj.subjects as Obj[] : [];
  return subs.filter((s) => s.kind === kind).map((s) => (kind === 'ServiceAccount' ? `${s.namespace ?? ''}/${s.name}` : String(s.name))).join(', ');
}

const bindingColumns: TableColumn[] = [
  { name: 'Role', type: 'string', priority: 0, cell: (o) => `${asObj(o.roleRef).kind}/${asObj(o.roleRef).name}` },
  { name: 'Age', type: 'string', priority: 0, cell: () => undefined },
  { name: 'Users', type: 'string', priority: 1, cell: (o) => subjectsOfKind(o, 'User') },
  { name: 'Groups', type: 'string', priority: 1, cell: (o) => subjectsOfKind(o, 'Group') },
  { name: 'ServiceAccounts', type: 'string', priority: 1, cell: (o) => subjectsOfKind(o, 'ServiceAccount') },
];

const NAMESPACE_FINALIZER = 'kubernetes';

function resourceList(v: unknown): string {
  return Object.entries(asObj(v)).map(([k, q]) => `${k}: ${String(q)}`).join(', ');
}

/**
 * Built-in resource descriptors, in discovery order. The set is what kcp v0.30 serves in a
 * workspace: the generic control plane's storage providers (k8s.io/kubernetes
 * pkg/controlplane/apiserver/apis.go `GenericStorageProviders`, flowcontrol included: kcp lists it
 * among its built-in APIs, docs/content/concepts/apis/built-in.md, and left it out of
 * pkg/server/server.go only until priority and fairness is wired, which src/flowcontrol is) at their GA versions (pkg/controlplane/instance.go
 * `DefaultAPIResourceConfigSource` turns every beta and alpha off), plus LimitRange, which kcp
 * does not serve (docs/architecture.md, "Built-in APIs"); test/integration/builtin-parity.test.ts
 * holds the list.
 */
export const BUILTIN_RESOURCES: ResourceDescriptor[] = [
  {
    group: '', version: 'v1', kind: 'Namespace', listKind: 'NamespaceList', plural: 'namespaces', singular: 'namespace',
    namespaced: false, shortNames: ['ns'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], hasStatus: true,
    columns: [{ name: 'Status', type: 'string', priority: 0, cell: (o) => asObj(o.status).phase }],
    strategy: {
      nameRule: 'dns1123Label',
      defaults: defaultNamespace,
      // kube's namespaceStatusStrategy and namespaceFinalizeStrategy: metadata changes go through both.
      updateResets: { status: SPEC_KEPT_RESET, finalize: { base: 'request', fromStored: ['status'], metadata: 'request' } },
      prepareForCreate(obj) {
        // kube's namespace strategy: the `kubernetes` finalizer is added to those asked for.
        const asked = Array.isArray(asObj(obj.spec).finalizers) ? asObj(obj.spec).finalizers as unknown[] : [];
        obj.spec = { ...asObj(obj.spec), finalizers: asked.includes(NAMESPACE_FINALIZER) ? asked : [...asked, NAMESPACE_FINALIZER] };
        obj.status = { phase: 'Active' };
        // Canonicalize: the name label, also for a name generated after defaulting.
        obj.metadata.labels = { ...obj.metadata.labels, [NAMESPACE_NAME_LABEL]: obj.metadata.name! };
      },
      prepareForUpdate(obj, old) {
        // spec.finalizers change only through /finalize (kube's namespace strategy).
        obj.spec = { ...asObj(obj.spec), finalizers: asObj(old.spec).finalizers };
        obj.metadata.labels = { ...obj.metadata.labels, [NAMESPACE_NAME_LABEL]: old.metadata.name! };
      },
      deletionPending: (obj) => Array.isArray(asObj(obj.spec).finalizers) && (asObj(obj.spec).finalizers as unknown[]).length > 0,
      prepareForDeletion(obj) { obj.status = { ...asObj(obj.status), phase: 'Terminating' }; },
      selectableFields: { 'status.phase': (o) => String(asObj(o.status).phase ?? '') },
    },
  },
  {
    group: '', version: 'v1', kind: 'ConfigMap', listKind: 'ConfigMapList', plural: 'configmaps', singular: 'configmap',
    namespaced: true, shortNames: ['cm'], verbs: ALL_VERBS,
    columns: [{ name: 'Data', type: 'integer', priority: 0, cell: (o) => count(o, 'data', 'binaryData') }],
    strategy: {
      validate(obj) {
        const causes = [...validateDataMap('data', obj.data, false), ...validateDataMap('binaryData', obj.binaryData, true)];
        if (isStringMap(obj.data) && isStringMap(obj.binaryData)) {
          for (const k of Object.keys(obj.binaryData)) if (k in obj.data) causes.push(field(`binaryData[${k}]`, `Invalid value: "${k}": duplicate of key present in data`));
        }
        if (dataSize(obj.data, obj.binaryData) > MAX_DATA_SIZE) causes.push(field('', `Too long: must have at most ${MAX_DATA_SIZE} bytes`, 'FieldValueTooLong'));
        return causes;
      },
      validateUpdate(obj, old) {
        return [...(this.validate!(obj)), ...immutableWhenSet(obj, old, ['data', 'binaryData'])];
      },
    },
  },
  {
    group: '', version: 'v1', kind: 'Secret', listKind: 'SecretList', plural: 'secrets', singular: 'secret',
    namespaced: true, verbs: ALL_VERBS,
    columns: [
      { name: 'Type', type: 'string', priority: 0, cell: (o) => o.type },
      { name: 'Data', type: 'integer', priority: 0, cell: (o) => count(o, 'data') },
    ],
    strategy: {
      defaults: defaultSecret,
      prepareForCreate(obj) { normalizeSecret(obj); },
      prepareForUpdate(obj) { normalizeSecret(obj); },
      validate(obj) {
        const causes = validateDataMap('data', obj.data, true);
        if (typeof obj.type !== 'string') causes.push(field('type', 'Invalid value: must be a string'));
        if (dataSize(obj.data) > MAX_DATA_SIZE) causes.push(field('data', `Too long: must have at most ${MAX_DATA_SIZE} bytes`, 'FieldValueTooLong'));
        return causes;
      },
      validateUpdate(obj, old) {
        const causes = [...this.validate!(obj), ...immutableWhenSet(obj, old, ['data'])];
        if (obj.type !== old.type) causes.push(field('type', 'Invalid value: field is immutable'));
        return causes;
      },
      selectableFields: { type: (o) => String(o.type ?? '') },
    },
  },
  {
    group: '', version: 'v1', kind: 'ServiceAccount', listKind: 'ServiceAccountList', plural: 'serviceaccounts', singular: 'serviceaccount',
    namespaced: true, shortNames: ['sa'], verbs: ALL_VERBS,
    // kube's TokenRequest subresource (src/auth/serviceaccounts.ts).
    extraSubresources: [{ name: 'token', verbs: ['create'], kind: { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' } }],
    columns: [{ name: 'Secrets', type: 'integer', priority: 0, cell: (o) => (Array.isArray(o.secrets) ? o.secrets.length : 0) }],
  },
  {
    group: '', version: 'v1', kind: 'Event', listKind: 'EventList', plural: 'events', singular: 'event',
    namespaced: true, shortNames: ['ev'], verbs: ALL_VERBS,
    columns: [
      { name: 'Last Seen', type: 'string', priority: 0, cell: (o) => age(String(o.lastTimestamp ?? o.eventTime ?? o.metadata.creationTimestamp ?? '')) },
      { name: 'Type', type: 'string', priority: 0, cell: (o) => o.type },
      { name: 'Reason', type: 'string', priority: 0, cell: (o) => o.reason },
      { name: 'Object', type: 'string', priority: 0, cell: (o) => `${String(asObj(o.involvedObject).kind ?? '').toLowerCase()}/${asObj(o.involvedObject).name ?? ''}` },
      { name: 'Message', type: 'string', priority: 0, cell: (o) => o.message },
      { name: 'Count', type: 'integer', priority: 1, cell: (o) => o.count },
    ],
    strategy: {
      nameRule: 'pathSegment',
      validate(obj) {
        const causes: StatusCause[] = [];
        const io = asObj(obj.involvedObject);
        if (io.namespace && obj.metadata.namespace && io.namespace !== obj.metadata.namespace) causes.push(field('involvedObject.namespace', 'Invalid value: does not match event.namespace'));
        return causes;
      },
      selectableFields: {
        'involvedObject.kind': (o) => String(asObj(o.involvedObject).kind ?? ''),
        'involvedObject.name': (o) => String(asObj(o.involvedObject).name ?? ''),
        'involvedObject.namespace': (o) => String(asObj(o.involvedObject).namespace ?? ''),
        'involvedObject.uid': (o) => String(asObj(o.involvedObject).uid ?? ''),
        reason: (o) => String(o.reason ?? ''),
        type: (o) => String(o.type ?? ''),
      },
    },
  },
  {
    group: '', version: 'v1', kind: 'LimitRange', listKind: 'LimitRangeList', plural: 'limitranges', singular: 'limitrange',
    namespaced: true, shortNames: ['limits'], verbs: ALL_VERBS, columns: [createdAt],
    strategy: {
      defaults: defaultLimitRange,
      validate(obj) {
        const limits = asObj(obj.spec).limits;
        if (limits !== undefined && !Array.isArray(limits)) return [field('spec.limits', 'Invalid value: must be a list')];
        const causes: StatusCause[] = [];
        (limits as Obj[] | undefined ?? []).forEach((l, i) => {
          if (!['Pod', 'Container', 'PersistentVolumeClaim'].includes(String(asObj(l).type))) causes.push(field(`spec.limits[${i}].type`, `Unsupported value: ${JSON.stringify(asObj(l).type ?? '')}: supported values: "Container", "PersistentVolumeClaim", "Pod"`, 'FieldValueNotSupported'));
        });
        return causes;
      },
    },
  },
  {
    group: '', version: 'v1', kind: 'ResourceQuota', listKind: 'ResourceQuotaList', plural: 'resourcequotas', singular: 'resourcequota',
    namespaced: true, shortNames: ['quota'], verbs: ALL_VERBS, hasStatus: true,
    columns: [
      { name: 'Age', type: 'string', priority: 0, cell: () => undefined },
      { name: 'Request', type: 'string', priority: 0, cell: (o) => resourceList(asObj(o.spec).hard) },
      { name: 'Limit', type: 'string', priority: 0, cell: (o) => resourceList(asObj(o.status).used) },
    ],
    strategy: { validate: validateResourceQuota, validateUpdate: (o) => validateResourceQuota(o), updateResets: { status: SPEC_KEPT_RESET } },
  },
  {
    group: 'events.k8s.io', version: 'v1', kind: 'Event', listKind: 'EventList', plural: 'events', singular: 'event',
    namespaced: true, shortNames: ['ev'], verbs: ALL_VERBS,
    storage: { group: '', plural: 'events', toStorage: eventsV1ToCore, fromStorage: coreToEventsV1 },
    columns: [
      { name: 'Type', type: 'string', priority: 0, cell: (o) => o.type },
      { name: 'Reason', type: 'string', priority: 0, cell: (o) => o.reason },
      { name: 'Note', type: 'string', priority: 0, cell: (o) => o.note },
    ],
    strategy: {
      nameRule: 'pathSegment',
      validate(obj) {
        const causes: StatusCause[] = [];
        if (!obj.eventTime) causes.push(field('eventTime', 'Required value', 'FieldValueRequired'));
        if (!obj.reportingController) causes.push(field('reportingController', 'Required value', 'FieldValueRequired'));
        if (!obj.reportingInstance) causes.push(field('reportingInstance', 'Required value', 'FieldValueRequired'));
        if (obj.type !== 'Normal' && obj.type !== 'Warning') causes.push(field('type', `Unsupported value: ${JSON.stringify(obj.type ?? '')}: supported values: "Normal", "Warning"`, 'FieldValueNotSupported'));
        if (typeof obj.note === 'string' && obj.note.length > 1024) causes.push(field('note', 'Too long: may not be more than 1024 bytes', 'FieldValueTooLong'));
        return causes;
      },
    },
  },
  {
    group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', listKind: 'LeaseList', plural: 'leases', singular: 'lease',
    namespaced: true, verbs: ALL_VERBS,
    columns: [{ name: 'Holder', type: 'string', priority: 0, cell: (o) => asObj(o.spec).holderIdentity }],
    strategy: {
      validate(obj) {
        const spec = asObj(obj.spec);
        const causes: StatusCause[] = [];
        if (spec.leaseDurationSeconds !== undefined && !(Number.isInteger(spec.leaseDurationSeconds) && (spec.leaseDurationSeconds as number) > 0)) causes.push(field('spec.leaseDurationSeconds', 'Invalid value: must be greater than 0'));
        if (spec.leaseTransitions !== undefined && !(Number.isInteger(spec.leaseTransitions) && (spec.leaseTransitions as number) >= 0)) causes.push(field('spec.leaseTransitions', 'Invalid value: must be greater than or equal to 0'));
        return causes;
      },
    },
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', listKind: 'RoleList', plural: 'roles', singular: 'role',
    namespaced: true, verbs: ALL_VERBS, columns: [createdAt],
    strategy: { nameRule: 'pathSegment', allowCreateOnUpdate: true, validate: (o) => validateRules(o.rules, 'rules') },
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', listKind: 'RoleBindingList', plural: 'rolebindings', singular: 'rolebinding',
    namespaced: true, verbs: ALL_VERBS, columns: bindingColumns,
    strategy: { nameRule: 'pathSegment', allowCreateOnUpdate: true, defaults: defaultRoleBinding, validate: (o) => validateBinding(o, false), validateUpdate: (o, old) => [...validateBinding(o, false), ...roleRefImmutable(o, old)] },
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', listKind: 'ClusterRoleList', plural: 'clusterroles', singular: 'clusterrole',
    namespaced: false, verbs: ALL_VERBS, columns: [createdAt],
    strategy: { nameRule: 'pathSegment', allowCreateOnUpdate: true, validate: (o) => validateRules(o.rules, 'rules') },
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', listKind: 'ClusterRoleBindingList', plural: 'clusterrolebindings', singular: 'clusterrolebinding',
    namespaced: false, verbs: ALL_VERBS, columns: bindingColumns,
    strategy: { nameRule: 'pathSegment', allowCreateOnUpdate: true, defaults: defaultRoleBinding, validate: (o) => validateBinding(o, true), validateUpdate: (o, old) => [...validateBinding(o, true), ...roleRefImmutable(o, old)] },
  },
  ...(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'] as const).map((kind): ResourceDescriptor => {
    const mutating = kind === 'MutatingWebhookConfiguration';
    return {
      group: 'admissionregistration.k8s.io', version: 'v1', kind, listKind: `${kind}List`, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(),
      namespaced: false, categories: ['api-extensions'], verbs: ALL_VERBS,
      columns: [{ name: 'Webhooks', type: 'integer', priority: 0, cell: (o) => (Array.isArray(o.webhooks) ? o.webhooks.length : 0) }],
      strategy: {
        defaults: (o) => defaultWebhookConfiguration(o, mutating),
        validate: (o) => validateWebhookConfiguration(o, mutating),
      },
    };
  }),
  {
    group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingAdmissionPolicy', listKind: 'ValidatingAdmissionPolicyList',
    plural: 'validatingadmissionpolicies', singular: 'validatingadmissionpolicy', namespaced: false, categories: ['api-extensions'],
    verbs: ALL_VERBS, hasStatus: true,
    columns: [{ name: 'Validations', type: 'integer', priority: 0, cell: (o) => (Array.isArray(asObj(o.spec).validations) ? (asObj(o.spec).validations as unknown[]).length : 0) },
      { name: 'ParamKind', type: 'string', priority: 0, cell: (o) => { const k = asObj(asObj(o.spec).paramKind); return k.kind ? `${k.apiVersion}/${k.kind}` : '<unset>'; } }],
    strategy: {
      tracksGeneration: true, defaults: defaultPolicy, validate: validatePolicy,
      // kube's validatingAdmissionPolicyStatusStrategy: spec kept, metav1.ResetObjectMetaForStatus.
      updateResets: { status: { base: 'request', fromStored: ['spec'], metadata: 'resetForStatus' } },
    },
  },
  {
    group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingAdmissionPolicyBinding', listKind: 'ValidatingAdmissionPolicyBindingList',
    plural: 'validatingadmissionpolicybindings', singular: 'validatingadmissionpolicybinding', namespaced: false, categories: ['api-extensions'],
    verbs: ALL_VERBS,
    columns: [{ name: 'PolicyName', type: 'string', priority: 0, cell: (o) => asObj(o.spec).policyName },
      { name: 'ParamRef', type: 'string', priority: 0, cell: (o) => { const r = asObj(asObj(o.spec).paramRef); return r.name ? `${r.namespace ? `${r.namespace}/` : ''}${r.name}` : '<unset>'; } }],
    strategy: { defaults: defaultPolicyBinding, validate: validatePolicyBinding },
  },
  {
    group: 'admissionregistration.k8s.io', version: 'v1beta1', kind: 'MutatingAdmissionPolicy', listKind: 'MutatingAdmissionPolicyList',
    plural: 'mutatingadmissionpolicies', singular: 'mutatingadmissionpolicy', namespaced: false, categories: ['api-extensions'],
    verbs: ALL_VERBS,
    columns: [{ name: 'Mutations', type: 'integer', priority: 0, cell: (o) => (Array.isArray(asObj(o.spec).mutations) ? (asObj(o.spec).mutations as unknown[]).length : 0) },
      { name: 'ParamKind', type: 'string', priority: 0, cell: (o) => { const k = asObj(asObj(o.spec).paramKind); return k.kind ? `${k.apiVersion}/${k.kind}` : '<unset>'; } }],
    strategy: { tracksGeneration: true, defaults: defaultMutatingPolicy, validate: validateMutatingPolicy },
  },
  {
    group: 'admissionregistration.k8s.io', version: 'v1beta1', kind: 'MutatingAdmissionPolicyBinding', listKind: 'MutatingAdmissionPolicyBindingList',
    plural: 'mutatingadmissionpolicybindings', singular: 'mutatingadmissionpolicybinding', namespaced: false, categories: ['api-extensions'],
    verbs: ALL_VERBS,
    columns: [{ name: 'PolicyName', type: 'string', priority: 0, cell: (o) => asObj(o.spec).policyName },
      { name: 'ParamRef', type: 'string', priority: 0, cell: (o) => { const r = asObj(asObj(o.spec).paramRef); return r.name ? `${r.namespace ? `${r.namespace}/` : ''}${r.name}` : '<unset>'; } }],
    strategy: { defaults: defaultPolicyBinding, validate: validateMutatingPolicyBinding },
  },
  {
    group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', listKind: 'CustomResourceDefinitionList',
    plural: 'customresourcedefinitions', singular: 'customresourcedefinition', namespaced: false, shortNames: ['crd', 'crds'],
    categories: ['api-extensions'], verbs: ALL_VERBS, hasStatus: true, columns: [createdAt],
    strategy: {
      tracksGeneration: true,
      defaults: (obj) => applyCRDDefaults(obj as Record<string, unknown>),
      // kube's CRD statusStrategy keeps spec; its ResetObjectMetaForStatus is called with the new
      // object twice (a no-op), so metadata changes go through, as there.
      updateResets: { status: SPEC_KEPT_RESET },
      prepareForCreate(obj) {
        // Held until its custom resources are deleted (apiextensions' finalizing controller).
        const f = obj.metadata.finalizers ?? [];
        if (!f.includes('customresourcecleanup.apiextensions.k8s.io')) obj.metadata.finalizers = [...f, 'customresourcecleanup.apiextensions.k8s.io'];
        obj.status = { conditions: [], acceptedNames: { kind: '', plural: '' }, storedVersions: [] };
        recordStorageVersion(obj);
      },
      prepareForUpdate: recordStorageVersion,
      validate: (obj) => validateCRD(obj as Record<string, unknown>),
      validateUpdate: (obj, old) => validateCRD(obj as Record<string, unknown>, old as Record<string, unknown>),
    },
  },
  {
    // kube's pkg/registry/authorization/localsubjectaccessreview: a SubjectAccessReview scoped to
    // the request's namespace, served by kcp's generic control plane (src/auth/reviews.ts).
    group: 'authorization.k8s.io', version: 'v1', kind: 'LocalSubjectAccessReview', listKind: 'LocalSubjectAccessReviewList',
    plural: 'localsubjectaccessreviews', singular: 'localsubjectaccessreview', namespaced: true, verbs: ['create'], virtual: true,
  },
  {
    group: 'authorization.k8s.io', version: 'v1', kind: 'SelfSubjectAccessReview', listKind: 'SelfSubjectAccessReviewList',
    plural: 'selfsubjectaccessreviews', singular: 'selfsubjectaccessreview', namespaced: false, verbs: ['create'], virtual: true,
  },
  {
    group: 'authorization.k8s.io', version: 'v1', kind: 'SelfSubjectRulesReview', listKind: 'SelfSubjectRulesReviewList',
    plural: 'selfsubjectrulesreviews', singular: 'selfsubjectrulesreview', namespaced: false, verbs: ['create'], virtual: true,
  },
  {
    group: 'authorization.k8s.io', version: 'v1', kind: 'SubjectAccessReview', listKind: 'SubjectAccessReviewList',
    plural: 'subjectaccessreviews', singular: 'subjectaccessreview', namespaced: false, verbs: ['create'], virtual: true,
  },
  {
    group: 'authentication.k8s.io', version: 'v1', kind: 'SelfSubjectReview', listKind: 'SelfSubjectReviewList',
    plural: 'selfsubjectreviews', singular: 'selfsubjectreview', namespaced: false, verbs: ['create'], virtual: true,
  },
  {
    // src/auth/tokenreview.ts
    group: 'authentication.k8s.io', version: 'v1', kind: 'TokenReview', listKind: 'TokenReviewList',
    plural: 'tokenreviews', singular: 'tokenreview', namespaced: false, verbs: ['create'], virtual: true,
  },
  // src/certificates/csr.ts (signer: src/certificates/signer.ts)
  CSR_DESCRIPTOR,
  // src/flowcontrol: API priority and fairness (configured from the system:admin logical cluster)
  FLOW_SCHEMA_DESCRIPTOR,
  PRIORITY_LEVEL_DESCRIPTOR,
];

/**
 * Field renames between events.k8s.io/v1 and core v1 Events, which share storage
 * (k8s.io/api/events/v1 type documentation: `regarding` is core's `involvedObject`, `note` is
 * `message`, `deprecated*` are core's source and timestamps, `reportingController` is
 * `reportingComponent`). Other fields have the same name in both.
 */
const EVENTS_V1_TO_CORE: Record<string, string> = {
  regarding: 'involvedObject', note: 'message', deprecatedSource: 'source', deprecatedFirstTimestamp: 'firstTimestamp',
  deprecatedLastTimestamp: 'lastTimestamp', deprecatedCount: 'count', reportingController: 'reportingComponent',
};
const CORE_TO_EVENTS_V1 = Object.fromEntries(Object.entries(EVENTS_V1_TO_CORE).map(([a, b]) => [b, a]));

function renameFields(obj: KubeObject, names: Record<string, string>, apiVersion: string): KubeObject {
  const out: KubeObject = { apiVersion, kind: 'Event', metadata: obj.metadata };
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
    out[names[k] ?? k] = v;
  }
  return out;
}

/** events.k8s.io/v1 Event → core v1 Event (the storage version). */
export function eventsV1ToCore(obj: KubeObject): KubeObject { return renameFields(obj, EVENTS_V1_TO_CORE, 'v1'); }
/** Core v1 Event → events.k8s.io/v1 Event. */
export function coreToEventsV1(obj: KubeObject): KubeObject { return renameFields(obj, CORE_TO_EVENTS_V1, 'events.k8s.io/v1'); }

/**
 * A CRD's storage version joins `status.storedVersions` (kube's CRD strategy PrepareForCreate and
 * PrepareForUpdate), after the status a create starts with or an update keeps.
 */
function recordStorageVersion(obj: KubeObject): void {
  const versions = Array.isArray(asObj(obj.spec).versions) ? asObj(obj.spec).versions as unknown[] : [];
  const storage = versions.find((v) => asObj(v).storage === true);
  const name = asObj(storage).name;
  if (typeof name !== 'string') return;
  const status = asObj(obj.status);
  const stored = Array.isArray(status.storedVersions) ? status.storedVersions as unknown[] : [];
  if (!stored.includes(name)) obj.status = { ...status, storedVersions: [...stored, name] };
}

/** Secret's `stringData`, written into `data` (kube's v1 → internal conversion: write-only). */
function normalizeSecret(obj: KubeObject): void {
  if (isStringMap(obj.stringData)) {
    // stringData is write-only: merged into data, base64-encoded (kube's Secret conversion).
    const data = { ...asObj(obj.data) } as Record<string, string>;
    for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj.data = data;
  }
  delete obj.stringData;
}

export { age, humanDuration } from '../apimachinery/duration.js';

/** The built-in resources served with a runtime config (see OFF_BY_DEFAULT_GROUP_VERSIONS). */
export function servedBuiltins(runtimeConfig: Readonly<Record<string, boolean>> = {}): ResourceDescriptor[] {
  return BUILTIN_RESOURCES.filter((d) => {
    const gv = `${d.group}/${d.version}`;
    return !OFF_BY_DEFAULT_GROUP_VERSIONS.has(gv) || runtimeConfig[gv] === true;
  });
}
