/** PUT (kube: k8s.io/apiserver/pkg/endpoints/handlers/update.go) of an object, its status, scale or namespace finalize subresource. */
import { queryOf, type Handler } from '../context.js';
import { decodeBody, negotiateOutput } from '../negotiation.js';
import { send, sendObject } from '../response.js';
import { acceptsProtobufBody, hasProtobuf } from '../protobufwire.js';
import { addWarnings, beforeDecoding, requestScope } from './scope.js';

/** Answers 200 with the updated object (201 when the resource allows create on update and it did); 409 on a resourceVersion conflict. */
export const updateResource: Handler = async (_ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const scope = requestScope(req);
  const protobuf = hasProtobuf(store.desc);
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf });
  await beforeDecoding(req);
  const decode = (duplicates?: string[]) => decodeBody(req.headers['content-type'], req.body as Buffer | undefined, store.desc.kind, { protobuf: acceptsProtobufBody(store.desc), duplicates });
  const obj = decode(scope.duplicateFields = []);
  if (info.subresource === 'scale') return send(reply, 200, await store.updateScale(scope, info.name, obj), out);
  const res = await store.update(scope, info.name, obj, info.subresource || undefined, () => decode());
  addWarnings(reply, scope);
  return sendObject(reply, res.created ? 201 : 200, res.json, store.desc, out, queryOf(req));
};
