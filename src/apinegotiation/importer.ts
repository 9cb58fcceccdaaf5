/**
 * The syncer's side of API negotiation: the schemas of the resources it may sync, pulled from its
 * downstream cluster (./puller.ts), written as APIResourceImports in its SyncTarget's workspace,
 * as kcp's syncer API importer does (github kcp-dev/kcp pkg/syncer/apiimporter.go, v0.11; kcp-dev
 * contrib-tmc pkg/syncer/apiimporter.go): one import per SyncTarget and group/version/resource,
 * named `<plural>.<sync target>.<version>.<group|core>`, `spec.location` the SyncTarget's name,
 * controlled by the SyncTarget (ownerReference), annotated `apiresource.kcp.io/apiVersion`; the
 * resources asked for are merged with those in `status.syncedResources`.
 *
 * kcp-ts differences: the imports ask for `schemaUpdateStrategy: UpdatePublished` (kcp:
 * `UpdateUnpublished`) — kcp never published the negotiated resources of this flow as CRDs, so
 * its imports always narrowed the exported schema; here the export is the publication, and this
 * strategy keeps that behaviour (docs/multicluster.md, "API negotiation"). An import is deleted
 * only when its resource is no longer asked for, not when a pull of it failed once (kcp deletes
 * what the last pass did not import, so one failed pull removed the resource from the export).
 */
import type { KubeObject } from '../apimachinery/meta.js';
import { isObj } from '../apimachinery/objects.js';
import { pullCRDs, parseGroupResource, type APIEndpoint, type PullError } from './puller.js';

/** `apiresource.kcp.io/apiVersion` (contrib-tmc APIVersionAnnotation). */
export const API_VERSION_ANNOTATION = 'apiresource.kcp.io/apiVersion';
const IMPORTS = '/apis/apiresource.kcp.io/v1alpha1/apiresourceimports';
const SYNC_TARGETS = '/apis/workload.kcp.io/v1alpha1/synctargets';

/** The name of a SyncTarget's import of a resource (kcp's). */
export function apiResourceImportName(syncTarget: string, plural: string, version: string, group: string): string {
  return `${plural}.${syncTarget}.${version}.${group || 'core'}`;
}

/** What {@link importAPIResources} did. */
export interface ImportResult {
  /** Names of the APIResourceImports created or updated (unchanged ones included). */
  imported: string[];
  /** Names of the imports deleted (resources no longer asked for). */
  deleted: string[];
  /** Resources that could not be pulled or written, and why. */
  errors: PullError[];
}

type Obj = Record<string, unknown>;

/** The import spec of a pulled CRD (contrib-tmc CommonAPIResourceSpec + location and strategy). */
function importSpec(crd: KubeObject, location: string): Obj {
  const spec = crd.spec as Obj;
  const names = spec.names as Obj;
  const v = (spec.versions as Obj[])[0]!;
  const subresources = isObj(v.subresources) ? Object.keys(v.subresources).sort().map((name) => ({ name })) : [];
  const columns = Array.isArray(v.additionalPrinterColumns) ? (v.additionalPrinterColumns as Obj[]).map((c) => ({
    name: c.name, type: c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0, jsonPath: c.jsonPath,
  })) : [];
  return {
    groupVersion: { ...(spec.group ? { group: spec.group } : {}), version: v.name },
    scope: spec.scope, ...names,
    openAPIV3Schema: (v.schema as Obj).openAPIV3Schema,
    // Unset (not left out) when the cluster has none, so an update drops what it had before.
    subResources: subresources.length ? subresources : undefined,
    columnDefinitions: columns.length ? columns : undefined,
    schemaUpdateStrategy: 'UpdatePublished',
    location,
  };
}

/**
 * Pulls the schemas of `resources` from the downstream cluster and creates or updates the
 * SyncTarget's APIResourceImports in its workspace; deletes its imports of resources no longer
 * asked for. The syncer calls it at start with its `--resources`, and may call it again (kcp's
 * importer repeats it every poll interval): it is idempotent and writes nothing that did not change.
 *
 * @param upstream the SyncTarget's workspace (`path` `/clusters/<logical cluster or path>`); the
 *   credentials need get on the SyncTarget and get, list, create, update, delete on
 *   apiresourceimports.apiresource.kcp.io there
 * @param downstream the physical cluster (see {@link pullCRDs})
 * @param syncTarget the SyncTarget's name
 * @param resources `deployments.apps`, `services`, `ingresses.networking.k8s.io`, …
 * @returns what was imported, deleted, and the per-resource errors (never thrown)
 * @throws Error when the SyncTarget cannot be read (not found: the syncer is not registered) or
 *   the downstream discovery fails
 */
export async function importAPIResources(upstream: APIEndpoint, downstream: APIEndpoint, syncTarget: string, resources: readonly string[]): Promise<ImportResult> {
  const base = upstream.path ?? '';
  const st = await upstream.client.request('GET', `${base}${SYNC_TARGETS}/${encodeURIComponent(syncTarget)}`);
  if (st.status !== 200 || !isObj(st.json)) throw new Error(`SyncTarget ${syncTarget}: HTTP ${st.status}: ${st.json?.message ?? st.body.slice(0, 200)}`);
  const target = st.json as KubeObject & { status?: { syncedResources?: Array<{ resource?: string; group?: string }> } };
  const asked = new Set(resources.map((r) => r.trim()).filter(Boolean));
  for (const r of target.status?.syncedResources ?? []) if (r.resource) asked.add(`${r.resource}.${r.group || 'core'}`);
  const askedGR = new Set([...asked].map((r) => { const gr = parseGroupResource(r); return `${gr.resource}.${gr.group}`; }));

  const pulled = await pullCRDs(downstream, [...asked]);
  const errors = [...pulled.errors];
  const list = await upstream.client.request('GET', `${base}${IMPORTS}`);
  if (list.status !== 200) throw new Error(`list apiresourceimports: HTTP ${list.status}: ${list.json?.message ?? ''}`);
  const existing = new Map<string, KubeObject>();
  for (const o of (list.json?.items ?? []) as KubeObject[]) if ((o.spec as Obj | undefined)?.location === syncTarget) existing.set(o.metadata.name!, o);

  const imported: string[] = [];
  for (const crd of pulled.crds) {
    const spec = crd.spec as Obj;
    const version = String((spec.versions as Obj[])[0]!.name);
    const group = String(spec.group ?? '');
    const plural = String((spec.names as Obj).plural);
    const name = apiResourceImportName(syncTarget, plural, version, group);
    const desired = importSpec(crd, syncTarget);
    const annotations: Record<string, string> = { [API_VERSION_ANNOTATION]: group ? `${group}/${version}` : version };
    const approved = crd.metadata.annotations?.['api-approved.kubernetes.io'];
    if (approved) annotations['api-approved.kubernetes.io'] = approved;
    const old = existing.get(name);
    try {
      if (!old) {
        const body = {
          apiVersion: 'apiresource.kcp.io/v1alpha1', kind: 'APIResourceImport',
          metadata: {
            name, annotations,
            ...(target.metadata.uid ? { ownerReferences: [{ apiVersion: 'workload.kcp.io/v1alpha1', kind: 'SyncTarget', name: syncTarget, uid: target.metadata.uid, controller: true }] } : {}),
          },
          spec: desired,
        };
        const res = await upstream.client.request('POST', `${base}${IMPORTS}`, body);
        if (res.status !== 201 && res.status !== 409) throw new Error(`HTTP ${res.status}: ${res.json?.message ?? res.body.slice(0, 200)}`);
      } else if (JSON.stringify(old.spec) !== JSON.stringify({ ...(old.spec as Obj), ...desired })) {
        const res = await upstream.client.request('PUT', `${base}${IMPORTS}/${encodeURIComponent(name)}`, { ...old, spec: { ...(old.spec as Obj), ...desired } });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.json?.message ?? res.body.slice(0, 200)}`);
      }
      imported.push(name);
    } catch (err) {
      errors.push({ resource: `${plural}.${group || 'core'}`, message: `writing APIResourceImport ${name}: ${(err as Error).message}` });
    }
  }

  const deleted: string[] = [];
  for (const [name, o] of existing) {
    const spec = o.spec as Obj;
    const group = String(isObj(spec.groupVersion) ? spec.groupVersion.group ?? '' : '');
    if (askedGR.has(`${String(spec.plural)}.${group === 'core' ? '' : group}`)) continue;
    const res = await upstream.client.request('DELETE', `${base}${IMPORTS}/${encodeURIComponent(name)}`);
    if (res.status === 200 || res.status === 202 || res.status === 404) deleted.push(name);
    else errors.push({ resource: `${String(spec.plural)}.${group || 'core'}`, message: `deleting APIResourceImport ${name}: HTTP ${res.status}` });
  }
  return { imported, deleted, errors };
}
