/**
 * A validating admission webhook that allows everything, for the `webhook` benchmark, and at
 * `/convert` the CRD conversion webhook of the `conversion` benchmark: its own CA
 * and serving certificate, HTTPS on a free loopback port. Prints one JSON line
 * `{"url": …, "caBundle": …}` on stdout when it listens; runs until killed. Its own process, so
 * its CPU is not the load generator's.
 */
import { createServer } from 'node:https';
import { createCA, issueServingCert } from '../src/pki/certs.js';

const ca = await createCA('bench-webhook-ca');
const serving = await issueServingCert(ca, { commonName: 'bench-webhook', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
const server = createServer({ key: serving.keyPem, cert: serving.certPem, keepAlive: true }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    if (req.url?.split('?')[0] === '/convert') {
      // CRD conversion of the `conversion` benchmark: v1 `spec.size` is v2 `spec.replicas`.
      const review = JSON.parse(body) as { apiVersion: string; request: { uid: string; desiredAPIVersion: string; objects: { apiVersion: string; spec?: Record<string, unknown> }[] } };
      const to = review.request.desiredAPIVersion;
      const convertedObjects = review.request.objects.map((o) => {
        const spec = { ...o.spec };
        if (to.endsWith('/v2') && 'size' in spec) { spec.replicas = spec.size; delete spec.size; }
        if (to.endsWith('/v1') && 'replicas' in spec) { spec.size = spec.replicas; delete spec.replicas; }
        return { ...o, apiVersion: to, spec };
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: review.request.uid, convertedObjects, result: { status: 'Success' } } }));
      return;
    }
    // The uid is all it needs: found without parsing the whole review (the request's first field).
    const uid = /"uid":"([^"]+)"/.exec(body)?.[1] ?? '';
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } }));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const port = (server.address() as { port: number }).port;
  process.stdout.write(`${JSON.stringify({ url: `https://127.0.0.1:${port}/allow`, origin: `https://127.0.0.1:${port}`, caBundle: Buffer.from(ca.certPem).toString('base64') })}\n`);
});
