/** How kubectl and kube-apiserver print durations and ages. */

/**
 * kube's `duration.HumanDuration` (k8s.io/apimachinery/pkg/util/duration) of a number of seconds:
 * `90s`, `5m30s`, `3h`, `2d4h`, `3y45d` — what kubectl prints for ages and durations.
 */
export function humanDuration(seconds: number): string {
  let s = Math.floor(seconds);
  if (s < 120) return `${s}s`;
  let m = Math.floor(s / 60);
  if (m < 10) { s %= 60; return s ? `${m}m${s}s` : `${m}m`; }
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) { m %= 60; return m ? `${h}h${m}m` : `${h}h`; }
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) { const hh = h % 24; return hh ? `${d}d${hh}h` : `${d}d`; }
  if (d < 365 * 2) return `${d}d`;
  if (d < 365 * 8) { const y = Math.floor(d / 365); const dd = d % 365; return dd ? `${y}y${dd}d` : `${y}y`; }
  return `${Math.floor(d / 365)}y`;
}

/** Human-readable age of an RFC 3339 timestamp, as kubectl prints (`5s`, `3m`, `2d`). */
export function age(ts: string | undefined, now = Date.now()): string {
  if (!ts) return '<unknown>';
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(Math.max(0, (now - t) / 1000));
}
