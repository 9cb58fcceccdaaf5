/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does: the
 * holder renews `renewTime` every `retryPeriod`; another candidate takes the Lease once it was not
 * renewed for `leaseDuration`; a leader that cannot renew within `renewDeadline` steps down (the
 * process then exits, so that two operators never reconcile at once). Writes carry the Lease's
 * resourceVersion, so two candidates racing for it cannot both win.
 */
import { HostApiError, isHostStatus, objectPath, type HostClient } from './kube/client.js';

/** Options of {@link LeaderElector} (durations in ms; client-go's defaults 15 s / 10 s / 2 s). */
export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: (msg: string) => void;
}

interface Lease {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

const microTime = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');

/** Campaigns for and holds a Lease (see the module comment). */
export class LeaderElector {
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly client: HostClient, private readonly opts: LeaderElectionOptions) {}

  private get duration(): number { return this.opts.leaseDurationMs ?? 15_000; }

  /** One attempt to acquire or renew; true when this candidate holds the Lease afterwards. */
  async tryAcquireOrRenew(now = Date.now()): Promise<boolean> {
    const { namespace, name, identity } = this.opts;
    const path = objectPath('Lease', namespace, name);
    const spec = (prev?: Lease['spec']) => ({
      holderIdentity: identity, leaseDurationSeconds: Math.ceil(this.duration / 1000), renewTime: microTime(now),
      acquireTime: prev?.holderIdentity === identity && prev.acquireTime ? prev.acquireTime : microTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (prev?.holderIdentity && prev.holderIdentity !== identity ? 1 : 0),
    });
    let lease: Lease | undefined;
    try { lease = await this.client.request<Lease>('GET', path); } catch (err) { if (!isHostStatus(err, 404)) throw err; }
    try {
      if (!lease) {
        await this.client.request('POST', objectPath('Lease', namespace, '').replace(/\/$/, ''), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: spec() });
        return true;
      }
      const held = lease.spec.holderIdentity && lease.spec.holderIdentity !== identity;
      const renewed = lease.spec.renewTime ? Date.parse(lease.spec.renewTime) : 0;
      if (held && now - renewed < (lease.spec.leaseDurationSeconds ?? 15) * 1000) return false;
      await this.client.request('PUT', path, { ...lease, spec: spec(lease.spec) });
      return true;
    } catch (err) {
      if (err instanceof HostApiError && (err.code === 409 || err.code === 422)) return false; // another candidate won the race
      throw err;
    }
  }

  /**
   * Resolves once this candidate leads; then renews in the background and calls `onLost` once if
   * it cannot renew within the renew deadline (or another holder took over).
   */
  async acquire(onLost: () => void): Promise<void> {
    const retry = this.opts.retryPeriodMs ?? 2_000;
    const log = this.opts.log ?? (() => undefined);
    for (;;) {
      if (this.stopped) return;
      try { if (await this.tryAcquireOrRenew()) break; } catch (err) { log(`leader election: ${(err as Error).message}`); }
      await new Promise((r) => { this.timer = setTimeout(r, retry); });
    }
    log(`leading as ${this.opts.identity} (lease ${this.opts.namespace}/${this.opts.name})`);
    let lastRenew = Date.now();
    const renew = async () => {
      if (this.stopped) return;
      let ok = false;
      try { ok = await this.tryAcquireOrRenew(); } catch (err) { log(`leader election: renewing: ${(err as Error).message}`); }
      if (ok) lastRenew = Date.now();
      if (!ok && (Date.now() - lastRenew > (this.opts.renewDeadlineMs ?? 10_000) || !(await this.stillOurs()))) {
        log('leader election: lost the lease');
        this.stopped = true;
        onLost();
        return;
      }
      this.timer = setTimeout(() => { void renew(); }, retry);
    };
    this.timer = setTimeout(() => { void renew(); }, retry);
  }

  private async stillOurs(): Promise<boolean> {
    try {
      const lease = await this.client.request<Lease>('GET', objectPath('Lease', this.opts.namespace, this.opts.name));
      return lease.spec.holderIdentity === this.opts.identity;
    } catch { return true; /* unknown: the renew deadline decides */ }
  }

  /** Stops renewing and gives the Lease up (holder cleared) so a successor need not wait. */
  async release(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    try {
      const path = objectPath('Lease', this.opts.namespace, this.opts.name);
      const lease = await this.client.request<Lease>('GET', path);
      if (lease.spec.holderIdentity === this.opts.identity) {
        await this.client.request('PUT', path, { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } });
      }
    } catch { /* best effort */ }
  }
}
