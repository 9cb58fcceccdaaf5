/** Process entry of the `kubectl-kcp` command (bin/kubectl-kcp runs the compiled form of this file). */
import { kubectlKcp } from './main.js';

kubectlKcp(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (err: unknown) => {
  process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
