import { describe, expect, it } from 'vitest';
import { apnsConnection, appDefaults, connectionDefaults, fcmConnection, mergeConnection } from './provider-connection.ts';

const GLOBAL_CA = '-----BEGIN CERTIFICATE-----\nglobal\n-----END CERTIFICATE-----\n';
const APP_CA = '-----BEGIN CERTIFICATE-----\napp\n-----END CERTIFICATE-----\n';
const apple = { address: 'api.push.apple.com', port: 443 };

describe('pusher connection defaults', () => {
  it('come from the pusher platform\'s own variables only', () => {
    const config = {
      APNS_ADDRESS: 'relay.corp.example',
      APNS_PORT: 8443,
      APNS_CA_FILE: { path: '/etc/herald/ca.pem', pem: GLOBAL_CA },
      APNS_PROXY_URL: 'http://proxy.corp.example:3128',
      FCM_PROXY_URL: 'http://other:3128',
    };
    expect(connectionDefaults('apns', config)).toEqual({ host: 'relay.corp.example', port: 8443, caPem: GLOBAL_CA, proxyUrl: 'http://proxy.corp.example:3128' });
    expect(connectionDefaults('fcm', config)).toEqual({ proxyUrl: 'http://other:3128' });
    expect(connectionDefaults('fcm', {})).toEqual({});
  });
});

describe('an app\'s connection over the defaults', () => {
  const defaults = { host: 'relay.corp.example', port: 8443, caPem: GLOBAL_CA, proxyUrl: 'http://proxy.corp.example:3128' };

  it('wins part by part; parts it does not set keep the default', () => {
    expect(mergeConnection({ proxyUrl: 'http://u:p@127.0.0.1:9000' }, defaults)).toEqual({ ...defaults, proxyUrl: 'http://u:p@127.0.0.1:9000' });
    expect(mergeConnection({ host: 'app.example', caPem: APP_CA }, defaults)).toEqual({ host: 'app.example', port: 8443, caPem: APP_CA, proxyUrl: defaults.proxyUrl });
    expect(mergeConnection(undefined, defaults)).toEqual(defaults);
    expect(mergeConnection({ port: 2197 }, {})).toEqual({ port: 2197 });
  });

  it('apps inherit only the pusher\'s CA and proxy, never its host or port (the app\'s endpoint picks Apple\'s host)', () => {
    expect(appDefaults(defaults)).toEqual({ caPem: GLOBAL_CA, proxyUrl: defaults.proxyUrl });
    expect(apnsConnection({ address: 'api.sandbox.push.apple.com', port: 443 }, mergeConnection(undefined, appDefaults(defaults)))).toMatchObject({
      address: 'api.sandbox.push.apple.com',
      port: 443,
      ca: GLOBAL_CA,
    });
  });

  it('becomes APNs settings over Apple\'s host, with the proxy parsed (credentials kept for Proxy-Authorization)', () => {
    expect(apnsConnection(apple, {})).toEqual(apple);
    expect(apnsConnection(apple, mergeConnection({ proxyUrl: 'http://u:p%40ss@127.0.0.1:9000' }, defaults))).toEqual({
      address: 'relay.corp.example',
      port: 8443,
      ca: GLOBAL_CA,
      proxy: { host: '127.0.0.1', port: 9000, username: 'u', password: 'p@ss' },
    });
    // Over the sandbox: its CA stays unless the app gives its own.
    const sandbox = { address: '127.0.0.1', port: 2197, ca: 'sandbox' };
    expect(apnsConnection(sandbox, { proxyUrl: 'http://127.0.0.1:9000' })).toEqual({ ...sandbox, proxy: { host: '127.0.0.1', port: 9000 } });
    expect(apnsConnection(sandbox, { caPem: APP_CA }).ca).toBe(APP_CA);
  });

  it('becomes FCM settings with an endpoint only when host, port or CA differ from Google\'s', () => {
    expect(fcmConnection(undefined, {})).toEqual({});
    expect(fcmConnection(undefined, { proxyUrl: 'http://127.0.0.1:9000' })).toEqual({ proxy: { host: '127.0.0.1', port: 9000 } });
    expect(fcmConnection(undefined, { caPem: APP_CA })).toEqual({ endpoint: { host: 'fcm.googleapis.com', port: 443, ca: APP_CA } });
    expect(fcmConnection(undefined, { host: 'fcm-relay.example' })).toEqual({ endpoint: { host: 'fcm-relay.example', port: 443 } });
    const sandbox = { host: '127.0.0.1', port: 4443, ca: 'sandbox' };
    expect(fcmConnection(sandbox, { port: 5443 })).toEqual({ endpoint: { ...sandbox, port: 5443 } });
  });

  it('refuses a proxy URL that slipped past validation instead of connecting directly', () => {
    expect(() => apnsConnection(apple, { proxyUrl: 'http://proxy' })).toThrow(/must name the port/);
  });
});
