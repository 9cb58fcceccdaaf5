/**
 * Isolation attacks: a user ("alice") who is cluster-admin of root:a and has nothing in its sibling
 * root:b tries every way into root:b — path tricks (encodings, dot segments, case, trailing dots,
 * double slashes, logical cluster names instead of paths, query strings), `/clusters/*` lists and
 * watches, impersonation of privileged users, groups and kcp-reserved extras, a service account
 * token of root:a, watches with forged resource versions, field and label selectors, the
 * `kcp.io/cluster` annotation on create, request headers only a front-proxy may send, writes to
 * root:b's objects, access reviews, discovery and OpenAPI. The attacks are data (one table); each
 * must be refused (400/401/403/404, never 2xx), must answer exactly what the same request to a
 * workspace that does not exist answers (existence does not leak), and no answer may contain any
 * of the random markers planted in root:b. Afterwards root:b is unchanged (same resourceVersions).
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { decodeKubernetesProtobuf } from '../../src/apimachinery/protobuf.js';
import { issueClientCert } from '../../src/pki/certs.js';
import { call, eventually, waitForRootCA, type Creds, type Res, type TestServer, useTestServer } from '../helpers.js';

let srv: TestServer;
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kcp-tokens-')), 'tokens.csv');
const ALICE_TOKEN = `alice-${randomBytes(8).toString('hex')}`;
writeFileSync(tokenFile, `${ALICE_TOKEN},alice,4001,"dev"\n`);

useTestServer((s) => { srv = s; }, { tokenAuthFile: tokenFile });

const rnd = () => randomBytes(6).toString('hex');
/** Random markers planted in root:b: no answer to alice may ever contain one. */
const M = {
  ns: `victim-${rnd()}`,
  cm: `loot-${rnd()}`,
  cmValue: `cmvalue${rnd()}`,
  secret: `vault-${rnd()}`,
  secretValue: `secretvalue${rnd()}`,
  label: `lbl${rnd()}`,
  annotation: `ann${rnd()}`,
  sa: `spy-${rnd()}`,
  group: `g${rnd()}.victim.io`,
  widget: `widget-${rnd()}`,
  defaultCm: `defaultloot-${rnd()}`,
};
const MARKERS = [...Object.values(M), Buffer.from(M.secretValue).toString('base64'), Buffer.from(M.cmValue).toString('base64')];
/** A sibling of root:b that does not exist: every attack on root:b must answer as it does. */
const GHOST = `ghost${rnd()}`;
/** A logical cluster name that does not exist, as long as root:b's (set up with it). */
let ghostCluster = '';

const WS = (path: string) => `/clusters/${path}/apis/tenancy.kcp.io/v1alpha1/workspaces`;
const caOnly = () => ({ ca: srv.creds.ca });
const aliceHeaders = (): Record<string, string> => ({ authorization: `Bearer ${ALICE_TOKEN}` });
const admin = (method: string, path: string, body?: unknown): Promise<Res> => call(srv, srv.creds, method, path, body);

/** Names learnt during set-up. */
let bCluster = '';
let aCluster = '';
let saToken = '';
let aliceCert: Creds;
let strangerProxyCert: Creds;

/**
 * One HTTPS request with the path sent byte for byte (no URL normalization: `..`, `%2e`, `//`
 * reach the server as written), like a hand-crafted client would.
 */
function raw(creds: Partial<Creds> & { ca: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<Res> {
  const u = new URL(srv.url);
  const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path, method, ca: creds.ca, cert: creds.cert, key: creds.key, agent: false,
      headers: { ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        const bytes = Buffer.concat(chunks);
        // `body` as text (markers are plain bytes in every form); `json` the object whatever the
        // form the answer took (JSON, YAML or protobuf, as the request's Accept asked).
        const text = bytes.toString();
        const type = String(res.headers['content-type'] ?? '');
        let json: unknown;
        try {
          json = type.startsWith('application/vnd.kubernetes.protobuf') ? decodeKubernetesProtobuf(bytes)
            : type.startsWith('application/yaml') ? parseYaml(text) : JSON.parse(text);
        } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json });
      });
      res.on('error', reject);
    });
    const timer = setTimeout(() => req.destroy(new Error(`${method} ${path}: no complete answer after ${timeoutMs} ms`)), timeoutMs);
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/** One attack: a request alice makes (alice's token unless `creds`/`anonymous` say otherwise). */
interface Attack {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Client certificate to present instead of alice's token. */
  creds?: () => Creds;
  /** No credentials at all. */
  anonymous?: boolean;
  /** Allowed statuses (default 400, 401, 403, 404). */
  expect?: number[];
}

const DENIED = [400, 401, 403, 404];

/** Runs an attack and returns the answer. */
function launch(a: Attack, path = a.path): Promise<Res> {
  const headers = { ...(a.anonymous || a.creds ? {} : aliceHeaders()), ...(a.headers ?? {}) };
  const creds = a.anonymous ? caOnly() : a.creds ? a.creds() : caOnly();
  return raw(creds, a.method, path, a.body, headers);
}

/** The same request aimed at a workspace that does not exist, or undefined if it names none. */
function ghostOf(path: string): string | undefined {
  // The logical cluster name first: a random name may itself begin with "b" ("root:bgnk…").
  if (bCluster && path.includes(bCluster)) return path.replaceAll(bCluster, ghostCluster);
  if (path.includes('root:b')) return path.replaceAll('root:b', `root:${GHOST}`);
  if (path.includes('root%3Ab')) return path.replaceAll('root%3Ab', `root%3A${GHOST}`);
  return undefined;
}

/** Resources whose every object in root:b alice must not see. */
const B_RESOURCES = () => [
  '/api/v1/namespaces', '/api/v1/configmaps', '/api/v1/secrets', '/api/v1/serviceaccounts',
  `/api/v1/namespaces/${M.ns}/configmaps`, `/api/v1/namespaces/${M.ns}/secrets`, '/api/v1/namespaces/default/configmaps',
  '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', '/apis/rbac.authorization.k8s.io/v1/rolebindings',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', `/apis/${M.group}/v1/widgets`,
  '/apis/tenancy.kcp.io/v1alpha1/workspaces', '/apis/core.kcp.io/v1alpha1/logicalclusters',
];

/** What makes an attack distinct: method, path, headers and credentials. */
const attackKey = (a: Attack) => `${a.method} ${a.path} ${JSON.stringify(a.headers ?? {})} ${a.creds ? 'cert' : a.anonymous ? 'anon' : 'token'} ${JSON.stringify(a.body ?? '')}`;

/** The attack table. */
function attacks(): Attack[] {
  const out: Attack[] = [];
  const seen = new Set<string>();
  // Variants that coincide (e.g. a trick that is a no-op on some target) run once.
  const add = (a: Attack) => { const k = attackKey(a); if (!seen.has(k)) { seen.add(k); out.push(a); } };
  const cmPath = `/api/v1/namespaces/${M.ns}/configmaps/${M.cm}`;
  const secretPath = `/api/v1/namespaces/${M.ns}/secrets/${M.secret}`;
  const targets = ['/api/v1/namespaces', secretPath, cmPath];

  // 1. Direct reads of root:b, by path and by logical cluster name.
  for (const prefix of ['/clusters/root:b', `/clusters/${bCluster}`]) {
    for (const r of B_RESOURCES()) {
      add({ name: `list ${prefix}${r}`, method: 'GET', path: `${prefix}${r}` });
    }
    for (const p of [cmPath, secretPath, `/api/v1/namespaces/${M.ns}`, `/api/v1/namespaces/default/configmaps/${M.defaultCm}`, `/api/v1/namespaces/${M.ns}/serviceaccounts/${M.sa}`, `/apis/${M.group}/v1/namespaces/${M.ns}/widgets/${M.widget}`]) {
      add({ name: `get ${prefix}${p}`, method: 'GET', path: `${prefix}${p}` });
    }
    add({ name: `HEAD ${prefix} secret`, method: 'HEAD', path: `${prefix}${secretPath}` });
    add({ name: `as Table ${prefix}`, method: 'GET', path: `${prefix}/api/v1/namespaces/${M.ns}/secrets`, headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
    add({ name: `as PartialObjectMetadataList ${prefix}`, method: 'GET', path: `${prefix}/api/v1/configmaps`, headers: { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' } });
    add({ name: `yaml ${prefix}`, method: 'GET', path: `${prefix}${secretPath}`, headers: { accept: 'application/yaml' } });
    add({ name: `protobuf ${prefix}`, method: 'GET', path: `${prefix}${secretPath}`, headers: { accept: 'application/vnd.kubernetes.protobuf,application/json' } });
    add({ name: `protobuf list ${prefix}`, method: 'GET', path: `${prefix}/api/v1/namespaces/${M.ns}/secrets`, headers: { accept: 'application/vnd.kubernetes.protobuf' } });
    add({ name: `protobuf watch ${prefix}`, method: 'GET', path: `${prefix}/api/v1/namespaces/${M.ns}/configmaps?watch=1&timeoutSeconds=1`, headers: { accept: 'application/vnd.kubernetes.protobuf' } });
    add({ name: `unknown resource ${prefix}`, method: 'GET', path: `${prefix}/api/v1/widgets` });
    add({ name: `unknown group ${prefix}`, method: 'GET', path: `${prefix}/apis/nope.example.com/v1/things` });
    add({ name: `subresource ${prefix}`, method: 'GET', path: `${prefix}/api/v1/namespaces/${M.ns}/status` });
    add({ name: `unknown subresource ${prefix}`, method: 'GET', path: `${prefix}${cmPath}/nope` });
  }

  // 2. Path tricks.
  const tricks = [
    '/clusters/root%3Ab', '/clusters/root%3ab', '/clusters/:root:b', '/clusters/root:b:', '/clusters/root::b', '/clusters/root:a:..:b',
    '/clusters/root:a/../root:b', '/clusters/root:a/%2e%2e/root:b', '/clusters/root:a/%2E%2E/root:b', '/clusters/root:a%2F..%2Froot:b',
    '/clusters/root:a%2froot:b', '//clusters/root:b', '/clusters//root:b', '/clusters/root:b.', '/clusters/root:b%2e', '/clusters/ROOT:B',
    '/clusters/Root:b', '/clusters/root:B', '/clusters/root:b%00', '/clusters/root:b%20', '/clusters/%72oot:b', '/clusters/root:a/clusters/root:b',
    '/clusters/root:a:b', '/clusters/root:b;root:a', '/clusters/root:b%3B', `/clusters/${bCluster.toUpperCase()}`, `/clusters/${bCluster}.`,
    `/clusters/root:${bCluster}`, `/clusters/${bCluster}:b`, '/clusters/root:a/./../root:b', '/clusters/./root:b', '/clusters/%2e/root:b',
    '/clusters/root:b%2F', '/clusters/root:a/..%2Froot:b', '/clusters/root:b\\', '/clusters/root:a%5C..%5Croot:b', '/./clusters/root:b',
    '/api/../clusters/root:b', '/clusters/system:admin/../root:b',
  ];
  for (const t of tricks) for (const p of targets) add({ name: `trick ${t}${p}`, method: 'GET', path: `${t}${p}` });
  // Without a /clusters prefix, with query-string tricks.
  for (const p of [
    `/api/v1/namespaces/${M.ns}/configmaps`, '/api/v1/secrets', `/clusters/root:a/api/v1/secrets?cluster=root:b&kcp.io%2Fcluster=${bCluster}`,
    '/clusters/root:b/api/v1/secrets?cluster=root:a', '/clusters/root:b/api/v1/secrets?/clusters/root:a', '/clusters/root:b?/clusters/root:a/api/v1/secrets',
    `/clusters/root:b/api/v1/namespaces/${M.ns}/secrets?fieldSelector=metadata.namespace%3D${M.ns}`, '/clusters/root:b/api/v1/secrets?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ',
    '/clusters/root:b/api/v1/secrets?resourceVersion=0&resourceVersionMatch=NotOlderThan',
  ]) add({ name: `query ${p}`, method: 'GET', path: p, expect: p.startsWith('/clusters/root:a/') ? [200] : DENIED });

  // 3. Wildcard: list and watch every resource across all logical clusters.
  for (const r of B_RESOURCES()) {
    add({ name: `wildcard list ${r}`, method: 'GET', path: `/clusters/*${r}` });
    add({ name: `wildcard watch ${r}`, method: 'GET', path: `/clusters/*${r}?watch=true&timeoutSeconds=1` });
  }
  add({ name: 'wildcard encoded', method: 'GET', path: '/clusters/%2A/api/v1/secrets' });
  add({ name: 'wildcard selector', method: 'GET', path: `/clusters/*/api/v1/secrets?fieldSelector=metadata.namespace%3D${M.ns}` });
  add({ name: 'wildcard label selector', method: 'GET', path: `/clusters/*/api/v1/configmaps?labelSelector=victim%3D${M.label}` });
  add({ name: 'wildcard delete collection', method: 'DELETE', path: '/clusters/*/api/v1/configmaps' });
  add({ name: 'wildcard create', method: 'POST', path: '/clusters/*/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'wild' } } });
  add({ name: 'wildcard discovery', method: 'GET', path: '/clusters/*/api/v1' });
  add({ name: 'wildcard openapi', method: 'GET', path: '/clusters/*/openapi/v2' });

  // 4. Impersonation.
  const privileged = [
    { 'impersonate-user': 'system:admin' },
    { 'impersonate-user': 'kcp-admin', 'impersonate-group': 'system:kcp:admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:masters' },
    { 'impersonate-user': 'system:kcp:logical-cluster-admin', 'impersonate-group': 'system:kcp:logical-cluster-admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:external-logical-cluster-admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:tenancy:workspace-bootstrapper' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:authenticated,system:masters' },
    { 'impersonate-user': `system:serviceaccount:${M.ns}:${M.sa}` },
    { 'impersonate-user': `system:serviceaccount:${M.ns}:${M.sa}`, 'impersonate-extra-authentication.kcp.io%2Fcluster-name': bCluster },
    { 'impersonate-user': 'x', 'impersonate-extra-authentication.kcp.io%2Fscopes': `cluster:${bCluster}` },
    { 'impersonate-user': 'x', 'impersonate-extra-authorization.kcp.io%2Fwarrant': '{"user":"kcp-admin","groups":["system:masters"]}' },
    { 'impersonate-user': 'alice', 'impersonate-uid': '0' },
  ];
  for (const h of privileged) {
    add({ name: `impersonate ${JSON.stringify(h)} on root:b`, method: 'GET', path: `/clusters/root:b${secretPath}`, headers: h });
    add({ name: `impersonate ${JSON.stringify(h)} on b by name`, method: 'GET', path: `/clusters/${bCluster}/api/v1/namespaces/${M.ns}/configmaps`, headers: h });
    add({ name: `impersonate ${JSON.stringify(h)} on wildcard`, method: 'GET', path: '/clusters/*/api/v1/secrets', headers: h });
  }
  // From inside root:a, where alice is cluster-admin (and so holds the impersonate verb): still
  // no privileged groups and no kcp-reserved extras.
  const escalations: Record<string, string>[] = [
    { 'impersonate-user': 'x', 'impersonate-group': 'system:masters' },
    { 'impersonate-user': 'system:admin', 'impersonate-group': 'system:masters' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:logical-cluster-admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:external-logical-cluster-admin' },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:kcp:tenancy:workspace-bootstrapper' },
    { 'impersonate-user': 'x', 'impersonate-group': 'dev, system:masters' },
    { 'impersonate-user': 'x', 'impersonate-extra-authentication.kcp.io%2Fscopes': `cluster:${bCluster}` },
    { 'impersonate-user': 'x', 'impersonate-extra-authentication.kcp.io%2Fcluster-name': bCluster },
    { 'impersonate-user': 'system:serviceaccount:default:default', 'impersonate-extra-authentication.kcp.io%2Fcluster-name': bCluster },
    { 'impersonate-user': 'x', 'impersonate-extra-authorization.kcp.io%2Fwarrant': '{"user":"y","groups":["system:masters"]}' },
    { 'impersonate-user': 'x', 'impersonate-extra-Authentication.KCP.io%2Fscopes': 'cluster:root' },
    { 'impersonate-user': 'x', 'impersonate-extra-experimental.tenancy.kcp.io%2Fowner': 'x' },
    // Malformed impersonation: 400.
    { 'impersonate-group': 'system:masters' },
    { 'impersonate-uid': '1' },
    { 'impersonate-extra-scopes': 'x' },
    { 'impersonate-user': 'x', 'impersonate-extra-%ZZ': 'v' },
    { 'impersonate-user': 'x', 'impersonate-extra-a%2': 'v' },
  ];
  for (const h of escalations) {
    const malformed = h['impersonate-user'] === undefined || Object.keys(h).some((k) => /%(?![0-9a-fA-F]{2})/.test(k));
    add({ name: `escalate in root:a ${JSON.stringify(h)}`, method: 'GET', path: '/clusters/root:a/api/v1/namespaces/default/configmaps', headers: h, expect: malformed ? [400] : [403] });
  }

  // 5. A service account token of root:a (cluster-admin there) used against root:b.
  const sa = () => ({ authorization: `Bearer ${saToken}` });
  for (const p of [`/clusters/root:b${secretPath}`, `/clusters/${bCluster}${cmPath}`, '/clusters/root:b/api/v1/secrets', '/clusters/root:b/api', '/clusters/*/api/v1/secrets',
    `/clusters/root:b/api/v1/namespaces/${M.ns}/serviceaccounts/${M.sa}/token`]) {
    add({ name: `sa token ${p}`, method: p.endsWith('/token') ? 'POST' : 'GET', path: p, anonymous: true, headers: sa(), body: p.endsWith('/token') ? { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} } : undefined });
  }
  add({ name: 'sa token impersonating in root:b', method: 'GET', path: `/clusters/root:b${secretPath}`, anonymous: true, headers: { ...sa(), 'impersonate-user': 'system:admin' } });
  add({ name: 'sa token with masters impersonation in root:a', method: 'GET', path: '/clusters/root:a/api/v1/secrets', anonymous: true, headers: { ...sa(), 'impersonate-user': 'x', 'impersonate-group': 'system:masters' }, expect: [403] });
  add({ name: 'sa token forged (re-signed payload)', method: 'GET', path: '/clusters/root:b/api/v1/secrets', anonymous: true, headers: { authorization: `Bearer ${forgeToken()}` }, expect: [401] });

  // 6. Watches of root:b with forged, future, old and bogus resource versions.
  for (const rv of ['0', '1', '', '999999999', '18446744073709551615', '-1', 'abc', '1e3']) {
    add({ name: `watch rv=${rv}`, method: 'GET', path: `/clusters/root:b/api/v1/namespaces/${M.ns}/secrets?watch=1&resourceVersion=${rv}&timeoutSeconds=1` });
  }
  add({ name: 'watch with sendInitialEvents', method: 'GET', path: `/clusters/root:b/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1` });
  add({ name: 'watch path form', method: 'GET', path: `/clusters/root:b/api/v1/watch/namespaces/${M.ns}/secrets?timeoutSeconds=1` });
  add({ name: 'watch by name', method: 'GET', path: `/clusters/${bCluster}/api/v1/watch/secrets?timeoutSeconds=1&resourceVersion=1` });

  // 7. Selectors.
  for (const q of [`fieldSelector=metadata.namespace%3D${M.ns}`, `fieldSelector=metadata.name%3D${M.secret}`, `labelSelector=victim%3D${M.label}`, 'labelSelector=victim', 'fieldSelector=metadata.namespace!%3Ddefault']) {
    add({ name: `selector root:b ${q}`, method: 'GET', path: `/clusters/root:b/api/v1/secrets?${q}` });
    add({ name: `selector root:b configmaps ${q}`, method: 'GET', path: `/clusters/${bCluster}/api/v1/configmaps?${q}` });
  }

  // 8. Request headers only a front-proxy's certificate may send.
  const remote = [
    { 'x-remote-user': 'kcp-admin', 'x-remote-group': 'system:masters' },
    { 'x-remote-user': 'system:admin', 'x-remote-group': 'system:kcp:admin' },
    { 'x-remote-user': 'alice', 'x-remote-group': 'system:kcp:logical-cluster-admin' },
    { 'x-remote-user': 'x', 'x-remote-extra-authentication.kcp.io%2Fscopes': 'cluster:root' },
  ];
  for (const h of remote) {
    add({ name: `x-remote with token ${JSON.stringify(h)}`, method: 'GET', path: `/clusters/root:b${secretPath}`, headers: h });
    add({ name: `x-remote with alice cert ${JSON.stringify(h)}`, method: 'GET', path: `/clusters/root:b${secretPath}`, headers: h, creds: () => aliceCert });
    add({ name: `x-remote anonymous ${JSON.stringify(h)}`, method: 'GET', path: `/clusters/root:b${secretPath}`, headers: h, anonymous: true, expect: [401] });
    add({ name: `x-remote with another front-proxy-CA cert ${JSON.stringify(h)}`, method: 'GET', path: `/clusters/root:b${secretPath}`, headers: h, creds: () => strangerProxyCert, expect: [401] });
    add({ name: `x-remote escalate in root:a ${JSON.stringify(h)}`, method: 'GET', path: '/clusters/*/api/v1/secrets', headers: h });
  }

  // 9. Writes to root:b's objects.
  const cm = (name: string, extra: object = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: M.ns, ...extra }, data: { stolen: 'yes' } });
  for (const prefix of ['/clusters/root:b', `/clusters/${bCluster}`, '/clusters/root%3Ab', '/clusters/root:a/../root:b']) {
    add({ name: `PATCH merge ${prefix}`, method: 'PATCH', path: `${prefix}${cmPath}`, body: { data: { x: 'y' } }, headers: { 'content-type': 'application/merge-patch+json' } });
    add({ name: `PATCH json ${prefix}`, method: 'PATCH', path: `${prefix}${secretPath}`, body: [{ op: 'remove', path: '/data' }], headers: { 'content-type': 'application/json-patch+json' } });
    add({ name: `PATCH apply ${prefix}`, method: 'PATCH', path: `${prefix}${cmPath}?fieldManager=evil&force=true`, body: cm(M.cm), headers: { 'content-type': 'application/apply-patch+yaml' } });
    add({ name: `PUT ${prefix}`, method: 'PUT', path: `${prefix}${cmPath}`, body: cm(M.cm) });
    add({ name: `DELETE ${prefix}`, method: 'DELETE', path: `${prefix}${secretPath}` });
    add({ name: `deletecollection ${prefix}`, method: 'DELETE', path: `${prefix}/api/v1/namespaces/${M.ns}/configmaps` });
    add({ name: `POST ${prefix}`, method: 'POST', path: `${prefix}/api/v1/namespaces/${M.ns}/configmaps`, body: cm('planted') });
    add({ name: `DELETE namespace ${prefix}`, method: 'DELETE', path: `${prefix}/api/v1/namespaces/${M.ns}` });
  }
  add({ name: 'PUT status root:b', method: 'PUT', path: `/clusters/root:b/api/v1/namespaces/${M.ns}/status`, body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: M.ns } } });
  add({ name: 'DELETE root:b LogicalCluster', method: 'DELETE', path: '/clusters/root:b/apis/core.kcp.io/v1alpha1/logicalclusters/cluster' });
  add({ name: 'POST ClusterRoleBinding root:b', method: 'POST', path: '/clusters/root:b/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', body: { metadata: { name: 'evil' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'User', name: 'alice' }] } });
  add({ name: 'TokenRequest of root:b SA', method: 'POST', path: `/clusters/root:b/api/v1/namespaces/${M.ns}/serviceaccounts/${M.sa}/token`, body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} } });
  add({ name: 'DELETE root:b workspace from root', method: 'DELETE', path: `${WS('root')}/b`, expect: [403] });
  add({ name: 'PATCH root:b workspace in root', method: 'PATCH', path: `${WS('root')}/b`, body: { spec: { cluster: aCluster } }, headers: { 'content-type': 'application/merge-patch+json' }, expect: [403] });

  // 10. Access reviews against root:b.
  const sar = (kind: string, spec: object) => ({ apiVersion: 'authorization.k8s.io/v1', kind, spec });
  const ra = { resourceAttributes: { namespace: M.ns, verb: 'get', resource: 'secrets', name: M.secret } };
  for (const prefix of ['/clusters/root:b', `/clusters/${bCluster}`]) {
    add({ name: `SelfSubjectAccessReview ${prefix}`, method: 'POST', path: `${prefix}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, body: sar('SelfSubjectAccessReview', ra) });
    add({ name: `SubjectAccessReview ${prefix}`, method: 'POST', path: `${prefix}/apis/authorization.k8s.io/v1/subjectaccessreviews`, body: sar('SubjectAccessReview', { ...ra, user: 'kcp-admin', groups: ['system:masters'] }) });
    add({ name: `SelfSubjectRulesReview ${prefix}`, method: 'POST', path: `${prefix}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews`, body: sar('SelfSubjectRulesReview', { namespace: M.ns }) });
    add({ name: `SelfSubjectReview ${prefix}`, method: 'POST', path: `${prefix}/apis/authentication.k8s.io/v1/selfsubjectreviews`, body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
  }

  // 11. Discovery and OpenAPI of root:b (its CRD must not show).
  for (const prefix of ['/clusters/root:b', `/clusters/${bCluster}`]) {
    for (const p of ['/api', '/api/v1', '/apis', `/apis/${M.group}`, `/apis/${M.group}/v1`, '/openapi/v2', '/openapi/v3', `/openapi/v3/apis/${M.group}/v1`, '/version', '/healthz', '/metrics', '/']) {
      add({ name: `discovery ${prefix}${p}`, method: 'GET', path: `${prefix}${p}`, headers: p === '/apis' ? { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' } : {} });
    }
  }
  return out;
}

/** A service account token of root:a with its payload changed to name root:b, signature kept. */
function forgeToken(): string {
  const [h, p, s] = saToken.split('.');
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
  const text = JSON.stringify(payload).replaceAll(aCluster, bCluster);
  return `${h}.${Buffer.from(text).toString('base64url')}.${s}`;
}

async function waitReady(name: string): Promise<any> {
  return eventually(`workspace root:${name} Ready`, async () => {
    const r = await admin('GET', `${WS('root')}/${name}`);
    return r.json?.status?.phase === 'Ready' ? r.json : undefined;
  }, 10_000);
}

const expectCreated = (r: Res, what: string) => assert.ok(r.status === 201 || r.status === 200, `${what}: ${r.status} ${r.body}`);

/** resourceVersion of every object of root:b alice could try to touch, by resource/namespace/name. */
async function snapshotB(): Promise<Map<string, string>> {
  const snap = new Map<string, string>();
  for (const r of ['/api/v1/namespaces', '/api/v1/configmaps', '/api/v1/secrets', '/api/v1/serviceaccounts', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    '/apis/rbac.authorization.k8s.io/v1/rolebindings', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', `/apis/${M.group}/v1/widgets`,
    '/apis/core.kcp.io/v1alpha1/logicalclusters', '/apis/tenancy.kcp.io/v1alpha1/workspaces']) {
    const res = await admin('GET', `/clusters/root:b${r}`);
    assert.equal(res.status, 200, `${r}: ${res.body}`);
    for (const o of res.json.items) snap.set(`${r} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.resourceVersion);
  }
  return snap;
}

let before0: Map<string, string>;

/** Workspaces root:a and root:b, alice, root:b's loot, alice's service account token. */
async function setUp(): Promise<void> {
  for (const name of ['a', 'b']) expectCreated(await admin('POST', WS('root'), { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name } }), `workspace ${name}`);
  aCluster = (await waitReady('a')).spec.cluster;
  bCluster = (await waitReady('b')).spec.cluster;
  assert.ok(aCluster && bCluster && aCluster !== bCluster);
  ghostCluster = `n${rnd()}${rnd()}${rnd()}${rnd()}`.slice(0, bCluster.length);
  // alice: cluster-admin of root:a only.
  expectCreated(await admin('POST', '/clusters/root:a/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: 'alice-admin' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  }), 'alice binding');
  // root:b's loot.
  const B = '/clusters/root:b';
  expectCreated(await admin('POST', `${B}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: M.ns, labels: { victim: M.label } } }), 'namespace');
  // Its kube-root-ca.crt (root CA publisher) is written before any snapshot of root:b.
  await waitForRootCA(srv, srv.creds, 'root:b', M.ns);
  expectCreated(await admin('POST', `${B}/api/v1/namespaces/${M.ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: M.cm, labels: { victim: M.label }, annotations: { note: M.annotation } }, data: { value: M.cmValue } }), 'configmap');
  expectCreated(await admin('POST', `${B}/api/v1/namespaces/default/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: M.defaultCm }, data: { value: M.cmValue } }), 'default configmap');
  expectCreated(await admin('POST', `${B}/api/v1/namespaces/${M.ns}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: M.secret, labels: { victim: M.label } }, stringData: { password: M.secretValue } }), 'secret');
  expectCreated(await admin('POST', `${B}/api/v1/namespaces/${M.ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: M.sa } }), 'service account');
  expectCreated(await admin('POST', `${B}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `widgets.${M.group}` },
    spec: { group: M.group, scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
  }), 'crd');
  await eventually('widgets served in root:b', async () => (await admin('GET', `${B}/apis/${M.group}/v1/widgets`)).status === 200);
  expectCreated(await admin('POST', `${B}/apis/${M.group}/v1/namespaces/${M.ns}/widgets`, { apiVersion: `${M.group}/v1`, kind: 'Widget', metadata: { name: M.widget }, spec: { secret: M.secretValue } }), 'widget');
  // alice's own service account in root:a, cluster-admin there, and a token for it.
  const asAlice = (method: string, path: string, body?: unknown) => call(srv, caOnly(), method, path, body, aliceHeaders());
  expectCreated(await asAlice('POST', '/clusters/root:a/api/v1/namespaces/default/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' } }), 'robot');
  expectCreated(await asAlice('POST', '/clusters/root:a/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: 'robot-admin' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: 'robot', namespace: 'default' }],
  }), 'robot binding');
  const tr = await asAlice('POST', '/clusters/root:a/api/v1/namespaces/default/serviceaccounts/robot/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
  expectCreated(tr, 'token request');
  saToken = tr.json.status.token;
  assert.equal((await call(srv, caOnly(), 'GET', '/clusters/root:a/api/v1/secrets', undefined, { authorization: `Bearer ${saToken}` })).status, 200, 'the robot is admin of root:a');
  // Client certificates: alice's from the shard's CA, a stranger's from the front-proxy CA.
  const pair = (base: string) => ({ certPem: readFileSync(join(srv.root, `${base}.crt`), 'utf8'), keyPem: readFileSync(join(srv.root, `${base}.key`), 'utf8') });
  const ac = await issueClientCert(pair('ca'), { user: 'alice', groups: ['dev'] });
  aliceCert = { ca: srv.creds.ca, cert: ac.certPem, key: ac.keyPem };
  const pc = await issueClientCert(pair('front-proxy-ca'), { user: 'alice', groups: [] });
  strangerProxyCert = { ca: srv.creds.ca, cert: pc.certPem, key: pc.keyPem };
  await eventually('default ServiceAccount of the victim namespace', async () => (await admin('GET', `${B}/api/v1/namespaces/${M.ns}/serviceaccounts/default`)).status === 200);
  before0 = await snapshotB();
  assert.ok(before0.size > 10, `root:b holds ${before0.size} objects`);
}

describe('isolation attacks', () => {
  before(setUp);

  test('alice reaches root:a and nothing of root:b', async () => {
    const own = await call(srv, caOnly(), 'GET', '/clusters/root:a/api/v1/namespaces/default/configmaps', undefined, aliceHeaders());
    assert.equal(own.status, 200, own.body);
    const other = await call(srv, caOnly(), 'GET', '/clusters/root:b/api/v1/namespaces/default/configmaps', undefined, aliceHeaders());
    assert.equal(other.status, 403, other.body);
    assert.equal(other.json.kind, 'Status');
  });

  test('every attack of the table is refused, leaks no marker and answers as for a missing workspace', async () => {
    const table = attacks();
    const denied = table.filter((a) => (a.expect ?? DENIED).every((s) => s >= 400));
    assert.ok(denied.length >= 150, `only ${denied.length} attacks`);
    assert.equal(new Set(table.map(attackKey)).size, table.length, 'attacks are distinct');
    const failures: string[] = [];
    for (const a of table) {
      let res: Res;
      try { res = await launch(a); } catch (err) { failures.push(`${a.name}: ${(err as Error).message}`); continue; }
      const expect = a.expect ?? DENIED;
      const where = `${a.name} (${a.method} ${a.path})`;
      if (!expect.includes(res.status)) failures.push(`${where}: status ${res.status}, want ${expect.join('/')}: ${res.body.slice(0, 300)}`);
      const asked = `${a.path} ${JSON.stringify(a.headers ?? {})} ${JSON.stringify(a.body ?? '')}`;
      const leaked = MARKERS.filter((m) => !asked.includes(m) && res.body.includes(m));
      if (leaked.length) failures.push(`${where}: answer contains ${leaked.join(', ')}: ${res.body.slice(0, 300)}`);
      if (res.status >= 400 && res.status !== 401 && res.json?.kind !== 'Status' && a.method !== 'HEAD') failures.push(`${where}: ${res.status} is not a Status: ${res.body.slice(0, 200)}`);
      // Existence does not leak: the same request to a missing sibling answers the same.
      const ghost = ghostOf(a.path);
      if (ghost !== undefined && expect === DENIED && res.status >= 400) {
        const twin = await launch(a, ghost);
        const norm = (s: unknown) => String(s ?? '').replaceAll(GHOST, 'X').replaceAll(ghostCluster, 'Y').replaceAll(bCluster, 'Y').replaceAll('root:b', 'root:X').replaceAll('root%3Ab', 'root%3AX');
        if (twin.status !== res.status || norm(twin.json?.message) !== norm(res.json?.message)) {
          failures.push(`${where}: existence leaks: ${res.status} ${res.json?.message} vs missing workspace ${twin.status} ${twin.json?.message}`);
        }
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${table.length} attacks failed:\n${failures.join('\n')}`);
  });

  test('inside root:a: selectors, forged resource versions and names of root:b find nothing of root:b', async () => {
    const asAlice = (path: string) => raw(caOnly(), 'GET', path, undefined, aliceHeaders());
    const bRv = Number(before0.get(`/api/v1/secrets ${M.ns}/${M.secret}`));
    assert.ok(bRv > 0);
    const probes = [
      `/clusters/root:a/api/v1/secrets?fieldSelector=metadata.namespace%3D${M.ns}`,
      `/clusters/root:a/api/v1/configmaps?fieldSelector=metadata.name%3D${M.cm}`,
      `/clusters/root:a/api/v1/configmaps?labelSelector=victim%3D${M.label}`,
      `/clusters/root:a/api/v1/namespaces/${M.ns}/configmaps`,
      `/clusters/root:a/api/v1/namespaces/${M.ns}/configmaps/${M.cm}`,
      `/clusters/root:a/api/v1/namespaces/default/configmaps/${M.defaultCm}`,
      `/clusters/root:a/apis/${M.group}/v1/widgets`,
      `/clusters/root:a/api/v1/configmaps?watch=1&resourceVersion=${bRv - 1}&timeoutSeconds=1`,
      `/clusters/root:a/api/v1/secrets?watch=1&resourceVersion=${bRv - 1}&timeoutSeconds=1&allowWatchBookmarks=true`,
      `/clusters/root:a/api/v1/namespaces/${M.ns}/secrets?watch=1&resourceVersion=1&timeoutSeconds=1`,
      '/clusters/root:a/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1',
      '/clusters/root:a/api/v1/secrets?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1',
      `/clusters/root:a/api/v1/secrets?resourceVersion=${bRv}&resourceVersionMatch=Exact`,
      `/clusters/root:a/api/v1/secrets?resourceVersion=${bRv}`,
      '/clusters/root:a/apis',
      '/clusters/root:a/openapi/v2',
    ];
    for (const p of probes) {
      const res = await asAlice(p);
      assert.ok(res.status < 500, `${p}: ${res.status} ${res.body.slice(0, 300)}`);
      const leaked = MARKERS.filter((m) => !p.includes(m) && res.body.includes(m));
      assert.deepEqual(leaked, [], `${p}: ${res.body.slice(0, 300)}`);
      if (res.status === 200 && res.json?.items) assert.equal(res.json.items.filter((o: any) => JSON.stringify(o).includes(M.label) || o.metadata?.namespace === M.ns).length, 0, p);
    }
    // A SubjectAccessReview in root:a answers for root:a only.
    const sar = await call(srv, caOnly(), 'POST', '/clusters/root:a/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'alice', resourceAttributes: { namespace: M.ns, verb: 'get', resource: 'secrets', name: M.secret } },
    }, aliceHeaders());
    assert.equal(sar.status, 201, sar.body);
  });

  test('the kcp.io/cluster annotation and workspace annotations set by alice in root:a do not reach root:b', async () => {
    const asAlice = (method: string, path: string, body?: unknown) => call(srv, caOnly(), method, path, body, aliceHeaders());
    for (const [i, value] of [bCluster, 'root:b', '*'].entries()) {
      const res = await asAlice('POST', '/clusters/root:a/api/v1/namespaces/default/configmaps', {
        apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `annotated-${i}`, annotations: { 'kcp.io/cluster': value, 'tenancy.kcp.io/workspace': 'root:b' } }, data: { a: '1' },
      });
      assert.ok(res.status === 201 || (res.status >= 400 && res.status < 500), `${value}: ${res.status} ${res.body}`);
      if (res.status === 201) assert.equal((await admin('GET', `/clusters/root:a/api/v1/namespaces/default/configmaps/annotated-${i}`)).status, 200, 'created in root:a');
      assert.equal((await admin('GET', `/clusters/root:b/api/v1/namespaces/default/configmaps/annotated-${i}`)).status, 404, 'not in root:b');
    }
    // A namespace of root:b given in the body: the URL's namespace (of root:a) decides or 400.
    const ns = await asAlice('POST', '/clusters/root:a/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ns-trick', namespace: M.ns } });
    assert.ok(ns.status >= 400 && ns.status < 500, ns.body);
    // A Workspace in root:a asking for root:b's logical cluster, by spec or by annotation.
    const byspec = await asAlice('POST', WS('root:a'), { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name: 'hijack' }, spec: { cluster: bCluster } });
    assert.equal(byspec.status, 403, byspec.body);
    const wsRes = await asAlice('POST', WS('root:a'), {
      apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace',
      metadata: { name: 'hijack2', annotations: { 'internal.tenancy.kcp.io/cluster': bCluster, 'internal.tenancy.kcp.io/shard': 'root' } },
    });
    if (wsRes.status === 201) {
      const ready = await eventually('hijack2 Ready', async () => {
        const r = await admin('GET', `${WS('root:a')}/hijack2`);
        return r.json?.status?.phase === 'Ready' ? r.json : undefined;
      }, 10_000);
      assert.notEqual(ready.spec.cluster, bCluster, 'the workspace does not take root:b\'s logical cluster');
      assert.equal((await asAlice('GET', '/clusters/root:a:hijack2/api/v1/secrets')).body.includes(M.secretValue), false);
      assert.equal((await asAlice('DELETE', `${WS('root:a')}/hijack2`)).status, 200);
      await eventually('hijack2 deleted', async () => (await admin('GET', `${WS('root:a')}/hijack2`)).status === 404, 10_000);
    } else {
      assert.ok(wsRes.status >= 400 && wsRes.status < 500, wsRes.body);
    }
    const lc = await admin('GET', '/clusters/root:b/apis/core.kcp.io/v1alpha1/logicalclusters/cluster');
    assert.equal(lc.status, 200);
    assert.equal(lc.json.metadata.deletionTimestamp, undefined, 'root:b is not being deleted');
  });

  test('alice cannot re-path her workspace\'s LogicalCluster onto root:b', async () => {
    const LC = '/clusters/root:a/apis/core.kcp.io/v1alpha1/logicalclusters/cluster';
    const attempts: Array<[string, unknown, string]> = [
      ['PATCH', { metadata: { annotations: { 'kcp.io/path': 'root:b' } } }, 'application/merge-patch+json'],
      ['PATCH', { metadata: { annotations: { 'kcp.io/path': `root:${GHOST}` } } }, 'application/merge-patch+json'],
      ['PATCH', { metadata: { annotations: { 'internal.tenancy.kcp.io/type': 'root:root' } } }, 'application/merge-patch+json'],
      ['PATCH', { metadata: { labels: { 'tenancy.kcp.io/workspace': 'b' } } }, 'application/merge-patch+json'],
    ];
    for (const [method, body, ct] of attempts) {
      const res = await raw(caOnly(), method, LC, body, { ...aliceHeaders(), 'content-type': ct });
      assert.ok(res.status === 403 || res.status === 422, `${JSON.stringify(body)}: ${res.status} ${res.body.slice(0, 300)}`);
    }
    const current = await admin('GET', LC);
    const put = await raw(caOnly(), 'PUT', LC, { ...current.json, metadata: { ...current.json.metadata, annotations: { ...current.json.metadata.annotations, 'kcp.io/path': 'root:b' } } }, aliceHeaders());
    assert.ok(put.status === 403 || put.status === 422, `PUT: ${put.status} ${put.body.slice(0, 300)}`);
    // root:b still leads to root:b's logical cluster, root:a to alice's.
    const secret = await admin('GET', `/clusters/root:b/api/v1/namespaces/${M.ns}/secrets/${M.secret}`);
    assert.equal(secret.status, 200, secret.body);
    assert.equal((await admin('GET', LC)).json.metadata.annotations['kcp.io/path'], 'root:a');
  });

  test('root:b is unchanged after all attacks', async () => {
    const after0 = await snapshotB();
    const changed = [...new Set([...before0.keys(), ...after0.keys()])].filter((k) => before0.get(k) !== after0.get(k));
    assert.deepEqual(changed, []);
    const secret = await admin('GET', `/clusters/root:b/api/v1/namespaces/${M.ns}/secrets/${M.secret}`);
    assert.equal(Buffer.from(secret.json.data.password, 'base64').toString(), M.secretValue);
  });
});
