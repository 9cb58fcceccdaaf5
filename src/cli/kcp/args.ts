/**
 * Flags of the `kubectl kcp` plugin's commands: kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli/pkg/bind/plugin/bind.go` (`BindFlags`). Parsing is the
 * plugins' one pflag-style parser (../pflag.ts).
 */
import type { FlagSpec } from '../pflag.js';

export { CONNECTION_FLAGS, parseDuration, parseFlags, UsageError, type FlagSpec, type ParsedFlags } from '../pflag.js';

/** Flags of `kubectl kcp bind apiexport` (kcp `BindOptions.BindFlags`). */
export const BIND_FLAGS: FlagSpec[] = [
  { name: 'name', type: 'string' },
  { name: 'timeout', type: 'duration' },
  { name: 'accept-permission-claim', type: 'strings' },
  { name: 'reject-permission-claim', type: 'strings' },
  { name: 'accept-all-permission-claims', type: 'bool' },
  { name: 'reject-all-permission-claims', type: 'bool' },
];
