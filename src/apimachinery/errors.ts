/**
 * Kubernetes `Status` errors.
 *
 * Every failure a client sees is a `meta.k8s.io/v1 Status` with the HTTP code and `reason` of
 * k8s.io/apimachinery/pkg/api/errors (StatusReason constants, see
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#status).
 */

/** One cause of a Status failure: which field failed and why (apimachinery `StatusCause`). */
export interface StatusCause {
  /** Machine-readable cause: `FieldValueInvalid`, `FieldValueRequired`, `FieldValueDuplicate`, … */
  reason?: string;
  message?: string;
  /** Field path in JSONPath-like dotted form, e.g. `metadata.name`, `spec.rules[0].verbs`. */
  field?: string;
}

/** The `details` of a Status: the object the failure is about. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** Wire shape of a `Status` object. */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Success' | 'Failure';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/**
 * An error that is answered as a Kubernetes Status. Throw it anywhere in a request; the server's
 * error handler turns it into the response.
 */
export class StatusError extends Error {
  constructor(
    /** HTTP status code (0 when a client got no answer: connection refused or reset). */
    readonly code: number,
    /** apimachinery StatusReason, e.g. `NotFound`, `Conflict`, `Invalid`. */
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
    /** ListMeta of the Status (an expired list's inconsistent `continue` token). */
    readonly listMeta: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'StatusError';
  }

  /** The Status body answered to the client. */
  toStatus(): StatusBody {
    const body: StatusBody = {
      kind: 'Status', apiVersion: 'v1', metadata: { ...this.listMeta }, status: 'Failure',
      message: this.message, reason: this.reason, code: this.code,
    };
    if (this.details) body.details = this.details;
    return body;
  }
}

/** Group/resource pair used in error messages, as apimachinery's `schema.GroupResource`. */
export interface GroupResource { group: string; resource: string }

function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

/** Whether `err` is a Status error with one of `codes` (e.g. `isStatus(err, 404)` to ignore a missing object). */
export function isStatus(err: unknown, ...codes: number[]): err is StatusError {
  return err instanceof StatusError && codes.includes(err.code);
}

/** 404 NotFound for one object: `<resource> "<name>" not found`. */
export function notFound(gr: GroupResource, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualified(gr)} "${name}" not found`,
    { name, group: gr.group, kind: gr.resource });
}

/** 409 AlreadyExists. */
export function alreadyExists(gr: GroupResource, name: string): StatusError {
  return new StatusError(409, 'AlreadyExists', `${qualified(gr)} "${name}" already exists`,
    { name, group: gr.group, kind: gr.resource });
}

/** 409 Conflict, used for stale resourceVersion / uid preconditions. */
export function conflict(gr: GroupResource, name: string, why: string): StatusError {
  return new StatusError(409, 'Conflict',
    `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`,
    { name, group: gr.group, kind: gr.resource });
}

/** 422 Invalid with field causes, as apimachinery `NewInvalid`. */
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): StatusError {
  const list = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ');
  const label = group ? `${kind}.${group}` : kind;
  return new StatusError(422, 'Invalid', `${label} "${name}" is invalid: ${causes.length > 1 ? `[${list}]` : list}`,
    { name, group, kind, causes });
}

/** 400 BadRequest. */
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

/** 403 Forbidden in kube-apiserver's wording. */
export function forbidden(user: string, verb: string, gr: GroupResource, name: string | undefined, why: string, scope: string): StatusError {
  const what = gr.group ? `resource "${gr.resource}" in API group "${gr.group}"` : `resource "${gr.resource}" in API group ""`;
  const named = name ? ` ${qualified(gr)} "${name}" is forbidden` : ` ${qualified(gr)} is forbidden`;
  return new StatusError(403, 'Forbidden',
    `${named.trim()}: User "${user}" cannot ${verb} ${what} ${scope}${why ? `: ${why}` : ''}`,
    { name, group: gr.group, kind: gr.resource });
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(message: string): StatusError {
  return new StatusError(405, 'MethodNotAllowed', message);
}

/** 410 Expired: a resourceVersion older than the retained history. */
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

/** 503 ServiceUnavailable, e.g. when Redis cannot be reached. */
export function unavailable(message: string, retryAfterSeconds = 1): StatusError {
  return new StatusError(503, 'ServiceUnavailable', message, { retryAfterSeconds });
}

/** 500 InternalError (server bugs only, never client mistakes). */
export function internalError(message: string): StatusError {
  return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`);
}

/** Why a workspace may not be entered when nothing more specific may be told (kcp's wording). */
export const NO_WORKSPACE_ACCESS = 'no verb=access permission on /';

/**
 * 403 for a request into a workspace the caller may not enter, worded the same whether the
 * workspace exists or not (kcp's "workspace access not permitted"), so that the answer does not
 * reveal which workspaces exist. `segment` is the `/clusters/<segment>` the client sent (never
 * the logical cluster it resolves to); `why` defaults to {@link NO_WORKSPACE_ACCESS}.
 */
export function workspaceAccessDenied(segment: string, why: string = NO_WORKSPACE_ACCESS): StatusError {
  return new StatusError(403, 'Forbidden', `${JSON.stringify(segment)} workspace access not permitted: ${why}`);
}
