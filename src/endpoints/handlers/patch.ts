/**
 * PATCH (kube: k8s.io/apiserver/pkg/endpoints/handlers/patch.go): JSON patch, merge patch,
 * strategic merge patch, or server-side apply (`application/apply-patch+yaml`, which needs a
 * `fieldManager`).
 */
import { StatusError, badRequest, invalid } from '../../apimachinery/errors.js';
import { PATCH_TYPES } from '../../registry/store.js';
import { queryOf, type Handler } from '../context.js';
import { decodeApplyPatch, negotiateOutput } from '../negotiation.js';
import { queryBool } from '../requestinfo.js';
import { send, sendObject } from '../response.js';
import { hasProtobuf } from '../protobufwire.js';
import { addWarnings, requestScope } from './scope.js';

/** Answers the patched object; 415 for an unknown patch type, 400 for an empty patch, 409 for apply conflicts. */
export const patchResource: Handler = async (_ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const query = queryOf(req);
  const scope = requestScope(req);
  const body = req.body as Buffer | undefined;
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf: hasProtobuf(store.desc) });
  const ct = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!Object.values(PATCH_TYPES).includes(ct as never)) {
    throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`);
  }
  if (!body?.length) throw badRequest('the patch body is empty');
  if (ct === PATCH_TYPES.apply) {
    if (info.subresource) throw new StatusError(415, 'UnsupportedMediaType', `server-side apply is not supported on the ${info.subresource} subresource yet`);
    if (!query.get('fieldManager')) {
      throw invalid('PatchOptions', 'meta.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }]);
    }
    const res = await store.apply(scope, info.name, decodeApplyPatch(body), queryBool(query, 'force') === true);
    addWarnings(reply, scope);
    return sendObject(reply, res.created ? 201 : 200, res.json, store.desc, out, query);
  }
  if (info.subresource === 'scale') return send(reply, 200, await store.patchScale(scope, info.name, ct, body), out);
  const json = await store.patch(scope, info.name, ct, body, info.subresource || undefined);
  addWarnings(reply, scope);
  return sendObject(reply, 200, json, store.desc, out, query);
};
