import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Keep enough of a device token to correlate log lines, never the whole of it. */
export function maskToken(token: unknown): string {
  if (typeof token !== 'string') return '[redacted]';
  return token.length <= 8 ? '[redacted]' : `…${token.slice(-6)}`;
}

const REDACT_PATHS = [
  'token',
  '*.token',
  '*.*.token',
  'tokens',
  '*.tokens',
  'key',
  '*.key',
  'privateKey',
  '*.privateKey',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
];

export interface LoggerSettings {
  service: string;
  level?: string;
  format?: 'json' | 'pretty' | 'auto';
}

/** A pino logger: JSON by default, pretty only for a person at a terminal; tokens and keys redacted. */
export function createLogger(settings: LoggerSettings): Logger {
  const pretty = settings.format === 'pretty' || (settings.format === 'auto' && process.stdout.isTTY === true);
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    base: { service: settings.service, pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: (value) => maskToken(value) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (pretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } });
  }
  return pino(options);
}
