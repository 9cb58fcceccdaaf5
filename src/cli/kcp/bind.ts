/**
 * `kubectl kcp bind apiexport <path>:<export>`: creates an APIBinding to an APIExport in the
 * current workspace and waits until it is bound, as kcp's plugin does (kcp-dev/kcp
 * `staging/src/github.com/kcp-dev/cli/pkg/bind/plugin/bind.go`, `BindOptions`):
 *
 * - the argument's last `:`-segment is the export's name, the rest the path of its workspace;
 * - `--name` names the binding (default: the export's name);
 * - `--accept-permission-claim` / `--reject-permission-claim resource.group` (repeatable,
 *   comma-separated; group `core` is the core group) become `spec.permissionClaims` with verbs
 *   `*` and selector `matchAll`; `--accept-all-permission-claims` / `--reject-all-permission-claims`
 *   accept or reject every claim of the export (read first);
 * - the binding is created (`apis.kcp.io/v1alpha2`), then read every 500 ms until its phase is
 *   `Bound`, for at most `--timeout` (default 30 s).
 */
import type { KcpClient } from '../ws/client.js';
import { isValidPath } from '../ws/paths.js';
import { UsageError, type ParsedFlags } from './args.js';

/** A group/resource named on the command line (`configmaps.core` → `{ group: '', resource: 'configmaps' }`). */
export interface ClaimRef {
  group: string;
  resource: string;
}

/** An entry of an APIBinding's `spec.permissionClaims` (apis.kcp.io/v1alpha2 `AcceptablePermissionClaim`). */
export interface AcceptablePermissionClaim {
  /** Omitted for the core group. */
  group?: string;
  resource: string;
  identityHash?: string;
  verbs: string[];
  selector: Record<string, unknown>;
  state: 'Accepted' | 'Rejected';
}

/** The validated options of one `kubectl kcp bind apiexport`. */
export interface BindOptions {
  /** Workspace path of the APIExport (`root:provider`). */
  exportPath: string;
  /** Name of the APIExport. */
  exportName: string;
  /** Name of the APIBinding to create. */
  bindingName: string;
  /** How long to wait for the binding to be bound. */
  timeoutMs: number;
  accepted: ClaimRef[];
  rejected: ClaimRef[];
  acceptAll: boolean;
  rejectAll: boolean;
}

/** Error of a bind run (not a usage error); printed as `Error: <message>` with exit code 1. */
export class BindError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BindError';
  }
}

/** kcp's message for a missing argument. */
export const MISSING_REFERENCE = '`root:ws:apiexport_object` reference to bind is required as an argument';
/** kcp's message for an argument that does not name a workspace path and an export. */
export const INVALID_REFERENCE = 'fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`';

/** Default of `--timeout` (kcp: 30 s). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Splits `<path>:<export>` at its last colon (logicalcluster `Path.Split`).
 *
 * @returns The workspace path (`''` without a colon) and the export's name.
 */
export function splitExportReference(ref: string): { path: string; name: string } {
  const i = ref.lastIndexOf(':');
  return i < 0 ? { path: '', name: ref } : { path: ref.slice(0, i), name: ref.slice(i + 1) };
}

/**
 * Parses one `resource.group` claim (kcp `parsePermissionClaim`): split at the first `.`; the
 * group `core` (or an empty group, `configmaps.`) is the core group.
 *
 * @returns The claim, or `undefined` when `claim` has no `.` or no resource.
 */
export function parsePermissionClaim(claim: string): ClaimRef | undefined {
  const dot = claim.indexOf('.');
  if (dot <= 0) return undefined;
  const resource = claim.slice(0, dot);
  const group = claim.slice(dot + 1);
  return { resource, group: group === 'core' ? '' : group };
}

/** `resource.group` of a claim, `core` for the core group. */
export function formatClaim(c: ClaimRef): string {
  return `${c.resource}.${c.group === '' ? 'core' : c.group}`;
}

/**
 * Validates the flags of `kubectl kcp bind apiexport` (kcp `BindOptions.Validate`), in kcp's
 * order: the argument is required, the all-claims flags exclude each other and the single-claim
 * flags, the argument names a valid workspace path and an export, the claims parse, and no claim
 * is both accepted and rejected.
 *
 * @param flags The parsed command line; `args` are the positional arguments after `apiexport`.
 * @throws {UsageError} with kcp's messages.
 */
export function bindOptions(flags: ParsedFlags): BindOptions {
  const ref = flags.args[0] ?? '';
  if (ref === '') throw new UsageError(MISSING_REFERENCE);
  if (flags.args.length > 1) throw new UsageError(`accepts at most 1 arg(s), received ${flags.args.length}`);
  const acceptAll = flags.bools['accept-all-permission-claims'] === true;
  const rejectAll = flags.bools['reject-all-permission-claims'] === true;
  const acceptList = flags.slices['accept-permission-claim'] ?? [];
  const rejectList = flags.slices['reject-permission-claim'] ?? [];
  if (acceptAll && rejectAll) throw new UsageError('cannot use both --accept-all-permission-claims and --reject-all-permission-claims');
  if (acceptAll && acceptList.length > 0) throw new UsageError('cannot use --accept-all-permission-claims with --accept-permission-claim');
  if (acceptAll && rejectList.length > 0) throw new UsageError('cannot use --accept-all-permission-claims together with --reject-permission-claim');
  if (rejectAll && rejectList.length > 0) throw new UsageError('cannot use --reject-all-permission-claims with --reject-permission-claim');
  if (rejectAll && acceptList.length > 0) throw new UsageError('cannot use --reject-all-permission-claims together with --accept-permission-claim');

  const { path, name } = splitExportReference(ref);
  if (path === '*' || !isValidPath(path) || name === '') throw new UsageError(INVALID_REFERENCE);

  const parseAll = (list: string[], what: string): ClaimRef[] => {
    const out: ClaimRef[] = [];
    const errs: string[] = [];
    for (const c of list) {
      const parsed = parsePermissionClaim(c);
      if (parsed) out.push(parsed);
      else errs.push(`invalid permission claim ${JSON.stringify(c)}`);
    }
    if (errs.length) throw new UsageError(`invalid ${what} permission claims: [${errs.join(' ')}]`);
    return out;
  };
  const accepted = parseAll(acceptList, 'accepted');
  const rejected = parseAll(rejectList, 'rejected');
  for (const a of accepted) {
    for (const r of rejected) {
      if (a.group === r.group && a.resource === r.resource) {
        throw new UsageError(`accepted permission claim ${formatClaim(a)} conflicts with rejected permission claim ${formatClaim(r)}`);
      }
    }
  }
  return {
    exportPath: path,
    exportName: name,
    bindingName: flags.strings['name'] || name,
    timeoutMs: flags.durations['timeout'] ?? DEFAULT_TIMEOUT_MS,
    accepted,
    rejected,
    acceptAll,
    rejectAll,
  };
}

/** A claim named on the command line as a binding claim: verbs `*`, selector `matchAll`. */
export function claimFromRef(c: ClaimRef, state: AcceptablePermissionClaim['state']): AcceptablePermissionClaim {
  return { ...(c.group ? { group: c.group } : {}), resource: c.resource, verbs: ['*'], selector: { matchAll: true }, state };
}

/**
 * Accepts or rejects every `spec.permissionClaims` entry of an APIExport (v1alpha2):
 * group, resource, identity hash and verbs are copied (verbs default to `*`); the selector is the
 * claim's `defaultSelector`, else `matchAll`.
 */
export function claimsFromExport(apiExport: unknown, state: AcceptablePermissionClaim['state']): AcceptablePermissionClaim[] {
  const spec = (apiExport as { spec?: { permissionClaims?: unknown } } | undefined)?.spec;
  const claims = Array.isArray(spec?.permissionClaims) ? spec.permissionClaims as Record<string, unknown>[] : [];
  return claims.map((c) => {
    const group = typeof c.group === 'string' ? c.group : '';
    const verbs = Array.isArray(c.verbs) && c.verbs.length > 0 ? (c.verbs as unknown[]).map(String) : ['*'];
    const selector = c.defaultSelector && typeof c.defaultSelector === 'object' ? c.defaultSelector as Record<string, unknown> : { matchAll: true };
    return {
      ...(group ? { group } : {}),
      resource: String(c.resource ?? ''),
      ...(typeof c.identityHash === 'string' && c.identityHash ? { identityHash: c.identityHash } : {}),
      verbs,
      selector,
      state,
    };
  });
}

/** The APIBinding `kubectl kcp bind apiexport` creates (apis.kcp.io/v1alpha2). */
export function newAPIBinding(o: Pick<BindOptions, 'bindingName' | 'exportPath' | 'exportName'>, claims: AcceptablePermissionClaim[]): Record<string, unknown> {
  return {
    apiVersion: 'apis.kcp.io/v1alpha2',
    kind: 'APIBinding',
    metadata: { name: o.bindingName },
    spec: {
      reference: { export: { path: o.exportPath, name: o.exportName } },
      ...(claims.length ? { permissionClaims: claims } : {}),
    },
  };
}

/** Path of a workspace's `/clusters/<path>` prefix, each segment URL-encoded. */
function clusterPrefix(path: string): string {
  return `/clusters/${path.split(':').map(encodeURIComponent).join(':')}`;
}

const APIBINDINGS = (path: string): string => `${clusterPrefix(path)}/apis/apis.kcp.io/v1alpha2/apibindings`;
const APIEXPORT = (path: string, name: string): string => `${clusterPrefix(path)}/apis/apis.kcp.io/v1alpha2/apiexports/${encodeURIComponent(name)}`;

interface APIBinding { metadata?: { name?: string }; status?: { phase?: string } }

const isBound = (b: APIBinding | undefined): boolean => b?.status?.phase === 'Bound';
const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Creates the APIBinding in the workspace `currentPath` and waits until it is bound (kcp
 * `BindOptions.Run`).
 *
 * @param out Writes a line of standard output.
 * @param pollMs Interval between reads of the binding (kcp: 500 ms).
 * @throws {BindError} `failed to get APIExport "…": …`, `failed to create APIBinding: …` (the
 *   server's message), `could not bind <name>: timed out waiting for the condition`.
 */
export async function runBind(o: BindOptions, client: KcpClient, currentPath: string, out: (text: string) => void, pollMs = 500): Promise<void> {
  const claims: AcceptablePermissionClaim[] = [];
  if (o.acceptAll || o.rejectAll) {
    let apiExport: unknown;
    try { apiExport = await client.get(APIEXPORT(o.exportPath, o.exportName)); } catch (err) {
      throw new BindError(`failed to get APIExport ${JSON.stringify(o.exportName)}: ${messageOf(err)}`);
    }
    claims.push(...claimsFromExport(apiExport, o.acceptAll ? 'Accepted' : 'Rejected'));
  }
  claims.push(...o.accepted.map((c) => claimFromRef(c, 'Accepted')), ...o.rejected.map((c) => claimFromRef(c, 'Rejected')));

  let binding: APIBinding;
  try { binding = await client.post<APIBinding>(APIBINDINGS(currentPath), newAPIBinding(o, claims)); } catch (err) {
    throw new BindError(`failed to create APIBinding: ${messageOf(err)}`);
  }
  const name = binding?.metadata?.name ?? o.bindingName;
  out(`apibinding ${name} created. Waiting to successfully bind ...\n`);

  if (!isBound(binding)) {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      try { binding = await client.get<APIBinding>(`${APIBINDINGS(currentPath)}/${encodeURIComponent(name)}`); } catch (err) {
        throw new BindError(`could not bind ${name}: ${messageOf(err)}`);
      }
      if (isBound(binding)) break;
      const left = deadline - Date.now();
      if (left <= 0) throw new BindError(`could not bind ${name}: timed out waiting for the condition`);
      await new Promise((r) => setTimeout(r, Math.min(pollMs, left)));
    }
  }
  out(`${name} created and bound.\n`);
}
