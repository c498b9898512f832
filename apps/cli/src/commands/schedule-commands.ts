import { Platforms, type Platform } from '@herald/contracts';
import type { Command } from 'commander';
import { printRows } from '../output.ts';
import { withDatabase } from './with-database.ts';
import { cancelKnownJob, nothingToCancel } from './job-commands.ts';

function parsePlatform(value: string | undefined): Platform | undefined {
  if (value === undefined) return undefined;
  if (!(Platforms as readonly string[]).includes(value)) throw new Error(`--platform must be one of ${Platforms.join(', ')}`);
  return value as Platform;
}

/** `herald scheduled` (what is waiting, per platform per hour) and `herald cancel --job`. */
export function registerScheduleCommands(program: Command): void {
  program
    .command('scheduled')
    .description('scheduled pushes waiting per platform per upcoming hour (UTC; overdue ones count in the first hour)')
    .option('--platform <platform>', 'apns, fcm or web')
    .option('--hours <n>', 'how many hours ahead', '24')
    .option('--json', 'print JSON')
    .action(async (o: { platform?: string; hours: string; json?: boolean }) => {
      const hours = Number(o.hours);
      if (!Number.isInteger(hours) || hours < 1) throw new Error('--hours must be a positive integer');
      const rows = await withDatabase((db) => db.scheduled.countsByHour(parsePlatform(o.platform), hours));
      printRows(rows.map((r) => ({ platform: r.platform, hour: r.hour.toISOString(), count: r.count })), o.json === true);
    });

  program
    .command('cancel')
    .description('cancel a job, as herald job cancel: its scheduled pushes are removed (counted here), a running fan-out stops, the pushers drop its pushes still queued and a later replay of its parked pushes sends nothing; pushes a provider already accepted are not recalled')
    .requiredOption('--job <jobId>', 'the job id')
    .action(async (o: { job: string }) => {
      const done = await cancelKnownJob(o.job);
      if (done?.alreadyDone === true) process.stdout.write(nothingToCancel(o.job));
      else if (done !== undefined) process.stdout.write(`job ${o.job}: ${done.scheduled} scheduled push${done.scheduled === 1 ? '' : 'es'} cancelled\n`);
    });
}
