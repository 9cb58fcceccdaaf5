/** The syncer's downstream names against kcp's own test vectors (contrib-tmc pkg/syncer/spec spec_process_test.go). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { base36EncodeBytes, locatorFromAnnotations, locatorJSON, namespaceLocator, physicalClusterNamespaceName, tenantID } from '../../src/syncer/names.js';
import { syncTargetKey } from '../../src/workload/keys.js';

test('namespace locator JSON, downstream namespace name and tenant id as kcp computes them', () => {
  const l = namespaceLocator('root:org:ws', 'root:org:ws', 'syncTargetUID', 'us-west1', 'test');
  assert.equal(locatorJSON(l), '{"syncTarget":{"cluster":"root:org:ws","name":"us-west1","uid":"syncTargetUID"},"cluster":"root:org:ws","namespace":"test"}');
  assert.equal(physicalClusterNamespaceName(l), 'kcp-33jbiactwhg0');
  assert.equal(tenantID(l), '9Fn3Q4y5UDPmCOrYCujwdgCbD9SwOcKdcefYE7');
  assert.equal(syncTargetKey('root:org:ws', 'us-west1'), '6ohB8yeXhwqTQVuBzJRgqcRJTpRjX7yTZu5g5g');
  assert.deepEqual(locatorFromAnnotations({ 'kcp.io/namespace-locator': locatorJSON(l) }), l);
  // v0.6.0 locators name the SyncTarget's workspace `path`.
  assert.equal(locatorFromAnnotations({ 'kcp.io/namespace-locator': '{"syncTarget":{"path":"root:org:ws","name":"us-west1","uid":"syncTargetUID"},"cluster":"root:org:ws","namespace":"test"}' })?.syncTarget.cluster, 'root:org:ws');
  assert.equal(locatorFromAnnotations({ 'kcp.io/namespace-locator': 'not json' }), undefined);
});

test('base 36 of bytes keeps leading zero bytes as martinlindhe/base36 does', () => {
  assert.equal(base36EncodeBytes(Uint8Array.from([0, 0, 1])), '001');
  assert.equal(base36EncodeBytes(Uint8Array.from([255])), '73');
});
