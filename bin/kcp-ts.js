#!/usr/bin/env node
// Entry point of the `kcp-ts` command: runs the compiled CLI (npm run build creates dist/).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  process.stderr.write(`kcp-ts: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
