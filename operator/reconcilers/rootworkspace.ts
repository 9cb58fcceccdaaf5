/**
 * The RootWorkspace reconciler: declarative content of an instance's root workspace tree, applied
 * through the instance's front-proxy with the operator's own client certificate (system:masters,
 * issued by the instance's CA):
 *
 * - WorkspaceTypes in root, Workspaces (parents before children; a child waits until its parent is
 *   Ready), ClusterRoleBindings in any workspace. Everything it creates carries the label
 *   {@link OWNER_LABEL} (the RootWorkspace's uid); an object that exists without it was not
 *   created here and is never changed or deleted (its inventory entry says so).
 * - Kubeconfigs: a Secret each (key `kubeconfig`, a client certificate of the instance's CA for
 *   the user and groups, at the instance's external URL and the workspace's path).
 * - What leaves the spec is deleted (children first); a kubeconfig that leaves it is **revoked**:
 *   its certificate's serial number goes into the instance's `<instance>-revoked-certificates`
 *   ConfigMap, which every shard and the front-proxy read (`--revoked-client-certificates-file`),
 *   before its Secret is deleted. Deleting the RootWorkspace (its finalizer) does both for all.
 *
 * The endpoint is the front-proxy's Service, or `spec.endpoint` for an operator outside the
 * cluster; either way the server's certificate is verified as the front-proxy's Service name.
 */
import type { ReconcileResult } from '../../src/controllers/runtime.js';
import { RestClient } from '../../src/client/rest.js';
import { inspectCertificate, type KeyPair } from '../../src/pki/certs.js';
import { parseRevokedSerials } from '../../src/auth/revocation.js';
import { GROUP, parseDuration, ROOT_WORKSPACE_FINALIZER, type HostObject, type InventoryItem, type KcpInstance, type RootWorkspace } from '../api/types.js';
import { applyAll, cached, type OperatorContext } from '../context.js';
import { conditionsOf, writeStatus } from '../status.js';
import { fromB64 } from '../pki.js';
import { externalURL, names, ownerOf } from '../resources.js';
import { certificateSecret, existingCA, kubeconfigOf, policyOf } from './certificates.js';
import { firstDifference } from '../kube/apply.js';

/** Label on what a RootWorkspace created in kcp: its uid. */
export const OWNER_LABEL = `${GROUP}/root-workspace`;
/** Field manager of the revocation records (not the operator's apply manager: they are merged, never applied). */
const REVOCATION_MANAGER = 'kcp-ts-operator-revocations';

interface Item { kind: 'WorkspaceType' | 'Workspace' | 'ClusterRoleBinding'; workspace: string; name: string; body: Record<string, unknown> }

/** The kcp objects a spec declares, parents before children. */
function declared(rw: RootWorkspace): Item[] {
  const items: Item[] = [];
  for (const t of rw.spec.workspaceTypes ?? []) {
    items.push({ kind: 'WorkspaceType', workspace: 'root', name: t.name, body: { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', spec: t.spec ?? {} } });
  }
  const workspaces = [...(rw.spec.workspaces ?? [])].sort((a, b) => a.path.split(':').length - b.path.split(':').length);
  for (const w of workspaces) {
    const parts = w.path.split(':');
    const parent = ['root', ...parts.slice(0, -1)].join(':');
    const name = parts.at(-1)!;
    const spec: Record<string, unknown> = {};
    if (w.type?.name) spec.type = { name: w.type.name, ...(w.type.path ? { path: w.type.path } : {}) };
    if (w.location) spec.location = w.location;
    items.push({ kind: 'Workspace', workspace: parent, name, body: { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', ...(w.labels ? { labels: w.labels } : {}), spec } });
  }
  for (const b of rw.spec.clusterRoleBindings ?? []) {
    items.push({
      kind: 'ClusterRoleBinding', workspace: b.workspace, name: b.name,
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: b.clusterRole }, subjects: b.subjects.map((s) => ({ ...s, ...(s.kind === 'ServiceAccount' ? {} : { apiGroup: 'rbac.authorization.k8s.io' }) })) },
    });
  }
  return items;
}

const itemKey = (i: { kind: string; workspace: string; name: string }) => `${i.kind}|${i.workspace}|${i.name}`;
/** Where an item lives in kcp. */
const pathOf = (i: { kind: string; workspace: string; name: string }) => i.kind === 'WorkspaceType' ? `/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes/${i.name}`
  : i.kind === 'Workspace' ? `/clusters/${i.workspace}/apis/tenancy.kcp.io/v1alpha1/workspaces/${i.name}`
    : `/clusters/${i.workspace}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${i.name}`;

/** The client of the instance's kcp, with the operator's own certificate (issued when missing). */
async function kcpClient(ctx: OperatorContext, inst: KcpInstance, rw: RootWorkspace): Promise<{ client: RestClient; secret: HostObject; ca: KeyPair } | undefined> {
  const ca = await existingCA(ctx, inst);
  if (!ca) return undefined;
  const cert = await certificateSecret(ctx, inst, `${rw.metadata.name}-rootworkspace-client`, 'rootworkspace', ownerOf(rw),
    { kind: 'client', user: 'system:kcp-ts:operator', groups: ['system:masters'] }, ca);
  const port = inst.spec.external?.port ?? 6443;
  const url = rw.spec.endpoint ? new URL(rw.spec.endpoint).origin : `https://${names.frontProxy(inst.metadata.name)}.${inst.metadata.namespace}.svc:${port}`;
  const client = new RestClient({ url, ca: ca.certPem, cert: cert.pair.certPem, key: cert.pair.keyPem, serverName: `${names.frontProxy(inst.metadata.name)}.${inst.metadata.namespace}.svc` });
  return { client, secret: cert.secret, ca };
}

const errorOf = (res: { status: number; json?: { message?: string }; body: string }) => `HTTP ${res.status}: ${res.json?.message ?? res.body.slice(0, 200)}`;

/** Adds revoked certificates (serial, end, whose) to the instance's revocation ConfigMap; drops expired lines. */
async function revoke(ctx: OperatorContext, inst: KcpInstance, entries: { certPem: string; who: string }[]): Promise<void> {
  if (entries.length === 0) return;
  const ns = inst.metadata.namespace!;
  const name = names.revoked(inst.metadata.name);
  const live = cached(ctx, 'ConfigMap', ns, name) as { data?: Record<string, string> } | undefined
    ?? await ctx.client.get<HostObject & { data?: Record<string, string> }>('ConfigMap', ns, name);
  const now = ctx.now();
  const lines = (live?.data?.serials ?? '').split('\n').filter((l) => l.trim() && !(Date.parse(l.split(/\s+/)[1] ?? '') < now));
  const known = parseRevokedSerials(lines.join('\n'));
  for (const e of entries) {
    const info = inspectCertificate(e.certPem);
    if (!known.has(info.serialNumber)) lines.push(`${info.serialNumber} ${info.notAfter.toISOString()} ${e.who}`);
  }
  const serials = lines.length ? `${lines.join('\n')}\n` : '';
  if (serials === (live?.data?.serials ?? '')) return;
  await ctx.client.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, { data: { serials } }, 'application/merge-patch+json', { fieldManager: REVOCATION_MANAGER });
}

/** Reconciles the RootWorkspace `<namespace>/<name>` (see the module comment). */
export async function reconcileRootWorkspace(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const [ns, name] = key.split('/') as [string, string];
  const rw = ctx.rootWorkspaces.get(name, ns);
  if (!rw) return;
  const inst = ctx.instances.get(rw.spec.instanceRef.name, ns);
  const deleting = Boolean(rw.metadata.deletionTimestamp);
  if (deleting && !rw.metadata.finalizers?.includes(ROOT_WORKSPACE_FINALIZER)) return;
  // The finalizer, and an ownerReference to the instance: deleting the instance deletes its content's record too.
  const hasOwner = !inst || rw.metadata.ownerReferences?.some((r) => r.uid === inst.metadata.uid);
  if (!deleting && (!rw.metadata.finalizers?.includes(ROOT_WORKSPACE_FINALIZER) || !hasOwner)) {
    await ctx.client.apply({
      apiVersion: rw.apiVersion, kind: 'RootWorkspace',
      metadata: { name, namespace: ns, finalizers: [ROOT_WORKSPACE_FINALIZER], ...(inst ? { ownerReferences: [{ ...ownerOf(inst), controller: false }] } : {}) },
    });
  }
  const previous = rw.status?.inventory ?? [];
  const now = new Date(ctx.now());
  if (!inst || inst.metadata.deletionTimestamp) {
    if (deleting) return dropFinalizer(ctx, rw); // the instance, and all it held, is gone
    await writeStatus(ctx, rw, { observedGeneration: rw.metadata.generation, inventory: previous, conditions: conditionsOf({ ready: false, progressing: false, degraded: true, reason: 'InstanceNotFound', message: `KcpInstance ${ns}/${rw.spec.instanceRef.name} does not exist` }, rw.metadata.generation, rw.status?.conditions, now) });
    return;
  }
  const connection = await kcpClient(ctx, inst, rw);
  if (!connection) return { requeueAfterMs: 1000 }; // the instance's CA does not exist yet
  const { client, secret: clientSecret, ca } = connection;
  try {
    const uid = rw.metadata.uid!;
    const want = deleting ? [] : declared(rw);
    const inventory: InventoryItem[] = [];
    let waiting = false;

    // Kubeconfigs: issue what is declared, revoke and delete what is not.
    const kubeconfigSecrets = ctx.owned.Secret.list(ns).filter((s) => s.metadata.ownerReferences?.some((r) => r.uid === uid) && s.metadata.labels?.['app.kubernetes.io/component'] === 'kubeconfig');
    const wantKubeconfigs = deleting ? [] : (rw.spec.kubeconfigs ?? []);
    const desiredSecrets: HostObject[] = deleting ? [] : [clientSecret];
    for (const k of wantKubeconfigs) {
      const secretName = k.secretName ?? k.name;
      const validityMs = parseDuration(k.validity ?? '8760h');
      const workspace = k.workspace ?? 'root';
      // Its own validity; renewed like the instance's certificates, but never later than a third in.
      const policy = { ...policyOf(inst), validityMs, renewBeforeMs: Math.min(policyOf(inst).renewBeforeMs, validityMs / 3) };
      const s = await certificateSecret(ctx, inst, secretName, 'kubeconfig', ownerOf(rw), { kind: 'client', user: k.user, groups: k.groups ?? [] }, ca, undefined,
        (pair) => ({ kubeconfig: kubeconfigOf(`${externalURL(inst)}/clusters/${workspace}`, ca.certPem, pair, k.user) }), policy);
      desiredSecrets.push(s.secret);
      inventory.push({ kind: 'Kubeconfig', workspace, name: k.name, state: 'Applied' });
    }
    const keep = new Set(desiredSecrets.map((s) => s.metadata.name));
    const gone = kubeconfigSecrets.filter((s) => !keep.has(s.metadata.name));
    await revoke(ctx, inst, gone.flatMap((s) => {
      const certPem = fromB64((s as { data?: Record<string, string> }).data, 'tls.crt');
      return certPem ? [{ certPem, who: `${ns}/${name}/${s.metadata.name}` }] : [];
    }));
    for (const s of gone) {
      await ctx.client.delete('Secret', ns, s.metadata.name, s.metadata.uid);
      inventory.push({ kind: 'Kubeconfig', workspace: '', name: s.metadata.name, state: 'Revoked' });
    }
    await applyAll(ctx, desiredSecrets);

    // kcp objects: create or update what is declared (ours only), in order.
    const readyWorkspaces = new Set<string>(['root']);
    for (const item of want) {
      const entry: InventoryItem = { kind: item.kind, workspace: item.workspace, name: item.name, state: 'Applied' };
      inventory.push(entry);
      if (item.kind === 'Workspace' && !readyWorkspaces.has(item.workspace) && item.workspace !== 'root') {
        entry.state = 'Failed'; entry.error = `waiting for workspace ${item.workspace} to be Ready`; waiting = true; continue;
      }
      try {
        const got = await client.request('GET', pathOf(item));
        if (got.status === 200) {
          const live = got.json as { metadata: { labels?: Record<string, string> }; status?: { phase?: string } };
          if (live.metadata.labels?.[OWNER_LABEL] !== uid) { entry.state = 'Failed'; entry.error = 'exists and was not created by this RootWorkspace: left alone'; continue; }
          const { apiVersion: _a, kind: _k, labels: _l, ...content } = item.body;
          if (item.kind !== 'Workspace' && firstDifference(content, live)) {
            const res = await client.request('PATCH', `${pathOf(item)}?fieldManager=kcp-ts-operator&force=true`, { ...item.body, metadata: { name: item.name, labels: { [OWNER_LABEL]: uid } } }, { contentType: 'application/apply-patch+yaml' });
            if (res.status >= 300) throw new Error(errorOf(res));
          }
          if (item.kind === 'Workspace') {
            if (live.status?.phase === 'Ready') readyWorkspaces.add(`${item.workspace}:${item.name}`); else waiting = true;
          }
        } else if (got.status === 404) {
          const { labels, ...body } = item.body;
          const res = await client.request('POST', pathOf(item).slice(0, pathOf(item).lastIndexOf('/')), { ...body, metadata: { name: item.name, labels: { ...(labels as Record<string, string> | undefined), [OWNER_LABEL]: uid } } });
          if (res.status >= 300) throw new Error(errorOf(res));
          if (item.kind === 'Workspace') waiting = true;
        } else {
          throw new Error(errorOf(got));
        }
      } catch (err) {
        entry.state = 'Failed'; entry.error = (err as Error).message;
      }
    }

    // What left the spec: delete it (children first) if it is ours.
    const wanted = new Set(want.map(itemKey));
    const stale = previous.filter((p) => p.kind !== 'Kubeconfig' && p.state !== 'Revoked' && !wanted.has(itemKey(p)) && !(p.error ?? '').startsWith('exists and was not created'))
      .sort((a, b) => b.workspace.split(':').length - a.workspace.split(':').length);
    for (const p of stale) {
      try {
        const got = await client.request('GET', pathOf(p));
        if (got.status === 404) continue;
        if ((got.json as { metadata?: { labels?: Record<string, string> } })?.metadata?.labels?.[OWNER_LABEL] !== uid) continue;
        const res = await client.request('DELETE', pathOf(p));
        if (res.status >= 300 && res.status !== 404) throw new Error(errorOf(res));
      } catch (err) {
        inventory.push({ kind: p.kind, workspace: p.workspace, name: p.name, state: 'Failed', error: `deleting: ${(err as Error).message}` });
        waiting = true;
      }
    }

    if (deleting) {
      if (waiting || inventory.some((i) => i.state === 'Failed' && i.error?.startsWith('deleting'))) return { requeueAfterMs: 2000 };
      return dropFinalizer(ctx, rw);
    }
    const failed = inventory.filter((i) => i.state === 'Failed');
    const ready = failed.length === 0 && !waiting;
    await writeStatus(ctx, rw, {
      observedGeneration: rw.metadata.generation, inventory,
      conditions: conditionsOf({
        ready, progressing: waiting, degraded: failed.length > 0 && !waiting,
        reason: ready ? 'Applied' : waiting ? 'Applying' : 'Failed',
        message: ready ? `${inventory.length} items applied` : failed.map((f) => `${f.kind} ${f.workspace}/${f.name}: ${f.error}`).join('; ') || 'waiting for workspaces to be Ready',
      }, rw.metadata.generation, rw.status?.conditions, now),
    });
    return waiting || failed.length > 0 ? { requeueAfterMs: 2000 } : undefined;
  } finally {
    client.close();
  }
}

async function dropFinalizer(ctx: OperatorContext, rw: RootWorkspace): Promise<void> {
  const finalizers = (rw.metadata.finalizers ?? []).filter((f) => f !== ROOT_WORKSPACE_FINALIZER);
  await ctx.client.mergePatch('RootWorkspace', rw.metadata.namespace, rw.metadata.name, { metadata: { finalizers, resourceVersion: rw.metadata.resourceVersion } });
}
