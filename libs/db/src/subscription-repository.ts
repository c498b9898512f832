import { randomUUID } from 'node:crypto';
import { storableCopy } from '@herald/contracts';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { HeraldTables, WebhookSubscriptionsTable } from './tables.ts';

/** A webhook subscription as stored; `resourceId` '*' watches every resource of the type. */
export interface SubscriptionRow {
  id: string;
  team: string;
  callbackUrl: string;
  resourceType: string;
  resourceId: string;
  secret: string;
  /** The secret before the last rotation and until when deliveries are signed with it too; null when none. */
  previousSecret: { secret: string; until: Date } | null;
  enabled: boolean;
  failingSince: Date | null;
  disabledAt: Date | null;
  disabledReason: string | null;
  createdAt: Date;
}

export interface SubscriptionInsert {
  team: string;
  callbackUrl: string;
  resourceType: string;
  resourceId: string;
  secret: string;
}

/** A keyset page: rows after `after` in id order, at most `limit`. */
export interface SubscriptionPage {
  limit: number;
  after?: string;
}

export interface SubscriptionRepository {
  create(s: SubscriptionInsert): Promise<SubscriptionRow>;
  /**
   * Create unless the team already has `maxPerTeam` subscriptions ('team-limit') or one of the same
   * callback URL and resource (`{ existing }`, its id: a copy would deliver every change twice to one
   * receiver, and a team's thousand copies of a "*" subscription made each change a thousand
   * deliveries on the queue every team shares). Creates of one team are serialised (a
   * transaction-scoped advisory lock), so concurrent requests cannot pass either check together.
   */
  createWithin(s: SubscriptionInsert, maxPerTeam: number): Promise<SubscriptionRow | 'team-limit' | { existing: string }>;
  /** The team's subscriptions, a page at a time in id order. */
  listForTeam(team: string, page: SubscriptionPage): Promise<SubscriptionRow[]>;
  /** The team's subscription, or undefined (another team's is as good as missing). */
  getForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
  deleteForTeam(team: string, id: string): Promise<boolean>;
  /**
   * A new secret; the current one is kept as the previous until `keepPreviousUntil` (deliveries are
   * signed with both meanwhile), or none is kept (undefined: dropped at once). A rotation while a
   * previous one still signs keeps that previous one (the secret the receiver may still hold; a
   * retried rotation whose answer was lost must not drop it) and replaces only the new secret.
   * Undefined if the team has no such subscription.
   */
  rotateSecretForTeam(team: string, id: string, secret: string, keepPreviousUntil: Date | undefined): Promise<SubscriptionRow | undefined>;
  /** Enable again (and forget past failures); undefined if the team has no such subscription. */
  enableForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
  /** Any subscriptions by id (the pusher's lookup). */
  getMany(ids: readonly string[]): Promise<Map<string, SubscriptionRow>>;
  /**
   * Enabled subscriptions of any of the resources (its own id or the wildcard), a page at a time
   * in id order; `matchesResource` says which resource each is for.
   */
  findMatching(resources: ReadonlyArray<{ type: string; id: string }>, page: SubscriptionPage): Promise<SubscriptionRow[]>;
  /** Note a failed delivery at `at`; returns since when the subscription has been failing. */
  noteFailure(id: string, at: Date): Promise<Date | undefined>;
  /** Forget failures of these subscriptions (a delivery succeeded). */
  noteSuccess(ids: readonly string[]): Promise<void>;
  /**
   * Disable if still enabled (and, given `failingSince`, still failing since then: a subscription an
   * operator enabled again, or one a delivery succeeded for, since the failure was noted is left
   * alone); true when this call disabled it (so only one pusher alarms). The reason is stored as
   * storableCopy makes it (a receiver's answer may hold a NUL).
   */
  disable(id: string, reason: string, failingSince?: Date): Promise<boolean>;
}

/** Whether the subscription watches the resource: its type, and its id or the wildcard. */
export const matchesResource = (s: SubscriptionRow, r: { type: string; id: string }): boolean =>
  s.resourceType === r.type && (s.resourceId === r.id || s.resourceId === '*');

/** The advisory lock class serialising one team's subscription creates (createWithin). */
export const SUBSCRIPTION_CREATE_LOCK_CLASS = 0x5753;

const toRow = (r: Selectable<WebhookSubscriptionsTable>): SubscriptionRow => ({
  id: r.id,
  team: r.team,
  callbackUrl: r.callback_url,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  secret: r.secret,
  previousSecret: r.previous_secret === null || r.previous_secret_until === null ? null : { secret: r.previous_secret, until: r.previous_secret_until },
  enabled: r.enabled,
  failingSince: r.failing_since,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
});

function insert(db: Kysely<HeraldTables>, s: SubscriptionInsert) {
  return db
    .insertInto('webhook_subscriptions')
    .values({
      id: randomUUID(),
      team: s.team,
      callback_url: s.callbackUrl,
      resource_type: s.resourceType,
      resource_id: s.resourceId,
      secret: s.secret,
      failing_since: null,
      disabled_at: null,
      disabled_reason: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function createSubscriptionRepository(db: Kysely<HeraldTables>): SubscriptionRepository {
  const table = () => db.selectFrom('webhook_subscriptions').selectAll();
  return {
    async create(s) {
      return toRow(await insert(db, s));
    },
    async createWithin(s, maxPerTeam) {
      return db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${SUBSCRIPTION_CREATE_LOCK_CLASS}::int, hashtext(current_schema() || ':' || ${s.team}))`.execute(trx);
        const { n } = await trx.selectFrom('webhook_subscriptions').select((eb) => eb.fn.countAll<string>().as('n')).where('team', '=', s.team).executeTakeFirstOrThrow();
        const same = await trx
          .selectFrom('webhook_subscriptions')
          .select('id')
          .where('team', '=', s.team)
          .where('callback_url', '=', s.callbackUrl)
          .where('resource_type', '=', s.resourceType)
          .where('resource_id', '=', s.resourceId)
          .executeTakeFirst();
        if (same !== undefined) return { existing: same.id };
        if (Number(n) >= maxPerTeam) return 'team-limit' as const;
        return toRow(await insert(trx, s));
      });
    },
    async listForTeam(team, page) {
      let q = table().where('team', '=', team);
      if (page.after !== undefined) q = q.where('id', '>', page.after);
      return (await q.orderBy('id').limit(page.limit).execute()).map(toRow);
    },
    async getForTeam(team, id) {
      const row = await table().where('team', '=', team).where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : toRow(row);
    },
    async deleteForTeam(team, id) {
      const r = await db.deleteFrom('webhook_subscriptions').where('team', '=', team).where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    async rotateSecretForTeam(team, id, secret, keepPreviousUntil) {
      const row = await db
        .updateTable('webhook_subscriptions')
        .set(
          keepPreviousUntil === undefined
            ? { previous_secret: null, previous_secret_until: null, secret }
            : {
                previous_secret: sql<string>`case when previous_secret_until > now() then previous_secret else secret end`,
                // The kept secret keeps its own expiry: pushed back by each rotation, it signed for good.
                previous_secret_until: sql<Date>`case when previous_secret_until > now() then least(previous_secret_until, ${keepPreviousUntil}) else ${keepPreviousUntil} end`,
                secret,
              },
        )
        .where('team', '=', team)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : toRow(row);
    },
    async enableForTeam(team, id) {
      const row = await db
        .updateTable('webhook_subscriptions')
        .set({ enabled: true, failing_since: null, disabled_at: null, disabled_reason: null })
        .where('team', '=', team)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : toRow(row);
    },
    async getMany(ids) {
      if (ids.length === 0) return new Map();
      const rows = await table().where('id', 'in', [...new Set(ids)]).execute();
      return new Map(rows.map((r) => [r.id, toRow(r)]));
    },
    async findMatching(resources, page) {
      if (resources.length === 0) return [];
      const types = [...new Set(resources.map((r) => r.type))];
      let q = table()
        .where('enabled', '=', true)
        .where((eb) =>
          eb.or([
            eb(eb.refTuple('resource_type', 'resource_id'), 'in', resources.map((r) => eb.tuple(r.type, r.id))),
            eb.and([eb('resource_type', 'in', types), eb('resource_id', '=', '*')]),
          ]),
        );
      if (page.after !== undefined) q = q.where('id', '>', page.after);
      return (await q.orderBy('id').limit(page.limit).execute()).map(toRow);
    },
    async noteFailure(id, at) {
      const row = await db
        .updateTable('webhook_subscriptions')
        .set({ failing_since: sql<Date>`coalesce(failing_since, ${at})` })
        .where('id', '=', id)
        .returning('failing_since')
        .executeTakeFirst();
      return row?.failing_since ?? undefined;
    },
    async noteSuccess(ids) {
      if (ids.length === 0) return;
      await db.updateTable('webhook_subscriptions').set({ failing_since: null }).where('id', 'in', [...new Set(ids)]).where('failing_since', 'is not', null).execute();
    },
    async disable(id, reason, failingSince) {
      let q = db
        .updateTable('webhook_subscriptions')
        .set({ enabled: false, disabled_at: sql<Date>`now()`, disabled_reason: storableCopy(reason) })
        .where('id', '=', id)
        .where('enabled', '=', true);
      if (failingSince !== undefined) q = q.where('failing_since', '=', failingSince);
      const r = await q.executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
  };
}
