/** Process entry of the `kcp-ts` command (bin/kcp-ts runs the compiled form of this file). */
import { ShutdownSignals } from './signals.js';

// Signal handlers before the server code is even loaded (which takes a few hundred ms).
const shutdown = new ShutdownSignals();
const { main } = await import('./main.js');
main(process.argv.slice(2), shutdown).then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`kcp-ts: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
