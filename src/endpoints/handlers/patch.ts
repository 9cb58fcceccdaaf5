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
import { hasProtobuf, isBuiltin } from '../protobufwire.js';
import { addWarnings, beforeDecoding, requestScope } from './scope.js';

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
    // kube's CRD handler names the patch types it takes (no strategic merge patch); protobuf is never one.
    const accepted = isBuiltin(store.desc) ? Object.values(PATCH_TYPES) : [PATCH_TYPES.json, PATCH_TYPES.merge, PATCH_TYPES.apply];
    throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`);
  }
  if (!body?.length) throw badRequest('the patch body is empty');
  await beforeDecoding(req);
  if (ct === PATCH_TYPES.apply) {
    if (info.subresource) throw new StatusError(415, 'UnsupportedMediaType', `server-side apply is not supported on the ${info.subresource} subresource yet`);
    if (!query.get('fieldManager')) {
      throw invalid('PatchOptions', 'meta.k8s.io', '', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }]);
    }
    const applied = decodeApplyPatch(body);
    const res = await store.apply(scope, info.name, applied.value, queryBool(query, 'force') === true, applied.repeatedKeys);
    addWarnings(reply, scope);
    return sendObject(reply, res.created ? 201 : 200, res.json, store.desc, out, query);
  }
  if (info.subresource === 'scale') return send(reply, 200, await store.patchScale(scope, info.name, ct, body), out);
  const json = await store.patch(scope, info.name, ct, body, info.subresource || undefined);
  addWarnings(reply, scope);
  return sendObject(reply, 200, json, store.desc, out, query);
};
