/**
 * Protobuf form of the `/openapi/v2` document
 * (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), which kubectl 1.27/1.28 request
 * exclusively for client-side validation and field-validation detection.
 *
 * The wire format is the gnostic `openapi.v2.Document` message (github.com/google/gnostic-models,
 * `openapiv2/OpenAPIv2.proto`). kube-openapi produces it with `ToProtoBinary`: the JSON spec is
 * parsed into a YAML node tree, compiled by gnostic's `openapi_v2.NewDocument` and marshalled with
 * `proto.Marshal`. This module applies the same compiler rules directly to the JSON value:
 *
 * - known keys map to their fields (`$ref` → `_ref`, `type` → `TypeItem{value}`, `items` →
 *   `ItemsItem{schema}`, `additionalProperties` → `AdditionalPropertiesItem` schema or boolean, …);
 * - keys starting with `x-` become `vendor_extension` `NamedAny`s whose `Any.yaml` holds the YAML
 *   text of the value (gnostic's `compiler.Marshal`), as do `default`, `example` and `enum` items;
 * - parameters are `JsonReference` when they carry `$ref`, else `BodyParameter` (`in: body`) or the
 *   `NonBodyParameter` sub-schema chosen by `in` (header, formData, query, path);
 * - proto3 rules: scalar fields holding their zero value are omitted, fields are written in field
 *   number order, oneof members are always written.
 */
import { isObj } from '../apimachinery/objects.js';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Minimal protobuf writer.

const WT_VARINT = 0;
const WT_FIXED64 = 1;
const WT_LEN = 2;

/** Appends protobuf fields to a growing byte list. */
class ProtoWriter {
  private readonly chunks: Buffer[] = [];
  private readonly small: number[] = [];

  private flushSmall(): void {
    if (this.small.length) {
      this.chunks.push(Buffer.from(this.small));
      this.small.length = 0;
    }
  }

  private varint(n: number | bigint): void {
    if (typeof n === 'number' && n >= 0 && n <= 0x7fffffff) {
      let x = n;
      while (x >= 0x80) {
        this.small.push((x & 0x7f) | 0x80);
        x >>>= 7;
      }
      this.small.push(x);
      return;
    }
    let v = BigInt.asUintN(64, BigInt(n));
    if (v < 0x80n) {
      this.small.push(Number(v));
      return;
    }
    while (v >= 0x80n) {
      this.small.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.small.push(Number(v));
  }

  private tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** Length-delimited bytes; always written (used for sub-messages and repeated strings). */
  bytes(field: number, data: Buffer): this {
    this.tag(field, WT_LEN);
    this.varint(data.length);
    this.flushSmall();
    this.chunks.push(data);
    return this;
  }

  /** A singular string field: omitted when empty (proto3). */
  string(field: number, s: string | undefined): this {
    if (s) this.bytes(field, Buffer.from(s, 'utf8'));
    return this;
  }

  /** A repeated string field: every element is written. */
  strings(field: number, list: string[] | undefined): this {
    for (const s of list ?? []) this.bytes(field, Buffer.from(s, 'utf8'));
    return this;
  }

  /** A bool field: omitted when false unless `force` (oneof members). */
  bool(field: number, b: boolean | undefined, force = false): this {
    if (b || (force && b !== undefined)) {
      this.tag(field, WT_VARINT);
      this.varint(b ? 1 : 0);
    }
    return this;
  }

  /** An int64 field: omitted when 0. */
  int64(field: number, n: number | undefined): this {
    if (n !== undefined && n !== 0 && Number.isFinite(n)) {
      this.tag(field, WT_VARINT);
      this.varint(BigInt(Math.trunc(n)));
    }
    return this;
  }

  /** A double field: omitted when 0. */
  double(field: number, n: number | undefined): this {
    if (n !== undefined && n !== 0 && !Number.isNaN(n)) {
      this.tag(field, WT_FIXED64);
      const b = Buffer.alloc(8);
      b.writeDoubleLE(n);
      this.flushSmall();
      this.chunks.push(b);
    }
    return this;
  }

  /** A sub-message field; written (possibly empty) when `data` is defined. */
  message(field: number, data: Buffer | undefined): this {
    if (data) this.bytes(field, data);
    return this;
  }

  /** Repeated sub-message field. */
  messages(field: number, list: Buffer[]): this {
    for (const m of list) this.bytes(field, m);
    return this;
  }

  /** A sub-message field whose content is `inner`'s fields, referenced, not copied. */
  embed(field: number, inner: ProtoWriter): this {
    const content = inner.chunkList();
    this.tag(field, WT_LEN);
    this.varint(content.reduce((n, b) => n + b.length, 0));
    this.flushSmall();
    for (const b of content) this.chunks.push(b);
    return this;
  }

  /** The encoding as the buffers written, in order (their concatenation is {@link finish}'s). */
  chunkList(): Buffer[] {
    this.flushSmall();
    return this.chunks;
  }

  finish(): Buffer {
    this.flushSmall();
    return Buffer.concat(this.chunks);
  }
}

// ---------------------------------------------------------------------------------------------
// YAML text of a JSON value (gnostic `Any.yaml`).

const YAML_RESERVED = /^(true|false|yes|no|on|off|y|n|null|~)$/i;

function yamlScalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : v > 0 ? '.inf' : v < 0 ? '-.inf' : '.nan';
  const s = String(v);
  if (/^[A-Za-z_][A-Za-z0-9_./-]*$/.test(s) && !YAML_RESERVED.test(s)) return s;
  return JSON.stringify(s);
}


function yamlLines(v: unknown): string[] {
  if (Array.isArray(v)) {
    if (!v.length) return ['[]'];
    const out: string[] = [];
    for (const x of v) {
      const sub = yamlLines(x);
      out.push(`- ${sub[0]}`, ...sub.slice(1).map((l) => `  ${l}`));
    }
    return out;
  }
  if (isObj(v)) {
    const keys = Object.keys(v);
    if (!keys.length) return ['{}'];
    const out: string[] = [];
    for (const k of keys) {
      const x = v[k];
      const sub = yamlLines(x);
      const nested = (Array.isArray(x) && x.length > 0) || (isObj(x) && Object.keys(x).length > 0);
      if (nested) out.push(`${yamlScalar(k)}:`, ...sub.map((l) => `  ${l}`));
      else out.push(`${yamlScalar(k)}: ${sub[0]}`);
    }
    return out;
  }
  return [yamlScalar(v)];
}

/**
 * The YAML text of a JSON value, as gnostic's `compiler.Marshal` stores it in `Any.yaml`: block
 * style, one trailing newline; strings that could be read as another type are double-quoted.
 */
export function jsonToYaml(v: unknown): string {
  return `${yamlLines(v).join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// Value helpers.

function str(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  return undefined;
}

function bool(v: unknown): boolean | undefined {
  return typeof v === 'boolean' ? v : undefined;
}

function strList(v: unknown): string[] | undefined {
  if (Array.isArray(v)) return v.map((x) => str(x) ?? '');
  if (typeof v === 'string') return [v];
  return undefined;
}

function obj(v: unknown): Json | undefined {
  return isObj(v) ? v : undefined;
}

/** `Any{yaml}` (gnostic `NewAny`). */
function encodeAny(v: unknown): Buffer {
  return new ProtoWriter().string(2, jsonToYaml(v)).finish();
}

/** `NamedAny{name, value}` entries for the `x-` keys of an object. */
function vendorExtensions(o: Json): Buffer[] {
  const out: Buffer[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (k.startsWith('x-')) out.push(new ProtoWriter().string(1, k).message(2, encodeAny(v)).finish());
  }
  return out;
}

function named(name: string, value: Buffer): Buffer {
  return new ProtoWriter().string(1, name).message(2, value).finish();
}

/** Entries of a map whose values are objects, encoded as `Named<X>{name, value}`. */
function namedMap(v: unknown, enc: (o: Json) => Buffer): Buffer[] {
  const o = obj(v);
  if (!o) return [];
  return Object.entries(o)
    .filter(([, x]) => isObj(x))
    .map(([k, x]) => named(k, enc(x as Json)));
}

// ---------------------------------------------------------------------------------------------
// Messages.

function encodeExternalDocs(o: Json): Buffer {
  return new ProtoWriter().string(1, str(o.description)).string(2, str(o.url)).messages(3, vendorExtensions(o)).finish();
}

function encodeXml(o: Json): Buffer {
  return new ProtoWriter()
    .string(1, str(o.name))
    .string(2, str(o.namespace))
    .string(3, str(o.prefix))
    .bool(4, bool(o.attribute))
    .bool(5, bool(o.wrapped))
    .messages(6, vendorExtensions(o))
    .finish();
}

function encodeJsonReference(o: Json): Buffer {
  return new ProtoWriter().string(1, str(o.$ref)).string(2, str(o.description)).finish();
}

function anyList(v: unknown): Buffer[] {
  return Array.isArray(v) ? v.map(encodeAny) : [];
}

/** gnostic `Schema` (OpenAPIv2.proto field numbers 1–31). */
function encodeSchema(o: Json): Buffer {
  const w = new ProtoWriter()
    .string(1, str(o.$ref))
    .string(2, str(o.format))
    .string(3, str(o.title))
    .string(4, str(o.description));
  if ('default' in o) w.message(5, encodeAny(o.default));
  w.double(6, num(o.multipleOf))
    .double(7, num(o.maximum))
    .bool(8, bool(o.exclusiveMaximum))
    .double(9, num(o.minimum))
    .bool(10, bool(o.exclusiveMinimum))
    .int64(11, num(o.maxLength))
    .int64(12, num(o.minLength))
    .string(13, str(o.pattern))
    .int64(14, num(o.maxItems))
    .int64(15, num(o.minItems))
    .bool(16, bool(o.uniqueItems))
    .int64(17, num(o.maxProperties))
    .int64(18, num(o.minProperties))
    .strings(19, strList(o.required))
    .messages(20, anyList(o.enum));
  const ap = o.additionalProperties;
  if (isObj(ap)) w.message(21, new ProtoWriter().message(1, encodeSchema(ap)).finish());
  else if (typeof ap === 'boolean') w.message(21, new ProtoWriter().bool(2, ap, true).finish());
  if (o.type !== undefined) w.message(22, new ProtoWriter().strings(1, strList(o.type)).finish());
  if (isObj(o.items)) w.message(23, new ProtoWriter().message(1, encodeSchema(o.items)).finish());
  else if (Array.isArray(o.items)) w.message(23, new ProtoWriter().messages(1, o.items.filter(isObj).map(encodeSchema)).finish());
  if (Array.isArray(o.allOf)) w.messages(24, o.allOf.filter(isObj).map(encodeSchema));
  if (isObj(o.properties)) w.message(25, new ProtoWriter().messages(1, namedMap(o.properties, encodeSchema)).finish());
  w.string(26, str(o.discriminator)).bool(27, bool(o.readOnly));
  if (isObj(o.xml)) w.message(28, encodeXml(o.xml));
  if (isObj(o.externalDocs)) w.message(29, encodeExternalDocs(o.externalDocs));
  if ('example' in o) w.message(30, encodeAny(o.example));
  return w.messages(31, vendorExtensions(o)).finish();
}

/** gnostic `FileSchema` (a response schema with `type: file`). */
function encodeFileSchema(o: Json): Buffer {
  const w = new ProtoWriter().string(1, str(o.format)).string(2, str(o.title)).string(3, str(o.description));
  if ('default' in o) w.message(4, encodeAny(o.default));
  w.strings(5, strList(o.required)).string(6, str(o.type)).bool(7, bool(o.readOnly));
  if (isObj(o.externalDocs)) w.message(8, encodeExternalDocs(o.externalDocs));
  if ('example' in o) w.message(9, encodeAny(o.example));
  return w.messages(10, vendorExtensions(o)).finish();
}

/**
 * Fields shared by `PrimitivesItems`, `Header` and the non-body parameter sub-schemas, written
 * from field number `base` (type) on: type, format, items, collectionFormat, default, maximum,
 * exclusiveMaximum, minimum, exclusiveMinimum, maxLength, minLength, pattern, maxItems, minItems,
 * uniqueItems, enum, multipleOf (17 consecutive numbers).
 */
function writePrimitiveFields(w: ProtoWriter, o: Json, base: number): void {
  w.string(base, str(o.type)).string(base + 1, str(o.format));
  if (isObj(o.items)) w.message(base + 2, encodePrimitivesItems(o.items));
  w.string(base + 3, str(o.collectionFormat));
  if ('default' in o) w.message(base + 4, encodeAny(o.default));
  w.double(base + 5, num(o.maximum))
    .bool(base + 6, bool(o.exclusiveMaximum))
    .double(base + 7, num(o.minimum))
    .bool(base + 8, bool(o.exclusiveMinimum))
    .int64(base + 9, num(o.maxLength))
    .int64(base + 10, num(o.minLength))
    .string(base + 11, str(o.pattern))
    .int64(base + 12, num(o.maxItems))
    .int64(base + 13, num(o.minItems))
    .bool(base + 14, bool(o.uniqueItems))
    .messages(base + 15, anyList(o.enum))
    .double(base + 16, num(o.multipleOf));
}

function encodePrimitivesItems(o: Json): Buffer {
  const w = new ProtoWriter();
  writePrimitiveFields(w, o, 1);
  return w.messages(18, vendorExtensions(o)).finish();
}

function encodeHeader(o: Json): Buffer {
  const w = new ProtoWriter();
  writePrimitiveFields(w, o, 1);
  return w.string(18, str(o.description)).messages(19, vendorExtensions(o)).finish();
}

/** `NonBodyParameter` oneof: header=1, formData=2, query=3, path=4. */
function encodeNonBodyParameter(o: Json): Buffer {
  const where = str(o.in);
  const sub = new ProtoWriter().bool(1, bool(o.required)).string(2, where).string(3, str(o.description)).string(4, str(o.name));
  let field: number;
  if (where === 'query' || where === 'formData') {
    // QueryParameterSubSchema / FormDataParameterSubSchema: allowEmptyValue = 5, then type = 6 … vendor_extension = 23.
    sub.bool(5, bool(o.allowEmptyValue));
    writePrimitiveFields(sub, o, 6);
    sub.messages(23, vendorExtensions(o));
    field = where === 'query' ? 3 : 2;
  } else {
    // HeaderParameterSubSchema / PathParameterSubSchema: type = 5 … vendor_extension = 22.
    writePrimitiveFields(sub, o, 5);
    sub.messages(22, vendorExtensions(o));
    field = where === 'header' ? 1 : 4;
  }
  return new ProtoWriter().message(field, sub.finish()).finish();
}

/** `Parameter` oneof: body_parameter=1 (`in: body`), non_body_parameter=2. */
function encodeParameter(o: Json): Buffer {
  if (o.in === 'body') {
    const body = new ProtoWriter()
      .string(1, str(o.description))
      .string(2, str(o.name))
      .string(3, str(o.in))
      .bool(4, bool(o.required));
    if (isObj(o.schema)) body.message(5, encodeSchema(o.schema));
    body.messages(6, vendorExtensions(o));
    return new ProtoWriter().message(1, body.finish()).finish();
  }
  return new ProtoWriter().message(2, encodeNonBodyParameter(o)).finish();
}

/** `ParametersItem` oneof: parameter=1, json_reference=2 (`$ref`). */
function encodeParametersItem(o: Json): Buffer {
  if (typeof o.$ref === 'string') return new ProtoWriter().message(2, encodeJsonReference(o)).finish();
  return new ProtoWriter().message(1, encodeParameter(o)).finish();
}

function parametersList(v: unknown): Buffer[] {
  return Array.isArray(v) ? v.filter(isObj).map(encodeParametersItem) : [];
}

function encodeResponse(o: Json): Buffer {
  const w = new ProtoWriter().string(1, str(o.description));
  if (isObj(o.schema)) {
    const s = o.schema;
    w.message(2, s.type === 'file' ? new ProtoWriter().message(2, encodeFileSchema(s)).finish() : new ProtoWriter().message(1, encodeSchema(s)).finish());
  }
  if (isObj(o.headers)) w.message(3, new ProtoWriter().messages(1, namedMap(o.headers, encodeHeader)).finish());
  if (isObj(o.examples)) {
    const ex = Object.entries(o.examples).map(([k, v]) => named(k, encodeAny(v)));
    w.message(4, new ProtoWriter().messages(1, ex).finish());
  }
  return w.messages(5, vendorExtensions(o)).finish();
}

/** `ResponseValue` oneof: response=1, json_reference=2. */
function encodeResponseValue(o: Json): Buffer {
  if (typeof o.$ref === 'string') return new ProtoWriter().message(2, encodeJsonReference(o)).finish();
  return new ProtoWriter().message(1, encodeResponse(o)).finish();
}

/** `Responses`: response_code=1 (keys not starting with `x-`), vendor_extension=2. */
function encodeResponses(o: Json): Buffer {
  const codes = Object.entries(o)
    .filter(([k, v]) => !k.startsWith('x-') && isObj(v))
    .map(([k, v]) => named(k, encodeResponseValue(v as Json)));
  return new ProtoWriter().messages(1, codes).messages(2, vendorExtensions(o)).finish();
}

/** `SecurityRequirement{repeated NamedStringArray}`. */
function encodeSecurityRequirement(o: Json): Buffer {
  const entries = Object.entries(o).map(([k, v]) => named(k, new ProtoWriter().strings(1, strList(v) ?? []).finish()));
  return new ProtoWriter().messages(1, entries).finish();
}

function securityList(v: unknown): Buffer[] {
  return Array.isArray(v) ? v.filter(isObj).map(encodeSecurityRequirement) : [];
}

function encodeOperation(o: Json): Buffer {
  const w = new ProtoWriter().strings(1, strList(o.tags)).string(2, str(o.summary)).string(3, str(o.description));
  if (isObj(o.externalDocs)) w.message(4, encodeExternalDocs(o.externalDocs));
  w.string(5, str(o.operationId))
    .strings(6, strList(o.produces))
    .strings(7, strList(o.consumes))
    .messages(8, parametersList(o.parameters));
  if (isObj(o.responses)) w.message(9, encodeResponses(o.responses));
  return w
    .strings(10, strList(o.schemes))
    .bool(11, bool(o.deprecated))
    .messages(12, securityList(o.security))
    .messages(13, vendorExtensions(o))
    .finish();
}

const PATH_ITEM_METHODS: Array<[string, number]> = [
  ['get', 2],
  ['put', 3],
  ['post', 4],
  ['delete', 5],
  ['options', 6],
  ['head', 7],
  ['patch', 8],
];

function encodePathItem(o: Json): Buffer {
  const w = new ProtoWriter().string(1, str(o.$ref));
  for (const [m, f] of PATH_ITEM_METHODS) if (isObj(o[m])) w.message(f, encodeOperation(o[m] as Json));
  return w.messages(9, parametersList(o.parameters)).messages(10, vendorExtensions(o)).finish();
}

/** `Paths`: vendor_extension=1, path=2 (keys starting with `/`). */
function encodePaths(o: Json): Buffer {
  const paths = Object.entries(o)
    .filter(([k, v]) => k.startsWith('/') && isObj(v))
    .map(([k, v]) => named(k, encodePathItem(v as Json)));
  return new ProtoWriter().messages(1, vendorExtensions(o)).messages(2, paths).finish();
}

function encodeInfo(o: Json): Buffer {
  const w = new ProtoWriter().string(1, str(o.title)).string(2, str(o.version)).string(3, str(o.description)).string(4, str(o.termsOfService));
  if (isObj(o.contact)) {
    const c = o.contact;
    w.message(5, new ProtoWriter().string(1, str(c.name)).string(2, str(c.url)).string(3, str(c.email)).messages(4, vendorExtensions(c)).finish());
  }
  if (isObj(o.license)) {
    const l = o.license;
    w.message(6, new ProtoWriter().string(1, str(l.name)).string(2, str(l.url)).messages(3, vendorExtensions(l)).finish());
  }
  return w.messages(7, vendorExtensions(o)).finish();
}

function encodeOauth2Scopes(v: unknown): Buffer {
  const o = obj(v) ?? {};
  const entries = Object.entries(o).map(([k, x]) => new ProtoWriter().string(1, k).string(2, str(x)).finish());
  return new ProtoWriter().messages(1, entries).finish();
}

/** `SecurityDefinitionsItem` oneof, chosen by `type` (and `flow` for oauth2). */
function encodeSecurityDefinitionsItem(o: Json): Buffer {
  const ext = vendorExtensions(o);
  const type = str(o.type);
  let field: number;
  const w = new ProtoWriter().string(1, type);
  if (type === 'basic') {
    field = 1;
    w.string(2, str(o.description)).messages(3, ext);
  } else if (type === 'oauth2') {
    const flow = str(o.flow);
    w.string(2, flow);
    if (isObj(o.scopes)) w.message(3, encodeOauth2Scopes(o.scopes));
    if (flow === 'implicit') {
      field = 3;
      w.string(4, str(o.authorizationUrl)).string(5, str(o.description)).messages(6, ext);
    } else if (flow === 'accessCode') {
      field = 6;
      w.string(4, str(o.authorizationUrl)).string(5, str(o.tokenUrl)).string(6, str(o.description)).messages(7, ext);
    } else {
      field = flow === 'application' ? 5 : 4;
      w.string(4, str(o.tokenUrl)).string(5, str(o.description)).messages(6, ext);
    }
  } else {
    field = 2; // apiKey
    w.string(2, str(o.name)).string(3, str(o.in)).string(4, str(o.description)).messages(5, ext);
  }
  return new ProtoWriter().message(field, w.finish()).finish();
}

function encodeTag(o: Json): Buffer {
  const w = new ProtoWriter().string(1, str(o.name)).string(2, str(o.description));
  if (isObj(o.externalDocs)) w.message(3, encodeExternalDocs(o.externalDocs));
  return w.messages(4, vendorExtensions(o)).finish();
}

/**
 * One entry of `Definitions` (`NamedSchema`) or of `Paths` (`NamedPathItem`), from its JSON: what
 * {@link encodeOpenAPIV2Protobuf} takes pre-encoded, so that an entry is encoded once while it is
 * unchanged.
 */
export function encodeOpenAPIV2Entry(kind: 'definition' | 'path', name: string, value: Record<string, unknown>): Buffer {
  return named(name, kind === 'definition' ? encodeSchema(value) : encodePathItem(value));
}

/**
 * Encodes a Swagger 2.0 JSON document (as built by `buildOpenAPIV2`) into the binary protobuf
 * `openapi.v2.Document` of gnostic (github.com/google/gnostic-models `openapiv2/OpenAPIv2.proto`),
 * the body kube-apiserver serves for `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
 * (kube-openapi `ToProtoBinary`: JSON → YAML node → `openapi_v2.NewDocument` → `proto.Marshal`).
 * Field mapping follows gnostic's compiler (`openapiv2/OpenAPIv2.go`); vendor extensions, defaults,
 * examples and enum values are `Any` messages carrying the YAML text of the value. `encoded`: the
 * document's paths and definitions as {@link encodeOpenAPIV2Entry} made them, in order, in place
 * of `doc.paths` and `doc.definitions`.
 */
export function encodeOpenAPIV2Protobuf(doc: Record<string, unknown>, encoded?: { paths: Buffer[]; definitions: Buffer[] }): Buffer {
  return Buffer.concat(encodeOpenAPIV2ProtobufChunks(doc, encoded));
}

/**
 * {@link encodeOpenAPIV2Protobuf} as a list of buffers whose concatenation is the document: the
 * pre-encoded entries are referenced, not copied (a document of 10 MB is written from them as it
 * is, slice by slice).
 */
export function encodeOpenAPIV2ProtobufChunks(doc: Record<string, unknown>, encoded?: { paths: Buffer[]; definitions: Buffer[] }): Buffer[] {
  const w = new ProtoWriter().string(1, str(doc.swagger));
  if (isObj(doc.info)) w.message(2, encodeInfo(doc.info));
  w.string(3, str(doc.host))
    .string(4, str(doc.basePath))
    .strings(5, strList(doc.schemes))
    .strings(6, strList(doc.consumes))
    .strings(7, strList(doc.produces));
  if (encoded) {
    w.embed(8, new ProtoWriter().messages(2, encoded.paths));
    w.embed(9, new ProtoWriter().messages(1, encoded.definitions));
  } else {
    if (isObj(doc.paths)) w.message(8, encodePaths(doc.paths));
    if (isObj(doc.definitions)) w.message(9, new ProtoWriter().messages(1, namedMap(doc.definitions, encodeSchema)).finish());
  }
  if (isObj(doc.parameters)) w.message(10, new ProtoWriter().messages(1, namedMap(doc.parameters, encodeParameter)).finish());
  if (isObj(doc.responses)) w.message(11, new ProtoWriter().messages(1, namedMap(doc.responses, encodeResponse)).finish());
  w.messages(12, securityList(doc.security));
  if (isObj(doc.securityDefinitions)) {
    w.message(13, new ProtoWriter().messages(1, namedMap(doc.securityDefinitions, encodeSecurityDefinitionsItem)).finish());
  }
  if (Array.isArray(doc.tags)) w.messages(14, doc.tags.filter(isObj).map(encodeTag));
  if (isObj(doc.externalDocs)) w.message(15, encodeExternalDocs(doc.externalDocs));
  return w.messages(16, vendorExtensions(doc)).chunkList();
}
