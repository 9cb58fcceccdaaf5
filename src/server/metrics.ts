/**
 * Prometheus metrics of a server (names as kube-apiserver's: `apiserver_request_total`,
 * `apiserver_request_duration_seconds`, `apiserver_longrunning_requests`). One registry per
 * server instance so several servers can run in one process.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { HandshakeGateStats } from './handshakes.js';
import { ControllerMetrics } from '../controllers/runtime.js';
import { SeriesCounter, SeriesHistogram, type CounterSeries, type HistogramSeries } from '../metrics/series.js';

/** Most (verb, resource, code) series of the request metrics; more resources are counted as `(other)`. */
const MAX_REQUEST_SERIES = 10_000;

/** Request and watch metrics. */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: SeriesCounter;
  private readonly duration: SeriesHistogram;
  /** The series of one (verb, resource, code), found with one map lookup per request. */
  private readonly requestSeries = new Map<string, { count: CounterSeries; duration?: HistogramSeries }>();
  /** Metrics of the controllers running in this server. */
  readonly controllers: ControllerMetrics;

  constructor(openWatches: () => number, objects: () => number) {
    // Resource names come from tenants' CRDs: at most MAX_REQUEST_SERIES label sets, then `(other)`.
    const overflowLabels = (l: readonly string[]) => l.map((v, i) => (i === 1 ? '(other)' : v));
    this.requests = new SeriesCounter({ name: 'apiserver_request_total', help: 'Requests by verb, resource and HTTP code.', labelNames: ['verb', 'resource', 'code'], registry: this.registry, maxSeries: MAX_REQUEST_SERIES, overflowLabels });
    this.duration = new SeriesHistogram({
      name: 'apiserver_request_duration_seconds', help: 'Request latency in seconds by verb and resource.', labelNames: ['verb', 'resource'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registry: this.registry, maxSeries: MAX_REQUEST_SERIES, overflowLabels,
    });
    new Gauge({ name: 'apiserver_longrunning_requests', help: 'Open long-running requests (watches).', registers: [this.registry], collect() { this.set(openWatches()); } });
    new Gauge({ name: 'kcp_watch_cache_objects', help: 'Objects held by the watch cache.', registers: [this.registry], collect() { this.set(objects()); } });
    collectDefaultMetrics({ register: this.registry });
    this.controllers = new ControllerMetrics(this.registry);
  }

  /**
   * Exposes the server's TLS handshake admission (./handshakes.ts), read when scraped:
   * `kcp_tls_handshakes_waiting` (connections waiting for their first bytes or a slot),
   * `kcp_tls_handshakes_in_flight` (handshakes holding a slot), `kcp_tls_handshakes_started_total`
   * and `kcp_tls_handshakes_dropped_total` (closed before their start: silent too long, or pushed
   * out of full queues).
   */
  observeHandshakes(stats: () => HandshakeGateStats): void {
    const registers = [this.registry];
    new Gauge({ name: 'kcp_tls_handshakes_waiting', help: 'Accepted connections waiting for their first bytes or for a handshake slot.', registers, collect() { this.set(stats().waiting); } });
    new Gauge({ name: 'kcp_tls_handshakes_in_flight', help: 'TLS handshakes holding a slot of the handshake admission.', registers, collect() { this.set(stats().inFlight); } });
    new Counter({ name: 'kcp_tls_handshakes_started_total', help: 'TLS handshakes started by the handshake admission.', registers, collect() { this.reset(); this.inc(stats().started); } });
    new Counter({ name: 'kcp_tls_handshakes_dropped_total', help: 'Connections closed before their handshake started: silent too long, or pushed out of full queues.', registers, collect() { this.reset(); this.inc(stats().dropped); } });
  }

  /** Records one finished request; `resource` is its resolved plural ('' when none), `seconds` its duration. */
  observeRequest(verb: string, resource: string, code: number, seconds: number): void {
    const key = `${verb} ${resource} ${code}`;
    let s = this.requestSeries.get(key);
    if (!s) {
      if (this.requestSeries.size >= MAX_REQUEST_SERIES) this.requestSeries.clear();
      s = { count: this.requests.series(verb, resource, String(code)), duration: verb === 'watch' ? undefined : this.duration.series(verb, resource) };
      this.requestSeries.set(key, s);
    }
    s.count.value++;
    s.duration?.observe(seconds);
  }

  get contentType(): string { return this.registry.contentType; }

  /** Text exposition format. */
  render(): Promise<string> { return this.registry.metrics(); }
}
