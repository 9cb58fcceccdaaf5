/** Library entry point of kcp-ts. */
export { startServer, type ServerOptions, type RunningServer } from './server/shard.js';
export { StatusError } from './apimachinery/errors.js';
export { RootDirectoryInUseError } from './server/rootlock.js';
