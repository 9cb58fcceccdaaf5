/**
 * The crd-puller: a cluster's resources as CustomResourceDefinitions, from its discovery and its
 * OpenAPI v3 (`/openapi/v3/apis/<group>/<version>`, `/openapi/v3/api/v1`), as kcp's crd-puller
 * builds them (github kcp-dev/kcp pkg/crdpuller discovery.go `PullCRDs`, which reads OpenAPI v2):
 * the CRD is named `<plural>.<group>` (`<plural>.core` for the core group), has the preferred
 * version of the group (served, storage), the discovery names and scope, the `status` and `scale`
 * subresources discovery lists (`.spec.replicas`/`.status.replicas`), and for groups under
 * `k8s.io`/`kubernetes.io` kcp's `api-approved.kubernetes.io` annotation. A resource the cluster
 * serves from a CRD of its own takes that CRD's schema and printer columns (a non-structural one,
 * or one without the version, becomes "any object"); others take the structural schema of the
 * kind's OpenAPI definition (./openapi.ts).
 *
 * Bounds: every answer of the cluster is read up to {@link MAX_OPENAPI_DOCUMENT_BYTES} (the
 * client's limit) within the client's timeout; the schema walk has its own bounds (./openapi.ts).
 * A resource that cannot be pulled is reported in `errors` and the others are still pulled.
 */
import { RestClient, type Connection, type RestResponse } from '../client/rest.js';
import { readKubeconfig, resolveKubeconfigContext } from '../pki/kubeconfig.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { isObj } from '../apimachinery/objects.js';
import { MAX_NESTING_DEPTH, valueDeeperThan } from '../apimachinery/depth.js';
import { SchemaPullError, structuralSchemaForKind, type SchemaNode } from './openapi.js';

/** Largest discovery or OpenAPI answer read from a downstream cluster (bytes; core/v1 of kube 1.34 is 1.4 MB). */
export const MAX_OPENAPI_DOCUMENT_BYTES = 16 * 1024 * 1024;
/** At most this many resources are pulled in one call. */
export const MAX_PULLED_RESOURCES = 200;
/** Wait for one answer of the downstream cluster (ms). */
export const PULL_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A server and the path its API sits under: `''` for a Kubernetes cluster, `/clusters/<name>`
 * for a kcp workspace (what a kubeconfig's `server` URL holds after the host).
 */
export interface APIEndpoint {
  client: RestClient;
  path?: string;
}

/** A resource that could not be pulled, and why. */
export interface PullError { resource: string; message: string }

/** Result of {@link pullCRDs}. */
export interface PulledCRDs {
  /** One CRD (apiextensions.k8s.io/v1) per resource pulled, in the order asked. */
  crds: KubeObject[];
  errors: PullError[];
}

/** kcp's value of `api-approved.kubernetes.io` on pulled CRDs of protected groups. */
export const KCP_API_APPROVED_VALUE = 'https://github.com/kcp-dev/kubernetes/pull/4';

interface DiscoveredResource {
  name: string; singularName?: string; namespaced?: boolean; kind: string;
  shortNames?: string[]; categories?: string[];
}

/** `deployments.apps` → {resource, group}; `services`, `services.core` → core group (kube's ParseGroupResource, kcp's `core`). */
export function parseGroupResource(s: string): { resource: string; group: string } {
  const i = s.indexOf('.');
  if (i < 0) return { resource: s, group: '' };
  const group = s.slice(i + 1);
  return { resource: s.slice(0, i), group: group === 'core' ? '' : group };
}

/** kube's `IsProtectedCommunityGroup` (apiextensions apihelpers): groups under k8s.io and kubernetes.io. */
export function isProtectedCommunityGroup(group: string): boolean {
  return group === 'k8s.io' || group.endsWith('.k8s.io') || group === 'kubernetes.io' || group.endsWith('.kubernetes.io');
}

async function getJSON(ep: APIEndpoint, path: string): Promise<RestResponse> {
  return ep.client.request('GET', `${ep.path ?? ''}${path}`, undefined, { timeoutMs: PULL_REQUEST_TIMEOUT_MS });
}

function failure(what: string, res: RestResponse): Error {
  const msg = isObj(res.json) && typeof res.json.message === 'string' ? res.json.message : res.body.slice(0, 200);
  return new Error(`${what}: HTTP ${res.status}: ${msg}`);
}

/**
 * Pulls `resources` (`deployments.apps`, `services`, `ingresses.networking.k8s.io`, … — plural,
 * singular, short name or kind, dot, group) from a cluster as CRDs (see the module comment).
 * @param downstream the cluster (its credentials need get on discovery, `/openapi/v3` and,
 *   optionally, customresourcedefinitions)
 * @returns the CRDs and per-resource errors (unknown resource, no schema, schema refused)
 * @throws Error when discovery itself fails (cluster unreachable, HTTP error on `/api` or `/apis`)
 */
export async function pullCRDs(downstream: APIEndpoint, resources: readonly string[]): Promise<PulledCRDs> {
  const errors: PullError[] = [];
  const wanted = [...new Set(resources.map((r) => r.trim()).filter(Boolean))];
  if (wanted.length > MAX_PULLED_RESOURCES) throw new Error(`at most ${MAX_PULLED_RESOURCES} resources can be pulled at once, not ${wanted.length}`);

  // Preferred version of each group the resources name.
  const groups = new Map<string, string>([['', 'v1']]);
  const apis = await getJSON(downstream, '/apis');
  if (apis.status !== 200) throw failure('discovery /apis', apis);
  for (const g of Array.isArray(apis.json?.groups) ? apis.json.groups as unknown[] : []) {
    if (!isObj(g) || typeof g.name !== 'string') continue;
    const pv = isObj(g.preferredVersion) && typeof g.preferredVersion.version === 'string' ? g.preferredVersion.version : undefined;
    if (pv) groups.set(g.name, pv);
  }
  const lists = new Map<string, DiscoveredResource[]>();
  const resourcesOf = async (group: string, version: string): Promise<DiscoveredResource[]> => {
    const gv = group ? `/apis/${group}/${version}` : `/api/${version}`;
    let list = lists.get(gv);
    if (!list) {
      const res = await getJSON(downstream, gv);
      if (res.status !== 200) throw failure(`discovery ${gv}`, res);
      list = (Array.isArray(res.json?.resources) ? res.json.resources as unknown[] : [])
        .filter((r): r is DiscoveredResource => isObj(r) && typeof r.name === 'string' && typeof r.kind === 'string');
      lists.set(gv, list);
    }
    return list;
  };
  const documents = new Map<string, Promise<Record<string, unknown>>>();
  const definitionsOf = (group: string, version: string): Promise<Record<string, unknown>> => {
    const path = group ? `/openapi/v3/apis/${group}/${version}` : `/openapi/v3/api/${version}`;
    let doc = documents.get(path);
    if (!doc) {
      doc = getJSON(downstream, path).then((res) => {
        if (res.status !== 200) throw failure(`OpenAPI ${path}`, res);
        const schemas = isObj(res.json) && isObj(res.json.components) ? res.json.components.schemas : undefined;
        if (!isObj(schemas)) throw new SchemaPullError(`OpenAPI ${path} has no components.schemas`);
        return schemas;
      });
      documents.set(path, doc);
    }
    return doc;
  };

  const crds: KubeObject[] = [];
  for (const name of wanted) {
    try {
      const { resource, group } = parseGroupResource(name);
      const version = groups.get(group);
      if (!version) throw new Error(`the server does not serve the group ${JSON.stringify(group)}`);
      const list = await resourcesOf(group, version);
      const lower = resource.toLowerCase();
      const main = list.filter((r) => !r.name.includes('/'));
      const found = main.find((r) => r.name === lower) ?? main.find((r) => r.singularName === lower)
        ?? main.find((r) => r.shortNames?.includes(lower)) ?? main.find((r) => r.kind.toLowerCase() === lower);
      if (!found) throw new Error(`the server does not serve ${JSON.stringify(resource)} in ${group ? `${group}/` : ''}${version}`);
      crds.push(await pullOne(downstream, group, version, found, list, definitionsOf));
    } catch (err) {
      errors.push({ resource: name, message: err instanceof Error ? err.message : String(err) });
    }
  }
  return { crds, errors };
}

async function pullOne(downstream: APIEndpoint, group: string, version: string, r: DiscoveredResource, list: DiscoveredResource[],
  definitionsOf: (group: string, version: string) => Promise<Record<string, unknown>>): Promise<KubeObject> {
  const crdName = `${r.name}.${group || 'core'}`;
  let schema: SchemaNode | undefined;
  let printerColumns: unknown[] | undefined;
  let approved: string | undefined;
  // A CRD of the cluster: its own schema (kcp's getCRD). Not found or not readable: OpenAPI.
  if (group) {
    const res = await getJSON(downstream, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(`${r.name}.${group}`)}`);
    if (res.status === 200 && isObj(res.json)) {
      const crd = res.json as KubeObject & { spec?: { versions?: Array<{ name?: string; schema?: { openAPIV3Schema?: unknown }; additionalPrinterColumns?: unknown[] }> }; status?: { conditions?: Array<{ type?: string; status?: string }> } };
      const nonStructural = crd.status?.conditions?.some((c) => c.type === 'NonStructuralSchema' && c.status === 'True');
      const v = crd.spec?.versions?.find((x) => x.name === version);
      if (nonStructural || !v || !isObj(v.schema?.openAPIV3Schema)) schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
      else if (valueDeeperThan(v.schema!.openAPIV3Schema, MAX_NESTING_DEPTH)) throw new SchemaPullError(`the CRD's schema nests deeper than ${MAX_NESTING_DEPTH} levels`);
      else { schema = structuredClone(v.schema!.openAPIV3Schema) as SchemaNode; printerColumns = v.additionalPrinterColumns; }
      approved = crd.metadata?.annotations?.['api-approved.kubernetes.io'];
    } else if (res.status !== 404 && res.status !== 403) {
      throw failure(`get customresourcedefinition ${r.name}.${group}`, res);
    }
  }
  schema ??= structuralSchemaForKind(await definitionsOf(group, version), group, version, r.kind);

  const has = (sub: string) => list.some((x) => x.name === `${r.name}/${sub}`);
  const subresources: Record<string, unknown> = {};
  if (has('status')) subresources.status = {};
  if (has('scale')) subresources.scale = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' };
  const annotations: Record<string, string> = {};
  if (isProtectedCommunityGroup(group)) annotations['api-approved.kubernetes.io'] = approved || KCP_API_APPROVED_VALUE;
  const names: Record<string, unknown> = { plural: r.name, singular: r.singularName || r.kind.toLowerCase(), kind: r.kind, listKind: `${r.kind}List` };
  if (r.shortNames?.length) names.shortNames = [...r.shortNames];
  if (r.categories?.length) names.categories = [...r.categories];
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: crdName, ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: {
      group, names, scope: r.namespaced ? 'Namespaced' : 'Cluster',
      versions: [{
        name: version, served: true, storage: true, schema: { openAPIV3Schema: schema },
        ...(Object.keys(subresources).length ? { subresources } : {}),
        ...(printerColumns?.length ? { additionalPrinterColumns: printerColumns } : {}),
      }],
    },
  };
}

/**
 * A client for pulling from a cluster: few connections, answers read up to
 * {@link MAX_OPENAPI_DOCUMENT_BYTES} (a larger one fails that resource, never the process).
 */
export function pullClient(conn: Connection): RestClient {
  return new RestClient(conn, 4, MAX_OPENAPI_DOCUMENT_BYTES);
}

/**
 * An endpoint from a kubeconfig's context (its server URL's path becomes the endpoint's path, e.g.
 * `/clusters/root:org:ws`), with a {@link pullClient}. Credentials must be embedded (certificate
 * data or a token), as the kubeconfigs kcp and `kubectl kcp workload sync` write.
 * @param text the kubeconfig (YAML)
 * @param context the context to use; default its current-context
 * @throws KubeconfigError for a kubeconfig that does not parse or lacks the context, cluster or user
 */
export function endpointFromKubeconfig(text: string, context?: string): APIEndpoint {
  const ctx = resolveKubeconfigContext(readKubeconfig(text), context);
  const url = new URL(ctx.server);
  return {
    path: url.pathname.replace(/\/+$/, ''),
    client: pullClient({
      url: url.origin, ca: ctx.caPem ?? '', ...(ctx.certPem ? { cert: ctx.certPem } : {}), ...(ctx.keyPem ? { key: ctx.keyPem } : {}),
      ...(ctx.token ? { token: ctx.token } : {}), ...(ctx.tlsServerName ? { serverName: ctx.tlsServerName } : {}),
    }),
  };
}
