/**
 * Structured authentication configuration (`--authentication-config FILE`): kube's
 * `apiserver.config.k8s.io` AuthenticationConfiguration (v1, v1beta1, v1alpha1; Kubernetes 1.34,
 * k8s.io/apiserver/pkg/apis/apiserver/types.go), its `jwt[]` authenticators validated as
 * k8s.io/apiserver/pkg/apis/apiserver/validation/validation.go does (same field paths and
 * messages), and the classic `--oidc-*` flags mapped to one JWT authenticator as
 * kubernetes/pkg/kubeapiserver/options/authentication.go maps them.
 *
 * Not supported (refused at start-up with a message naming the field): `anonymous` and
 * `jwt[].issuer.egressSelectorType` (kcp-ts has neither an anonymous authenticator nor egress
 * selection).
 */
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { compileAuthenticationExpression } from './oidccel.js';
import { ALL_SIGNING_ALGORITHMS } from './oidc.js';

/** `apiserver.config.k8s.io` versions whose AuthenticationConfiguration is read (all the same shape). */
export const AUTHENTICATION_CONFIG_VERSIONS = ['apiserver.config.k8s.io/v1', 'apiserver.config.k8s.io/v1beta1', 'apiserver.config.k8s.io/v1alpha1'] as const;

/** kube's bound on `jwt[]` (validation.go: `field.TooMany(root, len(c.JWT), 64)`). */
export const MAX_JWT_AUTHENTICATORS = 64;

/** `issuer` of a JWT authenticator (kube's apiserver.Issuer). */
export interface Issuer {
  /** `https` URL, must equal the tokens' `iss`. */
  url: string;
  /** Where the discovery document is fetched instead of `{url}/.well-known/openid-configuration`. */
  discoveryURL?: string;
  /** PEM bundle trusted for discovery and JWKS fetches (default: the system's roots). */
  certificateAuthority?: string;
  /** At least one; a token's `aud` must contain one of them. */
  audiences: string[];
  /** `MatchAny` (required with several audiences) or empty. */
  audienceMatchPolicy?: string;
}

/** `claim` + `prefix`, or a CEL `expression` (kube's PrefixedClaimOrExpression). */
export interface PrefixedClaimOrExpression {
  claim?: string;
  /** Required with `claim` (may be ""). */
  prefix?: string;
  expression?: string;
}

/** One JWT authenticator (kube's apiserver.JWTAuthenticator). */
export interface JWTAuthenticatorConfig {
  issuer: Issuer;
  claimValidationRules?: { claim?: string; requiredValue?: string; expression?: string; message?: string }[];
  claimMappings: {
    username: PrefixedClaimOrExpression;
    groups?: PrefixedClaimOrExpression;
    uid?: { claim?: string; expression?: string };
    extra?: { key: string; valueExpression: string }[];
  };
  userValidationRules?: { expression: string; message?: string }[];
}

/** A validated AuthenticationConfiguration: its JWT authenticators. */
export interface AuthenticationConfiguration {
  jwt: JWTAuthenticatorConfig[];
}

/** The configuration is invalid; `message` lists every problem as kube's field errors. */
export class AuthenticationConfigError extends Error {
  constructor(readonly errors: string[]) {
    super(`invalid authentication configuration: ${errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`}`);
    this.name = 'AuthenticationConfigError';
  }
}

const q = (v: unknown): string => JSON.stringify(v);
const required = (path: string, detail = ''): string => `${path}: Required value${detail ? `: ${detail}` : ''}`;
const invalid = (path: string, value: unknown, detail: string): string => `${path}: Invalid value: ${q(value)}: ${detail}`;
const duplicate = (path: string, value: unknown): string => `${path}: Duplicate value: ${q(value)}`;

/** Fields each object may carry (kube decodes config files strictly: unknown fields are errors). */
const KNOWN_FIELDS: Record<string, readonly string[]> = {
  '': ['apiVersion', 'kind', 'jwt', 'anonymous'],
  jwt: ['issuer', 'claimValidationRules', 'claimMappings', 'userValidationRules'],
  issuer: ['url', 'discoveryURL', 'certificateAuthority', 'audiences', 'audienceMatchPolicy', 'egressSelectorType'],
  claimValidationRules: ['claim', 'requiredValue', 'expression', 'message'],
  claimMappings: ['username', 'groups', 'uid', 'extra'],
  username: ['claim', 'prefix', 'expression'],
  groups: ['claim', 'prefix', 'expression'],
  uid: ['claim', 'expression'],
  extra: ['key', 'valueExpression'],
  userValidationRules: ['expression', 'message'],
};

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks the JSON shape of a decoded file (objects, lists and strings where kube's types have
 * them; no unknown fields) and returns the errors, as kube's strict decoding would refuse the file.
 */
function shapeErrors(doc: Record<string, unknown>): string[] {
  const errs: string[] = [];
  const obj = (v: unknown, path: string, kind: string): Record<string, unknown> | undefined => {
    if (v === undefined || v === null) return undefined;
    if (!isObj(v)) { errs.push(`${path}: Invalid value: expected an object`); return undefined; }
    for (const k of Object.keys(v)) if (!KNOWN_FIELDS[kind]!.includes(k)) errs.push(`${path ? `${path}.` : ''}${k}: unknown field`);
    for (const [k, val] of Object.entries(v)) {
      if (!KNOWN_FIELDS[kind]!.includes(k)) continue;
      if (k === 'audiences') {
        if (!Array.isArray(val) || val.some((a) => typeof a !== 'string')) errs.push(`${path}.audiences: Invalid value: expected a list of strings`);
      } else if (!KNOWN_FIELDS[k] && val !== undefined && val !== null && typeof val !== 'string' && !(kind === '' && (k === 'jwt' || k === 'anonymous'))) {
        errs.push(`${path ? `${path}.` : ''}${k}: Invalid value: expected a string`);
      }
    }
    return v;
  };
  const list = (v: unknown, path: string, kind: string): void => {
    if (v === undefined || v === null) return;
    if (!Array.isArray(v)) { errs.push(`${path}: Invalid value: expected a list`); return; }
    v.forEach((e, i) => obj(e, `${path}[${i}]`, kind));
  };
  obj(doc, '', '');
  if (Array.isArray(doc.jwt)) {
    doc.jwt.forEach((a, i) => {
      const p = `jwt[${i}]`;
      const j = obj(a, p, 'jwt');
      if (!j) return;
      obj(j.issuer, `${p}.issuer`, 'issuer');
      list(j.claimValidationRules, `${p}.claimValidationRules`, 'claimValidationRules');
      const m = obj(j.claimMappings, `${p}.claimMappings`, 'claimMappings');
      if (m) {
        obj(m.username, `${p}.claimMappings.username`, 'username');
        obj(m.groups, `${p}.claimMappings.groups`, 'groups');
        obj(m.uid, `${p}.claimMappings.uid`, 'uid');
        list(m.extra, `${p}.claimMappings.extra`, 'extra');
      }
      list(j.userValidationRules, `${p}.userValidationRules`, 'userValidationRules');
    });
  } else if (doc.jwt !== undefined && doc.jwt !== null) errs.push('jwt: Invalid value: expected a list');
  return errs;
}

/** kube's validateURL (issuer and discovery URLs). */
function urlErrors(value: string, path: string, disallowed: readonly string[]): string[] {
  const errs: string[] = [];
  if (disallowed.includes(value)) errs.push(invalid(path, value, `URL must not overlap with disallowed issuers: [${[...disallowed].sort().join(' ')}]`));
  let u: URL;
  try { u = new URL(value); } catch { errs.push(invalid(path, value, 'URL must be a valid absolute URL')); return errs; }
  if (u.protocol !== 'https:') errs.push(invalid(path, value, 'URL scheme must be https'));
  if (u.username || u.password) errs.push(invalid(path, value, 'URL must not contain a username or password'));
  if (u.search) errs.push(invalid(path, value, 'URL must not contain a query'));
  if (u.hash || value.includes('#')) errs.push(invalid(path, value, 'URL must not contain a fragment'));
  return errs;
}

/** kube's IsDomainPrefixedPath plus its extra-key rules (lower case, not a Kubernetes domain). */
function extraKeyErrors(key: string, path: string): string[] {
  const errs: string[] = [];
  if (!key) return [required(path)];
  const slash = key.indexOf('/');
  const host = slash < 0 ? '' : key.slice(0, slash);
  const rest = slash < 0 ? '' : key.slice(slash + 1);
  if (slash < 0 || !rest) errs.push(invalid(path, key, 'must be a domain-prefixed path (such as "acme.io/foo")'));
  else if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(host) || host.length > 253) {
    errs.push(invalid(path, host, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
  } else if (!/^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/.test(rest)) {
    errs.push(invalid(path, rest, 'Invalid path'));
  }
  if (key !== key.toLowerCase()) errs.push(invalid(path, key, 'must be lowercase'));
  if (host === 'kubernetes.io' || host.endsWith('.kubernetes.io') || host === 'k8s.io' || host.endsWith('.k8s.io')) {
    errs.push(invalid(path, key, 'k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use'));
  }
  return errs;
}

/** Whether an expression selects `claims.<field>` (kube's hasSelectExp, on the source text). */
function selectsClaim(expression: string, field: string): boolean {
  return new RegExp(`\\bclaims\\s*(\\.\\s*${field}\\b|\\[\\s*\\??\\s*["']${field}["']\\s*\\]|\\.\\s*\\?\\s*${field}\\b)`).test(expression);
}

/** A CEL compile error as kube's field error (`Invalid value: "<expr>": compilation failed: …`). */
function compileErrors(expression: string, path: string): string[] {
  try { compileAuthenticationExpression(expression); return []; } catch (err) { return [invalid(path, expression, (err as Error).message)]; }
}

/**
 * Validates one JWT authenticator as kube's validateJWTAuthenticator (`path` e.g. `jwt[0]`);
 * `disallowedIssuers` are the service-account issuers. Returns kube-style field errors.
 */
export function validateJWTAuthenticator(a: JWTAuthenticatorConfig, path: string, disallowedIssuers: readonly string[]): string[] {
  const errs: string[] = [];
  const ip = `${path}.issuer`;
  const iss = (isObj(a.issuer) ? a.issuer : {}) as Partial<Issuer> & { egressSelectorType?: string };
  if (!iss.url) errs.push(required(`${ip}.url`));
  else errs.push(...urlErrors(iss.url, `${ip}.url`, disallowedIssuers));
  if (iss.discoveryURL) {
    if (iss.url && iss.url.replace(/\/+$/, '') === iss.discoveryURL.replace(/\/+$/, '')) errs.push(invalid(`${ip}.discoveryURL`, iss.discoveryURL, 'discoveryURL must be different from URL'));
    errs.push(...urlErrors(iss.discoveryURL, `${ip}.discoveryURL`, []));
  }
  const auds = iss.audiences ?? [];
  if (!auds.length) errs.push(required(`${ip}.audiences`, `at least one ${ip}.audiences is required`));
  else {
    const seen = new Set<string>();
    auds.forEach((aud, i) => {
      if (!aud) errs.push(required(`${ip}.audiences[${i}]`));
      if (seen.has(aud)) errs.push(duplicate(`${ip}.audiences[${i}]`, aud));
      seen.add(aud);
    });
    const policy = iss.audienceMatchPolicy ?? '';
    if (auds.length > 1 && policy !== 'MatchAny') errs.push(invalid(`${ip}.audienceMatchPolicy`, policy, 'audienceMatchPolicy must be MatchAny for multiple audiences'));
    if (auds.length === 1 && policy && policy !== 'MatchAny') errs.push(invalid(`${ip}.audienceMatchPolicy`, policy, 'audienceMatchPolicy must be empty or MatchAny for single audience'));
  }
  if (iss.certificateAuthority) {
    const pems = iss.certificateAuthority.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    let ok = pems.length > 0;
    for (const pem of pems) { try { new X509Certificate(pem); } catch { ok = false; } }
    if (!ok) errs.push(invalid(`${ip}.certificateAuthority`, '<omitted>', 'data does not contain any valid RSA or ECDSA certificates'));
  }
  if (iss.egressSelectorType) errs.push(invalid(`${ip}.egressSelectorType`, iss.egressSelectorType, 'egress selector is not supported by kcp-ts'));

  // claimValidationRules
  let usesEmailVerified = false;
  const seenClaims = new Set<string>(); const seenExprs = new Set<string>();
  (a.claimValidationRules ?? []).forEach((r, i) => {
    const p = `${path}.claimValidationRules[${i}]`;
    if (r.claim && r.expression) errs.push(invalid(p, r.claim, "claim and expression can't both be set"));
    else if (!r.claim && !r.expression) errs.push(required(p, 'claim or expression is required'));
    else if (r.claim) {
      if (r.message) errs.push(invalid(`${p}.message`, r.message, 'may not be specified when claim is set'));
      if (seenClaims.has(r.claim)) errs.push(duplicate(`${p}.claim`, r.claim));
      seenClaims.add(r.claim);
    } else if (r.expression) {
      if (r.requiredValue) errs.push(invalid(`${p}.requiredValue`, r.requiredValue, 'may not be specified when expression is set'));
      if (seenExprs.has(r.expression)) { errs.push(duplicate(`${p}.expression`, r.expression)); return; }
      seenExprs.add(r.expression);
      const e = compileErrors(r.expression, `${p}.expression`);
      errs.push(...e);
      if (!e.length && selectsClaim(r.expression, 'email_verified')) usesEmailVerified = true;
    }
  });

  // claimMappings
  const mp = `${path}.claimMappings`;
  const m = (isObj(a.claimMappings) ? a.claimMappings : {}) as Partial<JWTAuthenticatorConfig['claimMappings']>;
  const prefixed = (v: PrefixedClaimOrExpression | undefined, p: string, requiredOne: boolean): void => {
    const x = v ?? {};
    if (x.expression && x.claim) errs.push(invalid(p, '', "claim and expression can't both be set"));
    else if (!x.expression && !x.claim && requiredOne) errs.push(required(p, 'claim or expression is required'));
    else if (x.expression) {
      if (x.prefix !== undefined) errs.push(invalid(`${p}.prefix`, x.prefix, 'may not be specified when expression is set'));
      errs.push(...compileErrors(x.expression, `${p}.expression`));
    } else if (x.claim && x.prefix === undefined) {
      errs.push(required(`${p}.prefix`, 'prefix is required when claim is set. It can be set to an empty string to disable prefixing'));
    }
  };
  prefixed(m.username, `${mp}.username`, true);
  prefixed(m.groups, `${mp}.groups`, false);
  if (m.uid?.claim && m.uid.expression) errs.push(invalid(`${mp}.uid`, '', "claim and expression can't both be set"));
  else if (m.uid?.expression) errs.push(...compileErrors(m.uid.expression, `${mp}.uid.expression`));
  const seenKeys = new Set<string>();
  (m.extra ?? []).forEach((x, i) => {
    const p = `${mp}.extra[${i}]`;
    errs.push(...extraKeyErrors(x.key ?? '', `${p}.key`));
    if (seenKeys.has(x.key)) { errs.push(duplicate(`${p}.key`, x.key)); return; }
    seenKeys.add(x.key);
    if (!x.valueExpression) { errs.push(required(`${p}.valueExpression`)); return; }
    const e = compileErrors(x.valueExpression, `${p}.valueExpression`);
    errs.push(...e);
    if (!e.length && selectsClaim(x.valueExpression, 'email_verified')) usesEmailVerified = true;
  });
  const userExpr = m.username?.expression;
  if (userExpr && !m.username?.claim && selectsClaim(userExpr, 'email_verified')) usesEmailVerified = true;
  if (userExpr && !m.username?.claim && selectsClaim(userExpr, 'email') && !usesEmailVerified) {
    errs.push(invalid(`${mp}.username.expression`, userExpr, 'claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression'));
  }

  // userValidationRules
  const seenUserExprs = new Set<string>();
  (a.userValidationRules ?? []).forEach((r, i) => {
    const p = `${path}.userValidationRules[${i}]`;
    if (!r.expression) { errs.push(required(`${p}.expression`)); return; }
    if (seenUserExprs.has(r.expression)) { errs.push(duplicate(`${p}.expression`, r.expression)); return; }
    seenUserExprs.add(r.expression);
    errs.push(...compileErrors(r.expression, `${p}.expression`));
  });
  return errs;
}

/**
 * Validates a decoded AuthenticationConfiguration document (kube's
 * ValidateAuthenticationConfiguration plus strict decoding): at most 64 authenticators, unique
 * issuer and discovery URLs, each authenticator valid.
 * @throws {AuthenticationConfigError} listing every error, kube's field paths and messages
 */
export function validateAuthenticationConfiguration(doc: unknown, disallowedIssuers: readonly string[] = []): AuthenticationConfiguration {
  if (!isObj(doc)) throw new AuthenticationConfigError(['expected an AuthenticationConfiguration object']);
  const errs: string[] = [];
  if (!AUTHENTICATION_CONFIG_VERSIONS.includes(doc.apiVersion as typeof AUTHENTICATION_CONFIG_VERSIONS[number])) {
    errs.push(`apiVersion: Unsupported value: ${q(doc.apiVersion ?? '')}: supported values: ${AUTHENTICATION_CONFIG_VERSIONS.map(q).join(', ')}`);
  }
  if (doc.kind !== 'AuthenticationConfiguration') errs.push(`kind: Unsupported value: ${q(doc.kind ?? '')}: supported values: "AuthenticationConfiguration"`);
  errs.push(...shapeErrors(doc));
  if (doc.anonymous !== undefined && doc.anonymous !== null) errs.push(invalid('anonymous', '', 'anonymous authentication is not supported by kcp-ts'));
  if (errs.length) throw new AuthenticationConfigError(errs);
  const jwt = (doc.jwt ?? []) as JWTAuthenticatorConfig[];
  if (jwt.length > MAX_JWT_AUTHENTICATORS) throw new AuthenticationConfigError([`jwt: Too many: ${jwt.length}: must have at most ${MAX_JWT_AUTHENTICATORS} items`]);
  const issuers = new Set<string>(); const discovery = new Set<string>();
  jwt.forEach((a, i) => {
    errs.push(...validateJWTAuthenticator(a, `jwt[${i}]`, disallowedIssuers));
    const url = a.issuer?.url ?? '';
    if (issuers.has(url)) errs.push(duplicate(`jwt[${i}].issuer.url`, url));
    issuers.add(url);
    const d = a.issuer?.discoveryURL;
    if (d) { if (discovery.has(d)) errs.push(duplicate(`jwt[${i}].issuer.discoveryURL`, d)); discovery.add(d); }
  });
  if (errs.length) throw new AuthenticationConfigError(errs);
  return { jwt };
}

/**
 * Reads and validates `--authentication-config FILE` (YAML or JSON).
 * @throws {Error} `failed to load authentication configuration from file "<path>": …` (kube's
 *   wording) for an unreadable or undecodable file, or an {@link AuthenticationConfigError}
 */
export function loadAuthenticationConfig(path: string, disallowedIssuers: readonly string[] = []): AuthenticationConfiguration {
  let doc: unknown;
  try { doc = parseYaml(readFileSync(path, 'utf8')); } catch (err) {
    throw new Error(`failed to load authentication configuration from file ${q(path)}: ${(err as Error).message}`);
  }
  return validateAuthenticationConfiguration(doc, disallowedIssuers);
}

/** The classic `--oidc-*` flags (kube-apiserver's BuiltInAuthenticationOptions.OIDC). */
export interface OIDCFlags {
  issuerURL?: string;
  clientID?: string;
  caFile?: string;
  /** Default `sub`. */
  usernameClaim?: string;
  usernamePrefix?: string;
  groupsClaim?: string;
  groupsPrefix?: string;
  /** `--oidc-required-claim key=value` (repeatable). */
  requiredClaims?: Record<string, string>;
  /** `--oidc-signing-algs` as given (counts as an `--oidc-*` flag). */
  signingAlgs?: string;
}

/** Whether any `--oidc-*` flag was given. */
export function oidcFlagsSet(f: OIDCFlags): boolean {
  return Object.values(f).some((v) => v !== undefined && !(typeof v === 'object' && Object.keys(v).length === 0));
}

/**
 * The authentication configuration of a server's flags, as kube-apiserver builds it:
 * `--authentication-config` and `--oidc-*` are mutually exclusive; `--oidc-issuer-url` and
 * `--oidc-client-id` go together; an `--oidc-username-prefix` left empty prefixes usernames of
 * claims other than `email` with `<issuer>#`, and `-` means no prefix.
 * @throws {Error} with kube's messages for a flag conflict, or from {@link loadAuthenticationConfig}
 */
export function authenticationConfigFromFlags(configFile: string | undefined, oidc: OIDCFlags, disallowedIssuers: readonly string[] = []): AuthenticationConfiguration | undefined {
  const set = oidcFlagsSet(oidc);
  if (configFile) {
    if (set) throw new Error('authentication-config file and oidc-* flags are mutually exclusive');
    return loadAuthenticationConfig(configFile, disallowedIssuers);
  }
  if (!set) return undefined;
  if (!oidc.issuerURL || !oidc.clientID) throw new Error('oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set');
  const usernameClaim = oidc.usernameClaim ?? 'sub';
  let usernamePrefix = oidc.usernamePrefix ?? '';
  if (usernamePrefix === '' && usernameClaim !== 'email') usernamePrefix = `${oidc.issuerURL}#`;
  if (usernamePrefix === '-') usernamePrefix = '';
  const a: JWTAuthenticatorConfig = {
    issuer: { url: oidc.issuerURL, audiences: [oidc.clientID] },
    claimMappings: { username: { claim: usernameClaim, prefix: usernamePrefix } },
  };
  if (oidc.groupsClaim) a.claimMappings.groups = { claim: oidc.groupsClaim, prefix: oidc.groupsPrefix ?? '' };
  if (oidc.caFile) a.issuer.certificateAuthority = readFileSync(oidc.caFile, 'utf8');
  const req = Object.entries(oidc.requiredClaims ?? {});
  if (req.length) a.claimValidationRules = req.map(([claim, requiredValue]) => ({ claim, requiredValue }));
  const errs = validateJWTAuthenticator(a, 'jwt[0]', disallowedIssuers);
  if (errs.length) throw new AuthenticationConfigError(errs);
  return { jwt: [a] };
}

/**
 * Parses `--oidc-required-claim` values (`key=value`, repeatable; kube's mapStringString flag).
 * @throws {Error} for an entry without `=`
 */
export function parseRequiredClaims(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    for (const part of v.split(',')) {
      if (!part.trim()) continue;
      const eq = part.indexOf('=');
      if (eq <= 0) throw new Error(`--oidc-required-claim: ${q(part)} must be formatted as key=value`);
      out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
    }
  }
  return out;
}

/** `parseArgs` options of the authentication flags shared by `kcp-ts start` and `kcp-ts front-proxy`. */
export const AUTHENTICATION_FLAG_OPTIONS = {
  'authentication-config': { type: 'string' }, 'oidc-issuer-url': { type: 'string' }, 'oidc-client-id': { type: 'string' },
  'oidc-ca-file': { type: 'string' }, 'oidc-username-claim': { type: 'string' }, 'oidc-username-prefix': { type: 'string' },
  'oidc-groups-claim': { type: 'string' }, 'oidc-groups-prefix': { type: 'string' }, 'oidc-required-claim': { type: 'string', multiple: true },
  'oidc-signing-algs': { type: 'string' },
} as const;

const AUTHENTICATION_FLAGS_HELP: [string, string][] = [
  ['--authentication-config FILE', 'apiserver.config.k8s.io/v1 AuthenticationConfiguration: JWT (OpenID Connect) issuers, audiences, claim mappings and CEL rules, as kube 1.34'],
  ['--oidc-issuer-url URL, --oidc-client-id ID', "one OpenID Connect issuer and the audience its tokens must name (kube's classic flags; not with --authentication-config)"],
  ['--oidc-ca-file FILE', "CA of the issuer's discovery and JWKS endpoints (default: system roots)"],
  ['--oidc-username-claim C', 'claim of the user name (default "sub")'],
  ['--oidc-username-prefix P', 'prefix of user names (default "<issuer>#" unless the claim is "email"; "-": none)'],
  ['--oidc-groups-claim C, --oidc-groups-prefix P', 'claim (string or list) of the groups, and their prefix'],
  ['--oidc-required-claim K=V', 'claim K must be the string V (repeatable)'],
  ['--oidc-signing-algs LIST', 'accepted signature algorithms (default RS256)'],
];

/**
 * Usage lines of {@link AUTHENTICATION_FLAG_OPTIONS}, descriptions starting at `column` (as the
 * command's other flags) and wrapped before `width` characters.
 */
export function authenticationFlagsUsage(column: number, width = 100): string {
  let out = '';
  for (const [name, desc] of AUTHENTICATION_FLAGS_HELP) {
    const head = `  ${name}`;
    const lines: string[] = [];
    let line = '';
    for (const word of desc.split(' ')) {
      if (line && column + line.length + 1 + word.length > width) { lines.push(line); line = word; } else line = line ? `${line} ${word}` : word;
    }
    lines.push(line);
    const pad = ' '.repeat(column);
    if (head.length < column) out += `${head.padEnd(column)}${lines[0]}\n${lines.slice(1).map((l) => `${pad}${l}\n`).join('')}`;
    else out += `${head}\n${lines.map((l) => `${pad}${l}\n`).join('')}`;
  }
  return out;
}

/**
 * The authentication configuration of parsed flag values ({@link AUTHENTICATION_FLAG_OPTIONS}),
 * with the algorithms kube accepts: all with a file, `--oidc-signing-algs` (default RS256) with
 * the `--oidc-*` flags. undefined when neither is given.
 * @throws {Error} with kube's messages (conflicting flags, an invalid file, unknown algorithm)
 */
export function authenticationFromFlagValues(values: Record<string, unknown>, disallowedIssuers: readonly string[] = []): { config: AuthenticationConfiguration; algorithms: readonly string[] } | undefined {
  const s = (k: string): string | undefined => (typeof values[k] === 'string' ? values[k] as string : undefined);
  const oidc: OIDCFlags = {
    issuerURL: s('oidc-issuer-url'), clientID: s('oidc-client-id'), caFile: s('oidc-ca-file'),
    usernameClaim: s('oidc-username-claim'), usernamePrefix: s('oidc-username-prefix'),
    groupsClaim: s('oidc-groups-claim'), groupsPrefix: s('oidc-groups-prefix'),
    requiredClaims: Array.isArray(values['oidc-required-claim']) ? parseRequiredClaims(values['oidc-required-claim'] as string[]) : undefined,
  };
  const algsFlag = s('oidc-signing-algs');
  const config = authenticationConfigFromFlags(s('authentication-config'), algsFlag === undefined ? oidc : { ...oidc, signingAlgs: algsFlag } as OIDCFlags, disallowedIssuers);
  if (!config) return undefined;
  if (s('authentication-config')) return { config, algorithms: ALL_SIGNING_ALGORITHMS };
  const algorithms = algsFlag === undefined ? ['RS256'] : algsFlag.split(',').map((a) => a.trim()).filter(Boolean);
  for (const a of algorithms) if (!(ALL_SIGNING_ALGORITHMS as readonly string[]).includes(a)) throw new Error(`oidc: unsupported signing alg: ${JSON.stringify(a)}`);
  return { config, algorithms };
}
