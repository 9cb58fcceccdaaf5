/**
 * kube-apiserver's priority-and-fairness metrics (k8s.io/apiserver/pkg/util/flowcontrol/metrics),
 * with its names and labels: `priority_level`, `flow_schema`, `reason`, `execute`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RejectReason } from './queueset.js';

/** The `apiserver_flowcontrol_*` metrics of one server. */
export class FlowControlMetrics {
  private readonly dispatched: Counter<'priority_level' | 'flow_schema'>;
  private readonly rejected: Counter<'priority_level' | 'flow_schema' | 'reason'>;
  private readonly inQueue: Gauge<'priority_level' | 'flow_schema'>;
  private readonly executing: Gauge<'priority_level' | 'flow_schema'>;
  private readonly executingSeats: Gauge<'priority_level' | 'flow_schema'>;
  private readonly wait: Histogram<'priority_level' | 'flow_schema' | 'execute'>;
  private readonly nominal: Gauge<'priority_level'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const labels = ['priority_level', 'flow_schema'] as const;
    this.dispatched = new Counter({ name: 'apiserver_flowcontrol_dispatched_requests_total', help: 'Number of requests executed by API Priority and Fairness subsystem', labelNames: labels, registers });
    this.rejected = new Counter({ name: 'apiserver_flowcontrol_rejected_requests_total', help: 'Number of requests rejected by API Priority and Fairness subsystem', labelNames: [...labels, 'reason'], registers });
    this.inQueue = new Gauge({ name: 'apiserver_flowcontrol_current_inqueue_requests', help: 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', labelNames: labels, registers });
    this.executing = new Gauge({ name: 'apiserver_flowcontrol_current_executing_requests', help: 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem', labelNames: labels, registers });
    this.executingSeats = new Gauge({ name: 'apiserver_flowcontrol_current_executing_seats', help: 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem', labelNames: labels, registers });
    this.wait = new Histogram({
      name: 'apiserver_flowcontrol_request_wait_duration_seconds', help: 'Length of time a request spent waiting in its queue', labelNames: [...labels, 'execute'],
      buckets: [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30], registers,
    });
    this.nominal = new Gauge({ name: 'apiserver_flowcontrol_nominal_limit_seats', help: 'Nominal number of execution seats configured for each priority level', labelNames: ['priority_level'], registers });
  }

  /** A request waits in a queue (`delta` +1) or stopped waiting (−1). */
  queued(pl: string, fs: string, delta: number): void { this.inQueue.inc({ priority_level: pl, flow_schema: fs }, delta); }

  /** A request was dispatched after `waitedSeconds` in a queue and holds `seats`. */
  started(pl: string, fs: string, seats: number, waitedSeconds: number): void {
    const l = { priority_level: pl, flow_schema: fs };
    this.dispatched.inc(l);
    this.executing.inc(l);
    this.executingSeats.inc(l, seats);
    this.wait.observe({ ...l, execute: 'true' }, waitedSeconds);
  }

  /** A dispatched request finished (its initial stage for a watch). */
  finished(pl: string, fs: string, seats: number): void {
    const l = { priority_level: pl, flow_schema: fs };
    this.executing.dec(l);
    this.executingSeats.dec(l, seats);
  }

  /** A request was refused after `waitedSeconds`. */
  rejectedRequest(pl: string, fs: string, reason: RejectReason, waitedSeconds: number): void {
    this.rejected.inc({ priority_level: pl, flow_schema: fs, reason });
    this.wait.observe({ priority_level: pl, flow_schema: fs, execute: 'false' }, waitedSeconds);
  }

  /** The nominal seats of a priority level (after every reconfiguration). */
  nominalLimit(pl: string, seats: number): void { this.nominal.set({ priority_level: pl }, seats); }

  /** Forgets a priority level that no longer exists. */
  removeLevel(pl: string): void { this.nominal.remove({ priority_level: pl }); }
}
