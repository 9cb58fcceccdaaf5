/**
 * `kubectl kcp workload sync <synctarget name> --syncer-image IMAGE -o syncer.yaml`, as kcp's
 * (github kcp-dev/contrib-tmc pkg/cliplugins/workload/plugin sync.go and syncer.yaml):
 *
 * In the current workspace it creates (or updates) the SyncTarget (`--labels`,
 * `spec.supportedAPIExports` from `--apiexports`, plus the workspace's `kubernetes` export when
 * `--resources` is given), and for the syncer — id `kcp-syncer-<name>-<8 base 36 chars of the
 * SyncTarget's uid hash>` (names.ts `syncerID`) — a ServiceAccount in `--kcp-namespace` (default
 * `default`), a ClusterRole with kcp's rules (verb `sync` on the SyncTarget, read and update of it
 * and its status, `apiresourceimports`, access to the workspace) and its ClusterRoleBinding, all
 * owned by the SyncTarget. Then it writes the manifest for the physical cluster: Namespace (`-n`,
 * default the syncer id), ServiceAccount, its token Secret, a ClusterRole for the synced resources
 * (`secrets`, `configmaps` and `--resources` with every verb, namespaces, CRDs, …) and its binding,
 * the DNS Role and RoleBinding of kcp's format, the kubeconfig Secret (kcp's URL, CA and the
 * service account's token) and the Deployment running `kcp-ts syncer` with kcp's flags.
 *
 * Differences from kcp: the token is a TokenRequest token valid one year (kcp-ts issues no legacy
 * token Secrets; kcp waits for one); the Deployment runs `kcp-ts syncer` (the image's entrypoint)
 * instead of `/ko-app/syncer`; the `kubernetes` APIExport itself is left to API negotiation, which
 * creates and fills it.
 */
import { writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { StatusError } from '../../apimachinery/errors.js';
import { syncerID } from '../../syncer/names.js';
import type { KcpClient } from '../ws/client.js';
import type { ClientConfig } from '../ws/kubeconfig.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './args.js';

/** Flags of `kubectl kcp workload sync` (kcp `SyncOptions.BindFlags`). */
export const SYNC_FLAGS: FlagSpec[] = [
  { name: 'resources', type: 'strings' },
  { name: 'apiexports', type: 'strings' },
  { name: 'syncer-image', type: 'string' },
  { name: 'replicas', type: 'string' },
  { name: 'kcp-namespace', type: 'string' },
  { name: 'output-file', short: 'o', type: 'string' },
  { name: 'qps', type: 'string' },
  { name: 'burst', type: 'string' },
  { name: 'feature-gates', type: 'string' },
  { name: 'api-import-poll-interval', type: 'duration' },
  { name: 'downstream-namespace-clean-delay', type: 'duration' },
  { name: 'labels', type: 'strings' },
];

/** Longest SyncTarget name (kcp `MaxSyncTargetNameLength`: 253 − (9 + len("kcp-syncer-"))). */
export const MAX_SYNC_TARGET_NAME_LENGTH = 253 - (9 + 'kcp-syncer-'.length);

/** The `kubernetes` APIExport: the one API negotiation fills (contrib-tmc `ImportedAPISExportName`). */
export const IMPORTED_APIS_EXPORT_NAME = 'kubernetes';

/** Lifetime of the syncer's token (one year). */
export const SYNCER_TOKEN_SECONDS = 365 * 24 * 3600;

/** Validated options of one `workload sync`. */
export interface SyncOptions {
  syncTargetName: string;
  resources: string[];
  apiExports: string[];
  syncerImage: string;
  replicas: number;
  kcpNamespace: string;
  outputFile: string;
  /** Namespace of the syncer downstream (default: the syncer id). */
  downstreamNamespace: string;
  qps: number;
  burst: number;
  featureGates: string;
  apiImportPollIntervalMs: number;
  downstreamNamespaceCleanDelayMs: number;
  labels: Record<string, string>;
}

/** Go's `time.Duration.String()` for whole milliseconds (`1m0s`, `30s`, `500ms`). */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const sec = Number.isInteger(s) ? String(s) : String(Number(s.toFixed(3)));
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${sec}s`;
}

/**
 * The options of `workload sync <name>` from parsed flags (kcp's defaults and `Validate`).
 * @throws {UsageError} with kcp's messages
 */
export function syncOptions(flags: ParsedFlags, args: string[]): SyncOptions {
  if (args.length !== 1) throw new UsageError('a sync target name is required');
  const name = args[0]!;
  const errs: string[] = [];
  const syncerImage = flags.strings['syncer-image'] ?? '';
  if (!syncerImage) errs.push('--syncer-image is required');
  const kcpNamespace = flags.strings['kcp-namespace'] ?? 'default';
  if (!kcpNamespace) errs.push('--kcp-namespace is required');
  const replicas = flags.strings['replicas'] === undefined ? 1 : Number(flags.strings['replicas']);
  if (!Number.isInteger(replicas)) errs.push(`invalid argument ${JSON.stringify(flags.strings['replicas'])} for "--replicas" flag`);
  else if (replicas < 0) errs.push('--replicas cannot be negative');
  else if (replicas > 1) errs.push('only 0 and 1 are valid values for --replicas');
  const outputFile = flags.strings['output-file'] ?? '';
  if (!outputFile) errs.push('--output-file is required');
  if (name.length + 'kcp-dns-'.length + 8 + 8 + 2 > 254) errs.push(`the maximum length of the sync-target-name is ${MAX_SYNC_TARGET_NAME_LENGTH}`);
  const labels: Record<string, string> = {};
  for (const l of flags.slices['labels'] ?? []) {
    const parts = l.split('=');
    if (parts.length !== 2) errs.push(`label '${l}' is not in the format of key=value`);
    else labels[parts[0]!] = parts[1]!;
  }
  const apiExports = flags.slices['apiexports'] ?? [];
  for (const e of apiExports) if (e.slice(e.lastIndexOf(':') + 1) === IMPORTED_APIS_EXPORT_NAME) errs.push(`${IMPORTED_APIS_EXPORT_NAME} is a reserved APIExport name and should not be set`);
  const qps = flags.strings['qps'] === undefined ? 20 : Number(flags.strings['qps']);
  const burst = flags.strings['burst'] === undefined ? 30 : Number(flags.strings['burst']);
  if (!(qps > 0)) errs.push(`invalid argument ${JSON.stringify(flags.strings['qps'])} for "--qps" flag`);
  if (!Number.isInteger(burst) || burst <= 0) errs.push(`invalid argument ${JSON.stringify(flags.strings['burst'])} for "--burst" flag`);
  if (errs.length) throw new UsageError(errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);
  return {
    syncTargetName: name, resources: flags.slices['resources'] ?? [], apiExports, syncerImage, replicas, kcpNamespace, outputFile,
    downstreamNamespace: flags.strings['namespace'] ?? '', qps, burst, featureGates: flags.strings['feature-gates'] ?? '',
    apiImportPollIntervalMs: flags.durations['api-import-poll-interval'] ?? 60_000,
    downstreamNamespaceCleanDelayMs: flags.durations['downstream-namespace-clean-delay'] ?? 30_000, labels,
  };
}

type Obj = { metadata: { name: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>; ownerReferences?: OwnerRef[] }; [k: string]: unknown };
interface OwnerRef { apiVersion: string; kind: string; name: string; uid: string }

/** GET that answers undefined for 404. */
async function getOrUndefined<T>(client: KcpClient, path: string): Promise<T | undefined> {
  try { return await client.get<T>(path); } catch (err) {
    if (err instanceof StatusError && err.code === 404) return undefined;
    throw err;
  }
}

/** The ClusterRole rules of the syncer's identity in the workspace (kcp sync.go `enableSyncerForWorkspace`). */
export function syncerWorkspaceRules(syncTargetName: string): object[] {
  return [
    { verbs: ['sync'], apiGroups: ['workload.kcp.io'], resourceNames: [syncTargetName], resources: ['synctargets'] },
    { verbs: ['get'], apiGroups: ['workload.kcp.io'], resourceNames: [syncTargetName], resources: ['synctargets/tunnel'] },
    { verbs: ['get', 'list', 'watch'], apiGroups: ['workload.kcp.io'], resources: ['synctargets'], resourceNames: [syncTargetName] },
    { verbs: ['update', 'patch'], apiGroups: ['workload.kcp.io'], resourceNames: [syncTargetName], resources: ['synctargets', 'synctargets/status'] },
    { verbs: ['get', 'create', 'update', 'delete', 'list', 'watch'], apiGroups: ['apiresource.kcp.io'], resources: ['apiresourceimports'] },
    { verbs: ['access'], nonResourceURLs: ['/'] },
  ];
}

/** The group → resources of the downstream ClusterRole (kcp `getGroupMappings`, sorted as kcp's `sortGroupMappings`). */
export function groupMappings(resources: string[]): Array<{ group: string; resources: string[] }> {
  const m = new Map<string, string[]>();
  for (const r of resources) {
    const i = r.indexOf('.');
    const name = i < 0 ? r : r.slice(0, i); const group = i < 0 ? '' : r.slice(i + 1);
    const list = m.get(group) ?? [];
    list.push(name);
    if (group === '' && name === 'pods') list.push('pods/log', 'pods/exec', 'pods/attach', 'pods/binding', 'pods/portforward', 'pods/proxy', 'pods/ephemeralcontainers');
    m.set(group, list);
  }
  return [...m].map(([group, rs]) => ({ group, resources: rs }))
    .sort((a, b) => (a.group === b.group ? (a.resources.join(',') < b.resources.join(',') ? -1 : 1) : a.group < b.group ? -1 : 1));
}

/** What the manifest is made of. */
export interface ManifestInput {
  serverURL: string;
  /** PEM of kcp's CA. */
  caPem: string;
  token: string;
  kcpNamespace: string;
  namespace: string;
  syncerID: string;
  syncTargetPath: string;
  syncTargetName: string;
  syncTargetUID: string;
  image: string;
  replicas: number;
  resourcesToSync: string[];
  /** `resource.group` the downstream ClusterRole grants every verb on. */
  resourcesForPermission: string[];
  qps: number;
  burst: number;
  featureGates: string;
  apiImportPollInterval: string;
  downstreamNamespaceCleanDelay: string;
}

const q = (s: string): string => JSON.stringify(s);

/** The manifest for the physical cluster, in the layout of kcp's syncer.yaml (see the module comment). */
export function renderSyncerManifest(i: ManifestInput): string {
  const dnsID = i.syncerID.replace('syncer', 'dns');
  const mappings = groupMappings(i.resourcesForPermission).map((g) => `- apiGroups:\n  - ${q(g.group)}\n  resources:\n${g.resources.map((r) => `  - ${r}\n`).join('')}  verbs:\n  - "*"\n`).join('');
  const kubeconfig = [
    'apiVersion: v1', 'kind: Config', 'clusters:', '- name: default-cluster', '  cluster:',
    `    certificate-authority-data: ${Buffer.from(i.caPem).toString('base64')}`, `    server: ${i.serverURL}`,
    'contexts:', '- name: default-context', '  context:', '    cluster: default-cluster', `    namespace: ${i.kcpNamespace}`, '    user: default-user',
    'current-context: default-context', 'users:', '- name: default-user', '  user:', `    token: ${i.token}`,
  ].map((l) => `    ${l}\n`).join('');
  const args = [
    'syncer', '--from-kubeconfig=/kcp/kubeconfig', `--sync-target-name=${i.syncTargetName}`, `--sync-target-uid=${i.syncTargetUID}`,
    `--from-cluster=${i.syncTargetPath}`, `--api-import-poll-interval=${i.apiImportPollInterval}`, `--downstream-namespace-clean-delay=${i.downstreamNamespaceCleanDelay}`,
    ...i.resourcesToSync.map((r) => `--resources=${r}`), `--qps=${i.qps}`, `--burst=${i.burst}`,
    ...(i.featureGates ? [`--feature-gates=${i.featureGates}`] : []), `--dns-image=${i.image}`,
  ].map((a) => `        - ${q(a)}\n`).join('');
  return `---
apiVersion: v1
kind: Namespace
metadata:
  name: ${i.namespace}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${i.syncerID}
  namespace: ${i.namespace}
---
apiVersion: v1
kind: Secret
metadata:
  name: ${i.syncerID}-token
  namespace: ${i.namespace}
  annotations:
    kubernetes.io/service-account.name: ${i.syncerID}
type: kubernetes.io/service-account-token
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${i.syncerID}
rules:
- apiGroups:
  - ""
  resources:
  - namespaces
  verbs:
  - "create"
  - "get"
  - "list"
  - "watch"
  - "delete"
- apiGroups:
  - ""
  resources:
  - endpoints
  verbs:
  - "get"
- apiGroups:
  - "apiextensions.k8s.io"
  resources:
  - customresourcedefinitions
  verbs:
  - "get"
  - "watch"
  - "list"
- apiGroups:
  - "networking.k8s.io"
  resources:
  - networkpolicies
  verbs:
  - "create"
  - "list"
  - "watch"
- apiGroups:
  - "apiresource.kcp.io"
  resources:
  - apiresourceimports
  verbs:
  - "create"
  - "update"
  - "list"
  - "watch"
${mappings}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ${i.syncerID}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${i.syncerID}
subjects:
- kind: ServiceAccount
  name: ${i.syncerID}
  namespace: ${i.namespace}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: ${dnsID}
  namespace: ${i.namespace}
rules:
- apiGroups:
  - ""
  resources:
  - serviceaccounts
  - services
  verbs:
  - "create"
  - "get"
  - "list"
  - "update"
  - "delete"
  - "watch"
- apiGroups:
  - ""
  resources:
  - endpoints
  verbs:
  - "get"
  - "list"
  - "watch"
- apiGroups:
  - "apps"
  resources:
  - deployments
  verbs:
  - "create"
  - "get"
  - "list"
  - "update"
  - "delete"
  - "watch"
- apiGroups:
  - "rbac.authorization.k8s.io"
  resources:
  - roles
  - rolebindings
  verbs:
  - "create"
  - "get"
  - "list"
  - "update"
  - "delete"
  - "watch"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ${dnsID}
  namespace: ${i.namespace}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ${dnsID}
subjects:
  - kind: ServiceAccount
    name: ${i.syncerID}
    namespace: ${i.namespace}
---
apiVersion: v1
kind: Secret
metadata:
  name: ${i.syncerID}
  namespace: ${i.namespace}
stringData:
  kubeconfig: |
${kubeconfig}---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${i.syncerID}
  namespace: ${i.namespace}
spec:
  replicas: ${i.replicas}
  strategy:
    type: Recreate
  selector:
    matchLabels:
      app: ${i.syncerID}
  template:
    metadata:
      labels:
        app: ${i.syncerID}
    spec:
      containers:
      - name: kcp-syncer
        command:
        - kcp-ts
        args:
${args}        env:
        - name: NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        image: ${q(i.image)}
        imagePullPolicy: IfNotPresent
        terminationMessagePolicy: FallbackToLogsOnError
        volumeMounts:
        - name: kcp-config
          mountPath: /kcp/
          readOnly: true
      serviceAccountName: ${i.syncerID}
      volumes:
        - name: kcp-config
          secret:
            secretName: ${i.syncerID}
            optional: false
`;
}

/** Creates `path`'s object, or updates it when it exists (`mutate` gets the current one). */
async function createOrUpdate(client: KcpClient, collection: string, desired: Obj, mutate: (current: Obj) => Obj, log: (s: string) => void, what: string): Promise<Obj> {
  const current = await getOrUndefined<Obj>(client, `${collection}/${desired.metadata.name}`);
  if (!current) {
    log(`Creating ${what} "${desired.metadata.name}"\n`);
    try { return await client.post<Obj>(collection, desired); } catch (err) {
      if (!(err instanceof StatusError && err.code === 409)) throw err;
      return createOrUpdate(client, collection, desired, mutate, log, what);
    }
  }
  log(`Updating ${what} "${desired.metadata.name}".\n`);
  return (await client.request('PUT', `${collection}/${desired.metadata.name}`, mutate(current))).body as Obj;
}

const mergeOwners = (a: OwnerRef[] | undefined, b: OwnerRef[]): OwnerRef[] => [...(a ?? []), ...b.filter((o) => !(a ?? []).some((x) => x.uid === o.uid))];

/** The PEM of the CA a client config trusts (inline or file); '' when none. */
function caOf(cfg: ClientConfig): string {
  const c = cfg.cluster;
  if (c['certificate-authority-data']) return Buffer.from(c['certificate-authority-data'].replace(/\s+/g, ''), 'base64').toString('utf8');
  if (c['certificate-authority']) return readFileSync(c['certificate-authority'], 'utf8');
  return '';
}

/**
 * Runs `workload sync` against the current workspace `workspacePath` (see the module comment);
 * `log` gets kcp's progress lines (stderr).
 * @throws {StatusError} for a refused request
 */
export async function runSync(o: SyncOptions, client: KcpClient, cfg: ClientConfig, workspacePath: string, stdout: (s: string) => void, log: (s: string) => void): Promise<void> {
  const ws = `/clusters/${workspacePath}`;
  const supported = o.apiExports.map((e) => { const i = e.lastIndexOf(':'); return { export: e.slice(i + 1), path: e.slice(0, Math.max(i, 0)) }; });
  if (o.resources.length) supported.push({ export: IMPORTED_APIS_EXPORT_NAME, path: '' });
  const stDesired: Obj = {
    apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget',
    metadata: { name: o.syncTargetName, ...(Object.keys(o.labels).length ? { labels: o.labels } : {}) },
    spec: supported.length ? { supportedAPIExports: supported.map((s) => (s.path ? s : { export: s.export })) } : {},
  };
  const st = await createOrUpdate(client, `${ws}/apis/workload.kcp.io/v1alpha1/synctargets`, stDesired, (cur) => ({
    ...cur, metadata: { ...cur.metadata, labels: o.labels }, spec: { ...(cur.spec as object), supportedAPIExports: (stDesired.spec as { supportedAPIExports?: unknown }).supportedAPIExports },
  }), log, 'synctarget');
  const uid = st.metadata.uid!;
  const id = syncerID(o.syncTargetName, uid);
  const owners: OwnerRef[] = [{ apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', name: o.syncTargetName, uid }];
  await createOrUpdate(client, `${ws}/api/v1/namespaces/${o.kcpNamespace}/serviceaccounts`,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: id, ownerReferences: owners } },
    (cur) => ({ ...cur, metadata: { ...cur.metadata, ownerReferences: mergeOwners(cur.metadata.ownerReferences, owners) } }), log, 'service account');
  const rules = syncerWorkspaceRules(o.syncTargetName);
  await createOrUpdate(client, `${ws}/apis/rbac.authorization.k8s.io/v1/clusterroles`,
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: id, ownerReferences: owners }, rules },
    (cur) => ({ ...cur, metadata: { ...cur.metadata, ownerReferences: mergeOwners(cur.metadata.ownerReferences, owners) }, rules }), log, 'cluster role');
  // kcp deletes and creates the binding (its subjects and role may not be updated in place).
  const crbs = `${ws}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings`;
  if (await getOrUndefined(client, `${crbs}/${id}`)) await client.request('DELETE', `${crbs}/${id}`);
  log(`Creating or updating cluster role binding "${id}" to bind service account "${id}" to cluster role "${id}".\n`);
  await client.post(crbs, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: id, ownerReferences: owners },
    subjects: [{ kind: 'ServiceAccount', name: id, namespace: o.kcpNamespace }], roleRef: { kind: 'ClusterRole', name: id, apiGroup: 'rbac.authorization.k8s.io' },
  });
  const tr = await client.post<{ status?: { token?: string } }>(`${ws}/api/v1/namespaces/${o.kcpNamespace}/serviceaccounts/${id}/token`, {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: SYNCER_TOKEN_SECONDS },
  });
  const token = tr.status?.token;
  if (!token) throw new StatusError(500, 'InternalError', `no token issued for ServiceAccount ${o.kcpNamespace}/${id}`);
  const forPermission = [...new Set([...o.resources, 'secrets', 'configmaps'])].sort();
  const server = new URL(cfg.server);
  const port = server.port || (server.protocol === 'https:' ? '443' : '80');
  const manifest = renderSyncerManifest({
    serverURL: `${server.protocol}//${server.hostname.includes(':') ? `[${server.hostname}]` : server.hostname}:${port}`, caPem: caOf(cfg), token,
    kcpNamespace: o.kcpNamespace, namespace: o.downstreamNamespace || id, syncerID: id, syncTargetPath: workspacePath,
    syncTargetName: o.syncTargetName, syncTargetUID: uid, image: o.syncerImage, replicas: o.replicas, resourcesToSync: o.resources,
    resourcesForPermission: forPermission, qps: o.qps, burst: o.burst, featureGates: o.featureGates,
    apiImportPollInterval: goDuration(o.apiImportPollIntervalMs), downstreamNamespaceCleanDelay: goDuration(o.downstreamNamespaceCleanDelayMs),
  });
  if (o.outputFile === '-') { stdout(manifest); return; }
  writeFileSync(o.outputFile, manifest, { mode: 0o600 });
  const ns = o.downstreamNamespace || id;
  log(`\nWrote physical cluster manifest to ${o.outputFile} for namespace ${q(ns)}. Use\n\n  KUBECONFIG=<pcluster-config> kubectl apply -f ${q(o.outputFile)}\n\nto apply it. Use\n\n  KUBECONFIG=<pcluster-config> kubectl get deployment -n ${q(ns)} ${id}\n\nto verify the syncer pod is running.\n`);
}
