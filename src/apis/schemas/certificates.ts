/**
 * OpenAPI v3 schemas of certificates.k8s.io/v1 CertificateSigningRequest and
 * authentication.k8s.io/v1 TokenReview, following k8s.io/api certificates/v1 and
 * authentication/v1 (types.go).
 */
import { type Schema, TIME, arrayOf, bool, bytes, int32, kindSchema, mapOf, object, ref, str, stringList } from './helpers.js';

/** Definition-name prefix of certificates.k8s.io/v1 types. */
export const CERTIFICATES = 'io.k8s.api.certificates.v1';
/** Definition-name prefix of authentication.k8s.io/v1 types. */
export const AUTHENTICATION = 'io.k8s.api.authentication.v1';

const extra = () => mapOf(stringList(), 'Extra attributes of the user.');

const csr = kindSchema('certificates.k8s.io', 'v1', 'CertificateSigningRequest',
  'CertificateSigningRequest objects provide a mechanism to obtain x509 certificates by submitting a certificate signing request, and having it asynchronously approved and issued.', {
    spec: ref(`${CERTIFICATES}.CertificateSigningRequestSpec`, 'spec contains the certificate request, and is immutable after creation. Only the request, signerName, expirationSeconds, and usages fields can be set on creation. Other fields are derived by Kubernetes and cannot be modified by users.'),
    status: ref(`${CERTIFICATES}.CertificateSigningRequestStatus`, 'status contains information about whether the request is approved or denied, and the certificate issued by the signer, or the failure condition indicating signer failure.'),
  }, { required: ['spec'] });

const csrSpec = object('CertificateSigningRequestSpec contains the certificate request.', {
  expirationSeconds: int32('expirationSeconds is the requested duration of validity of the issued certificate. The minimum valid value is 600 (10 minutes).'),
  extra: extra(),
  groups: stringList('groups contains group membership of the user that created the CertificateSigningRequest. Populated by the API server on creation and immutable.'),
  request: bytes('request contains an x509 certificate signing request encoded in a "CERTIFICATE REQUEST" PEM block.'),
  signerName: str('signerName indicates the requested signer, and is a qualified name.'),
  uid: str('uid contains the uid of the user that created the CertificateSigningRequest. Populated by the API server on creation and immutable.'),
  usages: stringList('usages specifies a set of key usages requested in the issued certificate.'),
  username: str('username contains the name of the user that created the CertificateSigningRequest. Populated by the API server on creation and immutable.'),
}, { required: ['request', 'signerName'] });

const csrStatus = object('CertificateSigningRequestStatus contains conditions used to indicate approved/denied/failed status of the request, and the issued certificate.', {
  certificate: bytes('certificate is populated with an issued certificate by the signer after an Approved condition is present. This field is set via the /status subresource.'),
  conditions: arrayOf(ref(`${CERTIFICATES}.CertificateSigningRequestCondition`), 'conditions applied to the request. Known conditions are "Approved", "Denied", and "Failed".', { listType: 'map', mapKeys: ['type'] }),
});

const csrCondition = object('CertificateSigningRequestCondition describes a condition of a CertificateSigningRequest object', {
  lastTransitionTime: ref(TIME, 'lastTransitionTime is the time the condition last transitioned from one status to another.'),
  lastUpdateTime: ref(TIME, 'lastUpdateTime is the time of the last update to this condition'),
  message: str('message contains a human readable message with details about the request state'),
  reason: str('reason indicates a brief reason for the request state'),
  status: str('status of the condition, one of True, False, Unknown. Approved, Denied, and Failed conditions may not be "False" or "Unknown".'),
  type: str('type of the condition. Known conditions are "Approved", "Denied", and "Failed".'),
}, { required: ['type', 'status'] });

const tokenReview = kindSchema('authentication.k8s.io', 'v1', 'TokenReview',
  'TokenReview attempts to authenticate a token to a known user.', {
    spec: ref(`${AUTHENTICATION}.TokenReviewSpec`, 'Spec holds information about the request being evaluated'),
    status: ref(`${AUTHENTICATION}.TokenReviewStatus`, 'Status is filled in by the server and indicates whether the request can be authenticated.'),
  }, { required: ['spec'] });

const tokenReviewSpec = object('TokenReviewSpec is a description of the token authentication request.', {
  audiences: stringList('Audiences is a list of the identifiers that the resource server presented with the token identifies as.'),
  token: str('Token is the opaque bearer token.'),
});

const tokenReviewStatus = object('TokenReviewStatus is the result of the token authentication request.', {
  audiences: stringList('Audiences are audience identifiers chosen by the authenticator that are compatible with both the TokenReview and token.'),
  authenticated: bool('Authenticated indicates that the token was associated with a known user.'),
  error: str("Error indicates that the token couldn't be checked"),
  user: ref(`${AUTHENTICATION}.UserInfo`, 'User is the UserInfo associated with the provided token.'),
});

const userInfo = object('UserInfo holds the information about the user needed to implement the user.Info interface.', {
  extra: extra(),
  groups: stringList('The names of groups this user is a part of.'),
  uid: str('A unique value that identifies this user across time.'),
  username: str('The name that uniquely identifies this user among all active users.'),
});

/** certificates.k8s.io/v1 and authentication.k8s.io/v1 TokenReview schemas keyed by definition name. */
export const CERTIFICATES_SCHEMAS: Record<string, Schema> = {
  [`${CERTIFICATES}.CertificateSigningRequest`]: csr,
  [`${CERTIFICATES}.CertificateSigningRequestCondition`]: csrCondition,
  [`${CERTIFICATES}.CertificateSigningRequestSpec`]: csrSpec,
  [`${CERTIFICATES}.CertificateSigningRequestStatus`]: csrStatus,
  [`${AUTHENTICATION}.TokenReview`]: tokenReview,
  [`${AUTHENTICATION}.TokenReviewSpec`]: tokenReviewSpec,
  [`${AUTHENTICATION}.TokenReviewStatus`]: tokenReviewStatus,
  [`${AUTHENTICATION}.UserInfo`]: userInfo,
};
