/**
 * The `kubectl ws` plugin (npm bin `kubectl-ws`): navigates, shows, lists and creates kcp
 * workspaces by rewriting the kubeconfig, as kcp's own plugin does (kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli`, `pkg/workspace/cmd/cmd.go` and `pkg/workspace/plugin/`).
 *
 * ```
 * kubectl ws [<path>|.|..|-|:|~]     enter a workspace (no argument: the home workspace)
 * kubectl ws use|cd <path>           the same
 * kubectl ws current [--short]       print the current workspace (same as `kubectl ws .`)
 * kubectl ws tree [-f] [--wide]      print the workspaces below the current one
 * kubectl ws create <name> [--type <[path:]type>] [--enter] [--ignore-existing]
 *                                    [--location-selector <sel>] [--create-context <ctx>]
 * kubectl ws create-context [<name>] [--overwrite]
 * ```
 *
 * Entering a workspace points the context `workspace.kcp.io/current` (and its cluster of the same
 * name) at `<server base>/clusters/<path>` and keeps the context used before as
 * `workspace.kcp.io/previous`, for `kubectl ws -`.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { labelSelectorToMetav1, parseLabelSelector } from '../apimachinery/labels.js';
import { COMMANDS, parseArgs, UsageError, type ParsedArgs } from './ws/args.js';
import { CONNECTION_HELP, connectionOverrides } from './pflag.js';
import { KcpClient } from './ws/client.js';
import { StatusError, isStatus } from '../apimachinery/errors.js';
import {
  clientConfig,
  commitWorkspace,
  ConfigError,
  loadConfig,
  loadingRules,
  modifyConfig,
  swapWorkspaces,
  type ClientConfig,
  type ConfigOverrides,
  type LoadedConfig,
  type WsConfig,
} from './ws/kubeconfig.js';
import {
  baseOf,
  currentWorkspaceMessage,
  formatType,
  joinPath,
  parentOf,
  parseClusterURL,
  parseUseArgument,
  resolveTargetPath,
  rootOf,
  ROOT,
  WorkspacePathError,
  workspaceURL,
  type WorkspaceTypeRef,
} from './ws/paths.js';
import { alignTabs, renderTree, type TreeNode } from './ws/tree.js';

/** Where the plugin writes and which environment it reads (injectable for tests). */
export interface WsIO {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
}

/** Options of {@link kubectlWs} beyond the IO. */
export interface WsOptions {
  /** How long `create` waits for `Ready` (kcp: one minute, no flag). */
  readyTimeoutMs?: number;
  /** Poll interval while waiting for `Ready` (kcp: 500 ms). */
  readyPollMs?: number;
  /** Run as the `kubectl create workspace` plugin: `create` is not deprecated there. */
  asCreateWorkspace?: boolean;
}

const WORKSPACES = (path: string): string => `/clusters/${encodePath(path)}/apis/tenancy.kcp.io/v1alpha1/workspaces`;

function encodePath(path: string): string {
  return path.split(':').map(encodeURIComponent).join(':');
}

/** The subset of a Workspace the plugin reads. */
interface Workspace {
  metadata: { name: string; deletionTimestamp?: string };
  spec?: { type?: WorkspaceTypeRef; URL?: string; cluster?: string; mount?: unknown };
  status?: { phase?: string };
}

/** Error printed as `Error: <message>` with exit code 1. */
class CommandError extends Error {}

/** The state shared by the commands of one invocation. */
class Session {
  readonly loaded: LoadedConfig;
  readonly overrides: ConfigOverrides;
  private cfg?: ClientConfig;
  private clientInstance?: KcpClient;

  constructor(readonly io: WsIO, readonly flags: ParsedArgs, readonly opts: WsOptions) {
    this.loaded = loadConfig(loadingRules(flags.strings['kubeconfig'], io.env));
    this.overrides = connectionOverrides(flags);
  }

  /** The effective connection (client-go `ClientConfig()`). */
  get config(): ClientConfig {
    this.cfg ??= clientConfig(this.loaded.config, this.overrides);
    return this.cfg;
  }

  /** A client for the server of the current context, path removed (kcp `newKCPClusterClient`). */
  get client(): KcpClient {
    this.clientInstance ??= new KcpClient(this.config);
    return this.clientInstance;
  }

  /** Name of the context in use: `--context` or the kubeconfig's `current-context`. */
  get currentContextName(): string {
    return this.overrides.context ?? this.loaded.config.currentContext;
  }

  get short(): boolean {
    return this.flags.bools['short'] === true;
  }

  out(text: string): void { if (text) this.io.stdout(text); }
  err(text: string): void { if (text) this.io.stderr(text); }

  /** The current workspace path, or the error kcp gives when the URL names none. */
  currentPath(): { base: URL; path: string } {
    const parsed = parseClusterURL(this.config.server);
    if (!parsed) throw new CommandError(`current URL ${JSON.stringify(this.config.server)} does not point to a workspace`);
    return parsed;
  }

  /** Writes `next` to the kubeconfig files. */
  save(next: WsConfig): void {
    modifyConfig(this.loaded, next);
  }
}

/**
 * Runs the plugin with `argv` (the arguments after `kubectl ws`).
 *
 * @returns The process exit code: 0 on success, 1 on any error (printed as one `Error: …` line on
 *   stderr, as cobra prints the error of kcp's commands).
 */
export async function kubectlWs(argv: string[], io: WsIO = processIO(), opts: WsOptions = {}): Promise<number> {
  try {
    const flags = parseArgs(argv);
    if (flags.bools['help']) { io.stdout(usage(flags.command)); return 0; }
    if (flags.bools['version']) { io.stdout(`kubectl-ws version ${packageVersion()}\n`); return 0; }
    const session = new Session(io, flags, opts);
    switch (flags.command) {
      case '': {
        if (flags.bools['interactive']) {
          if (flags.args.length !== 0) throw new CommandError('interactive mode does not accept arguments');
          throw new CommandError('interactive mode is not supported by this kubectl-ws; use "kubectl ws tree"');
        }
        if (flags.args.length > 1) throw new UsageError(`accepts at most 1 arg(s), received ${flags.args.length}`);
        await use(session, flags.args[0] ?? '');
        break;
      }
      case 'use':
        if (flags.args.length !== 1) throw new UsageError(`accepts 1 arg(s), received ${flags.args.length}`);
        await use(session, flags.args[0]!);
        break;
      case 'current':
        if (flags.args.length !== 0) throw new UsageError(`unknown command ${JSON.stringify(flags.args[0])} for "workspace current"`);
        session.out(currentWorkspaceMessage(session.config.server, session.short));
        break;
      case 'tree':
        if (flags.args.length !== 0) throw new UsageError(`unknown command ${JSON.stringify(flags.args[0])} for "workspace tree"`);
        await tree(session);
        break;
      case 'create':
        if (flags.args.length !== 1) throw new UsageError(`accepts 1 arg(s), received ${flags.args.length}`);
        // kcp marks `kubectl ws create` deprecated in favour of the `kubectl create workspace` plugin.
        if (!opts.asCreateWorkspace) io.stderr(`Command "create" is deprecated, install the 'kubectl create workspace' plugin instead, compare https://docs.kcp.io/kcp/latest/setup/kubectl-plugin/.\n`);
        await create(session, flags.args[0]!);
        break;
      case 'create-context':
        if (flags.args.length > 1) throw new UsageError(`accepts at most 1 arg(s), received ${flags.args.length}`);
        createContext(session, { name: flags.args[0] ?? '', overwrite: flags.bools['overwrite'] === true, keepCurrent: false });
        break;
    }
    return 0;
  } catch (err) {
    if (err instanceof CommandError || err instanceof UsageError || err instanceof ConfigError || err instanceof StatusError || err instanceof WorkspacePathError) {
      io.stderr(`Error: ${err.message}\n`);
      return 1;
    }
    io.stderr(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

/**
 * Runs the `kubectl create workspace` plugin (`kubectl-create-workspace`, kcp's successor of
 * `kubectl ws create`) with `argv`, the arguments after `kubectl create workspace`: the same
 * flags and behaviour as `kubectl ws create`. Returns the exit code.
 */
export function kubectlCreateWorkspace(argv: string[], io: WsIO = processIO(), opts: WsOptions = {}): Promise<number> {
  return kubectlWs(['create', ...argv], io, { ...opts, asCreateWorkspace: true });
}

/** The IO of the running process. */
export function processIO(): WsIO {
  return {
    stdout: (t) => { process.stdout.write(t); },
    stderr: (t) => { process.stderr.write(t); },
    env: process.env,
  };
}

// ---------------------------------------------------------------------------------------------
// use (kcp UseWorkspaceOptions.Run)

async function use(s: Session, arg: string): Promise<void> {
  const homeDir = s.io.env['HOME'] || homedir();
  const { target, notes } = parseUseArgument(arg, homeDir, s.short);
  for (const n of notes) if (n.when === 'before') s.err(`${n.text}\n`);

  // kcp builds its client first, so an unusable configuration is reported before anything else.
  void s.config;
  const ctxName = s.currentContextName;
  if (!s.loaded.config.contexts[ctxName]) throw new CommandError(`current ${JSON.stringify(ctxName)} context not found`);

  switch (target.kind) {
    case 'previous': {
      const { config, server } = swapWorkspaces(s.loaded.config, ctxName);
      s.save(config);
      s.out(currentWorkspaceMessage(server, s.short));
      break;
    }
    case 'root': {
      const { base, path } = s.currentPath();
      commit(s, ctxName, workspaceURL(base, rootOf(path)));
      break;
    }
    case 'current':
      s.out(currentWorkspaceMessage(s.config.server, s.short));
      break;
    case 'home': {
      const home = await homePath(s);
      await enter(s, ctxName, `${home}${target.rest}`, true, arg);
      break;
    }
    case 'path':
      await enter(s, ctxName, target.path, target.absolute, arg);
      break;
  }
  for (const n of notes) if (n.when === 'after') s.err(`${n.text}\n`);
}

/** The path of the caller's home workspace, from the `spec.URL` of root's Workspace `~`. */
async function homePath(s: Session): Promise<string> {
  const ws = await s.client.get<Workspace>(`${WORKSPACES(ROOT)}/~`);
  const url = ws.spec?.URL ?? '';
  let pathname: string;
  try { pathname = new URL(url).pathname; } catch { throw new CommandError(`invalid home workspace URL ${JSON.stringify(url)}`); }
  return decodeURIComponent(pathname.replace(/^\/clusters\//, ''));
}

async function enter(s: Session, ctxName: string, path: string, absolute: boolean, arg: string): Promise<void> {
  const { base, path: current } = s.currentPath();
  const name = absolute ? path : joinPath(current, path);
  const resolved = resolveTargetPath({ path, absolute }, current, arg);

  // The workspace exists for the caller when discovery in it answers (kcp: ServerGroups).
  let groups = 0;
  const p = `/clusters/${encodePath(resolved)}`;
  for (const [suffix, count] of [['/api', (b: any) => (b?.versions?.length ? 1 : 0)], ['/apis', (b: any) => b?.groups?.length ?? 0]] as const) {
    try { groups += count(await s.client.get(p + suffix)); } catch (err) {
      if (!isStatus(err, 403, 404)) throw err;
    }
  }
  const denied = groups === 0;

  // The parent's Workspace gives the type; a 404 there means the workspace does not exist.
  let type: WorkspaceTypeRef | undefined;
  let notFound = false;
  if (resolved === ROOT) type = { name: ROOT };
  else {
    // As kcp, the lookup uses the path as written: with `.`/`..` segments in it there is no valid
    // Workspace request (client-go refuses such names), so no type and no "not found".
    const parent = parentOf(name);
    const wsName = baseOf(name);
    if (parent !== undefined && wsName !== '' && !name.split(':').some((seg) => seg === '.' || seg === '..')) {
      try {
        type = (await s.client.get<Workspace>(`${WORKSPACES(parent)}/${encodeURIComponent(wsName)}`)).spec?.type;
      } catch (err) {
        if (isStatus(err, 404)) notFound = true;
      }
    }
  }
  if (denied && notFound) throw new CommandError(`workspace ${JSON.stringify(name)} not found`);
  if (denied) throw new CommandError(`access to workspace ${JSON.stringify(name)} denied`);
  commit(s, ctxName, workspaceURL(base, resolved), type);
}

/** Points the current workspace context at `url` and prints it (kcp `commitConfig`). */
function commit(s: Session, ctxName: string, url: string, type?: WorkspaceTypeRef): void {
  s.save(commitWorkspace(s.loaded.config, ctxName, url));
  s.out(currentWorkspaceMessage(url, s.short, type));
}

// ---------------------------------------------------------------------------------------------
// tree (kcp TreeOptions.Run / populateBranch)

async function tree(s: Session): Promise<void> {
  const parsed = parseClusterURL(s.config.server);
  if (!parsed) {
    s.out(`current context URL ${JSON.stringify(s.config.server)} does not point directly to a kcp workspace\n`);
    return;
  }
  if (s.flags.bools['interactive']) throw new CommandError('interactive mode is not supported by this kubectl-ws');
  const full = s.flags.bools['full'] === true;
  const wide = s.flags.bools['wide'] === true;
  const current = parsed.path;
  const name = full ? current : current.slice(current.lastIndexOf(':') + 1);
  const label = wide ? await wideLabel(s, name, current, '') : name;
  const root: TreeNode = { label, children: await branch(s, current, name, full, wide) };
  const text = renderTree([root]);
  s.out(wide ? alignTabs(text) : `${text}\n`);
}

async function branch(s: Session, parent: string, parentName: string, full: boolean, wide: boolean): Promise<TreeNode[]> {
  let list: { items?: Workspace[] };
  try { list = await s.client.get(WORKSPACES(parent)); } catch (err) {
    if (isStatus(err, 404)) return [];
    throw err;
  }
  const nodes: TreeNode[] = [];
  for (const ws of list.items ?? []) {
    if (ws.metadata.deletionTimestamp) continue;
    const name = full ? `${parentName}:${ws.metadata.name}` : ws.metadata.name;
    if (ws.spec?.mount) { nodes.push({ label: `${name} [m]`, children: [] }); continue; }
    const child = parseClusterURL(ws.spec?.URL ?? '');
    if (!child) throw new CommandError(`current config context URL ${JSON.stringify(ws.spec?.URL ?? '')} does not point to workspace`);
    const label = wide ? await wideLabel(s, name, child.path, ws.status?.phase ?? '') : name;
    nodes.push({ label, children: await branch(s, child.path, name, full, wide) });
  }
  return nodes;
}

/** `<name>\tws=<phase>\tlc=<phase>` (kcp `formatWideName`). */
async function wideLabel(s: Session, name: string, path: string, wsPhase: string): Promise<string> {
  let lcPhase = 'Unknown';
  try {
    const lc = await s.client.get<{ status?: { phase?: string } }>(`/clusters/${encodePath(path)}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`);
    if (lc.status?.phase) lcPhase = lc.status.phase;
  } catch { /* Unknown */ }
  return `${name}\tws=${wsPhase || '-'}\tlc=${lcPhase}`;
}

// ---------------------------------------------------------------------------------------------
// create (kcp CreateWorkspaceOptions.Run)

async function create(s: Session, name: string): Promise<void> {
  const locationSelector = s.flags.strings['location-selector'] ?? '';
  let selector;
  try { selector = locationSelector ? labelSelectorToMetav1(parseLabelSelector(locationSelector)) : undefined; } catch (err) {
    throw new CommandError(`invalid location selector: ${(err as Error).message}`);
  }
  const { path: current } = s.currentPath();
  const typeFlag = s.flags.strings['type'] ?? '';
  const ignoreExisting = s.flags.bools['ignore-existing'] === true;
  if (ignoreExisting && typeFlag !== '' && !(typeFlag === ROOT || typeFlag.startsWith(`${ROOT}:`))) {
    throw new CommandError('--ignore-existing must not be used with non-absolute type path');
  }
  let type: WorkspaceTypeRef | undefined;
  if (typeFlag !== '') {
    const i = typeFlag.lastIndexOf(':');
    // Without a path the server defaults it (admission); the name is lower-cased as in kcp.
    type = i < 0 ? { name: typeFlag.toLowerCase() } : { name: typeFlag.slice(i + 1).toLowerCase(), path: typeFlag.slice(0, i) };
  }
  const body = {
    apiVersion: 'tenancy.kcp.io/v1alpha1',
    kind: 'Workspace',
    metadata: { name },
    spec: { ...(type ? { type } : {}), ...(selector ? { location: { selector } } : {}) },
  };
  let preExisting = false;
  let ws: Workspace;
  try { ws = await s.client.post<Workspace>(WORKSPACES(current), body); } catch (err) {
    if (!(ignoreExisting && isStatus(err, 409))) throw err;
    preExisting = true;
    ws = await s.client.get<Workspace>(`${WORKSPACES(current)}/${encodeURIComponent(name)}`);
  }
  const actualType = ws.spec?.type ?? { name: '' };
  const ref = `Workspace ${JSON.stringify(name)} (type ${formatType(actualType)})`;
  const ready = (w: Workspace): boolean => w.status?.phase === 'Ready';
  if (preExisting) {
    if (type && ((actualType.name !== '' && actualType.name !== type.name) || (actualType.path ?? '') !== (type.path ?? ''))) {
      throw new CommandError(`workspace ${JSON.stringify(name)} cannot be created with type ${formatType(type)}, it already exists with different type ${formatType(actualType)}`);
    }
    s.out(ready(ws) ? `${ref} already exists.\n` : `${ref} already exists. Waiting for it to be ready...\n`);
  } else if (!ready(ws)) {
    s.out(`${ref} created. Waiting for it to be ready...\n`);
  }

  const timeoutMs = s.opts.readyTimeoutMs ?? 60_000;
  const pollMs = s.opts.readyPollMs ?? 500;
  const deadline = Date.now() + timeoutMs;
  while (!ready(ws)) {
    if (Date.now() >= deadline) {
      throw new CommandError(`workspace ${JSON.stringify(name)} is not ready after ${Math.round(timeoutMs / 1000)}s (phase ${JSON.stringify(ws.status?.phase ?? '')})`);
    }
    await new Promise((r) => setTimeout(r, pollMs));
    ws = await s.client.get<Workspace>(`${WORKSPACES(current)}/${encodeURIComponent(name)}`);
  }
  s.out(`${ref} is ready to use.\n`);

  const contextName = s.flags.strings['create-context'];
  const enterAfter = s.flags.bools['enter'] === true;
  if (contextName !== undefined && contextName !== '') {
    createContext(s, { name: contextName, clusterURL: ws.spec?.URL ?? '', overwrite: ignoreExisting, keepCurrent: !enterAfter });
    return;
  }
  if (enterAfter) await use(s, ws.metadata.name);
}

// ---------------------------------------------------------------------------------------------
// create-context (kcp CreateContextOptions.Run)

function createContext(s: Session, o: { name: string; clusterURL?: string; overwrite: boolean; keepCurrent: boolean }): void {
  const config = s.loaded.config;
  const ctxName = s.currentContextName;
  const currentContext = config.contexts[ctxName];
  if (!currentContext) throw new CommandError(`current context ${JSON.stringify(ctxName)} is not found in kubeconfig`);
  const currentCluster = config.clusters[currentContext.cluster];
  if (!currentCluster) throw new CommandError(`current cluster ${JSON.stringify(currentContext.cluster)} is not found in kubeconfig`);
  const parsed = parseClusterURL(currentCluster.server);
  if (!parsed) throw new CommandError(`current URL ${JSON.stringify(currentCluster.server)} does not point to a workspace`);
  const name = o.name || parsed.path;
  const existedBefore = name in config.contexts;
  if (existedBefore && !o.overwrite) throw new CommandError(`context ${JSON.stringify(name)} already exists in kubeconfig, use --overwrite to update it`);
  const next: WsConfig = structuredClone(config);
  next.clusters[name] = { ...structuredClone(currentCluster), ...(o.clusterURL ? { server: o.clusterURL } : {}) };
  next.contexts[name] = { ...structuredClone(currentContext), cluster: name };
  next.currentContext = o.keepCurrent ? config.currentContext : name;
  s.save(next);
  const verb = existedBefore ? 'Updated' : 'Created';
  s.out(o.keepCurrent || config.currentContext === name ? `${verb} context ${JSON.stringify(name)}.\n` : `${verb} context ${JSON.stringify(name)} and switched to it.\n`);
}

// ---------------------------------------------------------------------------------------------

function packageVersion(): string {
  try {
    // src/cli/ when run from the sources, dist/src/cli/ when built.
    const up = import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json';
    const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '<unknown>';
  } catch { return '<unknown>'; }
}


/** Help text of a command. */
function usage(command: string): string {
  const known = Object.values(COMMANDS);
  const cmd = known.includes(command) ? command : '';
  const texts: Record<string, string> = {
    '': `Manages kcp workspaces: enter, show, list and create them.

Usage:
  kubectl ws [<workspace>|..|.|-|~|:|<:root:absolute:workspace>] [--short]
  kubectl ws [command]

Paths: a relative path (team, team:sub) starts at the current workspace, an absolute one at
':root'. '..' is the parent, '.' the current workspace, '-' the previous one, '~' the home
workspace, ':' the root of the current tree. Without argument: the home workspace.

Commands:
  use <workspace>       Enter the given workspace (alias: cd)
  current [--short]     Print the current workspace (same as 'kubectl ws .')
  tree [-f] [--wide]    Print the tree of workspaces below the current one
  create <name>         Create a workspace [--type <[path:]type>] [--enter] [--ignore-existing]
                        [--location-selector <selector>] [--create-context <context>]
  create-context [<name>] [--overwrite]
                        Create a kubeconfig context for the current workspace

`,
    use: 'Usage:\n  kubectl ws use <workspace>|..|.|-|~|:|<:root:absolute:workspace>|<relative:workspace> [--short]\n\n',
    current: 'Usage:\n  kubectl ws current [--short]\n\n',
    tree: 'Usage:\n  kubectl ws tree [-f|--full] [--wide]\n\n',
    create: 'Usage:\n  kubectl ws create <name> [--type <[path:]type>] [--enter] [--ignore-existing] [--location-selector <selector>] [--create-context <context>]\n\nWaits up to one minute until the workspace is Ready.\n\n',
    'create-context': 'Usage:\n  kubectl ws create-context [<context-name>] [--overwrite]\n\n',
  };
  return texts[cmd]! + CONNECTION_HELP;
}
