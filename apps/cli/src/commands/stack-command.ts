import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { bundleMapsUnder, mapBundleLocations } from './stack-map.ts';

/** The repository (or the image's /app) this CLI runs from: its dist/services holds the bundles' maps. */
const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** `herald stack [file]`: a logged stack trace with its bundle locations mapped to the TypeScript sources. */
export function registerStackCommand(program: Command): void {
  program
    .command('stack [file]')
    .description(
      "map the bundle locations in a logged stack trace (…/dist/services/<service>/main.mjs:line:column) to the TypeScript source lines, with the source maps of this build's bundles; reads the file, or stdin (a pasted stack or whole JSON log lines), and prints the text mapped",
    )
    .action(async (file: string | undefined) => {
      const input = file === undefined ? await text(process.stdin) : await readFile(file, 'utf8');
      const unmapped = new Set<string>();
      process.stdout.write(mapBundleLocations(input, bundleMapsUnder(root), unmapped));
      if (unmapped.size > 0) {
        process.stderr.write(`herald: no source map for ${[...unmapped].join(', ')} under ${root}dist/services (npm run build writes them); those locations are left as they were\n`);
      }
    });
}
