/** How to reach APNs (or the sandbox) and authenticate. */
export interface ApnsSettings {
  address: string;
  port: number;
  production: boolean;
  auth:
    | { kind: 'token'; /** PEM contents of the .p8 key */ key: string; keyId: string; teamId: string }
    | { kind: 'certificate'; cert: string; key: string; passphrase?: string };
  /** PEM to trust (the sandbox's certificate); omit for Apple. */
  ca?: string;
  defaultTopic?: string;
  requestTimeoutMs: number;
}

/** How to reach FCM (or the sandbox) and authenticate. */
export interface FcmSettings {
  projectId: string;
  credential: { kind: 'service-account'; json: string } | { kind: 'access-token'; accessToken: string };
  /** Redirect to the sandbox: connect here instead of fcm.googleapis.com:443. */
  endpoint?: { host: string; port: number; ca?: string };
  requestTimeoutMs: number;
  /** Most HTTP/1.1 connections kept open to FCM (each carries one request at a time). */
  maxConnections?: number;
}
