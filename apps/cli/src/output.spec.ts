import { afterEach, describe, expect, it, vi } from 'vitest';
import { printObject, printRows } from './output.ts';

/** What printRows / printObject wrote to stdout. */
function printed(print: () => void): string {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((out += String(chunk)), true));
  print();
  return out;
}
afterEach(() => vi.restoreAllMocks());

/** A raw control character other than a line break (JSON's layout). */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

// Rows carry what others wrote: an audit target from a refused request, an operator's name, a receiver's answer in a park reason.
const hostile = { target: 'x\u001b[8m', who: 'alice\r\u009b2K', reason: 'ok\u0007\u0085' };

describe('CLI output of stored strings', () => {
  it('a table shows control characters as escapes, so a row cannot hide the rows above it or rewrite a column', () => {
    const out = printed(() => printRows([hostile], false));
    expect(out).not.toMatch(RAW_CONTROL);
    expect(out).toContain('x\\u001b[8m');
    expect(out).toContain('alice\\u000d\\u009b2K');
    expect(out).toContain('ok\\u0007\\u0085');
  });

  it('JSON keeps its layout and reads back as the same values, with no raw control character', () => {
    for (const out of [printed(() => printRows([hostile], true)), printed(() => printObject(hostile))]) {
      expect(out).not.toMatch(RAW_CONTROL);
      expect(out.split('\n').length).toBeGreaterThan(3);
      expect(JSON.parse(out)).toEqual(out.trimStart().startsWith('[') ? [hostile] : hostile);
    }
  });
});
