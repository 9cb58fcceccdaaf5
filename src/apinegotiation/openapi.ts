/**
 * A resource's schema from a cluster's OpenAPI v3 document, as a structural schema a
 * CustomResourceDefinition may hold (kube's rules: k8s.io/apiextensions-apiserver
 * pkg/apiserver/schema/structural.go and validation.go): every `$ref` resolved, no `allOf`/`oneOf`
 * wrappers, `x-kubernetes-*` extensions kept where a CRD schema has them, int-or-string and
 * quantities as `x-kubernetes-int-or-string`, the top-level `metadata` reduced to `type: object`.
 *
 * The well-known types and defaults are kcp's crd-puller's (github kcp-dev/kcp pkg/crdpuller
 * discovery.go `knownPackages`, `knownDefaults`; there from the OpenAPI v2 models, here from v3):
 * a nested ObjectMeta preserves unknown fields (the pod template's metadata would otherwise be
 * pruned empty), Time/MicroTime are `date-time` strings, Duration a string, Quantity and
 * IntOrString int-or-string; only the `protocol` defaults of container and service ports are
 * kept (v3 documents carry defaults such as `{}` on required structs, which a CRD refuses: a
 * default must validate). A list with a merge patch strategy and no list type gets kcp's list
 * type (`map` for objects, else `set`); the keys of a `map` list are required in its items
 * unless defaulted (kube's rule for list-map keys). kcp-ts differences: RawExtension and
 * unstructured objects preserve unknown fields (kcp's `type: object` alone prunes their content),
 * and a `oneOf`/`anyOf`/`allOf` of types the schema cannot express is any value (preserved
 * unknown fields) instead of a failed import, one of value constraints only is dropped; `uniqueItems` is dropped (a CRD refuses `true`).
 *
 * Bounds: the document is tenant input (whoever runs the downstream cluster publishes it). The
 * walk refuses a recursive `$ref` (kcp: "recursive schema are not supported"), a result nested
 * deeper than {@link MAX_PULLED_SCHEMA_DEPTH} (each `$ref` hop counts as a level, so a chain of
 * references cannot overflow the stack) and one of more than {@link MAX_PULLED_SCHEMA_NODES}
 * nodes (a reference used twice on every level would otherwise expand exponentially); so its
 * time and memory are linear in that budget, whatever the document holds.
 */
import { isObj } from '../apimachinery/objects.js';

/** A JSON schema node (decoded JSON). */
export type SchemaNode = Record<string, unknown>;

/** The `components.schemas` of an OpenAPI v3 document. */
export type SchemaDefinitions = Record<string, unknown>;

/** Deepest nesting of a pulled schema (levels of properties/items/additionalProperties plus `$ref` hops). Kube's types nest about 20 deep. */
export const MAX_PULLED_SCHEMA_DEPTH = 100;
/** Most nodes of one pulled schema. A Deployment's schema has about 1,900, a Pod's about 1,800. */
export const MAX_PULLED_SCHEMA_NODES = 50_000;

/** A schema that cannot be pulled (recursive, too deep or large, unresolved reference, no such kind). */
export class SchemaPullError extends Error {
  constructor(message: string) { super(message); this.name = 'SchemaPullError'; }
}

const REF_PREFIX = '#/components/schemas/';
const ANY_VALUE = (): SchemaNode => ({ 'x-kubernetes-preserve-unknown-fields': true });
const INT_OR_STRING = (): SchemaNode => ({ 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });

/**
 * Schemas of well-known definitions, by OpenAPI definition name (kcp's `knownPackages`, with the
 * kcp-ts differences of the module comment). `ObjectMeta` is the nested form; the top-level
 * `metadata` of a kind is reduced to `{type: object}` by {@link structuralSchemaForKind}.
 */
const KNOWN_SCHEMAS: Record<string, () => SchemaNode> = {
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': () => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.Time': () => ({ type: 'string', format: 'date-time' }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime': () => ({ type: 'string', format: 'date-time' }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.Duration': () => ({ type: 'string' }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1': () => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
  'io.k8s.apimachinery.pkg.api.resource.Quantity': () => ({
    ...INT_OR_STRING(),
    pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  }),
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': INT_OR_STRING,
  'io.k8s.apimachinery.pkg.runtime.RawExtension': () => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.unstructured.Unstructured': () => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON': ANY_VALUE,
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON': ANY_VALUE,
};

/** Defaults kept, by `<definition>.<property>` (kcp's `knownDefaults`). */
const KNOWN_DEFAULTS: Record<string, unknown> = {
  'io.k8s.api.core.v1.ContainerPort.protocol': 'TCP',
  'io.k8s.api.core.v1.ServicePort.protocol': 'TCP',
};

/** Keywords of a schema node copied as they are when their value has the right JSON type. */
const COPIED: ReadonlyArray<[string, 'string' | 'number' | 'boolean' | 'strings' | 'array' | 'object']> = [
  ['format', 'string'], ['pattern', 'string'], ['title', 'string'],
  ['maximum', 'number'], ['minimum', 'number'], ['exclusiveMaximum', 'boolean'], ['exclusiveMinimum', 'boolean'],
  ['maxLength', 'number'], ['minLength', 'number'], ['maxItems', 'number'], ['minItems', 'number'],
  ['maxProperties', 'number'], ['minProperties', 'number'], ['multipleOf', 'number'], ['nullable', 'boolean'],
  ['enum', 'array'], ['x-kubernetes-list-type', 'string'], ['x-kubernetes-list-map-keys', 'strings'],
  ['x-kubernetes-map-type', 'string'], ['x-kubernetes-embedded-resource', 'boolean'], ['x-kubernetes-validations', 'array'],
];
const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);

function hasType(v: unknown, t: (typeof COPIED)[number][1]): boolean {
  switch (t) {
    case 'strings': return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'array': return Array.isArray(v);
    case 'object': return isObj(v);
    default: return typeof v === t;
  }
}

/** The definition a `$ref` names in `components.schemas`, or undefined for any other reference. */
function refName(node: SchemaNode): string | undefined {
  const ref = node.$ref;
  if (typeof ref === 'string') return ref.startsWith(REF_PREFIX) ? ref.slice(REF_PREFIX.length) : `\0${ref}`;
  const all = node.allOf;
  if (Array.isArray(all) && all.length === 1 && isObj(all[0]) && typeof all[0].$ref === 'string') return refName(all[0]);
  return undefined;
}

/** Whether a `oneOf`/`anyOf` lists exactly an integer and a string (kube's IntOrString). */
function isIntOrStringUnion(list: unknown): boolean {
  if (!Array.isArray(list) || list.length !== 2) return false;
  const types = list.map((x) => (isObj(x) ? x.type : undefined)).sort();
  return types[0] === 'integer' && types[1] === 'string';
}

class Converter {
  private nodes = 0;
  private readonly visiting = new Set<string>();
  constructor(private readonly defs: SchemaDefinitions) {}

  /** One node; `def` is the definition whose properties are being converted (for known defaults). */
  convert(node: unknown, depth: number, def: string, property?: string): SchemaNode {
    if (++this.nodes > MAX_PULLED_SCHEMA_NODES) throw new SchemaPullError(`the schema has more than ${MAX_PULLED_SCHEMA_NODES} nodes`);
    if (depth > MAX_PULLED_SCHEMA_DEPTH) throw new SchemaPullError(`the schema nests deeper than ${MAX_PULLED_SCHEMA_DEPTH} levels`);
    if (!isObj(node)) throw new SchemaPullError(`a schema node of ${def} is not an object`);
    const description = typeof node.description === 'string' ? node.description : undefined;
    const ref = refName(node);
    let out: SchemaNode;
    if (ref !== undefined) {
      out = this.resolve(ref, depth);
      // The referring property's description wins over the type's (kcp's inherited description).
      if (description !== undefined) out.description = description;
      if (node.nullable === true) out.nullable = true;
    } else {
      out = this.plain(node, depth, def);
    }
    const known = property !== undefined ? KNOWN_DEFAULTS[`${def}.${property}`] : undefined;
    if (known !== undefined) out.default = known;
    return out;
  }

  private resolve(name: string, depth: number): SchemaNode {
    if (name.startsWith('\0')) throw new SchemaPullError(`reference ${JSON.stringify(name.slice(1))} is not to ${REF_PREFIX}…`);
    const known = KNOWN_SCHEMAS[name];
    if (known) {
      const out = known();
      const target = this.defs[name];
      if (isObj(target) && typeof target.description === 'string') out.description = target.description;
      return out;
    }
    if (this.visiting.has(name)) throw new SchemaPullError(`recursive schema are not supported: ${name}`);
    if (!Object.hasOwn(this.defs, name)) throw new SchemaPullError(`reference to an undefined schema ${JSON.stringify(name)}`);
    this.visiting.add(name);
    try {
      return this.convert(this.defs[name], depth + 1, name);
    } finally {
      this.visiting.delete(name);
    }
  }

  private plain(node: SchemaNode, depth: number, def: string): SchemaNode {
    const out: SchemaNode = {};
    if (typeof node.description === 'string') out.description = node.description;
    if (node.format === 'int-or-string' || isIntOrStringUnion(node.oneOf) || isIntOrStringUnion(node.anyOf) || node['x-kubernetes-int-or-string'] === true) {
      return { ...out, ...INT_OR_STRING() };
    }
    const unions = ['oneOf', 'anyOf', 'allOf', 'not'].filter((k) => node[k] !== undefined);
    if (unions.length) {
      // Value constraints only (branches that name no type, properties or reference, such as
      // `oneOf: [{required: [a]}, {required: [b]}]`) are dropped: the negotiation cannot compare
      // them (schemacompat refuses these constructs) and the node's own type still holds. A union
      // of types the structural form cannot express is any value (see the module comment).
      const branches = unions.flatMap((k) => (Array.isArray(node[k]) ? node[k] as unknown[] : [node[k]]));
      const typed = branches.some((b) => !isObj(b) || b.type !== undefined || b.properties !== undefined || b.$ref !== undefined || b.items !== undefined || b.allOf !== undefined);
      if (typed || typeof node.type !== 'string') return { ...out, ...ANY_VALUE() };
    }
    if (typeof node.type === 'string' && TYPES.has(node.type)) out.type = node.type;
    for (const [key, t] of COPIED) if (node[key] !== undefined && hasType(node[key], t)) out[key] = structuredClone(node[key]);
    if (node['x-kubernetes-preserve-unknown-fields'] === true) out['x-kubernetes-preserve-unknown-fields'] = true;

    if (isObj(node.properties)) {
      const props: Record<string, SchemaNode> = {};
      for (const [k, v] of Object.entries(node.properties)) {
        Object.defineProperty(props, k, { value: this.convert(v, depth + 1, def, k), enumerable: true, writable: true, configurable: true });
      }
      out.properties = props;
      if (!out.type) out.type = 'object';
      const required = Array.isArray(node.required) ? node.required.filter((r): r is string => typeof r === 'string' && Object.hasOwn(props, r)) : [];
      if (required.length) out.required = [...new Set(required)];
    } else if (isObj(node.additionalProperties)) {
      out.additionalProperties = this.convert(node.additionalProperties, depth + 1, def);
      if (!out.type) out.type = 'object';
    } else if (node.additionalProperties === true) {
      out['x-kubernetes-preserve-unknown-fields'] = true;
    }
    if (out.type === 'array') {
      out.items = isObj(node.items) ? this.convert(node.items, depth + 1, def) : ANY_VALUE();
      this.listType(node, out);
    }
    if (!out.type && out['x-kubernetes-preserve-unknown-fields'] !== true) {
      // No type and nothing to go by: any value, as a structural schema allows only with this.
      out['x-kubernetes-preserve-unknown-fields'] = true;
    }
    return out;
  }

  /** kcp's list type from the patch strategy, and kube's rule that list-map keys are required or defaulted. */
  private listType(node: SchemaNode, out: SchemaNode): void {
    const items = out.items as SchemaNode;
    const itemsAreObjects = items.type === 'object' && isObj(items.properties);
    const strategy = typeof node['x-kubernetes-patch-strategy'] === 'string' ? node['x-kubernetes-patch-strategy'] : '';
    if (out['x-kubernetes-list-type'] === undefined && strategy) {
      out['x-kubernetes-list-type'] = strategy.split(',').includes('merge') ? (itemsAreObjects ? 'map' : 'set') : 'atomic';
    }
    const mergeKey = node['x-kubernetes-patch-merge-key'];
    if (out['x-kubernetes-list-map-keys'] === undefined && typeof mergeKey === 'string') {
      out['x-kubernetes-list-map-keys'] = [mergeKey];
      if (out['x-kubernetes-list-type'] === undefined) out['x-kubernetes-list-type'] = 'map';
    }
    if (out['x-kubernetes-list-type'] !== 'map') {
      // Keys belong to map lists only (kube refuses them elsewhere).
      delete out['x-kubernetes-list-map-keys'];
      return;
    }
    if (!itemsAreObjects) { out['x-kubernetes-list-type'] = 'atomic'; delete out['x-kubernetes-list-map-keys']; return; }
    const keys = (out['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
    const props = items.properties as Record<string, SchemaNode>;
    const present = keys.filter((k) => Object.hasOwn(props, k));
    if (!present.length) { out['x-kubernetes-list-type'] = 'atomic'; delete out['x-kubernetes-list-map-keys']; return; }
    out['x-kubernetes-list-map-keys'] = present;
    const required = new Set(Array.isArray(items.required) ? items.required as string[] : []);
    for (const k of present) if (props[k]!.default === undefined) required.add(k);
    items.required = [...required].sort();
  }
}

/**
 * The definition of a kind in an OpenAPI v3 document: the schema whose
 * `x-kubernetes-group-version-kind` names it.
 * @returns its name in `components.schemas`, or undefined
 */
export function definitionForKind(defs: SchemaDefinitions, group: string, version: string, kind: string): string | undefined {
  for (const [name, s] of Object.entries(defs)) {
    if (!isObj(s) || !Array.isArray(s['x-kubernetes-group-version-kind'])) continue;
    for (const gvk of s['x-kubernetes-group-version-kind'] as unknown[]) {
      if (isObj(gvk) && (gvk.group ?? '') === group && gvk.version === version && gvk.kind === kind) return name;
    }
  }
  return undefined;
}

/**
 * The structural schema of a kind from an OpenAPI v3 document's `components.schemas` (see the
 * module comment for the rules and bounds).
 * @throws SchemaPullError when the kind has no definition, or its schema is recursive, deeper
 *   than {@link MAX_PULLED_SCHEMA_DEPTH}, larger than {@link MAX_PULLED_SCHEMA_NODES} nodes or
 *   refers to what the document does not define
 */
export function structuralSchemaForKind(defs: SchemaDefinitions, group: string, version: string, kind: string): SchemaNode {
  const name = definitionForKind(defs, group, version, kind);
  if (!name) throw new SchemaPullError(`no OpenAPI schema for ${group ? `${group}/` : ''}${version}, Kind=${kind}`);
  const converter = new Converter(defs);
  const schema = converter.convert({ $ref: `${REF_PREFIX}${name}` }, 0, name);
  if (isObj(schema.properties) && isObj(schema.properties.metadata)) schema.properties.metadata = { type: 'object' };
  return schema;
}
