/**
 * `kcp-ts crd compat` (src/cli/crdcompat.ts) on real CRDs: cert-manager's Certificate and two
 * variants of it (test/fixtures/crds/cert-manager-variants: `spec.revisionHistoryLimit` removed,
 * `spec.duration` an integer instead of a string). Exit codes, stderr and the LCD on stdout.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { crdMain } from '../../src/cli/crdcompat.js';
import { TESTDATA_CRDS } from '../helpers.js';

const ORIGINAL = join(TESTDATA_CRDS, 'cert-manager', 'cert-manager.io_certificates.yaml');
const NO_REVISION_LIMIT = join(TESTDATA_CRDS, 'cert-manager-variants', 'cert-manager.io_certificates.no-revisionhistorylimit.yaml');
const DURATION_INTEGER = join(TESTDATA_CRDS, 'cert-manager-variants', 'cert-manager.io_certificates.duration-integer.yaml');

const dir = mkdtempSync(join(tmpdir(), 'crdcompat-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(...args: string[]): { code: number; stdout: string; stderr: string } {
  let stdout = '', stderr = '';
  const code = crdMain(['compat', ...args], { stdout: (s) => { stdout += s; }, stderr: (s) => { stderr += s; } });
  return { code, stdout, stderr };
}

type Obj = Record<string, any>;
const specProps = (crd: Obj): Obj => crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;

test('the same CRD is compatible with itself: exit 0, nothing printed; with --lcd the CRD itself', () => {
  assert.deepEqual(run(ORIGINAL, ORIGINAL), { code: 0, stdout: '', stderr: '' });
  const lcd = run('--lcd', ORIGINAL, ORIGINAL);
  assert.equal(lcd.code, 0);
  assert.deepEqual(parse(lcd.stdout), parse(readFileSync(ORIGINAL, 'utf8')));
});

test('a field removed: exit 1 naming it; with --lcd the old CRD without it on stdout', () => {
  const r = run(ORIGINAL, NO_REVISION_LIMIT);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr,
    `kcp-ts crd compat: version v1 of ${ORIGINAL} and version v1 of ${NO_REVISION_LIMIT} are not compatible:\n` +
    'openAPIV3Schema.properties[spec].properties: Invalid value: ["revisionHistoryLimit"]: properties have been removed in an incompatible way\n');

  const lcd = run('--lcd', ORIGINAL, NO_REVISION_LIMIT);
  assert.equal(lcd.code, 0, lcd.stderr);
  assert.equal(lcd.stderr, '');
  const out = parse(lcd.stdout) as Obj;
  const original = parse(readFileSync(ORIGINAL, 'utf8')) as Obj;
  assert.ok('revisionHistoryLimit' in specProps(original));
  assert.ok(!('revisionHistoryLimit' in specProps(out)), 'the removed field is gone from the LCD');
  assert.deepEqual(Object.keys(specProps(out)), Object.keys(specProps(original)).filter((k) => k !== 'revisionHistoryLimit'));
  // Nothing else changed: the LCD CRD is the old one minus the field (the variant, here).
  assert.deepEqual(out, parse(readFileSync(NO_REVISION_LIMIT, 'utf8')));
  assert.equal(out.metadata.name, 'certificates.cert-manager.io');
  // kubectl's YAML layout: sequences at their key's indentation.
  assert.match(lcd.stdout, /\n  versions:\n  - additionalPrinterColumns:\n/);

  // The other way round, the new CRD has one more field: compatible.
  assert.deepEqual(run(NO_REVISION_LIMIT, ORIGINAL), { code: 0, stdout: '', stderr: '' });
});

test('a type changed: exit 1 with or without --lcd, nothing on stdout', () => {
  const line = 'openAPIV3Schema.properties[spec].properties[duration].type: Invalid value: "integer": The type changed (was "string", now "integer")\n';
  const r = run(ORIGINAL, DURATION_INTEGER);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.endsWith(`are not compatible:\n${line}`), r.stderr);
  const lcd = run('--lcd', ORIGINAL, DURATION_INTEGER);
  assert.equal(lcd.code, 1);
  assert.equal(lcd.stdout, '');
  assert.ok(lcd.stderr.endsWith(`are not compatible, even narrowed:\n${line}`), lcd.stderr);
});

test('versions: --old-version/--new-version pick one (default the first); a missing one is exit 2', () => {
  assert.equal(run('--old-version', 'v1', '--new-version=v1', ORIGINAL, NO_REVISION_LIMIT).code, 1);
  const missing = run('--new-version', 'v2', ORIGINAL, ORIGINAL);
  assert.deepEqual(missing, { code: 2, stdout: '', stderr: `kcp-ts crd compat: new CRD ${ORIGINAL}: version "v2" not found in CRD "certificates.cert-manager.io"\n` });
  // Go flag syntax, as kcp's command takes it.
  assert.equal(run('-lcd', '-old-version=v1', ORIGINAL, NO_REVISION_LIMIT).code, 0);

  const crd = parse(readFileSync(ORIGINAL, 'utf8')) as Obj;
  const v1 = crd.spec.versions[0];
  crd.spec.versions = [{ ...v1, name: 'v1alpha1', schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'string' } } } } }, v1];
  const twoVersions = join(dir, 'two-versions.json');
  writeFileSync(twoVersions, JSON.stringify(crd)); // JSON is YAML
  assert.equal(run(twoVersions, ORIGINAL).code, 1); // v1alpha1, the first, against v1
  assert.equal(run('--old-version', 'v1', twoVersions, ORIGINAL).code, 0);

  delete v1.schema;
  const noSchema = join(dir, 'no-schema.json');
  crd.spec.versions = [v1];
  writeFileSync(noSchema, JSON.stringify(crd));
  assert.equal(run(noSchema, ORIGINAL).stderr, `kcp-ts crd compat: old CRD ${noSchema}: version "v1" of CRD "certificates.cert-manager.io" has no schema\n`);
  crd.spec.versions = [];
  writeFileSync(noSchema, JSON.stringify(crd));
  assert.equal(run(ORIGINAL, noSchema).stderr, `kcp-ts crd compat: new CRD ${noSchema}: CRD "certificates.cert-manager.io" has no versions\n`);
});

test('bad input is one line on stderr and exit 2', () => {
  const write = (name: string, text: string) => { const p = join(dir, name); writeFileSync(p, text); return p; };
  const missing = join(dir, 'missing.yaml');
  assert.deepEqual(run(missing, ORIGINAL), { code: 2, stdout: '', stderr: `kcp-ts crd compat: cannot read ${missing}: ENOENT\n` });
  const notYaml = write('bad.yaml', 'apiVersion: v1\nkind: [\n');
  const r = run(ORIGINAL, notYaml);
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`^kcp-ts crd compat: ${notYaml}: not YAML: line \\d+: .+\\n$`));
  const configMap = write('cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n');
  assert.deepEqual(run(configMap, ORIGINAL), { code: 2, stdout: '', stderr: `kcp-ts crd compat: ${configMap}: not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion "v1", kind "ConfigMap")\n` });
  const two = write('two.yaml', `${readFileSync(ORIGINAL, 'utf8')}\n---\n${readFileSync(ORIGINAL, 'utf8')}`);
  assert.equal(run(two, ORIGINAL).stderr, `kcp-ts crd compat: ${two}: expected one CustomResourceDefinition document, found 2\n`);
  assert.equal(run(write('empty.yaml', ''), ORIGINAL).code, 2);
  // Nesting beyond the limit is refused before the (recursive) YAML composer runs.
  const deep = write('deep.yaml', `${'['.repeat(100_000)}${']'.repeat(100_000)}\n`);
  assert.match(run(deep, ORIGINAL).stderr, /not YAML: exceeded max depth of 500\n$/);
});

test('usage: two files, known flags, --help', () => {
  const one = run(ORIGINAL);
  assert.equal(one.code, 2);
  assert.match(one.stderr, /^kcp-ts crd compat: expected exactly two arguments, OLD.yaml and NEW.yaml \(got 1\)\n\nUsage: kcp-ts crd compat/);
  assert.match(run('--narrow', ORIGINAL, ORIGINAL).stderr, /^kcp-ts crd compat: unknown flag: --narrow\n/);
  const help = run('--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: kcp-ts crd compat \[flags\] OLD.yaml NEW.yaml\n/);
  assert.match(help.stdout, /--old-version NAME/);
  assert.equal(crdMain(['frobnicate'], { stdout: () => {}, stderr: () => {} }), 2);
});

test('kcp-ts crd compat as a process: the exit status and streams', () => {
  const bin = join(import.meta.dirname, '..', '..', 'src', 'cli', 'bin.ts');
  const r = spawnSync(process.execPath, ['--import', 'tsx', bin, 'crd', 'compat', ORIGINAL, NO_REVISION_LIMIT], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /properties\[spec\]\.properties: Invalid value: \["revisionHistoryLimit"\]: properties have been removed/);
  const help = spawnSync(process.execPath, ['--import', 'tsx', bin, '--help'], { encoding: 'utf8', timeout: 60_000 });
  assert.match(help.stdout, /kcp-ts crd compat \[flags\] OLD.yaml NEW.yaml/);
});
