/**
 * `kcp-ts start --shards 3` is ready only when it is whole: the front-proxy's /readyz answers 200
 * only once all three shards are registered and known everywhere (check `shards-registered`),
 * the start line is printed only then, and a script that creates workspaces the moment /readyz
 * says ok finds every shard — the Shard objects, and workspaces scheduled onto each of them.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, call, sleep, spawnCli, stopCli, type CliProcess, type Creds } from '../helpers.js';

const SHARDS = 3;
const WORKSPACES = 30;

/** A port p with p…p+n−1 all free on 127.0.0.1 (the instance's proxy and its shards). */
async function freeRange(n: number): Promise<number> {
  const free = (port: number) => new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await free(base + i);
    if (ok) return base;
  }
  throw new Error(`no ${n} consecutive free ports`);
}

const root = mkdtempSync(join(tmpdir(), 'kcp-shards-ready-'));
let cli: CliProcess | undefined;
after(async () => {
  if (cli) await stopCli(cli);
  rmSync(root, { recursive: true, force: true });
});

test(`--shards ${SHARDS}: /readyz is 200 only with every shard registered, and then workspaces go to all of them`, { timeout: 240_000 }, async () => {
  const port = await freeRange(SHARDS + 1);
  const url = `https://127.0.0.1:${port}`;
  cli = spawnCli(['start', '--shards', String(SHARDS), '--root-directory', root, '--secure-port', String(port)]);
  let creds: Creds | undefined;
  const notReadyBodies = new Set<string>();
  // Poll as a script would, from the moment the process starts.
  const deadline = Date.now() + 180_000;
  for (;;) {
    assert.ok(Date.now() < deadline, `not ready within 180 s: ${cli.output()}`);
    assert.equal(cli.proc.exitCode, null, `kcp-ts exited: ${cli.output()}`);
    const printed = /ready in \d+ ms at https:/.test(cli.output());
    // The PKI is written as the root shard starts (files one after the other).
    if (!creds && existsSync(join(root, 'admin.key'))) { try { creds = adminCreds(root); } catch { /* not all written yet */ } }
    const r = creds ? await call({ url }, { ca: creds.ca }, 'GET', '/readyz').catch(() => undefined) : undefined;
    if (r?.status === 200) break;
    assert.ok(!printed, 'the start line comes only once /readyz is 200');
    if (r) {
      assert.equal(r.status, 500, r.body);
      notReadyBodies.add(r.body);
    }
    await sleep(10);
  }
  // At once, as a script does: every shard is there.
  const shards = await call({ url }, creds!, 'GET', '/clusters/root/apis/core.kcp.io/v1alpha1/shards');
  assert.equal(shards.status, 200, shards.body);
  assert.deepEqual(shards.json.items.map((s: { metadata: { name: string } }) => s.metadata.name).sort(), ['root', 'shard-1', 'shard-2']);
  const created = await Promise.all(Array.from({ length: WORKSPACES }, (_, i) => call({ url }, creds!, 'POST', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces',
    { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: `ws-${i}` }, spec: {} })));
  for (const c of created) assert.equal(c.status, 201, c.body);
  const placed = new Map<string, string>();
  const until = Date.now() + 120_000;
  while (placed.size < WORKSPACES) {
    assert.ok(Date.now() < until, `only ${placed.size} of ${WORKSPACES} workspaces scheduled`);
    const list = await call({ url }, creds!, 'GET', '/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces');
    for (const w of list.json.items as { metadata: { name: string; annotations?: Record<string, string> } }[]) {
      const shard = w.metadata.annotations?.['core.kcp.io/shard'];
      if (shard) placed.set(w.metadata.name, shard);
    }
    await sleep(200);
  }
  // Random placement over 3 shards: all 30 missing one of them has probability 3·(2/3)^30 < 2e-5.
  assert.deepEqual([...new Set(placed.values())].sort(), ['root', 'shard-1', 'shard-2'], 'workspaces created at readiness go to every shard');
  assert.match(cli.output(), /kcp-ts instance \(3 shards, front-proxy\) ready in \d+ ms/);
  // While it was not ready, /readyz named the check (kube's format, reason withheld).
  for (const body of notReadyBodies) assert.match(body, /\[-\](shard-index|shards-registered) failed: reason withheld\nreadyz check failed\n$/);
  const verbose = await call({ url }, { ca: creds!.ca }, 'GET', '/readyz?verbose');
  assert.equal(verbose.body, '[+]ping ok\n[+]shard-index ok\n[+]shards-registered ok\nreadyz check passed\n');
});
