/**
 * Workspace lifecycle (kcp pkg/reconciler/tenancy/workspace: metadata, deletion, scheduling and
 * phase reconcilers), level-triggered on the BullMQ runtime. Keys are `<parent cluster>|<name>`.
 *
 * - scheduling: a LogicalCluster on this shard named from the workspace's uid (type, path,
 *   owner, required groups, initializers and terminators of the type and the types it extends,
 *   `spec.owner` pointing back), created already initialized: the logical cluster controller's
 *   `prepare` (workspace-admin binding, built-in initializers) runs first, so the LogicalCluster
 *   is born `Ready` (or `Initializing` when other controllers' initializers remain); then one write
 *   records the `core.kcp.io/logicalcluster` finalizer, the cluster/shard annotations,
 *   `spec.cluster`, `spec.URL` (the shard's external URL + `/clusters/<path>`) and the phase it
 *   reached (`Initializing` while initializers remain, else `Ready`). kcp writes the annotation,
 *   the spec and the phase separately; the uid-derived name makes one write enough, and a
 *   LogicalCluster whose Workspace disappears before that write is deleted by its controller;
 * - phase: `Initializing` → `Ready` once the LogicalCluster is `Ready` (initializers mirrored);
 * - deletion: the LogicalCluster is deleted (it deletes its content, including child
 *   workspaces); when it is gone the finalizer is removed and the Workspace goes.
 */
import { isStatus } from '../../apimachinery/errors.js';
import { nowRFC3339, type KubeObject } from '../../apimachinery/meta.js';
import { Store, type RequestScope, type TransactionItem } from '../../registry/store.js';
import { OWNER_ANNOTATION } from '../../tenancy/admission.js';
import { REQUIRED_GROUPS_ANNOTATION, TYPE_ANNOTATION, type LogicalClusterIndex } from '../../tenancy/index.js';
import { PATH_ANNOTATION, clusterNameFor, joinPath, randomClusterName } from '../../tenancy/paths.js';
import type { WorkspaceTypeResolver } from '../../tenancy/workspacetypes.js';
import { DELETION_FINALIZER } from '../logicalcluster/controller.js';
import { splitKey } from '../namespace/controller.js';
import { getIfExists, type ReconcileResult } from '../runtime.js';
import { labelSelectorFromMetav1, matchesLabels, type LabelSelectorV1 } from '../../apimachinery/labels.js';
import type { RestClient } from '../../client/rest.js';
import type { ClusterLocation, ShardInfo } from '../../shards/directory.js';

/** Finalizer of a Workspace until its logical cluster is gone (kcp `LogicalClusterFinalizerName`). */
export const WORKSPACE_FINALIZER = 'core.kcp.io/logicalcluster';
/** Annotation with the shard a workspace is scheduled to (kcp `LogicalClusterShardAnnotationKey`). */
export const SHARD_ANNOTATION = 'core.kcp.io/shard';
/** Annotation with the logical cluster name chosen for a workspace (kcp). */
export const CLUSTER_ANNOTATION_KEY = 'internal.tenancy.kcp.io/cluster';
/** Label mirroring the phase (kcp `WorkspacePhaseLabel`). */
export const PHASE_LABEL = 'tenancy.kcp.io/phase';

/** Dependencies of the reconciler. */
export interface WorkspaceReconcilerDeps {
  workspaces: Store;
  logicalClusters: Store;
  index: LogicalClusterIndex;
  types: WorkspaceTypeResolver;
  /** This shard's name and the URL clients reach it at (`https://host:port`). */
  shardName: string;
  externalURL(): string;
  scope(cluster: string): RequestScope;
  /**
   * Runs the logical cluster controller's initialization on a LogicalCluster just created
   * (see LogicalClusterReconciler.initialize); returns its resulting status.
   */
  initializeLogicalCluster(cluster: string, lc: KubeObject): Promise<{ phase?: string; initializers?: string[] } | undefined>;
  /**
   * For a LogicalCluster about to be created: its status and initial content (see
   * LogicalClusterReconciler.prepare).
   */
  prepareLogicalCluster(cluster: string, lc: KubeObject): { status: { phase?: string; initializers?: string[]; URL?: string }; content: TransactionItem[] };
  /** Draws a logical cluster name (injectable for tests). */
  newClusterName?: () => string;
  /** The instance's other shards; without it every workspace is scheduled onto this shard. */
  shards?: ShardPlacement;
  /** Picks one of `n` candidate shards (default random, as kcp; injectable for tests). */
  pick?: (n: number) => number;
}

/**
 * What scheduling across shards needs to know of the instance (a ShardDirectory provides it):
 * the shards with their labels and URLs, a client for each, and where logical clusters of other
 * shards are and in which phase.
 */
export interface ShardPlacement {
  /** Every shard of the instance, this one included once it registered. */
  list(): ShardInfo[];
  get(name: string): ShardInfo | undefined;
  /** Whether the shard's watches are connected (always true for this shard). */
  reachable(name: string): boolean;
  /** Client for another shard's base URL with the shard credentials (undefined for unknown shards). */
  client(name: string): RestClient | undefined;
  /** A logical cluster held by another shard, as last seen. */
  locate(cluster: string): ClusterLocation | undefined;
}

/** Path of a logical cluster's LogicalCluster object on a shard. */
function logicalClusterPath(cluster: string): string {
  return `/clusters/${cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`;
}

interface WSSpec { cluster?: string; URL?: string; type?: { name: string; path?: string }; mount?: unknown; location?: { selector?: LabelSelectorV1 } }
interface WSStatus { phase?: string; initializers?: string[]; terminators?: string[]; conditions?: Condition[] }
interface Condition { type: string; status: string; lastTransitionTime?: string; reason?: string; message?: string; severity?: string }

function setCondition(status: WSStatus, type: string, value: 'True' | 'False', reason?: string, message?: string): void {
  const conds = (status.conditions ??= []);
  const i = conds.findIndex((c) => c.type === type);
  const prev = i >= 0 ? conds[i] : undefined;
  if (prev && prev.status === value && prev.reason === reason && prev.message === message) return;
  const c: Condition = { type, status: value, lastTransitionTime: prev?.status === value ? prev.lastTransitionTime : nowRFC3339() };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  if (value === 'False') c.severity = 'Info';
  if (i >= 0) conds[i] = c; else conds.push(c);
}

function withPhase(ws: KubeObject, status: WSStatus): KubeObject {
  const labels = { ...ws.metadata.labels };
  if (status.phase) labels[PHASE_LABEL] = status.phase;
  return { ...ws, metadata: { ...ws.metadata, labels }, status };
}

async function write(store: Store, scope: RequestScope, obj: KubeObject): Promise<ReconcileResult | void> {
  try {
    await store.update({ ...scope, withStatus: true }, obj.metadata.name!, obj);
  } catch (err) {
    if (isStatus(err, 409)) return { requeueAfterMs: 0 };
    if (isStatus(err, 404)) return;
    throw err;
  }
}

/** Reconciles one Workspace. */
export function workspaceReconciler(deps: WorkspaceReconcilerDeps) {
  const newName = deps.newClusterName ?? randomClusterName;
  return async (key: string): Promise<ReconcileResult | void> => {
    const [cluster, name] = splitKey(key);
    const scope = deps.scope(cluster);
    const ws = await getIfExists(deps.workspaces, scope, name);
    if (!ws) return;
    const spec = (ws.spec ?? {}) as WSSpec;
    const status: WSStatus = { ...(ws.status as WSStatus | undefined) };
    if (spec.mount) return;

    if (ws.metadata.deletionTimestamp) {
      if (!ws.metadata.finalizers?.includes(WORKSPACE_FINALIZER)) return;
      const shard = ws.metadata.annotations?.[SHARD_ANNOTATION];
      if (shard && shard !== deps.shardName && deps.shards) return deleteRemote(deps, scope, ws, spec, status, shard);
      const target = spec.cluster ?? ws.metadata.annotations?.[CLUSTER_ANNOTATION_KEY];
      const lc = target ? await getIfExists(deps.logicalClusters, deps.scope(target), 'cluster') : undefined;
      if (lc && (lc.spec as { owner?: { uid?: string } } | undefined)?.owner?.uid === ws.metadata.uid) {
        if (!lc.metadata.deletionTimestamp) await deps.logicalClusters.delete(deps.scope(target!), 'cluster').catch(ignoreNotFound);
        if (status.phase !== 'Deleting') {
          status.phase = 'Deleting';
          return write(deps.workspaces, scope, withPhase(ws, status));
        }
        return; // the LogicalCluster's deletion requeues this key
      }
      const finalizers = ws.metadata.finalizers.filter((f) => f !== WORKSPACE_FINALIZER);
      return write(deps.workspaces, scope, { ...ws, metadata: { ...ws.metadata, finalizers } });
    }

    if (!spec.cluster) return schedule(deps, newName, cluster, ws, spec, status);

    // Phase: follow the LogicalCluster, here or (as replicated) on its shard.
    const lc = await getIfExists(deps.logicalClusters, deps.scope(spec.cluster), 'cluster');
    const remote = lc ? undefined : deps.shards?.locate(spec.cluster);
    if (!lc && !remote) return;
    const lcStatus = (lc ? lc.status ?? {} : { phase: remote!.phase, initializers: remote!.initializers }) as WSStatus;
    const next: WSStatus = { ...status, initializers: lcStatus.initializers ?? [] };
    if ((status.phase === 'Initializing' || status.phase === 'Scheduling' || !status.phase) && lcStatus.phase === 'Ready') {
      next.phase = 'Ready';
      setCondition(next, 'WorkspaceInitialized', 'True');
    } else if (status.phase !== 'Ready' && next.initializers!.length) {
      setCondition(next, 'WorkspaceInitialized', 'False', 'InitializerExists', `Initializers still exist: [${next.initializers!.join(' ')}]`);
    }
    if (JSON.stringify(next) === JSON.stringify(status)) return;
    return write(deps.workspaces, scope, withPhase(ws, next));
  };
}

function ignoreNotFound(err: unknown): void {
  if (!isStatus(err, 404)) throw err;
}

async function schedule(deps: WorkspaceReconcilerDeps, newName: () => string, parent: string, ws: KubeObject, spec: WSSpec, status: WSStatus): Promise<ReconcileResult | void> {
  const parentInfo = deps.index.get(parent);
  if (!parentInfo) return { requeueAfterMs: 1000 }; // wait for the parent LogicalCluster
  const path = joinPath(parentInfo.path || parent, ws.metadata.name!);
  const typeRef = spec.type ?? { name: 'universal', path: 'root' };
  const annotations = ws.metadata.annotations ?? {};
  const clusterName = annotations[CLUSTER_ANNOTATION_KEY] ?? clusterNameFor(ws.metadata.uid!);
  let target = annotations[SHARD_ANNOTATION];
  if (!target) {
    const chosen = chooseShard(deps, spec);
    if (typeof chosen !== 'string') {
      setCondition(status, 'WorkspaceScheduled', 'False', 'Unschedulable', chosen.error);
      await write(deps.workspaces, deps.scope(parent), withPhase(ws, { ...status, phase: 'Scheduling' }));
      return { requeueAfterMs: 5_000 };
    }
    if (chosen !== deps.shardName) {
      // kcp records the shard and the logical cluster name first: from then on deletion knows
      // where to look, whatever happens to the creation on the other shard.
      return write(deps.workspaces, deps.scope(parent), withPhase({ ...ws, metadata: { ...ws.metadata, annotations: { ...annotations, [CLUSTER_ANNOTATION_KEY]: clusterName, [SHARD_ANNOTATION]: chosen } } }, { ...status, phase: 'Scheduling' }));
    }
    target = chosen;
  }
  if (target !== deps.shardName) return scheduleRemote(deps, newName, parent, parentInfo.path || parent, path, ws, spec, status, typeRef, clusterName, target);
  let lc = await getIfExists(deps.logicalClusters, deps.scope(clusterName), 'cluster');
  if (lc && (lc.spec as { owner?: { uid?: string } } | undefined)?.owner?.uid !== ws.metadata.uid) {
    // Name taken by another logical cluster: record a random one before using it.
    return write(deps.workspaces, deps.scope(parent), { ...ws, metadata: { ...ws.metadata, annotations: { ...annotations, [CLUSTER_ANNOTATION_KEY]: newName() } } });
  }
  if (!lc) {
    const built = await newLogicalCluster(deps, parent, parentInfo.path || parent, path, ws, status, typeRef);
    if ('requeueAfterMs' in built) return built;
    const newLc = built.lc;
    // The LogicalCluster in its initialized state (Ready, or Initializing for other controllers'
    // initializers), its initial content — the owner's binding, the built-in initializers'
    // objects — and the Workspace pointing at it, in one atomic transaction.
    const { status: lcStatus0, content } = deps.prepareLogicalCluster(clusterName, newLc);
    newLc.status = lcStatus0;
    try {
      await Store.commit([
        ...content,
        { store: deps.logicalClusters, scope: { ...deps.scope(clusterName), withStatus: true }, create: newLc },
        { store: deps.workspaces, scope: { ...deps.scope(parent), withStatus: true }, update: scheduled(here(deps), ws, spec, status, typeRef, clusterName, path, lcStatus0) },
      ]);
    } catch (err) {
      // The LogicalCluster was created or the Workspace changed concurrently: look again.
      if (isStatus(err, 409)) return { requeueAfterMs: 0 };
      if (isStatus(err, 404)) return;
      throw err;
    }
    return;
  }
  let lcStatus = (lc.status ?? {}) as WSStatus;
  if (!lcStatus.phase || lcStatus.phase === 'Scheduling') {
    // Initialize it now rather than through the logical cluster controller's queue.
    const st = await deps.initializeLogicalCluster(clusterName, lc);
    if (!st) return { requeueAfterMs: 100 };
    lcStatus = st;
    if (!lcStatus.phase || lcStatus.phase === 'Scheduling') return { requeueAfterMs: 100 };
  }
  return write(deps.workspaces, deps.scope(parent), scheduled(here(deps), ws, spec, status, typeRef, clusterName, path, lcStatus));
}

/**
 * The Workspace scheduled onto its logical cluster, in one write: finalizer, annotations,
 * spec.cluster/URL and the phase the LogicalCluster reached.
 */
function scheduled(where: { shard: string; externalURL: string }, ws: KubeObject, spec: WSSpec, status: WSStatus, typeRef: NonNullable<WSSpec['type']>, clusterName: string, path: string, lcStatus: WSStatus): KubeObject {
  const annotations = ws.metadata.annotations ?? {};
  const next: KubeObject = {
    ...ws,
    metadata: {
      ...ws.metadata,
      annotations: { ...annotations, [CLUSTER_ANNOTATION_KEY]: clusterName, [SHARD_ANNOTATION]: where.shard },
      finalizers: [...(ws.metadata.finalizers ?? []).filter((f) => f !== WORKSPACE_FINALIZER), WORKSPACE_FINALIZER],
    },
    spec: { ...spec, type: typeRef, cluster: clusterName, URL: `${where.externalURL}/clusters/${path}` },
  };
  const st: WSStatus = { ...status, phase: lcStatus.phase === 'Ready' ? 'Ready' : 'Initializing', initializers: lcStatus.initializers ?? [] };
  setCondition(st, 'WorkspaceScheduled', 'True');
  if (st.phase === 'Ready') setCondition(st, 'WorkspaceInitialized', 'True');
  else setCondition(st, 'WorkspaceInitialized', 'False', 'InitializerExists', `Initializers still exist: [${st.initializers!.join(' ')}]`);
  return withPhase(next, st);
}

function here(deps: WorkspaceReconcilerDeps): { shard: string; externalURL: string } {
  return { shard: deps.shardName, externalURL: deps.externalURL() };
}

/**
 * The shard a new workspace goes to: among the instance's shards whose labels match
 * `spec.location.selector` (all without one) and not unschedulable, preferring reachable ones, one at random (kcp's
 * scheduler picks at random too, which spreads workspaces evenly). Without other shards known,
 * this one. Returns kcp's message when no shard matches.
 */
function chooseShard(deps: WorkspaceReconcilerDeps, spec: WSSpec): string | { error: string } {
  const all = deps.shards?.list() ?? [];
  const selector = spec.location?.selector;
  if (!all.length) return selector ? { error: 'No available shards to schedule the workspace' } : deps.shardName;
  // Shards annotated kcp.io/unschedulable take no new workspace (kcp's random scheduler skips them).
  let candidates = all.filter((s) => !s.unschedulable);
  if (selector) {
    let parsed;
    try { parsed = labelSelectorFromMetav1(selector); } catch (err) { return { error: `invalid location selector: ${(err as Error).message}` }; }
    candidates = all.filter((s) => matchesLabels(parsed, s.labels));
  }
  if (!candidates.length) return { error: 'No available shards to schedule the workspace' };
  const reachable = candidates.filter((s) => deps.shards!.reachable(s.name));
  const from = reachable.length ? reachable : candidates;
  const i = (deps.pick ?? ((n: number) => Math.floor(Math.random() * n)))(from.length);
  return from[Math.min(Math.max(i, 0), from.length - 1)].name;
}

/**
 * The LogicalCluster of a new workspace: type, shard and path annotations, the owner's identity,
 * `spec.owner` pointing back, the initializers and terminators of the type and the types it
 * extends. When the type does not resolve, records `WorkspaceScheduled=False` and asks for a retry.
 */
async function newLogicalCluster(deps: WorkspaceReconcilerDeps, parent: string, parentPath: string, path: string, ws: KubeObject, status: WSStatus, typeRef: NonNullable<WSSpec['type']>, shard = deps.shardName): Promise<{ lc: KubeObject } | ReconcileResult & { requeueAfterMs: number }> {
  const annotations = ws.metadata.annotations ?? {};
  let initializers: string[];
  let terminators: string[];
  try {
    const t = deps.types.resolve(parentPath, typeRef);
    initializers = deps.types.initializers(t);
    terminators = deps.types.terminators(t);
  } catch (err) {
    setCondition(status, 'WorkspaceScheduled', 'False', 'Unschedulable', (err as Error).message);
    await write(deps.workspaces, deps.scope(parent), withPhase(ws, status));
    return { requeueAfterMs: 10_000 };
  }
  const lcAnnotations: Record<string, string> = {
    [TYPE_ANNOTATION]: joinPath(typeRef.path ?? 'root', typeRef.name),
    [SHARD_ANNOTATION]: shard,
    [PATH_ANNOTATION]: path,
  };
  const owner = annotations[OWNER_ANNOTATION];
  if (owner) lcAnnotations[OWNER_ANNOTATION] = owner;
  if (annotations[REQUIRED_GROUPS_ANNOTATION] !== undefined) lcAnnotations[REQUIRED_GROUPS_ANNOTATION] = annotations[REQUIRED_GROUPS_ANNOTATION];
  const lcSpec: Record<string, unknown> = {
    owner: { apiVersion: 'tenancy.kcp.io/v1alpha1', resource: 'workspaces', name: ws.metadata.name, cluster: parent, uid: ws.metadata.uid },
  };
  if (initializers.length) lcSpec.initializers = initializers;
  if (terminators.length) lcSpec.terminators = terminators;
  if (owner) {
    // The annotation is an authentication.k8s.io UserInfo, the shape of spec.createdBy (the
    // schema prunes anything else).
    try {
      const u: unknown = JSON.parse(owner);
      if (u && typeof u === 'object' && !Array.isArray(u)) lcSpec.createdBy = u;
    } catch { /* an unreadable owner annotation only loses createdBy */ }
  }
  return {
    lc: {
      apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster',
      metadata: { name: 'cluster', annotations: lcAnnotations, finalizers: [DELETION_FINALIZER] }, spec: lcSpec,
    },
  };
}

/** Records why the workspace waits for its shard (phase stays `Scheduling`) and asks for a retry in a second. */
async function waitForShard(deps: WorkspaceReconcilerDeps, parent: string, ws: KubeObject, status: WSStatus, shard: string, why: string): Promise<ReconcileResult> {
  const next: WSStatus = { ...status, phase: status.phase ?? 'Scheduling' };
  setCondition(next, 'WorkspaceScheduled', 'False', 'ShardUnavailable', `shard "${shard}" is unavailable: ${why}`);
  if (JSON.stringify(next) !== JSON.stringify(ws.status ?? {})) await write(deps.workspaces, deps.scope(parent), withPhase(ws, next));
  return { requeueAfterMs: 1000 };
}

/**
 * Scheduling onto another shard (kcp does the same through its shard-admin client): the
 * LogicalCluster is created there over HTTPS — that shard's logical cluster controller then
 * initializes it (owner's binding, built-in initializers) — and once it reached `Initializing` or
 * `Ready` the Workspace gets spec.cluster, spec.URL (the shard's external URL) and the phase.
 * Until the shard answers, the Workspace stays `Scheduling` with `WorkspaceScheduled=False`
 * saying why; the retry completes it when the shard is back.
 */
async function scheduleRemote(deps: WorkspaceReconcilerDeps, newName: () => string, parent: string, parentPath: string, path: string, ws: KubeObject, spec: WSSpec, status: WSStatus, typeRef: NonNullable<WSSpec['type']>, clusterName: string, shard: string): Promise<ReconcileResult | void> {
  const info = deps.shards?.get(shard);
  const client = deps.shards?.client(shard);
  if (!info || !client) return waitForShard(deps, parent, ws, status, shard, 'not known to this shard');
  // Created first (that shard creates it initialized, with its content, in one transaction);
  // read only when it exists already (a retry, or the name is taken).
  let lc: KubeObject;
  try {
    const built = await newLogicalCluster(deps, parent, parentPath, path, ws, status, typeRef, shard);
    if ('requeueAfterMs' in built) return built;
    const created = await client.request('POST', `/clusters/${clusterName}/apis/core.kcp.io/v1alpha1/logicalclusters`, built.lc, { timeoutMs: 5000 });
    if (created.status === 201) lc = created.json as KubeObject;
    else if (created.status === 409) {
      const got = await client.request('GET', logicalClusterPath(clusterName), undefined, { timeoutMs: 5000 });
      if (got.status === 404) return { requeueAfterMs: 0 };
      if (got.status !== 200) return waitForShard(deps, parent, ws, status, shard, `${got.status} ${got.json?.message ?? ''}`.trim());
      lc = got.json as KubeObject;
    } else return waitForShard(deps, parent, ws, status, shard, `${created.status} ${created.json?.message ?? ''}`.trim());
  } catch (err) {
    return waitForShard(deps, parent, ws, status, shard, (err as Error).message);
  }
  if ((lc.spec as { owner?: { uid?: string } } | undefined)?.owner?.uid !== ws.metadata.uid) {
    // Name taken by another logical cluster: record a random one before using it.
    return write(deps.workspaces, deps.scope(parent), { ...ws, metadata: { ...ws.metadata, annotations: { ...ws.metadata.annotations, [CLUSTER_ANNOTATION_KEY]: newName() } } });
  }
  const lcStatus = (lc.status ?? {}) as WSStatus;
  // That shard's controller initializes it; its watch event (directory) wakes this key again.
  if (!lcStatus.phase || lcStatus.phase === 'Scheduling') return { requeueAfterMs: 2000 };
  return write(deps.workspaces, deps.scope(parent), scheduled({ shard, externalURL: info.externalURL }, ws, spec, status, typeRef, clusterName, path, lcStatus));
}

/**
 * Deletion of a workspace whose logical cluster is on another shard: the LogicalCluster there is
 * deleted (if it is still this workspace's), and once it is gone the finalizer is removed. While
 * the shard cannot be reached the workspace stays `Deleting` and the key is retried.
 */
async function deleteRemote(deps: WorkspaceReconcilerDeps, scope: RequestScope, ws: KubeObject, spec: WSSpec, status: WSStatus, shard: string): Promise<ReconcileResult | void> {
  const target = spec.cluster ?? ws.metadata.annotations?.[CLUSTER_ANNOTATION_KEY];
  const client = deps.shards?.client(shard);
  if (target) {
    if (!client) return { requeueAfterMs: 1000 };
    try {
      const got = await client.request('GET', logicalClusterPath(target), undefined, { timeoutMs: 5000 });
      if (got.status === 200 && (got.json?.spec as { owner?: { uid?: string } } | undefined)?.owner?.uid === ws.metadata.uid) {
        if (!got.json.metadata?.deletionTimestamp) {
          const del = await client.request('DELETE', logicalClusterPath(target), undefined, { timeoutMs: 5000 });
          if (del.status >= 300 && del.status !== 404 && del.status !== 409) return { requeueAfterMs: 1000 };
        }
        if (status.phase !== 'Deleting') return write(deps.workspaces, scope, withPhase(ws, { ...status, phase: 'Deleting' }));
        return { requeueAfterMs: 2000 }; // its deletion event (directory) wakes this key sooner
      }
      if (got.status !== 200 && got.status !== 404 && got.status !== 403) return { requeueAfterMs: 1000 };
    } catch {
      return { requeueAfterMs: 1000 };
    }
  }
  const finalizers = (ws.metadata.finalizers ?? []).filter((f) => f !== WORKSPACE_FINALIZER);
  return write(deps.workspaces, scope, { ...ws, metadata: { ...ws.metadata, finalizers } });
}
