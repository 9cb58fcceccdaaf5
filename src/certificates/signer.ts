/**
 * The `kubernetes.io/kube-apiserver-client` signer (kube-controller-manager's csrsigning
 * controller, k8s.io/kubernetes pkg/controller/certificates/signer/signer.go, with the CA of
 * authority/authority.go): an Approved CSR that is neither Denied nor Failed and has no
 * certificate yet is signed with the shard's client CA — the CA the shard's authenticator trusts
 * for client certificates — and `status.certificate` written through `/status`. Requests this
 * signer may not sign get a `Failed` condition (reason `SignerValidationFailure`); CSRs of other
 * signers are left pending, as kube leaves unknown signers' requests.
 *
 * Certificates: subject CN and O copied from the request (user and groups), key usages from
 * `spec.usages`, lifetime `spec.expirationSeconds` (default and maximum 1 year, kube's
 * `--cluster-signing-duration` default) capped at the CA's `notAfter`, `notBefore` back-dated by
 * 5 minutes (authority.go), plus a URI SAN `urn:kcp-ts:logical-cluster:<cluster>` naming the
 * logical cluster the request was approved in (see src/auth/authn.ts: such a certificate is
 * scoped to that logical cluster).
 */
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
// @peculiar/x509 needs the reflect polyfill loaded before it (tsyringe).
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { CERTIFICATE_BACKDATE_MS, type KeyPair } from '../pki/certs.js';
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import type { ReconcileResult } from '../controllers/runtime.js';
import { CSR_GR, KUBE_APISERVER_CLIENT_SIGNER, hasCondition, parseCSR, requestPem } from './csr.js';

/** Default (and largest) lifetime of a signed certificate: 1 year (kube `--cluster-signing-duration`). */
export const DEFAULT_SIGNING_DURATION_SECONDS = 365 * 24 * 3600;
import { LOGICAL_CLUSTER_URI_PREFIX } from '../auth/serviceaccounts.js';
import { asObj } from '../apimachinery/objects.js';

export { LOGICAL_CLUSTER_URI_PREFIX };

type Obj = Record<string, unknown>;

/**
 * kube's policy for the kube-apiserver-client signer (signer.go `isKubeAPIServerClientCSR`,
 * `validAPIServerClientUsages`): no DNS, email, IP or URI SANs; usages `client auth` required,
 * `digital signature` and `key encipherment` allowed, nothing else. Returns the failure message,
 * or undefined when the request may be signed.
 */
export function kubeAPIServerClientPolicy(req: x509.Pkcs10CertificateRequest, usages: string[]): string | undefined {
  const ext = req.getExtension('2.5.29.17');
  const san = ext ? (ext instanceof x509.SubjectAlternativeNameExtension ? ext : new x509.SubjectAlternativeNameExtension(ext.rawData)) : undefined;
  const names = san?.names.items ?? [];
  if (names.some((n) => n.type === 'dns')) return 'DNS subjectAltNames are not allowed';
  if (names.some((n) => n.type === 'email')) return 'Email subjectAltNames are not allowed';
  if (names.some((n) => n.type === 'ip')) return 'IP subjectAltNames are not allowed';
  if (names.some((n) => n.type === 'url')) return 'URI subjectAltNames are not allowed';
  let clientAuth = false;
  for (const u of usages) {
    if (u === 'digital signature' || u === 'key encipherment') continue;
    if (u === 'client auth') { clientAuth = true; continue; }
    return `invalid usage for client certificate: ${u}`;
  }
  if (!clientAuth) return 'missing required usage for client certificate: client auth';
  return undefined;
}

/** The CA imported for signing, once. */
interface Issuer { cert: x509.X509Certificate; key: CryptoKey; alg: Algorithm }

async function importIssuer(ca: KeyPair): Promise<Issuer> {
  const cert = new x509.X509Certificate(ca.certPem);
  const keyObject = createPrivateKey(ca.keyPem);
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  let importAlg: EcKeyImportParams | RsaHashedImportParams;
  let alg: Algorithm;
  if (keyObject.asymmetricKeyType === 'ec') {
    const curve = keyObject.asymmetricKeyDetails?.namedCurve;
    const [named, hash] = curve === 'secp384r1' ? ['P-384', 'SHA-384'] : curve === 'secp521r1' ? ['P-521', 'SHA-512'] : ['P-256', 'SHA-256'];
    importAlg = { name: 'ECDSA', namedCurve: named! };
    alg = { name: 'ECDSA', hash: hash! } as EcdsaParams;
  } else {
    importAlg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    alg = { name: 'RSASSA-PKCS1-v1_5' };
  }
  const key = await webcrypto.subtle.importKey('pkcs8', pkcs8, importAlg, false, ['sign']) as unknown as CryptoKey;
  return { cert, key, alg };
}

/**
 * Signs `req` as a client certificate of `issuer`: subject CN/O from the request, the given key
 * usages, lifetime `seconds` capped at the CA's `notAfter`, the logical cluster as a URI SAN.
 * Returns the PEM.
 */
export async function signClientCertificate(issuer: Issuer, req: x509.Pkcs10CertificateRequest, usages: string[], seconds: number, cluster: string): Promise<string> {
  const now = Date.now();
  const notAfter = new Date(Math.min(now + seconds * 1000, issuer.cert.notAfter.getTime()));
  const cn = req.subjectName.getField('CN');
  const groups = req.subjectName.getField('O');
  let flags = 0;
  if (usages.includes('digital signature')) flags |= x509.KeyUsageFlags.digitalSignature;
  if (usages.includes('key encipherment')) flags |= x509.KeyUsageFlags.keyEncipherment;
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const caSki = issuer.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject: [...groups.map((g) => ({ O: [g] })), ...(cn.length ? [{ CN: [cn[cn.length - 1]!] }] : [])],
    issuer: issuer.cert.subjectName,
    notBefore: new Date(now - CERTIFICATE_BACKDATE_MS),
    notAfter,
    publicKey: req.publicKey,
    signingKey: issuer.key,
    signingAlgorithm: issuer.alg,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      ...(flags ? [new x509.KeyUsagesExtension(flags, true)] : []),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false),
      ...(caSki ? [new x509.AuthorityKeyIdentifierExtension(caSki.keyId, false)] : []),
      new x509.SubjectAlternativeNameExtension([{ type: 'url', value: `${LOGICAL_CLUSTER_URI_PREFIX}${cluster}` }], false),
    ],
  });
  const pem = cert.toString('pem').replace(/\r\n/g, '\n');
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

/** Dependencies of the signer's reconciler. */
export interface SignerDeps {
  /** The CSR store (writes go through `/status`). */
  csrs: Store;
  cache: Pick<WatchCache, 'getEntry'>;
  /** The shard's client CA (certificate and key). */
  ca: KeyPair;
  /** Identity the controller acts as. */
  scope: (cluster: string) => RequestScope;
}

/**
 * Reconciles `<cluster>|<name>` of a CSR: signs an approved kube-apiserver-client request or
 * marks it Failed; does nothing for others.
 */
export function signerReconciler(deps: SignerDeps) {
  let issuer: Promise<Issuer> | undefined;
  return async (key: string): Promise<ReconcileResult | void> => {
    const bar = key.indexOf('|');
    const cluster = key.slice(0, bar); const name = key.slice(bar + 1);
    const entry = deps.cache.getEntry(CSR_GR, cluster, '', name);
    if (!entry) return;
    const csr = JSON.parse(entry.json) as KubeObject;
    if (!needsSigning(csr)) return;
    const spec = asObj(csr.spec);
    const usages = Array.isArray(spec.usages) ? spec.usages as string[] : [];
    let failure: string | undefined;
    let req: x509.Pkcs10CertificateRequest | undefined;
    try { req = parseCSR(requestPem(csr)); } catch (err) { failure = `unable to parse csr "${name}": ${(err as Error).message}`; }
    failure ??= kubeAPIServerClientPolicy(req!, usages);
    const status = { ...asObj(csr.status) };
    if (failure) {
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      status.conditions = [...(Array.isArray(status.conditions) ? status.conditions : []),
        { type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message: failure, lastUpdateTime: now, lastTransitionTime: now }];
    } else {
      issuer ??= importIssuer(deps.ca);
      const exp = typeof spec.expirationSeconds === 'number' ? Math.min(spec.expirationSeconds, DEFAULT_SIGNING_DURATION_SECONDS) : DEFAULT_SIGNING_DURATION_SECONDS;
      const pem = await signClientCertificate(await issuer, req!, usages, exp, cluster);
      status.certificate = Buffer.from(pem, 'utf8').toString('base64');
    }
    try {
      await deps.csrs.update(deps.scope(cluster), name, { ...csr, status }, 'status');
    } catch (err) {
      // Gone, or changed meanwhile (the informer brings the new version).
      if (isStatus(err, 404, 409)) return;
      throw err;
    }
  };
}

/** Whether the signer has work on a CSR: its signer, Approved, not Denied or Failed, no certificate. */
export function needsSigning(csr: KubeObject): boolean {
  return asObj(csr.spec).signerName === KUBE_APISERVER_CLIENT_SIGNER && hasCondition(csr, 'Approved') && !hasCondition(csr, 'Denied')
    && !hasCondition(csr, 'Failed') && !asObj(csr.status).certificate;
}
