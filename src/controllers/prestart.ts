/**
 * A controller queue thread started before its Redis is known: `kcp-ts start` starts one first
 * thing, so that the thread loads BullMQ (a few hundred ms of module loading) on another core
 * while the main thread loads the server's modules and starts the shard; the first QueueThread
 * of the process takes it (runtime.ts) and tells it its URL. Light on purpose (no imports
 * besides worker_threads): it runs before the server's modules load.
 */
import { Worker } from 'node:worker_threads';

let spare: Worker | undefined;

/** The queue thread's script: compiled next to this file, or the TypeScript source through tsx. */
export function queueThreadEntry(): { url: URL; built: boolean } {
  const built = !import.meta.url.endsWith('.ts');
  return { url: new URL(`./queuethread${built ? '.js' : '.ts'}`, import.meta.url), built };
}

/**
 * Starts a queue thread without a Redis URL (it waits for `{ op: 'connect', url }`). Unreferenced
 * until taken: a process that never starts controllers (a usage error, a failed start) exits as
 * if it were not there. At most one waits at a time.
 */
export function prestartQueueThread(): void {
  if (spare) return;
  const { url, built } = queueThreadEntry();
  // From the sources (tests), the thread registers tsx itself: a worker does not always inherit the parent's loader.
  spare = built
    ? new Worker(url)
    : new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true });
  spare.unref();
  // Failing before it was taken: whoever takes it would see it exit; forget it instead.
  const dropped = spare;
  dropped.once('error', () => { if (spare === dropped) spare = undefined; });
  dropped.once('exit', () => { if (spare === dropped) spare = undefined; });
}

/** The waiting queue thread (referenced again, its first message still to send), or undefined. */
export function takePrestartedQueueThread(): Worker | undefined {
  const w = spare;
  spare = undefined;
  w?.ref();
  return w;
}
