/**
 * `kcp-ts` command line. `kcp-ts start [flags]` runs a shard (flag names as kcp's);
 * `kcp-ts front-proxy [flags]` the front-proxy (frontproxy.ts); `kcp-ts crd compat` checks two CRDs'
 * schemas for compatibility (crdcompat.ts, its own exit codes); `kcp-ts crd pull` pulls a
 * cluster's resources as CRDs (crdpull.ts); `kcp-ts syncer` runs the syncer of a SyncTarget
 * (src/syncer/cli.ts).
 * Exit codes: 0 after SIGTERM/SIGINT, 1 on start-up failure, 2 on usage errors.
 */
import { parseDuration } from './pflag.js';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { ServerOptions } from '../server/shard.js';
import { readKubeconfig, resolveKubeconfigContext } from '../pki/kubeconfig.js';
import type { Connection } from '../client/rest.js';
import { ShutdownSignals } from './signals.js';
import { frontProxyMain } from './frontproxy.js';
import { HTTP2_STREAMS_USAGE, http2StreamsFlag, readFlagFile } from './flags.js';
import type { RequestHeaderConfig } from '../auth/authn.js';
import { AUTHENTICATION_FLAG_OPTIONS, authenticationFlagsUsage, authenticationFromFlagValues } from '../auth/authconfig.js';
import { DEFAULT_SA_ISSUER } from '../auth/serviceaccounts.js';
import { loadAuditPolicy } from '../endpoints/filters/audit.js';
import { parseRuntimeConfig } from '../apis/runtimeconfig.js';

const USAGE = `Usage: kcp-ts start [flags]
       kcp-ts front-proxy [flags]   (kcp-ts front-proxy --help)
       kcp-ts operator [flags]      (kcp-ts operator --help)
       kcp-ts syncer [flags]        (kcp-ts syncer --help)
       kcp-ts crd compat [flags] OLD.yaml NEW.yaml
                                    (kcp-ts crd compat --help)
       kcp-ts crd pull [flags] RESOURCE...
                                    (kcp-ts crd pull --help)
       kcp-ts backup [flags]        (kcp-ts backup --help)
       kcp-ts restore [flags] FILE  (kcp-ts restore --help)

Runs a kcp-ts shard: a multi-tenant, Kubernetes-compatible API server. With --shards N, runs a
whole instance in this process: the root shard, N-1 more shards and a front-proxy on
--secure-port (the shards on the ports after it); admin.kubeconfig points at the front-proxy.

Flags:
  --root-directory DIR      PKI, kubeconfig and embedded Redis data (default ".kcp")
  --secure-port PORT        HTTPS port (default 6443)
  --bind-address ADDR       listen address (default 127.0.0.1)
  --external-hostname HOST  host name clients use (added to the serving certificate)
  --shard-name NAME         shard name (default "root")
  --redis-url URL           use an existing Redis (redis://HOST:PORT or unix:///path, or a Redis
                            Cluster: redis-cluster://HOST:PORT[,HOST:PORT...]) instead of
                            starting an embedded redis-server
  --queue-redis-url URL     Redis of the controllers' queues, needs no persistence (default: the
                            --redis-url Redis, else a second embedded, non-persistent redis-server)
  --token-auth-file FILE    static bearer tokens, kube-apiserver CSV format
${authenticationFlagsUsage(28)}  --shards N                run N shards and a front-proxy (default 1: one shard, no proxy)
  --root-shard-kubeconfig-file FILE
                            this shard is not the root: register it in the root shard the
                            kubeconfig's current context names (URL, CA, client certificate)
  --shard-base-url URL      URL other shards and the front-proxy reach this shard at
  --shard-external-url URL  URL clients reach workspaces at (the front-proxy's)
  --shard-virtual-workspace-url URL
  --shard-labels K=V,...    labels of this shard's Shard object (matched by workspace placement)
  --pki-directory DIR       the instance's PKI shared by its shards (default: --root-directory)
  --shard-client-cert-file FILE, --shard-client-key-file FILE
                            client certificate towards the other shards (default: the PKI's
                            system:admin certificate)
  --requestheader-client-ca-file FILE
                            CA of the front-proxy's client certificate (default: the PKI's
                            front-proxy-ca.crt)
  --requestheader-allowed-names NAMES
                            common names allowed to state identities (default "kcp-front-proxy")
  --requestheader-username-headers, --requestheader-group-headers,
  --requestheader-extra-headers-prefix LIST
                            header names (default X-Remote-User, X-Remote-Group, X-Remote-Extra-)
  --tls-cert-file FILE, --tls-private-key-file FILE, --client-ca-file FILE,
  --service-account-signing-key-file FILE
                            certificates as files (all four, with --shard-client-cert-file):
                            no PKI directory is managed and no admin.kubeconfig written (what
                            the operator's shards run with)
  --revoked-client-certificates-file FILE
                            serial numbers (hex, one per line) of client certificates to refuse;
                            re-read when it changes
  --audit-policy-file FILE  audit.k8s.io/v1 Policy: which requests are audited, at which level
  --audit-log-path PATH     where audit events go (JSON lines), "-" for stdout; needs the policy
  --audit-log-maxsize MB    rotate the audit log when it would exceed MB (default 0: 100 MB)
  --audit-log-maxbackup N   rotated audit logs kept (default 0: all)
  --audit-log-maxage DAYS   days rotated audit logs are kept (default 0: no limit)
  --runtime-config LIST     group/versions to turn on, kube's syntax: <group>/<version>[=true|false];
                            admissionregistration.k8s.io/v1beta1 serves MutatingAdmissionPolicy
                            (off by default, as in kube 1.34 and kcp)
  --request-timeout DURATION
                            answer 504 to a request that is not long-running (all but watches)
                            after DURATION, Go syntax (default 1m0s, 0: no limit)
  --sync-target-heartbeat-threshold DURATION
                            a SyncTarget whose syncer sent no heartbeat for DURATION is not Ready
                            and its namespaces move to another SyncTarget (default 30s)
  --max-requests-inflight N
                            seats of non-mutating requests (default 400; kube's flag); with
                            priority and fairness, added to the next one as the server's seats
  --max-mutating-requests-inflight N
                            seats of mutating requests (default 200)
  --enable-priority-and-fairness[=true|false]
                            API priority and fairness (default true); false: kube's max-in-flight
                            limits (429 beyond either limit, watches not counted)
${HTTP2_STREAMS_USAGE}  -v, --verbose             log every request
  -h, --help                this help
`;

/**
 * Runs the CLI with `argv` (without node and script). Resolves to the exit code. `shutdown`
 * (default: installed now) is how SIGTERM/SIGINT reach it; bin.ts installs it before loading this
 * module so that no moment of a process's life is without handlers.
 */
export async function main(argv: string[], shutdown = new ShutdownSignals()): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') { process.stdout.write(USAGE); return command ? 0 : 2; }
  if (command === 'front-proxy') return frontProxyMain(rest, shutdown);
  if (command === 'operator') {
    // Loaded only here: a shard needs none of the operator's modules (nor client-node).
    const { operatorMain } = await import('../../operator/main.js');
    return operatorMain(rest, shutdown);
  }
  if (command === 'syncer') {
    const { syncerMain } = await import('../syncer/cli.js');
    return syncerMain(rest, shutdown);
  }
  if (command === 'crd') {
    const { crdMain } = await import('./crdcompat.js');
    return crdMain(rest);
  }
  if (command === 'backup' || command === 'restore') {
    const { backupMain, restoreMain } = await import('./backup.js');
    return command === 'backup' ? backupMain(rest) : restoreMain(rest);
  }
  if (command !== 'start') { process.stderr.write(`kcp-ts: unknown command "${command}"\n\n${USAGE}`); return 2; }
  let values;
  try {
    // pflag booleans take `--flag`, `--flag=true` and `--flag=false`: a bare one means true.
    const args = rest.map((a) => (PFLAG_BOOLEANS.includes(a.slice(2)) && a.startsWith('--') ? `${a}=true` : a));
    ({ values } = parseArgs({
      args, strict: true, allowPositionals: false,
      options: {
        'root-directory': { type: 'string' }, 'secure-port': { type: 'string' }, 'bind-address': { type: 'string' },
        'external-hostname': { type: 'string' }, 'shard-name': { type: 'string' }, 'redis-url': { type: 'string' },
        'queue-redis-url': { type: 'string' }, 'token-auth-file': { type: 'string' }, verbose: { type: 'boolean', short: 'v' }, help: { type: 'boolean', short: 'h' },
        shards: { type: 'string' }, 'root-shard-kubeconfig-file': { type: 'string' }, 'shard-base-url': { type: 'string' },
        'shard-external-url': { type: 'string' }, 'shard-virtual-workspace-url': { type: 'string' }, 'shard-labels': { type: 'string' },
        'pki-directory': { type: 'string' }, 'shard-client-cert-file': { type: 'string' }, 'shard-client-key-file': { type: 'string' },
        'requestheader-client-ca-file': { type: 'string' }, 'requestheader-allowed-names': { type: 'string' },
        'requestheader-username-headers': { type: 'string' }, 'requestheader-group-headers': { type: 'string' },
        'requestheader-extra-headers-prefix': { type: 'string' },
        'tls-cert-file': { type: 'string' }, 'tls-private-key-file': { type: 'string' }, 'client-ca-file': { type: 'string' },
        'service-account-signing-key-file': { type: 'string' }, 'revoked-client-certificates-file': { type: 'string' },
        'audit-policy-file': { type: 'string' }, 'audit-log-path': { type: 'string' }, 'audit-log-maxsize': { type: 'string' },
        'audit-log-maxbackup': { type: 'string' }, 'audit-log-maxage': { type: 'string' }, 'runtime-config': { type: 'string' },
        'request-timeout': { type: 'string' }, 'sync-target-heartbeat-threshold': { type: 'string' }, 'http2-max-streams-per-connection': { type: 'string' },
        'max-requests-inflight': { type: 'string' }, 'max-mutating-requests-inflight': { type: 'string' }, 'enable-priority-and-fairness': { type: 'string' },
        ...AUTHENTICATION_FLAG_OPTIONS,
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts start: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(USAGE); return 0; }
  const port = values['secure-port'] === undefined ? 6443 : Number(values['secure-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) { process.stderr.write(`kcp-ts start: invalid --secure-port "${values['secure-port']}"\n`); return 2; }
  const shardCount = values.shards === undefined ? 1 : Number(values.shards);
  if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > 64) { process.stderr.write(`kcp-ts start: invalid --shards "${values.shards}" (1 to 64)\n`); return 2; }
  let labels: Record<string, string> | undefined;
  let rootShard: Connection | undefined;
  let shardClientCert: { cert: string; key: string } | undefined;
  const requestHeader: Partial<RequestHeaderConfig> = {};
  let certificates: ServerOptions['certificates'];
  let audit: ServerOptions['audit'];
  let runtimeConfig: ServerOptions['runtimeConfig'];
  let requestTimeoutMs: number | undefined;
  let syncTargetHeartbeatThresholdMs: number | undefined;
  let authentication: ServerOptions['authentication'];
  let http2MaxStreamsPerConnection: number | undefined;
  let flowControl: Pick<ServerOptions, 'maxRequestsInflight' | 'maxMutatingRequestsInflight' | 'enablePriorityAndFairness'>;
  const list = (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean);
  try {
    labels = values['shard-labels'] ? parseLabels(values['shard-labels']) : undefined;
    rootShard = values['root-shard-kubeconfig-file'] ? connectionFromKubeconfig(values['root-shard-kubeconfig-file']) : undefined;
    if (Boolean(values['shard-client-cert-file']) !== Boolean(values['shard-client-key-file'])) throw new Error('--shard-client-cert-file and --shard-client-key-file go together');
    if (values['shard-client-cert-file']) shardClientCert = { cert: readFlagFile('shard-client-cert-file', values['shard-client-cert-file']), key: readFlagFile('shard-client-key-file', values['shard-client-key-file']!) };
    const certFlags = ['tls-cert-file', 'tls-private-key-file', 'client-ca-file', 'service-account-signing-key-file'] as const;
    const givenCertFlags = certFlags.filter((f) => values[f] !== undefined);
    if (givenCertFlags.length > 0) {
      if (givenCertFlags.length < certFlags.length) throw new Error(`--${certFlags.join(', --')} go together (missing --${certFlags.filter((f) => values[f] === undefined).join(', --')})`);
      if (!shardClientCert) throw new Error('a shard given its certificates needs --shard-client-cert-file and --shard-client-key-file');
      // Checked here, so a wrong file is named instead of an OpenSSL decoder error at start-up.
      const cert = (flag: string) => { const pem = readFlagFile(flag, values[flag as 'tls-cert-file']!); pemCheck(flag, () => new X509Certificate(pem), 'a PEM certificate'); return pem; };
      const key = (flag: string) => { const pem = readFlagFile(flag, values[flag as 'tls-cert-file']!); pemCheck(flag, () => createPrivateKey(pem), 'a PEM private key'); return pem; };
      certificates = {
        servingCert: cert('tls-cert-file'), servingKey: key('tls-private-key-file'),
        clientCA: cert('client-ca-file'), serviceAccountSigningKey: key('service-account-signing-key-file'),
      };
      pemCheck('shard-client-cert-file', () => new X509Certificate(shardClientCert!.cert), 'a PEM certificate');
      pemCheck('shard-client-key-file', () => createPrivateKey(shardClientCert!.key), 'a PEM private key');
    }
    if (values['requestheader-client-ca-file']) requestHeader.clientCA = readFlagFile('requestheader-client-ca-file', values['requestheader-client-ca-file']);
    if (values['requestheader-allowed-names'] !== undefined) requestHeader.allowedNames = list(values['requestheader-allowed-names']);
    if (values['requestheader-username-headers']) requestHeader.usernameHeaders = list(values['requestheader-username-headers']);
    if (values['requestheader-group-headers']) requestHeader.groupHeaders = list(values['requestheader-group-headers']);
    if (values['requestheader-extra-headers-prefix']) requestHeader.extraHeaderPrefixes = list(values['requestheader-extra-headers-prefix']);
    audit = auditOptions(values);
    // The service-account issuer may not be an OIDC issuer (kube's disallowedIssuers).
    authentication = authenticationFromFlagValues(values, [DEFAULT_SA_ISSUER]);
    runtimeConfig = values['runtime-config'] === undefined ? undefined : parseRuntimeConfig(values['runtime-config']);
    if (values['request-timeout'] !== undefined) {
      const ms = parseDuration(values['request-timeout']);
      if (ms === undefined || ms < 0) throw new Error(`invalid argument ${JSON.stringify(values['request-timeout'])} for "--request-timeout" flag: time: invalid duration ${JSON.stringify(values['request-timeout'])}`);
      requestTimeoutMs = ms;
    }
    if (values['sync-target-heartbeat-threshold'] !== undefined) {
      // kcp: "--sync-target-heartbeat-threshold must be >0".
      const v = values['sync-target-heartbeat-threshold'];
      const ms = parseDuration(v);
      if (ms === undefined) throw new Error(`invalid argument ${JSON.stringify(v)} for "--sync-target-heartbeat-threshold" flag: time: invalid duration ${JSON.stringify(v)}`);
      if (ms <= 0) throw new Error(`--sync-target-heartbeat-threshold must be >0 (${v})`);
      syncTargetHeartbeatThresholdMs = ms;
    }
    http2MaxStreamsPerConnection = http2StreamsFlag(values['http2-max-streams-per-connection']);
    flowControl = {
      maxRequestsInflight: countFlag('max-requests-inflight', values['max-requests-inflight']),
      maxMutatingRequestsInflight: countFlag('max-mutating-requests-inflight', values['max-mutating-requests-inflight']),
      enablePriorityAndFairness: boolFlag('enable-priority-and-fairness', values['enable-priority-and-fairness']),
    };
  } catch (err) {
    process.stderr.write(`kcp-ts start: ${(err as Error).message}\n`);
    return 2;
  }
  const opts: ServerOptions = {
    rootDirectory: values['root-directory'], securePort: port, bindAddress: values['bind-address'],
    externalHostname: values['external-hostname'], shardName: values['shard-name'], redisUrl: values['redis-url'],
    queueRedisUrl: values['queue-redis-url'], tokenAuthFile: values['token-auth-file'], logger: values.verbose ? { level: 'info' } : { level: 'warn' },
    rootShard, shardBaseURL: values['shard-base-url'], shardExternalURL: values['shard-external-url'],
    shardVirtualWorkspaceURL: values['shard-virtual-workspace-url'], shardLabels: labels, pkiDirectory: values['pki-directory'],
    shardClientCert, requestHeader, certificates, revokedClientCertificatesFile: values['revoked-client-certificates-file'], audit, runtimeConfig,
    requestTimeoutMs, syncTargetHeartbeatThresholdMs, authentication, http2MaxStreamsPerConnection,
    ...flowControl,
  };
  try {
    const t0 = performance.now();
    let server: { url: string; kubeconfigPath: string; stop(): Promise<void> };
    try {
      // Loaded here, not at the top: `kcp-ts front-proxy` needs none of the server's modules.
      const [{ startServer }, { startInstance }, { startTrace }] = await Promise.all([import('../server/shard.js'), import('../server/instance.js'), import('../server/starttrace.js')]);
      startTrace('server modules loaded');
      server = shardCount > 1
        ? await startInstance({ rootDirectory: opts.rootDirectory, securePort: port, bindAddress: opts.bindAddress, tokenAuthFile: opts.tokenAuthFile, authentication, logger: opts.logger, shards: shardCount, http2MaxStreamsPerConnection, signal: shutdown.signal })
        : await startServer({ ...opts, signal: shutdown.signal });
    } catch (err) {
      if (shutdown.signal.aborted) return 0;
      process.stderr.write(`kcp-ts start: ${(err as Error).message}\n`);
      return 1;
    }
    const what = shardCount > 1 ? `instance (${shardCount} shards, front-proxy)` : `shard "${opts.shardName ?? 'root'}"`;
    process.stdout.write(`kcp-ts ${what} ready in ${Math.round(performance.now() - t0)} ms at ${server.url}\n`);
    if ('redisUrl' in server) process.stdout.write(`Redis: ${String(server.redisUrl)}\n`);
    if (server.kubeconfigPath) process.stdout.write(`Use it:  export KUBECONFIG=${server.kubeconfigPath}; kubectl get namespaces\n`);
    const running = server;
    return await new Promise<number>((resolveExit) => {
      shutdown.onShutdown(() => { running.stop().then(() => resolveExit(0), () => resolveExit(1)); });
    });
  } finally {
    shutdown.dispose();
  }
}

/**
 * kube-apiserver's audit flags (`--audit-policy-file`, `--audit-log-path`, `--audit-log-maxsize`,
 * `--audit-log-maxbackup`, `--audit-log-maxage`; k8s.io/apiserver/pkg/server/options/audit.go):
 * the policy is read and validated here, so that a bad one is a usage error naming the file and
 * the field. As kube, a policy without a log path (or a path without a policy) audits nothing.
 */
function auditOptions(values: Record<string, string | string[] | boolean | undefined>): ServerOptions['audit'] {
  const num = (flag: string): number | undefined => {
    const v = values[flag];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (typeof v !== 'string' || !/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new Error(`invalid --${flag} "${String(v)}" (a non-negative integer)`);
    return n;
  };
  const maxSizeMB = num('audit-log-maxsize');
  const maxBackups = num('audit-log-maxbackup');
  const maxAgeDays = num('audit-log-maxage');
  const file = values['audit-policy-file'] as string | undefined;
  const path = values['audit-log-path'] as string | undefined;
  const policy = file ? loadAuditPolicy(file) : undefined;
  if (!policy || !path) {
    if (file || path) process.stderr.write(`kcp-ts start: auditing is off: it needs both --audit-policy-file and --audit-log-path\n`);
    return undefined;
  }
  return { policy, path, maxSizeMB, maxBackups, maxAgeDays };
}

/** Flags of `start` that are pflag booleans. */
const PFLAG_BOOLEANS = ['enable-priority-and-fairness'];

/** A pflag boolean's value (Go's strconv.ParseBool spellings); undefined when not given. */
function boolFlag(flag: string, v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw new Error(`invalid argument "${v}" for "--${flag}" flag: strconv.ParseBool: parsing "${v}": invalid syntax`);
}

/** A non-negative integer flag; undefined when not given. */
function countFlag(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new Error(`invalid --${flag} "${v}" (a non-negative integer)`);
  return n;
}

/** Throws `--<flag>: not <what> (…)` when `parse` fails on the flag's file. */
function pemCheck(flag: string, parse: () => unknown, what: string): void {
  try { parse(); } catch (err) { throw new Error(`--${flag}: not ${what} (${(err as Error).message})`); }
}

/** `k=v,k2=v2` → labels. @throws Error naming a malformed entry */
function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`invalid --shard-labels entry "${part}" (want key=value)`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/** The server, CA and client credentials of a kubeconfig's current context. @throws KubeconfigError */
function connectionFromKubeconfig(path: string): Connection {
  const ctx = resolveKubeconfigContext(readKubeconfig(readFileSync(path, 'utf8')));
  const url = new URL(ctx.server);
  return { url: url.origin, ca: ctx.caPem ?? '', cert: ctx.certPem, key: ctx.keyPem, token: ctx.token };
}
