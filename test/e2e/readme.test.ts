/**
 * The README's library example runs as written, in a project that depends on kcp-ts (a temporary
 * directory whose node_modules/kcp-ts is this repository, built by `npm test`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The first ```ts block under the README heading `heading`. */
function readmeBlock(heading: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const at = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(at >= 0, `README has a "${heading}" section`);
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(m, `the "${heading}" section has a TypeScript example`);
  return m[1]!;
}

test('the README library example runs: starts a shard, kubectl lists its namespaces, stop() cleans up', async () => {
  assert.ok(existsSync(join(REPO, 'dist', 'src', 'index.js')), 'dist/ is built (npm test runs npm run build first)');
  const project = mkdtempSync(join(tmpdir(), 'kcp-ts-user-'));
  try {
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(REPO, join(project, 'node_modules', 'kcp-ts'), 'dir');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'example', type: 'module', private: true }));
    writeFileSync(join(project, 'example.ts'), readmeBlock('Using kcp-ts as a library'));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', import.meta.resolve('tsx'), 'example.ts'], {
      cwd: project, timeout: 60_000, env: { ...process.env, HOME: project },
    });
    assert.equal(stdout.trim(), 'namespace/default');
    // Its state went where the example said, and stop() left no redis-server behind.
    assert.ok(existsSync(join(project, '.kcp-example', 'admin.kubeconfig')));
    for (const role of ['redis', 'redis-queue']) {
      const pidFile = join(project, '.kcp-example', role, 'redis.pid');
      if (!existsSync(pidFile)) continue;
      const pid = Number(readFileSync(pidFile, 'utf8'));
      assert.throws(() => process.kill(pid, 0), `the ${role} redis-server (pid ${pid}) was stopped`);
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
});
