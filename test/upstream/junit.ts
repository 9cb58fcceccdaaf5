/**
 * Reads the JUnit report e2e.test writes with `--report-dir` (`junit_01.xml`, Ginkgo v2's
 * reporters.GenerateJUnitReportWithConfig as k8s.io/kubernetes test/e2e/framework/internal/junit
 * configures it): one `<testcase name="[It] <spec>" status="passed|failed|skipped|…" time="s">`
 * per spec, with a `<failure>` or `<skipped>` child whose text says why. Only what the report needs
 * is read; the parser is a bounded scan of those elements, not a general XML parser.
 */

/** Outcome of one spec as Ginkgo reports it (types.SpecState names). */
export type SpecState = 'passed' | 'failed' | 'skipped' | 'pending' | 'panicked' | 'interrupted' | 'aborted' | 'timedout';

/** One spec of the report. */
export interface SpecResult {
  /** `spec` for an `[It]`, `suite` for a suite node (`[SynchronizedBeforeSuite]` …). */
  kind: 'spec' | 'suite';
  /** Full spec text, without Ginkgo's leading `[It] ` (e.g. `[sig-api-machinery] Watchers should … [Conformance]`). */
  name: string;
  state: SpecState;
  /** Run time in seconds. */
  seconds: number;
  /** The first lines of the failure or skip text (at most {@link MAX_REASON_CHARS}), '' when passed. */
  reason: string;
}

/** Longest failure text kept per spec: its first lines name the failed assertion. */
export const MAX_REASON_CHARS = 600;

/** Largest report read (a report of the ~100 specs run here is a few hundred KiB). */
export const MAX_REPORT_BYTES = 64 * 1024 * 1024;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes XML character and entity references. */
export function xmlUnescape(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e.startsWith('#x') ? String.fromCodePoint(parseInt(e.slice(2), 16)) : e.startsWith('#') ? String.fromCodePoint(parseInt(e.slice(1), 10)) : ENTITIES[e]!);
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([A-Za-z_:][\w:.-]*)="([^"]*)"/g)) out[m[1]!] = xmlUnescape(m[2]!);
  return out;
}

/** The summary of a failure text: Ginkgo's "[FAILED] …" line and what follows, up to the location. */
function summarize(text: string): string {
  const lines = text.split('\n').map((l) => l.trimEnd());
  const at = lines.findIndex((l) => /^\s*\[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED)\]/.test(l));
  const from = at >= 0 ? lines.slice(at) : lines;
  const kept: string[] = [];
  for (const l of from) {
    if (kept.length > 0 && /^\s*In \[|^\s*\S+\.go:\d+/.test(l)) break;
    if (l.trim()) kept.push(l.trim());
  }
  const s = kept.join(' ').replace(/\s+/g, ' ');
  return s.length > MAX_REASON_CHARS ? `${s.slice(0, MAX_REASON_CHARS - 1)}…` : s;
}

/**
 * Parses the report. Only `[It]` test cases are specs; the suite's own nodes
 * (`[SynchronizedBeforeSuite]`, `[ReportAfterSuite]` …) are returned under their own names when
 * they failed, so a broken setup is visible. Specs the focus and skip did not select are in the
 * report too, `skipped` with the reason `skipped` (see {@link selected}).
 * @throws Error when the text is larger than {@link MAX_REPORT_BYTES} or holds no `<testsuite>`.
 */
export function parseJUnit(xml: string): SpecResult[] {
  if (xml.length > MAX_REPORT_BYTES) throw new Error(`JUnit report larger than ${MAX_REPORT_BYTES} bytes`);
  if (!/<testsuite[\s>]/.test(xml)) throw new Error('not a JUnit report: no <testsuite>');
  const out: SpecResult[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const a = attributes(m[1]!);
    const full = a.name ?? '';
    const body = m[3] ?? '';
    const isSpec = full.startsWith('[It] ');
    const state = (a.status ?? (/<failure\b/.test(body) ? 'failed' : /<skipped\b/.test(body) ? 'skipped' : 'passed')) as SpecState;
    if (!isSpec && state === 'passed') continue;
    let reason = '';
    const failure = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    const skipped = /<skipped\b([^>]*?)\/?>/.exec(body);
    if (failure) reason = summarize(xmlUnescape(failure[3] ?? attributes(failure[2]!).message ?? ''));
    else if (skipped && state !== 'passed') reason = summarize(attributes(skipped[1]!).message ?? '');
    out.push({ kind: isSpec ? 'spec' : 'suite', name: isSpec ? full.slice(5) : full, state, seconds: Number(a.time ?? 0), reason });
  }
  return out;
}

/** Whether a spec ran or was skipped while running (not left out by --ginkgo.focus/skip, which Ginkgo reports as plain `skipped`). */
export function selected(r: SpecResult): boolean {
  return r.kind === 'suite' || r.state !== 'skipped' || r.reason !== 'skipped';
}
