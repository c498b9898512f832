import { randomBytes } from 'node:crypto';
import {
  ActionRefused,
  isDatabaseUnavailable,
  ParkedLeaseInterrupted,
  ParkedQueueBusy,
  startReplayedOutcomes,
  withParkedLease,
  type Database,
  type ReplayedOutcomes,
} from '@herald/db';
import {
  describeRefusals,
  findParked,
  listParked,
  ParkedSweepStopped,
  parkedNameOf,
  ReplayError,
  purgeParked,
  replayParked,
  type AgeFilter,
  type ParkedFilter,
  type ParkedMessage,
  type ReplayResult,
} from '@herald/messaging';
import { parseIsoDuration } from '@herald/contracts';
import type { Command } from 'commander';
import { readCliConfig } from '../cli-config.ts';
import { CommandInterrupted } from '../command-interrupted.ts';
import { knownWorkQueue } from './queue-name.ts';
import { printObject, printRows } from '../output.ts';
import { progressBar } from '../progress-bar.ts';
import { auditedCli, cliActor } from './cli-audit.ts';
import { cliLogger, withDatabase } from './with-database.ts';

type ScopeOptions = { app?: string; subscription?: string };
type FilterOptions = ScopeOptions & { id?: string; code?: string; all?: boolean; newerThan?: string; olderThan?: string };
type ReplayFlags = FilterOptions & { force?: boolean };

/** This run's name in a lease: who, where, and a random part (two containers' CLIs can share a user, a host name and pid 1). */
const HOLDER = `herald ${cliActor().id} (pid ${process.pid}, run ${randomBytes(3).toString('hex')})`;

/** The exit status of a command stopped by each signal, as a shell reports it (128 + its number). */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

/** How long an interrupted command may take to record its end before it exits regardless (PostgreSQL not answering, say). */
const INTERRUPTED_EXIT_MS = 5_000;
/** Of that, how long its work is given to stop at its next chunk before the lease goes (a chunk's confirms and outcomes). */
const INTERRUPTED_STOP_MS = INTERRUPTED_EXIT_MS - 1_500;

/**
 * `work` on `queue`'s parked messages under its lease (withParkedLease), shared with other CLIs and
 * the dashboard: one operation beside another would miss the messages the other holds. Another's
 * operation that does not end within 30 s is a refusal naming it. Ctrl-C (or a SIGTERM) releases
 * the lease and ends the command at once with CommandInterrupted (unless the work had finished, or
 * failed on its own, within the grace: its result or its error then), the messages read going back as
 * the connection closes: before, the row outlived the run by the lease's 90 s, and the operator's
 * next command waited 30 s and was refused by the run just stopped. What a replay had republished
 * before the signal stays republished (its parked copies, not yet acked, go back too: replay those
 * by id). A replay or purge records its audit row as failed, interrupted, on its way out (it read
 * `started` for good when the signal exited the CLI on the spot); the CLI exits within
 * INTERRUPTED_EXIT_MS all the same.
 */
async function underLease<T>(db: Database, queue: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const interrupt = new AbortController();
  let stoppedBy: keyof typeof SIGNAL_EXIT = 'SIGINT';
  const handlers = (Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]).map((signal) => {
    const onSignal = (): void => {
      stoppedBy = signal;
      interrupt.abort();
      // Unreferenced: it keeps nothing alive, and ends the run if recording its end hangs.
      setTimeout(() => process.exit(SIGNAL_EXIT[signal]), INTERRUPTED_EXIT_MS).unref();
    };
    process.once(signal, onSignal);
    return () => process.off(signal, onSignal);
  });
  try {
    return await withParkedLease(db.kysely, parkedNameOf(queue), HOLDER, () => work(interrupt.signal), {
      signal: interrupt.signal,
      stopGraceMs: INTERRUPTED_STOP_MS,
      isStop: (err) => err instanceof ParkedSweepStopped,
    });
  } catch (err) {
    if (err instanceof ParkedLeaseInterrupted) throw new CommandInterrupted(`${err.message} (${stoppedBy})`, SIGNAL_EXIT[stoppedBy]);
    // Stopped after copies were refused: interrupted all the same (exit 128 + the signal), saying why.
    if (err instanceof ReplayError && interrupt.signal.aborted) throw new CommandInterrupted(`${err.message} (${stoppedBy})`, SIGNAL_EXIT[stoppedBy]);
    throw err instanceof ParkedQueueBusy ? new ActionRefused(err.message) : err;
  } finally {
    for (const off of handlers) off();
  }
}

/**
 * A read (list, show) under the lease while PostgreSQL answers; without it, said on stderr, while
 * it does not: in an incident that took PostgreSQL down an operator still reads what is parked
 * (RabbitMQ alone was needed before the lease). A replay or purge is audited in PostgreSQL, and
 * needs it anyway.
 */
async function readUnderLease<T>(queue: string, work: (signal?: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await withDatabase((db) => underLease(db, queue, work));
  } catch (err) {
    if (!isDatabaseUnavailable(err)) throw err;
    const why = err instanceof Error ? err.message : String(err);
    process.stderr.write(`could not take ${parkedNameOf(queue)}'s lease (PostgreSQL: ${why}); read without it: another operator's replay or purge running now may hold messages this does not show\n`);
    return work();
  }
}

const base = (queue: string) => ({
  url: readCliConfig().AMQP_URL,
  logger: cliLogger(),
  queue: knownWorkQueue(queue),
});

/** What a replay or purge of one message by id says when the queue does not hold it. */
const noSuchMessage = (id: string, queue: string): string => `no parked message ${id} in ${parkedNameOf(queue)}: \`herald parked list ${queue}\` shows them`;

/**
 * Why a filter that names something matched nothing, or undefined: an id not there, or a code, an
 * app or a subscription none of the (some) messages looked at has (a typo replayed or purged 0 and exited 0).
 */
function matchedNothing(filter: ReturnType<typeof filterOf>, done: number, seen: number, queue: string): string | undefined {
  if (done > 0) return undefined;
  if (filter.kind === 'id') return noSuchMessage(filter.id, queue);
  if (seen === 0) return undefined;
  const of = scopeText(filter);
  const aged = ageText(filter);
  if (filter.kind === 'code') return `none of the ${seen} parked message(s) in ${parkedNameOf(queue)}${of} was parked with code "${filter.code}"${aged}: \`herald parked list ${queue}\` shows their codes, apps and times`;
  if (of !== '' || aged !== '') return `none of the ${seen} parked message(s) in ${parkedNameOf(queue)} is${of}${aged}: \`herald parked list ${queue}\` shows their apps and times`;
  return undefined;
}

/** Whose messages a filter asks for, for a message saying nothing matched ('' for everyone's). */
function scopeText(filter: ScopeOptions): string {
  const parts = [
    ...(filter.app === undefined ? [] : [`app "${filter.app}"`]),
    ...(filter.subscription === undefined ? [] : [`subscription "${filter.subscription}"`]),
  ];
  return parts.length === 0 ? '' : ` of ${parts.join(' and ')}`;
}

/** What an age filter asks, for a message saying nothing matched ('' without one). */
function ageText(filter: AgeFilter): string {
  const hours = (ms: number) => `${+(ms / 3_600_000).toFixed(2)} h`;
  const parts = [
    ...(filter.newerThanMs === undefined ? [] : [`younger than ${hours(filter.newerThanMs)}`]),
    ...(filter.olderThanMs === undefined ? [] : [`at least ${hours(filter.olderThanMs)} old`]),
  ];
  return parts.length === 0 ? '' : ` and ${parts.join(' and ')}`;
}

/**
 * What a list says on stderr besides its rows, or undefined: that it stopped at --limit with
 * messages it did not look at (there may be more further down the queue), or that no message in
 * the whole queue matched its --app or age. Without it "(none)", or the limit's worth of rows,
 * read as the whole queue's answer.
 */
function listNote(filter: ScopeOptions & AgeFilter, listed: { messages: readonly unknown[]; seen: number; total: number }, limit: number, queue: string): string | undefined {
  const { messages, seen, total } = listed;
  const of = scopeText(filter);
  // ageText begins " and …", to follow an app; alone it follows "is".
  const wanted = `${of}${ageText(filter)}`.replace(/^ and /, ' ');
  const read = `${seen === total ? `all ${total}` : `${seen} of ${total}`} parked message(s) in ${parkedNameOf(queue)}`;
  if (messages.length >= limit && seen < total) return `looked at ${read}; the first ${messages.length}${wanted === '' ? '' : ' matching'} shown (--limit ${limit}): there may be more`;
  if (messages.length === 0 && wanted !== '' && total > 0) return `looked at ${read}; none is${wanted}`;
  return undefined;
}

/** Exactly one of --id, --code, --all; a bulk operation must be asked for by name. */
function filterOf(o: FilterOptions): ParkedFilter {
  const given = [o.id !== undefined, o.code !== undefined, o.all === true].filter(Boolean).length;
  if (given !== 1) throw new Error('give exactly one of --id <messageId>, --code <code>, --all');
  const age = ageOf(o);
  if (o.id !== undefined) {
    if (o.app !== undefined || o.subscription !== undefined) throw new Error('--app and --subscription go with --code or --all (an id names one message)');
    return { kind: 'id', id: o.id };
  }
  const scope = scopeOf(o);
  if (o.code !== undefined) return { kind: 'code', code: o.code, ...scope, ...age };
  return { kind: 'all', ...scope, ...age };
}

/** --app / --subscription, as given. */
const scopeOf = (o: ScopeOptions): ScopeOptions => ({ ...(o.app !== undefined && { app: o.app }), ...(o.subscription !== undefined && { subscription: o.subscription }) });

/** --newer-than / --older-than as an AgeFilter; a one-line error naming the flag for a bad duration. */
function ageOf(o: Pick<FilterOptions, 'id' | 'newerThan' | 'olderThan'>): AgeFilter {
  if (o.id !== undefined && (o.newerThan !== undefined || o.olderThan !== undefined)) throw new Error('--newer-than and --older-than go with --code or --all (an id names one message)');
  const ms = (flag: string, raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    const value = parseIsoDuration(raw);
    if (value === undefined || value === 0) throw new Error(`${flag} must be an ISO-8601 duration such as PT6H or P2D, got "${raw}"`);
    return value;
  };
  const newerThanMs = ms('--newer-than', o.newerThan);
  const olderThanMs = ms('--older-than', o.olderThan);
  return { ...(newerThanMs !== undefined && { newerThanMs }), ...(olderThanMs !== undefined && { olderThanMs }) };
}

const bodyOf = (m: ParkedMessage): unknown => {
  try {
    return JSON.parse(m.body.toString('utf8')) as unknown;
  } catch {
    return m.body.toString('utf8');
  }
};

/** A webhook delivery's row names its subscription too (its `app` is the subscription's team); other rows have no such column. */
const row = (m: ParkedMessage) => ({
  id: m.messageId,
  app: m.app ?? null,
  ...(m.subscriptionId !== undefined && { subscription: m.subscriptionId }),
  code: m.code,
  attempts: m.attempt,
  dueSince: m.dueSince ?? null,
  parkedAt: m.parkedAt,
  queue: m.originalQueue,
  reason: m.reason,
});

const APP_HELP = "the app their body names; for push.webhook.send, the subscription's team, which deliveries queued before 2026-12-07 do not name (--subscription finds them)";
const SUBSCRIPTION_HELP = 'only push.webhook.send deliveries for this webhook subscription (its id)';

const AGE_FLAGS = [
  ['--newer-than <duration>', 'only messages younger than this ISO-8601 duration (PT6H, P2D), counted from when the device push they carry was due (its job accepted), else from when they were parked'],
  ['--older-than <duration>', 'only messages at least this old, counted the same way'],
] as const;

/** `herald parked list|show|replay|purge <queue>`: the parked queue of a work queue. */
export function registerParkedCommands(program: Command): void {
  const parked = program.command('parked').description('messages parked in <queue>.parked: list, show, replay, purge');
  parked
    .command('list <queue>')
    .description('parked messages of a work queue (e.g. push.apns.send), oldest first')
    .option('--limit <n>', 'at most this many', '1000')
    .option('--app <app>', `only messages of this app (${APP_HELP})`)
    .option('--subscription <id>', SUBSCRIPTION_HELP)
    .option(...AGE_FLAGS[0])
    .option(...AGE_FLAGS[1])
    .option('--json', 'print JSON')
    .action(async (queue: string, o: ScopeOptions & { limit: string; newerThan?: string; olderThan?: string; json?: boolean }) => {
      // A typo read as NaN read nothing and printed "(none)": an operator took the queue for empty.
      if (!/^\d+$/.test(o.limit) || Number(o.limit) < 1) throw new Error(`--limit must be a positive integer, got "${o.limit}"`);
      const filter: Extract<ParkedFilter, { kind: 'all' }> = { kind: 'all', ...scopeOf(o), ...ageOf(o) };
      const limit = Number(o.limit);
      const bar = progressBar('list');
      const progress = (p: { seen: number; total: number; matched: number }): void => {
        if (p.total > 1_000) bar.update(p.seen, p.total, `looked at, ${p.matched} matching`);
      };
      const listed = await readUnderLease(queue, (signal) => listParked({ ...base(queue), filter, limit, onProgress: progress, signal })).finally(() => bar.finish());
      printRows(listed.messages.map(row), o.json === true);
      const note = listNote(filter, listed, limit, queue);
      if (note !== undefined) process.stderr.write(`${note}\n`);
    });
  parked
    .command('show <queue> <messageId>')
    .description('one parked message: headers and body')
    .action(async (queue: string, messageId: string) => {
      const found = await readUnderLease(queue, (signal) => findParked({ ...base(queue), messageId, signal }));
      if (found === undefined) throw new Error(`no parked message ${messageId} in ${queue}`);
      printObject({ ...row(found), headers: found.headers, body: bodyOf(found) });
    });
  parked
    .command('replay <queue>')
    .description('move parked messages back to their original queue (attempt 1), each once; permanent rejections (schema, provider-rejected, …) only with --force')
    .option('--id <messageId>', 'only this message')
    .option('--code <code>', 'only messages parked with this code')
    .option('--all', 'every parked message')
    .option('--app <app>', `with --code or --all: only messages of this app (${APP_HELP})`)
    .option('--subscription <id>', `with --code or --all: ${SUBSCRIPTION_HELP}`)
    .option(...AGE_FLAGS[0])
    .option(...AGE_FLAGS[1])
    .option('--force', 'replay permanent rejections too (they would be parked again or rejected again unless their cause was fixed)')
    .action(async (queue: string, o: ReplayFlags) => {
      const opts = base(queue);
      const filter = filterOf(o);
      const force = o.force === true;
      const bar = progressBar('replay');
      let sofar = { seen: 0, replayed: 0 };
      const progress = (p: { seen: number; total: number; replayed: number }): void => {
        sofar = p;
        if (p.total > 100) bar.update(p.seen, p.total, `looked at, ${p.replayed} replayed`);
      };
      const what = { action: 'parked.replay', target: parkedNameOf(queue), request: { filter, force, via: 'cli' } };
      let result: ReplayResult | undefined;
      let outcomes: ReplayedOutcomes | undefined;
      await auditedCli(what, async (db) => {
        result = await underLease(db, queue, async (signal) => {
          // Replayed device pushes count in flight again in their jobs' status (ADR 0009).
          outcomes = await startReplayedOutcomes(db.kysely);
          return replayParked({ ...opts, filter, force, onProgress: progress, onReplayed: outcomes.onReplayed, signal });
        }).catch((err: unknown) => {
          // The audit row says how far it got: what it replayed stays replayed.
          throw err instanceof CommandInterrupted ? err.adding(`${sofar.replayed} replayed of ${sofar.seen} looked at before it stopped; the rest stay parked`) : err;
        });
        // Nothing replayed because everything matching was a permanent rejection: audited as refused.
        if (result.replayed === 0 && result.refused.length > 0) throw new ActionRefused(describeRefusals(result.refused), { ...result });
        const nothing = matchedNothing(filter, result.replayed, result.seen, queue);
        if (nothing !== undefined) throw new ActionRefused(nothing);
        return result;
      })
        .catch((err: unknown) => {
          // Permanent rejections are told below; any other refusal (no such message) is the command's error.
          if (!(err instanceof ActionRefused) || result === undefined || result.refused.length === 0) throw err;
        })
        .finally(() => {
          bar.finish();
          // The replay stands (its copies are on their way); what PostgreSQL refused is said, exit status unchanged.
          if (outcomes?.failure !== undefined) process.stderr.write(`${outcomes.failure}\n`);
        });
      if (result === undefined) return;
      process.stdout.write(`replayed ${result.replayed} of ${result.seen} parked message(s)\n`);
      if (result.refused.length > 0) {
        // Not what was asked: say why, and exit non-zero.
        process.stderr.write(`${describeRefusals(result.refused).replace('Replay with force', 'Add --force')}\n`);
        process.exitCode = 1;
      }
    });
  parked
    .command('purge <queue>')
    .description('delete parked messages')
    .option('--id <messageId>', 'only this message')
    .option('--code <code>', 'only messages parked with this code')
    .option('--all', 'every parked message')
    .option('--app <app>', `with --code or --all: only messages of this app (${APP_HELP})`)
    .option('--subscription <id>', `with --code or --all: ${SUBSCRIPTION_HELP}`)
    .option(...AGE_FLAGS[0])
    .option(...AGE_FLAGS[1])
    .action(async (queue: string, o: FilterOptions) => {
      const opts = base(queue);
      const filter = filterOf(o);
      const what = { action: 'parked.purge', target: parkedNameOf(queue), request: { filter, via: 'cli' } };
      const result = await auditedCli(what, async (db) => {
        const purged = await underLease(db, queue, (signal) => purgeParked({ ...opts, filter, signal })).catch((err: unknown) => {
          throw err instanceof CommandInterrupted ? err.adding('what it deleted before it stopped is gone; the rest stay parked') : err;
        });
        // A mistyped id or code purged nothing and said so on stdout, exit 0 (the dashboard answers 404).
        const nothing = matchedNothing(filter, purged.purged, purged.seen, queue);
        if (nothing !== undefined) throw new ActionRefused(nothing);
        return purged;
      });
      process.stdout.write(`purged ${result.purged} of ${result.seen} parked message(s)\n`);
    });
}
