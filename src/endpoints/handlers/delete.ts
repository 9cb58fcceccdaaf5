/** DELETE of one object and of a collection (kube: k8s.io/apiserver/pkg/endpoints/handlers/delete.go). */
import type { KubeObject } from '../../apimachinery/meta.js';
import { queryOf, type Handler } from '../context.js';
import { negotiateOutput } from '../negotiation.js';
import { send, sendList, sendObject } from '../response.js';
import { hasProtobuf } from '../protobufwire.js';
import { deleteOptions, listOptions, requestScope } from './scope.js';

/**
 * Answers a Success Status when the object is gone; the object itself when it stays (finalizers,
 * foreground deletion): 202 Accepted when the client asked for cascading deletion with
 * `orphanDependents=false`, 200 otherwise (kube's handlers/delete.go).
 */
export const deleteResource: Handler = async (_ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const desc = store.desc;
  const query = queryOf(req);
  const scope = requestScope(req);
  const out = negotiateOutput(req.headers.accept, { shape: 'object', protobuf: hasProtobuf(desc) });
  const opts = deleteOptions(req, query);
  const res = await store.delete(scope, info.name, opts);
  if (!res.deleted) return sendObject(reply, opts.orphanDependents === false ? 202 : 200, res.json, desc, out, query);
  const obj = JSON.parse(res.json) as KubeObject;
  return send(reply, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: info.name, group: desc.group, kind: desc.plural, uid: obj.metadata.uid } }, out);
};

/** Deletes what a list with the same options would return; answers the list of deleted objects. */
export const deleteCollection: Handler = async (_ctx, req, reply) => {
  const store = req.kcpStore!;
  const query = queryOf(req);
  const scope = requestScope(req);
  const out = negotiateOutput(req.headers.accept, { shape: 'list', protobuf: hasProtobuf(store.desc, true) });
  const removed = await store.deleteCollection(scope, listOptions(query), deleteOptions(req, query));
  await store.prepare(removed);
  return sendList(reply, removed, {}, store, out, query, false);
};
