/**
 * Dynamic admission of the store (`StoreBackend.webhooks`): validating admission policies and
 * admission webhooks (./policies.ts, ./webhooks.ts), chained in kube's plugin order.
 */
import type { WebhookAdmission } from '../registry/store.js';
import { isAdmissionConfiguration } from './match.js';

/** Runs several dynamic admission steps in order (policies, then webhooks, as kube's plugin order). */
export function chainAdmission(...steps: WebhookAdmission[]): WebhookAdmission {
  return {
    async mutate(a) {
      if (isAdmissionConfiguration(a)) return a.object;
      let obj = a.object;
      for (const s of steps) obj = await s.mutate({ ...a, object: obj });
      return obj;
    },
    async validate(a) {
      if (isAdmissionConfiguration(a)) return;
      for (const s of steps) await s.validate(a);
    },
  };
}
