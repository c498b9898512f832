import { describe, expect, it } from 'vitest';
import { whatFailed } from './failure-text.ts';

const refused = (address: string): Error => Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
const quiet = (): boolean => false;

describe("the CLI's line for a failure", () => {
  it("says fetch's network failure with its cause, in one line, without a stack", () => {
    const err = new TypeError('fetch failed', { cause: refused('127.0.0.1:15672') });
    expect(whatFailed(err, quiet)).toBe('fetch failed: connect ECONNREFUSED 127.0.0.1:15672');
  });

  // A name resolving to ::1 and 127.0.0.1: undici's refusal is an AggregateError with no message of its own.
  it('says the errors of a cause with no message, not an empty one', () => {
    const err = new TypeError('fetch failed', {
      cause: new AggregateError([refused('::1:15672'), refused('127.0.0.1:15672')], ''),
    });
    expect(whatFailed(err, quiet)).toBe('fetch failed: connect ECONNREFUSED ::1:15672; connect ECONNREFUSED 127.0.0.1:15672');
    expect(
      whatFailed(new TypeError('fetch failed', { cause: Object.assign(new Error(''), { code: 'ECONNRESET' }) }), quiet),
    ).toBe('fetch failed: ECONNRESET');
  });

  it("prints a programming error's stack unasked, and any failure's with HERALD_DEBUG", () => {
    const [line, ...frames] = whatFailed(new TypeError("Cannot read properties of undefined (reading 'x')"), quiet).split('\n');
    expect(line).toBe("Cannot read properties of undefined (reading 'x')");
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((f) => /^\s+at /.test(f))).toBe(true);
    const debugged = whatFailed(new Error('no live key', { cause: refused('127.0.0.1:5432') }), () => true).split('\n');
    expect(debugged[0]).toBe('no live key');
    expect(debugged).toContain('caused by: connect ECONNREFUSED 127.0.0.1:5432');
  });
});
