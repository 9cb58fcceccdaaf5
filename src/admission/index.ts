/**
 * Admission of the store (`StoreBackend.admission`): built-in plugins (./plugins.ts), then
 * mutating and validating admission policies and admission webhooks (./mutating.ts,
 * ./policies.ts, ./webhooks.ts), chained in kube's plugin order with kube's reinvocation of the
 * mutating phase.
 */
import type { KubeObject } from '../apimachinery/meta.js';
import type { WebhookAdmission, WebhookAttributes } from '../registry/store.js';
import { isAdmissionConfiguration } from './match.js';
import { AdmissionPlugins, type AdmissionPlugin } from './plugins.js';

/**
 * kube's admission.ReinvocationContext (k8s.io/apiserver/pkg/admission/reinvocation.go), one per
 * request: whether this is the second run of the mutating chain, whether a step asked for it,
 * and each plugin's own state (`reinvocationState`).
 */
export interface ReinvocationContext {
  isReinvoke: boolean;
  shouldReinvoke: boolean;
  values: Map<string, ReinvocationState>;
}

/**
 * A plugin's reinvocation state for one request (kube's webhookReinvokeContext of
 * plugin/webhook/mutating/reinvocationcontext.go and the policyReinvokeContext of
 * plugin/policy/mutating/reinvocationcontext.go): the object it last returned, the
 * `IfNeeded` webhooks or policies invoked so far, and those to run again.
 */
export class ReinvocationState {
  private lastOutput: string | undefined;
  private previouslyInvoked = new Set<string>();
  private readonly reinvoke = new Set<string>();

  /** Whether `object` differs from what the plugin returned last (another plugin changed it since). */
  changedSinceLastInvocation(object: KubeObject | undefined): boolean { return JSON.stringify(object ?? null) !== this.lastOutput; }
  /** Records the plugin's output. */
  setLastInvocationOutput(object: KubeObject | undefined): void { this.lastOutput = JSON.stringify(object ?? null); }
  /** An `IfNeeded` webhook or policy ran. */
  addReinvocableToPreviouslyInvoked(key: string): void { this.previouslyInvoked.add(key); }
  /** The object changed: every `IfNeeded` one that ran before is to run again. */
  requireReinvokingPreviouslyInvoked(): void { for (const k of this.previouslyInvoked) this.reinvoke.add(k); this.previouslyInvoked = new Set(); }
  /** Whether one is to run again in the reinvocation. */
  shouldReinvoke(key: string): boolean { return this.reinvoke.has(key); }
}

/** A plugin's state in the request's reinvocation context, created on first use. */
export function reinvocationState(rc: ReinvocationContext, plugin: string): ReinvocationState {
  let s = rc.values.get(plugin);
  if (!s) { s = new ReinvocationState(); rc.values.set(plugin, s); }
  return s;
}

/** A fresh reinvocation context (one request, first run). */
export const newReinvocationContext = (): ReinvocationContext => ({ isReinvoke: false, shouldReinvoke: false, values: new Map() });

/** A dynamic admission step whose mutation takes part in the request's reinvocation context. */
export interface AdmissionStep extends WebhookAdmission {
  mutate(a: WebhookAttributes, rc?: ReinvocationContext): Promise<KubeObject | undefined>;
}

/**
 * The admission chain of a shard: the built-in mutating plugins of the written resource
 * (./plugins.ts) first, then the dynamic admission steps in kube-apiserver's plugin order
 * (pkg/kubeapiserver/options/plugins.go AllOrderedPlugins: MutatingAdmissionPolicy,
 * MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook), so mutating
 * policies run before mutating webhooks. The mutating phase is kube's `reinvoker`: when a step
 * changed the object after an `IfNeeded` policy or webhook ran, the dynamic steps' mutations run
 * once more, each step calling only its policies or webhooks to reinvoke. Admission
 * configurations themselves (webhook configurations, policies, bindings) pass no dynamic step,
 * as in kube, so that a broken webhook cannot lock its own configuration. Built-in validating
 * plugins (ResourceQuota) run last, on every write; a create they admitted that the store then
 * failed to write is handed back to them (`release`).
 */
export function chainAdmission(plugins: readonly AdmissionPlugin[], ...steps: AdmissionStep[]): WebhookAdmission {
  const builtin = new AdmissionPlugins(plugins);
  return {
    async mutate(a) {
      await builtin.admit(a);
      if (isAdmissionConfiguration(a)) return a.object;
      const rc = newReinvocationContext();
      let obj = a.object;
      for (const s of steps) obj = await s.mutate({ ...a, object: obj }, rc);
      if (rc.shouldReinvoke) {
        rc.isReinvoke = true;
        for (const s of steps) obj = await s.mutate({ ...a, object: obj }, rc);
      }
      return obj;
    },
    async validate(a) {
      if (!isAdmissionConfiguration(a)) for (const s of steps) await s.validate(a);
      await builtin.validate(a);
    },
    release(a) {
      builtin.release(a);
    },
  };
}
