import { test } from 'node:test';
import assert from 'node:assert/strict';
import { syncTargetKey, RESOURCE_STATE_LABEL_PREFIX } from '../../src/workload/keys.js';

test('syncTargetKey is kcp TMC\'s ToSyncTargetKey (values computed with Go\'s sha256.Sum224 and big.Int.Text(62))', () => {
  assert.equal(syncTargetKey('root:org:ws', 'cluster-1'), '6eAKn2VMdCnn1wrMfcFBFaW1wWP6ThVdbEXsNO');
  assert.equal(syncTargetKey('abc123', 'st'), '2qfIUPKGe8LCcipedQwDLPa0WpwVQb8Uijrpj9');
  // The label key built from it is a valid qualified name (name part ≤ 63 characters).
  assert.ok(syncTargetKey('root', 'x').length <= 63 && `${RESOURCE_STATE_LABEL_PREFIX}${syncTargetKey('root', 'x')}`.startsWith('state.workload.kcp.io/'));
});
