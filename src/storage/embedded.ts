/**
 * The embedded Redis of `kcp-ts start` without `--redis-url`: a `redis-server` child process with
 * its data under `<root>/redis`, AOF with `appendfsync always` (an acknowledged write survives
 * kill -9, DESIGN.md "Durability"), listening only on a unix socket (or loopback when the socket
 * path is too long), stopped with the server.
 *
 * The controllers' queues get a second, non-persistent instance (`<root>/redis-queue`): queue
 * state is rebuilt from the watch cache whenever it is lost (informers enqueue every object at
 * start and after a reconnect), so it needs no fsync per write, and keeping its Lua scripts and
 * churn out of the storage instance keeps storage writes' fsyncs and AOF rewrites small.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';

/** A running embedded Redis. */
export interface EmbeddedRedis {
  /** `unix:///…/redis.sock` or `redis://127.0.0.1:<port>`. */
  url: string;
  stop(): Promise<void>;
}

/** Thrown when `redis-server` is not installed. */
export class RedisServerMissingError extends Error {
  constructor() {
    super('redis-server was not found on PATH: install it (Debian/Ubuntu: apt-get install redis-server) or pass --redis-url redis://HOST:PORT to use an existing Redis');
  }
}

/** Whether `redis-server` can be run. */
export function hasRedisServer(): boolean {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return !r.error && r.status === 0;
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const a = s.address(); s.close(() => res(typeof a === 'object' && a ? a.port : 0)); });
  });
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/**
 * A previous server killed with SIGKILL leaves its Redis child running on the same data
 * directory; two writers on one AOF would corrupt it, so stop the orphan first.
 */
async function stopOrphan(pidFile: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  if (!pid || !alive(pid)) return;
  let cmd = '';
  try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { /* not Linux or gone */ }
  if (cmd && !cmd.includes('redis-server')) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * Starts `redis-server` for a root directory and waits until it answers PING: the storage
 * instance (`<root>/redis`, AOF fsync always), or with `role: 'queue'` the controller-queue
 * instance (`<root>/redis-queue`, no persistence). Throws RedisServerMissingError when it is not
 * installed, or an Error with Redis's own output when it fails to start.
 */
export async function startEmbeddedRedis(rootDirectory: string, role: 'storage' | 'queue' = 'storage'): Promise<EmbeddedRedis> {
  if (!hasRedisServer()) throw new RedisServerMissingError();
  const dir = resolve(rootDirectory, role === 'queue' ? 'redis-queue' : 'redis');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pidFile = join(dir, 'redis.pid');
  await stopOrphan(pidFile);
  const socket = join(dir, 'redis.sock');
  const useSocket = Buffer.byteLength(socket) < 100;
  const port = useSocket ? 0 : await freePort();
  const args = [
    '--dir', dir, ...(role === 'queue' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', 'always']), '--save', '',
    '--pidfile', pidFile, '--daemonize', 'no', '--protected-mode', 'yes', '--bind', '127.0.0.1',
    '--port', String(port), '--loglevel', 'warning', '--logfile', '',
  ];
  if (useSocket) args.push('--unixsocket', socket, '--unixsocketperm', '700');
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => { output += String(d); });
  child.stderr!.on('data', (d) => { output += String(d); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = useSocket ? `unix://${socket}` : `redis://127.0.0.1:${port}`;
  let done = false;
  void exited.then(() => { done = true; });
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (done) throw new Error(`embedded redis-server exited during start-up: ${output.trim()}`);
    const probe = useSocket ? new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }) : new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`embedded redis-server did not become ready: ${output.trim()}`); }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return {
    url,
    async stop() {
      if (done) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}
