/** Process entry of the `kcp-ts` command (bin/kcp-ts runs the compiled form of this file). */
import { main } from './main.js';

main(process.argv.slice(2)).then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`kcp-ts: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
