/**
 * client-go's stock typed clients against a workspace: `typedclients` (test/tools/e2e/cmd/typedclients,
 * built by test/tools/build.sh) uses the apiextensions clientset and the admissionregistration
 * v1/v1beta1 clients of k8s.io/client-go v0.34 at their default content type — protobuf, which
 * their generated code prefers for built-in kinds (gentype.PrefersProtobuf) — to create, get, list,
 * update, watch (ADDED, MODIFIED, DELETED) and delete a CustomResourceDefinition, a
 * ValidatingAdmissionPolicy and its binding, a MutatingAdmissionPolicy and its binding and a
 * ValidatingWebhookConfiguration, and requires protobuf answers as kube-apiserver gives them. Any
 * Go operator that installs CRDs or policies with these clients depends on exactly this.
 *
 * A missing binary fails the test with how to build it (never a skip).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { createWorkspace, useTestServer, type TestServer } from '../helpers.js';
import { e2eToolPaths, missingToolMessage } from '../upstream/tools.js';

let srv: TestServer;
// MutatingAdmissionPolicy is beta in kube 1.34, served when --runtime-config turns it on.
useTestServer((s) => { srv = s; }, { runtimeConfig: { 'admissionregistration.k8s.io/v1beta1': true } });

test('client-go typed apiextensions and admissionregistration clients (protobuf): create, get, list, watch, update, delete', { timeout: 120_000 }, async () => {
  const { typedClients } = e2eToolPaths();
  assert.ok(existsSync(typedClients), missingToolMessage(typedClients, 'typedclients'));
  await createWorkspace(srv, 'typed');
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'typedclients-')), 'kubeconfig');
  writeFileSync(kubeconfig, buildKubeconfig({
    clusters: [{ name: 'typed', server: `${srv.url}/clusters/root:typed`, caPem: srv.creds.ca }],
    users: [{ name: 'admin', certPem: srv.creds.cert, keyPem: srv.creds.key }],
    contexts: [{ name: 'typed', cluster: 'typed', user: 'admin' }],
    currentContext: 'typed',
  }), { mode: 0o600 });
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(typedClients, ['--kubeconfig', kubeconfig, '--timeout', '90s'], { timeout: 110_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
  assert.equal(run.code, 0, `typedclients failed:\n${run.stderr}${run.stdout}`);
  assert.match(run.stdout, /all checks passed/);
});
