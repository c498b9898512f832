import { loadConfig } from '@herald/config';
import { cliConfig } from './cli-config.ts';

/**
 * The failure in one line of words, its causes' after it (fetch's "fetch failed: connect
 * ECONNREFUSED …"); with HERALD_DEBUG=1 the stacks too, as always for a programming error (a
 * TypeError, say, with no cause: fetch's network failures are TypeErrors with one), whose message
 * alone says nothing of where it arose.
 */
export function whatFailed(err: unknown, debug: () => boolean = debugging): string {
  if (!(err instanceof Error)) return String(err);
  const causes: Error[] = [];
  for (let cause = err.cause; cause instanceof Error && causes.length < 5; cause = cause.cause) causes.push(cause);
  const bug =
    causes.length === 0 &&
    (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError);
  if (!bug && !debug()) return [err, ...causes].map(said).join(': ');
  return [
    said(err),
    ...stackFrames(err),
    ...causes.flatMap((cause) => [`caused by: ${said(cause)}`, ...stackFrames(cause)]),
  ].join('\n');
}

/**
 * An error's message; for one without (an AggregateError: fetch's refused connection when a name
 * resolves to ::1 and 127.0.0.1), its errors' messages, else its code.
 */
export function said(err: Error): string {
  if (err.message !== '') return err.message;
  if (err instanceof AggregateError && err.errors.length > 0)
    return err.errors.map((e: unknown) => (e instanceof Error ? said(e) : String(e))).join('; ');
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : err.name;
}

/** HERALD_DEBUG, read alone: the rest of the settings may be what failed. */
function debugging(): boolean {
  try {
    return loadConfig({ HERALD_DEBUG: cliConfig.HERALD_DEBUG }, process.env).HERALD_DEBUG;
  } catch {
    return false;
  }
}

/** The "    at …" lines of an error's stack. */
function stackFrames(err: Error): string[] {
  return (err.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
}
