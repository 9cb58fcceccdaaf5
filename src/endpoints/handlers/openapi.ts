/**
 * `/openapi/v2` (JSON, or gnostic protobuf when asked: kubectl 1.27/1.28 accept only that),
 * `/openapi/v3` and its per-group-version documents, each rendered once per descriptor set.
 */
import { StatusError } from '../../apimachinery/errors.js';
import type { ResourceDescriptor } from '../../apis/types.js';
import { buildOpenAPIV2, buildOpenAPIV3GroupVersion, buildOpenAPIV3Root } from '../../apis/openapi.js';
import { encodeOpenAPIV2Protobuf } from '../../apis/openapiv2proto.js';
import { apisOf, type Handler } from '../context.js';

/** OpenAPI documents rendered once per descriptor set (a set is replaced, not changed, when APIs change). */
interface OpenAPICache { v2json?: string; v2proto?: Buffer; v3root?: string; gv: Map<string, string | null> }
const openapiCache = new WeakMap<ResourceDescriptor[], OpenAPICache>();

/** Answers the document; 404 for an unknown group-version. */
export const serveOpenAPI: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  const descs = apisOf(ctx, req, info.cluster).descriptors;
  let cache = openapiCache.get(descs);
  if (!cache) { cache = { gv: new Map() }; openapiCache.set(descs, cache); }
  if (info.path === '/openapi/v2') {
    const accept = req.headers.accept ?? '';
    if (accept.includes('proto-openapi.spec.v2')) {
      cache.v2proto ??= encodeOpenAPIV2Protobuf(buildOpenAPIV2(descs) as Record<string, unknown>);
      // Go's media-type parser rejects '@': answer with the dotted form, as kube-openapi does.
      reply.type('application/com.github.proto-openapi.spec.v2.v1.0+protobuf').send(cache.v2proto);
      return;
    }
    cache.v2json ??= JSON.stringify(buildOpenAPIV2(descs));
    reply.type('application/json').send(cache.v2json);
    return;
  }
  if (info.path === '/openapi/v3') {
    cache.v3root ??= JSON.stringify(buildOpenAPIV3Root(descs));
    const root = JSON.parse(cache.v3root) as { paths: Record<string, { serverRelativeURL: string }> };
    if (info.cluster) {
      // Clients follow serverRelativeURL: keep them inside the logical cluster.
      for (const v of Object.values(root.paths)) v.serverRelativeURL = `${req.kcpPrefix ?? ''}/clusters/${info.cluster}${v.serverRelativeURL}`;
    }
    reply.type('application/json').send(JSON.stringify(root));
    return;
  }
  const m = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/.exec(info.path);
  if (m) {
    let doc = cache.gv.get(m[1]!);
    if (doc === undefined) {
      const seg = m[1]!.split('/');
      const [group, version] = seg[0] === 'api' ? ['', 'v1'] : [seg[1]!, seg[2]!];
      const built = buildOpenAPIV3GroupVersion(descs, group, version);
      doc = built ? JSON.stringify(built) : null;
      // Only served group-versions are remembered (at most one document each): any name can be asked for.
      if (doc) cache.gv.set(m[1]!, doc);
    }
    if (doc) {
      reply.header('Cache-Control', 'public, immutable').type('application/json').send(doc);
      return;
    }
  }
  throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
};
