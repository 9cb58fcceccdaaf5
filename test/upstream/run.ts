/**
 * `npm run conformance:upstream`: Kubernetes' own e2e suite (`e2e.test` of k8s.io/kubernetes
 * v1.34.4, built by test/tools/build.sh) against a kcp-ts shard, the sig-api-machinery
 * Conformance specs, with the suite's default content type (protobuf for built-in kinds).
 *
 * It starts a Redis and a shard (the project's server, its defaults), creates the workspace
 * `root:e2e` (kcp's reference for running Kubernetes conformance is a workspace, kcp-dev/kcp
 * issue 2883), puts the shim of test/upstream/shim.ts in front of it (the one path a pod-less
 * control plane cannot answer), writes a kubeconfig for the workspace and runs e2e.test as the
 * conformance image's runner does (test/conformance/image/go-runner: `--provider=local
 * --disable-log-dump --report-dir … --ginkgo.timeout=24h`, serially, nothing skipped by tag). The
 * JUnit report is read and every spec classified (test/upstream/not-applicable.ts):
 *
 *   passed · failed, applicable (with the recorded cause, if any) · not applicable (with why)
 *
 * With `--write-docs` the result replaces the generated section of docs/conformance.md.
 *
 *   node --import tsx test/upstream/run.ts [--write-docs] [--focus REGEX] [--keep] [-- E2E_ARGS…]
 *
 * `--keep` keeps the run's directory (report, e2e.test output, the shard's PKI and kubeconfig).
 *
 * Exit status: 0 when every applicable spec passed or failed with a recorded cause and no recorded
 * cause is stale (its spec passes now); 1 otherwise (each reason printed); 2 when the suite could
 * not run (setup failed, no report).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { createWorkspace, startRedis, startTestServer } from '../helpers.js';
import { parseJUnit, selected, type SpecResult } from './junit.js';
import { KNOWN_FAILURES, NOT_APPLICABLE, CRASHES_THE_SUITE, type NotApplicable } from './not-applicable.js';
import { startShim } from './shim.js';
import { ensureE2eTools } from './tools.js';

/** The specs run: sig-api-machinery's Conformance specs (95 in v1.34.4). */
export const UPSTREAM_FOCUS = '\\[sig-api-machinery\\].*\\[Conformance\\]';

/** Escapes a spec name for a Ginkgo regular expression. */
export function regexEscape(s: string): string { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

/**
 * The e2e.test arguments: the conformance runner's (go-runner cmd.go: provider local, no log
 * dump, report dir, 24 h Ginkgo timeout), the focus, a skip of exactly the specs that crash the
 * binary (named in not-applicable.ts), and what a pod-less control plane needs:
 * `--allowed-not-ready-nodes=-1` (no wait for Nodes, kube-system Pods and DaemonSets in the
 * suite setup) and `--num-nodes=0` (the node count is given, not listed from Nodes).
 * No content-type flag: the suite's default (protobuf for built-in kinds) is what is tested.
 */
export function e2eArgs(opts: { kubeconfig: string; reportDir: string; focus: string; extra?: string[] }): string[] {
  // Not anchored: Ginkgo matches against the spec text followed by its labels.
  const skip = CRASHES_THE_SUITE.map((n) => regexEscape(n)).join('|');
  return [
    `--kubeconfig=${opts.kubeconfig}`, '--provider=local', '--disable-log-dump', `--report-dir=${opts.reportDir}`,
    '--allowed-not-ready-nodes=-1', '--num-nodes=0',
    `--ginkgo.focus=${opts.focus}`, ...(skip ? [`--ginkgo.skip=${skip}`] : []),
    '--ginkgo.timeout=24h', '--ginkgo.no-color', '--ginkgo.v',
    ...(opts.extra ?? []),
  ];
}

/** One spec with its classification. */
export interface ClassifiedSpec extends SpecResult {
  /** Why it cannot apply, when it cannot. */
  notApplicable?: NotApplicable;
  /** The recorded cause of a failure of an applicable spec (not-applicable.ts `KNOWN_FAILURES`). */
  knownCause?: string;
}

/** The outcome of a run. */
export interface UpstreamRun {
  specs: ClassifiedSpec[];
  /** Wall time of e2e.test, and of everything (server start, workspace, suite), in seconds. */
  suiteSeconds: number;
  totalSeconds: number;
  /** Requests the shim answered itself. */
  shimAnswered: number;
  /** e2e.test's exit code (non-zero when any spec failed). */
  exitCode: number;
  /** Where e2e.test's output (`e2e.log`) and the JUnit report are; the caller removes its parent directory. */
  reportDir: string;
}

/** Sorts results into the three groups and attaches reasons and causes. */
export function classify(results: SpecResult[]): ClassifiedSpec[] {
  const na = new Map(NOT_APPLICABLE.map((n) => [n.spec, n]));
  const known = new Map(KNOWN_FAILURES.map((k) => [k.spec, k.cause]));
  const out: ClassifiedSpec[] = results.map((r) => ({
    ...r,
    ...(na.has(r.name) ? { notApplicable: na.get(r.name)! } : {}),
    ...(known.has(r.name) ? { knownCause: known.get(r.name)! } : {}),
  }));
  // The skipped crashers are not in the report as run specs: list them with their reason.
  for (const name of CRASHES_THE_SUITE) {
    if (!out.some((s) => s.name === name)) out.push({ kind: 'spec', name, state: 'skipped', seconds: 0, reason: 'skipped by name: crashes e2e.test', notApplicable: na.get(name)! });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Problems that make the run fail: applicable failures without a recorded cause, stale causes, a
 * failed suite node, and (for a `complete` run of the whole focus) table entries naming no spec.
 */
export function verdict(specs: ClassifiedSpec[], complete = true): string[] {
  const problems: string[] = [];
  for (const s of specs) {
    if (s.notApplicable || s.kind === 'suite') continue;
    if (s.state === 'passed' && s.knownCause) problems.push(`passes now, remove its KNOWN_FAILURES entry (test/upstream/not-applicable.ts) and regenerate docs: ${s.name}`);
    if (s.state !== 'passed' && !s.knownCause) problems.push(`applicable spec ${s.state}: ${s.name}: ${s.reason}`);
  }
  const names = new Set(specs.map((s) => s.name));
  if (complete) {
    for (const n of NOT_APPLICABLE) if (!names.has(n.spec)) problems.push(`NOT_APPLICABLE names a spec the run did not select: ${n.spec}`);
    for (const k of KNOWN_FAILURES) if (!names.has(k.spec)) problems.push(`KNOWN_FAILURES names a spec the run did not select: ${k.spec}`);
  }
  if (!specs.some((s) => s.kind === 'spec')) problems.push('no spec ran');
  for (const s of specs) if (s.kind === 'suite') problems.push(`suite node ${s.state}: ${s.name}: ${s.reason}`);
  return problems;
}

/**
 * Runs the suite against a fresh shard. `focus` narrows the specs (default {@link UPSTREAM_FOCUS});
 * `extra` are appended e2e.test arguments; `keep` keeps the shard's directory (PKI, kubeconfig) beside
 * the report.
 * @throws Error when the tools are missing, the server or workspace cannot start, or no report was written.
 */
export async function runUpstream(opts: { focus?: string; extra?: string[]; keep?: boolean; log?: (line: string) => void } = {}): Promise<UpstreamRun> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const tools = ensureE2eTools();
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'kcp-upstream-'));
  const reportDir = join(work, 'report');
  mkdirSync(reportDir);
  // The e2e kubeconfig authenticates with a bearer token (the shim forwards it; it holds no
  // identity of its own), the same identity as the admin certificate: kcp-admin, system:kcp:admin.
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(work, 'tokens.csv');
  writeFileSync(tokenFile, `${token},kcp-admin,kcp-admin,"system:kcp:admin"\n`, { mode: 0o600 });
  const redis = await startRedis();
  const root = join(work, 'kcp');
  const srv = await startTestServer(redis, { tokenAuthFile: tokenFile }, root);
  const shim = await startShim({
    upstream: srv.url, caPem: srv.caPem,
    certPem: readFileSync(join(root, 'apiserver.crt'), 'utf8'), keyPem: readFileSync(join(root, 'apiserver.key'), 'utf8'),
  });
  try {
    const cluster = await createWorkspace(srv, 'e2e');
    log(`workspace root:e2e (logical cluster ${cluster}) on ${srv.url}, shim ${shim.url}`);
    const kubeconfig = join(work, 'e2e.kubeconfig');
    writeFileSync(kubeconfig, buildKubeconfig({
      clusters: [{ name: 'e2e', server: `${shim.url}/clusters/root:e2e`, caPem: srv.caPem }],
      users: [{ name: 'kcp-admin', token }],
      contexts: [{ name: 'e2e', cluster: 'e2e', user: 'kcp-admin' }],
      currentContext: 'e2e',
    }), { mode: 0o600 });
    const args = e2eArgs({ kubeconfig, reportDir, focus: opts.focus ?? UPSTREAM_FOCUS, extra: opts.extra });
    log(`e2e.test ${args.join(' ')}`);
    const suiteStart = Date.now();
    const out = createWriteStream(join(reportDir, 'e2e.log'));
    const child = spawn(tools.e2eTest, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: kubeconfig } });
    let buf = '';
    const progress = (chunk: Buffer) => {
      out.write(chunk);
      buf += chunk.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i); buf = buf.slice(i + 1);
        // Ginkgo's verbose reporter marks each finished spec with a bullet line.
        const m = /^(•|S|P|\[FAILED\]|\[PANICKED\]|\[TIMEDOUT\])\s*(\[\d+\.\d+ seconds\])?$/.exec(line.trim());
        if (m && m[1] !== 'S') log(`  ${line.trim()}`);
        if (/^\s*\[sig-api-machinery\]/.test(line) && line.length < 400) log(`  ${line.trim()}`);
      }
    };
    child.stdout!.on('data', progress);
    child.stderr!.on('data', (c: Buffer) => out.write(c));
    const exitCode = await new Promise<number>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
    await new Promise<void>((r) => out.end(r));
    const suiteSeconds = (Date.now() - suiteStart) / 1000;
    const junit = join(reportDir, 'junit_01.xml');
    if (!existsSync(junit)) throw new Error(`e2e.test exited ${exitCode} without a JUnit report; its output: ${join(reportDir, 'e2e.log')}`);
    const specs = classify(parseJUnit(readFileSync(junit, 'utf8')).filter(selected));
    return { specs, suiteSeconds, totalSeconds: (Date.now() - started) / 1000, shimAnswered: shim.answered(), exitCode, reportDir };
  } finally {
    await shim.stop();
    await srv.stop();
    await redis.stop();
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}

const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** Counts of the three groups. */
export function counts(all: ClassifiedSpec[]): { passed: number; failedApplicable: number; notApplicable: number; total: number } {
  const specs = all.filter((s) => s.kind === 'spec');
  const applicable = specs.filter((s) => !s.notApplicable);
  const passed = applicable.filter((s) => s.state === 'passed').length;
  return { passed, failedApplicable: applicable.length - passed, notApplicable: specs.length - applicable.length, total: specs.length };
}

/** The generated section of docs/conformance.md (between the markers). */
export function markdown(run: Pick<UpstreamRun, 'specs' | 'suiteSeconds' | 'totalSeconds' | 'shimAnswered'>, extra: string[] = [], when = new Date()): string {
  const c = counts(run.specs);
  const lines = [
    `Last run ${when.toISOString().slice(0, 10)}: **${c.passed} passed of ${c.passed + c.failedApplicable} applicable**, ${c.failedApplicable} failed, ` +
    `${c.notApplicable} not applicable, of the ${c.total} specs \`${UPSTREAM_FOCUS}\` selects ` +
    `(the suite took ${Math.round(run.suiteSeconds)} s, the whole run ${Math.round(run.totalSeconds)} s, on 2 cores; the shim answered ${run.shimAnswered} request(s)).`,
    ...(extra.length ? ['', `e2e.test ran with these arguments added: \`${extra.join(' ')}\`.`] : []),
    '',
    '| spec | result |', '|---|---|',
  ];
  for (const s of run.specs.filter((x) => !x.notApplicable)) {
    if (s.kind === 'suite') { lines.push(`| suite node ${esc(s.name)} | **${s.state}**: ${esc(s.reason)} |`); continue; }
    const result = s.state === 'passed' ? 'passed' : `**${s.state}**${s.knownCause ? ` — cause: ${esc(s.knownCause)}` : ''}: ${esc(s.reason)}`;
    lines.push(`| ${esc(s.name)} | ${result} |`);
  }
  lines.push('', '### Not applicable', '', '| spec | needs | why not applicable |', '|---|---|---|');
  for (const s of run.specs.filter((x) => x.notApplicable)) {
    lines.push(`| ${esc(s.name)} | ${s.notApplicable!.needs.join(', ')} | ${esc(s.notApplicable!.reason)}${s.state === 'passed' ? ' (it passed anyway)' : ''} |`);
  }
  return lines.join('\n');
}

/** Markers of the generated section in docs/conformance.md. */
export const DOCS_BEGIN = '<!-- BEGIN upstream e2e results: generated by `npm run conformance:upstream -- --write-docs`; do not edit -->';
export const DOCS_END = '<!-- END upstream e2e results -->';

/** Replaces the generated section of docs/conformance.md. @throws Error when the markers are missing. */
export function writeDocs(section: string, path = join(import.meta.dirname, '..', '..', 'docs', 'conformance.md')): void {
  const text = readFileSync(path, 'utf8');
  const a = text.indexOf(DOCS_BEGIN);
  const b = text.indexOf(DOCS_END);
  if (a < 0 || b < a) throw new Error(`${path} has no generated section (${DOCS_BEGIN} … ${DOCS_END})`);
  writeFileSync(path, `${text.slice(0, a + DOCS_BEGIN.length)}\n${section}\n${text.slice(b)}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const dash = argv.indexOf('--');
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  const extra = dash >= 0 ? argv.slice(dash + 1) : [];
  const fi = own.indexOf('--focus');
  const focus = fi >= 0 ? own[fi + 1] : undefined;
  const keep = own.includes('--keep');
  try {
    const run = await runUpstream({ focus, extra, keep });
    const c = counts(run.specs);
    for (const s of run.specs) {
      const tag = s.notApplicable ? 'n/a ' : s.state === 'passed' ? 'ok  ' : 'FAIL';
      process.stderr.write(`${tag} ${s.name}${s.state !== 'passed' && !s.notApplicable ? `\n       ${s.knownCause ? `cause: ${s.knownCause}\n       ` : ''}${s.reason}` : ''}\n`);
    }
    process.stderr.write(`\n${c.passed} passed of ${c.passed + c.failedApplicable} applicable, ${c.notApplicable} not applicable; suite ${run.suiteSeconds.toFixed(0)} s, total ${run.totalSeconds.toFixed(0)} s; report in ${run.reportDir}\n`);
    if (own.includes('--write-docs') && !focus) writeDocs(markdown(run, extra));
    else if (own.includes('--write-docs')) process.stderr.write('docs not written: --focus makes a partial run\n');
    if (!keep) rmSync(join(run.reportDir, '..'), { recursive: true, force: true });
    const problems = verdict(run.specs, !focus);
    for (const p of problems) process.stderr.write(`problem: ${p}\n`);
    process.exitCode = problems.length > 0 ? 1 : 0;
  } catch (e) {
    process.stderr.write(`conformance:upstream: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 2;
  }
}
