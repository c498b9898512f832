/**
 * Bundles every service (and the sandbox) with esbuild into dist/services/<name>/main.mjs, so
 * they run on plain Node: no TypeScript loader thread per process (about 30 MB of RSS and
 * several CPU-seconds of module compilation at each start, measured in `npm run bench`).
 * Herald's libs and the packages a service loads at start are bundled in, without comments and
 * whitespace: V8 keeps the text of every script it loads, and a process's old space grows to
 * several times what it keeps, so the packages' sources as node_modules holds them cost each
 * service 10–20 MB of peak RSS (docs/benchmarks.md, session 31). LOADED_ON_USE stay external.
 * Used by `npm start`, the tests' global setup and the benchmarks; `npm run build` runs it alone.
 * Takes a few seconds.
 */
import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { SANDBOX, SERVICES } from './service-list.ts';

const root = join(import.meta.dirname, '..', '..');
/** Where the bundles go. Three levels below the repository, like apps/<x>/src, so paths relative to import.meta.url (the migrations) still resolve. */
export const bundleOf = (name: string): string => join(root, 'dist', 'services', name, 'main.mjs');

/**
 * Node's arguments for running a service's bundle: `extraFlags`, by default this process's
 * HERALD_SERVICE_NODE_ARGS (space-separated Node flags NODE_OPTIONS refuses, e.g. --cpu-prof or
 * --heap-growing-percent=50; see README, Quickstart), then the bundle. Used by `npm start`, the
 * tests and benchmarks. Not --enable-source-maps: Node keeps the bundle's parsed map in the heap
 * once a stack is printed (about 28 MB since the maps cover the packages too), which V8's heap
 * growth makes several times that of peak RSS; logged stacks name bundle lines, and `herald
 * stack` maps them to the TypeScript sources.
 */
export const serviceNodeArgs = (name: string, extraFlags = process.env['HERALD_SERVICE_NODE_ARGS']): string[] => [
  ...(extraFlags ?? '').split(' ').filter((a) => a !== ''),
  bundleOf(name),
];

/**
 * Packages left in node_modules, loaded only by a process that uses them: the provider clients,
 * imported when a pusher creates its provider (and web-push by the API to make VAPID keys), so
 * one pusher's client is not in every bundle's text; and pg-native (never installed: pg requires
 * it only for `pg.native`). node-forge, which node-apn's patch requires only to parse a client
 * certificate, stays out with node-apn.
 */
const LOADED_ON_USE = ['@parse/node-apn', 'firebase-admin', 'web-push', 'pg-native'];

/**
 * zod's `z` namespace re-exports its 40-odd locales (`z.locales`), 264 KB of every bundle
 * (minified, session 32) and about 0.4 MB of each service's heap, though Herald only reads
 * English, which zod sets by default. This bundles `z.locales` (and `z.core.locales`) with `en`
 * alone. If zod moves the file, nothing matches, the bundle carries every locale again, and
 * libs/contracts/src/bundled-reasons.spec.ts fails.
 */
const zodEnglishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)$/.test(args.resolveDir) ? { path: join(args.resolveDir, '..', 'locales', 'en.js'), namespace: 'zod-english-only' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({ contents: `export { default as en } from ${JSON.stringify(args.path)};`, resolveDir: dirname(args.path) }));
  },
};

/**
 * pg's ES module entry (esm/index.mjs) re-exports its classes as top-level constants, so esbuild,
 * keeping one scope for the bundle's ES modules, renames pg's own `DatabaseError`, `Client` and
 * `Pool` to `DatabaseError2`, `Client2`, `Pool2`: the names the classes then carry, and the
 * type pino logs for a PostgreSQL error. This resolves `pg` to its CommonJS entry, whose export
 * is the default export Herald imports.
 */
const pgCommonJs: Plugin = {
  name: 'pg-commonjs',
  setup(b) {
    const pgMain = createRequire(import.meta.url).resolve('pg');
    b.onResolve({ filter: /^pg$/ }, () => ({ path: pgMain }));
  },
};

/** esbuild's options for a service's bundle (all but its entry point and output file). */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  external: LOADED_ON_USE,
  // Whitespace and syntax minified, identifiers kept, so classes keep their sources' names (the
  // error types pino logs) without esbuild's keepNames, which wraps every named function and
  // closure in a call that redefines its name as it is made (about 6% of the API's CPU a job;
  // docs/benchmarks.md, session 34). esbuild still renames a symbol that clashes with another at
  // the bundle's top level (`X2`) and names a class that refers to itself `_X`: pgCommonJs avoids
  // pg's, and libs/logging/src/bundled-error-names.int.spec.ts fails if an error class is renamed.
  minifyWhitespace: true,
  minifySyntax: true,
  // Lines of at most about this many characters. Node reports an uncaught error with the source
  // line it was thrown from above its stack, and a minified line was a run of whole modules
  // (162–223 KB in the registrar): through a pipe (npm start's supervisor, a container's log) the
  // report stopped at the first 64 KB, before the error's message (docs/benchmarks.md, session 34).
  lineLimit: 200,
  legalComments: 'linked',
  logLevel: 'warning',
  // Bundled CommonJS packages call require(), for Node's modules too; give the ES module one.
  banner: { js: "import { createRequire as __heraldRequire } from 'node:module'; const require = __heraldRequire(import.meta.url);" },
  plugins: [zodEnglishOnly, pgCommonJs],
} as const satisfies BuildOptions;

/** Files a service reads next to its entry point at run time. */
const ASSETS: Record<string, readonly string[]> = { monitor: ['dashboard.html'] };

export async function buildServices(): Promise<void> {
  await Promise.all(
    [SANDBOX, ...SERVICES].map(async ({ name, entry }) => {
      const outfile = bundleOf(name);
      mkdirSync(dirname(outfile), { recursive: true });
      // Each file written whole, then renamed into place: a build (`npm start`, a test's or a
      // bench's) may run while other processes start services from the same bundles.
      const { outputFiles } = await build({ ...BUNDLE_OPTIONS, entryPoints: [join(root, entry)], outfile, write: false });
      for (const file of outputFiles) {
        const partial = `${file.path}.${process.pid}.partial`;
        writeFileSync(partial, file.contents);
        renameSync(partial, file.path);
      }
      for (const asset of ASSETS[name] ?? []) copyFileSync(join(root, dirname(entry), asset), join(dirname(outfile), asset));
    }),
  );
}

if (process.argv[1] === import.meta.filename) {
  const started = Date.now();
  await buildServices();
  console.log(`built ${SERVICES.length + 1} services into dist/services in ${Date.now() - started} ms`);
}
