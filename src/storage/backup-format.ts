/**
 * The kcp-ts backup file (docs/backup.md, "File format"): portable, versioned and checksummed.
 *
 *     "KCPTS-BACKUP\n"                      13 bytes, uncompressed: tells a foreign file at once
 *     gzip( frame* )                        the frames, compressed (gzip's own CRC32 covers the stream)
 *
 *     frame   = type:u8  length:u32be  payload[length]  crc32(type ‖ payload):u32be
 *
 * Frame types, in the order they appear:
 *
 * | type | name    | payload                                   | count              |
 * |------|---------|-------------------------------------------|--------------------|
 * | 1    | header  | JSON {@link BackupHeader}                 | exactly 1, first   |
 * | 2    | file    | nameLength:u16be name content             | 0..64 (the PKI)    |
 * | 3    | put     | keyLength:u32be key json                  | any                |
 * | 4    | delete  | key                                       | any                |
 * | 5    | trailer | JSON {@link BackupTrailer}                | exactly 1, last    |
 *
 * `put` and `delete` are applied in file order: first the objects the scan read, then the
 * writes made while it ran (see backup.ts), which together give the keyspace at the trailer's
 * `revision`. The trailer carries the SHA-256 of every frame byte before it, and the counts of
 * each frame type: a file cut short, reordered or edited is refused as corrupt, whatever the
 * damage. A reader checks the version and refuses a newer format by name.
 */
import { createHash, type Hash } from 'node:crypto';
import { crc32 } from 'node:zlib';

/** First bytes of every backup file. */
export const BACKUP_MAGIC = Buffer.from('KCPTS-BACKUP\n', 'latin1');
/** Format version this code writes and the highest it reads. */
export const BACKUP_FORMAT_VERSION = 1;
/** Conventional file name extension. */
export const BACKUP_EXTENSION = '.kcpbackup';

/** Frame types (see the module comment). */
export const FrameType = { header: 1, file: 2, put: 3, delete: 4, trailer: 5 } as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

/**
 * Largest frame payload accepted: 64 MiB. An object is at most a few MiB (kube's 3 MiB request
 * body, plus managed fields); anything larger is damage, not data, and must not make a reader
 * allocate gigabytes.
 */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
/** Largest header or trailer (JSON): 64 KiB. */
export const MAX_META_BYTES = 64 * 1024;
/** Largest number of `file` frames (the PKI has 14 files). */
export const MAX_FILES = 64;
/** File names a backup may carry: plain names in one directory, no paths. */
export const FILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Shape of an object key (keys.ts: `<group>/<resource>/<cluster>/[<namespace>/]<name>`): a put or
 * delete with any other key is refused, so a file cannot plant keys the watch cache misreads.
 */
export const OBJECT_KEY_PATTERN = /^[^/]+\/[^/]+\/[^/]+\/(?:[^/]+\/)?[^/]+$/;

/** What a backup says about itself, written first. */
export interface BackupHeader {
  /** Always `kcp-ts.io/shard-backup`. */
  kind: typeof BACKUP_KIND;
  /** Format version ({@link BACKUP_FORMAT_VERSION}). */
  format: number;
  /** Shard name: the Redis hash tag of its keys. */
  shard: string;
  /** When the backup started, RFC 3339 (the clock of the machine that took it). */
  createdAt: string;
  /** Where the keyspace came from: `embedded`, `redis` or `redis-cluster`. */
  source: 'embedded' | 'redis' | 'redis-cluster';
  /** The kcp-ts version that wrote it. */
  writer: string;
}

/** Value of {@link BackupHeader.kind}. */
export const BACKUP_KIND = 'kcp-ts.io/shard-backup';

/** What a backup says at its end, once everything is written. */
export interface BackupTrailer {
  /** The revision the restored keyspace is exactly at: every write up to it, none after. */
  revision: number;
  /** The revision read before the scan began (writes after it are replayed from the stream). */
  scanRevision: number;
  /** When the backup finished, RFC 3339. */
  finishedAt: string;
  /** Number of frames of each kind. */
  files: number;
  puts: number;
  deletes: number;
  /** Number of objects the keyspace holds at `revision` (puts and deletes applied). */
  objects: number;
  /** SHA-256 (hex) of every frame byte before the trailer frame. */
  sha256: string;
}

/** A backup file that is not one, is damaged, or is of a newer format. */
export class BackupFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFileError';
  }
}

/** Encodes one frame. */
export function encodeFrame(type: FrameTypeCode, payload: Buffer): Buffer {
  if (payload.length > MAX_FRAME_BYTES) throw new Error(`a backup frame of ${payload.length} bytes exceeds the limit of ${MAX_FRAME_BYTES}`);
  const out = Buffer.allocUnsafe(1 + 4 + payload.length + 4);
  out[0] = type;
  out.writeUInt32BE(payload.length, 1);
  payload.copy(out, 5);
  out.writeUInt32BE(crc32(payload, crc32(out.subarray(0, 1))), 5 + payload.length);
  return out;
}

/** `put` payload: key length, key, JSON. */
export function putPayload(key: string, json: string): Buffer {
  const k = Buffer.from(key, 'utf8');
  const j = Buffer.from(json, 'utf8');
  const out = Buffer.allocUnsafe(4 + k.length + j.length);
  out.writeUInt32BE(k.length, 0);
  k.copy(out, 4);
  j.copy(out, 4 + k.length);
  return out;
}

/** `file` payload: name length, name, content. @throws Error for a name outside {@link FILE_NAME_PATTERN} */
export function filePayload(name: string, content: Buffer): Buffer {
  if (!FILE_NAME_PATTERN.test(name)) throw new Error(`file name ${JSON.stringify(name)} cannot be stored in a backup`);
  const n = Buffer.from(name, 'utf8');
  const out = Buffer.allocUnsafe(2 + n.length + content.length);
  out.writeUInt16BE(n.length, 0);
  n.copy(out, 2);
  content.copy(out, 2 + n.length);
  return out;
}

/** A decoded frame. */
export type Frame =
  | { type: typeof FrameType.header; header: BackupHeader }
  | { type: typeof FrameType.file; name: string; content: Buffer }
  | { type: typeof FrameType.put; key: string; json: string }
  | { type: typeof FrameType.delete; key: string }
  | { type: typeof FrameType.trailer; trailer: BackupTrailer };

/**
 * Reads the frames of a decompressed backup stream, checking as it goes: each frame's CRC32 and
 * bounds, the header first and of a known format, nothing after the trailer, and at the trailer
 * the SHA-256 and counts. A consumer that applies frames as they come must be ready to undo on
 * a throw; `restore` therefore reads a file twice, verifying it whole before writing anything.
 *
 * @param chunks the decompressed bytes (after {@link BACKUP_MAGIC})
 * @param what the file's name, for messages
 * @throws BackupFileError naming what is wrong
 */
export async function* readFrames(chunks: AsyncIterable<Buffer>, what: string): AsyncGenerator<Frame> {
  const corrupt = (why: string) => new BackupFileError(`${what} is corrupt: ${why}`);
  const hash: Hash = createHash('sha256');
  let buf: Buffer = Buffer.alloc(0);
  let offset = 0;
  let index = 0;
  let sawTrailer = false;
  const counts = { files: 0, puts: 0, deletes: 0 };
  let header: BackupHeader | undefined;
  const iterator = chunks[Symbol.asyncIterator]();
  let ended = false;
  /** Makes `n` bytes available at `offset`; false at a clean end of input. */
  const need = async (n: number): Promise<boolean> => {
    while (buf.length - offset < n) {
      if (ended) return false;
      let r: IteratorResult<Buffer>;
      try { r = await iterator.next(); } catch (err) { throw corrupt(`cannot decompress (${(err as Error).message})`); }
      if (r.done) { ended = true; continue; }
      buf = offset < buf.length ? Buffer.concat([buf.subarray(offset), r.value]) : r.value;
      offset = 0;
    }
    return true;
  };
  for (;;) {
    if (!(await need(1))) break;
    if (sawTrailer) throw corrupt('data after the trailer');
    if (!(await need(5))) throw corrupt(`cut short in frame ${index}`);
    const type = buf[offset]!;
    const length = buf.readUInt32BE(offset + 1);
    const limit = type === FrameType.header || type === FrameType.trailer ? MAX_META_BYTES : MAX_FRAME_BYTES;
    if (type < FrameType.header || type > FrameType.trailer) throw corrupt(`frame ${index} has unknown type ${type}`);
    if (length > limit) throw corrupt(`frame ${index} claims ${length} bytes (limit ${limit})`);
    if (!(await need(5 + length + 4))) throw corrupt(`cut short in frame ${index}`);
    const typeByte = buf.subarray(offset, offset + 1);
    const payload = buf.subarray(offset + 5, offset + 5 + length);
    const stored = buf.readUInt32BE(offset + 5 + length);
    if (crc32(payload, crc32(typeByte)) !== stored) throw corrupt(`checksum mismatch in frame ${index}`);
    const whole = buf.subarray(offset, offset + 5 + length + 4);
    offset += whole.length;
    if (index === 0 && type !== FrameType.header) throw corrupt('it does not begin with a header');
    if (index > 0 && type === FrameType.header) throw corrupt(`a second header at frame ${index}`);
    index++;
    switch (type) {
      case FrameType.header: {
        hash.update(whole);
        header = parseMeta<BackupHeader>(payload, corrupt, 'header');
        if (header.kind !== BACKUP_KIND) throw new BackupFileError(`${what} is not a kcp-ts shard backup (kind ${JSON.stringify(header.kind)})`);
        if (!Number.isInteger(header.format) || header.format > BACKUP_FORMAT_VERSION) {
          throw new BackupFileError(`${what} is of backup format ${String(header.format)}; this kcp-ts reads format ${BACKUP_FORMAT_VERSION} and older: use a newer kcp-ts`);
        }
        if (typeof header.shard !== 'string' || !header.shard) throw corrupt('the header names no shard');
        yield { type, header };
        break;
      }
      case FrameType.file: {
        hash.update(whole);
        if (payload.length < 2) throw corrupt(`file frame ${index - 1} too short`);
        const nameLength = payload.readUInt16BE(0);
        if (2 + nameLength > payload.length) throw corrupt(`file frame ${index - 1} too short`);
        const name = payload.subarray(2, 2 + nameLength).toString('utf8');
        if (!FILE_NAME_PATTERN.test(name)) throw corrupt(`file frame ${index - 1} has a forbidden name ${JSON.stringify(name)}`);
        if (++counts.files > MAX_FILES) throw corrupt(`more than ${MAX_FILES} files`);
        yield { type, name, content: Buffer.from(payload.subarray(2 + nameLength)) };
        break;
      }
      case FrameType.put: {
        hash.update(whole);
        if (payload.length < 4) throw corrupt(`put frame ${index - 1} too short`);
        const keyLength = payload.readUInt32BE(0);
        if (keyLength === 0 || 4 + keyLength > payload.length) throw corrupt(`put frame ${index - 1} has a bad key length`);
        const key = payload.subarray(4, 4 + keyLength).toString('utf8');
        if (!OBJECT_KEY_PATTERN.test(key)) throw corrupt(`put frame ${index - 1} has a malformed object key`);
        counts.puts++;
        yield { type, key, json: payload.subarray(4 + keyLength).toString('utf8') };
        break;
      }
      case FrameType.delete: {
        hash.update(whole);
        const key = payload.toString('utf8');
        if (!OBJECT_KEY_PATTERN.test(key)) throw corrupt(`delete frame ${index - 1} has a malformed object key`);
        counts.deletes++;
        yield { type, key };
        break;
      }
      case FrameType.trailer: {
        const trailer = parseMeta<BackupTrailer>(payload, corrupt, 'trailer');
        const digest = hash.digest('hex');
        if (trailer.sha256 !== digest) throw corrupt('SHA-256 of its content does not match the trailer');
        for (const k of ['files', 'puts', 'deletes'] as const) {
          if (trailer[k] !== counts[k]) throw corrupt(`the trailer counts ${String(trailer[k])} ${k}, the file holds ${counts[k]}`);
        }
        if (!Number.isSafeInteger(trailer.revision) || trailer.revision < 0) throw corrupt('the trailer has no valid revision');
        sawTrailer = true;
        yield { type, trailer };
        break;
      }
    }
    // Drop consumed bytes now and then, so the buffer does not grow with the file.
    if (offset > 1 << 20) { buf = buf.subarray(offset); offset = 0; }
  }
  if (!header) throw corrupt('it is empty');
  if (!sawTrailer) throw corrupt('it ends without a trailer (cut short)');
}

function parseMeta<T>(payload: Buffer, corrupt: (why: string) => Error, what: string): T {
  try {
    const v = JSON.parse(payload.toString('utf8')) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v as T;
  } catch (err) { throw corrupt(`its ${what} is not valid JSON (${(err as Error).message})`); }
}
