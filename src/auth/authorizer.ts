/**
 * Authorization: kcp's chain reduced to what this server has today
 * (kcp docs, "Authorization"): `system:masters` may do anything; a request to a logical cluster
 * that does not exist is refused without telling whether it exists; then the bootstrap policy
 * (RBAC bindings of the `system:admin` logical cluster, which make `system:kcp:admin` a
 * cluster-admin everywhere) and finally the RBAC objects of the target logical cluster
 * (https://kubernetes.io/docs/reference/access-authn-authz/rbac/). ClusterRoles referenced by a
 * binding resolve in the binding's logical cluster first, then in `system:admin`.
 */
import { NO_WORKSPACE_ACCESS } from '../apimachinery/errors.js';
import type { UserInfo } from '../registry/store.js';
import type { WatchCache, CacheEvent } from '../storage/watchcache.js';
import type { LogicalClusterIndex } from '../tenancy/index.js';
import { SERVICE_ACCOUNT_USER_PREFIX, serviceAccountClusterMismatch, serviceAccountUsername } from './serviceaccounts.js';
import { LRUCache } from 'lru-cache';

/** The logical cluster that holds kcp's bootstrap policy. */
export const SYSTEM_ADMIN_CLUSTER = 'system:admin';
/** Group that bypasses authorization. */
export const SYSTEM_MASTERS = 'system:masters';
/** Groups kcp lets past the workspace checks (pkg/authorization/bootstrap/policy.go). */
const LOGICAL_CLUSTER_ADMIN = 'system:kcp:logical-cluster-admin';
const KCP_ADMIN = 'system:kcp:admin';
const WORKSPACE_BOOTSTRAPPER = 'system:kcp:tenancy:workspace-bootstrapper';
/** Phases in which a logical cluster's content may be accessed (kcp workspace content authorizer). */
const ACCESSIBLE_PHASES = new Set(['Initializing', 'Ready', 'Inactive', 'Terminating', 'Deleting']);

/** Why a wildcard (`/clusters/*`) request is refused. */
const WILDCARD_DENIED = 'wildcard requests are only allowed for system:masters';

/** What is being authorized (`authorizer.Attributes`). */
export interface AuthzAttributes {
  user: UserInfo;
  verb: string;
  cluster: string;
  isResourceRequest: boolean;
  namespace: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  name: string;
  /** Non-resource path, e.g. `/healthz`. */
  path: string;
}

/** Decision with the reason shown in 403 messages and access reviews. */
export interface Decision { allowed: boolean; reason: string }

interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject { kind: string; name: string; namespace?: string }
interface Binding { namespace: string; roleRef: { kind: string; name: string }; subjects: Subject[] }

/** Parsed RBAC objects of one logical cluster. */
interface RbacSnapshot {
  clusterRoles: Map<string, PolicyRule[]>;
  roles: Map<string, PolicyRule[]>; // key ns/name
  clusterRoleBindings: Binding[];
  roleBindings: Map<string, Binding[]>; // by namespace
}

const RBAC = 'rbac.authorization.k8s.io/';
const RBAC_RESOURCES = new Set([`${RBAC}roles`, `${RBAC}rolebindings`, `${RBAC}clusterroles`, `${RBAC}clusterrolebindings`]);

function has(list: string[] | undefined, v: string): boolean {
  return !!list && (list.includes('*') || list.includes(v));
}

/** Whether one RBAC rule allows the attributes (kube's `RuleAllows`). */
export function ruleAllows(rule: PolicyRule, a: AuthzAttributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (!a.isResourceRequest) {
    return !!rule.nonResourceURLs?.some((u) => u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.slice(0, -1))));
  }
  if (!has(rule.apiGroups, a.apiGroup)) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resOk = !!rule.resources?.some((r) => r === '*' || r === combined || (a.subresource && r === `*/${a.subresource}`));
  if (!resOk) return false;
  return !rule.resourceNames?.length || rule.resourceNames.includes(a.name);
}

function appliesTo(s: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User': return s.name === user.name;
    case 'Group': return user.groups.includes(s.name);
    case 'ServiceAccount': return user.name === serviceAccountUsername(s.namespace || bindingNamespace, s.name);
    default: return false;
  }
}

/**
 * Logical clusters whose parsed RBAC the authorizer keeps (LRU): a miss rebuilds the snapshot
 * from the watch cache (one pass over the cluster's roles and bindings).
 */
export const RBAC_SNAPSHOT_CLUSTERS = 4_096;

/** RBAC authorizer over the watch cache, with per-cluster snapshots invalidated by events. */
export class Authorizer {
  /** Parsed RBAC per logical cluster, at most {@link RBAC_SNAPSHOT_CLUSTERS} (least recently used evicted). */
  private readonly snapshots = new LRUCache<string, RbacSnapshot>({ max: RBAC_SNAPSHOT_CLUSTERS });

  /**
   * `index` (the shard's LogicalClusters) enables kcp's workspace checks: required groups and
   * content access; without it only RBAC applies.
   */
  constructor(private readonly cache: WatchCache, private readonly index?: LogicalClusterIndex) {
    cache.subscribe((ev: CacheEvent | undefined) => {
      if (!ev) this.snapshots.clear();
      else if (RBAC_RESOURCES.has(ev.entry.groupResource)) this.snapshots.delete(ev.entry.cluster);
    });
  }

  private snapshot(cluster: string): RbacSnapshot {
    let s = this.snapshots.get(cluster);
    if (s) return s;
    s = { clusterRoles: new Map(), roles: new Map(), clusterRoleBindings: [], roleBindings: new Map() };
    const parse = (json: string) => JSON.parse(json) as { metadata: { name: string; namespace?: string }; rules?: PolicyRule[]; roleRef?: Binding['roleRef']; subjects?: Subject[] };
    for (const e of this.cache.list(`${RBAC}clusterroles`, cluster)) s.clusterRoles.set(e.name, parse(e.json).rules ?? []);
    for (const e of this.cache.list(`${RBAC}roles`, cluster)) s.roles.set(`${e.namespace}/${e.name}`, parse(e.json).rules ?? []);
    for (const e of this.cache.list(`${RBAC}clusterrolebindings`, cluster)) {
      const o = parse(e.json);
      if (o.roleRef) s.clusterRoleBindings.push({ namespace: '', roleRef: o.roleRef, subjects: o.subjects ?? [] });
    }
    for (const e of this.cache.list(`${RBAC}rolebindings`, cluster)) {
      const o = parse(e.json);
      if (!o.roleRef) continue;
      const list = s.roleBindings.get(e.namespace) ?? [];
      list.push({ namespace: e.namespace, roleRef: o.roleRef, subjects: o.subjects ?? [] });
      s.roleBindings.set(e.namespace, list);
    }
    this.snapshots.set(cluster, s);
    return s;
  }

  private clusterRoleRules(cluster: string, name: string): PolicyRule[] | undefined {
    return this.snapshot(cluster).clusterRoles.get(name) ?? this.snapshot(SYSTEM_ADMIN_CLUSTER).clusterRoles.get(name);
  }

  /**
   * The rule sets granted to a user in one logical cluster: cluster-wide bindings, and with a
   * namespace also that namespace's RoleBindings. `via` names the binding for decisions.
   */
  private *grants(cluster: string, user: UserInfo, namespace: string, clusterBindingsOnly: boolean): Generator<{ rules: PolicyRule[]; via: string }> {
    const s = this.snapshot(cluster);
    for (const b of s.clusterRoleBindings) {
      if (!b.subjects.some((sub) => appliesTo(sub, user, ''))) continue;
      const rules = this.clusterRoleRules(cluster, b.roleRef.name);
      if (rules) yield { rules, via: `RBAC: allowed by ClusterRoleBinding to ClusterRole "${b.roleRef.name}"` };
    }
    if (clusterBindingsOnly || !namespace) return;
    for (const b of s.roleBindings.get(namespace) ?? []) {
      if (!b.subjects.some((sub) => appliesTo(sub, user, b.namespace))) continue;
      const rules = b.roleRef.kind === 'Role' ? s.roles.get(`${b.namespace}/${b.roleRef.name}`) : this.clusterRoleRules(cluster, b.roleRef.name);
      if (rules) yield { rules, via: `RBAC: allowed by RoleBinding to ${b.roleRef.kind} "${b.roleRef.name}" in namespace "${b.namespace}"` };
    }
  }

  /** Evaluates the RBAC bindings of one logical cluster; returns the reason when allowed. */
  private rbacAllows(cluster: string, a: AuthzAttributes, clusterBindingsOnly: boolean): string | undefined {
    const namespace = a.isResourceRequest ? a.namespace : '';
    for (const g of this.grants(cluster, a.user, namespace, clusterBindingsOnly)) {
      if (g.rules.some((r) => ruleAllows(r, a))) return g.via;
    }
    return undefined;
  }

  /**
   * Every rule that applies to a user in a namespace of a logical cluster: the bootstrap policy
   * and local RBAC (SelfSubjectRulesReview, kube's `RulesFor`). `system:masters` gets `*`.
   */
  rulesFor(user: UserInfo, cluster: string, namespace: string, clusterExists: boolean): { resourceRules: PolicyRule[]; nonResourceRules: PolicyRule[] } {
    user = serviceAccountClusterMismatch(user, cluster) ?? user; // as in authorize()
    if (user.groups.includes(SYSTEM_MASTERS)) {
      return { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] };
    }
    const resourceRules: PolicyRule[] = []; const nonResourceRules: PolicyRule[] = [];
    if (!clusterExists) return { resourceRules, nonResourceRules };
    const sources = [...this.grants(SYSTEM_ADMIN_CLUSTER, user, '', true), ...this.grants(cluster, user, namespace, false)];
    for (const { rules } of sources) {
      for (const r of rules) {
        if (r.nonResourceURLs?.length) nonResourceRules.push({ verbs: r.verbs, nonResourceURLs: r.nonResourceURLs });
        if (r.resources?.length) {
          const rr: PolicyRule = { verbs: r.verbs, apiGroups: r.apiGroups ?? [], resources: r.resources };
          if (r.resourceNames?.length) rr.resourceNames = r.resourceNames;
          resourceRules.push(rr);
        }
      }
    }
    return { resourceRules, nonResourceRules };
  }

  /**
   * kcp's workspace checks for a request into a (non-system) logical cluster, in the order of its
   * authorizer chain: the required groups of the LogicalCluster
   * (`authorization.kcp.io/required-groups`: `;`-separated alternatives of `,`-separated groups),
   * the phase, then **workspace content access** — verb `access` on the non-resource path `/`
   * granted by the cluster's RBAC or the bootstrap policy; service accounts of the cluster
   * itself need no such grant (kcp pkg/authorization/requiredgroups_authorizer.go,
   * workspace_content_authorizer.go). Returns the denial reason, or undefined to continue.
   */
  private workspaceDenial(a: AuthzAttributes): string | undefined {
    if (!this.index || !a.cluster || a.cluster.startsWith('system:')) return undefined;
    const groups = a.user.groups;
    if (groups.includes(LOGICAL_CLUSTER_ADMIN)) return undefined;
    const info = this.index.get(a.cluster);
    if (!info) return undefined; // existence is checked by the caller (the cache may trail Redis)
    // authorize() has renamed foreign service accounts (system:kcp:serviceaccount:…): one still
    // named system:serviceaccount:… is a service account of this logical cluster.
    const serviceAccount = a.user.name.startsWith(SERVICE_ACCOUNT_USER_PREFIX);
    if (!serviceAccount && info.requiredGroups !== undefined && !groups.includes(KCP_ADMIN)) {
      const clauses = [...info.requiredGroups.split(';'), KCP_ADMIN, WORKSPACE_BOOTSTRAPPER];
      if (!clauses.some((c) => c.split(',').every((g) => groups.includes(g)))) {
        return `user is not a member of required groups: ${info.requiredGroups}`;
      }
    }
    if (!ACCESSIBLE_PHASES.has(info.phase)) return `not permitted due to phase "${info.phase}"`;
    if (serviceAccount) return undefined;
    const access: AuthzAttributes = { ...a, verb: 'access', isResourceRequest: false, path: '/', apiGroup: '', resource: '', subresource: '', name: '', namespace: '' };
    if (this.rbacAllows(SYSTEM_ADMIN_CLUSTER, access, true) || this.rbacAllows(a.cluster, access, true)) return undefined;
    return NO_WORKSPACE_ACCESS;
  }

  /**
   * Whether `user` may enter logical cluster `cluster` at all, before anything else of a request
   * is looked at (its resource, its impersonation headers): `system:masters` anywhere; for
   * wildcard requests (`*`) nobody else; otherwise the cluster must exist and kcp's workspace
   * checks pass (required groups, phase, verb `access` on `/`). Returns the denial reason, or
   * undefined when allowed. A missing logical cluster and one without access give the same
   * reason ({@link NO_WORKSPACE_ACCESS}), so existence does not leak.
   */
  workspaceGate(user: UserInfo, cluster: string, clusterExists: boolean): string | undefined {
    if (!cluster) return undefined;
    user = serviceAccountClusterMismatch(user, cluster) ?? user;
    if (user.groups.includes(SYSTEM_MASTERS)) return undefined;
    if (cluster === '*') return WILDCARD_DENIED;
    if (!clusterExists) return NO_WORKSPACE_ACCESS;
    return this.workspaceDenial({ user, verb: 'access', cluster, isResourceRequest: false, namespace: '', apiGroup: '', resource: '', subresource: '', name: '', path: '/' });
  }

  /**
   * Authorizes a request. `clusterExists` says whether the target logical cluster exists (the
   * caller resolves it, possibly asynchronously). `deep` evaluates the logical cluster's policy
   * as if the user were inside it, without kcp's workspace checks (required groups, phase, verb
   * `access`): kcp's deep SubjectAccessReview, used for permissions on an APIExport (`bind`,
   * `content`) that a user holds without entering the provider's workspace.
   */
  authorize(a: AuthzAttributes, clusterExists: boolean, deep = false): Decision {
    // A service account is only itself in its own logical cluster (src/auth/serviceaccounts.ts).
    const foreign = serviceAccountClusterMismatch(a.user, a.cluster);
    if (foreign) a = { ...a, user: foreign };
    if (a.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, reason: 'system:masters' };
    if (a.cluster && a.cluster !== '*' && !clusterExists) {
      return { allowed: false, reason: `workspace access not permitted: ${NO_WORKSPACE_ACCESS}` };
    }
    if (a.cluster === '*') return { allowed: false, reason: WILDCARD_DENIED };
    const denial = deep ? undefined : this.workspaceDenial(a);
    if (denial) return { allowed: false, reason: denial };
    const bootstrap = this.rbacAllows(SYSTEM_ADMIN_CLUSTER, a, true);
    if (bootstrap) return { allowed: true, reason: `bootstrap policy: ${bootstrap}` };
    if (a.cluster) {
      const local = this.rbacAllows(a.cluster, a, false);
      if (local) return { allowed: true, reason: local };
    }
    return { allowed: false, reason: '' };
  }
}
