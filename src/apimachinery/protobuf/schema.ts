/**
 * The shape of the Kubernetes protobuf schema table (src/apimachinery/protobuf/schema.generated.ts,
 * generated from the Go types of k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver by
 * scripts/generate-protobuf-schema.ts).
 */

/**
 * The value type of one field.
 *  - `string`, `bool`, `int32`, `int64`: proto scalars (`int64` becomes a JS number);
 *  - `bytes`: Go `[]byte`, written as a base64 string;
 *  - `double`: Go `float64` (wire type fixed64, little-endian IEEE 754), JSON a number;
 *  - `time`: meta/v1 `Time` ({seconds, nanos}; Go drops the nanos), JSON `2006-01-02T15:04:05Z` or `null` when zero;
 *  - `microTime`: meta/v1 `MicroTime`, JSON `2006-01-02T15:04:05.000000Z` or `null` when zero;
 *  - `duration`: meta/v1 `Duration` (`int64 duration = 1`, nanoseconds), JSON a Go duration string (`1h2m3s`);
 *  - `quantity`: k8s.io/apimachinery/pkg/api/resource `Quantity` (`string string = 1`), JSON string;
 *  - `intOrString`: util/intstr `IntOrString` ({type int64 = 1, intVal int32 = 2, strVal string = 3}), JSON a number or string;
 *  - `fieldsV1`: meta/v1 `FieldsV1` (`bytes Raw = 1` holding JSON), JSON the parsed document;
 *  - `rawExtension`: runtime `RawExtension` and apiextensions/v1 `JSON` (`bytes raw = 1` holding a JSON
 *    document, or — in a WatchEvent — the object's own Kubernetes protobuf encoding), JSON the document;
 *  - `extraValue`: a named Go `[]string` used as a map value (authorization/v1, authentication/v1,
 *    certificates/v1 `ExtraValue`): the wrapper message `repeated string items = 1`, JSON a string array;
 *  - `schemaOrArray` / `schemaOrBool` / `schemaOrStringArray`: apiextensions/v1 `JSONSchemaPropsOrArray`
 *    ({schema = 1, jSONSchemas = 2}), `JSONSchemaPropsOrBool` ({allows = 1, schema = 2}),
 *    `JSONSchemaPropsOrStringArray` ({schema = 1, property = 2}), JSON as their custom MarshalJSON writes them
 *    (apiextensions-apiserver/pkg/apis/apiextensions/v1/marshal.go);
 *  - `message:<name>`: another message of the schema.
 */
export type ProtobufValueKind =
  | 'string' | 'bytes' | 'bool' | 'int32' | 'int64' | 'double'
  | 'time' | 'microTime' | 'duration' | 'quantity' | 'intOrString' | 'fieldsV1' | 'rawExtension' | 'extraValue'
  | 'schemaOrArray' | 'schemaOrBool' | 'schemaOrStringArray'
  | `message:${string}`;

/**
 * How the Go field renders in JSON when it holds its zero value (see the module comment of
 * src/apimachinery/protobuf.ts): `omitempty` — value field tagged `omitempty`; `always` — value field
 * without it; `pointer` — pointer field; `omitzero` — `metav1.Time`/`MicroTime` field tagged `omitzero`
 * (left out when zero; the decoder supports `omitzero` on these kinds only); `inline` — an embedded struct
 * tagged `json:",inline"` (a message of its own on the wire, its fields merged into the parent's JSON).
 */
export type ProtobufFieldEmit = 'omitempty' | 'always' | 'pointer' | 'omitzero' | 'inline';

/** One field of a message (from the `protobuf:"…"` and `json:"…"` struct tags of the Go types). */
export interface ProtobufField {
  /** Field number. */
  readonly no: number;
  /** JSON name. */
  readonly json: string;
  /** Value type; for maps, the value type (keys are always strings). */
  readonly kind: ProtobufValueKind;
  /** `one` — singular; `list` — `repeated`; `dict` — `map<string, kind>`. */
  readonly card: 'one' | 'list' | 'dict';
  readonly emit: ProtobufFieldEmit;
}

/** A message: its fields in Go struct order (which is the JSON key order). */
export type ProtobufMessage = readonly ProtobufField[];

/** A singular field (the generated table's shorthand). */
export const one = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'one', emit });
/** A `repeated` field. */
export const list = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'list', emit });
/** A `map<string, kind>` field. */
export const dict = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'dict', emit });
