import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOpenAPIV2 } from '../../src/apis/openapi.js';
import { BUILTIN_RESOURCES } from '../../src/apis/builtin.js';
import { encodeOpenAPIV2Protobuf, jsonToYaml } from '../../src/apis/openapiv2proto.js';
import { versionedKubectl } from '../helpers.js';

type Json = Record<string, any>;

/**
 * Content-Type of the protobuf response. kube-openapi answers both the deprecated Accept form
 * (`...spec.v2@v1.0+protobuf`, the one kubectl 1.27/1.28 send) and the new one with
 * `application/com.github.proto-openapi.spec.v2.v1.0+protobuf`: client-go parses the response
 * Content-Type with Go's `mime.ParseMediaType`, which rejects the `@` form ("mime: unexpected
 * content after media subtype").
 */
const PROTO_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

// ---------------------------------------------------------------------------------------------
// A tiny protobuf reader for structural assertions.

interface Field {
  num: number;
  wt: number;
  int?: bigint;
  bytes?: Buffer;
  dbl?: number;
}

function decode(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let r = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      r |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return r;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const num = key >> 3;
    const wt = key & 7;
    if (wt === 0) out.push({ num, wt, int: varint() });
    else if (wt === 1) {
      out.push({ num, wt, dbl: buf.readDoubleLE(i) });
      i += 8;
    } else if (wt === 2) {
      const len = Number(varint());
      out.push({ num, wt, bytes: buf.subarray(i, i + len) });
      i += len;
    } else throw new Error(`unexpected wire type ${wt}`);
  }
  assert.equal(i, buf.length);
  return out;
}

const all = (buf: Buffer, num: number) => decode(buf).filter((f) => f.num === num);
const one = (buf: Buffer, num: number): Field | undefined => all(buf, num)[0];
const sub = (buf: Buffer, num: number): Buffer => {
  const f = one(buf, num);
  assert.ok(f?.bytes, `field ${num} present`);
  return f.bytes;
};
const text = (buf: Buffer, num: number): string | undefined => one(buf, num)?.bytes?.toString('utf8');
/** Finds the `Named*` entry (name=1, value=2) with the given name among repeated field `num`. */
const namedEntry = (buf: Buffer, num: number, name: string): Buffer | undefined => {
  for (const f of all(buf, num)) if (text(f.bytes!, 1) === name) return sub(f.bytes!, 2);
  return undefined;
};

const configMapDesc = BUILTIN_RESOURCES.find((d) => d.group === '' && d.kind === 'ConfigMap')!;

test('Document top-level fields, definitions and vendor extensions', () => {
  const doc = buildOpenAPIV2([configMapDesc]);
  const pb = encodeOpenAPIV2Protobuf(doc);
  assert.equal(text(pb, 1), '2.0');
  const info = sub(pb, 2);
  assert.equal(text(info, 1), 'Kubernetes');
  assert.equal(text(info, 2), 'unversioned');
  // security: [{BearerToken: []}] → SecurityRequirement{NamedStringArray{name}}
  const sec = all(pb, 12);
  assert.equal(sec.length, 1);
  assert.equal(text(sub(sec[0]!.bytes!, 1), 1), 'BearerToken');
  // securityDefinitions: apiKey → oneof field 2.
  const secDef = namedEntry(sub(pb, 13), 1, 'BearerToken')!;
  const apiKey = sub(secDef, 2);
  assert.equal(text(apiKey, 1), 'apiKey');
  assert.equal(text(apiKey, 2), 'authorization');
  assert.equal(text(apiKey, 3), 'header');

  const defs = sub(pb, 9);
  const cm = namedEntry(defs, 1, 'io.k8s.api.core.v1.ConfigMap')!;
  assert.ok(cm, 'ConfigMap definition present');
  assert.deepEqual(all(sub(cm, 22), 1).map((f) => f.bytes!.toString()), ['object']);
  const props = sub(cm, 25);
  const data = namedEntry(props, 1, 'data')!;
  // additionalProperties: {type: string, default: ""} → AdditionalPropertiesItem.schema
  const ap = sub(data, 21);
  const apSchema = sub(ap, 1);
  assert.deepEqual(all(sub(apSchema, 22), 1).map((f) => f.bytes!.toString()), ['string']);
  const metadata = namedEntry(props, 1, 'metadata')!;
  assert.match(text(metadata, 1)!, /^#\/definitions\/io\.k8s\.apimachinery\.pkg\.apis\.meta\.v1\.ObjectMeta$/);
  const gvk = namedEntry(cm, 31, 'x-kubernetes-group-version-kind')!;
  assert.equal(text(gvk, 2), '- group: ""\n  kind: ConfigMap\n  version: v1\n');

  // Paths and operations.
  const paths = sub(pb, 8);
  const item = namedEntry(paths, 2, '/api/v1/namespaces/{namespace}/configmaps/{name}')!;
  const patch = sub(item, 8);
  assert.equal(text(patch, 5), 'patchCoreV1NamespacedConfigMap');
  const opGvk = namedEntry(patch, 13, 'x-kubernetes-group-version-kind')!;
  assert.equal(text(opGvk, 2), 'group: ""\nkind: ConfigMap\nversion: v1\n');
  const params = all(patch, 8).map((f) => f.bytes!);
  // First: body parameter (ParametersItem.parameter.body_parameter).
  const body = sub(sub(params[0]!, 1), 1);
  assert.equal(text(body, 2), 'body');
  assert.equal(text(body, 3), 'body');
  assert.equal(one(body, 4)?.int, 1n);
  assert.equal(text(sub(body, 5), 1), '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch');
  const queryNames = params.slice(1).map((p) => text(sub(sub(sub(p, 1), 2), 3), 4));
  assert.ok(queryNames.includes('fieldValidation'));
  // Path-level parameters: name (path, required) first.
  const pathParam = sub(sub(sub(all(item, 9)[0]!.bytes!, 1), 2), 4);
  assert.equal(one(pathParam, 1)?.int, 1n);
  assert.equal(text(pathParam, 2), 'path');
  assert.equal(text(pathParam, 4), 'name');
  assert.equal(text(pathParam, 5), 'string');
  // Responses: "200" → Response{schema: SchemaItem.schema{_ref}}; "401" description only.
  const responses = sub(patch, 9);
  const r200 = sub(namedEntry(responses, 1, '200')!, 1);
  assert.equal(text(r200, 1), 'OK');
  assert.equal(text(sub(sub(r200, 2), 1), 1), '#/definitions/io.k8s.api.core.v1.ConfigMap');
  assert.equal(text(sub(namedEntry(responses, 1, '401')!, 1), 1), 'Unauthorized');
});

test('schema edge cases: boolean additionalProperties, enum, numbers, $ref parameters', () => {
  const pb = encodeOpenAPIV2Protobuf({
    swagger: '2.0',
    info: { title: 't', version: 'v' },
    paths: { '/x': { get: { parameters: [{ $ref: '#/parameters/p' }], responses: {} } }, 'x-top': true },
    definitions: {
      S: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: { n: { type: 'number', maximum: 2.5, minimum: -1, maxLength: 3 }, e: { enum: ['a', 'yes', 1] }, i: { items: { type: 'string' } } },
        required: ['n'],
      },
    },
  });
  const s = namedEntry(sub(pb, 9), 1, 'S')!;
  assert.deepEqual(all(sub(s, 22), 1).map((f) => f.bytes!.toString()), ['object', 'null']);
  const ap = decode(sub(s, 21));
  assert.deepEqual(ap, [{ num: 2, wt: 0, int: 0n }]);
  assert.deepEqual(all(s, 19).map((f) => f.bytes!.toString()), ['n']);
  const props = sub(s, 25);
  const n = namedEntry(props, 1, 'n')!;
  assert.equal(one(n, 7)?.dbl, 2.5);
  assert.equal(one(n, 9)?.dbl, -1);
  assert.equal(one(n, 11)?.int, 3n);
  const e = namedEntry(props, 1, 'e')!;
  assert.deepEqual(all(e, 20).map((f) => text(f.bytes!, 2)), ['a\n', '"yes"\n', '1\n']);
  const i = namedEntry(props, 1, 'i')!;
  assert.deepEqual(all(sub(sub(sub(i, 23), 1), 22), 1).map((f) => f.bytes!.toString()), ['string']);
  const paths = sub(pb, 8);
  assert.equal(text(all(paths, 1)[0]!.bytes!, 1), 'x-top');
  const ref = sub(sub(namedEntry(paths, 2, '/x')!, 2), 8);
  assert.equal(text(sub(ref, 2), 1), '#/parameters/p');
});

test('jsonToYaml quotes ambiguous scalars and nests block collections', () => {
  assert.equal(jsonToYaml({ a: [1, 'b'], c: {}, d: 'true', e: 'x y', f: null }), 'a:\n  - 1\n  - b\nc: {}\nd: "true"\ne: "x y"\nf: null\n');
  assert.equal(jsonToYaml([{ group: 'apps', kind: 'Deployment' }]), '- group: apps\n  kind: Deployment\n');
});

// ---------------------------------------------------------------------------------------------
// The real check: kubectl 1.27 downloads /openapi/v2 only as protobuf.

function findKubectl127(): string | undefined {
  try { return versionedKubectl('1.27'); } catch { return undefined; }
}

interface Recorded {
  method: string;
  url: string;
  body: string;
}

async function startFakeServer(openapi: Buffer): Promise<{ port: number; requests: Recorded[]; close: () => Promise<void> }> {
  const requests: Recorded[] = [];
  const json = (res: ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse, message: string, details?: Json) =>
    json(res, 404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'NotFound', details, code: 404 });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push({ method: req.method ?? '', url: req.url ?? '', body });
      const path = url.pathname;
      if (req.method === 'GET' && path === '/api') {
        return json(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] });
      }
      if (req.method === 'GET' && path === '/api/v1') {
        return json(res, 200, {
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [
            {
              name: 'configmaps',
              singularName: 'configmap',
              namespaced: true,
              kind: 'ConfigMap',
              verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
              shortNames: ['cm'],
            },
          ],
        });
      }
      if (req.method === 'GET' && path === '/apis') return json(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
      if (req.method === 'GET' && path === '/version') {
        return json(res, 200, { major: '1', minor: '27', gitVersion: 'v1.27.0', platform: 'linux/amd64' });
      }
      if (req.method === 'GET' && path === '/openapi/v2') {
        res.writeHead(200, { 'Content-Type': PROTO_TYPE });
        return res.end(openapi);
      }
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps(?:\/([^/]+))?$/.exec(path);
      if (m && req.method === 'GET' && m[2]) {
        return notFound(res, `configmaps "${m[2]}" not found`, { name: m[2], kind: 'configmaps' });
      }
      if (m && req.method === 'POST' && !m[2]) {
        const obj = JSON.parse(body) as Json;
        obj.metadata = { ...obj.metadata, namespace: m[1], resourceVersion: '1', uid: '6a1c9f0e-0000-4000-8000-000000000001' };
        return json(res, 201, obj);
      }
      return notFound(res, 'the server could not find the requested resource');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Removes the `fieldValidation` query parameter everywhere, so kubectl falls back to client-side validation. */
function withoutFieldValidation(doc: Json): Json {
  const copy = structuredClone(doc) as Json;
  for (const item of Object.values(copy.paths as Json) as Json[]) {
    for (const op of Object.values(item)) {
      if (op && typeof op === 'object' && Array.isArray((op as Json).parameters)) {
        (op as Json).parameters = (op as Json).parameters.filter((p: Json) => p.name !== 'fieldValidation');
      }
    }
  }
  return copy;
}

const VALID_CM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: good
data:
  a: b
`;
const INVALID_CM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: bad
dataa:
  x: y
`;

test('kubectl 1.27 validates against the protobuf /openapi/v2 (client-side)', { timeout: 120_000 }, async () => {
  const kubectl = findKubectl127();
  assert.ok(kubectl, 'kubectl.1.27 not found (looked on PATH and beside kubectl)');
  const doc = withoutFieldValidation(buildOpenAPIV2([configMapDesc]));
  const srv = await startFakeServer(encodeOpenAPIV2Protobuf(doc));
  const tmp = mkdtempSync(join(tmpdir(), 'kcp-openapiv2proto-'));
  try {
    const env = { PATH: process.env.PATH, HOME: tmp, KUBECONFIG: join(tmp, 'kubeconfig-missing') };
    const base = ['--server', `http://127.0.0.1:${srv.port}`, '--cache-dir', join(tmp, 'cache'), '-n', 'default'];
    writeFileSync(join(tmp, 'good.yaml'), VALID_CM);
    writeFileSync(join(tmp, 'bad.yaml'), INVALID_CM);

    const good = await run(kubectl, [...base, 'apply', '-f', join(tmp, 'good.yaml')], env);
    assert.equal(good.code, 0, `apply good failed:\n${good.stdout}\n${good.stderr}`);
    assert.match(good.stdout, /configmap\/good created/);
    const v2 = srv.requests.filter((r) => r.url.startsWith('/openapi/v2'));
    assert.ok(v2.length > 0, 'kubectl fetched /openapi/v2');
    const post = srv.requests.find((r) => r.method === 'POST');
    assert.ok(post, 'kubectl created the ConfigMap');
    assert.deepEqual(JSON.parse(post.body).data, { a: 'b' });

    const posts = srv.requests.filter((r) => r.method === 'POST').length;
    const bad = await run(kubectl, [...base, 'apply', '-f', join(tmp, 'bad.yaml')], env);
    assert.notEqual(bad.code, 0, `apply bad unexpectedly succeeded:\n${bad.stdout}`);
    assert.match(bad.stderr, /unknown field "dataa"/);
    assert.match(bad.stderr, /io\.k8s\.api\.core\.v1\.ConfigMap/);
    assert.equal(srv.requests.filter((r) => r.method === 'POST').length, posts, 'invalid object never sent');
  } finally {
    await srv.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('kubectl 1.27 detects server-side field validation from the protobuf operations', { timeout: 120_000 }, async () => {
  const kubectl = findKubectl127();
  assert.ok(kubectl, 'kubectl.1.27 not found (looked on PATH and beside kubectl)');
  const srv = await startFakeServer(encodeOpenAPIV2Protobuf(buildOpenAPIV2([configMapDesc])));
  const tmp = mkdtempSync(join(tmpdir(), 'kcp-openapiv2proto-'));
  try {
    const env = { PATH: process.env.PATH, HOME: tmp, KUBECONFIG: join(tmp, 'kubeconfig-missing') };
    const base = ['--server', `http://127.0.0.1:${srv.port}`, '--cache-dir', join(tmp, 'cache'), '-n', 'default'];
    writeFileSync(join(tmp, 'good.yaml'), VALID_CM);
    const good = await run(kubectl, [...base, 'apply', '-f', join(tmp, 'good.yaml')], env);
    assert.equal(good.code, 0, `apply failed:\n${good.stdout}\n${good.stderr}`);
    const post = srv.requests.find((r) => r.method === 'POST');
    assert.ok(post, 'kubectl created the ConfigMap');
    assert.match(post.url, /fieldValidation=Strict/);

    // The PATCH operation's x-kubernetes-group-version-kind and its fieldValidation query
    // parameter were read from the protobuf, so kubectl skips client-side validation and leaves
    // the unknown field to the server (this fake server accepts anything).
    writeFileSync(join(tmp, 'bad.yaml'), INVALID_CM);
    const bad = await run(kubectl, [...base, 'apply', '-f', join(tmp, 'bad.yaml')], env);
    assert.equal(bad.code, 0, `apply bad failed:\n${bad.stdout}\n${bad.stderr}`);
    const badPost = srv.requests.find((r) => r.method === 'POST' && r.url.includes('fieldValidation=Strict') && JSON.parse(r.body).dataa);
    assert.ok(badPost, 'the object with the unknown field was sent to the server with fieldValidation=Strict');

    // kubectl 1.27 explain tries /openapi/v3 first; this server answers it 404, so kubectl falls
    // back to the protobuf /openapi/v2 and the field description can only come from there.
    const before = srv.requests.length;
    const explain = await run(kubectl, [...base, 'explain', 'configmap.data'], env);
    assert.ok(srv.requests.slice(before).some((r) => r.url.startsWith('/openapi/v2')), 'explain fetched /openapi/v2');
    assert.equal(explain.code, 0, `explain failed:\n${explain.stdout}\n${explain.stderr}`);
    assert.match(explain.stdout, /KIND:\s+ConfigMap/);
    assert.match(explain.stdout, /FIELD:\s+data <map\[string\]string>/);
    assert.match(explain.stdout, /UTF-8 configuration values/);
  } finally {
    await srv.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});
