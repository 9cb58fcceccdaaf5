/**
 * Crash consistency of one shard run as a user runs it (`kcp-ts start`, embedded redis-server with
 * AOF `appendfsync always`): concurrent writers create, update and delete ConfigMaps with
 * resourceVersion preconditions while the node process, then the storage redis-server, is killed
 * with SIGKILL at seeded random moments. After every restart each writer's acknowledged state is
 * checked object by object, and a watch that resumes from its last seen resourceVersion must see
 * every write exactly once and in order, or get 410 Expired — never a gap.
 *
 * The rules checked are etcd's and kube-apiserver's guarantees, which the storage design promises
 * to keep (docs/architecture.md, "Storage (Redis)"): an acknowledged write is durable; a write is atomic; a
 * watch from resourceVersion n delivers every event after n in resourceVersion order.
 *
 * Used by test/e2e/crash-consistency.test.ts (a short run) and `npm run crash` (a long one).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request, Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminCreds, freePort, prng, sleep, spawnCli, stopCli, type CliProcess, type Creds } from '../helpers.js';

/** Parameters of one run. */
export interface CrashRunOptions {
  /** Seed of the PRNG that picks operations and kill moments; the same seed gives the same schedule. */
  seed: number;
  /** Concurrent writers (each owns its own objects so its model is exact). */
  writers: number;
  /** Objects per writer. */
  objectsPerWriter: number;
  /** Kills in the run; they alternate node process / storage redis-server, node first. */
  kills: number;
  /** Writing time before each kill is uniform in this range, in milliseconds. */
  killAfterMs: [number, number];
  /** Progress lines (none when absent). */
  log?: (line: string) => void;
}

/** What a run found. `lost`, `halfApplied`, `watchGaps`, `watchDuplicates` and `watchOutOfOrder` must all be 0. */
export interface CrashReport {
  seed: number;
  writers: number;
  /** Writes answered 2xx. */
  acknowledged: number;
  /** Writes whose answer never came (connection cut, 503 during a kill); resolved by reading afterwards. */
  uncertain: number;
  /** Of the uncertain, how many turned out applied. */
  uncertainApplied: number;
  nodeKills: number;
  redisKills: number;
  /** Consistency checks made (one per restart plus the final one), objects compared in total. */
  checks: number;
  objectsChecked: number;
  /** Acknowledged writes missing or with another resourceVersion or content after a restart. */
  lost: string[];
  /** Objects whose state is neither the acknowledged one nor what an uncertain write would have made, or list and get disagreeing. */
  halfApplied: string[];
  /** Watch events received, watches resumed (200) from the last seen resourceVersion after a cut, and resumptions answered 410 Expired. */
  watchEvents: number;
  watchResumes: number;
  watchExpired: number;
  /** Acknowledged writes inside a resourceVersion range the watch covered whose event never came. */
  watchGaps: string[];
  /** Events received twice, or not in increasing resourceVersion order. */
  watchDuplicates: string[];
  watchOutOfOrder: string[];
  durationMs: number;
}


const NS = '/clusters/root/api/v1/namespaces/default/configmaps';
const REQUEST_TIMEOUT_MS = 15_000;

interface Answer { status: number; json: any; body: string }
/** An answer, `refused` when the request provably never reached a server, `cut` when it may have. */
type Outcome = Answer | 'refused' | 'cut';

function send(url: string, creds: Creds, method: string, path: string, body?: unknown): Promise<Outcome> {
  const u = new URL(url + path);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve) => {
    const req = request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method, ca: creds.ca, cert: creds.cert, key: creds.key, agent: false,
      timeout: REQUEST_TIMEOUT_MS,
      headers: data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', () => resolve('cut'));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, json, body: text });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED' ? 'refused' : 'cut'));
    if (data) req.write(data);
    req.end();
  });
}

/** The state a writer knows an object to be in: absent, or present at a resourceVersion with a content stamp. */
interface Known { rv: string; stamp: string }
type State = Known | null;

function sameState(a: State, b: State): boolean {
  return a === null ? b === null : b !== null && a.rv === b.rv && a.stamp === b.stamp;
}

/**
 * One applied write: what the watch must show. A create or update is known by its resourceVersion;
 * a delete is answered with a Status (as kube does for ConfigMaps), so only the resourceVersion it
 * replaced (`prevRv`) is known: its event lies after that and before the object's next write.
 */
type Write = ({ name: string; type: 'ADDED' | 'MODIFIED'; rv: bigint } | { name: string; type: 'DELETED'; prevRv: bigint }) & { unanswered?: boolean };

/**
 * Runs the crash schedule against a fresh root directory and returns the report; it does not
 * throw on a violation (the caller asserts on the report). Throws when the shard cannot be
 * started or does not come back after a kill.
 */
export async function runCrashConsistency(opts: CrashRunOptions): Promise<CrashReport> {
  const t0 = Date.now();
  const log = opts.log ?? (() => undefined);
  const rand = prng(opts.seed);
  const root = mkdtempSync(join(tmpdir(), 'kcp-crash-'));
  const port = await freePort();
  const report: CrashReport = {
    seed: opts.seed, writers: opts.writers, acknowledged: 0, uncertain: 0, uncertainApplied: 0, nodeKills: 0, redisKills: 0,
    checks: 0, objectsChecked: 0, lost: [], halfApplied: [], watchEvents: 0, watchResumes: 0, watchExpired: 0,
    watchGaps: [], watchDuplicates: [], watchOutOfOrder: [], durationMs: 0,
  };

  let cli: CliProcess = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
  let url = await cli.ready;
  const creds = adminCreds(root);

  // --- the writers' model ---------------------------------------------------------------------
  const known = new Map<string, State>();
  /** Every applied write with its resourceVersion (acknowledged, or uncertain and found applied). */
  const history: Write[] = [];
  let paused = false;
  let stopping = false;
  let idle = 0;

  /** Reads an object until the server answers; the authoritative state after an uncertain write. */
  const readState = async (name: string): Promise<State> => {
    for (;;) {
      const r = await send(url, creds, 'GET', `${NS}/${name}`);
      if (typeof r !== 'string') {
        if (r.status === 404) return null;
        if (r.status === 200) return { rv: r.json.metadata.resourceVersion, stamp: r.json.data.stamp };
      }
      await sleep(100);
    }
  };

  const writer = async (w: number) => {
    const names = Array.from({ length: opts.objectsPerWriter }, (_, j) => `w${w}-o${j}`);
    for (const n of names) known.set(n, null);
    for (let seq = 0; !stopping; seq++) {
      if (paused) { idle++; while (paused && !stopping) await sleep(20); idle--; continue; }
      const name = names[Math.floor(rand() * names.length)]!;
      const before = known.get(name)!;
      const stamp = `${w}.${seq}`;
      let method: string; let path: string; let body: unknown; let type: Write['type'];
      if (before === null) {
        method = 'POST'; path = NS; type = 'ADDED';
        body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { stamp } };
      } else if (rand() < 0.7) {
        method = 'PUT'; path = `${NS}/${name}`; type = 'MODIFIED';
        body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: before.rv }, data: { stamp } };
      } else {
        method = 'DELETE'; path = `${NS}/${name}`; type = 'DELETED';
        body = { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: before.rv } };
      }
      const r = await send(url, creds, method, path, body);
      if (r === 'refused') { await sleep(50); continue; }
      if (typeof r !== 'string' && r.status >= 200 && r.status < 300) {
        report.acknowledged++;
        if (type === 'DELETED') {
          known.set(name, null);
          history.push({ name, type, prevRv: BigInt(before!.rv) });
        } else {
          const rv: string = r.json.metadata.resourceVersion;
          known.set(name, { rv, stamp });
          history.push({ name, type, rv: BigInt(rv) });
        }
        continue;
      }
      if (typeof r !== 'string' && (r.status === 409 || r.status === 404)) {
        // A precondition failed although this writer alone writes the object: the server holds a
        // state the writer never saw acknowledged.
        const now = await readState(name);
        report.halfApplied.push(`${method} ${name}: ${r.status} ${r.json?.message ?? r.body}; known ${JSON.stringify(before)}, stored ${JSON.stringify(now)}`);
        known.set(name, now);
        continue;
      }
      // No answer, or 503/5xx: the write may or may not have been applied. Read until the server
      // answers, then the object must be exactly the state before or the state this write makes.
      report.uncertain++;
      const now = await readState(name);
      if (sameState(now, before)) { known.set(name, now); continue; }
      const applied = type === 'DELETED' ? now === null : now !== null && now.stamp === stamp;
      if (!applied) report.halfApplied.push(`${method} ${name} unanswered: stored ${JSON.stringify(now)}, neither ${JSON.stringify(before)} nor stamp ${stamp}`);
      else {
        report.uncertainApplied++;
        if (type === 'DELETED') history.push({ name, type, prevRv: BigInt(before!.rv), unanswered: true });
        else history.push({ name, type, rv: BigInt(now!.rv), unanswered: true });
      }
      known.set(name, now);
    }
  };

  // --- the watcher ----------------------------------------------------------------------------
  /** Stretches of resourceVersions (from, to] the watch saw continuously. */
  const covered: Array<{ from: bigint; to: bigint }> = [];
  const seen = new Map<string, number>();
  const deletions = new Map<string, bigint[]>();
  let lastRv = 0n;
  /** Whether the current stretch's first watch was accepted (later ones are resumptions). */
  let stretchStarted = false;
  let watchReq: ReturnType<typeof request> | undefined;
  let watchDone: Promise<void> = Promise.resolve();

  const relist = async (): Promise<bigint> => {
    for (;;) {
      const r = await send(url, creds, 'GET', NS);
      if (typeof r !== 'string' && r.status === 200) return BigInt(r.json.metadata.resourceVersion);
      await sleep(100);
    }
  };

  const watchOnce = (from: bigint): Promise<'cut' | 'expired'> => new Promise((resolve) => {
    const u = new URL(`${url}${NS}?watch=1&resourceVersion=${from}`);
    let buf = '';
    let settled = false;
    const done = (how: 'cut' | 'expired') => { if (!settled) { settled = true; resolve(how); } };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, ca: creds.ca, cert: creds.cert, key: creds.key, agent: new Agent({ keepAlive: false }) }, (res) => {
      if (res.statusCode === 410) { report.watchExpired++; res.resume(); return done('expired'); }
      if (res.statusCode !== 200) { res.resume(); res.on('end', () => done('cut')); return; }
      if (stretchStarted) report.watchResumes++;
      stretchStarted = true;
      res.on('data', (c) => {
        buf += c.toString();
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i); buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          const ev = JSON.parse(line);
          if (ev.type === 'ERROR') { if (ev.object?.code === 410) { report.watchExpired++; req.destroy(); return done('expired'); } continue; }
          if (ev.type === 'BOOKMARK') continue;
          const name: string = ev.object.metadata.name;
          if (!/^w\d+-o\d+$/.test(name)) continue;
          const rv = BigInt(ev.object.metadata.resourceVersion);
          report.watchEvents++;
          const key = `${ev.type} ${name}@${rv}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
          if (seen.get(key)! > 1) report.watchDuplicates.push(key);
          if (ev.type === 'DELETED') deletions.set(name, [...(deletions.get(name) ?? []), rv]);
          if (rv <= lastRv) report.watchOutOfOrder.push(`${key} after ${lastRv}`);
          lastRv = rv;
          covered[covered.length - 1]!.to = rv;
        }
      });
      res.on('error', () => done('cut'));
      res.on('end', () => done('cut'));
    });
    req.on('error', () => done('cut'));
    req.end();
    watchReq = req;
  });

  const watcher = async () => {
    lastRv = await relist();
    covered.push({ from: lastRv, to: lastRv });
    while (!stopping) {
      const how = await watchOnce(lastRv);
      if (stopping) break;
      if (how === 'expired') {
        // 410: the stretch since lastRv cannot be replayed; list again and start a new stretch.
        lastRv = await relist();
        covered.push({ from: lastRv, to: lastRv });
        stretchStarted = false;
      } else {
        await sleep(100);
      }
    }
  };

  // --- checks ---------------------------------------------------------------------------------
  const check = async (when: string) => {
    paused = true;
    while (idle < opts.writers) {
      if (writerError) throw writerError;
      await sleep(20);
    }
    report.checks++;
    const list = await send(url, creds, 'GET', NS);
    if (typeof list === 'string' || list.status !== 200) throw new Error(`${when}: list failed: ${typeof list === 'string' ? list : list.body}`);
    const listed = new Map<string, Known>();
    for (const item of list.json.items) if (/^w\d+-o\d+$/.test(item.metadata.name)) listed.set(item.metadata.name, { rv: item.metadata.resourceVersion, stamp: item.data?.stamp });
    for (const [name, state] of known) {
      report.objectsChecked++;
      const got = await readState(name);
      if (!sameState(got, state)) report.lost.push(`${when}: ${name} acknowledged ${JSON.stringify(state)}, stored ${JSON.stringify(got)}`);
      if (!sameState(listed.get(name) ?? null, got)) report.halfApplied.push(`${when}: ${name} get ${JSON.stringify(got)} but list ${JSON.stringify(listed.get(name) ?? null)}`);
    }
    log(`${when}: ${known.size} objects checked, ${report.acknowledged} writes acknowledged so far, lost ${report.lost.length}`);
    paused = false;
  };

  let writerError: unknown;
  const writers = Array.from({ length: opts.writers }, (_, w) => writer(w).catch((e) => { writerError = e; }));
  watchDone = watcher();
  try {
    for (let k = 0; k < opts.kills; k++) {
      const [lo, hi] = opts.killAfterMs;
      await sleep(lo + Math.floor(rand() * (hi - lo)));
      if (k % 2 === 0) {
        cli.proc.kill('SIGKILL');
        await cli.exited;
        report.nodeKills++;
        log(`kill ${k + 1}: node process SIGKILLed after ${report.acknowledged} acknowledged writes`);
        cli = spawnCli(['start', '--root-directory', root, '--secure-port', String(port)]);
        url = await cli.ready;
      } else {
        const pid = Number(readFileSync(join(root, 'redis', 'redis.pid'), 'utf8'));
        process.kill(pid, 'SIGKILL');
        report.redisKills++;
        log(`kill ${k + 1}: storage redis-server (pid ${pid}) SIGKILLed after ${report.acknowledged} acknowledged writes`);
        // The shard's supervisor starts it again; wait until the shard answers reads.
        await readState('w0-o0');
      }
      await check(`after kill ${k + 1}`);
    }
    await sleep(500);
    await check('final');
  } finally {
    stopping = true;
    paused = false;
    await Promise.all(writers);
    watchReq?.destroy();
    await watchDone;
    await stopCli(cli);
    rmSync(root, { recursive: true, force: true });
  }

  // Every applied write inside a covered stretch must have been seen exactly once.
  const end = lastRv;
  history.forEach((wr, i) => {
    if (wr.type !== 'DELETED') {
      if (covered.some((c) => wr.rv > c.from && wr.rv <= c.to) && !seen.has(`${wr.type} ${wr.name}@${wr.rv}`)) {
        const got = [...seen.keys()].filter((k) => k.includes(` ${wr.name}@`)).map((k) => k.split(' ')[0] + k.slice(k.indexOf('@'))).join(', ');
        report.watchGaps.push(`${wr.type} ${wr.name}@${wr.rv}${wr.unanswered ? ' (unanswered, found applied)' : ''}; events of ${wr.name}: ${got}; stretches ${covered.map((c) => `(${c.from},${c.to}]`).join(' ')}`);
      }
      return;
    }
    // The deletion happened in (prevRv, next write of the object); a stretch spanning all of it must show it.
    const next = history.slice(i + 1).find((h) => h.name === wr.name);
    const until = next && next.type !== 'DELETED' ? next.rv : end;
    if (!covered.some((c) => wr.prevRv >= c.from && until <= c.to)) return;
    if (!(deletions.get(wr.name) ?? []).some((rv) => rv > wr.prevRv && rv < (next ? until : end + 1n))) report.watchGaps.push(`DELETED ${wr.name} after ${wr.prevRv}`);
  });
  report.durationMs = Date.now() - t0;
  return report;
}

/** One line per figure, for the test's diagnostics and the long run's output. */
export function formatCrashReport(r: CrashReport): string[] {
  return [
    `seed ${r.seed}, ${r.writers} writers, ${(r.durationMs / 1000).toFixed(1)} s`,
    `kills: ${r.nodeKills} node process, ${r.redisKills} storage redis-server (SIGKILL)`,
    `writes acknowledged ${r.acknowledged}; unanswered ${r.uncertain} (applied ${r.uncertainApplied})`,
    `checks ${r.checks} (${r.objectsChecked} object states compared)`,
    `lost ${r.lost.length}, half-applied ${r.halfApplied.length}`,
    `watch: ${r.watchEvents} events, ${r.watchResumes} resumptions, ${r.watchExpired} × 410; gaps ${r.watchGaps.length}, duplicates ${r.watchDuplicates.length}, out of order ${r.watchOutOfOrder.length}`,
  ];
}
