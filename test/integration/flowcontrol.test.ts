/**
 * API priority and fairness against a real shard: kube's default configuration in system:admin
 * (kubectl), the X-Kubernetes-PF-* headers, the ensurer, metrics, a flood in one workspace that
 * does not hold up another's GETs, and 429 with Retry-After from a full Reject level.
 *
 * The shard runs with 4 seats in all (--max-requests-inflight=4,
 * --max-mutating-requests-inflight=0), so global-default — every tenant's requests — has 1 seat
 * (ceil(4 × 20 / 245)) and queuing decides who goes next.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';
import { CM, call, createLogicalCluster, eventually, useTestServer, watch, type Kubectl, type TestServer } from '../helpers.js';
import { BOOTSTRAP } from '../../src/flowcontrol/bootstrap.js';

let srv: TestServer;
let kc: Kubectl;
useTestServer((s, _r, k) => { srv = s; kc = k; }, { maxRequestsInflight: 4, maxMutatingRequestsInflight: 0 });

const FC = '/clusters/system:admin/apis/flowcontrol.apiserver.k8s.io/v1';
const masters = (method: string, path: string, body?: unknown) => call(srv, srv.masters, method, path, body);
const admin = (method: string, path: string, body?: unknown, agent?: Agent) => call(srv, srv.creds, method, path, body, {}, agent);

test('kube\'s mandatory and suggested configuration is in system:admin, listed by kubectl', async () => {
  const { stdout } = await kc(['--context', 'system:admin', 'get', 'flowschemas,prioritylevelconfigurations', '--no-headers']);
  for (const name of Object.keys(BOOTSTRAP.flowSchemas)) assert.match(stdout, new RegExp(`^flowschema\\.flowcontrol\\.apiserver\\.k8s\\.io/${name}\\s`, 'm'), stdout);
  for (const name of Object.keys(BOOTSTRAP.priorityLevels)) assert.match(stdout, new RegExp(`^prioritylevelconfiguration\\.flowcontrol\\.apiserver\\.k8s\\.io/${name}\\s`, 'm'), stdout);
  // kube's columns: PriorityLevel, MatchingPrecedence, DistinguisherMethod; Type, shares, queues, hand, length.
  assert.match(stdout, /flowschema\.flowcontrol\.apiserver\.k8s\.io\/global-default\s+global-default\s+9900\s+ByUser\s/);
  assert.match(stdout, /prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io\/workload-low\s+Limited\s+100\s+128\s+6\s+50\s/);
  assert.match(stdout, /prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io\/exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>\s/);
  // /openapi/v3 knows the kinds: kubectl explain describes them.
  const explained = (await kc(['--context', 'system:admin', 'explain', 'prioritylevelconfigurations.spec.limited'])).stdout;
  assert.match(explained, /nominalConcurrencyShares\s+<integer>/);
  assert.match(explained, /limitResponse\s+<LimitResponse>/);
  const fs = await masters('GET', `${FC}/flowschemas/service-accounts`);
  assert.equal(fs.json.metadata.annotations['apf.kubernetes.io/autoupdate-spec'], 'true');
  assert.deepEqual(fs.json.spec, BOOTSTRAP.flowSchemas['service-accounts']);
});

test('FlowSchemas carry kube\'s Dangling condition (kubectl\'s MissingPL column)', async () => {
  await eventually('global-default Dangling=False', async () => (await masters('GET', `${FC}/flowschemas/global-default`)).json.status?.conditions?.some((c: any) => c.type === 'Dangling' && c.status === 'False' && c.reason === 'Found'));
  assert.equal((await masters('POST', `${FC}/flowschemas`, {
    metadata: { name: 'orphan' }, spec: { priorityLevelConfiguration: { name: 'nowhere' }, rules: [{ subjects: [{ kind: 'User', user: { name: 'x' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/x'] }] }] },
  })).status, 201);
  const cond = await eventually('orphan Dangling=True', async () => (await masters('GET', `${FC}/flowschemas/orphan`)).json.status?.conditions?.find((c: any) => c.type === 'Dangling' && c.status === 'True'));
  assert.equal(cond.message, 'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object');
  const { stdout } = await kc(['--context', 'system:admin', 'get', 'flowschemas', 'orphan', 'global-default', '--no-headers']);
  assert.match(stdout, /^orphan\s+nowhere\s+1000\s+<none>\s+\S+\s+True$/m);
  assert.match(stdout, /^global-default\s+global-default\s+9900\s+ByUser\s+\S+\s+False$/m);
  assert.equal((await masters('DELETE', `${FC}/flowschemas/orphan`)).status, 200);
});

test('responses name the FlowSchema and priority level (their UIDs); /metrics has apiserver_flowcontrol_*', async () => {
  const uid = async (kind: string, name: string) => (await masters('GET', `${FC}/${kind}/${name}`)).json.metadata.uid as string;
  const tenant = await admin('GET', '/clusters/root/api/v1/namespaces/default');
  assert.equal(tenant.status, 200);
  assert.equal(tenant.headers['x-kubernetes-pf-flowschema-uid'], await uid('flowschemas', 'global-default'));
  assert.equal(tenant.headers['x-kubernetes-pf-prioritylevel-uid'], await uid('prioritylevelconfigurations', 'global-default'));
  const root = await masters('GET', '/clusters/root/api/v1/namespaces/default');
  assert.equal(root.headers['x-kubernetes-pf-flowschema-uid'], await uid('flowschemas', 'exempt'));
  const metrics = (await admin('GET', '/metrics')).body;
  assert.match(metrics, /apiserver_flowcontrol_dispatched_requests_total\{priority_level="global-default",flow_schema="global-default"\} \d+/);
  assert.match(metrics, /apiserver_flowcontrol_nominal_limit_seats\{priority_level="global-default"\} 1\b/);
  assert.match(metrics, /apiserver_flowcontrol_current_executing_seats\{/);
});

test('the ensurer: a deleted mandatory object comes back, a suggested one edited with autoupdate-spec "false" stays', async () => {
  const before = (await masters('GET', `${FC}/flowschemas/catch-all`)).json.metadata.uid;
  assert.equal((await masters('DELETE', `${FC}/flowschemas/catch-all`)).status, 200);
  await eventually('catch-all re-created', async () => {
    const r = await masters('GET', `${FC}/flowschemas/catch-all`);
    return r.status === 200 && r.json.metadata.uid !== before;
  });
  // The mandatory spec is fixed.
  const patched = await call(srv, srv.masters, 'PATCH', `${FC}/flowschemas/exempt`, JSON.stringify({ spec: { matchingPrecedence: 5 } }), { 'content-type': 'application/merge-patch+json' });
  assert.equal(patched.status, 422, patched.body);
  assert.match(patched.json.message, /spec of 'exempt' must equal the fixed value/);
  const mine = await call(srv, srv.masters, 'PATCH', `${FC}/prioritylevelconfigurations/workload-low`,
    JSON.stringify({ metadata: { annotations: { 'apf.kubernetes.io/autoupdate-spec': 'false' } }, spec: { limited: { nominalConcurrencyShares: 77 } } }), { 'content-type': 'application/merge-patch+json' });
  assert.equal(mine.status, 200, mine.body);
  // A change of another object runs the ensurer again; the administrator's edit survives it.
  await masters('DELETE', `${FC}/flowschemas/probes`);
  await eventually('probes re-created', async () => (await masters('GET', `${FC}/flowschemas/probes`)).status === 200);
  assert.equal((await masters('GET', `${FC}/prioritylevelconfigurations/workload-low`)).json.spec.limited.nominalConcurrencyShares, 77);
});

test('a flood of LISTs in workspace A holds up A, not workspace B\'s GETs', async (t) => {
  for (const ws of ['nn-a', 'nn-b']) {
    assert.equal((await createLogicalCluster(srv, ws)).status, 201);
    assert.equal((await masters('POST', `/clusters/${ws}/api/v1/namespaces`, { metadata: { name: 'bench' } })).status, 201);
  }
  const agent = new Agent({ keepAlive: true, maxSockets: 32, ca: srv.creds.ca, cert: srv.creds.cert, key: srv.creds.key });
  const A = '/clusters/nn-a/api/v1/namespaces/bench/configmaps';
  const payload = 'x'.repeat(1000);
  for (let i = 0; i < 300; i += 30) {
    await Promise.all(Array.from({ length: 30 }, (_, j) => admin('POST', A, CM(`cm-${i + j}`, { v: payload }), agent).then((r) => assert.equal(r.status, 201, r.body))));
  }
  assert.equal((await admin('POST', '/clusters/nn-b/api/v1/namespaces/bench/configmaps', CM('probe'), agent)).status, 201);
  const aLatencies: number[] = [];
  const bLatencies: number[] = [];
  const end = performance.now() + 2000;
  const lister = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const r = await admin('GET', A, undefined, agent);
      assert.equal(r.status, 200, r.body.slice(0, 200));
      aLatencies.push(performance.now() - t0);
    }
  };
  const prober = async () => {
    await new Promise((r) => setTimeout(r, 200));
    const pending: Promise<void>[] = [];
    while (performance.now() < end - 200) {
      const t0 = performance.now();
      pending.push(admin('GET', '/clusters/nn-b/api/v1/namespaces/bench/configmaps/probe', undefined, agent).then((r) => {
        assert.equal(r.status, 200, r.body);
        bLatencies.push(performance.now() - t0);
      }));
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all(pending);
  };
  await Promise.all([...Array.from({ length: 24 }, lister), prober()]);
  agent.destroy();
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
  const a = median(aLatencies); const b = median(bLatencies);
  t.diagnostic(`A: ${aLatencies.length} LISTs, median ${a.toFixed(1)} ms; B: ${bLatencies.length} GETs, median ${b.toFixed(1)} ms`);
  // 24 LISTs share one seat: each waits for the others; B's GET waits for about one LIST.
  assert.ok(bLatencies.length >= 20, `${bLatencies.length} GETs of B`);
  assert.ok(b * 3 < a, `B's median GET ${b.toFixed(1)} ms is not well below A's median LIST ${a.toFixed(1)} ms`);
});

test('a watch holds its seats only while it initialises', async () => {
  // global-default has 1 seat: five open watches of the tenant would otherwise starve it.
  const watches = Array.from({ length: 5 }, () => watch(srv, srv.creds, '/clusters/root/api/v1/namespaces/default/configmaps?watch=true'));
  try {
    assert.deepEqual(await Promise.all(watches.map((w) => w.status)), [200, 200, 200, 200, 200]);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    const r = await admin('GET', '/clusters/root/api/v1/namespaces/default/configmaps');
    assert.equal(r.status, 200, r.body);
    assert.ok(performance.now() - t0 < 5000);
    const metrics = (await admin('GET', '/metrics')).body;
    // The watches are open, none holds a seat (/metrics is served outside the filter, as /healthz).
    assert.match(metrics, /apiserver_flowcontrol_current_executing_requests\{priority_level="global-default",flow_schema="global-default"\} 0\b/);
    assert.match(metrics, /apiserver_longrunning_requests \d+/);
  } finally {
    for (const w of watches) w.close();
  }
});

/** A GET of `path` whose client stops reading once the headers came: `done` tells whether the whole body arrived after `resume()`. */
function stalledGet(path: string, accept = 'application/json'): { headers: Promise<number>; resume(): void; close(): void; done: Promise<{ complete: boolean; bytes: number }> } {
  const u = new URL(srv.url + path);
  let resume!: () => void;
  let close!: () => void;
  let headersResolve!: (code: number) => void;
  const headers = new Promise<number>((r) => { headersResolve = r; });
  const done = new Promise<{ complete: boolean; bytes: number }>((resolve) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', ca: srv.creds.ca, cert: srv.creds.cert, key: srv.creds.key, agent: false, headers: { accept } }, (res) => {
      res.pause();
      headersResolve(res.statusCode ?? 0);
      let bytes = 0;
      res.on('data', (c: Buffer) => { bytes += c.length; });
      resume = () => res.resume();
      res.on('close', () => resolve({ complete: res.complete, bytes }));
    });
    req.on('error', () => resolve({ complete: false, bytes: 0 }));
    close = () => req.destroy();
    req.end();
  });
  return { headers, resume: () => resume?.(), close: () => close(), done };
}

test('a response whose client stops reading gives its seat back; past 8 of one flow they are cut', async () => {
  // 40 ConfigMaps of 500 KB: a LIST of 20 MB, more than the sockets' buffers hold.
  for (const ws of ['stall-a', 'stall-b']) {
    assert.equal((await createLogicalCluster(srv, ws)).status, 201);
    assert.equal((await masters('POST', `/clusters/${ws}/api/v1/namespaces`, { metadata: { name: 'big' } })).status, 201);
  }
  const A = '/clusters/stall-a/api/v1/namespaces/big/configmaps';
  const B = '/clusters/stall-b/api/v1/namespaces/big/configmaps';
  const payload = 'x'.repeat(500_000);
  for (let i = 0; i < 40; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => admin('POST', A, CM(`cm-${i + j}`, { v: payload })).then((r) => assert.equal(r.status, 201, r.body.slice(0, 200)))));
  }
  assert.equal((await admin('POST', B, CM('probe'))).status, 201);
  const bGet = async () => {
    const t0 = performance.now();
    const r = await admin('GET', `${B}/probe`);
    return { status: r.status, ms: performance.now() - t0 };
  };
  // global-default has one seat. A watch of the 40 that never reads its initial events, then ten
  // LISTs that never read (one in YAML: an answer written whole, not in slices): each takes the
  // seat in turn and gives it back once stalled.
  const stalled = [stalledGet(`${A}?watch=true`), stalledGet(A, 'application/yaml'), ...Array.from({ length: 9 }, () => stalledGet(A))];
  assert.deepEqual(await Promise.all(stalled.map((s) => s.headers)), Array(11).fill(200));
  await new Promise((r) => setTimeout(r, 1000));
  // Before: B's GET waited 15 s in the queue and was refused (429).
  const b = await bGet();
  assert.equal(b.status, 200);
  assert.ok(b.ms < 2000, `B's GET took ${b.ms.toFixed(0)} ms`);
  for (const s of stalled.slice(1)) s.resume();
  const lists = await Promise.all(stalled.slice(1).map((s) => s.done));
  stalled[0]!.close();
  // Eight parked LISTs of the flow finish as the client reads; the other two were cut.
  assert.deepEqual(lists.map((l) => l.complete).sort(), [...Array(2).fill(false), ...Array(8).fill(true)], JSON.stringify(lists));
  for (const l of lists) if (l.complete) assert.ok(l.bytes > 20_000_000, `${l.bytes} bytes`);
  // Parked responses that finished count no more: a new stalled LIST parks again, and is not cut.
  const again = stalledGet(A);
  assert.equal(await again.headers, 200);
  await new Promise((r) => setTimeout(r, 800));
  assert.equal((await bGet()).status, 200);
  again.resume();
  assert.equal((await again.done).complete, true);
});

test('a full Reject level answers 429 TooManyRequests with Retry-After at once', async () => {
  assert.equal((await masters('POST', `${FC}/prioritylevelconfigurations`, {
    metadata: { name: 'tiny' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } },
  })).status, 201);
  assert.equal((await masters('POST', `${FC}/flowschemas`, {
    metadata: { name: 'tiny' },
    spec: {
      priorityLevelConfiguration: { name: 'tiny' }, matchingPrecedence: 10, distinguisherMethod: { type: 'ByUser' },
      rules: [{ subjects: [{ kind: 'User', user: { name: 'kcp-admin' } }], resourceRules: [{ verbs: ['*'], apiGroups: [''], resources: ['configmaps'], namespaces: ['tiny'] }] }],
    },
  })).status, 201);
  const tinyUID = await eventually('tiny in use', async () => {
    const r = await admin('GET', '/clusters/root/api/v1/namespaces/tiny/configmaps');
    const fsUID = (await masters('GET', `${FC}/flowschemas/tiny`)).json.metadata.uid;
    return r.headers['x-kubernetes-pf-flowschema-uid'] === fsUID && fsUID;
  });
  // A list at a revision the shard has not reached holds the level's one seat for 3 s (then 504).
  const holder = admin('GET', '/clusters/root/api/v1/namespaces/tiny/configmaps?resourceVersion=999999999');
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const refused = await admin('GET', '/clusters/root/api/v1/namespaces/tiny/configmaps');
  assert.equal(refused.status, 429, refused.body);
  assert.ok(performance.now() - t0 < 1000, 'refused at once, not queued');
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(refused.headers['x-kubernetes-pf-flowschema-uid'], tinyUID);
  assert.equal(refused.json.kind, 'Status');
  assert.equal(refused.json.reason, 'TooManyRequests');
  assert.equal(refused.json.message, 'Too many requests, please try again later.');
  // Other namespaces are another schema's: served.
  assert.equal((await admin('GET', '/clusters/root/api/v1/namespaces/default/configmaps')).status, 200);
  assert.equal((await holder).status, 504);
  assert.equal((await admin('GET', '/clusters/root/api/v1/namespaces/tiny/configmaps')).status, 200);
  const metrics = (await admin('GET', '/metrics')).body;
  assert.match(metrics, /apiserver_flowcontrol_rejected_requests_total\{priority_level="tiny",flow_schema="tiny",reason="concurrency-limit"\} 1/);
});
