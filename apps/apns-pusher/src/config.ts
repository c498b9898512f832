import { bool, int, optionalStr } from '@herald/config';
import { caFileVar, hostVar, proxyUrlVar, pusherConfig } from '@herald/delivery';

export const apnsPusherConfig = {
  ...pusherConfig,
  APNS_KEY_FILE: optionalStr('Token auth: path to the .p8 signing key (with APNS_KEY_ID and APNS_TEAM_ID)', { secret: true }),
  APNS_KEY_ID: optionalStr('Token auth: the key id of APNS_KEY_FILE'),
  APNS_TEAM_ID: optionalStr('Token auth: the Apple developer team id'),
  APNS_CERT_FILE: optionalStr('Certificate auth: path to the PEM certificate (with APNS_CERT_KEY_FILE)'),
  APNS_CERT_KEY_FILE: optionalStr('Certificate auth: path to the PEM private key', { secret: true }),
  APNS_PRODUCTION: bool('Use Apple production (true) or development (false) endpoint', { default: 'false' }),
  APNS_APP_CREDENTIALS_ONLY: bool(
    "Without APNS_KEY_FILE or APNS_CERT_FILE: true, every app brings its own credentials (admin API) and a push of an app without them is parked (provider-rejected, no-credentials); false, the pusher sends apps without their own to the local sandbox (sandbox.json in SANDBOX_STATE_DIR)",
    { default: 'false' },
  ),
  APNS_ADDRESS: hostVar("APNs host instead of Apple's for the environment credentials (api.push.apple.com or api.sandbox.push.apple.com, per APNS_PRODUCTION); apps with their own credentials keep their endpoint's host"),
  APNS_PORT: int('APNs port', { default: '443', min: 1, max: 65535 }),
  APNS_CA_FILE: caFileVar("PEM CA bundle trusted at the APNs host instead of Node's built-in roots"),
  APNS_PROXY_URL: proxyUrlVar('HTTP CONNECT egress proxy for APNs: http://[user:password@]host:port'),
  APNS_REQUEST_TIMEOUT_MS: int('Per-request timeout for APNs', { default: '5000', min: 100 }),
  APNS_SERVER_ERROR_RETRY_MS: int(
    "The least wait before a push APNs answered with a 5xx is tried again, before every such attempt (Apple: \"After 15 minutes, you can retry JSON payloads that receive response status codes that begin with 5XX\"); the retry schedule's delay if longer. Shorter only against a stand-in such as the sandbox",
    { default: '900000', min: 0 },
  ),
} as const;
