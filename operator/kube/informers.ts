/**
 * Informers on the host cluster: @kubernetes/client-node `makeInformer` (list, then watch from the
 * list's resourceVersion, relist on 410) with what an operator needs around it: a promise that
 * resolves once the first list is in the cache, restart with backoff after any watch error
 * (client-node's informer stops on errors), and one handler for every change.
 */
import { makeInformer, type Informer, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import type { HostObject, TypedObject } from '../api/types.js';
import { collectionPath, type HostClient } from './client.js';

/** What changed: an object added, updated or deleted (also replayed for every object after a relist). */
export type ChangeHandler<T> = (obj: T, type: 'add' | 'update' | 'delete') => void;

/** Options of a {@link HostInformer}. */
export interface HostInformerOptions {
  /** Only this namespace (default all). */
  namespace?: string;
  /** Only objects matching this label selector. */
  labelSelector?: string;
  /** Told about watch errors before the informer restarts. */
  onError?: (err: unknown) => void;
}

/** A cache of one kind on the host cluster, kept current by a watch (see the module comment). */
export class HostInformer<T extends TypedObject> {
  private readonly informer: Informer<KubernetesObject> & ObjectCache<KubernetesObject>;
  private readonly handlers: ChangeHandler<T>[] = [];
  private stopped = false;
  private failures = 0;
  /** A list succeeded (so the cache holds the kind). */
  private listed = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly firstSync: Promise<void>;

  constructor(client: HostClient, readonly kind: string, opts: HostInformerOptions = {}) {
    const path = collectionPath(kind, opts.namespace);
    const list = async () => {
      const r = await client.list<HostObject>(kind, opts.namespace, opts.labelSelector);
      this.listed = true;
      return r;
    };
    this.informer = makeInformer(client.kubeConfig, path, list as unknown as Parameters<typeof makeInformer>[2], opts.labelSelector);
    for (const type of ['add', 'update', 'delete'] as const) {
      this.informer.on(type, (obj) => { for (const h of this.handlers) h(obj as unknown as T, type); });
    }
    let markSynced: () => void = () => undefined;
    this.firstSync = new Promise<void>((resolve) => { markSynced = resolve; });
    // client-node's start() resolves also when its list failed (it reports the error instead):
    // the cache is filled only once a list succeeded.
    const start = () => this.informer.start().then(() => { if (this.listed) { this.failures = 0; markSynced(); } }, (err: unknown) => opts.onError?.(err));
    this.informer.on('error', (err) => {
      if (this.stopped) return;
      opts.onError?.(err);
      // client-node's informer has stopped: start it again, 0.5 s … 30 s later.
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.failures++, 6));
      this.restartTimer = setTimeout(() => { if (!this.stopped) void start(); }, delay);
      this.restartTimer.unref();
    });
    void start();
  }

  /** Resolves once a list succeeded and is in the cache (never while the host API is unreachable). */
  synced(): Promise<void> { return this.firstSync; }

  /** Calls `handler` on every change from now on. */
  onChange(handler: ChangeHandler<T>): void { this.handlers.push(handler); }

  /** Every cached object (of one namespace with `namespace`). */
  list(namespace?: string): T[] { return this.informer.list(namespace) as unknown as T[]; }

  /** One cached object, or undefined. */
  get(name: string, namespace?: string): T | undefined { return this.informer.get(name, namespace) as unknown as T | undefined; }

  /** Stops the watch. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.informer.stop();
  }
}
