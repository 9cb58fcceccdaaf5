/**
 * The end of the request chain: routes a request that passed every filter to its handler —
 * OpenAPI, other non-resource paths, the caller's home workspace, else the handler of its verb
 * (one module each, as kube's k8s.io/apiserver/pkg/endpoints/handlers).
 */
import { methodNotAllowed } from '../../apimachinery/errors.js';
import type { Handler } from '../context.js';
import { negotiateOutput } from '../negotiation.js';
import { send } from '../response.js';
import { createResource } from './create.js';
import { deleteCollection, deleteResource } from './delete.js';
import { getResource } from './get.js';
import { listResource } from './list.js';
import { serveNonResource } from './nonresource.js';
import { serveOpenAPI } from './openapi.js';
import { patchResource } from './patch.js';
import { updateResource } from './update.js';
import { watchResource } from './watch.js';

/** The handler of each Kubernetes verb of a resource request. */
export const VERB_HANDLERS: Readonly<Record<string, Handler>> = {
  get: getResource, list: listResource, watch: watchResource, create: createResource, update: updateResource,
  patch: patchResource, delete: deleteResource, deletecollection: deleteCollection,
};

/** `GET …/workspaces/~` in root: the caller's home workspace, created on first use (kcp). */
const serveHomeWorkspace: Handler = async (ctx, req, reply) => send(reply, 200, await ctx.homeWorkspace(req.kcpUser!), negotiateOutput(req.headers.accept, { shape: 'object', protobuf: false }));

/** Routes to the handler; 405 for a verb no handler serves. */
export const serveRequest: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  if (info.path === '/openapi' || info.path.startsWith('/openapi/')) return serveOpenAPI(ctx, req, reply);
  if (!info.isResourceRequest) return serveNonResource(ctx, req, reply);
  if (req.kcpHome) return serveHomeWorkspace(ctx, req, reply);
  const handler = VERB_HANDLERS[info.verb];
  if (!handler) throw methodNotAllowed('the server does not allow this method on the requested resource');
  return handler(ctx, req, reply);
};
