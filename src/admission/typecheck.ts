/**
 * Type checking of ValidatingAdmissionPolicy expressions, as kube-apiserver's policy status
 * controller does (k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go,
 * kube 1.34): for every concrete group/version/resource of `spec.matchConstraints.resourceRules`
 * that the logical cluster serves, each validation's `expression` and `messageExpression` (the
 * only fields kube's `TypeChecker.CheckContext` checks) is checked with `object` and `oldObject`
 * typed by the kind's OpenAPI schema. Findings become `status.typeChecking.expressionWarnings`.
 *
 * The types come from src/apiextensions/celtypes.ts (a static inference over the CEL library's
 * AST; what it does not model is `dyn` and never warned about).
 */
import type { ParseResult } from '@marcbachmann/cel-js';
import { checkAst, formatIssues, schemaType, type CelType } from '../apiextensions/celtypes.js';
import { compileExpression, ruleOf } from './match.js';
import { isObj } from '../apimachinery/objects.js';

type Raw = Record<string, unknown>;

/** Type checks one expression against `object`/`oldObject` of a type; cel-go's text or ''. */
export function checkExpression(expression: string, object: CelType): string {
  let program: ParseResult;
  try { program = compileExpression(expression); } catch { return ''; } // compile errors are the write's (422)
  const issues = checkAst(program.ast, expression, new Map([['object', object], ['oldObject', object]]));
  return issues.length ? formatIssues(expression, issues) : '';
}

/** A kind a policy is checked against: kube's GroupVersionKind and its resource's schema. */
export interface CheckedKind { group: string; version: string; kind: string; schema: Raw | undefined }

/** `schema.GroupVersionKind.String()`: `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for core). */
export function gvkString(k: { group: string; version: string; kind: string }): string {
  return `${k.group}/${k.version}, Kind=${k.kind}`;
}

/** kube's `maxTypesToCheck`. */
const MAX_TYPES_TO_CHECK = 10;

/**
 * The kinds kube type checks a policy against (typechecking.go `typesToCheck`): the
 * group × version × resource combinations of `matchConstraints.resourceRules`, rules with a `*`
 * group, version or resource skipped, subresources skipped, resolved by `resolve` (undefined:
 * not served), deduplicated, at most ten, sorted by group, version, kind.
 */
export function typesToCheck(policy: object, resolve: (group: string, version: string, resource: string) => CheckedKind | undefined): CheckedKind[] {
  const spec = (policy as { spec?: unknown }).spec;
  if (!isObj(spec)) return [];
  const mc = isObj(spec.matchConstraints) ? spec.matchConstraints : {};
  const rules = Array.isArray(mc.resourceRules) ? mc.resourceRules.map(ruleOf) : [];
  const out = new Map<string, CheckedKind>();
  for (const r of rules) {
    if (r.apiGroups.includes('*') || r.apiVersions.includes('*') || r.resources.some((x) => x.includes('*'))) continue;
    const resources = r.resources.filter((x) => !x.includes('/'));
    for (const g of [...r.apiGroups].sort()) for (const v of [...r.apiVersions].sort()) for (const res of [...resources].sort()) {
      const k = resolve(g, v, res);
      if (k) out.set(gvkString(k), k);
      if (out.size >= MAX_TYPES_TO_CHECK) return sortKinds([...out.values()]);
    }
  }
  return sortKinds([...out.values()]);
}

function sortKinds(list: CheckedKind[]): CheckedKind[] {
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return list.sort((a, b) => cmp(a.group, b.group) || cmp(a.version, b.version) || cmp(a.kind, b.kind));
}

/** One entry of `status.typeChecking.expressionWarnings`. */
export interface ExpressionWarning { fieldRef: string; warning: string }

/**
 * kube's `TypeChecker.CheckContext`: each validation's `expression` and `messageExpression`
 * against every kind; a warning per field naming each kind that fails
 * (`<gvk>: <cel-go issues>\n`, joined by newlines, as `TypeCheckingResults.String()`).
 */
export function checkPolicy(policy: object, kinds: CheckedKind[]): ExpressionWarning[] {
  const spec = (policy as { spec?: unknown }).spec;
  if (!isObj(spec)) return [];
  const validations = Array.isArray(spec.validations) ? spec.validations : [];
  const types = kinds.map((k) => ({ k, t: schemaType(k.schema, true) }));
  const warnings: ExpressionWarning[] = [];
  const check = (expression: unknown, fieldRef: string) => {
    if (typeof expression !== 'string' || !expression) return;
    const lines = types.map(({ k, t }) => {
      const issues = checkExpression(expression, t);
      return issues ? `${gvkString(k)}: ${issues}\n` : '';
    }).filter(Boolean);
    if (lines.length) warnings.push({ fieldRef, warning: lines.join('\n') });
  };
  validations.forEach((v, i) => {
    const val = isObj(v) ? v : {};
    check(val.expression, `spec.validations[${i}].expression`);
    check(val.messageExpression, `spec.validations[${i}].messageExpression`);
  });
  return warnings;
}
