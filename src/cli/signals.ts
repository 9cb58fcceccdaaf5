/**
 * SIGTERM and SIGINT handling of `kcp-ts`, installed before anything else is loaded (bin.ts), so
 * that a process stopped at any moment of its life stops cleanly: the first signal aborts the
 * start-up or stops the running server; later ones are acknowledged and ignored, so stopping
 * always finishes and leaves nothing running. Imports nothing but Node, to be quick to load.
 */

/** The shutdown request of one process: which signal asked for it, as an AbortSignal. */
export class ShutdownSignals {
  private readonly controller = new AbortController();
  private listener: (() => void) | undefined;
  private readonly handle = (signal: NodeJS.Signals): void => {
    if (this.controller.signal.aborted) { process.stdout.write(`received ${signal}, already shutting down\n`); return; }
    process.stdout.write(`received ${signal}, shutting down\n`);
    const reason = new Error(`stopped by ${signal}`);
    reason.name = 'AbortError';
    this.controller.abort(reason);
    this.listener?.();
  };

  /** Starts listening for SIGTERM and SIGINT (until {@link dispose}). */
  constructor() {
    process.on('SIGTERM', this.handle);
    process.on('SIGINT', this.handle);
  }

  /** Aborted by the first SIGTERM or SIGINT. */
  get signal(): AbortSignal { return this.controller.signal; }

  /** Calls `fn` once on the first signal: now, if it already came. Replaces an earlier `fn`. */
  onShutdown(fn: () => void): void {
    this.listener = fn;
    if (this.controller.signal.aborted) fn();
  }

  /** Stops listening (the default handlers apply again). */
  dispose(): void {
    process.off('SIGTERM', this.handle);
    process.off('SIGINT', this.handle);
  }
}
