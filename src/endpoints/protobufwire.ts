/**
 * Serving Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): which resources have a
 * protobuf form, lists encoded item by item in slices, and watch frames. The messages themselves
 * are the codec's (src/apimachinery/protobuf.ts); this module only frames them as kube-apiserver
 * does (k8s.io/apimachinery/pkg/runtime/serializer/protobuf, k8s.io/apiserver/pkg/endpoints/
 * handlers/watch.go and response.go `watchEncoder`).
 */
import { StatusError } from '../apimachinery/errors.js';
import { CLUSTER_ANNOTATION } from '../apimachinery/meta.js';
import {
  PROTOBUF_SCHEMA, encodeProtobufMessage, protobufEnvelope, protobufFieldHeader, protobufMessageFor,
} from '../apimachinery/protobuf.js';
import { BUILTIN_RESOURCES } from '../apis/builtin.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { Store } from '../registry/store.js';
import type { CacheEntry } from '../storage/watchcache.js';
import type { OutputFormat } from './negotiation.js';
import { SLICE_BYTES, yieldToLoop } from './slicing.js';
import { partialObjectMetadata } from './table.js';

/** The `apiVersion` of a resource's objects (`v1`, `rbac.authorization.k8s.io/v1`). */
export function apiVersionOf(desc: ResourceDescriptor): string {
  return desc.group ? `${desc.group}/${desc.version}` : desc.version;
}

/** Built-in resources: only these have a protobuf form (a CRD may reuse a built-in kind's name). */
const BUILTIN = new WeakSet<ResourceDescriptor>(BUILTIN_RESOURCES);

/** Whether a resource is one of the built-in resources (not a custom resource, nor a bound one). */
export function isBuiltin(desc: ResourceDescriptor): boolean {
  return BUILTIN.has(desc);
}

/**
 * Whether a resource's objects (`list`: its lists) have a protobuf form: a built-in kind the codec
 * has a message for. Custom resources never do (kube's CRD handler serves them as JSON and YAML
 * only); the review kinds and CertificateSigningRequests do.
 */
export function hasProtobuf(desc: ResourceDescriptor, list = false): boolean {
  return BUILTIN.has(desc) && protobufMessageFor(apiVersionOf(desc), list ? desc.listKind : desc.kind) !== undefined;
}

/**
 * Whether a request body for the resource may come as Kubernetes protobuf: for built-in kinds, and
 * — as kcp serves kube's own kinds as CRDs (a workspace's `kubernetes` export from API
 * negotiation, kcp's TMC) — for custom resources whose apiVersion and kind are one of kube's with
 * a known message (kubectl and client-go's typed clients send Deployments as protobuf). Such a
 * body is decoded into the JSON the client would have sent, then handled as JSON; answers for
 * custom resources stay JSON (negotiation offers protobuf only where {@link hasProtobuf}).
 */
export function acceptsProtobufBody(desc: ResourceDescriptor): boolean {
  return protobufMessageFor(apiVersionOf(desc), desc.kind) !== undefined;
}

/** Where a list message keeps its ListMeta and its items (`metadata = 1`, `items = 2` but for meta/v1beta1's PartialObjectMetadataList). */
interface ListLayout { listKind: string; apiVersion: string; metadataNo: number; metadataMessage: string; itemsNo: number; itemMessage: string }

const layouts = new Map<string, ListLayout>();

/**
 * The layout of list kind `listKind` of `apiVersion` whose items are `itemKind`, from the codec's
 * schema. Throws a 406 StatusError when either has no protobuf form (negotiation offers protobuf
 * only where they do).
 */
function listLayout(apiVersion: string, listKind: string, itemKind: string): ListLayout {
  const key = `${apiVersion}/${listKind}`;
  let layout = layouts.get(key);
  if (layout) return layout;
  const listMessage = protobufMessageFor(apiVersion, listKind);
  const itemMessage = protobufMessageFor(apiVersion, itemKind);
  const fields = listMessage ? PROTOBUF_SCHEMA[listMessage] : undefined;
  const metadata = fields?.find((f) => f.json === 'metadata');
  const items = fields?.find((f) => f.json === 'items');
  if (!itemMessage || !metadata || !items || !metadata.kind.startsWith('message:')) {
    throw new StatusError(406, 'NotAcceptable', `${listKind} in ${apiVersion} has no protobuf form`);
  }
  layout = { listKind, apiVersion, metadataNo: metadata.no, metadataMessage: metadata.kind.slice('message:'.length), itemsNo: items.no, itemMessage };
  layouts.set(key, layout);
  return layout;
}

/** An encoded list: its buffers in order (envelope header, parts of about SLICE_BYTES, trailer) and their total length. */
export interface EncodedList { parts: Buffer[]; length: number }

/**
 * A list of cache entries in protobuf: kube's list message (`<Kind>List`, or
 * `PartialObjectMetadataList` with `out.as`) in the protobuf envelope, fields in field-number
 * order as Go writes them. Items are encoded one at a time and gathered in parts of about
 * {@link SLICE_BYTES}; with `sliced`, the event loop gets a turn after each part, so a list of
 * 100,000 objects does not hold up the shard's other requests. The envelope's length prefix needs
 * the whole length: the encoded list is held until sent (protobuf is about half the size of JSON).
 * Wildcard lists carry kcp's `kcp.io/cluster` annotation. Throws 406 for a list without a protobuf
 * form, 500 for an object that does not fit its schema.
 */
export async function protobufList(store: Store, entries: readonly CacheEntry[], listMeta: Record<string, unknown>, out: OutputFormat, wildcard: boolean, sliced: boolean): Promise<EncodedList> {
  const desc = store.desc;
  const layout = out.as
    ? listLayout(`meta.k8s.io/${out.asVersion}`, 'PartialObjectMetadataList', 'PartialObjectMetadata')
    : listLayout(apiVersionOf(desc), desc.listKind, desc.kind);
  const meta = encodeProtobufMessage(layout.metadataMessage, listMeta);
  const metaPart = Buffer.concat([protobufFieldHeader(layout.metadataNo, meta.length), meta]);
  const chunks: Buffer[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Objects served as stored are encoded once, already framed as a list item (entryListItem);
  // others on every list.
  const shared = !out.as && !wildcard && layout.itemsNo === LIST_ITEMS_FIELD;
  for (const e of entries) {
    if (shared) {
      const item = entryListItem(store, e);
      pending.push(item);
      pendingBytes += item.length;
    } else {
      const obj = store.decodeEntry(e);
      if (wildcard) obj.metadata.annotations = { ...obj.metadata.annotations, [CLUSTER_ANNOTATION]: e.cluster };
      const msg = encodeProtobufMessage(layout.itemMessage, out.as ? partialObjectMetadata(obj, out.asVersion) : obj);
      const header = protobufFieldHeader(layout.itemsNo, msg.length);
      pending.push(header, msg);
      pendingBytes += header.length + msg.length;
    }
    if (pendingBytes >= SLICE_BYTES) {
      chunks.push(Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
      if (sliced) await yieldToLoop();
    }
  }
  if (pending.length) chunks.push(Buffer.concat(pending, pendingBytes));
  const body = layout.metadataNo < layout.itemsNo ? [metaPart, ...chunks] : [...chunks, metaPart];
  const parts = protobufEnvelope(layout.apiVersion, layout.listKind, body);
  let length = 0;
  for (const p of parts) length += p.length;
  return { parts, length };
}

/** The field number of `items` in kube's list messages (`repeated <Kind> items = 2`, e.g. core/v1 ConfigMapList). */
const LIST_ITEMS_FIELD = 2;

/**
 * The protobuf message of cached objects as a store serves them (no transformation, no cluster
 * annotation), kept per store and entry while the entry lives (an entry is never changed: a new
 * version is a new entry, and the old one goes with the watch cache's last reference to it).
 * Lists and watchers of a resource share it: an object is encoded once, not on every LIST and for
 * every watcher (kube caches the serialization of watch events the same way, CacheableObject).
 * Kept framed as a list item (the `items = 2` field's tag and length, then the message), so a list
 * copies each item once and allocates nothing per item; the message alone is a view into it.
 * Bounded by the watch cache: at most one buffer, smaller than the entry's JSON, per cached entry
 * and served version.
 */
const messageCache = new WeakMap<Store, WeakMap<CacheEntry, Buffer>>();

/**
 * A cached object as `store` serves it, framed as an item of its list message: the tag of field
 * {@link LIST_ITEMS_FIELD} (length-delimited), the message's length as a varint, the message
 * (see {@link messageCache}). Throws as the codec's encoder (406 without a protobuf form).
 */
function entryListItem(store: Store, e: CacheEntry): Buffer {
  let perStore = messageCache.get(store);
  if (!perStore) { perStore = new WeakMap(); messageCache.set(store, perStore); }
  let framed = perStore.get(e);
  if (!framed) {
    const message = protobufMessageFor(apiVersionOf(store.desc), store.desc.kind);
    if (!message) throw new StatusError(406, 'NotAcceptable', `${store.desc.kind} in ${apiVersionOf(store.desc)} has no protobuf form`);
    const msg = encodeProtobufMessage(message, store.decodeEntry(e));
    framed = Buffer.concat([protobufFieldHeader(LIST_ITEMS_FIELD, msg.length), msg]);
    perStore.set(e, framed);
  }
  return framed;
}

/** The protobuf message of a cached object as `store` serves it (a view into its cached list item, see {@link messageCache}); throws as the codec's encoder. */
export function entryMessage(store: Store, e: CacheEntry): Buffer {
  const framed = entryListItem(store, e);
  // Past the tag (one byte) and the length's varint (its last byte has the high bit clear).
  let i = 1;
  while (framed[i]! & 0x80) i++;
  return framed.subarray(i + 1);
}

/** The full protobuf encoding (magic + runtime.Unknown) of a cached object as `store` serves it, in parts (the message shared). */
export function embeddedObject(store: Store, e: CacheEntry): Buffer[] {
  return protobufEnvelope(apiVersionOf(store.desc), store.desc.kind, [entryMessage(store, e)]);
}
