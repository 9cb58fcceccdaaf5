/**
 * WorkspaceType lookup and inheritance, as kcp's workspacetypeexists admission and workspace
 * scheduler do (kcp pkg/admission/workspacetypeexists):
 *
 * - a reference `{name, path}` with a path names the type in that workspace; without a path the
 *   type is looked up in the workspace itself, then in each ancestor up to `root`;
 * - a type's **aliases** are the type and every type it extends (`spec.extend.with`),
 *   transitively; allowed parents/children compare aliases, initializers come from all aliases.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { WatchCache } from '../storage/watchcache.js';
import type { LogicalClusterIndex } from './index.js';
import { ROOT, joinPath, parentPath } from './paths.js';
import { LRUCache } from 'lru-cache';

/** Group/resource of WorkspaceTypes in the watch cache. */
export const WORKSPACE_TYPES_GR = 'tenancy.kcp.io/workspacetypes';

/** `{name, path}` reference to a WorkspaceType (kcp `WorkspaceTypeReference`). */
export interface WorkspaceTypeRef { name: string; path?: string }

/** A WorkspaceType with the canonical path of the workspace holding it. */
export interface ResolvedType {
  /** Path of the workspace the type lives in (`root`). */
  path: string;
  name: string;
  spec: WorkspaceTypeSpec;
}

/** The fields of `WorkspaceType.spec` the server acts on. */
export interface WorkspaceTypeSpec {
  extend?: { with?: WorkspaceTypeRef[] };
  defaultChildWorkspaceType?: WorkspaceTypeRef;
  limitAllowedChildren?: { none?: boolean; types?: WorkspaceTypeRef[] };
  limitAllowedParents?: { none?: boolean; types?: WorkspaceTypeRef[] };
  additionalWorkspaceLabels?: Record<string, string>;
  initializer?: boolean;
  terminator?: boolean;
}

/** `<path>:<name>` of a type, as initializer names and error messages show it. */
export function qualifiedName(t: { path: string; name: string }): string {
  return joinPath(t.path, t.name);
}

/**
 * WorkspaceTypes held by the other shards of an instance, as replicated to this one (kcp reads
 * them from its cache server): the logical cluster of a path, and a type object in a cluster.
 */
export interface RemoteWorkspaceTypes {
  resolvePath(path: string): string | undefined;
  get(cluster: string, name: string): KubeObject | undefined;
}

/**
 * Resolves WorkspaceTypes through the watch cache and the logical cluster path index, then
 * through the types replicated from the instance's other shards (`remote`).
 */
export class WorkspaceTypeResolver {
  /**
   * Parsed specs by `<cluster>/<name>`, reused while the resourceVersion is unchanged: an LRU
   * cache of 10,000 types (a miss parses the stored JSON again).
   */
  private readonly parsed = new LRUCache<string, { rv: number | string; spec: WorkspaceTypeSpec }>({ max: 10_000 });

  constructor(private readonly cache: WatchCache, private readonly index: LogicalClusterIndex, private readonly remote?: RemoteWorkspaceTypes) {}

  /** The type `name` in the workspace at `path`, if it exists on this shard or, replicated, on another. */
  get(path: string, name: string): ResolvedType | undefined {
    const local = this.index.resolvePath(path) ?? (path === ROOT && this.index.get(ROOT) ? ROOT : undefined);
    const cluster = local ?? this.remote?.resolvePath(path) ?? (path === ROOT ? ROOT : undefined);
    if (!cluster) return undefined;
    let e: { rv: number | string; json?: string; obj?: KubeObject } | undefined = this.cache.getEntry(WORKSPACE_TYPES_GR, cluster, '', name);
    if (!e && this.remote) {
      const obj = this.remote.get(cluster, name);
      if (obj) e = { rv: obj.metadata.resourceVersion ?? '', obj };
    }
    if (!e) return undefined;
    const key = `${cluster}/${name}`;
    let p = this.parsed.get(key);
    if (!p || p.rv !== e.rv) {
      p = { rv: e.rv, spec: ((e.obj ?? JSON.parse(e.json!) as KubeObject).spec ?? {}) as WorkspaceTypeSpec };
      this.parsed.set(key, p);
    }
    return { path, name, spec: p.spec };
  }

  /**
   * Resolves a reference seen from the workspace at `workspacePath`. Throws an Error with kcp's
   * message when it cannot be resolved.
   */
  resolve(workspacePath: string, ref: WorkspaceTypeRef): ResolvedType {
    if (ref.path) {
      const t = this.get(ref.path, ref.name);
      if (!t) throw new Error(`workspace type ${joinPath(ref.path, ref.name)} cannot be resolved`);
      return t;
    }
    for (let p = workspacePath; p; p = parentPath(p)) {
      const t = this.get(p, ref.name);
      if (t) return t;
    }
    // Home paths (`user:…`) and others outside the root tree fall back to root.
    const t = this.get(ROOT, ref.name);
    if (t) return t;
    throw new Error(`workspace type "${ref.name}" cannot be resolved`);
  }

  /** The type and every type it extends, transitively, without repeats. Throws on a missing base. */
  aliases(t: ResolvedType): ResolvedType[] {
    const out: ResolvedType[] = [];
    const seen = new Set<string>();
    const visit = (x: ResolvedType, chain: string[]) => {
      const q = qualifiedName(x);
      if (chain.includes(q)) throw new Error(`circular dependency detected in workspace type ${q}: ${[...chain, q].join(' -> ')}`);
      if (seen.has(q)) return;
      seen.add(q);
      out.push(x);
      for (const base of x.spec.extend?.with ?? []) {
        const b = this.get(base.path ?? x.path, base.name);
        if (!b) throw new Error(`unable to find inherited workspace type ${base.name}`);
        visit(b, [...chain, q]);
      }
    };
    visit(t, []);
    return out;
  }

  /** Initializer names (`<path>:<name>`) of a type: every alias with `spec.initializer`. */
  initializers(t: ResolvedType): string[] {
    return this.aliases(t).filter((a) => a.spec.initializer).map(qualifiedName);
  }

  /** Terminator names of a type: every alias with `spec.terminator`. */
  terminators(t: ResolvedType): string[] {
    return this.aliases(t).filter((a) => a.spec.terminator).map(qualifiedName);
  }
}

function refName(r: WorkspaceTypeRef, defaultPath: string): string {
  return joinPath(r.path ?? defaultPath, r.name);
}

function anyAllowed(aliases: ResolvedType[], allowed: WorkspaceTypeRef[], defaultPath: string): boolean {
  const set = new Set(allowed.map((r) => refName(r, defaultPath)));
  return aliases.some((a) => set.has(qualifiedName(a)));
}

/**
 * Checks `limitAllowedParents` of the child's aliases and `limitAllowedChildren` of the parent's
 * aliases; returns kcp's error messages (empty = allowed).
 */
export function checkParentChild(parentType: string, parentAliases: ResolvedType[], childType: string, childAliases: ResolvedType[]): string[] {
  return [
    ...limitErrors('parent', childType, childAliases, parentType, parentAliases),
    ...limitErrors('child', parentType, parentAliases, childType, childAliases),
  ];
}

/**
 * kcp's messages for the `limitAllowedParents` (`other` = 'parent') or `limitAllowedChildren`
 * (`other` = 'child') of each of `ownAliases` against the other side's aliases.
 */
function limitErrors(other: 'parent' | 'child', ownType: string, ownAliases: ResolvedType[], otherType: string, otherAliases: ResolvedType[]): string[] {
  const errs: string[] = [];
  const list = (xs: string[]) => `[${[...new Set(xs)].sort().join(' ')}]`;
  for (const a of ownAliases) {
    const lim = other === 'parent' ? a.spec.limitAllowedParents : a.spec.limitAllowedChildren;
    if (!lim) continue;
    if (lim.none) { errs.push(`workspace type ${ownType} cannot have any ${other}`); continue; }
    if (!lim.types?.length || anyAllowed(otherAliases, lim.types, a.path)) continue;
    const ext = qualifiedName(a) !== ownType ? ` extends ${qualifiedName(a)}, which` : '';
    errs.push(`workspace type ${ownType}${ext} only allows ${list(lim.types.map((r) => refName(r, a.path)))} ${other} workspaces, but ${other} type ${otherType} only implements ${list(otherAliases.map(qualifiedName))}`);
  }
  return errs;
}
