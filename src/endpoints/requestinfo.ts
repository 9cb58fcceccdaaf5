/**
 * Parses a request path into what it addresses, as kube-apiserver's RequestInfoFactory
 * (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), behind kcp's `/clusters/<name>` prefix.
 */
import { badRequest } from '../apimachinery/errors.js';
import { isValidPath } from '../tenancy/paths.js';

/** What a request addresses. */
export interface RequestInfo {
  /** Logical cluster name or path, `*` for wildcard, or '' for a path without `/clusters/`. */
  cluster: string;
  /** The path below the cluster prefix, e.g. `/api/v1/namespaces`. */
  path: string;
  isResourceRequest: boolean;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection. */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** Decodes one path segment; malformed percent-encoding is the client's mistake (400). */
function decodeSegment(segment: string): string {
  try { return decodeURIComponent(segment); } catch {
    throw badRequest(`malformed URL path segment "${segment}"`);
  }
}

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

const methodVerbs: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/**
 * Parses method + URL path. Throws 400 for a malformed cluster segment.
 * A true `watch` parameter (see {@link queryBool}) on a list turns the verb into `watch` (kube's rule).
 */
export function parseRequestInfo(method: string, rawPath: string, query: URLSearchParams): RequestInfo {
  let path = rawPath;
  let cluster = '';
  if (path.startsWith('/clusters/')) {
    const rest = path.slice('/clusters/'.length);
    const slash = rest.indexOf('/');
    cluster = decodeSegment(slash < 0 ? rest : rest.slice(0, slash));
    path = slash < 0 ? '/' : rest.slice(slash);
    if (!isValidPath(cluster)) throw badRequest(`invalid logical cluster name or path "${cluster}"`);
  }
  const info: RequestInfo = {
    cluster, path, isResourceRequest: false, verb: (method === 'GET' || method === 'HEAD') ? 'get' : method.toLowerCase(),
    apiPrefix: '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '',
  };
  const parts = path.split('/').filter((p) => p !== '').map(decodeSegment);
  if (parts.length < 1 || (parts[0] !== 'api' && parts[0] !== 'apis')) return info;
  info.apiPrefix = parts[0]!;
  let i = 1;
  if (info.apiPrefix === 'apis') {
    if (parts.length < 3) return info; // /apis, /apis/<group>: discovery
    info.apiGroup = parts[1]!;
    i = 2;
  } else if (parts.length < 2) {
    return info; // /api
  }
  info.apiVersion = parts[i]!;
  const rest = parts.slice(i + 1);
  if (rest.length === 0) return info; // group/version discovery
  info.isResourceRequest = true;
  let verb = methodVerbs[method] ?? method.toLowerCase();
  let r = rest;
  if (r[0] === 'watch') { verb = 'watch'; r = r.slice(1); }
  if (r[0] === 'namespaces' && r.length > 1) {
    info.namespace = r[1]!;
    // /namespaces/<ns>/<resource>… unless the next part is a namespace subresource.
    if (r.length > 2 && !NAMESPACE_SUBRESOURCES.has(r[2]!)) r = r.slice(2);
  }
  info.resource = r[0] ?? '';
  if (r.length >= 2) info.name = r[1]!;
  if (r.length >= 3) info.subresource = r[2]!;
  if (r.length > 3) throw badRequest(`unsupported path: ${rawPath}`);
  if (!info.name) {
    if (verb === 'get') verb = queryBool(query, 'watch') ? 'watch' : 'list';
    else if (verb === 'delete') verb = 'deletecollection';
  }
  info.verb = verb;
  return info;
}

/**
 * A boolean query parameter as kube-apiserver decodes it into its options structs
 * (k8s.io/apimachinery runtime `Convert_Slice_string_To_bool`): absent → undefined, `0` or
 * `false` in any case → false, any other value, the empty string included → true. Never throws:
 * kube has no invalid boolean parameter.
 */
export function queryBool(query: URLSearchParams, name: string): boolean | undefined {
  const v = query.get(name);
  if (v === null) return undefined;
  return !(v === '0' || v.toLowerCase() === 'false');
}
