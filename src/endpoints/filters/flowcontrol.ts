/**
 * Priority and fairness (kube: k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go), or
 * kube's max-in-flight limits when it is off (maxinflight.go): the request waits for seats of its
 * priority level in its flow's queue (src/flowcontrol/) and holds them until its response is done;
 * a watch holds them only while it initialises (its initial events are written). A response that
 * waits for a client that stopped reading gives them back earlier (./stalledreaders.ts). Answers kube's
 * 429 TooManyRequests with `Retry-After` when the queue is full; sets the
 * `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID` headers. Runs after
 * impersonation (the flow is the logical cluster and the impersonated user) and resource
 * resolution (a LIST's seats come from the object count of its resource), before authorization.
 */
import type { FlowControlGrant } from '../../flowcontrol/filter.js';
import type { Cancellation } from '../../flowcontrol/queueset.js';
import { queryOf, type Filter } from '../context.js';
import { scopeNamespace } from './resource.js';

/** Throws 429 when the request's queue is full; otherwise waits for seats, then runs the rest of the chain. */
export const withPriorityAndFairness: Filter = async (ctx, req, reply, next) => {
  const flowControl = ctx.flowControl;
  if (!flowControl) return next(ctx, req, reply);
  const info = req.kcpInfo!;
  // Filled by the queue set when the request waits: withdraws it when the client goes.
  const waiting: Cancellation = {};
  let grant: FlowControlGrant | undefined;
  let closed = false;
  // Released when the response is done or the client goes, whichever comes first; a client that
  // goes while its request waits in a queue stops waiting.
  const done = () => {
    if (closed) return;
    closed = true;
    if (grant) grant.release(); else waiting.cancel?.();
  };
  // 'finish': the whole answer is handed to the socket (streamed lists included), the request's
  // work is over; 'close' alone comes later on a kept-alive connection, and covers a client that
  // goes first.
  reply.raw.once('finish', done);
  reply.raw.once('close', done);
  grant = await flowControl.admit({
    user: req.kcpUser!, cluster: info.cluster, verb: info.verb, apiGroup: info.apiGroup, resource: info.resource, subresource: info.subresource,
    namespace: req.kcpStore ? scopeNamespace(req) : info.namespace, isResourceRequest: info.isResourceRequest, path: info.path,
    isLongRunning: info.verb === 'watch', groupResource: req.kcpStore?.groupResource, query: queryOf(req), cancellation: waiting,
    name: info.name || undefined, bodyBytes: Buffer.isBuffer(req.body) ? req.body.length : 0,
    setHeader: (name, value) => { reply.raw.setHeader(name, value); },
  });
  if (closed) { grant.release(); return; }
  const stalled = ctx.stalledReaders;
  const flow = grant.seatsOf;
  if (stalled && flow !== undefined) {
    // Seats go back when the response waits for a reader that stopped reading (stalledreaders.ts).
    const held = grant;
    const forget = stalled.hold(reply.raw, flow, info.verb === 'watch', () => held.release());
    grant = { classification: held.classification, seatsOf: flow, release() { forget(); held.release(); } };
  }
  req.kcpFlowGrant = grant;
  return next(ctx, req, reply);
};
