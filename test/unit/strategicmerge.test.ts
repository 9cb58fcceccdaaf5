import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/apimachinery/errors.js';
import {
  BUILTIN_PATCH_META,
  OBJECT_META_PATCH_META,
  strategicMergePatch,
  type PatchMeta,
} from '../../src/apimachinery/strategicmerge.js';

/**
 * The struct tags of apimachinery's test type `MergeItem` (strategicpatch/patch_test.go), two
 * levels deep: most cases below come from that file's test tables.
 */
const META: PatchMeta = {
  mergingList: { strategy: 'merge', mergeKey: 'name' },
  'mergingList.mergingList': { strategy: 'merge', mergeKey: 'name' },
  'mergingList.mergingIntList': { strategy: 'merge' },
  mergingIntList: { strategy: 'merge' },
  mergeItemPtr: { strategy: 'merge', mergeKey: 'name' },
  replacingItem: { strategy: 'replace' },
  retainKeysMap: { strategy: 'retainKeys' },
  'retainKeysMap.mergingIntList': { strategy: 'merge' },
  retainKeysMergingList: { strategy: 'merge,retainKeys', mergeKey: 'name' },
};

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

/** Applies the patch to frozen copies of the inputs (so any mutation throws) and returns the result. */
function apply(original: unknown, patch: unknown, meta: PatchMeta = META): unknown {
  return strategicMergePatch(deepFreeze(structuredClone(original)), deepFreeze(structuredClone(patch)), meta);
}

function assertBadRequest(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof StatusError, `expected StatusError, got ${String(err)}`);
    assert.equal(err.code, 400);
    assert.equal(err.reason, 'BadRequest');
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Maps
// ---------------------------------------------------------------------------------------------

test('maps merge recursively and null deletes a key', () => {
  assert.deepEqual(
    apply({ name: 1, value: 1, simpleMap: { key1: 1, key2: 1 } }, { value: 2, other: 'a', simpleMap: { key1: null, key3: 3 } }),
    { name: 1, value: 2, other: 'a', simpleMap: { key2: 1, key3: 3 } },
  );
  // Deleting an absent key is a no-op; a null original counts as {}.
  assert.deepEqual(apply({ a: 1 }, { b: null }), { a: 1 });
  assert.deepEqual(strategicMergePatch(null, { a: 1 }, META), { a: 1 });
});

test('values inserted where the original has nothing or another type lose their nulls', () => {
  assert.deepEqual(apply({}, { spec: { a: { b: null, c: 1 } } }), { spec: { a: { c: 1 } } });
  assert.deepEqual(apply({ x: 'string' }, { x: { a: null, b: 1 } }), { x: { b: 1 } });
  assert.deepEqual(apply({ x: { a: 1 } }, { x: [1, 2] }), { x: [1, 2] });
  assert.deepEqual(apply({ x: [1] }, { x: 'now a string' }), { x: 'now a string' });
});

test('$patch: replace and $patch: delete in maps', () => {
  assert.deepEqual(apply({ simpleMap: { key1: 1, key2: 2 } }, { simpleMap: { $patch: 'replace', key3: 3 } }),
    { simpleMap: { key3: 3 } });
  // "delete map from nested map": the map becomes empty.
  assert.deepEqual(apply({ simpleMap: { key1: 1, key2: 1 } }, { simpleMap: { $patch: 'delete' } }), { simpleMap: {} });
  assert.deepEqual(apply({ a: 1, b: { c: 2 } }, { $patch: 'delete' }), {});
  assert.deepEqual(apply({ a: 1, b: 2 }, { $patch: 'replace', c: 3 }), { c: 3 });
  // Where the original has no such map, a directive map is dropped (apimachinery removeDirectives).
  assert.deepEqual(apply({ a: 1 }, { simpleMap: { $patch: 'replace', k: 'v' } }), { a: 1 });
});

test('$patch: merge in a map asks for the default merge', () => {
  assert.deepEqual(apply({ simpleMap: { key1: 1 } }, { simpleMap: { $patch: 'merge', key2: 2 } }),
    { simpleMap: { key1: 1, key2: 2 } });
});

test('a field with the replace strategy is replaced, not merged', () => {
  assert.deepEqual(apply({ replacingItem: { a: 1, b: 2 } }, { replacingItem: { c: 3 } }), { replacingItem: { c: 3 } });
});

// ---------------------------------------------------------------------------------------------
// Lists
// ---------------------------------------------------------------------------------------------

test('lists without the merge strategy are replaced', () => {
  assert.deepEqual(apply({ nonMergingList: [{ name: 1 }, { name: 2 }] }, { nonMergingList: [{ name: 3 }] }),
    { nonMergingList: [{ name: 3 }] });
  assert.deepEqual(apply({ nonMergingIntList: [1, 2] }, { nonMergingIntList: [3] }), { nonMergingIntList: [3] });
  // Lists of maps below a merged item are also replaced unless tagged.
  assert.deepEqual(apply({ mergingList: [{ name: 1, nonMergingList: [{ name: 'a' }] }] },
    { mergingList: [{ name: 1, nonMergingList: [{ name: 'b' }] }] }),
  { mergingList: [{ name: 1, nonMergingList: [{ name: 'b' }] }] });
});

test('merging lists of maps merge items by merge key', () => {
  assert.deepEqual(
    apply({ mergingList: [{ name: 1, value: 1 }, { name: 2, value: 2, other: 'x' }] },
      { mergingList: [{ name: 2, value: 3, other: null }, { name: 3, value: 3 }] }),
    // Patch items keep the patch order; live-only item 1 keeps its place before 2 (apimachinery mergeSortedSlice).
    { mergingList: [{ name: 1, value: 1 }, { name: 2, value: 3 }, { name: 3, value: 3 }] },
  );
  // Nested merging lists merge too.
  assert.deepEqual(
    apply({ mergingList: [{ name: 1, mergingIntList: [1, 2] }] }, { mergingList: [{ name: 1, mergingIntList: [2, 3] }] }),
    { mergingList: [{ name: 1, mergingIntList: [1, 2, 3] }] },
  );
});

test('merging lists of primitives merge as a set, ordered as apimachinery orders them', () => {
  // "merge lists of scalars": [1,2] + [2,3].
  assert.deepEqual(apply({ mergingIntList: [1, 2] }, { mergingIntList: [2, 3] }), { mergingIntList: [1, 2, 3] });
  // "preserve the order from the patch in a merging int list".
  assert.deepEqual(apply({ mergingIntList: [1, 2, 3] }, { mergingIntList: [3, 1] }), { mergingIntList: [2, 3, 1] });
  // An item unknown to the live list is placed before the live-only items.
  assert.deepEqual(apply({ mergingIntList: [1] }, { mergingIntList: [2] }), { mergingIntList: [2, 1] });
  assert.deepEqual(apply({ mergingIntList: [1, 1, 2] }, { mergingIntList: [2, 2] }), { mergingIntList: [1, 2] });
});

test('$patch: delete and $patch: replace items in merging lists', () => {
  // "delete map from merging list".
  assert.deepEqual(apply({ mergingList: [{ name: 1 }, { name: 2 }, { name: 1, dup: true }] },
    { mergingList: [{ name: 1, $patch: 'delete' }] }), { mergingList: [{ name: 2 }] });
  // "delete missing map from merging list" is a no-op.
  assert.deepEqual(apply({ mergingList: [{ name: 1 }] }, { mergingList: [{ name: 9, $patch: 'delete' }] }),
    { mergingList: [{ name: 1 }] });
  // "replace list of maps": the other items are the new list.
  assert.deepEqual(apply({ mergingList: [{ name: 1 }, { name: 2 }] },
    { mergingList: [{ name: 3, value: 3 }, { $patch: 'replace' }] }), { mergingList: [{ name: 3, value: 3 }] });
});

test('$deleteFromPrimitiveList removes items from a merging primitive list', () => {
  assert.deepEqual(apply({ mergingIntList: [1, 2, 3] }, { '$deleteFromPrimitiveList/mergingIntList': [2] }),
    { mergingIntList: [1, 3] });
  // Deleting an item that is not there does not add it (customStrategicMergePatchRawTestCases).
  assert.deepEqual(apply({ mergingIntList: [1, 2] }, { '$deleteFromPrimitiveList/mergingIntList': [3] }),
    { mergingIntList: [1, 2] });
  // Without a live list there is nothing to delete.
  assert.deepEqual(apply({}, { '$deleteFromPrimitiveList/mergingIntList': [3] }), {});
  // kubectl apply removing the finalizer "b" from ObjectMeta.
  assert.deepEqual(
    apply({ metadata: { name: 'x', finalizers: ['a', 'b', 'c'] } },
      { metadata: { '$setElementOrder/finalizers': ['a', 'c'], '$deleteFromPrimitiveList/finalizers': ['b'] } },
      OBJECT_META_PATCH_META),
    { metadata: { name: 'x', finalizers: ['a', 'c'] } },
  );
});

test('$setElementOrder sets the final order of a merging list', () => {
  // "$setElementOrder contains item that is not present in the list to be merged".
  assert.deepEqual(apply({ mergingList: [{ name: 1 }, { name: 3 }] }, {
    '$setElementOrder/mergingList': [{ name: 3 }, { name: 2 }, { name: 1 }],
    mergingList: [{ name: 3, value: 3 }, { name: 1, value: 1 }],
  }), { mergingList: [{ name: 3, value: 3 }, { name: 1, value: 1 }] });
  // The int-list flavour, with no patch list at all: only reorders.
  assert.deepEqual(apply({ mergingIntList: [1, 3] }, { '$setElementOrder/mergingIntList': [3, 2, 1] }),
    { mergingIntList: [3, 1] });
  // Without the directive a new item would go first; with it, it goes where kubectl says.
  assert.deepEqual(apply({ mergingIntList: [1] }, { mergingIntList: [2] }), { mergingIntList: [2, 1] });
  assert.deepEqual(apply({ mergingIntList: [1] }, { '$setElementOrder/mergingIntList': [1, 2], mergingIntList: [2] }),
    { mergingIntList: [1, 2] });
});

test('kubectl-apply-shaped patch: $setElementOrder with an added and a deleted item (apimachinery "add map and delete map from merging list")', () => {
  const current = { mergingList: [{ name: 1 }, { name: 2, other: 'b' }, { name: 4, other: 'c' }] };
  const patch = {
    '$setElementOrder/mergingList': [{ name: 2 }, { name: 3 }],
    mergingList: [{ name: 3 }, { name: 1, $patch: 'delete' }],
  };
  // Server-only item 4 keeps its place after 2, as apimachinery orders it.
  assert.deepEqual(apply(current, patch), { mergingList: [{ name: 2, other: 'b' }, { name: 4, other: 'c' }, { name: 3 }] });

  // "... with conflict" variant.
  assert.deepEqual(apply({ mergingList: [{ name: 1, other: 'a' }, { name: 4, other: 'c' }] }, {
    '$setElementOrder/mergingList': [{ name: 2 }, { name: 3 }],
    mergingList: [{ name: 2 }, { name: 3 }, { name: 1, $patch: 'delete' }],
  }), { mergingList: [{ name: 4, other: 'c' }, { name: 2 }, { name: 3 }] });
});

test('kubectl-apply-shaped patch on a pod template: containers by name, nested env by name', () => {
  const meta: PatchMeta = {
    'spec.template.spec.containers': { strategy: 'merge', mergeKey: 'name' },
    'spec.template.spec.containers.env': { strategy: 'merge', mergeKey: 'name' },
  };
  const live = {
    spec: { replicas: 1, template: { spec: { containers: [
      { name: 'app', image: 'app:v1', env: [{ name: 'A', value: '1' }] },
      { name: 'sidecar', image: 's:v1' },
    ] } } },
  };
  const patch = {
    spec: { template: { spec: {
      '$setElementOrder/containers': [{ name: 'new' }, { name: 'app' }],
      containers: [
        { name: 'new', image: 'n:v1' },
        { name: 'app', image: 'app:v2', '$setElementOrder/env': [{ name: 'A' }, { name: 'B' }], env: [{ name: 'B', value: '2' }] },
        { name: 'sidecar', $patch: 'delete' },
      ],
    } } },
  };
  assert.deepEqual(apply(live, patch, meta), {
    spec: { replicas: 1, template: { spec: { containers: [
      { name: 'new', image: 'n:v1' },
      { name: 'app', image: 'app:v2', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] },
    ] } } },
  });
});

test('$retainKeys clears the fields it does not list', () => {
  // "retainKeys map adds a field and clear a field".
  assert.deepEqual(apply({ retainKeysMap: { name: 'foo', other: 'a' } },
    { retainKeysMap: { $retainKeys: ['name', 'value'], value: 'bar' } }),
  { retainKeysMap: { name: 'foo', value: 'bar' } });
  // "retainKeys map deletes a field".
  assert.deepEqual(apply({ retainKeysMap: { name: 'foo', value: 'bar' } },
    { retainKeysMap: { $retainKeys: ['name'], value: null } }), { retainKeysMap: { name: 'foo' } });
  // "retainKeys list of maps clears a field".
  assert.deepEqual(apply({ retainKeysMergingList: [{ name: 'bar' }, { name: 'foo', value: 'a', other: 'x' }] }, {
    '$setElementOrder/retainKeysMergingList': [{ name: 'bar' }, { name: 'foo' }],
    retainKeysMergingList: [{ $retainKeys: ['name', 'value'], name: 'foo' }],
  }), { retainKeysMergingList: [{ name: 'bar' }, { name: 'foo', value: 'a' }] });
});

test('directive keys never reach the result', () => {
  // A new list item and a replaced list are copied from the patch without their directives.
  const out = apply({ nonMergingList: [{ name: 1 }] }, {
    nonMergingList: [{ name: 2, $retainKeys: ['name'], '$setElementOrder/x': [1] }],
    mergingList: [{ name: 1, inner: { '$deleteFromPrimitiveList/y': [1], z: 1 } }],
  });
  assert.deepEqual(out, { nonMergingList: [{ name: 2 }], mergingList: [{ name: 1, inner: { z: 1 } }] });
});

// ---------------------------------------------------------------------------------------------
// Inputs are left alone
// ---------------------------------------------------------------------------------------------

test('inputs are never mutated and the result shares no structure with them', () => {
  const original = { metadata: { labels: { a: '1' }, finalizers: ['x'] }, data: { k: 'v' }, mergingList: [{ name: 1, v: 1 }] };
  const patch = { metadata: { labels: { b: '2' } }, mergingList: [{ name: 2, nested: { deep: true } }], list: [{ a: 1 }] };
  const origJson = JSON.stringify(original);
  const patchJson = JSON.stringify(patch);
  const out = strategicMergePatch(original, patch, META) as Record<string, any>;
  assert.equal(JSON.stringify(original), origJson);
  assert.equal(JSON.stringify(patch), patchJson);
  out.data.k = 'changed';
  out.metadata.finalizers.push('y');
  out.mergingList[0].nested.deep = false;
  out.list[0].a = 2;
  assert.equal(JSON.stringify(original), origJson);
  assert.equal(JSON.stringify(patch), patchJson);
  // Frozen inputs work too (apply() freezes both).
  assert.deepEqual(apply(original, patch), {
    metadata: { labels: { a: '1', b: '2' }, finalizers: ['x'] },
    data: { k: 'v' },
    mergingList: [{ name: 2, nested: { deep: true } }, { name: 1, v: 1 }],
    list: [{ a: 1 }],
  });
});

test('a __proto__ key is stored as data, not as a prototype', () => {
  const patch = JSON.parse('{"data":{"__proto__":{"polluted":true}}}');
  const out = strategicMergePatch({ data: {} }, patch, META) as { data: Record<string, unknown> };
  assert.equal(Object.getPrototypeOf(out.data), Object.prototype);
  assert.deepEqual(Object.keys(out.data), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

// ---------------------------------------------------------------------------------------------
// Invalid patches
// ---------------------------------------------------------------------------------------------

test('invalid patches are 400 BadRequest', () => {
  assertBadRequest(() => strategicMergePatch({}, [], META), /must be a JSON object/);
  assertBadRequest(() => strategicMergePatch({}, 'x', META), /must be a JSON object/);
  assertBadRequest(() => strategicMergePatch({}, null, META), /must be a JSON object/);
  assertBadRequest(() => strategicMergePatch([], {}, META), 'invalid JSON document');
  assertBadRequest(() => apply({ simpleMap: { a: 1 } }, { simpleMap: { $patch: 'foo' } }),
    'unknown patch type: foo in map: {"$patch":"foo"}');
  assertBadRequest(() => apply({ mergingList: [{ name: 1 }] }, { mergingList: [{ name: 1, $patch: 'foo' }] }),
    /^unknown patch type: foo in map/);
  assertBadRequest(() => apply({ mergingList: [{ name: 1 }] }, { mergingList: [{ $patch: 'merge' }] }),
    'merging lists cannot yet be specified in the patch');
  // "missing merge key should error out".
  assertBadRequest(() => apply({ mergingList: [{ name: 1, value: 'a' }] }, { mergingList: [{ value: 'b' }] }),
    'map: {"value":"b"} does not contain declared merge key: name');
  assertBadRequest(() => apply({ mergingList: [{ name: 1 }] }, { mergingList: [{ $patch: 'delete' }] }),
    /does not contain declared merge key: name/);
  // "should check if order in $setElementOrder and patch list match".
  assertBadRequest(() => apply({ mergingList: [{ name: 1 }, { name: 3 }, { name: 2 }] }, {
    '$setElementOrder/mergingList': [{ name: 1 }, { name: 2 }, { name: 3 }],
    mergingList: [{ name: 3, value: 3 }, { name: 1, value: 1 }],
  }), /doesn't match \$setElementOrder list/);
  assertBadRequest(() => apply({ mergingIntList: [1, 3, 2] }, {
    '$setElementOrder/mergingIntList': [1, 2, 3], mergingIntList: [3, 1],
  }), /doesn't match/);
  assertBadRequest(() => apply({ mergingIntList: [1] }, { '$setElementOrder/mergingIntList': 'x' }),
    'expected a []interface {}, but received a string');
  assertBadRequest(() => apply({ mergingIntList: [1] }, { $setElementOrdermergingIntList: [1] }),
    'invalid patch format of setElementOrder list');
  assertBadRequest(() => apply({ mergingIntList: [1] }, { $deleteFromPrimitiveListmergingIntList: [1] }),
    'invalid patch format of primitive list');
  assertBadRequest(() => apply({ retainKeysMap: { name: 'a' } }, { retainKeysMap: { $retainKeys: 'name' } }),
    'invalid patch format of retainKeys');
  assertBadRequest(() => apply({ retainKeysMap: { name: 'a' } }, { retainKeysMap: { $retainKeys: ['name'], value: 'v' } }),
    'invalid patch format of retainKeys');
  assertBadRequest(() => apply({ mergingIntList: [[1]] }, { mergingIntList: [[2]] }), 'lists of lists are not supported');
  assertBadRequest(() => apply({ mergingIntList: [1] }, { mergingIntList: ['a'] }), /^list element types are not identical/);
  assertBadRequest(() => apply({ mergingIntList: [1] }, { mergingIntList: [{ a: 1 }] }), /^list element types are not identical/);
  // A merging list of maps needs a merge key in the metadata.
  assertBadRequest(() => apply({ l: [{ a: 1 }] }, { l: [{ a: 2 }] }, { l: { strategy: 'merge' } }),
    'cannot merge lists without merge key for l');
});

// ---------------------------------------------------------------------------------------------
// Built-in metadata
// ---------------------------------------------------------------------------------------------

test('BUILTIN_PATCH_META covers the served kinds and always includes ObjectMeta', () => {
  const kinds = ['/Namespace', '/ConfigMap', '/Secret', '/ServiceAccount', '/Event', '/LimitRange', '/ResourceQuota',
    'events.k8s.io/Event', 'coordination.k8s.io/Lease', 'rbac.authorization.k8s.io/Role',
    'rbac.authorization.k8s.io/RoleBinding', 'rbac.authorization.k8s.io/ClusterRole',
    'rbac.authorization.k8s.io/ClusterRoleBinding', 'apiextensions.k8s.io/CustomResourceDefinition',
    'admissionregistration.k8s.io/ValidatingWebhookConfiguration', 'admissionregistration.k8s.io/MutatingWebhookConfiguration',
    'admissionregistration.k8s.io/ValidatingAdmissionPolicy', 'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
    'admissionregistration.k8s.io/MutatingAdmissionPolicy', 'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding'];
  assert.deepEqual(Object.keys(BUILTIN_PATCH_META).sort(), [...kinds].sort());
  for (const k of kinds) {
    assert.deepEqual(BUILTIN_PATCH_META[k]!['metadata.ownerReferences'], { strategy: 'merge', mergeKey: 'uid' }, k);
    assert.deepEqual(BUILTIN_PATCH_META[k]!['metadata.finalizers'], { strategy: 'merge' }, k);
  }
  assert.deepEqual(BUILTIN_PATCH_META['/ServiceAccount']!.secrets, { strategy: 'merge', mergeKey: 'name' });
  assert.deepEqual(BUILTIN_PATCH_META['/Namespace']!['status.conditions'], { strategy: 'merge', mergeKey: 'type' });
  assert.deepEqual(Object.keys(OBJECT_META_PATCH_META).sort(), ['metadata.finalizers', 'metadata.ownerReferences']);
});

test('ObjectMeta: ownerReferences merge by uid, finalizers merge, labels merge', () => {
  const cm = {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: 'cm', labels: { a: '1' }, finalizers: ['example.com/a'],
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p1', uid: 'u1' }],
    },
    data: { k: 'v' },
  };
  const out = apply(cm, {
    metadata: {
      labels: { a: null, b: '2' },
      finalizers: ['example.com/b'],
      ownerReferences: [
        { uid: 'u1', controller: true },
        { apiVersion: 'v1', kind: 'Pod', name: 'p2', uid: 'u2' },
      ],
    },
    data: { k2: 'v2' },
  }, BUILTIN_PATCH_META['/ConfigMap']);
  assert.deepEqual(out, {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name: 'cm', labels: { b: '2' }, finalizers: ['example.com/b', 'example.com/a'],
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Pod', name: 'p1', uid: 'u1', controller: true },
        { apiVersion: 'v1', kind: 'Pod', name: 'p2', uid: 'u2' },
      ],
    },
    data: { k: 'v', k2: 'v2' },
  });
  assertBadRequest(() => apply(cm, { metadata: { ownerReferences: [{ name: 'no-uid' }] } }, OBJECT_META_PATCH_META),
    /does not contain declared merge key: uid/);
});

test('ServiceAccount secrets merge by name; RBAC rules and subjects are replaced', () => {
  const sa = { metadata: { name: 'sa' }, secrets: [{ name: 's1' }], imagePullSecrets: [{ name: 'p1' }] };
  assert.deepEqual(apply(sa, { secrets: [{ name: 's2' }], imagePullSecrets: [{ name: 'p2' }] }, BUILTIN_PATCH_META['/ServiceAccount']),
    { metadata: { name: 'sa' }, secrets: [{ name: 's2' }, { name: 's1' }], imagePullSecrets: [{ name: 'p2' }] });

  const role = { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] };
  assert.deepEqual(apply(role, { rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] },
    BUILTIN_PATCH_META['rbac.authorization.k8s.io/Role']),
  { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] });

  const ns = { metadata: { name: 'n' }, status: { phase: 'Active', conditions: [{ type: 'A', status: 'True' }] } };
  assert.deepEqual(apply(ns, { status: { conditions: [{ type: 'A', status: 'False' }, { type: 'B', status: 'True' }] } },
    BUILTIN_PATCH_META['/Namespace']),
  { metadata: { name: 'n' }, status: { phase: 'Active', conditions: [{ type: 'A', status: 'False' }, { type: 'B', status: 'True' }] } });
});

test('custom resources: only ObjectMeta lists merge', () => {
  const cr = { metadata: { name: 'x', finalizers: ['a'] }, spec: { items: [{ name: 'a' }] } };
  assert.deepEqual(apply(cr, { metadata: { finalizers: ['b'] }, spec: { items: [{ name: 'b' }] } }, OBJECT_META_PATCH_META),
    { metadata: { name: 'x', finalizers: ['b', 'a'] }, spec: { items: [{ name: 'b' }] } });
});
