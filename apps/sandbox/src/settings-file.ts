import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxIdentity } from './state-files.ts';

export const FCM_PROJECT_ID = 'herald-sandbox';
export const SETTINGS_FILE = 'sandbox.json';

/** The content of `<stateDir>/sandbox.json`: everything a client needs to talk to this sandbox. */
export interface SandboxSettings {
  apns: {
    address: string;
    port: number;
    caFile: string;
    keyFile: string;
    keyId: string;
    teamId: string;
    /** Certificate-based auth alternative: a client certificate and key the sandbox trusts. */
    clientCertFile: string;
    clientKeyFile: string;
  };
  fcm: { host: string; port: number; caFile: string; projectId: string; accessToken: string };
  /** The Web Push service: subscriptions (POST <control>/web/subscriptions) get endpoints under `endpointBase`. */
  web: { host: string; port: number; caFile: string; endpointBase: string };
  control: { url: string };
}

export interface BoundPorts {
  host: string;
  apnsPort: number;
  fcmPort: number;
  webPort: number;
  controlPort: number;
}

/** Clients connect to a literal address even when the servers listen on 0.0.0.0 or ::. */
const clientAddress = (host: string): string => (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);

export function buildSettings(identity: SandboxIdentity, ports: BoundPorts): SandboxSettings {
  const address = clientAddress(ports.host);
  const urlHost = address.includes(':') ? `[${address}]` : address;
  return {
    apns: {
      address,
      port: ports.apnsPort,
      caFile: identity.tlsCertFile,
      keyFile: identity.apnsKeyFile,
      keyId: identity.keyId,
      teamId: identity.teamId,
      clientCertFile: identity.clientCertFile,
      clientKeyFile: identity.clientKeyFile,
    },
    fcm: {
      host: address,
      port: ports.fcmPort,
      caFile: identity.tlsCertFile,
      projectId: FCM_PROJECT_ID,
      accessToken: identity.fcmAccessToken,
    },
    web: { host: address, port: ports.webPort, caFile: identity.tlsCertFile, endpointBase: `https://${urlHost}:${ports.webPort}/wp/` },
    control: { url: `http://${urlHost}:${ports.controlPort}` },
  };
}

/**
 * Rewritten on every start, because the ports may change; written whole and renamed into place,
 * so a reader that waits for the file to appear never reads half of it.
 */
export async function writeSettings(stateDir: string, settings: SandboxSettings): Promise<void> {
  const file = join(stateDir, SETTINGS_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(settings, null, 2)}\n`);
  await rename(tmp, file);
}
