/**
 * The flowcontrol.apiserver.k8s.io/v1 resources served in every logical cluster (kcp lists
 * FlowSchemas and PriorityLevelConfigurations among its built-in APIs): cluster-scoped, with a
 * status subresource, generation tracked on spec changes (kube's strategies in
 * pkg/registry/flowcontrol), kube's table columns (pkg/printers/internalversion). Only the
 * objects of the `system:admin` logical cluster configure the shard's dispatcher.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor, UpdateReset } from '../apis/types.js';
import { FLOWCONTROL_GROUP, FLOWCONTROL_VERSION, defaultFlowSchema, defaultPriorityLevel } from './types.js';
import { validateFlowSchema, validatePriorityLevel } from './validation.js';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {});
const none = (v: unknown) => (v === undefined || v === null ? '<none>' : v);

/** A create starts without status (kube's strategies); the store keeps it on updates of the main resource. */
const clearStatus = (obj: KubeObject) => { delete obj.status; };

/**
 * kube's flowSchemaStatusStrategy / priorityLevelConfigurationStatusStrategy: spec and the whole
 * metadata (but managedFields) as stored.
 */
const STATUS_RESET: UpdateReset = { base: 'request', fromStored: ['spec'], metadata: 'stored' };

export const FLOW_SCHEMA_DESCRIPTOR: ResourceDescriptor = {
  group: FLOWCONTROL_GROUP, version: FLOWCONTROL_VERSION, kind: 'FlowSchema', listKind: 'FlowSchemaList', plural: 'flowschemas', singular: 'flowschema',
  namespaced: false, verbs: VERBS, hasStatus: true,
  columns: [
    { name: 'PriorityLevel', type: 'string', priority: 0, cell: (o) => asObj(asObj(o.spec).priorityLevelConfiguration).name },
    { name: 'MatchingPrecedence', type: 'string', priority: 0, cell: (o) => asObj(o.spec).matchingPrecedence },
    { name: 'DistinguisherMethod', type: 'string', priority: 0, cell: (o) => none(asObj(asObj(o.spec).distinguisherMethod).type) },
    { name: 'Age', type: 'string', priority: 0, cell: () => undefined },
    {
      name: 'MissingPL', type: 'string', priority: 0,
      cell: (o) => ((asObj(o.status).conditions as Obj[] | undefined) ?? []).find((c) => asObj(c).type === 'Dangling')?.status ?? '?',
    },
  ],
  strategy: {
    tracksGeneration: true,
    defaults: defaultFlowSchema,
    prepareForCreate: clearStatus,
    updateResets: { status: STATUS_RESET },
    validate: validateFlowSchema,
  },
};

export const PRIORITY_LEVEL_DESCRIPTOR: ResourceDescriptor = {
  group: FLOWCONTROL_GROUP, version: FLOWCONTROL_VERSION, kind: 'PriorityLevelConfiguration', listKind: 'PriorityLevelConfigurationList',
  plural: 'prioritylevelconfigurations', singular: 'prioritylevelconfiguration', namespaced: false, verbs: VERBS, hasStatus: true,
  columns: [
    { name: 'Type', type: 'string', priority: 0, cell: (o) => asObj(o.spec).type },
    { name: 'NominalConcurrencyShares', type: 'string', priority: 0, cell: (o) => none(asObj(asObj(o.spec).limited).nominalConcurrencyShares) },
    { name: 'Queues', type: 'string', priority: 0, cell: (o) => none(asObj(asObj(asObj(asObj(o.spec).limited).limitResponse).queuing).queues) },
    { name: 'HandSize', type: 'string', priority: 0, cell: (o) => none(asObj(asObj(asObj(asObj(o.spec).limited).limitResponse).queuing).handSize) },
    { name: 'QueueLengthLimit', type: 'string', priority: 0, cell: (o) => none(asObj(asObj(asObj(asObj(o.spec).limited).limitResponse).queuing).queueLengthLimit) },
    { name: 'Age', type: 'string', priority: 0, cell: () => undefined },
  ],
  strategy: {
    tracksGeneration: true,
    defaults: defaultPriorityLevel,
    prepareForCreate: clearStatus,
    updateResets: { status: STATUS_RESET },
    validate: validatePriorityLevel,
  },
};
