/**
 * Hostile input fuzz: a seeded, bounded fuzzer over every route of a shard. Each case is a pure
 * function of (seed, index) — `generateCase(seed, i)` — so a failure is reproduced from its seed
 * and index alone. Cases are sent over raw TLS sockets (node:tls), which lets them carry what an
 * HTTP client library refuses to send: bogus methods, lying Content-Length, chunked garbage,
 * invalid header bytes, half-closed and trickled connections.
 *
 * What the server must do with all of it: answer a Kubernetes 4xx (or a 2xx when the input
 * happens to be valid) or close the connection of an unparseable request — never a 5xx, never
 * no answer at all (a hang), never exit; its memory stays bounded.
 *
 * Used by test/e2e/fuzz.test.ts (a short run) and `npm run fuzz` (a long one, test/fuzz/run.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, freePort, prng, sleep, spawnCli, stopCli, type CliProcess, type Creds } from '../helpers.js';

// ---------------------------------------------------------------------------------------------
// PRNG


/** Random choices over a mulberry32 stream. */
export class Rng {
  private readonly f: () => number;
  /** A stream seeded with `seed`. */
  constructor(seed: number) { this.f = prng(seed); }
  /** A float in [0, 1). */
  next(): number { return this.f(); }
  /** An integer in [0, n). */
  int(n: number): number { return Math.floor(this.f() * n); }
  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number { return lo + this.int(hi - lo + 1); }
  /** True with probability p. */
  bool(p = 0.5): boolean { return this.f() < p; }
  /** One element of a non-empty array. */
  pick<T>(xs: readonly T[]): T { return xs[this.int(xs.length)]!; }
}

/** The seed of case `index` of a run seeded `seed` (a 32-bit mix of both). */
function caseSeed(seed: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ index, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// What a case is

/** One HTTP request, written on the wire exactly as given (plus Host and Connection: close). */
export interface HttpCase {
  kind: 'http';
  /** What the generator meant to exercise, for the report. */
  label: string;
  method: string;
  path: string;
  headers: [string, string][];
  body?: Buffer;
  /** Send no client certificate (anonymous). */
  anonymous?: boolean;
  /** A watch: the answer's headers are enough, the stream is then closed. */
  streaming?: boolean;
  /** Override of the Content-Length header ('omit' sends none). Default: the body's length when there is a body. */
  contentLength?: number | 'omit';
}

/** A connection-level case: what is written how, and what the server may do about it. */
export interface RawCase {
  kind: 'raw';
  label: string;
  /**
   * - `half-close`: the request, then FIN; an answer (or a clean close for an incomplete request) is due.
   * - `truncated`: headers with a Content-Length larger than the body sent, then FIN.
   * - `truncated-abort`: same, then the connection is destroyed (the server must just survive).
   * - `slowloris`: a valid request trickled a few bytes at a time over `trickleMs`; an answer is due.
   * - `slowloris-stall`: a request's first bytes, then silence for `trickleMs`, then destroy.
   * - `chunked-garbage`: Transfer-Encoding: chunked with invalid chunk framing, then FIN.
   * - `plaintext`: plain HTTP (or random bytes) to the TLS port.
   * - `idle-flood`: `count` TLS connections opened and held idle for `trickleMs`, then destroyed.
   * - `pipelined`: several requests in one write, the last with Connection: close.
   */
  mode: 'half-close' | 'truncated' | 'truncated-abort' | 'slowloris' | 'slowloris-stall' | 'chunked-garbage' | 'plaintext' | 'idle-flood' | 'pipelined';
  /** Bytes to write (request head and body as they go on the wire). */
  bytes: Buffer;
  trickleMs?: number;
  count?: number;
}

/** A generated case. */
export type FuzzCase = HttpCase | RawCase;

/** What happened to one case. */
export interface Outcome {
  /** HTTP status of the (first) answer, when one came. */
  status?: number;
  /** No answer within the deadline while the connection stayed open: a hang. */
  hang?: boolean;
  /** The connection closed (or was reset) without an answer. */
  closed?: boolean;
  /** Connection refused: the server is gone. */
  refused?: boolean;
  /** Start of the answer's body (for 5xx reports). */
  bodyStart?: string;
  /** Client-side error message, if any. */
  error?: string;
  ms: number;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary: routes, clusters, objects

/** One resource of the shard's API, with a valid object to start mutations from. */
interface Route {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
  subresources: string[];
  /** Verbs beyond create only (virtual review resources take create only). */
  createOnly?: boolean;
  make(name: string, ns: string): Record<string, unknown>;
}

/** Group, version and plural of the CRD the run installs (status and scale subresources). */
export const FUZZ_CRD = { group: 'fuzz.kcp-ts.io', version: 'v1', plural: 'widgets', kind: 'Widget' };

const meta = (name: string, ns: string, namespaced: boolean) => ({ name, ...(namespaced ? { namespace: ns } : {}), labels: { fuzz: 'yes' } });
const rule = { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] };

/** Every resource route the fuzzer addresses (built-in, kcp and the fuzz CRD). */
export const ROUTES: Route[] = [
  { group: '', version: 'v1', plural: 'namespaces', namespaced: false, subresources: ['status', 'finalize'], make: (n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: meta(n, '', false) }) },
  { group: '', version: 'v1', plural: 'configmaps', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(n, ns, true), data: { a: '1', b: 'two' }, binaryData: { c: 'AAE=' } }) },
  { group: '', version: 'v1', plural: 'secrets', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'v1', kind: 'Secret', metadata: meta(n, ns, true), type: 'Opaque', data: { k: 'dmFsdWU=' }, stringData: { s: 'plain' } }) },
  { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true, subresources: ['token'], make: (n, ns) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(n, ns, true), automountServiceAccountToken: false }) },
  { group: '', version: 'v1', plural: 'events', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'v1', kind: 'Event', metadata: meta(n, ns, true), involvedObject: { kind: 'ConfigMap', name: 'x', namespace: ns }, reason: 'Fuzz', message: 'm', type: 'Normal', count: 1 }) },
  { group: 'events.k8s.io', version: 'v1', plural: 'events', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: meta(n, ns, true), eventTime: '2026-01-01T00:00:00.000000Z', reportingController: 'fuzz', reportingInstance: 'f', action: 'A', reason: 'R', type: 'Normal', regarding: { kind: 'ConfigMap', name: 'x' } }) },
  { group: '', version: 'v1', plural: 'limitranges', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'v1', kind: 'LimitRange', metadata: meta(n, ns, true), spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } }) },
  { group: '', version: 'v1', plural: 'resourcequotas', namespaced: true, subresources: ['status'], make: (n, ns) => ({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: meta(n, ns, true), spec: { hard: { configmaps: '1000' } } }) },
  { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta(n, ns, true), spec: { holderIdentity: 'h', leaseDurationSeconds: 10 } }) },
  { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(n, ns, true), rules: [rule] }) },
  { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', namespaced: true, subresources: [], make: (n, ns) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta(n, ns, true), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'fuzz-user', apiGroup: 'rbac.authorization.k8s.io' }] }) },
  { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', namespaced: false, subresources: [], make: (n) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(n, '', false), rules: [rule, { nonResourceURLs: ['/fuzz'], verbs: ['get'] }], aggregationRule: undefined }) },
  { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings', namespaced: false, subresources: [], make: (n) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(n, '', false), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'Group', name: 'fuzzers', apiGroup: 'rbac.authorization.k8s.io' }] }) },
  { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false, subresources: ['status'], make: (n) => crdObject(`${n.replace(/[^a-z0-9]/g, '')}s.fuzzgen.kcp-ts.io`, n.replace(/[^a-z0-9]/g, '')) },
  { group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectaccessreviews', namespaced: false, subresources: [], createOnly: true, make: () => ({ apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'fuzz' } } }) },
  { group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectrulesreviews', namespaced: false, subresources: [], createOnly: true, make: () => ({ apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace: 'fuzz' } }) },
  { group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews', namespaced: false, subresources: [], createOnly: true, make: () => ({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'alice', groups: ['g'], extra: { e: ['1'] }, resourceAttributes: { verb: 'list', group: '', resource: 'secrets' }, nonResourceAttributes: undefined } }) },
  { group: 'authentication.k8s.io', version: 'v1', plural: 'selfsubjectreviews', namespaced: false, subresources: [], createOnly: true, make: () => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }) },
  { group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces', namespaced: false, subresources: ['status'], make: (n) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: meta(n, '', false), spec: { type: { name: 'universal', path: 'root' } } }) },
  { group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspacetypes', namespaced: false, subresources: ['status'], make: (n) => ({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: meta(n, '', false), spec: { defaultChildWorkspaceType: { name: 'universal', path: 'root' } } }) },
  { group: 'core.kcp.io', version: 'v1alpha1', plural: 'logicalclusters', namespaced: false, subresources: ['status'], make: () => ({ apiVersion: 'core.kcp.io/v1alpha1', kind: 'LogicalCluster', metadata: { name: 'cluster' }, spec: { initializers: [] } }) },
  { group: 'core.kcp.io', version: 'v1alpha1', plural: 'shards', namespaced: false, subresources: ['status'], make: (n) => ({ apiVersion: 'core.kcp.io/v1alpha1', kind: 'Shard', metadata: meta(n, '', false), spec: { baseURL: 'https://127.0.0.1:1' } }) },
  { group: FUZZ_CRD.group, version: FUZZ_CRD.version, plural: FUZZ_CRD.plural, namespaced: true, subresources: ['status', 'scale'], make: (n, ns) => ({ apiVersion: `${FUZZ_CRD.group}/${FUZZ_CRD.version}`, kind: FUZZ_CRD.kind, metadata: meta(n, ns, true), spec: { replicas: 1, size: 'M', tags: ['a'], nested: { x: 1 } } }) },
];

/** A CustomResourceDefinition with a structural schema, status and scale subresources. */
export function crdObject(name: string, plural: string, group = name.slice(plural.length + 1)): Record<string, unknown> {
  const kind = plural.charAt(0).toUpperCase() + plural.slice(1, -1) || 'Thing';
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name },
    spec: {
      group, scope: 'Namespaced', names: { plural, singular: plural.slice(0, -1) || 'x', kind, listKind: `${kind}List` },
      versions: [{
        name: 'v1', served: true, storage: true,
        subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
        schema: { openAPIV3Schema: { type: 'object', properties: {
          spec: { type: 'object', properties: { replicas: { type: 'integer', minimum: 0, default: 1 }, size: { type: 'string', enum: ['S', 'M', 'L'] }, tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' }, nested: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            'x-kubernetes-validations': [{ rule: 'self.replicas <= 100', message: 'too many' }] },
          status: { type: 'object', properties: { replicas: { type: 'integer' } } },
        } } },
      }],
    },
  };
}

/** The CRD of the regex cases: tenant patterns on string fields, by OpenAPI `pattern` and CEL. */
export const REGEX_CRD = { group: 'fuzz.kcp-ts.io', version: 'v1', plural: 'regexes', kind: 'Regex' };

/** A pattern nested quantifiers make exponential for a backtracking engine (RE2: linear). */
const NESTED = '^(a+)+$';

/**
 * The regex CRD: `spec.s` has `pattern: ^(a+)+$`; rules test `spec.t` against the same pattern
 * (CEL `matches` with a constant), and `spec.u` against the tenant's own pattern `spec.p`
 * (`matches`, `find`, `findAll`: compiled at run time). Lengths are bounded as kube's CEL cost
 * estimation wants them.
 */
export function regexCrdObject(name = `${REGEX_CRD.plural}.${REGEX_CRD.group}`, pattern = NESTED, rule = `!has(self.t) || self.t.matches('${NESTED}')`): Record<string, unknown> {
  const str = (maxLength: number, extra: Record<string, unknown> = {}) => ({ type: 'string', maxLength, ...extra });
  const [plural, ...group] = name.split('.');
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name },
    spec: {
      group: group.join('.'), scope: 'Namespaced', names: { plural, singular: 'regex', kind: REGEX_CRD.kind, listKind: `${REGEX_CRD.kind}List` },
      versions: [{
        name: 'v1', served: true, storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: {
          spec: { type: 'object', properties: { s: str(1_000_000, { pattern }), t: str(100_000), u: str(10_000), p: str(256) },
            'x-kubernetes-validations': [
              { rule },
              { rule: '!has(self.u) || !has(self.p) || self.u.matches(self.p) || self.u.find(self.p) == "" || self.u.findAll(self.p, 3).size() >= 0', message: 'no match' },
            ] },
        } } },
      }],
    },
  };
}

/** Patterns that are slow for a backtracking engine, and patterns Go's regexp refuses (a 422). */
const HOSTILE_PATTERNS = [NESTED, '(a|aa)*$', '(a*)*b', '^(a|a?)+$', '(.*a){12}', '^([a-z]+)*[0-9]$', '(\\w+\\s?)*$', '^(a+)+\\z', '(?i)^(A+)+$', '(x+x+)+y',
  '(?=a)', '(?!a)b', '(?<=a)b', '(a)\\1', 'a++', '(?>a)', '\\u0061', '(', 'a{1001}', '[[:word:]]+\\pL*'];
/** Values that make those patterns backtrack: a long run the pattern almost matches, then a mismatch. */
const HOSTILE_LENGTHS = [27, 40, 100, 1000, 9000];

function hostileRun(r: Rng): string {
  const n = r.pick(HOSTILE_LENGTHS);
  return r.pick(['a', 'x', 'ab', 'a ']).repeat(n).slice(0, n) + r.pick(['!', '', '0', '\u00e9', '\ud83d\ude00']);
}

/** Custom resources with values hostile to the CRD's patterns, and CRDs (dry run) with hostile patterns. */
function regexCase(r: Rng): HttpCase {
  const headers: [string, string][] = [['Content-Type', 'application/json']];
  if (r.bool(0.75)) {
    const spec: Record<string, string> = {};
    for (const f of ['s', 't', 'u']) if (r.bool(0.6)) spec[f] = hostileRun(r);
    if (spec.u !== undefined || r.bool(0.3)) spec.p = r.pick(HOSTILE_PATTERNS);
    const body = { apiVersion: `${REGEX_CRD.group}/${REGEX_CRD.version}`, kind: REGEX_CRD.kind, metadata: { generateName: 'fz-re-', labels: { fuzz: 'yes' } }, spec };
    return { kind: 'http', label: `regexes create hostile values ${Object.keys(spec).join('')}`, method: 'POST', path: `/clusters/root/apis/${REGEX_CRD.group}/${REGEX_CRD.version}/namespaces/fuzz/${REGEX_CRD.plural}?dryRun=All`, headers, body: Buffer.from(JSON.stringify(body)) };
  }
  const pattern = r.pick(HOSTILE_PATTERNS);
  const inRule = r.bool();
  const rule = inRule ? `self.s.matches(${JSON.stringify(pattern)}) || self.s.findAll(${JSON.stringify(pattern)}).size() > 0` : undefined;
  const crd = regexCrdObject(`fzpatterns.fuzzgen.kcp-ts.io`, inRule ? '^a*$' : pattern, rule);
  return { kind: 'http', label: `customresourcedefinitions create hostile pattern in ${inRule ? 'rule' : 'schema'}`, method: 'POST', path: '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All', headers, body: Buffer.from(JSON.stringify(crd)) };
}

/** Logical cluster paths: valid, resolvable ones and hostile ones. */
const CLUSTERS_OK = ['root', 'root:fuzz-ws', '*', 'system:admin', 'root:fuzz-ws:missing', 'user:admin'];
const CLUSTERS_ODD = ['..', '%2e%2e', '.', 'root%2F..', 'root:..', 'ROOT', 'root:', ':root', 'root::x', '%00', '%ff', '%', '%zz', '~', 'a'.repeat(300), `root:${'b'.repeat(70)}`,
  'root%3Afuzz-ws', 'root/fuzz-ws', ' root', 'root%20', '%C0%AE%C0%AE', 'r%C3%B6ot', '*:*', 'root:*', '-', 'root:-a', '1', 'root:1', '%E2%80%AE', 'system:', 'system:..'];
const NAMES = ['fz-a', 'fz-b', 'fz-c', 'fz-d', 'fz-e', 'default', 'kube-system', 'fuzz', 'cluster', '~'];
const NAMES_ODD = ['', '..', '.', '%2e%2e', '%2F', 'A', 'x'.repeat(300), 'a..b', '-a', 'a-', 'a_b', '%00', '%ff', '%', 'name%2Fsub', 'ä', '%E2%80%AE', ' ', '%20', '*', '$', 'a:b', '~', 'status'];
const NAMESPACES = ['fuzz', 'default', 'kube-system', 'fz-a', 'missing-ns'];

// ---------------------------------------------------------------------------------------------
// Big and hostile payloads (built once, reused)

const bigCache = new Map<string, Buffer>();
/** A cached buffer built by `make` under `key`. */
function big(key: string, make: () => Buffer): Buffer {
  let b = bigCache.get(key);
  if (!b) { b = make(); bigCache.set(key, b); }
  return b;
}
/** Nesting depths tried: 10^5 and 10^4, and around the server's limit (500) to exercise what follows the parser. */
const DEPTHS = [100_000, 100_000, 10_000, 1000, 501, 499, 300];
const deepArray = (d: number) => big(`deepArray${d}`, () => Buffer.from('['.repeat(d) + ']'.repeat(d)));
const deepObject = (d: number) => big(`deepObject${d}`, () => Buffer.from('{"a":'.repeat(d) + '1' + '}'.repeat(d)));
const deepYaml = (d: number) => big(`deepYaml${d}`, () => Buffer.from('a: ' + '['.repeat(d) + ']'.repeat(d) + '\n'));
const deepYamlBlock = () => big('deepYamlBlock', () => Buffer.from(Array.from({ length: 5000 }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n') + ' 1\n'));
const MIB = 1024 * 1024;
/** A JSON string literal of `mib` MiB ('x' or a mix of escapes). */
const hugeString = (mib: number, escaped: boolean) => big(`str${mib}${escaped}`, () => {
  const n = mib * MIB;
  if (!escaped) { const b = Buffer.alloc(n + 2, 0x78); b[0] = 0x22; b[n + 1] = 0x22; return b; }
  const unit = '\\u00e9\\n\\"\\\\\\ud83d\\ude00';
  return Buffer.from(`"${unit.repeat(Math.ceil(n / unit.length))}"`);
});
const hugeArray = () => big('hugeArray', () => Buffer.from(`[${Array.from({ length: 200_000 }, (_, i) => i % 7).join(',')}]`));
const hugeObjectKeys = () => big('hugeKeys', () => Buffer.from(`{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":"v"`).join(',')}}`));

/** The YAML alias bomb ("billion laughs"): 9 levels of 10 aliases. */
const YAML_BOMB = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(10).fill(`*${'abcdefghi'[i]}`).join(',')}]`)].join('\n') + '\n';

/** Bytes that are not valid UTF-8: lone continuation, overlong, surrogate halves, truncated sequences. */
const BAD_UTF8 = [Buffer.from([0xff]), Buffer.from([0xc3, 0x28]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf4, 0x90, 0x80, 0x80]), Buffer.from([0xe2, 0x82]), Buffer.from([0x80, 0x80]), Buffer.from([0xfe, 0xfe, 0xff]), Buffer.from([0]), Buffer.from([0xef, 0xbb, 0xbf])];

/** Values that confuse types where an object, string or number is expected. */
function hostileValue(r: Rng, depth = 0): unknown {
  switch (r.int(24)) {
    case 0: return null;
    case 1: return r.pick([0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, 2 ** 63, 4294967296, 1e-320]);
    case 2: return '';
    case 3: return r.pick(['true', 'null', '1', '-1', '0x10', '1e9', 'NaN', 'Infinity', '{}', '[]', '$patch', '../..', '%2e', '\u0000', '\ud800', '\u202e', '<script>', "'", '"']);
    case 4: return true;
    case 5: return [];
    case 6: return {};
    case 7: return 'y'.repeat(r.pick([64, 254, 256, 4096, 70_000, 300_000]));
    case 8: return Array.from({ length: r.pick([1, 3, 1000, 20_000]) }, (_, i) => (r.bool() ? i : `v${i}`));
    case 9: return depth < 4 ? { [r.pick(['a', '', 'metadata', '$patch', '__proto__', 'constructor', 'x.y', 'a/b', '~1'])]: hostileValue(r, depth + 1) } : 1;
    case 10: return depth < 4 ? [hostileValue(r, depth + 1), hostileValue(r, depth + 1)] : 'x';
    case 11: return { $patch: r.pick(['delete', 'replace', 'merge', 'bogus', '']) };
    case 12: return ['a', { $patch: 'delete' }, null];
    case 13: return Object.fromEntries(Array.from({ length: r.pick([10, 2000]) }, (_, i) => [`key-${i}`, `v${i}`]));
    case 14: return r.pick(['2026-13-45T99:99:99Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z', 'not-a-time']);
    case 15: return r.pick(['1Ki', '1e99', '-5', '0.0000000001', '1.5.5', 'Mi', '99999999999999999999999999Gi']);
    case 16: return { apiVersion: 'v1', kind: 'Status', status: 'Failure' };
    case 17: return { key: 'k', operator: r.pick(['In', 'NotIn', 'Exists', 'Bogus']), values: r.bool() ? null : ['a'] };
    case 18: return r.pick(['default', 'system:admin', 'system:masters', 'root', '*']);
    default: return r.pick([42, 'str', false, null]);
  }
}

/** Replaces, removes or adds values at random places of `obj` (in place). */
function mutate(r: Rng, obj: unknown, rounds: number): unknown {
  let root = obj;
  for (let k = 0; k < rounds; k++) {
    if (r.bool(0.05)) { root = hostileValue(r); continue; }
    // Walk to a random container.
    let node: unknown = root;
    for (let d = 0; d < 6 && node && typeof node === 'object'; d++) {
      const keys = Object.keys(node);
      if (!keys.length || r.bool(0.3)) break;
      const next = (node as Record<string, unknown>)[r.pick(keys)];
      if (!next || typeof next !== 'object') break;
      node = next;
    }
    if (!node || typeof node !== 'object') continue;
    const rec = node as Record<string, unknown>;
    const keys = Object.keys(rec);
    const key = keys.length && r.bool(0.7) ? r.pick(keys) : (Array.isArray(rec) ? String(r.pick([0, rec.length, 5, 1000])) : r.pick(['extra', 'apiVersion', 'kind', 'metadata', 'spec', 'status', 'data', 'name', 'namespace', 'uid', 'resourceVersion', 'generateName', 'finalizers', 'ownerReferences', 'managedFields', 'deletionTimestamp', 'annotations', 'labels', 'items', 'x-kubernetes-validations', '']));
    if (r.bool(0.15)) delete rec[key];
    else if (Array.isArray(rec) && Number(key) >= 1000) rec.push(hostileValue(r));
    else rec[key] = hostileValue(r);
  }
  return root;
}

/** Splices `inner` (raw bytes) into `outer`'s JSON at the value of a placeholder key. */
function spliceRaw(outer: Record<string, unknown>, inner: Buffer): Buffer {
  const text = JSON.stringify(outer);
  const marker = '"__FUZZ__"';
  const i = text.indexOf(marker);
  return Buffer.concat([Buffer.from(text.slice(0, i)), inner, Buffer.from(text.slice(i + marker.length))]);
}

/** Places a `"__FUZZ__"` marker at a plausible field of a valid object. */
function withMarker(r: Rng, obj: Record<string, unknown>): Record<string, unknown> {
  const o = JSON.parse(JSON.stringify(obj)) as Record<string, any>;
  switch (r.int(7)) {
    case 0: o.metadata = { ...o.metadata, labels: '__FUZZ__' }; break;
    case 1: o.metadata = { ...o.metadata, annotations: { a: '__FUZZ__' } }; break;
    case 2: o.metadata = { ...o.metadata, name: '__FUZZ__' }; break;
    case 3: o.data = { k: '__FUZZ__' }; break;
    case 4: o.spec = '__FUZZ__'; break;
    case 5: o.spec = { ...(o.spec ?? {}), nested: '__FUZZ__' }; break;
    default: o.metadata = { ...o.metadata, managedFields: [{ manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: '__FUZZ__' }] };
  }
  return o;
}

/** A JSON body: valid, mutated, or hostile at the byte level. */
function jsonBody(r: Rng, valid: Record<string, unknown>): { body: Buffer; label: string } {
  const c = r.int(20);
  const marked = () => withMarker(r, valid);
  switch (c) {
    case 0: case 1: case 2: return { body: Buffer.from(JSON.stringify(valid)), label: 'valid' };
    case 3: case 4: case 5: case 6: return { body: Buffer.from(JSON.stringify(mutate(r, JSON.parse(JSON.stringify(valid)), r.range(1, 6)))), label: 'mutated' };
    case 7: { const d = r.pick(DEPTHS); return { body: spliceRaw(marked(), r.bool() ? deepArray(d) : deepObject(d)), label: `deep nesting ${d}` }; }
    case 8: { const mib = r.pick([1, 2, 3, 4, 10]); return { body: spliceRaw(marked(), hugeString(mib, r.bool(0.3))), label: `huge string ${mib} MiB` }; }
    case 9: return { body: spliceRaw(marked(), r.bool() ? hugeArray() : hugeObjectKeys()), label: 'huge array/object' };
    case 10: {
      const text = JSON.stringify(valid);
      const at = r.int(text.length);
      return { body: Buffer.concat([Buffer.from(text.slice(0, at)), r.pick(BAD_UTF8), Buffer.from(text.slice(at))]), label: 'invalid UTF-8' };
    }
    case 11: return { body: spliceRaw(marked(), Buffer.concat([Buffer.from('"'), r.pick(BAD_UTF8), Buffer.from('x"')])), label: 'invalid UTF-8 in string' };
    case 12: {
      const text = JSON.stringify(valid);
      const dup = r.pick(['"metadata":{"name":"dup"},', '"kind":"Secret",', '"apiVersion":"v2",', '"data":null,', '"metadata":{"name":"a","name":"b","name":"c"},']);
      return { body: Buffer.from(`{${dup}${text.slice(1, -1)},${dup.slice(0, -1)}}`), label: 'duplicate keys' };
    }
    case 13: return { body: spliceRaw(marked(), Buffer.from(r.pick(['NaN', 'Infinity', '-Infinity', '1e999', '-1e999', '123456789012345678901234567890', '0.1e-99999', '-0', '01', '1.', '.5', '+1', '0x1F', 'undefined', '1_000']))), label: 'bad number' };
    case 14: {
      const text = JSON.stringify(valid);
      return { body: Buffer.from(text.slice(0, r.int(text.length))), label: 'truncated JSON' };
    }
    case 15: return { body: Buffer.from(r.pick(['', 'null', '[]', '"str"', '42', 'true', '{}', '{"kind":null}', '[{"a":1}]', '\ufeff{}', '{"apiVersion":1,"kind":{}}', '{}{}', '{} trailing', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}'])), label: 'not an object' };
    case 16: return { body: Buffer.from(randomBytes(r, r.pick([1, 16, 1000, 100_000]))), label: 'random bytes' };
    case 17: return { body: Buffer.from(JSON.stringify({ ...valid, metadata: { ...(valid.metadata as object), labels: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`l${i}`, 'v'])), annotations: { big: 'z'.repeat(300_000) } } })), label: 'huge metadata' };
    case 18: return { body: Buffer.from(JSON.stringify({ ...valid, metadata: { ...(valid.metadata as object), ...hostileMeta(r) } })), label: 'hostile metadata' };
    default: return { body: Buffer.from(JSON.stringify(valid).replace(/"([a-z]+)":/, (_m, k: string) => `"${k.toUpperCase()}":`)), label: 'case-changed key' };
  }
}

function hostileMeta(r: Rng): Record<string, unknown> {
  return r.pick<Record<string, unknown>>([
    { name: undefined, generateName: r.pick(['fz-', '', '-', 'x'.repeat(300), 'UPPER-']) },
    { resourceVersion: r.pick(['abc', '-1', '0', '99999999999999999999', '1.5', '']) },
    { uid: r.pick(['', 'not-a-uid', '../']) },
    { finalizers: r.pick([['a/b'], ['kubernetes'], [''], Array(5000).fill('x/y'), 'str']) },
    { ownerReferences: r.pick([[{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u' }], [{}], [null], [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'u', controller: true }, { apiVersion: 'v1', kind: 'Y', name: 'p', uid: 'v', controller: true }]]) },
    { deletionTimestamp: '2020-01-01T00:00:00Z', deletionGracePeriodSeconds: -5 },
    { creationTimestamp: r.pick(['garbage', 12, null]) },
    { managedFields: r.pick([[{}], [{ manager: 'x', operation: 'Bogus', fieldsV1: { 'f:bad': 1 } }], 'str', [{ manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {} }, 'x:y': null } }]]) },
    { namespace: r.pick(['other', '', '..', 'UPPER']) },
    { labels: r.pick([{ '': 'v' }, { 'a/b/c': 'v' }, { k: 'v'.repeat(64) }, { k: 'bad value' }, { 'kcp.io/cluster': 'x' }]) },
    { annotations: { 'kcp.io/cluster': 'other', 'kubectl.kubernetes.io/last-applied-configuration': '{bad json' } },
  ]);
}

function randomBytes(r: Rng, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = r.int(256);
  return b;
}

/** A YAML body: valid, bomb, deep, tagged, multi-document or broken. */
function yamlBody(r: Rng, valid: Record<string, unknown>): { body: Buffer; label: string } {
  const asYaml = (o: unknown) => JSON.stringify(o); // JSON is YAML
  switch (r.int(14)) {
    case 0: return { body: Buffer.from(`apiVersion: ${valid.apiVersion}\nkind: ${valid.kind}\nmetadata:\n  name: ${(valid.metadata as { name?: string })?.name ?? 'x'}\n`), label: 'yaml valid' };
    case 1: return { body: Buffer.from(YAML_BOMB), label: 'yaml alias bomb' };
    case 2: return { body: Buffer.from(`${asYaml(valid).slice(0, -1)}, "extra": *undefinedAlias}`), label: 'yaml unknown alias' };
    case 3: { const d = r.pick(DEPTHS); return r.bool(0.8) ? { body: deepYaml(d), label: `yaml deep nesting ${d}` } : { body: deepYamlBlock(), label: 'yaml deep block nesting' }; }
    case 4: return { body: Buffer.from(`apiVersion: v1\nkind: ConfigMap\nmetadata: !!binary aGVsbG8=\ndata: !!set {a, b}\nx: !!js/function "function(){}"\ny: !custom {a: 1}\nz: !!timestamp 2001-12-14\nw: !!float .nan\nv: !!int 0x7fffffffffffffffff\n`), label: 'yaml tags' };
    case 5: return { body: Buffer.from(`${asYaml(valid)}\n---\n${asYaml(valid)}\n`), label: 'yaml two documents' };
    case 6: return { body: Buffer.from(`a: &x {b: *x}\n`), label: 'yaml recursive alias' };
    case 7: return { body: Buffer.from(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n<<: {data: {a: "1"}}\ndata:\n  <<: *nope\n`), label: 'yaml merge key' };
    case 8: return { body: Buffer.from(`%YAML 9.9\n%TAG ! tag:evil,2000:\n---\n${asYaml(valid)}\n`), label: 'yaml directives' };
    case 9: return { body: Buffer.from(`? [complex, key]\n: value\n? {a: 1}\n: v\n`), label: 'yaml complex keys' };
    case 10: return { body: Buffer.concat([Buffer.from('a: "'), r.pick(BAD_UTF8), Buffer.from('"\n\tb: c\n')]), label: 'yaml invalid UTF-8 / tab' };
    case 11: return { body: Buffer.from(`a: ${'&a'.repeat(10)} x\nb: *a\n${Array.from({ length: 2000 }, (_, i) => `k${i}: &k${i} [*a, *a]`).join('\n')}\n`), label: 'yaml many anchors' };
    case 12: return { body: Buffer.from(`a: 1\na: 2\nmetadata: {name: d, name: e}\n`), label: 'yaml duplicate keys' };
    default: return { body: Buffer.from(JSON.stringify(mutate(r, JSON.parse(JSON.stringify(valid)), 3))), label: 'yaml (json) mutated' };
  }
}

/** kube's protobuf envelope magic ('k8s\0'). */
const K8S_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Varint encoding of a non-negative integer. */
function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 127) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128); }
  out.push(n);
  return Buffer.from(out);
}
/** A protobuf length-delimited field. */
function pbField(num: number, data: Buffer): Buffer { return Buffer.concat([varint((num << 3) | 2), varint(data.length), data]); }

/** A body claiming to be Kubernetes protobuf: random, with the magic, valid envelopes with hostile raw bytes, lying lengths. */
function protobufBody(r: Rng, kind: string): { body: Buffer; label: string } {
  switch (r.int(8)) {
    case 0: return { body: Buffer.from(randomBytes(r, r.pick([0, 3, 64, 4096]))), label: 'protobuf random' };
    case 1: return { body: Buffer.concat([K8S_MAGIC, Buffer.from(randomBytes(r, r.pick([0, 1, 64, 4096])))]), label: 'protobuf magic + random' };
    case 2: {
      const typeMeta = Buffer.concat([pbField(1, Buffer.from('v1')), pbField(2, Buffer.from(kind))]);
      const raw = r.bool() ? Buffer.from(randomBytes(r, r.pick([1, 100, 10_000]))) : Buffer.from(JSON.stringify({ metadata: { name: 'x' } }));
      return { body: Buffer.concat([K8S_MAGIC, pbField(1, typeMeta), pbField(2, raw), pbField(3, Buffer.from('')), pbField(4, Buffer.from('application/json'))]), label: 'protobuf envelope, odd raw' };
    }
    case 3: return { body: Buffer.concat([K8S_MAGIC, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), Buffer.from('short')]), label: 'protobuf length beyond end' };
    case 4: return { body: Buffer.concat([K8S_MAGIC, Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])]), label: 'protobuf overlong varint' };
    case 5: {
      // Deep nesting of length-delimited fields.
      let inner: Buffer = Buffer.from('x');
      for (let i = 0; i < 2000; i++) inner = pbField(1, inner);
      return { body: Buffer.concat([K8S_MAGIC, pbField(2, inner)]), label: 'protobuf deep nesting' };
    }
    case 6: {
      const typeMeta = Buffer.concat([pbField(1, Buffer.from('v1')), pbField(2, Buffer.from(kind))]);
      const objMeta = pbField(1, Buffer.concat([pbField(1, Buffer.from([0xff, 0xfe])), pbField(11, Buffer.concat([pbField(1, Buffer.from('k')), pbField(2, Buffer.alloc(100_000, 0x41))]))]));
      const raw = Buffer.concat([objMeta, pbField(2, Buffer.concat([pbField(1, Buffer.from('a')), pbField(2, Buffer.from([0xc3, 0x28]))])), Buffer.from([0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Buffer.from([0x25, 1, 2, 3, 4]), Buffer.from([0x2d, 1, 2]), Buffer.from([0x33, 0x34])]);
      return { body: Buffer.concat([K8S_MAGIC, pbField(1, typeMeta), pbField(2, raw)]), label: 'protobuf typed object, bad fields' };
    }
    default: return { body: Buffer.concat([K8S_MAGIC, pbField(1, Buffer.concat([pbField(1, Buffer.from('v1')), pbField(2, Buffer.from(r.pick(['Secret', 'Namespace', 'DeleteOptions', '', 'Status', kind])))])), pbField(2, Buffer.from(randomBytes(r, 200)))]), label: 'protobuf wrong kind' };
  }
}

/** A patch body of the given type. */
function patchBody(r: Rng, type: string, valid: Record<string, unknown>): { body: Buffer; label: string } {
  if (r.bool(0.15)) return jsonBody(r, valid);
  if (type === 'application/json-patch+json') {
    const op = () => {
      const o: Record<string, unknown> = { op: r.pick(['add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus', '']), path: r.pick(['/metadata/labels/x', '/data/a', '/data/-', '/spec/tags/-', '/spec/tags/99999999999', '/metadata/labels/a~1b', '/a/~2', '', '/', 'no-slash', '/metadata/name', '/metadata/resourceVersion', '/spec/replicas', '/items/0/x', '/data/a/b/c', `/${'a/'.repeat(5000)}b`]) };
      if (r.bool(0.8)) o.value = r.bool(0.6) ? hostileValue(r) : 'v';
      if (r.bool(0.3)) o.from = r.pick(['/data/a', '/metadata', '/', '/nope', 'x']);
      return o;
    };
    const c = r.int(6);
    if (c === 0) { const d = r.pick(DEPTHS); return { body: spliceRaw({ x: [{ op: 'add', path: r.pick(['/metadata/annotations', '/spec/nested/deep', '/data']), value: '__FUZZ__' }] }, r.bool() ? deepArray(d) : deepObject(d)).subarray(5, -1), label: `json-patch deep value ${d}` }; }
    if (c === 1) return { body: Buffer.from(JSON.stringify(Array.from({ length: r.pick([1000, 50_000]) }, () => ({ op: 'add', path: '/metadata/labels/x', value: 'v' })))), label: 'json-patch many ops' };
    if (c === 2) return { body: Buffer.from(JSON.stringify(r.pick([{}, null, 'str', [null], [1], [[]], [{ op: 'add' }]]))), label: 'json-patch not ops' };
    return { body: Buffer.from(JSON.stringify(Array.from({ length: r.range(1, 5) }, op))), label: 'json-patch ops' };
  }
  if (type === 'application/apply-patch+yaml' || type === 'application/apply-patch+cbor') {
    if (r.bool(0.4)) return yamlBody(r, valid);
    return jsonBody(r, valid);
  }
  // merge and strategic merge
  const directives = r.pick<unknown>([
    { metadata: { labels: { $patch: r.pick(['delete', 'replace', 'bogus']) } } },
    { $patch: r.pick(['delete', 'replace', 'bogus', '']) },
    { metadata: { finalizers: [{ $patch: 'delete' }], $setElementOrder: { finalizers: ['a'] } } },
    { '$setElementOrder/metadata': [{ name: 'x' }], metadata: { '$deleteFromPrimitiveList/finalizers': ['x', null, {}] } },
    { metadata: { '$retainKeys': ['name', 1, null] }, spec: { $retainKeys: 'str' } },
    { spec: { tags: { $patch: 'replace' } } },
    { spec: { nested: { $patch: 'delete', x: 1 } } },
    { rules: [{ $patch: 'delete', apiGroups: [] }], '$setElementOrder/rules': [{ x: 1 }] },
    { subjects: [{ $patch: 'replace' }, null] },
    { data: null, metadata: null },
    null, [], 'str', 42,
  ]);
  if (r.bool(0.4)) return { body: Buffer.from(JSON.stringify(directives)), label: 'merge/strategic directives' };
  return jsonBody(r, valid);
}

// ---------------------------------------------------------------------------------------------
// Paths, queries, headers

const QUERY_PARAMS: [string, string[]][] = [
  ['limit', ['-1', '0', '1', 'abc', '99999999999999999999', '1e3', '', '1.5', '2', '500']],
  ['continue', ['garbage', '', '%00', 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0', 'eyJ2Ijoid3JvbmciLCJydiI6LTEsInN0YXJ0IjpudWxsfQ', 'bm90IGpzb24', 'e30', 'eyJydiI6ImFiYyJ9', '=' + 'A'.repeat(10_000)]],
  ['resourceVersion', ['abc', '0', '-1', '', '1', '99999999999999999999', '1.0', '0x1', '999999']],
  ['resourceVersionMatch', ['Exact', 'NotOlderThan', 'bogus', '']],
  ['fieldSelector', ['metadata.name=x', 'metadata.name==x', 'metadata.name!=', '=', ',,', 'spec.bogus=1', 'metadata.name=x,metadata.namespace in (a)', 'a'.repeat(5000), 'metadata.name=%ff', 'type=Opaque', '!', 'metadata.name=\\', 'involvedObject.name=x']],
  ['labelSelector', ['a=b', 'a in (b,c)', 'a notin ()', '!a', 'a in (', '(', 'a==b==c', 'a!=', '=', 'x,y,z', 'a in (' + 'v,'.repeat(2000) + 'v)', 'a/b/c=d', 'a=' + 'v'.repeat(70), '%00=1', 'a>1', 'a<b', 'a gt 1', 'fuzz=yes']],
  ['timeoutSeconds', ['99999999999999999999', '-1', 'abc', '1e9', '0', '1', '2147483648', '']],
  ['watch', ['true', '1', 'false', 'abc', '', 'TRUE']],
  ['allowWatchBookmarks', ['true', 'abc']],
  ['sendInitialEvents', ['true', 'false', 'abc']],
  ['dryRun', ['All', 'bogus', '', 'all']],
  ['fieldValidation', ['Strict', 'Warn', 'Ignore', 'bogus', '']],
  ['fieldManager', ['fz', '', 'x'.repeat(200), '\u0001', 'a%ffb', 'kubectl']],
  ['force', ['true', 'abc']],
  ['propagationPolicy', ['Orphan', 'Background', 'Foreground', 'bogus']],
  ['orphanDependents', ['true', 'bogus']],
  ['gracePeriodSeconds', ['-1', 'abc', '0', '99999999999999999999']],
  ['pretty', ['true', 'x']],
  ['includeObject', ['None', 'Object', 'Metadata', 'bogus']],
  ['exclude', ['x']],
  ['%zz', ['%zz']],
  ['', ['']],
];

function queryString(r: Rng, watch: boolean): string {
  const parts: string[] = [];
  if (watch) parts.push(`watch=${r.pick(['true', '1'])}`, `timeoutSeconds=${r.pick(['1', '2'])}`);
  const n = r.bool(0.3) ? 0 : r.range(1, 4);
  for (let i = 0; i < n; i++) {
    const [k, vs] = r.pick(QUERY_PARAMS);
    if (watch && (k === 'watch' || k === 'timeoutSeconds')) continue;
    const v = r.pick(vs);
    parts.push(`${k}=${r.bool(0.8) ? encodeURIComponent(v) : v.replace(/[ #]/g, '+')}`);
  }
  if (r.bool(0.03)) parts.push(Array.from({ length: 3000 }, (_, i) => `p${i}=${i}`).join('&'));
  if (r.bool(0.02)) parts.push('a=' + '%'.repeat(50));
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Distorts a path: traversal segments, encoded slashes, doubled slashes, overlong segments. */
function distortPath(r: Rng, path: string): string {
  const segs = path.split('/');
  const i = r.range(1, Math.max(1, segs.length - 1));
  switch (r.int(10)) {
    case 0: segs.splice(i, 0, '..'); break;
    case 1: segs.splice(i, 0, '%2e%2e'); break;
    case 2: segs[i] = `${segs[i]}%2F..%2F..`; break;
    case 3: segs.splice(i, 0, ''); break;
    case 4: segs.splice(i, 0, '.'); break;
    case 5: segs[i] = 'x'.repeat(r.pick([300, 5000, 15_000, 70_000])); break;
    case 6: segs[i] = r.pick(['%', '%zz', '%00', '%ff%fe', '%C0%AE', '%E2%80%AE', '%2F', '%5C', ';x=1', '\\..\\']); break;
    case 7: segs.push(...Array(r.pick([10, 500])).fill('a')); break;
    case 8: return path + r.pick(['/', '//', '/.', '/..', '#frag', '?', '%3F', '/%00']);
    default: return r.pick(['', '/', '//', '*', '/..', '/../../etc/passwd', '/clusters', '/clusters/', '/clusters//api', 'http://evil/api', '/%2e%2e/api']) ;
  }
  return segs.join('/');
}

function clusterPrefix(r: Rng): string {
  const c = r.int(10);
  if (c < 6) return `/clusters/${r.pick(['root', 'root', 'root', 'root:fuzz-ws'])}`;
  if (c < 8) return `/clusters/${r.pick(CLUSTERS_OK)}`;
  if (c < 9) return `/clusters/${r.pick(CLUSTERS_ODD)}`;
  return '';
}

function resourcePath(r: Rng, route: Route, opts: { ns: string; name?: string; sub?: string }): string {
  const gv = route.group ? `/apis/${route.group}/${route.version}` : `/api/${route.version}`;
  const nsPart = route.namespaced ? `/namespaces/${opts.ns}` : '';
  let p = `${gv}${nsPart}/${route.plural}`;
  if (opts.name !== undefined) p += `/${opts.name}`;
  if (opts.sub) p += `/${opts.sub}`;
  return p;
}

const ACCEPTS = ['application/json', 'application/yaml', '*/*', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
  'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io', 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  'application/vnd.kubernetes.protobuf', 'application/vnd.kubernetes.protobuf,application/json', 'application/vnd.kubernetes.protobuf;stream=watch',
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', 'application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1',
  'application/com.github.proto-openapi.spec.v2@v1.0+protobuf', 'text/html', ';;;', ',', 'application/json;q=abc', 'application/json;as=Table', 'application/json;as=Bogus;g=meta.k8s.io;v=v1',
  'application/json;as=Table;g=meta.k8s.io;v=v9', 'a/b/c', '*/json', 'application/*;as=Table;g=meta.k8s.io;v=v1', 'x'.repeat(8000), '\t'];
const CONTENT_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json',
  'application/apply-patch+yaml', 'application/apply-patch+cbor', 'application/cbor', 'text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16',
  'APPLICATION/JSON', 'application/json;;', '', ';', 'application/', '/json', 'application/json, text/plain', '*/*', 'x'.repeat(5000), 'application/yaml; charset=latin1', 'text/yaml'];
const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml'];

/** Abusive or odd headers added to a request. */
function abuseHeaders(r: Rng): { headers: [string, string][]; label: string; anonymous?: boolean } {
  const c = r.int(16);
  switch (c) {
    case 0: return { headers: [['X-Huge', 'h'.repeat(r.pick([8000, 17_000, 100_000]))]], label: 'huge header' };
    case 1: return { headers: Array.from({ length: r.pick([200, 2500]) }, (_, i) => [`X-H${i}`, 'v'] as [string, string]), label: 'many headers' };
    case 2: return { headers: [['Authorization', r.pick(['Bearer ', 'Bearer', 'Bearer garbage', 'Basic Zm9vOmJhcg==', 'Basic %%%', 'Bearer a.b.c', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwic3ViIjoic3lzdGVtOnNlcnZpY2VhY2NvdW50OmE6YiJ9.c2ln', 'Negotiate x', 'bearer ' + 'A'.repeat(10_000), 'Bearer \u00e9', 'Bearer eyJ.eyJ.e30', 'Bearer ....', 'Bearer e30.e30.'])]], label: 'bad Authorization', anonymous: r.bool() };
    case 3: return { headers: [['Impersonate-User', r.pick(['', 'alice', 'system:admin', 'x'.repeat(5000), 'system:serviceaccount:a', 'system:serviceaccount:root:default:sa', 'system:anonymous'])], ...(r.bool() ? [['Impersonate-Group', r.pick(['', 'system:masters', 'g'])] as [string, string]] : [])], label: 'impersonate user' };
    case 4: return { headers: [['Impersonate-Group', r.pick(['system:masters', 'x'])], ...(r.bool() ? [['Impersonate-Uid', 'u'] as [string, string]] : [])], label: 'impersonate group without user' };
    case 5: return { headers: [['Impersonate-User', 'alice'], [r.pick(['Impersonate-Extra-%zz', 'Impersonate-Extra-', 'Impersonate-Extra-a%2Fb', 'Impersonate-Extra-%ff', 'Impersonate-Extra-scopes']), r.pick(['v', '', '%ff'])]], label: 'impersonate extra' };
    case 6: return { headers: [['Impersonate-Uid', 'u'], ...(r.bool() ? [['Impersonate-User', ''] as [string, string]] : [])], label: 'impersonate uid' };
    case 7: return { headers: [['Accept', r.pick(ACCEPTS)]], label: 'odd Accept' };
    case 8: return { headers: [['Accept-Encoding', r.pick(['gzip', 'br', 'deflate', 'x'.repeat(1000), '*;q=0'])]], label: 'Accept-Encoding' };
    case 9: return { headers: [['Host', r.pick(['', 'evil', 'a'.repeat(5000), '[::1', '127.0.0.1:99999'])]], label: 'odd Host' };
    case 10: return { headers: [['Expect', r.pick(['100-continue', 'bogus'])]], label: 'Expect' };
    case 11: return { headers: [['User-Agent', r.pick(['', '/', 'x'.repeat(5000), 'kubectl/v1.32 (\u0001)'])]], label: 'odd User-Agent' };
    case 12: return { headers: [['X-Remote-User', 'system:admin'], ['X-Remote-Group', 'system:masters'], ['X-Forwarded-For', '1.2.3.4']], label: 'spoofed front-proxy headers' };
    case 13: return { headers: [['Content-Encoding', r.pick(['gzip', 'bogus'])]], label: 'Content-Encoding' };
    case 14: return { headers: [['Authorization', 'Bearer x'], ['Authorization', 'Bearer y']], label: 'two Authorization', anonymous: true };
    default: return { headers: [], label: 'anonymous', anonymous: true };
  }
}

// ---------------------------------------------------------------------------------------------
// The generator

/** Generates case `index` of a run seeded `seed` (deterministic). */
export { celCase as celFuzzCase };

export function generateCase(seed: number, index: number): FuzzCase {
  const r = new Rng(caseSeed(seed, index));
  const roll = r.int(100);
  if (roll < 4) return rawCase(r);
  if (roll < 9) return discoveryCase(r);
  if (roll < 13) return regexCase(r);
  if (roll >= 97) return celCase(r);
  return resourceCase(r);
}

/**
 * A CRD whose rule is quadratic within its declared bounds: accepted by the static estimate, and
 * stopped at the per-call limit at runtime when its list is full of distinct values.
 */
export const CEL_CRD = { group: 'celcost.kcp-ts.io', version: 'v1', plural: 'grids', kind: 'Grid' };

function celCRDObject(name: string, plural: string, group: string, spec: Record<string, unknown>, rule: string): Record<string, unknown> {
  const kind = plural.charAt(0).toUpperCase() + plural.slice(1, -1);
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name },
    spec: {
      group, scope: 'Namespaced', names: { plural, singular: plural.slice(0, -1), kind, listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: spec, 'x-kubernetes-validations': [{ rule }] } } } } }],
    },
  };
}

/** The {@link CEL_CRD}: up to 500 strings of up to 8 characters, each of which must be unique. */
export function celCostCRD(): Record<string, unknown> {
  return celCRDObject(`${CEL_CRD.plural}.${CEL_CRD.group}`, CEL_CRD.plural, CEL_CRD.group,
    { l: { type: 'array', maxItems: 500, items: { type: 'string', maxLength: 8 } } }, 'self.l.all(x, self.l.exists_one(y, x == y))');
}

/** A CEL rule meant to be expensive or deep: nested comprehensions, long chains, deep nesting, big literals. */
function hostileRule(r: Rng): string {
  const k = 1 + r.int(8);
  switch (r.int(8)) {
    case 0: { // nested comprehensions over the list
      let body = `v${k - 1} + v0 != 'abc'`;
      for (let i = k - 1; i >= 0; i--) body = `self.l.${r.pick(['all', 'exists', 'exists_one'])}(v${i}, ${body})`;
      return r.bool(0.3) ? `self.l.map(w, w + w).filter(w, ${body.replaceAll('self.l.', 'self.l.')}).size() >= 0` : body;
    }
    case 1: return Array.from({ length: 50 * k }, () => 'self.s').join(' + ') + " != ''";
    case 2: return '('.repeat(50 * k) + 'true' + ')'.repeat(50 * k);
    case 3: return Array.from({ length: 300 * k }, (_, i) => `self.s != 'x${i}'`).join(' && ');
    case 4: return `self.s.matches('${'(a|aa)*'.repeat(k * 20)}$')`;
    case 5: return `self.m.all(k, self.m.all(j, self.m[k] + self.m[j] != self.s))`;
    case 6: return `${'cel.bind(x, self.l + self.l, '.repeat(k * 4)}x.size() > 0${')'.repeat(k * 4)}`;
    default: return `'${'a'.repeat(10_000 * k)}'.contains(self.s) || self.l.exists(x, x.contains(self.s))`;
  }
}

function celCase(r: Rng): HttpCase {
  const headers: [string, string][] = [['content-type', 'application/json'], ['accept', 'application/json']];
  if (r.bool(0.5)) {
    // A custom resource of the CEL CRD: distinct values make its quadratic rule run into the limit.
    const n = r.pick([0, 1, 10, 100, 499, 500, 501]);
    const l = Array.from({ length: n }, (_, i) => (r.bool(0.9) ? `v${i}` : 'dup').slice(0, 8));
    const body = Buffer.from(JSON.stringify({ apiVersion: `${CEL_CRD.group}/${CEL_CRD.version}`, kind: CEL_CRD.kind, metadata: { generateName: 'grid-' }, spec: { l } }));
    return { kind: 'http', label: `cel runtime list ${n}`, method: 'POST', path: `/clusters/root/apis/${CEL_CRD.group}/${CEL_CRD.version}/namespaces/fuzz/${CEL_CRD.plural}`, headers, body };
  }
  const rule = hostileRule(r);
  const plural = `celfz${r.int(20)}s`;
  const bounded = r.bool(0.5);
  const spec = {
    l: { type: 'array', ...(bounded ? { maxItems: 4 } : {}), items: { type: 'string', ...(bounded ? { maxLength: 4 } : {}) } },
    s: { type: 'string', ...(bounded ? { maxLength: 16 } : {}) },
    m: { type: 'object', ...(bounded ? { maxProperties: 4 } : {}), additionalProperties: { type: 'string' } },
  };
  const body = Buffer.from(JSON.stringify(celCRDObject(`${plural}.celgen.kcp-ts.io`, plural, 'celgen.kcp-ts.io', spec, rule)));
  return { kind: 'http', label: `cel estimate rule ${rule.length} bytes${bounded ? ' bounded' : ''}`, method: 'POST', path: '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', headers, body };
}

function discoveryCase(r: Rng): HttpCase {
  const prefix = clusterPrefix(r);
  let path = prefix + r.pick(['/api', '/api/v1', '/apis', `/apis/${FUZZ_CRD.group}`, `/apis/${FUZZ_CRD.group}/v1`, '/apis/tenancy.kcp.io/v1alpha1', '/apis/bogus/v1', '/openapi/v2', '/openapi/v3',
    '/openapi/v3/api/v1', '/openapi/v3/apis/apps/v1', `/openapi/v3/apis/${FUZZ_CRD.group}/v1`, '/openapi/v3/apis/x', '/version', '/healthz', '/livez', '/readyz/ping', '/readyz?verbose', '/livez/bogus', '/metrics', '/', '/openapi/v3/..%2F..%2Fetc', '/api/v2']);
  if (r.bool(0.2)) path = distortPath(r, path);
  const method = r.pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS', 'PUT']);
  const headers: [string, string][] = [['Accept', r.pick(ACCEPTS)]];
  const abuse = r.bool(0.3) ? abuseHeaders(r) : undefined;
  const body = method === 'POST' || method === 'PUT' ? Buffer.from('{}') : undefined;
  if (body) headers.push(['Content-Type', 'application/json']);
  return { kind: 'http', label: `discovery${abuse ? ` + ${abuse.label}` : ''}`, method, path, headers: [...headers, ...(abuse?.headers ?? [])], body, anonymous: abuse?.anonymous };
}

function resourceCase(r: Rng): HttpCase {
  const route = r.pick(ROUTES);
  const ns = r.bool(0.9) ? r.pick(NAMESPACES) : r.pick(NAMES_ODD);
  const name = r.bool(0.85) ? r.pick(NAMES) : r.pick(NAMES_ODD);
  let valid = route.make(name, ns);
  const sub = route.subresources.length && r.bool(0.25) ? r.pick(route.subresources) : r.bool(0.03) ? r.pick(['status', 'scale', 'log', 'bogus', 'finalize', 'token']) : undefined;
  if (sub === 'token') valid = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['a'], expirationSeconds: 3600, boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'fz-a' } } };
  const verbs = route.createOnly ? ['create', 'create', 'create', 'get', 'list', 'delete'] : ['get', 'list', 'watch', 'create', 'create', 'update', 'patch', 'patch', 'delete', 'deletecollection', 'bogus'];
  const verb = r.pick(verbs);
  let method = '';
  let path = '';
  let body: Buffer | undefined;
  let contentType: string | undefined = 'application/json';
  let label: string = verb;
  let streaming = false;
  let query = '';
  const addBody = (b: { body: Buffer; label: string }) => { body = b.body; label += ` ${b.label}`; };
  const objectBody = () => {
    const f = r.int(10);
    if (f < 6) { contentType = r.bool(0.9) ? 'application/json' : r.pick(CONTENT_TYPES); addBody(jsonBody(r, valid)); }
    else if (f < 8) { contentType = r.pick(['application/yaml', 'application/yaml', 'application/x-yaml', 'text/yaml']); addBody(yamlBody(r, valid)); }
    else { contentType = 'application/vnd.kubernetes.protobuf'; addBody(protobufBody(r, String(valid.kind ?? 'X'))); }
  };
  switch (verb) {
    case 'get': method = r.pick(['GET', 'GET', 'HEAD']); path = resourcePath(r, route, { ns, name, sub }); contentType = undefined; query = queryString(r, false); break;
    case 'list': method = 'GET'; path = resourcePath(r, route, { ns: r.bool(0.2) ? '' : ns }); contentType = undefined; query = queryString(r, false); if (path.includes('/namespaces//')) path = path.replace('/namespaces/', ''); break;
    case 'watch': method = 'GET'; path = resourcePath(r, route, { ns }); contentType = undefined; query = queryString(r, true); streaming = true; break;
    case 'create': method = 'POST'; path = resourcePath(r, route, { ns, name: sub ? name : undefined, sub }); query = r.bool(0.3) ? queryString(r, false) : ''; objectBody(); break;
    case 'update': method = 'PUT'; path = resourcePath(r, route, { ns, name, sub }); query = r.bool(0.3) ? queryString(r, false) : ''; objectBody(); break;
    case 'patch': {
      method = 'PATCH'; path = resourcePath(r, route, { ns, name, sub });
      contentType = r.bool(0.9) ? r.pick(PATCH_TYPES) : r.pick(CONTENT_TYPES);
      query = contentType === 'application/apply-patch+yaml' && r.bool(0.8) ? `?fieldManager=fz${r.bool(0.3) ? '&force=true' : ''}` : r.bool(0.2) ? queryString(r, false) : '';
      addBody(patchBody(r, contentType, valid));
      break;
    }
    case 'delete': {
      method = 'DELETE'; path = resourcePath(r, route, { ns, name, sub }); query = r.bool(0.3) ? queryString(r, false) : '';
      if (r.bool(0.4)) {
        contentType = r.bool(0.8) ? 'application/json' : r.pick(CONTENT_TYPES);
        addBody(r.bool(0.5) ? { body: Buffer.from(JSON.stringify(mutate(r, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', gracePeriodSeconds: 0, preconditions: { uid: 'x', resourceVersion: '1' } }, r.range(0, 3)))), label: 'DeleteOptions' } : jsonBody(r, { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1' }));
      } else contentType = undefined;
      break;
    }
    case 'deletecollection': {
      method = 'DELETE'; path = resourcePath(r, route, { ns });
      // Keep deletecollection from emptying what the run relies on: a selector nothing matches, mostly.
      query = r.bool(0.8) ? `?labelSelector=${r.pick(['nothing%3Dhere', 'fuzz%3Dyes', 'a+in+(', '!!'])}` : queryString(r, false);
      contentType = undefined;
      break;
    }
    default: {
      method = r.pick(['FOO', 'PROPFIND', 'OPTIONS', 'TRACE', 'CONNECT', 'get', 'G\u00c9T', 'MKCOL', 'LOCK', 'PURGE', 'SEARCH', 'QUERY', 'M-SEARCH', 'LINK', 'REPORT', 'A'.repeat(5000), 'POST ', '']);
      path = resourcePath(r, route, { ns, name });
      if (r.bool()) { body = Buffer.from(JSON.stringify(valid)); }
      label = `method ${method.slice(0, 20)}`;
    }
  }
  // Keep what the run relies on — namespaces, kcp objects, CRDs, the admin's RBAC — as it is: writes
  // to those not named fz-* and their deletecollection are dry runs (the server still does all but
  // the storage write), and their paths are not distorted. Shards are created as dry runs too: a
  // Shard (its URL unreachable) would join the instance, and home workspaces placed on it answer
  // 503 until it is reachable.
  const guarded = ['namespaces', 'logicalclusters', 'workspaces', 'workspacetypes', 'shards', 'customresourcedefinitions', 'roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'].includes(route.plural)
    && (verb === 'deletecollection' || (['update', 'patch', 'delete'].includes(verb) && !name.startsWith('fz-')) || (route.plural === 'shards' && verb === 'create'));
  if (guarded) query = `?dryRun=All${query ? `&${query.slice(1)}` : ''}`;
  const prefix = clusterPrefix(r);
  path = prefix + path;
  if (!guarded && r.bool(0.12)) { path = distortPath(r, path); label += ' + odd path'; }
  path += query;
  const headers: [string, string][] = [];
  if (body && r.bool(0.05)) label += ' + no Content-Type';
  else if (contentType !== undefined && (body || r.bool(0.1))) headers.push(['Content-Type', contentType]);
  if (r.bool(0.2)) headers.push(['Accept', r.pick(ACCEPTS)]);
  let anonymous: boolean | undefined;
  if (r.bool(0.15)) { const a = abuseHeaders(r); headers.push(...a.headers); anonymous = a.anonymous; label += ` + ${a.label}`; }
  let contentLength: HttpCase['contentLength'];
  if (body && r.bool(0.02)) { contentLength = r.pick<HttpCase['contentLength']>([0, 'omit', Math.max(0, (body as Buffer).length - 1)]); label += ` + Content-Length ${contentLength}`; }
  // Any list may have become a watch through its query (watch=1, …): the headers are then the answer.
  if (/[?&]watch=/.test(path)) streaming = true;
  return { kind: 'http', label: `${route.plural}${sub ? `/${sub}` : ''} ${label}`, method, path, headers, body, anonymous, streaming, contentLength };
}

function rawCase(r: Rng): RawCase {
  const host = 'Host: 127.0.0.1\r\n';
  const req = (extra = '', body = '') => `POST /clusters/root/api/v1/namespaces/fuzz/configmaps HTTP/1.1\r\n${host}Content-Type: application/json\r\n${extra}`
    + (body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : '') + `\r\n${body}`;
  const cm = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'raw-' , labels: { fuzz: 'raw' } }, data: { a: '1' } });
  switch (r.int(9)) {
    case 0: return { kind: 'raw', label: 'half-closed after request', mode: 'half-close', bytes: Buffer.from(r.bool() ? `GET /clusters/root/api/v1/namespaces HTTP/1.1\r\n${host}\r\n` : req('', cm)) };
    case 1: {
      const full = r.bool() ? `GET /clusters/root/api HTTP/1.1\r\n${host}\r\n` : req('', cm);
      return { kind: 'raw', label: 'half-closed mid-request', mode: 'half-close', bytes: Buffer.from(full.slice(0, r.range(1, full.length - 1))) };
    }
    case 2: {
      const claimed = r.pick([cm.length + 1, 1000, 10_000_000, 3 * 1024 * 1024 + 1, 2 ** 40]);
      const head = `POST /clusters/root/api/v1/namespaces/fuzz/configmaps HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${claimed}\r\n\r\n`;
      return { kind: 'raw', label: `truncated body (Content-Length ${claimed})`, mode: r.bool(0.7) ? 'truncated' : 'truncated-abort', bytes: Buffer.from(head + cm.slice(0, r.int(cm.length))) };
    }
    case 3: return { kind: 'raw', label: 'slow-loris (trickled request)', mode: 'slowloris', bytes: Buffer.from(req('', cm)), trickleMs: r.range(1000, 4000) };
    case 4: return { kind: 'raw', label: 'slow-loris (stalled headers)', mode: 'slowloris-stall', bytes: Buffer.from(`GET /clusters/root/api HTTP/1.1\r\n${host}X-Slow: `), trickleMs: r.range(1000, 5000) };
    case 5: {
      const chunks = r.pick([`zz\r\n${cm}\r\n0\r\n\r\n`, `${(cm.length + 50).toString(16)}\r\n${cm}\r\n0\r\n\r\n`, `-1\r\n\r\n`, `ffffffffffffffff\r\nabc\r\n`, `5;ext=${'x'.repeat(10_000)}\r\nhello\r\n0\r\n\r\n`, `${cm.length.toString(16)}\r\n${cm}\r\n0\r\nTrailer: ${'t'.repeat(100)}\r\n\r\n`, `${cm.length.toString(16)}\r\n${cm}\r\n`, '0\r\n\r\n']);
      const te = r.pick(['Transfer-Encoding: chunked\r\n', 'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n', 'Transfer-Encoding: gzip, chunked\r\n', 'Transfer-Encoding: chunked, identity\r\n', 'Transfer-Encoding: xchunked\r\n']);
      return { kind: 'raw', label: 'chunked garbage', mode: 'chunked-garbage', bytes: Buffer.from(`POST /clusters/root/api/v1/namespaces/fuzz/configmaps HTTP/1.1\r\n${host}Content-Type: application/json\r\n${te}\r\n${chunks}`) };
    }
    case 6: return { kind: 'raw', label: 'plaintext to TLS port', mode: 'plaintext', bytes: r.bool() ? Buffer.from(`GET /clusters/root/api HTTP/1.1\r\n${host}\r\n`) : Buffer.from(randomBytes(r, r.pick([1, 100, 5000]))) };
    case 7: return { kind: 'raw', label: 'idle connection flood', mode: 'idle-flood', bytes: Buffer.alloc(0), count: r.pick([20, 50, 100]), trickleMs: r.range(500, 3000) };
    default: {
      const one = `GET /clusters/root/api/v1/namespaces/fuzz/configmaps?limit=1 HTTP/1.1\r\n${host}\r\n`;
      const bad = r.pick(['GARBAGE\r\n\r\n', `GET / HTTP/9.9\r\n${host}\r\n`, `GET /clusters/root/api HTTP/1.1\r\nBad Header\r\n\r\n`, `GET /clusters/root/api HTTP/1.1\r\n${host}X: a\rb\r\n\r\n`, `GET /clusters/root/api HTTP/1.1\r\n${host} folded: x\r\n\r\n`, one]);
      return { kind: 'raw', label: 'pipelined requests', mode: 'pipelined', bytes: Buffer.from(one.repeat(r.range(1, 5)) + bad + `GET /clusters/root/api HTTP/1.1\r\n${host}Connection: close\r\n\r\n`) };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sending

/** Where and as whom cases are sent. */
export interface Target { host: string; port: number; creds: Creds }

/** Serialises an HTTP case to wire bytes. */
export function wireBytes(c: HttpCase): Buffer {
  const lines = [`${c.method} ${c.path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [k, v] of c.headers) if (k.toLowerCase() !== 'host') lines.push(`${k}: ${v}`);
  lines.push('Connection: close');
  const len = c.contentLength ?? (c.body ? c.body.length : undefined);
  if (len !== undefined && len !== 'omit') lines.push(`Content-Length: ${len}`);
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  return c.body ? Buffer.concat([head, c.body]) : head;
}

function openTls(t: Target, anonymous: boolean): TLSSocket {
  return tlsConnect({ host: t.host, port: t.port, ca: t.creds.ca, ...(anonymous ? {} : { cert: t.creds.cert, key: t.creds.key }), rejectUnauthorized: false, servername: undefined });
}

/**
 * Writes `bytes` on a fresh TLS connection (how is up to `mode`) and waits for the answer's status
 * line; `hangMs` after the request was fully written without an answer or a close, it is a hang.
 */
function exchange(t: Target, bytes: Buffer, o: { anonymous?: boolean; streaming?: boolean; hangMs: number; mode?: RawCase['mode']; trickleMs?: number; plaintext?: boolean }): Promise<Outcome> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const sock: Socket = o.plaintext ? netConnect({ host: t.host, port: t.port }) : openTls(t, o.anonymous ?? false);
    let buf = Buffer.alloc(0);
    let status: number | undefined;
    let headerEnd = -1;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const timers: NodeJS.Timeout[] = [];
    const finish = (out: Omit<Outcome, 'ms'>) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      for (const x of timers) clearTimeout(x);
      sock.destroy();
      resolve({ ...out, ms: Date.now() - t0 });
    };
    const bodyStart = () => headerEnd >= 0 ? buf.subarray(headerEnd + 4, headerEnd + 4 + 600).toString('utf8') : buf.subarray(0, 600).toString('utf8');
    const armHang = (extraMs = 0) => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        if (status !== undefined) finish({ status, hang: true, bodyStart: bodyStart(), error: 'answer started but did not end' });
        else finish({ hang: true, error: connected ? 'no answer' : 'no TLS handshake' });
      }, o.hangMs + extraMs);
    };
    let connected = false;
    // Until the connection is up (a server whose event loop is blocked never completes the handshake).
    armHang(o.trickleMs ?? 0);
    sock.on('data', (d: Buffer) => {
      if (buf.length < 1_000_000) buf = Buffer.concat([buf, d]);
      if (status === undefined) {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(buf.subarray(0, 20).toString('latin1'));
        if (m) status = Number(m[1]);
        else if (buf.length >= 12) { finish({ closed: true, error: `not HTTP: ${JSON.stringify(buf.subarray(0, 40).toString('latin1'))}` }); return; }
      }
      if (headerEnd < 0) headerEnd = buf.indexOf('\r\n\r\n');
      if (status === undefined || headerEnd < 0) return;
      if (o.streaming || o.mode === 'pipelined' || (status < 200 && status !== 101)) {
        // A watch streams on; an interim 100 Continue is an answer too for hang purposes.
        finish({ status, bodyStart: bodyStart() });
        return;
      }
      // A complete answer on a connection the server keeps open (no Connection: close asked).
      const head = buf.subarray(0, headerEnd).toString('latin1');
      const len = /\r\ncontent-length: *(\d+)/i.exec(head);
      const got = buf.length - headerEnd - 4;
      if ((len && got >= Number(len[1])) || (/\r\ntransfer-encoding: *chunked/i.test(head) && buf.subarray(buf.length - 5).toString('latin1') === '0\r\n\r\n')) {
        finish({ status, bodyStart: bodyStart() });
      }
    });
    sock.on('end', () => finish(status !== undefined ? { status, bodyStart: bodyStart() } : { closed: true }));
    sock.on('close', () => finish(status !== undefined ? { status, bodyStart: bodyStart() } : { closed: true }));
    sock.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED') finish({ refused: true, error: e.message });
      else finish(status !== undefined ? { status, bodyStart: bodyStart(), error: e.message } : { closed: true, error: e.code ?? e.message });
    });
    const connectEvent = o.plaintext ? 'connect' : 'secureConnect';
    sock.once(connectEvent, () => {
      connected = true;
      armHang(o.trickleMs ?? 0);
      const mode = o.mode;
      if (mode === 'slowloris' || mode === 'slowloris-stall') {
        const steps = Math.max(1, Math.floor((o.trickleMs ?? 1000) / 100));
        const per = Math.ceil(bytes.length / steps);
        let i = 0;
        const tick = () => {
          if (done) return;
          if (mode === 'slowloris-stall') {
            if (i === 0) sock.write(bytes);
            i++;
            if (i * 100 < (o.trickleMs ?? 1000)) { timers.push(setTimeout(tick, 100)); return; }
            finish({ status, closed: status === undefined });
            return;
          }
          sock.write(bytes.subarray(i * per, (i + 1) * per));
          i++;
          if (i * per < bytes.length) timers.push(setTimeout(tick, 100));
          else armHang();
        };
        tick();
        return;
      }
      sock.write(bytes, () => {
        if (mode === 'truncated-abort') { timers.push(setTimeout(() => finish({ status, closed: status === undefined }), 50)); return; }
        if (mode === 'half-close' || mode === 'truncated' || mode === 'chunked-garbage' || mode === 'plaintext') sock.end();
        armHang();
      });
      // The hang clock starts once everything is written; a huge body may take a while to go out.
      armHang();
    });
  });
}

/** Opens `count` TLS connections, keeps them idle for `ms`, closes them; resolves with how many connected. */
async function idleFlood(t: Target, count: number, ms: number): Promise<Outcome> {
  const t0 = Date.now();
  const socks: TLSSocket[] = [];
  let connected = 0;
  await Promise.all(Array.from({ length: count }, () => new Promise<void>((res) => {
    const s = openTls(t, false);
    socks.push(s);
    s.once('secureConnect', () => { connected++; res(); });
    s.once('error', () => res());
    setTimeout(res, 5000);
  })));
  await sleep(ms);
  for (const s of socks) s.destroy();
  return { status: connected === count ? 200 : undefined, closed: connected !== count, ms: Date.now() - t0, error: connected === count ? undefined : `${count - connected} of ${count} connections failed` };
}

/** Sends one case and reports what happened. */
export async function sendCase(t: Target, c: FuzzCase, hangMs: number): Promise<Outcome> {
  if (c.kind === 'http') return exchange(t, wireBytes(c), { anonymous: c.anonymous, streaming: c.streaming, hangMs });
  if (c.mode === 'idle-flood') return idleFlood(t, c.count ?? 20, c.trickleMs ?? 1000);
  return exchange(t, c.bytes, { mode: c.mode, trickleMs: c.trickleMs, hangMs, plaintext: c.mode === 'plaintext' });
}

/** A one-line reproducer of a case: method, path, headers and the start of the body (or the raw bytes). */
export function describeCase(c: FuzzCase): string {
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);
  if (c.kind === 'raw') return `raw ${c.mode} ${JSON.stringify(clip(c.bytes.toString('latin1'), 300))}${c.trickleMs ? ` over ${c.trickleMs} ms` : ''}`;
  const headers = c.headers.map(([k, v]) => `${k}: ${clip(v, 80)}`).join(' | ');
  const body = c.body ? ` body(${c.body.length} B)=${JSON.stringify(clip(c.body.subarray(0, 400).toString('latin1'), 300))}` : '';
  return `${clip(c.method, 30)} ${clip(c.path, 300)}${c.anonymous ? ' (anonymous)' : ''}${headers ? ` [${headers}]` : ''}${c.contentLength !== undefined ? ` Content-Length=${c.contentLength}` : ''}${body}`;
}

// ---------------------------------------------------------------------------------------------
// A run

/** Parameters of a run. */
export interface FuzzOptions {
  /** Seeds, run one after the other against the same server; each for `seconds`. */
  seeds: number[];
  seconds: number;
  /** Cases in flight at once (default 6). */
  concurrency?: number;
  /** No answer within this many milliseconds of the request being written is a hang (default 10,000). */
  hangMs?: number;
  /** RSS of the server process above this is a failure (default 1,536 MiB). */
  maxRssMiB?: number;
  /** Progress lines (none when absent). */
  log?: (line: string) => void;
  /** Only these case indexes (with the first seed): to reproduce a failure. */
  only?: number[];
}

/** One failure: a 5xx, a hang, or a crash, with its reproducer. */
export interface FuzzFailure { seed: number; index: number; what: string; label: string; reproducer: string; answer?: string }

/** What a run found. `fivexx`, `hangs` and `crashes` must be 0, the post-run checks all true. */
export interface FuzzReport {
  seeds: number[];
  requests: number;
  byStatus: Record<string, number>;
  byLabel: Record<string, number>;
  fivexx: number;
  hangs: number;
  crashes: number;
  /** Connections closed or reset by the server without an answer (fine for malformed or oversized input). */
  closedWithoutAnswer: number;
  /** The same by kind of case. */
  closedByLabel: Record<string, number>;
  failures: FuzzFailure[];
  rssStartMiB: number;
  rssMaxMiB: number;
  rssEndMiB: number;
  maxRssMiB: number;
  durationMs: number;
  requestsPerSecond: number;
  /** After the run: /readyz and /livez 200, a ConfigMap created and read back. */
  readyz: number;
  livez: number;
  createGetOk: boolean;
  /** Server log lines about failed requests (stack traces of 5xx). */
  serverErrors: string[];
  /** Quota races (`quotaRacer`): bursts sent, and how often more objects or more usage than `hard` were seen. */
  quotaBursts: number;
  quotaViolations: number;
}

/**
 * The 5xx Kubernetes itself answers to a well-formed request: 504 Timeout with cause
 * ResourceVersionTooLarge for a list or watch at a resourceVersion the server has not reached (it
 * waited for it; client-go's reflector relies on this answer).
 */
function expected5xx(out: Outcome): boolean {
  return out.status === 504 && (out.bodyStart ?? '').includes('"ResourceVersionTooLarge"');
}

/** RSS of a process in MiB (Linux /proc), 0 when unknown. */
function rssMiB(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch { return 0; }
}

/** Creates what the cases address: namespaces, the fuzz CRD, a child workspace, a few objects. */
async function setUp(url: string, creds: Creds): Promise<void> {
  const srv = { url };
  const must = async (method: string, path: string, body: unknown, ok = [200, 201, 409]) => {
    const res = await call(srv, creds, method, path, body);
    if (!ok.includes(res.status)) throw new Error(`set-up ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return res;
  };
  for (const ns of ['fuzz', 'fz-a']) await must('POST', '/clusters/root/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await must('POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crdObject(`${FUZZ_CRD.plural}.${FUZZ_CRD.group}`, FUZZ_CRD.plural, FUZZ_CRD.group));
  await must('POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', regexCrdObject());
  await must('POST', '/clusters/root/apis/apiextensions.k8s.io/v1/customresourcedefinitions', celCostCRD());
  await must('POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces', { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'fuzz-ws' } });
  for (let i = 0; i < 100; i++) {
    const ws = await call(srv, creds, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/fuzz-ws');
    const crd = await call(srv, creds, 'GET', `/clusters/root/apis/${FUZZ_CRD.group}/${FUZZ_CRD.version}/namespaces/fuzz/${FUZZ_CRD.plural}`);
    const regexes = await call(srv, creds, 'GET', `/clusters/root/apis/${REGEX_CRD.group}/${REGEX_CRD.version}/namespaces/fuzz/${REGEX_CRD.plural}`);
    const cel = await call(srv, creds, 'GET', `/clusters/root/apis/${CEL_CRD.group}/${CEL_CRD.version}/namespaces/fuzz/${CEL_CRD.plural}`);
    if (ws.json?.status?.phase === 'Ready' && crd.status === 200 && regexes.status === 200 && cel.status === 200) break;
    await sleep(100);
  }
  for (const route of ROUTES) {
    if (route.createOnly || route.plural === 'logicalclusters' || route.plural === 'shards' || route.plural === 'namespaces') continue;
    const gv = route.group ? `/apis/${route.group}/${route.version}` : `/api/${route.version}`;
    const path = `/clusters/root${gv}${route.namespaced ? '/namespaces/fuzz' : ''}/${route.plural}`;
    await call(srv, creds, 'POST', path, route.make('fz-a', 'fuzz'));
  }
}

// ---------------------------------------------------------------------------------------------
// Quota races

/** The logical cluster, namespace and `count/configmaps` hard limit of the quota races. */
const QUOTA_CLUSTER = 'fuzz-quota';
const QUOTA_NS = 'race';
export const QUOTA_HARD = 5;
/** Requests in flight at once in one burst of the quota races. */
export const QUOTA_BURST = 20;

/**
 * A logical cluster of its own (no generated case addresses it, so nothing deletes or re-limits
 * it), a namespace, and a quota `count/configmaps: QUOTA_HARD` whose status has been computed.
 */
async function setUpQuotaRace(url: string, masters: Creds): Promise<void> {
  const srv = { url };
  const must = async (method: string, path: string, body?: unknown) => {
    const res = await call(srv, masters, method, path, body);
    if (![200, 201, 409].includes(res.status)) throw new Error(`quota set-up ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return res;
  };
  await must('POST', `/clusters/${QUOTA_CLUSTER}/apis/core.kcp.io/v1alpha1/logicalclusters`, { metadata: { name: 'cluster' } });
  for (let i = 0; i < 100 && (await call(srv, masters, 'GET', `/clusters/${QUOTA_CLUSTER}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster`)).json?.status?.phase !== 'Ready'; i++) await sleep(50);
  await must('POST', `/clusters/${QUOTA_CLUSTER}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: QUOTA_NS } });
  await must('POST', `/clusters/${QUOTA_CLUSTER}/api/v1/namespaces/${QUOTA_NS}/resourcequotas`, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { 'count/configmaps': String(QUOTA_HARD) } } });
  for (let i = 0; i < 100; i++) {
    const q = await call(srv, masters, 'GET', `/clusters/${QUOTA_CLUSTER}/api/v1/namespaces/${QUOTA_NS}/resourcequotas/q`);
    if (q.json?.status?.used?.['count/configmaps'] !== undefined) return;
    await sleep(50);
  }
  throw new Error('quota set-up: status.used never computed');
}

/**
 * Quota races beside the generated cases, until `deadline`: bursts of {@link QUOTA_BURST}
 * concurrent creates and deletes of ConfigMaps (names from the seed) in a namespace limited to
 * {@link QUOTA_HARD}. Every answer must be a 2xx or 4xx within `hangMs`; after each burst the
 * namespace may hold at most `hard` ConfigMaps and the quota's `status.used` may not exceed it.
 */
async function quotaRacer(o: { url: string; creds: Creds; seed: number; deadline: number; hangMs: number; report: FuzzReport; alive(): boolean }): Promise<void> {
  const r = new Rng(caseSeed(o.seed, 0x51707a));
  const srv = { url: o.url };
  const base = `/clusters/${QUOTA_CLUSTER}/api/v1/namespaces/${QUOTA_NS}`;
  const violation = (what: string, label: string, answer?: string) => {
    o.report.quotaViolations++;
    o.report.failures.push({ seed: o.seed, index: -1, what, label, reproducer: `quota race in /clusters/${QUOTA_CLUSTER}, namespace ${QUOTA_NS}`, answer });
  };
  while (Date.now() < o.deadline && o.alive()) {
    const ops = Array.from({ length: QUOTA_BURST }, () => (r.bool(0.7)
      ? { label: 'quota race create', method: 'POST', path: `${base}/configmaps`, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `r-${r.int(40)}` } } as unknown }
      : { label: 'quota race delete', method: 'DELETE', path: `${base}/configmaps/r-${r.int(40)}`, body: undefined as unknown }));
    await Promise.all(ops.map(async (op) => {
      let timer: NodeJS.Timeout | undefined;
      const res = await Promise.race([
        call(srv, o.creds, op.method, op.path, op.body).catch((e: Error) => ({ status: 0, body: e.message })),
        new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), o.hangMs); }),
      ]);
      clearTimeout(timer);
      o.report.requests++;
      const key = res ? String(res.status) : 'hang';
      o.report.byStatus[key] = (o.report.byStatus[key] ?? 0) + 1;
      o.report.byLabel[op.label] = (o.report.byLabel[op.label] ?? 0) + 1;
      if (!res) { o.report.hangs++; o.report.failures.push({ seed: o.seed, index: -1, what: 'hang', label: op.label, reproducer: `${op.method} ${op.path}` }); }
      else if (res.status >= 500 || res.status === 0) { o.report.fivexx++; o.report.failures.push({ seed: o.seed, index: -1, what: `${res.status}`, label: op.label, reproducer: `${op.method} ${op.path}`, answer: res.body.slice(0, 400) }); }
    }));
    o.report.quotaBursts++;
    const list = await call(srv, o.creds, 'GET', `${base}/configmaps`).catch(() => undefined);
    const n = list?.json?.items?.length;
    if (typeof n === 'number' && n > QUOTA_HARD) violation(`${n} ConfigMaps under hard=${QUOTA_HARD}`, 'quota race list');
    const q = await call(srv, o.creds, 'GET', `${base}/resourcequotas/q`).catch(() => undefined);
    const used = Number(q?.json?.status?.used?.['count/configmaps']);
    if (used > QUOTA_HARD) violation(`status.used ${used} above hard=${QUOTA_HARD}`, 'quota race status', q?.body.slice(0, 400));
  }
}

/**
 * Starts `kcp-ts start` (embedded Redis) in a fresh root directory, sets up what the cases address,
 * sends generated cases for `seconds` per seed with `concurrency` in flight, samples the server's
 * RSS, then checks the server is still healthy and serving. Returns the report; throws only when
 * the server cannot be started.
 */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const log = opts.log ?? (() => undefined);
  const hangMs = opts.hangMs ?? 10_000;
  const concurrency = opts.concurrency ?? 6;
  const maxRss = opts.maxRssMiB ?? 1536;
  const root = mkdtempSync(join(tmpdir(), 'kcp-fuzz-'));
  const port = await freePort();
  const cli: CliProcess = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
  let exited: number | string | undefined;
  void cli.exited.then((c) => { exited = c; });
  const url = await cli.ready;
  const creds = adminCreds(root);
  const target: Target = { host: '127.0.0.1', port, creds };
  const report: FuzzReport = {
    seeds: opts.seeds, requests: 0, byStatus: {}, byLabel: {}, fivexx: 0, hangs: 0, crashes: 0, closedWithoutAnswer: 0, closedByLabel: {}, failures: [],
    rssStartMiB: 0, rssMaxMiB: 0, rssEndMiB: 0, maxRssMiB: maxRss, durationMs: 0, requestsPerSecond: 0, readyz: 0, livez: 0, createGetOk: false, serverErrors: [],
    quotaBursts: 0, quotaViolations: 0,
  };
  const t0 = Date.now();
  const sampler = setInterval(() => { report.rssMaxMiB = Math.max(report.rssMaxMiB, rssMiB(cli.proc.pid)); }, 200);
  try {
    await setUp(url, creds);
    await setUpQuotaRace(url, adminCreds(root, 'system-admin'));
    report.rssStartMiB = rssMiB(cli.proc.pid);
    log(`server at ${url} (pid ${cli.proc.pid}), RSS ${report.rssStartMiB} MiB after set-up`);
    for (const seed of opts.seeds) {
      log(`seed ${seed}: ${opts.only ? `cases ${opts.only.join(',')}` : `${opts.seconds} s`}, concurrency ${concurrency}`);
      const deadline = Date.now() + opts.seconds * 1000;
      let next = 0;
      let lastLog = Date.now();
      const worker = async () => {
        for (;;) {
          if (exited !== undefined) return;
          let index: number;
          if (opts.only) { if (next >= opts.only.length) return; index = opts.only[next++]!; } else { if (Date.now() >= deadline) return; index = next++; }
          const c = generateCase(seed, index);
          const out = await sendCase(target, c, hangMs);
          report.requests++;
          const key = out.status !== undefined ? String(out.status) : out.hang ? 'hang' : out.refused ? 'refused' : 'closed';
          report.byStatus[key] = (report.byStatus[key] ?? 0) + 1;
          const family = c.label.replace(/ \+ .*/, '').split(' ').slice(0, 3).join(' ');
          report.byLabel[family] = (report.byLabel[family] ?? 0) + 1;
          if (out.closed && out.status === undefined) {
            report.closedWithoutAnswer++;
            const k = c.kind === 'raw' ? `raw ${c.mode}` : c.label.replace(/^\S+ /, '');
            report.closedByLabel[k] = (report.closedByLabel[k] ?? 0) + 1;
          }
          const fail = (what: string) => report.failures.push({ seed, index, what, label: c.label, reproducer: describeCase(c), answer: out.bodyStart?.slice(0, 400) ?? out.error });
          if (out.status !== undefined && out.status >= 500 && !expected5xx(out)) { report.fivexx++; fail(`${out.status}`); }
          if (out.hang) { report.hangs++; fail('hang'); }
          if (out.refused || exited !== undefined) { report.crashes += exited !== undefined && report.crashes === 0 ? 1 : 0; fail(`server gone (${exited ?? 'refused'})`); }
          if (opts.only) log(`case ${index}: ${c.label}: ${JSON.stringify(out)}\n  ${describeCase(c)}`);
          if (Date.now() - lastLog > 10_000) { lastLog = Date.now(); log(`  ${report.requests} requests, 5xx ${report.fivexx}, hangs ${report.hangs}, RSS ${rssMiB(cli.proc.pid)} MiB`); }
        }
      };
      await Promise.all([
        ...Array.from({ length: concurrency }, worker),
        opts.only ? Promise.resolve() : quotaRacer({ url, creds: adminCreds(root, 'system-admin'), seed, deadline, hangMs, report, alive: () => exited === undefined }),
      ]);
      if (exited !== undefined) break;
    }
    report.durationMs = Date.now() - t0;
    report.requestsPerSecond = Math.round(report.requests / Math.max(1, report.durationMs / 1000));
    if (exited === undefined) {
      const srv = { url };
      report.readyz = (await call(srv, creds, 'GET', '/readyz').catch(() => ({ status: 0 }))).status;
      report.livez = (await call(srv, creds, 'GET', '/livez').catch(() => ({ status: 0 }))).status;
      // In a namespace of its own: what the cases did to the others (quotas, deletions) is not the question.
      const name = `after-fuzz-${Date.now()}`;
      const failed = (e: unknown) => ({ status: 0, json: undefined, body: String(e) });
      const ns = await call(srv, creds, 'POST', '/clusters/root/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(failed);
      const created = await call(srv, creds, 'POST', `/clusters/root/api/v1/namespaces/${name}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { ok: 'yes' } }).catch(failed);
      const got = await call(srv, creds, 'GET', `/clusters/root/api/v1/namespaces/${name}/configmaps/${name}`).catch(failed);
      report.createGetOk = ns.status === 201 && created.status === 201 && got.status === 200 && got.json?.data?.ok === 'yes';
      if (!report.createGetOk || opts.only) {
        const inDefault = await call(srv, creds, 'POST', '/clusters/root/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'after-fuzz-' } }).catch(failed);
        log(`create in namespace default after the run: ${inDefault.status} ${inDefault.body.slice(0, 300)}`);
      }
      if (!report.createGetOk) report.serverErrors.push(`create+get after the run: namespace ${ns.status}, create ${created.status} ${created.body.slice(0, 300)}, get ${got.status} ${got.body.slice(0, 300)}`);
      report.rssEndMiB = rssMiB(cli.proc.pid);
    } else {
      report.crashes = Math.max(report.crashes, 1);
    }
  } finally {
    clearInterval(sampler);
    report.serverErrors = [...report.serverErrors, ...cli.output().split('\n').filter((l) => /request failed|Internal error|RangeError|TypeError|uncaught|FATAL|heap out of memory/i.test(l)).slice(0, 50).map((l) => l.slice(0, 3000))];
    if (exited !== undefined) report.serverErrors.push(`server exited: ${exited}`, ...cli.output().split('\n').slice(-30));
    await stopCli(cli);
    rmSync(root, { recursive: true, force: true });
  }
  return report;
}

/** True when a report shows nothing wrong. */
export function fuzzPassed(r: FuzzReport): boolean {
  return r.fivexx === 0 && r.hangs === 0 && r.crashes === 0 && r.quotaViolations === 0 && r.readyz === 200 && r.livez === 200 && r.createGetOk && r.rssMaxMiB <= r.maxRssMiB;
}

/** The report as lines for people. */
export function formatFuzzReport(r: FuzzReport): string[] {
  const statuses = Object.entries(r.byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}: ${v}`).join(', ');
  const lines = [
    `seeds ${r.seeds.join(', ')}: ${r.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s (${r.requestsPerSecond}/s)`,
    `by status: ${statuses}`,
    `5xx: ${r.fivexx}, hangs: ${r.hangs}, crashes: ${r.crashes}, closed without answer: ${r.closedWithoutAnswer}`,
    `quota races: ${r.quotaBursts} bursts of ${QUOTA_BURST} against hard=${QUOTA_HARD}, violations: ${r.quotaViolations}`,
    `closed without answer by case: ${Object.entries(r.closedByLabel).sort(([, a], [, b]) => b - a).map(([k, v]) => `${k}: ${v}`).join(', ')}`,
    `server RSS: ${r.rssStartMiB} MiB after set-up, max ${r.rssMaxMiB} MiB (limit ${r.maxRssMiB}), ${r.rssEndMiB} MiB at the end`,
    `after the run: /readyz ${r.readyz}, /livez ${r.livez}, create+get ${r.createGetOk ? 'ok' : 'FAILED'}`,
  ];
  for (const f of r.failures.slice(0, 40)) {
    lines.push(`FAILURE ${f.what}: seed ${f.seed} case ${f.index} (${f.label}); reproduce: npm run fuzz -- --seed ${f.seed} --case ${f.index}`);
    lines.push(`  ${f.reproducer}`);
    if (f.answer) lines.push(`  answer: ${f.answer.replace(/\s+/g, ' ').slice(0, 400)}`);
  }
  for (const l of r.serverErrors.slice(0, 20)) lines.push(`server: ${l}`);
  return lines;
}
