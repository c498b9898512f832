import type { Command } from 'commander';
import { ActionRefused } from '@herald/db';
import { printRows } from '../output.ts';
import { auditedCli } from './cli-audit.ts';
import { withDatabase } from './with-database.ts';

type CreateFlags = { team?: string; apps?: string; operator?: string };

async function createOperatorKey(name: string): Promise<void> {
  const what = { action: 'operator-key.create', target: `operator:${name}`, request: { via: 'cli' } };
  const created = await auditedCli(what, (db) => db.apiKeys.createOperator(name), (c) => ({ id: c.row.id, name }));
  process.stdout.write(
    `operator key ${created.row.id} for ${name}:\n${created.key}\nStore it now: Herald keeps only its hash. ` +
      'It opens the dashboard (log in with it) and the admin routes; each write action is recorded under this name (herald audit).\n',
  );
}

async function createTeamKey(team: string, appList: string): Promise<void> {
  const apps = appList.split(',').map((a) => a.trim()).filter((a) => a.length > 0);
  if (apps.length === 0) throw new Error('--apps needs at least one app id (or *)');
  const what = { action: 'key.create', target: `team:${team}`, request: { apps, via: 'cli' } };
  const created = await auditedCli(what, async (db) => {
    const missing = [];
    for (const app of apps.filter((a) => a !== '*')) if ((await db.apps.get(app)) === undefined) missing.push(app);
    if (missing.length > 0) throw new Error(`unknown app(s): ${missing.join(', ')} (add them with herald apps add)`);
    return db.apiKeys.create(team, apps);
  }, (c) => ({ id: c.row.id, team, apps }));
  process.stdout.write(`key ${created.row.id} for team ${team} (apps: ${apps.join(', ')}):\n${created.key}\nStore it now: Herald keeps only its hash.\n`);
}

/** A key's id: 12 hex characters (ApiKeyRepository.create). */
const KEY_ID = /^[0-9a-f]{12}$/;

/** `herald keys create|list|revoke`: team API keys for the HTTP API and operator keys (stored as SHA-256 only). */
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('team API keys for the HTTP API, operator keys for the dashboard and admin routes');
  keys
    .command('create')
    .description('create a key; it is printed once and cannot be shown again')
    .option('--team <team>', 'a team key: the team the key belongs to (with --apps)')
    .option('--apps <apps>', 'a team key: comma-separated app ids the key may act for, or * for all')
    .option('--operator <name>', 'an operator key for this person instead (the dashboard, its write actions, the admin routes)')
    .action(async (o: CreateFlags) => {
      if (o.operator !== undefined) {
        if (o.team !== undefined || o.apps !== undefined) throw new Error('--operator makes an operator key: give it without --team and --apps');
        if (o.operator.trim().length === 0 || o.operator.length > 100) throw new Error('--operator needs a name of 1 to 100 characters');
        await createOperatorKey(o.operator.trim());
        return;
      }
      if (o.team === undefined || o.apps === undefined) throw new Error('give --team <team> --apps <apps> for a team key, or --operator <name> for an operator key');
      await createTeamKey(o.team, o.apps);
    });
  keys
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withDatabase((db) => db.apiKeys.list());
      printRows(
        // team: the team, or for an operator key the operator's name.
        rows.map((r) => ({ id: r.id, kind: r.kind, team: r.team, apps: r.apps.join(','), createdAt: r.createdAt.toISOString(), revokedAt: r.revokedAt?.toISOString() })),
        o.json === true,
      );
    });
  keys
    .command('revoke <id>')
    .description('revoke a key (the API stops accepting it within API_KEY_CACHE_TTL_MS)')
    .action(async (given: string) => {
      // The key itself pasted for its id (whole, or in a line such as HERALD_OPERATOR_KEY=hko_…):
      // revoke by the id inside it. Anything else that is no id is refused before it is written
      // anywhere: the audit log and the CLI's log kept a mangled paste, the secret in it, and the
      // leaked key stayed live.
      const id = /hko?_([0-9a-f]{12})_/.exec(given)?.[1] ?? given.trim();
      if (!KEY_ID.test(id)) throw new Error('give a key id (12 hex characters, as `herald keys list` shows) or the key itself: nothing revoked');
      await auditedCli({ action: 'key.revoke', target: id, request: { via: 'cli' } }, async (db) => {
        // A wrong id revoked nothing while the leaked key kept working: refused, on stderr, exit 1.
        if (!(await db.apiKeys.revoke(id))) throw new ActionRefused(`no live key ${id}: \`herald keys list\` shows the keys' ids and which are revoked`);
        return true;
      });
      process.stdout.write(`key ${id} revoked\n`);
    });
}
