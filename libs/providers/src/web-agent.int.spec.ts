import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebPushProvider } from './web-push-provider.ts';
import type { WebPushSettings } from './web-settings.ts';
import { generateVapidKeys } from './web-vapid-keys.ts';

/**
 * SSRF: an endpoint whose host is on an app's allow-list but is, or resolves to, an address of the
 * deployment's own network. A real push service of the spec's own listens on 127.0.0.1; `localhost`
 * is a name that resolves there, as an attacker's name under an allowed `*.example.com` would.
 */
const logger = createLogger({ service: 'web-agent-spec', level: 'silent', format: 'json' });
const vapid = { subject: 'mailto:ops@example.com', current: await generateVapidKeys() };
let service: https.Server;
let port: number;
let ca: string;
let connections = 0;
let requests = 0;

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  });
  ca = pems.cert;
  service = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    requests += 1;
    req.resume().on('end', () => res.writeHead(201, { location: `/m/${requests}` }).end());
  });
  service.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  port = (service.address() as AddressInfo).port;
});
afterAll(() => {
  service?.closeAllConnections();
  service?.close();
});

function webPush(host: string): DevicePush {
  const browser = createECDH('prime256v1');
  browser.generateKeys();
  return {
    version: 1,
    pushId: randomUUID(),
    jobId: 'job-ssrf',
    deviceId: '1',
    app: 'shop',
    platform: 'web',
    token: `https://${host}:${port}/push/${randomUUID()}`,
    webKeys: { p256dh: browser.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') },
    userId: 'u1',
    content: { title: 'hi' },
    priority: 'high',
    acceptedAt: new Date().toISOString(),
  };
}

/** One push with a provider of these settings, and whether the push service saw a connection or a request for it. */
async function sendWith(settings: Partial<WebPushSettings>, host: string) {
  const provider = await createWebPushProvider({ vapid, requestTimeoutMs: 5_000, ...settings }, logger);
  const [connectionsBefore, requestsBefore] = [connections, requests];
  try {
    const result = await provider.send(webPush(host), {});
    return { result, connected: connections > connectionsBefore, requested: requests > requestsBefore };
  } finally {
    await provider.close();
  }
}

describe('the Web Push agent connects to public addresses only', () => {
  // Unsent (notSent): no answer of the push service's, so no trial of its lane either (provider-lanes.ts).
  it('refuses a host name that resolves to 127.0.0.1, naming it, without connecting: permanent, unsent, neither a credential failure nor a dead subscription', async () => {
    // On a dual-stack host localhost resolves to ::1 as well, in either order: each is named.
    const named = /^endpoint-address-refused: localhost resolves to (127\.0\.0\.1, not a public address|(127\.0\.0\.1, ::1|::1, 127\.0\.0\.1): none is a public address) \(/;
    expect(await sendWith({}, 'localhost')).toEqual({
      result: { kind: 'permanent', reason: expect.stringMatching(named) as unknown, notSent: true },
      connected: false,
      requested: false,
    });
  });

  it('refuses an endpoint whose host is the address itself', async () => {
    expect(await sendWith({}, '127.0.0.1')).toMatchObject({
      result: { kind: 'permanent', reason: expect.stringMatching(/^endpoint-address-refused: 127\.0\.0\.1 is not a public address \(/) as unknown, notSent: true },
      connected: false,
    });
  });

  it("sends to a trusted origin (the sandbox's, on 127.0.0.1) as before; trusted at another port is not trusted here", async () => {
    expect(await sendWith({ trusted: [{ host: 'localhost', port, ca }] }, 'localhost')).toEqual({ result: expect.objectContaining({ kind: 'delivered' }) as unknown, connected: true, requested: true });
    expect(await sendWith({ trusted: [{ host: '127.0.0.1', port, ca }] }, '127.0.0.1')).toMatchObject({ result: { kind: 'delivered' }, requested: true });
    expect(await sendWith({ trusted: [{ host: 'localhost', port: port + 1, ca }] }, 'localhost')).toMatchObject({
      result: { kind: 'permanent', reason: expect.stringMatching(/^endpoint-address-refused: /) as unknown },
      connected: false,
    });
  });

  it('connects to a range the operator allowed (WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES), verifying the certificate against the usual roots', async () => {
    // Untrusted, the spec's self-signed certificate fails the TLS handshake: the connection was made, and no more.
    const allowed = await sendWith({ privateAddresses: ['127.0.0.0/8', '::1'] }, 'localhost');
    expect(allowed).toMatchObject({ result: { kind: 'transient', reason: expect.stringMatching(/^transport: .*certificate/) as unknown }, connected: true, requested: false });
    expect(await sendWith({ privateAddresses: ['127.0.0.1'] }, '127.0.0.1')).toMatchObject({ connected: true });
    expect(await sendWith({ privateAddresses: ['10.0.0.0/8'] }, 'localhost')).toMatchObject({ result: { kind: 'permanent' }, connected: false });
  });
});
