import { readFile } from 'node:fs/promises';
import { ApnsConnection, FcmConnection } from '@herald/contracts';
import type { Command } from 'commander';
import { check, secretFlag } from './credential-options.ts';

export interface ConnectionFlags {
  apnsAddress?: string;
  apnsPort?: string;
  apnsCaFile?: string;
  apnsProxyUrl?: string;
  apnsProxyUrlFile?: string;
  clearApnsConnection?: boolean;
  fcmHost?: string;
  fcmPort?: string;
  fcmCaFile?: string;
  fcmProxyUrl?: string;
  fcmProxyUrlFile?: string;
  clearFcmConnection?: boolean;
}

/** The connection flags `apps add` and `apps update` share (they apply to the app's own credentials). */
export function connectionOptions(cmd: Command): Command {
  return cmd
    .option('--apns-address <host>', "APNs host instead of Apple's (or the sandbox's)")
    .option('--apns-port <port>', 'APNs port')
    .option('--apns-ca-file <file>', "PEM CA bundle trusted at the APNs host instead of Node's built-in roots")
    .option('--apns-proxy-url <url>', 'HTTP CONNECT egress proxy for APNs: http://[user:password@]host:port (stored sealed; with a password, prefer --apns-proxy-url-file)')
    .option('--apns-proxy-url-file <file>', 'a file holding the APNs proxy URL (not on the command line)')
    .option('--clear-apns-connection', "forget the app's APNs connection settings (back to the pusher's defaults); other --apns-* connection flags then set anew")
    .option('--fcm-host <host>', 'FCM host instead of fcm.googleapis.com (or the sandbox)')
    .option('--fcm-port <port>', 'FCM port')
    .option('--fcm-ca-file <file>', "PEM CA bundle trusted at the FCM host instead of Node's built-in roots")
    .option('--fcm-proxy-url <url>', 'HTTP CONNECT egress proxy for FCM: http://[user:password@]host:port (stored sealed; with a password, prefer --fcm-proxy-url-file)')
    .option('--fcm-proxy-url-file <file>', 'a file holding the FCM proxy URL (not on the command line)')
    .option('--clear-fcm-connection', "forget the app's FCM connection settings; other --fcm-* connection flags then set anew");
}

function port(flag: string, raw: string | undefined): { port?: number } {
  if (raw === undefined) return {};
  if (!/^\d+$/.test(raw)) throw new Error(`${flag} must be a port from 1 to 65535, got "${raw}"`);
  return { port: Number(raw) };
}

async function caPem(flag: string, file: string | undefined): Promise<{ caPem?: string }> {
  if (file === undefined) return {};
  try {
    return { caPem: await readFile(file, 'utf8') };
  } catch (err) {
    throw new Error(`${flag}: cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** A proxy URL from its flag or its file; one with a password on the command line draws a warning. */
async function proxyUrl(flag: string, inline: string | undefined, file: string | undefined): Promise<{ proxyUrl?: string }> {
  const url = await secretFlag(flag, inline, file, (v) => /\/\/[^/@]*:[^/@]*@/.test(v));
  return url === undefined ? {} : { proxyUrl: url };
}

const CLEARED = { port: null, caPem: null, proxyUrl: null };

/** The APNs connection change from the flags (validated with the admin API's contract), or undefined when none is given. */
export async function apnsConnectionFromFlags(o: ConnectionFlags): Promise<ApnsConnection | undefined> {
  const set = {
    ...(o.apnsAddress !== undefined && { address: o.apnsAddress }),
    ...port('--apns-port', o.apnsPort),
    ...(await caPem('--apns-ca-file', o.apnsCaFile)),
    ...(await proxyUrl('--apns-proxy-url', o.apnsProxyUrl, o.apnsProxyUrlFile)),
  };
  if (o.clearApnsConnection !== true && Object.keys(set).length === 0) return undefined;
  return check(ApnsConnection, 'APNs connection', { ...(o.clearApnsConnection === true && { address: null, ...CLEARED }), ...set });
}

/** The FCM connection change from the flags, or undefined. */
export async function fcmConnectionFromFlags(o: ConnectionFlags): Promise<FcmConnection | undefined> {
  const set = {
    ...(o.fcmHost !== undefined && { host: o.fcmHost }),
    ...port('--fcm-port', o.fcmPort),
    ...(await caPem('--fcm-ca-file', o.fcmCaFile)),
    ...(await proxyUrl('--fcm-proxy-url', o.fcmProxyUrl, o.fcmProxyUrlFile)),
  };
  if (o.clearFcmConnection !== true && Object.keys(set).length === 0) return undefined;
  return check(FcmConnection, 'FCM connection', { ...(o.clearFcmConnection === true && { host: null, ...CLEARED }), ...set });
}
