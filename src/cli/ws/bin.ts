/** Process entry of the `kubectl-ws` command (bin/kubectl-ws runs the compiled form of this file). */
import { kubectlWs } from '../kubectl-ws.js';

kubectlWs(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (err: unknown) => {
  process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
