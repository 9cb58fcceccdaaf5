/**
 * What the verb handlers share: the `RequestScope` of a write or read (dry run, field validation,
 * field manager, warnings, audit annotations) and kube's list and delete options from the query.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, invalid } from '../../apimachinery/errors.js';
import { fieldValidationMode } from '../../apimachinery/pruning.js';
import type { DeleteOptions, ListOptions, RequestScope } from '../../registry/store.js';
import { decodeBody } from '../negotiation.js';
import { STAGED_WRITE_BYTES, nextHeavyStage } from '../slicing.js';
import { queryBool } from '../requestinfo.js';
import { queryOf } from '../context.js';
import { addAuditAnnotation } from '../filters/audit.js';
import { scopeNamespace } from '../filters/resource.js';
import { warningHeaders } from '../response.js';

/**
 * The scope of a resource request that passed the filters: its logical cluster, namespace and
 * user, `?dryRun=All`, `?fieldValidation` (writes), the field manager and a warnings sink.
 * Throws 400 for a dryRun value other than `All`, 422 for a bad field manager.
 */
export function requestScope(req: FastifyRequest): RequestScope {
  const info = req.kcpInfo!;
  const query = queryOf(req);
  const dryRun = query.getAll('dryRun');
  for (const d of dryRun) if (d !== 'All') throw badRequest(`dryRun: Unsupported value: "${d}": supported values: "All"`);
  const optionsKind = info.verb === 'create' ? 'CreateOptions' : info.verb === 'update' ? 'UpdateOptions' : 'PatchOptions';
  const write = info.verb === 'create' || info.verb === 'update' || info.verb === 'patch';
  return {
    cluster: info.cluster, namespace: scopeNamespace(req) || undefined, user: req.kcpUser!, dryRun: dryRun.length > 0,
    fieldValidation: write ? fieldValidationMode(query.get('fieldValidation'), optionsKind) : undefined, warnings: [],
    fieldManager: fieldManagerOf(query, req.headers['user-agent'], optionsKind), audit: (key, value) => addAuditAnnotation(req, key, value),
    bodyBytes: write ? (req.body as Buffer | undefined)?.length ?? 0 : undefined,
  };
}

/**
 * Resolves when the request's body may be decoded: at once for a small body, after a turn of the
 * event loop for one of STAGED_WRITE_BYTES or more, whose decoding is the first stage of a large
 * write (the handler may have started in a turn that already ran another request's stage).
 */
export async function beforeDecoding(req: FastifyRequest): Promise<void> {
  if (((req.body as Buffer | undefined)?.length ?? 0) >= STAGED_WRITE_BYTES) await nextHeavyStage();
}

/** Sets the `Warning` headers of the warnings a write collected (RFC 7234 code 299, as kube-apiserver). */
export function addWarnings(reply: FastifyReply, scope: RequestScope): void {
  if (scope.warnings?.length) reply.header('Warning', warningHeaders(scope.warnings));
}

/**
 * The field manager of a write: `?fieldManager=`, else the User-Agent up to its first `/`
 * (kube-apiserver's `prefixFromUserAgent`). Throws 422 for a name over 128 characters or with
 * non-printable characters (kube's ValidateFieldManager).
 */
function fieldManagerOf(query: URLSearchParams, userAgent: string | undefined, optionsKind: string): string {
  const given = query.get('fieldManager');
  if (given !== null) {
    if (given.length > 128 || !/^[\x20-\x7e]*$/.test(given)) {
      throw invalid(optionsKind, 'meta.k8s.io', '', [{ reason: 'FieldValueInvalid', field: 'fieldManager', message: `Invalid value: ${JSON.stringify(given)}: must be at most 128 printable characters` }]);
    }
    if (given) return given;
  }
  return (userAgent ?? 'unknown').split('/')[0]!.slice(0, 128) || 'unknown';
}

/** kube's ListOptions from the query; throws 400 for a malformed limit. */
export function listOptions(query: URLSearchParams): ListOptions {
  const limit = query.get('limit');
  if (limit !== null && !/^\d+$/.test(limit)) throw badRequest(`invalid limit: "${limit}"`);
  return {
    labelSelector: query.get('labelSelector') ?? undefined,
    fieldSelector: query.get('fieldSelector') ?? undefined,
    limit: limit === null ? undefined : Number(limit),
    continue: query.get('continue') ?? undefined,
    resourceVersion: query.get('resourceVersion') ?? undefined,
    resourceVersionMatch: query.get('resourceVersionMatch') ?? undefined,
  };
}

/**
 * kube's DeleteOptions: the body (a DeleteOptions object, optional) overlaid with the
 * `propagationPolicy` and deprecated `orphanDependents` query parameters; throws 400 for a body of
 * another kind or an unknown propagation policy.
 */
export function deleteOptions(req: FastifyRequest, query: URLSearchParams): DeleteOptions {
  const body = req.body as Buffer | undefined;
  let opts: DeleteOptions = {};
  if (body && body.length) {
    // DeleteOptions has a protobuf form on every path (kube decodes it with the meta codecs).
    const parsed = decodeBody(req.headers['content-type'], body, 'DeleteOptions', { protobuf: true });
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('DeleteOptions must be an object');
    const kind = (parsed as { kind?: string }).kind;
    if (kind !== undefined && kind !== 'DeleteOptions') throw badRequest(`the body must be a DeleteOptions object, got kind "${kind}"`);
    opts = parsed as DeleteOptions;
  }
  const pp = query.get('propagationPolicy');
  if (pp) opts.propagationPolicy = pp;
  // Deprecated, still honoured by kube-apiserver as a query parameter.
  const orphan = queryBool(query, 'orphanDependents');
  if (orphan !== undefined) opts.orphanDependents = orphan;
  if (opts.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(opts.propagationPolicy)) {
    throw badRequest(`propagationPolicy: Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"`);
  }
  return opts;
}
