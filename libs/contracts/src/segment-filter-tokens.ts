/** The segment language's tokens (segment-filter.ts parses them). */
export type SegmentTokenKind = 'word' | 'string' | 'number' | 'duration' | 'punct' | 'end';

export interface Token {
  kind: SegmentTokenKind;
  /** The text as written (a string's unescaped value for kind 'string'). */
  text: string;
  /** 1-based character column where the token starts. */
  column: number;
}

export class SegmentSyntaxError extends Error {
  override readonly name = 'SegmentSyntaxError';
  constructor(
    readonly column: number,
    readonly what: string,
    readonly hint?: string,
  ) {
    super(`segment: ${what} at column ${column}${hint === undefined ? '' : `; ${hint}`}`);
  }
}

const PUNCT = ['!=', '<=', '>=', '(', ')', ',', '=', '<', '>'] as const;

/** How a token is named in an error message: `")"`, `"fcm"`, `end of input`. */
export function describeToken(t: Token): string {
  if (t.kind === 'end') return 'end of input';
  if (t.kind === 'string') return JSON.stringify(t.text);
  return `"${t.text}"`;
}

function readString(text: string, start: number): { value: string; end: number } {
  let value = '';
  let i = start + 1;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') return { value, end: i + 1 };
    if (c === '\\') {
      const next = text[i + 1];
      if (next !== '"' && next !== '\\') throw new SegmentSyntaxError(i + 1, 'a string may only escape \\" and \\\\');
      value += next;
      i += 2;
      continue;
    }
    value += c;
    i += 1;
  }
  throw new SegmentSyntaxError(start + 1, 'unterminated string');
}

/** Splits the text into tokens; the last one is always 'end'. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    const column = i + 1;
    if (c === '"') {
      const { value, end } = readString(text, i);
      tokens.push({ kind: 'string', text: value, column });
      i = end;
      continue;
    }
    const rest = text.slice(i);
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)?.[0];
    if (word !== undefined) {
      tokens.push({ kind: 'word', text: word, column });
      i += word.length;
      continue;
    }
    const duration = /^[0-9]+[dh](?![A-Za-z0-9_.])/.exec(rest)?.[0];
    const number = /^[0-9][0-9.]*(?:[-+][0-9A-Za-z.+-]*)?/.exec(rest)?.[0];
    if (duration !== undefined || number !== undefined) {
      const t = (duration ?? number) as string;
      tokens.push({ kind: duration !== undefined ? 'duration' : 'number', text: t, column });
      i += t.length;
      continue;
    }
    const punct = PUNCT.find((p) => rest.startsWith(p));
    if (punct === undefined) throw new SegmentSyntaxError(column, `unexpected character ${JSON.stringify(c)}`);
    tokens.push({ kind: 'punct', text: punct, column });
    i += punct.length;
  }
  tokens.push({ kind: 'end', text: '', column: text.length + 1 });
  return tokens;
}
