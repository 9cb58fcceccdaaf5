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

/** A path segment: a DNS label (logicalcluster `lclusterNameFmt`). */
const SEGMENT = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const PATH = new RegExp(`^${SEGMENT}(:${SEGMENT})*$`);

/**
 * Whether `s` is a valid logical cluster name or workspace path (`root`, `root:org:team`,
 * `system:admin`, `2x5nd3awx0a7ty4j`) or the wildcard `*` — github kcp-dev/logicalcluster
 * `Path.IsValid`: colon-separated DNS labels of at most 63 characters.
 */
export function isValidPath(s: string): boolean {
  return s === '*' || PATH.test(s);
}

/**
 * How a `/clusters/<x>` segment is to be read: a system logical cluster (`system:…`) or a plain
 * logical cluster name (no colon) is used as is, any other valid path is resolved through the
 * workspace index. Home paths (`user:<name>`) are paths; a user name that is not a DNS label
 * makes its home reachable only by logical cluster name, as in kcp.
 */
export function classifyClusterSegment(s: string): 'name' | 'path' | 'invalid' {
  if (s === '*' || !isValidPath(s)) return 'invalid';
  return s.startsWith('system:') || !s.includes(':') ? 'name' : 'path';
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
