/**
 * Which FlowSchema a request matches and which flow it belongs to, as kube-apiserver's
 * k8s.io/apiserver/pkg/util/flowcontrol/match.go, with kcp's flows: the distinguisher is
 * prefixed by the request's logical cluster, so one tenant's users and namespaces are flows of
 * their own, never shared with another tenant's.
 */
import type { UserInfo } from '../registry/store.js';
import { ALL, type FlowSchemaSpec, type NonResourcePolicyRule, type PolicyRulesWithSubjects, type ResourcePolicyRule, type Subject } from './types.js';

/** What classification reads of a request (kube's `RequestDigest`: user and request info). */
export interface RequestDigest {
  user: UserInfo;
  /** Logical cluster ('*' for a wildcard request, '' for a path without `/clusters/`). */
  cluster: string;
  isResourceRequest: boolean;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  /** Path below the cluster prefix (non-resource requests match it). */
  path: string;
}

const SA_PREFIX = 'system:serviceaccount:';

function matchesSubject(user: UserInfo, s: Subject): boolean {
  switch (s.kind) {
    case 'User': return s.user !== undefined && (s.user.name === ALL || s.user.name === user.name);
    case 'Group': return s.group !== undefined && (s.group.name === ALL || user.groups.includes(s.group.name));
    case 'ServiceAccount': {
      const sa = s.serviceAccount;
      if (!sa || !user.name.startsWith(SA_PREFIX)) return false;
      const rest = user.name.slice(SA_PREFIX.length);
      if (sa.name === ALL) return rest.startsWith(`${sa.namespace}:`);
      return rest === `${sa.namespace}:${sa.name}`;
    }
    default: return false;
  }
}

const contains = (list: readonly string[] | undefined, value: string): boolean => list !== undefined && (list.includes(value) || list.includes(ALL));

function matchesResourceRule(d: RequestDigest, r: ResourcePolicyRule): boolean {
  if (!contains(r.verbs, d.verb)) return false;
  if (!contains(r.resources, d.subresource ? `${d.resource}/${d.subresource}` : d.resource)) return false;
  if (!contains(r.apiGroups, d.apiGroup)) return false;
  if (!d.namespace) return r.clusterScope === true;
  return contains(r.namespaces, d.namespace);
}

function matchesNonResourceURL(urls: readonly string[], path: string): boolean {
  for (const u of urls) {
    if (u === ALL || u === path) return true;
    const prefix = u.endsWith('*') ? u.slice(0, -1) : `${u}/`;
    if (path.startsWith(prefix)) return true;
  }
  return false;
}

function matchesNonResourceRule(d: RequestDigest, r: NonResourcePolicyRule): boolean {
  return contains(r.verbs, d.verb) && matchesNonResourceURL(r.nonResourceURLs ?? [], d.path);
}

// Loops rather than `.some(closure)`: classification runs for every request, against every
// FlowSchema before the one that matches.
function matchesPolicyRule(d: RequestDigest, rule: PolicyRulesWithSubjects): boolean {
  let subject = false;
  for (const s of rule.subjects ?? []) if (matchesSubject(d.user, s)) { subject = true; break; }
  if (!subject) return false;
  if (d.isResourceRequest) {
    for (const r of rule.resourceRules ?? []) if (matchesResourceRule(d, r)) return true;
    return false;
  }
  for (const r of rule.nonResourceRules ?? []) if (matchesNonResourceRule(d, r)) return true;
  return false;
}

/** Whether a request matches a FlowSchema: one of its rules matches the subject and the request. */
export function matchesFlowSchema(d: RequestDigest, spec: FlowSchemaSpec): boolean {
  for (const r of spec.rules ?? []) if (matchesPolicyRule(d, r)) return true;
  return false;
}

/** The flow of a user in a logical cluster, `<cluster>/<user>` (ByUser, and the catch-all's flows). */
export function userFlow(cluster: string, user: string): string {
  return `${cluster}/${user}`;
}

/**
 * The flow distinguisher of a request: `<cluster>/<user>` (ByUser), `<cluster>/<namespace>`
 * (ByNamespace), `<cluster>` without a method — kube's user or namespace, scoped to the logical
 * cluster (kcp: one tenant is one flow family).
 */
export function flowDistinguisher(d: RequestDigest, spec: FlowSchemaSpec): string {
  switch (spec.distinguisherMethod?.type) {
    case 'ByUser': return userFlow(d.cluster, d.user.name);
    case 'ByNamespace': return `${d.cluster}/${d.namespace}`;
    default: return d.cluster;
  }
}
