/**
 * Discovery documents (https://kubernetes.io/docs/concepts/overview/kubernetes-api/#discovery-api):
 * legacy `/api`, `/apis`, `/apis/<group>`, per group/version `APIResourceList`, and aggregated
 * discovery (`apidiscovery.k8s.io` v2 and v2beta1, KEP-3352).
 */
import type { ResourceDescriptor } from '../apis/types.js';
import { compareVersionPriority } from '../apiextensions/customresources.js';

interface GroupVersions { name: string; versions: string[] }

function groupsOf(descs: ResourceDescriptor[]): GroupVersions[] {
  const out = new Map<string, string[]>();
  for (const d of descs) {
    const vs = out.get(d.group) ?? [];
    if (!vs.includes(d.version)) vs.push(d.version);
    out.set(d.group, vs);
  }
  // The preferred (first) version is the group's highest by kube's version priority, as
  // apiextensions-apiserver orders a group's versions over all its CRDs.
  return [...out].map(([name, versions]) => ({ name, versions: versions.sort(compareVersionPriority) }));
}

/** `/api`: APIVersions. */
export function apiVersions(serverAddress: string): object {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function apiGroup(g: GroupVersions): object {
  const versions = g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

/** `/apis`: APIGroupList of the named groups. */
export function apiGroupList(descs: ResourceDescriptor[]): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groupsOf(descs).filter((g) => g.name !== '').map(apiGroup) };
}

/** `/apis/<group>`: APIGroup, or undefined. */
export function apiGroupDoc(descs: ResourceDescriptor[], group: string): object | undefined {
  const g = groupsOf(descs).find((x) => x.name === group && group !== '');
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) } : undefined;
}

/** Subresources served for a descriptor, with their verbs. */
function subresourcesOf(d: ResourceDescriptor): { name: string; verbs: string[]; kind?: { group: string; version: string; kind: string } }[] {
  const subs: { name: string; verbs: string[]; kind?: { group: string; version: string; kind: string } }[] = [];
  if (d.hasStatus) subs.push({ name: 'status', verbs: ['get', 'patch', 'update'] });
  if (d.scale) subs.push({ name: 'scale', verbs: ['get', 'patch', 'update'], kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' } });
  if (d.group === '' && d.plural === 'namespaces') subs.push({ name: 'finalize', verbs: ['update'] });
  for (const s of d.extraSubresources ?? []) subs.push(s);
  return subs;
}

/** `/api/v1` or `/apis/<group>/<version>`: APIResourceList, or undefined. */
export function apiResourceList(descs: ResourceDescriptor[], group: string, version: string): object | undefined {
  const sel = descs.filter((d) => d.group === group && d.version === version);
  if (!sel.length) return undefined;
  const resources: object[] = [];
  for (const d of sel) {
    const r: Record<string, unknown> = { name: d.plural, singularName: d.singular, namespaced: d.namespaced, kind: d.kind, verbs: d.verbs };
    if (d.shortNames?.length) r.shortNames = d.shortNames;
    if (d.categories?.length) r.categories = d.categories;
    resources.push(r);
    for (const s of subresourcesOf(d)) {
      resources.push({ name: `${d.plural}/${s.name}`, singularName: '', namespaced: d.namespaced, kind: s.kind?.kind ?? d.kind, verbs: s.verbs, ...(s.kind ? { group: s.kind.group, version: s.kind.version } : {}) });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}

/**
 * Aggregated discovery for `/api` (core group only) or `/apis` (named groups):
 * `APIGroupDiscoveryList` in `apidiscovery.k8s.io/<version>`.
 */
export function aggregatedDiscovery(descs: ResourceDescriptor[], legacy: boolean, discoveryVersion: string): object {
  const items = groupsOf(descs).filter((g) => (legacy ? g.name === '' : g.name !== '')).map((g) => ({
    // ObjectMeta as kube 1.34 writes it: name omitted when empty (the core group), creationTimestamp
    // omitted when zero (`omitzero`, k8s.io/apimachinery meta/v1 types.go).
    metadata: g.name ? { name: g.name } : {},
    versions: g.versions.map((v) => ({
      version: v,
      freshness: 'Current',
      resources: descs.filter((d) => d.group === g.name && d.version === v).map((d) => {
        const r: Record<string, unknown> = {
          resource: d.plural,
          responseKind: { group: d.group, version: d.version, kind: d.kind },
          scope: d.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: d.singular,
          verbs: d.verbs,
        };
        if (d.shortNames?.length) r.shortNames = d.shortNames;
        if (d.categories?.length) r.categories = d.categories;
        const subs = subresourcesOf(d);
        if (subs.length) r.subresources = subs.map((s) => ({ subresource: s.name, responseKind: s.kind ?? { group: d.group, version: d.version, kind: d.kind }, verbs: s.verbs }));
        return r;
      }),
    })),
  }));
  return { kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${discoveryVersion}`, metadata: {}, items };
}
