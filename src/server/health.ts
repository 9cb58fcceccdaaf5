/**
 * `/livez`, `/readyz` and `/healthz` as kube-apiserver serves them (k8s.io/apiserver
 * pkg/server/healthz): a list of named checks; `?verbose` lists each (`[+]ping ok`) and ends with
 * `livez check passed`; `?exclude=<name>` (repeatable) skips checks; `/livez/<name>` runs one.
 * A failing check answers 500 with every check listed (`[-]redis failed: reason withheld`) and
 * `livez check failed`; the reason itself goes only to the server's log, as kube withholds it.
 */

/** One named check: undefined when healthy, else the reason (kept out of responses). */
export interface HealthCheck {
  name: string;
  check(): string | undefined;
}

/** A response of a health endpoint: status code and plain-text body. */
export interface HealthResponse {
  code: 200 | 404 | 500;
  body: string;
}

/**
 * Answers `GET /<endpoint>[/<check>]` for a list of checks.
 *
 * @param endpoint `livez`, `readyz` or `healthz` (named in the last line of the body)
 * @param checks the endpoint's checks, in output order
 * @param subPath what follows `/<endpoint>`: `''`, `'/'` or `'/<check name>'`
 * @param query the request's query (`verbose`, `exclude`)
 * @param onFailure told each failing check's name and reason (for the log)
 */
export function answerHealth(endpoint: string, checks: readonly HealthCheck[], subPath: string, query: URLSearchParams, onFailure: (name: string, reason: string) => void = () => undefined): HealthResponse {
  if (subPath !== '' && subPath !== '/') {
    const check = checks.find((c) => `/${c.name}` === subPath);
    if (!check) return { code: 404, body: '404 page not found\n' };
    const reason = check.check();
    if (reason === undefined) return { code: 200, body: 'ok' };
    onFailure(check.name, reason);
    return { code: 500, body: `internal server error: ${reason}\n` };
  }
  const excluded = new Set(query.getAll('exclude').flatMap((e) => e.split(',')).map((e) => e.trim()).filter(Boolean));
  let lines = '';
  let failed = false;
  for (const c of checks) {
    if (excluded.delete(c.name)) { lines += `[+]${c.name} excluded: ok\n`; continue; }
    const reason = c.check();
    if (reason === undefined) { lines += `[+]${c.name} ok\n`; continue; }
    failed = true;
    onFailure(c.name, reason);
    lines += `[-]${c.name} failed: reason withheld\n`;
  }
  if (excluded.size > 0) lines += `warn: some health checks cannot be excluded: no matches for ${[...excluded].map((e) => `"${e}"`).join(',')}\n`;
  if (failed) return { code: 500, body: `${lines}${endpoint} check failed\n` };
  if (!query.has('verbose')) return { code: 200, body: 'ok' };
  return { code: 200, body: `${lines}${endpoint} check passed\n` };
}

/** The health endpoints under every server base (`/` and `/clusters/<path>/`). */
export const HEALTH_ENDPOINTS = ['livez', 'readyz', 'healthz'] as const;
export type HealthEndpoint = (typeof HEALTH_ENDPOINTS)[number];

/**
 * Splits a path below a server base into a health endpoint and the rest, e.g. `/livez/ping` →
 * `['livez', '/ping']`; undefined for other paths.
 */
export function healthEndpointOf(path: string): [HealthEndpoint, string] | undefined {
  for (const e of HEALTH_ENDPOINTS) {
    if (path === `/${e}` || path.startsWith(`/${e}/`)) return [e, path.slice(e.length + 1)];
  }
  return undefined;
}
