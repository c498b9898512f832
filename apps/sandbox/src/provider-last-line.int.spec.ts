import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { createApnsProvider, createFcmProvider, loadSandboxSettings, type PushProvider } from '@herald/providers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RecordView, type Sandbox } from './index.ts';

/**
 * The pushers' last line of defence: a push that slipped past the doors (published before a rule
 * existed, or by a producer that skipped validation) and breaks Apple's or Google's rules is a
 * permanent failure, reported without a request, never retried.
 */
const logger = createLogger({ service: 'last-line-int', level: 'silent' });
let stateDir: string;
let sandbox: Sandbox;
const providers = new Map<Platform, PushProvider>();

const push = (platform: Platform, over: Partial<DevicePush>): DevicePush => ({
  version: 1,
  pushId: derivePushId('job-last-line', platform),
  jobId: 'job-last-line',
  deviceId: platform,
  app: 'demo',
  platform,
  token: platform === 'apns' ? 'cd'.repeat(32) : `last:APA91b${'L'.repeat(60)}`,
  userId: 'u',
  content: { title: 'Hello' },
  priority: 'high',
  acceptedAt: new Date().toISOString(),
  ...over,
});

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-last-line-'));
  sandbox = await startSandbox({ stateDir, logger });
  const settings = await loadSandboxSettings(stateDir);
  providers.set('apns', await createApnsProvider(settings.apns, logger));
  providers.set('fcm', await createFcmProvider(settings.fcm, logger));
});
afterAll(async () => {
  for (const p of providers.values()) await p.close();
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});

const requests = async (): Promise<RecordView[]> => (await (await fetch(`${sandbox.settings.control.url}/records`)).json()) as RecordView[];

describe('providers refuse what Apple and Google would refuse, before sending', () => {
  it.each(['apns', 'fcm'] as const)('%s: an oversize payload is permanent, with its size, and nothing is sent', async (platform) => {
    const before = (await requests()).length;
    const result = await providers.get(platform)!.send(push(platform, { content: { title: 'big', data: { blob: 'x'.repeat(5000) } } }), { apnsTopic: 'com.example.app' });
    // Marked not sent: a provider lane does not take it for Apple's or Google's answer.
    expect(result).toEqual({ kind: 'permanent', reason: expect.stringMatching(/^payload too large: .* is 50\d\d bytes, the limit is 4096$/) as unknown, notSent: true });
    expect((await requests()).length).toBe(before);
  });

  it('apns: a background push forced to priority 10 by an override is permanent', async () => {
    const result = await providers.get('apns')!.send(push('apns', { content: { contentAvailable: true, apns: { headers: { 'apns-priority': '10' } } } }), { apnsTopic: 'com.example.app' });
    expect(result).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/priority 5/) as unknown });
  });

  it('what passes the rules is delivered by the real clients', async () => {
    for (const platform of ['apns', 'fcm'] as const) {
      expect(await providers.get(platform)!.send(push(platform, { content: { data: { sync: '1' } } }), { apnsTopic: 'com.example.app' })).toMatchObject({ kind: 'delivered' });
    }
  });
});
