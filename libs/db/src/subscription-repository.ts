import { randomUUID } from 'node:crypto';
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

export interface SubscriptionRepository {
  create(s: SubscriptionInsert): Promise<SubscriptionRow>;
  listForTeam(team: string): Promise<SubscriptionRow[]>;
  /** The team's subscription, or undefined (another team's is as good as missing). */
  getForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
  deleteForTeam(team: string, id: string): Promise<boolean>;
  /** Enable again (and forget past failures); undefined if the team has no such subscription. */
  enableForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
  /** Any subscriptions by id (the pusher's lookup). */
  getMany(ids: readonly string[]): Promise<Map<string, SubscriptionRow>>;
  /** Enabled subscriptions of each resource: its own id or the wildcard; keyed by `type\0id`. */
  findMatching(resources: ReadonlyArray<{ type: string; id: string }>): Promise<Map<string, SubscriptionRow[]>>;
  /** Note a failed delivery at `at`; returns since when the subscription has been failing. */
  noteFailure(id: string, at: Date): Promise<Date | undefined>;
  /** Forget failures of these subscriptions (a delivery succeeded). */
  noteSuccess(ids: readonly string[]): Promise<void>;
  /** Disable if still enabled; true when this call disabled it (so only one pusher alarms). */
  disable(id: string, reason: string): Promise<boolean>;
}

export const matchKey = (type: string, id: string): string => `${type}\0${id}`;

const toRow = (r: Selectable<WebhookSubscriptionsTable>): SubscriptionRow => ({
  id: r.id,
  team: r.team,
  callbackUrl: r.callback_url,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  secret: r.secret,
  enabled: r.enabled,
  failingSince: r.failing_since,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
});

export function createSubscriptionRepository(db: Kysely<HeraldTables>): SubscriptionRepository {
  const table = () => db.selectFrom('webhook_subscriptions').selectAll();
  return {
    async create(s) {
      const row = await db
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
      return toRow(row);
    },
    async listForTeam(team) {
      return (await table().where('team', '=', team).orderBy('created_at').orderBy('id').execute()).map(toRow);
    },
    async getForTeam(team, id) {
      const row = await table().where('team', '=', team).where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : toRow(row);
    },
    async deleteForTeam(team, id) {
      const r = await db.deleteFrom('webhook_subscriptions').where('team', '=', team).where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
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
    async findMatching(resources) {
      const found = new Map<string, SubscriptionRow[]>();
      if (resources.length === 0) return found;
      const types = [...new Set(resources.map((r) => r.type))];
      const ids = [...new Set([...resources.map((r) => r.id), '*'])];
      const rows = await table()
        .where('enabled', '=', true)
        .where('resource_type', 'in', types)
        .where('resource_id', 'in', ids)
        .orderBy('id')
        .execute();
      for (const r of resources) {
        const key = matchKey(r.type, r.id);
        if (found.has(key)) continue;
        found.set(key, rows.filter((s) => s.resource_type === r.type && (s.resource_id === r.id || s.resource_id === '*')).map(toRow));
      }
      return found;
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
    async disable(id, reason) {
      const r = await db
        .updateTable('webhook_subscriptions')
        .set({ enabled: false, disabled_at: sql<Date>`now()`, disabled_reason: reason })
        .where('id', '=', id)
        .where('enabled', '=', true)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
  };
}
