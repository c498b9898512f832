import type { ConfirmChannel, GetMessage, Options } from 'amqplib';
import { jsonObjectOf, parkedQueueFor, pushAsOf } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import { socketOf } from './coalesce-writes.ts';
import { openConnection, type BrokerConnection } from './connection.ts';
import { attemptOf, HeraldHeaders } from './headers.ts';
import { permanentRejection } from './park-codes.ts';
import { sleep } from './sleep.ts';

/** A message in `<queue>.parked`, with the headers that say why it is there. */
export interface ParkedMessage {
  messageId: string | undefined;
  code: string | undefined;
  reason: string | undefined;
  parkedAt: string | undefined;
  /** Where a replay sends it: x-herald-original-queue, else the broker's x-first-death-queue. */
  originalQueue: string;
  attempt: number;
  /**
   * The app its body names (a push's, a job's `app`), read leniently; for a webhook delivery, whose
   * body names none, the team its x-herald-team header names (its subscription's owner, set by the
   * webhook pusher). Undefined without either: a webhook delivery parked before that header was set.
   */
  app: string | undefined;
  /**
   * The webhook subscription a delivery is for: its x-herald-subscription header, else its body's
   * `subscriptionId` (deliveries parked before the header was set name it there too); undefined for
   * any other message.
   */
  subscriptionId: string | undefined;
  /**
   * When the device push it carries was due, read leniently from its body: its `dueAt`, else its
   * job's `acceptedAt`; undefined for another body (a job, a packed message). What an age filter
   * counts from, else `parkedAt`.
   */
  dueSince: string | undefined;
  headers: Record<string, unknown>;
  body: Buffer;
}

/**
 * Which parked messages an operation touches. By id, a replay (and a show) stops reading the queue
 * at the chunk where it finds the message; a purge reads on, to delete every copy with that id.
 */
export type ParkedFilter = ({ kind: 'all' } & ScopeFilter & AgeFilter) | { kind: 'id'; id: string } | ({ kind: 'code'; code: string } & ScopeFilter & AgeFilter);

/**
 * Only one app's messages (ParkedMessage.app: a webhook delivery's is its team), or one webhook
 * subscription's (ParkedMessage.subscriptionId): a replay after one team's receiver was fixed must
 * not send other teams' parked deliveries too. A message that names neither matches neither.
 */
export interface ScopeFilter {
  app?: string;
  subscription?: string;
}

/**
 * Only messages younger (`newerThanMs`) or older (`olderThanMs`) than that, counted from when the
 * push they carry was due (ParkedMessage.dueSince, else when they were parked): a replay after a
 * long outage need not send days-old pushes, and a purge can take just those. A message with
 * neither time (a packed message the broker dead-lettered) matches no age filter.
 */
export interface AgeFilter {
  newerThanMs?: number;
  olderThanMs?: number;
}

/** A string field of a parked body read as a JSON object (a push's `app`, a webhook delivery's `subscriptionId`). */
const textOf = (fields: Record<string, unknown> | undefined, name: string): string | undefined => {
  const value = fields?.[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * When a parked device push was due (pushAsOf: its dueAt, else its job's acceptedAt), read
 * leniently; undefined for any other body. A job's acceptedAt is not when its pushes are due (a job
 * scheduled for next week, parked today), so a job counts from when it was parked.
 */
const dueSinceOf = (fields: Record<string, unknown> | undefined): string | undefined => {
  const { pushId, acceptedAt, dueAt } = fields ?? {};
  if (typeof pushId !== 'string' || typeof acceptedAt !== 'string') return undefined;
  const at = pushAsOf({ acceptedAt, ...(typeof dueAt === 'string' && { dueAt }) });
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
};

export interface ParkedOptions {
  url: string;
  logger: Logger;
  /** A work queue (`push.apns.send`) or its parked queue (`push.apns.send.parked`). */
  queue: string;
  /**
   * Aborted (an operator's Ctrl-C), the operation reads no further message and visits no further
   * chunk: a chunk being replayed is finished (its copies confirmed, its originals acked), the
   * messages read and not visited go back to the queue, and it rejects with ParkedSweepStopped
   * (a replay whose copies were refused before it stopped: with its ReplayError). One aborted once
   * it had read all it was to resolves with what it did: it was done.
   */
  signal?: AbortSignal;
}

export interface ReplayOptions extends ParkedOptions {
  filter: ParkedFilter;
  /** Replay permanent rejections too (PERMANENT_PARK_CODES); without it they stay parked and are reported in `refused`. */
  force?: boolean;
  /** Called after each chunk with how many were looked at and replayed so far. */
  onProgress?: (progress: { seen: number; total: number; replayed: number }) => void;
  /**
   * How long a copy may wait for RabbitMQ's confirm (default 30 s) before the replay stops and
   * leaves it parked. RabbitMQ saying it blocks publishes (a memory or disk alarm) ends the wait
   * at once.
   */
  confirmTimeoutMs?: number;
  /**
   * Told of the device pushes each chunk replayed (bodies naming a `pushId` and a `jobId`), after
   * their copies are confirmed on their queues and their originals acked: a job's status counts a
   * push parked until its new outcome is written, and the caller clears that (ADR 0009). Awaited
   * for at most ONREPLAYED_TIMEOUT_MS a chunk; a rejection or a timeout is logged and the replay
   * goes on (its copies are on their way whatever the hook does), so the hook reports its own
   * failures to its caller.
   */
  onReplayed?: (pushes: readonly ReplayedPush[]) => Promise<void>;
}

/** A device push a replay sent back to its queue, as its parked body names it (read leniently: the hook checks the ids). */
export interface ReplayedPush {
  pushId: string;
  jobId: string;
}

/** Headers a replay removes: why it was parked and the broker's dead-letter history. */
const PARKING_HEADERS = [
  HeraldHeaders.parkedReason,
  HeraldHeaders.parkedCode,
  HeraldHeaders.parkedAt,
  HeraldHeaders.originalQueue,
  HeraldHeaders.retryReason,
  HeraldHeaders.delay,
  'x-death',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-first-death-exchange',
  'x-delivery-count',
];
const CHUNK = 100;
const ACK_SETTLE_MS = 250;
const CONFIRM_TIMEOUT_MS = 30_000;
const ONREPLAYED_TIMEOUT_MS = 10_000;

/** Some messages could not be replayed; they stay parked. `replayed` went back to their queues. */
export class ReplayError extends Error {
  override readonly name = 'ReplayError';
  constructor(
    message: string,
    readonly replayed: number,
  ) {
    super(message);
  }
}

export const parkedNameOf = (queue: string): string => (queue.endsWith('.parked') ? queue : parkedQueueFor(queue));

export function toParked(msg: GetMessage, parkedQueue: string): ParkedMessage {
  const headers: Record<string, unknown> = { ...(msg.properties.headers ?? {}) };
  const str = (name: string): string | undefined => (headers[name] === undefined ? undefined : String(headers[name]));
  const fields = jsonObjectOf(msg.content);
  return {
    messageId: msg.properties.messageId as string | undefined,
    code: str(HeraldHeaders.parkedCode) ?? (headers['x-first-death-reason'] === undefined ? undefined : 'delivery-limit'),
    reason: str(HeraldHeaders.parkedReason) ?? str('x-first-death-reason'),
    parkedAt: str(HeraldHeaders.parkedAt),
    originalQueue: str(HeraldHeaders.originalQueue) ?? str('x-first-death-queue') ?? parkedQueue.replace(/\.parked$/, ''),
    attempt: attemptOf(headers),
    app: textOf(fields, 'app') ?? str(HeraldHeaders.team),
    subscriptionId: str(HeraldHeaders.subscription) ?? textOf(fields, 'subscriptionId'),
    dueSince: dueSinceOf(fields),
    headers,
    body: msg.content,
  };
}

export function matches(m: ParkedMessage, filter: ParkedFilter, now = Date.now()): boolean {
  switch (filter.kind) {
    case 'all':
      return inScope(m, filter) && ofAge(m, filter, now);
    case 'id':
      return m.messageId === filter.id;
    case 'code':
      return m.code === filter.code && inScope(m, filter) && ofAge(m, filter, now);
  }
}

function inScope(m: ParkedMessage, filter: ScopeFilter): boolean {
  return (filter.app === undefined || m.app === filter.app) && (filter.subscription === undefined || m.subscriptionId === filter.subscription);
}

function ofAge(m: ParkedMessage, filter: AgeFilter, now: number): boolean {
  if (filter.newerThanMs === undefined && filter.olderThanMs === undefined) return true;
  const since = Date.parse(m.dueSince ?? m.parkedAt ?? '');
  if (Number.isNaN(since)) return false;
  const age = now - since;
  return (filter.newerThanMs === undefined || age < filter.newerThanMs) && (filter.olderThanMs === undefined || age >= filter.olderThanMs);
}

/**
 * Hands back what this channel read and did not ack, then lets it settle. RabbitMQ (3.10) applies
 * quorum-queue acks as low-priority commands: a channel closed right after acking can hand acked
 * messages back to the queue. And it returns a closed channel's unacked messages after it has
 * answered the close, so the next operator command could miss them for a moment (a list right
 * after a replay that left one parked found none). Nack them back first; a few round trips and a
 * short pause settle both.
 */
async function letAcksSettle(ch: ConfirmChannel, queue: string): Promise<void> {
  ch.nackAll(true);
  for (let i = 0; i < 3; i++) await ch.checkQueue(queue);
  await sleep(ACK_SETTLE_MS);
}

/** A short-lived connection and confirm channel; closing it requeues whatever was not acked. */
async function withParkedChannel<T>(opts: ParkedOptions, work: (ch: ConfirmChannel, parked: string, total: number) => Promise<T>): Promise<T> {
  const connection = await openConnection(opts.url, 'herald-parked', opts.logger);
  try {
    const channel = await connection.model.createConfirmChannel();
    channel.on('error', (err: Error) => opts.logger.debug({ err }, 'parked channel error'));
    const parked = parkedNameOf(opts.queue);
    const { messageCount } = await channel.checkQueue(parked);
    try {
      return await work(channel, parked, messageCount);
    } finally {
      await letAcksSettle(channel, parked);
      await channel.close();
    }
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** A sweep stopped by its signal (ParkedOptions.signal) before it had read what it was to read. */
export class ParkedSweepStopped extends Error {
  override readonly name = 'ParkedSweepStopped';
  constructor(
    readonly seen: number,
    readonly total: number,
  ) {
    super(`stopped after ${seen} of ${total} parked message(s)`);
  }
}

/**
 * Reads at most `total` messages (the queue's depth when we started), in chunks. Messages the
 * visitor does not ack stay unacknowledged on this channel, so they are never read twice (no
 * requeue loop), and go back to the queue when the operation ends (letAcksSettle). A visitor
 * that returns false ends the sweep. `signal` (ParkedOptions.signal) stops it at its next message
 * or chunk with ParkedSweepStopped, unless it had already read all it was to: a sweep that ends
 * returns only when it is done, so a caller stopped as the work finished can tell it finished.
 */
async function sweep(
  ch: ConfirmChannel,
  parked: string,
  total: number,
  visit: (chunk: GetMessage[]) => Promise<void | boolean>,
  signal?: AbortSignal,
): Promise<number> {
  const stopped = (): boolean => signal?.aborted === true;
  let seen = 0;
  while (seen < total) {
    if (stopped()) throw new ParkedSweepStopped(seen, total);
    const chunk: GetMessage[] = [];
    let empty = false;
    while (chunk.length < CHUNK && seen + chunk.length < total && !stopped()) {
      const msg = await ch.get(parked, { noAck: false });
      if (msg === false) {
        empty = true;
        break;
      }
      chunk.push(msg);
    }
    // Stopped while reading it: the chunk goes back unvisited.
    if (stopped()) throw new ParkedSweepStopped(seen, total);
    if (chunk.length === 0) break;
    seen += chunk.length;
    if ((await visit(chunk)) === false || empty) break;
  }
  return seen;
}

/**
 * The first parked message with id `messageId`, without removing any: the sweep stops where it is,
 * and keeps no other message's body (a list of the whole queue would hold every one).
 */
export async function findParked(opts: ParkedOptions & { messageId: string }): Promise<ParkedMessage | undefined> {
  return withParkedChannel(opts, async (ch, parked, total) => {
    let found: ParkedMessage | undefined;
    await sweep(ch, parked, total, async (chunk) => {
      const hit = chunk.find((m) => m.properties.messageId === opts.messageId);
      if (hit !== undefined) found = toParked(hit, parked);
      return found === undefined;
    }, opts.signal);
    return found;
  });
}

/**
 * A replay of one message by id is done once that message is found (ids are per push: another copy,
 * left parked beside one that went back, is sent once by the ledger anyway).
 */
const doneWith = (filter: ParkedFilter, chunk: readonly ParkedMessage[]): boolean => filter.kind === 'id' && chunk.some((m) => matches(m, filter));

/** What a list found, and how much of the queue it read to find it. */
export interface ParkedList {
  /** The matching messages, oldest first: at most `limit`. */
  messages: ParkedMessage[];
  /** How many messages it looked at: up to the last one listed when `limit` were found, else all it could read. */
  seen: number;
  /** The parked queue's depth when the list began: `seen < total` with `limit` listed means there may be more. */
  total: number;
}

/**
 * Up to `limit` parked messages matching `filter` (every one without it), oldest first, without
 * removing any. The filter is applied while the queue is read, which goes on until `limit` have
 * matched or the messages present at the start are all looked at: filtering only the first `limit`
 * read showed none of one app's parks queued behind a thousand of another's, while a replay with the
 * same filter took them all. Only matching messages' bodies are kept.
 */
export async function listParked(
  opts: ParkedOptions & {
    filter?: ParkedFilter;
    limit?: number;
    /** After each chunk read: how many looked at of the queue's depth, how many matched (a filter matching little reads a long queue whole). */
    onProgress?: (progress: { seen: number; total: number; matched: number }) => void;
  },
): Promise<ParkedList> {
  const filter = opts.filter ?? { kind: 'all' };
  const limit = opts.limit ?? Infinity;
  // One clock for the whole read: an age filter treats a message the same early or late in the queue.
  const now = Date.now();
  return withParkedChannel(opts, async (ch, parked, total) => {
    const messages: ParkedMessage[] = [];
    let seen = 0;
    if (limit <= 0) return { messages, seen, total };
    await sweep(ch, parked, total, async (chunk) => {
      for (const msg of chunk) {
        seen++;
        const m = toParked(msg, parked);
        if (matches(m, filter, now)) messages.push(m);
        // The rest of the chunk is read but not looked at; it goes back with the others unacked.
        if (messages.length >= limit) return false;
      }
      opts.onProgress?.({ seen, total, matched: messages.length });
      return true;
    }, opts.signal);
    return { messages, seen, total };
  });
}

/** What a copy keeps of the parked message's properties (its id, content type, …). */
function copiedProperties(msg: GetMessage): Options.Publish {
  const p = msg.properties;
  const keep: Options.Publish = {
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    correlationId: p.correlationId,
    messageId: p.messageId,
    type: p.type,
    appId: p.appId,
    timestamp: p.timestamp,
    priority: p.priority,
  };
  return Object.fromEntries(Object.entries(keep).filter(([, v]) => v !== undefined)) as Options.Publish;
}

type Item = { msg: GetMessage; parked: ParkedMessage };

/**
 * The connection a replay publishes its copies on, apart from the one that reads and acks the
 * parked queue: RabbitMQ stops reading from a connection that publishes during a memory or disk
 * alarm (connection.blocked), and the parked channel must still hand back what it read.
 */
interface CopyPublisher {
  channel: ConfirmChannel;
  /** Resolves with RabbitMQ's reason once it says it blocks this connection's publishes. */
  blocked: Promise<string>;
  /** Closes the connection, and lets go of its socket if RabbitMQ still blocks it. */
  end(): Promise<void>;
}

async function openCopyPublisher(opts: ParkedOptions): Promise<CopyPublisher> {
  const connection = await openConnection(opts.url, 'herald-parked.copies', opts.logger);
  const blocked = new Promise<string>((resolve) => connection.model.once('blocked', resolve));
  try {
    const channel = await connection.model.createConfirmChannel();
    channel.on('error', (err: Error) => opts.logger.debug({ err }, 'parked copies channel error'));
    return { channel, blocked, end: () => endCopies(connection, channel) };
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
}

/**
 * amqplib closes a connection RabbitMQ blocks at once, without waiting for an answer RabbitMQ
 * would not send before the alarm ends, and half-closes its socket; the socket would then stay
 * open until RabbitMQ reads again, and keep a CLI from exiting. So it is destroyed (amqplib has no
 * call for that). Whether blocked is read as the close begins: an unblocked connection closes with
 * the usual handshake.
 */
async function endCopies(connection: BrokerConnection, channel: ConfirmChannel): Promise<void> {
  const blocked = connection.blocked() !== undefined;
  await connection.close().catch(() => undefined);
  if (blocked) socketOf(channel)?.destroy();
}

/**
 * Publishes copies to their original queues (attempt 1, parking headers removed) and resolves
 * with the items the broker confirmed and routed; the rest are reported in `failed`, each with
 * why. A copy unconfirmed after `confirmTimeoutMs`, or once RabbitMQ says it blocks publishes,
 * fails as such (`stalled`): RabbitMQ may still take it later.
 */
async function republish(copies: CopyPublisher, items: readonly Item[], confirmTimeoutMs: number): Promise<{ ok: Item[]; failed: string[]; stalled: boolean }> {
  const ch = copies.channel;
  // A return means the original queue does not exist: every copy routed there fails.
  const returned = new Set<string>();
  const onReturn = (msg: { fields: { routingKey: string } }): void => {
    returned.add(msg.fields.routingKey);
  };
  ch.on('return', onReturn);
  let timer: NodeJS.Timeout | undefined;
  /** The failure of every copy not confirmed when the wait ended, once it ended. */
  let gaveUp: string | undefined;
  const givenUp = Promise.race([
    copies.blocked.then((reason) => `RabbitMQ is blocking publishes: ${reason}`),
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`none within ${confirmTimeoutMs} ms`), confirmTimeoutMs))),
  ]).then((why) => (gaveUp = `no confirm (${why}); its copy may still reach its queue when RabbitMQ takes it, and a later replay is safe while the ledger remembers the push (LEDGER_RETENTION_HOURS, 168 by default): Herald sends a push once whatever copies its queues hold`));
  try {
    const results = await Promise.all(
      items.map((item) => {
        const kept = Object.entries(item.parked.headers).filter(([k]) => !PARKING_HEADERS.includes(k));
        const headers = { ...Object.fromEntries(kept), [HeraldHeaders.attempt]: 1, [HeraldHeaders.replayedAt]: new Date().toISOString() };
        const options: Options.Publish = { ...copiedProperties(item.msg), headers, persistent: true, mandatory: true };
        const confirmed = new Promise<string | undefined>((resolve) => {
          ch.publish('', item.parked.originalQueue, item.msg.content, options, (err) => {
            if (err) resolve(`not confirmed: ${String(err)}`);
            else resolve(returned.has(item.parked.originalQueue) ? `queue "${item.parked.originalQueue}" does not exist` : undefined);
          });
        });
        return Promise.race([confirmed, givenUp]);
      }),
    );
    const failed = results.filter((r): r is string => r !== undefined);
    return { ok: items.filter((_, i) => results[i] === undefined), failed, stalled: gaveUp !== undefined && failed.includes(gaveUp) };
  } finally {
    clearTimeout(timer);
    ch.off('return', onReturn);
  }
}

/** Matching messages a replay left parked because they were rejected for good, per park code. */
export interface RefusedReplay {
  code: string;
  count: number;
  /** Why replaying them would not help. */
  why: string;
  /** The first few message ids, for the operator's answer. */
  messageIds: string[];
}

export interface ReplayResult {
  seen: number;
  replayed: number;
  /** Empty when forced or when nothing matching was a permanent rejection. */
  refused: RefusedReplay[];
}

const REFUSED_IDS_SHOWN = 10;

function noteRefusal(refused: Map<string, RefusedReplay>, m: ParkedMessage, why: string): void {
  const code = m.code ?? '(none)';
  const entry = refused.get(code) ?? { code, count: 0, why, messageIds: [] };
  entry.count++;
  if (m.messageId !== undefined && entry.messageIds.length < REFUSED_IDS_SHOWN) entry.messageIds.push(m.messageId);
  refused.set(code, entry);
}

/**
 * Moves matching parked messages back to their original queues, each once: publish with confirm,
 * then ack. Others are left in place, and so are permanent rejections unless `force` (reported in
 * `refused` with why). Only the messages present when it starts are looked at. Copies RabbitMQ
 * does not confirm in time (or while it blocks publishes: an alarm) stop the replay, which throws
 * a ReplayError saying why; their originals stay parked.
 */
export async function replayParked(opts: ReplayOptions): Promise<ReplayResult> {
  const copies = await openCopyPublisher(opts);
  try {
    return await withParkedChannel(opts, async (ch, parked, total) => {
      let replayed = 0;
      let seenSoFar = 0;
      const failures: string[] = [];
      const refused = new Map<string, RefusedReplay>();
      const sweeping = sweep(ch, parked, total, async (chunk) => {
        const read = chunk.map((msg) => ({ msg, parked: toParked(msg, parked) }));
        const found = doneWith(opts.filter, read.map((x) => x.parked));
        const chosen = read
          .filter((x) => matches(x.parked, opts.filter))
          .filter((x) => {
            const why = opts.force === true ? undefined : permanentRejection(x.parked.code);
            if (why !== undefined) noteRefusal(refused, x.parked, why);
            return why === undefined;
          });
        const { ok, failed, stalled } = await republish(copies, chosen, opts.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS);
        for (const { msg } of ok) ch.ack(msg);
        replayed += ok.length;
        failures.push(...failed);
        seenSoFar += chunk.length;
        // Told before the hook, which may wait: a caller stopped meanwhile counts this chunk.
        opts.onProgress?.({ seen: seenSoFar, total, replayed });
        await tellReplayed(opts, ok);
        // Copies RabbitMQ does not confirm now would not be confirmed for the next chunk either.
        return !stalled && !found;
      }, opts.signal);
      // Stopped (its signal) after copies failed: their reason is what the operator needs, not the stop.
      const seen = await sweeping.catch((err: unknown) => {
        if (err instanceof ParkedSweepStopped && failures.length > 0) throw new ReplayError(`replay stopped after ${err.seen} of ${total} parked message(s) (interrupted): ${replayed} replayed, ${failures.length} not replayed (left parked): ${failures[0]}`, replayed);
        throw err;
      });
      if (failures.length > 0) {
        const unread = total - seen;
        const counts = `${replayed} replayed, ${failures.length} not replayed (left parked)${unread > 0 ? `, ${unread} not looked at (still parked)` : ''}`;
        throw new ReplayError(`replay stopped after ${seen} of ${total} parked message(s): ${counts}: ${failures[0]}`, replayed);
      }
      return { seen, replayed, refused: [...refused.values()] };
    });
  } finally {
    await copies.end();
  }
}

/** The device push a parked body names, read leniently; undefined for any other body (a job, a webhook delivery, a packed message). */
function replayedPushOf(body: Buffer): ReplayedPush | undefined {
  const { pushId, jobId } = jsonObjectOf(body) ?? {};
  return typeof pushId === 'string' && typeof jobId === 'string' ? { pushId, jobId } : undefined;
}

/** ReplayOptions.onReplayed with the device pushes among `ok`, bounded; its failure is logged, not thrown. */
async function tellReplayed(opts: ReplayOptions, ok: readonly Item[]): Promise<void> {
  const pushes = ok.map((x) => replayedPushOf(x.msg.content)).filter((p) => p !== undefined);
  if (opts.onReplayed === undefined || pushes.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`onReplayed did not finish within ${ONREPLAYED_TIMEOUT_MS} ms`)), ONREPLAYED_TIMEOUT_MS)));
  try {
    const told = opts.onReplayed(pushes);
    // Past the bound it may still fail: logged above as a timeout, not as an unhandled rejection.
    told.catch(() => undefined);
    await Promise.race([told, timedOut]);
  } catch (err) {
    opts.logger.warn({ err, queue: opts.queue, pushes: pushes.length }, 'onReplayed failed; the pushes are replayed all the same');
  } finally {
    clearTimeout(timer);
  }
}

/** Deletes matching parked messages (all of them at once for `{ kind: 'all' }` without an app, a subscription or an age). */
export async function purgeParked(opts: ParkedOptions & { filter: ParkedFilter }): Promise<{ seen: number; purged: number }> {
  return withParkedChannel(opts, async (ch, parked, total) => {
    const f = opts.filter;
    if (f.kind === 'all' && f.app === undefined && f.subscription === undefined && f.newerThanMs === undefined && f.olderThanMs === undefined) {
      const { messageCount } = await ch.purgeQueue(parked);
      return { seen: messageCount, purged: messageCount };
    }
    let purged = 0;
    const filter = opts.filter;
    const seen = await sweep(ch, parked, total, async (chunk) => {
      for (const msg of chunk) {
        if (!matches(toParked(msg, parked), filter)) continue;
        ch.ack(msg);
        purged++;
      }
    }, opts.signal);
    return { seen, purged };
  });
}
