/**
 * X.509 certificates for the server's PKI: a self-signed CA, serving certificates and client
 * certificates that Kubernetes clients (kubectl, client-go, Node's `tls`) accept.
 *
 * Keys are ECDSA P-256 with ECDSA-SHA256 signatures (chosen over RSA-2048 because key generation
 * takes ~0.2 ms instead of ~150 ms). Certificates are built with `@peculiar/x509` on top of Node's
 * WebCrypto (`crypto.webcrypto`).
 *
 * The certificate profile follows what Kubernetes' own tooling produces (kubeadm `pkiutil`,
 * client-go `util/cert`), restricted by RFC 5280 / RFC 5480:
 * - serial numbers: random, positive, at most 16 octets (RFC 5280 §4.1.2.2 allows up to 20);
 * - `notBefore` is back-dated by {@link CERTIFICATE_BACKDATE_MS} (kubeadm's `CertificateBackdate`)
 *   so a peer whose clock runs slightly behind does not reject a freshly issued certificate;
 * - CA: critical basicConstraints `CA:TRUE`, critical keyUsage keyCertSign|cRLSign|digitalSignature,
 *   subjectKeyIdentifier;
 * - leaves: critical basicConstraints `CA:FALSE`, critical keyUsage digitalSignature (RFC 5480 §3
 *   does not allow keyEncipherment for EC keys), an extendedKeyUsage, subjectKeyIdentifier and
 *   authorityKeyIdentifier (copied from the CA's subjectKeyIdentifier).
 *
 * Client identity follows the Kubernetes x509 authenticator
 * (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#x509-client-certificates):
 * the subject CommonName is the user name and each Organization (O) value is a group.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import {
  createPrivateKey,
  createPublicKey,
  randomBytes,
  webcrypto,
  X509Certificate as NodeX509Certificate,
  type KeyObject,
} from 'node:crypto';
import { isIP } from 'node:net';
import type { Certificate as TlsCertificateSubject } from 'node:tls';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

/** A certificate and its private key, both PEM-encoded. */
export interface KeyPair {
  /**
   * PEM certificate (`-----BEGIN CERTIFICATE-----`). When it holds several certificates, the first
   * one is the certificate this pair is about.
   */
  certPem: string;
  /**
   * PEM private key. Keys generated here are unencrypted PKCS#8 (`-----BEGIN PRIVATE KEY-----`),
   * which Node's `tls`, OpenSSL, kubectl and client-go all accept. Keys read back for signing may
   * also be SEC1 (`EC PRIVATE KEY`) or PKCS#1 (`RSA PRIVATE KEY`).
   */
  keyPem: string;
}

/** Options for {@link issueServingCert}. */
export interface ServingCertOptions {
  /** Subject CommonName, e.g. `kcp-apiserver`. Clients check SANs only, never the CN. */
  commonName: string;
  /**
   * DNS subjectAltNames, e.g. `['localhost', 'kcp.example.com', '*.kcp.example.com']`. ASCII only
   * (IDNs must be given in punycode). Entries that are IP literals are moved to the IP SANs, as
   * client-go's `GenerateSelfSignedCertKey` does.
   */
  dnsNames: string[];
  /** IP subjectAltNames, IPv4 or IPv6 text form, e.g. `['127.0.0.1', '::1']`. */
  ipAddresses: string[];
  /** Lifetime in days from now (fractions allowed); default {@link DEFAULT_LEAF_VALIDITY_DAYS}. */
  validityDays?: number;
}

/** Options for {@link issueClientCert}. */
export interface ClientCertOptions {
  /** Kubernetes user name; becomes the subject CommonName. */
  user: string;
  /** Kubernetes groups; each becomes one subject Organization (O) attribute, in this order. */
  groups: string[];
  /** Lifetime in days from now (fractions allowed); default {@link DEFAULT_LEAF_VALIDITY_DAYS}. */
  validityDays?: number;
}

/** The user a client certificate authenticates as (Kubernetes `user.Info`, name and groups only). */
export interface CertificateIdentity {
  /** User name: the subject CommonName. */
  user: string;
  /** Groups: the subject Organization values, in certificate order. */
  groups: string[];
}

/**
 * A certificate subject as Node reports it in `tls.PeerCertificate.subject` or
 * `crypto.X509Certificate`-derived objects: attribute short name (`CN`, `O`, …) to value, where an
 * attribute that occurs more than once becomes an array of values in certificate order.
 */
export type CertificateSubject =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | TlsCertificateSubject;

/** What {@link inspectCertificate} reports about a certificate. */
export interface CertificateInfo {
  /** Serial number as lowercase hex without a sign octet, e.g. `5f3a…`. */
  serialNumber: string;
  /** Subject as an RFC 4514 string, e.g. `CN=kcp-admin, O=system:kcp:admin`. */
  subject: string;
  /** Subject CommonName (the last one if several), or `undefined` when absent. */
  commonName: string | undefined;
  /** Subject Organization values in certificate order (the groups of a client certificate). */
  organizations: string[];
  /** Issuer as an RFC 4514 string. */
  issuer: string;
  /** Start of validity (already includes the back-dating). */
  notBefore: Date;
  /** End of validity. */
  notAfter: Date;
  /** Whether basicConstraints says `CA:TRUE`. */
  isCA: boolean;
  /** DNS subjectAltNames as written in the certificate. */
  dnsNames: string[];
  /** IP subjectAltNames in canonical text form (see {@link canonicalIp}). */
  ipAddresses: string[];
  /** extendedKeyUsage OIDs, e.g. `1.3.6.1.5.5.7.3.1` (serverAuth); empty when absent. */
  extendedKeyUsages: string[];
}

/**
 * How far `notBefore` is set in the past, in milliseconds (5 minutes). Same value as kubeadm's
 * `constants.CertificateBackdate`; it absorbs clock skew between issuer and verifier.
 */
export const CERTIFICATE_BACKDATE_MS = 5 * 60 * 1000;

/** Default CA lifetime in days (10 years, kubeadm's `CACertificateValidityPeriod`). */
export const DEFAULT_CA_VALIDITY_DAYS = 3650;

/** Default leaf certificate lifetime in days (1 year, kubeadm's `CertificateValidityPeriod`). */
export const DEFAULT_LEAF_VALIDITY_DAYS = 365;

/** OID of the serverAuth extended key usage (RFC 5280 §4.2.1.12). */
export const EKU_SERVER_AUTH = x509.ExtendedKeyUsage.serverAuth as string;

/** OID of the clientAuth extended key usage (RFC 5280 §4.2.1.12). */
export const EKU_CLIENT_AUTH = x509.ExtendedKeyUsage.clientAuth as string;

const DAY_MS = 24 * 60 * 60 * 1000;
const LEAF_KEY_ALGORITHM: EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

/**
 * Creates a self-signed certificate authority.
 *
 * @param commonName Subject (and issuer) CommonName, e.g. `kcp-ca`. Must be non-empty.
 * @param validityDays Lifetime in days from now; fractions allowed. Default 3650 (10 years).
 * @param existingKeyPem Optional private key PEM (PKCS#8, SEC1 or PKCS#1; EC P-256/384/521 or RSA)
 *   to re-certify instead of generating a fresh ECDSA P-256 key. Used to rebuild a lost `ca.crt`
 *   from a surviving `ca.key`: certificates issued earlier by that key stay verifiable as long as
 *   the CommonName is the same, since issuer name and key identifier are unchanged.
 * @returns The CA certificate and its private key (PKCS#8 PEM; `existingKeyPem` is re-encoded).
 * @throws {TypeError} if `commonName` is empty.
 * @throws {RangeError} if `validityDays` is not a positive finite number.
 * @throws {Error} if `existingKeyPem` does not parse or is of an unsupported type.
 */
export async function createCA(
  commonName: string,
  validityDays: number = DEFAULT_CA_VALIDITY_DAYS,
  existingKeyPem?: string,
): Promise<KeyPair> {
  requireNonEmpty(commonName, 'commonName');
  const { notBefore, notAfter } = validityWindow(validityDays);
  let signer: SigningKey;
  let keyPem: string;
  if (existingKeyPem === undefined) {
    const keys = await generateKeyPair();
    signer = {
      privateKey: keys.privateKey,
      spki: await exportSpki(keys.publicKey),
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams,
    };
    keyPem = await privateKeyToPem(keys.privateKey);
  } else {
    signer = await importSigningKey(existingKeyPem, 'CA');
    keyPem = withTrailingNewline(
      createPrivateKey(existingKeyPem).export({ type: 'pkcs8', format: 'pem' }).toString(),
    );
  }
  const name: x509.JsonName = [{ CN: [commonName] }];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: name,
    issuer: name,
    notBefore,
    notAfter,
    publicKey: signer.spki,
    signingKey: signer.privateKey,
    signingAlgorithm: signer.signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(signer.spki),
    ],
  });
  return { certPem: certToPem(cert), keyPem };
}

/**
 * Issues a TLS serving certificate (extendedKeyUsage serverAuth) signed by `ca`, with a fresh
 * ECDSA P-256 key.
 *
 * Duplicate SANs are dropped; IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are stored as 4-byte
 * IPv4 addresses like Go's crypto/x509 does. The certificate never outlives the CA: `notAfter` is
 * capped at the CA's `notAfter`.
 *
 * @param ca The issuing CA (certificate with `CA:TRUE` and its matching private key; EC P-256/384/521
 *   or RSA).
 * @param opts Subject CommonName, SANs (at least one required) and lifetime.
 * @throws {TypeError} on an empty CommonName, no SANs, or a DNS name that is empty or not ASCII.
 * @throws {Error} if an IP address does not parse, or `ca` is unusable: PEM that does not parse, a
 *   certificate without `CA:TRUE`, a key that does not belong to the certificate, an unsupported key
 *   type.
 * @throws {RangeError} if `validityDays` is not a positive finite number.
 */
export async function issueServingCert(ca: KeyPair, opts: ServingCertOptions): Promise<KeyPair> {
  requireNonEmpty(opts.commonName, 'commonName');
  const { dnsNames, ipAddresses } = normalizeSans(opts.dnsNames, opts.ipAddresses);
  if (dnsNames.length === 0 && ipAddresses.length === 0) {
    throw new TypeError('issueServingCert: at least one DNS name or IP address is required');
  }
  const sans: x509.JsonGeneralNames = [
    ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...ipAddresses.map((value) => ({ type: 'ip' as const, value: ipForEncoding(value) })),
  ];
  return issueLeaf(ca, {
    subject: [{ CN: [opts.commonName] }],
    extendedKeyUsages: [EKU_SERVER_AUTH],
    extraExtensions: [new x509.SubjectAlternativeNameExtension(sans, false)],
    validityDays: opts.validityDays ?? DEFAULT_LEAF_VALIDITY_DAYS,
  });
}

/**
 * Issues a client certificate (extendedKeyUsage clientAuth) signed by `ca`, with a fresh ECDSA
 * P-256 key. The subject is `O=<group1>, …, O=<groupN>, CN=<user>`: one Organization attribute per
 * group (each its own RDN, like `openssl req -subj /O=a/O=b/CN=u`), which the Kubernetes x509
 * authenticator maps to the user's groups, and the CommonName as the user name.
 *
 * @param ca The issuing CA (see {@link issueServingCert}).
 * @param opts User name, groups (may be empty) and lifetime.
 * @throws {TypeError} if `user` or any group is empty.
 * @throws {Error} if `ca` is unusable.
 * @throws {RangeError} if `validityDays` is not a positive finite number.
 */
export async function issueClientCert(ca: KeyPair, opts: ClientCertOptions): Promise<KeyPair> {
  requireNonEmpty(opts.user, 'user');
  opts.groups.forEach((g, i) => requireNonEmpty(g, `groups[${i}]`));
  return issueLeaf(ca, {
    subject: [...opts.groups.map((g) => ({ O: [g] })), { CN: [opts.user] }],
    extendedKeyUsages: [EKU_CLIENT_AUTH],
    extraExtensions: [],
    validityDays: opts.validityDays ?? DEFAULT_LEAF_VALIDITY_DAYS,
  });
}

/**
 * Maps a verified client certificate's subject to a Kubernetes identity, as the Kubernetes x509
 * authenticator does (`CommonNameUserConversion`): user = CommonName, groups = Organization values.
 *
 * Node reports repeated attributes as arrays (`{ CN: 'u', O: ['g1', 'g2'] }`) and single ones as
 * strings (`{ CN: 'u', O: 'g1' }`); both are accepted. If CN occurs more than once the last one
 * wins, as in Go's `pkix.Name.FillFromRDNSequence`. Call this only for a certificate whose chain was
 * verified (`socket.authorized === true`): the subject itself proves nothing.
 *
 * @param subject `tls.PeerCertificate.subject` (or any object of the same shape).
 * @returns `{ user, groups }`; `groups` is empty when there is no O attribute.
 * @throws {Error} if the subject is missing or has no non-empty CommonName (Kubernetes rejects such
 *   certificates too).
 */
export function identityFromSubject(subject: CertificateSubject | undefined | null): CertificateIdentity {
  if (subject === undefined || subject === null || typeof subject !== 'object') {
    throw new Error('client certificate has no subject');
  }
  const attrs = subject as Readonly<Record<string, unknown>>;
  const cns = attributeValues(attrs['CN'], 'CN');
  const user = cns.length > 0 ? cns[cns.length - 1]! : '';
  if (user === '') throw new Error('client certificate subject has no CommonName (user name)');
  return { user, groups: attributeValues(attrs['O'], 'O') };
}

/**
 * Reads the fields of a PEM certificate that callers need to decide whether to re-issue it.
 *
 * @param certPem PEM text; if it contains several certificates, the first is inspected.
 * @throws {Error} if no certificate can be parsed.
 */
export function inspectCertificate(certPem: string): CertificateInfo {
  const cert = parseCertificate(certPem);
  const bc = cert.getExtension(x509.BasicConstraintsExtension);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const name of san?.names.items ?? []) {
    if (name.type === 'dns') dnsNames.push(name.value);
    else if (name.type === 'ip') {
      try {
        ipAddresses.push(canonicalIp(name.value));
      } catch {
        // An IP SAN with a netmask (8/32 octets) or garbage: not an address a client can match.
      }
    }
  }
  return {
    serialNumber: cert.serialNumber.toLowerCase(),
    subject: cert.subject,
    commonName: cert.subjectName.getField('CN').at(-1),
    organizations: cert.subjectName.getField('O'),
    issuer: cert.issuer,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    isCA: bc?.ca ?? false,
    dnsNames,
    ipAddresses,
    extendedKeyUsages: Array.from(eku?.usages ?? [], String),
  };
}

/**
 * Whether `certPem` was issued by the CA certificate `caCertPem`: the issuer name matches the CA's
 * subject and the signature verifies with the CA's public key. Validity dates are not checked.
 *
 * @returns `false` (never throws) when either PEM does not parse.
 */
export function isIssuedBy(certPem: string, caCertPem: string): boolean {
  try {
    const cert = new NodeX509Certificate(firstPemBlock(certPem, 'CERTIFICATE'));
    const ca = new NodeX509Certificate(firstPemBlock(caCertPem, 'CERTIFICATE'));
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}

/**
 * Whether the private key in `pair.keyPem` belongs to the (first) certificate in `pair.certPem`.
 *
 * @returns `false` (never throws) when either PEM does not parse.
 */
export function keyMatchesCertificate(pair: KeyPair): boolean {
  try {
    const cert = new NodeX509Certificate(firstPemBlock(pair.certPem, 'CERTIFICATE'));
    const key = createPrivateKey(pair.keyPem);
    return spkiDer(createPublicKey(key)).equals(spkiDer(cert.publicKey));
  } catch {
    return false;
  }
}

/**
 * Canonical text form of an IP address, used to compare SANs: IPv4 dotted quad; IPv4-mapped IPv6
 * (`::ffff:1.2.3.4`) as its IPv4 address (Go's `net.IP.To4` rule); other IPv6 in RFC 5952 form
 * (lowercase, longest zero run compressed), e.g. `0:0:0:0:0:0:0:1` → `::1`.
 *
 * @throws {Error} if `text` is not an IPv4/IPv6 address (zone suffixes like `%eth0` are rejected).
 */
export function canonicalIp(text: string): string {
  const bytes = parseIp(text);
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // RFC 5952 §4.2: compress the longest run (length >= 2) of zero groups, the first on ties.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestLen < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

// ---------------------------------------------------------------------------------------------
// internals

interface LeafSpec {
  subject: x509.JsonName;
  extendedKeyUsages: string[];
  extraExtensions: x509.Extension[];
  validityDays: number;
}

interface Issuer {
  cert: x509.X509Certificate;
  key: CryptoKey;
  signingAlgorithm: Algorithm;
}

async function issueLeaf(ca: KeyPair, spec: LeafSpec): Promise<KeyPair> {
  const window = validityWindow(spec.validityDays);
  const issuer = await loadIssuer(ca);
  const notAfter = window.notAfter > issuer.cert.notAfter ? issuer.cert.notAfter : window.notAfter;
  const keys = await generateKeyPair();
  const caSki = issuer.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  const aki = caSki
    ? new x509.AuthorityKeyIdentifierExtension(caSki.keyId, false)
    : await x509.AuthorityKeyIdentifierExtension.create(issuer.cert.publicKey, false);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: spec.subject,
    issuer: issuer.cert.subjectName,
    notBefore: window.notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: issuer.key,
    signingAlgorithm: issuer.signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension(spec.extendedKeyUsages, false),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      aki,
      ...spec.extraExtensions,
    ],
  });
  return { certPem: certToPem(cert), keyPem: await privateKeyToPem(keys.privateKey) };
}

/** Parses and checks the CA pair and imports its key into WebCrypto for signing. */
async function loadIssuer(ca: KeyPair): Promise<Issuer> {
  const cert = parseCertificate(ca.certPem);
  if (!cert.getExtension(x509.BasicConstraintsExtension)?.ca) {
    throw new Error(`CA certificate "${cert.subject}" is not a CA (basicConstraints CA:TRUE missing)`);
  }
  const signer = await importSigningKey(ca.keyPem, 'CA');
  if (!keyMatchesCertificate(ca)) {
    throw new Error(`CA private key does not belong to CA certificate "${cert.subject}"`);
  }
  return { cert, key: signer.privateKey, signingAlgorithm: signer.signingAlgorithm };
}

/** A private key imported for signing, its SPKI (DER) and the matching signature algorithm. */
interface SigningKey {
  privateKey: CryptoKey;
  spki: ArrayBuffer;
  signingAlgorithm: Algorithm;
}

/** Imports a PEM private key (any encoding Node reads) as a WebCrypto signing key. */
async function importSigningKey(keyPem: string, what: string): Promise<SigningKey> {
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(keyPem);
  } catch (err) {
    throw new Error(`${what} private key does not parse: ${(err as Error).message}`);
  }
  let importAlgorithm: EcKeyImportParams | RsaHashedImportParams;
  let signingAlgorithm: Algorithm;
  switch (keyObject.asymmetricKeyType) {
    case 'ec': {
      const curve = keyObject.asymmetricKeyDetails?.namedCurve;
      const map: Record<string, [string, string]> = {
        prime256v1: ['P-256', 'SHA-256'],
        secp384r1: ['P-384', 'SHA-384'],
        secp521r1: ['P-521', 'SHA-512'],
      };
      const entry = curve ? map[curve] : undefined;
      if (!entry) throw new Error(`${what} key uses unsupported EC curve ${curve ?? '(unknown)'}`);
      importAlgorithm = { name: 'ECDSA', namedCurve: entry[0] };
      signingAlgorithm = { name: 'ECDSA', hash: entry[1] } as EcdsaParams;
      break;
    }
    case 'rsa':
      importAlgorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
      signingAlgorithm = { name: 'RSASSA-PKCS1-v1_5' };
      break;
    default:
      throw new Error(`${what} key type ${keyObject.asymmetricKeyType ?? '(unknown)'} is not supported`);
  }
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  const privateKey = (await webcrypto.subtle.importKey('pkcs8', pkcs8, importAlgorithm, false, [
    'sign',
  ])) as unknown as CryptoKey;
  const spkiBuf = spkiDer(createPublicKey(keyObject));
  const spki = spkiBuf.buffer.slice(spkiBuf.byteOffset, spkiBuf.byteOffset + spkiBuf.byteLength) as ArrayBuffer;
  return { privateKey, spki, signingAlgorithm };
}

async function exportSpki(key: CryptoKey): Promise<ArrayBuffer> {
  return webcrypto.subtle.exportKey('spki', key as unknown as webcrypto.CryptoKey);
}

async function generateKeyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(LEAF_KEY_ALGORITHM, true, [
    'sign',
    'verify',
  ])) as unknown as CryptoKeyPair;
}

async function privateKeyToPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key as unknown as webcrypto.CryptoKey);
  return withTrailingNewline(x509.PemConverter.encode(der, 'PRIVATE KEY'));
}

function certToPem(cert: x509.X509Certificate): string {
  return withTrailingNewline(cert.toString('pem'));
}

function withTrailingNewline(pem: string): string {
  const normalized = pem.replace(/\r\n/g, '\n');
  return normalized.endsWith('\n') ? normalized : `${normalized}\n`;
}

/**
 * 16 random octets with the top bit cleared (positive without a sign octet) and a non-zero first
 * octet (DER-minimal, never zero), as lowercase hex.
 */
function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

function validityWindow(validityDays: number): { notBefore: Date; notAfter: Date } {
  if (typeof validityDays !== 'number' || !Number.isFinite(validityDays) || validityDays <= 0) {
    throw new RangeError(`validityDays must be a positive number, got ${String(validityDays)}`);
  }
  const now = Date.now();
  return {
    notBefore: new Date(now - CERTIFICATE_BACKDATE_MS),
    notAfter: new Date(now + validityDays * DAY_MS),
  };
}

function requireNonEmpty(value: unknown, what: string): void {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`${what} must be a non-empty string`);
  }
}

function parseCertificate(certPem: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(firstPemBlock(certPem, 'CERTIFICATE'));
  } catch (err) {
    throw new Error(`certificate does not parse: ${(err as Error).message}`);
  }
}

function firstPemBlock(pem: string, label: string): string {
  const re = new RegExp(`-----BEGIN ${label}-----[\\s\\S]*?-----END ${label}-----`);
  const match = re.exec(pem);
  if (!match) throw new Error(`no PEM block "${label}" found`);
  return match[0];
}

function spkiDer(key: KeyObject): Buffer {
  return key.export({ type: 'spki', format: 'der' });
}

function attributeValues(value: unknown, attr: string): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((v) => {
    if (typeof v !== 'string') throw new Error(`certificate subject attribute ${attr} is not a string`);
    return v;
  });
}

/** Validates, de-duplicates and routes SANs (IP literals given as DNS names become IP SANs). */
function normalizeSans(
  dnsInput: readonly string[],
  ipInput: readonly string[],
): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = [];
  const seenDns = new Set<string>();
  const ipAddresses: string[] = [];
  const seenIp = new Set<string>();
  const addIp = (text: string): void => {
    const canonical = canonicalIp(text);
    if (!seenIp.has(canonical)) {
      seenIp.add(canonical);
      ipAddresses.push(canonical);
    }
  };
  for (const name of dnsInput) {
    if (typeof name !== 'string' || name === '') throw new TypeError('DNS names must be non-empty strings');
    if (isIP(name) !== 0) {
      addIp(name);
      continue;
    }
    if (!/^[\x21-\x7e]+$/.test(name)) {
      throw new TypeError(`DNS name ${JSON.stringify(name)} must be printable ASCII (use punycode for IDNs)`);
    }
    const key = name.toLowerCase();
    if (!seenDns.has(key)) {
      seenDns.add(key);
      dnsNames.push(name);
    }
  }
  for (const ip of ipInput) addIp(ip);
  return { dnsNames, ipAddresses };
}

/** Text form that @peculiar/asn1-x509's IP parser reads correctly (no `::`, no embedded IPv4). */
function ipForEncoding(canonical: string): string {
  const bytes = parseIp(canonical);
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(':');
}

/** Parses an IP literal to 4 or 16 octets; IPv4-mapped IPv6 collapses to 4 octets. */
function parseIp(text: string): Uint8Array {
  if (typeof text !== 'string' || text.includes('%')) throw invalidIp(text);
  const kind = isIP(text);
  if (kind === 4) return Uint8Array.from(text.split('.').map(Number));
  if (kind !== 6) throw invalidIp(text);
  let body = text;
  let tail: number[] = [];
  const embedded = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(body);
  if (embedded) {
    tail = embedded[2]!.split('.').map(Number);
    body = `${embedded[1]!}0:0`;
  }
  const halves = body.split('::');
  if (halves.length > 2) throw invalidIp(text);
  const parseGroups = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const left = parseGroups(halves[0]!);
  const right = halves.length === 2 ? parseGroups(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - left.length - right.length : 0;
  const groups = [...left, ...new Array<number>(Math.max(fill, 0)).fill(0), ...right];
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) {
    throw invalidIp(text);
  }
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  const v4Mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return v4Mapped ? bytes.slice(12) : bytes;
}

function invalidIp(text: unknown): Error {
  return new Error(`invalid IP address ${JSON.stringify(text)}`);
}
