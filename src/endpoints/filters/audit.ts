/**
 * Audit log, as kube-apiserver's (https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/;
 * k8s.io/apiserver/pkg/audit, k8s.io/apiserver/pkg/apis/audit/v1): an `audit.k8s.io/v1` Policy
 * (`--audit-policy-file`) decides per request the level (None, Metadata, Request,
 * RequestResponse) and the stages omitted; events are `audit.k8s.io/v1` Event JSON lines written
 * to `--audit-log-path` (or stdout for `-`), rotated by size as kube's lumberjack logger does.
 *
 * Three separate, testable pieces: {@link parseAuditPolicy}/{@link loadAuditPolicy} (the policy
 * file), {@link evaluatePolicy} (kube's policy checker), {@link AuditLogWriter} (buffered,
 * asynchronous writes with rotation); {@link installAudit} hooks them into the Fastify app.
 *
 * Events are built when the response completes (a watch: when it started and when it ends), so
 * that everything the request learnt (its logical cluster resolved from a workspace path, the
 * impersonated user, the authorization decision) is at hand without threading the audit context
 * through the handlers: a `RequestReceived` event is written just before the request's next event,
 * with `stageTimestamp` the time it was received.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parse as parseYaml } from 'yaml';
import type { UserInfo } from '../../registry/store.js';
import { isObj } from '../../apimachinery/objects.js';
import { decodeKubernetesProtobuf, isKubernetesProtobuf } from '../../apimachinery/protobuf.js';

/** Audit levels, least to most (audit.k8s.io/v1 `Level`). */
export const AUDIT_LEVELS = ['None', 'Metadata', 'Request', 'RequestResponse'] as const;
export type AuditLevel = (typeof AUDIT_LEVELS)[number];
/** Audit stages (audit.k8s.io/v1 `Stage`). */
export const AUDIT_STAGES = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'] as const;
export type AuditStage = (typeof AUDIT_STAGES)[number];

/** audit.k8s.io/v1 `GroupResources`. */
export interface GroupResources { group: string; resources: string[]; resourceNames: string[] }

/** audit.k8s.io/v1 `PolicyRule` (empty lists match everything). */
export interface PolicyRule {
  level: AuditLevel;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  namespaces: string[];
  nonResourceURLs: string[];
  omitStages: AuditStage[];
  omitManagedFields?: boolean;
}

/** audit.k8s.io/v1 `Policy`. */
export interface AuditPolicy { rules: PolicyRule[]; omitStages: AuditStage[]; omitManagedFields: boolean }

/** An invalid policy file; the message names the file and the field. */
export class AuditPolicyError extends Error {}

/** What a policy is evaluated against (kube's `authorizer.Attributes`). */
export interface AuditAttributes {
  /** The authenticated user (before impersonation); undefined for a failed authentication. */
  user?: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  /** Non-resource requests: the path (below `/clusters/<name>`). */
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

/** Result of evaluating a policy for one request (kube's `auditinternal.RequestAuditConfig`). */
export interface RequestAuditConfig { level: AuditLevel; omitStages: AuditStage[]; omitManagedFields: boolean }

const RULE_FIELDS = new Set(['level', 'users', 'userGroups', 'verbs', 'resources', 'namespaces', 'nonResourceURLs', 'omitStages', 'omitManagedFields']);
const POLICY_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields']);
const GROUP_RESOURCE_FIELDS = new Set(['group', 'resources', 'resourceNames']);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Parses and validates an `audit.k8s.io/v1` Policy (YAML or JSON), as kube-apiserver's
 * `policy.LoadPolicyFromBytes` (k8s.io/apiserver/pkg/audit/policy/reader.go) and
 * `validation.ValidatePolicy` (k8s.io/apiserver/pkg/apis/audit/validation): a level on every rule,
 * known stages, no rule on both resources and non-resource URLs, non-resource URLs starting with
 * `/` with `*` only at the end, group names DNS subdomains, resourceNames only with resources, at
 * least one rule. Unknown fields are refused too (kube ignores them; a misspelt `namespace` would
 * silently widen a rule). @throws AuditPolicyError naming `source` and the field.
 */
export function parseAuditPolicy(text: string, source = 'audit policy'): AuditPolicy {
  const fail = (field: string, msg: string): never => { throw new AuditPolicyError(`${source}: ${field}: ${msg}`); };
  let doc: unknown;
  try { doc = parseYaml(text); } catch (err) { fail('(file)', `not valid YAML: ${(err as Error).message.split('\n')[0]}`); }
  if (!isObj(doc)) return fail('(file)', 'not an audit.k8s.io/v1 Policy object');
  if (doc.apiVersion !== 'audit.k8s.io/v1') fail('apiVersion', `Unsupported value: ${JSON.stringify(doc.apiVersion ?? '')}: supported values: "audit.k8s.io/v1"`);
  if (doc.kind !== 'Policy') fail('kind', `Unsupported value: ${JSON.stringify(doc.kind ?? '')}: supported values: "Policy"`);
  for (const k of Object.keys(doc)) if (!POLICY_FIELDS.has(k)) fail(k, 'unknown field');
  const stages = (v: unknown, field: string): AuditStage[] => strings(v, field, fail).map((s, i) => (AUDIT_STAGES as readonly string[]).includes(s) ? s as AuditStage : fail(`${field}[${i}]`, `Unsupported value: ${JSON.stringify(s)}: supported values: ${AUDIT_STAGES.map((x) => `"${x}"`).join(', ')}`));
  const bool = (v: unknown, field: string): boolean | undefined => v === undefined || v === null ? undefined : typeof v === 'boolean' ? v : fail(field, 'must be a boolean');
  if (doc.rules !== undefined && doc.rules !== null && !Array.isArray(doc.rules)) fail('rules', 'must be a list');
  const rawRules = (doc.rules ?? []) as unknown[];
  if (rawRules.length === 0) fail('rules', 'the policy has no rules (kube-apiserver refuses a policy with 0 rules)');
  const rules = rawRules.map((r, i): PolicyRule => {
    const f = `rules[${i}]`;
    if (!isObj(r)) return fail(f, 'must be an object');
    for (const k of Object.keys(r)) if (!RULE_FIELDS.has(k)) fail(`${f}.${k}`, 'unknown field');
    if (r.level === undefined || r.level === null || r.level === '') fail(`${f}.level`, 'Required value');
    if (!(AUDIT_LEVELS as readonly unknown[]).includes(r.level)) fail(`${f}.level`, `Unsupported value: ${JSON.stringify(r.level)}: supported values: ${AUDIT_LEVELS.map((x) => `"${x}"`).join(', ')}`);
    const nonResourceURLs = strings(r.nonResourceURLs, `${f}.nonResourceURLs`, fail);
    const namespaces = strings(r.namespaces, `${f}.namespaces`, fail);
    if (r.resources !== undefined && r.resources !== null && !Array.isArray(r.resources)) fail(`${f}.resources`, 'must be a list');
    const resources = ((r.resources ?? []) as unknown[]).map((g, j): GroupResources => {
      const gf = `${f}.resources[${j}]`;
      if (!isObj(g)) return fail(gf, 'must be an object');
      for (const k of Object.keys(g)) if (!GROUP_RESOURCE_FIELDS.has(k)) fail(`${gf}.${k}`, 'unknown field');
      const group = g.group === undefined || g.group === null ? '' : typeof g.group === 'string' ? g.group : fail(`${gf}.group`, 'must be a string');
      if (group && !DNS_SUBDOMAIN.test(group)) fail(`${gf}.group`, `Invalid value: ${JSON.stringify(group)}: a lowercase RFC 1123 subdomain (a group name, without its version)`);
      const res = strings(g.resources, `${gf}.resources`, fail);
      const names = strings(g.resourceNames, `${gf}.resourceNames`, fail);
      if (names.length && !res.length) fail(`${gf}.resourceNames`, 'using resourceNames requires at least one resource');
      return { group, resources: res, resourceNames: names };
    });
    if (nonResourceURLs.length && (resources.length || namespaces.length)) fail(`${f}.nonResourceURLs`, 'rules cannot apply to both regular resources and non-resource URLs');
    nonResourceURLs.forEach((u, j) => {
      if (u === '*') return;
      if (!u.startsWith('/')) fail(`${f}.nonResourceURLs[${j}]`, `Invalid value: ${JSON.stringify(u)}: non-resource URL rules must begin with a '/' character`);
      if (u.slice(0, -1).includes('*')) fail(`${f}.nonResourceURLs[${j}]`, `Invalid value: ${JSON.stringify(u)}: non-resource URL wildcards ('*') must be the final character of the rule`);
    });
    return {
      level: r.level as AuditLevel, users: strings(r.users, `${f}.users`, fail), userGroups: strings(r.userGroups, `${f}.userGroups`, fail),
      verbs: strings(r.verbs, `${f}.verbs`, fail), resources, namespaces, nonResourceURLs,
      omitStages: stages(r.omitStages, `${f}.omitStages`), omitManagedFields: bool(r.omitManagedFields, `${f}.omitManagedFields`),
    };
  });
  return { rules, omitStages: stages(doc.omitStages, 'omitStages'), omitManagedFields: bool(doc.omitManagedFields, 'omitManagedFields') ?? false };
}

/** Reads and parses `--audit-policy-file`. @throws AuditPolicyError naming the file */
export function loadAuditPolicy(file: string): AuditPolicy {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) { throw new AuditPolicyError(`--audit-policy-file ${file}: ${(err as Error).message}`); }
  return parseAuditPolicy(text, `--audit-policy-file ${file}`);
}


function strings(v: unknown, field: string, fail: (f: string, m: string) => never): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return fail(field, 'must be a list of strings');
  return v.map((s, i) => typeof s === 'string' ? s : fail(`${field}[${i}]`, 'must be a string'));
}

/**
 * The level and omitted stages of a request: the first rule that matches wins, no match is level
 * None; the policy's omitStages are added to the rule's, the rule's omitManagedFields overrides
 * the policy's. As kube's `policyRuleEvaluator.EvaluatePolicyRule` and `ruleMatches`
 * (k8s.io/apiserver/pkg/audit/policy/checker.go): users, userGroups (any group), verbs; then
 * namespaces/resources only match resource requests (`*`, `pods/log`, `*` + `/log`, `pods/*`,
 * resourceNames), nonResourceURLs only non-resource ones (exact, `*`, or a prefix ending in `*`).
 */
export function evaluatePolicy(policy: AuditPolicy, a: AuditAttributes): RequestAuditConfig {
  for (const r of policy.rules) {
    if (ruleMatches(r, a)) {
      return {
        level: r.level,
        omitStages: policy.omitStages.length ? [...new Set([...policy.omitStages, ...r.omitStages])] : r.omitStages,
        omitManagedFields: r.omitManagedFields ?? policy.omitManagedFields,
      };
    }
  }
  return { level: 'None', omitStages: policy.omitStages, omitManagedFields: policy.omitManagedFields };
}

function ruleMatches(r: PolicyRule, a: AuditAttributes): boolean {
  if (r.users.length && (!a.user || !r.users.includes(a.user.name))) return false;
  if (r.userGroups.length && (!a.user || !a.user.groups.some((g) => r.userGroups.includes(g)))) return false;
  if (r.verbs.length && !r.verbs.includes(a.verb)) return false;
  if (r.namespaces.length || r.resources.length) return ruleMatchesResource(r, a);
  if (r.nonResourceURLs.length) {
    if (a.isResourceRequest) return false;
    return r.nonResourceURLs.some((spec) => spec === '*' || spec === a.path || (spec.endsWith('*') && a.path.startsWith(spec.replace(/\*+$/, ''))));
  }
  return true;
}

function ruleMatchesResource(r: PolicyRule, a: AuditAttributes): boolean {
  if (!a.isResourceRequest) return false;
  if (r.namespaces.length && !r.namespaces.includes(a.namespace)) return false;
  if (!r.resources.length) return true;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  for (const gr of r.resources) {
    if (gr.group !== a.apiGroup) continue;
    if (!gr.resources.length) return true;
    if (gr.resourceNames.length && !gr.resourceNames.includes(a.name)) continue;
    for (const res of gr.resources) {
      if (res === combined || res === '*') return true;
      if (a.subresource && res.startsWith('*/') && res.slice(2) === a.subresource) return true;
      if (res.endsWith('/*') && res.slice(0, -2) === a.resource) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Writer

/** Options of {@link AuditLogWriter}, kube's `--audit-log-*` flags. */
export interface AuditLogOptions {
  /** File path, or `-` for stdout. */
  path: string;
  /** Rotate when the file would exceed this many bytes; 0 means lumberjack's default, 100 MiB. */
  maxSizeBytes?: number;
  /** Rotated files kept (the newest); 0 keeps all (lumberjack `MaxBackups`). */
  maxBackups?: number;
  /** Days rotated files are kept (by the timestamp in their name); 0 keeps them (lumberjack `MaxAge`). */
  maxAgeDays?: number;
  /** Events buffered while a write is in flight; beyond it events are dropped (kube's batch buffer, 10,000). */
  bufferEvents?: number;
  /** Warnings (dropped events, write failures). */
  warn?: (msg: string) => void;
  /** Clock, for tests of the rotated files' names. */
  now?: () => Date;
}

const MIB = 1024 * 1024;

/**
 * The rotated name of `file` at `t`, as lumberjack's `backupName` (gopkg.in/natefinch/lumberjack.v2,
 * which kube's log backend uses; UTC): `<dir>/<name>-2006-01-02T15-04-05.000<ext>`.
 */
export function rotatedName(file: string, t: Date): string {
  const ext = extname(file);
  const name = basename(file, ext);
  const stamp = t.toISOString().replace(/:/g, '-').replace(/Z$/, '');
  return join(dirname(file), `${name}-${stamp}${ext}`);
}

/**
 * Writes audit events as JSON lines without blocking the request path: `write` appends to an
 * in-memory buffer, one asynchronous file write at a time takes everything buffered (so batches
 * grow with the load). kube's log backend defaults to blocking mode (each event written inside the
 * request); this is its `batch` mode without the timer: nothing waits, and at most `bufferEvents`
 * events wait (more are dropped with a warning, as kube's batch buffer). Rotation as lumberjack:
 * before a write that would take the file over `maxSizeBytes`, the file is renamed to
 * {@link rotatedName} and a new one started; then backups beyond `maxBackups` or older than
 * `maxAgeDays` are removed. `flush()` waits until everything written so far is on disk; `close()`
 * flushes and closes (server shutdown).
 */
export class AuditLogWriter {
  readonly path: string;
  private readonly max: number;
  private readonly maxBackups: number;
  private readonly maxAgeDays: number;
  private readonly bufferEvents: number;
  private readonly warn: (msg: string) => void;
  private readonly now: () => Date;
  private pending: string[] = [];
  private draining: Promise<void> | undefined;
  private fh: FileHandle | undefined;
  private size = 0;
  private dropped = 0;
  private lastDropWarning = 0;
  private closed = false;

  constructor(opts: AuditLogOptions) {
    this.path = opts.path;
    this.max = opts.maxSizeBytes && opts.maxSizeBytes > 0 ? opts.maxSizeBytes : 100 * MIB;
    this.maxBackups = opts.maxBackups ?? 0;
    this.maxAgeDays = opts.maxAgeDays ?? 0;
    this.bufferEvents = opts.bufferEvents ?? 10_000;
    this.warn = opts.warn ?? ((m) => process.stderr.write(`${m}\n`));
    this.now = opts.now ?? (() => new Date());
    if (this.path !== '-') {
      // Fails at start-up, not at the first event, when the file cannot be written.
      closeSync(openSync(this.path, 'a', 0o600));
      this.size = statSync(this.path).size;
    }
  }

  /** Events dropped because the buffer was full. */
  get droppedEvents(): number { return this.dropped; }

  /** Queues one event (an object, serialized here, or a JSON line without its newline). */
  write(event: object | string): void {
    if (this.closed) return;
    if (this.pending.length >= this.bufferEvents) {
      this.dropped++;
      const t = Date.now();
      if (t - this.lastDropWarning > 1000) { this.lastDropWarning = t; this.warn(`audit: buffer of ${this.bufferEvents} events full, ${this.dropped} events dropped so far`); }
      return;
    }
    this.pending.push(`${typeof event === 'string' ? event : JSON.stringify(event)}\n`);
    this.draining ??= this.drain();
  }

  /** Resolves once every event queued before the call is written. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Flushes, then closes the file; later events are ignored. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
  }

  private async drain(): Promise<void> {
    try {
      // Let the current tick's events join the batch.
      await new Promise<void>((r) => setImmediate(r));
      while (this.pending.length) {
        const lines = this.pending;
        this.pending = [];
        try { await this.writeLines(lines); } catch (err) { this.warn(`audit: writing ${this.path}: ${(err as Error).message}`); }
      }
    } finally { this.draining = undefined; }
  }

  private async writeLines(lines: string[]): Promise<void> {
    if (this.path === '-') {
      const chunk = lines.join('');
      await new Promise<void>((resolve) => { if (process.stdout.write(chunk)) resolve(); else process.stdout.once('drain', resolve); });
      return;
    }
    let i = 0;
    while (i < lines.length) {
      // The longest run of lines that fits in the current file (a single line larger than the
      // maximum goes into a file of its own).
      let bytes = 0;
      let j = i;
      while (j < lines.length) {
        const n = Buffer.byteLength(lines[j]!);
        if (this.size + bytes + n > this.max && (j > i || this.size > 0)) break;
        bytes += n;
        j++;
      }
      if (j === i) { await this.rotate(); continue; }
      this.fh ??= await open(this.path, 'a', 0o600);
      await this.fh.write(lines.slice(i, j).join(''));
      this.size += bytes;
      i = j;
    }
  }

  private async rotate(): Promise<void> {
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    renameSync(this.path, rotatedName(this.path, this.now()));
    this.size = 0;
    this.fh = await open(this.path, 'a', 0o600);
    this.removeOldBackups();
  }

  /** lumberjack's `millRunOnce`: backups beyond MaxBackups, or older than MaxAge days, are removed. */
  private removeOldBackups(): void {
    if (!this.maxBackups && !this.maxAgeDays) return;
    const dir = dirname(this.path);
    const ext = extname(this.path);
    const prefix = `${basename(this.path, ext)}-`;
    const backups: { file: string; t: number }[] = [];
    for (const f of readdirSync(dir)) {
      if (!f.startsWith(prefix) || !f.endsWith(ext)) continue;
      const stamp = f.slice(prefix.length, f.length - ext.length);
      const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(stamp);
      if (!m) continue;
      backups.push({ file: join(dir, f), t: Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`) });
    }
    backups.sort((a, b) => b.t - a.t);
    const cutoff = this.now().getTime() - this.maxAgeDays * 86_400_000;
    backups.forEach((b, i) => {
      if ((this.maxBackups && i >= this.maxBackups) || (this.maxAgeDays && b.t < cutoff)) {
        try { unlinkSync(b.file); } catch { /* already gone */ }
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Events

/** kube's authentication/v1 UserInfo as it appears in audit events. */
export interface AuditUser { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }

/** An `audit.k8s.io/v1` Event. */
export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: AuditLevel;
  auditID: string;
  stage: AuditStage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; apiVersion?: string; subresource?: string };
  responseStatus?: { metadata: Record<string, never>; status?: string; message?: string; reason?: string; details?: unknown; code: number };
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** kcp's audit annotation with the request's logical cluster (kcp pkg/server/filters `WithAuditEventClusterAnnotation`). */
export const WORKSPACE_ANNOTATION = 'tenancy.kcp.io/workspace';
/** kube's authorization annotations (k8s.io/apiserver/pkg/endpoints/filters/authorization.go). */
export const DECISION_ANNOTATION = 'authorization.k8s.io/decision';
export const REASON_ANNOTATION = 'authorization.k8s.io/reason';

/** Wall-clock time in ms with sub-millisecond precision. */
function nowMs(): number { return performance.timeOrigin + performance.now(); }

/** RFC 3339 with microseconds, as kube's `metav1.MicroTime`: `2006-01-02T15:04:05.000000Z`. */
export function microTime(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.min(999, Math.round((ms - whole) * 1000));
  return `${new Date(whole).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

/** kube's `utilnet.SourceIPs`: X-Forwarded-For, X-Real-Ip, then the connection's address. */
export function sourceIPs(headers: Record<string, string | string[] | undefined>, remote: string | undefined): string[] {
  const out: string[] = [];
  const first = (h: string | string[] | undefined) => Array.isArray(h) ? h[0] : h;
  for (const ip of (first(headers['x-forwarded-for']) ?? '').split(',')) if (ip.trim()) out.push(ip.trim());
  const real = first(headers['x-real-ip'])?.trim();
  if (real && !out.includes(real)) out.push(real);
  const r = remote?.startsWith('::ffff:') ? remote.slice(7) : remote;
  if (r && !out.includes(r)) out.push(r);
  return out;
}

function auditUser(u: UserInfo | undefined): AuditUser {
  if (!u) return { username: '' };
  const out: AuditUser = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

function withoutManagedFields(obj: unknown): unknown {
  if (!isObj(obj)) return obj;
  const meta = obj.metadata;
  let out = obj;
  if (isObj(meta) && 'managedFields' in meta) {
    const { managedFields: _drop, ...rest } = meta;
    out = { ...obj, metadata: rest };
  }
  if (Array.isArray(out.items)) out = { ...out, items: out.items.map(withoutManagedFields) };
  return out;
}

/** What the request handlers tell the audit layer (fields of `req.kcpInfo` and the decision). */
interface RequestState {
  auditor: Auditor;
  id: string;
  received: number;
  /** The authenticated user, before impersonation. */
  authUser?: UserInfo;
  config?: RequestAuditConfig;
  annotations?: Record<string, string>;
  /** Serialized response body kept for RequestResponse / Status responses (JSON, YAML or protobuf). */
  payload?: string | Buffer;
  /** Its Content-Type. */
  payloadType?: string;
  receivedWritten?: boolean;
  completed?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    kcpAudit?: RequestState;
  }
}

/** A configured audit: the policy and where events go. */
export interface Auditor { policy: AuditPolicy; writer: AuditLogWriter }

/** The policy's attributes of a request, from `req.kcpInfo` when the handler got that far. */
function attributesOf(req: FastifyRequest, user: UserInfo | undefined): AuditAttributes {
  const info = req.kcpInfo;
  if (info) {
    return { user, verb: info.verb, isResourceRequest: info.isResourceRequest, path: info.path, apiGroup: info.apiGroup, resource: info.resource, subresource: info.subresource, namespace: info.namespace, name: info.name };
  }
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const m = req.method;
  return { user, verb: m === 'GET' || m === 'HEAD' ? 'get' : m.toLowerCase(), isResourceRequest: false, path, apiGroup: '', resource: '', subresource: '', namespace: '', name: '' };
}

/** The level of a request, evaluated once (with the authenticated user, as kube's WithAudit). */
function configOf(auditor: Auditor, req: FastifyRequest, st: RequestState): RequestAuditConfig {
  st.config ??= evaluatePolicy(auditor.policy, attributesOf(req, st.authUser ?? req.kcpUser));
  return st.config;
}

/**
 * Records an annotation on the request's audit event (kube's `audit.AddAuditAnnotation`); a no-op
 * when auditing is off.
 */
export function addAuditAnnotation(req: FastifyRequest, key: string, value: string): void {
  const st = req.kcpAudit;
  if (!st) return;
  (st.annotations ??= {})[key] ??= value;
}

/**
 * Records the authorization decision as kube's WithAuthorization filter does:
 * `authorization.k8s.io/decision` `allow`/`forbid` and `authorization.k8s.io/reason`.
 */
export function auditAuthorization(req: FastifyRequest, allowed: boolean, reason: string): void {
  if (!req.kcpAudit) return;
  addAuditAnnotation(req, DECISION_ANNOTATION, allowed ? 'allow' : 'forbid');
  addAuditAnnotation(req, REASON_ANNOTATION, reason);
}

/**
 * A watch's response has started (its headers are out): writes RequestReceived (if not yet) and
 * ResponseStarted, as kube does for long-running requests. A no-op when auditing is off.
 */
export function auditResponseStarted(req: FastifyRequest, reply: FastifyReply): void {
  const st = req.kcpAudit;
  if (!st || st.completed) return;
  const auditor = st.auditor;
  const cfg = configOf(auditor, req, st);
  if (cfg.level === 'None') return;
  writeReceived(auditor, req, st, cfg);
  if (!cfg.omitStages.includes('ResponseStarted')) auditor.writer.write(buildEvent(req, reply, st, cfg, 'ResponseStarted'));
}

function writeReceived(auditor: Auditor, req: FastifyRequest, st: RequestState, cfg: RequestAuditConfig): void {
  if (st.receivedWritten) return;
  st.receivedWritten = true;
  if (!cfg.omitStages.includes('RequestReceived')) auditor.writer.write(buildEvent(req, undefined, st, cfg, 'RequestReceived'));
}

/** Builds the event of one stage (kube's `audit.NewEventFromRequest` plus what the handlers logged). */
function buildEvent(req: FastifyRequest, reply: FastifyReply | undefined, st: RequestState, cfg: RequestAuditConfig, stage: AuditStage): AuditEvent {
  const info = req.kcpInfo;
  const authUser = st.authUser ?? req.kcpUser;
  // Built in kube's field order (the timestamps come after the objects).
  const ev = {
    kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: cfg.level, auditID: st.id, stage, requestURI: req.url,
    verb: info?.verb ?? attributesOf(req, undefined).verb, user: auditUser(authUser),
  } as AuditEvent;
  // Impersonation is a later filter than WithAudit: RequestReceived does not know of it yet.
  if (stage !== 'RequestReceived' && req.kcpUser && authUser && req.kcpUser !== authUser) ev.impersonatedUser = auditUser(req.kcpUser);
  ev.sourceIPs = sourceIPs(req.headers, req.raw.socket?.remoteAddress);
  const ua = req.headers['user-agent'];
  if (ua) ev.userAgent = ua;
  let requestObject: unknown;
  if (info?.isResourceRequest) {
    const ref: NonNullable<AuditEvent['objectRef']> = {};
    if (info.resource) ref.resource = info.resource;
    if (info.namespace) ref.namespace = info.namespace;
    if (info.name) ref.name = info.name;
    if (info.apiGroup) ref.apiGroup = info.apiGroup;
    if (info.apiVersion) ref.apiVersion = info.apiVersion;
    if (info.subresource) ref.subresource = info.subresource;
    if (stage !== 'RequestReceived' && ['create', 'update', 'patch', 'delete'].includes(info.verb)) {
      requestObject = requestObjectOf(req);
      // kube's LogRequestObject fills the name and namespace from the request object.
      if (isObj(requestObject) && isObj(requestObject.metadata)) {
        const meta = requestObject.metadata;
        if (!ref.name && typeof meta.name === 'string' && meta.name) ref.name = meta.name;
        if (!ref.namespace && typeof meta.namespace === 'string' && meta.namespace) ref.namespace = meta.namespace;
      }
    }
    ev.objectRef = ref;
  }
  if (reply && stage !== 'RequestReceived') {
    const code = reply.statusCode;
    ev.responseStatus = { metadata: {}, code };
    const status = st.payload !== undefined && isStatusBody(st.payload, st.payloadType) ? decodePayload(st.payload, st.payloadType) : undefined;
    if (isObj(status)) {
      if (typeof status.status === 'string') ev.responseStatus.status = status.status;
      if (typeof status.message === 'string' && status.message) ev.responseStatus.message = status.message;
      if (typeof status.reason === 'string' && status.reason) ev.responseStatus.reason = status.reason;
      if (status.details !== undefined) ev.responseStatus.details = status.details;
    }
  }
  if (requestObject !== undefined && (cfg.level === 'Request' || cfg.level === 'RequestResponse')) {
    ev.requestObject = cfg.omitManagedFields ? withoutManagedFields(requestObject) : requestObject;
  }
  if (stage === 'ResponseComplete' && cfg.level === 'RequestResponse' && st.payload !== undefined && info?.verb !== 'watch') {
    const obj = decodePayload(st.payload, st.payloadType);
    if (obj !== undefined) ev.responseObject = cfg.omitManagedFields ? withoutManagedFields(obj) : obj;
  }
  ev.requestReceivedTimestamp = microTime(st.received);
  ev.stageTimestamp = stage === 'RequestReceived' ? ev.requestReceivedTimestamp : microTime(nowMs());
  const annotations: Record<string, string> = {};
  const cluster = info?.cluster;
  if (cluster && cluster !== '*') annotations[WORKSPACE_ANNOTATION] = cluster;
  if (stage !== 'RequestReceived' && st.annotations) Object.assign(annotations, st.annotations);
  if (Object.keys(annotations).length) ev.annotations = annotations;
  return ev;
}

function requestObjectOf(req: FastifyRequest): unknown {
  const body = req.body;
  if (!Buffer.isBuffer(body) || !body.length) return undefined;
  return decodePayload(body, req.headers['content-type']);
}

/**
 * A request or response body as the object it carries: protobuf decoded by the codec (the audit
 * log holds objects in JSON whatever the wire form, as kube's), JSON parsed; undefined otherwise.
 */
function decodePayload(body: string | Buffer, contentType: string | undefined): unknown {
  if (Buffer.isBuffer(body) && isKubernetesProtobuf(contentType)) {
    try { return decodeKubernetesProtobuf(body); } catch { return undefined; }
  }
  return safeParse(typeof body === 'string' ? body : body.toString('utf8'));
}

const JSON_STATUS_PREFIX = '{"kind":"Status"';

/**
 * Whether a response body is a meta/v1 Status: JSON starting with its kind (as this server writes
 * it), or a protobuf envelope whose TypeMeta (field 1: apiVersion = 1, kind = 2) names `Status`.
 */
function isStatusBody(body: string | Buffer, contentType: string | undefined): boolean {
  if (typeof body === 'string') return body.startsWith(JSON_STATUS_PREFIX);
  if (!isKubernetesProtobuf(contentType)) return body.subarray(0, JSON_STATUS_PREFIX.length).toString('latin1') === JSON_STATUS_PREFIX;
  // magic(4) 0x0a <typeMeta length> 0x0a <apiVersion length> <apiVersion> 0x12 <kind length> <kind>
  if (body[4] !== 0x0a || body[6] !== 0x0a) return false;
  const kindAt = 8 + body[7]!;
  return body[kindAt] === 0x12 && body[kindAt + 1] === 6 && body.subarray(kindAt + 2, kindAt + 8).toString('latin1') === 'Status';
}

function safeParse(s: string): unknown {
  try { return JSON.parse(s); } catch { return undefined; }
}

/**
 * Hooks auditing into the app (call it before the authentication hook is added, so that failed
 * authentications are audited too): `onRequest` gives each request its audit ID (the client's
 * `Audit-ID` header if any, else a UUID; answered in the `Audit-Id` header, as kube's
 * WithAuditInit), `preHandler` remembers the authenticated user before impersonation, `onSend`
 * keeps the response body when the event needs it (Status fields of failures; responseObject at
 * RequestResponse), `onResponse` writes RequestReceived and ResponseComplete. A watch's reply is
 * written by the watch itself (hijacked): {@link auditResponseStarted} writes ResponseStarted and
 * the response's `close` its ResponseComplete.
 */
export function installAudit(app: FastifyInstance, auditor: Auditor): void {
  const complete = (req: FastifyRequest, reply: FastifyReply) => {
    const st = req.kcpAudit;
    if (!st || st.completed) return;
    st.completed = true;
    const cfg = configOf(auditor, req, st);
    if (cfg.level === 'None') return;
    writeReceived(auditor, req, st, cfg);
    if (!cfg.omitStages.includes('ResponseComplete')) auditor.writer.write(buildEvent(req, reply, st, cfg, 'ResponseComplete'));
  };
  app.addHook('onRequest', (req, reply, done) => {
    const given = req.headers['audit-id'];
    const id = typeof given === 'string' && given.trim() ? given.trim() : randomUUID();
    req.kcpAudit = { auditor, id, received: nowMs() };
    reply.raw.setHeader('Audit-Id', id);
    // A hijacked reply (watch) whose client goes away never 'finish'es: complete it on 'close'.
    if (req.url.includes('watch')) reply.raw.once('close', () => complete(req, reply));
    done();
  });
  app.addHook('preHandler', (req, _reply, done) => {
    if (req.kcpAudit) req.kcpAudit.authUser = req.kcpUser;
    done();
  });
  app.addHook('onSend', (req, reply, payload, done) => {
    const st = req.kcpAudit;
    if (st && (typeof payload === 'string' || Buffer.isBuffer(payload))) {
      const type = reply.getHeader('content-type') as string | undefined;
      if (reply.statusCode >= 400 || isStatusBody(payload, type) || configOf(auditor, req, st).level === 'RequestResponse') { st.payload = payload; st.payloadType = type; }
    }
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => { complete(req, reply); done(); });
}
