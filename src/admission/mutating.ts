/**
 * MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1beta1)
 * per logical cluster, with kube-apiserver 1.34's semantics
 * (https://kubernetes.io/docs/reference/access-authn-authz/mutating-admission-policy/;
 * k8s.io/apiserver/pkg/admission/plugin/policy/mutating):
 *
 * - a binding (`policyName`, optional `paramRef` and `matchResources`) makes its policy apply;
 *   matching, params (`paramKind`, `paramRef`, `parameterNotFoundAction`), `variables` and
 *   `matchConditions` are the validating policies' (./policies.ts);
 * - `mutations` run in order, each on the result of the one before, with CEL over `object`,
 *   `oldObject`, `request`, `params`, `namespaceObject`, `variables` and `authorizer`
 *   (./celauthorizer.ts):
 *   `ApplyConfiguration` returns an `Object{…}` merged into the object with server-side apply's
 *   merge (structured-merge-diff by the kind's schema, patch/smd.go; a patch that sets an atomic
 *   list, map or struct is refused as kube does), `JSONPatch` returns a list of
 *   `JSONPatch{op, path, value, from}` applied as RFC 6902 (patch/json_patch.go);
 * - `failurePolicy` (Fail, the default: 422 `<resource> "<name>" is invalid: policy '<p>' with
 *   binding '<b>' denied request: …`, as kube answers; Ignore: the policy is skipped) covers
 *   expressions that fail and patches that cannot be applied — kube's own refusal of the
 *   documentation's sidecar example (`args` is atomic) included;
 * - `reinvocationPolicy: IfNeeded`: run once more when a later policy or webhook changed the
 *   object (kube's reinvocation, ./index.ts). DELETE requests are not mutated (no object).
 *
 * They run before mutating webhooks, as kube's plugin order (./index.ts).
 */
import * as jsonPatch from 'rfc6902';
import { StatusError, type StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { TypeResolver, merge, resourceSchemaResolver } from '../apimachinery/fieldmanager/index.js';
import type { TypeNode } from '../apimachinery/fieldmanager/typed.js';
import type { ClusterAPIs } from '../apiextensions/registry.js';
import type { ResourceDescriptor } from '../apis/types.js';
import type { WebhookAttributes } from '../registry/store.js';
import type { WatchCache } from '../storage/watchcache.js';
import { newReinvocationContext, reinvocationState, type AdmissionStep, type ReinvocationContext } from './index.js';
import type { AdmissionAuthorize } from './celauthorizer.js';
import { celToJSON, unversioned, versionedAttributes } from './match.js';
import { compileMatch, defaultPolicy, parsed, policyActivation, policyMatch, policyParams, validateBindingSpec, validatePolicySpec } from './policies.js';
import { asObj } from '../apimachinery/objects.js';

/** Watch-cache group/resources of mutating policies and their bindings. */
export const MUTATING_POLICIES_GR = 'admissionregistration.k8s.io/mutatingadmissionpolicies';
export const MUTATING_POLICY_BINDINGS_GR = 'admissionregistration.k8s.io/mutatingadmissionpolicybindings';

type Obj = Record<string, unknown>;
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v as Obj[] : []);
const PATCH_FIELDS: Record<string, string> = { ApplyConfiguration: 'applyConfiguration', JSONPatch: 'jsonPatch' };

/**
 * Validation of a MutatingAdmissionPolicy (kube's validateMutatingAdmissionPolicySpec in
 * pkg/apis/admissionregistration/validation): what validating policies check (./policies.ts)
 * plus `mutations` (at least one; `patchType` ApplyConfiguration or JSONPatch with its own
 * field set and the other unset; the expression compiles) and `reinvocationPolicy`.
 */
export function validateMutatingPolicy(obj: KubeObject): StatusCause[] {
  return validatePolicySpec(obj, true, (spec, bad, expr) => {
    if (spec.mutations !== undefined && spec.mutations !== null && !Array.isArray(spec.mutations)) bad('spec.mutations', `Invalid value: ${JSON.stringify(spec.mutations)}: must be a list`);
    else if (!asList(spec.mutations).length) bad('spec.mutations', 'Required value: mutations must contain at least one item', 'FieldValueRequired');
    asList(spec.mutations).forEach((m0, i) => {
      const at = `spec.mutations[${i}]`;
      if (!m0 || typeof m0 !== 'object' || Array.isArray(m0)) { bad(at, `Invalid value: ${JSON.stringify(m0)}: must be an object`); return; }
      const m = m0;
      const field = PATCH_FIELDS[String(m.patchType)];
      if (m.patchType === undefined || m.patchType === '') bad(`${at}.patchType`, 'Required value', 'FieldValueRequired');
      else if (!field) bad(`${at}.patchType`, `Unsupported value: ${JSON.stringify(m.patchType)}: supported values: "ApplyConfiguration", "JSONPatch"`, 'FieldValueNotSupported');
      for (const [type, f] of Object.entries(PATCH_FIELDS)) {
        if (f === field) {
          if (m[f] === undefined || m[f] === null) bad(`${at}.${f}`, `Required value: ${f} is required when patchType is ${type}`, 'FieldValueRequired');
          else expr(`${at}.${f}.expression`, asObj(m[f]).expression);
        } else if (field && m[f] !== undefined && m[f] !== null) bad(`${at}.${f}`, `Forbidden: must not be set when patchType is ${String(m.patchType)}`, 'FieldValueForbidden');
      }
    });
    if (spec.reinvocationPolicy === undefined || spec.reinvocationPolicy === null || spec.reinvocationPolicy === '') bad('spec.reinvocationPolicy', 'Required value', 'FieldValueRequired');
    else if (!['Never', 'IfNeeded'].includes(String(spec.reinvocationPolicy))) bad('spec.reinvocationPolicy', `Unsupported value: ${JSON.stringify(spec.reinvocationPolicy ?? '')}: supported values: "IfNeeded", "Never"`, 'FieldValueNotSupported');
  });
}

/**
 * Defaults of a MutatingAdmissionPolicy (kube's `SetObjectDefaults_MutatingAdmissionPolicy`,
 * pkg/apis/admissionregistration/v1beta1): the validating policy's (`defaultPolicy`). kube leaves
 * `reinvocationPolicy` to the client: validation requires it.
 */
export function defaultMutatingPolicy(obj: KubeObject): void {
  defaultPolicy(obj);
}

/** Validation of a MutatingAdmissionPolicyBinding (kube's validateMutatingAdmissionPolicyBindingSpec: policyName, paramRef). */
export function validateMutatingPolicyBinding(obj: KubeObject): StatusCause[] {
  if (obj.spec !== undefined && (obj.spec === null || typeof obj.spec !== 'object' || Array.isArray(obj.spec))) return [{ reason: 'FieldValueInvalid', field: 'spec', message: `Invalid value: ${JSON.stringify(obj.spec)}: must be an object` }];
  return validateBindingSpec(asObj(obj.spec));
}

/** Structured-merge types by descriptor (the kind's OpenAPI schema; untyped without one). */
const types = new WeakMap<ResourceDescriptor, TypeNode>();

function typeOf(desc: ResourceDescriptor): TypeNode {
  let t = types.get(desc);
  if (!t) {
    const resolver = resourceSchemaResolver(desc);
    t = resolver ? new TypeResolver(resolver).root() : { kind: 'deduced' };
    types.set(desc, t);
  }
  return t;
}

/**
 * The paths of an apply configuration that set an atomic list, map or struct (kube's
 * `findAtomics` of patch/smd.go: merging would silently drop what the patch leaves out).
 * Untyped lists are atomic, untyped maps granular, as structured-merge-diff deduces them.
 */
export function atomicPaths(v: unknown, t: TypeNode, path = ''): string[] {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    if (t.kind === 'map' && t.atomic) return [path || '.'];
    if (t.kind !== 'map' && t.kind !== 'deduced') return [];
    return Object.entries(v as Obj).flatMap(([k, x]) => atomicPaths(x, t.kind === 'map' ? (t.fields.get(k) ?? t.elem)?.() ?? { kind: 'deduced' } : t, `${path}.${k}`));
  }
  if (Array.isArray(v)) {
    if (t.kind === 'deduced' || (t.kind === 'list' && t.atomic)) return [path];
    if (t.kind !== 'list') return [];
    return v.flatMap((x, i) => atomicPaths(x, t.elem(), `${path}[${i}]`));
  }
  return [];
}

/**
 * Applies one mutation's result to the object (kube's ApplyConfiguration and JSONPatch patchers).
 * @throws {Error} when the result has the wrong shape or cannot be applied
 */
export function applyMutation(object: KubeObject, patchType: string, result: unknown, desc: ResourceDescriptor): KubeObject {
  if (patchType === 'ApplyConfiguration') {
    const patch = celToJSON(result);
    if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw new Error(`apply configuration must evaluate to an Object, got ${JSON.stringify(patch)}`);
    const p = { ...(patch as Obj), apiVersion: object.apiVersion, kind: object.kind };
    const t = typeOf(desc);
    const atomics = atomicPaths(p, t);
    if (atomics.length) throw new Error(`error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: ${atomics.join(', ')}`);
    return merge(object, p, t) as KubeObject;
  }
  const ops = celToJSON(result);
  if (!Array.isArray(ops)) throw new Error(`JSON patch must evaluate to a list of JSONPatch, got ${JSON.stringify(ops)}`);
  const next = structuredClone(object);
  const errors = jsonPatch.applyPatch(next, ops as jsonPatch.Operation[]).filter((e) => e !== null);
  if (errors.length) throw new Error(`error applying patch: JSON Patch: ${errors[0]!.message}`);
  return next;
}

/** The mutating admission policies of a shard (see the module comment). */
export class MutatingPolicies implements AdmissionStep {
  constructor(private readonly deps: {
    cache: WatchCache;
    /** The APIs of a logical cluster (to find a policy's `paramKind`). */
    apis: (cluster: string) => ClusterAPIs;
    /** The shard's authorizer, for CEL's `authorizer` (without it every check is an errored decision). */
    authorize?: AdmissionAuthorize;
  }) {}

  /**
   * Runs the matching policies' mutations; resolves to the object to continue with. Reinvocation
   * as kube's policy dispatcher (plugin/policy/mutating/dispatcher.go): a mutation that changes the
   * object makes the `IfNeeded` policies that ran before it run again in the chain's second run.
   */
  async mutate(a: WebhookAttributes, rc: ReinvocationContext = newReinvocationContext()): Promise<KubeObject | undefined> {
    if (a.operation === 'DELETE' || !a.object) return a.object;
    const bindings = this.deps.cache.list(MUTATING_POLICY_BINDINGS_GR, a.cluster);
    if (!bindings.length) return a.object;
    const state = reinvocationState(rc, 'MutatingAdmissionPolicy');
    if (rc.isReinvoke && state.changedSinceLastInvocation(a.object)) state.requireReinvokingPreviouslyInvoked();
    let obj: KubeObject = a.object;
    try {
      for (const be of bindings) {
        const binding = parsed(be, (o) => compileMatch(asObj(asObj(o.spec).matchResources)));
        const bspec = asObj(binding.obj.spec);
        const pe = this.deps.cache.getEntry(MUTATING_POLICIES_GR, a.cluster, '', String(bspec.policyName ?? ''));
        if (!pe) continue;
        const policy = parsed(pe, (o) => compileMatch(asObj(asObj(o.spec).matchConstraints)));
        const current = { ...a, object: obj };
        const apis = this.deps.apis(a.cluster);
        const matched = policyMatch(this.deps.cache, policy.match, current, apis);
        if (!matched) continue;
        if (bspec.matchResources !== undefined && !policyMatch(this.deps.cache, binding.match, current, apis)) continue;
        // Mutated in the version it matched (Equivalent), then back in the request's, as kube does.
        const versioned = await versionedAttributes(current, matched) as WebhookAttributes & { object: KubeObject };
        const mutated = this.invoke(versioned, policy.obj, binding.obj, rc);
        if (mutated !== versioned.object) obj = await unversioned(mutated, matched);
      }
    } finally {
      state.setLastInvocationOutput(obj);
    }
    return obj;
  }

  /** One policy with one binding, for each of its params. */
  private invoke(a: WebhookAttributes & { object: KubeObject }, policy: KubeObject, binding: KubeObject, rc: ReinvocationContext): KubeObject {
    const spec = asObj(policy.spec);
    const bspec = asObj(binding.spec);
    const state = reinvocationState(rc, 'MutatingAdmissionPolicy');
    const pname = policy.metadata.name ?? ''; const bname = binding.metadata.name ?? '';
    const denied = (message: string) => `policy '${pname}' with binding '${bname}' denied request: ${message}`;
    const params = policyParams(this.deps.cache, this.deps.apis(a.cluster), a, spec, bspec);
    if (!params) {
      if (asObj(bspec.paramRef).parameterNotFoundAction === 'Deny') throw new StatusError(403, 'Forbidden', denied('failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction'));
      return a.object;
    }
    let obj = a.object;
    for (const p of params) {
      const m = asObj(asObj(p).metadata);
      const key = `${pname}\u0000${bname}\u0000${String(m.namespace ?? '')}/${String(m.name ?? '')}`;
      if (rc.isReinvoke && !state.shouldReinvoke(key)) continue;
      try {
        let run = policyActivation(this.deps.cache, { ...a, object: obj }, spec, p, true, this.deps.authorize);
        if (!asList(spec.matchConditions).every((c) => run(String(c.expression)) === true)) continue;
        for (const [i, mutation] of asList(spec.mutations).entries()) {
          const patchType = String(mutation.patchType);
          if (i > 0) run = policyActivation(this.deps.cache, { ...a, object: obj }, spec, p, true, this.deps.authorize);
          const next = applyMutation(obj, patchType, run(String(asObj(mutation[PATCH_FIELDS[patchType] ?? '']).expression)), a.desc);
          if (JSON.stringify(next) !== JSON.stringify(obj)) {
            obj = next;
            state.requireReinvokingPreviouslyInvoked();
            rc.shouldReinvoke = true;
          }
        }
      } catch (err) {
        if (spec.failurePolicy === 'Ignore') continue;
        // kube's message: `<resource> "<name>" is invalid: policy '<p>' with binding '<b>' denied request: …`.
        const resource = a.desc.group ? `${a.desc.plural}.${a.desc.group}` : a.desc.plural;
        throw new StatusError(422, 'Invalid', `${resource} ${JSON.stringify(a.name)} is invalid: ${denied((err as Error).message.split('\n')[0] ?? '')}`);
      }
      if (spec.reinvocationPolicy === 'IfNeeded') state.addReinvocableToPreviouslyInvoked(key);
    }
    return obj;
  }

  /** Mutating policies do not validate. */
  async validate(): Promise<void> {}
}
