import type { AppRow, Database } from '@herald/db';

/** The app, or a one-line error saying it does not exist (the CLI checks before it publishes or writes). */
export async function requireApp(db: Database, id: string): Promise<AppRow> {
  const app = await db.apps.get(id);
  if (app === undefined) throw new Error(`unknown app "${id}": \`herald apps list\` shows the apps, \`herald apps add ${id}\` adds one`);
  return app;
}

/** As requireApp, and enabled: a disabled app's jobs are parked, so none is published for it. */
export async function requireEnabledApp(db: Database, id: string): Promise<AppRow> {
  const app = await requireApp(db, id);
  if (!app.enabled) throw new Error(`app "${id}" is disabled, so Herald would park this: \`herald apps enable ${id}\` first`);
  return app;
}
