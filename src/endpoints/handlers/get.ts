/** GET of one object, or of its `scale` subresource (kube: k8s.io/apiserver/pkg/endpoints/handlers/get.go). */
import type { Handler } from '../context.js';
import { queryOf } from '../context.js';
import { negotiateOutput } from '../negotiation.js';
import { send, sendObject } from '../response.js';
import { hasProtobuf } from '../protobufwire.js';
import { requestScope } from './scope.js';

/** Answers the object as negotiated (JSON, YAML, protobuf for built-in kinds); 404 when it does not exist. */
export const getResource: Handler = async (_ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const scope = requestScope(req);
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf: hasProtobuf(store.desc) });
  if (info.subresource === 'scale') return send(reply, 200, await store.getScale(scope, info.name), out);
  return sendObject(reply, 200, await store.get(scope, info.name), store.desc, out, queryOf(req));
};
