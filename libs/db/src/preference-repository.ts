import type { Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** Opt-outs (by category) and mutes (by object), as findTargets reads them. */
export interface PreferenceRepository {
  setOptOut(userId: string, category: string, optedOut: boolean): Promise<void>;
  /** Mute pushes about objectId until `until` (null = forever); replaces an existing mute. */
  setMute(userId: string, objectId: string, until: Date | null): Promise<void>;
  clearMute(userId: string, objectId: string): Promise<void>;
}

export function createPreferenceRepository(db: Kysely<HeraldTables>): PreferenceRepository {
  return {
    async setOptOut(userId, category, optedOut) {
      if (optedOut) {
        await db
          .insertInto('opt_outs')
          .values({ user_id: userId, category })
          .onConflict((oc) => oc.columns(['user_id', 'category']).doNothing())
          .execute();
      } else {
        await db.deleteFrom('opt_outs').where('user_id', '=', userId).where('category', '=', category).execute();
      }
    },
    async setMute(userId, objectId, until) {
      await db
        .insertInto('mutes')
        .values({ user_id: userId, object_id: objectId, until })
        .onConflict((oc) => oc.columns(['user_id', 'object_id']).doUpdateSet((eb) => ({ until: eb.ref('excluded.until') })))
        .execute();
    },
    async clearMute(userId, objectId) {
      await db.deleteFrom('mutes').where('user_id', '=', userId).where('object_id', '=', objectId).execute();
    },
  };
}
