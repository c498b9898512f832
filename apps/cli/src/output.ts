// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * A stored string as a terminal shows it safely: C0 and C1 control characters (ESC, CR, BEL, …) as
 * escapes, e.g. `\u001b`. Rows carry what others wrote (an audit target taken from a request, an
 * operator's name, a webhook receiver's answer in a park reason): printed raw, an escape sequence
 * could hide the rows above it, rewrite a column, or set the clipboard (OSC 52).
 */
export const printable = (s: string): string => s.replace(CONTROLS, escaped);

/** JSON text as printable: its line breaks are its layout (JSON.stringify escapes C0 inside strings, not C1 nor DEL); the same JSON. */
const printableJson = (json: string): string => json.replace(CONTROLS_BUT_NEWLINE, escaped);

/** Print rows as an aligned table for people, or as JSON for scripts. */
export function printRows(rows: ReadonlyArray<Record<string, unknown>>, json: boolean): void {
  if (json) {
    process.stdout.write(`${printableJson(JSON.stringify(rows, null, 2))}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown): string => (v === undefined || v === null ? '' : printable(typeof v === 'object' ? JSON.stringify(v) : String(v)));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]): string => values.map((v, i) => v.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  process.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const r of rows) process.stdout.write(`${line(columns.map((c) => cell(r[c])))}\n`);
}

/** Print a value as JSON (for people and scripts alike). */
export function printObject(value: unknown): void {
  process.stdout.write(`${printableJson(JSON.stringify(value, null, 2))}\n`);
}
