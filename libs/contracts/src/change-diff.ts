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
