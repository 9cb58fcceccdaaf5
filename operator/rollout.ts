/**
 * The upgrade order of an instance (what `version` changes do), as a pure function of what runs.
 *
 * Order, one component at a time, each gated on readiness on the new version:
 *   1. the canary shards (`spec.upgrade.canaryShards`; default the first Shard by name, or the
 *      root shard when the instance has no other shard),
 *   2. the other shards, by name,
 *   3. the root shard,
 *   4. the front-proxy.
 * Why: a shard affects only the workspaces scheduled on it, so a bad version shows on a canary
 * with the least harm; the root shard holds what every shard and the front-proxy read (the root
 * workspace, WorkspaceTypes, Shard objects), so it moves only once the version has served
 * elsewhere; the front-proxy goes last because it routes to shards of both versions during the
 * rollout and reads only Shard and LogicalCluster fields every version serves.
 *
 * A component whose Deployment reports `ProgressDeadlineExceeded` on the new version (its
 * `progressDeadlineSeconds` is the instance's `spec.upgrade.progressDeadlineSeconds`) is set back
 * to the version it ran before (with `autoRollback`), and the rollout stops there: the others keep
 * their version until `spec.version` names another one. Pinned shards keep their pinned version.
 * New components (no Deployment yet) start at the target version without gating.
 */

/** What runs of one component now. */
export interface ComponentState {
  /** `shard:<name>` (`shard:root` for the root shard) or `front-proxy`. */
  name: string;
  /** A pinned version (Shard `spec.version`): never moved by a rollout. */
  pinned?: string;
  /** Version its Deployment's pod template runs; undefined when there is no Deployment yet. */
  version?: string;
  /** Its Deployment is fully rolled out and available on `version`. */
  ready: boolean;
  /** Its Deployment gave up on `version` (ProgressDeadlineExceeded). */
  failed: boolean;
}

/** The decision of {@link planRollout}. */
export interface RolloutPlan {
  /** The version each component should run now. */
  versions: Map<string, string>;
  /** `Complete`: every unpinned component runs the target and is ready; `Progressing`; `RolledBack`. */
  phase: 'Complete' | 'Progressing' | 'RolledBack';
  /** What is happening, for conditions. */
  message: string;
  /** A version given up on in this decision or before (`failedVersion` to keep in status). */
  failedVersion?: string;
}

/** Inputs of {@link planRollout} besides the components. */
export interface RolloutInput {
  /** `spec.version`. */
  target: string;
  /** The version everything ran before this rollout (`status.currentVersion`). */
  previous?: string;
  /** A version rolled back earlier (`status.failedVersion`): not tried again. */
  failedVersion?: string;
  /** Set a failed component back (`spec.upgrade.autoRollback`, default true). */
  autoRollback: boolean;
  /** Component names in upgrade order (see the module comment; {@link upgradeOrder}). */
  order: string[];
}

/** The upgrade order of an instance's components (see the module comment). */
export function upgradeOrder(shardNames: string[], canaryShards: string[] | undefined): string[] {
  const others = [...shardNames].filter((n) => n !== 'root').sort();
  const canaries = (canaryShards && canaryShards.length > 0 ? canaryShards : [others[0] ?? 'root']).filter((c) => c === 'root' || others.includes(c));
  const rest = others.filter((n) => !canaries.includes(n));
  const shards = [...canaries, ...rest, ...(canaries.includes('root') ? [] : ['root'])];
  return [...shards.map((s) => `shard:${s}`), 'front-proxy'];
}

/** Decides which version each component runs now (see the module comment). */
export function planRollout(input: RolloutInput, components: ComponentState[]): RolloutPlan {
  const byName = new Map(components.map((c) => [c.name, c]));
  const versions = new Map<string, string>();
  for (const c of components) versions.set(c.name, c.pinned ?? c.version ?? input.target);
  if (input.failedVersion !== undefined && input.failedVersion === input.target) {
    return { versions, phase: 'RolledBack', failedVersion: input.failedVersion, message: `version ${input.target} was rolled back; set another version to roll out` };
  }
  for (const name of input.order) {
    const c = byName.get(name);
    if (!c || c.pinned !== undefined || c.version === undefined) continue;
    if (c.version !== input.target) {
      versions.set(name, input.target);
      return { versions, phase: 'Progressing', message: `upgrading ${name} from ${c.version} to ${input.target}` };
    }
    if (c.ready) continue;
    if (c.failed && input.autoRollback && input.previous !== undefined && input.previous !== input.target) {
      versions.set(name, input.previous);
      return { versions, phase: 'RolledBack', failedVersion: input.target, message: `${name} did not become ready on ${input.target} within the progress deadline; rolled back to ${input.previous}` };
    }
    return { versions, phase: 'Progressing', message: c.failed ? `${name} did not become ready on ${input.target} within the progress deadline` : `waiting for ${name} to become ready on ${input.target}` };
  }
  const waiting = components.find((c) => c.pinned === undefined && c.version === undefined);
  if (waiting) return { versions, phase: 'Progressing', message: `creating ${waiting.name}` };
  return { versions, phase: 'Complete', message: `every component runs ${input.target}` };
}
