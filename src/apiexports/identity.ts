/**
 * APIExport identities (kcp pkg/identity, docs "APIs in kcp"): an export's identity is a secret
 * key held in a Secret of its workspace; the identity hash, the key's SHA-256, names the storage
 * of every resource bound from the export, so two exports of the same group/resource never share
 * objects, and a permission claim on another export's resource names that resource by its hash.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Namespace of generated identity Secrets in the export's workspace (kcp's `kcp-system`). */
export const IDENTITY_SECRET_NAMESPACE = 'kcp-system';
/** Data key of the identity in its Secret. */
export const IDENTITY_SECRET_KEY = 'key';

/**
 * A new identity key: 32 random bytes as unpadded URL-safe base64 (43 characters), as kcp's
 * `Random256BitsString`.
 */
export function newIdentityKey(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The identity hash of a key: lowercase hex SHA-256 of the key's text as stored in the Secret
 * (not of the decoded bytes), 64 characters — kcp's `IdentityHash`.
 */
export function identityHash(key: string | Buffer): string {
  return createHash('sha256').update(key).digest('hex');
}

const BASE62 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/**
 * kcp's `ToBase62(sha224(s))`: the SHA-224 digest read as a big-endian integer, written in base
 * 62 with Go's digit order (0-9, a-z, A-Z). Used for label values kcp derives from names (the
 * `internal.apis.kcp.io/export` label of an APIBinding).
 */
export function base62Sha224(s: string): string {
  let n = BigInt(`0x${createHash('sha224').update(s).digest('hex')}`);
  if (n === 0n) return '0';
  let out = '';
  while (n > 0n) { out = BASE62[Number(n % 62n)]! + out; n /= 62n; }
  return out;
}
