/**
 * A `kcp-ts start` process's life as users live it: one process per root directory (a second start
 * fails and the first never notices), a lock left by kill -9 is recovered, Ctrl-C (SIGINT to the
 * whole process group) and SIGTERM at any moment of start-up stop everything and leave no
 * redis-server behind; in-process, an aborted `startServer` undoes what it did.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, CM, freePort, sleep, spawnCli, startRedis, stopCli } from '../helpers.js';
import { startServer } from '../../src/index.js';
import { lockRootDirectory, RootDirectoryInUseError } from '../../src/server/rootlock.js';

/** Pids of the redis-servers whose command line names `root` (the embedded ones of that root). */
function redisServersOf(root: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `redis-server.*${root}`], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

const NS = '/clusters/root/api/v1/namespaces/default/configmaps';

test('a second start on the same root directory exits 1 naming the holder; the first shard never notices', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'kcp-lock-'));
  const root = join(cwd, '.kcp');
  const first = spawnCli(['start', '--secure-port', String(await freePort())], { cwd });
  const url = await first.ready;
  try {
    const creds = adminCreds(root);
    const redisBefore = redisServersOf(root).sort();
    assert.equal(redisBefore.length, 2, 'storage and queue redis-servers');
    assert.equal(readFileSync(join(root, 'kcp-ts.lock'), 'utf8').trim(), String(first.proc.pid));

    const second = spawnCli(['start', '--secure-port', String(await freePort())], { cwd });
    assert.equal(await second.exited, 1);
    assert.equal(second.output().trim(), `kcp-ts start: root directory .kcp is in use by pid ${first.proc.pid}`);
    // The same directory named differently is the same lock.
    const third = spawnCli(['start', '--root-directory', `${cwd}/./.kcp/`, '--secure-port', '0']);
    assert.equal(await third.exited, 1);
    assert.match(third.output(), new RegExp(`in use by pid ${first.proc.pid}`));

    assert.deepEqual(redisServersOf(root).sort(), redisBefore, 'the running shard keeps its redis-servers');
    assert.equal((await call({ url }, creds, 'GET', '/readyz')).status, 200);
    assert.equal((await call({ url }, creds, 'POST', NS, CM('after-second-start'))).status, 201);
    assert.equal(readFileSync(join(root, 'kcp-ts.lock'), 'utf8').trim(), String(first.proc.pid));
    const t0 = Date.now();
    assert.equal(await stopCli(first), 0);
    assert.ok(Date.now() - t0 < 5_000, `stopped in ${Date.now() - t0} ms`);
    assert.doesNotMatch(first.output(), /unexpected/);
    assert.equal(existsSync(join(root, 'kcp-ts.lock')), false, 'the pid file goes with the lock');
  } finally {
    await stopCli(first);
  }
});

test('after kill -9 the lock is free again: the next start recovers, replacing the orphaned redis-servers, with the data', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-lock-kill-'));
  const port = await freePort();
  const first = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
  const url = await first.ready;
  const creds = adminCreds(root);
  assert.equal((await call({ url }, creds, 'POST', NS, CM('before-kill'))).status, 201);
  const orphans = redisServersOf(root);
  first.proc.kill('SIGKILL');
  await first.exited;
  assert.deepEqual(redisServersOf(root).sort(), orphans.sort(), 'kill -9 of the node process leaves its redis-servers running');

  const next = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
  try {
    await next.ready;
    const now = redisServersOf(root);
    assert.equal(now.length, 2);
    assert.deepEqual(now.filter((p) => orphans.includes(p)), [], 'the orphans were stopped, new ones started');
    assert.equal((await call({ url }, creds, 'GET', `${NS}/before-kill`)).status, 200);
    assert.equal(readFileSync(join(root, 'kcp-ts.lock'), 'utf8').trim(), String(next.proc.pid));
  } finally {
    assert.equal(await stopCli(next), 0);
  }
  assert.deepEqual(redisServersOf(root), []);
});

test('Ctrl-C (SIGINT to the whole process group) stops cleanly: exit 0, no Redis exit reported as unexpected, nothing left running', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-ctrlc-'));
  const cli = spawnCli(['start', '--root-directory', root, '--secure-port', '0'], { detached: true });
  await cli.ready;
  process.kill(-cli.proc.pid!, 'SIGINT');
  assert.equal(await cli.exited, 0);
  assert.match(cli.output(), /received SIGINT, shutting down/);
  assert.doesNotMatch(cli.output(), /unexpected|starting it again/);
  assert.deepEqual(redisServersOf(root), []);
  assert.equal(existsSync(join(root, 'kcp-ts.lock')), false);
});

test('stopped after its output reader went away (kcp-ts start | head): exit 0, nothing left running', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-epipe-'));
  const cli = spawnCli(['start', '--root-directory', root, '--secure-port', '0']);
  await cli.ready;
  cli.proc.stdout!.destroy();
  cli.proc.stderr!.destroy();
  cli.proc.kill('SIGTERM'); // its "shutting down" line now meets EPIPE
  assert.equal(await cli.exited, 0);
  assert.deepEqual(redisServersOf(root), []);
  assert.equal(existsSync(join(root, 'kcp-ts.lock')), false);
});

test('SIGTERM at any moment of start-up: exit 0, no redis-server left, the root directory free for the next start', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-early-term-'));
  // From just after the process runs JavaScript to after it is ready (a start takes ~0.5–1.5 s).
  for (const delayMs of [80, 150, 250, 400, 600, 900, 1400]) {
    const cli = spawnCli(['start', '--root-directory', root, '--secure-port', '0'], { detached: true });
    await sleep(delayMs);
    cli.proc.kill('SIGTERM');
    const code = await cli.exited;
    if (code === 'SIGTERM' && delayMs < 400) {
      // Node had not run the first line of kcp-ts yet (the machine is busy): the default action
      // ended it before it did anything.
      assert.equal(cli.output(), '', `SIGTERM after ${delayMs} ms`);
    } else {
      assert.equal(code, 0, `SIGTERM after ${delayMs} ms: ${cli.output()}`);
      assert.match(cli.output(), /received SIGTERM, shutting down/, `SIGTERM after ${delayMs} ms`);
    }
    assert.doesNotMatch(cli.output(), /unexpected|Error/, `SIGTERM after ${delayMs} ms`);
    assert.deepEqual(redisServersOf(root), [], `SIGTERM after ${delayMs} ms left redis-servers`);
    assert.equal(existsSync(join(root, 'kcp-ts.lock')), false, `SIGTERM after ${delayMs} ms left the lock`);
  }
  // And the directory still starts normally.
  const cli = spawnCli(['start', '--root-directory', root, '--secure-port', '0']);
  await cli.ready;
  assert.equal(await stopCli(cli), 0);
});

test('startServer aborted by its signal rejects with AbortError and releases what it took', async () => {
  const redis = await startRedis();
  const root = mkdtempSync(join(tmpdir(), 'kcp-abort-'));
  try {
    for (const delayMs of [0, 5, 30, 100]) {
      const controller = new AbortController();
      const started = startServer({ rootDirectory: root, securePort: 0, redisUrl: redis.url, signal: controller.signal });
      setTimeout(() => controller.abort(), delayMs);
      const outcome = await started.then((s) => s, (e: unknown) => e);
      if (!(outcome instanceof Error)) {
        await outcome.stop(); // it won the race: started before the abort
        continue;
      }
      assert.equal(outcome.name, 'AbortError', String(outcome));
    }
    // The lock was released every time: a normal start works.
    const srv = await startServer({ rootDirectory: root, securePort: 0, redisUrl: redis.url });
    assert.equal((await call(srv, adminCreds(root), 'GET', '/readyz')).status, 200);
    await srv.stop();
  } finally {
    await redis.stop();
  }
});

test('lockRootDirectory: exclusive while held (in any spelling of the path), free after release', async () => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-lock-unit-'));
  const lock = await lockRootDirectory(root, 'the-root');
  await assert.rejects(lockRootDirectory(`${root}/.`, 'the-root'), (e: unknown) => {
    assert.ok(e instanceof RootDirectoryInUseError);
    assert.equal(e.pid, process.pid);
    assert.equal(e.message, `root directory the-root is in use by pid ${process.pid}`);
    return true;
  });
  await lock.release();
  await lock.release(); // idempotent
  const again = await lockRootDirectory(root);
  await again.release();
});
