/**
 * The host objects of an instance, as pure functions of what is declared: Deployments, Services,
 * the provisioned Redis (ConfigMap, StatefulSet, Service) of each shard, the front-proxy, and the
 * shards' audit policy ConfigMap.
 * Secrets (certificates, kubeconfigs) come from the reconcilers, which need the live ones to keep
 * certificates that still fit (pki.ts); these builders only refer to them by name.
 *
 * Every object carries the `app.kubernetes.io/*` labels, an ownerReference to the object it
 * belongs to (so the garbage collector removes it with its owner), and containers that run as
 * non-root with a read-only root file system, probed on `/livez` and `/readyz`.
 */
import { createHash } from 'node:crypto';
import { restoreInit } from './backups.js';
import { API_VERSION, LABELS, MANAGED_BY, type HostObject, type KcpInstance, type OwnerReference, type RedisSpec, type Resources, type TypedObject } from './api/types.js';

/** Name of the root shard in names and labels. */
export const ROOT_SHARD = 'root';
/** Port every kcp-ts container serves HTTPS on. */
export const SHARD_PORT = 6443;
/** Port of a provisioned Redis. */
export const REDIS_PORT = 6379;
/** Where a kcp-ts container keeps its root directory (an emptyDir: nothing in it must survive). */
export const DATA_DIR = '/var/lib/kcp-ts';
/** Pod template annotation with the serial numbers of the certificates a pod mounts. */
export const CERT_SERIALS_ANNOTATION = 'operator.kcp-ts.io/certificate-serials';
/** Default image repository (the CRD's default too). */
export const DEFAULT_IMAGE = 'ghcr.io/kcp-ts/kcp-ts';
/** Default Redis image. */
export const DEFAULT_REDIS_IMAGE = 'redis:7.2';

/** Names of an instance's host objects. One place, so reconcilers and tests agree. */
export const names = {
  ca: (i: string) => `${i}-ca`,
  frontProxyCA: (i: string) => `${i}-front-proxy-ca`,
  caBundle: (i: string) => `${i}-ca-bundle`,
  revoked: (i: string) => `${i}-revoked-certificates`,
  serviceAccountKey: (i: string) => `${i}-service-account-key`,
  adminKubeconfig: (i: string) => `${i}-admin-kubeconfig`,
  shard: (i: string, s: string) => `${i}-shard-${s}`,
  shardServing: (i: string, s: string) => `${i}-shard-${s}-serving`,
  shardClient: (i: string, s: string) => `${i}-shard-${s}-client`,
  shardRootKubeconfig: (i: string, s: string) => `${i}-shard-${s}-root-kubeconfig`,
  redis: (i: string, s: string) => `${i}-shard-${s}-redis`,
  frontProxy: (i: string) => `${i}-front-proxy`,
  frontProxyServing: (i: string) => `${i}-front-proxy-serving`,
  frontProxyClient: (i: string) => `${i}-front-proxy-client`,
  frontProxyKubeconfig: (i: string) => `${i}-front-proxy-kubeconfig`,
  auditPolicy: (i: string) => `${i}-audit-policy`,
};

/** Pod template annotation: a hash of the shard configuration pods read at start (audit policy, runtime config), so a change rolls them. */
export const SHARD_CONFIG_ANNOTATION = 'operator.kcp-ts.io/shard-config';

/** The ConfigMap of a KcpInstance's audit policy (`spec.audit`); none without one. */
export function auditPolicyConfigMap(inst: KcpInstance, owner: OwnerReference): HostObject[] {
  const policy = inst.spec.audit?.policy;
  if (!policy) return [];
  return [{
    apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(inst, names.auditPolicy(inst.metadata.name), 'shard', owner),
    data: { 'policy.yaml': JSON.stringify(policy, null, 2) },
  }];
}

/** Shard flags, volume and pod annotation of `spec.audit` and `spec.runtimeConfig`. */
function shardConfig(inst: KcpInstance): { args: string[]; volumes: { name: string; configMap: { name: string } }[]; hash: string } {
  const args: string[] = [];
  const volumes: { name: string; configMap: { name: string } }[] = [];
  if (inst.spec.audit?.policy) {
    args.push('--audit-policy-file=/etc/kcp-ts/audit-policy/policy.yaml', '--audit-log-path=-');
    volumes.push({ name: 'audit-policy', configMap: { name: names.auditPolicy(inst.metadata.name) } });
  }
  const rc = Object.entries(inst.spec.runtimeConfig ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (rc.length) args.push(`--runtime-config=${rc.map(([k, v]) => `${k}=${v}`).join(',')}`);
  const hash = createHash('sha256').update(JSON.stringify([inst.spec.audit?.policy ?? null, rc])).digest('hex').slice(0, 16);
  return { args, volumes, hash };
}

/** One shard as the builders see it: the root shard (from the KcpInstance) or a Shard object. */
export interface ShardPlan {
  /** `root`, or the Shard object's name. */
  name: string;
  /** Version (image tag) its Deployment runs now. */
  version: string;
  replicas: number;
  resources?: Resources;
  redis: RedisSpec;
  labels?: Record<string, string>;
  /** Owner of its objects: the KcpInstance (root shard) or the Shard object. */
  owner: OwnerReference;
  /** Serial numbers of the certificates its pods mount (pod template annotation). */
  certificateSerials: string;
}

/** The ownerReference of an object the operator reconciles (controller: true). */
export function ownerOf(obj: TypedObject): OwnerReference {
  return { apiVersion: obj.apiVersion ?? API_VERSION, kind: obj.kind, name: obj.metadata.name, uid: obj.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

/** The recommended labels of a component of instance `instance`. */
export function labelsOf(instance: string, component: string, shard?: string): Record<string, string> {
  return {
    [LABELS.name]: 'kcp-ts', [LABELS.instance]: instance, [LABELS.component]: component,
    [LABELS.partOf]: 'kcp-ts', [LABELS.managedBy]: MANAGED_BY, ...(shard ? { [LABELS.shard]: shard } : {}),
  };
}

/** The selector labels of a component (a subset of {@link labelsOf} that never changes). */
function selectorOf(instance: string, component: string, shard?: string): Record<string, string> {
  return { [LABELS.name]: 'kcp-ts', [LABELS.instance]: instance, [LABELS.component]: component, ...(shard ? { [LABELS.shard]: shard } : {}) };
}

/** `https://<service>.<namespace>.svc:6443`: where other shards and the front-proxy reach a shard. */
export function shardBaseURL(inst: KcpInstance, shard: string): string {
  return `https://${names.shard(inst.metadata.name, shard)}.${inst.metadata.namespace}.svc:${SHARD_PORT}`;
}

/** The host name clients use: `spec.external.hostname`, else the front-proxy Service's DNS name. */
export function externalHostname(inst: KcpInstance): string {
  return inst.spec.external?.hostname || `${names.frontProxy(inst.metadata.name)}.${inst.metadata.namespace}.svc`;
}

/** `https://<external host>:<port>`: the instance's URL (the front-proxy). */
export function externalURL(inst: KcpInstance): string {
  return `https://${externalHostname(inst)}:${inst.spec.external?.port ?? SHARD_PORT}`;
}

/** In-cluster DNS names of a Service (`svc`, `svc.ns`, `svc.ns.svc`, `svc.ns.svc.cluster.local`) and localhost. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`, 'localhost'];
}

/** `spec.upgrade.progressDeadlineSeconds` (the CRD's default 600): the Deployments' progress deadline. */
export function progressDeadlineOf(inst: KcpInstance): number {
  return inst.spec.upgrade?.progressDeadlineSeconds ?? 600;
}

/** The image of a version. */
export function imageOf(inst: KcpInstance, version: string): string {
  return `${inst.spec.image?.repository ?? DEFAULT_IMAGE}:${version}`;
}

/** The version a container image names (the tag), '' without one. */
export function versionOfImage(image: string | undefined): string {
  if (!image) return '';
  const at = image.lastIndexOf(':');
  return at > image.lastIndexOf('/') ? image.slice(at + 1) : '';
}

/** Pod security context of every kcp-ts pod (non-root, RuntimeDefault seccomp). */
export const POD_SECURITY = { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } };
/** Container security context of every kcp-ts container (read-only root, no capabilities). */
export const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } };

function probe(path: string, periodSeconds: number, failureThreshold: number) {
  return { httpGet: { path, port: 'https', scheme: 'HTTPS' }, periodSeconds, timeoutSeconds: 5, failureThreshold };
}

function secretVolume(name: string, secretName: string) { return { name, secret: { secretName, defaultMode: 0o440 } }; }

/** Metadata of an operator-made host object: namespace, labels, ownerReference. */
export function meta(inst: KcpInstance, name: string, component: string, owner: OwnerReference, shard?: string, version?: string) {
  return {
    name, namespace: inst.metadata.namespace!,
    labels: { ...labelsOf(inst.metadata.name, component, shard), ...(version ? { [LABELS.version]: version } : {}) },
    ownerReferences: [owner],
  };
}

/** `redis://…` URL of a shard's Redis (the provisioned Service, or the external URL). */
export function redisURL(inst: KcpInstance, plan: Pick<ShardPlan, 'name' | 'redis'>): string {
  if (plan.redis.mode === 'External') {
    const url = plan.redis.external!.url;
    // The password comes from the environment (Kubernetes expands $(VAR) in args).
    if (!plan.redis.external!.credentialsSecretRef) return url;
    return url.replace(/^([a-z-]+:\/\/)/, '$1:$(REDIS_PASSWORD)@');
  }
  return `redis://${names.redis(inst.metadata.name, plan.name)}.${inst.metadata.namespace}.svc:${REDIS_PORT}`;
}

/** The Deployment and Service of a shard. */
export function shardWorkload(inst: KcpInstance, plan: ShardPlan): HostObject[] {
  const i = inst.metadata.name;
  const name = names.shard(i, plan.name);
  const isRoot = plan.name === ROOT_SHARD;
  const selector = selectorOf(i, 'shard', plan.name);
  const labels = Object.entries(plan.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
  const config = shardConfig(inst);
  const args = [
    'start', `--root-directory=${DATA_DIR}`, '--bind-address=0.0.0.0', `--secure-port=${SHARD_PORT}`, `--shard-name=${plan.name}`,
    `--redis-url=${redisURL(inst, plan)}`,
    '--tls-cert-file=/etc/kcp-ts/serving/tls.crt', '--tls-private-key-file=/etc/kcp-ts/serving/tls.key',
    '--client-ca-file=/etc/kcp-ts/ca-bundle/ca.crt', '--requestheader-client-ca-file=/etc/kcp-ts/ca-bundle/front-proxy-ca.crt',
    '--service-account-signing-key-file=/etc/kcp-ts/service-account/key.pem',
    '--revoked-client-certificates-file=/etc/kcp-ts/revoked/serials',
    '--shard-client-cert-file=/etc/kcp-ts/shard-client/tls.crt', '--shard-client-key-file=/etc/kcp-ts/shard-client/tls.key',
    `--shard-base-url=${shardBaseURL(inst, plan.name)}`, `--shard-external-url=${externalURL(inst)}`,
    ...(isRoot ? [] : ['--root-shard-kubeconfig-file=/etc/kcp-ts/root-kubeconfig/kubeconfig']),
    ...(labels ? [`--shard-labels=${labels}`] : []),
    ...config.args,
  ];
  const volumes = [
    secretVolume('serving', names.shardServing(i, plan.name)),
    { name: 'ca-bundle', configMap: { name: names.caBundle(i) } },
    secretVolume('service-account', names.serviceAccountKey(i)),
    { name: 'revoked', configMap: { name: names.revoked(i) } },
    secretVolume('shard-client', names.shardClient(i, plan.name)),
    ...(isRoot ? [] : [secretVolume('root-kubeconfig', names.shardRootKubeconfig(i, plan.name))]),
    ...config.volumes,
    { name: 'data', emptyDir: {} },
    { name: 'tmp', emptyDir: {} },
  ];
  const mounts = [
    ...volumes.filter((v) => v.name !== 'data' && v.name !== 'tmp').map((v) => ({ name: v.name, mountPath: `/etc/kcp-ts/${v.name}`, readOnly: true })),
    { name: 'data', mountPath: DATA_DIR }, { name: 'tmp', mountPath: '/tmp' },
  ];
  const credentials = plan.redis.mode === 'External' ? plan.redis.external?.credentialsSecretRef : undefined;
  const restore = restoreInit(inst, plan);
  const deployment: HostObject = {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: meta(inst, name, 'shard', plan.owner, plan.name, plan.version),
    spec: {
      replicas: plan.replicas,
      // A shard that misses it on a new version is rolled back (rollout.ts).
      progressDeadlineSeconds: progressDeadlineOf(inst),
      selector: { matchLabels: selector },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: { ...labelsOf(i, 'shard', plan.name), [LABELS.version]: plan.version },
          annotations: { [CERT_SERIALS_ANNOTATION]: plan.certificateSerials, ...(config.args.length ? { [SHARD_CONFIG_ANNOTATION]: config.hash } : {}) },
        },
        spec: {
          securityContext: POD_SECURITY,
          automountServiceAccountToken: false,
          ...(inst.spec.image?.pullSecrets?.length ? { imagePullSecrets: inst.spec.image.pullSecrets } : {}),
          // spec.restoreFrom: the shard's Redis is restored before the shard starts (backups.ts).
          ...(restore.initContainers.length ? { initContainers: restore.initContainers } : {}),
          containers: [{
            name: 'kcp-ts', image: imageOf(inst, plan.version), imagePullPolicy: inst.spec.image?.pullPolicy ?? 'IfNotPresent',
            command: ['kcp-ts'], args,
            ...(credentials ? { env: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: credentials.name, key: credentials.key ?? 'password' } } }] } : {}),
            ports: [{ name: 'https', containerPort: SHARD_PORT, protocol: 'TCP' }],
            readinessProbe: probe('/readyz', 5, 3), livenessProbe: probe('/livez', 10, 6),
            startupProbe: probe('/livez', 2, 60),
            ...(plan.resources ? { resources: plan.resources } : {}),
            securityContext: CONTAINER_SECURITY, volumeMounts: mounts,
          }],
          volumes: [...volumes, ...restore.volumes],
        },
      },
    },
  };
  const service: HostObject = {
    apiVersion: 'v1', kind: 'Service',
    metadata: meta(inst, name, 'shard', plan.owner, plan.name),
    spec: { type: 'ClusterIP', selector, ports: [{ name: 'https', port: SHARD_PORT, targetPort: 'https', protocol: 'TCP' }] },
  };
  return [deployment, service];
}

/** redis.conf of a provisioned Redis: AOF with `appendfsync always` (an acknowledged write survives a crash: docs/architecture.md, "Storage (Redis)"). */
export const REDIS_CONF = [
  `port ${REDIS_PORT}`, 'bind * -::*', 'protected-mode no', 'dir /data', 'appendonly yes', 'appendfsync always',
  'save ""', 'dbfilename dump.rdb', '',
].join('\n');

/** ConfigMap, StatefulSet and Service of a shard's provisioned Redis; none for an external one. */
export function redisWorkload(inst: KcpInstance, plan: ShardPlan): HostObject[] {
  if (plan.redis.mode === 'External') return [];
  const i = inst.metadata.name;
  const name = names.redis(i, plan.name);
  const p = plan.redis.provisioned ?? {};
  const selector = selectorOf(i, 'redis', plan.name);
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(inst, name, 'redis', plan.owner, plan.name), data: { 'redis.conf': REDIS_CONF } },
    {
      apiVersion: 'apps/v1', kind: 'StatefulSet',
      metadata: meta(inst, name, 'redis', plan.owner, plan.name),
      spec: {
        replicas: 1, serviceName: name, selector: { matchLabels: selector },
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
        template: {
          metadata: { labels: labelsOf(i, 'redis', plan.name) },
          spec: {
            securityContext: { runAsNonRoot: true, runAsUser: 999, runAsGroup: 999, fsGroup: 999, seccompProfile: { type: 'RuntimeDefault' } },
            automountServiceAccountToken: false,
            containers: [{
              name: 'redis', image: p.image ?? DEFAULT_REDIS_IMAGE, command: ['redis-server', '/etc/redis/redis.conf'],
              ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
              readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 5, failureThreshold: 3 },
              livenessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 10, failureThreshold: 6 },
              ...(p.resources ? { resources: p.resources } : {}),
              securityContext: CONTAINER_SECURITY,
              volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'config', mountPath: '/etc/redis', readOnly: true }],
            }],
            volumes: [{ name: 'config', configMap: { name } }],
          },
        },
        volumeClaimTemplates: [{
          metadata: { name: 'data', labels: labelsOf(i, 'redis', plan.name) },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: p.storageSize ?? '1Gi' } }, ...(p.storageClassName ? { storageClassName: p.storageClassName } : {}) },
        }],
      },
    },
    {
      apiVersion: 'v1', kind: 'Service',
      metadata: meta(inst, name, 'redis', plan.owner, plan.name),
      spec: { type: 'ClusterIP', selector, ports: [{ name: 'redis', port: REDIS_PORT, targetPort: 'redis', protocol: 'TCP' }] },
    },
  ];
}

/** The front-proxy's Deployment and Service. */
export function frontProxyWorkload(inst: KcpInstance, version: string, certificateSerials: string): HostObject[] {
  const i = inst.metadata.name;
  const name = names.frontProxy(i);
  const owner = ownerOf(inst);
  const selector = selectorOf(i, 'front-proxy');
  const fp = inst.spec.frontProxy ?? {};
  const volumes = [
    secretVolume('serving', names.frontProxyServing(i)),
    { name: 'ca-bundle', configMap: { name: names.caBundle(i) } },
    secretVolume('proxy-client', names.frontProxyClient(i)),
    secretVolume('root-kubeconfig', names.frontProxyKubeconfig(i)),
    { name: 'revoked', configMap: { name: names.revoked(i) } },
  ];
  return [
    {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: meta(inst, name, 'front-proxy', owner, undefined, version),
      spec: {
        replicas: fp.replicas ?? 1,
        progressDeadlineSeconds: progressDeadlineOf(inst),
        selector: { matchLabels: selector },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
        template: {
          metadata: { labels: { ...labelsOf(i, 'front-proxy'), [LABELS.version]: version }, annotations: { [CERT_SERIALS_ANNOTATION]: certificateSerials } },
          spec: {
            securityContext: POD_SECURITY,
            automountServiceAccountToken: false,
            ...(inst.spec.image?.pullSecrets?.length ? { imagePullSecrets: inst.spec.image.pullSecrets } : {}),
            containers: [{
              name: 'front-proxy', image: imageOf(inst, version), imagePullPolicy: inst.spec.image?.pullPolicy ?? 'IfNotPresent',
              command: ['kcp-ts'],
              args: [
                'front-proxy', '--bind-address=0.0.0.0', `--secure-port=${SHARD_PORT}`,
                '--root-kubeconfig=/etc/kcp-ts/root-kubeconfig/kubeconfig',
                '--tls-cert-file=/etc/kcp-ts/serving/tls.crt', '--tls-private-key-file=/etc/kcp-ts/serving/tls.key',
                '--client-ca-file=/etc/kcp-ts/ca-bundle/ca.crt',
                '--proxy-client-cert-file=/etc/kcp-ts/proxy-client/tls.crt', '--proxy-client-key-file=/etc/kcp-ts/proxy-client/tls.key',
                '--revoked-client-certificates-file=/etc/kcp-ts/revoked/serials',
              ],
              ports: [{ name: 'https', containerPort: SHARD_PORT, protocol: 'TCP' }],
              readinessProbe: probe('/readyz', 5, 3), livenessProbe: probe('/livez', 10, 6),
              ...(fp.resources ? { resources: fp.resources } : {}),
              securityContext: CONTAINER_SECURITY,
              volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/etc/kcp-ts/${v.name}`, readOnly: true })),
            }],
            volumes,
          },
        },
      },
    },
    {
      apiVersion: 'v1', kind: 'Service',
      metadata: { ...meta(inst, name, 'front-proxy', owner), ...(fp.service?.annotations ? { annotations: fp.service.annotations } : {}) },
      spec: {
        type: fp.service?.type ?? 'ClusterIP', selector,
        ports: [{ name: 'https', port: inst.spec.external?.port ?? SHARD_PORT, targetPort: 'https', protocol: 'TCP' }],
      },
    },
  ];
}

/** A Secret of the operator's (data base64-encoded by the caller). */
export function secret(inst: KcpInstance, name: string, component: string, owner: OwnerReference, data: Record<string, string>, type = 'Opaque', shard?: string): HostObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(inst, name, component, owner, shard), type, data };
}
