/**
 * LIST from the watch cache (kube: k8s.io/apiserver/pkg/endpoints/handlers/get.go ListResource):
 * consistent at one resourceVersion, paged with `limit`/`continue`, filtered by label and field
 * selectors; in a virtual workspace's wildcard view, restricted to what the view shows.
 */
import type { Handler } from '../context.js';
import { queryOf } from '../context.js';
import { negotiateOutput } from '../negotiation.js';
import { sendList } from '../response.js';
import { hasProtobuf } from '../protobufwire.js';
import { listOptions, requestScope } from './scope.js';

/** Answers the list as negotiated; 410 for a continue token or resourceVersion that expired. */
export const listResource: Handler = async (_ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const query = queryOf(req);
  const scope = requestScope(req);
  const out = negotiateOutput(req.headers.accept, { shape: 'list', protobuf: hasProtobuf(store.desc, true) });
  const opts = listOptions(query);
  if (req.kcpView && info.cluster === '*') opts.restrict = req.kcpView.restrict(store, 'list');
  const res = await store.list(scope, opts);
  const converting = store.prepare(res.items);
  if (converting) await converting;
  return sendList(reply, res.items, { resourceVersion: res.resourceVersion, continue: res.continue, remainingItemCount: res.remainingItemCount }, store, out, query, info.cluster === '*');
};
