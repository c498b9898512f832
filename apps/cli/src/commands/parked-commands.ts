import { createLogger } from '@herald/logging';
import { listParked, purgeParked, replayParked, type ParkedFilter, type ParkedMessage } from '@herald/messaging';
import type { Command } from 'commander';
import { readCliConfig } from '../cli-config.ts';
import { printObject, printRows } from '../output.ts';
import { progressBar } from '../progress-bar.ts';

type FilterOptions = { id?: string; code?: string; all?: boolean };

const base = (queue: string) => ({
  url: readCliConfig().AMQP_URL,
  logger: createLogger({ service: 'herald-cli', level: 'warn', format: 'json' }),
  queue,
});

/** Exactly one of --id, --code, --all; a bulk operation must be asked for by name. */
function filterOf(o: FilterOptions): ParkedFilter {
  const given = [o.id !== undefined, o.code !== undefined, o.all === true].filter(Boolean).length;
  if (given !== 1) throw new Error('give exactly one of --id <messageId>, --code <code>, --all');
  if (o.id !== undefined) return { kind: 'id', id: o.id };
  if (o.code !== undefined) return { kind: 'code', code: o.code };
  return { kind: 'all' };
}

const bodyOf = (m: ParkedMessage): unknown => {
  try {
    return JSON.parse(m.body.toString('utf8')) as unknown;
  } catch {
    return m.body.toString('utf8');
  }
};

const row = (m: ParkedMessage) => ({ id: m.messageId, code: m.code, attempts: m.attempt, parkedAt: m.parkedAt, queue: m.originalQueue, reason: m.reason });

/** `herald parked list|show|replay|purge <queue>`: the parked queue of a work queue. */
export function registerParkedCommands(program: Command): void {
  const parked = program.command('parked').description('messages parked in <queue>.parked: list, show, replay, purge');
  parked
    .command('list <queue>')
    .description('parked messages of a work queue (e.g. push.apns.send), oldest first')
    .option('--limit <n>', 'at most this many', '1000')
    .option('--json', 'print JSON')
    .action(async (queue: string, o: { limit: string; json?: boolean }) => {
      const messages = await listParked({ ...base(queue), limit: Number(o.limit) });
      printRows(messages.map(row), o.json === true);
    });
  parked
    .command('show <queue> <messageId>')
    .description('one parked message: headers and body')
    .action(async (queue: string, messageId: string) => {
      const found = (await listParked(base(queue))).find((m) => m.messageId === messageId);
      if (found === undefined) throw new Error(`no parked message ${messageId} in ${queue}`);
      printObject({ ...row(found), headers: found.headers, body: bodyOf(found) }, true);
    });
  parked
    .command('replay <queue>')
    .description('move parked messages back to their original queue (attempt 1), each once')
    .option('--id <messageId>', 'only this message')
    .option('--code <code>', 'only messages parked with this code')
    .option('--all', 'every parked message')
    .action(async (queue: string, o: FilterOptions) => {
      const bar = progressBar('replay');
      const progress = (p: { seen: number; total: number; replayed: number }): void => {
        if (p.total > 100) bar.update(p.seen, p.total, `looked at, ${p.replayed} replayed`);
      };
      const result = await replayParked({ ...base(queue), filter: filterOf(o), onProgress: progress }).finally(() => bar.finish());
      process.stdout.write(`replayed ${result.replayed} of ${result.seen} parked message(s)\n`);
    });
  parked
    .command('purge <queue>')
    .description('delete parked messages')
    .option('--id <messageId>', 'only this message')
    .option('--code <code>', 'only messages parked with this code')
    .option('--all', 'every parked message')
    .action(async (queue: string, o: FilterOptions) => {
      const result = await purgeParked({ ...base(queue), filter: filterOf(o) });
      process.stdout.write(`purged ${result.purged} of ${result.seen} parked message(s)\n`);
    });
}
