/**
 * The one shim the upstream e2e suite needs against a control plane without pods: a loopback
 * HTTPS reverse proxy in front of the server that answers exactly
 * `GET <cluster prefix>/api/v1/namespaces/default/services/kubernetes` and passes every other
 * request through untouched.
 *
 * Why: e2e.test's suite setup on every Ginkgo process (`setupSuitePerGinkgoNode` in
 * k8s.io/kubernetes test/e2e/e2e.go, `getDefaultClusterIPFamily`) reads the `kubernetes` Service
 * of the `default` namespace to learn the cluster's IP family and fails the whole suite when it
 * cannot; no flag turns that off. kcp serves no Services (nor does kcp-ts), so the answer is a
 * synthetic Service of type ClusterIP, `10.0.0.1`, port 443 (the values kube-apiserver's own
 * `kubernetes` Service has with the default service CIDR). Nothing else is faked: every other
 * request, including other Service paths, reaches the server, which answers as it would a
 * client.
 *
 * The proxy adds no identity: the kubeconfig it is used with authenticates with a bearer token,
 * which is passed through with every other header; the connection to the server carries no client
 * certificate. It listens on 127.0.0.1 only and serves the server's own serving certificate, so
 * the server's CA verifies it.
 */
import { request as httpsRequest, createServer, Agent, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where the shim forwards to and what it serves with. */
export interface ShimOptions {
  /** `https://host:port` of the server. */
  upstream: string;
  /** PEM of the CA that signed the server's serving certificate. */
  caPem: string;
  /** Serving certificate and key the shim presents (the server's own, valid for 127.0.0.1). */
  certPem: string;
  keyPem: string;
}

/** A running shim. */
export interface RunningShim {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** How many requests the shim answered itself (the Service GET) — the report states it. */
  answered(): number;
  stop(): Promise<void>;
}

/** Paths the shim answers: the `kubernetes` Service of `default`, under a `/clusters/<name>` prefix or none. */
const KUBERNETES_SERVICE = /^(?:\/clusters\/[^/]+)?\/api\/v1\/namespaces\/default\/services\/kubernetes$/;

/** The synthetic `kubernetes` Service (JSON; client-go accepts it though it asked for protobuf first). */
function kubernetesService(): object {
  return {
    kind: 'Service', apiVersion: 'v1',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: {
      type: 'ClusterIP', clusterIP: '10.0.0.1', clusterIPs: ['10.0.0.1'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack',
      ports: [{ name: 'https', protocol: 'TCP', port: 443, targetPort: 6443 }], sessionAffinity: 'None',
    },
    status: { loadBalancer: {} },
  };
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) a proxy must not forward. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate']);

function forwardedHeaders(headers: IncomingMessage['headers'], host: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  out.host = host;
  return out;
}

/**
 * Starts the shim on a free loopback port.
 * @throws Error when it cannot listen.
 */
export async function startShim(opts: ShimOptions): Promise<RunningShim> {
  const up = new URL(opts.upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca: opts.caPem });
  let answered = 0;
  const server: Server = createServer({ cert: opts.certPem, key: opts.keyPem }, (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && KUBERNETES_SERVICE.test(path)) {
      answered++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(kubernetesService()));
      return;
    }
    const out = httpsRequest({
      host: up.hostname, port: up.port, method: req.method, path: req.url, agent,
      headers: forwardedHeaders(req.headers, up.host),
    }, (upRes) => {
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(upRes.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
      res.writeHead(upRes.statusCode ?? 502, headers);
      // A watch's headers come before any event (client-go's Watch returns once it has them);
      // writeHead alone would hold them until the first body byte. Chunks go out as they arrive.
      res.flushHeaders();
      upRes.pipe(res);
      upRes.on('error', () => res.destroy());
    });
    out.on('error', (err) => {
      if (res.headersSent) { res.destroy(); return; }
      res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({
        kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 502, reason: 'InternalError',
        message: `upstream e2e shim: forwarding to ${opts.upstream}: ${err.message}`,
      }));
    });
    // A client that goes away (a watch it stops) ends the forwarded request too.
    res.on('close', () => { if (!res.writableFinished) out.destroy(); });
    req.pipe(out);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', () => resolve()); });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    answered: () => answered,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
