import type { Command } from 'commander';
import { printRows } from '../output.ts';
import { withDatabase } from './with-database.ts';

/** `herald keys create|list|revoke`: team API keys for the HTTP API (stored as SHA-256 only). */
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('team API keys for the HTTP API');
  keys
    .command('create')
    .description('create a key; it is printed once and cannot be shown again')
    .requiredOption('--team <team>', 'the team the key belongs to')
    .requiredOption('--apps <apps>', 'comma-separated app ids the key may act for, or * for all')
    .action(async (o: { team: string; apps: string }) => {
      const apps = o.apps.split(',').map((a) => a.trim()).filter((a) => a.length > 0);
      if (apps.length === 0) throw new Error('--apps needs at least one app id (or *)');
      const created = await withDatabase(async (db) => {
        const missing = [];
        for (const app of apps.filter((a) => a !== '*')) if ((await db.apps.get(app)) === undefined) missing.push(app);
        if (missing.length > 0) throw new Error(`unknown app(s): ${missing.join(', ')} (add them with herald apps add)`);
        return db.apiKeys.create(o.team, apps);
      });
      process.stdout.write(`key ${created.row.id} for team ${o.team} (apps: ${apps.join(', ')}):\n${created.key}\nStore it now: Herald keeps only its hash.\n`);
    });
  keys
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withDatabase((db) => db.apiKeys.list());
      printRows(rows.map((r) => ({ id: r.id, team: r.team, apps: r.apps.join(','), createdAt: r.createdAt.toISOString(), revokedAt: r.revokedAt?.toISOString() })), o.json === true);
    });
  keys
    .command('revoke <id>')
    .description('revoke a key (the API stops accepting it within API_KEY_CACHE_TTL_MS)')
    .action(async (id: string) => {
      const done = await withDatabase((db) => db.apiKeys.revoke(id));
      process.stdout.write(done ? `key ${id} revoked\n` : `no live key ${id}\n`);
    });
}
