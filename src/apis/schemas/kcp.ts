/**
 * OpenAPI v3 schema of core.kcp.io/v1alpha1 LogicalCluster, transcribed from kcp's CRD
 * (kcp-dev/kcp config/crds/core.kcp.io_logicalclusters.yaml, see
 * shared/reference/kcp-api-crds). kcp serves this kind through a CRD, so the definition
 * name follows kube's CRD naming (reversed group: `io.kcp.core.v1alpha1.LogicalCluster`) and the
 * nested types are inline, as kube publishes CRD schemas. As for every CRD, `metadata` is the
 * standard ObjectMeta (the CRD's `metadata.name: cluster` enum is enforced by the server).
 */
import { type Schema, arrayOf, bool, kindSchema, mapOf, object, str, stringList } from './helpers.js';

/** Definition-name prefix of core.kcp.io/v1alpha1 types. */
export const KCP_CORE = 'io.kcp.core.v1alpha1';

const INITIALIZER_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[a-z0-9][a-z0-9]([-a-z0-9]*[a-z0-9])?))|(system:.+)$';

function initializers(description: string): Schema {
  return arrayOf(str('Name of a logical cluster initialization controller.', { pattern: INITIALIZER_PATTERN }), description);
}

function terminators(description: string): Schema {
  return arrayOf(str('Name of a logical cluster termination controller.', { pattern: INITIALIZER_PATTERN }), description);
}

const createdBy = object('The user who created the workspace of this logical cluster.', {
  extra: mapOf(stringList('Values of one extra attribute.', {}), 'Extra attributes provided by the authenticator.'),
  groups: stringList('Groups the user belongs to.', {}),
  uid: str('Unique identifier of the user.'),
  username: str('Name of the user.'),
});

const owner = object(
  'The object controlling the life-cycle of this logical cluster (usually a Workspace). Deleting the LogicalCluster deletes the owner too.',
  {
    apiVersion: str('Group and version of the owner.', { pattern: '^([^/]+/)?[^/]+$' }),
    cluster: str('Logical cluster the owner lives in.', { minLength: 1 }),
    name: str('Name of the owner.', { minLength: 1 }),
    namespace: str('Namespace of the owner, if namespaced.'),
    resource: str('API resource (plural) of the owner.', { minLength: 1 }),
    uid: str('UID of the owner.'),
  },
  { required: ['apiVersion', 'cluster', 'name', 'resource', 'uid'] },
);

const spec = object('Desired state of the logical cluster.', {
  createdBy,
  directlyDeletable: { ...bool('Whether users may delete the logical cluster by deleting this object from inside it.'), default: false },
  initializers: initializers('Initializers set on creation by the system; copied to status when initialization starts.'),
  owner,
  terminators: terminators('Terminators set on creation by the system; copied to status when termination starts.'),
});
spec.default = {};

const condition = object(
  'One observation of the logical cluster\'s state.',
  {
    lastTransitionTime: str('When the condition last changed status.', { format: 'date-time' }),
    message: str('Human-readable details about the transition.'),
    reason: str('CamelCase reason of the last transition.'),
    severity: str('Classification of the reason (Error, Warning, Info); only set when status is False.'),
    status: str('True, False or Unknown.'),
    type: str('Type of the condition, CamelCase or `<domain>/<CamelCase>`.'),
  },
  { required: ['lastTransitionTime', 'status', 'type'] },
);

const status = object('Observed state of the logical cluster.', {
  URL: str('Address of the Kubernetes-like endpoint serving this logical cluster.'),
  conditions: arrayOf(condition, 'Current processing state of the logical cluster.'),
  initializers: initializers(
    'Initializers that must all be removed by their controllers before the logical cluster leaves the Initializing phase.',
  ),
  phase: {
    ...str('Phase of the logical cluster.'),
    default: 'Scheduling',
    enum: ['Scheduling', 'Initializing', 'Ready', 'Unavailable', 'Inactive', 'Terminating', 'Deleting'],
  },
  terminators: terminators(
    'Terminators that must all be removed by their controllers before the logical cluster can be deleted.',
  ),
});
status.default = {};

const logicalCluster = kindSchema(
  'core.kcp.io',
  'v1alpha1',
  'LogicalCluster',
  'A LogicalCluster describes the logical cluster it lives in; used to authorize requests and track state. Always named "cluster".',
  { spec, status },
);

/** core.kcp.io/v1alpha1 schemas keyed by definition name. */
export const KCP_SCHEMAS: Record<string, Schema> = {
  [`${KCP_CORE}.LogicalCluster`]: logicalCluster,
};
