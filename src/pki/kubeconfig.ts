/**
 * Kubeconfig files (`clientcmd/api/v1` `Config`) as kubectl reads and writes them.
 *
 * {@link buildKubeconfig} writes what `kubectl config set-cluster --embed-certs` /
 * `set-credentials --embed-certs` would: credentials embedded as base64 `*-data` fields, keys in
 * alphabetical order (kubectl marshals through JSON, so `apiVersion, clusters, contexts,
 * current-context, kind, preferences, users`), sequences not indented, and strings that YAML 1.1
 * (which client-go's YAML library follows) would read as booleans, numbers or null quoted.
 *
 * {@link readKubeconfig} parses such a file back, checks the fields it knows, and keeps unknown
 * fields (e.g. `exec`, `extensions`) untouched so a read-modify-write round trip loses nothing.
 * Field names and rules: k8s.io/client-go/tools/clientcmd/api/v1/types.go and
 * https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/.
 */
import { parseDocument, stringify, visit, type Document } from 'yaml';

/** Connection settings of one cluster (`clusters[].cluster`). */
export interface KubeconfigCluster {
  /** API server URL, e.g. `https://127.0.0.1:6443` or `https://host:6443/clusters/root`. */
  server: string;
  /** Base64 of the PEM CA bundle that verifies the server certificate. */
  'certificate-authority-data'?: string;
  /** Path of a PEM CA bundle file (alternative to `certificate-authority-data`). */
  'certificate-authority'?: string;
  /** Skip server certificate verification. */
  'insecure-skip-tls-verify'?: boolean;
  /** Server name used for SNI and certificate verification instead of the URL's host. */
  'tls-server-name'?: string;
  /** Proxy URL for requests to this cluster. */
  'proxy-url'?: string;
  /** Ask the server not to compress responses. */
  'disable-compression'?: boolean;
}

/** Credentials of one user (`users[].user`). */
export interface KubeconfigUser {
  /** Base64 of the PEM client certificate. */
  'client-certificate-data'?: string;
  /** Base64 of the PEM client private key. */
  'client-key-data'?: string;
  /** Path of a PEM client certificate file. */
  'client-certificate'?: string;
  /** Path of a PEM client key file. */
  'client-key'?: string;
  /** Bearer token. */
  token?: string;
  /** Path of a file holding a bearer token (note: camelCase in the real format). */
  tokenFile?: string;
  /** User to impersonate. */
  as?: string;
  /** UID to impersonate. */
  'as-uid'?: string;
  /** Groups to impersonate. */
  'as-groups'?: string[];
  /** Basic-auth user name. */
  username?: string;
  /** Basic-auth password. */
  password?: string;
}

/** One context (`contexts[].context`): which user talks to which cluster. */
export interface KubeconfigContext {
  /** Name of an entry of `clusters`. */
  cluster: string;
  /** Name of an entry of `users`. */
  user: string;
  /** Default namespace for namespaced requests. */
  namespace?: string;
}

/** `clusters[]` entry. */
export interface NamedCluster {
  name: string;
  cluster: KubeconfigCluster;
}

/** `users[]` entry. */
export interface NamedUser {
  name: string;
  user: KubeconfigUser;
}

/** `contexts[]` entry. */
export interface NamedContext {
  name: string;
  context: KubeconfigContext;
}

/**
 * A kubeconfig document. Objects returned by {@link readKubeconfig} may carry additional fields
 * this type does not list (`exec`, `auth-provider`, `extensions`, …); they are preserved.
 */
export interface Kubeconfig {
  apiVersion: 'v1';
  kind: 'Config';
  /** Legacy, always `{}` when written here. */
  preferences: Record<string, unknown>;
  clusters: NamedCluster[];
  users: NamedUser[];
  contexts: NamedContext[];
  /** Name of the context kubectl uses by default; `''` when none. */
  'current-context': string;
}

/** Input of {@link buildKubeconfig}. PEMs are embedded, not referenced by path. */
export interface BuildKubeconfigOptions {
  clusters: {
    /** Entry name, unique among clusters. */
    name: string;
    /** API server URL (`https://…` or `http://…`). */
    server: string;
    /** PEM CA bundle to trust; omitted means the system trust store. */
    caPem?: string;
    /** Skip server certificate verification (not allowed together with `caPem`, as in kubectl). */
    insecureSkipTlsVerify?: boolean;
    /** Override of the name verified in the server certificate. */
    tlsServerName?: string;
  }[];
  users: {
    /** Entry name, unique among users. */
    name: string;
    /** PEM client certificate; requires `keyPem`. */
    certPem?: string;
    /** PEM client private key; requires `certPem`. */
    keyPem?: string;
    /** Bearer token. */
    token?: string;
  }[];
  contexts: {
    /** Entry name, unique among contexts. */
    name: string;
    /** Name of one of `clusters`. */
    cluster: string;
    /** Name of one of `users`. */
    user: string;
    /** Default namespace. */
    namespace?: string;
  }[];
  /** Name of one of `contexts`, or `''` for none. */
  currentContext: string;
}

/** A context with its cluster and user looked up and the embedded data decoded. */
export interface ResolvedKubeconfigContext {
  contextName: string;
  clusterName: string;
  userName: string;
  namespace?: string;
  server: string;
  /** Decoded `certificate-authority-data`, if embedded. */
  caPem?: string;
  /** Decoded `client-certificate-data`, if embedded. */
  certPem?: string;
  /** Decoded `client-key-data`, if embedded. */
  keyPem?: string;
  token?: string;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
}

/** Error for a kubeconfig that cannot be built or read; `path` locates the offending field. */
export class KubeconfigError extends Error {
  constructor(
    message: string,
    /** Dotted path of the offending field, e.g. `users[1].user.client-key-data`; `''` for the file. */
    readonly path: string = '',
  ) {
    super(path ? `kubeconfig: ${path}: ${message}` : `kubeconfig: ${message}`);
    this.name = 'KubeconfigError';
  }
}

/**
 * Builds a kubeconfig YAML with embedded credentials, as kubectl writes it.
 *
 * @returns YAML text ending with a newline.
 * @throws {KubeconfigError} on an empty or duplicate name, a server that is not an http(s) URL, a
 *   user with only one of `certPem`/`keyPem`, a cluster with both `caPem` and
 *   `insecureSkipTlsVerify`, a context naming an unknown cluster or user, or a `currentContext`
 *   that names no context.
 */
export function buildKubeconfig(opts: BuildKubeconfigOptions): string {
  const clusters: NamedCluster[] = opts.clusters.map((c, i) => {
    const path = `clusters[${i}]`;
    checkName(c.name, `${path}.name`);
    checkServer(c.server, `${path}.cluster.server`);
    if (c.caPem !== undefined && c.insecureSkipTlsVerify) {
      throw new KubeconfigError('caPem and insecureSkipTlsVerify are mutually exclusive', path);
    }
    const cluster: KubeconfigCluster = { server: c.server };
    if (c.caPem !== undefined) cluster['certificate-authority-data'] = toBase64(c.caPem);
    if (c.insecureSkipTlsVerify) cluster['insecure-skip-tls-verify'] = true;
    if (c.tlsServerName !== undefined) cluster['tls-server-name'] = c.tlsServerName;
    return { name: c.name, cluster };
  });
  const users: NamedUser[] = opts.users.map((u, i) => {
    const path = `users[${i}]`;
    checkName(u.name, `${path}.name`);
    if ((u.certPem === undefined) !== (u.keyPem === undefined)) {
      throw new KubeconfigError('certPem and keyPem must be given together', path);
    }
    const user: KubeconfigUser = {};
    if (u.certPem !== undefined) user['client-certificate-data'] = toBase64(u.certPem);
    if (u.keyPem !== undefined) user['client-key-data'] = toBase64(u.keyPem);
    if (u.token !== undefined) user.token = u.token;
    return { name: u.name, user };
  });
  const contexts: NamedContext[] = opts.contexts.map((c, i) => {
    checkName(c.name, `contexts[${i}].name`);
    const context: KubeconfigContext = { cluster: c.cluster, user: c.user };
    if (c.namespace !== undefined) context.namespace = c.namespace;
    return { name: c.name, context };
  });
  const config: Kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters,
    users,
    contexts,
    'current-context': opts.currentContext,
  };
  checkReferences(config);
  return serializeKubeconfig(config);
}

/**
 * Serializes a kubeconfig object (e.g. one from {@link readKubeconfig}, modified) the way kubectl
 * writes it. Does not validate; use {@link buildKubeconfig} to construct new files.
 *
 * @returns YAML text ending with a newline.
 */
export function serializeKubeconfig(config: Kubeconfig): string {
  return stringify(config, {
    version: '1.1', // quote `yes`, `on`, `0123`, … which client-go's YAML 1.1 parser would not read as strings
    lineWidth: 0,
    indentSeq: false,
    sortMapEntries: true,
  });
}

/**
 * Parses kubeconfig YAML. Known string fields keep their text exactly as written, as client-go
 * decodes them into string fields (`name: 0123` is the string `0123`, `name: on` is `on`); known
 * boolean fields accept YAML 1.1 booleans (`true`, `yes`, `on`, …). An empty document is an empty
 * config. Unknown fields are kept as parsed.
 *
 * @returns The config with `apiVersion`, `kind`, `preferences`, the three lists and
 *   `current-context` always present.
 * @throws {KubeconfigError} on YAML syntax errors, a top level that is not a mapping, an
 *   `apiVersion` other than `v1` or `kind` other than `Config`, a list entry without a name or with a
 *   duplicate name (client-go rejects those too), a field of the wrong type, or `*-data` fields that
 *   are not valid base64. Dangling context references are allowed, as in kubectl.
 */
export function readKubeconfig(text: string): Kubeconfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) throw new KubeconfigError(`invalid YAML: ${doc.errors[0]!.message}`);
  const typed = doc.toJS({ maxAliasCount: 100 }) as unknown;
  const raw = sourceTextDocument(doc).toJS({ maxAliasCount: 100 }) as unknown;
  if (typed === null || typed === undefined) return emptyConfig();
  if (!isRecord(typed) || !isRecord(raw)) throw new KubeconfigError('top level must be a mapping');

  const apiVersion = optString(raw, 'apiVersion', 'apiVersion');
  if (apiVersion !== undefined && apiVersion !== '' && apiVersion !== 'v1') {
    throw new KubeconfigError(`unsupported apiVersion ${JSON.stringify(apiVersion)}`, 'apiVersion');
  }
  const kind = optString(raw, 'kind', 'kind');
  if (kind !== undefined && kind !== '' && kind !== 'Config') {
    throw new KubeconfigError(`unsupported kind ${JSON.stringify(kind)}`, 'kind');
  }
  const preferences = typed['preferences'] ?? {};
  if (!isRecord(preferences)) throw new KubeconfigError('must be a mapping', 'preferences');

  const clusters = readList(typed, raw, 'clusters', 'cluster', (t, r, path): KubeconfigCluster => {
    const out: Record<string, unknown> = { ...t };
    for (const key of ['server', 'certificate-authority', 'tls-server-name', 'proxy-url']) {
      assign(out, key, optString(r, key, `${path}.${key}`));
    }
    assign(out, 'certificate-authority-data', optBase64(r, 'certificate-authority-data', path));
    for (const key of ['insecure-skip-tls-verify', 'disable-compression']) {
      assign(out, key, optBool(t, key, `${path}.${key}`));
    }
    if (out['server'] === undefined) out['server'] = '';
    return out as unknown as KubeconfigCluster;
  });
  const users = readList(typed, raw, 'users', 'user', (t, r, path): KubeconfigUser => {
    const out: Record<string, unknown> = { ...t };
    for (const key of ['client-certificate', 'client-key', 'token', 'tokenFile', 'as', 'as-uid', 'username', 'password']) {
      assign(out, key, optString(r, key, `${path}.${key}`));
    }
    for (const key of ['client-certificate-data', 'client-key-data']) assign(out, key, optBase64(r, key, path));
    assign(out, 'as-groups', optStringList(r, 'as-groups', `${path}.as-groups`));
    return out as KubeconfigUser;
  });
  const contexts = readList(typed, raw, 'contexts', 'context', (t, r, path): KubeconfigContext => {
    const out: Record<string, unknown> = { ...t };
    for (const key of ['cluster', 'user', 'namespace']) assign(out, key, optString(r, key, `${path}.${key}`));
    if (out['cluster'] === undefined) out['cluster'] = '';
    if (out['user'] === undefined) out['user'] = '';
    return out as unknown as KubeconfigContext;
  });

  const config: Record<string, unknown> = {
    ...typed,
    apiVersion: 'v1',
    kind: 'Config',
    preferences,
    clusters,
    users,
    contexts,
    'current-context': optString(raw, 'current-context', 'current-context') ?? '',
  };
  return config as unknown as Kubeconfig;
}

/**
 * Looks up a context with its cluster and user and decodes the embedded PEM data.
 *
 * @param config A parsed kubeconfig.
 * @param contextName Context to resolve; default `current-context`.
 * @throws {KubeconfigError} if no context is selected, or the context, its cluster or its user does
 *   not exist.
 */
export function resolveKubeconfigContext(
  config: Kubeconfig,
  contextName: string = config['current-context'],
): ResolvedKubeconfigContext {
  if (!contextName) throw new KubeconfigError('no context selected (current-context is empty)');
  const ctx = config.contexts.find((c) => c.name === contextName);
  if (!ctx) throw new KubeconfigError(`context ${JSON.stringify(contextName)} not found`);
  const cluster = config.clusters.find((c) => c.name === ctx.context.cluster);
  if (!cluster) throw new KubeconfigError(`cluster ${JSON.stringify(ctx.context.cluster)} not found`);
  const user = config.users.find((u) => u.name === ctx.context.user);
  if (!user) throw new KubeconfigError(`user ${JSON.stringify(ctx.context.user)} not found`);
  const c = cluster.cluster;
  const u = user.user;
  const resolved: ResolvedKubeconfigContext = {
    contextName,
    clusterName: cluster.name,
    userName: user.name,
    server: c.server,
    insecureSkipTlsVerify: c['insecure-skip-tls-verify'] ?? false,
  };
  if (ctx.context.namespace !== undefined) resolved.namespace = ctx.context.namespace;
  if (c['certificate-authority-data'] !== undefined) resolved.caPem = fromBase64(c['certificate-authority-data']);
  if (c['tls-server-name'] !== undefined) resolved.tlsServerName = c['tls-server-name'];
  if (u['client-certificate-data'] !== undefined) resolved.certPem = fromBase64(u['client-certificate-data']);
  if (u['client-key-data'] !== undefined) resolved.keyPem = fromBase64(u['client-key-data']);
  if (u.token !== undefined) resolved.token = u.token;
  return resolved;
}

// ---------------------------------------------------------------------------------------------
// internals

function emptyConfig(): Kubeconfig {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [],
    users: [],
    contexts: [],
    'current-context': '',
  };
}

function toBase64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function fromBase64(data: string): string {
  return Buffer.from(data.replace(/[\r\n]/g, ''), 'base64').toString('utf8');
}

function checkName(name: unknown, path: string): void {
  if (typeof name !== 'string' || name === '') throw new KubeconfigError('must be a non-empty string', path);
}

function checkServer(server: unknown, path: string): void {
  let url: URL;
  try {
    url = new URL(String(server));
  } catch {
    throw new KubeconfigError(`${JSON.stringify(server)} is not a URL`, path);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new KubeconfigError(`${JSON.stringify(server)} must be an http(s) URL`, path);
  }
}

function checkReferences(config: Kubeconfig): void {
  const unique = (names: string[], list: string): Set<string> => {
    const seen = new Set<string>();
    names.forEach((n, i) => {
      if (seen.has(n)) throw new KubeconfigError(`duplicate name ${JSON.stringify(n)}`, `${list}[${i}].name`);
      seen.add(n);
    });
    return seen;
  };
  const clusters = unique(config.clusters.map((c) => c.name), 'clusters');
  const users = unique(config.users.map((u) => u.name), 'users');
  const contexts = unique(config.contexts.map((c) => c.name), 'contexts');
  config.contexts.forEach((c, i) => {
    if (!clusters.has(c.context.cluster)) {
      throw new KubeconfigError(`unknown cluster ${JSON.stringify(c.context.cluster)}`, `contexts[${i}].context.cluster`);
    }
    if (!users.has(c.context.user)) {
      throw new KubeconfigError(`unknown user ${JSON.stringify(c.context.user)}`, `contexts[${i}].context.user`);
    }
  });
  const current = config['current-context'];
  if (current !== '' && !contexts.has(current)) {
    throw new KubeconfigError(`unknown context ${JSON.stringify(current)}`, 'current-context');
  }
}

/**
 * A copy of `doc` in which every plain scalar that YAML resolved to a non-string (number, boolean)
 * is replaced by its source text, so string fields read as client-go would read them.
 */
function sourceTextDocument(doc: Document): Document {
  const copy = doc.clone();
  visit(copy, {
    Scalar(_key, node) {
      if (node.value !== null && typeof node.value !== 'string' && typeof node.source === 'string') {
        node.value = node.source;
      }
    },
  });
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function assign(out: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) delete out[key];
  else out[key] = value;
}

/**
 * Reads one of the three named lists. `typed` and `raw` are the same document parsed with YAML
 * types and with source text for plain scalars; both have the same shape.
 */
function readList<T>(
  typed: Record<string, unknown>,
  raw: Record<string, unknown>,
  list: 'clusters' | 'users' | 'contexts',
  field: 'cluster' | 'user' | 'context',
  readBody: (t: Record<string, unknown>, r: Record<string, unknown>, path: string) => T,
): { name: string; [field: string]: unknown }[] {
  const tl = typed[list];
  const rl = raw[list];
  if (tl === undefined || tl === null) return [];
  if (!Array.isArray(tl) || !Array.isArray(rl)) throw new KubeconfigError('must be a list', list);
  const seen = new Set<string>();
  return tl.map((te: unknown, i) => {
    const re: unknown = rl[i];
    const path = `${list}[${i}]`;
    if (!isRecord(te) || !isRecord(re)) throw new KubeconfigError('must be a mapping', path);
    const name = optString(re, 'name', `${path}.name`);
    if (name === undefined || name === '') throw new KubeconfigError('name is required', `${path}.name`);
    if (seen.has(name)) throw new KubeconfigError(`duplicate name ${JSON.stringify(name)}`, `${path}.name`);
    seen.add(name);
    const tb = te[field] ?? {};
    const rb = re[field] ?? {};
    if (!isRecord(tb) || !isRecord(rb)) throw new KubeconfigError('must be a mapping', `${path}.${field}`);
    return { ...te, name, [field]: readBody(tb, rb, `${path}.${field}`) };
  });
}

function optString(obj: Record<string, unknown>, key: string, path: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new KubeconfigError('must be a string', path);
  return v;
}

function optStringList(obj: Record<string, unknown>, key: string, path: string): string[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new KubeconfigError('must be a list of strings', path);
  }
  return v as string[];
}

const YAML11_TRUE = new Set(['true', 'True', 'TRUE', 'yes', 'Yes', 'YES', 'y', 'Y', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['false', 'False', 'FALSE', 'no', 'No', 'NO', 'n', 'N', 'off', 'Off', 'OFF']);

function optBool(obj: Record<string, unknown>, key: string, path: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && YAML11_TRUE.has(v)) return true;
  if (typeof v === 'string' && YAML11_FALSE.has(v)) return false;
  throw new KubeconfigError('must be a boolean', path);
}

function optBase64(obj: Record<string, unknown>, key: string, parent: string): string | undefined {
  const path = `${parent}.${key}`;
  const v = optString(obj, key, path);
  if (v === undefined) return undefined;
  const compact = v.replace(/[\r\n]/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw new KubeconfigError('must be standard base64', path);
  }
  return v;
}
