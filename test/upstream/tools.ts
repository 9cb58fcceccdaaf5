/**
 * Where the Go programs of the upstream checks are: Kubernetes' `e2e.test` and `typedclients`,
 * built by test/tools/build.sh from test/tools/e2e into a cache outside the repository (the
 * directories `build.sh --print` names `e2e-<kube version>-r<recipe>` and `typedclients-<hash of
 * its sources>`). `E2E_TEST` and `TYPEDCLIENTS` (paths to executables) override them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';

const BUILD_SH = join(import.meta.dirname, '..', 'tools', 'build.sh');

/** Paths of the programs (they may not exist yet); `h2Informer` beside typedclients (`H2INFORMER` overrides it). */
export interface E2eTools { e2eTest: string; typedClients: string; h2Informer: string }

/** The paths build.sh's cache (or the environment) names; does not build. */
export function e2eToolPaths(): E2eTools {
  const dirs = execFileSync(BUILD_SH, ['--print'], { encoding: 'utf8' }).trim().split('\n');
  const named = (prefix: string) => dirs.find((d) => basename(d).startsWith(prefix));
  const [e2eDir, typedDir] = [named('e2e-'), named('typedclients-')];
  if (!e2eDir || !typedDir) throw new Error(`${BUILD_SH} --print did not name the e2e tools directories: ${dirs.join(', ')}`);
  return {
    e2eTest: process.env.E2E_TEST ?? join(e2eDir, 'e2e.test'),
    typedClients: process.env.TYPEDCLIENTS ?? join(typedDir, 'typedclients'),
    h2Informer: process.env.H2INFORMER ?? join(typedDir, 'h2informer'),
  };
}

/** What to do when a program is missing: how to get it. */
export function missingToolMessage(path: string, what: string): string {
  return `${what} is missing (${path}). Build it with test/tools/build.sh (needs Go; e2e.test takes tens of minutes once, ` +
    'then it is cached), or point E2E_TEST / TYPEDCLIENTS at an existing binary';
}

/**
 * The paths, building them with build.sh first when they are missing (and not given by the
 * environment). @throws Error saying how to get a program that is still missing
 */
export function ensureE2eTools(): E2eTools {
  let tools = e2eToolPaths();
  if ((!existsSync(tools.e2eTest) && !process.env.E2E_TEST) || (!existsSync(tools.typedClients) && !process.env.TYPEDCLIENTS)) {
    process.stderr.write('building e2e.test and typedclients with test/tools/build.sh (once; cached outside the repository)\n');
    try { execFileSync(BUILD_SH, [], { stdio: ['ignore', 'ignore', 'inherit'] }); } catch { /* reported below */ }
    tools = e2eToolPaths();
  }
  if (!existsSync(tools.e2eTest)) throw new Error(missingToolMessage(tools.e2eTest, 'e2e.test'));
  if (!existsSync(tools.typedClients)) throw new Error(missingToolMessage(tools.typedClients, 'typedclients'));
  return tools;
}
