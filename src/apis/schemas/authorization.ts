/**
 * OpenAPI v3 schemas of authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview and
 * SelfSubjectAccessReview, following k8s.io/api/authorization/v1.
 */
import { type Schema, META, arrayOf, bool, kindSchema, mapOf, object, ref, str, stringList } from './helpers.js';

/** Definition-name prefix of authorization.k8s.io/v1 types. */
export const AUTHORIZATION = 'io.k8s.api.authorization.v1';
const GROUP = 'authorization.k8s.io';

function resourceAttributesProp(): Schema {
  return ref(`${AUTHORIZATION}.ResourceAttributes`, 'The resource request being checked.');
}

function nonResourceAttributesProp(): Schema {
  return ref(`${AUTHORIZATION}.NonResourceAttributes`, 'The non-resource request being checked.');
}

function statusProp(): Schema {
  return ref(`${AUTHORIZATION}.SubjectAccessReviewStatus`, 'The decision, filled in by the server.');
}

const subjectAccessReview = kindSchema(
  GROUP,
  'v1',
  'SubjectAccessReview',
  'Asks whether a given user or group may perform an action.',
  {
    spec: ref(`${AUTHORIZATION}.SubjectAccessReviewSpec`, 'The request being evaluated.'),
    status: statusProp(),
  },
  { required: ['spec'] },
);

const localSubjectAccessReview = kindSchema(
  GROUP,
  'v1',
  'LocalSubjectAccessReview',
  'Asks whether a given user or group may perform an action in one namespace; spec.resourceAttributes.namespace must be that namespace.',
  {
    spec: ref(`${AUTHORIZATION}.SubjectAccessReviewSpec`, 'The request being evaluated; spec.resourceAttributes.namespace must equal the namespace of the request, nonResourceAttributes are not allowed.'),
    status: statusProp(),
  },
  { required: ['spec'] },
);

const selfSubjectAccessReview = kindSchema(
  GROUP,
  'v1',
  'SelfSubjectAccessReview',
  'Asks whether the requesting user may perform an action.',
  {
    spec: ref(`${AUTHORIZATION}.SelfSubjectAccessReviewSpec`, 'The request being evaluated.'),
    status: statusProp(),
  },
  { required: ['spec'] },
);

const subjectAccessReviewSpec = object(
  'An access request plus the identity it is checked for. Exactly one of resourceAttributes and nonResourceAttributes must be set.',
  {
    extra: mapOf({ type: 'array', items: { type: 'string' } }, 'Extra attributes of the user, as provided by the authenticator.'),
    groups: stringList('Groups of the user being checked.'),
    nonResourceAttributes: nonResourceAttributesProp(),
    resourceAttributes: resourceAttributesProp(),
    uid: str('UID of the user being checked.'),
    user: str('Name of the user being checked.'),
  },
);

const selfSubjectAccessReviewSpec = object(
  'An access request for the requesting user. Exactly one of resourceAttributes and nonResourceAttributes must be set.',
  {
    nonResourceAttributes: nonResourceAttributesProp(),
    resourceAttributes: resourceAttributesProp(),
  },
);

const resourceAttributes = object('ResourceAttributes are the authorization attributes of a resource request, as the authorizer sees them.', {
  fieldSelector: ref(`${AUTHORIZATION}.FieldSelectorAttributes`, 'Field selector restricting the request, if any.'),
  group: str('API group of the resource; "*" means all.'),
  labelSelector: ref(`${AUTHORIZATION}.LabelSelectorAttributes`, 'Label selector restricting the request, if any.'),
  name: str('Name of the object; empty means all.'),
  namespace: str('Namespace of the request; empty means all namespaces (or cluster-scoped).'),
  resource: str('Resource type; "*" means all.'),
  subresource: str('Subresource; "" means none, "*" means all.'),
  verb: str('Verb, e.g. get, list, watch, create, update, delete; "*" means all.'),
  version: str('API version of the resource; "*" means all.'),
});

const nonResourceAttributes = object('Attributes of a non-resource request.', {
  path: str('URL path of the request.'),
  verb: str('Standard HTTP verb, lower case.'),
});

const fieldSelectorAttributes = object('FieldSelectorAttributes carry a field selector, raw or parsed into requirements.', {
  rawSelector: str('The selector as sent in the query string. Ignored if `requirements` is set.'),
  requirements: arrayOf(ref(`${META}.FieldSelectorRequirement`), 'Parsed selector requirements.', { listType: 'atomic' }),
});

const labelSelectorAttributes = object('LabelSelectorAttributes carry a label selector, raw or parsed into requirements.', {
  rawSelector: str('The selector as sent in the query string. Ignored if `requirements` is set.'),
  requirements: arrayOf(ref(`${META}.LabelSelectorRequirement`), 'Parsed selector requirements.', { listType: 'atomic' }),
});

const subjectAccessReviewStatus = object(
  'The authorizer\'s decision.',
  {
    allowed: bool('Whether the action is allowed. Required.'),
    denied: bool('Whether the action is explicitly denied. Never true together with allowed.'),
    evaluationError: str('Error encountered while evaluating, if any; the decision may still be meaningful.'),
    reason: str('Why the action was allowed or denied.'),
  },
  { required: ['allowed'] },
);

/** authorization.k8s.io/v1 schemas keyed by definition name. */
export const AUTHORIZATION_SCHEMAS: Record<string, Schema> = {
  [`${AUTHORIZATION}.FieldSelectorAttributes`]: fieldSelectorAttributes,
  [`${AUTHORIZATION}.LabelSelectorAttributes`]: labelSelectorAttributes,
  [`${AUTHORIZATION}.LocalSubjectAccessReview`]: localSubjectAccessReview,
  [`${AUTHORIZATION}.NonResourceAttributes`]: nonResourceAttributes,
  [`${AUTHORIZATION}.ResourceAttributes`]: resourceAttributes,
  [`${AUTHORIZATION}.SelfSubjectAccessReview`]: selfSubjectAccessReview,
  [`${AUTHORIZATION}.SelfSubjectAccessReviewSpec`]: selfSubjectAccessReviewSpec,
  [`${AUTHORIZATION}.SubjectAccessReview`]: subjectAccessReview,
  [`${AUTHORIZATION}.SubjectAccessReviewSpec`]: subjectAccessReviewSpec,
  [`${AUTHORIZATION}.SubjectAccessReviewStatus`]: subjectAccessReviewStatus,
};
