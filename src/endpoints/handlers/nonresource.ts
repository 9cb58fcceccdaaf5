/**
 * Non-resource paths served at the shard's base and under every `/clusters/<path>` (as kcp):
 * `/version`, the health endpoints, and discovery (`/api`, `/apis`, their group and version
 * documents, aggregated discovery when asked for).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { methodNotAllowed, notFound } from '../../apimachinery/errors.js';
import { answerHealth, healthEndpointOf, type HealthEndpoint } from '../../server/health.js';
import { aggregatedDiscovery, apiGroupDoc, apiGroupList, apiResourceList, apiVersions } from '../discovery.js';
import { apisOf, queryOf, VERSION_INFO, type AppContext, type Handler } from '../context.js';
import { encodeKubernetesProtobuf, KUBERNETES_PROTOBUF_MEDIA_TYPE, protobufMessageFor } from '../../apimachinery/protobuf.js';
import { negotiateOutput } from '../negotiation.js';
import { send } from '../response.js';

/** Answers a health endpoint (src/server/health.ts) in kube's plain-text form; failing checks are logged. */
export function serveHealth(ctx: AppContext, req: FastifyRequest, reply: FastifyReply, endpoint: HealthEndpoint, subPath: string): void {
  const res = answerHealth(endpoint, ctx.healthChecks[endpoint], subPath, queryOf(req), (name, reason) => req.log.warn(`${endpoint} check ${name} failed: ${reason}`));
  reply.code(res.code).header('x-content-type-options', 'nosniff').type('text/plain; charset=utf-8').send(res.body);
}

/**
 * The apiVersion and kind of the discovery document of a path's segments (`/api`: APIVersions,
 * unversioned; `/apis`: APIGroupList; `/apis/<g>`: APIGroup; a group version: APIResourceList):
 * kube serves them in protobuf too (meta/v1 messages of the codec), as it does aggregated discovery.
 */
function discoveryKind(parts: readonly string[]): [string, string] {
  if (parts[0] === 'api') return parts.length === 1 ? ['', 'APIVersions'] : ['v1', 'APIResourceList'];
  return parts.length === 1 ? ['v1', 'APIGroupList'] : parts.length === 2 ? ['v1', 'APIGroup'] : ['v1', 'APIResourceList'];
}

/** `/version`, health, else discovery; 404 for any other path, 405 for a write to a discovery path. */
export const serveNonResource: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  if (req.method === 'GET' && (info.path === '/version' || info.path === '/version/')) return send(reply, 200, VERSION_INFO, negotiateOutput(req.headers.accept, { shape: 'object', protobuf: false }));
  const health = req.method === 'GET' ? healthEndpointOf(info.path) : undefined;
  if (health) return serveHealth(ctx, req, reply, health[0], health[1]);
  const parts = info.path.split('/').filter(Boolean);
  // A path that is no discovery document is unknown whatever the method (kube: 404, not 405).
  if (parts[0] !== 'api' && parts[0] !== 'apis') throw notFound({ group: '', resource: '' }, info.path);
  if (info.verb !== 'get') throw methodNotAllowed('the server does not allow this method on the requested resource');
  const descs = apisOf(ctx, req, info.cluster).descriptors;
  const [docVersion, docKind] = discoveryKind(parts);
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf: protobufMessageFor(docVersion, docKind) !== undefined, discovery: parts.length === 1 });
  if (parts.length === 1 && out.discovery) {
    const doc = aggregatedDiscovery(descs, parts[0] === 'api', out.discovery) as Record<string, unknown>;
    // A Buffer: the media type as kube writes it (responsewriters generateMediaTypeWithGVK: the
    // serialization's type with g, v and as), without the charset Fastify adds to a string.
    const protobuf = out.media === 'protobuf';
    const media = protobuf ? KUBERNETES_PROTOBUF_MEDIA_TYPE : 'application/json';
    reply.code(200).header('Vary', 'Accept').type(`${media};g=apidiscovery.k8s.io;v=${out.discovery};as=APIGroupDiscoveryList`)
      .send(protobuf ? encodeKubernetesProtobuf(doc) : Buffer.from(JSON.stringify(doc)));
    return;
  }
  let doc: object | undefined;
  if (parts[0] === 'api') {
    if (parts.length === 1) doc = apiVersions(ctx.externalAddress);
    else if (parts.length === 2) doc = apiResourceList(descs, '', parts[1]!);
  } else if (parts[0] === 'apis') {
    if (parts.length === 1) doc = apiGroupList(descs);
    else if (parts.length === 2) doc = apiGroupDoc(descs, parts[1]!);
    else if (parts.length === 3) doc = apiResourceList(descs, parts[1]!, parts[2]!);
  }
  if (!doc) throw notFound({ group: '', resource: '' }, info.path);
  if (out.media === 'protobuf' && docVersion === '') {
    // `/api`'s APIVersions: JSON without an apiVersion, protobuf with an empty one in its envelope
    // (apiserver endpoints/discovery/legacy.go's stripVersionEncoder).
    reply.code(200).type(KUBERNETES_PROTOBUF_MEDIA_TYPE).send(encodeKubernetesProtobuf({ ...doc, apiVersion: docVersion }));
    return;
  }
  send(reply, 200, doc, out);
};
