/**
 * certificates.k8s.io/v1 CertificateSigningRequest: descriptor, strategy, validation and the
 * admission plugins kube-apiserver runs for it, per logical cluster.
 *
 * - Strategy: k8s.io/kubernetes pkg/registry/certificates/certificates/strategy.go — on create the
 *   requester's identity is written into `spec.username/uid/groups/extra` (whatever the client
 *   sent) and `status` is cleared; the main resource never changes spec or status on update;
 *   `/status` changes only status and may not add or remove Approved/Denied; `/approval` changes
 *   only `status.conditions`.
 * - Validation: pkg/apis/certificates/validation/validation.go (`ValidateCertificateSigningRequestCreate`,
 *   `…Update`, `…StatusUpdate`, `…ApprovalUpdate`).
 * - Admission: plugin/pkg/admission/certificates/approval (`approve` on `signers`),
 *   …/signing (`sign` on `signers` to set `status.certificate`) and …/subject
 *   (CertificateSubjectRestriction: no `system:masters` for kube-apiserver-client). kcp-ts also
 *   refuses kcp's privileged groups there, because its client CA is trusted by the whole shard.
 *
 * https://kubernetes.io/docs/reference/access-authn-authz/certificate-signing-requests/
 */
import { X509Certificate, createPublicKey, verify } from 'node:crypto';
// @peculiar/x509 needs the reflect polyfill loaded before it (tsyringe).
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor, TableColumn } from '../apis/types.js';
import type { AdmissionAttributes } from '../admission/plugins.js';
import type { UserInfo } from '../registry/store.js';
import { humanDuration } from '../apimachinery/duration.js';
import { asObj } from '../apimachinery/objects.js';

/** Watch-cache group/resource of CertificateSigningRequests. */
export const CSR_GR = 'certificates.k8s.io/certificatesigningrequests';
/** kube's signer of client certificates the API server trusts. */
export const KUBE_APISERVER_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
/** Smallest `spec.expirationSeconds` (kube validation: 10 minutes). */
export const MIN_CSR_EXPIRATION_SECONDS = 600;

/** Key usages kube accepts in `spec.usages` (k8s.io/api certificates/v1 `KeyUsage`). */
export const KNOWN_USAGES = [
  'signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment',
  'cert sign', 'crl sign', 'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing',
  'email protection', 's/mime', 'ipsec end system', 'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing',
  'microsoft sgc', 'netscape sgc',
];

/**
 * Groups a kube-apiserver-client certificate may not carry: kube's `system:masters`
 * (CertificateSubjectRestriction) and kcp's groups that pass its authorizer's workspace checks.
 */
export const RESTRICTED_GROUPS = [
  'system:masters', 'system:kcp:admin', 'system:kcp:logical-cluster-admin', 'system:kcp:external-logical-cluster-admin',
  'system:kcp:tenancy:workspace-bootstrapper',
];

type Obj = Record<string, unknown>;
interface Condition { type?: string; status?: string; reason?: string; message?: string; lastUpdateTime?: string; lastTransitionTime?: string }
const conditionsOf = (o: KubeObject): Condition[] => (Array.isArray(asObj(o.status).conditions) ? asObj(o.status).conditions as Condition[] : []);

/** Whether a condition of `type` with status True is present (kube's `GetCertApprovalCondition`). */
export function hasCondition(o: KubeObject, type: string): boolean {
  return conditionsOf(o).some((c) => c.type === type && c.status === 'True');
}

/** `spec.request` as PEM text: the API carries it base64-encoded (Go `[]byte`). */
export function requestPem(o: KubeObject): string {
  const r = asObj(o.spec).request;
  return typeof r === 'string' ? Buffer.from(r, 'base64').toString('utf8') : '';
}

/**
 * Parses a PEM `CERTIFICATE REQUEST` and checks its self-signature, as kube's validation does
 * (validation.go `validateCSR`: `ParseCSR` then `CheckSignature`). Throws an Error with kube's words.
 */
export function parseCSR(pem: string): x509.Pkcs10CertificateRequest {
  const m = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/.exec(pem);
  if (!m) throw new Error('PEM block type must be CERTIFICATE REQUEST');
  if (m[1] !== 'CERTIFICATE REQUEST' && m[1] !== 'NEW CERTIFICATE REQUEST') throw new Error('PEM block type must be CERTIFICATE REQUEST');
  try {
    return new x509.Pkcs10CertificateRequest(m[0].replace('NEW CERTIFICATE REQUEST', 'CERTIFICATE REQUEST').replace('NEW CERTIFICATE REQUEST', 'CERTIFICATE REQUEST'));
  } catch (err) {
    throw new Error(`x509: malformed certificate request: ${(err as Error).message}`);
  }
}

function cause(field: string, message: string, reason = 'FieldValueInvalid'): StatusCause { return { field, message, reason }; }

/** A qualified name `<domain>/<path>` (kube's `ValidateSignerName`, reduced). */
function signerNameCauses(name: unknown): StatusCause[] {
  if (typeof name !== 'string' || !name) return [cause('spec.signerName', 'Required value', 'FieldValueRequired')];
  const slash = name.indexOf('/');
  if (slash < 0) return [cause('spec.signerName', `Invalid value: ${JSON.stringify(name)}: must be a fully qualified domain and path of the form 'example.com/signer-name'`)];
  const domain = name.slice(0, slash);
  const path = name.slice(slash + 1);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(domain) || domain.length > 253) {
    return [cause('spec.signerName', `Invalid value: ${JSON.stringify(domain)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`)];
  }
  if (!path || path.includes('/') === false && !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(path)) {
    return [cause('spec.signerName', `Invalid value: ${JSON.stringify(path)}: validating label`)];
  }
  return [];
}

/**
 * Validation of a new CSR (kube `ValidateCertificateSigningRequestCreate`): `spec.request` a PEM
 * CSR with a valid self-signature, `spec.signerName` a qualified name, `spec.usages` non-empty,
 * known and without duplicates, `spec.expirationSeconds` ≥ 600, conditions well-formed.
 */
export function validateCSR(o: KubeObject): StatusCause[] {
  const spec = asObj(o.spec);
  const causes: StatusCause[] = [];
  const pem = requestPem(o);
  if (!pem) causes.push(cause('spec.request', 'Required value', 'FieldValueRequired'));
  else {
    try {
      const req = parseCSR(pem);
      // CheckSignature: done synchronously by Node for the common key types.
      if (!verifySync(req)) causes.push(cause('spec.request', 'Invalid value: "<request>": x509: ECDSA verification failure'));
    } catch (err) {
      causes.push(cause('spec.request', `Invalid value: "<request>": ${(err as Error).message}`));
    }
  }
  causes.push(...signerNameCauses(spec.signerName));
  const usages = spec.usages;
  if (!Array.isArray(usages) || usages.length === 0) causes.push(cause('spec.usages', 'Required value: usages must be provided', 'FieldValueRequired'));
  else {
    const seen = new Set<string>();
    usages.forEach((u, i) => {
      if (typeof u !== 'string' || !KNOWN_USAGES.includes(u)) {
        causes.push(cause(`spec.usages[${i}]`, `Unsupported value: ${JSON.stringify(u)}: supported values: ${KNOWN_USAGES.map((k) => `"${k}"`).join(', ')}`, 'FieldValueNotSupported'));
      } else if (seen.has(u)) causes.push(cause(`spec.usages[${i}]`, `Duplicate value: ${JSON.stringify(u)}`, 'FieldValueDuplicate'));
      else seen.add(u);
    });
  }
  const exp = spec.expirationSeconds;
  if (exp !== undefined && exp !== null && (typeof exp !== 'number' || !Number.isInteger(exp) || exp < MIN_CSR_EXPIRATION_SECONDS)) {
    causes.push(cause('spec.expirationSeconds', `Invalid value: ${JSON.stringify(exp)}: may not specify a duration less than 600 seconds (10 minutes)`));
  }
  causes.push(...validateConditions(o));
  return causes;
}

/** Verifies a CSR's self-signature with node:crypto (synchronous; validation is synchronous). */
function verifySync(req: x509.Pkcs10CertificateRequest): boolean {
  // @peculiar/x509's verify() is async (WebCrypto); validation is synchronous: verify the
  // signature over the request's TBS bytes with node:crypto.
  try {
    const key = createPublicKey({ key: Buffer.from(req.publicKey.rawData), format: 'der', type: 'spki' });
    const alg = req.signatureAlgorithm as { name: string; hash?: { name: string } };
    const hash = (alg.hash?.name ?? 'SHA-256').replace('-', '').toLowerCase();
    const tbs = Buffer.from((req as unknown as { tbs: ArrayBuffer }).tbs);
    const sig = Buffer.from(req.signature);
    if (alg.name === 'ECDSA') return verify(hash, tbs, { key, dsaEncoding: 'ieee-p1363' }, sig) || verify(hash, tbs, { key, dsaEncoding: 'der' }, sig);
    if (alg.name === 'Ed25519') return verify(null, tbs, key, sig);
    if (alg.name === 'RSA-PSS') return verify(hash, tbs, { key, padding: 6 }, sig);
    return verify(hash, tbs, key, sig);
  } catch {
    return false;
  }
}

/** Condition rules shared by every write (kube `validateConditions`). */
function validateConditions(o: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  conditionsOf(o).forEach((c, i) => {
    const t = c.type ?? '';
    if (!t) causes.push(cause(`status.conditions[${i}].type`, 'Required value', 'FieldValueRequired'));
    if (['Approved', 'Denied', 'Failed'].includes(t)) {
      if (seen.has(t)) causes.push(cause(`status.conditions[${i}].type`, `Duplicate value: ${JSON.stringify(t)}`, 'FieldValueDuplicate'));
      if (c.status !== 'True') causes.push(cause(`status.conditions[${i}].status`, `Unsupported value: ${JSON.stringify(c.status ?? '')}: supported values: "True"`, 'FieldValueNotSupported'));
    } else if (!['True', 'False', 'Unknown'].includes(c.status ?? '')) {
      causes.push(cause(`status.conditions[${i}].status`, `Unsupported value: ${JSON.stringify(c.status ?? '')}: supported values: "False", "True", "Unknown"`, 'FieldValueNotSupported'));
    }
    seen.add(t);
  });
  if (hasCondition(o, 'Approved') && hasCondition(o, 'Denied')) {
    causes.push(cause('status.conditions', 'Invalid value: Approved and Denied conditions are mutually exclusive'));
  }
  const cert = asObj(o.status).certificate;
  if (typeof cert === 'string' && cert) {
    const pem = Buffer.from(cert, 'base64').toString('utf8');
    try {
      const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
      if (!blocks) throw new Error('must contain at least one CERTIFICATE PEM block');
      for (const b of blocks) new X509Certificate(b);
    } catch (err) {
      causes.push(cause('status.certificate', `Invalid value: "<certificate data>": ${(err as Error).message}`));
    }
  }
  return causes;
}

/** Update rules (kube `ValidateCertificateSigningRequest{Update,StatusUpdate,ApprovalUpdate}`). */
function validateCSRUpdate(o: KubeObject, old: KubeObject): StatusCause[] {
  const causes = validateConditions(o);
  const oldCert = asObj(old.status).certificate;
  if (typeof oldCert === 'string' && oldCert && asObj(o.status).certificate !== oldCert) {
    causes.push(cause('status.certificate', 'Invalid value: "<certificate data>": updates may not modify existing certificate content', 'FieldValueForbidden'));
  }
  for (const t of ['Approved', 'Denied']) {
    if (hasCondition(old, t) && !hasCondition(o, t)) causes.push(cause('status.conditions', `Forbidden: updates may not remove a condition of type ${JSON.stringify(t)}`, 'FieldValueForbidden'));
  }
  if (hasCondition(old, 'Failed') && !hasCondition(o, 'Failed')) causes.push(cause('status.conditions', 'Forbidden: updates may not remove a condition of type "Failed"', 'FieldValueForbidden'));
  return causes;
}

/** Sets `lastUpdateTime`/`lastTransitionTime` of new or changed conditions (kube `populateConditionTimestamps`). */
function stampConditions(o: KubeObject, old: KubeObject | undefined): void {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const before = old ? conditionsOf(old) : [];
  for (const c of conditionsOf(o)) {
    c.lastUpdateTime ||= now;
    const prev = before.find((p) => p.type === c.type);
    if (!c.lastTransitionTime) c.lastTransitionTime = prev && prev.status === c.status && prev.lastTransitionTime ? prev.lastTransitionTime : now;
  }
}

/**
 * Whether `user` may `verb` (`approve` or `sign`) the signer `signerName`: RBAC on resource
 * `signers` of certificates.k8s.io named the signer or `<domain>/*` (kube
 * pkg/apis/certificates/helpers `IsAuthorizedForSignerName`).
 */
export type SignerAuthorizer = (user: UserInfo, cluster: string, verb: 'approve' | 'sign', signerName: string) => boolean;

/** `<domain>/*` of a signer name. */
function signerWildcard(signerName: string): string {
  return `${signerName.split('/')[0]}/*`;
}

function forbiddenCSR(name: string, why: string): StatusError {
  return new StatusError(403, 'Forbidden', `certificatesigningrequests.certificates.k8s.io "${name}" is forbidden: ${why}`,
    { name, group: 'certificates.k8s.io', kind: 'certificatesigningrequests' });
}

/**
 * Admission of CSR writes, with the strategy's subresource rules (what the generic store does
 * not know about `/approval`): create → requester identity into the spec, status cleared, subject
 * restriction; `/approval` → only conditions change, `approve` needed on the signer; `/status` →
 * spec kept, Approved/Denied kept, `sign` needed to set a certificate; main resource → spec and
 * status kept. `authorize` absent: approvals and signing are refused.
 */
export function csrAdmission(authorize?: SignerAuthorizer) {
  return (obj: KubeObject, attrs: AdmissionAttributes): void => {
    const name = obj.metadata.name ?? '';
    if (attrs.operation === 'create') {
      const u = attrs.user;
      const spec = asObj(obj.spec);
      // kube strategy PrepareForCreate: the identity is the requester's, never the client's.
      delete spec.username; delete spec.uid; delete spec.groups; delete spec.extra;
      spec.username = u.name;
      if (u.uid) spec.uid = u.uid;
      if (u.groups.length) spec.groups = [...u.groups];
      if (u.extra && Object.keys(u.extra).length) spec.extra = structuredClone(u.extra);
      obj.spec = spec;
      delete obj.status;
      if (spec.signerName === KUBE_APISERVER_CLIENT_SIGNER) {
        try {
          const req = parseCSR(requestPem(obj));
          const groups = req.subjectName.getField('O');
          const bad = groups.find((g) => RESTRICTED_GROUPS.includes(g));
          if (bad) throw forbiddenCSR(name, `use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with ${bad} group is not allowed`);
        } catch (err) {
          if (err instanceof StatusError) throw err;
          // An unparsable request is validation's 422.
        }
      }
      return;
    }
    const old = attrs.old!;
    const signer = String(asObj(old.spec).signerName ?? '');
    obj.spec = structuredClone(old.spec);
    if (attrs.subresource === 'approval') {
      const conditions = conditionsOf(obj);
      obj.status = { ...asObj(old.status), conditions };
      if (!conditions.length) delete (obj.status as Obj).conditions;
      const changed = JSON.stringify(conditionsOf(old)) !== JSON.stringify(conditions);
      if (changed && !(authorize && (authorize(attrs.user, attrs.cluster, 'approve', signer) || authorize(attrs.user, attrs.cluster, 'approve', signerWildcard(signer))))) {
        throw forbiddenCSR(name, `user not permitted to approve requests with signerName ${JSON.stringify(signer)}`);
      }
      stampConditions(obj, old);
    } else if (attrs.subresource === 'status') {
      // Approved/Denied can only be set through /approval: keep the stored ones.
      const keep = conditionsOf(old).filter((c) => c.type === 'Approved' || c.type === 'Denied');
      const rest = conditionsOf(obj).filter((c) => c.type !== 'Approved' && c.type !== 'Denied');
      const status = { ...asObj(obj.status), conditions: [...keep, ...rest] };
      if (!status.conditions.length) delete (status as Obj).conditions;
      obj.status = status;
      const cert = asObj(obj.status).certificate;
      if (cert && cert !== asObj(old.status).certificate && !(authorize && (authorize(attrs.user, attrs.cluster, 'sign', signer) || authorize(attrs.user, attrs.cluster, 'sign', signerWildcard(signer))))) {
        throw forbiddenCSR(name, `user not permitted to sign requests with signerName ${JSON.stringify(signer)}`);
      }
      stampConditions(obj, old);
    } else {
      if (old.status === undefined) delete obj.status; else obj.status = structuredClone(old.status);
    }
  };
}

/** The CONDITION column (kube printers `printCertificateSigningRequest` / `extractCSRStatus`). */
export function csrConditionColumn(o: KubeObject): string {
  let approved = false; let denied = false; let failed = false;
  for (const c of conditionsOf(o)) {
    if (c.status !== 'True' && c.status !== undefined && c.status !== '') continue;
    if (c.type === 'Approved') approved = true;
    else if (c.type === 'Denied') denied = true;
    else if (c.type === 'Failed') failed = true;
  }
  let status = denied ? 'Denied' : approved ? 'Approved' : 'Pending';
  if (failed) status += ',Failed';
  if (asObj(o.status).certificate) status += ',Issued';
  return status;
}


const columns: TableColumn[] = [
  { name: 'Age', type: 'string', priority: 0, cell: () => undefined },
  { name: 'SignerName', type: 'string', priority: 0, cell: (o) => asObj(o.spec).signerName ?? '' },
  { name: 'Requestor', type: 'string', priority: 0, cell: (o) => asObj(o.spec).username ?? '' },
  { name: 'RequestedDuration', type: 'string', priority: 0, cell: (o) => { const e = asObj(o.spec).expirationSeconds; return typeof e === 'number' ? humanDuration(e) : '<none>'; } },
  { name: 'Condition', type: 'string', priority: 0, cell: csrConditionColumn },
];

/** The CertificateSigningRequest descriptor (cluster-scoped; `/status` and `/approval`). */
export const CSR_DESCRIPTOR: ResourceDescriptor = {
  group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest', listKind: 'CertificateSigningRequestList',
  plural: 'certificatesigningrequests', singular: 'certificatesigningrequest', namespaced: false, shortNames: ['csr'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  // Both served through admission's subresource rules (the store's own `/status` handling is
  // kept for `status`; `approval` changes only conditions).
  extraSubresources: [
    { name: 'approval', verbs: ['get', 'patch', 'update'], kind: { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' } },
    { name: 'status', verbs: ['get', 'patch', 'update'], kind: { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' } },
  ],
  columns, columnsComplete: true,
  strategy: {
    validate: validateCSR,
    validateUpdate: validateCSRUpdate,
    selectableFields: { 'spec.signerName': (o) => String(asObj(o.spec).signerName ?? '') },
    // kube's csrStrategy, csrStatusStrategy and csrApprovalStrategy (metadata as sent through all
    // three); which conditions /status may change is csrAdmission's (preserveConditionInstances).
    updateResets: {
      '': { base: 'request', fromStored: ['spec', 'status'], metadata: 'request' },
      status: { base: 'request', fromStored: ['spec'], metadata: 'request' },
      approval: { base: 'stored', fromRequest: ['status.conditions'], metadata: 'request' },
    },
  },
};
