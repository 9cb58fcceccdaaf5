/**
 * `kcp-ts crd pull [--kubeconfig FILE] [--context NAME] [--output-dir DIR] RESOURCE...`: kcp's
 * crd-puller command (kcp-dev/kcp cmd/crd-puller `pull-crds`): a cluster's resources as
 * CustomResourceDefinitions, built from its discovery and OpenAPI v3 (src/apinegotiation/puller.ts).
 * The CRDs go to stdout as YAML documents, or with `--output-dir` one file `<resource>.<group>.yaml`
 * each, as kcp writes them.
 *
 * Exit codes: 0 all pulled, 1 some could not be (each on stderr with the reason; the others are
 * still written), 2 usage, kubeconfig or connection errors.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { endpointFromKubeconfig, pullCRDs } from '../apinegotiation/puller.js';
import { parseFlags, UsageError, type FlagSpec } from './pflag.js';

export const CRD_PULL_USAGE = `Usage: kcp-ts crd pull [flags] RESOURCE...

Pulls resources of a Kubernetes cluster as CustomResourceDefinitions, as kcp's crd-puller: names,
scope and subresources from discovery, the schema from the cluster's own CRD or its OpenAPI v3,
made structural (every $ref resolved). RESOURCE is plural.group (deployments.apps,
ingresses.networking.k8s.io; services or services.core for the core group).

Flags:
  --kubeconfig FILE     the cluster's kubeconfig (default $KUBECONFIG; credentials embedded:
                        certificate data or a token)
  --context NAME        the context to use (default: current-context)
  --output-dir DIR      write <resource>.<group>.yaml files there instead of YAML on stdout
  -h, --help            this help

Exit status: 0 all pulled, 1 some could not be (reasons on stderr), 2 usage or connection errors.
`;

const FLAGS: FlagSpec[] = [
  { name: 'kubeconfig', type: 'string' },
  { name: 'context', type: 'string' },
  { name: 'output-dir', type: 'string' },
  { name: 'help', short: 'h', type: 'bool' },
];

/** Where the command writes. */
export interface PullIO { stdout(text: string): void; stderr(text: string): void }

/** `kcp-ts crd pull`; see {@link CRD_PULL_USAGE}. Resolves to the exit code. */
export async function pullMain(argv: string[], io: PullIO, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let flags;
  try {
    flags = parseFlags(argv, FLAGS);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`kcp-ts crd pull: ${err.message}\n\n${CRD_PULL_USAGE}`);
    return 2;
  }
  if (flags.bools.help) { io.stdout(CRD_PULL_USAGE); return 0; }
  if (!flags.args.length) { io.stderr(`kcp-ts crd pull: expected at least one RESOURCE\n\n${CRD_PULL_USAGE}`); return 2; }
  const file = flags.strings['kubeconfig'] ?? env['KUBECONFIG']?.split(':').find(Boolean);
  if (!file) { io.stderr('kcp-ts crd pull: no kubeconfig: use --kubeconfig or $KUBECONFIG\n'); return 2; }
  let endpoint;
  try {
    endpoint = endpointFromKubeconfig(readFileSync(file, 'utf8'), flags.strings['context']);
  } catch (err) {
    io.stderr(`kcp-ts crd pull: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const res = await pullCRDs(endpoint, flags.args);
    const dir = flags.strings['output-dir'];
    for (const crd of res.crds) {
      const text = stringify(crd, { lineWidth: 0 });
      if (dir) writeFileSync(join(dir, `${crd.metadata.name}.yaml`), text);
      else io.stdout(`---\n${text}`);
    }
    for (const e of res.errors) io.stderr(`kcp-ts crd pull: ${e.resource}: ${e.message}\n`);
    return res.errors.length ? 1 : 0;
  } catch (err) {
    io.stderr(`kcp-ts crd pull: ${(err as Error).message}\n`);
    return 2;
  } finally {
    endpoint.client.close();
  }
}
