import { isDeepStrictEqual } from 'node:util';
import type { Diff } from './webhook.ts';

type State = Record<string, unknown> | null;

/**
 * `{ field: { old, new } }` for every top-level field whose value differs between old and new.
 * Nested objects and arrays are compared structurally (key order does not matter) and reported
 * whole. A field missing on one side is reported with null there. Both null: no diff.
 */
export function computeDiff(oldState: State, newState: State): Diff {
  const before = oldState ?? {};
  const after = newState ?? {};
  const diff: Diff = {};
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  for (const field of fields) {
    const o = Object.hasOwn(before, field) ? before[field] : undefined;
    const n = Object.hasOwn(after, field) ? after[field] : undefined;
    if (!sameJson(o, n)) diff[field] = { old: o ?? null, new: n ?? null };
  }
  return diff;
}

/** Structural equality of JSON values; undefined and null are the same (both mean "no value"). */
function sameJson(a: unknown, b: unknown): boolean {
  if ((a === undefined || a === null) && (b === undefined || b === null)) return true;
  return isDeepStrictEqual(a, b);
}

/** WEBHOOK_MAX_CHANGE_BYTES' default: the most JSON bytes of a change event, and of its diff. */
export const DEFAULT_MAX_CHANGE_BYTES = 65_536;

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/**
 * Why a change is too large to fan out, or undefined: its JSON (old and new) or its diff over
 * `maxBytes`. Both count: every notification carries the diff, which for a resource created or
 * deleted is larger than the event (each field becomes {old: null, new}), and the fan-out and the
 * pusher hold hundreds of notifications at once. `path`: the larger state, for an HTTP caller.
 * `diff`: the event's, when the caller has it already.
 */
export function changeSizeProblem(
  event: { old: State; new: State },
  maxBytes: number,
  diff: Diff = computeDiff(event.old, event.new),
): { path: 'old' | 'new'; message: string } | undefined {
  const bytes = jsonBytes(event);
  const diffBytes = jsonBytes(diff);
  if (bytes <= maxBytes && diffBytes <= maxBytes) return undefined;
  const [oldBytes, newBytes] = [jsonBytes(event.old), jsonBytes(event.new)];
  return {
    path: newBytes >= oldBytes ? 'new' : 'old',
    message: `the change event is ${bytes} bytes of JSON and its diff ${diffBytes}, over the limit of ${maxBytes} (WEBHOOK_MAX_CHANGE_BYTES): old ${oldBytes}, new ${newBytes} bytes; send the fields receivers act on, not whole documents`,
  };
}
