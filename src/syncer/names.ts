/**
 * The names the syncer gives things downstream, as kcp's (github kcp-dev/contrib-tmc
 * pkg/syncer/shared namespace.go and helpers.go, pkg/cliplugins/workload/plugin sync.go): the
 * namespace locator and the downstream namespace it names, the tenant id, and the syncer id of
 * `kubectl kcp workload sync`.
 */
import { createHash } from 'node:crypto';

/** Annotation of a downstream namespace (and cluster-scoped object): its {@link NamespaceLocator} as JSON. */
export const NAMESPACE_LOCATOR_ANNOTATION = 'kcp.io/namespace-locator';
/** Label of a downstream namespace: the {@link tenantID} of its workspace and SyncTarget. */
export const TENANT_ID_LABEL = 'kcp.io/tenant-id';
/** Label of every downstream object the syncer made: the SyncTarget key (contrib-tmc `InternalDownstreamClusterLabel`). */
export const DOWNSTREAM_CLUSTER_LABEL = 'internal.workload.kcp.io/cluster';
/** Field manager of the syncer's server-side applies downstream (contrib-tmc spec_process.go `syncerApplyManager`). */
export const SYNCER_FIELD_MANAGER = 'syncer';

/** Where a downstream namespace comes from (contrib-tmc `NamespaceLocator`); the key order is the JSON's. */
export interface NamespaceLocator {
  syncTarget: { cluster?: string; name: string; uid: string };
  /** Logical cluster of the upstream namespace (omitted when empty). */
  cluster?: string;
  namespace: string;
}

/**
 * kcp's `NewNamespaceLocator`: the locator of upstream namespace `namespace` in logical cluster
 * `workspace` for SyncTarget `name` (uid `uid`) of logical cluster `syncTargetCluster`.
 */
export function namespaceLocator(workspace: string, syncTargetCluster: string, uid: string, name: string, namespace: string): NamespaceLocator {
  const syncTarget: NamespaceLocator['syncTarget'] = syncTargetCluster ? { cluster: syncTargetCluster, name, uid } : { name, uid };
  const out = { syncTarget } as NamespaceLocator;
  if (workspace) out.cluster = workspace;
  out.namespace = namespace;
  return out;
}

/** A locator as Go's `json.Marshal` writes it (field order, omitempty), the input of the hashes below. */
export function locatorJSON(l: NamespaceLocator): string {
  const st: Record<string, string> = {};
  if (l.syncTarget.cluster) st.cluster = l.syncTarget.cluster;
  st.name = l.syncTarget.name;
  st.uid = l.syncTarget.uid;
  const out: Record<string, unknown> = { syncTarget: st };
  if (l.cluster) out.cluster = l.cluster;
  out.namespace = l.namespace;
  return JSON.stringify(out);
}

/**
 * A locator read from a downstream object's annotations (kcp `LocatorFromAnnotations`, v0.6.0's
 * `syncTarget.path` read as the cluster); undefined when absent or not a locator.
 */
export function locatorFromAnnotations(annotations: Record<string, string> | undefined): NamespaceLocator | undefined {
  const raw = annotations?.[NAMESPACE_LOCATOR_ANNOTATION];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as { syncTarget?: { cluster?: string; path?: string; name?: string; uid?: string }; cluster?: string; namespace?: string };
    if (!v || typeof v !== 'object' || !v.syncTarget || typeof v.syncTarget !== 'object') return undefined;
    return namespaceLocator(String(v.cluster ?? ''), String(v.syncTarget.cluster || v.syncTarget.path || ''), String(v.syncTarget.uid ?? ''), String(v.syncTarget.name ?? ''), String(v.namespace ?? ''));
  } catch { return undefined; }
}

const BASE36 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const BASE62 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Bytes as github.com/martinlindhe/base36 `EncodeBytes` writes them: big-endian number in base 36, upper case, a `0` per leading zero byte. */
export function base36EncodeBytes(b: Uint8Array): string {
  let n = 0n;
  for (const x of b) n = (n << 8n) | BigInt(x);
  let out = '';
  while (n > 0n) { out = BASE36[Number(n % 36n)] + out; n /= 36n; }
  for (const x of b) { if (x !== 0) break; out = `0${out}`; }
  return out;
}

const sha224 = (s: string): Buffer => createHash('sha224').update(s).digest();

/**
 * The downstream namespace of a locator (kcp `PhysicalClusterNamespaceName`): `kcp-` and the first
 * 12 characters of the lower-cased base 36 SHA-224 of the locator's JSON.
 */
export function physicalClusterNamespaceName(l: NamespaceLocator): string {
  return `kcp-${base36EncodeBytes(sha224(locatorJSON(l))).toLowerCase().slice(0, 12)}`;
}

/**
 * The tenant of a locator (kcp `GetTenantID`): base 62 (Go `big.Int.Text(62)`) SHA-224 of the
 * locator without its namespace; the same for every namespace of one workspace and SyncTarget.
 */
export function tenantID(l: NamespaceLocator): string {
  const clusterWide = namespaceLocator(l.cluster ?? '', l.syncTarget.cluster ?? '', l.syncTarget.uid, l.syncTarget.name, '');
  let n = BigInt(`0x${sha224(locatorJSON(clusterWide)).toString('hex')}`);
  if (n === 0n) return '0';
  let out = '';
  while (n > 0n) { out = BASE62[Number(n % 62n)] + out; n /= 62n; }
  return out;
}

/**
 * The syncer's id (kcp sync.go `getSyncerID`): `kcp-syncer-<synctarget name>-<8 base 36 characters
 * of the SHA-224 of its uid>`; names its service account, ClusterRole and binding upstream and its
 * namespace, service account and Deployment downstream.
 */
export function syncerID(syncTargetName: string, syncTargetUID: string): string {
  return `kcp-syncer-${syncTargetName}-${base36EncodeBytes(sha224(syncTargetUID)).toLowerCase().slice(0, 8)}`;
}
