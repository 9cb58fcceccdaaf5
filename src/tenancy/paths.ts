/**
 * Logical cluster names and workspace paths, as kcp defines them
 * (github kcp-dev/logicalcluster, kcp docs "Workspaces"):
 *
 * - a **logical cluster name** is what objects are stored under: `root`, a system name such as
 *   `system:admin`, or a random name of 16 lower-case base36 characters for a scheduled
 *   workspace (`2x5nd3awx0a7ty4j`);
 * - a **path** names a workspace by its position in the tree: `root:org:team`; home workspaces
 *   have the path `user:<user name>`. A path segment is a DNS-1123 label.
 *
 * `/clusters/<x>/…` accepts either; a path is resolved to its logical cluster name through the
 * `kcp.io/path` annotation of the LogicalCluster objects (see index.ts).
 */
import { createHash, randomBytes } from 'node:crypto';

/** The root logical cluster (also the root path). */
export const ROOT = 'root';
/** Annotation of a LogicalCluster holding its canonical path (kcp `core.LogicalClusterPathAnnotationKey`). */
export const PATH_ANNOTATION = 'kcp.io/path';

const SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const CLUSTER_NAME = /^[a-z0-9][a-z0-9-]*[a-z0-9]$|^[a-z0-9]$/;

/** Whether `s` is a valid workspace path (`root`, `root:org:team`, `user:alice`). */
export function isValidPath(s: string): boolean {
  if (!s || s.length > 1024) return false;
  return s.split(':').every((seg) => SEGMENT.test(seg));
}

/**
 * How a `/clusters/<x>` segment is to be read: a system logical cluster (`system:…`), a plain
 * logical cluster name (no colon), or a path to resolve. Home paths (`user:<name>`) allow the
 * characters of user names after the prefix.
 */
export function classifyClusterSegment(s: string): 'name' | 'path' | 'invalid' {
  if (s.startsWith('system:')) return 'name';
  if (!s.includes(':')) return CLUSTER_NAME.test(s) ? 'name' : 'invalid';
  if (s.startsWith('user:')) return s.length > 5 ? 'path' : 'invalid';
  return isValidPath(s) ? 'path' : 'invalid';
}

/** The parent path (`root:org` of `root:org:team`), or '' for a top-level path. */
export function parentPath(path: string): string {
  const i = path.lastIndexOf(':');
  return i < 0 ? '' : path.slice(0, i);
}

/** Joins a path and a child name. */
export function joinPath(path: string, name: string): string {
  return path ? `${path}:${name}` : name;
}

/** The last segment of a path (the workspace's name in its parent). */
export function basePath(path: string): string {
  return path.slice(path.lastIndexOf(':') + 1);
}

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';

function base36(bytes: Uint8Array, length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i++) out += BASE36[bytes[i % bytes.length]! % 36];
  return out;
}

/**
 * A new random logical cluster name: 16 base36 characters (kcp's workspace scheduler draws
 * random names of this shape; 36^16 ≈ 8·10^24, collisions are retried by the caller).
 */
export function randomClusterName(): string {
  // Rejection-free approximation: the modulo bias over 256 values is < 1 %, irrelevant here.
  return base36(randomBytes(16), 16);
}

/**
 * The logical cluster name a workspace gets first: derived from its uid, so scheduling is
 * idempotent without first recording the name (a collision, ~36^-16, falls back to a random
 * name that is recorded before use).
 */
export function clusterNameFor(workspaceUid: string): string {
  return base36(createHash('sha224').update(`workspace/${workspaceUid}`).digest(), 16);
}

/**
 * The logical cluster name of a user's home workspace: stable per user name (kcp derives it from
 * a hash of the user name, `indexrewriters.HomeClusterName`).
 */
export function homeClusterName(user: string): string {
  return base36(createHash('sha224').update(user).digest(), 16);
}

/** The path of a user's home workspace (`user:<name>`, kcp's home path annotation). */
export function homePath(user: string): string {
  return `user:${user}`;
}
