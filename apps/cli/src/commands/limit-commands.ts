import { LimitedChannels, type LimitedChannel } from '@herald/contracts';
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

function platformOf(raw: string): LimitedChannel {
  if (!(LimitedChannels as readonly string[]).includes(raw)) throw new Error(`--platform must be one of ${LimitedChannels.join(', ')}, got "${raw}"`);
  return raw as LimitedChannel;
}

function rateOf(raw: string): number {
  const rate = Number(raw);
  if (!Number.isInteger(rate) || rate < 1) throw new Error(`--rate must be a whole number of pushes per second (at least 1), got "${raw}"`);
  return rate;
}

/** `herald limits set|list|remove`: the fleet-wide outbound budgets every pusher shares. */
export function registerLimitCommands(program: Command): void {
  const limits = program.command('limits').description('fleet-wide outbound rate limits (pushes/s), shared by every pusher process');
  limits
    .command('set')
    .description('set (or change) a budget; running pushers follow it within about a second')
    .requiredOption('--platform <platform>', 'apns, fcm, web or webhook')
    .requiredOption('--rate <pushesPerSecond>', 'the budget, in pushes per second')
    .option('--app <app>', 'a budget for this app only (on top of the platform budget); for webhook, a destination host:port')
    .action(async (o: { platform: string; rate: string; app?: string }) => {
      const key = { platform: platformOf(o.platform), ...(o.app !== undefined && { app: o.app }) };
      const rate = rateOf(o.rate);
      await withDatabase((db) => db.rateLimits.set(key, rate));
      process.stdout.write(`${o.platform}${o.app === undefined ? '' : ` app ${o.app}`}: at most ${rate} pushes/s\n`);
    });
  limits
    .command('list')
    .description('every configured budget')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withDatabase((db) => db.rateLimits.list());
      printRows(
        rows.map((r) => ({ platform: r.platform, app: r.app === '' ? '*' : r.app, ratePerSec: r.ratePerSec, updatedAt: r.updatedAt.toISOString() })),
        o.json === true,
      );
    });
  limits
    .command('remove')
    .description('remove a budget (that platform or app is then not limited)')
    .requiredOption('--platform <platform>', 'apns, fcm or webhook')
    .option('--app <app>', 'the app-specific budget')
    .action(async (o: { platform: string; app?: string }) => {
      const key = { platform: platformOf(o.platform), ...(o.app !== undefined && { app: o.app }) };
      const removed = await withDatabase((db) => db.rateLimits.remove(key));
      process.stdout.write(removed ? 'removed\n' : 'no such limit\n');
    });
}
