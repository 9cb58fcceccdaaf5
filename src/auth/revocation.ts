/**
 * Revoked client certificates: serial numbers a shard and the front-proxy refuse although the
 * certificate is otherwise valid (kube-apiserver has no such list; kcp-ts has it so that a
 * kubeconfig the operator issued can be taken back). The list is a file — one serial number per
 * line, hex, `#` comments — that the operator keeps in a ConfigMap mounted into the pods; it is
 * read again when it changed (its modification time, looked at no more than once a second, when a
 * certificate is checked), so a revocation takes effect without a restart, on connections already
 * open too.
 */
import { readFileSync, statSync } from 'node:fs';

/** A serial number in one form: lowercase hex without leading zeros (`0A1b` → `a1b`). */
export function normalizeSerial(hex: string): string {
  return hex.trim().toLowerCase().replace(/^0+(?=.)/, '');
}

/**
 * Parses a revocation file's text into normalized serial numbers: the first word of each line
 * (what follows it, e.g. the certificate's end and whose it was, is for people); lines whose first
 * word is not hex are ignored.
 */
export function parseRevokedSerials(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.split('\n')) {
    const word = raw.replace(/#.*/, '').trim().split(/\s+/)[0]!.replace(/:/g, '');
    if (/^[0-9a-fA-F]+$/.test(word)) out.add(normalizeSerial(word));
  }
  return out;
}

/** The revoked serial numbers of a file, kept current (see the module comment). */
export class RevokedCertificates {
  private serials = new Set<string>();
  private mtimeMs = -1;
  private checkedAt = 0;

  /**
   * Reads `path` now and again when it changed. A file that is missing or unreadable revokes
   * nothing (and is reported through `log` once, until it is readable again).
   */
  constructor(private readonly path: string, private readonly log: (msg: string) => void = () => undefined) {
    this.reload();
  }

  private reload(): void {
    this.checkedAt = Date.now();
    try {
      const st = statSync(this.path);
      if (st.mtimeMs === this.mtimeMs) return;
      this.mtimeMs = st.mtimeMs;
      this.serials = parseRevokedSerials(readFileSync(this.path, 'utf8'));
    } catch (err) {
      if (this.mtimeMs !== -2) this.log(`revoked client certificates: ${(err as Error).message}; none revoked`);
      this.mtimeMs = -2;
      this.serials = new Set();
    }
  }

  /** Whether the certificate with this serial number (hex, any case) is revoked. */
  has(serialHex: string): boolean {
    const now = Date.now();
    if (now - this.checkedAt >= 1000) { this.checkedAt = now; this.reload(); }
    return this.serials.size > 0 && this.serials.has(normalizeSerial(serialHex));
  }

  /** Nothing to release (kept for callers that close what they open). */
  close(): void { /* no watcher: the file is looked at when certificates are checked */ }
}
