/**
 * OpenAPI v3 schemas of rbac.authorization.k8s.io/v1 (Role, RoleBinding, ClusterRole,
 * ClusterRoleBinding, PolicyRule, Subject, RoleRef, AggregationRule), following k8s.io/api/rbac/v1.
 */
import { type Schema, LABEL_SELECTOR, arrayOf, kindSchema, object, ref, str, stringList } from './helpers.js';

/** Definition-name prefix of rbac.authorization.k8s.io/v1 types. */
export const RBAC = 'io.k8s.api.rbac.v1';
const GROUP = 'rbac.authorization.k8s.io';

function rules(): Schema {
  return arrayOf(ref(`${RBAC}.PolicyRule`), 'The permissions granted.', { listType: 'atomic' });
}

function subjects(): Schema {
  return arrayOf(ref(`${RBAC}.Subject`), 'The users, groups and service accounts the role is granted to.', {
    listType: 'atomic',
  });
}

function roleRef(description: string): Schema {
  return ref(`${RBAC}.RoleRef`, description);
}

const policyRule = object(
  'A set of permissions: verbs allowed on resources (or non-resource URLs).',
  {
    apiGroups: stringList('API groups of the resources; "" is the core group and "*" any group.'),
    nonResourceURLs: stringList(
      'Non-resource URL paths (e.g. /healthz); "*" is allowed as a final path segment. Only in ClusterRoles.',
    ),
    resourceNames: stringList('Optional allow list of object names; empty means all names.'),
    resources: stringList('Resources the rule applies to; "*" means all, `<resource>/<subresource>` a subresource.'),
    verbs: stringList('Allowed verbs (get, list, watch, create, update, patch, delete, …); "*" means all. Required.'),
  },
  { required: ['verbs'] },
);

const subject = object(
  'A user, group or service account a binding applies to.',
  {
    apiGroup: str('API group of the subject: "" for ServiceAccount, rbac.authorization.k8s.io for User and Group.'),
    kind: str('Kind of subject: User, Group or ServiceAccount.'),
    name: str('Name of the subject.'),
    namespace: str('Namespace of a ServiceAccount subject; must be empty for User and Group.'),
  },
  { required: ['kind', 'name'], atomic: true },
);

const roleRefSchema = object(
  'RoleRef contains information that points to the role being used.',
  {
    apiGroup: str('API group of the role, rbac.authorization.k8s.io.'),
    kind: str('Role or ClusterRole.'),
    name: str('Name of the role.'),
  },
  { required: ['apiGroup', 'kind', 'name'], atomic: true },
);

const aggregationRule = object('How a ClusterRole is assembled from other ClusterRoles.', {
  clusterRoleSelectors: arrayOf(
    ref(LABEL_SELECTOR),
    'Selectors of ClusterRoles whose rules are aggregated into this one. The controller owns `rules` when set.',
    { listType: 'atomic' },
  ),
});

const role = kindSchema(GROUP, 'v1', 'Role', 'A namespaced set of permissions, granted through a RoleBinding.', {
  rules: rules(),
});

const roleBinding = kindSchema(
  GROUP,
  'v1',
  'RoleBinding',
  'Grants the permissions of a Role (or of a ClusterRole, within this namespace) to subjects.',
  {
    roleRef: roleRef('The Role or ClusterRole granted. Cannot be changed after creation.'),
    subjects: subjects(),
  },
  { required: ['roleRef'] },
);

const clusterRole = kindSchema(GROUP, 'v1', 'ClusterRole', 'A cluster-wide set of permissions, granted through bindings.', {
  aggregationRule: ref(`${RBAC}.AggregationRule`, 'If set, rules are computed from the selected ClusterRoles.'),
  rules: rules(),
});

const clusterRoleBinding = kindSchema(
  GROUP,
  'v1',
  'ClusterRoleBinding',
  'Grants the permissions of a ClusterRole cluster-wide to subjects.',
  {
    roleRef: roleRef('The ClusterRole granted. Cannot be changed after creation.'),
    subjects: subjects(),
  },
  { required: ['roleRef'] },
);

/** rbac.authorization.k8s.io/v1 schemas keyed by definition name. */
export const RBAC_SCHEMAS: Record<string, Schema> = {
  [`${RBAC}.AggregationRule`]: aggregationRule,
  [`${RBAC}.ClusterRole`]: clusterRole,
  [`${RBAC}.ClusterRoleBinding`]: clusterRoleBinding,
  [`${RBAC}.PolicyRule`]: policyRule,
  [`${RBAC}.Role`]: role,
  [`${RBAC}.RoleBinding`]: roleBinding,
  [`${RBAC}.RoleRef`]: roleRefSchema,
  [`${RBAC}.Subject`]: subject,
};
