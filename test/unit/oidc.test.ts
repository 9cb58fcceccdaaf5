/**
 * The JWT authenticator against a test OpenID provider (in-process HTTPS): kube's checks and
 * messages (go-oidc v2 verify.go, plugin/pkg/authenticator/token/oidc), the CEL cost limit, and
 * the bounds a hostile token sender meets (key refetches).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JWTAuthenticator, JWTAuthenticators, type JWTResult } from '../../src/auth/oidc.js';
import type { JWTAuthenticatorConfig } from '../../src/auth/authconfig.js';
import { startOIDCProvider, type TestOIDCProvider } from '../oidcprovider.js';

let rsa: TestOIDCProvider;
let ec: TestOIDCProvider;
before(async () => { rsa = await startOIDCProvider('RS256'); ec = await startOIDCProvider('ES256'); });
after(async () => { await rsa.stop(); await ec.stop(); });

const config = (p: TestOIDCProvider, over: Partial<JWTAuthenticatorConfig> = {}): JWTAuthenticatorConfig => ({
  issuer: { url: p.issuer, certificateAuthority: p.ca, audiences: ['kcp'] }, claimMappings: { username: { claim: 'sub', prefix: '' } }, ...over,
});
const errorOf = (r: JWTResult): string => { assert.ok(r && 'error' in r, JSON.stringify(r)); return r.error; };

describe('JWT authenticator', () => {
  test('tokens of other issuers are not its own; a malformed token of no issuer neither', async () => {
    const a = new JWTAuthenticators({ jwt: [config(rsa)] });
    try {
      assert.equal(a.authenticate(await ec.sign({ sub: 'x', aud: 'kcp' })), undefined);
      assert.equal(a.authenticate('not.a.jwt'), undefined);
      assert.equal(a.authenticate('opaque-token'), undefined);
    } finally { await a.close(); }
  });

  test('signature algorithms: only those allowed (RS256 for the --oidc-* flags)', async () => {
    const a = new JWTAuthenticator(config(ec), ['RS256']);
    try {
      assert.equal(errorOf(await a.authenticate(await ec.sign({ sub: 'x', aud: 'kcp' }))), 'oidc: verify token: oidc: id token signed with unsupported algorithm, expected ["RS256"] got "ES256"');
    } finally { await a.close(); }
    const all = new JWTAuthenticator(config(ec));
    try { assert.deepEqual(await all.authenticate(await ec.sign({ sub: 'x', aud: 'kcp' })), { user: { name: 'x', groups: [] } }); } finally { await all.close(); }
  });

  test('exp without leeway, nbf with one minute, audience required', async () => {
    const now = Math.floor(Date.now() / 1000);
    const a = new JWTAuthenticator(config(rsa));
    try {
      assert.match(errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp', exp: now - 2 }))), /^oidc: verify token: oidc: token is expired \(Token Expiry: /);
      assert.ok('user' in (await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp', nbf: now + 30 })))!);
      assert.match(errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp', nbf: now + 120 }))), /before the nbf \(not before\) time/);
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: ['a', 'b'] }))), 'oidc: verify token: oidc: expected audience "kcp" got ["a","b"]');
    } finally { await a.close(); }
  });

  test('claim mappings and rules: kube\'s errors', async () => {
    const a = new JWTAuthenticator(config(rsa, {
      claimMappings: { username: { claim: 'email', prefix: '' }, groups: { expression: 'claims.roles.map(r, "r:" + r)' } },
      claimValidationRules: [{ claim: 'hd', requiredValue: 'example.com' }],
    }));
    try {
      assert.deepEqual(await a.authenticate(await rsa.sign({ email: 'a@example.com', aud: 'kcp', roles: ['x', ''], hd: 'example.com' })), { user: { name: 'a@example.com', groups: ['r:x', 'r:'] } });
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ email: 'a@example.com', email_verified: false, aud: 'kcp', roles: [], hd: 'example.com' }))), 'oidc: email not verified');
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ email: 'a@example.com', aud: 'kcp', roles: [] }))), 'oidc: required claim hd not present in ID token');
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ email: 'a@example.com', aud: 'kcp', roles: [], hd: 'evil.com' }))), 'oidc: required claim hd value does not match. Got = evil.com, want = example.com');
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp', roles: [], hd: 'example.com' }))), 'oidc: parse username claims "email": claim not present');
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ email: 'a@example.com', aud: 'kcp', roles: 'x', hd: 'example.com' }))).startsWith('oidc: error evaluating group claim expression'), true);
    } finally { await a.close(); }
  });

  test('a CEL rule is stopped at kube\'s per-call cost limit: the token is refused', async () => {
    const a = new JWTAuthenticator(config(rsa, { claimValidationRules: [{ expression: 'claims.l.all(a, claims.l.all(b, claims.l.all(c, a == b || b != c || true)))', message: 'm' }] }));
    try {
      const t0 = performance.now();
      const err = errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp', l: Array.from({ length: 300 }, (_, i) => i) })));
      assert.match(err, /^oidc: error evaluating claim validation expression: operation cancelled: actual cost limit exceeded/);
      assert.ok(performance.now() - t0 < 5000);
    } finally { await a.close(); }
  });

  test('unknown key ids refetch the keys at most once per interval (50 tokens with random kids)', async () => {
    const a = new JWTAuthenticator(config(rsa));
    try {
      assert.ok('user' in (await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp' })))!);
      const fetches = a.keyFetches;
      const hidden = await rsa.rotate(false);
      const results = await Promise.all(Array.from({ length: 50 }, async (_, i) => a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp' }, { key: hidden, kid: `k${i}` }))));
      for (const r of results) assert.equal(errorOf(r), 'oidc: verify token: failed to verify signature: failed to verify id token signature');
      assert.ok(a.keyFetches <= fetches + 1, `${a.keyFetches - fetches} fetches`);
    } finally { await a.close(); }
  });

  test('a discovery document naming another issuer: its tokens are refused, kube\'s message', async () => {
    const a = new JWTAuthenticator({ ...config(rsa), issuer: { url: rsa.issuer, discoveryURL: `${ec.issuer}/.well-known/openid-configuration`, certificateAuthority: `${rsa.ca}\n${ec.ca}`, audiences: ['kcp'] } });
    try {
      assert.equal(errorOf(await a.authenticate(await rsa.sign({ sub: 'x', aud: 'kcp' }))), `oidc: authenticator not initialized: oidc: issuer did not match the issuer returned by provider, expected "${rsa.issuer}" got "${ec.issuer}"`);
    } finally { await a.close(); }
  });
});
