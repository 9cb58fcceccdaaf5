/** Process entry of the `kubectl-create-workspace` command (bin/kubectl-create-workspace runs its compiled form). */
import { kubectlCreateWorkspace } from '../kubectl-ws.js';

kubectlCreateWorkspace(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (err: unknown) => {
  process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
