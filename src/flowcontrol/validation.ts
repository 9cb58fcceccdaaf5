/**
 * Validation of FlowSchema and PriorityLevelConfiguration, kube's rules and messages
 * (k8s.io/kubernetes/pkg/apis/flowcontrol/validation/validation.go): matching precedence
 * 1..10000, distinguisher ByUser/ByNamespace, subjects and rules with exclusive wildcards,
 * type Limited/Exempt (Exempt if and only if the name is `exempt`), shares and percentages,
 * limit response Queue/Reject with queues ≤ 10^7, handSize ≤ queues within 60 bits of entropy,
 * and the mandatory objects' spec fixed.
 */
import type { StatusCause } from '../apimachinery/errors.js';
import type { KubeObject } from '../apimachinery/meta.js';
import { validateName } from '../apimachinery/validation.js';
import { MANDATORY_FLOW_SCHEMAS, MANDATORY_PRIORITY_LEVELS, specMatches } from './bootstrap.js';
import { MAX_HASH_BITS, requiredEntropyBits } from './shufflesharding.js';
import { ALL, EXEMPT } from './types.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {});
const q = (v: unknown) => JSON.stringify(v ?? '');

/** Most queues of a priority level (kube's `priorityLevelConfigurationQueuingMaxQueues`, 10^7). */
export const MAX_QUEUES = 10_000_000;
/** Highest matching precedence (kube: 10000). */
export const MAX_MATCHING_PRECEDENCE = 10000;

const SUPPORTED_VERBS = ['get', 'list', 'create', 'update', 'delete', 'deletecollection', 'patch', 'watch', 'proxy'];

function invalid(field: string, value: unknown, message: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${typeof value === 'string' ? q(value) : JSON.stringify(value)}: ${message}` };
}
function required(field: string, message: string): StatusCause {
  return { reason: 'FieldValueRequired', field, message: `Required value: ${message}` };
}
function notSupported(field: string, value: unknown, supported: string[]): StatusCause {
  return { reason: 'FieldValueNotSupported', field, message: `Unsupported value: ${q(value)}: supported values: ${supported.map((s) => `"${s}"`).join(', ')}` };
}
function forbidden(field: string, message: string): StatusCause {
  return { reason: 'FieldValueForbidden', field, message: `Forbidden: ${message}` };
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? v as string[] : undefined);

/** A list that must not be empty and whose `*` must stand alone. */
function wildcardList(path: string, v: unknown, what: string, emptyMessage: string): { causes: StatusCause[]; items: string[] } {
  const items = strings(v);
  if (v !== undefined && v !== null && !items) return { causes: [invalid(path, v, 'must be a list of strings')], items: [] };
  if (!items || items.length === 0) return { causes: [required(path, emptyMessage)], items: [] };
  if (items.length > 1 && items.includes(ALL)) return { causes: [invalid(path, items, `if '*' is present, must not specify other ${what}`)], items };
  return { causes: [], items };
}

function validateSubject(path: string, s: unknown): StatusCause[] {
  const subject = asObj(s);
  const kind = subject.kind;
  const causes: StatusCause[] = [];
  const members = { User: 'user', Group: 'group', ServiceAccount: 'serviceAccount' } as const;
  if (!(typeof kind === 'string' && kind in members)) return [notSupported(`${path}.kind`, kind, Object.keys(members))];
  for (const [k, member] of Object.entries(members)) {
    const value = subject[member];
    if (k === kind) {
      if (value === undefined || value === null) { causes.push(required(`${path}.${member}`, `${member} is required when subject kind is '${kind}'`)); continue; }
      const m = asObj(value);
      if (typeof m.name !== 'string' || m.name === '') causes.push(required(`${path}.${member}.name`, `${member} name is required`));
      if (member === 'serviceAccount') {
        if (typeof m.namespace !== 'string' || m.namespace === '') causes.push(required(`${path}.serviceAccount.namespace`, 'must specify namespace for service account'));
        else for (const e of validateName(m.namespace, 'dns1123Label')) causes.push(invalid(`${path}.serviceAccount.namespace`, m.namespace, e));
      }
    } else if (value !== undefined && value !== null) causes.push(forbidden(`${path}.${member}`, `${member} is forbidden when subject kind is not '${k}'`));
  }
  return causes;
}

function validateResourceRule(path: string, r: unknown): StatusCause[] {
  const rule = asObj(r);
  const verbs = wildcardList(`${path}.verbs`, rule.verbs, 'verbs', 'verbs must contain at least one value');
  const causes = [...verbs.causes];
  if (!verbs.causes.length) for (const v of verbs.items) if (v !== ALL && !SUPPORTED_VERBS.includes(v)) causes.push(notSupported(`${path}.verbs`, v, [...SUPPORTED_VERBS, ALL]));
  causes.push(...wildcardList(`${path}.apiGroups`, rule.apiGroups, 'api groups', 'resource rules must supply at least one api group').causes);
  causes.push(...wildcardList(`${path}.resources`, rule.resources, 'resources', 'resource rules must supply at least one resource').causes);
  if (rule.clusterScope !== undefined && typeof rule.clusterScope !== 'boolean') causes.push(invalid(`${path}.clusterScope`, rule.clusterScope, 'must be a boolean'));
  const namespaces = strings(rule.namespaces);
  if (rule.namespaces !== undefined && rule.namespaces !== null && !namespaces) causes.push(invalid(`${path}.namespaces`, rule.namespaces, 'must be a list of strings'));
  else if (!namespaces || namespaces.length === 0) {
    if (rule.clusterScope !== true) causes.push(required(`${path}.namespaces`, 'resource rules that are not cluster scoped must supply at least one namespace'));
  } else if (namespaces.length > 1 && namespaces.includes(ALL)) causes.push(invalid(`${path}.namespaces`, namespaces, "if '*' is present, must not specify other namespaces"));
  else namespaces.forEach((ns, i) => { if (ns !== ALL) for (const e of validateName(ns, 'dns1123Label')) causes.push(invalid(`${path}.namespaces[${i}]`, ns, e)); });
  return causes;
}

function validateNonResourceRule(path: string, r: unknown): StatusCause[] {
  const rule = asObj(r);
  const verbs = wildcardList(`${path}.verbs`, rule.verbs, 'verbs', 'verbs must contain at least one value');
  const urls = wildcardList(`${path}.nonResourceURLs`, rule.nonResourceURLs, 'nonResourceURLs', 'nonResourceURLs must contain at least one value');
  const causes = [...verbs.causes, ...urls.causes];
  if (!urls.causes.length) {
    urls.items.forEach((u, i) => {
      if (u === ALL) return;
      const p = `${path}.nonResourceURLs[${i}]`;
      if (!u.startsWith('/')) causes.push(invalid(p, u, 'must start with slash'));
      else if (u.includes('*') && (u.indexOf('*') !== u.length - 1 || !u.endsWith('/*'))) causes.push(invalid(p, u, "if '*' is present, must be a suffix after a slash"));
    });
  }
  return causes;
}

/** Causes of an invalid FlowSchema (empty = valid). */
export function validateFlowSchema(obj: KubeObject): StatusCause[] {
  const spec = asObj(obj.spec);
  const causes: StatusCause[] = [];
  const pl = asObj(spec.priorityLevelConfiguration);
  if (typeof pl.name !== 'string' || pl.name === '') causes.push(required('spec.priorityLevelConfiguration.name', 'must reference a priority level'));
  else for (const e of validateName(pl.name, 'dns1123Subdomain')) causes.push(invalid('spec.priorityLevelConfiguration.name', pl.name, e));
  const mp = spec.matchingPrecedence;
  if (!isInt(mp) || mp <= 0) causes.push(invalid('spec.matchingPrecedence', mp, 'must be a positive value'));
  else if (mp > MAX_MATCHING_PRECEDENCE) causes.push(invalid('spec.matchingPrecedence', mp, `must not be greater than ${MAX_MATCHING_PRECEDENCE}`));
  if (spec.distinguisherMethod !== undefined && spec.distinguisherMethod !== null) {
    const t = asObj(spec.distinguisherMethod).type;
    if (t !== 'ByUser' && t !== 'ByNamespace') causes.push(notSupported('spec.distinguisherMethod.type', t, ['ByNamespace', 'ByUser']));
  }
  if (spec.rules !== undefined && spec.rules !== null) {
    if (!Array.isArray(spec.rules)) causes.push(invalid('spec.rules', spec.rules, 'must be a list'));
    else spec.rules.forEach((r, i) => {
      const path = `spec.rules[${i}]`;
      const rule = asObj(r);
      if (!Array.isArray(rule.subjects) || rule.subjects.length === 0) causes.push(required(`${path}.subjects`, 'subjects must contain at least one value'));
      else rule.subjects.forEach((s, j) => causes.push(...validateSubject(`${path}.subjects[${j}]`, s)));
      const rr = rule.resourceRules; const nr = rule.nonResourceRules;
      if ((!Array.isArray(rr) || rr.length === 0) && (!Array.isArray(nr) || nr.length === 0)) causes.push(required(path, 'at least one of resourceRules and nonResourceRules has to be non-empty'));
      if (Array.isArray(rr)) rr.forEach((x, j) => causes.push(...validateResourceRule(`${path}.resourceRules[${j}]`, x)));
      else if (rr !== undefined && rr !== null) causes.push(invalid(`${path}.resourceRules`, rr, 'must be a list'));
      if (Array.isArray(nr)) nr.forEach((x, j) => causes.push(...validateNonResourceRule(`${path}.nonResourceRules[${j}]`, x)));
      else if (nr !== undefined && nr !== null) causes.push(invalid(`${path}.nonResourceRules`, nr, 'must be a list'));
    });
  }
  const name = obj.metadata.name ?? '';
  const mandatory = MANDATORY_FLOW_SCHEMAS[name];
  if (mandatory && !specMatches(name, 'FlowSchema', obj.spec, mandatory)) causes.push(invalid('spec', '<spec>', `spec of '${name}' must equal the fixed value`));
  return causes;
}

function percent(path: string, v: unknown, allowUnbounded = false): StatusCause[] {
  if (v === undefined || v === null) return [];
  if (!isInt(v) || v < 0) return [invalid(path, v, allowUnbounded ? 'if specified, must be a non-negative integer' : 'must be between 0 and 100, inclusive')];
  if (!allowUnbounded && v > 100) return [invalid(path, v, 'must be between 0 and 100, inclusive')];
  return [];
}

function shares(path: string, v: unknown): StatusCause[] {
  if (v === undefined || v === null) return [];
  return isInt(v) && v >= 0 && v <= 2 ** 31 - 1 ? [] : [invalid(path, v, 'must be a non-negative integer')];
}

/** Causes of an invalid PriorityLevelConfiguration (empty = valid). */
export function validatePriorityLevel(obj: KubeObject): StatusCause[] {
  const spec = asObj(obj.spec);
  const name = obj.metadata.name ?? '';
  const causes: StatusCause[] = [];
  const type = spec.type;
  if (type !== 'Limited' && type !== 'Exempt') causes.push(notSupported('spec.type', type, ['Exempt', 'Limited']));
  else if ((name === EXEMPT) !== (type === 'Exempt')) causes.push(invalid('spec.type', type, "type must be 'Exempt' if and only if name is 'exempt'"));
  if (type === 'Exempt') {
    if (spec.limited !== undefined && spec.limited !== null) causes.push(forbidden('spec.limited', 'must be nil if the type is not Limited'));
    const exempt = asObj(spec.exempt);
    causes.push(...shares('spec.exempt.nominalConcurrencyShares', exempt.nominalConcurrencyShares), ...percent('spec.exempt.lendablePercent', exempt.lendablePercent));
  }
  if (type === 'Limited') {
    if (spec.exempt !== undefined && spec.exempt !== null) causes.push(forbidden('spec.exempt', 'must be nil if the type is Limited'));
    if (spec.limited === undefined || spec.limited === null) causes.push(required('spec.limited', 'must not be empty when type is Limited'));
    else {
      const limited = asObj(spec.limited);
      causes.push(...shares('spec.limited.nominalConcurrencyShares', limited.nominalConcurrencyShares));
      causes.push(...percent('spec.limited.lendablePercent', limited.lendablePercent), ...percent('spec.limited.borrowingLimitPercent', limited.borrowingLimitPercent, true));
      const response = asObj(limited.limitResponse);
      if (response.type === 'Queue') {
        if (response.queuing === undefined || response.queuing === null) causes.push(required('spec.limited.limitResponse.queuing', 'must not be empty if limited.limitResponse.type is Queue'));
        else causes.push(...validateQueuing('spec.limited.limitResponse.queuing', asObj(response.queuing)));
      } else if (response.type === 'Reject') {
        if (response.queuing !== undefined && response.queuing !== null) causes.push(forbidden('spec.limited.limitResponse.queuing', 'must be nil if limited.limitResponse.type is not Queue'));
      } else causes.push(notSupported('spec.limited.limitResponse.type', response.type, ['Queue', 'Reject']));
    }
  }
  const mandatory = MANDATORY_PRIORITY_LEVELS[name];
  if (mandatory && !causes.length && !specMatches(name, 'PriorityLevelConfiguration', obj.spec, mandatory)) causes.push(invalid('spec', '<spec>', `spec of '${name}' must equal the fixed value`));
  return causes;
}

function validateQueuing(path: string, queuing: Obj): StatusCause[] {
  const causes: StatusCause[] = [];
  const { queues, handSize, queueLengthLimit } = queuing;
  if (!isInt(queueLengthLimit) || queueLengthLimit <= 0) causes.push(invalid(`${path}.queueLengthLimit`, queueLengthLimit, 'must be positive'));
  let queuesOK = false;
  if (!isInt(queues) || queues <= 0) causes.push(invalid(`${path}.queues`, queues, 'must be positive'));
  else if (queues > MAX_QUEUES) causes.push(invalid(`${path}.queues`, queues, `must not be greater than ${MAX_QUEUES}`));
  else queuesOK = true;
  if (!isInt(handSize) || handSize <= 0) causes.push(invalid(`${path}.handSize`, handSize, 'must be positive'));
  else if (queuesOK && handSize > (queues as number)) causes.push(invalid(`${path}.handSize`, handSize, `should not be greater than queues (${queues})`));
  else if (queuesOK && requiredEntropyBits(queues as number, handSize) > MAX_HASH_BITS) {
    causes.push(invalid(`${path}.handSize`, handSize, `required entropy bits of deckSize ${queues} and handSize ${handSize} should not be greater than ${MAX_HASH_BITS}`));
  }
  return causes;
}
