/**
 * Summarises V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`): for each profile,
 * where its samples fall, by self time, grouped by package (node_modules/<pkg>), Herald
 * workspace (libs/<x>, apps/<x>), Node internals, GC and idle. Frames of a service's minified
 * bundle are read through the bundle's source map.
 * Usage: npx tsx tools/bench/src/profile-summary.ts <dir> [top=12] [from=0] [to=∞]
 * `from`/`to`: only samples taken that many seconds after the profile started (e.g. the measured
 * window of `npm run bench`, leaving out start-up, seeding and warm-up).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleMapsUnder, originOf, serviceOfBundle, type BundleMap } from '../../../apps/cli/src/commands/stack-map.ts';
import { GAP_US, samplingGaps } from './profile-gaps.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const bundleMaps = bundleMapsUnder(join(import.meta.dirname, '..', '..', '..'));
/** Services whose bundle had no source map: their frames stay as V8 gave them. */
const unmapped = new Set<string>();

/**
 * A frame of a service's minified bundle as its source: the file (node_modules/<pkg>/…,
 * libs/<x>/…), line and the function's name before esbuild renamed it, so frames group and read
 * as before bundling. Frames of other scripts, and code the map has no source for (esbuild's
 * helpers, each bundle's top level), stay as V8 gave them.
 */
function sourceFrame(frame: CallFrame): CallFrame {
  const service = serviceOfBundle(frame.url);
  if (service === undefined) return frame;
  const found = bundleMaps(frame.url, service);
  if (found === undefined) {
    unmapped.add(service);
    return frame;
  }
  const origin = originOf(found, frame.lineNumber, frame.columnNumber);
  if (origin === undefined) return frame;
  const functionName = originalName(found, frame) ?? frame.functionName;
  return { functionName, url: pathToFileURL(origin.file).href, lineNumber: origin.line, columnNumber: origin.column };
}

/**
 * The name esbuild renamed a function from. V8 places a function at its parameter list, just
 * after its name (`function mV(`, or `mV=(` for an arrow function); the map names the original
 * only on a mapping that starts exactly at that name. Anything else keeps V8's name.
 */
function originalName(found: BundleMap, frame: CallFrame): string | undefined {
  if (!/^[\w$]+$/.test(frame.functionName)) return undefined;
  for (const at of [frame.columnNumber - frame.functionName.length, frame.columnNumber - frame.functionName.length - 1]) {
    const named = originOf(found, frame.lineNumber, at);
    if (named?.bundleColumn === at && named.name !== undefined) return named.name;
  }
  return undefined;
}

function groupOf(url: string, fn: string): string {
  if (fn === '(idle)') return '(idle)';
  if (fn === '(garbage collector)') return '(gc)';
  if (fn === '(program)') return '(program)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1] as string;
  if (serviceOfBundle(url) !== undefined) return "bundle code the map has no source for (esbuild's helpers, the bundle's top level)";
  const ws = /\/(libs|apps|tools)\/([^/]+)\//.exec(url);
  if (ws) return `${ws[1]}/${ws[2]}`;
  if (url.startsWith('node:') || url === '') return 'node internals and natives';
  return url;
}

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: profile-summary.ts <dir> [top]');
const top = Number(process.argv[3] ?? 12);
const fromUs = Number(process.argv[4] ?? 0) * 1e6;
const toUs = Number(process.argv[5] ?? Infinity) * 1e6;
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  // The service's name, read before its frames are mapped to their sources.
  const app =
    profile.nodes.map((n) => serviceOfBundle(n.callFrame.url) ?? /\/apps\/([^/]+)\//.exec(n.callFrame.url)?.[1]).find((a) => a !== undefined) ??
    '(no app code: a loader thread?)';
  for (const n of profile.nodes) n.callFrame = sourceFrame(n.callFrame);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const deltas: number[] = [];
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at >= toUs) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
    deltas.push(delta);
  });
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const groups = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (n === undefined) continue;
    const g = groupOf(n.callFrame.url, n.callFrame.functionName);
    groups.set(g, (groups.get(g) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(libs|apps)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
    fns.set(fn, (fns.get(fn) ?? 0) + us);
  }
  const busy = total - (groups.get('(idle)') ?? 0);
  const pct = (us: number) => `${((100 * us) / total).toFixed(1)}%`;
  console.log(`\n${app} — ${file}: ${(total / 1e6).toFixed(1)} s sampled, busy ${pct(busy)}`);
  const gaps = samplingGaps(deltas);
  if (gaps.share > 0.1) {
    console.log(
      `  (${(100 * gaps.share).toFixed(1)}% of this profile's time lies in gaps of over ${GAP_US / 1e3} ms without a sample, the longest ${(gaps.longestUs / 1e3).toFixed(0)} ms: each gap is charged to the sample after it, so these shares are unreliable; see profile-gaps.ts)`,
    );
  }
  for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us).padStart(6)}  ${g}`);
  console.log('  top functions (self):');
  const herald = inclusiveHerald(profile, byId, selfUs);
  for (const [f, us] of [...fns].filter(([f]) => !f.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us).padStart(6)}  ${f}`);
  console.log('  Herald functions (inclusive: with what they call; nested calls counted once):');
  for (const [f, us] of [...herald].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us).padStart(6)}  ${f}`);
}
if (unmapped.size > 0) console.error(`\nno source map for ${[...unmapped].join(', ')}: their frames name bundle positions`);

/** Time spent in each Herald function and everything it called, by function (recursion counted once). */
function inclusiveHerald(profile: Profile, byId: Map<number, ProfileNode>, selfUs: Map<number, number>): Map<string, number> {
  const isHerald = (n: ProfileNode): boolean => /\/dist\/services\/|\/(libs|apps)\//.test(n.callFrame.url) && !n.callFrame.url.includes('node_modules');
  const nameOf = (n: ProfileNode): string => `${n.callFrame.functionName || '(anonymous)'}:${n.callFrame.lineNumber + 1}`;
  const out = new Map<string, number>();
  const root = profile.nodes[0];
  if (root === undefined) return out;
  // Iterative walk: the stack of Herald function names open above each node.
  const walk: { id: number; open: readonly string[] }[] = [{ id: root.id, open: [] }];
  while (walk.length > 0) {
    const { id, open } = walk.pop() as { id: number; open: readonly string[] };
    const n = byId.get(id);
    if (n === undefined) continue;
    const here = isHerald(n) && !open.includes(nameOf(n)) ? [...open, nameOf(n)] : open;
    const us = selfUs.get(id) ?? 0;
    if (us > 0) for (const f of here) out.set(f, (out.get(f) ?? 0) + us);
    for (const c of n.children ?? []) walk.push({ id: c, open: here });
  }
  return out;
}
