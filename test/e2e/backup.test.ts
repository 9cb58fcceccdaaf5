/**
 * `kcp-ts backup` and `kcp-ts restore` as a user runs them, on a shard with its embedded Redis:
 * a backup while clients write, a restore into a new root directory that serves exactly the
 * backup's objects with the old PKI (the old admin credentials work), clients' old
 * resourceVersions answering 410 Expired, and the refusals (corrupt file, occupied target, a
 * running server).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { adminCreds, call, CM, KCP_TS_BIN, ROOT_CA_CONFIGMAP, settleAll, watch } from '../helpers.js';
import { startServer, type RunningServer } from '../../src/server/shard.js';

const execFileP = promisify(execFile);
const running: RunningServer[] = [];
after(async () => { for (const s of running) await s.stop().catch(() => undefined); });

/** Runs the kcp-ts binary; never throws, returns its exit code and output. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [KCP_TS_BIN, ...args], { timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const CMS = '/clusters/root/api/v1/namespaces/default/configmaps';

test('backup under writes, restore into a new root directory: the backup\'s objects, the old PKI, 410 for old resourceVersions', async () => {
  const rootA = mkdtempSync(join(tmpdir(), 'kcp-bk-a-'));
  const rootB = mkdtempSync(join(tmpdir(), 'kcp-bk-b-'));
  const file = join(mkdtempSync(join(tmpdir(), 'kcp-bk-files-')), 'root.kcpbackup');
  const a = await startServer({ rootDirectory: rootA, securePort: 0 });
  running.push(a);
  const creds = adminCreds(rootA);
  for (let b = 0; b < 20; b++) {
    await settleAll(Array.from({ length: 10 }, (_, i) => call(a, creds, 'POST', CMS, CM(`seed-${b * 10 + i}`, { v: '0' })).then((r) => assert.equal(r.status, 201))));
  }
  const list0 = await call(a, creds, 'GET', CMS);
  const rv0 = list0.json.metadata.resourceVersion as string;
  // A client watching since the list: it sees every change, from which the state at any revision follows.
  const w = watch(a, creds, `${CMS}?watch=1&resourceVersion=${rv0}`);
  let stop = false;
  let maxSeen = Number(rv0);
  const writer = async (n: number) => {
    for (let i = 0; !stop; i++) {
      const r = i % 3 === 0
        ? await call(a, creds, 'POST', CMS, CM(`w${n}-${i}`, { v: String(i) }))
        : i % 3 === 1
          ? await call(a, creds, 'PUT', `${CMS}/seed-${(i * 7 + n) % 200}`, CM(`seed-${(i * 7 + n) % 200}`, { v: `${n}-${i}` }))
          : await call(a, creds, 'DELETE', `${CMS}/w${n}-${i - 2}`);
      const rv = Number(r.json?.metadata?.resourceVersion ?? 0);
      if (r.status < 300 && rv > maxSeen) maxSeen = rv;
    }
  };
  const writers = [0, 1, 2, 3].map(writer);
  await new Promise((r) => setTimeout(r, 300));
  const backup = await cli(['backup', '--root-directory', rootA, '-o', file]);
  assert.equal(backup.code, 0, backup.stderr);
  const m = /at revision (\d+): (\d+) objects, (\d+) PKI files/.exec(backup.stdout);
  assert.ok(m, backup.stdout);
  const revision = Number(m[1]);
  assert.ok(Number(m[3]) >= 13, `PKI files: ${m[3]}`);
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  await Promise.all(writers);
  assert.ok(maxSeen > revision, 'clients hold revisions newer than the backup');
  const verify = await cli(['restore', '--verify', file]);
  assert.equal(verify.code, 0, verify.stderr);
  assert.match(verify.stdout, /backup of shard "root" .* from embedded, format 1, revision \d+, .*checksums good/);

  // The expected configmaps at the backup's revision: the list, then the watched events up to it.
  await w.waitFor(1);
  const expected = new Map<string, string>(list0.json.items.map((i: any) => [i.metadata.name, JSON.stringify(i.data ?? {})]));
  const deadline = Date.now() + 10_000;
  while (!w.events.some((e) => Number(e.object.metadata.resourceVersion) >= maxSeen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  for (const e of w.events) {
    if (Number(e.object.metadata.resourceVersion) > revision) continue;
    if (e.type === 'DELETED') expected.delete(e.object.metadata.name); else expected.set(e.object.metadata.name, JSON.stringify(e.object.data ?? {}));
  }
  w.close();
  await a.stop();

  // Restore into a fresh root directory, start a server there.
  const restore = await cli(['restore', file, '--root-directory', rootB]);
  assert.equal(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, /restored shard "root" .* the revision counter continues at \d+/);
  assert.equal(readFileSync(join(rootB, 'ca.crt'), 'utf8'), readFileSync(join(rootA, 'ca.crt'), 'utf8'));
  assert.equal(readFileSync(join(rootB, 'sa.key'), 'utf8'), readFileSync(join(rootA, 'sa.key'), 'utf8'));
  const b = await startServer({ rootDirectory: rootB, securePort: 0 });
  running.push(b);
  // The old admin credentials work against the restored shard.
  const list = await call(b, creds, 'GET', CMS);
  assert.equal(list.status, 200, list.body);
  const got = new Map<string, string>(list.json.items.filter((i: any) => i.metadata.name !== ROOT_CA_CONFIGMAP).map((i: any) => [i.metadata.name, JSON.stringify(i.data ?? {})]));
  expected.delete(ROOT_CA_CONFIGMAP);
  assert.deepEqual(got, expected);
  assert.ok(Number(list.json.metadata.resourceVersion) > maxSeen, `list revision ${list.json.metadata.resourceVersion} above every revision clients held (${maxSeen})`);

  // Old resourceVersions: watches and exact lists answer 410 Expired, so clients relist.
  for (const from of [rv0, String(revision), String(maxSeen)]) {
    const old = watch(b, creds, `${CMS}?watch=1&resourceVersion=${from}`);
    const status = await old.status;
    const events = await old.waitFor(1, 2000);
    old.close();
    assert.ok(status === 410 || events[0]?.object?.code === 410, `watch from ${from}: ${status} ${JSON.stringify(events[0])}`);
    const exact = await call(b, creds, 'GET', `${CMS}?resourceVersion=${from}&resourceVersionMatch=Exact`);
    assert.equal(exact.status, 410, `exact list at ${from}: ${exact.body}`);
    assert.equal(exact.json.reason, 'Expired');
  }
  // A new write continues above them.
  const created = await call(b, creds, 'POST', CMS, CM('after-restore'));
  assert.equal(created.status, 201);
  assert.ok(Number(created.json.metadata.resourceVersion) > maxSeen);

  // While the server runs, its root directory cannot be restored into.
  const busy = await cli(['restore', file, '--root-directory', rootB, '--force']);
  assert.equal(busy.code, 1);
  assert.match(busy.stderr, /is in use by pid \d+: stop that server before restoring/);
  await b.stop();

  // An occupied target is refused, --force replaces it.
  const occupied = await cli(['restore', file, '--root-directory', rootB]);
  assert.equal(occupied.code, 1);
  assert.match(occupied.stderr, /refusing to restore shard "root": the target Redis is not empty for it .*pass --force/);
  const forced = await cli(['restore', file, '--root-directory', rootB, '--force']);
  assert.equal(forced.code, 0, forced.stderr);

  // A damaged file is refused before anything is written.
  const bytes = readFileSync(file);
  bytes[Math.floor(bytes.length / 2)]! ^= 0x55;
  const bad = `${file}.bad`;
  writeFileSync(bad, bytes);
  const rootC = mkdtempSync(join(tmpdir(), 'kcp-bk-c-'));
  const corrupt = await cli(['restore', bad, '--root-directory', rootC]);
  assert.equal(corrupt.code, 1);
  assert.match(corrupt.stderr, /kcp-ts restore: backup file .*\.bad is corrupt: /);
  const foreign = await cli(['restore', join(rootA, 'ca.crt'), '--root-directory', rootC]);
  assert.equal(foreign.code, 1);
  assert.match(foreign.stderr, /is not a kcp-ts backup file/);
});
