/**
 * Request timeout (kube: k8s.io/apiserver/pkg/endpoints/filters/request_deadline.go and
 * pkg/server/filters/timeout.go): a request that is not long-running (everything but watches) is
 * answered 504 Timeout once `--request-timeout` (default 60 s) — or the shorter `?timeout=` the
 * client asked for — has passed. The handler's later answer is dropped; its write, if any, still
 * completes or fails as a whole (a timeout never half-applies a write).
 */
import { StatusError, badRequest } from '../../apimachinery/errors.js';
import { parseGoDuration } from '../../apiextensions/schema-formats.js';
import { queryOf, type Filter } from '../context.js';
import { sendStatus } from '../response.js';

/** kube-apiserver's default `--request-timeout`: one minute, in milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** kube's 504 for a request past its deadline (apierrors.NewTimeoutError). */
export function requestTimeoutError(): StatusError {
  return new StatusError(504, 'Timeout', 'Timeout: request did not complete within requested timeout - context deadline exceeded', { retryAfterSeconds: 0 });
}

/** Answers 504 when the rest of the chain has not answered in time; 400 for a malformed `?timeout=`. */
export const withTimeout: Filter = async (ctx, req, reply, next) => {
  if (req.kcpInfo?.verb === 'watch') return next(ctx, req, reply);
  let ms = ctx.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const asked = queryOf(req).get('timeout');
  if (asked !== null && asked !== '') {
    const seconds = parseGoDuration(asked);
    if (seconds === undefined) throw badRequest(`invalid timeout specified in the request URL: time: invalid duration ${JSON.stringify(asked)}`);
    // kube: a non-positive or larger value leaves the server's deadline in force.
    if (seconds > 0) ms = Math.min(ms, seconds * 1000);
  }
  if (!(ms > 0)) return next(ctx, req, reply);
  // The handler goes on to its end (a write is atomic in the store); what it answers after the
  // 504 is dropped (sendStatus and Fastify send nothing once a response started).
  const timer = setTimeout(() => sendStatus(reply, requestTimeoutError()), ms);
  try {
    await next(ctx, req, reply);
  } catch (err) {
    if (!reply.sent) throw err;
  } finally {
    clearTimeout(timer);
  }
};
