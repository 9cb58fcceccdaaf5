/**
 * Summarises a V8 CPU profile (`.cpuprofile`, e.g. from `BENCH_CPU_PROF=<dir> npm run bench -- create`):
 * `node --import tsx bench/profile-summary.ts <file.cpuprofile> [top] [fromSeconds] [toSeconds]`.
 *
 * Prints the busy (non-idle) share of each 5 s of the profile, then, for the samples between
 * `fromSeconds` and `toSeconds` after the profile's start (default: all), self time by function
 * and by source file (node_modules grouped per package), and the inclusive time of the project's
 * own functions, as % of the sampled time — so one phase of a run (e.g. a deletion after its
 * creations) can be looked at alone.
 */
import { readFileSync } from 'node:fs';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface Node { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

const file = process.argv[2];
const top = Number(process.argv[3] ?? 25);
const fromUs = Number(process.argv[4] ?? 0) * 1e6;
const toUs = process.argv[5] === undefined ? Infinity : Number(process.argv[5]) * 1e6;
if (!file) { process.stderr.write('usage: profile-summary.ts <file.cpuprofile> [top]\n'); process.exit(2); }
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(p.nodes.map((n) => [n.id, n] as const));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const idleIds = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
const selfUs = new Map<number, number>();
/** Per 5 s of the profile: [busy µs, sampled µs]. */
const timeline: [number, number][] = [];
let at = 0;
for (let i = 0; i < p.samples.length; i++) {
  const dt = p.timeDeltas[i] ?? 0;
  at += dt;
  const slot = (timeline[Math.floor(at / 5e6)] ??= [0, 0]);
  slot[1] += dt;
  if (!idleIds.has(p.samples[i]!)) slot[0] += dt;
  if (at < fromUs || at > toUs) continue;
  selfUs.set(p.samples[i]!, (selfUs.get(p.samples[i]!) ?? 0) + dt);
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

function where(cf: CallFrame): string {
  const url = cf.url.replace(/^file:\/\//, '');
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return url;
  const src = url.indexOf('/src/');
  return src >= 0 ? url.slice(src + 1) : url;
}
function label(cf: CallFrame): string {
  // Line numbers are omitted: tsx-transformed modules do not map them back to the sources.
  return `${cf.functionName || '(anonymous)'} ${where(cf)}`;
}

const fnSelf = new Map<string, number>();
const fileSelf = new Map<string, number>();
for (const [id, us] of selfUs) {
  const cf = byId.get(id)!.callFrame;
  fnSelf.set(label(cf), (fnSelf.get(label(cf)) ?? 0) + us);
  fileSelf.set(where(cf), (fileSelf.get(where(cf)) ?? 0) + us);
}

// Inclusive time of project functions (src/…), counting each function once per sample stack.
const incl = new Map<string, number>();
for (const [id, us] of selfUs) {
  const seen = new Set<string>();
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const cf = byId.get(n)!.callFrame;
    if (!cf.url.includes('/src/')) continue;
    const l = label(cf);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + us);
  }
}

const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)} %`;
const print = (title: string, m: Map<string, number>, n: number) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, v] of [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`  ${pct(v)}  ${k}\n`);
};
process.stdout.write(`busy % per 5 s: ${[...timeline].map((t) => (t ? Math.round((t[0] / Math.max(1, t[1])) * 100) : 0)).join(' ')}\n`);
process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s sampled${fromUs || toUs !== Infinity ? ` (from ${fromUs / 1e6} s to ${toUs === Infinity ? 'the end' : `${toUs / 1e6} s`})` : ''}\n`);
print('self time by function', fnSelf, top);
print('self time by file / package', fileSelf, 15);
print('inclusive time of src/ functions', incl, top);
