/**
 * `/openapi/v2` (JSON, or gnostic protobuf when asked: kubectl 1.27/1.28 accept only that),
 * `/openapi/v3` and its per-group-version documents.
 *
 * Built per group/version and kept by the identity of that group/version's descriptors, so a
 * change to one CRD rebuilds its own group/version only. Building a logical cluster's whole
 * document on each change, as before, let a tenant hold the event loop: with 20 copies of
 * prometheus-operator's `prometheuses` CRD in one workspace, each change to one of them made the
 * next `/openapi/v2` take 430–730 ms of one turn (v3 root 230 ms, protobuf 430–840 ms), and another
 * workspace's GET waited up to 800 ms (docs/benchmarks.md, "OpenAPI of many CRDs"). kube-apiserver
 * likewise merges per-CRD specs (apiextensions-apiserver `controller/openapi`).
 */
import { LRUCache } from 'lru-cache';
import { StatusError } from '../../apimachinery/errors.js';
import type { ResourceDescriptor } from '../../apis/types.js';
import {
  buildOpenAPIV2, buildOpenAPIV2Part, buildOpenAPIV3GroupVersion, buildOpenAPIV3Root, descriptorsByGroupVersion, mergeOpenAPIV2Parts,
  OPENAPI_V2_FRAME, openAPITextHash, openAPIV2Member, parseOpenAPIV3GroupVersionPath, type OpenAPIV2Part, type OpenAPIV3Root,
} from '../../apis/openapi.js';
import { encodeOpenAPIV2Entry, encodeOpenAPIV2ProtobufChunks } from '../../apis/openapiv2proto.js';
import { apisOf, type Handler } from '../context.js';
import { chunksStream, nextHeavyStage } from '../slicing.js';

/** The documents of one group/version, each made when first asked for. */
interface GroupVersionDocs {
  v3?: { text: string; hash: string };
  v2?: OpenAPIV2Part;
  /** The v2 part's definitions and paths as protobuf entries. */
  v2proto?: { definitions: Map<string, Buffer>; paths: Map<string, Buffer> };
  /** The v2 part's definitions and paths as the document's JSON members, UTF-8. */
  v2utf8?: { definitions: Map<string, Buffer>; paths: Map<string, Buffer> };
}

/**
 * Group/version documents kept across descriptor sets, by group/version and the identities of its
 * descriptors (a descriptor is replaced, not changed, when its API changes; the built-in ones are
 * shared by every logical cluster), at most {@link GROUP_VERSION_DOCS_BYTES} of text and protobuf
 * (least recently used go first; a dropped one is built again when asked for).
 */
export const GROUP_VERSION_DOCS_BYTES = 128 * 1024 * 1024;
const groupVersionDocs = new LRUCache<string, GroupVersionDocs>({ maxSize: GROUP_VERSION_DOCS_BYTES, sizeCalculation: docsSize });
const descriptorIds = new WeakMap<ResourceDescriptor, number>();
let nextDescriptorId = 1;

function docsSize(d: GroupVersionDocs): number {
  let n = 64 + (d.v3?.text.length ?? 0);
  if (d.v2) for (const m of [d.v2.definitions, d.v2.paths]) for (const [k, t] of m) n += k.length + t.length;
  for (const e of [d.v2proto, d.v2utf8]) if (e) for (const m of [e.definitions, e.paths]) for (const b of m.values()) n += b.length;
  return n;
}

/** The cache key of a group/version's documents: the group/version and its descriptors' identities. */
function groupVersionKey(key: string, gvDescs: ResourceDescriptor[]): string {
  const ids = gvDescs.map((d) => {
    let id = descriptorIds.get(d);
    if (id === undefined) { id = nextDescriptorId++; descriptorIds.set(d, id); }
    return id;
  });
  return `${key}#${ids.sort((a, b) => a - b).join(',')}`;
}

/**
 * A descriptor set's group/versions (with their cache keys) and the documents being made for it
 * (descriptor sets are replaced, not changed, when APIs change). Concurrent requests share a
 * document being made; once made, it is not kept here: it is assembled again from the
 * group/versions' entries for the next request (a merge and a sort of references), so every
 * byte kept is in {@link groupVersionDocs} and under its bound, however many logical clusters ask.
 */
interface SetDocs {
  descs: ResourceDescriptor[];
  /** By `/openapi/v3` key (`api/v1`, `apis/<group>/<version>`), in key order. */
  gvs: Map<string, { cacheKey: string; descs: ResourceDescriptor[] }>;
  making: { v2json?: Promise<Buffer[]>; v2proto?: Promise<Buffer[]>; v3root?: Promise<OpenAPIV3Root> };
}
const setDocs = new WeakMap<ResourceDescriptor[], SetDocs>();

function docsOfSet(descs: ResourceDescriptor[]): SetDocs {
  let docs = setDocs.get(descs);
  if (!docs) {
    const gvs = new Map([...descriptorsByGroupVersion(descs)].map(([key, gvDescs]) => [key, { cacheKey: groupVersionKey(key, gvDescs), descs: gvDescs }] as const));
    docs = { descs, gvs, making: {} };
    setDocs.set(descs, docs);
  }
  return docs;
}

/** The document `make` makes for the set, shared by the requests that ask while it is made. */
function shared<K extends keyof SetDocs['making']>(docs: SetDocs, field: K, make: () => NonNullable<SetDocs['making'][K]>): NonNullable<SetDocs['making'][K]> {
  let p = docs.making[field];
  if (!p) {
    p = make();
    docs.making[field] = p;
    const done = () => { if (docs.making[field] === p) docs.making[field] = undefined; };
    p.then(done, done);
  }
  return p as NonNullable<SetDocs['making'][K]>;
}

/** One field of one group/version's documents: kept, or made now and kept. */
function groupVersionField<K extends keyof GroupVersionDocs>(cacheKey: string, field: K, make: () => NonNullable<GroupVersionDocs[K]>): NonNullable<GroupVersionDocs[K]> {
  const gvDocs = groupVersionDocs.get(cacheKey) ?? {};
  const have = gvDocs[field];
  if (have) return have as NonNullable<GroupVersionDocs[K]>;
  const made = make();
  gvDocs[field] = made;
  groupVersionDocs.set(cacheKey, gvDocs);
  return made;
}

/**
 * One field of every group/version of a set, kept or made — one group/version made per heavy
 * stage of the loop (src/endpoints/slicing.ts `nextHeavyStage`): a tenant's new CRD with a large
 * schema takes tens of milliseconds to publish, and twenty of them must not take one turn.
 */
async function perGroupVersion<K extends keyof GroupVersionDocs>(docs: SetDocs, field: K, make: (key: string, gvDescs: ResourceDescriptor[], index: number) => NonNullable<GroupVersionDocs[K]>): Promise<Array<NonNullable<GroupVersionDocs[K]>>> {
  const out: Array<NonNullable<GroupVersionDocs[K]>> = [];
  let index = 0;
  for (const [key, { cacheKey, descs }] of docs.gvs) {
    if (!groupVersionDocs.get(cacheKey)?.[field]) await nextHeavyStage();
    const i = index++;
    out.push(groupVersionField(cacheKey, field, () => make(key, descs, i)));
  }
  return out;
}

function makeV3(key: string, gvDescs: ResourceDescriptor[]): { text: string; hash: string } {
  const { group, version } = parseOpenAPIV3GroupVersionPath(key)!;
  const text = JSON.stringify(buildOpenAPIV3GroupVersion(gvDescs, group, version));
  return { text, hash: openAPITextHash(text) };
}

const v2Parts = (docs: SetDocs) => perGroupVersion(docs, 'v2', (_k, gvDescs) => buildOpenAPIV2Part(gvDescs));

/** Each part's entries (`definitions`, `paths`) encoded by `encode`, and the merged document's entries taken from them in order. */
async function v2Encoded(docs: SetDocs, field: 'v2proto' | 'v2utf8', encode: (kind: 'definition' | 'path', name: string, text: string) => Buffer): Promise<{ definitions: Buffer[]; paths: Buffer[] }> {
  const parts = await v2Parts(docs);
  const encoded = await perGroupVersion(docs, field, (_k, _d, i) => {
    const entries = (kind: 'definition' | 'path', m: Map<string, string>) => new Map([...m].map(([name, text]) => [name, encode(kind, name, text)] as const));
    return { definitions: entries('definition', parts[i]!.definitions), paths: entries('path', parts[i]!.paths) };
  });
  const merged = mergeOpenAPIV2Parts(parts);
  return {
    definitions: merged.definitions.map((e) => encoded[e.part]!.definitions.get(e.name)!),
    paths: merged.paths.map((e) => encoded[e.part]!.paths.get(e.name)!),
  };
}

const COMMA = Buffer.from(',');

async function v2Json(docs: SetDocs): Promise<Buffer[]> {
  const { definitions, paths } = await v2Encoded(docs, 'v2utf8', (_kind, name, text) => Buffer.from(openAPIV2Member({ name, text })));
  const joined = (list: Buffer[]) => list.flatMap((b, i) => (i ? [COMMA, b] : [b]));
  const { head, middle, tail } = OPENAPI_V2_FRAME;
  return [Buffer.from(head), ...joined(definitions), Buffer.from(middle), ...joined(paths), Buffer.from(tail)];
}

async function v2Protobuf(docs: SetDocs): Promise<Buffer[]> {
  const encoded = await v2Encoded(docs, 'v2proto', (kind, name, text) => encodeOpenAPIV2Entry(kind, name, JSON.parse(text) as Record<string, unknown>));
  return encodeOpenAPIV2ProtobufChunks(buildOpenAPIV2([]), encoded);
}

/**
 * Answers the document; 404 for an unknown group-version. The v2 documents (megabytes with many
 * CRDs) are kept as their encoded entries and written from them in slices within the loop's slice
 * budget, as large lists are: one piece of 10 MB took 60–200 ms of a turn to copy or encode.
 */
export const serveOpenAPI: Handler = async (ctx, req, reply) => {
  const info = req.kcpInfo!;
  const docs = docsOfSet(apisOf(ctx, req, info.cluster).descriptors);
  if (info.path === '/openapi/v2') {
    if ((req.headers.accept ?? '').includes('proto-openapi.spec.v2')) {
      // Go's media-type parser rejects '@': answer with the dotted form, as kube-openapi does.
      reply.type('application/com.github.proto-openapi.spec.v2.v1.0+protobuf').send(chunksStream(await shared(docs, 'v2proto', () => v2Protobuf(docs))));
      return;
    }
    reply.type('application/json').send(chunksStream(await shared(docs, 'v2json', () => v2Json(docs))));
    return;
  }
  if (info.path === '/openapi/v3') {
    const root = await shared(docs, 'v3root', async () => {
      const keys = [...docs.gvs.keys()];
      const v3 = await perGroupVersion(docs, 'v3', makeV3);
      const hashes = new Map(keys.map((k, i) => [k, v3[i]!.hash] as const));
      return buildOpenAPIV3Root(docs.descs, (key) => hashes.get(key)!);
    });
    // Clients follow serverRelativeURL: keep them inside the logical cluster. (The root is shared
    // by concurrent requests: it is read, not changed.)
    const prefix = info.cluster ? `${req.kcpPrefix ?? ''}/clusters/${info.cluster}` : '';
    const paths = Object.fromEntries(Object.entries(root.paths).map(([k, v]) => [k, { serverRelativeURL: `${prefix}${v.serverRelativeURL}` }]));
    reply.type('application/json').send(JSON.stringify({ paths }));
    return;
  }
  const m = /^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/.exec(info.path);
  // Only served group-versions are looked up: any name can be asked for.
  const gv = m ? docs.gvs.get(m[1]!) : undefined;
  if (gv) {
    const { text } = groupVersionField(gv.cacheKey, 'v3', () => makeV3(m![1]!, gv.descs));
    reply.header('Cache-Control', 'public, immutable').type('application/json').send(text);
    return;
  }
  throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
};
