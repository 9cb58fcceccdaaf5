/**
 * Workspace path arithmetic of the `kubectl ws` plugin: reading the workspace out of a server URL,
 * resolving `.`/`..`, relative and absolute paths, and the messages that print the current
 * workspace.
 *
 * Sources (kcp-dev/kcp, `staging/src/github.com/kcp-dev/cli`): `pkg/helpers/helpers.go`
 * (`ParseClusterURL`), `pkg/workspace/plugin/use.go` (`Run`, `resolveDots`, `currentRootURL`,
 * `printCurrentWorkspace`), and github kcp-dev/logicalcluster `path.go` (`Path`, `IsValid`).
 */
import { ROOT, isValidPath } from '../../tenancy/paths.js';

// The plugin and the server share kcp's path rules.
export { ROOT, isValidPath } from '../../tenancy/paths.js';

/** Separator of path segments (`root:org:team`), logicalcluster's `separator`. */
const SEPARATOR = ':';

/**
 * The parent of a path (`root:org` for `root:org:team`), or `undefined` for a top-level path.
 * A `system:…` logical cluster name has no parent (logicalcluster `Path.Split` keeps it whole).
 */
export function parentOf(path: string): string | undefined {
  if (path.startsWith('system:')) return undefined;
  const i = path.lastIndexOf(SEPARATOR);
  return i < 0 ? undefined : path.slice(0, i);
}

/** The last segment of a path (the workspace's name in its parent); `''` for `system:…` names. */
export function baseOf(path: string): string {
  if (path.startsWith('system:')) return '';
  return path.slice(path.lastIndexOf(SEPARATOR) + 1);
}

/** Joins a path and a relative name (logicalcluster `Path.Join`); an empty path yields `name`. */
export function joinPath(path: string, name: string): string {
  return path === '' ? name : `${path}${SEPARATOR}${name}`;
}

/**
 * The top-most ancestor of a path (`root` for `root:org:team`): what `kubectl ws :` enters
 * (kcp `currentRootURL`). A `system:…` name is its own root.
 */
export function rootOf(path: string): string {
  if (path.startsWith('system:')) return path;
  const i = path.indexOf(SEPARATOR);
  return i < 0 ? path : path.slice(0, i);
}

/** A server URL split into the part before `/clusters/<path>` and the workspace path. */
export interface ClusterURL {
  /** The URL with its path cut before `/clusters/` (query and fragment kept). */
  base: URL;
  /** The workspace path or logical cluster name of the URL, e.g. `root:org`. */
  path: string;
}

/**
 * Reads the workspace out of a server URL (kcp `helpers.ParseClusterURL`): the first path
 * segment after `/clusters/`, which must be a valid path.
 *
 * @returns `undefined` when the URL does not parse, has no `/clusters/` segment, or names an
 *   invalid path — kcp then reports the URL itself ("Current workspace is the URL …").
 */
export function parseClusterURL(server: string): ClusterURL | undefined {
  let u: URL;
  try { u = new URL(server); } catch { return undefined; }
  const prefix = '/clusters/';
  const i = u.pathname.indexOf(prefix);
  if (i < 0) return undefined;
  const path = decodeURIComponent(u.pathname.slice(i + prefix.length).split('/')[0]!);
  if (!isValidPath(path)) return undefined;
  const base = new URL(u.href);
  base.pathname = u.pathname.slice(0, i);
  return { base, path };
}

/**
 * The URL of a workspace: `base` with `/clusters/<path>` appended to its path, as kcp joins
 * `u.Path` and `Path.RequestPath()` (`path.Join`, so no doubled or trailing slash).
 */
export function workspaceURL(base: URL, path: string): string {
  const u = new URL(base.href);
  const joined = `${u.pathname.replace(/\/+$/, '')}/clusters/${path.split(SEPARATOR).map(encodeURIComponent).join(SEPARATOR)}`;
  u.pathname = joined;
  return u.href;
}

/** Error of the path arithmetic; its message is what the plugin prints after `Error: `. */
export class WorkspacePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkspacePathError';
  }
}

/**
 * Removes `.` and `..` segments from an absolute path without leading colon (kcp `resolveDots`).
 *
 * @throws {WorkspacePathError} `cannot go up from root` when `..` climbs above the top.
 */
export function resolveDots(path: string): string {
  const out: string[] = [];
  for (const part of path.split(SEPARATOR)) {
    if (part === '.') continue;
    if (part === '..') {
      if (out.length === 0) throw new WorkspacePathError('cannot go up from root');
      out.pop();
      continue;
    }
    out.push(part);
  }
  return out.join(SEPARATOR);
}

/** How the argument of `kubectl ws [use] <arg>` is to be carried out. */
export type UseTarget =
  /** `-`: swap the current and previous workspace contexts. */
  | { kind: 'previous' }
  /** `:`: the root of the current workspace's tree. */
  | { kind: 'root' }
  /** `.`: print the current workspace, change nothing. */
  | { kind: 'current' }
  /** `~` or `~:<rest>`: the home workspace, then `rest` relative to it. */
  | { kind: 'home'; rest: string }
  /** Any other path: relative to the current workspace, or absolute when `absolute`. */
  | { kind: 'path'; path: string; absolute: boolean };

/** Result of {@link parseUseArgument}: the target and the notes kcp prints on stderr. */
export interface ParsedUseArgument {
  target: UseTarget;
  /** Notes for stderr, printed before (`legacy`) or after success (`home`). */
  notes: { when: 'before' | 'after'; text: string }[];
}

/** Note printed when a path starts with `root` instead of `:root` (kcp `use.go`, LEGACY). */
const LEGACY_ROOT_NOTE = "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use ':root' to specify an absolute path.";
/** Note printed after `kubectl ws` without argument entered the home workspace (kcp `use.go`). */
const NO_ARG_NOTE = "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace.";

/**
 * Interprets the argument of `kubectl ws [use]` as kcp's `UseWorkspaceOptions.Run` does before
 * talking to the server: a leading local home directory (a shell-expanded `~`) becomes `~`, `/`
 * separates like `:`, `root`/`root:…` is read as the absolute `:root…` (with a note), and an empty
 * argument means home (with a note printed after success). `short` (`--short`) suppresses both notes
 * and, as in kcp, the `root:` rewrite.
 *
 * @param arg The argument as given (`''` when none).
 * @param homeDir The user's local home directory, `''` if unknown.
 */
export function parseUseArgument(arg: string, homeDir: string, short: boolean): ParsedUseArgument {
  const notes: ParsedUseArgument['notes'] = [];
  let name = arg;
  if (homeDir !== '' && name.startsWith(homeDir)) name = `~${name.slice(homeDir.length)}`;
  name = name.replaceAll('/', SEPARATOR);
  if (name === ROOT || (name.startsWith(`${ROOT}${SEPARATOR}`) && !short)) {
    name = `${SEPARATOR}${name}`;
    notes.push({ when: 'before', text: LEGACY_ROOT_NOTE });
  }
  if (name === '') {
    if (!short) notes.push({ when: 'after', text: NO_ARG_NOTE });
    name = '~';
  }
  if (name === '-') return { target: { kind: 'previous' }, notes };
  if (name === SEPARATOR) return { target: { kind: 'root' }, notes };
  if (name === '.') return { target: { kind: 'current' }, notes };
  if (name === '~' || name.startsWith(`~${SEPARATOR}`)) return { target: { kind: 'home', rest: name.slice(1) }, notes };
  if (name.startsWith(SEPARATOR)) return { target: { kind: 'path', path: name.slice(1), absolute: true }, notes };
  return { target: { kind: 'path', path: name, absolute: false }, notes };
}

/**
 * The absolute, dot-free path a `path` target designates from `current` (kcp: relative paths are
 * joined to the current path, then `resolveDots`).
 *
 * @throws {WorkspacePathError} `cannot go up from root`, or `invalid workspace path: <arg>` when the
 *   result is not a valid path.
 */
export function resolveTargetPath(target: { path: string; absolute: boolean }, current: string, arg: string): string {
  const joined = target.absolute ? target.path : joinPath(current, target.path);
  const resolved = resolveDots(joined);
  if (resolved === '' || !isValidPath(resolved)) throw new WorkspacePathError(`invalid workspace path: ${arg}`);
  return resolved;
}

/** A workspace type reference (`spec.type` of a Workspace). */
export interface WorkspaceTypeRef {
  name: string;
  path?: string;
}

/** `root:organization` for `{name: organization, path: root}`, `root` for `{name: root}`. */
export function formatType(type: WorkspaceTypeRef): string {
  return joinPath(type.path ?? '', type.name);
}

/**
 * The line `kubectl ws` prints for the workspace of `server` (kcp `printCurrentWorkspace`):
 * `Current workspace is 'root:org' (type root:organization).`, or
 * `Current workspace is the URL "https://…".` for a URL without a workspace; with `short`, only the
 * path (or nothing for such a URL).
 *
 * @returns The text including its trailing newline, or `''`.
 */
export function currentWorkspaceMessage(server: string, short: boolean, type?: WorkspaceTypeRef): string {
  const parsed = parseClusterURL(server);
  if (!parsed) return short ? '' : `Current workspace is the URL ${JSON.stringify(server)}.\n`;
  if (short) return `${parsed.path}\n`;
  let message = `Current workspace is '${parsed.path}'`;
  if (type) message += ` (type ${formatType(type)})`;
  return `${message}.\n`;
}
