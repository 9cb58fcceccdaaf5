/**
 * `npm run fuzz -- --seconds N [--seed S] [--concurrency C] [--case I[,J…]]`: the long hostile-input
 * run (fuzzer.ts) against `kcp-ts start`; prints its figures and exits 1 on any 5xx, hang or
 * crash, on a failed health or create/get check after the run, or when the server's RSS went
 * over `--max-rss-mib`. `--case` replays single cases of a seed (reproducing a failure). Needs a
 * build (`npm run build`) and redis-server on PATH.
 */
import { parseArgs } from 'node:util';
import { formatFuzzReport, fuzzPassed, runFuzz } from './fuzzer.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    concurrency: { type: 'string', default: '6' },
    'hang-ms': { type: 'string', default: '10000' },
    'max-rss-mib': { type: 'string', default: '1536' },
    case: { type: 'string' },
  },
});
console.log(`fuzz seed ${values.seed}`);
const report = await runFuzz({
  seeds: [Number(values.seed)], seconds: Number(values.seconds), concurrency: Number(values.concurrency),
  hangMs: Number(values['hang-ms']), maxRssMiB: Number(values['max-rss-mib']),
  only: values.case ? values.case.split(',').map(Number) : undefined,
  log: (l) => console.log(l),
});
for (const line of formatFuzzReport(report)) console.log(line);
process.exit(fuzzPassed(report) ? 0 : 1);
