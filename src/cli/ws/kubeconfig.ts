/**
 * Kubeconfig loading and writing for the `kubectl ws` plugin, following client-go's
 * `clientcmd` rules (`loader.go` `ClientConfigLoadingRules`, `config.go` `ModifyConfig`,
 * `client_config.go` overrides), and the context rewriting of kcp's plugin
 * (kcp-dev/kcp `staging/src/github.com/kcp-dev/cli/pkg/workspace/plugin/use.go`: `commitConfig`,
 * `swapContexts`).
 *
 * - Files: `--kubeconfig` alone when given (it must exist); otherwise the `KUBECONFIG` list
 *   (missing files skipped), otherwise `~/.kube/config`. Entries merge by name, the first file
 *   defining a name wins; the first non-empty `current-context` wins.
 * - Writes go where client-go's `ModifyConfig` puts them: a changed entry back into the file it came
 *   from, a new entry into the default file (the explicit one, else the first existing file of the
 *   list, else the first of the list); the current context into the first file that sets one.
 *   Entries are written sorted by name, as client-go's v1 conversion writes them. Relative file
 *   references are resolved against their file on load and made relative to the file written.
 *
 * Parsing and serialization reuse `src/pki/kubeconfig.ts`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import {
  readKubeconfig,
  serializeKubeconfig,
  type Kubeconfig,
  type KubeconfigCluster,
  type KubeconfigContext,
  type KubeconfigUser,
} from '../../pki/kubeconfig.js';

/** Name of the context (and cluster) kcp's plugin points at the current workspace. */
export const CURRENT_CONTEXT = 'workspace.kcp.io/current';
/** Name of the context (and cluster) kcp's plugin keeps for `kubectl ws -`. */
export const PREVIOUS_CONTEXT = 'workspace.kcp.io/previous';

/**
 * A merged kubeconfig as client-go's `clientcmdapi.Config` holds it: maps by name. Entries are
 * the objects of the YAML (unknown fields such as `extensions` kept).
 */
export interface WsConfig {
  currentContext: string;
  clusters: Record<string, KubeconfigCluster>;
  contexts: Record<string, KubeconfigContext>;
  users: Record<string, KubeconfigUser>;
}

/** Which file each entry and the current context came from (`LocationOfOrigin`). */
export interface ConfigOrigins {
  clusters: Record<string, string>;
  contexts: Record<string, string>;
  users: Record<string, string>;
}

/** Where kubeconfig is read from and written to. */
export interface LoadingRules {
  /** `--kubeconfig`, if given. */
  explicitPath?: string;
  /** Files in precedence order (the `KUBECONFIG` list, or the default file). */
  precedence: string[];
}

/** A loaded, merged kubeconfig with the origin of each entry. */
export interface LoadedConfig {
  rules: LoadingRules;
  config: WsConfig;
  origins: ConfigOrigins;
}

/** Error with a one-line message for the user (printed after `Error: `). */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * The loading rules of client-go's `NewDefaultClientConfigLoadingRules` with an explicit path:
 * `KUBECONFIG` split on the platform's list separator (empty entries and duplicates dropped), or
 * `$HOME/.kube/config`.
 */
export function loadingRules(explicitPath: string | undefined, env: NodeJS.ProcessEnv = process.env): LoadingRules {
  const list = (env['KUBECONFIG'] ?? '').split(delimiter).filter((p, i, all) => p !== '' && all.indexOf(p) === i);
  const home = env['HOME'] || homedir();
  const precedence = list.length > 0 ? list : [join(home, '.kube', 'config')];
  return explicitPath ? { explicitPath, precedence } : { precedence };
}

/** The files to read: the explicit one, or the precedence list. */
function filesToRead(rules: LoadingRules): string[] {
  return rules.explicitPath ? [rules.explicitPath] : rules.precedence;
}

/**
 * The file new entries are written to (client-go `GetDefaultFilename`): the explicit file, else the
 * first existing file of the list, else the first of the list.
 */
function defaultFilename(rules: LoadingRules): string {
  if (rules.explicitPath) return rules.explicitPath;
  return rules.precedence.find((f) => existsSync(f)) ?? rules.precedence[0]!;
}

const CLUSTER_PATH_FIELDS = ['certificate-authority'] as const;
const USER_PATH_FIELDS = ['client-certificate', 'client-key', 'tokenFile'] as const;

function mapPaths<T extends object>(entry: T, fields: readonly string[], fn: (p: string) => string): T {
  const out = { ...entry } as Record<string, unknown>;
  for (const f of fields) {
    const v = out[f];
    if (typeof v === 'string' && v !== '') out[f] = fn(v);
  }
  return out as T;
}

function readFile(path: string): Kubeconfig {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (err) {
    throw new ConfigError(`error loading config file "${path}": ${(err as Error).message}`);
  }
  try { return readKubeconfig(text); } catch (err) {
    throw new ConfigError(`error loading config file "${path}": ${(err as Error).message}`);
  }
}

/**
 * Reads and merges the kubeconfig files of `rules`. File references (`certificate-authority`,
 * `client-certificate`, `client-key`, `tokenFile`) come back absolute.
 *
 * @throws {ConfigError} when the explicit file is missing or a file does not parse.
 */
export function loadConfig(rules: LoadingRules): LoadedConfig {
  const config: WsConfig = { currentContext: '', clusters: {}, contexts: {}, users: {} };
  const origins: ConfigOrigins = { clusters: {}, contexts: {}, users: {} };
  for (const file of filesToRead(rules)) {
    if (!rules.explicitPath && !existsSync(file)) continue;
    const kc = readFile(file);
    const abs = (p: string): string => (isAbsolute(p) ? p : resolve(dirname(resolve(file)), p));
    if (config.currentContext === '' && kc['current-context']) config.currentContext = kc['current-context'];
    for (const c of kc.clusters) {
      if (c.name in config.clusters) continue;
      config.clusters[c.name] = mapPaths(c.cluster, CLUSTER_PATH_FIELDS, abs);
      origins.clusters[c.name] = file;
    }
    for (const u of kc.users) {
      if (u.name in config.users) continue;
      config.users[u.name] = mapPaths(u.user, USER_PATH_FIELDS, abs);
      origins.users[u.name] = file;
    }
    for (const c of kc.contexts) {
      if (c.name in config.contexts) continue;
      config.contexts[c.name] = { ...c.context };
      origins.contexts[c.name] = file;
    }
  }
  return { rules, config, origins };
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  }
  return v;
}

/**
 * The config after entering the workspace at `serverURL` (kcp `commitConfig`): cluster and context
 * `workspace.kcp.io/current` become copies of the current context's cluster (with `server`
 * replaced) and of the current context (pointing at that cluster); the old current context is kept
 * as `workspace.kcp.io/previous` — when it already used the `current` cluster, that cluster is
 * preserved as cluster `workspace.kcp.io/previous`; `current-context` becomes
 * `workspace.kcp.io/current`.
 *
 * @param currentContextName The context in use (the `--context` flag or `current-context`).
 * @throws {ConfigError} when that context or its cluster does not exist.
 */
export function commitWorkspace(config: WsConfig, currentContextName: string, serverURL: string): WsConfig {
  const currentContext = config.contexts[currentContextName];
  if (!currentContext) throw new ConfigError(`current ${JSON.stringify(currentContextName)} context not found`);
  const oldCluster = config.clusters[currentContext.cluster];
  if (!oldCluster) throw new ConfigError(`cluster ${JSON.stringify(currentContext.cluster)} not found in kubeconfig`);
  const next = clone(config);
  next.clusters[CURRENT_CONTEXT] = { ...clone(oldCluster), server: serverURL };
  next.contexts[CURRENT_CONTEXT] = { ...clone(currentContext), cluster: CURRENT_CONTEXT };
  let previous = clone(currentContext);
  if (currentContext.cluster === CURRENT_CONTEXT) {
    previous = { ...previous, cluster: PREVIOUS_CONTEXT };
    next.clusters[PREVIOUS_CONTEXT] = clone(oldCluster);
  }
  next.contexts[PREVIOUS_CONTEXT] = previous;
  next.currentContext = CURRENT_CONTEXT;
  return next;
}

/**
 * The config after `kubectl ws -` (kcp `swapContexts`): contexts `workspace.kcp.io/current` and
 * `workspace.kcp.io/previous` trade places, and so do the clusters of those names where the
 * contexts use them; `current-context` becomes `workspace.kcp.io/current`.
 *
 * @returns The new config and the server URL now current.
 * @throws {ConfigError} `no previous workspace found in kubeconfig`, or a missing cluster.
 */
export function swapWorkspaces(config: WsConfig, currentContextName: string): { config: WsConfig; server: string } {
  let currentContext = config.contexts[currentContextName];
  if (!currentContext) throw new ConfigError(`current ${JSON.stringify(currentContextName)} context not found`);
  let prev = config.contexts[PREVIOUS_CONTEXT];
  if (!prev) throw new ConfigError('no previous workspace found in kubeconfig');
  const next = clone(config);
  if (currentContext.cluster === CURRENT_CONTEXT) {
    const oldCluster = config.clusters[currentContext.cluster];
    if (!oldCluster) throw new ConfigError(`cluster ${JSON.stringify(currentContext.cluster)} not found in kubeconfig`);
    currentContext = { ...clone(currentContext), cluster: PREVIOUS_CONTEXT };
    next.clusters[PREVIOUS_CONTEXT] = clone(oldCluster);
  }
  if (prev.cluster === PREVIOUS_CONTEXT) {
    const prevCluster = config.clusters[prev.cluster];
    if (!prevCluster) throw new ConfigError(`cluster ${JSON.stringify(prev.cluster)} not found in kubeconfig`);
    prev = { ...clone(prev), cluster: CURRENT_CONTEXT };
    next.clusters[CURRENT_CONTEXT] = clone(prevCluster);
  }
  next.contexts[CURRENT_CONTEXT] = clone(prev);
  next.contexts[PREVIOUS_CONTEXT] = clone(currentContext);
  next.currentContext = CURRENT_CONTEXT;
  const server = next.clusters[next.contexts[CURRENT_CONTEXT]!.cluster]?.server;
  if (server === undefined) throw new ConfigError(`cluster ${JSON.stringify(prev.cluster)} not found in kubeconfig`);
  return { config: next, server };
}

type Section = 'clusters' | 'contexts' | 'users';
const LIST_FIELD = { clusters: 'cluster', contexts: 'context', users: 'user' } as const;

/**
 * Writes the differences between `loaded.config` and `next` to the kubeconfig files, as client-go's
 * `ModifyConfig` does (see the module comment for which file gets what). Files are created with
 * mode 0600 when they do not exist.
 */
export function modifyConfig(loaded: LoadedConfig, next: WsConfig): void {
  const { rules, config: start, origins } = loaded;
  const pending = new Map<string, Kubeconfig>();
  const fileFor = (path: string): Kubeconfig => {
    let kc = pending.get(path);
    if (!kc) {
      kc = existsSync(path) ? readFile(path) : readKubeconfig('');
      pending.set(path, kc);
    }
    return kc;
  };

  if (start.currentContext !== next.currentContext) {
    let target = rules.explicitPath;
    if (!target) {
      target = rules.precedence.find((f) => existsSync(f) && readFile(f)['current-context'] !== '') ?? defaultFilename(rules);
    }
    fileFor(target)['current-context'] = next.currentContext;
  }

  for (const section of ['clusters', 'contexts', 'users'] as const satisfies readonly Section[]) {
    const field = LIST_FIELD[section];
    const before = start[section] as Record<string, object>;
    const after = next[section] as Record<string, object>;
    for (const [name, entry] of Object.entries(after)) {
      if (name in before && equal(before[name], entry)) continue;
      const dest = origins[section][name] ?? defaultFilename(rules);
      const rel = (p: string): string => (isAbsolute(p) ? relativeTo(dest, p) : p);
      const value = section === 'clusters' ? mapPaths(entry, CLUSTER_PATH_FIELDS, rel)
        : section === 'users' ? mapPaths(entry, USER_PATH_FIELDS, rel) : entry;
      const list = fileFor(dest)[section] as unknown as { name: string; [k: string]: unknown }[];
      const i = list.findIndex((e) => e.name === name);
      const named = { name, [field]: value };
      if (i >= 0) list[i] = named;
      else list.push(named);
    }
    for (const name of Object.keys(before)) {
      if (name in after) continue;
      const origin = origins[section][name];
      if (!origin) continue;
      const kc = fileFor(origin);
      (kc as unknown as Record<Section, { name: string }[]>)[section] = kc[section].filter((e) => e.name !== name);
    }
  }

  for (const [path, kc] of pending) {
    for (const section of ['clusters', 'contexts', 'users'] as const) {
      (kc[section] as { name: string }[]).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    if (!existsSync(path)) mkdirSync(dirname(resolve(path)), { recursive: true });
    writeFileSync(path, serializeKubeconfig(kc), { mode: 0o600 });
  }
}

/** `p` relative to the directory of `file` when it lies below it (client-go `MakeRelative`), else `p`. */
function relativeTo(file: string, p: string): string {
  const rel = relative(dirname(resolve(file)), p);
  return rel.startsWith('..') || isAbsolute(rel) ? p : rel;
}

/** The connection overrides of kubectl's flags that kcp's plugin binds (client-go `ConfigOverrides`). */
export interface ConfigOverrides {
  context?: string;
  user?: string;
  namespace?: string;
  server?: string;
  token?: string;
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  username?: string;
  password?: string;
  proxyURL?: string;
  disableCompression?: boolean;
}

/** The effective connection of the context in use, after overrides. */
export interface ClientConfig {
  /** Name of the context in use (`''` when only `--server` is given). */
  contextName: string;
  /** Server URL (`rest.Config.Host`). */
  server: string;
  cluster: KubeconfigCluster;
  user: KubeconfigUser;
  /** Name of the user entry (`''` when none). */
  userName: string;
  namespace?: string;
}

/**
 * The connection kubectl would use (client-go `DirectClientConfig.ClientConfig` with overrides):
 * the context named by `--context` or `current-context`, its cluster and user, with the flag
 * overrides applied.
 *
 * @throws {ConfigError} with client-go's messages for a missing context, an empty configuration,
 *   or a cluster without server.
 */
export function clientConfig(config: WsConfig, overrides: ConfigOverrides): ClientConfig {
  const contextName = overrides.context ?? config.currentContext;
  let context: KubeconfigContext | undefined;
  if (contextName) {
    context = config.contexts[contextName];
    if (!context && overrides.context !== undefined) throw new ConfigError(`context was not found for specified context: ${contextName}`);
  }
  const clusterName = context?.cluster ?? '';
  const userName = overrides.user ?? context?.user ?? '';
  if (overrides.user !== undefined && !(overrides.user in config.users)) {
    throw new ConfigError(`auth info "${overrides.user}" does not exist`);
  }
  const cluster: KubeconfigCluster = { ...(config.clusters[clusterName] ?? { server: '' }) };
  const user: KubeconfigUser = { ...(config.users[userName] ?? {}) };
  if (overrides.server !== undefined) cluster.server = overrides.server;
  if (overrides.certificateAuthority !== undefined) {
    cluster['certificate-authority'] = resolve(overrides.certificateAuthority);
    delete cluster['certificate-authority-data'];
  }
  if (overrides.insecureSkipTlsVerify !== undefined) cluster['insecure-skip-tls-verify'] = overrides.insecureSkipTlsVerify;
  if (overrides.tlsServerName !== undefined) cluster['tls-server-name'] = overrides.tlsServerName;
  if (overrides.proxyURL !== undefined) cluster['proxy-url'] = overrides.proxyURL;
  if (overrides.disableCompression !== undefined) cluster['disable-compression'] = overrides.disableCompression;
  if (overrides.token !== undefined) { user.token = overrides.token; delete user.tokenFile; }
  if (overrides.username !== undefined) user.username = overrides.username;
  if (overrides.password !== undefined) user.password = overrides.password;
  if (!cluster.server) {
    if (!context && !overrides.server) {
      throw new ConfigError('invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable');
    }
    throw new ConfigError('invalid configuration: cluster has no server defined');
  }
  const out: ClientConfig = { contextName: contextName ?? '', server: cluster.server, cluster, user, userName };
  const ns = overrides.namespace ?? context?.namespace;
  if (ns !== undefined) out.namespace = ns;
  return out;
}
