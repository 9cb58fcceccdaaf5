/**
 * The operator and its Helm chart on a real kube-apiserver (+ etcd, + kube-controller-manager's
 * garbage collector, deployment and statefulset controllers) and a real helm: the chart lints,
 * renders objects the apiserver accepts, installs; the operator, run with the chart's
 * ServiceAccount (real RBAC), reconciles a KcpInstance with two Shards into every expected host
 * object; certificates chain to the instance's CAs; nothing is written once converged; drift is
 * undone; deleting the KcpInstance leaves nothing behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { inspectCertificate, isIssuedBy } from '../../src/pki/certs.js';
import { readKubeconfig, resolveKubeconfigContext } from '../../src/pki/kubeconfig.js';
import { startOperator, type RunningOperator } from '../../operator/manager.js';
import { LeaderElector } from '../../operator/leaderelection.js';
import { HostClient } from '../../operator/kube/client.js';
import { startHostCluster, kstatus, type HostCluster } from '../hostcluster.js';
import { eventually, settleAll, sleep, startRedis, type TestRedis } from '../helpers.js';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'kcp-operator');
const NS = 'kcp-system';

describe('operator and Helm chart on a real kube-apiserver', { timeout: 600_000 }, () => {
  let host: HostCluster;
  let redis: TestRedis;
  let operator: RunningOperator | undefined;
  const logs: string[] = [];

  before(async () => {
    // Both settle before a failure is thrown, so that `after` stops whichever did start (a Redis
    // left running keeps the test process alive forever).
    await settleAll([startHostCluster().then((h) => { host = h; }), startRedis().then((r) => { redis = r; })]);
  });
  after(async () => {
    await operator?.stop();
    await redis?.stop();
    await host?.stop();
  });

  const getJson = async (args: string[]) => JSON.parse((await host.kubectl([...args, '-o', 'json'])).stdout);
  const names = async (kind: string, selector = 'app.kubernetes.io/instance=kcp') =>
    ((await getJson(['get', kind, '-n', NS, ...(selector ? ['-l', selector] : [])])).items as { metadata: { name: string } }[]).map((o) => o.metadata.name).sort();
  const secretData = async (name: string, key: string) => Buffer.from((await getJson(['get', 'secret', name, '-n', NS])).data[key], 'base64').toString();

  it('helm lint passes and helm template renders objects the kube-apiserver accepts (server-side dry run)', async () => {
    const lint = await host.helm(['lint', CHART, '--strict']);
    assert.match(lint.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    await host.kubectl(['create', 'namespace', NS]);
    // Without flags, helm assumes the Kubernetes version of its own client-go (as its releases are built).
    const plain = await host.helm(['template', 'kcp-operator', CHART, '-n', NS]);
    assert.match(plain.stdout, /^kind: Deployment$/m, 'helm template renders without --kube-version');
    // Rendered for the cluster's version, as GitOps tools do (--kube-version); the chart needs 1.29+ (native sidecars).
    const rendered = (await host.helm(['template', 'kcp-operator', CHART, '-n', NS, '--kube-version', 'v1.34.4'])).stdout;
    assert.equal(rendered, plain.stdout, 'nothing in the chart depends on the version beyond its minimum');
    const old = await host.helm(['template', 'kcp-operator', CHART, '--kube-version', 'v1.28.0'], { allowFail: true });
    assert.match(old.stderr, /chart requires kubeVersion: >=1.29.0-0/);
    for (const kind of ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment', 'Service']) {
      assert.match(rendered, new RegExp(`^kind: ${kind}$`, 'm'), `renders a ${kind}`);
    }
    // Strict field validation: a CRD schema with a key JSONSchemaProps does not have (a YAML flow
    // mapping cut at a comma) is refused instead of warned about.
    const dry = await host.kubectl(['apply', '--dry-run=server', '--validate=strict', '-f', '-'], { input: rendered });
    assert.doesNotMatch(dry.stderr, /unknown field/);
    assert.match(dry.stdout, /customresourcedefinition.apiextensions.k8s.io\/kcpinstances.operator.kcp-ts.io created \(server dry run\)/);
    assert.match(dry.stdout, /deployment.apps\/kcp-operator created \(server dry run\)/);
    // values.schema.json refuses a mistyped value with a clear error.
    const bad = await host.helm(['template', 'x', CHART, '--kube-version', 'v1.34.4', '--set', 'replicaCount=two'], { allowFail: true });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /replicaCount/);
  });

  it('helm install creates the CRDs (established), RBAC and the operator Deployment with its Redis sidecar', async () => {
    await host.helm(['install', 'kcp-operator', CHART, '-n', NS]);
    for (const crd of ['kcpinstances', 'shards', 'rootworkspaces']) {
      await host.kubectl(['wait', '--for=condition=Established', `crd/${crd}.operator.kcp-ts.io`, '--timeout=30s']);
    }
    const dep = await getJson(['get', 'deployment', 'kcp-operator', '-n', NS]);
    const pod = dep.spec.template.spec;
    assert.equal(pod.serviceAccountName, 'kcp-operator');
    assert.deepEqual(pod.containers[0].args.slice(0, 2), ['operator', '--redis-url=redis://127.0.0.1:6379']);
    assert.equal(pod.initContainers[0].restartPolicy, 'Always', 'Redis is a native sidecar');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.containers[0].securityContext.readOnlyRootFilesystem, true);
    // Least privilege: the operator may not touch what it has no business with.
    const can = async (verb: string, resource: string) => (await host.kubectl(['auth', 'can-i', verb, resource, '-n', NS, '--as', `system:serviceaccount:${NS}:kcp-operator`], { allowFail: true })).stdout.trim();
    assert.equal(await can('patch', 'deployments.apps'), 'yes');
    assert.equal(await can('update', 'kcpinstances.operator.kcp-ts.io/status'), 'yes');
    assert.equal(await can('create', 'pods'), 'no');
    assert.equal(await can('delete', 'customresourcedefinitions.apiextensions.k8s.io'), 'no');
    assert.equal(await can('create', 'clusterrolebindings.rbac.authorization.k8s.io'), 'no');
  });

  it('reconciles a KcpInstance with two Shards into every expected object, with its ServiceAccount\'s RBAC', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(await host.serviceAccountKubeconfig(NS, 'kcp-operator'));
    operator = await startOperator({ kubeConfig: kc, queueRedisUrl: redis.url, log: (m) => logs.push(m) });
    await host.kubectl(['apply', '-f', '-'], {
      input: [
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: KcpInstance\nmetadata: {name: kcp, namespace: kcp-system}\nspec:\n  version: "0.1.0"\n  external: {hostname: kcp.example.com, port: 443}\n  frontProxy: {service: {type: LoadBalancer, annotations: {example.com/lb: internal}}}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: alpha, namespace: kcp-system}\nspec: {instanceRef: {name: kcp}, labels: {region: eu}}\n',
        'apiVersion: operator.kcp-ts.io/v1alpha1\nkind: Shard\nmetadata: {name: beta, namespace: kcp-system}\nspec: {instanceRef: {name: kcp}, redis: {mode: External, external: {url: "redis://redis.example.com:6379", credentialsSecretRef: {name: beta-redis}}}}\n',
      ].join('---\n'),
    });
    const wantDeployments = ['kcp-front-proxy', 'kcp-shard-alpha', 'kcp-shard-beta', 'kcp-shard-root'];
    await eventually('Deployments', async () => JSON.stringify(await names('deployments')) === JSON.stringify(wantDeployments), 60_000);
    // beta's Redis is external: no StatefulSet of its own.
    await eventually('StatefulSets', async () => JSON.stringify(await names('statefulsets')) === JSON.stringify(['kcp-shard-alpha-redis', 'kcp-shard-root-redis']), 30_000);
    assert.deepEqual(await names('services'), ['kcp-front-proxy', 'kcp-shard-alpha', 'kcp-shard-alpha-redis', 'kcp-shard-beta', 'kcp-shard-root', 'kcp-shard-root-redis']);
    assert.deepEqual(await names('configmaps'), ['kcp-ca-bundle', 'kcp-revoked-certificates', 'kcp-shard-alpha-redis', 'kcp-shard-root-redis']);
    const wantSecrets = [
      'kcp-admin-kubeconfig', 'kcp-ca', 'kcp-front-proxy-ca', 'kcp-front-proxy-client', 'kcp-front-proxy-kubeconfig', 'kcp-front-proxy-serving',
      'kcp-service-account-key', 'kcp-shard-alpha-client', 'kcp-shard-alpha-root-kubeconfig', 'kcp-shard-alpha-serving',
      'kcp-shard-beta-client', 'kcp-shard-beta-root-kubeconfig', 'kcp-shard-beta-serving', 'kcp-shard-root-client', 'kcp-shard-root-serving',
    ];
    await eventually('Secrets', async () => JSON.stringify(await names('secrets')) === JSON.stringify(wantSecrets), 30_000);

    // Objects of the root shard and the front-proxy belong to the instance, a Shard's to the Shard.
    const inst = await getJson(['get', 'kcpinstance', 'kcp', '-n', NS]);
    const alpha = await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS]);
    const root = await getJson(['get', 'deployment', 'kcp-shard-root', '-n', NS]);
    assert.equal(root.metadata.ownerReferences[0].uid, inst.metadata.uid);
    assert.equal(root.metadata.labels['app.kubernetes.io/managed-by'], 'kcp-ts-operator');
    assert.equal(root.metadata.labels['app.kubernetes.io/version'], '0.1.0');
    const a = await getJson(['get', 'deployment', 'kcp-shard-alpha', '-n', NS]);
    assert.equal(a.metadata.ownerReferences[0].uid, alpha.metadata.uid);
    assert.ok(alpha.metadata.finalizers.includes('operator.kcp-ts.io/shard-registration'));
    assert.ok(alpha.metadata.ownerReferences.some((r: { uid: string }) => r.uid === inst.metadata.uid), 'a Shard is owned by its instance');
    const c = a.spec.template.spec.containers[0];
    assert.equal(c.image, 'ghcr.io/kcp-ts/kcp-ts:0.1.0');
    assert.ok(c.args.includes('--shard-name=alpha') && c.args.includes('--shard-labels=region=eu'));
    assert.ok(c.args.includes('--root-shard-kubeconfig-file=/etc/kcp-ts/root-kubeconfig/kubeconfig'));
    assert.ok(c.args.includes('--redis-url=redis://kcp-shard-alpha-redis.kcp-system.svc:6379'));
    assert.ok(c.args.includes('--shard-external-url=https://kcp.example.com:443'));
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.livenessProbe.httpGet.path, '/livez');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(a.spec.template.spec.securityContext.runAsNonRoot, true);
    const b = (await getJson(['get', 'deployment', 'kcp-shard-beta', '-n', NS])).spec.template.spec.containers[0];
    assert.ok(b.args.includes('--redis-url=redis://:$(REDIS_PASSWORD)@redis.example.com:6379'), b.args.join(' '));
    assert.deepEqual(b.env[0].valueFrom.secretKeyRef, { name: 'beta-redis', key: 'password' });
    const redisSts = await getJson(['get', 'statefulset', 'kcp-shard-root-redis', '-n', NS]);
    assert.equal(redisSts.spec.volumeClaimTemplates[0].spec.resources.requests.storage, '1Gi');
    assert.match((await getJson(['get', 'configmap', 'kcp-shard-root-redis', '-n', NS])).data['redis.conf'], /appendfsync always/);
    const proxySvc = await getJson(['get', 'service', 'kcp-front-proxy', '-n', NS]);
    assert.equal(proxySvc.spec.type, 'LoadBalancer');
    assert.equal(proxySvc.metadata.annotations['example.com/lb'], 'internal');
    assert.equal(proxySvc.spec.ports[0].port, 443);
  });

  it('certificates chain to the instance CAs with the right SANs; the admin kubeconfig trusts the CA', async () => {
    const ca = await secretData('kcp-ca', 'tls.crt');
    const fpca = await secretData('kcp-front-proxy-ca', 'tls.crt');
    for (const s of ['root', 'alpha', 'beta']) {
      const serving = await secretData(`kcp-shard-${s}-serving`, 'tls.crt');
      assert.ok(isIssuedBy(serving, ca), `${s} serving certificate issued by the CA`);
      assert.ok(inspectCertificate(serving).dnsNames.includes(`kcp-shard-${s}.kcp-system.svc`));
      const client = inspectCertificate(await secretData(`kcp-shard-${s}-client`, 'tls.crt'));
      assert.equal(client.commonName, `system:kcp-ts:shard:${s}`);
    }
    const proxy = await secretData('kcp-front-proxy-serving', 'tls.crt');
    assert.ok(isIssuedBy(proxy, ca));
    assert.ok(inspectCertificate(proxy).dnsNames.includes('kcp.example.com'));
    assert.ok(isIssuedBy(await secretData('kcp-front-proxy-client', 'tls.crt'), fpca), 'the request-header client certificate is signed by the front-proxy CA');
    assert.equal(await secretData('kcp-shard-root-serving', 'ca.crt'), ca);
    const admin = resolveKubeconfigContext(readKubeconfig(await secretData('kcp-admin-kubeconfig', 'kubeconfig')));
    assert.equal(admin.server, 'https://kcp.example.com:443/clusters/root');
    assert.equal(admin.caPem, ca);
    assert.ok(isIssuedBy(admin.certPem!, ca));
    assert.deepEqual(inspectCertificate(admin.certPem!).organizations, ['system:kcp:admin']);
    const bundle = (await getJson(['get', 'configmap', 'kcp-ca-bundle', '-n', NS])).data;
    assert.deepEqual(bundle, { 'ca.crt': ca, 'front-proxy-ca.crt': fpca });
    const shardKubeconfig = resolveKubeconfigContext(readKubeconfig(await secretData('kcp-shard-alpha-root-kubeconfig', 'kubeconfig')));
    assert.equal(shardKubeconfig.server, 'https://kcp-shard-root.kcp-system.svc:6443/clusters/root');
  });

  it('reports status with observedGeneration and kstatus conditions: InProgress while no pod runs', async () => {
    const inst = await eventually('instance status', async () => {
      const o = await getJson(['get', 'kcpinstance', 'kcp', '-n', NS]);
      return o.status?.observedGeneration === o.metadata.generation && o.status.shards?.length === 3 ? o : undefined;
    }, 30_000);
    assert.equal(inst.status.targetVersion, '0.1.0');
    assert.equal(inst.status.externalURL, 'https://kcp.example.com:443');
    assert.equal(inst.status.adminKubeconfigSecret, 'kcp-admin-kubeconfig');
    const cond = Object.fromEntries(inst.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status]));
    assert.deepEqual(cond, { Ready: 'False', Progressing: 'True', Degraded: 'False', Reconciling: 'True', Stalled: 'False' });
    assert.match(kstatus(JSON.stringify(inst)), /^KcpInstance\/kcp InProgress /);
    const shard = await getJson(['get', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS]);
    assert.equal(shard.status.baseURL, 'https://kcp-shard-alpha.kcp-system.svc:6443');
  });

  it('writes nothing to the host API once converged, even when reconciles run', async () => {
    // Converged means quiet: the host's own controllers (Deployment status from the controller
    // manager) may still change what the operator reports, so wait for 4 s without a write first.
    let last = operator!.client.counts.writes;
    let quietSince = Date.now();
    await eventually('the operator stops writing', async () => {
      const now = operator!.client.counts.writes;
      if (now !== last) { last = now; quietSince = Date.now(); }
      return Date.now() - quietSince >= 4000;
    }, 60_000);
    const before = operator!.client.counts.writes;
    const logged = logs.length;
    // A reconcile of every object, with nothing to change: annotations leave generation alone.
    await host.kubectl(['annotate', 'kcpinstance', 'kcp', '-n', NS, 'example.com/touched=1']);
    await host.kubectl(['annotate', 'shards.operator.kcp-ts.io', '--all', '-n', NS, 'example.com/touched=1']);
    await sleep(4000);
    assert.equal(operator!.client.counts.writes - before, 0, `writes while nothing changed: ${logs.slice(logged).join('\n')}`);
  });

  it('undoes drift: a Deployment scaled by hand and a deleted Secret come back', async () => {
    await host.kubectl(['scale', 'deployment', 'kcp-shard-root', '-n', NS, '--replicas=3']);
    const serial = inspectCertificate(await secretData('kcp-shard-alpha-serving', 'tls.crt')).serialNumber;
    await host.kubectl(['delete', 'secret', 'kcp-shard-alpha-serving', '-n', NS]);
    await eventually('replicas restored', async () => (await getJson(['get', 'deployment', 'kcp-shard-root', '-n', NS])).spec.replicas === 1, 30_000);
    const again = await eventually('secret recreated', async () => (await host.kubectl(['get', 'secret', 'kcp-shard-alpha-serving', '-n', NS], { allowFail: true })).code === 0, 30_000);
    assert.ok(again);
    const renewed = await secretData('kcp-shard-alpha-serving', 'tls.crt');
    assert.notEqual(inspectCertificate(renewed).serialNumber, serial, 'a lost certificate is issued anew');
    // The pods that mount it roll: the serial is in their template.
    const tpl = (await getJson(['get', 'deployment', 'kcp-shard-alpha', '-n', NS])).spec.template.metadata.annotations['operator.kcp-ts.io/certificate-serials'];
    assert.ok(tpl.includes(inspectCertificate(renewed).serialNumber));
  });

  it('switching a shard to an external Redis removes its provisioned one', async () => {
    await host.kubectl(['patch', 'shards.operator.kcp-ts.io', 'alpha', '-n', NS, '--type=merge', '-p', '{"spec":{"redis":{"mode":"External","external":{"url":"redis://r.example.com:6379"}}}}']);
    await eventually('alpha Redis pruned', async () => !(await names('statefulsets')).includes('kcp-shard-alpha-redis'), 30_000);
    const c = (await getJson(['get', 'deployment', 'kcp-shard-alpha', '-n', NS])).spec.template.spec.containers[0];
    assert.ok(c.args.includes('--redis-url=redis://r.example.com:6379'));
  });

  it('spec.audit and spec.runtimeConfig: a policy ConfigMap every shard mounts, their flags, a roll on change, pruned when removed; bad values are refused by the CRD schema', async () => {
    const patch = (spec: object, allowFail = false) => host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })], { allowFail });
    const policy = (level: string) => ({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], rules: [{ level, resources: [{ group: '', resources: ['secrets'] }] }, { level: 'None' }] });
    const badLevel = await patch({ audit: { policy: policy('Everything') } }, true);
    assert.notEqual(badLevel.code, 0);
    assert.match(badLevel.stderr, /Unsupported value: "Everything"/);
    const badGroup = await patch({ runtimeConfig: { 'apps/v1': true } }, true);
    assert.notEqual(badGroup.code, 0);
    assert.match(badGroup.stderr, /the only group\/version runtimeConfig can turn on is admissionregistration.k8s.io\/v1beta1/);

    await patch({ audit: { policy: policy('Metadata') }, runtimeConfig: { 'admissionregistration.k8s.io/v1beta1': true } });
    const cm = await eventually('audit policy ConfigMap', async () => (await host.kubectl(['get', 'configmap', 'kcp-audit-policy', '-n', NS, '-o', 'json'], { allowFail: true })).stdout, 30_000);
    assert.equal(JSON.parse(JSON.parse(cm).data['policy.yaml']).rules[0].level, 'Metadata');
    const shardSpec = async (name: string) => (await getJson(['get', 'deployment', name, '-n', NS])).spec.template;
    for (const d of ['kcp-shard-root', 'kcp-shard-alpha', 'kcp-shard-beta']) {
      const tpl = await eventually(`${d} configured`, async () => { const t = await shardSpec(d); return t.spec.containers[0].args.includes('--audit-log-path=-') && t; }, 30_000);
      const args: string[] = tpl.spec.containers[0].args;
      assert.ok(args.includes('--audit-policy-file=/etc/kcp-ts/audit-policy/policy.yaml') && args.includes('--runtime-config=admissionregistration.k8s.io/v1beta1=true'), args.join(' '));
      assert.ok(tpl.spec.volumes.some((v: any) => v.name === 'audit-policy' && v.configMap?.name === 'kcp-audit-policy'));
      assert.ok(tpl.spec.containers[0].volumeMounts.some((m: any) => m.name === 'audit-policy' && m.mountPath === '/etc/kcp-ts/audit-policy' && m.readOnly));
    }
    // A new policy rolls the shards: the pod template's configuration hash changes.
    const hash = (await shardSpec('kcp-shard-alpha')).metadata.annotations['operator.kcp-ts.io/shard-config'];
    assert.ok(hash);
    await patch({ audit: { policy: policy('RequestResponse') } });
    await eventually('alpha rolled', async () => (await shardSpec('kcp-shard-alpha')).metadata.annotations['operator.kcp-ts.io/shard-config'] !== hash, 30_000);
    // Removed: no flags, no volume, the ConfigMap pruned.
    await host.kubectl(['patch', 'kcpinstance', 'kcp', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/audit"},{"op":"remove","path":"/spec/runtimeConfig"}]']);
    await eventually('audit policy pruned', async () => (await host.kubectl(['get', 'configmap', 'kcp-audit-policy', '-n', NS], { allowFail: true })).code !== 0, 30_000);
    const after = await eventually('alpha unconfigured', async () => { const t = await shardSpec('kcp-shard-alpha'); return !t.spec.containers[0].args.some((a: string) => a.startsWith('--audit') || a.startsWith('--runtime-config')) && t; }, 30_000);
    assert.equal(after.metadata.annotations['operator.kcp-ts.io/shard-config'], undefined);
    assert.ok(!after.spec.volumes.some((v: any) => v.name === 'audit-policy'));
  });

  it('leader election on a Lease: one leader at a time; a released or expired lease is taken over', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(await host.serviceAccountKubeconfig(NS, 'kcp-operator'));
    const opts = { namespace: NS, name: 'kcp-operator-test', leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
    const a = new LeaderElector(new HostClient(kc), { ...opts, identity: 'a' });
    const b = new LeaderElector(new HostClient(kc), { ...opts, identity: 'b' });
    let aLost = false;
    await a.acquire(() => { aLost = true; });
    assert.equal(await b.tryAcquireOrRenew(), false, 'b may not take a held lease');
    const lease = await getJson(['get', 'lease', 'kcp-operator-test', '-n', NS]);
    assert.equal(lease.spec.holderIdentity, 'a');
    await a.release();
    assert.equal(await b.tryAcquireOrRenew(), true, 'a released lease is taken at once');
    assert.equal((await getJson(['get', 'lease', 'kcp-operator-test', '-n', NS])).spec.holderIdentity, 'b');
    assert.equal(aLost, false);
    // b stops renewing (a crashed leader): a candidate takes over once the lease expired.
    const c = new LeaderElector(new HostClient(kc), { ...opts, identity: 'c' });
    assert.equal(await c.tryAcquireOrRenew(), false);
    await sleep(3200);
    assert.equal(await c.tryAcquireOrRenew(), true);
    const final = await getJson(['get', 'lease', 'kcp-operator-test', '-n', NS]);
    assert.equal(final.spec.holderIdentity, 'c');
    assert.ok(final.spec.leaseTransitions >= 1);
  });

  it('deleting the KcpInstance leaves nothing behind (garbage collector, Shard finalizers)', async () => {
    await host.kubectl(['delete', 'kcpinstance', 'kcp', '-n', NS, '--wait=false']);
    let left: string[] = [];
    await eventually('everything gone', async () => {
      left = [];
      for (const kind of ['deployments', 'replicasets', 'statefulsets', 'services', 'secrets', 'configmaps', 'pods', 'persistentvolumeclaims']) {
        left.push(...(await names(kind)).map((n) => `${kind}/${n}`));
      }
      left.push(...(await names('shards.operator.kcp-ts.io', '')).map((n) => `shards/${n}`));
      return left.length === 0;
    }, 90_000).catch((err: Error) => { throw new Error(`${err.message}; left: ${left.join(', ')}`); });
    assert.deepEqual(operator!.errors(), [], 'reconciles failed other than by write conflicts');
  });
});
