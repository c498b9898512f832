import { readFileSync } from 'node:fs';

/** Herald's version: the repository's package.json (the CLI runs from the source tree through tsx). */
export function heraldVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}
