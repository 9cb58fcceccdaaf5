/**
 * Kubernetes API-machinery expectations that apply to a control plane without pods, as data:
 * each case names its upstream source (an e2e `It(…)` of kubernetes/kubernetes, an apiserver
 * integration test, or a rule of the Kubernetes API documentation) and checks the facts that
 * source expects over plain HTTPS. Nothing here is upstream code; only the expectations are
 * carried over. `NOT_APPLICABLE` lists the upstream conformance tests that cannot apply, and why.
 */
import type { Case, NotApplicable, Source } from './types.js';
import {
  PATCH, configMap, cr, createMany, crdBody, events, expect, expectEvents, expectStatus, makeCrd, microTime, pause, summarize, until,
} from './util.js';

const E2E = 'test/e2e/apimachinery';
const CONCEPTS = 'kubernetes/website content/en/docs/reference/using-api/api-concepts.md';
const CONVENTIONS = 'kubernetes/community contributors/devel/sig-architecture/api-conventions.md';
const src = (file: string, it: string): Source => ({ file, it });

const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';

/** ConfigMaps, Secrets, Namespaces, ServiceAccounts, Events, LimitRanges, Leases. */
const CORE: Case[] = [
  {
    id: 'configmap-lifecycle', area: 'core',
    source: src('test/e2e/common/node/configmap.go', 'should run through a ConfigMap lifecycle'),
    async check({ api, core, cluster }) {
      const labels = { 'test-configmap-static': 'true' };
      expectStatus(await api('POST', `${core}/configmaps`, configMap('lc', { valueName: 'value' }, labels)), 201, 'create');
      expectStatus(await api('GET', `${core}/configmaps/lc`), 200, 'get');
      const p = expectStatus(await api('PATCH', `${core}/configmaps/lc`, { metadata: { labels: { 'test-configmap': 'patched' } }, data: { valueName: 'value1' } }, PATCH.strategic), 200, 'patch');
      expect(p.json.data.valueName === 'value1' && p.json.metadata.labels['test-configmap-static'] === 'true' && p.json.metadata.labels['test-configmap'] === 'patched', `patched object: ${p.body}`);
      const all = expectStatus(await api('GET', `${cluster}/api/v1/configmaps?labelSelector=test-configmap-static%3Dtrue`), 200, 'list across namespaces');
      expect(all.json.items.some((i: any) => i.metadata.name === 'lc' && i.data.valueName === 'value1'), 'patched ConfigMap in the cross-namespace list');
      expectStatus(await api('DELETE', `${core}/configmaps?labelSelector=test-configmap-static%3Dtrue`), 200, 'deletecollection');
      const after = expectStatus(await api('GET', `${core}/configmaps?labelSelector=test-configmap-static%3Dtrue`), 200, 'list');
      expect(after.json.items.length === 0, `deleted by collection, still ${after.json.items.length}`);
    },
  },
  {
    id: 'configmap-empty-key', area: 'core',
    source: src('test/e2e/common/node/configmap.go', 'should fail to create ConfigMap with empty key'),
    async check({ api, core }) {
      const r = expectStatus(await api('POST', `${core}/configmaps`, configMap('empty', { '': 'value' })), 422, 'create');
      expect(r.json?.reason === 'Invalid', `reason ${r.json?.reason}`);
    },
  },
  {
    id: 'configmap-update', area: 'core',
    source: src('test/e2e/common/node/configmap.go', 'should update ConfigMap successfully'),
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/configmaps`, configMap('up', { k: 'v1' })), 201, 'create').json;
      const u = expectStatus(await api('PUT', `${core}/configmaps/up`, { ...c, data: { k: 'v2' } }), 200, 'update').json;
      expect(u.metadata.resourceVersion !== c.metadata.resourceVersion, 'resourceVersion changes on update');
      const g = expectStatus(await api('GET', `${core}/configmaps/up`), 200, 'get').json;
      expect(g.data.k === 'v2', `data after update: ${JSON.stringify(g.data)}`);
    },
  },
  {
    id: 'configmap-immutable', area: 'core',
    source: src('test/e2e/common/storage/configmap_volume.go', 'should be immutable if `immutable` field is set'),
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/configmaps`, { ...configMap('im', { k: 'v' }), immutable: true }), 201, 'create').json;
      expectStatus(await api('PUT', `${core}/configmaps/im`, { ...c, data: { k: 'changed' } }), 422, 'update data of an immutable ConfigMap');
      expectStatus(await api('PUT', `${core}/configmaps/im`, { ...c, immutable: false }), 422, 'unset immutable');
      expectStatus(await api('PATCH', `${core}/configmaps/im`, { data: { k: 'x' } }, PATCH.merge), 422, 'patch data');
      expectStatus(await api('PATCH', `${core}/configmaps/im`, { metadata: { labels: { ok: 'yes' } } }, PATCH.merge), 200, 'metadata stays mutable');
      expectStatus(await api('DELETE', `${core}/configmaps/im`), 200, 'delete');
    },
  },
  {
    id: 'secret-patch', area: 'core',
    source: src('test/e2e/common/node/secrets.go', 'should patch a secret'),
    async check({ api, core, cluster }) {
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      expectStatus(await api('POST', `${core}/secrets`, { metadata: { name: 'sp', labels: { 'testsecret-constant': 'true' } }, type: 'Opaque', data: { key: b64('value') } }), 201, 'create');
      const all = expectStatus(await api('GET', `${cluster}/api/v1/secrets?labelSelector=testsecret-constant%3Dtrue`), 200, 'list all namespaces');
      expect(all.json.items.some((s: any) => s.metadata.name === 'sp'), 'listed');
      const p = expectStatus(await api('PATCH', `${core}/secrets/sp`, { metadata: { labels: { testsecret: 'true' } }, data: { key: b64('value1') } }, PATCH.strategic), 200, 'patch').json;
      expect(Buffer.from(p.data.key, 'base64').toString() === 'value1' && p.metadata.labels.testsecret === 'true', `patched: ${JSON.stringify(p)}`);
      const sd = expectStatus(await api('PATCH', `${core}/secrets/sp`, { stringData: { other: 'plain' } }, PATCH.merge), 200, 'stringData').json;
      expect(sd.data.other === b64('plain') && sd.stringData === undefined, 'stringData is merged into data and not stored');
      expectStatus(await api('DELETE', `${core}/secrets?labelSelector=testsecret-constant%3Dtrue`), 200, 'deletecollection');
      expect((await api('GET', `${core}/secrets?labelSelector=testsecret-constant%3Dtrue`)).json.items.length === 0, 'deleted');
    },
  },
  {
    id: 'secret-empty-key', area: 'core',
    source: src('test/e2e/common/node/secrets.go', 'should fail to create secret due to empty secret key'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/secrets`, { metadata: { name: 'empty' }, data: { '': 'dmFsdWUtMQo=' } }), 422, 'create');
    },
  },
  {
    id: 'secret-immutable', area: 'core',
    source: src('test/e2e/common/storage/secrets_volume.go', 'should be immutable if `immutable` field is set'),
    async check({ api, core }) {
      const s = expectStatus(await api('POST', `${core}/secrets`, { metadata: { name: 'im' }, data: { k: 'dg==' }, immutable: true }), 201, 'create').json;
      expectStatus(await api('PUT', `${core}/secrets/im`, { ...s, data: { k: 'eA==' } }), 422, 'update data');
      expectStatus(await api('PUT', `${core}/secrets/im`, { ...s, immutable: false }), 422, 'unset immutable');
      expectStatus(await api('DELETE', `${core}/secrets/im`), 200, 'delete');
    },
  },
  {
    id: 'namespace-patch', area: 'core',
    source: src(`${E2E}/namespace.go`, 'should patch a Namespace'),
    async check({ api, cluster, uid }) {
      const name = `np-${uid}`;
      expectStatus(await api('POST', `${cluster}/api/v1/namespaces`, { metadata: { name } }), 201, 'create');
      try {
        expectStatus(await api('PATCH', `${cluster}/api/v1/namespaces/${name}`, { metadata: { labels: { testLabel: 'testValue' } } }, PATCH.strategic), 200, 'patch');
        const g = expectStatus(await api('GET', `${cluster}/api/v1/namespaces/${name}`), 200, 'get').json;
        expect(g.metadata.labels?.testLabel === 'testValue', `labels ${JSON.stringify(g.metadata.labels)}`);
      } finally { await api('DELETE', `${cluster}/api/v1/namespaces/${name}`); }
    },
  },
  {
    id: 'namespace-update', area: 'core',
    source: src(`${E2E}/namespace.go`, 'should apply an update to a Namespace'),
    async check({ api, cluster, ns }) {
      const g = expectStatus(await api('GET', `${cluster}/api/v1/namespaces/${ns}`), 200, 'get').json;
      const u = expectStatus(await api('PUT', `${cluster}/api/v1/namespaces/${ns}`, { ...g, metadata: { ...g.metadata, labels: { ...g.metadata.labels, 'e2e-ns-update': 'updated' } } }), 200, 'update').json;
      expect(u.metadata.labels['e2e-ns-update'] === 'updated', 'label updated');
    },
  },
  {
    id: 'namespace-status', area: 'core',
    source: src(`${E2E}/namespace.go`, 'should apply changes to a namespace status'),
    async check({ api, cluster, ns }) {
      const path = `${cluster}/api/v1/namespaces/${ns}/status`;
      const g = expectStatus(await api('GET', path), 200, 'get status').json;
      expect(g.kind === 'Namespace' && g.status?.phase === 'Active', `status: ${JSON.stringify(g.status)}`);
      const cond = { type: 'StatusPatch', status: 'True', reason: 'E2E', message: 'Patched by an e2e test' };
      const p = expectStatus(await api('PATCH', path, { status: { conditions: [cond] } }, PATCH.strategic), 200, 'patch status').json;
      expect(p.status.conditions?.some((c: any) => c.type === 'StatusPatch' && c.reason === 'E2E'), `conditions after patch: ${JSON.stringify(p.status)}`);
      const upd = { ...p, status: { ...p.status, conditions: [...p.status.conditions, { type: 'StatusUpdate', status: 'True', reason: 'E2E', message: 'Set from an e2e test' }] } };
      const u = expectStatus(await api('PUT', path, upd), 200, 'update status').json;
      expect(u.status.conditions.some((c: any) => c.type === 'StatusUpdate'), 'condition set by status update');
    },
  },
  {
    id: 'namespace-finalizer', area: 'core',
    source: src(`${E2E}/namespace.go`, 'should apply a finalizer to a Namespace'),
    async check({ api, cluster, ns }) {
      const g = expectStatus(await api('GET', `${cluster}/api/v1/namespaces/${ns}`), 200, 'get').json;
      const fin = 'e2e.example.com/fakeFinalizer';
      const body = { ...g, spec: { finalizers: [...(g.spec?.finalizers ?? []), fin] } };
      const u = expectStatus(await api('PUT', `${cluster}/api/v1/namespaces/${ns}/finalize`, body), 200, 'finalize').json;
      expect(u.spec.finalizers.includes(fin), `finalizers ${JSON.stringify(u.spec.finalizers)}`);
      const back = expectStatus(await api('PUT', `${cluster}/api/v1/namespaces/${ns}/finalize`, { ...u, spec: { finalizers: u.spec.finalizers.filter((f: string) => f !== fin) } }), 200, 'remove finalizer').json;
      expect(!back.spec.finalizers?.includes(fin), 'finalizer removed');
    },
  },
  {
    id: 'namespace-delete-contents', area: 'core',
    source: src(`${E2E}/namespace.go`, 'should ensure that all services are removed when a namespace is deleted'),
    note: 'ConfigMaps, Secrets and ServiceAccounts stand in for the Service (not served)',
    async check({ api, cluster, uid }) {
      const name = `nd-${uid}`;
      const nsPath = `${cluster}/api/v1/namespaces/${name}`;
      expectStatus(await api('POST', `${cluster}/api/v1/namespaces`, { metadata: { name } }), 201, 'create namespace');
      expectStatus(await api('POST', `${nsPath}/configmaps`, configMap('c')), 201, 'configmap');
      expectStatus(await api('POST', `${nsPath}/secrets`, { metadata: { name: 's' }, stringData: { a: 'b' } }), 201, 'secret');
      expectStatus(await api('POST', `${nsPath}/serviceaccounts`, { metadata: { name: 'sa' } }), 201, 'serviceaccount');
      const d = expectStatus(await api('DELETE', nsPath), 200, 'delete namespace').json;
      expect(d.status?.phase === 'Terminating' || d.kind === 'Status', `delete answer: ${JSON.stringify(d).slice(0, 200)}`);
      await until('namespace gone', async () => (await api('GET', nsPath)).status === 404, 20_000);
      for (const p of ['configmaps/c', 'secrets/s', 'serviceaccounts/sa']) expectStatus(await api('GET', `${nsPath}/${p}`), 404, `${p} after namespace deletion`);
      expectStatus(await api('POST', `${cluster}/api/v1/namespaces`, { metadata: { name } }), 201, 'recreate namespace');
      const l = expectStatus(await api('GET', `${nsPath}/configmaps?fieldSelector=metadata.name%3Dc`), 200, 'list in recreated namespace').json;
      expect(l.items.length === 0, 'recreated namespace starts empty');
      await api('DELETE', nsPath);
    },
  },
  {
    id: 'serviceaccount-lifecycle', area: 'core',
    source: src('test/e2e/auth/service_accounts.go', 'should run through the lifecycle of a ServiceAccount'),
    async check({ api, core, cluster, watch }) {
      const w = watch(`${core}/serviceaccounts?watch=true&labelSelector=test-serviceaccount-static%3Dtrue`);
      try {
        await w.status;
        expectStatus(await api('POST', `${core}/serviceaccounts`, { metadata: { name: 'lsa', labels: { 'test-serviceaccount-static': 'true' } } }), 201, 'create');
        const p = expectStatus(await api('PATCH', `${core}/serviceaccounts/lsa`, { metadata: { labels: { 'test-serviceaccount': 'patched' } }, automountServiceAccountToken: false }, PATCH.strategic), 200, 'patch').json;
        expect(p.automountServiceAccountToken === false, 'patched automountServiceAccountToken');
        const l = expectStatus(await api('GET', `${cluster}/api/v1/serviceaccounts?labelSelector=test-serviceaccount-static%3Dtrue`), 200, 'list').json;
        expect(l.items.some((i: any) => i.metadata.name === 'lsa' && i.metadata.labels['test-serviceaccount'] === 'patched'), 'listed with the patch');
        expectStatus(await api('DELETE', `${core}/serviceaccounts?labelSelector=test-serviceaccount-static%3Dtrue`), 200, 'deletecollection');
        await expectEvents(w, ['ADDED', 'MODIFIED', 'DELETED']);
      } finally { w.close(); }
    },
  },
  {
    id: 'serviceaccount-update', area: 'core',
    source: src('test/e2e/auth/service_accounts.go', 'should update a ServiceAccount'),
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/serviceaccounts`, { metadata: { name: 'usa' } }), 201, 'create').json;
      const u = expectStatus(await api('PUT', `${core}/serviceaccounts/usa`, { ...c, automountServiceAccountToken: true, metadata: { ...c.metadata, labels: { updated: 'true' } } }), 200, 'update').json;
      expect(u.automountServiceAccountToken === true && u.metadata.labels.updated === 'true', 'updated');
    },
  },
  {
    id: 'serviceaccount-root-ca', area: 'core',
    source: src('test/e2e/auth/service_accounts.go', 'should guarantee kube-root-ca.crt exist in any namespace'),
    async check({ api, core }) {
      const path = `${core}/configmaps/kube-root-ca.crt`;
      await until('kube-root-ca.crt created', async () => (await api('GET', path)).json?.data?.['ca.crt']?.includes('BEGIN CERTIFICATE'));
      expectStatus(await api('DELETE', path), 200, 'delete');
      await until('kube-root-ca.crt recreated', async () => (await api('GET', path)).status === 200);
      expectStatus(await api('PATCH', path, { data: { 'ca.crt': 'changed' } }, PATCH.merge), 200, 'modify');
      await until('kube-root-ca.crt reconciled', async () => (await api('GET', path)).json?.data?.['ca.crt']?.includes('BEGIN CERTIFICATE'));
    },
  },
  {
    id: 'event-lifecycle', area: 'core',
    source: src('test/e2e/instrumentation/core_events.go', 'should manage the lifecycle of an event'),
    async check({ api, core, cluster, ns }) {
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const ev = { metadata: { name: 'ev', labels: { 'testevent-constant': 'true' } }, involvedObject: { kind: 'Pod', namespace: ns, name: 'p' }, reason: 'Test', message: 'This is a test event', type: 'Normal', source: { component: 'conformance' }, count: 1, firstTimestamp: now, lastTimestamp: now };
      expectStatus(await api('POST', `${core}/events`, ev), 201, 'create');
      const l = expectStatus(await api('GET', `${cluster}/api/v1/events?labelSelector=testevent-constant%3Dtrue`), 200, 'list all namespaces').json;
      expect(l.items.some((i: any) => i.metadata.name === 'ev'), 'listed');
      const p = expectStatus(await api('PATCH', `${core}/events/ev`, { message: 'This is a test event - patched' }, PATCH.strategic), 200, 'patch').json;
      expect(p.message === 'This is a test event - patched', 'patched');
      const u = expectStatus(await api('PUT', `${core}/events/ev`, { ...p, series: { count: 100, lastObservedTime: microTime() } }), 200, 'update').json;
      expect(u.series?.count === 100, 'series updated');
      expectStatus(await api('DELETE', `${core}/events/ev`), 200, 'delete');
      expectStatus(await api('GET', `${core}/events/ev`), 404, 'get deleted');
    },
  },
  {
    id: 'event-deletecollection', area: 'core',
    source: src('test/e2e/instrumentation/core_events.go', 'should delete a collection of events'),
    async check({ api, core, ns }) {
      for (const n of ['e1', 'e2', 'e3']) {
        expectStatus(await api('POST', `${core}/events`, { metadata: { name: n, labels: { 'testevent-set': 'true' } }, involvedObject: { kind: 'Pod', namespace: ns, name: 'p' }, reason: 'Test', message: n, type: 'Normal' }), 201, `create ${n}`);
      }
      expect((await api('GET', `${core}/events?labelSelector=testevent-set%3Dtrue`)).json.items.length === 3, 'three events');
      expectStatus(await api('DELETE', `${core}/events?labelSelector=testevent-set%3Dtrue`), 200, 'deletecollection');
      expect((await api('GET', `${core}/events?labelSelector=testevent-set%3Dtrue`)).json.items.length === 0, 'none left');
    },
  },
  {
    id: 'eventsv1-lifecycle', area: 'core',
    source: src('test/e2e/instrumentation/events.go', 'should manage the lifecycle of an event'),
    async check({ api, cluster, ns }) {
      const base = `${cluster}/apis/events.k8s.io/v1/namespaces/${ns}/events`;
      const ev = { metadata: { name: 'ev1', labels: { 'testevent-constant': 'true' } }, eventTime: microTime(), reportingController: 'test-controller', reportingInstance: 'test-node', action: 'Do', reason: 'Test', type: 'Normal', regarding: { kind: 'Pod', namespace: ns, name: 'p' }, note: 'This is a test event' };
      expectStatus(await api('POST', base, ev), 201, 'create');
      const l = expectStatus(await api('GET', `${cluster}/apis/events.k8s.io/v1/events?labelSelector=testevent-constant%3Dtrue`), 200, 'list all namespaces').json;
      expect(l.items.some((i: any) => i.metadata.name === 'ev1' && i.note === 'This is a test event'), 'listed in events.k8s.io/v1 form');
      const p = expectStatus(await api('PATCH', `${base}/ev1`, { note: 'This is a test event - patched' }, PATCH.merge), 200, 'patch').json;
      expect(p.note === 'This is a test event - patched', 'patched');
      const core = expectStatus(await api('GET', `${cluster}/api/v1/namespaces/${ns}/events/ev1`), 200, 'the same event in core/v1').json;
      expect(core.message === 'This is a test event - patched', `core/v1 message: ${core.message}`);
      expectStatus(await api('DELETE', `${base}/ev1`), 200, 'delete');
      expectStatus(await api('GET', `${base}/ev1`), 404, 'get deleted');
    },
  },
  {
    id: 'eventsv1-deletecollection', area: 'core',
    source: src('test/e2e/instrumentation/events.go', 'should delete a collection of events'),
    async check({ api, cluster, ns }) {
      const base = `${cluster}/apis/events.k8s.io/v1/namespaces/${ns}/events`;
      for (const n of ['a', 'b', 'c']) {
        expectStatus(await api('POST', base, { metadata: { name: n, labels: { 'testevent-set': 'true' } }, eventTime: microTime(), reportingController: 'test-controller', reportingInstance: 'test-node', action: 'Do', reason: 'Test', type: 'Normal', regarding: { kind: 'Pod', namespace: ns, name: 'p' }, note: n }), 201, `create ${n}`);
      }
      expectStatus(await api('DELETE', `${base}?labelSelector=testevent-set%3Dtrue`), 200, 'deletecollection');
      expect((await api('GET', `${base}?labelSelector=testevent-set%3Dtrue`)).json.items.length === 0, 'none left');
    },
  },
  {
    id: 'limitrange-collection', area: 'core',
    source: src('test/e2e/scheduling/limit_range.go', 'should list, patch and delete a LimitRange by collection'),
    async check({ api, core, cluster }) {
      const lr = (name: string) => ({ metadata: { name, labels: { 'e2e-limitrange': 'lr' } }, spec: { limits: [{ type: 'Container', default: { cpu: '500m', memory: '500Mi' }, defaultRequest: { cpu: '100m', memory: '100Mi' }, max: { cpu: '1' } }] } });
      expectStatus(await api('POST', `${core}/limitranges`, lr('lr1')), 201, 'create lr1');
      expectStatus(await api('POST', `${core}/limitranges`, lr('lr2')), 201, 'create lr2');
      const l = expectStatus(await api('GET', `${cluster}/api/v1/limitranges?labelSelector=e2e-limitrange%3Dlr`), 200, 'list').json;
      expect(l.items.filter((i: any) => i.metadata.name.startsWith('lr')).length >= 2, 'both listed');
      const p = expectStatus(await api('PATCH', `${core}/limitranges/lr1`, { metadata: { labels: { 'e2e-patched': 'true' } }, spec: { limits: [{ type: 'Container', default: { cpu: '300m' } }] } }, PATCH.strategic), 200, 'patch').json;
      expect(p.metadata.labels['e2e-patched'] === 'true', 'patched');
      expectStatus(await api('DELETE', `${core}/limitranges?labelSelector=e2e-patched%3Dtrue`), 200, 'deletecollection');
      const left = (await api('GET', `${core}/limitranges`)).json.items.map((i: any) => i.metadata.name);
      expect(JSON.stringify(left) === '["lr2"]', `left: ${left}`);
    },
  },
  {
    id: 'lease-api', area: 'core',
    source: src('test/e2e/common/node/lease.go', 'lease API should be available'),
    async check({ api, cluster, ns }) {
      const base = `${cluster}/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
      const c = expectStatus(await api('POST', base, { metadata: { name: 'l1', labels: { 'lease-test': 'true' } }, spec: { holderIdentity: 'holder', leaseDurationSeconds: 30, acquireTime: microTime(), renewTime: microTime(), leaseTransitions: 0 } }), 201, 'create').json;
      const u = expectStatus(await api('PUT', `${base}/l1`, { ...c, spec: { ...c.spec, holderIdentity: 'holder2', leaseTransitions: 1 } }), 200, 'update').json;
      expect(u.spec.holderIdentity === 'holder2', 'updated');
      const p = expectStatus(await api('PATCH', `${base}/l1`, { spec: { holderIdentity: 'holder3' } }, PATCH.strategic), 200, 'patch').json;
      expect(p.spec.holderIdentity === 'holder3' && p.spec.leaseTransitions === 1, 'patched');
      expectStatus(await api('POST', base, { metadata: { name: 'l2', labels: { 'lease-test': 'true' } }, spec: {} }), 201, 'create l2');
      expect((await api('GET', `${cluster}/apis/coordination.k8s.io/v1/leases?labelSelector=lease-test%3Dtrue`)).json.items.length >= 2, 'listed');
      expectStatus(await api('DELETE', `${base}?labelSelector=lease-test%3Dtrue`), 200, 'deletecollection');
      expect((await api('GET', base)).json.items.length === 0, 'none left');
    },
  },
];

/** Generic REST semantics: concurrency, patches, selectors, errors, dry-run, finalizers. */
const REST: Case[] = [
  {
    id: 'update-stale-resourceversion-conflict', area: 'rest',
    source: src(CONVENTIONS, 'Concurrency Control and Consistency'),
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/configmaps`, configMap('occ', { v: '0' })), 201, 'create').json;
      expectStatus(await api('PUT', `${core}/configmaps/occ`, { ...c, data: { v: '1' } }), 200, 'update at the current resourceVersion');
      const stale = expectStatus(await api('PUT', `${core}/configmaps/occ`, { ...c, data: { v: 'stale' } }), 409, 'update at a stale resourceVersion');
      expect(stale.json?.reason === 'Conflict' && stale.json?.kind === 'Status', `409 body: ${stale.body}`);
      const { resourceVersion: _rv, ...meta } = c.metadata;
      expectStatus(await api('PUT', `${core}/configmaps/occ`, { ...c, metadata: meta, data: { v: '2' } }), 200, 'unconditional update (no resourceVersion)');
      expect((await api('GET', `${core}/configmaps/occ`)).json.data.v === '2', 'last write wins');
    },
  },
  {
    id: 'create-conflict-and-notfound-status', area: 'rest',
    source: src(CONVENTIONS, 'HTTP Status codes'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('dup')), 201, 'create');
      const d = expectStatus(await api('POST', `${core}/configmaps`, configMap('dup')), 409, 'create again');
      expect(d.json.reason === 'AlreadyExists' && d.json.details?.name === 'dup' && d.json.details?.kind === 'configmaps', `409 body: ${d.body}`);
      const n = expectStatus(await api('GET', `${core}/configmaps/missing`), 404, 'get missing');
      expect(n.json.kind === 'Status' && n.json.reason === 'NotFound' && n.json.details?.name === 'missing', `404 body: ${n.body}`);
      expectStatus(await api('DELETE', `${core}/configmaps/missing`), 404, 'delete missing');
      expectStatus(await api('PUT', `${core}/configmaps/other`, configMap('dup')), 400, 'name in body differs from the URL');
    },
  },
  {
    id: 'patch-json', area: 'rest',
    source: src(CONCEPTS, 'Patch (JSON Patch, RFC 6902)'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('jp', { a: '1', b: '2' })), 201, 'create');
      const p = expectStatus(await api('PATCH', `${core}/configmaps/jp`, [{ op: 'add', path: '/data/c', value: '3' }, { op: 'replace', path: '/data/a', value: 'x' }, { op: 'remove', path: '/data/b' }], PATCH.json), 200, 'json patch').json;
      expect(JSON.stringify(p.data) === JSON.stringify({ a: 'x', c: '3' }), `data ${JSON.stringify(p.data)}`);
      const t = await api('PATCH', `${core}/configmaps/jp`, [{ op: 'test', path: '/data/a', value: 'nope' }, { op: 'replace', path: '/data/a', value: 'y' }], PATCH.json);
      expect(t.status >= 400 && t.status < 500, `failing test op answered ${t.status}`);
      expect((await api('GET', `${core}/configmaps/jp`)).json.data.a === 'x', 'a failed test op changes nothing');
    },
  },
  {
    id: 'patch-merge', area: 'rest',
    source: src(CONCEPTS, 'Patch (JSON Merge Patch, RFC 7386)'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('mp', { a: '1', b: '2' }, { keep: 'me', drop: 'me' })), 201, 'create');
      const p = expectStatus(await api('PATCH', `${core}/configmaps/mp`, { metadata: { labels: { drop: null, add: 'x' } }, data: { b: null, c: '3' } }, PATCH.merge), 200, 'merge patch').json;
      expect(JSON.stringify(p.data) === JSON.stringify({ a: '1', c: '3' }), `data ${JSON.stringify(p.data)}`);
      expect(JSON.stringify(p.metadata.labels) === JSON.stringify({ add: 'x', keep: 'me' }) || JSON.stringify(Object.keys(p.metadata.labels).sort()) === '["add","keep"]', `labels ${JSON.stringify(p.metadata.labels)}`);
      expectStatus(await api('PATCH', `${core}/configmaps/mp`, '{"data":', PATCH.merge), 400, 'malformed patch');
    },
  },
  {
    id: 'patch-strategic', area: 'rest',
    source: src(CONCEPTS, 'Patch (Strategic Merge Patch)'),
    async check({ api, cluster, ns }) {
      const base = `${cluster}/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`;
      expectStatus(await api('POST', base, { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] }), 201, 'create role');
      const p = expectStatus(await api('PATCH', base + '/r', { metadata: { labels: { a: 'b' } }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] }, PATCH.strategic), 200, 'strategic patch').json;
      // Role.rules has no patch strategy: the list is replaced; maps merge.
      expect(p.rules.length === 1 && p.rules[0].resources[0] === 'secrets' && p.metadata.labels.a === 'b', `patched role: ${JSON.stringify(p)}`);
      const d = expectStatus(await api('PATCH', base + '/r', { metadata: { labels: { a: null } } }, PATCH.strategic), 200, 'strategic null deletes').json;
      expect(!d.metadata.labels?.a, 'label removed');
    },
  },
  {
    id: 'list-label-selectors', area: 'rest',
    source: src('kubernetes/website content/en/docs/concepts/overview/working-with-objects/labels.md', 'Label selectors (equality-based and set-based)'),
    async check({ api, core }) {
      const mk = async (n: string, l: Record<string, string>) => expectStatus(await api('POST', `${core}/configmaps`, configMap(n, {}, l)), 201, n);
      await mk('l1', { app: 'web', tier: 'front' }); await mk('l2', { app: 'web', tier: 'back' }); await mk('l3', { app: 'db' });
      const names = async (sel: string) => {
        const r = expectStatus(await api('GET', `${core}/configmaps?labelSelector=${encodeURIComponent(sel)}`), 200, sel);
        return r.json.items.map((i: any) => i.metadata.name).filter((n: string) => /^l\d$/.test(n)).sort().join(',');
      };
      const cases: [string, string][] = [['app=web', 'l1,l2'], ['app==web,tier!=back', 'l1'], ['app in (web,db),tier notin (back)', 'l1,l3'], ['!tier', 'l3'], ['tier', 'l1,l2'], ['app', 'l1,l2,l3']];
      for (const [sel, want] of cases) { const got = await names(sel); expect(got === want, `${sel}: ${got} (want ${want})`); }
      expectStatus(await api('GET', `${core}/configmaps?labelSelector=${encodeURIComponent('app in (')}`), 400, 'malformed selector');
    },
  },
  {
    id: 'list-field-selectors', area: 'rest',
    source: src('kubernetes/website content/en/docs/concepts/overview/working-with-objects/field-selectors.md', 'Supported fields; Supported operators'),
    async check({ api, core, cluster, ns }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('f1')), 201, 'f1');
      expectStatus(await api('POST', `${core}/configmaps`, configMap('f2')), 201, 'f2');
      expectStatus(await api('POST', `${core}/secrets`, { metadata: { name: 'tls' }, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } }), 201, 'tls secret');
      expectStatus(await api('POST', `${core}/secrets`, { metadata: { name: 'op' }, type: 'Opaque' }), 201, 'opaque secret');
      const names = async (p: string) => expectStatus(await api('GET', p), 200, p).json.items.map((i: any) => i.metadata.name).sort().join(',');
      expect(await names(`${core}/configmaps?fieldSelector=metadata.name%3Df2`) === 'f2', 'metadata.name=');
      expect((await names(`${core}/configmaps?fieldSelector=metadata.name!%3Df2`)).split(',').includes('f1'), 'metadata.name!=');
      expect(await names(`${cluster}/api/v1/configmaps?fieldSelector=${encodeURIComponent(`metadata.namespace=${ns},metadata.name=f1`)}`) === 'f1', 'metadata.namespace across namespaces');
      expect(await names(`${core}/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls`) === 'tls', 'secret type');
      const bad = expectStatus(await api('GET', `${core}/configmaps?fieldSelector=spec.foo%3D1`), 400, 'unsupported field');
      expect(/field label not supported/.test(bad.json?.message ?? ''), bad.body);
    },
  },
  {
    id: 'dry-run-never-persists', area: 'rest',
    source: src(CONCEPTS, 'Dry-run'),
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/configmaps?dryRun=All`, configMap('dr')), 201, 'dry-run create').json;
      expect(c.metadata.name === 'dr' && c.metadata.uid, 'dry-run create answers the object it would create');
      expectStatus(await api('GET', `${core}/configmaps/dr`), 404, 'not persisted');
      const real = expectStatus(await api('POST', `${core}/configmaps`, configMap('dr', { v: '1' })), 201, 'create').json;
      const u = expectStatus(await api('PUT', `${core}/configmaps/dr?dryRun=All`, { ...real, data: { v: '2' } }), 200, 'dry-run update').json;
      expect(u.data.v === '2', 'dry-run update answers the new object');
      expectStatus(await api('PATCH', `${core}/configmaps/dr?dryRun=All`, { data: { v: '3' } }, PATCH.merge), 200, 'dry-run patch');
      expectStatus(await api('DELETE', `${core}/configmaps/dr?dryRun=All`), 200, 'dry-run delete');
      expectStatus(await api('DELETE', `${core}/configmaps?dryRun=All`), 200, 'dry-run deletecollection');
      const g = expectStatus(await api('GET', `${core}/configmaps/dr`), 200, 'still there').json;
      expect(g.data.v === '1' && g.metadata.resourceVersion === real.metadata.resourceVersion, 'unchanged by dry runs');
      expectStatus(await api('POST', `${core}/configmaps?dryRun=Bogus`, configMap('x')), 400, 'unknown dryRun value');
    },
  },
  {
    id: 'finalizers-deletion-timestamp', area: 'rest',
    source: src('kubernetes/website content/en/docs/concepts/overview/working-with-objects/finalizers.md', 'How finalizers work'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/configmaps`, { ...configMap('fin'), metadata: { name: 'fin', finalizers: ['example.com/hold'] } }), 201, 'create');
      const d = expectStatus(await api('DELETE', `${core}/configmaps/fin`), [200, 202], 'delete');
      expect(d.json.metadata?.deletionTimestamp, `delete answers the object with deletionTimestamp: ${d.body.slice(0, 300)}`);
      const g = expectStatus(await api('GET', `${core}/configmaps/fin`), 200, 'still readable').json;
      expect(g.metadata.deletionTimestamp && g.metadata.deletionGracePeriodSeconds === 0, `deletion fields: ${JSON.stringify(g.metadata)}`);
      expectStatus(await api('PATCH', `${core}/configmaps/fin`, { metadata: { finalizers: ['example.com/hold', 'example.com/new'] } }, PATCH.merge), 422, 'no new finalizers while deleting');
      expectStatus(await api('PATCH', `${core}/configmaps/fin`, { metadata: { labels: { still: 'writable' } } }, PATCH.merge), 200, 'other writes allowed');
      expectStatus(await api('PATCH', `${core}/configmaps/fin`, { metadata: { finalizers: null } }, PATCH.merge), 200, 'remove finalizer');
      await until('object gone once its finalizers are', async () => (await api('GET', `${core}/configmaps/fin`)).status === 404);
    },
  },
  {
    id: 'resourceversion-semantics', area: 'rest',
    source: src('test/integration/apiserver/apply/apply_test.go', 'TestNoOpUpdateSameResourceVersion'),
    note: 'plus: every write changes resourceVersion; list resourceVersion is not older than the last write',
    async check({ api, core }) {
      const c = expectStatus(await api('POST', `${core}/configmaps`, configMap('rv')), 201, 'create').json;
      const same = expectStatus(await api('PUT', `${core}/configmaps/rv`, c), 200, 'no-op update').json;
      expect(same.metadata.resourceVersion === c.metadata.resourceVersion, `a no-op update keeps resourceVersion (${c.metadata.resourceVersion} → ${same.metadata.resourceVersion})`);
      const p = expectStatus(await api('PATCH', `${core}/configmaps/rv`, { data: { a: '1' } }, PATCH.merge), 200, 'no-op patch').json;
      expect(p.metadata.resourceVersion === c.metadata.resourceVersion, 'a no-op patch keeps resourceVersion');
      const w = expectStatus(await api('PATCH', `${core}/configmaps/rv`, { data: { a: '2' } }, PATCH.merge), 200, 'patch').json;
      expect(w.metadata.resourceVersion !== c.metadata.resourceVersion, 'a change gets a new resourceVersion');
      const l = expectStatus(await api('GET', `${core}/configmaps`), 200, 'list').json;
      expect(BigInt(l.metadata.resourceVersion) >= BigInt(w.metadata.resourceVersion), 'list is at least as new as the last write');
      expectStatus(await api('GET', `${core}/configmaps?resourceVersion=abc`), 400, 'malformed resourceVersion');
    },
  },
];

/** Watch semantics (watch.go and the API concepts). */
const WATCH: Case[] = [
  {
    id: 'watch-multiple-watchers', area: 'watch',
    source: src(`${E2E}/watch.go`, 'should observe add, update, and delete watch notifications on configmaps'),
    async check({ api, core, watch }) {
      const sel = (v: string) => `${core}/configmaps?watch=true&labelSelector=${encodeURIComponent(v)}`;
      const wA = watch(sel('watch-this-configmap=multiple-watchers-A'));
      const wB = watch(sel('watch-this-configmap=multiple-watchers-B'));
      const wAB = watch(sel('watch-this-configmap in (multiple-watchers-A,multiple-watchers-B)'));
      try {
        await Promise.all([wA.status, wB.status, wAB.status]);
        const L = (v: string) => ({ 'watch-this-configmap': v });
        expectStatus(await api('POST', `${core}/configmaps`, configMap('a', {}, L('multiple-watchers-A'))), 201, 'create A');
        for (const v of ['1', '2']) expectStatus(await api('PATCH', `${core}/configmaps/a`, { data: { mutation: v } }, PATCH.merge), 200, 'modify A');
        expectStatus(await api('DELETE', `${core}/configmaps/a`), 200, 'delete A');
        expectStatus(await api('POST', `${core}/configmaps`, configMap('b', {}, L('multiple-watchers-B'))), 201, 'create B');
        expectStatus(await api('DELETE', `${core}/configmaps/b`), 200, 'delete B');
        await expectEvents(wA, ['ADDED a', 'MODIFIED a', 'MODIFIED a', 'DELETED a'], 0);
        await expectEvents(wB, ['ADDED b', 'DELETED b'], 0);
        await expectEvents(wAB, ['ADDED a', 'MODIFIED a', 'MODIFIED a', 'DELETED a', 'ADDED b', 'DELETED b']);
        expect(wAB.events[2].object.data.mutation === '2', 'MODIFIED carries the new state');
      } finally { wA.close(); wB.close(); wAB.close(); }
    },
  },
  {
    id: 'watch-from-resourceversion', area: 'watch',
    source: src(`${E2E}/watch.go`, 'should be able to start watching from a specific resource version'),
    async check({ api, core, watch }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('rv')), 201, 'create');
      const first = expectStatus(await api('PATCH', `${core}/configmaps/rv`, { data: { mutation: '1' } }, PATCH.merge), 200, 'update 1').json;
      const second = expectStatus(await api('PATCH', `${core}/configmaps/rv`, { data: { mutation: '2' } }, PATCH.merge), 200, 'update 2').json;
      expectStatus(await api('DELETE', `${core}/configmaps/rv`), 200, 'delete');
      const w = watch(`${core}/configmaps?watch=true&resourceVersion=${first.metadata.resourceVersion}`);
      try {
        await expectEvents(w, ['MODIFIED', 'DELETED']);
        expect(w.events[0].object.metadata.resourceVersion === second.metadata.resourceVersion && w.events[0].object.data.mutation === '2', 'the MODIFIED of update 2');
      } finally { w.close(); }
    },
  },
  {
    id: 'watch-restart-from-last-seen', area: 'watch',
    source: src(`${E2E}/watch.go`, 'should be able to restart watching from the last resource version observed by the previous watch'),
    async check({ api, core, watch }) {
      const path = `${core}/configmaps?watch=true&labelSelector=watch-this-configmap%3Dwatch-closed-and-restarted`;
      const w1 = watch(path);
      await w1.status;
      expectStatus(await api('POST', `${core}/configmaps`, configMap('wc', {}, { 'watch-this-configmap': 'watch-closed-and-restarted' })), 201, 'create');
      expectStatus(await api('PATCH', `${core}/configmaps/wc`, { data: { mutation: '1' } }, PATCH.merge), 200, 'update 1');
      const seen = await events(w1, 2);
      w1.close();
      const last = seen[1].object.metadata.resourceVersion;
      const second = expectStatus(await api('PATCH', `${core}/configmaps/wc`, { data: { mutation: '2' } }, PATCH.merge), 200, 'update 2 while closed').json;
      const w2 = watch(`${path}&resourceVersion=${last}`);
      try {
        await w2.status;
        expectStatus(await api('DELETE', `${core}/configmaps/wc`), 200, 'delete');
        await expectEvents(w2, ['MODIFIED', 'DELETED']);
        expect(w2.events[0].object.metadata.resourceVersion === second.metadata.resourceVersion, 'resumed with the update made while closed');
      } finally { w2.close(); }
    },
  },
  {
    id: 'watch-selector-transitions', area: 'watch',
    source: src(`${E2E}/watch.go`, 'should observe an object deletion if it stops meeting the requirements of the selector'),
    async check({ api, core, watch }) {
      const w = watch(`${core}/configmaps?watch=true&labelSelector=watch-this-configmap%3Dlabel-changed-and-restored`);
      try {
        await w.status;
        const label = (v: string) => ({ metadata: { labels: { 'watch-this-configmap': v } } });
        expectStatus(await api('POST', `${core}/configmaps`, configMap('lc', {}, { 'watch-this-configmap': 'label-changed-and-restored' })), 201, 'create');
        await api('PATCH', `${core}/configmaps/lc`, { data: { mutation: '1' } }, PATCH.merge);
        await api('PATCH', `${core}/configmaps/lc`, label('wrong-value'), PATCH.merge);
        await expectEvents(w, ['ADDED', 'MODIFIED', 'DELETED'], 0);
        await api('PATCH', `${core}/configmaps/lc`, { data: { mutation: '2' } }, PATCH.merge);
        await pause(300);
        expect(w.events.length === 3, `no event while not matching: ${summarize(w.events)}`);
        await api('PATCH', `${core}/configmaps/lc`, label('label-changed-and-restored'), PATCH.merge);
        await api('PATCH', `${core}/configmaps/lc`, { data: { mutation: '3' } }, PATCH.merge);
        await api('DELETE', `${core}/configmaps/lc`);
        await expectEvents(w, ['ADDED', 'MODIFIED', 'DELETED', 'ADDED', 'MODIFIED', 'DELETED']);
        expect(w.events[3].object.data.mutation === '2', 'ADDED on re-entry carries the current state');
      } finally { w.close(); }
    },
  },
  {
    id: 'watch-concurrent-same-order', area: 'watch',
    source: src(`${E2E}/watch.go`, 'should receive events on concurrent watches in same order'),
    async check({ api, core, watch }) {
      const rv0 = expectStatus(await api('GET', `${core}/configmaps`), 200, 'list').json.metadata.resourceVersion;
      const path = `${core}/configmaps?watch=true&resourceVersion=${rv0}`;
      const w1 = watch(path);
      await w1.status;
      const names = Array.from({ length: 6 }, (_, i) => `cw${i}`);
      const writes: Promise<unknown>[] = [];
      for (let round = 0; round < 5; round++) {
        for (const n of names) {
          writes.push(round === 0 ? api('POST', `${core}/configmaps`, configMap(n)) : round === 4 ? api('DELETE', `${core}/configmaps/${n}`) : api('PATCH', `${core}/configmaps/${n}`, { data: { r: String(round) } }, PATCH.merge));
        }
        await Promise.all(writes.splice(0));
      }
      const all = await events(w1, names.length * 5, 10_000);
      const key = (e: any) => `${e.type}/${e.object.metadata.name}/${e.object.metadata.resourceVersion}`;
      const rvs = all.map((e) => BigInt(e.object.metadata.resourceVersion));
      expect(rvs.every((rv, i) => i === 0 || rv > rvs[i - 1]!), 'resourceVersions increase along the watch');
      // Watches started later from a resourceVersion of the first watch see the same order from there.
      for (const at of [0, 7, 17]) {
        const w = watch(`${core}/configmaps?watch=true&resourceVersion=${all[at].object.metadata.resourceVersion}`);
        try {
          const tail = all.slice(at + 1);
          const got = await events(w, tail.length);
          expect(JSON.stringify(got.map(key)) === JSON.stringify(tail.map(key)), `watch from event ${at}: order differs`);
        } finally { w.close(); }
      }
      w1.close();
    },
  },
  {
    id: 'watch-bookmarks', area: 'watch',
    source: src(CONCEPTS, 'Watch bookmarks'),
    async check({ api, core, watch }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('bm')), 201, 'create');
      const w = watch(`${core}/configmaps?watch=true&allowWatchBookmarks=true`);
      try {
        await until('a BOOKMARK event', async () => w.events.some((e) => e.type === 'BOOKMARK'), 20_000);
        const bm = w.events.find((e) => e.type === 'BOOKMARK');
        expect(bm.object.kind === 'ConfigMap' && bm.object.apiVersion === 'v1' && /^\d+$/.test(bm.object.metadata.resourceVersion), `bookmark object: ${JSON.stringify(bm.object)}`);
        expect(bm.object.data === undefined && bm.object.metadata.name === undefined, 'a bookmark carries only the resourceVersion');
        const w2 = watch(`${core}/configmaps?watch=true`);
        await pause(700);
        w2.close();
        expect(!w2.events.some((e) => e.type === 'BOOKMARK'), 'no bookmarks unless asked for');
      } finally { w.close(); }
    },
  },
  {
    id: 'watch-streaming-list', area: 'watch',
    source: src(CONCEPTS, 'Streaming lists'),
    async check({ api, core, watch }) {
      for (const n of ['s1', 's2']) expectStatus(await api('POST', `${core}/configmaps`, configMap(n)), 201, n);
      const w = watch(`${core}/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`);
      try {
        await until('initial-events-end bookmark', async () => w.events.some((e) => e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true'));
        const i = w.events.findIndex((e) => e.type === 'BOOKMARK');
        const initial = w.events.slice(0, i).map((e) => `${e.type} ${e.object.metadata.name}`).filter((s) => /s\d$/.test(s));
        expect(JSON.stringify(initial) === JSON.stringify(['ADDED s1', 'ADDED s2']), `initial events: ${initial}`);
        expectStatus(await api('GET', `${core}/configmaps?watch=true&sendInitialEvents=true`), 400, 'sendInitialEvents without bookmarks');
      } finally { w.close(); }
    },
  },
  {
    id: 'watch-too-old-resourceversion-gone', area: 'watch',
    source: src(CONCEPTS, 'Efficient detection of changes (410 Gone)'),
    async check(ctx) {
      const { api, core, watch } = ctx;
      const old = expectStatus(await api('GET', `${core}/configmaps`), 200, 'list').json.metadata.resourceVersion;
      await createMany(ctx, 'churn', 520);
      const w = watch(`${core}/configmaps?watch=true&resourceVersion=${old}`);
      try {
        const status = await w.status;
        if (status === 410) return;
        expect(status === 200, `watch status ${status}`);
        const [ev] = await events(w, 1);
        expect(ev.type === 'ERROR' && ev.object.code === 410 && ev.object.reason === 'Expired', `first event: ${JSON.stringify(ev)}`);
      } finally { w.close(); }
    },
  },
];

/** Paging (chunking.go) and Table output (table_conversion.go). */
const LISTS: Case[] = [
  {
    id: 'chunking-consistent-pages', area: 'list',
    source: src(`${E2E}/chunking.go`, 'should return chunks of results for list calls'),
    note: '200 ConfigMaps stand in for 400 PodTemplates (not served)',
    async check(ctx) {
      const { api, core } = ctx;
      const total = 200;
      await createMany(ctx, 'template', total);
      const present = expectStatus(await api('GET', `${core}/configmaps`), 200, 'list').json.items.length;
      for (let round = 0; round < 3; round++) {
        let found = 0; let seen = 0; let rv = ''; let cont = '';
        for (;;) {
          const limit = 1 + Math.floor(Math.random() * (total / 10));
          const r = expectStatus(await api('GET', `${core}/configmaps?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`), 200, 'page').json;
          const items = r.items.filter((i: any) => i.metadata.name !== 'kube-root-ca.crt');
          expect(r.items.length <= limit, `page of ${r.items.length} > limit ${limit}`);
          rv ||= r.metadata.resourceVersion;
          expect(r.metadata.resourceVersion === rv, 'every page at the first page\'s resourceVersion');
          if (r.metadata.continue) expect(typeof r.metadata.remainingItemCount === 'number', 'remainingItemCount with continue');
          else expect(r.metadata.remainingItemCount === undefined, 'no remainingItemCount on the last page');
          if (r.metadata.continue) expect(r.metadata.remainingItemCount + r.items.length + seen === present, `remainingItemCount ${r.metadata.remainingItemCount} + ${r.items.length} + ${seen} != ${present}`);
          seen += r.items.length;
          for (const it of items) { expect(it.metadata.name === `template-${String(found).padStart(4, '0')}`, `item ${found}: ${it.metadata.name}`); found++; }
          if (!r.metadata.continue) break;
          cont = r.metadata.continue;
          if (round === 1 && found > 50 && found < 70) await api('POST', `${core}/configmaps`, configMap(`template-${found}-x`, {}, { extra: 'true' }));
        }
        expect(found === total, `found ${found} of ${total}`);
        expectStatus(await api('DELETE', `${core}/configmaps?labelSelector=extra`), 200, 'remove writes made while paging');
      }
      const all = expectStatus(await api('GET', `${core}/configmaps?limit=${total + 50}`), 200, 'one page').json;
      expect(!all.metadata.continue, 'all in one page');
    },
  },
  {
    id: 'chunking-expired-continue', area: 'list',
    source: src(`${E2E}/chunking.go`, 'should support continue listing from the last key if the original version has been compacted away, though the list is inconsistent'),
    note: 'the server is run with a short watch history (400 events) to expire the token quickly',
    async check(ctx) {
      const { api, core } = ctx;
      await createMany(ctx, 'template', 40);
      const first = expectStatus(await api('GET', `${core}/configmaps?limit=10`), 200, 'first page').json;
      expect(first.metadata.continue, 'a continue token');
      await createMany(ctx, 'zchurn', 520);
      const exp = expectStatus(await api('GET', `${core}/configmaps?limit=10&continue=${encodeURIComponent(first.metadata.continue)}`), 410, 'continue after the version was compacted');
      expect(exp.json.reason === 'Expired', `reason ${exp.json.reason}`);
      const token = exp.json.metadata?.continue;
      expect(token, `410 Status carries an inconsistent continue token: ${exp.body}`);
      const next = expectStatus(await api('GET', `${core}/configmaps?limit=10&continue=${encodeURIComponent(token)}`), 200, 'inconsistent continue').json;
      expect(next.metadata.resourceVersion !== first.metadata.resourceVersion, 'served at a newer resourceVersion');
      const names = next.items.map((i: any) => i.metadata.name);
      const lastFirst = first.items.at(-1).metadata.name;
      expect(names.length === 10 && names.every((n: string) => n > lastFirst), `continues after ${lastFirst}: ${names}`);
    },
  },
  {
    id: 'table-list', area: 'list',
    source: src(`${E2E}/table_conversion.go`, 'should return generic metadata details across all namespaces for nodes'),
    note: 'ConfigMaps and Namespaces stand in for Nodes (not served)',
    async check({ api, core, cluster }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('t1', { a: '1', b: '2' })), 201, 'create');
      for (const p of [`${core}/configmaps`, `${cluster}/api/v1/namespaces`]) {
        const t = expectStatus(await api('GET', p, undefined, { accept: TABLE }), 200, `table of ${p}`).json;
        expect(t.kind === 'Table' && t.apiVersion === 'meta.k8s.io/v1', `kind ${t.kind} ${t.apiVersion}`);
        expect(t.columnDefinitions.length >= 2 && t.columnDefinitions[0].name === 'Name', `columns ${JSON.stringify(t.columnDefinitions)}`);
        expect(t.rows.length >= 1 && t.rows.every((r: any) => r.cells.length === t.columnDefinitions.length), 'a cell per column');
        expect(t.metadata.resourceVersion, 'list resourceVersion');
        expect(t.rows[0].object?.kind === 'PartialObjectMetadata', `default includeObject=Metadata: ${JSON.stringify(t.rows[0].object)}`);
      }
      const one = expectStatus(await api('GET', `${core}/configmaps/t1?includeObject=None`, undefined, { accept: TABLE }), 200, 'table of one').json;
      expect(one.rows.length === 1 && one.rows[0].cells[0] === 't1' && one.rows[0].cells[1] === 2 && one.rows[0].object === undefined, `row ${JSON.stringify(one.rows)}`);
    },
  },
  {
    id: 'table-chunking', area: 'list',
    source: src(`${E2E}/table_conversion.go`, 'should return chunks of table results for list calls'),
    note: 'ConfigMaps stand in for PodTemplates',
    async check(ctx) {
      const { api, core } = ctx;
      await createMany(ctx, 'template', 20);
      const t = expectStatus(await api('GET', `${core}/configmaps?limit=2`, undefined, { accept: TABLE }), 200, 'first page').json;
      expect(t.kind === 'Table' && t.rows.length === 2 && t.metadata.continue, `first page: ${t.rows?.length} rows, continue ${t.metadata?.continue}`);
      const t2 = expectStatus(await api('GET', `${core}/configmaps?limit=2&continue=${encodeURIComponent(t.metadata.continue)}`, undefined, { accept: TABLE }), 200, 'second page').json;
      expect(t2.rows.length === 2 && t2.rows[0].cells[0] !== t.rows[0].cells[0], 'second page has the next rows');
    },
  },
  {
    id: 'table-406-without-table', area: 'list',
    source: src(`${E2E}/table_conversion.go`, 'should return a 406 for a backend which does not implement metadata'),
    async check({ api, cluster }) {
      const sar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { nonResourceAttributes: { path: '/', verb: 'get' } } };
      expectStatus(await api('POST', `${cluster}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, sar, { accept: TABLE }), 406, 'Table of a SelfSubjectAccessReview');
    },
  },
  {
    id: 'partial-object-metadata', area: 'list',
    source: src('test/integration/apiserver/apiserver_test.go', 'TestMetadataClient'),
    async check({ api, core }) {
      expectStatus(await api('POST', `${core}/configmaps`, configMap('pom', { big: 'x' }, { l: 'v' })), 201, 'create');
      const l = expectStatus(await api('GET', `${core}/configmaps`, undefined, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' }), 200, 'list').json;
      expect(l.kind === 'PartialObjectMetadataList' && l.apiVersion === 'meta.k8s.io/v1', `kind ${l.kind}`);
      const it = l.items.find((i: any) => i.metadata.name === 'pom');
      expect(it && it.kind === 'PartialObjectMetadata' && it.metadata.labels.l === 'v' && it.data === undefined, `item ${JSON.stringify(it)}`);
      const g = expectStatus(await api('GET', `${core}/configmaps/pom`, undefined, { accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' }), 200, 'get').json;
      expect(g.kind === 'PartialObjectMetadata' && g.data === undefined, `get: ${JSON.stringify(g)}`);
    },
  },
];

export const CASES: Case[] = [...CORE, ...REST, ...WATCH, ...LISTS];

/** Upstream conformance tests that cannot apply to this server. */
export const NOT_APPLICABLE: NotApplicable[] = [];
