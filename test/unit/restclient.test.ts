/**
 * The shard-to-shard client (src/client/rest.ts, undici) and its informer against a real HTTPS
 * server: answers past the client's size limit are refused, a list page past it is listed again
 * in smaller pages, a watch event past it ends the watch, which resumes.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { ResponseTooLargeError, RestClient } from '../../src/client/rest.js';
import { RemoteInformer } from '../../src/client/informer.js';
import { eventually } from '../helpers.js';

let server: Server;
let url = '';
let ca = '';
const limits: number[] = [];
let watches = 0;
const LIMIT = 16 * 1024;
const item = (i: number) => ({ metadata: { name: `o${i}`, resourceVersion: '5' }, data: 'x'.repeat(2000) });

before(async () => {
  const authority = await createCA('restclient-test-ca');
  const serving = await issueServingCert(authority, { commonName: 'shard', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  ca = authority.certPem;
  server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    const u = new URL(req.url ?? '/', 'https://x');
    if (u.pathname === '/big') { res.end('y'.repeat(LIMIT + 1)); return; }
    if (u.searchParams.get('watch') === 'true') {
      watches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      // The first watch sends one event, then one past the limit; later ones stay open.
      if (watches === 1) {
        res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'w1', resourceVersion: '6' } } })}\n`);
        res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'w2', resourceVersion: '7' }, data: 'z'.repeat(LIMIT) } }));
      }
      return;
    }
    // 12 objects of ~2 KiB, in pages of `limit`: a page of more than 7 passes the 16 KiB limit.
    const limit = Number(u.searchParams.get('limit'));
    limits.push(limit);
    const from = Number(u.searchParams.get('continue') || 0);
    const items = Array.from({ length: 12 }, (_, i) => item(i)).slice(from, from + limit);
    const next = from + limit < 12 ? String(from + limit) : '';
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ metadata: { resourceVersion: '5', continue: next }, items }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  url = `https://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
after(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });

test('an answer past the limit is refused; smaller ones are answers', async () => {
  const c = new RestClient({ url, ca }, 4, LIMIT);
  try {
    await assert.rejects(c.request('GET', '/big'), ResponseTooLargeError);
    const ok = await c.request('GET', '/list?limit=2');
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json.items.map((o: any) => o.metadata.name), ['o0', 'o1']);
  } finally { c.close(); }
});

test('the informer lists again in smaller pages, and a watch event past the limit ends the watch', async () => {
  const c = new RestClient({ url, ca }, 4, LIMIT);
  let names: string[] = [];
  const states: string[] = [];
  limits.length = 0;
  const inf = new RemoteInformer(c, { path: '/list', pageSize: 100, initialBackoffMs: 10 }, {
    replace: (items) => { names = items.map((o) => o.metadata.name!); },
    event: (_type, obj) => { names.push(obj.metadata.name!); },
    state: (s, err) => { states.push(`${s}${err ? `: ${err}` : ''}`); },
  });
  try {
    await inf.hasSynced;
    assert.deepEqual(limits.slice(0, 5), [100, 50, 25, 12, 6], 'halved until a page fits');
    await eventually('the oversized event ended the watch', async () => states.some((s) => s.includes(`watch event larger than ${LIMIT} bytes`)));
    assert.ok(names.includes('w1') && !names.includes('w2'), `the event before it was seen: ${names}`);
    await eventually('resumed', async () => watches >= 2);
  } finally { await inf.stop(); c.close(); }
});
