import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { parse as parseYaml } from 'yaml';

import {
  CERTIFICATE_BACKDATE_MS,
  EKU_CLIENT_AUTH,
  EKU_SERVER_AUTH,
  canonicalIp,
  createCA,
  identityFromSubject,
  inspectCertificate,
  isIssuedBy,
  issueClientCert,
  issueServingCert,
  keyMatchesCertificate,
  type KeyPair,
} from '../../src/pki/certs.js';
import {
  KubeconfigError,
  buildKubeconfig,
  readKubeconfig,
  resolveKubeconfigContext,
  serializeKubeconfig,
} from '../../src/pki/kubeconfig.js';
import { ensurePki, type ServerPki } from '../../src/pki/store.js';

const posix = process.platform !== 'win32';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'kcp-ts-pki-'));
}

/** What the test server saw of the client's TLS handshake. */
interface Seen {
  authorized: boolean;
  authorizationError: string | null;
  identity: { user: string; groups: string[] } | null;
}

/** HTTPS server that requests (but does not require) a client certificate and reports what it saw. */
async function startServer(serving: KeyPair, caPem: string): Promise<{ server: Server; port: number }> {
  const server = createServer(
    { cert: serving.certPem, key: serving.keyPem, ca: caPem, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const socket = req.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      const seen: Seen = {
        authorized: socket.authorized,
        authorizationError: socket.authorizationError ? String(socket.authorizationError) : null,
        identity: socket.authorized ? identityFromSubject(peer.subject) : null,
      };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(seen));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

async function stopServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** GET / with the given trust and client credentials; `servername` is the name verified in the server cert. */
function get(
  port: number,
  opts: { ca: string; client?: KeyPair; servername?: string },
): Promise<{ seen: Seen; serverAuthorized: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        ca: opts.ca,
        cert: opts.client?.certPem,
        key: opts.client?.keyPem,
        servername: opts.servername,
        agent: false,
      },
      (res) => {
        const serverAuthorized = (res.socket as TLSSocket).authorized;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ seen: JSON.parse(body) as Seen, serverAuthorized }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function withPki<T>(fn: (pki: ServerPki, dir: string) => Promise<T>): Promise<T> {
  const dir = await tempDir();
  try {
    return await fn(await ensurePki(join(dir, 'pki'), { hostnames: [], ipAddresses: [] }), join(dir, 'pki'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('TLS handshake: CA-signed client cert authenticates as kcp-admin; foreign CA does not', async () => {
  await withPki(async (pki) => {
    const { server, port } = await startServer(pki.serving, pki.ca.certPem);
    try {
      // IP SAN 127.0.0.1 (no servername: Node verifies the IP against the certificate).
      const admin = await get(port, { ca: pki.ca.certPem, client: pki.admin });
      assert.equal(admin.serverAuthorized, true);
      assert.equal(admin.seen.authorized, true, `authorizationError: ${admin.seen.authorizationError}`);
      assert.deepEqual(admin.seen.identity, { user: 'kcp-admin', groups: ['system:kcp:admin'] });

      // DNS SAN localhost.
      const sys = await get(port, { ca: pki.ca.certPem, client: pki.systemAdmin, servername: 'localhost' });
      assert.equal(sys.serverAuthorized, true);
      assert.deepEqual(sys.seen.identity, { user: 'system:admin', groups: ['system:masters'] });

      // Several groups, including characters that need DN escaping, keep their order.
      const multi = await issueClientCert(pki.ca, { user: 'alice', groups: ['dev', 'a,b+c=d', 'ops'] });
      const m = await get(port, { ca: pki.ca.certPem, client: multi });
      assert.deepEqual(m.seen.identity, { user: 'alice', groups: ['dev', 'a,b+c=d', 'ops'] });

      // Client certificate from another CA: handshake completes (rejectUnauthorized: false) but unauthorized.
      const otherCa = await createCA('other-ca');
      const foreign = await issueClientCert(otherCa, { user: 'kcp-admin', groups: ['system:kcp:admin'] });
      const f = await get(port, { ca: pki.ca.certPem, client: foreign });
      assert.equal(f.seen.authorized, false);
      assert.ok(f.seen.authorizationError, 'an authorization error is reported');
      assert.equal(f.seen.identity, null);

      // No client certificate at all.
      const anon = await get(port, { ca: pki.ca.certPem });
      assert.equal(anon.seen.authorized, false);

      // A name not in the serving certificate fails verification on the client.
      await assert.rejects(get(port, { ca: pki.ca.certPem, servername: 'not-in-cert.example' }), {
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      });
      // Trusting a different CA fails verification of the server.
      await assert.rejects(get(port, { ca: otherCa.certPem }), (err: NodeJS.ErrnoException) => {
        return err.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || err.code === 'SELF_SIGNED_CERT_IN_CHAIN';
      });
    } finally {
      await stopServer(server);
    }
  });
});

test('certificate profile: CA, serving and client extensions, serials, validity, key format', async () => {
  const ca = await createCA('test-ca', 10);
  const serving = await issueServingCert(ca, {
    commonName: 'srv',
    dnsNames: ['localhost', 'LOCALHOST', 'kcp.example.com', '10.0.0.7'],
    ipAddresses: ['127.0.0.1', '0:0:0:0:0:0:0:1', '::ffff:192.0.2.1'],
  });
  const client = await issueClientCert(ca, { user: 'bob', groups: [] });

  for (const pair of [ca, serving, client]) {
    assert.match(pair.keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.ok(keyMatchesCertificate(pair));
    const info = inspectCertificate(pair.certPem);
    assert.ok(parseInt(info.serialNumber.slice(0, 2), 16) < 0x80, 'serial is positive without a sign octet');
    assert.ok(info.notBefore.getTime() <= Date.now() - CERTIFICATE_BACKDATE_MS + 2000, 'notBefore back-dated');
    const nodeCert = new X509Certificate(pair.certPem);
    assert.equal(nodeCert.publicKey.asymmetricKeyType, 'ec');
    assert.equal(nodeCert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  }
  const caInfo = inspectCertificate(ca.certPem);
  assert.equal(caInfo.isCA, true);
  assert.equal(caInfo.subject, 'CN=test-ca');
  assert.ok(Math.abs(caInfo.notAfter.getTime() - (Date.now() + 10 * 86400_000)) < 60_000);

  const sInfo = inspectCertificate(serving.certPem);
  assert.equal(sInfo.isCA, false);
  assert.deepEqual(sInfo.dnsNames, ['localhost', 'kcp.example.com']);
  assert.deepEqual(sInfo.ipAddresses, ['10.0.0.7', '127.0.0.1', '::1', '192.0.2.1']);
  assert.deepEqual(sInfo.extendedKeyUsages, [EKU_SERVER_AUTH]);
  assert.ok(sInfo.notAfter.getTime() <= caInfo.notAfter.getTime(), 'leaf never outlives its CA');

  const cInfo = inspectCertificate(client.certPem);
  assert.equal(cInfo.commonName, 'bob');
  assert.deepEqual(cInfo.organizations, []);
  assert.deepEqual(cInfo.extendedKeyUsages, [EKU_CLIENT_AUTH]);

  assert.ok(isIssuedBy(serving.certPem, ca.certPem));
  assert.ok(!isIssuedBy(serving.certPem, (await createCA('test-ca')).certPem), 'same name, other key');
  assert.ok(!keyMatchesCertificate({ certPem: serving.certPem, keyPem: client.keyPem }));

  await assert.rejects(createCA(''), TypeError);
  await assert.rejects(createCA('x', 0), RangeError);
  await assert.rejects(issueServingCert(ca, { commonName: 's', dnsNames: [], ipAddresses: [] }), TypeError);
  await assert.rejects(issueServingCert(ca, { commonName: 's', dnsNames: ['bücher.de'], ipAddresses: [] }), TypeError);
  await assert.rejects(issueServingCert(ca, { commonName: 's', dnsNames: [], ipAddresses: ['300.1.1.1'] }), /invalid IP/);
  await assert.rejects(issueClientCert(ca, { user: 'u', groups: [''] }), TypeError);
  await assert.rejects(issueClientCert(serving, { user: 'u', groups: [] }), /not a CA/);
  await assert.rejects(issueClientCert({ certPem: ca.certPem, keyPem: client.keyPem }, { user: 'u', groups: [] }), /does not belong/);

  if (hasOpenssl()) {
    const dir = await tempDir();
    try {
      await writeFile(join(dir, 'ca.crt'), ca.certPem);
      await writeFile(join(dir, 'srv.crt'), serving.certPem);
      await writeFile(join(dir, 'client.crt'), client.certPem);
      const caText = execFileSync('openssl', ['x509', '-noout', '-text', '-in', join(dir, 'ca.crt')], { encoding: 'utf8' });
      assert.match(caText, /Basic Constraints: critical\s+CA:TRUE/);
      assert.match(caText, /Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
      assert.match(caText, /Subject Key Identifier/);
      assert.match(caText, /ecdsa-with-SHA256/);
      const srvText = execFileSync('openssl', ['x509', '-noout', '-text', '-in', join(dir, 'srv.crt')], { encoding: 'utf8' });
      assert.match(srvText, /TLS Web Server Authentication/);
      assert.match(srvText, /DNS:localhost, DNS:kcp.example.com, IP Address:10.0.0.7, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1/);
      assert.match(srvText, /Authority Key Identifier/);
      const verified = execFileSync(
        'openssl',
        ['verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'srv.crt'), join(dir, 'client.crt')],
        { encoding: 'utf8' },
      );
      assert.match(verified, /srv\.crt: OK/);
      assert.match(verified, /client\.crt: OK/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
});

test('identityFromSubject follows the Kubernetes x509 authenticator', () => {
  assert.deepEqual(identityFromSubject({ CN: 'u', O: 'g' }), { user: 'u', groups: ['g'] });
  assert.deepEqual(identityFromSubject({ CN: 'u', O: ['g1', 'g2'] }), { user: 'u', groups: ['g1', 'g2'] });
  assert.deepEqual(identityFromSubject({ CN: 'u' }), { user: 'u', groups: [] });
  assert.deepEqual(identityFromSubject({ CN: ['first', 'last'], OU: 'x' }), { user: 'last', groups: [] });
  assert.throws(() => identityFromSubject({ O: 'g' }), /CommonName/);
  assert.throws(() => identityFromSubject({ CN: '' }), /CommonName/);
  assert.throws(() => identityFromSubject(undefined), /no subject/);
});

test('canonicalIp', () => {
  assert.equal(canonicalIp('127.0.0.1'), '127.0.0.1');
  assert.equal(canonicalIp('0:0:0:0:0:0:0:1'), '::1');
  assert.equal(canonicalIp('::ffff:10.1.2.3'), '10.1.2.3');
  assert.equal(canonicalIp('2001:DB8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
  assert.equal(canonicalIp('1:0:0:2:0:0:0:3'), '1:0:0:2::3');
  assert.throws(() => canonicalIp('fe80::1%eth0'), /invalid IP/);
  assert.throws(() => canonicalIp('localhost'), /invalid IP/);
});

test('ensurePki: generates once, reuses, adds SANs, repairs missing files', async () => {
  const root = await tempDir();
  const dir = join(root, 'nested', 'pki');
  try {
    const first = await ensurePki(dir, { hostnames: [], ipAddresses: [] });
    assert.deepEqual(first.issued, ['ca', 'apiserver', 'admin', 'system-admin', 'front-proxy-ca', 'front-proxy-client']);
    // The front-proxy identity is signed by its own CA only: the users' CA cannot mint it.
    assert.ok(isIssuedBy(first.frontProxyClient.certPem, first.frontProxyCA.certPem));
    assert.ok(!isIssuedBy(first.frontProxyClient.certPem, first.ca.certPem));
    assert.equal(inspectCertificate(first.frontProxyClient.certPem).commonName, 'kcp-front-proxy');
    assert.deepEqual(first.servingDnsNames, ['localhost']);
    assert.deepEqual(first.servingIpAddresses, ['127.0.0.1', '::1']);
    assert.equal(first.ca.certPath, join(dir, 'ca.crt'));
    assert.equal(first.serving.keyPath, join(dir, 'apiserver.key'));
    assert.deepEqual((await readdir(dir)).sort(), [
      'admin.crt', 'admin.key', 'apiserver.crt', 'apiserver.key', 'ca.crt', 'ca.key', 'front-proxy-ca.crt', 'front-proxy-ca.key', 'front-proxy-client.crt', 'front-proxy-client.key', 'sa.key', 'system-admin.crt', 'system-admin.key',
    ]);
    if (posix) {
      assert.equal((await stat(dir)).mode & 0o777, 0o700);
      for (const f of ['ca.key', 'apiserver.key', 'admin.key', 'system-admin.key', 'sa.key']) {
        assert.equal((await stat(join(dir, f))).mode & 0o777, 0o600, f);
      }
    }
    const serial = (p: { certPem: string }): string => inspectCertificate(p.certPem).serialNumber;

    // Second call: everything reused.
    const second = await ensurePki(dir, { hostnames: [], ipAddresses: [] });
    assert.deepEqual(second.issued, []);
    assert.equal(serial(second.ca), serial(first.ca));
    assert.equal(serial(second.serving), serial(first.serving));
    assert.equal(second.admin.keyPem, first.admin.keyPem);

    // A new external hostname / IP: only the serving certificate is re-issued, from the same CA.
    const third = await ensurePki(dir, { hostnames: ['kcp.example.com', '192.0.2.10'], ipAddresses: ['10.9.8.7'] });
    assert.deepEqual(third.issued, ['apiserver']);
    assert.equal(serial(third.ca), serial(first.ca));
    assert.equal(serial(third.admin), serial(first.admin));
    assert.notEqual(serial(third.serving), serial(first.serving));
    assert.deepEqual(third.servingDnsNames, ['localhost', 'kcp.example.com']);
    assert.deepEqual(third.servingIpAddresses, ['192.0.2.10', '127.0.0.1', '::1', '10.9.8.7']);
    assert.ok(isIssuedBy(third.serving.certPem, first.ca.certPem));
    const onDisk = await readFile(join(dir, 'apiserver.crt'), 'utf8');
    assert.equal(onDisk, third.serving.certPem);
    // The new name verifies in a real handshake.
    const { server, port } = await startServer(third.serving, third.ca.certPem);
    try {
      const r = await get(port, { ca: third.ca.certPem, client: third.admin, servername: 'kcp.example.com' });
      assert.equal(r.serverAuthorized, true);
      assert.deepEqual(r.seen.identity, { user: 'kcp-admin', groups: ['system:kcp:admin'] });
    } finally {
      await stopServer(server);
    }

    // Same request again (names in another case/order, subset): nothing to do.
    const fourth = await ensurePki(dir, { hostnames: ['KCP.example.com'], ipAddresses: [] });
    assert.deepEqual(fourth.issued, []);

    // A missing client certificate is issued from the existing CA.
    await unlink(join(dir, 'admin.crt'));
    const fifth = await ensurePki(dir, { hostnames: [], ipAddresses: [] });
    assert.deepEqual(fifth.issued, ['admin']);
    assert.equal(serial(fifth.ca), serial(first.ca));
    assert.ok(isIssuedBy(fifth.admin.certPem, first.ca.certPem));

    // A key that does not match its certificate (crash between the two renames) is repaired.
    await writeFile(join(dir, 'system-admin.key'), fifth.admin.keyPem, { mode: 0o600 });
    const sixth = await ensurePki(dir, { hostnames: [], ipAddresses: [] });
    assert.deepEqual(sixth.issued, ['system-admin']);
    assert.ok(keyMatchesCertificate(sixth.systemAdmin));

    // ca.crt lost but ca.key kept: the CA certificate is re-made from the key; leaves stay valid.
    await unlink(join(dir, 'ca.crt'));
    const seventh = await ensurePki(dir, { hostnames: [], ipAddresses: [] });
    assert.deepEqual(seventh.issued, ['ca']);
    assert.equal(seventh.ca.keyPem, first.ca.keyPem);
    assert.ok(isIssuedBy(seventh.admin.certPem, seventh.ca.certPem));

    // ca.key lost: refuse rather than silently replacing the CA every kubeconfig trusts.
    await unlink(join(dir, 'ca.key'));
    await assert.rejects(ensurePki(dir, { hostnames: [], ipAddresses: [] }), /ca\.key is missing/);

    // Invalid extra names are rejected.
    await assert.rejects(ensurePki(join(root, 'other'), { hostnames: [], ipAddresses: ['not-an-ip'] }), /invalid IP/);

    // No temporary files are left behind.
    assert.deepEqual((await readdir(dir)).filter((f) => f.includes('.tmp-')), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('ensurePki: concurrent first calls agree on one CA', async () => {
  const root = await tempDir();
  try {
    const dir = join(root, 'pki');
    const results = await Promise.all([1, 2, 3].map(() => ensurePki(dir, { hostnames: [], ipAddresses: [] })));
    const caSerials = new Set(results.map((r) => inspectCertificate(r.ca.certPem).serialNumber));
    assert.equal(caSerials.size, 1);
    assert.deepEqual(results.map((r) => r.issued.length), [6, 0, 0]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('kubeconfig: embedded credentials, parses as YAML, round-trips, works for a real request', async () => {
  await withPki(async (pki) => {
    const { server, port } = await startServer(pki.serving, pki.ca.certPem);
    try {
      const text = buildKubeconfig({
        clusters: [
          { name: 'root', server: `https://127.0.0.1:${port}/clusters/root`, caPem: pki.ca.certPem },
          { name: 'on', server: 'https://kcp.example.com:6443', tlsServerName: 'kcp' },
        ],
        users: [
          { name: 'kcp-admin', certPem: pki.admin.certPem, keyPem: pki.admin.keyPem },
          { name: '0123', token: 'abc.def' },
        ],
        contexts: [
          { name: 'root', cluster: 'root', user: 'kcp-admin' },
          { name: 'yes', cluster: 'on', user: '0123', namespace: 'default' },
        ],
        currentContext: 'root',
      });

      // kubectl's layout: sorted keys, unindented sequences, YAML 1.1 look-alikes quoted.
      assert.match(text, /^apiVersion: v1\nclusters:\n- cluster:\n {4}certificate-authority-data: /);
      assert.match(text, /\ncurrent-context: root\nkind: Config\npreferences: \{\}\nusers:\n/);
      assert.match(text, /name: "on"/);
      assert.match(text, /name: "0123"/);

      const plain = parseYaml(text) as Record<string, any>;
      assert.equal(plain['apiVersion'], 'v1');
      assert.equal(plain['kind'], 'Config');
      assert.equal(plain['current-context'], 'root');
      assert.equal(
        Buffer.from(plain['clusters'][0].cluster['certificate-authority-data'], 'base64').toString('utf8'),
        pki.ca.certPem,
      );
      assert.equal(Buffer.from(plain['users'][0].user['client-certificate-data'], 'base64').toString(), pki.admin.certPem);
      assert.equal(Buffer.from(plain['users'][0].user['client-key-data'], 'base64').toString(), pki.admin.keyPem);
      assert.equal(plain['users'][1].user.token, 'abc.def');

      const cfg = readKubeconfig(text);
      assert.deepEqual(cfg, plain);
      assert.equal(serializeKubeconfig(cfg), text);
      assert.equal(cfg.clusters[1]!.name, 'on');
      assert.equal(cfg.users[1]!.name, '0123');

      const ctx = resolveKubeconfigContext(cfg);
      assert.equal(ctx.caPem, pki.ca.certPem);
      assert.equal(ctx.certPem, pki.admin.certPem);
      assert.equal(ctx.keyPem, pki.admin.keyPem);
      assert.equal(resolveKubeconfigContext(cfg, 'yes').namespace, 'default');
      assert.equal(resolveKubeconfigContext(cfg, 'yes').token, 'abc.def');

      // The credentials taken from the kubeconfig authenticate against the server.
      const r = await get(port, { ca: ctx.caPem!, client: { certPem: ctx.certPem!, keyPem: ctx.keyPem! } });
      assert.deepEqual(r.seen.identity, { user: 'kcp-admin', groups: ['system:kcp:admin'] });

      // client-go's own loader (via @kubernetes/client-node) accepts the file.
      const { KubeConfig } = await import('@kubernetes/client-node');
      const kc = new KubeConfig();
      kc.loadFromString(text);
      assert.equal(kc.getCurrentContext(), 'root');
      assert.equal(kc.getCurrentCluster()?.server, `https://127.0.0.1:${port}/clusters/root`);
      assert.equal(kc.getCurrentUser()?.name, 'kcp-admin');
    } finally {
      await stopServer(server);
    }
  });
});

test('readKubeconfig: kubectl-written files, unknown fields kept, errors reported', () => {
  const ca = Buffer.from('ca-pem').toString('base64');
  const text = [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${ca}`,
    '    insecure-skip-tls-verify: false',
    '    server: https://10.0.0.1:6443',
    '  name: 007',
    'contexts:',
    '- context:',
    '    cluster: 007',
    '    user: ci',
    '  name: ci@007',
    'current-context: ci@007',
    'kind: Config',
    'preferences: {}',
    'users:',
    '- name: ci',
    '  user:',
    '    exec:',
    '      apiVersion: client.authentication.k8s.io/v1',
    '      command: get-token',
    '      provideClusterInfo: true',
    '',
  ].join('\n');
  const cfg = readKubeconfig(text);
  assert.equal(cfg.clusters[0]!.name, '007'); // string as written, not the number 7
  assert.equal(cfg.clusters[0]!.cluster['insecure-skip-tls-verify'], false);
  assert.equal(cfg.contexts[0]!.context.cluster, '007');
  const exec = (cfg.users[0]!.user as Record<string, any>)['exec'];
  assert.equal(exec.provideClusterInfo, true); // unknown field keeps its YAML type
  assert.equal(serializeKubeconfig(cfg), text.replace('name: 007', 'name: "007"').replace('cluster: 007', 'cluster: "007"'));

  assert.deepEqual(readKubeconfig('').clusters, []);
  assert.equal(readKubeconfig('insecure: 1\nclusters:\n- name: a\n  cluster:\n    server: x\n    insecure-skip-tls-verify: yes\n').clusters[0]!.cluster['insecure-skip-tls-verify'], true);

  assert.throws(() => readKubeconfig('clusters: [a'), KubeconfigError);
  assert.throws(() => readKubeconfig('- a'), /top level must be a mapping/);
  assert.throws(() => readKubeconfig('apiVersion: v2'), /unsupported apiVersion/);
  assert.throws(() => readKubeconfig('clusters:\n- cluster: {server: x}'), /clusters\[0\]\.name: name is required/);
  assert.throws(() => readKubeconfig('users:\n- name: a\n- name: a'), /duplicate name/);
  assert.throws(() => readKubeconfig('users:\n- name: a\n  user:\n    client-key-data: "@@@"'), /client-key-data: must be standard base64/);
  assert.throws(() => readKubeconfig('clusters:\n- name: a\n  cluster:\n    server: [x]'), /server: must be a string/);

  assert.throws(
    () => buildKubeconfig({ clusters: [], users: [], contexts: [{ name: 'c', cluster: 'x', user: 'y' }], currentContext: 'c' }),
    /unknown cluster/,
  );
  assert.throws(
    () => buildKubeconfig({ clusters: [], users: [{ name: 'u', certPem: 'x' }], contexts: [], currentContext: '' }),
    /certPem and keyPem must be given together/,
  );
  assert.throws(
    () => buildKubeconfig({ clusters: [{ name: 'a', server: 'localhost:6443' }], users: [], contexts: [], currentContext: '' }),
    /http\(s\) URL/,
  );
  assert.throws(
    () => buildKubeconfig({ clusters: [], users: [], contexts: [], currentContext: 'missing' }),
    /unknown context/,
  );
});
