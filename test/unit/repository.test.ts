/**
 * The repository is self-contained and installs as the README says: a fresh clone has nothing
 * beside it, so no test, benchmark, script or document may use a path outside the repository;
 * the paths the README tells users to use exist; the lock file installs on the Node version the
 * README promises without engine warnings; the package's executables are named as kubectl and
 * npm expect.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** What a fresh clone has but this check need not read (installed or generated). */
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.kcp', 'scratch', 'fixtures']);

/** Text files of the repository that code or people follow paths from. */
function checkedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) { if (!SKIP_DIRS.has(name)) walk(p); continue; }
      if (/\.(ts|js|mjs|cjs|md|json|ya?ml|sh)$/.test(name) || relative(REPO, p) === join('.ci', 'run') || dirname(p) === join(REPO, 'bin')) out.push(p);
    }
  };
  walk(REPO);
  return out.filter((p) => !p.endsWith('package-lock.json'));
}

const inside = (p: string): boolean => p === REPO.replace(/\/$/, '') || p.startsWith(REPO.endsWith(sep) ? REPO : REPO + sep);

test('no file names a path outside the repository', () => {
  const files = checkedFiles();
  assert.ok(files.length > 50, `expected the repository's files, found ${files.length}`);
  const leaks: string[] = [];
  // Places a fresh clone does not have: the folder beside the repository, and machine paths.
  const forbidden = [/\.\.\/shared\b/, /['"]\.\.['"],\s*['"]\.\.['"],\s*['"]shared['"]/, /(?<![\w.:])\/(work|Users|root)\/[\w.-]/];
  for (const file of files) {
    if (file === fileURLToPath(import.meta.url)) continue;
    const text = readFileSync(file, 'utf8');
    const rel = relative(REPO, file);
    text.split('\n').forEach((line, i) => {
      for (const re of forbidden) if (re.test(line)) leaks.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
    // Paths a module builds from its own location must stay in the repository.
    for (const m of text.matchAll(/new URL\(\s*'([^']+)',\s*import\.meta\.url\s*\)/g)) {
      const target = resolve(dirname(file), m[1]!);
      if (!inside(target)) leaks.push(`${rel}: new URL('${m[1]}', import.meta.url) is ${target}`);
    }
    for (const m of text.matchAll(/join\(\s*import\.meta\.dirname((?:\s*,\s*'[^']*')+)\s*\)/g)) {
      const parts = [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]!);
      const target = resolve(dirname(file), ...parts);
      if (!inside(target)) leaks.push(`${rel}: join(import.meta.dirname, ${parts.map((x) => `'${x}'`).join(', ')}) is ${target}`);
    }
  }
  assert.deepEqual(leaks, []);
});

test('every repository path in the README exists', () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  // Paths given to kubectl -f / --filename and the folders and files the text points to.
  const paths = new Set<string>();
  for (const m of readme.matchAll(/(?:-f|--filename)\s+([\w.-]*\/[\w./-]*|[\w.-]+\.ya?ml)/g)) paths.add(m[1]!);
  for (const m of readme.matchAll(/`((?:src|test|bench|docs|bin|scripts|crds|charts|operator)\/[\w./-]*)`/g)) paths.add(m[1]!);
  assert.ok(paths.size >= 3, `expected the README to point into the repository, found ${[...paths].join(', ')}`);
  // Files a command of the README writes first (`-o syncer.yaml`) are the user's, not the repository's.
  for (const m of readme.matchAll(/(?:^|\s)(?:-o|--output)\s+([\w.-]+\.ya?ml)/g)) paths.delete(m[1]!);
  const missing = [...paths].filter((p) => !existsSync(join(REPO, p)) || !inside(resolve(REPO, p)));
  assert.deepEqual(missing, [], 'README paths that a fresh clone does not have');
});

test('the lock file installs on this Node without engine warnings', () => {
  const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } };
  // The README promises Node 20: the lowest Node the package accepts must be 20.
  assert.equal(semver.minVersion(pkg.engines.node)?.major, 20);
  const unsupported: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (path && range && !semver.satisfies(process.version, range)) unsupported.push(`${path.replace(/^node_modules\//, '')} needs node ${range}`);
  }
  assert.deepEqual(unsupported, [], `installing on ${process.version} warns EBADENGINE`);
});

test('executables are named as kubectl expects of plugins, and runnable', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  assert.deepEqual(Object.keys(pkg.bin).sort(), ['kcp-ts', 'kubectl-create-workspace', 'kubectl-kcp', 'kubectl-ws']);
  for (const [name, file] of Object.entries(pkg.bin)) {
    // kubectl finds `kubectl-<name>` on PATH by file name; putting bin/ on PATH must work.
    assert.equal(file, `bin/${name}`);
    const mode = statSync(join(REPO, file)).mode;
    assert.ok(mode & 0o111, `${file} is executable`);
    assert.match(readFileSync(join(REPO, file), 'utf8'), /^#!\/usr\/bin\/env node\n/);
  }
});
