/**
 * Service account tokens without a server: issue → authenticate (first use asynchronous, then
 * served from the verified-token cache synchronously), expiry of a cached token, uid binding,
 * and kcp's scoping of foreign service accounts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { ServiceAccountTokens, serviceAccountClusterMismatch, type ObjectLookup } from '../../src/auth/serviceaccounts.js';
import type { CacheEntry } from '../../src/storage/watchcache.js';

const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** ServiceAccounts in memory, keyed `<cluster>/<ns>/<name>`. */
function objects(sas: Record<string, string>): ObjectLookup {
  return {
    getEntry(gr, cluster, namespace, name) {
      const uid = gr === 'core/serviceaccounts' ? sas[`${cluster}/${namespace}/${name}`] : undefined;
      if (uid === undefined) return undefined;
      const json = JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, uid } });
      return { key: `/serviceaccounts/${cluster}/${namespace}/${name}`, groupResource: gr, cluster, namespace, name, rv: 1, json, labels: undefined } as CacheEntry;
    },
  };
}

const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'bot', namespace: 'ns', uid: 'uid-1' } };

test('a token authenticates as its ServiceAccount; verified once, then from the cache', async () => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const sas: Record<string, string> = { 'root:a/ns/bot': 'uid-1' };
  const tokens = await ServiceAccountTokens.load({ privateKeyPem: keyPem, objects: objects(sas), now: () => now });
  const { token, exp } = await tokens.issue('root:a', sa, { audiences: [...tokens.audiences], expirationSeconds: 600 });
  assert.equal(exp, now / 1000 + 600);
  const first = tokens.authenticate(token);
  assert.ok(first instanceof Promise, 'first use verifies the signature asynchronously');
  const res = await first as { user: { extra: Record<string, string[]> } };
  const credentialId = res.user.extra['authentication.kubernetes.io/credential-id']?.[0] ?? '';
  assert.match(credentialId, /^JTI=[0-9a-f-]{36}$/);
  assert.deepEqual(res, { user: {
    name: 'system:serviceaccount:ns:bot', uid: 'uid-1',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated'],
    extra: { 'authentication.kcp.io/cluster-name': ['root:a'], 'authentication.kubernetes.io/credential-id': [credentialId] },
  } });
  const second = tokens.authenticate(token);
  assert.ok(!(second instanceof Promise), 'later uses are synchronous');
  assert.equal((second as { user: { name: string } }).user.name, 'system:serviceaccount:ns:bot');
  // The uid is checked on every use.
  sas['root:a/ns/bot'] = 'uid-2';
  assert.match((tokens.authenticate(token) as { error: string }).error, /does not match claim/);
  sas['root:a/ns/bot'] = 'uid-1';
  // Expiry is checked on every use, with kube's 60 s leeway.
  now += 650 * 1000;
  assert.ok('user' in (tokens.authenticate(token) as object));
  now += 20 * 1000;
  assert.deepEqual(tokens.authenticate(token), { error: 'service account token has expired' });
  // Not a JWT: not this authenticator's token.
  assert.equal(tokens.authenticate('static-token'), undefined);
});

test('serviceAccountClusterMismatch: foreign service accounts become kcp global identities', () => {
  const user = { name: 'system:serviceaccount:ns:bot', uid: 'u', groups: ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated'], extra: { 'authentication.kcp.io/cluster-name': ['root:a'] } };
  assert.equal(serviceAccountClusterMismatch(user, 'root:a'), undefined, 'local');
  assert.deepEqual(serviceAccountClusterMismatch(user, 'root:b'), {
    name: 'system:kcp:serviceaccount:root:a:ns:bot', groups: ['system:authenticated'], extra: user.extra,
  });
  assert.equal(serviceAccountClusterMismatch({ name: 'system:serviceaccount:ns:bot', groups: [] }, 'root:b'), undefined, 'no cluster extra: local (kcp)');
  assert.equal(serviceAccountClusterMismatch({ name: 'alice', groups: [], extra: user.extra }, 'root:b'), undefined, 'not a service account');
});
