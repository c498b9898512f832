import { createAppCredentialStore, createDatabase } from '@herald/db';
import type { Logger } from '@herald/logging';
import { applyTopologyWhenReachable, heraldTopology } from '@herald/messaging';
import { suffixedTopicWarning } from '@herald/providers';

export interface PrepareOptions {
  amqpUrl: string;
  databaseUrl: string;
  schema: string;
  retryDelaysMs: readonly number[];
  logger: Logger;
  /** Apps to create when missing (the local demo app). Existing apps are left as they are. */
  seedApps?: ReadonlyArray<{ id: string; apnsTopic: string; webPushHosts?: string[] }>;
}

/**
 * Apply the queue topology (trying again for a minute while the broker cannot be reached or drops
 * the connection) and the database migrations (both idempotent), then seed apps.
 */
export async function prepareEnvironment(opts: PrepareOptions): Promise<void> {
  await applyTopologyWhenReachable({ url: opts.amqpUrl, logger: opts.logger, topology: heraldTopology({ retryDelaysMs: opts.retryDelaysMs }) });
  const db = createDatabase({ url: opts.databaseUrl, schema: opts.schema, logger: opts.logger });
  try {
    await db.migrate();
    for (const app of opts.seedApps ?? []) {
      if ((await db.apps.get(app.id)) !== undefined) continue;
      await db.apps.upsert({ id: app.id, apnsTopic: app.apnsTopic, enabled: true });
      if (app.webPushHosts !== undefined) await createAppCredentialStore(db.kysely, undefined).updateWebPush(app.id, { hosts: app.webPushHosts });
    }
    for (const app of await db.apps.list()) {
      const warning = suffixedTopicWarning(app.id, app.apnsTopic);
      if (warning !== undefined) opts.logger.warn({ app: app.id, apnsTopic: app.apnsTopic }, warning);
    }
  } finally {
    await db.close();
  }
}
