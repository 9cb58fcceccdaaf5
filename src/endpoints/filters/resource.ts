/**
 * Resolves the REST store a resource request addresses (sets `req.kcpStore`) and answers what the
 * API does not serve: an unknown resource or subresource (404), a verb the resource does not take
 * (405, kube's MethodNotAllowed), a namespace on a cluster-scoped resource (404), wildcard
 * (`/clusters/*`) requests other than list and watch (405, kcp).
 */
import type { FastifyRequest } from 'fastify';
import { StatusError, methodNotAllowed } from '../../apimachinery/errors.js';
import { apisOf, type Filter } from '../context.js';

const notFound = () => new StatusError(404, 'NotFound', 'the server could not find the requested resource');
const notAllowed = () => methodNotAllowed('the server does not allow this method on the requested resource');

/**
 * The namespace a resource request is scoped to: '' for a cluster-scoped resource, whose path may
 * still name one (`namespaces/<n>` is the Namespace's name, not its scope).
 */
export function scopeNamespace(req: FastifyRequest): string {
  return req.kcpStore?.desc.namespaced ? req.kcpInfo!.namespace : '';
}

/** Resource requests only; non-resource requests and the home workspace pass through. */
export const withResource: Filter = async (ctx, req, reply, next) => {
  const info = req.kcpInfo!;
  if (!info.isResourceRequest || req.kcpHome) return next(ctx, req, reply);
  if (!info.cluster) {
    const q = req.url.indexOf('?');
    throw new StatusError(404, 'NotFound', `the server could not find the requested resource: use /clusters/<logical cluster>${q < 0 ? req.url : req.url.slice(0, q)}`);
  }
  const store = apisOf(ctx, req, info.cluster).store(info.apiGroup, info.apiVersion, info.resource);
  if (!store) throw notFound();
  const desc = store.desc;
  if (info.subresource) {
    const extra = desc.extraSubresources?.find((s) => s.name === info.subresource);
    const served = extra !== undefined || (info.subresource === 'status' && desc.hasStatus) || (info.subresource === 'scale' && desc.scale !== undefined)
      || (info.subresource === 'finalize' && desc.group === '' && desc.plural === 'namespaces' && info.verb === 'update');
    if (!served) throw notFound();
    if (!(extra?.verbs ?? ['get', 'update', 'patch']).includes(info.verb)) throw notAllowed();
  } else if (!desc.verbs.includes(info.verb)) throw notAllowed();
  if (info.cluster === '*' && info.verb !== 'list' && info.verb !== 'watch') {
    throw methodNotAllowed(`the wildcard logical cluster "*" supports only list and watch`);
  }
  if (!desc.namespaced && info.namespace && info.resource !== 'namespaces') throw notFound();
  if (desc.namespaced && !info.namespace && !['list', 'watch'].includes(info.verb)) throw notFound();
  req.kcpStore = store;
  return next(ctx, req, reply);
};
