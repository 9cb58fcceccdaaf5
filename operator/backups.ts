/**
 * Backups and restores of an instance's shards (docs/backup.md, "With the operator"), as pure
 * functions of what is declared:
 *
 * - `KcpInstance.spec.backup`: one batch/v1 CronJob per shard running `kcp-ts backup` against the
 *   shard's Redis into `<claim>/<instance>/<shard>-<UTC time>.kcpbackup`, keeping `retain` of them.
 * - `KcpInstance.spec.restoreFrom`: an init container in every shard pod running `kcp-ts restore
 *   --if-empty` from the claim before the shard starts: the first pod restores into the empty
 *   Redis, later pods (restarts, more replicas, rollouts) find data and leave it alone, and a
 *   restore cut short is done again.
 *
 * The PKI is not in these backups: the operator keeps it in Secrets (operator/pki.ts); name the
 * CA with `spec.pki.caSecretRef` (a Secret the operator never deletes) in both instances and
 * every certificate and kubeconfig of the old instance stays valid.
 */
import { LABELS, type HostObject, type KcpInstance } from './api/types.js';
import { CONTAINER_SECURITY, POD_SECURITY, imageOf, labelsOf, meta, redisURL, type ShardPlan } from './resources.js';

/** Where the backup volume is mounted in backup and restore containers. */
export const BACKUP_MOUNT = '/backups';
/** Backups kept per shard when `spec.backup.retain` is not given. */
export const DEFAULT_BACKUP_RETAIN = 7;
/** Name of a shard's backup CronJob. */
export const backupCronJobName = (instance: string, shard: string) => `${instance}-shard-${shard}-backup`;

/** `$(REDIS_PASSWORD)` from the external Redis's Secret, as the shard container has it. */
function redisEnv(plan: ShardPlan): object {
  const credentials = plan.redis.mode === 'External' ? plan.redis.external?.credentialsSecretRef : undefined;
  return credentials ? { env: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: credentials.name, key: credentials.key ?? 'password' } } }] } : {};
}

/**
 * The backup CronJob of one shard, or none without `spec.backup`. Runs at most one backup at a
 * time (`Forbid`: a slow backup is not doubled), a run missed by more than 5 minutes is skipped,
 * 3 finished Jobs of each outcome are kept for `kubectl logs`.
 */
export function backupCronJob(inst: KcpInstance, plan: ShardPlan): HostObject[] {
  const backup = inst.spec.backup;
  if (!backup) return [];
  const i = inst.metadata.name;
  const labels = { ...labelsOf(i, 'backup', plan.name), [LABELS.version]: plan.version };
  const args = [
    'backup', `--redis-url=${redisURL(inst, plan)}`, `--shard-name=${plan.name}`,
    `--output-directory=${BACKUP_MOUNT}/${i}`, `--retain=${backup.retain ?? DEFAULT_BACKUP_RETAIN}`,
  ];
  return [{
    apiVersion: 'batch/v1', kind: 'CronJob',
    metadata: meta(inst, backupCronJobName(i, plan.name), 'backup', plan.owner, plan.name),
    spec: {
      schedule: backup.schedule,
      ...(backup.timeZone ? { timeZone: backup.timeZone } : {}),
      suspend: backup.suspend ?? false,
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 300,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels },
        spec: {
          backoffLimit: 2,
          template: {
            metadata: { labels },
            spec: {
              restartPolicy: 'Never',
              securityContext: POD_SECURITY,
              automountServiceAccountToken: false,
              ...(inst.spec.image?.pullSecrets?.length ? { imagePullSecrets: inst.spec.image.pullSecrets } : {}),
              containers: [{
                name: 'backup', image: imageOf(inst, plan.version), imagePullPolicy: inst.spec.image?.pullPolicy ?? 'IfNotPresent',
                command: ['kcp-ts'], args, ...redisEnv(plan),
                securityContext: CONTAINER_SECURITY,
                volumeMounts: [{ name: 'backups', mountPath: BACKUP_MOUNT }],
              }],
              volumes: [{ name: 'backups', persistentVolumeClaim: { claimName: backup.claimName } }],
            },
          },
        },
      },
    },
  }];
}

/**
 * What a shard pod needs to restore its Redis before it starts (`spec.restoreFrom`): the init
 * container and its volume (the claim, read-only), or nothing.
 */
export function restoreInit(inst: KcpInstance, plan: ShardPlan): { initContainers: object[]; volumes: object[] } {
  const from = inst.spec.restoreFrom;
  if (!from) return { initContainers: [], volumes: [] };
  const path = `${BACKUP_MOUNT}/${(from.path ?? inst.metadata.name).replace(/^\/+/, '')}`;
  return {
    initContainers: [{
      name: 'restore', image: imageOf(inst, plan.version), imagePullPolicy: inst.spec.image?.pullPolicy ?? 'IfNotPresent',
      command: ['kcp-ts'],
      // --allow-missing: a shard added after the backup has none and starts empty.
      args: ['restore', `--redis-url=${redisURL(inst, plan)}`, `--shard-name=${plan.name}`, '--if-empty', '--allow-missing', path],
      ...redisEnv(plan),
      securityContext: CONTAINER_SECURITY,
      volumeMounts: [{ name: 'restore-from', mountPath: BACKUP_MOUNT, readOnly: true }],
    }],
    volumes: [{ name: 'restore-from', persistentVolumeClaim: { claimName: from.claimName, readOnly: true } }],
  };
}
