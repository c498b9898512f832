import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@herald/logging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstBlockNeedsRewrite, SchemeFilter } from './lenient-scheme.ts';
import { startSandbox, type RecordView, type Sandbox } from './index.ts';

const logger = createLogger({ service: 'scheme-int', level: 'silent' });
let stateDir: string;
let sandbox: Sandbox;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-scheme-'));
  sandbox = await startSandbox({ stateDir, logger });
});
afterAll(async () => {
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});

const fcmConnections = async (): Promise<{ direct: number; filtered: number }> =>
  ((await (await fetch(`${sandbox.settings.control.url}/stats`)).json()) as { fcmConnections: { direct: number; filtered: number } }).fcmConnections;

/**
 * Send FCM v1 requests over one HTTP/2 session with the given :scheme, as firebase-admin's HTTP/2
 * transport does; `idleFirstMs`: connect, then wait that long before the first request (as a
 * provider that connects when it is made).
 */
async function sendOver(scheme: string, tokens: string[], idleFirstMs = 0): Promise<number[]> {
  const { fcm } = sandbox.settings;
  const session = http2.connect(`https://${fcm.host}:${fcm.port}`, { ca: await readFile(fcm.caFile, 'utf8'), ALPNProtocols: ['h2'] });
  try {
    if (idleFirstMs > 0) {
      await new Promise((resolve, reject) => session.once('connect', resolve).once('error', reject));
      await new Promise((r) => setTimeout(r, idleFirstMs));
    }
    return await Promise.all(
      tokens.map(
        (token) =>
          new Promise<number>((resolve, reject) => {
            const req = session.request({
              ':method': 'POST',
              ':scheme': scheme,
              ':path': `/v1/projects/${fcm.projectId}/messages:send`,
              authorization: `Bearer ${fcm.accessToken}`,
              'content-type': 'application/json',
            });
            let status = 0;
            req.on('response', (headers) => (status = Number(headers[':status'])));
            req.resume();
            req.on('end', () => resolve(status));
            req.on('error', reject);
            req.end(JSON.stringify({ message: { token, notification: { title: 'scheme' } } }));
          }),
      ),
    );
  } finally {
    session.close();
  }
}

describe('the FCM server accepts what Google accepts', () => {
  it('answers requests whose :scheme is "https:" (firebase-admin 13.x HTTP/2) instead of resetting them', async () => {
    const tokens = [1, 2, 3].map((i) => `scheme-${i}:APA91b${'x'.repeat(40)}`);
    const before = await fcmConnections();
    // The first request carries the literal, the next ones HPACK's dynamic-table index for it.
    expect(await sendOver('https:', tokens)).toEqual([200, 200, 200]);
    expect(await fcmConnections()).toEqual({ ...before, filtered: before.filtered + 1 });
    const records = (await (await fetch(`${sandbox.settings.control.url}/records?platform=fcm`)).json()) as RecordView[];
    expect(records.filter((r) => tokens.includes(r.token ?? '')).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('still answers the usual :scheme "https", without the filter', async () => {
    const before = await fcmConnections();
    expect(await sendOver('https', [`plain:APA91b${'x'.repeat(40)}`])).toEqual([200]);
    expect(await fcmConnections()).toEqual({ ...before, direct: before.direct + 1 });
  });

  it('serves a client that connected ahead of its first request without the filter', async () => {
    const before = await fcmConnections();
    expect(await sendOver('https', [`ahead-1:APA91b${'x'.repeat(40)}`, `ahead-2:APA91b${'x'.repeat(40)}`], 600)).toEqual([200, 200]);
    expect(await fcmConnections()).toEqual({ ...before, direct: before.direct + 1 });
  });
});

const frame = (type: number, payload: Buffer, flags = 0): Buffer => {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(1, 5);
  return Buffer.concat([header, payload]);
};
const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const plainLiteral = (s: string): Buffer => Buffer.concat([Buffer.from([s.length]), Buffer.from(s)]);
const [SETTINGS, HEADERS, CONTINUATION, END_HEADERS] = [0x4, 0x1, 0x9, 0x4];

describe('firstBlockNeedsRewrite: which connections go through the filter', () => {
  const settings = frame(SETTINGS, plainLiteral('https:'));
  it('waits for the whole first header block', () => {
    const headers = frame(HEADERS, Buffer.concat([Buffer.from([0x87]), plainLiteral('https:')]), END_HEADERS);
    const wire = Buffer.concat([preface, settings, headers]);
    expect(firstBlockNeedsRewrite(wire.subarray(0, wire.length - 1))).toBeUndefined();
    expect(firstBlockNeedsRewrite(wire)).toBe(true);
  });
  it('passes a client whose first request sends the usual scheme (static index 7), whatever other frames hold', () => {
    expect(firstBlockNeedsRewrite(Buffer.concat([preface, settings, frame(HEADERS, Buffer.from([0x82, 0x87, 0x84]), END_HEADERS)]))).toBe(false);
  });
  it('reads the literal in a CONTINUATION of the first block', () => {
    const wire = Buffer.concat([preface, frame(HEADERS, Buffer.from([0x82])), frame(CONTINUATION, plainLiteral('https:'), END_HEADERS)]);
    expect(firstBlockNeedsRewrite(wire)).toBe(true);
    expect(firstBlockNeedsRewrite(Buffer.concat([preface, frame(HEADERS, Buffer.from([0x82]))]))).toBeUndefined();
  });
});

describe('SchemeFilter', () => {

  it('rewrites the literal in header blocks only, however the bytes are split', () => {
    const headers = frame(0x1, Buffer.concat([Buffer.from([0x47]), plainLiteral('https:')]));
    const data = frame(0x0, plainLiteral('https:'));
    const wire = Buffer.concat([preface, headers, data]);
    const filter = new SchemeFilter();
    const out = Buffer.concat([...wire].map((byte) => filter.push(Buffer.from([byte]))));
    expect(out.length).toBe(wire.length);
    expect(out.subarray(0, preface.length)).toEqual(preface);
    expect(out.subarray(preface.length, preface.length + headers.length)).toEqual(frame(0x1, Buffer.concat([Buffer.from([0x47]), plainLiteral('httpsB')])));
    expect(out.subarray(preface.length + headers.length)).toEqual(data);
  });
});
