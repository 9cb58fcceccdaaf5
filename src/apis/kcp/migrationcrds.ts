/**
 * migration.kcp.io LogicalClusterMigration as a CustomResourceDefinition: group, kind, the spec
 * (`logicalCluster`, `destinationShard`), the phases and printer columns of kcp's
 * (github kcp-dev/kcp config/crds/migration.kcp.io_logicalclustermigrations.yaml, Apache-2.0,
 * copyright The KCP Authors), which kcp serves behind its `LogicalClusterMigration` feature gate
 * through an APIExport. kcp-ts serves it as a system resource and acts on the objects in the
 * `root` workspace (src/shards/migration.ts); `spec.includeSubtree` is kcp-ts's. Its status carries kcp's `originShard`,
 * `entriesCopied` and conditions, and what kcp-ts measures: `writePauseMilliseconds`,
 * `objectsPerSecond`.
 */
import type { KubeObject } from '../../apimachinery/meta.js';

const condition = {
  type: 'object', required: ['lastTransitionTime', 'status', 'type'],
  properties: {
    lastTransitionTime: { type: 'string', format: 'date-time', description: 'Last time the condition transitioned from one status to another.' },
    message: { type: 'string', description: 'A human readable message indicating details about the transition.' },
    reason: { type: 'string', description: 'The reason for the condition\'s last transition in CamelCase.' },
    severity: { type: 'string', description: 'Severity provides an explicit classification of Reason code.' },
    status: { type: 'string', description: 'Status of the condition, one of True, False, Unknown.' },
    type: { type: 'string', description: 'Type of condition in CamelCase.' },
  },
};

export const MIGRATION_CRDS: KubeObject[] = [{
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
  metadata: { name: 'logicalclustermigrations.migration.kcp.io' },
  spec: {
    group: 'migration.kcp.io',
    names: { categories: ['kcp'], kind: 'LogicalClusterMigration', listKind: 'LogicalClusterMigrationList', plural: 'logicalclustermigrations', singular: 'logicalclustermigration' },
    scope: 'Cluster',
    versions: [{
      name: 'v1alpha1', served: true, storage: true,
      subresources: { status: {} },
      additionalPrinterColumns: [
        { description: 'The logical cluster being migrated', jsonPath: '.spec.logicalCluster', name: 'Logical Cluster', type: 'string' },
        { description: 'The current phase of the migration', jsonPath: '.status.phase', name: 'Phase', type: 'string' },
        { description: 'The destination shard', jsonPath: '.spec.destinationShard', name: 'Destination', type: 'string' },
        { description: 'Number of objects copied so far', jsonPath: '.status.entriesCopied', name: 'Entries Copied', type: 'integer' },
        { description: 'How long writes to the logical cluster paused at the cutover', jsonPath: '.status.writePauseMilliseconds', name: 'Pause (ms)', type: 'integer' },
      ],
      schema: {
        openAPIV3Schema: {
          description: 'LogicalClusterMigration describes a migration of a logical cluster from one shard to another.',
          type: 'object',
          properties: {
            apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
            kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
            metadata: { type: 'object' },
            spec: {
              description: 'LogicalClusterMigrationSpec holds the desired state of the migration.',
              type: 'object', required: ['destinationShard', 'logicalCluster'],
              properties: {
                destinationShard: { type: 'string', minLength: 1, description: 'destinationShard is the name of the shard to migrate the logical cluster to.' },
                logicalCluster: { type: 'string', minLength: 1, description: 'logicalCluster is the name of the logical cluster to migrate.' },
                includeSubtree: { type: 'boolean', description: 'includeSubtree migrates, after this logical cluster, the logical clusters of its child workspaces (and theirs) to the same shard, each by a LogicalClusterMigration of its own. A kcp-ts field; kcp migrates each workspace separately.' },
              },
              'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'spec is immutable' }],
            },
            status: {
              description: 'LogicalClusterMigrationStatus communicates the observed state of the migration.',
              type: 'object',
              properties: {
                phase: { type: 'string', enum: ['Preparing', 'Migrating', 'OriginCleanup', 'DestinationFinalize', 'Completed', 'Failed'], description: 'phase is the current phase of the migration.' },
                originShard: { type: 'string', description: 'originShard is the shard the logical cluster was on when the migration began.' },
                entriesCopied: { type: 'integer', format: 'int64', description: 'entriesCopied is the number of objects copied to the destination shard, catch-up and cutover included.' },
                writePauseMilliseconds: { type: 'integer', format: 'int64', description: 'writePauseMilliseconds is how long requests to the logical cluster were held at the cutover, from the fence on the origin to the hand-over.' },
                objectsPerSecond: { type: 'integer', format: 'int64', description: 'objectsPerSecond is the rate of the bulk copy.' },
                conditions: { type: 'array', description: 'Current processing state of the migration.', items: condition },
              },
            },
          },
        },
      },
    }],
  },
}];
