import pg from 'pg';
import { Kysely, PostgresDialect, sql, type CompiledQuery } from 'kysely';
import type { Database } from './database.ts';
import type { HeraldTables } from './tables.ts';
import { readAudienceChunk, type AudienceChunkRequest } from './audience-stream.ts';

export interface AudienceSeed {
  app: string;
  /** How many devices (one user each, user-<n>, n from 1): half APNs, half FCM, valid token shapes. */
  devices: number;
  /** A topic every seeded user is subscribed to (created if missing). */
  topic?: string;
  /** A user every seeded user follows (follower index refilled afterwards). */
  followee?: string;
}

/**
 * Seeds an audience fast with INSERT … SELECT generate_series (one statement per table, no rows
 * through Node): devices with cycling attributes (platform, locale, timezone, app version, last
 * seen 0-89 days ago; each drawn from a hash of n, independently), topic memberships and follow edges. For benchmarks and the plans in
 * docs/audience-plans.md; the app must exist. Users are `user-1` … `user-<devices>`.
 */
export async function seedAudience(db: Database, seed: AudienceSeed): Promise<void> {
  // Synthetic users, never erased: the erasure guard (migration 0040, a look-up a row) is passed as the erasure's own writes pass it.
  await db.kysely.transaction().execute(async (k) => {
    await sql`select set_config('herald.erasing', 'on', true)`.execute(k);
    await seedRows(k, seed);
  });
  const k = db.kysely;
  await sql`analyze devices`.execute(k);
  await sql`analyze topic_members`.execute(k);
  await sql`analyze follows`.execute(k);
}

async function seedRows(k: Kysely<HeraldTables>, seed: AudienceSeed): Promise<void> {
  await sql`
    insert into devices (app, platform, token, user_id, timezone, locale, app_version, registered_at, last_event_at, last_seen_at)
    select ${seed.app}, case when g % 2 = 0 then 'apns' else 'fcm' end,
      case when g % 2 = 0 then md5('a' || g) || md5('b' || g) else 'seed' || g || ':APA91b' || md5(g::text) end,
      'user-' || g,
      (array['Europe/Berlin', 'UTC', 'America/New_York', 'Asia/Tokyo'])[1 + abs(hashtext('z' || g)) % 4],
      (array['de-DE', 'de-AT', 'en-GB', 'en-US', 'fr-FR'])[1 + abs(hashtext('l' || g)) % 5],
      (array['4.9.1', '5.0', '5.2.3', '5.10.0', '6.0.0-beta1'])[1 + abs(hashtext('v' || g)) % 5],
      now() - interval '100 days', now() - interval '100 days', now() - (abs(hashtext('s' || g)) % 90) * interval '1 day'
    from generate_series(1, ${seed.devices}::int) g`.execute(k);
  if (seed.topic !== undefined) {
    await sql`insert into topics (app, name) values (${seed.app}, ${seed.topic}) on conflict do nothing`.execute(k);
    await sql`
      insert into topic_members (app, topic, member_kind, member_id, subscribed, event_at)
      select ${seed.app}, ${seed.topic}, 'user', 'user-' || g, true, now() - interval '1 day'
      from generate_series(1, ${seed.devices}::int) g`.execute(k);
  }
  if (seed.followee !== undefined) {
    await sql`
      insert into follows (app, followee, follower, following, event_at)
      select ${seed.app}, ${seed.followee}, 'user-' || g, true, now() - interval '1 day'
      from generate_series(1, ${seed.devices}::int) g`.execute(k);
  }
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of every statement one readAudienceChunk runs (for the plans in
 * docs/audience-plans.md): the chunk is read through a second pool that records each compiled
 * query, then each is explained with its parameters.
 */
export async function explainAudienceChunk(db: Database, url: string, req: AudienceChunkRequest): Promise<{ sql: string; plan: string }[]> {
  const captured: CompiledQuery[] = [];
  const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${db.schema}` });
  const kysely = new Kysely<HeraldTables>({ dialect: new PostgresDialect({ pool }), log: (e) => void captured.push(e.query) });
  try {
    await readAudienceChunk({ ...db, kysely }, req);
    const plans: { sql: string; plan: string }[] = [];
    for (const q of captured) {
      const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${q.sql}`, [...q.parameters]);
      plans.push({ sql: q.sql, plan: rows.map((r) => r['QUERY PLAN']).join('\n') });
    }
    return plans;
  } finally {
    await kysely.destroy();
  }
}
