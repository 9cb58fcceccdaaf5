/**
 * Types of the conformance suite: a case is one upstream Kubernetes expectation (an e2e `It(…)`,
 * an apiserver integration test, or a documented API rule) carried over as data plus a check
 * run against a live server over HTTPS.
 */
import type { Res } from '../helpers.js';

/** Where an expectation comes from upstream. */
export interface Source {
  /** File in kubernetes/kubernetes (or kubernetes/website for documented rules). */
  file: string;
  /** The `It(…)` title, Go test name, or documentation section. */
  it: string;
}

/** An open watch stream: events received so far, and a way to stop it. */
export interface WatchStream {
  events: any[];
  /** Resolves to the HTTP status once the response started (the watch is registered). */
  status: Promise<number>;
  close(): void;
  /** Resolves once `n` events arrived (or after `ms`), returning all events so far. */
  waitFor(n: number, ms?: number): Promise<any[]>;
}

/** What a case's check receives: an API client and a namespace of its own. */
export interface CaseContext {
  /** One request to the server, path from the root (`/clusters/root/...`). */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res>;
  /** A watch stream on a path (the `watch=true` query must be in it). */
  watch(path: string): WatchStream;
  /** The logical cluster prefix, `/clusters/root`. */
  cluster: string;
  /** A namespace created for this case only. */
  ns: string;
  /** `<cluster>/api/v1/namespaces/<ns>`. */
  core: string;
  /** A short DNS-safe token unique to this case in this run (for cluster-scoped names). */
  uid: string;
}

/** One applicable expectation. */
export interface Case {
  /** Stable identifier, `area-what`. */
  id: string;
  /** Area, for grouping in the report. */
  area: string;
  source: Source;
  /** What is checked, when it differs from the upstream test (adapted to served resources …). */
  note?: string;
  /** Throws (assert) when the server does not meet the expectation. */
  check(ctx: CaseContext): Promise<void>;
  /**
   * Set when the server is known not to meet the expectation and the fix is not small: the
   * reason. The suite asserts such a case still fails, so a fix (or a regression) is noticed.
   */
  knownGap?: string;
}

/** An upstream expectation that cannot apply to this server, and why. */
export interface NotApplicable {
  source: Source;
  reason: string;
}

/** The outcome of one case. */
export interface CaseResult {
  id: string;
  area: string;
  source: Source;
  passed: boolean;
  error?: string;
  knownGap?: string;
  ms: number;
}
