/**
 * OpenAPI v3 schemas of admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
 * MutatingWebhookConfiguration (webhooks, rules, client configs, match conditions) and
 * ValidatingAdmissionPolicy and its Binding, following k8s.io/api/admissionregistration/v1; and
 * v1beta1 MutatingAdmissionPolicy and its Binding, following k8s.io/api/admissionregistration/v1beta1.
 */
import { type Schema, LABEL_SELECTOR, arrayOf, bytes, int32, kindSchema, object, ref, str, stringList } from './helpers.js';

/** Definition-name prefix of admissionregistration.k8s.io/v1 types. */
export const ADMISSION = 'io.k8s.api.admissionregistration.v1';
const GROUP = 'admissionregistration.k8s.io';

const ruleWithOperations = object('Operations and resources a webhook applies to.', {
  apiGroups: stringList('API groups of the resources; "" is the core group, "*" all groups.'),
  apiVersions: stringList('API versions of the resources; "*" all versions.'),
  operations: stringList('CREATE, UPDATE, DELETE, CONNECT or "*".'),
  resources: stringList('Resources ("pods"), subresources ("pods/status"), "*", "*/*" or "*/status".'),
  scope: str('"Cluster", "Namespaced" or "*" (default).'),
});

const serviceReference = object('A Service the webhook is reached through.', {
  name: str('Name of the service. Required.'),
  namespace: str('Namespace of the service. Required.'),
  path: str('URL path requests are sent to.'),
  port: int32('Port of the service (default 443).'),
}, { required: ['namespace', 'name'] });

const clientConfig = object('How the API server reaches the webhook: exactly one of url and service.', {
  caBundle: bytes('PEM CA bundle that validates the webhook server certificate (default: the system roots).'),
  service: ref(`${ADMISSION}.ServiceReference`, 'A Service reference (kcp-ts: refused, it has no Services to route to).'),
  url: str('https URL of the webhook, without user, query or fragment.'),
});

const matchCondition = object('A CEL expression that must be true for the webhook to be called.', {
  expression: str('CEL expression over object, oldObject, request and authorizer; must return a bool. Required.'),
  name: str('Identifier of the condition. Required.'),
}, { required: ['name', 'expression'] });

function webhook(mutating: boolean): Schema {
  return object(`A ${mutating ? 'mutating' : 'validating'} admission webhook and what it applies to.`, {
    admissionReviewVersions: stringList('AdmissionReview versions the webhook accepts, in order of preference (v1). Required.'),
    clientConfig: ref(`${ADMISSION}.WebhookClientConfig`, 'How to reach the webhook. Required.'),
    failurePolicy: str('Ignore or Fail (default): what an error calling the webhook does.'),
    matchConditions: arrayOf(ref(`${ADMISSION}.MatchCondition`), 'Conditions that must all hold for the webhook to be called.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
    matchPolicy: str('Exact or Equivalent (default): whether requests through other versions of a resource match.'),
    name: str('Fully qualified name of the webhook (e.g. imagepolicy.example.com). Required.'),
    namespaceSelector: ref(LABEL_SELECTOR, 'Labels of the namespace of the object (or of a Namespace itself); default everything.'),
    objectSelector: ref(LABEL_SELECTOR, 'Labels of the object (new or old); default everything.'),
    ...(mutating ? { reinvocationPolicy: str('Never (default) or IfNeeded: call again when a later webhook changed the object.') } : {}),
    rules: arrayOf(ref(`${ADMISSION}.RuleWithOperations`), 'Operations and resources the webhook applies to.', { listType: 'atomic' }),
    sideEffects: str('None or NoneOnDryRun (required): whether calling the webhook has side effects.'),
    timeoutSeconds: int32('Seconds to wait for the webhook, 1 to 30 (default 10).'),
  }, { required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'] });
}

const validatingConfig = kindSchema(GROUP, 'v1', 'ValidatingWebhookConfiguration', 'Admission webhooks that accept or reject requests without changing objects.', {
  webhooks: arrayOf(ref(`${ADMISSION}.ValidatingWebhook`), 'The webhooks.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
});
const mutatingConfig = kindSchema(GROUP, 'v1', 'MutatingWebhookConfiguration', 'Admission webhooks that may change objects before they are stored.', {
  webhooks: arrayOf(ref(`${ADMISSION}.MutatingWebhook`), 'The webhooks.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
});

const namedRule = object('Operations and resources (optionally by name) a policy applies to.', {
  apiGroups: stringList('API groups; "" is the core group, "*" all groups.'),
  apiVersions: stringList('API versions; "*" all versions.'),
  operations: stringList('CREATE, UPDATE, DELETE, CONNECT or "*".'),
  resourceNames: stringList('Names of the objects; empty means all.'),
  resources: stringList('Resources, subresources ("pods/status"), "*" or "*/*".'),
  scope: str('"Cluster", "Namespaced" or "*" (default).'),
});

const matchResources = object('Which requests a policy or binding applies to.', {
  excludeResourceRules: arrayOf(ref(`${ADMISSION}.NamedRuleWithOperations`), 'Requests never matched.', { listType: 'atomic' }),
  matchPolicy: str('Exact or Equivalent (default).'),
  namespaceSelector: ref(LABEL_SELECTOR, 'Labels of the namespace of the object; default everything.'),
  objectSelector: ref(LABEL_SELECTOR, 'Labels of the object; default everything.'),
  resourceRules: arrayOf(ref(`${ADMISSION}.NamedRuleWithOperations`), 'Requests matched.', { listType: 'atomic' }),
}, { atomic: true });

const validation = object('A CEL expression that must hold for the request.', {
  expression: str('CEL over object, oldObject, request, params, namespaceObject, variables; must return a bool. Required.'),
  message: str('Message when the expression is false.'),
  messageExpression: str('CEL returning the message when the expression is false.'),
  reason: str('Invalid (default), Forbidden, Unauthorized or RequestEntityTooLarge: the HTTP status of a refusal.'),
}, { required: ['expression'] });

const policy = kindSchema(GROUP, 'v1', 'ValidatingAdmissionPolicy', 'Validation rules in CEL, applied to requests through ValidatingAdmissionPolicyBindings.', {
  spec: object('What the policy validates and how.', {
    auditAnnotations: arrayOf(object('An audit annotation computed by CEL.', { key: str('Key of the annotation.'), valueExpression: str('CEL returning the value.') }), 'Audit annotations.', { listType: 'atomic' }),
    failurePolicy: str('Fail (default) or Ignore: what an expression that cannot be evaluated does.'),
    matchConditions: arrayOf(ref(`${ADMISSION}.MatchCondition`), 'Conditions that must all hold for the policy to be evaluated.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
    matchConstraints: ref(`${ADMISSION}.MatchResources`, 'The requests the policy applies to. Required.'),
    paramKind: object('The kind of the parameter resources of bindings.', { apiVersion: str('API version of the kind.'), kind: str('The kind.') }, { atomic: true }),
    validations: arrayOf(ref(`${ADMISSION}.Validation`), 'The validations.', { listType: 'atomic' }),
    variables: arrayOf(object('A named CEL value, usable as variables.<name>.', { expression: str('CEL expression.'), name: str('Name.') }, { required: ['name', 'expression'] }), 'Variables.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
  }),
  status: object('What the server observed of the policy.', {}, { extra: { 'x-kubernetes-preserve-unknown-fields': true } }),
});

/** A binding's `paramRef` (v1 and v1beta1 alike). */
const paramRef = object('The parameter objects.', {
  name: str('Name of the parameter object.'), namespace: str('Namespace of the parameter objects.'),
  parameterNotFoundAction: str('Allow or Deny: what a binding whose parameters are missing does. Required with paramRef.'),
  selector: ref(LABEL_SELECTOR, 'Labels of the parameter objects (instead of name).'),
}, { atomic: true });

const policyBinding = kindSchema(GROUP, 'v1', 'ValidatingAdmissionPolicyBinding', 'Applies a ValidatingAdmissionPolicy, with its parameters and actions.', {
  spec: object('Which policy applies, to what, with which parameters and actions.', {
    matchResources: ref(`${ADMISSION}.MatchResources`, 'Further limits the requests the policy applies to.'),
    paramRef,
    policyName: str('Name of the ValidatingAdmissionPolicy. Required.'),
    validationActions: stringList('Deny, Warn and/or Audit: what a failed validation does. Required.', { listType: 'set' }),
  }),
});

/** Definition-name prefix of admissionregistration.k8s.io/v1beta1 types (MutatingAdmissionPolicy). */
export const ADMISSION_V1BETA1 = 'io.k8s.api.admissionregistration.v1beta1';

const mutation = object('One mutation: a patch computed by CEL.', {
  applyConfiguration: object('With patchType ApplyConfiguration.', { expression: str('CEL returning an Object{…} apply configuration, merged into the object as server-side apply merges.') }, { atomic: true }),
  jsonPatch: object('With patchType JSONPatch.', { expression: str('CEL returning a list of JSONPatch{op, path, value, from} (RFC 6902).') }, { atomic: true }),
  patchType: str('ApplyConfiguration or JSONPatch. Required.'),
}, { required: ['patchType'] });

const mutatingPolicy = kindSchema(GROUP, 'v1beta1', 'MutatingAdmissionPolicy', 'Mutations in CEL, applied to requests through MutatingAdmissionPolicyBindings.', {
  spec: object('What the policy mutates and how.', {
    failurePolicy: str('Fail (default) or Ignore: what an expression or patch that fails does.'),
    matchConditions: arrayOf(ref(`${ADMISSION_V1BETA1}.MatchCondition`), 'Conditions that must all hold for the policy to be applied.', { listType: 'map', mapKeys: ['name'], patchMergeKey: 'name', patchStrategy: 'merge' }),
    matchConstraints: ref(`${ADMISSION_V1BETA1}.MatchResources`, 'The requests the policy applies to. Required.'),
    mutations: arrayOf(ref(`${ADMISSION_V1BETA1}.Mutation`), 'The mutations, applied in order. Required.', { listType: 'atomic' }),
    paramKind: object('The kind of the parameter resources of bindings.', { apiVersion: str('API version of the kind.'), kind: str('The kind.') }, { atomic: true }),
    reinvocationPolicy: str('Never (default) or IfNeeded: apply again when a later policy or webhook changed the object.'),
    variables: arrayOf(object('A named CEL value, usable as variables.<name>.', { expression: str('CEL expression.'), name: str('Name.') }, { required: ['name', 'expression'] }), 'Variables.', { listType: 'atomic' }),
  }),
});

const mutatingPolicyBinding = kindSchema(GROUP, 'v1beta1', 'MutatingAdmissionPolicyBinding', 'Applies a MutatingAdmissionPolicy, with its parameters.', {
  spec: object('Which policy applies, to what, with which parameters.', {
    matchResources: ref(`${ADMISSION_V1BETA1}.MatchResources`, 'Further limits the requests the policy applies to.'),
    paramRef,
    policyName: str('Name of the MutatingAdmissionPolicy. Required.'),
  }),
});

/** admissionregistration.k8s.io/v1 (and v1beta1) schemas by definition name. */
export const ADMISSION_SCHEMAS: Record<string, Schema> = {
  [`${ADMISSION}.MatchCondition`]: matchCondition,
  [`${ADMISSION}.MatchResources`]: matchResources,
  [`${ADMISSION}.NamedRuleWithOperations`]: namedRule,
  [`${ADMISSION}.Validation`]: validation,
  [`${ADMISSION}.ValidatingAdmissionPolicy`]: policy,
  [`${ADMISSION}.ValidatingAdmissionPolicyBinding`]: policyBinding,
  [`${ADMISSION}.MutatingWebhook`]: webhook(true),
  [`${ADMISSION}.MutatingWebhookConfiguration`]: mutatingConfig,
  [`${ADMISSION}.RuleWithOperations`]: ruleWithOperations,
  [`${ADMISSION}.ServiceReference`]: serviceReference,
  [`${ADMISSION}.ValidatingWebhook`]: webhook(false),
  [`${ADMISSION}.ValidatingWebhookConfiguration`]: validatingConfig,
  [`${ADMISSION}.WebhookClientConfig`]: clientConfig,
  [`${ADMISSION_V1BETA1}.MatchCondition`]: matchCondition,
  [`${ADMISSION_V1BETA1}.MatchResources`]: matchResources,
  [`${ADMISSION_V1BETA1}.MutatingAdmissionPolicy`]: mutatingPolicy,
  [`${ADMISSION_V1BETA1}.MutatingAdmissionPolicyBinding`]: mutatingPolicyBinding,
  [`${ADMISSION_V1BETA1}.Mutation`]: mutation,
};
