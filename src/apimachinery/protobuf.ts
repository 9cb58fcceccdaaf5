/**
 * Decoding of Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`).
 *
 * kubectl ≥ 1.32 sends the bodies of its typed clients (`kubectl create configmap|secret|namespace|…`,
 * `kubectl auth can-i`) as protobuf. This module turns such a body into the object its JSON encoding
 * would be, so the rest of the server only ever sees JSON-shaped objects.
 *
 * Wire format: k8s.io/apimachinery/pkg/runtime/serializer/protobuf — the 4-byte magic `k8s\x00`
 * followed by a `runtime.Unknown` message (k8s.io/apimachinery/pkg/runtime/generated.proto) whose
 * `raw` field holds the object's own message (k8s.io/api `<group>/<version>/generated.proto`,
 * k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).
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
 */
import { StatusError, badRequest } from './errors.js';

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

  private advance(n: number): void {
    if (n > this.end - this.pos) throw malformed('unexpected end of data (truncated fixed-width value)');
    this.pos += n;
  }
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

/**
 * The value type of one field.
 *  - `string`, `bool`, `int32`, `int64`: proto scalars (`int64` becomes a JS number);
 *  - `bytes`: Go `[]byte`, written as a base64 string;
 *  - `time`: meta/v1 `Time` ({seconds, nanos}; Go drops the nanos), JSON `2006-01-02T15:04:05Z` or `null` when zero;
 *  - `microTime`: meta/v1 `MicroTime`, JSON `2006-01-02T15:04:05.000000Z` or `null` when zero;
 *  - `quantity`: k8s.io/apimachinery/pkg/api/resource `Quantity` (`string string = 1`), JSON string;
 *  - `fieldsV1`: meta/v1 `FieldsV1` (`bytes Raw = 1` holding JSON), JSON the parsed document;
 *  - `extraValue`: authorization/v1 `ExtraValue` (`repeated string items = 1`), JSON a string array;
 *  - `message:<name>`: another message of {@link PROTOBUF_SCHEMA}.
 */
export type ProtobufValueKind =
  | 'string' | 'bytes' | 'bool' | 'int32' | 'int64'
  | 'time' | 'microTime' | 'quantity' | 'fieldsV1' | 'extraValue'
  | `message:${string}`;

/**
 * How the Go field renders in JSON when it holds its zero value (see the module comment):
 * `omitempty` — value field tagged `omitempty`; `always` — value field without it; `pointer` — pointer
 * field tagged `omitempty`; `omitzero` — `metav1.Time`/`MicroTime` field tagged `omitzero` (left out when zero;
 * the decoder supports `omitzero` on these kinds only).
 */
export type ProtobufFieldEmit = 'omitempty' | 'always' | 'pointer' | 'omitzero';

/** One field of a message (from the `protobuf:"…"` and `json:"…"` struct tags of the k8s.io/api Go types). */
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

const one = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'one', emit });
const list = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'list', emit });
const dict = (no: number, json: string, kind: ProtobufValueKind, emit: ProtobufFieldEmit = 'omitempty'): ProtobufField =>
  ({ no, json, kind, card: 'dict', emit });

/**
 * The messages this server decodes, keyed by `<group>.<version>.<Message>` (meta/v1 types under
 * `meta.v1`). Field numbers and types follow k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto and
 * k8s.io/api {core,coordination,events,rbac,authorization}/v1/generated.proto; the JSON names and
 * emission rules follow the `json` tags of the matching Go structs (types.go).
 */
export const PROTOBUF_SCHEMA: Readonly<Record<string, ProtobufMessage>> = {
  'meta.v1.ObjectMeta': [
    one(1, 'name', 'string'),
    one(2, 'generateName', 'string'),
    one(3, 'namespace', 'string'),
    one(4, 'selfLink', 'string'),
    one(5, 'uid', 'string'),
    one(6, 'resourceVersion', 'string'),
    one(7, 'generation', 'int64'),
    one(8, 'creationTimestamp', 'time', 'omitzero'),
    one(9, 'deletionTimestamp', 'time', 'pointer'),
    one(10, 'deletionGracePeriodSeconds', 'int64', 'pointer'),
    dict(11, 'labels', 'string'),
    dict(12, 'annotations', 'string'),
    list(13, 'ownerReferences', 'message:meta.v1.OwnerReference'),
    list(14, 'finalizers', 'string'),
    list(17, 'managedFields', 'message:meta.v1.ManagedFieldsEntry'),
  ],
  'meta.v1.OwnerReference': [
    one(5, 'apiVersion', 'string', 'always'),
    one(1, 'kind', 'string', 'always'),
    one(3, 'name', 'string', 'always'),
    one(4, 'uid', 'string', 'always'),
    one(6, 'controller', 'bool', 'pointer'),
    one(7, 'blockOwnerDeletion', 'bool', 'pointer'),
  ],
  'meta.v1.ManagedFieldsEntry': [
    one(1, 'manager', 'string'),
    one(2, 'operation', 'string'),
    one(3, 'apiVersion', 'string'),
    one(4, 'time', 'time', 'pointer'),
    one(6, 'fieldsType', 'string'),
    one(7, 'fieldsV1', 'fieldsV1', 'pointer'),
    one(8, 'subresource', 'string'),
  ],
  'meta.v1.DeleteOptions': [
    one(1, 'gracePeriodSeconds', 'int64', 'pointer'),
    one(2, 'preconditions', 'message:meta.v1.Preconditions', 'pointer'),
    one(3, 'orphanDependents', 'bool', 'pointer'),
    one(4, 'propagationPolicy', 'string', 'pointer'),
    list(5, 'dryRun', 'string'),
    one(6, 'ignoreStoreReadErrorWithClusterBreakingPotential', 'bool', 'pointer'),
  ],
  'meta.v1.Preconditions': [
    one(1, 'uid', 'string', 'pointer'),
    one(2, 'resourceVersion', 'string', 'pointer'),
  ],
  'meta.v1.LabelSelector': [
    dict(1, 'matchLabels', 'string'),
    list(2, 'matchExpressions', 'message:meta.v1.LabelSelectorRequirement'),
  ],
  'meta.v1.LabelSelectorRequirement': [
    one(1, 'key', 'string', 'always'),
    one(2, 'operator', 'string', 'always'),
    list(3, 'values', 'string'),
  ],
  'core.v1.ConfigMap': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(4, 'immutable', 'bool', 'pointer'),
    dict(2, 'data', 'string'),
    dict(3, 'binaryData', 'bytes'),
  ],
  'core.v1.Secret': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(5, 'immutable', 'bool', 'pointer'),
    dict(2, 'data', 'bytes'),
    dict(4, 'stringData', 'string'),
    one(3, 'type', 'string'),
  ],
  'core.v1.Namespace': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:core.v1.NamespaceSpec'),
    one(3, 'status', 'message:core.v1.NamespaceStatus'),
  ],
  'core.v1.NamespaceSpec': [
    list(1, 'finalizers', 'string'),
  ],
  'core.v1.NamespaceStatus': [
    one(1, 'phase', 'string'),
    list(2, 'conditions', 'message:core.v1.NamespaceCondition'),
  ],
  'core.v1.NamespaceCondition': [
    one(1, 'type', 'string', 'always'),
    one(2, 'status', 'string', 'always'),
    one(4, 'lastTransitionTime', 'time'),
    one(5, 'reason', 'string'),
    one(6, 'message', 'string'),
  ],
  'core.v1.ServiceAccount': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    list(2, 'secrets', 'message:core.v1.ObjectReference'),
    list(3, 'imagePullSecrets', 'message:core.v1.LocalObjectReference'),
    one(4, 'automountServiceAccountToken', 'bool', 'pointer'),
  ],
  'core.v1.ObjectReference': [
    one(1, 'kind', 'string'),
    one(2, 'namespace', 'string'),
    one(3, 'name', 'string'),
    one(4, 'uid', 'string'),
    one(5, 'apiVersion', 'string'),
    one(6, 'resourceVersion', 'string'),
    one(7, 'fieldPath', 'string'),
  ],
  'core.v1.LocalObjectReference': [
    one(1, 'name', 'string'),
  ],
  'core.v1.ResourceQuota': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:core.v1.ResourceQuotaSpec'),
    one(3, 'status', 'message:core.v1.ResourceQuotaStatus'),
  ],
  'core.v1.ResourceQuotaSpec': [
    dict(1, 'hard', 'quantity'),
    list(2, 'scopes', 'string'),
    one(3, 'scopeSelector', 'message:core.v1.ScopeSelector', 'pointer'),
  ],
  'core.v1.ScopeSelector': [
    list(1, 'matchExpressions', 'message:core.v1.ScopedResourceSelectorRequirement'),
  ],
  'core.v1.ScopedResourceSelectorRequirement': [
    one(1, 'scopeName', 'string', 'always'),
    one(2, 'operator', 'string', 'always'),
    list(3, 'values', 'string'),
  ],
  'core.v1.ResourceQuotaStatus': [
    dict(1, 'hard', 'quantity'),
    dict(2, 'used', 'quantity'),
  ],
  'core.v1.LimitRange': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:core.v1.LimitRangeSpec'),
  ],
  'core.v1.LimitRangeSpec': [
    list(1, 'limits', 'message:core.v1.LimitRangeItem', 'always'),
  ],
  'core.v1.LimitRangeItem': [
    one(1, 'type', 'string', 'always'),
    dict(2, 'max', 'quantity'),
    dict(3, 'min', 'quantity'),
    dict(4, 'default', 'quantity'),
    dict(5, 'defaultRequest', 'quantity'),
    dict(6, 'maxLimitRequestRatio', 'quantity'),
  ],
  'core.v1.Event': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta', 'always'),
    one(2, 'involvedObject', 'message:core.v1.ObjectReference', 'always'),
    one(3, 'reason', 'string'),
    one(4, 'message', 'string'),
    one(5, 'source', 'message:core.v1.EventSource'),
    one(6, 'firstTimestamp', 'time'),
    one(7, 'lastTimestamp', 'time'),
    one(8, 'count', 'int32'),
    one(9, 'type', 'string'),
    one(10, 'eventTime', 'microTime'),
    one(11, 'series', 'message:core.v1.EventSeries', 'pointer'),
    one(12, 'action', 'string'),
    one(13, 'related', 'message:core.v1.ObjectReference', 'pointer'),
    one(14, 'reportingComponent', 'string', 'always'),
    one(15, 'reportingInstance', 'string', 'always'),
  ],
  'core.v1.EventSource': [
    one(1, 'component', 'string'),
    one(2, 'host', 'string'),
  ],
  'core.v1.EventSeries': [
    one(1, 'count', 'int32'),
    one(2, 'lastObservedTime', 'microTime'),
  ],
  'coordination.v1.Lease': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:coordination.v1.LeaseSpec'),
  ],
  'coordination.v1.LeaseSpec': [
    one(1, 'holderIdentity', 'string', 'pointer'),
    one(2, 'leaseDurationSeconds', 'int32', 'pointer'),
    one(3, 'acquireTime', 'microTime', 'pointer'),
    one(4, 'renewTime', 'microTime', 'pointer'),
    one(5, 'leaseTransitions', 'int32', 'pointer'),
    one(6, 'strategy', 'string', 'pointer'),
    one(7, 'preferredHolder', 'string', 'pointer'),
  ],
  'events.v1.Event': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta', 'always'),
    one(2, 'eventTime', 'microTime', 'always'),
    one(3, 'series', 'message:events.v1.EventSeries', 'pointer'),
    one(4, 'reportingController', 'string'),
    one(5, 'reportingInstance', 'string'),
    one(6, 'action', 'string'),
    one(7, 'reason', 'string'),
    one(8, 'regarding', 'message:core.v1.ObjectReference'),
    one(9, 'related', 'message:core.v1.ObjectReference', 'pointer'),
    one(10, 'note', 'string'),
    one(11, 'type', 'string'),
    one(12, 'deprecatedSource', 'message:core.v1.EventSource'),
    one(13, 'deprecatedFirstTimestamp', 'time'),
    one(14, 'deprecatedLastTimestamp', 'time'),
    one(15, 'deprecatedCount', 'int32'),
  ],
  'events.v1.EventSeries': [
    one(1, 'count', 'int32', 'always'),
    one(2, 'lastObservedTime', 'microTime', 'always'),
  ],
  'rbac.v1.Role': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    list(2, 'rules', 'message:rbac.v1.PolicyRule', 'always'),
  ],
  'rbac.v1.PolicyRule': [
    list(1, 'verbs', 'string', 'always'),
    list(2, 'apiGroups', 'string'),
    list(3, 'resources', 'string'),
    list(4, 'resourceNames', 'string'),
    list(5, 'nonResourceURLs', 'string'),
  ],
  'rbac.v1.ClusterRole': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    list(2, 'rules', 'message:rbac.v1.PolicyRule', 'always'),
    one(3, 'aggregationRule', 'message:rbac.v1.AggregationRule', 'pointer'),
  ],
  'rbac.v1.AggregationRule': [
    list(1, 'clusterRoleSelectors', 'message:meta.v1.LabelSelector'),
  ],
  'rbac.v1.RoleBinding': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    list(2, 'subjects', 'message:rbac.v1.Subject'),
    one(3, 'roleRef', 'message:rbac.v1.RoleRef', 'always'),
  ],
  'rbac.v1.Subject': [
    one(1, 'kind', 'string', 'always'),
    one(2, 'apiGroup', 'string'),
    one(3, 'name', 'string', 'always'),
    one(4, 'namespace', 'string'),
  ],
  'rbac.v1.RoleRef': [
    one(1, 'apiGroup', 'string', 'always'),
    one(2, 'kind', 'string', 'always'),
    one(3, 'name', 'string', 'always'),
  ],
  'rbac.v1.ClusterRoleBinding': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    list(2, 'subjects', 'message:rbac.v1.Subject'),
    one(3, 'roleRef', 'message:rbac.v1.RoleRef', 'always'),
  ],
  'authorization.v1.SelfSubjectAccessReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authorization.v1.SelfSubjectAccessReviewSpec', 'always'),
    one(3, 'status', 'message:authorization.v1.SubjectAccessReviewStatus'),
  ],
  'authorization.v1.SelfSubjectAccessReviewSpec': [
    one(1, 'resourceAttributes', 'message:authorization.v1.ResourceAttributes', 'pointer'),
    one(2, 'nonResourceAttributes', 'message:authorization.v1.NonResourceAttributes', 'pointer'),
  ],
  'authorization.v1.ResourceAttributes': [
    one(1, 'namespace', 'string'),
    one(2, 'verb', 'string'),
    one(3, 'group', 'string'),
    one(4, 'version', 'string'),
    one(5, 'resource', 'string'),
    one(6, 'subresource', 'string'),
    one(7, 'name', 'string'),
    one(8, 'fieldSelector', 'message:authorization.v1.FieldSelectorAttributes', 'pointer'),
    one(9, 'labelSelector', 'message:authorization.v1.LabelSelectorAttributes', 'pointer'),
  ],
  'authorization.v1.FieldSelectorAttributes': [
    one(1, 'rawSelector', 'string'),
    list(2, 'requirements', 'message:meta.v1.FieldSelectorRequirement'),
  ],
  'meta.v1.FieldSelectorRequirement': [
    one(1, 'key', 'string', 'always'),
    one(2, 'operator', 'string', 'always'),
    list(3, 'values', 'string'),
  ],
  'authorization.v1.LabelSelectorAttributes': [
    one(1, 'rawSelector', 'string'),
    list(2, 'requirements', 'message:meta.v1.LabelSelectorRequirement'),
  ],
  'authorization.v1.NonResourceAttributes': [
    one(1, 'path', 'string'),
    one(2, 'verb', 'string'),
  ],
  'authorization.v1.SubjectAccessReviewStatus': [
    one(1, 'allowed', 'bool', 'always'),
    one(4, 'denied', 'bool'),
    one(2, 'reason', 'string'),
    one(3, 'evaluationError', 'string'),
  ],
  'authorization.v1.SubjectAccessReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authorization.v1.SubjectAccessReviewSpec', 'always'),
    one(3, 'status', 'message:authorization.v1.SubjectAccessReviewStatus'),
  ],
  'authorization.v1.SubjectAccessReviewSpec': [
    one(1, 'resourceAttributes', 'message:authorization.v1.ResourceAttributes', 'pointer'),
    one(2, 'nonResourceAttributes', 'message:authorization.v1.NonResourceAttributes', 'pointer'),
    one(3, 'user', 'string'),
    list(4, 'groups', 'string'),
    dict(5, 'extra', 'extraValue'),
    one(6, 'uid', 'string'),
  ],
  'authorization.v1.LocalSubjectAccessReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authorization.v1.SubjectAccessReviewSpec', 'always'),
    one(3, 'status', 'message:authorization.v1.SubjectAccessReviewStatus'),
  ],
  'authorization.v1.SelfSubjectRulesReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authorization.v1.SelfSubjectRulesReviewSpec', 'always'),
    one(3, 'status', 'message:authorization.v1.SubjectRulesReviewStatus'),
  ],
  'authorization.v1.SelfSubjectRulesReviewSpec': [
    one(1, 'namespace', 'string'),
  ],
  'authorization.v1.SubjectRulesReviewStatus': [
    list(1, 'resourceRules', 'message:authorization.v1.ResourceRule', 'always'),
    list(2, 'nonResourceRules', 'message:authorization.v1.NonResourceRule', 'always'),
    one(3, 'incomplete', 'bool', 'always'),
    one(4, 'evaluationError', 'string'),
  ],
  'authorization.v1.ResourceRule': [
    list(1, 'verbs', 'string', 'always'),
    list(2, 'apiGroups', 'string'),
    list(3, 'resources', 'string'),
    list(4, 'resourceNames', 'string'),
  ],
  'authorization.v1.NonResourceRule': [
    list(1, 'verbs', 'string', 'always'),
    list(2, 'nonResourceURLs', 'string'),
  ],
  // k8s.io/api authentication/v1: SelfSubjectReview (`kubectl auth whoami`).
  'authentication.v1.SelfSubjectReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'status', 'message:authentication.v1.SelfSubjectReviewStatus'),
  ],
  'authentication.v1.SelfSubjectReviewStatus': [
    one(1, 'userInfo', 'message:authentication.v1.UserInfo'),
  ],
  'authentication.v1.UserInfo': [
    one(1, 'username', 'string'),
    one(2, 'uid', 'string'),
    list(3, 'groups', 'string'),
    dict(4, 'extra', 'extraValue'),
  ],
  // k8s.io/api authentication/v1: TokenReview (webhook token authenticators, kube-rbac-proxy).
  'authentication.v1.TokenReview': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authentication.v1.TokenReviewSpec', 'always'),
    one(3, 'status', 'message:authentication.v1.TokenReviewStatus'),
  ],
  'authentication.v1.TokenReviewSpec': [
    one(1, 'token', 'string'),
    list(2, 'audiences', 'string'),
  ],
  'authentication.v1.TokenReviewStatus': [
    one(1, 'authenticated', 'bool'),
    one(2, 'user', 'message:authentication.v1.UserInfo'),
    list(4, 'audiences', 'string'),
    one(3, 'error', 'string'),
  ],
  // k8s.io/api certificates/v1: CertificateSigningRequest (`kubectl certificate approve|deny`).
  'certificates.v1.CertificateSigningRequest': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:certificates.v1.CertificateSigningRequestSpec', 'always'),
    one(3, 'status', 'message:certificates.v1.CertificateSigningRequestStatus'),
  ],
  'certificates.v1.CertificateSigningRequestSpec': [
    one(1, 'request', 'bytes', 'always'),
    one(7, 'signerName', 'string', 'always'),
    one(8, 'expirationSeconds', 'int32', 'pointer'),
    list(5, 'usages', 'string'),
    one(2, 'username', 'string'),
    one(3, 'uid', 'string'),
    list(4, 'groups', 'string'),
    dict(6, 'extra', 'extraValue'),
  ],
  'certificates.v1.CertificateSigningRequestStatus': [
    list(1, 'conditions', 'message:certificates.v1.CertificateSigningRequestCondition'),
    one(2, 'certificate', 'bytes'),
  ],
  'certificates.v1.CertificateSigningRequestCondition': [
    one(1, 'type', 'string', 'always'),
    one(6, 'status', 'string', 'always'),
    one(2, 'reason', 'string'),
    one(3, 'message', 'string'),
    one(4, 'lastUpdateTime', 'time'),
    one(5, 'lastTransitionTime', 'time'),
  ],
  // k8s.io/api authentication/v1: TokenRequest (`kubectl create token`).
  'authentication.v1.TokenRequest': [
    one(1, 'metadata', 'message:meta.v1.ObjectMeta'),
    one(2, 'spec', 'message:authentication.v1.TokenRequestSpec', 'always'),
    one(3, 'status', 'message:authentication.v1.TokenRequestStatus'),
  ],
  'authentication.v1.TokenRequestSpec': [
    list(1, 'audiences', 'string', 'always'),
    one(4, 'expirationSeconds', 'int64', 'pointer'),
    one(3, 'boundObjectRef', 'message:authentication.v1.BoundObjectReference', 'pointer'),
  ],
  'authentication.v1.BoundObjectReference': [
    one(1, 'kind', 'string'),
    one(2, 'apiVersion', 'string'),
    one(3, 'name', 'string'),
    one(4, 'uid', 'string'),
  ],
  'authentication.v1.TokenRequestStatus': [
    one(1, 'token', 'string', 'always'),
    one(2, 'expirationTimestamp', 'time', 'always'),
  ],
  // k8s.io/apimachinery/pkg/runtime/generated.proto: the envelope.
  'runtime.TypeMeta': [
    one(1, 'apiVersion', 'string'),
    one(2, 'kind', 'string'),
  ],
  'runtime.Unknown': [
    one(1, 'typeMeta', 'message:runtime.TypeMeta'),
    one(2, 'raw', 'bytes'),
    one(3, 'contentEncoding', 'string', 'always'),
    one(4, 'contentType', 'string', 'always'),
  ],
};

/**
 * The top-level kinds accepted as protobuf, `<apiVersion>/<kind>` → message of {@link PROTOBUF_SCHEMA}
 * (the types registered by the k8s.io/api install packages for these group versions). `DeleteOptions`
 * is accepted under every apiVersion, as apimachinery registers it in every group version.
 */
export const PROTOBUF_KINDS: Readonly<Record<string, string>> = {
  'v1/ConfigMap': 'core.v1.ConfigMap',
  'v1/Secret': 'core.v1.Secret',
  'v1/Namespace': 'core.v1.Namespace',
  'v1/ServiceAccount': 'core.v1.ServiceAccount',
  'v1/ResourceQuota': 'core.v1.ResourceQuota',
  'v1/LimitRange': 'core.v1.LimitRange',
  'v1/Event': 'core.v1.Event',
  'coordination.k8s.io/v1/Lease': 'coordination.v1.Lease',
  'events.k8s.io/v1/Event': 'events.v1.Event',
  'rbac.authorization.k8s.io/v1/Role': 'rbac.v1.Role',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'rbac.v1.ClusterRole',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'rbac.v1.RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'rbac.v1.ClusterRoleBinding',
  'authorization.k8s.io/v1/SelfSubjectAccessReview': 'authorization.v1.SelfSubjectAccessReview',
  'authorization.k8s.io/v1/SubjectAccessReview': 'authorization.v1.SubjectAccessReview',
  'authorization.k8s.io/v1/LocalSubjectAccessReview': 'authorization.v1.LocalSubjectAccessReview',
  'authorization.k8s.io/v1/SelfSubjectRulesReview': 'authorization.v1.SelfSubjectRulesReview',
  'authentication.k8s.io/v1/TokenRequest': 'authentication.v1.TokenRequest',
  'authentication.k8s.io/v1/SelfSubjectReview': 'authentication.v1.SelfSubjectReview',
  'authentication.k8s.io/v1/TokenReview': 'authentication.v1.TokenReview',
  'certificates.k8s.io/v1/CertificateSigningRequest': 'certificates.v1.CertificateSigningRequest',
};

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/** A decoded field value before JSON rendering: bytes stay a Buffer, everything else is already JSON. */
type Decoded = unknown;

const fieldIndex = new Map<string, ReadonlyMap<number, ProtobufField>>();

function indexOf(name: string): ReadonlyMap<number, ProtobufField> {
  let idx = fieldIndex.get(name);
  if (!idx) {
    const msg = PROTOBUF_SCHEMA[name];
    if (!msg) throw new Error(`protobuf schema: no message ${name}`);
    idx = new Map(msg.map((f) => [f.no, f]));
    fieldIndex.set(name, idx);
  }
  return idx;
}

/** The wire type a value of `kind` is encoded with. */
function wireTypeOf(kind: ProtobufValueKind): WireType {
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

/** Decodes one value of `kind` at the reader's position (the field key already consumed). */
function decodeValue(r: WireReader, kind: ProtobufValueKind, buf: Buffer): Decoded {
  switch (kind) {
    case 'bool': { const v = r.varint(); return v.lo !== 0 || v.hi !== 0; }
    case 'int32': return toInt32(r.varint());
    case 'int64': return toInt64(r.varint());
    default: break;
  }
  const { start, end } = r.lengthDelimited();
  switch (kind) {
    case 'string': return buf.toString('utf8', start, end);
    case 'bytes': return buf.subarray(start, end);
    case 'time': return decodeTimestamp(new WireReader(buf, start, end), false);
    case 'microTime': return decodeTimestamp(new WireReader(buf, start, end), true);
    case 'quantity': {
      // resource.Quantity: `optional string string = 1`; the Go marshaller writes the canonical form.
      const s = wrapperField1(new WireReader(buf, start, end), 'Quantity');
      return s.length ? s[s.length - 1]!.toString('utf8') : '0';
    }
    case 'fieldsV1': {
      // FieldsV1.MarshalJSON writes Raw verbatim: it must be a JSON document.
      const raw = wrapperField1(new WireReader(buf, start, end), 'FieldsV1');
      const text = raw.length ? raw[raw.length - 1]!.toString('utf8') : '';
      if (text === '') return null;
      try { return JSON.parse(text) as unknown; } catch { throw malformed('FieldsV1 raw is not valid JSON'); }
    }
    case 'extraValue':
      return wrapperField1(new WireReader(buf, start, end), 'ExtraValue').map((b) => b.toString('utf8'));
    default:
      return decodeMessage(kind.slice('message:'.length), buf, start, end);
  }
}

/** The Go zero value of `kind`, rendered (what a map entry without a value, or an absent struct field, holds). */
function zeroValue(kind: ProtobufValueKind): Decoded {
  switch (kind) {
    case 'string': return '';
    case 'bytes': return Buffer.alloc(0);
    case 'bool': return false;
    case 'int32': case 'int64': return 0;
    case 'time': case 'microTime': case 'fieldsV1': return null;
    case 'quantity': return '0';
    case 'extraValue': return [];
    default: return decodeMessage(kind.slice('message:'.length), Buffer.alloc(0), 0, 0);
  }
}

/** A `map<string, kind>` entry: `key = 1`, `value = 2`. */
function decodeMapEntry(r: WireReader, kind: ProtobufValueKind, buf: Buffer): [string, Decoded] {
  const { start, end } = r.lengthDelimited();
  const er = new WireReader(buf, start, end);
  let key = '';
  let value: Decoded;
  while (!er.done) {
    const { no, wt } = er.tag();
    if (no === 1) {
      if (wt !== WireType.Bytes) throw malformed(`wrong wire type ${wt} for map key`);
      key = decodeValue(er, 'string', buf) as string;
    } else if (no === 2) {
      if (wt !== wireTypeOf(kind)) throw malformed(`wrong wire type ${wt} for map value`);
      value = decodeValue(er, kind, buf);
    } else er.skip(no, wt);
  }
  return [key, value === undefined ? zeroValue(kind) : value];
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
 * (see the module comment for the emission rules).
 */
function decodeMessage(name: string, buf: Buffer, start: number, end: number): Record<string, unknown> {
  const fields = decodeFields(name, buf, start, end);
  const out: Record<string, unknown> = {};
  for (const f of PROTOBUF_SCHEMA[name]!) {
    const v = fields.get(f.no);
    if (f.card !== 'one') {
      // Go slice / map: nil when absent on the wire.
      if (v === undefined) { if (f.emit === 'always') out[f.json] = null; continue; }
      out[f.json] = f.card === 'list'
        ? (v as Decoded[]).map(toJson)
        : Object.fromEntries([...(v as Map<string, Decoded>)].map(([k, x]) => [k, toJson(x)]));
      continue;
    }
    if (f.emit === 'pointer') {
      if (v !== undefined) out[f.json] = toJson(v);
      continue;
    }
    const value = v === undefined ? zeroValue(f.kind) : v;
    if (f.emit === 'omitzero' && value === null) continue;
    if (f.emit === 'omitempty' && isEmptyScalar(value)) continue;
    // A nil []byte without omitempty is `null`; an absent struct is its zero value.
    out[f.json] = f.kind === 'bytes' && v === undefined ? null : toJson(value);
  }
  return out;
}

/** Reads the fields of message `name`: field number → value (lists as arrays, maps as Map, last singular value wins). */
function decodeFields(name: string, buf: Buffer, start: number, end: number): Map<number, Decoded> {
  const idx = indexOf(name);
  const r = new WireReader(buf, start, end);
  const values = new Map<number, Decoded>();
  while (!r.done) {
    const { no, wt } = r.tag();
    const f = idx.get(no);
    if (!f) { r.skip(no, wt); continue; }
    const want = f.card === 'dict' ? WireType.Bytes : wireTypeOf(f.kind);
    if (wt !== want) throw malformed(`wrong wire type ${wt} for field ${name}.${f.json}`);
    if (f.card === 'list') {
      const arr = (values.get(no) as Decoded[] | undefined) ?? [];
      arr.push(decodeValue(r, f.kind, buf));
      values.set(no, arr);
    } else if (f.card === 'dict') {
      const map = (values.get(no) as Map<string, Decoded> | undefined) ?? new Map<string, Decoded>();
      const [k, v] = decodeMapEntry(r, f.kind, buf);
      map.set(k, v);
      values.set(no, map);
    } else {
      values.set(no, decodeValue(r, f.kind, buf));
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
 * Decodes a Kubernetes protobuf body (k8s.io/apimachinery/pkg/runtime/serializer/protobuf: magic
 * `k8s\x00` + `runtime.Unknown`) into the object its JSON encoding would be, `{apiVersion, kind, …}`.
 *
 * Throws a 400 BadRequest StatusError for malformed data (wrong prefix, truncated or invalid wire data,
 * missing kind or apiVersion) and a 415 UnsupportedMediaType StatusError for kinds outside
 * {@link PROTOBUF_KINDS} (those must be sent as JSON).
 */
export function decodeKubernetesProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw malformed('empty body');
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest('provided data does not appear to be a protobuf message, expected prefix "k8s\\x00"');
  }
  const env = decodeFields('runtime.Unknown', body, MAGIC.length, body.length);
  const typeMeta = (env.get(1) ?? {}) as { apiVersion?: string; kind?: string };
  const raw = (env.get(2) as Buffer | undefined) ?? Buffer.alloc(0);
  const apiVersion = typeMeta.apiVersion ?? '';
  const kind = typeMeta.kind ?? '';
  if (!kind) throw badRequest("Object 'Kind' is missing in protobuf body");
  if (!apiVersion) throw badRequest("Object 'apiVersion' is missing in protobuf body");
  const message = kind === 'DeleteOptions' ? 'meta.v1.DeleteOptions' : PROTOBUF_KINDS[`${apiVersion}/${kind}`];
  if (!message) {
    throw new StatusError(415, 'UnsupportedMediaType',
      `${kind} in ${apiVersion}: protobuf is supported only for built-in kinds; send application/json`);
  }
  const obj = decodeMessage(message, raw, 0, raw.length);
  return { apiVersion, kind, ...obj };
}
