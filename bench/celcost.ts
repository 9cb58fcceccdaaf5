/**
 * CEL cost micro-benchmark (docs/robustness.md "CEL cost"): `node --import tsx bench/celcost.ts`.
 * In-process, CPU time (user + system) of this process, best of several rounds:
 * - static estimation: `validateCRD` of the largest fixture CRD (prometheus-operator's
 *   Prometheus, 5 rules) and of a synthetic schema with 1,000 rules, with the estimator's share;
 * - runtime metering: evaluations/s of a typical rule before the evaluator hook is installed,
 *   then metered (per-call limit), then with the hook installed but no meter;
 * - stopping: time until the issue's rule is stopped at the per-call limit, and until one
 *   object's rules have spent the runtime budget.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { celEnvironment } from '../src/apiextensions/cel.js';
import { CostBudget, estimateCost, evaluateMetered, sizedTypeOf } from '../src/apiextensions/celcost.js';
import { applyCRDDefaults, validateCRD } from '../src/apiextensions/crdvalidation.js';

const cpuMs = (f: () => void): number => { const c0 = process.cpuUsage(); f(); const c = process.cpuUsage(c0); return (c.user + c.system) / 1000; };
const best = (rounds: number, f: () => void): number => Math.min(...Array.from({ length: rounds }, () => cpuMs(f)));
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

type Obj = Record<string, any>;
const fixture = join(import.meta.dirname, '..', 'test', 'fixtures', 'crds', 'prometheus-operator', 'monitoring.coreos.com_prometheuses.yaml');
const prom = parseAllDocuments(readFileSync(fixture, 'utf8'))[0]!.toJS() as Obj;
applyCRDDefaults(prom);
const promMs = best(5, () => validateCRD(structuredClone(prom)));
// The estimator's share: estimating each rule of the fixture on its node.
const ruleNodes: Array<{ schema: Obj; rule: string }> = [];
const walk = (s: unknown): void => {
  if (!s || typeof s !== 'object') return;
  const o = s as Obj;
  for (const r of o['x-kubernetes-validations'] ?? []) ruleNodes.push({ schema: o, rule: r.rule });
  for (const v of Object.values(o)) if (v && typeof v === 'object') walk(v);
};
walk(prom.spec.versions);
const estimateOnly = best(5, () => {
  for (const { schema, rule } of ruleNodes) { const t = sizedTypeOf(schema); estimateCost(celEnvironment().parse(rule).ast, new Map([['self', t], ['oldSelf', t]])); }
});

const manyRules: Obj = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'manys.example.com' },
  spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'manys', singular: 'many', kind: 'Many', listKind: 'ManyList' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object',
      properties: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}`, { type: 'array', maxItems: 16, items: { type: 'string', maxLength: 64 },
        'x-kubernetes-validations': [{ rule: `self.all(x, x.startsWith('p${i}') && x.size() < 60) && self.exists_one(x, x == 'main')` }] }])) } } } } }] },
};
applyCRDDefaults(manyRules);
const manyMs = best(3, () => validateCRD(structuredClone(manyRules)));

// Runtime metering on a typical rule.
const env = celEnvironment();
const typical = env.parse("self.replicas >= 0 && self.replicas <= 100 && self.name.startsWith('web-') && self.ports.all(p, p.port > 0 && p.port < 65536 && p.name.size() < 16)");
const self = { replicas: 3n, name: 'web-frontend', ports: Array.from({ length: 8 }, (_, i) => ({ port: BigInt(8000 + i), name: `p${i}` })) };
const N = 50_000;
const opsPerSec = (f: () => void): number => Math.round(N / best(7, () => { for (let i = 0; i < N; i++) f(); }) * 1000);
const before = opsPerSec(() => typical({ self }));
const metered = opsPerSec(() => evaluateMetered(typical, { self }));
const hookedUnmetered = opsPerSec(() => typical({ self }));
const typicalCost = evaluateMetered(typical, { self }).cost;

// Stopping.
const issue = env.parse("self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != 'abc')))");
const l = Array.from({ length: 300 }, (_, i) => `s${i}`);
const stopMs = best(3, () => { try { evaluateMetered(issue, { self: { l } }); } catch { /* stopped */ } });
const quadratic = env.parse('self.l.all(x, self.l.exists_one(y, x == y))');
const l2 = Array.from({ length: 300 }, (_, i) => `s${i}`);
const budgetMs = best(3, () => { const b = new CostBudget(); try { for (;;) b.evaluate(quadratic, { self: { l: l2 } }); } catch { /* spent */ } });

const out = {
  estimation: { fixture: 'monitoring.coreos.com_prometheuses.yaml (833 kB, 5 rules)', validateCRDMs: round(promMs), estimatorMs: round(estimateOnly, 3), thousandRulesValidateCRDMs: round(manyMs) },
  metering: { typicalRuleCost: typicalCost, opsPerSecBefore: before, opsPerSecMetered: metered, opsPerSecHookInstalledUnmetered: hookedUnmetered, meteredRatio: round(metered / before) },
  stopping: { perCallLimitStopMs: round(stopMs, 1), perObjectBudgetSpentMs: round(budgetMs, 1) },
};
console.log(JSON.stringify(out, null, 2));
