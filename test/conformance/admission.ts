/**
 * Conformance cases of dynamic admission: admission webhooks (webhook.go), CRD conversion
 * webhooks (crd_conversion_webhook.go) and ValidatingAdmissionPolicy
 * (validatingadmissionpolicy.go). The webhook server of test/conformance/util.ts, served in this
 * process, stands in for kube's e2e webhook Pod and its Service: configurations name it with a
 * `url` clientConfig, since kcp-ts has no Services to route to. Only the expectations were
 * carried over from upstream.
 */
import type { Res } from '../helpers.js';
import type { Case, CaseContext, Source } from './types.js';
import { PATCH, expect, expectStatus, makeCrd, until, webhookServerOnce, type Crd, type WebhookServer } from './util.js';

const E2E = 'test/e2e/apimachinery';
const WEBHOOK_E2E = `${E2E}/webhook.go`;
const CONVERSION_E2E = `${E2E}/crd_conversion_webhook.go`;
const VAP_E2E = `${E2E}/validatingadmissionpolicy.go`;
const src = (file: string, it: string): Source => ({ file, it });

const ARV1 = '/apis/admissionregistration.k8s.io/v1';
const KINDS = {
  Validating: 'validatingwebhookconfigurations',
  Mutating: 'mutatingwebhookconfigurations',
  VAP: 'validatingadmissionpolicies',
  VAPB: 'validatingadmissionpolicybindings',
} as const;
type Kind = keyof typeof KINDS;

const POD_NOTE = 'the webhook server of test/conformance/util.ts, served in-process, stands in for the webhook Pod and its Service (clientConfig `url` instead of `service`)';

/** A case's webhook context: the server, selectors scoped to the case, and what to clean up. */
interface Hooks {
  ctx: CaseContext;
  srv: WebhookServer;
  /** `{matchLabels: {<ns>: "true"}}`: the case's namespace (labelled as upstream's labelNamespace does). */
  nsSelector: { matchLabels: Record<string, string> };
  /** The namespace of marker ConfigMaps (upstream's "-markers" namespace). */
  markers: string;
  /** Creates a cluster-scoped admission object (deleted at the end of the case); returns the response. */
  create(kind: Kind, body: any): Promise<Res>;
  /** Creates a namespace with labels (deleted at the end of the case). */
  namespace(name: string, labels: Record<string, string>): Promise<void>;
  path(kind: Kind, name?: string): string;
}

const MARKERS_LABEL = 'conformance-markers';

/** Runs `fn` with a labelled namespace, a markers namespace and the webhook server; deletes what it created. */
async function withHooks(ctx: CaseContext, fn: (h: Hooks) => Promise<void>): Promise<void> {
  const srv = await webhookServerOnce();
  const created: string[] = [];
  const path = (kind: Kind, name?: string) => `${ctx.cluster}${ARV1}/${KINDS[kind]}${name ? `/${name}` : ''}`;
  const namespaces: string[] = [];
  const h: Hooks = {
    ctx, srv, nsSelector: { matchLabels: { [ctx.ns]: 'true' } }, markers: `mk-${ctx.uid}`, path,
    async create(kind, body) {
      const r = await ctx.api('POST', path(kind), body);
      if (r.status === 201) created.push(path(kind, r.json.metadata.name));
      return r;
    },
    async namespace(name, labels) {
      expectStatus(await ctx.api('POST', `${ctx.cluster}/api/v1/namespaces`, { metadata: { name, labels } }), 201, `create namespace ${name}`);
      namespaces.push(name);
    },
  };
  try {
    expectStatus(await ctx.api('PATCH', `${ctx.cluster}/api/v1/namespaces/${ctx.ns}`, { metadata: { labels: { [ctx.ns]: 'true' } } }, PATCH.merge), 200, 'label namespace');
    await h.namespace(h.markers, { [MARKERS_LABEL]: ctx.uid });
    await fn(h);
  } finally {
    for (const p of created.reverse()) await ctx.api('DELETE', p).catch(() => undefined);
    for (const n of namespaces) void ctx.api('DELETE', `${ctx.cluster}/api/v1/namespaces/${n}`).catch(() => undefined);
  }
}

const common = { sideEffects: 'None', admissionReviewVersions: ['v1', 'v1beta1'] };
const configMapRule = (operations: string[]) => [{ operations, apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

/** Upstream's is-ready marker webhook: always-deny, fail-open, for marker ConfigMaps in the markers namespace only. */
const isReady = (h: Hooks, mutating = false) => ({
  name: `${mutating ? 'mutating' : 'validating'}-is-webhook-configuration-ready.k8s.io`,
  rules: configMapRule(['CREATE']), clientConfig: h.srv.clientConfig('/always-deny'), failurePolicy: 'Ignore', ...common,
  namespaceSelector: { matchLabels: { [MARKERS_LABEL]: h.ctx.uid } }, objectSelector: h.nsSelector,
});

/** Sends marker ConfigMaps until the is-ready webhook of the newest configuration denies one. */
async function waitReady(h: Hooks): Promise<void> {
  let n = 0;
  await until('webhook configuration ready (marker denied)', async () => {
    const name = `marker-${n++}`;
    const r = await h.ctx.api('POST', `${h.ctx.cluster}/api/v1/namespaces/${h.markers}/configmaps`, { metadata: { name, labels: { [h.ctx.ns]: 'true' } } });
    if (r.status === 201) { await h.ctx.api('DELETE', `${h.ctx.cluster}/api/v1/namespaces/${h.markers}/configmaps/${name}`); return false; }
    if (/denied/.test(r.json?.message ?? '')) return true;
    throw new Error(`marker: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
  }, 30_000);
}

const denyConfigMap = (h: Hooks) => ({
  name: 'deny-unwanted-configmap-data.k8s.io', rules: configMapRule(['CREATE', 'UPDATE', 'DELETE']),
  namespaceSelector: { ...h.nsSelector, matchExpressions: [{ key: 'skip-webhook-admission', operator: 'NotIn', values: ['yes'] }] },
  clientConfig: h.srv.clientConfig('/configmaps'), ...common,
});
const mutateConfigMap = (h: Hooks, stage: number) => ({
  name: `adding-configmap-data-stage-${stage}.k8s.io`, rules: configMapRule(['CREATE']),
  clientConfig: h.srv.clientConfig('/mutating-configmaps'), ...common, namespaceSelector: h.nsSelector,
});
/** A webhook the server cannot call: no caBundle, so the serving certificate is not trusted. */
const failing = (h: Hooks, name: string) => ({
  name, rules: configMapRule(['CREATE']), clientConfig: { url: `${h.srv.url}/configmaps` }, ...common,
});
const vwc = (name: string, webhooks: object[], labels?: Record<string, string>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name, ...(labels ? { labels } : {}) }, webhooks });
const mwc = (name: string, webhooks: object[], labels?: Record<string, string>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name, ...(labels ? { labels } : {}) }, webhooks });

const nonCompliant = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { 'webhook-e2e-test': 'webhook-disallow' } });
const toBeMutated = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { 'mutation-start': 'yes' } });

/** Throws unless `r` failed with a message containing `text`. */
function expectDenied(r: Res, text: string, what: string): void {
  expect(r.status >= 400, `${what}: expected to be refused, got HTTP ${r.status}`);
  expect(String(r.json?.message ?? r.body).includes(text), `${what}: expected the error to contain "${text}", got HTTP ${r.status}: ${r.body.slice(0, 400)}`);
}

let seq = 0;
const uniq = () => `${Date.now().toString(36)}${(seq++).toString(36)}`;

/** Creates non-compliant ConfigMaps until one is denied (`denied`) or admitted (`!denied`); admitted ones are deleted. */
async function pollDenied(h: Hooks, denied: boolean): Promise<void> {
  await until(denied ? 'non-compliant ConfigMap denied' : 'non-compliant ConfigMap admitted', async () => {
    const name = `nc-${uniq()}`;
    const r = await h.ctx.api('POST', `${h.ctx.core}/configmaps`, nonCompliant(name));
    if (r.status === 201) { expectStatus(await h.ctx.api('DELETE', `${h.ctx.core}/configmaps/${name}`), 200, 'delete admitted ConfigMap'); return !denied; }
    if (!/denied/.test(r.json?.message ?? '')) throw new Error(`create: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    return denied;
  }, 30_000);
}

/** Creates to-be-mutated ConfigMaps until one comes back mutated (`mutated`) or not; each is deleted. */
async function pollMutated(h: Hooks, mutated: boolean): Promise<void> {
  await until(mutated ? 'ConfigMap mutated' : 'ConfigMap not mutated', async () => {
    const name = `tm-${uniq()}`;
    const r = expectStatus(await h.ctx.api('POST', `${h.ctx.core}/configmaps`, toBeMutated(name)), 201, 'create ConfigMap');
    expectStatus(await h.ctx.api('DELETE', `${h.ctx.core}/configmaps/${name}`), 200, 'delete ConfigMap');
    return ('mutation-stage-1' in (r.json.data ?? {})) === mutated;
  }, 30_000);
}

/** A schema keeping every field (upstream's test CRDs: `x-kubernetes-preserve-unknown-fields` at the root). */
const OPEN_ROOT = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const openVersion = (name: string, storage: boolean) => ({ name, served: true, storage, schema: { openAPIV3Schema: OPEN_ROOT } });
/** A custom resource with top-level `data`, as upstream's webhook tests create. */
const dataCr = (crd: Crd, name: string, data: Record<string, string>, version = 'v1') => ({ apiVersion: `${crd.group}/${version}`, kind: crd.kind, metadata: { name }, data });
const crRule = (crd: Crd, operations: string[], versions: string[]) => [{ operations, apiGroups: [crd.group], apiVersions: versions, resources: [crd.plural] }];

/** Registers upstream's two staged custom-resource mutating webhooks (stage 1 on CREATE and UPDATE, stage 2 on CREATE). */
async function registerMutatingCr(h: Hooks, crd: Crd, versions: string[]): Promise<void> {
  const hook = (stage: number, ops: string[]) => ({
    name: `mutate-custom-resource-data-stage-${stage}.k8s.io`, rules: crRule(crd, ops, versions),
    clientConfig: h.srv.clientConfig('/mutating-custom-resource'), ...common, namespaceSelector: h.nsSelector,
  });
  expectStatus(await h.create('Mutating', mwc(h.ctx.ns, [hook(1, ['CREATE', 'UPDATE']), hook(2, ['CREATE']), isReady(h, true)])), 201, 'register mutating webhooks');
  await waitReady(h);
}

/** Updates a ConfigMap or custom resource by GET and PUT, retrying on conflict. */
async function update(ctx: CaseContext, path: string, change: (o: any) => void): Promise<Res> {
  for (;;) {
    const o = expectStatus(await ctx.api('GET', path), 200, `get ${path}`).json;
    change(o);
    const r = await ctx.api('PUT', path, o);
    if (r.status !== 409) return r;
  }
}

const WEBHOOKS: Case[] = [
  {
    id: 'webhook-discovery', area: 'admission',
    source: src(WEBHOOK_E2E, 'should include webhook resources in discovery documents'),
    async check({ api, cluster }) {
      const groups = expectStatus(await api('GET', `${cluster}/apis`), 200, '/apis').json;
      const g = groups.groups.find((x: any) => x.name === 'admissionregistration.k8s.io');
      expect(g?.versions?.some((v: any) => v.version === 'v1'), `admissionregistration.k8s.io/v1 in /apis: ${JSON.stringify(g)}`);
      const group = expectStatus(await api('GET', `${cluster}/apis/admissionregistration.k8s.io`), 200, 'group').json;
      expect(group.name === 'admissionregistration.k8s.io' && group.versions.some((v: any) => v.version === 'v1'), `group document: ${JSON.stringify(group)}`);
      const list = expectStatus(await api('GET', `${cluster}${ARV1}`), 200, 'group/version').json;
      expect(list.groupVersion === 'admissionregistration.k8s.io/v1', `groupVersion ${list.groupVersion}`);
      const names = list.resources.map((r: any) => r.name);
      expect(names.includes('mutatingwebhookconfigurations') && names.includes('validatingwebhookconfigurations'), `resources ${names}`);
    },
  },
  {
    id: 'webhook-deny-configmap', area: 'admission',
    source: src(WEBHOOK_E2E, 'should be able to deny pod and configmap creation'),
    note: `${POD_NOTE}; the Pod half (a Pod with an unwanted container name and label denied, a hanging Pod timing out) is not checked: Pods are not served. The ConfigMap half is: a non-compliant ConfigMap is denied on create, update and patch, a compliant one is admitted, a fail-open webhook that cannot be called does not block, and a namespace excluded by the namespaceSelector is not checked`,
    check: (ctx) => withHooks(ctx, async (h) => {
      const failOpen = { ...failing(h, 'fail-open.k8s.io'), failurePolicy: 'Ignore', namespaceSelector: h.nsSelector };
      const denyPod = { name: 'deny-unwanted-pod-container-name-and-label.k8s.io', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], clientConfig: h.srv.clientConfig('/pods'), ...common, namespaceSelector: h.nsSelector };
      expectStatus(await h.create('Validating', vwc(ctx.ns, [denyPod, denyConfigMap(h), failOpen, isReady(h)])), 201, 'register');
      await waitReady(h);
      const msg = 'the configmap contains unwanted key and value';
      expectDenied(await ctx.api('POST', `${ctx.core}/configmaps`, nonCompliant('disallowed-configmap')), msg, 'create non-compliant');
      expectStatus(await ctx.api('POST', `${ctx.core}/configmaps`, { metadata: { name: 'allowed-configmap' }, data: { admit: 'this' } }), 201, 'create compliant');
      expectDenied(await update(ctx, `${ctx.core}/configmaps/allowed-configmap`, (cm) => { cm.data = { ...cm.data, 'webhook-e2e-test': 'webhook-disallow' }; }), msg, 'update (PUT) to non-compliant');
      expectDenied(await ctx.api('PATCH', `${ctx.core}/configmaps/allowed-configmap`, { data: { 'webhook-e2e-test': 'webhook-disallow' } }, PATCH.strategic), msg, 'patch to non-compliant');
      const skip = `exempted-${ctx.uid}`;
      await h.namespace(skip, { 'skip-webhook-admission': 'yes', [ctx.ns]: 'true' });
      expectStatus(await ctx.api('POST', `${ctx.cluster}/api/v1/namespaces/${skip}/configmaps`, nonCompliant('disallowed-configmap')), 201, 'non-compliant ConfigMap in the exempted namespace');
    }),
  },
  {
    id: 'webhook-deny-custom-resource', area: 'admission',
    source: src(WEBHOOK_E2E, 'should be able to deny custom resource creation, update and deletion'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const crd = await makeCrd(ctx, { versions: [openVersion('v1', true)] });
      expectStatus(await h.create('Validating', vwc(ctx.ns, [{
        name: 'deny-unwanted-custom-resource-data.k8s.io', rules: crRule(crd, ['CREATE', 'UPDATE', 'DELETE'], ['v1']),
        clientConfig: h.srv.clientConfig('/custom-resource'), ...common, namespaceSelector: h.nsSelector,
      }, isReady(h)])), 201, 'register');
      await waitReady(h);
      expectDenied(await ctx.api('POST', crd.path(), dataCr(crd, 'cr-instance-1', { 'webhook-e2e-test': 'webhook-disallow' })), 'the custom resource contains unwanted data', 'create');
      expectStatus(await ctx.api('POST', crd.path(), dataCr(crd, 'cr-instance-2', { 'webhook-e2e-test': 'webhook-nondeletable' })), 201, 'create deletable-denied');
      const path = `${crd.path()}/cr-instance-2`;
      expectDenied(await update(ctx, path, (o) => { o.data = { ...o.data, 'webhook-e2e-test': 'webhook-disallow' }; }), 'the custom resource contains unwanted data', 'update');
      expectDenied(await ctx.api('DELETE', path), 'the custom resource cannot be deleted because it contains unwanted key and value', 'delete');
      expectStatus(await update(ctx, path, (o) => { o.data = { ...o.data, 'webhook-e2e-test': 'webhook-allow' }; }), 200, 'update to compliant');
      expectStatus(await ctx.api('DELETE', path), 200, 'delete');
    }),
  },
  {
    id: 'webhook-fail-closed', area: 'admission',
    source: src(WEBHOOK_E2E, 'should unconditionally reject operations on fail closed webhook'),
    note: `${POD_NOTE}; the webhook cannot be called because its clientConfig has no caBundle, as upstream's`,
    check: (ctx) => withHooks(ctx, async (h) => {
      const hook = { ...failing(h, 'fail-closed.k8s.io'), failurePolicy: 'Fail', namespaceSelector: { ...h.nsSelector, matchExpressions: [{ key: 'fail-closed-webhook', operator: 'In', values: ['yes'] }] } };
      expectStatus(await h.create('Validating', vwc(ctx.ns, [hook, isReady(h)])), 201, 'register');
      await waitReady(h);
      const failNs = `fail-closed-${ctx.uid}`;
      await h.namespace(failNs, { 'fail-closed-webhook': 'yes', [ctx.ns]: 'true' });
      const r = await ctx.api('POST', `${ctx.cluster}/api/v1/namespaces/${failNs}/configmaps`, { metadata: { name: 'foo' } });
      expect(r.status === 500 && r.json?.reason === 'InternalError', `expected an internal error, got HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    }),
  },
  {
    id: 'webhook-mutate-configmap', area: 'admission',
    source: src(WEBHOOK_E2E, 'should mutate configmap'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      expectStatus(await h.create('Mutating', mwc(ctx.ns, [mutateConfigMap(h, 1), mutateConfigMap(h, 2), isReady(h, true)])), 201, 'register');
      await waitReady(h);
      const cm = expectStatus(await ctx.api('POST', `${ctx.core}/configmaps`, toBeMutated('to-be-mutated')), 201, 'create').json;
      const want = { 'mutation-start': 'yes', 'mutation-stage-1': 'yes', 'mutation-stage-2': 'yes' };
      expect(sameData(cm.data, want), `data ${JSON.stringify(cm.data)}, expected ${JSON.stringify(want)}`);
    }),
  },
  {
    id: 'webhook-config-objects-exempt', area: 'admission',
    source: src(WEBHOOK_E2E, 'should not be able to mutate or prevent deletion of webhook configuration objects'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const configRule = (operations: string[]) => [{ operations, apiGroups: ['admissionregistration.k8s.io'], apiVersions: ['*'], resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'] }];
      expectStatus(await h.create('Validating', vwc(`${ctx.ns}blocking`, [{
        name: 'deny-webhook-configuration-deletions.k8s.io', rules: configRule(['DELETE']), clientConfig: h.srv.clientConfig('/always-deny'),
        ...common, failurePolicy: 'Fail', namespaceSelector: h.nsSelector,
      }, isReady(h)])), 201, 'register the deleting-denying webhook');
      await waitReady(h);
      expectStatus(await h.create('Mutating', mwc(`${ctx.ns}blocking`, [{
        name: 'add-label-to-webhook-configurations.k8s.io', rules: configRule(['CREATE']), clientConfig: h.srv.clientConfig('/add-label'),
        ...common, failurePolicy: 'Fail', namespaceSelector: h.nsSelector,
      }, isReady(h, true)])), 201, 'register the labelling webhook');
      await waitReady(h);
      const dummy = (name: string) => ({
        name, rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['invalid'] }],
        clientConfig: { url: h.srv.url }, ...common, failurePolicy: 'Ignore', namespaceSelector: h.nsSelector,
      });
      for (const kind of ['Validating', 'Mutating'] as const) {
        const body = kind === 'Validating' ? vwc(ctx.ns, [dummy('dummy-validating-webhook.k8s.io'), isReady(h)]) : mwc(ctx.ns, [dummy('dummy-mutating-webhook.k8s.io'), isReady(h, true)]);
        const c = expectStatus(await h.create(kind, body), 201, `create a dummy ${kind}WebhookConfiguration`).json;
        expect(c.metadata.labels?.['added-label'] !== 'yes', `${kind}WebhookConfiguration was mutated by a webhook: ${JSON.stringify(c.metadata.labels)}`);
        await waitReady(h);
        expectStatus(await ctx.api('DELETE', h.path(kind, ctx.ns)), 200, `delete the dummy ${kind}WebhookConfiguration`);
      }
    }),
  },
  {
    id: 'webhook-mutate-custom-resource', area: 'admission',
    source: src(WEBHOOK_E2E, 'should mutate custom resource'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const crd = await makeCrd(ctx, { versions: [openVersion('v1', true)] });
      await registerMutatingCr(h, crd, ['v1']);
      const r = expectStatus(await ctx.api('POST', crd.path(), dataCr(crd, 'cr-instance-1', { 'mutation-start': 'yes' })), 201, 'create').json;
      const want = { 'mutation-start': 'yes', 'mutation-stage-1': 'yes', 'mutation-stage-2': 'yes' };
      expect(sameData(r.data, want), `data ${JSON.stringify(r.data)}, expected ${JSON.stringify(want)}`);
    }),
  },
  {
    id: 'webhook-deny-crd', area: 'admission',
    source: src(WEBHOOK_E2E, 'should deny crd creation'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      expectStatus(await h.create('Validating', vwc(ctx.ns, [{
        name: 'deny-crd-with-unwanted-label.k8s.io', rules: [{ operations: ['CREATE'], apiGroups: ['apiextensions.k8s.io'], apiVersions: ['*'], resources: ['customresourcedefinitions'] }],
        clientConfig: h.srv.clientConfig('/crd'), ...common, objectSelector: h.nsSelector,
      }, isReady(h)])), 201, 'register');
      await waitReady(h);
      const group = `deny${ctx.uid}.example.com`;
      const name = 'e2e-test-webhook-deny-crd';
      const crdPath = `${ctx.cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
      const r = await ctx.api('POST', crdPath, {
        apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
        metadata: { name: `${name}s.${group}`, labels: { [ctx.ns]: 'true', 'webhook-e2e-test': 'webhook-disallow' } },
        spec: { group, scope: 'Namespaced', names: { plural: `${name}s`, singular: name, kind: 'E2e-test-webhook-deny-crd', listKind: 'E2e-test-webhook-deny-crdList' }, versions: [openVersion('v1', true)] },
      });
      if (r.status === 201) await ctx.api('DELETE', `${crdPath}/${name}s.${group}`);
      expectDenied(r, 'the crd contains unwanted label', 'create CRD');
    }),
  },
  {
    id: 'webhook-mutate-cr-stored-version', area: 'admission',
    source: src(WEBHOOK_E2E, 'should mutate custom resource with different stored version'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const crd = await makeCrd(ctx, { versions: [openVersion('v1', true), openVersion('v2', false)] });
      await registerMutatingCr(h, crd, ['v1', 'v2']);
      expectStatus(await ctx.api('POST', crd.path('v1'), dataCr(crd, 'cr-instance-1', { 'mutation-start': 'yes' })), 201, 'create while v1 is the storage version');
      expectStatus(await ctx.api('PATCH', crd.crdPath, { spec: { versions: [openVersion('v1', false), openVersion('v2', true)] } }, PATCH.strategic), 200, 'patch the CRD: v2 storage');
      const p = expectStatus(await ctx.api('PATCH', `${crd.path('v2')}/cr-instance-1`, [{ op: 'add', path: '/dummy', value: 'test' }], PATCH.json), 200, 'patch in v2').json;
      const want = { 'mutation-start': 'yes', 'mutation-stage-1': 'yes', 'mutation-stage-2': 'yes' };
      expect(sameData(p.data, want), `data ${JSON.stringify(p.data)}, expected ${JSON.stringify(want)}`);
      expect(p.dummy === 'test', `dummy ${JSON.stringify(p.dummy)}`);
    }),
  },
  {
    id: 'webhook-mutate-cr-pruning', area: 'admission',
    source: src(WEBHOOK_E2E, 'should mutate custom resource with pruning'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const schema = { type: 'object', properties: { data: { type: 'object', properties: { 'mutation-start': { type: 'string' }, 'mutation-stage-1': { type: 'string' } } } } };
      const crd = await makeCrd(ctx, { versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }, { name: 'v2', served: true, storage: false, schema: { openAPIV3Schema: schema } }] });
      await registerMutatingCr(h, crd, ['v1', 'v2']);
      const r = expectStatus(await ctx.api('POST', crd.path('v1'), dataCr(crd, 'cr-instance-1', { 'mutation-start': 'yes' })), 201, 'create').json;
      const want = { 'mutation-start': 'yes', 'mutation-stage-1': 'yes' };
      expect(sameData(r.data, want), `data ${JSON.stringify(r.data)}, expected ${JSON.stringify(want)} (mutation-stage-2 pruned)`);
    }),
  },
  {
    id: 'webhook-timeout', area: 'admission',
    source: src(WEBHOOK_E2E, 'should honor timeout'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const slow = (failurePolicy: string, timeoutSeconds?: number) => vwc(ctx.ns, [{
        name: 'allow-configmap-with-delay-webhook.k8s.io', rules: configMapRule(['CREATE']), clientConfig: h.srv.clientConfig('/always-allow-delay-5s'),
        namespaceSelector: h.nsSelector, failurePolicy, ...(timeoutSeconds ? { timeoutSeconds } : {}), ...common,
      }, isReady(h)]);
      const name = 'e2e-test-slow-webhook-configmap';
      let timeoutMessage = '';
      const step = async (failurePolicy: string, timeoutSeconds: number | undefined, fails: boolean) => {
        expectStatus(await h.create('Validating', slow(failurePolicy, timeoutSeconds)), 201, `register (${failurePolicy}, ${timeoutSeconds ?? 'default'} s)`);
        await waitReady(h);
        const r = await ctx.api('POST', `${ctx.core}/configmaps`, { metadata: { name } });
        if (fails) {
          timeoutMessage = String(r.json?.message ?? r.body);
          expect(r.status >= 400, `timeout ${timeoutSeconds} s, webhook latency 5 s: expected to fail, got HTTP ${r.status}`);
          expect(/context deadline exceeded/.test(timeoutMessage) || /timeout/.test(timeoutMessage), `expected an HTTP/dial timeout error, got: ${timeoutMessage}`);
        } else {
          expectStatus(r, 201, `create (${failurePolicy}, ${timeoutSeconds ?? 'default'} s)`);
          expectStatus(await ctx.api('DELETE', `${ctx.core}/configmaps/${name}`), 200, 'delete');
        }
        expectStatus(await ctx.api('DELETE', h.path('Validating', ctx.ns)), 200, 'delete the configuration');
      };
      await step('Fail', 1, true);
      await step('Ignore', 1, false);
      await step('Fail', 10, false);
      await step('Fail', undefined, false);
      expect(timeoutMessage.includes('/always-allow-delay-5s?timeout=1s'), `expected the timeout error to name the webhook's URL (/always-allow-delay-5s?timeout=1s), got: ${timeoutMessage}`);
    }),
  },
  {
    id: 'webhook-update-validating', area: 'admission',
    source: src(WEBHOOK_E2E, 'patching/updating a validating webhook should work'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      expectStatus(await h.create('Validating', vwc(ctx.ns, [denyConfigMap(h), isReady(h)])), 201, 'register');
      await waitReady(h);
      await pollDenied(h, true);
      const path = h.path('Validating', ctx.ns);
      expectStatus(await update(ctx, path, (c) => { c.webhooks[0].rules[0].operations = ['UPDATE']; }), 200, 'update the rules: no CREATE');
      await pollDenied(h, false);
      expectStatus(await ctx.api('PATCH', path, [{ op: 'replace', path: '/webhooks/0/rules/0/operations', value: ['CREATE'] }], PATCH.json), 200, 'patch the rules: CREATE');
      await pollDenied(h, true);
    }),
  },
  {
    id: 'webhook-update-mutating', area: 'admission',
    source: src(WEBHOOK_E2E, 'patching/updating a mutating webhook should work'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      expectStatus(await h.create('Mutating', mwc(ctx.ns, [mutateConfigMap(h, 1), isReady(h, true)])), 201, 'register');
      await waitReady(h);
      const path = h.path('Mutating', ctx.ns);
      expectStatus(await update(ctx, path, (c) => { c.webhooks[0].rules[0].operations = ['UPDATE']; }), 200, 'update the rules: no CREATE');
      await pollMutated(h, false);
      expectStatus(await ctx.api('PATCH', path, [{ op: 'replace', path: '/webhooks/0/rules/0/operations', value: ['CREATE'] }], PATCH.json), 200, 'patch the rules: CREATE');
      await pollMutated(h, true);
    }),
  },
  {
    id: 'webhook-list-validating', area: 'admission',
    source: src(WEBHOOK_E2E, 'listing validating webhooks should work'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const labels = { 'e2e-list-test-uuid': ctx.uid };
      for (let i = 0; i < 10; i++) expectStatus(await h.create('Validating', vwc(`${ctx.ns}-${i}`, [denyConfigMap(h), isReady(h)], labels)), 201, `create ${i}`);
      const list = expectStatus(await ctx.api('GET', `${h.path('Validating')}?labelSelector=e2e-list-test-uuid%3D${ctx.uid}`), 200, 'list').json;
      expect(list.items.length === 10, `listed ${list.items.length}, expected 10`);
      await waitReady(h);
      await pollDenied(h, true);
      expectStatus(await ctx.api('DELETE', `${h.path('Validating')}?labelSelector=e2e-list-test-uuid%3D${ctx.uid}`), 200, 'deletecollection');
      await pollDenied(h, false);
    }),
  },
  {
    id: 'webhook-list-mutating', area: 'admission',
    source: src(WEBHOOK_E2E, 'listing mutating webhooks should work'),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const labels = { 'e2e-list-test-uuid': ctx.uid };
      for (let i = 0; i < 10; i++) expectStatus(await h.create('Mutating', mwc(`${ctx.ns}-${i}`, [mutateConfigMap(h, 1), isReady(h, true)], labels)), 201, `create ${i}`);
      const list = expectStatus(await ctx.api('GET', `${h.path('Mutating')}?labelSelector=e2e-list-test-uuid%3D${ctx.uid}`), 200, 'list').json;
      expect(list.items.length === 10, `listed ${list.items.length}, expected 10`);
      await waitReady(h);
      await pollMutated(h, true);
      expectStatus(await ctx.api('DELETE', `${h.path('Mutating')}?labelSelector=e2e-list-test-uuid%3D${ctx.uid}`), 200, 'deletecollection');
      await pollMutated(h, false);
    }),
  },
  ...(['Validating', 'Mutating'] as const).map((kind): Case => ({
    id: `webhook-match-conditions-${kind.toLowerCase()}`, area: 'admission',
    source: src(WEBHOOK_E2E, `should be able to create and update ${kind.toLowerCase()} webhook configurations with match conditions`),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const initial = [{ name: 'expression-1', expression: "object.metadata.namespace == 'production'" }];
      expectStatus(await h.create(kind, matchConditionsConfig(h, kind, initial)), 201, 'create');
      const path = h.path(kind, ctx.ns);
      const got = expectStatus(await ctx.api('GET', path), 200, 'get').json;
      expect(JSON.stringify(got.webhooks[0].matchConditions) === JSON.stringify(initial), `matchConditions ${JSON.stringify(got.webhooks[0].matchConditions)}`);
      const updated = [...initial, { name: 'expression-2', expression: "object.metadata.namespace == 'staging'" }];
      got.webhooks[0].matchConditions = updated;
      expectStatus(await ctx.api('PUT', path, got), 200, 'update');
      const again = expectStatus(await ctx.api('GET', path), 200, 'get').json;
      expect(JSON.stringify(again.webhooks[0].matchConditions) === JSON.stringify(updated), `matchConditions ${JSON.stringify(again.webhooks[0].matchConditions)}`);
    }),
  })),
  ...(['Validating', 'Mutating'] as const).map((kind): Case => ({
    id: `webhook-invalid-match-conditions-${kind.toLowerCase()}`, area: 'admission',
    source: src(WEBHOOK_E2E, `should reject ${kind.toLowerCase()} webhook configurations with invalid match conditions`),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const r = await h.create(kind, matchConditionsConfig(h, kind, [{ name: 'invalid-expression-1', expression: '... [] bad expression' }]));
      expectDenied(r, 'compilation failed', 'create with an invalid match condition');
    }),
  })),
  {
    id: 'webhook-mutate-skip-me', area: 'admission',
    source: src(WEBHOOK_E2E, "should mutate everything except 'skip-me' configmaps"),
    note: POD_NOTE,
    check: (ctx) => withHooks(ctx, async (h) => {
      const hook = { ...mutateConfigMap(h, 1), matchConditions: [{ name: 'skip-me', expression: "object.metadata.name != 'skip-me'" }] };
      expectStatus(await h.create('Mutating', mwc(ctx.ns, [hook, isReady(h, true)])), 201, 'register');
      await waitReady(h);
      const a = expectStatus(await ctx.api('POST', `${ctx.core}/configmaps`, toBeMutated(`cm-${ctx.uid}`)), 201, 'create').json;
      expect(sameData(a.data, { 'mutation-start': 'yes', 'mutation-stage-1': 'yes' }), `mutated data ${JSON.stringify(a.data)}`);
      const b = expectStatus(await ctx.api('POST', `${ctx.core}/configmaps`, toBeMutated('skip-me')), 201, 'create skip-me').json;
      expect(sameData(b.data, { 'mutation-start': 'yes' }), `skip-me data ${JSON.stringify(b.data)}`);
    }),
  },
];

/** Upstream's configurations with match conditions: validating (always-deny) or mutating (stage-1 ConfigMap mutation), plus the is-ready webhook. */
function matchConditionsConfig(h: Hooks, kind: 'Validating' | 'Mutating', matchConditions: object[]): object {
  if (kind === 'Validating') {
    return vwc(h.ctx.ns, [{
      name: 'validation-webhook-with-match-conditions.k8s.io', rules: configMapRule(['CREATE']), clientConfig: h.srv.clientConfig('/always-deny'),
      sideEffects: 'None', matchPolicy: 'Equivalent', admissionReviewVersions: ['v1'], namespaceSelector: h.nsSelector, matchConditions,
    }, isReady(h)]);
  }
  return mwc(h.ctx.ns, [{
    name: 'adding-configmap-data.k8s.io', rules: configMapRule(['CREATE']), clientConfig: h.srv.clientConfig('/mutating-configmaps'),
    ...common, namespaceSelector: h.nsSelector, matchConditions,
  }, isReady(h, true)]);
}

/** Whether two `data` maps are equal (key order aside). */
function sameData(a: Record<string, unknown> | undefined, b: Record<string, unknown>): boolean {
  const sorted = (o: Record<string, unknown>) => JSON.stringify(Object.entries(o).sort(([x], [y]) => x.localeCompare(y)));
  return sorted(a ?? {}) === sorted(b);
}

/** CRD versions of the conversion tests: v1 has `hostPort`, v2 `host` and `port`. */
const hostPortVersions = (storage: 'v1' | 'v2') => [
  { name: 'v1', served: true, storage: storage === 'v1', schema: { openAPIV3Schema: { type: 'object', properties: { hostPort: { type: 'string' } } } } },
  { name: 'v2', served: true, storage: storage === 'v2', schema: { openAPIV3Schema: { type: 'object', properties: { host: { type: 'string' }, port: { type: 'string' } } } } },
];

/** A CRD converted by the webhook server's `/crdconvert`, once a v2 object can be created (upstream's waitWebhookConversionReady). */
async function conversionCrd(ctx: CaseContext): Promise<Crd> {
  const srv = await webhookServerOnce();
  const crd = await makeCrd(ctx, {
    versions: hostPortVersions('v1'),
    spec: { conversion: { strategy: 'Webhook', webhook: { clientConfig: srv.clientConfig('/crdconvert'), conversionReviewVersions: ['v1', 'v1beta1'] } } },
  });
  await until('conversion ready (a v2 object can be created)', async () => {
    const r = await ctx.api('POST', crd.path('v2'), { apiVersion: `${crd.group}/v2`, kind: crd.kind, metadata: { name: ctx.ns } });
    if (r.status !== 201) return false;
    expectStatus(await ctx.api('DELETE', `${crd.path('v2')}/${ctx.ns}`), 200, 'delete the stub object');
    return true;
  }, 30_000);
  return crd;
}

const hostPortCr = (crd: Crd, name: string) => ({ apiVersion: `${crd.group}/v1`, kind: crd.kind, metadata: { name }, hostPort: 'localhost:8080' });

function verifyV1(crd: Crd, o: any): void {
  expect(o.apiVersion === `${crd.group}/v1` && o.hostPort === 'localhost:8080' && !('host' in o) && !('port' in o), `expected a v1 object with hostPort localhost:8080, got ${JSON.stringify(o)}`);
}
function verifyV2(crd: Crd, o: any): void {
  expect(o.apiVersion === `${crd.group}/v2` && !('hostPort' in o) && o.host === 'localhost' && o.port === '8080', `expected a v2 object with host localhost and port 8080, got ${JSON.stringify(o)}`);
}

const CONVERSION_NOTE = 'the webhook server of test/conformance/util.ts, served in-process, stands in for the conversion webhook Pod and its Service (clientConfig `url`); it converts v1 `hostPort` to v2 `host`/`port` as upstream\'s, for the case\'s own group instead of stable.example.com';

const CONVERSION: Case[] = [
  {
    id: 'crd-conversion-webhook', area: 'admission',
    source: src(CONVERSION_E2E, 'should be able to convert from CR v1 to CR v2'),
    note: CONVERSION_NOTE,
    async check(ctx) {
      const crd = await conversionCrd(ctx);
      expectStatus(await ctx.api('POST', crd.path('v1'), hostPortCr(crd, 'cr-instance-1')), 201, 'create v1');
      verifyV2(crd, expectStatus(await ctx.api('GET', `${crd.path('v2')}/cr-instance-1`), 200, 'get v2').json);
    },
  },
  {
    id: 'crd-conversion-webhook-list', area: 'admission',
    source: src(CONVERSION_E2E, 'should be able to convert a non homogeneous list of CRs'),
    note: CONVERSION_NOTE,
    async check(ctx) {
      const crd = await conversionCrd(ctx);
      expectStatus(await ctx.api('POST', crd.path('v1'), hostPortCr(crd, 'cr-instance-1')), 201, 'create cr-instance-1 (stored as v1)');
      expectStatus(await update(ctx, crd.crdPath, (c) => { c.spec.versions = hostPortVersions('v2'); }), 200, 'update the CRD: v2 storage');
      await until('cr-instance-2 created', async () => (await ctx.api('POST', crd.path('v1'), hostPortCr(crd, 'cr-instance-2'))).status === 201, 10_000);
      for (const [version, verify] of [['v1', verifyV1], ['v2', verifyV2]] as const) {
        const list = expectStatus(await ctx.api('GET', crd.path(version)), 200, `list ${version}`).json;
        const names = list.items.map((i: any) => i.metadata.name).sort().join(',');
        expect(names === 'cr-instance-1,cr-instance-2', `${version} list: ${names}`);
        for (const i of list.items) verify(crd, i);
      }
    },
  },
];

const VAP_NOTE = 'custom resources stand in for the Deployment and the ReplicaSet (apps/v1 is not served): CRDs `deployments` and `replicasets` of a group of the case, with `spec.replicas`';

/** The policy's match: upstream's MatchUniqueNamespace plus one resource rule (CREATE, UPDATE). */
const vapMatch = (ns: string, group: string, resource: string) => ({
  namespaceSelector: { matchLabels: { [ns]: 'true' } },
  resourceRules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [group], apiVersions: ['v1'], resources: [resource] }],
});
const vap = (name: string, spec: object, labels?: Record<string, string>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name, ...(labels ? { labels } : {}) }, spec });
const vapBinding = (name: string, ns: string, policyName: string) => ({
  apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name },
  spec: { policyName, matchResources: { namespaceSelector: { matchLabels: { [ns]: 'true' } } }, validationActions: ['Deny'] },
});

/** CRDs standing in for apps/v1 Deployments and ReplicaSets. */
async function appsCrds(ctx: CaseContext): Promise<{ deployments: Crd; replicasets: Crd }> {
  const group = `apps${ctx.uid}.conformance.example.com`;
  const schema = { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { replicas: { type: 'integer' } } } } };
  const deployments = await makeCrd(ctx, { group, plural: 'deployments', kind: 'Deployment', schema });
  const replicasets = await makeCrd(ctx, { group, plural: 'replicasets', kind: 'ReplicaSet', schema });
  return { deployments, replicasets };
}
const workload = (crd: Crd, name: string, replicas: number) => ({
  apiVersion: `${crd.group}/v1`, kind: crd.kind, metadata: { name, labels: { app: 'nginx' } },
  spec: { replicas, selector: { matchLabels: { app: 'nginx' } }, template: { metadata: { labels: { app: 'nginx' } }, spec: { containers: [{ name: 'nginx', image: 'nginx:latest' }] } } },
});

/** Upstream's policy test body: the marker (1 replica) is denied as Invalid, `allowed` replicas are admitted, a 1-replica ReplicaSet is not matched. */
async function policyDeploymentTest(ctx: CaseContext, spec: (deployments: Crd) => object, allowed: number): Promise<void> {
  await withHooks(ctx, async (h) => {
    const { deployments, replicasets } = await appsCrds(ctx);
    const policy = `${ctx.ns}.policy.example.com`;
    expectStatus(await h.create('VAP', vap(policy, spec(deployments))), 201, 'create policy');
    expectStatus(await h.create('VAPB', vapBinding(`${ctx.ns}.binding.example.com`, ctx.ns, policy)), 201, 'create binding');
    await until('marker deployment denied (Invalid)', async () => {
      const r = await ctx.api('POST', deployments.path(), workload(deployments, 'marker-deployment', 1));
      await ctx.api('DELETE', `${deployments.path()}/marker-deployment`);
      if (r.status === 201) return false;
      if (r.status === 422 && r.json?.reason === 'Invalid') return true;
      throw new Error(`marker: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    }, 20_000);
    expectStatus(await ctx.api('POST', deployments.path(), workload(deployments, 'replicated', allowed)), 201, `create a Deployment with ${allowed} replicas`);
    expectStatus(await ctx.api('POST', replicasets.path(), workload(replicasets, 'non-replicated', 1)), 201, 'create a non-replicated ReplicaSet');
  });
}

/** Waits for a policy's `status.typeChecking` (short: type checking is done when the policy is written, or not at all). */
async function typeChecked(ctx: CaseContext, path: string): Promise<any> {
  return until(`status.typeChecking of ${path}`, async () => {
    const p = expectStatus(await ctx.api('GET', path), 200, 'get policy').json;
    return p.status?.typeChecking ? p : undefined;
  }, 5000);
}

const NO_APPS_TYPE_CHECK = 'apps/v1 deployments are not served, so the policy matches no kind to type check against (kube type checks only kinds its RESTMapper resolves): status.typeChecking has no warnings; the same checks against a served kind pass (vap-type-check-crd)';

const POLICIES: Case[] = [
  {
    id: 'vap-deployment', area: 'admission',
    source: src(VAP_E2E, 'should validate against a Deployment'),
    note: VAP_NOTE,
    check: (ctx) => policyDeploymentTest(ctx, (d) => ({
      matchConstraints: vapMatch(ctx.ns, d.group, d.plural),
      validations: [
        { expression: 'object.spec.replicas > 1', messageExpression: "'wants replicas > 1, got ' + object.spec.replicas" },
        { expression: `namespaceObject.metadata.name == '${ctx.ns}'`, message: 'Internal error! Other namespace should not be allowed.' },
      ],
    }), 2),
  },
  {
    id: 'vap-variables', area: 'admission',
    source: src(VAP_E2E, 'should allow expressions to refer variables.'),
    note: VAP_NOTE,
    check: (ctx) => policyDeploymentTest(ctx, (d) => ({
      matchConstraints: vapMatch(ctx.ns, d.group, d.plural),
      variables: [{ name: 'replicas', expression: 'object.spec.replicas' }, { name: 'oddReplicas', expression: 'variables.replicas % 2 == 1' }],
      validations: [{ expression: 'variables.replicas > 1' }, { expression: 'variables.oddReplicas' }],
    }), 3),
  },
  {
    id: 'vap-type-check', area: 'admission',
    source: src(VAP_E2E, 'should type check validation expressions'),
    knownGap: NO_APPS_TYPE_CHECK,
    check: (ctx) => withHooks(ctx, async (h) => {
      const match = vapMatch(ctx.ns, 'apps', 'deployments');
      expectStatus(await h.create('VAP', vap(`${ctx.ns}.correct-policy.example.com`, { matchConstraints: match, validations: [{ expression: 'object.spec.replicas > 1' }] })), 201, 'create the correct policy');
      const ok = await typeChecked(ctx, h.path('VAP', `${ctx.ns}.correct-policy.example.com`));
      expect((ok.status.typeChecking.expressionWarnings ?? []).length === 0, `warnings ${JSON.stringify(ok.status.typeChecking)}`);
      expectStatus(await h.create('VAP', vap(`${ctx.ns}.confused-policy.example.com`, { matchConstraints: match, validations: [{ expression: "object.spec.replicas > '1'", messageExpression: "'wants replicas > 1, got ' + object.spec.replicas" }] })), 201, 'create the confused policy');
      const bad = await typeChecked(ctx, h.path('VAP', `${ctx.ns}.confused-policy.example.com`));
      const w = bad.status.typeChecking.expressionWarnings ?? [];
      expect(w.length === 2, `2 warnings expected: ${JSON.stringify(w)}`);
      expect(w[0].fieldRef === 'spec.validations[0].expression' && w[0].warning.includes("found no matching overload for '_>_' applied to '(int, string)'"), `warning 0 ${JSON.stringify(w[0])}`);
      expect(w[1].fieldRef === 'spec.validations[0].messageExpression' && w[1].warning.includes("found no matching overload for '_+_' applied to '(string, int)'"), `warning 1 ${JSON.stringify(w[1])}`);
    }),
  },
  {
    id: 'vap-type-check-crd', area: 'admission',
    source: src(VAP_E2E, 'should type check a CRD'),
    check: (ctx) => withHooks(ctx, async (h) => {
      const schema = { type: 'object', properties: { spec: { type: 'object', properties: { cronSpec: { type: 'string' }, image: { type: 'string' }, replicas: { type: 'integer' } } } } };
      const crd = await makeCrd(ctx, { group: `stable.${ctx.ns}`, plural: 'crontabs', kind: 'CronTab', schema });
      const match = vapMatch(ctx.ns, crd.group, 'crontabs');
      expectStatus(await h.create('VAP', vap(`${ctx.ns}.correct-crd-policy.example.com`, { matchConstraints: match, validations: [{ expression: 'object.spec.replicas > 1' }] })), 201, 'create the correct policy');
      const ok = await typeChecked(ctx, h.path('VAP', `${ctx.ns}.correct-crd-policy.example.com`));
      expect((ok.status.typeChecking.expressionWarnings ?? []).length === 0, `warnings ${JSON.stringify(ok.status.typeChecking)}`);
      expectStatus(await h.create('VAP', vap(`${ctx.ns}.confused-crd-policy.example.com`, { matchConstraints: match, validations: [{ expression: "object.spec.replicas > '1'" }, { expression: 'object.spec.maxRetries < 10' }] })), 201, 'create the confused policy');
      const bad = await typeChecked(ctx, h.path('VAP', `${ctx.ns}.confused-crd-policy.example.com`));
      const w = bad.status.typeChecking.expressionWarnings ?? [];
      expect(w.length === 2, `2 warnings expected: ${JSON.stringify(w)}`);
      expect(w[0].fieldRef === 'spec.validations[0].expression' && w[0].warning.includes("found no matching overload for '_>_' applied to '(int, string)'"), `warning 0 ${JSON.stringify(w[0])}`);
      expect(w[1].fieldRef === 'spec.validations[1].expression' && w[1].warning.includes("undefined field 'maxRetries'"), `warning 1 ${JSON.stringify(w[1])}`);
    }),
  },
  {
    id: 'vap-api', area: 'admission',
    source: src(VAP_E2E, 'should support ValidatingAdmissionPolicy API operations'),
    check: (ctx) => apiOperationsTest(ctx, 'VAP', {
      validations: [{ expression: 'object.spec.replicas <= 100' }],
      matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }] },
    }, { failurePolicy: 'Ignore' }, (o) => { o.spec.failurePolicy = 'Fail'; }, (o) => o.spec.failurePolicy === 'Fail'),
  },
  {
    id: 'vapb-api', area: 'admission',
    source: src(VAP_E2E, 'should support ValidatingAdmissionPolicyBinding API operations'),
    check: (ctx) => apiOperationsTest(ctx, 'VAPB', { policyName: 'replicalimit-policy.example.com', validationActions: ['Deny'] },
      { validationActions: ['Warn'] }, (o) => { o.spec.validationActions = ['Deny']; }, (o) => JSON.stringify(o.spec.validationActions) === '["Deny"]'),
  },
];

/**
 * Upstream's "API operations" test of policies and bindings: discovery, create (three, by
 * generateName), get, list, watch, merge patch, update, the status subresource (policies only),
 * delete and deletecollection.
 */
async function apiOperationsTest(ctx: CaseContext, kind: 'VAP' | 'VAPB', spec: object, patchSpec: object, updateSpec: (o: any) => void, updated: (o: any) => boolean): Promise<void> {
  const { api, cluster } = ctx;
  const resource = KINDS[kind];
  const groups = expectStatus(await api('GET', `${cluster}/apis`), 200, '/apis').json;
  expect(groups.groups.some((g: any) => g.name === 'admissionregistration.k8s.io' && g.versions.some((v: any) => v.version === 'v1')), 'admissionregistration.k8s.io/v1 in /apis');
  const group = expectStatus(await api('GET', `${cluster}/apis/admissionregistration.k8s.io`), 200, 'group').json;
  expect(group.versions.some((v: any) => v.version === 'v1'), `versions ${JSON.stringify(group.versions)}`);
  const names = expectStatus(await api('GET', `${cluster}${ARV1}`), 200, 'group/version').json.resources.map((r: any) => r.name);
  expect(names.includes(resource), `${resource} in discovery: ${names}`);
  if (kind === 'VAP') expect(names.includes(`${resource}/status`), `${resource}/status in discovery: ${names}`);

  const base = `${cluster}${ARV1}/${resource}`;
  const labelKey = kind === 'VAP' ? 'example-e2e-vap-label' : 'example-e2e-vapb-label';
  const selector = `labelSelector=${labelKey}%3D${ctx.uid}`;
  const template = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: kind === 'VAP' ? 'ValidatingAdmissionPolicy' : 'ValidatingAdmissionPolicyBinding',
    metadata: { generateName: kind === 'VAP' ? 'e2e-example-vap-' : 'e2e-example-vapb-', labels: { [labelKey]: ctx.uid } }, spec,
  };
  try {
    expectStatus(await api('POST', base, template), 201, 'create 1');
    expectStatus(await api('POST', base, template), 201, 'create 2');
    const created = expectStatus(await api('POST', base, template), 201, 'create 3').json;
    const path = `${base}/${created.metadata.name}`;
    const read = expectStatus(await api('GET', path), 200, 'get').json;
    expect(read.metadata.uid === created.metadata.uid, 'same uid');
    const list = expectStatus(await api('GET', `${base}?${selector}`), 200, 'list').json;
    const w = ctx.watch(`${base}?watch=true&${selector}&resourceVersion=${list.metadata.resourceVersion}`);
    try {
      expect(await w.status === 200, 'watch started');
      const patched = expectStatus(await api('PATCH', path, { metadata: { annotations: { patched: 'true' } }, spec: patchSpec }, PATCH.merge), 200, 'patch').json;
      expect(patched.metadata.annotations?.patched === 'true', 'patched annotation');
      for (const [k, v] of Object.entries(patchSpec)) expect(JSON.stringify(patched.spec[k]) === JSON.stringify(v), `patched spec.${k}: ${JSON.stringify(patched.spec[k])}`);
      const up = expectStatus(await update(ctx, path, (o) => { o.metadata.annotations = { ...o.metadata.annotations, updated: 'true' }; updateSpec(o); }), 200, 'update').json;
      expect(up.metadata.annotations?.updated === 'true' && updated(up), `updated: ${JSON.stringify(up)}`);
      await until('watch event with the patched annotation', async () => {
        for (const e of w.events) {
          if (e.type !== 'MODIFIED') throw new Error(`watch: expected MODIFIED events, got ${e.type}`);
          if (e.object?.metadata?.annotations?.patched === 'true') return true;
        }
        return false;
      }, 10_000);
    } finally { w.close(); }

    if (kind === 'VAP') {
      const st = expectStatus(await api('GET', `${path}/status`), 200, 'get /status').json;
      expect(st.apiVersion === 'admissionregistration.k8s.io/v1' && st.kind === 'ValidatingAdmissionPolicy' && st.metadata.uid === created.metadata.uid, `/status: ${JSON.stringify(st).slice(0, 300)}`);
      const sp = expectStatus(await api('PATCH', `${path}/status`, { status: { conditions: [{ type: 'PatchStatusFailed', status: 'False', reason: 'e2e', message: 'Set from an e2e test', lastTransitionTime: '2024-01-01T00:00:00Z' }] } }, PATCH.merge), 200, 'patch /status').json;
      expect(sp.status?.conditions?.some((c: any) => c.type === 'PatchStatusFailed'), `patched status ${JSON.stringify(sp.status)}`);
      const su = expectStatus(await update(ctx, `${path}/status`, (o) => {
        o.status = { ...o.status, conditions: [...(o.status?.conditions ?? []), { type: 'StatusUpdateFailed', status: 'False', reason: 'E2E', message: 'Set from an e2e test', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] };
      }), 200, 'update /status').json;
      expect(su.status?.conditions?.some((c: any) => c.type === 'StatusUpdateFailed'), `updated status ${JSON.stringify(su.status)}`);
    }

    expectStatus(await api('DELETE', path), 200, 'delete');
    const gone = await api('GET', path);
    expect(gone.status === 404 || (gone.status === 200 && gone.json.metadata.deletionTimestamp && gone.json.metadata.finalizers?.length), `after delete: HTTP ${gone.status}`);
    const left = expectStatus(await api('GET', `${base}?${selector}`), 200, 'list').json.items.filter((i: any) => !i.metadata.finalizers?.length);
    expect(left.length === 2, `2 left after delete, got ${left.length}`);
    expectStatus(await api('DELETE', `${base}?${selector}`), 200, 'deletecollection');
    const none = expectStatus(await api('GET', `${base}?${selector}`), 200, 'list').json.items.filter((i: any) => !(i.metadata.deletionTimestamp && i.metadata.finalizers?.length));
    expect(none.length === 0, `0 left after deletecollection, got ${none.length}`);
  } finally {
    await api('DELETE', `${base}?${selector}`).catch(() => undefined);
  }
}

export const ADMISSION_CASES: Case[] = [...WEBHOOKS, ...CONVERSION, ...POLICIES];
