/**
 * A list-and-watch informer over HTTPS (client-go's reflector, reduced): lists a collection, then
 * watches from the list's resourceVersion with bookmarks; after a cut it resumes from the last
 * resourceVersion it saw, and after 410 Expired it lists again. Used wherever kcp-ts reads
 * another process's objects: shards reading each other's replicated objects and the
 * front-proxy's path index. A page larger than the client's answer limit is listed again in
 * pages half as long; a watch event larger than it ends the watch (which resumes).
 */
import type { KubeObject } from '../apimachinery/meta.js';
import { ResponseTooLargeError, type RestClient } from './rest.js';

/** What an informer reports. */
export interface InformerHandlers {
  /** A (re)list: `items` is the whole collection now; forget anything not in it. */
  replace(items: KubeObject[]): void;
  /** One change after the last list. */
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void;
  /** Connection state changes: `synced` after a successful list or resumed watch, `disconnected` when cut. */
  state?(state: 'synced' | 'disconnected', error?: string): void;
}

/** Options of a {@link RemoteInformer}. */
export interface RemoteInformerOptions {
  /** Collection path, e.g. `/clusters/*\/apis/core.kcp.io/v1alpha1/logicalclusters`. */
  path: string;
  /** Extra query of list and watch (e.g. `labelSelector=…`), without `?`. */
  query?: string;
  /** `Accept` header (e.g. PartialObjectMetadata), default JSON. */
  accept?: string;
  /** `Accept` header of the list requests only (e.g. PartialObjectMetadataList), default `accept`. */
  listAccept?: string;
  /** Wait before reconnecting after a failure, doubling up to 5 s; default 100 ms. */
  initialBackoffMs?: number;
  /**
   * Lists in pages of this many objects (`limit`/`continue`, default 1000), so a large
   * collection never arrives as one response; a page token expired (410) restarts the list.
   */
  pageSize?: number;
  /**
   * Reduces each listed object to what the handlers need before the next page is fetched
   * (objects of a big list are not all held at once); default: kept whole.
   */
  slim?: (obj: KubeObject) => KubeObject;
}

/** Keeps `handlers` in step with a remote collection until {@link stop}. */
export class RemoteInformer {
  private stopped = false;
  private rv = '';
  private synced = false;
  private current: { destroy(): void } | undefined;
  private wake: (() => void) | undefined;
  private readonly done: Promise<void>;
  /** Resolves after the first successful list. */
  readonly hasSynced: Promise<void>;
  private markSynced!: () => void;

  constructor(private readonly client: RestClient, private readonly opts: RemoteInformerOptions, private readonly handlers: InformerHandlers) {
    this.hasSynced = new Promise((r) => { this.markSynced = r; });
    this.done = this.run();
  }

  /** Whether the last list or watch succeeded and no cut has been seen since. */
  get isSynced(): boolean { return this.synced; }

  /**
   * Ends a wait between attempts at once: the next list or watch starts now (its backoff keeps
   * growing if it fails again). For when the caller knows the server is back, e.g. it has just
   * started it.
   */
  retryNow(): void { this.wake?.(); }

  /** Stops watching; resolves when the loop ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.destroy();
    this.wake?.();
    await this.done;
  }

  private async run(): Promise<void> {
    let backoff = this.opts.initialBackoffMs ?? 100;
    while (!this.stopped) {
      try {
        if (!this.rv) await this.list();
        const outcome = await this.watch();
        if (outcome === 'expired') this.rv = '';
        backoff = this.opts.initialBackoffMs ?? 100;
        if (outcome === 'expired' || outcome === 'ended') continue;
      } catch (err) {
        if (this.stopped) break;
        this.setState('disconnected', err instanceof Error ? err.message : String(err));
      }
      await this.sleep(backoff);
      backoff = Math.min(backoff * 2, 5000);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => {
      const t = setTimeout(r, ms);
      this.wake = () => { clearTimeout(t); r(); };
    });
  }

  private setState(state: 'synced' | 'disconnected', error?: string): void {
    if ((state === 'synced') === this.synced) return;
    this.synced = state === 'synced';
    this.handlers.state?.(state, error);
  }

  private async list(): Promise<void> {
    const items: KubeObject[] = [];
    let limit = this.opts.pageSize ?? 1000;
    const slim = this.opts.slim ?? ((o: KubeObject) => o);
    let token = '';
    let rv = '';
    // `continue` starts the list again from its first page (a `do … while (token)` would end it).
    for (;;) {
      const q = `limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}${this.opts.query ? `&${this.opts.query}` : ''}`;
      const accept = this.opts.listAccept ?? this.opts.accept;
      let res;
      try {
        res = await this.client.request('GET', `${this.opts.path}?${q}`, undefined, { headers: accept ? { accept } : {} });
      } catch (err) {
        // A page past the client's size limit: list again from the start in pages half as long.
        if (!(err instanceof ResponseTooLargeError) || limit <= 1) throw err;
        limit = Math.max(1, Math.floor(limit / 2));
        items.length = 0; token = ''; rv = '';
        continue;
      }
      if (res.status === 410 && token) { items.length = 0; token = ''; rv = ''; continue; }
      if (res.status !== 200) throw new Error(`list ${this.opts.path}: ${res.status} ${res.json?.message ?? res.body.slice(0, 200)}`);
      for (const o of (res.json.items ?? []) as KubeObject[]) items.push(slim(o));
      token = String(res.json.metadata?.continue ?? '');
      // Every page is of the first page's snapshot.
      rv ||= String(res.json.metadata?.resourceVersion ?? '');
      if (!token) break;
    }
    this.handlers.replace(items);
    this.rv = rv;
    this.setState('synced');
    this.markSynced();
  }

  /**
   * Watches from `this.rv`; resolves `expired` on 410, `ended` when the stream ended (closed by
   * the server, cut, an undecodable or oversized event, an ERROR event other than 410).
   */
  private async watch(): Promise<'expired' | 'ended'> {
    const q = `watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.rv)}${this.opts.query ? `&${this.opts.query}` : ''}`;
    const aborted = new AbortController();
    this.current = { destroy: () => aborted.abort() };
    if (this.stopped) return 'ended';
    const res = await this.client.pool.request({
      method: 'GET', path: `${this.opts.path}?${q}`, headers: this.client.headers(this.opts.accept ? { accept: this.opts.accept } : {}),
      signal: aborted.signal, headersTimeout: 30_000, bodyTimeout: 0,
    });
    if (res.statusCode === 410) { await res.body.dump().catch(() => undefined); return 'expired'; }
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw new Error(`watch ${this.opts.path}: ${res.statusCode}`);
    }
    this.setState('synced');
    const limit = this.client.maxResponseBytes;
    let buf = '';
    let why = 'watch closed';
    try {
      res.body.setEncoding('utf8');
      for await (const chunk of res.body as AsyncIterable<string>) {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          let ev: { type: string; object: KubeObject & { code?: number } };
          try { ev = JSON.parse(line); } catch { why = 'undecodable watch event'; return this.watchEnded(why); }
          if (ev.type === 'ERROR') {
            if (ev.object.code === 410) return 'expired';
            return this.watchEnded(why);
          }
          const rv = ev.object?.metadata?.resourceVersion;
          if (rv) this.rv = rv;
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') this.handlers.event(ev.type, this.opts.slim ? this.opts.slim(ev.object) : ev.object);
        }
        // One event may not exceed what the client reads of any answer.
        if (buf.length > limit) { why = `watch event larger than ${limit} bytes`; return this.watchEnded(why); }
      }
    } catch (err) {
      why = err instanceof Error ? err.message : String(err);
    } finally {
      aborted.abort();
    }
    return this.watchEnded(why);
  }

  /** A watch stream ended: `disconnected` unless the informer is stopping. */
  private watchEnded(why: string): 'ended' {
    if (!this.stopped) this.setState('disconnected', why);
    return 'ended';
  }
}
