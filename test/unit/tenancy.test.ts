import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyClusterSegment, clusterNameFor, homeClusterName, isValidPath, joinPath, parentPath, randomClusterName } from '../../src/tenancy/paths.js';
import { checkParentChild, type ResolvedType } from '../../src/tenancy/workspacetypes.js';
import { ownerAnnotationValue } from '../../src/tenancy/admission.js';

test('paths: validity, parent/join, how /clusters/<x> is read', () => {
  assert.ok(isValidPath('root:org:team'));
  assert.ok(!isValidPath('root::x'));
  assert.ok(!isValidPath('root:Org'));
  assert.ok(!isValidPath('root:-a'));
  assert.equal(parentPath('root:org:team'), 'root:org');
  assert.equal(parentPath('root'), '');
  assert.equal(joinPath('root:org', 'team'), 'root:org:team');
  assert.equal(classifyClusterSegment('root'), 'name');
  assert.equal(classifyClusterSegment('2x5nd3awx0a7ty4j'), 'name');
  assert.equal(classifyClusterSegment('system:admin'), 'name');
  assert.equal(classifyClusterSegment('root:org'), 'path');
  assert.equal(classifyClusterSegment('user:alice'), 'path');
  assert.equal(classifyClusterSegment('root:a:..:b'), 'invalid');
  // logicalcluster Path.IsValid: DNS labels of at most 63 characters; the wildcard is valid as a
  // path but names no single logical cluster.
  assert.ok(isValidPath(`root:${'a'.repeat(63)}`));
  assert.ok(!isValidPath(`root:${'a'.repeat(64)}`));
  assert.ok(isValidPath('*'));
  assert.equal(classifyClusterSegment('*'), 'invalid');
  assert.equal(classifyClusterSegment('system:Admin'), 'invalid');
  assert.equal(classifyClusterSegment('user:alice@example.com'), 'invalid');
});

test('cluster names: 16 base36 characters; uid-derived and home names are stable', () => {
  const a = randomClusterName();
  assert.match(a, /^[0-9a-z]{16}$/);
  assert.notEqual(a, randomClusterName());
  assert.equal(clusterNameFor('uid-1'), clusterNameFor('uid-1'));
  assert.notEqual(clusterNameFor('uid-1'), clusterNameFor('uid-2'));
  assert.match(homeClusterName('alice'), /^[0-9a-z]{16}$/);
  assert.equal(homeClusterName('alice'), homeClusterName('alice'));
});

const t = (name: string, spec: ResolvedType['spec'] = {}, path = 'root'): ResolvedType => ({ name, path, spec });
const universal = t('universal', { initializer: true });
const organization = t('organization', { limitAllowedParents: { types: [{ name: 'root', path: 'root' }] }, limitAllowedChildren: { types: [{ name: 'universal', path: 'root' }] } });
const root = t('root', { limitAllowedParents: { none: true } });
const team = t('team', { limitAllowedParents: { types: [{ name: 'organization', path: 'root' }, { name: 'team', path: 'root' }] } });

test('checkParentChild: allowed parents and children compare the types and what they extend (kcp messages)', () => {
  assert.deepEqual(checkParentChild('root:root', [root, universal], 'root:organization', [organization, universal]), []);
  assert.deepEqual(checkParentChild('root:organization', [organization, universal], 'root:universal', [universal]), []);
  assert.deepEqual(checkParentChild('root:organization', [organization, universal], 'root:organization', [organization, universal]), [
    'workspace type root:organization only allows [root:root] parent workspaces, but parent type root:organization only implements [root:organization root:universal]',
  ]);
  const leaf = t('leaf', { limitAllowedChildren: { none: true } });
  assert.deepEqual(checkParentChild('root:leaf', [leaf], 'root:universal', [universal]), ['workspace type root:leaf cannot have any child']);
  const picky = t('picky', { limitAllowedChildren: { types: [{ name: 'team' }] } });
  assert.deepEqual(checkParentChild('root:picky', [picky], 'root:universal', [universal]),
    ['workspace type root:picky only allows [root:team] child workspaces, but child type root:universal only implements [root:universal]']);
  // team under organization is refused by organization's limitAllowedChildren (only universal).
  const errs = checkParentChild('root:organization', [organization, universal], 'root:team', [team, universal]);
  assert.equal(errs.length, 0, 'team extends universal, which organization allows');
  assert.deepEqual(checkParentChild('root:universal', [universal], 'root:root', [root]), ['workspace type root:root cannot have any parent']);
});

test('owner annotation: JSON of an authentication.k8s.io UserInfo, empty fields omitted', () => {
  assert.equal(ownerAnnotationValue({ name: 'alice', groups: [] }), '{"username":"alice"}');
  assert.equal(ownerAnnotationValue({ name: 'bob', uid: '7', groups: ['dev'], extra: { a: ['b'] } }), '{"username":"bob","uid":"7","groups":["dev"],"extra":{"a":["b"]}}');
});
