/**
 * The operator's API, group `operator.kcp-ts.io/v1alpha1` (CRDs in crds/): what a platform team
 * declares (KcpInstance, Shard, RootWorkspace) and what the operator reports. Field names and
 * meanings are the CRDs' (their OpenAPI descriptions are the reference); these types are the
 * TypeScript view of the same objects, defaults already applied by the kube-apiserver.
 */

import type { ObjectMeta as MetaV1, OwnerReference } from '../../src/apimachinery/meta.js';

/** API group of the operator's resources. */
export const GROUP = 'operator.kcp-ts.io';
/** Their only version. */
export const VERSION = 'v1alpha1';
/** `apiVersion` of the operator's resources. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** Field manager of every server-side apply the operator sends (one for all its writes). */
export const FIELD_MANAGER = 'kcp-ts-operator';
/** The Shard finalizer: the core.kcp.io Shard object in root is removed before the Shard goes. */
export const SHARD_FINALIZER = `${GROUP}/shard-registration`;
/** The RootWorkspace finalizer: what it created in the instance is removed before it goes. */
export const ROOT_WORKSPACE_FINALIZER = `${GROUP}/root-workspace-content`;

/** Labels on every host object the operator creates (Kubernetes recommended labels). */
export const LABELS = {
  name: 'app.kubernetes.io/name',
  instance: 'app.kubernetes.io/instance',
  component: 'app.kubernetes.io/component',
  version: 'app.kubernetes.io/version',
  partOf: 'app.kubernetes.io/part-of',
  managedBy: 'app.kubernetes.io/managed-by',
  /** The shard a host object belongs to (`root` for the root shard). */
  shard: `${GROUP}/shard`,
} as const;
/** Value of `app.kubernetes.io/managed-by` on the operator's objects. */
export const MANAGED_BY = 'kcp-ts-operator';

/** Metadata as the operator reads it: `metav1.ObjectMeta` (src/apimachinery/meta.ts), named. */
export type ObjectMeta = MetaV1 & { name: string };

export type { OwnerReference };

/** A condition in kstatus style (metav1.Condition): `Ready`, `Progressing`, `Degraded`, … */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/** Compute resources of a container (corev1.ResourceRequirements). */
export interface Resources {
  limits?: Record<string, string | number>;
  requests?: Record<string, string | number>;
}

/** A shard's Redis: provisioned by the operator (StatefulSet, AOF `appendfsync always`) or external. */
export interface RedisSpec {
  mode?: 'Provisioned' | 'External';
  provisioned?: { image?: string; storageSize?: string; storageClassName?: string; resources?: Resources };
  external?: { url: string; credentialsSecretRef?: { name: string; key?: string } };
}

/** `KcpInstance.spec`. */
export interface KcpInstanceSpec {
  /**
   * kcp-ts version (image tag). Always set: the CRD defaults it to the chart's appVersion when
   * the object is created (a unit test keeps the two equal).
   */
  version: string;
  image?: { repository?: string; pullPolicy?: string; pullSecrets?: { name: string }[] };
  external?: { hostname?: string; port?: number };
  rootShard?: { replicas?: number; resources?: Resources; redis?: RedisSpec };
  frontProxy?: { replicas?: number; resources?: Resources; service?: { type?: string; annotations?: Record<string, string> } };
  pki?: { caSecretRef?: { name: string }; caDuration?: string; certificateDuration?: string; renewBefore?: string };
  upgrade?: { canaryShards?: string[]; progressDeadlineSeconds?: number; autoRollback?: boolean };
  /**
   * Audit log of every shard: kube's `audit.k8s.io/v1` Policy, written to a ConfigMap the shards
   * mount (`--audit-policy-file`); events go to each shard's standard output (`--audit-log-path=-`),
   * where the cluster's log pipeline collects them.
   */
  audit?: { policy: Record<string, unknown> };
  /** Group/versions turned on in every shard (`--runtime-config`, kube's syntax), e.g. `admissionregistration.k8s.io/v1beta1: true`. */
  runtimeConfig?: Record<string, boolean>;
  /** Scheduled backups of every shard (docs/backup.md): a CronJob per shard running `kcp-ts backup`. */
  backup?: BackupSpec;
  /** Create the instance from backups: each shard's Redis is restored before the shard starts (docs/backup.md). */
  restoreFrom?: RestoreFromSpec;
}

/** `KcpInstance.spec.backup`. */
export interface BackupSpec {
  /** When backups run: a cron schedule (batch/v1 CronJob syntax, e.g. `0 3 * * *`), in the CronJob controller's time zone unless `timeZone` is set. */
  schedule: string;
  /** IANA time zone of `schedule` (CronJob `spec.timeZone`). */
  timeZone?: string;
  /** Backups kept per shard; older ones are removed after each successful backup (default 7). */
  retain?: number;
  /** The PersistentVolumeClaim (same namespace) backups go to, under `<instance>/<shard>-<UTC time>.kcpbackup`. */
  claimName: string;
  /** No new backups while true (CronJob `spec.suspend`). */
  suspend?: boolean;
}

/** `KcpInstance.spec.restoreFrom`. */
export interface RestoreFromSpec {
  /** The PersistentVolumeClaim holding the backups. */
  claimName: string;
  /**
   * A directory in the volume (each shard restores its newest `<shard>-*.kcpbackup` there) or one
   * backup file; default: the directory this instance's name gives, where `spec.backup` writes.
   */
  path?: string;
}

/** One shard in `KcpInstance.status.shards`. */
export interface ShardSummary {
  name: string;
  version?: string;
  ready: boolean;
  baseURL?: string;
}

/** `KcpInstance.status`. */
export interface KcpInstanceStatus {
  observedGeneration?: number;
  currentVersion?: string;
  targetVersion?: string;
  /** A version rolled back: not tried again until `spec.version` names another. */
  failedVersion?: string;
  externalURL?: string;
  adminKubeconfigSecret?: string;
  shards?: ShardSummary[];
  conditions?: Condition[];
}

/** A KcpInstance. */
export interface KcpInstance {
  apiVersion: string;
  kind: 'KcpInstance';
  metadata: ObjectMeta;
  spec: KcpInstanceSpec;
  status?: KcpInstanceStatus;
}

/** `Shard.spec`. */
export interface ShardSpec {
  instanceRef: { name: string };
  replicas?: number;
  version?: string;
  labels?: Record<string, string>;
  resources?: Resources;
  redis?: RedisSpec;
  /**
   * Drain the shard (operator/drain.ts): kcp migrates its logical clusters to the other shards,
   * `Drained` reports what is left, then the shard runs no pods (the Shard, its Redis and its
   * kcp Shard object stay). `false` again brings the pods back and lets workspaces be scheduled
   * onto it. A deleted Shard is drained first whatever this says.
   */
  drain?: boolean;
}

/** A Shard (of the operator's group, not core.kcp.io's). */
export interface Shard {
  apiVersion: string;
  kind: 'Shard';
  metadata: ObjectMeta;
  spec: ShardSpec;
  status?: { observedGeneration?: number; version?: string; baseURL?: string; conditions?: Condition[] };
}

/** `RootWorkspace.spec`. */
export interface RootWorkspaceSpec {
  instanceRef: { name: string };
  endpoint?: string;
  workspaceTypes?: { name: string; spec?: Record<string, unknown> }[];
  workspaces?: { path: string; type?: { name?: string; path?: string }; labels?: Record<string, string>; location?: Record<string, unknown> }[];
  clusterRoleBindings?: { workspace: string; name: string; clusterRole: string; subjects: { kind: string; name: string; namespace?: string }[] }[];
  kubeconfigs?: { name: string; user: string; groups?: string[]; workspace?: string; validity?: string; secretName?: string }[];
}

/** One entry of `RootWorkspace.status.inventory`. */
export interface InventoryItem {
  kind: string;
  workspace: string;
  name: string;
  state: 'Applied' | 'Failed' | 'Deleted' | 'Revoked';
  error?: string;
}

/** A RootWorkspace. */
export interface RootWorkspace {
  apiVersion: string;
  kind: 'RootWorkspace';
  metadata: ObjectMeta;
  spec: RootWorkspaceSpec;
  status?: { observedGeneration?: number; inventory?: InventoryItem[]; revoked?: string[]; conditions?: Condition[] };
}

/** The part of an object every kind has. */
export interface TypedObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
}

/** Any Kubernetes object, as read from the host cluster. */
export interface HostObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/**
 * A Go duration of hours, minutes and seconds (`8760h`, `90m`, `1h30m`) in milliseconds, as the
 * CRDs' patterns allow. @throws {Error} on anything else
 */
export function parseDuration(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === '') throw new Error(`invalid duration "${text}" (want e.g. 8760h, 90m, 30s)`);
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}
