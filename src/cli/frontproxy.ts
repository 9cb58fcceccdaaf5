/**
 * `kcp-ts front-proxy [flags]`: the front-proxy as its own process (src/proxy/frontproxy.ts).
 * Flags as kcp's front-proxy and kube-apiserver name them; `--pki-directory` fills in every
 * certificate from an instance's PKI directory (what `kcp-ts start` creates) for local use.
 * Exit codes: 0 after SIGTERM/SIGINT, 1 on start-up failure, 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startFrontProxy } from '../proxy/frontproxy.js';
import { loadTokenFile } from '../auth/authn.js';
import { RevokedCertificates } from '../auth/revocation.js';
import { PKI_FILE_NAMES } from '../pki/store.js';
import { readKubeconfig, resolveKubeconfigContext } from '../pki/kubeconfig.js';
import type { Connection } from '../client/rest.js';
import type { ShutdownSignals } from './signals.js';
import { HTTP2_STREAMS_USAGE, http2StreamsFlag, readFlagFile } from './flags.js';
import { AUTHENTICATION_FLAG_OPTIONS, authenticationFlagsUsage, authenticationFromFlagValues } from '../auth/authconfig.js';
import { JWTAuthenticators } from '../auth/oidc.js';
import { DEFAULT_SA_ISSUER } from '../auth/serviceaccounts.js';

export const FRONT_PROXY_USAGE = `Usage: kcp-ts front-proxy [flags]

Runs the front-proxy of a kcp-ts instance: one URL for every shard. It reads the instance's Shard
objects from the root shard, watches every shard's logical clusters, and forwards
/clusters/<workspace path>/... to the shard holding that workspace, stating the client's identity
in X-Remote-User/-Group/-Extra-* headers with its own client certificate.

Flags:
  --pki-directory DIR            take every certificate below from an instance's PKI directory (the
                                 root directory of its root shard); flags given still win
  --root-shard-url URL           the root shard (with --pki-directory; its system:admin certificate
                                 is used to read it)
  --root-kubeconfig FILE         the root shard and the credentials to read it and watch the shards
                                 (system:masters), instead of --root-shard-url
  --root-kubeconfig-context NAME context of --root-kubeconfig (default its current context)
  --secure-port PORT             HTTPS port (default 6443)
  --bind-address ADDR            listen address (default 127.0.0.1)
  --tls-cert-file FILE           serving certificate (PEM)
  --tls-private-key-file FILE    its key
  --client-ca-file FILE          CA of client certificates that authenticate users
  --proxy-client-cert-file FILE  the front-proxy's client certificate towards shards (signed by the
                                 shards' request-header CA)
  --proxy-client-key-file FILE   its key
  --token-auth-file FILE         static bearer tokens, kube-apiserver CSV format
${authenticationFlagsUsage(33)}  --revoked-client-certificates-file FILE
                                 serial numbers (hex, one per line) of client certificates to
                                 refuse; re-read when it changes
${HTTP2_STREAMS_USAGE.replace(/^ {28}/gm, ' '.repeat(33))}  -h, --help                     this help
`;

/** Runs `kcp-ts front-proxy` with its arguments; resolves to the exit code. */
export async function frontProxyMain(args: string[], shutdown: ShutdownSignals): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args, strict: true, allowPositionals: false,
      options: {
        'pki-directory': { type: 'string' }, 'root-shard-url': { type: 'string' }, 'root-kubeconfig': { type: 'string' },
        'root-kubeconfig-context': { type: 'string' }, 'secure-port': { type: 'string' }, 'bind-address': { type: 'string' },
        'tls-cert-file': { type: 'string' }, 'tls-private-key-file': { type: 'string' }, 'client-ca-file': { type: 'string' },
        'proxy-client-cert-file': { type: 'string' }, 'proxy-client-key-file': { type: 'string' }, 'token-auth-file': { type: 'string' },
        'revoked-client-certificates-file': { type: 'string' }, 'http2-max-streams-per-connection': { type: 'string' },
        ...AUTHENTICATION_FLAG_OPTIONS,
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`kcp-ts front-proxy: ${(err as Error).message}\n\n${FRONT_PROXY_USAGE}`);
    return 2;
  }
  if (values.help) { process.stdout.write(FRONT_PROXY_USAGE); return 0; }
  const usage = (m: string) => { process.stderr.write(`kcp-ts front-proxy: ${m}\n`); return 2; };
  const port = values['secure-port'] === undefined ? 6443 : Number(values['secure-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usage(`invalid --secure-port "${values['secure-port']}"`);
  let http2MaxStreamsPerConnection: number | undefined;
  try { http2MaxStreamsPerConnection = http2StreamsFlag(values['http2-max-streams-per-connection']); } catch (err) { return usage((err as Error).message); }
  const pki = values['pki-directory'] ? resolve(values['pki-directory']) : undefined;
  const file = (flag: string, fromPki: string | undefined): string => {
    const path = (values as Record<string, string | undefined>)[flag] ?? (pki && fromPki ? join(pki, fromPki) : undefined);
    if (!path) throw new Error(`--${flag} is required (or --pki-directory)`);
    return readFlagFile(flag, path);
  };
  let rootShard: Connection;
  let authentication: ReturnType<typeof authenticationFromFlagValues>;
  let material: { servingCert: string; servingKey: string; clientCA: string; proxyClientCert: string; proxyClientKey: string };
  try {
    if (values['root-kubeconfig']) {
      const text = readFlagFile('root-kubeconfig', values['root-kubeconfig']);
      const ctx = resolveKubeconfigContext(readKubeconfig(text), values['root-kubeconfig-context']);
      rootShard = { url: new URL(ctx.server).origin, ca: ctx.caPem ?? '', cert: ctx.certPem, key: ctx.keyPem, token: ctx.token };
    } else if (values['root-shard-url'] && pki) {
      let url: URL;
      try { url = new URL(values['root-shard-url']); } catch { throw new Error(`invalid --root-shard-url "${values['root-shard-url']}"`); }
      rootShard = {
        url: url.origin, ca: readFileSync(join(pki, `${PKI_FILE_NAMES.ca}.crt`), 'utf8'),
        cert: readFileSync(join(pki, `${PKI_FILE_NAMES.systemAdmin}.crt`), 'utf8'), key: readFileSync(join(pki, `${PKI_FILE_NAMES.systemAdmin}.key`), 'utf8'),
      };
    } else {
      throw new Error('the root shard is required: --root-kubeconfig FILE, or --root-shard-url URL with --pki-directory DIR');
    }
    authentication = authenticationFromFlagValues(values, [DEFAULT_SA_ISSUER]);
    material = {
      servingCert: file('tls-cert-file', `${PKI_FILE_NAMES.serving}.crt`), servingKey: file('tls-private-key-file', `${PKI_FILE_NAMES.serving}.key`),
      clientCA: file('client-ca-file', `${PKI_FILE_NAMES.ca}.crt`),
      proxyClientCert: file('proxy-client-cert-file', `${PKI_FILE_NAMES.frontProxyClient}.crt`), proxyClientKey: file('proxy-client-key-file', `${PKI_FILE_NAMES.frontProxyClient}.key`),
    };
  } catch (err) {
    return usage((err as Error).message);
  }
  try {
    const t0 = performance.now();
    let proxy;
    const jwt = authentication?.config.jwt.length ? new JWTAuthenticators(authentication.config, authentication.algorithms) : undefined;
    jwt?.start();
    try {
      proxy = await startFrontProxy({
        jwt,
        securePort: port, bindAddress: values['bind-address'], rootShard, ...material, http2MaxStreamsPerConnection,
        tokens: values['token-auth-file'] ? loadTokenFile(values['token-auth-file']) : undefined,
        revoked: values['revoked-client-certificates-file'] ? new RevokedCertificates(values['revoked-client-certificates-file'], (m) => process.stderr.write(`kcp-ts front-proxy: ${m}\n`)) : undefined,
        log: (m) => process.stderr.write(`kcp-ts front-proxy: ${m}\n`),
      });
    } catch (err) {
      await jwt?.close();
      if (shutdown.signal.aborted) return 0;
      process.stderr.write(`kcp-ts front-proxy: ${(err as Error).message}\n`);
      return 1;
    }
    process.stdout.write(`kcp-ts front-proxy ready in ${Math.round(performance.now() - t0)} ms at ${proxy.url} (${proxy.directory.list().length} shards, ${proxy.directory.size} logical clusters indexed)\n`);
    const running = proxy;
    return await new Promise<number>((resolveExit) => {
      shutdown.onShutdown(() => { running.stop().then(() => jwt?.close()).then(() => resolveExit(0), () => resolveExit(1)); });
    });
  } finally {
    shutdown.dispose();
  }
}
