import { int, optionalStr } from '@herald/config';
import { pusherConfig } from '@herald/delivery';

export const fcmPusherConfig = {
  ...pusherConfig,
  FCM_SERVICE_ACCOUNT_FILE: optionalStr('Path to a Firebase service-account JSON; without it the FCM sandbox is used', { secret: true }),
  FCM_PROJECT_ID: optionalStr('Firebase project id (default: the one in the service-account file)'),
  FCM_REQUEST_TIMEOUT_MS: int('Per-request timeout for FCM', { default: '5000', min: 100 }),
} as const;
