import { loadConfig } from '@herald/config';
import { generateVapidKeys } from '@herald/providers';
import { describe, expect, it } from 'vitest';
import { webPusherConfig } from './config.ts';
import { webSettings } from './web-settings.ts';

describe("the web-pusher's own provider", () => {
  // Signed as the process pair, a push service's refusal of the JWT is parked as process-vapid-refused
  // (the deployment's settings), never counted towards banning the app that had no keys of its own.
  it('signs with WEB_PUSH_VAPID_* as the process pair, not as an app pair', async () => {
    const keys = await generateVapidKeys();
    const env = { WEB_PUSH_VAPID_PUBLIC_KEY: keys.publicKey, WEB_PUSH_VAPID_PRIVATE_KEY: keys.privateKey, WEB_PUSH_VAPID_SUBJECT: 'mailto:ops@example.com' };
    const settings = await webSettings(loadConfig(webPusherConfig, env));
    expect(settings.processVapid).toEqual({ subject: 'mailto:ops@example.com', current: keys });
    expect(settings.vapid).toBeUndefined();
    expect((await webSettings(loadConfig(webPusherConfig, {}))).processVapid).toBeUndefined();
  });

  it('connects to the private ranges WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES names, and no others', async () => {
    expect((await webSettings(loadConfig(webPusherConfig, { WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES: '10.20.0.0/16' }))).privateAddresses).toEqual(['10.20.0.0/16']);
    expect((await webSettings(loadConfig(webPusherConfig, {}))).privateAddresses).toEqual([]);
  });
});
