/**
 * Regenerates src/apimachinery/protobuf/schema.generated.ts — the Kubernetes protobuf schema of every
 * built-in kind this server serves — from the Go types of k8s.io/api, k8s.io/apimachinery (meta/v1) and
 * k8s.io/apiextensions-apiserver (apiextensions/v1) in the Go module cache.
 *
 * Usage: `node --import tsx scripts/generate-protobuf-schema.ts [<GOMODCACHE>]`
 * (default `$GOMODCACHE`, else `$(go env GOMODCACHE)`, else `~/go/pkg/mod`; the modules must be there at
 * {@link KUBE_VERSION}: `go mod download k8s.io/api@v0.34.4 k8s.io/apimachinery@v0.34.4
 * k8s.io/apiextensions-apiserver@v0.34.4`). Bump KUBE_VERSION and re-run to follow a newer release.
 *
 * Every struct's fields come from its Go declaration (types.go and friends): the field number and wire
 * type from the `protobuf:"<wire>,<no>,<opt|rep>,name=…"` tag, the JSON name and `omitempty`/`omitzero`
 * from the `json` tag, and the value kind and emission rule from the Go type (pointer, slice, map,
 * struct, named type). Types whose JSON or protobuf form is custom (metav1 Time, MicroTime, Duration,
 * FieldsV1; resource.Quantity; intstr.IntOrString; runtime.RawExtension; apiextensions JSON and the
 * JSONSchemaPropsOr* wrappers) map to the hand-written value kinds of src/apimachinery/protobuf/schema.ts.
 * Only the messages reachable from the {@link ROOT_KINDS} (and their lists) are emitted. The script
 * fails on any Go type it cannot map, so a new field shape is noticed rather than mis-encoded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const KUBE_VERSION = 'v0.34.4';
const OUT = join(import.meta.dirname, '..', 'src', 'apimachinery', 'protobuf', 'schema.generated.ts');

/** Go packages read: import path → message name prefix. */
const PACKAGES: Readonly<Record<string, string>> = {
  'k8s.io/apimachinery/pkg/apis/meta/v1': 'meta.v1',
  'k8s.io/apimachinery/pkg/apis/meta/v1beta1': 'meta.v1beta1',
  'k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1': 'apiextensions.v1',
  ...Object.fromEntries(['core/v1', 'coordination/v1', 'events/v1', 'rbac/v1', 'authorization/v1', 'authentication/v1',
    'certificates/v1', 'admissionregistration/v1', 'admissionregistration/v1beta1', 'flowcontrol/v1',
    'apidiscovery/v2', 'apidiscovery/v2beta1', 'apps/v1', 'batch/v1', 'networking/v1']
    .map((gv) => [`k8s.io/api/${gv}`, gv.replace('/', '.')])),
};

/** The served kinds, `<apiVersion>/<Kind>` → message; each one's `<Kind>List` is added when Go declares it. */
const ROOT_KINDS: Readonly<Record<string, string>> = {
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
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': 'admissionregistration.v1.ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration': 'admissionregistration.v1.MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': 'admissionregistration.v1.ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': 'admissionregistration.v1.ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy': 'admissionregistration.v1beta1.MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicyBinding': 'admissionregistration.v1beta1.MutatingAdmissionPolicyBinding',
  'apiextensions.k8s.io/v1/CustomResourceDefinition': 'apiextensions.v1.CustomResourceDefinition',
  'flowcontrol.apiserver.k8s.io/v1/FlowSchema': 'flowcontrol.v1.FlowSchema',
  'flowcontrol.apiserver.k8s.io/v1/PriorityLevelConfiguration': 'flowcontrol.v1.PriorityLevelConfiguration',
  // Not served as built-ins here, but as kcp serves them: CRDs (a workspace's `kubernetes` APIExport
  // from API negotiation, or any CRD of these kinds), whose protobuf bodies kubectl and client-go's
  // typed clients send; they are decoded to JSON (src/endpoints/protobufwire.ts).
  'v1/Pod': 'core.v1.Pod',
  'v1/Service': 'core.v1.Service',
  'apps/v1/Deployment': 'apps.v1.Deployment',
  'apps/v1/ReplicaSet': 'apps.v1.ReplicaSet',
  'apps/v1/StatefulSet': 'apps.v1.StatefulSet',
  'apps/v1/DaemonSet': 'apps.v1.DaemonSet',
  'batch/v1/Job': 'batch.v1.Job',
  'batch/v1/CronJob': 'batch.v1.CronJob',
  'networking.k8s.io/v1/Ingress': 'networking.v1.Ingress',
  'networking.k8s.io/v1/NetworkPolicy': 'networking.v1.NetworkPolicy',
};

/**
 * Messages served besides the kinds: meta/v1 Status, DeleteOptions, WatchEvent, PartialObjectMetadata(List);
 * meta/v1beta1's own PartialObjectMetadataList (items = 1, metadata = 2: not v1's layout); the discovery
 * documents (meta/v1 APIVersions, APIGroupList, APIGroup, APIResourceList) and aggregated discovery
 * (apidiscovery.k8s.io v2 and v2beta1 APIGroupDiscoveryList).
 */
const META_ROOTS = ['meta.v1.Status', 'meta.v1.DeleteOptions', 'meta.v1.WatchEvent', 'meta.v1.PartialObjectMetadata', 'meta.v1.PartialObjectMetadataList',
  'meta.v1beta1.PartialObjectMetadataList',
  'meta.v1.APIVersions', 'meta.v1.APIGroupList', 'meta.v1.APIGroup', 'meta.v1.APIResourceList',
  'apidiscovery.v2.APIGroupDiscoveryList', 'apidiscovery.v2beta1.APIGroupDiscoveryList'];

/** Go types with a custom JSON or protobuf form: qualified name → hand-written value kind. */
const SPECIAL_TYPES: Readonly<Record<string, string>> = {
  'meta.v1.Time': 'time',
  'meta.v1.MicroTime': 'microTime',
  'meta.v1.Duration': 'duration',
  'meta.v1.FieldsV1': 'fieldsV1',
  'k8s.io/apimachinery/pkg/api/resource.Quantity': 'quantity',
  'k8s.io/apimachinery/pkg/util/intstr.IntOrString': 'intOrString',
  'k8s.io/apimachinery/pkg/runtime.RawExtension': 'rawExtension',
  'apiextensions.v1.JSON': 'rawExtension',
  'apiextensions.v1.JSONSchemaPropsOrArray': 'schemaOrArray',
  'apiextensions.v1.JSONSchemaPropsOrBool': 'schemaOrBool',
  'apiextensions.v1.JSONSchemaPropsOrStringArray': 'schemaOrStringArray',
  'k8s.io/apimachinery/pkg/types.UID': 'string',
};

/** runtime.TypeMeta and runtime.Unknown (k8s.io/apimachinery/pkg/runtime/generated.proto): the envelope, hand-kept. */
const ENVELOPE = `  // k8s.io/apimachinery/pkg/runtime/generated.proto: the envelope.
  'runtime.TypeMeta': [
    one(1, 'apiVersion', 'string'),
    one(2, 'kind', 'string'),
  ],
  'runtime.Unknown': [
    one(1, 'typeMeta', 'message:runtime.TypeMeta', 'always'),
    one(2, 'raw', 'bytes', 'always'),
    one(3, 'contentEncoding', 'string', 'always'),
    one(4, 'contentType', 'string', 'always'),
  ],
`;

// ---------------------------------------------------------------------------------------------
// Go source reading
// ---------------------------------------------------------------------------------------------

interface GoField { name: string; type: string; tag: string }
interface GoPackage {
  prefix: string;
  dir: string;
  structs: Map<string, GoField[]>;
  /** Named non-struct types: name → underlying type expression. */
  named: Map<string, string>;
  /** Per file's imports merged: alias → import path (API packages use consistent aliases). */
  imports: Map<string, string>;
}

function modCache(): string {
  if (process.argv[2]) return process.argv[2];
  if (process.env.GOMODCACHE) return process.env.GOMODCACHE;
  try { return execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim(); } catch { return join(homedir(), 'go', 'pkg', 'mod'); }
}

function packageDir(cache: string, importPath: string): string {
  const [module, sub] = importPath.startsWith('k8s.io/api/') ? ['k8s.io/api', importPath.slice('k8s.io/api/'.length)]
    : importPath.startsWith('k8s.io/apimachinery/') ? ['k8s.io/apimachinery', importPath.slice('k8s.io/apimachinery/'.length)]
      : ['k8s.io/apiextensions-apiserver', importPath.slice('k8s.io/apiextensions-apiserver/'.length)];
  const dir = join(cache, `${module}@${KUBE_VERSION}`, sub);
  if (!existsSync(dir)) throw new Error(`${dir} missing: go mod download ${module}@${KUBE_VERSION}`);
  return dir;
}

/** Removes comments outside of string and backtick literals. */
function stripComments(src: string): string {
  let out = '';
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '`' || c === '"') {
      // A raw or interpreted string literal: copied as is (a `//` inside is no comment).
      let j = i + 1;
      while (j < src.length && src[j] !== c) { if (c === '"' && src[j] === '\\') j++; j++; }
      out += src.slice(i, j + 1);
      i = j;
      continue;
    }
    if (c === '/' && src[i + 1] === '/') { while (i < src.length && src[i] !== '\n') i++; out += '\n'; continue; }
    if (c === '/' && src[i + 1] === '*') { const e = src.indexOf('*/', i + 2); i = e < 0 ? src.length : e + 1; continue; }
    out += c;
  }
  return out;
}

function readPackage(cache: string, importPath: string, prefix: string): GoPackage {
  const dir = packageDir(cache, importPath);
  const pkg: GoPackage = { prefix, dir, structs: new Map(), named: new Map(), imports: new Map() };
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.go') || file.endsWith('_test.go') || file.startsWith('zz_generated') || file === 'generated.pb.go') continue;
    const src = stripComments(readFileSync(join(dir, file), 'utf8'));
    for (const m of src.matchAll(/^import\s*\(([\s\S]*?)^\)/gm)) {
      for (const line of m[1]!.split('\n')) {
        const im = /^\s*(\w+)?\s*"([^"]+)"/.exec(line);
        if (!im) continue;
        const path = im[2]!;
        pkg.imports.set(im[1] ?? path.slice(path.lastIndexOf('/') + 1), path);
      }
    }
    for (const m of src.matchAll(/^import\s+(\w+)?\s*"([^"]+)"/gm)) pkg.imports.set(m[1] ?? m[2]!.slice(m[2]!.lastIndexOf('/') + 1), m[2]!);
    const lines = src.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const st = /^type\s+(\w+)\s+struct\s*\{\s*$/.exec(line);
      if (st) {
        const fields: GoField[] = [];
        for (i++; i < lines.length && !/^\}/.test(lines[i]!); i++) {
          const fl = lines[i]!.trim();
          if (!fl) continue;
          const tagAt = fl.indexOf('`');
          const head = (tagAt < 0 ? fl : fl.slice(0, tagAt)).trim().split(/\s+/);
          const tag = tagAt < 0 ? '' : fl.slice(tagAt + 1, fl.lastIndexOf('`'));
          if (head.length === 1) fields.push({ name: head[0]!.replace(/^\*/, '').replace(/^.*\./, ''), type: head[0]!, tag });
          else if (head.length === 2) fields.push({ name: head[0]!, type: head[1]!, tag });
          else throw new Error(`${importPath} ${st[1]}: cannot parse field line ${JSON.stringify(fl)}`);
        }
        pkg.structs.set(st[1]!, fields);
        continue;
      }
      const empty = /^type\s+(\w+)\s+struct\s*\{\s*\}\s*$/.exec(line);
      if (empty) { pkg.structs.set(empty[1]!, []); continue; }
      const nt = /^type\s+(\w+)\s+=?\s*([\w.*[\]]+)\s*$/.exec(line);
      if (nt) pkg.named.set(nt[1]!, nt[2]!);
    }
  }
  return pkg;
}

// ---------------------------------------------------------------------------------------------
// Mapping Go types to schema fields
// ---------------------------------------------------------------------------------------------

const packages = new Map<string, GoPackage>(); // by prefix
const prefixOfImport = new Map<string, string>(Object.entries(PACKAGES));

interface Resolved { kind: string; card: 'one' | 'list' | 'dict'; pointer: boolean }

/** Qualified name (`<prefix>.<Name>` for read packages, `<import path>.<Name>` otherwise) of a type name used in `pkg`. */
function qualify(pkg: GoPackage, name: string): { qualified: string; local?: { pkg: GoPackage; name: string } } {
  const dot = name.indexOf('.');
  if (dot < 0) return { qualified: `${pkg.prefix}.${name}`, local: { pkg, name } };
  const alias = name.slice(0, dot);
  const path = pkg.imports.get(alias);
  if (!path) throw new Error(`${pkg.prefix}: unknown import alias in ${name}`);
  const prefix = prefixOfImport.get(path);
  const bare = name.slice(dot + 1);
  if (!prefix) return { qualified: `${path}.${bare}` };
  return { qualified: `${prefix}.${bare}`, local: { pkg: packages.get(prefix)!, name: bare } };
}

const GO_SCALARS: Readonly<Record<string, string>> = {
  string: 'string', bool: 'bool', int32: 'int32', int64: 'int64', int: 'int64', uint32: 'int64', uint64: 'int64', float64: 'double',
};

/** The schema kind of a Go value type (no pointer, slice or map at the top; those are the caller's). */
function valueKind(pkg: GoPackage, type: string, where: string, asMapValue: boolean): string {
  if (GO_SCALARS[type]) return GO_SCALARS[type]!;
  const { qualified, local } = qualify(pkg, type);
  if (SPECIAL_TYPES[qualified]) return SPECIAL_TYPES[qualified]!;
  if (!local) throw new Error(`${where}: no mapping for Go type ${qualified}`);
  if (local.pkg.structs.has(local.name)) return `message:${qualified}`;
  const underlying = local.pkg.named.get(local.name);
  if (underlying === undefined) throw new Error(`${where}: Go type ${qualified} not found`);
  if (GO_SCALARS[underlying]) return GO_SCALARS[underlying]!;
  if (asMapValue && underlying === '[]string') return 'extraValue'; // go-to-protobuf's `repeated string items` wrapper
  if (underlying.startsWith('[]') || underlying.startsWith('map[') || underlying.startsWith('*')) {
    throw new Error(`${where}: named composite ${qualified} = ${underlying} in a nested position`);
  }
  return valueKind(local.pkg, underlying, where, asMapValue);
}

/** Field type expression → value kind, cardinality and pointer-ness (named slices and maps unwrapped). */
function resolve(pkg: GoPackage, type: string, where: string): Resolved {
  if (type.startsWith('*')) return { ...resolve(pkg, type.slice(1), where), pointer: true };
  if (type === '[]byte') return { kind: 'bytes', card: 'one', pointer: false };
  if (type.startsWith('[]')) {
    const elem = type.slice(2).replace(/^\*/, '');
    return { kind: elem === 'byte' ? 'bytes' : valueKind(pkg, elem, where, false), card: 'list', pointer: false };
  }
  const map = /^map\[([\w.]+)\](.+)$/.exec(type);
  if (map) {
    const value = map[2]!;
    return { kind: value === '[]byte' ? 'bytes' : valueKind(pkg, value, where, true), card: 'dict', pointer: false };
  }
  if (!GO_SCALARS[type]) {
    const { qualified, local } = qualify(pkg, type);
    const underlying = local?.pkg.named.get(local.name);
    if (!SPECIAL_TYPES[qualified] && underlying && (underlying.startsWith('[]') || underlying.startsWith('map['))) {
      return resolve(local!.pkg, underlying, where);
    }
  }
  return { kind: valueKind(pkg, type, where, false), card: 'one', pointer: false };
}

function tagValue(tag: string, key: string): string | undefined {
  return new RegExp(`(?:^|\\s)${key}:"([^"]*)"`).exec(tag)?.[1];
}

/** A field of generated.proto: its label (`optional`, `repeated`, `map`) and type (the map's value type for maps). */
interface ProtoField { label: string; type: string }

const protoCache = new Map<string, Map<string, Map<number, ProtoField>>>();

/** The fields of `message` in the generated.proto beside the Go package `pkg`. */
function protoField(pkg: GoPackage, message: string, no: number, where: string): ProtoField {
  let messages = protoCache.get(pkg.prefix);
  if (!messages) {
    messages = new Map();
    const text = stripComments(readFileSync(join(pkg.dir, 'generated.proto'), 'utf8'));
    for (const m of text.matchAll(/^message\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
      const fields = new Map<number, ProtoField>();
      for (const fm of m[2]!.matchAll(/^\s*(?:(optional|repeated)\s+([\w.]+)|map<\s*string\s*,\s*([\w.]+)\s*>)\s+\w+\s*=\s*(\d+)/gm)) {
        fields.set(Number(fm[4]), fm[3] ? { label: 'map', type: fm[3] } : { label: fm[1]!, type: fm[2]! });
      }
      messages.set(m[1]!, fields);
    }
    protoCache.set(pkg.prefix, messages);
  }
  const f = messages.get(message)?.get(no);
  if (!f) throw new Error(`${where}: field ${no} not in generated.proto`);
  return f;
}

/** The proto type name a value kind is declared with (last segment for messages). */
const PROTO_TYPE_OF_KIND: Readonly<Record<string, readonly string[]>> = {
  string: ['string'], bytes: ['bytes'], bool: ['bool'], int32: ['int32'], int64: ['int64', 'uint64', 'uint32'], double: ['double'],
  time: ['Time'], microTime: ['MicroTime'], duration: ['Duration'], fieldsV1: ['FieldsV1'], quantity: ['Quantity'],
  intOrString: ['IntOrString'], rawExtension: ['RawExtension', 'JSON'], extraValue: ['ExtraValue', 'Verbs'],
  schemaOrArray: ['JSONSchemaPropsOrArray'], schemaOrBool: ['JSONSchemaPropsOrBool'], schemaOrStringArray: ['JSONSchemaPropsOrStringArray'],
};

function checkAgainstProto(r: Resolved, proto: ProtoField, where: string): void {
  if ((proto.label === 'map') !== (r.card === 'dict') || (proto.label === 'repeated') !== (r.card === 'list')) {
    throw new Error(`${where}: generated.proto says ${proto.label} ${proto.type}, Go type maps to ${r.card}`);
  }
  const last = proto.type.slice(proto.type.lastIndexOf('.') + 1);
  const ok = r.kind.startsWith('message:') ? r.kind.endsWith(`.${last}`) : (PROTO_TYPE_OF_KIND[r.kind] ?? []).includes(last);
  if (!ok) throw new Error(`${where}: generated.proto type ${proto.type}, Go type maps to ${r.kind}`);
}

interface SchemaField { no: number; json: string; kind: string; card: 'one' | 'list' | 'dict'; emit: string }

function messageFields(qualifiedName: string): SchemaField[] {
  const dot = qualifiedName.lastIndexOf('.');
  const pkg = packages.get(qualifiedName.slice(0, dot));
  const name = qualifiedName.slice(dot + 1);
  const goFields = pkg?.structs.get(name);
  if (!pkg || !goFields) throw new Error(`no Go struct ${qualifiedName}`);
  const out: SchemaField[] = [];
  for (const f of goFields) {
    const pb = tagValue(f.tag, 'protobuf');
    if (!pb) continue; // TypeMeta (inline, no protobuf tag) and Go-only fields
    const where = `${qualifiedName}.${f.name}`;
    const [wire, noText, rep] = pb.split(',');
    const jsonTag = tagValue(f.tag, 'json') ?? '';
    const [jsonName, ...opts] = jsonTag.split(',');
    if (jsonName === '-') throw new Error(`${where}: json:"-" field with a protobuf tag is not supported`);
    let r = resolve(pkg, f.type, where);
    const proto = protoField(pkg, name, Number(noText), where);
    if (r.card === 'list' && r.kind === 'string' && proto.label === 'optional' && proto.type === f.type.replace(/^.*\./, '')) {
      // A named Go []string declared as its own wrapper message (meta/v1 `Verbs`: `repeated string items = 1`),
      // written iff the slice is non-nil, as ExtraValue is in a map.
      r = { kind: 'extraValue', card: 'one', pointer: true };
    }
    // The tag's wire type and label are not authoritative (DeleteOptions.propagationPolicy, a string,
    // says varint; SubjectRulesReviewStatus.incomplete, a bool, says rep): generated.proto is, and the
    // Go-derived kind must agree with the field's declared proto type.
    void wire; void rep;
    checkAgainstProto(r, proto, where);
    let emit: string;
    if (opts.includes('inline')) {
      // An embedded struct: its own message on the wire, its fields merged into the parent's JSON.
      if (r.pointer || r.card !== 'one' || !r.kind.startsWith('message:')) throw new Error(`${where}: inline ${f.type} is not a struct value`);
      emit = 'inline';
    } else if (r.pointer) {
      if (r.card !== 'one') throw new Error(`${where}: pointer to a slice or map`);
      emit = 'pointer';
    } else if (opts.includes('omitzero')) {
      if (r.kind !== 'time' && r.kind !== 'microTime') throw new Error(`${where}: omitzero on ${r.kind} is not supported`);
      emit = 'omitzero';
    } else emit = opts.includes('omitempty') ? 'omitempty' : 'always';
    out.push({ no: Number(noText), json: jsonName || f.name, kind: r.kind, card: r.card, emit });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const cache = modCache();
for (const [path, prefix] of Object.entries(PACKAGES)) packages.set(prefix, readPackage(cache, path, prefix));

const kinds: Record<string, string> = {};
for (const [gvk, message] of Object.entries(ROOT_KINDS)) {
  kinds[gvk] = message;
  const dot = message.lastIndexOf('.');
  if (packages.get(message.slice(0, dot))?.structs.has(`${message.slice(dot + 1)}List`)) kinds[`${gvk}List`] = `${message}List`;
}

const schema = new Map<string, SchemaField[]>();
const queue = [...new Set([...Object.values(kinds), ...META_ROOTS])];
while (queue.length) {
  const name = queue.shift()!;
  if (schema.has(name)) continue;
  const fields = messageFields(name);
  schema.set(name, fields);
  for (const f of fields) if (f.kind.startsWith('message:') && !schema.has(f.kind.slice(8))) queue.push(f.kind.slice(8));
}
// The JSONSchemaPropsOr* kinds refer to JSONSchemaProps by name.
if ([...schema.values()].some((fs) => fs.some((f) => f.kind.startsWith('schemaOr'))) && !schema.has('apiextensions.v1.JSONSchemaProps')) {
  throw new Error('JSONSchemaPropsOr* used but JSONSchemaProps unreachable');
}

const q = (s: string): string => `'${s}'`;
const row = (f: SchemaField): string => {
  const fn = f.card === 'one' ? 'one' : f.card;
  return `    ${fn}(${f.no}, ${q(f.json)}, ${q(f.kind)}${f.emit === 'omitempty' ? '' : `, ${q(f.emit)}`}),`;
};
let out = `// Generated by scripts/generate-protobuf-schema.ts from the Go types of k8s.io/api,
// k8s.io/apimachinery and k8s.io/apiextensions-apiserver ${KUBE_VERSION}. Do not edit; re-run the script.
import { dict, list, one, type ProtobufMessage } from './schema.js';

/**
 * The messages of the served built-in kinds and everything they reach, keyed by
 * \`<group>.<version>.<Message>\` (meta/v1 types under \`meta.v1\`): fields in Go struct order.
 */
export const GENERATED_PROTOBUF_SCHEMA: Readonly<Record<string, ProtobufMessage>> = {
`;
for (const name of [...schema.keys()].sort()) {
  out += `  ${q(name)}: [\n${schema.get(name)!.map(row).join('\n')}\n  ],\n`;
}
out += ENVELOPE;
out += `};

/** The served built-in kinds and their lists, \`<apiVersion>/<Kind>\` → message. */
export const GENERATED_PROTOBUF_KINDS: Readonly<Record<string, string>> = {
${Object.entries(kinds).map(([k, v]) => `  ${q(k)}: ${q(v)},`).join('\n')}
};
`;
writeFileSync(OUT, out);
process.stdout.write(`${OUT}: ${schema.size} messages, ${Object.keys(kinds).length} kinds, ${out.length} bytes\n`);
