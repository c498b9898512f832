import { bool, int, optionalStr } from '@herald/config';
import { caFileVar, hostVar, portVar, proxyUrlVar, pusherConfig } from '@herald/delivery';

export const fcmPusherConfig = {
  ...pusherConfig,
  FCM_SERVICE_ACCOUNT_FILE: optionalStr('Path to a Firebase service-account JSON; without it the FCM sandbox is used', { secret: true }),
  FCM_PROJECT_ID: optionalStr('Firebase project id (default: the one in the service-account file)'),
  FCM_APP_CREDENTIALS_ONLY: bool(
    'Without FCM_SERVICE_ACCOUNT_FILE: true, every app brings its own credentials (admin API) and a push of an app without them is parked (provider-rejected, no-credentials); false, the pusher sends apps without their own to the local sandbox (sandbox.json in SANDBOX_STATE_DIR)',
    { default: 'false' },
  ),
  FCM_HOST: hostVar('FCM host instead of fcm.googleapis.com'),
  FCM_PORT: portVar('FCM port instead of 443'),
  FCM_CA_FILE: caFileVar("PEM CA bundle trusted at the FCM host instead of Node's built-in roots"),
  FCM_PROXY_URL: proxyUrlVar("HTTP CONNECT egress proxy for FCM and Google's token server: http://[user:password@]host:port"),
  FCM_REQUEST_TIMEOUT_MS: int('Per-request timeout for FCM', { default: '5000', min: 100 }),
} as const;
