/**
 * OpenAPI v3 schemas of events.k8s.io/v1 (Event, EventSeries) and coordination.k8s.io/v1 (Lease,
 * LeaseSpec), following k8s.io/api/events/v1 and k8s.io/api/coordination/v1.
 */
import { type Schema, MICRO_TIME, TIME, int32, kindSchema, object, ref, str } from './helpers.js';
import { CORE } from './core.js';

/** Definition-name prefix of events.k8s.io/v1 types. */
export const EVENTS = 'io.k8s.api.events.v1';
/** Definition-name prefix of coordination.k8s.io/v1 types. */
export const COORDINATION = 'io.k8s.api.coordination.v1';

const event = kindSchema(
  'events.k8s.io',
  'v1',
  'Event',
  'An Event reports something that happened in the system, such as a state change of an object or an error.',
  {
    action: str('What action was taken or failed regarding the `regarding` object, in CamelCase.'),
    deprecatedCount: int32('Deprecated field kept for compatibility with core/v1 Event.'),
    deprecatedFirstTimestamp: ref(TIME, 'Deprecated field kept for compatibility with core/v1 Event.'),
    deprecatedLastTimestamp: ref(TIME, 'Deprecated field kept for compatibility with core/v1 Event.'),
    deprecatedSource: ref(`${CORE}.EventSource`, 'Deprecated field kept for compatibility with core/v1 Event.'),
    eventTime: ref(MICRO_TIME, 'When the event was first observed. Required.'),
    note: str('Human-readable description of the event, at most 1kB.'),
    reason: str('Why the action was taken, in CamelCase.'),
    regarding: ref(`${CORE}.ObjectReference`, 'The object this event is about.'),
    related: ref(`${CORE}.ObjectReference`, 'A secondary object involved in the event, if any.'),
    reportingController: str('Name of the controller that emitted the event, e.g. `kubernetes.io/kubelet`.'),
    reportingInstance: str('ID of the controller instance that emitted the event.'),
    series: ref(`${EVENTS}.EventSeries`, 'Data about a series of repeated events, if this is one.'),
    type: str('Type of the event: Normal or Warning.'),
  },
  { required: ['eventTime'] },
);

const eventSeries = object(
  'EventSeries counts the occurrences of a recurring event and when it was last seen.',
  {
    count: int32('Number of occurrences in the series so far.'),
    lastObservedTime: ref(MICRO_TIME, 'When the last occurrence was observed.'),
  },
  { required: ['count', 'lastObservedTime'] },
);

const lease = kindSchema('coordination.k8s.io', 'v1', 'Lease', 'A Lease is a time-bound claim, used for leader election and heartbeats.', {
  spec: ref(`${COORDINATION}.LeaseSpec`, 'The lease holder and timing.'),
});

const leaseSpec = object('LeaseSpec is the specification of a Lease: its holder and timing.', {
  acquireTime: ref(MICRO_TIME, 'When the current holder acquired the lease.'),
  holderIdentity: str('Identity of the current holder.'),
  leaseDurationSeconds: int32('How long candidates must wait after the last renewal before they may take over the lease.'),
  leaseTransitions: int32('How many times the lease changed holders.'),
  preferredHolder: str('Holder that coordinated leader election would like to hand the lease to.'),
  renewTime: ref(MICRO_TIME, 'When the current holder last renewed the lease.'),
  strategy: str('Strategy for picking the leader in coordinated leader election, e.g. OldestEmulationVersion.'),
});

/** events.k8s.io/v1 and coordination.k8s.io/v1 schemas keyed by definition name. */
export const EVENTS_COORDINATION_SCHEMAS: Record<string, Schema> = {
  [`${COORDINATION}.Lease`]: lease,
  [`${COORDINATION}.LeaseSpec`]: leaseSpec,
  [`${EVENTS}.Event`]: event,
  [`${EVENTS}.EventSeries`]: eventSeries,
};
