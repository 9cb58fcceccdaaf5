/**
 * protoref: the Go reference of the protobuf codec tests (test/tools/kube/cmd/protoref, JSON ⇄ Kubernetes
 * protobuf with client-go's scheme), found where test/tools/build.sh caches it (third line of
 * `build.sh --print`) or at $PROTOREF. Missing, it is built once by build.sh; still missing, the test
 * fails saying how to get it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(import.meta.dirname, '..');
const BUILD = join(REPO, 'test', 'tools', 'build.sh');

let cached: string | undefined;

/** Path of the protoref binary. @throws Error naming what is missing and how to get it */
export function protorefPath(): string {
  if (cached) return cached;
  if (process.env.PROTOREF) {
    if (!existsSync(process.env.PROTOREF)) throw new Error(`PROTOREF=${process.env.PROTOREF} does not exist`);
    return (cached = process.env.PROTOREF);
  }
  const dir = execFileSync(BUILD, ['--print'], { encoding: 'utf8' }).trim().split('\n')[2];
  const path = dir ? join(dir, 'protoref') : '';
  if (!path || !existsSync(path)) {
    process.stderr.write('building protoref with test/tools/build.sh (once; cached outside the repository)\n');
    try { execFileSync(BUILD, [], { stdio: ['ignore', 'ignore', 'inherit'] }); } catch { /* reported below */ }
  }
  if (!path || !existsSync(path)) {
    throw new Error(`protoref missing (${path || 'no cache directory from test/tools/build.sh --print'}): build it with test/tools/build.sh (needs Go) or point PROTOREF at a binary`);
  }
  return (cached = path);
}

/** Runs `protoref <args…>` with `input` on stdin; returns stdout. @throws Error with protoref's stderr */
export function protoref(args: readonly string[], input: Buffer | string): Buffer {
  try {
    return execFileSync(protorefPath(), args, { input, maxBuffer: 256 * 1024 * 1024, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`protoref ${args.join(' ')}: ${e.stderr?.toString().trim() || e.message}`);
  }
}

/** Go's Kubernetes protobuf encoding of a JSON object (no defaulting, no conversion). */
export const goEncode = (obj: unknown): Buffer => protoref(['encode'], JSON.stringify(obj));
/** Go's JSON for a Kubernetes protobuf body, parsed. */
export const goDecode = (pb: Buffer): Record<string, unknown> => JSON.parse(protoref(['decode'], pb).toString('utf8')) as Record<string, unknown>;
/** One protobuf watch frame as kube-apiserver writes it (length prefix included). */
export const goWatchFrame = (type: string, obj: unknown): Buffer => protoref(['watch', type], JSON.stringify(obj));
