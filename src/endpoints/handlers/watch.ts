/**
 * WATCH (kube: k8s.io/apiserver/pkg/endpoints/handlers/watch.go): the reply is hijacked and events
 * stream from the watch hub (src/server/watch.ts) as JSON lines, in the negotiated form (objects,
 * Table rows or PartialObjectMetadata), with bookmarks and `sendInitialEvents` as kube.
 */
import { badRequest } from '../../apimachinery/errors.js';
import { withClusterAnnotation } from '../../apimachinery/meta.js';
import type { CacheEntry } from '../../storage/watchcache.js';
import type { Handler } from '../context.js';
import { queryOf } from '../context.js';
import { negotiateOutput } from '../negotiation.js';
import { queryBool } from '../requestinfo.js';
import { parseIncludeObject, partialObjectMetadata, toTable } from '../table.js';
import { annotateCluster, toStatusError } from '../response.js';
import { auditResponseStarted } from '../filters/audit.js';
import { scopeNamespace } from '../filters/resource.js';
import { listOptions, requestScope } from './scope.js';

/** Streams events until the client goes, `timeoutSeconds` (default 1,800) pass, or the server stops. */
export const watchResource: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  const store = req.kcpStore!;
  const desc = store.desc;
  const query = queryOf(req);
  requestScope(req);
  const out = negotiateOutput(req.headers.accept, true);
  const opts = listOptions(query);
  if (req.kcpView && info.cluster === '*') opts.restrict = req.kcpView.restrict(store, 'watch');
  const filter = store.compileFilter(opts);
  const include = parseIncludeObject(query.get('includeObject'));
  const wildcard = info.cluster === '*';
  const encode = (e: CacheEntry): string => {
    if (!out.as && !wildcard) return store.renderEntry(e);
    if (!out.as && !desc.storage) return withClusterAnnotation(e.json, e.cluster);
    let obj = store.decodeEntry(e);
    if (wildcard) obj = annotateCluster(obj, e.cluster);
    if (out.as === 'Table') return JSON.stringify(toTable(desc, [obj], { resourceVersion: String(e.rv) }, out.asVersion, include));
    if (out.as) return JSON.stringify(partialObjectMetadata(obj, out.asVersion));
    return JSON.stringify(obj);
  };
  const bookmark = (rv: number, end: boolean): string => {
    const meta: Record<string, unknown> = { resourceVersion: String(rv) };
    if (end) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
    if (out.as === 'Table') return JSON.stringify({ kind: 'Table', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata: meta, columnDefinitions: [], rows: [] });
    return JSON.stringify({ kind: desc.kind, apiVersion: desc.group ? `${desc.group}/${desc.version}` : desc.version, metadata: meta });
  };
  const timeout = query.get('timeoutSeconds');
  if (timeout !== null && !/^\d+$/.test(timeout)) throw badRequest(`invalid timeoutSeconds: "${timeout}"`);
  reply.hijack();
  try {
    await ctx.hub.start({
      groupResource: store.groupResource, cluster: info.cluster, namespace: scopeNamespace(req) || undefined, filter,
      resourceVersion: opts.resourceVersion, sendInitialEvents: queryBool(query, 'sendInitialEvents'),
      allowBookmarks: queryBool(query, 'allowWatchBookmarks') === true, timeoutSeconds: timeout === null ? 1800 : Number(timeout),
      encode, bookmark, prepare: desc.storage?.webhook ? (entries) => store.prepare(entries) : undefined,
      onInitialized: () => req.kcpFlowGrant?.release(),
    }, reply.raw, 'application/json');
    auditResponseStarted(req, reply);
  } catch (err) {
    const status = toStatusError(err);
    if (!reply.raw.headersSent) {
      reply.raw.writeHead(status.code, { 'Content-Type': 'application/json' });
      reply.raw.end(JSON.stringify(status.toStatus()));
    } else reply.raw.end();
  }
};
