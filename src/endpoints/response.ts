/**
 * Writing answers: kube `Status` errors, objects and lists in the negotiated form (JSON, YAML or
 * Kubernetes protobuf; the object, a Table or PartialObjectMetadata), and the `Warning` headers of a
 * response.
 */
import type { FastifyReply } from 'fastify';
import { StatusError } from '../apimachinery/errors.js';
import { CLUSTER_ANNOTATION, withClusterAnnotation, type KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { Store } from '../registry/store.js';
import type { CacheEntry } from '../storage/watchcache.js';
import { MEDIA_TYPES, encodeBody, encodeStatus, yamlListParts, type EncodedBody, type OutputFormat } from './negotiation.js';
import { apiVersionOf, protobufList, type EncodedList } from './protobufwire.js';
import { parseIncludeObject, partialObjectMetadata, tableEnvelope, tableRows, toTable } from './table.js';
import { MAX_BODY_BYTES } from './context.js';
import { joinUtf8, pacedStream, slicedStream, SLICE_BYTES } from './slicing.js';

/** Maps any thrown value to a StatusError (client mistakes keep their 4xx code). */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return new StatusError(413, 'RequestEntityTooLarge', `the request body is too large: limit is ${MAX_BODY_BYTES} bytes`);
  }
  if (e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e?.statusCode === 415) return new StatusError(415, 'UnsupportedMediaType', e.message ?? 'unsupported media type');
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) return new StatusError(400, 'BadRequest', e.message ?? 'bad request');
  return new StatusError(500, 'InternalError', `Internal error occurred: ${e?.message ?? String(err)}`);
}

/**
 * Answers with `err` as a kube Status in the serialization the request accepts (`encodeStatus`),
 * with `Retry-After` for 429/503/504 that name one; nothing once a response started.
 */
export function sendStatus(reply: FastifyReply, err: StatusError): void {
  if (reply.sent || reply.raw.headersSent) return;
  if (err.details?.retryAfterSeconds && (err.code === 503 || err.code === 429 || err.code === 504)) reply.header('Retry-After', String(err.details.retryAfterSeconds));
  const { contentType, body } = encodeStatus(err, reply.request?.headers.accept);
  reply.code(err.code).type(contentType).send(body);
}

/** Answers `body` (an object, or its JSON) in the negotiated serialization (see `OutputFormat.fallback`). */
export function send(reply: FastifyReply, code: number, body: string | object, out: OutputFormat): void {
  let enc: EncodedBody;
  try { enc = encodeBody(out.media, body); } catch (err) {
    const fallback = protobufFallback(reply, out, err);
    enc = encodeBody(fallback.media, body);
  }
  reply.code(code).type(enc.contentType).send(enc.body);
}

/**
 * The output to answer in when protobuf encoding failed with `err`: the negotiated fallback (JSON)
 * for an object outside its protobuf schema (a 500 from the encoder, logged); rethrows otherwise.
 */
function protobufFallback(reply: FastifyReply, out: OutputFormat, err: unknown): OutputFormat {
  if (out.media !== 'protobuf' || !out.fallback || !(err instanceof StatusError) || err.code !== 500) throw err;
  reply.log.warn({ err }, 'object not encodable in protobuf: answered in JSON');
  return out.fallback;
}

/** Answers one object (its stored JSON) as negotiated: as is, a Table row or PartialObjectMetadata, in JSON, YAML or protobuf. */
export function sendObject(reply: FastifyReply, code: number, json: string, desc: ResourceDescriptor, out: OutputFormat, query: URLSearchParams): void {
  if (!out.as) {
    if (out.media === 'json') { reply.code(code).type(MEDIA_TYPES.json).send(Buffer.from(json)); return; }
    send(reply, code, json, out);
    return;
  }
  const obj = JSON.parse(json) as KubeObject;
  if (out.as === 'Table') {
    send(reply, code, toTable(desc, [obj], { resourceVersion: obj.metadata.resourceVersion }, out.asVersion, parseIncludeObject(query.get('includeObject'))), out);
    return;
  }
  send(reply, code, partialObjectMetadata(obj, out.asVersion), out);
}

/** The object with kcp's `kcp.io/cluster` annotation (wildcard lists and watches). */
export function annotateCluster(obj: KubeObject, cluster: string): KubeObject {
  obj.metadata.annotations = { ...obj.metadata.annotations, [CLUSTER_ANNOTATION]: cluster };
  return obj;
}

/**
 * Answers a list of cache entries as negotiated. Plain JSON is assembled from the entries' stored
 * (or converted) JSON without decoding them; other forms decode each item; protobuf encodes item
 * by item (./protobufwire.ts). A large list
 * (about {@link SLICE_BYTES} or more) is produced in slices, yielding to the event loop between
 * them (./slicing.ts), so that one tenant's large LIST does not hold up the shard's other requests.
 */
export async function sendList(reply: FastifyReply, items: CacheEntry[], listMeta: Record<string, unknown>, store: Store, out: OutputFormat, query: URLSearchParams, wildcard: boolean): Promise<void> {
  const desc = store.desc;
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(listMeta)) if (v !== undefined) meta[k] = v;
  const bytes = storedChars(items);
  const large = bytes >= SLICE_BYTES;
  if (out.media === 'protobuf') {
    let encoded: EncodedList;
    try { encoded = await protobufList(store, items, meta, out, wildcard, large); } catch (err) {
      return sendList(reply, items, listMeta, store, protobufFallback(reply, out, err), query, wildcard);
    }
    const { parts, length } = encoded;
    // Small lists leave in one write; large ones as the client reads them, a slice per chunk.
    reply.code(200).type(MEDIA_TYPES.protobuf).header('content-length', String(length));
    let k = 0;
    reply.send(large ? pacedStream(() => (k < parts.length ? parts[k++]! : null)) : Buffer.concat(parts, length));
    return;
  }
  if (!out.as && out.media === 'json' && (!desc.storage || desc.storage.webhook)) {
    // Fast path: the stored (or converted) JSON of each item is the list item as is (wildcard:
    // with the kcp.io/cluster annotation spliced in).
    const head = `{"kind":"${desc.listKind}","apiVersion":"${apiVersionOf(desc)}","metadata":${JSON.stringify(meta)},"items":[`;
    const item = (i: number): string => {
      const json = desc.storage || desc.readDefaults ? store.renderEntry(items[i]!) : items[i]!.json;
      return wildcard ? withClusterAnnotation(json, items[i]!.cluster) : json;
    };
    if (large) {
      reply.code(200).type(MEDIA_TYPES.json).send(slicedStream(head, items.length, item, ',', ']}', reply.raw));
      return;
    }
    reply.code(200).type(MEDIA_TYPES.json).send(joinUtf8(head, items.length, item, ',', ']}', bytes));
    return;
  }
  const decode = (e: CacheEntry): KubeObject => {
    const o = store.decodeEntry(e);
    return wildcard ? annotateCluster(o, e.cluster) : o;
  };
  let envelope: Record<string, unknown>;
  let member = 'items';
  let element = (o: KubeObject): unknown => o;
  if (out.as === 'Table') {
    envelope = tableEnvelope(desc, meta, out.asVersion);
    member = 'rows';
    element = tableRows(desc, out.asVersion, parseIncludeObject(query.get('includeObject')));
  } else if (out.as === 'PartialObjectMetadataList') {
    envelope = { kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${out.asVersion}`, metadata: meta };
    element = (o) => partialObjectMetadata(o, out.asVersion);
  } else {
    envelope = { kind: desc.listKind, apiVersion: apiVersionOf(desc), metadata: meta };
  }
  if (large && items.length) {
    sendSlicedDocument(reply, out.media, envelope, member, items.length, (i) => element(decode(items[i]!)));
    return;
  }
  if (out.media === 'yaml' && items.length) {
    const { head, entry } = yamlListParts(envelope, member);
    reply.code(200).type(MEDIA_TYPES.yaml).send(items.reduce((text, e) => text + entry(element(decode(e))), head));
    return;
  }
  send(reply, 200, { ...envelope, [member]: items.map((e) => element(decode(e))) }, out);
}

/**
 * Milliseconds of decoding and encoding per slice of a list not answered from its stored JSON:
 * YAML costs 10 to 20 times as much per byte as stored JSON (70 against 4 ms for 2,000 ConfigMaps
 * of 1 KiB on the reference machine), so a slice of {@link SLICE_BYTES} would hold the loop for
 * several milliseconds.
 */
const DECODED_SLICE_MS = 1;

/**
 * Answers `envelope` with `count` elements as its last member `member` (`items` of a list, `rows`
 * of a Table), in JSON or YAML, produced a slice at a time (./slicing.ts): `element(i)` is called
 * once per element, in order, as the client reads. The text is the same as the whole document's
 * (`encodeBody`): in YAML each element is rendered as a one-element sequence under `member`, at
 * the indentation it has in the document.
 */
function sendSlicedDocument(reply: FastifyReply, media: 'json' | 'yaml', envelope: Record<string, unknown>, member: string, count: number, element: (i: number) => unknown): void {
  if (media === 'json') {
    const whole = JSON.stringify({ ...envelope, [member]: [] });
    const head = whole.slice(0, -2); // without the closing `]}`
    reply.code(200).type(MEDIA_TYPES.json).send(slicedStream(head, count, (i) => JSON.stringify(element(i)), ',', ']}', reply.raw, DECODED_SLICE_MS));
    return;
  }
  const { head, entry } = yamlListParts(envelope, member);
  reply.code(200).type(MEDIA_TYPES.yaml).send(slicedStream(head, count, (i) => entry(element(i)), '', '', reply.raw, DECODED_SLICE_MS));
}

/**
 * The characters of the items' stored JSON, all of them: a sample of the first items would let a
 * tenant put small objects first and large ones after them, and have a list it makes dear to
 * decode answered in one synchronous piece. Summing is a few microseconds per thousand items.
 */
function storedChars(items: readonly CacheEntry[]): number {
  let sum = 0;
  for (const e of items) sum += e.json.length;
  return sum;
}

/** Total length of the warnings of one response, in characters, and of one when they exceed it (kube's warning filter). */
const WARNINGS_TOTAL_CHARS = 4096;
const WARNING_ITEM_CHARS = 256;

/**
 * `Warning` header values (RFC 7234 code 299) for deduplicated warnings, limited as
 * kube-apiserver's warning recorder does: over 4,096 characters in total, each is cut to 256, and
 * those that still do not fit are dropped. A warning may quote client input (an unknown field's
 * name): the value goes out as UTF-8 bytes, control characters escaped, since Node refuses header
 * values with characters above U+00FF or control characters.
 */
export function warningHeaders(warnings: readonly string[]): string[] {
  let items = [...new Set(warnings)];
  const total = (xs: string[]) => xs.reduce((n, w) => n + w.length, 0);
  if (total(items) > WARNINGS_TOTAL_CHARS) {
    items = items.map((w) => (w.length > WARNING_ITEM_CHARS ? `${w.slice(0, WARNING_ITEM_CHARS)}...` : w));
    const kept: string[] = [];
    let used = 0;
    for (const w of items) { if (used + w.length > WARNINGS_TOTAL_CHARS) break; kept.push(w); used += w.length; }
    items = kept;
  }
  return items.map((w) => {
    // JSON quoting escapes '"', '\\' and C0 controls; DEL too, then UTF-8 bytes as a latin1 string.
    const quoted = JSON.stringify(w).replace(/\x7f/g, '\\u007f');
    return Buffer.from(`299 - ${quoted}`, 'utf8').toString('latin1');
  });
}
