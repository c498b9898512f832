/**
 * The audience reader's keyset cursor (opaque to callers: base64url JSON). Each audience walks
 * its own key; the cursor names the walk so a cursor of another audience is refused.
 */
export type AudienceCursor =
  /** Topic, phase 1: user members by user id. */
  | { w: 'tu'; after: string }
  /** Topic, phase 2: device members by member id ('<platform>:<token>'); null: from the start. */
  | { w: 'td'; after: string | null }
  /** Followers, all edges, by follower id. */
  | { w: 'f'; after: string }
  /**
   * Followers from the recently-active index, by follower id, among those at or above `floor`: the
   * last of the N most recent (active_at desc, follower) when the walk began, fixed for the whole
   * walk (null: no floor, every indexed follower).
   */
  | { w: 'fr'; after: string; floor: RecentFloor | null }
  /** Broadcast: by device id. */
  | { w: 'b'; after: string };

/** A place in the recently-active order (active_at desc nulls last, follower). */
export interface RecentFloor {
  at: string | null;
  follower: string;
}

/** Thrown for a cursor this reader did not write (or wrote for another audience). */
export class AudienceCursorError extends Error {
  override readonly name = 'AudienceCursorError';
}

export const encodeCursor = (c: AudienceCursor): string => Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');

export function decodeCursor(text: string, walks: readonly AudienceCursor['w'][]): AudienceCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw new AudienceCursorError(`not an audience cursor: ${text.slice(0, 40)}`);
  }
  const w = (value as { w?: unknown } | null)?.w;
  if (typeof w !== 'string' || !(walks as readonly string[]).includes(w)) {
    throw new AudienceCursorError(`the cursor is not one of this audience (${walks.join(', ')}): ${text.slice(0, 40)}`);
  }
  return value as AudienceCursor;
}
