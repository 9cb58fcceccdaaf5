/**
 * The operator's client of the host cluster: plain REST over HTTPS with the credentials of a
 * @kubernetes/client-node `KubeConfig` (in-cluster service account, a kubeconfig file, exec
 * plugins: whatever client-node supports). Writes are server-side apply with the operator's one
 * field manager. Errors are {@link HostApiError} carrying the Kubernetes `Status`.
 */
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { FIELD_MANAGER, type HostObject } from '../api/types.js';

/** A failed request: HTTP `code` and the `Status` the server answered (reason, message). */
export class HostApiError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) { super(message); this.name = 'HostApiError'; }
}

/** True when `err` is a {@link HostApiError} with HTTP status `code`. */
export function isHostStatus(err: unknown, code: number): boolean {
  return err instanceof HostApiError && err.code === code;
}

/** Where a kind is served: API path prefix and resource (plural) name. */
export interface ResourceRef {
  /** `v1`, `apps/v1`, `operator.kcp-ts.io/v1alpha1`. */
  apiVersion: string;
  /** Plural resource name. */
  resource: string;
  /** True for namespaced kinds. */
  namespaced: boolean;
}

/** Resources the operator reads and writes, by kind. */
export const RESOURCES: Record<string, ResourceRef> = {
  KcpInstance: { apiVersion: 'operator.kcp-ts.io/v1alpha1', resource: 'kcpinstances', namespaced: true },
  Shard: { apiVersion: 'operator.kcp-ts.io/v1alpha1', resource: 'shards', namespaced: true },
  RootWorkspace: { apiVersion: 'operator.kcp-ts.io/v1alpha1', resource: 'rootworkspaces', namespaced: true },
  Deployment: { apiVersion: 'apps/v1', resource: 'deployments', namespaced: true },
  StatefulSet: { apiVersion: 'apps/v1', resource: 'statefulsets', namespaced: true },
  ReplicaSet: { apiVersion: 'apps/v1', resource: 'replicasets', namespaced: true },
  CronJob: { apiVersion: 'batch/v1', resource: 'cronjobs', namespaced: true },
  Service: { apiVersion: 'v1', resource: 'services', namespaced: true },
  Secret: { apiVersion: 'v1', resource: 'secrets', namespaced: true },
  ConfigMap: { apiVersion: 'v1', resource: 'configmaps', namespaced: true },
  Pod: { apiVersion: 'v1', resource: 'pods', namespaced: true },
  Lease: { apiVersion: 'coordination.k8s.io/v1', resource: 'leases', namespaced: true },
  Event: { apiVersion: 'v1', resource: 'events', namespaced: true },
};

/** The collection path of a kind (`/apis/apps/v1/namespaces/ns/deployments`); all namespaces without `namespace`. */
export function collectionPath(kind: string, namespace?: string): string {
  const ref = RESOURCES[kind];
  if (!ref) throw new Error(`kind ${kind} is not known to the operator`);
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  return ref.namespaced && namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${ref.resource}` : `${base}/${ref.resource}`;
}

/** The path of one object (optionally a subresource such as `status`). */
export function objectPath(kind: string, namespace: string | undefined, name: string, subresource?: string): string {
  return `${collectionPath(kind, namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
}

/** Counts of requests by verb, for the benchmark's "writes while nothing changes". */
export interface RequestCounts { reads: number; writes: number }

/** REST client of the host cluster (see the module comment). */
export class HostClient {
  /** Requests sent so far, reads (GET) and writes (everything else). */
  readonly counts: RequestCounts = { reads: 0, writes: 0 };
  private readonly server: URL;

  constructor(readonly kubeConfig: KubeConfig) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
  }

  /**
   * Sends one request; resolves to the parsed JSON answer (undefined for an empty body).
   * @throws {HostApiError} on an HTTP status ≥ 400, with the answer's Status reason and message
   */
  async request<T = unknown>(method: string, path: string, body?: unknown, contentType = 'application/json', query: Record<string, string> = {}): Promise<T> {
    if (method === 'GET') this.counts.reads++; else this.counts.writes++;
    const url = new URL(this.server.pathname.replace(/\/$/, '') + path, this.server);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const opts: RequestOptions = { method, hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers: { Accept: 'application/json' } };
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    if (payload) Object.assign(opts.headers!, { 'Content-Type': contentType, 'Content-Length': String(payload.length) });
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise<T>((resolve, reject) => {
      const req = send(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
          const code = res.statusCode ?? 0;
          if (code >= 400) {
            const status = (parsed ?? {}) as { reason?: string; message?: string };
            reject(new HostApiError(code, status.reason ?? 'Unknown', `${method} ${url.pathname}: ${status.message ?? (text.slice(0, 200) || `HTTP ${code}`)}`));
            return;
          }
          resolve(parsed as T);
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${url.pathname}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** GETs an object; undefined when it does not exist. */
  async get<T extends HostObject>(kind: string, namespace: string | undefined, name: string): Promise<T | undefined> {
    try { return await this.request<T>('GET', objectPath(kind, namespace, name)); } catch (err) {
      if (isHostStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** Lists a kind (all namespaces without `namespace`), optionally by label selector. */
  async list<T extends HostObject>(kind: string, namespace?: string, labelSelector?: string): Promise<{ metadata: { resourceVersion?: string }; items: T[] }> {
    return this.request('GET', collectionPath(kind, namespace), undefined, undefined, labelSelector ? { labelSelector } : {});
  }

  /**
   * Server-side applies `obj` (its kind from `obj.kind`) with the operator's field manager,
   * forcing conflicts (the operator owns what it declares). `subresource: 'status'` applies status.
   */
  async apply<T extends HostObject>(obj: HostObject, subresource?: string): Promise<T> {
    return this.request<T>('PATCH', objectPath(obj.kind, obj.metadata.namespace, obj.metadata.name, subresource), obj, 'application/apply-patch+yaml', { fieldManager: FIELD_MANAGER, force: 'true' });
  }

  /** JSON-merge-patches an object. */
  async mergePatch<T extends HostObject>(kind: string, namespace: string | undefined, name: string, patch: unknown, subresource?: string): Promise<T> {
    return this.request<T>('PATCH', objectPath(kind, namespace, name, subresource), patch, 'application/merge-patch+json', { fieldManager: FIELD_MANAGER });
  }

  /** Deletes an object (background propagation); true if it existed. */
  async delete(kind: string, namespace: string | undefined, name: string, preconditionUid?: string): Promise<boolean> {
    try {
      await this.request('DELETE', objectPath(kind, namespace, name), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', ...(preconditionUid ? { preconditions: { uid: preconditionUid } } : {}) });
      return true;
    } catch (err) {
      if (isHostStatus(err, 404)) return false;
      throw err;
    }
  }
}
