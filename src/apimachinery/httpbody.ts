/**
 * Reading HTTP answers from other servers (webhooks, other shards) with a size cap: a peer's
 * answer is held in memory, so how much of it is read must be bounded whatever the peer sends.
 */

/**
 * Reads a response body as UTF-8 text, at most `limit` bytes. A declared `content-length` past
 * the limit is refused before reading; a body that grows past it is destroyed as soon as it does.
 * @throws {Error} `response body larger than <limit> bytes`, or what reading the body throws.
 */
export async function readLimited(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, limit: number, declaredLength?: string | string[]): Promise<string> {
  const tooLarge = () => new Error(`response body larger than ${limit} bytes`);
  if (declaredLength !== undefined && Number(declaredLength) > limit) { body.destroy(); throw tooLarge(); }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) { body.destroy(); throw tooLarge(); }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString();
}
