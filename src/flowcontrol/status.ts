/**
 * The `Dangling` condition of FlowSchemas, as kube's configController writes it
 * (apf_controller.go): True, reason NotFound, when the referenced priority level does not exist;
 * False, reason Found, when it does.
 */
import { isStatus } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import type { RequestScope, Store } from '../registry/store.js';
import type { FlowSchemaSpec } from './types.js';

interface Condition { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }

/**
 * Writes the `Dangling` condition of every FlowSchema in `schemas` whose condition is missing or
 * has another status. `dangling` names the schemas whose level is missing. Conflicts (the object
 * changed meanwhile) are left to the next run, which that change triggers.
 */
export async function syncDanglingConditions(store: Store, scope: RequestScope, schemas: readonly KubeObject[], dangling: ReadonlyMap<string, string>): Promise<void> {
  await Promise.all(schemas.map(async (fs) => {
    const name = fs.metadata.name!;
    const level = (fs.spec as FlowSchemaSpec | undefined)?.priorityLevelConfiguration?.name ?? '';
    const missing = dangling.has(name);
    const wanted: Condition = missing
      ? { type: 'Dangling', status: 'True', reason: 'NotFound', message: `This FlowSchema references the PriorityLevelConfiguration object named "${level}" but there is no such object` }
      : { type: 'Dangling', status: 'False', reason: 'Found', message: `This FlowSchema references the PriorityLevelConfiguration object named "${level}" and it exists` };
    const conditions = ((fs.status as { conditions?: Condition[] } | undefined)?.conditions ?? []);
    const current = conditions.find((c) => c.type === 'Dangling');
    if (current && current.status === wanted.status && current.message === wanted.message) return;
    const next = { ...fs, status: { ...(fs.status as object | undefined), conditions: [...conditions.filter((c) => c.type !== 'Dangling'), { ...wanted, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } };
    try {
      await store.update(scope, name, next, 'status');
    } catch (err) {
      if (!isStatus(err, 409, 404)) throw err;
    }
  }));
}
