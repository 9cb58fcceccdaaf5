/**
 * Prometheus metrics of a server (names as kube-apiserver's: `apiserver_request_total`,
 * `apiserver_request_duration_seconds`, `apiserver_longrunning_requests`). One registry per
 * server instance so several servers can run in one process.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ControllerMetrics } from '../controllers/runtime.js';

/** Request and watch metrics. */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'verb' | 'resource' | 'code'>;
  private readonly duration: Histogram<'verb' | 'resource'>;
  /** Metrics of the controllers running in this server. */
  readonly controllers: ControllerMetrics;

  constructor(openWatches: () => number, objects: () => number) {
    this.requests = new Counter({ name: 'apiserver_request_total', help: 'Requests by verb, resource and HTTP code.', labelNames: ['verb', 'resource', 'code'], registers: [this.registry] });
    this.duration = new Histogram({
      name: 'apiserver_request_duration_seconds', help: 'Request latency in seconds by verb and resource.', labelNames: ['verb', 'resource'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [this.registry],
    });
    new Gauge({ name: 'apiserver_longrunning_requests', help: 'Open long-running requests (watches).', registers: [this.registry], collect() { this.set(openWatches()); } });
    new Gauge({ name: 'kcp_watch_cache_objects', help: 'Objects held by the watch cache.', registers: [this.registry], collect() { this.set(objects()); } });
    collectDefaultMetrics({ register: this.registry });
    this.controllers = new ControllerMetrics(this.registry);
  }

  /** Records one finished request; `seconds` is its duration. */
  observeRequest(verb: string, resource: string, code: number, seconds: number): void {
    this.requests.inc({ verb, resource, code: String(code) });
    if (verb !== 'watch') this.duration.observe({ verb, resource }, seconds);
  }

  get contentType(): string { return this.registry.contentType; }

  /** Text exposition format. */
  render(): Promise<string> { return this.registry.metrics(); }
}
