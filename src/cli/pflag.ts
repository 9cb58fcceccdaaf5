/**
 * Command-line parsing of the kubectl plugins (`kubectl ws`, `kubectl kcp`) in the style of
 * spf13/pflag, which kcp's cobra commands use: `--flag value`, `--flag=value`, `-x value`,
 * `-xvalue`, boolean flags with an optional `=true|false`, string-slice flags that may be
 * repeated and take comma-separated values, Go durations, `--` ending the flags, and flags
 * anywhere among the arguments.
 *
 * Connection flags: kcp-dev/kcp `staging/src/github.com/kcp-dev/cli/pkg/base/options.go`
 * (`--kubeconfig` and the subset of client-go's `RecommendedConfigOverrideFlags` kcp keeps).
 */

import type { ConfigOverrides } from './ws/kubeconfig.js';

/** A usage error (unknown flag, missing value); printed as `Error: <message>`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Definition of one flag. */
export interface FlagSpec {
  name: string;
  short?: string;
  /** `strings`: a pflag `StringSlice` (repeatable, comma-separated); `duration`: a Go duration. */
  type: 'string' | 'bool' | 'strings' | 'duration';
}

/** Connection flags of every command (kcp `base.Options`), klog's `-v` and `--help`. */
export const CONNECTION_FLAGS: FlagSpec[] = [
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
];

/** Result of {@link parseFlags}. */
export interface ParsedFlags {
  /** Positional arguments, in order (sub-command names included). */
  args: string[];
  /** String flag values (the last one given wins). */
  strings: Record<string, string>;
  /** Boolean flag values. */
  bools: Record<string, boolean>;
  /** String-slice flag values, all occurrences concatenated. */
  slices: Record<string, string[]>;
  /** Duration flag values in milliseconds. */
  durations: Record<string, number>;
}

const TRUE = new Set(['true', '1', 't', 'T', 'TRUE', 'True']);
const FALSE = new Set(['false', '0', 'f', 'F', 'FALSE', 'False']);

/**
 * Parses `argv` against the flag set `specs`; everything that is not a flag (or a flag's value)
 * is a positional argument.
 *
 * @throws {UsageError} pflag's messages: `unknown flag: --x`, `unknown shorthand flag: 'x' in -x`,
 *   `flag needs an argument: --x`, `invalid argument "v" for "--x" flag: …`.
 */
export function parseFlags(argv: string[], specs: FlagSpec[]): ParsedFlags {
  const out: ParsedFlags = { args: [], strings: {}, bools: {}, slices: {}, durations: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') { out.args.push(...argv.slice(i + 1)); break; }
    if (!(a.startsWith('-') && a.length > 1)) { out.args.push(a); continue; }
    const long = a.startsWith('--');
    const eq = a.indexOf('=');
    const name = long ? a.slice(2, eq < 0 ? undefined : eq) : a[1]!;
    const spec = specs.find((s) => (long ? s.name === name : s.short === name));
    if (!spec) throw new UsageError(long ? `unknown flag: --${name}` : `unknown shorthand flag: '${name}' in ${a}`);
    const display = long ? `--${name}` : `-${name}, --${spec.name}`;
    let value: string | undefined;
    if (long) value = eq < 0 ? undefined : a.slice(eq + 1);
    else if (a.length > 2) value = a[2] === '=' ? a.slice(3) : a.slice(2);
    if (spec.type === 'bool') {
      if (value === undefined || TRUE.has(value)) out.bools[spec.name] = true;
      else if (FALSE.has(value)) out.bools[spec.name] = false;
      else throw new UsageError(`invalid argument ${JSON.stringify(value)} for "${display}" flag: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: ${long ? `--${name}` : `'${name}' in -${name}`}`);
      value = argv[++i]!;
    }
    switch (spec.type) {
      case 'string':
        out.strings[spec.name] = value;
        break;
      case 'strings':
        // pflag reads the value as one CSV record; an empty value adds nothing.
        (out.slices[spec.name] ??= []).push(...(value === '' ? [] : value.split(',')));
        break;
      case 'duration': {
        const ms = parseDuration(value);
        if (ms === undefined) throw new UsageError(`invalid argument ${JSON.stringify(value)} for "${display}" flag: time: invalid duration ${JSON.stringify(value)}`);
        out.durations[spec.name] = ms;
        break;
      }
    }
  }
  return out;
}

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a Go duration (`time.ParseDuration`): an optionally signed sequence of decimal numbers
 * with units `ns`, `us`, `ms`, `s`, `m`, `h` (`30s`, `1m30s`, `1.5h`, `0`).
 *
 * @returns Milliseconds, or `undefined` when `s` is not a duration.
 */
export function parseDuration(s: string): number | undefined {
  let rest = s;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) { sign = rest[0] === '-' ? -1 : 1; rest = rest.slice(1); }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  const re = /^(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (rest !== '') {
    const m = re.exec(rest);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

/** The client-go connection overrides given by the connection flags. */
export function connectionOverrides(flags: Pick<ParsedFlags, 'strings' | 'bools'>): ConfigOverrides {
  const s = flags.strings;
  const o: ConfigOverrides = {};
  if (s['context'] !== undefined) o.context = s['context'];
  if (s['user'] !== undefined) o.user = s['user'];
  if (s['namespace'] !== undefined) o.namespace = s['namespace'];
  if (s['server'] !== undefined) o.server = s['server'];
  if (s['token'] !== undefined) o.token = s['token'];
  if (s['certificate-authority'] !== undefined) o.certificateAuthority = s['certificate-authority'];
  if (flags.bools['insecure-skip-tls-verify'] !== undefined) o.insecureSkipTlsVerify = flags.bools['insecure-skip-tls-verify'];
  if (s['tls-server-name'] !== undefined) o.tlsServerName = s['tls-server-name'];
  if (s['username'] !== undefined) o.username = s['username'];
  if (s['password'] !== undefined) o.password = s['password'];
  if (s['proxy-url'] !== undefined) o.proxyURL = s['proxy-url'];
  if (flags.bools['disable-compression'] !== undefined) o.disableCompression = flags.bools['disable-compression'];
  return o;
}

/** The help text of {@link CONNECTION_FLAGS} (the ones users set). */
export const CONNECTION_HELP = `Connection flags:
      --kubeconfig string               Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)
      --context string                  The kubeconfig context to use
      --user string                     The kubeconfig user to use
  -s, --server string                   The address of the API server
      --token string                    Bearer token for authentication
      --certificate-authority string    Path to a CA certificate file
      --insecure-skip-tls-verify        Do not verify the server's certificate
      --tls-server-name string          Server name for certificate verification
  -h, --help                            Help for this command
`;
