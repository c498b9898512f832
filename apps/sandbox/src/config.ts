import { bindAddress, int, oneOf, str } from '@herald/config';

/** The sandbox's environment variables (see README). */
export const sandboxConfig = {
  SANDBOX_STATE_DIR: str('Where the sandbox keeps its certificate, keys and sandbox.json', { default: '.herald/sandbox' }),
  SANDBOX_HOST: bindAddress('Address the APNs, FCM and control servers listen on'),
  SANDBOX_APNS_PORT: int('APNs (HTTP/2 over TLS) port; 0 picks a free port', { default: '2197', min: 0, max: 65535 }),
  SANDBOX_FCM_PORT: int('FCM HTTP v1 (TLS, HTTP/2 and HTTP/1.1) port; 0 picks a free port', { default: '4443', min: 0, max: 65535 }),
  SANDBOX_WEB_PORT: int('Web Push service (RFC 8030 over TLS, HTTP/2 and HTTP/1.1) port; 0 picks a free port', { default: '4445', min: 0, max: 65535 }),
  SANDBOX_CONTROL_PORT: int('Control API (plain HTTP) port; 0 picks a free port', { default: '4480', min: 0, max: 65535 }),
  SANDBOX_MAX_RECORDS: int('How many recent requests GET /records keeps', { default: '20000', min: 1 }),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace'], 'pino log level', { default: 'info' }),
  LOG_FORMAT: oneOf(['json', 'pretty', 'auto'], 'json, pretty, or auto (pretty only when stdout is a terminal)', { default: 'auto' }),
} as const;
