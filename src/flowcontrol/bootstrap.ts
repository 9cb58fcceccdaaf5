/**
 * kube-apiserver's mandatory and suggested flow-control configuration
 * (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go, flowcontrol v1 as of kube 1.29+),
 * and its ensurer (pkg/registry/flowcontrol/ensurer): mandatory objects are re-created and their
 * spec restored whenever they change; suggested objects are created when missing and their spec
 * kept up to date only while `apf.kubernetes.io/autoupdate-spec` is "true" (or, without the
 * annotation, while they were never changed: generation 1).
 *
 * The configuration of a shard lives in its `system:admin` logical cluster (kcp's choice: one
 * shard-wide configuration, not one per tenant).
 */
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import {
  ALL, AUTO_UPDATE_ANNOTATION, CATCH_ALL, EXEMPT, FLOWCONTROL_API_VERSION, type DistinguisherMethod, type FlowSchemaSpec, type NonResourcePolicyRule,
  type PolicyRulesWithSubjects, type PriorityLevelSpec, type ResourcePolicyRule, type Subject,
} from './types.js';

const groups = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'Group', group: { name } }));
const users = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'User', user: { name } }));
const kubeSystemServiceAccounts = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name } }));
const resourceRule = (verbs: string[], apiGroups: string[], resources: string[], namespaces: string[], clusterScope: boolean): ResourcePolicyRule =>
  ({ verbs, apiGroups, resources, ...(clusterScope ? { clusterScope } : {}), namespaces });
const ALL_RESOURCES: ResourcePolicyRule[] = [resourceRule([ALL], [ALL], [ALL], [ALL], true)];
const ALL_NON_RESOURCES: NonResourcePolicyRule[] = [{ verbs: [ALL], nonResourceURLs: [ALL] }];

function limited(shares: number, lendablePercent: number, queuing?: { queues: number; handSize: number; queueLengthLimit: number }): PriorityLevelSpec {
  return {
    type: 'Limited',
    limited: { nominalConcurrencyShares: shares, lendablePercent, limitResponse: queuing ? { type: 'Queue', queuing } : { type: 'Reject' } },
  };
}

function flowSchema(priorityLevel: string, matchingPrecedence: number, method: DistinguisherMethod | undefined, ...rules: PolicyRulesWithSubjects[]): FlowSchemaSpec {
  return { priorityLevelConfiguration: { name: priorityLevel }, matchingPrecedence, ...(method ? { distinguisherMethod: { type: method } } : {}), rules };
}

const allOf = (subjects: Subject[]): PolicyRulesWithSubjects => ({ subjects, resourceRules: ALL_RESOURCES, nonResourceRules: ALL_NON_RESOURCES });

/** The mandatory priority levels: `exempt` (never limited) and `catch-all` (5 shares, rejects when full). */
export const MANDATORY_PRIORITY_LEVELS: Record<string, PriorityLevelSpec> = {
  [EXEMPT]: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } },
  [CATCH_ALL]: limited(5, 0),
};

/** The suggested priority levels, with kube's shares, lendable percentages and queuing. */
export const SUGGESTED_PRIORITY_LEVELS: Record<string, PriorityLevelSpec> = {
  system: limited(30, 33, { queues: 64, handSize: 6, queueLengthLimit: 50 }),
  'node-high': limited(40, 25, { queues: 64, handSize: 6, queueLengthLimit: 50 }),
  'leader-election': limited(10, 0, { queues: 16, handSize: 4, queueLengthLimit: 50 }),
  'workload-high': limited(40, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
  'workload-low': limited(100, 90, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
  'global-default': limited(20, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
};

/** The mandatory flow schemas: `exempt` (system:masters, precedence 1) and `catch-all` (everyone, 10000). */
export const MANDATORY_FLOW_SCHEMAS: Record<string, FlowSchemaSpec> = {
  [EXEMPT]: flowSchema(EXEMPT, 1, undefined, allOf(groups('system:masters'))),
  [CATCH_ALL]: flowSchema(CATCH_ALL, 10000, 'ByUser', allOf(groups('system:unauthenticated', 'system:authenticated'))),
};

const LEADER_ELECTION_VERBS = ['get', 'create', 'update'];

/** The suggested flow schemas, with kube's precedences, distinguishers, subjects and rules. */
export const SUGGESTED_FLOW_SCHEMAS: Record<string, FlowSchemaSpec> = {
  probes: flowSchema(EXEMPT, 2, undefined, {
    subjects: groups('system:unauthenticated', 'system:authenticated'),
    nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }],
  }),
  'system-leader-election': flowSchema('leader-election', 100, 'ByUser', {
    subjects: [...users('system:kube-controller-manager', 'system:kube-scheduler'), ...kubeSystemServiceAccounts(ALL)],
    resourceRules: [resourceRule(LEADER_ELECTION_VERBS, ['coordination.k8s.io'], ['leases'], [ALL], false)],
  }),
  'endpoint-controller': flowSchema('workload-high', 150, 'ByUser', {
    subjects: [...users('system:kube-controller-manager'), ...kubeSystemServiceAccounts('endpoint-controller', 'endpointslicemirroring-controller')],
    resourceRules: [resourceRule(LEADER_ELECTION_VERBS, [''], ['endpoints'], [ALL], false)],
  }),
  'workload-leader-election': flowSchema('leader-election', 200, 'ByUser', {
    subjects: kubeSystemServiceAccounts(ALL),
    resourceRules: [resourceRule(LEADER_ELECTION_VERBS, ['coordination.k8s.io'], ['leases'], [ALL], false)],
  }),
  'system-node-high': flowSchema('node-high', 400, 'ByUser', {
    subjects: groups('system:nodes'),
    resourceRules: [
      resourceRule([ALL], [''], ['nodes', 'nodes/status'], [ALL], true),
      resourceRule([ALL], ['coordination.k8s.io'], ['leases'], [ALL], false),
    ],
  }),
  'system-nodes': flowSchema('system', 500, 'ByUser', allOf(groups('system:nodes'))),
  'kube-controller-manager': flowSchema('workload-high', 800, 'ByNamespace', allOf(users('system:kube-controller-manager'))),
  'kube-scheduler': flowSchema('workload-high', 800, 'ByNamespace', allOf(users('system:kube-scheduler'))),
  'kube-system-service-accounts': flowSchema('workload-high', 900, 'ByNamespace', allOf(kubeSystemServiceAccounts(ALL))),
  'service-accounts': flowSchema('workload-low', 9000, 'ByUser', allOf(groups('system:serviceaccounts'))),
  'global-default': flowSchema('global-default', 9900, 'ByUser', allOf(groups('system:unauthenticated', 'system:authenticated'))),
};

/**
 * Whether a stored PriorityLevelConfiguration's spec equals the bootstrap one; for `exempt` the
 * administrator may set `exempt.nominalConcurrencyShares` and `exempt.lendablePercent` (kube
 * 1.29+), so only the rest is compared.
 */
export function specMatches(name: string, kind: 'FlowSchema' | 'PriorityLevelConfiguration', spec: unknown, wanted: object): boolean {
  if (kind === 'PriorityLevelConfiguration' && name === EXEMPT) {
    const s = (spec ?? {}) as PriorityLevelSpec;
    return s.type === 'Exempt' && s.limited === undefined;
  }
  return canonical(spec) === canonical(wanted);
}

/** JSON with sorted keys, for comparing specs whatever their key order. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
}

/** Whether the ensurer may overwrite a suggested object's spec (kube's `shouldUpdateSpec`). */
function autoUpdates(obj: KubeObject): boolean {
  const value = obj.metadata.annotations?.[AUTO_UPDATE_ANNOTATION];
  if (value === 'true' || value === 'false') return value === 'true';
  return obj.metadata.generation === 1;
}

/** The stores and scope the ensurer writes with. */
export interface EnsureTarget {
  flowSchemas: Store;
  priorityLevels: Store;
  /** A system:masters scope in the configuration's logical cluster. */
  scope: RequestScope;
}

/**
 * Creates the missing bootstrap objects and repairs the mandatory ones (and suggested ones that
 * auto-update), priority levels first. Conflicts with concurrent writers are left to the next run.
 */
export async function ensureConfiguration(target: EnsureTarget): Promise<void> {
  const kinds = [
    { kind: 'PriorityLevelConfiguration' as const, store: target.priorityLevels, mandatory: MANDATORY_PRIORITY_LEVELS, suggested: SUGGESTED_PRIORITY_LEVELS },
    { kind: 'FlowSchema' as const, store: target.flowSchemas, mandatory: MANDATORY_FLOW_SCHEMAS, suggested: SUGGESTED_FLOW_SCHEMAS },
  ];
  // Priority levels before the schemas that reference them; the objects of one kind in parallel
  // (each a write with its own fsync: sequentially they would lengthen the shard's start).
  for (const { kind, store, mandatory, suggested } of kinds) {
    const specs = [...Object.entries(mandatory).map(([n, s]) => [n, s, true] as const), ...Object.entries(suggested).map(([n, s]) => [n, s, false] as const)];
    await Promise.all(specs.map(async ([name, spec, isMandatory]) => {
      try {
        await ensureOne(store, target.scope, kind, name, spec, isMandatory);
      } catch (err) {
        if (!isStatus(err, 409, 404)) throw err;
      }
    }));
  }
}

async function ensureOne(store: Store, scope: RequestScope, kind: 'FlowSchema' | 'PriorityLevelConfiguration', name: string, spec: object, mandatory: boolean): Promise<void> {
  let current: KubeObject | undefined;
  try {
    current = JSON.parse(await store.get(scope, name)) as KubeObject;
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
  const wanted = structuredClone(spec) as Record<string, unknown>;
  if (!current) {
    await store.create(scope, { apiVersion: FLOWCONTROL_API_VERSION, kind, metadata: { name, annotations: { [AUTO_UPDATE_ANNOTATION]: 'true' } }, spec: wanted });
    return;
  }
  const update = mandatory || autoUpdates(current);
  if (!update) return;
  const annotated = current.metadata.annotations?.[AUTO_UPDATE_ANNOTATION] === 'true';
  if (specMatches(name, kind, current.spec, wanted) && annotated) return;
  const next: KubeObject = { ...current, metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [AUTO_UPDATE_ANNOTATION]: 'true' } } };
  if (!specMatches(name, kind, current.spec, wanted)) {
    // exempt keeps the administrator's shares and lendable percentage.
    next.spec = kind === 'PriorityLevelConfiguration' && name === EXEMPT ? { ...wanted, exempt: { ...(wanted.exempt as object), ...((current.spec as PriorityLevelSpec | undefined)?.exempt ?? {}) } } : wanted;
  }
  await store.update(scope, name, next);
}

/** Every bootstrap object's name and spec, mandatory and suggested (for tests and docs). */
export const BOOTSTRAP = {
  priorityLevels: { ...MANDATORY_PRIORITY_LEVELS, ...SUGGESTED_PRIORITY_LEVELS },
  flowSchemas: { ...MANDATORY_FLOW_SCHEMAS, ...SUGGESTED_FLOW_SCHEMAS },
};
