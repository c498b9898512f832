import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** An opt-out as stored; `app` null applies to every app (migration 0018). */
export interface OptOutRow {
  app: string | null;
  userId: string;
  category: string;
  createdAt: Date;
}

/** A mute as stored; `app` null applies to every app; `until` null: until removed. */
export interface MuteRow {
  app: string | null;
  userId: string;
  objectId: string;
  until: Date | null;
  createdAt: Date;
}

/** Which rows a list returns for a user: one app's (with the every-app rows that also apply to it), or all. */
export interface PreferenceListOptions {
  /** An app: its rows and the every-app rows. Omitted: every row of the user. */
  app?: string;
  /** At most this many, newest first. */
  limit?: number;
}

/**
 * Opt-outs (by category) and mutes (by object), per app, as findTargets reads them. `app`
 * defaults to null, every app: what an opt-out meant before preferences were per app.
 */
export interface PreferenceRepository {
  /** Opt in or out; resolves to whether anything changed. */
  setOptOut(userId: string, category: string, optedOut: boolean, app?: string | null): Promise<boolean>;
  /** Opt out, answering with the row and whether it is new. */
  addOptOut(userId: string, category: string, app: string | null): Promise<{ created: boolean; optOut: OptOutRow }>;
  listOptOuts(userId: string, options?: PreferenceListOptions): Promise<OptOutRow[]>;
  /** Mute pushes about objectId until `until` (null = until removed); replaces an existing mute of the same app. */
  setMute(userId: string, objectId: string, until: Date | null, app?: string | null): Promise<{ created: boolean; mute: MuteRow }>;
  /** Resolves to whether there was a mute to remove. */
  clearMute(userId: string, objectId: string, app?: string | null): Promise<boolean>;
  /** Mutes in force at `now` (until null or later). */
  listMutes(userId: string, now: Date, options?: PreferenceListOptions): Promise<MuteRow[]>;
}

type OptOutRecord = { app: string | null; user_id: string; category: string; created_at: Date };
type MuteRecord = { app: string | null; user_id: string; object_id: string; until: Date | null; created_at: Date };

const toOptOut = (r: OptOutRecord): OptOutRow => ({ app: r.app, userId: r.user_id, category: r.category, createdAt: r.created_at });
const toMute = (r: MuteRecord): MuteRow => ({ app: r.app, userId: r.user_id, objectId: r.object_id, until: r.until, createdAt: r.created_at });

/** `xmax = 0` on a RETURNING row: it was inserted, not updated by ON CONFLICT. */
const inserted = sql<boolean>`xmax = 0`.as('created');

export function createPreferenceRepository(db: Kysely<HeraldTables>): PreferenceRepository {
  const addOptOut = async (userId: string, category: string, app: string | null) => {
    // A no-op update on conflict, so the existing row is returned too (two unique indexes: see 0018).
    const row = await db
      .insertInto('opt_outs')
      .values({ user_id: userId, category, app })
      .onConflict((oc) =>
        (app === null ? oc.columns(['user_id', 'category']).where('app', 'is', null) : oc.columns(['user_id', 'category', 'app'])).doUpdateSet((eb) => ({
          category: eb.ref('excluded.category'),
        })),
      )
      .returning(['app', 'user_id', 'category', 'created_at', inserted])
      .executeTakeFirstOrThrow();
    return { created: row.created, optOut: toOptOut(row) };
  };
  return {
    async setOptOut(userId, category, optedOut, app = null) {
      if (optedOut) return (await addOptOut(userId, category, app)).created;
      const { numDeletedRows } = await db
        .deleteFrom('opt_outs')
        .where('user_id', '=', userId)
        .where('category', '=', category)
        .where('app', app === null ? 'is' : '=', app)
        .executeTakeFirst();
      return numDeletedRows > 0n;
    },
    addOptOut,
    async listOptOuts(userId, { app, limit = 1000 } = {}) {
      const rows = await db
        .selectFrom('opt_outs')
        .select(['app', 'user_id', 'category', 'created_at'])
        .where('user_id', '=', userId)
        .$if(app !== undefined, (q) => q.where((eb) => eb.or([eb('app', 'is', null), eb('app', '=', app ?? '')])))
        .orderBy('created_at', 'desc')
        .orderBy('category')
        .limit(limit)
        .execute();
      return rows.map(toOptOut);
    },
    async setMute(userId, objectId, until, app = null) {
      const row = await db
        .insertInto('mutes')
        .values({ user_id: userId, object_id: objectId, until, app })
        .onConflict((oc) =>
          (app === null ? oc.columns(['user_id', 'object_id']).where('app', 'is', null) : oc.columns(['user_id', 'object_id', 'app'])).doUpdateSet((eb) => ({
            until: eb.ref('excluded.until'),
          })),
        )
        .returning(['app', 'user_id', 'object_id', 'until', 'created_at', inserted])
        .executeTakeFirstOrThrow();
      return { created: row.created, mute: toMute(row) };
    },
    async clearMute(userId, objectId, app = null) {
      const { numDeletedRows } = await db
        .deleteFrom('mutes')
        .where('user_id', '=', userId)
        .where('object_id', '=', objectId)
        .where('app', app === null ? 'is' : '=', app)
        .executeTakeFirst();
      return numDeletedRows > 0n;
    },
    async listMutes(userId, now, { app, limit = 1000 } = {}) {
      const rows = await db
        .selectFrom('mutes')
        .select(['app', 'user_id', 'object_id', 'until', 'created_at'])
        .where('user_id', '=', userId)
        .where((eb) => eb.or([eb('until', 'is', null), eb('until', '>', now)]))
        .$if(app !== undefined, (q) => q.where((eb) => eb.or([eb('app', 'is', null), eb('app', '=', app ?? '')])))
        .orderBy('created_at', 'desc')
        .orderBy('object_id')
        .limit(limit)
        .execute();
      return rows.map(toMute);
    },
  };
}
