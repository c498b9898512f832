import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createDatabase, type Database } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { Command } from 'commander';
import { readCliConfig } from '../cli-config.ts';
import { printRows } from '../output.ts';

async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const config = readCliConfig();
  const logger = createLogger({ service: 'herald-cli', level: 'warn', format: 'json' });
  const db = createDatabase({ url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, logger });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

export function registerAdminCommands(program: Command): void {
  // `herald apps ...` lives in app-commands.ts.
  program
    .command('opt-out')
    .description('opt a user out of (or back into, with --undo) a category')
    .requiredOption('--user <userId>', 'user id')
    .requiredOption('--category <category>', 'category')
    .option('--undo', 'opt back in')
    .action(async (o: { user: string; category: string; undo?: boolean }) => {
      await withDatabase((db) => db.preferences.setOptOut(o.user, o.category, o.undo !== true));
      process.stdout.write(`${o.user} ${o.undo === true ? 'opted back into' : 'opted out of'} ${o.category}\n`);
    });

  program
    .command('mute')
    .description('mute an object for a user (e.g. a thread), optionally until a time')
    .requiredOption('--user <userId>', 'user id')
    .requiredOption('--object <objectId>', 'object id')
    .option('--until <iso>', 'ISO-8601 instant when the mute ends')
    .action(async (o: { user: string; object: string; until?: string }) => {
      await withDatabase((db) => db.preferences.setMute(o.user, o.object, o.until === undefined ? null : new Date(o.until)));
      process.stdout.write(`${o.user} muted ${o.object}${o.until === undefined ? '' : ` until ${o.until}`}\n`);
    });

  const sandbox = program.command('sandbox').description('the local APNs/FCM sandboxes');
  sandbox
    .command('records')
    .description('what the sandboxes received, newest last')
    .option('--platform <platform>', 'apns or fcm')
    .option('--token <token>', 'only this device token')
    .option('--limit <n>', 'at most this many', '20')
    .option('--json', 'print the full requests as JSON')
    .action(async (o: { platform?: string; token?: string; limit: string; json?: boolean }) => {
      const settings = JSON.parse(await readFile(join(readCliConfig().SANDBOX_STATE_DIR, 'sandbox.json'), 'utf8')) as {
        control: { url: string };
      };
      const query = new URLSearchParams({ limit: o.limit, ...(o.platform && { platform: o.platform }), ...(o.token && { token: o.token }) });
      const res = await fetch(`${settings.control.url}/records?${query}`);
      const records = (await res.json()) as Array<Record<string, unknown>>;
      if (o.json === true) printRows(records, true);
      else printRows(records.map((r) => ({ seq: r['seq'], platform: r['platform'], at: r['receivedAt'], status: r['status'], path: r['path'], body: r['body'] })), false);
    });
}
