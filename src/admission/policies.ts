/**
 * ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding per logical cluster, with
 * kube-apiserver's semantics (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/;
 * k8s.io/apiserver/pkg/admission/plugin/policy/validating):
 *
 * - a binding (`policyName`, `validationActions`, optional `matchResources` and `paramRef`) makes
 *   its policy apply; a request is evaluated when the policy's `matchConstraints` and the
 *   binding's `matchResources` both match (resource rules with exclusions, namespace and object
 *   selectors), then every `matchConditions` expression holds;
 * - `validations` are CEL over `object`, `oldObject`, `request`, `params`, `namespaceObject`,
 *   `variables` (the policy's `variables`, evaluated lazily) and `authorizer` (kube's
 *   authorization checks as the request's user, ./celauthorizer.ts); a false one is a violation
 *   with its `message`, `messageExpression` or `failed expression: <expr>`, and `reason`
 *   (default Invalid);
 * - `validationActions`: Deny refuses (`ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
 *   request: <message>`, the code of the reason: Invalid 422, Forbidden 403, Unauthorized 401,
 *   RequestEntityTooLarge 413), Warn adds a `Warning`, Audit records the failures in the request's
 *   audit event (`validation.policy.admission.k8s.io/validation_failure`; `auditAnnotations` as
 *   `<policy>/<key>`) when auditing is on;
 * - params: `paramKind` names a resource of the logical cluster; `paramRef.name` (or `selector`)
 *   picks the objects, each evaluated; none found → `parameterNotFoundAction` (Deny: refused);
 * - an expression that fails to evaluate follows `failurePolicy` (Fail: refused, Ignore: skipped).
 */
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import { labelSelectorFromMetav1, matchesLabels, type LabelSelector, type LabelSelectorV1 } from '../apimachinery/labels.js';
import { celAuthorizer, type AdmissionAuthorize } from './celauthorizer.js';
import { compileExpression, matchResource, namespaceObject, ruleOf, selectorOf, selectorsMatch, versionedAttributes, type AdmissionRule, type MatchedResource } from './match.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import { toCel } from '../apiextensions/cel.js';
import { CelBudgetExhaustedError, CostBudget } from '../apiextensions/celcost.js';
import type { WebhookAdmission, WebhookAttributes } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { asObj } from '../apimachinery/objects.js';

/** Watch-cache group/resources of policies and bindings. */
export const POLICIES_GR = 'admissionregistration.k8s.io/validatingadmissionpolicies';
export const POLICY_BINDINGS_GR = 'admissionregistration.k8s.io/validatingadmissionpolicybindings';

type Obj = Record<string, unknown>;
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v as Obj[] : []);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);


/** Status codes of `validations[].reason` (kube's allowed reasons). */
const REASON_CODES: Record<string, number> = { Invalid: 422, Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413 };

/**
 * Validation of what ValidatingAdmissionPolicy and MutatingAdmissionPolicy share (kube's
 * validateValidatingAdmissionPolicySpec / validateMutatingAdmissionPolicySpec in
 * pkg/apis/admissionregistration/validation): `spec` an object, failurePolicy, variables,
 * matchConditions and matchConstraints (resourceRules required); every expression compiles (in
 * the mutation environment with `mutation`). Calls `more` with the spec and the helpers for the
 * kind's own fields.
 */
export function validatePolicySpec(obj: KubeObject, mutation: boolean, more: (spec: Obj, bad: (field: string, message: string, reason?: string) => void, expr: (field: string, e: unknown) => void) => void): StatusCause[] {
  const causes: StatusCause[] = [];
  if (obj.spec === null || typeof obj.spec !== 'object' || Array.isArray(obj.spec)) return [{ reason: 'FieldValueInvalid', field: 'spec', message: `Invalid value: ${JSON.stringify(obj.spec ?? null)}: must be an object` }];
  const spec = asObj(obj.spec);
  const bad = (field: string, message: string, reason = 'FieldValueInvalid') => { causes.push({ reason, field, message }); };
  const expr = (field: string, e: unknown) => {
    if (typeof e !== 'string' || !e.trim()) { bad(field, 'Required value', 'FieldValueRequired'); return; }
    try { compileExpression(e, mutation); } catch (err) { bad(field, `Invalid value: ${JSON.stringify(e)}: ${(err as Error).message}`); }
  };
  if (spec.failurePolicy !== undefined && !['Fail', 'Ignore'].includes(String(spec.failurePolicy))) bad('spec.failurePolicy', `Unsupported value: ${JSON.stringify(spec.failurePolicy)}: supported values: "Fail", "Ignore"`, 'FieldValueNotSupported');
  for (const list of ['variables', 'matchConditions'] as const) {
    if (spec[list] !== undefined && spec[list] !== null && !Array.isArray(spec[list])) bad(`spec.${list}`, `Invalid value: ${JSON.stringify(spec[list])}: must be a list`);
  }
  more(spec, bad, expr);
  asList(spec.variables).forEach((v, i) => { if (!asObj(v).name) bad(`spec.variables[${i}].name`, 'Required value', 'FieldValueRequired'); expr(`spec.variables[${i}].expression`, asObj(v).expression); });
  asList(spec.matchConditions).forEach((c, i) => expr(`spec.matchConditions[${i}].expression`, asObj(c).expression));
  // kube: matchConstraints is required, and needs at least one resource rule to type the object.
  if (spec.matchConstraints === undefined || spec.matchConstraints === null) bad('spec.matchConstraints', 'Required value', 'FieldValueRequired');
  else if (!asList(asObj(spec.matchConstraints).resourceRules).length) bad('spec.matchConstraints.resourceRules', 'Required value', 'FieldValueRequired');
  for (const list of ['resourceRules', 'excludeResourceRules'] as const) {
    asList(asObj(spec.matchConstraints)[list]).forEach((r, i) => {
      if (!r || typeof r !== 'object' || Array.isArray(r)) bad(`spec.matchConstraints.${list}[${i}]`, `Invalid value: ${JSON.stringify(r)}: must be an object`);
    });
  }
  return causes;
}

/** Validation of a ValidatingAdmissionPolicy (kube's ValidateValidatingAdmissionPolicy: the parts a client can get wrong; expressions compile). */
export function validatePolicy(obj: KubeObject): StatusCause[] {
  return validatePolicySpec(obj, false, (spec, bad, expr) => {
    if (!asList(spec.validations).length && !asList(spec.auditAnnotations).length) bad('spec.validations', 'Required value: validations or auditAnnotations must contain at least one item', 'FieldValueRequired');
    asList(spec.validations).forEach((v, i) => {
      expr(`spec.validations[${i}].expression`, v.expression);
      if (v.messageExpression !== undefined) expr(`spec.validations[${i}].messageExpression`, v.messageExpression);
      if (v.reason !== undefined && !(String(v.reason) in REASON_CODES)) bad(`spec.validations[${i}].reason`, `Unsupported value: ${JSON.stringify(v.reason)}: supported values: "Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"`, 'FieldValueNotSupported');
    });
    asList(spec.auditAnnotations).forEach((a, i) => expr(`spec.auditAnnotations[${i}].valueExpression`, a.valueExpression));
  });
}

/** Validation of a ValidatingAdmissionPolicyBinding. */
export function validatePolicyBinding(obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  if (obj.spec !== undefined && (obj.spec === null || typeof obj.spec !== 'object' || Array.isArray(obj.spec))) return [{ reason: 'FieldValueInvalid', field: 'spec', message: `Invalid value: ${JSON.stringify(obj.spec)}: must be an object` }];
  const spec = asObj(obj.spec);
  const actions = strings(spec.validationActions);
  if (!actions.length) causes.push({ reason: 'FieldValueRequired', field: 'spec.validationActions', message: 'Required value' });
  for (const a of actions) if (!['Deny', 'Warn', 'Audit'].includes(a)) causes.push({ reason: 'FieldValueNotSupported', field: 'spec.validationActions', message: `Unsupported value: ${JSON.stringify(a)}: supported values: "Audit", "Deny", "Warn"` });
  if (actions.includes('Deny') && actions.includes('Warn')) causes.push({ reason: 'FieldValueInvalid', field: 'spec.validationActions', message: 'Invalid value: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)' });
  return [...causes, ...validateBindingSpec(spec)];
}

/** What the bindings of both policy kinds share (kube's validateParamRef): `policyName` and `paramRef.parameterNotFoundAction`. */
export function validateBindingSpec(spec: Obj): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!spec.policyName) causes.push({ reason: 'FieldValueRequired', field: 'spec.policyName', message: 'Required value' });
  const ref = asObj(spec.paramRef);
  if (spec.paramRef !== undefined && !['Allow', 'Deny'].includes(String(ref.parameterNotFoundAction))) causes.push({ reason: 'FieldValueNotSupported', field: 'spec.paramRef.parameterNotFoundAction', message: `Unsupported value: ${JSON.stringify(ref.parameterNotFoundAction ?? '')}: supported values: "Allow", "Deny"` });
  return causes;
}

/**
 * Defaults of a policy, validating or mutating (kube's `SetObjectDefaults_ValidatingAdmissionPolicy`
 * and `…_MutatingAdmissionPolicy`, pkg/apis/admissionregistration/v1 and v1beta1): `failurePolicy`
 * Fail; a `matchConstraints` that is set gets `SetDefaults_MatchResources` (matchPolicy
 * Equivalent, empty namespace and object selectors) and `scope: "*"` on every rule; an absent one
 * stays absent (validation requires it).
 */
export function defaultPolicy(obj: KubeObject): void {
  if (obj.spec !== undefined && (typeof obj.spec !== 'object' || obj.spec === null || Array.isArray(obj.spec))) return; // validation refuses it
  const spec = (obj.spec ??= {}) as Obj;
  spec.failurePolicy ??= 'Fail';
  defaultMatchResources(spec.matchConstraints);
}

/**
 * Defaults of a policy binding, validating or mutating (kube's
 * `SetObjectDefaults_ValidatingAdmissionPolicyBinding` / `…_MutatingAdmissionPolicyBinding`): a
 * `matchResources` that is set gets `SetDefaults_MatchResources` and rule scopes; nothing else.
 */
export function defaultPolicyBinding(obj: KubeObject): void {
  if (obj.spec !== null && typeof obj.spec === 'object' && !Array.isArray(obj.spec)) defaultMatchResources((obj.spec as Obj).matchResources);
}

/** kube's `SetDefaults_MatchResources` and `SetDefaults_Rule` of its (exclude) resource rules; anything but an object is left alone. */
function defaultMatchResources(mc: unknown): void {
  if (typeof mc !== 'object' || mc === null || Array.isArray(mc)) return;
  const m = mc as Obj;
  m.matchPolicy ??= 'Equivalent'; m.namespaceSelector ??= {}; m.objectSelector ??= {};
  for (const r of [...asList(m.resourceRules), ...asList(m.excludeResourceRules)]) if (r && typeof r === 'object' && !Array.isArray(r)) r.scope ??= '*';
}

/** A policy's `matchConstraints` or a binding's `matchResources`, compiled. */
export interface Rules { rules: AdmissionRule[]; exclude: AdmissionRule[]; namespaceSelector?: LabelSelector; objectSelector?: LabelSelector; equivalent: boolean }

/** Compiles `MatchResources` (kube's policy/matching). */
export function compileMatch(m: Obj): Rules {
  return {
    rules: asList(m.resourceRules).map(ruleOf), exclude: asList(m.excludeResourceRules).map(ruleOf),
    namespaceSelector: selectorOf(m.namespaceSelector), objectSelector: selectorOf(m.objectSelector), equivalent: m.matchPolicy !== 'Exact',
  };
}

/** One failed validation recorded for the audit log (kube's validationFailureValue). */
interface AuditFailure { message: string; policy: string; binding: string; expressionIndex: number; validationActions: string[] }

/** Parsed policies and bindings by cache entry (a change is a new entry: parsed again). */
const parsedEntries = new WeakMap<object, { obj: KubeObject; match: Rules }>();

/** A policy or binding of the watch cache, parsed with its match compiled, once per stored version. */
export function parsed(e: { json: string }, match: (o: KubeObject) => Rules): { obj: KubeObject; match: Rules } {
  let p = parsedEntries.get(e);
  if (!p) { const obj = JSON.parse(e.json) as KubeObject; p = { obj, match: match(obj) }; parsedEntries.set(e, p); }
  return p;
}

/**
 * Whether a request matches `MatchResources` (kube's policy/matching `Matches`): one of the
 * resource rules (none: any), none of the exclusions, the object and namespace selectors; the
 * resource it matched as (its own, or under `matchPolicy: Equivalent` the one a rule names,
 * `matchResource`), undefined when it does not match.
 */
export function policyMatch(cache: WatchCache, m: Rules, a: WebhookAttributes, apis: ClusterAPIs | undefined): MatchedResource | undefined {
  const matched = m.rules.length ? matchResource(m.rules, a, m.equivalent, apis) : { desc: a.desc };
  if (!matched || (m.exclude.length && matchResource(m.exclude, a, m.equivalent, apis))) return undefined;
  return selectorsMatch(cache, a, m.objectSelector, m.namespaceSelector) ? matched : undefined;
}

/**
 * The parameter objects of a binding for a request (kube's policy/generic `CollectParams`):
 * `[null]` without `paramKind`; the object `paramRef.name`, or those `paramRef.selector`
 * selects, of the policy's `paramKind` in the request's logical cluster (in `paramRef.namespace`,
 * else the request's namespace, for a namespaced kind); `undefined` when none is found.
 */
export function policyParams(cache: WatchCache, apis: ClusterAPIs, a: WebhookAttributes, spec: Obj, bspec: Obj): unknown[] | undefined {
  const paramKind = asObj(spec.paramKind);
  if (!paramKind.kind) return [null];
  const ref = asObj(bspec.paramRef);
  const [group, version] = String(paramKind.apiVersion ?? '').includes('/') ? String(paramKind.apiVersion).split('/') : ['', String(paramKind.apiVersion ?? '')];
  const store = apis.descriptors.find((d) => d.group === group && d.version === version && d.kind === paramKind.kind);
  const found: KubeObject[] = [];
  if (store) {
    const gr = `${store.group || 'core'}/${store.plural}`;
    const ns = store.namespaced ? String(ref.namespace ?? a.namespace ?? '') : '';
    if (ref.name) {
      const e = cache.getEntry(gr, a.cluster, ns, String(ref.name));
      if (e) found.push(JSON.parse(e.json) as KubeObject);
    } else if (ref.selector !== undefined) {
      const sel = labelSelectorFromMetav1(asObj(ref.selector) as LabelSelectorV1);
      for (const e of cache.list(gr, a.cluster, store.namespaced ? ns : undefined)) if (matchesLabels(sel, e.labels ?? {})) found.push(JSON.parse(e.json) as KubeObject);
    }
  }
  return found.length ? found : undefined;
}

/**
 * The CEL activation of one policy evaluation (kube's policy/generic activation): `object`
 * (null on DELETE), `oldObject`, `request`, `params`, `namespaceObject`, `authorizer` (the
 * request's user in its logical cluster, checked with `authorize`; kube's
 * `library.NewAuthorizerVal`/`NewResourceAuthorizerVal`), and `variables` evaluated in order,
 * each seeing the ones before it. `run` evaluates an expression in it (compiled in the mutation
 * environment with `mutation`), each limited to kube's `PerCallLimit` and all of them (variables,
 * conditions, validations, messages) sharing one `RuntimeCELCostBudget` (kube: per policy
 * evaluation, k8s.io/apiserver/pkg/admission/plugin/cel/filter.go `ForInput`).
 * @throws {Error} when a variable fails to evaluate
 * @throws {CelCostLimitError} from `run`, when an expression passes the per-call limit
 * @throws {CelBudgetExhaustedError} from `run`, when the evaluation's budget is spent
 */
export function policyActivation(cache: WatchCache, a: WebhookAttributes, spec: Obj, param: unknown, mutation = false, authorize?: AdmissionAuthorize): (expression: string) => unknown {
  const request = {
    kind: { group: a.desc.group, version: a.desc.version, kind: a.desc.kind }, resource: { group: a.desc.group, version: a.desc.version, resource: a.desc.plural },
    subResource: a.subresource, name: a.name, namespace: a.namespace, operation: a.operation, dryRun: a.dryRun,
    userInfo: { username: a.user.name, uid: a.user.uid ?? '', groups: a.user.groups, extra: a.user.extra ?? {} },
  };
  const vars: Record<string, unknown> = {
    object: toCel(a.operation === 'DELETE' ? null : a.object ?? null, undefined), oldObject: toCel(a.oldObject ?? null, undefined),
    request: toCel(request, undefined), params: toCel(param, undefined), namespaceObject: toCel(namespaceObject(cache, a), undefined),
    authorizer: celAuthorizer(authorize, a.user, a.cluster, { group: a.desc.group, resource: a.desc.plural, subresource: a.subresource, namespace: a.namespace, name: a.name }),
  };
  const variables: Record<string, unknown> = Object.create(null);
  vars.variables = variables;
  const budget = new CostBudget();
  const run = (expression: string): unknown => budget.evaluate(compileExpression(expression, mutation), vars);
  for (const v of asList(spec.variables)) variables[String(v.name)] = run(String(v.expression));
  return run;
}

/** The validating admission policies of a shard (see the module comment). */
export class ValidatingPolicies implements WebhookAdmission {
  constructor(private readonly deps: {
    cache: WatchCache;
    /** The APIs of a logical cluster (to find a policy's `paramKind`). */
    apis: (cluster: string) => ClusterAPIs;
    /** The shard's authorizer, for CEL's `authorizer` (without it every check is an errored decision). */
    authorize?: AdmissionAuthorize;
  }) {}

  async mutate(a: WebhookAttributes): Promise<KubeObject | undefined> { return a.object; }

  async validate(a: WebhookAttributes): Promise<void> {
    const bindings = this.deps.cache.list(POLICY_BINDINGS_GR, a.cluster);
    if (!bindings.length) return;
    const auditFailures: AuditFailure[] = [];
    try {
      for (const be of bindings) {
        const binding = parsed(be, (o) => compileMatch(asObj(asObj(o.spec).matchResources)));
        const bspec = asObj(binding.obj.spec);
        const pe = this.deps.cache.getEntry(POLICIES_GR, a.cluster, '', String(bspec.policyName ?? ''));
        if (!pe) continue;
        const policy = parsed(pe, (o) => compileMatch(asObj(asObj(o.spec).matchConstraints)));
        const apis = this.deps.apis(a.cluster);
        const matched = policyMatch(this.deps.cache, policy.match, a, apis);
        if (!matched) continue;
        if (bspec.matchResources !== undefined && !policyMatch(this.deps.cache, binding.match, a, apis)) continue;
        // The policy sees the object in the version it matched (Equivalent), as kube converts it.
        this.evaluate(await versionedAttributes(a, matched), policy.obj, binding.obj, auditFailures);
      }
    } finally {
      // The Audit action: kube's `validation.policy.admission.k8s.io/validation_failure`
      // annotation, the failures of every policy and binding as one JSON list.
      if (auditFailures.length) a.audit?.('validation.policy.admission.k8s.io/validation_failure', JSON.stringify(auditFailures));
    }
  }

  private evaluate(a: WebhookAttributes, policy: KubeObject, binding: KubeObject, auditFailures: AuditFailure[]): void {
    const spec = asObj(policy.spec);
    const bspec = asObj(binding.spec);
    const actions = strings(bspec.validationActions);
    const failClosed = spec.failurePolicy !== 'Ignore';
    const pname = policy.metadata.name; const bname = binding.metadata.name;
    const refuse = (message: string, code = 422, reason = 'Invalid') => new StatusError(code, reason, `ValidatingAdmissionPolicy '${pname}' with binding '${bname}' denied request: ${message}`);
    const params = policyParams(this.deps.cache, this.deps.apis(a.cluster), a, spec, bspec);
    if (!params) {
      if (asObj(bspec.paramRef).parameterNotFoundAction === 'Allow') return;
      if (actions.includes('Deny')) throw refuse(`failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction`, 403, 'Forbidden');
      return;
    }
    for (const p of params) {
      let run: (expression: string) => unknown;
      try {
        run = policyActivation(this.deps.cache, a, spec, p, false, this.deps.authorize);
        if (!asList(spec.matchConditions).every((c) => run(String(c.expression)) === true)) continue;
      } catch (err) {
        if (failClosed && actions.includes('Deny')) throw refuse(`expression evaluation failed: ${(err as Error).message.split('\n')[0]}`);
        continue;
      }
      for (const [index, v] of asList(spec.validations).entries()) {
        let ok: unknown;
        let failure: string | undefined;
        try { ok = run(String(v.expression)); } catch (err) {
          if (!failClosed) continue;
          ok = false;
          // A spent budget fails the policy evaluation itself (kube: the ForInput error), not one expression.
          failure = err instanceof CelBudgetExhaustedError ? err.message : `expression '${String(v.expression)}' resulted in error: ${(err as Error).message.split('\n')[0]}`;
        }
        if (ok === true) continue;
        let message = typeof v.message === 'string' && v.message ? v.message : failure ?? `failed expression: ${String(v.expression)}`;
        if (typeof v.messageExpression === 'string') {
          try { const m = run(v.messageExpression); if (typeof m === 'string' && m.trim() && !m.includes('\n')) message = m; } catch { /* kube keeps the static message */ }
        }
        const reason = String(v.reason ?? 'Invalid');
        if (actions.includes('Warn')) a.warnings?.push(`Validation failed for ValidatingAdmissionPolicy '${pname}' with binding '${bname}': ${message}`);
        if (actions.includes('Audit')) auditFailures.push({ message, policy: pname ?? '', binding: bname ?? '', expressionIndex: index, validationActions: actions });
        if (actions.includes('Deny')) throw refuse(message, REASON_CODES[reason] ?? 422, reason);
      }
      // auditAnnotations: `<policy>/<key>` with the value of its expression (null: none).
      for (const an of asList(spec.auditAnnotations)) {
        try {
          const value = run(String(an.valueExpression));
          if (typeof value === 'string' && value) a.audit?.(`${pname}/${String(an.key)}`, value);
        } catch { /* kube: an annotation that cannot be evaluated is left out (failurePolicy applies to validations) */ }
      }
    }
  }
}
