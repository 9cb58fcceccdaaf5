/**
 * OpenAPI v3 schemas of flowcontrol.apiserver.k8s.io/v1 (FlowSchema, PriorityLevelConfiguration
 * and their parts), following k8s.io/api/flowcontrol/v1.
 */
import { type Schema, TIME, arrayOf, bool, int32, kindSchema, object, ref, str, stringList } from './helpers.js';

/** Definition-name prefix of flowcontrol.apiserver.k8s.io/v1 types. */
export const FLOWCONTROL = 'io.k8s.api.flowcontrol.v1';
const R = (name: string, description?: string) => ref(`${FLOWCONTROL}.${name}`, description);
const set = { listType: 'set' as const };

const condition = (what: string) => object(`${what}Condition describes conditions for a ${what}.`, {
  lastTransitionTime: ref(TIME, '`lastTransitionTime` is the last time the condition transitioned from one status to another.'),
  message: str('`message` is a human-readable message indicating details about last transition.'),
  reason: str("`reason` is a unique, one-word, CamelCase reason for the condition's last transition."),
  status: str('`status` is the status of the condition. Can be True, False, Unknown. Required.'),
  type: str('`type` is the type of the condition. Required.'),
});

const status = (what: string) => object(`${what}Status represents the current state of a ${what}.`, {
  conditions: arrayOf(R(`${what}Condition`), '`conditions` is a list of the current states of the object.', { listType: 'map', mapKeys: ['type'], patchMergeKey: 'type', patchStrategy: 'merge' }),
});

/** flowcontrol.apiserver.k8s.io/v1 schemas keyed by definition name. */
export const FLOWCONTROL_SCHEMAS: Record<string, Schema> = {
  [`${FLOWCONTROL}.FlowSchema`]: kindSchema('flowcontrol.apiserver.k8s.io', 'v1', 'FlowSchema',
    'FlowSchema defines the schema of a group of flows. Note that a flow is made up of a set of inbound API requests with similar attributes and is identified by a pair of strings: the name of the FlowSchema and a "flow distinguisher".', {
      spec: R('FlowSchemaSpec', '`spec` is the specification of the desired behavior of a FlowSchema.'),
      status: R('FlowSchemaStatus', '`status` is the current status of a FlowSchema.'),
    }),
  [`${FLOWCONTROL}.FlowSchemaSpec`]: object('FlowSchemaSpec describes how the FlowSchema\'s specification looks like.', {
    distinguisherMethod: R('FlowDistinguisherMethod', '`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.'),
    matchingPrecedence: int32('`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence. Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.'),
    priorityLevelConfiguration: R('PriorityLevelConfigurationReference', '`priorityLevelConfiguration` should reference a PriorityLevelConfiguration in the cluster. If the reference cannot be resolved, the FlowSchema will be ignored and marked as invalid in its status. Required.'),
    rules: arrayOf(R('PolicyRulesWithSubjects'), '`rules` describes which requests will match this flow schema. This FlowSchema matches a request if and only if at least one member of rules matches the request. if it is an empty slice, there will be no requests matching the FlowSchema.', { listType: 'atomic' }),
  }, { required: ['priorityLevelConfiguration'] }),
  [`${FLOWCONTROL}.FlowDistinguisherMethod`]: object('FlowDistinguisherMethod specifies the method of a flow distinguisher.', {
    type: str('`type` is the type of flow distinguisher method The supported types are "ByUser" and "ByNamespace". Required.'),
  }, { required: ['type'] }),
  [`${FLOWCONTROL}.PriorityLevelConfigurationReference`]: object('PriorityLevelConfigurationReference contains information that points to the "request-priority" being used.', {
    name: str('`name` is the name of the priority level configuration being referenced Required.'),
  }, { required: ['name'] }),
  [`${FLOWCONTROL}.PolicyRulesWithSubjects`]: object('PolicyRulesWithSubjects prescribes a test that applies to a request to an apiserver. The test considers the subject making the request, the verb being requested, and the resource to be acted upon. This PolicyRulesWithSubjects matches a request if and only if both (a) at least one member of subjects matches the request and (b) at least one member of resourceRules or nonResourceRules matches the request.', {
    nonResourceRules: arrayOf(R('NonResourcePolicyRule'), '`nonResourceRules` is a list of NonResourcePolicyRules that identify matching requests according to their verb and the target non-resource URL.', { listType: 'atomic' }),
    resourceRules: arrayOf(R('ResourcePolicyRule'), '`resourceRules` is a slice of ResourcePolicyRules that identify matching requests according to their verb and the target resource. At least one of `resourceRules` and `nonResourceRules` has to be non-empty.', { listType: 'atomic' }),
    subjects: arrayOf(R('Subject'), 'subjects is the list of normal user, serviceaccount, or group that this rule cares about. There must be at least one member in this slice. A slice that includes both the system:authenticated and system:unauthenticated user groups matches every request. Required.', { listType: 'atomic' }),
  }, { required: ['subjects'] }),
  [`${FLOWCONTROL}.Subject`]: object('Subject matches the originator of a request, as identified by the request authentication system. There are three ways of matching an originator; by user, group, or service account.', {
    group: R('GroupSubject', '`group` matches based on user group name.'),
    kind: str('`kind` indicates which one of the other fields is non-empty. Required'),
    serviceAccount: R('ServiceAccountSubject', '`serviceAccount` matches ServiceAccounts.'),
    user: R('UserSubject', '`user` matches based on username.'),
  }, { required: ['kind'], extra: { 'x-kubernetes-unions': [{ discriminator: 'kind', 'fields-to-discriminateBy': { group: 'Group', serviceAccount: 'ServiceAccount', user: 'User' } }] } }),
  [`${FLOWCONTROL}.UserSubject`]: object('UserSubject holds detailed information for user-kind subject.', { name: str('`name` is the username that matches, or "*" to match all usernames. Required.') }, { required: ['name'] }),
  [`${FLOWCONTROL}.GroupSubject`]: object('GroupSubject holds detailed information for group-kind subject.', { name: str('name is the user group that matches, or "*" to match all user groups. Required.') }, { required: ['name'] }),
  [`${FLOWCONTROL}.ServiceAccountSubject`]: object('ServiceAccountSubject holds detailed information for service-account-kind subject.', {
    name: str('`name` is the name of matching ServiceAccount objects, or "*" to match regardless of name. Required.'),
    namespace: str('`namespace` is the namespace of matching ServiceAccount objects. Required.'),
  }, { required: ['namespace', 'name'] }),
  [`${FLOWCONTROL}.ResourcePolicyRule`]: object('ResourcePolicyRule is a predicate that matches some resource requests, testing the request\'s verb and the target resource. A ResourcePolicyRule matches a resource request if and only if: (a) at least one member of verbs matches the request, (b) at least one member of apiGroups matches the request, (c) at least one member of resources matches the request, and (d) either (d1) the request does not specify a namespace (i.e., `Namespace==""`) and clusterScope is true or (d2) the request specifies a namespace and least one member of namespaces matches the request\'s namespace.', {
    apiGroups: stringList('`apiGroups` is a list of matching API groups and may not be empty. "*" matches all API groups and, if present, must be the only entry. Required.', set),
    clusterScope: bool('`clusterScope` indicates whether to match requests that do not specify a namespace (which happens either because the resource is not namespaced or the request targets all namespaces). If this field is omitted or false then the `namespaces` field must contain a non-empty list.'),
    namespaces: stringList('`namespaces` is a list of target namespaces that restricts matches.  A request that specifies a target namespace matches only if either (a) this list contains that target namespace or (b) this list contains "*".  Note that "*" matches any specified namespace but does not match a request that _does not specify_ a namespace (see the `clusterScope` field for that). This list may be empty, but only if `clusterScope` is true.', set),
    resources: stringList('`resources` is a list of matching resources (i.e., lowercase and plural) with, if desired, subresource.  For example, [ "services", "nodes/status" ].  This list may not be empty. "*" matches all resources and, if present, must be the only entry. Required.', set),
    verbs: stringList('`verbs` is a list of matching verbs and may not be empty. "*" matches all verbs and, if present, must be the only entry. Required.', set),
  }, { required: ['verbs', 'apiGroups', 'resources'] }),
  [`${FLOWCONTROL}.NonResourcePolicyRule`]: object('NonResourcePolicyRule is a predicate that matches non-resource requests according to their verb and the target non-resource URL. A NonResourcePolicyRule matches a request if and only if both (a) at least one member of verbs matches the request and (b) at least one member of nonResourceURLs matches the request.', {
    nonResourceURLs: stringList('`nonResourceURLs` is a set of url prefixes that a user should have access to and may not be empty. For example:\n  - "/healthz" is legal\n  - "/hea*" is illegal\n  - "/hea" is legal but matches nothing\n  - "/hea/*" also matches nothing\n  - "/healthz/*" matches all per-component health checks.\n"*" matches all non-resource urls. if it is present, it must be the only entry. Required.', set),
    verbs: stringList('`verbs` is a list of matching verbs and may not be empty. "*" matches all verbs. If it is present, it must be the only entry. Required.', set),
  }, { required: ['verbs', 'nonResourceURLs'] }),
  [`${FLOWCONTROL}.FlowSchemaStatus`]: status('FlowSchema'),
  [`${FLOWCONTROL}.FlowSchemaCondition`]: condition('FlowSchema'),
  [`${FLOWCONTROL}.PriorityLevelConfiguration`]: kindSchema('flowcontrol.apiserver.k8s.io', 'v1', 'PriorityLevelConfiguration', 'PriorityLevelConfiguration represents the configuration of a priority level.', {
    spec: R('PriorityLevelConfigurationSpec', '`spec` is the specification of the desired behavior of a "request-priority".'),
    status: R('PriorityLevelConfigurationStatus', '`status` is the current status of a "request-priority".'),
  }),
  [`${FLOWCONTROL}.PriorityLevelConfigurationSpec`]: object('PriorityLevelConfigurationSpec specifies the configuration of a priority level.', {
    exempt: R('ExemptPriorityLevelConfiguration', '`exempt` specifies how requests are handled for an exempt priority level. This field MUST be empty if `type` is `"Limited"`.'),
    limited: R('LimitedPriorityLevelConfiguration', '`limited` specifies how requests are handled for a Limited priority level. This field must be non-empty if and only if `type` is `"Limited"`.'),
    type: str('`type` indicates whether this priority level is subject to limitation on request execution.  A value of `"Exempt"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `"Limited"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server\'s limited capacity is made available exclusively to this priority level. Required.'),
  }, { required: ['type'], extra: { 'x-kubernetes-unions': [{ discriminator: 'type', 'fields-to-discriminateBy': { exempt: 'Exempt', limited: 'Limited' } }] } }),
  [`${FLOWCONTROL}.LimitedPriorityLevelConfiguration`]: object('LimitedPriorityLevelConfiguration specifies how to handle requests that are subject to limits. It addresses two issues:\n  - How are requests for this priority level limited?\n  - What should be done with requests that exceed the limit?', {
    borrowingLimitPercent: int32('`borrowingLimitPercent`, if present, configures a limit on how many seats this priority level can borrow from other priority levels.'),
    lendablePercent: int32("`lendablePercent` prescribes the fraction of the level's NominalCL that can be borrowed by other priority levels. The value of this field must be between 0 and 100, inclusive, and it defaults to 0."),
    limitResponse: R('LimitResponse', '`limitResponse` indicates what to do with requests that can not be executed right now'),
    nominalConcurrencyShares: int32("`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values: NominalCL(i) = ceil( ServerCL * NCS(i) / sum_ncs ). If not specified, this field defaults to a value of 30."),
  }),
  [`${FLOWCONTROL}.ExemptPriorityLevelConfiguration`]: object('ExemptPriorityLevelConfiguration describes the configurable aspects of the handling of exempt requests. In the mandatory exempt configuration object the values in the fields here can be modified by authorized users, unlike the rest of the `spec`.', {
    lendablePercent: int32("`lendablePercent` prescribes the fraction of the level's NominalCL that can be borrowed by other priority levels.  This value of this field must be between 0 and 100, inclusive, and it defaults to 0."),
    nominalConcurrencyShares: int32('`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This field has a default value of zero.'),
  }),
  [`${FLOWCONTROL}.LimitResponse`]: object('LimitResponse defines how to handle requests that can not be executed right now.', {
    queuing: R('QueuingConfiguration', '`queuing` holds the configuration parameters for queuing. This field may be non-empty only if `type` is `"Queue"`.'),
    type: str('`type` is "Queue" or "Reject". "Queue" means that requests that can not be executed upon arrival are held in a queue until they can be executed or a queuing limit is reached. "Reject" means that requests that can not be executed upon arrival are rejected. Required.'),
  }, { required: ['type'], extra: { 'x-kubernetes-unions': [{ discriminator: 'type', 'fields-to-discriminateBy': { queuing: 'Queuing' } }] } }),
  [`${FLOWCONTROL}.QueuingConfiguration`]: object('QueuingConfiguration holds the configuration parameters for queuing', {
    handSize: int32("`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues). This field has a default value of 8."),
    queueLengthLimit: int32('`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.'),
    queues: int32('`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.'),
  }),
  [`${FLOWCONTROL}.PriorityLevelConfigurationStatus`]: status('PriorityLevelConfiguration'),
  [`${FLOWCONTROL}.PriorityLevelConfigurationCondition`]: condition('PriorityLevelConfiguration'),
};
