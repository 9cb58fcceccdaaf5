/**
 * The embedded Redis of `kcp-ts start` without `--redis-url`: a `redis-server` child process with
 * its data under `<root>/redis`, AOF with `appendfsync always` (an acknowledged write survives
 * kill -9; docs/architecture.md, "Storage (Redis)"), listening only on a unix socket (or loopback when the socket
 * path is too long), stopped with the server.
 *
 * The controllers' queues get a second, non-persistent instance (`<root>/redis-queue`): queue
 * state is rebuilt from the watch cache whenever it is lost (informers enqueue every object at
 * start and after a reconnect), so it needs no fsync per write, and keeping its Lua scripts and
 * churn out of the storage instance keeps storage writes' fsyncs and AOF rewrites small.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { connectRedis } from './redis.js';

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
 * directory; two writers on one AOF would corrupt it, so stop the orphan first. Only called by
 * the holder of the root directory's lock (src/server/rootlock.ts): a redis-server named by the
 * pid file then cannot belong to a live server.
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

/** File in the embedded Redis's directory (`<root>/redis/url`) holding the URL it listens at. */
export const EMBEDDED_URL_FILE = 'url';

/**
 * The URL of the running embedded storage Redis of a root directory, as its server wrote it, or
 * undefined when it never ran there.
 */
export function embeddedRedisURL(rootDirectory: string): string | undefined {
  try { return readFileSync(join(resolve(rootDirectory), 'redis', EMBEDDED_URL_FILE), 'utf8').trim() || undefined; } catch { return undefined; }
}

/** Options of {@link startEmbeddedRedis}. */
export interface EmbeddedRedisOptions {
  /**
   * Told, in one line, when the redis-server exits unexpectedly and when it is running again
   * (default: nothing).
   */
  onEvent?(message: string): void;
  /** Aborts the start-up: the redis-server is stopped and the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** First and longest wait before a redis-server that died is started again, in ms. */
const RESTART_DELAY_MS = 100;
const RESTART_DELAY_MAX_MS = 5_000;

/**
 * Starts `redis-server` for a root directory and waits until it answers PING: the storage
 * instance (`<root>/redis`, AOF fsync always), or with `role: 'queue'` the controller-queue
 * instance (`<root>/redis-queue`, no persistence). Throws RedisServerMissingError when it is not
 * installed, or an Error with Redis's own output when it fails to start.
 *
 * Supervised until `stop()`: a redis-server that exits (a crash, kill -9, the OOM killer) is
 * started again on the same directory and address, after 100 ms and then with the wait doubling
 * up to 5 s while it keeps failing. Clients reconnect on their own; the storage instance comes
 * back with every acknowledged write (AOF), the queue instance empty (its informers enqueue
 * everything again).
 */
export async function startEmbeddedRedis(rootDirectory: string, role: 'storage' | 'queue' = 'storage', options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
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
  const url = useSocket ? `unix://${socket}` : `redis://127.0.0.1:${port}`;

  /** Spawns redis-server and resolves once it answers PING; `exited` settles when it exits. */
  const launch = async (): Promise<{ child: ChildProcess; exited: Promise<string> }> => {
    // Its own process group: a Ctrl-C in a terminal signals the whole foreground group, and the
    // redis-server must stop when the server stops it (after its clients closed), not before.
    const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    // A redis-server that cannot be run has no pid; its error follows on the next tick. (Found
    // here rather than by running `redis-server --version` first: that took tens of ms per start.)
    if (child.pid === undefined) {
      const err = await new Promise<NodeJS.ErrnoException>((r) => child.once('error', r));
      throw err.code === 'ENOENT' ? new RedisServerMissingError() : err;
    }
    // Its own words: the start-up banner until it answers, then (the last 2 KB of) what it says
    // while it runs, which names the cause when it dies.
    let output = '';
    const collect = (d: Buffer) => { output = (output + String(d)).slice(-2048); };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    let done = false;
    const exited = new Promise<string>((r) => child.once('exit', (code, signal) => {
      done = true;
      r(`${signal ? `signal ${signal}` : `exit code ${code}`}${output.trim() ? `: ${output.trim()}` : ''}`);
    }));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (done) throw new Error(`embedded redis-server exited during start-up: ${output.trim()}`);
      if (options.signal?.aborted) { child.kill('SIGTERM'); await exited; throw options.signal.reason; }
      const probe = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        output = '';
        return { child, exited };
      } catch {
        probe.disconnect();
        if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`embedded redis-server did not become ready: ${output.trim()}`); }
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };

  let current = await launch();
  // Where tools that run beside the server (kcp-ts backup) find it: a port is chosen at start.
  writeFileSync(join(dir, EMBEDDED_URL_FILE), `${url}\n`, { mode: 0o600 });
  let stopping = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    wake = () => { clearTimeout(t); r(); };
  });
  const tell = (m: string) => options.onEvent?.(`embedded ${role} redis-server: ${m}`);
  // The supervisor: runs until stop(); each turn waits for the current process to exit.
  const supervised = (async () => {
    for (;;) {
      const why = await current.exited;
      if (stopping) return;
      tell(`exited unexpectedly (${why}); starting it again`);
      for (let delay = RESTART_DELAY_MS; ; delay = Math.min(delay * 2, RESTART_DELAY_MAX_MS)) {
        if (stopping) return;
        await pause(delay);
        if (stopping) return;
        try {
          current = await launch();
        } catch (err) {
          tell(`${(err as Error).message}; trying again`);
          continue;
        }
        if (stopping) { current.child.kill('SIGTERM'); await current.exited; return; }
        tell('running again');
        break;
      }
    }
  })();
  return {
    url,
    async stop() {
      if (!stopping) {
        stopping = true;
        wake?.();
        current.child.kill('SIGTERM');
      }
      const t = setTimeout(() => current.child.kill('SIGKILL'), 10_000);
      await supervised;
      clearTimeout(t);
    },
  };
}
