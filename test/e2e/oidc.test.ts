/**
 * OpenID Connect authentication end to end: a test OpenID provider (HTTPS with its own CA,
 * discovery and JWKS, tokens signed with jose), a shard with `--authentication-config`, and real
 * kubectl with `--token` and with an exec credential plugin; RBAC grants by the mapped user name
 * and group. Also the `--oidc-*` flags and start-up errors through the `kcp-ts` CLI.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { call, eventually, freePort, kubectl, sleep, spawnCli, startRedis, startTestServer, stopCli, type TestRedis, type TestServer } from '../helpers.js';
import { startOIDCProvider, type TestOIDCProvider } from '../oidcprovider.js';
import { loadAuthenticationConfig } from '../../src/auth/authconfig.js';
import { startInstance } from '../../src/server/instance.js';
import { ensurePki } from '../../src/pki/store.js';
import { startFrontProxy } from '../../src/proxy/frontproxy.js';
import { JWTAuthenticators, KEY_REFRESH_INTERVAL_MS } from '../../src/auth/oidc.js';

let redis: TestRedis;
let idp: TestOIDCProvider;
let srv: TestServer;
const dir = mkdtempSync(join(tmpdir(), 'kcp-oidc-'));

/** The admin kubeconfig with its user replaced by `user` (kubeconfig `users[].user`). */
function kubeconfigWith(user: Record<string, unknown>, name: string, server = srv): string {
  const kc = parse(readFileSync(server.kubeconfigPath, 'utf8')) as { users: { name: string; user: unknown }[]; contexts: { context: { user: string } }[] };
  for (const u of kc.users) u.user = user;
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, stringify(kc));
  return path;
}

/** kubectl with a bearer token (`--token`, no client certificate). */
function kubectlToken(token: string, args: string[], server = srv) {
  return kubectl(kubeconfigWith({ token: 'placeholder' }, 'token', server), ['--token', token, ...args], { allowFail: true });
}

const UNAUTHORIZED = /You must be logged in to the server \((Unauthorized|the server has asked for the client to provide credentials)\)/;

before(async () => {
  redis = await startRedis();
  idp = await startOIDCProvider();
  const configPath = join(dir, 'auth.yaml');
  writeFileSync(configPath, stringify({
    apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration',
    jwt: [{
      issuer: { url: idp.issuer, certificateAuthority: idp.ca, audiences: ['kcp', 'other'], audienceMatchPolicy: 'MatchAny' },
      claimValidationRules: [{ expression: 'claims.?tier.orValue("") != "banned"', message: 'banned tier' }],
      claimMappings: {
        username: { claim: 'sub', prefix: 'oidc:' },
        groups: { claim: 'groups', prefix: 'oidc:' },
        uid: { claim: 'sub' },
        extra: [{ key: 'example.com/tier', valueExpression: 'claims.?tier.orValue("")' }],
      },
      userValidationRules: [{ expression: '!user.username.startsWith("oidc:system:")', message: 'no system users' }],
    }],
  }));
  writeFileSync(join(dir, 'tokens.csv'), 'static-token,static-user,42,"static-group"\n');
  srv = await startTestServer(redis, { authentication: { config: loadAuthenticationConfig(configPath) }, tokenAuthFile: join(dir, 'tokens.csv') });
  // RBAC in root: group oidc:devs may enter and read configmaps.
  const admin = (args: string[], input?: string) => kubectl(srv.kubeconfigPath, args, input === undefined ? {} : { input });
  await admin(['apply', '-f', '-'], stringify({
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'oidc-reader' },
    rules: [{ nonResourceURLs: ['/'], verbs: ['access'] }, { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
  }));
  await admin(['create', 'clusterrolebinding', 'oidc-devs', '--clusterrole=oidc-reader', '--group=oidc:devs']);
  await admin(['-n', 'default', 'create', 'configmap', 'shared', '--from-literal=k=v']);
});

after(async () => { await srv?.stop(); await idp?.stop(); await redis?.stop(); });

describe('--authentication-config with a JWT issuer', () => {
  test('a valid token authenticates as the mapped user and groups; RBAC grants by the group', async () => {
    const token = await idp.sign({ sub: 'alice', aud: 'kcp', groups: ['devs'], tier: 'gold', jti: 'j-1' });
    const got = await kubectlToken(token, ['-n', 'default', 'get', 'configmap', 'shared', '-o', 'jsonpath={.data.k}']);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.stdout, 'v');
    const who = await kubectlToken(token, ['auth', 'whoami', '-o', 'json']);
    assert.equal(who.code, 0, who.stderr);
    const info = JSON.parse(who.stdout).status.userInfo;
    assert.equal(info.username, 'oidc:alice');
    assert.equal(info.uid, 'alice');
    assert.deepEqual(info.groups, ['oidc:devs', 'system:authenticated']);
    assert.deepEqual(info.extra['example.com/tier'], ['gold']);
    assert.deepEqual(info.extra['authentication.kubernetes.io/credential-id'], ['JTI=j-1']);
    // TokenReview: an OpenID Connect token is audience-agnostic (kube), reviewed for the API audiences.
    const review = await kubectl(srv.kubeconfigPath, ['create', '-o', 'json', '-f', '-'], { input: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } }) });
    const status = JSON.parse(review.stdout).status;
    assert.equal(status.authenticated, true, JSON.stringify(status));
    assert.equal(status.user.username, 'oidc:alice');
    assert.deepEqual(status.audiences, ['https://kcp.default.svc']);
  });

  test('a second audience of MatchAny is accepted; a user outside the group is authenticated but forbidden', async () => {
    const token = await idp.sign({ sub: 'bob', aud: ['other'], groups: 'guests' });
    const r = await kubectlToken(token, ['-n', 'default', 'get', 'configmaps']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Forbidden/);
    assert.match(r.stderr, /oidc:bob/);
  });

  test('a CEL claim validation rule refuses a token: 401', async () => {
    const token = await idp.sign({ sub: 'mallory', aud: 'kcp', groups: ['devs'], tier: 'banned' });
    const r = await kubectlToken(token, ['-n', 'default', 'get', 'configmaps']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, UNAUTHORIZED);
  });

  test('a user validation rule refuses a mapped user: 401', async () => {
    const token = await idp.sign({ sub: 'system:admin', aud: 'kcp', groups: ['devs'] });
    assert.match((await kubectlToken(token, ['-n', 'default', 'get', 'configmaps'])).stderr, UNAUTHORIZED);
  });

  test('expired, wrong audience, not yet valid, unsigned-by-the-issuer tokens: 401 Status', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await idp.sign({ sub: 'alice', aud: 'kcp', groups: ['devs'], exp: now - 5 });
    const wrongAud = await idp.sign({ sub: 'alice', aud: 'someone-else', groups: ['devs'] });
    const future = await idp.sign({ sub: 'alice', aud: 'kcp', groups: ['devs'], nbf: now + 600 });
    const forged = (await idp.sign({ sub: 'alice', aud: 'kcp', groups: ['devs'] })).split('.');
    forged[1] = Buffer.from(JSON.stringify({ iss: idp.issuer, sub: 'root', aud: 'kcp', exp: now + 60, groups: ['devs'] })).toString('base64url');
    for (const token of [expired, wrongAud, future, forged.join('.')]) {
      const r = await kubectlToken(token, ['-n', 'default', 'get', 'configmaps']);
      assert.match(r.stderr, UNAUTHORIZED, token);
    }
    // The Status itself, as kube answers it.
    const res = await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/api/v1/namespaces/default/configmaps', undefined, { authorization: `Bearer ${expired}` });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
  });

  test('other tokens fall through to the other authenticators (static token file)', async () => {
    const who = await kubectlToken('static-token', ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    assert.equal(who.code, 0, who.stderr);
    assert.equal(who.stdout, 'static-user');
    assert.match((await kubectlToken('not-a-token', ['get', 'configmaps'])).stderr, UNAUTHORIZED);
  });

  test('a token signed with a new key (unknown kid) makes the keys be fetched again; random kids do not hammer the issuer', async () => {
    // Keys are fetched again at most once per interval: let the last fetch's interval pass.
    await sleep(Math.max(0, (idp.lastHit.get('/jwks') ?? 0) + KEY_REFRESH_INTERVAL_MS + 100 - Date.now()));
    await idp.rotate(true);
    const before = idp.hits.get('/jwks') ?? 0;
    const token = await idp.sign({ sub: 'carol', aud: 'kcp', groups: ['devs'] });
    const r = await kubectlToken(token, ['-n', 'default', 'get', 'configmap', 'shared', '-o', 'name']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(idp.hits.get('/jwks'), before + 1);
    // A key the issuer does not publish: refused, and 20 such tokens cost at most one more fetch.
    const hidden = await idp.rotate(false);
    const sprayed = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const t = await idp.sign({ sub: `spray-${i}`, aud: 'kcp' }, { key: hidden, kid: `random-${i}` });
      return (await call(srv, { ca: srv.creds.ca }, 'GET', '/clusters/root/api/v1/namespaces', undefined, { authorization: `Bearer ${t}` })).status;
    }));
    assert.deepEqual(new Set(sprayed), new Set([401]));
    assert.ok((idp.hits.get('/jwks') ?? 0) <= before + 2, `JWKS fetched ${(idp.hits.get('/jwks') ?? 0) - before} times`);
  });

  test('an exec credential plugin in the kubeconfig supplies the token', async () => {
    const token = await idp.sign({ sub: 'dave', aud: 'kcp', groups: ['devs'] });
    const plugin = join(dir, 'oidc-login');
    writeFileSync(plugin, `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } })}\nEOF\n`);
    chmodSync(plugin, 0o755);
    const kc = kubeconfigWith({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } }, 'exec');
    const who = await kubectl(kc, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    assert.equal(who.stdout, 'oidc:dave');
    const cm = await kubectl(kc, ['-n', 'default', 'get', 'configmap', 'shared', '-o', 'jsonpath={.data.k}']);
    assert.equal(cm.stdout, 'v');
  });
});

describe('per-workspace authentication: WorkspaceAuthenticationConfiguration referenced by a WorkspaceType', () => {
  test("a tenant's issuer authenticates only in workspaces of that type, scoped to the workspace", async () => {
    const tenantIdp = await startOIDCProvider('ES256');
    try {
      const admin = (args: string[], input?: string) => kubectl(srv.kubeconfigPath, args, input === undefined ? {} : { input });
      await admin(['apply', '-f', '-'], [
        { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceAuthenticationConfiguration', metadata: { name: 'tenant-idp' },
          spec: { jwt: [{ issuer: { url: tenantIdp.issuer, certificateAuthority: tenantIdp.ca, audiences: ['tenant'] },
            claimMappings: { username: { claim: 'sub', prefix: 'tenant:' }, groups: { claim: 'groups', prefix: 'tenant:' }, extra: [{ key: 'example.com/kcp.io-like', valueExpression: '"x"' }] } }] } },
        { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name: 'tenant' }, spec: { authenticationConfigurations: [{ name: 'tenant-idp' }] } },
      ].map((o) => stringify(o)).join('---\n'));
      for (const [name, type] of [['tenant-ws', 'tenant'], ['other-ws', 'universal']] as const) {
        await admin(['apply', '-f', '-'], stringify({ apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: { type: { name: type, path: 'root' } } }));
      }
      await admin(['wait', '--for=jsonpath={.status.phase}=Ready', 'workspace/tenant-ws', 'workspace/other-ws', '--timeout=60s']);
      const grant = stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'tenant-reader' },
        rules: [{ nonResourceURLs: ['/'], verbs: ['access'] }, { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      });
      for (const ws of ['tenant-ws', 'other-ws']) {
        await admin(['--server', `${srv.url}/clusters/root:${ws}`, 'apply', '-f', '-'], grant);
        await admin(['--server', `${srv.url}/clusters/root:${ws}`, 'create', 'clusterrolebinding', 'tenant-devs', '--clusterrole=tenant-reader', '--group=tenant:devs']);
      }
      const token = await tenantIdp.sign({ sub: 'tina', aud: ['tenant', 'https://kcp.default.svc'], groups: ['devs', 'system:masters'] });
      const inTenant = await kubectlToken(token, ['--server', `${srv.url}/clusters/root:tenant-ws`, 'auth', 'whoami', '-o', 'json']);
      assert.equal(inTenant.code, 0, inTenant.stderr);
      const info = JSON.parse(inTenant.stdout).status.userInfo;
      assert.equal(info.username, 'tenant:tina');
      assert.deepEqual(info.groups, ['tenant:devs', 'tenant:system:masters', 'system:authenticated']);
      assert.equal(info.extra['example.com/kcp.io-like'], undefined);
      const cluster = info.extra['authentication.kcp.io/cluster-name']?.[0];
      assert.ok(cluster);
      assert.deepEqual(info.extra['authentication.kcp.io/scopes'], [`cluster:${cluster}`]);
      const list = await kubectlToken(token, ['--server', `${srv.url}/clusters/root:tenant-ws`, 'get', 'configmaps', '-n', 'default', '-o', 'name']);
      assert.equal(list.code, 0, list.stderr);
      // Elsewhere the tenant's issuer is nobody: 401 in root and in a workspace of another type.
      for (const where of ['root', 'root:other-ws']) {
        const r = await kubectlToken(token, ['--server', `${srv.url}/clusters/${where}`, 'get', 'configmaps', '-n', 'default']);
        assert.match(r.stderr, UNAUTHORIZED, where);
      }
      // kcp: a workspace token must also name an API audience.
      const noApiAudience = await tenantIdp.sign({ sub: 'tina', aud: 'tenant', groups: ['devs'] });
      assert.match((await kubectlToken(noApiAudience, ['--server', `${srv.url}/clusters/root:tenant-ws`, 'get', 'configmaps', '-n', 'default'])).stderr, UNAUTHORIZED);
    } finally {
      await tenantIdp.stop();
    }
  });
});

describe('per-workspace authentication across shards', () => {
  test('a workspace on shard-1 whose type is in root: the tenant issuer works through the front-proxy; a front-proxy with an issuer of its own', { timeout: 240_000 }, async () => {
    const tenantIdp = await startOIDCProvider();
    const rootDir = mkdtempSync(join(tmpdir(), 'kcp-oidc-shards-'));
    const inst = await startInstance({ rootDirectory: rootDir, securePort: 0, shards: 2 });
    try {
      const admin = (args: string[], input?: string) => kubectl(inst.kubeconfigPath, ['--server', `${inst.url}/clusters/root`, ...args], input === undefined ? {} : { input });
      await admin(['label', 'shard', 'shard-1', 'oidc-test=one']);
      await admin(['apply', '-f', '-'], [
        { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceAuthenticationConfiguration', metadata: { name: 'tenant-idp' },
          spec: { jwt: [{ issuer: { url: tenantIdp.issuer, certificateAuthority: tenantIdp.ca, audiences: ['tenant'] }, claimMappings: { username: { claim: 'sub', prefix: 'tenant:' } } }] } },
        { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceType', metadata: { name: 'tenant' }, spec: { authenticationConfigurations: [{ name: 'tenant-idp' }] } },
        { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'far' }, spec: { type: { name: 'tenant', path: 'root' }, location: { selector: { matchLabels: { 'oidc-test': 'one' } } } } },
      ].map((o) => stringify(o)).join('---\n'));
      await admin(['wait', '--for=jsonpath={.status.phase}=Ready', 'workspace/far', '--timeout=90s']);
      const shard = await admin(['get', 'workspace', 'far', '-o', 'jsonpath={.metadata.annotations.core\\.kcp\\.io/shard}']);
      assert.equal(shard.stdout, 'shard-1');
      const inFar = (args: string[], input?: string) => kubectl(inst.kubeconfigPath, ['--server', `${inst.url}/clusters/root:far`, ...args], input === undefined ? {} : { input });
      await inFar(['apply', '-f', '-'], stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'enter' }, rules: [{ nonResourceURLs: ['/'], verbs: ['access'] }] }));
      await inFar(['create', 'clusterrolebinding', 'tom-enters', '--clusterrole=enter', '--user=tenant:tom']);
      const token = await tenantIdp.sign({ sub: 'tom', aud: ['tenant', 'https://kcp.default.svc'] });
      const server = { kubeconfigPath: inst.kubeconfigPath } as TestServer;
      let last = '';
      const who = await eventually('the tenant token authenticates on shard-1', async () => {
        const r = await kubectlToken(token, ['--server', `${inst.url}/clusters/root:far`, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], server);
        last = r.stderr.split('\n').filter((l) => !l.includes('memcache.go')).join('\n');
        return r.code === 0 && r.stdout;
      }, 30_000).catch((err: Error) => { throw new Error(`${err.message}: ${last}`); });
      assert.equal(who, 'tenant:tom');
      assert.match((await kubectlToken(token, ['--server', `${inst.url}/clusters/root`, 'auth', 'whoami'], server)).stderr, UNAUTHORIZED);

      // A front-proxy with its own --authentication-config verifies the issuer's tokens itself
      // and forwards the user (the shards here know no OpenID Connect issuer).
      const pki = await ensurePki(rootDir, { hostnames: [], ipAddresses: [] });
      const jwt = new JWTAuthenticators({ jwt: [{ issuer: { url: idp.issuer, certificateAuthority: idp.ca, audiences: ['kcp'] }, claimMappings: { username: { claim: 'sub', prefix: 'proxy:' } } }] });
      jwt.start();
      const proxy = await startFrontProxy({
        securePort: 0, servingCert: pki.serving.certPem, servingKey: pki.serving.keyPem, clientCA: pki.ca.certPem,
        rootShard: { url: inst.shards[0]!.url, ca: pki.ca.certPem, cert: pki.systemAdmin.certPem, key: pki.systemAdmin.keyPem },
        proxyClientCert: pki.frontProxyClient.certPem, proxyClientKey: pki.frontProxyClient.keyPem, jwt,
      });
      try {
        const viaProxy = await idp.sign({ sub: 'pat', aud: 'kcp' });
        const r = await eventually('the front-proxy authenticates', async () => {
          const w = await kubectlToken(viaProxy, ['--server', `${proxy.url}/clusters/root`, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], server);
          return w.code === 0 && w.stdout;
        }, 20_000);
        assert.equal(r, 'proxy:pat');
        const expired = await idp.sign({ sub: 'pat', aud: 'kcp', exp: Math.floor(Date.now() / 1000) - 10 });
        const refused = await call(proxy, { ca: pki.ca.certPem }, 'GET', '/clusters/root/api/v1/namespaces', undefined, { authorization: `Bearer ${expired}` });
        assert.equal(refused.status, 401);
        assert.equal(refused.json?.reason, 'Unauthorized');
        // Through the instance's own proxy (no issuer configured) the shard knows no such issuer.
        assert.match((await kubectlToken(viaProxy, ['--server', `${inst.url}/clusters/root`, 'auth', 'whoami'], server)).stderr, UNAUTHORIZED);
      } finally {
        await proxy.stop();
        await jwt.close();
      }
    } finally {
      await inst.stop();
      await tenantIdp.stop();
    }
  });
});

describe('kcp-ts start with the --oidc-* flags', () => {
  test('the flags make one JWT authenticator: email claim unprefixed, groups prefixed, required claim', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'kcp-oidc-cli-'));
    const caFile = join(cwd, 'idp-ca.crt');
    writeFileSync(caFile, idp.ca);
    const cli = spawnCli(['start', '--secure-port', String(await freePort()),
      '--oidc-issuer-url', idp.issuer, '--oidc-client-id', 'kcp-cli', '--oidc-ca-file', caFile,
      '--oidc-username-claim', 'email', '--oidc-groups-claim', 'roles', '--oidc-groups-prefix', 'idp:',
      '--oidc-required-claim', 'hd=example.com'], { cwd });
    try {
      await cli.ready;
      const server = { kubeconfigPath: join(cwd, '.kcp', 'admin.kubeconfig') } as TestServer;
      const ok = await idp.sign({ sub: '1', email: 'erin@example.com', email_verified: true, aud: 'kcp-cli', roles: ['ops'], hd: 'example.com' }, { alg: 'RS256' });
      const who = await kubectlToken(ok, ['auth', 'whoami', '-o', 'json'], server);
      assert.equal(who.code, 0, who.stderr);
      const info = JSON.parse(who.stdout).status.userInfo;
      assert.equal(info.username, 'erin@example.com');
      assert.deepEqual(info.groups, ['idp:ops', 'system:authenticated']);
      const missing = await idp.sign({ sub: '1', email: 'erin@example.com', aud: 'kcp-cli', roles: ['ops'] });
      assert.match((await kubectlToken(missing, ['auth', 'whoami'], server)).stderr, UNAUTHORIZED);
      const unverified = await idp.sign({ sub: '1', email: 'erin@example.com', email_verified: false, aud: 'kcp-cli', hd: 'example.com' });
      assert.match((await kubectlToken(unverified, ['auth', 'whoami'], server)).stderr, UNAUTHORIZED);
    } finally {
      await stopCli(cli);
    }
  });

  test('start-up refuses an invalid configuration naming the field, and both ways at once', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'kcp-oidc-bad-'));
    const bad = join(cwd, 'auth.yaml');
    writeFileSync(bad, stringify({
      apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration',
      jwt: [{ issuer: { url: 'http://idp.example.com', audiences: [] }, claimMappings: { username: { claim: 'sub' } } }],
    }));
    const one = spawnCli(['start', '--secure-port', '0', '--authentication-config', bad], { cwd });
    assert.equal(await one.exited, 2);
    assert.match(one.output(), /jwt\[0\]\.issuer\.url: Invalid value: "http:\/\/idp\.example\.com": URL scheme must be https/);
    assert.match(one.output(), /jwt\[0\]\.issuer\.audiences: Required value: at least one jwt\[0\]\.issuer\.audiences is required/);
    assert.match(one.output(), /jwt\[0\]\.claimMappings\.username\.prefix: Required value: prefix is required when claim is set/);
    const both = spawnCli(['start', '--secure-port', '0', '--authentication-config', bad, '--oidc-issuer-url', 'https://idp.example.com', '--oidc-client-id', 'x'], { cwd });
    assert.equal(await both.exited, 2);
    assert.match(both.output(), /authentication-config file and oidc-\* flags are mutually exclusive/);
    const half = spawnCli(['start', '--secure-port', '0', '--oidc-issuer-url', 'https://idp.example.com'], { cwd });
    assert.equal(await half.exited, 2);
    assert.match(half.output(), /oidc-issuer-url and oidc-client-id must be specified together when any oidc-\* flags are set/);
  });
});
