/** Helpers shared by the `kcp-ts` commands' flag handling. */
import { readFileSync } from 'node:fs';

/**
 * The content (UTF-8) of the file a flag names.
 * @throws Error `--<flag>: cannot read <path>: <code>` when it cannot be read
 */
export function readFlagFile(flag: string, path: string): string {
  try { return readFileSync(path, 'utf8'); } catch (err) { throw new Error(`--${flag}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
}
