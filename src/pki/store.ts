/**
 * On-disk PKI of a kcp-ts server: a CA, the API server's serving certificate and two client
 * certificates, kept in one directory and created on first start.
 *
 * Layout of `dir` (mode 0700 when created here; keys 0600, certificates 0644):
 *
 * | file                                   | content                                                   |
 * |----------------------------------------|-----------------------------------------------------------|
 * | `ca.crt`, `ca.key`                     | self-signed CA (CN `kcp-ts-ca`), signs everything below   |
 * | `apiserver.crt`, `apiserver.key`       | serving certificate, SANs localhost/127.0.0.1/::1 + extra |
 * | `admin.crt`, `admin.key`               | client `kcp-admin`, group `system:kcp:admin`              |
 * | `system-admin.crt`, `system-admin.key` | client `system:admin`, group `system:masters`             |
 * | `sa.key`                               | ECDSA P-256 key signing service account tokens (ES256)    |
 * | `front-proxy-ca.crt`, `…key`           | request-header CA (CN `kcp-ts-front-proxy-ca`), signs only the next pair |
 * | `front-proxy-client.crt`, `…key`       | client `kcp-front-proxy`: the front-proxy's identity towards shards |
 *
 * The request-header CA is separate from the CA, as kube's front-proxy-ca: shards trust identity
 * headers (`X-Remote-User`, …) only from certificates it signed, and the CA that signs users'
 * client certificates (and, later, CertificateSigningRequests) can never mint that identity.
 *
 * Every file is written atomically (temporary file in the same directory, fsync, rename, fsync of
 * the directory), so a crash leaves either the old file or the new one, never a truncated one. A key
 * is always written before its certificate; a certificate whose key does not match (crash between
 * the two renames) is detected and re-issued on the next call.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';

import {
  canonicalIp,
  createCA,
  EKU_CLIENT_AUTH,
  EKU_SERVER_AUTH,
  inspectCertificate,
  isIssuedBy,
  issueClientCert,
  issueServingCert,
  keyMatchesCertificate,
  type CertificateInfo,
  type KeyPair,
} from './certs.js';

/** A key pair as held in memory together with the files it was read from or written to. */
export interface StoredKeyPair extends KeyPair {
  /** Absolute path of the PEM certificate file. */
  certPath: string;
  /** Absolute path of the PEM private key file (mode 0600). */
  keyPath: string;
}

/** Everything {@link ensurePki} provides to the server. */
export interface ServerPki {
  /** Absolute path of the PKI directory. */
  dir: string;
  /** The CA; `ca.certPem` is the trust bundle for clients and for client-certificate verification. */
  ca: StoredKeyPair;
  /** The API server's TLS serving certificate and key. */
  serving: StoredKeyPair;
  /** Client certificate of user {@link ADMIN_USER} in group {@link ADMIN_GROUP}. */
  admin: StoredKeyPair;
  /** Client certificate of user {@link SYSTEM_ADMIN_USER} in group {@link SYSTEM_ADMIN_GROUP}. */
  systemAdmin: StoredKeyPair;
  /** The request-header CA: shards accept identity headers only from certificates it signed. */
  frontProxyCA: StoredKeyPair;
  /** Client certificate {@link FRONT_PROXY_USER} of the front-proxy, signed by `frontProxyCA`. */
  frontProxyClient: StoredKeyPair;
  /**
   * Signing key of service account tokens (PKCS#8 PEM, ECDSA P-256), generated once and kept
   * across restarts: tokens issued before a restart stay valid.
   */
  serviceAccountKey: { keyPem: string; keyPath: string };
  /** DNS SANs of the serving certificate as issued. */
  servingDnsNames: string[];
  /** IP SANs of the serving certificate as issued, canonical text form. */
  servingIpAddresses: string[];
  /**
   * Base names of the pairs (re)written by this call, in write order, e.g.
   * `['ca', 'apiserver', 'admin', 'system-admin']` on first start and `[]` when everything was
   * reused. For logging.
   */
  issued: string[];
}

/** Options for {@link ensurePki}. */
export interface EnsurePkiOptions {
  /**
   * Extra DNS names for the serving certificate (e.g. `--external-hostname`). `localhost` is always
   * included. IP literals given here are treated as IP addresses.
   */
  hostnames: string[];
  /** Extra IP addresses for the serving certificate. `127.0.0.1` and `::1` are always included. */
  ipAddresses: string[];
  /**
   * Re-issue a leaf certificate whose remaining lifetime is shorter than this many days.
   * Default {@link DEFAULT_RENEW_BEFORE_DAYS}.
   */
  renewBeforeDays?: number;
}

/** User name of the `admin` client certificate (kcp's admin user). */
export const ADMIN_USER = 'kcp-admin';
/** Group of the `admin` client certificate. */
export const ADMIN_GROUP = 'system:kcp:admin';
/** User name of the `system-admin` client certificate (Kubernetes' conventional superuser). */
export const SYSTEM_ADMIN_USER = 'system:admin';
/** Group of the `system-admin` client certificate (Kubernetes' superuser group). */
export const SYSTEM_ADMIN_GROUP = 'system:masters';
/** CommonName of a CA created by {@link ensurePki}. */
export const CA_COMMON_NAME = 'kcp-ts-ca';
/** CommonName of the request-header CA created by {@link ensurePki}. */
export const FRONT_PROXY_CA_COMMON_NAME = 'kcp-ts-front-proxy-ca';
/** User (CN) of the front-proxy's client certificate; shards' default `--requestheader-allowed-names`. */
export const FRONT_PROXY_USER = 'kcp-front-proxy';
/** CommonName of the serving certificate. */
export const SERVING_COMMON_NAME = 'kcp-ts-apiserver';
/** DNS SANs every serving certificate carries. */
export const DEFAULT_SERVING_DNS_NAMES: readonly string[] = ['localhost'];
/** IP SANs every serving certificate carries. */
export const DEFAULT_SERVING_IP_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];
/** Default of {@link EnsurePkiOptions.renewBeforeDays}: 30 days. */
export const DEFAULT_RENEW_BEFORE_DAYS = 30;

/** File name of the service account signing key in the PKI directory (kcp's `<root>/sa.key`). */
export const SERVICE_ACCOUNT_KEY_FILE = 'sa.key';

/** Base file names inside the PKI directory (`<name>.crt` / `<name>.key`). */
export const PKI_FILE_NAMES = {
  ca: 'ca',
  serving: 'apiserver',
  admin: 'admin',
  systemAdmin: 'system-admin',
  frontProxyCA: 'front-proxy-ca',
  frontProxyClient: 'front-proxy-client',
} as const;

const DAY_MS = 24 * 60 * 60 * 1000;
const KEY_MODE = 0o600;
const CERT_MODE = 0o644;
const DIR_MODE = 0o700;
/** Temporary files older than this are leftovers of a crash and are removed. */
const STALE_TEMP_MS = 10 * 60 * 1000;

/** Per-directory queue so concurrent calls in one process do not interleave their writes. */
const dirLocks = new Map<string, Promise<unknown>>();

/**
 * Loads the server PKI from `dir`, creating or repairing whatever is missing.
 *
 * - First call: creates `dir` (mode 0700, parents included) and generates the CA, the serving
 *   certificate and both client certificates.
 * - Later calls reuse the files. A leaf pair is re-issued from the existing CA only when it is
 *   missing or unusable: a file missing or unparsable, key and certificate not matching, not signed
 *   by the current CA, not yet valid, wrong extended key usage, wrong user/groups (client
 *   certificates), remaining lifetime below `renewBeforeDays` (unless it already ends with the CA,
 *   so a new one would not live longer), or, for the serving certificate, a requested SAN it does not
 *   cover (e.g. a new `--external-hostname`). A re-issued serving certificate carries exactly the
 *   defaults plus the requested names; a certificate is never re-issued only to drop a SAN.
 * - CA recovery: if `ca.key` exists but `ca.crt` is missing, a new CA certificate is self-signed
 *   with the existing key (same subject and key identifier, so earlier leaves still verify).
 *
 * Concurrent calls for the same directory within one process are serialized. Across processes the
 * CA is created with no-clobber hard links, so processes starting at once agree on one CA key; their
 * leaf certificates may be issued more than once, but every returned pair is consistent and signed
 * by that CA, and the files on disk end up as matching pairs (a mismatch is repaired next call).
 *
 * @param dir PKI directory; relative paths resolve against the working directory.
 * @param opts Extra serving SANs and the renewal threshold.
 * @returns PEMs and absolute file paths of all pairs, and which pairs were written.
 * @throws {Error} if `ca.crt` exists without `ca.key`, if the CA files do not parse, do not match,
 *   are not a CA or have expired (a CA is never replaced silently: every kubeconfig trusts it), if a
 *   requested IP address or hostname is invalid, or on file system errors (e.g. `dir` is a file).
 * @throws {RangeError} if `renewBeforeDays` is negative or not finite.
 */
export async function ensurePki(dir: string, opts: EnsurePkiOptions): Promise<ServerPki> {
  const absDir = resolve(dir);
  const previous = dirLocks.get(absDir) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(() => ensurePkiLocked(absDir, opts));
  const tail = run.catch(() => undefined);
  dirLocks.set(absDir, tail);
  void tail.then(() => {
    if (dirLocks.get(absDir) === tail) dirLocks.delete(absDir);
  });
  return run;
}

async function ensurePkiLocked(dir: string, opts: EnsurePkiOptions): Promise<ServerPki> {
  const renewBeforeDays = opts.renewBeforeDays ?? DEFAULT_RENEW_BEFORE_DAYS;
  if (!Number.isFinite(renewBeforeDays) || renewBeforeDays < 0) {
    throw new RangeError(`renewBeforeDays must be a non-negative number, got ${String(renewBeforeDays)}`);
  }
  const renewBeforeMs = renewBeforeDays * DAY_MS;
  const wanted = wantedServingSans(opts);

  await ensureDir(dir);
  await removeStaleTempFiles(dir);
  const issued: string[] = [];

  const ca = await ensureCA(dir, PKI_FILE_NAMES.ca, CA_COMMON_NAME, issued);
  const caNotAfter = inspectCertificate(ca.certPem).notAfter.getTime();
  // Renewal only helps if a new certificate would outlive the current one: leaves are capped at
  // the CA's notAfter, so near the CA's end they would otherwise be re-issued on every call.
  const fresh = (info: CertificateInfo): boolean =>
    info.notAfter.getTime() - Date.now() >= renewBeforeMs || info.notAfter.getTime() >= caNotAfter;

  const serving = await ensureLeaf(dir, PKI_FILE_NAMES.serving, ca, issued, {
    usable: (info) =>
      info.extendedKeyUsages.includes(EKU_SERVER_AUTH) &&
      coversSans(info, wanted.dnsNames, wanted.ipAddresses) &&
      fresh(info),
    issue: () =>
      issueServingCert(ca, {
        commonName: SERVING_COMMON_NAME,
        dnsNames: wanted.dnsNames,
        ipAddresses: wanted.ipAddresses,
      }),
  });

  const clientLeaf = (name: string, user: string, group: string, signer: KeyPair = ca): Promise<StoredKeyPair> =>
    ensureLeaf(dir, name, signer, issued, {
      usable: (info) =>
        info.extendedKeyUsages.includes(EKU_CLIENT_AUTH) &&
        info.commonName === user &&
        info.organizations.length === 1 &&
        info.organizations[0] === group &&
        fresh(info),
      issue: () => issueClientCert(signer, { user, groups: [group] }),
    });
  const admin = await clientLeaf(PKI_FILE_NAMES.admin, ADMIN_USER, ADMIN_GROUP);
  const systemAdmin = await clientLeaf(PKI_FILE_NAMES.systemAdmin, SYSTEM_ADMIN_USER, SYSTEM_ADMIN_GROUP);
  const frontProxyCA = await ensureCA(dir, PKI_FILE_NAMES.frontProxyCA, FRONT_PROXY_CA_COMMON_NAME, issued);
  const frontProxyClient = await clientLeaf(PKI_FILE_NAMES.frontProxyClient, FRONT_PROXY_USER, FRONT_PROXY_USER, frontProxyCA);
  const serviceAccountKey = await ensureServiceAccountKey(dir);

  const servingInfo = inspectCertificate(serving.certPem);
  return {
    dir,
    ca,
    serving,
    admin,
    systemAdmin,
    frontProxyCA,
    frontProxyClient,
    serviceAccountKey,
    servingDnsNames: servingInfo.dnsNames,
    servingIpAddresses: servingInfo.ipAddresses,
    issued,
  };
}

/** Loads, validates or creates the CA `<name>.crt`/`<name>.key`; see {@link ensurePki} for the rules. */
async function ensureCA(dir: string, name: string, commonName: string, issued: string[]): Promise<StoredKeyPair> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  // A few rounds at most: each round either returns, throws, or observes another process's write.
  for (let attempt = 0; attempt < 5; attempt++) {
    const certPem = await readOptional(certPath);
    const keyPem = await readOptional(keyPath);
    if (certPem !== undefined && keyPem !== undefined) {
      validateCA({ certPem, keyPem }, certPath, keyPath);
      await tightenKeyMode(keyPath);
      return { certPem, keyPem, certPath, keyPath };
    }
    if (certPem !== undefined) {
      throw new Error(
        `${certPath} exists but ${keyPath} is missing: cannot issue certificates without the CA key ` +
          `(restore the key, or remove the directory to start over with a new CA)`,
      );
    }
    if (keyPem === undefined) {
      const fresh = await createCA(commonName);
      if (!(await writeFileAtomic(keyPath, fresh.keyPem, KEY_MODE, true))) continue; // lost a race
      if (await writeFileAtomic(certPath, fresh.certPem, CERT_MODE, true)) {
        issued.push(name);
        return { ...fresh, certPath, keyPath };
      }
      continue;
    }
    // ca.key without ca.crt: crash between the two writes, or a deleted certificate.
    const rebuilt = await createCA(commonName, undefined, keyPem);
    if (await writeFileAtomic(certPath, rebuilt.certPem, CERT_MODE, true)) {
      issued.push(name);
      return { certPem: rebuilt.certPem, keyPem, certPath, keyPath };
    }
  }
  throw new Error(`could not settle the CA in ${dir}: files keep changing underneath`);
}

function validateCA(ca: KeyPair, certPath: string, keyPath: string): void {
  let info: CertificateInfo;
  try {
    info = inspectCertificate(ca.certPem);
  } catch (err) {
    throw new Error(`${certPath}: ${(err as Error).message}`);
  }
  if (!info.isCA) throw new Error(`${certPath} is not a CA certificate (basicConstraints CA:TRUE missing)`);
  if (!keyMatchesCertificate(ca)) throw new Error(`${keyPath} does not parse or does not belong to ${certPath}`);
  if (info.notAfter.getTime() <= Date.now()) {
    throw new Error(
      `CA certificate ${certPath} expired on ${info.notAfter.toISOString()}; ` +
        `remove ${certPath} to re-certify the existing key, or remove the directory for a new CA`,
    );
  }
}

/**
 * Loads or creates `sa.key`. Created with a no-clobber link, so processes starting at once agree
 * on one key. An existing key is never replaced (that would invalidate every issued token): a file
 * that is not an ECDSA P-256 private key is an Error.
 */
async function ensureServiceAccountKey(dir: string): Promise<{ keyPem: string; keyPath: string }> {
  const keyPath = join(dir, SERVICE_ACCOUNT_KEY_FILE);
  let keyPem = await readOptional(keyPath);
  if (keyPem === undefined) {
    const fresh = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    // Not a certificate pair, so not reported in `issued`.
    if (await writeFileAtomic(keyPath, fresh, KEY_MODE, true)) return { keyPem: fresh, keyPath };
    keyPem = await readFile(keyPath, 'utf8'); // another process won the race
  }
  let ok = false;
  try {
    const key = createPrivateKey(keyPem);
    ok = key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(`${keyPath} is not an ECDSA P-256 private key (remove it to generate a new one; issued service account tokens become invalid)`);
  await tightenKeyMode(keyPath);
  return { keyPem, keyPath };
}

interface LeafPolicy {
  /** Whether an existing, CA-signed, key-matching certificate is still good enough. */
  usable: (info: CertificateInfo) => boolean;
  issue: () => Promise<KeyPair>;
}

async function ensureLeaf(
  dir: string,
  name: string,
  ca: KeyPair,
  issued: string[],
  policy: LeafPolicy,
): Promise<StoredKeyPair> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  const certPem = await readOptional(certPath);
  const keyPem = await readOptional(keyPath);
  if (certPem !== undefined && keyPem !== undefined) {
    const existing = { certPem, keyPem };
    let info: CertificateInfo | undefined;
    try {
      info = inspectCertificate(certPem);
    } catch {
      info = undefined;
    }
    if (
      info !== undefined &&
      keyMatchesCertificate(existing) &&
      isIssuedBy(certPem, ca.certPem) &&
      info.notBefore.getTime() <= Date.now() &&
      policy.usable(info)
    ) {
      await tightenKeyMode(keyPath);
      return { ...existing, certPath, keyPath };
    }
  }
  const fresh = await policy.issue();
  await writeFileAtomic(keyPath, fresh.keyPem, KEY_MODE, false);
  await writeFileAtomic(certPath, fresh.certPem, CERT_MODE, false);
  issued.push(name);
  return { ...fresh, certPath, keyPath };
}

/** Serving SANs wanted: defaults plus requested, IP literals among hostnames moved to IPs. */
function wantedServingSans(opts: EnsurePkiOptions): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const host of [...DEFAULT_SERVING_DNS_NAMES, ...opts.hostnames]) {
    if (typeof host !== 'string' || host.trim() === '') throw new Error('hostnames must be non-empty strings');
    const h = host.trim();
    if (isIP(h) !== 0) ipAddresses.push(canonicalIp(h));
    else if (!dnsNames.some((d) => d.toLowerCase() === h.toLowerCase())) dnsNames.push(h);
  }
  for (const ip of [...DEFAULT_SERVING_IP_ADDRESSES, ...opts.ipAddresses]) {
    const c = canonicalIp(typeof ip === 'string' ? ip.trim() : ip);
    if (!ipAddresses.includes(c)) ipAddresses.push(c);
  }
  return { dnsNames, ipAddresses: [...new Set(ipAddresses)] };
}

/** Whether a certificate literally lists every wanted SAN (DNS case-insensitive, IPs canonical). */
function coversSans(info: CertificateInfo, dnsNames: string[], ipAddresses: string[]): boolean {
  const haveDns = new Set(info.dnsNames.map((d) => d.toLowerCase()));
  const haveIps = new Set(info.ipAddresses);
  return dnsNames.every((d) => haveDns.has(d.toLowerCase())) && ipAddresses.every((ip) => haveIps.has(ip));
}

async function ensureDir(dir: string): Promise<void> {
  try {
    const st = await stat(dir);
    if (!st.isDirectory()) throw new Error(`PKI path ${dir} exists and is not a directory`);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dir, { recursive: true, mode: DIR_MODE });
  if (process.platform !== 'win32') await chmod(dir, DIR_MODE); // mkdir's mode is masked by umask
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Reused key files that are group/world-accessible are narrowed to 0600 (POSIX only). */
async function tightenKeyMode(path: string): Promise<void> {
  if (process.platform === 'win32') return;
  const st = await stat(path);
  if ((st.mode & 0o077) !== 0) await chmod(path, KEY_MODE);
}

const TEMP_MARKER = '.tmp-';

/**
 * Writes `data` to `path` atomically: a temporary file in the same directory is written with
 * `mode`, fsynced, then renamed over `path` (or, with `noClobber`, hard-linked to `path`, which
 * fails if `path` exists). The directory is fsynced afterwards where the platform allows.
 *
 * @returns `false` only when `noClobber` is set and `path` already exists; `true` when written.
 */
async function writeFileAtomic(path: string, data: string, mode: number, noClobber: boolean): Promise<boolean> {
  const dir = resolve(path, '..');
  const base = path.slice(dir.length + 1);
  const tmp = join(dir, `.${base}${TEMP_MARKER}${process.pid}-${randomBytes(6).toString('hex')}`);
  try {
    const fh = await open(tmp, 'wx', mode);
    try {
      await fh.writeFile(data, 'utf8');
      if (process.platform !== 'win32') await fh.chmod(mode); // open's mode is masked by umask
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (noClobber) {
      try {
        await link(tmp, path);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') return false;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EXDEV') throw err;
        // No hard links on this file system: best effort check-then-rename.
        if ((await readOptional(path)) !== undefined) return false;
        await rename(tmp, path);
      }
    } else {
      await rename(tmp, path);
    }
  } finally {
    await rm(tmp, { force: true });
  }
  await fsyncDir(dir);
  return true;
}

async function fsyncDir(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some file systems do not support fsync on directories; the rename itself is still atomic.
  }
}

/** Removes temporary files left behind by a crash (older than {@link STALE_TEMP_MS}). */
async function removeStaleTempFiles(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const now = Date.now();
  await Promise.all(
    names
      .filter((n) => n.startsWith('.') && n.includes(TEMP_MARKER))
      .map(async (n) => {
        const p = join(dir, n);
        try {
          const st = await stat(p);
          if (st.isFile() && now - st.mtimeMs > STALE_TEMP_MS) await rm(p, { force: true });
        } catch {
          // Raced with its owner renaming it: nothing to clean.
        }
      }),
  );
}
