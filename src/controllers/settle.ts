/**
 * Delayed looks at new objects for informers: a key is handed to `look` `settleMs` after it was
 * added. Whoever creates a namespace often creates what a controller would add to it right after
 * (the `root:universal` initializer writes a workspace's `default` namespace with its
 * ServiceAccount and root CA ConfigMap in one transaction, applied to the watch cache one event
 * after the other), so looking a moment later saves a queue job. Pending keys wait in arrival
 * order (due times ascend) behind one timer, not one timer each; their number is bounded by the
 * objects created within `settleMs`.
 */
export class SettleQueue<T> {
  private readonly pending: { due: number; item: T }[] = [];
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param settleMs how long an added item waits, in milliseconds
   * @param look called with each item once its time has come (must not throw)
   */
  constructor(private readonly settleMs: number, private readonly look: (item: T) => void) {}

  /** Looks at `item` after `settleMs`. */
  add(item: T): void {
    this.pending.push({ due: Date.now() + this.settleMs, item });
    this.arm();
  }

  /** Drops every pending item and the timer. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.length = 0;
  }

  private arm(): void {
    if (this.timer || !this.pending.length) return;
    this.timer = setTimeout(() => this.drain(), Math.max(0, this.pending[0]!.due - Date.now()));
    this.timer.unref();
  }

  private drain(): void {
    this.timer = undefined;
    const now = Date.now();
    let n = 0;
    while (n < this.pending.length && this.pending[n]!.due <= now) { this.look(this.pending[n]!.item); n++; }
    this.pending.splice(0, n);
    this.arm();
  }
}
