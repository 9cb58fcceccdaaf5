/** Revoked client certificates: the file format and its reload on change. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalizeSerial, parseRevokedSerials, RevokedCertificates } from '../../src/auth/revocation.js';
import { eventually } from '../helpers.js';

describe('revoked client certificates', () => {
  it('reads serial numbers in any case, with leading zeros, colons and trailing words', () => {
    assert.equal(normalizeSerial('00A1b'), 'a1b');
    assert.equal(normalizeSerial('0'), '0');
    const s = parseRevokedSerials('# revoked\n0A:1B 2027-01-01T00:00:00.000Z ns/rw/alice\n\nnot-hex\nff\n');
    assert.deepEqual([...s].sort(), ['a1b', 'ff']);
  });

  it('follows the file: a missing file revokes nothing, a new line takes effect without a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-revoked-'));
    const file = join(dir, 'serials');
    const notes: string[] = [];
    const revoked = new RevokedCertificates(file, (m) => notes.push(m));
    try {
      assert.equal(revoked.has('ff'), false);
      assert.match(notes[0]!, /none revoked/);
      writeFileSync(file, 'FF\n');
      await eventually('revocation read', async () => revoked.has('00ff'), 5000);
      writeFileSync(file, '');
      await eventually('revocation lifted', async () => !revoked.has('ff'), 5000);
    } finally {
      revoked.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
