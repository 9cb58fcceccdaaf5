/**
 * Certificates and kubeconfigs as Secrets: each reconcile reads the live Secret from the cache and
 * keeps its certificate while it fits (pki.ts), so a converged instance issues nothing.
 */
import { generateKeyPairSync } from 'node:crypto';
import type { KeyPair } from '../../src/pki/certs.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { parseDuration, type HostObject, type KcpInstance, type OwnerReference } from '../api/types.js';
import { cached, type OperatorContext } from '../context.js';
import { b64, ensureCertificate, fromB64, type CertificatePolicy, type CertificateWanted } from '../pki.js';
import { names, secret } from '../resources.js';
import { HostApiError } from '../kube/client.js';

/** The certificate policy of an instance (`spec.pki`, CRD defaults if unset). */
export function policyOf(inst: KcpInstance): CertificatePolicy {
  const p = inst.spec.pki ?? {};
  return { caValidityMs: parseDuration(p.caDuration ?? '87600h'), validityMs: parseDuration(p.certificateDuration ?? '8760h'), renewBeforeMs: parseDuration(p.renewBefore ?? '720h') };
}

/** A certificate kept in a Secret (`tls.crt`, `tls.key`, `ca.crt`), and the Secret to apply. */
export interface CertificateSecret {
  pair: KeyPair;
  secret: HostObject;
  /** Why it was (re)issued in this reconcile; undefined when the live one was kept. */
  issued?: string;
}

/**
 * The Secret `name` holding a certificate as `wanted`, issued by `issuer` (self-signed CA when
 * `issuer` is undefined and `wanted.kind` is `ca`; a CA near its end is re-certified with its own
 * key, so what it signed stays valid). `extra` adds keys (a kubeconfig); `policy` defaults to the
 * instance's.
 */
export async function certificateSecret(
  ctx: OperatorContext, inst: KcpInstance, name: string, component: string, owner: OwnerReference,
  wanted: CertificateWanted, issuer: KeyPair | undefined, shard?: string, extra?: (pair: KeyPair) => Record<string, string>,
  policy: CertificatePolicy = policyOf(inst),
): Promise<CertificateSecret> {
  const live = cached(ctx, 'Secret', inst.metadata.namespace!, name) as { data?: Record<string, string> } | undefined;
  const existing = { certPem: fromB64(live?.data, 'tls.crt'), keyPem: fromB64(live?.data, 'tls.key') };
  const { pair, reason } = await ensureCertificate(existing, wanted, issuer, policy, ctx.now());
  const data: Record<string, string> = { 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem), 'ca.crt': b64((issuer ?? pair).certPem), ...(extra ? mapValues(extra(pair), b64) : {}) };
  if (reason && reason !== 'missing') ctx.log(`certificate ${inst.metadata.namespace}/${name} renewed: ${reason}`);
  return { pair, secret: secret(inst, name, component, owner, data, 'kubernetes.io/tls', shard), issued: reason };
}

function mapValues(o: Record<string, string>, f: (v: string) => string): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));
}

/** A kubeconfig (key `kubeconfig`) for `server` with a client certificate `user`/`groups`, trusting `ca`. */
export function kubeconfigOf(server: string, ca: string, pair: KeyPair, user: string): string {
  return buildKubeconfig({
    clusters: [{ name: 'kcp', server, caPem: ca }],
    users: [{ name: user, certPem: pair.certPem, keyPem: pair.keyPem }],
    contexts: [{ name: 'kcp', cluster: 'kcp', user }],
    currentContext: 'kcp',
  });
}

/**
 * The instance's CA: the Secret `spec.pki.caSecretRef` names (the platform team's CA, never
 * written by the operator), else the operator's own `<instance>-ca`, created once.
 * @throws {HostApiError} 404-like error when a referenced CA Secret is missing or incomplete
 */
export async function instanceCA(ctx: OperatorContext, inst: KcpInstance, ownName: string, owner: OwnerReference): Promise<{ pair: KeyPair; secret?: HostObject }> {
  const ref = inst.spec.pki?.caSecretRef;
  if (ref) {
    const s = await ctx.client.get<HostObject & { data?: Record<string, string> }>('Secret', inst.metadata.namespace, ref.name);
    const certPem = fromB64(s?.data, 'tls.crt');
    const keyPem = fromB64(s?.data, 'tls.key');
    if (!certPem || !keyPem) throw new HostApiError(404, 'NotFound', `CA Secret ${inst.metadata.namespace}/${ref.name} (spec.pki.caSecretRef) is missing or lacks tls.crt/tls.key`);
    return { pair: { certPem, keyPem } };
  }
  const ca = await certificateSecret(ctx, inst, ownName, 'pki', owner, { kind: 'ca', commonName: `${inst.metadata.name}-ca` }, undefined);
  return { pair: ca.pair, secret: ca.secret };
}

/** The Secret with the service accounts' signing key (`key.pem`, ECDSA P-256 PKCS#8), generated once. */
export function serviceAccountKeySecret(ctx: OperatorContext, inst: KcpInstance, name: string, owner: OwnerReference): HostObject {
  const live = cached(ctx, 'Secret', inst.metadata.namespace!, name) as { data?: Record<string, string> } | undefined;
  const keyPem = live?.data?.['key.pem'] ? fromB64(live.data, 'key.pem')! : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  return secret(inst, name, 'pki', owner, { 'key.pem': b64(keyPem) });
}

/**
 * The instance's CA as it exists now, or undefined while the instance reconciler has not created
 * it yet. Reconcilers other than the instance's issue only from this: a CA of their own making
 * would sign certificates nobody trusts.
 */
export async function existingCA(ctx: OperatorContext, inst: KcpInstance): Promise<KeyPair | undefined> {
  if (inst.spec.pki?.caSecretRef) return (await instanceCA(ctx, inst, names.ca(inst.metadata.name), { apiVersion: inst.apiVersion, kind: inst.kind, name: inst.metadata.name, uid: inst.metadata.uid! })).pair;
  const live = cached(ctx, 'Secret', inst.metadata.namespace!, names.ca(inst.metadata.name)) as { data?: Record<string, string> } | undefined;
  const certPem = fromB64(live?.data, 'tls.crt');
  const keyPem = fromB64(live?.data, 'tls.key');
  return certPem && keyPem ? { certPem, keyPem } : undefined;
}
