/** An HTTP CONNECT egress proxy (parsed from an HTTPS_PROXY-style URL); user and password go as Proxy-Authorization: Basic. */
export interface ProxySettings {
  host: string;
  port: number;
  username?: string;
  password?: string;
}

/** How to reach APNs (or the sandbox) and authenticate. */
export interface ApnsSettings {
  address: string;
  port: number;
  production: boolean;
  auth:
    | { kind: 'token'; /** PEM contents of the .p8 key */ key: string; keyId: string; teamId: string }
    | {
        kind: 'certificate';
        cert: string;
        key: string;
        passphrase?: string;
        /** Where the certificate was read from, when not the app's stored credentials (the pushers' own APNS_CERT_FILE): how to replace it. */
        file?: string;
      };
  /** PEM bundle trusted at `address` instead of Node's built-in roots (the sandbox's certificate); omit for Apple. */
  ca?: string;
  /** Tunnel the HTTP/2 connection through this proxy (HTTP CONNECT to address:port). */
  proxy?: ProxySettings;
  defaultTopic?: string;
  requestTimeoutMs: number;
}

/** How to reach FCM (or the sandbox) and authenticate. */
export interface FcmSettings {
  projectId: string;
  credential: { kind: 'service-account'; json: string } | { kind: 'access-token'; accessToken: string };
  /**
   * Connect here instead of fcm.googleapis.com:443 (the sandbox), trusting `ca` (a PEM bundle,
   * instead of Node's built-in roots) there. `{ host: 'fcm.googleapis.com', port: 443, ca }` only sets the CA.
   */
  endpoint?: { host: string; port: number; ca?: string };
  /** Tunnel connections to FCM (and, for a service account, to Google's token server) through this proxy. */
  proxy?: ProxySettings;
  requestTimeoutMs: number;
  /** Most HTTP/2 sessions kept open to FCM (each carries as many requests at once as FCM's SETTINGS allow, 100 at Google). */
  maxSessions?: number;
}
