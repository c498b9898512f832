import { createRequire } from 'node:module';
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
  /** Where the lines go: stdout (a service's), or stderr (a command whose stdout is its output). */
  destination?: 'stdout' | 'stderr';
}

/** A pino logger: JSON by default, pretty only for a person at a terminal; tokens and keys redacted. */
export function createLogger(settings: LoggerSettings): Logger {
  const fd = settings.destination === 'stderr' ? 2 : 1;
  const pretty = settings.format === 'pretty' || (settings.format === 'auto' && (fd === 2 ? process.stderr : process.stdout).isTTY === true);
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    base: { service: settings.service, pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: (value) => maskToken(value) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (pretty) {
    nameTransportWorkers();
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', destination: fd } } });
  }
  return fd === 2 ? pino(options, pino.destination({ dest: 2, sync: true })) : pino(options);
}

/**
 * pino runs a transport in a worker thread started from files beside its own sources, found by
 * `__dirname`, which a service's bundle (an ES module with pino inside) does not have. pino and
 * thread-stream take those files' paths from `globalThis.__bundlerPathsOverrides` when it is set
 * (their support for bundlers): name the files in node_modules. The same files when pino is not
 * bundled.
 */
function nameTransportWorkers(): void {
  const fromHere = createRequire(import.meta.url);
  const fromPino = createRequire(fromHere.resolve('pino'));
  const scope = globalThis as { __bundlerPathsOverrides?: Record<string, string> };
  scope.__bundlerPathsOverrides = {
    ...scope.__bundlerPathsOverrides,
    'pino-worker': fromPino.resolve('./lib/worker.js'),
    'thread-stream-worker': fromPino.resolve('thread-stream/lib/worker.js'),
  };
}
