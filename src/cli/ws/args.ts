/**
 * Command-line parsing of the `kubectl ws` plugin in the style of spf13/pflag, which kcp's cobra
 * commands use: `--flag value`, `--flag=value`, `-x value`, `-xvalue`, boolean flags with an
 * optional `=true|false`, `--` ending the flags, and flags anywhere among the arguments.
 *
 * Flag set: kcp-dev/kcp `staging/src/github.com/kcp-dev/cli/pkg/base/options.go` (`--kubeconfig`
 * and the subset of client-go's `RecommendedConfigOverrideFlags` kcp keeps), `pkg/workspace/cmd/cmd.go`
 * and the `BindFlags` of `pkg/workspace/plugin/{use,create,tree,context}.go`.
 */

/** Definition of one flag. */
export interface FlagSpec {
  name: string;
  short?: string;
  type: 'string' | 'bool';
}

/** Flags understood by every command (connection flags and klog's `-v`). */
const COMMON_FLAGS: FlagSpec[] = [
  { name: 'kubeconfig', type: 'string' },
  { name: 'context', type: 'string' },
  { name: 'user', type: 'string' },
  { name: 'namespace', short: 'n', type: 'string' },
  { name: 'server', short: 's', type: 'string' },
  { name: 'token', type: 'string' },
  { name: 'certificate-authority', type: 'string' },
  { name: 'insecure-skip-tls-verify', type: 'bool' },
  { name: 'tls-server-name', type: 'string' },
  { name: 'username', type: 'string' },
  { name: 'password', type: 'string' },
  { name: 'proxy-url', type: 'string' },
  { name: 'disable-compression', type: 'bool' },
  { name: 'v', short: 'v', type: 'string' },
  { name: 'help', short: 'h', type: 'bool' },
  { name: 'version', type: 'bool' },
];

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

/** A usage error (unknown flag, missing value); printed as `Error: <message>`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
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
  const specs = [...COMMON_FLAGS, ...(COMMAND_FLAGS[command] ?? [])];
  const out: ParsedArgs = { command, args: [], strings: {}, bools: {} };
  let commandSeen = command === '';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') { out.args.push(...argv.slice(i + 1)); break; }
    if (a.startsWith('-') && a.length > 1) {
      const long = a.startsWith('--');
      const eq = a.indexOf('=');
      const name = long ? a.slice(2, eq < 0 ? undefined : eq) : a[1]!;
      const spec = specs.find((s) => (long ? s.name === name : s.short === name));
      if (!spec) throw new UsageError(long ? `unknown flag: --${name}` : `unknown shorthand flag: '${name}' in ${a}`);
      let value: string | undefined;
      if (long) value = eq < 0 ? undefined : a.slice(eq + 1);
      else if (a.length > 2) value = a[2] === '=' ? a.slice(3) : a.slice(2);
      if (spec.type === 'bool') {
        if (value === undefined || value === 'true' || value === '1' || value === 't' || value === 'T' || value === 'TRUE' || value === 'True') out.bools[spec.name] = true;
        else if (value === 'false' || value === '0' || value === 'f' || value === 'F' || value === 'FALSE' || value === 'False') out.bools[spec.name] = false;
        else throw new UsageError(`invalid argument ${JSON.stringify(value)} for "${long ? `--${name}` : `-${name}, --${spec.name}`}" flag: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
        continue;
      }
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: ${long ? `--${name}` : `'${name}' in -${name}`}`);
        value = argv[++i]!;
      }
      out.strings[spec.name] = value;
      continue;
    }
    if (!commandSeen) { commandSeen = true; continue; }
    out.args.push(a);
  }
  return out;
}
