/**
 * Home workspaces (kcp pkg/server/home_workspaces.go): `GET
 * /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~` returns the caller's home workspace,
 * creating its logical cluster on first use — named from a hash of the user name, path
 * `user:<name>`, type `root:home`, the caller as owner (and so `workspace-admin`). While it
 * initializes the answer is 429 with `Retry-After: 1`, which client-go and kubectl retry.
 * Creating a home needs `create` on `workspaces` named `~` in root (granted to
 * `system:authenticated` by the root bootstrap policy).
 *
 * In an instance of several shards the home goes to the shard {@link homeShardOf} picks — a hash
 * of the user name over the shard names, so that concurrent first requests agree — created there
 * over HTTPS and initialized by that shard; its state is then read from the shard directory.
 */
import { createHash } from 'node:crypto';
import { StatusError, isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store, UserInfo } from '../registry/store.js';
import { OWNER_ANNOTATION, ownerAnnotationValue } from './admission.js';
import { userInfoJSON } from '../auth/authn.js';
import { TYPE_ANNOTATION, type LogicalClusterIndex } from './index.js';
import { PATH_ANNOTATION, ROOT, homeClusterName, homePath } from './paths.js';
import type { WorkspaceTypeResolver } from './workspacetypes.js';

/** Dependencies of the home workspace handler. */
export interface HomeDeps {
  logicalClusters: Store;
  index: LogicalClusterIndex;
  types: WorkspaceTypeResolver;
  /** Whether the user may create its home (`create workspaces/~` in root). */
  mayCreate(user: UserInfo): boolean;
  scope(cluster: string): RequestScope;
  /** The instance's other shards; absent: homes are created on this shard. */
  remote?: RemoteHomes;
}

/** What home workspaces need of the instance's other shards. */
export interface RemoteHomes {
  /** Names of every shard of the instance, this one (`self`) included. */
  shardNames(): string[];
  self: string;
  /** A logical cluster held by another shard, as replicated here. */
  locate(cluster: string): { phase: string; URL?: string; initializers?: string[] } | undefined;
  /** Creates a LogicalCluster on another shard (409 is success). @throws StatusError 503 when the shard cannot be reached */
  create(shard: string, cluster: string, lc: KubeObject): Promise<void>;
}

/**
 * The shard of a user's home among `shards`: the first 32 bits of SHA-224 of the user name modulo
 * the number of shards, over the names sorted — stable while the set of shards is.
 */
export function homeShardOf(user: string, shards: readonly string[]): string {
  const sorted = [...shards].sort();
  return sorted[createHash('sha224').update(user).digest().readUInt32BE(0) % sorted.length]!;
}

/** Builds the `homeWorkspace(user)` handler. */
export function homeWorkspaces(deps: HomeDeps): (user: UserInfo) => Promise<KubeObject> {
  return async (user) => {
    const cluster = homeClusterName(user.name);
    const scope = deps.scope(cluster);
    // The watch cache suffices: a home created a moment ago and not seen yet only makes the
    // create below answer "exists", and the caller retries anyway.
    const lc = deps.logicalClusters.getCached(scope, 'cluster');
    const remote = lc ? undefined : deps.remote?.locate(cluster);
    if (remote) {
      if (remote.phase !== 'Ready') throw creating();
      return homeObject(cluster, lc, { phase: remote.phase, URL: remote.URL, initializers: remote.initializers });
    }
    if (!lc) {
      if (!deps.mayCreate(user)) {
        throw new StatusError(403, 'Forbidden', `workspaces.tenancy.kcp.io "~" is forbidden: User "${user.name}" cannot create resource "workspaces" in API group "tenancy.kcp.io" at the cluster scope: workspace access not permitted`,
          { name: '~', group: 'tenancy.kcp.io', kind: 'workspaces' });
      }
      const homeType = deps.types.get(ROOT, 'home');
      const initializers = homeType ? deps.types.initializers(homeType) : [];
      const home: KubeObject = {
        apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster',
        metadata: { name: 'cluster', annotations: { [OWNER_ANNOTATION]: ownerAnnotationValue(user), [TYPE_ANNOTATION]: 'root:home', [PATH_ANNOTATION]: homePath(user.name) } },
        spec: { createdBy: userInfoJSON(user), ...(initializers.length ? { initializers } : {}) },
      };
      const names = deps.remote?.shardNames() ?? [];
      const shard = names.length > 1 ? homeShardOf(user.name, names) : deps.remote?.self;
      if (deps.remote && shard !== deps.remote.self) {
        await deps.remote.create(shard!, cluster, home);
        throw creating();
      }
      try {
        await deps.logicalClusters.create(scope, home);
      } catch (err) {
        if (!isStatus(err, 409)) throw err;
      }
      throw creating();
    }
    const status = (lc.status ?? {}) as HomeStatus;
    if (status.phase !== 'Ready') throw creating();
    return homeObject(cluster, lc, status);
  };
}

interface HomeStatus { phase?: string; URL?: string; conditions?: unknown[]; initializers?: string[] }

/** The Workspace object answering `workspaces/~`. */
function homeObject(cluster: string, lc: KubeObject | undefined, status: HomeStatus): KubeObject {
  return {
    apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace',
    metadata: { name: 'cluster', ...(lc?.metadata.creationTimestamp ? { creationTimestamp: lc.metadata.creationTimestamp } : {}) },
    spec: { cluster, URL: status.URL, type: { name: 'home', path: ROOT } },
    status: { phase: status.phase, ...(status.conditions ? { conditions: status.conditions } : {}), initializers: status.initializers ?? [] },
  };
}

function creating(): StatusError {
  return new StatusError(429, 'TooManyRequests', 'Creating the home workspace', { retryAfterSeconds: 1 });
}
