import type { Command } from 'commander';
import { printRows } from '../output.ts';
import { withDatabase } from './with-database.ts';

/** `herald audit`: the operator write actions recorded in PostgreSQL, newest first. */
export function registerAuditCommand(program: Command): void {
  program
    .command('audit')
    .description(
      'who did what, when: every recorded write action (parked replay and purge, app and key administration), newest first',
    )
    .option('--limit <n>', 'at most this many', '50')
    .option(
      '--action <action>',
      'only this action, e.g. parked.replay, parked.purge, app.disable, key.create, operator-key.create',
    )
    .option('--actor <id>', 'only this actor: an operator key id, HERALD_ADMIN_KEY, or user@host for the CLI')
    .option('--json', 'print JSON')
    .action(async (o: { limit: string; action?: string; actor?: string; json?: boolean }) => {
      if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1) throw new Error(`--limit must be a positive integer, got "${o.limit}"`);
      const entries = await withDatabase((db) =>
        db.audit.list({
          limit: Number(o.limit),
          ...(o.action !== undefined && { action: o.action }),
          ...(o.actor !== undefined && { actorId: o.actor }),
        }),
      );
      if (o.json === true) {
        printRows(
          entries.map((e) => ({ ...e, at: e.at.toISOString(), finishedAt: e.finishedAt?.toISOString() ?? null })),
          true,
        );
        return;
      }
      printRows(
        entries.map((e) => ({
          at: e.at.toISOString(),
          who: `${e.actor.name} (${e.actor.kind} ${e.actor.id})`,
          action: e.action,
          target: e.target,
          request: e.request,
          outcome: e.outcome,
          result: e.result,
        })),
        false,
      );
    });
}
