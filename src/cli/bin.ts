/** Process entry of the `kcp-ts` command (bin/kcp-ts runs the compiled form of this file). */
import { ShutdownSignals } from './signals.js';

// Signal handlers before the server code is even loaded (which takes a few hundred ms).
const shutdown = new ShutdownSignals();
// Output to a reader that went away (`kcp-ts start | head`, a closed terminal) is dropped: an
// EPIPE must not kill the process before it has stopped its embedded redis-servers.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => { if (err.code !== 'EPIPE') throw err; });
}
const { startTrace } = await import('../server/starttrace.js');
startTrace('node started');
const { main } = await import('./main.js');
startTrace('command-line modules loaded');
main(process.argv.slice(2), shutdown).then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`kcp-ts: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(1);
});
