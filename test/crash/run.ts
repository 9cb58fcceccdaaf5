/**
 * `npm run crash -- [--kills N] [--writers W] [--seed S]`: the long crash-consistency run
 * (consistency.ts) against `kcp-ts start`; prints its figures and exits 1 on any lost,
 * half-applied or misdelivered write. Needs a build (`npm run build`) and redis-server on PATH.
 */
import { parseArgs } from 'node:util';
import { formatCrashReport, runCrashConsistency } from './consistency.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '20' },
    writers: { type: 'string', default: '24' },
    objects: { type: 'string', default: '8' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
  },
});
const report = await runCrashConsistency({
  seed: Number(values.seed), writers: Number(values.writers), objectsPerWriter: Number(values.objects), kills: Number(values.kills),
  killAfterMs: [300, 3000], log: (l) => console.log(l),
});
for (const line of formatCrashReport(report)) console.log(line);
const violations = [...report.lost, ...report.halfApplied, ...report.watchGaps, ...report.watchDuplicates, ...report.watchOutOfOrder];
for (const v of violations.slice(0, 50)) console.log(`VIOLATION ${v}`);
process.exit(violations.length === 0 ? 0 : 1);
