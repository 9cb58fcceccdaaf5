/**
 * POST (kube: k8s.io/apiserver/pkg/endpoints/handlers/create.go): creates an object, a virtual
 * resource (access reviews, answered and not stored) or an extra subresource (`serviceaccounts/token`).
 */
import { StatusError } from '../../apimachinery/errors.js';
import type { KubeObject } from '../../apimachinery/meta.js';
import { DEEP_SAR_HEADER, queryOf, type Handler } from '../context.js';
import { decodeBody, negotiateOutput } from '../negotiation.js';
import { send, sendObject } from '../response.js';
import { acceptsProtobufBody, hasProtobuf } from '../protobufwire.js';
import { addWarnings, beforeDecoding, requestScope } from './scope.js';

/** Answers 201 with the created object; 409 when it exists, 422 when invalid. */
export const createResource: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const desc = store.desc;
  const query = queryOf(req);
  const scope = requestScope(req);
  const protobuf = hasProtobuf(desc);
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf, table: !desc.virtual && !info.subresource });
  await beforeDecoding(req);
  const obj = decodeBody(req.headers['content-type'], req.body as Buffer | undefined, desc.kind, { protobuf: acceptsProtobufBody(store.desc), duplicates: scope.duplicateFields = [] });
  // Only extra subresources take `create` (filters/resource.ts answered 404/405 for the others).
  if (info.subresource) {
    const create = ctx.subresourceCreate?.[`${desc.group}/${desc.plural}/${info.subresource}`];
    if (!create) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    return send(reply, 201, await create(scope, info.name, obj), out);
  }
  if (desc.virtual) {
    const checked = store.checkBody(obj, scope);
    const user = req.kcpUser!;
    const deep = req.headers[DEEP_SAR_HEADER] === 'true' && user.groups.includes('system:masters');
    return sendObject(reply, 201, JSON.stringify(await ctx.createVirtual(desc, checked as KubeObject, user, info.cluster, deep)), desc, out, query);
  }
  const json = await store.create(scope, obj);
  addWarnings(reply, scope);
  return sendObject(reply, 201, json, desc, out, query);
};
