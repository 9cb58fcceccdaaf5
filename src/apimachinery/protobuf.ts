/**
 * The Kubernetes protobuf codec (`application/vnd.kubernetes.protobuf`) for the built-in kinds:
 * decoding request bodies into the objects their JSON encoding would be, so the rest of the server only
 * ever sees JSON-shaped objects, and encoding JSON-shaped objects into the exact bytes kube-apiserver
 * writes, so client-go's typed clients (which send and ask for protobuf for built-in kinds) get what
 * they get from kube.
 *
 * Wire format: k8s.io/apimachinery/pkg/runtime/serializer/protobuf — the 4-byte magic `k8s\x00`
 * followed by a `runtime.Unknown` message (k8s.io/apimachinery/pkg/runtime/generated.proto) whose
 * `raw` field holds the object's own message (k8s.io/api `<group>/<version>/generated.proto`,
 * k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto, apiextensions-apiserver apiextensions/v1).
 * The messages are in src/apimachinery/protobuf/schema.generated.ts, generated from the Go types by
 * scripts/generate-protobuf-schema.ts.
 *
 * JSON shape: the result is what encoding/json would produce for the Go struct that the generated
 * (gogo-protobuf) unmarshaller fills in. The Go marshaller writes every non-pointer field, even empty
 * strings and zero numbers, so "present on the wire" does not mean "set"; what decides whether a field
 * appears in JSON is the Go field type and its `json` tag:
 *  - value field with `omitempty`: left out when it holds its zero value ("", 0, false, empty list/map);
 *  - value field without `omitempty`: always written (nil list/map as `null`);
 *  - pointer field (`*string`, `*int64`, `*bool`, `*metav1.Time`, `*Struct`): written iff present on the wire;
 *  - struct field (nested message, `metav1.Time`, `resource.Quantity`): always written — `omitempty` has
 *    no effect on structs — except with `omitzero` (ObjectMeta.creationTimestamp), which leaves a zero time out.
 *
 * Encoding is the reverse, as the gogo-generated `MarshalToSizedBuffer` methods write the Go struct the
 * JSON decodes into: non-pointer fields always (empty strings, zero numbers, empty nested messages),
 * pointer fields iff set, nil `[]byte`/`Raw` not at all, repeated fields element by element, maps entry
 * by entry in sorted key order, fields in ascending number order. Typed list items carry no
 * apiVersion/kind (TypeMeta has no protobuf field), as in kube.
 *
 * Bounds: the wire reader is bounds-checked; nesting deeper than MAX_NESTING_DEPTH messages is a 400
 * while decoding (JSONSchemaProps nests itself), and refused while encoding; a decode produces at most
 * one JSON value per body byte plus a constant (absent fields expand to zero values), else a 400.
 */
import { MAX_NESTING_DEPTH, tooDeep } from './depth.js';
import { StatusError, badRequest } from './errors.js';
import { parseGoDuration } from '../apiextensions/schema-formats.js';
import { GENERATED_PROTOBUF_KINDS, GENERATED_PROTOBUF_SCHEMA } from './protobuf/schema.generated.js';
import type { ProtobufField, ProtobufMessage, ProtobufValueKind } from './protobuf/schema.js';

/** The media type of the Kubernetes protobuf serializer (k8s.io/apimachinery/pkg/runtime/serializer/protobuf). */
export const KUBERNETES_PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** The 4-byte prefix of every Kubernetes protobuf payload, `k8s\x00` (runtime/serializer/protobuf `protoEncodingPrefix`). */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z); `metav1.Time.IsZero` is true for it. */
const GO_ZERO_TIME_SECONDS = -62135596800;

// ---------------------------------------------------------------------------------------------
// Wire-format reader (google.golang.org/protobuf wire format, as decoded by the gogo-generated
// `Unmarshal` methods of k8s.io/api and k8s.io/apimachinery).
// ---------------------------------------------------------------------------------------------

/** Protobuf wire types (encoding/protowire). */
const enum WireType { Varint = 0, Fixed64 = 1, Bytes = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5 }

/** A decoding failure inside the body: answered as 400 BadRequest. */
function malformed(why: string): StatusError {
  return badRequest(`unable to decode protobuf body: ${why}`);
}

/** A 64-bit varint split into its unsigned low and high 32-bit halves. */
interface Varint64 { lo: number; hi: number }

/**
 * Reads protobuf wire data from `buf[pos, end)`. Every read is bounds-checked; running past `end` is
 * reported as truncated data.
 */
class WireReader {
  constructor(private readonly buf: Buffer, public pos: number, readonly end: number) {}

  get done(): boolean { return this.pos >= this.end; }

  /** A base-128 varint of at most 10 bytes (encoding/protowire `ConsumeVarint`). */
  varint(): Varint64 {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw malformed('unexpected end of data (truncated varint)');
      const b = this.buf[this.pos++]!;
      const bits = b & 0x7f;
      if (i < 4) lo |= bits << (7 * i);
      else if (i === 4) { lo |= (bits & 0x0f) << 28; hi |= bits >> 4; }
      else hi |= bits << (7 * i - 32);
      if (b < 0x80) return { lo: lo >>> 0, hi: hi >>> 0 };
    }
    throw malformed('varint overflows 64 bits');
  }

  /** A varint that must fit a non-negative safe integer (lengths, tags). */
  smallVarint(what: string): number {
    // Fast path: one or two bytes (field keys, short lengths) without the 64-bit split.
    const b0 = this.pos < this.end ? this.buf[this.pos]! : 0x80;
    if (b0 < 0x80) { this.pos++; return b0; }
    if (this.pos + 1 < this.end) {
      const b1 = this.buf[this.pos + 1]!;
      if (b1 < 0x80) { this.pos += 2; return (b0 & 0x7f) | (b1 << 7); }
    }
    const { lo, hi } = this.varint();
    if (hi >= 0x200000) throw malformed(`${what} out of range`);
    return hi * 0x100000000 + lo;
  }

  /** The `[start, end)` range of a length-delimited value. */
  lengthDelimited(): { start: number; end: number } {
    const len = this.smallVarint('length');
    const start = this.pos;
    if (len > this.end - start) throw malformed('unexpected end of data (length exceeds the remaining bytes)');
    this.pos = start + len;
    return { start, end: this.pos };
  }

  /** A little-endian IEEE 754 double (wire type fixed64). */
  double(): number {
    this.advance(8);
    return this.buf.readDoubleLE(this.pos - 8);
  }

  /** Consumes a length-delimited value; returns its start (its end is the new `pos`). Allocation-free. */
  delimit(): number {
    const len = this.smallVarint('length');
    const start = this.pos;
    if (len > this.end - start) throw malformed('unexpected end of data (length exceeds the remaining bytes)');
    this.pos = start + len;
    return start;
  }

  /** A field key as `number * 8 + wireType`, validated (allocation-free form of {@link tag}). */
  key(): number {
    const key = this.smallVarint('field key');
    const no = Math.floor(key / 8);
    if (no <= 0 || no > 0x1fffffff) throw malformed(`illegal field number ${no}`);
    return key;
  }

  /** The contents of a length-delimited value. */
  bytes(): Buffer {
    const { start, end } = this.lengthDelimited();
    return this.buf.subarray(start, end);
  }

  /** A field key: its number and wire type. */
  tag(): { no: number; wt: number } {
    const key = this.smallVarint('field key');
    const no = Math.floor(key / 8);
    const wt = key % 8;
    if (no <= 0 || no > 0x1fffffff) throw malformed(`illegal field number ${no}`);
    return { no, wt };
  }

  /** Skips one value of wire type `wt` (fields the schema does not know are ignored, as the Go code does). */
  skip(no: number, wt: number): void {
    switch (wt) {
      case WireType.Varint: this.varint(); return;
      case WireType.Fixed64: this.advance(8); return;
      case WireType.Fixed32: this.advance(4); return;
      case WireType.Bytes: this.lengthDelimited(); return;
      case WireType.StartGroup:
        for (;;) {
          if (this.done) throw malformed('unexpected end of data (unterminated group)');
          const t = this.tag();
          if (t.wt === WireType.EndGroup) {
            if (t.no !== no) throw malformed(`mismatched end of group ${t.no}, expected ${no}`);
            return;
          }
          this.skip(t.no, t.wt);
        }
      default:
        throw malformed(`illegal wire type ${wt} for field ${no}`);
    }
  }

  advance(n: number): void {
    if (n > this.end - this.pos) throw malformed('unexpected end of data (truncated fixed-width value)');
    this.pos += n;
  }
}

/**
 * Writes protobuf wire data back to front, as the gogo-generated `MarshalToSizedBuffer` methods do: a
 * message's fields are written from the highest field number down, so an embedded message's length is
 * known the moment its contents are written and no size pass or copy is needed. The buffer grows by
 * doubling (the written tail moves to the end of the new buffer).
 */
class ReverseWriter {
  private buf: Buffer;
  /** Start of the written data, which occupies `buf[pos, buf.length)`. */
  private pos: number;

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
    this.pos = initial;
  }

  /** Bytes written so far. */
  get length(): number { return this.buf.length - this.pos; }

  /** Size of the working buffer. */
  get capacity(): number { return this.buf.length; }

  /** Forgets what was written (the buffer is kept). */
  reset(): void { this.pos = this.buf.length; }

  private ensure(n: number): void {
    if (this.pos >= n) return;
    const used = this.length;
    const size = Math.max(this.buf.length * 2, used + n + 64);
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, size - used, this.pos);
    this.buf = next;
    this.pos = size - used;
  }

  /** A non-negative integer below 2^53 as a varint. */
  uvarint(v: number): void {
    this.ensure(10);
    // Count the bytes, then fill them front to back at the right offset.
    let n = 1;
    for (let x = v; x >= 0x80; x = Math.floor(x / 128)) n++;
    let at = (this.pos -= n);
    let x = v;
    while (x >= 0x80) { this.buf[at++] = (x % 128) | 0x80; x = Math.floor(x / 128); }
    this.buf[at] = x;
  }

  /** A signed 64-bit integer as a varint (negative values in two's complement: 10 bytes). */
  varint64(v: number): void {
    if (v >= 0 && v <= Number.MAX_SAFE_INTEGER) { this.uvarint(v); return; }
    let n = BigInt.asUintN(64, BigInt(Math.trunc(v)));
    const bytes: number[] = [];
    do { let b = Number(n & 0x7fn); n >>= 7n; if (n) b |= 0x80; bytes.push(b); } while (n);
    this.ensure(bytes.length);
    this.pos -= bytes.length;
    for (let i = 0; i < bytes.length; i++) this.buf[this.pos + i] = bytes[i]!;
  }

  /** A field key. */
  tag(no: number, wt: WireType): void { this.uvarint(no * 8 + wt); }

  /** Raw bytes (no length prefix). */
  raw(b: Uint8Array): void {
    this.ensure(b.length);
    this.pos -= b.length;
    this.buf.set(b, this.pos);
  }

  /** A UTF-8 string with its length prefix. */
  string(s: string): void {
    // Short ASCII strings (most names, keys and values) are copied by hand: cheaper than a native write.
    if (s.length <= 64) {
      this.ensure(s.length + 10);
      const start = this.pos - s.length;
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        this.buf[start + i] = c;
      }
      if (i === s.length) { this.pos = start; this.uvarint(s.length); return; }
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.ensure(n);
    this.pos -= n;
    this.buf.write(s, this.pos, n, 'utf8');
    this.uvarint(n);
  }

  /** A little-endian IEEE 754 double (wire type fixed64). */
  double(v: number): void {
    this.ensure(8);
    this.pos -= 8;
    this.buf.writeDoubleLE(v, this.pos);
  }

  /** The written bytes (a view, valid until the next write). */
  finish(): Buffer { return this.buf.subarray(this.pos); }
}

/** UTF-8 text of `buf[start, end)`; short ASCII runs are decoded by hand (cheaper than a native call). */
function utf8(buf: Buffer, start: number, end: number): string {
  if (end - start > 32) return buf.toString('utf8', start, end);
  let s = '';
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) return buf.toString('utf8', start, end);
    s += String.fromCharCode(c);
  }
  return s;
}

/** int64 from a varint (two's complement), as a JS number (rounded like `JSON.parse` would round the same digits). */
function toInt64({ lo, hi }: Varint64): number {
  if (hi < 0x200000) return hi * 0x100000000 + lo; // non-negative and below 2^53
  return Number(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)));
}

/** int32 from a varint: the low 32 bits, signed (negative int32 values are sign-extended to 10 bytes on the wire). */
function toInt32({ lo }: Varint64): number {
  return lo | 0;
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

export type { ProtobufField, ProtobufFieldEmit, ProtobufMessage, ProtobufValueKind } from './protobuf/schema.js';

/**
 * The messages this server decodes and encodes, keyed by `<group>.<version>.<Message>` (meta/v1 types
 * under `meta.v1`): generated from the Go types of k8s.io/api, k8s.io/apimachinery and
 * k8s.io/apiextensions-apiserver by scripts/generate-protobuf-schema.ts (field numbers checked against
 * each package's generated.proto; JSON names and emission rules from the `json` tags).
 */
export const PROTOBUF_SCHEMA: Readonly<Record<string, ProtobufMessage>> = GENERATED_PROTOBUF_SCHEMA;

/**
 * The built-in kinds served as protobuf and their lists, `<apiVersion>/<kind>` → message of
 * {@link PROTOBUF_SCHEMA} (the types registered by the k8s.io/api install packages for these group
 * versions). See {@link protobufMessageFor} for the meta/v1 kinds accepted besides them.
 */
export const PROTOBUF_KINDS: Readonly<Record<string, string>> = GENERATED_PROTOBUF_KINDS;

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/** A decoded field value before JSON rendering: bytes stay a Buffer, everything else is already JSON. */
type Decoded = unknown;

/** What an absent field renders as: nothing, `null`, or the Go zero value of its kind. */
const enum Absent { Skip, Null, Zero }

/** A message prepared for decoding: fields by number, and what each renders as when absent. */
interface DecodePlan {
  readonly name: string;
  readonly fields: ProtobufMessage;
  /** Field number → index in `fields`. */
  readonly indexOfNo: readonly (number | undefined)[];
  readonly absent: readonly Absent[];
}

const decodePlans = new Map<string, DecodePlan>();
/** Plans by `message:<name>` kind (the schema's own strings, so the lookup hashes no new string). */
const decodePlansByKind = new Map<string, DecodePlan>();

function planOfKind(kind: ProtobufValueKind): DecodePlan {
  let plan = decodePlansByKind.get(kind);
  if (!plan) { plan = planOf(kind.slice('message:'.length)); decodePlansByKind.set(kind, plan); }
  return plan;
}

/** What an absent field renders as, by the emission rules of the module comment. */
function absentRule(f: ProtobufField): Absent {
  if (f.card !== 'one') return f.emit === 'always' ? Absent.Null : Absent.Skip; // nil slice / map
  // A nil named slice in its wrapper message (meta/v1 APIResource `verbs`, no omitempty) is JSON null.
  if (f.emit === 'pointer' && f.kind === 'extraValue') return Absent.Null;
  if (f.emit === 'pointer' || f.emit === 'omitzero') return Absent.Skip; // nil pointer; zero time under omitzero
  if (f.emit === 'omitempty' && GO_SCALARS.has(f.kind)) return Absent.Skip;
  if (f.kind === 'bytes') return Absent.Null; // nil []byte without omitempty
  return Absent.Zero;
}

function planOf(name: string): DecodePlan {
  let plan = decodePlans.get(name);
  if (!plan) {
    const fields = PROTOBUF_SCHEMA[name];
    if (!fields) throw new Error(`protobuf schema: no message ${name}`);
    const indexOfNo: (number | undefined)[] = [];
    fields.forEach((f, i) => { indexOfNo[f.no] = i; });
    plan = { name, fields, indexOfNo, absent: fields.map(absentRule) };
    decodePlans.set(name, plan);
  }
  return plan;
}

/** The wire type a value of `kind` is encoded with. */
function wireTypeOf(kind: ProtobufValueKind): WireType {
  if (kind === 'double') return WireType.Fixed64;
  return kind === 'bool' || kind === 'int32' || kind === 'int64' ? WireType.Varint : WireType.Bytes;
}

/** Formats Unix seconds (+ microseconds) in UTC as Go's `time.RFC3339` / metav1 `RFC3339Micro`. */
function formatUtc(seconds: number, micros: number | undefined): string {
  const ms = seconds * 1000;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw malformed(`timestamp ${seconds} out of range`);
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const y = d.getUTCFullYear();
  const year = y < 0 ? `-${pad(-y, 4)}` : pad(y, 4);
  const frac = micros === undefined ? '' : `.${pad(micros, 6)}`;
  return `${year}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac}Z`;
}

/**
 * meta/v1 `Time` / `MicroTime` from their `Timestamp` message ({seconds int64 = 1, nanos int32 = 2}),
 * rendered as metav1 `MarshalJSON` does: `null` for the zero time (encoded as empty data, or as the
 * seconds of Go's zero time). `Time.Unmarshal` drops the nanos;
 * `MicroTime.Unmarshal` truncates them to microseconds (k8s.io/apimachinery/pkg/apis/meta/v1/time_proto.go,
 * micro_time_proto.go).
 */
function decodeTimestamp(r: WireReader, micro: boolean): string | null {
  if (r.done) return null; // empty data is the zero time (the Go marshaller writes nothing for it)
  let seconds = 0;
  let nanos = 0;
  while (!r.done) {
    const { no, wt } = r.tag();
    if (no === 1 && wt === WireType.Varint) seconds = toInt64(r.varint());
    else if (no === 2 && wt === WireType.Varint) nanos = toInt32(r.varint());
    else if (no === 1 || no === 2) throw malformed(`wrong wire type ${wt} for Timestamp field ${no}`);
    else r.skip(no, wt);
  }
  if (!micro) return seconds === GO_ZERO_TIME_SECONDS ? null : formatUtc(seconds, undefined);
  // time.Unix(seconds, truncated nanos): normalise nanos into [0, 1e9).
  let ns = nanos - (nanos % 1000);
  seconds += Math.floor(ns / 1e9);
  ns -= Math.floor(ns / 1e9) * 1e9;
  if (seconds === GO_ZERO_TIME_SECONDS && ns === 0) return null;
  return formatUtc(seconds, ns / 1000);
}

/** Reads the fields of a one-field wrapper message (Quantity, FieldsV1, ExtraValue): the values of field 1. */
function wrapperField1(r: WireReader, wrapper: string): Buffer[] {
  const out: Buffer[] = [];
  while (!r.done) {
    const { no, wt } = r.tag();
    if (no !== 1) { r.skip(no, wt); continue; }
    if (wt !== WireType.Bytes) throw malformed(`wrong wire type ${wt} for ${wrapper} field 1`);
    out.push(r.bytes());
  }
  return out;
}

/** The `[start, end)` contents of a wrapper's field 1 (last occurrence wins), or undefined when absent. */
function lastField1(r: WireReader, wrapper: string): Buffer | undefined {
  const all = wrapperField1(r, wrapper);
  return all.length ? all[all.length - 1] : undefined;
}

/** Parses a JSON document carried in a `bytes raw` field (FieldsV1, RawExtension, apiextensions JSON). */
function parseRawJson(raw: Buffer, what: string): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') return null;
  try { return JSON.parse(text) as unknown; } catch { throw malformed(`${what} raw is not valid JSON`); }
}

/** Refuses message nesting deeper than {@link MAX_NESTING_DEPTH} (JSONSchemaProps nests itself). */
function checkDepth(depth: number): void {
  if (depth > MAX_NESTING_DEPTH) throw tooDeep('protobuf');
}

/**
 * JSON values a decode may still produce. Absent fields expand to their zero values (a 2-byte empty
 * ConfigMapList item is a whole object), so without a bound a 3 MiB body of empty list items would
 * become millions of objects and seconds of CPU. Bodies from Go's marshaller produce well under one
 * value per byte (every field it writes costs at least 2 bytes): the budget is one value per body
 * byte plus {@link DECODE_BUDGET_BASE}, set by each top-level decode; values of zero-value expansions
 * count {@link ZERO_VALUE_WEIGHT} times.
 */
let decodeBudget = 0;

/** The constant part of the decode budget (values), for small bodies of sparse messages. */
const DECODE_BUDGET_BASE = 65_536;

/**
 * What a value produced by expanding an absent message field to its zero value costs. Go's marshaller
 * writes every non-pointer struct field, so its bodies need no such expansion; a body of empty
 * messages is all expansion, and this weight keeps it to an eighth of a value per byte.
 */
const ZERO_VALUE_WEIGHT = 8;

const EMPTY = Buffer.alloc(0);

/** Charges `n` produced values to the budget; a 400 when it runs out. */
function spend(n: number): void {
  if ((decodeBudget -= n) < 0) throw malformed('the object expands to more values than its size allows (a body of empty messages?)');
}

const SCHEMA_PROPS_KIND: ProtobufValueKind = 'message:apiextensions.v1.JSONSchemaProps';

/** Decodes one value of `kind` at the reader's position (the field key already consumed); `depth` counts enclosing messages. */
function decodeValue(r: WireReader, kind: ProtobufValueKind, buf: Buffer, depth: number): Decoded {
  switch (kind) {
    case 'bool': { const v = r.varint(); return v.lo !== 0 || v.hi !== 0; }
    case 'int32': return toInt32(r.varint());
    case 'int64': return toInt64(r.varint());
    case 'double': return r.double();
    default: break;
  }
  const start = r.delimit();
  const end = r.pos;
  switch (kind) {
    case 'string': return utf8(buf, start, end);
    case 'bytes': return buf.subarray(start, end);
    case 'time': return decodeTimestamp(new WireReader(buf, start, end), false);
    case 'microTime': return decodeTimestamp(new WireReader(buf, start, end), true);
    case 'duration': {
      const fields = decodeScalarFields(new WireReader(buf, start, end), 'Duration', { 1: 'int64' });
      return formatGoDuration((fields[1] as number | undefined) ?? 0);
    }
    case 'quantity': {
      // resource.Quantity: `optional string string = 1`; the Go marshaller writes the canonical form.
      const s = lastField1(new WireReader(buf, start, end), 'Quantity');
      return s ? s.toString('utf8') : '0';
    }
    case 'intOrString': {
      const f = decodeScalarFields(new WireReader(buf, start, end), 'IntOrString', { 1: 'int64', 2: 'int32', 3: 'string' });
      // IntOrString.MarshalJSON: Type 0 (Int) → the number, 1 (String) → the string.
      return f[1] === 1 ? ((f[3] as string | undefined) ?? '') : ((f[2] as number | undefined) ?? 0);
    }
    case 'fieldsV1': {
      // FieldsV1.MarshalJSON writes Raw verbatim (`null` when nil): it must be a JSON document.
      const raw = lastField1(new WireReader(buf, start, end), 'FieldsV1');
      return raw ? parseRawJson(raw, 'FieldsV1') : null;
    }
    case 'rawExtension': {
      // RawExtension/JSON MarshalJSON write Raw verbatim (`null` when nil). A watch event's object is
      // the embedded object's own Kubernetes protobuf encoding.
      const raw = lastField1(new WireReader(buf, start, end), 'RawExtension');
      if (!raw) return null;
      if (raw.length >= MAGIC.length && raw.subarray(0, MAGIC.length).equals(MAGIC)) return decodeEnvelope(raw, depth + 1);
      return parseRawJson(raw, 'RawExtension');
    }
    case 'extraValue':
      return wrapperField1(new WireReader(buf, start, end), 'ExtraValue').map((b) => b.toString('utf8'));
    case 'schemaOrArray': case 'schemaOrBool': case 'schemaOrStringArray':
      return decodeSchemaOr(kind, buf, start, end, depth + 1);
    default:
      return decodeMessagePlan(planOfKind(kind), buf, start, end, depth + 1, 1);
  }
}

/**
 * The apiextensions/v1 `JSONSchemaPropsOr*` wrappers, rendered by their MarshalJSON
 * (apiextensions-apiserver/pkg/apis/apiextensions/v1/marshal.go):
 *  - OrArray: the array when `jSONSchemas` is non-empty, else the schema (`null` when nil);
 *  - OrBool: the schema when set, else `allows`;
 *  - OrStringArray: the strings when `property` is non-empty, else the schema, else `null`.
 */
function decodeSchemaOr(kind: 'schemaOrArray' | 'schemaOrBool' | 'schemaOrStringArray', buf: Buffer, start: number, end: number, depth: number): Decoded {
  checkDepth(depth);
  const r = new WireReader(buf, start, end);
  const schemaNo = kind === 'schemaOrBool' ? 2 : 1;
  let schema: Decoded;
  const many: Decoded[] = [];
  let allows = false;
  while (!r.done) {
    const { no, wt } = r.tag();
    if (no === schemaNo) {
      if (wt !== WireType.Bytes) throw malformed(`wrong wire type ${wt} for ${kind} field ${no}`);
      schema = decodeValue(r, SCHEMA_PROPS_KIND, buf, depth);
    } else if (no === 2 && kind !== 'schemaOrBool') {
      if (wt !== WireType.Bytes) throw malformed(`wrong wire type ${wt} for ${kind} field 2`);
      many.push(decodeValue(r, kind === 'schemaOrArray' ? SCHEMA_PROPS_KIND : 'string', buf, depth));
    } else if (no === 1 && kind === 'schemaOrBool') {
      if (wt !== WireType.Varint) throw malformed(`wrong wire type ${wt} for ${kind} field 1`);
      allows = decodeValue(r, 'bool', buf, depth) as boolean;
    } else r.skip(no, wt);
  }
  if (kind === 'schemaOrBool') return schema !== undefined ? schema : allows;
  if (many.length > 0) return many;
  return schema !== undefined ? schema : null;
}

/** Reads the scalar fields of a small fixed message (Duration, IntOrString): field number → value. */
function decodeScalarFields(r: WireReader, what: string, kinds: Readonly<Record<number, 'int32' | 'int64' | 'string'>>): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  while (!r.done) {
    const { no, wt } = r.tag();
    const kind = kinds[no];
    if (!kind) { r.skip(no, wt); continue; }
    if (wt !== wireTypeOf(kind)) throw malformed(`wrong wire type ${wt} for ${what} field ${no}`);
    out[no] = kind === 'string' ? r.bytes().toString('utf8') : kind === 'int32' ? toInt32(r.varint()) : toInt64(r.varint());
  }
  return out;
}

/** The Go zero value of `kind`, rendered (what a map entry without a value, or an absent struct field, holds). */
function zeroValue(kind: ProtobufValueKind, depth: number): Decoded {
  switch (kind) {
    case 'string': return '';
    case 'bytes': return Buffer.alloc(0);
    case 'bool': return false;
    case 'int32': case 'int64': case 'double': case 'intOrString': return 0;
    case 'duration': return '0s';
    case 'time': case 'microTime': case 'fieldsV1': case 'rawExtension': return null;
    case 'schemaOrArray': case 'schemaOrStringArray': return null;
    case 'schemaOrBool': return false;
    case 'quantity': return '0';
    case 'extraValue': return [];
    default: return decodeMessagePlan(planOfKind(kind), EMPTY, 0, 0, depth + 1, ZERO_VALUE_WEIGHT);
  }
}

/** A `map<string, kind>` entry: `key = 1`, `value = 2`. */
function decodeMapEntry(r: WireReader, kind: ProtobufValueKind, buf: Buffer, depth: number): [string, Decoded] {
  const { start, end } = r.lengthDelimited();
  const er = new WireReader(buf, start, end);
  let key = '';
  let value: Decoded;
  while (!er.done) {
    const { no, wt } = er.tag();
    if (no === 1) {
      if (wt !== WireType.Bytes) throw malformed(`wrong wire type ${wt} for map key`);
      key = decodeValue(er, 'string', buf, depth) as string;
    } else if (no === 2) {
      if (wt !== wireTypeOf(kind)) throw malformed(`wrong wire type ${wt} for map value`);
      value = decodeValue(er, kind, buf, depth);
    } else er.skip(no, wt);
  }
  // An absent value is the zero value; the gogo unmarshaller starts a []byte value as `[]byte{}` (JSON "").
  return [key, value === undefined ? zeroValue(kind, depth) : value];
}

/** JSON form of a decoded value (bytes → base64). */
function toJson(v: Decoded): unknown {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  return v;
}

function isEmptyScalar(v: Decoded): boolean {
  return v === '' || v === 0 || v === false || (Buffer.isBuffer(v) && v.length === 0);
}

/**
 * Decodes message `name` from `buf[start, end)` and renders it as encoding/json renders the Go struct
 * (see the module comment for the emission rules). `depth` is the message's nesting level (1 for the
 * top-level object); deeper than {@link MAX_NESTING_DEPTH} is a 400.
 */
function decodeMessage(name: string, buf: Buffer, start: number, end: number, depth: number): Record<string, unknown> {
  return decodeMessagePlan(planOf(name), buf, start, end, depth, 1);
}

/** {@link decodeMessage} with the message's plan; each produced value costs `weight` of the budget. */
function decodeMessagePlan(plan: DecodePlan, buf: Buffer, start: number, end: number, depth: number, weight: number): Record<string, unknown> {
  checkDepth(depth);
  const values = decodeFields(plan, buf, start, end, depth);
  const out: Record<string, unknown> = {};
  const { fields, absent } = plan;
  let produced = 1; // the object, then each property set
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    const v = values[i];
    if (v === undefined) {
      const rule = absent[i];
      if (rule === Absent.Skip) continue;
      if (rule === Absent.Null) { out[f.json] = null; produced++; continue; }
      const zero = zeroValue(f.kind, depth);
      if (f.emit === 'inline') Object.assign(out, zero);
      else out[f.json] = toJson(zero);
      produced++;
      continue;
    }
    produced++;
    if (f.card !== 'one' || f.emit === 'pointer') { out[f.json] = toJson(v); continue; }
    if (f.emit === 'inline') { Object.assign(out, v); continue; }
    if (f.emit === 'omitzero' && v === null) continue;
    // omitempty drops zero Go scalars only: struct-backed kinds (IntOrString, Quantity, RawExtension, …) are always written.
    if (f.emit === 'omitempty' && GO_SCALARS.has(f.kind) && isEmptyScalar(v)) continue;
    out[f.json] = toJson(v);
  }
  spend(produced * weight);
  return out;
}

/** Value kinds that are Go scalars (string, []byte, bool, numbers): the ones `omitempty` applies to. */
const GO_SCALARS: ReadonlySet<ProtobufValueKind> = new Set<ProtobufValueKind>(['string', 'bytes', 'bool', 'int32', 'int64', 'double']);

/** Sets `obj[key] = value` as an own property even for `__proto__` (as JSON.parse does). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * Reads the fields of a message: field number → value (lists as arrays, maps as objects — both already
 * in JSON form — and the last occurrence of a singular field wins).
 */
function decodeFields(plan: DecodePlan, buf: Buffer, start: number, end: number, depth: number): Decoded[] {
  const r = new WireReader(buf, start, end);
  const values: Decoded[] = new Array<Decoded>(plan.fields.length);
  while (!r.done) {
    const key = r.key();
    const no = Math.floor(key / 8);
    const wt = key % 8;
    const i = plan.indexOfNo[no];
    if (i === undefined) { r.skip(no, wt); continue; }
    const f = plan.fields[i]!;
    const want = f.card === 'dict' ? WireType.Bytes : wireTypeOf(f.kind);
    if (wt !== want) throw malformed(`wrong wire type ${wt} for field ${plan.name}.${f.json}`);
    if (f.card === 'list') {
      const arr = (values[i] as unknown[] | undefined) ?? (values[i] = []) as unknown[];
      spend(1);
      arr.push(toJson(decodeValue(r, f.kind, buf, depth)));
    } else if (f.card === 'dict') {
      const map = (values[i] as Record<string, unknown> | undefined) ?? (values[i] = {}) as Record<string, unknown>;
      spend(1);
      const [k, v] = decodeMapEntry(r, f.kind, buf, depth);
      setOwn(map, k, toJson(v));
    } else {
      values[i] = decodeValue(r, f.kind, buf, depth);
    }
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------------------

/**
 * Whether `contentType` is the Kubernetes protobuf media type `application/vnd.kubernetes.protobuf`
 * (k8s.io/apimachinery/pkg/runtime/serializer/protobuf); parameters are ignored.
 */
export function isKubernetesProtobuf(contentType: string | undefined): boolean {
  if (!contentType) return false;
  return contentType.split(';')[0]!.trim().toLowerCase() === KUBERNETES_PROTOBUF_MEDIA_TYPE;
}

/**
 * Kinds meta/v1 registers in every group version (apimachinery `metav1.AddToGroupVersion`), so they are
 * protobuf-encodable under any apiVersion: kind → message.
 */
const EVERY_GROUP_VERSION_KINDS: Readonly<Record<string, string>> = {
  DeleteOptions: 'meta.v1.DeleteOptions',
  WatchEvent: 'meta.v1.WatchEvent',
};

/**
 * Kinds of the unversioned `v1` (metav1 `AddToGroupVersion`: Status and the discovery documents), of
 * `meta.k8s.io` (metav1 `AddMetaToScheme`; meta/v1beta1's PartialObjectMetadataList is its own message,
 * items = 1 and metadata = 2) and of aggregated discovery (`apidiscovery.k8s.io`):
 * `<apiVersion>/<kind>` → message. `/api`'s APIVersions is served with an empty apiVersion (apiserver
 * endpoints/discovery/legacy.go strips it), hence `/APIVersions`.
 */
const META_KINDS: Readonly<Record<string, string>> = {
  'v1/Status': 'meta.v1.Status',
  'v1/APIVersions': 'meta.v1.APIVersions',
  '/APIVersions': 'meta.v1.APIVersions',
  'v1/APIGroupList': 'meta.v1.APIGroupList',
  'v1/APIGroup': 'meta.v1.APIGroup',
  'v1/APIResourceList': 'meta.v1.APIResourceList',
  'meta.k8s.io/v1/PartialObjectMetadata': 'meta.v1.PartialObjectMetadata',
  'meta.k8s.io/v1/PartialObjectMetadataList': 'meta.v1.PartialObjectMetadataList',
  'meta.k8s.io/v1beta1/PartialObjectMetadata': 'meta.v1.PartialObjectMetadata',
  'meta.k8s.io/v1beta1/PartialObjectMetadataList': 'meta.v1beta1.PartialObjectMetadataList',
  'apidiscovery.k8s.io/v2/APIGroupDiscoveryList': 'apidiscovery.v2.APIGroupDiscoveryList',
  'apidiscovery.k8s.io/v2beta1/APIGroupDiscoveryList': 'apidiscovery.v2beta1.APIGroupDiscoveryList',
};

/**
 * The protobuf message of a kind, e.g. `protobufMessageFor('v1', 'ConfigMap')` → `'core.v1.ConfigMap'`:
 * defined for the built-in kinds of {@link PROTOBUF_KINDS} and their `<Kind>List`, meta/v1 `Status`
 * (apiVersion `v1`), `DeleteOptions` and `WatchEvent` (any apiVersion), `PartialObjectMetadata(List)`
 * (`meta.k8s.io/v1`, `v1beta1`), the discovery documents and `APIGroupDiscoveryList` (see META_KINDS). Undefined for everything else — custom resources, `Table` — which kube
 * serves as JSON only. Messages in the schema that no kind names (e.g. a list whose item kind is not
 * served) are not reachable from here.
 */
export function protobufMessageFor(apiVersion: string, kind: string): string | undefined {
  const gvk = `${apiVersion}/${kind}`;
  const direct = PROTOBUF_KINDS[gvk] ?? META_KINDS[gvk] ?? EVERY_GROUP_VERSION_KINDS[kind];
  if (direct) return direct;
  if (kind.endsWith('List')) {
    const item = PROTOBUF_KINDS[gvk.slice(0, -'List'.length)];
    if (item && PROTOBUF_SCHEMA[`${item}List`]) return `${item}List`;
  }
  return undefined;
}

/**
 * Decodes a Kubernetes protobuf body (k8s.io/apimachinery/pkg/runtime/serializer/protobuf: magic
 * `k8s\x00` + `runtime.Unknown`) into the object its JSON encoding would be, `{apiVersion, kind, …}`.
 *
 * Throws a 400 BadRequest StatusError for malformed data (wrong prefix, truncated or invalid wire data,
 * missing kind or apiVersion, messages nested deeper than {@link MAX_NESTING_DEPTH}) and a 415
 * UnsupportedMediaType StatusError for kinds {@link protobufMessageFor} does not know (those must be sent
 * as JSON).
 */
export function decodeKubernetesProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw malformed('empty body');
  decodeBudget = body.length + DECODE_BUDGET_BASE;
  return decodeEnvelope(body, 1);
}

function decodeEnvelope(body: Buffer, depth: number): Record<string, unknown> {
  checkDepth(depth);
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest('provided data does not appear to be a protobuf message, expected prefix "k8s\\x00"');
  }
  // runtime.Unknown's fields in order: typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4.
  const env = decodeFields(planOf('runtime.Unknown'), body, MAGIC.length, body.length, depth);
  const typeMeta = (env[0] ?? {}) as { apiVersion?: string; kind?: string };
  const raw = (env[1] as Buffer | undefined) ?? Buffer.alloc(0);
  const apiVersion = typeMeta.apiVersion ?? '';
  const kind = typeMeta.kind ?? '';
  if (!kind) throw badRequest("Object 'Kind' is missing in protobuf body");
  if (!apiVersion) throw badRequest("Object 'apiVersion' is missing in protobuf body");
  const message = protobufMessageFor(apiVersion, kind);
  if (!message) {
    throw new StatusError(415, 'UnsupportedMediaType',
      `${kind} in ${apiVersion}: protobuf is supported only for built-in kinds; send application/json`);
  }
  const obj = decodeMessage(message, raw, 0, raw.length, depth);
  return { apiVersion, kind, ...obj };
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/** An object that does not fit its kind's schema (a stored object kube could not have held): a server-side fault. */
function unencodable(why: string): StatusError {
  const path = encodePath.map((seg) => (typeof seg === 'number' ? `[${seg}]` : /^[\w$-]+$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`)).join('');
  return new StatusError(500, 'InternalError', `unable to encode the object as protobuf: ${path || '.'}: ${why}`);
}

/**
 * The field path being encoded (JSON names, list indexes, map keys), kept as a stack rather than built
 * per field; read only to word an error. Reset by each top-level encode.
 */
const encodePath: (string | number)[] = [];

/** A message prepared for encoding. */
interface EncodePlan {
  /** Every field, highest number first (the order a reverse writer emits them in). */
  readonly desc: readonly ProtobufField[];
  /** The fields written even when absent from the JSON (non-pointer singular fields), highest first. */
  readonly always: readonly ProtobufField[];
  /** The other fields (pointers, lists, maps: written only when present), by JSON name. */
  readonly optionalByJson: ReadonlyMap<string, ProtobufField>;
}

const encodePlans = new Map<string, EncodePlan>();

/**
 * The encode plan of a message by its name or its `message:<name>` kind (cached under the string
 * given: the schema's own kind strings hash once).
 */
function encodePlanOf(nameOrKind: string): EncodePlan {
  let plan = encodePlans.get(nameOrKind);
  if (!plan) {
    const name = nameOrKind.startsWith('message:') ? nameOrKind.slice('message:'.length) : nameOrKind;
    const msg = PROTOBUF_SCHEMA[name];
    if (!msg) throw new Error(`protobuf schema: no message ${name}`);
    const desc = [...msg].sort((a, b) => b.no - a.no);
    const isAlways = (f: ProtobufField): boolean => f.card === 'one' && f.emit !== 'pointer';
    plan = { desc, always: desc.filter(isAlways), optionalByJson: new Map(desc.filter((f) => !isAlways(f)).map((f) => [f.json, f])) };
    encodePlans.set(nameOrKind, plan);
  }
  return plan;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `s` holds a UTF-16 surrogate (a code point above U+FFFF). */
function hasSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) { const c = s.charCodeAt(i); if (c >= 0xd800 && c <= 0xdfff) return true; }
  return false;
}

/** Map keys in Go's `sort.Strings` order (byte-wise on UTF-8), reversed for the reverse writer. */
function keysDescending(obj: Record<string, unknown>): string[] {
  const keys = Object.keys(obj);
  if (keys.length < 2) return keys;
  // UTF-16 code-unit order equals UTF-8 byte order unless a surrogate meets a code unit ≥ U+E000.
  if (keys.some(hasSurrogate)) keys.sort((a, b) => Buffer.compare(Buffer.from(b), Buffer.from(a)));
  else keys.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  return keys;
}

/**
 * Writes the fields of message `name` for the JSON-shaped `obj` (undefined/null → the zero message), as
 * the gogo-generated marshallers write the Go struct the JSON decodes into: value fields always (empty
 * strings and zero numbers included), pointer fields iff set, `[]byte` and `Raw` fields iff non-nil,
 * repeated fields element by element, maps entry by entry in sorted key order; fields in ascending
 * number order on the wire.
 */
function writeMessage(w: ReverseWriter, nameOrKind: string, obj: unknown, depth: number): void {
  if (depth > MAX_NESTING_DEPTH) throw unencodable(`nested deeper than ${MAX_NESTING_DEPTH} levels`);
  if (obj === undefined || obj === null) obj = {};
  if (!isRecord(obj)) throw unencodable(`expected an object, got ${typeof obj}`);
  const plan = encodePlanOf(nameOrKind);
  const keys = Object.keys(obj);
  if (keys.length * 2 >= plan.desc.length) {
    for (const f of plan.desc) writeFieldOf(w, f, obj, depth);
    return;
  }
  // A sparse object (a JSONSchemaProps sets a few of its 45 fields): the fields always written, merged
  // with the optional ones its keys name, highest number first.
  const present: ProtobufField[] = [];
  for (const k of keys) { const f = plan.optionalByJson.get(k); if (f) present.push(f); }
  if (present.length > 1) present.sort((a, b) => b.no - a.no);
  const { always } = plan;
  let i = 0;
  let j = 0;
  while (i < always.length || j < present.length) {
    const f = j >= present.length || (i < always.length && always[i]!.no > present[j]!.no) ? always[i++]! : present[j++]!;
    writeFieldOf(w, f, obj, depth);
  }
}

/** Writes field `f` of the JSON object `obj` (see {@link writeMessage}). */
function writeFieldOf(w: ReverseWriter, f: ProtobufField, obj: Record<string, unknown>, depth: number): void {
  const v = obj[f.json];
  if (f.card === 'list') {
    if (v === undefined || v === null) return;
    encodePath.push(f.json);
    if (!Array.isArray(v)) throw unencodable('expected an array');
    for (let i = v.length - 1; i >= 0; i--) { encodePath.push(i); writeField(w, f.no, f.kind, v[i], depth); encodePath.pop(); }
    encodePath.pop();
  } else if (f.card === 'dict') {
    if (v === undefined || v === null) return;
    encodePath.push(f.json);
    if (!isRecord(v)) throw unencodable('expected an object');
    for (const k of keysDescending(v)) {
      encodePath.push(k);
      const start = w.length;
      writeField(w, 2, f.kind, v[k], depth);
      w.string(k);
      w.tag(1, WireType.Bytes);
      w.uvarint(w.length - start);
      w.tag(f.no, WireType.Bytes);
      encodePath.pop();
    }
    encodePath.pop();
  } else if (f.emit === 'inline') {
    // An inline struct reads its fields from the parent's JSON object.
    writeField(w, f.no, f.kind, obj, depth);
  } else {
    if (f.emit === 'pointer' && (v === undefined || v === null)) return;
    encodePath.push(f.json);
    writeField(w, f.no, f.kind, v, depth);
    encodePath.pop();
  }
}

function expectNumber(v: unknown, integer: boolean): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
    throw unencodable(`expected ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`);
  }
  return v;
}

function expectString(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw unencodable(`expected a string, got ${typeof v}`);
  return v;
}

/** Writes field `no` holding the JSON value `v` of `kind` (undefined/null → the Go zero value, or nothing for nil `[]byte`/`Raw`). */
function writeField(w: ReverseWriter, no: number, kind: ProtobufValueKind, v: unknown, depth: number): void {
  switch (kind) {
    case 'string': w.string(expectString(v)); w.tag(no, WireType.Bytes); return;
    case 'bool':
      if (v !== undefined && v !== null && typeof v !== 'boolean') throw unencodable('expected a boolean');
      w.uvarint(v ? 1 : 0); w.tag(no, WireType.Varint); return;
    case 'int32': {
      const n = expectNumber(v, true);
      if (n < -0x80000000 || n > 0x7fffffff) throw unencodable(`${n} overflows int32`);
      w.varint64(n); w.tag(no, WireType.Varint); return;
    }
    case 'int64': w.varint64(expectNumber(v, true)); w.tag(no, WireType.Varint); return;
    case 'double': w.double(expectNumber(v, false)); w.tag(no, WireType.Fixed64); return;
    case 'bytes': {
      if (v === undefined || v === null) return; // nil []byte: not written
      const b = Buffer.from(expectString(v), 'base64');
      w.raw(b); w.uvarint(b.length); w.tag(no, WireType.Bytes);
      return;
    }
    default: {
      // Length-delimited message kinds: contents first (back to front), then length and key.
      const start = w.length;
      writeMessageValue(w, kind, v, depth);
      w.uvarint(w.length - start);
      w.tag(no, WireType.Bytes);
    }
  }
}

/** RFC 3339 as metav1 `Time`/`MicroTime.UnmarshalJSON` accept it (Go `time.RFC3339`, fraction optional, any offset). */
const TIMESTAMP = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d\d):(\d\d))$/;

/**
 * Timestamps parsed lately: an object's times repeat (creationTimestamp, its managedFields' times, a
 * list's items written in the same second). Bounded: emptied when it reaches {@link TIMESTAMP_CACHE_SIZE}.
 */
const timestampCache = new Map<string, { seconds: number; nanos: number }>();
const TIMESTAMP_CACHE_SIZE = 1024;

function parseTimestamp(s: string): { seconds: number; nanos: number } {
  let parsed = timestampCache.get(s);
  if (!parsed) {
    parsed = parseTimestampText(s);
    if (timestampCache.size >= TIMESTAMP_CACHE_SIZE) timestampCache.clear();
    timestampCache.set(s, parsed);
  }
  return parsed;
}

/** Parses an RFC 3339 time (as metav1 `Time`/`MicroTime.UnmarshalJSON` do) into Unix seconds and nanoseconds. */
function parseTimestampText(s: string): { seconds: number; nanos: number } {
  const m = TIMESTAMP.exec(s);
  if (!m) throw unencodable(`${JSON.stringify(s)} is not an RFC 3339 time`);
  const d = new Date(0);
  d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  d.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), 0);
  let seconds = d.getTime() / 1000;
  if (m[8]) seconds -= (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 3600 + Number(m[10]) * 60);
  const nanos = m[7] ? Number(m[7].padEnd(9, '0')) : 0;
  return { seconds, nanos };
}

/** Writes the contents (no key, no length) of a length-delimited value of `kind`. */
function writeMessageValue(w: ReverseWriter, kind: ProtobufValueKind, v: unknown, depth: number): void {
  switch (kind) {
    case 'time': case 'microTime': {
      if (v === undefined || v === null) return;
      const { seconds, nanos } = parseTimestamp(expectString(v));
      if (seconds === GO_ZERO_TIME_SECONDS && nanos === 0) return; // IsZero: nothing written
      // Time.ProtoTime writes no nanos (time_proto.go); MicroTime truncates them to microseconds.
      const ns = kind === 'time' ? 0 : nanos - (nanos % 1000);
      w.varint64(ns); w.tag(2, WireType.Varint);
      w.varint64(seconds); w.tag(1, WireType.Varint);
      return;
    }
    case 'duration': {
      let ns = 0;
      if (v !== undefined && v !== null) {
        const seconds = parseGoDuration(expectString(v));
        if (seconds === undefined) throw unencodable(`${JSON.stringify(v)} is not a duration`);
        ns = Math.round(seconds * 1e9);
      }
      w.varint64(ns); w.tag(1, WireType.Varint);
      return;
    }
    case 'quantity': {
      // Quantity.UnmarshalJSON takes a string or a bare number; the marshaller writes field 1 always.
      const q = v === undefined || v === null ? '0' : typeof v === 'number' ? String(v) : expectString(v);
      w.string(q); w.tag(1, WireType.Bytes);
      return;
    }
    case 'intOrString': {
      // {type = 1, intVal = 2, strVal = 3}, all written (util/intstr generated.pb.go).
      const isString = typeof v === 'string';
      w.string(isString ? v : ''); w.tag(3, WireType.Bytes);
      w.varint64(isString ? 0 : expectNumber(v, true)); w.tag(2, WireType.Varint);
      w.uvarint(isString ? 1 : 0); w.tag(1, WireType.Varint);
      return;
    }
    case 'fieldsV1': case 'rawExtension': {
      // `bytes raw = 1`, written iff non-nil; `null` unmarshals to nil Raw.
      if (v === undefined || v === null) return;
      // The JSON text's UTF-8 bytes with their length: the bytes of a length-prefixed string.
      w.string(JSON.stringify(v)); w.tag(1, WireType.Bytes);
      return;
    }
    case 'extraValue': {
      if (v === undefined || v === null) return;
      if (!Array.isArray(v)) throw unencodable('expected an array of strings');
      for (let i = v.length - 1; i >= 0; i--) { encodePath.push(i); w.string(expectString(v[i])); w.tag(1, WireType.Bytes); encodePath.pop(); }
      return;
    }
    case 'schemaOrArray': case 'schemaOrStringArray': {
      // UnmarshalJSON: an object is the schema (field 1), an array the list (field 2).
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) {
          encodePath.push(i);
          writeField(w, 2, kind === 'schemaOrArray' ? SCHEMA_PROPS_KIND : 'string', v[i], depth + 1);
          encodePath.pop();
        }
      } else if (isRecord(v)) writeField(w, 1, SCHEMA_PROPS_KIND, v, depth + 1);
      else if (v !== undefined && v !== null) throw unencodable('expected a schema or an array');
      return;
    }
    case 'schemaOrBool': {
      // UnmarshalJSON: an object is {allows: true, schema}; a boolean is {allows}.
      if (isRecord(v)) { writeField(w, 2, SCHEMA_PROPS_KIND, v, depth + 1); w.uvarint(1); w.tag(1, WireType.Varint); return; }
      if (v !== undefined && v !== null && typeof v !== 'boolean') throw unencodable('expected a schema or a boolean');
      w.uvarint(v ? 1 : 0); w.tag(1, WireType.Varint);
      return;
    }
    default:
      writeMessage(w, kind, v, depth + 1);
  }
}

/** The 406 kube answers for an object the protobuf serializer cannot encode (runtime/serializer/protobuf `errNotMarshalable`). */
function notMarshalable(apiVersion: unknown, kind: unknown): StatusError {
  return new StatusError(406, 'NotAcceptable',
    `object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message (${String(kind)} in ${String(apiVersion)})`);
}

/**
 * The protobuf encoding of message `messageName` (a name {@link protobufMessageFor} returns) for the
 * JSON-shaped `value`: the message bytes only, no magic and no envelope — what the gogo-generated
 * `Marshal` of the Go struct writes after `json.Unmarshal` of `value`. An item of a list is encoded
 * with this and wrapped as field 2 of the list message.
 *
 * Throws a 500 InternalError StatusError when `value` does not fit the schema (a string where a number
 * belongs, an int32 out of range, …): such an object could not exist in kube.
 */
export function encodeProtobufMessage(messageName: string, value: unknown): Buffer {
  const w = takeWriter();
  try {
    encodePath.length = 0;
    writeMessage(w, messageName, value, 1);
    return Buffer.from(w.finish());
  } finally { releaseWriter(w); }
}

/**
 * The writer the top-level encoders share (encoding is synchronous and never re-entered), so an
 * encode allocates its result only: no working buffer, no growth copies once warm. A writer grown past
 * {@link SHARED_WRITER_MAX} by a large message is dropped after use, so the shared one stays small.
 */
let sharedWriter: ReverseWriter | undefined = new ReverseWriter(16 * 1024);
const SHARED_WRITER_MAX = 1024 * 1024;

function takeWriter(): ReverseWriter {
  const w = sharedWriter ?? new ReverseWriter(16 * 1024);
  sharedWriter = undefined;
  w.reset();
  return w;
}

function releaseWriter(w: ReverseWriter): void {
  sharedWriter = w.capacity > SHARED_WRITER_MAX ? new ReverseWriter(16 * 1024) : w;
}

/**
 * Decodes the bytes of message `messageName` (no magic, no envelope: what {@link encodeProtobufMessage}
 * returns, or one item of a list) into its JSON form, by the rules of {@link decodeKubernetesProtobuf}.
 * Throws a 400 BadRequest StatusError for malformed data.
 */
export function decodeProtobufMessage(messageName: string, bytes: Buffer): Record<string, unknown> {
  if (!PROTOBUF_SCHEMA[messageName]) throw new Error(`protobuf schema: no message ${messageName}`);
  decodeBudget = bytes.length + DECODE_BUDGET_BASE;
  return decodeMessage(messageName, bytes, 0, bytes.length, 1);
}

/** runtime.Unknown's trailing `contentEncoding = 3` and `contentType = 4`, both empty (written always). */
const UNKNOWN_TRAILER = Buffer.from([0x1a, 0x00, 0x22, 0x00]);

/**
 * The Kubernetes protobuf envelope around an already-encoded message split in `rawParts`: returns
 * `[header, ...rawParts, trailer]` whose concatenation is magic `k8s\x00` + runtime.Unknown{typeMeta
 * {apiVersion = 1, kind = 2}, raw = 2 (the parts, not copied), contentEncoding = 3 "", contentType = 4 ""}
 * — byte for byte what runtime/serializer/protobuf `Serializer.Encode` writes (runtime `Unknown.NestedMarshalTo`).
 */
export function protobufEnvelope(apiVersion: string, kind: string, rawParts: readonly Buffer[]): Buffer[] {
  let rawLength = 0;
  for (const p of rawParts) rawLength += p.length;
  const w = new ReverseWriter(64 + apiVersion.length + kind.length);
  w.uvarint(rawLength); w.tag(2, WireType.Bytes);
  const start = w.length;
  w.string(kind); w.tag(2, WireType.Bytes);
  w.string(apiVersion); w.tag(1, WireType.Bytes);
  w.uvarint(w.length - start); w.tag(1, WireType.Bytes);
  w.raw(MAGIC);
  return [Buffer.from(w.finish()), ...rawParts, UNKNOWN_TRAILER];
}

/**
 * The Kubernetes protobuf encoding of `obj` (by its `apiVersion` and `kind`): magic + runtime.Unknown
 * with the message as `raw` — what kube-apiserver writes for `application/vnd.kubernetes.protobuf`.
 *
 * Throws a 406 NotAcceptable StatusError for kinds without a protobuf form ({@link protobufMessageFor}
 * undefined: custom resources, Table), with kube's message for them, and a 500 InternalError
 * StatusError when the object does not fit its schema.
 */
export function encodeKubernetesProtobuf(obj: Record<string, unknown>): Buffer {
  const { apiVersion, kind } = obj;
  const message = typeof apiVersion === 'string' && typeof kind === 'string' ? protobufMessageFor(apiVersion, kind) : undefined;
  if (!message) throw notMarshalable(apiVersion, kind);
  // One pass back to front, the bytes of protobufEnvelope around the message: trailer, message, its
  // length and key (raw = 2), typeMeta = 1, magic.
  const w = takeWriter();
  try {
    encodePath.length = 0;
    w.raw(UNKNOWN_TRAILER);
    const end = w.length;
    writeMessage(w, message, obj, 1);
    w.uvarint(w.length - end); w.tag(2, WireType.Bytes);
    const start = w.length;
    w.string(kind as string); w.tag(2, WireType.Bytes);
    w.string(apiVersion as string); w.tag(1, WireType.Bytes);
    w.uvarint(w.length - start); w.tag(1, WireType.Bytes);
    w.raw(MAGIC);
    return Buffer.from(w.finish());
  } finally { releaseWriter(w); }
}

/**
 * One frame of a protobuf watch stream (`application/vnd.kubernetes.protobuf;stream=watch`), exactly as
 * kube-apiserver writes it (k8s.io/apiserver/pkg/endpoints/handlers/watch.go and response.go
 * `watchEncoder.doEncode`; runtime/serializer/codec_factory.go; util/framer):
 *  - the 4-byte big-endian length of what follows (the `LengthDelimitedFramer` frame writer) — INCLUDED
 *    in the returned buffer, so frames are written back to back as returned;
 *  - a meta/v1 `WatchEvent` message {type = 1, object = 2} encoded by the stream's *raw* serializer
 *    (`protobuf.NewRawSerializer`): no magic and no Unknown envelope around the event;
 *  - `object` is a RawExtension whose `raw = 1` holds the object's own full encoding (the negotiated
 *    embedded encoder: magic `k8s\x00` + runtime.Unknown, as {@link encodeKubernetesProtobuf} returns).
 * `type` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (with a meta/v1 Status as `obj`).
 *
 * Throws as {@link encodeKubernetesProtobuf} does for `obj`.
 */
export function encodeProtobufWatchEvent(type: string, obj: Record<string, unknown>): Buffer {
  return protobufWatchFrame(type, encodeKubernetesProtobuf(obj));
}

/** The key and length of a length-delimited field `no` holding `length` bytes (its contents follow). */
export function protobufFieldHeader(no: number, length: number): Buffer {
  const w = new ReverseWriter(16);
  w.uvarint(length); w.tag(no, WireType.Bytes);
  return Buffer.from(w.finish());
}

/**
 * One frame of a protobuf watch stream around an object already in its full protobuf encoding
 * (`embedded`: magic + runtime.Unknown, whole or in parts, not copied until the frame is built):
 * the 4-byte big-endian length, then meta/v1 WatchEvent {type = 1, object = 2 RawExtension
 * {raw = 1}}, written by kube's raw serializer (no magic, no Unknown around the event). Lets an
 * object encoded once be sent to many watchers.
 */
export function protobufWatchFrame(type: string, embedded: Buffer | readonly Buffer[]): Buffer {
  const parts = Buffer.isBuffer(embedded) ? [embedded] : embedded;
  let embeddedLength = 0;
  for (const p of parts) embeddedLength += p.length;
  const typeBytes = Buffer.from(type);
  const raw = protobufFieldHeader(1, embeddedLength);
  const objectLength = raw.length + embeddedLength;
  const typeField = protobufFieldHeader(1, typeBytes.length);
  const objectField = protobufFieldHeader(2, objectLength);
  const eventLength = typeField.length + typeBytes.length + objectField.length + objectLength;
  const frame = Buffer.allocUnsafe(4 + eventLength);
  frame.writeUInt32BE(eventLength, 0);
  let at = 4;
  for (const b of [typeField, typeBytes, objectField, raw, ...parts]) at += b.copy(frame, at);
  return frame;
}

/** Go `time.Duration.String()` of `ns` nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`. */
function formatGoDuration(ns: number): string {
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  const u = Math.abs(ns);
  const frac = (v: number, digits: number): string => {
    const unit = 10 ** digits;
    const whole = Math.floor(v / unit);
    const rest = Math.round(v - whole * unit);
    return rest === 0 ? String(whole) : `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}`;
  };
  if (u < 1e3) return `${sign}${u}ns`;
  if (u < 1e6) return `${sign}${frac(u, 3)}µs`;
  if (u < 1e9) return `${sign}${frac(u, 6)}ms`;
  const minutes = Math.floor(u / 60e9);
  const secs = `${frac(u - minutes * 60e9, 9)}s`;
  if (minutes === 0) return `${sign}${secs}`;
  const hours = Math.floor(minutes / 60);
  return `${sign}${hours > 0 ? `${hours}h` : ''}${minutes % 60}m${secs}`;
}
