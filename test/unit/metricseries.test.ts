import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from '../../src/metrics/series.js';

const buckets = [0, 0.005, 0.1, 1];
const observations: [string, string, number][] = [['get', 'configmaps', 0], ['get', 'configmaps', 0.004], ['get', 'configmaps', 0.5], ['list', 'secrets', 3], ['get', 'configmaps', 0.1]];

test('SeriesCounter and SeriesHistogram render exactly as prom-client\'s Counter and Histogram', async () => {
  const theirs = new Registry();
  const counter = new Counter({ name: 'c_total', help: 'h', labelNames: ['verb', 'resource'], registers: [theirs] });
  const histogram = new Histogram({ name: 'd_seconds', help: 'h', labelNames: ['verb', 'resource'], buckets, registers: [theirs] });
  const ours = new Registry();
  const sc = new SeriesCounter({ name: 'c_total', help: 'h', labelNames: ['verb', 'resource'], registry: ours });
  const sh = new SeriesHistogram({ name: 'd_seconds', help: 'h', labelNames: ['verb', 'resource'], buckets, registry: ours });
  for (const [verb, resource, v] of observations) {
    counter.inc({ verb, resource });
    histogram.observe({ verb, resource }, v);
    sc.series(verb, resource).value++;
    sh.series(verb, resource).observe(v);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.match(await ours.metrics(), /d_seconds_bucket\{le="0.005",verb="get",resource="configmaps"\} 2/);
});

test('series are bounded: past maxSeries, new label sets count in the overflow series', async () => {
  const registry = new Registry();
  const sc = new SeriesCounter({ name: 'x_total', help: 'h', labelNames: ['resource'], registry, maxSeries: 2 });
  const sh = new SeriesHistogram({ name: 'y', help: 'h', labelNames: ['resource'], buckets: [1], registry, maxSeries: 2 });
  for (const r of ['a', 'b', 'junk1', 'junk2', 'junk3']) { sc.series(r).value++; sh.series(r).observe(0.5); }
  const text = await registry.metrics();
  assert.match(text, /x_total\{resource="a"\} 1/);
  assert.match(text, /x_total\{resource="\(other\)"\} 3/);
  assert.match(text, /y_count\{resource="\(other\)"\} 3/);
  assert.equal((text.match(/^x_total\{/gm) ?? []).length, 3, 'a, b and (other): the bound (2) plus the overflow series');
});
