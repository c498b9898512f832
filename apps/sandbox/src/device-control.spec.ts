import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { routeControl } from './control-server.ts';
import { parseDeviceSpec } from './device-control.ts';
import { DeviceStore } from './device-store.ts';
import { recordExchange, type SandboxContext } from './exchange.ts';
import { FaultTable } from './faults.ts';
import { RecordStore } from './record-store.ts';

const TOKEN = 'ab'.repeat(32);
const newCtx = (): SandboxContext => ({
  faults: new FaultTable(),
  records: new RecordStore(),
  devices: new DeviceStore(),
  logger: createLogger({ service: 'spec', level: 'silent', format: 'json' }),
});
const call = (ctx: SandboxContext, method: string, path: string, body?: unknown) => {
  const answer = routeControl(method, new URL(path, 'http://sandbox'), Buffer.from(body === undefined ? '' : JSON.stringify(body)), ctx);
  return { status: answer.status, body: JSON.parse(answer.body) as unknown };
};
/** What the APNs server records for an accepted (or refused) push. */
function apnsExchange(ctx: SandboxContext, expiration: string, status = 200): void {
  const answer = { status, headers: {}, body: '' };
  const headers = { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.a', 'apns-expiration': expiration, authorization: 'bearer x' };
  const body = Buffer.from('{"aps":{"alert":"hi"}}');
  recordExchange(ctx, { platform: 'apns', path: `/3/device/${TOKEN}`, token: TOKEN, headers, body, answer, clientClosed: false, warnings: [], deliver: status === 200 });
}

describe('parseDeviceSpec', () => {
  it.each<[unknown, string]>([
    [{ token: 't' }, 'platform must be "apns" or "fcm"'],
    [{ platform: 'apns', token: '' }, 'token must be a non-empty string'],
    [{ platform: 'fcm', token: 't', os: 'windows' }, 'os must be "android" or "ios"'],
    [{ platform: 'apns', token: 't', os: 'android' }, 'an APNs device is an Apple device'],
    [null, 'body must be a JSON object'],
  ])('refuses %j', (body, reason) => {
    expect(parseDeviceSpec(Buffer.from(JSON.stringify(body)))).toEqual({ ok: false, reason });
  });

  it('takes platform, token and an optional os', () => {
    expect(parseDeviceSpec(Buffer.from('{"platform":"fcm","token":"t","os":"ios"}'))).toEqual({ ok: true, device: { platform: 'fcm', token: 't', os: 'ios' } });
    expect(parseDeviceSpec(Buffer.from('nope'))).toEqual({ ok: false, reason: 'body must be JSON' });
  });
});

describe('/devices control routes', () => {
  it('delivers directly while online, and stores while offline until the phone is back', () => {
    const ctx = newCtx();
    apnsExchange(ctx, '0');
    expect(call(ctx, 'POST', '/devices/offline', { platform: 'apns', token: TOKEN })).toEqual({ status: 200, body: { platform: 'apns', token: TOKEN, online: false } });
    apnsExchange(ctx, '0');
    apnsExchange(ctx, String(Math.floor(Date.now() / 1000) + 3600));
    apnsExchange(ctx, String(Math.floor(Date.now() / 1000) + 3600), 410);
    expect((call(ctx, 'GET', `/devices/deliveries?platform=apns&token=${TOKEN}`).body as unknown[]).length).toBe(1);
    expect(call(ctx, 'POST', '/devices/online', { platform: 'apns', token: TOKEN })).toEqual({ status: 200, body: { platform: 'apns', token: TOKEN, online: true, delivered: 1 } });
    const deliveries = call(ctx, 'GET', `/devices/deliveries?token=${TOKEN}`).body as { via: string; recordSeq: number; body: unknown; headers: object }[];
    expect(deliveries.map((d) => [d.via, d.recordSeq])).toEqual([['direct', 1], ['stored', 3]]);
    expect(deliveries[1]?.body).toEqual({ aps: { alert: 'hi' } });
    expect(deliveries[1]?.headers).not.toHaveProperty('authorization');
    expect(ctx.records.query().map((r) => r.status)).toEqual([200, 200, 200, 410]);
  });

  it('answers 400 for a bad body, 404 for an unknown devices route, and resets with DELETE /devices', () => {
    const ctx = newCtx();
    expect(call(ctx, 'POST', '/devices/offline', { platform: 'sms', token: 't' })).toEqual({ status: 400, body: { error: 'platform must be "apns" or "fcm"' } });
    expect(call(ctx, 'GET', '/devices/nope').status).toBe(404);
    call(ctx, 'POST', '/devices/offline', { platform: 'apns', token: TOKEN });
    expect(call(ctx, 'DELETE', '/devices')).toEqual({ status: 200, body: { cleared: true } });
    expect(ctx.devices.isOnline('apns', TOKEN)).toBe(true);
  });
});
