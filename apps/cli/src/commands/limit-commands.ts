import { destinationOf, LimitedChannels, type LimitedChannel } from '@herald/contracts';
import type { Command } from 'commander';
import { ActionRefused } from '@herald/db';
import { printRows } from '../output.ts';
import { requireApp } from './app-check.ts';
import { auditedCli } from './cli-audit.ts';
import { withDatabase } from './with-database.ts';

function platformOf(raw: string): LimitedChannel {
  if (!(LimitedChannels as readonly string[]).includes(raw)) throw new Error(`--platform must be one of ${LimitedChannels.join(', ')}, got "${raw}"`);
  return raw as LimitedChannel;
}

function rateOf(raw: string): number {
  const rate = Number(raw);
  if (!Number.isInteger(rate) || rate < 1) throw new Error(`--rate must be a whole number of pushes per second (at least 1), got "${raw}"`);
  return rate;
}

/**
 * --app as given, never blank: an empty one (a script's unset variable) is the platform's own
 * budget in the store, and `limits remove --app ""` removed the fleet-wide budget.
 */
function appOf(app: string): string {
  if (app.trim() === '') throw new Error('--app is empty: give an app id (or a webhook destination), or leave --app out for the platform-wide budget');
  return app;
}

/**
 * A webhook budget's destination as the webhook pusher looks it up (destinationOf: the host in lower
 * case, the port always given): "Hooks.Example.com", "hooks.example.com:443" and
 * "https://hooks.example.com/herald" are all "hooks.example.com:443" (a bare host is https's; give
 * a loopback receiver's port, or its http URL). Kept as typed, a budget no
 * delivery matched paced nothing while `limits list` showed it.
 */
function webhookDestinationOf(raw: string): string {
  const refused = new Error(`--app for webhook must be a destination host or host:port (e.g. "hooks.example.com:443"), got "${raw}"`);
  let url: URL;
  try {
    url = new URL(raw.includes('://') ? raw : `https://${raw}`);
  } catch {
    throw refused;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused;
  if (url.username !== '' || url.password !== '') throw refused;
  if (!raw.includes('://') && (url.pathname !== '/' || url.search !== '' || url.hash !== '')) throw refused;
  return destinationOf(url.href);
}

/** The budget a --platform/--app pair names: a webhook destination in the form its deliveries use. */
const budgetKey = (platform: LimitedChannel, app: string | undefined): { platform: LimitedChannel; app?: string } =>
  app === undefined ? { platform } : { platform, app: platform === 'webhook' ? webhookDestinationOf(appOf(app)) : appOf(app) };

/** What the audit log names as a budget: the platform, or platform:app for an app's own. */
const limitTarget = (key: { platform: string; app?: string }): string => (key.app === undefined ? key.platform : `${key.platform}:${key.app}`);

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
      const key = budgetKey(platformOf(o.platform), o.app);
      const rate = rateOf(o.rate);
      const what = { action: 'limit.set', target: limitTarget(key), request: { ...key, rate, via: 'cli' } };
      await auditedCli(
        what,
        async (db) => {
          // A device platform's --app is an app id: a typo (or 'Demo') made a budget no push ever
          // matched, and the operator believed the app limited. A webhook's is a destination.
          if (key.app !== undefined && key.platform !== 'webhook') await requireApp(db, key.app);
          return db.rateLimits.set(key, rate);
        },
        () => ({ ratePerSec: rate }),
      );
      process.stdout.write(`${o.platform}${key.app === undefined ? '' : ` ${key.platform === 'webhook' ? 'destination' : 'app'} ${key.app}`}: at most ${rate} pushes/s\n`);
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
    .requiredOption('--platform <platform>', 'apns, fcm, web or webhook')
    .option('--app <app>', 'the app-specific budget (for webhook, the destination host:port)')
    .action(async (o: { platform: string; app?: string }) => {
      const key = budgetKey(platformOf(o.platform), o.app);
      const what = { action: 'limit.remove', target: limitTarget(key), request: { ...key, via: 'cli' } };
      await auditedCli(what, async (db) => {
        if (await db.rateLimits.remove(key)) return true;
        // A webhook budget set before destinations were normalised is stored as it was typed.
        if (o.app !== undefined && o.app !== key.app && (await db.rateLimits.remove({ platform: key.platform, app: o.app }))) return true;
        throw new ActionRefused(`no ${limitTarget(key)} limit: \`herald limits list\` shows them`);
      }, () => ({ removed: true }));
      process.stdout.write(`removed the ${limitTarget(key)} limit\n`);
    });
}
