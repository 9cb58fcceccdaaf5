/**
 * The operator's PKI: the same certificate code as `kcp-ts start` (src/pki/certs.ts), kept in
 * Secrets instead of files. Every certificate is (re)issued only when the Secret holding it is
 * missing or no longer fits: key and certificate do not match, it is not signed by the current
 * CA, its identity or SANs differ from what is wanted, or it expires within `renewBefore` (kcp-
 * operator leaves this to cert-manager; here it needs nothing besides the operator). A renewal
 * changes the certificate's serial number, which the pod templates of its users carry in an
 * annotation, so the pods that mount it are rolled.
 */
import {
  createCA, inspectCertificate, isIssuedBy, issueClientCert, issueServingCert, keyMatchesCertificate, canonicalIp,
  type KeyPair,
} from '../src/pki/certs.js';

/** What a certificate should be. */
export type CertificateWanted =
  | { kind: 'ca'; commonName: string }
  | { kind: 'serving'; commonName: string; dnsNames: string[]; ipAddresses: string[] }
  | { kind: 'client'; user: string; groups: string[] };

/** How long certificates live and when they are renewed (milliseconds). */
export interface CertificatePolicy {
  caValidityMs: number;
  validityMs: number;
  renewBeforeMs: number;
}

const DAY_MS = 86_400_000;

/**
 * Why `existing` cannot be kept for `wanted` (signed by `issuer`), or undefined when it fits: it
 * is missing or unparsable, its key does not match, it ends within `renewBeforeMs` or has not
 * begun, it is not a CA (for a CA), not issued by `issuer`, or of another identity or SANs.
 */
export function replaceReason(existing: Partial<KeyPair> | undefined, wanted: CertificateWanted, issuer: KeyPair | undefined, policy: CertificatePolicy, now = Date.now()): string | undefined {
  if (!existing?.certPem || !existing.keyPem) return 'missing';
  let info;
  try { info = inspectCertificate(existing.certPem); } catch { return 'unparsable'; }
  if (!keyMatchesCertificate(existing as KeyPair)) return 'key does not match';
  if (info.notAfter.getTime() - now < policy.renewBeforeMs) return `expires ${info.notAfter.toISOString()}`;
  if (info.notBefore.getTime() > now) return 'not yet valid';
  if (wanted.kind === 'ca') return info.isCA ? undefined : 'not a CA';
  if (!issuer || !isIssuedBy(existing.certPem, issuer.certPem)) return 'not issued by the current CA';
  if (wanted.kind === 'client') {
    if (info.commonName !== wanted.user || info.organizations.join('\n') !== wanted.groups.join('\n')) return 'identity changed';
    return undefined;
  }
  const dns = new Set(info.dnsNames);
  const ips = new Set(info.ipAddresses);
  if (!wanted.dnsNames.every((d) => dns.has(d)) || !wanted.ipAddresses.every((ip) => ips.has(canonicalIp(ip)))) return 'SANs changed';
  return undefined;
}

/**
 * `existing` if it still fits `wanted` (see {@link replaceReason}), else a new key pair issued by
 * `issuer` (self-signed for a CA). `reason` says why it was issued.
 * @throws {Error} if `issuer` is missing for a leaf, or from the certificate code (an unusable CA)
 */
export async function ensureCertificate(existing: Partial<KeyPair> | undefined, wanted: CertificateWanted, issuer: KeyPair | undefined, policy: CertificatePolicy, now = Date.now()): Promise<{ pair: KeyPair; reason?: string }> {
  const reason = replaceReason(existing, wanted, issuer, policy, now);
  if (!reason) return { pair: existing as KeyPair };
  // A CA near its end is re-certified with its own key: everything it signed stays valid.
  if (wanted.kind === 'ca') {
    const keep = existing?.keyPem && reason.startsWith('expires') ? existing.keyPem : undefined;
    return { pair: await createCA(wanted.commonName, policy.caValidityMs / DAY_MS, keep), reason };
  }
  if (!issuer) throw new Error('no CA to issue from');
  const validityDays = policy.validityMs / DAY_MS;
  const pair = wanted.kind === 'serving'
    ? await issueServingCert(issuer, { commonName: wanted.commonName, dnsNames: wanted.dnsNames, ipAddresses: wanted.ipAddresses, validityDays })
    : await issueClientCert(issuer, { user: wanted.user, groups: wanted.groups, validityDays });
  return { pair, reason };
}

/** The serial number of a PEM certificate ('' if it does not parse): what pod templates carry to roll on renewal. */
export function serialOf(certPem: string | undefined): string {
  if (!certPem) return '';
  try { return inspectCertificate(certPem).serialNumber; } catch { return ''; }
}

/** Base64 of a UTF-8 string (Secret `data`). */
export function b64(text: string): string { return Buffer.from(text, 'utf8').toString('base64'); }

/** A Secret's `data` entry as UTF-8 text, or undefined. */
export function fromB64(data: Record<string, string> | undefined, key: string): string | undefined {
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}
