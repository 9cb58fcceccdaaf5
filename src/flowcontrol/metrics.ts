/**
 * kube-apiserver's priority-and-fairness metrics (k8s.io/apiserver/pkg/util/flowcontrol/metrics),
 * with its names and labels: `priority_level`, `flow_schema`, `reason`, `execute`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram, type CounterSeries, type HistogramSeries } from '../metrics/series.js';
import type { RejectReason } from './queueset.js';

/**
 * The series of one (priority level, flow schema), held by the dispatcher per FlowSchema: a
 * dispatch is arithmetic on it, no label hashing.
 */
export class FlowControlSeries {
  inQueue = 0;
  executing = 0;
  executingSeats = 0;
  constructor(readonly pl: string, readonly fs: string, private readonly dispatched: CounterSeries, private readonly waitExecuted: HistogramSeries) {}
  /** A request waits in a queue (`delta` +1) or stopped waiting (−1). */
  queued(delta: number): void { this.inQueue += delta; }
  /** A request was dispatched after `waitedSeconds` in a queue and holds `seats`. */
  started(seats: number, waitedSeconds: number): void {
    this.dispatched.value++;
    this.executing++;
    this.executingSeats += seats;
    this.waitExecuted.observe(waitedSeconds);
  }
  /** A dispatched request finished (its initial stage for a watch). */
  finished(seats: number): void {
    this.executing--;
    this.executingSeats -= seats;
  }
}

/** Most (priority level, flow schema) series kept (configuration-bound: levels × schemas). */
const SERIES_CACHE_SIZE = 1000;

/** The `apiserver_flowcontrol_*` metrics of one server. */
export class FlowControlMetrics {
  private readonly series = new Map<string, FlowControlSeries>();
  private readonly dispatched: SeriesCounter;
  private readonly rejected: Counter<'priority_level' | 'flow_schema' | 'reason'>;
  private readonly wait: SeriesHistogram;
  private readonly nominal: Gauge<'priority_level'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const labels = ['priority_level', 'flow_schema'] as const;
    this.dispatched = new SeriesCounter({ name: 'apiserver_flowcontrol_dispatched_requests_total', help: 'Number of requests executed by API Priority and Fairness subsystem', labelNames: labels, registry, maxSeries: SERIES_CACHE_SIZE });
    this.rejected = new Counter({ name: 'apiserver_flowcontrol_rejected_requests_total', help: 'Number of requests rejected by API Priority and Fairness subsystem', labelNames: [...labels, 'reason'], registers });
    const series = this.series;
    const gauge = (name: string, help: string, field: 'inQueue' | 'executing' | 'executingSeats') => new Gauge({
      name, help, labelNames: labels, registers,
      collect() { for (const s of series.values()) this.set({ priority_level: s.pl, flow_schema: s.fs }, s[field]); },
    });
    gauge('apiserver_flowcontrol_current_inqueue_requests', 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', 'inQueue');
    gauge('apiserver_flowcontrol_current_executing_requests', 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem', 'executing');
    gauge('apiserver_flowcontrol_current_executing_seats', 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem', 'executingSeats');
    this.wait = new SeriesHistogram({
      name: 'apiserver_flowcontrol_request_wait_duration_seconds', help: 'Length of time a request spent waiting in its queue', labelNames: [...labels, 'execute'],
      buckets: [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30], registry, maxSeries: 2 * SERIES_CACHE_SIZE,
    });
    this.nominal = new Gauge({ name: 'apiserver_flowcontrol_nominal_limit_seats', help: 'Nominal number of execution seats configured for each priority level', labelNames: ['priority_level'], registers });
  }

  /** The series of a (priority level, flow schema); the dispatcher keeps it with its FlowSchema. */
  of(pl: string, fs: string): FlowControlSeries {
    const key = `${pl}\0${fs}`;
    let s = this.series.get(key);
    if (!s) {
      // Bounded by the configuration (levels × schemas); beyond the bound idle series are dropped.
      if (this.series.size >= SERIES_CACHE_SIZE) for (const [k, x] of this.series) if (!x.inQueue && !x.executing) this.series.delete(k);
      s = new FlowControlSeries(pl, fs, this.dispatched.series(pl, fs), this.wait.series(pl, fs, 'true'));
      this.series.set(key, s);
    }
    return s;
  }

  /** A request was refused after `waitedSeconds`. */
  rejectedRequest(pl: string, fs: string, reason: RejectReason, waitedSeconds: number): void {
    this.rejected.inc({ priority_level: pl, flow_schema: fs, reason });
    this.wait.series(pl, fs, 'false').observe(waitedSeconds);
  }

  /** The nominal seats of a priority level (after every reconfiguration). */
  nominalLimit(pl: string, seats: number): void { this.nominal.set({ priority_level: pl }, seats); }

  /** Forgets a priority level that no longer exists. */
  removeLevel(pl: string): void { this.nominal.remove({ priority_level: pl }); }
}
