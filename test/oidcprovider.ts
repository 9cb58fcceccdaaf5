/**
 * A small OpenID provider for tests: an HTTPS server with its own CA serving a discovery
 * document (`/.well-known/openid-configuration`) and a JWKS (`/jwks`), and tokens signed with
 * `jose`. Keys can be rotated (a new key the JWKS serves, or one it does not serve yet), and it
 * counts the requests for each document.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { createCA, issueServingCert } from '../src/pki/certs.js';

type Key = { kid: string; alg: string; privateKey: CryptoKey; jwk: JWK };

/** A running test OpenID provider. */
export interface TestOIDCProvider {
  /** Issuer URL (`https://127.0.0.1:<port>`). */
  issuer: string;
  /** PEM of the CA that signed its serving certificate. */
  ca: string;
  /** Requests served per path. */
  hits: Map<string, number>;
  /** Time (ms since the epoch) of the last request per path. */
  lastHit: Map<string, number>;
  /** Signs a token with the current key (or `opts.key`); `iss` defaults to the issuer, `exp` to one hour. */
  sign(claims: Record<string, unknown>, opts?: { kid?: string; key?: Key; alg?: string }): Promise<string>;
  /** A new key; with `publish` it is served in the JWKS from now on and signs later tokens. */
  rotate(publish?: boolean): Promise<Key>;
  /** Serves the keys generated so far (a key made with `rotate(false)` becomes known). */
  publishAll(): void;
  stop(): Promise<void>;
}

async function newKey(alg: string, n: number): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `key-${n}`;
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** Starts a provider on a free port of 127.0.0.1; `alg` of its keys (default RS256). */
export async function startOIDCProvider(alg = 'RS256'): Promise<TestOIDCProvider> {
  const ca = await createCA('test-oidc-ca');
  const serving = await issueServingCert(ca, { commonName: 'oidc', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  let issuer = '';
  const keys: Key[] = [await newKey(alg, 0)];
  let published = 1;
  let current = keys[0]!;
  const hits = new Map<string, number>();
  const lastHit = new Map<string, number>();
  const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    lastHit.set(path, Date.now());
    const json = (v: unknown) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)); };
    if (path === '/.well-known/openid-configuration') json({ issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: [alg], response_types_supported: ['id_token'], subject_types_supported: ['public'] });
    else if (path === '/jwks') json({ keys: keys.slice(0, published).map((k) => k.jwk) });
    else { res.writeHead(404); res.end(); }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer, ca: ca.certPem, hits, lastHit,
    async sign(claims, opts = {}) {
      const key = opts.key ?? current;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, iat: now, exp: now + 3600, ...claims })
        .setProtectedHeader({ alg: opts.alg ?? key.alg, kid: opts.kid ?? key.kid, typ: 'JWT' })
        .sign(key.privateKey);
    },
    async rotate(publish = true) {
      const k = await newKey(alg, keys.length);
      keys.push(k);
      if (publish) { published = keys.length; current = k; }
      return k;
    },
    publishAll() { published = keys.length; },
    async stop() { server.closeAllConnections(); await new Promise((r) => server.close(r)); },
  };
}
