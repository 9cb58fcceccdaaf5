/**
 * `kcp-ts crd compat [--lcd] [--old-version V] [--new-version V] OLD.yaml NEW.yaml`: kcp's
 * `compat` command (kcp-dev/kcp cmd/compat): whether the schema of a CRD version in NEW.yaml
 * accepts everything the one in OLD.yaml accepts (src/apiextensions/schemacompat.ts), and with
 * `--lcd` the old CRD narrowed to the least common denominator of both, as YAML on stdout.
 *
 * Exit codes: 0 compatible, 1 incompatible (the incompatibilities on stderr, one per line),
 * 2 usage and input errors (a file that cannot be read, is not YAML, not a CRD, has no such
 * version or no schema) with a one-line message; kcp exits 1 for all of them.
 */
import { readFileSync } from 'node:fs';
import { isScalar, parseAllDocuments, stringify } from 'yaml';
import { MAX_NESTING_DEPTH, valueDeeperThan, yamlTooComplex } from '../apimachinery/depth.js';
import { isObj } from '../apimachinery/objects.js';
import { ensureStructuralSchemaCompatibility, formatFieldErrors } from '../apiextensions/schemacompat.js';
import { parseFlags, UsageError, type FlagSpec } from './pflag.js';

export const CRD_USAGE = `Usage: kcp-ts crd compat [flags] OLD.yaml NEW.yaml

Determines whether the schema of a CustomResourceDefinition version in NEW.yaml is compatible
with the one in OLD.yaml: whether every object the old schema accepts is accepted by the new one
(kcp's API negotiation rules). With --lcd, the old schema is narrowed where it can be to their
least common denominator (properties the new one lacks dropped, enums reduced to the common
values, number narrowed to integer, ...) and the old CRD with that schema is printed as YAML.

Files are apiextensions.k8s.io/v1 CustomResourceDefinitions, one YAML or JSON document each
(e.g. <(kubectl get crd foos.example.com -o yaml)).

Flags:
  --lcd                 print the old CRD with its schema narrowed to the least common
                        denominator on stdout (when compatible after narrowing)
  --old-version NAME    version of the old CRD to compare (default: its first version)
  --new-version NAME    version of the new CRD to compare (default: its first version)
  -h, --help            this help

Exit status: 0 compatible, 1 incompatible (the incompatibilities on stderr, one per line),
2 usage or input errors.
`;

const FLAGS: FlagSpec[] = [
  { name: 'lcd', type: 'bool' },
  { name: 'old-version', type: 'string' },
  { name: 'new-version', type: 'string' },
  { name: 'help', short: 'h', type: 'bool' },
];

/** Where the command writes (the process's streams by default; tests capture them). */
export interface CommandIO {
  stdout(text: string): void;
  stderr(text: string): void;
}

const PROCESS_IO: CommandIO = {
  stdout: (text) => { process.stdout.write(text); },
  stderr: (text) => { process.stderr.write(text); },
};

/** An input error: printed as one line, exit status 2. */
class InputError extends Error {}

/** Runs `kcp-ts crd <subcommand> ...`; resolves to the exit status. */
export function crdMain(argv: string[], io: CommandIO = PROCESS_IO): number | Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help' || sub === 'help') { (sub ? io.stdout : io.stderr)(CRD_USAGE); return sub ? 0 : 2; }
  // kcp's crd-puller (src/cli/crdpull.ts), loaded only for it.
  if (sub === 'pull') return import('./crdpull.js').then(({ pullMain }) => pullMain(rest, io));
  if (sub !== 'compat') { io.stderr(`kcp-ts crd: unknown command "${sub}"\n\n${CRD_USAGE}`); return 2; }
  return compatMain(rest, io);
}

/** `kcp-ts crd compat`; see {@link CRD_USAGE}. */
export function compatMain(argv: string[], io: CommandIO = PROCESS_IO): number {
  let flags;
  try {
    // kcp's command takes Go's flag syntax (-lcd, -old-version v): accepted too.
    const names = new Set(FLAGS.map((f) => f.name));
    flags = parseFlags(argv.map((a) => (/^-[a-z]{2}/.test(a) && names.has(a.slice(1).split('=')[0]!) ? `-${a}` : a)), FLAGS);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`kcp-ts crd compat: ${err.message}\n\n${CRD_USAGE}`);
    return 2;
  }
  if (flags.bools.help) { io.stdout(CRD_USAGE); return 0; }
  if (flags.args.length !== 2) {
    io.stderr(`kcp-ts crd compat: expected exactly two arguments, OLD.yaml and NEW.yaml (got ${flags.args.length})\n\n${CRD_USAGE}`);
    return 2;
  }
  const [oldFile, newFile] = flags.args as [string, string];
  const lcd = flags.bools.lcd === true;
  let oldCRD, newCRD, oldVersion, newVersion;
  try {
    oldCRD = readCRD(oldFile);
    newCRD = readCRD(newFile);
    oldVersion = resolveVersion(oldCRD, flags.strings['old-version'], `old CRD ${oldFile}`);
    newVersion = resolveVersion(newCRD, flags.strings['new-version'], `new CRD ${newFile}`);
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    io.stderr(`kcp-ts crd compat: ${err.message}\n`);
    return 2;
  }
  const result = ensureStructuralSchemaCompatibility('openAPIV3Schema', oldVersion.schema, newVersion.schema, lcd);
  if (result.errors.length || !result.schema) {
    io.stderr(`kcp-ts crd compat: version ${oldVersion.name} of ${oldFile} and version ${newVersion.name} of ${newFile} are not compatible${lcd ? ', even narrowed' : ''}:\n`);
    io.stderr(formatFieldErrors(result.errors).map((l) => `${l}\n`).join(''));
    return 1;
  }
  if (lcd) {
    oldVersion.holder.openAPIV3Schema = result.schema;
    // Block sequences not indented under their key, as kubectl and kcp (sigs.k8s.io/yaml) print them.
    io.stdout(stringify(oldCRD, { lineWidth: 0, indentSeq: false }));
  }
  return 0;
}

type Raw = Record<string, unknown>;

/**
 * Reads one CRD document from a file (YAML or JSON), refusing what kube's decoders refuse
 * (nesting beyond {@link MAX_NESTING_DEPTH}) before the recursive YAML composer runs.
 * @throws InputError naming the file
 */
function readCRD(file: string): Raw {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) {
    throw new InputError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // The token bound of request bodies is for the server's event loop; a local file may be large.
  if (yamlTooComplex(text, MAX_NESTING_DEPTH, Number.MAX_SAFE_INTEGER) === 'depth') {
    throw new InputError(`${file}: not YAML: exceeded max depth of ${MAX_NESTING_DEPTH}`);
  }
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  // Empty documents (`---` with nothing after it) do not count, as kubectl skips them.
  const list = Array.isArray(docs) ? docs.filter((d) => d.errors.length || !(d.contents === null || (isScalar(d.contents) && d.contents.value === null))) : [];
  const error = list.flatMap((d) => d.errors)[0];
  if (error) {
    const line = error.linePos?.[0]?.line;
    throw new InputError(`${file}: not YAML: ${line ? `line ${line}: ` : ''}${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`);
  }
  if (list.length !== 1) throw new InputError(`${file}: expected one CustomResourceDefinition document, found ${list.length}`);
  let value: unknown;
  try { value = list[0]!.toJSON(); } catch (err) { throw new InputError(`${file}: not YAML: ${(err as Error).message.split('\n')[0]}`); }
  if (valueDeeperThan(value)) throw new InputError(`${file}: not YAML: exceeded max depth of ${MAX_NESTING_DEPTH} (or an alias that contains itself)`);
  if (!isObj(value) || value.apiVersion !== 'apiextensions.k8s.io/v1' || value.kind !== 'CustomResourceDefinition') {
    const what = isObj(value) ? `apiVersion ${JSON.stringify(value.apiVersion ?? '')}, kind ${JSON.stringify(value.kind ?? '')}` : 'not an object';
    throw new InputError(`${file}: not an apiextensions.k8s.io/v1 CustomResourceDefinition (${what})`);
  }
  return value;
}

/** A CRD version's name, its schema, and the object holding the schema (to replace it). */
interface ResolvedVersion { name: string; schema: Raw; holder: Raw }

/**
 * The version named `name`, or the first one when no name is given (kcp `resolveVersion`, same
 * messages).
 * @throws InputError `<what>: CRD "x" has no versions`, `version "v" not found in CRD "x"`, or
 *   `version "v" of CRD "x" has no schema` (kcp crashes on that one)
 */
function resolveVersion(crd: Raw, name: string | undefined, what: string): ResolvedVersion {
  const crdName = String(isObj(crd.metadata) ? crd.metadata.name ?? '' : '');
  const spec = isObj(crd.spec) ? crd.spec : {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObj) : [];
  if (!versions.length) throw new InputError(`${what}: CRD "${crdName}" has no versions`);
  const version = name === undefined || name === '' ? versions[0]! : versions.find((v) => v.name === name);
  if (!version) throw new InputError(`${what}: version "${name}" not found in CRD "${crdName}"`);
  const versionName = String(version.name ?? '');
  const holder = isObj(version.schema) ? version.schema : undefined;
  if (!holder || !isObj(holder.openAPIV3Schema)) throw new InputError(`${what}: version "${versionName}" of CRD "${crdName}" has no schema`);
  return { name: versionName, schema: holder.openAPIV3Schema, holder };
}
