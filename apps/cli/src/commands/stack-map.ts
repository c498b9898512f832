import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A location in a service's bundle as Node prints it in a stack trace, as a path or a file URL:
 * `/app/dist/services/apns-pusher/main.mjs:4350:12`. Services run without Node's source-map
 * support (it holds the parsed map, about 28 MB, in every process; docs/benchmarks.md), so their
 * logged stacks name bundle lines; `herald stack` maps them back to the TypeScript sources.
 */
const BUNDLE_PATH = String.raw`dist\/services\/([A-Za-z0-9_-]+)\/main\.mjs`;
const BUNDLE_LOCATION = new RegExp(String.raw`((?:file:\/\/)?(?:[^\s()"'\\]*\/)?${BUNDLE_PATH}):(\d+):(\d+)`, 'g');
const BUNDLE_FILE = new RegExp(String.raw`\/${BUNDLE_PATH}$`);

/** The service whose bundle `path` (a path or file URL) is, or undefined for any other file. */
export const serviceOfBundle = (path: string): string | undefined => BUNDLE_FILE.exec(path)?.[1];

/** A loaded bundle's source map, and the directory its `sources` are relative to. */
export interface BundleMap {
  map: SourceMap;
  dir: string;
}

/**
 * `text` with every bundle location mapped to its source file, line and column (absolute paths,
 * as Node's --enable-source-maps prints them). `mapOf` finds a location's map from the bundle's
 * path and its service's name; a location it has no map for, or that maps to nothing (code
 * esbuild added), stays as it was. `unmapped` collects the services without a map.
 */
export function mapBundleLocations(text: string, mapOf: (bundle: string, service: string) => BundleMap | undefined, unmapped = new Set<string>()): string {
  return text.replace(BUNDLE_LOCATION, (location: string, bundle: string, service: string, line: string, column: string) => {
    const found = mapOf(bundle, service);
    if (found === undefined) {
      unmapped.add(service);
      return location;
    }
    const origin = originOf(found, Number(line) - 1, Number(column) - 1);
    return origin === undefined ? location : `${origin.file}:${origin.line + 1}:${origin.column + 1}`;
  });
}

/**
 * Where a bundle's code came from: the source file (absolute), its 0-based line and column, the
 * original name of an identifier esbuild renamed, and the bundle column at which that mapping
 * starts (at or before the one asked for).
 */
export interface Origin {
  file: string;
  line: number;
  column: number;
  name: string | undefined;
  bundleColumn: number;
}

/**
 * The origin of a 0-based position in a bundle, or undefined for code esbuild added. Used for
 * stacks and, by tools/bench/src/profile-summary.ts, for CPU profiles of the minified bundles.
 */
export function originOf(found: BundleMap, line: number, column: number): Origin | undefined {
  const entry = found.map.findEntry(line, column);
  // findEntry answers the nearest mapping before the location, which may be on an earlier line.
  if (!('originalSource' in entry) || entry.generatedLine !== line) return undefined;
  // Node returns the mapping's name too; @types/node's SourceMapping leaves it out.
  const { name } = entry as { name?: string };
  return { file: resolve(found.dir, entry.originalSource), line: entry.originalLine, column: entry.originalColumn, name, bundleColumn: entry.generatedColumn };
}

/**
 * mapOf for mapBundleLocations: the map beside the logged bundle when this machine has it (the
 * stack was logged here), else the map of the same service under `root`'s dist/services (a stack
 * copied from another machine running the same build). Each map is read once.
 */
export function bundleMapsUnder(root: string): (bundle: string, service: string) => BundleMap | undefined {
  const loaded = new Map<string, BundleMap | undefined>();
  return (bundle, service) => {
    const logged = `${bundle.startsWith('file://') ? fileURLToPath(bundle) : bundle}.map`;
    const file = existsSync(logged) ? logged : resolve(root, 'dist', 'services', service, 'main.mjs.map');
    if (!loaded.has(file)) loaded.set(file, existsSync(file) ? { map: new SourceMap(JSON.parse(readFileSync(file, 'utf8'))), dir: dirname(file) } : undefined);
    return loaded.get(file);
  };
}
