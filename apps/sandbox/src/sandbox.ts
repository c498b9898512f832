import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer, ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@herald/logging';
import { createApnsServer } from './apns-server.ts';
import { createControlServer } from './control-server.ts';
import type { SandboxContext } from './exchange.ts';
import { createFcmServer } from './fcm-server.ts';
import { FaultTable } from './faults.ts';
import { CredentialRegistry } from './credential-registry.ts';
import { DeviceStore } from './device-store.ts';
import { PauseLog } from './pause-log.ts';
import { DEFAULT_MAX_RECORDS, RecordStore } from './record-store.ts';
import { buildSettings, FCM_PROJECT_ID, writeSettings, type SandboxSettings } from './settings-file.ts';
import { ensureIdentity } from './state-files.ts';
import { createWebPushServer } from './web-server.ts';
import { WebPushStore } from './web-store.ts';

export interface SandboxOptions {
  stateDir: string;
  apnsPort?: number;
  fcmPort?: number;
  webPort?: number;
  controlPort?: number;
  host?: string;
  logger: Logger;
  /** How many recent requests `GET /records` (and deliveries `GET /devices/deliveries`) can return; counters are unbounded. */
  maxRecords?: number;
}

export interface Sandbox {
  apnsPort: number;
  fcmPort: number;
  webPort: number;
  controlPort: number;
  /** What was written to `<stateDir>/sandbox.json`. */
  settings: SandboxSettings;
  close(): Promise<void>;
}

function listen(server: HttpServer | Http2SecureServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Track HTTP/2 sessions so close() can end them instead of waiting for clients to hang up. */
function trackSessions(server: Http2SecureServer): () => void {
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (s: ServerHttp2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  return () => sessions.forEach((s) => s.destroy());
}

const closeServer = (server: HttpServer | Http2SecureServer): Promise<void> =>
  new Promise((resolve) => server.close(() => resolve()));

/** Start the APNs, FCM and control servers; create or reuse credentials in `stateDir`; write sandbox.json. */
export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const identity = await ensureIdentity(options.stateDir);
  const credentials = new CredentialRegistry();
  const ctx: SandboxContext = {
    faults: new FaultTable(),
    records: new RecordStore(options.maxRecords ?? DEFAULT_MAX_RECORDS),
    devices: new DeviceStore(options.maxRecords ?? DEFAULT_MAX_RECORDS),
    web: new WebPushStore(Math.min(options.maxRecords ?? 100_000, 100_000)),
    logger: options.logger,
    credentials,
    pauses: new PauseLog(),
  };
  credentials.addApnsKey({ publicKey: identity.apnsPublicKey, keyId: identity.keyId, teamId: identity.teamId });
  const providerKey = credentials;
  const tls = { cert: identity.tlsCert, key: identity.tlsKey };
  const apns = createApnsServer({ ...tls, providerKey, clientCa: identity.tlsCert }, ctx);
  const fcm = createFcmServer({ ...tls, projectId: FCM_PROJECT_ID, accessToken: identity.fcmAccessToken, projects: credentials }, ctx);
  const web = createWebPushServer({ ...tls, store: ctx.web as WebPushStore }, ctx);
  const control = createControlServer(ctx);
  const endSessions = [trackSessions(apns), trackSessions(fcm), trackSessions(web)];
  const apnsPort = await listen(apns, options.apnsPort ?? 0, host);
  const fcmPort = await listen(fcm, options.fcmPort ?? 0, host);
  const webPort = await listen(web, options.webPort ?? 0, host);
  const controlPort = await listen(control, options.controlPort ?? 0, host);
  const settings = buildSettings(identity, { host, apnsPort, fcmPort, webPort, controlPort });
  (ctx.web as WebPushStore).endpointBase = settings.web.endpointBase;
  await writeSettings(options.stateDir, settings);
  options.logger.info({ apnsPort, fcmPort, webPort, controlPort, stateDir: options.stateDir }, 'sandbox listening');
  return {
    apnsPort,
    fcmPort,
    webPort,
    controlPort,
    settings,
    close: async () => {
      ctx.pauses?.close();
      endSessions.forEach((end) => end());
      control.closeAllConnections();
      await Promise.all([closeServer(apns), closeServer(fcm), closeServer(web), closeServer(control)]);
    },
  };
}
