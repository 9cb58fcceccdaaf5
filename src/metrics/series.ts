/**
 * Labelled Prometheus metrics for the request path: the caller holds a series object and updates
 * it with plain arithmetic ({@link SeriesCounter}, {@link SeriesHistogram}), where prom-client
 * hashes the whole label set on every `inc`/`observe` (microseconds per request). prom-client's
 * registry still renders them, in its text format.
 */
import { Counter, type Metric, type Registry } from 'prom-client';

/** Label values of a series, in the order of the metric's label names. */
type LabelValues = readonly string[];

/** The series of a metric by label values (NUL-joined), with a bound on their number. */
class SeriesMap<S> {
  readonly all = new Map<string, { labels: LabelValues; series: S }>();
  constructor(private readonly create: () => S, private readonly maxSeries: number) {}
  /**
   * The series of `labels`; past `maxSeries` distinct label sets, the series of `overflow()` is
   * counted in instead (created beyond the bound: the overflow series are at most one per
   * overflow label set).
   */
  get(labels: LabelValues, overflow?: () => LabelValues): S {
    const key = labels.join('\0');
    let e = this.all.get(key);
    if (!e) {
      if (overflow && this.all.size >= this.maxSeries) return this.get(overflow());
      e = { labels, series: this.create() };
      this.all.set(key, e);
    }
    return e.series;
  }
  delete(labels: LabelValues): void { this.all.delete(labels.join('\0')); }
}

/** What {@link SeriesCounter} and {@link SeriesHistogram} take. */
export interface SeriesMetricOptions {
  name: string;
  help: string;
  labelNames: readonly string[];
  registry: Registry;
  /** Most distinct label sets (default 10,000); past it, `overflowLabels` are counted instead. */
  maxSeries?: number;
  /** The label values past the bound (default every label `(other)`). */
  overflowLabels?: (labels: LabelValues) => LabelValues;
}

const otherLabels = (labels: LabelValues): LabelValues => labels.map(() => '(other)');
const labelObject = (names: readonly string[], values: LabelValues): Record<string, string> => {
  const o: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) o[names[i]!] = values[i]!;
  return o;
};

/** One series of a {@link SeriesCounter}: add to `value`. */
export interface CounterSeries { value: number }

/**
 * A labelled counter whose series the caller holds and increments (`series.value++`); rendered
 * by prom-client as a counter. Bounded: see {@link SeriesMetricOptions.maxSeries}.
 */
export class SeriesCounter {
  private readonly map: SeriesMap<CounterSeries>;
  private readonly overflow: (labels: LabelValues) => LabelValues;
  constructor(opts: SeriesMetricOptions) {
    this.map = new SeriesMap(() => ({ value: 0 }), opts.maxSeries ?? 10_000);
    this.overflow = opts.overflowLabels ?? otherLabels;
    const map = this.map;
    const names = opts.labelNames;
    new Counter({
      name: opts.name, help: opts.help, labelNames: names, registers: [opts.registry],
      // Copied into prom-client when scraped, so the request path never hashes labels.
      collect() { this.reset(); for (const { labels, series } of map.all.values()) if (series.value > 0) this.inc(labelObject(names, labels), series.value); },
    });
  }
  /** The series of these label values (created at 0). */
  series(...labels: string[]): CounterSeries { return this.map.get(labels, () => this.overflow(labels)); }
}

/** One series of a {@link SeriesHistogram}. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last one past every bound (+Inf). */
  readonly counts: Float64Array;
  sum = 0;
  constructor(private readonly bounds: readonly number[]) { this.counts = new Float64Array(bounds.length + 1); }
  /** Records one observation. */
  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
  }
}

/**
 * A labelled histogram whose series the caller holds and observes into; registered in the
 * registry as a prom-client metric renders it (`_bucket` cumulative with `le`, `_sum`, `_count`).
 * Bounded: see {@link SeriesMetricOptions.maxSeries}.
 */
export class SeriesHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly map: SeriesMap<HistogramSeries>;
  private readonly overflow: (labels: LabelValues) => LabelValues;
  private readonly labelNames: readonly string[];
  /** Upper bounds of the buckets, ascending. */
  private readonly bounds: readonly number[];
  constructor(opts: SeriesMetricOptions & { buckets: readonly number[] }) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    const bounds = [...opts.buckets].sort((a, b) => a - b);
    this.bounds = bounds;
    this.map = new SeriesMap(() => new HistogramSeries(bounds), opts.maxSeries ?? 10_000);
    this.overflow = opts.overflowLabels ?? otherLabels;
    // The registry renders any object of this shape (name, help, type, get()); the cast only
    // satisfies its declared union of prom-client's own classes.
    opts.registry.registerMetric(this as unknown as Metric);
  }
  /** The series of these label values (created empty). */
  series(...labels: string[]): HistogramSeries { return this.map.get(labels, () => this.overflow(labels)); }
  /** Forgets a series. */
  remove(...labels: string[]): void { this.map.delete(labels); }
  /** Forgets every series (prom-client's Registry.resetMetrics). */
  reset(): void { this.map.all.clear(); }
  /** The values as prom-client's Histogram.get() gives them. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] }> {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const { labels, series } of this.map.all.values()) {
      const own = labelObject(this.labelNames, labels);
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += series.counts[i]!;
        values.push({ labels: { le: this.bounds[i]!, ...own }, value: acc, metricName: `${this.name}_bucket` });
      }
      acc += series.counts[this.bounds.length]!;
      values.push({ labels: { le: '+Inf', ...own }, value: acc, metricName: `${this.name}_bucket` });
      values.push({ labels: own, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: own, value: acc, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

