/**
 * The webhook client (src/apimachinery/webhookclient.ts) against a real HTTPS server: answers
 * larger than the stated cap are refused without being read whole, idle connection pools are
 * closed and reopened on the next call.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { createCA, issueServingCert } from '../../src/pki/certs.js';
import { openWebhookPools, postJSON, setWebhookPoolIdleMs, webhookEndpoint, webhookResponseLimit } from '../../src/apimachinery/webhookclient.js';
import { eventually } from '../helpers.js';

let server: Server;
let base = '';
let caBundle = '';
/** Bytes the server managed to write of its last oversized answer. */
let written = 0;

before(async () => {
  const ca = await createCA('webhookclient-test-ca');
  const serving = await issueServingCert(ca, { commonName: 'webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  caBundle = Buffer.from(ca.certPem).toString('base64');
  server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/ok') { res.setHeader('content-type', 'application/json'); res.end('{"kind":"Fine"}'); return; }
      const mib = Buffer.alloc(1024 * 1024, 'a');
      if (path === '/declared-huge') { res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) }); res.write(mib); return; }
      // Streams 64 MiB without a length, as long as the client reads.
      written = 0;
      const pump = () => {
        while (written < 64 * 1024 * 1024) {
          written += mib.length;
          if (!res.write(mib)) { res.once('drain', pump); return; }
        }
        res.end();
      };
      res.on('close', () => undefined);
      pump();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  base = `https://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
after(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });

test('the response limit: twice the request plus 7 MiB', () => {
  assert.equal(webhookResponseLimit(0), 7 * 1024 * 1024);
  assert.equal(webhookResponseLimit(1000), 7 * 1024 * 1024 + 2000);
});

test('an answer larger than the limit is refused, declared or streamed, without reading it whole', async () => {
  assert.deepEqual(await postJSON(webhookEndpoint({ url: `${base}/ok`, caBundle }), {}, 5000), { kind: 'Fine' });
  await assert.rejects(postJSON(webhookEndpoint({ url: `${base}/declared-huge`, caBundle }), {}, 5000),
    new RegExp(`^Error: Post "${base}/declared-huge\\?timeout=5s": response body larger than ${webhookResponseLimit(2)} bytes$`));
  await assert.rejects(postJSON(webhookEndpoint({ url: `${base}/streamed-huge`, caBundle }), { pad: 'x'.repeat(1000) }, 5000),
    new RegExp(`response body larger than ${webhookResponseLimit(JSON.stringify({ pad: 'x'.repeat(1000) }).length)} bytes`));
  assert.ok(written < 32 * 1024 * 1024, `the client stopped reading early: the server wrote ${written} bytes`);
});

test('idle pools are closed; the next call opens a new one', async () => {
  setWebhookPoolIdleMs(200);
  try {
    const before = openWebhookPools();
    const other = webhookEndpoint({ url: `https://localhost:${new URL(base).port}/ok`, caBundle });
    const t0 = performance.now();
    assert.deepEqual(await postJSON(other, {}, 5000), { kind: 'Fine' });
    // Open unless the call itself outlasted the idle time (a loaded machine).
    if (performance.now() - t0 < 150) assert.equal(openWebhookPools(), before + 1);
    await eventually('the idle pool closed', async () => openWebhookPools() === before, 3000);
    assert.deepEqual(await postJSON(other, {}, 5000), { kind: 'Fine' }, 'a call after the close works');
  } finally { setWebhookPoolIdleMs(120_000); }
});
