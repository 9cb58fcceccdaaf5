/**
 * What admission webhooks and validating admission policies share (kube's
 * k8s.io/apiserver/pkg/admission/plugin/webhook/predicates and policy/matching): rules over
 * operations, groups, versions, resources with subresources and scope; namespace and object
 * selectors; and the CEL environment of their expressions.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { labelSelectorFromMetav1, matchesLabels, type LabelSelector, type LabelSelectorV1 } from '../apimachinery/labels.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { registerKubeLibrary } from '../apiextensions/cel-library.js';
import type { WebhookAttributes } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {});
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
 * Whether a rule matches a request: operation, group, version (ignored with `anyVersion`, kube's
 * `matchPolicy: Equivalent` for the versions one resource is served in), resource with
 * subresource (`pods`, `pods/status`, `*`, `*` + `/*`, `pods/*`, `*` + `/status`), names and
 * scope.
 */
export function ruleMatches(r: AdmissionRule, a: WebhookAttributes, anyVersion: boolean): boolean {
  const d = a.desc;
  const sub = a.subresource;
  const resourceOk = r.resources.some((e) => {
    if (e === '*/*' || e === (sub ? `${d.plural}/${sub}` : d.plural)) return true;
    const [res, s] = e.split('/');
    if (s === undefined) return e === '*' && !sub;
    return (res === '*' || res === d.plural) && (s === '*' ? Boolean(sub) || res !== '*' : s === sub);
  });
  return resourceOk && has(r.operations, a.operation) && has(r.apiGroups, d.group) && (anyVersion || has(r.apiVersions, d.version))
    && (!r.resourceNames.length || r.resourceNames.includes(a.name))
    && (r.scope === '*' || (r.scope === 'Namespaced') === d.namespaced);
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
const programs = new Map<string, ParseResult | Error>();

/**
 * Compiles an admission CEL expression (match conditions, validations, variables, messages,
 * audit annotations) over `object`, `oldObject`, `request`, `params`, `namespaceObject`,
 * `variables` and kube's libraries, once per expression text.
 * @throws {Error} `compilation failed: <first line of the error>`
 */
export function compileExpression(expression: string): ParseResult {
  let p = programs.get(expression);
  if (!p) {
    if (!env) {
      env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false, enableOptionalTypes: true });
      for (const v of ['object', 'oldObject', 'request', 'params', 'namespaceObject', 'variables', 'authorizer']) env.registerVariable(v, 'dyn');
      registerKubeLibrary(env);
    }
    try { p = env.parse(expression); } catch (err) { p = new Error(`compilation failed: ${String((err as Error).message).split('\n')[0]}`); }
    if (programs.size > 5000) programs.clear();
    programs.set(expression, p);
  }
  if (p instanceof Error) throw p;
  return p;
}

/** The admission configurations themselves are never admitted by dynamic admission (kube's rule: no lock-out). */
export function isAdmissionConfiguration(a: WebhookAttributes): boolean {
  return a.desc.group === 'admissionregistration.k8s.io';
}
