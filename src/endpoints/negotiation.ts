/**
 * Content negotiation and body decoding, as kube-apiserver's
 * k8s.io/apiserver/pkg/endpoints/handlers/negotiation: JSON, YAML and Kubernetes protobuf
 * (built-in kinds only) in and out, `as=Table` and `as=PartialObjectMetadata[List]`
 * transformations (meta.k8s.io v1/v1beta1), 406 for what cannot be produced, 415 for bodies in an
 * unsupported format.
 */
import { duplicateFields, duplicateKeyLines } from '../apimachinery/duplicatefields.js';
import { goQuote } from '../apimachinery/pruning.js';
import { isMap, isScalar, isSeq, isPair, parseAllDocuments, type Node as YamlNode } from 'yaml';
import { DEFAULT_SCHEMA, Type as YamlType, dump as dumpYaml } from 'js-yaml';
import { StatusError, badRequest } from '../apimachinery/errors.js';
import { KUBERNETES_PROTOBUF_MEDIA_TYPE, decodeKubernetesProtobuf, encodeKubernetesProtobuf, isKubernetesProtobuf } from '../apimachinery/protobuf.js';
import { jsonSyntaxError, summarizeBody } from '../apimachinery/jsonsyntax.js';
import { MAX_NESTING_DEPTH, MAX_YAML_TOKENS, jsonDeeperThan, tooDeep, valueDeeperThan, yamlTooComplex } from '../apimachinery/depth.js';

/** The serializations of the API paths, in kube's order (a wildcard range takes the first). */
export type Media = 'json' | 'yaml' | 'protobuf';

/** Media type of each serialization (kube's runtime.SerializerInfo `MediaType`). */
export const MEDIA_TYPES: Readonly<Record<Media, string>> = {
  json: 'application/json', yaml: 'application/yaml', protobuf: KUBERNETES_PROTOBUF_MEDIA_TYPE,
};

const MEDIA_ORDER: readonly Media[] = ['json', 'yaml', 'protobuf'];
const SUBTYPES: Readonly<Record<Media, string>> = { json: 'json', yaml: 'yaml', protobuf: 'vnd.kubernetes.protobuf' };

/** kube's 406 for an Accept header no served form satisfies (negotiation.NewNotAcceptableError over every serializer). */
const NOT_ACCEPTABLE = `only the following media types are accepted: ${MEDIA_ORDER.map((m) => MEDIA_TYPES[m]).join(', ')}`;
/** The same for a watch: only serializations with a stream form (YAML has none). */
const NOT_ACCEPTABLE_STREAM = `only the following media types are accepted: ${MEDIA_TYPES.json};stream=watch, ${MEDIA_TYPES.protobuf};stream=watch`;

/** One parsed media range of an Accept header. */
interface MediaRange { type: string; subtype: string; params: Record<string, string>; q: number }

/**
 * The ranges of an Accept header in the order kube tries them (github.com/munnerz/goautoneg
 * `ParseAccept`): higher `q` first, then concrete types before wildcards, else as written. Ranges
 * without a `/` (other than `*`) are dropped; an unparsable `q` counts as 0.
 */
function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [mt, ...ps] = part.split(';').map((s) => s.trim());
    const slash = (mt ?? '').toLowerCase().split('/');
    if (slash.length > 2 || (slash.length === 1 && slash[0] !== '*') || !slash[0]) continue;
    const [type, subtype = '*'] = slash as [string, string?];
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of ps) {
      const i = p.indexOf('=');
      if (i <= 0) continue;
      const k = p.slice(0, i).trim();
      const v = p.slice(i + 1).trim();
      if (k === 'q') { q = Number(v); if (!Number.isFinite(q)) q = 0; } else params[k] = v;
    }
    ranges.push({ type, subtype, params, q });
  }
  const wild = (r: MediaRange) => (r.type === '*' ? 2 : 0) + (r.subtype === '*' ? 1 : 0);
  return ranges.sort((a, b) => b.q - a.q || wild(a) - wild(b));
}

/** Whether media range `r` admits serialization `m` (exact, `application/*` or `*\/*`, as kube). */
function admits(r: MediaRange, m: Media): boolean {
  if (r.type === '*' && r.subtype === '*') return true;
  return r.type === 'application' && (r.subtype === SUBTYPES[m] || r.subtype === '*');
}

/**
 * Whether range `r`'s `stream` parameter allows `m`: absent, or `watch` on a serialization with a
 * stream form (negotiate.go `acceptMediaTypeOptions`).
 */
function streamAllows(r: MediaRange, m: Media): boolean {
  const stream = r.params.stream;
  return !stream || (stream === 'watch' && m !== 'yaml');
}

/** The chosen output: serialization and optional transformation. */
export interface OutputFormat {
  media: Media;
  /** `Table`, `PartialObjectMetadata`, `PartialObjectMetadataList`, or undefined for the object itself. */
  as?: 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';
  /** meta.k8s.io version asked for the transformation (`v1` or `v1beta1`). */
  asVersion: string;
  /** Aggregated discovery (`as=APIGroupDiscoveryList`) version, e.g. `v2`, `v2beta1`. */
  discovery?: string;
  /**
   * With protobuf: the same output in JSON when the client accepts that too (client-go always
   * does). An object the codec cannot write (a 500 from the encoder: stored data outside its Go
   * type) is answered in it rather than failing a typed client's request.
   */
  fallback?: OutputFormat;
}

/** What an endpoint can answer (kube's RequestScope as an `EndpointRestrictions`). */
export interface Endpoint {
  /** One object, a list, or a watch (a stream of objects: `as=PartialObjectMetadata[List]` both give PartialObjectMetadata events). */
  shape: 'object' | 'list' | 'watch';
  /**
   * Whether the object itself (no transformation) has a protobuf form: built-in kinds do; custom
   * resources do not (kube's `StandardSerializers` of the CRD handler), so a protobuf range is
   * skipped for them and the next range is tried.
   */
  protobuf: boolean;
  /** Whether `as=Table` is served (false for REST storages without a TableConvertor: reviews, token requests). */
  table?: boolean;
  /** Whether aggregated discovery (`as=APIGroupDiscoveryList`, JSON or protobuf) may be asked for (`/api`, `/apis`). */
  discovery?: boolean;
}

/**
 * Picks the first acceptable media range, as kube's negotiation.NegotiateOutputMediaType with the
 * endpoint's restrictions (k8s.io/apiserver/pkg/endpoints/handlers/negotiation/negotiate.go,
 * handlers/rest.go `AllowsMediaTypeTransform`): ranges in goautoneg order; for each, the
 * serializations it admits in kube's order (JSON, YAML, protobuf). Without a transformation,
 * protobuf only where the endpoint has it; `as=Table` in JSON or YAML only; `as=PartialObjectMetadata`
 * (one object or a watch) and `as=PartialObjectMetadataList` (a list) in any serialization; any
 * other `as`/`g`/`v` skips the range. A watch in YAML is refused (YAML has no stream form).
 * No Accept header: JSON. Throws 406 NotAcceptable with kube's message.
 */
export function negotiateOutput(accept: string | undefined, endpoint: Endpoint): OutputFormat {
  if (!accept) return { media: 'json', asVersion: 'v1' };
  const ranges = parseAccept(accept);
  const out = firstProducible(ranges, endpoint, MEDIA_ORDER);
  if (!out) throw new StatusError(406, 'NotAcceptable', endpoint.shape === 'watch' ? NOT_ACCEPTABLE_STREAM : NOT_ACCEPTABLE);
  if (out.media === 'protobuf') {
    // What the client takes next, should an object not be encodable in protobuf (see `fallback`).
    const next = firstProducible(ranges, endpoint, ['json']);
    if (next && next.as === out.as && next.asVersion === out.asVersion) out.fallback = next;
  }
  return out;
}

/** The first range (in goautoneg order) the endpoint can produce in one of `medias`, as `negotiateOutput`; 406 for a watch in YAML. */
function firstProducible(ranges: readonly MediaRange[], endpoint: Endpoint, medias: readonly Media[]): OutputFormat | undefined {
  for (const r of ranges) {
    for (const media of medias) {
      if (!admits(r, media) || !streamAllows(r, media)) continue;
      const out = transformation(r, media, endpoint);
      if (!out) continue;
      if (endpoint.shape === 'watch' && media === 'yaml') throw new StatusError(406, 'NotAcceptable', NOT_ACCEPTABLE_STREAM);
      return out;
    }
  }
  return undefined;
}

/** The output range `r` asks for in `media`, or undefined when the endpoint cannot produce it. */
function transformation(r: MediaRange, media: Media, endpoint: Endpoint): OutputFormat | undefined {
  const { as, g, v } = r.params;
  if (as === undefined && g === undefined && v === undefined) {
    return media !== 'protobuf' || endpoint.protobuf ? { media, asVersion: 'v1' } : undefined;
  }
  if (as === 'APIGroupDiscoveryList' && g === 'apidiscovery.k8s.io' && endpoint.discovery && media !== 'yaml' && (v === 'v2' || v === 'v2beta1')) {
    return { media, asVersion: 'v1', discovery: v };
  }
  if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) return undefined;
  if (as === 'Table') return endpoint.table !== false && media !== 'protobuf' ? { media, as, asVersion: v } : undefined;
  // kube lets either through and fails on the mismatch; the mismatching range is skipped here.
  const watch = endpoint.shape === 'watch';
  if (as === 'PartialObjectMetadata' && (endpoint.shape === 'object' || watch)) return { media, as, asVersion: v };
  if (as === 'PartialObjectMetadataList' && endpoint.shape === 'list') return { media, as, asVersion: v };
  if (as === 'PartialObjectMetadataList' && watch) return { media, as: 'PartialObjectMetadata', asVersion: v };
  return undefined;
}

/**
 * The serialization of an error Status (kube's responsewriters.ErrorNegotiated: negotiation with
 * `DefaultEndpointRestrictions`, which admit no transformation, over JSON, YAML and protobuf — a
 * Status has a protobuf form on every path, custom resources' included); JSON when no range
 * qualifies (kube's `WriteRawJSON`).
 */
export function negotiateStatus(accept: string | undefined): Media {
  if (!accept) return 'json';
  for (const r of parseAccept(accept)) {
    if (r.params.as !== undefined || r.params.g !== undefined || r.params.v !== undefined) continue;
    for (const media of MEDIA_ORDER) if (admits(r, media) && streamAllows(r, media)) return media;
  }
  return 'json';
}

/**
 * Plain scalars that YAML 1.1 (https://yaml.org/type/int.html, float.html, bool.html) reads as
 * numbers or booleans and YAML 1.2's core schema as strings: `1_000`, `0b101`, `1:30`, `y`, `on`.
 */
const YAML_1_1_NUMBER_OR_BOOL = /^(?:[-+]?0b[01_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?|[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$/;

/**
 * js-yaml's schema with YAML 1.1's numbers and booleans as implicit types: the emitter quotes a
 * string that an implicit type would resolve, so these come out quoted too. Only for writing.
 */
const YAML_OUTPUT_SCHEMA = DEFAULT_SCHEMA.extend({
  implicit: [new YamlType('tag:kcp-ts,2026:yaml-1.1-scalar', { kind: 'scalar', resolve: (s: string | null) => s !== null && YAML_1_1_NUMBER_OR_BOOL.test(s), construct: (s: string) => s })],
});

/** js-yaml's options for block-style output (see {@link encodeYaml}). */
export const YAML_OUTPUT_OPTIONS = { schema: YAML_OUTPUT_SCHEMA, noRefs: true, lineWidth: -1, skipInvalid: true, flowLevel: 16 } as const;

/**
 * `value` (JSON data) as a YAML document, with js-yaml's emitter (bodies are parsed with `yaml`,
 * which bounds their complexity: ../apimachinery/depth.ts). It is about 4 times as fast as
 * `yaml`'s stringify on Kubernetes objects (70 against 270 ms for 2,000 ConfigMaps of 1 KiB, on
 * the reference machine). Every string a YAML 1.1 parser would read as another type (`on`, `y`,
 * `~`, `1_000`) is quoted: go-yaml v2, under sigs.k8s.io/yaml, is what Go clients decode YAML
 * with, and kube's own YAML (written by it) quotes them. Lines are not folded (go-yaml v3 does not
 * either), which also halves the cost of long strings; properties whose value is undefined are
 * left out, as JSON does.
 *
 * Two bounds keep a tenant's object from holding the event loop (not kube's, whose YAML is as
 * dear but runs on a goroutine of its own):
 * - collections nested deeper than 16 levels are written in flow style (`{k: [a, b]}`): block
 *   style indents each level by two more spaces on every line, and an object of 1.2 MB (an array
 *   of 300,000 one-letter strings, 499 levels deep, which a schema that preserves unknown fields
 *   accepts) became hundreds of megabytes of YAML and ran the server out of memory. Kubernetes
 *   objects, managedFields included, stay within 16 levels;
 * - a document that would cost js-yaml more than {@link YAML_BLOCK_BUDGET} is written as its JSON
 *   text ({@link flowYaml}), which is YAML too: js-yaml spends about 1 µs per value and 0.15 µs
 *   per character of a string, 20 to 150 times what JSON.stringify does, so one GET of an object of
 *   1.4 MB holding 700,000 numbers held the loop for 0.7–1.1 s.
 */
export function encodeYaml(value: unknown): string {
  return yamlCostExceeds(value, YAML_BLOCK_BUDGET) ? flowYaml(value) : dumpYaml(value, YAML_OUTPUT_OPTIONS);
}

/**
 * The YAML of a list document, `envelope` with `elements` as its last member `member` (`items` of
 * a list, `rows` of a Table): the envelope as {@link encodeYaml} writes it, then each element as a
 * sequence entry, in block style or, when the element alone exceeds {@link YAML_BLOCK_BUDGET}, as
 * its JSON text. When every element is within the budget this is the text js-yaml writes for the
 * whole document; one element's cost never depends on the others'. Returns the parts, so a caller
 * can write them as the client reads (./slicing.ts): `head`, then `entry(e)` for each element in
 * order. Not for an empty list (js-yaml writes `items: []`).
 */
export function yamlListParts(envelope: Record<string, unknown>, member: string): { head: string; entry(element: unknown): string } {
  const key = `${member}:\n`;
  return {
    head: `${encodeYaml(envelope)}${key}`,
    entry: (element) => (yamlCostExceeds(element, YAML_BLOCK_BUDGET)
      ? `  - ${flowYaml(element)}`
      : dumpYaml({ [member]: [element] }, YAML_OUTPUT_OPTIONS).slice(key.length)),
  };
}

/**
 * js-yaml's cost a document may have, in its units: one per value and per object key, and one per
 * 8 characters of a string or key — about a microsecond each on the reference machine, so 20 ms.
 * The cert-manager CRDs (up to 2,100 values, 125 KB of JSON) stay in block style; the
 * prometheus-operator Prometheus CRD (8,500 values, 480 KB, 65 ms in block style) does not.
 */
export const YAML_BLOCK_BUDGET = 20_000;

/** Whether js-yaml's cost for `value` (see {@link YAML_BLOCK_BUDGET}) exceeds `budget`; stops counting there. */
function yamlCostExceeds(value: unknown, budget: number): boolean {
  let cost = 0;
  const visit = (v: unknown): boolean => {
    cost += typeof v === 'string' ? 1 + (v.length >> 3) : 1;
    if (cost > budget) return true;
    if (v === null || typeof v !== 'object') return false;
    if (Array.isArray(v)) {
      for (const x of v) if (visit(x)) return true;
      return false;
    }
    for (const k in v as Record<string, unknown>) {
      cost += 1 + (k.length >> 3);
      if (visit((v as Record<string, unknown>)[k])) return true;
    }
    return false;
  };
  return visit(value);
}

/**
 * Characters JSON writes as they are but a YAML stream may not hold raw (YAML 1.2 §5.1
 * c-printable: DEL and the C1 controls, U+FEFF inside a stream, U+FFFE/U+FFFF), or that YAML 1.1
 * reads as line breaks inside a quoted scalar (NEL, U+2028, U+2029 — go-yaml would fold them).
 */
const NOT_YAML_PRINTABLE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g;

/**
 * `value` as a YAML document in flow style: its JSON text (every JSON text is YAML 1.2, and
 * go-yaml reads it: `:` right after a quoted key is a value indicator inside flow collections),
 * with the characters of {@link NOT_YAML_PRINTABLE} written as `\uXXXX` escapes, which mean the
 * same in JSON and YAML double-quoted strings. Properties whose value is undefined are left out.
 */
function flowYaml(value: unknown): string {
  return yamlSafeJson(JSON.stringify(value));
}

/** JSON text (compact, as JSON.stringify writes it) as a flow-style YAML document: see {@link flowYaml}. */
function yamlSafeJson(json: string): string {
  return `${json.replace(NOT_YAML_PRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/**
 * An object's JSON text (as stored) as YAML, as {@link encodeYaml} writes it. A text of more than
 * twenty characters per unit of {@link YAML_BLOCK_BUDGET} exceeds the budget unless it is mostly
 * escape sequences (without them no value costs less than a unit per ten characters of its JSON,
 * `"abcdefg":"abcdefg",` being the cheapest), so it becomes flow-style YAML without being decoded.
 */
function jsonTextAsYaml(json: string): string {
  return json.length > YAML_BLOCK_BUDGET * 20 ? yamlSafeJson(json) : encodeYaml(JSON.parse(json));
}

/** A response body and its Content-Type. */
export interface EncodedBody { contentType: string; body: string | Buffer }

/**
 * `value` (an object, or its JSON) in serialization `media`. Throws a 406 StatusError for protobuf
 * of a kind without a protobuf form, 500 for an object that does not fit its protobuf schema.
 */
export function encodeBody(media: Media, value: string | object): EncodedBody {
  switch (media) {
    // A Buffer: Fastify would append `; charset=utf-8` to a string's JSON type, which kube does not write.
    case 'json': return { contentType: MEDIA_TYPES.json, body: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)) };
    case 'yaml': return { contentType: MEDIA_TYPES.yaml, body: typeof value === 'string' ? jsonTextAsYaml(value) : encodeYaml(value) };
    case 'protobuf': return { contentType: MEDIA_TYPES.protobuf, body: encodeKubernetesProtobuf((typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>) };
  }
}

/**
 * `err` as a kube Status in the serialization the `Accept` header asks for (JSON, YAML or
 * protobuf; JSON when none qualifies — responsewriters.ErrorNegotiated, see `negotiateStatus`).
 */
export function encodeStatus(err: StatusError, accept: string | undefined): EncodedBody {
  const status = err.toStatus();
  const media = negotiateStatus(accept);
  if (media !== 'json') {
    try { return encodeBody(media, status); } catch { /* a Status the codec cannot write: JSON below */ }
  }
  return encodeBody('json', status);
}

/**
 * Decodes a JSON or YAML request body into a value. Throws 400 (malformed) or 415 (format).
 * A malformed body is reported as kube-apiserver does (handlers' transformDecodeError): `the
 * object provided is unrecognized (must be of type <kind>): couldn't get version/kind; json parse
 * error: <Go's encoding/json message> (<summary of the body>)`, or `error converting YAML to JSON:
 * yaml: line N: …` for YAML.
 *
 * A protobuf body is decoded for endpoints whose kind has a protobuf form (`opts.protobuf`: built-in
 * kinds, DeleteOptions); for the others (custom resources) it is a 415 naming JSON and YAML — kube's
 * CRD handler lists protobuf among its input types but cannot decode it (it fails with a 400, or
 * panics when decoding strictly), so the answer here says what works instead.
 *
 * @param expectedKind the kind the endpoint takes (`ConfigMap`, `DeleteOptions`), named in errors
 * @param opts.protobuf whether a protobuf body is accepted
 * @param opts.duplicates when given, the paths of keys a JSON body repeats are appended to it (strict
 *   decoding; `JSON.parse` itself keeps the last value)
 */
export function decodeBody(contentType: string | undefined, body: Buffer | undefined, expectedKind: string, opts: { protobuf: boolean; duplicates?: string[] }): unknown {
  const duplicates = opts.duplicates;
  const data = body ?? Buffer.alloc(0);
  const ct = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  const unrecognized = (why: string) => badRequest(`the object provided is unrecognized (must be of type ${expectedKind}): ${why} (${summarizeBody(data)})`);
  if (ct === 'application/json' || ct === '' || ct === '*/*') {
    if (jsonDeeperThan(data)) throw unrecognized(`couldn't get version/kind; json parse error: exceeded max depth of ${MAX_NESTING_DEPTH}`);
    const text = data.toString('utf8');
    let value: unknown;
    try { value = JSON.parse(text); } catch {
      throw unrecognized(`couldn't get version/kind; json parse error: ${jsonSyntaxError(data) ?? 'invalid JSON'}`);
    }
    if (duplicates) duplicates.push(...duplicateFields(text));
    return value;
  }
  if (ct === 'application/yaml' || ct === 'application/x-yaml' || ct === 'text/yaml') {
    if (data.length === 0) throw unrecognized(`couldn't get version/kind; json parse error: unexpected end of JSON input`);
    try { return parseYamlDocument(data.toString('utf8')); } catch (err) {
      if (err instanceof YamlSyntaxError) throw unrecognized(err.message);
      throw err;
    }
  }
  // kubectl >= 1.32 sends typed-client bodies (create configmap, auth can-i, …) as protobuf.
  if (isKubernetesProtobuf(ct)) {
    if (!opts.protobuf) throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${MEDIA_TYPES.json}, ${MEDIA_TYPES.yaml}`);
    if (data.length === 0) throw unrecognized('empty data');
    const obj = decodeKubernetesProtobuf(data);
    if (valueDeeperThan(obj)) throw tooDeep('protobuf');
    return obj;
  }
  const accepted = opts.protobuf ? MEDIA_ORDER : MEDIA_ORDER.filter((m) => m !== 'protobuf');
  throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.map((m) => MEDIA_TYPES[m]).join(', ')}`);
}

/** A body that is not one YAML document; the message is kube's (`error converting YAML to JSON: yaml: …`). */
class YamlSyntaxError extends Error {}

/**
 * Parses one YAML document. Throws YamlSyntaxError with `error converting YAML to JSON: yaml:
 * line N: <reason>` (sigs.k8s.io/yaml's wording, as kube reports) for syntax errors, duplicate
 * keys, more than one document, nesting deeper than MAX_NESTING_DEPTH and alias bombs; 413 for
 * a YAML text over MAX_YAML_TOKENS tokens. A text that is JSON (what clients send) is parsed as
 * JSON, in linear time. With `repeatedKeys`, a repeated key is no error: the last value wins (as
 * go-yaml's lenient decoding) and go-yaml's strict report of it is appended there
 * (`line 9: key "foo" already set in map`).
 */
function parseYamlDocument(text: string, repeatedKeys?: string[]): unknown {
  const first = /\S/.exec(text)?.[0];
  if (first === '{' || first === '[') {
    const data = Buffer.from(text);
    if (jsonDeeperThan(data)) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH}`);
    let value: unknown;
    try { value = JSON.parse(text); } catch { value = undefined; }
    if (value !== undefined) {
      if (repeatedKeys) {
        repeatedKeys.push(...duplicateKeyLines(text, goQuote));
        return value;
      }
      const dup = duplicateFields(text)[0];
      if (dup !== undefined) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: mapping key "${dup}" already defined`);
      return value;
    }
  }
  // The composer recurses per nesting level and spends microseconds per token: refuse deep or
  // huge texts before it runs (depth.ts).
  const complex = yamlTooComplex(text);
  if (complex === 'depth') throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH}`);
  if (complex === 'size') throw new StatusError(413, 'RequestEntityTooLarge', `the YAML body has more than ${MAX_YAML_TOKENS} tokens: send it as JSON`);
  // The library's uniqueKeys check is quadratic in a map's size: keys are checked below instead.
  const docs = parseAllDocuments(text, { uniqueKeys: false });
  if (!Array.isArray(docs)) return null; // empty input: YAML's null
  if (docs.length !== 1) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: expected one document, found ${docs.length}`);
  const doc = docs[0]!;
  const error = doc.errors[0];
  if (error) {
    // The yaml library's message ends with " at line L, column C:" and a code frame.
    const reason = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    const line = error.linePos?.[0]?.line;
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: ${line ? `line ${line}: ` : ''}${reason}`);
  }
  if (repeatedKeys) repeatedKeys.push(...repeatedYamlKeys(doc.contents, text));
  const dupAt = repeatedKeys ? undefined : duplicateYamlKey(doc.contents);
  if (dupAt !== undefined) {
    const line = text.slice(0, dupAt).split('\n').length;
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: line ${line}: Map keys must be unique`);
  }
  let value: unknown;
  // Aliases are resolved here: an alias bomb ("billion laughs") is refused by the library's alias
  // count (ReferenceError), and one that contains itself makes a cyclic value.
  try { value = doc.toJSON(); } catch (err) {
    throw new YamlSyntaxError(`error converting YAML to JSON: yaml: ${(err as Error).message.split('\n')[0]}`);
  }
  if (valueDeeperThan(value)) throw new YamlSyntaxError(`error converting YAML to JSON: yaml: exceeded max depth of ${MAX_NESTING_DEPTH} (or an alias that contains itself)`);
  return value;
}

/** Offset of the first key a YAML map repeats (scalar keys compared by value), or undefined; iterative, linear. */
function duplicateYamlKey(root: unknown): number | undefined {
  const stack: unknown[] = [root];
  while (stack.length) {
    const node = stack.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const item of node.items) {
        if (!isPair(item)) continue;
        const key = item.key as YamlNode | null;
        const id = isScalar(key) ? `${typeof key.value}:${String(key.value)}` : key === null ? 'null' : undefined;
        if (id !== undefined) {
          if (seen.has(id)) return key?.range?.[0] ?? 0;
          seen.add(id);
        }
        stack.push(item.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push(item);
    }
  }
  return undefined;
}

/**
 * go-yaml v2's strict-decoding reports of the keys a YAML map repeats (decode.go setMapIndex):
 * `line L: key "foo" already set in map` with L the line of the repeated key's value, reported
 * after what that value repeats (go-yaml decodes the value first); keys render as Go's `%#v`.
 * Iterative, linear; at most `limit` reports (go-yaml reports all; each is some ten times the
 * bytes of the repeat it reports).
 */
function repeatedYamlKeys(root: unknown, text: string, limit = 100): string[] {
  const out: string[] = [];
  const lineAt = lineCounter(text);
  const stack: Array<{ node: unknown } | { report: string }> = [{ node: root }];
  while (stack.length && out.length < limit) {
    const top = stack.pop()!;
    if ('report' in top) { out.push(top.report); continue; }
    const node = top.node;
    if (isMap(node)) {
      const seen = new Set<string>();
      const frames: Array<{ node: unknown } | { report: string }> = [];
      for (const item of node.items) {
        if (!isPair(item)) continue;
        const key = item.key as YamlNode | null;
        const value = item.value as YamlNode | null;
        frames.push({ node: value });
        const id = isScalar(key) ? `${typeof key.value}:${String(key.value)}` : key === null ? 'null' : undefined;
        if (id === undefined) continue;
        if (!seen.has(id)) { seen.add(id); continue; }
        const k = isScalar(key) ? key.value : null;
        const shown = typeof k === 'string' ? goQuote(k) : k === null || k === undefined ? '<nil>' : String(k);
        const at = value?.range?.[0] ?? key?.range?.[1] ?? 0;
        frames.push({ report: `line ${lineAt(at)}: key ${shown} already set in map` });
      }
      for (let i = frames.length - 1; i >= 0; i--) stack.push(frames[i]!);
    } else if (isSeq(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) stack.push({ node: node.items[i] });
    }
  }
  return out;
}

/** The 1-based line of an offset of `text`; offsets asked in any order, one pass over the text on the first ask. */
function lineCounter(text: string): (offset: number) => number {
  let starts: number[] | undefined;
  return (offset) => {
    if (!starts) {
      starts = [0];
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    }
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid; else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** A decoded apply body: the value, and go-yaml's strict-decoding reports of its repeated keys. */
export interface ApplyPatchBody {
  value: unknown;
  /** `line 9: key "foo" already set in map`, in go-yaml's order; empty when no key repeats. */
  repeatedKeys: string[];
}

/**
 * Decodes the body of a server-side apply patch (YAML or JSON, one document) as kube's apply
 * patcher does (apiserver handlers/patch.go applyPatcher): leniently — a repeated key keeps its
 * last value and is reported in `repeatedKeys` for the `fieldValidation` judgement that follows
 * the apply. Throws 400 `error decoding YAML: …` for a body that is not one YAML document.
 */
export function decodeApplyPatch(body: Buffer): ApplyPatchBody {
  const repeatedKeys: string[] = [];
  try { return { value: parseYamlDocument(body.toString('utf8'), repeatedKeys), repeatedKeys }; } catch (err) {
    if (err instanceof YamlSyntaxError) throw badRequest(`error decoding YAML: ${err.message}`);
    throw err;
  }
}
