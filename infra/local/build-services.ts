/**
 * Bundles every service (and the sandbox) with esbuild into dist/services/<name>/main.mjs, so
 * they run on plain Node: no TypeScript loader thread per process (about 30 MB of RSS and
 * several CPU-seconds of module compilation at each start, measured in `npm run bench`).
 * Packages from node_modules stay external (resolved from the repository's node_modules);
 * Herald's own libs are bundled in. Used by `npm start`, the tests' global setup and the
 * benchmarks; `npm run build` runs it alone. Takes about a second.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { SANDBOX, SERVICES } from './service-list.ts';

const root = join(import.meta.dirname, '..', '..');
/** Where the bundles go. Three levels below the repository, like apps/<x>/src, so paths relative to import.meta.url (the migrations) still resolve. */
export const bundleOf = (name: string): string => join(root, 'dist', 'services', name, 'main.mjs');

/**
 * Node's arguments for running a service's bundle: `extraFlags`, by default this process's
 * HERALD_SERVICE_NODE_ARGS (space-separated Node flags NODE_OPTIONS refuses, e.g. --cpu-prof or
 * --heap-growing-percent=50; see README, Benchmarks), then the bundle. Used by `npm start`, the
 * tests and benchmarks. Not --enable-source-maps: Node keeps the bundle's parsed map (about 5 MB)
 * in the heap once a stack is printed, which V8's heap growth made 20–30 MB of a pusher's peak
 * RSS; logged stacks name bundle lines, and `herald stack` maps them to the TypeScript sources.
 */
export const serviceNodeArgs = (name: string, extraFlags = process.env['HERALD_SERVICE_NODE_ARGS']): string[] => [
  ...(extraFlags ?? '').split(' ').filter((a) => a !== ''),
  bundleOf(name),
];

/** Files a service reads next to its entry point at run time. */
const ASSETS: Record<string, readonly string[]> = { monitor: ['dashboard.html'] };

export async function buildServices(): Promise<void> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const external = Object.keys(pkg.dependencies);
  await Promise.all(
    [SANDBOX, ...SERVICES].map(async ({ name, entry }) => {
      const outfile = bundleOf(name);
      mkdirSync(dirname(outfile), { recursive: true });
      await build({
        entryPoints: [join(root, entry)],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        sourcemap: 'linked',
        external,
        logLevel: 'warning',
        // Bundled CommonJS helpers may call require(); give the ES module one.
        banner: { js: "import { createRequire as __heraldRequire } from 'node:module'; const require = __heraldRequire(import.meta.url);" },
      });
      for (const asset of ASSETS[name] ?? []) copyFileSync(join(root, dirname(entry), asset), join(dirname(outfile), asset));
    }),
  );
}

if (process.argv[1] === import.meta.filename) {
  const started = Date.now();
  await buildServices();
  console.log(`built ${SERVICES.length + 1} services into dist/services in ${Date.now() - started} ms`);
}
