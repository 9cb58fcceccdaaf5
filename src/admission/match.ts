/**
 * What admission webhooks and validating admission policies share (kube's
 * k8s.io/apiserver/pkg/admission/plugin/webhook/predicates and policy/matching): rules over
 * operations, groups, versions, resources with subresources and scope; namespace and object
 * selectors; and the CEL environment of their expressions.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { labelSelectorFromMetav1, matchesLabels, type LabelSelector, type LabelSelectorV1 } from '../apimachinery/labels.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { constantRegexErrors, registerKubeLibrary } from '../apiextensions/cel-library.js';
import { formatIssues } from '../apiextensions/celtypes.js';
import { AUTHORIZER_TYPE, registerAuthzLibrary } from './celauthorizer.js';
import type { Store, WebhookAttributes } from '../registry/store.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { WatchCache } from '../storage/watchcache.js';
import { LRUCache } from 'lru-cache';
import { CEL_PROGRAM_CACHE_ENTRIES, CEL_PROGRAM_CACHE_SOURCE_CHARS } from '../apiextensions/cel.js';
import { asObj } from '../apimachinery/objects.js';

type Obj = Record<string, unknown>;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const NAMESPACES_GR = 'core/namespaces';

/** One rule (`RuleWithOperations`, or `NamedRuleWithOperations` with `resourceNames`). */
export interface AdmissionRule {
  operations: string[];
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
  resourceNames: string[];
  scope: string;
}

/** A rule of a configuration or policy, read from its JSON. */
export function ruleOf(r: unknown): AdmissionRule {
  const o = asObj(r);
  return {
    operations: strings(o.operations), apiGroups: strings(o.apiGroups), apiVersions: strings(o.apiVersions),
    resources: strings(o.resources), resourceNames: strings(o.resourceNames), scope: String(o.scope ?? '*'),
  };
}

/** A `metav1.LabelSelector` that selects something less than everything, compiled; undefined for `{}`. */
export function selectorOf(v: unknown): LabelSelector | undefined {
  const s = asObj(v);
  return Object.keys(asObj(s.matchLabels)).length || (Array.isArray(s.matchExpressions) && s.matchExpressions.length)
    ? labelSelectorFromMetav1(s as LabelSelectorV1) : undefined;
}

const has = (list: string[], v: string) => list.includes('*') || list.includes(v);

/**
 * Whether a rule matches a request's own resource: operation, group, version, resource with
 * subresource (`pods`, `pods/status`, `*`, `*` + `/*`, `pods/*`, `*` + `/status`), names and
 * scope. `matchPolicy: Equivalent` is `matchResource`'s.
 */
export function ruleMatches(r: AdmissionRule, a: WebhookAttributes): boolean {
  const d = a.desc;
  const sub = a.subresource;
  const resourceOk = r.resources.some((e) => {
    if (e === '*/*' || e === (sub ? `${d.plural}/${sub}` : d.plural)) return true;
    const [res, s] = e.split('/');
    if (s === undefined) return e === '*' && !sub;
    return (res === '*' || res === d.plural) && (s === '*' ? Boolean(sub) || res !== '*' : s === sub);
  });
  return resourceOk && has(r.operations, a.operation) && has(r.apiGroups, d.group) && has(r.apiVersions, d.version)
    && (!r.resourceNames.length || r.resourceNames.includes(a.name))
    && (r.scope === '*' || (r.scope === 'Namespaced') === d.namespaced);
}

/** Served resources by storage location, per API set (computed once per set). */
const equivalents = new WeakMap<ClusterAPIs, Map<string, { desc: ResourceDescriptor; store: Store }[]>>();

/**
 * A logical cluster's served resources grouped by where they are stored: kube's equivalent
 * resources (its EquivalentResourceRegistry keys resources by storage prefix: the versions of a
 * resource, and e.g. events.k8s.io Events with core Events), in discovery order.
 */
function equivalentsOf(apis: ClusterAPIs): Map<string, { desc: ResourceDescriptor; store: Store }[]> {
  let m = equivalents.get(apis);
  if (!m) {
    m = new Map();
    for (const desc of apis.descriptors) {
      const store = desc.virtual ? undefined : apis.store(desc.group, desc.version, desc.plural);
      if (!store) continue;
      const list = m.get(store.groupResource) ?? [];
      list.push({ desc, store });
      m.set(store.groupResource, list);
    }
    equivalents.set(apis, m);
  }
  return m;
}

/**
 * The resource a set of rules matched a request as: its own, or — under `matchPolicy:
 * Equivalent` — an equivalent one a rule names, with the stores to convert the request's objects
 * between (kube's `EquivalentResourceMapper` matching, webhook/generic and policy/matching).
 */
export interface MatchedResource { desc: ResourceDescriptor; convert?: { from: Store; to: Store } }

/**
 * Matches rules against a request: its own resource when a rule names it; with `equivalent`, the
 * first equivalent resource of the logical cluster's APIs a rule names. Undefined: no match.
 */
export function matchResource(rules: readonly AdmissionRule[], a: WebhookAttributes, equivalent: boolean, apis: ClusterAPIs | undefined): MatchedResource | undefined {
  if (rules.some((r) => ruleMatches(r, a))) return { desc: a.desc };
  if (!equivalent || !apis) return undefined;
  const from = apis.store(a.desc.group, a.desc.version, a.desc.plural);
  if (!from) return undefined;
  for (const { desc, store } of equivalentsOf(apis).get(from.groupResource) ?? []) {
    if (desc !== a.desc && rules.some((r) => ruleMatches(r, { ...a, desc }))) return { desc, convert: { from, to: store } };
  }
  return undefined;
}

/**
 * The request as the matched resource sees it (kube's `ConvertVersionedAttributes`): `object`
 * and `oldObject` converted to its version (`Store.convertTo`, through the storage version).
 * Rejects with a conversion webhook's StatusError.
 */
export async function versionedAttributes(a: WebhookAttributes, m: MatchedResource): Promise<WebhookAttributes> {
  const c = m.convert;
  if (!c) return a;
  const convert = async (o: KubeObject | undefined) => (o ? (await c.from.convertTo([o], c.to))[0] : undefined);
  const [object, oldObject] = await Promise.all([convert(a.object), convert(a.oldObject)]);
  return { ...a, desc: m.desc, object, oldObject };
}

/** An object mutated in the matched resource's version, back in the request's. */
export async function unversioned(obj: KubeObject, m: MatchedResource): Promise<KubeObject> {
  return m.convert ? (await m.convert.to.convertTo([obj], m.convert.from))[0]! : obj;
}

/**
 * Whether a request passes an object selector (the new or the old object's labels) and a
 * namespace selector (the labels of the object's namespace, or of a Namespace itself; objects
 * of other cluster-scoped resources always pass), as kube's `matchObject`/`matchNamespace`.
 */
export function selectorsMatch(cache: WatchCache, a: WebhookAttributes, objectSelector: LabelSelector | undefined, namespaceSelector: LabelSelector | undefined): boolean {
  if (objectSelector && ![a.object, a.oldObject].some((o) => o !== undefined && matchesLabels(objectSelector, o.metadata.labels ?? {}))) return false;
  if (!namespaceSelector) return true;
  const d = a.desc;
  let labels: Record<string, string> | undefined;
  if (d.group === '' && d.plural === 'namespaces') labels = (a.object ?? a.oldObject)?.metadata.labels;
  else if (d.namespaced) labels = cache.getEntry(NAMESPACES_GR, a.cluster, '', a.namespace)?.labels;
  else return true;
  return matchesLabels(namespaceSelector, labels ?? {});
}

/** The Namespace of a request's object, as stored (CEL's `namespaceObject`), or null. */
export function namespaceObject(cache: WatchCache, a: WebhookAttributes): KubeObject | null {
  const e = a.namespace ? cache.getEntry(NAMESPACES_GR, a.cluster, '', a.namespace) : undefined;
  return e ? JSON.parse(e.json) as KubeObject : null;
}

let env: Environment | undefined;
/**
 * Parsed admission CEL programs by expression text (policies and webhook matchConditions of
 * every tenant): an LRU cache with the bounds of the CRD rule cache (apiextensions/cel.ts):
 * {@link CEL_PROGRAM_CACHE_ENTRIES} programs, {@link CEL_PROGRAM_CACHE_SOURCE_CHARS} characters.
 */
const programs = new LRUCache<string, ParseResult | Error>({
  max: CEL_PROGRAM_CACHE_ENTRIES, maxSize: CEL_PROGRAM_CACHE_SOURCE_CHARS, sizeCalculation: (_v, key) => key.length + 1,
});

/**
 * Compiles an admission CEL expression (match conditions, validations, variables, messages,
 * audit annotations, mutations) over `object`, `oldObject`, `request`, `params`,
 * `namespaceObject`, `variables`, `authorizer` (./celauthorizer.ts) and kube's libraries, once
 * per expression text. With
 * `mutation`, the expression may also construct objects as kube's MutatingAdmissionPolicy
 * environment allows (k8s.io/apiserver/pkg/admission/plugin/policy/mutating, cel/mutation):
 * `Object{…}`, `Object.spec{…}`, `JSONPatch{op, path, value, from}` and `jsonpatch.escapeKey`;
 * see `rewriteObjectConstruction`.
 * @throws {Error} `compilation failed: <first line of the error>`, or kube's errors for constant
 *   patterns Go's regexp refuses (`compilation failed: ERROR: <input>:1:c: invalid matches argument…`,
 *   `program instantiation failed: error parsing regexp: …`; see `constantRegexErrors`)
 */
export function compileExpression(expression: string, mutation = false): ParseResult {
  const key = mutation ? `\u0000${expression}` : expression;
  let p = programs.get(key);
  if (!p) {
    if (!env) {
      env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, enableOptionalTypes: true });
      for (const v of ['object', 'oldObject', 'request', 'params', 'namespaceObject', 'variables']) env.registerVariable(v, 'dyn');
      registerKubeLibrary(env);
      // kube's authorization library (k8s.io/apiserver/pkg/cel/library/authz.go): `authorizer`, `authorizer.requestResource`.
      registerAuthzLibrary(env);
      env.registerVariable('authorizer', AUTHORIZER_TYPE);
      // kube's JSONPatch library (k8s.io/apiserver/pkg/cel/library/jsonpatch.go): `jsonpatch.escapeKey`, RFC 6901 escaping.
      env.registerFunction('jsonpatch_escapeKey(string): string', (k: string) => k.replaceAll('~', '~0').replaceAll('/', '~1'));
    }
    const source = mutation ? rewriteObjectConstruction(expression) : expression;
    try { p = env.parse(source); } catch (err) { p = new Error(`compilation failed: ${String((err as Error).message).split('\n')[0]}`); }
    if (!(p instanceof Error)) {
      // kube's compile-time checks of constant regexes (invalid matches argument; find/findAll at program creation).
      const regex = constantRegexErrors(p.ast);
      if (regex.issues.length) p = new Error(`compilation failed: ${formatIssues(source, regex.issues)}`);
      else if (regex.programError !== undefined) p = new Error(`program instantiation failed: ${regex.programError}`);
    }
    programs.set(key, p);
  }
  if (p instanceof Error) throw p;
  return p;
}

const TOKEN = /\s+|\/\/[^\n]*|(?:[rRbB]{1,2})?(?:"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|[\s\S]/g;
const isBlank = (t: string | undefined): boolean => t !== undefined && /^\s|^\/\//.test(t);

/**
 * Rewrites the typed object construction of kube's mutating admission policies (the `Object` and
 * `JSONPatch` message types of k8s.io/apiserver/pkg/cel/mutation) into the CEL map literals they
 * evaluate to here: `Object.spec{replicas: 1}` → `{"replicas": 1}`; and `jsonpatch.escapeKey(`
 * → the registered `jsonpatch_escapeKey(`. String literals and comments are left as they are.
 */
export function rewriteObjectConstruction(src: string): string {
  const toks = src.match(TOKEN) ?? [];
  const next = (i: number): number => { while (isBlank(toks[i])) i++; return i; };
  const out: string[] = [];
  const stack: string[] = [];
  let prev = '';
  let expectField = false;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (isBlank(t)) { out.push(t); continue; }
    const field = expectField && /^[A-Za-z_]/.test(t) && toks[next(i + 1)] === ':';
    expectField = false;
    if (field) { out.push(JSON.stringify(t)); prev = t; continue; }
    if ((t === 'Object' || t === 'JSONPatch') && prev !== '.') {
      let j = next(i + 1);
      if (t === 'Object') while (toks[j] === '.' && /^[A-Za-z_]/.test(toks[next(j + 1)] ?? '')) j = next(next(j + 1) + 1);
      if (toks[j] === '{') { out.push('{'); stack.push('struct'); expectField = true; prev = '{'; i = j; continue; }
    }
    if (t === 'jsonpatch' && prev !== '.' && toks[next(i + 1)] === '.' && toks[next(next(i + 1) + 1)] === 'escapeKey') {
      out.push('jsonpatch_escapeKey'); prev = 'escapeKey'; i = next(next(i + 1) + 1); continue;
    }
    if (t === '{' || t === '(' || t === '[') stack.push(t);
    else if (t === '}' || t === ')' || t === ']') stack.pop();
    else if (t === ',' && stack.at(-1) === 'struct') expectField = true;
    out.push(t);
    prev = t;
  }
  return out.join('');
}

/**
 * A CEL result as JSON (kube's `ConvertToNative` to unstructured): ints to numbers, bytes to
 * base64, timestamps to RFC 3339, other library values (durations, quantities) to their strings.
 */
export function celToJSON(v: unknown): unknown {
  if (v === null || v === undefined || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') return v ?? null;
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(celToJSON);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (v instanceof Date) return v.toISOString().replace(/\.000Z$/, 'Z');
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), celToJSON(x)]));
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== null && proto !== Object.prototype) return String(v);
  return Object.fromEntries(Object.entries(v as Obj).map(([k, x]) => [k, celToJSON(x)]));
}

/** The admission configurations themselves are never admitted by dynamic admission (kube's rule: no lock-out). */
export function isAdmissionConfiguration(a: WebhookAttributes): boolean {
  return a.desc.group === 'admissionregistration.k8s.io';
}
