/**
 * Command-line parsing of the `kubectl ws` plugin (the plugins' pflag-style parser, ../flags.ts):
 * its sub-commands and their flags, kcp-dev/kcp `staging/src/github.com/kcp-dev/cli`
 * `pkg/workspace/cmd/cmd.go` and the `BindFlags` of `pkg/workspace/plugin/{use,create,tree,context}.go`.
 */

import { CONNECTION_FLAGS, parseFlags, UsageError, type FlagSpec } from '../pflag.js';

export { UsageError };

/** Flags understood by every command: the connection flags and `--version`. */
const COMMON_FLAGS: FlagSpec[] = [...CONNECTION_FLAGS, { name: 'version', type: 'bool' }];

/** Flags of the individual commands. */
const COMMAND_FLAGS: Record<string, FlagSpec[]> = {
  '': [{ name: 'short', type: 'bool' }, { name: 'interactive', short: 'i', type: 'bool' }],
  use: [{ name: 'short', type: 'bool' }],
  current: [{ name: 'short', type: 'bool' }],
  tree: [{ name: 'full', short: 'f', type: 'bool' }, { name: 'interactive', short: 'i', type: 'bool' }, { name: 'wide', type: 'bool' }],
  create: [
    { name: 'type', type: 'string' },
    { name: 'enter', type: 'bool' },
    { name: 'ignore-existing', type: 'bool' },
    { name: 'location-selector', type: 'string' },
    { name: 'create-context', type: 'string' },
  ],
  'create-context': [{ name: 'overwrite', type: 'bool' }],
};

/** Sub-commands and their aliases (kcp: `use` has the alias `cd`). */
export const COMMANDS: Record<string, string> = { use: 'use', cd: 'use', current: 'current', tree: 'tree', create: 'create', 'create-context': 'create-context' };

/** Result of {@link parseArgs}. */
export interface ParsedArgs {
  /** The sub-command (`''` for the root `kubectl ws [<path>]`). */
  command: string;
  /** Positional arguments after the sub-command. */
  args: string[];
  /** String flag values. */
  strings: Record<string, string>;
  /** Boolean flag values. */
  bools: Record<string, boolean>;
}

/**
 * Parses the plugin's arguments. The first positional argument selects a sub-command when it is
 * one (as cobra does with `TraverseChildren`); `-` and `..` are positional arguments.
 *
 * @throws {UsageError} `unknown flag: --x`, `unknown shorthand flag: 'x' in -x`,
 *   `flag needs an argument: --x`, `invalid argument "x" for "--y" flag: …`.
 */
export function parseArgs(argv: string[]): ParsedArgs {
  // First pass: find the command (the first positional), knowing which flags consume a value.
  const allSpecs = [...COMMON_FLAGS, ...Object.values(COMMAND_FLAGS).flat()];
  let command = '';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-') && a.length > 1) {
      const long = a.startsWith('--');
      const name = long ? a.slice(2).split('=')[0]! : a[1]!;
      const spec = allSpecs.find((s) => (long ? s.name === name : s.short === name));
      if (spec?.type === 'string' && (long ? !a.includes('=') : a.length === 2)) i++;
      continue;
    }
    command = COMMANDS[a] ?? '';
    break;
  }
  return parseWith(argv, command);
}

function parseWith(argv: string[], command: string): ParsedArgs {
  const parsed = parseFlags(argv, [...COMMON_FLAGS, ...(COMMAND_FLAGS[command] ?? [])]);
  // The sub-command itself is the first positional argument.
  return { command, args: command ? parsed.args.slice(1) : parsed.args, strings: parsed.strings, bools: parsed.bools };
}
