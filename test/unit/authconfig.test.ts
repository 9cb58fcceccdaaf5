/**
 * AuthenticationConfiguration validation (kube's k8s.io/apiserver validation.go field paths and
 * messages) and the `--oidc-*` flags' mapping (kube-apiserver options/authentication.go).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthenticationConfigError, authenticationConfigFromFlags, authenticationFromFlagValues, validateAuthenticationConfiguration, type JWTAuthenticatorConfig } from '../../src/auth/authconfig.js';

const base = (jwt: unknown[], extra: Record<string, unknown> = {}) => ({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration', jwt, ...extra });
const good = (over: Partial<JWTAuthenticatorConfig> = {}): JWTAuthenticatorConfig => ({
  issuer: { url: 'https://idp.example.com', audiences: ['kcp'] }, claimMappings: { username: { claim: 'sub', prefix: '' } }, ...over,
});
function errorsOf(doc: unknown, disallowed: string[] = []): string[] {
  try { validateAuthenticationConfiguration(doc, disallowed); } catch (err) { assert.ok(err instanceof AuthenticationConfigError, String(err)); return err.errors; }
  return [];
}

describe('AuthenticationConfiguration validation', () => {
  test('a valid configuration passes (v1, v1beta1, v1alpha1)', () => {
    for (const v of ['v1', 'v1beta1', 'v1alpha1']) assert.deepEqual(errorsOf({ ...base([good()]), apiVersion: `apiserver.config.k8s.io/${v}` }), []);
    assert.deepEqual(errorsOf(base([])), []);
  });

  test('issuer: https only, no query/fragment/user, not a service-account issuer, discoveryURL differs', () => {
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'http://u:p@idp?x=1', audiences: ['kcp'] } })])), [
      'jwt[0].issuer.url: Invalid value: "http://u:p@idp?x=1": URL scheme must be https',
      'jwt[0].issuer.url: Invalid value: "http://u:p@idp?x=1": URL must not contain a username or password',
      'jwt[0].issuer.url: Invalid value: "http://u:p@idp?x=1": URL must not contain a query',
    ]);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://kcp.default.svc', audiences: ['kcp'] } })]), ['https://kcp.default.svc']), [
      'jwt[0].issuer.url: Invalid value: "https://kcp.default.svc": URL must not overlap with disallowed issuers: [https://kcp.default.svc]',
    ]);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://idp', discoveryURL: 'https://idp/', audiences: ['kcp'] } })])), [
      'jwt[0].issuer.discoveryURL: Invalid value: "https://idp/": discoveryURL must be different from URL',
    ]);
    assert.deepEqual(errorsOf(base([good(), good()])), ['jwt[1].issuer.url: Duplicate value: "https://idp.example.com"']);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: '', audiences: ['kcp'] } })])), ['jwt[0].issuer.url: Required value']);
  });

  test('audiences and audienceMatchPolicy', () => {
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://idp', audiences: [] } })])), ['jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required']);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://idp', audiences: ['a', 'a'] } })])), [
      'jwt[0].issuer.audiences[1]: Duplicate value: "a"',
      'jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences',
    ]);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://idp', audiences: ['a'], audienceMatchPolicy: 'MatchAll' } })])), [
      'jwt[0].issuer.audienceMatchPolicy: Invalid value: "MatchAll": audienceMatchPolicy must be empty or MatchAny for single audience',
    ]);
    assert.deepEqual(errorsOf(base([good({ issuer: { url: 'https://idp', audiences: ['a'], certificateAuthority: 'not a pem' } })])), [
      'jwt[0].issuer.certificateAuthority: Invalid value: "<omitted>": data does not contain any valid RSA or ECDSA certificates',
    ]);
  });

  test('claim mappings: claim or expression, prefix with claim, CEL compiles, extra keys, email_verified', () => {
    const m = (claimMappings: unknown) => errorsOf(base([{ ...good(), claimMappings }]));
    assert.deepEqual(m({ username: {} }), ['jwt[0].claimMappings.username: Required value: claim or expression is required']);
    assert.deepEqual(m({ username: { claim: 'sub' } }), ['jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing']);
    assert.deepEqual(m({ username: { claim: 'sub', expression: 'claims.sub', prefix: '' } }), ['jwt[0].claimMappings.username: Invalid value: "": claim and expression can\'t both be set']);
    assert.deepEqual(m({ username: { expression: 'claims.sub', prefix: 'x' } }), ['jwt[0].claimMappings.username.prefix: Invalid value: "x": may not be specified when expression is set']);
    const [compile] = m({ username: { expression: 'claims.sub +' } });
    assert.match(compile!, /^jwt\[0\]\.claimMappings\.username\.expression: Invalid value: "claims\.sub \+": compilation failed: /);
    assert.deepEqual(m({ username: { expression: 'claims.email' } }), [
      'jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression',
    ]);
    assert.deepEqual(m({ username: { expression: 'claims.email_verified ? claims.email : ""' } }), []);
    const extra = m({ username: { claim: 'sub', prefix: '' }, extra: [
      { key: 'example.com/A', valueExpression: 'claims.a' }, { key: 'kubernetes.io/b', valueExpression: 'claims.b' },
      { key: 'example.com/c', valueExpression: '' }, { key: 'plain', valueExpression: 'claims.d' }, { key: 'example.com/c', valueExpression: 'claims.e' },
    ] });
    assert.deepEqual(extra, [
      'jwt[0].claimMappings.extra[0].key: Invalid value: "example.com/A": must be lowercase',
      'jwt[0].claimMappings.extra[1].key: Invalid value: "kubernetes.io/b": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use',
      'jwt[0].claimMappings.extra[2].valueExpression: Required value',
      'jwt[0].claimMappings.extra[3].key: Invalid value: "plain": must be a domain-prefixed path (such as "acme.io/foo")',
      'jwt[0].claimMappings.extra[4].key: Duplicate value: "example.com/c"',
    ]);
  });

  test('claim and user validation rules', () => {
    const rules = (claimValidationRules: unknown, userValidationRules: unknown = []) => errorsOf(base([{ ...good(), claimValidationRules, userValidationRules }]));
    assert.deepEqual(rules([{}]), ['jwt[0].claimValidationRules[0]: Required value: claim or expression is required']);
    assert.deepEqual(rules([{ claim: 'a', expression: 'true' }]), ['jwt[0].claimValidationRules[0]: Invalid value: "a": claim and expression can\'t both be set']);
    assert.deepEqual(rules([{ claim: 'a', message: 'm' }, { claim: 'a' }]), [
      'jwt[0].claimValidationRules[0].message: Invalid value: "m": may not be specified when claim is set',
      'jwt[0].claimValidationRules[1].claim: Duplicate value: "a"',
    ]);
    assert.deepEqual(rules([{ expression: 'true', requiredValue: 'x' }]), ['jwt[0].claimValidationRules[0].requiredValue: Invalid value: "x": may not be specified when expression is set']);
    assert.deepEqual(rules([], [{ expression: '' }, { expression: 'true' }, { expression: 'true' }]), [
      'jwt[0].userValidationRules[0].expression: Required value',
      'jwt[0].userValidationRules[2].expression: Duplicate value: "true"',
    ]);
  });

  test('strict decoding: unknown fields, wrong kinds; unsupported features are refused by name', () => {
    assert.deepEqual(errorsOf({ ...base([{ ...good(), isuer: {} }]), kind: 'Foo' }), [
      'kind: Unsupported value: "Foo": supported values: "AuthenticationConfiguration"',
      'jwt[0].isuer: unknown field',
    ]);
    assert.deepEqual(errorsOf(base([], { anonymous: { enabled: true } })), ['anonymous: Invalid value: "": anonymous authentication is not supported by kcp-ts']);
    assert.deepEqual(errorsOf(base(Array.from({ length: 65 }, (_, i) => good({ issuer: { url: `https://idp/${i}`, audiences: ['a'] } })))), ['jwt: Too many: 65: must have at most 64 items']);
    assert.match(new AuthenticationConfigError(['a', 'b']).message, /^invalid authentication configuration: \[a, b\]$/);
  });
});

describe('--oidc-* flags', () => {
  test('mapped as kube-apiserver: prefix defaults, groups, required claims, RS256', () => {
    const cfg = authenticationConfigFromFlags(undefined, { issuerURL: 'https://idp', clientID: 'kcp', groupsClaim: 'groups', groupsPrefix: 'g:', requiredClaims: { hd: 'example.com' } })!;
    assert.deepEqual(cfg.jwt[0], {
      issuer: { url: 'https://idp', audiences: ['kcp'] },
      claimMappings: { username: { claim: 'sub', prefix: 'https://idp#' }, groups: { claim: 'groups', prefix: 'g:' } },
      claimValidationRules: [{ claim: 'hd', requiredValue: 'example.com' }],
    });
    assert.equal(authenticationConfigFromFlags(undefined, { issuerURL: 'https://idp', clientID: 'kcp', usernameClaim: 'email' })!.jwt[0]!.claimMappings.username.prefix, '');
    assert.equal(authenticationConfigFromFlags(undefined, { issuerURL: 'https://idp', clientID: 'kcp', usernamePrefix: '-' })!.jwt[0]!.claimMappings.username.prefix, '');
    assert.equal(authenticationConfigFromFlags(undefined, {}), undefined);
    assert.deepEqual(authenticationFromFlagValues({ 'oidc-issuer-url': 'https://idp', 'oidc-client-id': 'kcp' })!.algorithms, ['RS256']);
    assert.deepEqual(authenticationFromFlagValues({ 'oidc-issuer-url': 'https://idp', 'oidc-client-id': 'kcp', 'oidc-signing-algs': 'ES256,RS512' })!.algorithms, ['ES256', 'RS512']);
    assert.throws(() => authenticationFromFlagValues({ 'oidc-issuer-url': 'https://idp', 'oidc-client-id': 'kcp', 'oidc-signing-algs': 'HS256' }), /oidc: unsupported signing alg: "HS256"/);
    assert.throws(() => authenticationConfigFromFlags(undefined, { clientID: 'kcp' }), /oidc-issuer-url and oidc-client-id must be specified together when any oidc-\* flags are set/);
    assert.throws(() => authenticationConfigFromFlags('/x', { issuerURL: 'https://idp' }), /authentication-config file and oidc-\* flags are mutually exclusive/);
    assert.throws(() => authenticationConfigFromFlags(undefined, { issuerURL: 'http://idp', clientID: 'kcp' }), /jwt\[0\]\.issuer\.url: Invalid value: "http:\/\/idp": URL scheme must be https/);
  });
});
