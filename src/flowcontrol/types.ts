/**
 * The flowcontrol.apiserver.k8s.io/v1 types (k8s.io/api/flowcontrol/v1) as the dispatcher reads
 * them, their defaults (pkg/apis/flowcontrol/v1/defaults.go) and the constants of the API.
 */
import type { KubeObject } from '../apimachinery/meta.js';

export const FLOWCONTROL_GROUP = 'flowcontrol.apiserver.k8s.io';
export const FLOWCONTROL_VERSION = 'v1';
export const FLOWCONTROL_API_VERSION = `${FLOWCONTROL_GROUP}/${FLOWCONTROL_VERSION}`;
/** Watch-cache keys (`<group>/<plural>`) of the two resources. */
export const FLOW_SCHEMAS_GR = `${FLOWCONTROL_GROUP}/flowschemas`;
export const PRIORITY_LEVELS_GR = `${FLOWCONTROL_GROUP}/prioritylevelconfigurations`;

/** Wildcards of the API (kube's `VerbAll`, `APIGroupAll`, `ResourceAll`, `NonResourceAll`, `NameAll`, `NamespaceEvery`). */
export const ALL = '*';

/**
 * kube's `apf.kubernetes.io/autoupdate-spec` annotation: "true" lets the server keep a suggested
 * object's spec equal to its built-in default; "false" leaves it to the administrator.
 */
export const AUTO_UPDATE_ANNOTATION = 'apf.kubernetes.io/autoupdate-spec';

/** Names of the mandatory objects. */
export const EXEMPT = 'exempt';
export const CATCH_ALL = 'catch-all';

/** kube's defaults of `limited.nominalConcurrencyShares` (v1: 30), queues (64), handSize (8), queueLengthLimit (50). */
export const DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30;
export const DEFAULT_QUEUES = 64;
export const DEFAULT_HAND_SIZE = 8;
export const DEFAULT_QUEUE_LENGTH_LIMIT = 50;
/** kube's default `matchingPrecedence` (1000). */
export const DEFAULT_MATCHING_PRECEDENCE = 1000;

export interface UserSubject { name: string }
export interface GroupSubject { name: string }
export interface ServiceAccountSubject { namespace: string; name: string }
/** Who a rule applies to: a user, a group or service accounts (`name: "*"`: all of a namespace). */
export interface Subject { kind: 'User' | 'Group' | 'ServiceAccount'; user?: UserSubject; group?: GroupSubject; serviceAccount?: ServiceAccountSubject }
export interface ResourcePolicyRule { verbs: string[]; apiGroups: string[]; resources: string[]; clusterScope?: boolean; namespaces?: string[] }
export interface NonResourcePolicyRule { verbs: string[]; nonResourceURLs: string[] }
export interface PolicyRulesWithSubjects { subjects: Subject[]; resourceRules?: ResourcePolicyRule[]; nonResourceRules?: NonResourcePolicyRule[] }
export type DistinguisherMethod = 'ByUser' | 'ByNamespace';
export interface FlowSchemaSpec {
  priorityLevelConfiguration: { name: string };
  matchingPrecedence?: number;
  distinguisherMethod?: { type: DistinguisherMethod };
  rules?: PolicyRulesWithSubjects[];
}
export interface QueuingConfiguration { queues?: number; handSize?: number; queueLengthLimit?: number }
export interface LimitedPriorityLevelConfiguration {
  nominalConcurrencyShares?: number;
  lendablePercent?: number;
  borrowingLimitPercent?: number;
  limitResponse: { type: 'Queue' | 'Reject'; queuing?: QueuingConfiguration };
}
export interface PriorityLevelSpec {
  type: 'Limited' | 'Exempt';
  limited?: LimitedPriorityLevelConfiguration;
  exempt?: { nominalConcurrencyShares?: number; lendablePercent?: number };
}

/** A stored FlowSchema / PriorityLevelConfiguration. */
export type FlowSchema = KubeObject & { spec: FlowSchemaSpec };
export type PriorityLevelConfiguration = KubeObject & { spec: PriorityLevelSpec };

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {});

/** Applies kube's v1 defaults to a FlowSchema in place (matchingPrecedence 1000). */
export function defaultFlowSchema(obj: KubeObject): void {
  const spec = asObj(obj.spec);
  if (obj.spec === undefined) obj.spec = spec;
  if (spec.matchingPrecedence === undefined || spec.matchingPrecedence === 0) spec.matchingPrecedence = DEFAULT_MATCHING_PRECEDENCE;
}

/**
 * Applies kube's v1 defaults to a PriorityLevelConfiguration in place: limited shares 30, lendable
 * 0 %, queuing 64 queues, hand 8, length 50; exempt shares and lendable 0.
 */
export function defaultPriorityLevel(obj: KubeObject): void {
  const spec = asObj(obj.spec);
  if (obj.spec === undefined) obj.spec = spec;
  if (spec.limited && typeof spec.limited === 'object') {
    const limited = spec.limited as Obj;
    limited.nominalConcurrencyShares ??= DEFAULT_NOMINAL_CONCURRENCY_SHARES;
    limited.lendablePercent ??= 0;
    const response = asObj(limited.limitResponse);
    const queuing = response.queuing;
    if (queuing && typeof queuing === 'object') {
      const q = queuing as Obj;
      if (!q.queues) q.queues = DEFAULT_QUEUES;
      if (!q.handSize) q.handSize = DEFAULT_HAND_SIZE;
      if (!q.queueLengthLimit) q.queueLengthLimit = DEFAULT_QUEUE_LENGTH_LIMIT;
    }
  }
  if (spec.exempt && typeof spec.exempt === 'object') {
    const exempt = spec.exempt as Obj;
    exempt.nominalConcurrencyShares ??= 0;
    exempt.lendablePercent ??= 0;
  }
}
