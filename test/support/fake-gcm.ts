import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Just enough of Google's GCM device endpoints for Chromium's `PushManager.subscribe()` to
 * succeed offline. Chromium does not speak RFC 8030 to subscribe: its GCM client first checks in
 * (`POST /checkin`, an AndroidCheckinRequest protobuf, answered with an android id and a
 * security token), then registers the VAPID key (`POST /register`, a form, answered
 * `token=<registration token>`). Both URLs can be moved with Chromium's `--gcm-checkin-url` and
 * `--gcm-registration-url` switches (google_apis/gcm/engine/gservices_switches.cc). The
 * subscription's endpoint is still built from a hard-wired Google prefix and the token, and
 * delivery would need Google's MCS protocol (`--gcm-mcs-endpoint`), which this does not speak.
 */
export interface FakeGcm {
  /** Chromium switches that send its check-in and registration here (and MCS nowhere). */
  chromiumArgs: string[];
  /** The registration requests' form fields (sender = the VAPID public key), oldest first. */
  registrations: Array<Record<string, string>>;
  close(): Promise<void>;
}

/** AndroidCheckinResponse: stats_ok (1, varint) = true, android_id (7, fixed64), security_token (8, fixed64). */
function checkinResponse(androidId: bigint, securityToken: bigint): Buffer {
  const fixed64 = (tag: number, value: bigint): Buffer => {
    const b = Buffer.alloc(9);
    b[0] = tag;
    b.writeBigUInt64LE(value, 1);
    return b;
  };
  return Buffer.concat([Buffer.from([0x08, 0x01]), fixed64((7 << 3) | 1, androidId), fixed64((8 << 3) | 1, securityToken)]);
}

export async function startFakeGcm(): Promise<FakeGcm> {
  const registrations: Array<Record<string, string>> = [];
  let tokens = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/checkin') {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(checkinResponse(4_815_162_342n, 1_123_581_321n));
        return;
      }
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      registrations.push(form);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`token=fake-gcm-registration-${++tokens}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    chromiumArgs: [`--gcm-checkin-url=${base}/checkin`, `--gcm-registration-url=${base}/register`, '--gcm-mcs-endpoint=https://127.0.0.1:9'],
    registrations,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
