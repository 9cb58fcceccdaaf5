/**
 * Admission of Workspaces, as kcp's `tenancy.kcp.io/Workspace` and `WorkspaceTypeExists`
 * admission plugins (kcp pkg/admission/workspace, pkg/admission/workspacetypeexists):
 *
 * On create —
 * - `spec.cluster` and `spec.URL` may only be set by system:masters;
 * - the creator is recorded in the `experimental.tenancy.kcp.io/owner` annotation (JSON of an
 *   `authentication.k8s.io/v1` UserInfo) and the parent's required groups are copied;
 * - a missing `spec.type` defaults to the parent type's `defaultChildWorkspaceType`; the type is
 *   resolved (along the path when no path is given) and `spec.type.path` filled in;
 * - the creator needs verb `use` on the WorkspaceType in its workspace;
 * - the parent type's `limitAllowedChildren` and the child type's `limitAllowedParents` hold;
 * - the type's `additionalWorkspaceLabels` are added.
 * On update — `spec.cluster` / `spec.URL` change only by system:masters, `spec.type` is
 * immutable, phase `Ready` needs `spec.cluster` and `spec.URL`.
 *
 * Every refusal is a 403 Forbidden `workspaces.tenancy.kcp.io "<name>" is forbidden: <why>`.
 */
import { StatusError } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { AdmissionAttributes } from '../admission/plugins.js';
import type { UserInfo } from '../registry/store.js';
import { SYSTEM_MASTERS } from '../auth/authorizer.js';
import { userInfoJSON } from '../auth/authn.js';
import { REQUIRED_GROUPS_ANNOTATION, type LogicalClusterIndex } from './index.js';
import { ROOT } from './paths.js';
import { checkParentChild, qualifiedName, type WorkspaceTypeResolver, type WorkspaceTypeRef } from './workspacetypes.js';
import { isObj } from '../apimachinery/objects.js';

/** Annotation of a Workspace/LogicalCluster naming its creator (kcp `ExperimentalWorkspaceOwnerAnnotationKey`). */
export const OWNER_ANNOTATION = 'experimental.tenancy.kcp.io/owner';

/** Dependencies of workspace admission. */
export interface WorkspaceAdmissionDeps {
  index: LogicalClusterIndex;
  types: WorkspaceTypeResolver;
  /**
   * Whether `user` may `use` the WorkspaceType `name` in logical cluster `cluster` (asynchronous
   * when that logical cluster is on another shard, which decides). Throws a StatusError (503)
   * when it cannot be decided.
   */
  canUseType(user: UserInfo, cluster: string, name: string): boolean | Promise<boolean>;
}

/** The owner annotation value: `{"username":…,"uid":…,"groups":[…],"extra":{…}}` (empty fields omitted). */
export function ownerAnnotationValue(user: UserInfo): string {
  return JSON.stringify(userInfoJSON(user));
}

function refused(name: string | undefined, why: string): StatusError {
  return new StatusError(403, 'Forbidden', `workspaces.tenancy.kcp.io "${name ?? ''}" is forbidden: ${why}`,
    { name, group: 'tenancy.kcp.io', kind: 'workspaces' });
}


/** Whether the parts admission reads and writes have their schema's types. */
function wellTyped(obj: KubeObject): boolean {
  const m = obj.metadata as unknown as Record<string, unknown>;
  if (m.annotations !== undefined && !isObj(m.annotations)) return false;
  if (m.labels !== undefined && !isObj(m.labels)) return false;
  if (obj.spec === undefined) return true;
  if (!isObj(obj.spec)) return false;
  const t = obj.spec.type;
  return t === undefined || (isObj(t) && (t.name === undefined || typeof t.name === 'string') && (t.path === undefined || typeof t.path === 'string'));
}

interface WorkspaceSpec { cluster?: string; URL?: string; type?: WorkspaceTypeRef; mount?: unknown }

/** Builds the `admit` hook of the Workspace resource. */
export function workspaceAdmission(deps: WorkspaceAdmissionDeps): (obj: KubeObject, attrs: AdmissionAttributes) => Promise<void> {
  return async (obj, attrs) => {
    const privileged = attrs.user.groups.includes(SYSTEM_MASTERS);
    // Wrongly typed input is left to validation (422 with the field path), not mutated or read.
    if (!wellTyped(obj)) return;
    const spec = (obj.spec ??= {}) as WorkspaceSpec;
    const name = obj.metadata.name;
    if (attrs.operation === 'update') {
      const old = (attrs.old!.spec ?? {}) as WorkspaceSpec;
      if (old.cluster && !spec.cluster) throw refused(name, 'spec.cluster cannot be unset');
      if ((old.cluster ?? '') !== (spec.cluster ?? '') && !privileged) throw refused(name, 'spec.cluster can only be changed by system privileged users');
      if ((old.URL ?? '') !== (spec.URL ?? '') && !privileged) throw refused(name, 'spec.URL can only be changed by system privileged users');
      if (old.type && (old.type.name !== spec.type?.name || (old.type.path ?? '') !== (spec.type?.path ?? ''))) throw refused(name, 'spec.type is immutable');
      const phase = (obj.status as { phase?: string } | undefined)?.phase;
      const oldPhase = (attrs.old!.status as { phase?: string } | undefined)?.phase;
      if (phase === 'Ready' && oldPhase !== 'Ready') {
        if (!spec.cluster) throw refused(name, `spec.cluster must be set for phase ${phase}`);
        if (!spec.URL) throw refused(name, `spec.URL must be set for phase ${phase}`);
      }
      return;
    }
    if (spec.cluster && !privileged) throw refused(name, 'spec.Cluster can only be set by system privileged users');
    if (spec.URL && !privileged) throw refused(name, 'spec.URL can only be set by system privileged users');
    const parent = deps.index.get(attrs.cluster);
    if (!parent) throw refused(name, 'workspace type cannot be resolved: the parent logical cluster does not exist');
    const annotations = (obj.metadata.annotations ??= {});
    if (!privileged) annotations[OWNER_ANNOTATION] = ownerAnnotationValue(attrs.user);
    if (!privileged || annotations[REQUIRED_GROUPS_ANNOTATION] === undefined) {
      if (parent.requiredGroups !== undefined) annotations[REQUIRED_GROUPS_ANNOTATION] = parent.requiredGroups;
      else delete annotations[REQUIRED_GROUPS_ANNOTATION];
    }
    if (spec.mount) return;

    const parentPath = parent.path || attrs.cluster;
    // The parent's type, from its LogicalCluster's type annotation (`root:organization`).
    const i = parent.type.lastIndexOf(':');
    if (i <= 0) throw refused(name, 'annotation internal.tenancy.kcp.io/type on LogicalCluster must be in the form of cluster:name');
    const parentType = deps.types.get(parent.type.slice(0, i), parent.type.slice(i + 1));
    if (!parentType) throw refused(name, `parent type cannot be resolved: workspace type ${parent.type} not found`);
    if (!spec.type?.name) {
      const def = parentType.spec.defaultChildWorkspaceType;
      if (!def) throw refused(name, `spec.defaultChildWorkspaceType of workspace type ${parent.type} must be set`);
      spec.type = { name: def.name, path: def.path ?? ROOT };
    }
    let childType;
    try { childType = deps.types.resolve(parentPath, spec.type); } catch (err) {
      throw refused(name, `workspace type cannot be resolved: ${(err as Error).message}`);
    }
    spec.type = { name: childType.name, path: childType.path };

    const typeCluster = deps.index.resolvePath(childType.path) ?? childType.path;
    if (!await deps.canUseType(attrs.user, typeCluster, childType.name)) {
      throw refused(name, `unable to use workspace type ${qualifiedName(childType)}: missing verb='use' permission on workspacetype`);
    }
    let errs: string[];
    try {
      errs = checkParentChild(parent.type, deps.types.aliases(parentType), qualifiedName(childType), deps.types.aliases(childType));
    } catch (err) {
      throw refused(name, (err as Error).message);
    }
    if (errs.length === 1) throw refused(name, errs[0]!);
    if (errs.length > 1) throw refused(name, `[${errs.join(', ')}]`);
    const extra = childType.spec.additionalWorkspaceLabels;
    if (extra && Object.keys(extra).length) {
      const labels = (obj.metadata.labels ??= {});
      for (const [k, v] of Object.entries(extra)) if (!(k in labels)) labels[k] = v;
    }
  };
}

/** Namespaces no delete request may remove (kube's NamespaceLifecycle immortal namespaces). */
export const IMMORTAL_NAMESPACES: ReadonlySet<string> = new Set(['default', 'kube-system', 'kube-public']);

/**
 * The delete admission of Namespaces: kcp's WorkspaceNamespaceLifecycle, i.e. kube's
 * NamespaceLifecycle rule that `default`, `kube-system` and `kube-public` may not be deleted
 * (403 Forbidden `namespaces "default" is forbidden: this namespace may not be deleted`), except
 * while their logical cluster itself is being deleted, when its content goes with it.
 *
 * @param clusterTerminating whether a logical cluster's LogicalCluster has a deletionTimestamp
 */
export function namespaceDeleteAdmission(clusterTerminating: (cluster: string) => boolean): (obj: KubeObject, attrs: { cluster: string }) => void {
  return (obj, attrs) => {
    const name = obj.metadata.name ?? '';
    if (!IMMORTAL_NAMESPACES.has(name) || clusterTerminating(attrs.cluster)) return;
    throw new StatusError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, { name, kind: 'namespaces' });
  };
}
