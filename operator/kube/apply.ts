/**
 * "No write when nothing changed": decides whether a server-side apply of a desired object would
 * change the live one, so that a converged operator sends no writes at all (kube-apiserver would
 * turn an unchanged apply into a no-op, but it is still a request and a managedFields check).
 *
 * An apply is needed when the live object is missing, when the hash of the desired object differs
 * from the one recorded at the last apply (annotation {@link APPLIED_HASH}: catches fields the
 * operator stopped declaring, which an apply removes), or when the live object no longer contains
 * what is declared (drift: someone edited it). Containment ignores what the server adds
 * (defaults, status, managedFields) and compares resource quantities by value (`1000m` = `1`).
 */
import { createHash } from 'node:crypto';
import type { HostObject } from '../api/types.js';

/** Annotation holding the hash of what the operator last applied. */
export const APPLIED_HASH = 'operator.kcp-ts.io/applied-hash';

/** Stable JSON: object keys sorted, so equal objects hash alike. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 (hex, first 32 characters) of a value's stable JSON. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(stable(value)).digest('hex').slice(0, 32);
}

/** `desired` with its hash recorded in {@link APPLIED_HASH} (the hash covers everything but that annotation). */
export function withAppliedHash<T extends HostObject>(desired: T): T {
  const hash = hashOf(desired);
  return { ...desired, metadata: { ...desired.metadata, annotations: { ...(desired.metadata.annotations ?? {}), [APPLIED_HASH]: hash } } };
}

const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$/;
const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A Kubernetes resource quantity (`500m`, `1Gi`, `1e3`, 2) as a number; NaN if it is not one. */
export function quantityValue(q: unknown): number {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return NaN;
  const m = QUANTITY.exec(q);
  if (!m) return NaN;
  const suffix = m[2] ?? '';
  if (/^[eE]/.test(suffix)) return Number(m[1]) * 10 ** Number(suffix.slice(1));
  return Number(m[1]) * (SUFFIX[suffix] ?? NaN);
}

/**
 * The first path where `live` does not contain `desired`, or undefined when it does. Objects:
 * every declared key, recursively (extra keys in `live` are fine); arrays: same length, element by
 * element; scalars: equal, or equal quantities.
 */
export function firstDifference(desired: unknown, live: unknown, path = ''): string | undefined {
  if (desired === live) return undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(live) || live.length !== desired.length) return path || '.';
    for (let i = 0; i < desired.length; i++) {
      const d = firstDifference(desired[i], live[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (desired && typeof desired === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return path || '.';
    for (const [k, v] of Object.entries(desired)) {
      if (v === undefined) continue;
      const d = firstDifference(v, (live as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  const a = quantityValue(desired);
  if (!Number.isNaN(a) && a === quantityValue(live)) return undefined;
  return path || '.';
}

/**
 * Why `desired` (as returned by {@link withAppliedHash}) must be applied over `live`, or undefined
 * when applying it would change nothing.
 */
export function applyReason(desired: HostObject, live: HostObject | undefined): string | undefined {
  if (!live) return 'missing';
  const want = desired.metadata.annotations?.[APPLIED_HASH];
  if (want !== undefined && live.metadata.annotations?.[APPLIED_HASH] !== want) return 'changed';
  const diff = firstDifference(desired, live);
  return diff ? `drifted at ${diff}` : undefined;
}
