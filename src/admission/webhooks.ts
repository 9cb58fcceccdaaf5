/**
 * Dynamic admission webhooks per logical cluster, with kube-apiserver's semantics
 * (https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/;
 * k8s.io/apiserver/pkg/admission/plugin/webhook): the MutatingWebhookConfigurations and
 * ValidatingWebhookConfigurations of the request's logical cluster — and, for a resource bound
 * from an APIExport, those of the export's workspace (kcp's "webhooks for bound resources") — are
 * called with an `admission.k8s.io/v1` AdmissionReview over HTTPS:
 *
 * - matching: `rules` (operations, apiGroups, apiVersions, resources with subresources and
 *   wildcards, scope), `matchPolicy` (Equivalent: any served version of the group/resource),
 *   `namespaceSelector` (the labels of the object's namespace, or of a Namespace itself),
 *   `objectSelector` (the new or the old object's labels), `matchConditions` (CEL over
 *   `object`, `oldObject`, `request` and `authorizer`, ./celauthorizer.ts; an evaluation error
 *   is a call failure);
 * - mutating webhooks first, in order, each seeing the previous one's result (JSON patches),
 *   with `reinvocationPolicy: IfNeeded` called once more when a later webhook changed the
 *   object; then schema validation; then validating webhooks;
 * - `failurePolicy` (Fail, the default: 500 `failed calling webhook`; Ignore: skipped),
 *   `timeoutSeconds` (default 10), `sideEffects` (a dry-run request is refused by a webhook with
 *   side effects), a denial answers the webhook's status (code ≥ 400, default 400) with
 *   `admission webhook "<name>" denied the request: <message>`; warnings become `Warning`
 *   headers.
 *
 * A webhook of one workspace never sees another workspace's requests: configurations are read
 * per logical cluster. The configurations themselves are never sent to webhooks (kube's rule,
 * so that a broken webhook cannot lock its own configuration). `clientConfig.service` is
 * refused when a configuration is written: kcp-ts has no Services to route to; use `url`.
 */
import { randomUUID } from 'node:crypto';
import * as jsonPatch from 'rfc6902';
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import { labelSelectorFromMetav1, type LabelSelector, type LabelSelectorV1 } from '../apimachinery/labels.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { WebhookAdmission, WebhookAttributes } from '../registry/store.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import type { WatchCache } from '../storage/watchcache.js';
import { postJSON, validateWebhookClientConfig, webhookEndpoint, type WebhookEndpoint } from '../apimachinery/webhookclient.js';
import type { ParseResult } from '@marcbachmann/cel-js';
import { compileExpression, matchResource, ruleOf, selectorOf, selectorsMatch, unversioned, versionedAttributes, type AdmissionRule, type MatchedResource } from './match.js';
import { toCel } from '../apiextensions/cel.js';
import { CostBudget } from '../apiextensions/celcost.js';
import { celAuthorizer, type AdmissionAuthorize } from './celauthorizer.js';
import { newReinvocationContext, reinvocationState, type ReinvocationContext } from './index.js';
import { asObj } from '../apimachinery/objects.js';

/** Watch-cache group/resources of the configurations. */
export const VALIDATING_WEBHOOKS_GR = 'admissionregistration.k8s.io/validatingwebhookconfigurations';
export const MUTATING_WEBHOOKS_GR = 'admissionregistration.k8s.io/mutatingwebhookconfigurations';
/** API paths of the configurations, as replicated between shards (ShardDirectory `replicate`). */
export const WEBHOOK_CONFIGURATION_PATHS = ['apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', 'apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations'];
const PATH_OF_GR: Record<string, string> = { [VALIDATING_WEBHOOKS_GR]: WEBHOOK_CONFIGURATION_PATHS[0]!, [MUTATING_WEBHOOKS_GR]: WEBHOOK_CONFIGURATION_PATHS[1]! };

type Obj = Record<string, unknown>;
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v as Obj[] : []);


/** One webhook of a configuration, compiled. */
interface Webhook {
  name: string;
  /** Configuration it comes from (for messages). */
  config: string;
  endpoint: WebhookEndpoint;
  rules: AdmissionRule[];
  failurePolicy: 'Fail' | 'Ignore';
  matchPolicy: 'Exact' | 'Equivalent';
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  sideEffects: string;
  timeoutMs: number;
  reinvoke: boolean;
  /** `matchConditions`, compiled (all must be true for the webhook to be called). */
  conditions: { name: string; program: ParseResult }[];
}


/** Defaults kube's SetDefaults applies to a webhook of a configuration (admissionregistration/v1 defaults.go). */
export function defaultWebhookConfiguration(obj: KubeObject, mutating: boolean): void {
  for (const w of asList(obj.webhooks)) {
    if (!w || typeof w !== 'object' || Array.isArray(w)) continue; // validation refuses it
    w.failurePolicy ??= 'Fail';
    w.matchPolicy ??= 'Equivalent';
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    w.timeoutSeconds ??= 10;
    if (mutating) w.reinvocationPolicy ??= 'Never';
    for (const r of asList(w.rules)) if (r && typeof r === 'object' && !Array.isArray(r)) r.scope ??= '*';
    const service = asObj(w.clientConfig).service;
    if (service && typeof service === 'object' && !Array.isArray(service)) (service as Record<string, unknown>).port ??= 443;
  }
}

/**
 * Validation of a webhook configuration (kube's ValidateValidatingWebhookConfiguration /
 * ValidateMutatingWebhookConfiguration, the parts a client can get wrong), plus kcp-ts's refusal
 * of `clientConfig.service`.
 */
export function validateWebhookConfiguration(obj: KubeObject, mutating: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const bad = (field: string, message: string, reason = 'FieldValueInvalid') => causes.push({ reason, field, message });
  const names = new Set<string>();
  if (obj.webhooks !== undefined && obj.webhooks !== null && !Array.isArray(obj.webhooks)) bad('webhooks', `Invalid value: ${JSON.stringify(obj.webhooks)}: must be a list`);
  asList(obj.webhooks).forEach((w, i) => {
    const at = `webhooks[${i}]`;
    if (!w || typeof w !== 'object' || Array.isArray(w)) { bad(at, `Invalid value: ${JSON.stringify(w)}: must be an object`); return; }
    for (const list of ['rules', 'matchConditions', 'admissionReviewVersions'] as const) {
      if (w[list] !== undefined && w[list] !== null && !Array.isArray(w[list])) bad(`${at}.${list}`, `Invalid value: ${JSON.stringify(w[list])}: must be a list`);
    }
    const name = String(w.name ?? '');
    if (!name) bad(`${at}.name`, 'Required value', 'FieldValueRequired');
    else if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(name)) bad(`${at}.name`, `Invalid value: ${JSON.stringify(name)}: should be a domain with at least three segments separated by dots`);
    if (names.has(name)) bad(`${at}.name`, `Duplicate value: ${JSON.stringify(name)}`, 'FieldValueDuplicate');
    names.add(name);
    causes.push(...validateWebhookClientConfig(w.clientConfig, `${at}.clientConfig`));
    const versions = asList(w.admissionReviewVersions) as unknown as string[];
    if (!versions.length) bad(`${at}.admissionReviewVersions`, 'Required value: must specify one of v1, v1beta1', 'FieldValueRequired');
    else if (!versions.includes('v1')) bad(`${at}.admissionReviewVersions`, `Unsupported value: ${JSON.stringify(versions)}: must include at least one of v1 (this server sends v1)`, 'FieldValueNotSupported');
    if (!['None', 'NoneOnDryRun'].includes(String(w.sideEffects))) bad(`${at}.sideEffects`, `Unsupported value: ${JSON.stringify(w.sideEffects ?? '')}: supported values: "None", "NoneOnDryRun"`, 'FieldValueNotSupported');
    if (!['Fail', 'Ignore'].includes(String(w.failurePolicy))) bad(`${at}.failurePolicy`, `Unsupported value: ${JSON.stringify(w.failurePolicy)}: supported values: "Fail", "Ignore"`, 'FieldValueNotSupported');
    if (!['Exact', 'Equivalent'].includes(String(w.matchPolicy))) bad(`${at}.matchPolicy`, `Unsupported value: ${JSON.stringify(w.matchPolicy)}: supported values: "Equivalent", "Exact"`, 'FieldValueNotSupported');
    if (mutating && !['Never', 'IfNeeded'].includes(String(w.reinvocationPolicy))) bad(`${at}.reinvocationPolicy`, `Unsupported value: ${JSON.stringify(w.reinvocationPolicy)}: supported values: "Never", "IfNeeded"`, 'FieldValueNotSupported');
    const t = Number(w.timeoutSeconds);
    if (!Number.isInteger(t) || t < 1 || t > 30) bad(`${at}.timeoutSeconds`, `Invalid value: ${JSON.stringify(w.timeoutSeconds)}: the timeout value must be between 1 and 30 seconds`);
    asList(w.rules).forEach((r, j) => {
      const ops = asList(r.operations) as unknown as string[];
      for (const op of ops) if (!['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(op)) bad(`${at}.rules[${j}].operations`, `Unsupported value: ${JSON.stringify(op)}: supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`, 'FieldValueNotSupported');
      if (!['*', 'Cluster', 'Namespaced'].includes(String(r.scope))) bad(`${at}.rules[${j}].scope`, `Unsupported value: ${JSON.stringify(r.scope)}: supported values: "*", "Cluster", "Namespaced"`, 'FieldValueNotSupported');
      for (const [field, list] of [['apiGroups', r.apiGroups], ['apiVersions', r.apiVersions], ['resources', r.resources]] as const) {
        if (!asList(list).length) bad(`${at}.rules[${j}].${field}`, 'Required value', 'FieldValueRequired');
      }
    });
    const conditionNames = new Set<string>();
    asList(w.matchConditions).forEach((c, j) => {
      const name = String(c.name ?? '');
      if (!name) bad(`${at}.matchConditions[${j}].name`, 'Required value', 'FieldValueRequired');
      if (conditionNames.has(name)) bad(`${at}.matchConditions[${j}].name`, `Duplicate value: ${JSON.stringify(name)}`, 'FieldValueDuplicate');
      conditionNames.add(name);
      if (typeof c.expression !== 'string' || !c.expression.trim()) bad(`${at}.matchConditions[${j}].expression`, 'Required value', 'FieldValueRequired');
      else {
        try { compileExpression(c.expression); } catch (err) { bad(`${at}.matchConditions[${j}].expression`, `Invalid value: ${JSON.stringify(c.expression)}: ${(err as Error).message}`); }
      }
    });
    if (asList(w.matchConditions).length > 64) bad(`${at}.matchConditions`, 'Too many: must have at most 64 items', 'FieldValueTooMany');
    for (const sel of ['namespaceSelector', 'objectSelector'] as const) {
      try { labelSelectorFromMetav1(asObj(w[sel]) as LabelSelectorV1); } catch (err) { bad(`${at}.${sel}`, `Invalid value: ${(err as Error).message}`); }
    }
  });
  return causes;
}

/** Compiled configurations, by cache entry (a configuration changes: a new entry, a new compile). */
const compiled = new WeakMap<object, Webhook[]>();

function compile(config: KubeObject, mutating: boolean): Webhook[] {
  return asList(config.webhooks).map((w) => {
    return {
      name: String(w.name), config: config.metadata.name ?? '', endpoint: webhookEndpoint(w.clientConfig),
      rules: asList(w.rules).map(ruleOf),
      failurePolicy: w.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
      matchPolicy: w.matchPolicy === 'Exact' ? 'Exact' : 'Equivalent',
      namespaceSelector: selectorOf(w.namespaceSelector), objectSelector: selectorOf(w.objectSelector),
      sideEffects: String(w.sideEffects ?? 'None'),
      timeoutMs: Math.min(30, Math.max(1, Number(w.timeoutSeconds ?? 10))) * 1000,
      reinvoke: mutating && w.reinvocationPolicy === 'IfNeeded',
      conditions: asList(w.matchConditions).flatMap((c) => {
        try { return [{ name: String(c.name), program: compileExpression(String(c.expression)) }]; } catch { return []; }
      }),
    };
  });
}


/** What is sent and decided for one request (see WebhookAttributes). */
export class Webhooks implements WebhookAdmission {
  constructor(private readonly deps: {
    cache: WatchCache;
    /** The logical cluster of the APIExport a bound resource (descriptor with `identity`) of `cluster` comes from. */
    exportClusterOf?: (cluster: string, desc: ResourceDescriptor) => string | undefined;
    /**
     * The configurations (API path as in WEBHOOK_CONFIGURATION_PATHS) of a logical cluster of
     * another shard, as replicated here; empty for this shard's own logical clusters.
     */
    remoteConfigurations?: (path: string, cluster: string) => readonly KubeObject[];
    /** The APIs of a logical cluster: `matchPolicy: Equivalent` converts to the version a rule names. */
    apis?: (cluster: string) => ClusterAPIs;
    /** The shard's authorizer, for the `authorizer` of `matchConditions` (without it every check is an errored decision). */
    authorize?: AdmissionAuthorize;
  }) {}

  private webhooks(gr: string, cluster: string, desc: ResourceDescriptor, mutating: boolean): Webhook[] {
    const clusters = [cluster];
    if (desc.identity) { const e = this.deps.exportClusterOf?.(cluster, desc); if (e && e !== cluster) clusters.push(e); }
    const out: Webhook[] = [];
    for (const c of clusters) {
      for (const e of this.deps.cache.list(gr, c)) {
        let w = compiled.get(e);
        if (!w) { w = compile(JSON.parse(e.json) as KubeObject, mutating); compiled.set(e, w); }
        out.push(...w);
      }
      // The export's workspace on another shard: its configurations as replicated here.
      if (c === cluster || !this.deps.remoteConfigurations) continue;
      for (const o of this.deps.remoteConfigurations(PATH_OF_GR[gr]!, c)) {
        let w = compiled.get(o);
        if (!w) { w = compile(o, mutating); compiled.set(o, w); }
        out.push(...w);
      }
    }
    return out;
  }

  /**
   * The webhooks of a request and the resource each matched it as (`matchResource`: its own, or
   * under `matchPolicy: Equivalent` the equivalent one a rule names), when the selectors pass.
   */
  private matching(gr: string, a: WebhookAttributes, mutating: boolean): { w: Webhook; m: MatchedResource }[] {
    const out: { w: Webhook; m: MatchedResource }[] = [];
    let apis: ClusterAPIs | undefined;
    for (const w of this.webhooks(gr, a.cluster, a.desc, mutating)) {
      const m = matchResource(w.rules, a, w.matchPolicy === 'Equivalent', apis ??= this.deps.apis?.(a.cluster));
      if (m && selectorsMatch(this.deps.cache, a, w.objectSelector, w.namespaceSelector)) out.push({ w, m });
    }
    return out;
  }

  /**
   * Runs the matching mutating webhooks; resolves to the object to continue with. Reinvocation as
   * kube's mutating dispatcher (plugin/webhook/mutating/dispatcher.go): a webhook that changes the
   * object makes the `IfNeeded` webhooks (and policies) that ran before it run again in the
   * chain's second run (src/admission/index.ts), which calls only those.
   */
  async mutate(a: WebhookAttributes, rc: ReinvocationContext = newReinvocationContext()): Promise<KubeObject | undefined> {
    const hooks = this.matching(MUTATING_WEBHOOKS_GR, a, true);
    if (!hooks.length) return a.object;
    const state = reinvocationState(rc, 'MutatingAdmissionWebhook');
    // Changed by a reinvoked policy since the webhooks ran: every IfNeeded webhook runs again.
    if (rc.isReinvoke && state.changedSinceLastInvocation(a.object)) state.requireReinvokingPreviouslyInvoked();
    let obj = a.object;
    try {
      for (const { w, m } of hooks) {
        const key = `${w.config}\u0000${w.name}`;
        if (rc.isReinvoke && !state.shouldReinvoke(key)) continue;
        const next = await this.call(w, m, { ...a, object: obj }, true);
        if (next !== undefined && JSON.stringify(next) !== JSON.stringify(obj)) {
          obj = next;
          state.requireReinvokingPreviouslyInvoked();
          rc.shouldReinvoke = true;
        }
        if (w.reinvoke) state.addReinvocableToPreviouslyInvoked(key);
      }
    } finally {
      state.setLastInvocationOutput(obj);
    }
    return obj;
  }

  /** Runs the matching validating webhooks (in parallel, as kube does); throws the first refusal. */
  async validate(a: WebhookAttributes): Promise<void> {
    const hooks = this.matching(VALIDATING_WEBHOOKS_GR, a, false);
    if (!hooks.length) return;
    const results = await Promise.allSettled(hooks.map(({ w, m }) => this.call(w, m, a, false)));
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }

  /**
   * Sends one AdmissionReview; resolves to the patched object (mutating) or undefined. A refusal
   * or, with failurePolicy Fail, an error rejects with the StatusError to answer.
   */
  private async call(w: Webhook, m: MatchedResource, a: WebhookAttributes, mutating: boolean): Promise<KubeObject | undefined> {
    const uid = randomUUID();
    const r = a.desc;
    // The webhook sees the version it matched (Equivalent); `requestKind` says what was sent.
    const d = m.desc;
    const versioned = await versionedAttributes(a, m);
    const object = a.operation === 'DELETE' ? undefined : versioned.object;
    const oldObject = versioned.oldObject;
    const request = {
      uid, kind: { group: d.group, version: d.version, kind: d.kind }, resource: { group: d.group, version: d.version, resource: d.plural },
      ...(a.subresource ? { subResource: a.subresource } : {}),
      requestKind: { group: r.group, version: r.version, kind: r.kind }, requestResource: { group: r.group, version: r.version, resource: r.plural },
      ...(a.subresource ? { requestSubResource: a.subresource } : {}),
      name: a.name, ...(a.namespace ? { namespace: a.namespace } : {}), operation: a.operation,
      userInfo: { username: a.user.name, ...(a.user.uid ? { uid: a.user.uid } : {}), groups: a.user.groups, ...(a.user.extra ? { extra: a.user.extra } : {}) },
      object: object ?? null, oldObject: oldObject ?? null, dryRun: a.dryRun,
      options: { apiVersion: 'meta.k8s.io/v1', kind: a.operation === 'CREATE' ? 'CreateOptions' : a.operation === 'UPDATE' ? 'UpdateOptions' : 'DeleteOptions' },
    };
    // matchConditions: all true, or the webhook is not called; an error is a call failure.
    if (w.conditions.length) {
      // `authorizer.requestResource` is the resource the webhook sees (kube: the versioned attributes).
      const authorizer = celAuthorizer(this.deps.authorize, a.user, a.cluster, { group: d.group, resource: d.plural, subresource: a.subresource, namespace: a.namespace, name: a.name });
      const vars = { object: toCel(request.object, undefined), oldObject: toCel(request.oldObject, undefined), request: toCel(request, undefined), authorizer };
      // Each condition is limited to kube's PerCallLimit; together they share one budget.
      const budget = new CostBudget();
      for (const c of w.conditions) {
        let result: unknown;
        try { result = budget.evaluate(c.program, vars); } catch (err) {
          if (w.failurePolicy === 'Ignore') return undefined;
          throw new StatusError(500, 'InternalError', `Internal error occurred: failed calling webhook "${w.name}": match condition "${c.name}": ${(err as Error).message.split('\n')[0]}`);
        }
        if (result !== true) return undefined;
      }
    }
    if (a.dryRun && w.sideEffects !== 'None' && w.sideEffects !== 'NoneOnDryRun') {
      throw new StatusError(400, 'BadRequest', `admission webhook "${w.name}" does not support dry run`);
    }
    const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
    let response: Obj;
    try {
      response = await post(w, review);
      if (response.uid !== uid) throw new Error(`expected response.uid="${uid}", got "${String(response.uid ?? '')}"`);
    } catch (err) {
      if (w.failurePolicy === 'Ignore') return undefined;
      throw new StatusError(500, 'InternalError', `Internal error occurred: failed calling webhook "${w.name}": ${(err as Error).message}`);
    }
    for (const warning of asList(response.warnings) as unknown as string[]) a.warnings?.push(String(warning));
    if (response.allowed !== true) {
      const st = asObj(response.status);
      const code = Number(st.code) >= 400 ? Number(st.code) : 400;
      const deniedBy = `admission webhook "${w.name}" denied the request`;
      const message = st.message ? `${deniedBy}: ${st.message}` : st.reason ? `${deniedBy}: ${st.reason}` : `${deniedBy} without explanation`;
      throw new StatusError(code, String(st.reason ?? ''), message);
    }
    if (!mutating || !response.patch || a.operation === 'DELETE') return undefined;
    try {
      if (response.patchType !== 'JSONPatch') throw new Error(`unsupported patch type "${String(response.patchType)}"`);
      const ops = JSON.parse(Buffer.from(String(response.patch), 'base64').toString()) as jsonPatch.Operation[];
      const next = structuredClone(object) as KubeObject;
      const errors = jsonPatch.applyPatch(next, ops).filter((e) => e !== null);
      if (errors.length) throw new Error(`the JSON patch could not be applied: ${errors[0]!.message}`);
      // Patched in the webhook's version: back to the request's.
      return await unversioned(next, m);
    } catch (err) {
      if (w.failurePolicy === 'Ignore') return undefined;
      throw new StatusError(500, 'InternalError', `Internal error occurred: failed calling webhook "${w.name}": ${(err as Error).message}`);
    }
  }
}


/** POSTs the review; resolves to its `response`. */
async function post(w: Webhook, review: object): Promise<Obj> {
  const parsed = await postJSON(w.endpoint, review, w.timeoutMs).catch((err: Error) => { throw new Error(`failed to call webhook: ${err.message}`); });
  if (parsed.kind !== 'AdmissionReview' || !parsed.response) throw new Error('the response is not an AdmissionReview with a response');
  return asObj(parsed.response);
}
