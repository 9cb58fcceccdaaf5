/**
 * The exclusive lock a server holds on its root directory for its whole life: its PKI, its
 * kubeconfig and its embedded Redis data (whose redis-server children it starts, supervises and,
 * after a crash of a previous holder, stops) belong to one process at a time. A second
 * `kcp-ts start` on the same directory must fail before it touches anything.
 *
 * The lock is a listening unix socket, which the kernel releases when its process dies, however
 * it dies (kill -9 included): so a lock is never stale and needs no clean-up. On Linux it is an
 * abstract socket named after the directory's real path (nothing on disk); elsewhere a socket file
 * `kcp-ts.lock.sock` in the directory, whose leftover from a killed holder is recognised by
 * refusing connections and replaced. The holder answers every connection with its pid, which is
 * how a second process names it. For people and scripts, `<root>/kcp-ts.lock` holds the pid too
 * while the lock is held.
 */
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/** Thrown by {@link lockRootDirectory} when another live process holds the directory. */
export class RootDirectoryInUseError extends Error {
  /**
   * @param displayPath the directory as the user named it (e.g. `.kcp`)
   * @param pid the holder's pid, or undefined when it did not say
   */
  constructor(readonly displayPath: string, readonly pid: number | undefined) {
    super(`root directory ${displayPath} is in use by ${pid === undefined ? 'another process' : `pid ${pid}`}`);
    this.name = 'RootDirectoryInUseError';
  }
}

/** A held root-directory lock. */
export interface RootLock {
  /** Releases the lock (idempotent); the pid file is removed if it still names this process. */
  release(): Promise<void>;
}

/** Name of the pid file inside the root directory. */
export const LOCK_PID_FILE = 'kcp-ts.lock';

function lockAddress(realRoot: string): string {
  if (process.platform === 'linux') {
    return `\0kcp-ts:${createHash('sha256').update(realRoot).digest('hex').slice(0, 32)}`;
  }
  return join(realRoot, 'kcp-ts.lock.sock');
}

function listen(server: Server, address: string): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const onError = (err: NodeJS.ErrnoException) => { server.off('listening', onListening); resolve(err); };
    const onListening = () => { server.off('error', onError); resolve(undefined); };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ path: address, exclusive: true });
  });
}

/**
 * Asks the holder of `address` for its pid. Resolves to the pid, to `'gone'` when nothing listens
 * there any more (refused or absent: the holder died or released it), or to undefined when a
 * listener accepted but did not answer within 2 s.
 */
function askHolder(address: string): Promise<number | 'gone' | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect({ path: address });
    const timer = setTimeout(() => { socket.destroy(); resolve(undefined); }, 2_000);
    socket.on('data', (d) => { text += String(d); });
    socket.on('end', () => { clearTimeout(timer); const pid = Number.parseInt(text, 10); resolve(Number.isInteger(pid) && pid > 0 ? pid : undefined); });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? 'gone' : undefined);
    });
  });
}

/**
 * Takes the exclusive lock on the root directory `root` (which must exist) for this process.
 *
 * @param root the root directory
 * @param displayPath how error messages name it (default: `root`)
 * @returns the held lock; release it when the server stops
 * @throws RootDirectoryInUseError when another live process holds it; other errors (permissions)
 *   as the system reports them
 */
export async function lockRootDirectory(root: string, displayPath = root): Promise<RootLock> {
  const realRoot = realpathSync(root);
  const address = lockAddress(realRoot);
  const onDisk = !address.startsWith('\0');
  const server = createServer((socket) => { socket.end(`${process.pid}\n`); });
  for (let attempt = 0; ; attempt++) {
    const err = await listen(server, address);
    if (!err) break;
    if (err.code !== 'EADDRINUSE') throw err;
    const holder = await askHolder(address);
    if (holder !== 'gone' || attempt >= 5) throw new RootDirectoryInUseError(displayPath, holder === 'gone' ? undefined : holder);
    // The holder is gone: on Linux the address is free again; a socket file left by a killed
    // holder is removed (nothing accepts on it) before trying again.
    if (onDisk) rmSync(address, { force: true });
  }
  // The lock itself must not keep the process alive.
  server.unref();
  const pidFile = join(realRoot, LOCK_PID_FILE);
  writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o644 });
  let released: Promise<void> | undefined;
  return {
    release() {
      released ??= (async () => {
        try {
          if (readFileSync(pidFile, 'utf8').trim() === String(process.pid)) unlinkSync(pidFile);
        } catch { /* already gone */ }
        await new Promise<void>((r) => server.close(() => r()));
      })();
      return released;
    },
  };
}
