/**
 * WATCH (kube: k8s.io/apiserver/pkg/endpoints/handlers/watch.go): the reply is hijacked and events
 * stream from the watch hub (src/server/watch.ts) in the negotiated form — JSON lines, or
 * length-prefixed protobuf WatchEvents (`application/vnd.kubernetes.protobuf;stream=watch`, built-in
 * kinds) — carrying objects, Table rows (JSON) or PartialObjectMetadata, with bookmarks and
 * `sendInitialEvents` as kube.
 */
import { badRequest, type StatusError } from '../../apimachinery/errors.js';
import { withClusterAnnotation, type KubeObject } from '../../apimachinery/meta.js';
import { encodeKubernetesProtobuf, encodeProtobufWatchEvent, protobufWatchFrame } from '../../apimachinery/protobuf.js';
import type { Store } from '../../registry/store.js';
import type { WatchEventEncoder } from '../../server/watch.js';
import type { CacheEntry } from '../../storage/watchcache.js';
import type { Handler } from '../context.js';
import { queryOf } from '../context.js';
import { MEDIA_TYPES, encodeStatus, negotiateOutput, type OutputFormat } from '../negotiation.js';
import { apiVersionOf, embeddedObject, hasProtobuf } from '../protobufwire.js';
import { queryBool } from '../requestinfo.js';
import { parseIncludeObject, partialObjectMetadata, toTable, type IncludeObject } from '../table.js';
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
  const out = negotiateOutput(req.headers.accept, { shape: 'watch', protobuf: hasProtobuf(desc) });
  const opts = listOptions(query);
  if (req.kcpView && info.cluster === '*') opts.restrict = req.kcpView.restrict(store, 'watch');
  const filter = store.compileFilter(opts);
  const include = parseIncludeObject(query.get('includeObject'));
  const wildcard = info.cluster === '*';
  const encoder = watchEventEncoder(store, out, include, wildcard);
  const timeout = query.get('timeoutSeconds');
  if (timeout !== null && !/^\d+$/.test(timeout)) throw badRequest(`invalid timeoutSeconds: "${timeout}"`);
  reply.hijack();
  try {
    await ctx.hub.start({
      groupResource: store.groupResource, cluster: info.cluster, namespace: scopeNamespace(req) || undefined, filter,
      resourceVersion: opts.resourceVersion, sendInitialEvents: queryBool(query, 'sendInitialEvents'),
      allowBookmarks: queryBool(query, 'allowWatchBookmarks') === true, timeoutSeconds: timeout === null ? 1800 : Number(timeout),
      encoder, prepare: desc.storage?.webhook ? (entries) => store.prepare(entries) : undefined,
      onInitialized: () => req.kcpFlowGrant?.release(),
    }, reply.raw);
    auditResponseStarted(req, reply);
  } catch (err) {
    const status: StatusError = toStatusError(err);
    if (!reply.raw.headersSent) {
      // Refused before the stream began (400, 410): a Status in the form the client accepts.
      const { contentType, body } = encodeStatus(status, req.headers.accept);
      reply.raw.writeHead(status.code, { 'Content-Type': contentType });
      reply.raw.end(body);
    } else reply.raw.end();
  }
};

/**
 * The object of a bookmark event at `rv`: the kind with only `metadata.resourceVersion` (and the
 * `k8s.io/initial-events-end` annotation ending the initial events), transformed as every event
 * object is (PartialObjectMetadata; an empty Table) — kube's watch cache bookmarks through
 * handlers/response.go `doTransformObject`.
 */
function bookmarkObject(store: Store, out: OutputFormat, rv: number, end: boolean): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
  if (end) metadata.annotations = { 'k8s.io/initial-events-end': 'true' };
  if (out.as === 'Table') return { kind: 'Table', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata, columnDefinitions: [], rows: [] };
  if (out.as) return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata };
  return { kind: store.desc.kind, apiVersion: apiVersionOf(store.desc), metadata };
}

/** The object of an event as served: with the cluster annotation in wildcard watches, transformed as negotiated. */
function eventObject(store: Store, e: CacheEntry, out: OutputFormat, include: IncludeObject, wildcard: boolean): KubeObject | Record<string, unknown> {
  let obj = store.decodeEntry(e);
  if (wildcard) obj = annotateCluster(obj, e.cluster);
  if (out.as === 'Table') return toTable(store.desc, [obj], { resourceVersion: String(e.rv) }, out.asVersion, include);
  if (out.as) return partialObjectMetadata(obj, out.asVersion);
  return obj;
}

/**
 * Event objects in a transformed form (Table, PartialObjectMetadata, a wildcard watch's cluster
 * annotation), per store, form and cache entry, shared by every watch that asks for the same form
 * while the turn lasts (forgotten at its end). A transformed event object is made by parsing the
 * stored JSON: without sharing, each watch parsed and transformed it again, and one write of a 1 MB
 * object cost N parses for N `kubectl get -w` (Table) or metadata-informer watches.
 */
let turnForms: Map<Store, Map<string, Map<CacheEntry, string | Uint8Array>>> | undefined;

/** `make()`, or what it made for the same store, form and entry earlier in this turn (see {@link turnForms}). */
function sharedForm<T extends string | Uint8Array>(store: Store, form: string, e: CacheEntry, make: () => T): T {
  if (!turnForms) {
    turnForms = new Map();
    setImmediate(() => { turnForms = undefined; });
  }
  let byForm = turnForms.get(store);
  if (!byForm) { byForm = new Map(); turnForms.set(store, byForm); }
  let byEntry = byForm.get(form);
  if (!byEntry) { byEntry = new Map(); byForm.set(form, byEntry); }
  const known = byEntry.get(e);
  if (known !== undefined) return known as T;
  const made = make();
  byEntry.set(e, made);
  return made;
}

/**
 * The wire form of a watch's events for the negotiated output: protobuf frames or JSON lines (see
 * below), objects annotated with their logical cluster in wildcard watches, transformed as `out` says.
 */
export function watchEventEncoder(store: Store, out: OutputFormat, include: IncludeObject, wildcard: boolean): WatchEventEncoder {
  return out.media === 'protobuf' ? protobufWatchEncoder(store, out, wildcard) : jsonWatchEncoder(store, out, include, wildcard);
}

/** JSON lines `{"type":…,"object":…}` (kube's json.Framer), Content-Type `application/json`. */
function jsonWatchEncoder(store: Store, out: OutputFormat, include: IncludeObject, wildcard: boolean): WatchEventEncoder {
  const desc = store.desc;
  const form = `json ${out.as ?? ''} ${out.asVersion ?? ''} ${include} ${wildcard}`;
  const object = (e: CacheEntry): string => {
    // Stored JSON as is where nothing changes it: no parse per event and watcher.
    if (!out.as && !wildcard) return store.renderEntry(e);
    if (!out.as && !desc.storage) return withClusterAnnotation(store.renderEntry(e), e.cluster);
    return sharedForm(store, form, e, () => JSON.stringify(eventObject(store, e, out, include, wildcard)));
  };
  const line = (type: string, objectJson: string) => `{"type":"${type}","object":${objectJson}}\n`;
  return {
    contentType: MEDIA_TYPES.json,
    event: (type, e) => line(type, object(e)),
    bookmark: (rv, end) => line('BOOKMARK', JSON.stringify(bookmarkObject(store, out, rv, end))),
    error: (status) => line('ERROR', JSON.stringify(status)),
  };
}

/**
 * Length-prefixed protobuf WatchEvents (kube's LengthDelimitedFramer), Content-Type
 * `application/vnd.kubernetes.protobuf;stream=watch`. An object served as stored is encoded once
 * for all its watchers (protobufwire.ts `embeddedObject`).
 */
function protobufWatchEncoder(store: Store, out: OutputFormat, wildcard: boolean): WatchEventEncoder {
  const shared = !out.as && !wildcard;
  const form = `protobuf ${out.as ?? ''} ${out.asVersion ?? ''} ${wildcard}`;
  return {
    contentType: `${MEDIA_TYPES.protobuf};stream=watch`,
    event: (type, e) => protobufWatchFrame(type, shared ? embeddedObject(store, e)
      : sharedForm(store, form, e, () => encodeKubernetesProtobuf(eventObject(store, e, out, 'None', wildcard) as Record<string, unknown>))),
    bookmark: (rv, end) => encodeProtobufWatchEvent('BOOKMARK', bookmarkObject(store, out, rv, end)),
    error: (status) => encodeProtobufWatchEvent('ERROR', status),
  };
}
