/** Helpers shared by the `kcp-ts` commands' flag handling. */
import { readFileSync } from 'node:fs';

/**
 * The content (UTF-8) of the file a flag names.
 * @throws Error `--<flag>: cannot read <path>: <code>` when it cannot be read
 */
export function readFlagFile(flag: string, path: string): string {
  try { return readFileSync(path, 'utf8'); } catch (err) { throw new Error(`--${flag}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`); }
}

/** Help text of `--http2-max-streams-per-connection`, shared by `kcp-ts start` and `kcp-ts front-proxy`. */
export const HTTP2_STREAMS_USAGE = `  --http2-max-streams-per-connection N
                            streams one HTTP/2 client may have open on a connection (default
                            1000, kube's; SETTINGS_MAX_CONCURRENT_STREAMS); 0 serves HTTP/1.1 only
`;

/**
 * The value of `--http2-max-streams-per-connection` (kube-apiserver's flag): undefined when not
 * given (the default, 1,000, applies), else an integer in [0, 2³¹−1].
 * @throws Error `invalid --http2-max-streams-per-connection "<v>" (…)` otherwise
 */
export function http2StreamsFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 2 ** 31 - 1) throw new Error(`invalid --http2-max-streams-per-connection "${v}" (an integer from 0, HTTP/1.1 only, to 2147483647)`);
  return n;
}
