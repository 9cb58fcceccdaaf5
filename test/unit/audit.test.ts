import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLogWriter, AuditPolicyError, evaluatePolicy, loadAuditPolicy, microTime, parseAuditPolicy, rotatedName, sourceIPs, type AuditAttributes } from '../../src/endpoints/filters/audit.js';

const alice = { name: 'alice', groups: ['devs', 'system:authenticated'] };
const res = (o: Partial<AuditAttributes>): AuditAttributes => ({ user: alice, verb: 'get', isResourceRequest: true, path: '', apiGroup: '', resource: 'configmaps', subresource: '', namespace: 'default', name: 'x', ...o });
const nonRes = (path: string, o: Partial<AuditAttributes> = {}): AuditAttributes => ({ user: alice, verb: 'get', isResourceRequest: false, path, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', ...o });

const POLICY = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["pods/log", "*/status"]
  - level: Request
    resources:
      - group: ""
        resources: ["secrets"]
        resourceNames: ["important"]
    omitStages: [ResponseStarted]
  - level: Metadata
    resources:
      - group: "apps"
        resources: ["deployments/*"]
  - level: Request
    userGroups: ["devs"]
    verbs: [create, update]
    namespaces: [team]
    omitManagedFields: true
  - level: Metadata
    resources: [{group: "rbac.authorization.k8s.io", resources: ["*"]}]
  - level: None
    resources: [{group: ""}]
  - level: Metadata
`;

test('policy: first matching rule wins, all levels, omitStages union, omitManagedFields', () => {
  const p = parseAuditPolicy(POLICY);
  assert.equal(p.rules.length, 9);
  const lv = (a: AuditAttributes) => evaluatePolicy(p, a).level;
  assert.equal(lv(res({ user: { name: 'system:kube-proxy', groups: [] } })), 'None');
  assert.equal(lv(nonRes('/healthz')), 'None');
  assert.equal(lv(nonRes('/healthz/ping')), 'None');
  assert.equal(lv(nonRes('/version')), 'None');
  assert.equal(lv(nonRes('/versions')), 'Metadata', 'exact match without *');
  assert.equal(lv(nonRes('/api')), 'Metadata');
  assert.equal(lv(res({ resource: 'pods', subresource: 'log' })), 'RequestResponse');
  assert.equal(lv(res({ resource: 'pods' })), 'None', 'pods/log does not match pods; core group → None rule');
  assert.equal(lv(res({ resource: 'deployments', apiGroup: 'apps', subresource: 'status' })), 'Metadata', '*/status is core only');
  assert.equal(lv(res({ resource: 'services', subresource: 'status' })), 'RequestResponse');
  assert.equal(lv(res({ resource: 'deployments', apiGroup: 'apps', subresource: 'scale' })), 'Metadata');
  assert.equal(lv(res({ resource: 'secrets', name: 'important' })), 'Request');
  assert.equal(lv(res({ resource: 'secrets', name: 'other' })), 'None');
  const r = evaluatePolicy(p, res({ resource: 'secrets', name: 'important' }));
  assert.deepEqual([...r.omitStages].sort(), ['RequestReceived', 'ResponseStarted']);
  assert.equal(r.omitManagedFields, false);
  const team = evaluatePolicy(p, res({ apiGroup: 'example.com', resource: 'widgets', verb: 'create', namespace: 'team' }));
  assert.equal(team.level, 'Request');
  assert.equal(team.omitManagedFields, true);
  assert.equal(lv(res({ apiGroup: 'example.com', resource: 'widgets', verb: 'delete', namespace: 'team' })), 'Metadata', 'verb not listed');
  assert.equal(lv(res({ apiGroup: 'example.com', resource: 'widgets', verb: 'create', namespace: 'team', user: { name: 'bob', groups: ['ops'] } })), 'Metadata', 'group not held');
  assert.equal(lv(res({ apiGroup: 'rbac.authorization.k8s.io', resource: 'roles' })), 'Metadata');
  assert.equal(lv(nonRes('/openapi/v2', { user: undefined })), 'Metadata', 'a failed authentication matches rules without users');
  assert.deepEqual(evaluatePolicy(p, res({ resource: 'configmaps' })).omitStages, ['RequestReceived']);
});

test('policy: no match is level None; namespaces only match resource requests', () => {
  const p = parseAuditPolicy('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  namespaces: [""]\n- level: Metadata\n  nonResourceURLs: ["*"]\n');
  assert.equal(evaluatePolicy(p, res({ namespace: 'default' })).level, 'None');
  assert.equal(evaluatePolicy(p, res({ namespace: '', resource: 'namespaces' })).level, 'RequestResponse', 'cluster-scoped: empty namespace');
  assert.equal(evaluatePolicy(p, nonRes('/anything')).level, 'Metadata');
});

test('policy: invalid policies name the field', () => {
  const bad = (text: string, re: RegExp) => assert.throws(() => parseAuditPolicy(text, 'p.yaml'), (e: unknown) => e instanceof AuditPolicyError && re.test(e.message), text);
  const head = 'apiVersion: audit.k8s.io/v1\nkind: Policy\n';
  bad('rules: [level: x', /^p\.yaml: \(file\): not valid YAML/);
  bad('apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]', /p\.yaml: apiVersion: Unsupported value: "audit\.k8s\.io\/v1beta1"/);
  bad('apiVersion: audit.k8s.io/v1\nkind: Pod\nrules: [{level: None}]', /kind: Unsupported value/);
  bad(`${head}rules: []`, /rules: the policy has no rules/);
  bad(`${head}rules: [{level: Everything}]`, /rules\[0\]\.level: Unsupported value: "Everything"/);
  bad(`${head}rules: [{level: None}, {verbs: [get]}]`, /rules\[1\]\.level: Required value/);
  bad(`${head}rules: [{level: None, namespace: [a]}]`, /rules\[0\]\.namespace: unknown field/);
  bad(`${head}rules: [{level: None, omitStages: [Sent]}]`, /rules\[0\]\.omitStages\[0\]: Unsupported value: "Sent"/);
  bad(`${head}omitStages: [Nope]\nrules: [{level: None}]`, /^p\.yaml: omitStages\[0\]/);
  bad(`${head}rules: [{level: None, nonResourceURLs: ["/a"], resources: [{group: ""}]}]`, /rules\[0\]\.nonResourceURLs: rules cannot apply to both/);
  bad(`${head}rules: [{level: None, nonResourceURLs: ["healthz"]}]`, /nonResourceURLs\[0\]: .*must begin with a '\/'/);
  bad(`${head}rules: [{level: None, nonResourceURLs: ["/a*/b"]}]`, /nonResourceURLs\[0\]: .*final character/);
  bad(`${head}rules: [{level: None, resources: [{group: "apps/v1"}]}]`, /rules\[0\]\.resources\[0\]\.group: Invalid value: "apps\/v1"/);
  bad(`${head}rules: [{level: None, resources: [{group: "", resourceNames: [a]}]}]`, /resources\[0\]\.resourceNames: using resourceNames requires at least one resource/);
  bad(`${head}rules: [{level: None, users: alice}]`, /rules\[0\]\.users: must be a list/);
  const dir = mkdtempSync(join(tmpdir(), 'audit-'));
  assert.throws(() => loadAuditPolicy(join(dir, 'missing.yaml')), /--audit-policy-file .*missing\.yaml: ENOENT/);
  writeFileSync(join(dir, 'p.yaml'), `${head}rules: [{level: Sometimes}]`);
  assert.throws(() => loadAuditPolicy(join(dir, 'p.yaml')), /--audit-policy-file .*p\.yaml: rules\[0\]\.level/);
});

test('helpers: micro time, source IPs, lumberjack backup names', () => {
  assert.equal(microTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678) + 0.9), '2024-01-02T03:04:05.678900Z');
  assert.deepEqual(sourceIPs({ 'x-forwarded-for': '1.2.3.4, 5.6.7.8', 'x-real-ip': '5.6.7.8' }, '::ffff:127.0.0.1'), ['1.2.3.4', '5.6.7.8', '127.0.0.1']);
  assert.deepEqual(sourceIPs({}, '10.0.0.1'), ['10.0.0.1']);
  assert.equal(rotatedName('/var/log/audit.log', new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6))), '/var/log/audit-2024-01-02T03-04-05.006.log');
  assert.equal(rotatedName('/x/audit', new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6))), '/x/audit-2024-01-02T03-04-05.006');
});

test('writer: buffered JSON lines, rotation by size, maxbackup', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-'));
  const file = join(dir, 'audit.log');
  let t = Date.UTC(2024, 0, 1);
  const w = new AuditLogWriter({ path: file, maxSizeBytes: 1000, maxBackups: 2, now: () => new Date(t += 1000) });
  const line = (i: number) => ({ i, pad: 'x'.repeat(80) }); // ~100 bytes a line
  for (let i = 0; i < 25; i++) w.write(line(i));
  assert.equal(readFileSync(file, 'utf8'), '', 'nothing written synchronously');
  await w.flush();
  for (let i = 25; i < 45; i++) { w.write(line(i)); if (i % 7 === 0) await w.flush(); }
  await w.close();
  const files = readdirSync(dir).sort();
  // 45 lines of ~100 bytes, 9 per 1000-byte file: 5 files; only the current and 2 backups remain.
  assert.equal(files.length, 3, files.join(' '));
  assert.ok(files.includes('audit.log'));
  for (const f of files) {
    if (f !== 'audit.log') assert.match(f, /^audit-2024-01-01T00-00-\d\d\.000\.log$/);
    assert.ok(readFileSync(join(dir, f)).length <= 1000, `${f} within maxsize`);
  }
  const all = files.filter((f) => f !== 'audit.log').sort().concat('audit.log').flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).i as number));
  assert.deepEqual(all, Array.from({ length: all.length }, (_, k) => 45 - all.length + k), 'the newest lines, in order, none lost in the kept files');
  assert.ok(all.length >= 18);
});

test('writer: maxage removes old backups; an existing file counts towards maxsize; buffer limit drops', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-'));
  const file = join(dir, 'a.log');
  writeFileSync(join(dir, 'a-2020-01-01T00-00-00.000.log'), 'old\n');
  writeFileSync(file, 'y'.repeat(990) + '\n');
  const w = new AuditLogWriter({ path: file, maxSizeBytes: 1000, maxAgeDays: 30, now: () => new Date(Date.UTC(2024, 5, 1)) });
  w.write({ hello: 'world' });
  await w.close();
  assert.equal(existsSync(join(dir, 'a-2020-01-01T00-00-00.000.log')), false, 'older than 30 days');
  assert.equal(readFileSync(join(dir, 'a-2024-06-01T00-00-00.000.log'), 'utf8').length, 991);
  assert.equal(readFileSync(file, 'utf8'), '{"hello":"world"}\n');
  const warnings: string[] = [];
  const small = new AuditLogWriter({ path: join(dir, 'b.log'), bufferEvents: 3, warn: (m) => warnings.push(m) });
  for (let i = 0; i < 5; i++) small.write({ i });
  await small.close();
  assert.equal(small.droppedEvents, 2);
  assert.match(warnings[0]!, /buffer of 3 events full/);
  assert.equal(readFileSync(join(dir, 'b.log'), 'utf8').split('\n').filter(Boolean).length, 3);
});
